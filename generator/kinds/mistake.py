"""Question type "mistake": a worked solution with one common mistake in it (computed by
the engine, every later step following from the wrong value): find the step, say what
went wrong, put it right."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.questions import SETUP, ConceptItem, Part, Question, given_steps, lettered
from generator.maths.engine import Solution, solve
from generator.maths.exact import shown
from generator.maths.spec import MISTAKES, SpecError, mistakes_that_fit
from generator.maths.steps import plan, symbol
from generator.maths.worthiness import visible_mistakes
from generator.rendering.language import N_

# What the student did wrong, said in the key after naming the step.
EXPLANATIONS = {
    "no-scaling": r"The student applied softmax to the raw scores $S$, skipping the division by "
                  r"$\sqrt{d_k}$. Unscaled dot products grow with $d_k$ and push softmax towards "
                  r"one-hot weights; the scaled scores are $\tilde{S} = S/\sqrt{d_k}$.",
    "dk-not-sqrt": r"The student divided the scores by $d_k$ instead of by $\sqrt{d_k}$, which "
                   r"flattens the weights too much. The scaling is $\tilde{S} = S/\sqrt{d_k}$.",
    "k-not-transposed": r"The student multiplied $Q$ by $K$ instead of by $K^{\top}$. Entry "
                        r"$(i, j)$ of the scores must be the dot product of query $i$ with key $j$, "
                        r"which is row $i$ of $Q$ times column $j$ of $K^{\top}$; $QK$ only fits here "
                        r"because $d_k$ equals the number of tokens.",
    "column-softmax": r"The student normalised each column of $\tilde{S}$ instead of each row. Every "
                      r"query token needs its own distribution over the keys: softmax runs along "
                      r"each row, and each row of $A$ must sum to 1 (the student's columns do, their "
                      r"rows do not).",
    "v-times-weights": r"The student multiplied in the wrong order, $VA$ instead of $AV$. Output row "
                       r"$i$ must blend the value rows with query $i$'s weights, which is row $i$ of "
                       r"$A$ times $V$; $VA$ only fits here because $d_v$ equals the number of tokens.",
    "weights-times-k": r"The student blended the keys, $AK$, instead of the values, $AV$. Keys only "
                       r"decide the weights; the output is a weighted sum of the value rows.",
}


# The two matrices the fault is found between, named in words (the documents translate them).
STUDENTS, RIGHT = N_("the student's"), N_("the right")


def mistake_question(spec) -> Question:
    """The fix asks only the steps from the mistake on: the steps before it were right, and
    are kept as the worked solution shows them (given, not retyped)."""
    solution, flawed = solve(spec), solve(spec, spec.mistake)
    wrong = MISTAKES[spec.mistake]
    fix = fixed_from(solution, wrong)
    given = {step_def.name for step_def in fix.plan if step_def.is_given}
    kept = tuple(step for step in fix.steps if step.name in given)
    from_wrong = tuple(step for step in fix.steps if step.name not in given)
    fitting = tuple(m for m in MISTAKES if m in mistakes_that_fit(spec)
                    and not (spec.scale is not None and MISTAKES[m] == "scaled"))
    choice = ConceptItem("mistake", fitting, fitting.index(spec.mistake))
    name = symbol(wrong)
    parts = lettered([
        Part("mistake-find", 2, (flawed.step(wrong), solution.step(wrong)), item=choice, grids=False,
             shown_as=(rf"\text{{{STUDENTS} }} {name}", rf"\text{{{RIGHT} }} {name}"),
             explained=True),
        Part("mistake-fix", 3, from_wrong, kept=kept)])
    shown_steps = tuple(("{{ step.name | formula }}", symbol(step.name), step)
                        for step in flawed.steps if step.kind != "given")
    return Question("mistake", spec, solution, given_steps(solution), parts,
                    extra={"flawed": flawed}, shown=shown_steps, worked_by_parts=(("", fix),))


def fixed_from(solution: Solution, wrong: str) -> Solution:
    """The solution as the fix works it: every step before ``wrong`` given (the student read
    it off the worked solution, rounded as shown), the rest computed from those.  The same
    steps as ``solution``'s; only the plan says which are given, so that the marking rule
    and the page's step graph start from the shown values."""
    names = [step.name for step in solution.steps if step.kind != "given"]
    spec = solution.spec
    fix_plan = plan(tuple(names[:names.index(wrong)]), causal=spec.mask == "causal",
                    scaled=not spec.unscaled)
    return Solution(spec, tuple(solution.step(step_def.name) for step_def in fix_plan), fix_plan)


def read_mistake(mistake, spec, where: str) -> str:
    """The spec file's ``mistake``: one of the known mistakes (``MISTAKES``)."""
    if not isinstance(mistake, str) or mistake not in MISTAKES:
        raise SpecError(f"{where}: unknown mistake {shown(mistake)} "
                        f"(expected one of: {', '.join(MISTAKES)})")
    return mistake


MISTAKE = Param("mistake", read_mistake, default="no-scaling")  # which of steps.MISTAKES it makes


def _check(spec) -> str | None:
    if spec.cross:
        return ("type mistake's worked solutions are self-attention's over one X (its mistakes fit "
                "or not by one sequence's tokens); cross-attention is type full or cross")
    if not spec.from_embeddings:
        return "type mistake needs X, W_Q, W_K and W_V"
    if spec.mask != "none":
        return "type mistake takes no mask"
    if MISTAKES[spec.mistake] == "scaled" and spec.scale is not None:
        return (f"mistake {spec.mistake} is about dividing by sqrt(d_k); this problem sets its "
                f"own scale")
    if spec.mistake not in mistakes_that_fit(spec):
        return f"mistake {spec.mistake} needs square shapes this problem lacks"
    return None


def draw_mistake(rng, candidate, decimals: int, mistake: str | None = None) -> dict | None:
    """A mistake that changes its step at the shown decimals: ``mistake`` itself where it is
    given (every version of a problem makes the same one, and so is as long)."""
    visible = visible_mistakes(candidate, decimals)
    if mistake is not None:
        return {"mistake": mistake} if mistake in visible else None
    return {"mistake": visible[int(rng.integers(len(visible)))]} if visible else None


# Each mistake as a choice of "which step went wrong, and how".
IN_SHORT = {
    "no-scaling": r"the scaled scores: softmax was taken of the raw scores, with no division by "
                  r"$\sqrt{d_k}$",
    "dk-not-sqrt": r"the scaled scores: divided by $d_k$ instead of by $\sqrt{d_k}$",
    "k-not-transposed": r"the scores: $QK$ instead of $QK^{\top}$",
    "column-softmax": r"the weights: softmax down each column instead of along each row",
    "v-times-weights": r"the output: $VA$ instead of $AV$",
    "weights-times-k": r"the output: the keys blended, $AK$, instead of the values, $AV$",
}


def _chain(table: dict[str, str], name: str) -> str:
    """Prose that says table[value of ``name``]."""
    return "".join(f"{{% {'if' if i == 0 else 'elif'} {name} == '{key}' %}}{text}"
                   for i, (key, text) in enumerate(table.items())) + "{% endif %}"


_WHAT_WENT_WRONG = "".join(
    f"{{% {'if' if i == 0 else 'elif'} spec.mistake == '{name}' %}}{text}"
    for i, (name, text) in enumerate(EXPLANATIONS.items())) + "{% endif %}"

register(QuestionType(
    "mistake", mistake_question, "Find the mistake",
    (SETUP, GIVEN, "A student's worked solution follows. Exactly one step contains a common "
                   "mistake; every step after it was computed correctly from the wrong value.",
     SHOWN),
    prompts={"mistake-find": "Which step is wrong? Name it and say what the student did wrong.",
             "mistake-fix": "Write the solution as it should be: correct that step and recompute "
                            "every step after it (the steps before it stay as they are)."},
    choice=_chain(IN_SHORT, "choice"),
    keys={"mistake-find": "**The mistake is in the step {{ part.steps[0].name | formula }}.** "
                          + _WHAT_WENT_WRONG,
          "mistake-fix": "The right values, from the wrong step on (a correct method applied to "
                         "the student's earlier wrong values keeps its marks):"},
    params=(MISTAKE,), check=_check,
    draw_options=lambda options: replace(options, mask="none"), draw_params=draw_mistake,
    shrinks=("tokens", "d_v", "d_k", "fewer-tokens"), shared=("mistake",)))
