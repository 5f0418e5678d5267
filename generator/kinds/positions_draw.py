"""Drawn problems of the positions question: per encoding and difficulty its own sizes, matrices
and choices (RoPE's angle, ALiBi's slope), checked in float64 before they are kept."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from generator.kinds.positions_plan import NAME, known_steps, plan_of, read_angle
from generator.kinds.questions import TIE
from generator.maths.crosscheck import run_plan
from generator.maths.engine import Evaluator

# Per encoding and difficulty: tokens, d_model, d_k, d_v, X's entries ("integer" or "decimal"), and
# the encoding's own choice (RoPE's angles as multiples of pi, or the paper's; ALiBi's slopes).
SIZES = {
    ("sinusoidal", "easy"): (2, 2, 2, 2, "integer"), ("sinusoidal", "medium"): (2, 4, 2, 2, "integer"),
    ("sinusoidal", "hard"): (2, 4, 2, 2, "decimal"),
    ("rope", "easy"): (2, 2, 2, 2, "integer"), ("rope", "medium"): (2, 2, 2, 2, "integer"),
    ("rope", "hard"): (2, 2, 2, 2, "decimal"),
    ("alibi", "easy"): (3, 2, 2, 2, "integer"), ("alibi", "medium"): (3, 2, 2, 2, "integer"),
    ("alibi", "hard"): (3, 2, 2, 2, "decimal"),
}
ROPE_ANGLES = {"easy": ("pi/2",), "medium": ("pi/6", "pi/4", "pi/3"), "hard": (None,)}  # None: the paper's
SLOPES = {"easy": ("1/2",), "medium": ("1/2", "1/4"), "hard": ("1/2", "1/4", "1/8")}
MASK_OF = {"sinusoidal": "none", "rope": "none", "alibi": "causal"}


def draw_options(options):
    """A problem under no mask (sinusoidal, RoPE) or the causal one (ALiBi): the candidate's own mask
    picks which, unless a form keeps it."""
    from generator.kinds.sampling import PRESETS  # the sampler reads this registry: not at import

    keep = options.mask in ("none", "causal") and options.mask != PRESETS[options.difficulty].mask
    # draw_params draws its own matrices; the candidate's width only tells it the difficulty
    return replace(options, mask=options.mask if keep else "none-or-causal", tokens=(3, 3),
                   d_model=CANDIDATE_WIDTH[options.difficulty], d_k=2, d_v=2, embeddings="integer",
                   weights="integer")


def draw_params(rng, candidate, decimals: int, encoding: str | None = None) -> dict | None:
    """The encoding (a set's in turn, ``in_turn``, or a form's; else the candidate's mask tells
    ALiBi's causal one apart), its own matrices and choices, drawn and checked: hand-sized numbers,
    no degenerate rows, weights apart."""
    if encoding is None:
        encoding = "alibi" if candidate.mask == "causal" else ("sinusoidal", "rope")[int(rng.integers(2))]
    if MASK_OF[encoding] != candidate.mask:
        return None
    difficulty = _difficulty(candidate)
    for _ in range(TRIES):  # so that each encoding is drawn about as often as it is picked
        drawn = _drawn(rng, encoding, difficulty)
        if worthy(encoding, drawn["matrices"], drawn, candidate.mask, decimals):
            return drawn
    return None


TRIES = 40
CANDIDATE_WIDTH = {"easy": 2, "medium": 3, "hard": 4}


def _drawn(rng, encoding: str, difficulty: str) -> dict:
    """One draw of the encoding's matrices and its own choices."""
    tokens, d_model, d_k, d_v, entries = SIZES[(encoding, difficulty)]
    x = _entries(rng, entries, tokens, d_model)
    weights = [rng.choice([-1, 0, 1], p=[0.25, 0.35, 0.4], size=(d_model, d)).astype(float)
               for d in (d_k, d_k, d_v)]
    params: dict = {"encoding": encoding}
    if encoding == "rope":
        angle = ROPE_ANGLES[difficulty][int(rng.integers(len(ROPE_ANGLES[difficulty])))]
        if angle is not None:
            params["theta"] = (read_angle(angle),)
        params["shift"] = int(rng.integers(1, 4))
    if encoding == "alibi":
        params["slope"] = sympy.Rational(SLOPES[difficulty][int(rng.integers(len(SLOPES[difficulty])))])
    return {**params, "matrices": {"X": _exact(x), **{f"W_{n}": _exact(w) for n, w in zip("QKV", weights)}}}


def _difficulty(candidate) -> str:
    """The difficulty the candidate was drawn at, told by its width (``draw_options``: the sampler
    hands draw_params no options)."""
    width = candidate.x.shape[1]
    return next((d for d, w in CANDIDATE_WIDTH.items() if w == width), "medium")


def _entries(rng, kind: str, rows: int, columns: int) -> np.ndarray:
    if kind == "integer":
        return rng.choice([-1, 0, 1, 2], p=[0.2, 0.3, 0.35, 0.15], size=(rows, columns)).astype(float)
    return np.round(rng.uniform(-1.5, 1.5, size=(rows, columns)), 1)


def _exact(matrix):
    return tuple(tuple(sympy.Rational(int(round(v * 100)), 100) for v in row) for row in matrix)


def worthy(encoding: str, matrices: dict, params: dict, mask: str, decimals: int) -> bool:
    """The problem's numbers, in float64: no zero row or column in what the student writes, no two
    queries alike, scaled scores small enough to exponentiate by hand, weights readable and apart."""
    from generator.maths.spec import ProblemSpec

    params = {key: value for key, value in params.items() if key != "matrices"}
    spec = ProblemSpec("draw", matrices, mask=mask, question=NAME, params=params)
    plan = plan_of(spec)
    given = {name: step.numeric for name, step in known_steps(spec, Evaluator()).items()}
    given.update({name: np.array(m, dtype=float) for name, m in matrices.items()})
    if not _rows_apart(given["X"]):
        return False
    if encoding == "rope":
        return _worthy_rope(spec, plan, given, decimals)
    values = run_plan(plan, given, None, spec.d_k, spec.visible if mask != "none" else None)
    return _worthy_values(values, plan, decimals) and (
        encoding != "sinusoidal" or _permutation_shows(spec, values, given, plan, decimals))


def _worthy_rope(spec, plan, given, decimals: int) -> bool:
    values = run_plan(plan[:-7], given, None, spec.d_k)
    return _worthy_values(values, plan[:-7], decimals)


def _worthy_values(values: dict, plan, decimals: int) -> bool:
    for step in plan:
        if step.is_given or step.name not in values:
            continue
        m = np.where(np.isinf(values[step.name]), 1.0, values[step.name])
        if (np.abs(m) < 1e-9).all(axis=1).any() or (np.abs(m) < 1e-9).all(axis=0).any():
            return False
        if step.name in ("Q", "K", "scores", "scaled", "weights", "rope_scores", "Q_rot", "K_rot"):
            if len({tuple(r) for r in np.round(m, 6)}) < len(m):
                return False
    scaled = values.get("scaled")
    weights = values["weights"]
    seen = weights[weights > 0]
    tops = np.sort(weights, axis=1)
    return (scaled is None or np.abs(scaled[np.isfinite(scaled)]).max() <= 3.5) and seen.min() >= 0.02 and (
        tops[:, -1] - tops[:, -2] > TIE).all() and np.abs(values["output"]).max() <= 9


def _rows_apart(x: np.ndarray) -> bool:
    """No zero row in X and no two rows alike (the tokens' swap would change nothing)."""
    return not (np.abs(x) < 1e-9).all(axis=1).any() and len({tuple(r) for r in x}) == len(x)


def _permutation_shows(spec, values, given, plan, decimals: int) -> bool:
    """What the permutation part's right answer says holds visibly: with tokens 1 and 2 swapped the
    weights A' are well apart both from what the swap alone would give (PAP^T) and from A (the
    scores change), in their first row, the one the key shows."""
    order = [1, 0, *range(2, len(given["X"]))]
    other = run_plan(plan, dict(given, X=given["X"][order]), None, spec.d_k)["weights"]
    weights, apart = values["weights"], 10 * 10.0 ** -decimals
    permuted = weights[order][:, order]
    return all(np.abs(other[0] - m[0]).max() > apart for m in (permuted, weights))


# Prose reads the solution's steps by name (the positions, frequencies, angles, slope): g.pos, ...
