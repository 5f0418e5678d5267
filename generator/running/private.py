"""Folders and files that must stay the teacher's own: the caches (they hold compiled
templates and TeX formats, code a run loads) and the exam key (it keeps exams secret).

A folder is made readable and writable by its owner alone whatever the umask: Python's
``mkdir(parents=True)`` makes the folders above with the umask's mode, so under
``umask 000`` it would leave ``~/.config`` or ``~/.cache/gen-problems`` open to everyone.
A folder that is there already is trusted only as Jinja trusts its own cache folder: a real
folder (not a link), owned by this user, that no other user may write in.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OPEN_TO_OTHERS_WRITING = 0o022


def cache_home() -> Path:
    """The user's cache folder: $XDG_CACHE_HOME, else ~/.cache."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home)


def config_home() -> Path:
    """The user's configuration folder: $XDG_CONFIG_HOME, else ~/.config."""
    home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(home)


def make_private_folder(folder: Path) -> None:
    """``folder`` and every missing folder above it made with mode 0700 (OSError if not)."""
    missing = []
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        try:
            os.mkdir(candidate, 0o700)  # 0700 & ~umask is 0700 under any umask
        except FileExistsError:  # another run made it a moment ago
            pass


def untrusted_reason(folder: Path) -> str | None:
    """Why ``folder`` cannot be trusted with what this user's runs load, or None."""
    try:
        status = os.lstat(folder)
    except OSError as error:
        return error.strerror or str(error)
    if not stat.S_ISDIR(status.st_mode):
        return "not a folder (a link or a file)"
    if status.st_uid != os.geteuid():
        return "owned by another user"
    if status.st_mode & OPEN_TO_OTHERS_WRITING:
        return "other users may write in it"
    return None


def private_cache(name: str) -> Path | None:
    """The cache folder ``~/.cache/gen-problems/<name>``, made if need be; None when it cannot
    be made or trusted, and the run goes on without it (a cache only ever saves time)."""
    folder = cache_home() / "gen-problems" / name
    try:
        make_private_folder(folder)
    except OSError:
        return None
    return None if untrusted_reason(folder) else folder


def last_used_time(path: Path) -> float:
    """When a cached file or folder was last used (``mark_used``), to keep the latest few."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def mark_used(path: Path) -> None:
    """Mark a cached file or folder as used now (``last_used_time``)."""
    try:
        os.utime(path)
    except OSError:
        pass  # a read-only cache still serves what it holds
