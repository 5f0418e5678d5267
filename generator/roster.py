"""Stage 1, the class list: ``--students roster.csv`` -> students, each to get a paper.

The file is CSV with a header row naming at least the columns ``id`` and
``name`` (any case, any order; other columns are ignored).  Ids must be unique.
Names are free text: the renderers escape them.
"""

from __future__ import annotations

import csv
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
    columns = {name.strip().lower(): name for name in rows.fieldnames or []}
    missing = [c for c in ("id", "name") if c not in columns]
    if missing:
        raise SpecError(f"{path}: the header row has no '{missing[0]}' column "
                        f"(expected columns: id, name)")
    students = [_student(row, columns, path, line) for line, row in enumerate(rows, start=2)
                if any((value or "").strip() for value in row.values() if isinstance(value, str))]
    _check_students(students, path)
    return students


def _read_rows(path: Path) -> csv.DictReader:
    return csv.DictReader(read_user_file(path, "the roster").splitlines())


def _student(row: dict, columns: dict, path: Path, line: int) -> Student:
    student_id = (row.get(columns["id"]) or "").strip()
    name = (row.get(columns["name"]) or "").strip()
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
