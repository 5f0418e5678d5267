"""Question type "cross": cross-attention, step by step.  A decoder's tokens attend over an
encoder's: the queries Q = X_dec W_Q come from the decoder, the keys K = X_enc W_K and values
V = X_enc W_V from the encoder, so the weights are n_q × n_k and the output has a row per
decoder token.  Every step of the plan is a part, as in "full" (the plan routes X_dec and
X_enc into the projections, ``steps``).  Drawn easy with Q, K and V given (2 queries over
3 keys), medium from X_dec of 2 tokens over X_enc of 3 (small integers), hard in two-place
decimals (2 or 3 queries over 3 or 4 keys)."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, QuestionType, register
from generator.kinds.full import PROMPTS, full_question
from generator.kinds.questions import ATTENTION, SETUP
from generator.kinds.sampling import PRESETS, DrawOptions

# Each preset as cross-attention draws it: the decoder's tokens (``queries``) over the
# encoder's (``tokens``), each preset's own kind of entries.  Easy gives Q, K and V (one-hot
# tokens picking rows of small integer weights, so entries of -1, 0 and 1); medium the
# embeddings, in small integers, d_k = 4 so that the scaling (by 2) is exact; hard two-place
# decimals.
CROSS_PRESETS = {
    "easy": replace(PRESETS["easy"], tokens=(3, 3), d_model=3, weights="integer",
                    queries=(2, 2), given="QKV"),
    "medium": replace(PRESETS["medium"], tokens=(3, 3), d_model=2, d_v=2, queries=(2, 2)),
    "hard": replace(PRESETS["hard"], tokens=(3, 4), d_model=2, d_k=2, d_v=2, queries=(2, 3), mask="none"),
}
# The options a preset sets that cross-attention sets otherwise (the teacher's own stay).
DRAWN = ("tokens", "d_model", "d_k", "d_v", "embeddings", "weights")
# Sized to a budget: Q, K and V given, then fewer keys (and queries, always fewer than the
# keys), narrower values and keys.
SHRINKS = ("given", "tokens", "d_v", "d_k", "fewer-tokens")


def cross_options(options: DrawOptions) -> DrawOptions:
    """The options a cross-attention problem is drawn with: the preset's sizes and entries
    become cross-attention's (``CROSS_PRESETS``), a size or kind the teacher set stays; a mixed
    set's mask is none (a causal mask has no place over an encoder's tokens)."""
    preset, cross = PRESETS[options.difficulty], CROSS_PRESETS[options.difficulty]
    mine = {name: getattr(cross, name) for name in DRAWN
            if getattr(options, name) == getattr(preset, name)}
    given = cross.given if options.given == "X" else options.given
    mask = "none" if options.mask == "mixed" else options.mask
    drawn = replace(options, **mine, queries=options.queries or cross.queries, given=given, mask=mask)
    if drawn.embeddings == "one-hot" and drawn.d_model < drawn.tokens[1]:  # a one-hot token each
        drawn = replace(drawn, d_model=drawn.tokens[1])
    return drawn


def _not_drawable(options: DrawOptions) -> str | None:
    if options.mask in ("causal", "window", "causal+padding"):
        return (f"a {options.mask} mask hides later or distant tokens of one sequence; the decoder's "
                f"queries may see every encoder token but its padding: use --mask padding or none")
    return None


def _cross_only(spec) -> str | None:
    if not spec.cross:
        return ("type cross needs two sequences: X_dec and X_enc (the decoder's and the encoder's "
                "tokens), or Q with more or fewer rows than K and V")
    return None


register(QuestionType(
    "cross", full_question, "Cross-attention, step by step",
    (SETUP, GIVEN, ATTENTION), prompts=PROMPTS, check=_cross_only, min_tokens=2,
    draw_options=cross_options, not_drawable=_not_drawable, shrinks=SHRINKS,
    in_default_mix=False))
