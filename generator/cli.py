"""The command line, ``gen-problems``: it only wires the stages together.

specs (random or a teacher's file) -> solve + cross-check -> render -> write.
Everything is solved and rendered before the first file is written, so a bad
input leaves the output folder as it was.  User errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path

from .crosscheck import CrossCheckError, cross_check
from .engine import Solution, solve
from .exact import to_float
from .export import problems_json
from .output import write_outputs
from .render import DocumentInfo, render_markdown
from .sampling import sample_specs
from .spec import ProblemSpec, SpecError, load_spec_file

MAX_COUNT = 2000
MAX_DECIMALS = 10
PRINTABLE = ("md", "json")


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
    output = parser.add_argument_group("what to write")
    output.add_argument("--out", type=Path, default=Path("out"), metavar="DIR",
                        help="output folder (default: out/)")
    output.add_argument("--format", action="append", default=[], metavar="FMT",
                        help="also print to the terminal: md (the worked answer key) or json")
    output.add_argument("--decimals", type=int, default=4, metavar="N",
                        help="decimal places shown (default 4); computing is always exact")
    output.add_argument("--title", default=DocumentInfo.title, help="title of the documents")
    output.add_argument("--templates", type=Path, metavar="DIR",
                        help="a folder of templates searched before the built-in ones")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return run(build_parser().parse_args(argv))
    except (UsageError, SpecError) as error:
        print(f"gen-problems: error: {error}", file=sys.stderr)
        return 2
    except CrossCheckError as error:
        print(f"gen-problems: internal error, the two solvers disagree: {error}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    check_options(args)
    seed = args.seed if args.seed is not None else secrets.randbelow(10**6)
    specs = load_spec_file(args.spec) if args.spec else sample_specs(args.count or 20, seed)
    solutions = [solve_checked(spec) for spec in specs]
    info = DocumentInfo(title=args.title, seed=None if args.spec else seed, decimals=args.decimals)
    documents = {"problems.json": problems_json(solutions, info),
                 **render_markdown(solutions, info, args.templates)}
    for name in args.format:
        print(documents["answers.md" if name == "md" else "problems.json"], end="")
    paths = write_outputs(args.out, documents)
    print(f"wrote {len(solutions)} problems to {', '.join(str(p) for p in paths)}"
          + ("" if args.spec else f" (seed {seed})"), file=sys.stderr)
    return 0


def check_options(args: argparse.Namespace) -> None:
    if args.spec and (args.count is not None or args.seed is not None):
        raise UsageError("--spec solves the file's problems; it takes no --count or --seed")
    if args.count is not None and not 1 <= args.count <= MAX_COUNT:
        raise UsageError(f"--count must be between 1 and {MAX_COUNT}, got {args.count}")
    if not 0 <= args.decimals <= MAX_DECIMALS:
        raise UsageError(f"--decimals must be between 0 and {MAX_DECIMALS}, got {args.decimals}")
    for name in args.format:
        if name not in PRINTABLE:
            raise UsageError(f"unknown --format {name!r} (expected one of: {', '.join(PRINTABLE)})")
    if args.templates and not args.templates.is_dir():
        raise UsageError(f"--templates {args.templates}: no such folder")


def solve_checked(spec: ProblemSpec) -> Solution:
    """Solve exactly, then hold every step against the independent numpy pipeline."""
    solution = solve(spec)
    scale = None if spec.scale is None else to_float(spec.scale)
    cross_check({step.name: step.numeric for step in solution.steps}, spec.mask, scale)
    return solution


if __name__ == "__main__":
    sys.exit(main())
