"""Stage 4, the PDF writer: LaTeX sources -> PDF bytes, with a real TeX engine.

Each document is compiled by ``pdflatex`` in the run's private work folder
(which the output stage owns and removes), non-interactive, shell escape off,
every document at once.  One pass is enough:
the templates use nothing that needs a second (no cross-references, no point
tables, no page totals), so a pass gives the final text.  On failure the
temporary folder is kept for inspection and ``TexError`` carries the log's
relevant lines; nothing lands in the output folder.  A run with versions or a
roster compiles one document of all papers and cuts it into a PDF per paper, at
the pages the templates log, so many papers never mean many TeX runs.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .paper import Paper
from .typesetting import FONT_PACKAGES, engine_of, missing_characters

TEX_PACKAGES = "texlive-latex-base texlive-latex-recommended texlive-latex-extra lmodern"
UNICODE_PACKAGES = f"texlive-luatex {FONT_PACKAGES}"
INSTALL_HINT = (f"--pdf needs pdflatex, which is not installed: run 'bash scripts/setup.sh', or "
                f"'sudo apt-get install --no-install-recommends {TEX_PACKAGES}'")
UNICODE_HINT = ("this document holds characters pdflatex cannot typeset, and LuaLaTeX with "
                "luaotfload is not installed: run 'bash scripts/setup.sh', or 'sudo apt-get "
                f"install --no-install-recommends {UNICODE_PACKAGES}'")
TEX_TIMEOUT_SECONDS = 300
# Paranoid file access: TeX may read and write only in its own folder.
TEX_ENVIRONMENT = {"openin_any": "p", "openout_any": "p", "shell_escape": "f"}
# A fixed timestamp (unless the caller sets one) makes the same seed give the same PDF bytes.
REPRODUCIBLE_DATE = "1767225600"  # 2026-01-01


FILE_LINE_ERROR = re.compile(r"^\S+\.tex:\d+: ")


class TexMissing(Exception):
    """No TeX engine on this machine."""


class TexError(Exception):
    """The TeX engine failed on ``document``; ``excerpt`` holds the log's error lines."""

    def __init__(self, document: str, excerpt: str, folder: Path, engine: str = "pdflatex"):
        super().__init__(f"{engine} failed on {document}:\n{excerpt}")
        self.document, self.excerpt, self.folder, self.engine = document, excerpt, folder, engine


class SplitError(Exception):
    """The compiled document does not mark where each paper starts (a custom paper template)."""


@dataclass(frozen=True)
class Compiled:
    pdf: bytes
    log: str


def build_pdfs(sources: dict[str, str], folder: Path, questions: list[Paper] | None = None,
               keys: int = 0, on_done=lambda name: None) -> tuple[dict[str, bytes], list[str]]:
    """questions.pdf and answers.pdf, compiled in ``folder``; given the question papers of a
    versioned run and the number of keys, also one PDF per paper (papers/) and per
    version's key (keys/), cut from those two.  Also notes on characters no font had."""
    compiled = compile_pdfs(sources, folder, on_done)
    pdfs = {name: document.pdf for name, document in compiled.items()}
    notes = [missing_note(name, paper, character, questions)
             for name, document in compiled.items()
             for paper, character in dict.fromkeys(missing_characters(document.log))]
    if questions is not None:
        papers = split_papers(compiled["questions.pdf"], "questions.pdf", len(questions))
        for paper, pdf in zip(questions, papers):
            pdfs[f"papers/{paper_file_name(paper)}"] = pdf
        for number, pdf in enumerate(split_papers(compiled["answers.pdf"], "answers.pdf", keys), 1):
            pdfs[f"keys/version-{number:02d}.pdf"] = pdf
    return pdfs, notes


def missing_note(document: str, paper: int, character: str, questions: list[Paper] | None) -> str:
    """Which character could not be printed, and whose paper it is in."""
    whose = ""
    if document == "questions.pdf" and questions and 1 <= paper <= len(questions):
        student = questions[paper - 1].student
        whose = f", paper {paper}" + (f" ({student.name}, {student.id})" if student else "")
    return (f"no installed font has {character!r} (U+{ord(character):04X}), in {document}{whose}: "
            f"it is left out there; Debian's {FONT_PACKAGES} cover most scripts and emoji")


def paper_file_name(paper: Paper) -> str:
    if paper.student is None:
        return f"version-{paper.version:02d}.pdf"
    safe_id = re.sub(r"[^A-Za-z0-9._-]+", "_", paper.student.id)[:40]
    return f"{paper.number:03d}-{safe_id}.pdf"


def require_tex() -> None:
    """Checked before a run starts: --pdf without TeX fails at once, with the install line."""
    if shutil.which("pdflatex") is None:
        raise TexMissing(INSTALL_HINT)


def compile_pdfs(sources: dict[str, str], folder: Path | None = None,
                 on_done=lambda name: None) -> dict[str, Compiled]:
    """Compile every ``name.tex`` source in ``folder`` (by default a temporary one, removed
    afterwards); return ``name.pdf`` -> its PDF and log."""
    require_tex()
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="gen-problems-tex-") as temporary:
            return compile_pdfs(sources, Path(temporary), on_done)
    folder.mkdir(parents=True, exist_ok=True)
    engines = {name: engine_of(text) for name, text in sources.items()}
    if "lualatex" in engines.values() and not lualatex_ready():
        raise TexMissing(UNICODE_HINT)
    for name, text in sources.items():
        (folder / name).write_text(text, encoding="utf-8")
    return _run_all(engines, folder, on_done)


def lualatex_ready() -> bool:
    """LuaLaTeX and its font loader: Debian's texlive-luatex (pdflatex alone lacks them)."""
    if shutil.which("lualatex") is None or shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(["kpsewhich", "luaotfload.sty"], capture_output=True, text=True)
    return bool(found.stdout.strip())


def _run_all(engines: dict[str, str], folder: Path, on_done) -> dict[str, Compiled]:
    """Run each file's engine on it, as many at once as there are cores."""
    pending, running, pdfs = list(engines), {}, {}
    limit = max(2, os.cpu_count() or 1)
    try:
        while pending or running:
            while pending and len(running) < limit:
                name = pending.pop(0)
                running[name] = _start(shutil.which(engines[name]), folder, name)
            name, process = next(iter(running.items()))
            _wait(process, folder / name, engines[name])
            del running[name]
            tex = folder / name
            pdfs[tex.with_suffix(".pdf").name] = Compiled(
                tex.with_suffix(".pdf").read_bytes(),
                tex.with_suffix(".log").read_text(encoding="utf-8", errors="replace"))
            on_done(name)
    finally:
        for process in running.values():
            process.kill()
    return pdfs


def _start(engine: str, folder: Path, name: str) -> subprocess.Popen:
    command = [engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
               "-file-line-error", name]
    return subprocess.Popen(command, cwd=folder, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={"SOURCE_DATE_EPOCH": REPRODUCIBLE_DATE, **os.environ,
                                 **TEX_ENVIRONMENT})


def _wait(process: subprocess.Popen, tex: Path, engine: str) -> None:
    try:
        code = process.wait(timeout=TEX_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        raise TexError(tex.name, f"  it took over {TEX_TIMEOUT_SECONDS} s", tex.parent,
                       engine) from None
    if code != 0 or not tex.with_suffix(".pdf").exists():
        raise TexError(tex.name, log_errors(tex.with_suffix(".log")), tex.parent, engine)


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


PAPER_START = re.compile(r"^gen-problems: paper (\d+) starts after page (\d+)$", re.MULTILINE)


def split_papers(document: Compiled, name: str, expected: int) -> list[bytes]:
    """Cut a compiled document into its papers, at the page each paper's template logged."""
    from pypdf import PdfReader, PdfWriter  # only needed for versions; keeps start-up short

    starts = [int(page) for _, page in PAPER_START.findall(document.log)]
    if len(starts) != expected or starts != sorted(starts):
        raise SplitError(f"{name}: {expected} papers, but the TeX log marks {len(starts)} paper "
                         f"starts; a custom paper.tex.j2 must keep the \\typeout line that "
                         f"marks where each paper begins")
    reader = PdfReader(io.BytesIO(document.pdf))
    ends = starts[1:] + [len(reader.pages)]
    papers = []
    for start, end in zip(starts, ends):
        writer = PdfWriter()
        for page in reader.pages[start:end]:
            writer.add_page(page)
        buffer = io.BytesIO()
        writer.write(buffer)
        papers.append(buffer.getvalue())
    return papers
