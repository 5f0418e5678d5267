(step, a) => a.map((row) => row.map((x) => x * step.factor))
