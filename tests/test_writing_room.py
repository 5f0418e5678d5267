"""Room to write on the question sheet follows the work (issue 30): each part's room, read
back from the compiled PDF (where its label stands, where its prompt ends, where the next part
starts), per estimated minute, is within a factor of 2 of the paper's usual, and no part gets
less than its own room to make space for another."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from statistics import median

import pytest

from generator.maths.spec import spec_from_record
from generator.rendering.paper import part_seconds, writing_lines
from generator.running.pipeline import solve_checked

pytestmark = [pytest.mark.tex,
              pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
                                 reason="needs pdflatex and pdftotext")]

WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>')
LABEL = re.compile(r"^\([a-z]\)$")
LINE_PT = 13.6  # \baselineskip at the sheet's 11pt


def measured_rooms(pdf) -> list[tuple[float, bool]]:
    """Each part's room in points, in order, and whether another part follows on its page (else
    the room runs to the foot of the page: what the page has spare is under its last part)."""
    text = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True,
                          capture_output=True, text=True).stdout
    rooms = []
    for page in text.split("<page ")[1:]:
        words = [(float(x), float(top), float(bottom), w) for x, top, bottom, w in WORD.findall(page)]
        foot = min(top for x, top, bottom, w in words if w == "Page" and top > 700)
        labels = sorted(top for x, top, bottom, w in words if LABEL.match(w) and x < 100)
        for i, top in enumerate(labels):
            end = labels[i + 1] if i + 1 < len(labels) else foot
            # the prompt's words: from the label's line to above the next part's line
            prompt = max(bottom for x, t, bottom, w in words if top - 2 <= t and bottom < end)
            rooms.append((end - prompt, i + 1 < len(labels)))
    return rooms


def estimated_parts(out, version: int, calculator: bool) -> list:
    parts = []
    for problem in json.loads((out / "problems.json").read_text())["problems"]:
        if problem["version"] == version:
            question = solve_checked(spec_from_record({**problem["spec"], "type": problem["type"]},
                                                      problem["id"]))
            parts += [(part_seconds(part, calculator), writing_lines(part, calculator))
                      for part in question.parts]
    return parts


@pytest.mark.parametrize("args", [
    ["--minutes", 50, "--types", "full,masked,heads,backward", "--seed", 7, "--no-calculator"],
    ["--minutes", 50, "--types", "full,masked,heads,backward", "--seed", 7],
    ["--minutes", 20, "--types", "heads", "--seed", 7],
])
def test_each_part_has_room_in_proportion_to_its_minutes(tmp_path, run_cli, args):
    code, _, err = run_cli(*args, "--versions", 2, "--pdf", "--out", tmp_path)
    assert code == 0, err
    calculator = "--no-calculator" not in args
    for version in (1, 2):
        rooms = measured_rooms(tmp_path / "papers" / f"version-0{version}.pdf")
        parts = estimated_parts(tmp_path, version, calculator)
        assert len(rooms) == len(parts)
        # A part whose room is its work's (not the least room a matrix needs) sets the rate.
        by_work = [(room / seconds, followed) for (room, followed), (seconds, lines) in zip(rooms, parts)
                   if lines * 20 >= seconds > (lines - 1) * 20]
        # ... where another part follows on its page (the last part's room runs to the foot)
        usual = median([rate for rate, followed in by_work if followed] or [r for r, _ in by_work])
        for (room, followed), (seconds, lines) in zip(rooms, parts):
            assert room >= lines * LINE_PT - 1, (version, room, lines)  # never less than its own
            assert room / seconds >= usual / 2, (version, room, seconds, usual)
        assert all(rate <= 2 * usual for rate, followed in by_work if followed), (version, by_work)
