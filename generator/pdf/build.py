"""Stage 4, the PDF writer: LaTeX sources -> PDFs, with a real TeX engine.

Each document is compiled in the run's private work folder (which the output stage
owns and removes), from the preamble's cached format (``texformat``): as soon as it is
given, beside the other documents, or read by TeX through a pipe while Python is still
rendering it (``TexStream``, where the run's scheduler streams it); given one worker, one
TeX run after another.  One pass is enough: the templates use nothing that needs a second
(no cross-references, no point tables, no page totals).  On failure ``TexError`` carries
the log's relevant lines and nothing lands in the output folder.  A run with versions or a
roster compiles one document of all papers and cuts it into a PDF per paper (``pdfcut``),
at the pages the templates log, so many papers never mean many TeX runs.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from generator.pdf.pdfcut import cut_papers
from generator.pdf.texconfine import lualatex_environment
from generator.pdf.texformat import BEGIN_DOCUMENT, format_for, last_used, remember
from generator.pdf.texrun import (
    TEX_TIMEOUT_SECONDS,
    Compiled,
    TexError,
    raise_if_disk_full,
    raise_if_killed,
    read_compiled,
    run_tex,
    start_tex,
    stop_all,
    stop_tex,
    tex_command,
    tex_environment,
)
from generator.pdf.typesetting import FONT_PACKAGES, engine_of, missing_characters
from generator.rendering.paper import Paper

TEX_PACKAGES = "texlive-latex-base texlive-latex-recommended texlive-latex-extra lmodern"
UNICODE_PACKAGES = f"texlive-luatex {FONT_PACKAGES}"
INSTALL_HINT = (f"--pdf needs pdflatex, which is not installed: run 'bash scripts/setup.sh', or "
                f"'sudo apt-get install --no-install-recommends {TEX_PACKAGES}'")
UNICODE_HINT = ("this document holds characters pdflatex cannot typeset, and LuaLaTeX with "
                "luaotfload is not installed: run 'bash scripts/setup.sh', or 'sudo apt-get "
                f"install --no-install-recommends {UNICODE_PACKAGES}'")
class TexMissing(Exception):
    """No TeX engine on this machine."""


class SplitError(Exception):
    """The compiled document does not mark where each paper starts (a custom paper template)."""


class PdfBuild:
    """The TeX runs of one output set.  Each document is compiled as soon as it is given
    (``add``), while Python goes on with the other formats; at most ``workers`` at once (by
    default as many as there are cores, at least two), and with one worker each in the
    caller's thread, one after another.  With a versioned run's question papers,
    questions.pdf is cut into one PDF per paper (papers/) and answers.pdf into one per
    version (keys/) as soon as each is compiled, by at most ``workers`` processes.
    ``result`` waits for them all.  ``templates``: the teacher's template folder the
    documents come from (None: the built-in templates), whose LuaLaTeX documents have a
    font cache of their own (``texconfine``)."""

    def __init__(self, folder: Path, questions: list[Paper] | None = None, keys: int = 0,
                 on_done=lambda name: None, warm: "WarmTex | None" = None,
                 templates: Path | None = None, workers: int | None = None):
        require_tex()
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.questions, self.keys, self.on_done = folder, questions, keys, on_done
        self.templates, self.workers = templates, workers
        self.warm = warm or WarmTex(folder, ())
        runs = self._at_most(max(2, len(os.sched_getaffinity(0))))
        self.runs = ThreadPoolExecutor(max_workers=runs) if runs > 1 else InPlace()
        self.started: dict[str, Future] = {}
        self.compiling: set[str] = set()  # documents TeX is still typesetting
        self.streams: list[TexStream] = []

    def stream(self, name: str) -> "TexStream":
        """A document TeX reads while it is still being rendered (see ``TexStream``)."""
        self.streams.append(TexStream(self, name))
        return self.streams[-1]

    def abort(self) -> None:
        """The run failed elsewhere: every TeX run is stopped, nothing is waited for."""
        for stream in self.streams:
            stream.abandon()
        self.warm.close()
        stop_all()
        self.runs.shutdown(wait=False, cancel_futures=True)

    def add(self, name: str, source: str | Path) -> None:
        """Compile a finished source (its text, or the file it was written to)."""
        tex = self.folder / name
        self.warm.discard(name)
        if isinstance(source, Path):
            shutil.copyfile(source, tex)
        else:
            tex.write_text(source, encoding="utf-8")
        engine = engine_of(_first_line(tex))
        if engine == "lualatex" and not lualatex_ready():
            raise TexMissing(UNICODE_HINT)
        self.compiling.add(name)
        self.started[name] = self.runs.submit(self._compile, name, engine)

    def result(self) -> tuple[dict[str, bytes | Path], list[str]]:
        """Every PDF (a path where it was written straight to disk), and notes on the
        characters no font had.  The first failure is raised; the other runs are stopped."""
        pdfs, notes = {}, []
        try:
            for future in self.started.values():
                made, made_notes = future.result()
                pdfs.update(made)
                notes += made_notes
        except BaseException:
            self.abort()
            raise
        self.warm.close()
        self.runs.shutdown()
        return pdfs, notes

    def _compile(self, name: str, engine: str):
        if engine == "lualatex":
            environment = tex_environment(lualatex_environment(self.templates, self.folder))
            return self.finish(name, run_tex(engine, self.folder, name, None, environment))
        preamble = _preamble(self.folder / name)
        fmt = format_for(preamble, tex_environment()) if preamble else None
        return self.finish(name, run_tex(engine, self.folder, name, fmt))

    def finish(self, name: str, document: Compiled):
        """A document is compiled: ``on_done`` is told, and in a versioned run it is cut into
        papers; its PDFs and its notes."""
        pdf_name = Path(name).with_suffix(".pdf").name
        self.compiling.discard(name)
        self.on_done(name)
        notes = [missing_note(pdf_name, paper, character, self.questions)
                 for paper, character in dict.fromkeys(missing_characters(document.log))]
        made: dict[str, bytes | Path] = {pdf_name: document.path}
        if self.questions is not None and pdf_name in SPLIT_INTO:
            names = ([f"papers/{paper_file_name(paper)}" for paper in self.questions]
                     if pdf_name == "questions.pdf" else
                     [f"keys/version-{number:02d}.pdf" for number in range(1, self.keys + 1)])
            made.update(split_papers(document, pdf_name, names,
                                     self.folder / SPLIT_INTO[pdf_name], self._free_cores()))
        return made, notes

    def _free_cores(self) -> int:
        """The cores TeX is not using: a document finished while another still compiles is
        cut on one, the last on all (beside the end of an earlier one's cutting, if need be:
        the work is the same, and no core waits); never more than ``workers``."""
        return self._at_most(max(1, len(os.sched_getaffinity(0)) - len(self.compiling)))

    def _at_most(self, count: int) -> int:
        return min(count, self.workers) if self.workers else count


class InPlace:
    """An executor that runs each task when it is submitted, in the caller's thread."""

    def submit(self, task, *args) -> Future:
        """Run ``task`` now; its result, or what it raised, in a finished Future."""
        future = Future()
        try:
            future.set_result(task(*args))
        except Exception as error:  # raised by ``result``, as a pool's task's would be
            future.set_exception(error)
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Nothing to stop: every task has run already."""
        pass


SPLIT_INTO = {"questions.pdf": "papers", "answers.pdf": "keys"}


def _first_line(tex: Path) -> str:
    with open(tex, encoding="utf-8") as file:
        return file.readline()


def _preamble(tex: Path) -> str | None:
    """The source up to its ``\\begin{document}`` (read line by line: it is near the top)."""
    lines = []
    with open(tex, encoding="utf-8") as file:
        for line in file:
            lines.append(line)
            if BEGIN_DOCUMENT in line:
                return "".join(lines)
    return None


class TexStream:
    """A LaTeX document that pdflatex typesets while Python is still rendering it.

    Once the preamble is rendered, pdflatex starts (from the cached format when there is
    one, or is already waiting: ``WarmTex``) and reads each chunk as it comes, so its work
    overlaps Python's.  TeX reads the document from its standard input: the document's
    file is, for the while, a link to /dev/stdin, so TeX names its output after it and
    reads the same characters as from a file, and the PDF is the same, byte for byte.  A
    run killed outright closes the pipe, and TeX stops at its end.  TeX is given the text
    from the renderer's own file of the document (``through``), read back as far as it is
    written, so a long document that TeX lags behind (a class's key) is not held in memory
    meanwhile.  The renderer abandons the stream before it sends a chunk with a character
    pdflatex cannot typeset: the finished source then goes the ordinary way (LuaLaTeX).
    ``close`` hands over the whole source; the link is then replaced by the file itself."""

    def __init__(self, build: PdfBuild, name: str):
        self.build, self.name = build, name
        self.file = None  # the renderer's file of the document, open for writing (``through``)
        self.head: list[str] = []  # chunks before TeX starts, up to the end of the preamble
        self.written: queue.SimpleQueue | None = None  # how far the file is written, each time
        self.future: Future | None = None
        self.abandoned = False
        self.source: str | Path | None = None  # the whole document, given by close

    def through(self, file) -> "TexStream":
        """The stream as the sink that writes each chunk into ``file``, a text file open for
        writing, and then lets TeX read it from there."""
        self.file = file
        return self

    def write(self, chunk: str) -> None:
        """Write a chunk into the document's file and let TeX read up to its end; TeX starts once
        the preamble is written."""
        self.file.write(chunk)
        if self.abandoned:
            return
        self.file.flush()
        end = self.file.buffer.tell()  # in bytes: what TeX may read up to
        if self.written is not None:
            self.written.put(end)
        else:
            self.head.append(chunk)
            self._start(end)

    def close(self, source: str | Path) -> None:
        """The document is whole: TeX reads to its end, or, for a stream never started or abandoned,
        the source is compiled the ordinary way."""
        if self.written is None or self.abandoned:
            self._wait_abandoned()
            self.build.add(self.name, source)
            return
        self.source = source
        self.written.put(None)

    def _start(self, end: int) -> None:
        text = "".join(self.head)
        if BEGIN_DOCUMENT not in text:
            return
        self.written = queue.SimpleQueue()
        self.written.put(end)
        self.head = []
        self.build.compiling.add(self.name)
        self.future = self.build.runs.submit(self._typeset, text)
        self.build.started[self.name] = self.future

    def abandon(self) -> None:
        """Stop streaming the document to TeX (it holds a character pdflatex cannot typeset);
        ``close`` then compiles it the ordinary way."""
        self.abandoned = True
        if self.written is not None:
            self.written.put(ABANDON)

    def _wait_abandoned(self) -> None:
        if self.future is not None:
            self.build.started.pop(self.name, None)
            self.future.result()  # the abandoned run has ended and removed its link

    def _typeset(self, head: str):
        """In a TeX thread: run pdflatex on its standard input, feeding it the document as it
        is written (``head``, its start, holds the preamble)."""
        folder, tex = self.build.folder, self.build.folder / self.name
        fmt = format_for(head, tex_environment())
        process = self.build.warm.take(self.name, fmt) or start_fed_tex(folder, self.name, fmt)
        if fmt is not None:
            remember(self.name, fmt)
        try:
            if not self._feed(process.stdin):
                return None
            try:
                code = process.wait(timeout=TEX_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                raise TexError(self.name, f"  it took over {TEX_TIMEOUT_SECONDS} s", folder,
                               "pdflatex") from None
        finally:
            stop_tex(process)
            tex.unlink(missing_ok=True)
        raise_if_killed("pdflatex", self.name, process)  # else a failure is compiled again
        if isinstance(self.source, Path):
            shutil.copyfile(self.source, tex)
        else:
            tex.write_text(self.source, encoding="utf-8")
        if code != 0 or not tex.with_suffix(".pdf").exists():
            raise_if_disk_full(tex)  # (then the format is not to blame)
            if fmt is not None:  # a format that fails is never used again
                fmt.unlink(missing_ok=True)
            document = run_tex("pdflatex", folder, self.name)  # again from the file: a failure
            # there is reported with its log, and a format's failure costs only time
        else:
            document = read_compiled(tex)
        return self.build.finish(self.name, document)

    def _feed(self, pipe) -> bool:
        """Give TeX the document, as far as it is written each time; False when the stream
        was abandoned."""
        try:
            with open(self.file.name, "rb") as document:
                while (end := self.written.get()) is not None:
                    if end is ABANDON:
                        return False
                    if pipe is not None:
                        try:
                            pipe.write(document.read(end - document.tell()))
                        except BrokenPipeError:  # TeX stopped at an error: its log says which
                            pipe = None
        finally:
            if pipe is not None:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass
        return True


ABANDON = object()


def start_fed_tex(folder: Path, name: str, fmt: Path | None) -> subprocess.Popen:
    """Start pdflatex on ``name``, which it reads from its standard input (``TexStream``)."""
    os.symlink("/dev/stdin", folder / name)
    return start_tex(tex_command("pdflatex", name, fmt, streamed=True), folder, fed=True)


class WarmTex:
    """pdflatex started on a document before the document is rendered, from the format
    that document was last compiled from: TeX loads it while Python is still solving.  A
    stream takes the process (``take``) when its rendered preamble asks for that very
    format; any other process is stopped, having cost only time on a core that was idle.
    Only the answer key, the longer TeX run, is started so: a second TeX loading beside it
    would take turns with the solving on a two-core machine (``--count 20 --pdf`` was
    slower so)."""

    def __init__(self, folder: Path, documents=("answers.tex",)):
        self.folder = folder
        self.waiting: dict[str, tuple[Path, subprocess.Popen]] = {}
        if shutil.which("pdflatex") is None:
            return
        try:
            for name in documents:
                fmt = last_used(name)
                if fmt is not None:
                    self.waiting[name] = fmt, start_fed_tex(folder, name, fmt)
        except OSError:  # the work folder is full or read-only: TeX starts later, as ever
            self.close()

    def __enter__(self) -> "WarmTex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def take(self, name: str, fmt: Path | None) -> subprocess.Popen | None:
        """The process waiting for ``name``, if it loaded ``fmt``."""
        fmt_loaded, process = self.waiting.get(name, (None, None))
        if fmt is None or fmt_loaded != fmt:
            self.discard(name)
            return None
        del self.waiting[name]
        return process

    def discard(self, name: str) -> None:
        """Stop the process waiting for ``name``, if any, and remove its link."""
        if name in self.waiting:
            stop_tex(self.waiting.pop(name)[1])
            (self.folder / name).unlink(missing_ok=True)

    def close(self) -> None:
        """Stop every process still waiting."""
        for name in list(self.waiting):
            self.discard(name)


def missing_note(document: str, paper: int, character: str, questions: list[Paper] | None) -> str:
    """Which character could not be printed, and whose paper it is in."""
    whose = ""
    if document == "questions.pdf" and questions and 1 <= paper <= len(questions):
        student = questions[paper - 1].student
        whose = f", paper {paper}" + (f" ({student.name}, {student.id})" if student else "")
    return (f"no installed font has {character!r} (U+{ord(character):04X}), in {document}{whose}: "
            f"it is left out there; Debian's {FONT_PACKAGES} cover most scripts and emoji")


def paper_file_name(paper: Paper) -> str:
    """A paper's PDF name: version-01.pdf, or with a roster 001-<student id>.pdf (the id made safe
    for a file name)."""
    if paper.student is None:
        return f"version-{paper.version:02d}.pdf"
    safe_id = re.sub(r"[^A-Za-z0-9._-]+", "_", paper.student.id)[:40]
    return f"{paper.number:03d}-{safe_id}.pdf"


def require_tex() -> None:
    """Checked before a run starts: --pdf without TeX fails at once, with the install line."""
    if shutil.which("pdflatex") is None:
        raise TexMissing(INSTALL_HINT)


def compile_pdfs(sources: dict[str, str], folder: Path | None = None) -> dict[str, Compiled]:
    """Compile every ``name.tex`` source in ``folder`` (by default a temporary one, removed
    afterwards); return ``name.pdf`` -> its PDF and log."""
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="gen-problems-tex-") as temporary:
            return {name: replace(document, kept=document.pdf)
                    for name, document in compile_pdfs(sources, Path(temporary)).items()}
    build = PdfBuild(folder)
    for name, source in sources.items():
        build.add(name, source)
    build.result()
    return {Path(name).with_suffix(".pdf").name: read_compiled(folder / name) for name in sources}


def lualatex_ready() -> bool:
    """LuaLaTeX and its font loader: Debian's texlive-luatex (pdflatex alone lacks them)."""
    if shutil.which("lualatex") is None or shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(["kpsewhich", "luaotfload.sty"], capture_output=True, text=True)
    return bool(found.stdout.strip())


PAPER_START = re.compile(r"^gen-problems: paper (\d+) starts after page (\d+)$", re.MULTILINE)


def split_papers(document: Compiled, name: str, names: list[str], folder: Path,
                 cores: int = 1) -> dict[str, Path]:
    """Cut a compiled document into its papers, at the page each paper's template logged;
    each paper is written to ``folder`` as it is cut (see ``pdfcut``)."""
    starts = [int(page) for _, page in PAPER_START.findall(document.log)]
    if len(starts) != len(names) or starts != sorted(starts):
        raise SplitError(f"{name}: {len(names)} papers, but the TeX log marks {len(starts)} paper "
                         f"starts; a custom paper.tex.j2 must keep the \\typeout line that "
                         f"marks where each paper begins")
    return cut_papers(document.path, starts, names, folder, cores)
