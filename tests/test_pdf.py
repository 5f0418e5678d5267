"""The PDF path, compiled with real TeX (always in CI) and read back with pypdf."""

import json
import os
import re
import shutil

import pytest
from conftest import folder_files, module05_record, render
from pypdf import PdfReader

from generator.maths.spec import spec_from_record
from generator.pdf.build import compile_pdfs
from generator.rendering.formatting import decimal_text
from generator.rendering.render import render_latex
from generator.running.pipeline import solve_checked

pytestmark = [pytest.mark.tex, pytest.mark.skipif(
    shutil.which("pdflatex") is None and not os.environ.get("CI"),
    reason="pdflatex is not installed (bash scripts/setup.sh installs it; CI always has it)")]

FIVE_LINES = '''title = "Worked example"
X   = [[1, 0], [0, 1]]
W_Q = [[1, 0], [0, 1]]
W_K = [[1, 0], [0, 2]]
W_V = [[1, 0], [0, 1]]
'''
SEED_ANSWERS = ["0.7071", "1.4142", "2.0281", "3.0281", "4.1133", "5.1133",
                "0.6698", "0.3302", "0.1956", "0.8044"]


def pdf_text(path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(path).pages)


def shown_row(row) -> str:
    """A matrix row as the PDF's text shows it: its numbers at 4 decimals, spaced."""
    return " ".join(decimal_text(n, 4) for n in row).replace("-inf", "−∞").replace("\u2212", "-")


def flat(text: str) -> str:
    """One line, single spaces, ASCII minus signs: TeX's math minus reads back as U+2212."""
    return " ".join(text.replace("\u2212", "-").split())


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory):
    from generator.cli import main
    folder = tmp_path_factory.mktemp("seed")
    (folder / "seed.toml").write_text(FIVE_LINES)
    assert main(["--spec", str(folder / "seed.toml"), "--out", str(folder / "out"), "--pdf"]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def set_of_20(tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("set") / "out"
    assert main(["--count", "20", "--seed", "2024", "--out", str(out), "--pdf"]) == 0
    return out


def test_answer_key_has_every_number_of_the_seed(seed_run):
    answers = pdf_text(seed_run / "answers.pdf")
    for number in SEED_ANSWERS:
        assert number in answers
    assert "Row 1: e0.7071 ≈ 2.0281, e0 = 1; sum = 3.0281" in answers


def test_question_sheet_gives_the_matrices_but_no_answers(seed_run):
    questions = pdf_text(seed_run / "questions.pdf")
    assert "Problem id seed-1" in questions
    assert re.search(r"WK =\s*\[\s*1 0\s*0 2\s*\]", questions)
    for number in SEED_ANSWERS:
        assert number not in questions


def test_all_outputs_land_in_the_folder(seed_run):
    assert sorted(p.name for p in seed_run.iterdir()) == [
        ".gen-problems", "answers.md", "answers.pdf", "answers.tex", "problems.json",
        "questions.md", "questions.pdf", "questions.tex"]
    assert sorted(p.name for p in (seed_run / ".gen-problems").iterdir()) == ["lock", "manifest.json"]


def test_every_problem_of_a_set_in_both_pdfs_with_matching_numbers(set_of_20):
    problems = json.loads((set_of_20 / "problems.json").read_text())["problems"]
    questions = pdf_text(set_of_20 / "questions.pdf").split("Problem id ")[1:]
    answers = pdf_text(set_of_20 / "answers.pdf").split("Problem id ")[1:]
    assert len(problems) == len(questions) == len(answers) == 20
    for problem, question, answer in zip(problems, questions, answers):
        assert question.startswith(problem["id"]) and answer.startswith(problem["id"])
        solved = solve_checked(spec_from_record(problem["spec"], problem["id"]))
        assert solved.kind == problem["type"]
        for step in solved.given:
            for text in (flat(question), flat(answer)):
                assert all(shown_row(row) in text for row in step.entries), step.name
        for part in solved.parts:
            for step in part.steps:
                assert all(shown_row(row) in flat(answer) for row in step.entries), part.task


def test_same_seed_same_bytes(set_of_20, tmp_path):
    from generator.cli import main
    assert main(["--count", "20", "--seed", "2024", "--out", str(tmp_path), "--pdf"]) == 0
    for name in ("questions.tex", "answers.tex", "problems.json", "questions.pdf", "answers.pdf"):
        assert (tmp_path / name).read_bytes() == (set_of_20 / name).read_bytes(), name


TITLE = r"Q&A 100% $5 #1 a_b {x} ~y^z \input{/etc/passwd} \write18{touch /tmp/pwned-by-title}"


def test_tex_special_characters_print_literally_and_run_nothing(tmp_path):
    from generator.cli import main
    code = main(["--count", "1", "--seed", "1", "--out", str(tmp_path), "--pdf",
                 "--title", TITLE, "--course", "C++ & R_2 {advanced}"])
    assert code == 0
    text = pdf_text(tmp_path / "answers.pdf")
    assert TITLE in text
    assert "C++ & R_2 {advanced}" in text
    assert "root:" not in text
    assert not os.path.exists("/tmp/pwned-by-title")


def test_no_overfull_boxes_up_to_six_tokens_and_largest_matrices_fit():
    def matrix(rows, columns):
        return [[f"{((3 * i + 7 * j) % 19 - 9) / 10}" for j in range(columns)] for i in range(rows)]

    shapes = [(6, 16, 16, 16, "none"), (6, 4, 4, 4, "causal"), (5, 8, 3, 5, "none"),
              (6, 2, 2, 2, "causal"), (12, 16, 16, 16, "none")]
    solutions = [solve_checked(spec_from_record(
        {"X": matrix(n, d), "W_Q": matrix(d, k), "W_K": matrix(d, k)[::-1], "W_V": matrix(d, v),
         "mask": mask}, f"size-{n}x{d}")) for n, d, k, v, mask in shapes]
    solutions.append(solve_checked(spec_from_record(module05_record(), "module05")))
    compiled = compile_pdfs(render(render_latex, solutions))
    for name, document in compiled.items():
        assert "Overfull" not in document.log, name
        assert document.pdf.startswith(b"%PDF")


def test_tex_failure_reports_the_log_and_keeps_earlier_outputs(tmp_path, run_cli):
    out = tmp_path / "out"
    assert run_cli("--count", "1", "--seed", "3", "--out", out)[0] == 0
    before = folder_files(out)
    broken = tmp_path / "mine" / "latex" / "steps"
    broken.mkdir(parents=True)
    (broken / "softmax.tex.j2").write_text(r"\undefinedcommandhere" + "\n")
    code, _, err = run_cli("--count", "1", "--seed", "3", "--out", out, "--pdf",
                           "--templates", tmp_path / "mine")
    assert code == 1
    assert "pdflatex failed on" in err and "answers.tex" in err
    assert "Undefined control sequence" in err and err.count("\n") == 1
    kept = out / ".gen-problems" / "tex-failure"
    assert f"kept in {kept}/" in err
    assert {"answers.tex", "answers.log"} <= {p.name for p in kept.iterdir()}
    assert not list(out.glob(".gen-problems/work-*"))  # the run's scratch is gone
    after = {name: data for name, data in folder_files(out).items() if "/tex-failure/" not in name}
    assert after == before


def test_pdf_without_tex_says_how_to_install(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run_cli("--count", "1", "--out", tmp_path / "o", "--pdf")
    assert code == 2
    assert err.count("\n") == 1 and "apt-get install --no-install-recommends" in err
    assert not (tmp_path / "o").exists()


def test_the_keys_redraw_command_pastes_back_as_it_was(tmp_path, run_cli):
    """A title with quotes: the PDF's text (what a copy and paste takes) is the command the
    Markdown key prints, straight quotes and all, broken only between shell words."""
    title = "Midterm 1: O'Brien's \"test\""
    assert run_cli("--count", 1, "--seed", 3, "--title", title, "--pdf", "--out", tmp_path)[0] == 0
    command = re.search(r"drawn again by `(.*)`\.", (tmp_path / "answers.md").read_text()).group(1)
    text = " ".join(PdfReader(tmp_path / "answers.pdf").pages[0].extract_text().split())
    pasted = text[text.index("drawn again by") + len("drawn again by "):][:len(command)]
    assert pasted == " ".join(command.split())  # the title's own quotes may be typeset curly


def test_a_heads_note_names_the_heads_values_as_maths(tmp_path, run_cli):
    """'Reading the output' of head 1 reads rows of V₁, typeset, not the text V_{1}."""
    assert run_cli("--types", "heads", "--count", 1, "--seed", 3, "--out", tmp_path)[0] == 0
    key = (tmp_path / "answers.tex").read_text()
    assert "mixes the rows of $V_{1}$" in key and r"V\_" not in key
