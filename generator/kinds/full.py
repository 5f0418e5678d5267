"""Question type "full": every step of the problem's plan, from X (or Q, K, V) to the
output, one part per step (Q, K and V together), each with its registry marks."""

from __future__ import annotations

from generator.kinds import GIVEN, QuestionType, register
from generator.kinds.questions import ATTENTION, SETUP, Question, given_steps, lettered, step_parts
from generator.maths.engine import solve

TOGETHER = ("Q", "K", "V")  # one part; every other step of the plan is a part of its own
# Sized to a budget: Q, K and V given, then fewer tokens, narrower values and keys.
SHRINKS = ("given", "tokens", "d_v", "d_k", "fewer-tokens")
PROMPTS = {"Q": r"{% if spec.cross %}Compute the queries $Q = X_{\mathrm{dec}} W_Q$ from the decoder's "
                r"tokens, and the keys $K = X_{\mathrm{enc}} W_K$ and the values $V = X_{\mathrm{enc}} W_V$ "
                r"from the encoder's, with their shapes.{% else %}Compute the queries $Q = XW_Q$, the "
                r"keys $K = XW_K$ and the values $V = XW_V$, with their shapes.{% endif %}"}


def full_question(spec) -> Question:
    """A full question: a part for each step of the plan, Q, K and V in one."""
    solution = solve(spec)
    groups = dict.fromkeys(TOGETHER if step.name in TOGETHER else (step.name,)
                           for step in solution.plan if not step.is_given)
    parts = lettered(step_parts(solution, tuple(groups)))
    return Question(spec.question, spec, solution, given_steps(solution), parts)


register(QuestionType(
    "full", full_question, "{% if spec.cross %}Cross-attention, step by step{% else %}Self-attention, "
    "step by step{% endif %}",
    (SETUP, GIVEN, ATTENTION),
    prompts=PROMPTS, shrinks=SHRINKS))
