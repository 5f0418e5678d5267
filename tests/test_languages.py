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
        if found is None or not found.string or found.fuzzy:
            missing.append(message.id)
            continue
        for pattern in (JINJA_CODE, PLACEHOLDER):
            if sorted(pattern.findall(message.id)) != sorted(pattern.findall(found.string)):
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
    return text


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
