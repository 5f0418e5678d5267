"""Stage 2, the engine: solve a spec exactly and record every step with its working.

``solve(spec)`` runs the problem's plan (``steps.plan_for``: X, W_Q, W_K, W_V, Q, K, V,
scores, scaled, [masked], weights, output), each step by its op's exact face (``ops``;
the functions ``*_op`` below), and returns a ``Solution``.  sympy computes every entry
exactly; each entry is stored as a ``Num`` holding that exact value and its float64
evaluated from it.  The working behind each entry (dot products, scalings, exponentials
and row sums, value blends) is recorded as plain data.  The engine knows nothing of
LaTeX, Markdown or templates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.exact import as_written, exp_as_written, to_float
from generator.maths.spec import ProblemSpec, SpecError
from generator.maths.steps import StepDef, plan_for

MASKED = sympy.S.NegativeInfinity
# e^710 overflows float64; a score that large has no place in a hand-solved exam.
MAX_SCALED_SCORE = 700


@dataclass(frozen=True, eq=False, slots=True)
class Num:
    """One number of a step: its exact value and the float64 evaluated from it.

    Compared and hashed by identity: the Evaluator makes one Num per exact value,
    and the formatters' caches would otherwise hash a sympy number on every lookup.
    """

    exact: sympy.Expr
    value: float

    @classmethod
    def of(cls, exact: sympy.Expr) -> "Num":
        """The Num of an exact value, its float evaluated from it."""
        return cls(exact, to_float(exact))


NumMatrix = tuple[tuple[Num, ...], ...]


@dataclass(frozen=True, slots=True)
class DotProduct:
    """Entry (row, col) as the sum of products a·b over ``pairs``: the left matrix's row and
    the right matrix's column, held as the tuples the step's other entries share (pairs
    made up front were two fifths of a solved problem's memory)."""

    row: int
    col: int
    left: tuple[Num, ...]
    right: tuple[Num, ...]
    result: Num

    @property
    def pairs(self) -> tuple[tuple[Num, Num], ...]:
        """The products' factors, (a, b) for each term of the sum."""
        return tuple(zip(self.left, self.right))


@dataclass(frozen=True, slots=True)
class Scaling:
    """A raw score turned into a scaled score, by ``divisor`` (sqrt d_k) or ``factor``."""

    row: int
    col: int
    score: Num
    factor: Num
    divisor: Num | None
    result: Num
    d_k: int


@dataclass(frozen=True, slots=True)
class MaskedEntry:
    """A score set to -inf: the mask hides key ``col`` from query ``row`` (under a causal
    mask, the key comes after the query)."""

    row: int
    col: int


@dataclass(frozen=True, slots=True)
class SoftmaxRow:
    """One row of softmax: inputs (None where masked), their exponentials, sum, quotients."""

    row: int
    inputs: tuple[Num | None, ...]
    exponentials: tuple[Num | None, ...]
    total: Num
    weights: tuple[Num, ...]


@dataclass(frozen=True, slots=True)
class Blend:
    """One output row as the weighted sum of the value rows; ``exponentials`` are the softmax
    row's e^(s_j) (None where masked) when the weights are one, so that a no-calculator key
    can write the row as one quotient of table values."""

    row: int
    weights: tuple[Num, ...]
    values: NumMatrix
    result: tuple[Num, ...]
    exponentials: tuple[Num | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class JacobianEntry:
    """J_ij = a_i (delta_ij - a_j): on the diagonal a_i (1 - a_i), off it -a_i a_j."""

    row: int
    col: int
    a_i: Num
    a_j: Num
    result: Num


@dataclass(frozen=True, slots=True)
class SoftmaxBackwardRow:
    """One row of the softmax backward pass: the weights a, the upstream gradient g, their
    dot product a·g, and a_j (g_j - a·g) for each j."""

    row: int
    weights: tuple[Num, ...]
    upstream: tuple[Num, ...]
    dot: Num
    result: tuple[Num, ...]


@dataclass(frozen=True)
class Step:
    """One step of the solution; ``kind`` names the shape of its working."""

    name: str
    formula: str
    kind: str  # the op that computed it (ops), or what a type made it by (a permutation)
    entries: NumMatrix
    working: tuple = field(default=())

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the step's matrix."""
        return len(self.entries), len(self.entries[0])

    @property
    def exact(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """The step's entries as exact sympy values."""
        return tuple(tuple(n.exact for n in row) for row in self.entries)

    @property
    def numeric(self) -> np.ndarray:
        """The step's entries as a float64 array."""
        return np.array([[n.value for n in row] for row in self.entries], dtype=float)


@dataclass(frozen=True)
class Solution:
    """A solved problem: its spec, every step in the order computed, and the plan that computed
    them."""

    spec: ProblemSpec
    steps: tuple[Step, ...]
    plan: tuple[StepDef, ...] = ()  # how each step was computed, from which (steps.plan)

    def step(self, name: str) -> Step:
        """The step named ``name``; a KeyError when the solution has none."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    @property
    def step_names(self) -> tuple[str, ...]:
        """The steps' names in the order they were computed."""
        return tuple(step.name for step in self.steps)


class Evaluator:
    """Makes ``Num``s, evaluating each distinct exact value to float only once.

    Rationals, square roots and exponentials are evaluated from their exact forms
    (correctly rounded).  Softmax sums and quotients and the output blends are then
    formed in float64 from those values, with ``math.fsum``: evaluating their large
    exact forms digit by digit would cost most of a run and change no shown digit
    (the error is below 1e-15; the independent numpy check allows 1e-9).
    """

    def __init__(self) -> None:
        self._cache: dict[sympy.Expr, Num] = {}

    def __call__(self, exact: sympy.Expr) -> Num:
        """The one Num of ``exact``, made on its first use."""
        if exact not in self._cache:
            self._cache[exact] = Num.of(exact)
        return self._cache[exact]

    def dot(self, pairs) -> Num:
        """Σ a·b exactly; in Python's integers when every factor is rational (most
        problems), which is many times faster than sympy's arithmetic."""
        if all(a.exact.is_Rational and b.exact.is_Rational for a, b in pairs):
            numerator, denominator = 0, 1  # over one denominator, reduced once at the end
            for a, b in pairs:
                p, q = a.exact.p * b.exact.p, a.exact.q * b.exact.q
                numerator, denominator = ((numerator + p, denominator) if q == denominator
                                          else (numerator * q + p * denominator, denominator * q))
            return self(sympy.Rational(numerator, denominator))
        if any(a.exact.has(sympy.exp) or b.exact.has(sympy.exp) for a, b in pairs):
            return self.blend(pairs, weights_sum_to_one=False)  # softmax outputs: left as written
        total = sympy.Add(*(a.exact * b.exact for a, b in pairs))
        if any(a.exact.has(sympy.E) or b.exact.has(sympy.E) for a, b in pairs):
            return self(total)  # gradients through e: left as written
        # Sums of radicals: expanded, a + b·√2 + c·√3 + ..., is short, and so stays every step
        # that uses it (left as products of sums, a 12-token spec's forms ran to megabytes).
        total = sympy.expand(total)
        if total.has(sympy.sin, sympy.cos):  # turned pairs' scores: cos² + sin² = 1, angles' sums fold
            simpler = sympy.trigsimp(total)
            total = simpler if sympy.count_ops(simpler) < sympy.count_ops(total) else total
        return self(total)

    def total(self, nums) -> Num:
        """The sum of ``nums``: exact as a sympy sum, its float by ``math.fsum``."""
        return Num(sympy.Add(*(n.exact for n in nums)), math.fsum(n.value for n in nums))

    def quotient(self, numerator: Num, denominator: Num) -> Num:
        """numerator / denominator: reduced when both are rational or equal (a weight of 1 or 1/2),
        otherwise left as written."""
        if numerator.exact == denominator.exact or (
                numerator.exact.is_Rational and denominator.exact.is_Rational):
            return self(numerator.exact / denominator.exact)  # a weight of 1 or 1/2 stays plain
        exact = as_written(sympy.Mul, numerator.exact, sympy.Pow(denominator.exact, -1))
        return Num(exact, numerator.value / denominator.value)

    def blend(self, pairs, weights_sum_to_one: bool) -> Num:
        """sum of weight·value, left as written (no document shows it simplified)."""
        # Exact 0 and 1 are sympy's singletons: ``is`` asks what ``== 0`` asks, without
        # turning 0 into a sympy number each time (a large set blends millions of terms).
        zero, one = sympy.S.Zero, sympy.S.One
        values = {v.exact for w, v in pairs if w.exact is not zero}
        if weights_sum_to_one and len(values) == 1:  # blending equal values gives that value
            return self(values.pop())
        kept = [(w.exact, v.exact) for w, v in pairs if w.exact is not zero and v.exact is not zero]
        denominator = _shared_denominator([w for w, _ in kept])
        if denominator is not None:  # softmax weights e_j/S: written once over S, not S each time
            kept = [(w.args[0], v) for w, v in kept]
        terms = [w if v is one else as_written(sympy.Mul, w, v) for w, v in kept]
        exact = as_written(sympy.Add, *terms) if terms else sympy.S.Zero
        if denominator is not None:
            exact = as_written(sympy.Mul, exact, sympy.Pow(denominator, -1))
        return Num(exact, math.fsum(w.value * v.value for w, v in pairs))

    def matrix(self, rows) -> NumMatrix:
        """A matrix of exact values as Nums."""
        return tuple(tuple(self(entry) for entry in row) for row in rows)


def solve(spec: ProblemSpec, mistake: str | None = None) -> Solution:
    """Solve one problem exactly, recording every step of its plan (``steps.plan_for``).

    With ``mistake`` (a key of steps.MISTAKEN), that step is computed the wrong way and every
    later step follows from the wrong value, as a student's worked solution would.
    """
    return run(plan_for(spec, mistake), spec)


def run(plan: tuple[StepDef, ...], spec: ProblemSpec, known: dict[str, Step] | None = None,
        num: Evaluator | None = None) -> Solution:
    """Compute each step of ``plan`` from its inputs, by its op's exact face (``ops``): given
    matrices from the spec, or steps already ``known`` (a row of scores given on its own, the
    heads' outputs)."""
    num = num or Evaluator()
    done = dict(known or {})
    steps = []
    for step_def in plan:
        if step_def.is_given and step_def.name in done:
            step = done[step_def.name]
        else:
            inputs = [done[name] for name in step_def.inputs]
            step = ops.op(step_def.op).exact(step_def, inputs, spec, num)
        step = step if step.name == step_def.name else replace(step, name=step_def.name)
        done[step_def.name] = step
        steps.append(step)
    return Solution(spec=spec, steps=tuple(steps), plan=plan)


# Each op's exact face (see ops, builtin_ops): (step_def, input Steps, spec, num) -> Step.  A
# step is named, and its formula worded, by its StepDef: the engine knows no step's name.
def given_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The given op's exact face: the spec's matrix of that name."""
    return given_step(step_def.name, spec.matrices[step_def.name], num)


def product_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The product's exact face: every entry a dot product, either side transposed as the step says."""
    left, right = inputs
    return product_step(step_def.name, step_def.worded(),
                        transpose(left.entries) if step_def.transpose_left else left.entries,
                        transpose(right.entries) if step_def.transpose else right.entries, num)


def scaling_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The scaling's exact face: the scores times 1/sqrt(d_k), the spec's scale, 1 or 1/d_k (the
    step's ``factor``)."""
    scale = {"scale": spec.scale, "one": sympy.S.One,
             "one-over-dk": sympy.Rational(1, spec.d_k)}[step_def.factor]
    formula = (step_def.factor_text if scale is not None and step_def.factor_text
               else step_def.worded())
    return scaling_step(step_def.name, formula, inputs[0], replace(spec, scale=scale), num)


def masking_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The mask's exact face: -inf wherever the spec's mask hides key j from query i."""
    formula = step_def.worded() if spec.mask == "causal" else MASK_WORDS.format(*step_def.inputs)
    return mask_step(step_def.name, formula, inputs[0], spec.visible, num)


MASK_WORDS = "masked = {0}, -inf where the mask hides key j from query i"


def softmax_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The softmax's exact face: each row's (or column's) exponentials over their sum."""
    largest = max((abs(n.value) for row in inputs[0].entries for n in row if n.exact is not MASKED),
                  default=0)
    if largest > MAX_SCALED_SCORE:  # an unscaled plan (scale 1) meets no scaling step's check
        raise SpecError(f"problem {spec.id}: a score of {largest:.6g} is too large to exponentiate "
                        f"(at most {MAX_SCALED_SCORE}); use smaller entries")
    return softmax_step(step_def.name, step_def.worded(), inputs[0], num,
                        by_columns=step_def.by_columns)


def blend_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The blend's exact face: each output row the weighted sum of the value rows."""
    return blend_step(step_def.name, step_def.worded(), inputs[0], inputs[1], num,
                      rows_sum_to_one=step_def.rows_sum_to_one)


def add_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The sum's exact face: the inputs added entry by entry; a SpecError when their shapes differ."""
    if len({step.shape for step in inputs}) > 1:
        raise SpecError(f"problem {spec.id}: {step_def.worded()} needs "
                        f"{' and '.join(s.name for s in inputs)} of one shape")
    entries = tuple(tuple(num.total(cells) for cells in zip(*rows))
                    for rows in zip(*(step.entries for step in inputs)))
    return Step(step_def.name, step_def.worded(), "add", entries)


def softmax_backward_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """dS~_ij = A_ij (dA_ij - sum_k A_ik dA_ik): the softmax Jacobian applied row by row."""
    weights, upstream = inputs
    working = tuple(_softmax_backward_row(i, a, g, num)
                    for i, (a, g) in enumerate(zip(weights.entries, upstream.entries)))
    return Step(step_def.name, step_def.worded(), "softmax-backward",
                tuple(w.result for w in working), working)


def jacobian_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """J_ij = a_i (delta_ij - a_j) for one row a of weights."""
    a = inputs[0].entries[0]
    working = tuple(JacobianEntry(i, j, a[i], a[j], num(a[i].exact * (int(i == j) - a[j].exact))
                                  if a[i].exact.is_Rational and a[j].exact.is_Rational else
                                  Num(sympy.Mul(a[i].exact, sympy.Add(int(i == j), -a[j].exact,
                                                                      evaluate=False), evaluate=False),
                                      a[i].value * ((i == j) - a[j].value)))
                    for i in range(len(a)) for j in range(len(a)))
    return Step(step_def.name, step_def.worded(), "jacobian",
                _reshape([w.result for w in working], len(a)), working)


def _softmax_backward_row(index: int, weights, upstream, num: Evaluator) -> "SoftmaxBackwardRow":
    if (all(x.exact.is_Rational for x in (*weights, *upstream))  # a row given to a few places
            and not all(a.exact.is_Integer for a in weights)):
        dot = num(sympy.Add(*(a.exact * g.exact for a, g in zip(weights, upstream))))
        result = tuple(num(a.exact * (g.exact - dot.exact)) for a, g in zip(weights, upstream))
        return SoftmaxBackwardRow(index, weights, upstream, dot, result)
    dot = num.blend(tuple(zip(weights, upstream)), weights_sum_to_one=False)
    result = tuple(num(sympy.S.Zero) if a.exact == 0 else Num(
        sympy.Mul(a.exact, sympy.Add(g.exact, -dot.exact, evaluate=False), evaluate=False),
        a.value * (g.value - dot.value)) for a, g in zip(weights, upstream))
    return SoftmaxBackwardRow(index, weights, upstream, dot, result)


def concat_op(step_def: StepDef, inputs, spec: ProblemSpec, num: Evaluator) -> Step:
    """The heads' concatenation's exact face: each row the parts' rows side by side."""
    rows = tuple(sum((step.entries[r] for step in inputs), ()) for r in range(len(inputs[0].entries)))
    return Step(step_def.name, step_def.worded(), "concat", rows)


def given_step(name: str, matrix, num: Evaluator) -> Step:
    """A given matrix as a step of its own, its entries exact."""
    return Step(name=name, formula=f"{name} (given)", kind="given", entries=num.matrix(matrix))


def transpose(entries: NumMatrix) -> NumMatrix:
    """A matrix of Nums transposed."""
    return tuple(zip(*entries))


def product_step(name: str, formula: str, left: NumMatrix, right: NumMatrix,
                 num: Evaluator) -> Step:
    """left · right, with the dot product behind every entry."""
    columns = transpose(right)
    working = tuple(DotProduct(i, j, row, column, num.dot(tuple(zip(row, column))))
                    for i, row in enumerate(left) for j, column in enumerate(columns))
    entries = _reshape([w.result for w in working], len(columns))
    return Step(name=name, formula=formula, kind="product", entries=entries, working=working)


def scaling_step(name: str, formula: str, scores: Step, spec: ProblemSpec, num: Evaluator) -> Step:
    """scores times the scale: 1/sqrt(d_k) unless the spec sets another factor."""
    if spec.scale is None:
        divisor = num(sympy.sqrt(spec.d_k))
        factor = num(1 / divisor.exact)
    else:
        divisor, factor = None, num(spec.scale)
    working = tuple(Scaling(i, j, s, factor, divisor, num(s.exact * factor.exact), spec.d_k)
                    for i, row in enumerate(scores.entries) for j, s in enumerate(row))
    entries = _reshape([w.result for w in working], scores.shape[1])
    largest = max(abs(w.result.value) for w in working)
    if largest > MAX_SCALED_SCORE:
        raise SpecError(f"problem {spec.id}: a scaled score of {largest:.6g} is too large to "
                        f"exponentiate (at most {MAX_SCALED_SCORE}); use smaller entries")
    return Step(name=name, formula=formula, kind="scaling", entries=entries, working=working)


def causal_mask_step(name: str, formula: str, scaled: Step, num: Evaluator) -> Step:
    """Set every score of a key after its query to -inf (top-left aligned, as PyTorch)."""
    rows, columns = scaled.shape
    return mask_step(name, formula, scaled, tuple(tuple(j <= i for j in range(columns))
                                                  for i in range(rows)), num)


def mask_step(name: str, formula: str, scaled: Step, visible, num: Evaluator) -> Step:
    """Set every score the mask hides (``visible`` False) to -inf; its weight will be an exact 0."""
    entries = tuple(tuple(s if seen else num(MASKED) for s, seen in zip(row, sees))
                    for row, sees in zip(scaled.entries, visible))
    working = tuple(MaskedEntry(i, j) for i, sees in enumerate(visible)
                    for j, seen in enumerate(sees) if not seen)
    return Step(name=name, formula=formula, kind="masking", entries=entries, working=working)


def softmax_step(name: str, formula: str, scores: Step, num: Evaluator,
                 by_columns: bool = False) -> Step:
    """Row-wise softmax; a masked score has no exponential and gets an exact 0 weight.

    ``by_columns`` is the mistake of normalising each column instead of each row.
    """
    lines = transpose(scores.entries) if by_columns else scores.entries
    working = tuple(_softmax_row(i, row, num) for i, row in enumerate(lines))
    entries = tuple(w.weights for w in working)
    if by_columns:
        return Step(name=name, formula=formula, kind="softmax", entries=transpose(entries))
    return Step(name=name, formula=formula, kind="softmax", entries=entries, working=working)


def _softmax_row(index: int, row: tuple[Num, ...], num: Evaluator) -> SoftmaxRow:
    inputs = tuple(None if s.exact is MASKED else s for s in row)
    exponentials = tuple(None if s is None else num(_exp(s.exact)) for s in inputs)
    total = num.total([e for e in exponentials if e is not None])
    weights = tuple(num(sympy.S.Zero) if e is None else num.quotient(e, total) for e in exponentials)
    return SoftmaxRow(index, inputs, exponentials, total, weights)


def _exp(x: sympy.Expr) -> sympy.Expr:
    """e^x; for a rational x other than 0 and 1, which sympy leaves as exp(x) anyway, without
    the assumptions its evaluation asks (most of a softmax's time)."""
    if x.is_Rational and x is not sympy.S.Zero and x is not sympy.S.One:
        return exp_as_written(x)
    return sympy.exp(x)


def blend_step(name: str, formula: str, weights: Step, v: Step, num: Evaluator,
               rows_sum_to_one: bool = True) -> Step:
    """output = weights · V: each output row blends the value rows by that row's weights.

    ``rows_sum_to_one`` is False after the column-wise softmax mistake.
    """
    columns = transpose(v.entries)
    softmax_rows = {w.row: w.exponentials for w in weights.working} if (
        weights.kind == "softmax" and rows_sum_to_one) else {}
    working = tuple(Blend(i, row, v.entries, tuple(num.blend(tuple(zip(row, column)), rows_sum_to_one)
                                                   for column in columns), softmax_rows.get(i))
                    for i, row in enumerate(weights.entries))
    entries = tuple(w.result for w in working)
    return Step(name=name, formula=formula, kind="blend", entries=entries, working=working)


def _shared_denominator(weights: list) -> sympy.Expr | None:
    """S, when every weight is a quotient e_j/S over one and the same S (a softmax row)."""
    if len(weights) < 2 or not all(w.is_Mul and len(w.args) == 2 and w.args[1].is_Pow
                                   and w.args[1].exp == -1 for w in weights):
        return None
    denominators = {w.args[1].base for w in weights}
    return denominators.pop() if len(denominators) == 1 else None


def _reshape(flat: list[Num], width: int) -> NumMatrix:
    return tuple(tuple(flat[i:i + width]) for i in range(0, len(flat), width))
