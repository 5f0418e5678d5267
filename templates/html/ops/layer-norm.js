(step, x, gamma, beta) => x.map((row) => {
  const n = row.length;
  const mean = row.reduce((s, v) => s + v, 0) / n;
  const variance = row.reduce((s, v) => s + (v - mean) * (v - mean), 0) / (step.unbiased ? n - 1 : n);
  return row.map((v, j) => (step.plain ? (v - mean) / Math.sqrt(variance)
    : gamma[0][j] * (v - mean) / Math.sqrt(variance) + beta[0][j]));
})
