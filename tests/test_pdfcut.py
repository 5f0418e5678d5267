"""Each student's PDF carries only the font data its own pages use, as compact (CFF)
fonts with the same outlines, and looks exactly like its pages in the combined document
(rendered by poppler pixel for pixel at screen size, and within anti-aliasing at print
detail)."""

from __future__ import annotations

import io
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy
import pikepdf
import pytest
from fontTools.cffLib import CFFFontSet, TopDictDecompiler
from fontTools.misc.psCharStrings import T1CharString
from fontTools.pens.recordingPen import RecordingPen
from hypothesis import given, settings, strategies

from generator.pdf import cff, pdfcut, type1
from generator.rendering.render import BUILTIN_TEMPLATES

pytestmark = [pytest.mark.tex,
              pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftoppm") is None,
                                 reason="needs pdflatex and poppler-utils")]

ROSTER = "id,name\n" + "".join(f"s{i},Student {name} {i}\n" for i, name in
                               enumerate(["Ada", "Zoë Ångström", "Łukasz", "Grace", "Núñez", "Ola"]))


@pytest.fixture(scope="module")
def class_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("class")
    (folder / "roster.csv").write_text(ROSTER, encoding="utf-8")
    from generator.cli import main
    assert main(["--count", "3", "--seed", "4", "--pdf", "--students", str(folder / "roster.csv"),
                 "--out", str(folder / "out")]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def cm_class_run(tmp_path_factory) -> Path:
    """A teacher's own preamble with Computer Modern and Euler, which pdfTeX embeds with the
    fonts' own encodings (no /Differences for the cutter to read the glyph names from)."""
    folder = tmp_path_factory.mktemp("cm")
    (folder / "roster.csv").write_text(ROSTER, encoding="utf-8")
    preamble = (BUILTIN_TEMPLATES / "latex" / "preamble.tex.j2").read_text(encoding="utf-8")
    (folder / "templates" / "latex").mkdir(parents=True)
    (folder / "templates" / "latex" / "preamble.tex.j2").write_text(
        preamble.replace(r"\usepackage[T1]{fontenc}", "").replace(r"\usepackage{lmodern}",
                                                                  r"\usepackage{euler}"),
        encoding="utf-8")
    from generator.cli import main
    assert main(["--count", "3", "--seed", "4", "--pdf", "--students", str(folder / "roster.csv"),
                 "--templates", str(folder / "templates"), "--out", str(folder / "out")]) == 0
    return folder / "out"


RUNS = ["class_run", "cm_class_run"]


def pages_as_png(pdf: Path, first: int, last: int, folder: Path) -> list[bytes]:
    subprocess.run(["pdftoppm", "-r", "50", "-png", "-f", str(first), "-l", str(last), pdf,
                    folder / "page"], check=True)
    pages = sorted(folder.glob("page-*.png"))
    data = [page.read_bytes() for page in pages]
    for page in pages:
        page.unlink()
    return data


@pytest.mark.parametrize("run", RUNS)
def test_every_paper_looks_exactly_like_its_pages_in_the_combined_document(run, request, tmp_path):
    class_run = request.getfixturevalue(run)
    combined = class_run / "questions.pdf"
    page = 1
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        count = len(pikepdf.open(paper).pages)
        assert pages_as_png(paper, 1, count, tmp_path) == \
            pages_as_png(combined, page, page + count - 1, tmp_path), paper.name
        page += count
    assert page - 1 == len(pikepdf.open(combined).pages)


@pytest.mark.parametrize("run", RUNS)
def test_chromes_renderer_draws_every_paper_as_its_pages(run, request):
    """PDFium (Chrome's PDF viewer, where many students open their paper) draws each paper's
    compact fonts exactly as the combined document's Type 1 fonts, at screen and print
    detail, and reads the same text from them."""
    pdfium = pytest.importorskip("pypdfium2")
    class_run = request.getfixturevalue(run)
    combined, page = pdfium.PdfDocument(class_run / "questions.pdf"), 0
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        mine = pdfium.PdfDocument(paper)
        for index in range(len(mine)):
            theirs = combined[page + index]
            for scale in (50 / 72, 150 / 72):
                assert numpy.array_equal(mine[index].render(scale=scale).to_numpy(),
                                         theirs.render(scale=scale).to_numpy()), paper.name
            assert (mine[index].get_textpage().get_text_range()
                    == theirs.get_textpage().get_text_range()), paper.name
        page += len(mine)
    assert page == len(combined)


def test_every_paper_still_has_its_text(class_run):
    """The cut fonts keep the text searchable: each paper names its student, as typed."""
    names = [line.split(",", 1)[1] for line in ROSTER.splitlines()[1:]]
    papers = sorted((class_run / "papers").glob("*.pdf"))
    assert len(papers) == len(names)
    for paper, name in zip(papers, names):
        text = subprocess.run(["pdftotext", paper, "-"], capture_output=True, text=True,
                              check=True).stdout
        assert name in text and "Problem 1" in text, paper.name


def test_the_answer_keys_too(class_run, tmp_path):
    combined, page = class_run / "answers.pdf", 1
    for key in sorted((class_run / "keys").glob("*.pdf")):
        count = len(pikepdf.open(key).pages)
        assert pages_as_png(key, 1, count, tmp_path) == \
            pages_as_png(combined, page, page + count - 1, tmp_path), key.name
        page += count


def test_papers_cut_on_two_cores_are_cut_at_once_and_the_same(class_run, tmp_path, monkeypatch):
    """Each worker is handed its papers before any is waited for (so they work side by side),
    and the papers are the same bytes however many workers cut them."""
    papers = sorted((class_run / "papers").glob("*.pdf"))
    starts, page = [], 0
    for paper in papers:
        starts.append(page)
        page += len(pikepdf.open(paper).pages)
    workers, all_handed_over = [], []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            workers.append(self)

        def wait(self, timeout=None):
            all_handed_over.append(all(worker.stdin.closed for worker in workers))
            return super().wait(timeout)

    monkeypatch.setattr(pdfcut.subprocess, "Popen", Recorded)
    monkeypatch.setattr(pdfcut, "PAPERS_PER_WORKER", 2)
    pdfcut.cut_papers(class_run / "questions.pdf", starts, [p.name for p in papers], tmp_path, cores=2)
    assert len(workers) == 2 and all_handed_over and all(all_handed_over)
    assert {p.name: p.read_bytes() for p in papers} == \
        {p.name: (tmp_path / p.name).read_bytes() for p in papers}


def test_a_worker_that_fails_is_one_clear_error(tmp_path):
    """Both workers are waited for; the failure names the document and what the worker said."""
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a PDF")
    with pytest.raises(OSError, match=r"^cutting broken.pdf into papers failed: .*PdfError"):
        pdfcut.cut_papers(broken, list(range(40)), [f"{i}.pdf" for i in range(40)], tmp_path / "out",
                          cores=2)


def compact_font(descriptor):
    """The CFF font a descriptor embeds, read by fontTools (which checks its structure)."""
    assert "/FontFile" not in descriptor and descriptor.FontFile3.Subtype == "/Type1C"
    fonts = CFFFontSet()
    fonts.decompile(io.BytesIO(bytes(descriptor.FontFile3.read_bytes())), None)
    return fonts[fonts.fontNames[0]]


def test_a_paper_carries_only_the_glyphs_it_shows_as_compact_fonts(class_run):
    """Cut plainly, a paper holds every glyph of every font in Type 1 (some 125 kB); each is
    now a CFF font of just the glyphs its pages show."""
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        with pikepdf.open(paper) as pdf:
            files = pdfcut.font_files(pdf)
            assert not files  # no Type 1 program is left
            shown: dict = {}  # fonts in two encodings share a descriptor, and their glyphs
            for font, glyphs in pdfcut.glyphs_shown(pdf).values():
                _, names = shown.setdefault(font.FontDescriptor.objgen, (font.FontDescriptor, set()))
                names |= {g.decode() for g in glyphs}
            assert shown
            for descriptor, names in shown.values():
                font = compact_font(descriptor)
                assert set(font.CharStrings.keys()) == names | {".notdef"}
                assert "(on behalf of TeX USERS GROUPS)" in font.Notice  # the notice, whole
        assert paper.stat().st_size < 60_000, paper.name


def test_fonts_in_their_own_encoding_are_cut_and_compact_too(cm_class_run):
    """With no /Encoding in the font, the codes are read from the program's own encoding,
    and the compact font gets a /Differences that says the same (CFF keeps no such table)."""
    for paper in sorted((cm_class_run / "papers").glob("*.pdf")):
        with pikepdf.open(paper) as pdf:
            shown = pdfcut.glyphs_shown(pdf)
            assert shown and not pdfcut.font_files(pdf)  # every font is compact
            for font, glyphs in shown.values():
                names = set(compact_font(font.FontDescriptor).CharStrings.keys())
                assert {g.decode() for g in glyphs} <= names
                differences = pdfcut._differences(font)
                assert {name.decode() for name in differences.values()} <= names
        assert paper.stat().st_size < 60_000, paper.name


def outline(charstring) -> list:
    """A glyph's contours as points, with a point inside a straight run left out (Type 2's
    shorter operators may join two collinear lines into one)."""
    pen = RecordingPen()
    charstring.draw(pen)
    contours, points = [], []
    for operator, arguments in pen.value:
        if operator in ("closePath", "endPath"):
            contours.append(points)
            points = []
            continue
        if (operator == "lineTo" and len(points) >= 2 and points[-1][0] == "lineTo"
                and _collinear(points[-2][1][-1], points[-1][1][-1], arguments[-1])):
            points.pop()
        points.append((operator, tuple(arguments)))
    return contours + ([points] if points else [])


def _collinear(a, b, c) -> bool:
    return (b[0] - a[0]) * (c[1] - b[1]) == (b[1] - a[1]) * (c[0] - b[0])


def test_every_glyph_keeps_its_outline_point_for_point_and_its_width(class_run):
    with pikepdf.open(class_run / "questions.pdf") as combined:
        programs = {}
        for stream, fonts, _ in pdfcut.font_files(combined):
            program = type1.parse_program(bytes(stream.read_bytes()), int(stream.Length1),
                                          int(stream.Length2))
            subrs = [T1CharString(bytecode=entry.code) for entry in program.subrs]
            for font in fonts:
                programs[str(font.FontDescriptor.FontName)] = (program, subrs)
    checked = 0
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        with pikepdf.open(paper) as pdf:
            for font, _ in pdfcut.glyphs_shown(pdf).values():
                program, subrs = programs[str(font.FontDescriptor.FontName)]
                cff = compact_font(font.FontDescriptor)
                for name in cff.CharStrings.keys():
                    original = T1CharString(bytecode=program.glyphs[name.encode()].code, subrs=subrs)
                    compact = cff.CharStrings[name]
                    assert outline(compact) == outline(original), name
                    # a width such as 14886/29 is kept to Type 2's 1/65536 (PDF's /Widths place the glyphs)
                    assert abs(compact.width - original.width) <= 2 ** -16, name
                    checked += 1
    assert checked > 500


def test_every_paper_looks_like_its_pages_at_print_detail(class_run, tmp_path):
    """At 150 dpi the compact fonts' unhinted outlines are anti-aliased a shade differently
    here and there; a glyph missing, swapped or moved by a pixel is not."""
    combined, page = class_run / "questions.pdf", 1
    for paper in sorted((class_run / "papers").glob("*.pdf"))[:2]:
        count = len(pikepdf.open(paper).pages)
        mine = grey_pages(paper, 1, count, tmp_path)
        theirs = grey_pages(combined, page, page + count - 1, tmp_path)
        for a, b in zip(mine, theirs):
            assert a.shape == b.shape
            assert blocks(a, b).max() < 24, paper.name  # 4x4 pixel blocks, mean difference
        page += count


def grey_pages(pdf: Path, first: int, last: int, folder: Path) -> list:
    subprocess.run(["pdftoppm", "-r", "150", "-gray", "-f", str(first), "-l", str(last), pdf,
                    folder / "grey"], check=True)
    pages = sorted(folder.glob("grey-*.pgm"))
    images = []
    for page in pages:
        header, width_height, _, data = page.read_bytes().split(b"\n", 3)
        width, height = map(int, width_height.split())
        images.append(numpy.frombuffer(data, numpy.uint8).reshape(height, width).astype(int))
        page.unlink()
    return images


def blocks(a, b, size: int = 4):
    height, width = (a.shape[0] // size) * size, (a.shape[1] // size) * size
    difference = numpy.abs(a - b)[:height, :width]
    return difference.reshape(height // size, size, width // size, size).mean(axis=(1, 3))


def test_a_font_that_cannot_be_rewritten_stays_type_1(class_run):
    """A composite accent (seac names two other glyphs) or an unusual font matrix: None, and
    the cutter keeps the Type 1 font (cut, or whole)."""
    with pikepdf.open(class_run / "questions.pdf") as combined:
        stream, _, glyphs = pdfcut.font_files(combined)[0]
        program = type1.parse_program(bytes(stream.read_bytes()), int(stream.Length1),
                                      int(stream.Length2))
    assert cff.type1c(program, glyphs) is not None
    seac = type1._encoded(0) + type1._encoded(0) + type1._encoded(0) + type1._encoded(65) + \
        type1._encoded(194) + bytes([12, 6])
    name = sorted(glyphs)[0]
    accented = replace(program, glyphs={**program.glyphs, name: replace(program.glyphs[name],
                                                                        code=seac)})
    assert cff.type1c(accented, glyphs) is None
    skewed = replace(program, clear=program.clear.replace(b"0.001 0 0 0.001", b"0.002 0 0 0.002"))
    assert cff.type1c(skewed, glyphs) is None


def test_where_no_font_can_be_rewritten_each_is_cut_as_type_1(class_run, monkeypatch):
    monkeypatch.setattr(pdfcut, "type1c", lambda program, glyphs: None)
    with pikepdf.open(class_run / "questions.pdf") as combined, pikepdf.new() as paper:
        paper.pages.extend(combined.pages[:2])
        before = {stream.objgen: int(stream.Length2) for stream, _, _ in pdfcut.font_files(paper)}
        pdfcut.subset_fonts(paper)
        cut = 0
        for stream, _, glyphs in pdfcut.font_files(paper):
            program = type1.parse_program(bytes(stream.read_bytes()), int(stream.Length1),
                                          int(stream.Length2))
            if before[stream.objgen] >= pdfcut.WORTH_CUTTING:  # a smaller one stays whole
                assert program.glyphs.keys() == glyphs | {b".notdef"}  # nothing else is left
                cut += 1
        assert cut >= 3


def test_dict_numbers_read_back_as_written():
    for value in (-40000, -1132, -1131, -108, -107, 0, 107, 108, 1131, 1132, 40000, 70000):
        decoded = TopDictDecompiler([], None)
        decoded.decompile(cff._integer(value) + b"\x0c\x03")  # then "UnderlinePosition"
        assert decoded.getDict()["UnderlinePosition"] == value
    for value in (-14.04, 0.5, -0.25, 12.0):
        decoded = TopDictDecompiler([], None)
        decoded.decompile(cff._real(value) + b"\x0c\x02")
        assert decoded.getDict()["ItalicAngle"] == value


def test_subroutine_numbers_are_rewritten_where_they_are_written():
    # "5 callsubr" in a glyph: after renumbering subroutine 5 as 4, the glyph pushes 4.
    glyph = type1._encoded(5) + bytes([10, 14])  # 5 callsubr endchar
    subrs = [bytes([11])] * 6
    called, sites = type1.subrs_called(b"a", glyph, subrs)
    assert called == {5}
    where = {("glyph", b"a"): [site[2:] for site in sites]}
    assert type1._renumbered(glyph, where, ("glyph", b"a"), {5: 4}) == type1._encoded(4) + bytes([10, 14])


def test_hint_replacement_numbers_come_back_through_pop():
    # "7 4 callsubr": subroutine 4 runs "1 3 callothersubr pop callsubr", calling 7.
    four = type1._encoded(1) + type1._encoded(3) + bytes([12, 16, 12, 17, 10, 11])
    subrs = [bytes([11])] * 4 + [four] + [bytes([11])] * 3
    glyph = type1._encoded(7) + type1._encoded(4) + bytes([10, 14])
    called, sites = type1.subrs_called(b"a", glyph, subrs)
    assert called == {4, 7}
    assert {site[2:] for site in sites if site[:2] == ("glyph", b"a")} == {(0, 1, 7), (1, 1, 4)}


def test_a_number_computed_at_run_time_keeps_the_font_whole():
    glyph = type1._encoded(10) + type1._encoded(2) + bytes([12, 12, 10, 14])  # 10 2 div callsubr
    assert type1.subrs_called(b"a", glyph, [bytes([11])] * 6) is None


@pytest.mark.parametrize("value", [-1131, -108, -107, 0, 107, 108, 1131, 1132, -40000, 70000])
def test_numbers_are_written_as_the_spec_reads_them(value):
    assert type1._number(type1._encoded(value), 0) == (value, len(type1._encoded(value)))


def test_eexec_round_trip():
    data = bytes(range(256)) * 3
    assert type1.eexec(type1.eexec(data, 55665, encrypt=True), 55665) == data


def test_a_fonts_own_encoding_is_read_from_its_clear_text():
    listed = (b"/FontName /CMR10 def\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n"
              b"dup 65 /A put\ndup 100 /definite put\ndup 12 /fi put\nreadonly def\ncurrentdict end\n")
    assert type1.builtin_encoding(listed) == {65: b"A", 100: b"definite", 12: b"fi"}
    assert type1.builtin_encoding(b"/Encoding StandardEncoding def\n") is None


@given(strategies.lists(strategies.lists(strategies.sampled_from(
    [b"a", b"1", b"7", b"23", b"\\1", b"\\12", b"\\101", b"\\(", b"\\)", b"\\\\", b"\\n", b"\\\n",
     b"\\\r\n", b"\\q", b"\xe9", b" "]), max_size=6), max_size=8))
@settings(max_examples=300, deadline=None)
def test_strings_unescaped_in_one_pass_show_what_each_shows_alone(strings):
    """The cutter reads a run's strings in one pass; it must find the codes that unescaping
    each string on its own finds ("\\1" closing one string and "23" opening the next are
    codes 1, 50, 51, never the "\\123" of octal 123)."""
    literals = [b"".join(parts) for parts in strings]
    text = b" ".join(b"(" + literal + b") Tj" for literal in literals)
    each = [type1.STRING_ESCAPE.sub(lambda m: type1.escaped(m.group(1)), literal) for literal in literals]
    alone = set(b"".join(each))
    assert pdfcut._codes(text) == alone
