"""Question type "why-scale": why attention divides its scores by √d_k, with the problem's own
numbers.  The derivation first (a choice): for q and k with independent entries of mean 0 and
variance 1, q·k = Σ q_i k_i has mean 0 and variance d_k (each product has variance
E[q_i²] E[k_i²] = 1, and the variances of independent terms add), so its standard deviation
grows as √d_k, and dividing by √d_k brings it back to 1; then those standard deviations for a
stated d_k (op ``spread``).  Then a small Q and K: the scores S = QKᵀ, the scaled S̃ = S/√d_k,
the weights with the scale, A = softmax(S̃), and without it, A_raw = softmax(S), side by side,
the output O = AV; and the lesson (a choice whose right answer is the problem's own numbers):
without the scale each row is nearer one-hot, and the slope a(1 - a) of its largest weight, the
gradient that weight passes back to its score, falls (to almost none where the softmax saturates).

A spec file gives Q, K and V (``type = "why-scale"``) and, as ``stated_dk``, the d_k the
standard deviations are asked for (512 where it gives none).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, Param, QuestionType, register, why_scale_ops
from generator.kinds.questions import TIE, Part, Question, lettered, shuffled_item
from generator.maths import steps
from generator.maths.crosscheck import attention_steps
from generator.maths.engine import Evaluator, Num, Step, run
from generator.maths.exact import shown
from generator.maths.spec import SpecError
from generator.maths.steps import REGISTRY, StepDef, given_def
from generator.rendering.language import N_

NAME = "why-scale"
# The d_k a drawn problem states for the standard deviations: real models' head widths.
STATED = (64, 128, 256, 512, 1024)
DEFAULT_STATED = 512


def register_steps() -> None:
    """The stated d_k (a given entry), the standard deviations worked from it, and the softmax of
    the raw scores, off the main pipeline."""
    for step in (
        given_def("stated_width", "d_k"),
        StepDef("spread", why_scale_ops.SPREAD, ("stated_width",), r"\sigma",
                "sigma = (sd of q.k, sd of q.k / sqrt(d_k))",
                r"$(\sigma(q \cdot k),\ \sigma(q \cdot k / \sqrt{d_k}))$ for "
                r"$d_k = {{ spec.stated_dk }}$", marks=2),
        StepDef("weights_raw", "softmax", ("scores",), r"A_{\mathrm{raw}}", "weights_raw = softmax(scores)",
                r"$A_{\mathrm{raw}} = \operatorname{softmax}(S)$, without the scale", marks=2),
    ):
        steps.register(step, pipeline=False)


def why_scale_plan() -> tuple[StepDef, ...]:
    """Attention's plan from Q, K and V (S, S̃, A, O), then the softmax of the raw scores and the
    standard deviations for the stated d_k."""
    own = ("weights_raw", "stated_width", "spread")
    return (*steps.plan(("Q", "K", "V")), *(REGISTRY[name] for name in own))


def why_scale_question(spec) -> Question:
    """The variance (a choice), the standard deviations for the stated d_k, S and S̃, A and A_raw,
    O = AV, and the lesson (a choice) on the problem's own numbers."""
    num = Evaluator()
    stated = Step("stated_width", "d_k (given)", "given", ((num(sympy.Integer(spec.stated_dk)),),))
    solution = run(why_scale_plan(), spec, {"stated_width": stated}, num)

    def part(task, *names, answer=()):
        marks = tuple(REGISTRY[n].marks for n in names)
        return Part(task, sum(marks), tuple(solution.step(n) for n in names), step_marks=marks,
                    notes=False, answer=answer)

    weights, raw = solution.step("weights"), solution.step("weights_raw")
    lesson = lesson_facts(spec, weights, raw)
    parts = [Part("ws-variance", 1, item=shuffled_item("variance", VARIANCE, spec.id)),
             part("ws-spread", "spread", answer=spread_ratio(solution.step("spread"))),
             part("ws-scores", "scores", "scaled", answer=mean_squares(spec, solution, num)),
             part("ws-weights", "weights", "weights_raw", answer=tops(weights, raw)),
             part("ws-output", "output"),
             Part("ws-lesson", 1, item=lesson_item(spec, lesson, solution.step("scores")), answer=lesson)]
    given = tuple(solution.step(n) for n in ("Q", "K", "V"))
    return Question(NAME, spec, solution, given, lettered(parts))


def spread_ratio(spread: Step) -> tuple[Num, Num, Num]:
    """σ(q·k) for the stated d_k, e^σ and e^1: the ratios of the weights of two scores one
    standard deviation apart, unscaled and scaled."""
    sd = spread.entries[0][0]
    return sd, Num.of(sympy.exp(sd.exact)), Num.of(sympy.E)


def mean_squares(spec, solution, num) -> tuple[Num, ...]:
    """The mean square of the entries of Q and K (their variance about 0), of S's and of S̃'s: the
    derivation's 1, d_k and 1 are what these are on average."""
    def mean_square(entries):
        flat = [x.exact for row in entries for x in row]
        return num(sympy.Add(*(x**2 for x in flat)) / len(flat))

    scores = mean_square(solution.step("scores").entries)
    return (mean_square(solution.step("Q").entries), mean_square(solution.step("K").entries), scores,
            num(scores.exact / spec.d_k))


def _float_num(value: float) -> Num:
    """A number worked in float64 for a note (a slope), printed rounded: its exact form is not a
    rational."""
    return Num(sympy.Float(value, 30), value)


def tops(weights: Step, raw: Step) -> tuple[tuple[Num, Num], ...]:
    """Each row's largest weight, with the scale and without it."""
    return tuple((max(a, key=lambda n: n.value), max(b, key=lambda n: n.value))
                 for a, b in zip(weights.entries, raw.entries))


def lesson_facts(spec, weights: Step, raw: Step) -> tuple:
    """(row, its top key, its largest weight with the scale, without it, the slope a(1 - a) of
    that weight with the scale, without it, the second slope over the first, whether the weight
    without the scale is saturated) for the row whose largest weight the scale lowers most; a
    SpecError when no row has one largest weight."""
    best = None
    for i, (a, b) in enumerate(zip(weights.entries, raw.entries)):
        order = sorted(range(len(a)), key=lambda j: -a[j].value)
        if len(order) < 2 or a[order[0]].value - a[order[1]].value < TIE:
            continue
        rise = b[order[0]].value - a[order[0]].value
        if best is None or rise > best[0]:
            best = (rise, i, order[0])
    if best is None:
        raise SpecError(f"problem {spec.id}: no row of the weights has one largest weight, so the "
                        f"scale changes nothing to compare; give scores that differ within a row")
    _, i, top = best
    scaled, unscaled = weights.entries[i][top], raw.entries[i][top]
    slopes = scaled.value * (1 - scaled.value), unscaled.value * (1 - unscaled.value)
    return (i, top, scaled, unscaled, _float_num(slopes[0]), _float_num(slopes[1]),
            _float_num(slopes[1] / slopes[0]), unscaled.value >= SATURATED)


def lesson_item(spec, facts: tuple, scores: Step):
    """The lesson as a choice: the row's largest weight rising without the scale (right), falling
    (the weights of S/d_k, a real confusion), moving to another key, or nothing changing; each
    holds the row, a key and two weights (the test checks each false of these numbers)."""
    row, top, scaled, unscaled = facts[:4]
    over_dk = _softmax(scores.numeric[row] / spec.d_k)[top]
    other = (top + 1) % spec.n_keys
    choices = [(("sharper", row, top, scaled, unscaled), ""),
               (("flatter", row, top, scaled, _float_num(over_dk)),
                N_(r"without the scale the scores are $\sqrt{d_k}$ times further apart, which sharpens "
                r"the softmax; dividing by $d_k$ instead of $\sqrt{d_k}$ would flatten it")),
               (("other", row, other, scaled, unscaled),
                N_(r"dividing a row's scores by the same positive $\sqrt{d_k}$ keeps their order, so the "
                r"same key gets the largest weight")),
               (("same", row, top, scaled, unscaled),
                N_(r"softmax ignores a constant added to a row, not a row multiplied: the raw scores' "
                r"differences are $\sqrt{d_k}$ times the scaled ones'"))]
    return shuffled_item("lesson", tuple(choices), spec.id)


def _softmax(values: np.ndarray) -> np.ndarray:
    e = np.exp(values - values.max())
    return e / e.sum()


# The derivation, as a choice: Var(q·k) for unit-variance entries, and the real confusions.
VARIANCE = (
    ("$d_k$", ""),
    ("$d_k^2$", N_(r"the standard deviations do not add, the variances do: $d_k$ terms of variance 1 "
                r"make a variance of $d_k$, not $(1 + \dots + 1)^2$")),
    (r"$\sqrt{d_k}$", N_(r"that is the standard deviation of $q \cdot k$; its variance is $d_k$")),
    ("$1$", N_(r"each product $q_i k_i$ has variance 1, but $q \cdot k$ adds $d_k$ independent "
            r"products, and their variances add up")),
)
DERIVATION = (
    r"Each product has mean $E[q_i k_i] = E[q_i]\,E[k_i] = 0$ and variance $E[q_i^2 k_i^2] = "
    r"E[q_i^2]\,E[k_i^2] = 1 \cdot 1 = 1$ ($q_i$ and $k_i$ independent); the $d_k$ products are "
    r"independent, so their variances add: $\operatorname{Var}(q \cdot k) = d_k$. Its standard "
    r"deviation is $\sqrt{d_k}$, and $\operatorname{Var}(q \cdot k / \sqrt{d_k}) = d_k / d_k = 1$: "
    r"dividing by $\sqrt{d_k}$ keeps the scores' spread at 1 whatever the width.")


def read_stated(value, spec, where: str) -> int:
    """The d_k the standard deviations are asked for: a whole number from 2 to 10^6."""
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 10**6:
        raise SpecError(f"{where}: stated_dk must be a whole number from 2 to 1000000, got {shown(value)}")
    return value


PARAMS = (Param("stated_dk", read_stated, default=DEFAULT_STATED),)


def _check(spec) -> str | None:
    """Q, K and V given, no mask, the usual scale, a d_k to scale by and two keys to weigh."""
    if spec.from_embeddings:
        return "type why-scale gives Q, K and V (its lesson is the scores' spread), not X and the weights"
    if spec.masked:
        return (f"type why-scale takes no mask (it compares the weights with and without the scale), "
                f"not {spec.mask}")
    if spec.scale is not None:
        return "type why-scale is about the usual scale 1/sqrt(d_k); it takes no scale"
    if spec.d_k < 2:
        return "type why-scale needs d_k of 2 or more (Q and K with 2 columns or more): d_k = 1 scales by 1"
    if spec.n_keys < 2:
        return "type why-scale needs 2 keys or more (K with 2 rows or more): one key's weight is 1"
    return None


# Drawn: 2 queries and 2 keys, d_v = 2; entries that look like mean 0 and variance 1: whole
# numbers (mostly ±1) at easy and medium, one-place decimals of a standard normal at hard.
SIZES = {"easy": dict(tokens=(2, 2), d_k=4, d_v=2, embeddings="integer", weights="integer"),
         "medium": dict(tokens=(2, 2), d_k=6, d_v=2, embeddings="integer", weights="integer"),
         "hard": dict(tokens=(2, 2), d_k=8, d_v=2, embeddings="decimal", weights="decimal")}
WHOLE = (-2, -1, 0, 1, 2)
WHOLE_ODDS = (0.05, 0.4, 0.1, 0.4, 0.05)  # variance 0.8 + 0.4 = 1.2, mean 0
RAW_BOUND = 8.0  # e^8 ≈ 2981: as far as a raw score's exponential should go by hand
LESSON_GAP = 0.1  # the largest weight rises by at least this much without the scale
# A weight this near 1 (its slope a(1 - a) at most 0.0099) is saturated: its softmax passes back
# almost no gradient, and the key says training through it stalls; never of a weight below it.
SATURATED = 0.99


def draw_options(options):
    """The difficulty's sizes, where the teacher's options keep the preset's; Q, K and V given,
    no mask."""
    from generator.kinds.sampling import PRESETS  # the sampler reads this registry: not at import

    preset = PRESETS[options.difficulty]
    sizes = {key: value for key, value in SIZES[options.difficulty].items()
             if getattr(options, key) == getattr(preset, key)}
    return replace(options, mask="none", given="QKV", **sizes)


def draw_params(rng, candidate, decimals: int) -> dict | None:
    """Q, K and V of the candidate's sizes, drawn to look like mean 0 and variance 1 (decimals where
    the candidate's are), and a stated d_k; None where the weights are not readable or the lesson
    does not show."""
    tokens, d_k, d_v = len(candidate.x), candidate.w_q.shape[1], candidate.w_v.shape[1]
    decimal = bool(np.any(candidate.w_q != np.round(candidate.w_q)))
    q, k, v = (_entries(rng, decimal, (tokens, width)) for width in (d_k, d_k, d_v))
    if not worthy(q, k, v, decimals):
        return None
    # held as X = I and W_Q = Q, ..., as the sampler holds a candidate whose Q, K and V are given
    # (``projections_drawn``): the spec then gives XW_Q = Q, XW_K = K and XW_V = V
    return {"matrices": {"X": _exact(np.eye(tokens)),
                         **{f"W_{name}": _exact(m) for name, m in zip("QKV", (q, k, v))}},
            "stated_dk": STATED[int(rng.integers(len(STATED)))]}


def _entries(rng, decimal: bool, shape) -> np.ndarray:
    if decimal:
        return np.clip(np.round(rng.standard_normal(shape), 1), -2.5, 2.5)
    return rng.choice(WHOLE, p=WHOLE_ODDS, size=shape).astype(float)


def _exact(matrix: np.ndarray):
    return tuple(tuple(sympy.Rational(int(round(x * 10)), 10) for x in row) for row in matrix)


def worthy(q, k, v, decimals: int) -> bool:
    """No zero row or column, nor repeated row, of Q, K or V, no constant column of V (O's would be too); raw
    scores within e^8, no row or column of them 0; both tables of weights readable (no weight
    shown as 0 or 1, no uniform or repeated row); no zero row or column of O; and some row's
    largest weight at least 0.1 higher without the scale."""
    if not all(_rows_apart(m) and _no_zero_lines(m) for m in (q, k, v)) or np.any(np.ptp(v, axis=0) == 0):
        return False
    steps = attention_steps({"Q": q, "K": k, "V": v})
    scores, weights = steps["scores"], steps["weights"]
    raw = np.exp(scores - scores.max(axis=1, keepdims=True))
    raw /= raw.sum(axis=1, keepdims=True)
    return (np.abs(scores).max() <= RAW_BOUND and _no_zero_lines(scores) and _no_zero_lines(steps["output"])
            and _readable(weights, decimals) and _readable(raw, decimals)
            and (raw.max(axis=1) - weights.max(axis=1)).max() >= LESSON_GAP)


def _no_zero_lines(matrix) -> bool:
    nonzero = np.abs(matrix) > 1e-9
    return bool(nonzero.any(axis=0).all() and nonzero.any(axis=1).all())


def _rows_apart(matrix) -> bool:
    rows = matrix.tolist()
    return bool(np.all(np.abs(matrix).max(axis=1) > 0)) and len({tuple(r) for r in rows}) == len(rows)


def _readable(weights, decimals: int) -> bool:
    half = 0.5 * 10.0**-decimals
    return (weights.min() > half and weights.max() < 1 - half and bool(np.all(np.ptp(weights, axis=1) > 1e-9))
            and _rows_apart(weights))


STATEMENT = (
    r"Attention divides its scores by $\sqrt{d_k}$. This problem asks why, first in general, then "
    r"with numbers. Below, the rows of $Q$ are {{ spec.n_queries }} queries and the rows of $K$ and "
    r"$V$ are {{ spec.n_keys }} keys and their values; $d_k = {{ spec.d_k }}$ and "
    r"$d_v = {{ spec.d_v }}$.",
    GIVEN,
    "Show every intermediate result.")
PROMPTS = {
    "ws-variance": r"Let $q$ and $k$ be vectors of $d_k$ entries, all independent, each of mean 0 "
                   r"and variance 1. What is the variance of the score $q \cdot k = \sum_i q_i k_i$?",
    "ws-spread": r"A model has $d_k = {{ spec.stated_dk }}$, with $q$ and $k$ as in (a). Write, in this "
                 r"order, $\sigma(q \cdot k)$ and $\sigma(q \cdot k/\sqrt{d_k})$: the standard "
                 r"deviation of a score without the scale, and with it.",
    "ws-scores": r"Compute the raw scores $S = QK^{\top}$ and the scaled scores $\tilde{S} = S/\sqrt{d_k}$.",
    "ws-weights": r"Apply softmax along each row to both: $A = \operatorname{softmax}(\tilde{S})$, with "
                  r"the scale, and $A_{\mathrm{raw}} = \operatorname{softmax}(S)$, without it. Show the "
                  r"exponentials, their sums and the quotients.",
    "ws-output": r"Compute the output $O = AV$ (with the scale).",
    "ws-lesson": r"Compare $A$ and $A_{\mathrm{raw}}$ row by row. Which is true of these numbers?",
}
AFTER = {
    "ws-spread": (
        r"{% set sd, ratio, e = part.answer %}Two scores one "
        r"standard deviation apart give weights in the ratio $e^{\sigma}$: "
        r"$e^{\sqrt{ {{- spec.stated_dk -}} }} \approx {{ ratio | num }}$ without the scale, against "
        r"$e^{1} \approx {{ e | num }}$ with it. Unscaled, the softmax would put nearly all of a row's "
        r"weight on one key."),
    "ws-scores": (
        r"{% set m = part.answer %}The problem's own numbers, as a small sample: the entries of $Q$ "
        r"and $K$ have mean squares ${{ m[0] | num }}$ and ${{ m[1] | num }}$ (variance 1 about 0 "
        r"would make them 1 on average); the {{ spec.n_queries * spec.n_keys }} scores of $S$ have "
        r"mean square ${{ m[2] | num }}$, where the derivation's $d_k = {{ spec.d_k }}$ is the "
        r"average over many $q$ and $k$; those of $\tilde{S}$, ${{ m[3] | num }}$ (on average 1)."),
    "ws-weights": (
        r"Side by side, each row's largest weight: {% for scaled, raw in part.answer %}row "
        r"{{ loop.index }}, ${{ scaled | num }}$ with the scale and ${{ raw | num }}$ without"
        r"{% if not loop.last %}; {% else %}.{% endif %}{% endfor %} Dividing by $\sqrt{d_k}$ brings a row's "
        r"scores $\sqrt{d_k}$ times closer together, and its weights flatten with them."),
    "ws-output": r"This is what PyTorch's scaled_dot_product_attention gives for $Q$, $K$ and $V$.",
}
# A choice says what happens to a row, never its numbers: those are part (d)'s answers, which
# the question sheet must not give away; the key says them.
CHOICE = (
    r"{% set item = part.item %}{% if item.topic == 'variance' %}{{ choice }}{% else %}"
    r"{% set kind, row, key, a, b = choice %}"
    r"{% if kind == 'sharper' %}Without the scale, row {{ row + 1 }}'s largest weight is larger: "
    r"the row is nearer one-hot."
    r"{% elif kind == 'flatter' %}Without the scale, row {{ row + 1 }}'s largest weight is smaller: "
    r"the row is flatter."
    r"{% elif kind == 'other' %}Without the scale, row {{ row + 1 }} gives its largest weight to key "
    r"{{ key + 1 }} instead."
    r"{% else %}Nothing changes: softmax depends only on the differences between a row's scores."
    r"{% endif %}{% endif %}")


def choice_key(why: str) -> str:
    """Prose for a choice's key: the right choice as the paper writes it (``CHOICE``), why, and
    the slip behind each wrong choice."""
    return (r"{% set item = part.item %}{% set choice = item.choices[item.answer] %}"
            r"**Answer: ({{ 'ABCDEFGHIJKL'[item.answer] }})** " + CHOICE
            + r"{% if item.topic == 'variance' %}.{% endif %} " + why + r" Where the others go wrong:"
            r"{% for letter, slip in zip('ABCDEFGHIJKL', item.slips) if slip %} ({{ letter }}) "
            r"{{ slip }}{% if not loop.last %};{% else %}.{% endif %}{% endfor %}")


VARIANCE_KEY = choice_key(DERIVATION)
# The lesson's key: the slope a(1 - a) of the row's largest weight, where it falls (it does when
# that weight is above 1/2 with the scale, as with two keys), and stalling only where the weight
# without the scale is saturated (``SATURATED``): every sentence true of the problem's numbers.
# Its slopes are worked from the weights as printed, and their ratio from the slopes as printed
# (``as_printed``): a reader who checks the sentence on a calculator gets its numbers.
LESSON_KEY = choice_key(
    r"{% set f = part.answer %}{% set a, b = f[2] | as_printed, f[3] | as_printed %}"
    r"{% set s1, s2 = (a * (1 - a)) | as_printed, (b * (1 - b)) | as_printed %}"
    r"Here it rises from ${{ f[2] | num }}$ with the scale to "
    r"${{ f[3] | num }}$ without it, on key {{ f[1] + 1 }}.{% if f[5].value < f[4].value %} "
    r"The slope of that weight, "
    r"$\partial a / \partial s = a(1 - a)$ for its own score, falls from ${{ s1 }}$ with the "
    r"scale to ${{ s2 }}$ without it: the gradient that weight passes back to its score is "
    r"${{ (s2 / s1) | as_printed }}$ times as large without the scale{% if f[7] %}, and a softmax this near "
    r"one-hot passes back almost none: training through it stalls{% endif %}.{% endif %}")


register(QuestionType(
    NAME, why_scale_question, "Why attention scales its scores", STATEMENT, prompts=PROMPTS,
    keys={"ws-variance": VARIANCE_KEY, "ws-lesson": LESSON_KEY}, after=AFTER,
    choice=CHOICE, params=PARAMS, check=_check, min_tokens=2, draw_options=draw_options,
    draw_params=draw_params,
    not_drawable=lambda options: ("it compares softmax of the raw scores, whose exponentials go "
                                  "beyond the table of e^x: a calculator's work"
                                  if options.no_calculator else None),
    in_default_mix=False, shrinks=()))  # 2 queries over 2 keys: 12 to 13 minutes as drawn


why_scale_ops.register()
register_steps()
