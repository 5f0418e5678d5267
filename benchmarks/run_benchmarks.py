"""Benchmarks: how fast gen-problems is on this machine, as ratios.  They assert nothing.

    .venv/bin/python benchmarks/run_benchmarks.py [--repeat 5] [--class-size 500] [--large-repeat 3]

Each row is measured in one run, side by side with what it is compared with:
a PDF run against the TeX floor of the same documents (one plain pdflatex pass over
each .tex file that run wrote, both at once, in a fresh folder: no tool that uses TeX
can beat it), a run without PDFs against the `--count 20` run.  Peak memory is the
largest resident size of the run's processes (TeX's included).  Absolute times vary
twofold between machines; the ratios hold.  The goals are issue 15's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GEN_PROBLEMS = Path(sys.executable).with_name("gen-problems")
TEX_FLAGS = ["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"]
NAMES = ["Ada Lovelace", "Zoë Ångström", "Jürgen Müller", "Dvořák Łukasz", "José Núñez",
         "Grace Hopper", "Alan Turing"]
RADICALS = ["sqrt(2)", "sqrt(3)", "1/2", "-1", "sqrt(5)/2", "0", "1", "-sqrt(2)"]


def timed(commands: list[list[str]], cwd: Path | None = None) -> tuple[float, int]:
    """Start the commands at once; wall seconds until all end, and the peak RSS in MB of any
    of their processes (children included)."""
    start = time.perf_counter()
    processes = [subprocess.Popen(c, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for c in commands]
    peak_kb = 0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(map(str, process.args))}: "
                             f"{process.stderr.read().decode()[-500:]}")
        peak_kb = max(peak_kb, usage.ru_maxrss)
    return time.perf_counter() - start, peak_kb // 1024


def generate(folder: Path, *options: str) -> tuple[float, int]:
    return timed([[str(GEN_PROBLEMS), *options, "--out", str(folder)]])


def tex_floor(tex_folder: Path) -> float:
    """One pdflatex pass over questions.tex and answers.tex, both at once, in a fresh folder."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("questions.tex", "answers.tex"):
            shutil.copy(tex_folder / name, scratch)
        return timed([["pdflatex", *TEX_FLAGS, name] for name in ("questions.tex", "answers.tex")],
                      cwd=Path(scratch))[0]


def against_floor(repeat: int, folder: Path, *options: str) -> tuple[float, int, float]:
    """Runs of gen-problems, each followed at once by the TeX floor of the documents it
    wrote, so that a machine that slows down or speeds up moves both alike: the median
    run, the peak memory of all runs, and the median floor."""
    runs, floors = [], []
    for _ in range(repeat):
        runs.append(generate(folder, *options))
        floors.append(tex_floor(folder))
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), statistics.median(floors)


def roster(folder: Path, size: int) -> Path:
    path = folder / f"roster-{size}.csv"
    rows = [f"s{i:04d},{NAMES[i % len(NAMES)]} {i}" for i in range(size)]
    path.write_text("id,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def radical_spec(folder: Path, tokens: int = 12, dims: int = 16) -> Path:
    """A teacher's spec of entries with square roots, the same every time."""
    entries = iter(RADICALS[(i * 7 + i // 5) % len(RADICALS)] for i in range(10**6))
    matrix = lambda rows, columns: [[next(entries) for _ in range(columns)] for _ in range(rows)]  # noqa
    path = folder / "radicals.json"
    path.write_text(json.dumps({"X": matrix(tokens, dims), "W_Q": matrix(dims, dims),
                                "W_K": matrix(dims, dims), "W_V": matrix(dims, dims)}))
    return path


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(self, run: str, seconds: float, peak: int, compared: str, ratio: str, goal: str) -> None:
        self.rows.append((run, f"{seconds:.2f} s", f"{peak} MB", compared, ratio, goal))
        print(" | ".join(self.rows[-1]), file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = ("run", "time", "peak memory", "compared with", "ratio", "goal")
        lines = [head, ("---",) * len(head), *self.rows]
        return "\n".join("| " + " | ".join(row) + " |" for row in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per short figure (median)")
    parser.add_argument("--class-size", type=int, default=500, help="students in the roster row")
    parser.add_argument("--large-repeat", type=int, default=1,
                        help="runs per long figure (median): the class and hard-set rows")
    options = parser.parse_args()
    table = Table()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        out = work / "out"
        generate(out, "--count", "20", "--seed", "1", "--pdf")  # warm caches (and the TeX format)
        run, peak, floor = against_floor(options.repeat, out, "--count", "20", "--seed", "1", "--pdf")
        table.add("`--count 20 --pdf`", run, peak, f"TeX floor {floor:.2f} s",
                  f"{run / floor:.2f}x", "≤ 2.0x")
        size = options.class_size
        for count in (size // 5, size):
            students = roster(work, count)
            run, peak, floor = against_floor(options.large_repeat, work / "class", "--count", "3",
                                             "--seed", "1", "--pdf", "--students", str(students))
            papers = sum(p.stat().st_size for p in (work / "class" / "papers").glob("*.pdf"))
            combined = (work / "class" / "questions.pdf").stat().st_size
            table.add(f"`--count 3 --students` ({count} students) `--pdf`", run, peak,
                      f"TeX floor {floor:.2f} s; papers {papers / combined:.1f}x questions.pdf",
                      f"{run / floor:.2f}x", "≤ 1.5x; < 200 MB, flat in the class size")
        # The `--count 20` runs it is compared with are taken between its runs, so that a
        # machine that slows down or speeds up during the benchmark moves both alike.
        plains, hards = [], []
        for _ in range(options.large_repeat):
            plains += [generate(work / "c20", "--count", "20", "--seed", "1")[0]
                       for _ in range(options.repeat)]
            hards.append(generate(work / "hard", "--count", "1000", "--difficulty", "hard",
                                  "--seed", "1"))
        plain = statistics.median(plains)
        run, peak = statistics.median(t for t, _ in hards), max(m for _, m in hards)
        table.add("`--count 1000 --difficulty hard`", run, peak,
                  f"`--count 20` {plain:.2f} s", f"{run / plain:.1f}x", "≤ 15x; < 300 MB")
        run, peak = generate(work / "radicals", "--spec", str(radical_spec(work)))
        table.add("a teacher's spec, 12 tokens x 16 dims, square roots", run, peak, "–", "–",
                  "< 10 s, < 500 MB")
        small, _ = generate(work / "many", "--count", "200", "--seed", "1", "--pdf")
        run, peak = generate(work / "many", "--count", "2000", "--seed", "1", "--pdf")
        table.add("`--count 2000 --pdf`", run, peak, f"`--count 200 --pdf` {small:.2f} s",
                  f"{run / small:.1f}x for 10x the count", "linear; < 500 MB")
    print(table.markdown())


if __name__ == "__main__":
    main()
