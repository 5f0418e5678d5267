"""The practice page in a real headless Chromium, and the Moodle question bank."""

import json
import os
import re
import shutil
import xml.etree.ElementTree as ElementTree

import pytest

from generator.maths.spec import spec_from_record
from generator.rendering.formatting import decimal_text
from generator.running.pipeline import solve_checked

CHROMIUM = shutil.which("chromium")
NO_BROWSER = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="Debian's chromium is not installed (scripts/test.sh installs it)")


def needs_browser(test):
    """A test that drives Chromium: marked browser, and skipped where there is none (CI has it)."""
    return pytest.mark.browser(NO_BROWSER(test))


# As this machine's probe starts Chromium: no sandbox as root, and no background traffic.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def web_run(tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("web") / "out"
    assert main(["--count", "7", "--seed", "42", "--format", "html,moodle", "--practice", "--out", str(out)]) == 0
    return out


@pytest.fixture
def page(web_run):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 900, "height": 1200})
        page.requests = []
        page.errors = []
        page.on("request", lambda request: page.requests.append(request.url))
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.goto((web_run / "practice.html").as_uri())
        yield page
        browser.close()


def fill(grid, rows):
    inputs = grid.locator("input")
    values = [value for row in rows for value in row if value is not None]
    assert inputs.count() == len(values)
    for k, value in enumerate(values):
        inputs.nth(k).fill(value)


def key_rows(web_run, problem_id, name):
    """The answer key's rows of a step, as the key shows them."""
    problems = json.loads((web_run / "problems.json").read_text())["problems"]
    record = next(p for p in problems if p["id"] == problem_id)
    question = solve_checked(spec_from_record(record["spec"], problem_id))
    return [[decimal_text(n, 4) for n in row] for row in question.solution.step(name).entries]


@needs_browser
def test_check_marks_right_and_wrong_entries_and_reveal_shows_the_working(page, web_run, tmp_path):
    problem = page.locator("section.problem").first
    part = problem.locator(".part").first  # (a): Q, K and V
    q_grid = part.locator("table.grid[data-name=Q]")
    right = key_rows(web_run, "M42-1", "Q")
    fill(q_grid, right)
    part.locator("button.check").click()
    assert part.locator(".marks").text_content() == "12 of 36 answers right"  # 33 entries and 3 shapes
    assert q_grid.locator("input.right").count() == 12

    wrong = [row[:] for row in right]
    wrong[0][0] = str(float(wrong[0][0]) + 1)
    fill(q_grid, wrong)
    q_grid.locator("input").last.press("Enter")  # the keyboard checks too
    assert part.locator(".marks").text_content() == "11 of 36 answers right"
    assert q_grid.locator("input.wrong").count() == 1 + 0  # the slip only: K, V are empty, not Q

    reveal = part.locator("details.reveal")
    reveal.locator("summary").click()
    working = part.locator("pre.working")
    assert working.is_visible() and reveal.get_attribute("open") is not None
    assert "Q[1,1] = " in working.text_content()
    page.screenshot(path=str(tmp_path / "practice.png"), full_page=True)
    assert (tmp_path / "practice.png").stat().st_size > 10_000
    assert all(url.startswith("file://") for url in page.requests) and page.errors == []


@needs_browser
def test_a_slip_carries_forward(page, web_run):
    problem = page.locator("section.problem").first
    parts = problem.locator(".part")
    q, k = key_rows(web_run, "M42-1", "Q"), key_rows(web_run, "M42-1", "K")
    q[0][0] = str(float(q[0][0]) + 1)  # a slip in Q
    fill(parts.nth(0).locator("table.grid[data-name=Q]"), q)
    fill(parts.nth(0).locator("table.grid[data-name=K]"), k)
    # the scores the student's own Q and K give, not the key's
    own = [[sum(float(a) * float(b) for a, b in zip(row, col)) for col in k] for row in q]
    fill(parts.nth(1).locator("table.grid"), [[f"{x:g}" for x in row] for row in own])
    parts.nth(1).locator("button.check").click()
    assert parts.nth(1).locator(".marks").text_content() == "9 of 9 answers right \u2713"


@needs_browser
def test_multiple_choice_and_mistake_questions(page, web_run):
    problems = json.loads((web_run / "problems.json").read_text())["problems"]
    concept = page.locator("section.problem[data-problem=M42-7]")
    item = concept.locator(".part").nth(1)  # what every row sums to
    choices = next(p for p in problems if p["id"] == "M42-7")["choices"][1]
    item.locator(f"input[value='{'abcd'.index(choices['answer'])}']").check()
    item.locator("button.check").click()
    assert item.locator(".marks").text_content() == "1 of 1 answer right \u2713"
    mistake = page.locator("section.problem[data-problem=M42-3]").locator(".part").first
    mistake.locator("input[type=radio]").first.check()  # no scaling: not this problem's mistake
    mistake.locator("button.check").click()
    assert mistake.locator(".marks").text_content() == "0 of 1 answer right"


def test_practice_page_is_self_contained(web_run):
    html = (web_run / "practice.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "default-src 'none'" in html and "<math>" in html


def test_moodle_escapes_user_text(tmp_path, run_cli):
    title = "R&D <b>x</b> ]]> a/b"
    assert run_cli("--count", "1", "--seed", "1", "--title", title, "--format", "moodle",
                   "--out", tmp_path)[0] == 0
    root = ElementTree.parse(tmp_path / "moodle.xml").getroot()
    assert "/R&D <b>x<-b> ]]> a-b/seed 1/" in root[0].findtext("category/text")  # "/" would nest


def test_versions_give_a_page_and_a_category_each(tmp_path, run_cli):
    assert run_cli("--count", "2", "--seed", "3", "--versions", "2", "--format", "html,moodle", "--practice",
                   "--out", tmp_path)[0] == 0
    assert sorted(p.name for p in (tmp_path / "practice").iterdir()) == ["version-01.html", "version-02.html"]
    root = ElementTree.parse(tmp_path / "moodle.xml").getroot()
    assert [q.findtext("category/text").rsplit("/", 1)[1] for q in root if q.get("type") == "category"] == [
        "version 1", "version 2"]
    assert "M3v2-1" in (tmp_path / "practice" / "version-02.html").read_text()


@needs_browser
def test_a_slip_in_the_scaled_row_carries_into_its_weights(page, web_run):
    row = page.locator("section.problem[data-problem=M42-2]")
    scaled, weights = row.locator(".part").nth(0), row.locator(".part").nth(1)
    slipped = [[0.0, 1.0, 0.5]]  # the key has 0.5, 1, 0.5: a slip in the first entry
    fill(scaled.locator("table.grid"), [[str(x) for x in slipped[0]]])
    scaled.locator("button.check").click()
    assert scaled.locator(".marks").text_content() == "2 of 3 answers right"
    import math
    exps = [math.exp(x) for x in slipped[0]]
    own = [f"{e / sum(exps):.4f}" for e in exps]
    fill(weights.locator("table.grid"), [own])
    weights.locator("input[type=radio][value='1']").check()  # key 2 gets the most attention
    weights.locator("button.check").click()
    assert weights.locator(".marks").text_content() == "4 of 4 answers right \u2713"


@needs_browser
def test_heads_carry_each_heads_own_values(page, web_run):
    heads = page.locator("section.problem[data-problem=M42-6]")
    split, head1 = heads.locator(".part").nth(1), heads.locator(".part").nth(2)
    grids = {name: split.locator(f"table.grid[data-name='head1.{name}']") for name in "QK"}
    # type head 1's Q and K with a slip, then the scores those give
    q = [[1, 0], [0, 1], [1, 1]]
    k = [[2, 0], [0, 1], [1, -1]]
    for name, rows in (("Q", q), ("K", k)):
        fill(grids[name], [[str(x) for x in row] for row in rows])
    scores = [[sum(a * b for a, b in zip(row, col)) for col in k] for row in q]
    fill(head1.locator("table.grid[data-name='head1.scores']"), [[str(x) for x in row] for row in scores])
    head1.locator("button.check").click()
    # 9 scores right although Q_1 and K_1 are not the key's; the other grids are empty
    assert head1.locator(".marks").text_content() == "9 of 33 answers right"


@needs_browser
def test_unscaled_weights_carry_forward_from_the_students_own_scores(tmp_path, run_cli):
    """Scale 1 has no scaling grid: the weights follow from the student's own scores."""
    import math

    from playwright.sync_api import sync_playwright
    out = tmp_path / "out"
    assert run_cli("--scale", "1", "--types", "full", "--count", 1, "--seed", 4, "--practice",
                   "--format", "html", "--out", out)[0] == 0
    problem_id = json.loads((out / "problems.json").read_text())["problems"][0]["id"]
    scores = [[float(x) for x in row] for row in key_rows(out, problem_id, "scores")]
    scores[0][0] += 1  # a slip in the scores
    own_weights = [[math.exp(x) / sum(math.exp(y) for y in row) for x in row] for row in scores]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((out / "practice.html").as_uri())
        section = page.locator("section.problem").first
        assert section.locator("table.grid[data-name=scaled]").count() == 0
        fill(section.locator("table.grid[data-name=scores]"), [[f"{x:g}" for x in r] for r in scores])
        weights = section.locator("table.grid[data-name=weights]")
        fill(weights, [[f"{x:.4f}" for x in row] for row in own_weights])
        part = section.locator(".part").filter(has=page.locator("table.grid[data-name=weights]"))
        part.locator("button.check").click()
        assert part.locator(".marks").text_content() == "9 of 9 answers right \u2713"
        browser.close()
