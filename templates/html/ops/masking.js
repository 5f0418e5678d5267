(step, a) => a.map((row, i) => row.map((x, j) => ((step.visible ? !step.visible[i][j] : j > i) ? -Infinity : x)))
