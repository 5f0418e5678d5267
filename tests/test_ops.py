"""The op registry (generator/maths/ops.py): every op carries every face, and a toy op registered
here, outside generator/, is computed, cross-checked, marked, timed, hinted and worked on the
practice page like a built-in one."""

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_extending import q_follows_a_slip_before_it
from test_web import needs_browser

from generator.formats.web import practice_data, practice_script
from generator.maths import engine, ops, steps
from generator.maths.crosscheck import CrossCheckError, cross_check
from generator.maths.marking import MARGIN, Tolerances, half_unit
from generator.maths.spec import SpecError, spec_from_record
from generator.rendering import paper
from generator.rendering.hints import NO_HINT, OpHint
from generator.rendering.template_files import BUILTIN_TEMPLATES
from generator.running.pipeline import solve_checked

GENERATOR = Path(__file__).resolve().parent.parent / "generator"


# --- every op carries every face ------------------------------------------------------

@pytest.mark.parametrize("name", list(ops.registered()))
def test_every_registered_op_has_every_face(name):
    op = ops.op(name)
    for face in (op.exact, op.numeric, op.tolerance, op.seconds, op.shape, op.slips):
        assert callable(face), (name, face)
    assert isinstance(op.hint, OpHint)
    assert isinstance(op.script, str)
    assert set(op.templates) == set(ops.STEP_FORMATS), name  # its working in every step format
    for template in op.templates.values():
        assert (BUILTIN_TEMPLATES / template).is_file(), (name, template)


@pytest.mark.parametrize("name", [n for n in ops.registered() if n != "given"])
def test_every_op_a_step_is_computed_by_has_its_own_arithmetic_and_page_function(name):
    """Only a given is read rather than computed: every other op has a numpy check, a
    tolerance rule and a function on the page (the page computes every step it marks)."""
    op = ops.op(name)
    assert op.numeric is not ops.not_computed and op.tolerance is not ops.not_computed
    assert op.script.strip() and f"    {json.dumps(name) if '-' in name else name}: " in practice_script()


def test_every_registered_step_has_a_registered_op():
    assert {step.op for step in steps.REGISTRY.values()} <= set(ops.registered())


def test_a_step_of_an_unregistered_op_is_refused():
    with pytest.raises(ValueError, match="op must be a registered one"):
        steps.register(steps.StepDef("odd", "no-such-op", ("X",)))
    assert "odd" not in steps.REGISTRY


@pytest.mark.parametrize("module", ["maths/engine.py", "maths/marking.py", "rendering/hints.py"])
def test_the_engine_and_marking_name_no_step_of_their_own(module):
    """Step names belong to the step registry (steps.py): the modules that compute, mark and
    hint a step know it by its StepDef, never by a name of their own.  (The cross-check's
    attention_steps reads d_k off the given Q or W_Q: a fact of the problem, not of a step.)"""
    tree = ast.parse((GENERATOR / module).read_text())
    literals = {node.value for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not (literals & (set(steps.REGISTRY) - set(ops.registered()))), module


# --- a toy op, registered from outside generator/: the Hadamard (entrywise) product ---

def hadamard_exact(step_def, inputs, spec, num):
    a, b = (step.entries for step in inputs)
    entries = tuple(tuple(num(x.exact * y.exact) for x, y in zip(row_a, row_b))
                    for row_a, row_b in zip(a, b))
    return engine.Step(step_def.name, step_def.worded(), "hadamard", entries)


def hadamard_tolerance(step, inputs, errors, u, spec):
    (a, b), (ea, eb) = inputs, errors
    return ea * np.abs(b) + np.abs(a) * eb + ea * eb


HADAMARD = ops.Op(
    "hadamard", hadamard_exact, lambda step, a, b, **_: a * b, hadamard_tolerance,
    OpHint("multiply ${{ a }}$ and ${{ b }}$ entry by entry."), paper.each_entry("product term"),
    ops.DEFAULT_TEMPLATES, "(step, a, b) => a.map((row, i) => row.map((x, j) => x * b[i][j]))",
    steps.same_shapes)

X = [[1, 0], [0, 1], [1, 1]]
G = [[2, 1], [1, 3], [0, 1]]
W = {"W_Q": [[1, 2], [0, 1]], "W_K": [[1, 0], [1, 1]], "W_V": [[2, 0], [0, 1]]}


@pytest.fixture
def hadamard_step():
    """X gated entry by entry by a given G before the projections: X' = X ⊙ G."""
    ops.register_op(HADAMARD)
    steps.register(steps.given_def("G", "G"), before="Q")
    steps.register(steps.StepDef(
        "gated", "hadamard", ("X", "G"), symbol="X'", text="gated = X * G",
        formula=r"$X' = X \odot G$", prompt=r"Gate the inputs: $X' = X \odot G$.", marks=1),
        before="Q", takes_place_of="X")
    yield
    steps.unregister("gated", restores="X")
    steps.unregister("G")
    ops.unregister_op("hadamard")


def test_a_toy_op_is_planned_computed_cross_checked_marked_and_timed(hadamard_step):
    question = solve_checked(spec_from_record({"X": X, "G": G, **W}, "toy"))
    solution = question.solution
    gated = np.array(X, dtype=float) * np.array(G, dtype=float)
    assert [(s.name, s.op) for s in solution.plan][5] == ("gated", "hadamard")  # in the plan
    np.testing.assert_array_equal(solution.step("gated").numeric, gated)  # the engine's face
    np.testing.assert_array_equal(solution.step("Q").numeric, gated @ np.array(W["W_Q"]))

    values = {s.name: s.numeric for s in solution.steps}
    values["gated"] = values["gated"] + 1e-6
    with pytest.raises(CrossCheckError, match="gated"):  # numpy's face checks it
        cross_check(values, solution.plan, None, 2)

    part = next(p for p in question.parts if p.task == "gated")
    tolerance = Tolerances(question, 4).of(part.steps[0])  # marking's face: X and G are exact
    np.testing.assert_allclose(tolerance.chain, np.full((3, 2), half_unit(4) * MARGIN))
    assert paper.part_seconds(part) == 6 * paper.seconds("product term")  # its seconds face

    problem = practice_data(paper.answer_keys({1: [question]})[0], 4)["problems"]["toy"]
    assert problem["graph"]["gated"]["op"] == "hadamard"
    assert problem["graph"]["Q"]["inputs"] == ["gated", "W_Q"]
    with pytest.raises(SpecError, match=r"gated = X \* G: X is 3x2 but G is 2x2"):  # its shape face
        spec_from_record({"X": X, "G": G[:2], **W}, "short")


def toy_spec(folder: Path) -> Path:
    spec = folder / "toy.toml"
    spec.write_text("".join(f"{name} = {json.dumps(value)}\n"
                            for name, value in {"X": X, "G": G, **W}.items()))
    return spec


def test_a_toy_op_reaches_every_format_and_the_pages_script(tmp_path, run_cli, hadamard_step):
    code, _, err = run_cli("--spec", toy_spec(tmp_path), "--format", "md,html,moodle", "--out",
                           tmp_path / "out")
    assert code == 0, err
    out = tmp_path / "out"
    assert "(a) [1 mark] Gate the inputs: X' = X ⊙G." in (out / "questions.md").read_text()
    assert "**X' = X ⊙G** (3×2, 1 mark)" in (out / "answers.md").read_text()  # its template
    page = (out / "practice.html").read_text()
    assert "    hadamard: (step, a, b) => a.map((row, i) => row.map((x, j) => x * b[i][j])),\n" in page
    assert "multiply" in page  # its hint
    data = json.loads(re.search(r'<script id="answers" type="application/json">(.*?)</script>',
                                page, re.S).group(1))
    assert data["problems"]["toy-1"]["graph"]["gated"]["op"] == "hadamard"


@needs_browser
def test_the_page_computes_a_toy_op_from_the_students_own_values(tmp_path, run_cli, hadamard_step):
    """The page's OPS table holds the toy op's script: Q is marked against the student's X'."""
    assert run_cli("--spec", toy_spec(tmp_path), "--format", "html", "--out", tmp_path)[0] == 0
    slipped = np.array(X, dtype=float) * np.array(G, dtype=float)
    slipped[2][1] = 5  # a slip in one entry of X'; Q follows from it
    q_follows_a_slip_before_it(tmp_path / "practice.html", slipped, W["W_Q"])


def test_no_hint_is_a_face_of_its_own():
    assert NO_HINT.how == "" and NO_HINT.first is None
