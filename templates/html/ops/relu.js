(step, z) => z.map((row) => row.map((v) => (step.kept ? v : step.absolute ? Math.abs(v) : Math.max(0, v))))
