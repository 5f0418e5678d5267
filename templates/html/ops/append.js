(step, ...parts) => [].concat(...parts)
