"""How a run's work is done: the one place that chooses, from the run's size and --jobs,
between one thing after another, forked processes and a class read in step, and that
hands the renderers the sink their documents go into.

- ``--jobs 1``: every problem is solved here, every format's documents are rendered in
  turn, then each PDF is compiled, one TeX run after another, and cut into papers by one
  worker.  Nothing is forked and no thread is started.
- By default, a run that is neither large nor a class is written so too, except that the
  answer key's TeX starts before the set is solved (``pdf.build.WarmTex``) and TeX reads
  each LaTeX source while it is rendered (``pdf.build.TexStream``), so that TeX runs
  while Python renders the other formats; TeX runs and cutting workers use every core.
- A large set (``FORK_FROM`` problems) has each format but LaTeX written by a forked
  child (``forked``) while the run renders the LaTeX and feeds TeX; from
  ``SOLVE_APART_FROM`` problems a child also solves the set's first part while the run
  draws the whole set and solves the rest.
- A class (more than ``IN_STEP_FROM`` versions of ``FORK_FROM`` problems in all, a paper
  a version, in order) is read in step (``lockstep``): a forked child solves its versions
  ahead, and every document of every format is written at once, each on a thread of its
  own, so that the run holds a few versions, never the class.

``--jobs N`` keeps at most N TeX runs, N cutting workers and N format children at once.
Every mode writes the same bytes (tests/test_modes.py).  The renderers know none of this:
a format's documents are jobs (``formats.Driver.jobs``) that write into the sink they are
given, here ``work_folder.WorkFolder``.  The documents of a class read in step take turns on
the run's own core (a thread each, whatever --jobs says): only TeX, the cutting and the
children work beside it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jinja2

from generator.formats import Driver, Rendering, chosen
from generator.kinds.questions import Question
from generator.maths.spec import ProblemSpec
from generator.pdf.build import PdfBuild, TexError, WarmTex
from generator.pdf.typesetting import pdflatex_lacks
from generator.rendering.paper import DocumentInfo, Paper, answer_keys, lay_out, question_papers
from generator.rendering.render import every_file
from generator.running import forked, pipeline
from generator.running.helpers import HelperDied
from generator.running.lockstep import WINDOW, LaidOut, Versions, in_step
from generator.running.options import Options
from generator.running.output import OutputError, OutputFolder, describe
from generator.running.progress import RunProgress
from generator.running.work_folder import TEX_SOURCES, WorkFolder

FORK_FROM = 60  # problems in the run: a smaller one is written in one process (a fork costs more)
SOLVE_APART_FROM = 120  # problems: fewer are solved sooner than a child is paid for
CHILD_SHARE = 0.48  # of the problems, solved by the child: the run also draws them and unpickles
IN_STEP_FROM = 2 * WINDOW  # versions: fewer are simply solved first
LATEX = "tex"  # the format whose documents TeX reads: always written by the run itself


@dataclass(frozen=True)
class Mode:
    """How a run's work is done (see the module's docstring)."""

    in_step: bool = False  # a class: every document written at once, reading versions in step
    ahead: bool = False  # ... its versions solved ahead by a forked child
    solve_apart: bool = False  # a large set: a forked child solves its first part
    format_children: bool = False  # a large set: each format but LaTeX written by a child
    tex_beside: bool = False  # the key's TeX started early; TeX reads LaTeX as it is written
    workers: int | None = None  # TeX runs, cutting workers, format children (None: the cores')


def choose_mode(options: Options, specs: dict[int, Sequence[ProblemSpec]], students,
                seated: bool, texts: dict) -> Mode:
    """The run's mode, from its size and --jobs.  Not in step: papers that cycle through
    fewer versions (--versions with a roster) or that an exam's record ``seated``, a set whose
    table is worked out from all its problems first (--no-calculator), and a paper that
    needs LuaLaTeX (``pdflatex_can_set``): it is rendered twice, which a class read in step
    would pay for by solving every version again."""
    if options.jobs == 1:
        return Mode(workers=1)
    problems = sum(map(len, specs.values()))
    another_core = hasattr(os, "fork") and len(os.sched_getaffinity(0)) > 1
    in_step = (len(specs) > IN_STEP_FROM and problems >= FORK_FROM
               and not (students and options.versions) and not seated
               and not options.no_calculator and pdflatex_can_set(students, texts))
    return Mode(in_step=in_step, ahead=in_step and another_core,
                solve_apart=not in_step and another_core and problems >= SOLVE_APART_FROM,
                format_children=not in_step and problems >= FORK_FROM, tex_beside=True,
                workers=options.jobs)


def pdflatex_can_set(students, texts: dict) -> bool:
    """Whether pdflatex can typeset every name and header text."""
    words = [word for student in students or () for word in (student.name, student.id)]
    words += [text for text in texts.values() if isinstance(text, str)]
    words += [text for _, text in texts.get("extra", ())]
    return not pdflatex_lacks("\n".join(words))


class Scheduler:
    """One run's work, done as its ``Mode`` says, from the key's TeX started before the set
    is solved to the child solving a class ahead, stopped when the run ends."""

    def __init__(self, options: Options, folder: OutputFolder, progress: RunProgress,
                 mode: Mode):
        self.options, self.folder, self.progress, self.mode = options, folder, progress, mode
        self.warm: WarmTex | None = None
        self.versions: Versions | None = None
        self.sink: WorkFolder | None = None

    def __enter__(self) -> "Scheduler":
        if self.options.pdf and self.mode.tex_beside:
            self.warm = WarmTex(self.folder.workspace("tex"))
        return self

    def __exit__(self, kind, error, trace) -> None:
        if isinstance(error, HelperDied):  # its line says which folder is as it was
            error.out = self.folder.path
        if self.versions is not None:
            self.versions.close()  # a child solving ahead, if any, stops
        if self.warm is not None:
            self.warm.close()

    def solve(self, specs: dict[int, Sequence[ProblemSpec]]) -> dict[int, Sequence[Question]]:
        """Every version solved and checked (``pipeline.solve_checked``); in step, each
        version when its documents first read it."""
        if self.mode.in_step:
            self.versions = Versions(specs, pipeline.solve_checked, self.progress.solved,
                                     ahead=self.mode.ahead)
            return self.versions.sets()
        solved = iter(self._solve_all(specs))
        return {version: [next(solved) for _ in version_specs]
                for version, version_specs in specs.items()}

    def _solve_all(self, specs: dict[int, Sequence[ProblemSpec]]) -> list[Question]:
        """Every spec solved, in order; apart, a child draws and solves the first part while
        the run draws the whole set and solves the rest.  The same questions either way."""
        child = None
        if self.mode.solve_apart:
            share = int(sum(map(len, specs.values())) * CHILD_SHARE)
            child = forked.compute_in_child(lambda: [pipeline.solve_checked(spec) for spec
                                                     in pipeline.first_specs(specs, share)],
                                            "the forked solver of the set's first part")
        if child is None:
            return [self._solve(spec) for spec in _flat(specs)]
        try:
            mine = [self._solve(spec) for spec in _flat(specs)[share:]]
            theirs = child.result()
        except BaseException:
            child.stop()
            raise
        for _ in theirs:
            self.progress.solved()
        return theirs + mine

    def _solve(self, spec: ProblemSpec) -> Question:
        question = pipeline.solve_checked(spec)
        self.progress.solved()
        return question

    def write(self, sets: dict[int, Sequence[Question]], students, info: DocumentInfo,
              notes: list[str]) -> dict:
        """Every output file (its file in the work folder, mostly), by its path in the output
        folder, PDFs included; what the teacher should know (a character no font has) is
        added to ``notes``."""
        options = self.options
        questions, keys = self._papers(sets, students, not options.no_calculator)
        pdfs = (PdfBuild(self.folder.workspace("tex"), questions if info.versioned else None,
                         len(keys), on_done=self.progress.compiled, warm=self.warm,
                         templates=options.templates, workers=self.mode.workers)
                if options.pdf else None)
        self.sink = WorkFolder(self.folder.workspace("documents"),
                               pdfs if self.mode.tex_beside else None)
        rendering = Rendering(sets, questions, keys, info, options.templates, self.sink)
        self.progress.stage("writing")
        try:
            documents = self._write_formats(chosen(options.formats), rendering)
            self.progress.stage("compiling PDFs" if pdfs else "saving")
            if pdfs and not self.mode.tex_beside:  # one TeX run after another, the key first
                for name in [name for name in documents if name in TEX_SOURCES]:
                    pdfs.add(name, documents[name])
        except BaseException as error:
            if pdfs:
                pdfs.abort()
            if isinstance(error, OSError) and not isinstance(error, jinja2.TemplateNotFound):
                raise self._unwritten(error) from None  # the documents are written as rendered
            raise
        if pdfs:
            built, pdf_notes = self._finished_pdfs(pdfs)
            documents.update(built)
            notes.extend(pdf_notes)
        return documents

    def _papers(self, sets, students, calculator: bool) -> tuple[list[Paper], list[Paper]]:
        """The question papers and the keys; a class read in step lays each version out when
        a document reads it."""
        laid_out = _laid_out_when_read if self.versions is not None else lay_out
        return (question_papers(sets, students, calculator, laid_out),
                answer_keys(sets, calculator, laid_out))

    def _write_formats(self, drivers: list[Driver], rendering: Rendering) -> dict:
        if self.mode.in_step:
            return self._write_in_step(drivers, rendering)
        if self.mode.format_children:
            return self._write_beside_children(drivers, rendering)
        return self._write_here(drivers, rendering)

    def _write_here(self, drivers: list[Driver], rendering: Rendering) -> dict:
        """Each format's documents, one after another."""
        documents = {}
        for driver in drivers:
            jobs = driver.jobs(rendering)
            for job in jobs:
                documents.update(self._run(job, 1 / len(jobs)))
        return documents

    def _write_in_step(self, drivers: list[Driver], rendering: Rendering) -> dict:
        """Every document of every format at once, each on a thread of its own (``lockstep``),
        reading the class's versions as they are solved."""
        jobs = []
        for driver in drivers:
            documents = driver.jobs(rendering)
            jobs += [partial(self._run, job, 1 / len(documents)) for job in documents]
        return {name: content for files in in_step(jobs, self.versions)
                for name, content in files.items()}

    def _write_beside_children(self, drivers: list[Driver], rendering: Rendering) -> dict:
        """The LaTeX written here (and read by TeX) while a forked child writes each other
        format into the work folder, at most ``workers`` children at once; a format no child
        could take is written here."""
        here = [driver for driver in drivers if driver.name == LATEX]
        apart = [driver for driver in drivers if driver.name != LATEX]
        waiting = deque(apart)
        children = deque(self._start_writing(waiting.popleft(), rendering)
                         for _ in range(min(len(apart), self.mode.workers or len(apart))))
        try:
            documents = self._write_here(here, rendering)
            for driver in apart:
                child = children[0]  # left in place while waited for: a stop stops it too
                documents.update(child.result() if child else self._write_here([driver], rendering))
                children.popleft()
                if child:
                    self.progress.written()
                if waiting:
                    children.append(self._start_writing(waiting.popleft(), rendering))
        except BaseException:
            for child in children:
                if child:
                    child.stop()
            raise
        return documents

    @staticmethod
    def _start_writing(driver: Driver, rendering: Rendering) -> forked.Forked | None:
        return forked.compute_in_child(lambda: every_file(driver.jobs(rendering)),
                                       f"the forked writer of the {driver.name} files")

    def _run(self, job, share: float) -> dict:
        """A job's files, once TeX reading any of them has been handed the whole source."""
        files = self.sink.close_tex_streams(job())
        self.progress.written(share)
        return files

    def _finished_pdfs(self, pdfs: PdfBuild) -> tuple[dict, list[str]]:
        try:
            return pdfs.result()
        except TexError as error:  # keep the sources and log where the teacher can look
            kept = self.folder.keep_tex_failure(error.folder)
            raise OutputError(f"{error.engine} failed on {error.document}: "
                              f"{_first_line(error.excerpt)} (its .tex and .log are kept in "
                              f"{kept}/)") from None
        except OSError as error:  # TeX's disk is full (texrun), or a paper's: nothing to keep
            raise self._unwritten(error) from None

    def _unwritten(self, error: OSError) -> OutputError:
        path = self.folder.path
        return OutputError(f"cannot write the new set to {path}/ ({describe(error, path)}); "
                           f"the earlier files are as they were")


def _laid_out_when_read(questions: Sequence[Question], calculator: bool) -> LaidOut:
    return LaidOut(questions, partial(lay_out, calculator=calculator))


def _flat(specs: dict[int, Sequence[ProblemSpec]]) -> list[ProblemSpec]:
    return [spec for version_specs in specs.values() for spec in version_specs]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "see the log")
