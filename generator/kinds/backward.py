"""Question type "backward": push an upstream gradient dO back through attention by hand,
dV = Aᵀ dO, dA = dO Vᵀ, the softmax backward row by row, the scaling, dQ = dS K and
dK = dSᵀ Q (and, where X is given, dW_Q, dW_K, dW_V and dX), every step with its working."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from ..crosscheck import attention_steps
from ..engine import solve
from ..questions import SETUP, Question, given_steps, lettered, step_parts
from ..steps import PIPELINE, symbol
from . import GIVEN, SHOWN, QuestionType, register

# Steps asked together in one part; every other gradient of the plan is a part of its own.
TOGETHER = (("dW_Q", "dW_K", "dW_V"), ("dX_Q", "dX_K", "dX_V", "dX"))
FORWARD = ("Q", "K", "V", "weights")  # what the backward pass reads of the forward one
UPSTREAM = (-1, -0.5, 0, 0.5, 1)  # the entries a drawn dO takes


def backward_question(spec) -> Question:
    solution = solve(spec)
    start = PIPELINE.index("dO")
    names = [s.name for s in solution.plan if not s.is_given and PIPELINE.index(s.name) > start]
    groups, taken = [], set()
    for name in names:
        if name in taken:
            continue
        group = next((g for g in TOGETHER if name in g), (name,))
        group = tuple(n for n in group if n in names)
        groups.append(group)
        taken.update(group)
    shown = tuple(("", symbol(name), solution.step(name)) for name in FORWARD
                  if solution.step(name).kind != "given")
    parts = [replace(part, notes=False) for part in step_parts(solution, tuple(groups))]
    return Question("backward", spec, solution, given_steps(solution), lettered(parts), shown=shown)


def draw_upstream(rng, candidate, decimals: int) -> dict | None:
    """dO of small halves, no row of it zero, and a softmax gradient that shows at the
    printed decimals (weights of 0 and 1 would pass no gradient back)."""
    rows, columns = len(candidate.x), candidate.w_v.shape[1]
    upstream = rng.choice(UPSTREAM, size=(rows, columns))
    if not np.abs(upstream).sum(axis=1).all():
        return None
    steps = attention_steps({**candidate.given, "dO": upstream}, candidate.mask, candidate.scale)
    if np.abs(steps["dscaled"]).max() < 10.0**-decimals:
        return None
    exact = tuple(tuple(sympy.Rational(int(round(2 * v)), 2) for v in row) for row in upstream)
    return {"matrices": {"dO": exact}}


register(QuestionType(
    "backward", backward_question, "Backpropagation through attention",
    (SETUP, GIVEN, "The forward pass gives", SHOWN,
     r"A loss $L$ has the upstream gradient $\mathrm{d}O = \partial L / \partial O$ given above "
     r"(for $L = \sum_{ij} O_{ij} G_{ij}$ it is $G$). Push it back through the attention, one "
     r"gradient at a time, in order."),
    prompts={"dW_Q": r"Compute the gradients of the projections: $\mathrm{d}W_Q = X^{\top} "
                     r"\mathrm{d}Q$, $\mathrm{d}W_K = X^{\top} \mathrm{d}K$ and $\mathrm{d}W_V = "
                     r"X^{\top} \mathrm{d}V$.",
             "dX_Q": r"Compute $\mathrm{d}X$, one path at a time: $\mathrm{d}X^{(Q)} = \mathrm{d}Q\, "
                     r"W_Q^{\top}$, $\mathrm{d}X^{(K)} = \mathrm{d}K\, W_K^{\top}$, $\mathrm{d}X^{(V)} = "
                     r"\mathrm{d}V\, W_V^{\top}$, then their sum: $X$ feeds all three projections."},
    matrices=("dO",), draw_params=draw_upstream, in_default_mix=False))
