"""How far an answer may be from the key: one tolerance rule for every format that marks.

A student who works by hand rounds: each matrix to the shown decimals, each
exponential, the divisor sqrt(d_k).  An answer is right when it is within what that
rounding can move it.  For every entry of every step the student works, this module
bounds that movement by carrying half a unit of the last shown place through the
step's op (first-order, from the op's partial derivatives at the key's values, plus
the product of two errors where an op multiplies them):

- ``chain``: the student rounded every earlier step too and worked on from those
  values (Moodle, whose gaps know nothing of each other; the practice page where
  an earlier value is not the student's own);
- ``local``: the inputs are exactly what the student typed, as on the practice page
  when the earlier grids are the student's own; only this step's own rounding counts.

Each bound then gets a margin (``MARGIN``) for what the first order leaves out.  A
real mistake moves an answer by far more than rounding does, and the tests hold both
sides: a rounding student is never marked wrong, real mistakes still are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MARGIN = 1.25  # over the first-order bound: the second order and float noise
FLOOR = 1e-9  # an exact key still allows float noise


@dataclass(frozen=True)
class Tolerance:
    chain: np.ndarray
    local: np.ndarray


def half_unit(decimals: int) -> float:
    return 0.5 * 10.0**-decimals


class Tolerances:
    """The tolerances of every step a question's student works (its ``worked`` solutions)."""

    def __init__(self, question, decimals: int):
        self.u = half_unit(decimals)
        self._by_step: dict[int, Tolerance] = {}
        by_name: dict[str, Tolerance] = {}
        for prefix, solution in question.worked:
            values = {step.name: step.numeric for step in solution.steps}
            chain: dict[str, np.ndarray] = {}
            for step_def, step in zip(solution.plan, solution.steps):
                name = prefix + step.name if "." not in step.name else step.name
                if step_def.is_given:
                    known = by_name.get(name)
                    chain[step.name] = known.chain if known else _given_error(
                        step.name, values[step.name], question.spec, self.u)
                    read = _bounded(chain[step.name])
                    tolerance = Tolerance(read, read)
                else:
                    inputs = [values[i] for i in step_def.inputs]
                    spec = solution.spec
                    own = propagate(step_def, inputs, [np.zeros_like(x) for x in inputs], self.u, spec)
                    carried = propagate(step_def, inputs, [chain[i] for i in step_def.inputs], self.u, spec)
                    chain[step.name] = _bounded(carried + self.u)
                    tolerance = Tolerance(chain[step.name], _bounded(own + self.u))
                by_name[name] = tolerance
                self._by_step.setdefault(id(step), tolerance)

    def of(self, step) -> Tolerance:
        """A worked step's tolerances; any other matrix a part asks for (the weights after a
        swap) is read off a shown, rounded one: half a unit, and the margin."""
        if id(step) in self._by_step:
            return self._by_step[id(step)]
        flat = _bounded(np.full(step.numeric.shape, self.u))
        return Tolerance(flat, flat)


def _given_error(name: str, value: np.ndarray, spec, u: float) -> np.ndarray:
    """A matrix of the problem's spec is exact; any other given (a row of scores, a head's Q,
    which its own solution takes as given) was read from a shown, rounded matrix, unless it has
    no more places than are shown."""
    if name in spec.matrices:
        return np.zeros_like(value)
    return np.where(_shown_exactly(value, u), 0.0, u)


def _shown_exactly(value, u: float):
    """Whether a value has no more decimals than are shown (half a unit ``u``)."""
    return np.abs(np.round(value / (2 * u)) * 2 * u - value) < 1e-12


def propagate(step, inputs: list[np.ndarray], errors: list[np.ndarray], u: float, spec) -> np.ndarray:
    """How far the step's result can move when each input moves by up to its error, and the
    student rounds what the step itself writes down (exponentials, sqrt(d_k))."""
    return RULES[step.op](step, inputs, errors, u, spec)


def _product(step, inputs, errors, u, spec):
    (a, b), (ea, eb) = inputs, errors
    if step.transpose_left:
        a, ea = a.T, ea.T
    if step.transpose:
        b, eb = b.T, eb.T
    return ea @ np.abs(b) + np.abs(a) @ eb + ea @ eb


def _scaling(step, inputs, errors, u, spec):
    (x,), (e,) = inputs, errors
    if step.factor == "one":
        return e
    if step.factor == "one-over-dk":
        return e / spec.d_k
    if spec.scale is None:  # x / sqrt(d_k), with sqrt(d_k) written to the shown places
        divisor = np.sqrt(spec.d_k)
        written = 0.0 if _shown_exactly(divisor, u) else u
        return e / divisor + np.abs(x) * written / divisor**2
    factor = float(spec.scale)
    written = 0.0 if _shown_exactly(factor, u) else u
    return abs(factor) * e + np.abs(x) * written


def _masking(step, inputs, errors, u, spec):
    return np.where(np.isinf(inputs[0]) | np.triu(np.ones_like(errors[0], dtype=bool), k=1),
                    0.0, errors[0])


def _softmax(step, inputs, errors, u, spec):
    """d w_j / d z_k = w_j (delta_jk - w_k); each exponential written to the shown places
    moves w_j by (delta_jk - w_j) / sum of the exponentials."""
    z, e = inputs[0], errors[0]
    if step.by_columns:
        return _softmax_rows(z.T, e.T, u).T
    return _softmax_rows(z, e, u)


def _softmax_rows(z: np.ndarray, e: np.ndarray, u: float) -> np.ndarray:
    bounds = np.zeros_like(z)
    for i, (row, row_error) in enumerate(zip(z, e)):
        seen = np.isfinite(row)
        exponentials = np.where(seen, np.exp(np.where(seen, row, 0.0)), 0.0)
        total = exponentials.sum()
        w = exponentials / total
        jacobian = np.abs(np.diag(w) - np.outer(w, w))
        from_inputs = jacobian @ np.where(seen, row_error, 0.0)
        written = np.abs(np.eye(len(row)) - w[:, None]) @ (seen * u) / total
        bounds[i] = np.where(seen, from_inputs + written, 0.0)
    return bounds


def _add(step, inputs, errors, u, spec):
    return sum(errors[1:], errors[0])


def _softmax_backward(step, inputs, errors, u, spec):
    """r_ij = a_ij (g_ij - s_i), s_i = sum_k a_ik g_ik: each input's error times its partial
    derivative's size, and the row's dot product s_i as the student writes it."""
    (a, g), (ea, eg) = inputs, errors
    s = (a * g).sum(axis=1, keepdims=True)
    es = (np.abs(g) * ea + np.abs(a) * eg).sum(axis=1, keepdims=True) + u
    return np.abs(g - s) * ea + np.abs(a) * (eg + es)


def _concat(step, inputs, errors, u, spec):
    return np.hstack(errors)


def _jacobian(step, inputs, errors, u, spec):
    """J_ij = a_i (delta_ij - a_j): both factors' errors, and their product."""
    a, e = inputs[0][0], errors[0][0]
    delta = np.eye(len(a))
    return (e[:, None] * np.abs(delta - a[None, :]) + np.abs(a)[:, None] * e[None, :]
            + e[:, None] * e[None, :])


RULES = {"product": _product, "blend": _product, "scaling": _scaling, "masking": _masking,
         "softmax": _softmax, "add": _add, "concat": _concat,
         "softmax-backward": _softmax_backward, "jacobian": _jacobian}


def _bounded(error: np.ndarray) -> np.ndarray:
    return np.maximum(error * MARGIN, FLOOR)
