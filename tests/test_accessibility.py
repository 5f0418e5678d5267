"""The answer key page (answers.html) and the practice page, as a screen reader and a phone meet
them (issue 36): axe-core finds no WCAG 2.0/2.1 A or AA violation, nor a best-practice one, at a
desktop's width and at 320 CSS px (400 % zoom of a 1280 px window), for a set of every type in
each language; and the key's accessibility tree reads one problem in the order it is worked.

axe-core comes from the npm registry: scripts/setup.sh (FOR_TESTS=1) installs it into the
environment's folder, .venv/axe."""

import json
import os
import re
import sys
from pathlib import Path

import pytest
from test_web import NO_BROWSER

from generator.kinds import BUILT_IN

# The languages each page is checked in: a language given as --lang CODE (English is the default).
LANGUAGES = ["en", "de"]
AXE = Path(os.environ.get("AXE_CORE", Path(sys.prefix) / "axe/node_modules/axe-core/axe.min.js"))
NO_AXE = pytest.mark.skipif(not AXE.exists() and not os.environ.get("CI"),
                            reason="axe-core is not installed (FOR_TESTS=1 scripts/setup.sh installs it)")
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
WIDTHS = {"desktop": 1280, "320px": 320}  # 320 CSS px: a 1280 px window at 400 % zoom


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    """A set of every built-in type with its practice page and key page, in each language."""
    from generator.cli import main
    root = tmp_path_factory.mktemp("a11y")
    for lang in LANGUAGES:
        args = [] if lang == "en" else ["--lang", lang]
        assert main(["--seed", "3", "--count", str(len(BUILT_IN)), "--types", ",".join(BUILT_IN),
                     "--format", "html", "--out", str(root / lang), *args]) == 0
    return root


def test_the_key_page_is_one_document_with_its_language_and_no_script(every_type):
    page = (every_type / "en" / "answers.html").read_text(encoding="utf-8")
    assert re.search(r'<html lang="en">', page)
    assert "<title>Scaled dot-product attention: answer key</title>" in page
    assert "<script" not in page and "@media print" in page
    # every type's problem, each with its worked steps; every matrix a table with its headers
    assert page.count('<section class="problem"') == len(BUILT_IN)
    tables = re.findall(r"<table.*?</table>", page, re.S)
    assert len(tables) > 100
    assert all("<caption>" in t and '<th scope="col">' in t and '<th scope="row">' in t for t in tables)
    assert "<math" in page and "$" not in re.sub(r"<[^>]+>", "", page)  # no TeX left unprinted


def test_a_line_of_the_latex_working_is_printed_as_words_and_mathml():
    from generator.formats.answers import tex_lines
    lines = tex_lines(r"Row 1: $x = (-1) \cdot 2$,\quad sum~$= 3$;\par{\small\emph{Note:} it \& that}\par")
    assert len(lines) == 3  # a \quad between formulas parts them as a \par does
    assert lines[0].startswith('Row 1: <span role="math" aria-label="x = (minus 1) times 2">')
    assert "<mrow><mo>&#x02212;</mo><mn>1</mn></mrow>" in lines[0]  # −1 a number, not a subtraction
    assert lines[1].startswith("sum\u00a0<span") and "<mn>3</mn>" in lines[1]
    assert lines[2] == "<b>Note:</b> it &amp; that"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["answers.html", "practice.html"])
@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.browser
@NO_BROWSER
@NO_AXE
def test_axe_finds_no_violations(every_type, browser, lang, name, width):
    context = browser.new_context(viewport={"width": WIDTHS[width], "height": 900},
                                  bypass_csp=True)  # the pages' policy refuses any other script
    page = context.new_page()
    page.goto((every_type / lang / name).as_uri())
    if name == "practice.html":
        answer_some_parts(page)
    # the page's script looks at each box's size as it is laid out (a ResizeObserver): a frame
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    # reflow (WCAG 1.4.10): what is wider than the screen scrolls in its own region, not the page
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags},"
                           " resultTypes: ['violations']})", AXE_TAGS)
    context.close()
    found = [f"{v['id']}: {v['help']} ({len(v['nodes'])}x, first {v['nodes'][0]['target']})"
             for v in result["violations"]]
    assert not found, "\n".join(found)


def answer_some_parts(page, parts: int = 24) -> None:
    """The practice page as a student leaves it: every hint and worked answer open, and parts
    checked with answers right, wrong and unreadable (their marks and messages shown)."""
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    for k, part in enumerate(page.locator("section.problem .part").all()[:parts]):
        boxes = part.locator("input[type=text]")
        for i in range(min(boxes.count(), 3)):
            boxes.nth(i).fill(["1", "-7/3", "½"][(k + i) % 3])
        if part.locator("input[type=radio]").count():
            part.locator("input[type=radio]").first.check()
        part.locator("button.check").click()


def accessibility_tree(page) -> list[tuple[int, str, str]]:
    """The page's accessibility tree as the browser gives it to a screen reader (CDP's
    Accessibility.getFullAXTree), in reading order: (depth, role, name), nodes the browser
    leaves out skipped (their children kept)."""
    session = page.context.new_cdp_session(page)
    nodes = {node["nodeId"]: node for node in session.send("Accessibility.getFullAXTree")["nodes"]}
    root = next(node for node in nodes.values() if "parentId" not in node)
    read = []

    def walk(node, depth):
        shown = not node.get("ignored")
        if shown:
            role = node.get("role", {}).get("value", "")
            name = " ".join(node.get("name", {}).get("value", "").split())  # no-break spaces too
            if role != "table":  # "Q = XW sub Q , shape 3 × 4": a heading's maths, then its words
                name = name.replace(" ,", ",")  # (a table's caption is one text: "Q, 3 by 4")
            read.append((depth, "math" if role == "MathMLMath" else role, name))
        for child in node.get("childIds", []):
            if child in nodes:
                walk(nodes[child], depth + shown)
    walk(root, 0)
    return read


@pytest.mark.browser
@NO_BROWSER
def test_the_key_reads_one_problem_in_the_order_it_is_worked(every_type, browser):
    page = browser.new_page()
    page.goto((every_type / "en" / "answers.html").as_uri())
    tree = accessibility_tree(page)
    page.close()
    roles = [(role, name) for _, role, name in tree]
    start = roles.index(("heading", next(n for r, n in roles if n.startswith("Problem 1:"))))
    end = next(k for k, (r, n) in enumerate(roles) if r == "heading" and n.startswith("Problem 2:"))
    problem = [(role, name) for role, name in roles[start:end]
               if role in ("heading", "table", "math", "listitem", "StaticText", "region")]
    said = [f"{role}: {name}" for role, name in problem]
    # the problem's heading, its statement, the given matrices, then the part (a)
    order = [next(k for k, s in enumerate(said) if s.startswith(prefix)) for prefix in
             ("heading: Problem 1: Self-attention", "StaticText: Problem id",
              "table: X", "table: W sub Q", "heading: (a)")]
    assert order == sorted(order), said[:40]
    # each step: its formula as a heading, its matrix (named), then its working, in order
    part_a = [s for s in said[order[-1]:] if not s.startswith("StaticText")]
    step = part_a.index("heading: Q = XW sub Q, shape 3 × 4, 1 mark")
    assert part_a[step + 1:step + 4] == ["math: Q = XW sub Q", "region: Problem 1 (a): Q, 3 by 4",
                                        "table: Q, 3 by 4"], part_a[step:step + 6]
    working = part_a.index("region: Problem 1 (a): working for Q")
    assert working > step + 3
    assert part_a[working + 1].startswith("listitem") and part_a[working + 2].startswith(
        "math: Q sub 1,1 = "), part_a[working:working + 4]
    parts = [s for s in said if re.match(r"heading: \([a-z]\)", s)]
    assert [p[10] for p in parts] == list("abcdef"[:len(parts)]) and len(parts) >= 3
    # every matrix of the page (a table) is named by its symbol and shape; every region has a name
    tables = [name for _, role, name in tree if role == "table"]
    assert tables and all(re.search(r"\S.*, \d+ by \d+$", name) for name in tables), tables[:5]
    assert all(name for _, role, name in tree if role == "region")
    headings = [(depth, name) for depth, role, name in tree if role == "heading"]
    assert len(headings) > 3 * len(BUILT_IN)


def test_a_teachers_template_folder_replaces_the_key_pages_layout(tmp_path):
    from generator.cli import main
    (tmp_path / "mine" / "html").mkdir(parents=True)
    (tmp_path / "mine" / "html" / "answers.html.j2").write_text(
        '<html lang="{{ lang }}"><title>{{ _("Key: %(title)s", title=info.title) }}</title>'
        "{% for paper in papers %}{{ paper.problems | length }}{% endfor %}</html>\n")
    assert main(["--seed", "1", "--count", "2", "--format", "html", "--templates",
                 str(tmp_path / "mine"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "answers.html").read_text() == (
        '<html lang="en"><title>Key: Scaled dot-product self-attention</title>2</html>\n')


@pytest.fixture(scope="module")
def french(tmp_path_factory):
    """A French set (issue 36's blind student): a count of parameters (whole numbers in the
    thousands), a multiple choice of concepts, and self-attention step by step."""
    from generator.cli import main
    out = tmp_path_factory.mktemp("a11y-fr")
    assert main(["--seed", "1", "--count", "3", "--types", "counting,concept,full", "--difficulty",
                 "hard", "--lang", "fr", "--format", "html", "--out", str(out)]) == 0
    return out


def open_practice(browser, site):
    page = browser.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto((site / "practice.html").as_uri())
    return page


def problem_of(page, title_start):
    return page.locator("section.problem", has=page.locator(f"h2:text-matches('^Exercice \\\\d+ : {title_start}')"))


def said(page, part):
    """What a screen reader is told of a part after Check: its live region's text, once set."""
    region = part.locator("[role=status]")
    page.wait_for_function("(region) => region.textContent.length > 0", arg=region.element_handle())
    return region.text_content()


@pytest.mark.browser
@NO_BROWSER
def test_check_says_the_tally_and_why_to_a_screen_reader(french, browser):
    """After Check a screen reader hears the tally (in French, singular for 0 and 1), where the
    grid is too high or too low and the first message (a slip's explanation); the grid is
    described by its note; an edit changes no live region (nothing said per keystroke)."""
    page = open_practice(browser, french)
    part = problem_of(page, "Auto-attention").locator(".part").first
    boxes = part.locator("table.grid input")
    assert part.locator("input.shape").count() <= 3
    for k in range(boxes.count()):
        boxes.nth(k).fill("1")
    part.locator("button.check").click()
    text = said(page, part)
    total = boxes.count() + part.locator("input.shape").count()
    assert text.startswith(f"0 réponse juste sur {total}. "), text  # not "0 réponses justes"
    assert "trop" in text and "ligne 1, colonne 1" in text, text
    assert re.search(r"\. Exercice \d \(a\), Q: trop .*\. Exercice \d \(a\), K: trop ", text), text  # which grid
    assert "✗" not in text and ".." not in text, text
    table = part.locator("table.grid").first
    described = [page.locator(f"[id=\"{name}\"]").text_content() for name in table.get_attribute("aria-describedby").split()]
    assert any("trop" in note for note in described), described
    # two right: the French plural
    key = json.loads(page.locator("#answers").text_content())["problems"]
    problem = problem_of(page, "Auto-attention").get_attribute("data-problem")
    values = key[problem]["steps"]["a0"]["values"]
    boxes.nth(0).fill(str(values[0][0]).replace(".", ","))
    boxes.nth(1).fill(str(values[0][1]).replace(".", ","))
    assert part.locator("[role=status]").text_content() == text  # an edit says nothing new
    part.locator("button.check").click()
    page.wait_for_function("(region) => region.textContent.startsWith('2 ')", arg=part.locator("[role=status]").element_handle())
    assert part.locator(".marks").text_content() == f"2 réponses justes sur {total}"
    # the live region is in the accessibility tree, with its text
    tree = accessibility_tree(page)
    assert any(role == "status" and name.startswith("2 réponses justes") for _, role, name in tree) or any(
        role == "StaticText" and name.startswith("2 réponses justes sur") for _, role, name in tree)
    assert not page.errors
    page.close()


@pytest.mark.browser
@NO_BROWSER
def test_a_wrong_choice_says_why(french, browser):
    """A wrong option chosen is said wrong, with the slip behind it (the key's "where the
    others go wrong"), shown and announced; a right one says no slip."""
    page = open_practice(browser, french)
    problem = problem_of(page, "Point de contrôle")
    answers = json.loads(page.locator("#answers").text_content())["problems"][problem.get_attribute("data-problem")]["answers"]
    part = problem.locator(".part").first
    wrong = next(k for k in range(part.locator("input[type=radio]").count()) if k != answers[part.get_attribute("data-part")])
    slip = part.locator("label").nth(wrong).locator(".slip").text_content()
    assert slip.strip()
    part.locator("input[type=radio]").nth(wrong).check()
    part.locator("button.check").click()
    letter = "ABCDEFGHIJKL"[wrong]
    message = part.locator(".message").text_content()
    assert message == f"votre choix ({letter}) est faux : {slip.strip()}", message
    assert part.locator(".message").is_visible()
    assert said(page, part) == f"0 réponse juste sur 1. {message}"
    assert not page.errors
    page.close()


@pytest.mark.browser
@NO_BROWSER
def test_a_given_matrix_is_read_by_its_name_and_its_rows(french, browser):
    page = open_practice(browser, french)
    tree = accessibility_tree(page)
    page.close()
    images = [name for _, role, name in tree if role == "image"]
    x = next(name for name in images if name.startswith("X, "))
    rows, columns = map(int, re.match(r"X, (\d+) par (\d+)\. ", x).groups())
    said = re.findall(r"ligne (\d+): ([^.]+(?:\.(?! )[^.]*)*)", x)  # 0,84; −0,19 (a decimal comma)
    assert [int(k) for k, _ in said] == list(range(1, rows + 1)), x
    assert all(re.fullmatch(r"−?\d+(,\d+)?(; −?\d+(,\d+)?)*", row) and row.count(";") == columns - 1
               for _, row in said), x
    assert any(name.startswith("W indice Q, ") for name in images), images


@pytest.mark.browser
@NO_BROWSER
def test_a_count_typed_with_a_comma_says_how_it_was_read(french, browser):
    """On a French page 1,280 in a grid of whole numbers is a decimal (1,28): the page says
    how it read it and how to write thousands."""
    page = open_practice(browser, french)
    problem = problem_of(page, "Compter")
    key = json.loads(page.locator("#answers").text_content())["problems"][problem.get_attribute("data-problem")]
    step, count = next((name, int(grid["values"][0][0])) for name, grid in key["steps"].items()
                       if 1000 <= grid["values"][0][0] < 1000000 and grid["values"][0][0] % 1000)
    grid = problem.locator(f"table.grid[data-step={step}]")
    part = grid.locator("xpath=ancestor::div[contains(@class, 'part')]")
    grid.locator("input").fill(f"{count // 1000},{count % 1000:03d}")
    part.locator("button.check").click()
    shown = f"{count / 1000:g}".replace(".", ",")
    assert part.locator(".message").text_content() == (
        f"lu comme {shown} ; écrivez les milliers sans séparateur ou avec une espace")
    grid.locator("input").fill(f"{count // 1000} {count % 1000:03d}")  # as it says: right
    part.locator("button.check").click()
    assert grid.locator("td").first.get_attribute("data-mark") == "right"
    page.close()


def test_a_row_of_a_matrix_and_an_upright_word_are_said_as_words():
    """A_{3,:} is "row 3 of A" (not "A sub 3, colon"), in the language; \\mathrm{size} is one word
    (<mtext>, not a letter per <mi>), and size and raw are said in the language."""
    from generator.rendering.language import language_of
    from generator.rendering.prose import mathml, spoken, words_translated
    french = language_of("fr").gettext
    assert spoken(r"A_{3,:} = [1, 2]") == "row 3 of A = [1, 2]"
    assert spoken(r"A_{3,:}", french) == "ligne 3 de A"
    assert spoken(r"(A_{\mathrm{raw}})_{2,:} = [1]", french) == "ligne 2 de A indice brut = [1]"
    assert spoken(r"\tilde{S}_{2,:}") == "row 2 of S tilde" and spoken(r"V_{:,1}") == "column 1 of V"
    assert spoken(r"\mathrm{d}\tilde{S}_{2,:}") == "row 2 of d S tilde"
    assert "<mtext>size</mtext>" in mathml(r"\mathrm{size}") and "<mi>s</mi>" not in mathml(r"\mathrm{size}")
    assert "<mtext>raw</mtext>" in mathml(r"A_{\mathrm{raw}}")
    assert mathml(r"\mathrm{d}W") == mathml(r"\mathrm{d}W")  # a one-letter d stays notation
    assert words_translated(r"\mathrm{size}", french) == r"\mathrm{taille}"
    assert spoken(r"A_{\mathrm{raw}}", french) == "A indice brut"
    from generator.rendering.prose import PRINTERS  # shown in the language too, as \\text{} words are
    printed = PRINTERS["html"].with_words(french).print(r"la $\mathrm{size}$ et $A_{\mathrm{raw}} = B$")
    assert "<mtext>taille</mtext>" in printed and "<mtext>brut</mtext>" in printed, printed
    assert "size" not in printed and "raw" not in printed, printed


@pytest.mark.browser
@NO_BROWSER
def test_typing_changes_no_live_region_after_the_first_key(french, browser):
    """Keystrokes are not announced: once an edit has taken a part's marks back, the next keys
    change no live region (the score and the tally say nothing new)."""
    page = open_practice(browser, french)
    part = problem_of(page, "Auto-attention").locator(".part").first
    box = part.locator("table.grid input").first
    box.fill("1")
    part.locator("button.check").click()
    said(page, part)
    box.press("End")
    box.press("2")  # the first key: the marks are taken back
    page.evaluate("""() => {
      window.changes = [];
      const seen = new MutationObserver((records) => records.forEach((r) => window.changes.push(
        (r.target.closest ? r.target : r.target.parentElement).closest('[aria-live], [role=status]')?.className)));
      document.querySelectorAll('[aria-live], [role=status]').forEach((region) =>
        seen.observe(region, { childList: true, characterData: true, subtree: true }));
    }""")
    for key in "345":
        box.press(key)
    page.wait_for_timeout(150)
    assert page.evaluate("window.changes") == []
    page.close()
