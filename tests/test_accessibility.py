"""The answer key page (answers.html) and the practice page, as a screen reader and a phone meet
them (issue 36): axe-core finds no WCAG 2.0/2.1 A or AA violation, nor a best-practice one, at a
desktop's width and at 320 CSS px (400 % zoom of a 1280 px window), for a set of every type in
each language; and the key's accessibility tree reads one problem in the order it is worked.

axe-core comes from the npm registry: scripts/setup.sh (FOR_TESTS=1) installs it into the
environment's folder, .venv/axe."""

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
            name = name.replace(" ,", ",")  # "Q , 3 by 4": the caption's maths, then its words
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
