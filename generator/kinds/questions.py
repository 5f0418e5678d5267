"""Stage 2, questions: a solved problem turned into what the student is asked.

``build_question(spec)`` hands the spec to the builder of its question type (see
``kinds``), which solves it with the engine and lays out the question: what the
statement shows (``given``, ``shown``), and lettered parts, each with its marks and
the engine's steps that answer it.  Every number comes from the engine; a builder
only chooses which steps go where.  The helpers here are shared by the types.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Mapping

import numpy as np

from generator.kinds import TYPES
from generator.maths.engine import Num, Solution, Step
from generator.maths.exact import shown
from generator.maths.spec import ProblemSpec, SpecError
from generator.maths.steps import REGISTRY

LETTERS = "abcdefghijklmnopqrstuvwxyz"
TIE = 1e-12  # weights this close are equal: their exact scores are equal


@dataclass(frozen=True)
class Part:
    """One part of a question: what it asks (its task), its marks, and the steps, answer or multiple
    choice that answer it."""

    task: str  # names the prompt template, parts/<task>, and the key template, keys/<task>
    marks: int
    steps: tuple[Step, ...] = ()
    # marks of each step, where a part has several (a Fraction where a type divides a mark: counting)
    step_marks: tuple[int | Fraction, ...] = ()
    label: str = ""  # e.g. "Head 1"
    head: int | None = None  # the head whose steps these are (1, 2, ...), in a heads question
    answer: tuple = ()  # a short answer beside the steps, e.g. (key index, its weight)
    letter: str = ""  # (a), (b), ...: given by lettered()
    notes: bool = True  # reading notes after its steps (not for a lone row, which numbers itself 1)
    shown_as: tuple[str, ...] = ()  # the key shows its steps bare, under these symbols (A')
    item: "ConceptItem | None" = None  # a multiple choice the part asks (besides any grids)
    # Earlier steps the part shows as given and does not ask ("Fix the mistake" keeps the
    # student's right steps before the mistake): shown beside the grids, never retyped.
    kept: tuple[Step, ...] = ()
    grids: bool = True  # the student writes the steps out (else they are the key's: a choice asks)
    explained: bool = False  # answered in words (why, what went wrong), whatever steps it shows

    @property
    def written(self) -> tuple[Step, ...]:
        """The steps the student writes out: on the page a grid each, in Moodle gaps."""
        return self.steps if self.grids else ()

    @property
    def answer_weights(self) -> list[int | Fraction]:
        """How the part's marks divide between what the student answers (every format that
        marks shares them so): its written steps by their step marks, else equally, and its
        choice as one more step."""
        steps = self.written
        return ((list(self.step_marks) if self.step_marks and steps == self.steps else [1] * len(steps))
                + ([1] if self.item else []))
    grid_names: tuple[str, ...] = ()  # its steps' names on the practice page, where not their own
    # The solution whose plan its steps follow (a head's), where not the question's: its
    # formulas read their inputs there (softmax of the scaled or of the masked scores).
    solution: Solution | None = field(default=None, compare=False, repr=False)

    @property
    def asks_shape(self) -> bool:
        """Whether the part asks each written step's shape besides its entries ("What is its
        shape?"): its task's step says so.  The page, Moodle and Canvas each give it a box."""
        step = REGISTRY.get(self.task)
        return bool(step and step.asks_shape and self.written)


@dataclass(frozen=True)
class Pick:
    """A matrix a part asks for that no plan computes, read off another by picking rows and
    columns: a head's block of the columns of Q, the weights with two tokens swapped (rows and
    columns).  The practice page marks its grid against the student's own ``source`` where
    they typed it; each slip is a wrong pick (rows, columns) and what the page then says."""
    name: str  # its grid's name on the page
    source: str  # the grid, or given or shown matrix, it is read off
    rows: tuple[int, ...]
    columns: tuple[int, ...]
    slips: tuple[tuple[tuple[int, ...], tuple[int, ...], str], ...] = ()


@dataclass(frozen=True)
class ConceptItem:
    """A multiple choice: what it asks, its choices, the right one, and the slip behind each wrong
    one."""

    topic: str  # what it asks: top-attention, row-sum, ..., or a type's own (reason, top-key)
    choices: tuple  # values; the type's ``choice`` prose writes each
    answer: int  # index of the right choice
    slips: tuple[str, ...] = ()  # for each choice, the slip that gives it ("" for the answer)
    # The right choice is where the first row of the part's first grid is largest, read off
    # the student's own grid where they typed it (carried forward): "which key gets the most
    # attention", asked beside the weights.  Else ``answer`` alone is right.
    largest_of_grid: bool = False


@dataclass(frozen=True)
class Question:
    """A question built from a spec: its type, its solution and whatever else its type worked out,
    the matrices its statement gives and shows, and its parts."""

    kind: str
    spec: ProblemSpec
    solution: Solution  # the right solution of the problem as given
    given: tuple[Step, ...]  # the matrices the statement gives
    parts: tuple[Part, ...]
    # Further solutions its type works out (a worked solution with a mistake in it, each
    # head's), by the prefix their steps take in problems.json (flawed.weights, head1.scores).
    extra: Mapping[str, Solution] = field(default_factory=dict)
    # Matrices the statement shows besides the given ones: (caption prose, step name, step).
    shown: tuple[tuple[str, str, Step], ...] = ()
    # The solutions whose steps the student works, each with the prefix its steps' grids
    # take on the practice page (head1., ...); by default the solution itself.
    worked_by_parts: tuple[tuple[str, Solution], ...] = ()
    picks: tuple["Pick", ...] = ()  # the asked matrices read off others (a head's Q_h; A')

    @property
    def worked(self) -> tuple[tuple[str, Solution], ...]:
        """The solutions whose steps the student works, each with its grids' prefix; by default the
        question's own solution."""
        return self.worked_by_parts or (("", self.solution),)

    @property
    def marks(self) -> int:
        """The question's marks: its parts' marks added."""
        return sum(part.marks for part in self.parts)

    @property
    def items(self) -> tuple[ConceptItem, ...]:
        """The multiple-choice items its parts ask."""
        return tuple(part.item for part in self.parts if part.item is not None)

    def solutions(self) -> list[Solution]:
        """Every solution inside the question, each with the plan it was computed by."""
        found = [self.solution, *self.extra.values(), *(solution for _, solution in self.worked)]
        return list({id(s): s for s in found}.values())

    def named_steps(self) -> dict[str, Step]:
        """Every step of the question under a unique name, for the JSON output: the
        solution's by their own names, an extra solution's by its prefix (flawed.weights,
        head1.scores), the others prefixed (row-scaled.scaled, given.scores) where a name is
        taken."""
        steps: dict[str, Step] = {}

        def add(step: Step, prefix: str, always: bool = False) -> None:
            taken = step.name in steps and steps[step.name] is not step
            name = f"{prefix}.{step.name}" if always or taken else step.name
            steps.setdefault(name, step)

        for step in self.solution.steps:
            add(step, "")
        for step in self.given:
            add(step, "given")
        for prefix, solution in self.extra.items():
            for step in solution.steps:
                add(step, prefix, always=True)
        for part in self.parts:
            for step in part.steps:
                add(step, part.task)
        return steps


def build_question(spec: ProblemSpec) -> Question:
    """The question the spec's type builds from it."""
    return TYPES[spec.question].build(spec)


def lettered(parts: list[Part]) -> tuple[Part, ...]:
    """The parts lettered (a), (b), ... in order."""
    return tuple(replace(part, letter=LETTERS[i]) for i, part in enumerate(parts))


def step_parts(solution: Solution, groups: tuple[tuple[str, ...], ...]) -> list[Part]:
    """A part per group of steps the solution has, each step with its registry marks; a part
    is named after its first step."""
    present = {step.name for step in solution.steps if step.kind != "given"}
    return [Part(group[0], sum(REGISTRY[n].marks for n in group),
                 tuple(solution.step(n) for n in group),
                 step_marks=tuple(REGISTRY[n].marks for n in group))
            for group in groups if present.issuperset(group)]


def given_steps(solution: Solution) -> tuple[Step, ...]:
    """The solution's given matrices, in order."""
    return tuple(step for step in solution.steps if step.kind == "given")


def the_top_key(weights: tuple[Num, ...], spec: ProblemSpec) -> int:
    """The key a query attends to most; two keys sharing the top weight make "which key gets
    the most attention?" a question with two right answers, so the spec is refused."""
    order = sorted(range(len(weights)), key=lambda j: -weights[j].value)
    if len(order) > 1 and abs(weights[order[0]].value - weights[order[1]].value) < TIE:
        raise SpecError(f"problem {spec.id}: keys {order[0] + 1} and {order[1] + 1} share token "
                        f"{spec.row + 1}'s top weight, so 'which key gets the most attention?' "
                        f"has two answers; choose another row")
    return order[0]


def shuffled_item(topic: str, reasons: tuple[tuple[str, str], ...], seed: str) -> ConceptItem:
    """A multiple choice of (text, slip) pairs, the first one right, in an order fixed by
    ``seed`` (the problem's id) and ``topic``: the same problem always shows the same order,
    and each of its choice parts is shuffled apart (one shuffle for all of them would put
    every right answer under the same letter whenever the parts offer as many choices)."""
    rng = np.random.default_rng(zlib.crc32(f"{seed}:{topic}".encode()))
    order = [int(k) for k in rng.permutation(len(reasons))]
    return ConceptItem(topic, tuple(reasons[k][0] for k in order), order.index(0),
                       tuple(reasons[k][1] for k in order))


def answer_with_slips(why: str = "", filled: str = "") -> str:
    """Prose for a choice's key: the right choice, why (prose, optional), and the slip behind
    each wrong choice; ``filled`` (a filter call, ``| filled(key=...)``) puts the values into
    choices and slips whose messages name them."""
    return ("{% set item = part.item %}**Answer: ({{ 'ABCDEFGHIJKL'[item.answer] }})** "
            "{{ item.choices[item.answer]" + filled + " }} " + why + " Where the others go wrong:"
            "{% for letter, slip in zip('ABCDEFGHIJKL', item.slips) if slip %} ({{ letter }}) "
            "{{ slip" + filled + " }}{% if not loop.last %};{% else %}.{% endif %}{% endfor %}")


# What a mask other than the causal one hides, in words (``masks``; its matrix M follows).
MASK_WORDS = (
    r"{% set n = spec.n_keys %}{% if spec.mask in ('padding', 'causal+padding') %}"
    r"{% if spec.mask == 'padding' %}A padding mask applies: {% else %}A causal mask and a padding "
    r"mask apply together: query $i$ may attend only to keys $1, \dots, i$, and {% endif %}"
    r"{% if spec.valid is number %}the keys hold "
    r"{{ spec.valid }} real {% if spec.valid == 1 %}token{% else %}tokens{% endif %}"
    r"{% if spec.valid < n %} and {{ n - spec.valid }} padding {% if n - spec.valid == 1 %}token"
    r"{% else %}tokens{% endif %} ({% if n > spec.valid + 1 %}keys {{ spec.valid + 1 }} to {{ n }}"
    r"{% else %}key {{ spec.valid + 1 }}{% endif %}), which no query may attend to{% endif %}."
    r"{% else %}{% if spec.mask == 'padding' %}query $i$ may attend {% endif %}only "
    r"to its first $v_i$ keys, the rest being padding, with valid lengths "
    r"$v = ({{ spec.valid | join(', ') }})$.{% endif %}"
    r"{% elif spec.mask == 'window' %}A sliding-window mask of width $w = {{ spec.window }}$ "
    r"applies: query $i$ may attend only to keys $j$ with $i - w < j \le i$ (itself and the "
    r"{% if spec.window == 2 %}key{% else %}{{ spec.window - 1 }} keys{% endif %} before it), "
    r"never to a later one."
    r"{% else %}A mask applies."
    r"{% endif %}")

# Prose shared by the types: what the problem is (sizes, mask), and what to compute.
# Cross-attention from embeddings: the decoder's tokens (the queries) over the encoder's.
CROSS_EMBEDDINGS = (
    r"In cross-attention the {{ spec.n_queries }} {% if spec.n_queries == 1 %}token of a decoder "
    r"attends{% else %}tokens of a decoder attend{% endif %} over the {{ spec.n_keys }} "
    r"{% if spec.n_keys == 1 %}token{% else %}tokens{% endif %} of an encoder: the decoder's "
    r"embeddings are the rows of $X_{\mathrm{dec}}$ ($d_{\text{dec}} = {{ spec.d_model }}$), "
    r"the encoder's the rows of $X_{\mathrm{enc}}$ "
    r"($d_{\text{enc}} = {{ spec.d_enc }}$). "
    r"The queries come from the decoder, $Q = X_{\mathrm{dec}} W_Q$; the keys and values from the "
    r"encoder, $K = X_{\mathrm{enc}} W_K$ and $V = X_{\mathrm{enc}} W_V$; ")
SETUP = (
    r"{% if spec.from_embeddings %}{% if spec.cross %}" + CROSS_EMBEDDINGS + r"{% else %}A sequence of "
    r"{{ spec.n_queries }} tokens has embeddings as the "
    r"rows of $X$ ($d_{\text{model}} = {{ spec.d_model }}$), projected by $W_Q$, $W_K$ and $W_V$; "
    r"{% endif %}{% else %}The rows of $Q$ are {{ spec.n_queries }} "
    r"{% if spec.n_queries == 1 %}query{% else %}queries{% endif %}, the rows of $K$ and $V$ are "
    r"{{ spec.n_keys }} {% if spec.n_keys == 1 %}key{% else %}keys{% endif %} and their values; "
    r"{% endif %}here $d_k = {{ spec.d_k }}$ and $d_v = {{ spec.d_v }}$.{% if spec.cross and not "
    r"spec.from_embeddings %} This is cross-attention: the queries come from a decoder's tokens, the "
    r"keys and values from an encoder's, and each decoder token's query is scored against the "
    r"encoder's keys.{% endif %}"
    r"{% if spec.mask == 'causal' %} A causal mask applies: query $i$ may attend only to keys "
    r"$1, \dots, i$, so that no token peeks at the tokens after it (as when a model writes a text "
    r"one token at a time). The mask is the matrix $M$ with $M_{ij} = 0$ for $j \le i$ and "
    r"$M_{ij} = -\infty$ for $j > i$, added to the {% if spec.unscaled %}scores{% else %}scaled scores"
    r"{% endif %}."
    r"{% if spec.cross %} With {{ spec.n_queries }} queries and {{ spec.n_keys }} keys it is top-left "
    r"aligned, as PyTorch's is_causal: query $i$ still sees keys $1, \dots, i$.{% endif %}"
    r"{% elif spec.masked %} " + MASK_WORDS + r" The mask is the matrix $M$ with $M_{ij} = 0$ where "
    r"query $i$ may attend to key $j$ and $M_{ij} = -\infty$ where it may not, added to the "
    r"{% if spec.unscaled %}scores{% else %}scaled scores{% endif %}{% if question is defined and "
    r"question.parts | selectattr('task', 'equalto', 'write-mask') | list %}.{% else %}; its rows "
    r"are {% for row in spec.visible %}$({% for seen in row %}{% if seen %}0{% else %}-\infty"
    r"{% endif %}{{ ', ' if not loop.last }}{% endfor %})${% if not loop.last %}, {% endif %}{% endfor %}."
    r"{% endif %}{% endif %}")
ATTENTION = (
    r"{% set m = ' + M' if spec.masked else '' %}"
    r"{% if spec.scale is none %}Compute $\operatorname{Attention}(Q, K, V) = "
    r"\operatorname{softmax}\!\left(QK^{\top}/\sqrt{d_k}{{ m }}\right) V$"
    r"{% elif spec.unscaled %}The scores are not scaled: compute $\operatorname{Attention}(Q, K, V) = "
    r"\operatorname{softmax}\!\left(QK^{\top}{{ m }}\right) V$ on the raw dot products"
    r"{% else %}The scores are scaled by ${{ spec.scale | tex }}${% if spec.scale_is_usual %}, which is "
    r"$1/\sqrt{d_k}$ here{% else %} instead of $1/\sqrt{d_k}${% endif %}: compute "
    r"$\operatorname{softmax}\!\left({{ spec.scale | tex }}\, QK^{\top}{{ m }}\right) V${% endif %}, "
    r"showing every intermediate matrix.")


def whole_number(key: str, most: int):
    """A Param's reader of a whole number from 1 to ``most`` (a model's layers, a layer's heads): a bad
    value raises the one-line SpecError naming the key."""
    def read(value, spec, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise SpecError(f"{where}: {key} must be a whole number from 1 to {most}, got {shown(value)}")
        return value
    return read
