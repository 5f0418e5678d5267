"""Graded exams: papers that do not give away their keys, problems set again exactly."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import folder_files

from generator.running.exam_key import load_or_create_key

ALL_TYPES = "full,row,mistake,permute,masked,heads,concept"


def record(out) -> dict:
    return json.loads((out / "problems.json").read_text())


def codes_on(paper_text: str) -> list[str]:
    return re.findall(r"Problem id `([^`]+)`", paper_text)


def test_an_exam_paper_shows_opaque_codes_and_no_seed(tmp_path, run_cli):
    assert run_cli("--count", 3, "--seed", 987654, "--out", tmp_path)[0] == 0
    sheet = (tmp_path / "questions.md").read_text() + (tmp_path / "questions.tex").read_text()
    codes = codes_on((tmp_path / "questions.md").read_text())
    assert len(codes) == 3 and all(re.fullmatch(r"[A-Z2-7]{4}-[A-Z2-7]{4}", c) for c in codes)
    assert "987654" not in sheet  # neither the seed nor an id made from it


def test_the_printed_code_does_not_rebuild_the_key_without_the_teachers_secret(tmp_path, run_cli,
                                                                               monkeypatch):
    exam = tmp_path / "exam"
    assert run_cli("--count", 3, "--seed", 7, "--out", exam)[0] == 0
    code = codes_on((exam / "questions.md").read_text())[1]
    # A student with the public tool and the code alone gets nothing ...
    failed, _, err = run_cli("--problem", code, "--out", tmp_path / "student")
    assert failed == 2 and "exam's code" in err and "--record" in err
    # ... and guessing the seed does not help without the teacher's key.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "student-config"))
    assert run_cli("--count", 3, "--seed", 7, "--out", tmp_path / "guess")[0] == 0
    theirs = [p["spec"] for p in record(tmp_path / "guess")["problems"]]
    assert all(p["spec"] not in theirs for p in record(exam)["problems"])
    assert run_cli("--count", 3, "--seed", 7, "--practice", "--out", tmp_path / "practice")[0] == 0
    practice = [p["spec"] for p in record(tmp_path / "practice")["problems"]]
    assert all(p["spec"] not in practice for p in record(exam)["problems"])


def test_the_teachers_key_draws_the_same_exam_again_anywhere(tmp_path, run_cli, monkeypatch):
    key = tmp_path / "course.key"
    assert run_cli("--count", 3, "--seed", 7, "--key-file", key, "--out", tmp_path / "a")[0] == 0
    assert oct(key.stat().st_mode & 0o777) == "0o600" and len(load_or_create_key(key)) == 32
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-machine"))
    assert run_cli("--count", 3, "--seed", 7, "--key-file", key, "--out", tmp_path / "b")[0] == 0
    assert record(tmp_path / "a")["problems"] == record(tmp_path / "b")["problems"]
    assert f"--key-file {key}" in (tmp_path / "a" / "answers.md").read_text()


@pytest.mark.parametrize("difficulty, types", [
    ("easy", "full,row,mistake,permute,masked,concept"),  # heads cannot be drawn at easy
    pytest.param("medium", ALL_TYPES, marks=pytest.mark.slow),
    pytest.param("hard", ALL_TYPES, marks=pytest.mark.slow)])
def test_every_type_is_set_again_exactly_from_its_code_and_the_record(tmp_path, run_cli,
                                                                       difficulty, types):
    exam = tmp_path / "exam"
    assert run_cli("--types", types, "--difficulty", difficulty, "--seed", 3, "--out", exam)[0] == 0
    problems = record(exam)["problems"]
    assert [p["type"] for p in problems] == types.split(",")
    for number, problem in enumerate(problems, start=1):
        again = tmp_path / f"again-{number}"
        code, _, err = run_cli("--problem", problem["id"], "--record", exam / "problems.json",
                               "--out", again)
        assert code == 0, err
        [redrawn] = record(again)["problems"]
        for field in ("id", "type", "spec", "marks", "parts", "steps"):
            assert redrawn[field] == problem[field], field
        assert redrawn["number"] == number
        assert f"## Problem {number}:" in (again / "answers.md").read_text()


def test_a_problem_set_again_takes_no_other_options(tmp_path, run_cli):
    assert run_cli("--count", 2, "--out", tmp_path / "exam")[0] == 0
    code = record(tmp_path / "exam")["problems"][0]["id"]
    failed, _, err = run_cli("--problem", code, "--record", tmp_path / "exam" / "problems.json",
                             "--types", "row", "--out", tmp_path / "o")
    assert failed == 2 and "--record sets the problem exactly as it was set; it takes no --types" in err
    missing, _, err = run_cli("--problem", "AAAA-AAAA", "--record",
                              tmp_path / "exam" / "problems.json", "--out", tmp_path / "o")
    assert missing == 2 and "no problem AAAA-AAAA in this record" in err


@pytest.mark.parametrize("args, count", [
    (["--types", "full,full,full,masked,heads,mistake"], 6),
    (["--types", "full,masked", "--count", "6"], 6),
    (["--types", "row"], 20),
])
def test_a_list_of_types_sets_the_count(tmp_path, run_cli, args, count):
    assert run_cli(*args, "--out", tmp_path)[0] == 0
    problems = record(tmp_path)["problems"]
    assert len(problems) == count
    listed = args[1].split(",")
    assert [p["type"] for p in problems] == (listed * count)[:count]


def test_a_count_that_does_not_repeat_the_list_is_explained(tmp_path, run_cli):
    code, _, err = run_cli("--types", "full,masked,heads", "--count", "20", "--out", tmp_path)
    assert code == 2 and "--types lists 3 problems and --count repeats that list, so --count " \
                          "must be 3, 6, 9, ...; got 20" in err


def test_a_bad_key_file_is_one_line(tmp_path, run_cli):
    key = tmp_path / "bad.key"
    key.write_text("not a key\n")
    code, _, err = run_cli("--count", 1, "--key-file", key, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "not an exam key" in err
    assert run_cli("--count", 1, "--practice", "--key-file", key, "--out", tmp_path / "o")[0] == 2


def test_the_key_is_made_private_on_first_use(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert run_cli("--count", 1, "--out", tmp_path / "o")[0] == 0
    key = tmp_path / "config" / "gen-problems" / "exam.key"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert oct(key.parent.stat().st_mode & 0o777) == "0o700"
    assert os.path.getsize(key) == 65  # 64 hex digits and a newline


def test_papers_state_marks_and_an_estimated_time_per_problem_and_in_all(tmp_path, run_cli):
    assert run_cli("--types", "full,row,concept", "--seed", 3, "--out", tmp_path)[0] == 0
    sheet = (tmp_path / "questions.md").read_text()
    minutes = [int(m) for m in re.findall(r"marks, about (\d+) min\)", sheet)]
    assert len(minutes) == 3 and minutes[0] > minutes[1] >= 1  # a full problem is long, a row short
    total = int(re.search(r"about (\d+) minutes of working by hand", sheet).group(1))
    assert total == sum(minutes)


@pytest.mark.parametrize("budget", [["--minutes", "50"], ["--marks", "30"]])
@pytest.mark.slow
def test_a_set_fits_the_time_or_marks_asked_for(tmp_path, run_cli, budget):
    assert run_cli(*budget, "--seed", 3, "--out", tmp_path)[0] == 0
    sheet = (tmp_path / "questions.md").read_text()
    limit = int(budget[1])
    if budget[0] == "--minutes":
        used = int(re.search(r"about (\d+) minutes of working", sheet).group(1))
    else:
        used = int(re.search(r"(\d+) marks in all", sheet).group(1))
    assert 0 < used <= limit
    assert f"{budget[0]} {limit}" in (tmp_path / "answers.md").read_text()  # the redraw says so


def test_a_budget_too_small_for_one_problem_says_so(tmp_path, run_cli):
    code, _, err = run_cli("--minutes", "2", "--types", "full", "--out", tmp_path)
    assert code == 2 and "--minutes 2: a full problem needs at least" in err
    code, _, err = run_cli("--minutes", "20", "--count", "3", "--out", tmp_path)
    assert code == 2 and "give one of --count, --minutes and --marks" in err


@pytest.mark.slow
def test_no_calculator_problems_need_only_the_printed_exponentials(tmp_path, run_cli):
    assert run_cli("--no-calculator", "--count", 12, "--seed", 5, "--out", tmp_path)[0] == 0
    key = (tmp_path / "answers.md").read_text()
    table = dict(re.findall(r"e\^(-?\d+(?:\.\d+)?) [=≈] (\d+(?:\.\d+)?)", key.split("This set is drawn")[0]))
    assert sorted(float(x) for x in table) == [-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2]
    used = re.findall(r"e\^(-?\d+(?:\.\d+)?) [=≈] (\d+(?:\.\d+)?)", key.split("This set is drawn")[1])
    assert used and all(table.get(x) == value for x, value in used), used[:5]
    for problem in record(tmp_path)["problems"]:  # and the weights follow from those values
        for name, steps in problem["steps"].items():
            if name.endswith("weights") and problem["type"] != "mistake":
                for row in steps:
                    assert abs(sum(w for w in row if w is not None) - 1) < 1e-9


@pytest.mark.parametrize("args, reason", [
    (["--difficulty", "hard"], "needs whole-number entries"),
    (["--difficulty", "easy"], "scores / sqrt(2) are never in the table; use --dk 4"),
])
def test_no_calculator_says_why_it_cannot_draw(tmp_path, run_cli, args, reason):
    code, _, err = run_cli("--no-calculator", *args, "--out", tmp_path)
    assert code == 2 and reason in err


def test_a_scale_for_random_draws(tmp_path, run_cli):
    assert run_cli("--scale", "1", "--count", 4, "--seed", 2, "--out", tmp_path)[0] == 0
    assert all(p["spec"]["scale"] == 1 for p in record(tmp_path)["problems"])
    assert "--scale 1" in (tmp_path / "answers.md").read_text()
    assert run_cli("--no-calculator", "--difficulty", "easy", "--scale", "1/2", "--count", 3,
                   "--out", tmp_path / "easy")[0] == 0
    code, _, err = run_cli("--scale", "-1", "--out", tmp_path / "bad")
    assert code == 2 and "must be positive" in err


@pytest.mark.tex
def test_scale_one_reads_as_unscaled_attention(tmp_path, run_cli):
    assert run_cli("--scale", "1", "--types", "full,masked,row,heads,concept", "--seed", 3,
                   "--pdf", "--out", tmp_path)[0] == 0
    key, sheet = (tmp_path / "answers.tex").read_text(), (tmp_path / "questions.md").read_text()
    assert "Dot{-}product self{-}attention" in key and "Scaled" not in key
    assert r"\tilde{S}" not in key and "1\\, S" not in key and "scale * scores" not in key
    assert r"\operatorname{softmax}\!\left(QK^{\top} + M\right) V" in key
    assert "The scores are not scaled: compute Attention(Q, K, V) = softmax(QK^T) V" in sheet
    problems = record(tmp_path)["problems"]
    assert all("scaled" not in p["steps"] and not any(n.endswith(".scaled") for n in p["steps"])
               for p in problems)
    assert [len(p["choices"]) for p in problems if p["type"] == "concept"] == [3]  # no "without scaling"


def test_a_fraction_prints_as_the_teacher_wrote_it(tmp_path, run_cli):
    spec = tmp_path / "mine.toml"
    spec.write_text('X = [["1/2", 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, "2/3"]]\n'
                    'W_V = [[0.5, 0], [0, 1]]\n')
    assert run_cli("--spec", spec, "--out", tmp_path / "o")[0] == 0
    sheet, tex = (tmp_path / "o" / "questions.md").read_text(), (tmp_path / "o" / "questions.tex").read_text()
    assert "[ 1/2  0 ]" in sheet and "[ 0  2/3 ]" in sheet and "[ 0.5  0 ]" in sheet
    assert r"\frac{1}{2} & 0" in tex and r"\frac{2}{3}" in tex
    again = record(tmp_path / "o")["problems"][0]["spec"]
    assert again["X"][0][0] == "1/2" and again["W_V"][0][0] == 0.5  # the record keeps the form


def test_a_value_exact_in_disguise_prints_exactly():
    import sympy

    from generator.maths.engine import Num
    from generator.rendering.formatting import decimal_text, is_exact_at
    e = sympy.E
    two = Num.of((2 + 4 * e) / (1 + 2 * e))
    assert decimal_text(two, 4) == "2" and is_exact_at(two, 4)
    almost = Num.of((2 + 4 * e) / (1 + 2 * e) + sympy.Rational(1, 10**12))
    assert not is_exact_at(almost, 4) and decimal_text(almost, 4) == "2.0000"


@pytest.mark.tex
def test_a_long_redraw_command_wraps_inside_the_margin(tmp_path, run_cli):
    key = tmp_path / ("a-very-long-folder-name/" * 4) / "exam.key"
    assert run_cli("--count", 1, "--key-file", key, "--pdf", "--out", tmp_path / "o")[0] == 0
    from pypdf import PdfReader
    text = PdfReader(tmp_path / "o" / "answers.pdf").pages[0].extract_text()
    assert "exam.key" in text
    from generator.pdf.build import compile_pdfs
    log = compile_pdfs({"answers.tex": (tmp_path / "o" / "answers.tex").read_text()})["answers.pdf"].log
    assert "Overfull" not in log


def test_the_printed_redraw_command_writes_the_same_set_again(tmp_path, run_cli, monkeypatch):
    """Every option that shapes the set is in the command, each value quoted for a shell: a
    title with a quote and a $, a line break in the instructions, paths with spaces."""
    monkeypatch.chdir(tmp_path)
    Path("my roster.csv").write_text("id,name\na1,Ann\nb2,Bob\n")
    Path("course 1.toml").write_text('institution = "Uni"\n[extra]\nroom = "B12"\n')
    given = ["--count", "2", "--seed", "5", "--title", "Mid-term: it's $HOME", "--course",
             "ML 101", "--date", "1 May", "--instructions", "Line one\nline two", "--config",
             "course 1.toml", "--students", "my roster.csv", "--scale", "sqrt(2)/4",
             "--format", "html,moodle", "--format", "md"]
    assert run_cli(*given, "--out", "a")[0] == 0
    key = Path("a/answers.md").read_text()
    command = re.search(r"drawn again by (`+) ?(gen-problems .+?) ?\1\.", key).group(2)
    assert "\n" not in command
    # The shell's own reading of the command (bash: $'...' for the line break).
    printed = "printf '%s\\0' " + command.removeprefix("gen-problems ")
    words = subprocess.run(["bash", "-c", printed], capture_output=True, text=True,
                           check=True).stdout.split("\0")[:-1]
    for option in ("--title", "--course", "--date", "--instructions", "--config", "--students",
                   "--scale", "--format"):
        assert option in words, option
    assert words[words.index("--title") + 1] == "Mid-term: it's $HOME"
    assert words[words.index("--instructions") + 1] == "Line one\nline two"
    assert run_cli(*words, "--out", "b")[0] == 0
    first, again = folder_files(Path("a")), folder_files(Path("b"))
    assert sorted(first) == sorted(again)
    assert "moodle.xml" in first and "practice/version-01.html" in first
    assert all(first[name] == again[name] for name in first if not name.startswith(".gen-problems"))


def test_the_redraw_command_asks_for_the_pdfs_it_had():
    from generator.cli import parse_options
    from generator.running.pipeline import draw_command
    options = parse_options(["--count", "3", "--pdf", "--templates", "my templates",
                             "--institution", "Uni", "--format", "qti"]).for_run()
    assert draw_command(options, 9).endswith(
        " --institution Uni --templates 'my templates' --format qti --pdf")
