(step, a) => a[0].map((ai, i) => a[0].map((aj, j) => (i !== j ? (step.off_diagonal_sign || -1) * ai * aj
  : (step.diagonal === false ? 0 : ai) - ai * aj)))
