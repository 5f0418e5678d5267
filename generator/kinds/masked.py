"""Question type "masked": every step of masked attention, the mask a step of its own; any mask
(causal, padding, a sliding window, causal and padding, the teacher's own).

Besides the steps it may ask two items of the mask itself (``mask_parts``): "write the mask"
(M, 0 where query i may attend to key j and -inf where not, entry by entry) and "without the
mask" (a choice: one query's weight on one key once every query sees every key).  A mask other
than the causal one asks both unless the spec says otherwise; a causal one asks neither, as it
always has, unless the spec asks them."""

from __future__ import annotations

from dataclasses import replace

import sympy

from generator.kinds import GIVEN, Param, QuestionType, register
from generator.kinds.concept import weights_with
from generator.kinds.full import PROMPTS, SHRINKS, full_question
from generator.kinds.questions import ATTENTION, SETUP, ConceptItem, Part, Question, lettered
from generator.maths.engine import MASKED, MaskedEntry, Num, Step
from generator.maths.exact import shown as shown_text
from generator.maths.spec import SpecError
from generator.rendering.language import N_

TITLE = ("{% if spec.mask == 'causal' %}{% if spec.cross %}Causal cross-attention{% else %}Causal "
         "self-attention{% endif %}{% else %}{% if spec.cross %}Cross-attention{% else %}Self-attention"
         "{% endif %} with {% if spec.mask == 'padding' %}a padding mask{% elif spec.mask == 'window' %}"
         "a sliding-window mask{% elif spec.mask == 'causal+padding' %}causal and padding masks"
         "{% else %}a given mask{% endif %}{% endif %}")
ITEMS = ("write-mask", "without-mask")


def masked_question(spec) -> Question:
    """The full question's parts, "write the mask" before the masked scores and "without the
    mask" last, where asked."""
    question = full_question(spec)
    asked = asked_items(spec)
    if not asked:
        return question
    parts = []
    for part in question.parts:
        if part.task == "masked" and "write-mask" in asked:
            parts.append(Part("write-mask", 1, (mask_step(spec),), step_marks=(1,)))
        parts.append(part)
    if "without-mask" in asked:
        item, answer = without_the_mask(question)
        parts.append(Part("without-mask", 1, item=item, answer=answer))
    return replace(question, parts=lettered(parts))


def asked_items(spec) -> tuple[str, ...]:
    """The items the spec asks; by default both under any mask but the causal one."""
    if spec.mask_parts is not None:
        return spec.mask_parts
    if spec.mask == "custom":  # the statement gives it: there is nothing to work out
        return ("without-mask",)
    return () if spec.mask == "causal" else ITEMS


def mask_step(spec) -> Step:
    """M itself: 0 where query i may attend to key j, -inf where not."""
    zero, hidden = Num.of(sympy.S.Zero), Num.of(MASKED)
    entries = tuple(tuple(zero if seen else hidden for seen in row) for row in spec.visible)
    working = tuple(MaskedEntry(i, j) for i, row in enumerate(spec.visible)
                    for j, seen in enumerate(row) if not seen)
    return Step("M", "$M$, the mask", "mask", entries, working)


def without_the_mask(question) -> tuple[ConceptItem, tuple]:
    """Query r's weight on key c with M = 0: r the query the mask hides most from among those
    that see two keys or more (a query that sees one has weight 1 there, and nothing to weigh),
    the first of them; c its top key under the mask, whose weight shrinks once the hidden keys
    join the sum."""
    spec, weights = question.spec, question.solution.step("weights")
    hidden = [row.count(False) for row in spec.visible]
    r = max(range(len(hidden)), key=lambda i: (spec.n_keys - hidden[i] >= 2, hidden[i], -i))
    if not hidden[r]:
        raise SpecError(f"problem {spec.id}: mask_parts without-mask cannot be asked: the mask "
                        f"hides no key")
    c = max(range(spec.n_keys), key=lambda j: weights.entries[r][j].value)
    unmasked = replace(spec, mask="none", valid=None, window=None, mask_matrix=None)
    right = weights_with(unmasked, None).entries[r][c]
    wrong = [(weights.entries[r][c], N_("the weight under the mask: without it the hidden keys' "
              "exponentials join the row's sum, so this weight shrinks")),
             (Num.of(sympy.Rational(1, spec.n_keys)), N_("equal weights for every key"))]
    if not spec.unscaled:
        wrong.append((weights_with(unmasked, "no-scaling").entries[r][c],
                      N_("softmax of the raw scores, without the scaling")))
    choices, slips, seen = [right], [""], {round(right.value, 4)}
    for choice, slip in wrong:
        if round(choice.value, 4) not in seen:
            choices.append(choice)
            slips.append(slip)
            seen.add(round(choice.value, 4))
    order = sorted(range(len(choices)), key=lambda k: choices[k].value)
    item = ConceptItem("without-mask", tuple(choices[k] for k in order), order.index(0),
                       tuple(slips[k] for k in order))
    return item, (r, c, weights.entries[r][c], hidden[r])


def read_mask_parts(value, spec, where: str) -> tuple[str, ...]:
    """The spec file's ``mask_parts``: a list of write-mask and without-mask, each once."""
    if not isinstance(value, list) or any(name not in ITEMS for name in value):
        raise SpecError(f"{where}: mask_parts must be a list of {' and '.join(ITEMS)}, "
                        f"got {shown_text(value)}")
    return tuple(dict.fromkeys(value))


def _masked_only(spec) -> str | None:
    if spec.mask == "custom" and "write-mask" in asked_items(spec):
        return ("mask_parts write-mask asks the student to write a mask the statement gives (a "
                "matrix of yours); ask it of a causal, padding or window mask")
    return None if spec.masked else ('type masked needs mask = "causal" or another mask: '
                                     '"padding", "window", "causal+padding" or a matrix')


def _with_a_mask(options):
    """Causal unless the options ask another mask; a mixed set draws among every kind of mask."""
    mask = {"none": "causal", "mixed": "any"}.get(options.mask, options.mask)
    return replace(options, mask=mask)


register(QuestionType(
    "masked", masked_question, TITLE,
    (SETUP, GIVEN, ATTENTION),
    prompts={**PROMPTS,
             "write-mask": r"Write the mask $M$ that is added to the "
                           r"{% if spec.unscaled %}scores{% else %}scaled scores{% endif %}: "
                           r"$M_{ij} = 0$ where query $i$ may attend to key $j$, "
                           r"and $M_{ij} = -\infty$ where it may not.",
             "without-mask": r"What changes without the mask? With $M = 0$ every query attends to "
                             r"every key: what would query {{ part.answer[0] + 1 }}'s weight on key "
                             r"{{ part.answer[1] + 1 }} be?"},
    keys={"without-mask": (
        "{% set item = part.item %}**Answer: ({{ 'ABCDEFGHIJKL'[item.answer] }}) "
        "${{ item.choices[item.answer] | num }}$.** Without the mask query {{ part.answer[0] + 1 }}'s "
        "softmax runs over all {{ spec.n_keys }} keys: the exponentials of the "
        "{% if part.answer[3] == 1 %}key{% else %}{{ part.answer[3] }} keys{% endif %} it could not see "
        "join the row's sum, "
        "so every weight it had shrinks; key {{ part.answer[1] + 1 }}'s goes from "
        "${{ part.answer[2] | num }}$ to ${{ item.choices[item.answer] | num }}$. Where the others "
        "come from:{% for letter, slip in zip('ABCDEFGHIJKL', item.slips) if slip %} ({{ letter }}) "
        "{{ slip }}{% if not loop.last %};{% else %}.{% endif %}{% endfor %}")},
    choice="${{ choice | num }}$",
    params=(Param("mask_parts", read_mask_parts, write=list),),
    check=_masked_only, min_tokens=2, draw_options=_with_a_mask,
    shrinks=SHRINKS))
