"""Question type "full": every step of attention, from X (or Q, K, V) to the output, one
part per step (Q, K and V together)."""

from __future__ import annotations

from ..engine import solve
from ..questions import ATTENTION, SETUP, Question, given_steps, lettered, step_parts
from . import GIVEN, QuestionType, register

PARTS = (("Q", "K", "V"), ("scores",), ("scaled",), ("masked",), ("weights",), ("output",))
PROMPTS = {"Q": "Compute the queries $Q = XW_Q$, the keys $K = XW_K$ and the values $V = XW_V$, "
                "with their shapes."}


def full_question(spec) -> Question:
    solution = solve(spec)
    parts = lettered(step_parts(solution, PARTS))
    return Question(spec.question, spec, solution, given_steps(solution), parts)


register(QuestionType(
    "full", full_question, "Self-attention, step by step", (SETUP, GIVEN, ATTENTION),
    prompts=PROMPTS))
