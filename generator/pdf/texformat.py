"""Stage 4 helper: TeX formats precompiled from a document's preamble, kept between runs.

Loading the preamble (the exam class, amsmath, Latin Modern, adjustbox) is a good part
of every pdflatex run.  ``mylatexformat`` (Debian's texlive-latex-extra) dumps a format
of it once; later runs of the same preamble start from that format and skip it.  The
same source gives the same PDF bytes either way: the format is built without
mylatexformat's font preloading, which would number the PDF's fonts differently.

Formats live in the user's own cache folder (``~/.cache/gen-problems/tex``, made 0700),
named by a digest of the preamble and of the TeX installation they were made with (the
pdftex binary, its LaTeX format and mylatexformat, by path, size and time), so an
edited preamble or an updated TeX never meets an old format.  Each file's name also
holds a digest of its content, checked before use: a truncated or damaged format is
removed and built again.  Any doubt (a folder another user owns or can write, a
read-only or full disk, a build that fails) means the plain path: the document is
compiled without a format, which is slower and never wrong.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from generator.pdf.texjail import jailed
from generator.running.private import last_used_time, mark_used, private_cache

BEGIN_DOCUMENT = "\\begin{document}"
# mylatexformat would load some thirty fonts into the format before the document does,
# so the PDF's font names (/F35 ...) would differ from a plain run's.
NO_FONT_PRELOADING = "\\makeatletter\\let\\MYLATEX@fontpreloading\\relax\\makeatother\n"
KEPT_FORMATS = 8  # a few preambles (questions, answers, a teacher's templates) stay cached
BUILD_TIMEOUT_SECONDS = 120
DIGEST_LENGTH = 16
LAST_USED_NAME = re.compile(r"[0-9a-f]{32}-[0-9a-f]{16}\.fmt")  # what ``build`` names a format


def cache_folder() -> Path | None:
    """The private folder the formats live in, made if need be; None when it cannot be
    made, or when another user owns it or may write in it (a format is code TeX runs)."""
    return private_cache("tex")


def last_used(document: str) -> Path | None:
    """The format ``document`` (a file name, such as answers.tex) was last compiled from,
    while it is cached: TeX can load it before the document is rendered.  Only a guess:
    the preamble, once rendered, decides (``format_for``)."""
    folder = cache_folder()
    try:
        name = (folder / f"{document}.last").read_text(encoding="ascii").strip() if folder else ""
    except (OSError, UnicodeDecodeError):
        return None
    return folder / name if LAST_USED_NAME.fullmatch(name) and (folder / name).is_file() else None


def remember(document: str, fmt: Path) -> None:
    """Note ``fmt`` as the format ``document`` was compiled from (see ``last_used``)."""
    folder = fmt.parent
    if last_used(document) == fmt:
        return
    try:
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix="last-", delete=False,
                                         encoding="ascii") as record:
            record.write(fmt.name)
        os.replace(record.name, folder / f"{document}.last")
    except OSError:
        pass  # a read-only or full cache: the next run only starts TeX later


def preamble_of(source: str) -> str | None:
    """Everything before ``\\begin{document}``: what a format can hold."""
    preamble, found, _ = source.partition(BEGIN_DOCUMENT)
    return preamble if found else None


def format_for(source: str, environment: dict[str, str]) -> Path | None:
    """The format to compile ``source`` with (found in the cache, or built now), given as
    the path pdflatex's ``-fmt`` takes; None for the plain path."""
    preamble = preamble_of(source)
    identity = tex_identity()
    folder = cache_folder() if preamble is not None and identity else None
    if folder is None:
        return None
    key = hashlib.sha256(f"{identity}\n{preamble}".encode()).hexdigest()[:32]
    for candidate in sorted(folder.glob(f"{key}-*.fmt")):
        if intact(candidate):
            mark_used(candidate)
            return candidate
        candidate.unlink(missing_ok=True)
    return build(folder, key, preamble, environment)


def intact(path: Path) -> bool:
    """Owned by this user, writable by no one else, and its content what its name says."""
    try:
        status = path.stat()
        if status.st_uid != os.geteuid() or status.st_mode & 0o022:
            return False
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_LENGTH]
    except OSError:
        return False
    return path.stem.rsplit("-", 1)[-1] == digest


def build(folder: Path, key: str, preamble: str, environment: dict[str, str]) -> Path | None:
    """Dump a format of ``preamble`` in a private scratch folder, then move it into place
    under its content's digest (two runs building at once both leave a sound file)."""
    pdftex = shutil.which("pdftex")
    try:
        with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as scratch:
            Path(scratch, "preamble.tex").write_text(
                NO_FONT_PRELOADING + preamble + BEGIN_DOCUMENT + "\n", encoding="utf-8")
            done = subprocess.run(
                jailed([pdftex, "-ini", "-interaction=nonstopmode", "-halt-on-error",
                        f"-jobname={key}", "&pdflatex", "mylatexformat.ltx", "preamble.tex"],
                       scratch),
                cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=environment, timeout=BUILD_TIMEOUT_SECONDS)
            dumped = Path(scratch, f"{key}.fmt")
            if done.returncode != 0 or not dumped.is_file():
                return None
            digest = hashlib.sha256(dumped.read_bytes()).hexdigest()[:DIGEST_LENGTH]
            target = folder / f"{key}-{digest}.fmt"
            dumped.chmod(0o600)
            os.replace(dumped, target)
    except (OSError, subprocess.SubprocessError):
        return None
    prune(folder)
    return target


def prune(folder: Path, keep: int = KEPT_FORMATS) -> None:
    """Only the formats used last stay: each is several megabytes."""
    formats = sorted(folder.glob("*.fmt"), key=last_used_time, reverse=True)
    for old in formats[keep:]:
        old.unlink(missing_ok=True)


@lru_cache(maxsize=1)
def tex_identity() -> str | None:
    """Which TeX a format is made with: an update of TeX Live rewrites these files."""
    pdftex = shutil.which("pdftex")
    if pdftex is None:
        return None
    try:
        found = subprocess.run(["kpsewhich", "-engine=pdftex", "pdflatex.fmt", "mylatexformat.ltx"],
                               capture_output=True, text=True, timeout=30).stdout.split()
        files = [os.path.realpath(pdftex), *found]
        stamps = [f"{name}:{os.stat(name).st_size}:{os.stat(name).st_mtime_ns}" for name in files]
    except (OSError, subprocess.SubprocessError):
        return None
    return "\n".join(stamps) if len(files) == 3 else None  # no mylatexformat: the plain path
