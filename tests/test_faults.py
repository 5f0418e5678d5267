"""The fault campaign's cases (issue 37): each input a teacher might hand the tool by mistake is
refused in one line, or taken as meant; nothing outside --out is touched."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from conftest import folder_files

from generator.cli import main
from generator.pdf.pdfcut import cut_papers
from generator.running import progress
from generator.running.helpers import HelperDied
from generator.running.options import Options, UsageError
from generator.running.roster import load_roster
from generator.running.scheduler import FORK_FROM

ROOT = Path(__file__).resolve().parent.parent


def test_blank_rows_of_a_roster_are_skipped_before_the_students_are_counted(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n" + "\n" * 50_000 + ",\n" * 50_000 + "s1,Ann Lee\n", encoding="utf-8")
    students = load_roster(roster).students
    assert [(s.id, s.name) for s in students] == [("s1", "Ann Lee")]


# -- a helper process killed: one line naming it, exit 1, the earlier set as it was -------------

def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs, read from /proc as ``ps --ppid`` does."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def run_killing(helper: Callable[[list[str], list[str]], bool], *args) -> tuple[int, str, list]:
    """gen-problems in a process of its own; the first process it starts that ``helper``
    picks (by its command line, and the run's) is killed outright, as kill -9 or the
    out-of-memory killer would.  The exit code, stderr and the killed command line."""
    run = subprocess.Popen([sys.executable, "-m", "generator.cli", *map(str, args)], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killed: list[str] = []
    try:
        while run.poll() is None and not killed:
            for pid in child_pids(run.pid):
                if helper(command_line(pid), command_line(run.pid)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        killed = command_line(pid) or ["(gone)"]
                    break
            time.sleep(0.005)
        _, err = run.communicate(timeout=600)
    finally:
        run.kill()
    return run.returncode, err, killed


def earlier_set(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path / "out"
    assert main(["--count", "1", "--seed", "1", "--out", str(out)]) == 0
    return out, folder_files(out)


def assert_said_once(code: int, err: str, killed: list, helper: str) -> None:
    assert killed, f"the run ended before its helper was seen: {err}"
    last = err.splitlines()[-1]  # the lines before it: the progress, now and then
    assert code == 1 and re.fullmatch(rf"gen-problems: {helper} \(pid \d+\) was killed by SIGKILL; "
                                      r"nothing was changed in .*/out/", last), err
    assert all(line.startswith("gen-problems: ") and "done after" in line
               for line in err.splitlines()[:-1]), err


def is_cutter(helper: list[str], run: list[str]) -> bool:
    return any(part.endswith("pdfcut.py") for part in helper)


def is_tex_on_questions(helper: list[str], run: list[str]) -> bool:
    return any(part.endswith("pdflatex") for part in helper) and "questions.tex" in helper


def is_forked(helper: list[str], run: list[str]) -> bool:
    return helper == run  # a fork: the run's own command line


@pytest.mark.tex
@pytest.mark.slow
def test_a_killed_paper_cutter_is_one_line_and_the_earlier_set_stays(tmp_path):
    out, before = earlier_set(tmp_path)
    roster = tmp_path / "class.csv"
    roster.write_text("id,name\n" + "".join(f"s{i:02d},Student {i}\n" for i in range(25)))
    code, err, killed = run_killing(is_cutter, "--count", 1, "--students", roster, "--pdf",
                                    "--out", out)
    assert_said_once(code, err, killed, r"the paper cutter of (questions|answers)\.pdf")
    assert folder_files(out) == before


@pytest.mark.tex
@pytest.mark.slow
@pytest.mark.parametrize("jobs", [(), ("--jobs", 1)], ids=["fed-while-written", "one-after-another"])
def test_a_killed_tex_run_is_one_line_and_not_compiled_again(tmp_path, jobs):
    out, before = earlier_set(tmp_path)
    code, err, killed = run_killing(is_tex_on_questions, "--count", 2, "--pdf", *jobs, "--out", out)
    assert_said_once(code, err, killed, r"pdflatex typesetting questions\.tex")
    assert folder_files(out) == before


@pytest.mark.slow
def test_a_killed_forked_writer_is_one_line_and_the_earlier_set_stays(tmp_path):
    out, before = earlier_set(tmp_path)
    code, err, killed = run_killing(is_forked, "--count", FORK_FROM, "--format", "html,moodle,qti",
                                    "--out", out)
    assert_said_once(code, err, killed, "the forked writer of the (html|moodle|qti|md) files")
    assert folder_files(out) == before


@pytest.mark.parametrize("script, how", [("kill -9 $$", "was killed by SIGKILL"),
                                         ("exit 3", "exited with status 3")])
def test_a_cutter_that_dies_before_it_reads_its_request_is_named_not_a_closed_pipe(
        tmp_path, monkeypatch, script, how):
    """It dies before the run hands it its pages (the run's write then meets a closed pipe,
    which was once taken for a closed stdout: exit 141 and no word)."""
    dying = tmp_path / "python"
    dying.write_text(f"#!/bin/sh\n{script}\n")
    dying.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(dying))
    with pytest.raises(HelperDied) as died:
        cut_papers(tmp_path / "questions.pdf", [0], ["papers/a.pdf"], tmp_path)
    assert re.fullmatch(rf"the paper cutter of questions\.pdf \(pid \d+\) {how}; the output "
                        r"folder is as it was", str(died.value))


def test_a_helpers_death_is_exit_1_with_its_line_and_a_stop_is_still_a_stop(monkeypatch, capsys):
    from generator import cli
    died = HelperDied("pdflatex typesetting answers.tex", 42, "was killed by SIGKILL")
    died.out = "out"
    monkeypatch.setattr(cli, "run", lambda options: (_ for _ in ()).throw(died))
    assert cli.main(["--count", "1"]) == 1
    assert capsys.readouterr().err == ("gen-problems: pdflatex typesetting answers.tex (pid 42) was "
                                       "killed by SIGKILL; nothing was changed in out/\n")
    monkeypatch.setattr(cli, "_stops_as_interrupts", contextlib.nullcontext)
    cli.STOP_REQUESTED.set()  # Ctrl-C reaches TeX too: the run says it was interrupted
    try:
        assert cli.main(["--count", "1"]) == 130
    finally:
        cli.STOP_REQUESTED.clear()
    assert capsys.readouterr().err == "gen-problems: interrupted; the output folder is as it was\n"


# -- a long run on a pipe says how far it is; a quick one says nothing more ---------------------

PROGRESS_LINE = re.compile(r"gen-problems: (solving|writing|saving), \d+% done after \d+ s")


def gen(*args) -> subprocess.CompletedProcess:
    """gen-problems in a process of its own, its stderr a pipe (a scheduler's, CI's log)."""
    return subprocess.run([sys.executable, "-m", "generator.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_run_on_a_pipe_says_how_far_it_is_every_so_often_and_a_quick_one_says_nothing(tmp_path):
    told = gen("--count", 6, "--format", "html", "--progress", "0.05", "--out", tmp_path / "a")
    lines = told.stderr.splitlines()
    assert told.returncode == 0 and lines[-1].startswith("wrote 6 problems"), told.stderr
    assert len(lines) >= 3 and all(PROGRESS_LINE.fullmatch(line) for line in lines[:-1]), told.stderr
    quick = gen("--count", 6, "--format", "html", "--out", tmp_path / "b")
    assert quick.returncode == 0 and quick.stderr.splitlines()[0].startswith("wrote 6 problems")


def test_progress_0_says_nothing_even_of_a_long_run(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(progress, "LOG_EVERY", 0.01)  # every run is long now
    code, _, err = run_cli("--count", 3, "--format", "html", "--progress", "0", "--out", tmp_path)
    assert code == 0 and err.startswith("wrote 3 problems"), err
    code, _, err = run_cli("--count", 3, "--format", "html", "--out", tmp_path)
    assert code == 0 and PROGRESS_LINE.fullmatch(err.splitlines()[0]), err


def test_progress_on_a_terminal_is_the_plain_line_instead_of_the_bar(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    with progress.RunProgress(3, 1, False, every=0.01) as shown:
        shown.solved()
        time.sleep(0.1)
    assert shown.bar is None
    lines = sys.stderr.getvalue().splitlines()
    assert lines and all(PROGRESS_LINE.fullmatch(line) for line in lines), lines


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_progress_takes_seconds_0_or_more(value, run_cli, tmp_path):
    code, _, err = run_cli("--count", 1, "--progress", value, "--out", tmp_path)
    assert code == 2 and err.startswith("gen-problems: error: argument --progress: "), err
    with pytest.raises(UsageError, match="argument --progress: "):
        Options(progress=float(value) if value != "soon" else -5).checked()
