"""What a teacher types: the one rule it must meet, and how each format prints it as typed.

Header texts (the command line, ``--config``), a spec file's titles and its
problems' ids (made from the file's name, or read from a problems.json record),
a roster's names and ids: every one is checked here, before anything is solved.
The renderers escape what passes for their format (HTML, XML, Moodle's cloze
syntax, LaTeX, Markdown); what no escaping can carry is refused instead:

- a control character (C0, DEL, C1) or a lone surrogate: XML 1.0 cannot hold
  most of them (moodle.xml and qti.zip would not parse), TeX stops on them or
  prints garbage, a terminal obeys them;
- a line break in a text printed on one line (a title, a name): it would end a
  Markdown heading and start a paragraph of its own.  Instructions and a
  ``--config``'s ``[extra]`` texts may span lines.

A tab is white space and passes everywhere.

The renderers print such text literally: HTML and XML by Jinja's autoescaping;
Moodle's cloze question text also with its braces as character references
(``cloze_literal``); Markdown with a backslash before each mark that would be
markup (``markdown_literal``, ``markdown_code_span``); LaTeX by pylatex's escaping.
"""

from __future__ import annotations

import re
import unicodedata

from markupsafe import Markup, escape

# U+FFFE and U+FFFF are no characters at all, and XML refuses them as it refuses C0.
UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")
LINE_BREAK = re.compile("[\n\r\u2028\u2029]")


def text_fault(text: str, several_lines: bool = False) -> str | None:
    """What makes ``text`` unfit for a document, worded to follow the text's name in a
    one-line error ("title holds ..."); None when it is fit."""
    if (bad := UNPRINTABLE.search(text)):
        code = f"U+{ord(bad.group()):04X}"
        what = {"Cc": f"the control character {code}",  # a lone surrogate: from JSON, or argv
                "Cs": f"{code} (half a character, or a byte that is not UTF-8)"}.get(
            unicodedata.category(bad.group()), f"the non-character {code}")
        return f"holds {what}, which no document can print (XML cannot even hold it)"
    if not several_lines and (bad := LINE_BREAK.search(text)):
        return f"holds a line break (U+{ord(bad.group()):04X}); it must be one line"
    return None


def one_line(message: object) -> str:
    """A message as one printable line: any control character or line break in it (from a
    file's name, say) is written as its escape, as Python would write it: \\x07, \\n."""
    return LINE_BREAK.sub(_escaped, UNPRINTABLE.sub(_escaped, str(message)))


def _escaped(match: re.Match) -> str:
    return match.group().encode("unicode_escape", "backslashreplace").decode("ascii")


# CommonMark reads these ASCII marks as markup inside a line: emphasis, code, links and images,
# raw HTML and autolinks; and & where it starts a character reference (&lt;).
MARKDOWN_INLINE = re.compile(r"[\\`*_\[\]<]|&(?=#?[0-9A-Za-z]+;)")
# ... and these at the start of a line: a heading, a quote, a list item, a table row, a rule.
MARKDOWN_LINE_START = re.compile(r"^([ \t]*)(?:([#>+=|-])|(\d+)(?=[.)]))", re.M)


def markdown_literal(text: str) -> str:
    """Text that Markdown shows as typed: a backslash before each mark it would read as markup
    (``<img>`` stays words, ``*x*`` stays stars); ordinary words and punctuation unchanged."""
    text = MARKDOWN_INLINE.sub(lambda m: "\\" + m.group(), text)
    return MARKDOWN_LINE_START.sub(
        lambda m: m[1] + ("\\" + m[2] if m[2] else m[3] + "\\"), text)


def markdown_code_span(text: str) -> str:
    """Text as a Markdown code span, whose content is never markup: fenced by one backtick
    more than its longest run of them, padded with a space where CommonMark strips one."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" or (
        text[:1] == " " and text[-1:] == " " and text.strip(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cloze_braces(html: str) -> str:
    """HTML for a Moodle cloze question's text, with its braces as character references: the
    browser shows them, but Moodle's parser reads no gap ({1:SHORTANSWER:=x}) and no
    placeholder ({#1}) in them."""
    return html.replace("{", "&#123;").replace("}", "&#125;")


def cloze_literal(text) -> Markup:
    """Text in a cloze question's HTML, shown as typed."""
    return Markup(cloze_braces(str(escape(text))))
