"""The command line, ``gen-problems``: it parses options and wires the stages together.

specs (random or a teacher's file) -> solve + cross-check -> render -> write.
Everything is solved and rendered before the output folder changes, and then the
whole set replaces the earlier one at once (``output.OutputFolder``).  Every
failure prints one line: exit 2 for bad input, 1 when the outputs cannot be
made or written, 130 for Ctrl-C; the earlier set is left as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import os
import re
import secrets
import shlex
import shutil
import signal
import sys
import threading
from functools import partial
from pathlib import Path

import jinja2

from .crosscheck import CrossCheckError
from .exact import parse_exact
from .exam_record import kept_folder, recorded_documents, recorded_exam, set_again_command
from .formats import FORMATS, Rendering, chosen, owned_folders, owned_names
from .forked import WorkerDied, write_in_child
from .formatting import table_places
from .inputs import InputError, check_folder, refuse_loop
from .output import COMMITTING, OutputError, OutputFolder, OutputRefused, describe
from .paper import HEADER_FIELDS, DocumentInfo, answer_keys, header_fields, question_papers
from .pdf import PdfBuild, SplitError, TexError, TexMissing, WarmTex, require_tex
from .progress import RunProgress
from .lockstep import in_step, versions_of
from .pipeline import (DEFAULT_DECIMALS, MAX_COUNT, draw_command, in_step_run, problem_sets,
                       softmax_steps, solve_sets)
from .render import ignored_overrides
from .roster import MAX_STUDENTS, load_roster
from .sampling import EMBEDDINGS, MASK_CHOICES, MAX_SEED, NO_CALCULATOR_EXPONENTS, PRESETS, WEIGHTS
from .kinds import default_mix, type_names
from .spec import SpecError
from .template_files import teacher_templates
from .teacher_text import one_line
from .typesetting import pdflatex_lacks

EXAM_CODE = re.compile(r"^[A-Z2-7]{4}-[A-Z2-7]{4}$", re.IGNORECASE)
MAX_DECIMALS = 10
DRAW_OPTIONS = ("difficulty", "tokens", "d_model", "dk", "dv", "embeddings", "weights", "mask",
                "types", "scale")
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # as a tool killed by SIGPIPE
# Formats --format does not take, and what gives them: the answer to a guess, not a list.
FORMAT_INSTEAD = {"pdf": "the PDFs come with --pdf, not --format pdf; ",
                  **{name: "the .tex files are always written, and --pdf compiles them; "
                     for name in ("tex", "latex")}}


class UsageError(Exception):
    """A bad command line; the message is one line for the user."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (not usage + error) and exit code 2."""

    def error(self, message: str):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gen-problems",
        description="Generate worked self-attention problems: question sheet, answer key, JSON.")
    source = parser.add_argument_group("which problems")
    source.add_argument("--spec", type=Path, metavar="FILE",
                        help="solve the problems in this TOML or JSON file instead of drawing them")
    source.add_argument("--count", type=int, metavar="N",
                        help="how many random problems to draw (default 20)")
    source.add_argument("--minutes", type=int, metavar="N",
                        help="instead of --count: as many problems as fit in N minutes of "
                             "working by hand (the estimate the papers print)")
    source.add_argument("--marks", type=int, metavar="N",
                        help="instead of --count: as many problems as fit in N marks")
    source.add_argument("--seed", type=int, metavar="S",
                        help="seed of the random draw; the same seed gives the same set")
    source.add_argument("--problem", metavar="CODE",
                        help="set again the one problem with this code or id, from the exam's "
                             "record (--record), or a practice id such as M42-7")
    source.add_argument("--record", type=Path, metavar="FILE",
                        help="an exam's problems.json: set the whole exam again as it was "
                             "(every version, its header), or with --problem one problem of it")
    source.add_argument("--versions", type=int, metavar="N",
                        help="N different versions of the set, each with its own key")
    source.add_argument("--students", type=Path, metavar="CSV",
                        help="a roster (columns id, name): one named paper per student")
    source.add_argument("--practice", action="store_true",
                        help="a practice set: readable ids (M42-7) and the seed on the papers, "
                             "so anyone can draw it again; without it papers show only codes")
    source.add_argument("--key-file", type=Path, metavar="FILE",
                        help="the exam key that seeds exams' draws (default: made on first use "
                             "in ~/.config/gen-problems/exam.key)")
    draw = parser.add_argument_group("what random problems look like (a preset, then overrides)")
    draw.add_argument("--difficulty", choices=list(PRESETS),
                      help="easy: 2 one-hot tokens; medium: 3 tokens, small integers, d_k = 4; "
                           "hard: two-place decimals, 3-5 tokens, some masked (default medium)")
    draw.add_argument("--tokens", type=token_range, metavar="N|A-B",
                      help="tokens per problem, a number or a range such as 2-4")
    draw.add_argument("--d-model", type=int, metavar="N", help="embedding width")
    draw.add_argument("--dk", type=int, metavar="N", help="width of queries and keys")
    draw.add_argument("--dv", type=int, metavar="N", help="width of values")
    draw.add_argument("--embeddings", choices=EMBEDDINGS, help="kind of entries of X")
    draw.add_argument("--weights", choices=WEIGHTS, help="kind of weight matrices")
    draw.add_argument("--mask", choices=MASK_CHOICES, help="causal masking: none, all, or mixed")
    draw.add_argument("--scale", type=scale_value, metavar="C",
                      help="scale the scores by C instead of 1/sqrt(d_k), e.g. 1 (raw dot "
                           "products) or 1/2")
    draw.add_argument("--no-calculator", action="store_true",
                      help="every scaled score is 0, ±0.5, ±1, ±1.5 or ±2, and the sheet prints "
                           "their exponentials: no calculator needed for e^x")
    draw.add_argument("--types", type=comma_list(type_names(), "question type"), metavar="T,T,...",
                      help="question types, taken in turn: " + ", ".join(type_names())
                           + " (default: " + ", ".join(default_mix())
                           + "; 'full' alone: the whole pipeline only)")
    output = parser.add_argument_group("what to write")
    output.add_argument("--out", default="out", metavar="DIR",
                        help="output folder (default: out/)")
    choices = tuple(d.name for d in FORMATS.values() if not d.always or d.prints)
    output.add_argument("--format", type=comma_list(choices, "format", FORMAT_INSTEAD),
                        action="extend", default=[],
                        metavar="FMT[,FMT]",
                        help="; ".join(f"{name}: {FORMATS[name].help}" for name in choices))
    output.add_argument("--decimals", type=int, metavar="N",
                        help="decimal places shown (default 4, or the record's with --record); "
                             "computing is always exact")
    output.add_argument("--pdf", action="store_true",
                        help="also compile questions.pdf and answers.pdf (needs pdflatex)")
    output.add_argument("--templates", type=Path, metavar="DIR",
                        help="a folder of templates searched before the built-in ones")
    header = parser.add_argument_group("document header (or all at once from --config)")
    header.add_argument("--config", type=Path, metavar="FILE",
                        help="a TOML file with any of: " + ", ".join(HEADER_FIELDS))
    for name in HEADER_FIELDS:
        header.add_argument(f"--{name}", metavar="TEXT", help=f"the documents' {name}")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        with _stops_as_interrupts():
            return run(build_parser().parse_args(argv))
    except KeyboardInterrupt:
        print("gen-problems: interrupted; " + ("the new set had been written in full"
                                               if LANDED.is_set() else
                                               "the output folder is as it was"), file=sys.stderr)
        return EXIT_INTERRUPTED
    except (UsageError, SpecError, InputError, TexMissing, OutputRefused) as error:
        print(f"gen-problems: error: {one_line(error)}", file=sys.stderr)
        return 2
    except jinja2.TemplateError as error:  # a teacher's --templates with a mistake in it
        print(f"gen-problems: error: {one_line(template_error(error))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # --format json | head: the files are written; stop quietly
        sys.stdout = None
        return EXIT_BROKEN_PIPE
    except (OutputError, SplitError, CrossCheckError, WorkerDied) as error:
        print(f"gen-problems: {one_line(error)}", file=sys.stderr)
        return 1
    except OSError as error:  # reading a template, a full disk: say which file and why
        print(f"gen-problems: error: {one_line(describe(error))}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    refuse_loop(args.out, "--out")
    with OutputFolder(args.out) as folder:  # first restores a set a killed run left half-written
        check_options(args)
        inputs = input_files(args)
        folder.refuse_inputs_inside(inputs, owned_names(), owned_folders())
        recorded = settings_from_record(args)  # a problem set again prints as the marker's key
        info_fields = {**recorded, **header_fields(args.config, {name: getattr(args, name)
                                                                 for name in HEADER_FIELDS})}
        roster = load_roster(args.students) if args.students else None
        students = roster.students if roster else None
        exam = recorded_exam(args.record) if args.record and args.problem is None else None
        if exam:  # the whole exam set again: its problems, versions and seats as recorded
            seed, (students, notes) = exam.seed, exam.seated(students)
            specs = exam.versions
        else:
            seed = args.seed if args.seed is not None else secrets.randbelow(10**6)
            specs, notes = problem_sets(args, seed, students)
        notes += ignored_overrides(args.templates) if args.templates else []
        notes += roster.notes if roster else []
        with (RunProgress(sum(map(len, specs.values())), len(chosen(args.format)), args.pdf) as progress,
              WarmTex(folder.workspace("tex")) if args.pdf else contextlib.nullcontext() as warm,
              contextlib.ExitStack() as solving):
            class_in_step = (in_step_run(args, specs, students) and not (exam and students)
                             and pdflatex_can_set(students, info_fields))
            sets = solve_sets(args, specs, progress.solved, class_in_step)
            if (versions := versions_of(sets)) is not None:
                solving.callback(versions.close)  # a child solving ahead, if any, stops
            if "qti" in args.format:
                from .qti import package_notes  # loaded only by a run that writes the package
                notes += package_notes(len(sets))
            if "moodle" in args.format:
                from .web import moodle_notes  # loaded only by a run that writes the bank
                notes += moodle_notes()
            drawn = not (args.spec or args.problem is not None or exam)
            if "title" not in info_fields and all(spec.unscaled for v in specs.values() for spec in v):
                info_fields["title"] = "Dot-product self-attention"  # scale 1: nothing is scaled
            practice = bool(args.practice or args.problem and not args.record)  # a readable id
            info = DocumentInfo(**{"practice": practice, **info_fields,
                                   **exponent_table(args, sets, recorded)},
                                time_allowed=args.minutes or (exam.time_allowed if exam else 0),
                                seed=seed if drawn or exam else None, decimals=args.decimals,
                                draw_command=(draw_command(args, seed) if drawn else
                                              exam.draw_command if exam else ""),
                                versioned=bool(args.versions or students or exam and exam.versioned),
                                formats=(*dict.fromkeys(args.format), *("pdf",) * args.pdf))
            documents = render_documents(args, sets, students, info, folder, notes, progress, warm)
            progress.stage("saving")
            _unless_stopped()
            printed = held_for_terminal(args, documents)  # this run's own, whatever lands later
            paths = folder.commit(documents, inputs, keep=kept_folder)
            LANDED.set()
            _unless_stopped()  # a stop that came while the set was put in place
    print_to_terminal(printed)
    notes += [f"kept the earlier exam's record as {shlex.quote(str(kept))}; set that exam again "
              f"with: {set_again_command(kept, args.out)}" for kept in folder.kept]
    for note in notes:
        print(f"gen-problems: note: {note}", file=sys.stderr)
    count = sum(len(solutions) for solutions in sets.values())
    print(f"wrote {count} problem{'s' * (count != 1)}, {len(paths)} files, to {args.out}"
          + (f" (seed {seed})" if drawn or exam and seed is not None else ""), file=sys.stderr)
    return 0


def pdflatex_can_set(students, info_fields: dict) -> bool:
    """Whether pdflatex can typeset every name and header text.  A paper that needs LuaLaTeX
    is rendered twice (``render_latex``), which a class read in step would pay for by
    solving every version again; such a class is solved first."""
    texts = [text for student in students or () for text in (student.name, student.id)]
    texts += [text for name, text in info_fields.items() if isinstance(text, str)]
    texts += [text for _, text in info_fields.get("extra", ())]
    return not pdflatex_lacks("\n".join(texts))


def settings_from_record(args) -> dict:
    """With --record, the DocumentInfo fields its exam's documents were printed with (header,
    table of exponentials, practice or not), so that a problem set again prints the key the
    marker used; --decimals is the record's unless given (then the table's places are worked
    out again).  Without, --decimals defaults to 4."""
    recorded = recorded_documents(args.record) if args.record else {}
    decimals = recorded.pop("decimals", DEFAULT_DECIMALS)
    if args.decimals is None:
        args.decimals = decimals
    elif args.decimals != decimals:
        recorded.pop("table_places", None)
    if recorded.get("exponent_table"):
        args.no_calculator = True
    return recorded


def exponent_table(args, sets, recorded: dict | None = None) -> dict:
    """--no-calculator: the table of exponentials the papers print, and its decimals (found
    from every softmax line of the set, so only worked out when a table is printed; a
    record's own, as its key printed them)."""
    if not args.no_calculator:
        return {}
    if recorded and recorded.get("exponent_table") and "table_places" in recorded:
        return {name: recorded[name] for name in ("exponent_table", "table_places")}
    return {"exponent_table": NO_CALCULATOR_EXPONENTS,
            "table_places": table_places(softmax_steps(sets), args.decimals)}


def render_documents(args, sets, students, info: DocumentInfo, folder: OutputFolder,
                     notes: list[str], progress: RunProgress, warm: WarmTex | None = None) -> dict:
    """Every output file's content, keyed by its path in the output folder; what the teacher
    should know (a character no font has) is added to ``notes``.  TeX starts on each LaTeX
    document as soon as it is rendered, and runs while Python renders the other formats (in
    forked processes, one a format, for a large set)."""
    calculator = not args.no_calculator  # the papers' time: at the rates with or without one
    questions, keys = question_papers(sets, students, calculator), answer_keys(sets, calculator)
    pdfs = (PdfBuild(folder.workspace("tex"), questions if info.versioned else None, len(keys),
                     on_done=progress.compiled, warm=warm, templates=args.templates)
            if args.pdf else None)
    rendering = Rendering(sets, questions, keys, info, args.templates,
                          pdfs.stream if pdfs else None, folder.workspace("documents"),
                          versions_of(sets))
    progress.stage("writing")
    children = {}
    try:
        if rendering.versions is not None:  # a class: every document at once, in step
            documents = write_in_step(chosen(args.format), rendering, progress)
        else:
            for driver in chosen(args.format):
                if driver.name != "tex":
                    children[driver.name] = write_in_child(driver, rendering, rendering.workspace)
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


def held_for_terminal(args, documents: dict) -> list:
    """What --format md/json prints, held before the commit: a text, or its file in the work
    folder, opened.  Once the folder's lock is let go another run may replace the file in
    --out; the open file is still this run's, and is not read into memory."""
    held = []
    for name in args.format:
        if (printed := FORMATS[name].prints):
            content = documents[printed]
            held.append(open(content, encoding="utf-8") if isinstance(content, Path) else content)
    return held


def print_to_terminal(held: list) -> None:
    """--format md/json: print after the files are safe; a closed pipe ends the run quietly."""
    for content in held:
        if sys.stdout is None:
            raise BrokenPipeError
        if isinstance(content, str):
            sys.stdout.write(content)
        else:
            with content:
                shutil.copyfileobj(content, sys.stdout)
    if sys.stdout is not None:
        sys.stdout.flush()


def input_files(args) -> list[Path]:
    """The files a run reads; none may be among the files it writes."""
    named = {"--spec": args.spec, "--students": args.students, "--config": args.config,
             "--record": args.record, "--key-file": args.key_file}
    for flag, path in named.items():
        if path is not None:
            refuse_loop(path, flag)  # the rest is checked as it is read (``inputs``)
    templates = teacher_templates(args.templates) if args.templates else []
    return [Path(path) for path in named.values() if path is not None] + templates


def template_error(error: jinja2.TemplateError) -> str:
    where = f" ({error.filename}, line {error.lineno})" if getattr(error, "lineno", None) else ""
    message = error.message or type(error).__name__
    return f"template: {message.splitlines()[0] if message else message}{where}"


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "see the log")


STOPS = (signal.SIGINT, signal.SIGTERM)
STOP_REQUESTED = threading.Event()
LANDED = threading.Event()  # the new set is in place: a stop from then on cannot undo it


@contextlib.contextmanager
def _stops_as_interrupts():
    """Ctrl-C and SIGTERM (a closed terminal, a scheduler's stop) unwind the run: the earlier
    set stays.  Each is also recorded, because Python drops an exception raised where it
    cannot be passed on (a stop that lands in an import's clean-up callback is printed as
    "Exception ignored" and the run goes on); ``_unless_stopped`` asks before the set lands."""
    STOP_REQUESTED.clear()
    LANDED.clear()
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield
        return
    previous = {stop: signal.signal(stop, _raise_interrupt) for stop in STOPS}
    hook = sys.unraisablehook
    sys.unraisablehook = lambda dropped: (None if isinstance(dropped.exc_value, KeyboardInterrupt)
                                          else hook(dropped))  # recorded: said once, at the end
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for stop, handler in previous.items():
            signal.signal(stop, handler)


def _raise_interrupt(signum, frame):
    STOP_REQUESTED.set()
    if COMMITTING.is_set():  # the set is being put in place: it lands whole, then the run stops
        return
    raise KeyboardInterrupt


def _unless_stopped() -> None:
    """A stop whose interrupt was dropped still stops the run, before anything is committed."""
    if STOP_REQUESTED.is_set():
        raise KeyboardInterrupt


def scale_value(text: str):
    """--scale: an exact positive number, as a spec file's scale (1, 1/2, sqrt(2)/4)."""
    try:
        value = parse_exact(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not value.is_positive:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def token_range(text: str) -> tuple[int, int]:
    """'3' -> (3, 3); '2-4' -> (2, 4)."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or a range such as 2-4, got {text!r}") from None


def comma_list(allowed: tuple[str, ...], what: str, instead: dict[str, str] | None = None):
    """An argparse type: 'a,b' -> ('a', 'b'), each one of ``allowed``; an unknown name is
    answered with the closest allowed one (difflib), or with what ``instead`` says to use."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(name.strip() for name in text.split(",") if name.strip())
        unknown = next((name for name in names if name not in allowed), None)
        if unknown is not None or not names:
            hint = (instead or {}).get(unknown) or next(
                (f"did you mean {close!r}? " for close in
                 difflib.get_close_matches(unknown or "", allowed, n=1)), "")
            raise argparse.ArgumentTypeError(
                f"unknown {what} {unknown if unknown is not None else text!r} "
                f"({hint}expected some of: {', '.join(allowed)})")
        return names
    return parse


def check_options(args: argparse.Namespace) -> None:
    """Options that cannot work together, or values out of range: refused, never ignored."""
    given = lambda name: getattr(args, name) is not None  # noqa: E731
    if args.spec:
        clash = [name for name in ("count", "seed", "problem", "versions", "key_file", *DRAW_OPTIONS)
                 if given(name)] + [flag for flag in ("practice", "no_calculator")
                                    if getattr(args, flag)]
        if clash:
            raise UsageError(f"--spec solves the file's problems as written; it takes no "
                             f"--{clash[0].replace('_', '-')}")
    if args.record and args.problem is None:
        clash = [name for name in ("spec", "count", "minutes", "marks", "seed", "versions",
                                   "key_file", *DRAW_OPTIONS) if given(name)]
        clash += [flag for flag in ("practice", "no_calculator") if getattr(args, flag)]
        if clash:
            raise UsageError(f"--record without --problem sets the whole exam again as it was "
                             f"set; it takes no --{clash[0].replace('_', '-')}")
    if args.practice and args.key_file:
        raise UsageError("--practice draws without the exam key; it takes no --key-file")
    if args.problem is not None:
        if not args.problem.strip():
            raise UsageError("--problem needs an id, such as M42-7")
        if EXAM_CODE.match(args.problem.strip()) and not args.record:
            raise UsageError(f"--problem {args.problem.strip()} is an exam's code: only its record "
                             f"can set it again; add --record with that run's problems.json")
        if given("count") or given("seed") or given("versions") or args.students:
            raise UsageError("--problem ID draws one problem named by its id; it takes no "
                             "--count, --seed, --versions or --students")
        clash = [name for name in (*DRAW_OPTIONS, "key_file") if given(name)]
        if args.record and clash:
            raise UsageError(f"--record sets the problem exactly as it was set; it takes no "
                             f"--{clash[0].replace('_', '-')}")
    if sum(given(name) for name in ("count", "minutes", "marks")) > 1:
        raise UsageError("give one of --count, --minutes and --marks: each sets the length")
    if (given("minutes") or given("marks")) and (args.spec or args.problem is not None):
        raise UsageError("--minutes and --marks size a drawn set; they take no --spec or --problem")
    for name, low, high in (("versions", 1, MAX_STUDENTS), ("count", 1, MAX_COUNT),
                            ("minutes", 1, 10_000), ("marks", 1, 10_000),
                            ("seed", 0, MAX_SEED), ("decimals", 0, MAX_DECIMALS)):
        value = getattr(args, name)
        if value is not None and not low <= value <= high:
            raise UsageError(f"--{name} must be a whole number from {low} to {high}, got {value}")
    if args.templates:
        check_folder(args.templates, "--templates")
    if args.pdf:
        require_tex()


def entry() -> None:
    """The console script: run, then leave without tearing down the interpreter.

    Every file is written and closed by then; freeing sympy's many objects one by
    one at exit would add a tenth of a second to every run.
    """
    gc.freeze()  # what the imports made is never garbage: never look at it again
    gc.set_threshold(100_000, 50, 100)  # sympy makes many short-lived cycles: collect rarely
    code = main()
    for stop in STOPS:  # the run has ended and said so: a stop now would only garble that
        signal.signal(stop, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
