"""Stage 4 helper: a compiled document cut into one PDF per paper, each only as large as
its own pages need.

A run with versions or a roster compiles one document of all papers, then cuts it at
the pages the templates logged (qpdf, through pikepdf).  Cut plainly, every paper would
carry the whole document's fonts: pdfTeX embeds each Type 1 font once, with every glyph
any paper used and all of the font's subroutines, a few hundred kilobytes in all.  So
each paper's fonts are cut too, to the glyphs its pages show, and rewritten as compact
fonts (CFF, see ``cff``), which take a quarter of the bytes.  A font that cannot be
rewritten for certain stays Type 1, cut to its glyphs and the subroutines they call
(found by running their charstrings, see ``type1``).  The glyphs shown are named by the
font's /Differences or, where it has no /Encoding, by its program's own encoding (a
teacher's Computer Modern preamble).  Anything neither can read for certain (another
font type, a standard encoding named but not listed, a subroutine chosen at run time)
leaves that font whole: a paper can only ever be larger, never wrong.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

if __package__:
    from generator.pdf.cff import type1c
    from generator.pdf.type1 import STRING_ESCAPE, builtin_encoding, escaped, parse_program
    from generator.running.helpers import HelperDied, ended
else:  # a worker runs this file by path (python -P): its folder is looked in last
    sys.path.append(str(Path(__file__).parent))
    from cff import type1c
    from type1 import STRING_ESCAPE, builtin_encoding, escaped, parse_program

WORTH_CUTTING = 8000  # bytes: a smaller Type 1 font is left whole, as it costs more time to cut
# than it saves space
# A worker costs far more to start (pikepdf, fontTools, each font's glyphs converted
# again) than a paper costs it (docs/performance.md): a second one is worth it for a
# document of many papers, on a core nothing else needs.
PAPERS_PER_WORKER = 20


def cut_papers(pdf: Path, starts: list[int], names: list[str], folder: Path,
               cores: int = 1) -> dict[str, Path]:
    """Write the pages from each start to the next as its own PDF, fonts cut to fit.  The
    work is pure Python, so it runs in worker processes, up to one per core it is given,
    each cutting a share of the papers, while the run's own process goes on (a thread would
    hold it up).  The workers run this file with ``-P`` (this folder is looked in last, for
    type1.py only) and need nothing but pikepdf."""
    workers = max(1, min(cores, len(names) // PAPERS_PER_WORKER))
    share = -(-len(names) // workers)
    running = []
    for first in range(0, len(names), share):
        request = {"pdf": str(pdf), "starts": starts[first:first + share],
                   "until": starts[first + share] if first + share < len(starts) else None,
                   "names": names[first:first + share], "folder": str(folder)}
        worker = subprocess.Popen([sys.executable, "-P", __file__], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        running.append(worker)
        try:  # every worker has its request before any is waited for
            with worker.stdin:
                worker.stdin.write(json.dumps(request).encode())
        except BrokenPipeError:  # it died before it read it: said below, as it ended
            pass
    failures = [_wait_for(worker) for worker in running]
    for worker, message in zip(running, failures):
        last = (message.decode(errors="replace").strip().splitlines() or [""])[-1]
        if worker.returncode < 0 or worker.returncode and not last:  # killed, or died unheard
            raise HelperDied(f"the paper cutter of {pdf.name}", worker.pid, ended(worker.returncode))
        if worker.returncode != 0:  # its own error (a full disk): its last line says which
            raise OSError(f"cutting {pdf.name} into papers failed: {last}")
    return {name: folder / Path(name).name for name in names}


def _wait_for(worker: subprocess.Popen) -> bytes:
    """What the worker said on stderr, once it has ended (waited for)."""
    with worker.stderr:
        message = worker.stderr.read()
    worker.wait()
    return message


def cut(pdf: Path, starts: list[int], until: int | None, names: list[str], folder: Path) -> None:
    """Cut ``pdf`` into a file per paper in ``folder``, paper i from page ``starts[i]``, each with
    its fonts cut down to what it prints."""
    import pikepdf

    folder.mkdir(parents=True, exist_ok=True)
    with pikepdf.open(pdf) as document:
        ends = starts[1:] + [len(document.pages) if until is None else until]
        marks = bookmarks(document)
        for name, start, end in zip(names, starts, ends):
            with pikepdf.new() as paper:
                paper.pages.extend(document.pages[start:end])
                describe(paper, document, [(depth, title, page - start, place)
                                           for depth, title, page, place in marks
                                           if start <= page < end])
                subset_fonts(paper)
                paper.save(folder / Path(name).name, deterministic_id=True, compress_streams=True,
                           object_stream_mode=pikepdf.ObjectStreamMode.generate)


# What a paper keeps of its document's catalog: its language, how a viewer shows its title and
# opens its bookmarks.
CATALOG_KEYS = ("/Lang", "/ViewerPreferences", "/PageMode")


def describe(paper, document, marks: list) -> None:
    """The paper's language, title and bookmarks, as its document has them: each of its
    problems, at the top (the document's entry for the paper itself, over them, is the
    whole of this PDF)."""
    import pikepdf

    for key in CATALOG_KEYS:
        if key in document.Root:
            paper.Root[key] = pikepdf.Object.parse(document.Root[key].unparse())
    if "/Title" in document.docinfo:
        paper.docinfo["/Title"] = pikepdf.String(str(document.docinfo["/Title"]))
    top = min((depth for depth, *_ in marks), default=0)
    if top == 0 and [depth for depth, *_ in marks].count(0) == 1 and len(marks) > 1:
        top, marks = 1, marks[1:]  # the paper's own entry
    with paper.open_outline() as outline:
        levels = [outline.root]  # the list an entry at each depth goes into
        for depth, title, page, (left, top_y, zoom) in marks:
            item = pikepdf.OutlineItem(title, page, "XYZ", left=left, top=top_y, zoom=zoom)
            level = min(max(depth - top, 0), len(levels) - 1)
            del levels[level + 1:]
            levels[level].append(item)
            levels.append(item.children)


def bookmarks(document) -> list[tuple[int, str, int, tuple]]:
    """The document's bookmarks in order: (depth, title, page index, (left, top, zoom) of
    its destination); an entry whose place cannot be read is left out."""
    import pikepdf

    names = document.Root.get("/Names", {}).get("/Dests")
    named = pikepdf.NameTree(names) if names is not None else {}
    pages = {page.objgen: number for number, page in enumerate(document.pages)}
    found = []

    def place(item):
        target = item.destination
        if target is None and item.action is not None and item.action.get("/S") == "/GoTo":
            target = item.action.get("/D")
        if isinstance(target, (pikepdf.String, pikepdf.Name)):
            target = named.get(str(target)) if str(target) in named else None
        if isinstance(target, pikepdf.Dictionary):
            target = target.get("/D")
        if not isinstance(target, pikepdf.Array) or len(target) < 2:
            return None
        page = pages.get(target[0].objgen)
        if page is None:
            return None
        values = [None if value is None else float(value) for value in list(target[2:5])]
        if str(target[1]) != "/XYZ":
            values = [None, None, None]
        return page, tuple((values + [None] * 3)[:3])

    def walk(items, depth):
        for item in items:
            where = place(item)
            if where is not None:
                found.append((depth, str(item.title), *where))
            walk(item.children, depth + 1)

    with document.open_outline() as outline:
        walk(outline.root, 0)
    return found


def subset_fonts(pdf) -> None:
    """Every Type 1 font of the PDF cut down to the glyphs its pages show, and rewritten
    as a compact font (CFF) where it can be; else cut as Type 1, if that is worth it."""
    import pikepdf

    for stream, fonts, glyphs in font_files(pdf):
        program = font_program(stream)
        if program is None:
            continue
        descriptors = list({font.FontDescriptor.objgen: font.FontDescriptor for font in fonts}.values())
        own = [font for font in fonts if "/Encoding" not in font]  # in the program's encoding,
        encoding = builtin_encoding(program.clear) if own else {}  # which CFF does not carry
        compact = type1c(program, glyphs) if encoding is not None else None
        if compact is not None:
            font_file = pdf.make_stream(compact, Subtype=pikepdf.Name.Type1C)
            for descriptor in descriptors:
                del descriptor["/FontFile"]
                descriptor.FontFile3 = font_file
            for font in own:
                font.Encoding = pdf.make_indirect(pikepdf.Dictionary(
                    Type=pikepdf.Name.Encoding, Differences=_differences_array(encoding, glyphs)))
        elif int(stream.Length2) >= WORTH_CUTTING and (subset := program.subset(glyphs)):
            clear, private, trailer = subset
            stream.write(clear + private + trailer)
            stream.Length1, stream.Length2, stream.Length3 = len(clear), len(private), len(trailer)
        else:
            continue
        for descriptor in descriptors:
            if "/CharSet" in descriptor:
                descriptor.CharSet = "".join(f"/{g.decode()}" for g in sorted(glyphs))


def _differences_array(encoding: dict[int, bytes], glyphs: set[bytes]) -> list:
    """[code /name code /name ...] for the codes of ``encoding`` whose glyph is kept."""
    import pikepdf

    return [item for code, name in sorted(encoding.items()) if name in glyphs
            for item in (code, pikepdf.Name("/" + name.decode("latin-1")))]


PROGRAMS: dict[tuple, object] = {}  # a font's compressed bytes and lengths -> its program
DIFFERENCES: dict[bytes, dict[int, bytes]] = {}  # a /Differences array's bytes -> its table


def _remembered(cache: dict, key, make):
    """``make()``, once per key in this worker: every paper's copy of a font is the same
    bytes.  A few dozen fonts at most are kept."""
    if key not in cache:
        if len(cache) >= 64:
            cache.clear()
        cache[key] = make()
    return cache[key]


def font_program(stream):
    """The Type 1 program of a font file, inflated and parsed once per worker."""
    key = (bytes(stream.read_raw_bytes()), int(stream.Length1), int(stream.Length2))
    return _remembered(PROGRAMS, key, lambda: parse_program(bytes(stream.read_bytes()), *key[1:]))


def font_files(pdf) -> list:
    """Each embedded Type 1 font program, the fonts that use it (one in two encodings is
    two fonts of one program), and the glyphs shown from it."""
    files: dict = {}
    for font, glyphs in glyphs_shown(pdf).values():
        descriptor = font.get("/FontDescriptor")
        stream = descriptor.get("/FontFile") if descriptor is not None else None
        if stream is not None:
            _, fonts, known = files.setdefault(stream.objgen, (stream, [], set()))
            fonts.append(font)
            both = None if glyphs is None or known is None else known | glyphs
            files[stream.objgen] = (stream, fonts, both)
    return [entry for entry in files.values() if entry[2] is not None]


# In a content stream: a font chosen ("/F35 10.9091 Tf"), which starts a run of text in it,
# and the strings shown ("(Answ)" or "<0041>").  An inline image's bytes could look like
# either, so a page with one is not read.
FONT_CHOSEN = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s+[-+.\d]+\s+Tf\b")
LITERAL = re.compile(rb"\(((?:\\.|[^\\)])*)\)", re.DOTALL)
HEXADECIMAL = re.compile(rb"<([0-9A-Fa-f\s]*)>")
INLINE_IMAGE = re.compile(rb"\bBI\b")
# A string's escapes are whole (LITERAL), and one ending "\1" must not run into a next
# string starting "23": strings joined by a backslash-newline, which stands for nothing.
LINE_CONTINUED = b"\\\n"


def glyphs_shown(pdf) -> dict:
    """Each font (by its object number) -> (the font, the names of the glyphs the pages show
    in it, or None where that cannot be told for certain).  The content streams are read
    with regular expressions, all the runs of text in one font at once: pdfTeX writes
    plain strings under Tf."""
    fonts_by_number, runs = {}, {}
    for page in pdf.pages:
        resources = page.obj.get("/Resources", {})
        fonts = resources.get("/Font", {})
        content = _content(page)
        if "/XObject" in resources or b"BI" in content and INLINE_IMAGE.search(content):
            return {}  # text inside forms, or an image's bytes: fonts stay whole
        parts = FONT_CHOSEN.split(content)  # text before any font, then name, run, name, run
        by_name: dict[bytes, list[bytes]] = {}
        for name, run in zip(parts[1::2], parts[2::2]):
            by_name.setdefault(name, []).append(run)
        for name, named_runs in by_name.items():  # the page's fonts, each looked up once
            font = fonts.get("/" + name.decode("latin-1"))
            if font is not None:
                fonts_by_number.setdefault(font.objgen, font)
                runs.setdefault(font.objgen, []).extend(named_runs)
    return {number: (font, _glyph_names(font, _codes(b"\n".join(runs.get(number, ())))))
            for number, font in fonts_by_number.items()}


def _codes(text: bytes) -> set[int]:
    """The character codes of every string shown in ``text``."""
    literals = LITERAL.findall(text)
    shown = b"".join(literals)
    if b"\\" not in shown:
        codes = set(shown)
    else:  # the bytes between escapes, and each kind of escape once
        shown = LINE_CONTINUED.join(literals)
        codes = set(STRING_ESCAPE.sub(b"", shown))
        for escape in set(STRING_ESCAPE.findall(shown)):
            codes.update(escaped(escape))
    if b"<" in text:
        codes.update(b"".join(_hex_string(digits) for digits in HEXADECIMAL.findall(text)))
    return codes


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


def _glyph_names(font, codes: set[int]) -> set[bytes] | None:
    table = _encoding_of(font) if font.get("/Subtype") == "/Type1" else None
    if table is None or not codes <= table.keys():
        return None
    return {table[code] for code in codes}


def _encoding_of(font) -> dict[int, bytes] | None:
    """Code -> glyph name: the font's /Differences; with no /Encoding at all, the embedded
    program's own (pdfTeX embeds Computer Modern and Euler so)."""
    if "/Encoding" in font:
        return _differences(font)
    descriptor = font.get("/FontDescriptor")
    stream = descriptor.get("/FontFile") if descriptor is not None else None
    program = font_program(stream) if stream is not None else None
    return builtin_encoding(program.clear) if program is not None else None


def _differences(font) -> dict[int, bytes] | None:
    import pikepdf

    encoding = font.get("/Encoding")
    if not isinstance(encoding, pikepdf.Dictionary) or "/Differences" not in encoding:
        return None
    return _remembered(DIFFERENCES, bytes(encoding.Differences.unparse()),
                       lambda: _table(encoding.Differences))


def _table(differences) -> dict[int, bytes]:
    table, code = {}, 0
    for item in differences:
        if isinstance(item, int):
            code = int(item)
        else:
            table[code] = str(item)[1:].encode()
            code += 1
    return table


if __name__ == "__main__":  # the worker of cut_papers
    request = json.load(sys.stdin)
    cut(Path(request["pdf"]), request["starts"], request["until"], request["names"],
        Path(request["folder"]))
