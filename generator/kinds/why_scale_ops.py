"""The op of the why-scale question (``why_scale``), with every face (see ``maths.ops``):

- ``spread``: the standard deviation of a score q·k, and of the scaled score q·k/√d_k, for a
  stated d_k, where q and k have independent entries of mean 0 and variance 1: Var(q·k) = d_k
  (each product q_i k_i has variance E[q_i²] E[k_i²] = 1, and the variances of independent terms
  add), so σ(q·k) = √d_k, and dividing by √d_k brings it back to 1.  From one given entry, d_k;
  the result is one row, (σ(q·k), σ(q·k/√d_k)).

Each arithmetic is its own (the engine's exact sympy here, numpy's for the cross-check, the
page's JavaScript in templates/html/ops/spread.js), as for the built-in ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.rendering import formatting as fmt
from generator.rendering.hints import OpHint
from generator.rendering.language import gettext as _

SPREAD = "spread"


@dataclass(frozen=True)
class Spread:
    """The spread worked for one d_k: Var(q·k) = d_k, σ(q·k) = √d_k, and the scaled score's
    σ = √d_k / √d_k = 1."""

    row: int
    col: int
    d_k: Num
    raw: Num  # σ(q·k) = √d_k
    scaled: Num  # σ(q·k / √d_k) = 1

    def calculator_lines(self):
        """What a calculator checks of the working (``formatting``): √d_k, and √d_k over itself."""
        return [((self.d_k,), lambda d: d.sqrt(), self.raw),
                ((self.raw, self.raw), lambda a, b: a / b, self.scaled)]


def spread_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: √d_k, and √d_k / √d_k = 1."""
    d_k = inputs[0].entries[0][0]
    raw = num(sympy.sqrt(d_k.exact))
    line = Spread(0, 0, d_k, raw, num(raw.exact / raw.exact))
    return Step(step_def.name, step_def.worded(), SPREAD, ((line.raw, line.scaled),), (line,))


def spread_numeric(step_def, stated, **_):
    """numpy's own arithmetic (the cross-check): the standard deviation of a sum of d_k
    independent unit-variance terms, before and after dividing by √d_k."""
    variance = float(stated[0, 0])
    return np.array([[np.sqrt(variance), np.sqrt(variance / variance)]])


def spread_tolerance(step_def, inputs, errors, u, spec):
    """d_k is stated exactly: nothing carries; the student's own rounding is marking's half unit."""
    return np.zeros((1, 2))


def spread_shape(step_def, shapes):
    """One row of two, from one stated d_k."""
    if shapes[0] != (1, 1):
        raise ValueError(f"{step_def.worded()}: d_k is one number")
    return 1, 2


def spread_slips(step_def, sym, spec, before, whole=None):
    """The variance written for the standard deviation, or the scaled score's σ divided by d_k."""
    return [({"variance": True}, _("d_k is the variance of q·k; its standard deviation is √d_k")),
            ({"over_dk": True}, _("dividing q·k by √d_k divides its standard deviation by √d_k: "
                                  "√d_k / √d_k = 1"))]


def spread_seconds(step, cost) -> int:
    """A square root keyed in, and a quotient written down."""
    return cost("exponential") + cost("quotient") + 2 * cost("product entry")


def spread_first(w) -> str:
    """The hint's first line: the variance, and its square root (in words: the page's hint lines
    are arithmetic a calculator checks, and a root is not among it)."""
    line = w.line
    exact = fmt.is_exact_at(line.raw, w.decimals)
    root = w.language.number(fmt.decimal_text(line.raw, w.decimals))
    if exact:
        return w._("Var(q·k) = %(variance)s; σ(q·k) is its square root, %(root)s.",
                   variance=line.d_k.exact, root=root)
    return w._("Var(q·k) = %(variance)s; σ(q·k) is its square root, about %(root)s.",
               variance=line.d_k.exact, root=root)


SPREAD_OP = ops.Op(
    SPREAD, spread_exact, spread_numeric, spread_tolerance,
    OpHint("the variances of the d_k independent products q_i k_i (each 1) add up to d_k: take "
           "its square root; then divide by √d_k.", spread_first),
    spread_seconds, ops.working_templates(SPREAD), ops.script_file(SPREAD), shape=spread_shape,
    slips=spread_slips)


def register() -> None:
    """Register the op (its templates are the built-in folder's)."""
    ops.register_op(SPREAD_OP)
