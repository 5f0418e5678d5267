"""Stage 3 helper: what a worked step means, in the problem's own numbers, for the keys' notes.

The engine computes every entry; this module picks out from a step the facts a
teacher would point at: which key each query attends to most and why (its score is
the row's largest), which value row each output row mostly takes, and what the
scaling changed (a row's largest weight with it and without it).  Templates
(``notes/<step kind>``) turn the facts into a sentence or two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy

from .engine import Num, Step


@dataclass(frozen=True)
class Focus:
    """Row ``row`` gives its largest share, ``weight``, to ``key`` (whose input was ``score``)."""

    row: int
    key: int
    weight: Num
    score: Num | None = None


@dataclass(frozen=True)
class ScalingEffect:
    """For query ``row``, its largest weight with the scaling and on the raw scores."""

    row: int
    scaled: Num
    unscaled: Num


def attention_focus(step: Step) -> list[Focus]:
    """A softmax step: for each query that sees two keys or more, the key it attends to most."""
    facts = []
    for line in step.working:
        seen = [j for j, x in enumerate(line.inputs) if x is not None]
        if len(seen) > 1:
            top = max(seen, key=lambda j: line.weights[j].value)
            facts.append(Focus(line.row, top, line.weights[top], line.inputs[top]))
    return facts


def blend_focus(step: Step) -> list[Focus]:
    """A blend step: for each output row, the value row it takes most from."""
    facts = []
    for line in step.working:
        top = max(range(len(line.weights)), key=lambda j: line.weights[j].value)
        facts.append(Focus(line.row, top, line.weights[top]))
    return facts


def scaling_effect(step: Step) -> ScalingEffect | None:
    """A scaling step: the query whose largest weight the scaling lowers most, with that weight
    as it is and as it would be on the raw scores (softmax in float64, shown rounded)."""
    rows: dict[int, list] = {}
    for line in step.working:
        rows.setdefault(line.row, []).append((line.score.value, line.result.value))
    best = None
    for row, pairs in rows.items():
        if len(pairs) < 2:
            continue
        unscaled, scaled = (_largest_softmax([pair[k] for pair in pairs]) for k in (0, 1))
        if best is None or unscaled - scaled > best[0]:
            best = (unscaled - scaled, ScalingEffect(row, _rounded(scaled), _rounded(unscaled)))
    return best[1] if best else None


def _largest_softmax(values: list[float]) -> float:
    top = max(values)
    return 1 / sum(math.exp(v - top) for v in values)


def _rounded(value: float) -> Num:
    """A float the formatters write rounded: its exact form is not a rational."""
    return Num(sympy.Float(value, 30), value)
