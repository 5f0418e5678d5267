"""The command line, ``gen-problems``: it only wires the stages together.

specs (random or a teacher's file) -> solve + cross-check -> render -> write.
Everything is solved and rendered before the first file is written, so a bad
input leaves the output folder as it was.  User errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import gc
import os
import secrets
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2

from .crosscheck import CrossCheckError, check_product, cross_check
from .exact import to_float
from .export import problems_json
from .output import write_outputs
from .paper import Paper, answer_keys, question_papers
from .pdf import TexError, TexMissing, build_pdfs
from .questions import Question, build_question
from .render import DocumentInfo, render_latex, render_markdown
from .roster import MAX_STUDENTS, load_roster
from .web import render_moodle, render_practice
from .sampling import EMBEDDINGS, MASK_CHOICES, PRESETS, WEIGHTS, draw_options, sample_problem, sample_set
from .spec import QUESTION_TYPES, ProblemSpec, SpecError, load_spec_file, read_user_file

MAX_COUNT = 2000
MAX_DECIMALS = 10
MAX_HEADER_TEXT = 500
MAX_TOTAL_PROBLEMS = 5000
PRINTABLE = {"md": "answers.md", "json": "problems.json"}  # --format that print to the terminal
FORMATS = ("html", "moodle", *PRINTABLE)
HEADER_FIELDS = ("title", "course", "date", "instructions")


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
    source.add_argument("--seed", type=int, metavar="S",
                        help="seed of the random draw; the same seed gives the same set")
    source.add_argument("--problem", metavar="ID",
                        help="draw again the one problem with this id (e.g. M42-7), same options")
    source.add_argument("--versions", type=int, metavar="N",
                        help="N different versions of the set, each with its own key")
    source.add_argument("--students", type=Path, metavar="CSV",
                        help="a roster (columns id, name): one named paper per student")
    draw = parser.add_argument_group("what random problems look like (a preset, then overrides)")
    draw.add_argument("--difficulty", choices=list(PRESETS), default="medium",
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
    draw.add_argument("--types", type=comma_list(QUESTION_TYPES, "question type"), metavar="T,T,...",
                      help="question types, taken in turn: " + ", ".join(QUESTION_TYPES)
                           + " (default: all of them; 'full' alone: the whole pipeline only)")
    output = parser.add_argument_group("what to write")
    output.add_argument("--out", type=Path, default=Path("out"), metavar="DIR",
                        help="output folder (default: out/)")
    output.add_argument("--format", type=comma_list(FORMATS, "format"), action="extend", default=[],
                        metavar="FMT[,FMT]",
                        help="html: a self-check practice page; moodle: a Moodle XML question "
                             "bank; md or json: also print the answer key or the JSON here")
    output.add_argument("--decimals", type=int, default=4, metavar="N",
                        help="decimal places shown (default 4); computing is always exact")
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
        return run(build_parser().parse_args(argv))
    except (UsageError, SpecError, TexMissing) as error:
        print(f"gen-problems: error: {error}", file=sys.stderr)
        return 2
    except jinja2.TemplateError as error:  # a teacher's --templates with a mistake in it
        where = f" ({error.filename}, line {error.lineno})" if hasattr(error, "lineno") else ""
        print(f"gen-problems: error: template: {error.message}{where}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"gen-problems: error: cannot write the outputs: {error}", file=sys.stderr)
        return 1
    except (TexError, CrossCheckError) as error:
        print(f"gen-problems: {error}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    check_options(args)
    info_fields = header_fields(args)
    students = load_roster(args.students) if args.students else None
    seed = args.seed if args.seed is not None else secrets.randbelow(10**6)
    sets = {version: [solve_checked(spec) for spec in progress(specs, "solving")]
            for version, specs in problem_sets(args, seed, students).items()}
    versioned = bool(args.versions or students)
    questions, keys = question_papers(sets, students), answer_keys(sets)
    drawn = not (args.spec or args.problem)
    info = DocumentInfo(**info_fields, seed=seed if drawn else None, decimals=args.decimals,
                        draw_command=draw_command(args, seed) if drawn else "", versioned=versioned)
    documents = render_latex(questions, keys, info, args.templates)
    with ThreadPoolExecutor(max_workers=1) as background:
        # TeX runs in its own processes while Python renders the other formats.
        pdfs = (background.submit(pdfs_with_progress, dict(documents), questions if versioned else None)
                if args.pdf else None)
        documents.update({"problems.json": problems_json(sets, info, questions if versioned else None),
                          **render_markdown(questions, keys, info, args.templates)})
        if "html" in args.format:
            documents.update(render_practice(keys, info, args.templates))
        if "moodle" in args.format:
            documents["moodle.xml"] = render_moodle(keys, info, args.templates)
        if pdfs:
            documents.update(pdfs.result())
    for name in args.format:
        if name in PRINTABLE:
            print(documents[PRINTABLE[name]], end="")
    paths = write_outputs(args.out, documents, owned_folders=("papers", "keys", "practice"))
    count = sum(len(solutions) for solutions in sets.values())
    print(f"wrote {count} problems, {len(paths)} files, to {args.out}"
          + (f" (seed {seed})" if drawn else ""), file=sys.stderr)
    return 0


def problem_sets(args, seed: int, students) -> dict[int, list[ProblemSpec]]:
    """The specs of each version: one version unless --versions or a roster asks for more."""
    if args.spec:
        return {1: load_spec_file(args.spec)}
    versions = args.versions or (len(students) if students else 1)
    if versions * (args.count or 20) > MAX_TOTAL_PROBLEMS:
        raise UsageError(f"{versions} versions of {args.count or 20} problems is more than "
                         f"{MAX_TOTAL_PROBLEMS} problems in one run")
    return {version: draw_specs(args, seed, version) for version in range(1, versions + 1)}


def token_range(text: str) -> tuple[int, int]:
    """'3' -> (3, 3); '2-4' -> (2, 4)."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or a range such as 2-4, got {text!r}") from None


def comma_list(allowed: tuple[str, ...], what: str):
    """An argparse type: 'a,b' -> ('a', 'b'), each one of ``allowed``."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(name.strip() for name in text.split(",") if name.strip())
        unknown = [name for name in names if name not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} {unknown[0] if unknown else text!r} "
                                             f"(expected some of: {', '.join(allowed)})")
        return names
    return parse


def draw_specs(args: argparse.Namespace, seed: int, version: int = 1) -> list[ProblemSpec]:
    options = draw_options(args.difficulty, decimals=args.decimals, tokens=args.tokens,
                           d_model=args.d_model, d_k=args.dk, d_v=args.dv,
                           embeddings=args.embeddings, weights=args.weights, mask=args.mask)
    types = args.types or QUESTION_TYPES
    if args.problem:
        return [sample_problem(options, args.problem, types)]
    return sample_set(options, seed, args.count or 20, version, types)


def draw_command(args: argparse.Namespace, seed: int) -> str:
    """The options that fix a random set, so the documents can say how to draw it again."""
    words = [f"--seed {seed}", f"--count {args.count or 20}", f"--difficulty {args.difficulty}"]
    if args.tokens:
        words.append(f"--tokens {args.tokens[0]}-{args.tokens[1]}")
    for name in ("d_model", "dk", "dv", "embeddings", "weights", "mask", "versions", "students"):
        if getattr(args, name) is not None:
            words.append(f"--{name.replace('_', '-')} {getattr(args, name)}")
    if args.types:
        words.append(f"--types {','.join(args.types)}")
    return "gen-problems " + " ".join(words)


def progress(items, label: str):
    """A progress bar on stderr when it is a terminal and the work is long; else nothing."""
    if not sys.stderr.isatty() or len(items) < 50:
        return items
    from tqdm import tqdm  # imported only when shown: it is a fifth of a short run's start-up
    return tqdm(items, desc=label, unit="problem", leave=False)


def pdfs_with_progress(sources: dict[str, str], questions: list[Paper] | None) -> dict[str, bytes]:
    """build_pdfs, with a progress bar of the TeX runs when stderr is a terminal."""
    if not sys.stderr.isatty():
        return build_pdfs(sources, questions)
    from tqdm import tqdm
    with tqdm(total=len(sources), desc="compiling PDFs", unit="file", leave=False) as bar:
        return build_pdfs(sources, questions, on_done=lambda name: bar.update())


def header_fields(args: argparse.Namespace) -> dict[str, str]:
    """Header texts: from --config first, then each option given on the command line."""
    fields = load_header_config(args.config) if args.config else {}
    fields.update({name: getattr(args, name) for name in HEADER_FIELDS
                   if getattr(args, name) is not None})
    for name, text in fields.items():
        if not isinstance(text, str) or len(text) > MAX_HEADER_TEXT:
            raise UsageError(f"{name} must be text of at most {MAX_HEADER_TEXT} characters")
    return fields


def load_header_config(path: Path) -> dict[str, str]:
    text = read_user_file(path, "the header config")
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"--config {path}: not a readable TOML file ({error})") from None
    unknown = sorted(set(config) - set(HEADER_FIELDS))
    if unknown:
        raise UsageError(f"--config {path}: unknown key {unknown[0]!r} "
                         f"(known: {', '.join(HEADER_FIELDS)})")
    return config


def check_options(args: argparse.Namespace) -> None:
    if args.spec and (args.count is not None or args.seed is not None or args.problem):
        raise UsageError("--spec solves the file's problems; it takes no --count, --seed or --problem")
    if args.problem and (args.count is not None or args.seed is not None):
        raise UsageError("--problem ID names its own seed; it takes no --count or --seed")
    if args.versions is not None and (args.spec or args.problem):
        raise UsageError("--versions draws new problems; it takes no --spec or --problem")
    if args.students and args.problem:
        raise UsageError("--students makes a paper per student; it takes no --problem")
    if args.versions is not None and not 1 <= args.versions <= MAX_STUDENTS:
        raise UsageError(f"--versions must be between 1 and {MAX_STUDENTS}, got {args.versions}")
    if args.count is not None and not 1 <= args.count <= MAX_COUNT:
        raise UsageError(f"--count must be between 1 and {MAX_COUNT}, got {args.count}")
    if not 0 <= args.decimals <= MAX_DECIMALS:
        raise UsageError(f"--decimals must be between 0 and {MAX_DECIMALS}, got {args.decimals}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: not a folder")
    if args.templates and not args.templates.is_dir():
        raise UsageError(f"--templates {args.templates}: no such folder")


def solve_checked(spec: ProblemSpec) -> Question:
    """Build the question, then hold every solution in it against the independent
    numpy pipeline (mistakes included), and the heads' projection too."""
    question = build_question(spec)
    for solution, mistake in question.solutions():
        scale = None if solution.spec.scale is None else to_float(solution.spec.scale)
        cross_check({step.name: step.numeric for step in solution.steps},
                    solution.spec.mask, scale, mistake)
    if question.heads:
        steps = question.named_steps()
        check_product(steps["concat"].numeric, steps["W_O"].numeric, steps["projected"].numeric)
    return question


def entry() -> None:
    """The console script: run, then leave without tearing down the interpreter.

    Every file is written and closed by then; freeing sympy's many objects one by
    one at exit would add a tenth of a second to every run.
    """
    gc.disable()  # short-lived process: collecting sympy's cycles only costs time
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
