"""Question type "sentence-vector": self-attention, then its outputs mean-pooled into one
vector for the whole sequence, and which token pulls a chosen feature of it up the most.

Its own parameter, ``feature`` (counted from 1 in a spec file and in problems.json), is the
column of the pooled vector the last part asks about.  Its prose is in template files,
templates/kinds/sentence-vector/ (title, statement, prompts/<task>, after/<task>, choice),
which a teacher's --templates folder may reword file by file.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gen_problems_pooling import TEMPLATES
from generator import kinds
from generator.kinds.full import SHRINKS, TOGETHER
from generator.kinds.questions import TIE, ConceptItem, Question, given_steps, lettered, step_parts
from generator.maths import steps
from generator.maths.crosscheck import attention_steps
from generator.maths.engine import run
from generator.maths.spec import SpecError, one_based
from generator.rendering.template_files import add_template_folder

NAME = "sentence-vector"

POOLED = steps.StepDef(
    "pooled", "mean-pool", ("output",), symbol=r"\bar{o}", text="pooled = mean of the rows of output",
    formula=r"${{ 'pooled' | sym }} = \frac{1}{n} \sum_i {{ 'output' | sym }}_{i,:}$",
    prompt=r"Pool the outputs: $\bar{o}$ is the mean of the rows of $O$.", marks=1)


def sentence_vector(spec) -> Question:
    """Every step of attention (Q, K and V one part), then the pooled vector, whose part also
    asks which token's output row holds the largest entry of the chosen feature."""
    solution = run((*steps.plan_for(spec), steps.REGISTRY["pooled"]), spec)
    groups = dict.fromkeys(TOGETHER if step.name in TOGETHER else (step.name,)
                           for step in solution.plan if not step.is_given)
    *attention, pooled = step_parts(solution, tuple(groups))
    top = top_token(solution, spec)
    answer = (top, solution.step("pooled").entries[0][spec.feature],
              solution.step("output").entries[top][spec.feature])
    pooled = replace(pooled, marks=pooled.marks + 1, answer=answer,
                     item=ConceptItem("top-token", tuple(range(spec.n_queries)), top))
    return Question(spec.question, spec, solution, given_steps(solution),
                    lettered([*attention, pooled]))


def top_token(solution, spec) -> int:
    """The token whose output has the largest entry in the feature's column; two such make
    the question's choice have two answers, so the spec is refused."""
    column = [row[spec.feature].value for row in solution.step("output").entries]
    first, second = sorted(range(len(column)), key=lambda i: -column[i])[:2]
    if column[first] - column[second] < TIE:
        raise SpecError(f"problem {spec.id}: tokens {first + 1} and {second + 1} share the largest "
                        f"entry of feature {spec.feature + 1}, so 'which token pulls it up the "
                        f"most?' has two answers; choose another feature")
    return first


def read_feature(value, spec, where: str) -> int:
    """Which column of the pooled vector (counted from 1 in a file, from 0 in the spec)."""
    return one_based(value, spec.d_v, "feature", where)


FEATURE = kinds.Param("feature", read_feature, write=lambda feature: feature + 1, default=1)


def draw_feature(rng, candidate, decimals: int) -> dict | None:
    """A feature whose top token stands clear at the shown decimals; None draws again."""
    output = attention_steps(candidate.given, mask=candidate.mask, scale=candidate.scale)["output"]
    ordered = np.sort(np.round(output, decimals), axis=0)
    clear = [j for j in range(output.shape[1]) if ordered[-1, j] > ordered[-2, j]]
    return {"feature": clear[int(rng.integers(len(clear)))]} if clear else None


SENTENCE_VECTOR = kinds.QuestionType(
    NAME, sentence_vector,  # its title, statement, prompts and choice: templates/kinds/<NAME>/
    params=(FEATURE,), min_tokens=2, draw_params=draw_feature, shrinks=SHRINKS,
    in_default_mix=False)  # installing the plugin leaves the default mix as it was


def register() -> None:
    """The entry point (gen_problems.kinds): the pooled step, the type and its prose."""
    add_template_folder(TEMPLATES)
    steps.register(POOLED, pipeline=False)  # only this type's plan takes it
    kinds.register(SENTENCE_VECTOR)
