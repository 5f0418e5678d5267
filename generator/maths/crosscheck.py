"""An independent second arithmetic, in plain float64 numpy, to check the engine.

It shares no arithmetic with the engine: it takes the given matrices as floats and
runs the same plan of steps (``steps.plan``: which steps, from which inputs) with
numpy's own operations (each op's ``numeric`` face, defined here); ``cross_check``
compares every step of a solution against it.  A difference beyond ``TOLERANCE``
raises; it never passes silently.
"""

from __future__ import annotations

import numpy as np

from generator.maths import ops
from generator.maths.steps import StepDef, plan

TOLERANCE = 1e-9


class CrossCheckError(AssertionError):
    """The exact engine and the numpy pipeline disagree: a bug, never the user's fault."""


def _softmax(logits: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _factor(step: StepDef, scale: float | None, d_k: int) -> float:
    return {"one": 1.0, "one-over-dk": 1.0 / d_k}.get(
        step.factor, 1.0 / np.sqrt(d_k) if scale is None else scale)


# Each op's numeric face (see ops, builtin_ops): numpy's own arithmetic, sharing none with the
# engine's: (step_def, *input arrays, scale, d_k) -> the step's values.
def numpy_product(step, a, b, **_):
    """The product's numeric face: a @ b, either side transposed as the step says."""
    return (a.T if step.transpose_left else a) @ (b.T if step.transpose else b)


def numpy_scaling(step, a, scale, d_k):
    """The scaling's numeric face: a times the step's factor (1/sqrt(d_k), the spec's scale, 1 or
    1/d_k)."""
    return a * _factor(step, scale, d_k)


def numpy_masking(step, a, visible=None, **_):
    """The mask's numeric face: -inf wherever ``visible`` is False (without one, the causal
    mask: above the diagonal, where key j comes after query i)."""
    if visible is None:
        visible = ~np.triu(np.ones(a.shape, dtype=bool), k=1)
    return np.where(np.asarray(visible, dtype=bool), a, -np.inf)


def numpy_softmax(step, a, **_):
    """The softmax's numeric face: along each row, or down each column where the step says so."""
    return _softmax(a, axis=0 if step.by_columns else 1)


def numpy_blend(step, a, b, **_):
    """The blend's numeric face: the weights times the values, a @ b."""
    return a @ b


def numpy_add(step, *terms, **_):
    """The sum's numeric face: the terms added entry by entry."""
    return sum(terms[1:], terms[0])


def numpy_softmax_backward(step, a, g, **_):
    """The softmax backward pass's numeric face: a_ij (g_ij - sum_k a_ik g_ik)."""
    return a * (g - (a * g).sum(axis=1, keepdims=True))


def numpy_jacobian(step, a, **_):
    """The softmax Jacobian's numeric face, of a one-row a: diag(a) - a^T a."""
    return np.diag(a[0]) - np.outer(a[0], a[0])


def numpy_concat(step, *parts, **_):
    """The heads' concatenation's numeric face: the parts side by side."""
    return np.hstack(parts)


def run_plan(steps: tuple[StepDef, ...], given: dict[str, np.ndarray], scale: float | None,
             d_k: int, visible=None) -> dict[str, np.ndarray]:
    """Every step of ``steps`` in float64, from the given matrices; the mask's step hides what
    ``visible`` hides (None: the causal mask)."""
    values = dict(given)
    for step in steps:
        if step.name not in values:
            mask = {"visible": visible} if step.op == "masking" and visible is not None else {}
            values[step.name] = ops.op(step.op).numeric(step, *(values[i] for i in step.inputs),
                                                        scale=scale, d_k=d_k, **mask)
    return values


def attention_steps(given: dict[str, np.ndarray], mask="none",
                    scale: float | None = None, mistake: str | None = None) -> dict[str, np.ndarray]:
    """Every step of scaled dot-product attention from X and W_* (or from Q, K, V),
    optionally with one of the common mistakes; the scaled scores always (times 1 at scale 1).
    ``mask`` is "none", "causal" or the mask itself (n_q x n_k, True where a query may attend)."""
    named = isinstance(mask, str)
    steps = plan(tuple(given), masked=mask != "none" if named else True, mistake=mistake)
    d_k = (given["Q"] if "Q" in given else given["W_Q"]).shape[1]
    return run_plan(steps, given, scale, d_k, None if named else mask)


def cross_check(step_values: dict[str, np.ndarray], steps: tuple[StepDef, ...],
                scale: float | None, d_k: int, visible=None) -> None:
    """Raise CrossCheckError unless every step equals numpy's, run on the same plan,
    within TOLERANCE (the mask's step hiding what ``visible`` hides; None: the causal mask)."""
    given = {step.name: step_values[step.name] for step in steps if step.is_given}
    expected = run_plan(steps, given, scale, d_k, visible)
    if set(expected) != set(step_values):
        raise CrossCheckError(f"steps differ: {sorted(step_values)} vs {sorted(expected)}")
    for name, reference in expected.items():
        actual = step_values[name]
        if actual.shape != reference.shape:
            raise CrossCheckError(f"{name}: shape {actual.shape} but numpy gives {reference.shape}")
        if not np.allclose(actual, reference, rtol=TOLERANCE, atol=TOLERANCE, equal_nan=False):
            worst = np.nanmax(np.abs(np.where(np.isinf(reference), 0, actual - reference)))
            raise CrossCheckError(f"{name}: engine and numpy differ by {worst:.3g}")
