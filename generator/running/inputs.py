"""Stage 0, the teacher's input files: each read safely, or refused in one line.

Every file a run reads because the teacher named it (a spec, a roster, a header
config, a record, the exam key, the templates of ``--templates``) is read here.  It
must be a regular file of a sane size for its kind: a link that loops, a FIFO
(reading one waits for a writer that may never come), a device such as /dev/zero
(endless), a folder, a file far larger than any real one of its kind, or bytes that
are not UTF-8 text are each refused with one line naming the file (``InputError``,
exit code 2).  The file is opened without blocking and checked once opened (fstat),
so what is read is what was checked.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MAX_BYTES = 16 * 2**20  # a spec, roster or header file: far above any real one
MAX_RECORD_BYTES = 256 * 2**20  # a problems.json: 5000 hard problems (the most a run makes) ~160 MB
MAX_TEMPLATE_BYTES = 4 * 2**20  # one template (a page's template may inline a logo)
MAX_KEY_BYTES = 4096  # an exam key is 65 bytes
NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class InputError(ValueError):
    """A teacher's input file that cannot be read; the message is one line naming it."""


def read_bytes(path: Path, what: str = "the file", limit: int = MAX_BYTES) -> bytes:
    """The whole of the regular file ``path``, at most ``limit`` bytes long."""
    descriptor = _open_regular(Path(path), what, limit)
    with os.fdopen(descriptor, "rb") as stream:
        try:
            data = stream.read(limit + 1)
        except OSError as error:
            raise InputError(_reason(path, what, error)) from None
    if len(data) > limit:  # it grew since it was opened
        raise InputError(f"{path}: {_too_large(what, limit)}")
    return data


def read_text(path: Path, what: str = "the file", limit: int = MAX_BYTES,
              encoding: str = "utf-8-sig") -> str:
    """The file as UTF-8 text (by default without Excel's byte-order mark)."""
    try:
        return read_bytes(path, what, limit).decode(encoding)
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: cannot read {what}: not UTF-8 text (byte {error.start})") from None


def refuse_loop(path: Path | str, what: str) -> None:
    """A path that is (or passes through) a symbolic link that loops is refused now; what
    else may be wrong with it is said when it is read or written."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(f"{what} {path}: a symbolic link that loops") from None


def check_folder(path: Path, what: str) -> None:
    """A folder the teacher named (``--templates``): it must exist and be a folder."""
    try:
        status = os.stat(path)
    except OSError as error:
        reason = {errno.ENOENT: "no such folder", errno.ENOTDIR: "no such folder",
                  errno.ELOOP: "a symbolic link that loops"}.get(error.errno, _why(error))
        raise InputError(f"{what} {path}: {reason}") from None
    if not stat.S_ISDIR(status.st_mode):
        raise InputError(f"{what} {path}: not a folder")


def checked_files(folder: Path, what: str, limit: int) -> list[Path]:
    """The files under ``folder`` (links to files included), each a regular file of at most
    ``limit`` bytes; a link that leads nowhere is skipped, as nothing would read it."""
    files = []
    for path in sorted(folder.rglob("*")):
        try:
            status = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise InputError(_reason(path, what, error)) from None
        if stat.S_ISDIR(status.st_mode):
            continue
        if (problem := _wrong_file(status, what, limit)):
            raise InputError(f"{path}: {problem}")
        files.append(path)
    return files


def _open_regular(path: Path, what: str, limit: int) -> int:
    """An open descriptor of ``path``, a regular file of at most ``limit`` bytes.  Its kind
    is known before it is opened (opening some devices does something) and checked again
    on the open file; opening without blocking keeps a FIFO from holding the run."""
    try:
        if (problem := _wrong_file(os.stat(path), what, limit)):
            raise InputError(f"{path}: {problem}")
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise InputError(_reason(path, what, error)) from None
    try:
        if (problem := _wrong_file(os.fstat(descriptor), what, limit)):
            raise InputError(f"{path}: {problem}")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _wrong_file(status: os.stat_result, what: str, limit: int) -> str | None:
    if stat.S_ISDIR(status.st_mode):
        return f"a folder, not {what}"
    if not stat.S_ISREG(status.st_mode):
        kind = next((name for test, name in NOT_REGULAR if test(status.st_mode)), "a special file")
        return f"{kind}, not a regular file"
    if status.st_size > limit:
        return _too_large(what, limit)
    return None


def _too_large(what: str, limit: int) -> str:
    size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit // 1024} KB"
    return f"larger than {size}; is it {what}?"


def _reason(path: Path, what: str, error: OSError) -> str:
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"{path}: no such file"
    if error.errno == errno.ELOOP:
        return f"{path}: a symbolic link that loops"
    if error.errno == errno.EISDIR:
        return f"{path}: a folder, not {what}"
    return f"{path}: cannot read {what} ({_why(error)})"


def _why(error: OSError) -> str:
    return error.strerror or str(error)
