"""The exam key stays the teacher's: its folders are private under any umask, and a key
other users could read or swap is refused in one line."""

import os
import stat

import pytest


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_key_and_its_folders_are_private_under_umask_000(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    old = os.umask(0)
    try:
        code, _, err = run_cli("--count", 1, "--out", tmp_path / "o")
    finally:
        os.umask(old)
    assert code == 0, err
    key = tmp_path / "home" / ".config" / "gen-problems" / "exam.key"
    assert mode(key) == 0o600
    assert mode(key.parent) == 0o700 and mode(key.parent.parent) == 0o700


@pytest.mark.parametrize("permissions, says", [
    (0o644, "other users may read this exam key"),
    (0o604, "other users may read this exam key"),
    (0o620, "other users may change this exam key"),
    (0o602, "other users may change this exam key"),
])
def test_a_key_others_may_read_or_change_is_refused(tmp_path, run_cli, permissions, says):
    key = tmp_path / "shared.key"
    assert run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")[0] == 0
    before = (tmp_path / "o" / "answers.md").read_bytes()
    key.chmod(permissions)
    code, out, err = run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and says in err and f"chmod 600 {key}" in err, err
    assert (tmp_path / "o" / "answers.md").read_bytes() == before


def test_a_key_colleagues_may_read_is_allowed(tmp_path, run_cli):
    key = tmp_path / "course.key"
    assert run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")[0] == 0
    key.chmod(0o640)
    assert run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")[0] == 0


def test_a_key_in_a_folder_anyone_may_write_is_refused(tmp_path, run_cli):
    shared = tmp_path / "drive"
    shared.mkdir()
    key = shared / "exam.key"
    assert run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")[0] == 0
    shared.chmod(0o777)
    code, _, err = run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")
    assert code == 2 and "could be swapped" in err, err
    shared.chmod(0o1777)  # sticky, as /tmp: only the owner may replace the key
    assert run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")[0] == 0
