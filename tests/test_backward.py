"""Backpropagation through attention: every gradient the engine writes equals PyTorch's
autograd on the same computation (float64), a hand-checked problem prints every number,
and the practice page carries a student's own gradients forward."""

import json
import math

import numpy as np
import pytest
from conftest import make_question, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_extending import browser_page
from test_properties import records
from test_web import fill, needs_browser

HALVES = st.sampled_from([-1, -0.5, 0.5, 1, 2])


@st.composite
def backward_records(draw):
    record = draw(records())
    rows = len(record.get("Q", record.get("X")))
    columns = len(record.get("V", record.get("W_V"))[0])
    record["dO"] = draw(st.lists(st.lists(HALVES, min_size=columns, max_size=columns),
                                 min_size=rows, max_size=rows))
    return record


def autograd(torch, record, spec):
    """The same attention in torch, float64, with every intermediate's gradient kept."""
    t = {name: torch.tensor(np.array(spec.matrices[name], dtype=float).astype(float),
                            dtype=torch.float64, requires_grad=True) for name in spec.matrices}
    if "X" in t:
        q, k, v = (t["X"] @ t[f"W_{n}"] for n in "QKV")
    else:
        q, k, v = t["Q"], t["K"], t["V"]
    for tensor in (q, k, v):
        tensor.retain_grad()
    scores = q @ k.T
    scores.retain_grad()
    factor = 1 / math.sqrt(spec.d_k) if spec.scale is None else float(spec.scale)
    scaled = scores * factor
    scaled.retain_grad()
    logits = scaled
    if spec.mask == "causal":
        logits = scaled.masked_fill(torch.triu(torch.ones_like(scaled, dtype=torch.bool), 1), -math.inf)
    weights = torch.softmax(logits, dim=1)
    weights.retain_grad()
    output = weights @ v
    (output * t["dO"]).sum().backward()
    grads = {"dV": v.grad, "dweights": weights.grad, "dscaled": scaled.grad, "dQ": q.grad,
             "dK": k.grad}
    if not spec.unscaled:
        grads["dscores"] = scores.grad
    else:  # at scale 1 the softmax takes the raw scores: dscaled is their gradient
        grads["dscaled"] = scores.grad
    if "X" in t:
        grads.update({f"dW_{n}": t[f"W_{n}"].grad for n in "QKV"}, dX=t["X"].grad)
    return grads


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(backward_records())
@pytest.mark.slow
def test_every_gradient_equals_autograd(record):
    torch = torch_or_skip()
    question = make_question(**record, type="backward")  # also held against numpy
    spec = question.spec
    for name, expected in autograd(torch, record, spec).items():
        step = question.solution.step(name)
        np.testing.assert_allclose(step.numeric, expected.detach().numpy(), rtol=1e-9, atol=1e-9,
                                   err_msg=name)
        if name in ("dV", "dweights", "dscaled"):  # the exact forms, evaluated afresh, agree
            exact = np.array([[float(n.exact.evalf(30)) for n in row] for row in step.entries])
            np.testing.assert_allclose(exact, step.numeric, rtol=1e-9, atol=1e-9, err_msg=name)


GOLDEN = {"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]],
          "dO": [[1, 0], [0, 1]]}


def test_a_hand_checked_problem_prints_every_number(tmp_path, run_cli):
    """Worked by hand: S = I, S~ = I/sqrt(2), a row of A is [0.6698, 0.3302] (1/(1 + e^-0.7071)),
    dV = A^T dO = A^T, dA = dO V^T = V^T, each row of dS~ is a1 a2 (g1 - g2) = -+0.4424,
    dS = dS~/sqrt(2) = -+0.3128, dQ = dS K = dS, dK = dS^T Q = dS^T."""
    spec = tmp_path / "golden.json"
    spec.write_text(json.dumps({**GOLDEN, "type": "backward"}))
    assert run_cli("--spec", spec, "--out", tmp_path / "o")[0] == 0
    key = (tmp_path / "o" / "answers.md").read_text()
    for printed in ("[ 0.6698  0.3302 ]\n    [ 0.3302  0.6698 ]",  # A, and dV = A^T
                    "[ 1  3 ]\n    [ 2  4 ]",  # dA = V^T
                    "[ -0.4424  0.4424 ]\n    [ -0.4424  0.4424 ]",  # dS~
                    "[ -0.3128  0.3128 ]\n    [ -0.3128  0.3128 ]",  # dS and dQ
                    "[ -0.3128  -0.3128 ]\n    [  0.3128   0.3128 ]"):  # dK
        assert printed in key, printed
    # written with the places that make the line check on a calculator: 0.66976 + 0.99072
    assert "- Row 1: sum of weights·gradients = 0.66976·1 + 0.33024·3 ≈ 1.6605" in key
    record = json.loads((tmp_path / "o" / "problems.json").read_text())["problems"][0]
    assert [p["task"] for p in record["parts"]] == ["dV", "dweights", "dscaled", "dscores", "dQ", "dK",
                                                    "why-scale"]
    assert record["steps"]["dscaled"][0] == pytest.approx([-0.442362, 0.442362], abs=1e-6)


def test_one_row_alone_states_only_what_it_prints(tmp_path, run_cli):
    """With ``row``, only V, A and dO are printed: the statement speaks of V, not of Q's and K's rows."""
    spec = tmp_path / "row.json"
    spec.write_text(json.dumps({**GOLDEN, "type": "backward", "row": 2}))
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "o")[0] == 0
    sheet = (tmp_path / "o" / "questions.md").read_text()
    assert "The rows of V are the values of 2 keys; here d_k = 2 and d_v = 2." in sheet
    assert "Q (" not in sheet and "rows of Q" not in sheet and "K and V" not in sheet


@pytest.mark.slow
def test_drawn_backward_problems_at_every_difficulty(tmp_path, run_cli):
    for difficulty in ("easy", "medium", "hard"):
        out = tmp_path / difficulty
        assert run_cli("--types", "backward", "--count", 3, "--seed", 2, "--difficulty", difficulty,
                       "--practice", "--out", out)[0] == 0
        problems = json.loads((out / "problems.json").read_text())["problems"]
        for problem in problems:
            assert problem["type"] == "backward" and "dO" in problem["spec"]
            assert {"dV", "dweights", "dscaled", "dQ", "dK", "dX"} <= set(problem["steps"])
            assert max(abs(x) for row in problem["steps"]["dscaled"] for x in row if x) >= 1e-4


@needs_browser
def test_the_page_carries_a_students_own_gradients_forward(tmp_path, run_cli):
    spec = tmp_path / "golden.json"
    spec.write_text(json.dumps({**GOLDEN, "type": "backward"}))
    assert run_cli("--spec", spec, "--format", "html", "--out", tmp_path)[0] == 0
    question = make_question(**GOLDEN, type="backward")
    a = question.solution.step("weights").numeric
    da = question.solution.step("dweights").numeric.copy()
    da[0][0] += 1  # a slip in dA
    own = a * (da - (a * da).sum(axis=1, keepdims=True))
    with browser_page(tmp_path / "practice.html") as page:
        parts = page.locator(".part")
        fill(parts.nth(1).locator("table.grid"), [[f"{x:g}" for x in row] for row in da])
        fill(parts.nth(2).locator("table.grid"), [[f"{x:.4f}" for x in row] for row in own])
        parts.nth(2).locator("button.check").click()
        assert parts.nth(2).locator(".marks").text_content() == "4 of 4 answers right ✓"
        parts.nth(1).locator("button.check").click()
        assert parts.nth(1).locator(".marks").text_content() == "3 of 4 answers right"


def test_the_softmax_jacobian_equals_autograds_and_its_rows_sum_to_zero():
    torch = torch_or_skip()
    record = {**GOLDEN, "K": [[1, 0], [1, 1]], "type": "softmax-jacobian", "row": 2}
    question = make_question(**record)
    spec = question.spec
    logits = question.solution.step("scaled").numeric[spec.row]
    jacobian = torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s, dim=0), torch.tensor(logits, dtype=torch.float64))
    worked = question.worked[0][1]
    np.testing.assert_allclose(worked.step("jacobian").numeric, jacobian.numpy(), atol=1e-12)
    np.testing.assert_allclose(worked.step("jacobian").numeric.sum(axis=1), 0, atol=1e-12)
    # J applied to dA's row is the backward pass's softmax step, row spec.row
    np.testing.assert_allclose(worked.step("jvp").numeric[0],
                               make_question(**{**GOLDEN, "K": record["K"], "type": "backward"})
                               .solution.step("dscaled").numeric[spec.row], atol=1e-12)
    assert [p.task for p in question.parts] == ["jacobian", "jvp", "row-sums"]
    assert question.marks == 5


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_drawn_gradients_equal_autograd_and_the_items_claims_hold(difficulty):
    from dataclasses import replace

    from generator.kinds.sampling import draw_options, sample_set
    from generator.running.pipeline import solve_checked
    torch = torch_or_skip()
    options = replace(draw_options(difficulty), mask="mixed")
    for spec in sample_set(options, 6, 8, 1, ("backward", "softmax-jacobian")):
        question = solve_checked(spec)
        for name, expected in autograd(torch, None, spec).items():
            np.testing.assert_allclose(question.solution.step(name).numeric, expected.detach().numpy(),
                                       rtol=1e-9, atol=1e-9, err_msg=f"{spec.id} {name}")
        parts = {part.task: part for part in question.parts}
        if "ignored-key" in parts:  # the least-attended key's row of dV is the smallest
            key = parts["ignored-key"].answer[0]
            sizes = np.abs(question.solution.step("dV").numeric).sum(axis=1)
            assert sizes.argmin() == key
        if "why-scale" in parts:  # without the scaling, that row passes back less
            row, _, _, kept, lost, _ = parts["why-scale"].answer
            assert lost < kept
