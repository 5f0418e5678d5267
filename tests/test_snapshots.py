"""Whole outputs held against reviewed snapshots in tests/snapshots/.

After a deliberate change, regenerate them and review the diff before committing:

    UPDATE_SNAPSHOTS=1 bash scripts/test.sh tests/test_snapshots.py
"""

import json
import os
import re
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).parent / "snapshots"
EXAMPLES = Path(__file__).parents[1] / "examples"
RUNS = {
    "worked-example": ["--spec", str(EXAMPLES / "worked-example.toml")],
    "seed-7": ["--count", "2", "--seed", "7", "--practice"],
    "module05-causal": ["--spec", str(SNAPSHOTS / "module05-causal.json")],
    # one problem of each question type, in the order --types takes them by default
    "every-type": ["--count", "7", "--seed", "42", "--format", "moodle,html", "--practice"],
    "every-type-hard": ["--count", "7", "--seed", "5", "--difficulty", "hard", "--practice"],
    # backpropagation, drawn only when asked for: one problem from X, one masked
    "backward": ["--types", "backward", "--count", "2", "--seed", "4", "--mask", "mixed",
                 "--format", "moodle,html", "--practice"],
}
FILES = ("questions.tex", "answers.tex", "questions.md", "answers.md", "problems.json",
         "moodle.xml", "practice.html", "answers.html")


@pytest.mark.parametrize("run", RUNS)
def test_outputs_match_the_reviewed_snapshots(run, tmp_path, run_cli):
    code, _, err = run_cli(*RUNS[run], "--out", tmp_path)
    assert code == 0, err
    for name in FILES:
        if not (tmp_path / name).exists():
            assert not (SNAPSHOTS / run / name).exists(), f"{run}/{name} is no longer written"
            continue
        snapshot = SNAPSHOTS / run / name
        produced = readable(name, (tmp_path / name).read_text(encoding="utf-8"))
        if os.environ.get("UPDATE_SNAPSHOTS"):
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            snapshot.write_text(produced, encoding="utf-8")
        assert produced == snapshot.read_text(encoding="utf-8"), f"{run}/{name} changed"


def readable(name: str, text: str) -> str:
    """The practice page without its script (practice.js is code, reviewed as code) and with
    its answer data one value a line, so that a diff shows what changed."""
    if name != "practice.html":
        return text
    text = re.sub(r"<script>.*?</script>", "<script>(practice.js)</script>", text, flags=re.S)
    return re.sub(r'(<script id="answers" type="application/json">)(.*?)(</script>)',
                  lambda m: m[1] + "\n" + json.dumps(json.loads(m[2]), indent=1) + "\n" + m[3],
                  text, flags=re.S)
