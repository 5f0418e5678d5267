"""Each student's PDF carries only the font data its own pages use, and looks exactly
like its pages in the combined document (rendered by poppler, pixel for pixel)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pikepdf
import pytest

from generator import pdfcut, type1

pytestmark = pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftoppm") is None,
                                reason="needs pdflatex and poppler-utils")

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


def pages_as_png(pdf: Path, first: int, last: int, folder: Path) -> list[bytes]:
    subprocess.run(["pdftoppm", "-r", "50", "-png", "-f", str(first), "-l", str(last), pdf,
                    folder / "page"], check=True)
    pages = sorted(folder.glob("page-*.png"))
    data = [page.read_bytes() for page in pages]
    for page in pages:
        page.unlink()
    return data


def test_every_paper_looks_exactly_like_its_pages_in_the_combined_document(class_run, tmp_path):
    combined = class_run / "questions.pdf"
    page = 1
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        count = len(pikepdf.open(paper).pages)
        assert pages_as_png(paper, 1, count, tmp_path) == \
            pages_as_png(combined, page, page + count - 1, tmp_path), paper.name
        page += count
    assert page - 1 == len(pikepdf.open(combined).pages)


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


def test_a_paper_carries_a_fraction_of_the_fonts(class_run):
    """Cut plainly, a paper holds every subroutine of every font (some 125 kB)."""
    for paper in sorted((class_run / "papers").glob("*.pdf")):
        with pikepdf.open(paper) as pdf:
            files = pdfcut.font_files(pdf)
            assert files
            for stream, _, glyphs in files:
                program = type1.parse_program(bytes(stream.read_bytes()), int(stream.Length1),
                                               int(stream.Length2))
                assert program is not None
                assert program.glyphs.keys() == glyphs | {b".notdef"}  # nothing else is left
        assert paper.stat().st_size < 120_000, paper.name


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
