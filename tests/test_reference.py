"""docs/reference.md is what scripts/make_reference.py writes from the parser and the registries
today, and it names every option `gen-problems --help` shows.  Both run in a process of their
own, so that a toy type, op or format another test registers never reaches them."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference.md"
COMMAND = ".venv/bin/python scripts/make_reference.py"


def run(*args: str) -> str:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout


def test_the_reference_is_not_stale():
    written = run("scripts/make_reference.py", "--stdout")
    assert written == REFERENCE.read_text(encoding="utf-8"), \
        f"docs/reference.md is stale: run {COMMAND}"


def test_the_reference_names_every_option_of_help():
    shown = run("-m", "generator.cli", "--help")
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", shown)) - {"--help"}
    reference = REFERENCE.read_text(encoding="utf-8")
    assert len(flags) > 30
    assert [flag for flag in sorted(flags) if f"| `{flag}" not in reference] == []
