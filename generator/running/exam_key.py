"""Stage 1 helper: the teacher's exam key, which keeps drawn exams from being drawn again.

A graded paper must not let a student rebuild its key with this (public) tool.  So
an exam's draws are seeded from a secret as well as from the seed, and a paper
prints only an opaque code (an HMAC of what drew it), never the seed.  The secret
is 32 random bytes kept in a file private to the teacher, made on first use:
``$XDG_CONFIG_HOME/gen-problems/exam.key`` (``~/.config/...``), or the file
``--key-file`` names, so that the same seed draws the same exam again for that
teacher, and for nobody else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from generator.maths.spec import SpecError
from generator.running.inputs import MAX_KEY_BYTES, read_bytes
from generator.running.private import config_home, make_private_folder

KEY_BYTES = 32


def default_key_file() -> Path:
    """Where the exam key is kept unless --key-file says: ~/.config/gen-problems/exam.key."""
    return config_home() / "gen-problems" / "exam.key"


def load_or_create_key(path: Path | None = None, create: bool = True) -> bytes:
    """The secret in the key file, made (readable by its owner only) when it does not exist."""
    path = path or default_key_file()
    if not path.exists() and create:
        _create(path)
    data = read_bytes(path, "an exam key", MAX_KEY_BYTES)  # a FIFO, /dev/zero: refused
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise SpecError(f"{path}: not an exam key (expected {KEY_BYTES * 2} hex digits)") from None
    if len(key) != KEY_BYTES:
        raise SpecError(f"{path}: not an exam key (expected {KEY_BYTES * 2} hex digits)")
    refuse_if_exposed(path)
    return key


def _create(path: Path) -> None:
    try:
        make_private_folder(path.parent)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another run made it a moment ago
    except OSError as error:
        raise SpecError(f"cannot make the exam key {path} ({error.strerror}); "
                        f"name one with --key-file, or use --practice") from None
    with os.fdopen(descriptor, "w", encoding="ascii") as stream:
        stream.write(secrets.token_hex(KEY_BYTES) + "\n")


def refuse_if_exposed(path: Path) -> None:
    """A key that other users may read rebuilds the exams it drew; one they may write (or
    swap, in a folder they may write in) draws exams they know.  Group reading is allowed:
    colleagues who set one course's exams may share a key."""
    try:
        mode = path.stat().st_mode
        folder = path.resolve().parent.stat().st_mode
    except OSError:
        return  # reading it says what is wrong
    if mode & 0o026:
        raise SpecError(f"{path}: other users may {'read' if mode & 0o004 else 'change'} this "
                        f"exam key, so they could rebuild your exams: chmod 600 {path}")
    if folder & 0o002 and not folder & stat.S_ISVTX:
        raise SpecError(f"{path}: any user may replace files in its folder, so the exam key "
                        f"could be swapped: move it to a private folder")


def seed_words(key: bytes) -> list[int]:
    """The key as 32-bit words, to seed numpy's generator together with the draw's numbers."""
    return [int.from_bytes(key[i:i + 4], "big") for i in range(0, len(key), 4)]


def problem_code(key: bytes, drawn_as: str) -> str:
    """An opaque, short, case-free code for a drawn problem: XXXX-XXXX (40 bits of an HMAC)."""
    digest = hmac.new(key, drawn_as.encode("utf-8"), hashlib.sha256).digest()
    letters = base64.b32encode(digest[:5]).decode("ascii")
    return f"{letters[:4]}-{letters[4:]}"
