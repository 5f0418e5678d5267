"""Stage 4 helper: one TeX run, and what it left.

TeX runs non-interactive, confined to its own folder (``texconfine``: shell escape
off, paranoid file access, and LuaLaTeX's Lua confined too; ``texjail``: the kernel
lets it read only TeX's trees, the fonts and its folder, and write only there), with a fixed date so the
same source gives the same PDF bytes, and a time limit.  A failure raises ``TexError``
with the log's lines that say what went wrong, or, when TeX could not write for want of
space, ``OSError`` (ENOSPC): the disk is full, and nothing in the document is wrong.
Every TeX process of the run is known, so a failure or an interrupt elsewhere stops
them all at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from generator.pdf.texconfine import CONFINE_LUA, engine_options
from generator.pdf.texjail import jailed
from generator.running.helpers import HelperDied, ended
from generator.running.private import cache_home

TEX_TIMEOUT_SECONDS = 300
# Paranoid file access: TeX may read and write only in its own folder (and TEXMFOUTPUT,
# which is therefore emptied).
TEX_ENVIRONMENT = {"openin_any": "p", "openout_any": "p", "shell_escape": "f", "TEXMFOUTPUT": ""}
# A fixed timestamp (unless the caller sets one) makes the same seed give the same PDF bytes.
REPRODUCIBLE_DATE = "1767225600"  # 2026-01-01


FILE_LINE_ERROR = re.compile(r"^\S+\.tex:\d+: ")
# What pdfTeX and LuaTeX log when a write fails, as it does on a full disk.
NO_SPACE = re.compile(r"fwrite\(\) failed|fflush\(\) failed|No space left on device|"
                      r"Disk quota exceeded")


class TexError(Exception):
    """The TeX engine failed on ``document``; ``excerpt`` holds the log's error lines."""

    def __init__(self, document: str, excerpt: str, folder: Path, engine: str = "pdflatex"):
        super().__init__(f"{engine} failed on {document}:\n{excerpt}")
        self.document, self.excerpt, self.folder, self.engine = document, excerpt, folder, engine


@dataclass(frozen=True)
class Compiled:
    """A TeX run's result: its log, and the PDF it wrote."""

    log: str
    path: Path  # where the PDF was written
    kept: bytes | None = None  # its bytes, for a PDF whose folder is removed

    @property
    def pdf(self) -> bytes:
        """The PDF, read when asked (a class's key is megabytes, and moves to the output
        folder as a file)."""
        return self.kept if self.kept is not None else self.path.read_bytes()


def tex_environment(engine_settings: dict[str, str] | None = None) -> dict[str, str]:
    """TeX's environment, with an engine's own settings (LuaLaTeX's font cache)."""
    return {"SOURCE_DATE_EPOCH": REPRODUCIBLE_DATE, **os.environ, **TEX_ENVIRONMENT,
            **(engine_settings or {})}


def run_tex(engine: str, folder: Path, name: str, fmt: Path | None = None,
            environment: dict[str, str] | None = None) -> Compiled:
    """One TeX run on ``folder/name``, from the cached format when there is one.  A run
    that fails with a format is tried once more without it, so a format can only ever
    cost time, and the format is dropped."""
    if fmt is not None:
        try:
            return _run_once(engine, folder, name, fmt, environment)
        except TexError:
            fmt.unlink(missing_ok=True)
    return _run_once(engine, folder, name, None, environment)


def _run_once(engine: str, folder: Path, name: str, fmt: Path | None,
              environment: dict[str, str] | None) -> Compiled:
    tex = folder / name
    tex.with_suffix(".pdf").unlink(missing_ok=True)
    with running(tex_command(engine, name, fmt), folder, environment) as process:
        try:
            code = process.wait(timeout=TEX_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            raise TexError(name, f"  it took over {TEX_TIMEOUT_SECONDS} s", folder, engine) from None
    raise_if_killed(engine, name, process)
    if code != 0 or not tex.with_suffix(".pdf").exists():
        raise_if_disk_full(tex)
        raise TexError(name, log_errors(tex.with_suffix(".log")), folder, engine)
    return read_compiled(tex)


def raise_if_killed(engine: str, name: str, process: subprocess.Popen) -> None:
    """``HelperDied`` for a TeX run killed by a signal (kill -9, out of memory): not TeX's
    error, so neither compiled again nor blamed on the document."""
    if process.returncode is not None and process.returncode < 0:
        raise HelperDied(f"{engine} typesetting {name}", process.pid, ended(process.returncode))


def raise_if_disk_full(tex: Path) -> None:
    """After TeX failed on ``tex``: OSError (ENOSPC) when its log says it could not write."""
    try:
        log = tex.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if NO_SPACE.search(log):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tex.with_suffix(".pdf")))


def tex_command(engine: str, name: str, fmt: Path | None, streamed: bool = False) -> list[str]:
    """The command line of one TeX run: non-interactive, stopping at the first error, no shell
    escape, from ``fmt`` where given."""
    # A pipe can be read once: TeX must not read its first line to look for a %&format line.
    return [shutil.which(engine), *engine_options(engine), "-interaction=nonstopmode",
            "-halt-on-error", "-no-shell-escape", "-file-line-error",
            *(["-no-parse-first-line"] if streamed else []),
            *([f"-fmt={fmt.with_suffix('')}"] if fmt else []), name]


RUNNING: set[subprocess.Popen] = set()  # stopped at once when the run fails or is interrupted
RUNNING_LOCK = threading.Lock()


@contextlib.contextmanager
def running(command: list[str], folder: Path, environment: dict[str, str] | None = None):
    """A TeX process started for the length of the ``with`` block, stopped at its end."""
    process = start_tex(command, folder, environment=environment)
    try:
        yield process
    finally:
        stop_tex(process)


def start_tex(command: list[str], folder: Path, fed: bool = False,
            environment: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a TeX process, known to ``stop_all`` until ``stop_tex``; ``fed``: its standard
    input is a pipe, ``process.stdin``."""
    environment = environment or tex_environment()
    process = subprocess.Popen(confined(command, folder, environment), cwd=folder,
                               env=environment, bufsize=1 << 16,
                               stdin=subprocess.PIPE if fed else subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with RUNNING_LOCK:
        RUNNING.add(process)
    return process


def confined(command: list[str], folder: Path, environment: dict[str, str]) -> list[str]:
    """A TeX command run under the kernel's confinement (``texjail``): it reads TeX's trees,
    its folder and this user's caches (formats, LuaLaTeX's font cache and key), and writes
    only in its folder and LuaLaTeX's font cache."""
    cache = environment.get("TEXMFCACHE")
    return jailed(command, str(folder), readable=(str(cache_home() / "gen-problems"), str(CONFINE_LUA)),
                  writable=(cache,) if cache else ())


def stop_tex(process: subprocess.Popen) -> None:
    """The process killed if it still runs (the run stops early), waited for, and forgotten."""
    if process.poll() is None:
        process.kill()
    process.wait()
    if process.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    with RUNNING_LOCK:
        RUNNING.discard(process)


def stop_all() -> None:
    """Kill every TeX process still running (the run failed or was interrupted)."""
    with RUNNING_LOCK:
        for process in RUNNING:
            process.kill()


def read_compiled(tex: Path) -> Compiled:
    """The log and PDF a TeX run on ``tex`` left beside it."""
    return Compiled(tex.with_suffix(".log").read_text(encoding="utf-8", errors="replace"),
                    tex.with_suffix(".pdf"))


def log_errors(log: Path, context: int = 3) -> str:
    """The lines of a TeX log that say what went wrong: each '!' or file:line: error and a few after."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "  (no log was written)"
    picked: list[str] = []
    for index, line in enumerate(lines):
        if line.startswith("!") or FILE_LINE_ERROR.match(line):
            picked += lines[index:index + context + 1]
    return "\n".join("  " + line for line in (picked or lines[-context * 3:])[:20])
