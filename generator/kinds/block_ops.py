"""The ops of the Transformer-block question (``block``), each with every face (see ``maths.ops``):

- ``layer-norm``: each row normalised on its own, y = γ ⊙ (x − μ)/σ + β, where μ is the row's
  mean and σ² the mean of its squared deviations (biased, as PyTorch's ``layer_norm``), with
  ε = 0 (the question says so): from the inputs (rows, γ, β);
- ``linear``: a feed-forward layer's affine map, X W + b, the bias row added to every row: from
  (X, W, b);
- ``relu``: max(0, z) entry by entry.

Each arithmetic is its own (the engine's exact sympy here, numpy's for the cross-check, the
page's JavaScript in templates/html/ops/<op>.js), as for the built-in ops.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.maths.spec import SpecError
from generator.rendering import formatting as fmt
from generator.rendering import paper
from generator.rendering.hints import OpHint, products
from generator.rendering.language import gettext as _

LAYER_NORM = "layer-norm"
LINEAR = "linear"
RELU = "relu"


# layer-norm: y = γ ⊙ (x − μ)/σ + β, row by row
@dataclass(frozen=True)
class NormRow:
    """One row normalised: its entries, mean μ, deviations x − μ, variance σ² (their squares'
    mean), σ, the normalised entries x̂ and the result γ ⊙ x̂ + β."""

    row: int
    inputs: tuple[Num, ...]
    mean: Num
    deviations: tuple[Num, ...]
    variance: Num
    deviation: Num  # σ = sqrt(σ²)
    normalised: tuple[Num, ...]
    gamma: tuple[Num, ...]
    beta: tuple[Num, ...]
    result: tuple[Num, ...]

    @property
    def affine(self) -> bool:
        """Whether γ and β change anything (not every γ 1 and every β 0)."""
        return any(g.exact != 1 for g in self.gamma) or any(b.exact != 0 for b in self.beta)


def _norm_row(index: int, row, gamma, beta, num, where: str) -> NormRow:
    if not all(x.exact.is_Rational for x in (*row, *gamma, *beta)):
        return _decimal_row(index, row, gamma, beta, num, where)
    n = len(row)
    mean = num(sympy.Add(*(x.exact for x in row)) / n)
    deviations = tuple(num(x.exact - mean.exact) for x in row)
    variance = num(sympy.Add(*(d.exact**2 for d in deviations)) / n)
    if variance.exact == 0:
        raise SpecError(f"{where} has every entry equal ({fmt.decimal_text(row[0], 4)}): its variance "
                        f"is 0, and with ε = 0 LayerNorm divides by 0")
    deviation = num(sympy.sqrt(variance.exact))
    normalised = tuple(num(sympy.radsimp(d.exact / deviation.exact)) for d in deviations)
    result = tuple(num(sympy.expand(g.exact * x.exact + b.exact))
                   for g, x, b in zip(gamma, normalised, beta))
    return NormRow(index, tuple(row), mean, deviations, variance, deviation, normalised,
                   tuple(gamma), tuple(beta), result)


def _decimal_row(index: int, row, gamma, beta, num, where: str) -> NormRow:
    """A row that is not rational (after a softmax, or a root): its exact forms would run to pages
    (the root of a sum of exponentials, divided into each), so the row is worked in 30 significant
    digits (sympy Floats, far beyond any shown digit and the 1e-9 of every check)."""
    def digits(value) -> Num:
        short = sympy.Rational(round(value * 10**6), 10**6)  # 3, not 3.0000: a short decimal exactly
        return Num(short, float(short)) if abs(value - short) < sympy.Float(10) ** (6 - DIGITS) else (
            Num(value, float(value)))

    values = [sympy.Float(x.exact.evalf(DIGITS), DIGITS) for x in row]
    n = len(values)
    mean = sum(values) / n
    deviations = [x - mean for x in values]
    variance = sum(d**2 for d in deviations) / n
    if variance < sympy.Float(10) ** (4 - DIGITS) * max(1, max(abs(x) for x in values)) ** 2:
        raise SpecError(f"{where} has every entry equal: its variance is 0, and with ε = 0 LayerNorm "
                        f"divides by 0")
    sigma = sympy.sqrt(variance)
    normalised = [d / sigma for d in deviations]
    result = [g.exact * x + b.exact for g, x, b in zip(gamma, normalised, beta)]
    return NormRow(index, tuple(row), digits(mean), tuple(map(digits, deviations)), digits(variance),
                   digits(sigma), tuple(map(digits, normalised)), tuple(gamma), tuple(beta),
                   tuple(digits(sympy.Float(y, DIGITS)) for y in result))


DIGITS = 30


def layer_norm_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: each row's mean, variance, σ, normalised entries, then γ ⊙ x̂ + β."""
    rows, gamma, beta = inputs
    def where(i):  # which LayerNorm, and which row of its input
        return (f"problem {spec.id}: row {i + 1} of {step_def.inputs[0]}, the input of the LayerNorm "
                f"{step_def.symbol} = LN({step_def.inputs[0]}),")
    working = tuple(_norm_row(i, row, gamma.entries[0], beta.entries[0], num, where(i))
                    for i, row in enumerate(rows.entries))
    return Step(step_def.name, step_def.worded(), LAYER_NORM, tuple(w.result for w in working), working)


def layer_norm_numeric(step_def, x, gamma, beta, **_):
    """numpy's own arithmetic (the cross-check): the biased variance, ε = 0."""
    mean = x.mean(axis=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(axis=1, keepdims=True)) + beta


def layer_norm_tolerance(step_def, inputs, errors, u, spec):
    """How far γ(x − μ)/σ + β moves when x moves by e, and the student writes μ, σ², σ and x̂ to the
    shown places (u): x̂ over every corner of the box x ± e (a shift of every entry, or a scaling,
    moves nothing: the corners see it, where a bound entry by entry would add every error up),
    with a tenth more for its curvature; the written μ moves x̂ by u/σ, σ² by |x̂| u/(2σ²), σ by
    |x̂| u/σ, x̂ itself by u.  Past 8 columns (256 corners) the first order, J e with J_jk =
    (δ_jk − 1/n − x̂_j x̂_k / n)/σ, and a fifth more.  A box reaching a constant row: |x̂| ≤ √n.
    With its own margin for the curvature the bound is sharp (ops.Op.sharp): no further margin."""
    x, gamma = inputs[0], inputs[1]
    n = x.shape[1]
    rows = [_row_reach(row, row_e, u, n) for row, row_e in zip(x, errors[0])]
    return np.abs(gamma) * np.minimum(np.array(rows), math.sqrt(n) + 1)


def _shown(value: float, u: float) -> bool:
    """Whether a value has no more decimals than are shown (half a unit ``u``)."""
    return abs(round(value / (2 * u)) * 2 * u - value) < 1e-12


def _normalised(rows: np.ndarray) -> np.ndarray:
    deviations = rows - rows.mean(axis=-1, keepdims=True)
    return deviations / np.sqrt((deviations**2).mean(axis=-1, keepdims=True))


def _row_reach(row: np.ndarray, e: np.ndarray, u: float, n: int) -> np.ndarray:
    deviations = row - row.mean()
    sigma = math.sqrt((deviations**2).mean())
    hat = deviations / sigma
    # a move d within the box shrinks sigma by at most d's own spread (its centred root mean
    # square), no more than e's root mean square: near sigma, the box may hold a row all but constant
    least = sigma - math.sqrt((e**2).mean())
    if least <= 0.1 * sigma:
        return np.full(n, math.sqrt(n) + 1)
    if n <= 8:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
        moved = 1.1 * np.abs(_normalised(row + signs * e) - hat).max(axis=0)
    else:
        jacobian = np.abs(np.eye(n) - 1 / n - np.outer(hat, hat) / n) / sigma
        moved = 1.2 * jacobian @ e + 3 * n * (e.max() / sigma) ** 2
    written = _written(row, hat, not e.any(), u, least, np.abs(hat) + moved)
    return moved + written if written is not None else np.full(n, math.sqrt(n) + 1)


def _written(row: np.ndarray, hat: np.ndarray, exact: bool, u: float, least: float, most: np.ndarray):
    """How far writing μ, σ², σ and x̂ to the shown places moves x̂ (None: as far as it likes), its
    row's σ at least ``least`` and |x̂| at most ``most`` over the box: a value is rounded unless, from
    an exact row, it is a short decimal and what it is worked from was written as it is (σ is the
    root of the σ² written).  Not first order: the written σ lies in √(σ² ∓ u) ∓ u, and the written
    mean, off by u, adds its square to σ²."""
    def rounding(value, before=0.0):
        return 0.0 if exact and not before and _shown(value, u) else u
    sigma = math.sqrt(((row - row.mean()) ** 2).mean())
    mean = rounding(row.mean())
    variance = rounding(sigma * sigma, mean)
    root = rounding(sigma, variance)
    low = math.sqrt(max(least * least - variance, 0.0)) - root
    if low <= 0:
        return None
    high = math.sqrt(least * least + mean * mean + variance) + root
    relative = max(least / low - 1, 1 - least / high)
    return most * relative + mean / low + np.array([rounding(h, mean + root) for h in hat])


def layer_norm_shape(step_def, shapes):
    """The rows' shape; γ and β one row each as wide as them."""
    rows, gamma, beta = shapes
    for name, shape in zip(step_def.inputs[1:], (gamma, beta)):
        if shape != (1, rows[1]):
            raise ValueError(f"{step_def.worded()}: {name} must be 1 × {rows[1]}, one entry per "
                             f"column of {step_def.inputs[0]}; it is {shape[0]} × {shape[1]}")
    return rows


def layer_norm_slips(step_def, sym, spec, before, whole=None):
    """The variance over n − 1 (torch.var's default, not LayerNorm's), γ and β left off, and the
    residual left out (the sublayer's output normalised alone: the step that made the input
    says which)."""
    me, x = sym(step_def.name), sym(step_def.inputs[0])
    slips = [({"unbiased": True}, _("this divides the squared deviations by n − 1: LayerNorm's "
                                    "variance is their mean, σ² = Σ(x − μ)²/n")),
             ({"plain": True}, _("γ and β are missing: %(me)s = γ ⊙ (x − μ)/σ + β, row by row")
              % {"me": me})]
    made = before(step_def.inputs[0])
    if made is not None and made.op == "add" and len(made.inputs) == 2:
        sublayer = made.inputs[1]
        slips.append(({"inputs": [sublayer, *step_def.inputs[1:]]}, _(
            "the residual is missing: normalise %(x)s = %(residual)s + %(sublayer)s, not "
            "%(sublayer)s alone") % {"x": x, "residual": sym(made.inputs[0]), "sublayer": sym(sublayer)}))
    return slips


def layer_norm_seconds(step, cost) -> int:
    """Per row: the mean (a sum, a division), each deviation squared and summed, the variance's
    division and its root, each entry's division by σ, then γ x̂ + β (a product term each)."""
    per_row = step.shape[1] * (cost("product term") * 2 + cost("quotient") + cost("product entry"))
    return step.shape[0] * (per_row + 3 * cost("quotient") + cost("row sum"))


def layer_norm_first(w) -> str:
    """The hint's first line: the first row's mean, as the key's working writes it (σ² and σ
    follow from it there)."""
    line = w.line
    entries = " + ".join(fmt.parenthesized(w.text(x)) if k else w.text(x)
                         for k, x in enumerate(line.inputs))
    return w._("row %(row)s's mean μ = (%(entries)s) / %(n)s %(result)s.", row=line.row + 1,
               entries=entries, n=len(line.inputs), result=w.result(line.mean))


LAYER_NORM_OP = ops.Op(
    LAYER_NORM, layer_norm_exact, layer_norm_numeric, layer_norm_tolerance,
    OpHint("row by row: the mean μ of the row of ${{ a }}$, the variance σ² (the mean of the squared "
           "deviations, over n), σ = √σ²; then (x − μ)/σ, times γ, plus β.", layer_norm_first),
    layer_norm_seconds, ops.working_templates(LAYER_NORM), ops.script_file(LAYER_NORM),
    shape=layer_norm_shape, slips=layer_norm_slips, sharp=True)


# linear: X W + b
@dataclass(frozen=True)
class Affine:
    """Entry (row, col): the row of X dotted with the column of W, plus the bias b_col."""

    row: int
    col: int
    left: tuple[Num, ...]
    right: tuple[Num, ...]
    product: Num
    bias: Num
    result: Num

    @property
    def pairs(self):
        """The dot product's factors, (a, b) for each term."""
        return tuple(zip(self.left, self.right))

    def calculator_lines(self):
        """What a calculator checks of the working (``formatting``): the products and the bias."""
        def combine(*numbers):
            return sum((a * b for a, b in zip(numbers[:-1:2], numbers[1:-1:2])), numbers[-1])
        return [((*(n for pair in self.pairs for n in pair), self.bias), combine, self.result)]


def linear_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: each entry a dot product plus its column's bias."""
    x, w, b = inputs
    columns = tuple(zip(*w.entries))
    working = tuple(Affine(i, j, row, column, dot := num.dot(tuple(zip(row, column))), b.entries[0][j],
                           num(sympy.expand(dot.exact + b.entries[0][j].exact)))
                    for i, row in enumerate(x.entries) for j, column in enumerate(columns))
    width = len(columns)
    entries = tuple(tuple(a.result for a in working[i:i + width]) for i in range(0, len(working), width))
    return Step(step_def.name, step_def.worded(), LINEAR, entries, working)


def linear_numeric(step_def, x, w, b, **_):
    """numpy's own arithmetic (the cross-check)."""
    return x @ w + b


def linear_tolerance(step_def, inputs, errors, u, spec):
    """A product's bound (each factor's error times the other's size) and the bias's own."""
    (x, w, _), (ex, ew, eb) = inputs, errors
    return ex @ np.abs(w) + np.abs(x) @ ew + ex @ ew + eb


def linear_shape(step_def, shapes):
    """X W's shape; W as tall as X is wide, and b one row as wide as W."""
    (n, d), (rows, width), bias = shapes
    x, w, b = step_def.inputs
    if rows != d:
        raise ValueError(f"{step_def.worded()}: {w} has {rows} rows but {x} has {d} columns")
    if bias != (1, width):
        raise ValueError(f"{step_def.worded()}: {b} must be 1 × {width}, a bias per column of {w}; "
                         f"it is {bias[0]} × {bias[1]}")
    return n, width


def linear_slips(step_def, sym, spec, before, whole=None):
    """The bias left off; on the layer after a ReLU, a ReLU applied again (ReLU after W_2)."""
    me, x, w, b = (sym(n) for n in (step_def.name, *step_def.inputs))
    values = {"me": me, "x": x, "w": w, "b": b}
    slips = [({"no_bias": True}, _("%(b)s is missing: %(me)s = %(x)s%(w)s + %(b)s, the bias added to "
                                   "every row") % values)]
    made = before(step_def.inputs[0])
    if made is not None and made.op == RELU:
        slips.append(({"relu": True}, _("this has a ReLU applied: the ReLU comes after the first "
                                        "layer only, %(me)s = %(x)s%(w)s + %(b)s as it is, negatives "
                                        "kept") % values))
    return slips


def linear_seconds(step, cost) -> int:
    """Each product term, the bias added and each entry written down."""
    terms = sum(len(line.pairs) for line in step.working)
    return terms * cost("product term") + step.shape[0] * step.shape[1] * (
        cost("product term") + cost("product entry"))


def linear_first(w) -> str:
    """The hint's first line: entry (1, 1) as its dot product plus the bias."""
    line = w.line
    return (f"{w.entry} = {products(line.pairs, w.text)} + {fmt.parenthesized(w.text(line.bias))} "
            f"{w.result(line.result)}.")


LINEAR_OP = ops.Op(
    LINEAR, linear_exact, linear_numeric, linear_tolerance,
    OpHint("row 1 of ${{ a }}$ dotted with column 1 of ${{ b }}$, plus entry 1 of the bias, gives the "
           "first entry; the others likewise, the bias row added to every row.", linear_first),
    linear_seconds, ops.working_templates(LINEAR), ops.script_file(LINEAR), shape=linear_shape,
    slips=linear_slips, sharp=True)


# relu: max(0, z)
def relu_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: each negative entry set to 0, the others kept."""
    zero = num(sympy.S.Zero)
    entries = tuple(tuple(zero if z.value < 0 else z for z in row) for row in inputs[0].entries)
    return Step(step_def.name, step_def.worded(), RELU, entries)


def relu_numeric(step_def, z, **_):
    """numpy's own arithmetic (the cross-check)."""
    return np.maximum(z, 0.0)


def relu_tolerance(step_def, inputs, errors, u, spec):
    """max(0, z) moves no further than z does, and not at all where z stays below 0."""
    highest = inputs[0] + errors[0]
    return np.where(highest < 0, 0.0, np.minimum(errors[0], np.maximum(highest, 0.0)))


def relu_slips(step_def, sym, spec, before, whole=None):
    """The negatives kept (no ReLU), or turned positive (|z| taken)."""
    me, z = sym(step_def.name), sym(step_def.inputs[0])
    values = {"me": me, "z": z}
    return [({"kept": True}, _("this is %(z)s itself: %(me)s = ReLU(%(z)s) sets every negative "
                               "entry to 0") % values),
            ({"absolute": True}, _("this turns the negatives positive: ReLU sets them to 0, "
                                   "%(me)s = max(0, %(z)s)") % values)]


RELU_OP = ops.Op(
    RELU, relu_exact, relu_numeric, relu_tolerance,
    OpHint("copy ${{ a }}$, writing 0 in place of every negative entry."),
    paper.copy_seconds, ops.DEFAULT_TEMPLATES, ops.script_file(RELU), slips=relu_slips,
    sharp=True)


def register() -> None:
    """Register the three ops (their templates are the built-in folder's)."""
    for op in (LAYER_NORM_OP, LINEAR_OP, RELU_OP):
        ops.register_op(op)
