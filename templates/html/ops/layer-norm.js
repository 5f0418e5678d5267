(step, x, gamma, beta) => {
  // each entry's reach, in half units, when μ, σ² and σ are written rounded (a slip's own rounding:
  // σ over n − 1 is seldom a short decimal where LayerNorm's is)
  const reach = [];
  const values = x.map((row) => {
    const n = row.length;
    const mean = row.reduce((s, v) => s + v, 0) / n;
    const variance = row.reduce((s, v) => s + (v - mean) * (v - mean), 0) / (step.unbiased ? n - 1 : n);
    const sigma = Math.sqrt(variance);
    reach.push(row.map((v, j) => 1.1 * Math.abs(step.plain ? 1 : gamma[0][j])
      * (1 + Math.abs(v - mean) / sigma * (1 + 1 / (2 * sigma))) / sigma));
    return row.map((v, j) => (step.plain ? (v - mean) / sigma
      : gamma[0][j] * (v - mean) / sigma + beta[0][j]));
  });
  values.reach = reach;
  return values;
}
