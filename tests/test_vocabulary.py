"""One vocabulary (issue 31): what a student reads names each matrix by its symbol (S, S̃, A,
dA, J), never by the step's name inside the program (scores, dweights, jvp), and every hint
line adds up from the numbers it prints.

Every format a student reads is checked, over every question type: the practice page (its
text, captions, hints, Reveal and accessible names), the Markdown paper and key, the Moodle
bank and the Canvas package.  The internal names come from the step registry, not a list."""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ElementTree
import zipfile
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser

import pytest
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.cli import main
from generator.kinds import TYPES, type_names
from generator.kinds.questions import ATTENTION, SETUP
from generator.kinds.sampling import draw_options, why_not_drawable
from generator.maths import steps
from generator.rendering.prose import plain_maths

# A plain set, and one without a calculator (a backward question's lean row): a problem of each type
# drawable so (the kv-cache's size and grouped-query attention are a calculator's work).
NO_CALCULATOR = draw_options("medium", no_calculator=True, mask="mixed")
TYPES_OF = {"medium": type_names(),
            "no-calculator": tuple(t for t in type_names() if why_not_drawable(t, NO_CALCULATOR) is None)}
RUNS = {
    "medium": ["--count", str(len(TYPES_OF["medium"])), "--seed", "3"],
    "no-calculator": ["--count", str(len(TYPES_OF["no-calculator"])), "--seed", "5", "--no-calculator",
                      "--mask", "mixed"],
}


_GENERATED = {}


def generated(name: str, tmp_path_factory):
    """The output folder of one of RUNS, written once for the module."""
    if name not in _GENERATED:
        out = tmp_path_factory.mktemp(name) / "out"
        assert main([*RUNS[name], "--practice", "--types", ",".join(TYPES_OF[name]),
                     "--format", "md,html,moodle,qti", "--out", str(out)]) == 0
        _GENERATED[name] = out
    return _GENERATED[name]


@pytest.fixture(scope="module", params=["medium", pytest.param("no-calculator", marks=pytest.mark.slow)])
def run(request, tmp_path_factory):
    return generated(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def medium_run(tmp_path_factory):
    return generated("medium", tmp_path_factory)


# --- What a student reads, per format -------------------------------------------------------

# Attributes a person reads or hears; the rest (data-*, class, id, name) are the page's own.
READ_ATTRIBUTES = ("aria-label", "aria-description", "title", "alt", "placeholder", "alttext")


class StudentText(HTMLParser):
    """The text of an HTML document that a student reads or hears: its text outside scripts
    and styles, and the attributes a screen reader says."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._hidden += 1
        self.pieces += [value for name, value in attrs if name in READ_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.pieces.append(data)


def html_text(html: str) -> str:
    parser = StudentText()
    parser.feed(html)
    return "\n".join(parser.pieces)


def moodle_texts(path) -> dict[str, str]:
    """Each question's name, text and feedback (its HTML read as a student reads it)."""
    texts = {}
    for question in ElementTree.parse(path).getroot().iter("question"):
        if question.get("type") == "category":
            continue
        name = question.findtext("name/text")
        texts[name] = "\n".join([name, html_text(question.findtext("questiontext/text")),
                                 html_text(question.findtext("generalfeedback/text"))])
    return texts


QTI = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"


def qti_texts(path) -> dict[str, str]:
    """Each item's title and its HTML (prompt, choices, feedback), by item."""
    texts = {}
    with zipfile.ZipFile(path) as package:
        for name in package.namelist():
            if not name.endswith(".xml") or name == "imsmanifest.xml":
                continue
            root = ElementTree.fromstring(package.read(name))
            for item in root.iter(f"{QTI}item"):
                html = [m.text or "" for m in item.iter(f"{QTI}mattext")]
                texts[item.get("title")] = "\n".join([item.get("title"), *map(html_text, html)])
    return texts


def student_texts(out) -> dict[str, str]:
    """Every text a student reads, by where it is."""
    texts = {"practice.html": html_text((out / "practice.html").read_text(encoding="utf-8"))}
    for name in ("questions.md", "answers.md"):
        texts[name] = (out / name).read_text(encoding="utf-8")
    texts.update({f"moodle.xml: {k}": v for k, v in moodle_texts(out / "moodle.xml").items()})
    texts.update({f"qti.zip: {k}": v for k, v in qti_texts(out / "qti.zip").items()})
    return texts


# --- The internal names, from the registry -------------------------------------------------

def internal_names() -> list[str]:
    """Every step whose name is not how its symbol reads (scores is S; dV is dV)."""
    return [name for name, step in steps.REGISTRY.items()
            if step.symbol and name != plain_maths(step.symbol)]


def prose_words() -> set[str]:
    """The words of the project's own prose (the types' and the steps'), outside its maths and
    template code: a name that is such a word (scores, weights) is an English word too."""
    sources = [SETUP, ATTENTION]
    for kind in TYPES.values():
        sources += [kind.title, kind.choice, *kind.statement, *kind.prompts.values(),
                    *kind.keys.values(), *kind.after.values()]
    sources += [step.prompt for step in steps.REGISTRY.values()]
    words = set()
    for source in sources:
        text = re.sub(r"\$[^$]*\$|\{\{.*?\}\}|\{%.*?%\}", " ", source)
        words.update(re.findall(r"[A-Za-z]+", text))
    return words


def leak_pattern() -> re.Pattern:
    """How the internal names show where they leak: as a symbol (scores[1,1], scores (3×3),
    head1.scores) always; and, for a name that is no word of the prose (dweights, jvp),
    anywhere.  Group n<k> is the k-th name of ``internal_names``."""
    words = prose_words()
    alternatives = []
    for k, name in enumerate(internal_names()):
        bare = re.escape(name)
        as_symbol = rf"\w\.{bare}\b|\b{bare}(?:\[|\s\(\d+×\d+\)|\.\w)"
        anywhere = rf"(?<![\w.-]){bare}(?![\w-])"
        alternatives.append(f"(?P<n{k}>{as_symbol if name in words else f'{as_symbol}|{anywhere}'})")
    return re.compile("|".join(alternatives))


def test_the_registry_gives_the_names_to_look_for():
    names = internal_names()
    assert {"scores", "scaled", "dweights", "dscaled", "jvp", "grow", "projected",
            "dweights_row"} <= set(names)
    assert not {"Q", "dV", "dW_Q", "X"} & set(names)  # their names read as their symbols


def test_no_internal_step_name_in_what_a_student_reads(run):
    pattern, names = leak_pattern(), internal_names()
    lines = {}  # each line once (every Canvas item repeats its part's worked answer), and where
    for where, text in student_texts(run).items():
        for line in text.splitlines():
            lines.setdefault(line, where)
    found = [f"{where}: {names[int(match.lastgroup[1:])]!r} in {line.strip()[:120]!r}"
             for line, where in lines.items() for match in pattern.finditer(line)]
    assert not found, f"{len(found)} leaks, such as:\n" + "\n".join(found[:25])


# --- Hints that add up -----------------------------------------------------------------------

def page_hints_and_working(out) -> tuple[list[str], str]:
    """The practice page's hint paragraphs (as read) and all its Reveal working."""
    page = (out / "practice.html").read_text(encoding="utf-8")
    hints = [html_text(paragraph).replace("\n", "")
             for block in re.findall(r'<div class="hint"[^>]*>(.*?)</div>', page, re.DOTALL)
             for paragraph in re.findall(r"<p>(.*?)</p>", block, re.DOTALL)]
    reveals = re.findall(r'<pre class="working"[^>]*>(.*?)</pre>', page, re.DOTALL)
    working = "\n".join(html_text(pre) for pre in reveals)
    return hints, working


def evaluated(expression: str) -> Decimal:
    """A line's arithmetic as printed (a·b + c·(-d), a / b, a·(1 - b)), worked exactly."""
    source = expression.replace("·", "*")

    def value(node):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant):
            return Decimal(ast.get_source_segment(source, node))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATIONS:
            return OPERATIONS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not a line of working: {expression!r}")

    return value(ast.parse(source, mode="eval"))


OPERATIONS = {ast.Add: Decimal.__add__, ast.Sub: Decimal.__sub__, ast.Mult: Decimal.__mul__,
              ast.Div: Decimal.__truediv__}


def rounds_to(value: Decimal, printed: str) -> bool:
    """Whether a value, rounded half up to the places a result is printed with, is that result."""
    unit = Decimal(1).scaleb(Decimal(printed).as_tuple().exponent)
    return value.quantize(unit, ROUND_HALF_UP) == Decimal(printed)


def exponentials_add_up(row: str) -> bool:
    """Row 1: e^x ≈ y, ..., masked → 0; sum = S: each e^x rounds to its y, and S is their sum."""
    powers, total = row.rsplit("; sum = ", 1)
    printed = re.findall(r"e\^(\S+) [=≈] (\S+?)(?:,|$)", powers)
    assert printed, row
    return (all(rounds_to(Decimal(x).exp(), y) for x, y in printed)
            and sum(Decimal(y) for _, y in printed) == Decimal(total))


def test_every_hint_line_adds_up_from_the_numbers_it_prints(run):
    hints, working = page_hints_and_working(run)
    checked = 0
    for hint in hints:
        if " First: " not in hint:
            continue
        first = hint.split(" First: ", 1)[1].split(" (The key works", 1)[0].removesuffix(".")
        if first.startswith("Row "):
            assert exponentials_add_up(first), hint
            assert first in working  # the Reveal's own numbers
        elif " ≈ " in first or first.count(" = ") > 1 or first.startswith("the dot product"):
            expression, relation, result = re.split(r" ([=≈]) ", first)[-3:]
            expression = expression.removeprefix("the dot product ")
            assert rounds_to(evaluated(expression), result), hint
            assert f"{expression} {relation} {result}" in working, hint
        checked += 1
    assert checked > 30


# --- Accessible names ------------------------------------------------------------------------

NAMED = re.compile(r"<(h[1-6]|caption)\b.*?</\1>|<div class=\"hint\"[^>]*>.*?</div>", re.DOTALL)


def test_maths_keeps_a_spoken_name_in_headings_captions_and_hints(run):
    """A browser leaves MathML out of a heading's or a caption's accessible name ("Scale the
    scores: ."); each formula there carries its spoken form as its label."""
    page = (run / "practice.html").read_text(encoding="utf-8")
    formulas = [math for named in NAMED.finditer(page) for math in re.findall(r"<math[^>]*>", named[0])]
    assert len(formulas) > 100
    # a formula that may break after its = is shown as pieces, and labelled as a whole
    assert all(re.fullmatch(r'<math aria-(label="[^"]+"|hidden="true")>', math) for math in formulas)
    assert all(re.fullmatch(r'<span role="math" aria-label="[^"]+">', span)
               for span in re.findall(r'<span role="math"[^>]*>', page))
    assert '<span role="math" aria-label="S tilde = S over the square root of d sub k">' in page


def test_each_box_says_its_problem_part_and_symbol(run):
    """Not "Q, row 1, column 1" four times over: "Problem 5 (a), Q, row 1, column 1"."""
    page = (run / "practice.html").read_text(encoding="utf-8")
    labels = re.findall(r'<input type="text"[^>]* aria-label="([^"]*)"', page)
    assert labels and len(set(labels)) == len(labels)
    assert all(re.match(r"Problem \d+ \([a-z]\), \S", label) for label in labels)


def test_symbols_are_printed_for_each_format():
    from generator.rendering.formatting import latex_entry_symbol, plain_entry_symbol
    from generator.rendering.prose import spoken
    assert plain_entry_symbol("scaled") == "S̃"
    assert plain_entry_symbol("scaled", 1) == "S̃_1"
    assert plain_entry_symbol("masked") == "Ŝ"  # one precomposed character: no parentheses
    assert plain_entry_symbol("masked", 2) == "Ŝ_2"
    assert plain_entry_symbol("dscaled_row") == "ds̃"
    assert plain_entry_symbol("dweights") == "dA"
    assert plain_entry_symbol("dX_Q") == "dX^(Q)"
    assert plain_entry_symbol("jvp") == "(gJ)"
    assert latex_entry_symbol("jvp") == "(gJ)"
    assert latex_entry_symbol("dscaled") == r"\mathrm{d}\tilde{S}"
    assert latex_entry_symbol("scores", 2) == "(S_{2})"
    assert spoken(r"\tilde{S} = S / \sqrt{d_k}") == "S tilde = S over the square root of d sub k"
    assert spoken(r"\mathrm{d}V = A^{\top}\, \mathrm{d}O") == "d V = A transpose d O"
    assert spoken("A'") == "A prime"
    assert spoken(r"\hat{S}_{1}") == "S hat sub 1"


@needs_browser
def test_chromium_reads_the_maths_in_headings_and_captions(medium_run):
    """The names a screen reader gets, from Chromium's accessibility tree."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((medium_run / "practice.html").as_uri())
        nodes = page.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"]
        browser.close()
    names = {role: [n.get("name", {}).get("value", "") for n in nodes
                    if n.get("role", {}).get("value") == role] for role in ("heading", "table")}
    assert any("Scale the scores: S tilde = S over the square root of d sub k" in name
               for name in names["heading"])
    assert any(name.startswith("S tilde = S over the square root of d sub k") for name in names["table"])
    assert not [name for name in names["heading"] + names["table"] if re.search(r"(^|: ) ?[.:,]", name)]
