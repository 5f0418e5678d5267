"""Stage 3, the answer key as one accessible web page: answers.html, beside practice.html.

The page is the key of every version, read by a screen reader or at 400 % zoom: headings
per problem and part, MathML for every formula, each matrix a table with row and column
headers, and no script.  Its layout is templates/html/answers.html.j2 (a teacher's
--templates folder may replace it or any template it includes).

A step's working is the LaTeX key's own (its ``steps/`` template, the same step data):
each line of it is text with maths between $...$, which is prose, printed here as the
page prints prose (``prose.HtmlPrinter``: the words escaped, the maths as MathML).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import jinja2

from generator.formats.web import web_environment
from generator.rendering import formatting as fmt
from generator.rendering.language import ENGLISH, Language, language_of
from generator.rendering.paper import DocumentInfo, Paper
from generator.rendering.prose import HtmlPrinter, Math, hidden_mathml, relation_breaks, spoken
from generator.rendering.render import latex_environment, rendered_pieces
from generator.rendering.sinks import IN_MEMORY, Sink

ANSWERS = "answers.html"

# A step's working as the LaTeX key draws it, and the note under it (each the first found).
STEP_WORKING = ('<% include ["latex/steps/" ~ step.name ~ ".tex.j2", "latex/steps/" ~ step.kind'
                ' ~ ".tex.j2", working_template(step.kind, "latex")] %>')
STEP_NOTE = '<% include "latex/notes/" ~ step.kind ~ ".tex.j2" ignore missing %>'
WORKING = re.compile(r"\\begin\{working\}(.*?)\\end\{working\}", re.DOTALL)
LINE_BREAK = re.compile(r"\\par\b|\\newline\b|\\\\|\\q?quad\b")
MATHS = re.compile(r"(\$[^$]*\$)")
# TeX's text-mode spacing and escapes, as the characters they print
TEXT_MARKS = ((re.compile(r"\\(?:emph|textbf|textit)\{([^{}]*)\}"), r"**\1**"),
              (re.compile(r"\\(?:small|footnotesize|nobreak|allowbreak|noindent)\b\s*"), ""),
              (re.compile(r"\\[,;]"), "\u2009"),
              (re.compile(r"\\textasciicircum\{\}"), "^"), (re.compile(r"\\textasciitilde\{\}"), "~"),
              (re.compile(r"\\textbackslash\{\}"), "\\\\"), (re.compile(r"~"), "\u00a0"),
              (re.compile(r"(?<!\\)[{}]"), ""), (re.compile(r"\\([&%$#_{}])"), r"\1"),
              (re.compile(r"--"), "–"), (re.compile(r"[ \t\r\n]+"), " "))  # a ~ stays no-break
MATHS_MARKS = re.compile(r"\\(?:allowbreak|nobreak)\b\s*|\\[bB]ig[lr]?\b")


def render_answers(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None,
                   sink: Sink = IN_MEMORY) -> dict:
    """answers.html: every version's key in one page, written into ``sink`` as it is rendered."""
    language = language_of(info.language, user_templates)
    environment = key_environment(info.decimals, user_templates, language)
    template = environment.get_template("html/answers.html.j2")
    return {ANSWERS: sink.text(ANSWERS, rendered_pieces(template, papers=keys, info=info))}


def key_environment(decimals: int, user_templates: Path | None,
                    language: Language = ENGLISH) -> jinja2.Environment:
    """The practice page's environment, and ``worked(step, step_mark)``: a step's working lines and
    its notes, each a line of HTML, in the language."""
    environment = web_environment(decimals, user_templates, "html", language)
    latex = latex_environment(decimals, user_templates, language=language)
    working, note = latex.from_string(STEP_WORKING), latex.from_string(STEP_NOTE)
    printer = KEY_PRINTER.with_decimal(language.decimal).with_words(language.gettext)

    @jinja2.pass_context
    def worked(context, step, step_mark=None) -> dict:
        values = {key: context.get(key) for key in ("problem", "question", "spec", "part", "info",
                                                    "kind")}
        values.update(step=step, step_mark=step_mark, first_step=True)
        notes = note.render(values) if values["part"].notes else ""
        return {"lines": working_lines(working.render(values), printer),
                "notes": tex_lines(notes, printer)}

    environment.globals["worked"] = worked
    environment.filters["entries"] = lambda step, spec=None: [
        [language.number(entry) for entry in row] for row in entries(step, decimals, spec)]
    return environment


def entries(step, decimals: int, spec=None) -> list[list[str]]:
    """A matrix's entries as the key writes them, with a minus sign (−0.5, −∞); a given entry the
    teacher wrote as a fraction (``spec.fractions``) as that fraction."""
    fractions = spec.fractions if spec is not None else ()
    return [[(str(n.exact) if (step.name, i, j) in fractions
              else fmt.decimal_text(n, decimals)).replace("-inf", "−∞").replace("-", "−")
             for j, n in enumerate(row)] for i, row in enumerate(step.entries)]


def working_lines(latex: str, printer: HtmlPrinter | None = None) -> list[str]:
    """The lines of a LaTeX step's ``working`` environments, each as HTML."""
    return [line for body in WORKING.findall(latex) for line in tex_lines(body, printer)]


def tex_lines(latex: str, printer: HtmlPrinter | None = None) -> list[str]:
    """LaTeX text (words and $maths$) cut at its line breaks (and at a \\quad between formulas,
    which sets a row's entries apart: one line each here), each line printed as the page's
    prose: the words as text, the maths as MathML."""
    lines, line = [], []
    for k, piece in enumerate(MATHS.split(latex)):
        if k % 2:
            line.append(maths_of(piece))
            continue
        first, *rest = LINE_BREAK.split(piece)
        line.append(plain_words(first))
        for words in rest:
            lines.append("".join(line))
            line = [plain_words(words)]
    lines.append("".join(line))
    printer = printer or KEY_PRINTER
    return [printer.print(prose) for text in lines if (prose := text.strip(" ,;"))]


class KeyPrinter(HtmlPrinter):
    """The page's printer, which also lets a line break after each comma of a vector
    ([0.5,\\ 0.25, ...]) and each + of a sum, as TeX breaks a formula in a paragraph, so that
    a row's weights or a long dot product fit a phone: read as one formula."""

    def _print_Math(self, piece: Math) -> str:
        shown = [tex for side in relation_breaks(piece.tex) for tex in line_breaks(side)]
        if len(shown) == 1:
            return super()._print_Math(piece)
        joined = "\u200b".join(f'<span class="m">{self.comma_mathml(hidden_mathml(tex, self.words))}</span>'
                               for tex in shown)
        label = html.escape(self.comma_spoken(spoken(piece.tex, self.words)))
        return f'<span role="math" aria-label="{label}">{joined}</span>'


BREAK_OR_GROUP = re.compile(r"\\[{}]|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|[{}]|[,;]\\ | \+ ")


def line_breaks(tex: str) -> list[str]:
    """TeX cut after each ",\\ " of a vector and each " + " of a sum outside braces and
    \\left ... \\right, each piece keeping its space."""
    pieces, depth, start = [], 0, 0
    for match in BREAK_OR_GROUP.finditer(tex):
        token = match[0]
        depth += (token in ("{", "\\left")) - (token in ("}", "\\right"))
        if depth == 0 and token in (",\\ ", ";\\ ", " + ") and tex[match.end():].strip():
            pieces.append(tex[start:match.end()])
            start = match.end()
    return pieces + [tex[start:]]


KEY_PRINTER = KeyPrinter()


NEGATIVE = re.compile(r"(^|[(\[,=]\s*(?:\\[ ,;]\s*)*|\\approx\s*)-(\d+(?:\.\d+)?)")


def maths_of(piece: str) -> str:
    """A $...$ of the working as MathML reads it: no TeX line-break hints; a negative number a
    group of its own (-1 as {-1}), so that its minus is a sign, not a spaced subtraction."""
    return NEGATIVE.sub(r"\1{-\2}", MATHS_MARKS.sub("", piece))


def plain_words(text: str) -> str:
    """Words of LaTeX as the characters they print (~ a no-break space, \\& an &, \\emph bold)."""
    for pattern, replacement in TEXT_MARKS:
        text = pattern.sub(replacement, text)
    return text
