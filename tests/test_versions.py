"""A paper per student or per version, from one seed and one TeX run per document."""

import json
import os
import shutil

import pytest
from pypdf import PdfReader

NO_TEX = pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                            reason="pdflatex is not installed")


def needs_tex(test):
    """A test that compiles PDFs: marked tex, and skipped where there is no TeX (CI has it)."""
    return pytest.mark.tex(NO_TEX(test))

ROSTER = 'id,name,email\ns001,Ada Lovelace,a@x\ns002,"Smith & Jones, $5 #1 {x}_y ~z^",b@x\ns003,Emile Zola,c@x\n'


def text_of(path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(path).pages)


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    from generator.cli import main
    folder = tmp_path_factory.mktemp("class")
    (folder / "roster.csv").write_text(ROSTER)
    out = folder / "out"
    args = ["--count", "2", "--seed", "8", "--students", str(folder / "roster.csv"),
            "--versions", "2", "--practice", "--out", str(out)]
    if shutil.which("pdflatex"):
        args.append("--pdf")
    assert main(args) == 0
    return out


def test_students_cycle_through_the_versions(class_run):
    papers = json.loads((class_run / "problems.json").read_text())["papers"]
    assert [(p["student_id"], p["version"]) for p in papers] == [("s001", 1), ("s002", 2), ("s003", 1)]
    assert papers[0]["problems"] == papers[2]["problems"] == ["M8-1", "M8-2"]
    assert papers[1]["problems"] == ["M8v2-1", "M8v2-2"]
    problems = json.loads((class_run / "problems.json").read_text())["problems"]
    assert [(p["id"], p["version"]) for p in problems] == [
        ("M8-1", 1), ("M8-2", 1), ("M8v2-1", 2), ("M8v2-2", 2)]


def test_names_print_literally_in_the_sources(class_run):
    questions = (class_run / "questions.tex").read_text()
    assert r"Smith \& Jones, \$5 \#1 \{x\}\_y \textasciitilde{}z\textasciicircum{}" in questions
    assert questions.count(r"\clearpage") == 2  # three papers, each from a new page


@needs_tex
def test_one_pdf_per_student_and_per_version_key(class_run):
    assert sorted(p.name for p in (class_run / "papers").iterdir()) == [
        "001-s001.pdf", "002-s002.pdf", "003-s003.pdf"]
    assert sorted(p.name for p in (class_run / "keys").iterdir()) == ["version-01.pdf", "version-02.pdf"]
    second = text_of(class_run / "papers" / "002-s002.pdf")
    assert "Smith & Jones, $5 #1 {x}_y ~z^" in second and "Questions, version 2" in second
    assert "M8v2-1" in second and "M8-1" not in second and "Ada Lovelace" not in second
    key = text_of(class_run / "keys" / "version-02.pdf")
    assert "Answer key, version 2" in key and "M8v2-2" in key and "M8-2," not in key
    combined = PdfReader(class_run / "questions.pdf")
    assert len(combined.pages) == sum(len(PdfReader(p).pages) for p in (class_run / "papers").iterdir())


@needs_tex
def test_fewer_students_next_time_removes_the_old_papers(class_run, tmp_path, run_cli):
    out = tmp_path / "out"
    shutil.copytree(class_run, out)
    roster = tmp_path / "two.csv"
    roster.write_text("id,name\nx1,One\nx2,Two\n")
    assert run_cli("--count", "1", "--seed", "2", "--students", roster, "--out", out, "--pdf")[0] == 0
    assert sorted(p.name for p in (out / "papers").iterdir()) == ["001-x1.pdf", "002-x2.pdf"]
    assert sorted(p.name for p in (out / "keys").iterdir()) == ["version-01.pdf", "version-02.pdf"]


def test_versions_without_a_roster(tmp_path, run_cli):
    assert run_cli("--count", "3", "--seed", "4", "--versions", "3", "--difficulty", "hard", "--practice",
                   "--out", tmp_path)[0] == 0
    document = json.loads((tmp_path / "problems.json").read_text())
    assert [p["student_id"] for p in document["papers"]] == [None, None, None]
    assert [p["version"] for p in document["papers"]] == [1, 2, 3]
    ids = [p["id"] for p in document["problems"]]
    assert ids == ["H4-1", "H4-2", "H4-3", "H4v2-1", "H4v2-2", "H4v2-3", "H4v3-1", "H4v3-2", "H4v3-3"]
    specs = [json.dumps(p["spec"], sort_keys=True) for p in document["problems"]]
    assert len(set(specs)) == 9
    answers = (tmp_path / "answers.md").read_text()
    assert answers.count("**version ") == 3


def test_same_seed_same_papers(tmp_path, run_cli):
    roster = tmp_path / "r.csv"
    roster.write_text(ROSTER)
    for folder in ("a", "b"):
        assert run_cli("--count", "2", "--seed", "8", "--students", roster, "--out", tmp_path / folder)[0] == 0
    for name in ("questions.tex", "answers.tex", "problems.json", "questions.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("roster, expected", [
    ("name\nAda\n", "no column for the students' ids (found 'name'; expected id and name"),
    ("id,nom\n1,Ada\n", "no column for the students' names (found 'id', 'nom'"),
    ("id,name\n1,Ada\n1,Bob\n", "student id '1' is on line 2 and on line 3"),
    ("id,name\n1,\n", "line 2: every student needs an id and a name"),
    ("id,name\n", "no students in the roster"),
    ("id,name\n" + "9,x\n" * 501, "501 students; at most 500"),
])
def test_bad_rosters(tmp_path, run_cli, roster, expected):
    path = tmp_path / "roster.csv"
    path.write_bytes(roster if isinstance(roster, bytes) else roster.encode())
    code, _, err = run_cli("--students", path, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, expected", [
    (["--versions", "0"], "--versions must be a whole number from 1 to 500, got 0"),
    (["--versions", "400", "--count", "20"], "more than 5000 problems in one run"),
    (["--versions", "2", "--problem", "M1-1"], "--problem ID draws one problem named by its id"),
    (["--students", "/no/such.csv"], "/no/such.csv: no such file"),
])
def test_bad_version_options(tmp_path, run_cli, args, expected):
    code, _, err = run_cli(*args, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and expected in err, err
