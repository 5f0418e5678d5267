(step, a) => (step.divided === false ? exponentials(a)
  : step.by_columns ? transpose(softmaxRows(transpose(a)))
  : step.hide_after ? softmaxRows(a).map((row, i) => row.map((x, j) => (step.hide_after[i][j] ? x : 0)))
  : softmaxRows(a))
