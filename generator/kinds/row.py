"""Question type "row": one query's row of raw scores, scaled and put through softmax by
hand; which key gets the most attention?"""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import SHOWN, Param, QuestionType, register
from generator.kinds.questions import ConceptItem, Part, Question, lettered, the_top_key
from generator.maths.engine import Solution, Step, run, solve
from generator.maths.spec import one_based
from generator.maths.steps import plan
from generator.maths.worthiness import clear_top_tokens


def row_question(spec) -> Question:
    """Under a causal mask the row holds only the keys the query may see (the others get
    weight 0), so the row's own plan has no mask."""
    solution = solve(spec)
    scores = solution.step("scores").entries[spec.row]
    visible = spec.row + 1 if spec.mask == "causal" else len(scores)
    row = Step("scores", "one row of scores (given)", "given", (scores[:visible],))
    worked = as_row_of_the_matrix(run(plan(("scores",), scaled=not spec.unscaled,
                                           through="weights"), spec, known={"scores": row}),
                                  spec.row)
    weights = worked.step("weights")
    top = the_top_key(weights.entries[0], spec)
    scaling = [] if spec.unscaled else [Part("row-scaled", 1, (worked.step("scaled"),), notes=False)]
    keys = ConceptItem("top-key", tuple(range(weights.shape[1])), top, largest_of_grid=True)
    parts = lettered([*scaling, Part("row-weights", 3 + spec.unscaled, (weights,), notes=False,
                                     answer=(top, weights.entries[0][top]), item=keys)])
    return Question("row", spec, solution, (row,), parts, shown=(("", "s", row),),
                    worked_by_parts=(("", worked),))


def as_row_of_the_matrix(worked: Solution, row: int) -> Solution:
    """The one-row working numbered as the row it is of S̃ and A (S̃[3,1], "Row 3"), as the
    question names it, not as row 1 of a 1-row matrix."""
    steps = tuple(replace(step, working=tuple(replace(line, row=row) for line in step.working))
                  for step in worked.steps)
    return replace(worked, steps=steps)


def read_row(value, spec, where: str) -> int:
    """Which query's row (counted from 1 in a file, from 0 in the spec)."""
    return one_based(value, spec.n_queries, "row", where)


# Row and concept questions ask about one query's row: the first, where a file names none.
ROW = Param("row", read_row, write=lambda row: row + 1, default=1)


def draw_row(rng, candidate, decimals: int) -> dict | None:
    """A row whose top key stands clear at the shown decimals."""
    clear = clear_top_tokens(candidate, decimals)
    return {"row": clear[int(rng.integers(len(clear)))]} if clear else None


def _check(spec) -> str | None:
    if spec.mask not in ("none", "causal"):  # its row is given as the keys a causal query sees
        return f"type row takes no mask but causal (got mask {spec.mask})"
    if spec.mask == "causal" and spec.row == 0:
        return "under a causal mask token 1 sees only itself (weight 1); choose a later row"
    return None


register(QuestionType(
    "row", row_question, "One row of softmax by hand",
    ("One query token's row of raw attention scores (row {{ spec.row + 1 }} of $S = QK^{\\top}$), "
     "with $d_k = {{ spec.d_k }}${% if spec.mask == 'causal' %}; under the causal mask this token "
     "sees keys 1 to {{ question.given[0].shape[1] }} only, so only their scores are given{% endif %}:",
     SHOWN,
     "Compute this token's attention weights by hand, as in {% if spec.unscaled %}"
     "$\\operatorname{softmax}(s)$ (the scores are not scaled){% elif spec.scale is none %}"
     "$\\operatorname{softmax}(s/\\sqrt{d_k})${% else %}$\\operatorname{softmax}(c\\,s)$ with the "
     "scale $c = {{ spec.scale | tex }}${% endif %}."),
    prompts={
        "row-scaled": "{% if spec.scale is none %}Scale the row: divide each score by "
                      "$\\sqrt{d_k}$.{% else %}Scale the row: multiply each score by the scale "
                      "$c = {{ spec.scale | tex }}$.{% endif %}",
        "row-weights": "Exponentiate each scaled score, add the exponentials up, and divide each "
                       "by the sum. Which key gets the most attention?"},
    after={"row-weights": "The most attention goes to key {{ part.answer[0] + 1 }}, with weight "
                          "${{ part.answer[1] | num }}$."},
    choice="key {{ choice + 1 }}",
    params=(ROW,), check=_check, min_tokens=2,
    draw_options=lambda options: replace(options, mask="none"), draw_params=draw_row))
