(step, a, b) => matmul(step.transpose_left ? transpose(a) : a, step.transpose ? transpose(b) : b)
