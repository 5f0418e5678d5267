"""Question type "heads": two-head attention. Project once, split the columns between the
heads, attend in each head, concatenate the heads' outputs and project them by W_O."""

from __future__ import annotations

from dataclasses import replace

from ..engine import run, solve
from ..questions import Part, Question, given_steps, lettered
from ..spec import MAX_DIMENSION, ProblemSpec
from ..steps import REGISTRY, given_def
from ..worthiness import heads_are_readable
from . import GIVEN, QuestionType, register
from .full import PROMPTS

HEADS = 2


def heads_question(spec) -> Question:
    single = replace(spec, matrices={k: v for k, v in spec.matrices.items() if k != "W_O"})
    solution = solve(single)
    q, k, v = (solution.step(name) for name in "QKV")
    split = [{name: _columns(step, h) for name, step in zip("QKV", (q, k, v))} for h in range(HEADS)]
    heads = tuple(solve(ProblemSpec(f"{spec.id}-head{h + 1}", parts, scale=spec.scale))
                  for h, parts in enumerate(split))
    outputs = {f"head{h}.output": head.step("output") for h, head in enumerate(heads, 1)}
    concat_def = replace(REGISTRY["concat"], inputs=tuple(outputs))
    combined = run((*(given_def(name) for name in outputs), REGISTRY["W_O"], concat_def,
                    REGISTRY["projected"]), spec, known=outputs)
    w_o, concat, projected = (combined.step(name) for name in ("W_O", "concat", "projected"))
    head_steps = ("scores", "weights", "output") if spec.unscaled else (
        "scores", "scaled", "weights", "output")
    head_parts = [Part("head", 4, tuple(h.step(n) for n in head_steps),
                       step_marks=(1, 2, 1) if spec.unscaled else (1, 1, 1, 1),
                       label=f"Head {i}", head=i) for i, h in enumerate(heads, 1)]
    split_names = tuple(f"head{h}.{n}" for h in range(1, HEADS + 1) for n in "QKV")
    parts = lettered([
        Part("Q", 3, (q, k, v), step_marks=(1, 1, 1)),
        Part("split", 2, tuple(head.step(n) for head in heads for n in "QKV"),
             shown_as=tuple(f"{n}_{h}" for h in range(1, HEADS + 1) for n in "QKV"),
             grid_names=split_names),
        *head_parts, Part("concat", 1, (concat,), step_marks=(1,)),
        Part("projected", 2, (projected,), step_marks=(2,))])
    worked = (("", solution), *((f"head{h}.", head) for h, head in enumerate(heads, 1)),
              ("", combined))
    return Question("heads", spec, solution, given_steps(solution) + (w_o,), parts, heads=heads,
                    combined=combined, worked_by_parts=worked)


def _columns(step, head: int) -> tuple:
    """Head ``head``'s block of the step's columns, as exact numbers."""
    width = step.shape[1] // HEADS
    return tuple(tuple(n.exact for n in row[head * width:(head + 1) * width]) for row in step.entries)


def _check(spec) -> str | None:
    if not spec.from_embeddings:
        return "type heads needs X, W_Q, W_K and W_V"
    if spec.mask != "none":
        return "type heads takes no mask"
    if spec.d_k % HEADS or spec.d_v % HEADS:
        return f"d_k and d_v must split evenly into {HEADS} heads"
    if len(spec.matrices["W_O"]) != spec.d_v:
        return f"W_O has {len(spec.matrices['W_O'])} rows but the heads give {spec.d_v} columns"
    return None


def _draw_options(options):
    even = [min(MAX_DIMENSION, d + d % 2) for d in (options.d_k, options.d_v)]
    return replace(options, mask="none", d_k=even[0], d_v=even[1])


def _not_drawable(options) -> str | None:
    if options.weights in ("identity", "diagonal"):
        return (f"with {options.weights} weights each head sees only its own half of every "
                f"token, so some rows are zero; use --weights integer or decimal")
    return None


register(QuestionType(
    "heads", heads_question, "Two attention heads",
    (r"Two-head self-attention on a sequence of {{ spec.n_queries }} tokens "
     r"($d_{\text{model}} = {{ spec.d_model }}$). $W_Q$, $W_K$ and $W_V$ project all heads at once; "
     r"head $h$ uses its own block of columns of $Q$, $K$ and $V$ (head 1 the first half, head 2 "
     r"the second), so each head has $d_k = {{ question.heads[0].spec.d_k }}$ and "
     r"$d_v = {{ question.heads[0].spec.d_v }}$. The heads' outputs are concatenated and projected "
     r"by $W_O$: $\operatorname{MultiHead}(X) = [O_1, O_2]\, W_O$ with $O_h = \operatorname{softmax}("
     r"{% if spec.unscaled %}Q_h K_h^{\top}{% elif spec.scale is none %}Q_h K_h^{\top}/\sqrt{d_k}"
     r"{% else %}{{ spec.scale | tex }}\, Q_h K_h^{\top}{% endif %}) V_h$.", GIVEN),
    prompts={**PROMPTS,
             "split": r"Split $Q$, $K$ and $V$ into the heads' matrices $Q_1, K_1, V_1$ and "
                      r"$Q_2, K_2, V_2$.",
             "head": r"{{ part.label }}: compute its scores $Q_h K_h^{\top}$,{% if not spec.unscaled %}"
                     r" scaled scores,{% endif %} attention weights and output $O_h$."},
    keys={"split": "Head 1 takes the first {{ question.heads[0].spec.d_k }} columns of $Q$ and $K$ "
                   "and the first {{ question.heads[0].spec.d_v }} of $V$; head 2 the rest "
                   "({{ (part.marks / 2) | int }} mark a head)."},
    matrices=("W_O",), heads=HEADS, check=_check, draw_options=_draw_options,
    draw_params=lambda rng, candidate, decimals: (
        {} if heads_are_readable(candidate, HEADS, decimals) else None),
    not_drawable=_not_drawable))
