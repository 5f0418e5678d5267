"""The practice page's behaviour and layout (issue 31, part D), in one Debian chromium for the
module: boxes that hold every digit on a phone and at 200 % zoom, marks that follow edits,
answers kept per set, a Clear that asks, a reload that marks only what was checked, worked
answers without JavaScript, print, long entries, shapes asked with a box, skip links."""

import functools
import json
import re
import subprocess

import pytest
from test_web import NO_BROWSER

from generator.maths.spec import spec_from_record
from generator.rendering.formatting import decimal_text
from generator.running.pipeline import solve_checked

pytestmark = [pytest.mark.browser, NO_BROWSER]
EVERY_TYPE = "full,row,mistake,permute,masked,heads,concept,backward,softmax-jacobian"
# a 1280 px window at 200 % zoom lays the page out in 640 CSS px
WIDTHS = {"320": 320, "390": 390, "1280": 1280, "zoom-200": 640}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Pages of every type (medium, and hard: longer decimals), and two sets whose problem has
    one id (M42-1) but other numbers."""
    from generator.cli import main
    root = tmp_path_factory.mktemp("ui")
    runs = {"medium": ["--seed", "42", "--count", "9", "--types", EVERY_TYPE],
            "hard": ["--seed", "5", "--count", "9", "--types", EVERY_TYPE, "--difficulty", "hard"],
            "two-decimals": ["--seed", "42", "--count", "9", "--types", EVERY_TYPE, "--decimals", "2"],
            "integer": ["--seed", "42", "--count", "1", "--types", "full", "--weights", "integer"],
            "decimal": ["--seed", "42", "--count", "1", "--types", "full", "--weights", "decimal"]}
    for name, args in runs.items():
        assert main([*args, "--practice", "--format", "html", "--out", str(root / name)]) == 0
    return root


@pytest.fixture
def open_page(browser):
    """open_page(path, **context options): a page in a fresh context (its own storage)."""
    contexts = []

    def open_(path, **options):
        context = browser.new_context(**options)
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.goto(path.as_uri())
        return page

    yield open_
    for context in contexts:
        assert not any(page.errors for page in context.pages), [p.errors for p in context.pages]
        context.close()


@functools.cache
def key_texts(folder, fixed=False):
    """Every grid's entries as the answer key shows them (-0.5), or, ``fixed``, as a student
    types them to the page's decimals (-0.5000): {problem id: {data-step: rows}}."""
    problems = json.loads((folder / "problems.json").read_text())
    decimals = problems["decimals"]
    text = (lambda n: f"{n.value:.{decimals}f}") if fixed else (lambda n: decimal_text(n, decimals))
    texts = {}
    for record in problems["problems"]:
        question = solve_checked(spec_from_record(record["spec"], record["id"]))
        texts[record["id"]] = {f"{part.letter}{k}": [[text(n) for n in row] for row in step.entries]
                               for part in question.parts for k, step in enumerate(part.written)}
    return texts


FILL_EVERY_BOX = """(texts) => {
  for (const section of document.querySelectorAll('section.problem')) {
    for (const table of section.querySelectorAll('table.grid')) {
      const rows = texts[section.dataset.problem][table.dataset.step];
      table.querySelectorAll('tr').forEach((tr, i) => tr.querySelectorAll('td').forEach((td, j) => {
        const input = td.querySelector('input');
        if (input) input.value = rows[i][j];
      }));
    }
  }
}"""
CLIPPED = """() => [...document.querySelectorAll('table.grid td input')]
  .filter((input) => input.scrollWidth > input.clientWidth)
  .map((input) => `${input.closest('section').dataset.problem} ${input.getAttribute('aria-label')}: ${input.value}`)"""
BEHIND_A_SCROLL = """() => [...document.querySelectorAll('table.grid')].filter((table) =>
  table.getBoundingClientRect().right > table.closest('.scroll').getBoundingClientRect().right + 1)
  .map((table) => table.dataset.name)"""


def grid(page, problem, name):
    return page.locator(f"section[data-problem='{problem}'] table.grid[data-name='{name}']")


def fill(table, rows):
    inputs = table.locator("td input")
    values = [value for row in rows for value in row]
    if inputs.count() != len(values):  # a masked weight or score past the mask: −∞, no box
        values = [value for value in values if value != "-inf"]
    assert inputs.count() == len(values)
    for k, value in enumerate(values):
        inputs.nth(k).fill(value)


def marked(table):
    return table.locator("[data-mark]").count()


@pytest.mark.parametrize("level", ["medium", "hard", "two-decimals"])
def test_every_box_holds_its_key_entry_on_a_phone_and_at_200_percent(pages, open_page, level, tmp_path):
    page = open_page(pages / level / "practice.html")
    # as the key prints it (-0.5), and to the shown decimals (-0.5000); with a hyphen, and with
    # the minus sign copied from the page
    for (fixed, minus) in [(False, "-"), (False, "\u2212"), (True, "-"), (True, "\u2212")]:
        texts = key_texts(pages / level, fixed)
        page.evaluate(FILL_EVERY_BOX, {p: {s: [[t.replace("-", minus) for t in row] for row in rows]
                                           for s, rows in steps.items()} for p, steps in texts.items()})
        for name, width in WIDTHS.items():
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate(CLIPPED) == [], (name, fixed, minus)
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            # every column in view, none behind a scroll; at 320 px a hard page's five
            # columns of 7-character entries (-0.1234) cannot fit, and scroll in their grid
            if level == "medium" or width >= 390:
                assert page.evaluate(BEHIND_A_SCROLL) == [], name
    page.locator(".part button.check").nth(0).click()
    for name, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(tmp_path / f"{level}-{name}.png"))


def test_an_edit_takes_back_its_marks_and_the_marks_that_followed_from_it(pages, open_page):
    texts = key_texts(pages / "medium")["M42-1"]
    page = open_page(pages / "medium" / "practice.html")
    q, k = texts["a0"], texts["a1"]
    column = next(c for c in range(len(k[0])) if any(float(row[c]) for row in k))  # K's column c not 0
    slipped = [row[:] for row in q]
    slipped[0][column] = str(float(q[0][column]) + 1)
    fill(grid(page, "M42-1", "Q"), slipped)
    fill(grid(page, "M42-1", "K"), k)
    own = [[f"{sum(float(a) * float(b) for a, b in zip(row, key)):g}" for key in k] for row in slipped]
    parts = page.locator("section[data-problem='M42-1'] .part")
    scores = grid(page, "M42-1", "scores")
    fill(scores, own)
    parts.nth(1).locator("button.check").click()
    assert parts.nth(1).locator(".marks").text_content() == "9 of 9 answers right \u2713"
    score = page.locator("section[data-problem='M42-1'] h2 .score")
    assert score.text_content().startswith("score 2.0")

    scores.locator("td input").first.fill("99")  # a right entry changed: no '99 ✓', no '9 of 9'
    assert marked(scores) == 0 and parts.nth(1).locator(".marks").text_content() == "changed since Check"
    assert score.text_content().startswith("score 0.0")
    scores.locator("td input").first.fill(own[0][0])
    parts.nth(1).locator("button.check").click()
    assert parts.nth(1).locator(".marks").text_content() == "9 of 9 answers right \u2713"

    # the slip in Q put right: the scores that followed it are no longer marked right ...
    grid(page, "M42-1", "Q").locator("td input").nth(column).fill(q[0][column])
    assert marked(scores) == 0
    assert "earlier answer changed" in parts.nth(1).locator(".marks").text_content()
    # ... and Check on (a) marks them again, against the Q now typed
    parts.nth(0).locator("button.check").click()
    assert scores.locator("input.wrong").count() > 0
    assert parts.nth(1).locator(".marks").text_content() != "9 of 9 answers right \u2713"


def test_a_reload_marks_only_the_parts_that_were_checked(pages, open_page):
    texts = key_texts(pages / "medium")["M42-1"]
    page = open_page(pages / "medium" / "practice.html")
    parts = page.locator("section[data-problem='M42-1'] .part")
    fill(grid(page, "M42-1", "Q"), texts["a0"])  # typed, never checked
    fill(grid(page, "M42-1", "scores"), texts["b0"])
    fill(grid(page, "M42-1", "scaled"), texts["c0"])
    parts.nth(1).locator("button.check").click()
    parts.nth(2).locator("button.check").click()
    grid(page, "M42-1", "scaled").locator("td input").first.fill("7")  # checked, then changed
    page.reload()
    assert grid(page, "M42-1", "Q").locator("input").first.input_value() == texts["a0"][0][0]
    assert marked(grid(page, "M42-1", "Q")) == 0 and parts.nth(0).locator(".marks").text_content() == ""
    assert parts.nth(1).locator(".marks").text_content() == "9 of 9 answers right \u2713"
    assert marked(grid(page, "M42-1", "scaled")) == 0 and parts.nth(2).locator(".marks").text_content() == ""


def test_answers_are_kept_per_set_not_per_problem_id(pages, open_page):
    page = open_page(pages / "integer" / "practice.html")
    page.locator("section[data-problem='M42-1'] table.grid input").first.fill("5")
    page.goto((pages / "decimal" / "practice.html").as_uri())  # another set, the same id M42-1
    assert page.locator("section[data-problem='M42-1'] table.grid input").first.input_value() == ""
    page.goto((pages / "integer" / "practice.html").as_uri())
    assert page.locator("section[data-problem='M42-1'] table.grid input").first.input_value() == "5"


def test_clear_asks_first(pages, open_page):
    page = open_page(pages / "integer" / "practice.html")
    box = page.locator("table.grid input").first
    box.fill("5")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#clear").click()
    assert asked and box.input_value() == "5"
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#clear").click()
    assert box.input_value() == ""
    page.reload()
    assert page.locator("table.grid input").first.input_value() == ""


def test_without_javascript_the_worked_answers_open(pages, open_page):
    page = open_page(pages / "integer" / "practice.html", java_script_enabled=False)
    part = page.locator(".part").first
    assert not part.locator("button.check").is_visible()  # it would do nothing
    assert not part.locator("pre.working").is_visible()
    part.locator("details.reveal summary").click()
    assert part.locator("pre.working").is_visible()
    assert "Q[1,1] = " in part.locator("pre.working").text_content()


def test_wrong_entries_say_too_high_or_too_low_and_long_entries_are_cut(pages, open_page):
    texts = key_texts(pages / "medium")["M42-1"]
    page = open_page(pages / "medium" / "practice.html", viewport={"width": 390, "height": 800})
    part = page.locator("section[data-problem='M42-1'] .part").nth(1)
    rows = [row[:] for row in texts["b0"]]
    rows[0][1] = str(float(rows[0][1]) + 5)
    rows[1][0] = "x" * 5000  # unreadable, and long
    fill(grid(page, "M42-1", "scores"), rows)
    part.locator("button.check").click()
    assert part.locator(".grid-note").text_content() == "\u2717 too high: row 1, column 2."
    message = part.locator(".message")
    assert "can't read" in message.text_content() and len(message.text_content()) <= 300
    box = message.bounding_box()
    assert box["width"] <= 390 and box["height"] < 150


def test_a_question_that_asks_a_shape_has_a_box_for_it_and_every_part_an_answer(pages, open_page):
    page = open_page(pages / "medium" / "practice.html")
    for part in page.locator(".part").all():
        assert part.locator("input").count() > 0, part.locator("h3").text_content()
        if "shape" in part.locator("h3").text_content() and part.locator("table.grid").count():
            assert part.locator("input.shape").count() == part.locator("table.grid").count()
    v = grid(page, "M42-1", "V")
    rows, columns = v.locator("tr").count(), v.locator("tr").first.locator("td").count()
    part = page.locator("section[data-problem='M42-1'] .part").first
    shape, cell = part.locator("input.shape[data-grid=a2]"), part.locator(".cell").nth(2)
    shape.fill(f"{rows} x {columns + 1}")
    part.locator("button.check").click()
    assert cell.get_attribute("data-mark") == "wrong"
    shape.fill(f"{rows}×{columns}")
    assert cell.get_attribute("data-mark") is None  # the edit took the mark back
    shape.press("Enter")
    assert cell.get_attribute("data-mark") == "right"


def test_skip_links_between_problems_and_a_minus_infinity_box_only_where_the_mask_is_asked(
        pages, open_page):
    page = open_page(pages / "medium" / "practice.html")
    sections = page.locator("section.problem")
    assert page.locator("nav.problems a").count() == sections.count() == 9
    for k in range(sections.count() - 1):
        skip = sections.nth(k).locator("a.skip")
        assert skip.get_attribute("href") == "#" + sections.nth(k + 1).get_attribute("id")
    skip = sections.first.locator("a.skip")
    skip.focus()
    assert skip.bounding_box()["x"] >= 0  # shown when focused
    skip.press("Enter")
    assert page.evaluate("location.hash") == "#M42-2"
    boxes_for_inf = page.evaluate("""() => { const data = JSON.parse(document.getElementById('answers').textContent);
      return [...document.querySelectorAll('section.problem table.grid')].filter((table) => {
        const values = data.problems[table.closest('section').dataset.problem].steps[table.dataset.step].values;
        return [...table.querySelectorAll('tr')].some((tr, i) => [...tr.querySelectorAll('td')].some(
          (td, j) => td.querySelector('input') && values[i][j] === null)); })
        .map((table) => table.querySelector('caption').textContent.includes('type −∞ as -inf')); }""")
    # the masking step asks where −∞ goes (a box, and how to type it); later steps show it
    assert boxes_for_inf and all(boxes_for_inf)
    assert "-inf" not in page.locator("header").text_content()


def test_print_puts_a_problem_on_each_page_and_keeps_grids_whole(pages, open_page, tmp_path):
    page = open_page(pages / "medium" / "practice.html")
    page.emulate_media(media="print")
    styles = page.evaluate("""() => [getComputedStyle(document.querySelector('section.problem')).breakBefore,
      getComputedStyle(document.querySelector('table.grid')).breakInside,
      getComputedStyle(document.querySelector('.scroll')).breakInside]""")
    assert styles == ["page", "avoid", "avoid"]
    pdf = tmp_path / "practice.pdf"
    page.pdf(path=str(pdf))
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    starts = [page_text.strip().split("\n")[0] for page_text in text.split("\f") if page_text.strip()]
    assert [line.split(":")[0] for line in starts if line.startswith("Problem")] == [
        f"Problem {n}" for n in range(1, 10)]


OVERFLOWING = """(width) => [...document.querySelectorAll('section.problem')].flatMap((section) =>
  [...section.children].filter((block) => !block.matches('.part, a.skip'))
    .flatMap((block) => [block, ...block.querySelectorAll('*')])
    .filter((el) => el.getBoundingClientRect().right > width + 0.5 || el.scrollWidth > el.clientWidth + 1)
    .map((el) => `${section.dataset.problem} ${el.tagName} ${el.textContent.slice(0, 40)}`))"""


@pytest.mark.parametrize("level", ["medium", "two-decimals"])
def test_nothing_in_a_statement_overflows_on_a_phone(pages, open_page, level):
    """A formula as wide as Attention(Q, K, V) = softmax(QKᵀ/√d_k + M)V breaks after its =."""
    page = open_page(pages / level / "practice.html", viewport={"width": 320, "height": 900})
    assert page.evaluate(OVERFLOWING, 320) == []


MARKS_ON_DIGITS = """() => [...document.querySelectorAll('table.grid td[data-mark]')].filter((td) => {
  const input = td.querySelector('input').getBoundingClientRect(), cell = td.getBoundingClientRect();
  const mark = getComputedStyle(td, '::after');
  const bottom = cell.top + parseFloat(mark.top) + parseFloat(mark.height)
    + parseFloat(mark.borderTopWidth) + parseFloat(mark.borderBottomWidth);
  const digitsTop = input.top + parseFloat(getComputedStyle(td.querySelector('input')).paddingTop) + 2;
  return bottom > digitsTop;
}).map((td) => td.querySelector('input').getAttribute('aria-label'))"""


def test_a_mark_sits_above_its_box_digits(pages, open_page):
    page = open_page(pages / "two-decimals" / "practice.html")
    page.evaluate(FILL_EVERY_BOX, key_texts(pages / "two-decimals", True))
    for button in page.locator(".part button.check").all():
        button.click()
    for name, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        assert page.locator("table.grid td[data-mark]").count() > 0
        assert page.evaluate(MARKS_ON_DIGITS) == [], name


def test_prompts_print_numbers_at_the_pages_decimals(pages):
    """Not "Token 1's largest weight is 0.5065" on a page at 2 decimals."""
    page = (pages / "two-decimals" / "practice.html").read_text(encoding="utf-8")
    prompts = [re.sub(r"<[^>]+>", " ", h3) for h3 in re.findall(r"<h3>.*?</h3>", page, re.DOTALL)]
    assert any("largest weight is" in prompt for prompt in prompts)
    assert [prompt for prompt in prompts if re.search(r"\d\.\d{3}", prompt)] == []


def test_a_row_questions_note_names_the_row_it_is(pages, open_page):
    """A row question's one row is row 3 of A (say): its boxes and its note under the grid
    say row 3, not row 1 of a one-row grid."""
    page = open_page(pages / "medium" / "practice.html")
    table = page.locator("table.grid[data-first-row]").first
    row = int(table.get_attribute("data-first-row")) + 1
    assert row > 1
    assert table.locator("input").first.get_attribute("aria-label").endswith(f"row {row}, column 1")
    table.locator("input").first.fill("9")
    table.locator("xpath=ancestor::*[contains(@class, 'part')][1]").locator("button.check").click()
    note = table.locator("xpath=ancestor::*[contains(@class, 'scroll')][1]/following-sibling::*[1]")
    assert note.text_content() == f"\u2717 too high: row {row}, column 1."
