"""A pseudo-language for the coverage test: every message of the catalogue template with each
letter of its words turned into an accented one (Answer key -> Ånšwêr kêý), its maths, template
code and placeholders kept.  A document in it should hold no plain English word: one that is
there was printed without passing through the catalogue.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "locales" / "messages.pot"
TAG = "qps"  # a private-use-like tag no real catalogue takes

ACCENTED = str.maketrans("aceinorsuyzACEINORSUYZ", "àçêïñöŕšüýžÀÇÊÏÑÖŔŠÜÝŽ")
# what a message keeps as it is: maths, Jinja code, placeholders (%(n)s, {n}), markup, TeX and
# HTML commands, entities, and ALL-CAPS markers (GIVEN, SHOWN)
KEPT = re.compile(r"\$[^$]*\$|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|%\(\w+\)[sd]|%[sd]|\{\w*\}"
                  r"|<[^>]*>|\\[A-Za-z]+|&\w+;|\b[A-Z][A-Z_]+\b", re.DOTALL)


def pseudo(message: str) -> str:
    """The message with the letters of its words accented, the rest kept."""
    pieces, at = [], 0
    for match in KEPT.finditer(message):
        pieces.append(message[at:match.start()].translate(ACCENTED))
        pieces.append(match[0])
        at = match.end()
    pieces.append(message[at:].translate(ACCENTED))
    return "".join(pieces)


def write_pseudo_catalogue(folder: Path) -> Path:
    """``folder``/locales/qps.po: the template's messages in the pseudo-language."""
    with TEMPLATE.open("rb") as file:
        catalogue = read_po(file)
    for message in catalogue:
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            message.string = tuple(pseudo(m) for m in message.id)
        else:
            message.string = pseudo(message.id)
    path = folder / "locales" / f"{TAG}.po"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_po(file, catalogue)
    return path


# Words that are the same in every language: names of functions, models, products and the
# symbols the documents write in words.
UNTRANSLATED = {
    "softmax", "ReLU", "LayerNorm", "RoPE", "ALiBi", "FLOP", "FLOPs", "GELU", "Moodle", "Canvas",
    "argmax", "sqrt", "model", "inf", "infty", "exp", "gen", "problems", "seed", "json", "toml",
    "html", "https", "http", "www", "mathrm", "operatorname", "text", "left", "right", "frac",
    "MultiHead", "Attn", "rowsum", "diag",  # the maths' operator names, as the formulas write them
    "Attention", "size",  # Attention(Q, K, V) and size(...): functions the formulas name
}
# A symbol's subscript spoken in a formula's label ("P sub attn", "K šüb cache"): notation, as
# the formula writes it, in any language.
SUBSCRIPT_SAID = re.compile(r"\b(?:sub|šüb)\s+\w+")
ENGLISH_WORD = re.compile(r"(?<![\w\\&#])(?=[A-Za-z]*[a-z])[A-Za-z]{4,}(?![\w])")


def english_words(text: str) -> list[str]:
    """The plain English words (four ASCII letters or more) of a document's visible text."""
    return [word for word in ENGLISH_WORD.findall(SUBSCRIPT_SAID.sub(" ", text)) if word not in UNTRANSLATED
            and word.lower() not in UNTRANSLATED]


class VisibleText(HTMLParser):
    """The text a reader meets in HTML: text outside <script>, <style> and <math>, and the
    labels a screen reader says (aria-label, title, alt, placeholder)."""

    SAID = ("aria-label", "title", "alt", "placeholder")
    # not read as words: code (a command, an id) and a QTI item's reference to its question
    NOT_READ = ("script", "style", "math", "code", "qtimetadata")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.NOT_READ:
            self.hidden += 1
        if tag != "math":
            self.parts += [value or "" for name, value in attrs if name in self.SAID]

    def handle_endtag(self, tag):
        if tag in self.NOT_READ:
            self.hidden = max(0, self.hidden - 1)

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


# Not text: Moodle's placeholder for the course a category is imported into ($course$/top/...).
NOT_TEXT = re.compile(r"\$course\$")


def html_text(html: str) -> str:
    """The visible text of an HTML document or fragment."""
    parser = VisibleText()
    parser.feed(NOT_TEXT.sub(" ", html))
    return " ".join(parser.parts)


LATEX_NOISE = re.compile(r"(?<!\\)%[^\n]*|\\hypersetup[^\n]*|\$\$.*?\$\$|\$[^$]*\$|\\\[.*?\\\]"
                         r"|\\(begin|end)\{\w+\*?\}(\{[^{}]*\})?|\\[A-Za-z@]+\*?(\[[^\]]*\])?",
                         re.DOTALL)


# Layout, not words: a command's arguments that are lengths, counters or a log line
# (\adjustbox{max width=...}, \hspace{0.5em plus 1fill}, \typeout{...}), and code, which no
# language translates (\texttt{...}: a problem's id, the command that draws a set again).
LATEX_LAYOUT = re.compile(r"\\(typeout|setcounter|adjustbox|[hv]space\*?|[Nn]eedspace\*?|partspace"
                          r"|room|rule|makebox|texttt|def|pdfbookmark|[a-z]+tounicode|input)"
                          r"(\[[^\]]*\]|\{(?:[^{}]|\{[^{}]*\})*\})*")
CODE_SPAN = re.compile(r"`[^`\n]*`")


DISPLAYED = "\\fitline{"  # the templates' displayed maths: its argument is maths, braces and all


def without_displayed_maths(body: str) -> str:
    """The body without each ``\\fitline{...}`` (its braces matched)."""
    pieces, at = [], 0
    while (start := body.find(DISPLAYED, at)) >= 0:
        pieces.append(body[at:start])
        depth, end = 0, start + len(DISPLAYED) - 1
        while end < len(body):
            depth += {"{": 1, "}": -1}.get(body[end], 0) if body[end - 1] != "\\" else 0
            if depth == 0:
                break
            end += 1
        at = end + 1
    return "".join(pieces) + body[at:]


def latex_text(source: str) -> str:
    """The words of a LaTeX document's body: its maths, commands and comments taken out."""
    body = without_displayed_maths(source.split(r"\begin{document}", 1)[-1])
    return LATEX_NOISE.sub(" ", LATEX_LAYOUT.sub(" ", body))


def markdown_text(source: str) -> str:
    """The words of a Markdown document: its code spans (an id, a command) taken out."""
    return CODE_SPAN.sub(" ", source)
