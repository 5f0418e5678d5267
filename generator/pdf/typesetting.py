"""Stage 3 helper: which TeX engine and fonts a document's characters need.

pdflatex, with Latin Modern in T1 and TS1 encoding, is fast and typesets ASCII
and most of the Latin alphabets of Western and Central Europe.  A document that
holds any other character (a Greek, Cyrillic, Vietnamese, Chinese, Japanese,
Korean, Arabic, Hebrew or Devanagari name, a Σ in a title, an emoji) is compiled
by LuaLaTeX with fontspec instead: Latin Modern stays the main font and the
maths fonts stay the same, so both engines give the same look, and Noto fonts
from Debian's packages serve as fallbacks for the characters Latin Modern lacks,
shaped by HarfBuzz (Arabic joins, Devanagari conjuncts), with right-to-left runs
set right to left.  The choice is made from the rendered source, so no text
that reaches the page can be missed.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass

from pylatex.utils import NoEscape

# The characters pdflatex typesets here: what TeX Live's t1enc.dfu and ts1enc.dfu declare
# (LaTeX's utf8 input with the T1 and TS1 encodings), plus printable ASCII and white space.
PDFLATEX_RANGES = (
    (0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x7E), (0xA0, 0xB7), (0xB9, 0x125), (0x128, 0x137),
    (0x139, 0x13E), (0x141, 0x148), (0x14A, 0x165), (0x168, 0x17E), (0x192, 0x192),
    (0x218, 0x21B), (0x2C7, 0x2C7), (0x2D8, 0x2D9), (0x2DB, 0x2DB), (0x2DD, 0x2DD),
    (0x2010, 0x2016), (0x2018, 0x201A), (0x201C, 0x201E), (0x2020, 0x2022), (0x2030, 0x2031),
    (0x2039, 0x203A), (0x2044, 0x2044), (0x20AC, 0x20AC), (0x2122, 0x2122), (0x2190, 0x2193),
)
MAGIC_LINE = "% !TEX program = lualatex\n"  # editors (TeXstudio, VS Code, TeXShop) read it too
RIGHT_TO_LEFT = "\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
RTL_RUN = re.compile(f"[{RIGHT_TO_LEFT}](?:[{RIGHT_TO_LEFT}\\s.,'-]*[{RIGHT_TO_LEFT}])?")
# A fallback font per script, by the first word of the characters' Unicode names; the first
# family installed is used.  Anything else is looked for in Noto Serif/Sans <Script>.
SCRIPT_FONTS = {
    "LATIN": ("Noto Serif",), "GREEK": ("Noto Serif",), "CYRILLIC": ("Noto Serif",),
    "COMBINING": ("Noto Serif",), "ARABIC": ("Noto Naskh Arabic", "Noto Sans Arabic"),
    "HEBREW": ("Noto Serif Hebrew", "Noto Sans Hebrew"),
}
# Each Noto CJK font has every CJK character (Han, kana, Hangul); they differ in the Han
# glyphs' shapes. Japanese shapes where a document has kana, else Chinese ones. (The Korean
# font maps some Han to compatibility ideographs, so text copied from the PDF would differ.)
CJK_FONTS = {"JP": ("Noto Serif CJK JP", "Noto Sans CJK JP"),
             "SC": ("Noto Serif CJK SC", "Noto Sans CJK SC")}
CJK_SCRIPTS = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL"}
# Symbola's emoji are outlines: they print in black and white and copy out of the PDF as
# text; the colour font (drawn as pictures) only for emoji newer than Symbola's.
EMOJI_FONTS = ("Symbola", "Noto Color Emoji")
# HarfBuzz shapes a run by its script: joining Arabic, reordering Devanagari's vowel signs.
SCRIPT_TAGS = {"ARABIC": "arab", "HEBREW": "hebr", "DEVANAGARI": "deva", "BENGALI": "beng",
               "GURMUKHI": "guru", "GUJARATI": "gujr", "TAMIL": "taml", "TELUGU": "telu",
               "KANNADA": "knda", "MALAYALAM": "mlym", "THAI": "thai", "SINHALA": "sinh"}
FONT_PACKAGES = "fonts-noto-core fonts-noto-cjk fonts-symbola fonts-noto-color-emoji"


@dataclass(frozen=True)
class Typesetting:
    """How a document is typeset: the engine, and for LuaLaTeX its fallback fonts and the
    PDF's identifier (``pdf_id``, a digest of the document: LuaTeX would make one up from
    the folder it runs in, and the same set would not give the same bytes)."""

    engine: str = "pdflatex"
    fallbacks: tuple[str, ...] = ()  # luaotfload font requests, e.g. "Noto Serif:mode=harf;"
    pdf_id: str = ""  # 32 hexadecimal digits

    @property
    def unicode(self) -> bool:
        """Whether the document is typeset by LuaLaTeX, which takes any character."""
        return self.engine == "lualatex"

    @property
    def bold_fallbacks(self) -> tuple[str, ...]:
        """The same fallback families in bold (luaotfload's ``/B``), for bold text: a family
        without a bold face (Symbola) gives its regular one."""
        return tuple(font.replace(":", "/B:", 1) for font in self.fallbacks)

    @property
    def trailer_id(self) -> NoEscape:
        """The PDF's /ID entry, for LuaTeX's ``\\pdfvariable trailerid``."""
        return NoEscape(f"[<{self.pdf_id}> <{self.pdf_id}>]")


PDFLATEX = Typesetting()


# One character class of them all: every chunk of a document sent to TeX is scanned with it.
NOT_PDFLATEX = re.compile("[^" + "".join(re.escape(chr(low)) + "-" + re.escape(chr(high))
                                         for low, high in PDFLATEX_RANGES) + "]")


def typeset_with_pdflatex(character: str) -> bool:
    """Whether pdflatex can typeset ``character``."""
    return NOT_PDFLATEX.match(character) is None


def pdflatex_lacks(text: str) -> set[str]:
    """The characters of ``text`` that pdflatex cannot typeset."""
    return set(NOT_PDFLATEX.findall(text))


def typesetting_for(source: str) -> Typesetting:
    """pdflatex when it can typeset every character of the source; else LuaLaTeX with the
    fallback fonts those characters need."""
    lacking = pdflatex_lacks(source)
    return typesetting_of(lacking, source.encode("utf-8") if lacking else b"")


def typesetting_of(others: set[str], document: bytes = b"") -> Typesetting:
    """pdflatex, or LuaLaTeX with fallback fonts for ``others``, the characters pdflatex
    lacks, and an identifier made from ``document`` (its text as rendered for pdflatex)."""
    if not others:
        return PDFLATEX
    return Typesetting("lualatex", tuple(f"{family}:mode=harf;" + (f"script={tag};" if tag else "")
                                         for family, tag in fonts_for(others).items()),
                       hashlib.md5(document, usedforsecurity=False).hexdigest().upper())


def fonts_for(characters: set[str]) -> dict[str, str | None]:
    """The installed font families that cover these characters' scripts, each with the script
    HarfBuzz shapes it as, in a stable order."""
    wanted: dict[str, str | None] = {}
    scripts = {script_of(c) for c in characters} - {None}
    for script in sorted(scripts, key=fallback_order):
        installed = [f for f in candidate_fonts(script, scripts) if f in installed_families()]
        for family in installed if script == "EMOJI" else installed[:1]:
            wanted[family] = SCRIPT_TAGS.get(script)
    return wanted


def fallback_order(script: str) -> tuple[int, str]:
    """Fallbacks are tried in turn: the alphabets first, so that a Greek letter comes from
    Noto Serif and not from the CJK font (which has one too); emoji last."""
    if script in ("LATIN", "GREEK", "CYRILLIC", "COMBINING"):
        return 0, script
    return (2 if script in CJK_SCRIPTS else 3 if script == "EMOJI" else 1), script


def candidate_fonts(script: str, scripts: set[str]) -> tuple[str, ...]:
    """The font families that may cover ``script``, in the order tried (Japanese CJK where the text
    has kana)."""
    if script == "EMOJI":
        return EMOJI_FONTS
    if script in CJK_SCRIPTS:
        return CJK_FONTS["JP" if scripts & {"HIRAGANA", "KATAKANA"} else "SC"]
    return SCRIPT_FONTS.get(script) or (f"Noto Serif {script.title()}",
                                        f"Noto Sans {script.title()}")


def script_of(character: str) -> str | None:
    """A script's name as Unicode names it ("ARABIC", "DEVANAGARI", "CJK"), "EMOJI", or None
    for a character that needs no font of its own (a joiner, a variation selector)."""
    code = ord(character)
    if 0x1F000 <= code <= 0x1FAFF or 0x2600 <= code <= 0x27BF:
        return "EMOJI"
    if code in (0x200D, 0xFE0F) or unicodedata.category(character) in ("Cc", "Cf"):
        return None
    name = unicodedata.name(character, "")
    if name.startswith(("CJK", "IDEOGRAPHIC", "FULLWIDTH", "HALFWIDTH")):
        return "CJK"
    return name.split(" ")[0] or None


@functools.lru_cache(maxsize=1)
def installed_families() -> frozenset[str]:
    """The font families fontconfig knows on this machine (asked once, on the LuaLaTeX path)."""
    if shutil.which("fc-list") is None:
        return frozenset()
    listing = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True,
                             check=False).stdout
    return frozenset(name.strip() for line in listing.splitlines() for name in line.split(","))


def right_to_left(latex: str) -> str:
    """Right-to-left runs (Arabic, Hebrew) set right to left, for LuaTeX's \\textdir."""
    return RTL_RUN.sub(lambda run: "{\\textdir TRT " + run.group(0) + "}", latex)


def actual_text(text: str, typeset: str) -> str:
    """For LuaLaTeX: ``typeset`` (the LaTeX of ``text``, with right-to-left runs) in a span whose
    /ActualText is the text itself (NFC), so that it copies out as written and not as its glyphs
    map one by one (HarfBuzz's lam-alef ligature of an Arabic name stands for two letters, which
    a reader turning the glyphs into reading order would swap, and its hamza lands apart).
    The span's text is given in the order it is printed, each right-to-left run reversed as
    ``right_to_left`` sets it: poppler (pdftotext, Evince, Okular) lays an /ActualText out
    along its span, left to right, and then turns right-to-left runs into reading order, as
    it does with glyphs; with the text in reading order it would give it reversed."""
    printed = RTL_RUN.sub(lambda run: run.group(0)[::-1], unicodedata.normalize("NFC", text))
    return f"\\actualtext{{{printed.encode('utf-16-be').hex().upper()}}}{{{typeset}}}"


def engine_of(source: str) -> str:
    """The engine a LaTeX source was written for: lualatex when it opens with its magic line."""
    return "lualatex" if source.startswith(MAGIC_LINE) else "pdflatex"


MISSING = re.compile(r"^Missing character: There is no (.+?) \(U\+([0-9A-F]+)\)", re.MULTILINE)


def missing_characters(log: str) -> list[tuple[int, str]]:
    """Characters no font had, each with the paper (by its logged start) it was in."""
    paper, found = 0, []
    for line in log.splitlines():
        started = re.match(r"^gen-problems: paper (\d+) starts", line)
        if started:
            paper = int(started.group(1))
        missing = MISSING.match(line)
        if missing:
            found.append((paper, chr(int(missing.group(2), 16))))
    return found
