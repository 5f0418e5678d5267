"""The output folder as a teacher's files see it: whole sets, nothing foreign lost, faults undone.

Faults are made for real where the machine allows (a full disk, SIGKILL, SIGINT, two runs at
once); a rename that fails or a kill at the k-th rename is made deterministic by a small
wrapper that patches ``os.replace`` in the child process only.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import folder_files, unmount

ROOT = Path(__file__).resolve().parent.parent
GOOD_SPEC = textwrap.dedent('''\
    X   = [[1, 0], [0, 1]]
    W_Q = [[1, 0], [0, 1]]
    W_K = [[1, 0], [0, 2]]
    W_V = [[1, 0], [0, 1]]
    ''')
# Runs `gen-problems` after patching os.replace: at the FAULT_AT-th rename into the output
# folder it kills the process (FAULT=kill), raises Ctrl-C (interrupt) or fails (error).
FAULTY_RUN = textwrap.dedent('''\
    import errno, os, signal, sys
    real_replace, calls = os.replace, 0
    def replace(source, target, *args, **kwargs):
        global calls
        if str(target).startswith(os.environ["FAULT_IN"]):
            calls += 1
            if calls == int(os.environ["FAULT_AT"]):
                fault = os.environ["FAULT"]
                if fault == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if fault == "interrupt":
                    raise KeyboardInterrupt
                if fault == "signal":  # a real Ctrl-C, landing while the set is put in place
                    os.kill(os.getpid(), signal.SIGINT)
                    return real_replace(source, target, *args, **kwargs)
                raise OSError(errno.EPERM, "Operation not permitted", str(target))
        return real_replace(source, target, *args, **kwargs)
    os.replace = replace
    from generator.cli import main
    sys.exit(main(sys.argv[1:]))
    ''')


def gen(*args, env=None, **options) -> subprocess.CompletedProcess:
    """gen-problems in a process of its own, as a teacher runs it."""
    return subprocess.run([sys.executable, "-m", "generator.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=300, **options)


def faulty_gen(out: Path, fault: str, at: int, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FAULTY_RUN, *map(str, args), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "FAULT": fault, "FAULT_AT": str(at),
                               "FAULT_IN": str(out)})


def the_set(out: Path) -> dict[str, bytes]:
    """The files of the folder, the lock file aside (it is empty and always there)."""
    return {name: data for name, data in folder_files(out).items() if name != ".gen-problems/lock"}


def no_leftovers(out: Path) -> bool:
    """Nothing of a run in the tool's state but its lock, its manifest and kept exam records."""
    state = out / ".gen-problems"
    return sorted(p.name for p in state.iterdir() if p.name != "exams") == ["lock", "manifest.json"]


@pytest.fixture(scope="module")
def sets_written_once(tmp_path_factory) -> Path:
    """The earlier set (seed-1/) and the set that replaces it (seed-2/), each written once, by
    gen-problems in a process of its own, into a folder of its own."""
    folder = tmp_path_factory.mktemp("sets")
    for seed in (1, 2):
        result = gen("--count", 3, "--seed", seed, "--out", folder / f"seed-{seed}")
        assert result.returncode == 0, result.stderr
    return folder


@pytest.fixture
def earlier_set(tmp_path, sets_written_once):
    """An output folder holding a complete earlier set (seed 1, a copy), and its files."""
    out = tmp_path / "out"
    shutil.copytree(sets_written_once / "seed-1", out, symlinks=True)
    return out, the_set(out)


# -- never delete or overwrite what the tool did not write ------------------------------------

def test_the_teachers_own_files_are_never_touched(tmp_path, run_cli):
    out = tmp_path / "out"
    (out / "papers").mkdir(parents=True)
    (out / "papers" / "thesis.pdf").write_bytes(b"my thesis")
    (out / "notes.txt").write_text("mine")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\na1,Ann\nb2,Bob\n")
    assert run_cli("--count", 1, "--students", roster, "--format", "html", "--out", out)[0] == 0
    assert sorted(p.name for p in (out / "practice").iterdir()) == ["version-01.html",
                                                                    "version-02.html"]
    assert run_cli("--count", 1, "--out", out)[0] == 0  # a run with fewer files
    assert (out / "papers" / "thesis.pdf").read_bytes() == b"my thesis"
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "practice").exists()  # the earlier run's pages went: not part of this set
    owned = json.loads((out / ".gen-problems" / "manifest.json").read_text())["files"]
    assert owned == ["answers.md", "answers.tex", "problems.json", "questions.md", "questions.tex"]


def test_a_file_of_the_teachers_in_the_way_stops_the_run(tmp_path, run_cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / "answers.md").write_text("my own key")
    code, _, err = run_cli("--count", 1, "--out", out)
    assert code == 2 and err.count("\n") == 1
    assert "answers.md was not written by gen-problems" in err
    assert (out / "answers.md").read_text() == "my own key"
    assert not (out / "questions.md").exists()


@pytest.mark.parametrize("name", ["problems.json", "answers.md", "papers/list.json"])
def test_an_input_where_the_run_writes_is_refused_before_anything_happens(tmp_path, run_cli, name):
    out = tmp_path / "exam1"
    spec = out / name
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
                                "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}))
    before = folder_files(out)
    code, _, err = run_cli("--spec", spec, "--out", out)
    assert code == 2 and err.count("\n") == 1 and "is an input but also where" in err
    assert folder_files(out) == before


def test_an_input_beside_the_outputs_is_fine(tmp_path, run_cli):
    spec = tmp_path / "exam1" / "my-problems.toml"
    spec.parent.mkdir()
    spec.write_text(GOOD_SPEC)
    assert run_cli("--spec", spec, "--out", spec.parent)[0] == 0
    assert spec.read_text() == GOOD_SPEC


def test_an_empty_out_is_refused(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("--count", 1, "--out", "")
    assert code == 2 and "--out is empty" in err
    assert list(tmp_path.iterdir()) == []


# -- the set is replaced as a whole -------------------------------------------------------------

# Five documents, the manifest and the earlier exam's record kept (exam_record): renames 2..8
# put them in place.
FILES_IN_A_SET = 7


@pytest.mark.parametrize("at", range(1, FILES_IN_A_SET + 2))
@pytest.mark.slow
def test_a_failed_rename_puts_the_earlier_set_back(earlier_set, at):
    out, before = earlier_set
    result = faulty_gen(out, "error", at, "--count", 3, "--seed", 2)
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "Operation not permitted" in result.stderr and "earlier files are as they were" in result.stderr
    assert the_set(out) == before
    assert no_leftovers(out)


@pytest.mark.parametrize("at", range(1, FILES_IN_A_SET + 2))
@pytest.mark.slow
def test_after_a_kill_at_any_rename_the_next_run_restores_the_earlier_set(earlier_set, at,
                                                                         sets_written_once,
                                                                         run_cli):
    out, before = earlier_set
    after = the_set(sets_written_once / "seed-2")
    result = faulty_gen(out, "kill", at, "--count", 3, "--seed", 2)
    assert result.returncode == -signal.SIGKILL
    for name, data in folder_files(out).items():  # whole files only, old or new
        if not name.startswith(".gen-problems/"):
            assert data in (before.get(name), after.get(name)), name
    # The next run, even one with a bad option, first restores the earlier set.
    assert run_cli("--count", 0, "--out", out)[0] == 2
    assert the_set(out) == before
    assert no_leftovers(out)


@pytest.mark.slow
def test_a_kill_after_the_commit_keeps_the_new_set(earlier_set):
    out, _ = earlier_set
    # Rename number 9 never comes: the kill happens only if it did, so the run completes.
    assert faulty_gen(out, "kill", FILES_IN_A_SET + 2, "--count", 3, "--seed", 2).returncode == 0
    assert json.loads((out / "problems.json").read_text())["seed"] == 2
    assert no_leftovers(out)


@pytest.mark.parametrize("at", [1, 3, FILES_IN_A_SET + 1])
@pytest.mark.slow
def test_ctrl_c_while_writing_exits_130_with_the_earlier_set(earlier_set, at):
    out, before = earlier_set
    result = faulty_gen(out, "interrupt", at, "--count", 3, "--seed", 2)
    assert result.returncode == 130
    assert result.stderr == "gen-problems: interrupted; the output folder is as it was\n"
    assert the_set(out) == before
    assert no_leftovers(out)


@pytest.mark.parametrize("at", [1, 3, FILES_IN_A_SET + 1])
@pytest.mark.slow
def test_a_stop_while_the_set_is_put_in_place_lands_it_whole_and_says_so(earlier_set, at,
                                                                         sets_written_once):
    """A stop amid the renames waits for the last one: the folder then holds the whole new
    set, and the line says so (it once said "as it was" beside the new set)."""
    out, _ = earlier_set
    result = faulty_gen(out, "signal", at, "--count", 3, "--seed", 2)
    assert result.returncode == 130
    assert result.stderr == "gen-problems: interrupted; the new set had been written in full\n"
    landed = {name: data for name, data in the_set(out).items()
              if not name.startswith(".gen-problems/exams/")}  # the earlier exam's record, kept
    assert landed == the_set(sets_written_once / "seed-2")


@pytest.mark.tex
def test_ctrl_c_while_solving_exits_130_with_the_earlier_set(earlier_set):
    out, before = earlier_set
    process = subprocess.Popen([sys.executable, "-m", "generator.cli", "--count", "2000",
                                "--difficulty", "hard", "--pdf", "--out", str(out)], cwd=ROOT,
                               stderr=subprocess.PIPE, text=True)
    try:
        process.wait(timeout=2.5)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    assert process.stderr.read() == "gen-problems: interrupted; the output folder is as it was\n"
    assert the_set(out) == before
    assert not list((out / ".gen-problems").glob("work-*"))


@pytest.mark.slow
def test_two_runs_at_once_leave_one_whole_set(tmp_path):
    out = tmp_path / "out"
    for attempt in range(3):
        runs = [subprocess.Popen([sys.executable, "-m", "generator.cli", "--count", "20",
                                  "--seed", str(seed), "--practice", "--out", str(out)], cwd=ROOT,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for seed in (10 + attempt, 20 + attempt)]
        assert [run.wait(timeout=120) for run in runs] == [0, 0]
        seed = json.loads((out / "problems.json").read_text())["seed"]
        for name in ("questions.md", "answers.md", "questions.tex", "answers.tex"):
            text = (out / name).read_text().replace("{-}", "-")  # LaTeX writes M10{-}1
            assert f"M{seed}-1" in text, name
            assert not any(f"M{other}-1" in text for other in (10 + attempt, 20 + attempt)
                           if other != seed), name
        assert no_leftovers(out)


@pytest.mark.slow
def test_a_full_disk_gives_one_line_and_leaves_the_earlier_set(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        out = small / "out"
        assert gen("--count", 1, "--seed", 1, "--out", out).returncode == 0
        before = the_set(out)
        result = gen("--count", 40, "--seed", 2, "--out", out)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert f"no space left on the disk holding {out}/" in result.stderr
        assert the_set(out) == before
        assert no_leftovers(out)
    finally:
        unmount(small)


@pytest.mark.tex
def test_no_temporary_file_is_left_in_the_temp_folder(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = gen("--count", 2, "--pdf", "--format", "html,moodle", "--out", tmp_path / "out",
                 env={"TMPDIR": str(temp)})
    assert result.returncode == 0, result.stderr
    assert list(temp.iterdir()) == []
    assert gen("--count", 1, "--out", tmp_path / "o2", env={"TMPDIR": "/no/such/dir"}).returncode == 0


# -- permissions ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_files_follow_the_umask_and_keep_a_mode_the_teacher_set(tmp_path):
    out = tmp_path / "out"
    result = gen("--count", 1, "--out", out, preexec_fn=lambda: os.umask(0o077))
    assert result.returncode == 0
    files = [path for path in out.rglob("*") if path.is_file() and path.name != "lock"]
    assert {oct(path.stat().st_mode & 0o777) for path in files} == {"0o600"}
    assert gen("--count", 1, "--out", out).returncode == 0  # umask 022 now: modes are kept
    assert oct((out / "answers.md").stat().st_mode & 0o777) == "0o600"
    (out / "answers.md").chmod(0o640)
    assert gen("--count", 1, "--seed", 5, "--out", out).returncode == 0
    assert oct((out / "answers.md").stat().st_mode & 0o777) == "0o640"


# -- one line, never a traceback -------------------------------------------------------------

@pytest.mark.slow
def test_a_closed_or_broken_stdout_ends_quietly_after_the_files_are_written(tmp_path):
    out = tmp_path / "out"
    closed = gen("--count", 2, "--format", "json", "--out", out, stdout=None,
                 preexec_fn=lambda: os.close(1))
    assert closed.returncode == 141 and closed.stderr == ""
    assert (out / "problems.json").exists()
    # A reader that is gone before the JSON comes (`| head -1` after its line is the same).
    piped = subprocess.run(f"{sys.executable} -m generator.cli --count 50 --format json --practice "
                           f"--out {out} | true; exit ${{PIPESTATUS[0]}}", shell=True,
                           executable="/bin/bash", cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert piped.returncode == 141 and piped.stderr == ""
    assert json.loads((out / "problems.json").read_text())["problems"][49]["id"].endswith("-50")


def test_an_unwritable_out_is_one_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "out")
    assert code == 2 and err.count("\n") == 1 and "is not writable" in err


def test_a_write_error_names_its_cause(tmp_path, run_cli, monkeypatch):
    import generator.running.output as output

    def disk_full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(output, "_write_file", disk_full)
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "out")
    assert code == 1 and err.count("\n") == 1
    assert f"no space left on the disk holding {tmp_path / 'out'}/" in err
