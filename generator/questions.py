"""Stage 2, question types: a solved problem turned into what the student is asked.

``build_question(spec)`` solves the problem with the engine and lays out the
question of ``spec.question``: what the statement shows (``given``, ``shown``), and
lettered parts, each with its marks and the engine's steps that answer it.  Every
number comes from the engine (mistakes, permutations and heads included); this
module only chooses which steps go where.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np
import sympy

from .engine import Evaluator, Num, Solution, Step, run, scaling_step, softmax_step, solve
from .steps import REGISTRY, given_def
from .spec import HEADS, MISTAKES, ProblemSpec, SpecError

LETTERS = "abcdefghijklmnopqrstuvwxyz"
FULL_MARKS = {"Q": 1, "K": 1, "V": 1, "scores": 2, "scaled": 1, "masked": 1, "weights": 3, "output": 2}
TIE = 1e-12  # weights this close are equal: their exact scores are equal
FULL_PARTS = (("Q", "K", "V"), ("scores",), ("scaled",), ("masked",), ("weights",), ("output",))


@dataclass(frozen=True)
class Part:
    task: str  # names the prompt template, parts/<task>, and the key template, keys/<task>
    marks: int
    steps: tuple[Step, ...] = ()
    step_marks: tuple[int, ...] = ()  # marks of each step, where a part has several
    label: str = ""  # e.g. "Head 1"
    head: int | None = None  # the head whose steps these are (1, 2, ...), in a heads question
    answer: tuple = ()  # a short answer beside the steps, e.g. (key index, its weight)
    letter: str = ""  # (a), (b), ...: given by lettered()


@dataclass(frozen=True)
class ConceptItem:
    topic: str  # top-attention | row-sum | output-shape | no-scaling
    choices: tuple  # values; the templates write them according to the topic
    answer: int  # index of the right choice
    slips: tuple[str, ...] = ()  # for each choice, the slip that gives it ("" for the answer)


@dataclass(frozen=True)
class Question:
    kind: str
    spec: ProblemSpec
    solution: Solution  # the right solution of the problem as given
    given: tuple[Step, ...]  # the matrices the statement gives
    parts: tuple[Part, ...]
    flawed: Solution | None = None  # mistake: the worked solution with the mistake in it
    recomputed: Solution | None = None  # permute: solved again after the swap
    heads: tuple[Solution, ...] = ()  # heads: one solution per head
    combined: Solution | None = None  # heads: the heads' outputs concatenated and projected
    items: tuple[ConceptItem, ...] = ()  # concept: the checkpoint questions
    # The solutions whose steps the student works, each with the prefix its steps' grids
    # take on the practice page (head1., ...); by default the solution itself.
    worked_by_parts: tuple[tuple[str, Solution], ...] = ()

    @property
    def worked(self) -> tuple[tuple[str, Solution], ...]:
        return self.worked_by_parts or (("", self.solution),)

    @property
    def marks(self) -> int:
        return sum(part.marks for part in self.parts)

    def solutions(self) -> list[Solution]:
        """Every solution inside the question, each with the plan it was computed by."""
        return [s for s in (self.solution, self.recomputed, *self.heads, self.combined, self.flawed)
                if s is not None]

    def named_steps(self) -> dict[str, Step]:
        """Every step of the question under a unique name, for the JSON output: the
        solution's by their own names, the others prefixed (flawed.weights, head1.scores,
        swapped.output, row-scaled.scaled, given.scores) where a name is taken."""
        steps: dict[str, Step] = {}

        def add(step: Step, prefix: str, always: bool = False) -> None:
            taken = step.name in steps and steps[step.name] is not step
            name = f"{prefix}.{step.name}" if always or taken else step.name
            steps.setdefault(name, step)

        for step in self.solution.steps:
            add(step, "")
        for step in self.given:
            add(step, "given")
        for prefix, solution in (("flawed", self.flawed), ("swapped", self.recomputed),
                                 *((f"head{h}", head) for h, head in enumerate(self.heads, 1))):
            for step in solution.steps if solution else ():
                add(step, prefix, always=True)
        for part in self.parts:
            for step in part.steps:
                add(step, part.task)
        return steps


def build_question(spec: ProblemSpec) -> Question:
    return BUILDERS[spec.question](spec)


def lettered(parts: list[Part]) -> tuple[Part, ...]:
    return tuple(replace(part, letter=LETTERS[i]) for i, part in enumerate(parts))


def full_question(spec: ProblemSpec) -> Question:
    solution = solve(spec)
    present = {s.name for s in solution.steps if s.kind != "given"}
    groups = [g for g in FULL_PARTS if present.issuperset(g)]
    parts = lettered([Part(g[0], sum(FULL_MARKS[n] for n in g), tuple(solution.step(n) for n in g),
                           step_marks=tuple(FULL_MARKS[n] for n in g)) for g in groups])
    return Question(spec.question, spec, solution, _given(solution), parts)


def row_question(spec: ProblemSpec) -> Question:
    """One row of raw scores and d_k: scale it, exponentiate, sum, divide.  Under a causal
    mask the row holds only the keys the query may see (the others get weight 0)."""
    solution = solve(spec)
    num = Evaluator()
    scores = solution.step("scores").entries[spec.row]
    visible = spec.row + 1 if spec.mask == "causal" else len(scores)
    row = Step("scores", "one row of scores (given)", "given", (scores[:visible],))
    scaled = row if spec.unscaled else scaling_step(row, spec, num)
    weights = softmax_step(scaled, num)
    top = the_top_key(weights.entries[0], spec)
    scaling = [] if spec.unscaled else [Part("row-scaled", 1, (scaled,))]
    parts = lettered([*scaling, Part("row-weights", 3 + spec.unscaled, (weights,),
                                     answer=(top, weights.entries[0][top]))])
    return Question("row", spec, solution, (row,), parts)


def mistake_question(spec: ProblemSpec) -> Question:
    """A worked solution with one mistake: find the step, say why, put it right."""
    solution, flawed = solve(spec), solve(spec, spec.mistake)
    wrong = MISTAKES[spec.mistake]
    names = [s.name for s in solution.steps if s.kind != "given"]
    from_wrong = tuple(solution.step(n) for n in names[names.index(wrong):])
    parts = lettered([Part("mistake-find", 2, (flawed.step(wrong),)),
                      Part("mistake-fix", 3, from_wrong)])
    return Question("mistake", spec, solution, _given(solution), parts, flawed=flawed)


def permute_question(spec: ProblemSpec) -> Question:
    """Two tokens swap: predict the new weights and output from the old ones."""
    solution = solve(spec)
    i, j = spec.swap
    order = list(range(spec.n_queries))
    order[i], order[j] = j, i
    swapped_x = tuple(spec.matrices["X"][k] for k in order)
    recomputed = solve(replace(spec, matrices={**spec.matrices, "X": swapped_x}))
    weights = permuted(solution.step("weights"), order, columns_too=True)
    output = permuted(solution.step("output"), order, columns_too=False)
    parts = lettered([Part("permute-weights", 2, (weights,)), Part("permute-output", 2, (output,)),
                      Part("permute-why", 1, (recomputed.step("weights"), recomputed.step("output")))])
    return Question("permute", spec, solution, _given(solution), parts, recomputed=recomputed)


def permuted(step: Step, order: list[int], columns_too: bool) -> Step:
    """The step's rows (and columns) put in the new token order: row k is old row order[k]."""
    rows = [step.entries[k] for k in order]
    if columns_too:
        rows = [tuple(row[k] for k in order) for row in rows]
    return Step(step.name, f"{step.name}, tokens swapped", "permutation", tuple(rows),
                working=tuple(order))


def heads_question(spec: ProblemSpec) -> Question:
    """Two heads: project, split the columns, attend per head, concatenate, project out."""
    single = replace(spec, matrices={k: v for k, v in spec.matrices.items() if k != "W_O"})
    solution = solve(single)
    q, k, v = (solution.step(name) for name in "QKV")
    split = [{name: _columns(step, h, HEADS) for name, step in zip("QKV", (q, k, v))}
             for h in range(HEADS)]
    heads = tuple(solve(ProblemSpec(f"{spec.id}-head{h + 1}", {n: _exact(m) for n, m in parts.items()},
                                    scale=spec.scale)) for h, parts in enumerate(split))
    outputs = {f"head{h}.output": head.step("output") for h, head in enumerate(heads, 1)}
    combined = run((*(given_def(name) for name in outputs), REGISTRY["W_O"], REGISTRY["concat"],
                    REGISTRY["projected"]), spec, known=outputs)
    w_o, concat, projected = (combined.step(name) for name in ("W_O", "concat", "projected"))
    head_steps = ("scores", "weights", "output") if spec.unscaled else (
        "scores", "scaled", "weights", "output")
    head_parts = [Part("head", 4, tuple(h.step(n) for n in head_steps),
                       step_marks=(1, 2, 1) if spec.unscaled else (1, 1, 1, 1),
                       label=f"Head {i + 1}", head=i + 1) for i, h in enumerate(heads)]
    parts = lettered([Part("Q", 3, (q, k, v), step_marks=(1, 1, 1)),
                      Part("split", 2, tuple(s for h in heads for s in h.steps[:3])),
                      *head_parts, Part("concat", 1, (concat,), step_marks=(1,)),
                      Part("projected", 2, (projected,), step_marks=(2,))])
    worked = (("", solution), *((f"head{h}.", head) for h, head in enumerate(heads, 1)),
              ("", combined))
    return Question("heads", spec, solution, _given(solution) + (w_o,), parts, heads=heads,
                    combined=combined, worked_by_parts=worked)


def concept_question(spec: ProblemSpec) -> Question:
    """Checkpoint questions on the problem's own numbers, distractors from wrong variants."""
    solution = solve(spec)
    shuffle = np.random.default_rng(zlib.crc32(spec.id.encode()))
    items = tuple(_shuffled(item, shuffle) for item in (
        _top_attention(solution, spec.row), _row_sum(spec), _output_shape(spec),
        *(() if spec.unscaled else (_no_scaling(solution, spec),))))
    given = (solution.step("scores"), solution.step("weights"))
    parts = lettered([Part(f"concept-{item.topic}", 1) for item in items])
    return Question("concept", spec, solution, given, parts, items=items)


def the_top_key(weights: tuple[Num, ...], spec: ProblemSpec) -> int:
    """The key a query attends to most; two keys sharing the top weight make "which key gets
    the most attention?" a question with two right answers, so the spec is refused."""
    order = sorted(range(len(weights)), key=lambda j: -weights[j].value)
    if len(order) > 1 and abs(weights[order[0]].value - weights[order[1]].value) < TIE:
        raise SpecError(f"problem {spec.id}: keys {order[0] + 1} and {order[1] + 1} share token "
                        f"{spec.row + 1}'s top weight, so 'which key gets the most attention?' "
                        f"has two answers; choose another row")
    return order[0]


def _top_attention(solution: Solution, token: int) -> ConceptItem:
    """Which key does `token` attend to most, and with what weight?"""
    def top(weights_step):
        row = weights_step.entries[token]
        best = max(range(len(row)), key=lambda j: row[j].value)
        return (best, row[best])

    the_top_key(solution.step("weights").entries[token], solution.spec)
    right = top(solution.step("weights"))
    row = solution.step("weights").entries[token]
    second = sorted(range(len(row)), key=lambda j: -row[j].value)[1:2]
    wrong = [(top(solve(solution.spec, "no-scaling").step("weights")),
              "softmax of the raw scores, without scaling"),
             (top(solve(solution.spec, "column-softmax").step("weights")),
              "softmax down each column instead of along the row")]
    wrong += [((j, row[j]), "the second-largest weight of the row") for j in second]
    wrong += [((right[0], Num.of(sympy.Rational(1, len(row)))), "equal weights for every key")]
    return _item("top-attention", right, wrong, key=lambda c: (c[0], round(c[1].value, 4)))


def _row_sum(spec: ProblemSpec) -> ConceptItem:
    wrong = [(spec.n_keys, "counting 1 per key, as if every weight were 1"),
             ("depends", "forgetting that softmax divides each row by its own sum"),
             (spec.d_k, "confusing the sum with d_k"), (spec.d_v, "confusing the sum with d_v"),
             (0, "thinking of scores centred on 0, not of weights")]
    return _item("row-sum", 1, wrong, key=str)


def _output_shape(spec: ProblemSpec) -> ConceptItem:
    n, m, d_k, d_v = spec.n_queries, spec.n_keys, spec.d_k, spec.d_v
    wrong = [((n, m), "the shape of A, not of AV"), ((d_v, n), "the shape of (AV) transposed"),
             ((n, d_k), "the shape of Q: values have d_v columns, not d_k"),
             ((d_k, d_v), "the shape of a weight matrix"), ((1, d_v), "one output row for all tokens"),
             ((n, 1), "one number per token, as if the output were a score")]
    return _item("output-shape", (n, d_v), wrong, key=str)


def _no_scaling(solution: Solution, spec: ProblemSpec) -> ConceptItem:
    """Without scaling, what would the largest weight of `token` be?"""
    def largest(weights_step):
        return max(weights_step.entries[spec.row], key=lambda n: n.value)

    right = largest(solve(spec, "no-scaling").step("weights"))
    wrong = [(largest(solution.step("weights")), "the weight with scaling: the question drops it"),
             (largest(solve(spec, "dk-not-sqrt").step("weights")), "dividing by d_k, not by nothing"),
             (Num.of(sympy.Rational(1, spec.n_keys)), "equal weights for every key")]
    return _item("no-scaling", right, wrong, key=lambda n: round(n.value, 4))


def _item(topic: str, right, wrong: list[tuple], key) -> ConceptItem:
    """The right choice and up to three distractors that read differently from it and each
    other, each with the slip that gives it."""
    choices, slips, seen = [right], [""], {key(right)}
    for choice, slip in wrong:
        if key(choice) not in seen and len(choices) < 4:
            choices.append(choice)
            slips.append(slip)
            seen.add(key(choice))
    return ConceptItem(topic, tuple(choices), 0, tuple(slips))


def _shuffled(item: ConceptItem, rng: np.random.Generator) -> ConceptItem:
    order = [int(k) for k in rng.permutation(len(item.choices))]
    return ConceptItem(item.topic, tuple(item.choices[k] for k in order), order.index(item.answer),
                       tuple(item.slips[k] for k in order))


def _given(solution: Solution) -> tuple[Step, ...]:
    return tuple(step for step in solution.steps if step.kind == "given")


def _columns(step: Step, head: int, heads: int) -> tuple:
    width = step.shape[1] // heads
    return tuple(row[head * width:(head + 1) * width] for row in step.entries)


def _exact(rows) -> tuple:
    return tuple(tuple(n.exact for n in row) for row in rows)


BUILDERS = {"full": full_question, "masked": full_question, "row": row_question,
            "mistake": mistake_question, "permute": permute_question, "heads": heads_question,
            "concept": concept_question}
