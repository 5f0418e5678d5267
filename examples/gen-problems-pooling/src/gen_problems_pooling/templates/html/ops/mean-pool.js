(step, rows) => [rows[0].map((_, j) => rows.reduce((sum, row) => sum + row[j], 0) / (step.summed ? 1 : rows.length))]
