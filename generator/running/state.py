"""The output folder's own state files, read defensively (used by ``output``).

``.gen-problems/manifest.json`` lists the files of the current set, each with the identity
the tool wrote it with (its size and SHA-256); ``journal.json`` records a commit under way.
A teacher's folder may hold anything there (a colleague's zip, a file edited by hand, a
disk that filled up), so each is checked before it is believed: a JSON object of the shape
this tool writes, of a sane size, naming only plain paths inside the folder that the tool
itself may write.  A check that fails raises ``Damaged``, whose message says what is wrong
in a few words ("is not valid JSON"); the caller refuses the run in one line and leaves the file in place.

An identity tells the tool's file from one the teacher put in its place: a file whose size
or hash no longer matches is the teacher's, never removed or overwritten.  Hashing costs
little (about 1 ms a megabyte): it is done once when a file is staged and once when the next
run checks the file before replacing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Callable

STATE = ".gen-problems"
MANIFEST = "manifest.json"
KEPT = "exams"  # earlier exams' records, each in a folder of its own
MAX_STATE_BYTES = 16 << 20  # a class of 500 writes some 3,000 files: about 1 MB of manifest

Identity = dict  # {"size": bytes, "sha256": hex digest}


class Damaged(ValueError):
    """A state file that is not one this tool wrote; the message says why, in a few words."""


def read_state_json(path: Path) -> object:
    """One of the tool's own JSON files, never read through a link, refused if oversized."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if os.path.islink(path):
            raise Damaged("is a link") from None
        raise Damaged(f"cannot be read ({error.strerror or error})") from None
    status = os.fstat(descriptor)  # before fdopen, which refuses a folder with the wrong name
    if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_STATE_BYTES:
        os.close(descriptor)
        raise Damaged("is not a plain file" if not stat.S_ISREG(status.st_mode) else
                      f"is {status.st_size >> 20} MB, larger than the tool ever writes")
    with os.fdopen(descriptor, "rb") as stream:
        text = stream.read(MAX_STATE_BYTES + 1)
    try:
        return json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise Damaged("is not valid JSON") from None


def manifest_files(data: object, owned: Callable[[str], bool] | None = None
                   ) -> dict[str, Identity | None]:
    """{each file of the current set: the identity it was written with, or None from a manifest
    of an earlier version, which recorded names only}.  ``owned(name)`` says whether the tool
    may write a file of that name at all."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise Damaged("is of the wrong shape: no list of files")
    files, identities = data["files"], data.get("identities", {})
    for name in files:
        check_name(name)
        if owned is not None and not owned(name):
            raise Damaged(f"lists {name!r}, not a file gen-problems writes")
    if not isinstance(identities, dict) or not set(identities) <= set(files):
        raise Damaged("is of the wrong shape: identities of files it does not list")
    for name, identity in identities.items():
        if not _is_identity(identity):
            raise Damaged(f"is of the wrong shape: a malformed identity for {name!r}")
    return {name: identities.get(name) for name in files}


def journal_changes(data: object) -> dict:
    """A journal's record of a commit under way, checked for the shape the tool writes: the
    files created and replaced, and the (device, inode) of each file the commit placed."""
    if not isinstance(data, dict) or data.get("tool") != "gen-problems":
        raise Damaged("is of the wrong shape")
    created, replaced, placed = data.get("created"), data.get("replaced"), data.get("placed")
    if not (isinstance(created, list) and isinstance(replaced, list)
            and isinstance(placed, dict)):
        raise Damaged("is of the wrong shape")
    for name in (*created, *replaced, *placed):
        check_name(name, journal=True)
    if not all(isinstance(v, list) and len(v) == 2 and all(type(n) is int for n in v)
               for v in placed.values()):
        raise Damaged("is of the wrong shape: a malformed inode")
    return data


def check_name(name: object, journal: bool = False) -> None:
    """A path the tool writes: relative to the output folder, inside it, spelled plainly, and
    not in the tool's own state (where a journal may name only the manifest and kept records)."""
    if not plain_name(name):
        raise Damaged(f"names {name[:80]!r}, not a plain path inside the folder"
                      if isinstance(name, str)
                      else "is of the wrong shape: a name that is not text")
    parts = PurePosixPath(name).parts
    if parts[0] == STATE and not (journal and (parts[1:] == (MANIFEST,)
                                               or (len(parts) > 3 and parts[1] == KEPT))):
        raise Damaged(f"names {name!r}, the tool's own state")


def plain_name(name) -> bool:
    """A file name relative to the output folder, inside it, spelled plainly (a/b.pdf)."""
    if not isinstance(name, str) or not name or "\0" in name:
        return False
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and path.as_posix() == name


def file_identity(path: Path) -> Identity:
    """A file's size and SHA-256, read without following a link."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as stream:
        digest = hashlib.file_digest(stream, "sha256")
        return {"size": os.fstat(descriptor).st_size, "sha256": digest.hexdigest()}


def is_changed(path: Path, identity: Identity | None) -> bool:
    """Whether what stands at ``path`` is no longer the file the tool wrote there: a folder,
    a device, a file of another size or content, or one it cannot read (a file recorded by
    name only, by an earlier version, is taken as the tool's).  A missing file is not
    changed; nor is a link, which the commit refuses on its own."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(status.st_mode):
        return False
    if not stat.S_ISREG(status.st_mode):
        return True
    if identity is None:
        return False
    try:
        return status.st_size != identity["size"] or file_identity(path) != identity
    except OSError:  # unreadable (chmod 000): the tool cannot tell, so it keeps the file
        return True


def _is_identity(identity: object) -> bool:
    if not isinstance(identity, dict) or set(identity) != {"size", "sha256"}:
        return False
    size, digest = identity["size"], identity["sha256"]
    return (type(size) is int and 0 <= size < 1 << 63 and isinstance(digest, str)
            and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest))
