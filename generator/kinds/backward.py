"""Question type "backward": push an upstream gradient dO back through attention by hand,
dV = Aᵀ dO, dA = dO Vᵀ, the softmax backward row by row, the scaling, dQ = dS K and
dK = dSᵀ Q (and, where X is given, dW_Q, dW_K, dW_V and dX), every step with its working."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from ..crosscheck import attention_steps
from ..engine import solve
from ..questions import (SETUP, TIE, Part, Question, answer_with_slips, given_steps, lettered,
                         shuffled_item, step_parts)
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
    alive = why_scale(spec, solution)
    if alive:
        parts.append(Part("why-scale", 1, item=alive[0], answer=alive[1]))
    ignored = ignored_key(spec, solution)
    if ignored:
        parts.append(Part("ignored-key", 1, item=ignored[0], answer=ignored[1]))
    return Question("backward", spec, solution, given_steps(solution), lettered(parts), shown=shown)


# Why 1/sqrt(d_k) keeps gradients alive, and what students think instead.
WHY_SCALE = (
    ("Softmax saturates: the nearer a row of weights is to one-hot, the smaller "
     r"$A \odot (\mathrm{d}A - \operatorname{rowsum}(A \odot \mathrm{d}A))$ gets, so larger "
     "scores pass back less gradient.", ""),
    ("Larger scores pass back more gradient: the gradient grows with the scores.",
     "the scores grow, but the gradient through softmax shrinks as the weights saturate"),
    ("Nothing changes: scaling is linear, so it only scales the gradient by the same factor.",
     "the scaling is linear, but softmax after it is not"),
    ("The gradient becomes exactly 0 without scaling.", "it shrinks, but stays above 0"),
)


# What reaches the values of a key that (almost) no query attends to.
IGNORED = (
    (r"It is the smallest: row $j$ of $\mathrm{d}V = A^{\top} \mathrm{d}O$ adds up the rows of "
     r"$\mathrm{d}O$, each times how much that query attends to key $j$, and all those weights "
     r"are small.", ""),
    ("It is the largest: the key nobody attends to has the most to learn.",
     "a value row only learns as much as it is used"),
    (r"It is row $j$ of $\mathrm{d}O$.", r"that would need $A = I$"),
    ("It is exactly 0.", "small weights are not zero: a little gradient still arrives"),
)


def ignored_key(spec, solution):
    """The key with the least attention (its column of A), when it alone has the least, its
    row of dV is indeed the smallest (alone, and not 0: a key that no query sees under a mask
    gets exactly none) and that key gets well under an even share."""
    weights, dv = solution.step("weights").numeric, solution.step("dV").numeric
    attention, sizes = weights.sum(axis=0), np.abs(dv).sum(axis=1)
    key = int(np.argmin(attention))
    if (len(sizes) < 2 or not _least_alone(attention, key) or not _least_alone(sizes, key)
            or sizes[key] < TIE or attention[key] > 0.5 * attention.mean()):
        return None
    return shuffled_item("ignored-key", IGNORED, f"{spec.id}:dV"), (key, attention[key])


def _least_alone(values: np.ndarray, index: int) -> bool:
    """Whether ``values[index]`` is the smallest, with no other as small."""
    return int(np.sum(values < values[index] + TIE)) == 1 and values[index] == values.min()


def why_scale(spec, solution):
    """Where the usual 1/sqrt(d_k) is used, the row whose softmax gradient scaling keeps
    most alive, when the engine shows it does (without scaling that row passes back less)."""
    if spec.scale is not None or spec.d_k < 2:
        return None
    given = {step.name: step.numeric for step in solution.steps if step.kind == "given"}
    raw = attention_steps(given, spec.mask, 1.0)  # the same problem, not scaled (numpy)
    kept = np.abs(solution.step("dscaled").numeric).sum(axis=1)
    lost = np.abs(raw["dscaled"]).sum(axis=1)
    rows = [i for i in range(len(kept)) if lost[i] < kept[i] and kept[i] > 1e-4]
    if not rows:
        return None
    row = max(rows, key=lambda i: kept[i] - lost[i])
    item = shuffled_item("why-scale", WHY_SCALE, spec.id)
    return item, (row, solution.step("weights").numeric[row].max(), raw["weights"][row].max(),
                  kept[row], lost[row])


def draw_upstream(rng, candidate, decimals: int) -> dict | None:
    drawn = upstream_and_steps(rng, candidate, decimals)
    return drawn and drawn[0]


def upstream_and_steps(rng, candidate, decimals: int) -> tuple[dict, dict] | None:
    """dO of small halves, no row of it zero, and a softmax gradient that shows at the
    printed decimals (weights of 0 and 1 would pass no gradient back); with the candidate's
    steps in numpy, for a type that chooses more from them."""
    rows, columns = len(candidate.x), candidate.w_v.shape[1]
    upstream = rng.choice(UPSTREAM, size=(rows, columns))
    if not np.abs(upstream).sum(axis=1).all():
        return None
    steps = attention_steps({**candidate.given, "dO": upstream}, candidate.mask, candidate.scale)
    if np.abs(steps["dscaled"]).max() < 10.0**-decimals:
        return None
    exact = tuple(tuple(sympy.Rational(int(round(2 * v)), 2) for v in row) for row in upstream)
    return {"matrices": {"dO": exact}}, steps


register(QuestionType(
    "backward", backward_question, "Backpropagation through attention",
    (SETUP, GIVEN, "The forward pass gives", SHOWN,
     r"A loss $L$ has the upstream gradient $\mathrm{d}O = \partial L / \partial O$ given above "
     r"(for $L = \sum_{ij} O_{ij} G_{ij}$ it is $G$). Push it back through the attention, one "
     r"gradient at a time, in order."),
    choice="{{ choice }}",
    keys={"why-scale": answer_with_slips(), "ignored-key": answer_with_slips()},
    prompts={"why-scale": "{{ 'Query' if spec.cross else 'Token' }} {{ part.answer[0] + 1 }}'s "
                          "largest weight is "
                          "${{ '%.4f' | format(part.answer[1]) }}$; without the scaling by "
                          "$1/\\sqrt{d_k}$ it would be ${{ '%.4f' | format(part.answer[2]) }}$, "
                          "and its row of $\\mathrm{d}\\tilde{S}$ would "
                          "add up (in size) to ${{ '%.4f' | format(part.answer[4]) }}$ instead of "
                          "${{ '%.4f' | format(part.answer[3]) }}$. Why?",
             "ignored-key": "Key {{ part.answer[0] + 1 }} gets the least attention: its column of $A$ "
                            "adds up to ${{ '%.4f' | format(part.answer[1]) }}$. What is true of row "
                            "{{ part.answer[0] + 1 }} of $\\mathrm{d}V$?",
             "dW_Q": r"Compute the gradients of the projections: $\mathrm{d}W_Q = X^{\top} "
                     r"\mathrm{d}Q$, $\mathrm{d}W_K = X^{\top} \mathrm{d}K$ and $\mathrm{d}W_V = "
                     r"X^{\top} \mathrm{d}V$.",
             "dX_Q": r"Compute $\mathrm{d}X$, one path at a time: $\mathrm{d}X^{(Q)} = \mathrm{d}Q\, "
                     r"W_Q^{\top}$, $\mathrm{d}X^{(K)} = \mathrm{d}K\, W_K^{\top}$, $\mathrm{d}X^{(V)} = "
                     r"\mathrm{d}V\, W_V^{\top}$, then their sum: $X$ feeds all three projections."},
    matrices=("dO",), draw_params=draw_upstream, in_default_mix=False))
