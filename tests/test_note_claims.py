"""Every sentence of the answer key that states a number or a comparison, checked against
the numbers the key itself holds.

Sets of every type are drawn (2 and 4 decimals; masks, heads, scale 1, 1/2 and other
scales, no calculator) and teachers' specs solved (cross-attention, ties, a near tie).
The Markdown key, what the student reads, is parsed sentence by sentence: each kind of
sentence has a pattern (``SENTENCES``), and each of its numbers and comparisons is derived
again from ``problems.json`` in numpy (the softmax of the raw scores, the mask, the
gradients), never from the generator's own notes.  A prose line of a solution that holds a
number and that no pattern reads fails the test, and so does a kind of note never met:
a new note needs a pattern here.

Shown numbers: written exactly when they have fewer places than the key's decimals, else
rounded, so a shown number is true when it lies within half a unit of its last place.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest
import sympy

from generator.cli import main

pytestmark = pytest.mark.slow  # every test reads sets drawn once for the module

TIE = 1e-12
NUM = r"-?\d+(?:\.\d+)?"
ALL_TYPES = "full,row,mistake,permute,masked,heads,concept,backward,softmax-jacobian"
RUNS = {
    **{f"every-type-{d}": ["--types", ALL_TYPES, "--count", "18", "--seed", "30", "--decimals", d]
       for d in ("2", "4")},
    "hard-2": ["--types", ALL_TYPES, "--count", "9", "--seed", "31", "--difficulty", "hard",
               "--decimals", "2"],
    "masked-4": ["--types", "masked", "--count", "8", "--seed", "33"],
    "masked-2": ["--types", "masked,full,row,backward", "--mask", "causal", "--count", "8",
                 "--seed", "34", "--decimals", "2"],
    "scale-1": ["--types", ALL_TYPES, "--count", "9", "--seed", "35", "--scale", "1"],
    "scale-1-masked-2": ["--types", "masked,backward", "--count", "4", "--seed", "36",
                         "--scale", "1", "--decimals", "2"],
    "scale-half-dk-4": ["--types", ALL_TYPES, "--count", "9", "--seed", "37", "--scale", "1/2",
                        "--dk", "4"],
    "scale-third-2": ["--types", ALL_TYPES, "--count", "9", "--seed", "38", "--scale", "1/3",
                      "--decimals", "2"],
    "scale-2": ["--types", "full,masked,heads,concept", "--count", "4", "--seed", "39",
                "--scale", "2"],
    "no-calculator": ["--types", ALL_TYPES.replace("heads,", ""), "--count", "8", "--seed", "40",
                      "--no-calculator"],
    **{f"cross-{d}": ["--types", "cross", "--count", "6", "--seed", "41", "--difficulty", d,
                      "--decimals", "2" if d == "medium" else "4"] for d in ("easy", "medium", "hard")},
    # many heads (three and four, one worked) and grouped queries (multi-query at easy)
    "many-heads-2": ["--types", "heads,grouped", "--count", "4", "--seed", "41", "--difficulty", "hard",
                     "--dk", "8", "--dv", "4", "--decimals", "2"],
    "three-heads-4": ["--types", "heads", "--count", "2", "--seed", "42", "--difficulty", "hard",
                      "--dk", "6", "--dv", "3"],
    "grouped-4": ["--types", "grouped", "--count", "3", "--seed", "43"],
    "grouped-easy-2": ["--types", "grouped", "--count", "3", "--seed", "44", "--difficulty", "easy",
                       "--decimals", "2"],
}
CROSS = {"Q": [[1, 0], [0, 2]], "K": [[1, 1], [2, 0], [0, 1]], "V": [[1, 0, 1], [0, 1, 1], [1, 1, 0]]}
D_O = {"dO": [[1, -1, 0.5], [0, 1, -1]]}
DECODER = {"X_dec": [[1, 0, 1], [0, 2, -1]], "X_enc": [[1, 1, 0], [0, 1, 1], [1, 0, -1]],
           "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[1, 0], [1, -1], [0, 1]], "W_V": [[1, 0], [0, 1], [2, -1]]}
GQA = {"type": "grouped", "heads": 4, "kv_heads": 2, "X": [[1, 0, 1], [0, 1, 1], [1, 1, 0]],
       "W_Q": [[1, 0, 1, -1], [0, 1, 1, 1], [1, 1, 0, 0]], "W_K": [[0, 1], [1, 0], [1, -1]],
       "W_V": [[1, 0], [0, 1], [1, 1]], "W_O": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 1, 1]]}
SPECS = {  # teachers' files: cross-attention (2 queries, 3 keys), ties, a near tie; many heads
    "heads": [GQA, {**GQA, "head": 3}, {**GQA, "heads": 2, "kv_heads": 1, "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[0], [1], [1]],
                                       "W_V": [[1], [0], [2]], "W_O": [[1, 0, 1], [0, 1, 1]]},
              {"type": "heads", "heads": 3, "Q": CROSS["V"], "K": [[0, 1, 1], [1, 0, -1], [1, 1, 1]],
               "V": [[1, 0, 2], [0, 1, 1], [1, 1, 0]], "W_O": [[1, 0], [0, 1], [1, 1]]}],
    "cross": [CROSS, {**CROSS, "mask": "causal", "type": "masked"},
              {**CROSS, "type": "row", "row": 1}, {**CROSS, "type": "concept", "row": 1},
              {**CROSS, **D_O, "type": "backward"}, {**CROSS, **D_O, "mask": "causal", "type": "backward"},
              {**CROSS, **D_O, "type": "softmax-jacobian", "row": 1},
              {**CROSS, "scale": "1/2"}, {**CROSS, "scale": 1, "mask": "causal", "type": "masked"},
              DECODER, {**DECODER, "type": "cross", "scale": "1/2"}, {**DECODER, "type": "row", "row": 2},
              {**DECODER, "type": "concept", "row": 1}],
    "ties": [{"Q": [[2, 1], [1, 2], [1, 1]], "K": [[2, 1], [1, 2], [2, 1]],
              "V": [[1, 2], [2, 1], [1, -1]]},
             {"Q": [[1, 0]], "K": [[1, 0], ["1.0001", 0], [0, 1]], "V": [[1, 2], [2, 1], [1, -1]]},
             {"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 2]],
              "W_V": [[1, 0], [0, 1]], "scale": "1/2", "mask": "causal", "type": "masked"}],
}


@dataclass(frozen=True)
class Claim:
    kind: str
    where: str
    what: str
    true: bool


@dataclass
class Problem:
    """One problem: its record in problems.json and the key's lines, statement and parts."""

    record: dict
    decimals: int
    statement: list[str]
    parts: dict[str, list[str]]
    claims: list[Claim] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    def __post_init__(self):
        self.spec, self.shape = self.record["spec"], self.record["shape"]
        self.cross = "X_dec" in self.spec or (
            "X" not in self.spec and self.shape["n_queries"] != self.shape["n_keys"])
        self.part_of = {part["part"]: part for part in self.record["parts"]}

    def step(self, name: str) -> np.ndarray:
        return np.array([[np.nan if x is None else x for x in row]
                         for row in self.record["steps"][name]], dtype=float)

    def has(self, name: str) -> bool:
        return name in self.record["steps"]

    def scale(self) -> float | None:
        scale = self.spec.get("scale")
        return None if scale is None else float(sympy.sympify(str(scale)))

    def claim(self, kind: str, what: str, true) -> None:
        self.claims.append(Claim(kind, self.record["id"], what, bool(true)))

    def shows(self, kind: str, text: str, value: float, what: str) -> None:
        self.claim(kind, f"{what}: {text} (is {value:.10g})", shown_as(text, value, self.decimals))


def shown_as(text: str, value: float, decimals: int) -> bool:
    """Whether a number written ``text`` is ``value`` as the key writes numbers."""
    number = float(text)
    places = len(text.split(".")[1]) if "." in text else 0
    if places < decimals:  # written exactly
        return abs(number - value) <= 1e-9 * max(1.0, abs(value))
    return abs(number - value) <= 0.5 * 10.0**-places + 1e-9


def seen_keys(rows: int, columns: int, masked: bool) -> np.ndarray:
    """Which keys each query sees: all, or under the causal mask keys 1..i (top-left)."""
    seen = np.ones((rows, columns), dtype=bool)
    return np.tril(seen) if masked else seen


def softmax(row: np.ndarray) -> np.ndarray:
    e = np.exp(row - row.max())
    return e / e.sum()


def top_keys(row: np.ndarray, seen) -> list[int]:
    """The keys (0-based) sharing the row's largest value among the seen ones."""
    best = max(row[j] for j in seen)
    return [int(j) for j in seen if abs(row[j] - best) < TIE]


def numbers_in(listing: str) -> list[int]:
    """'1, 2 and 3' -> [1, 2, 3]."""
    return [int(n) for n in re.findall(r"\d+", listing)]


# ---- the notes after a step ----------------------------------------------------------------


def prefix_of(name: str) -> str:
    return name.rsplit(".", 1)[0] + "." if "." in name else ""


def scores_before_softmax(p: Problem, prefix: str) -> np.ndarray:
    return p.step(prefix + ("scaled" if p.has(prefix + "scaled") else "scores"))


def masked_here(p: Problem, prefix: str) -> bool:
    return p.spec.get("mask") == "causal" and not prefix.startswith("head")


def who(p: Problem) -> tuple[str, str]:
    """The words for a query and a key: tokens in self-attention, queries and keys in cross."""
    return ("query", "key") if p.cross else ("token", "token")


def why_scale(p: Problem, m: re.Match, step: str) -> None:
    kind = "why-scale"
    prefix = prefix_of(step)
    row = int(m["row"]) - 1
    weights, raw = p.step(prefix + "weights")[row], p.step(prefix + "scores")[row]
    seen = np.flatnonzero(seen_keys(*p.step(prefix + "weights").shape, masked_here(p, prefix))[row])
    largest, unscaled = weights[seen].max(), softmax(raw[seen]).max()
    p.claim(kind, f"names a {who(p)[0]}: {m['who']}", m["who"] == who(p)[0])
    p.shows(kind, m["scaled"], largest, f"row {row + 1}'s largest weight in A")
    p.shows(kind, m["unscaled"], unscaled, f"row {row + 1}'s largest weight on the raw scores")
    p.claim(kind, f"the scaling lowers row {row + 1}'s largest weight ({m['unscaled']} -> "
                  f"{m['scaled']})", unscaled > largest + TIE and m["unscaled"] != m["scaled"])


WEIGHTS_CLAUSE = re.compile(
    r"(?P<who>token|query) (?P<row>\d+) attends (?:most to (?P<one>itself|(?:token|key) \d+) "
    r"\((?P<w>NUM)(?:, just above (?:token|key) (?P<next>\d+)'s (?P<nw>NUM))?\)|equally to "
    r"(?:tokens|keys) (?P<tied>[\d, and]+) \((?P<tw>NUM) each\)), whose scores? (?P<s>NUM) "
    r"(?:is|are) the largest it sees".replace("NUM", NUM))


def reading_weights(p: Problem, m: re.Match, step: str) -> None:
    kind = "reading-weights"
    prefix = prefix_of(step)
    weights, scores = p.step(step), scores_before_softmax(p, prefix)
    visible = seen_keys(*weights.shape, masked_here(p, prefix))
    read = set()
    for clause in m["clauses"].split("; "):
        c = WEIGHTS_CLAUSE.fullmatch(clause)
        if not c:
            p.claim(kind, f"a clause the test cannot read: {clause!r}", False)
            continue
        row = int(c["row"]) - 1
        read.add(row)
        seen = list(np.flatnonzero(visible[row]))
        if c["tied"]:
            named = [k - 1 for k in numbers_in(c["tied"])]
        else:
            named = [row if c["one"] == "itself" else int(c["one"].split()[1]) - 1]
            p.claim(kind, f"names a {who(p)[1]}: {clause!r}", not p.cross if c["one"] == "itself"
                    else c["one"].split()[0] == who(p)[1])
        p.claim(kind, f"names a {who(p)[0]}: {clause!r}", c["who"] == who(p)[0])
        most(p, kind, c, weights[row], seen, named, f"row {row + 1}")
        for k in named:
            p.shows(kind, c["s"], scores[row][k], f"the score of ({row + 1},{k + 1})")
        p.claim(kind, f"row {row + 1}: the score of {[k + 1 for k in named]} is the largest seen",
                all(scores[row][k] >= scores[row][seen].max() - TIE for k in named))
    p.claim(kind, f"every row that sees two keys or more is read ({sorted(read)})",
            read == {i for i in range(weights.shape[0]) if visible[i].sum() > 1})


def most(p: Problem, kind: str, c: re.Match, weights: np.ndarray, seen: list, named: list,
         where: str) -> None:
    """A clause that says which keys get a row's largest weight: alone, or tied (each with
    the weight shown); alone, it must look the largest at the shown decimals, or name the
    next key with the places that tell them apart ("just above")."""
    tops = top_keys(weights, seen)
    p.claim(kind, f"{where}: the largest weight goes to {[k + 1 for k in named]} (it goes to "
                  f"{[int(k) + 1 for k in tops]})", sorted(named) == tops)
    for k in named:
        p.shows(kind, c["tw"] or c["w"], weights[k], f"{where}, weight {k + 1}")
    rest = [j for j in seen if j not in named]
    if c["tied"] or not rest:
        return
    runner = max(rest, key=lambda j: weights[j])
    if c["next"]:
        p.shows(kind, c["nw"], weights[int(c["next"]) - 1], f"{where}, weight {c['next']}")
        p.claim(kind, f"{where}: {c['next']} comes next, and prints apart ({c['w']}, {c['nw']})",
                int(c["next"]) - 1 == runner and c["w"] != c["nw"])
    else:
        p.claim(kind, f"{where}: {c['w']} prints above the next weight, {weights[runner]:.6f}",
                rounded(weights[named[0]], p.decimals) > rounded(weights[runner], p.decimals))


def rounded(value: float, decimals: int) -> Decimal:
    return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def adds_up(p: Problem, kind: str, text: str, entries: np.ndarray, what: str) -> None:
    """A sum the key states of entries it prints: the sum of the entries as printed (each
    rounded to the key's decimals), what a student adding them up on the page gets, and not
    the exact sum's rounding, which may differ from it in the last place."""
    printed = sum((rounded(x, p.decimals) for x in entries), Decimal(0))
    p.claim(kind, f"{what}: {text}, printed entries add up to {printed}", Decimal(text) == printed)


OUTPUT_CLAUSE = re.compile(
    r"[Oo]utput row (?P<row>\d+) takes (?:most \((?P<w>NUM)(?:, just above value row (?P<next>\d+)'s "
    r"(?P<nw>NUM))?\) from value row (?P<one>\d+)|equally \((?P<tw>NUM) each\) from value rows "
    r"(?P<tied>[\d, and]+))".replace("NUM", NUM))


def reading_output(p: Problem, m: re.Match, step: str) -> None:
    kind = "reading-output"
    prefix = prefix_of(step)
    weights = p.step(prefix + "weights")
    visible = seen_keys(*weights.shape, masked_here(p, prefix))
    for clause in m["clauses"].split("; "):
        c = OUTPUT_CLAUSE.fullmatch(clause)
        if not c:
            p.claim(kind, f"a clause the test cannot read: {clause!r}", False)
            continue
        row = int(c["row"]) - 1
        named = [k - 1 for k in numbers_in(c["tied"])] if c["tied"] else [int(c["one"]) - 1]
        most(p, kind, c, weights[row], list(np.flatnonzero(visible[row])), named, f"output row {row + 1}")


def sqrt_dk(p: Problem, m: re.Match, step: str) -> None:
    width = p.shape["d_k"] // (heads_of(p)[0] if step.startswith("head") else 1)  # a head's own d_k
    p.claim("sqrt-dk", f"d_k = {m['dk']} (is {width})", int(m["dk"]) == width)
    p.shows("sqrt-dk", m["root"], width ** 0.5, "sqrt(d_k)")


def mask_positions(p: Problem, m: re.Match, step: str) -> None:
    masked = np.isnan(p.step(step))
    named = {(int(i) - 1, int(j) - 1) for i, j in re.findall(r"\[(\d+),(\d+)\]", m[0])}
    p.claim("mask-list", f"the masked entries {sorted(named)}",
            named == {tuple(ij) for ij in np.argwhere(masked)})


# ---- what a type says before or after its answer ------------------------------------------


def row_answer(p: Problem, m: re.Match, step: str) -> None:
    weights = p.step("row-weights.weights")[0]
    key = int(m["key"]) - 1
    p.claim("row-answer", f"key {key + 1} alone gets the most attention",
            top_keys(weights, range(len(weights))) == [key])
    p.shows("row-answer", m["w"], weights[key], "its weight")


def concept_answer(p: Problem, m: re.Match, step: str) -> None:
    kind, letter = "concept-answer", m["letter"].lower()
    item = next(c for c in p.record["choices"] if c["part"] == step)
    p.claim(kind, f"answer ({m['letter']}) for part ({step})", item["answer"] == letter)
    row = p.spec.get("row", 1) - 1
    weights, raw = p.step("weights")[row], p.step("scores")[row]
    rest = m["rest"]
    if item["topic"] == "top-attention":
        t = re.fullmatch(rf"(token|key) (\d+), weight ({NUM})\.\*\* Read row (\d+) of A: its "
                         rf"largest entry is in column (\d+)\..*", rest)
        p.claim(kind, f"names a {who(p)[1]}: {t[1]}", t[1] == who(p)[1])
        t = [None, *t.groups()[1:]]
        key = int(t[1]) - 1
        p.claim(kind, "the top key", top_keys(weights, range(len(weights))) == [key]
                and int(t[4]) == key + 1 and int(t[3]) == row + 1)
        p.shows(kind, t[2], weights[key], "its weight")
    elif item["topic"] == "output-shape":
        t = re.fullmatch(r"(\d+) × (\d+)\.\*\* O = AV multiplies an? (\d+) × (\d+) matrix by an? "
                         r"(\d+) × (\d+) one.*", rest)
        n, keys, d_v = p.shape["n_queries"], p.shape["n_keys"], p.shape["d_v"]
        p.claim(kind, f"the shapes in {rest[:40]!r}", [int(x) for x in t.groups()]
                == [n, d_v, n, keys, keys, d_v])
    elif item["topic"] == "row-sum":
        p.claim(kind, "rows of A sum to 1", rest.startswith("1.**")
                and np.allclose(np.nansum(p.step("weights"), axis=1), 1))
    elif item["topic"] == "no-scaling":
        t = re.fullmatch(rf"({NUM})\.\*\* Softmax of row (\d+) of S itself, not of (?P<of>.+?): "
                         rf"unscaled scores are (?P<by>\S+) times (?P<apart>further apart|closer together), "
                         rf"so the largest weight (?P<way>grows|shrinks).*", rest)
        unscaled = softmax(raw).max()
        p.shows(kind, t[1], unscaled, "the largest weight on the raw scores")
        p.claim(kind, f"row {t[2]}", int(t[2]) == row + 1)
        p.claim(kind, f"the largest weight {t['way']}", (unscaled > weights.max()) == (t["way"] == "grows")
                and abs(unscaled - weights.max()) > TIE)
        p.claim(kind, f"the scores were {t['of']}", (t["of"] == "S/√(d_k)") == (p.scale() is None))
        factor = 1 / p.shape["d_k"] ** 0.5 if p.scale() is None else p.scale()  # scaled = factor · raw
        by = factor**-1 if t["apart"] == "further apart" else factor
        p.claim(kind, f"the raw scores are {t['by']} times {t['apart']}", by > 1 and (
            p.scale() is None if t["by"] == "√(d_k)" else abs(float(sympy.sympify(t["by"])) - by) < TIE))
    else:
        raise AssertionError(f"concept topic {item['topic']} has no check")


def choice_answer(p: Problem, m: re.Match, step: str) -> None:
    item = next(c for c in p.record["choices"] if c["part"] == step)
    p.claim("choice-answer", f"answer ({m['letter']}) for part ({step})", item["answer"] == m["letter"].lower())
    if item["topic"] == "reason" and p.has("jacobian"):
        p.claim("choice-answer", "every row of J sums to 0",
                np.allclose(p.step("jacobian").sum(axis=1), 0, atol=1e-12))


MISTAKE_STEP = {"no-scaling": "scaled", "dk-not-sqrt": "scaled", "k-not-transposed": "scores",
                "column-softmax": "weights", "v-times-weights": "output", "weights-times-k": "output"}


def mistake_answer(p: Problem, m: re.Match, step: str) -> None:
    kind, mistake = "mistake-answer", p.spec["mistake"]
    wrong = MISTAKE_STEP[mistake]
    student, right = p.step(f"flawed.{wrong}"), p.step(wrong)
    p.claim(kind, f"the wrong step is {wrong}", p.part_of[step]["steps"] == [f"flawed.{wrong}", wrong]
            and (student.shape != right.shape or not np.allclose(student, right, atol=10.0**-p.decimals / 2)))
    tokens = p.shape["n_queries"]
    if "d_k equals the number of tokens" in m[0]:
        p.claim(kind, "d_k equals the number of tokens", p.shape["d_k"] == tokens == p.shape["n_keys"])
    if "d_v equals the number of tokens" in m[0]:
        p.claim(kind, "d_v equals the number of tokens", p.shape["d_v"] == tokens == p.shape["n_keys"])
    if "the student's columns do, their rows do not" in m[0]:
        student = p.step("flawed.weights")
        p.claim(kind, "the student's columns sum to 1, their rows do not",
                np.allclose(student.sum(axis=0), 1) and not np.allclose(student.sum(axis=1), 1))


def permute_rows(p: Problem, m: re.Match, step: str) -> None:
    i, j = (t - 1 for t in p.spec["swap"])
    named = [int(n) - 1 for n in re.findall(r"\d+", m[0])]
    p.claim("permute", f"tokens, rows and columns {[n + 1 for n in named]}", set(named) <= {i, j})
    order = list(range(p.shape["n_queries"]))
    order[i], order[j] = j, i
    weights, output = p.step("weights"), p.step("output")
    if "of A swap" in m[0]:
        p.claim("permute", "A' is A with rows and columns swapped",
                np.allclose(p.step("permute-weights.weights"), weights[np.ix_(order, order)]))
    else:
        p.claim("permute", "O' is O with rows swapped",
                np.allclose(p.step("permute-output.output"), output[order]))


def permute_same(p: Problem, m: re.Match, step: str) -> None:
    p.claim("permute", "recomputing from the swapped X gives A' and O'",
            np.allclose(p.step("swapped.weights"), p.step("permute-weights.weights"))
            and np.allclose(p.step("swapped.output"), p.step("permute-output.output")))


def heads_of(p: Problem) -> tuple[int, int]:
    """(query heads, key/value heads): 2 and 2 where the spec says nothing."""
    heads = p.spec.get("heads", 2)
    return heads, p.spec.get("kv_heads", heads)


def kv_of(p: Problem, head: int) -> int:
    heads, kv_heads = heads_of(p)
    return (head - 1) // (heads // kv_heads) + 1


def many_heads_setup(p: Problem, m: re.Match, _) -> None:
    words = {"Two": 2, "Three": 3, "Four": 4}
    p.claim("setup", f"{m['count']} heads", words[m["count"]] == heads_of(p)[0])
    if m["others"]:
        others = numbers_in(m["others"])
        p.claim("setup", f"heads {others} given", sorted(others + [p.spec["head"]])
                == list(range(1, heads_of(p)[0] + 1)))


def sharing(p: Problem, text: str) -> None:
    """Query heads 1 and 2 use K_1, V_1; query heads 3 and 4 use K_2, V_2: each query head's
    key/value head, and the head's own K in the record that block of K."""
    clauses = re.findall(r"[Qq]uery heads ([\d, and]+) use K_(\d+), V_(\d+)", text)
    seen = []
    for listing, k, v in clauses:
        for head in numbers_in(listing):
            seen.append(head)
            block = p.step(f"head{head}.kv{k}.K")
            width = block.shape[1]
            p.claim("sharing", f"query head {head} uses K_{k}", int(k) == int(v) == kv_of(p, head)
                    and np.allclose(block, p.step("K")[:, width * (int(k) - 1):width * int(k)]))
    p.claim("sharing", "every query head named once", sorted(seen) == list(range(1, heads_of(p)[0] + 1)))


def grouped_setup(p: Problem, m: re.Match, _) -> None:
    heads, kv_heads = heads_of(p)
    p.claim("setup", f"{m['kind']} attention, {m['hq']} over {m['kv']}", (m["kind"] == "Multi-query")
            == (kv_heads == 1) and int(m["hq"]) == int(m["hq2"]) == heads and int(m["kv"]) == kv_heads
            and int(m["ratio"]) == heads // kv_heads)
    setup(p, re.match(r"(?P<tokens>\d+) (?P<d_model>\d*) (?P<head_dk>\d+) (?P<head_dv>\d+)",
                      f"{m['tokens']} {m['d_model'] or ''} {m['head_dk']} {m['head_dv']}"), None)
    sharing(p, m["sharing"])


def grouped_split(p: Problem, m: re.Match, step: str) -> None:
    sharing(p, m["sharing"])
    p.claim("heads-split", "each query head's width and the part's marks", int(m["w"])
            == p.shape["d_k"] // heads_of(p)[0] and int(m["marks"]) == p.part_of[step]["marks"])


def blocks_split(p: Problem, m: re.Match, step: str) -> None:
    """Each head takes its own block: head 1 columns 1 to 2 of Q and K and column 1 of V; ..."""
    w, u = p.shape["d_k"] // heads_of(p)[0], p.shape["d_v"] // heads_of(p)[0]
    spans = re.findall(r"head (\d+) columns? (\d+)(?: to (\d+))?(?: of Q and K)? and columns? (\d+)"
                       r"(?: to (\d+))?", m["blocks"])
    p.claim("heads-split", "every head's block", [int(s[0]) for s in spans] == list(range(1, heads_of(p)[0] + 1))
            and all((int(a), int(b or a), int(c), int(d or c)) == (w * (h - 1) + 1, w * h, u * (h - 1) + 1, u * h)
                    for h, a, b, c, d in ((int(s[0]), *s[1:]) for s in spans)))
    asked = 1 if "head" in p.spec else heads_of(p)[0]
    p.claim("heads-split", "the marks", int(m["mark"]) == p.part_of[step]["marks"] // asked)


def heads_split(p: Problem, m: re.Match, step: str) -> None:
    d_k, d_v, mark = (int(x) for x in m.groups())
    p.claim("heads-split", "each head's widths and marks",
            (d_k, d_v, mark) == (p.shape["d_k"] // 2, p.shape["d_v"] // 2, p.part_of[step]["marks"] // 2)
            and p.step("head1.Q").shape[1] == d_k and p.step("head2.V").shape[1] == d_v)


def step_heading(p: Problem, m: re.Match, step: str) -> None:
    shape = p.step(step).shape
    p.claim("step-shape", f"{step} is {m['r']}×{m['c']}", (int(m["r"]), int(m["c"])) == shape)


# ---- the statement ----------------------------------------------------------------------------


def title(p: Problem, m: re.Match, _) -> None:
    p.claim("title", f"problem {m['number']}, {m['marks']} marks",
            int(m["marks"]) == p.record["marks"] == sum(q["marks"] for q in p.record["parts"]))
    calls_self = "self-attention" in m["title"].lower()
    p.claim("title", f"{m['title']!r} names the attention's kind", not (p.cross and calls_self))


def setup(p: Problem, m: re.Match, _) -> None:
    s, found = p.shape, {k: int(v) for k, v in m.groupdict().items() if v and v.isdigit()}
    expected = {"tokens": s["n_queries"], "queries": s["n_queries"], "keys": s["n_keys"],
                "d_model": s["d_model"], "d_enc": s.get("d_enc"), "d_k": s["d_k"], "d_v": s["d_v"],
                "head_dk": s["d_k"] // heads_of(p)[0], "head_dv": s["d_v"] // heads_of(p)[1]}
    p.claim("setup", f"sizes {found}", all(expected[k] == v for k, v in found.items()))
    if m.groupdict().get("tokens") and p.cross:
        p.claim("setup", "a cross-attention problem called a sequence of tokens", False)
    if "self" in m.groupdict() and m["self"]:
        p.claim("setup", f"{m['self']}-attention", (m["self"] == "cross") == p.cross)


def row_setup(p: Problem, m: re.Match, _) -> None:
    row = p.spec["row"] - 1
    p.claim("setup", f"row {m['row']}, d_k = {m['dk']}", int(m["row"]) == row + 1
            and int(m["dk"]) == p.shape["d_k"])
    if m["seen"]:
        p.claim("setup", f"sees keys 1 to {m['seen']}", int(m["seen"]) == row + 1
                == p.step("given.scores").shape[1])


def swap_setup(p: Problem, m: re.Match, _) -> None:
    swap = [int(x) for x in m.groups()]
    p.claim("setup", f"swap {swap}", swap[:2] == swap[2:] == p.spec["swap"])


def jacobian_setup(p: Problem, m: re.Match, _) -> None:
    row = int(m["row"]) - 1
    weights = np.asarray(p.step("weights")[row], dtype=float)
    if "places" in p.spec:  # no calculator: the row given to so many places
        unit = 10.0 ** p.spec["places"]
        weights = np.floor(weights * unit + 0.5) / unit
    p.claim("setup", f"token {row + 1}'s row of weights", row + 1 == p.spec["row"]
            and np.allclose(p.step("arow")[0], weights)
            and np.allclose(p.step("grow")[0], p.step("dweights")[row]))


def scale_sentence(p: Problem, m: re.Match, _) -> None:
    usual = 1 / p.shape["d_k"] ** 0.5
    p.claim("scale", f"{m['c']} {m['how']} 1/√(d_k) = {usual:.4g}", abs(p.scale() - float(
        sympy.sympify(m["c"]))) < TIE and (abs(p.scale() - usual) < TIE) == (m["how"] == "which is"))


def scale_c(p: Problem, m: re.Match, _) -> None:
    p.claim("scale", f"the scale c = {m['c']}", p.scale() is not None
            and abs(p.scale() - float(sympy.sympify(m["c"]))) < TIE)


def prompt(p: Problem, m: re.Match, _) -> None:
    p.claim("marks", f"part ({m['letter']}) has {m['marks']} marks",
            int(m["marks"]) == p.part_of[m["letter"]]["marks"])
    text = m["text"]
    if (t := re.match(r"Head (\d+) \(with K_(\d+), V_(\d+)\)", text)):  # grouped queries
        p.claim("prompt", f"head {t[1]} with K_{t[2]}", int(t[2]) == int(t[3]) == kv_of(p, int(t[1])))
    if (t := re.match(r"Which (token|key) does (token|query) (\d+) attend to most", text)):
        p.claim("prompt", f"{t[2]} {t[3]}", int(t[3]) == p.spec["row"] and (t[1], t[2]) == (
            ("key", "query") if p.cross else ("token", "token")))
    if (t := re.match(r"Had the scores not been (divided by √\(d_k\)|scaled by (\S+)), what would "
                      r"(?:token|query) (\d+)'s largest", text)):
        p.claim("prompt", f"the scores were {t[1]}", int(t[3]) == p.spec["row"] and (
            p.scale() is None if t[2] is None else abs(p.scale() - float(sympy.sympify(t[2]))) < TIE))
    if (t := re.match(rf"(?:Token|Query) (\d+)'s largest weight is ({NUM}); without the scaling by "
                      rf"1/√\(d_k\) it would be ({NUM}), and its row of dS̃ would add up \(in size\) "
                      rf"to ({NUM}) instead of ({NUM})\. Why\?", text)):
        backward_why_scale(p, t)
    if (t := re.match(rf"Key (\d+) gets the least attention: its column of A adds up to ({NUM})\. "
                      rf"What is true of row (\d+) of dV\?", text)):
        ignored_key(p, t)


def backward_why_scale(p: Problem, t: re.Match) -> None:
    kind, row = "backward-why-scale", int(t[1]) - 1
    p.kinds.add(kind)
    weights, scores = p.step("weights"), p.step("scores")
    visible = seen_keys(*weights.shape, p.spec.get("mask") == "causal")
    raw = np.zeros_like(weights)
    for i in range(len(raw)):
        raw[i][visible[i]] = softmax(scores[i][visible[i]])
    upstream = p.step("dO") @ p.step("V").T
    lost = np.abs(raw * (upstream - (raw * upstream).sum(axis=1, keepdims=True))).sum(axis=1)
    kept = np.abs(np.nan_to_num(p.step("dscaled"))).sum(axis=1)
    p.claim(kind, "the scale is 1/√(d_k)", p.scale() is None)
    p.shows(kind, t[2], np.nanmax(weights[row]), f"row {row + 1}'s largest weight")
    p.shows(kind, t[3], raw[row].max(), f"row {row + 1}'s largest weight on the raw scores")
    p.shows(kind, t[4], lost[row], f"row {row + 1} of dS̃ on the raw scores, in size")
    asked = p.spec.get("row")
    if asked is None or (asked == row + 1 and p.spec.get("places") is None):  # the key prints that row
        adds_up(p, kind, t[5], np.abs(np.nan_to_num(p.step("dscaled")[row])), f"row {row + 1} of dS̃, in size")
    else:
        p.shows(kind, t[5], kept[row], f"row {row + 1} of dS̃, in size")
    p.claim(kind, "without scaling less gradient passes", lost[row] < kept[row])


def ignored_key(p: Problem, t: re.Match) -> None:
    kind, key = "ignored-key", int(t[1]) - 1
    p.kinds.add(kind)
    attention = np.nansum(p.step("weights"), axis=0)
    sizes = np.abs(p.step("dV")).sum(axis=1)
    p.claim(kind, f"key {key + 1} alone gets the least attention",
            [j for j in range(len(attention)) if attention[j] < attention.min() + TIE] == [key])
    adds_up(p, kind, t[2], np.nan_to_num(p.step("weights")[:, key]), f"column {key + 1} of A, summed")
    p.claim(kind, f"row {key + 1} of dV is the smallest and not 0", int(t[3]) == key + 1 and
            [j for j in range(len(sizes)) if sizes[j] < sizes.min() + TIE] == [key] and sizes[key] > TIE)


# ---- the sentences, and what reads each -----------------------------------------------------

# (kind, pattern, check): the pattern is searched in a line; ``step`` is the step the line
# follows, or the part's letter for a part without steps.
SOLUTION = [
    ("why-scale", rf"^Why scale: .* Here (?P<who>token|query) (?P<row>\d+)'s largest weight is "
                  rf"(?P<scaled>{NUM}); on the raw scores it would be (?P<unscaled>{NUM})\.$", why_scale),
    ("reading-weights", r"^Reading the weights: (?P<clauses>.*?)\. Softmax turns each row", reading_weights),
    ("reading-output", r"^Reading the output: .*?(?P<clauses>Output row .*)\.$", reading_output),
    ("sqrt-dk", rf"^sqrt\(d_k\) = sqrt\((?P<dk>\d+)\) [=≈] (?P<root>{NUM})\.$", sqrt_dk),
    ("mask-list", r"^(\[\d+,\d+\](, )?)+\.$", mask_positions),
    ("mask-note", r"^Causal mask: .* weight will be exactly 0\):$", None),
    ("row-answer", rf"^The most attention goes to key (?P<key>\d+), with weight (?P<w>{NUM})\.$", row_answer),
    ("concept-answer", r"^\*\*Answer: \((?P<letter>[A-L])\) (?P<rest>.+)$", concept_answer),
    ("choice-answer", r"^\*\*Answer: \((?P<letter>[A-L])\)\*\* ", choice_answer),
    ("mistake-answer", r"^\*\*The mistake is in the step .*", mistake_answer),
    ("permute", r"^Swapping tokens \d+ and \d+ swaps .* rows \d+ and \d+ of A swap, and so do columns "
                r"\d+ and \d+:", permute_rows),
    ("permute", r"^Each output row belongs to its token, so rows \d+ and \d+ of O swap:", permute_rows),
    ("permute", r"Recomputing from the swapped X gives the same matrices:$", permute_same),
    ("heads-split", r"^Head 1 takes the first (\d+) columns of Q and K and the first (\d+) of V; head 2 "
                    r"the rest \((\d+) marks? a head\)\.$", heads_split),
    ("blocks-split", r"^Each head takes its own block: (?P<blocks>.*) \((?P<mark>\d+) marks?(?: a head)?\)\.$",
     blocks_split),
    ("grouped-split", r"^(?P<sharing>Query heads .*?\.) Each query head's Q_h is its block of (?P<w>\d+) "
                      r"columns? of Q; each shared K_g, V_g the g-th block of K and V \((?P<marks>\d+) "
                      r"marks?\)\.$", grouped_split),
    ("step-shape", r"^\*\*.+\*\* \((?P<r>\d+)×(?P<c>\d+)(?:, \d+ marks?)?\)$", step_heading),
    ("solution-heading", r"^### Solution to problem \d+$", None),
]
STATEMENT = [
    ("title", r"^## Problem (?P<number>\d+): (?P<title>.+) \((?P<marks>\d+) marks?[,)]", title),
    ("setup", r"A sequence of (?P<tokens>\d+) tokens has embeddings as the rows of X \(d_model = "
              r"(?P<d_model>\d+)\), projected by W_Q, W_K and W_V; here d_k = (?P<d_k>\d+) and d_v = "
              r"(?P<d_v>\d+)\.", setup),
    ("setup", r"In cross-attention the (?P<queries>\d+) tokens? of a decoder attends? over the (?P<keys>\d+) "
              r"tokens? of an encoder: the decoder's embeddings are the rows of X_dec \(d_dec = "
              r"(?P<d_model>\d+)\), the encoder's the rows of X_enc \(d_enc = (?P<d_enc>\d+)\)\. .*; here "
              r"d_k = (?P<d_k>\d+) and d_v = (?P<d_v>\d+)\.", setup),
    ("setup", r"The rows of Q are (?P<queries>\d+) quer(?:y|ies), the rows of K and V are (?P<keys>\d+) "
              r"keys? and their values; here d_k = (?P<d_k>\d+) and d_v = (?P<d_v>\d+)\.", setup),
    ("setup", r"^The rows of V are the values of (?P<keys>\d+) keys?; here d_k = (?P<d_k>\d+) and d_v = "
              r"(?P<d_v>\d+)\.", setup),  # backward's row alone: only V, A and dO are printed
    ("setup", r"(?:Two|Three|Four)-head self-attention on a sequence of (?P<tokens>\d+) tokens(?: \(d_model = "
              r"(?P<d_model>\d+)\))?.* each head has d_k = (?P<head_dk>\d+) and d_v = (?P<head_dv>\d+)\.", setup),
    ("many-heads", r"(?P<count>Two|Three|Four)-head self-attention .*?(?:Heads (?P<others>[\d, and]+) are "
                   r"worked out already|$)", many_heads_setup),
    ("grouped-setup", r"^(?P<kind>Grouped-query|Multi-query) attention on a sequence of (?P<tokens>\d+) tokens"
                      r"(?: \(d_model = (?P<d_model>\d+)\))?: (?P<hq>\d+) query heads share .* blocks of "
                      r"d_k = (?P<head_dk>\d+) columns? and .* \(d_v = (?P<head_dv>\d+)\)\. (?P<sharing>Query heads "
                      r".*?\.) Why share: .* with (?P<kv>\d+) key/value heads? instead of (?P<hq2>\d+) that cache "
                      r"is (?P<ratio>\d+) times smaller\.", grouped_setup),
    ("setup", r"A (?P<self>self|cross)-attention layer with (?:(?P<tokens>\d+) tokens|(?P<queries>\d+) "
              r"quer(?:y|ies) and (?P<keys>\d+) keys?), d_k = (?P<d_k>\d+) and d_v = (?P<d_v>\d+)", setup),
    ("setup", r"^One query token's row of raw attention scores \(row (?P<row>\d+) of S = QK\^T\), with "
              r"d_k = (?P<dk>\d+)(?:; under the causal mask this token sees keys 1 to (?P<seen>\d+) only"
              r".*)?:$", row_setup),
    ("setup", r"^Now tokens (\d+) and (\d+) swap places: rows (\d+) and (\d+) of X are exchanged", swap_setup),
    ("setup", r"^Token (?P<row>\d+)'s row of attention weights a", jacobian_setup),
    ("scale", r"The scores are scaled by (?P<c>\S+?),? (?P<how>instead of|which is) 1/√\(d_k\)", scale_sentence),
    ("prompt", r"^\((?P<letter>[a-z])\) \[(?P<marks>\d+) marks?\] (?P<text>.*)$", prompt),
    ("scale-c", r"the scale c = (?P<c>[^.\s]+)\.", scale_c),
    ("problem-id", r"^Problem id `[^`]+`\.$", None),
]
NOTE_KINDS = {"why-scale", "reading-weights", "reading-output"}  # the templates' notes/ kinds
PROMPT_KINDS = {"backward-why-scale", "ignored-key"}  # prompts that state sums of the key's numbers


def is_prose(line: str) -> bool:
    """A line that says something in words: not a matrix, a working line, a heading of a part,
    a table, a choice or a caption of a matrix."""
    return bool(line.strip()) and not re.match(r"^( {4}|- |  →|#### |\||.* =$)", line)


def read_problem(p: Problem) -> None:
    """Runs the patterns over the problem's lines; a line that holds a number and that no
    pattern reads is a claim the test cannot check, so it counts as false."""
    for line in p.statement:
        read_line(p, line, STATEMENT, None)
    for letter, lines in p.parts.items():
        names, step = iter(p.part_of[letter]["steps"]), letter
        for line in lines:
            if re.match(r"^\*\*.+\*\* \(\d+×\d+", line):
                step = next(names)
            read_line(p, line, SOLUTION, step)


def read_line(p: Problem, line: str, patterns, step) -> None:
    if not is_prose(line):
        return
    line = line.replace("\u00a0", " ")  # a no-break space keeps a number with its unit: a space
    read = False
    for kind, pattern, check in patterns:
        m = re.search(pattern, line)
        if m:
            read = True
            p.kinds.add(kind)
            if check:
                check(p, m, step)
    if not read and re.search(r"\d", line):
        p.claim("unread", f"a sentence no pattern reads: {line[:120]!r}", False)


def problems_of(folder: Path) -> list[Problem]:
    record = json.loads((folder / "problems.json").read_text(encoding="utf-8"))
    key = (folder / "answers.md").read_text(encoding="utf-8")
    sections = re.split(r"^(?=## Problem \d+:)", key, flags=re.M)[1:]
    assert len(sections) == len(record["problems"])
    problems = []
    for section, problem in zip(sections, record["problems"]):
        statement, _, solution = section.partition("\n### Solution to problem")
        solution = "### Solution to problem" + solution
        chunks = re.split(r"^#### \(([a-z])\).*$", solution, flags=re.M)
        parts = {chunks[k]: chunks[k + 1].splitlines() for k in range(1, len(chunks), 2)}
        p = Problem(problem, record["decimals"], statement.splitlines(), parts)
        for line in chunks[0].splitlines():
            read_line(p, line, SOLUTION, None)
        read_problem(p)
        problems.append(p)
    return problems


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> list[Problem]:
    problems = []
    runs = dict(RUNS)
    for name, records in SPECS.items():
        spec = tmp_path_factory.mktemp("specs") / f"{name}.json"
        spec.write_text(json.dumps({"problems": records}), encoding="utf-8")
        runs[f"spec-{name}"] = ["--spec", str(spec)]
        runs[f"spec-{name}-2"] = ["--spec", str(spec), "--decimals", "2"]
    for name, args in runs.items():
        out = tmp_path_factory.mktemp(name)
        assert main([*args, "--practice", "--out", str(out)] if "--spec" not in args
                    else [*args, "--out", str(out)]) == 0, name
        problems += problems_of(out)
    return problems


def test_every_claim_of_the_key_is_true(checked):
    claims = [c for p in checked for c in p.claims]
    false = [c for c in claims if not c.true]
    print(f"{len(claims)} claims checked over {len(checked)} problems, {len(false)} false")
    assert len(claims) > 1000
    assert not false, f"{len(false)} of {len(claims)} claims false:\n" + "\n".join(
        f"  [{c.kind}] {c.where}: {c.what}" for c in false[:60])


def test_every_note_and_every_type_is_met(checked):
    kinds = set().union(*(p.kinds for p in checked))
    templates = Path(__file__).parents[1] / "templates" / "markdown" / "notes"
    assert len(list(templates.glob("*.md.j2"))) == len(NOTE_KINDS), "a note template the test has no pattern for"
    expected = NOTE_KINDS | PROMPT_KINDS | {kind for kind, _, check in SOLUTION + STATEMENT if check}
    assert expected <= kinds, f"never met: {sorted(expected - kinds)}"
    types = {p.record["type"] for p in checked}
    assert types >= set(ALL_TYPES.split(","))
    assert any(p.cross for p in checked) and any(p.decimals == 2 for p in checked)


def test_ties_are_worded_as_ties(checked):
    lines = [line for p in checked for part in p.parts.values() for line in part]
    assert any("attends equally to" in line for line in lines)
    assert any("takes equally" in line for line in lines)
    assert any("just above" in line for line in lines)
