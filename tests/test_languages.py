"""Languages (--lang): the catalogues are complete and current, every sentence of every format
passes through them (a pseudo-language shows any that does not), and numbers take the
language's decimal mark on paper while every answer box takes both marks."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from generator.cli import main
from generator.kinds import BUILT_IN
from tests.pseudo_language import (
    ROOT,
    TAG,
    english_words,
    html_text,
    latex_text,
    markdown_text,
    write_pseudo_catalogue,
)

LOCALES = ROOT / "templates" / "locales"
SHIPPED = ("de", "fr", "es", "zh-Hans")


def catalogue(path: Path):
    with path.open("rb") as file:
        return read_po(file)


def test_the_catalogue_template_holds_every_sentence_printed():
    done = subprocess.run([sys.executable, ROOT / "scripts" / "make_catalogue.py", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


JINJA_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
MATHS = re.compile(r"\$[^$]*\$")
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")


@pytest.mark.parametrize("tag", SHIPPED)
def test_every_shipped_language_translates_every_message_keeping_its_code(tag):
    template = catalogue(LOCALES / "messages.pot")
    translated = catalogue(LOCALES / f"{tag}.po")
    missing, broken = [], []
    for message in template:
        if not message.id:
            continue
        found = translated.get(message.id, context=message.context)
        forms = found.string if found and isinstance(found.string, tuple) else (found and found.string,)
        if found is None or not all(forms) or found.fuzzy:
            missing.append(message.id)
            continue
        english = message.id[-1] if isinstance(message.id, tuple) else message.id  # the plural's
        for pattern in (JINJA_CODE, PLACEHOLDER):
            code = sorted(pattern.findall(english))
            if any(sorted(pattern.findall(form)) != code for form in forms if "%(" in english
                   or pattern is JINJA_CODE):
                broken.append((message.id, found.string))
    assert not missing, f"{len(missing)} of {len(template)} untranslated in {tag}.po: {missing[:5]}"
    assert not broken, f"{tag}.po changes a message's code or placeholders: {broken[:3]}"


@pytest.fixture(scope="module")
def pseudo_set(tmp_path_factory):
    """A set of every type in every format, in the pseudo-language."""
    folder = tmp_path_factory.mktemp("pseudo")
    write_pseudo_catalogue(folder / "templates")
    out = folder / "out"
    code = main([str(a) for a in ("--types", ",".join(BUILT_IN), "--seed", 5, "--lang", TAG,
                                  "--templates", folder / "templates",
                                  "--format", "md,html,moodle,qti", "--out", out)])
    assert code == 0
    with zipfile.ZipFile(out / "qti.zip") as package:  # the Canvas package's files, read as they are
        package.extractall(out / "qti")
    return out


def visible_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".tex":
        return latex_text(text)
    if path.suffix in (".html", ".xml"):
        import html
        return html_text(html.unescape(text) if path.suffix == ".xml" else text)
    return markdown_text(text)


def test_no_english_is_left_in_a_document_in_another_language(pseudo_set):
    """Every sentence is a catalogue's: a document in the pseudo-language has no English word."""
    left = {}
    for path in sorted(pseudo_set.rglob("*")):
        if path.suffix not in (".tex", ".md", ".html", ".xml") or path.name == "imsmanifest.xml":
            continue
        words = english_words(visible_text(path))
        if words:
            left[path.relative_to(pseudo_set).as_posix()] = sorted(set(words))[:40]
    assert not left, "English left untranslated: " + "; ".join(f"{k}: {' '.join(v)}"
                                                             for k, v in left.items())


def test_an_unknown_language_is_one_line_and_exit_2(tmp_path, run_cli):
    code, _, err = run_cli("--count", 1, "--lang", "xx", "--out", tmp_path / "o")
    assert code == 2
    assert err.count("\n") == 1 and "locales/xx.po" in err and "de" in err
    assert not (tmp_path / "o").exists()


def test_a_teachers_catalogue_adds_a_language_with_its_own_decimal_mark(tmp_path, run_cli):
    """Italian is no shipped language: one catalogue in a template folder adds it, and the CLDR
    gives its decimal comma."""
    folder = tmp_path / "mine" / "locales"
    folder.mkdir(parents=True)
    (folder / "it.po").write_text('msgid ""\nmsgstr ""\n"Language: it\\n"\n'
                                  '"Content-Type: text/plain; charset=UTF-8\\n"\n', encoding="utf-8")
    code, _, err = run_cli("--count", 1, "--seed", 3, "--lang", "it", "--templates", tmp_path / "mine",
                           "--format", "md", "--out", tmp_path / "o")
    assert code == 0, err
    assert "is ignored" not in err
    key = (tmp_path / "o" / "answers.md").read_text(encoding="utf-8")
    assert re.search(r"\d,\d{4}", key) and not re.search(r"≈ -?\d+\.\d", key)


DECIMAL = re.compile(r"(?<![\w.,])-?\d+[.,]\d+(?![\w])")


@pytest.mark.parametrize("tag, mark", [("de", ","), ("fr", ","), ("es", ","), ("zh-Hans", "."),
                                       ("en", ".")])
def test_numbers_on_paper_take_the_languages_decimal_mark(tmp_path, run_cli, tag, mark):
    code, _, err = run_cli("--count", 2, "--seed", 3, "--lang", tag, "--format", "md",
                           "--out", tmp_path / "o")
    assert code == 0, err
    key = (tmp_path / "o" / "answers.md").read_text(encoding="utf-8")
    working = "\n".join(line for line in key.splitlines() if "≈" in line and line.startswith("-"))
    numbers = DECIMAL.findall(working)
    assert numbers and all(mark in n for n in numbers), numbers[:10]
    # an entry of the working, S̃[1,2], is S̃[1;2] where "1,2" would read as a number
    separators = {m[1] for m in re.finditer(r"^- \S+\[\d+([,;])\d+\]", key, re.M)}
    assert separators == ({";"} if mark == "," else {","})
    latex = (tmp_path / "o" / "answers.tex").read_text(encoding="utf-8")
    assert ('\\mathcode`\\.="013B' in latex) == (mark == ",")


@pytest.mark.tex
def test_a_german_key_prints_decimal_commas(tmp_path, run_cli):
    import shutil
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is installed by scripts/test.sh")
    code, _, err = run_cli("--count", 1, "--seed", 3, "--lang", "de", "--pdf", "--out", tmp_path / "o")
    assert code == 0, err
    text = subprocess.run(["pdftotext", tmp_path / "o" / "answers.pdf", "-"], capture_output=True,
                          text=True, check=True).stdout
    assert re.search(r"0,\d{4}", text) and not re.search(r"\b0\.\d{4}", text)


def test_a_problem_set_again_prints_in_its_papers_language(tmp_path, run_cli):
    """The record keeps the language: the marker's key, printed again, is the paper's."""
    assert run_cli("--count", 2, "--seed", 3, "--lang", "de", "--out", tmp_path / "exam")[0] == 0
    record = tmp_path / "exam" / "problems.json"
    code, _, err = run_cli("--record", record, "--format", "md", "--out", tmp_path / "again")
    assert code == 0, err
    key = (tmp_path / "again" / "answers.md").read_text(encoding="utf-8")
    assert re.search(r"≈ \[?0,\d{4}", key), key[:400]
    code, _, err = run_cli("--record", record, "--lang", "en", "--format", "md", "--out", tmp_path / "en")
    assert code == 0, err
    assert re.search(r"≈ \[?0\.\d{4}", (tmp_path / "en" / "answers.md").read_text(encoding="utf-8"))
