"""Stage 3, a quiz package for Canvas (and other QTI 1.2 importers): qti.zip.

Canvas imports a QTI 1.2 package by converting it to QTI 2.1 with Instructure's
QTIMigrationTool and then reading Canvas's own metadata on each item
(``question_type``, ``points_possible``); it has no question with several numeric
gaps.  So each problem becomes a short run of items, in the order the paper asks:

- a text item with what the problem gives (MathML, which Canvas keeps);
- for each step a part asks, a numerical item per entry asked: every entry of a
  small step, one row of a larger one (the item says which);
- a multiple-choice item for each choice a part asks.

A part's marks are shared out among its items as the paper shares them among its
steps; the worked key of the part is each item's general feedback.  Numbers are
written as Canvas reads and grades them (see ``canvas_answer``).  One assessment
per version; the layout of the XML is in ``templates/qti``, the numbers here.
"""

from __future__ import annotations

import hashlib
import io
import math
import zipfile
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from pathlib import Path

from markupsafe import escape

from .formatting import plain_entry_text
from .marking import Tolerances
from .paper import DocumentInfo, Paper
from .render import send_in_batches
from .web import web_environment, written_symbol

SMALL_STEP = 6  # a step of at most this many entries is asked whole; a larger one, one row
CANVAS_PLACES = 4  # Canvas keeps an answer to 4 decimal places, and rounds what is typed to them
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # every file's date in the zip: the same run, the same bytes


@dataclass(frozen=True)
class NumericAnswer:
    """An exact answer with Canvas's margin, and the bounds that say it (all plain decimals)."""

    exact: str
    lower: str
    upper: str


@dataclass(frozen=True)
class QuizItem:
    ident: str
    title: str
    question_type: str  # Canvas's: text_only_question, numerical_question, multiple_choice_question
    points: Decimal
    problem: object  # the ExamProblem, for the templates' prose
    part: object = None
    step: object = None
    entry: tuple[int, int] | None = None  # (row, column), from 0
    asked: str = ""  # what of the step the part's items ask: "every entry", "row 2"
    scale: int = 1  # the entry is asked times this (Canvas keeps only 4 decimals)
    answer: NumericAnswer | None = None


@dataclass(frozen=True)
class QuizSection:
    ident: str
    title: str
    items: tuple[QuizItem, ...]


@dataclass(frozen=True)
class Quiz:
    ident: str
    title: str
    file: str
    sections: tuple[QuizSection, ...]


def render_qti(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None,
               workspace: Path | None = None) -> bytes | Path:
    """qti.zip: imsmanifest.xml and one assessment per version; given a ``workspace``, the zip
    is written there, each assessment as it is rendered (a large set's XML runs to hundreds
    of megabytes), and given as the file's path."""
    environment = web_environment(info.decimals, user_templates, "html")
    environment.filters.update(xml_text=lambda html: escape(str(html)), plain=plain)
    package = package_ident(keys)
    quizzes = [build_quiz(paper, info, package) for paper in keys]
    assessment = environment.get_template("qti/assessment.xml.j2")
    files = {"imsmanifest.xml": environment.get_template("qti/manifest.xml.j2").generate(
        quizzes=quizzes, info=info, ident=package),
        **{quiz.file: assessment.generate(quiz=quiz, info=info) for quiz in quizzes}}
    if workspace is None:
        buffer = io.BytesIO()
        zip_into(buffer, files)
        return buffer.getvalue()
    with open(workspace / "qti.zip", "wb") as file:
        zip_into(file, files)
    return workspace / "qti.zip"


MANY_QUIZZES = 6  # beyond this many versions, Canvas leaves the teacher much assigning to do


def package_notes(versions: int) -> list[str]:
    """What a teacher should know before importing: a quiz per version, each assigned by hand."""
    if versions <= MANY_QUIZZES:
        return []
    return [f"qti.zip holds {versions} quizzes, one per version (each student of a roster "
            "sits their own unless --versions says how many): Canvas imports each as a quiz to "
            "assign to its students; --versions 2 to 4 gives quizzes to assign by section"]


def zip_into(file, files: dict) -> None:
    """A zip of the files (name -> a template's chunks), in order, with fixed dates: the same
    files give the same bytes.  Each is compressed as it is rendered."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, chunks in files.items():
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with io.TextIOWrapper(archive.open(info, "w"), encoding="utf-8", newline="") as text:
                send_in_batches(chunks, text)


def package_ident(keys: list[Paper]) -> str:
    """The same problems, the same identifiers: importing a package again updates its quizzes."""
    ids = ",".join(p.spec.id for paper in keys for p in paper.problems)
    return "gp-" + hashlib.sha256(ids.encode()).hexdigest()[:12]


def build_quiz(paper: Paper, info: DocumentInfo, package: str) -> Quiz:
    ident = f"{package}-v{paper.version}"
    title = f"{info.title}, version {paper.version}" if info.versioned else info.title
    sections = tuple(QuizSection(f"{ident}-p{problem.number}", f"Problem {problem.number}",
                                 tuple(problem_items(problem, info.decimals, ident)))
                     for problem in paper.problems)
    file = f"version-{paper.version:02d}.xml" if info.versioned else "quiz.xml"
    return Quiz(ident, title, file, sections)


def problem_items(problem, decimals: int, quiz: str):
    """The items of one problem, in the paper's order: what it gives, then each part's."""
    question = problem.question
    base = f"{quiz}-{safe(question.spec.id)}"
    yield QuizItem(f"{base}-given", f"{question.spec.id}: problem {problem.number}, what it gives",
                   "text_only_question", Decimal(0), problem)
    tolerances = Tolerances(question, decimals)
    scale = 10 ** max(0, decimals - CANVAS_PLACES)
    for part in question.parts:
        asked = [(step, *asked_entries(step)) for step in part.written]
        points = split_points(part.marks, item_shares(part, [len(e) for _, e, _ in asked]))
        for step, entries, what in asked:
            tolerance = tolerances.of(step).chain
            for i, j in entries:
                yield QuizItem(
                    f"{base}-{part.letter}-{step_index(part, step)}-{i + 1}-{j + 1}",
                    f"{question.spec.id} ({part.letter}) {entry_title(part, step, i, j)}",
                    "numerical_question", points.pop(0), problem, part, step, (i, j), what, scale,
                    canvas_answer(step.numeric[i, j] * scale, tolerance[i, j] * scale))
        if part.item:
            yield QuizItem(f"{base}-{part.letter}-choice", f"{question.spec.id} ({part.letter}) choice",
                           "multiple_choice_question", points.pop(0), problem, part)


def asked_entries(step) -> tuple[list[tuple[int, int]], str]:
    """The entries a step's items ask: all of a small step's; else the row with the most
    entries to work out (not -inf), the first such."""
    finite = [[math.isfinite(x) for x in row] for row in step.numeric.tolist()]
    everything = [(i, j) for i, row in enumerate(finite) for j, seen in enumerate(row) if seen]
    if len(everything) <= SMALL_STEP:
        return everything, "every entry"
    row = max(range(len(finite)), key=lambda i: (sum(finite[i]), -i))
    return [(row, j) for j, seen in enumerate(finite[row]) if seen], f"row {row + 1}"


def item_shares(part, entries_per_step: list[int]) -> list[Fraction]:
    """Each item's share of the part's marks: as the part divides them between its steps and
    its choice (``Part.answer_weights``), a step's share split evenly between the entries asked."""
    weights = part.answer_weights
    total = sum(weights)
    counts = entries_per_step + ([1] if part.item else [])
    return [Fraction(w, total * n) for w, n in zip(weights, counts) for _ in range(n)]


def split_points(marks: int, shares: list[Fraction]) -> list[Decimal]:
    """Points per item that add up to exactly the part's marks: to hundredths (finer where an
    item's share would not make a hundredth), the last hundredths going to the items that were
    rounded down the most."""
    places = 2
    while min(shares) * marks * 10**places < 1:  # every item worth at least one unit
        places += 1
    unit = 10**places
    exact = [share * marks * unit for share in shares]
    points = [math.floor(x) for x in exact]
    for k in sorted(range(len(exact)), key=lambda k: (points[k] - exact[k], k))[:marks * unit - sum(points)]:
        points[k] += 1
    return [Decimal(p).scaleb(-places) for p in points]


def canvas_answer(value: float, tolerance: float) -> NumericAnswer:
    """The key's value as Canvas keeps it (4 decimals), and a margin that accepts every answer
    the marking rule accepts: its tolerance, what keeping 4 decimals moved the key, and half a
    unit of the 4th place (Canvas rounds a typed answer to 4 places before comparing)."""
    unit = Decimal(1).scaleb(-CANVAS_PLACES)
    with localcontext(prec=400):  # a float's every digit, however large (1e300 has 301)
        exact = Decimal(repr(float(value))).quantize(unit, ROUND_HALF_UP)
        need = Decimal(repr(float(tolerance))) + abs(Decimal(repr(float(value))) - exact) + unit / 2
        margin = max(need.quantize(unit, ROUND_CEILING), unit)
        return NumericAnswer(plain(exact), plain(exact - margin), plain(exact + margin))


def plain(number: Decimal) -> str:
    """A plain decimal (never exponent form, which Canvas misreads), without trailing zeros."""
    with localcontext(prec=400):
        text = format(number.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def safe(text: str) -> str:
    """An identifier QTIMigrationTool keeps as it is: letters, digits and '-' only."""
    return "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in text)


def step_index(part, step) -> int:
    return next(k for k, s in enumerate(part.written) if s is step) + 1


def entry_title(part, step, i: int, j: int) -> str:
    """An entry as the key's working names it: S_1[2,3] (entry (2, 3) of head 1's S)."""
    symbol = written_symbol(part, step_index(part, step) - 1, step)
    return f"{plain_entry_text(symbol)}[{i + 1},{j + 1}]"
