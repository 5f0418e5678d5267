"""A class written in step (lockstep): the same files as solving everything first, a few
versions held at a time, each solved once, and a failure anywhere stops the whole run."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import folder_files

from generator.maths.crosscheck import CrossCheckError
from generator.running import lockstep, pipeline, scheduler

CLASS = 10  # students: more versions than solving first is kept for (IN_STEP_FROM), and a window
COUNT = 2  # problems on each paper


@pytest.fixture(autouse=True)
def a_small_class_is_read_in_step(monkeypatch):
    """A class of CLASS versions of COUNT problems is read in step: fewer problems in all than
    the scheduler waits for in a real run (FORK_FROM)."""
    monkeypatch.setattr(scheduler, "FORK_FROM", 1)


@pytest.fixture
def roster(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("id,name\n" + "".join(f"s{i:03d},Student {i}\n" for i in range(CLASS)))
    return path


@pytest.fixture
def counted(monkeypatch):
    """How many times each problem was solved, and the most versions held at once."""
    solved, held = {}, [0]
    solve, questions = pipeline.solve_checked, lockstep.Versions.questions

    def counting_solve(spec):
        solved[spec.id] = solved.get(spec.id, 0) + 1
        return solve(spec)

    def counting_questions(self, version):
        found = questions(self, version)
        held[0] = max(held[0], len(self.held))
        return found

    monkeypatch.setattr(pipeline, "solve_checked", counting_solve)
    monkeypatch.setattr(lockstep.Versions, "questions", counting_questions)
    monkeypatch.setattr(lockstep, "stream_from_child", lambda *results: None)  # count here
    return solved, held


@pytest.mark.equivalence
@pytest.mark.parametrize("options", [pytest.param(("--pdf",), marks=pytest.mark.tex),
                                     ("--format", "html,moodle,qti")])
def test_a_class_in_step_writes_the_files_solving_first_writes(tmp_path, run_cli, roster,
                                                                monkeypatch, options):
    args = ("--count", COUNT, "--students", roster, "--seed", 5, *options)
    read_in_step, in_step = [], scheduler.in_step
    monkeypatch.setattr(scheduler, "in_step", lambda *a: read_in_step.append(1) or in_step(*a))
    assert run_cli(*args, "--out", tmp_path / "in-step")[0] == 0
    assert read_in_step == [1]
    assert run_cli(*args, "--jobs", 1, "--out", tmp_path / "first")[0] == 0
    in_step, first = folder_files(tmp_path / "in-step"), folder_files(tmp_path / "first")
    assert in_step.keys() == first.keys() and len(in_step) > 5
    assert [name for name in in_step if in_step[name] != first[name]] == []


def test_a_class_in_step_holds_a_few_versions_and_solves_each_once(tmp_path, run_cli, roster,
                                                                   counted):
    solved, held = counted
    assert run_cli("--count", COUNT, "--students", roster, "--seed", 6, "--out", tmp_path / "out",
                   "--format", "html")[0] == 0
    assert len(solved) == COUNT * CLASS and set(solved.values()) == {1}
    assert 1 <= held[0] <= lockstep.WINDOW + 2


@pytest.mark.tex
def test_a_failure_in_one_version_stops_every_document_and_changes_nothing(tmp_path, run_cli,
                                                                           roster, monkeypatch):
    out = tmp_path / "out"
    assert run_cli("--count", 1, "--out", out)[0] == 0
    before = folder_files(out)
    solve, count = pipeline.solve_checked, [0]

    def failing(spec):  # in the child that solves ahead, whose failure reaches the run
        count[0] += 1
        if count[0] == COUNT * 8:
            raise CrossCheckError("steps differ: version eight")
        return solve(spec)

    monkeypatch.setattr(pipeline, "solve_checked", failing)
    threads = threading.active_count()
    code, _, error = run_cli("--count", COUNT, "--students", roster, "--seed", 7, "--pdf",
                             "--out", out)
    assert (code, error.count("\n")) == (1, 1) and "version eight" in error, error
    assert folder_files(out) == before
    for _ in range(100):  # the TeX threads end as their processes are stopped
        if threading.active_count() <= threads:
            break
        time.sleep(0.05)
    assert threading.active_count() <= threads


def test_a_version_read_again_after_it_was_let_go_is_solved_again_the_same(monkeypatch):
    monkeypatch.setattr(lockstep, "stream_from_child", lambda *results: None)
    specs = {version: [version * 10, version * 10 + 1] for version in range(1, 9)}
    sets = (versions := lockstep.Versions(specs, lambda spec: ("solved", spec))).sets()
    read = [list(sets[version]) for version in specs]
    assert read[0] == [("solved", 10), ("solved", 11)] and len(versions.held) <= 1
    assert list(sets[1]) == read[0]  # let go long ago: solved again


@pytest.mark.equivalence
def test_a_class_in_step_on_one_core_writes_the_same_files(tmp_path, run_cli, roster, monkeypatch):
    args = ("--count", COUNT, "--students", roster, "--seed", 8, "--format", "html")
    assert run_cli(*args, "--out", tmp_path / "two")[0] == 0
    monkeypatch.setattr(lockstep, "stream_from_child", lambda *results: None)  # no child
    assert run_cli(*args, "--out", tmp_path / "one")[0] == 0
    assert folder_files(tmp_path / "one") == folder_files(tmp_path / "two")
