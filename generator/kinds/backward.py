"""Question type "backward": push an upstream gradient dO back through attention by hand,
dV = Aᵀ dO, dA = dO Vᵀ, the softmax backward row by row, the scaling, dQ = dS K and
dK = dSᵀ Q (and, where X is given, dW_Q, dW_K, dW_V and dX), every step with its working."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.places import PLACES, SHORT_PLACES, rounded_units, to_places
from generator.kinds.questions import (
    SETUP,
    TIE,
    Part,
    Question,
    answer_with_slips,
    given_steps,
    lettered,
    shuffled_item,
    step_parts,
)
from generator.kinds.row import ROW
from generator.maths.crosscheck import attention_steps
from generator.maths.engine import Solution, Step, run, solve
from generator.maths.exact import shown as shown_text
from generator.maths.spec import SpecError
from generator.maths.steps import PIPELINE, REGISTRY, given_def, symbol
from generator.maths.worthiness import gradients_are_worthy
from generator.rendering.language import N_

# Steps asked together in one part; every other gradient of the plan is a part of its own.
TOGETHER = (("dW_Q", "dW_K", "dW_V"), ("dX_Q", "dX_K", "dX_V", "dX"))
FORWARD = ("Q", "K", "V", "weights")  # what the backward pass reads of the forward one
ROW_READS = ("V", "weights", "dO")  # what dV and one row of dS read: only these are printed
UPSTREAM = (-1, -0.5, 0, 0.5, 1)  # the entries a drawn dO takes


def backward_question(spec) -> Question:
    """Every gradient of the plan, a part each (dW and dX in one part each); or, with ``row``,
    dV and that row of dS alone (its dA, through softmax, through the scaling); then the
    choice parts the spec asks (``ask``; without it, those the engine can show)."""
    solution = solve(spec)
    printed = FORWARD if spec.row is None else ROW_READS  # X and W_Q... or Q and K unused
    shown = tuple(("", symbol(name), solution.step(name)) for name in FORWARD
                  if solution.step(name).kind != "given" and name in printed)
    given = tuple(s for s in given_steps(solution) if spec.row is None or s.name in ROW_READS)
    if spec.places is not None:
        shown += ((r"Row {{ spec.row + 1 }} of $A$ to {{ spec.places }} places", "a",
                   weights_row(spec, solution)),)
    if spec.row is None:
        parts, worked = [replace(p, notes=False) for p in gradient_parts(solution)], ()
    else:
        row = row_solution(spec, solution)
        parts = [replace(step_parts(solution, (("dV",),))[0], notes=False),
                 Part("drow", sum(REGISTRY[s.name].marks for s in row.plan if not s.is_given),
                      tuple(s for d, s in zip(row.plan, row.steps) if not d.is_given), notes=False,
                      step_marks=tuple(REGISTRY[s.name].marks for s in row.plan if not s.is_given))]
        worked = (("", solution), ("", row))
    parts += choice_parts(spec, solution)
    return Question("backward", spec, solution, given, lettered(parts), shown=shown,
                    worked_by_parts=worked)


def gradient_parts(solution) -> list[Part]:
    """A part for each gradient after dO in the plan, the weights' gradients together and dX's paths
    together (``TOGETHER``)."""
    start = PIPELINE.index("dO")
    names = [s.name for s in solution.plan if not s.is_given and PIPELINE.index(s.name) > start]
    groups, taken = [], set()
    for name in names:
        if name in taken:
            continue
        group = next((g for g in TOGETHER if name in g), (name,))
        group = tuple(n for n in group if n in names)
        groups.append(group)
        taken.update(group)
    return step_parts(solution, tuple(groups))


def row_solution(spec, solution) -> Solution:
    """Row ``spec.row`` of dA = dO V^T, pushed back through softmax and the scaling, from that
    row of A and of dO."""
    known = {"weights_row": weights_row(spec, solution),
             "dO_row": Step("dO_row", "do (given)", "given", (solution.step("dO").entries[spec.row],)),
             "V": solution.step("V")}
    names = ("dweights_row", "dscaled_row") + (() if spec.unscaled else ("dscores_row",))
    return run((*(given_def(name) for name in known), *(REGISTRY[n] for n in names)), spec, known)


def weights_row(spec, solution, name: str = "weights_row") -> Step:
    """Row ``spec.row`` of A, as the softmax backward step reads it: exact, or (``places``,
    no calculator) rounded to that many places, so that a_j times a gradient is a product
    with a short factor; the steps after it are worked exactly from the rounded row."""
    row = solution.step("weights").entries[spec.row]
    if spec.places is None:
        return Step(name, "a (given)", "given", (row,))
    short = to_places(row, spec.places)
    return Step(name, f"a (row {spec.row + 1} of A to {spec.places} places)", "given", (short,))


def short_weights(rng, candidate, params: dict, decimals: int) -> dict | None:
    """Without a calculator: the lean part set (dV and one row of dS), from that row of A
    given to two places; redrawn where the rounded row would not add up to 1 (its row of
    dS would not add up to 0) or a weight would show there as 0 or 1."""
    row = params.get("row")
    if row is None:
        focus = focus_row(rng, candidate, params, decimals)
        if focus is None:
            return None
        row = focus["row"]
    upstream = np.array([[float(x) for x in r] for r in params["matrices"]["dO"]])
    weights = attention_steps({**candidate.given, "dO": upstream}, candidate.mask,
                              candidate.scale)["weights"][row]
    units = rounded_units(list(weights), SHORT_PLACES)
    if sum(units) != 10**SHORT_PLACES or any(
            u in (0, 10**SHORT_PLACES) for u, w in zip(units, weights) if w > 0):
        return None
    return {"row": row, "places": SHORT_PLACES}


CHOICES = ("why-scale", "ignored-key")


def choice_parts(spec, solution) -> list[Part]:
    """The choice parts asked: ``spec.ask``, or where it is not set, those the engine shows."""
    found = {"why-scale": why_scale(spec, solution), "ignored-key": ignored_key(spec, solution)}
    asked = spec.ask if spec.ask is not None else tuple(c for c in CHOICES if found[c])
    for name in asked:
        if not found[name]:
            raise SpecError(f"problem {spec.id}: ask {name!r} cannot be asked of this problem "
                            f"(the engine does not show it)")
    return [Part(name, 1, item=found[name][0], answer=found[name][1]) for name in asked]


# Why 1/sqrt(d_k) keeps gradients alive, and what students think instead.
WHY_SCALE = (
    (N_("Softmax saturates: the nearer a row $a$ of weights is to one-hot, the smaller "
     r"$a_j\,(\mathrm{d}a_j - \sum_k a_k\, \mathrm{d}a_k)$ gets, so larger "
     "scores pass back less gradient."), ""),
    (N_("Larger scores pass back more gradient: the gradient grows with the scores."),
     N_("the scores grow, but the gradient through softmax shrinks as the weights saturate")),
    (N_("Nothing changes: scaling is linear, so it only scales the gradient by the same factor."),
     N_("the scaling is linear, but softmax after it is not")),
    (N_("The gradient becomes exactly 0 without scaling."), N_("it shrinks, but stays above 0")),
)


# What reaches the values of a key that (almost) no query attends to; %(key)s is its number.
IGNORED = (
    (N_(r"It is the smallest: row %(key)s of $\mathrm{d}V = A^{\top} \mathrm{d}O$ adds up the rows of "
     r"$\mathrm{d}O$, each times how much that query attends to key %(key)s, and all those weights "
     r"are small."), ""),
    (N_("It is the largest: the key nobody attends to has the most to learn."),
     N_("a value row only learns as much as it is used")),
    (N_(r"It is row %(key)s of $\mathrm{d}O$."),
     N_(r"that would need column %(key)s of $A$ to be the unit vector $e_{%(key)s}$ (1 in row "
        r"%(key)s, 0 elsewhere)")),
    (N_("It is exactly 0."), N_("small weights are not zero: a little gradient still arrives")),
)


def ignored_key(spec, solution):
    """The least-attended key's choice part (``least_attended_key``), or None."""
    weights = solution.step("weights").numeric
    key = least_attended_key(weights, solution.step("dV").numeric)
    if key is None:
        return None
    column = tuple(row[key] for row in solution.step("weights").entries)  # added up as printed
    return shuffled_item("ignored-key", IGNORED, f"{spec.id}:dV"), (key, weights.sum(axis=0)[key], column)


def least_attended_key(weights: np.ndarray, dv: np.ndarray) -> int | None:
    """The key with the least attention (its column of A), when it alone has the least, its
    row of dV is indeed the smallest (alone, and not 0: a key that no query sees under a mask
    gets exactly none) and that key gets well under an even share."""
    attention, sizes = weights.sum(axis=0), np.abs(dv).sum(axis=1)
    key = int(np.argmin(attention))
    if (len(sizes) < 2 or not _least_alone(attention, key) or not _least_alone(sizes, key)
            or sizes[key] < TIE or attention[key] > 0.5 * attention.mean()):
        return None
    return key


def _least_alone(values: np.ndarray, index: int) -> bool:
    """Whether ``values[index]`` is the smallest, with no other as small."""
    return int(np.sum(values < values[index] + TIE)) == 1 and values[index] == values.min()


def why_scale(spec, solution):
    """Where the usual 1/sqrt(d_k) is used, the row whose softmax gradient scaling keeps
    most alive, when the engine shows it does (without scaling that row passes back less)."""
    if spec.scale is not None or spec.d_k < 2:
        return None
    given = {step.name: step.numeric for step in solution.steps if step.kind == "given"}
    found = row_kept_alive(given, solution.step("dscaled").numeric, spec.mask)
    if found is None:
        return None
    row, raw, kept, lost = found
    item = shuffled_item("why-scale", WHY_SCALE, spec.id)
    # the row of dS~ the key prints (every row, or the row asked) is added up as printed
    printed = spec.row is None or (spec.row == row and spec.places is None)  # not from a rounded a
    stated = solution.step("dscaled").entries[row] if printed else kept[row]
    return item, (row, solution.step("weights").numeric[row].max(), raw["weights"][row].max(),
                  kept[row], lost[row], stated)


def row_kept_alive(given: dict, dscaled: np.ndarray, mask: str):
    """The row whose softmax gradient the scaling keeps most alive, with the same problem not
    scaled (numpy) and both rows' sizes; None when scaling keeps no row more alive."""
    raw = attention_steps(given, mask, 1.0)
    kept = np.abs(dscaled).sum(axis=1)
    lost = np.abs(raw["dscaled"]).sum(axis=1)
    rows = [i for i in range(len(kept)) if lost[i] < kept[i] and kept[i] > 1e-4]
    if not rows:
        return None
    return max(rows, key=lambda i: kept[i] - lost[i]), raw, kept, lost


def draw_upstream(rng, candidate, decimals: int, ask=None) -> dict | None:
    """dO, and the choice parts asked: those the engine shows, or (every version like the
    first) exactly ``ask``, redrawn where one of them cannot be shown."""
    drawn = upstream_and_steps(rng, candidate, decimals)
    if drawn is None:
        return None
    params, steps = drawn
    if not gradients_are_worthy(steps, candidate.mask):
        return None
    shown = {"why-scale": candidate.scale is None and candidate.w_q.shape[1] >= 2 and row_kept_alive(
                 {name: steps[name] for name in (*candidate.given, "dO")}, steps["dscaled"],
                 candidate.mask) is not None,
             "ignored-key": least_attended_key(steps["weights"], steps["dV"]) is not None}
    if ask is not None and not all(shown[name] for name in ask):
        return None
    return {**params, "ask": tuple(c for c in CHOICES if shown[c]) if ask is None else tuple(ask)}


def focus_row(rng, candidate, params: dict, decimals: int) -> dict | None:
    """The lean part set: dV and one row of dS, a row whose softmax gradient shows."""
    upstream = np.array([[float(x) for x in row] for row in params["matrices"]["dO"]])
    steps = attention_steps({**candidate.given, "dO": upstream}, candidate.mask, candidate.scale)
    rows = [i for i, row in enumerate(steps["dscaled"]) if np.abs(row).max() >= 10.0**-decimals]
    return {"row": rows[int(rng.integers(len(rows)))]} if rows else None


def read_ask(ask, spec, where: str) -> tuple[str, ...]:
    """The spec file's ``ask``: a list of the choice parts (``CHOICES``), each once."""
    if not isinstance(ask, list) or any(name not in CHOICES for name in ask):
        raise SpecError(f"{where}: ask must be a list of {' and '.join(CHOICES)}, got {shown_text(ask)}")
    return tuple(dict.fromkeys(ask))


# A backward question's own keys: ``row`` (dV and that row of dS alone; without it, every
# gradient), ``ask`` (its choice parts, a list of why-scale and ignored-key; without it,
# those the engine shows) and ``places`` (that row of A given to so many places).
PARAMS = (replace(ROW, default=None), Param("ask", read_ask, write=list), PLACES)


def _check(spec) -> str | None:
    if "X_dec" in spec.matrices:
        return ("type backward's dX adds up what reaches one X through W_Q, W_K and W_V, and "
                "cross-attention's X_dec and X_enc are two sequences; give Q, K and V instead")
    if spec.places is not None and spec.row is None:
        return "places gives one row of A to that many places; say which (row)"
    if spec.mask not in ("none", "causal"):
        return f"type backward takes no mask but causal (got mask {spec.mask})"
    return None


def _causal_at_most(options):
    """A mixed set's backward questions are masked causally or not at all, as they always were."""
    return replace(options, mask="none-or-causal") if options.mask == "mixed" else options


def _not_drawable(options) -> str | None:
    if options.mask not in ("none", "causal", "mixed", "none-or-causal"):
        return f"type backward takes no mask but causal (got --mask {options.mask})"
    return None


def upstream_and_steps(rng, candidate, decimals: int) -> tuple[dict, dict] | None:
    """dO of small halves, no row of it zero, and a softmax gradient that shows at the
    printed decimals (weights of 0 and 1 would pass no gradient back); with the candidate's
    steps in numpy, for a type that chooses more from them."""
    rows, columns = len(candidate.x), candidate.w_v.shape[1]
    upstream = rng.choice(UPSTREAM, size=(rows, columns))
    if not np.abs(upstream).sum(axis=1).all():
        return None
    steps = attention_steps({**candidate.given, "dO": upstream}, candidate.mask, candidate.scale)
    if np.abs(steps["dscaled"]).max() < 10.0**-decimals:
        return None
    exact = tuple(tuple(sympy.Rational(int(round(2 * v)), 2) for v in row) for row in upstream)
    return {"matrices": {"dO": exact}}, steps


register(QuestionType(
    "backward", backward_question, "Backpropagation through attention",
    # With ``row`` only V, A and dO are printed: the setup names V alone (Q and K are not given).
    (SETUP.replace("{% if spec.from_embeddings %}", r"{% if spec.row is not none %}The rows of $V$ are the "
                   r"values of {{ spec.n_keys }} {% if spec.n_keys == 1 %}key{% else %}keys{% endif %}; "
                   r"{% elif spec.from_embeddings %}", 1), GIVEN, "The forward pass gives", SHOWN,
     r"A loss $L$ has the upstream gradient $\mathrm{d}O = \partial L / \partial O$ given above "
     r"(for $L = \sum_{ij} O_{ij} G_{ij}$ it is $G$). Push it back through the attention, one "
     r"gradient at a time, in order."),
    choice="{{ choice | filled(key=part.answer[0] + 1) }}",  # an ignored key's choices name it
    keys={"why-scale": answer_with_slips(),
          "ignored-key": answer_with_slips(filled=" | filled(key=part.answer[0] + 1)")},
    prompts={"why-scale": "{% if spec.cross %}Query{% else %}Token{% endif %} {{ part.answer[0] + 1 }}'s "
                          "largest weight is "
                          "${{ part.answer[1] | fixed }}$; without the scaling by "
                          "$1/\\sqrt{d_k}$ it would be ${{ part.answer[2] | fixed }}$, "
                          "and its row of $\\mathrm{d}\\tilde{S}$ would "
                          "add up (in size) to ${{ part.answer[4] | fixed }}$ instead of "
                          "${{ part.answer[5] | total(size=true) }}$. Why?",
             "ignored-key": "Key {{ part.answer[0] + 1 }} gets the least attention: its column of $A$ "
                            "adds up to ${{ part.answer[2] | total }}$. What is true of row "
                            "{{ part.answer[0] + 1 }} of $\\mathrm{d}V$?",
             "drow": r"Now query {{ spec.row + 1 }} alone. {% if spec.places %}With $a$, row "
                     r"{{ spec.row + 1 }} of $A$ to {{ spec.places }} places as given above (work "
                     r"from it exactly), and $\mathrm{d}o$, row "
                     r"{{ spec.row + 1 }} of $\mathrm{d}O${% else %}With $a$ and $\mathrm{d}o$, row "
                     r"{{ spec.row + 1 }} of $A$ and of $\mathrm{d}O${% endif %}, compute $\mathrm{d}a = "
                     r"\mathrm{d}o\, V^{\top}$ (row {{ spec.row + 1 }} of $\mathrm{d}A$), push it "
                     r"back through softmax, $\mathrm{d}\tilde{s}_j = a_j\,(\mathrm{d}a_j - \sum_k "
                     r"a_k\, \mathrm{d}a_k)${% if not spec.unscaled %}, and then through the scaling: "
                     r"$\mathrm{d}s$, row {{ spec.row + 1 }} of $\mathrm{d}S${% endif %}.",
             "dW_Q": r"Compute the gradients of the projections: $\mathrm{d}W_Q = X^{\top} "
                     r"\mathrm{d}Q$, $\mathrm{d}W_K = X^{\top} \mathrm{d}K$ and $\mathrm{d}W_V = "
                     r"X^{\top} \mathrm{d}V$.",
             "dX_Q": r"Compute $\mathrm{d}X$, one path at a time: $\mathrm{d}X^{(Q)} = \mathrm{d}Q\, "
                     r"W_Q^{\top}$, $\mathrm{d}X^{(K)} = \mathrm{d}K\, W_K^{\top}$, $\mathrm{d}X^{(V)} = "
                     r"\mathrm{d}V\, W_V^{\top}$, then their sum: $X$ feeds all three projections."},
    params=PARAMS, check=_check, matrices=("dO",),
    draw_params=draw_upstream, draw_options=_causal_at_most, not_drawable=_not_drawable,
    in_default_mix=False, shrinks=("given", "tokens", "focus", "d_v", "d_k", "fewer-tokens"),
    focus=focus_row, shared=("ask",), no_calculator=short_weights))
