"""The fault campaign's cases (issue 37): each input a teacher might hand the tool by mistake is
refused in one line, or taken as meant; nothing outside --out is touched."""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.maths.spec import load_spec_file
from generator.rendering.teacher_text import text_fault
from generator.running.roster import load_roster


def test_blank_rows_of_a_roster_are_skipped_before_the_students_are_counted(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n" + "\n" * 50_000 + ",\n" * 50_000 + "s1,Ann Lee\n", encoding="utf-8")
    students = load_roster(roster).students
    assert [(s.id, s.name) for s in students] == [("s1", "Ann Lee")]


# -- odd text: one rule for every text a teacher types -------------------------------------------

SPEC = 'X = [[1, 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 2]]\nW_V = [[1, 0], [0, 1]]\n'
# What no document can print: ESC, NUL, BEL, form feed, DEL, a C1 control, U+FFFE, a lone surrogate.
UNPRINTABLE = ["\x1b", "\x00", "\x07", "\x0c", "\x7f", "\x85", "\ufffe", "\ud800"]


def refused(run_cli, out: Path, *args) -> str:
    """The one line a refused run prints (exit 2, no traceback), having written nothing to ``out``."""
    code, printed, err = run_cli(*args, "--out", out)
    assert code == 2, err
    assert printed == ""
    assert err.count("\n") == 1 and err.startswith("gen-problems: error: "), err
    assert "Traceback" not in err
    assert not out.exists()
    return err


def json_text(value: str) -> str:
    """A string literal, JSON or TOML, that holds ``value``: each control character as \\uXXXX."""
    return json.dumps(value)


@pytest.mark.parametrize("suffix, char", [(".json", char) for char in UNPRINTABLE]
                         + [(".toml", char) for char in UNPRINTABLE[:-1]],  # TOML holds no surrogate
                         ids=ascii)
def test_a_spec_files_title_with_a_control_character_is_refused(tmp_path, run_cli, char, suffix):
    spec = tmp_path / f"odd{suffix}"
    record = {"title": f"Week{char}3", "X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
              "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}
    if suffix == ".json":
        spec.write_text(json.dumps(record), encoding="utf-8")
    else:
        spec.write_text(f"title = {json_text(f'Week{char}3')}\n{SPEC}", encoding="utf-8")
    err = refused(run_cli, tmp_path / "out", "--spec", spec, "--pdf", "--format", "moodle,qti")
    assert "title holds" in err and f"U+{ord(char):04X}" in err


@pytest.mark.parametrize("key", ["type", "mask", "mistake"])
def test_any_other_text_of_a_spec_file_with_a_control_character_is_refused(tmp_path, run_cli, key):
    spec = tmp_path / "odd.toml"
    spec.write_text(f'{key} = "\\u001b[31m"\n{SPEC}', encoding="utf-8")
    err = refused(run_cli, tmp_path / "out", "--spec", spec)
    assert key in err and "\x1b" not in err  # the message quotes it escaped, not raw


@pytest.mark.parametrize("char", ["\x1b", "\x00", "\x07", "\x7f", "\ufffe"], ids=ascii)
@pytest.mark.parametrize("column", ["name", "id"])
def test_a_roster_name_with_a_control_character_is_refused_naming_the_row_and_student(
        tmp_path, run_cli, char, column):
    roster = tmp_path / "class.csv"
    name, sid = ("Ann" + char + "Lee", "s2") if column == "name" else ("Ann Lee", "s" + char + "2")
    roster.write_text(f"id,name\ns1,Bo Chen\n{sid},{name}\n", encoding="utf-8", newline="")
    err = refused(run_cli, tmp_path / "out", "--students", roster, "--count", 1, "--pdf")
    assert "class.csv, line 3" in err and f"U+{ord(char):04X}" in err
    assert ("name of student s2" if column == "name" else "id of student Ann Lee") in err


@pytest.mark.parametrize("char", ["\x0b", "\x0c", "\x85", "\u2028"], ids=ascii)
def test_white_space_inside_a_roster_cell_is_a_space(tmp_path, char):
    roster = tmp_path / "class.csv"
    roster.write_text(f"id,name\ns1,Ann{char}Lee\n", encoding="utf-8", newline="")
    assert [(s.id, s.name) for s in load_roster(roster).students] == [("s1", "Ann Lee")]


@pytest.mark.parametrize("char", UNPRINTABLE[:-1], ids=ascii)
@pytest.mark.parametrize("option", ["--title", "--course", "--institution", "--date", "--instructions"])
def test_a_header_option_with_a_control_character_is_refused(tmp_path, run_cli, char, option):
    err = refused(run_cli, tmp_path / "out", option, f"Week{char}3", "--count", 1, "--pdf")
    assert option[2:] in err and f"U+{ord(char):04X}" in err


@pytest.mark.parametrize("key", ["title", "course", "instructions"])
def test_a_header_configs_text_with_a_control_character_is_refused(tmp_path, run_cli, key):
    config = tmp_path / "header.toml"
    config.write_text(f'{key} = "Week\\u0007 3"\n[extra]\nroom = "B12"\n', encoding="utf-8")
    err = refused(run_cli, tmp_path / "out", "--config", config, "--count", 1)
    assert key in err and "U+0007" in err


@pytest.mark.parametrize("title", ["", " ", "\t"], ids=repr)
def test_a_blank_title_is_refused_in_one_line(tmp_path, run_cli, title):
    err = refused(run_cli, tmp_path / "out", "--title", title, "--count", 1, "--pdf")
    assert "title is blank" in err


def test_blank_header_texts_are_no_texts(tmp_path, run_cli):
    """A blank course, institution or date prints nothing; blank instructions none; instructions
    that start or end with blank lines print without them (LaTeX: "There's no line here to end")."""
    from generator.rendering.paper import header_fields
    fields = header_fields(None, {"course": " ", "institution": "\t", "date": "",
                                  "instructions": "\n \nWork alone.\r\n\n  Show your work. \n"})
    assert fields == {"course": "", "institution": "", "date": "",
                      "instructions": "Work alone.\n\nShow your work."}
    assert header_fields(None, {"instructions": "\n"}) == {"instructions": ""}


@pytest.mark.tex
@pytest.mark.parametrize("header", [("--course", " ", "--institution", "\t", "--instructions", "\n"),
                                    ("--instructions", "\n\nFirst line\n\n\nLast line\r\n ")],
                         ids=["blank", "blank-lines"])
def test_blank_header_texts_typeset(tmp_path, run_cli, header):
    code, _, err = run_cli(*header, "--count", 1, "--seed", 3, "--pdf", "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "questions.pdf").exists() and (tmp_path / "out" / "answers.pdf").exists()


ODD_BUT_PRINTABLE = "<b>&amp; ]]> \"quotes\" 'x' {1:SHORTANSWER:=x} \\(x\\) \u200f\u05e9\u05dc\u05d5\u05dd \U0001f600 \ufdd0 \ue000 \tA"


def test_moodle_xml_stays_well_formed_for_any_text_accepted(tmp_path, run_cli):
    spec = tmp_path / "odd.json"
    spec.write_text(json.dumps({"title": ODD_BUT_PRINTABLE, "X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
                                "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}), encoding="utf-8")
    roster = tmp_path / "class.csv"
    roster.write_text(f'id,name\ns1,"{ODD_BUT_PRINTABLE.replace(chr(34), chr(34) * 2)}"\n', encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = run_cli("--spec", spec, "--students", roster, "--title", ODD_BUT_PRINTABLE,
                           "--course", ODD_BUT_PRINTABLE, "--format", "moodle,qti", "--out", out)
    assert code == 0, err
    root = ElementTree.parse(out / "moodle.xml").getroot()  # raises on XML that is not well-formed
    assert any(ODD_BUT_PRINTABLE in text for text in root.itertext())  # in the category, as typed
    with zipfile.ZipFile(out / "qti.zip") as package:
        for name in package.namelist():
            if name.endswith(".xml"):
                ElementTree.fromstring(package.read(name))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and text_fault(t) is None))
def test_moodle_xml_is_well_formed_for_any_title_the_rule_lets_through(tmp_path_factory, text):
    out = tmp_path_factory.mktemp("moodle") / "out"
    assert main([f"--title={text}", f"--course={text}", "--count", "1", "--seed", "2", "--types", "row",
                 "--format", "moodle", "--out", str(out)]) == 0
    root = ElementTree.parse(out / "moodle.xml").getroot()
    assert any(text.strip().replace("/", "-") in found for found in root.itertext())


# -- numbers in spec files: exactly the grammar the guide states -----------------------------------

@pytest.mark.parametrize("literal", ["0x10", "0o7", "0b1", "1_000", "1_0.5", "inf", "-inf", "nan", "+nan"])
def test_a_toml_number_not_written_plainly_is_refused_naming_the_key_and_entry(tmp_path, run_cli, literal):
    spec = tmp_path / "odd.toml"
    spec.write_text(SPEC.replace("W_K = [[1, 0], [0, 2]]", f"W_K = [[1, 0], [0, {literal}]]"))
    err = refused(run_cli, tmp_path / "out", "--spec", spec)
    assert f"W_K row 2, column 2: '{literal}' is not" in err


@pytest.mark.parametrize("text", ["scale = 0x1\n", 'mask = "window"\nwindow = 0b1\n'])
def test_a_toml_option_not_written_plainly_is_refused(tmp_path, run_cli, text):
    spec = tmp_path / "odd.toml"
    spec.write_text(text + SPEC)
    err = refused(run_cli, tmp_path / "out", "--spec", spec)
    assert text.split()[-1] in err


def test_numbers_written_plainly_and_the_same_characters_in_texts_are_taken(tmp_path):
    spec = tmp_path / "plain.toml"
    spec.write_text('title = """0x10, 1_000 and inf"""  # nan 0b1\n'
                    'X = [[+1, 0.5], [1e1, -0.0]]  # 0o7\n' + SPEC.split("\n", 1)[1]
                    + 'mask = [[0, -inf], [0, 0]]\n')
    (problem,) = load_spec_file(spec)
    assert problem.title == "0x10, 1_000 and inf"
    assert [list(row) for row in problem.matrices["X"]] == [[1, sympy.Rational(1, 2)], [10, 0]]
    assert problem.mask == "custom"


# -- the record: every field of the type and range gen-problems writes -----------------------------

@pytest.fixture(scope="module")
def exam_record(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("record") / "out"
    assert main(["--count", "2", "--seed", "5", "--out", str(out)]) == 0
    return json.loads((out / "problems.json").read_text())


@pytest.mark.parametrize("where, field, value", [
    ("problem", "number", True), ("problem", "number", -5), ("problem", "number", 1e100),
    ("problem", "number", 10**100), ("problem", "number", "3"), ("problem", "number", 0),
    ("problem", "seed", True), ("problem", "seed", -5), ("problem", "seed", 1e100),
    ("record", "seed", True), ("record", "seed", -5), ("record", "seed", 10**30),
    ("record", "draw_command", 5), ("record", "decimals", True),
    ("documents", "title", 5), ("documents", "title", "a\x1bb"), ("documents", "practice", 1),
])
def test_a_record_field_of_the_wrong_type_or_range_is_refused_naming_it(
        tmp_path, run_cli, exam_record, where, field, value):
    record = copy.deepcopy(exam_record)
    {"record": record, "problem": record["problems"][0], "documents": record["documents"]}[where][field] = value
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(record))
    err = refused(run_cli, tmp_path / "out", "--record", path)
    assert field in err
    if where == "problem":  # and so is the problem set again alone
        again = refused(run_cli, tmp_path / "out", "--record", path, "--problem", record["problems"][0]["id"])
        assert field in again


# -- huge inputs: refused before they are parsed ---------------------------------------------------

W = 'W_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 1]]\nW_V = [[1, 0], [0, 1]]\n'


@pytest.mark.parametrize("name, text, expected", [
    ("thirds.toml", "X = [[" + ",".join(['"1/3"'] * 2_500_000) + "]]\n" + W, "X holds more than"),
    ("thirds.json", json.dumps({"X": [["1/3"] * 2_200_000], "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}),
     "X is 1 x 2200000"),
    ("zeros.toml", "X = [[" + ",".join(["0"] * 7_900_000) + "]]\n" + W, "X holds more than"),
    ("square.toml", "X = [" + ",".join(["[" + ",".join(["12"] * 2000) + "]"] * 2000) + "]\n" + W,
     "X holds more than"),
    ("rows.toml", "X = [" + ",".join(["[1, 0]"] * 1_000_000) + "]\n" + W, "X holds more than"),
    ("keys.toml", "a = 1\n" * 2_000_000, "more than 200000 keys"),
    ("many.toml", ("[[problem]]\nX = [[" + ",".join(["0"] * 900) + "]]\n") * 2300, "more than 2000000 entries"),
    ("wide.json", json.dumps({"X": [[0] * 65] * 2, "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}),
     "X is 2 x 65"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 20 else "")
def test_a_huge_spec_is_refused_before_it_is_parsed(tmp_path, run_cli, name, text, expected):
    spec = tmp_path / name
    spec.write_text(text)
    assert expected in refused(run_cli, tmp_path / "out", "--spec", spec)


def test_a_huge_record_is_refused_before_it_is_parsed(tmp_path, run_cli, exam_record):
    many = {**exam_record, "problems": exam_record["problems"] * 5000}
    (tmp_path / "many.json").write_text(json.dumps(many))
    assert "more than 5000 problems" in refused(run_cli, tmp_path / "out", "--record", tmp_path / "many.json")
    wide = copy.deepcopy(exam_record)
    wide["problems"][0]["spec"]["X"] = [["1/3"] * 2_000_000]
    (tmp_path / "wide.json").write_text(json.dumps(wide))
    assert "X is 1 x 2000000" in refused(run_cli, tmp_path / "out", "--record", tmp_path / "wide.json")


@pytest.mark.parametrize("text, expected", [
    ("id,name\n" + "\n" * 8_000_000 + "s1,Ann Lee\n", "more than 200000 lines"),
    ("id,name\n" + "s1,Ann Lee\r" * 300_000, "more than 200000 lines"),
    ("id,name" + "," * 8_000_000 + "\ns1,Ann Lee\n", "line 1: more than 2000 columns"),
    ("id,name\ns1,Ann Lee" + ",x" * 5000 + "\n", "line 2: more than 2000 columns"),
], ids=["blank-lines", "cr-lines", "wide-header", "wide-row"])
def test_a_huge_roster_is_refused_before_it_is_read(tmp_path, run_cli, text, expected):
    roster = tmp_path / "class.csv"
    roster.write_text(text, newline="")
    assert expected in refused(run_cli, tmp_path / "out", "--students", roster, "--count", 1)


def test_a_record_with_a_blank_title_sets_its_exam_again_under_the_default_title(tmp_path, run_cli, exam_record):
    """A record written when a blank --title was still taken: set again, not refused."""
    record = copy.deepcopy(exam_record)
    record["documents"]["title"] = " "
    (tmp_path / "problems.json").write_text(json.dumps(record))
    code, _, err = run_cli("--record", tmp_path / "problems.json", "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "questions.md").read_text().startswith("# Scaled dot-product self-attention")


def test_a_records_student_with_a_control_character_is_refused(tmp_path, run_cli):
    roster = tmp_path / "class.csv"
    roster.write_text("id,name\ns1,Ann Lee\ns2,Bo Chen\n")
    assert run_cli("--students", roster, "--count", 1, "--out", tmp_path / "set")[0] == 0
    record = json.loads((tmp_path / "set" / "problems.json").read_text())
    record["papers"][1]["name"] = "Bo\x1bChen"
    (tmp_path / "problems.json").write_text(json.dumps(record))
    err = refused(run_cli, tmp_path / "out", "--record", tmp_path / "problems.json")
    assert "papers: the name of student s2" in err and "U+001B" in err
