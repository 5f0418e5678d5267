"""What makes a drawn problem worth putting in an exam, checked in float64 before any exact work.

A candidate is rejected when a question would be trivial or unpleasant by hand:
  - a zero row in X, Q, K or V, or two equal rows in one of them or in the raw
    scores (two tokens alike, or a row of the working that merely repeats another);
  - a zero column in Q, K or V, or a zero row or column in the raw scores or the output
    (a dimension that carries nothing: a whole column of the working is 0), in each head
    too, and in a two-head question's concatenation C and projection Y;
  - two equal rows in the weights or the output (scores a constant apart soften to the
    same row), in each head, C or Y: each row is a query's own work, and a copy halves it;
  - at easy and medium, an entry of Q, K or V beyond ``QKV_BOUND`` or a raw score
    beyond ``SCORE_BOUND`` (both integers there by construction);
  - a scaled score beyond ``SCALED_BOUND`` (e^6 ≈ 403 is as far as a calculator
    exercise should go);
  - a softmax row (with two or more unmasked keys) whose weights are all equal, or
    with a weight that would show as 0.0000 or 1.0000 at the shown decimals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from generator.maths import masks
from generator.maths.crosscheck import attention_steps
from generator.maths.spec import MISTAKES, mistakes_for_shapes

QKV_BOUND = {"easy": 3, "medium": 3}
TOKENS = ("X", "X_dec", "X_enc")  # the embeddings a candidate gives: one sequence's, or two
SCORE_BOUND = {"easy": 6, "medium": 8}
SCALED_BOUND = 6.0


@dataclass(frozen=True, eq=False)
class Candidate:
    """A drawn problem before it is solved exactly, as floats: the embeddings, the weights, the
    mask, and where the type has them, W_O and the scale."""

    x: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    mask: str
    w_o: np.ndarray | None = None  # the output projection of a two-head question
    scale: float | None = None  # the scores' factor, when not 1/sqrt(d_k)
    x_enc: np.ndarray | None = None  # cross-attention: the encoder's tokens (x is the decoder's)
    valid: int | tuple[int, ...] | None = None  # a padding mask's valid lengths (masks)
    window: int | None = None  # a sliding-window mask's width
    heads: tuple[int, ...] = ()  # the heads it is drawn for ((h,), or (H_q, H_kv)); () for one
    difficulty: str = ""  # the difficulty it is drawn at (a type drawing its own numbers reads it)

    @property
    def masking(self):
        """The mask as ``attention_steps`` takes it: "none", or n_q x n_k booleans (True: may attend)."""
        if self.mask == "none":
            return "none"
        keys = len(self.x if self.x_enc is None else self.x_enc)
        return np.array(masks.visible(self.mask, len(self.x), keys, self.valid, self.window), dtype=bool)

    @property
    def given(self) -> dict[str, np.ndarray]:
        """The given matrices by the names a spec gives them (X, W_Q, W_K, W_V; in
        cross-attention X_dec and X_enc for X)."""
        tokens = {"X": self.x} if self.x_enc is None else {"X_dec": self.x, "X_enc": self.x_enc}
        return {**tokens, "W_Q": self.w_q, "W_K": self.w_k, "W_V": self.w_v}

    @property
    def identity(self) -> tuple:
        """Equal for two problems that differ only in the order of their tokens."""
        tokens = tuple(sorted(tuple(row) for row in self.x.tolist()))
        encoder = () if self.x_enc is None else (tuple(sorted(tuple(r) for r in self.x_enc.tolist())),)
        return (tokens, *encoder, self.w_q.tobytes(), self.w_k.tobytes(), self.w_v.tobytes(), self.mask,
                self.valid, self.window)


def is_exam_worthy(candidate: Candidate, difficulty: str, decimals: int) -> bool:
    """Whether a candidate makes an exam problem at this difficulty: no two tokens, queries, keys or
    values alike, no zero row or column in the steps worked, numbers within the difficulty's
    bounds, and no weight that shows as 0 or 1 or row of equal weights."""
    if not _mask_is_worthy(candidate):
        return False
    steps = attention_steps(candidate.given, candidate.masking, candidate.scale)
    return (all(_distinct_nonzero_rows(steps[name]) for name in (*TOKENS, "Q", "K", "V") if name in steps)
            and all(_no_zero_lines(steps[name]) for name in ("Q", "K", "V", "output"))
            and _no_zero_lines(steps["scores"])
            and all(_distinct_rows(steps[name]) for name in ("scores", "weights", "output"))
            and _within_bounds(steps, difficulty)
            and _readable_weights(steps["weights"], candidate.masking, decimals))


def _mask_is_worthy(candidate: Candidate) -> bool:
    """Every query sees a key, and a padding or window mask hides one the causal mask (or none)
    would show: it must teach something of its own."""
    if candidate.mask == "none":
        return True
    mask = tuple(tuple(bool(x) for x in row) for row in candidate.masking.tolist())
    return masks.blind_query(mask) is None and masks.hides_something(candidate.mask, mask)


def visible_mistakes(candidate: Candidate, decimals: int) -> list[str]:
    """The mistakes whose wrong step differs from the right one at the shown decimals
    (a column softmax of a symmetric score matrix, say, would change nothing)."""
    right = attention_steps(candidate.given, scale=candidate.scale)
    n = len(candidate.x)
    visible = []
    for mistake in mistakes_for_shapes(n, n, candidate.w_q.shape[1], candidate.w_v.shape[1]):
        if candidate.scale is not None and MISTAKES[mistake] == "scaled":
            continue  # a problem with its own scale has no "forgot sqrt(d_k)" to find
        step = MISTAKES[mistake]
        wrong = attention_steps(candidate.given, scale=candidate.scale, mistake=mistake)[step]
        if wrong.shape != right[step].shape or np.any(
                np.round(wrong, decimals) != np.round(right[step], decimals)):
            visible.append(mistake)
    return visible


def heads_are_readable(candidate: Candidate, heads: int, decimals: int) -> bool:
    """Each head's own softmax rows pass the same test as a single head's."""
    whole = attention_steps(candidate.given, scale=candidate.scale)
    if candidate.w_o is not None and not _no_zero_rows(candidate.w_o):
        return False
    outputs = []
    for h in range(heads):
        part = {name: np.hsplit(whole[name], heads)[h] for name in "QKV"}
        steps = attention_steps(part, scale=candidate.scale)
        if (not all(_distinct_nonzero_rows(part[name]) for name in "QKV")
                or not all(_worked(steps[name]) for name in ("scores", "weights", "output"))
                or np.abs(steps["scaled"]).max() > SCALED_BOUND
                or not _readable_weights(steps["weights"], "none", decimals)):
            return False
        outputs.append(steps["output"])
    concat = np.hstack(outputs)
    return candidate.w_o is None or (_worked(concat) and _worked(concat @ candidate.w_o))


def grouped_are_readable(given: dict[str, np.ndarray], w_o: np.ndarray, heads: int, kv_heads: int,
                         scale: float | None, decimals: int, worked: tuple[int, ...] = ()) -> bool:
    """Grouped-query attention (X and W_Q, W_K, W_V, K and V narrower than Q): each query head
    worked (from 0; every one where ``worked`` is empty: the others' outputs are given), with
    the key/value head its group shares, passes a single head's tests, as do their K_g and V_g;
    W_O has no zero row; C and Y are worked."""
    whole = {name: given["X"] @ given[f"W_{name}"] for name in "QKV"}
    keys, values = np.hsplit(whole["K"], kv_heads), np.hsplit(whole["V"], kv_heads)
    if not _no_zero_rows(w_o):
        return False
    outputs = []
    for h, query in enumerate(np.hsplit(whole["Q"], heads)):
        kv = h // (heads // kv_heads)
        steps = attention_steps({"Q": query, "K": keys[kv], "V": values[kv]}, scale=scale)
        if (worked and h not in worked) and all(  # given: its output shown, nothing left zero
                _no_zero_lines(m) for m in (query, keys[kv], values[kv], steps["output"])) or (
                all(_distinct_nonzero_rows(m) for m in (query, keys[kv], values[kv]))
                and all(_worked(steps[name]) for name in ("scores", "weights", "output"))
                and np.abs(steps["scaled"]).max() <= SCALED_BOUND
                and _readable_weights(steps["weights"], "none", decimals)):
            outputs.append(steps["output"])
        else:
            return False
    concat = np.hstack(outputs)
    return _no_zero_lines(concat) and _worked(concat @ w_o)


def gradients_are_worthy(steps: dict[str, np.ndarray], mask: str) -> bool:
    """A backward pass worth working by hand: no zero row or column in dV, dA, dS̃, dS, dQ or
    dK, no two queries' rows of dA, dS̃ or dQ alike, and every row of dA that softmax takes
    back with two nonzero entries or more among its unmasked keys (da = (1, 0, 0) leaves
    little to push).  Under a causal mask the first query's weights are (1, 0, ...): its rows
    of dS̃, dS and dQ are 0 by the mask's lesson, and its da passes nothing back."""
    causal = mask == "causal"
    for name in ("dV", "dweights", "dscaled", "dscores", "dQ", "dK"):
        nonzero = np.abs(steps[name]) > 1e-12
        skip = 1 if causal and name in ("dscaled", "dscores", "dQ") else 0
        if not (nonzero[skip:].any(axis=1).all() and nonzero.any(axis=0).all()):
            return False
        if name in ("dweights", "dscaled", "dQ") and not _distinct_rows(steps[name]):
            return False
    upstream = [row[: i + 1] if causal else row for i, row in enumerate(steps["dweights"])]
    return all(np.count_nonzero(np.abs(row) > 1e-12) >= 2 for row in upstream if len(row) >= 2)


def scaled_scores_in(candidate: Candidate, exponents, heads: int = 0) -> bool:
    """Whether every scaled score a student exponentiates is one of ``exponents`` (the
    no-calculator table), in the problem and, for a heads question, in each head."""
    def unmasked(steps: dict, mask) -> np.ndarray:
        scaled = steps["scaled"]
        return scaled[np.ones_like(scaled, dtype=bool) if isinstance(mask, str) else mask]

    whole = attention_steps(candidate.given, candidate.masking, candidate.scale)
    values = [] if heads else [unmasked(whole, candidate.masking)]  # heads scale only their own
    for h in range(heads):
        part = {name: np.hsplit(whole[name], heads)[h] for name in "QKV"}
        values.append(unmasked(attention_steps(part, scale=candidate.scale), "none"))
    table = np.array([float(x) for x in exponents])
    return all(np.min(np.abs(v[:, None] - table[None, :]), axis=1).max() < 1e-9 for v in values)


def clear_top_tokens(candidate: Candidate, decimals: int) -> list[int]:
    """Tokens whose largest attention weight stands clear of their second, at the shown
    decimals: "which token does it attend to most?" must have one answer."""
    weights = attention_steps(candidate.given, scale=candidate.scale)["weights"]
    ordered = np.sort(np.round(weights, decimals), axis=1)
    return [i for i, row in enumerate(ordered) if len(row) > 1 and row[-1] > row[-2]]


def _no_zero_rows(matrix: np.ndarray) -> bool:
    return bool(np.all(np.any(matrix != 0, axis=1)))


def _no_zero_lines(matrix: np.ndarray) -> bool:
    """No row and no column all zero (a sum that cancels to 1e-12 counts as zero)."""
    nonzero = np.abs(matrix) > 1e-12
    return bool(np.all(nonzero.any(axis=1)) and np.all(nonzero.any(axis=0)))


def _distinct_rows(matrix: np.ndarray) -> bool:
    """No two rows alike (to 1e-9: softmax rows a constant apart agree only so far)."""
    return len({tuple(row) for row in np.round(matrix, 9).tolist()}) == len(matrix)


def _distinct_nonzero_rows(matrix: np.ndarray) -> bool:
    return _no_zero_rows(matrix) and _distinct_rows(matrix)


def _worked(matrix: np.ndarray) -> bool:
    """A matrix of a query's work a row: no zero row or column, no two rows alike."""
    return _no_zero_lines(matrix) and _distinct_rows(matrix)


def _within_bounds(steps: dict[str, np.ndarray], difficulty: str) -> bool:
    if np.abs(steps["scaled"]).max() > SCALED_BOUND:
        return False
    if difficulty not in QKV_BOUND:
        return True
    largest_qkv = max(np.abs(steps[name]).max() for name in "QKV")
    return largest_qkv <= QKV_BOUND[difficulty] and np.abs(steps["scores"]).max() <= SCORE_BOUND[difficulty]


def _readable_weights(weights: np.ndarray, mask, decimals: int) -> bool:
    """No weight shows as 0 or 1 after rounding, and no row is uniform (masked keys aside);
    ``mask`` is "none", "causal" or the mask itself (True: may attend)."""
    half_unit = 0.5 * 10.0**-decimals
    for i, row in enumerate(weights):
        unmasked = (row[mask[i]] if not isinstance(mask, str) else row[: i + 1] if mask == "causal"
                    else row)
        if len(unmasked) < 2:
            continue  # a causal first row is exactly [1, 0, ...]: that is the mask's lesson
        if np.ptp(unmasked) < 1e-9 or unmasked.min() <= half_unit or unmasked.max() >= 1 - half_unit:
            return False
    return True
