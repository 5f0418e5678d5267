"""Question type "permute": two tokens swap places; predict the new weights and output
from the old ones, and say why nothing needs recomputing (permutation equivariance)."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.questions import (
    SETUP,
    ConceptItem,
    Part,
    Pick,
    Question,
    given_steps,
    lettered,
    shuffled_item,
)
from generator.maths.engine import Step, solve
from generator.maths.spec import SpecError, one_based
from generator.rendering.language import N_

SWAPPED = "tokens {{ spec.swap[0] + 1 }} and {{ spec.swap[1] + 1 }}"
ROWS = "rows {{ spec.swap[0] + 1 }} and {{ spec.swap[1] + 1 }}"


def permute_question(spec) -> Question:
    """A permute question: the shown A and O, the new A' and O' after the swap read off them (A's
    rows and columns swapped, O's rows), and the problem solved again with the tokens swapped for
    the part that asks why nothing needed recomputing."""
    solution = solve(spec)
    i, j = spec.swap
    order = list(range(spec.n_queries))
    order[i], order[j] = j, i
    swapped_x = tuple(spec.matrices["X"][k] for k in order)
    recomputed = solve(replace(spec, matrices={**spec.matrices, "X": swapped_x}))
    weights = permuted(solution.step("weights"), order, columns_too=True)
    output = permuted(solution.step("output"), order, columns_too=False)
    parts = lettered([Part("permute-weights", 2, (weights,), shown_as=("A'",), grid_names=("A′",)),
                      Part("permute-output", 2, (output,), shown_as=("O'",), grid_names=("O′",)),
                      Part("permute-why", 1, (recomputed.step("weights"), recomputed.step("output")),
                           shown_as=("A'", "O'"), item=_reasons(spec), grids=False,
                           explained=True)])
    shown = (("", "A", solution.step("weights")), ("", "O", solution.step("output")))
    return Question("permute", spec, solution, given_steps(solution), parts,
                    extra={"swapped": recomputed}, shown=shown,
                    picks=picks(spec, order, solution.step("output").shape[1]))


def picks(spec, order: list[int], d_v: int) -> tuple[Pick, Pick]:
    """A' and O' read off the shown A and O (A' = PAP^T, O' = PO): the page marks them
    against those, never against a step of the plan that happens to share their name; and
    the slips of a swap, each with what the page says."""
    a, b = (t + 1 for t in spec.swap)
    same, values = tuple(range(len(order))), tuple(range(d_v))
    swap = tuple(order)
    tokens = {"a": a, "b": b}  # each slip a message, said in the page's language
    weights = Pick("A′", "weights", swap, swap, (
        (same, same, (N_("this is A unchanged: tokens %(a)s and %(b)s swap as queries and as keys, "
                         "so rows %(a)s and %(b)s of A swap and so do columns %(a)s and %(b)s "
                         "(A′ = PAPᵀ)"), tokens)),
        (swap, same, (N_("only rows %(a)s and %(b)s swapped: the tokens are keys too, so columns "
                         "%(a)s and %(b)s swap as well (A′ = PAPᵀ)"), tokens)),
        (same, swap, (N_("only columns %(a)s and %(b)s swapped: the tokens are queries too, so rows "
                         "%(a)s and %(b)s swap as well (A′ = PAPᵀ)"), tokens))))
    output = Pick("O′", "output", swap, values, (
        (same, values, (N_("this is O unchanged: each row of O belongs to its token, so rows %(a)s "
                           "and %(b)s swap (O′ = PO)"), tokens)),
        *(((swap, swap, (N_("columns %(a)s and %(b)s swapped too: the columns of O are value "
                            "dimensions, not tokens; only rows swap (O′ = PO)"), tokens)),)
          if d_v == len(order) else ())))
    return weights, output


# Why nothing needs recomputing: the reason, and reasons students give that are wrong.
REASONS = (
    (N_("Each score depends only on the two tokens it compares, not on where they stand: without "
     "a mask and without positions, attention is permutation equivariant."), ""),
    (N_("Softmax normalises every row, so the order of the tokens never matters."),
     N_("normalising a row does not make its entries independent of the order of the keys")),
    (N_("$W_Q$, $W_K$ and $W_V$ are the same for every token, so the swap changes no result at all."),
     N_("the results do change: their rows (and the weights' columns) swap")),
    (N_(r"The scaling by $\sqrt{d_k}$ cancels whatever the swap does to the scores."),
     N_("scaling multiplies every score by the same number; it cancels nothing")),
)


def _reasons(spec) -> ConceptItem:
    return shuffled_item("reason", REASONS, spec.id)


def permuted(step: Step, order: list[int], columns_too: bool) -> Step:
    """The step's rows (and columns) put in the new token order: row k is old row order[k]."""
    rows = [step.entries[k] for k in order]
    if columns_too:
        rows = [tuple(row[k] for k in order) for row in rows]
    return Step(step.name, f"{step.name}, tokens swapped", "permutation", tuple(rows),
                working=tuple(order))


def read_swap(swap, spec, where: str) -> tuple[int, int]:
    """The spec file's ``swap``: two different tokens, counted from 1, as indices from 0."""
    if not (isinstance(swap, list) and len(swap) == 2 and swap[0] != swap[1]):
        raise SpecError(f"{where}: swap must name two different tokens, e.g. [1, 3]")
    return tuple(one_based(t, spec.n_keys, "swap", where) for t in swap)


# The two tokens that swap places (counted from 1 in a file, from 0 in the spec).
SWAP = Param("swap", read_swap, write=lambda swap: [token + 1 for token in swap], default=[1, 2])


def draw_swap(rng, candidate, decimals: int) -> dict | None:
    """Two different tokens to swap, drawn; None for a problem of one token."""
    tokens = len(candidate.x)
    if tokens < 2:
        return None
    i, j = sorted(int(t) for t in rng.choice(tokens, size=2, replace=False))
    return {"swap": (i, j)}


def _check(spec) -> str | None:
    if spec.cross:
        return "type permute swaps two tokens of one sequence (self-attention's X); cross-attention has two"
    if not spec.from_embeddings:
        return "type permute needs X, W_Q, W_K and W_V"
    return "type permute takes no mask" if spec.mask != "none" else None


register(QuestionType(
    "permute", permute_question, "Two tokens swap places",
    (SETUP, GIVEN, "Its attention weights and output are", SHOWN,
     f"Now {SWAPPED} swap places: {ROWS} of $X$ are exchanged, and nothing else changes."),
    prompts={"permute-weights": "Without recomputing anything, write the new attention weights $A'$.",
             "permute-output": "Without recomputing anything, write the new output $O'$.",
             "permute-why": "Explain why no recomputation is needed."},
    keys={"permute-weights":
          f"Swapping {SWAPPED} swaps both the queries and the keys, so {ROWS} of $A$ swap, and so "
          f"do columns {{{{ spec.swap[0] + 1 }}}} and {{{{ spec.swap[1] + 1 }}}}: $A' = PAP^{{\\top}}$, "
          f"where $P$ is the permutation matrix that swaps them (the identity with {ROWS} "
          f"exchanged, so $X' = PX$ and $P^{{\\top}}P = I$).",
          "permute-output":
          f"Each output row belongs to its token, so {ROWS} of $O$ swap: $O' = A'V' = "
          f"(PAP^{{\\top}})(PV) = PA(P^{{\\top}}P)V = PAV = PO$, since $V' = X'W_V = PXW_V = PV$ "
          f"and $P^{{\\top}}P = I$.",
          "permute-why":
          "Self-attention without a mask is permutation equivariant: every score depends only on "
          "the pair of tokens it compares, not on where they stand, so reordering the tokens "
          "reorders the rows (and the key columns) of every result in the same way and changes "
          "no value: $Q' = PQ$ and $K' = PK$ give $S' = Q'K'^{\\top} = PQK^{\\top}P^{\\top} = "
          "PSP^{\\top}$, and softmax, applied row by row, carries the same reordering through. "
          "This holds only because the embeddings carry no position: with positional encodings "
          "added to $X$, the swapped tokens would get new positions, and the scores would change. "
          "Recomputing from the swapped $X$ gives the same matrices:"},
    choice="{{ choice }}",
    params=(SWAP,), check=_check, min_tokens=2,
    draw_options=lambda options: replace(options, mask="none"), draw_params=draw_swap))
