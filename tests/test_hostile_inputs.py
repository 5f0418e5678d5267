"""Hostile inputs and accidents (issue 29's fault campaign): a link that loops, a FIFO, a
device, a huge or non-UTF-8 file, a huge practice id, a stop while the program loads, a
worker process killed, two runs printing from one folder.  Each is one line on stderr
and the right exit code, never a traceback or a hang, and the output folder as it was."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import folder_files
from test_bad_input import assert_one_line_error, previous_output  # noqa: F401 (a fixture)

from generator import formats
from generator.running import lockstep, pipeline, scheduler
from generator.running.output import OutputFolder

LIMIT = 120  # seconds for one case: a hang fails the test instead of holding the suite
TWO_CORES = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                               reason="work is forked only where there are two cores")


class Hung(BaseException):
    """Not an Exception: the CLI must not be able to turn it into an exit code."""


@pytest.fixture(autouse=True)
def deadline():
    def hung(signum, frame):
        raise Hung(f"no answer within {LIMIT} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(LIMIT)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def loop(folder: Path) -> Path:
    """folder/a -> folder/b -> folder/a."""
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    return folder / "a"


# -- links that loop: one line, exit 2 ---------------------------------------------------------

@pytest.mark.parametrize("flag, others", [
    ("--spec", []), ("--students", ["--count", 1]), ("--key-file", ["--count", 1]),
    ("--config", ["--count", 1]), ("--record", ["--problem", "M42-7"]),
    ("--templates", ["--count", 1]),
])
def test_an_input_that_is_a_link_loop(tmp_path, run_cli, previous_output, flag, others):
    out, before = previous_output
    looped = loop(tmp_path)
    assert_one_line_error(*run_cli(flag, looped, *others, "--out", out),
                          f"{flag} {looped}: a symbolic link that loops")
    assert folder_files(out) == before


def test_an_output_folder_that_is_a_link_loop(tmp_path, run_cli):
    looped = loop(tmp_path)
    assert_one_line_error(*run_cli("--count", 1, "--out", looped),
                          f"--out {looped}: a symbolic link that loops")
    assert_one_line_error(*run_cli("--count", 1, "--out", looped / "inside"),
                          "a symbolic link that loops")
    assert sorted(os.listdir(tmp_path)) == ["a", "b"] and os.readlink(looped) == str(tmp_path / "b")


def test_a_link_loop_inside_the_template_folder(tmp_path, run_cli, previous_output):
    out, before = previous_output
    mine = tmp_path / "mine" / "latex"
    mine.mkdir(parents=True)
    looped = loop(mine)
    assert_one_line_error(*run_cli("--count", 1, "--templates", tmp_path / "mine", "--out", out),
                          f"{looped}: a symbolic link that loops")
    assert folder_files(out) == before


# -- FIFOs and devices: refused at once, never read --------------------------------------------

@pytest.mark.parametrize("flag, name, others", [
    ("--spec", "spec.toml", []), ("--key-file", "exam.key", ["--count", 1]),
    ("--students", "roster.csv", ["--count", 1]), ("--config", "header.toml", ["--count", 1]),
    ("--record", "problems.json", ["--problem", "M42-7"]),
])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, run_cli, previous_output, flag, name,
                                                         others):
    out, before = previous_output
    fifo = tmp_path / name
    os.mkfifo(fifo)
    assert_one_line_error(*run_cli(flag, fifo, *others, "--out", out),
                          f"{fifo}: a FIFO (named pipe), not a regular file")
    assert folder_files(out) == before


@pytest.mark.parametrize("flag, device, others", [
    ("--key-file", "/dev/zero", ["--count", 1]), ("--spec", "/dev/zero", []),
    ("--config", "/dev/urandom", ["--count", 1]), ("--students", "/dev/null", ["--count", 1]),
])
def test_a_device_is_refused_without_reading_it(tmp_path, run_cli, previous_output, flag, device, others):
    out, before = previous_output
    assert_one_line_error(*run_cli(flag, device, *others, "--out", out),
                          f"{device}: a character device, not a regular file")
    assert folder_files(out) == before


# -- sizes and encodings ------------------------------------------------------------------------

def sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        file.truncate(size)  # no disk and no memory: its size alone must refuse it
    return path


@pytest.mark.parametrize("name, size, flag, others, expected", [
    ("mine/markdown/answers.md.j2", 5 * 2**30, "--templates", ["--count", 1],
     "larger than 4 MB; is it a template?"),
    ("mine/notes.txt", 5 * 2**30, "--templates", ["--count", 1],  # read for the notes, too
     "larger than 4 MB; is it a template?"),
    ("roster.csv", 17 * 2**20, "--students", ["--count", 1], "larger than 16 MB; is it the roster?"),
    ("exam.key", 5000, "--key-file", ["--count", 1], "larger than 4 KB; is it an exam key?"),
    ("big.toml", 5 * 2**30, "--spec", [], "larger than 16 MB; is it a problem spec?"),
])
def test_an_oversized_input_is_refused_by_its_size(tmp_path, run_cli, previous_output, name, size, flag,
                                                   others, expected):
    out, before = previous_output
    path = sparse(tmp_path / name, size)
    given = tmp_path / "mine" if flag == "--templates" else path
    assert_one_line_error(*run_cli(flag, given, *others, "--out", out), f"{path}: {expected}")
    assert folder_files(out) == before


def test_a_template_that_is_not_utf8_is_named(tmp_path, run_cli, previous_output):
    out, before = previous_output
    template = tmp_path / "mine" / "markdown" / "answers.md.j2"
    template.parent.mkdir(parents=True)
    template.write_bytes(b"\xff\xfe<< papers >>\n")
    assert_one_line_error(*run_cli("--count", 1, "--templates", tmp_path / "mine", "--out", out),
                          f"{template}: cannot read a template: not UTF-8 text (byte 0)")
    assert folder_files(out) == before


# -- practice ids with huge numbers ---------------------------------------------------------------

@pytest.mark.parametrize("problem, expected", [
    ("M999999999999999999999999-1", "the seed must be between 0 and 1000000000000000000"),
    ("M" + "9" * 5000 + "-1", "the seed must be between 0 and"),
    ("M42v" + "9" * 5000 + "-1", "the version must be between 1 and 500"),
    ("M42-" + "9" * 5000, "the problem number must be between 1 and 2000"),
    ("M999999999999999999999999", "expected an id such as M42-7"),
    ("M" + "9" * 5000, "expected an id such as M42-7"),
])
def test_a_practice_id_with_a_huge_number(tmp_path, run_cli, previous_output, problem, expected):
    out, before = previous_output
    code, printed, err = run_cli("--problem", problem, "--out", out)
    assert_one_line_error(code, printed, err, expected)
    assert len(err) < 200  # the id is quoted short
    assert folder_files(out) == before


# -- a stop while the program loads ----------------------------------------------------------------

@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_the_program_loads_is_one_line_and_130(tmp_path, stop):
    """The real console script, stopped while it imports sympy (once numpy's library is
    loaded, half a second of imports remain)."""
    script = Path(sys.executable).with_name("gen-problems")
    run = subprocess.Popen([script, "--count", "1", "--out", tmp_path / "out"],
                           stderr=subprocess.PIPE, text=True)
    try:
        started = time.monotonic()
        while "_multiarray_umath" not in _maps(run.pid) and time.monotonic() - started < 30:
            time.sleep(0.002)
        run.send_signal(stop)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert (run.returncode, err) == (130, "gen-problems: interrupted; the output folder is as it was\n")
    assert not (tmp_path / "out").exists()


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


# -- a worker process killed: one line, exit 1, the folder as it was ------------------------------

def killed_in_child(function):
    """``function``, except in a forked child, which it kills outright (the OOM killer, kill -9)."""
    parent = os.getpid()

    def dying(*args, **kwargs):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return function(*args, **kwargs)
    return dying


def assert_worker_died(code, printed, err, helper="the forked "):
    assert (code, printed, err.count("\n")) == (1, "", 1), err
    assert re.fullmatch(rf"gen-problems: {helper}.* \(pid \d+\) was killed by SIGKILL; nothing "
                        rf"was changed in .*/\n", err), err


@TWO_CORES
def test_a_killed_child_solving_part_of_the_set(run_cli, previous_output, monkeypatch):
    out, before = previous_output
    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10)
    monkeypatch.setattr(pipeline, "solve_checked", killed_in_child(pipeline.solve_checked))
    assert_worker_died(*run_cli("--count", 12, "--seed", 6, "--out", out),
                       "the forked solver of the set's first part")
    assert folder_files(out) == before


def test_a_killed_child_writing_a_format(run_cli, previous_output, monkeypatch):
    out, before = previous_output
    monkeypatch.setattr(scheduler, "FORK_FROM", 1)
    monkeypatch.setattr(formats, "paper_documents", killed_in_child(formats.paper_documents))
    assert_worker_died(*run_cli("--count", 2, "--seed", 6, "--out", out),
                       "the forked writer of the .* files")
    assert folder_files(out) == before


@TWO_CORES
def test_a_killed_child_solving_a_class_ahead(run_cli, previous_output, monkeypatch):
    out, before = previous_output
    started = []
    stream = lockstep.stream_from_child
    monkeypatch.setattr(lockstep, "stream_from_child", lambda *work: started.append(1) or stream(*work))
    monkeypatch.setattr(pipeline, "solve_checked", killed_in_child(pipeline.solve_checked))
    assert_worker_died(*run_cli("--count", 2, "--versions", 40, "--seed", 6, "--out", out),
                       "the forked solver of the class's versions")
    assert started and folder_files(out) == before


# -- --format md prints this run's own key -------------------------------------------------------

def test_the_printed_key_is_this_runs_even_when_another_run_lands_after_it(tmp_path, run_cli,
                                                                           monkeypatch):
    """Another run on the folder may replace answers.md the moment this run lets go of the
    lock; what this run prints is still the key it wrote."""
    out = tmp_path / "out"
    commit, written = OutputFolder.commit, []

    def commit_then_another_run_lands(self, documents, inputs=(), **keeping):
        paths = commit(self, documents, inputs, **keeping)
        written.append((out / "answers.md").read_text(encoding="utf-8"))
        (out / "answers.md.new").write_text("# ANOTHER RUN'S KEY\n", encoding="utf-8")
        os.replace(out / "answers.md.new", out / "answers.md")
        return paths

    monkeypatch.setattr(OutputFolder, "commit", commit_then_another_run_lands)
    code, printed, err = run_cli("--count", 2, "--seed", 4, "--format", "md", "--out", out)
    assert code == 0, err
    assert printed == written[0] and "ANOTHER RUN" not in printed
