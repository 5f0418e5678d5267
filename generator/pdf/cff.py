"""A Type 1 font program rewritten as a compact font (CFF, which PDF embeds as Type1C).

A Type 1 font's private part is encrypted twice (eexec, then each charstring), so it
looks random to the PDF's Flate compression and cannot shrink; its charstrings are
also longer than CFF's.  A paper's fonts rewritten as CFF take about a quarter of the
bytes (docs/performance.md).  fontTools turns each glyph's Type 1 charstring into a Type 2
one (subroutines, flex and hint replacement followed; the same outline, point for point);
the hints are left out, which changes nothing at print resolution and little on screen
(poppler draws the same pixels at 80 dpi and below).  The container is written here, not
by fontTools: its compiler's time a font, times every font of every paper of a class, is
far more than joining the bytes costs (docs/performance.md).  A font this cannot rewrite
for certain (a composite accent, an unusual font matrix or paint type) gives
None, and stays a Type 1 font.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if __package__:
    from generator.pdf.type1 import STRING_ESCAPE, escaped
else:  # the cutting workers load this file by path, outside the package
    from type1 import STRING_ESCAPE, escaped
if TYPE_CHECKING:
    from generator.pdf.type1 import Type1Program

# Top DICT keys copied from the Type 1 font's clear text (strings), with their operators.
STRING_KEYS = {b"version": b"\x00", b"Notice": b"\x01", b"FullName": b"\x02",
               b"FamilyName": b"\x03", b"Weight": b"\x04"}
FONT_BBOX, CHARSET, CHARSTRINGS, PRIVATE = b"\x05", b"\x0f", b"\x11", b"\x12"
ITALIC_ANGLE = b"\x0c\x02"
DEFAULT_WIDTH_X = b"\x14"
HEADER = b"\x01\x00\x04\x04"  # version 1.0, header size, offset size
STANDARD_STRINGS = 391


def type1c(program: Type1Program, kept: set[bytes]) -> bytes | None:
    """The CFF font program holding ``.notdef`` and the ``kept`` glyphs, or None; made once
    per set of glyphs (most papers show the same glyphs of a font: seven in eight, in a
    class's keys)."""
    _, _, _, fonts = _converted(program)
    key = frozenset(kept)
    if key not in fonts:
        fonts[key] = _type1c(program, kept)
    return fonts[key]


def _type1c(program: Type1Program, kept: set[bytes]) -> bytes | None:
    info = clear_text_info(program.clear)
    names = [b".notdef", *sorted(kept - {b".notdef"})]
    charstrings = type2_charstrings(program, names) if info is not None else None
    if info is None or charstrings is None:
        return None
    strings = Strings()
    entries = [_integer(strings.sid(value)) + operator for key, operator in STRING_KEYS.items()
               if (value := info["strings"].get(key)) is not None]
    entries.append(b"".join(_integer(v) for v in info["bbox"]) + FONT_BBOX)
    if info["italic_angle"]:
        entries.append(_real(info["italic_angle"]) + ITALIC_ANGLE)
    charset = b"\x00" + b"".join(strings.sid(name).to_bytes(2, "big") for name in names[1:])
    return _font_set(info["name"], b"".join(entries), strings, charset,
                     _index(charstrings))


class Strings:
    """The font's String INDEX: a name CFF does not know (the 391 standard strings) is
    added, and named by its number (SID)."""

    def __init__(self) -> None:
        from fontTools.cffLib import (
            cffStandardStringMapping,  # only papers are cut: only they load it
        )

        self.standard = cffStandardStringMapping
        self.added: list[bytes] = []

    def sid(self, text: bytes) -> int:
        """The number (SID) that names ``text``: a standard string's own, or an added one's."""
        standard = self.standard.get(text.decode("latin-1"))
        if standard is not None:
            return standard
        if text not in self.added:
            self.added.append(text)
        return STANDARD_STRINGS + self.added.index(text)


def _font_set(name: bytes, entries: bytes, strings: Strings, charset: bytes, glyphs: bytes) -> bytes:
    """The font laid out as the spec orders it: header, name, Top DICT, strings, global
    subroutines (none), charset, charstrings, Private DICT."""
    private = _integer(0) + DEFAULT_WIDTH_X  # widths are written whole in each charstring

    def top_dict(charset_at: int, glyphs_at: int, private_at: int) -> bytes:
        return entries + (_offset(charset_at) + CHARSET + _offset(glyphs_at) + CHARSTRINGS
                          + _offset(len(private)) + _offset(private_at) + PRIVATE)

    head = HEADER + _index([name])
    between = _index(strings.added) + _index([])
    # Offsets are written as 5-byte numbers, so the Top DICT's length is known before they are.
    charset_at = len(head) + len(_index([top_dict(0, 0, 0)])) + len(between)
    glyphs_at = charset_at + len(charset)
    top = top_dict(charset_at, glyphs_at, glyphs_at + len(glyphs))
    return head + _index([top]) + between + charset + glyphs + private


# id(program) -> (program, its subroutines, glyphs converted, CFF fonts made by glyphs kept)
CONVERTED: dict[int, tuple] = {}


def _converted(program: Type1Program) -> tuple:
    """What is made of a program once per worker: every paper's copy of a font is cut from
    the same program."""
    from fontTools.misc.psCharStrings import T1CharString  # slow to load: only papers need it

    held = CONVERTED.get(id(program))
    if held is None or held[0] is not program:  # the program is held, so its id stays its own
        if len(CONVERTED) >= 64:
            CONVERTED.clear()
        subrs = [T1CharString(bytecode=entry.code) for entry in program.subrs]
        held = CONVERTED[id(program)] = (program, subrs, {}, {})
    return held


def type2_charstrings(program: Type1Program, names: list[bytes]) -> list[bytes] | None:
    """The glyphs as Type 2 charstrings, each made once per font; None if one cannot be
    made."""
    _, subrs, converted, _ = _converted(program)
    for name in names:
        if name not in converted:
            code = program.glyphs.get(name)
            converted[name] = None if code is None else _type2(code.code, subrs)
    charstrings = [converted[name] for name in names]
    return None if None in charstrings else charstrings


def _type2(code: bytes, subrs: list) -> bytes | None:
    """One glyph's Type 1 charstring as Type 2: the same outline and width, no hints."""
    from fontTools.misc.psCharStrings import T1CharString
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    outline, pen = T1CharString(bytecode=code, subrs=subrs), T2CharStringPen(None, None, roundTolerance=0)
    try:
        outline.draw(pen)
        charstring = pen.getCharString()
        charstring.program.insert(0, outline.width)  # as hsbw gave it (546.875, say); nominal 0
        charstring.compile()
    except Exception:  # seac names other glyphs; a malformed charstring: the font stays Type 1
        return None
    return charstring.bytecode


@lru_cache(maxsize=64)
def clear_text_info(clear: bytes) -> dict | None:
    """From a Type 1 font's clear text: its name, bounding box, italic angle and naming
    strings; None when its font matrix or paint type is not the usual one (CFF's
    defaults, which this does not write)."""
    matrix = re.search(rb"/FontMatrix\s*[\[{]([^\]}]*)[\]}]", clear)
    paint = re.search(rb"/PaintType\s+(\d+)", clear)
    bbox = re.search(rb"/FontBBox\s*[\[{]([^\]}]*)[\]}]", clear)
    name = re.search(rb"/FontName\s*/(\S+)", clear)
    if matrix is None or bbox is None or name is None or (paint and paint.group(1) != b"0"):
        return None
    try:
        usual = [float(v) for v in matrix.group(1).split()] == [0.001, 0, 0, 0.001, 0, 0]
        box = [round(float(v)) for v in bbox.group(1).split()]
    except ValueError:
        return None
    if not usual:
        return None
    angle = re.search(rb"/ItalicAngle\s+(-?[\d.]+)", clear)
    strings = {key: text for key in STRING_KEYS if (text := ps_string(clear, key)) is not None}
    return {"name": name.group(1), "bbox": box if len(box) == 4 else [0, 0, 0, 0],
            "italic_angle": float(angle.group(1)) if angle else 0.0, "strings": strings}


def ps_string(clear: bytes, key: bytes) -> bytes | None:
    """The PostScript string after ``/key``: balanced parentheses may nest in it unescaped
    (Latin Modern's notice says "(on behalf of TeX USERS GROUPS)"); a backslash escapes."""
    found = re.search(rb"/" + key + rb"\s*\(", clear)
    if found is None:
        return None
    text, depth, index = bytearray(), 1, found.end()
    while index < len(clear):
        byte = clear[index:index + 1]
        if byte == b"\\":
            escape = STRING_ESCAPE.match(clear, index)
            code = escape.group(1) if escape else b""
            text += escaped(code) if code else b""
            index += 1 + len(code)
            continue
        depth += {b"(": 1, b")": -1}.get(byte, 0)
        if depth == 0:
            return bytes(text)
        text += byte
        index += 1
    return None


def _index(items: list[bytes]) -> bytes:
    """A CFF INDEX: a count, the offsets (from 1) in the fewest bytes, then the data."""
    if not items:
        return b"\x00\x00"
    offsets = [1]
    for item in items:
        offsets.append(offsets[-1] + len(item))
    size = next(n for n in (1, 2, 3, 4) if offsets[-1] < 1 << (8 * n))
    return (len(items).to_bytes(2, "big") + bytes([size])
            + b"".join(o.to_bytes(size, "big") for o in offsets) + b"".join(items))


def _integer(value: int) -> bytes:
    """A DICT operand, in the shortest of the spec's integer forms."""
    if -107 <= value <= 107:
        return bytes([value + 139])
    if 108 <= value <= 1131:
        return bytes([(value - 108) // 256 + 247, (value - 108) % 256])
    if -1131 <= value <= -108:
        return bytes([(-value - 108) // 256 + 251, (-value - 108) % 256])
    if -32768 <= value <= 32767:
        return b"\x1c" + value.to_bytes(2, "big", signed=True)
    return _offset(value)


def _offset(value: int) -> bytes:
    return b"\x1d" + value.to_bytes(4, "big", signed=True)


def _real(value: float) -> bytes:
    """A DICT real: its decimal digits packed two to a byte, ending in 0xf."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    nibbles = [int(c) if c.isdigit() else {".": 0xA, "-": 0xE}[c] for c in text] + [0xF]
    if len(nibbles) % 2:
        nibbles.append(0xF)
    return b"\x1e" + bytes(a << 4 | b for a, b in zip(nibbles[::2], nibbles[1::2]))
