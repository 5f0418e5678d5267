"""Stage 1, the class list: ``--students FILE`` -> students, each to get a paper.

A roster is CSV as schools export it, taken with no editing:
  - plain ``id,name``; a Moodle participants or grades export ("First name",
    "Last name", "ID number", "Email address"); a Canvas gradebook export
    ("Student", "ID", "SIS User ID", "SIS Login ID", "Section", with its "Points
    Possible" row); other columns are ignored;
  - UTF-8 (with or without Excel's byte-order mark), else Windows-1252 (Excel's
    "CSV" on Windows; Latin-1 bytes read the same), said in a note;
  - commas, semicolons (European Excel) or tabs; CRLF or LF line ends.
The file is read as CSV is written, not line by line: a quoted cell may hold a
line break, and a vertical tab, form feed or U+2028 inside a name does not split
a student in two; a quote that is never closed is an error naming its line.
Names are kept as written (NFC), white space folded; the renderers escape them.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from generator.maths.spec import SpecError, read_user_bytes
from generator.rendering.teacher_text import text_fault

MAX_STUDENTS = 500
MAX_FIELD = 200
# Counted in the text before the CSV is read: 500 students on as many lines, padded with
# blank rows as some exports are, and a gradebook's column for every assignment.
MAX_LINES = 200_000
MAX_COLUMNS = 2000
# Columns that can serve as a student's id, best first: an institution's number before a
# platform's own id, an id before a login or an email. Header names are compared folded;
# Moodle writes them in the teacher's language (German, French and Spanish here too).
ID_COLUMNS = ("sis user id", "id number", "student id", "student number", "matriculation number",
              "id-nummer", "matrikelnummer", "numéro d'identification", "número de id",
              "id", "sis login id", "username", "email address", "email", "e-mail-adresse",
              "adresse de courriel", "dirección de correo")
NAME_COLUMNS = ("name", "full name", "student name", "student")
FIRST_NAME_COLUMNS = ("first name", "given name", "firstname", "vorname", "prénom", "nombre")
LAST_NAME_COLUMNS = ("last name", "surname", "family name", "lastname", "nachname", "nom",
                     "apellido(s)", "apellidos")
CANVAS_PSEUDO_STUDENTS = ("Points Possible", "Student, Test")  # not students: Canvas's own rows


@dataclass(frozen=True)
class Student:
    """One student of a roster: their id, name, and the version an exam's record seated them at."""

    id: str
    name: str
    version: int | None = None  # the version an exam's record seated them at (``exam_record``)


@dataclass(frozen=True)
class Roster:
    """The students of a roster file, in its order, and what its reading assumed."""

    students: list[Student]
    notes: list[str] = field(default_factory=list)  # e.g. which encoding was assumed


def load_roster(path: Path) -> Roster:
    """The students of a roster file (see the module's docstring), checked: a SpecError of one line
    naming the file and line."""
    text, notes = _decode(read_user_bytes(path, "the roster"), path)
    _check_size(text, path)
    rows = _read_rows(text, path)
    if not rows:
        raise SpecError(f"{path}: no students in the roster")
    (_, header), records = rows[0], [(line, row) for line, row in rows[1:] if _may_be_a_student(row)]
    pick_id, pick_name = _columns(header, [row for _, row in records], path)
    entries = [(line, pick_id(row), pick_name(row)) for line, row in records]
    # A row with neither id nor name is a row of totals or flags (Canvas's "Manual Posting").
    students = [(line, _student(sid, name, path, line)) for line, sid, name in entries if sid or name]
    _check_students(students, path)
    return Roster([student for _, student in students], notes)


def _check_size(text: str, path: Path) -> None:
    """A text of far more lines or columns than a class's roster is refused before it is read
    as CSV (a header of 16 million empty columns takes seconds to read)."""
    if max(text.count("\n"), text.count("\r")) > MAX_LINES:  # LF, CRLF, or CR alone
        raise SpecError(f"{path}: more than {MAX_LINES} lines; a roster of at most "
                        f"{MAX_STUDENTS} students has far fewer")
    lines = text.splitlines()
    delimiter = _dialect(text).delimiter
    wide = next((number for number, line in enumerate(lines, start=1)
                 if line.count(delimiter) >= MAX_COLUMNS), None)
    if wide is not None:
        raise SpecError(f"{path}, line {wide}: more than {MAX_COLUMNS} columns; is it a roster?")


def _may_be_a_student(row: list[str]) -> bool:
    cells = [cell.strip() for cell in row]
    return any(cells) and not any(cell in CANVAS_PSEUDO_STUDENTS for cell in cells)


def _decode(data: bytes, path: Path) -> tuple[str, list[str]]:
    """UTF-8 first (a byte-order mark is dropped); else Windows-1252, which Excel writes."""
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # bytes cp1252 leaves undefined: Latin-1 reads every byte
        text = data.decode("latin-1")
    return text, [f"{path} is not UTF-8: read it as Windows-1252 (cp1252), as Excel writes it; "
                  f"check the names in problems.json"]


def _read_rows(text: str, path: Path) -> list[tuple[int, list[str]]]:
    """Every record with the line it starts on; a malformed record is one line of error."""
    reader = csv.reader(io.StringIO(text, newline=""), dialect=_dialect(text), strict=True)
    rows, line = [], 1
    try:
        for row in reader:
            if any(cell.strip() for cell in row):  # a blank row (or one of bare commas) is no one
                rows.append((line, row))
            line = reader.line_num + 1
            if len(rows) > MAX_STUDENTS + 2:
                raise SpecError(f"{path}: more than {MAX_STUDENTS} students; at most {MAX_STUDENTS}")
    except csv.Error as error:
        reason = ("a quote opened here is never closed" if "end of data" in str(error)
                  else "a cell longer than the CSV reader's limit" if "field limit" in str(error)
                  else f"malformed CSV ({error})")
        raise SpecError(f"{path}, line {line}: {reason}") from None
    return rows


def _dialect(text: str) -> type[csv.Dialect]:
    """Commas, or the semicolons of European Excel, or tabs: whichever the header row uses."""
    header = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=header.count)

    class Dialect(csv.excel):
        pass

    Dialect.delimiter = delimiter if header.count(delimiter) else ","
    return Dialect


def _columns(header: list[str], rows: list[list[str]], path: Path):
    """Functions that read a row's id and name, from the columns the header names. The id is
    the first id column filled for every student (Moodle's "ID number" is often left empty)."""
    index = {_folded(name): position for position, name in enumerate(header)}
    ids = [index[c] for c in ID_COLUMNS if c in index]
    identified = [row for row in rows if any(_cell(row, i) for i in ids)]
    id_column = next((i for i in ids if all(_cell(row, i) for row in identified)),
                     ids[0] if ids else None)
    name_column = next((index[c] for c in NAME_COLUMNS if c in index), None)
    first = next((index[c] for c in FIRST_NAME_COLUMNS if c in index), None)
    last = next((index[c] for c in LAST_NAME_COLUMNS if c in index), None)
    if id_column is None or (name_column is None and first is None):
        found = ", ".join(repr(name) for name in header[:12]) or "none"
        missing = "ids" if id_column is None else "names"
        raise SpecError(f"{path}: no column for the students' {missing} (found {found}; expected "
                        f"id and name, or a Moodle or Canvas export's columns)")
    if name_column is not None:
        return (lambda row: _cell(row, id_column)), (lambda row: _cell(row, name_column))
    return (lambda row: _cell(row, id_column)), (
        lambda row: " ".join(part for part in (_cell(row, first), _cell(row, last)) if part))


def _folded(header: str) -> str:
    return " ".join(header.replace("\ufeff", "").casefold().replace("_", " ").split())


def _cell(row: list[str], index: int | None) -> str:
    """A cell as NFC with its white space folded: a line break or tab inside a name is a space."""
    if index is None or index >= len(row):
        return ""
    return unicodedata.normalize("NFC", " ".join(row[index].split()))


def _student(student_id: str, name: str, path: Path, line: int) -> Student:
    if not student_id or not name:
        raise SpecError(f"{path}, line {line}: every student needs an id and a name")
    if len(student_id) > MAX_FIELD or len(name) > MAX_FIELD:
        raise SpecError(f"{path}, line {line}: id and name are at most {MAX_FIELD} characters")
    for what, text, other in (("id", student_id, name), ("name", name, student_id)):
        if (fault := text_fault(text)):  # the student named by what can be printed
            whose = f"the student's {what}" if text_fault(other) else f"the {what} of student {other}"
            raise SpecError(f"{path}, line {line}: {whose} {fault}")
    return Student(student_id, name)


def _check_students(students: list[tuple[int, Student]], path: Path) -> None:
    if not students:
        raise SpecError(f"{path}: no students in the roster")
    if len(students) > MAX_STUDENTS:
        raise SpecError(f"{path}: {len(students)} students; at most {MAX_STUDENTS}")
    first_line: dict[str, int] = {}
    for line, student in students:
        if student.id in first_line:
            raise SpecError(f"{path}: student id {student.id!r} is on line {first_line[student.id]} "
                            f"and on line {line}")
        first_line[student.id] = line
