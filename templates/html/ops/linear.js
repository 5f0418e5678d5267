(step, x, w, b) => {
  const product = matmul(x, w);
  return product && product.map((row) => row.map((v, j) => {
    const z = step.no_bias ? v : v + b[0][j];
    return step.relu ? Math.max(0, z) : z;
  }));
}
