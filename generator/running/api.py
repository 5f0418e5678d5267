"""The library's front door: ``generate(options) -> Result``.

specs (random or a teacher's file) -> solve + cross-check -> render -> write.  Everything is
solved and rendered before the output folder changes, and then the whole set replaces the
earlier one at once (``output.OutputFolder``); a failure leaves the earlier set as it was
and raises one of the project's one-line errors (``UsageError``, ``SpecError``,
``InputError``, ``OutputError``, ...).  ``gen-problems`` (``cli``) is a thin layer over this:
it turns flags into ``Options``, and prints the ``Result``, the notes and the errors.

    from generator import Options, generate
    result = generate(Options(count=3, seed=1, out="out/demo"))
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO

import jinja2

from generator.formats.exam_record import (RecordedExam, kept_folder, recorded_documents, recorded_exam,
                          set_again_command)
from generator.formats import FORMATS, Rendering, chosen, owned_folders, owned_names
from generator.running.forked import write_in_child
from generator.rendering.formatting import table_places
from generator.running.inputs import refuse_loop
from generator.running.lockstep import in_step, versions_of
from generator.running.options import DEFAULT_DECIMALS, Options
from generator.running.output import OutputError, OutputFolder, describe
from generator.running.plugins import load_plugins
from generator.rendering.paper import DocumentInfo, answer_keys, header_fields, question_papers
from generator.pdf.build import PdfBuild, TexError, WarmTex
from generator.running.pipeline import draw_command, in_step_run, problem_sets, softmax_steps, solve_sets
from generator.running.progress import RunProgress
from generator.kinds.questions import Question
from generator.rendering.render import ignored_overrides
from generator.running.roster import Student, load_roster
from generator.kinds.sampling import NO_CALCULATOR_EXPONENTS
from generator.maths.spec import ProblemSpec
from generator.rendering.template_files import teacher_templates
from generator.pdf.typesetting import pdflatex_lacks


@dataclass(frozen=True)
class Result:
    """What a run made."""

    options: Options  # as the run went by them (--decimals, --no-calculator filled in)
    seed: int | None  # the draw's seed; None for a spec file's problems or a record without one
    sets: dict[int, Sequence[Question]]  # each version's questions, solved and checked
    files: tuple[Path, ...]  # every file of the set, in the output folder
    notes: tuple[str, ...]  # what the teacher should know (a type the mix left out, ...)
    # What --format md/json prints, in order: the text, or for a large one its file opened
    # before the folder was let go (another run may replace the file itself); read it to the
    # end and close it, as ``cli.print_to_terminal`` does.
    printed: tuple[str | TextIO, ...] = ()

    @property
    def count(self) -> int:
        """How many problems the set holds, every version's."""
        return sum(len(questions) for questions in self.sets.values())


def _nothing() -> None:
    pass


def generate(options: Options, *, before_commit: Callable[[], None] = _nothing,
             after_commit: Callable[[], None] = _nothing) -> Result:
    """Make the set ``options`` ask for and put it in ``options.out`` as a whole; the earlier
    set stays if anything fails.  ``before_commit`` is called just before the new set is put
    in place and ``after_commit`` once it is (the command line stops there on a Ctrl-C that
    Python could not raise; see ``cli``)."""
    load_plugins()  # the installed packages' types, ops and formats (``plugins``)
    refuse_loop(options.out, "--out")
    with OutputFolder(options.out) as folder:  # first restores a set a killed run left half-written
        options.checked()
        inputs = input_files(options)
        folder.refuse_inputs_inside(inputs, owned_names(), owned_folders())
        # A problem set again prints as the marker's key: the record's header, decimals, table.
        options, recorded = settings_from_record(options)
        info_fields = {**recorded, **header_fields(options.config, options.header_texts())}
        roster = load_roster(options.students) if options.students else None
        plan = planned_problems(options, roster.students if roster else None)
        notes = [*plan.notes, *(ignored_overrides(options.templates) if options.templates else []),
                 *(roster.notes if roster else [])]
        specs, students = plan.specs, plan.students
        with (RunProgress(sum(map(len, specs.values())), len(chosen(options.formats)),
                          options.pdf) as progress,
              WarmTex(folder.workspace("tex")) if options.pdf else contextlib.nullcontext() as warm,
              contextlib.ExitStack() as solving):
            class_in_step = (in_step_run(options, specs, students)
                             and not (plan.exam and students)
                             and pdflatex_can_set(students, info_fields))
            sets = solve_sets(specs, progress.solved, class_in_step, apart=options.jobs != 1)
            if (versions := versions_of(sets)) is not None:
                solving.callback(versions.close)  # a child solving ahead, if any, stops
            notes += format_notes(options, len(sets))
            info = document_info(options, plan, sets, recorded, info_fields)
            documents = render_documents(options, sets, students, info, folder, notes, progress,
                                         warm)
            progress.stage("saving")
            before_commit()
            printed = held_for_terminal(options, documents)  # this run's own, whatever lands later
            paths = folder.commit(documents, inputs, keep=kept_folder)
            after_commit()  # a stop that came while the set was put in place
    notes += [f"kept the earlier exam's record as {shlex.quote(str(kept))}; set that exam again "
              f"with: {set_again_command(kept, options.out)}" for kept in folder.kept]
    return Result(options, info.seed, sets, tuple(paths), tuple(notes), tuple(printed))


def format_notes(options: Options, versions: int) -> list[str]:
    """What the teacher should know before importing the Canvas package or the Moodle bank."""
    notes = []
    if "qti" in options.formats:
        from generator.formats.qti import package_notes  # loaded only by a run that writes the package
        notes += package_notes(versions)
    if "moodle" in options.formats:
        from generator.formats.web import moodle_notes  # loaded only by a run that writes the bank
        notes += moodle_notes()
    return notes


@dataclass(frozen=True)
class Planned:
    """Which problems a run sets: each version's specs, the papers' students and the seed."""

    specs: dict[int, Sequence[ProblemSpec]]
    seed: int | None
    students: list[Student] | None
    notes: list[str]  # for the teacher: what the mix left out, a student the record lacks
    drawn: bool = False  # drawn at random (not a spec file's, nor a record's)
    exam: RecordedExam | None = None  # a record's whole exam, set again


def planned_problems(options: Options, students: list[Student] | None) -> Planned:
    """The problems of a record's whole exam (its versions and seats as recorded), or of a
    spec file, of one problem set again, or drawn (with a random seed if none is given)."""
    if options.record and options.problem is None:
        exam = recorded_exam(options.record)
        students, notes = exam.seated(students)
        return Planned(exam.versions, exam.seed, students, notes, exam=exam)
    seed = options.seed if options.seed is not None else secrets.randbelow(10**6)
    specs, notes = problem_sets(options, seed, students)
    return Planned(specs, seed, students, notes,
                   drawn=not (options.spec or options.problem is not None))


def document_info(options: Options, plan: Planned, sets, recorded: dict,
                  info_fields: dict) -> DocumentInfo:
    """What the documents print about the run: the header, the seed and the command that
    draws the set again, the time allowed, the table of exponentials, the formats."""
    exam = plan.exam
    if "title" not in info_fields and all(spec.unscaled for v in plan.specs.values() for spec in v):
        info_fields["title"] = "Dot-product self-attention"  # scale 1: nothing is scaled
    practice = bool(options.practice or options.problem and not options.record)  # a readable id
    return DocumentInfo(**{"practice": practice, **info_fields,
                           **exponent_table(options, sets, recorded)},
                        time_allowed=options.minutes or (exam.time_allowed if exam else 0),
                        seed=plan.seed if plan.drawn or exam else None, decimals=options.decimals,
                        draw_command=(draw_command(options, plan.seed) if plan.drawn else
                                      exam.draw_command if exam else ""),
                        versioned=bool(options.versions or plan.students
                                       or exam and exam.versioned),
                        formats=(*dict.fromkeys(options.formats), *("pdf",) * options.pdf))


def pdflatex_can_set(students, info_fields: dict) -> bool:
    """Whether pdflatex can typeset every name and header text.  A paper that needs LuaLaTeX
    is rendered twice (``render_latex``), which a class read in step would pay for by
    solving every version again; such a class is solved first."""
    texts = [text for student in students or () for text in (student.name, student.id)]
    texts += [text for name, text in info_fields.items() if isinstance(text, str)]
    texts += [text for _, text in info_fields.get("extra", ())]
    return not pdflatex_lacks("\n".join(texts))


def settings_from_record(options: Options) -> tuple[Options, dict]:
    """With --record, the DocumentInfo fields its exam's documents were printed with (header,
    table of exponentials, practice or not), so that a problem set again prints the key the
    marker used, and the options the run goes by: --decimals the record's unless given (then
    the table's places are worked out again).  Without, --decimals defaults to 4."""
    recorded = recorded_documents(options.record) if options.record else {}
    decimals = recorded.pop("decimals", DEFAULT_DECIMALS)
    if options.decimals is not None and options.decimals != decimals:
        recorded.pop("table_places", None)
    return options.for_run(decimals, table=bool(recorded.get("exponent_table"))), recorded


def exponent_table(options: Options, sets, recorded: dict | None = None) -> dict:
    """--no-calculator: the table of exponentials the papers print, and its decimals (found
    from every softmax line of the set, so only worked out when a table is printed; a
    record's own, as its key printed them)."""
    if not options.no_calculator:
        return {}
    if recorded and recorded.get("exponent_table") and "table_places" in recorded:
        return {name: recorded[name] for name in ("exponent_table", "table_places")}
    return {"exponent_table": NO_CALCULATOR_EXPONENTS,
            "table_places": table_places(softmax_steps(sets), options.decimals)}


def render_documents(options: Options, sets, students, info: DocumentInfo, folder: OutputFolder,
                     notes: list[str], progress: RunProgress, warm: WarmTex | None = None) -> dict:
    """Every output file's content, keyed by its path in the output folder; what the teacher
    should know (a character no font has) is added to ``notes``.  TeX starts on each LaTeX
    document as soon as it is rendered, and runs while Python renders the other formats (in
    forked processes, one a format, for a large set, unless --jobs 1)."""
    calculator = not options.no_calculator  # the papers' time: at the rates with or without one
    questions, keys = question_papers(sets, students, calculator), answer_keys(sets, calculator)
    pdfs = (PdfBuild(folder.workspace("tex"), questions if info.versioned else None, len(keys),
                     on_done=progress.compiled, warm=warm, templates=options.templates)
            if options.pdf else None)
    rendering = Rendering(sets, questions, keys, info, options.templates,
                          pdfs.stream if pdfs else None, folder.workspace("documents"),
                          versions_of(sets))
    progress.stage("writing")
    children = {}
    try:
        if rendering.versions is not None:  # a class: every document at once, in step
            documents = write_in_step(chosen(options.formats), rendering, progress)
        else:
            for driver in chosen(options.formats):
                if driver.name != "tex":
                    children[driver.name] = (write_in_child(driver, rendering, rendering.workspace)
                                             if options.jobs != 1 else None)
            documents = dict(FORMATS["tex"].write(rendering))
            progress.written()
            for name, child in children.items():
                documents.update(child.result() if child else FORMATS[name].write(rendering))
                progress.written()
        progress.stage("compiling PDFs" if pdfs else "saving")
    except BaseException as error:
        for child in children.values():
            if child:
                child.stop()
        if pdfs:
            pdfs.abort()
        if isinstance(error, OSError) and not isinstance(error, jinja2.TemplateNotFound):
            # the documents are written as they are rendered
            raise OutputError(f"cannot write the new set to {folder.path}/ ("
                              f"{describe(error, folder.path)}); the earlier files are as they "
                              f"were") from None
        raise
    if pdfs:
        built, pdf_notes = finished_pdfs(pdfs, folder)
        documents.update(built)
        notes.extend(pdf_notes)
    return documents


def write_in_step(drivers, rendering: Rendering, progress: RunProgress) -> dict:
    """Every format's files, the formats written at once on threads of the run's process
    (``lockstep``), each reading the class's versions as they are solved."""
    def written(driver) -> dict:
        files = dict(driver.write(rendering))
        progress.written()
        return files

    documents = {}
    for files in in_step([partial(written, driver) for driver in drivers], rendering.versions):
        documents.update(files)
    return documents


def finished_pdfs(pdfs: PdfBuild, folder: OutputFolder) -> tuple[dict, list[str]]:
    try:
        return pdfs.result()
    except TexError as error:  # keep the sources and log where the teacher can look
        kept = folder.keep_tex_failure(error.folder)
        raise OutputError(f"{error.engine} failed on {error.document}: {first_line(error.excerpt)} "
                          f"(its .tex and .log are kept in {kept}/)") from None
    except OSError as error:  # TeX's disk is full (texrun), or a paper's: nothing to keep
        raise OutputError(f"cannot write the new set to {folder.path}/ ("
                          f"{describe(error, folder.path)}); the earlier files are as they "
                          f"were") from None


def held_for_terminal(options: Options, documents: dict) -> list:
    """What --format md/json prints, held before the commit: a text, or its file in the work
    folder, opened.  Once the folder's lock is let go another run may replace the file in
    --out; the open file is still this run's, and is not read into memory."""
    held = []
    for name in options.formats:
        if (printed := FORMATS[name].prints):
            content = documents[printed]
            held.append(open(content, encoding="utf-8") if isinstance(content, Path) else content)
    return held


def input_files(options: Options) -> list[Path]:
    """The files a run reads; none may be among the files it writes."""
    named = {"--spec": options.spec, "--students": options.students, "--config": options.config,
             "--record": options.record, "--key-file": options.key_file}
    for flag, path in named.items():
        if path is not None:
            refuse_loop(path, flag)  # the rest is checked as it is read (``inputs``)
    templates = teacher_templates(options.templates) if options.templates else []
    return [Path(path) for path in named.values() if path is not None] + templates


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "see the log")
