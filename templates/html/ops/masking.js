(step, a, m) => a.map((row, i) => row.map((x, j) => ((m ? m[i][j] === -Infinity : step.visible ? !step.visible[i][j] : j > i) ? -Infinity : x)))
