"""Attention masks, described once: which keys each query may see, for any n_q x n_k scores.

A problem's mask is its kind's name (``ProblemSpec.mask``) and the kind's arguments: the
valid lengths of a padding mask, the width of a sliding window, a teacher's own matrix.
``visible`` turns them into the mask itself, True where query i may attend to key j; every
step that uses the mask (the engine, the numpy check, the tolerances, the practice page)
reads that, never the kind.  The conventions are PyTorch's:

- causal: query i sees keys j <= i, top-left aligned as ``is_causal`` (with more keys than
  queries the later keys are hidden from every query; a key says so);
- padding: a valid length for every query (d2l's ``masked_softmax(valid_lens)``), or one
  number, key padding: keys after the first ``valid`` are padding (``key_padding_mask``);
- window w: the causal sliding window, query i sees keys i - w < j <= i (itself and the w - 1
  keys before it);
- custom: the teacher's matrix, 0 / -inf (added to the scores) or true / false (true: may
  attend, as a boolean ``attn_mask``);
- causal+padding: both at once.
"""

from __future__ import annotations

import math

from generator.maths.exact import shown as _shown

KINDS = ("none", "causal", "padding", "window", "causal+padding", "custom")
DRAWN = ("causal", "padding", "window", "causal+padding")  # what a mixed set draws among
SPEC_KEYS = ("valid", "window")  # a spec file's keys of a mask's arguments
NEEDS = {"valid": ("padding", "causal+padding"), "window": ("window",)}
# What the mask is called in prose ("Apply the padding mask").
NAMES = {"causal": "causal mask", "padding": "padding mask", "window": "sliding-window mask",
         "causal+padding": "causal and padding mask", "custom": "mask"}
# The names as prose writes them (``spec`` at hand): as words in the message, which a
# translator sees whole, not as a value that would print in English.
NAME_PROSE = ("{% if spec.mask == 'causal' %}causal mask{% elif spec.mask == 'padding' %}padding mask"
              "{% elif spec.mask == 'window' %}sliding-window mask{% elif spec.mask == 'causal+padding' %}"
              "causal and padding mask{% else %}mask{% endif %}")
MINUS_INFINITY = ("-inf", "−inf", "-infinity", "−infinity", "-∞", "−∞")

Visible = tuple[tuple[bool, ...], ...]


def visible(kind: str, n_q: int, n_k: int, valid=None, window: int | None = None,
            matrix: Visible | None = None) -> Visible:
    """The mask as n_q x n_k booleans, True where query i may attend to key j."""
    if kind == "custom" and matrix is not None:
        return matrix
    valid_lengths = lengths(valid, n_q)

    def sees(i: int, j: int) -> bool:
        causal = kind not in ("causal", "window", "causal+padding") or j <= i
        padded = (kind not in ("padding", "causal+padding") or valid_lengths is None
                  or j < valid_lengths[i])
        windowed = kind != "window" or window is None or j > i - window
        return causal and padded and windowed
    return tuple(tuple(sees(i, j) for j in range(n_k)) for i in range(n_q))


def lengths(valid, n_q: int) -> tuple[int, ...] | None:
    """The valid length of every query: one number for all (key padding), or one each."""
    if valid is None:
        return None
    return tuple(valid) if isinstance(valid, tuple) else (valid,) * n_q


def blind_query(mask: Visible) -> int | None:
    """The first query (from 0) that sees no key at all, or None."""
    return next((i for i, row in enumerate(mask) if not any(row)), None)


def hides_something(kind: str, mask: Visible) -> bool:
    """Whether a padding or window mask hides a key the causal mask (or none) would show: a drawn
    mask must teach something of its own."""
    n_q, n_k = len(mask), len(mask[0])
    base = visible("causal" if kind in ("window", "causal+padding") else "none", n_q, n_k)
    return kind in ("causal", "custom") or mask != base


def additive(mask: Visible) -> tuple[tuple[float, ...], ...]:
    """The mask as M, added to the scores: 0 where the query may attend, -inf where not."""
    return tuple(tuple(0.0 if seen else -math.inf for seen in row) for row in mask)


def parse(record: dict, n_q: int, n_k: int) -> tuple[str, object, int | None, Visible | None]:
    """A spec file's mask keys (``mask``, ``valid``, ``window``) as (kind, valid, window, matrix);
    a ValueError of one line naming the key and the offending entry."""
    mask = record.get("mask", "none")
    matrix = _matrix(mask, n_q, n_k) if isinstance(mask, list) else None
    kind = "custom" if matrix is not None else mask
    if not isinstance(kind, str) or kind not in KINDS or kind == "custom" and matrix is None:
        raise ValueError(f"unknown mask {_shown(mask)} (expected one of: "
                         f"{', '.join(k for k in KINDS if k != 'custom')}, or a matrix of 0 and -inf)")
    for key, kinds in NEEDS.items():
        if key in record and kind not in kinds:
            raise ValueError(f"{key} goes with mask {' or '.join(kinds)}, not {kind}")
        if key not in record and kind in kinds:
            raise ValueError(f"mask {kind} needs {key} ({_WANTS[key]})")
    valid = _valid(record["valid"], n_q, n_k) if "valid" in record else None
    window = _window(record["window"], n_q) if "window" in record else None
    blind = blind_query(visible(kind, n_q, n_k, valid, window, matrix))
    if blind is not None:
        raise ValueError(f"query {blind + 1} sees no key: every entry of its mask row is -inf")
    return kind, valid, window, matrix


_WANTS = {"valid": "how many keys each query may see: one number, or one per query",
          "window": "its width w: query i sees keys i-w+1 to i"}


def _matrix(rows: list, n_q: int, n_k: int) -> Visible:
    """A teacher's mask: n_q x n_k entries, each 0 or -inf (added to the scores) or a boolean."""
    width = len(rows[0]) if rows and isinstance(rows[0], list) else 0
    if not all(isinstance(row, list) and len(row) == width for row in rows) or width == 0:
        raise ValueError("mask must be a list of rows of one length, e.g. [[0, \"-inf\"], [0, 0]]")
    if (len(rows), width) != (n_q, n_k):
        raise ValueError(f"mask is {len(rows)}x{width} but the scores are n_q x n_k = {n_q} x {n_k}")
    return tuple(tuple(_sees(entry, i, j) for j, entry in enumerate(row, 1))
                 for i, row in enumerate(rows, 1))


def _sees(entry, row: int, column: int) -> bool:
    if isinstance(entry, bool):
        return entry
    if isinstance(entry, (int, float)) and (entry == 0 or entry == -math.inf):
        return entry == 0
    if isinstance(entry, str) and entry.strip().lower() in MINUS_INFINITY + ("0",):
        return entry.strip() == "0"
    raise ValueError(f"mask row {row}, column {column}: {_shown(entry)} is neither 0 nor -inf "
                     f"nor true/false")


def _valid(value, n_q: int, n_k: int) -> int | tuple[int, ...]:
    """One valid length for every query (key padding), or a list of one per query."""
    if isinstance(value, list):
        if len(value) != n_q:
            raise ValueError(f"valid has {len(value)} lengths but there are {n_q} queries (give one "
                             f"per query, or one number for all)")
        return tuple(_length(v, n_k, f"valid entry {k}") for k, v in enumerate(value, 1))
    return _length(value, n_k, "valid")


def _length(value, n_k: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= n_k:
        raise ValueError(f"{key} must be a whole number from 1 to n_k = {n_k} (the keys a query "
                         f"may see), got {_shown(value)}")
    return value


def _window(value, n_q: int) -> int:
    """A width that both keeps a key beside the query's own (w >= 2: at 1 every weight is 1) and
    hides one the causal mask shows (w < n_q: wider, it is the causal mask)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"window must be a whole number (query i sees keys i-w+1 to i), got {_shown(value)}")
    if value < 2:
        raise ValueError(f"window {value} leaves each query at most itself (every weight 1); "
                         f"use a width of 2 or more")
    if value >= n_q:
        raise ValueError(f"window {value} on {n_q} queries hides nothing the causal mask does not; "
                         + (f"use a width from 2 to {n_q - 1}, or " if n_q > 2 else "use ")
                         + 'mask = "causal"')
    return value


def record(kind: str, valid, window: int | None, matrix: Visible | None) -> dict:
    """The mask's keys as problems.json writes them (and a spec file reads them back)."""
    found: dict[str, object] = {"mask": [list(row) for row in matrix] if kind == "custom" else kind}
    if valid is not None:
        found["valid"] = list(valid) if isinstance(valid, tuple) else valid
    if window is not None:
        found["window"] = window
    return found
