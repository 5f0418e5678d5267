"""Chinese documents as typeset: lines inside the margins, bold headings, Chinese punctuation."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from generator.pdf.build import compile_pdfs

# The lecturer's midterm (issue 36): its heads problem ran past the margin in Chinese.
MIDTERM = ("--minutes", 50, "--types", "full,masked,heads,backward", "--seed", 7)


@pytest.fixture(scope="module")
def chinese_midterm(tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("zh") / "out"
    assert main([*map(str, MIDTERM), "--lang", "zh-Hans", "--out", str(out)]) == 0
    return {name: (out / name).read_text(encoding="utf-8") for name in ("questions.tex", "answers.tex")}


@pytest.mark.tex
@pytest.mark.skipif(shutil.which("lualatex") is None, reason="lualatex is not installed")
def test_chinese_lines_with_inline_maths_stay_inside_the_margins_and_headings_are_bold(
        chinese_midterm, tmp_path):
    compiled = compile_pdfs(chinese_midterm)
    for name, document in compiled.items():
        assert "Overfull \\hbox" not in document.log, name
        (tmp_path / name).write_bytes(document.pdf)
    if shutil.which("pdffonts"):
        fonts = subprocess.run(["pdffonts", tmp_path / "questions.pdf"], capture_output=True,
                               text=True, check=True).stdout
        assert "NotoSerifCJKsc-Bold" in fonts and "NotoSerifCJKsc-Regular" in fonts


def test_a_chinese_formula_breaks_after_its_equals_sign_only_as_a_last_resort(chinese_midterm):
    preamble = chinese_midterm["answers.tex"].split("\\begin{document}")[0]
    assert re.search(r"^\\relpenalty=\d{4,}$", preamble, re.MULTILINE)


def test_the_chinese_working_is_punctuated_in_chinese_outside_maths(chinese_midterm):
    key = chinese_midterm["answers.tex"]
    rows = [line for line in key.splitlines() if line.startswith("第 1 行： $e^")]
    assert rows
    for row in rows:
        assert "$, $" not in row and "$;" not in row and row.endswith("$；"), row
    assert re.search(r"\\hspace\{0\.5em plus 1fill\}（\d+ 分，约 \d+ 分钟）\}", key)


def test_english_and_german_working_keep_their_separators(tmp_path, run_cli):
    for tag, separator in (("en", "$, $"), ("de", "$; $")):
        out = tmp_path / tag
        assert run_cli("--types", "full", "--count", 1, "--lang", tag, "--out", out)[0] == 0
        key = (out / "answers.tex").read_text(encoding="utf-8")
        assert separator in key and "（" not in key and "；" not in key


@pytest.mark.parametrize("tag, unit", [("en", "mark"), ("de", "Pkt."), ("es", "punto"),
                                       ("zh-Hans", "分")])
def test_a_heads_marks_are_never_split_from_their_number(tmp_path, run_cli, tag, unit):
    out = tmp_path / tag
    assert run_cli("--types", "heads", "--count", 1, "--seed", 7, "--lang", tag, "--out", out)[0] == 0
    key = "\n".join(line for line in (out / "answers.tex").read_text(encoding="utf-8").splitlines()
                    if "\\qformat" not in line)  # a problem's heading is one box, never broken
    marks = r"[(（][^()（）]*\d{}" + re.escape(unit) + r"[^()（）]*[)）]"  # "(1 mark a head)"
    assert re.search(marks.format("~"), key) and not re.search(marks.format(" "), key)
