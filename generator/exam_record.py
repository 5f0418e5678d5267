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
from dataclasses import fields
from pathlib import Path

import sympy

from . import inputs
from .exact import parse_exact
from .paper import HEADER_FIELDS, DocumentInfo, header_fields
from .spec import SpecError, read_user_file

RECORD = "problems.json"
# What a record keeps of its documents' DocumentInfo: everything but the seed and decimals
# (at the record's top level) and what only a drawn set's own key prints.
NOT_RECORDED = ("seed", "decimals", "draw_command", "versioned")
RECORDED = tuple(f.name for f in fields(DocumentInfo) if f.name not in NOT_RECORDED)
# What a problem set again takes from its record; what else a run derives (its time at which
# rates, say) follows from these and the command line.
RESTORED = (*HEADER_FIELDS, "extra", "exponent_table", "table_places", "practice")
DEFAULTS = DocumentInfo()
MAX_TABLE = 64  # exponentials in a recorded table (the tool prints 9)
MAX_DECIMALS = 10  # as --decimals
MAX_PLACES = MAX_DECIMALS + 2  # the table may take a place or two more (formatting.table_places)


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
    try:
        settings.update(header_fields(None, {**header, "extra": _extra(recorded, path)}))
    except SpecError as error:
        raise SpecError(f"{path}: {error}") from None
    for name in RESTORED:
        if name in recorded and name not in (*HEADER_FIELDS, "extra"):
            settings[name] = _field(name, recorded[name], path)
    return settings


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
