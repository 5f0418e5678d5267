"""Stage 3 helper: lay questions out as exam papers, numbered, with their marks and length.

The questions module decides each question's parts and marks; this module only
numbers the problems of a paper, decides who sits which version, estimates how
long a part takes by hand and how much room it needs, and reads the header texts
every paper prints.  Every renderer takes the same layout, so question papers and
keys always number alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .exact import shown
from .questions import Question
from .roster import Student
from .spec import SpecError, parse_toml, read_user_file
from .teacher_text import text_fault


# Seconds a student takes by hand, with a calculator, for each thing a step asks them to write.
SECONDS = {
    "product term": 6,     # one a·b of a dot product, added on
    "product entry": 8,    # writing the entry down
    "scaling": 15,         # one score divided by sqrt(d_k)
    "masking": 3,          # one -inf
    "exponential": 25,     # e^x on a calculator, written down
    "row sum": 10,
    "quotient": 10,        # e_j / sum
    "blend term": 8,       # one weight times one value, added on
    "copy entry": 4,       # an entry moved or copied (a permutation, a split, a concatenation)
    "choice": 60,          # a multiple-choice checkpoint
    "explanation": 120,    # a sentence or two of why
}
EXPLAINED = ("permute-why", "mistake-find")  # parts answered in words, whatever steps they show


def part_seconds(part) -> int:
    """How long a part takes by hand: the sum over what its steps ask the student to write."""
    if part.task in EXPLAINED:
        return SECONDS["explanation"]
    if not part.steps:
        return SECONDS["choice"]
    return sum(_step_seconds(step) for step in part.steps)


def _step_seconds(step) -> int:
    rows, columns = step.shape
    if step.kind == "product":
        terms = sum(len(line.pairs) for line in step.working)
        return terms * SECONDS["product term"] + rows * columns * SECONDS["product entry"]
    if step.kind == "softmax":
        shown = sum(e is not None for line in step.working for e in line.exponentials)
        return (shown * (SECONDS["exponential"] + SECONDS["quotient"])
                + len(step.working) * SECONDS["row sum"])
    if step.kind == "blend":
        return sum(len(line.weights) for line in step.working) * columns * SECONDS["blend term"]
    per_entry = {"scaling": "scaling", "masking": "masking"}.get(step.kind, "copy entry")
    return rows * columns * SECONDS[per_entry]


def part_minutes(part) -> int:
    return max(1, math.ceil(part_seconds(part) / 60))


def writing_lines(part) -> int:
    """Room on the question sheet: about a line for every two entries asked, 3 to 40 lines."""
    if part.task in EXPLAINED or not part.steps:
        return 4 if part.task in EXPLAINED else 2
    entries = sum(step.shape[0] * step.shape[1] for step in part.steps)
    return min(40, max(3, math.ceil(entries / 2)))


@dataclass(frozen=True)
class DocumentInfo:
    """What the header of a document says; set from the command line."""

    title: str = "Scaled dot-product self-attention"
    course: str = ""
    date: str = ""
    instructions: str = ("Answer every part. Show every intermediate matrix, in order: "
                         "each step earns its own marks.")
    seed: int | None = None
    decimals: int = 4
    draw_command: str = ""  # how to draw the same random set again; empty for a spec file
    versioned: bool = False  # several versions or a roster: label each paper
    institution: str = ""
    extra: tuple = ()  # --config's [extra] texts, (name, text) pairs, for a teacher's templates
    exponent_table: tuple = ()  # --no-calculator: the x whose e^x the sheets print
    table_places: int = 4  # ... with this many decimals, which the softmax working uses too


@dataclass(frozen=True)
class ExamProblem:
    number: int
    question: Question

    @property
    def spec(self):
        return self.question.spec

    @property
    def solution(self):
        return self.question.solution

    @property
    def given(self):
        return self.question.given

    @property
    def parts(self):
        return self.question.parts

    @property
    def marks(self) -> int:
        return self.question.marks

    @property
    def minutes(self) -> int:
        return sum(part_minutes(part) for part in self.parts)


@dataclass(frozen=True)
class Paper:
    """One paper: a student's question paper, or the answer key of one version."""

    number: int
    version: int
    problems: tuple[ExamProblem, ...]
    student: Student | None = None

    @property
    def marks(self) -> int:
        return sum(problem.marks for problem in self.problems)

    @property
    def minutes(self) -> int:
        return sum(problem.minutes for problem in self.problems)


def lay_out(questions: list[Question]) -> tuple[ExamProblem, ...]:
    """Numbered 1, 2, ... in order; a problem drawn again alone keeps the number it had.  A
    class's version, solved when read (``lockstep``), is laid out when read."""
    if hasattr(questions, "read_as"):
        return questions.read_as(lay_out)
    return tuple(ExamProblem(q.spec.number if len(questions) == 1 and q.spec.number else number, q)
                 for number, q in enumerate(questions, start=1))


def question_papers(sets: dict[int, list[Question]], students: list[Student] | None) -> list[Paper]:
    """A paper per student (student i sits version i, cycling through the versions), or
    without a roster one paper per version."""
    versions = sorted(sets)
    if students is None:
        return [Paper(n, v, lay_out(sets[v])) for n, v in enumerate(versions, start=1)]
    return [Paper(n, versions[(n - 1) % len(versions)],
                  lay_out(sets[versions[(n - 1) % len(versions)]]), student)
            for n, student in enumerate(students, start=1)]


def answer_keys(sets: dict[int, list[Question]]) -> list[Paper]:
    return [Paper(n, v, lay_out(sets[v])) for n, v in enumerate(sorted(sets), start=1)]


# The header a paper prints: from --config first, then each option given on the command line.
HEADER_FIELDS = ("title", "course", "institution", "date", "instructions")
MAX_HEADER_TEXT = 500
MAX_EXTRA_FIELDS = 20
SEVERAL_LINES = ("instructions",)  # the header texts that may span lines, as [extra] texts may


def header_fields(config: Path | None, given: dict) -> dict:
    """The header texts: a --config file's, then each one given on the command line; a
    config's [extra] table (for a teacher's own templates) arrives as ``extra``."""
    fields = _header_config(config) if config else {}
    fields.update({name: text for name, text in given.items() if text is not None})
    extra = fields.pop("extra", {})
    if (bad := next((k for k in extra if text_fault(k)), None)) is not None:
        raise SpecError(f"[extra] key {shown(bad)} {text_fault(bad)}")
    for name, text in [*fields.items(), *((f"extra.{k}", v) for k, v in extra.items())]:
        if not isinstance(text, str) or len(text) > MAX_HEADER_TEXT:
            raise SpecError(f"{name} must be text of at most {MAX_HEADER_TEXT} characters")
        if (fault := text_fault(text, several_lines=name in SEVERAL_LINES
                                or name.startswith("extra."))):
            raise SpecError(f"{name} {fault}")
    return {**fields, "extra": tuple(sorted(extra.items()))} if extra else fields


def _header_config(path: Path) -> dict:
    config = parse_toml(read_user_file(path, "the header config"), path)
    unknown = sorted(set(config) - set(HEADER_FIELDS) - {"extra"})
    if unknown:
        raise SpecError(f"--config {path}: unknown key {unknown[0]!r} (known: "
                        f"{', '.join(HEADER_FIELDS)}, and an [extra] table for your templates)")
    extra = config.get("extra", {})
    if not isinstance(extra, dict) or len(extra) > MAX_EXTRA_FIELDS:
        raise SpecError(f"--config {path}: [extra] must be a table of at most "
                        f"{MAX_EXTRA_FIELDS} texts, e.g. room = \"B12\"")
    return config
