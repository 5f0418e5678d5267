(step, a) => (step.divided === false ? exponentials(a)
  : step.by_columns ? transpose(softmaxRows(transpose(a))) : softmaxRows(a))
