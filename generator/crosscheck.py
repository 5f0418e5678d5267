"""An independent second implementation, in plain float64 numpy, to check the engine.

It shares no code with the engine: it takes the given matrices as floats, runs
the textbook pipeline with numpy, and ``cross_check`` compares every step of a
solution against it.  A difference beyond ``TOLERANCE`` raises; it never passes
silently.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-9


class CrossCheckError(AssertionError):
    """The exact engine and the numpy pipeline disagree: a bug, never the user's fault."""


def attention_steps(given: dict[str, np.ndarray], mask: str = "none",
                    scale: float | None = None, mistake: str | None = None) -> dict[str, np.ndarray]:
    """Every step of scaled dot-product attention from X and W_* (or from Q, K, V),
    optionally with one of the engine's common mistakes."""
    steps = dict(given)
    if "X" in given:
        for name in "QKV":
            steps[name] = given["X"] @ given[f"W_{name}"]
    q, k, v = steps["Q"], steps["K"], steps["V"]
    steps["scores"] = q @ (k if mistake == "k-not-transposed" else k.T)
    factor = {"no-scaling": 1.0, "dk-not-sqrt": 1.0 / q.shape[1]}.get(
        mistake, 1.0 / np.sqrt(q.shape[1]) if scale is None else scale)
    steps["scaled"] = steps["scores"] * factor
    logits = steps["scaled"]
    if mask == "causal":
        above_diagonal = np.triu(np.ones(logits.shape, dtype=bool), k=1)
        logits = np.where(above_diagonal, -np.inf, logits)
        steps["masked"] = logits
    axis = 0 if mistake == "column-softmax" else 1
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    steps["weights"] = shifted / shifted.sum(axis=axis, keepdims=True)
    weights = steps["weights"]
    steps["output"] = {"v-times-weights": lambda: v @ weights,
                       "weights-times-k": lambda: weights @ k}.get(mistake, lambda: weights @ v)()
    return steps


def cross_check(step_values: dict[str, np.ndarray], mask: str, scale: float | None,
                mistake: str | None = None) -> None:
    """Raise CrossCheckError unless every step equals the numpy pipeline's within TOLERANCE."""
    given_names = ("X", "W_Q", "W_K", "W_V") if "X" in step_values else ("Q", "K", "V")
    expected = attention_steps({n: step_values[n] for n in given_names}, mask, scale, mistake)
    if scale == 1 and mistake not in ("no-scaling", "dk-not-sqrt"):
        del expected["scaled"]  # unscaled attention has no scaling step
    if set(expected) != set(step_values):
        raise CrossCheckError(f"steps differ: {sorted(step_values)} vs {sorted(expected)}")
    for name, reference in expected.items():
        actual = step_values[name]
        if actual.shape != reference.shape:
            raise CrossCheckError(f"{name}: shape {actual.shape} but numpy gives {reference.shape}")
        if not np.allclose(actual, reference, rtol=TOLERANCE, atol=TOLERANCE, equal_nan=False):
            worst = np.nanmax(np.abs(np.where(np.isinf(reference), 0, actual - reference)))
            raise CrossCheckError(f"{name}: engine and numpy differ by {worst:.3g}")


def check_product(left: np.ndarray, right: np.ndarray, product: np.ndarray) -> None:
    """Raise CrossCheckError unless ``product`` is left @ right (the heads' output projection)."""
    if not np.allclose(left @ right, product, rtol=TOLERANCE, atol=TOLERANCE):
        raise CrossCheckError("projected: engine and numpy differ")
