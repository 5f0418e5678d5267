"""Question type "grouped": grouped-query attention (GQA), and multi-query attention (MQA) where
one key/value head serves every query head.  W_Q projects H_q query heads at once, W_K and
W_V only the H_kv shared key/value heads; query head h reads key/value head g(h), the one its
group shares.  Each head attends on its own, and their outputs are concatenated and projected
by W_O, as in multi-head attention (the builder is the heads type's)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.full import PROMPTS
from generator.kinds.heads import OTHERS, Layout, multi_head_question
from generator.kinds.sampling import DIAGONAL_ENTRIES, NO_CALCULATOR_DK
from generator.maths.engine import run
from generator.maths.exact import shown as shown_text
from generator.maths.spec import FROM_EMBEDDINGS, FROM_PROJECTIONS, SpecError, one_based
from generator.maths.steps import plan_for
from generator.maths.worthiness import grouped_are_readable

MOST_HEADS = 8
# Drawn: one-hot tokens (easy), multi-query attention with two query heads two wide over one
# key/value head; otherwise four query heads one wide over two key/value heads, one head worked.
DRAWN = {"one-hot": (2, 1, 2, 2), "other": (4, 2, 2, 1)}  # (H_q, H_kv, d_k, d_v per head)


def layout_of(spec) -> Layout:
    """The spec's query heads over its key/value heads."""
    return Layout(spec.heads, spec.kv_heads)


def grouped_question(spec):
    """A grouped-query question: Q, K and V projected (or given), each query head's block of Q
    with its group's K_g and V_g, and the heads' outputs concatenated and projected by W_O."""
    single = replace(spec, matrices={k: v for k, v in spec.matrices.items() if k != "W_O"})
    projections = tuple(step for step in plan_for(single)
                        if step.name in FROM_EMBEDDINGS + FROM_PROJECTIONS)
    return multi_head_question(spec, run(projections, single), layout_of(spec))


def _widths(spec) -> tuple[int, int]:
    """The widths of K and V (W_K's and W_V's columns, or K's and V's)."""
    k, v = ("W_K", "W_V") if spec.from_embeddings else ("K", "V")
    return len(spec.matrices[k][0]), len(spec.matrices[v][0])


def _check(spec) -> str | None:
    """Query heads a multiple of the key/value heads; every width split evenly; W_O as wide as
    the query heads' outputs; no mask."""
    layout, (d_key, d_value) = layout_of(spec), _widths(spec)
    q, k, v = ("W_Q", "W_K", "W_V") if spec.from_embeddings else ("Q", "K", "V")
    if layout.heads % layout.kv_heads or layout.kv_heads >= layout.heads:
        return (f"heads = {layout.heads} query heads must be a multiple of kv_heads = "
                f"{layout.kv_heads} key/value heads, and more (as many is type heads)")
    if spec.head is not None and spec.head > layout.heads:
        return f"head must be one of 1 to {layout.heads}"
    if spec.mask != "none":
        return "type grouped takes no mask"
    if spec.d_k % layout.heads:
        return (f"{q} has {spec.d_k} columns, which do not split evenly into {layout.heads} query "
                f"heads (expected {layout.heads} x d_k)")
    d_k = spec.d_k // layout.heads
    if d_key != layout.kv_heads * d_k:
        return (f"{k} has {d_key} column{'s' if d_key > 1 else ''} but {layout.kv_heads} key/value "
                f"head{'s' if layout.kv_heads > 1 else ''} of d_k = {d_k} "
                f"need {layout.kv_heads * d_k} ({q}'s {spec.d_k} columns over {layout.heads} query heads)")
    if d_value % layout.kv_heads:
        return (f"{v} has {d_value} columns, which do not split evenly into {layout.kv_heads} "
                f"key/value heads")
    heads_out = layout.heads * (d_value // layout.kv_heads)
    if len(spec.matrices["W_O"]) != heads_out:
        return (f"W_O has {len(spec.matrices['W_O'])} rows but {layout.heads} query heads of d_v = "
                f"{d_value // layout.kv_heads} give {heads_out} columns")
    return None


def read_count(name: str, least: int):
    """A reader of a count of heads (``heads``: 2 to 8, ``kv_heads``: 1 to 8)."""
    def read(value, spec, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MOST_HEADS:
            raise SpecError(f"{where}: {name} must be a whole number from {least} to {MOST_HEADS}, "
                            f"got {shown_text(value)}")
        return value
    return read


# ``heads``: query heads (H_q, 2 when left out); ``kv_heads``: key/value heads (H_kv, 1: multi-
# query attention); ``head``: work that query head alone, the others' outputs given.
PARAMS = (Param("heads", read_count("heads", 2), default=2),
          Param("kv_heads", read_count("kv_heads", 1), default=1),
          Param("head", lambda value, spec, where: one_based(value, MOST_HEADS, "head", where) + 1))


def drawn_layout(one_hot: bool) -> tuple[int, int, int, int]:
    """(H_q, H_kv, d_k and d_v per head) of a drawn problem."""
    return DRAWN["one-hot" if one_hot else "other"]


def _draw_options(options):
    """The drawn layout's widths (without a calculator, each head's d_k as the table needs, so that
    the type's own reason is the one given: it is drawn with a calculator only)."""
    heads, kv_heads, d_k, d_v = drawn_layout(options.embeddings == "one-hot")
    d_k = NO_CALCULATOR_DK if options.no_calculator else d_k
    return replace(options, mask="none", d_k=heads * d_k, d_v=heads * d_v, heads=(heads, kv_heads))


def _draw_params(rng, candidate, decimals):
    """K and V narrowed to the shared heads (the candidate's first blocks); with diagonal
    weights (one-hot tokens), W_O a stack of diagonals; every head readable; with four query
    heads, one worked (drawn), the others' outputs given."""
    heads, kv_heads = candidate.heads
    w_k, w_v = (w[:, :kv_heads * (w.shape[1] // heads)] for w in (candidate.w_k, candidate.w_v))
    w_o = candidate.w_o
    if not np.all(np.any(w_o != 0, axis=1)) and _diagonal(candidate.w_q):
        rows, columns = w_o.shape
        stacked = np.tile(np.eye(columns), (-(-rows // columns), 1))[:rows]
        w_o = stacked * rng.choice(DIAGONAL_ENTRIES, (rows, 1))
    head = int(rng.integers(1, heads + 1)) if heads > 2 else None  # the one head worked
    given = {"X": candidate.x, "W_Q": candidate.w_q, "W_K": w_k, "W_V": w_v}
    if not grouped_are_readable(given, w_o, heads, kv_heads, candidate.scale, decimals,
                                worked=(head - 1,) if head else ()):
        return None
    params = {"heads": heads, "kv_heads": kv_heads,
              "matrices": {"W_K": _exact(w_k), "W_V": _exact(w_v), "W_O": _exact(w_o)}}
    return params if head is None else {**params, "head": head}


def _diagonal(weights) -> bool:
    """Diagonal weights (wrapped round): one nonzero entry in each column."""
    return bool(np.all(np.count_nonzero(weights, axis=0) == 1))


def _exact(matrix) -> tuple:
    return tuple(tuple(sympy.Rational(int(round(v * 100)), 100) for v in row) for row in matrix)


def _not_drawable(options) -> str | None:
    if options.no_calculator:
        return "its heads' scores are not drawn to the no-calculator table: it is drawn with a calculator"
    if options.weights == "identity":
        return "with identity weights the shared heads' keys are zero for some tokens; use --weights integer"
    if options.weights == "diagonal" and options.embeddings != "one-hot":
        return ("with diagonal weights over tokens that are not one-hot, no draw passes every head's "
                "checks; use --weights integer or decimal")
    return None


# The heads sharing each key/value head, and the sharing in words.
SHARING = (r"{% set g = spec.heads // spec.kv_heads %}{% for kv in range(1, spec.kv_heads + 1) %}"
           r"{% if loop.first %}Query heads{% else %}query heads{% endif %} "
           r"{{ range(g * kv - g + 1, g * kv + 1) | and_list }} use $K_{{ kv }}$, $V_{{ kv }}$"
           r"{% if not loop.last %}; {% else %}.{% endif %}{% endfor %}")
SHARED_BY = r"{% set g = ((part.head - 1) // (spec.heads // spec.kv_heads)) + 1 %}"

register(QuestionType(
    "grouped", grouped_question,
    "{% if spec.kv_heads == 1 %}Multi-query attention{% else %}Grouped-query attention{% endif %}",
    (r"{% set h = spec.heads %}" + OTHERS +
     r"{% if spec.kv_heads == 1 %}Multi-query attention{% else %}Grouped-query attention{% endif %} "
     r"on a sequence of {{ spec.n_queries }} tokens{% if spec.from_embeddings %} ($d_{\text{model}} = "
     r"{{ spec.d_model }}$){% endif %}: {{ spec.heads }} query heads share {% if spec.kv_heads == 1 %}"
     r"one key/value head{% else %}{{ spec.kv_heads }} key/value heads, {{ spec.heads // spec.kv_heads }} "
     r"query heads to each{% endif %}. {% if spec.from_embeddings %}$W_Q$ projects all query heads at "
     r"once; $W_K$ and $W_V$ project only the shared heads{% else %}$Q$ is given for all query heads at "
     r"once, $K$ and $V$ for the shared heads only{% endif %}, so $Q$ has {{ spec.heads }} blocks of "
     r"$d_k = {{ question.extra.head1.spec.d_k }}$ {% if question.extra.head1.spec.d_k > 1 %}columns"
     r"{% else %}column{% endif %} and $K$ and $V$ have {{ spec.kv_heads }} "
     r"{% if spec.kv_heads > 1 %}blocks{% else %}block{% endif %} "
     r"($d_v = {{ question.extra.head1.spec.d_v }}$). "
     + SHARING + r" Why share: a model keeps the keys and values of every token it has seen (its KV "
     r"cache), and with {{ spec.kv_heads }} key/value {% if spec.kv_heads > 1 %}heads{% else %}head"
     r"{% endif %} "
     r"instead of {{ spec.heads }} that cache is {{ spec.heads // spec.kv_heads }} times smaller. Each "
     r"query head $h$ attends with its group's head $g$: $O_h = \operatorname{softmax}("
     r"{% if spec.unscaled %}Q_h K_g^{\top}{% elif spec.scale is none %}Q_h K_g^{\top}/\sqrt{d_k}"
     r"{% else %}{{ spec.scale | tex }}\, Q_h K_g^{\top}{% endif %}) V_g$, and the outputs are "
     r"concatenated and projected: $Y = [{% for i in range(1, h + 1) %}O_{{ i }}"
     r"{{ ', ' if not loop.last else '' }}{% endfor %}]\, W_O$.{% if spec.head %}"
     r"{% if others | length > 1 %} Query heads {{ others | and_list }} are worked out already: "
     r"{{ others | and_list('$O_{}$') }} are given below{% else %} Query head {{ others[0] }} is worked "
     r"out already: $O_{{ others[0] }}$ is given below{% endif %} (you work query head {{ spec.head }} "
     r"alone).{% endif %}", GIVEN, SHOWN),
    prompts={**PROMPTS,
             "split": r"Take {% if spec.head %}{% set g = ((spec.head - 1) // (spec.heads // spec.kv_heads)) "
                      r"+ 1 %}query head {{ spec.head }}'s block $Q_{{ spec.head }}$ out of $Q$, and the "
                      r"key/value head it shares, $K_{{ g }}$ and $V_{{ g }}$, out of $K$ and $V$"
                      r"{% else %}each query head's block $Q_h$ out of $Q$, and each shared head's $K_g$ "
                      r"and $V_g$ out of $K$ and $V${% endif %}.",
             "head": SHARED_BY + r"Head {{ part.head }} (with $K_{{ g }}$, $V_{{ g }}$): compute its scores "
                     r"$Q_{{ part.head }} K_{{ g }}^{\top}$,{% if not spec.unscaled %} scaled scores,"
                     r"{% endif %} attention weights and output $O_{{ part.head }}$.",
             "concat": r"Concatenate the query heads' outputs: $C = [{% for i in range(1, spec.heads + 1) %}"
                       r"O_{{ i }}{{ ', ' if not loop.last else '' }}{% endfor %}]$.",
             "projected": r"Project the concatenation: $Y = C\, W_O$. What is its shape?"},
    keys={"split": SHARING + r" Each query head's $Q_h$ is its block of {{ question.extra.head1.spec.d_k }} "
                   r"{% if question.extra.head1.spec.d_k > 1 %}columns{% else %}column{% endif %} of $Q$; "
                   r"each shared $K_g$, $V_g$ the $g$-th block of $K$ and $V$ ({{ part.marks }} "
                   r"{% if part.marks > 1 %}marks{% else %}mark{% endif %})."},
    matrices=("W_O",), heads=2, own_widths=True, check=_check, draw_options=_draw_options,
    draw_params=_draw_params, not_drawable=_not_drawable, params=PARAMS,
    shrinks=("given", "tokens", "focus", "fewer-tokens"),
    focus=lambda rng, candidate, params, decimals: {"head": params.get("head", 1)},
    in_default_mix=False))
