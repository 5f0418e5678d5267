"""Same bytes before and after a change: a fixed matrix of runs, made by two source trees.

    .venv/bin/python scripts/compare_runs.py BASE_REV [--only NAME ...]

Checks out BASE_REV into a temporary git worktree, runs every command of ``MATRIX`` with
that tree's ``generator`` and with this one's (each as ``python -m generator.cli``, the same
venv), and compares every file of the two output folders byte for byte.  Prints one line a
run and exits 1 if any file differs.  A refactoring that claims to change no output runs
this against the commit before it.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROSTER = "tests/rosters/international.csv"
KEY = "exam.key"  # made in each run's scratch folder, the same bytes for both trees

# name -> the command line's options (the output folder is added); every type, versions,
# a roster, every format, with and without PDFs, a large class (forked and in-step work)
# and --jobs 1 where the tree has it.
MATRIX = {
    "default-mix": "--count 20 --seed 7 --practice --format md,json,html,moodle,qti",
    "every-type": "--types full,row,mistake,permute,masked,heads,concept,backward,"
                  "softmax-jacobian --count 9 --seed 12 --practice --format html,moodle,qti",
    "exam-versions": f"--count 4 --seed 11 --versions 3 --key-file {KEY} --format html,moodle,qti",
    "roster": f"--count 3 --seed 5 --students {ROSTER} --key-file {KEY} --format qti",
    "midterm-pdf": f"--minutes 50 --seed 3 --no-calculator --key-file {KEY} --pdf",
    "hard-pdf": "--count 4 --seed 2 --difficulty hard --practice --pdf --format html",
    "spec-file": "--spec examples/module05.toml --pdf --format md,json",
    "two-places": "--count 6 --seed 9 --decimals 2 --practice --format html,moodle",
    "large-class": f"--count 3 --seed 1 --versions 40 --key-file {KEY} --format md,json,html",
    "large-set": "--count 200 --seed 4 --practice --format json,html,moodle",
}


def run(tree: Path, options: str, out: Path) -> str:
    """One run of the tree's generator; its exit code and last line of standard error."""
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    words = options.split()  # the key and the output folder are named relative to the run's
    words = [str(ROOT / w) if w.startswith(("tests/", "examples/")) else w for w in words]
    done = subprocess.run([sys.executable, "-m", "generator.cli", *words, "--out", out.name],
                          cwd=out.parent, env=environment, capture_output=True, text=True)
    return f"{done.returncode} {done.stderr.strip().splitlines()[-1:]}"


def differing(left: Path, right: Path) -> list[str]:
    names = sorted({p.relative_to(left) for p in left.rglob("*") if p.is_file()}
                   | {p.relative_to(right) for p in right.rglob("*") if p.is_file()})
    return [str(name) for name in names
            if not ((left / name).is_file() and (right / name).is_file()
                    and filecmp.cmp(left / name, right / name, shallow=False))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("--only", nargs="*", default=list(MATRIX))
    parser.add_argument("--extra", default="", help="options added to this tree's runs only "
                                                    "(e.g. --jobs 1)")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            for name in args.only:
                folders = []
                for label, tree, extra in (("before", base, ""), ("after", ROOT, args.extra)):
                    work = Path(scratch) / label / name
                    work.mkdir(parents=True)
                    (work / KEY).write_text("ab" * 32 + "\n")
                    (work / KEY).chmod(0o600)
                    said = run(tree, f"{MATRIX[name]} {extra}", work / "out")
                    folders.append((work / "out", said))
                (left, said_left), (right, said_right) = folders
                changed = differing(left, right)
                failed |= bool(changed) or said_left[0] != said_right[0]
                print(f"{name}: {'same bytes' if not changed else 'DIFFER: ' + ', '.join(changed[:8])}"
                      f" ({len(list(left.rglob('*')))} paths; exit {said_left[0]}/{said_right[0]})")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
