(step, m) => [[m[0].slice(0, 5).reduce((product, x) => product * x, step.halved ? 1 : 2) / (step.in_bytes ? 1 : m[0][5])]]
