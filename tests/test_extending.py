"""Extending the generator from outside generator/ and templates/: a question type and a
pipeline step, each defined in this file and registered through the public registries
(an output format is registered the same way in test_cli.py, a new op in test_ops.py), and
every format follows.  An installed package registers its own the same way, through entry
points: test_plugins.py, and the example package in test_plugin_package.py."""

import json
import math
import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from pypdf import PdfReader
from test_web import CHROMIUM, CHROMIUM_ARGS, fill, needs_browser

from generator import kinds
from generator.kinds import GIVEN, QuestionType
from generator.kinds.questions import SETUP, Question, given_steps, lettered, step_parts
from generator.maths import steps
from generator.maths.crosscheck import CrossCheckError, cross_check
from generator.maths.engine import solve
from generator.maths.spec import SpecError, spec_from_record
from generator.running.pipeline import solve_checked

X = [[1, 0], [0, 1], [1, 1]]
W = {"W_Q": [[1, 2], [0, 1]], "W_K": [[1, 0], [1, 1]], "W_V": [[2, 0], [0, 1]]}


# --- a toy question type: the scaled scores, and nothing after them -----------------

def scaled_only(spec) -> Question:
    solution = solve(spec)
    parts = lettered(step_parts(solution, (("scores",), ("scaled",))))  # the registry's marks
    return Question(spec.question, spec, solution, given_steps(solution), parts)


SCALED_ONLY = QuestionType(
    "scaled-only", scaled_only, "Scaled scores, and no further",
    (SETUP, GIVEN, r"Stop at the scaled scores $\tilde{S}$: no softmax today."),
    prompts={"scores": r"First the raw scores $S = QK^{\top}$, entry by entry.",
             "scaled": r"Then divide every score by $\sqrt{d_k}$ to get $\tilde{S}$."},
    check=lambda spec: "type scaled-only needs scaled scores" if spec.unscaled else None)


@pytest.fixture
def toy_type():
    kinds.register(SCALED_ONLY)
    yield SCALED_ONLY
    kinds.unregister(SCALED_ONLY.name)


def spec_file(tmp_path, **record):
    lines = [f"{name} = {json.dumps(value)}" for name, value in record.items()]
    path = tmp_path / "problem.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def expected_steps(p=None):
    x = np.array(X, dtype=float) + (0 if p is None else np.array(p, dtype=float))
    q, k, v = (x @ np.array(W[f"W_{n}"], dtype=float) for n in "QKV")
    scores = q @ k.T
    return {"X'": x, "Q": q, "K": k, "V": v, "scores": scores, "scaled": scores / math.sqrt(2)}


@pytest.mark.tex
def test_a_question_type_defined_in_a_test_gets_every_format(tmp_path, run_cli, toy_type):
    spec = spec_file(tmp_path, type="scaled-only", X=X, **W)
    code, _, err = run_cli("--spec", spec, "--pdf", "--format", "md,html,moodle", "--out",
                           tmp_path / "out")
    assert code == 0, err
    out = tmp_path / "out"
    want = expected_steps()

    record = json.loads((out / "problems.json").read_text())["problems"][0]
    assert record["type"] == "scaled-only" and record["marks"] == 3
    assert [(p["task"], p["marks"]) for p in record["parts"]] == [("scores", 2), ("scaled", 1)]
    np.testing.assert_allclose(record["steps"]["scaled"], want["scaled"], atol=1e-12)
    assert "weights" not in [p["task"] for p in record["parts"]]

    for name in ("questions", "answers"):  # real PDFs, read back
        text = " ".join(page.extract_text() for page in PdfReader(out / f"{name}.pdf").pages)
        assert "Scaled scores, and no further" in text and "no softmax today" in text
        assert "First the raw scores" in text and "Then divide every score" in text
    key = (out / "answers.tex").read_text()
    assert r"\tilde{S}_{1,1} = 1 / 1.4142" in key  # the working, from the scaling step's template
    markdown = (out / "answers.md").read_text()
    assert "## Problem 1: Scaled scores, and no further (3 marks" in markdown
    assert "(a) [2 marks] First the raw scores S = QK^T, entry by entry." in markdown
    assert "- S̃[1,2] = 3 / 1.4142 ≈ 2.1213 (exactly 3*sqrt(2)/2)" in markdown

    moodle = ElementTree.parse(out / "moodle.xml").getroot()
    text = moodle.find("question[@type='cloze']/questiontext/text").text
    gaps = re.findall(r"\{(\d+):NUMERICAL:=([-\d.]+):([\d.]+)\}", text)
    assert len(gaps) == 2 * 9 and "MULTICHOICE" not in text
    np.testing.assert_allclose([float(g[1]) for g in gaps[9:]], want["scaled"].flatten(), atol=1e-9)
    weights = [int(g[0]) for g in gaps]  # the parts weigh 2 : 1, as on paper
    assert sum(weights[:9]) == 2 * sum(weights[9:])
    assert moodle.find("question[@type='cloze']/defaultgrade").text == str(sum(weights))

    page = (out / "practice.html").read_text()
    assert page.count('class="grid"') == 2 and 'data-name="scaled"' in page
    data = json.loads(re.search(r'<script id="answers" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    graph = data["problems"]["problem-1"]["graph"]
    assert graph["scaled"]["op"] == "scaling" and graph["scaled"]["inputs"] == ["scores"]


def test_the_toy_type_is_drawn_and_refused_like_the_built_in_ones(tmp_path, run_cli, toy_type):
    code, _, err = run_cli("--types", "scaled-only", "--count", 3, "--practice", "--out", tmp_path)
    assert code == 0, err
    problems = json.loads((tmp_path / "problems.json").read_text())["problems"]
    assert [p["type"] for p in problems] == ["scaled-only"] * 3
    code, _, err = run_cli("--spec", spec_file(tmp_path, type="scaled-only", scale=1, X=X, **W),
                           "--out", tmp_path / "bad")
    assert code == 2 and "type scaled-only needs scaled scores" in err


@needs_browser
def test_the_toy_types_grids_carry_the_students_own_scores_forward(tmp_path, run_cli, toy_type):
    spec = spec_file(tmp_path, type="scaled-only", X=X, **W)
    assert run_cli("--spec", spec, "--format", "html", "--out", tmp_path / "out")[0] == 0
    scores = expected_steps()["scores"].copy()
    scores[0][0] += 1  # a slip in the scores; the scaled scores follow from it
    with browser_page(tmp_path / "out" / "practice.html") as page:
        parts = page.locator(".part")
        fill(parts.nth(0).locator("table.grid"), [[f"{v:g}" for v in row] for row in scores])
        own = scores / math.sqrt(2)
        fill(parts.nth(1).locator("table.grid"), [[f"{v:.4f}" for v in row] for row in own])
        parts.nth(1).locator("button.check").click()
        assert parts.nth(1).locator(".marks").text_content() == "9 of 9 answers right ✓"
        parts.nth(0).locator("button.check").click()
        assert parts.nth(0).locator(".marks").text_content() == "8 of 9 answers right"


# --- a toy pipeline step: positional encodings added to X before the projections ----

@pytest.fixture
def positional_step():
    steps.register(steps.given_def("P", "P"), before="Q")
    steps.register(steps.StepDef(
        "positioned", "add", ("X", "P"), symbol="X'", text="positioned = X + P",
        formula="$X' = X + P$", prompt="Add the positional encodings: $X' = X + P$.", marks=1),
        before="Q", takes_place_of="X")
    yield
    steps.unregister("positioned", restores="X")
    steps.unregister("P")


P = [[0, 1], [1, 0], [0, -1]]


def test_a_pipeline_step_added_through_the_registry_is_solved_and_cross_checked(positional_step):
    question = solve_checked(spec_from_record({"X": X, "P": P, **W}, "pos"))
    solution = question.solution
    want = expected_steps(P)
    assert [s.name for s in solution.steps][:7] == ["X", "W_Q", "W_K", "W_V", "P", "positioned", "Q"]
    np.testing.assert_allclose(solution.step("positioned").numeric, want["X'"])
    for name in ("Q", "K", "V", "scores", "scaled"):
        np.testing.assert_allclose(solution.step(name).numeric, want[name], atol=1e-12)
    assert [p.task for p in question.parts][:2] == ["positioned", "Q"]  # the full type follows
    values = {s.name: s.numeric for s in solution.steps}
    values["positioned"] = values["positioned"] + 1e-6
    with pytest.raises(CrossCheckError, match="positioned"):  # numpy runs the same plan
        cross_check(values, solution.plan, None, 2)
    plain = solve_checked(spec_from_record({"X": X, **W}, "plain"))  # no P given: no such step
    assert "positioned" not in plain.solution.step_names
    with pytest.raises(SpecError, match=r"positioned = X \+ P: X is 3x2 but P is 2x2"):
        spec_from_record({"X": X, "P": P[:2], **W}, "short")  # the registry's shape rule for add


@pytest.mark.tex
def test_a_pipeline_step_reaches_every_format(tmp_path, run_cli, positional_step):
    spec = spec_file(tmp_path, X=X, P=P, **W)
    code, _, err = run_cli("--spec", spec, "--pdf", "--format", "md,html,moodle", "--out", tmp_path)
    assert code == 0, err
    assert "(a) [1 mark] Add the positional encodings: X' = X + P." in (tmp_path / "questions.md").read_text()
    assert "$X' = X + P$" in (tmp_path / "answers.tex").read_text()
    page = (tmp_path / "practice.html").read_text()
    data = json.loads(re.search(r'<script id="answers" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    graph = data["problems"]["problem-1"]["graph"]
    assert graph["positioned"]["op"] == "add" and graph["positioned"]["inputs"] == ["X", "P"]
    assert graph["Q"]["inputs"] == ["positioned", "W_Q"]


@needs_browser
def test_the_page_carries_a_new_steps_own_values_forward(tmp_path, run_cli, positional_step):
    spec = spec_file(tmp_path, X=X, P=P, **W)
    assert run_cli("--spec", spec, "--format", "html", "--out", tmp_path)[0] == 0
    slipped = expected_steps(P)["X'"].copy()
    slipped[2][1] = 5  # the student adds P wrongly in one entry
    q_follows_a_slip_before_it(tmp_path / "practice.html", slipped, W["W_Q"])


def q_follows_a_slip_before_it(page_path, slipped, w_q):
    """On the page, a step before the projections (part a) typed with one slip: Q typed as it
    follows from the student's own X' is all right, and part (a) loses the one entry."""
    q = slipped @ np.array(w_q, dtype=float)
    with browser_page(page_path) as page:
        first, second = page.locator(".part").nth(0), page.locator(".part").nth(1)
        fill(first.locator("table.grid"), [[f"{v:g}" for v in row] for row in slipped])
        fill(second.locator("table.grid[data-name=Q]"), [[f"{v:g}" for v in row] for row in q])
        second.locator("button.check").click()
        assert second.locator("table.grid[data-name=Q] input.right").count() == 6  # from their X'
        first.locator("button.check").click()
        assert first.locator(".marks").text_content() == "5 of 6 answers right"


class browser_page:
    """A page of Debian's chromium, driven by Playwright, on a file the run wrote."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(
            executable_path=CHROMIUM or "/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = self.browser.new_page()
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.goto(self.path.as_uri())
        self.page = page
        return page

    def __exit__(self, *exc):
        assert not self.page.errors, self.page.errors
        self.browser.close()
        self.playwright.stop()
