"""Question type "masked": every step of masked attention, the mask a step of its own; any mask
(causal, padding, a sliding window, causal and padding, the teacher's own)."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, QuestionType, register
from generator.kinds.full import PROMPTS, SHRINKS, full_question
from generator.kinds.questions import ATTENTION, SETUP

TITLE = ("{% set kind = 'cross' if spec.cross else 'self' %}{% if spec.mask == 'causal' %}"
         "Causal {{ kind }}-attention{% else %}{{ kind | capitalize }}-attention with "
         "{{ {'padding': 'a padding mask', 'window': 'a sliding-window mask', "
         "'causal+padding': 'causal and padding masks'}.get(spec.mask, 'your mask') }}{% endif %}")


def _masked_only(spec) -> str | None:
    return None if spec.masked else ('type masked needs mask = "causal" or another mask: '
                                     '"padding", "window", "causal+padding" or a matrix')


def _with_a_mask(options):
    """Causal unless the options ask another mask; a mixed set draws among every kind of mask."""
    mask = {"none": "causal", "mixed": "any"}.get(options.mask, options.mask)
    return replace(options, mask=mask)


register(QuestionType(
    "masked", full_question, TITLE,
    (SETUP, GIVEN, ATTENTION), prompts=PROMPTS,
    check=_masked_only, min_tokens=2, draw_options=_with_a_mask,
    shrinks=SHRINKS))
