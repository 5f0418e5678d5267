"""Gathers every sentence the documents print into templates/locales/messages.pot, and brings
each shipped catalogue (templates/locales/<tag>.po) up to date with it: a new sentence is
added untranslated, one no longer printed is dropped (Babel's update, as `pybabel update`).

    .venv/bin/python scripts/make_catalogue.py          # write the template and update the .po files
    .venv/bin/python scripts/make_catalogue.py --check  # exit 1 if messages.pot is out of date

The sentences come from
- the templates: ``_("...")`` and ``{% trans %}`` (Babel's Jinja extractor, with the LaTeX
  templates' delimiters);
- the code: ``_("...")`` and ``N_("...")`` (Babel's Python extractor);
- the practice page's script: ``t("...")`` (Babel's JavaScript extractor), in the context
  ``page``, so that the page is given just those;
- each question type's and step's prose (a small template whose whole source is the message:
  a step's prompt and its formula, the heading of its working).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract, extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.kinds import TYPES  # noqa: E402
from generator.maths import ops, steps  # noqa: E402
from generator.rendering.language import PAGE  # noqa: E402
from generator.rendering.render import DEFAULT_PROMPT  # noqa: E402
from generator.running.plugins import load_plugins  # noqa: E402

LOCALES = ROOT / "templates" / "locales"
TEMPLATE = LOCALES / "messages.pot"
LATEX_DELIMITERS = {"block_start_string": "<%", "block_end_string": "%>",
                    "variable_start_string": "<<", "variable_end_string": ">>",
                    "comment_start_string": "<#", "comment_end_string": "#>",
                    "trim_blocks": "true", "lstrip_blocks": "true"}
JINJA = "jinja2.ext:babel_extract"
KEYWORDS = {"_": None, "N_": None, "gettext": None, "ngettext": (1, 2), "t": None,
            "tn": (1, 2)}


def template_messages():
    """(message, where) of the templates, the code and the page's script."""
    method_map = [("latex/**.j2", JINJA), ("**.j2", JINJA), ("**.js", "javascript")]
    options = {"latex/**.j2": LATEX_DELIMITERS, "**.j2": {"trim_blocks": "true",
                                                         "lstrip_blocks": "true"}}
    for path, line, message, _comments, _context in extract_from_dir(
            ROOT / "templates", method_map, options, KEYWORDS, strip_comment_tags=True):
        yield message, f"templates/{path}:{line}", PAGE if path.endswith(".js") else None
    for path in sorted((ROOT / "generator").rglob("*.py")):
        with path.open("rb") as file:
            for line, message, _comments, _context in extract("python", file, KEYWORDS):
                yield message, f"{path.relative_to(ROOT)}:{line}", None


def prose_messages():
    """(message, where) of every question type's and step's prose: its source is the message."""
    load_plugins()
    for name, kind in TYPES.items():
        pieces = [kind.title, *kind.statement, kind.choice, *kind.prompts.values(),
                  *kind.keys.values(), *kind.after.values()]
        for piece in pieces:
            if worded(piece):
                yield piece, f"generator/kinds/{name}", None
    for name, step in steps.REGISTRY.items():
        for piece in (step.prompt, step.formula):  # a grid's caption is its step's formula
            if piece and worded(piece):
                yield piece, f"generator/maths/steps/{name}", None
    for name, op in ops.registered().items():  # the page's hints: how to start a step of the op
        if op.hint is not None and worded(op.hint.how):
            yield op.hint.how, f"generator/maths/ops/{name}", None
    yield DEFAULT_PROMPT, "generator/rendering/render.py", None


def worded(prose: str) -> bool:
    """Whether prose holds words to translate (not just maths or a placeholder such as GIVEN)."""
    text = "".join(ch for ch in strip_markup(prose) if ch.isalpha())
    marker = prose.startswith("@") and prose[1:].isalpha()  # @given, @shown: where matrices go
    return len(text) > 1 and not prose.isupper() and not marker


def strip_markup(prose: str) -> str:
    """Prose without its maths ($...$) and its template code ({{ }}, {% %})."""
    import re
    return re.sub(r"\$[^$]*\$|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", " ", prose, flags=re.DOTALL)


def gathered() -> Catalog:
    """The template catalogue: every message, with where it is printed."""
    catalogue = Catalog(project="gen-problems", fuzzy=False, header_comment=(
        "# Every sentence gen-problems prints; made by scripts/make_catalogue.py.\n"
        "# A language is a copy of this file as <tag>.po with each msgstr filled in."))
    for message, where, context in [*template_messages(), *prose_messages()]:
        if not message:
            continue
        path, _, line = where.partition(":")
        catalogue.add(message, locations=[(path, int(line) if line.isdigit() else None)],
                      context=context)
    return catalogue


def written(catalogue: Catalog) -> bytes:
    """A catalogue as .po text, without the lines that change on every run (dates)."""
    buffer = io.BytesIO()
    write_po(buffer, catalogue, omit_header=False, sort_output=True, width=100,
             include_lineno=False)
    return b"\n".join(line for line in buffer.getvalue().split(b"\n")
                      if not line.startswith((b'"POT-Creation-Date', b'"PO-Revision-Date')))


def update_languages(template: Catalog) -> None:
    """Each shipped catalogue with the template's messages: new ones untranslated, gone ones
    dropped, the translations kept."""
    for path in sorted(LOCALES.glob("*.po")):
        with path.open("rb") as file:
            catalogue = read_po(file, locale=None)
        catalogue.update(template, no_fuzzy_matching=True)
        catalogue.obsolete.clear()
        path.write_bytes(written(catalogue))


def main(argv: list[str]) -> int:
    template = gathered()
    text = written(template)
    if "--check" in argv:
        if not TEMPLATE.exists() or TEMPLATE.read_bytes() != text:
            print("templates/locales/messages.pot is out of date: run scripts/make_catalogue.py",
                  file=sys.stderr)
            return 1
        return 0
    LOCALES.mkdir(parents=True, exist_ok=True)
    TEMPLATE.write_bytes(text)
    update_languages(template)
    print(f"{len(template)} messages in {TEMPLATE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
