"""Benchmarks: how fast gen-problems is on this machine, as ratios.  They assert nothing.

    .venv/bin/python benchmarks/run_benchmarks.py [--repeat 5] [--class-size 500] [--large-repeat 3]
    .venv/bin/python benchmarks/run_benchmarks.py --modes [--repeat 3]
    .venv/bin/python benchmarks/run_benchmarks.py --international [--repeat 3] [--class-size 500]

Each row is measured in one run, side by side with what it is compared with:
a PDF run against the TeX floor of the same documents (one plain pdflatex pass over
each .tex file that run wrote, both at once, in a fresh folder: no tool that uses TeX
can beat it), a run without PDFs against the `--count 20` run.  Peak memory is the
largest resident size of the run's processes (TeX's included).  Absolute times vary
twofold between machines; the ratios hold.  The goals are issue 15's.

``--modes`` measures only the default way of doing a run's work against ``--jobs 1`` (one
thing after another), their runs alternating: a large set in every format but the quiz
package, with PDFs, and a class of 40 versions (read in step).

``--international`` measures a class whose names are in Chinese, Arabic and Devanagari
(typeset by LuaLaTeX, with fallback fonts) against a class of Latin names (pdflatex), their
runs alternating: the time ratio and each one's peak memory (issue 37's goal: within 2x,
under 500 MB).

A PDF row also gives the run's CPU time (all its processes) and the least time any
schedule of that work could take on this machine's cores: Python's start and imports
on one core, beside which only TeX can load its preambles (nothing else can begin
before the imports), then every other CPU-second spread evenly over all cores.  A goal
below that figure cannot be met by running the same work better, only by less work.
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
from dataclasses import dataclass
from pathlib import Path

GEN_PROBLEMS = Path(sys.executable).with_name("gen-problems")
TEX_FLAGS = ["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"]
BEGIN_DOCUMENT = "\\begin{document}"
NAMES = ["Ada Lovelace", "Zoë Ångström", "Jürgen Müller", "Dvořák Łukasz", "José Núñez",
         "Grace Hopper", "Alan Turing"]
RADICALS = ["sqrt(2)", "sqrt(3)", "1/2", "-1", "sqrt(5)/2", "0", "1", "-sqrt(2)"]


CORES = len(os.sched_getaffinity(0))
DOCUMENTS = ("questions.tex", "answers.tex")


@dataclass(frozen=True)
class Timed:
    seconds: float  # wall
    peak: int  # MB
    cpu: float  # seconds of user and system time, every process's


def timed(commands: list[list[str]], cwd: Path | None = None) -> Timed:
    """Start the commands at once; wall seconds until all end, the peak RSS in MB of any
    of their processes, and the CPU time of them all (children included: each process
    waits for its own)."""
    start = time.perf_counter()
    processes = [subprocess.Popen(c, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for c in commands]
    peak_kb, cpu = 0, 0.0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(map(str, process.args))}: "
                             f"{process.stderr.read().decode()[-500:]}")
        peak_kb, cpu = max(peak_kb, usage.ru_maxrss), cpu + usage.ru_utime + usage.ru_stime
    return Timed(time.perf_counter() - start, peak_kb // 1024, cpu)


def generate(folder: Path, *options: str) -> Timed:
    return timed([[str(GEN_PROBLEMS), *options, "--out", str(folder)]])


def tex_floor(tex_folder: Path) -> tuple[float, float]:
    """One pdflatex pass over questions.tex and answers.tex, both at once, in a fresh folder;
    and the CPU time of plain pdflatex loading just their preambles (each document cut
    after its \\begin{document}), the most of TeX's work that can overlap the imports."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name in DOCUMENTS:
            shutil.copy(tex_folder / name, folder)
            preamble = (tex_folder / name).read_text(encoding="utf-8").split(BEGIN_DOCUMENT)[0]
            (folder / f"preamble-{name}").write_text(
                f"{preamble}{BEGIN_DOCUMENT}\n\\end{{document}}\n", encoding="utf-8")
        floor = timed([["pdflatex", *TEX_FLAGS, name] for name in DOCUMENTS], cwd=folder).seconds
        preambles = timed([["pdflatex", *TEX_FLAGS, f"preamble-{name}"] for name in DOCUMENTS],
                          cwd=folder).cpu
    return floor, preambles


def imports(repeat: int) -> Timed:
    """Python started and the package imported, the median of a few: one core's work before
    anything of a run but TeX can start."""
    runs = [timed([[sys.executable, "-c", "import generator.cli"]]) for _ in range(repeat)]
    return Timed(*(statistics.median(getattr(r, field) for r in runs)
                   for field in ("seconds", "peak", "cpu")))


def least(run_cpu: float, start: Timed, preambles: float) -> float:
    """The least wall time the run's CPU work could take on this machine (see the top)."""
    beside_imports = min(preambles, (CORES - 1) * start.seconds)
    return start.seconds + max(0.0, run_cpu - start.cpu - beside_imports) / CORES


@dataclass(frozen=True)
class AgainstFloor:
    seconds: float  # the median run
    peak: int  # MB, of all runs
    cpu: float  # the median run's
    floor: float  # the median floor
    least: float  # the median run's CPU, as in ``least``

    def ratios(self) -> tuple[str, str]:
        return f"{self.seconds / self.floor:.2f}x", f"{self.least / self.floor:.2f}x"


def against_floor(repeat: int, folder: Path, start: Timed, *options: str) -> AgainstFloor:
    """Runs of gen-problems, each followed at once by the TeX floor of the documents it
    wrote, so that a machine that slows down or speeds up moves both alike."""
    runs, floors = [], []
    for _ in range(repeat):
        runs.append(generate(folder, *options))
        floors.append(tex_floor(folder))
    median = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
    preambles = statistics.median(p for _, p in floors)
    return AgainstFloor(median.seconds, max(r.peak for r in runs), median.cpu,
                        statistics.median(f for f, _ in floors), least(median.cpu, start, preambles))


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
    HEAD = ("run", "time", "CPU", "peak memory", "compared with", "ratio",
            f"least on {CORES} cores", "goal")

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(self, run: str, measured: Timed, compared: str, ratio: str, goal: str,
            least_ratio: str = "–") -> None:
        self.rows.append((run, f"{measured.seconds:.2f} s", f"{measured.cpu:.2f} s",
                          f"{measured.peak} MB", compared, ratio, least_ratio, goal))
        print(" | ".join(self.rows[-1]), file=sys.stderr, flush=True)

    def add_against_floor(self, run: str, measured: AgainstFloor, compared: str, goal: str) -> None:
        ratio, least_ratio = measured.ratios()
        self.add(run, Timed(measured.seconds, measured.peak, measured.cpu),
                 f"TeX floor {measured.floor:.2f} s{compared}", ratio, goal, least_ratio)

    def markdown(self) -> str:
        lines = [self.HEAD, ("---",) * len(self.HEAD), *self.rows]
        return "\n".join("| " + " | ".join(row) + " |" for row in lines)


MODE_RUNS = {
    "`--count 200 --format md,json,html,moodle --pdf`": ("--count", "200", "--seed", "1"),
    "`--count 3 --versions 40 --format md,json,html,moodle --pdf`": ("--count", "3", "--seed",
                                                                     "1", "--versions", "40"),
}


# Names as a class might have them, each script a third of the roster: Chinese, Arabic and
# Devanagari, the last two shaped by HarfBuzz.
HAN = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗小明华伟芳娜敏静丽强磊军洋勇艳杰娟涛超"
ARABIC = ["محمد", "أحمد", "علي", "فاطمة", "عائشة", "يوسف", "مريم", "خالد", "حسن", "سلمى", "عمر"]
DEVANAGARI = ["अर्जुन", "शर्मा", "प्रिया", "राहुल", "वर्मा", "अनीता", "सुरेश", "गुप्ता", "दीपिका",
              "कृष्ण", "लक्ष्मी", "सिंह"]


def international_roster(folder: Path, size: int) -> Path:
    """A roster of ``size`` students named in Chinese, Arabic and Devanagari, in turn."""
    def name(i: int) -> str:
        pick = lambda words, k: words[(i * 7 + k * 5 + i // 3) % len(words)]  # noqa: E731
        return ("".join(pick(HAN, k) for k in range(3)) if i % 3 == 0 else
                f"{pick(ARABIC, 0)} {pick(ARABIC, 1)}" if i % 3 == 1 else
                f"{pick(DEVANAGARI, 0)} {pick(DEVANAGARI, 1)}")
    path = folder / f"international-{size}.csv"
    rows = [f"s{i:04d},{name(i)}" for i in range(size)]
    path.write_text("id,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def international(table: Table, work: Path, repeat: int, size: int) -> None:
    """A class of international names against one of Latin names, their runs alternating
    (the median of each, the peak of all)."""
    rosters = {"international": international_roster(work, size), "latin": roster(work, size)}
    generate(work / "warm", "--count", "1", "--pdf", "--students",  # LuaLaTeX's font cache
             str(international_roster(work, 3)))
    runs = {way: [] for way in rosters}
    for _ in range(repeat):
        for way, students in rosters.items():
            runs[way].append(generate(work / way, "--count", "2", "--seed", "1", "--pdf",
                                      "--students", str(students)))
    median = {way: sorted(r, key=lambda t: t.seconds)[len(r) // 2] for way, r in runs.items()}
    peak = {way: max(t.peak for t in r) for way, r in runs.items()}
    latin = Timed(median["latin"].seconds, peak["latin"], median["latin"].cpu)
    table.add(f"`--count 2 --students` ({size} Latin names) `--pdf`", latin, "–", "–", "–")
    table.add(f"`--count 2 --students` ({size} CJK, Arabic, Devanagari names) `--pdf`",
              Timed(median["international"].seconds, peak["international"],
                    median["international"].cpu),
              f"Latin names {latin.seconds:.2f} s",
              f"{median['international'].seconds / latin.seconds:.2f}x", "≤ 2x; < 500 MB")


def modes(table: Table, work: Path, repeat: int) -> None:
    """The default against --jobs 1, their runs alternating (the median of each)."""
    for label, options in MODE_RUNS.items():
        options = (*options, "--format", "md,json,html,moodle", "--pdf")
        runs = {"default": [], "alone": []}
        for _ in range(repeat):
            runs["default"].append(generate(work / "default", *options))
            runs["alone"].append(generate(work / "alone", *options, "--jobs", "1"))
        default, alone = (sorted(runs[way], key=lambda r: r.seconds)[len(runs[way]) // 2]
                          for way in ("default", "alone"))
        table.add(label, default, f"`--jobs 1` {alone.seconds:.2f} s",
                  f"{default.seconds / alone.seconds:.2f}x", "< 1x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per short figure (median)")
    parser.add_argument("--class-size", type=int, default=500, help="students in the roster row")
    parser.add_argument("--large-repeat", type=int, default=1,
                        help="runs per long figure (median): the class and hard-set rows")
    parser.add_argument("--modes", action="store_true",
                        help="only the default against --jobs 1")
    parser.add_argument("--international", action="store_true",
                        help="only a class of CJK, Arabic and Devanagari names against Latin ones")
    options = parser.parse_args()
    table = Table()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        out = work / "out"
        generate(out, "--count", "20", "--seed", "1", "--pdf")  # warm caches (and the TeX format)
        if options.modes or options.international:
            if options.modes:
                modes(table, work, options.repeat)
            else:
                international(table, work, options.repeat, options.class_size)
            print(table.markdown())
            return
        start = imports(options.repeat)
        print(f"Python and the package's imports: {start.seconds:.2f} s, {start.cpu:.2f} s of CPU",
              file=sys.stderr)
        twenty = against_floor(options.repeat, out, start, "--count", "20", "--seed", "1", "--pdf")
        table.add_against_floor("`--count 20 --pdf`", twenty, "", "≤ 2.0x")
        size = options.class_size
        for count in (size // 5, size):
            students = roster(work, count)
            one_class = against_floor(options.large_repeat, work / "class", start, "--count", "3",
                                      "--seed", "1", "--pdf", "--students", str(students))
            papers = sum(p.stat().st_size for p in (work / "class" / "papers").glob("*.pdf"))
            combined = (work / "class" / "questions.pdf").stat().st_size
            table.add_against_floor(f"`--count 3 --students` ({count} students) `--pdf`", one_class,
                                    f"; papers {papers / combined:.1f}x questions.pdf",
                                    "≤ 1.5x; < 200 MB, flat in the class size")
        # The `--count 20` runs it is compared with are taken between its runs, so that a
        # machine that slows down or speeds up during the benchmark moves both alike.
        plains, hards = [], []
        for _ in range(options.large_repeat):
            plains += [generate(work / "c20", "--count", "20", "--seed", "1").seconds
                       for _ in range(options.repeat)]
            hards.append(generate(work / "hard", "--count", "1000", "--difficulty", "hard",
                                  "--seed", "1"))
        plain = statistics.median(plains)
        hard = sorted(hards, key=lambda r: r.seconds)[len(hards) // 2]
        hard = Timed(hard.seconds, max(r.peak for r in hards), hard.cpu)
        table.add("`--count 1000 --difficulty hard`", hard, f"`--count 20` {plain:.2f} s",
                  f"{hard.seconds / plain:.1f}x", "≤ 15x; < 300 MB")
        table.add("a teacher's spec, 12 tokens x 16 dims, square roots",
                  generate(work / "radicals", "--spec", str(radical_spec(work))), "–", "–",
                  "< 10 s, < 500 MB")
        small = generate(work / "many", "--count", "200", "--seed", "1", "--pdf").seconds
        many = generate(work / "many", "--count", "2000", "--seed", "1", "--pdf")
        table.add("`--count 2000 --pdf`", many, f"`--count 200 --pdf` {small:.2f} s",
                  f"{many.seconds / small:.1f}x for 10x the count", "linear; < 500 MB")
    print(table.markdown())


if __name__ == "__main__":
    main()
