"""What a run is asked to do: one frozen ``Options``, for Python and the command line alike.

``generate(Options(...))`` (``generator.api``) makes a set; ``gen-problems`` only turns its
flags into an ``Options``.  Every option is declared once, in ``OPTIONS``: its field, its
flag, how its text is read, its help, and its part in three rules that follow from it:

- which inputs refuse it (``refused_by``): a spec file or an exam's record fixes what a
  random draw would choose, so an option that shapes the draw is refused beside it;
- whether the command that draws the set again, printed on the key, writes it (``redraw``);
- whether it is a text of the documents' header (``header``).

The parser (``cli.build_parser``), the clashes ``Options.checked`` refuses and the redraw
command (``pipeline.draw_command``) all read this one table.  A bad value or a clash is a
``UsageError`` of one line, the same from Python as from the command line.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from generator.kinds import default_mix, type_names
from generator.kinds.sampling import EMBEDDINGS, MASK_CHOICES, MAX_SEED, PRESETS, WEIGHTS
from generator.maths.exact import parse_exact
from generator.rendering.paper import HEADER_FIELDS
from generator.running.inputs import check_folder
from generator.running.roster import MAX_STUDENTS

if TYPE_CHECKING:
    import sympy

DEFAULT_COUNT = 20
DEFAULT_DECIMALS = 4
MAX_COUNT = 2000
MAX_DECIMALS = 10
MAX_LENGTH = 10_000  # --minutes and --marks
MAX_JOBS = 1024
EXAM_CODE = re.compile(r"^[A-Z2-7]{4}-[A-Z2-7]{4}$", re.IGNORECASE)


class UsageError(Exception):
    """A bad option, or options that cannot go together; the message is one line for the user."""


# --- how a flag's text is read ---------------------------------------------------------------

def token_range(text: str) -> tuple[int, int]:
    """'3' -> (3, 3); '2-4' -> (2, 4)."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise UsageError(f"expected a number or a range such as 2-4, got {text!r}") from None


def scale_value(text: str):
    """--scale: an exact positive number, as a spec file's scale (1, 1/2, sqrt(2)/4)."""
    try:
        value = parse_exact(text)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if not value.is_positive:
        raise UsageError(f"must be positive, got {text!r}")
    return value


def seconds(text: str) -> float:
    """--progress: a number of seconds, 0 or more (5, 0.5)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"expected a number of seconds, 0 or more, got {text!r}")
    return value


LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}")


def language_tag(text: str) -> str:
    """--lang: a BCP 47 tag (en, de, zh-Hans); whether a catalogue has it is asked later."""
    if not LANGUAGE_TAG.fullmatch(text):
        raise UsageError(f"expected a language tag such as de or zh-Hans, got {text!r}")
    return text


def comma_list(allowed: Callable[[], tuple[str, ...]], what: str,
               instead: dict[str, str] | None = None) -> Callable[[str], tuple[str, ...]]:
    """A reader: 'a,b' -> ('a', 'b'), each one of ``allowed()`` (asked when read: a type or a
    format registered later counts); an unknown name is answered with the closest allowed
    one (difflib), or with what ``instead`` says to use."""
    def names(text: str) -> tuple[str, ...]:
        known = allowed()
        listed = tuple(name.strip() for name in text.split(",") if name.strip())
        unknown = next((name for name in listed if name not in known), None)
        if unknown is not None or not listed:
            hint = (instead or {}).get(unknown or "") or next(
                (f"did you mean {close!r}? " for close in
                 difflib.get_close_matches(unknown or "", known, n=1)), "")
            raise UsageError(f"unknown {what} {unknown if unknown is not None else text!r} "
                             f"({hint}expected some of: {', '.join(known)})")
        return listed
    return names


def format_names() -> tuple[str, ...]:
    """What --format takes: every format a run writes only when asked, and those it prints."""
    from generator.formats import FORMATS  # the drivers import this module's neighbours: asked late
    return tuple(d.name for d in FORMATS.values() if not d.always or d.prints)


def format_help() -> str:
    """--format's help: each format's name and what it writes."""
    from generator.formats import FORMATS
    return "; ".join(f"{name}: {FORMATS[name].help}" for name in format_names())


def types_help() -> str:
    """--types's help: the registered types and the default mix."""
    return ("question types, taken in turn: " + ", ".join(type_names()) + " (default: "
            + ", ".join(default_mix()) + "; 'full' alone: the whole pipeline only)")


# Formats --format does not take, and what gives them: the answer to a guess, not a list.
FORMAT_INSTEAD = {"pdf": "the PDFs come with --pdf, not --format pdf; ",
                  **{name: "the .tex files are always written, and --pdf compiles them; "
                     for name in ("tex", "latex")}}


# --- the declarations ----------------------------------------------------------------------

# The sections of --help, in order.
WHICH = "which problems"
DRAW = "what random problems look like (a preset, then overrides)"
WRITE = "what to write"
HEADER = "document header (or all at once from --config)"
RUN = "how to run"
SECTIONS = (WHICH, DRAW, WRITE, HEADER, RUN)

# The inputs that fix what a random draw would choose; each refuses the options that would.
SPEC_FILE = "--spec solves the file's problems as written"
WHOLE_RECORD = "--record without --problem sets the whole exam again as it was set"
RECORDED_PROBLEM = "--record sets the problem exactly as it was set"
WHICH_DRAW = (SPEC_FILE, WHOLE_RECORD)  # which random problems, and how many
SHAPE = (SPEC_FILE, WHOLE_RECORD, RECORDED_PROBLEM)  # what each random problem looks like


def _as_given(value):
    return value


@dataclass(frozen=True)
class Option:
    """One option of a run: a field of ``Options`` and the flag that sets it."""

    name: str  # the field of Options
    flag: str
    section: str  # its heading in --help
    help: str | Callable[[], str]  # a callable: worked out when asked (registered types)
    read: Callable[[str], object] | None = None  # the flag's text -> the value; None: a switch
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    bounds: tuple[int, int] | None = None  # a whole number from ... to ...
    listed: bool = False  # a comma-separated list of names, each checked by ``read``
    repeated: bool = False  # the flag may come again, adding to the list
    refused_by: tuple[str, ...] = ()  # the inputs that fix what it would choose (see above)
    redraw: bool = False  # the redraw command writes it, when the run has it
    unwritten: object = None  # a value the redraw command leaves out (the one the run takes)
    # its value as the redraw command writes it; the value's type is the option's own (Any)
    shown: Callable[[Any], object] = _as_given
    header: bool = False  # a text of the documents' header

    @property
    def switch(self) -> bool:
        """Whether the flag takes no value (a switch)."""
        return self.read is None

    def help_text(self) -> str:
        """The option's help, worked out now where it is a callable."""
        return self.help() if callable(self.help) else self.help

    def parsed(self, text: str):
        """The value of ``text``, read as the flag reads it; the command line's message if
        it cannot be."""
        assert self.read is not None, f"{self.flag} is a switch: it reads no text"
        try:
            return self.read(text)
        except UsageError as error:
            raise UsageError(f"argument {self.flag}: {error}") from None
        except ValueError:
            raise UsageError(f"argument {self.flag}: invalid {self.read.__name__} value: "
                             f"{text!r}") from None


# Every option, in the order the redraw command writes them (``pipeline.draw_command``);
# --help shows each section's options in this order.
OPTIONS = (
    Option("spec", "--spec", WHICH, "solve the problems in this TOML or JSON file instead of "
           "drawing them", Path, "FILE", refused_by=(WHOLE_RECORD,)),
    Option("record", "--record", WHICH, "an exam's problems.json: set the whole exam again as it "
           "was (every version, its header), or with --problem one problem of it", Path, "FILE"),
    Option("problem", "--problem", WHICH, "set again the one problem with this code or id, from "
           "the exam's record (--record), or a practice id such as M42-7", str, "CODE",
           refused_by=(SPEC_FILE,)),
    Option("seed", "--seed", WHICH, "seed of the random draw; the same seed gives the same set",
           int, "S", bounds=(0, MAX_SEED), refused_by=WHICH_DRAW, redraw=True),
    Option("count", "--count", WHICH, f"how many random problems to draw (default "
           f"{DEFAULT_COUNT})", int, "N", bounds=(1, MAX_COUNT), refused_by=WHICH_DRAW,
           redraw=True),
    Option("minutes", "--minutes", WHICH, "instead of --count: as many problems as fit in N "
           "minutes of working by hand (the estimate the papers print)", int, "N",
           bounds=(1, MAX_LENGTH), refused_by=(WHOLE_RECORD,), redraw=True),
    Option("marks", "--marks", WHICH, "instead of --count: as many problems as fit in N marks",
           int, "N", bounds=(1, MAX_LENGTH), refused_by=(WHOLE_RECORD,), redraw=True),
    Option("difficulty", "--difficulty", DRAW, "easy: 2 one-hot tokens; medium: 3 tokens, small "
           "integers, d_k = 4; hard: two-place decimals, 3-5 tokens, some masked (default medium)",
           str, choices=tuple(PRESETS), refused_by=SHAPE, redraw=True),
    Option("practice", "--practice", WHICH, "a practice set: readable ids (M42-7) and the seed on "
           "the papers, so anyone can draw it again; without it papers show only codes",
           refused_by=WHICH_DRAW, redraw=True),
    Option("key_file", "--key-file", WHICH, "the exam key that seeds exams' draws (default: made "
           "on first use in ~/.config/gen-problems/exam.key)", Path, "FILE", refused_by=SHAPE,
           redraw=True),
    Option("tokens", "--tokens", DRAW, "tokens per problem, a number or a range such as 2-4",
           token_range, "N|A-B", refused_by=SHAPE, redraw=True,
           shown=lambda tokens: f"{tokens[0]}-{tokens[1]}"),
    Option("d_model", "--d-model", DRAW, "embedding width", int, "N", refused_by=SHAPE,
           redraw=True),
    Option("d_k", "--dk", DRAW, "width of queries and keys", int, "N", refused_by=SHAPE,
           redraw=True),
    Option("d_v", "--dv", DRAW, "width of values", int, "N", refused_by=SHAPE, redraw=True),
    Option("embeddings", "--embeddings", DRAW, "kind of entries of X", str, choices=EMBEDDINGS,
           refused_by=SHAPE, redraw=True),
    Option("weights", "--weights", DRAW, "kind of weight matrices", str, choices=WEIGHTS,
           refused_by=SHAPE, redraw=True),
    Option("mask", "--mask", DRAW, "the mask: none, causal, padding, window (causal sliding "
           "window), causal+padding, or mixed (none or any of them)", str,
           choices=MASK_CHOICES, refused_by=SHAPE, redraw=True),
    Option("versions", "--versions", WHICH, "N different versions of the set, each with its own "
           "key", int, "N", bounds=(1, MAX_STUDENTS), refused_by=WHICH_DRAW, redraw=True),
    Option("students", "--students", WHICH, "a roster (columns id, name): one named paper per "
           "student", Path, "CSV", redraw=True),
    Option("types", "--types", DRAW, types_help, comma_list(type_names, "question type"),
           "T,T,...", listed=True, refused_by=SHAPE, redraw=True, shown=",".join),
    Option("scale", "--scale", DRAW, "scale the scores by C instead of 1/sqrt(d_k), e.g. 1 (raw "
           "dot products) or 1/2", scale_value, "C", refused_by=SHAPE, redraw=True),
    Option("no_calculator", "--no-calculator", DRAW, "every scaled score is 0, ±0.5, ±1, ±1.5 "
           "or ±2, and the sheet prints their exponentials: no calculator needed for e^x",
           refused_by=WHICH_DRAW, redraw=True),
    Option("out", "--out", WRITE, "output folder (default: out/)", str, "DIR"),
    # The shown decimals decide which draws are kept: the command writes any but the default.
    Option("decimals", "--decimals", WRITE, "decimal places shown (default 4, or the record's "
           "with --record); computing is always exact", int, "N", bounds=(0, MAX_DECIMALS),
           redraw=True, unwritten=DEFAULT_DECIMALS),
    Option("config", "--config", HEADER, "a TOML file with any of: " + ", ".join(HEADER_FIELDS),
           Path, "FILE", redraw=True),
    *(Option(name, f"--{name}", HEADER, f"the documents' {name}", str, "TEXT", redraw=True,
             header=True) for name in HEADER_FIELDS),
    Option("lang", "--lang", WRITE, "the documents' language: en (the default), de, fr, es, "
           "zh-Hans, or a teacher's catalogue (locales/CODE.po in the --templates folder)",
           language_tag, "CODE", redraw=True),
    Option("templates", "--templates", WRITE, "a folder of templates searched before the "
           "built-in ones", Path, "DIR", redraw=True),
    Option("formats", "--format", WRITE, format_help,
           comma_list(format_names, "format", FORMAT_INSTEAD), "FMT[,FMT]", listed=True,
           repeated=True, redraw=True, shown=lambda formats: ",".join(dict.fromkeys(formats))),
    Option("pdf", "--pdf", WRITE, "also compile questions.pdf and answers.pdf (needs pdflatex)",
           redraw=True),
    Option("jobs", "--jobs", RUN, "1: one thing after another, nothing forked, no threads, "
           "the PDFs compiled once the documents are written (the same files, later); N: at "
           "most N TeX runs, paper cutters and forked writers at once; default: as the cores "
           "allow", int, "N", bounds=(1, MAX_JOBS)),
    Option("progress", "--progress", RUN, "a plain line on stderr every S seconds saying how "
           "far the run is (on a terminal too, instead of the bar); 0: none; default: a bar on "
           "a terminal, elsewhere a line every 10 s once a run takes that long", seconds, "S"),
)
DECLARED = {option.name: option for option in OPTIONS}


def given(value) -> bool:
    """Whether an option's value was given: a switch that is on, a value that is not None,
    a list that is not empty."""
    return value is not None and value is not False and not (isinstance(value, tuple)
                                                               and not value)


@dataclass(frozen=True)
class Options:
    """Everything a run is asked to do; a field left out takes its default (None: the run's
    own choice, worked out as ``gen-problems`` works it out without the flag).

    Each field is the command line's option of the same name (``d_k`` is ``--dk``, ``formats``
    is ``--format``; see ``OPTIONS``).  A value given as text is read as its flag reads it
    (``types="full,row"``, ``tokens="2-4"``, ``scale="1/2"``, a path as a ``Path``), and a
    list becomes a tuple.  ``checked()`` refuses values out of range and options that cannot
    go together, with the command line's one-line messages; ``generate`` asks it first.
    """

    # What to draw: a preset, then overrides of it (None: the preset's).
    difficulty: str | None = None  # easy, medium (the default) or hard
    tokens: tuple[int, int] | None = None  # tokens per problem, fewest and most
    d_model: int | None = None
    d_k: int | None = None
    d_v: int | None = None
    embeddings: str | None = None  # one of sampling.EMBEDDINGS
    weights: str | None = None  # one of sampling.WEIGHTS
    mask: str | None = None  # one of sampling.MASK_CHOICES
    scale: sympy.Expr | None = None  # an exact positive number instead of 1/sqrt(d_k)
    no_calculator: bool = False  # scores whose exponentials the sheet prints
    types: tuple[str, ...] | None = None  # question types taken in turn (None: the default mix)

    # How many, and from where: drawn at random, a teacher's spec file, or an exam's record.
    count: int | None = None  # problems to draw (None: 20, or one per listed type)
    minutes: int | None = None  # instead of count: as many as fit in this many minutes
    marks: int | None = None  # instead of count: as many as fit in this many marks
    seed: int | None = None  # None: a random seed, reported in the Result
    spec: Path | None = None  # solve this TOML or JSON file's problems instead of drawing
    record: Path | None = None  # an exam's problems.json: set it (or ``problem`` of it) again
    problem: str | None = None  # one problem's code or practice id, set again

    # Versions and roster.
    versions: int | None = None  # different versions of the set, each with its own key
    students: Path | None = None  # a roster CSV: one named paper per student
    practice: bool = False  # readable ids and the seed on the papers; no exam key
    key_file: Path | None = None  # the exam key seeding exams' draws (None: the user's own)

    # Presentation.
    decimals: int | None = None  # places shown (None: 4, or the record's)
    lang: str | None = None  # the documents' language, a BCP 47 tag (None: en, or the record's)
    templates: Path | None = None  # a folder of templates searched before the built-in ones
    config: Path | None = None  # a TOML file of header texts
    title: str | None = None  # the header texts, each over the config's
    course: str | None = None
    institution: str | None = None
    date: str | None = None
    instructions: str | None = None

    # Outputs.
    out: str | Path = "out"  # the output folder
    formats: tuple[str, ...] = ()  # md, json, html, moodle, qti (the .tex and JSON always)
    pdf: bool = False  # also compile the PDFs (needs pdflatex)
    jobs: int | None = None  # 1: one thing after another; N: at most N workers of a kind
    progress: float | None = None  # seconds between progress lines; 0: none (None: see ``progress``)

    def __post_init__(self):
        for option in OPTIONS:
            value = getattr(self, option.name)
            if isinstance(value, str) and option.read not in (None, str):
                object.__setattr__(self, option.name, option.parsed(value))
            elif isinstance(value, list):
                object.__setattr__(self, option.name, tuple(value))

    def header_texts(self) -> dict[str, str | None]:
        """The header texts given one by one (each over the config's)."""
        return {option.name: getattr(self, option.name) for option in OPTIONS if option.header}

    def for_run(self, decimals: int = DEFAULT_DECIMALS, table: bool = False) -> Options:
        """The options a run goes by: ``decimals`` (a record's, or 4) unless --decimals is
        given, and --no-calculator where a record's documents printed a table of exponentials
        (``api.settings_from_record``)."""
        return replace(self, decimals=decimals if self.decimals is None else self.decimals,
                       no_calculator=self.no_calculator or table)

    def checked(self) -> Options:
        """These options, if every value is in range and they can work together; else a
        ``UsageError`` (an ``InputError`` for a --templates that is no folder, ``TexMissing``
        for --pdf without TeX) that says why in one line."""
        if self.spec:
            self._refuse_beside(SPEC_FILE)
        if self.record and self.problem is None:
            self._refuse_beside(WHOLE_RECORD)
        if self.practice and self.key_file:
            raise UsageError("--practice draws without the exam key; it takes no --key-file")
        if self.problem is not None:
            self._check_problem(self.problem)
        self._check_length()
        self._check_values()
        if self.progress is not None:  # a Python value, as the flag would read it
            DECLARED["progress"].parsed(str(self.progress))
        if self.templates:
            check_folder(self.templates, "--templates")
        if self.pdf:
            from generator.pdf.build import (
                require_tex,  # the PDF stack, loaded only by a run that asks for it
            )
            require_tex()
        return self

    def _given(self, name: str) -> bool:
        return given(getattr(self, name))

    def _refuse_beside(self, fixed: str) -> None:
        """Refuse every option that ``fixed`` (a spec file, a record) decides instead: the
        first given, values before switches."""
        clash = sorted((option for option in OPTIONS
                        if fixed in option.refused_by and self._given(option.name)),
                       key=lambda option: option.switch)
        if clash:
            raise UsageError(f"{fixed}; it takes no {clash[0].flag}")

    def _check_problem(self, problem: str) -> None:
        if not problem.strip():
            raise UsageError("--problem needs an id, such as M42-7")
        if EXAM_CODE.match(problem.strip()) and not self.record:
            raise UsageError(f"--problem {problem.strip()} is an exam's code: only its "
                             f"record can set it again; add --record with that run's "
                             f"problems.json")
        if any(self._given(name) for name in ("count", "seed", "versions", "students")):
            raise UsageError("--problem ID draws one problem named by its id; it takes no "
                             "--count, --seed, --versions or --students")
        if self.record:
            self._refuse_beside(RECORDED_PROBLEM)

    def _check_length(self) -> None:
        if sum(self._given(name) for name in ("count", "minutes", "marks")) > 1:
            raise UsageError("give one of --count, --minutes and --marks: each sets the length")
        if (self._given("minutes") or self._given("marks")) and (self.spec or
                                                                 self.problem is not None):
            raise UsageError("--minutes and --marks size a drawn set; they take no --spec or "
                             "--problem")

    def _check_values(self) -> None:
        """Each value as its flag would take it: whole numbers in range, one of the choices,
        known names (the command line has read them so already; Python's values too)."""
        for option in OPTIONS:
            value = getattr(self, option.name)
            if not given(value):
                continue
            if option.bounds and not (type(value) is int
                                      and option.bounds[0] <= value <= option.bounds[1]):
                raise UsageError(f"{option.flag} must be a whole number from "
                                 f"{option.bounds[0]} to {option.bounds[1]}, got {value}")
            if option.choices and value not in option.choices:
                raise UsageError(f"argument {option.flag}: invalid choice: {value!r} (choose "
                                 f"from {', '.join(map(repr, option.choices))})")
            if option.listed:
                option.parsed(",".join(value))
