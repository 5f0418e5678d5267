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

import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from generator.formats import FORMATS, chosen, owned_folders, owned_names
from generator.formats.exam_record import (
    RecordedExam,
    kept_folder,
    recorded_documents,
    recorded_exam,
    set_again_command,
)
from generator.kinds.questions import Question
from generator.kinds.sampling import NO_CALCULATOR_EXPONENTS
from generator.maths.spec import ProblemSpec
from generator.rendering.formatting import table_places
from generator.rendering.language import DEFAULT_TAG, language_of
from generator.rendering.paper import TITLES, DocumentInfo, header_fields
from generator.rendering.render import ignored_overrides
from generator.rendering.template_files import teacher_templates
from generator.running.inputs import refuse_loop
from generator.running.options import DEFAULT_DECIMALS, Options
from generator.running.output import OutputFolder
from generator.running.pipeline import draw_command, problem_sets, softmax_steps
from generator.running.plugins import load_plugins
from generator.running.progress import RunProgress
from generator.running.roster import Student, load_roster
from generator.running.scheduler import Scheduler, choose_mode


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
    with OutputFolder(options.out, owned=owned_name_test()) as folder:  # first restores a set a
        # killed run left half-written, and refuses state files the tool did not write
        options.checked()
        inputs = input_files(options)
        folder.refuse_inputs_inside(inputs, owned_names(), owned_folders())
        folder.refuse_changed({name for driver in chosen(()) if driver.always
                               for name in driver.files})  # written by every run
        # A problem set again prints as the marker's key: the record's header, decimals, table.
        options, recorded = settings_from_record(options)
        language_of(options.lang or recorded.get("language", DEFAULT_TAG), options.templates)
        info_fields = {**recorded, **header_fields(options.config, options.header_texts())}
        roster = load_roster(options.students) if options.students else None
        plan = planned_problems(options, roster.students if roster else None)
        notes = [*plan.notes, *(ignored_overrides(options.templates) if options.templates else []),
                 *(roster.notes if roster else [])]
        specs, students = plan.specs, plan.students
        mode = choose_mode(options, specs, students, bool(plan.exam and students), info_fields)
        with (RunProgress(sum(map(len, specs.values())), len(chosen(options.formats)),
                          options.pdf, every=options.progress) as progress,
              Scheduler(options, folder, progress, mode) as run):  # how the work is done
            sets = run.solve(specs)
            notes += format_notes(options, len(sets))
            info = document_info(options, plan, sets, recorded, info_fields)
            documents = run.write(sets, students, info, notes)
            progress.stage("saving")
            before_commit()
            printed = held_for_terminal(options, documents)  # this run's own, whatever lands later
            paths = folder.commit(documents, inputs, keep=kept_folder)
            after_commit()  # a stop that came while the set was put in place
    notes += [f"kept the earlier exam's record as {shlex.quote(str(kept))}; set that exam again "
              f"with: {set_again_command(kept, options.out)}" for kept in folder.kept]
    notes += [f"{shlex.quote(str(path))} is not the file gen-problems wrote there (changed since): "
              f"kept as it is, and no longer the tool's" for path in folder.disowned]
    return Result(options, info.seed, sets, tuple(paths), tuple(notes), tuple(printed))


def owned_name_test() -> Callable[[str], bool]:
    """Whether a format (or the PDFs) may write a file of a name in the output folder: a fixed
    name (answers.md), or one inside a folder a format owns (papers/...)."""
    names, folders = owned_names(), owned_folders()
    return lambda name: name in names or ("/" in name and name.split("/")[0] in folders)


def format_notes(options: Options, versions: int) -> list[str]:
    """What the teacher should know before importing the Canvas package or the Moodle bank."""
    notes = []
    if "qti" in options.formats:
        from generator.formats.qti import (
            package_notes,  # loaded only by a run that writes the package
        )
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


def default_title(specs) -> str | None:
    """The documents' title where the teacher gives none and the default's words would not fit
    the problems: not "scaled" at scale 1, cross-attention where the problems are (all of
    them; some: attention); None where the default fits."""
    scaled = not (specs and all(spec.unscaled for spec in specs))
    crossed = [spec.cross for spec in specs]
    kind = ("cross-attention" if crossed and all(crossed) else "attention" if any(crossed)
            else "self-attention")
    title = TITLES[scaled, kind]
    return None if title == DocumentInfo.title else title


def document_info(options: Options, plan: Planned, sets, recorded: dict,
                  info_fields: dict) -> DocumentInfo:
    """What the documents print about the run: the header, the seed and the command that
    draws the set again, the time allowed, the table of exponentials, the formats."""
    exam = plan.exam
    assert options.decimals is not None, "Options.for_run gives the decimals"
    command = exam.draw_command if exam else ""
    if plan.drawn:
        assert plan.seed is not None, "planned_problems draws with a seed"
        command = draw_command(options, plan.seed)
    if "title" not in info_fields and (title := default_title([s for v in plan.specs.values() for s in v])):
        info_fields["title"] = title
    practice = bool(options.practice or options.problem and not options.record)  # a readable id
    language = options.lang or info_fields.get("language", DocumentInfo.language)
    return DocumentInfo(**{"practice": practice, **info_fields, "language": language,
                           **exponent_table(options, sets, recorded)},
                        time_allowed=options.minutes or (exam.time_allowed if exam else 0),
                        seed=plan.seed if plan.drawn or exam else None, decimals=options.decimals,
                        draw_command=command,
                        versioned=bool(options.versions or plan.students
                                       or exam and exam.versioned),
                        formats=(*dict.fromkeys(options.formats), *("pdf",) * options.pdf))


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
    assert options.decimals is not None, "Options.for_run gives the decimals"
    if recorded and recorded.get("exponent_table") and "table_places" in recorded:
        return {name: recorded[name] for name in ("exponent_table", "table_places")}
    return {"exponent_table": NO_CALCULATOR_EXPONENTS,
            "table_places": table_places(softmax_steps(sets), options.decimals)}


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

