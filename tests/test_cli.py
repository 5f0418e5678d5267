"""End to end through gen-problems: spec files, random sets, outputs."""

import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import WORKED_EXAMPLE

FIVE_LINES = '''title = "Worked example"
X   = [[1, 0], [0, 1]]
W_Q = [[1, 0], [0, 1]]
W_K = [[1, 0], [0, 2]]
W_V = [[1, 0], [0, 1]]
'''


def load(out):
    return json.loads((out / "problems.json").read_text())


def test_the_first_seed_in_five_lines(tmp_path, run_cli):
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    code, printed, _ = run_cli("--spec", spec, "--out", tmp_path, "--format", "md")
    assert code == 0
    assert "Row 1: e^0.7071 ≈ 2.0281, e^0 = 1; sum = 3.0281" in printed
    assert printed == (tmp_path / "answers.md").read_text()
    problem = load(tmp_path)["problems"][0]
    assert problem["spec"] == {**WORKED_EXAMPLE, "mask": "none", "title": "Worked example"}
    assert problem["steps"]["scaled"] == [[2**-0.5, 0.0], [0.0, 2**0.5]]
    assert problem["exact"]["scaled"] == [["sqrt(2)/2", "0"], ["0", "sqrt(2)"]]
    assert problem["exact"]["weights"][0][1] == "1/(1 + exp(sqrt(2)/2))"
    assert list(problem["steps"]) == ["X", "W_Q", "W_K", "W_V", "Q", "K", "V",
                                      "scores", "scaled", "weights", "output"]


def test_json_list_of_problems_with_mask_scale_and_exact_strings(tmp_path, run_cli):
    spec = tmp_path / "set.json"
    spec.write_text(json.dumps({"problems": [
        {**WORKED_EXAMPLE, "mask": "causal", "title": "Masked"},
        {"Q": [["1/2", "sqrt(2)/2"]], "K": [[1, 0], [0, 1], [1, 1]],
         "V": [[1], [2], [3]], "scale": 1},
    ]}))
    code, _, err = run_cli("--spec", spec, "--out", tmp_path)
    assert code == 0, err
    masked, cross = load(tmp_path)["problems"]
    assert masked["id"] == "set-1" and cross["id"] == "set-2"
    assert masked["steps"]["masked"] == [[2**-0.5, None], [0.0, 2**0.5]]
    assert masked["steps"]["weights"][0] == [1.0, 0.0]
    assert masked["exact"]["weights"][0] == ["1", "0"]
    assert cross["shape"] == {"n_queries": 1, "n_keys": 3, "d_model": None, "d_k": 2, "d_v": 1}
    assert cross["spec"]["Q"] == [["1/2", "sqrt(2)/2"]]  # as the teacher wrote it
    assert cross["spec"]["scale"] == 1
    assert "scaled" not in cross["steps"]  # scale 1: softmax of the raw scores, no scaling step
    assert "X" not in cross["steps"]


def test_the_json_spec_can_be_solved_again(tmp_path, run_cli):
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    run_cli("--spec", spec, "--out", tmp_path / "a")
    again = tmp_path / "again.json"
    again.write_text(json.dumps([p["spec"] for p in load(tmp_path / "a")["problems"]]))
    assert run_cli("--spec", again, "--out", tmp_path / "b")[0] == 0
    assert load(tmp_path / "a")["problems"][0]["steps"] == load(tmp_path / "b")["problems"][0]["steps"]


def test_random_set_is_reproducible_byte_for_byte(tmp_path, run_cli):
    for folder in ("a", "b"):
        code, _, err = run_cli("--count", 5, "--seed", 7, "--practice", "--out", tmp_path / folder)
        assert code == 0, err
        assert "(seed 7)" in err
    for name in ("problems.json", "questions.md", "answers.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    problems = load(tmp_path / "a")["problems"]
    assert [p["id"] for p in problems] == ["M7-1", "M7-2", "M7-3", "M7-4", "M7-5"]
    assert all(p["shape"]["n_queries"] == 3 for p in problems)


def test_problem_i_of_a_seed_does_not_depend_on_the_count(tmp_path, run_cli):
    run_cli("--count", 2, "--seed", 3, "--out", tmp_path / "two")
    run_cli("--count", 6, "--seed", 3, "--out", tmp_path / "six")
    assert load(tmp_path / "two")["problems"][:2] == load(tmp_path / "six")["problems"][:2]


def test_without_a_seed_one_is_chosen_and_reported(tmp_path, run_cli):
    code, _, err = run_cli("--count", 1, "--out", tmp_path)
    assert code == 0
    seed = load(tmp_path)["seed"]
    assert f"(seed {seed})" in err


def test_questions_give_the_matrices_but_not_the_answers(tmp_path, run_cli):
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    run_cli("--spec", spec, "--out", tmp_path)
    questions = (tmp_path / "questions.md").read_text()
    assert "[ 0  2 ]" in questions  # W_K
    for answer in ("0.7071", "2.0281", "0.6698", "0.8044"):
        assert answer not in questions


def test_decimals_option(tmp_path, run_cli):
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    _, printed, _ = run_cli("--spec", spec, "--out", tmp_path, "--format", "md", "--decimals", "2")
    assert "Row 1: e^0.71 ≈ 2.03, e^0 = 1; sum = 3.03" in printed
    assert "at most 2 decimal places" in printed


def test_format_json_prints_the_problems(tmp_path, run_cli):
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    _, printed, _ = run_cli("--spec", spec, "--out", tmp_path, "--format", "json")
    weights = np.array(json.loads(printed)["problems"][0]["steps"]["weights"])
    assert np.allclose(weights, [[0.6698, 0.3302], [0.1956, 0.8044]], atol=5e-5)


def test_user_templates_override_one_file(tmp_path, run_cli):
    override = tmp_path / "mine" / "markdown" / "steps"
    override.mkdir(parents=True)
    (override / "softmax.md.j2").write_text("MY SOFTMAX {{ step.shape[0] }} rows\n")
    spec = tmp_path / "seed.toml"
    spec.write_text(FIVE_LINES)
    _, printed, _ = run_cli("--spec", spec, "--out", tmp_path / "o", "--format", "md",
                            "--templates", tmp_path / "mine")
    assert "MY SOFTMAX 2 rows" in printed
    assert "e^0.7071" not in printed
    assert "S[2,2] = 0·0 + 1·2 = 2" in printed


@pytest.mark.slow
def test_installed_console_script(tmp_path):
    script = Path(sys.executable).with_name("gen-problems")
    done = subprocess.run([script, "--count", "2", "--seed", "1", "--out", tmp_path],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "answers.md").exists()
    failed = subprocess.run([script, "--count", "0"], capture_output=True, text=True, timeout=120)
    assert (failed.returncode, failed.stderr) == (
        2, "gen-problems: error: --count must be a whole number from 1 to 2000, got 0\n")


def test_header_from_config_file_and_options(tmp_path, run_cli):
    config = tmp_path / "header.toml"
    config.write_text('course = "ML 101"\ndate = "1 March 2027"\ntitle = "From the file"\n'
                      'instructions = "Calculators allowed."\n')
    code, _, err = run_cli("--count", "1", "--seed", "1", "--out", tmp_path / "o",
                           "--config", config, "--title", "Midterm: attention")
    assert code == 0, err
    questions = (tmp_path / "o" / "questions.tex").read_text()
    assert r"{\Large\bfseries Midterm: attention}" in questions
    assert "ML 101" in questions and "1 March 2027" in questions
    assert "Calculators allowed." in questions
    assert "Name:" in questions and "Name:" not in (tmp_path / "o" / "answers.tex").read_text()


@pytest.mark.parametrize("text, expected", [
    ('colour = "red"', "unknown key 'colour'"),
    ("course = [1]", "course must be text"),
    ("course = ", "malformed TOML"),
])
def test_bad_config_files(tmp_path, run_cli, text, expected):
    config = tmp_path / "header.toml"
    config.write_text(text)
    code, _, err = run_cli("--count", "1", "--out", tmp_path / "o", "--config", config)
    assert code == 2 and expected in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_the_wheel_builds_quietly_and_carries_every_template(tmp_path):
    """setuptools is told about every template folder, so it neither warns nor drops one."""
    root = Path(__file__).resolve().parent.parent
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path, root],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert "would be ignored" not in built.stdout + built.stderr
    assert "absent from the `packages`" not in built.stdout + built.stderr
    [wheel] = tmp_path.glob("*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if "/templates/" in name}
    templates = {"generator/templates/" + path.relative_to(root / "templates").as_posix()
                 for path in (root / "templates").rglob("*") if path.is_file()}
    assert templates == shipped


def test_an_institution_line_and_extra_fields_for_ones_own_templates(tmp_path, run_cli):
    config = tmp_path / "header.toml"
    config.write_text('institution = "Université de Test"\ncourse = "ML 101"\n[extra]\nroom = "B12"\n')
    mine = tmp_path / "mine" / "latex"
    mine.mkdir(parents=True)
    builtin = Path(__file__).resolve().parent.parent / "templates" / "latex" / "header.tex.j2"
    (mine / "header.tex.j2").write_text(builtin.read_text() + "Room: << dict(info.extra).room >>\n")
    code, _, err = run_cli("--count", 1, "--config", config, "--templates", tmp_path / "mine",
                           "--out", tmp_path / "o")
    assert code == 0, err
    questions = (tmp_path / "o" / "questions.tex").read_text()
    assert "Université de Test" in questions and "Room: B12" in questions
    assert (tmp_path / "o" / "questions.md").read_text().count("Université de Test") == 1


def test_an_override_in_the_wrong_place_is_reported(tmp_path, run_cli):
    (tmp_path / "mine" / "latex" / "step").mkdir(parents=True)
    (tmp_path / "mine" / "latex" / "step" / "softmax.tex.j2").write_text("x\n")
    code, _, err = run_cli("--count", 1, "--templates", tmp_path / "mine", "--out", tmp_path / "o")
    assert code == 0
    assert "step/softmax.tex.j2 is not where a template is read, so it is ignored" in err
    assert "did you mean" in err and "latex/steps/softmax.tex.j2" in err


@pytest.fixture
def toy_format():
    """A format defined here alone: a CSV of every problem's output matrix."""
    from generator.formats import FORMATS, Driver, register

    def write(rendering):
        rows = [f"{q.spec.id},{i + 1}," + ",".join(f"{n.value:.4f}" for n in row)
                for qs in rendering.sets.values() for q in qs
                for i, row in enumerate(q.solution.step("output").entries)]
        return {"outputs.csv": "id,row,values\n" + "\n".join(rows) + "\n"}

    register(Driver("csv", write, files=("outputs.csv",), prints="outputs.csv",
                    help="every output matrix as CSV"))
    yield
    FORMATS.pop("csv")


def test_a_format_registered_in_the_table_is_offered_and_owned(tmp_path, run_cli, toy_format):
    code, printed, err = run_cli("--count", 2, "--format", "csv", "--out", tmp_path)
    assert code == 0, err
    assert printed == (tmp_path / "outputs.csv").read_text() and printed.startswith("id,row,values")
    owned = json.loads((tmp_path / ".gen-problems" / "manifest.json").read_text())["files"]
    assert "outputs.csv" in owned
    assert run_cli("--count", 1, "--out", tmp_path)[0] == 0  # a run without it removes its file
    assert not (tmp_path / "outputs.csv").exists()
    from generator.cli import build_parser
    help_text = " ".join(build_parser().format_help().split())  # however argparse wraps it
    assert "csv: every output matrix as CSV" in help_text


def test_a_kept_exams_set_again_command_keeps_a_registered_formats_name(tmp_path, run_cli,
                                                                        toy_format):
    """The note on an earlier exam's kept record sets it again in every format it was written
    in, a format registered from outside (a plugin's) included."""
    assert run_cli("--count", 1, "--seed", 3, "--format", "moodle,csv", "--out", tmp_path)[0] == 0
    code, _, err = run_cli("--count", 1, "--seed", 4, "--out", tmp_path)
    assert code == 0, err
    [command] = re.findall(r"set that exam again with: (.*)", err)
    assert shlex.split(command)[-2:] == ["--format", "moodle,csv"]


def test_exponentials_of_big_scores_are_summed_in_scientific_notation(tmp_path, run_cli):
    """A teacher's spec with a score of 320: e^320 is printed as 9.4240e+138, and so is its
    row's sum (it once failed the whole run)."""
    spec = tmp_path / "big.toml"
    spec.write_text('X = [[4, 0], [0, 1]]\nW_Q = [[5, 0], [0, 1]]\nW_K = [[4, 0], [0, 1]]\n'
                    'W_V = [[1, 0], [0, 1]]\nscale = 1\n')
    code, printed, err = run_cli("--spec", spec, "--out", tmp_path / "o", "--format", "md")
    assert code == 0, err
    assert "Row 1: e^320 ≈ 9.4240e+138, e^0 = 1; sum = 9.4240e+138" in printed


def test_a_long_run_into_a_pipe_says_now_and_then_how_far_it_is(tmp_path, run_cli, monkeypatch):
    """stderr is not a terminal here (a scheduler's log): plain lines, no bar, also while
    one long document is written (which counts no step)."""
    from generator.running import progress
    monkeypatch.setattr(progress, "LOG_EVERY", 0.02)
    code, _, err = run_cli("--count", 3, "--format", "html", "--out", tmp_path / "o")
    lines = err.splitlines()
    assert code == 0 and lines[-1].startswith("wrote 3 problems"), err
    assert len(lines) > 2, err
    assert all(re.fullmatch(r"gen-problems: (solving|writing|saving), \d+% done after \d+ s", line)
               for line in lines[:-1]), err
    assert "\r" not in err


def test_a_run_on_a_terminal_forks_with_no_progress_thread_alive(tmp_path, monkeypatch):
    """On a terminal the bar is tqdm's; tqdm's monitor thread would be alive at the forks of a
    large run (a lock it holds stays held in the child), so the bar has none."""
    import io
    import threading

    from generator.running import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    with progress.RunProgress(3, 2, False) as bar:
        bar.solved()
        assert [t.name for t in threading.enumerate() if t is not threading.main_thread()
                and "monitor" in type(t).__name__.lower()] == []
