"""Stage 3 helper: lay questions out as exam papers, numbered, with their marks and length.

The questions module decides each question's parts and marks; this module only
numbers the problems of a paper, decides who sits which version, estimates how
long a part takes by hand and how much room it needs, and reads the header texts
every paper prints.  Every renderer takes the same layout, so question papers and
keys always number alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from generator.kinds.questions import Question
from generator.maths import ops
from generator.maths.exact import shown
from generator.maths.spec import SpecError, parse_toml, read_user_file
from generator.rendering.language import N_
from generator.rendering.teacher_text import text_fault
from generator.running.roster import Student

# Seconds a student takes by hand for each thing a step asks them to write: (with a calculator,
# without one).  Without one (--no-calculator) an exponential is read off the printed table, a
# weight may be left as a quotient of table values, and every sum and product is done on paper.
# Calibrated so that a problem sized for an exam (Q, K, V given, two or three tokens, widths of
# two to four) takes 8 to 15 minutes and a mark about a minute and a half; README "Length".
SECONDS = {
    "product term": (5, 5),        # a·b of small integers or short decimals, added on
    "long product term": (8, 20),  # a·b with a weight or a gradient in it (four places)
    "short weight term": (8, 10),  # a two-place weight times a gradient (no calculator: the
                                   # softmax backward pass's row of weights given to two places)
    "product entry": (5, 5),       # writing the entry down
    "scaling": (10, 5),            # one score times the scale (halved, without a calculator)
    "masking": (3, 3),             # one -inf
    "exponential": (20, 10),       # e^x keyed in and written down; or read off the table
    "row sum": (10, 30),           # a row's exponentials added up (four places, by hand: longer)
    "quotient": (10, 20),          # e_j / sum (without: left as a quotient of table values)
    "blend term": (8, 15),         # one weight times one value, added on
    "copy entry": (3, 3),          # an entry moved or copied (a permutation, a split, a concatenation)
    "choice": (60, 60),            # a multiple-choice checkpoint
    "explanation": (120, 120),     # a sentence or two of why
}


def seconds(what: str, calculator: bool = True) -> int:
    """The seconds one item of ``SECONDS`` takes by hand, with a calculator or without."""
    return SECONDS[what][0 if calculator else 1]


def part_seconds(part, calculator: bool = True) -> int:
    """How long a part takes by hand: the sum over what its steps ask the student to write.
    It follows from the steps' shapes alone (and which entries a mask hides, and which
    factors are weights or gradients), so every version of a problem takes as long."""
    if part.explained:
        return seconds("explanation", calculator)
    if not part.steps:
        return seconds("choice", calculator)
    return sum(_step_seconds(step, calculator) for step in part.steps)


def _step_seconds(step, calculator: bool) -> int:
    """By the seconds face of the op that computed the step (``ops``); a step no op computes
    (a permutation) is copied entry by entry."""
    computed_by = ops.registered().get(step.kind)
    return (computed_by.seconds if computed_by else copy_seconds)(
        step, partial(seconds, calculator=calculator))


# The seconds faces of the built-in ops (``builtin_ops``): (step, cost) -> seconds, where
# cost(item) is one item's seconds of SECONDS at the paper's rate.
def each_entry(*items: str):
    """Seconds for each entry of the step: the items of SECONDS each entry asks."""
    return lambda step, cost: step.shape[0] * step.shape[1] * sum(cost(item) for item in items)


copy_seconds = each_entry("copy entry")


def product_seconds(step, cost) -> int:
    """The product's seconds face: each product term, and each entry written down."""
    terms = sum(len(line.pairs) for line in step.working)
    term = "long product term" if _has_long_factors(step) else "product term"
    return terms * cost(term) + step.shape[0] * step.shape[1] * cost("product entry")


def softmax_seconds(step, cost) -> int:
    """The softmax's seconds face: each exponential and its quotient, and each row's sum."""
    shown = sum(e is not None for line in step.working for e in line.exponentials)
    return shown * (cost("exponential") + cost("quotient")) + len(step.working) * cost("row sum")


def blend_seconds(step, cost) -> int:
    """The blend's seconds face: each weight times each value."""
    return sum(len(line.weights) for line in step.working) * step.shape[1] * cost("blend term")


def softmax_backward_seconds(step, cost) -> int:
    """A row's a·g, then a_j (g_j - a·g) for each entry; a_k·g_k of two-place weights and
    halves, when the row of weights is given to a few places."""
    if _all_rational(a for line in step.working for a in line.weights):
        return each_entry("product term", "short weight term", "product entry")(step, cost)
    return each_entry("long product term", "long product term", "product entry")(step, cost)


def jacobian_seconds(step, cost) -> int:
    """The softmax Jacobian's seconds face: one product and one entry written down for each entry."""
    short = _all_rational(line.a_i for line in step.working)
    return each_entry("short weight term" if short else "long product term",
                      "product entry")(step, cost)


def _has_long_factors(step) -> bool:
    """Products of weights or gradients (irrational exact values, written to four places)
    take longer than products of the given integers or decimals.  Told by the step as a whole,
    so that a factor that happens to be 0 changes no estimate."""
    return not all(a.exact.is_Rational and b.exact.is_Rational
                   for line in step.working for a, b in line.pairs)


def _all_rational(weights) -> bool:
    """Weights given to a few places (rational), not softmax's own (irrational, written to
    four places): a softmax backward step's or a Jacobian's, worked from a row given so."""
    return all(a.exact.is_Rational for a in weights)


def problem_seconds(parts, calculator: bool = True) -> int:
    """How long a problem's parts take by hand, added."""
    return sum(part_seconds(part, calculator) for part in parts)


LINE_SECONDS = 20  # a line of room on the question sheet for every 20 seconds of writing
MOST_LINES = 36  # a page, less the part's prompt: a part's room is never split from it


def writing_lines(part, calculator: bool = True) -> int:
    """Room on the question sheet, in proportion to the work the part asks at the paper's
    rates (without a calculator the sums and quotients are written out: more room): a line
    for every 20 seconds of writing, 3 to 36 lines, and never fewer than its tallest matrix
    and two; 2 for a choice, 6 for an explanation."""
    if part.explained:
        return 6
    if not part.steps or not part.grids:
        return 2
    tallest = max(step.shape[0] for step in part.written)
    return min(MOST_LINES, max(3, tallest + 2,
                               math.ceil(part_seconds(part, calculator) / LINE_SECONDS)))


# The titles a run gives where the teacher gives none (by whether the problems are scaled and
# what they attend to: api.default_title), and the default instructions: printed in the
# document's language (``header_text``), where a teacher's own text is printed as typed.
TITLES = {(True, "self-attention"): N_("Scaled dot-product self-attention"),
          (True, "cross-attention"): N_("Scaled dot-product cross-attention"),
          (True, "attention"): N_("Scaled dot-product attention"),
          (False, "self-attention"): N_("Dot-product self-attention"),
          (False, "cross-attention"): N_("Dot-product cross-attention"),
          (False, "attention"): N_("Dot-product attention")}
DEFAULT_TITLE = TITLES[True, "self-attention"]
INSTRUCTIONS = N_("Answer every part. Show every intermediate matrix, in order: "
                  "each step earns its own marks.")
HEADER_TEXTS = frozenset({*TITLES.values(), INSTRUCTIONS})


def header_text(text: str, gettext: Callable[[str], str]) -> str:
    """A header's text in the document's language where it is the run's own (the default title
    or instructions); a teacher's text as typed."""
    return gettext(text) if text in HEADER_TEXTS else text


@dataclass(frozen=True)
class DocumentInfo:
    """What the header of a document says; set from the command line."""

    title: str = DEFAULT_TITLE
    course: str = ""
    date: str = ""
    instructions: str = INSTRUCTIONS
    seed: int | None = None
    decimals: int = 4
    draw_command: str = ""  # how to draw the same random set again; empty for a spec file
    versioned: bool = False  # several versions or a roster: label each paper
    institution: str = ""
    extra: tuple = ()  # --config's [extra] texts, (name, text) pairs, for a teacher's templates
    exponent_table: tuple = ()  # --no-calculator: the x whose e^x the sheets print
    table_places: int = 4  # ... with this many decimals, which the softmax working uses too
    practice: bool = False  # a practice set (readable ids): its record need not be kept
    time_allowed: int = 0  # --minutes: the time the cover allows, in minutes (0: none said)
    language: str = "en"  # --lang: the documents' language, a BCP 47 tag (rendering.language)
    formats: tuple = ()  # the formats asked ("pdf" for --pdf): the record's, to set it again alike


@dataclass(frozen=True)
class ExamProblem:
    """A question as numbered on a paper, timed at the paper's rates (with a calculator or without)."""

    number: int
    question: Question
    calculator: bool = True  # its time at the calculator's rates, or without (SECONDS)

    @property
    def spec(self):
        """The question's spec."""
        return self.question.spec

    @property
    def solution(self):
        """The question's solution."""
        return self.question.solution

    @property
    def given(self):
        """The matrices the question's statement gives."""
        return self.question.given

    @property
    def parts(self):
        """The question's parts."""
        return self.question.parts

    @property
    def marks(self) -> int:
        """The question's marks."""
        return self.question.marks

    @property
    def seconds(self) -> int:
        """How long the problem takes by hand, at the paper's rates."""
        return problem_seconds(self.parts, self.calculator)

    @property
    def minutes(self) -> int:
        """The estimate a paper prints: whole minutes, rounded up."""
        return max(1, math.ceil(self.seconds / 60))

    @property
    def rooms(self) -> tuple[int, ...]:
        """Each part's room on the question sheet, in lines, at the paper's rates."""
        return tuple(writing_lines(part, self.calculator) for part in self.parts)


@dataclass(frozen=True)
class Paper:
    """One paper: a student's question paper, or the answer key of one version."""

    number: int
    version: int
    problems: tuple[ExamProblem, ...]
    student: Student | None = None

    @property
    def marks(self) -> int:
        """The paper's marks: its problems' added."""
        return sum(problem.marks for problem in self.problems)

    @property
    def minutes(self) -> int:
        """The paper's time: its problems' minutes added."""
        return sum(problem.minutes for problem in self.problems)


def lay_out(questions: Sequence[Question], calculator: bool = True) -> tuple[ExamProblem, ...]:
    """Numbered 1, 2, ... in order; a problem drawn again alone keeps the number it had."""
    return tuple(ExamProblem(q.spec.number if len(questions) == 1 and q.spec.number else number, q,
                             calculator)
                 for number, q in enumerate(questions, start=1))


# How a version's questions become a paper's problems: ``lay_out``, or, for a caller whose
# versions are read later, a function that lays a version out when it is read.
LayOut = Callable[[Sequence[Question], bool], Sequence[ExamProblem]]


def question_papers(sets: dict[int, Sequence[Question]], students: list[Student] | None,
                    calculator: bool = True, laid_out: LayOut = lay_out) -> list[Paper]:
    """A paper per student (student i sits version i, cycling through the versions, unless
    an exam's record seated them), or without a roster one paper per version."""
    versions = sorted(sets)
    if students is None:
        return [Paper(n, v, laid_out(sets[v], calculator)) for n, v in enumerate(versions, start=1)]
    seats = [student.version or versions[(n - 1) % len(versions)]
             for n, student in enumerate(students, start=1)]
    return [Paper(n, version, laid_out(sets[version], calculator), student)
            for n, (version, student) in enumerate(zip(seats, students), start=1)]


def answer_keys(sets: dict[int, Sequence[Question]], calculator: bool = True,
                laid_out: LayOut = lay_out) -> list[Paper]:
    """An answer key per version, in the order of the versions."""
    return [Paper(n, v, laid_out(sets[v], calculator)) for n, v in enumerate(sorted(sets), start=1)]


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
    fields = {name: _trimmed(text) for name, text in fields.items()}
    if fields.get("title") == "":  # every document's heading and file title starts with it
        raise SpecError("title is blank: give one, or leave the title out for the default")
    extra = {name: _trimmed(text) for name, text in extra.items()}
    return {**fields, "extra": tuple(sorted(extra.items()))} if extra else fields


def _trimmed(text: str) -> str:
    """A header text without the white space around it or its lines, each line break as
    \\n: a blank text is no text (LaTeX ends no line that has not begun: "There's no line
    here to end"), and a blank line inside is a line break as any other."""
    return "\n".join(line.strip() for line in text.strip().splitlines())


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
