"""Stage 4 helper: what a TeX run may touch.

Both engines run with shell escape off and kpathsea's paranoid file access
(``openin_any`` and ``openout_any`` = p, no ``TEXMFOUTPUT``): TeX reads files by name
only in its work folder and its own trees, and writes only in its work folder.
LuaLaTeX also runs Lua, which kpathsea does not see, and LuaTeX's own safe mode
(``--safer``) cannot be used: luaotfload refuses to run under it.  ``texconfine.lua``,
loaded with ``--lua`` before the format and before any document code, confines it
instead: the work folder and the font cache for writing; those, TeX's trees and the
font folders for reading; no programs, no C libraries, no bytecode from a folder a
document can write to (see the file itself).

luaotfload keeps what it learns of the fonts (their names, their tables) in a cache
between runs, and a document may write there, so a cache is only ever shared by runs of
the same templates: the built-in ones share one, and each teacher's template folder,
by its content, has its own.  What a template leaves in its cache can never reach a run
of other templates, nor any TeX run outside gen-problems (the system's cache is not
used).  The cached tables are bytecode, which is loaded only when signed with a key
that no document can read (``font_key``); without a private cache folder the fonts are
cached in the work folder, for that run alone, and unsigned.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
from pathlib import Path

from generator.running.private import last_used_time, mark_used, private_cache

CONFINE_LUA = Path(__file__).resolve().with_name("texconfine.lua")
BUILT_IN = "built-in"
KEPT_FONT_CACHES = 4  # teachers' template folders whose font caches stay, besides the built-in's
FONT_CACHE = "luatex"
KEY_NAME, KEY_BYTES = "key", 32


def engine_options(engine: str) -> list[str]:
    """The command-line options that confine ``engine`` beyond kpathsea's settings."""
    if engine == "lualatex":
        return [f"--lua={CONFINE_LUA}", "--nosocket"]
    return []


def lualatex_environment(templates: Path | None, work: Path) -> dict[str, str]:
    """What LuaLaTeX's environment adds: its font cache, and the key its bytecode is signed
    with (see ``texconfine.lua``)."""
    environment = {"TEXMFCACHE": str(font_cache(templates, work))}
    key = font_key()
    if key is not None:
        environment["GEN_PROBLEMS_TEX_KEY"] = str(key)
    return environment


def font_key() -> Path | None:
    """The file of this user's key for signing cached bytecode, made on first use: beside the
    font caches, never inside one (a document may read its cache).  None when it cannot be
    made or is not this user's alone."""
    folder = private_cache(FONT_CACHE)
    if folder is None:
        return None
    key = folder / KEY_NAME
    try:
        descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(KEY_BYTES))
    try:
        status = os.lstat(key)
    except OSError:
        return None
    private = (stat.S_ISREG(status.st_mode) and status.st_uid == os.geteuid()
               and not status.st_mode & 0o077 and status.st_size == KEY_BYTES)
    return key if private else None


def font_cache(templates: Path | None, work: Path) -> Path:
    """The folder luaotfload caches fonts in for documents of these templates (the
    built-in ones when None): private to this user and to these templates, or else a
    folder in the run's work folder ``work``."""
    domain = BUILT_IN if templates is None else templates_digest(templates)
    folder = private_cache(f"{FONT_CACHE}/{domain}")
    if folder is None:
        folder = work / "font-cache"
        folder.mkdir(exist_ok=True)
        return folder
    mark_used(folder)
    if domain != BUILT_IN:
        prune(folder.parent)
    return folder


def templates_digest(templates: Path) -> str:
    """A digest of a template folder's files, their names and contents."""
    digest = hashlib.sha256()
    for path in sorted(templates.rglob("*")):
        if path.is_file():
            name = path.relative_to(templates).as_posix().encode()
            digest.update(len(name).to_bytes(8, "big") + name)
            data = path.read_bytes()
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:32]


def prune(caches: Path, keep: int = KEPT_FONT_CACHES) -> None:
    """Only the caches of the template folders used last stay (with CJK fonts one is
    several megabytes); the built-in templates' cache always stays."""
    others = [path for path in caches.iterdir() if path.name != BUILT_IN and path.is_dir()]
    for old in sorted(others, key=last_used_time, reverse=True)[keep:]:
        shutil.rmtree(old, ignore_errors=True)
