(step, a) => a.map((row, i) => row.map((x, j) => (j > i ? -Infinity : x)))
