"""Stage 4, writers: the output folder, replaced as a whole set, like a database commit.

The tool owns only what it wrote.  ``.gen-problems/manifest.json`` lists the files
of the last complete set, each with its size and hash; nothing else in the folder is ever
removed or overwritten (a file in the way that the tool did not write stops the run), nor
is a file of the set that is no longer the one the tool wrote (the teacher's now: kept).
The state files are checked before they are believed (``state``): one the tool did not
write stops the run in one line and is left for the teacher to inspect.

Putting a new set in place (``OutputFolder.commit``), under a lock on the folder:
  1. every new file is written in full into a private work folder;
  2. the current set's files are linked (or copied) into ``backup/``;
  3. ``journal.json`` records what is about to change; from here a failure, a
     kill or Ctrl-C rolls back to the earlier set;
  4. the new files are renamed into place, stale ones of the earlier set removed,
     the manifest replaced;
  5. removing the journal is the commit; then the backups go.
A run that finds a journal (its writer was killed) restores the earlier set
before it does anything else.  Readers see whole files only (each is renamed).

A file of the earlier set that must outlive it (an exam's record: ``exam_record``) is
kept by the commit that replaces it: copied to ``.gen-problems/exams/<name>/`` as one
more file the commit creates (so a rollback removes the copy and puts the original
back), under a name no earlier copy has.  Kept files are the tool's, never listed in
the manifest, never replaced, never removed by a later run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import filecmp
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
from pathlib import Path, PurePosixPath
from typing import Callable

from generator.running.state import (
    KEPT,
    MANIFEST,
    STATE,
    Damaged,
    file_identity,
    is_changed,
    journal_changes,
    manifest_files,
    plain_name,
    read_state_json,
)

JOURNAL = "journal.json"
LOCK = "lock"
BACKUP = "backup"
TEX_FAILURE = "tex-failure"
WORK_PREFIX = "work-"


# Set while a commit puts a set in place: a stop (Ctrl-C) then waits until the folder holds
# a whole set again, so that what the run says of it is true (the CLI's stop handler reads it).
COMMITTING = threading.Event()


class OutputError(Exception):
    """The output folder cannot take the new set; the message is one line for the user."""


class OutputRefused(OutputError):
    """The run would overwrite or remove what is not the tool's: bad input, refused up front."""


def current_umask() -> int:
    """The process's umask (read by setting it, then setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class OutputFolder:
    """The ``--out`` folder: checked and recovered on ``open``, replaced on ``commit``."""

    def __init__(self, path: str | Path, owned: Callable[[str], bool] | None = None):
        self.named = str(path)  # as given: Path("") would quietly become "."
        self.owned = owned  # whether the tool may write a file of this name (any, if None)
        self.path = Path(path)
        self.state = self.path / STATE
        self.work: Path | None = None
        self._work_lock = None
        self.made: list[Path] = []  # the folders this run made, deepest first
        self.committed = False
        self.kept: list[Path] = []  # files of the earlier set this run's commit kept
        self.disowned: list[Path] = []  # files of the earlier set the teacher has changed

    # -- opening: before anything is solved ------------------------------------------------

    def open(self) -> OutputFolder:
        """Check the folder and restore a set a killed run left half-written; nothing is created
        yet, so a run that stops at a bad input leaves no trace."""
        if not self.named.strip():
            raise OutputRefused("--out is empty (an unset shell variable?): name a folder")
        if self.path.exists() and not self.path.is_dir():
            raise OutputRefused(f"--out {self.path}: not a folder")
        existing = next(p for p in (self.path, *self.path.absolute().parents) if p.exists())
        if not os.access(existing, os.W_OK | os.X_OK):
            raise OutputRefused(f"--out {self.path}: {existing} is not writable")
        refuse_link(self.state)
        if os.path.lexists(self.state) and not self.state.is_dir():
            raise OutputRefused(f"{self.state} is not a folder, and gen-problems keeps its own "
                                f"files there: inspect it, and remove it to go on")
        if self.state.is_dir():
            _refuse_odd_entries(self.state)
            try:
                with self._locked():
                    self._recover()
            except OSError as error:
                raise OutputError(f"cannot restore {self.path}/: {describe(error)}") from None
            self.owned_files()  # a manifest the tool did not write stops the run before it starts
        return self

    def workspace(self, name: str) -> Path:
        """A private scratch folder inside the output folder (same disk, so files move
        atomically); made on first use, removed when the run ends, swept if the run dies."""
        if self.work is None:
            try:
                self.made = _missing_folders(self.state)
                self.state.mkdir(parents=True, exist_ok=True)
                self.work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=self.state))
                self._work_lock = _hold_lock(self.work / LOCK)  # tells other runs this one lives
            except OSError as error:
                raise OutputError(f"cannot write to {self.path}/: {describe(error)}") from None
        folder = self.work / name
        folder.mkdir(exist_ok=True)
        return folder

    def close(self) -> None:
        """Remove the run's scratch folder and, unless the set was committed, the folders the run
        made."""
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None
        if not self.committed:  # a run that stopped leaves no folder it made behind
            for folder in self.made:
                try:
                    folder.rmdir()
                except OSError:
                    break
        if self._work_lock is not None:
            self._work_lock.close()
            self._work_lock = None

    def __enter__(self) -> OutputFolder:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def owned_files(self) -> dict[str, dict | None]:
        """The files of the current set, as paths relative to the folder, each with the identity
        it was written with (None from an earlier version's manifest).  A manifest of another
        shape, or naming a file outside the folder, in the tool's own state or of a name the
        tool never writes, is not one this tool wrote (a folder from elsewhere, a hand edit):
        refused and left in place, since the files it lists may be removed."""
        manifest = self.state / MANIFEST
        if not os.path.lexists(manifest):
            return {}
        try:
            return manifest_files(read_state_json(manifest), self.owned)
        except Damaged as damage:
            raise OutputRefused(f"{manifest} {damage}: it was not written by gen-problems for "
                                f"{self.path}/ (a folder from elsewhere?) and nothing was "
                                f"changed; inspect it, and delete it to go on") from None

    def refuse_inputs_inside(self, inputs: list[Path], names: set[str], folders: set[str]) -> None:
        """An input file where this run writes (a fixed output name, an owned folder, a file of
        the current set) would be overwritten or removed: refuse before anything happens."""
        root = self.path.resolve()
        owned = set(self.owned_files())
        for given in inputs:
            resolved = given.resolve()
            if not resolved.is_relative_to(root):
                continue
            relative = resolved.relative_to(root)
            if relative.parts[:2] == (STATE, KEPT):
                continue  # a kept record is never replaced nor removed
            if (relative.as_posix() in names | owned or relative.parts[0] in folders | {STATE}):
                raise OutputRefused(f"{given} is an input but also where --out {self.path} writes "
                                  f"its outputs: move it, or choose another --out")

    def refuse_changed(self, names: set[str]) -> None:
        """A file of the current set that this run writes again (``names``) but that is no
        longer the one the tool wrote: refused now, before a long run ends in the same refusal
        at the commit."""
        for name, identity in sorted(self.owned_files().items()):
            if (name in names and not _link_on_the_way(self.path, name)
                    and is_changed(self.path / name, identity)):
                raise changed_refusal(self.path / name)

    # -- committing: after everything is solved and rendered -------------------------------

    def commit(self, documents: dict[str, str | bytes | Path], inputs: list[Path] = (),
               keep: Callable[[str, Path], str | None] | None = None) -> list[Path]:
        """Replace the current set with ``documents`` (relative path -> content), all or nothing.
        ``keep(name, path)`` names the folder under ``.gen-problems/exams/`` where a file of the
        current set is kept before it is replaced or removed (None: not kept); a file the new
        set holds again byte for byte is not kept (``self.kept`` lists the copies made)."""
        staged = self.workspace("staged")
        try:
            with self._locked():
                self._recover()  # another run may have been killed since this one opened
                old = self.owned_files()
                plan = _Plan(self, documents, old, staged, keep)
                plan.check(inputs)
                plan.stage(documents)
                COMMITTING.set()
                try:
                    plan.apply()
                finally:
                    COMMITTING.clear()
                self.committed = True
                self.kept = [self.path / name for name in plan.kept]
                self.disowned = [self.path / name for name in plan.changed]
        except OSError as error:
            raise OutputError(f"cannot write the new set to {self.path}/ "
                              f"({describe(error, self.path)}); the earlier files are as they were"
                              ) from None
        return [self.path / name for name in documents]

    def keep_tex_failure(self, sources: Path) -> Path:
        """Move a failed TeX run's .tex and .log files into one known place, replacing the last."""
        kept = self.state / TEX_FAILURE
        with self._locked():
            _remove(kept)
            kept.mkdir()
            for source in sources.glob("*"):
                if source.suffix in (".tex", ".log"):
                    os.replace(source, kept / source.name)
        return kept

    # -- the lock and the recovery ---------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self):
        handle = _open_lock(self.state / LOCK)
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"gen-problems: {self.path}/ is being written by another run; waiting for it",
                      file=sys.stderr)
                fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            handle.close()  # closing releases the lock

    def _recover(self) -> None:
        """Under the lock: undo a set a killed run left half in place; sweep what dead runs left."""
        journal = self.state / JOURNAL
        if os.path.lexists(journal):
            _roll_back(self.path, self.state / BACKUP,
                       _read_journal(journal, self.path, self.state / BACKUP))
            journal.unlink()
        for leftover in self.state.iterdir():
            if leftover.name == BACKUP or leftover.name.endswith(".tmp"):
                _remove(leftover)
            elif leftover.name.startswith(WORK_PREFIX) and (leftover.is_symlink()  # not a run's
                                                            or not _is_held(leftover / LOCK)):
                _remove(leftover)  # a link goes, never what it leads to


class _Plan:
    """One commit: which files are created, replaced or removed, and how to undo it."""

    def __init__(self, folder: OutputFolder, documents: dict, owned: dict, staged: Path,
                 keep=None):
        self.folder = folder
        self.root = folder.path
        self.backup = folder.state / BACKUP
        self.staged = staged
        self.documents = documents
        # A file of the earlier set that is not the one the tool wrote is the teacher's now.
        self.changed = sorted(name for name, identity in owned.items()
                              if not _link_on_the_way(self.root, name)
                              and is_changed(self.root / name, identity))
        old = set(owned) - set(self.changed)
        self.kept = _kept_copies(self.root, documents, old, keep) if keep else {}
        names = set(documents) | {f"{STATE}/{MANIFEST}"} | set(self.kept)
        self.stale = sorted(name for name in old - names if (self.root / name).exists())
        self.replaced = sorted(name for name in names if (self.root / name).exists())
        self.created = sorted(names - set(self.replaced))
        self.names = sorted(names)
        self.old = old

    def check(self, inputs) -> None:
        for name in self.names + self.stale:
            if (link := _link_on_the_way(self.root, name)) is not None:
                raise OutputRefused(f"{link} is a link: gen-problems writes only inside "
                                    f"{self.root}/ and follows no link there; remove it")
        for name in self.changed:
            if name in self.documents:
                raise changed_refusal(self.root / name)
        for name in self.replaced:
            target = self.root / name
            if name not in self.old and not name.startswith(f"{STATE}/"):
                raise OutputRefused(f"{target} was not written by gen-problems and would be "
                                  f"overwritten: move it, or choose another --out")
            if target.is_dir() or target.is_symlink():
                raise OutputRefused(f"{target} is in the way (a folder or a link): move it")
            if any(given.exists() and target.samefile(given) for given in inputs):
                raise OutputRefused(f"{target} is an input but also an output: move it, "
                                  f"or choose another --out")

    def stage(self, documents: dict) -> None:
        """Every new file written in full, with the mode it will have, before anything moves;
        the manifest last, with the identity of each file as staged."""
        mode = 0o666 & ~current_umask()
        manifest = f"{STATE}/{MANIFEST}"
        for name in self.names:
            if name in self.kept:  # a copy of the earlier set's file, with its mode
                _copy_file(self.root / self.kept[name], self.staged / name)
            elif name != manifest:
                keep = (self.root / name).stat().st_mode & 0o7777 if name in self.replaced else mode
                _write_file(self.staged / name, documents[name], keep)
        identities = {name: file_identity(self.staged / name) for name in sorted(documents)}
        listing = {"tool": "gen-problems", "files": sorted(documents), "identities": identities}
        keep = (self.root / manifest).stat().st_mode & 0o7777 if manifest in self.replaced else mode
        _write_file(self.staged / manifest, json.dumps(listing, indent=1), keep)

    def apply(self) -> None:
        journal = {"tool": "gen-problems", "created": self.created,
                   "replaced": self.replaced + self.stale,
                   "placed": {name: _identity(self.staged / name) for name in self.names}}
        try:
            for name in self.replaced + self.stale:
                _link_or_copy(self.root / name, self.backup / name)
            _write_file(self.folder.state / JOURNAL, json.dumps(journal), 0o600, atomic=True)
        except BaseException:  # nothing has moved yet
            shutil.rmtree(self.backup, ignore_errors=True)
            (self.folder.state / f"{JOURNAL}.tmp").unlink(missing_ok=True)
            raise
        try:
            for name in self.names:
                (self.root / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.staged / name, self.root / name)
            for name in self.stale:
                (self.root / name).unlink()
            _sync_folder(self.folder.state)
        except BaseException:  # a failed rename, a full disk, Ctrl-C: the earlier set goes back
            _roll_back(self.root, self.backup, journal)
            (self.folder.state / JOURNAL).unlink()
            raise
        (self.folder.state / JOURNAL).unlink()  # the commit
        _sync_folder(self.folder.state)
        shutil.rmtree(self.backup, ignore_errors=True)
        for name in self.stale:
            _remove_empty_parents(self.root / name, self.root)


def changed_refusal(path: Path) -> OutputRefused:
    """The teacher's file stands where the tool wrote one of its set: kept, and the run stops."""
    return OutputRefused(f"{path} is not the file gen-problems wrote there (it was changed or "
                         f"replaced since): it is kept and nothing was written; move it away, "
                         f"or choose another --out")


def _kept_copies(root: Path, documents: dict, old: set[str], keep) -> dict[str, str]:
    """{where each kept copy goes: the earlier set's file it copies}.  A file is kept when
    ``keep`` names a folder for it, unless the new set holds it again unchanged or a copy
    already kept holds the same bytes; a folder name already taken gets -2, -3, ..."""
    linked = _link_on_the_way(root, f"{STATE}/{KEPT}") is not None  # check() refuses: read nothing
    kept = {}
    for name in sorted(old):
        current = root / name
        if (not current.is_file() or _link_on_the_way(root, name)
                or _same_content(current, documents.get(name))):
            continue
        folder = keep(name, current)
        if folder is None or not plain_name(folder) or "/" in folder:
            continue
        for number in range(1, 1000):
            where = f"{STATE}/{KEPT}/{folder}{f'-{number}' if number > 1 else ''}/{current.name}"
            if linked or not os.path.lexists(root / where):
                kept[where] = name
                break
            if _same_content(root / where, current):
                break  # kept already
    return kept


def _same_content(path: Path, content) -> bool:
    """Whether the file ``path`` holds exactly ``content`` (text, bytes, or another file)."""
    if content is None:
        return False
    try:
        if isinstance(content, Path):
            return (content.stat().st_size == path.stat().st_size
                    and filecmp.cmp(path, content, shallow=False))
        data = content.encode("utf-8") if isinstance(content, str) else content
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _copy_file(source: Path, target: Path) -> None:
    """A durable copy of ``source`` (never read through a link), with its mode."""
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as reader:
        mode = os.fstat(descriptor).st_mode & 0o7777
        written = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(written, "wb") as writer:
            shutil.copyfileobj(reader, writer)
            writer.flush()
            os.fchmod(writer.fileno(), mode)
            os.fsync(writer.fileno())


def _roll_back(root: Path, backup: Path, changes: dict) -> None:
    """Put the earlier set back: remove the files the commit placed, restore the ones it
    replaced.  Only a file that is still the one the commit placed (the same inode) is
    removed or replaced, so a forged journal cannot make it touch a teacher's file."""
    placed = changes["placed"]
    for name in changes["created"]:
        if _is_placed(root / name, placed.get(name)):
            (root / name).unlink()
        _remove_empty_parents(root / name, root)  # made for it, placed or not
    for name in changes["replaced"]:
        if os.path.lexists(backup / name) and (not os.path.lexists(root / name)
                                               or _is_placed(root / name, placed.get(name))):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(backup / name, root / name)
    shutil.rmtree(backup, ignore_errors=True)


def _identity(path: Path) -> list[int]:
    status = os.lstat(path)
    return [status.st_dev, status.st_ino]


def _is_placed(path: Path, identity) -> bool:
    try:
        return identity is not None and _identity(path) == list(identity)
    except OSError:
        return False


def _read_journal(journal: Path, root: Path, backup: Path) -> dict:
    """A journal this tool wrote, checked: of its shape, every file it names inside the folder
    and reached through no link, there and in the backup; otherwise nothing is changed, the
    journal stays for the teacher to inspect, and the run stops."""
    try:
        changes = journal_changes(read_state_json(journal))
        names = [*changes["created"], *changes["replaced"], *changes["placed"]]
        if backup.is_symlink():
            raise Damaged(f"restores from {backup}, a link")
        for name in names:
            if link := _link_on_the_way(root, name) or _link_on_the_way(backup, name):
                raise Damaged(f"names {name!r}, reached through the link {link}")
    except Damaged as damage:
        raise OutputRefused(f"{journal} {damage}: it is not a journal gen-problems wrote for "
                            f"{root}/ (a folder from elsewhere?) and nothing was changed; "
                            f"inspect it, and delete it to go on") from None
    return changes


def _link_on_the_way(root: Path, name: str) -> Path | None:
    """The first folder or file from ``root`` to ``root/name`` that is a symbolic link."""
    path = root
    for part in PurePosixPath(name).parts:
        path = path / part
        if path.is_symlink():
            return path
    return None


def _refuse_odd_entries(state: Path) -> None:
    """The lock and the kept records' folder are of the kind the tool makes (a lock that is a
    folder is not the tool's), and no link."""
    for name, kind, what in ((LOCK, stat.S_ISREG, "a file"), (KEPT, stat.S_ISDIR, "a folder")):
        try:
            mode = os.lstat(state / name).st_mode
        except FileNotFoundError:
            continue
        refuse_link(state / name)
        if not kind(mode):
            raise OutputRefused(f"{state / name} is not {what}, as gen-problems makes it: "
                                f"inspect it, and remove it to go on")


def refuse_link(path: Path) -> None:
    """Refuse a path that is a symbolic link: gen-problems follows no link in its output folder."""
    if path.is_symlink():
        raise OutputRefused(f"{path} is a link: gen-problems keeps its own files there and "
                            f"follows no link; remove it")


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    for candidate in (folder, *folder.absolute().parents):
        if candidate.exists():
            break
        missing.append(candidate)
    return missing


def _write_file(path: Path, content: str | bytes | Path, mode: int, atomic: bool = False) -> None:
    """Write ``content`` (or move the file it names, already written in this run's work
    folder) to ``path``, with ``mode``, and make it durable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, Path):  # staged by a move (not one of the commit's replacements)
        os.rename(content, path)
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fchmod(descriptor, mode)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        return
    data = content.encode("utf-8") if isinstance(content, str) else content
    written = path.with_name(path.name + ".tmp") if atomic else path
    descriptor = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fchmod(stream.fileno(), mode)
        os.fsync(stream.fileno())
    if atomic:
        os.replace(written, path)


def _link_or_copy(source: Path, copy: Path) -> None:
    copy.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, copy)
    except OSError:  # no hard links here (some USB and network file systems), or an immutable file
        shutil.copy2(source, copy)


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_empty_parents(path: Path, root: Path) -> None:
    """Folders the tool made for its files (papers/, keys/) go when they are left empty."""
    for parent in path.parents:
        if parent == root or not parent.is_relative_to(root):
            return
        try:
            parent.rmdir()
        except OSError:
            return  # not empty: it holds something else, perhaps the teacher's


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _open_lock(path: Path):
    """A lock file, made if need be, never through a link (it would make a file elsewhere)."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:
            refuse_link(path)
        raise
    return os.fdopen(descriptor, "r+b")


def _hold_lock(path: Path):
    handle = _open_lock(path)
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return handle


def _is_held(path: Path) -> bool:
    """Whether a live run holds this lock (a dead run's lock is released by the system)."""
    if path.is_symlink():
        return False  # not a run's: swept with its folder, the link alone
    try:
        with _open_lock(path) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
    except BlockingIOError:
        return True
    except OSError:
        return False


def describe(error: OSError, folder: Path | None = None) -> str:
    """An OSError as a short phrase naming the file (or folder) and the cause."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        where = folder or (Path(error.filename).parent if error.filename else "the output folder")
        return f"no space left on the disk holding {where}/"
    reason = error.strerror or str(error)
    return f"{error.filename}: {reason}" if error.filename else reason
