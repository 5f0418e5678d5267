(step, d) => [[step.variance ? d[0][0] : Math.sqrt(d[0][0]), step.over_dk ? 1 / Math.sqrt(d[0][0]) : 1]]
