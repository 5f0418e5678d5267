"""Every gen-problems command shown in the README's code blocks runs as shown (exit 0)."""

import re
import shlex
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.DOTALL)
COMMANDS = [line.split("  #")[0].strip() for kind, body in BLOCKS if kind == "sh"
            for line in body.splitlines() if line.startswith("gen-problems ")]


def block_after(marker: str) -> str:
    """The first code block after a line of the README, e.g. the roster it shows."""
    return re.search(re.escape(marker) + r".*?```\w*\n(.*?)```", README, re.DOTALL).group(1)


@pytest.fixture
def readers_folder(tmp_path, monkeypatch):
    """A folder holding the files the README's commands name, as the README shows them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "roster.csv").write_text(block_after("`roster.csv` is CSV"))
    (tmp_path / "worked.toml").write_text(block_after("five lines, `worked.toml`"))
    return tmp_path


def test_the_readme_shows_commands():
    assert len(COMMANDS) >= 12


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_runs_as_shown(readers_folder, run_cli, command):
    words = shlex.split(command)[1:]
    code, _, err = run_cli(*words, "--out", readers_folder / "out")
    assert code == 0, err
