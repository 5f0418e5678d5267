"""Every gen-problems command shown in the README's and the docs' code blocks runs as shown
(exit 0).

Each document's commands run in its order, in one folder of its own holding the files the
document shows: a code block right after a line ending in a file's name and a colon
(``roster.csv`:``) is that file.  A command without --out gets one of its own; the example
exam code (K7Q2-M4XP) stands for a code of the record that its command names, since codes
come from each teacher's own key.  Every document's commands draw with one fixed exam key, so
that a command with a seed draws the same problems on every run of the suite.  Commands that
compile PDFs are marked tex; commands that name the example plugin's type or format run
only where that plugin is installed."""

import importlib.util
import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GUIDE = ROOT / "docs" / "guide.md"
FILE_BLOCK = re.compile(r"`([\w.-]+\.(?:csv|toml|json))`:\n\n```\w*\n(.*?)```", re.DOTALL)
EXAMPLE_CODE = "K7Q2-M4XP"
PLUGIN_NAMES = {"sentence-vector", "answer-sheet"}  # examples/gen-problems-pooling's


def text_of(document: Path) -> str:
    return document.read_text(encoding="utf-8")


def commands_of(document: Path) -> list[str]:
    """The gen-problems lines of the document's ```sh blocks, comments cut off, in order."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", text_of(document), re.DOTALL)
    return [line.split("  #")[0].strip() for kind, body in blocks if kind == "sh"
            for line in body.splitlines() if line.startswith("gen-problems ")]


def files_of(document: Path) -> dict[str, str]:
    """The files the document shows (the first block of each name)."""
    files: dict[str, str] = {}
    for name, body in FILE_BLOCK.findall(text_of(document)):
        files.setdefault(name, body)
    return files


def marked(document: Path, number: int, command: str):
    words = set(shlex.split(command))
    marks = [pytest.mark.tex] if "--pdf" in words else []
    if words & PLUGIN_NAMES and importlib.util.find_spec("gen_problems_pooling") is None:
        marks.append(pytest.mark.skip(reason="the example plugin is not installed here"))
    return pytest.param(document, command, marks=marks,
                        id=f"{document.relative_to(ROOT).as_posix()}-{number}")


SHOWN = [marked(document, number, command) for document in DOCUMENTS
         for number, command in enumerate(commands_of(document), 1)]


def test_the_documents_show_commands():
    assert len(commands_of(ROOT / "README.md")) >= 4
    assert len(commands_of(GUIDE)) >= 12


def test_the_files_the_commands_name_are_shown():
    """roster.csv and worked.toml are shown in the documents that use them."""
    for document in DOCUMENTS:
        used = {word for command in commands_of(document) for word in shlex.split(command)
                if re.fullmatch(r"[\w-]+\.(csv|toml)", word)}
        assert used <= set(files_of(document)), document.name


@pytest.fixture(scope="module")
def fixed_key(tmp_path_factory) -> Path:
    """A config folder whose exam key is always the same (private, as the tool requires)."""
    config = tmp_path_factory.mktemp("config")
    folder = config / "gen-problems"
    folder.mkdir(mode=0o700)
    key = folder / "exam.key"
    key.write_text("07" * 32 + "\n")
    key.chmod(0o600)
    return config


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A folder per document, kept across its commands: earlier commands' outputs stay for
    later ones."""
    made: dict[Path, Path] = {}

    def folder(document: Path) -> Path:
        if document not in made:
            made[document] = tmp_path_factory.mktemp(document.stem)
            for name, body in files_of(document).items():
                (made[document] / name).write_text(body, encoding="utf-8")
        return made[document]
    return folder


@pytest.mark.parametrize(("document", "command"), SHOWN)
def test_every_shown_command_runs_as_shown(folders, fixed_key, run_cli, monkeypatch, document,
                                           command):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(fixed_key))
    monkeypatch.chdir(folders(document))
    words = shlex.split(command)[1:]
    if EXAMPLE_CODE in words:
        record = json.loads(Path(words[words.index("--record") + 1]).read_text())
        words[words.index(EXAMPLE_CODE)] = record["problems"][0]["id"]
    if "--out" not in words:
        words += ["--out", "out"]
    code, _, err = run_cli(*words)
    assert code == 0, err


def test_the_guide_names_every_template():
    guide = text_of(GUIDE)
    root = ROOT / "templates"
    for path in root.rglob("*"):
        if path.is_file():
            name = path.relative_to(root).as_posix()
            folder, _, rest = name.rpartition("/")
            family = f"{folder}/<" in guide  # e.g. latex/steps/<step or kind>.tex.j2
            markdown = name.startswith("markdown/") and (
                "latex/" + name[len("markdown/"):].replace(".md.j2", ".tex.j2") in guide
                or f"latex/{folder[len('markdown/'):]}/<" in guide)
            assert name in guide or family or markdown, name
