(step, ...terms) => terms[0].map((row, i) => row.map((_, j) => terms.reduce((s, t) => s + t[i][j], 0)))
