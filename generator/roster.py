"""Stage 1, the class list: ``--students roster.csv`` -> students, each to get a paper.

The file is CSV with a header row naming at least the columns ``id`` and
``name`` (any case, any order; other columns are ignored).  Ids must be unique.
Names are free text: the renderers escape them.  The file is read as CSV is
written, not line by line: a quoted cell may hold a line break, and a vertical
tab, form feed or U+2028 inside a name does not split a student in two; a quote
that is never closed is an error naming its line, not two students merged.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .spec import SpecError, read_user_file

MAX_STUDENTS = 500
MAX_FIELD = 200


@dataclass(frozen=True)
class Student:
    id: str
    name: str


def load_roster(path: Path) -> list[Student]:
    rows = _read_rows(path)
    if not rows:
        raise SpecError(f"{path}: no students in the roster")
    (_, header), records = rows[0], rows[1:]
    columns = {name.strip().lower(): index for index, name in enumerate(header)}
    missing = [c for c in ("id", "name") if c not in columns]
    if missing:
        raise SpecError(f"{path}: the header row has no '{missing[0]}' column "
                        f"(expected columns: id, name)")
    students = [_student(row, columns, path, line) for line, row in records
                if any(cell.strip() for cell in row)]
    _check_students(students, path)
    return students


def _read_rows(path: Path) -> list[tuple[int, list[str]]]:
    """Every record with the line it starts on; a malformed record is one line of error."""
    reader = csv.reader(io.StringIO(read_user_file(path, "the roster"), newline=""), strict=True)
    rows, line = [], 1
    try:
        for row in reader:
            rows.append((line, row))
            line = reader.line_num + 1
            if len(rows) > MAX_STUDENTS + 1:
                raise SpecError(f"{path}: more than {MAX_STUDENTS} students; at most {MAX_STUDENTS}")
    except csv.Error as error:
        reason = ("a quote opened here is never closed" if "end of data" in str(error)
                  else "a cell longer than the CSV reader's limit" if "field limit" in str(error)
                  else f"malformed CSV ({error})")
        raise SpecError(f"{path}, line {line}: {reason}") from None
    return rows


def _cell(row: list[str], index: int) -> str:
    """A cell with its white space folded: a line break or tab inside a name is one space."""
    return " ".join(row[index].split()) if index < len(row) else ""


def _student(row: list[str], columns: dict, path: Path, line: int) -> Student:
    student_id, name = _cell(row, columns["id"]), _cell(row, columns["name"])
    if not student_id or not name:
        raise SpecError(f"{path}, line {line}: every student needs an id and a name")
    if len(student_id) > MAX_FIELD or len(name) > MAX_FIELD:
        raise SpecError(f"{path}, line {line}: id and name are at most {MAX_FIELD} characters")
    return Student(student_id, name)


def _check_students(students: list[Student], path: Path) -> None:
    if not students:
        raise SpecError(f"{path}: no students in the roster")
    if len(students) > MAX_STUDENTS:
        raise SpecError(f"{path}: {len(students)} students; at most {MAX_STUDENTS}")
    seen: set[str] = set()
    for student in students:
        if student.id in seen:
            raise SpecError(f"{path}: duplicate student id {student.id!r}")
        seen.add(student.id)
