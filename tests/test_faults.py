"""The fault campaign's cases (issue 37): each input a teacher might hand the tool by mistake is
refused in one line, or taken as meant; nothing outside --out is touched."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Callable
from xml.etree import ElementTree

import pytest
import sympy
from conftest import folder_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.maths.spec import load_spec_file
from generator.pdf.pdfcut import cut_papers
from generator.rendering.teacher_text import text_fault
from generator.running import api, progress
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


# -- the output folder's state (.gen-problems/): read defensively ------------------------------

@pytest.fixture
def sibling(tmp_path) -> Path:
    """A folder of the teacher's beside --out: no run may touch it."""
    folder = tmp_path / "sibling"
    folder.mkdir()
    (folder / "x.txt").write_text("the teacher's\n")
    return folder


@pytest.fixture
def out(tmp_path, written_once) -> Path:
    """An output folder holding a set written by gen-problems, its practice page among it."""
    return written_once(tmp_path / "out", "--count", 1, "--format", "html", "--seed", 1)


def refused(code, err, *words):
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert all(word in err for word in words), err


def rewrite_manifest(out: Path, change) -> None:
    manifest = out / ".gen-problems" / "manifest.json"
    manifest.write_text(json.dumps(change(json.loads(manifest.read_text()))))


@pytest.mark.parametrize("listed", ["../../../x.txt", "../sibling/x.txt", "{sibling}/x.txt",
                                    "a/../../sibling/x.txt", "linked/x.txt", "notes.txt"])
def test_a_manifest_listing_a_path_it_does_not_own_is_refused(run_cli, out, sibling, listed):
    (out / "linked").symlink_to(sibling)
    (out / "notes.txt").write_text("mine\n")
    rewrite_manifest(out, lambda m: {**m, "files": [*m["files"], listed.format(sibling=sibling)]})
    before, earlier = folder_files(sibling), folder_files(out)
    code, _, err = run_cli("--count", 1, "--practice", "--out", out)
    refused(code, err, "manifest.json", "not", "delete it to go on")
    assert folder_files(sibling) == before and folder_files(out) == earlier


def test_an_owned_name_reached_through_a_linked_folder_is_refused(run_cli, out, sibling):
    (out / "practice").symlink_to(sibling)
    rewrite_manifest(out, lambda m: {**m, "files": [*m["files"], "practice/x.txt"]})
    before = folder_files(sibling)
    code, _, err = run_cli("--count", 1, "--practice", "--out", out)
    refused(code, err, f"{out / 'practice'} is a link")
    assert folder_files(sibling) == before


@pytest.mark.parametrize("text", ["[1,2]", "{}", '{"files": "answers.md"}', '{"files": [1]}',
                                  "not json", '{"files": [], "identities": {"x": 1}}'])
def test_a_manifest_of_the_wrong_shape_is_one_line_and_stays(run_cli, out, text):
    (out / ".gen-problems" / "manifest.json").write_text(text)
    earlier = folder_files(out)
    for _ in range(2):  # every run says the same, none crashes
        code, _, err = run_cli("--count", 1, "--out", out)
        refused(code, err, "manifest.json is ", "inspect it, and delete it to go on")
    assert folder_files(out) == earlier


@pytest.mark.parametrize("text", ["[1,2]", "{}", '{"created":[1],"replaced":[2]}', "not json",
                                  '{"tool": "gen-problems", "created": [], "replaced": [], '
                                  '"placed": [], "x": 1}',
                                  '{"tool": "gen-problems", "created": [".gen-problems/lock"], '
                                  '"replaced": [], "placed": {}}',
                                  '{"tool": "gen-problems", "created": ["../sibling/x.txt"], '
                                  '"replaced": ["../sibling/x.txt"], "placed": {}}'])
def test_a_journal_of_the_wrong_shape_is_one_line_and_stays(run_cli, out, sibling, text):
    (out / ".gen-problems" / "journal.json").write_text(text)
    before, earlier = folder_files(sibling), folder_files(out)
    for _ in range(2):  # every run says the same, none crashes
        code, _, err = run_cli("--count", 1, "--out", out)
        refused(code, err, "journal.json ", "is not a journal gen-problems wrote",
                "inspect it, and delete it to go on")
    assert folder_files(sibling) == before and folder_files(out) == earlier


@pytest.mark.parametrize("name", ["journal.json", "manifest.json"])
def test_a_huge_state_file_is_refused_unread(run_cli, out, name):
    with open(out / ".gen-problems" / name, "wb") as huge:
        huge.truncate(100 << 20)  # 100 MB (sparse: the test writes nothing)
    started = time.perf_counter()
    code, _, err = run_cli("--count", 1, "--out", out)
    refused(code, err, f"{name} is 100 MB")
    assert time.perf_counter() - started < 2
    assert (out / ".gen-problems" / name).stat().st_size == 100 << 20


@pytest.mark.parametrize("entry, made", [(".gen-problems", "file"),
                                         (".gen-problems/lock", "folder"),
                                         (".gen-problems/manifest.json", "folder"),
                                         (".gen-problems/journal.json", "folder"),
                                         (".gen-problems/exams", "file")])
def test_a_state_entry_of_the_wrong_kind_is_one_line_and_stays(run_cli, out, entry, made):
    path = out / entry
    if path.is_dir():
        shutil.rmtree(path)
    path.unlink(missing_ok=True)
    if made == "folder":
        path.mkdir()
    else:
        path.write_text("mine\n")
    earlier = folder_files(out)
    code, _, err = run_cli("--count", 1, "--out", out)
    refused(code, err, f"{path} is not a", "inspect it")
    assert folder_files(out) == earlier and path.exists()


def test_a_file_the_teacher_put_in_place_of_the_tools_is_kept(run_cli, out):
    (out / "practice.html").unlink()
    (out / "practice.html").write_bytes(b"<p>my own page</p>\n")
    earlier = folder_files(out)
    code, _, err = run_cli("--count", 1, "--format", "html", "--out", out)
    refused(code, err, f"{out / 'practice.html'} is not the file gen-problems wrote",
            "it is kept and nothing was written")
    assert folder_files(out) == earlier

    code, _, err = run_cli("--count", 1, "--practice", "--out", out)  # a set without a page
    assert code == 0, err
    assert f"note: {out / 'practice.html'} is not the file gen-problems wrote there" in err
    assert (out / "practice.html").read_bytes() == b"<p>my own page</p>\n"
    assert "practice.html" not in json.loads((out / ".gen-problems" / "manifest.json")
                                             .read_text())["files"]  # the teacher's now


def test_a_file_edited_in_place_to_the_same_size_is_kept(run_cli, out):
    key = out / "answers.md"
    edited = key.read_bytes().replace(b"Problem 1", b"Problem A", 1)
    key.write_bytes(edited)
    code, _, err = run_cli("--count", 1, "--out", out)
    refused(code, err, f"{key} is not the file gen-problems wrote")
    assert key.read_bytes() == edited


def test_a_changed_file_every_run_writes_is_refused_before_any_work(run_cli, out, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the run started its work")

    monkeypatch.setattr(api, "Scheduler", no_work)
    (out / "questions.tex").write_text("% my own sheet\n")
    code, _, err = run_cli("--count", 2000, "--difficulty", "hard", "--out", out)
    refused(code, err, "questions.tex is not the file gen-problems wrote")


def test_a_folder_in_place_of_a_file_of_the_set_is_kept(run_cli, out):
    (out / "practice.html").unlink()
    (out / "practice.html").mkdir()
    (out / "practice.html" / "mine.txt").write_text("mine\n")
    code, _, err = run_cli("--count", 1, "--practice", "--out", out)
    assert code == 0 and "note:" in err and "practice.html is not the file" in err, err
    assert (out / "practice.html" / "mine.txt").read_text() == "mine\n"


def test_the_manifest_records_each_files_size_and_hash(out):
    manifest = json.loads((out / ".gen-problems" / "manifest.json").read_text())
    assert sorted(manifest["identities"]) == manifest["files"]
    for name, identity in manifest["identities"].items():
        data = (out / name).read_bytes()
        assert identity == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_a_manifest_of_an_earlier_version_without_identities_still_works(run_cli, out):
    rewrite_manifest(out, lambda m: {"tool": "gen-problems", "files": m["files"]})
    (out / "practice.html").write_text("replaced, but the tool cannot tell\n")
    code, _, err = run_cli("--count", 1, "--practice", "--out", out)
    assert code == 0 and "Traceback" not in err, err
    assert not (out / "practice.html").exists()  # owned by name, as before
    assert "identities" in json.loads((out / ".gen-problems" / "manifest.json").read_text())


def test_a_copied_folder_stays_the_tools(tmp_path, run_cli, out):
    """Identity is by content, not inode: a folder copied elsewhere (cp -r, a zip) is still
    replaced as a whole."""
    copy = Path(shutil.copytree(out, tmp_path / "copy"))
    code, _, err = run_cli("--count", 1, "--format", "html", "--seed", 2, "--out", copy)
    assert code == 0, err
    assert (copy / "practice.html").read_bytes() != (out / "practice.html").read_bytes()


# -- odd text: one rule for every text a teacher types -------------------------------------------

SPEC = 'X = [[1, 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 2]]\nW_V = [[1, 0], [0, 1]]\n'
# What no document can print: ESC, NUL, BEL, form feed, DEL, a C1 control, U+FFFE, a lone surrogate.
UNPRINTABLE = ["\x1b", "\x00", "\x07", "\x0c", "\x7f", "\x85", "\ufffe", "\ud800"]


def refused_run(run_cli, out: Path, *args) -> str:
    """The one line a refused run prints (exit 2, no traceback), having written nothing to ``out``."""
    code, printed, err = run_cli(*args, "--out", out)
    assert code == 2, err
    assert printed == ""
    assert err.count("\n") == 1 and err.startswith("gen-problems: error: "), err
    assert "Traceback" not in err
    assert not out.exists()
    return err


def json_text(value: str) -> str:
    """A string literal, JSON or TOML, that holds ``value``: each control character as \\uXXXX."""
    return json.dumps(value)


@pytest.mark.parametrize("suffix, char", [(".json", char) for char in UNPRINTABLE]
                         + [(".toml", char) for char in UNPRINTABLE[:-1]],  # TOML holds no surrogate
                         ids=ascii)
def test_a_spec_files_title_with_a_control_character_is_refused(tmp_path, run_cli, char, suffix):
    spec = tmp_path / f"odd{suffix}"
    record = {"title": f"Week{char}3", "X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
              "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}
    if suffix == ".json":
        spec.write_text(json.dumps(record), encoding="utf-8")
    else:
        spec.write_text(f"title = {json_text(f'Week{char}3')}\n{SPEC}", encoding="utf-8")
    err = refused_run(run_cli, tmp_path / "out", "--spec", spec, "--pdf", "--format", "moodle,qti")
    assert "title holds" in err and f"U+{ord(char):04X}" in err


@pytest.mark.parametrize("key", ["type", "mask", "mistake"])
def test_any_other_text_of_a_spec_file_with_a_control_character_is_refused(tmp_path, run_cli, key):
    spec = tmp_path / "odd.toml"
    spec.write_text(f'{key} = "\\u001b[31m"\n{SPEC}', encoding="utf-8")
    err = refused_run(run_cli, tmp_path / "out", "--spec", spec)
    assert key in err and "\x1b" not in err  # the message quotes it escaped, not raw


@pytest.mark.parametrize("char", ["\x1b", "\x00", "\x07", "\x7f", "\ufffe"], ids=ascii)
@pytest.mark.parametrize("column", ["name", "id"])
def test_a_roster_name_with_a_control_character_is_refused_naming_the_row_and_student(
        tmp_path, run_cli, char, column):
    roster = tmp_path / "class.csv"
    name, sid = ("Ann" + char + "Lee", "s2") if column == "name" else ("Ann Lee", "s" + char + "2")
    roster.write_text(f"id,name\ns1,Bo Chen\n{sid},{name}\n", encoding="utf-8", newline="")
    err = refused_run(run_cli, tmp_path / "out", "--students", roster, "--count", 1, "--pdf")
    assert "class.csv, line 3" in err and f"U+{ord(char):04X}" in err
    assert ("name of student s2" if column == "name" else "id of student Ann Lee") in err


@pytest.mark.parametrize("char", ["\x0b", "\x0c", "\x85", "\u2028"], ids=ascii)
def test_white_space_inside_a_roster_cell_is_a_space(tmp_path, char):
    roster = tmp_path / "class.csv"
    roster.write_text(f"id,name\ns1,Ann{char}Lee\n", encoding="utf-8", newline="")
    assert [(s.id, s.name) for s in load_roster(roster).students] == [("s1", "Ann Lee")]


@pytest.mark.parametrize("char", UNPRINTABLE[:-1], ids=ascii)
@pytest.mark.parametrize("option", ["--title", "--course", "--institution", "--date", "--instructions"])
def test_a_header_option_with_a_control_character_is_refused(tmp_path, run_cli, char, option):
    err = refused_run(run_cli, tmp_path / "out", option, f"Week{char}3", "--count", 1, "--pdf")
    assert option[2:] in err and f"U+{ord(char):04X}" in err


@pytest.mark.parametrize("key", ["title", "course", "instructions"])
def test_a_header_configs_text_with_a_control_character_is_refused(tmp_path, run_cli, key):
    config = tmp_path / "header.toml"
    config.write_text(f'{key} = "Week\\u0007 3"\n[extra]\nroom = "B12"\n', encoding="utf-8")
    err = refused_run(run_cli, tmp_path / "out", "--config", config, "--count", 1)
    assert key in err and "U+0007" in err


@pytest.mark.parametrize("title", ["", " ", "\t"], ids=repr)
def test_a_blank_title_is_refused_in_one_line(tmp_path, run_cli, title):
    err = refused_run(run_cli, tmp_path / "out", "--title", title, "--count", 1, "--pdf")
    assert "title is blank" in err


def test_blank_header_texts_are_no_texts(tmp_path, run_cli):
    """A blank course, institution or date prints nothing; blank instructions none; instructions
    that start or end with blank lines print without them (LaTeX: "There's no line here to end")."""
    from generator.rendering.paper import header_fields
    fields = header_fields(None, {"course": " ", "institution": "\t", "date": "",
                                  "instructions": "\n \nWork alone.\r\n\n  Show your work. \n"})
    assert fields == {"course": "", "institution": "", "date": "",
                      "instructions": "Work alone.\n\nShow your work."}
    assert header_fields(None, {"instructions": "\n"}) == {"instructions": ""}


@pytest.mark.tex
@pytest.mark.parametrize("header", [("--course", " ", "--institution", "\t", "--instructions", "\n"),
                                    ("--instructions", "\n\nFirst line\n\n\nLast line\r\n ")],
                         ids=["blank", "blank-lines"])
def test_blank_header_texts_typeset(tmp_path, run_cli, header):
    code, _, err = run_cli(*header, "--count", 1, "--seed", 3, "--pdf", "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "questions.pdf").exists() and (tmp_path / "out" / "answers.pdf").exists()


ODD_BUT_PRINTABLE = "<b>&amp; ]]> \"quotes\" 'x' {1:SHORTANSWER:=x} \\(x\\) \u200f\u05e9\u05dc\u05d5\u05dd \U0001f600 \ufdd0 \ue000 \tA"


def test_moodle_xml_stays_well_formed_for_any_text_accepted(tmp_path, run_cli):
    spec = tmp_path / "odd.json"
    spec.write_text(json.dumps({"title": ODD_BUT_PRINTABLE, "X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
                                "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}), encoding="utf-8")
    roster = tmp_path / "class.csv"
    roster.write_text(f'id,name\ns1,"{ODD_BUT_PRINTABLE.replace(chr(34), chr(34) * 2)}"\n', encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = run_cli("--spec", spec, "--students", roster, "--title", ODD_BUT_PRINTABLE,
                           "--course", ODD_BUT_PRINTABLE, "--format", "moodle,qti", "--out", out)
    assert code == 0, err
    root = ElementTree.parse(out / "moodle.xml").getroot()  # raises on XML that is not well-formed
    assert any(ODD_BUT_PRINTABLE in text for text in root.itertext())  # in the category, as typed
    with zipfile.ZipFile(out / "qti.zip") as package:
        for name in package.namelist():
            if name.endswith(".xml"):
                ElementTree.fromstring(package.read(name))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and text_fault(t) is None))
def test_moodle_xml_is_well_formed_for_any_title_the_rule_lets_through(tmp_path_factory, text):
    out = tmp_path_factory.mktemp("moodle") / "out"
    assert main([f"--title={text}", f"--course={text}", "--count", "1", "--seed", "2", "--types", "row",
                 "--format", "moodle", "--out", str(out)]) == 0
    root = ElementTree.parse(out / "moodle.xml").getroot()
    assert any(text.strip().replace("/", "-") in found for found in root.itertext())


# -- numbers in spec files: exactly the grammar the guide states -----------------------------------

@pytest.mark.parametrize("literal", ["0x10", "0o7", "0b1", "1_000", "1_0.5", "inf", "-inf", "nan", "+nan"])
def test_a_toml_number_not_written_plainly_is_refused_naming_the_key_and_entry(tmp_path, run_cli, literal):
    spec = tmp_path / "odd.toml"
    spec.write_text(SPEC.replace("W_K = [[1, 0], [0, 2]]", f"W_K = [[1, 0], [0, {literal}]]"))
    err = refused_run(run_cli, tmp_path / "out", "--spec", spec)
    assert f"W_K row 2, column 2: '{literal}' is not" in err


@pytest.mark.parametrize("text", ["scale = 0x1\n", 'mask = "window"\nwindow = 0b1\n'])
def test_a_toml_option_not_written_plainly_is_refused(tmp_path, run_cli, text):
    spec = tmp_path / "odd.toml"
    spec.write_text(text + SPEC)
    err = refused_run(run_cli, tmp_path / "out", "--spec", spec)
    assert text.split()[-1] in err


def test_numbers_written_plainly_and_the_same_characters_in_texts_are_taken(tmp_path):
    spec = tmp_path / "plain.toml"
    spec.write_text('title = """0x10, 1_000 and inf"""  # nan 0b1\n'
                    'X = [[+1, 0.5], [1e1, -0.0]]  # 0o7\n' + SPEC.split("\n", 1)[1]
                    + 'mask = [[0, -inf], [0, 0]]\n')
    (problem,) = load_spec_file(spec)
    assert problem.title == "0x10, 1_000 and inf"
    assert [list(row) for row in problem.matrices["X"]] == [[1, sympy.Rational(1, 2)], [10, 0]]
    assert problem.mask == "custom"


# -- the record: every field of the type and range gen-problems writes -----------------------------

@pytest.fixture(scope="module")
def exam_record(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("record") / "out"
    assert main(["--count", "2", "--seed", "5", "--out", str(out)]) == 0
    return json.loads((out / "problems.json").read_text())


@pytest.mark.parametrize("where, field, value", [
    ("problem", "number", True), ("problem", "number", -5), ("problem", "number", 1e100),
    ("problem", "number", 10**100), ("problem", "number", "3"), ("problem", "number", 0),
    ("problem", "seed", True), ("problem", "seed", -5), ("problem", "seed", 1e100),
    ("record", "seed", True), ("record", "seed", -5), ("record", "seed", 10**30),
    ("record", "draw_command", 5), ("record", "decimals", True),
    ("documents", "title", 5), ("documents", "title", "a\x1bb"), ("documents", "practice", 1),
])
def test_a_record_field_of_the_wrong_type_or_range_is_refused_naming_it(
        tmp_path, run_cli, exam_record, where, field, value):
    record = copy.deepcopy(exam_record)
    {"record": record, "problem": record["problems"][0], "documents": record["documents"]}[where][field] = value
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(record))
    err = refused_run(run_cli, tmp_path / "out", "--record", path)
    assert field in err
    if where == "problem":  # and so is the problem set again alone
        again = refused_run(run_cli, tmp_path / "out", "--record", path, "--problem", record["problems"][0]["id"])
        assert field in again


# -- huge inputs: refused before they are parsed ---------------------------------------------------

W = 'W_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 1]]\nW_V = [[1, 0], [0, 1]]\n'


@pytest.mark.parametrize("name, text, expected", [
    ("thirds.toml", "X = [[" + ",".join(['"1/3"'] * 2_500_000) + "]]\n" + W, "X holds more than"),
    ("thirds.json", json.dumps({"X": [["1/3"] * 2_200_000], "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}),
     "X is 1 x 2200000"),
    ("zeros.toml", "X = [[" + ",".join(["0"] * 7_900_000) + "]]\n" + W, "X holds more than"),
    ("square.toml", "X = [" + ",".join(["[" + ",".join(["12"] * 2000) + "]"] * 2000) + "]\n" + W,
     "X holds more than"),
    ("rows.toml", "X = [" + ",".join(["[1, 0]"] * 1_000_000) + "]\n" + W, "X holds more than"),
    ("keys.toml", "a = 1\n" * 2_000_000, "more than 200000 keys"),
    ("many.toml", ("[[problem]]\nX = [[" + ",".join(["0"] * 900) + "]]\n") * 2300, "more than 2000000 entries"),
    ("wide.json", json.dumps({"X": [[0] * 65] * 2, "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}),
     "X is 2 x 65"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 20 else "")
def test_a_huge_spec_is_refused_before_it_is_parsed(tmp_path, run_cli, name, text, expected):
    spec = tmp_path / name
    spec.write_text(text)
    assert expected in refused_run(run_cli, tmp_path / "out", "--spec", spec)


def test_a_huge_record_is_refused_before_it_is_parsed(tmp_path, run_cli, exam_record):
    many = {**exam_record, "problems": exam_record["problems"] * 5000}
    (tmp_path / "many.json").write_text(json.dumps(many))
    assert "more than 5000 problems" in refused_run(run_cli, tmp_path / "out", "--record", tmp_path / "many.json")
    wide = copy.deepcopy(exam_record)
    wide["problems"][0]["spec"]["X"] = [["1/3"] * 2_000_000]
    (tmp_path / "wide.json").write_text(json.dumps(wide))
    assert "X is 1 x 2000000" in refused_run(run_cli, tmp_path / "out", "--record", tmp_path / "wide.json")


@pytest.mark.parametrize("text, expected", [
    ("id,name\n" + "\n" * 8_000_000 + "s1,Ann Lee\n", "more than 200000 lines"),
    ("id,name\n" + "s1,Ann Lee\r" * 300_000, "more than 200000 lines"),
    ("id,name" + "," * 8_000_000 + "\ns1,Ann Lee\n", "line 1: more than 2000 columns"),
    ("id,name\ns1,Ann Lee" + ",x" * 5000 + "\n", "line 2: more than 2000 columns"),
], ids=["blank-lines", "cr-lines", "wide-header", "wide-row"])
def test_a_huge_roster_is_refused_before_it_is_read(tmp_path, run_cli, text, expected):
    roster = tmp_path / "class.csv"
    roster.write_text(text, newline="")
    assert expected in refused_run(run_cli, tmp_path / "out", "--students", roster, "--count", 1)


def test_a_record_with_a_blank_title_sets_its_exam_again_under_the_default_title(tmp_path, run_cli, exam_record):
    """A record written when a blank --title was still taken: set again, not refused."""
    record = copy.deepcopy(exam_record)
    record["documents"]["title"] = " "
    (tmp_path / "problems.json").write_text(json.dumps(record))
    code, _, err = run_cli("--record", tmp_path / "problems.json", "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "questions.md").read_text().startswith("# Scaled dot-product self-attention")


def test_a_records_student_with_a_control_character_is_refused(tmp_path, run_cli):
    roster = tmp_path / "class.csv"
    roster.write_text("id,name\ns1,Ann Lee\ns2,Bo Chen\n")
    assert run_cli("--students", roster, "--count", 1, "--out", tmp_path / "set")[0] == 0
    record = json.loads((tmp_path / "set" / "problems.json").read_text())
    record["papers"][1]["name"] = "Bo\x1bChen"
    (tmp_path / "problems.json").write_text(json.dumps(record))
    err = refused_run(run_cli, tmp_path / "out", "--record", tmp_path / "problems.json")
    assert "papers: the name of student s2" in err and "U+001B" in err
