"""Issue 30, the online exam: what Canvas asks of a larger step tests the work (under a causal
mask the last row, which sees every key; never a row whose answer is given away; the same row
in every version), a part that asks a shape has a box for it in Moodle and Canvas as on the
page, and an accented one-letter symbol is written without parentheses."""

import re
import xml.etree.ElementTree as ElementTree

import canvas_import as canvas
import pytest
from test_moodle import extract_question

from generator.formats.qti import gives_away, render_qti
from generator.formats.web import render_moodle
from generator.kinds import TYPES
from generator.kinds.sampling import draw_options, sample_set
from generator.maths.steps import REGISTRY
from generator.rendering.paper import DocumentInfo, answer_keys
from generator.rendering.render import DEFAULT_PROMPT
from generator.running.pipeline import solve_checked

VERSIONS = 3


@pytest.fixture(scope="module")
def causal():
    """Three versions of a causal 3-query problem and a 2-query one, and their Canvas quizzes."""
    options = draw_options("medium", decimals=2, mask="causal")
    sets = {v: [solve_checked(s) for s in sample_set(options, 11, 2, v, ("masked", "full"))]
            for v in range(1, VERSIONS + 1)}
    info = DocumentInfo(decimals=2, versioned=True)
    keys = answer_keys(sets)
    return sets, keys, info


def test_causal_problems_are_drawn(causal):
    sets, _, _ = causal
    assert all(q.spec.mask == "causal" for qs in sets.values() for q in qs)
    assert any(q.spec.n_queries >= 3 for q in sets[1])


def imported(causal, tmp_path):
    _, keys, info = causal
    path = tmp_path / "qti.zip"
    path.write_bytes(render_qti(keys, info))
    return canvas.import_package(path)


def test_canvas_asks_the_row_that_sees_every_key_the_same_in_every_version(causal, tmp_path):
    sets, _, _ = causal
    by_id = {q.spec.id: q for qs in sets.values() for q in qs}
    rows = {}
    for quiz in imported(causal, tmp_path):
        for item in quiz.questions:
            found = re.search(r"\(([a-z])\) (\S+)\[(\d+),\d+\] \(row (\d+) of (\S+)\)", item.name)
            if not found:
                continue
            letter, symbol, row, said, of = found.groups()
            question = by_id[item.name.split(" (")[0]]
            assert row == said and symbol == of and f"row {row} of {symbol}" in item.text
            rows.setdefault((quiz.title, question.kind, letter), set()).add(int(row))
            if question.spec.n_queries >= 3:  # under a causal mask: the last query's row
                assert int(row) == question.spec.n_queries, item.name
    assert rows and all(len(r) == 1 for r in rows.values())
    for kind_letter in {(k, l) for _, k, l in rows}:  # every version asks the same row
        assert len({frozenset(r) for (_, k, l), r in rows.items() if (k, l) == kind_letter}) == 1


def test_a_row_that_gives_its_answer_away_is_never_asked(causal):
    sets, _, _ = causal
    question = next(q for q in sets[1] if q.spec.n_queries >= 3)
    weights, output = question.solution.step("weights"), question.solution.step("output")
    assert gives_away(question, weights, 0, 2)  # [1, 0, 0]: the first query sees only key 1
    assert gives_away(question, output, 0, 2)  # so its output is V's first row
    last = question.spec.n_queries - 1
    assert not gives_away(question, weights, last, 2) and not gives_away(question, output, last, 2)


def test_every_part_that_asks_a_shape_says_so_and_only_those():
    """One flag (Part.asks_shape), the same as the prompt's words, for the page, Moodle, Canvas."""
    for spec in sample_set(draw_options("hard", decimals=2), 3, 24, 1, tuple(TYPES)):
        question = solve_checked(spec)
        for part in question.parts:
            step = REGISTRY.get(part.task)
            prompt = TYPES[question.kind].prompts.get(part.task) or (
                step.prompt if step and step.prompt else DEFAULT_PROMPT)
            assert part.asks_shape == ("shape" in prompt and bool(part.written)), (spec.id, part.task)


def moodle_accepts(gap, typed: str) -> bool:
    """qtype_shortanswer (not case sensitive, SHORTANSWER): the trimmed answer is one of the
    gap's answers, ignoring case (no wildcards here)."""
    return any(typed.strip().lower() == a.lower() for a in gap["answers"])


def test_moodle_has_a_shape_gap_weighed_as_one_more_entry(causal):
    _, keys, info = causal
    root = ElementTree.fromstring(render_moodle(keys, info))
    checked = 0
    for question in (q for q in root if q.get("type") == "cloze"):
        for body in re.split(r"<p><b>\([a-z]\)</b>", question.findtext("questiontext/text"))[1:]:
            gaps = extract_question(body)
            shapes = [g for g in gaps if g["type"] == "SHORTANSWER"]
            tables = re.findall(r"<table>(.*?)</table>", body, re.S)
            if "shape" not in body.split("</p>", 1)[0]:  # the prompt asks none
                assert not shapes
                continue
            assert len(shapes) == len(tables)  # one a step
            shape, table = shapes[-1], tables[-1]
            rows = len(re.findall(r"<tr>", table))
            columns = len(re.findall(r"<td>", table)) // rows
            for typed in (f"{rows}×{columns}", f"{rows}x{columns}", f" {rows} X {columns} ",
                          f"{rows} by {columns}", f"({rows}, {columns})"):
                assert moodle_accepts(shape, typed), typed
            assert not moodle_accepts(shape, f"{columns + 1}×{rows}")
            assert {g["weight"] for g in extract_question(table)} == {shape["weight"]}  # an entry's
            checked += 1
    assert checked >= VERSIONS


def test_canvas_has_a_shape_item_worth_one_more_entry(causal, tmp_path):
    sets, _, _ = causal
    by_id = {q.spec.id: q for qs in sets.values() for q in qs}
    checked = 0
    for quiz in imported(causal, tmp_path):
        items = {}
        for item in quiz.questions:
            found = re.match(r"(\S+) \(([a-z])\)", item.name)
            if found:
                items.setdefault(found.groups(), []).append(item)
        for (pid, letter), part_items in items.items():
            part = next(p for p in by_id[pid].parts if p.letter == letter)
            shapes = [i for i in part_items if i.question_type == "short_answer_question"]
            assert len(shapes) == (len(part.written) if part.asks_shape else 0)
            for item, step in zip(shapes, part.written):
                rows, columns = step.shape
                assert "shape" in item.text and "shape of " in item.name
                assert f"{rows}×{columns}" not in item.text.split("</p>", 1)[1]  # not given
                for typed in (f"{rows}×{columns}", f"{rows}x{columns}", f" {rows} X {columns} ",
                              f"{rows} by {columns}", f"({rows}, {columns})"):
                    assert canvas.accepts_text(item, typed), typed
                assert not canvas.accepts_text(item, f"{columns + 1}x{rows}")
                step_id = item.migration_id.removesuffix("-shape")
                entries = [i for i in part_items if i.question_type == "numerical_question"]
                same = [i.points for i in entries if i.migration_id.startswith(step_id + "-")]
                assert same and item.points == pytest.approx(same[0], abs=0.01)
                assert all(f"{rows}×{columns} matrix" not in i.text for i in entries)
                checked += 1
    assert checked >= VERSIONS


def test_canvas_titles_write_an_accented_letter_without_parentheses(causal, tmp_path):
    names = [item.name for quiz in imported(causal, tmp_path) for item in quiz.questions]
    assert any("Ŝ[" in name for name in names)
    assert not [name for name in names if re.search(r"\([^)]\u0302?\u0303?\)\[", name)]
