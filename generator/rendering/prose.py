"""Prose, written once and printed for each format.

A piece of prose (a title, a statement, a part's prompt, a key's explanation) is a
small Jinja template in one notation: plain words, maths between ``$...$`` in TeX,
and ``**bold**``.  ``say`` renders it with the values of the problem at hand (in
the immutable sandbox) and hands it to the format's printer, which turns each piece
by its kind, as SymPy's printers do (``_print_<Kind>``):

- LaTeX keeps the maths and escapes the words (pylatex);
- Markdown writes the maths as plain text (pylatexenc: S/√(d_k), K^T);
- HTML writes the maths as MathML (latex2mathml) and escapes the words;
- Moodle writes the maths as TeX for its MathJax filter, \\( ... \\).
"""

from __future__ import annotations

import copy
import hashlib
import html
import re
from dataclasses import dataclass
from functools import lru_cache

import jinja2
from markupsafe import Markup
from pylatex.utils import NoEscape, escape_latex
from pylatexenc import latex2text

from generator.rendering.language import N_
from generator.rendering.teacher_text import cloze_braces

PIECES = re.compile(r"\*\*(?P<bold>.+?)\*\*|\$(?P<math>[^$]+)\$", re.DOTALL)


@dataclass(frozen=True)
class Text:
    """Words of prose, printed as each format escapes words."""

    text: str


@dataclass(frozen=True)
class Math:
    """Maths of prose, in TeX (what stood between $...$)."""

    tex: str


@dataclass(frozen=True)
class Bold:
    """Bold prose (what stood between **...**): the Text and Math pieces inside."""

    pieces: tuple


def pieces(prose: str) -> tuple:
    """The prose as a sequence of Text, Math and Bold (which holds Text and Math)."""
    found, at = [], 0
    for match in PIECES.finditer(prose):
        if match.start() > at:
            found.append(Text(prose[at:match.start()]))
        found.append(Bold(pieces(match["bold"])) if match["bold"] is not None else Math(match["math"]))
        at = match.end()
    if at < len(prose):
        found.append(Text(prose[at:]))
    return tuple(found)


DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")


class Printer:
    """Prints prose piece by piece, each by the method named for its kind; ``decimal`` is the
    mark its maths writes numbers with (``with_decimal``)."""

    decimal = "."
    words = str  # the language's gettext, for the words a printer adds (a formula said aloud)

    def with_words(self, gettext) -> Printer:
        """This printer, saying the words it adds (a formula's spoken name) by ``gettext``."""
        if gettext is self.words:
            return self
        printer = copy.copy(self)
        printer.words = gettext
        return printer

    def with_decimal(self, mark: str) -> Printer:
        """This printer, writing numbers in maths with ``mark`` (a comma in German)."""
        if mark == self.decimal:
            return self
        printer = copy.copy(self)
        printer.decimal = mark
        return printer

    def comma_tex(self, tex: str) -> str:
        """TeX with the printer's decimal mark: a comma in braces, which TeX sets as a decimal
        comma (no space after it)."""
        return tex if self.decimal == "." else DECIMAL_POINT.sub("{" + self.decimal + "}", tex)

    def print(self, prose: str) -> str:
        """A piece of prose printed, each of its pieces by its kind."""
        return self.join(self._print(piece) for piece in pieces(prose))

    def _print(self, piece) -> str:
        return getattr(self, f"_print_{type(piece).__name__}")(piece)

    def join(self, printed) -> str:
        """The printed pieces put together."""
        return "".join(printed)

    def _print_Bold(self, piece: Bold) -> str:
        return self.bold(self.join(self._print(p) for p in piece.pieces))


class LatexPrinter(Printer):
    """Prints prose for LaTeX: the words escaped, the maths as it is."""

    def _print_Text(self, piece: Text) -> str:
        # pylatex writes ^ as the accent \^{}, which prints a small hat; T1 has the real caret.
        return escape_latex(piece.text).replace(r"\^{}", r"\textasciicircum{}")

    def _print_Math(self, piece: Math) -> str:
        return f"${piece.tex}$"

    def bold(self, text: str) -> str:
        """Bold, in LaTeX."""
        return rf"\textbf{{{text}}}"

    def join(self, printed) -> str:
        """The pieces together, marked as LaTeX already escaped."""
        return NoEscape("".join(printed))


class MarkdownPrinter(Printer):
    """Prints prose for Markdown: the words as they are, the maths as plain text."""

    def _print_Text(self, piece: Text) -> str:
        return piece.text

    def _print_Math(self, piece: Math) -> str:
        return plain_maths(self.comma_tex(piece.tex))

    def bold(self, text: str) -> str:
        """Bold, in Markdown."""
        return f"**{text}**"


class HtmlPrinter(Printer):
    """Prints prose for a web page: the words escaped, the maths as MathML that a screen reader
    reads."""

    def _print_Text(self, piece: Text) -> str:
        return html.escape(piece.text, quote=False)

    def _print_Math(self, piece: Math) -> str:
        sides = relation_breaks(piece.tex)
        if len(sides) == 1:
            return f'<span class="m">{self.comma_mathml(labelled_mathml(piece.tex, self.words))}</span>'
        # a browser breaks no MathML: each side of an = is a formula of its own, so that a
        # line may break after the =, as TeX breaks maths in a paragraph; read as one formula.
        # The break is a zero-width space, not <wbr>: Canvas's sanitiser drops a <wbr> tag.
        shown = "\u200b".join(f'<span class="m">{self.comma_mathml(hidden_mathml(tex, self.words))}</span>'
                              for tex in sides)
        label = html.escape(self.comma_spoken(spoken(piece.tex, self.words)))
        return f'<span role="math" aria-label="{label}">{shown}</span>'

    def comma_mathml(self, mathml: str) -> str:
        """MathML whose numbers (<mn>) and labels are written with the printer's decimal mark."""
        return mathml if self.decimal == "." else DECIMAL_POINT.sub(self.decimal, mathml)

    def comma_spoken(self, text: str) -> str:
        """A spoken label with the printer's decimal mark."""
        return text if self.decimal == "." else DECIMAL_POINT.sub(self.decimal, text)

    def bold(self, text: str) -> str:
        """Bold, in HTML."""
        return f"<b>{text}</b>"

    def join(self, printed) -> str:
        """The pieces together, marked as HTML already escaped."""
        return Markup("".join(printed))


RELATION_OR_GROUP = re.compile(r"\\[{}]|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|[{}]|=|\\approx(?![a-zA-Z])")


def relation_breaks(tex: str) -> list[str]:
    """TeX cut after each relation (=, ≈) outside braces and \\left ... \\right: the places
    where a line of text may break in a formula. ``a = b`` is ``["a =", "b"]``."""
    pieces, depth, start = [], 0, 0
    for match in RELATION_OR_GROUP.finditer(tex):
        token = match[0]
        depth += (token in ("{", "\\left")) - (token in ("}", "\\right"))
        if depth == 0 and token in ("=", "\\approx") and tex[match.end():].strip():
            pieces.append(tex[start:match.end()].strip())
            start = match.end()
    return pieces + [tex[start:].strip()]


class MoodlePrinter(HtmlPrinter):
    """Prints prose for Moodle: as for a page, with the maths as TeX for Moodle's MathJax filter and
    the words kept from forming a cloze gap."""

    def _print_Text(self, piece: Text) -> str:
        return cloze_braces(super()._print_Text(piece))  # a cloze gap forms from no words

    def _print_Math(self, piece: Math) -> str:
        return html.escape(rf"\({self.comma_tex(piece.tex)}\)", quote=False)


class TextPrinter(MarkdownPrinter):
    """Prints prose as plain Unicode text, for what can show no markup nor typeset maths (an
    option of a <select>, Moodle's cloze dropdowns): d_k^2 as dₖ², √(d_k) as √dₖ."""

    def _print_Math(self, piece: Math) -> str:
        return unicode_maths(self.comma_tex(piece.tex))

    def bold(self, text: str) -> str:
        """Bold cannot be shown: the text as it is."""
        return text


PRINTERS = {"latex": LatexPrinter(), "markdown": MarkdownPrinter(), "html": HtmlPrinter(),
            "moodle": MoodlePrinter(), "text": TextPrinter()}


@lru_cache(maxsize=4096)
def mathml(tex: str) -> str:
    """TeX as inline MathML."""
    import latex2mathml.converter  # slow to import: only runs that write a page pay for it
    # a word in upright maths (\mathrm{size}, A_{\mathrm{raw}}) as one <mtext>, which a screen
    # reader says as a word: latex2mathml writes it as a letter per <mi> ("s i z e")
    tex = UPRIGHT_WORDS.sub(r"\\text{\1}", tex)
    return latex2mathml.converter.convert(tex).replace(
        ' xmlns="http://www.w3.org/1998/Math/MathML" display="inline"', "")


def _plain_text_context():
    """pylatexenc's maths-to-text, with a transpose written T as in the other texts."""
    context = latex2text.get_default_latex_context_db().filter_context(keep_categories=None)
    context.add_context_category("gen-problems", prepend=True, macros=[
        latex2text.MacroTextSpec("top", "T"),
        latex2text.MacroTextSpec(",", ""),
        *(latex2text.MacroTextSpec(name, f" {sign} ") for name, sign in
          (("le", "≤"), ("ge", "≥"), ("approx", "≈"), ("times", "×"), ("cdot", "·"))),
    ])
    return context


OPERATOR_NAME = re.compile(r"\\operatorname\{(\w+)\}")


@lru_cache(maxsize=4096)  # a set writes the same few symbols (Q, K^T, A') many times
def plain_maths(tex: str) -> str:
    """TeX as plain text (S/√(d_k), K^T), as Markdown and the page's plain texts write maths."""
    text = _TO_TEXT.latex_to_text(OPERATOR_NAME.sub(r"\\mathrm{\1}", tex))
    return re.sub(" {2,}", " ", text).strip()


SUBSCRIPTS = str.maketrans("0123456789aehijklmnoprstuvx+-=()", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ₊₋₌₍₎")
SUPERSCRIPTS = str.maketrans("0123456789+-−inTk", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻ⁱⁿᵀᵏ")
SUBSCRIPT = re.compile(r"_(?:\((\w+)\)|(\w+))")  # d_k, x_(ij)
SUPERSCRIPT = re.compile(r"\^(?:\(([-+−]?\w+)\)|([-+−]?\w+))")  # d_k^2, 10^-3, e^(-1)
ROOT_OF_ONE = re.compile(r"√\(([^\s()+\-−×·/=]+)\)")  # √(dₖ): the parentheses of one symbol


@lru_cache(maxsize=4096)
def unicode_maths(tex: str) -> str:
    """TeX as plain text (``plain_maths``) with Unicode's subscripts and superscripts where every
    character of one has its form (d_k → dₖ, d_k^2 → dₖ², K^T → Kᵀ; d_model stays, having no
    subscript d), and √ of one symbol without parentheses (√dₖ): for text that cannot typeset."""
    def scripted(table):
        def replace(match):
            script = (match[1] or match[2]).translate(table)
            return script if all(ord(c) > 127 for c in script) else match[0]
        return replace

    text = SUBSCRIPT.sub(scripted(SUBSCRIPTS), plain_maths(tex))
    return SUPERSCRIPT.sub(scripted(SUPERSCRIPTS), ROOT_OF_ONE.sub(r"√\1", text))


_TO_TEXT = latex2text.LatexNodes2Text(math_mode="text", latex_context=_plain_text_context(),
                                      strict_latex_spaces=False)


# Maths as a screen reader should say it, for a formula's accessible name (browsers leave
# MathML out of a heading's or a caption's name): first in TeX, where the structure is plain,
# then in the plain text (a subscript, a prime, a minus).  Each word is a message of the
# catalogue (``_``: the language's gettext), said in the page's language; the words put in
# at the TeX stage are held as placeholders through the text stage, so that an apostrophe or
# a hyphen of a translation is not read as a prime or a minus.
# what a row or column slice is taken of: A, A', \tilde{S}, a gradient (\mathrm{d}\tilde{S}), or
# a symbol in brackets, (A_{\mathrm{raw}})
SLICED = r"(\((?:[^()]|\([^()]*\))*\)|(?:\\mathrm\{d\}\s*)?(?:\\[a-z]+\{\w\}|[A-Za-z])'*)"


def _spoken_tex(_, held: list) -> tuple:
    def hold(words: str) -> str:
        held.append(words)
        return f"\ue000{len(held) - 1}\ue001"
    said = {"partial": _("partial") + " ", "infty": _("infinity"),
            "odot": " " + _("elementwise times") + " ", "delta": _("delta")}
    accent = {"tilde": _("tilde"), "hat": _("hat")}
    slices = (  # said first: \tilde{S}_{2,:} is a slice of S̃
        # a row of a matrix, A_{3,:}: "row 3 of A" (not "A sub 3, colon"); a column, A_{:,2}
        (re.compile(SLICED + r"_\{(\w+),\s*:\}"), lambda m: hold(_("row %(row)s of %(symbol)s") % {
            "row": m[2], "symbol": spoken(m[1].removeprefix("(").removesuffix(")"), _)})),
        (re.compile(SLICED + r"_\{:,\s*(\w+)\}"), lambda m: hold(_("column %(column)s of %(symbol)s") % {
            "column": m[2], "symbol": spoken(m[1].removeprefix("(").removesuffix(")"), _)})),
    )
    return (*slices,
            (re.compile(r"\\(tilde|hat)\{(\w)\}"), lambda m: f"{m[2]} {hold(accent[m[1]])}"),
            (re.compile(r"\\sqrt\{([^{}]*)\}"), lambda m: hold(_("the square root of") + " ") + m[1]),
            (re.compile(r"\\sum_\{?(\w+)\}?"),
             lambda m: hold(_("the sum over %(index)s of") % {"index": m[1]} + " ")),
            (re.compile(r"\^\{?\\top\}?"), lambda m: hold(" " + _("transpose"))),
            (re.compile(r"\\mathrm\{d\}"), lambda m: "d "),
            (re.compile(r"\\(partial|infty|odot|delta)(?![A-Za-z])"), lambda m: hold(said[m[1]])))


def _spoken_text(_) -> tuple:
    return ((re.compile(r"(?<=\w)'"), " " + _("prime")), (re.compile(r"_"), " " + _("sub") + " "),
            (re.compile(r"\^\((\w+)\)"), lambda m: " " + _("superscript") + " " + m[1]),
            (re.compile(r"\^"), " " + _("to the") + " "),
            (re.compile(r"(^|[\s([])-\s?"), lambda m: m[1] + _("minus") + " "),
            (re.compile(r"·"), " " + _("times") + " "),
            (re.compile(r"\s/\s|/"), " " + _("over") + " "))


HELD = re.compile("\ue000(\\d+)\ue001")


TEXT_IN_MATHS = re.compile(r"\\text\{([^{}]*?)(\s*)\}")
UPRIGHT_WORD = re.compile(r"\\mathrm\{([A-Za-z]{2,})\}")
UPRIGHT_WORDS = re.compile(r"\\mathrm\{([^\W\d_]{2,})\}")  # and translated: Größe, taille
# The English words of symbols written in upright maths (\mathrm{size}, A_{\mathrm{raw}}),
# marked here for the catalogue: said in the language wherever the symbol is printed as words
# (a subscript that is notation, attn or LN, is no message and stays as written).
SYMBOL_WORDS = (N_("size"), N_("raw"))


def words_translated(tex: str, gettext=str) -> str:
    """TeX whose ``\\text{...}`` words (marked N_ where the code writes them: "the student's")
    and upright words (\\mathrm{size}) are said by ``gettext``."""
    if gettext is str:
        return tex
    tex = UPRIGHT_WORD.sub(lambda m: "\\mathrm{" + gettext(m[1]) + "}", tex)
    return TEXT_IN_MATHS.sub(lambda m: "\\text{" + gettext(m[1]) + m[2] + "}", tex)


@lru_cache(maxsize=4096)
def spoken(tex: str, gettext=str) -> str:
    """Maths in words a screen reader says well: S̃ = S/√(d_k) is "S tilde = S over the square
    root of d sub k"; its words in the language of ``gettext``."""
    tex = words_translated(tex, gettext)
    held: list[str] = []
    for pattern, words in _spoken_tex(gettext, held):
        tex = pattern.sub(words, tex)
    text = plain_maths(tex)
    for pattern, words in _spoken_text(gettext):
        text = pattern.sub(words, text)
    text = HELD.sub(lambda m: held[int(m[1])], text)
    return re.sub(r"\s{2,}", " ", text).strip()


def hidden_mathml(tex: str, gettext=str) -> str:
    """MathML left out of the accessibility tree: a piece of a formula labelled as a whole; its
    words (\\text{}, \\mathrm{size}) in the language of ``gettext``."""
    return mathml(words_translated(tex, gettext)).replace("<math>", '<math aria-hidden="true">', 1)


def labelled_mathml(tex: str, gettext=str) -> str:
    """MathML that keeps its maths in the accessible name of what holds it (a heading, a
    caption): the spoken form (in the language of ``gettext``) as its label."""
    label = html.escape(spoken(tex, gettext))
    return mathml(words_translated(tex, gettext)).replace("<math>", f'<math aria-label="{label}">', 1)


class ProseRenderer:
    """Renders prose sources with a template's values, then prints them for one format.

    ``environment`` is a sandboxed Jinja environment whose loader is ``SourceLoader``: each
    source is loaded under a name made from its digest, so that the environment's bytecode
    cache keeps the compiled prose between runs as it keeps the templates."""

    def __init__(self, printer: Printer, environment: jinja2.Environment, translate=str,
                 decimal: str = "."):
        self.printer = printer.with_decimal(decimal).with_words(translate)
        self.environment = environment
        self.translate = translate  # the language's gettext: a source is its message id
        self._compiled: dict[str, jinja2.Template] = {}
        # the same sentences recur problem after problem: each is printed once
        self._print = lru_cache(maxsize=8192)(self.printer.print)

    def render(self, source: str, values: dict) -> str:
        """The prose, in the language, with its values in, not yet printed."""
        source = self.translate(source)
        if "{" not in source:  # most prose is fixed words: no template to run
            return source
        if source not in self._compiled:
            self._compiled[source] = self.environment.get_template(
                self.environment.loader.name_of(source))
        return self._compiled[source].render(values)

    def __call__(self, source: str, values: dict) -> str:
        """A piece of prose rendered with ``values``, then printed for the format."""
        return self._print(self.render(source, values))


class SourceLoader(jinja2.BaseLoader):
    """Loads prose by the name ``name_of`` gave its source (a source is no template name:
    Jinja writes the name into the code it compiles)."""

    def __init__(self):
        self._sources: dict[str, str] = {}

    def name_of(self, source: str) -> str:
        """The name a prose source is loaded by: its digest."""
        name = "prose/" + hashlib.sha256(source.encode()).hexdigest()
        self._sources[name] = source
        return name

    def get_source(self, environment, template: str):
        """Jinja's loader call: the source ``name_of`` named, which never changes."""
        if template not in self._sources:
            raise jinja2.TemplateNotFound(template)
        return self._sources[template], None, lambda: True


# A question type's prose may live in files, kinds/<type>/<piece>.j2 in a template folder:
# title, statement (its blocks apart by a blank line; a line "@given" or "@shown" where the
# matrices go), choice, and prompts/<task>, keys/<task>, after/<task> for a part's task.
PROSE_FILE = re.compile(r"kinds/(?P<kind>[^/]+)/(title|statement|choice|(prompts|keys|after)/[^/]+)\.j2")
BLOCKS = re.compile(r"\n\s*\n")


def prose_file_of(name: str) -> str | None:
    """The type a template folder's file gives prose to (kinds/row/title.j2: row), or None."""
    match = PROSE_FILE.fullmatch(name)
    return match["kind"] if match else None


def one_piece(source: str) -> str:
    """A prose file's text as one piece of prose: its lines run together, as a paragraph's."""
    return " ".join(source.split())


class TypeProse:
    """A question type's prose as the templates read it (``kind.title``, ``kind.statement``,
    ``kind.prompts[task]``, ...): each piece from its file (``PROSE_FILE``), as ``read``
    finds it along the template folders (the teacher's first), else the type's own string,
    so that a type may keep its words in files and a teacher may reword any type's."""

    def __init__(self, kind, read) -> None:
        folder = f"kinds/{kind.name}/"
        title, statement, choice = (read(f"{folder}{piece}.j2")
                                    for piece in ("title", "statement", "choice"))
        self.title = kind.title if title is None else one_piece(title)
        self.statement = kind.statement if statement is None else tuple(
            one_piece(block) for block in BLOCKS.split(statement.strip()))
        self.choice = kind.choice if choice is None else one_piece(choice)
        self.prompts, self.keys, self.after = (
            ByTask(read, f"{folder}{pieces}/", getattr(kind, pieces))
            for pieces in ("prompts", "keys", "after"))


class ByTask:
    """A type's prose for each part's task (its prompts, say): the file <folder><task>.j2,
    else the type's own; read as a mapping by the templates (``task in kind.keys``)."""

    def __init__(self, read, folder: str, own) -> None:
        self._read, self._folder, self._own = read, folder, own
        self._found: dict[str, str | None] = {}

    def get(self, task: str, default=None):
        """The prose for ``task``: its file, else the type's own, else ``default``."""
        if task not in self._found:
            source = self._read(f"{self._folder}{task}.j2")
            self._found[task] = one_piece(source) if source is not None else self._own.get(task)
        found = self._found[task]
        return default if found is None else found

    def __contains__(self, task: str) -> bool:
        return self.get(task) is not None

    def __getitem__(self, task: str) -> str:
        found = self.get(task)
        if found is None:
            raise KeyError(task)
        return found
