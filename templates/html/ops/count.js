(step, ...tables) => [[(step.terms || [].concat(...tables)).reduce((sum, row) => sum + row.reduce((product, x) => product * x, 1), 0)]]
