"""'Fix the mistake' asks only the steps from the mistake on, in every format that marks: the
steps before it are shown as given, never asked, and fixing only from the mistake on earns the
part's full marks (on the practice page, in Moodle, in Canvas), as on paper."""

import json
import re
import xml.etree.ElementTree as ElementTree
from decimal import Decimal

import canvas_import as canvas
import pytest
from test_extending import browser_page
from test_marking import by_hand, rounded
from test_moodle import extract_question
from test_qti import numerical_items
from test_question_types import SQUARE
from test_web import fill, needs_browser

from generator.formats.qti import asked_entries
from generator.maths.spec import MISTAKES, spec_from_record
from generator.running.pipeline import solve_checked

DECIMALS = 4


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One problem of each mistake (three tokens, d_k = d_v = 3: every mistake fits)."""
    from generator.cli import main
    folder = tmp_path_factory.mktemp("mistakes")
    spec = folder / "mistakes.json"
    spec.write_text(json.dumps([dict(SQUARE, type="mistake", mistake=m) for m in MISTAKES]))
    assert main(["--spec", str(spec), "--format", "html,moodle,qti", "--out", str(folder / "out")]) == 0
    problems = json.loads((folder / "out" / "problems.json").read_text())["problems"]
    questions = {p["id"]: solve_checked(spec_from_record(p["spec"], p["id"])) for p in problems}
    return folder / "out", questions


def fix_of(question):
    find, fix = question.parts
    assert (find.marks, fix.task, fix.marks) == (2, "mistake-fix", 3)
    return fix


def names(steps):
    return [step.name for step in steps]


def fixed_by_hand(question) -> dict:
    """The fix as a student works it: from the kept steps as the page shows them (rounded),
    each later step from their own rounded values; by step name."""
    (_, fix), = question.worked
    mine = {}
    for step_def, step in zip(fix.plan, fix.steps):
        mine[step.name] = (rounded(step.numeric, DECIMALS) if step_def.is_given else
                           by_hand(step_def, [mine[i] for i in step_def.inputs], DECIMALS, fix.spec))
    return mine


def test_the_fix_asks_from_the_mistake_on_and_keeps_the_steps_before(run):
    _, questions = run
    for question in questions.values():
        fix = fix_of(question)
        everything = [s.name for s in question.solution.steps if s.kind != "given"]
        wrong = everything.index(MISTAKES[question.spec.mistake])
        assert names(fix.written) == everything[wrong:]
        assert names(fix.kept) == everything[:wrong]


@needs_browser
def test_a_student_who_fixes_only_from_the_mistake_on_gets_the_parts_full_marks(run):
    out, questions = run
    with browser_page(out / "practice.html") as page:
        for problem_id, question in questions.items():
            fix = fix_of(question)
            section = page.locator(f"section.problem[data-problem={problem_id}]")
            part = section.locator(".part").nth(1)
            assert part.locator("table.grid").evaluate_all(
                "(grids) => grids.map((g) => g.dataset.name)") == names(fix.written)
            assert part.locator(".kept math").count() == len(fix.kept)  # shown, not asked
            mine = fixed_by_hand(question)
            for step in fix.written:
                fill(part.locator(f"table.grid[data-name={step.name}]"),
                     [[f"{x:.{DECIMALS}f}" for x in row] for row in mine[step.name]])
            part.locator("button.check").click()
            said = (problem_id, part.locator(".marks").text_content())
            assert float(part.get_attribute("data-score")) == fix.marks == 3, said


def cloze_parts(question_xml) -> dict:
    """Each part's text in a cloze question, by letter."""
    text = question_xml.findtext("questiontext/text")
    pieces = re.split(r"<p><b>\(([a-z])\)</b>", text)[1:]
    return dict(zip(pieces[0::2], pieces[1::2]))


def test_moodle_gaps_only_the_fixed_steps_weighed_as_the_paper(run):
    out, questions = run
    root = ElementTree.parse(out / "moodle.xml").getroot()
    clozes = {q.findtext("idnumber"): q for q in root if q.get("type") == "cloze"}
    assert set(clozes) == set(questions)
    for problem_id, question in questions.items():
        fix = fix_of(question)
        parts = cloze_parts(clozes[problem_id])
        gaps = extract_question(parts["b"])
        asked = [x for step in fix.written for x in step.numeric.flatten()]
        assert [float(g["answers"][0]) for g in gaps] == pytest.approx(asked, abs=1e-8)
        kept = re.search(r'<p class="given kept">(.*?)</p>', parts["b"], re.S)[1]
        assert kept.count("\\(") == len(fix.kept) and not extract_question(kept)  # shown in TeX
        find_weight = sum(g["weight"] for g in extract_question(parts["a"]))
        fix_weight = sum(g["weight"] for g in gaps)
        assert fix_weight * 2 == find_weight * 3  # 3 marks to 2, as on paper
        grade = float(clozes[problem_id].findtext("defaultgrade"))
        assert grade == find_weight + fix_weight


def test_canvas_asks_only_the_fixed_steps_for_the_parts_points(run):
    out, questions = run
    [quiz] = canvas.import_package(out / "qti.zip")
    points, asked = {}, {}
    for item in quiz.questions:
        if item.question_type != "text_only_question":
            problem_id, letter = re.match(r"(\S+) \(([a-z])\)", item.name).groups()
            points[problem_id, letter] = points.get((problem_id, letter), Decimal(0)) + Decimal(repr(item.points))
    for _, problem_id, letter, k, i, j in numerical_items([quiz]):
        asked.setdefault((problem_id, letter), []).append((k, i, j))
    for problem_id, question in questions.items():
        fix = fix_of(question)
        assert (points[problem_id, "a"], points[problem_id, "b"]) == (2, 3)
        expected = [(k, i, j) for k, step in enumerate(fix.written, 1) for i, j in asked_entries(step)[0]]
        assert asked[problem_id, "b"] == expected  # the written steps only: none of the kept
        assert (problem_id, "a") not in asked


def test_a_fixing_student_is_accepted_in_canvas(run):
    out, questions = run
    [quiz] = canvas.import_package(out / "qti.zip")
    refused = []
    for item, problem_id, letter, k, i, j in numerical_items([quiz]):
        step = fix_of(questions[problem_id]).written[k - 1]
        value = fixed_by_hand(questions[problem_id])[step.name][i, j]
        if not canvas.accepts(item, f"{value:.{DECIMALS}f}"):
            refused.append(item.name)
    assert refused == []
