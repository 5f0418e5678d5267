"""The command line, ``gen-problems``: flags in, an ``Options``; ``generate`` makes the set.

The run itself is the library's (``api.generate``): specs -> solve + cross-check -> render
-> write, the whole set replacing the earlier one at once.  This module turns the flags into
``Options`` (each flag declared once, in ``options.OPTIONS``), prints what the run made and
its notes, and turns every failure into one line: exit 2 for bad input (and for an installed
plugin that fails to load, ``plugins``), 1 when the outputs cannot be made or written or a
helper process of the run dies (``helpers``), 130 for Ctrl-C or SIGTERM; the earlier set is
left as it was.  141 only for a standard output closed once the set is written.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import signal
import sys
import threading

import jinja2

from generator.maths.crosscheck import CrossCheckError
from generator.maths.spec import SpecError
from generator.pdf.build import SplitError, TexMissing
from generator.rendering.teacher_text import one_line
from generator.running.api import Result, generate
from generator.running.helpers import HelperDied
from generator.running.inputs import InputError
from generator.running.options import OPTIONS, SECTIONS, Option, Options, UsageError
from generator.running.output import COMMITTING, OutputError, OutputRefused, describe
from generator.running.plugins import PluginError, load_plugins

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # as a tool killed by SIGPIPE


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (not usage + error) and exit code 2."""

    def error(self, message: str):
        """A usage error, raised as ``UsageError`` for ``main`` to print in one line."""
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """A flag for each option of ``OPTIONS``, under its section; a flag left out is not set,
    so that ``Options`` gives its default."""
    parser = OneLineParser(
        prog="gen-problems",
        description="Generate worked self-attention problems: question sheet, answer key, JSON.")
    groups = {section: parser.add_argument_group(section) for section in SECTIONS}
    for option in OPTIONS:
        groups[option.section].add_argument(option.flag, dest=option.name, help=option.help_text(),
                                            default=argparse.SUPPRESS, **_how_read(option))
    return parser


def _how_read(option: Option) -> dict:
    if option.switch:
        return {"action": "store_true"}
    return {"type": _flag_type(option), "metavar": option.metavar, "choices": option.choices,
            "action": "extend" if option.repeated else "store"}


def _flag_type(option: Option):
    """The option's reader as argparse's type: its one-line error as argparse's message."""
    def read(text: str):
        try:
            return option.read(text)
        except UsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    read.__name__ = option.read.__name__  # argparse's "invalid int value" names it
    return read


def parse_options(argv: list[str] | None = None) -> Options:
    """The options the flags give; the installed plugins are loaded first, so that the flags
    (--types, --format, and --help) know their types and formats."""
    load_plugins()
    return Options(**vars(build_parser().parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    """The command line, gen-problems, as an exit code: 0 written; 2 a usage, spec or template
    error, said in one line; 1 a failure of the run (the output folder, TeX, a cross-check, a
    helper process that died); 130 interrupted; 141 standard output closed (--format json |
    head), the files written."""
    try:
        with _stops_as_interrupts():
            return run(parse_options(argv))
    except KeyboardInterrupt:
        return main_interrupted()
    except (UsageError, SpecError, InputError, TexMissing, OutputRefused, PluginError) as error:
        print(f"gen-problems: error: {one_line(error)}", file=sys.stderr)
        return 2
    except jinja2.TemplateError as error:  # a teacher's --templates with a mistake in it
        print(f"gen-problems: error: {one_line(template_error(error))}", file=sys.stderr)
        return 2
    except StdoutClosed:  # --format json | head: the files are written; stop quietly
        sys.stdout = None
        return EXIT_BROKEN_PIPE
    except HelperDied as error:  # a Ctrl-C reaches TeX and the cutters too: the stop is said
        if STOP_REQUESTED.is_set():
            return main_interrupted()
        print(f"gen-problems: {one_line(error)}", file=sys.stderr)
        return 1
    except (OutputError, SplitError, CrossCheckError) as error:
        print(f"gen-problems: {one_line(error)}", file=sys.stderr)
        return 1
    except OSError as error:  # reading a template, a full disk: say which file and why
        print(f"gen-problems: error: {one_line(describe(error))}", file=sys.stderr)
        return 1


def main_interrupted() -> int:
    """Ctrl-C or SIGTERM: one line, whether the new set had landed, and exit 130."""
    print("gen-problems: interrupted; " + ("the new set had been written in full"
                                           if LANDED.is_set() else
                                           "the output folder is as it was"), file=sys.stderr)
    return EXIT_INTERRUPTED


class StdoutClosed(Exception):
    """The reader of standard output has gone (``| head``) after the set was written; any
    other closed pipe is a helper's (a TeX run's, a cutter's) and is not this."""


def run(options: Options) -> int:
    """Generate the set the options ask for, print what --format asks to the terminal, then the
    notes and a summary line on stderr."""
    result = generate(options, before_commit=_unless_stopped, after_commit=_landed)
    try:
        print_to_terminal(result.printed)
    except BrokenPipeError:
        raise StdoutClosed from None
    for note in result.notes:
        print(f"gen-problems: note: {note}", file=sys.stderr)
    print(summary(result), file=sys.stderr)
    return 0


def summary(result: Result) -> str:
    """The line a run ends with: how many problems and files, where, and the seed of a random set."""
    count, files = result.count, len(result.files)
    return (f"wrote {count} problem{'s' * (count != 1)}, {files} files, to {result.options.out}"
            + (f" (seed {result.seed})" if result.seed is not None else ""))


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


def template_error(error: jinja2.TemplateError) -> str:
    """A template's error in one line, with its file and line where Jinja knows them."""
    where = f" ({error.filename}, line {error.lineno})" if getattr(error, "lineno", None) else ""
    message = error.message or type(error).__name__
    return f"template: {message.splitlines()[0] if message else message}{where}"


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


def _landed() -> None:
    """The new set is in place: a stop from now on says so (and one that came while it was
    put in place stops the run now)."""
    LANDED.set()
    _unless_stopped()


def entry() -> None:
    """The console script: run, then leave without tearing down the interpreter.

    Every file is written and closed by then; freeing sympy's many objects one by
    one at exit would cost every run time for nothing (docs/performance.md).
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
