(step, a, b) => matmul(a, b)
