"""Question type "softmax-jacobian": one row of attention weights a and the gradient g that
reaches it; write softmax's Jacobian J = diag(a) - aᵀa, apply it to g, and say why each
row of J sums to 0."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import SHOWN, QuestionType, register
from generator.kinds.backward import short_weights, upstream_and_steps, weights_row
from generator.kinds.places import PLACES, rounded_units
from generator.kinds.questions import Part, Question, answer_with_slips, lettered, shuffled_item
from generator.kinds.row import ROW
from generator.maths.engine import Step, run, solve
from generator.maths.steps import REGISTRY
from generator.rendering.language import N_

REASONS = (
    (N_("The weights of a row always add up to 1: whatever a change of the scores gives one "
     "weight, the others give up, so the changes of a row's weights add up to 0."), ""),
    (N_("$J$ is symmetric, and the rows of a symmetric matrix sum to 0."),
     N_("symmetry alone says nothing about the sums: the identity is symmetric")),
    (N_("Softmax is linear in the scores, so its derivative has no constant part."),
     N_("softmax is not linear: its derivative J depends on the weights")),
    (N_("The diagonal entries are positive and the others negative, so they always cancel."),
     N_("the signs alone do not make them cancel; they cancel because the weights sum to 1")),
)


def jacobian_question(spec) -> Question:
    """A softmax-jacobian question: the row of weights a and its gradient g, given; J and Jg worked;
    and why each row of J sums to 0, as a multiple choice."""
    solution = solve(spec)
    a = weights_row(spec, solution, "arow")
    g = Step("grow", "g (given)", "given", (solution.step("dweights").entries[spec.row],))
    worked = run(tuple(REGISTRY[n] for n in ("arow", "grow", "jacobian", "jvp")), spec,
                 known={"arow": a, "grow": g})
    why = shuffled_item("reason", REASONS, spec.id)
    parts = lettered([Part("jacobian", 2, (worked.step("jacobian"),), step_marks=(2,)),
                      Part("jvp", 2, (worked.step("jvp"),), step_marks=(2,)),
                      Part("row-sums", 1, item=why)])
    return Question("softmax-jacobian", spec, solution, (a, g), parts,
                    shown=(("", "a", a), ("", "g", g)), worked_by_parts=(("", worked),))


def draw_row_and_upstream(rng, candidate, decimals: int) -> dict | None:
    """dO as for the backward type, and a row whose weights are not all but one near 0. The
    row is given as the paper prints it, to ``decimals`` places, and worked exactly from
    there (the student's J is then the key's, digit for digit): a row whose rounded weights
    would not add up to 1 is not drawn."""
    drawn = upstream_and_steps(rng, candidate, decimals)
    if drawn is None:
        return None
    params, steps = drawn
    rows = [i for i, row in enumerate(steps["weights"]) if sorted(row)[-2] >= 10.0**-decimals * 10
            and sum(rounded_units(list(row), decimals)) == 10**decimals]
    return ({**params, "row": rows[int(rng.integers(len(rows)))], "places": decimals}
            if rows else None)


def _check(spec) -> str | None:
    if "X_dec" in spec.matrices:  # its row comes from the backward pass, whose dX takes one X
        return ("type softmax-jacobian's gradient comes from the backward pass, whose dX adds up "
                "what reaches one X; cross-attention's X_dec and X_enc are two sequences: give Q, "
                "K and V instead")
    return None


register(QuestionType(
    "softmax-jacobian", jacobian_question, "The softmax Jacobian, by hand",
    ("Token {{ spec.row + 1 }}'s row of attention weights $a${% if spec.places %} (to "
     "{{ spec.places }} places: work from them exactly){% endif %}, "
     "and the gradient "
     r"$g = \partial L / \partial a$ that reaches it from above:", SHOWN,
     "Softmax couples a row: moving one score moves every weight of the row."),
    prompts={"row-sums": "Why does every row of $J$ sum to 0?"},
    keys={"row-sums": answer_with_slips(r"Indeed row $i$ of $J$ adds up to $a_i - a_i \sum_j a_j "
                                        r"= a_i\,(1 - 1) = 0$.")},
    after={"jvp": r"Entry by entry this is $a_j\,(g_j - \sum_k a_k g_k)$: the softmax backward "
                  r"step of the backward pass, which never writes $J$ out."},
    choice="{{ choice }}", params=(ROW, PLACES),  # that row of weights, to so many places
    matrices=("dO",), min_tokens=2, check=_check,
    draw_options=lambda options: replace(options, mask="none"),
    draw_params=draw_row_and_upstream, in_default_mix=False, no_calculator=short_weights))
