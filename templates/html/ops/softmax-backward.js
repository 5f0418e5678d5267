(step, a, g) => a.map((row, i) => {
  const dot = step.rowsum === false ? 0 : row.reduce((s, x, k) => s + x * g[i][k], 0);
  return row.map((x, j) => x * (g[i][j] - dot));
})
