"""A large set is partly solved, and its other formats written, by forked processes: the
same files, the same errors, and nothing left running when the run stops."""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import folder_files

from generator.running import forked, scheduler

ROOT = Path(__file__).resolve().parent.parent


def outputs(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in folder_files(folder).items()
            if not name.startswith(".gen-problems")}


def test_a_failure_in_the_forked_process_is_the_runs_own(run_cli, tmp_path, monkeypatch):
    """A teacher's broken Markdown template, met by the child: one line, exit 2, no files."""
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    (mine / "answers.md.j2").write_text("{{ papers | no_such_filter }}\n")
    monkeypatch.setattr(scheduler, "FORK_FROM", 1)
    code, _, err = run_cli("--count", 2, "--seed", 3, "--out", tmp_path / "o",
                           "--templates", tmp_path / "mine")
    assert code == 2 and err.count("\n") == 1 and "no_such_filter" in err, err
    assert not (tmp_path / "o").exists()


# Runs gen-problems with the thresholds low enough that a small set forks, and a handshake: a
# child that solves (PHASE=solving) or writes a format (any other PHASE) says so on the
# handshake pipe and then works until it is stopped; the run says when it waits for a child.
STOPPED_RUN = textwrap.dedent('''\
    import os, sys, time
    from generator.running import forked, pipeline, scheduler
    handshake, parent = int(os.environ["HANDSHAKE"]), os.getpid()

    def say(line):
        os.write(handshake, (line + "\\n").encode())

    def works_on_in_child(function):
        def working(*args):
            if os.getpid() == parent:
                return function(*args)
            say(f"child {os.getpid()}")
            while True:
                time.sleep(60)
        return working

    if os.environ["PHASE"] == "solving":
        scheduler.SOLVE_APART_FROM = 1
        pipeline.solve_checked = works_on_in_child(pipeline.solve_checked)
    else:
        scheduler.FORK_FROM, scheduler.SOLVE_APART_FROM = 1, 10**9
        scheduler.every_file = works_on_in_child(scheduler.every_file)
    result = forked.Forked.result

    def waited_for(child):
        say("waiting")
        return result(child)
    forked.Forked.result = waited_for
    from generator.cli import main
    sys.exit(main(sys.argv[1:]))
    ''')


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a set is solved apart on two cores")
@pytest.mark.parametrize("phase, forks", [("solving", 1), ("writing the other formats", 2)])
def test_a_run_stopped_while_forked_leaves_no_process_and_the_folder_as_it_was(tmp_path, phase, forks):
    """Stopped while a child solves part of the set (one child), or while children write
    the other formats (two at once, Markdown and JSON), once the run waits for them."""
    out = tmp_path / "out"
    read, write = os.pipe()
    run = subprocess.Popen([sys.executable, "-c", STOPPED_RUN, "--count", "4", "--seed", "5",
                            "--out", str(out)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                           pass_fds=[write], env={**os.environ, "HANDSHAKE": str(write),
                                                  "PHASE": phase})
    os.close(write)
    try:
        children, waiting = said_by(read, run, lambda pids, waiting: len(pids) >= forks and waiting)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) == 130
    finally:
        run.kill()
        os.close(read)
    assert "interrupted" in run.stderr.read()
    assert len(children) == forks and not any(_alive(pid) for pid in children)
    assert not out.exists()


def said_by(pipe: int, run: subprocess.Popen, enough) -> tuple[list[int], bool]:
    """The children that said they work, and whether the run said it waits for one, read from
    the handshake until ``enough(children, waiting)``."""
    children, waiting, text = [], False, ""
    while not enough(children, waiting):
        ready, _, _ = select.select([pipe], [], [], 300)  # a hang, not a measure of time
        chunk = os.read(pipe, 4096).decode() if ready else ""
        assert chunk, f"the run ended or hung before its children worked ({run.poll()})"
        text += chunk
        lines = text.splitlines()
        children = [int(line.split()[1]) for line in lines if line.startswith("child ")]
        waiting = "waiting" in lines
    return children, waiting


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    state = stat.read_text().split()[2] if stat.exists() else "X"
    return state != "Z"


@pytest.mark.equivalence
def test_a_large_set_solved_on_two_processes_gives_the_same_files(run_cli, tmp_path, monkeypatch):
    """The last part of a large set is solved by a forked child and handed back pickled."""
    args = ("--count", 14, "--versions", 2, "--seed", 6, "--difficulty", "hard", "--format", "moodle")
    started = []
    compute = forked.compute_in_child
    monkeypatch.setattr(forked, "compute_in_child", lambda *work: started.append(compute(*work)) or started[-1])
    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10)
    assert run_cli(*args, "--out", tmp_path / "apart")[0] == 0
    assert started and started[0] is not None  # a child did solve part of the set
    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10**9)
    assert run_cli(*args, "--out", tmp_path / "alone")[0] == 0
    assert outputs(tmp_path / "apart") == outputs(tmp_path / "alone")


@pytest.mark.equivalence
def test_the_child_draws_only_its_share_and_it_spans_versions(run_cli, tmp_path, monkeypatch):
    """The child draws the problems it solves and no more (problem i is drawn the same however
    many follow), its share running on into the next version; the files are the same."""
    from generator.running import pipeline
    log = tmp_path / "drawn"  # written by the child: its memory is its own
    first = pipeline.Drawn.first

    def logged(self, n):
        with open(log, "a") as file:
            file.write(f"{n} {os.getpid()}\n")
        return first(self, n)
    monkeypatch.setattr(pipeline.Drawn, "first", logged)
    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10)
    monkeypatch.setattr(scheduler, "CHILD_SHARE", 0.45)  # 9 of the 20 problems
    args = ("--count", 5, "--versions", 4, "--seed", 8, "--format", "json")
    assert run_cli(*args, "--out", tmp_path / "apart")[0] == 0
    drawn = [line.split() for line in log.read_text().splitlines()]
    assert [n for n, _ in drawn] == ["5", "4"]  # version 1's five, four of version 2's
    assert {pid for _, pid in drawn} != {str(os.getpid())}  # drawn in the child
    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10**9)
    assert run_cli(*args, "--out", tmp_path / "alone")[0] == 0
    assert outputs(tmp_path / "apart") == outputs(tmp_path / "alone")


def test_a_failure_in_the_solving_child_is_the_runs_own(run_cli, tmp_path, monkeypatch):
    from generator.maths.spec import SpecError
    from generator.running import pipeline
    solve = pipeline.solve_checked
    solved_here = os.getpid()

    def failing(spec):
        if os.getpid() != solved_here:  # only in the child
            raise SpecError(f"problem {spec.id} cannot be solved (a test)")
        return solve(spec)

    monkeypatch.setattr(scheduler, "SOLVE_APART_FROM", 10)
    monkeypatch.setattr(pipeline, "solve_checked", failing)
    code, _, err = run_cli("--count", 12, "--seed", 6, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "cannot be solved (a test)" in err, err
    assert not (tmp_path / "o").exists()


def test_a_stop_python_drops_still_stops_the_run(run_cli, tmp_path, monkeypatch):
    """A SIGTERM whose KeyboardInterrupt lands where Python cannot pass it on (here a __del__;
    in a real run, an import's clean-up callback: the run went on and wrote its set) still
    stops the run before its files land: exit 130, one line, the folder as it was."""
    from generator.running import pipeline

    class StopsInDel:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs here, inside __del__, and is dropped
                pass

    solve = pipeline.solve_checked
    sent = []

    def solve_and_stop(spec):
        if not sent:
            sent.append(StopsInDel())
            sent[0] = None  # __del__ runs now
        return solve(spec)

    monkeypatch.setattr(pipeline, "solve_checked", solve_and_stop)
    code, _, err = run_cli("--count", 3, "--seed", 1, "--out", tmp_path / "o")
    assert sent and code == 130, err
    assert err == "gen-problems: interrupted; the output folder is as it was\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_solved_problems_come_back_from_the_child_as_they_were_built():
    """Every sympy expression the child hands back is the same tree (class, arguments in
    their order, assumptions) as the one it built; the records are the same records."""

    import sympy

    from generator.kinds import default_mix
    from generator.kinds.sampling import draw_options, sample_set
    from generator.running.pipeline import solve_checked
    specs = (sample_set(draw_options("hard"), 5, 14, types=default_mix())
             + sample_set(draw_options("medium", d_k=2), 6, 6))
    built = [solve_checked(spec) for spec in specs]
    back = pickle.loads(forked._compact(built))
    seen: dict[type, int] = {}
    visited: set[int] = set()  # records and tuples are shared between steps: each looked at once

    def same(a, b):
        assert type(a) is type(b)
        if id(a) in visited:
            return
        visited.add(id(a))
        if isinstance(a, sympy.Basic):
            seen[type(a)] = seen.get(type(a), 0) + 1
            assert sympy.srepr(a) == sympy.srepr(b) and a == b and hash(a) == hash(b)
            assert a.is_commutative == b.is_commutative and a.is_positive == b.is_positive
            assert getattr(a, "nargs", None) == getattr(b, "nargs", None)
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        elif isinstance(a, dict):  # a question's further solutions, by name; a spec's params
            assert list(a) == list(b)
            for key in a:
                same(a[key], b[key])
        elif hasattr(type(a), "__dataclass_fields__"):
            for name in type(a).__dataclass_fields__:
                same(getattr(a, name), getattr(b, name))
        elif not hasattr(a, "shape"):  # numpy arrays are pickled by numpy
            assert a == b

    same(built, back)
    assert {sympy.Add, sympy.Mul, sympy.Pow, sympy.exp, sympy.Rational} <= set(seen)


def test_expressions_cross_processes_by_sympys_public_api_only():
    """No private attribute or constructor of sympy's (their layout may change in any release
    pyproject.toml allows), and nothing sympy has deprecated."""
    import re
    import warnings

    import sympy

    from generator.maths.exact import exp_as_written

    source = Path(forked.__file__).read_text(encoding="utf-8")
    assert not re.search(r"\._(args|new|from_args|mpf_|assumptions)", source)
    half = sympy.Rational(1, 2)
    expression = sympy.Add(sympy.Rational(-3, 7) * exp_as_written(half), sympy.sqrt(2) / 4,
                           evaluate=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = pickle.loads(forked._compact(expression))
    assert sympy.srepr(back) == sympy.srepr(expression)
