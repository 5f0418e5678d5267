"""Stage 1, random specs: draw small integer problems from an explicit seed.

Each problem of a set gets its own generator, seeded from (set seed, index),
so problem 7 of seed 42 is the same whatever the count; its id ``42-7`` says
how to draw it again.
"""

from __future__ import annotations

import numpy as np
import sympy

from .spec import ProblemSpec

SMALL_INTEGERS = (-1, 0, 1, 2)


def sample_specs(count: int, seed: int) -> list[ProblemSpec]:
    return [sample_spec(seed, index) for index in range(1, count + 1)]


def sample_spec(seed: int, index: int) -> ProblemSpec:
    """Problem ``index`` of set ``seed``: 2 to 4 tokens, small integer X and weights."""
    rng = np.random.default_rng([seed, index])
    tokens = int(rng.integers(2, 5))
    d_model, d_k, d_v = (int(d) for d in rng.integers(2, 4, size=3))
    matrices = {
        "X": _integer_matrix(rng, tokens, d_model),
        "W_Q": _integer_matrix(rng, d_model, d_k),
        "W_K": _integer_matrix(rng, d_model, d_k),
        "W_V": _integer_matrix(rng, d_model, d_v),
    }
    return ProblemSpec(id=f"{seed}-{index}", matrices=matrices, seed=seed)


def _integer_matrix(rng: np.random.Generator, rows: int, columns: int):
    """A matrix of small integers with no all-zero row (a zero row makes a trivial question)."""
    while True:
        values = rng.choice(SMALL_INTEGERS, size=(rows, columns))
        if np.all(np.any(values != 0, axis=1)):
            return tuple(tuple(sympy.Integer(int(v)) for v in row) for row in values)
