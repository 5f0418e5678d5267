"""A Type 1 font program (Adobe's Type 1 Font Format), taken apart and cut down.

The private part, decrypted (eexec), holds the font's subroutines and its glyphs, each
a charstring encrypted again on its own.  ``subset`` keeps the glyphs asked for and the
subroutines they call, found by running the charstrings on a stack of the numbers they
push, and numbers those subroutines 0, 1, 2, ... (0-3 stay: the font's flex and hint
code calls them).  Where a subroutine's number is computed at run time, or a glyph is
a composite accent (seac, which names other glyphs), it says it cannot (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

EEXEC_KEY, CHARSTRING_KEY = 55665, 4330
LEN_IV = 4
SUBR_ENTRY = re.compile(rb"\s*dup (\d+) (\d+) (\S+) ")
GLYPH_ENTRY = re.compile(rb"\s*/([^\s/{}()<>\[\]%]+) (\d+) (\S+) ")
# A string's escapes, as PostScript writes them (and PDF, which took them from it): a
# backslash, then up to three octal digits, a named control character, a line break
# (which stands for nothing) or any other character, which stands for itself.
STRING_ESCAPE = re.compile(rb"\\([0-7]{1,3}|\r\n|.)", re.DOTALL)
NAMED_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f", b"\n": b"",
                 b"\r": b"", b"\r\n": b""}
KEPT_SUBRS = 4  # subroutines 0-3 serve flex and hint replacement, called by the font's own code


@dataclass(frozen=True)
class Entry:
    """One subroutine or glyph of a font's private part, taken apart so that it can be
    written again under a new number or with other subroutine numbers in its code."""

    lead: bytes  # "/name " or "dup 5 ", with the white space before it
    mark: bytes  # the font's word for "RD"
    iv: bytes  # the charstring's first bytes, random by the spec
    code: bytes  # the decrypted charstring
    closing: bytes  # " NP" or " ND" and the line's end

    def text(self, code: bytes | None = None, lead: bytes | None = None) -> bytes:
        """The entry as the font writes it, encrypted again, with other code or lead where given."""
        body = _charstring(self.iv + (self.code if code is None else code))
        return ((self.lead if lead is None else lead) + b"%d %s " % (len(body), self.mark)
                + body + self.closing)


@lru_cache(maxsize=1 << 16)
def _charstring(plain: bytes) -> bytes:
    """An encrypted charstring: most are the same in every paper's copy of a font."""
    return eexec(plain, CHARSTRING_KEY, encrypt=True)


Site = tuple  # where a number that names a subroutine is written: (owner, offset, length)


@dataclass(frozen=True)
class Type1Program:
    """A Type 1 font program taken apart: the clear part, the private part's subroutines and glyphs
    between what surrounds them, and the trailer."""

    clear: bytes
    head: bytes  # decrypted, up to the subroutines' first entry (the 4 random bytes included)
    subrs: tuple[Entry, ...]
    middle: bytes  # between the subroutines and the first glyph
    glyphs: dict[bytes, Entry]
    tail: bytes
    trailer: bytes
    calls: dict = field(default_factory=dict)  # glyph -> (subroutines called, where named)
    subsets: dict = field(default_factory=dict)  # glyphs kept -> the program cut to them

    def needs(self, glyph: bytes):
        """The subroutines ``glyph`` calls and where it names them (``subrs_called``), found once."""
        if glyph not in self.calls:
            self.calls[glyph] = subrs_called(glyph, self.glyphs[glyph].code,
                                             [entry.code for entry in self.subrs])
        return self.calls[glyph]

    def subset(self, kept: set[bytes]) -> tuple[bytes, bytes, bytes] | None:
        """The program with only the ``kept`` glyphs and the subroutines they call,
        renumbered 0, 1, 2, ... (0-3 stay: the font's flex and hint code calls them).
        Papers often show the same glyphs of a font (a title's, the maths'): cut once."""
        kept = frozenset(kept) | {b".notdef"}
        if kept not in self.subsets:
            if len(self.subsets) > 256:
                self.subsets.clear()
            self.subsets[kept] = self._cut(kept)
        return self.subsets[kept]

    def _cut(self, kept: frozenset[bytes]) -> tuple[bytes, bytes, bytes] | None:
        if not kept <= self.glyphs.keys():
            return None
        called, sites = set(range(min(KEPT_SUBRS, len(self.subrs)))), set()
        for name in kept:
            needs = self.needs(name)
            if needs is None:
                return None
            called |= needs[0]
            sites |= needs[1]
        number = {old: new for new, old in enumerate(sorted(called))}
        by_owner: dict[tuple, list] = {}
        for site in sites:
            by_owner.setdefault(site[:2], []).append(site[2:])
        sites = by_owner
        subrs = [self.subrs[old].text(_renumbered(self.subrs[old].code, sites, ("subr", old), number),
                                      _relead(self.subrs[old].lead, new))
                 for old, new in number.items()]
        glyphs = [entry.text(_renumbered(entry.code, sites, ("glyph", name), number))
                  for name, entry in self.glyphs.items() if name in kept]
        head = re.sub(rb"\d+(\s+array)$", b"%d\\1" % len(subrs), self.head)
        private = head + b"".join(subrs) + self.middle + b"".join(glyphs) + self.tail
        return self.clear, eexec(private, EEXEC_KEY, encrypt=True), self.trailer


def _relead(lead: bytes, number: int) -> bytes:
    return re.sub(rb"dup \d+ $", b"dup %d " % number, lead)


def _renumbered(code: bytes, sites: dict, owner: tuple, number: dict[int, int]) -> bytes:
    """The charstring with each subroutine number it writes replaced by the new one."""
    for offset, length, old in sorted(sites.get(owner, ()), reverse=True):
        code = code[:offset] + _encoded(number[old]) + code[offset + length:]
    return code


def _encoded(value: int) -> bytes:
    if -107 <= value <= 107:
        return bytes([value + 139])
    if 108 <= value <= 1131:
        return bytes([(value - 108) // 256 + 247, (value - 108) % 256])
    return b"\xff" + value.to_bytes(4, "big", signed=True)


def parse_program(data: bytes, length1: int, length2: int) -> Type1Program | None:
    """A Type 1 font program taken apart (the cutter reads each font once per worker, see
    ``pdfcut.font_program``)."""
    try:
        private = eexec(data[length1:length1 + length2], EEXEC_KEY)
        subrs_at = private.index(b"array", private.index(b"/Subrs")) + len(b"array")
        subrs, subrs_end = _entries(private, subrs_at, SUBR_ENTRY)
        glyphs_at = private.index(b"begin", private.index(b"/CharStrings", subrs_end)) + len(b"begin")
        glyphs, glyphs_end = _entries(private, glyphs_at, GLYPH_ENTRY)
    except ValueError:
        return None
    numbers = [int(found.group(1)) for found, _ in subrs]
    if not subrs or not glyphs or numbers != list(range(len(subrs))):
        return None
    return Type1Program(data[:length1], private[:subrs_at], tuple(entry for _, entry in subrs),
                        private[subrs_end:glyphs_at],
                        {found.group(1): entry for found, entry in glyphs},
                        private[glyphs_end:], data[length1 + length2:])


def escaped(escape: bytes) -> bytes:
    """What an escape (what follows its backslash, ``STRING_ESCAPE``'s group) stands for."""
    if escape[:1].isdigit():
        return bytes([int(escape, 8) & 0xFF])
    return NAMED_ESCAPES.get(escape, escape)


BUILTIN_ENCODING = re.compile(rb"/Encoding\s+\d+\s+array\b(.*?)\sdef\b", re.DOTALL)  # "def" alone ends it
ENCODING_ENTRY = re.compile(rb"dup\s+(\d+)\s*/([^\s/\[\]{}()<>%]+)\s+put")


@lru_cache(maxsize=64)
def builtin_encoding(clear: bytes) -> dict[int, bytes] | None:
    """The font's own encoding, code -> glyph name, from its clear text ("dup 65 /A put");
    None for one that names a standard encoding instead of listing its codes."""
    listed = BUILTIN_ENCODING.search(clear)
    if listed is None:
        return None
    return {int(code): name for code, name in ENCODING_ENTRY.findall(listed.group(1))}


def _entries(private: bytes, position: int, pattern) -> tuple[list, int]:
    """The binary entries ("dup 5 23 RD <23 bytes> NP") from ``position`` on, each with its
    match, and where they end."""
    entries = []
    while (found := pattern.match(private, position)) is not None:
        body_end = found.end() + int(found.group(2))
        line_end = private.index(b"\n", body_end) + 1
        if not private[body_end:line_end].split():
            raise ValueError("an entry without its closing word")
        plain = eexec(private[found.end():body_end], CHARSTRING_KEY)
        lead = private[position:found.start(2)]
        entries.append((found, Entry(lead, found.group(3), plain[:LEN_IV], plain[LEN_IV:],
                                     private[body_end:line_end])))
        position = line_end
    return entries, position


MAX_CALL_DEPTH = 10  # the Type 1 spec's limit on nested subroutine calls


def subrs_called(glyph: bytes, code: bytes, subrs: list[bytes]):
    """The subroutines a glyph calls, directly or through others, and the places (sites)
    where their numbers are written, found by running its charstring (Adobe's Type 1
    spec) on a stack of the numbers it pushes: a subroutine's number is pushed by the
    caller, or handed back by "callothersubr ... pop" in hint replacement.  None where a
    number is computed, or for a composite accent (seac), which names other glyphs."""
    called: set[int] = set()
    sites: set = set()
    state = ([], [])  # the charstring stack, and what callothersubr leaves for "pop"
    if not _run(("glyph", glyph), code, subrs, state, called, sites, 0):
        return None
    return frozenset(called), frozenset(sites)


def _run(owner, code: bytes, subrs: list[bytes], state, called: set, sites: set, depth: int) -> bool:
    stack, returned = state
    index = 0
    while index < len(code):
        byte = code[index]
        if byte >= 32:
            value, end = _number(code, index)
            stack.append((value, (*owner, index, end - index)))
            index = end
            continue
        index += 1
        if byte == 12:
            byte, index = 32 + code[index], index + 1  # escaped operators, 32 + their number
        if byte == 11:  # return
            return True
        if byte == 10:  # callsubr
            number, site = stack.pop() if stack else (None, None)
            if number is None or site is None or not 0 <= number < len(subrs) or depth >= MAX_CALL_DEPTH:
                return False
            called.add(number)
            sites.add((*site, number))
            if not _run(("subr", number), subrs[number], subrs, state, called, sites, depth + 1):
                return False
        elif byte == 32 + 16:  # callothersubr: args..., n, othersubr#
            count = stack[-2][0] if len(stack) >= 2 else None
            if count is None or len(stack) < 2 + count:
                return False
            returned[:] = reversed(stack[len(stack) - 2 - count:-2])
            del stack[len(stack) - 2 - count:]
        elif byte == 32 + 17:  # pop
            stack.append(returned.pop(0) if returned else (None, None))
        elif byte == 32 + 6:  # seac
            return False
        elif byte == 32 + 12:  # div
            stack[-2:] = [(None, None)]
        else:
            stack.clear()
    return True


def _number(code: bytes, index: int) -> tuple[int, int]:
    byte = code[index]
    if byte <= 246:
        return byte - 139, index + 1
    if byte <= 250:
        return (byte - 247) * 256 + code[index + 1] + 108, index + 2
    if byte <= 254:
        return -(byte - 251) * 256 - code[index + 1] - 108, index + 2
    return int.from_bytes(code[index + 1:index + 5], "big", signed=True), index + 5


def eexec(data: bytes, key: int, encrypt: bool = False) -> bytes:
    """Type 1 encryption (eexec for the private part, key 4330 for charstrings), either way."""
    out = bytearray(len(data))
    for index, byte in enumerate(data):
        out[index] = cipher = byte ^ (key >> 8)
        key = (((cipher if encrypt else byte) + key) * 52845 + 22719) & 0xFFFF
    return bytes(out)
