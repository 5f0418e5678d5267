"""Stages 1 and 4 helper: an exam's record (``problems.json``), read back and never lost.

``problems.json`` is the teacher's only record of an exam: its problems, who sat which
version, and how its documents printed them (``documents``: the header, the table of
exponentials and its places; the decimals beside the seed).  Two uses follow:

- a problem set again alone (``--problem CODE --record FILE``) prints the key the marker
  used: the record's header, decimal places and table, unless the command line says
  otherwise (``recorded_documents``);
- a set written into a folder that holds an exam keeps the earlier exam's record as
  ``.gen-problems/exams/<date>-seed<N>/problems.json`` (``kept_folder``, asked by
  ``output.OutputFolder.commit``, which places the copy with the new set, undoes it with
  a rollback, and never replaces or removes it later).  A practice set's record is not
  kept: its ids draw it again, and anyone may.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import sympy

from generator.kinds.sampling import MAX_SEED
from generator.maths.exact import parse_exact
from generator.maths.spec import (
    ProblemSpec,
    SpecError,
    check_record_size,
    read_user_file,
    recorded_spec,
    recorded_whole,
)
from generator.rendering.paper import HEADER_FIELDS, DocumentInfo, header_fields
from generator.rendering.teacher_text import text_fault
from generator.running import inputs
from generator.running.pipeline import MAX_TOTAL_PROBLEMS, shell_word
from generator.running.roster import MAX_STUDENTS, Student

RECORD = "problems.json"
# What a record keeps of its documents' DocumentInfo: everything but the seed and decimals
# (at the record's top level) and what only a drawn set's own key prints.
NOT_RECORDED = ("seed", "decimals", "draw_command", "versioned", "formats", "time_allowed")
RECORDED = tuple(f.name for f in fields(DocumentInfo) if f.name not in NOT_RECORDED)
# What a problem set again takes from its record; what else a run derives (its time at which
# rates, say) follows from these and the command line.
RESTORED = (*HEADER_FIELDS, "extra", "exponent_table", "table_places", "practice", "language")
DEFAULTS = DocumentInfo()
MAX_MINUTES = 10_000  # as --minutes
MAX_TABLE = 64  # exponentials in a recorded table (the tool prints 9)
MAX_DECIMALS = 10  # as --decimals
MAX_PLACES = MAX_DECIMALS + 2  # the table may take a place or two more (formatting.table_places)


def run_record(info: DocumentInfo) -> dict:
    """A record's head: the seed, decimals, the command that draws the set again, the formats
    it was written in and the time its cover allows (each only where there is one), and how its
    documents printed."""
    head = {"seed": info.seed, "decimals": info.decimals}
    head.update({"draw_command": info.draw_command} if info.draw_command else {})
    head.update({"formats": list(info.formats)} if info.formats else {})
    head.update({"time_allowed": info.time_allowed} if info.time_allowed else {})
    return {**head, "documents": documents_record(info)}


def documents_record(info: DocumentInfo) -> dict:
    """How the run's documents printed (a record's ``documents``), as plain JSON values."""
    return {name: _plain(getattr(info, name)) for name in RECORDED}


def recorded_documents(path: Path) -> dict:
    """The DocumentInfo fields (and ``decimals``) a record's documents were printed with,
    each checked as the command line's would be; a record of an older version has none."""
    document = _read(path)
    recorded = document.get("documents") if isinstance(document, dict) else None
    settings = {}
    if isinstance(document, dict) and "decimals" in document:
        settings["decimals"] = _whole(document["decimals"], "decimals", path, MAX_DECIMALS)
    if not isinstance(recorded, dict):
        return settings
    header = {name: recorded[name] for name in HEADER_FIELDS if name in recorded}
    if isinstance(header.get("title"), str) and not header["title"].strip():
        del header["title"]  # written before a blank title was refused: the default prints
    try:
        settings.update(header_fields(None, {**header, "extra": _extra(recorded, path)}))
    except SpecError as error:
        raise SpecError(f"{path}: {error}") from None
    for name in RESTORED:
        if name in recorded and name not in (*HEADER_FIELDS, "extra"):
            settings[name] = _field(name, recorded[name], path)
    return settings


@dataclass(frozen=True)
class RecordedExam:
    """A whole exam as its record holds it: each version's problems in their order, who sat
    which version (when it had a roster), its seed and the command that drew it."""

    versions: dict[int, Sequence[ProblemSpec]]
    students: list[Student] | None
    seed: int | None
    draw_command: str
    versioned: bool
    time_allowed: int = 0

    def seated(self, roster: list[Student] | None) -> tuple[list[Student] | None, list[str]]:
        """The papers' students: a roster's, each at the version the record seated them (by
        id; one the record does not name takes the roster's turn), or the record's own."""
        if roster is None:
            return self.students, []
        seats = {student.id: student.version for student in self.students or ()}
        missing = [student.id for student in roster if seats and student.id not in seats]
        notes = [f"{len(missing)} student{'s' * (len(missing) != 1)} of the roster "
                 f"({', '.join(missing[:3])}{', ...' * (len(missing) > 3)}) not in the record: "
                 f"each sits the version of their place in the roster"] if missing else []
        return [replace(student, version=seats.get(student.id)) for student in roster], notes


def recorded_exam(path: Path) -> RecordedExam:
    """Every problem of a record, by version and number, and its papers' students."""
    document = _read(path)
    problems = document.get("problems") if isinstance(document, dict) else None
    if not isinstance(problems, list) or not problems:
        raise SpecError(f"{path}: not a problems.json that gen-problems wrote (no problems)")
    if len(problems) > MAX_TOTAL_PROBLEMS:  # counted before any is read as a spec
        raise SpecError(f"{path}: {len(problems)} problems; a run sets at most {MAX_TOTAL_PROBLEMS}")
    versions: dict[int, list[ProblemSpec]] = {}
    for record in problems:
        version = record.get("version", 1) if isinstance(record, dict) else None
        if type(version) is not int or not 1 <= version <= MAX_STUDENTS:
            raise SpecError(f"{path}: a problem's version must be a whole number from 1 to "
                            f"{MAX_STUDENTS}")
        versions.setdefault(version, []).append(recorded_spec(record, path))
    for specs in versions.values():
        specs.sort(key=lambda spec: spec.number or 0)
    papers = document.get("papers")
    command = document.get("draw_command") or ""
    if not isinstance(command, str):
        raise SpecError(f"{path}: draw_command must be text")
    if (fault := text_fault(command)):
        raise SpecError(f"{path}: draw_command {fault}")
    seed = recorded_whole(document, "seed", 0, MAX_SEED, str(path))
    return RecordedExam(dict(sorted(versions.items())), _students(papers, versions, path),
                        seed, command, isinstance(papers, list),
                        _whole(document.get("time_allowed", 0), "time_allowed", path, MAX_MINUTES))


def _students(papers, versions: dict, path: Path) -> list[Student] | None:
    """The students a record's papers name, each with their version; None without a roster."""
    if not isinstance(papers, list) or not any(isinstance(paper, dict) and paper.get("student_id")
                                               is not None for paper in papers):
        return None
    students = []
    for paper in papers[:MAX_STUDENTS + 1]:
        sid, name, version = (paper.get(key) if isinstance(paper, dict) else None
                              for key in ("student_id", "name", "version"))
        if not (isinstance(sid, str) and isinstance(name, str) and version in versions):
            raise SpecError(f"{path}: papers: each names a student_id, a name and a version "
                            f"of the record")
        for what, text, other in (("id", sid, name), ("name", name, sid)):
            if (fault := text_fault(text)):  # the student named by what can be printed
                whose = f"a student's {what}" if text_fault(other) else f"the {what} of student {other}"
                raise SpecError(f"{path}: papers: {whose} {fault}")
        students.append(Student(sid, name, version))
    if len(students) > MAX_STUDENTS:
        raise SpecError(f"{path}: more than {MAX_STUDENTS} students")
    return students


def set_again_command(kept: Path, out: str | Path) -> str:
    """The command that sets a kept record's exam again, with the formats it was written in,
    into a folder beside ``out`` named as the kept record's folder."""
    base = Path(out) if Path(out).name not in ("", "..") else Path(out).resolve()
    words = ["gen-problems", "--record", str(kept), "--out",
             str(base.with_name(f"{base.name}-{kept.parent.name}"))]
    try:
        small = kept.stat().st_size <= inputs.MAX_RECORD_BYTES
        formats = json.loads(kept.read_bytes()).get("formats") if small else []
    except (OSError, ValueError, AttributeError):
        formats = []
    formats = ([name for name in formats if name in _format_names()]
               if isinstance(formats, list) else [])
    if [name for name in formats if name != "pdf"]:
        words += ["--format", ",".join(name for name in formats if name != "pdf")]
    words += ["--pdf"] * ("pdf" in formats)
    return " ".join(map(shell_word, words))


def _format_names() -> set[str]:
    """A record's "formats" as --format and --pdf take them: every registered format --format
    names (a plugin's too), and pdf."""
    from generator.formats import FORMATS  # late: the drivers' table imports this module
    return {name for name, driver in FORMATS.items() if not driver.always or driver.prints} | {"pdf"}


def kept_folder(name: str, current: Path) -> str | None:
    """Where the commit keeps the current set's ``name`` before replacing it: an exam's
    record, in a folder named by the day it was written and its seed; None for any other
    file and for a practice set's record."""
    if name != RECORD:
        return None
    try:
        small = current.stat().st_size <= inputs.MAX_RECORD_BYTES
        document = json.loads(current.read_bytes()) if small else {}
    except (OSError, ValueError):
        document = {}  # unreadable: kept all the same, it may be all there is
    document = document if isinstance(document, dict) else {}
    recorded = document.get("documents")
    if isinstance(recorded, dict) and recorded.get("practice") is True:
        return None
    day = time.strftime("%Y-%m-%d", time.localtime(current.stat().st_mtime))
    seed = document.get("seed")
    return f"{day}-seed{seed}" if type(seed) is int else f"{day}-record"


def _read(path: Path):
    text = read_user_file(path, "a problems.json record", inputs.MAX_RECORD_BYTES)
    check_record_size(text, path)
    try:
        return json.loads(text)
    except ValueError as error:
        raise SpecError(f"{path}: not a problems.json that gen-problems wrote ({error})") from None


def _plain(value):
    if isinstance(value, sympy.Basic):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value


def _extra(recorded: dict, path: Path) -> dict:
    """A --config's [extra] texts, recorded as [name, text] pairs."""
    extra = recorded.get("extra", [])
    if not isinstance(extra, list) or not all(isinstance(pair, list) and len(pair) == 2
                                              and isinstance(pair[0], str) for pair in extra):
        raise SpecError(f"{path}: documents.extra must be a list of [name, text] pairs")
    return dict(extra)


def _field(name: str, value, path: Path):
    """A recorded field of the type its default has; the table's entries as exact numbers."""
    if name == "exponent_table":
        if not isinstance(value, list) or len(value) > MAX_TABLE:
            raise SpecError(f"{path}: documents.exponent_table must be a list of numbers")
        try:
            return tuple(parse_exact(entry) for entry in value)
        except ValueError as error:
            raise SpecError(f"{path}: documents.exponent_table: {error}") from None
    if name == "table_places":
        return _whole(value, f"documents.{name}", path, MAX_PLACES)
    default = getattr(DEFAULTS, name)
    if type(value) is not type(default):
        raise SpecError(f"{path}: documents.{name} must be {type(default).__name__}, "
                        f"got {type(value).__name__}")
    return value


def _whole(value, name: str, path: Path, most: int) -> int:
    if type(value) is not int or not 0 <= value <= most:
        raise SpecError(f"{path}: {name} must be a whole number from 0 to {most}")
    return value
