"""Bad input: one clear line on stderr, exit code 2, no traceback, nothing written."""

import ast
import json
from pathlib import Path

import pytest
from conftest import folder_files
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.maths import exact
from generator.maths.spec import SpecError, spec_from_record
from generator.running.pipeline import solve_checked

GOOD = '''X   = [[1, 0], [0, 1]]
W_Q = [[1, 0], [0, 1]]
W_K = [[1, 0], [0, 2]]
W_V = [[1, 0], [0, 1]]
'''


def spec_with(**changes) -> dict:
    record = {"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]],
              "W_K": [[1, 0], [0, 2]], "W_V": [[1, 0], [0, 1]]}
    record.update(changes)
    return {key: value for key, value in record.items() if value is not None}


BAD_SPECS = [
    (spec_with(X=[[1, 0, 0], [0, 1]]), "X row 2 has 2 entries but row 1 has 3"),
    (spec_with(W_K=[[1, 0], [0, 2], [1, 1]]), "W_K has 3 rows but X has 2 columns"),
    (spec_with(W_K=[[1], [0]]), "W_K has 1 columns but W_Q has 2"),
    (spec_with(X=[]), "X must be a non-empty list of rows"),
    (spec_with(X=[[]]), "X row 1 is empty"),
    (spec_with(X=[[1, "a"], [0, 1]]), "X row 1, column 2: 'a' is not a number"),
    (spec_with(X=[[1, "__import__('os')"], [0, 1]]), "is not a number"),
    (spec_with(X=[[1, True], [0, 1]]), "True is not a number"),
    (spec_with(X=[[1, None], [0, 1]]), "None is not a number"),
    (spec_with(X=[[1, 1e999], [0, 1]]), "not a finite number"),
    (spec_with(W_V=None), "missing W_V"),
    (spec_with(Q=[[1]]), "give either X, W_Q, W_K, W_V or Q, K, V, not both"),
    (spec_with(colour="red"), "unknown key 'colour'"),
    (spec_with(mask="future"), "unknown mask 'future' (expected one of: none, causal, padding, window, "
                               "causal+padding, or a matrix of 0 and -inf)"),
    (spec_with(scale=-1), "scale must be positive"),
    (spec_with(title=["x"]), "title must be one line of text"),
    (spec_with(X=[[1, 0]] * 13), "13 tokens; at most 12"),
    (spec_with(X=[[1] * 17] * 2, W_Q=[[1, 0]] * 17, W_K=[[1, 0]] * 17, W_V=[[1, 0]] * 17),
     "dimension 17; at most 16"),
    (spec_with(X=[[1000, 1000], [0, 1]], W_K=[[1000, 0], [0, 1]], W_Q=[[1000, 0], [0, 1]]),
     "too large to exponentiate"),
    ({"Q": [[1, 0]], "K": [[1, 0]], "V": [[1], [2]]}, "V has 2 rows but K has 1"),
    ({"problems": "nope"}, "'problems' must be the only top-level key and hold a list"),
    ({"problems": []}, "no problems in the file"),
]


@pytest.fixture
def previous_output(tmp_path, tmp_path_factory, written_once):
    """An output folder holding an earlier good run, which a bad run must leave intact."""
    good = tmp_path_factory.getbasetemp() / "good.toml"
    good.write_text(GOOD)
    out = written_once(tmp_path / "out", "--spec", good)
    return out, folder_files(out)


def assert_one_line_error(code, out, err, expected):
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gen-problems: error: ")
    assert expected in err
    assert "Traceback" not in err


@pytest.mark.parametrize("record, expected", BAD_SPECS)
def test_bad_json_spec(tmp_path, run_cli, previous_output, record, expected):
    out, before = previous_output
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    assert_one_line_error(*run_cli("--spec", path, "--out", out), expected)
    assert folder_files(out) == before


@pytest.mark.parametrize("text, suffix, expected", [
    ("X = [[1, 0]", ".toml", "malformed TOML"),
    ('{"X": [[1, 0]', ".json", "malformed JSON"),
    ("X = [[1, 0]]", ".yaml", "spec files must end in .toml or .json"),
    (b"\xff\xfe", ".json", "cannot read a problem spec: not UTF-8 text"),
])
def test_unreadable_files(tmp_path, run_cli, text, suffix, expected):
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert_one_line_error(*run_cli("--spec", path, "--out", tmp_path / "o"), expected)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, expected", [
    (["--spec", "/no/such/file.toml"], "no such file"),
    (["--count", "0"], "--count must be a whole number from 1 to 2000, got 0"),
    (["--count", "100000"], "--count must be a whole number from 1 to 2000, got 100000"),
    (["--count", "ten"], "argument --count: invalid int value: 'ten'"),
    (["--decimals", "-1"], "--decimals must be a whole number from 0 to 10"),
    (["--format", "docx"], "unknown format 'docx' (expected some of: md, json, html, moodle, qti)"),
    (["--format", "moodel"], "unknown format 'moodel' (did you mean 'moodle'? expected some of"),
    (["--format", "html,pdf"], "unknown format 'pdf' (the PDFs come with --pdf, not --format pdf;"),
    (["--types", "ful"], "unknown question type 'ful' (did you mean 'full'? expected some of"),
    (["--types", "full,mased"], "unknown question type 'mased' (did you mean 'masked'?"),
    (["--types", "softmax-jacobean"], "(did you mean 'softmax-jacobian'?"),
    (["--colour"], "unrecognized arguments: --colour"),
    (["--templates", "/no/such/folder"], "--templates /no/such/folder: no such folder"),
])
def test_bad_command_lines(tmp_path, run_cli, args, expected):
    assert_one_line_error(*run_cli(*args, "--out", tmp_path / "o"), expected)
    assert not (tmp_path / "o").exists()


def test_a_bad_problem_anywhere_in_a_list_writes_nothing(tmp_path, run_cli):
    path = tmp_path / "two.toml"
    path.write_text("[[problem]]\n" + GOOD + "\n[[problem]]\n" + GOOD + "mask = 'sideways'\n")
    assert_one_line_error(*run_cli("--spec", path, "--out", tmp_path / "o"),
                          "two.toml, problem 2: unknown mask 'sideways'")
    assert not (tmp_path / "o").exists()


def test_out_that_is_a_file(tmp_path, run_cli):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("keep me")
    assert_one_line_error(*run_cli("--count", "1", "--out", not_a_folder), "not a folder")
    assert not_a_folder.read_text() == "keep me"


def test_broken_user_template(tmp_path, run_cli):
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    (mine / "questions.md.j2").write_text("{% for x in %}\n")
    assert_one_line_error(*run_cli("--count", "1", "--out", tmp_path / "o", "--templates",
                                   tmp_path / "mine"), "template: ")
    assert not (tmp_path / "o").exists()


def test_too_many_problems_in_a_file(tmp_path, run_cli):
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"problems": [spec_with()] * 2001}))
    assert_one_line_error(*run_cli("--spec", path, "--out", tmp_path / "o"), "at most 2000 in one file")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=12) | st.sampled_from(["1/2", "sqrt(2)", "2^9", "1/0", "causal", "row"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["X", "W_Q", "W_K", "W_V", "Q", "K", "V", "mask", "scale", "title", "type",
                         "row", "swap", "mistake", "W_O", "other"]), inner, max_size=6),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_any_json_is_a_problem_or_one_clear_error(record):
    try:
        solve_checked(spec_from_record(record, "fuzz-1"))  # parses and solves ...
    except SpecError as error:  # ... or says why in one line; nothing else may escape
        assert "\n" not in str(error)


# -- inputs that used to crash or hang: one line, exit 2 -------------------------------------

DEEP = 100_000


@pytest.mark.parametrize("name, text, expected", [
    ("deep.json", "[" * DEEP + "]" * DEEP, "malformed JSON (nested too deeply)"),
    ("deep.toml", "X = " + "[" * DEEP + "]" * DEEP, "malformed TOML (nested too deeply)"),
    ("big.json", '{"X": [[1' + "0" * 5000 + ", 0], [0, 1]]}", "malformed JSON (Exceeds the limit"),
    ("long.json", json.dumps(spec_with(X=[[int("1" + "0" * 3000), 0], [0, 1]])),
     "X row 1, column 1: 100000"),
    ("mistake.toml", GOOD + 'type = "mistake"\nmistake = [1]\n', "unknown mistake [1]"),
    ("type.toml", GOOD + "type = [1]\n", "unknown type [1]"),
    ("mask.toml", GOOD + "mask = {a = 1}\n", "unknown mask {'a': 1}"),
    ("hex.json", json.dumps(spec_with(X=[["0x10", 0], [0, 1]])), "'0x10' is not written as a plain number"),
    ("under.json", json.dumps(spec_with(X=[["1_000", 0], [0, 1]])), "'1_000' is not written as a plain number"),
])
def test_inputs_that_used_to_crash(tmp_path, run_cli, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert_one_line_error(code, out, err, expected)
    assert len(err) < 400  # a huge value is quoted short
    assert not (tmp_path / "o").exists()


def test_a_deep_header_config_is_one_line(tmp_path, run_cli):
    config = tmp_path / "header.toml"
    config.write_text("course = " + "[" * DEEP + "]" * DEEP)
    assert_one_line_error(*run_cli("--config", config, "--out", tmp_path / "o"),
                          "malformed TOML (nested too deeply)")


@pytest.mark.parametrize("title", ["Quiz \x01 one", "tab\tok but bell \x07", "\x1b[31mred"])
def test_a_header_with_a_control_character_is_one_line(tmp_path, run_cli, title):
    # XML (Moodle, the Canvas package) cannot hold it at all; TeX would print garbage
    assert_one_line_error(*run_cli("--title", title, "--format", "qti,moodle", "--out", tmp_path / "o"),
                          "control character")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("entry", ["((((9)^8)^8)^8)^8", "((((9)^8)^8)^8)^-8",
                                   "((((sqrt(2)+1)^8)^8)^8)^-8", "sqrt(((((9)^8)^8)^8)^8+1)",
                                   "(" * 12 + "9" + ")^8" * 12])
def test_nested_powers_are_refused_before_any_grows_large(tmp_path, run_cli, monkeypatch, entry):
    """Refused as the powers are read, each checked before the next is raised (they once
    took minutes): every power computed is a small number or a short expression."""
    path = tmp_path / "powers.json"
    path.write_text(json.dumps(spec_with(X=[[entry, 0], [0, 1]])))
    raised, power = [], exact._BINARY[ast.Pow]
    monkeypatch.setitem(exact._BINARY, ast.Pow, lambda a, b: raised.append(power(a, b)) or raised[-1])
    code, out, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "X row 1, column 1" in err
    assert 1 <= len(raised) <= 12 and all(len(str(value)) <= 30 for value in raised), raised


@pytest.mark.parametrize("args, expected", [
    (["--seed", "-1"], "--seed must be a whole number from 0 to"),
    (["--problem", ""], "--problem needs an id"),
    (["--spec", "x.toml", "--difficulty", "hard"], "--spec solves the file's problems as written; it takes no --difficulty"),
    (["--spec", "x.toml", "--types", "row"], "it takes no --types"),
    (["--spec", "x.toml", "--count", "3"], "it takes no --count"),
    (["--spec", "x.toml", "--mask", "causal"], "it takes no --mask"),
    (["--students", "/dev/zero"], "/dev/zero: a character device, not a regular file"),
])
def test_options_that_cannot_work_are_refused(tmp_path, run_cli, args, expected):
    assert_one_line_error(*run_cli(*args, "--out", tmp_path / "o"), expected)
    assert not (tmp_path / "o").exists()


# -- rosters are read as written, or refused ------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('id,name\ns1,"Ada\ns2,Alan\n', "roster.csv, line 2: a quote opened here is never closed"),
    ("id,name\ns1," + "A" * 200_000 + "\n", "roster.csv, line 2: a cell longer than the CSV reader's limit"),
    ('id,name\ns1,Ada\ns2,"Al"an\n', "roster.csv, line 3: malformed CSV"),
])
def test_a_malformed_roster_names_its_line(tmp_path, run_cli, text, expected):
    roster = tmp_path / "roster.csv"
    roster.write_text(text)
    assert_one_line_error(*run_cli("--count", 1, "--students", roster, "--out", tmp_path / "o"),
                          expected)


def test_line_breaks_inside_a_cell_do_not_split_a_student(tmp_path, run_cli):
    roster = tmp_path / "roster.csv"
    roster.write_text('id,name\ns1,"Ada\nLovelace"\ns2,Grace\x0bMurray\x0cHopper\u2028Jr\n',
                      newline="")
    assert run_cli("--count", 1, "--students", roster, "--out", tmp_path / "o")[0] == 0
    papers = json.loads((tmp_path / "o" / "problems.json").read_text())["papers"]
    assert [(p["student_id"], p["name"]) for p in papers] == [
        ("s1", "Ada Lovelace"), ("s2", "Grace Murray Hopper Jr")]


# -- templates are sandboxed -------------------------------------------------------------------

@pytest.mark.parametrize("payload", [
    "<< cycler.__init__.__globals__.os.popen('touch PWNED').read() >>",
    "<< self.__init__.__globals__ >>",
    "<% set x = [] %><< x.append(1) >>",
    "<< ''.__class__.__mro__[1].__subclasses__() >>",
])
def test_a_malicious_template_cannot_run_code(tmp_path, run_cli, monkeypatch, payload):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine" / "latex"
    mine.mkdir(parents=True)
    (mine / "header.tex.j2").write_text(payload + "\n")
    code, out, err = run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert_one_line_error(code, out, err, "template: ")
    assert "unsafe" in err
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "o").exists()


@pytest.mark.tex
def test_a_paper_template_that_breaks_the_split_is_reported(tmp_path, run_cli):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\na1,Ann\nb2,Bob\n")
    out = tmp_path / "o"
    assert run_cli("--count", 1, "--students", roster, "--pdf", "--out", out)[0] == 0
    before = folder_files(out)
    mine = tmp_path / "mine" / "latex"
    mine.mkdir(parents=True)
    builtin = Path(__file__).resolve().parent.parent / "templates" / "latex" / "paper.tex.j2"
    (mine / "paper.tex.j2").write_text(
        "\n".join(line for line in builtin.read_text().splitlines() if "typeout" not in line))
    code, _, err = run_cli("--count", 1, "--students", roster, "--pdf", "--out", out,
                           "--templates", tmp_path / "mine")
    assert code == 1 and err.count("\n") == 1
    assert "2 papers, but the TeX log marks 0 paper starts" in err
    assert folder_files(out) == before  # the earlier papers are all still there


def test_bytecode_compiled_outside_the_sandbox_is_never_loaded_into_it(tmp_path):
    """Jinja keys its cache by the template's source; ours names the sandbox as well."""
    import jinja2

    from generator.rendering.render import QuietBytecodeCache, make_environment
    (tmp_path / "t.j2").write_text("{{ x }}")
    (tmp_path / "cache").mkdir()
    cache = QuietBytecodeCache(str(tmp_path / "cache"))
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)),
                               bytecode_cache=jinja2.FileSystemBytecodeCache(str(tmp_path / "cache")))
    plain.get_template("t.j2")  # bytecode of an unsandboxed environment, in the same folder
    assert cache.get_cache_key("t.j2", str(tmp_path / "t.j2")) != \
        plain.bytecode_cache.get_cache_key("t.j2", str(tmp_path / "t.j2"))
    assert make_environment(None).bytecode_cache.get_cache_key("x") == cache.get_cache_key("x")
