"""Stage 3, a quiz package for Canvas (and other QTI 1.2 importers): qti.zip.

Canvas imports a QTI 1.2 package by converting it to QTI 2.1 with Instructure's
QTIMigrationTool and then reading Canvas's own metadata on each item
(``question_type``, ``points_possible``); it has no question with several numeric
gaps.  So each problem becomes a short run of items, in the order the paper asks:

- a text item with what the problem gives (MathML, which Canvas keeps);
- for each step a part asks, a numerical item per entry asked: every entry of a
  small step, one row of a larger one (the item says which: the row that sees the most
  keys, under a causal mask the last, and never one that gives its answer away), and a
  fill-in item for its shape where the part asks it (``Part.asks_shape``);
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
from functools import partial
from pathlib import Path

from markupsafe import escape

from generator.formats.web import mask_forms, web_environment, written_symbol
from generator.maths import steps
from generator.maths.marking import Tolerances
from generator.rendering.formatting import plain_entry_text, plain_maths, shape_forms
from generator.rendering.language import ENGLISH, Language, language_of
from generator.rendering.paper import DocumentInfo, Paper, header_text
from generator.rendering.render import rendered_pieces
from generator.rendering.sinks import IN_MEMORY, Sink

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
    """One item of a Canvas quiz: a statement, an entry of a step, a step's shape, or a multiple
    choice, with its points."""

    ident: str
    title: str
    question_type: str  # Canvas's: text_only_question, numerical_question, short_answer_question,
    # multiple_choice_question
    points: Decimal
    problem: object  # the ExamProblem, for the templates' prose
    part: object = None
    step: object = None
    entry: tuple[int, int] | None = None  # (row, column), from 0
    asked: str = ""  # what of the step the part's items ask: "every entry", "row 2"
    scale: int = 1  # the entry is asked times this (Canvas keeps only 4 decimals)
    answer: NumericAnswer | None = None
    forms: tuple[str, ...] = ()  # a shape's item: each way of typing it that is right


@dataclass(frozen=True)
class QuizSection:
    """A quiz's section: one problem's items."""

    ident: str
    title: str
    items: tuple[QuizItem, ...]


@dataclass(frozen=True)
class Quiz:
    """One version's quiz: its sections, a problem each, and the file the package holds it in."""

    ident: str
    title: str
    file: str
    sections: tuple[QuizSection, ...]


def render_qti(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None,
               sink: Sink = IN_MEMORY) -> bytes | Path:
    """qti.zip: imsmanifest.xml and one assessment per version, written into ``sink``, each
    assessment compressed as it is rendered (a large set's XML runs to hundreds of
    megabytes)."""
    language = language_of(info.language, user_templates)
    environment = web_environment(info.decimals, user_templates, "html", language)
    environment.filters.update(xml_text=lambda html: escape(str(html)), plain=plain)
    package = package_ident(keys)
    rows = asked_rows(keys, info.decimals)
    quizzes = [build_quiz(paper, info, package, rows, language) for paper in keys]
    assessment = environment.get_template("qti/assessment.xml.j2")
    files = {"imsmanifest.xml": rendered_pieces(environment.get_template("qti/manifest.xml.j2"),
                                                quizzes=quizzes, info=info, ident=package),
             **{quiz.file: rendered_pieces(assessment, quiz=quiz, info=info) for quiz in quizzes}}
    return sink.binary("qti.zip", partial(zip_into, files=files))


MANY_QUIZZES = 6  # beyond this many versions, Canvas leaves the teacher much assigning to do


def package_notes(versions: int) -> list[str]:
    """What a teacher should know before importing: a quiz per version, each assigned by hand."""
    if versions <= MANY_QUIZZES:
        return []
    return [f"qti.zip holds {versions} quizzes, one per version (each student of a roster "
            "sits their own unless --versions says how many): Canvas imports each as a quiz to "
            "assign to its students; --versions 2 to 4 gives quizzes to assign by section"]


def zip_into(file, files: dict) -> None:
    """A zip of the files (name -> a template's text in pieces), in order, with fixed dates:
    the same files give the same bytes.  Each is compressed as it is rendered."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, pieces in files.items():
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with io.TextIOWrapper(archive.open(info, "w"), encoding="utf-8", newline="") as text:
                for piece in pieces:
                    text.write(piece)


def package_ident(keys: list[Paper]) -> str:
    """The same problems, the same identifiers: importing a package again updates its quizzes."""
    ids = ",".join(p.spec.id for paper in keys for p in paper.problems)
    return "gp-" + hashlib.sha256(ids.encode()).hexdigest()[:12]


def build_quiz(paper: Paper, info: DocumentInfo, package: str, rows: dict | None = None,
               language: Language = ENGLISH) -> Quiz:
    """A paper's quiz: a section per problem, titled with the version when there are several;
    its titles in the language."""
    _ = language.gettext
    ident = f"{package}-v{paper.version}"
    title = header_text(info.title, language.gettext)  # the default title translated, a teacher's as typed
    if info.versioned:
        title = _("%(title)s, version %(version)s") % {"title": title, "version": paper.version}
    sections = tuple(QuizSection(f"{ident}-p{problem.number}",
                                 _("Problem %(number)s") % {"number": problem.number},
                                 tuple(problem_items(problem, info.decimals, ident, rows or {},
                                                     language)))
                     for problem in paper.problems)
    file = f"version-{paper.version:02d}.xml" if info.versioned else "quiz.xml"
    return Quiz(ident, title, file, sections)


def problem_items(problem, decimals: int, quiz: str, rows: dict, language: Language = ENGLISH):
    """The items of one problem, in the paper's order: what it gives, then each part's;
    ``rows`` says which row a larger step asks (``asked_rows``); titled in the language."""
    _ = language.gettext
    question = problem.question
    base = f"{quiz}-{safe(question.spec.id)}"
    yield QuizItem(f"{base}-given", _("%(id)s: problem %(number)s, what it gives") % {
                       "id": question.spec.id, "number": problem.number},
                   "text_only_question", Decimal(0), problem)
    tolerances = Tolerances(question, decimals)
    scale = 10 ** max(0, decimals - CANVAS_PLACES)
    for part in question.parts:
        asked = [(step, *asked_entries(step, rows.get(slot(question, part, k, step)), part, language))
                 for k, step in enumerate(part.written)]
        points = split_points(part.marks, item_shares(
            part, [len(e) + part.asks_shape for _, e, _ in asked]))
        for step, entries, what in asked:
            tolerance = tolerances.of(step).chain
            title = f"{question.spec.id} ({part.letter})"
            for i, j in entries:
                if step.kind == "mask":  # M asked itself: 0 or −∞ typed, each entry alike
                    yield QuizItem(
                        f"{base}-{part.letter}-{step_index(part, step)}-{i + 1}-{j + 1}",
                        f"{title} {entry_title(part, step, i, j, language)}", "short_answer_question",
                        points.pop(0), problem, part, step, (i, j), what, forms=mask_forms(step, i, j))
                    continue
                yield QuizItem(
                    f"{base}-{part.letter}-{step_index(part, step)}-{i + 1}-{j + 1}",
                    f"{title} {entry_title(part, step, i, j, language)}"
                    + (f" ({what})" if what != "every entry" else ""),
                    "numerical_question", points.pop(0), problem, part, step, (i, j), what, scale,
                    canvas_answer(step.numeric[i, j] * scale, tolerance[i, j] * scale))
            if part.asks_shape:
                yield QuizItem(f"{base}-{part.letter}-{step_index(part, step)}-shape",
                               _("%(title)s shape of %(symbol)s") % {
                                   "title": title, "symbol": symbol_text(part, step)},
                               "short_answer_question",
                               points.pop(0), problem, part, step, forms=shape_forms(*step.shape))
        if part.item:
            yield QuizItem(f"{base}-{part.letter}-choice", _("%(id)s (%(part)s) choice") % {
                               "id": question.spec.id, "part": part.letter},
                           "multiple_choice_question", points.pop(0), problem, part)


def asked_entries(step, row: int | None = None, part=None,
                  language: Language = ENGLISH) -> tuple[list[tuple[int, int]], str]:
    """The entries a step's items ask: all of a small step's ("every entry"); else those of
    one row (not -inf), ``row`` or else the first that sees the most keys (said in the
    language: "row 2 of S")."""
    finite = [[math.isfinite(x) or step.kind == "mask" for x in row] for row in step.numeric.tolist()]
    everything = [(i, j) for i, row in enumerate(finite) for j, seen in enumerate(row) if seen]
    if len(everything) <= SMALL_STEP:
        return everything, "every entry"
    row = row_order(step, None)[0] if row is None else row
    return ([(row, j) for j, seen in enumerate(finite[row]) if seen],
            language.gettext("row %(row)s of %(symbol)s") % {"row": row + 1,
                                                             "symbol": symbol_text(part, step)})


def asked_rows(keys: list[Paper], decimals: int) -> dict[tuple, int]:
    """The row each larger step asks, by ``slot``: the first, in ``row_order``, that gives its
    answer away in no version, so that every version of a problem asks the same row (the
    versions stay equal); the best row where each gives it away somewhere."""
    found: dict[tuple, list] = {}
    for paper in keys:
        for problem in paper.problems:
            for part in problem.question.parts:
                for k, step in enumerate(part.written):
                    found.setdefault(slot(problem.question, part, k, step), []).append(
                        (problem.question, step))
    rows = {}
    for where, versions in found.items():
        question, step = versions[0]
        order = row_order(step, mask_of(question, step))
        rows[where] = next((i for i in order if not any(gives_away(q, s, i, decimals)
                                                        for q, s in versions)), order[0])
    return rows


def slot(question, part, k: int, step) -> tuple:
    """What every version of a problem shares at a step: its type, mask, part, step and shape
    (versions may come in another order)."""
    return question.kind, question.spec.mask, part.letter, k, step.shape


def row_order(step, mask) -> list[int]:
    """A step's rows, best to ask first: the most keys unmasked (the mask's row, where the
    step has the mask's rows; else the step's own entries that are not -inf), then the first.
    Under a causal mask the last query's row comes first: it sees every key; a key's row
    (dV), the first key's: every query sees it."""
    seen = mask if mask is not None and mask.shape[0] == step.shape[0] else step.numeric
    unmasked = [sum(math.isfinite(x) for x in row) for row in seen.tolist()]
    if step.kind == "mask":  # M asked itself: the row that hides the most keys asks the most
        return sorted(range(step.shape[0]), key=lambda i: (unmasked[i], i))
    return sorted(range(step.shape[0]), key=lambda i: (-unmasked[i], i))


def mask_of(question, step):
    """The masked scores of a problem with a mask (any of its solutions'), as the step's rows
    run: by query, or by key (transposed) where the step's rows are its first input's
    columns (dV = A^T dO); None without a mask."""
    mask = next((s.numeric for solution in question.solutions() for s in solution.steps
                 if s.kind == "masking"), None)
    return mask.T if mask is not None and (plan_of(question, step) or {}).get("t") else mask


def plan_of(question, step) -> dict | None:
    """How a plan computed the step: its inputs (as computed) and whether it transposes its
    first input (``t``); None for a step no plan computed (a picked matrix)."""
    for solution in question.solutions():
        for step_def, computed in zip(solution.plan, solution.steps):
            if computed is step:
                return {"inputs": [solution.step(name) for name in step_def.inputs],
                        "t": step_def.transpose_left}
    return None


# The kinds of step whose row of only 0s and 1s takes no work: a softmax whose query sees one key,
# a sinusoid at position 0 (sin 0, cos 0); and those that turn each row of their first input, by
# nothing at position 0 (RoPE).  (A product's row of 0s and 1s is still worked out.)
FREE_WHEN_0_1 = ("softmax", "sinusoid")
TURNS_ROWS = ("rope",)


def gives_away(question, step, row: int, decimals: int) -> bool:
    """Whether a row's answer is there without the work, as the paper rounds: a row of only 0s
    and 1s where that is free (``FREE_WHEN_0_1``), a sum's row where one addend's
    row is only 0s and 1s and the others are given (X + PE at position 0), a row as
    its first input's (RoPE at position 0), or an output row equal to a value row."""
    shown = step.numeric[row].round(decimals)
    if step.kind in FREE_WHEN_0_1 and trivial(shown):
        return True
    plan = plan_of(question, step) if step.kind in ("blend", "add", *TURNS_ROWS) else None
    first = plan["inputs"][0].numeric if plan and step.kind in TURNS_ROWS else None
    if first is not None and (first[row].round(decimals) == shown).all():  # RoPE at position 0
        return True
    if plan and step.kind == "add":  # the sum copies given rows, adding only 0s and 1s
        addends = [addend for addend in plan["inputs"] if addend.shape == step.shape]
        return any(trivial(addend.numeric[row].round(decimals))
                   and all(other.kind == "given" for other in addends if other is not addend)
                   for addend in addends)
    values = plan["inputs"][1].numeric if plan and step.kind == "blend" else None  # the value rows it blends
    return values is not None and any((shown == v).all() for v in values.round(decimals))


def trivial(row) -> bool:
    """Whether a row holds only 0s and 1s: nothing to work out, or nothing added but 0s and 1s."""
    return all(x in (0, 1) for x in row)


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
    """Which of the part's written steps ``step`` is, counted from 1."""
    return next(k for k, s in enumerate(part.written) if s is step) + 1


def symbol_text(part, step) -> str:
    """A step's symbol as the part writes it (else its own), in plain text: A, S̃_1, A′."""
    if part is None:
        return plain_maths(steps.symbol(step.name))
    return plain_maths(written_symbol(part, step_index(part, step) - 1, step))


def entry_title(part, step, i: int, j: int, language: Language = ENGLISH) -> str:
    """An entry as the key's working names it: S_1[2,3] (entry (2, 3) of head 1's S); S_1[2;3]
    where the comma is the decimal mark ([2,3] would read as a number)."""
    symbol = written_symbol(part, step_index(part, step) - 1, step)
    return f"{plain_entry_text(symbol)}[{i + 1}{language.list_separator.strip()}{j + 1}]"
