"""Question type "heads": multi-head attention with 2 to 4 heads. Project once, split the
columns between the heads, attend in each head, concatenate the heads' outputs and project
them by W_O.  The builder here also works grouped-query attention (``grouped``): there the
query heads of a group share one key/value head, read as ``kv<g>.K`` and ``kv<g>.V``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from generator.kinds import GIVEN, SHOWN, Param, QuestionType, register
from generator.kinds.full import PROMPTS
from generator.kinds.places import PLACES, short_places, to_places
from generator.kinds.questions import Part, Pick, Question, given_steps, lettered
from generator.maths.engine import Evaluator, Step, given_step, run, solve
from generator.maths.exact import shown as shown_text
from generator.maths.spec import MAX_DIMENSION, ProblemSpec, SpecError, one_based
from generator.maths.steps import REGISTRY, given_def, plan_for
from generator.maths.steps import register as register_step
from generator.maths.worthiness import heads_are_readable
from generator.rendering.language import N_

HEADS = 2  # a heads question without a ``heads`` key has two
MOST_HEADS = 4  # beyond four, one head's work is a small part of a long problem


@dataclass(frozen=True)
class Layout:
    """How a question's heads share: ``heads`` query heads over ``kv_heads`` key/value heads
    (as many for multi-head attention; fewer, each shared by a group, for grouped-query)."""

    heads: int
    kv_heads: int

    @property
    def grouped(self) -> bool:
        """Whether query heads share key/value heads."""
        return self.kv_heads != self.heads

    def kv_of(self, head: int) -> int:
        """The key/value head (from 1) query head ``head`` (from 1) reads."""
        return (head - 1) // (self.heads // self.kv_heads) + 1

    def sharing(self, kv: int) -> tuple[int, ...]:
        """The query heads (from 1) that read key/value head ``kv``."""
        return tuple(h for h in range(1, self.heads + 1) if self.kv_of(h) == kv)


def heads_of(spec) -> int:
    """The number of heads of a heads question (two where the spec says nothing)."""
    return spec.heads or HEADS


def heads_question(spec) -> Question:
    """A heads question: the single-head Q, K and V, split into each head's columns; each head
    attends on its own, and their outputs are concatenated and projected by W_O."""
    single = replace(spec, matrices={k: v for k, v in spec.matrices.items() if k != "W_O"})
    count = heads_of(spec)
    return multi_head_question(spec, solve(single), Layout(count, count))


def multi_head_question(spec, solution, layout: Layout) -> Question:
    """The question of ``layout``'s heads, from ``solution`` (which holds Q, K and V whole)."""
    q, k, v = (solution.step(name) for name in "QKV")
    places = spec.params.get("places")  # no calculator: Y from C to so many places
    heads = tuple(_head(spec, q, k, v, layout, h) for h in range(1, layout.heads + 1))
    outputs = {f"head{h}.output": head.step("output") for h, head in enumerate(heads, 1)}
    combined = run((*(given_def(name) for name in outputs), REGISTRY["W_O"], _concat_def(outputs),
                    *(() if places else (REGISTRY["projected"],))), spec, known=outputs)
    w_o, concat = combined.step("W_O"), combined.step("concat")
    projection = combined if places is None else short_projection(spec, concat, w_o)
    head_steps = ("scores", "weights", "output") if spec.unscaled else (
        "scores", "scaled", "weights", "output")
    asked = range(1, layout.heads + 1) if spec.head is None else (spec.head,)  # the heads worked
    head_parts = [Part("head", 4, tuple(heads[i - 1].step(n) for n in head_steps),
                       step_marks=(1, 2, 1) if spec.unscaled else (1, 1, 1, 1),
                       label=f"Head {i}", head=i, solution=heads[i - 1]) for i in asked]
    parts = lettered([
        *([Part("Q", 3, (q, k, v), step_marks=(1, 1, 1))] if spec.from_embeddings else []),
        split_part(heads, layout, asked), *head_parts, Part("concat", 1, (concat,), step_marks=(1,)),
        Part("projected", 2, (projection.step("projected"),), step_marks=(2,))])
    worked = (("", solution), *((f"head{h}.", head) for h, head in enumerate(heads, 1)),
              ("", combined), *((("", projection),) if places else ()))
    given_outputs = tuple(("", f"O_{{{h}}}", heads[h - 1].step("output"))
                          for h in range(1, layout.heads + 1) if h not in asked)
    return Question(spec.question, spec, solution, given_steps(solution) + (w_o,), parts,
                    extra={f"head{h}": head for h, head in enumerate(heads, 1)},
                    worked_by_parts=worked, shown=given_outputs,
                    picks=split_picks(q, k, v, layout, asked))


def _head(spec, q, k, v, layout: Layout, head: int):
    """Head ``head``'s attention on its own blocks of Q, K and V (its group's K and V, shared)."""
    kv = layout.kv_of(head)
    matrices = {"Q": _columns(q, layout.heads, head), "K": _columns(k, layout.kv_heads, kv),
                "V": _columns(v, layout.kv_heads, kv)}
    own = ProblemSpec(f"{spec.id}-head{head}", matrices, scale=spec.scale)
    if not layout.grouped:
        return solve(own)
    # a shared head's K and V go by the group's names (kv1.K), which the page's grids take
    names = {"K": f"kv{kv}.K", "V": f"kv{kv}.V"}
    plan = tuple(replace(step, name=names.get(step.name, step.name),
                         inputs=tuple(names.get(i, i) for i in step.inputs)) for step in plan_for(own))
    num = Evaluator()
    return run(plan, own, known={names[n]: given_step(names[n], matrices[n], num) for n in "KV"}, num=num)


def split_part(heads, layout: Layout, asked) -> Part:
    """Reading each worked head's blocks off Q, K and V (a mark a head): Q_h, K_h, V_h, or in
    grouped-query attention each group's Q_h and then its shared K_g, V_g."""
    if not layout.grouped:
        return Part("split", len(asked), tuple(heads[h - 1].step(n) for h in asked for n in "QKV"),
                    shown_as=tuple(f"{n}_{h}" for h in asked for n in "QKV"),
                    grid_names=tuple(f"head{h}.{n}" for h in asked for n in "QKV"))
    found = []  # (step, shown as, grid name)
    for kv in dict.fromkeys(layout.kv_of(h) for h in asked):
        mine = [h for h in asked if layout.kv_of(h) == kv]
        found += [(heads[h - 1].step("Q"), f"Q_{h}", f"head{h}.Q") for h in mine]
        found += [(heads[mine[0] - 1].step(f"kv{kv}.{n}"), f"{n}_{kv}", f"kv{kv}.{n}") for n in "KV"]
    return Part("split", len(asked), tuple(s for s, _, _ in found), shown_as=tuple(a for _, a, _ in found),
                grid_names=tuple(g for _, _, g in found))


def _concat_def(outputs):
    """C = [O_1, ..., O_h], the heads' outputs side by side (the registry's words for two)."""
    concat = replace(REGISTRY["concat"], inputs=tuple(outputs))
    if len(outputs) == 2:
        return concat
    return replace(concat, text="concat = [" + ", ".join(f"output_{h}" for h in range(1, len(outputs) + 1))
                   + "]")


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


def split_picks(q, k, v, layout: Layout, asked) -> tuple[Pick, ...]:
    """Each asked block as read off Q, K or V, with its slips: another head's block (in
    grouped-query attention, for K and V, the key/value head another group shares)."""
    if not layout.grouped:
        return tuple(split_pick(step, h, layout.heads) for h in asked for step in (q, k, v))
    picks = [split_pick(q, h, layout.heads) for h in asked]
    for kv in dict.fromkeys(layout.kv_of(h) for h in asked):
        picks += [shared_pick(step, kv, layout) for step in (k, v)]
    return tuple(picks)


def split_pick(step, head: int, heads: int = HEADS) -> Pick:
    """Head ``head``'s Q_h (K_h, V_h) as read off Q: its block of columns; the slips, each other
    head's block."""
    rows, columns = tuple(range(step.shape[0])), tuple(_block(step, heads, head))
    return Pick(f"head{head}.{step.name}", step.name, rows, columns, tuple(
        (rows, tuple(_block(step, heads, other)),
         (N_("this is head %(other)s's block: head %(head)s takes columns %(first)s to %(last)s of "
             "%(name)s"), {"other": other, "head": head, "first": columns[0] + 1,
                           "last": columns[-1] + 1, "name": step.name}))
        for other in range(1, heads + 1) if other != head))


def shared_pick(step, kv: int, layout: Layout) -> Pick:
    """Key/value head ``kv``'s K_g (V_g) as read off K: its block; the slip, another group's
    (the wrong head shared)."""
    rows, columns = tuple(range(step.shape[0])), tuple(_block(step, layout.kv_heads, kv))
    sharing = _listed(layout.sharing(kv))
    return Pick(f"kv{kv}.{step.name}", step.name, rows, columns, tuple(
        (rows, tuple(_block(step, layout.kv_heads, other)),
         (N_("the wrong head shared: query heads %(heads)s use %(name)s_%(kv)s, %(columns)s of "
             "%(name)s, not %(name)s_%(other)s"),
          {"heads": sharing, "name": step.name, "kv": kv, "columns": _columns_named(columns),
           "other": other}))
        for other in range(1, layout.kv_heads + 1) if other != kv))


def _columns_named(columns) -> tuple:
    """column 2; columns 3 to 4 (counted from 1): a message, said in the page's language."""
    if len(columns) == 1:
        return N_("column %(n)s"), {"n": columns[0] + 1}
    return N_("columns %(first)s to %(last)s"), {"first": columns[0] + 1, "last": columns[-1] + 1}


def _listed(numbers) -> str | tuple:
    """1 and 2; 1, 2 and 3: a message, said in the page's language."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else (N_("%(others)s and %(last)s"), {
        "others": ", ".join(words[:-1]), "last": words[-1]})


def _block(step, heads: int, head: int) -> range:
    """Head ``head``'s (from 1) block of the step's columns, of ``heads`` blocks."""
    width = step.shape[1] // heads
    return range((head - 1) * width, head * width)


def _columns(step, heads: int, head: int) -> tuple:
    """Head ``head``'s block of the step's columns, as exact numbers."""
    return tuple(tuple(row[j].exact for j in _block(step, heads, head)) for row in step.entries)


def _check(spec) -> str | None:
    if spec.cross:
        return "type heads is self-attention over one sequence; cross-attention is type full or cross"
    count = heads_of(spec)
    if spec.head is not None and spec.head not in range(1, count + 1):
        return f"head must be one of 1 to {count}"
    if spec.mask != "none":
        return "type heads takes no mask"
    for name, width in (("d_k", spec.d_k), ("d_v", spec.d_v)):
        if width % count:
            where = ("W_Q and W_K have" if name == "d_k" else "W_V has") if spec.from_embeddings else (
                "Q and K have" if name == "d_k" else "V has")
            return (f"{name} must split evenly into {count} heads: {where} {width} columns, "
                    f"expected a multiple of {count} ({count} x {name} per head)")
    if len(spec.matrices["W_O"]) != spec.d_v:
        return (f"W_O has {len(spec.matrices['W_O'])} rows but the heads give {spec.d_v} columns "
                f"({count} heads x d_v {spec.d_v // count})")
    return None


def heads_drawn(options) -> int:
    """How many heads a drawn heads question has: two, as ever; at hard, three or four where
    --dk allows heads two wide (--dk 6: three; --dk 8: four)."""
    if options.difficulty != "hard":
        return HEADS
    return next((h for h in (MOST_HEADS, 3) if options.d_k % h == 0 and options.d_k // h >= 2), HEADS)


def _draw_options(options):
    """Widths that split evenly; without a calculator, each head's d_k 4 (whatever --dk says),
    so that its scores divided by sqrt(d_k) = 2 are in the table."""
    count = heads_drawn(options)
    even = [min(MAX_DIMENSION, d + -d % count) for d in (options.d_k, options.d_v)]
    per_head = even[0] // count
    if options.no_calculator and options.scale is None and per_head != 4:
        even[0] = 4 * count
    return replace(options, mask="none", d_k=even[0], d_v=even[1], heads=(count,))


def _draw_params(rng, candidate, decimals):
    """Every head readable; with more than two heads, one head worked (drawn), the others'
    outputs given: the problem stays one head's work."""
    count = candidate.heads[0] if candidate.heads else HEADS
    if not heads_are_readable(candidate, count, decimals):
        return None
    return {} if count == HEADS else {"heads": count, "head": int(rng.integers(1, count + 1))}


def read_heads(value, spec, where: str) -> int:
    """The spec file's ``heads``: how many heads (2 to 4)."""
    if isinstance(value, bool) or not isinstance(value, int) or not HEADS <= value <= MOST_HEADS:
        raise SpecError(f"{where}: heads must be a whole number from {HEADS} to {MOST_HEADS}, "
                        f"got {shown_text(value)}")
    return value


def read_head(value, spec, where: str) -> int:
    """The spec file's ``head``: which head the student works (1 to the number of heads)."""
    return one_based(value, MOST_HEADS, "head", where) + 1


# ``heads``: how many (2 when left out); ``head``: work that head alone, the others' outputs
# given; ``places`` (no calculator): Y worked from C to that many places.
HEADS_PARAM = Param("heads", read_heads)
HEAD = Param("head", read_head)


def _not_drawable(options) -> str | None:
    if options.weights in ("identity", "diagonal"):
        choices = "integer" if options.no_calculator else "integer or decimal"
        return (f"with {options.weights} weights each head sees only its own half of every "
                f"token, so some rows are zero; use --weights {choices}")
    return None


# The heads' names in prose: "Q_1, K_1, V_1 and Q_2, K_2, V_2"; the heads worked out already.
HEAD_COUNT = "{% set h = spec.heads or 2 %}"
OTHERS = "{% set others = range(1, h + 1) | reject('equalto', spec.head) | list %}"

register(QuestionType(
    "heads", heads_question,
    "{% if spec.heads == 3 %}Three attention heads{% elif spec.heads == 4 %}Four attention heads"
    "{% else %}Two attention heads{% endif %}",
    (HEAD_COUNT + OTHERS +
     r"{% if h == 3 %}Three-head{% elif h == 4 %}Four-head{% else %}Two-head{% endif %} "
     r"self-attention on a sequence of "
     r"{{ spec.n_queries }} tokens"
     r"{% if spec.from_embeddings %} ($d_{\text{model}} = {{ spec.d_model }}$). $W_Q$, $W_K$ and "
     r"$W_V$ project all heads at once{% else %}. $Q$, $K$ and $V$ are given for all heads at "
     r"once{% endif %}; head $h$ uses its own block of columns of $Q$, $K$ and $V$ "
     r"{% if h == 2 %}(head 1 the first half, head 2 the second){% else %}{% set w = question.extra."
     r"head1.spec.d_k %}(head 1 the first {% if w > 1 %}{{ w }} columns{% else %}column{% endif %} "
     r"of $Q$ and $K$, head 2 the next, and so on){% endif %}, so "
     r"each head has $d_k = {{ question.extra.head1.spec.d_k }}$ and "
     r"$d_v = {{ question.extra.head1.spec.d_v }}$. The heads' outputs are concatenated and projected "
     r"by $W_O$: $\operatorname{MultiHead}(X) = [{% for i in range(1, h + 1) %}O_{{ i }}"
     r"{{ ', ' if not loop.last else '' }}{% endfor %}]\, W_O$ with $O_h = \operatorname{softmax}("
     r"{% if spec.unscaled %}Q_h K_h^{\top}{% elif spec.scale is none %}Q_h K_h^{\top}/\sqrt{d_k}"
     r"{% else %}{{ spec.scale | tex }}\, Q_h K_h^{\top}{% endif %}) V_h$.{% if spec.head %}"
     r"{% if h == 2 %} Head {{ 3 - spec.head }} is worked out already: its output "
     r"$O_{{ 3 - spec.head }}$ is given below.{% else %} Heads {{ others | and_list }} are worked "
     r"out already: their outputs {{ others | and_list('$O_{}$') }} are given below "
     r"(you work head {{ spec.head }} alone).{% endif %}{% endif %}", GIVEN, SHOWN),
    prompts={**PROMPTS,
             "split": r"{% if spec.head %}Take head {{ spec.head }}'s matrices $Q_{{ spec.head }}, "
                      r"K_{{ spec.head }}, V_{{ spec.head }}$ out of $Q$, $K$ and $V$.{% else %}Split $Q$, "
                      r"$K$ and $V$ into the heads' matrices "
                      r"{{ range(1, (spec.heads or 2) + 1) | and_list('$Q_{}, K_{}, V_{}$') }}.{% endif %}",
             "head": r"Head {{ part.head }}: compute its scores $Q_{{ part.head }} K_{{ part.head }}^{\top}$,"
                     r"{% if not spec.unscaled %} scaled scores,{% endif %} attention weights and "
                     r"output $O_{{ part.head }}$.",
             "concat": r"Concatenate the heads' outputs: $C = [{% for i in range(1, (spec.heads or 2) + 1) %}"
                       r"O_{{ i }}{{ ', ' if not loop.last else '' }}{% endfor %}]$.",
             "projected": r"Project the concatenation{% if spec.places %}, with $O_1$ and $O_2$ to "
                          r"{{ spec.places }} places ($C$ rounded to {{ spec.places }} places: work "
                          r"from it exactly){% endif %}: $Y = C\, W_O$. What is its shape?"},
    keys={"split": "{% if (spec.heads or 2) == 2 %}Head 1 takes the first "
                   "{{ question.extra.head1.spec.d_k }} columns of $Q$ and $K$ "
                   "and the first {{ question.extra.head1.spec.d_v }} of $V$; head 2 the rest"
                   "{% else %}{% set w, u = question.extra.head1.spec.d_k, question.extra.head1.spec.d_v %}"
                   "Each head takes its own block: {% for i in range(1, spec.heads + 1) %}"
                   "{% set a, b, c, d = w * i - w + 1, w * i, u * i - u + 1, u * i %}head {{ i }} "
                   "{% if w > 1 %}columns {{ a }} to {{ b }}{% else %}column {{ a }}{% endif %}"
                   "{% if loop.first %} of $Q$ and $K${% endif %} and {% if u > 1 %}columns {{ c }} to "
                   "{{ d }}{% else %}column {{ c }}{% endif %}{% if loop.first %} of $V${% endif %}"
                   "{% if not loop.last %}; {% endif %}{% endfor %}{% endif %} "
                   "({{ (part.marks * 3 / part.steps | length) | int }}\u00a0mark"
                   "{% if not spec.head %} a head{% endif %}).",
          "projected": "{% if spec.places %}From $C$ with $O_1$ and $O_2$ to {{ spec.places }} "
                       "places, each product a short decimal times a whole number of $W_O$: $Y$ "
                       "is exact from them (from $C$ unrounded it differs only in the last places)."
                       "{% endif %}"},
    matrices=("W_O",), heads=HEADS, check=_check, draw_options=_draw_options,
    draw_params=_draw_params, not_drawable=_not_drawable, params=(HEADS_PARAM, HEAD, PLACES),
    no_calculator=short_places,
    shrinks=("given", "tokens", "focus", "fewer-tokens", "d_model"),
    focus=lambda rng, candidate, params, decimals: {"head": params.get("head", 1)}))
