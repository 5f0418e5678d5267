"""The practice page marks fairly, driven in Debian's chromium by a student who works by hand:
carry-forward in every type (a blank step counts as the key's), heads that say which head,
marks that are not colour alone, unreadable input said to be so, answers that survive a
reload, and a 5-token problem on a phone."""

import json

import numpy as np
import pytest
from test_extending import browser_page
from test_web import fill, needs_browser

from generator.maths.spec import spec_from_record
from generator.running.pipeline import solve_checked


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("page")
    assert main(["--count", "7", "--seed", "42", "--format", "html", "--practice", "--out", str(out)]) == 0
    return out


def solved(site, problem_id):
    problems = json.loads((site / "problems.json").read_text())["problems"]
    record = next(p for p in problems if p["id"] == problem_id)
    return solve_checked(spec_from_record(record["spec"], problem_id))


def texts(matrix, places=4):
    return [[f"{x:.{places}f}" for x in row] for row in matrix]


@needs_browser
def test_find_the_mistake_carries_the_students_own_corrected_values(site):
    question = solved(site, "M42-3")  # the mistake is in the weights
    weights = question.solution.step("weights").numeric.copy()
    weights[0] = [weights[0][1], weights[0][0], weights[0][2]]  # a slip: two entries swapped
    # the output from their own weights as typed, and the V the part shows as kept
    output = weights.round(4) @ question.solution.step("V").numeric
    with browser_page(site / "practice.html") as page:
        fix = page.locator("section.problem[data-problem=M42-3] .part").nth(1)
        assert fix.locator("table.grid").count() == 2  # from the mistake on: A and O
        fill(fix.locator("table.grid[data-name=weights]"), texts(weights))
        fill(fix.locator("table.grid[data-name=output]"), texts(output))  # V kept: shown, given
        fix.locator("button.check").click()
        assert fix.locator("table.grid[data-name=output] input.right").count() == 9
        assert fix.locator("table.grid[data-name=weights] input.wrong").count() == 2


@needs_browser
def test_heads_grids_and_inputs_say_which_head(site):
    with browser_page(site / "practice.html") as page:
        split = page.locator("section.problem[data-problem=M42-6] .part").nth(1)
        captions = split.locator("caption").all_text_contents()
        assert [c.split("(")[1].split(")")[0] for c in captions] == ["Head 1"] * 3 + ["Head 2"] * 3
        assert not any("given" in c for c in captions)
        first = split.locator("table.grid[data-name='head2.K'] input").first
        assert first.get_attribute("aria-label") == "Problem 6 (b), K sub 2, row 1, column 1"


@needs_browser
def test_marks_are_symbols_not_colour_alone_and_unreadable_input_is_said(site, tmp_path):
    question = solved(site, "M42-1")
    q = texts(question.solution.step("Q").numeric, 0)
    q[0][0], q[0][1], q[0][2], q[0][3] = "½", "+" + q[0][1], q[0][2] + ".", "7"
    with browser_page(site / "practice.html") as page:
        part = page.locator("section.problem[data-problem=M42-1] .part").first
        fill(part.locator("table.grid[data-name=Q]"), q)
        part.locator("button.check").click()
        cells = part.locator("table.grid[data-name=Q] td")
        marks = [cells.nth(k).get_attribute("data-mark") for k in range(4)]
        assert marks == ["unread", "right", "right", "wrong"]  # +1 and 1. are numbers
        after = [page.evaluate("(td) => getComputedStyle(td, '::after').content", cells.nth(k).element_handle())
                 for k in (1, 3)]
        assert after == ['"✓"', '"✗"']
        assert "can't read \"½\"" in part.locator(".message").text_content()
        wrong = part.locator("table.grid[data-name=Q] input").nth(3)
        assert wrong.get_attribute("aria-invalid") == "true" and wrong.get_attribute("title") in ("too high", "too low")
        colours = page.evaluate("""(inputs) => inputs.map((i) => getComputedStyle(i).borderTopColor)""",
                                [part.locator("input.right").first.element_handle(),
                                 part.locator("input.wrong").first.element_handle()])
        for colour in colours:  # each border at least 4.5:1 against white (WCAG AA)
            red, green, blue = (int(c) / 255 for c in colour[4:-1].split(","))
            lum = [(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4) for c in (red, green, blue)]
            luminance = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2]
            assert 1.05 / (luminance + 0.05) >= 4.5, colour
        page.screenshot(path=str(tmp_path / "marks.png"), full_page=False)


@needs_browser
def test_answers_and_marks_survive_a_reload_until_cleared(site):
    question = solved(site, "M42-1")
    with browser_page(site / "practice.html") as page:
        part = page.locator("section.problem[data-problem=M42-1] .part").nth(1)
        fill(part.locator("table.grid"), texts(question.solution.step("scores").numeric, 0))
        part.locator("button.check").click()
        assert part.locator(".marks").text_content() == "9 of 9 answers right ✓"
        page.reload()
        part = page.locator("section.problem[data-problem=M42-1] .part").nth(1)
        assert part.locator("input").first.input_value() != ""
        assert part.locator(".marks").text_content() == "9 of 9 answers right ✓"
        assert "2.0 of 11" in page.locator("section.problem[data-problem=M42-1] h2 .score").text_content()
        page.once("dialog", lambda dialog: dialog.accept())  # Clear asks first
        page.locator("#clear").click()
        page.reload()
        assert page.locator("section.problem[data-problem=M42-1] .part").nth(1).locator("input").first.input_value() == ""


@needs_browser
@pytest.mark.parametrize("width", [390, 320])
def test_a_five_token_problem_fits_a_phone(tmp_path, run_cli, width):
    assert run_cli("--count", 3, "--seed", 5, "--difficulty", "hard", "--tokens", "5-5", "--practice",
                   "--format", "html", "--out", tmp_path)[0] == 0
    with browser_page(tmp_path / "practice.html") as page:
        page.set_viewport_size({"width": width, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing overflows
        if width == 390:  # every column of every grid in view, none behind a scroll
            clipped = page.evaluate("""[...document.querySelectorAll('table.grid')].filter(
                (t) => t.getBoundingClientRect().right > t.closest('.scroll').getBoundingClientRect().right + 1).length""")
            assert clipped == 0
        page.locator(".part details.reveal summary").first.click()
        working = page.locator("pre.working").first
        assert page.evaluate("(pre) => pre.scrollWidth <= pre.clientWidth", working.element_handle())
        page.screenshot(path=str(tmp_path / f"phone-{width}.png"), full_page=True)


@needs_browser
def test_a_grid_off_by_a_pattern_says_what_went_wrong(site):
    question = solved(site, "M42-1")
    scores = question.solution.step("scores").numeric
    with browser_page(site / "practice.html") as page:
        parts = page.locator("section.problem[data-problem=M42-1] .part")
        fill(parts.nth(1).locator("table.grid"), texts(scores.T, 0))  # Q K^T transposed
        parts.nth(1).locator("button.check").click()
        assert parts.nth(1).locator(".message").text_content().startswith("this is K Qᵀ, not S = Q Kᵀ")
        fill(parts.nth(1).locator("table.grid"), texts(scores, 0))  # put right
        fill(parts.nth(2).locator("table.grid"), texts(scores, 0))  # the scores, not scaled
        parts.nth(2).locator("button.check").click()
        assert parts.nth(2).locator(".message").text_content() == "this is S itself, not scaled: S̃ = S/√d_k"


def test_a_swap_is_marked_against_the_shown_matrices_swapped(tmp_path, run_cli):
    """Two tokens swap: A' = PAP^T and O' = PO are read off the A and O the statement shows (the
    step graph's picks), not computed as the plan's weights and output, whose names their grids
    once shared; so the swapped matrices are right and the unchanged ones wrong."""
    from test_practice_students import OPS, marking_data, matrix
    assert run_cli("--practice", "--types", "permute", "--seed", 5, "--format", "html",
                   "--out", tmp_path)[0] == 0
    unchanged_caught = 0
    for problem in marking_data(tmp_path / "practice.html").values():
        for grid in problem["steps"].values():
            step = problem["graph"][grid["name"]]
            shown = matrix(problem["given"][step["inputs"][0]])
            key, tolerance = matrix(grid["values"]), matrix(grid["chain"])
            assert step["op"] == "pick" and grid["name"] in ("A′", "O′")
            assert (np.abs(OPS["pick"](step, shown) - key) <= tolerance).all()
            unchanged_caught += bool((np.abs(shown - key) > tolerance).any())
    assert unchanged_caught >= 36  # of 40 grids (a swap of two equal rows would change nothing)


@needs_browser
def test_a_count_typed_with_its_thousands_grouped_is_read_as_the_count(tmp_path):
    """1,024 in a grid of whole numbers (a count) is a thousand and twenty-four, as a student
    writes it, and 1,048,576 a million; elsewhere a comma is still a decimal comma (0,5)."""
    from generator.cli import main
    (tmp_path / "layer.toml").write_text('type = "counting"\nmodel_dim = 512\nheads = 8\n')
    assert main(["--spec", str(tmp_path / "layer.toml"), "--format", "html", "--out", str(tmp_path / "c")]) == 0
    with browser_page(tmp_path / "c" / "practice.html") as page:
        part = page.locator("section.problem .part").first
        grids = part.locator("table.grid")
        values = page.evaluate("""() => { const d = JSON.parse(document.getElementById("answers").textContent);
            const p = Object.values(d.problems)[0]; return Object.keys(p.steps).filter((k) => k.startsWith("a"))
            .map((k) => p.steps[k].values[0][0]); }""")
        assert any(v >= 10**6 for v in values) and any(1000 <= v < 10**6 for v in values)
        for k, value in enumerate(values):
            grids.nth(k).locator("input").fill(f"{value:,}")
        part.locator("button.check").click()
        marks = [grids.nth(k).locator("td").first.get_attribute("data-mark") for k in range(len(values))]
        assert marks == ["right"] * len(values), list(zip(values, marks))
    assert main(["--types", "full", "--count", "1", "--seed", "3", "--format", "html", "--out", str(tmp_path / "f")]) == 0
    with browser_page(tmp_path / "f" / "practice.html") as page:
        part = page.locator("section.problem .part").first
        grid = part.locator("table.grid").first
        wrong_way = page.evaluate("""() => { const d = JSON.parse(document.getElementById("answers").textContent);
            return Object.values(d.problems)[0].steps.a0.values; }""")
        fill(grid, [[str(x).replace(".", ",") for x in row] for row in wrong_way])
        part.locator("button.check").click()
        cells = grid.locator("td")
        assert {cells.nth(k).get_attribute("data-mark") for k in range(cells.count())} == {"right"}
