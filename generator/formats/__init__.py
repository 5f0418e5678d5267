"""Stage 3, the output formats: one driver per format, registered in one table.

A driver says what a format writes and how: its name (what ``--format`` takes),
whether every run writes it, the files and folders it owns in the output folder,
the file it prints when asked to print to the terminal, and a function from the
laid-out run (``Rendering``) to its files, each written into the rendering's sink (or,
for a format written in parts, a function from it to a job a document).  The CLI's
choices, the files the tool owns and the run's writing all come from ``FORMATS``;
``register`` adds one (a test registers a toy format the same way).  The PDFs are
compiled from the LaTeX driver's sources (``pdf``); their files are listed here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from generator.formats.export import problems_json
from generator.rendering.paper import DocumentInfo, Paper
from generator.rendering.render import paper_documents
from generator.rendering.sinks import IN_MEMORY, Content, Job, Sink


@dataclass(frozen=True)
class Rendering:
    """What every format is made from: the solved sets, laid out as papers and keys, and the
    sink each document is written into."""

    sets: dict
    questions: list[Paper]
    keys: list[Paper]
    info: DocumentInfo
    templates: Path | None = None
    sink: Sink = IN_MEMORY

    @property
    def papers(self) -> list[Paper] | None:
        """The question papers, where a run has versions or a roster; else None."""
        return self.questions if self.info.versioned else None


@dataclass(frozen=True)
class Driver:
    """One output format: its name, what it writes (its files and folders) and how, whether every
    run writes it, and the file it prints to the terminal."""

    name: str
    write: Callable[[Rendering], dict[str, Content]] | None = None  # every file, by name
    always: bool = False  # written by every run; else only when --format names it
    files: tuple[str, ...] = ()  # the file names it may write
    folders: tuple[str, ...] = ()  # folders whose files it may write
    prints: str | None = None  # with --format NAME, this file is also printed to the terminal
    help: str = ""
    # Instead of ``write``: the format's documents, a job each, which may be written at once.
    documents: Callable[[Rendering], list[Job]] | None = None

    def jobs(self, rendering: Rendering) -> list[Job]:
        """The format's work: a job a document, or one job for a format written whole."""
        return self.documents(rendering) if self.documents else [partial(self.write, rendering)]


FORMATS: dict[str, Driver] = {}


def register(driver: Driver) -> Driver:
    """Add a format's driver to ``FORMATS`` under its name (a plugin's, a test's) and give it back."""
    FORMATS[driver.name] = driver
    return driver


def chosen(names) -> list[Driver]:
    """The drivers a run uses: every always-written one, then those --format names."""
    return [d for d in FORMATS.values() if d.always or d.name in names]


def owned_names() -> set[str]:
    """Every file name a format (or the PDFs) may write at the top of the output folder."""
    return {name for driver in FORMATS.values() for name in driver.files} | set(PDF_FILES)


def owned_folders() -> set[str]:
    """Every folder a format (or the PDFs) may write in the output folder."""
    return {name for driver in FORMATS.values() for name in driver.folders} | set(PDF_FOLDERS)


PDF_FILES = ("questions.pdf", "answers.pdf")
PDF_FOLDERS = ("papers", "keys")

register(Driver("tex", always=True, files=("questions.tex", "answers.tex"),
                help="the LaTeX sources (always written)",
                documents=lambda r: paper_documents("latex", r.questions, r.keys, r.info,
                                                    r.templates, r.sink)))
register(Driver("md", always=True, files=("questions.md", "answers.md"), prints="answers.md",
                help="also print the Markdown answer key here",
                documents=lambda r: paper_documents("markdown", r.questions, r.keys, r.info,
                                                    r.templates, r.sink)))
register(Driver("json", lambda r: {"problems.json": problems_json(r.sets, r.info, r.papers,
                                                                  r.sink)},
                always=True, files=("problems.json",), prints="problems.json",
                help="also print problems.json here"))


# The platforms' drivers load their modules when asked for: a run without them need not.
def _practice(r: Rendering) -> dict:
    from generator.formats.web import render_practice
    return render_practice(r.keys, r.info, r.templates, r.sink)


def _practice_and_key(r: Rendering) -> list[Job]:
    """Two documents, each a job: in a class's run each reads the versions once, in step with
    the others (``lockstep``), rather than one job reading them twice (solving each again)."""
    from generator.formats.answers import render_answers
    return [partial(_practice, r), partial(render_answers, r.keys, r.info, r.templates, r.sink)]


def _moodle(r: Rendering) -> dict:
    from generator.formats.web import render_moodle
    return {"moodle.xml": render_moodle(r.keys, r.info, r.templates, r.sink)}


def _qti(r: Rendering) -> dict:
    from generator.formats.qti import render_qti
    return {"qti.zip": render_qti(r.keys, r.info, r.templates, r.sink)}


register(Driver("html", documents=_practice_and_key,
                files=("practice.html", "answers.html"), folders=("practice",),
                help="a self-check practice page, and the answer key as an accessible web page"))
register(Driver("moodle", _moodle,
                files=("moodle.xml",), help="a Moodle XML question bank"))
register(Driver("qti", _qti,
                files=("qti.zip",), help="a QTI 1.2 quiz package for Canvas"))
