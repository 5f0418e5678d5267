"""An output folder from elsewhere (a colleague's zip, a course drive) cannot lead the tool
outside it: its own paths are never followed through a link, and a manifest or journal
that names files outside the folder, or files the tool did not place, changes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import folder_files


def one_line(code, err, expected, exit_code=2):
    assert code == exit_code and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A folder of the teacher's outside the output folder, with files a run must not touch."""
    folder = tmp_path / "elsewhere"
    for name in ("backup/precious.txt", "notes.tmp", "work-important/data.txt", "lock",
                 "version-01.html", "x"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("the teacher's\n")
    return folder


@pytest.fixture
def out(tmp_path, written_once) -> Path:
    """An output folder holding a set made with a practice page per version."""
    return written_once(tmp_path / "out", "--count", 1, "--versions", 2, "--format", "html",
                        "--seed", 1)


def test_a_state_folder_that_is_a_link_is_refused(tmp_path, run_cli, elsewhere):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".gen-problems").symlink_to(elsewhere)
    before = folder_files(elsewhere)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, f"{out / '.gen-problems'} is a link")
    assert folder_files(elsewhere) == before
    assert sorted(p.name for p in out.iterdir()) == [".gen-problems"]


@pytest.mark.parametrize("folder", ["practice", pytest.param("papers", marks=pytest.mark.tex),
                                    pytest.param("keys", marks=pytest.mark.tex)])
def test_an_output_folder_that_is_a_link_is_refused(tmp_path, run_cli, elsewhere, out, folder):
    if (out / folder).exists():
        for path in (out / folder).iterdir():
            path.unlink()
        (out / folder).rmdir()
    (out / folder).symlink_to(elsewhere)
    before, earlier = folder_files(elsewhere), folder_files(out)
    args = ["--pdf"] if folder != "practice" else []
    code, _, err = run_cli("--count", 1, "--versions", 2, "--format", "html", *args, "--out", out)
    one_line(code, err, f"{out / folder} is a link")
    assert folder_files(elsewhere) == before and folder_files(out) == earlier


def test_a_lock_that_is_a_link_is_refused(run_cli, elsewhere, out):
    (out / ".gen-problems" / "lock").unlink()
    (out / ".gen-problems" / "lock").symlink_to(elsewhere / "new-file")
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "lock is a link")
    assert not (elsewhere / "new-file").exists()


def test_a_dead_runs_work_folder_holding_links_is_swept_alone(run_cli, elsewhere, out):
    work = out / ".gen-problems" / "work-dead"
    work.mkdir()
    (work / "lock").symlink_to(elsewhere / "lock")
    (work / "staged").symlink_to(elsewhere)
    (out / ".gen-problems" / "backup").symlink_to(elsewhere / "backup")
    before = folder_files(elsewhere)
    code, _, err = run_cli("--count", 1, "--out", out)
    assert code == 0, err
    assert folder_files(elsewhere) == before
    assert not work.exists()


def forged_journal(out: Path, **changes) -> None:
    journal = {"tool": "gen-problems", "created": [], "replaced": [], "placed": {}, **changes}
    (out / ".gen-problems" / "journal.json").write_text(json.dumps(journal))


@pytest.mark.parametrize("args", [["--count", 1], ["--count", 0]])
@pytest.mark.parametrize("name", ["../elsewhere/x", "{elsewhere}/x", "a/../../elsewhere/x",
                                  "./../elsewhere/x", ""])
def test_a_journal_naming_files_outside_deletes_nothing(tmp_path, run_cli, elsewhere, out,
                                                        name, args):
    name = name.format(elsewhere=elsewhere)
    forged_journal(out, created=[name], replaced=[name], placed={})
    before, earlier = folder_files(elsewhere), folder_files(out)
    code, _, err = run_cli(*args, "--out", out)
    one_line(code, err, "is not a journal gen-problems wrote")
    assert folder_files(elsewhere) == before and folder_files(out) == earlier


@pytest.mark.parametrize("text", ["[]", "{}", '{"created": 5}', "not json", '"x"',
                                  '{"tool": "gen-problems", "created": [1], "replaced": [], '
                                  '"placed": {}}', "\xff\xfe"])
def test_a_journal_of_the_wrong_shape_is_one_line(run_cli, out, text):
    (out / ".gen-problems" / "journal.json").write_text(text, encoding="latin-1")
    earlier = folder_files(out)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "is not a journal gen-problems wrote")
    assert folder_files(out) == earlier


def test_a_journal_through_a_link_inside_the_folder_is_refused(run_cli, elsewhere, out):
    (out / "sub").symlink_to(elsewhere)
    forged_journal(out, created=["sub/x"], placed={"sub/x": [0, 0]})
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "is not a journal gen-problems wrote")
    assert (elsewhere / "x").exists()


def test_a_journal_cannot_remove_or_replace_a_file_the_tool_did_not_place(run_cli, out):
    """Files inside the folder named by a well-formed journal: only the files the commit
    placed (the same inode) are removed or replaced, never the teacher's."""
    (out / "notes.txt").write_text("mine\n")
    (out / "backup-of-mine.txt").write_text("mine too\n")
    (out / ".gen-problems" / "backup").mkdir()
    (out / ".gen-problems" / "backup" / "backup-of-mine.txt").write_text("forged\n")
    forged_journal(out, created=["notes.txt"], replaced=["backup-of-mine.txt"],
                   placed={"notes.txt": [1, 2], "backup-of-mine.txt": [1, 2]})
    code, _, err = run_cli("--count", 1, "--out", out)
    assert code == 0, err
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "backup-of-mine.txt").read_text() == "mine too\n"


@pytest.mark.parametrize("listed", ["../elsewhere/x", "/etc/hostname", ".gen-problems/lock"])
def test_a_manifest_naming_files_outside_is_refused(tmp_path, run_cli, elsewhere, out, listed):
    manifest = out / ".gen-problems" / "manifest.json"
    files = json.loads(manifest.read_text())["files"]
    manifest.write_text(json.dumps({"tool": "gen-problems", "files": files + [listed]}))
    before, earlier = folder_files(elsewhere), folder_files(out)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "it was not written by gen-problems")
    assert folder_files(elsewhere) == before and folder_files(out) == earlier


def test_state_files_that_are_links_are_not_followed(run_cli, elsewhere, out):
    for name in ("manifest.json", "journal.json.tmp"):
        path = out / ".gen-problems" / name
        path.unlink(missing_ok=True)
        path.symlink_to(elsewhere / "x")
    before = folder_files(elsewhere)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "is a link")
    assert folder_files(elsewhere) == before


def test_a_backup_folder_that_is_a_link_brings_nothing_in(tmp_path, run_cli, elsewhere, out):
    """A journal naming a file to restore from a backup/ that leads elsewhere: refused, and
    the file elsewhere stays where it is."""
    (out / ".gen-problems" / "backup").symlink_to(elsewhere)
    forged_journal(out, replaced=["x"], placed={})
    before, earlier = folder_files(elsewhere), folder_files(out)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "is not a journal gen-problems wrote")
    assert folder_files(elsewhere) == before and folder_files(out) == earlier


def test_a_backup_reached_through_a_link_brings_nothing_in(tmp_path, run_cli, elsewhere, out):
    (out / ".gen-problems" / "backup").mkdir()
    (out / ".gen-problems" / "backup" / "sub").symlink_to(elsewhere)
    forged_journal(out, replaced=["sub/x"], placed={})
    before = folder_files(elsewhere)
    code, _, err = run_cli("--count", 1, "--out", out)
    one_line(code, err, "is not a journal gen-problems wrote")
    assert folder_files(elsewhere) == before and not (out / "sub").exists()


def test_a_work_folder_that_is_a_link_is_removed_as_a_link(run_cli, elsewhere, out):
    (out / ".gen-problems" / "work-x").symlink_to(elsewhere)
    (elsewhere / "lock").unlink()
    before = folder_files(elsewhere)
    code, _, err = run_cli("--count", 1, "--out", out)
    assert code == 0, err
    assert folder_files(elsewhere) == before and not (elsewhere / "lock").exists()
    assert not os.path.lexists(out / ".gen-problems" / "work-x")
