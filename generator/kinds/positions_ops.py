"""The ops of the positions question (``positions``), each with every face (see ``maths.ops``):

- ``sinusoid``: the sinusoidal encoding of Vaswani et al. (2017), from a column of positions p and
  a row of frequencies w_i = base^(-2i/d): PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i);
- ``rope``: rotary embedding (Su et al., RoFormer), from a matrix, a column of positions m and a
  row of angles theta_i: each pair (x_{2i}, x_{2i+1}) of row m (interleaved pairs, as the paper)
  turned by the angle m theta_i, (x cos - y sin, x sin + y cos);
- ``alibi-bias``: ALiBi's bias (Press et al. 2022), from a column of positions and the head's
  slope m (one number): B_ij = -m |p_i - p_j|.

Each arithmetic is its own (the engine's exact sympy here, numpy's for the cross-check, the
page's JavaScript in templates/html/ops/<op>.js), as for the built-in ops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.rendering.hints import OpHint, products
from generator.rendering.language import gettext as _

SINUSOID = "sinusoid"
ROPE = "rope"
ALIBI_BIAS = "alibi-bias"


def _sin(a: Decimal) -> Decimal:
    return Decimal(math.sin(float(a)))


def _cos(a: Decimal) -> Decimal:
    return Decimal(math.cos(float(a)))


def _times(a: Decimal, b: Decimal) -> Decimal:
    return a * b


def _sum_of_products(*numbers: Decimal) -> Decimal:
    return sum((a * b for a, b in zip(numbers[::2], numbers[1::2])), Decimal(0))


# sinusoid: PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i)
@dataclass(frozen=True)
class SinusoidPair:
    """One position's pair of columns 2i, 2i+1: the angle p w_i, its sine and its cosine."""

    row: int
    pair: int
    position: Num
    frequency: Num
    angle: Num
    sin: Num
    cos: Num

    def calculator_lines(self):
        """What a calculator checks of the working (``formatting``): the angle, its sine and cosine."""
        return [((self.position, self.frequency), _times, self.angle),
                ((self.angle,), _sin, self.sin), ((self.angle,), _cos, self.cos)]


def sinusoid_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: sin and cos of each position times each frequency, kept exact (sin(1/100))."""
    positions, frequencies = inputs[0].entries, inputs[1].entries[0]
    working = []
    for r, (p,) in enumerate(positions):
        for i, w in enumerate(frequencies):
            angle = num(p.exact * w.exact)
            working.append(SinusoidPair(r, i, p, w, angle, num(sympy.sin(angle.exact)),
                                        num(sympy.cos(angle.exact))))
    width = len(frequencies)
    rows = tuple(tuple(n for pair in working[r * width:(r + 1) * width] for n in (pair.sin, pair.cos))
                 for r in range(len(positions)))
    return Step(step_def.name, step_def.worded(), SINUSOID, rows, tuple(working))


def sinusoid_numeric(step_def, positions, frequencies, **_):
    """numpy's own arithmetic (the cross-check): the angles' outer product, sin and cos interleaved."""
    angles = np.outer(positions[:, 0], frequencies[0])
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(len(angles), -1)


def sinusoid_tolerance(step_def, inputs, errors, u, spec):
    """An angle moves by p times its frequency's error, and by its own rounding as written; sin and
    cos move by at most as much."""
    (p, w), (ep, ew) = inputs, errors
    angle_error = np.outer(np.abs(p[:, 0]), ew[0]) + np.outer(ep[:, 0], np.abs(w[0])) + u
    return np.repeat(angle_error, 2, axis=1)


def sinusoid_shape(step_def, shapes):
    """A row a position, two columns a frequency; a ValueError unless a column and a row are given."""
    (n, one), (single, pairs) = shapes
    if one != 1 or single != 1:
        raise ValueError(f"{step_def.worded()}: the positions are one column, the frequencies one row")
    return n, 2 * pairs


def sinusoid_slips(step_def, sym, spec, before, whole=None):
    """The calculator in degrees, sin and cos swapped."""
    me = sym(step_def.name)
    return [({"degrees": True}, _("this is worked in degrees: the angles p·ω of %(me)s are radians "
                                  "(set the calculator to RAD)") % {"me": me}),
            ({"swapped": True}, _("sin and cos are swapped: %(me)s(p, 2i) = sin(p·ωᵢ) in the even "
                                  "columns (1, 3, ...), %(me)s(p, 2i+1) = cos(p·ωᵢ) beside it")
             % {"me": me})]


def sinusoid_seconds(step, cost) -> int:
    """Each angle a product; each sine and cosine keyed in and written down (at angle 0 copied:
    sin 0 = 0, cos 0 = 1, at position 0 in every version)."""
    return sum(2 * cost("copy entry") if line.angle.exact == 0 else
               cost("product term") + 2 * (cost("exponential") + cost("product entry"))
               for line in step.working)


def sinusoid_first(w) -> str:
    """The hint's first line: the first position's first pair (one relation, the angle's)."""
    line = w.line
    angle = f"{w.text(line.position)}·{w.text(line.frequency)} = {w.text(line.angle)}"
    return w._("angle %(angle)s; its sine %(sin)s and its cosine %(cos)s.", angle=angle,
               sin=w.text(line.sin), cos=w.text(line.cos))


SINUSOID_OP = ops.Op(
    SINUSOID, sinusoid_exact, sinusoid_numeric, sinusoid_tolerance,
    OpHint("row $p$ is position $p$: for each frequency $\\omega_i$ the angle $p\\,\\omega_i$ (in "
           "radians), then its sine in column $2i+1$ and its cosine in column $2i+2$.", sinusoid_first),
    sinusoid_seconds, ops.working_templates(SINUSOID), ops.script_file(SINUSOID),
    shape=sinusoid_shape, slips=sinusoid_slips)


# rope: each pair of row m turned by m theta_i
@dataclass(frozen=True)
class RopePair:
    """One pair (x, y) of row ``row`` turned by the angle m theta_i: cos, sin, and the turned pair."""

    row: int
    pair: int
    position: Num
    theta: Num
    angle: Num
    cos: Num
    sin: Num
    x: Num
    y: Num
    minus_y: Num
    x_out: Num
    y_out: Num

    def calculator_lines(self):
        """What a calculator checks: the angle, cos and sin, and each turned entry."""
        return [((self.position, self.theta), _times, self.angle),
                ((self.angle,), _cos, self.cos), ((self.angle,), _sin, self.sin),
                ((self.x, self.cos, self.minus_y, self.sin), _sum_of_products, self.x_out),
                ((self.x, self.sin, self.y, self.cos), _sum_of_products, self.y_out)]


def rope_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: (x cos a - y sin a, x sin a + y cos a) for each pair, a = m theta_i."""
    matrix, positions, thetas = inputs[0].entries, inputs[1].entries, inputs[2].entries[0]
    working = []
    for r, (row, (m,)) in enumerate(zip(matrix, positions)):
        for i, theta in enumerate(thetas):
            angle = num(m.exact * theta.exact)
            c, s = num(sympy.cos(angle.exact)), num(sympy.sin(angle.exact))
            x, y = row[2 * i], row[2 * i + 1]
            working.append(RopePair(r, i, m, theta, angle, c, s, x, y, num(-y.exact),
                                    num.dot(((x, c), (num(-y.exact), s))), num.dot(((x, s), (y, c)))))
    width = len(thetas)
    rows = tuple(tuple(n for pair in working[r * width:(r + 1) * width] for n in (pair.x_out, pair.y_out))
                 for r in range(len(matrix)))
    return Step(step_def.name, step_def.worded(), ROPE, rows, tuple(working))


def rope_numeric(step_def, matrix, positions, thetas, **_):
    """numpy's own arithmetic (the cross-check): each pair times its 2 x 2 rotation."""
    angles = np.outer(positions[:, 0], thetas[0])
    x, y = matrix[:, 0::2], matrix[:, 1::2]
    turned = np.empty_like(matrix)
    turned[:, 0::2] = x * np.cos(angles) - y * np.sin(angles)
    turned[:, 1::2] = x * np.sin(angles) + y * np.cos(angles)
    return turned


def rope_tolerance(step_def, inputs, errors, u, spec):
    """Each turned entry moves by its pair's errors times cos and sin, and by the pair's size times
    the error of cos and sin as written (the angle's error, and their own rounding)."""
    (matrix, p, theta), (e, ep, etheta) = inputs, errors
    angles = np.outer(p[:, 0], theta[0])
    trig = np.outer(np.abs(p[:, 0]), etheta[0]) + np.outer(ep[:, 0], np.abs(theta[0])) + 2 * u
    x, y, ex, ey = np.abs(matrix[:, 0::2]), np.abs(matrix[:, 1::2]), e[:, 0::2], e[:, 1::2]
    c, s = np.abs(np.cos(angles)), np.abs(np.sin(angles))
    bound = np.maximum(c, s) * (ex + ey) + (x + y + ex + ey) * trig
    return np.repeat(bound, 2, axis=1)


def rope_shape(step_def, shapes):
    """The matrix's shape; a ValueError unless a position a row and an angle a pair are given."""
    (n, d), (rows, one), (single, pairs) = shapes
    if rows != n or one != 1 or single != 1 or d != 2 * pairs:
        raise ValueError(f"{step_def.worded()}: a position a row and an angle a pair of columns "
                         f"({n} rows of {d} columns, {d // 2} angles)")
    return n, d


def rope_slips(step_def, sym, spec, before, whole=None):
    """Turned the wrong way (sin's sign flipped), the calculator in degrees, cos and sin swapped,
    and, of four columns or more, the pairs taken as the two halves (x_i, x_{i+d/2}) rather than
    interleaved."""
    me, of = sym(step_def.name), sym(step_def.inputs[0])
    values = {"me": me, "of": of}
    found = [({"direction": -1}, _("this turns each pair the wrong way: (%(of)s₂ᵢ₊₁, %(of)s₂ᵢ₊₂) "
                                   "becomes (x cos a − y sin a, x sin a + y cos a) in %(me)s, "
                                   "a = m·θᵢ") % values),
             ({"degrees": True}, _("this is worked in degrees: the angles m·θᵢ of %(me)s are radians "
                                   "(set the calculator to RAD)") % values),
             ({"swapped": True}, _("cos and sin are swapped: %(me)s turns each pair (x, y) to "
                                   "(x cos a − y sin a, x sin a + y cos a), a = m·θᵢ") % values)]
    if spec.d_k >= 4:
        found.append(({"halves": True}, _("this pairs column i with column i + d/2: %(me)s turns the "
                                          "neighbouring columns (1, 2), (3, 4), ... together") % values))
    return found


def rope_seconds(step, cost) -> int:
    """Each angle, its cos and sin keyed in, and four products for the turned pair (at angle 0 the
    pair copied, as position 0 is in every version)."""
    return sum(2 * cost("copy entry") if line.angle.exact == 0 else
               cost("product term") + 2 * cost("exponential") + 4 * cost("long product term")
               + 2 * cost("product entry") for line in step.working)


def rope_first(w) -> str:
    """The hint's first line: the first row's first pair turned (one relation, the angle's), its
    products written as the key's (a negative bracketed)."""
    line = w.line
    c, s = (w.text(n) for n in (line.cos, line.sin))
    turned = (products(((line.x, line.cos), (line.minus_y, line.sin)), w.text),
              products(((line.x, line.sin), (line.y, line.cos)), w.text))
    pair = w.language.list_separator.join
    angle = f"{w.text(line.position)}·{w.text(line.theta)} = {w.text(line.angle)}"
    return w._("angle %(angle)s, cos %(cos)s, sin %(sin)s; the pair turned, %(turned)s, is %(result)s.",
               angle=angle, cos=c, sin=s, turned="(" + pair(turned) + ")",
               result="(" + pair((w.text(line.x_out), w.text(line.y_out))) + ")")


ROPE_OP = ops.Op(
    ROPE, rope_exact, rope_numeric, rope_tolerance,
    OpHint("row $m$ is the token at position $m$: turn each pair of columns $(x, y)$ by the angle "
           "$m\\,\\theta_i$ (radians): $(x\\;\\cos - y\\;\\sin,\\; x\\;\\sin + y\\;\\cos)$.", rope_first),
    rope_seconds, ops.working_templates(ROPE), ops.script_file(ROPE), shape=rope_shape,
    slips=rope_slips)


# alibi-bias: B_ij = -m |p_i - p_j|
@dataclass(frozen=True)
class AlibiRow:
    """One query's row of the bias: the distances |p_i - p_j| and -m times each."""

    row: int
    slope: Num
    distances: tuple[Num, ...]
    result: tuple[Num, ...]

    def calculator_lines(self):
        """What a calculator checks: each -m |i - j|."""
        return [((self.slope, d), lambda m, d: -m * d, b) for d, b in zip(self.distances, self.result)]


def alibi_bias_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: -m |p_i - p_j| for every query i and key j."""
    positions, slope = [p for (p,) in inputs[0].entries], inputs[1].entries[0][0]
    working = []
    for i, p in enumerate(positions):
        distances = tuple(num(abs(p.exact - q.exact)) for q in positions)
        working.append(AlibiRow(i, slope, distances, tuple(num(-slope.exact * d.exact) for d in distances)))
    return Step(step_def.name, step_def.worded(), ALIBI_BIAS, tuple(w.result for w in working),
                tuple(working))


def alibi_bias_numeric(step_def, positions, slope, **_):
    """numpy's own arithmetic (the cross-check)."""
    p = positions[:, 0]
    return -slope[0, 0] * np.abs(p[:, None] - p[None, :])


def alibi_bias_tolerance(step_def, inputs, errors, u, spec):
    """The slope's error (as written) times each distance."""
    (p, m), (ep, em) = inputs, errors
    distance = np.abs(p[:, 0][:, None] - p[:, 0][None, :])
    return distance * em[0, 0] + abs(m[0, 0]) * (ep[:, 0][:, None] + ep[:, 0][None, :])


def alibi_bias_shape(step_def, shapes):
    """n x n from a column of n positions and one slope."""
    (n, one), slope = shapes
    if one != 1 or slope != (1, 1):
        raise ValueError(f"{step_def.worded()}: the positions are one column, the slope one number")
    return n, n


def alibi_bias_slips(step_def, sym, spec, before, whole=None):
    """The sign left off (a bonus for distance), or the slope left out."""
    me = sym(step_def.name)
    return [({"sign": 1}, _("the bias is a penalty: %(me)sᵢⱼ = −m·|i − j|, negative, so that far "
                            "keys lose weight") % {"me": me}),
            ({"unsloped": True}, _("the slope is missing: %(me)sᵢⱼ = −m·|i − j|, the distance times "
                                   "this head's slope m") % {"me": me})]


def alibi_bias_seconds(step, cost) -> int:
    """Each entry: a distance times the slope, written down."""
    return step.shape[0] * step.shape[1] * (cost("copy entry") + cost("product entry"))


def alibi_bias_first(w) -> str:
    """The hint's first line: the first query's row."""
    line = w.line
    listed = w.language.list_separator.join
    return w._("row 1: distances (%(distances)s), times −%(slope)s: (%(biases)s).",
               distances=listed(w.text(d) for d in line.distances), slope=w.text(line.slope),
               biases=listed(w.text(b) for b in line.result))


ALIBI_BIAS_OP = ops.Op(
    ALIBI_BIAS, alibi_bias_exact, alibi_bias_numeric, alibi_bias_tolerance,
    OpHint("entry $(i, j)$ is $-m\\,|i - j|$: $0$ on the diagonal, $-m$ next to it, and so on.",
           alibi_bias_first),
    alibi_bias_seconds, ops.working_templates(ALIBI_BIAS), ops.script_file(ALIBI_BIAS),
    shape=alibi_bias_shape, slips=alibi_bias_slips)


def register() -> None:
    """Register the three ops (their templates are the built-in folder's)."""
    for op in (SINUSOID_OP, ROPE_OP, ALIBI_BIAS_OP):
        ops.register_op(op)
