"""Benchmarks: print how fast gen-problems is on this machine. They assert nothing.

    .venv/bin/python benchmarks/run_benchmarks.py [--repeat 5]

(a) wall time of `gen-problems --count 20 --pdf`;
(b) the floor no TeX-based tool can beat: one pdflatex pass over each of the two
    .tex files that run wrote, both at once; and a/b.
Then 200 problems with --pdf, 1,000 medium and 1,000 hard without, and 200
versions of a 3-problem paper with --pdf (one TeX run per document, then split),
each with its peak memory (max RSS). Last, a class of 30 with Latin names (pdflatex)
against a class of 30 with names in a dozen scripts (LuaLaTeX), and their ratio.
"""

from __future__ import annotations

import argparse
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


def timed(commands: list[list[str]], cwd: Path | None = None) -> tuple[float, int]:
    """Start the commands at once; wall seconds until all end, and their peak RSS in MB."""
    start = time.perf_counter()
    processes = [subprocess.Popen(c, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for c in commands]
    peak_kb = 0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"failed: {' '.join(map(str, process.args))}")
        peak_kb = max(peak_kb, usage.ru_maxrss)
    return time.perf_counter() - start, peak_kb // 1024


def generate(folder: Path, count: int, pdf: bool, seed: int = 1, *extra: str) -> tuple[float, int]:
    command = [str(GEN_PROBLEMS), "--count", str(count), "--seed", str(seed), "--out", str(folder)]
    return timed([command + (["--pdf"] if pdf else []) + list(extra)])


def tex_floor(tex_folder: Path) -> float:
    """One pdflatex pass over questions.tex and answers.tex, both at once, in a fresh folder."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("questions.tex", "answers.tex"):
            shutil.copy(tex_folder / name, scratch)
        return timed([["pdflatex", *TEX_FLAGS, name] for name in ("questions.tex", "answers.tex")],
                     cwd=Path(scratch))[0]


LATIN_NAMES = ["Ada Lovelace", "Zoë Ångström", "Jürgen Müller", "Dvořák Łukasz", "José Núñez"]
WORLD_NAMES = ["Nguyễn Thị Minh Khai", "Αλέξανδρος Παπαδόπουλος", "Анна Каренина", "王小明",
               "山田 太郎", "김민준", "محمد علي", "अर्जुन शर्मा", "דוד לוי", "Zoë Ångström"]


def roster(folder: Path, names: list[str], size: int = 30) -> Path:
    path = folder / f"roster-{len(names)}.csv"
    rows = [f"s{i:03d},{names[i % len(names)]} {i}" for i in range(size)]
    path.write_text("id,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def classes(work: Path, repeat: int) -> None:
    """The same 3-problem paper for 30 students: Latin names, then names in every script."""
    medians = {}
    for label, names in (("Latin", LATIN_NAMES), ("international", WORLD_NAMES)):
        students = str(roster(work, names))
        generate(work / "class", 3, True, 1, "--students", students)  # warm font caches
        medians[label] = statistics.median(
            generate(work / "class", 3, True, 1, "--students", students)[0] for _ in range(repeat))
        print(f"    30 students, {label + ' names,':22s} --pdf      {medians[label]:6.2f} s")
    print(f"    international / Latin                            "
          f"{medians['international'] / medians['Latin']:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is shown")
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "out"
        generate(out, 20, pdf=True)  # warm the disk cache and TeX's font maps
        runs = [generate(out, 20, pdf=True, seed=1)[0] for _ in range(repeat)]
        floors = [tex_floor(out) for _ in range(repeat)]
        a, b = statistics.median(runs), statistics.median(floors)
        print(f"(a) gen-problems --count 20 --pdf      {a:6.3f} s   (median of {repeat})")
        print(f"(b) pdflatex floor, both .tex at once  {b:6.3f} s")
        print(f"    a/b                                {a / b:6.2f}")
        for count, pdf, extra in ((200, True, ()), (1000, False, ()),
                                  (1000, False, ("--difficulty", "hard")),
                                  (3, True, ("--versions", "200"))):
            seconds, peak = generate(Path(work) / "big", count, pdf, 1, *extra)
            label = f"gen-problems --count {count}{' --pdf' if pdf else ''} {' '.join(extra)}"
            print(f"    {label:48s}{seconds:6.2f} s   peak {peak} MB")
        classes(Path(work), repeat)


if __name__ == "__main__":
    main()
