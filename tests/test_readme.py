"""Every gen-problems command shown in the README's code blocks runs as shown (exit 0).

The commands run in the README's order, in one folder holding the files they name. A command
without --out gets one of its own; the example exam code (K7Q2-M4XP) stands for a code of the
record that its command names, since codes come from each teacher's own key."""

import json
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


EXAMPLE_CODE = "K7Q2-M4XP"


@pytest.fixture(scope="module")
def shared_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_runs_as_shown(shared_folder, readers_folder, run_cli, command,
                                            monkeypatch):
    monkeypatch.chdir(shared_folder)  # earlier commands' folders stay for later ones
    for name in ("roster.csv", "worked.toml"):
        (shared_folder / name).write_text((readers_folder / name).read_text())
    words = shlex.split(command)[1:]
    if EXAMPLE_CODE in words:
        record = json.loads(Path(words[words.index("--record") + 1]).read_text())
        words[words.index(EXAMPLE_CODE)] = record["problems"][0]["id"]
    if "--out" not in words:
        words += ["--out", "out"]
    code, _, err = run_cli(*words)
    assert code == 0, err


def test_the_readme_names_every_template():
    root = Path(__file__).resolve().parent.parent / "templates"
    for path in root.rglob("*"):
        if path.is_file():
            name = path.relative_to(root).as_posix()
            folder, _, rest = name.rpartition("/")
            family = f"{folder}/<" in README  # e.g. latex/steps/<step or kind>.tex.j2
            markdown = name.startswith("markdown/") and (
                "latex/" + name[len("markdown/"):].replace(".md.j2", ".tex.j2") in README
                or f"latex/{folder[len('markdown/'):]}/<" in README)
            assert name in README or family or markdown, name
