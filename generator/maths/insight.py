"""Stage 3 helper: what a worked step means, in the problem's own numbers, for the keys' notes.

The engine computes every entry; this module picks out from the steps the key shows the
facts a teacher would point at: which key each query attends to most and why (its score is
the row's largest), which value row each output row mostly takes, and what the scaling
changed (a row's largest weight in the key's own weights, and on the raw scores under the
same mask).  Every fact comes from a shown step, so that a note never contradicts the key:
keys that share the top weight are a tie, and a top weight that prints like the next one
is printed with the places that tell them apart.  Templates (``notes/<step kind>``) turn
the facts into a sentence or two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy

from generator.kinds.questions import TIE
from generator.maths.engine import Num, Step
from generator.rendering.formatting import decimal_text

MORE_PLACES = 8  # at most this many places beyond the key's own to tell two weights apart


@dataclass(frozen=True)
class Focus:
    """Row ``row`` gives its largest share, ``weight``, to ``keys`` (more than one: a tie),
    whose input was ``score``.  ``next_key`` is a key whose smaller weight, ``next_weight``,
    prints like the top one at the key's decimals: both are then printed with ``places``."""

    row: int
    keys: tuple[int, ...]
    weight: Num
    score: Num | None = None
    next_key: int | None = None
    next_weight: Num | None = None
    places: int | None = None

    @property
    def key(self) -> int:
        """The key that gets the row's largest weight (the first, in a tie)."""
        return self.keys[0]

    @property
    def tied(self) -> bool:
        """Whether more than one key shares the largest weight."""
        return len(self.keys) > 1


@dataclass(frozen=True)
class ScalingEffect:
    """For query ``row``, its largest weight with the scaling and on the raw scores."""

    row: int
    scaled: Num
    unscaled: Num


def attention_focus(step: Step, decimals: int = 4) -> list[Focus]:
    """A softmax step: for each query that sees two keys or more, the key (or keys) it
    attends to most."""
    facts = []
    for line in step.working:
        seen = [j for j, x in enumerate(line.inputs) if x is not None]
        if len(seen) > 1:
            facts.append(_focus(line.row, line.weights, seen, decimals, line.inputs))
    return facts


def blend_focus(step: Step, decimals: int = 4) -> list[Focus]:
    """A blend step: for each output row, the value row (or rows) it takes most from."""
    return [_focus(line.row, line.weights, range(len(line.weights)), decimals)
            for line in step.working]


def _focus(row: int, weights, seen, decimals: int, inputs=None) -> Focus:
    best = max(weights[j].value for j in seen)
    tops = tuple(j for j in seen if best - weights[j].value < TIE)
    rest = [j for j in seen if j not in tops]
    fact = Focus(row, tops, weights[tops[0]], inputs[tops[0]] if inputs else None)
    if rest:
        runner = max(rest, key=lambda j: weights[j].value)
        places = _places_apart(fact.weight, weights[runner], decimals)
        if places != decimals:
            fact = Focus(row, tops, fact.weight, fact.score, runner, weights[runner], places)
    return fact


def _places_apart(a: Num, b: Num, decimals: int) -> int:
    """The fewest places, from ``decimals`` on, at which ``a`` and ``b`` print differently."""
    for places in range(decimals, decimals + MORE_PLACES + 1):
        if decimal_text(a, places) != decimal_text(b, places):
            return places
    return decimals + MORE_PLACES


def scaling_effect(step: Step, question=None, decimals: int = 4) -> ScalingEffect | None:
    """A scaling step: the query whose largest weight the scaling lowers most, with that weight
    as the key's own weights show it (under the mask, in the head) and as it would be on the
    raw scores (softmax in float64 over the keys the query sees, shown rounded).  None when
    the scaling lowers no query's largest weight at the shown decimals (a scale above 1, a
    query that sees one key), or when the weights that follow the step are not known."""
    weights = _weights_after(step, question)
    if weights is None:
        return None
    raw = {(line.row, line.col): line.score.value for line in step.working}
    best = None
    for line in weights.working:
        seen = [j for j, x in enumerate(line.inputs) if x is not None]
        if len(seen) < 2:
            continue
        scaled = max((line.weights[j] for j in seen), key=lambda n: n.value)
        unscaled = _rounded(_largest_softmax([raw[line.row, j] for j in seen]))
        drop = unscaled.value - scaled.value
        if drop > TIE and decimal_text(unscaled, decimals) != decimal_text(scaled, decimals) \
                and (best is None or drop > best[0]):
            best = (drop, ScalingEffect(line.row, scaled, unscaled))
    return best[1] if best else None


def _weights_after(step: Step, question) -> Step | None:
    """The row-wise softmax that follows ``step`` in the solution that holds it."""
    for solution in question.solutions() if question is not None else ():
        steps = solution.steps
        at = next((k for k, s in enumerate(steps) if s is step), None)
        if at is not None:
            after = next((s for s in steps[at + 1:] if s.kind == "softmax"), None)
            if after is not None and after.working:
                return after
    return None


def _largest_softmax(values: list[float]) -> float:
    top = max(values)
    return 1 / sum(math.exp(v - top) for v in values)


def _rounded(value: float) -> Num:
    """A float the formatters write rounded: its exact form is not a rational."""
    return Num(sympy.Float(value, 30), value)
