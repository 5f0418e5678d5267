"""Question type "concept": checkpoint questions on the problem's own numbers (which key
gets the most attention, what a row sums to, the output's shape, the weight without
scaling), each with distractors that come from the engine's wrong variants."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, QuestionType, register
from generator.kinds.questions import ConceptItem, Part, Question, lettered, the_top_key
from generator.kinds.row import ROW, draw_row
from generator.maths.engine import Num, Step, run, solve
from generator.maths.steps import plan_for
from generator.rendering.language import N_

# One choice of an item, written by its topic (``choice`` and ``item`` are at hand).
CHOICE = (r"{% if item.topic == 'top-attention' %}{% if spec.cross %}key{% else %}token{% endif %} "
          r"{{ choice[0] + 1 }}, weight "
          r"${{ choice[1] | num }}${% elif item.topic == 'row-sum' %}{% if choice == 'depends' %}"
          r"it depends on the scores{% else %}${{ choice }}${% endif %}"
          r"{% elif item.topic == 'output-shape' %}${{ choice[0] }} \times {{ choice[1] }}$"
          r"{% else %}${{ choice | num }}${% endif %}")
ITEM = "{% set item = part.item %}"
QUESTIONS = {
    "top-attention": "{% if spec.cross %}Which key does query{% else %}Which token does token{% endif %} "
                     "{{ spec.row + 1 }} attend to most, and with what weight?",
    "row-sum": "What does every row of $A$ sum to?",
    "output-shape": "What is the shape of the output $O = AV$?",
    "no-scaling": r"Had the scores not been {% if spec.scale is none %}divided by $\sqrt{d_k}$"
                  r"{% else %}scaled by ${{ spec.scale | tex }}${% endif %}, what would "
                  r"{% if spec.cross %}query{% else %}token{% endif %} {{ spec.row + 1 }}'s largest "
                  r"attention weight be?",
}
WHY = {
    "top-attention": "Read row {{ spec.row + 1 }} of $A$: its largest entry is in column "
                     "{{ choice[0] + 1 }}.",
    "row-sum": "Each row of $A$ is one query's softmax, a probability distribution over the keys, "
               "so it sums to exactly 1 whatever the scores.",
    "output-shape": r"$O = AV$ multiplies {% if spec.n_queries is read_with_an %}an{% else %}a{% endif %} "
                    r"${{ spec.n_queries }} \times {{ spec.n_keys }}$ matrix by "
                    r"{% if spec.n_keys is read_with_an %}an{% else %}a{% endif %} "
                    r"${{ spec.n_keys }} \times {{ spec.d_v }}$ one: "
                    r"one row per query token, $d_v$ columns.",
    # The scale is 1/sqrt(d_k) (d_k > 1) or c: below 1, the raw scores are further apart.
    "no-scaling": r"Softmax of row {{ spec.row + 1 }} of $S$ itself, not of {% if spec.scale is none %}"
                  r"$S/\sqrt{d_k}$: unscaled scores are $\sqrt{d_k}$ times further apart, so the "
                  r"largest weight grows and the distribution sharpens{% elif spec.scale < 1 %}"
                  r"${{ spec.scale | tex }}\, S$: unscaled scores are ${{ (1 / spec.scale) | tex }}$ "
                  r"times further apart, so the largest weight grows and the distribution sharpens"
                  r"{% else %}${{ spec.scale | tex }}\, S$: unscaled scores are ${{ spec.scale | tex }}$ "
                  r"times closer together, so the largest weight shrinks and the distribution "
                  r"flattens{% endif %}.",
}
ANSWER = (ITEM + "{% set choice = item.choices[item.answer] %}**Answer: ({{ 'ABCDEFGHIJKL'[item.answer] }}) "
          + CHOICE + ".** {WHY} Where the others come from:{% for letter, slip in "
          "zip('ABCDEFGHIJKL', item.slips) if slip %} ({{ letter }}) {{ slip }}{% if not loop.last %};"
          "{% else %}.{% endif %}{% endfor %}")


def concept_question(spec) -> Question:
    """A concept question: its items (the top key, a row's sum, the output's shape, and the weights
    without scaling where the scale is not 1), their choices in an order drawn from the problem's
    id."""
    solution, unscaled = solve(spec), weights_with(spec, "no-scaling")  # the second, for two items
    shuffle = np.random.default_rng(zlib.crc32(spec.id.encode()))
    items = tuple(_shuffled(item, shuffle) for item in (
        _top_attention(solution, unscaled, spec.row), _row_sum(spec), _output_shape(spec),
        *(() if _scaling_is_one(spec) else (_no_scaling(solution, unscaled, spec),))))
    given = (solution.step("scores"), solution.step("weights"))
    parts = lettered([Part(f"concept-{item.topic}", 1, item=item) for item in items])
    return Question("concept", spec, solution, given, parts)


def _scaling_is_one(spec) -> bool:
    """Scale 1, or 1/sqrt(d_k) with d_k = 1: no weight would change without the scaling."""
    return spec.unscaled or (spec.scale is None and spec.d_k == 1)


def _top_attention(solution, unscaled, token: int) -> ConceptItem:
    """Which key does `token` attend to most, and with what weight?"""
    def top(weights_step):
        row = weights_step.entries[token]
        best = max(range(len(row)), key=lambda j: row[j].value)
        return (best, row[best])

    the_top_key(solution.step("weights").entries[token], solution.spec)
    right = top(solution.step("weights"))
    row = solution.step("weights").entries[token]
    second = sorted(range(len(row)), key=lambda j: -row[j].value)[1:2]
    wrong = [(top(unscaled),
              N_("softmax of the raw scores, without scaling")),
             (top(weights_with(solution.spec, "column-softmax")),
              N_("softmax down each column instead of along the row"))]
    wrong += [((j, row[j]), N_("the second-largest weight of the row")) for j in second]
    wrong += [((right[0], Num.of(sympy.Rational(1, len(row)))), N_("equal weights for every key"))]
    return _item("top-attention", right, wrong, key=lambda c: (c[0], round(c[1].value, 4)))


def _row_sum(spec) -> ConceptItem:
    wrong = [(spec.n_keys, N_("counting 1 per key, as if every weight were 1")),
             ("depends", N_("forgetting that softmax divides each row by its own sum")),
             (spec.d_k, N_("confusing the sum with d_k")), (spec.d_v, N_("confusing the sum with d_v")),
             (0, N_("thinking of scores centred on 0, not of weights"))]
    return _item("row-sum", 1, wrong, key=str)


def _output_shape(spec) -> ConceptItem:
    n, m, d_k, d_v = spec.n_queries, spec.n_keys, spec.d_k, spec.d_v
    wrong = [((n, m), N_("the shape of A, not of AV")), ((d_v, n), N_("the shape of (AV) transposed")),
             ((n, d_k), N_("the shape of Q: values have d_v columns, not d_k")),
             ((d_k, d_v), N_("the shape of a weight matrix")),
             ((1, d_v), N_("one output row for all tokens")),
             ((n, 1), N_("one number per token, as if the output were a score"))]
    return _item("output-shape", (n, d_v), wrong, key=str)


def _no_scaling(solution, unscaled, spec) -> ConceptItem:
    """Without scaling, what would the largest weight of `token` be?"""
    def largest(weights_step):
        return max(weights_step.entries[spec.row], key=lambda n: n.value)

    right = largest(unscaled)
    wrong = [(largest(solution.step("weights")), N_("the weight with scaling: the question drops it")),
             (largest(weights_with(spec, "dk-not-sqrt")), N_("dividing by d_k, not by nothing")),
             (Num.of(sympy.Rational(1, spec.n_keys)), N_("equal weights for every key"))]
    return _item("no-scaling", right, wrong, key=lambda n: round(n.value, 4))


def weights_with(spec, mistake: str) -> Step:
    """The weights a student making ``mistake`` reaches: the plan up to A, not the output,
    which no distractor needs."""
    plan = plan_for(spec, mistake)
    names = [step_def.name for step_def in plan]
    return run(plan[:names.index("weights") + 1], spec).step("weights")


def _item(topic: str, right, wrong: list[tuple], key) -> ConceptItem:
    """The right choice and up to three distractors that read differently from it and each
    other, each with the slip that gives it."""
    choices, slips, seen = [right], [""], {key(right)}
    for choice, slip in wrong:
        if key(choice) not in seen and len(choices) < 4:
            choices.append(choice)
            slips.append(slip)
            seen.add(key(choice))
    return ConceptItem(topic, tuple(choices), 0, tuple(slips))


def _shuffled(item: ConceptItem, rng: np.random.Generator) -> ConceptItem:
    order = [int(k) for k in rng.permutation(len(item.choices))]
    return ConceptItem(item.topic, tuple(item.choices[k] for k in order), order.index(item.answer),
                       tuple(item.slips[k] for k in order))


def _check(spec) -> str | None:
    return "type concept takes no mask" if spec.mask != "none" else None


register(QuestionType(
    "concept", concept_question, "Checkpoint",
    (r"A {% if spec.cross %}cross-attention layer with {{ spec.n_queries }} "
     r"{% if spec.n_queries == 1 %}query{% else %}queries{% endif %} and {{ spec.n_keys }} keys{% else %}"
     r"self-attention layer with {{ spec.n_queries }} tokens{% endif %}, $d_k = {{ spec.d_k }}$ and "
     r"$d_v = {{ spec.d_v }}$ produced these raw scores $S = QK^{\top}$ and attention weights "
     r"$A = \operatorname{softmax}({% if spec.unscaled %}S{% elif spec.scale is none %}S/\sqrt{d_k}"
     r"{% else %}{{ spec.scale | tex }}\, S{% endif %})$ (row by row). Choose one answer in each part.",
     GIVEN),
    prompts={f"concept-{topic}": text for topic, text in QUESTIONS.items()},
    keys={f"concept-{topic}": ANSWER.replace("{WHY}", why) for topic, why in WHY.items()},
    choice=ITEM + CHOICE, params=(ROW,), check=_check, min_tokens=2,
    draw_options=lambda options: replace(options, mask="none"), draw_params=draw_row))
