"""Exams sized to a time budget, and equal versions (issue 30).

--minutes N (or --marks N) with a list of types puts every listed type on the paper, each
problem sized to fit; every version of a problem has the same parts and marks and takes as
long; when the list cannot fit, one line says the least it needs.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import make_question
from test_web import needs_browser

from generator.maths.spec import spec_from_record
from generator.rendering.paper import ExamProblem, part_seconds, writing_lines
from generator.running.pipeline import solve_checked

FOUR = "full,masked,heads,backward"
EIGHT = "full,row,mistake,permute,masked,heads,concept,backward"


def record(out) -> dict:
    return json.loads((out / "problems.json").read_text())


def papers(out) -> list[tuple[int, int]]:
    """(marks, minutes) of each paper, as its header prints them."""
    sheet = (out / "questions.md").read_text()
    return [(int(m), int(t)) for m, t in
            re.findall(r"(\d+) marks in all; about (\d+) minutes of working by hand", sheet)]


def by_version(out) -> dict[int, list[dict]]:
    versions: dict[int, list[dict]] = {}
    for problem in record(out)["problems"]:
        versions.setdefault(problem["version"], []).append(problem)
    return versions


def minutes_of(out) -> dict[str, int]:
    """Each problem's printed estimate, by its code (a version's problems in order)."""
    sheet = (out / "answers.md").read_text()
    found = re.findall(r"\(\d+ marks, about (\d+) min\)\n\nProblem id `([^`]+)`", sheet)
    return {code: int(minutes) for minutes, code in found}


@pytest.mark.parametrize("budget, args", [
    (50, ["--types", FOUR]),
    pytest.param(50, ["--types", FOUR, "--no-calculator"], marks=pytest.mark.slow),
    pytest.param(50, ["--types", FOUR, "--versions", "6"], marks=pytest.mark.slow),
    pytest.param(90, ["--types", EIGHT], marks=pytest.mark.slow),
    pytest.param(90, ["--types", EIGHT + ",softmax-jacobian"], marks=pytest.mark.slow),
    pytest.param(30, ["--types", "full,backward", "--difficulty", "hard"], marks=pytest.mark.slow),
    pytest.param(20, ["--types", "heads"], marks=pytest.mark.slow),
])
def test_every_listed_type_fits_the_time_and_every_version_is_alike(tmp_path, run_cli, budget, args):
    code, _, err = run_cli("--minutes", budget, *args, "--seed", 11, "--out", tmp_path)
    assert code == 0, err
    listed = args[1].split(",")
    versions = by_version(tmp_path)
    for problems in versions.values():  # never silently one type fewer (a short list repeats)
        assert len(problems) % len(listed) == 0
        assert [p["type"] for p in problems] == listed * (len(problems) // len(listed))
    sizes = papers(tmp_path)
    assert len(sizes) == len(versions) and all(0 < minutes <= budget for _, minutes in sizes)
    assert len({marks for marks, _ in sizes}) == 1  # every version worth as much
    minutes = minutes_of(tmp_path)
    first = versions[1]
    for problems in versions.values():
        for mine, theirs in zip(problems, first):
            assert [(p["task"], p["marks"]) for p in mine["parts"]] == \
                   [(p["task"], p["marks"]) for p in theirs["parts"]]
            assert mine["shape"] == theirs["shape"] and mine["spec"]["mask"] == theirs["spec"]["mask"]
            assert abs(minutes[mine["id"]] - minutes[theirs["id"]]) <= 0.1 * minutes[theirs["id"]]


@pytest.mark.slow
def test_a_50_minute_paper_is_a_midterm_of_short_problems(tmp_path, run_cli):
    """Each problem of a 50-minute paper takes 8 to 15 minutes, as real courses set them;
    what is given is on the paper (Q, K, V; the other head's output; the row asked)."""
    assert run_cli("--minutes", 50, "--types", FOUR, "--seed", 1, "--out", tmp_path)[0] == 0
    minutes = list(minutes_of(tmp_path).values())
    assert all(5 <= m <= 15 for m in minutes) and sum(minutes) <= 50, minutes
    sheet = (tmp_path / "questions.md").read_text()
    assert sheet.count("The rows of Q are ") >= 2  # Q, K and V given, and said so
    assert "Head 2 is worked out already: its output O_2 is given below." in sheet and "O_2 =" in sheet
    assert re.search(r"Now query \d alone", sheet)
    problems = record(tmp_path)["problems"]
    assert all("X" not in p["spec"] for p in problems)
    assert [p["spec"].get("head") for p in problems if p["type"] == "heads"] == [1]
    assert all("row" in p["spec"] for p in problems if p["type"] == "backward")


@pytest.mark.slow
def test_a_sized_problem_is_set_again_exactly_from_its_code(tmp_path, run_cli):
    exam = tmp_path / "exam"
    assert run_cli("--minutes", 50, "--types", FOUR, "--seed", 2, "--out", exam)[0] == 0
    for problem in record(exam)["problems"]:
        again = tmp_path / problem["id"]
        code, _, err = run_cli("--problem", problem["id"], "--record", exam / "problems.json",
                               "--out", again)
        assert code == 0, err
        [redrawn] = record(again)["problems"]
        for field in ("spec", "marks", "parts", "steps"):
            assert redrawn[field] == problem[field], field


def test_marks_budget_keeps_every_listed_type(tmp_path, run_cli):
    assert run_cli("--marks", 36, "--types", FOUR, "--seed", 3, "--out", tmp_path)[0] == 0
    assert [p["type"] for p in record(tmp_path)["problems"]] == FOUR.split(",")
    assert all(marks <= 36 for marks, _ in papers(tmp_path))


@pytest.mark.slow
def test_a_list_that_cannot_fit_says_the_least_it_needs_in_one_line(tmp_path, run_cli):
    code, _, err = run_cli("--minutes", 15, "--types", FOUR, "--seed", 4, "--out", tmp_path / "a")
    assert code == 2 and err.count("\n") == 1
    least = int(re.search(r"need at least (\d+) minutes at their shortest", err).group(1))
    assert f"allow --minutes {least}" in err and "full " in err and "backward " in err
    code, _, err = run_cli("--minutes", least, "--types", FOUR, "--seed", 4, "--out", tmp_path / "b")
    assert code == 0, err
    assert [p["type"] for p in record(tmp_path / "b")["problems"]] == FOUR.split(",")
    assert papers(tmp_path / "b")[0][1] <= least
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_twenty_minutes_of_heads_are_sized_heads_problems(tmp_path, run_cli):
    """Refused before ("the first problem alone takes 53 minutes")."""
    assert run_cli("--minutes", 20, "--types", "heads", "--seed", 5, "--out", tmp_path)[0] == 0
    problems = record(tmp_path)["problems"]
    assert problems and {p["type"] for p in problems} == {"heads"} and papers(tmp_path)[0][1] <= 20
    assert all([p["task"] for p in problem["parts"]][-2:] == ["concat", "projected"]
               for problem in problems)
    assert all(minutes <= 15 for minutes in minutes_of(tmp_path).values())


def test_a_generous_budget_repeats_a_short_list_and_keeps_the_presets_size(tmp_path, run_cli):
    assert run_cli("--minutes", 30, "--types", "row", "--seed", 6, "--out", tmp_path)[0] == 0
    problems = record(tmp_path)["problems"]
    assert len(problems) > 3 and {p["type"] for p in problems} == {"row"}
    assert {p["shape"]["n_keys"] for p in problems} == {3}  # the medium preset's 3 tokens
    assert papers(tmp_path)[0][1] <= 30


@pytest.mark.slow
def test_the_default_mix_keeps_its_first_types_that_fit_and_says_so(tmp_path, run_cli):
    code, _, err = run_cli("--marks", 30, "--seed", 3, "--out", tmp_path)
    assert code == 0 and "holds the first 4 types of the default mix" in err
    assert [p["type"] for p in record(tmp_path)["problems"]] == ["full", "row", "mistake", "permute"]


@pytest.mark.slow
def test_the_teachers_own_sizes_stay(tmp_path, run_cli):
    assert run_cli("--minutes", 50, "--types", FOUR, "--tokens", "3", "--dk", "4", "--seed", 7,
                   "--out", tmp_path)[0] == 0
    problems = record(tmp_path)["problems"]
    assert {p["shape"]["n_keys"] for p in problems} == {3}
    assert {p["shape"]["d_k"] for p in problems} == {4}


@pytest.mark.parametrize("args", [
    ["--types", "backward", "--count", "3", "--mask", "mixed"],  # its choice parts: all or none
    ["--types", "mistake,mistake"],  # the mistake decides what is recomputed
    ["--types", "full,masked", "--difficulty", "hard"],  # 3 to 5 tokens, some masked
])
@pytest.mark.slow
def test_versions_without_a_budget_are_alike(tmp_path, run_cli, args):
    """6 of 40 versions of a backward problem carried an extra 1-mark choice part."""
    assert run_cli(*args, "--versions", 8, "--seed", 9, "--practice", "--out", tmp_path)[0] == 0
    versions = by_version(tmp_path)
    first = versions[1]
    for problems in versions.values():
        for mine, theirs in zip(problems, first):
            assert [(p["task"], p["marks"]) for p in mine["parts"]] == \
                   [(p["task"], p["marks"]) for p in theirs["parts"]]
            assert mine["shape"] == theirs["shape"]
            assert mine["spec"]["mask"] == theirs["spec"]["mask"]
            assert mine["spec"].get("mistake") == theirs["spec"].get("mistake")
    assert len({marks for marks, _ in papers(tmp_path)}) == 1
    assert len({minutes for _, minutes in papers(tmp_path)}) == 1


@pytest.mark.slow
def test_a_later_versions_practice_id_draws_it_again(tmp_path, run_cli):
    assert run_cli("--types", "mistake,backward", "--versions", 3, "--seed", 8, "--practice",
                   "--out", tmp_path / "set")[0] == 0
    wanted = by_version(tmp_path / "set")[3][1]
    assert run_cli("--problem", wanted["id"], "--types", "mistake,backward",
                   "--out", tmp_path / "one")[0] == 0
    [again] = record(tmp_path / "one")["problems"]
    assert again["spec"] == wanted["spec"]


def test_writing_room_follows_the_work_not_the_entries():
    """Copying Q, K and V into heads is quick (it had half a page); the softmax backward pass,
    row by row, is not (it had a quarter)."""
    heads = solve_checked(spec_from_record({
        "type": "heads", "X": [[1, 0, 1], [0, 1, 1], [1, 1, 0]],
        "W_Q": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
        "W_K": [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 1, 0]],
        "W_V": [[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 1, 1]],
        "W_O": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]]}, "h"))
    backward = make_question(type="backward", Q=[[1, 0], [0, 1], [1, 1]], K=[[1, 1], [0, 1], [1, 0]],
                             V=[[1, 0], [0, 2], [1, 1]], dO=[[1, -0.5], [0.5, 0], [0, 1]])
    split = next(p for p in heads.parts if p.task == "split")
    softmax_backward = next(p for p in backward.parts if p.task == "dscaled")
    assert len(split.steps) == 6 and sum(s.shape[0] * s.shape[1] for s in split.steps) == 36
    assert part_seconds(split) < part_seconds(softmax_backward)
    assert writing_lines(split) < writing_lines(softmax_backward)


def test_the_time_model_is_calibrated_for_exam_sized_problems():
    """Q, K and V given, three tokens, widths of two: 8 to 15 minutes at a minute or two a
    mark; without a calculator, adding and dividing by hand take longer."""
    question = make_question(Q=[[1, 0], [0, 1], [1, 1]], K=[[1, 1], [0, 1], [1, 0]],
                             V=[[1, 0], [0, 2], [1, 1]])
    with_one, without = ExamProblem(1, question, True), ExamProblem(1, question, False)
    assert 8 <= with_one.minutes <= 15 and 1 <= with_one.minutes / question.marks <= 2
    assert with_one.minutes < without.minutes


@pytest.mark.parametrize("record_, parts", [
    ({"type": "backward", "row": 2, "ask": []}, ["dV", "drow"]),
    ({"type": "heads", "head": 2, "W_O": [[1, 0], [0, 1]]}, ["split", "head", "concat", "projected"]),
])
def test_a_spec_file_asks_the_lean_part_sets(tmp_path, run_cli, record_, parts):
    problem = {"Q": [[1, 0], [0, 1]], "K": [[1, 1], [0, 1]], "V": [[1, 0], [0, 2]], **record_}
    if record_["type"] == "backward":
        problem["dO"] = [[1, -0.5], [0.5, 0]]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(problem))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 0, err
    [solved] = record(tmp_path / "o")["problems"]
    assert [p["task"] for p in solved["parts"]] == parts
    if record_["type"] == "heads":
        assert solved["parts"][1]["steps"] == ["head2.scores", "head2.scaled", "head2.weights",
                                               "head2.output"]


# A sized paper's new parts (one head worked, one row of dS, Q, K and V given) hold to every
# check the unsized ones do: the working lines recompute, a student who rounds is never marked
# wrong (page and Moodle), Moodle's parser reads every gap, Canvas accepts the rounding student.
def sized_questions(decimals: int, difficulty: str = "medium") -> list:
    from generator.kinds.budget import Budget, fit
    from generator.kinds.sampling import draw_options, sample_set
    options = draw_options(difficulty, decimals=decimals)
    questions = []
    for seed, minutes in ((1, 50), (2, 40), (3, 60)):
        types, forms = fit(Budget("minutes", minutes), tuple(FOUR.split(",")), options, seed,
                           frozenset(), solve_checked)
        questions += [solve_checked(s) for s in sample_set(options, seed, len(forms), 1, types, forms)]
    assert {q.spec.row is not None for q in questions if q.kind == "backward"} == {True}
    assert {q.spec.head for q in questions if q.kind == "heads"} == {1}
    return questions


@pytest.mark.parametrize("decimals", [2, 4])
@pytest.mark.slow
def test_sized_problems_keep_every_check(decimals, tmp_path):
    from canvas_import import accepts, import_package
    from conftest import render
    from test_marking import false_marks, rounded
    from test_qti import numerical_items, package_of, student_values, typed
    from test_working_checks import failures_in

    from generator.rendering.paper import DocumentInfo
    from generator.rendering.render import render_markdown
    questions = sized_questions(decimals) + sized_questions(decimals, "hard")
    key = render(render_markdown, questions, DocumentInfo(decimals=decimals))["answers.md"]
    failed, checked = failures_in(key)
    assert failed == [] and checked > 100
    assert "- ∑_k a_k·da_k = " in key  # the row of dS checks too
    assert [mark for q in questions for mark in false_marks(q, decimals)] == []
    by_id = {q.spec.id: q for q in questions}
    mine = {pid: student_values(q, decimals) for pid, q in by_id.items()}
    refused = []
    for item, pid, letter, k, i, j in numerical_items(import_package(package_of(questions, tmp_path,
                                                                                decimals))):
        step = next(p for p in by_id[pid].parts if p.letter == letter).written[k - 1]
        values = mine[pid].get(id(step), rounded(step.numeric, decimals))
        if not accepts(item, typed(values[i, j], decimals)):
            refused.append(item.migration_id)
    assert refused == []


@pytest.mark.slow
def test_a_sized_moodle_bank_parses_and_weighs_as_the_paper(tmp_path, run_cli):
    from test_moodle import test_every_gap_parses_by_moodles_rules_and_weighs_as_the_paper as weighs
    assert run_cli("--minutes", 50, "--types", FOUR, "--seed", 3, "--format", "moodle",
                   "--practice", "--out", tmp_path)[0] == 0
    weighs(tmp_path)


@needs_browser
def test_the_practice_page_marks_a_sized_paper_with_its_keys_values(tmp_path, run_cli):
    """Every grid of a sized paper, filled in by a student who works by hand and rounds each
    step (test_marking's student), is right on the page, with no script error."""
    from playwright.sync_api import sync_playwright
    from test_marking import rounded
    from test_qti import student_values
    from test_web import CHROMIUM, CHROMIUM_ARGS
    assert run_cli("--minutes", 50, "--types", FOUR, "--seed", 3, "--format", "html", "--practice",
                   "--out", tmp_path)[0] == 0
    questions = [solve_checked(spec_from_record(p["spec"], p["id"])) for p in record(tmp_path)["problems"]]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 900, "height": 1200})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((tmp_path / "practice.html").as_uri())
        for number, question in enumerate(questions):
            mine = student_values(question, 4)
            problem = page.locator("section.problem").nth(number)
            for part in question.parts:
                if not part.written or part.item:
                    continue
                block = problem.locator(f'.part[data-part="{part.letter}"]')
                for index, step in enumerate(part.written):
                    # the masking step's −∞ has a box (typed -inf); a later step's has none
                    values = ["-inf" if x == float("-inf") else f"{x:.4f}"
                              for x in mine.get(id(step), rounded(step.numeric, 4)).flat
                              if x != float("-inf") or step.kind == "masking"]
                    inputs = block.locator(f'table[data-step="{part.letter}{index}"] input')
                    assert inputs.count() == len(values)
                    for k, value in enumerate(values):
                        inputs.nth(k).fill(value)
                    shape = block.locator(f'input.shape[data-grid="{part.letter}{index}"]')
                    if shape.count():  # a part that asks the shape has a box for it
                        shape.fill("{}x{}".format(*step.shape))
                block.locator("button.check").click()
                text = block.locator(".marks").text_content()
                assert text.endswith("right ✓"), (question.kind, part.task, text)
        browser.close()
    assert errors == []
