"""Question type "heads": two-head attention. Project once, split the columns between the
heads, attend in each head, concatenate the heads' outputs and project them by W_O."""

from __future__ import annotations

from dataclasses import replace

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.full import PROMPTS
from generator.kinds.places import PLACES, short_places, to_places
from generator.kinds.questions import Part, Pick, Question, given_steps, lettered
from generator.maths.engine import Step, run, solve
from generator.maths.spec import MAX_DIMENSION, ProblemSpec, one_based
from generator.maths.steps import REGISTRY, given_def
from generator.maths.steps import register as register_step
from generator.maths.worthiness import heads_are_readable

HEADS = 2


def heads_question(spec) -> Question:
    """A heads question: the single-head Q, K and V, split into each head's columns; each head
    attends on its own, and their outputs are concatenated and projected by W_O."""
    single = replace(spec, matrices={k: v for k, v in spec.matrices.items() if k != "W_O"})
    solution = solve(single)
    q, k, v = (solution.step(name) for name in "QKV")
    split = [{name: _columns(step, h) for name, step in zip("QKV", (q, k, v))} for h in range(HEADS)]
    heads = tuple(solve(ProblemSpec(f"{spec.id}-head{h + 1}", parts, scale=spec.scale))
                  for h, parts in enumerate(split))
    outputs = {f"head{h}.output": head.step("output") for h, head in enumerate(heads, 1)}
    concat_def = replace(REGISTRY["concat"], inputs=tuple(outputs))
    combined = run((*(given_def(name) for name in outputs), REGISTRY["W_O"], concat_def,
                    *(() if spec.places else (REGISTRY["projected"],))), spec, known=outputs)
    w_o, concat = combined.step("W_O"), combined.step("concat")
    projection = combined if spec.places is None else short_projection(spec, concat, w_o)
    projected = projection.step("projected")
    head_steps = ("scores", "weights", "output") if spec.unscaled else (
        "scores", "scaled", "weights", "output")
    asked = range(1, HEADS + 1) if spec.head is None else (spec.head,)  # the heads worked
    head_parts = [Part("head", 4, tuple(heads[i - 1].step(n) for n in head_steps),
                       step_marks=(1, 2, 1) if spec.unscaled else (1, 1, 1, 1),
                       label=f"Head {i}", head=i, solution=heads[i - 1]) for i in asked]
    parts = lettered([
        *([Part("Q", 3, (q, k, v), step_marks=(1, 1, 1))] if spec.from_embeddings else []),
        Part("split", len(asked), tuple(heads[h - 1].step(n) for h in asked for n in "QKV"),
             shown_as=tuple(f"{n}_{h}" for h in asked for n in "QKV"),
             grid_names=tuple(f"head{h}.{n}" for h in asked for n in "QKV")),
        *head_parts, Part("concat", 1, (concat,), step_marks=(1,)),
        Part("projected", 2, (projected,), step_marks=(2,))])
    worked = (("", solution), *((f"head{h}.", head) for h, head in enumerate(heads, 1)),
              ("", combined), *((("", projection),) if spec.places else ()))
    given_outputs = tuple(("", f"O_{{{h}}}", heads[h - 1].step("output"))
                          for h in range(1, HEADS + 1) if h not in asked)
    return Question("heads", spec, solution, given_steps(solution) + (w_o,), parts,
                    extra={f"head{h}": head for h, head in enumerate(heads, 1)},
                    worked_by_parts=worked, shown=given_outputs,
                    picks=tuple(split_pick(step, h) for h in asked for step in (q, k, v)))


# C to a few places (no calculator), the given the projection then works from: written C
register_step(given_def("concat_short", "C"), pipeline=False)


def short_projection(spec, concat, w_o):
    """Without a calculator (``places``): Y = C W_O worked exactly from C with every entry
    (O_1 and O_2) rounded to ``places``, so that each product is a short decimal times a small
    whole number of W_O, and no O_h needs its long division."""
    short = Step("concat_short", f"C (to {spec.places} places)", "given",
                 tuple(to_places(row, spec.places) for row in concat.entries))
    projected = replace(REGISTRY["projected"], inputs=("concat_short", "W_O"))
    return run((REGISTRY["concat_short"], REGISTRY["W_O"], projected), spec,
               known={"concat_short": short, "W_O": w_o})


def split_pick(step, head: int) -> Pick:
    """Head ``head``'s Q_h (K_h, V_h) as read off Q: its block of columns; the slip, the
    other head's block."""
    rows, columns = tuple(range(step.shape[0])), tuple(_block(step, head - 1))
    other = HEADS + 1 - head
    return Pick(f"head{head}.{step.name}", step.name, rows, columns, (
        (rows, tuple(_block(step, other - 1)),
         f"this is head {other}'s block: head {head} takes "
         f"columns {columns[0] + 1} to {columns[-1] + 1} of {step.name}"),))


def _block(step, head: int) -> range:
    """Head ``head``'s (from 0) block of the step's columns."""
    width = step.shape[1] // HEADS
    return range(head * width, (head + 1) * width)


def _columns(step, head: int) -> tuple:
    """Head ``head``'s block of the step's columns, as exact numbers."""
    return tuple(tuple(row[j].exact for j in _block(step, head)) for row in step.entries)


def _check(spec) -> str | None:
    if spec.cross:
        return "type heads is self-attention over one sequence; cross-attention is type full or cross"
    if spec.head is not None and spec.head not in range(1, HEADS + 1):
        return f"head must be one of 1 to {HEADS}"
    if spec.mask != "none":
        return "type heads takes no mask"
    if spec.d_k % HEADS or spec.d_v % HEADS:
        return f"d_k and d_v must split evenly into {HEADS} heads"
    if len(spec.matrices["W_O"]) != spec.d_v:
        return f"W_O has {len(spec.matrices['W_O'])} rows but the heads give {spec.d_v} columns"
    return None


def _draw_options(options):
    """Widths that split evenly; without a calculator, each head's d_k 4 (whatever --dk says),
    so that its scores divided by sqrt(d_k) = 2 are in the table."""
    even = [min(MAX_DIMENSION, d + d % 2) for d in (options.d_k, options.d_v)]
    per_head = even[0] // HEADS
    if options.no_calculator and options.scale is None and per_head != 4:
        even[0] = 4 * HEADS
    return replace(options, mask="none", d_k=even[0], d_v=even[1])


def read_head(value, spec, where: str) -> int:
    """The spec file's ``head``: which head the student works (1 or 2)."""
    return one_based(value, HEADS, "head", where) + 1


# ``head``: work that head alone (1 or 2), the other's output given; ``places`` (no
# calculator): Y worked from C to that many places.
HEAD = Param("head", read_head)


def _not_drawable(options) -> str | None:
    if options.weights in ("identity", "diagonal"):
        choices = "integer" if options.no_calculator else "integer or decimal"
        return (f"with {options.weights} weights each head sees only its own half of every "
                f"token, so some rows are zero; use --weights {choices}")
    return None


register(QuestionType(
    "heads", heads_question, "Two attention heads",
    (r"Two-head self-attention on a sequence of {{ spec.n_queries }} tokens"
     r"{% if spec.from_embeddings %} ($d_{\text{model}} = {{ spec.d_model }}$). $W_Q$, $W_K$ and "
     r"$W_V$ project all heads at once{% else %}. $Q$, $K$ and $V$ are given for all heads at "
     r"once{% endif %}; head $h$ uses its own block of columns of $Q$, $K$ and $V$ (head 1 the first "
     r"half, head 2 the second), so each head has $d_k = {{ question.extra.head1.spec.d_k }}$ and "
     r"$d_v = {{ question.extra.head1.spec.d_v }}$. The heads' outputs are concatenated and projected "
     r"by $W_O$: $\operatorname{MultiHead}(X) = [O_1, O_2]\, W_O$ with $O_h = \operatorname{softmax}("
     r"{% if spec.unscaled %}Q_h K_h^{\top}{% elif spec.scale is none %}Q_h K_h^{\top}/\sqrt{d_k}"
     r"{% else %}{{ spec.scale | tex }}\, Q_h K_h^{\top}{% endif %}) V_h$.{% if spec.head %} Head "
     r"{{ 3 - spec.head }} is worked out already: its output $O_{{ 3 - spec.head }}$ is given below."
     r"{% endif %}", GIVEN, SHOWN),
    prompts={**PROMPTS,
             "split": r"{% if spec.head %}Take head {{ spec.head }}'s matrices $Q_{{ spec.head }}, "
                      r"K_{{ spec.head }}, V_{{ spec.head }}$ out of $Q$, $K$ and $V$.{% else %}Split $Q$, "
                      r"$K$ and $V$ into the heads' matrices $Q_1, K_1, V_1$ and $Q_2, K_2, V_2$."
                      r"{% endif %}",
             "head": r"{{ part.label }}: compute its scores $Q_{{ part.head }} K_{{ part.head }}^{\top}$,"
                     r"{% if not spec.unscaled %} scaled scores,{% endif %} attention weights and "
                     r"output $O_{{ part.head }}$.",
             "projected": r"Project the concatenation{% if spec.places %}, with $O_1$ and $O_2$ to "
                          r"{{ spec.places }} places ($C$ rounded to {{ spec.places }} places: work "
                          r"from it exactly){% endif %}: $Y = C\, W_O$. What is its shape?"},
    keys={"split": "Head 1 takes the first {{ question.extra.head1.spec.d_k }} columns of $Q$ and $K$ "
                   "and the first {{ question.extra.head1.spec.d_v }} of $V$; head 2 the rest "
                   "({{ (part.marks * 3 / part.steps | length) | int }} mark"
                   "{% if not spec.head %} a head{% endif %}).",
          "projected": "{% if spec.places %}From $C$ with $O_1$ and $O_2$ to {{ spec.places }} "
                       "places, each product a short decimal times a whole number of $W_O$: $Y$ "
                       "is exact from them (from $C$ unrounded it differs only in the last places)."
                       "{% endif %}"},
    matrices=("W_O",), heads=HEADS, check=_check, draw_options=_draw_options,
    draw_params=lambda rng, candidate, decimals: (
        {} if heads_are_readable(candidate, HEADS, decimals) else None),
    not_drawable=_not_drawable, params=(HEAD, PLACES),
    no_calculator=short_places,
    shrinks=("given", "tokens", "focus", "fewer-tokens", "d_model"),
    focus=lambda rng, candidate, params, decimals: {"head": 1}))
