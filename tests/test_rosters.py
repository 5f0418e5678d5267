"""Rosters as schools export them, and names in every script printed and found in the PDFs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from conftest import folder_files

from generator.maths.spec import SpecError
from generator.pdf.build import UNICODE_PACKAGES
from generator.pdf.typesetting import PDFLATEX_RANGES, typeset_with_pdflatex, typesetting_for
from generator.running.roster import load_roster

ROSTERS = Path(__file__).resolve().parent / "rosters"
ROOT = ROSTERS.parent.parent


@pytest.mark.parametrize("name, expected", [
    ("plain.csv", [("s001", "Ada Lovelace"), ("s002", "Smith & Jones, Sam")]),
    ("excel-utf8-bom-crlf.csv", [("s001", "Zoë Ångström"), ("s002", "Lovelace, Ada")]),
    ("excel-semicolon.csv", [("1001", "Müller, Jürgen"), ("1002", "Émilie Rousseau")]),
    ("excel-cp1252.csv", [("2001", "François Lefèvre"), ("2002", "José Núñez – €")]),
    ("moodle-participants.csv", [("s001", "Ada Lovelace"), ("s002", "Alan Turing")]),
    ("moodle-no-id-number.csv", [("ada@uni.example", "Ada Lovelace"),
                                 ("alan@uni.example", "Alan Turing")]),
    ("moodle-german.csv", [("4711", "Jürgen Müller")]),
    ("canvas-gradebook.csv", [("s001", "Lovelace, Ada"), ("s002", "Turing, Alan")]),
])
def test_rosters_as_exported(name, expected):
    roster = load_roster(ROSTERS / name)
    assert [(s.id, s.name) for s in roster.students] == expected


def test_a_roster_that_is_not_utf8_says_which_encoding_was_assumed():
    assert load_roster(ROSTERS / "plain.csv").notes == []
    [note] = load_roster(ROSTERS / "excel-cp1252.csv").notes
    assert "excel-cp1252.csv is not UTF-8: read it as Windows-1252 (cp1252)" in note


@pytest.mark.parametrize("name, expected", [
    ("no-usable-columns.csv", "no column for the students' ids (found 'Klasse', 'Note'; "
                              "expected id and name, or a Moodle or Canvas export's columns)"),
    ("duplicate-ids.csv", "student id 's1' is on line 2 and on line 4"),
])
def test_rosters_that_cannot_be_used_say_why_in_one_line(name, expected):
    with pytest.raises(SpecError, match=expected.replace("(", r"\(").replace(")", r"\)")) as error:
        load_roster(ROSTERS / name)
    assert "\n" not in str(error.value)


def test_the_teachers_link_from_paper_to_student_is_in_problems_json(tmp_path, run_cli):
    out = tmp_path / "out"
    assert run_cli("--count", 1, "--students", ROSTERS / "canvas-gradebook.csv", "--versions", 2,
                   "--out", out)[0] == 0
    papers = json.loads((out / "problems.json").read_text())["papers"]
    assert [(p["student_id"], p["name"], p["version"]) for p in papers] == [
        ("s001", "Lovelace, Ada", 1), ("s002", "Turing, Alan", 2)]


# -- which engine ---------------------------------------------------------------------------

def test_ascii_and_western_european_text_stays_on_pdflatex():
    assert typesetting_for("Zoë Ångström, Dvořák Łukasz, Smith & Jones – 20 €").engine == "pdflatex"
    for text in ("Σ", "Анна", "王", "محمد", "अ", "😀", "Nguyễn"):
        assert typesetting_for(text).engine == "lualatex", text


@pytest.mark.tex
def test_every_character_pdflatex_is_trusted_with_compiles_there(tmp_path):
    """The pdflatex set is TeX Live's own T1/TS1 list: prove it by typesetting all of it."""
    characters = "".join(chr(code) for low, high in PDFLATEX_RANGES for code in range(low, high + 1)
                         if chr(code).isprintable() and chr(code) not in "\\{}$&#^_%~")
    assert all(typeset_with_pdflatex(c) for c in characters)
    (tmp_path / "all.tex").write_text(
        "\\documentclass{article}\\usepackage[T1]{fontenc}\\usepackage{lmodern}\n"
        "\\begin{document}\n" + characters + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"],
                          cwd=tmp_path, capture_output=True, text=True, errors="replace")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Missing character" not in (tmp_path / "all.log").read_text(errors="replace")


def test_setup_installs_what_the_tool_asks_for():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert f'UNICODE_TEX_PACKAGES="{UNICODE_PACKAGES}"' in setup


# -- a real international class ---------------------------------------------------------------

TITLE = "Übung 3 — Aufmerksamkeit (Σ, ½)"


def pdf_text(path: Path) -> str:
    text = subprocess.run(["pdftotext", path, "-"], capture_output=True, text=True, check=True).stdout
    return unicodedata.normalize("NFC", " ".join(text.split()))


@pytest.fixture(scope="module")
def international_class(tmp_path_factory):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is installed by scripts/test.sh")
    out = tmp_path_factory.mktemp("intl") / "out"
    done = subprocess.run([Path(sys.executable).with_name("gen-problems"), "--count", "2", "--students",
                           ROSTERS / "international.csv", "--pdf", "--title", TITLE, "--out", out],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


# The roster's scripts: Latin with diacritics, Vietnamese, Greek, Cyrillic, Chinese, Japanese
# (kana), Korean, Arabic (a lam-alef ligature), Devanagari, Hebrew and Thai; and an emoji.
SCRIPTS = 11
# pdftotext marks a right-to-left run in a left-to-right line with U+202B ... U+202C around it.
RTL_EMBEDDING = ("\u202b", "\u202c")


def name_line(pdf: Path) -> str:
    """The line of a paper's text that names its student, as pdftotext gives it (not normalized)."""
    text = subprocess.run(["pdftotext", pdf, "-"], capture_output=True, text=True, check=True).stdout
    return next(line for line in text.splitlines() if line.startswith("Name:"))


def printed_name(name: str) -> str:
    """The name as written (NFC), in the embedding marks pdftotext puts round a right-to-left one."""
    name = unicodedata.normalize("NFC", name)
    return name.join(RTL_EMBEDDING) if unicodedata.bidirectional(name[0]) in ("R", "AL") else name


@pytest.mark.tex
def test_every_name_is_found_as_written_in_the_combined_pdf_and_in_its_own_paper(international_class):
    out, _ = international_class
    whole = pdf_text(out / "questions.pdf")
    students = load_roster(ROSTERS / "international.csv").students
    papers = sorted((out / "papers").iterdir())
    assert len(papers) == len(students) == 14
    scripts = {unicodedata.name(c).split()[0] for s in students for c in s.name if c.isalpha()}
    assert {"ARABIC", "HEBREW", "THAI", "HIRAGANA", "HANGUL", "DEVANAGARI"} <= scripts
    for student, paper in zip(students, papers):
        name = unicodedata.normalize("NFC", student.name)
        assert name in whole, name
        assert name_line(paper) == f"Name: {printed_name(name)}", name
        assert TITLE in pdf_text(paper)


def outline(pdf) -> list[tuple[str, list[str]]]:
    """The PDF's bookmarks: each top entry's title and its entries' titles."""
    with pdf.open_outline() as tree:
        return [(str(item.title), [str(child.title) for child in item.children]) for item in tree.root]


def check_described(pdf_path: Path, title: str, problems: int, papers: int = 1) -> None:
    """A PDF of ``papers`` papers of ``problems`` problems each carries its language, its title,
    an outline of its problems (under one entry per paper, where it has several) and a Unicode
    name for every glyph of every font."""
    pikepdf = pytest.importorskip("pikepdf")
    with pikepdf.open(pdf_path) as pdf:
        assert str(pdf.Root.Lang) == "en", pdf_path
        assert str(pdf.docinfo.Title) == title, pdf_path
        assert bool(pdf.Root.ViewerPreferences.DisplayDocTitle)
        entries = outline(pdf)
    problem_titles = lambda titles: [t.split(":")[0] for t in titles]  # noqa: E731
    expected = [f"Problem {n}" for n in range(1, problems + 1)]
    if papers == 1:
        assert problem_titles(entry for entry, _ in entries) == expected, pdf_path
    else:
        assert len(entries) == papers and all(problem_titles(under) == expected
                                              for _, under in entries), pdf_path
    fonts = subprocess.run(["pdffonts", pdf_path], capture_output=True, text=True,
                           check=True).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-3] == "yes" for line in fonts), (pdf_path, fonts)
    assert unmapped_glyphs(pdf_path) == {}, pdf_path


def unmapped_glyphs(pdf_path: Path) -> dict[str, list]:
    """Each Type 1 font's glyphs that the pages show but its /ToUnicode does not map (TeX's
    maths fonts: a sum sign would copy out as nothing)."""
    import pikepdf

    from generator.pdf import pdfcut

    missing = {}
    with pikepdf.open(pdf_path) as pdf:
        for font, glyphs in pdfcut.glyphs_shown(pdf).values():
            codes = {code for code, name in (pdfcut._encoding_of(font) or {}).items()
                     if name in (glyphs or ())}
            unmapped = sorted(codes - mapped_codes(font.get("/ToUnicode")))
            if unmapped:
                missing[str(font.BaseFont)] = unmapped
    return missing


def mapped_codes(cmap) -> set[int]:
    """The character codes a /ToUnicode CMap maps (its bfchar and bfrange entries)."""
    if cmap is None:
        return set()
    text = bytes(cmap.read_bytes()).decode("latin-1")
    codes = set()
    for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
        codes.update(int(code, 16) for code in re.findall(r"<([0-9A-Fa-f]+)>\s*<[0-9A-Fa-f]*>", block))
    for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
        for low, high in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*[<[]", block):
            codes.update(range(int(low, 16), int(high, 16) + 1))
    return codes


@pytest.mark.tex
def test_every_lualatex_pdf_has_its_language_title_outline_and_unicode_fonts(international_class):
    out, _ = international_class
    students = len(load_roster(ROSTERS / "international.csv").students)
    check_described(out / "questions.pdf", f"{TITLE} — Questions", 2, papers=students)
    keys = len(list((out / "keys").iterdir()))  # one per version
    check_described(out / "answers.pdf", f"{TITLE} — Answer key", 2, papers=keys)
    for paper in sorted((out / "papers").iterdir()) + sorted((out / "keys").iterdir()):
        name = "Questions" if paper.parent.name == "papers" else "Answer key"
        check_described(paper, f"{TITLE} — {name}", 2)


@pytest.mark.tex
def test_a_pdflatex_class_too_and_an_apostrophe_copies_back_straight(tmp_path, run_cli):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is installed by scripts/test.sh")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\na1,Seán O'Brien\nb2,Zoë \"Zo\" Ångström\n", encoding="utf-8")
    title = "Quiz: it's on -- A&B, 50% \"#1\" <<a>> ~^"  # as typed, in the PDF's title too
    code, _, err = run_cli("--count", 2, "--students", roster, "--pdf", "--title", title,
                           "--out", tmp_path / "o")
    assert code == 0, err
    out = tmp_path / "o"
    assert (out / "questions.tex").read_text().startswith("\\documentclass")  # pdflatex
    check_described(out / "questions.pdf", f"{title} — Questions", 2, papers=2)
    check_described(out / "answers.pdf", f"{title} — Answer key", 2,
                    papers=len(list((out / "keys").iterdir())))
    papers = sorted((out / "papers").iterdir())
    for paper, name in zip(papers, ["Seán O'Brien", 'Zoë "Zo" Ångström']):
        check_described(paper, f"{title} — Questions", 2)
        assert name_line(paper) == f"Name: {name}"
        assert pdf_text(paper).startswith(title), pdf_text(paper)[:80]


@pytest.mark.tex
def test_the_international_documents_use_lualatex_and_the_key_keeps_its_title(international_class):
    out, err = international_class
    assert (out / "questions.tex").read_text().startswith("% !TEX program = lualatex\n")
    assert (out / "answers.tex").read_text().startswith("% !TEX program = lualatex\n")  # the Σ
    assert TITLE in pdf_text(out / "answers.pdf")
    assert "no installed font" not in err


@pytest.mark.tex
def test_the_same_seed_gives_the_same_lualatex_pdfs_in_another_folder(tmp_path, run_cli):
    """LuaTeX makes a PDF's /ID from the folder it runs in (each run's own work folder): the
    documents name their identifier, a digest of their text, so the bytes stay the same."""
    if shutil.which("lualatex") is None:
        pytest.skip("LuaLaTeX is installed by scripts/setup.sh")

    def files(out: Path) -> dict[str, bytes]:
        code, _, err = run_cli("--count", 1, "--seed", 3, "--students", ROSTERS / "international.csv",
                               "--pdf", "--title", TITLE, "--out", out)
        assert code == 0, err
        return {name: data for name, data in folder_files(out).items()
                if not name.startswith(".gen-problems")}

    first, second = files(tmp_path / "one"), files(tmp_path / "two")
    assert first["answers.tex"].startswith(b"% !TEX program = lualatex")
    assert first == second


def test_lualatex_fonts_below_text_sizes_take_no_fallbacks_unless_the_language_needs_them(
        tmp_path, run_cli):
    """Each size of a font with fallbacks loads them at that size (a Noto CJK font: some 45 MB
    of LuaTeX's memory each time): an English class of Chinese names has them at text sizes
    only; a Chinese document, whose own words stand in maths' small sizes too, at every size.
    Either way Lua's garbage is collected as the pages go (issue 37)."""
    for lang, below_text_sizes in (("en", False), ("zh-Hans", True)):
        out = tmp_path / lang
        code, _, err = run_cli("--count", 1, "--students", ROSTERS / "international.csv",
                               "--lang", lang, "--out", out)
        assert code == 0, err
        source = (out / "questions.tex").read_text(encoding="utf-8")
        assert source.startswith("% !TEX program = lualatex")
        assert ("genproblems.fallback_sizes" not in source) == below_text_sizes
        assert "\\AddToHook{shipout/after}{\\directlua{genproblems_collect()}}" in source


def many_names(count: int) -> str:
    """A roster of ``count`` students named in every script of the international roster, in turn."""
    names = [student.name for student in load_roster(ROSTERS / "international.csv").students]
    return "id,name\n" + "".join(f"n{i:03d},{names[i % len(names)]}\n" for i in range(count))


@pytest.mark.tex
@pytest.mark.slow
def test_a_large_international_class_prints_every_name_the_same_in_another_folder(tmp_path):
    """A class large enough that LuaTeX's Lua collects its garbage several times over (a
    collection each 32 MB, some 20 papers) and loads its fallback fonts at text sizes only:
    every paper still names its student exactly, no character lacks a font, and the same seed
    gives the same bytes in another folder."""
    if shutil.which("pdftotext") is None or shutil.which("lualatex") is None:
        pytest.skip("LuaLaTeX and pdftotext are installed by scripts/setup.sh and scripts/test.sh")
    roster = tmp_path / "class.csv"
    roster.write_text(many_names(40), encoding="utf-8")

    def papers(out: Path) -> dict[str, bytes]:
        done = subprocess.run([Path(sys.executable).with_name("gen-problems"), "--count", "1",
                               "--seed", "5", "--students", roster, "--pdf",
                               "--out", out], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "no installed font" not in done.stderr
        return {path.name: path.read_bytes() for path in sorted((out / "papers").iterdir())}

    first = papers(tmp_path / "one")
    students = load_roster(roster).students
    assert len(first) == len(students) == 40
    for (name, _), student in zip(sorted(first.items()), students):
        assert name_line(tmp_path / "one" / "papers" / name) == f"Name: {printed_name(student.name)}"
    assert papers(tmp_path / "two") == first
    assert (tmp_path / "one" / "questions.pdf").read_bytes() == (tmp_path / "two" / "questions.pdf").read_bytes()


def test_a_latin_class_stays_on_pdflatex(tmp_path, run_cli):
    assert run_cli("--count", 1, "--students", ROSTERS / "excel-cp1252.csv", "--out", tmp_path)[0] == 0
    assert (tmp_path / "questions.tex").read_text().startswith("\\documentclass")


@pytest.mark.tex
def test_a_character_no_font_has_is_named_with_its_student(tmp_path, run_cli):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\na1,Ann\nb2,Bob \U0001E290 Toto\n")  # Unicode 14's Toto script
    code, _, err = run_cli("--count", 1, "--students", roster, "--pdf", "--out", tmp_path / "o")
    assert code == 0, err
    assert "no installed font has" in err and "U+1E290" in err and "paper 2 (Bob" in err
    assert len(list((tmp_path / "o" / "papers").iterdir())) == 2  # every paper is still written


@pytest.mark.tex
def test_a_spec_title_in_another_script_is_typeset_too(tmp_path, run_cli):
    spec = tmp_path / "mine.toml"
    spec.write_text('title = "Внимание: задача 1 (注意力)"\nX = [[1, 0], [0, 1]]\n'
                    'W_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 2]]\nW_V = [[1, 0], [0, 1]]\n')
    assert run_cli("--spec", spec, "--pdf", "--out", tmp_path / "o")[0] == 0
    assert (tmp_path / "o" / "answers.tex").read_text().startswith("% !TEX program = lualatex\n")
    if shutil.which("pdftotext"):
        assert "Внимание: задача 1 (注意力)" in pdf_text(tmp_path / "o" / "answers.pdf")
