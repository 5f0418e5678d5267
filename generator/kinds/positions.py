"""Question type "positions": attention with positional information, in one of three encodings
(the spec key ``encoding``):

- ``sinusoidal`` (Vaswani et al. 2017): the table PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i),
  w_i = base^(-2i/d), kept exact (sin(1/100)); X + PE; attention on it; and a choice: with PE added,
  swapping two tokens no longer swaps the output's rows (checked on the problem's own numbers);
- ``rope`` (Su et al., RoFormer): Q and K, each pair (x_{2i}, x_{2i+1}) of row m turned by m theta_i
  (interleaved pairs); the scores of the turned Q and K; attention; and the relative offset: token
  2's query and token 1's key moved on by the same shift give the same score;
- ``alibi`` (Press et al. 2022): the bias B_ij = -m |i - j| of a head of slope m added to the
  scaled scores before the softmax (under the paper's causal mask, or none written).

Token i sits at position i - 1 unless the spec gives ``positions``.  Every encoding asks up to the
weights A (V and the output are solved, not asked).  This module holds the question, its keys and its
prose; its steps and plan are ``positions_plan``'s, its draws ``positions_draw``'s, its ops
``positions_ops``'s.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from generator.kinds import GIVEN, Param, QuestionType, positions_ops, register
from generator.kinds.positions_draw import draw_options, draw_params
from generator.kinds.positions_plan import (
    ENCODINGS,
    NAME,
    OFFSET_PAIR,
    read_angle,
    register_steps,
    solve_positions,
)
from generator.kinds.questions import Part, Pick, Question, answer_with_slips, lettered, shuffled_item
from generator.maths import masks
from generator.maths.exact import parse_exact, shown
from generator.maths.spec import SpecError
from generator.rendering.language import N_

# -- the question ----------------------------------------------------------------------------------

PARTS = {  # up to the weights, where positions make their difference (V and O follow as always)
    "sinusoidal": (("pe-table", ("PE",)), ("pe-add", ("X_pe",)), ("pos-qk", ("Q", "K")),
                   ("pos-scores", ("scores", "scaled", "masked")), ("pos-weights", ("weights",))),
    "rope": (("pos-qk", ("Q", "K")), ("rope-turn", ("Q_rot", "K_rot")),
             ("pos-scores", ("rope_scores", "scaled", "masked")), ("pos-weights", ("weights",)),
             ("rope-offset", ("q_far", "k_far", "s_far"))),
    "alibi": (("pos-qk", ("Q", "K")), ("pos-scores", ("scores", "scaled")),
              ("alibi-bias", ("bias",)), ("alibi-add", ("biased", "masked")), ("pos-weights", ("weights",))),
}
STEP_MARKS = {"weights": 3, "output": 2, "scores": 2, "rope_scores": 2, "Q_rot": 2, "K_rot": 2, "PE": 2}


def positions_question(spec) -> Question:
    """The encoding's parts, each a group of the solution's steps; the sinusoid's permutation choice."""
    solution = solve_positions(spec)
    present = {step.name for step in solution.steps if step.kind != "given"}
    parts = []
    for task, names in PARTS[spec.encoding]:
        names = tuple(n for n in names if n in present)
        if names:
            marks = tuple(STEP_MARKS.get(n, 1) for n in names)
            parts.append(Part(task, sum(marks), tuple(solution.step(n) for n in names), step_marks=marks,
                              notes=False))
    extra = {}
    if spec.encoding == "sinusoidal" and spec.n_queries >= 2:
        extra["swapped"] = solve_positions(swapped(spec))
        parts.append(permute_part(spec, solution, extra["swapped"]))
    if spec.encoding == "rope":  # the offset part's score beside S_{2,1}
        query, key = OFFSET_PAIR
        parts[-1] = replace(parts[-1], answer=(solution.step("s_far").entries[0][0],
                                               solution.step("rope_scores").entries[query][key]))
    given = tuple(solution.step(n) for n in ("X", "W_Q", "W_K", "Q", "K") if _given(solution, n))
    picks = offset_picks(spec) if spec.encoding == "rope" else ()
    return Question(NAME, spec, solution, given, lettered(parts), extra=extra, picks=picks)


def offset_picks(spec) -> tuple[Pick, Pick]:
    """The offset part's q and k, read off the student's own Q and K on the practice page (row 2 of
    Q, row 1 of K), so that a slip there, carried forward, costs (e) nothing."""
    query, key = OFFSET_PAIR
    columns = tuple(range(spec.d_k))
    return Pick("q_sel", "Q", (query,), columns), Pick("k_sel", "K", (key,), columns)


def permute_part(spec, solution, after_swap) -> Part:
    """The permutation choice, its right answer true of the problem's own numbers: the swapped
    weights' first row against PAP^T's (refused where they agree: the part would show nothing) and
    against A's (where they agree, a spec's numbers leave A as it was: the item says so)."""
    order = [1, 0, *range(2, spec.n_keys)]
    weights = solution.step("weights").entries
    moved = after_swap.step("weights").entries[0]
    kept = tuple(weights[1][k] for k in order)

    def same(row) -> bool:
        return max(abs(a.value - b.value) for a, b in zip(moved, row)) < 1e-9

    if same(kept):
        raise SpecError(f"problem {spec.id}: swapping tokens 1 and 2 changes nothing here (the "
                        f"permutation part would show no difference); give tokens 1 and 2 other "
                        f"embeddings")
    after = after_swap.step("weights").entries
    unchanged = all(abs(a.value - b.value) < 1e-9
                    for row, other in zip(weights, after) for a, b in zip(row, other))
    topic, choices = ("permute-positions-same", PERMUTE_SAME) if unchanged else ("permute-positions", PERMUTE)
    return Part("pe-permute", 1, answer=(moved, kept), item=shuffled_item(topic, choices, spec.id))


def _given(solution, name: str) -> bool:
    return any(step.name == name and step.is_given for step in solution.plan)


def swapped(spec):
    """The spec with tokens 1 and 2 swapped in X (their positions stay where they are)."""
    x = spec.matrices["X"]
    return replace(spec, id=f"{spec.id}-swapped", matrices={**spec.matrices, "X": (x[1], x[0], *x[2:])})


PERMUTE = (
    (N_(r"It is not just $A$ with rows 1 and 2 and columns 1 and 2 swapped: each of the two tokens now "
     r"sits at the other's position and gets that position's encoding, so $X + \mathrm{PE}$ is not the "
     r"old one with two rows swapped, and the scores change."), ""),
    (N_(r"It is $A$ with rows 1 and 2 and columns 1 and 2 swapped, $A' = PAP^{\top}$: attention is "
     r"permutation-equivariant."),
     N_(r"that holds without positional information; the encoding is added by position, not by token, "
     r"so the swapped tokens get new encodings")),
    (N_(r"It does not change at all: softmax sums over every key."),
     N_(r"each row is one query's own; even without positions the rows and columns would swap")),
    (N_(r"Only its rows 1 and 2 swap, as the rows of $X$ do."),
     N_(r"the tokens are keys too: without positions the columns would swap as well, and with "
     r"$\mathrm{PE}$ not even that holds")),
)

# Where a spec's numbers leave A as it was after the swap (the scores reach only what the two
# tokens share, here): not equivariance, and not "the scores change" either.
PERMUTE_SAME = (
    (N_(r"With these numbers it stays $A$, which is not $PAP^{\top}$: each of the two tokens gets the "
     r"other's encoding, so $X + \mathrm{PE}$ is not the old one with two rows swapped, yet here the "
     r"weights come out as before."), ""),
    (N_(r"It is $A$ with rows 1 and 2 and columns 1 and 2 swapped, $A' = PAP^{\top}$: attention is "
     r"permutation-equivariant."),
     N_(r"that holds without positional information; the encoding is added by position, not by token")),
    (N_(r"It changes: the swapped tokens get new encodings, so the scores and the weights change."),
     N_(r"the encodings move, but with these numbers the weights come out as before: work them out")),
    (N_(r"Only its rows 1 and 2 swap, as the rows of $X$ do."),
     N_(r"the tokens are keys too; and with these numbers the rows stay as they were")),
)

# -- its keys ------------------------------------------------------------------------------------

def read_encoding(value, spec, where: str) -> str:
    """Which encoding the question asks."""
    if value not in ENCODINGS:
        raise SpecError(f"{where}: encoding must be one of {', '.join(ENCODINGS)}, got {shown(value)}")
    return value


def read_positions(value, spec, where: str) -> tuple[int, ...]:
    """A position a token, whole numbers from 0 to 1000."""
    n = spec.n_queries
    if (not isinstance(value, list) or len(value) != n
            or any(isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 1000 for p in value)):
        raise SpecError(f"{where}: positions must be a list of {n} whole numbers from 0 to 1000 (one a "
                        f"token), got {shown(value)}")
    return tuple(value)


def _whole(key: str, low: int, high: int):
    def read(value, spec, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SpecError(f"{where}: {key} must be a whole number from {low} to {high}, got {shown(value)}")
        return value
    return read


def read_theta(value, spec, where: str) -> tuple[sympy.Expr, ...]:
    """RoPE's angles, one a pair of the queries' columns (how many: ``_check``'s, once the
    encoding and an even d_k are known)."""
    if not isinstance(value, list) or not value:
        raise SpecError(f"{where}: theta must be a list of angles (one a pair of columns of Q and K), "
                        f"got {shown(value)}")
    try:
        angles = tuple(read_angle(v) for v in value)
    except ValueError as error:
        raise SpecError(f"{where}: theta: {error}") from None
    if not all(a.is_positive and a <= 4 for a in angles):
        raise SpecError(f"{where}: theta: each angle must be above 0 and at most 4 radians, "
                        f"got {shown(value)}")
    return angles


def read_slope(value, spec, where: str) -> sympy.Expr:
    """ALiBi's slope: a number above 0, at most 1."""
    try:
        slope = parse_exact(value)
    except ValueError as error:
        raise SpecError(f"{where}: slope: {error}") from None
    if not (slope.is_positive and slope <= 1):
        raise SpecError(f"{where}: slope must be above 0 and at most 1, got {shown(value)}")
    return slope


PARAMS = (Param("encoding", read_encoding, default="sinusoidal"), Param("positions", read_positions,
                                                                       write=list),
          Param("base", _whole("base", 2, 100000)),
          Param("theta", read_theta, write=lambda angles: [str(a) for a in angles]),
          Param("shift", _whole("shift", 1, 100)),
          Param("slope", read_slope, write=str))
OWN_KEYS = {"base": ("sinusoidal", "rope"), "theta": ("rope",), "shift": ("rope",), "slope": ("alibi",)}


def _check(spec) -> str | None:
    """Self-attention (X, or Q, K and V of as many rows); the keys of its encoding only; the widths
    its encoding pairs up."""
    encoding = spec.encoding
    for key, takers in OWN_KEYS.items():
        if key in spec.params and encoding not in takers:
            default = " (the default where a spec names no encoding)" if encoding == "sinusoidal" else ""
            return (f"{key} goes with {' or '.join(f'encoding = {t!r}' for t in takers)}, not "
                    f"{encoding!r}{default}".replace("'", '"'))
    if spec.mask not in ("none", "causal"):
        return f"type positions takes no mask or the causal one, not {spec.mask}"
    if spec.cross:
        return "type positions is self-attention: give X (or Q, K and V with a row a token each)"
    if encoding == "sinusoidal" and not spec.from_embeddings:
        return "encoding sinusoidal adds PE to the embeddings: give X, W_Q, W_K and W_V"
    if encoding == "sinusoidal" and spec.d_model % 2:
        return (f"encoding sinusoidal pairs the columns of X (sin, cos): d_model must be even, "
                f"got {spec.d_model}")
    if encoding == "rope" and spec.d_k % 2:
        return f"encoding rope turns pairs of columns of Q and K: d_k must be even, got {spec.d_k}"
    if encoding == "rope" and spec.theta and len(spec.theta) != spec.d_k // 2:
        pairs = spec.d_k // 2
        return (f"theta must be a list of {pairs} angle{'s' if pairs != 1 else ''} (one a pair of "
                f"columns, d_k = {spec.d_k}), got {shown([str(a) for a in spec.theta])}")
    if encoding == "rope" and spec.n_queries < 2:
        return ("encoding rope needs at least 2 tokens (its offset part moves token 2's query and "
                "token 1's key)")
    return None


STEPS = r"{% set g = dict(zip(question.solution.steps | map(attribute='name'), question.solution.steps)) %}"
STATEMENT = (
    STEPS + r"{% set n = spec.n_queries %}{% if spec.from_embeddings %}A sequence of {{ n }} tokens has "
    r"embeddings as the rows of $X$ ($d_{\text{model}} = {{ spec.d_model }}$), projected to queries and keys "
    r"by $W_Q$ and $W_K${% else %}The rows of $Q$ and $K$ are the queries and keys of {{ n }} tokens"
    r"{% endif %}; here $d_k = {{ spec.d_k }}$.{% if spec.mask == 'causal' %} A causal mask applies: "
    r"query $i$ may attend only to keys $1, \dots, i$ (the matrix $M$ with $M_{ij} = 0$ for $j \le i$ "
    r"and $-\infty$ for $j > i$, added to the scores before the softmax).{% endif %} The {{ n }} tokens "
    r"sit at positions $p = {% for row in g.pos.exact %}{{ row[0] }}{{ ', ' if not loop.last }}{% endfor %}$ "
    r"(token $i$ at the $i$-th of them)."
    r"{% if spec.encoding == 'sinusoidal' %} A sinusoidal positional encoding (Vaswani et al., 2017) of "
    r"width $d = d_{\text{model}} = {{ spec.d_model }}$ is added to the embeddings: $\mathrm{PE}(p, 2i) = "
    r"\sin(p\,\omega_i)$ and $\mathrm{PE}(p, 2i+1) = \cos(p\,\omega_i)$ with $\omega_i = "
    r"{{ spec.base or 10000 }}^{(-2i/d)}$, here {% for w in g.freq.exact[0] %}"
    r"$\omega_{{ loop.index0 }} = {{ w | tex }}${% if not loop.last %}, {% endif %}{% endfor %} (angles in "
    r"radians; "
    r"columns counted from 0 in the formula, from 1 in the matrices). Then $Q = \tilde{X}W_Q$ "
    r"and $K = \tilde{X}W_K$ with $\tilde{X} = X + \mathrm{PE}$."
    r"{% elif spec.encoding == 'rope' %} Rotary position embedding (RoPE; Su et al., RoFormer) turns "
    r"the queries and keys: each pair of columns $(2i+1, 2i+2)$ of the row of the token at position $m$ "
    r"(interleaved pairs, as the paper) is turned by the angle $m\,\theta_i$ (radians), $(x, y) \mapsto\; "
    r"(x\;\cos(m\theta_i) - y\;\sin(m\theta_i),\; x\;\sin(m\theta_i) + y\;\cos(m\theta_i))$, with "
    r"{% for t in g.angles.exact[0] %}$\theta_{{ loop.index0 }} = {{ t | tex }}$"
    r"{% if not loop.last %}, {% endif %}{% endfor %}{% if not spec.theta %} "
    r"($\theta_i = {{ spec.base or 10000 }}^{(-2i/d_k)}$, the paper's){% endif %}. The values are not turned."
    r"{% else %} ALiBi (Press et al., 2022) adds no encoding to the embeddings: a bias $B_{ij} = "
    r"-m\,|p_i - p_j|$ is added to the scaled scores before the softmax, with this head's slope "
    r"$m = {{ g.alibi_m.exact[0][0] | tex }}$ (the paper's 8 heads take $m = 1/2, 1/4, \dots, 1/256$)."
    r"{% if spec.mask == 'causal' %} As in the paper the attention is causal: the mask applies "
    r"after the bias.{% endif %}{% endif %}",
    GIVEN,
    r"Work out the attention weights $A$ with these positions, showing every intermediate result "
    r"(the values and the output $AV$ follow as without positions, and are not asked).")

PROMPTS = {
    "pe-table": r"Compute the positional encodings $\mathrm{PE}$, a row a position (${{ spec.n_queries }} "
                r"\times {{ spec.d_model }}$): write the angles and each sine and cosine.",
    "pe-add": r"Add them to the embeddings: $\tilde{X} = X + \mathrm{PE}$.",
    "pos-qk": r"Compute the queries $Q$ and the keys $K${% if spec.encoding == 'sinusoidal' %} from "
              r"$\tilde{X}${% endif %}.",
    "rope-turn": r"Turn the queries and keys: $\tilde{Q} = \operatorname{RoPE}(Q)$ and $\tilde{K} = "
                 r"\operatorname{RoPE}(K)$, row $m$ at its position; show each angle, its cosine and sine.",
    "pos-scores": r"Compute the scores {% if spec.encoding == 'rope' %}$S = \tilde{Q}\tilde{K}^{\top}$"
                  r"{% else %}$S = QK^{\top}${% endif %}{% if not spec.unscaled %} and scale them"
                  r"{% endif %}{% if spec.masked and spec.encoding != 'alibi' %}, then apply the mask"
                  r"{% endif %}.",
    "alibi-bias": r"Write the bias $B$, $B_{ij} = -m\,|p_i - p_j|$ (${{ spec.n_queries }} \times "
                  r"{{ spec.n_queries }}$).",
    "alibi-add": r"Add it to the {% if spec.unscaled %}scores{% else %}scaled scores{% endif %}, "
                 r"$\bar{S} = {{ 'biased' | input_of | sym }} + B${% if spec.masked %}, then apply the "
                 + masks.NAME_PROSE + r"{% endif %}.",
    "pos-weights": "Apply softmax to each row to get the attention weights $A$; show the exponentials, "
                   "their sums and the quotients.",
    "rope-offset": STEPS + r"{% set m = g.pos_q.exact[0][0] %}{% set n = g.pos_k"
                   r".exact[0][0] %}{% set shift = spec.shift or 2 %}Move both tokens on by "
                   r"{{ shift }} {% if shift == 1 %}position{% else %}positions{% endif %}: token 2's query "
                   r"$q$ (row 2 of $Q$) to position $m' = {{ m }}$ and token 1's key $k$ (row 1 of $K$) to "
                   r"position $n' = {{ n }}$. Turn each there, "
                   r"$\tilde{q}$ and $\tilde{k}$, and compute their score $s = \tilde{q}\,\tilde{k}^{\top}$. "
                   r"Compare it with $S_{2,1}$.",
    "pe-permute": STEPS + r"Swap tokens 1 and 2 in $X$ (the positions stay: the first row of $X$ is "
                  r"still at "
                  r"position {{ g.pos.exact[0][0] }}). "
                  r"What happens to the weights $A$?",
}
AFTER = {
    "pe-table": r"Each pair of columns is a point on the unit circle ($\sin^2 + \cos^2 = 1$), turned "
                r"further the later the position; the first pair turns fastest.",
    "rope-offset": STEPS + r"$s = {{ part.answer[0] | num }}$, which is "
                   r"$S_{2,1} = {{ part.answer[1] | num }}$: "
                   r"{% set shift = spec.shift or 2 %}moving both on by {{ shift }} "
                   r"{% if shift == 1 %}position{% else %}positions{% endif %} "
                   r"turns pair $i$ of $q$ and pair $i$ of $k$ by the same extra angle, "
                   r"${{ shift }}\,\theta_i$, which leaves each pair's dot product, and so their sum, "
                   r"as it was, so the "
                   r"score depends on the positions only through their difference, "
                   r"$n' - m' = {{ g.pos_k.exact[0][0] - g.pos_q.exact[0][0] }}$, "
                   r"as in $S_{2,1}$.",
    "alibi-bias": r"The diagonal is 0 (a token is no distance from itself); the further key $j$ is "
                  r"from query $i$, the more its score is lowered, so that, other things equal, near "
                  r"tokens weigh more.",
    "pe-permute": STEPS + r"With the problem's numbers: after the swap the first row of the weights is "
                  r"$({% for n in part.answer[0] %}{{ n | num }}{{ ', ' if not loop.last }}{% endfor %})$, "
                  r"while the swap alone would give row 2 of $A$ with its entries 1 and 2 swapped, "
                  r"$({% for n in part.answer[1] %}{{ n | num }}{{ ', ' if not loop.last }}{% endfor %})$. "
                  r"{% if part.item.topic == 'permute-positions-same' %}Here the first is row 1 of $A$ "
                  r"itself: with these numbers the weights come out as before the swap. {% endif %}"
                  r"Without $\mathrm{PE}$ the two would be equal: attention alone is permutation-"
                  r"equivariant, $A' = PAP^{\top}$.",
}


register(QuestionType(
    NAME, positions_question, "Attention with positions", STATEMENT, prompts=PROMPTS,
    keys={"pe-permute": answer_with_slips()}, after=AFTER, choice="{{ choice }}", params=PARAMS,
    check=_check, min_tokens=2, draw_options=draw_options, draw_params=draw_params,
    not_drawable=lambda options: ("the encodings' sines and cosines (and the softmax) need a calculator"
                                  if options.no_calculator else None),
    in_default_mix=False, shrinks=(), shared=("encoding",), in_turn=("encoding", ENCODINGS)))


positions_ops.register()
register_steps()
