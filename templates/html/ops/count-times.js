(step, ...inputs) => [[[].concat(...inputs.map((m) => [].concat(...m))).reduce((product, x) => product * x, 1)]]
