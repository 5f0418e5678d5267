"""The example plugin, examples/gen-problems-pooling, installed as a teacher would install it
(``pip install -e``) into a throwaway venv that sees this one's packages: its question type,
op and format reach that venv's ``gen-problems``, its flags, its help and the redraw command
its papers print, with no file of generator/ naming them.  This venv never sees the plugin."""

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from test_extending import W, X, browser_page
from test_web import fill, needs_browser

from generator import kinds

pytestmark = pytest.mark.slow  # a venv of its own, and gen-problems run in it

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gen-problems-pooling"
TYPE, OP, FORMAT, STEP = "sentence-vector", "mean-pool", "answer-sheet", "pooled"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """The bin folder of a new venv that reads this venv's site-packages (a .pth file), with
    the repository and a copy of the example installed editable: no network, no build
    isolation, nothing installed here."""
    folder = tmp_path_factory.mktemp("plugin-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder / "venv"], check=True)
    python = folder / "venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib"))
    Path(site, "sees-the-test-venv.pth").write_text("\n".join(ours) + "\n")
    plugin = shutil.copytree(EXAMPLE, folder / "pooling",  # its build files land in the copy
                             ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install",
                                "--quiet", "--no-deps", "--no-build-isolation",
                                "-e", ROOT, "-e", plugin], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    return folder / "venv" / "bin"


@pytest.fixture(scope="module")
def gen_problems(venv):
    """Run the venv's gen-problems (first on PATH, as the printed commands name it)."""
    def run(*args, cwd=None):
        env = {**os.environ, "PATH": f"{venv}{os.pathsep}{os.environ['PATH']}"}
        done = subprocess.run(["gen-problems", *map(str, args)], capture_output=True, text=True,
                              env=env, cwd=cwd)
        return done.returncode, done.stdout, done.stderr
    return run


@pytest.fixture(scope="module")
def drawn(gen_problems, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drawn") / "out"
    code, _, err = gen_problems("--types", TYPE, "--count", 2, "--seed", 5, "--practice",
                                "--format", f"md,html,{FORMAT}", "--out", out)
    assert code == 0, err
    return out


def records(out: Path) -> dict:
    return json.loads((out / "problems.json").read_text())


def test_types_draws_the_plugins_type_worked_by_its_op_in_its_own_words(drawn):
    problems = records(drawn)["problems"]
    assert [p["type"] for p in problems] == [TYPE, TYPE]
    assert all(p["parts"][-1]["steps"] == [STEP] and 1 <= p["spec"]["feature"] <= 3
               for p in problems)
    key = (drawn / "answers.md").read_text()
    assert "## Problem 1: A sentence vector by mean pooling" in key  # its title.j2
    assert "the sentence vector o̅ is the mean of the rows of O." in key  # its statement.j2
    lines = re.findall(r"- o̅\[1,(\d)\] = \((.*)\) / 3 = (\S+) / 3 (=|≈) (\S+)", key)
    assert len(lines) == 6  # the op's working, from its own template: d_v = 3, two problems
    for _, terms, total, _, mean in lines:  # each line checks on a calculator
        numbers = [float(t.strip("()")) for t in terms.split(" + ")]
        assert abs(sum(numbers) - float(total)) < 1e-9
        assert abs(float(total) / 3 - float(mean)) <= 0.5e-4 + 1e-12
    assert re.search(r"\\bar\{o\}_\{1,1\} = \\bigl\(", (drawn / "answers.tex").read_text())


def test_the_printed_redraw_command_writes_the_same_bytes(drawn, gen_problems, tmp_path):
    command = records(drawn)["draw_command"]
    assert f"--types {TYPE}" in command and FORMAT in command
    assert f"drawn again by `{command}`" in (drawn / "answers.md").read_text()
    code, _, err = gen_problems(*shlex.split(command)[1:], "--out", tmp_path / "again")
    assert code == 0, err
    files = sorted(p.relative_to(drawn) for p in drawn.rglob("*")
                   if p.is_file() and ".gen-problems" not in p.parts)
    assert Path("answers.csv") in files and Path("practice.html") in files
    for name in files:
        assert (tmp_path / "again" / name).read_bytes() == (drawn / name).read_bytes(), name


def test_its_format_writes_a_csv_answer_sheet(drawn):
    with open(drawn / "answers.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    problem = records(drawn)["problems"][0]
    pooled = [row for row in rows if row["problem"] == problem["id"] and row["step"] == STEP]
    np.testing.assert_allclose([float(row["key"]) for row in pooled],
                               problem["steps"][STEP][0], atol=0.5e-4)
    assert all(0 < float(row["tolerance"]) < 0.01 for row in pooled)
    choice = next(row for row in rows if row["problem"] == problem["id"] and row["step"] == "choice")
    assert choice["key"] == problem["choices"][0]["answer"].upper()


def test_help_lists_the_type_and_the_format(gen_problems):
    code, out, _ = gen_problems("--help")
    text = " ".join(out.split())
    assert code == 0 and TYPE in text and f"{FORMAT}: answers.csv" in text


def test_the_practice_page_carries_the_ops_function(drawn):
    page = (drawn / "practice.html").read_text()
    assert f'    "{OP}": (step, rows) => [rows[0].map(' in page
    assert "average the rows of" in page  # its hint


def test_a_spec_file_gives_the_types_parameter_and_record_reads_it_back(gen_problems, tmp_path):
    spec = tmp_path / "pooled.toml"
    spec.write_text(f'type = "{TYPE}"\nfeature = 2\n'
                    + "".join(f"{name} = {json.dumps(value)}\n" for name, value in {"X": X, **W}.items()))
    code, _, err = gen_problems("--spec", spec, "--out", tmp_path / "out")
    assert code == 0, err
    problem = records(tmp_path / "out")["problems"][0]
    assert problem["spec"]["feature"] == 2
    assert "pulls feature 2 of o̅ up the most?" in (tmp_path / "out" / "questions.md").read_text()
    code, _, err = gen_problems("--problem", problem["id"], "--record", tmp_path / "out" / "problems.json",
                                "--out", tmp_path / "again")
    assert code == 0, err
    again = records(tmp_path / "again")["problems"][0]
    assert again["spec"] == problem["spec"] and again["steps"] == problem["steps"]


@pytest.mark.parametrize("feature, says", [
    (7, "pooled.toml: feature must be a whole number from 1 to 2, got 7"),
    ('"two"', "pooled.toml: feature must be a whole number from 1 to 2, got 'two'"),
])
def test_a_bad_parameter_is_one_line_and_exit_2(gen_problems, tmp_path, feature, says):
    spec = tmp_path / "pooled.toml"
    spec.write_text(f'type = "{TYPE}"\nfeature = {feature}\n'
                    + "".join(f"{name} = {json.dumps(value)}\n" for name, value in {"X": X, **W}.items()))
    code, _, err = gen_problems("--spec", spec, "--out", tmp_path / "out")
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_the_pooled_vector_is_pytorchs(drawn):
    torch = pytest.importorskip("torch", reason="torch 2.13.0 CPU is the optional 'verify' extra")
    for problem in records(drawn)["problems"]:
        q, k, v = (torch.tensor(problem["steps"][name], dtype=torch.float64) for name in "QKV")
        output = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=problem["spec"].get("mask") == "causal")
        np.testing.assert_allclose(output.mean(dim=0, keepdim=True).numpy(),
                                   problem["steps"][STEP], atol=1e-12)


@needs_browser
def test_the_page_marks_the_pooled_vector_and_names_a_slip(drawn):
    problem = records(drawn)["problems"][0]
    output = np.array(problem["steps"]["output"])
    with browser_page(drawn / "practice.html") as page:
        part = page.locator(f"section.problem[data-problem='{problem['id']}'] .part").last
        grid = part.locator(f"table.grid[data-name={STEP}]")
        fill(grid, [[f"{x:.4f}" for x in output.mean(axis=0)]])
        part.locator("button.check").click()
        assert grid.locator("input.right").count() == 3
        fill(grid, [[f"{x:.4f}" for x in output.sum(axis=0)]])  # summed, not divided by 3
        part.locator("button.check").click()
        assert part.locator(".message").text_content().startswith("this is the sum of each column of O")


def test_no_file_of_the_generator_names_the_plugin():
    assert TYPE not in kinds.type_names()  # this venv never installed it
    named = [path for folder in (ROOT / "generator", ROOT / "templates")
             for path in folder.rglob("*") if path.is_file() and path.suffix != ".pyc"
             and any(name in path.read_text(errors="replace")
                     for name in (TYPE, OP, FORMAT, "gen_problems_pooling"))]
    assert named == []
