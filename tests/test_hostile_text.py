"""What a teacher types reaches every output as text: never as markup, a cloze gap or a TeX
command; and a control character in it is refused in one line (exit 2), wherever it comes from.

Every student-facing file is read back as its reader reads it: the pages and the HTML inside
moodle.xml and qti.zip parsed as HTML, the XML parsed as XML, Moodle's question text through
Moodle's own cloze rules (``test_moodle.extract_question``), Markdown outside its code spans.
"""

import io
import json
import re
import xml.etree.ElementTree as ElementTree
import zipfile

import lxml.html
import pytest
from test_moodle import extract_question

from generator.cli import main
from generator.rendering.teacher_text import markdown_literal

# HTML, a cloze gap and a placeholder for Moodle, a TeX command, a Markdown link and code.
HOSTILE = ('"><img src=x onerror=alert(3)><script>alert(4)</script> {1:SHORTANSWER:=x} {#1} '
           r"\input{/etc/passwd} [a](javascript:alert(5)) `b` &lt;")
# A file name holds no '/': the spec file's problems take their ids from it.
HOSTILE_NAME = '"><img src=y onerror=alert(6)>{1:SHORTANSWER:=y}`c`'
HEADER = {"title": HOSTILE, "course": HOSTILE, "date": HOSTILE, "institution": HOSTILE,
          "instructions": HOSTILE}
SPEC = {"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 2]],
        "W_V": [[1, 0], [0, 1]]}


def roster(folder, *rows):
    path = folder / "roster.csv"
    path.write_text("id,name\n" + "".join(f'"{sid}","{name}"\n' for sid, name in rows),
                    encoding="utf-8", newline="")
    return path


@pytest.fixture(scope="module")
def from_the_command_line(tmp_path_factory):
    """Every header field from the command line, and a roster of hostile names and ids."""
    folder = tmp_path_factory.mktemp("hostile-options")
    students = roster(folder, ("s1<script>", '<img src=z onerror=alert(7)>{1:SHORTANSWER:=z}'),
                      ("s2", "Grace *Hopper* [x](javascript:alert(8))"))
    header = [word for name, text in HEADER.items() for word in (f"--{name}", text)]
    assert main(["--count", "2", "--seed", "3", "--format", "html,moodle,qti", *header,
                 "--students", str(students), "--out", str(folder / "out")]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def from_files(tmp_path_factory):
    """The header from --config, and a spec file with a hostile title and a hostile name."""
    folder = tmp_path_factory.mktemp("hostile-files")
    config = folder / "header.toml"
    config.write_text("".join(f"{name} = {json.dumps(text)}\n" for name, text in HEADER.items()),
                      encoding="utf-8")
    spec = folder / f"{HOSTILE_NAME}.json"
    spec.write_text(json.dumps({"problems": [{**SPEC, "title": HOSTILE}, SPEC]}), encoding="utf-8")
    assert main(["--spec", str(spec), "--config", str(config), "--format", "html,moodle,qti",
                 "--out", str(folder / "out")]) == 0
    return folder / "out"


RUNS = ["from_the_command_line", "from_files"]


def live_markup(root) -> list[str]:
    """Elements and attributes that a browser would run or load, in a parsed HTML or XML tree."""
    found = []
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""
        if tag in ("img", "iframe", "object", "embed") or (tag == "a" and "javascript:" in
                                                            element.get("href", "")):
            found.append(tag)
        found += [name for name in element.attrib if name.lower().startswith("on")]
    return found


def html_markup(text: str) -> list[str]:
    return live_markup(lxml.html.fromstring(f"<div>{text}</div>"))


def outside_code_spans(markdown: str) -> str:
    return re.sub(r"(?<![`\\])(`+)(?!`).+?(?<!`)\1(?!`)", "", markdown)


@pytest.mark.parametrize("run", RUNS)
def test_the_practice_pages_show_the_text_and_run_nothing_of_it(run, request):
    out = request.getfixturevalue(run)
    pages = sorted(out.glob("practice*.html")) + sorted(out.glob("practice/*.html"))
    assert pages
    for page in pages:
        tree = lxml.html.parse(str(page)).getroot()
        assert live_markup(tree) == []
        assert len(tree.findall(".//script")) == 2  # the answers' JSON and practice.js
        assert HOSTILE in tree.find(".//h1").text_content()
        assert HOSTILE in tree.find(".//header/p").text_content()  # course, date


SHAPE = re.compile(r"\(?\d+ ?(×|x|by|,) ?\d+\)?")


@pytest.mark.parametrize("run", RUNS)
def test_moodle_reads_no_gap_and_no_markup_from_the_text(run, request):
    root = ElementTree.parse(request.getfixturevalue(run) / "moodle.xml").getroot()
    assert live_markup(root) == []
    assert HOSTILE in root.findtext("question/category/text").replace("-", "/")
    htmls = list(root.iterfind("question/*[@format='html']/text"))  # a name is plain text
    assert htmls and all(html_markup(html.text) == [] for html in htmls)
    bodies = [q.findtext("questiontext/text") for q in root.iter("question") if q.get("type") == "cloze"]
    assert bodies
    for body in bodies:
        assert "{#" not in body  # Moodle would put gap 1's box there too
        for gap in extract_question(body):  # numbers, choices, and a shape's forms (2×3, 2 by 3)
            assert gap["type"] in ("numerical", "multichoice") or all(
                SHAPE.fullmatch(answer) for answer in gap["answers"]), gap


def test_a_spec_files_title_and_name_are_text_in_moodle(from_files):
    root = ElementTree.parse(from_files / "moodle.xml").getroot()
    names = [q.findtext("name/text") for q in root.iter("question") if q.get("type") == "cloze"]
    marks = json.loads((from_files / "problems.json").read_text())["problems"][0]["marks"]
    assert names[0] == f"{HOSTILE_NAME}-1 ({marks} marks): {HOSTILE}"  # the paper's marks
    ids = [lxml.html.fromstring(q.findtext("questiontext/text")).findtext(".//code")
           for q in root.iter("question") if q.get("type") == "cloze"]
    assert ids == [f"{HOSTILE_NAME}-1", f"{HOSTILE_NAME}-2"]  # shown as typed, braces and all


@pytest.mark.parametrize("run", RUNS)
def test_every_file_of_the_canvas_package_holds_the_text_as_text(run, request):
    package = zipfile.ZipFile(io.BytesIO((request.getfixturevalue(run) / "qti.zip").read_bytes()))
    for name in package.namelist():
        root = ElementTree.fromstring(package.read(name))
        assert live_markup(root) == [], name
        for html in root.iter("{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}mattext"):
            assert html_markup(html.text) == [], name
    manifest = ElementTree.fromstring(package.read("imsmanifest.xml"))
    assert [t.text for t in manifest.iter("{http://www.imsglobal.org/xsd/imsmd_v1p2}string")] == [HOSTILE]
    titles = [ElementTree.fromstring(package.read(name)).find(
        "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}assessment").get("title")
        for name in package.namelist() if name != "imsmanifest.xml"]
    assert titles and all(title.startswith(HOSTILE) for title in titles)


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("document", ["questions.md", "answers.md"])
def test_markdown_shows_the_text_as_typed(run, document, request):
    text = (request.getfixturevalue(run) / document).read_text(encoding="utf-8")
    words = outside_code_spans(text)  # the key's redraw command holds it as typed, as code
    assert HOSTILE not in words
    assert markdown_literal(HOSTILE) in text  # the title, escaped
    assert not re.search(r"(?<!\\)<(img|script|/script)", words)
    assert not re.search(r"(?<!\\)\[(a|x)\]\(javascript", words)


def test_markdown_names_and_ids_are_text(from_the_command_line, from_files):
    questions = outside_code_spans((from_the_command_line / "questions.md").read_text())
    assert r"**\<img src=z onerror=alert(7)>{1:SHORTANSWER:=z} (s1\<script>), version 1**" in questions
    assert r"Grace \*Hopper\* \[x\](javascript:alert(8))" in questions
    assert "Problem id ``" + HOSTILE_NAME + "-1``." in (from_files / "questions.md").read_text()


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("document", ["questions.tex", "answers.tex"])
def test_latex_prints_the_text_and_runs_no_command_of_it(run, document, request):
    text = (request.getfixturevalue(run) / document).read_text(encoding="utf-8")
    assert r"\input{/etc" not in text  # the template's own \input{glyphtounicode} is its code
    assert r"\textbackslash{}input\{/etc/passwd\}" in text


# -- what no format can hold is refused, in one line --------------------------------------------

def assert_refused(code, out, err, *expected):
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gen-problems: error: ")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", err)  # printable, itself
    assert any(words in err for words in expected), err


CONTROL = "control character"


@pytest.mark.parametrize("option, text, expected", [
    ("--title", "Quiz \x07 one", CONTROL),
    ("--title", "Midterm\nPart two", "line break"),
    ("--title", "Midterm\u2028Part two", "line break"),
    ("--course", "ML\x85 101", CONTROL),  # C1: XML 1.0 discourages it, LuaLaTeX stops on it
    ("--date", "\x1b[31m1 March", CONTROL),
    ("--institution", "Uni\x7f", CONTROL),
    ("--instructions", "Answer all\x0c", CONTROL),
])
def test_a_header_text_with_a_control_character_is_refused(tmp_path, run_cli, option, text, expected):
    assert_refused(*run_cli("--count", 1, option, text, "--out", tmp_path / "o"), expected)
    assert not (tmp_path / "o").exists()


def test_instructions_may_span_lines_and_a_title_may_hold_a_tab(tmp_path, run_cli):
    code, _, err = run_cli("--count", 1, "--instructions", "Answer all.\nShow working.",
                           "--title", "Quiz\tone", "--out", tmp_path / "o")
    assert code == 0, err
    assert "Answer all.\nShow working." in (tmp_path / "o" / "questions.md").read_text()


@pytest.mark.parametrize("config, expected", [
    ('title = "Quiz \\u0001"\n', CONTROL),
    ('course = """ML\n101"""\n', "line break"),
    ('[extra]\nroom = "B12\\u0007"\n', CONTROL),
    ('[extra]\n"room\\u0007" = "B12"\n', CONTROL),
])
def test_a_header_config_with_a_control_character_is_refused(tmp_path, run_cli, config, expected):
    path = tmp_path / "header.toml"
    path.write_text(config, encoding="utf-8")
    assert_refused(*run_cli("--count", 1, "--config", path, "--out", tmp_path / "o"), expected)


@pytest.mark.parametrize("title, expected", [("Worked \x01 example", CONTROL),
                                             ("Worked\u2029example", "line break"),
                                             ("Worked\ud800", "half a character")])
def test_a_spec_title_with_a_control_character_is_refused(tmp_path, run_cli, title, expected):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({**SPEC, "title": title}), encoding="utf-8")
    assert_refused(*run_cli("--spec", path, "--out", tmp_path / "o"), expected)


def test_a_spec_file_whose_name_holds_a_control_character_is_refused(tmp_path, run_cli):
    path = tmp_path / "week\x1b[31m3.json"  # its problems' ids are made from the name
    path.write_text(json.dumps(SPEC), encoding="utf-8")
    assert_refused(*run_cli("--spec", path, "--out", tmp_path / "o"), CONTROL)


@pytest.mark.parametrize("row", [("s1", "Ada\x01Lovelace"), ("s1", "Ada\x9bLovelace"),
                                 ("s1\x7f", "Ada Lovelace"), ("s1", "Ada\x00Lovelace")])
def test_a_roster_name_with_a_control_character_is_refused(tmp_path, run_cli, row):
    # LuaLaTeX stopped on these ("invalid character", exit 1) and XML cannot hold them
    students = roster(tmp_path, row, ("s2", "Grace Hopper"))
    assert_refused(*run_cli("--count", 1, "--students", students, "--out", tmp_path / "o"),
                   "roster.csv, line 2: the name of student s1 holds",
                   "roster.csv, line 2: the id of student Ada Lovelace holds")
    assert not (tmp_path / "o").exists()
