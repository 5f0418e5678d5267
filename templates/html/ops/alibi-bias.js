(step, p, m) => p.map(([i]) => p.map(([j]) => (step.sign || -1) * (step.unsloped ? 1 : m[0][0]) * Math.abs(i - j)))
