"""The block type: every step equals PyTorch float64 (``layer_norm``, ``Linear`` and ``relu``, and the
whole block against ``nn.TransformerEncoderLayer`` with the spec's weights, post-LN and pre-LN), over
random specs and drawn problems; the typical slips are marked wrong; spec files fail in one line."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from conftest import solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.kinds.block import readable_root
from generator.kinds.sampling import draw_options
from generator.maths.marking import Tolerances
from generator.maths.spec import SpecError, spec_from_record
from generator.running.pipeline import solve_checked

ENTRY = st.one_of(st.integers(-3, 3), st.integers(-200, 200).map(lambda n: str(sympy.Rational(n, 100))))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVELS = ("easy", "medium", "hard")


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


def floats(rows) -> np.ndarray:
    return np.array([[float(sympy.sympify(x)) for x in row] for row in rows], dtype=float)


@st.composite
def records(draw):
    # torch's one head is d_model wide: d_k and d_v at most d_model (padded to it)
    n, d, d_ff = draw(st.integers(1, 3)), draw(st.integers(2, 4)), draw(st.integers(1, 3))
    d_k = draw(st.integers(1, d))
    with_w_o = draw(st.booleans())
    d_v = draw(st.integers(1, d)) if with_w_o else d
    record = {"type": "block", "norm": draw(st.sampled_from(["post", "pre"])), "X": draw(matrix(n, d)),
              "W_Q": draw(matrix(d, d_k)), "W_K": draw(matrix(d, d_k)), "W_V": draw(matrix(d, d_v)),
              "gamma": draw(matrix(1, d)), "beta": draw(matrix(1, d)), "W_1": draw(matrix(d, d_ff)),
              "b_1": draw(matrix(1, d_ff)), "W_2": draw(matrix(d_ff, d)), "b_2": draw(matrix(1, d))}
    if with_w_o:
        record["W_O"] = draw(matrix(d_v, d))
    if n > 1 and draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2"]))
    return record


def tensors(spec):
    torch = torch_or_skip()
    return {name: torch.tensor(floats(value), dtype=torch.float64) for name, value in spec.matrices.items()}


def encoder_layer(spec):
    """torch's encoder layer with the spec's weights.  Its one head is d_model wide and scales by
    1/sqrt(d_model): W_Q and W_K are padded with zero columns to d_model (the scores are unchanged)
    and W_Q takes the factor sqrt(d_model) times the spec's scale; W_V is padded likewise, and W_O
    with zero rows (identity where there is none)."""
    torch = torch_or_skip()
    m = tensors(spec)
    d, d_k = spec.d_model, spec.d_k
    d_ff = m["W_1"].shape[1]
    scale = 1 / np.sqrt(d_k) if spec.scale is None else float(spec.scale)
    layer = torch.nn.TransformerEncoderLayer(
        d, nhead=1, dim_feedforward=d_ff, dropout=0.0, activation="relu",
        norm_first=spec.params["norm"] == "pre", batch_first=True, layer_norm_eps=0.0, dtype=torch.float64)

    def padded(w, columns):
        return torch.cat([w, torch.zeros(w.shape[0], columns - w.shape[1], dtype=torch.float64)], dim=1)

    w_q = padded(m["W_Q"], d) * scale * np.sqrt(d)
    w_k, w_v = padded(m["W_K"], d), padded(m["W_V"], d)
    w_o = torch.eye(d, dtype=torch.float64) if "W_O" not in m else torch.cat(
        [m["W_O"], torch.zeros(d - m["W_O"].shape[0], d, dtype=torch.float64)])
    with torch.no_grad():
        attention = layer.self_attn
        attention.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))
        attention.in_proj_bias.zero_()
        attention.out_proj.weight.copy_(w_o.T)
        attention.out_proj.bias.zero_()
        layer.linear1.weight.copy_(m["W_1"].T)
        layer.linear1.bias.copy_(m["b_1"][0])
        layer.linear2.weight.copy_(m["W_2"].T)
        layer.linear2.bias.copy_(m["b_2"][0])
        for norm in (layer.norm1, layer.norm2):
            norm.weight.copy_(m["gamma"][0])
            norm.bias.copy_(m["beta"][0])
    return layer.train()  # the training path (dropout 0): no fused fast path


def assert_steps_are_torchs(question):
    """Each LayerNorm, linear map and ReLU from torch's own functions on the engine's inputs, and
    the block's output from torch's encoder layer."""
    torch = torch_or_skip()
    functional = torch.nn.functional
    m, solution = tensors(question.spec), question.solution

    def step(name):
        return torch.tensor(solution.step(name).numeric, dtype=torch.float64)

    for step_def in solution.plan:
        inputs = [step(name) for name in step_def.inputs]
        if step_def.op == "layer-norm":
            expected = functional.layer_norm(inputs[0], (question.spec.d_model,), weight=m["gamma"][0],
                                             bias=m["beta"][0], eps=0.0)
        elif step_def.op == "linear":
            expected = functional.linear(inputs[0], inputs[1].T, inputs[2][0])
        elif step_def.op == "relu":
            expected = functional.relu(inputs[0])
        else:
            continue
        np.testing.assert_allclose(step(step_def.name).numpy(), expected.numpy(), rtol=0, atol=1e-9)
    with torch.no_grad():
        output = encoder_layer(question.spec)(m["X"][None])[0]
    np.testing.assert_allclose(solution.step("block").numeric, output.numpy(), rtol=0, atol=1e-9)


@SETTINGS
@given(records())
def test_every_step_is_torchs(record):
    try:
        question = solve_checked(spec_from_record(record, "block"))
    except SpecError as error:  # a row of equal entries has no LayerNorm at ε = 0 (pre-LN's X
        # is refused as the file's: "X row 2 has every entry equal: ... its σ = 0", issue 35)
        assert "has every entry equal" in str(error) or "too large to exponentiate" in str(error)
        assert "\n" not in str(error)
        return
    assert_steps_are_torchs(question)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_drawn_problems_are_torchs_and_read_exactly(difficulty):
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 6, 1, ("block",)):
        assert_steps_are_torchs(question)
        for step in question.solution.steps:  # every number a short decimal: 2 places show it exactly
            assert all((sympy.nsimplify(n.exact) * 100).is_Integer for row in step.entries for n in row), step.name
        for name in ("ln1", "ln2", "res2"):
            if name in question.solution.step_names and name != "ln2":
                pass
        norm_inputs = [s.inputs[0] for s in question.solution.plan if s.op == "layer-norm"]
        assert all(readable_root(question.solution.step(n).exact[0]) for n in norm_inputs)
        assert any(v.value < 0 for v in question.solution.step("ffn_in").entries[0])  # ReLU bites


def test_both_arrangements_are_drawn():
    norms = {q.spec.params["norm"] for q in solved_set(draw_options("medium", decimals=2), 5, 6, 1, ("block",))}
    assert norms == {"post", "pre"}


def wrong(question, name: str, theirs: np.ndarray, decimals: int = 2) -> bool:
    """Whether an answer to step ``name`` is marked wrong on the page, which marks each step from the
    student's own earlier values (its local tolerance: here they are the key's); Moodle's and
    Canvas's chain tolerance is test_late_slips_are_refused_in_canvas_and_moodle's."""
    step = question.solution.step(name)
    if theirs.shape != step.numeric.shape:
        return True
    tolerance = Tolerances(question, decimals).of(step).local
    return bool((np.abs(np.round(theirs, decimals) - step.numeric) > tolerance).any())


def layer_norm(x, gamma, beta, ddof=0):
    mean = x.mean(axis=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(axis=1, ddof=ddof, keepdims=True)) + beta


@pytest.mark.parametrize("difficulty", LEVELS)
def test_the_typical_slips_are_marked_wrong(difficulty):
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 6, 1, ("block",)):
        s, plan = question.solution, {step.name: step for step in question.solution.plan}
        get = {step.name: step.numeric for step in s.steps}
        gamma, beta = get["gamma"], get["beta"]
        first = "ln2" if "ln2" in plan else "ln1"  # LN(R_1)
        # the variance over n - 1 (torch.var's default)
        assert wrong(question, first, layer_norm(get["res1"], gamma, beta, ddof=1))
        # the residual forgotten: the sublayer's output normalised alone
        sublayer = plan["res1"].inputs[1]
        if get[sublayer].std() > 0:  # a constant row has no LayerNorm to slip into
            assert wrong(question, first, layer_norm(get[sublayer], gamma, beta))
        assert wrong(question, "res1", get[sublayer])
        # ReLU after W_2 as well
        relu_after = np.maximum(get["ffn_out"], 0)
        if (get["ffn_out"] < -0.05).any():
            assert wrong(question, "ffn_out", relu_after)
        # ReLU left out
        assert wrong(question, "ffn_hidden", get["ffn_in"])


def late_slips(question) -> list[tuple[str, np.ndarray]]:
    """(step, what a student who slips there writes, from the key's earlier values) for the block's
    last steps: the last LayerNorm over n − 1, ReLU left out (and carried on through W_2), ReLU after
    W_2, and the last residual forgotten."""
    plan = {step.name: step for step in question.solution.plan}
    get = {step.name: step.numeric for step in question.solution.steps}
    gamma, beta = get["gamma"], get["beta"]
    last_norm = [s for s in question.solution.plan if s.op == "layer-norm"][-1]
    slips = [(last_norm.name, layer_norm(get[last_norm.inputs[0]], gamma, beta, ddof=1)),
             ("ffn_out", get["ffn_in"] @ get["W_2"] + get["b_2"])]
    if (get["ffn_out"] < -0.05).any():
        slips.append(("ffn_out", np.maximum(get["ffn_out"], 0)))
    last_add = [s for s in question.solution.plan if s.op == "add"][-1]
    slips.append((last_add.name, get[last_add.inputs[1]]))
    if last_norm.name != "ln2" and plan[last_norm.name].inputs[0] == last_add.name:  # post-LN: normalised
        slips.append((last_norm.name, layer_norm(get[last_add.inputs[1]], gamma, beta)))
    return slips


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_late_slips_are_refused_in_canvas_and_moodle(decimals, tmp_path):
    """Moodle's and Canvas's margin (the chain tolerance, carried through every step before) stays
    narrow enough through the block that a slip in its last steps is refused wherever it lands
    farther than twice what a rounding student can reach (test_qti's interval arithmetic): nearer,
    no margin could tell it from rounding."""
    import canvas_import as canvas
    from test_qti import numerical_items, package_of, reaches, typed

    caught, near = 0, []
    for difficulty in LEVELS:
        for question in solved_set(draw_options(difficulty, decimals=decimals), 7, 4, 1, ("block",)):
            asked: dict[str, list] = {}
            for item, _, letter, k, i, j in numerical_items(canvas.import_package(
                    package_of([question], tmp_path, decimals))):
                step = next(p for p in question.parts if p.letter == letter).written[k - 1]
                asked.setdefault(step.name, []).append((item, i, j))
            tolerances, reach = Tolerances(question, decimals), reaches(question, decimals)
            for name, theirs in late_slips(question):
                step, theirs = question.solution.step(name), np.round(theirs, decimals)
                if not (np.abs(theirs - step.numeric) > 2 * reach[id(step)]).any():
                    near.append(name)
                    continue
                assert (np.abs(theirs - step.numeric) > tolerances.of(step).chain).any(), \
                    (question.spec.id, name)  # Moodle's margin is the chain's
                assert any(not canvas.accepts(item, typed(theirs[i, j], decimals))
                           for item, i, j in asked[name]), (question.spec.id, name)
                caught += 1
    # only σ² over n − 1 in a post-LN block's last LayerNorm (a slip of 1 − √(3/4) of each x-hat)
    # lands so near, and seldom: the draw keeps R_2's σ at least 2 (LAST_SIGMA), as rounding's reach
    # on x-hat grows as 1/σ (with σ 1/2 allowed, 7 of these 28 problems were so near)
    assert caught >= 40 and set(near) <= {"block"} and len(near) <= (2 if decimals == 2 else 0), near


def test_the_page_names_the_slips():
    from generator.formats.web import step_graph

    question = solved_set(draw_options("medium", decimals=2), 5, 1, 1, ("block",))[0]
    graph = step_graph(question)
    says = {name: " ".join(slip["says"] for slip in graph[name]["slips"]) for name in graph}
    assert "n − 1" in says["ln1"] and "residual is missing" in says["ln2" if "ln2" in graph else "ln1"]
    assert "ReLU" in says["ffn_out"] and "missing" in says["ffn_in"]


BASE = {"type": "block", "X": [[1, 2, 1, 2]], "W_Q": [[1, 0]] * 4, "W_K": [[0, 1]] * 4,
        "W_V": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], "gamma": [[1, 1, 1, 1]],
        "beta": [[0, 0, 0, 0]], "W_1": [[1, 0], [0, 1], [1, 0], [0, -1]], "b_1": [[0, 1]],
        "W_2": [[1, 0, 0, 1], [0, 1, -1, 0]], "b_2": [[0, 0, 1, 0]]}


def test_the_base_spec_solves_in_both_arrangements():
    for norm in ("post", "pre"):
        assert_steps_are_torchs(solve_checked(spec_from_record({**BASE, "norm": norm}, "b")))


@pytest.mark.parametrize("change, says", [
    ({"norm": "middle"}, 'norm must be "post" (LN(x + Sublayer(x))) or "pre" (x + Sublayer(LN(x))), got'),
    ({"gamma": [[1, 1, 1]]}, "gamma must be 1 × 4 (d_model = 4, d_ff = 2); it is 1 × 3"),
    ({"b_1": [[0, 1, 1]]}, "b_1 must be 1 × 2 (d_model = 4, d_ff = 2); it is 1 × 3"),
    ({"W_2": [[1, 0, 0, 1]]}, "W_2 must be 2 × 4 (d_model = 4, d_ff = 2); it is 1 × 4"),
    ({"W_V": [[1, 0]] * 4}, "W_V must have 4 columns (d_model = 4): the residual adds"),
    ({"W_1": None}, "type block needs W_1"),
    ({"mask": "causal"}, "type block is an encoder block with no mask"),
    ({"X": [[1, 1, 1, 1]]}, "row 1 of res1, the input of the LayerNorm N_1 = LN(res1), has every entry equal"),
    ({"X": [[1, 1, 1, 1]], "norm": "pre"}, "b.toml: X row 1 has every entry equal: the first LayerNorm"),
    ({"b_1": [0, -1]}, "b_1 must be a non-empty list of rows, e.g. [[0, -1]]"),
    ({"gamma": [[1, "x", 1, 1]]}, "gamma row 1, column 2"),
    ({"X": [[1, 2, 1, 2]] * 5}, "type block takes at most 4"),
])
def test_a_bad_spec_fails_in_one_line(change, says):
    record = {key: value for key, value in {**BASE, **change}.items() if value is not None}
    with pytest.raises(SpecError) as caught:
        solve_checked(spec_from_record(record, "b", "b.toml"))
    message = str(caught.value)
    assert says in message and "\n" not in message


@SETTINGS
@given(records(), st.sampled_from([2, 4]))
def test_a_student_who_rounds_is_never_marked_wrong_on_any_spec(record, decimals):
    """The rounding student of test_marking (every step worked from their own rounded values, μ,
    σ², σ and x̂ written down) on spec files' numbers, decimals and softmaxes included: neither the
    page nor Moodle's and Canvas's gaps mark them wrong."""
    from test_marking import false_marks

    try:
        question = solve_checked(spec_from_record(record, "block"))
    except SpecError:
        return
    sigmas = [line.deviation.value for step in question.solution.steps if step.kind == "layer-norm"
              for line in step.working]
    if min(sigmas) < 0.1:  # a row all but constant: rounding to the shown places is no longer small
        return
    assert false_marks(question, decimals) == []


def page_layer_norm(step, x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(x.var(axis=1, keepdims=True)) + beta


@needs_browser
def test_the_page_marks_students_from_their_own_values(tmp_path):
    """Four students type block problems into the practice page (test_practice_students'): who
    rounds, who keeps full precision, who slips early and carries it forward; every cell is marked
    right but the slipped one (the page works each step from the student's own earlier grids); a
    LayerNorm over n − 1 is marked wrong and named."""
    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    students.OPS.setdefault("layer-norm", page_layer_norm)
    students.OPS.setdefault("linear", lambda s, x, w, b: x @ w + b)
    students.OPS.setdefault("relu", lambda s, z: np.maximum(z, 0.0))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for decimals, difficulty in ((2, "medium"), (4, "hard")):
            out = tmp_path / f"d{decimals}"
            assert main(["--practice", "--types", "block", "--count", "4", "--seed", "6", "--decimals",
                         str(decimals), "--difficulty", difficulty, "--format", "html", "--out", str(out)]) == 0
            page = browser.new_page()
            errors: list = []
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            problems = students.marking_data(out / "practice.html")
            for way, (right, cells, wrong, slipped) in students.students_marks(page, problems, decimals).items():
                assert cells > 50 and wrong == slipped, (decimals, way, sorted(wrong ^ slipped)[:10])
            page = browser.new_page()  # the students' grids gone: R_1 is the key's
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            problem_id, problem = next(iter(problems.items()))
            grids = students.grids_of(problem)
            name = "ln2" if "ln2" in grids else "ln1"
            source = grids["res1"]
            gamma, beta = (np.array(problem["given"][g], dtype=float) for g in ("gamma", "beta"))
            unbiased = gamma * (source - source.mean()) / source.std(ddof=1) + beta
            letter = next(key[0] for key, grid in problem["steps"].items() if grid["name"] == name)
            marks = students.type_and_check(page, {problem_id: {name: students.texts(
                unbiased, unbiased, decimals)}}, [[problem_id, letter]])
            said = marks[f"{problem_id} ({letter})"]
            assert "wrong" in marks[f"{problem_id} {name}"] and "n − 1" in str(said), said
            assert errors == []
        browser.close()


def test_a_50_minute_paper_with_full_fits_and_no_calculator_draws(tmp_path, run_cli):
    """A 50-minute sitting of block and full problems fits; without a calculator the block is drawn
    as ever (σ is 1/2, 1, 2 or 5/2: no long division, no exponential)."""
    import re

    code, _, err = run_cli("--minutes", "50", "--types", "block,full", "--versions", "2", "--seed", "11",
                           "--out", tmp_path / "fit")
    assert code == 0, err
    minutes = re.findall(r"about (\d+) minutes of working", (tmp_path / "fit" / "questions.md").read_text())
    assert minutes and all(int(m) <= 50 for m in minutes)
    code, _, err = run_cli("--no-calculator", "--types", "block", "--count", "3", "--seed", "2", "--out",
                           tmp_path / "nc")
    assert code == 0, err
    for problem in re.findall(r"about (\d+) min\)", (tmp_path / "nc" / "questions.md").read_text()):
        assert 8 <= int(problem) <= 15


@pytest.mark.parametrize("difficulty", LEVELS)
def test_a_drawn_block_takes_8_to_15_minutes(tmp_path, run_cli, difficulty):
    import re

    code, _, err = run_cli("--types", "block", "--count", "4", "--seed", "3", "--difficulty", difficulty,
                           "--out", tmp_path)
    assert code == 0, err
    minutes = re.findall(r"marks, about (\d+) min\)", (tmp_path / "questions.md").read_text())
    assert len(minutes) == 4 and all(8 <= int(m) <= 15 for m in minutes), minutes


THREE_TOKENS = {"type": "block", "X": [[1, 0, 2, -1], [0, 1, 1, 0], [2, 1, 0, 1]],
                "W_Q": [[1, 0], [0, 1], [1, 1], [0, -1]], "W_K": [[0, 1], [1, 0], [1, -1], [1, 0]],
                "W_V": [[1, 0, -1, 0], [0, 1, 1, -1], [1, -1, 0, 1], [0, 1, 0, 1]],
                "W_O": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, -1]],
                "gamma": [[1, 2, 1, 0.5]], "beta": [[0, 1, -1, 0]],
                "W_1": [[1, -1, 0], [0, 1, 1], [-1, 0, 1], [1, 1, -1]], "b_1": [[0, -1, 0.5]],
                "W_2": [[1, 0, -1, 0], [0, 1, 0, -1], [1, 1, 0, 0]], "b_2": [[0, 0, 1, -1]]}


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_a_spec_blocks_margins_stay_fair_and_refuse_the_late_slip(norm):
    """A spec file's block of three tokens with W_O (a student's): Moodle's and Canvas's margin, the
    chain tolerance, stays within FAIR times what a rounding student reaches (test_qti's interval
    arithmetic) on every step, the products' and sums' margins not compounded through ten steps;
    and the second LayerNorm over n − 1 is refused (it was accepted, 0.6786 for 0.6291)."""
    from test_qti import FAIR, reaches

    question = solve_checked(spec_from_record({**THREE_TOKENS, "norm": norm}, "three"))
    tolerances, reach = Tolerances(question, 4), reaches(question, 4)
    for step in question.solution.steps:
        if id(step) in reach and step.name not in question.spec.matrices:
            assert (tolerances.of(step).chain <= FAIR * reach[id(step)] + 2e-4).all(), step.name
    for name, theirs in late_slips(question):
        step = question.solution.step(name)
        assert (np.abs(np.round(theirs, 4) - step.numeric) > tolerances.of(step).chain).any(), name


def test_the_notes_say_only_what_the_numbers_show(tmp_path, run_cli):
    """'A negative entry of F stays negative' only where F has one; ε = 0 spaced in Markdown."""
    import json

    for b_2, says in (([[5, 5, 5, 5]], False), ([[0, 0, -5, 0]], True)):
        (tmp_path / "b.json").write_text(json.dumps({**BASE, "b_2": b_2}))
        code, _, err = run_cli("--spec", tmp_path / "b.json", "--out", tmp_path / "out")
        assert code == 0, err
        assert ("stays negative" in (tmp_path / "out" / "answers.md").read_text()) == says
    assert "(here ε = 0)" in (tmp_path / "out" / "questions.md").read_text()


@needs_browser
def test_the_page_names_the_n_minus_1_slip_from_a_hand_rounded_sigma(tmp_path):
    """N_1 over n − 1 worked with σ written 0.5773 (0.1339, 0.8661, where σ's full value gives
    0.1340, 0.8660) is named as the n − 1 slip: the slip is compared within its own rounding."""
    import json

    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    record = {**BASE, "norm": "pre", "beta": [[1, -1, 0, 0]]}
    (tmp_path / "b.json").write_text(json.dumps(record))
    assert main(["--spec", str(tmp_path / "b.json"), "--decimals", "4", "--format", "html",
                 "--out", str(tmp_path / "out")]) == 0
    problems = students.marking_data(tmp_path / "out" / "practice.html")  # html: the page
    problem_id, problem = next(iter(problems.items()))
    letter = next(key[0] for key, grid in problem["steps"].items() if grid["name"] == "ln1")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((tmp_path / "out" / "practice.html").as_uri())
        marks = students.type_and_check(page, {problem_id: {"ln1": ["0.1339", "-0.1339", "-0.8661", "0.8661"]}},
                                        [[problem_id, letter]])
        browser.close()
    assert "wrong" in marks[f"{problem_id} ln1"] and "n − 1" in str(marks[f"{problem_id} ({letter})"]), marks


def test_tokens_asked_of_a_drawn_block_are_refused_in_one_line(run_cli, tmp_path):
    """A drawn block has one token: --tokens 2 is refused, not silently drawn as one."""
    code, _, err = run_cli("--types", "block", "--tokens", "2", "--out", tmp_path / "out")
    assert code == 2 and "a drawn block has one token (--tokens 2 cannot apply)" in err
    assert err.count("\n") == 1
