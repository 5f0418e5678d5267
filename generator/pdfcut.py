"""Stage 4 helper: a compiled document cut into one PDF per paper, each only as large as
its own pages need.

A run with versions or a roster compiles one document of all papers, then cuts it at
the pages the templates logged (qpdf, through pikepdf).  Cut plainly, every paper would
carry the whole document's fonts: pdfTeX embeds each Type 1 font once, with every glyph
any paper used and all of the font's subroutines, a few hundred kilobytes in all.  So
each paper's fonts are cut too: the glyphs its pages show are kept, with the
subroutines those glyphs call; the rest of the glyphs go, and unused subroutines become
empty ones (their numbers must stay).  Anything this cannot read for certain (another
font type, an encoding without a glyph list, a composite accent, a subroutine chosen at
run time) leaves that font whole: a paper can only ever be larger, never wrong.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

EEXEC_KEY, CHARSTRING_KEY = 55665, 4330
LEN_IV = 4
SUBR_ENTRY = re.compile(rb"\s*dup (\d+) (\d+) (\S+) ")
GLYPH_ENTRY = re.compile(rb"\s*/([^\s/{}()<>\[\]%]+) (\d+) (\S+) ")
WORTH_CUTTING = 8000  # bytes: a smaller font (the maths fonts) is left whole, as it costs more
# time to cut than it saves space
KEPT_SUBRS = 4  # subroutines 0-3 serve flex and hint replacement, called by the font's own code


def cut_papers(pdf: Path, starts: list[int], names: list[str], folder: Path) -> dict[str, Path]:
    """Write the pages from each start to the next as its own PDF, fonts cut to fit.  The
    work is pure Python, so it runs in worker processes, one per core, each cutting a share
    of the papers, while the run's own process goes on (a thread would hold it up).  The
    workers run with ``-P``, importing nothing from this folder, and nothing but pikepdf."""
    workers = max(1, min(len(os.sched_getaffinity(0)), len(names) // PAPERS_PER_WORKER))
    share = -(-len(names) // workers)
    running = []
    for first in range(0, len(names), share):
        request = {"pdf": str(pdf), "starts": starts[first:first + share],
                   "until": starts[first + share] if first + share < len(starts) else None,
                   "names": names[first:first + share], "folder": str(folder)}
        worker = subprocess.Popen([sys.executable, "-P", __file__], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        running.append((worker, json.dumps(request).encode()))
    failures = [worker.communicate(request)[1] for worker, request in running]
    for worker, message in zip((w for w, _ in running), failures):
        if worker.returncode != 0:
            last = (message.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise OSError(f"cutting {pdf.name} into papers failed: {last}")
    return {name: folder / Path(name).name for name in names}


PAPERS_PER_WORKER = 20  # fewer are cut in the run's first worker alone: starting one costs


def cut(pdf: Path, starts: list[int], until: int | None, names: list[str], folder: Path) -> None:
    import pikepdf

    folder.mkdir(parents=True, exist_ok=True)
    with pikepdf.open(pdf) as document:
        ends = starts[1:] + [len(document.pages) if until is None else until]
        for name, start, end in zip(names, starts, ends):
            with pikepdf.new() as paper:
                paper.pages.extend(document.pages[start:end])
                subset_fonts(paper)
                paper.save(folder / Path(name).name, deterministic_id=True, compress_streams=True,
                           object_stream_mode=pikepdf.ObjectStreamMode.generate)


def subset_fonts(pdf) -> None:
    """Every Type 1 font of the PDF cut down to the glyphs its pages show."""
    for stream, descriptor, glyphs in font_files(pdf):
        if int(stream.Length2) < WORTH_CUTTING:
            continue
        program = parse_program(bytes(stream.read_bytes()), int(stream.Length1), int(stream.Length2))
        subset = program.subset(glyphs) if program else None
        if subset is not None:
            clear, private, trailer = subset
            stream.write(clear + private + trailer)
            stream.Length1, stream.Length2, stream.Length3 = len(clear), len(private), len(trailer)
            if "/CharSet" in descriptor:
                descriptor.CharSet = "".join(f"/{g.decode()}" for g in sorted(glyphs))


def font_files(pdf) -> list:
    """Each embedded Type 1 font program with the glyphs shown from it (fonts in two
    encodings share one program)."""
    files: dict = {}
    for font, glyphs in glyphs_shown(pdf).values():
        descriptor = font.get("/FontDescriptor")
        stream = descriptor.get("/FontFile") if descriptor is not None else None
        if stream is not None:
            _, _, known = files.setdefault(stream.objgen, (stream, descriptor, set()))
            both = None if glyphs is None or known is None else known | glyphs
            files[stream.objgen] = (stream, descriptor, both)
    return [entry for entry in files.values() if entry[2] is not None]


# In a content stream: a font chosen ("/F35 10.9091 Tf"), or a string shown ("(Answ)" or
# "<0041>").  An inline image's bytes could look like either, so a page with one is not read.
CONTENT_TOKEN = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s+[-+.\d]+\s+Tf\b|\(((?:\\.|[^\\)])*)\)"
                           rb"|<([0-9A-Fa-f\s]*)>", re.DOTALL)
INLINE_IMAGE = re.compile(rb"\bBI\b")
ESCAPE = re.compile(rb"\\([0-7]{1,3}|\r\n|.)", re.DOTALL)
ESCAPED = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f", b"\n": b"",
           b"\r": b"", b"\r\n": b""}


def glyphs_shown(pdf) -> dict:
    """Each font (by its object number) -> (the font, the names of the glyphs the pages show
    in it, or None where that cannot be told for certain).  The content streams are read
    with one regular expression: pdfTeX writes plain strings under Tf."""
    fonts_by_number, shown = {}, {}
    for page in pdf.pages:
        resources = page.obj.get("/Resources", {})
        fonts = resources.get("/Font", {})
        content = _content(page)
        if "/XObject" in resources or INLINE_IMAGE.search(content):
            return {}  # text inside forms, or an image's bytes: fonts stay whole
        strings: list[bytes] = []
        for name, literal, hexadecimal in CONTENT_TOKEN.findall(content):
            if name:
                font = fonts.get("/" + name.decode("latin-1"))
                strings = [] if font is None else shown.setdefault(font.objgen, [])
                if font is not None:
                    fonts_by_number.setdefault(font.objgen, font)
            elif hexadecimal:
                strings.append(_hex_string(hexadecimal))
            else:
                strings.append(ESCAPE.sub(_unescape, literal) if b"\\" in literal else literal)
    return {number: (font, _glyph_names(font, set(b"".join(shown.get(number, ())))))
            for number, font in fonts_by_number.items()}


def _content(page) -> bytes:
    import pikepdf

    contents = page.obj.get("/Contents")
    if contents is None:
        return b""
    if isinstance(contents, pikepdf.Array):
        return b"\n".join(bytes(part.read_bytes()) for part in contents)
    return bytes(contents.read_bytes())


def _hex_string(digits: bytes) -> bytes:
    digits = b"".join(digits.split())
    return bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode())


def _unescape(found) -> bytes:
    escaped = found.group(1)
    if escaped[:1].isdigit():
        return bytes([int(escaped, 8) & 0xFF])
    return ESCAPED.get(escaped, escaped)


def _glyph_names(font, codes: set[int]) -> set[bytes] | None:
    differences = _differences(font)
    if differences is None or font.get("/Subtype") != "/Type1" or not codes <= differences.keys():
        return None
    return {differences[code] for code in codes}


def _differences(font) -> dict[int, bytes] | None:
    import pikepdf

    encoding = font.get("/Encoding")
    if not isinstance(encoding, pikepdf.Dictionary) or "/Differences" not in encoding:
        return None
    table, code = {}, 0
    for item in encoding.Differences:
        if isinstance(item, int):
            code = int(item)
        else:
            table[code] = str(item)[1:].encode()
            code += 1
    return table


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
    clear: bytes
    head: bytes  # decrypted, up to the subroutines' first entry (the 4 random bytes included)
    subrs: tuple[Entry, ...]
    middle: bytes  # between the subroutines and the first glyph
    glyphs: dict[bytes, Entry]
    tail: bytes
    trailer: bytes
    calls: dict = field(default_factory=dict)  # glyph -> (subroutines called, where named)

    def needs(self, glyph: bytes):
        if glyph not in self.calls:
            self.calls[glyph] = subrs_called(glyph, self.glyphs[glyph].code,
                                             [entry.code for entry in self.subrs])
        return self.calls[glyph]

    def subset(self, kept: set[bytes]) -> tuple[bytes, bytes, bytes] | None:
        """The program with only the ``kept`` glyphs and the subroutines they call,
        renumbered 0, 1, 2, ... (0-3 stay: the font's flex and hint code calls them)."""
        kept = set(kept) | {b".notdef"}
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


@lru_cache(maxsize=64)
def parse_program(data: bytes, length1: int, length2: int) -> Type1Program | None:
    """A Type 1 font program, read once per font of the whole document (every paper's
    copy of a font is the same bytes)."""
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


if __name__ == "__main__":  # the worker of cut_papers
    request = json.load(sys.stdin)
    cut(Path(request["pdf"]), request["starts"], request["until"], request["names"],
        Path(request["folder"]))
