"""Output format "answer-sheet": answers.csv, every answer a student writes as one row, for a
spreadsheet or an automatic marker: the version, problem and part, the step and its entry,
the key's value to the shown decimals and how far an answer may be from it (the tolerance
Moodle and the practice page mark with), or the letter of a choice."""

from __future__ import annotations

import csv
import io
import math

from generator import formats
from generator.maths.marking import Tolerances
from generator.rendering import formatting as fmt

NAME = "answer-sheet"
COLUMNS = ("version", "problem", "part", "marks", "step", "row", "column", "key", "tolerance")
LETTERS = "ABCDEFGHIJKL"


def answer_sheet(rendering) -> dict[str, str]:
    """answers.csv, written by the csv module (quoting a title's commas and quotes)."""
    text = io.StringIO(newline="")
    sheet = csv.writer(text, lineterminator="\n")
    sheet.writerow(COLUMNS)
    for paper in rendering.keys:
        for problem in paper.problems:
            sheet.writerows(problem_rows(paper.version, problem.question, rendering.info.decimals))
    return {"answers.csv": text.getvalue()}


def problem_rows(version: int, question, decimals: int):
    """A row for each entry of each step a part asks, then one for its choice, if any."""
    tolerances = Tolerances(question, decimals)
    for part in question.parts:
        where = (version, question.spec.id, part.letter, part.marks)
        for step in part.written:
            bounds = tolerances.of(step).chain
            for i, row in enumerate(step.entries):
                for j, num in enumerate(row):
                    yield (*where, step.name, i + 1, j + 1, fmt.decimal_text(num, decimals),
                           _tolerance(num.value, float(bounds[i, j])))
        if part.item:
            yield (*where, "choice", "", "", LETTERS[part.item.answer], "")


def _tolerance(value: float, bound: float) -> str:
    """The bound, rounded up; none for a masked entry (-inf: nothing to be near)."""
    return fmt.rounded_up(bound, 3) if math.isfinite(value) and math.isfinite(bound) else ""


def register() -> None:
    """The entry point (gen_problems.formats)."""
    formats.register(formats.Driver(
        NAME, answer_sheet, files=("answers.csv",),
        help="answers.csv: every answer a student writes, with its key and tolerance"))
