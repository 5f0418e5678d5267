"""Question type "masked": every step of causal self-attention, the mask a step of its own."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, QuestionType, register
from generator.kinds.full import PROMPTS, SHRINKS, full_question
from generator.kinds.questions import ATTENTION, SETUP


def _masked_only(spec) -> str | None:
    return None if spec.mask == "causal" else 'type masked needs mask = "causal"'


register(QuestionType(
    "masked", full_question, "Causal {{ 'cross' if spec.cross else 'self' }}-attention",
    (SETUP, GIVEN, ATTENTION), prompts=PROMPTS,
    check=_masked_only, min_tokens=2, draw_options=lambda options: replace(options, mask="causal"),
    shrinks=SHRINKS))
