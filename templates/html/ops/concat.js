(step, ...parts) => parts[0].map((_, i) => [].concat(...parts.map((p) => p[i])))
