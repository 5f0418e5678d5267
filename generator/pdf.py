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

TEX_PACKAGES = "texlive-latex-base texlive-latex-recommended texlive-latex-extra lmodern"
INSTALL_HINT = (f"--pdf needs pdflatex, which is not installed: run 'bash scripts/setup.sh', or "
                f"'sudo apt-get install --no-install-recommends {TEX_PACKAGES}'")
TEX_TIMEOUT_SECONDS = 300
# Paranoid file access: TeX may read and write only in its own folder.
TEX_ENVIRONMENT = {"openin_any": "p", "openout_any": "p", "shell_escape": "f"}
# A fixed timestamp (unless the caller sets one) makes the same seed give the same PDF bytes.
REPRODUCIBLE_DATE = "1767225600"  # 2026-01-01


FILE_LINE_ERROR = re.compile(r"^\S+\.tex:\d+: ")


class TexMissing(Exception):
    """No TeX engine on this machine."""


class TexError(Exception):
    """pdflatex failed on ``document``; ``excerpt`` holds the log's error lines."""

    def __init__(self, document: str, excerpt: str, folder: Path):
        super().__init__(f"pdflatex failed on {document}:\n{excerpt}")
        self.document, self.excerpt, self.folder = document, excerpt, folder


class SplitError(Exception):
    """The compiled document does not mark where each paper starts (a custom paper template)."""


@dataclass(frozen=True)
class Compiled:
    pdf: bytes
    log: str


def build_pdfs(sources: dict[str, str], folder: Path, questions: list[Paper] | None = None,
               keys: int = 0, on_done=lambda name: None) -> dict[str, bytes]:
    """questions.pdf and answers.pdf, compiled in ``folder``; given the question papers of a
    versioned run and the number of keys, also one PDF per paper (papers/) and per
    version's key (keys/), cut from those two."""
    compiled = compile_pdfs(sources, folder, on_done)
    pdfs = {name: document.pdf for name, document in compiled.items()}
    if questions is not None:
        papers = split_papers(compiled["questions.pdf"], "questions.pdf", len(questions))
        for paper, pdf in zip(questions, papers):
            pdfs[f"papers/{paper_file_name(paper)}"] = pdf
        for number, pdf in enumerate(split_papers(compiled["answers.pdf"], "answers.pdf", keys), 1):
            pdfs[f"keys/version-{number:02d}.pdf"] = pdf
    return pdfs


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
    engine = shutil.which("pdflatex")
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="gen-problems-tex-") as temporary:
            return compile_pdfs(sources, Path(temporary), on_done)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        (folder / name).write_text(text, encoding="utf-8")
    return _run_all(engine, folder, list(sources), on_done)


def _run_all(engine: str, folder: Path, names: list[str], on_done) -> dict[str, Compiled]:
    """Run pdflatex on every file, as many at once as there are cores."""
    pending, running, pdfs = list(names), {}, {}
    limit = max(2, os.cpu_count() or 1)
    try:
        while pending or running:
            while pending and len(running) < limit:
                name = pending.pop(0)
                running[name] = _start(engine, folder, name)
            name, process = next(iter(running.items()))
            _wait(process, folder / name)
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


def _wait(process: subprocess.Popen, tex: Path) -> None:
    try:
        code = process.wait(timeout=TEX_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        raise TexError(tex.name, f"  it took over {TEX_TIMEOUT_SECONDS} s", tex.parent) from None
    if code != 0 or not tex.with_suffix(".pdf").exists():
        raise TexError(tex.name, log_errors(tex.with_suffix(".log")), tex.parent)


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
