"""An exam's record is never lost, and a problem set again prints the key the marker used.

A draw into a folder that holds an exam keeps the earlier exam's problems.json as
.gen-problems/exams/<date>-seed<N>/problems.json (exam_record, output), says so in one line,
and its codes still set again with --record; a practice set's record is not kept.  A problem
set again from a record prints with the record's header, table of exponentials and places.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path

import pytest
from test_output_folder import faulty_gen, gen, the_set

KEPT_NOTE = re.compile(r"^gen-problems: note: kept the earlier exam's record as (\S+); set that "
                       r"exam again with: (gen-problems --record .*)$", re.M)
DOCUMENTS = ("questions.md", "answers.md", "questions.tex", "answers.tex", "problems.json")


def today() -> str:
    return time.strftime("%Y-%m-%d")


def record(out: Path) -> dict:
    return json.loads((out / "problems.json").read_text())


def kept_records(out: Path) -> dict[str, bytes]:
    exams = out / ".gen-problems" / "exams"
    return {path.parent.name: path.read_bytes() for path in sorted(exams.glob("*/problems.json"))}


def kept_notes(err: str) -> list[Path]:
    return [Path(shlex.split(path)[0]) for path, _ in KEPT_NOTE.findall(err)]


def set_again_commands(err: str) -> list[list[str]]:
    """The commands the kept-record notes give, as words after gen-problems."""
    return [shlex.split(command)[1:] for _, command in KEPT_NOTE.findall(err)]


# -- an exam set is never lost ----------------------------------------------------------------

def test_a_second_draw_keeps_the_earlier_exams_record_and_says_so(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("--count", 4, "--seed", 7, "--out", "exam1")[0] == 0
    first = Path("exam1/problems.json").read_bytes()
    code, _, err = run_cli("--count", 2, "--out", "exam1")  # no seed: another exam
    assert code == 0
    kept = Path(f"exam1/.gen-problems/exams/{today()}-seed7/problems.json")
    assert kept_notes(err) == [kept] and err.count("kept the earlier") == 1
    assert kept.read_bytes() == first  # byte for byte
    manifest = json.loads(Path("exam1/.gen-problems/manifest.json").read_text())["files"]
    assert not any(name.startswith(".gen-problems") for name in manifest)
    # Every code of the first exam sets again from the kept record, exactly as it was set.
    for problem in json.loads(first)["problems"]:
        assert run_cli("--problem", problem["id"], "--record", kept, "--out", "redo")[0] == 0
        [again] = record(Path("redo"))["problems"]
        assert (again["id"], again["spec"], again["number"]) == (problem["id"], problem["spec"],
                                                                 problem["number"])


def test_kept_records_are_never_replaced_nor_kept_twice(tmp_path, run_cli):
    out = tmp_path / "exam"
    for seed in (7, 8):
        assert run_cli("--count", 1, "--seed", seed, "--out", out)[0] == 0
    seed7 = kept_records(out)[f"{today()}-seed7"]
    code, _, err = run_cli("--count", 1, "--seed", 8, "--out", out)  # the same set again
    assert code == 0 and kept_notes(err) == [] and list(kept_records(out)) == [f"{today()}-seed7"]
    assert run_cli("--count", 1, "--seed", 7, "--out", out)[0] == 0  # keeps seed 8's
    code, _, err = run_cli("--count", 2, "--seed", 8, "--out", out)  # seed 7's is kept already
    assert code == 0 and kept_notes(err) == []
    assert run_cli("--count", 3, "--seed", 8, "--out", out)[0] == 0  # another set of seed 8
    kept = kept_records(out)
    assert sorted(kept) == [f"{today()}-seed7", f"{today()}-seed8", f"{today()}-seed8-2"]
    assert kept[f"{today()}-seed7"] == seed7
    assert [len(json.loads(kept[name])["problems"]) for name in sorted(kept)] == [1, 1, 2]


def test_a_practice_sets_record_is_not_kept(tmp_path, run_cli):
    out = tmp_path / "out"
    assert run_cli("--count", 2, "--seed", 1, "--practice", "--out", out)[0] == 0
    assert record(out)["documents"]["practice"] is True
    code, _, err = run_cli("--count", 2, "--seed", 2, "--out", out)
    assert code == 0 and kept_notes(err) == [] and kept_records(out) == {}
    assert record(out)["documents"]["practice"] is False
    code, _, err = run_cli("--count", 2, "--seed", 3, "--practice", "--out", out)  # an exam went
    assert code == 0 and list(kept_records(out)) == [f"{today()}-seed2"]


def test_a_spec_files_record_is_kept_too(tmp_path, run_cli):
    spec = tmp_path / "mine.toml"
    spec.write_text("X = [[1, 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 2]]\n"
                    "W_V = [[1, 0], [0, 1]]\n")
    out = tmp_path / "out"
    assert run_cli("--spec", spec, "--out", out)[0] == 0
    assert run_cli("--count", 1, "--out", out)[0] == 0
    assert list(kept_records(out)) == [f"{today()}-record"]


@pytest.mark.parametrize("fault", ["error", "kill"])
@pytest.mark.slow
def test_a_commit_that_fails_or_is_killed_keeps_nothing_and_loses_nothing(tmp_path, fault):
    out = tmp_path / "out"
    assert gen("--count", 2, "--seed", 1, "--out", out).returncode == 0
    before = the_set(out)
    # Rename 1 is the journal's; rename 2 puts the kept record in place (its name sorts first).
    for at in (2, 3):
        failed = faulty_gen(out, fault, at, "--count", 2, "--seed", 2)
        assert failed.returncode == (1 if fault == "error" else -9), failed.stderr
        if fault == "kill":
            assert gen("--count", 0, "--out", out).returncode == 2  # restores first
        assert the_set(out) == before
        assert not (out / ".gen-problems" / "exams").exists()
    result = gen("--count", 2, "--seed", 2, "--out", out)
    assert result.returncode == 0 and len(kept_notes(result.stderr)) == 1
    assert kept_records(out)[f"{today()}-seed1"] == before["problems.json"]


def test_the_kept_records_folder_is_never_a_link(tmp_path, run_cli):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_cli("--count", 1, "--seed", 1, "--out", out)[0] == 0
    before = the_set(out)
    (out / ".gen-problems" / "exams").symlink_to(elsewhere)
    code, _, err = run_cli("--count", 1, "--seed", 2, "--out", out)
    assert code == 2 and err.count("\n") == 1 and "exams is a link" in err
    assert list(elsewhere.iterdir()) == []
    assert {k: v for k, v in the_set(out).items() if "exams" not in k} == before


def test_a_kept_record_may_be_read_by_a_run_into_its_own_folder(tmp_path, run_cli):
    out = tmp_path / "exam"
    assert run_cli("--count", 2, "--seed", 7, "--out", out)[0] == 0
    codes = [p["id"] for p in record(out)["problems"]]
    assert run_cli("--count", 2, "--seed", 8, "--out", out)[0] == 0
    kept = out / ".gen-problems" / "exams" / f"{today()}-seed7" / "problems.json"
    assert run_cli("--problem", codes[1], "--record", kept, "--out", out)[0] == 0
    assert record(out)["problems"][0]["id"] == codes[1]
    assert kept.exists()  # never replaced nor removed, also when read


# -- a whole exam set again from its record ---------------------------------------------------

@pytest.mark.slow
def test_a_redrawn_exam_is_set_again_whole_from_its_kept_record(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    header = ("--title", "Midterm 1:  Attention", "--course", "ML 101", "--date", "2 Dec",
              "--institution", "Uni", "--instructions", "No notes.\nWrite in ink.")
    assert run_cli("--minutes", 25, "--seed", 7, "--versions", 3, "--no-calculator", "--decimals", 3,
                   *header, "--format", "moodle", "--out", "exam")[0] == 0
    first = {name: Path("exam", name).read_bytes() for name in (*DOCUMENTS, "moodle.xml")}
    code, _, err = run_cli("--count", 1, "--seed", 8, "--out", "exam")  # by mistake
    assert code == 0 and Path("exam/answers.md").read_bytes() != first["answers.md"]
    [words] = set_again_commands(err)
    assert words[words.index("--out") + 1] == f"exam-{today()}-seed7"
    assert words[-2:] == ["--format", "moodle"]  # the formats the first exam was written in
    code, _, err = run_cli(*words)
    assert code == 0, err
    again = {name: Path(f"exam-{today()}-seed7", name).read_bytes() for name in first}
    assert again == first  # byte for byte: every version, the header, the table, the command
    assert b"'Midterm 1:  Attention'" in first["answers.md"]  # the draw command, as it was
    assert b"Time allowed: 25 minutes" in first["questions.md"]


def test_a_class_is_set_again_per_student(tmp_path, run_cli):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\ns1,Ada\ns2,Alan\ns3,Grace\n")
    assert run_cli("--count", 1, "--seed", 3, "--versions", 2, "--students", roster,
                   "--out", tmp_path / "exam")[0] == 0
    exam = tmp_path / "exam" / "problems.json"
    assert [p["version"] for p in json.loads(exam.read_text())["papers"]] == [1, 2, 1]
    assert run_cli("--record", exam, "--out", tmp_path / "again")[0] == 0  # the record's roster
    for name in DOCUMENTS:
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "exam" / name).read_bytes()
    # A roster given: each student sits their recorded version; one not in the record, their turn.
    roster.write_text("id,name\ns3,Grace\ns4,Hedy\ns1,Ada\n")
    code, _, err = run_cli("--record", exam, "--students", roster, "--out", tmp_path / "roster")
    assert code == 0 and "1 student of the roster (s4) not in the record" in err
    papers = json.loads((tmp_path / "roster" / "problems.json").read_text())["papers"]
    assert [(p["student_id"], p["version"]) for p in papers] == [("s3", 1), ("s4", 2), ("s1", 1)]


def test_a_record_given_as_a_spec_says_to_use_record(tmp_path, run_cli):
    assert run_cli("--count", 1, "--seed", 3, "--out", tmp_path / "exam")[0] == 0
    record_file = tmp_path / "exam" / "problems.json"
    code, _, err = run_cli("--spec", record_file, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1
    assert f"is an exam's record, not a spec file: set the exam again with gen-problems --record " \
           f"{record_file} --out DIR" in err
    code, _, err = run_cli("--record", record_file, "--count", 2, "--out", tmp_path / "o")
    assert code == 2 and "sets the whole exam again as it was set; it takes no --count" in err


# -- a problem set again prints the key the marker used -----------------------------------------

PAPER_SUMMARY = re.compile(r"\d+ problems?, \d+ marks in all; about \d+ minutes")
SCORE_BOX = re.compile(r"\\begin\{tabular\}\{[|lc]*\}\\hline\nProblem &.*?\\end\{tabular\}", re.S)
DRAW_AGAIN = re.compile(r" ?(\\par\{\\raggedright )?This set is drawn again by .*?\.(\\par\})?$",
                        re.M)


def split_markdown(text: str) -> tuple[str, dict[int, str]]:
    """The header (its count of problems, marks and minutes and its redraw command aside), and
    each problem's text by its number."""
    head, *problems = re.split(r"^(?=## Problem \d+:)", text, flags=re.M)
    return (DRAW_AGAIN.sub("", PAPER_SUMMARY.sub("N", head)),
            {int(re.match(r"## Problem (\d+)", p).group(1)): p for p in problems})


def split_latex(text: str) -> tuple[str, dict[int, str]]:
    head, *problems = re.split(r"(?:\\newpage\s*)?\\qformat\{", text)
    last = problems[-1] if problems else ""
    problems[-1:] = [last[:last.find(r"\end{questions}")]] if problems else []
    # the cover's score box lists the paper's own problems, one when a problem is set again
    return (SCORE_BOX.sub("", DRAW_AGAIN.sub("", PAPER_SUMMARY.sub("N", head))),
            {int(re.search(r"Problem (\d+):", p).group(1)): p.rstrip() for p in problems})


@pytest.fixture(scope="module")
def no_calculator_exam(tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("exam")
    config = out.parent / "course.toml"
    config.write_text('institution = "Uni"\n[extra]\nroom = "B12"\n')
    assert main([str(a) for a in ("--count", 4, "--seed", 7, "--no-calculator", "--decimals", 5,
                                  "--title", "Midterm", "--course", "ML 101", "--date", "1 May",
                                  "--config", config, "--out", out)]) == 0
    return out


@pytest.mark.parametrize("document, split", [("answers.md", split_markdown),
                                             ("questions.md", split_markdown),
                                             ("answers.tex", split_latex),
                                             ("questions.tex", split_latex)])
def test_a_problem_set_again_prints_as_the_markers_key(no_calculator_exam, tmp_path, run_cli,
                                                        document, split):
    exam = record(no_calculator_exam)
    assert exam["decimals"] == 5
    header, problems = split((no_calculator_exam / document).read_text())
    # the table, 5 places or more: a line of Markdown, a row of values in LaTeX
    assert re.search(r"e\^-1 ≈ 0\.3678\d|& \$0\.3678\d+\$ &", header)
    for problem in exam["problems"]:
        out = tmp_path / problem["id"]
        assert run_cli("--problem", problem["id"], "--record", no_calculator_exam / "problems.json",
                       "--out", out)[0] == 0
        again_header, again = split((out / document).read_text())
        assert again_header == header  # title, course, date, institution, table, places
        assert again == {problem["number"]: problems[problem["number"]]}
        assert record(out).get("documents") == exam.get("documents")


def test_the_command_line_wins_over_the_record(no_calculator_exam, tmp_path, run_cli):
    code = record(no_calculator_exam)["problems"][1]["id"]
    assert run_cli("--problem", code, "--record", no_calculator_exam / "problems.json",
                   "--decimals", 3, "--title", "Resit", "--out", tmp_path / "o")[0] == 0
    key = (tmp_path / "o" / "answers.md").read_text()
    assert key.startswith("# Resit: answer key\n\nUni\n\nML 101, 1 May")
    # its table at 3 or 4 places, anew (a fifth or sixth where a row of the problem needs it
    # to check on paper: which depends on the session's exam key)
    assert re.search(r"e\^-1 ≈ 0\.(368|3679|36788|367879),", key)
    assert record(tmp_path / "o")["decimals"] == 3


def test_an_older_record_without_documents_still_sets_its_problems(tmp_path, run_cli):
    assert run_cli("--count", 2, "--seed", 3, "--decimals", 2, "--out", tmp_path / "exam")[0] == 0
    old = record(tmp_path / "exam")
    del old["documents"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    code = old["problems"][0]["id"]
    assert run_cli("--problem", code, "--record", tmp_path / "old.json",
                   "--out", tmp_path / "o")[0] == 0
    assert record(tmp_path / "o")["decimals"] == 2  # the record's places still


@pytest.mark.parametrize("forged, message", [
    ({"decimals": "five"}, "decimals must be a whole number"),
    ({"documents": {"title": "a\u0007b"}}, "title holds the control character U+0007"),
    ({"documents": {"exponent_table": ["__import__('os')"]}}, "documents.exponent_table"),
    ({"documents": {"practice": "yes"}}, "documents.practice must be bool"),
    ({"documents": {"extra": {"room": 1}}}, "documents.extra must be a list"),
])
def test_a_forged_record_is_one_line(tmp_path, run_cli, forged, message):
    assert run_cli("--count", 1, "--seed", 3, "--out", tmp_path / "exam")[0] == 0
    exam = record(tmp_path / "exam")
    (tmp_path / "forged.json").write_text(json.dumps({**exam, **forged}))
    code, _, err = run_cli("--problem", exam["problems"][0]["id"], "--record",
                           tmp_path / "forged.json", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o").exists()
