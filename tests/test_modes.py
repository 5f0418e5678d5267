"""Every way the scheduler does a run's work writes the same bytes: one thing after another
(--jobs 1), the default, and, with the thresholds set low so that a small run takes them,
forked children (solving, writing the formats) and a class read in step; every format,
with and without PDFs.  Each mode is also seen to do what it says."""

from __future__ import annotations

import os
import threading

import pytest
from conftest import folder_files

from generator.cli import main
from generator.pdf.build import PdfBuild, WarmTex
from generator.running import scheduler

pytestmark = pytest.mark.equivalence

FORMATS = ("--format", "md,json,html,moodle,qti")
RUNS = {
    "set": ("--count", 3, "--seed", 5, "--practice", *FORMATS),
    "class": ("--count", 2, "--seed", 5, "--versions", 3, *FORMATS),
}
PDF = {"no-pdf": (), "pdf": ("--pdf",)}
# Each mode: its flags and the thresholds it sets (scheduler's).
MODES = {
    "one-at-a-time": (("--jobs", 1), {}),
    "default": ((), {}),
    "forked": ((), {"FORK_FROM": 1, "SOLVE_APART_FROM": 1, "IN_STEP_FROM": 10**6}),
    "in-step": ((), {"FORK_FROM": 1, "IN_STEP_FROM": 1}),
}


def outputs(folder) -> dict[str, bytes]:
    return {name: data for name, data in folder_files(folder).items()
            if not name.startswith(".gen-problems")}


@pytest.fixture(scope="module")
def written_alone(tmp_path_factory):
    """Each run's files as --jobs 1 writes them, made once."""
    made = {}

    def files(run: str, pdf: str) -> dict[str, bytes]:
        if (run, pdf) not in made:
            out = tmp_path_factory.mktemp("alone") / "out"
            assert main([*map(str, RUNS[run]), *PDF[pdf], "--jobs", "1", "--out", str(out)]) == 0
            made[run, pdf] = outputs(out)
        return made[run, pdf]
    return files


@pytest.fixture
def seen(monkeypatch) -> dict[str, list]:
    """What the run did: each fork, each class read in step, each LaTeX source TeX read as it
    was written, the documents whose TeX was started before the set was solved, and each
    thread but the progress line's."""
    seen = {"forks": [], "in step": [], "streamed": [], "warm": [], "threads": []}
    fork, in_step, stream = os.fork, scheduler.in_step, PdfBuild.stream
    warm, start = WarmTex.__init__, threading.Thread.start

    def warmed(self, folder, documents=("answers.tex",)):
        seen["warm"] += documents
        warm(self, folder, documents)

    def started(thread):
        if thread.name != "progress":
            seen["threads"].append(thread.name)
        start(thread)

    monkeypatch.setattr(os, "fork", lambda: seen["forks"].append(1) or fork())
    monkeypatch.setattr(scheduler, "in_step", lambda *a: seen["in step"].append(1) or in_step(*a))
    monkeypatch.setattr(PdfBuild, "stream", lambda self, name: seen["streamed"].append(name)
                        or stream(self, name))
    monkeypatch.setattr(WarmTex, "__init__", warmed)
    monkeypatch.setattr(threading.Thread, "start", started)
    return seen


@pytest.mark.parametrize("pdf", ["no-pdf", pytest.param("pdf", marks=pytest.mark.tex)])
@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_writes_the_same_bytes(mode, run, pdf, written_alone, seen, run_cli, tmp_path,
                                          monkeypatch):
    flags, thresholds = MODES[mode]
    for name, value in thresholds.items():
        monkeypatch.setattr(scheduler, name, value)
    code, _, err = run_cli(*RUNS[run], *PDF[pdf], *flags, "--out", tmp_path / "out")
    assert code == 0, err
    assert outputs(tmp_path / "out") == written_alone(run, pdf)
    assert bool(seen["forks"]) == (mode in ("forked", "in-step"))
    assert bool(seen["in step"]) == (mode == "in-step" and run == "class")
    beside_tex = pdf == "pdf" and mode != "one-at-a-time"
    assert sorted(seen["streamed"]) == (["answers.tex", "questions.tex"] if beside_tex else [])
    assert seen["warm"] == (["answers.tex"] if beside_tex else [])
    assert mode != "one-at-a-time" or seen["threads"] == []


def test_jobs_n_keeps_at_most_n_format_children_at_once(run_cli, tmp_path, monkeypatch):
    """Four formats written by children, two at a time: the same files."""
    started, most = [], [0]
    start = scheduler.Scheduler._start_writing

    def counted(driver, rendering):
        started.append(start(driver, rendering))
        most[0] = max(most[0], sum(child.pipe >= 0 for child in started))  # not yet waited for
        return started[-1]

    monkeypatch.setattr(scheduler, "FORK_FROM", 1)
    monkeypatch.setattr(scheduler.Scheduler, "_start_writing", staticmethod(counted))
    args = ("--count", 2, "--seed", 3, "--practice", "--format", "md,json,html,moodle")
    assert run_cli(*args, "--jobs", 2, "--out", tmp_path / "two")[0] == 0
    assert most[0] == 2 and len(started) == 4
    assert run_cli(*args, "--jobs", 1, "--out", tmp_path / "one")[0] == 0
    assert outputs(tmp_path / "two") == outputs(tmp_path / "one")
