"""The fault campaign's cases (issue 37): each input a teacher might hand the tool by mistake is
refused in one line, or taken as meant; nothing outside --out is touched."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import folder_files

from generator.running import api
from generator.running.roster import load_roster


def test_blank_rows_of_a_roster_are_skipped_before_the_students_are_counted(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n" + "\n" * 50_000 + ",\n" * 50_000 + "s1,Ann Lee\n", encoding="utf-8")
    students = load_roster(roster).students
    assert [(s.id, s.name) for s in students] == [("s1", "Ann Lee")]


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
