"""The positions type: sinusoidal encodings, RoPE and ALiBi, each against a reference written here
from the papers' definitions (numpy, none of the engine's code) and against PyTorch float64
attention (scaled_dot_product_attention on X + PE, on the turned Q and K, with ALiBi's bias as its
attn_mask), over random spec files and drawn problems; RoPE's relative offset and the breaking of
permutation equivariance shown numerically; the slips marked wrong; spec files fail in one line;
every format written."""

from __future__ import annotations

import json
import re
import zipfile

import numpy as np
import pytest
import sympy
from conftest import solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.kinds.sampling import draw_options, why_not_drawable
from generator.maths.marking import Tolerances
from generator.maths.spec import SpecError, spec_from_record
from generator.running.pipeline import solve_checked

ENTRY = st.one_of(st.integers(-2, 2), st.integers(-150, 150).map(lambda n: str(sympy.Rational(n, 100))))
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(SETTINGS, max_examples=3)  # the fast tier's; SETTINGS's 30 in the slow tier
ATOL = 1e-9


# -- the references, from the papers ---------------------------------------------------------------

def sinusoidal_reference(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. (2017), section 3.5: PE(pos, 2i) = sin(pos / base^(2i/d)),
    PE(pos, 2i+1) = cos(pos / base^(2i/d))."""
    pe = np.zeros((len(positions), d))
    for row, pos in enumerate(positions):
        for i in range(d // 2):
            pe[row, 2 * i] = np.sin(pos / base ** (2 * i / d))
            pe[row, 2 * i + 1] = np.cos(pos / base ** (2 * i / d))
    return pe


def rope_reference(x: np.ndarray, positions, thetas) -> np.ndarray:
    """Su et al. (RoFormer), eq. (13)-(15): R^d_{Theta,m} x, the block-diagonal matrix of 2 x 2
    rotations by m theta_i, written out and multiplied (the paper's eq. (34) form, not its
    elementwise one)."""
    out = np.zeros_like(x)
    d = x.shape[1]
    for row, m in enumerate(positions):
        rotation = np.zeros((d, d))
        for i, theta in enumerate(thetas):
            c, s = np.cos(m * theta), np.sin(m * theta)
            rotation[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, -s], [s, c]]
        out[row] = rotation @ x[row]
    return out


def alibi_reference(positions, slope: float) -> np.ndarray:
    """Press et al. (2022), section 3: query i's scores get m * [-(i-1), ..., -2, -1, 0] over the keys
    before it; symmetric -m |i - j| where every key is seen."""
    p = np.asarray(positions, dtype=float)
    return -slope * np.abs(p[:, None] - p[None, :])


def alibi_slopes(heads: int) -> list[float]:
    """The paper's slopes: the geometric sequence from 2^(-8/n), ratio 2^(-8/n)."""
    return [2 ** (-8 * k / heads) for k in range(1, heads + 1)]


def test_the_papers_slopes_are_the_drawn_ones():
    assert alibi_slopes(8)[:3] == [1 / 2, 1 / 4, 1 / 8]


# -- a question against the references and torch ---------------------------------------------------

def floats(rows) -> np.ndarray:
    return np.array([[float(x) for x in row] for row in rows], dtype=float)


def given_values(question) -> dict[str, np.ndarray]:
    return {name: floats(m) for name, m in question.spec.matrices.items()}


def positions_of(question) -> list[int]:
    return [int(p) for (p,) in question.solution.step("pos").exact]


def check_against_references(question):
    """Every positional step equals the paper's reference, and the weights and output PyTorch's."""
    torch = torch_or_skip()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    spec, s = question.spec, question.solution
    m, pos = given_values(question), positions_of(question)
    scale = None if spec.scale is None else float(spec.scale)
    causal = spec.mask == "causal"
    if "X" in m:
        x = m["X"]
        if spec.encoding == "sinusoidal":
            pe = sinusoidal_reference(pos, x.shape[1], float(spec.base or 10000))
            np.testing.assert_allclose(s.step("PE").numeric, pe, rtol=0, atol=ATOL)
            x = x + pe
            np.testing.assert_allclose(s.step("X_pe").numeric, x, rtol=0, atol=ATOL)
        q, k, v = x @ m["W_Q"], x @ m["W_K"], x @ m["W_V"]
    else:
        q, k, v = m["Q"], m["K"], m["V"]
    bias = None
    if spec.encoding == "rope":
        thetas = [float(t) for t in s.step("angles").exact[0]]
        if not spec.theta:  # the paper's theta_i = base^(-2i/d)
            d = q.shape[1]
            assert thetas == pytest.approx([float(spec.base or 10000) ** (-2 * i / d) for i in range(d // 2)])
        q, k = rope_reference(q, pos, thetas), rope_reference(k, pos, thetas)
        np.testing.assert_allclose(s.step("Q_rot").numeric, q, rtol=0, atol=ATOL)
        np.testing.assert_allclose(s.step("K_rot").numeric, k, rtol=0, atol=ATOL)
    if spec.encoding == "alibi":
        bias = alibi_reference(pos, float(s.step("alibi_m").exact[0][0]))
        np.testing.assert_allclose(s.step("bias").numeric, bias, rtol=0, atol=ATOL)
    t = {name: torch.tensor(a, dtype=torch.float64) for name, a in (("q", q), ("k", k), ("v", v))}
    mask = None
    if bias is not None:
        mask = torch.tensor(bias, dtype=torch.float64)
        if causal:  # the paper's causal ALiBi: the bias, then -inf above the diagonal
            mask = mask.masked_fill(torch.ones_like(mask, dtype=torch.bool).triu(1), float("-inf"))
    output = sdpa(t["q"], t["k"], t["v"], attn_mask=mask, is_causal=causal and mask is None, scale=scale)
    np.testing.assert_allclose(s.step("output").numeric, output.numpy(), rtol=0, atol=ATOL)
    logits = t["q"] @ t["k"].T * (scale if scale is not None else 1 / np.sqrt(q.shape[1]))
    logits = logits + mask if mask is not None else logits
    if causal and mask is None:
        logits = logits.masked_fill(torch.ones_like(logits, dtype=torch.bool).triu(1), float("-inf"))
    np.testing.assert_allclose(s.step("weights").numeric, torch.softmax(logits, dim=-1).numpy(),
                               rtol=0, atol=ATOL)


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


@st.composite
def records(draw):
    encoding = draw(st.sampled_from(["sinusoidal", "rope", "alibi"]))
    n = draw(st.integers(2, 4))
    d_model = 2 * draw(st.integers(1, 3))
    d_k = 2 * draw(st.integers(1, 2))
    record = {"type": "positions", "encoding": encoding, "X": draw(matrix(n, d_model)),
              "W_Q": draw(matrix(d_model, d_k)), "W_K": draw(matrix(d_model, d_k)),
              "W_V": draw(matrix(d_model, draw(st.integers(1, 3))))}
    if draw(st.booleans()):
        start = draw(st.integers(0, 20))
        record["positions"] = list(range(start, start + n))
    if encoding != "alibi" and draw(st.booleans()):
        record["base"] = draw(st.sampled_from([100, 1000, 10000]))
    if encoding == "rope" and draw(st.booleans()):
        record.pop("base", None)
        record["theta"] = [draw(st.sampled_from(["pi/6", "pi/4", "1", "1/10", "2pi/3"])) for _ in range(d_k // 2)]
    if encoding == "rope":
        record["shift"] = draw(st.integers(1, 5))
    if encoding == "alibi":
        record["slope"] = draw(st.sampled_from(["1/2", "1/4", "1/8", "1/16"]))
    record["mask"] = draw(st.sampled_from(["none", "causal"]))
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2"]))
    return record


@FEW
@given(records())
def test_random_specs_match_the_papers_and_torch(record):
    check_random_spec(record)


@pytest.mark.slow
@SETTINGS
@given(records())
def test_many_random_specs_match_the_papers_and_torch(record):
    check_random_spec(record)


def check_random_spec(record):
    """A random spec file's problem against the papers and torch, unless refused as it should be."""
    try:
        question = solve_checked(spec_from_record(record, "pos"))
    except SpecError as error:  # scores beyond e^700; or tokens 1 and 2 alike, which the swap cannot show
        assert "too large to exponentiate" in str(error) or "changes nothing here" in str(error)
        return
    check_against_references(question)


@pytest.mark.parametrize("decimals, difficulty", [(2, "easy"), (2, "medium"), (2, "hard"), (4, "easy")] + [
    pytest.param(4, difficulty, marks=pytest.mark.slow) for difficulty in ("medium", "hard")])
def test_drawn_problems_match_the_papers_and_torch(decimals, difficulty):
    questions = solved_set(draw_options(difficulty, decimals=decimals), 5, 12, 1, ("positions",))
    assert {q.spec.encoding for q in questions} == {"sinusoidal", "rope", "alibi"}
    for question in questions:
        check_against_references(question)
        assert question.spec.mask == ("causal" if question.spec.encoding == "alibi" else "none")


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_a_set_takes_the_encodings_in_turn(difficulty):
    """As the guide says (seed 2 medium drew alibi, alibi, rope; hard three ALiBi), in a set of
    positions alone and in a mix, and a later version keeps each problem's encoding."""
    from generator.kinds.sampling import sample_set

    options = draw_options(difficulty, decimals=2)
    for seed in (2, 9):
        alone = [spec.encoding for spec in sample_set(options, seed, 6, 1, ("positions",))]
        assert alone == ["sinusoidal", "rope", "alibi"] * 2
        mixed = sample_set(options, seed, 6, 1, ("positions", "full"))
        assert [spec.encoding for spec in mixed[::2]] == ["sinusoidal", "rope", "alibi"]
    later = [spec.encoding for spec in sample_set(options, 2, 3, 2, ("positions",))]
    assert later == ["sinusoidal", "rope", "alibi"]


# -- RoPE's relative offset, and permutation equivariance --------------------------------------------

@SETTINGS
@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4), st.lists(st.floats(-3, 3), min_size=4, max_size=4),
       st.integers(0, 50), st.integers(0, 50), st.integers(-20, 20))
def test_a_turned_score_depends_only_on_the_offset(q, k, m, n, shift):
    """q'_m . k'_n = q'_{m+s} . k'_{n+s}, by the reference (the paper's eq. (16))."""
    q, k = np.array([q]), np.array([k])
    thetas = [1.0, 0.01]
    score = (rope_reference(q, [m], thetas) @ rope_reference(k, [n], thetas).T)[0, 0]
    moved = (rope_reference(q, [m + shift], thetas) @ rope_reference(k, [n + shift], thetas).T)[0, 0]
    assert abs(score - moved) < 1e-9 * max(1, abs(score))


def test_the_offset_part_gives_the_same_score():
    for question in solved_set(draw_options("medium", decimals=2), 5, 12, 1, ("positions",)):
        if question.spec.encoding == "rope":
            s = question.solution
            assert s.step("pos_k").exact[0][0] - s.step("pos_q").exact[0][0] == -1
            assert abs(s.step("s_far").numeric[0, 0] - s.step("rope_scores").numeric[1, 0]) < 1e-12
            assert sympy.simplify(s.step("s_far").exact[0][0] - s.step("rope_scores").exact[1][0]) == 0


def sdpa_output(torch, x, w, pe=None):
    if pe is not None:
        x = x + pe
    t = [torch.tensor(a, dtype=torch.float64) for a in (x @ w[0], x @ w[1], x @ w[2])]
    return torch.nn.functional.scaled_dot_product_attention(*t).numpy()


@pytest.mark.parametrize("seed", range(5))
def test_permutation_equivariance_holds_without_positions_and_breaks_with_them(seed):
    torch = torch_or_skip()
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((4, 4)), [rng.standard_normal((4, 2)) for _ in range(3)]
    order = [1, 0, 3, 2]
    pe = sinusoidal_reference(range(4), 4)
    plain, swapped = sdpa_output(torch, x, w), sdpa_output(torch, x[order], w)
    np.testing.assert_allclose(swapped, plain[order], atol=1e-12)  # equivariant
    with_pe, swapped_pe = sdpa_output(torch, x, w, pe), sdpa_output(torch, x[order], w, pe)
    assert np.abs(swapped_pe - with_pe[order]).max() > 1e-3  # broken


def test_the_permutation_part_shows_it_on_the_problems_own_numbers():
    for question in solved_set(draw_options("medium", decimals=2), 5, 12, 1, ("positions",)):
        if question.spec.encoding == "sinusoidal":
            part = question.parts[-1]
            moved, kept = (np.array([n.value for n in row]) for row in part.answer)
            assert np.abs(moved - kept).max() > 0.05
            swapped = question.extra["swapped"]
            np.testing.assert_allclose(moved, swapped.step("weights").numeric[0])
            assert part.item.choices[part.item.answer].startswith("It is not just")


def reference_weights(x: np.ndarray, question) -> np.ndarray:
    """softmax((X + PE) W_Q ((X + PE) W_K)^T / sqrt(d_k)), from the paper's PE, apart from the engine."""
    g = given_values(question)
    x = x + sinusoidal_reference(positions_of(question), x.shape[1])
    q, k = x @ g["W_Q"], x @ g["W_K"]
    z = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("decimals, difficulty", [(2, "easy")] + [  # the others take 20 s to 2 minutes
    pytest.param(decimals, difficulty, marks=pytest.mark.slow) for decimals in (2, 4)
    for difficulty in ("easy", "medium", "hard") if (decimals, difficulty) != (2, "easy")])
def test_the_permutation_parts_right_answer_is_true_of_every_drawn_problems_numbers(decimals, difficulty):
    """The right choice says X + PE is not the old one swapped and the scores change: after the
    swap the weights' first row, as shown, differs from A's and from PAP^T's (E5-2 and 5 of 17 of
    E11's sinusoids left A as it was); no drawn X has a zero row or two rows alike (E11-14, E11-27)."""
    seen = 0
    for seed in (5, 11):
        for question in solved_set(draw_options(difficulty, decimals=decimals), seed, 40, 1, ("positions",)):
            x = given_values(question)["X"]
            assert not (x == 0).all(axis=1).any() and len({tuple(r) for r in x}) == len(x), question.spec.id
            if question.spec.encoding != "sinusoidal":
                continue
            order = [1, 0, *range(2, len(x))]
            weights, after = reference_weights(x, question), reference_weights(x[order], question)
            shown = np.round(after[0], decimals)
            for other in (weights[0], weights[order][:, order][0]):
                assert np.abs(shown - np.round(other, decimals)).max() > 0, question.spec.id
            assert question.parts[-1].item.topic == "permute-positions"
            seen += 1
    assert seen >= 10


def test_a_spec_whose_swap_leaves_a_as_it_was_gets_a_true_key():
    """E5-2's numbers: K reads only column 2 of X~, (1, 1) in both rows, so A' = A; the item's right
    answer says so, and neither 'the scores change' nor PAP^T is marked right."""
    record = {"type": "positions", "encoding": "sinusoidal", "X": [[-1, 1], [0, 1]], "W_Q": [[1, 1], [0, -1]],
              "W_K": [[0, 0], [1, -1]], "W_V": [[-1, 0], [-1, -1]]}
    question = solve_checked(spec_from_record(record, "pos"))
    x = given_values(question)["X"]
    np.testing.assert_allclose(reference_weights(x[[1, 0]], question), reference_weights(x, question))
    item = question.parts[-1].item
    assert item.topic == "permute-positions-same"
    assert item.choices[item.answer].startswith("With these numbers it stays $A$")
    assert all("the scores and the weights change" not in c for i, c in enumerate(item.choices)
               if i == item.answer)


# -- marking --------------------------------------------------------------------------------------

def wrong(question, name: str, theirs: np.ndarray, decimals: int = 2) -> bool:
    """Whether an answer to step ``name`` is marked wrong (Moodle's and Canvas's chain tolerance)."""
    step = question.solution.step(name)
    tolerance = Tolerances(question, decimals).of(step).chain
    return bool((np.abs(np.round(theirs, decimals) - step.numeric) > tolerance).any())


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_typical_slips_are_marked_wrong(difficulty):
    caught = 0
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 12, 1, ("positions",)):
        s, pos = question.solution, positions_of(question)
        if question.spec.encoding == "sinusoidal":
            d = question.spec.d_model
            degrees = sinusoidal_reference(np.radians(pos), d)
            swapped = sinusoidal_reference(pos, d)[:, [1, 0, 3, 2][:d]]
            assert wrong(question, "PE", degrees) and wrong(question, "PE", swapped)
            assert wrong(question, "X_pe", given_values(question)["X"])  # PE left out
        if question.spec.encoding == "rope":
            thetas = [float(t) for t in s.step("angles").exact[0]]
            backwards = rope_reference(s.step("Q").numeric, [-p for p in pos], thetas)
            assert wrong(question, "Q_rot", backwards)
            assert wrong(question, "Q_rot", s.step("Q").numeric)  # not turned at all
        if question.spec.encoding == "alibi":
            bias = s.step("bias").numeric
            assert wrong(question, "bias", -bias)
            assert wrong(question, "bias", bias / float(s.step("alibi_m").exact[0][0]))
            assert wrong(question, "biased", s.step("scaled").numeric - bias)
        caught += 1
    assert caught == 12


def interleaved(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(len(angles), -1)


# The page's ops as the simulated students of test_practice_students work them (from the papers'
# definitions above, on the page's own inputs: positions, frequencies, angles, slope).
STUDENT_OPS = {
    "sinusoid": lambda s, p, w: interleaved(np.outer(p[:, 0], w[0])),
    "rope": lambda s, x, p, t: rope_reference(x, p[:, 0], t[0]),
    "alibi-bias": lambda s, p, m: alibi_reference(p[:, 0], m[0, 0]),
}


@needs_browser
def test_the_page_marks_students_from_their_own_values(tmp_path):
    """Four students type positions problems into the practice page: who rounds, who keeps full
    precision, who slips early and carries it forward; every cell is marked right but the slipped
    one (the page works each step from the student's own earlier grids); a PE worked in degrees is
    marked wrong and named."""
    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    for name, op in STUDENT_OPS.items():
        students.OPS.setdefault(name, op)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for decimals in (2, 4):
            out = tmp_path / f"d{decimals}"
            assert main(["--practice", "--types", "positions", "--count", "6", "--seed", "6", "--decimals",
                         str(decimals), "--format", "html", "--out", str(out)]) == 0
            page = browser.new_page()
            errors: list = []
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            problems = students.marking_data(out / "practice.html")
            for way, (right, cells, wrong, slipped) in students.students_marks(page, problems, decimals).items():
                assert cells > 100 and wrong == slipped, (decimals, way, sorted(wrong ^ slipped)[:10])
            problem_id, problem = next((i, p) for i, p in problems.items() if "PE" in students.grids_of(p))
            p, w = (students.matrix(problem["known"][n]) for n in ("pos", "freq"))
            degrees = interleaved(np.outer(p[:, 0], w[0]) * np.pi / 180)
            pe = students.grids_of(problem)["PE"]
            marks = students.type_and_check(page, {problem_id: {"PE": students.texts(degrees, pe, decimals)}},
                                            [[problem_id, "a"]])
            assert "wrong" in marks[f"{problem_id} PE"] and "degrees" in marks[f"{problem_id} (a)"]
            assert errors == []
        browser.close()


def rope_student(problem, slip: tuple[str, int, int], decimals: int) -> dict:
    """What a student types into a RoPE problem's grids who slips by +1 at one entry of Q or K and
    works every later step on from their own typed (rounded) values, the offset part's q and k
    too (row 2 of their Q, row 1 of their K)."""
    import test_practice_students as students

    known = {name: students.matrix(m) for name, m in problem["known"].items()}
    pos, theta = known["pos"][:, 0], known["angles"][0]
    typed = {name: students.rounded(known[name], decimals) for name in ("Q", "K")}
    name, i, j = slip
    typed[name][i, j] += 1

    def rounded(m):
        return students.rounded(m, decimals)

    typed["Q_rot"], typed["K_rot"] = (rounded(rope_reference(typed[n], pos, theta)) for n in "QK")
    typed["rope_scores"] = rounded(typed["Q_rot"] @ typed["K_rot"].T)
    typed["scaled"] = rounded(typed["rope_scores"] / np.sqrt(typed["Q"].shape[1]))
    typed["weights"] = rounded(students.softmax(typed["scaled"]))
    (query, key), shift = (1, 0), known["pos_q"][0, 0] - pos[1]
    typed["q_far"] = rounded(rope_reference(typed["Q"][query:query + 1], [pos[query] + shift], theta))
    typed["k_far"] = rounded(rope_reference(typed["K"][key:key + 1], [pos[key] + shift], theta))
    typed["s_far"] = rounded(typed["q_far"] @ typed["k_far"].T)
    return typed


@needs_browser
@pytest.mark.parametrize("slip", [("Q", 1, 1), ("K", 0, 0)])
def test_the_offset_part_is_marked_from_the_students_own_q_and_k(tmp_path, slip):
    """A slip in row 2 of Q or row 1 of K, carried forward rightly, costs the offset part (e)
    nothing: its q and k are the student's own rows (M7-1's Q[2,2] = -1 was marked "turns each pair
    the wrong way" in (e), E5-1's q~ "too high")."""
    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    decimals = 2
    assert main(["--practice", "--types", "positions", "--difficulty", "medium", "--count", "3", "--seed",
                 "7", "--decimals", str(decimals), "--format", "html", "--out", str(tmp_path)]) == 0
    problems = students.marking_data(tmp_path / "practice.html")
    ropes = {i: p for i, p in problems.items() if "q_far" in students.grids_of(p)}
    assert ropes
    entries = {}
    for problem_id, problem in ropes.items():
        keys = students.grids_of(problem)
        entries[problem_id] = {name: students.texts(m, keys[name], decimals)
                               for name, m in rope_student(problem, slip, decimals).items()}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((tmp_path / "practice.html").as_uri())
        marks = students.type_and_check(page, entries)
        browser.close()
    name, i, j = slip
    for problem_id, problem in ropes.items():
        width = students.grids_of(problem)[name].shape[1]
        wrong = {(grid, k) for grid, row in marks.items() if grid.startswith(f"{problem_id} ")
                 and not grid.endswith(")") for k, mark in enumerate(row) if mark != "right"}
        assert wrong == {(f"{problem_id} {name}", i * width + j)}, (problem_id, wrong)
        assert "wrong way" not in marks[f"{problem_id} (e)"]


def test_the_page_names_the_slips():
    from generator.formats.web import step_graph

    said = {}
    for question in solved_set(draw_options("medium", decimals=2), 5, 12, 1, ("positions",)):
        graph = step_graph(question)
        said.update({name: " ".join(slip["says"] for slip in graph[name]["slips"]) for name in graph})
    assert "degrees" in said["PE"] and "swapped" in said["PE"]
    assert "wrong way" in said["Q_rot"] and "penalty" in said["bias"] and "slope" in said["bias"]
    for name in ("Q_rot", "K_rot", "q_far", "k_far"):  # parts (b) and (e), as PE's
        assert "degrees" in said[name] and "swapped" in said[name], name


def rope_slipped(rows: np.ndarray, positions, thetas, slip: str) -> np.ndarray:
    """RoPE worked in degrees, or with cos and sin swapped: (x sin a - y cos a, x cos a + y sin a)."""
    if slip == "degrees":
        return rope_reference(rows, positions, np.radians(thetas))
    out = rows.copy()
    for row, m in enumerate(positions):
        for i, theta in enumerate(thetas):
            x, y, a = rows[row, 2 * i], rows[row, 2 * i + 1], m * theta
            out[row, 2 * i:2 * i + 2] = [x * np.sin(a) - y * np.cos(a), x * np.cos(a) + y * np.sin(a)]
    return out


@needs_browser
def test_the_page_names_ropes_degrees_and_swapped_slips(tmp_path):
    """Q~ worked in degrees is named in (b), q~ with cos and sin swapped in (e)."""
    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    assert main(["--practice", "--types", "positions", "--difficulty", "hard", "--count", "2", "--seed", "9",
                 "--decimals", "2", "--format", "html", "--out", str(tmp_path)]) == 0
    problems = students.marking_data(tmp_path / "practice.html")
    problem_id, problem = next((i, p) for i, p in problems.items() if "q_far" in students.grids_of(p))
    known = {name: students.matrix(m) for name, m in problem["known"].items()}
    keys = students.grids_of(problem)
    theta = known["angles"][0]
    typed = {name: students.texts(students.rounded(known[name], 2), keys[name], 2)
             for name in ("Q", "K", "K_rot", "k_far", "s_far")}
    typed["Q_rot"] = students.texts(rope_slipped(known["Q"], known["pos"][:, 0], theta, "degrees"),
                                    keys["Q_rot"], 2)
    typed["q_far"] = students.texts(rope_slipped(known["q_sel"], known["pos_q"][:, 0], theta, "swapped"),
                                    keys["q_far"], 2)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((tmp_path / "practice.html").as_uri())
        marks = students.type_and_check(page, {problem_id: typed},
                                        [[problem_id, "a"], [problem_id, "b"], [problem_id, "e"]])
        browser.close()
    assert "degrees" in marks[f"{problem_id} (b)"], marks
    assert "swapped" in marks[f"{problem_id} (e)"], marks[f"{problem_id} (e)"]


# -- spec files ------------------------------------------------------------------------------------

BASE = {"type": "positions", "X": [[1, 0], [0, 1], [1, 1]], "W_Q": [[1, 0], [0, 1]],
        "W_K": [[1, 1], [0, 1]], "W_V": [[1, 0], [0, 1]]}


@pytest.mark.parametrize("change, says", [
    ({"encoding": "learned"}, "encoding must be one of sinusoidal, rope, alibi, got 'learned'"),
    ({"encoding": "rope", "theta": ["pi/6", "pi/3"]}, "theta must be a list of 1 angle (one a pair"),
    ({"encoding": "rope", "theta": ["tau/6"]}, "theta: 'tau/6' is not an angle: a number, or a multiple of pi"),
    ({"encoding": "rope", "theta": [0]}, "each angle must be above 0 and at most 4 radians"),
    ({"slope": "1/2"}, 'slope goes with encoding = "alibi", not "sinusoidal" (the default where a spec names no'),
    ({"theta": ["1"]}, 'theta goes with encoding = "rope", not "sinusoidal" (the default where a spec names no'),
    ({"encoding": "rope", "theta": ["1", "2"], "X": [[1, 0, 1], [0, 1, 1], [1, 1, 0]],
      "W_Q": [[1, 0, 1], [0, 1, 1], [1, 1, 0]], "W_K": [[1, 0, 1], [0, 1, 1], [1, 1, 0]],
      "W_V": [[1, 0], [0, 1], [1, 1]]}, "d_k must be even, got 3"),
    ({"encoding": "alibi", "slope": 2}, "slope must be above 0 and at most 1, got 2"),
    ({"encoding": "alibi", "theta": ["pi/6"]}, 'theta goes with encoding = "rope", not "alibi"'),
    ({"positions": [0, 1]}, "positions must be a list of 3 whole numbers from 0 to 1000"),
    ({"shift": 0, "encoding": "rope"}, "shift must be a whole number from 1 to 100, got 0"),
    ({"X": [[1, 0, 1], [0, 1, 1], [1, 1, 0]], "W_Q": [[1, 0], [0, 1], [1, 1]],
      "W_K": [[1, 0], [0, 1], [1, 1]], "W_V": [[1, 0], [0, 1], [1, 1]]}, "d_model must be even, got 3"),
    ({"encoding": "rope", "W_Q": [[1], [0]], "W_K": [[1], [1]]}, "d_k must be even, got 1"),
    ({"mask": "padding", "valid": 2}, "type positions takes no mask or the causal one, not padding"),
])
def test_a_bad_spec_fails_in_one_line(change, says):
    with pytest.raises(SpecError) as caught:
        spec_from_record({**BASE, **change}, "pos", "pos.toml")
    message = str(caught.value)
    assert message.startswith("pos.toml: ") and says in message and "\n" not in message, message


def test_rope_and_alibi_take_q_k_and_v_given():
    record = {"type": "positions", "Q": [[1, 0], [0, 1]], "K": [[1, 1], [0, 1]], "V": [[1, 0], [0, 2]]}
    for encoding in ("rope", "alibi"):
        check_against_references(solve_checked(spec_from_record({**record, "encoding": encoding}, "p")))
    with pytest.raises(SpecError, match="give X, W_Q, W_K and W_V"):
        spec_from_record({**record, "encoding": "sinusoidal"}, "p", "p.toml")


def test_the_key_keeps_the_exact_forms(tmp_path, run_cli):
    spec = tmp_path / "pe.toml"
    spec.write_text('type = "positions"\nX = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]\n'
                    'W_Q = [[1, 0], [0, 1], [1, 1], [0, 0]]\nW_K = [[1, 1], [0, 1], [1, 0], [0, 1]]\n'
                    'W_V = [[1, 0], [0, 1], [1, 0], [0, 1]]\n', encoding="utf-8")
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "out")[0] == 0
    key = (tmp_path / "out" / "answers.md").read_text(encoding="utf-8")
    assert "sin(0.01) ≈ 0.0100 (exactly sin(1/100))" in key and "cos(2) ≈ -0.4161 (exactly cos(2))" in key


def test_the_rope_key_simplifies_labels_and_brackets_as_the_statement(tmp_path, run_cli):
    """H9-2's numbers: S[2,2] is exactly -0.53 (-53cos²(1)/100 - 53sin²(1)/100 folded), q~'s and
    k~'s rows are labelled m' and n' as the statement names them, a shift of 1 is one position, the
    hints bracket negatives as the key does, and each turned entry's LaTeX line is indented."""
    from generator.rendering.hints import hint_of

    spec = tmp_path / "rope.toml"
    spec.write_text('type = "positions"\nencoding = "rope"\nshift = 1\nX = [[-1.5, 1.1], [0.7, -0.2]]\n'
                    'W_Q = [[1, 1], [1, -1]]\nW_K = [[-1, 0], [0, 1]]\nW_V = [[1, 0], [0, 1]]\n',
                    encoding="utf-8")
    question = solve_checked(spec_from_record(
        {"type": "positions", "encoding": "rope", "shift": 1, "X": [[-1.5, 1.1], [0.7, -0.2]],
         "W_Q": [[1, 1], [1, -1]], "W_K": [[-1, 0], [0, 1]], "W_V": [[1, 0], [0, 1]]}, "rope"))
    assert question.solution.step("rope_scores").exact[1][1] == sympy.Rational(-53, 100)
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "out")[0] == 0
    key = (tmp_path / "out" / "answers.md").read_text(encoding="utf-8")
    assert "(-0.2099) + 0.9070·(-0.6971) = -0.53" in key
    assert "row 1 (m′ = 2)" in key and "row 1 (n′ = 1)" in key and "(m = 2)" not in key
    assert "Move both tokens on by 1 position:" in key
    tex = (tmp_path / "out" / "answers.tex").read_text(encoding="utf-8")
    assert "$,\\par\n\\quad$\\tilde{q}_{1,2}" in tex
    part = question.parts[-1]
    hints = " ".join(hint_of(question, step, None, 4).first for step in part.steps[:2])
    assert "0.5·(-0.41615)" in hints and "·-" not in hints and "− -" not in hints, hints


# -- every format, the record, the budget ----------------------------------------------------------

def test_every_format_and_the_record_round_trip(tmp_path, run_cli):
    out = tmp_path / "out"
    code, _, err = run_cli("--practice", "--types", "positions", "--count", 6, "--seed", 3, "--format",
                           "md,html,moodle,qti", "--out", out)
    assert code == 0, err
    assert {p.name for p in out.iterdir()} >= {"answers.md", "practice.html", "moodle.xml", "qti.zip",
                                               "problems.json"}
    problems = json.loads((out / "problems.json").read_text())["problems"]
    assert {p["spec"]["encoding"] for p in problems} == {"sinusoidal", "rope", "alibi"}
    again = tmp_path / "again"
    assert run_cli("--record", out / "problems.json", "--format", "md", "--out", again)[0] == 0
    assert (again / "answers.md").read_bytes() == (out / "answers.md").read_bytes()
    assert json.loads((again / "problems.json").read_text())["problems"] == problems


def test_no_calculator_is_refused_in_one_line(run_cli, tmp_path):
    assert why_not_drawable("positions", draw_options("medium", no_calculator=True))
    code, _, err = run_cli("--types", "positions", "--no-calculator", "--out", tmp_path)
    assert code == 2 and "cannot draw positions questions" in err and err.count("\n") == 1


@pytest.mark.slow
def test_fifty_minutes_of_positions_and_full_fit(tmp_path, run_cli):
    code, _, err = run_cli("--minutes", 50, "--types", "positions,full", "--seed", 4, "--out", tmp_path)
    assert code == 0, err
    minutes = [int(m) for m in re.findall(r"about (\d+) min\)", (tmp_path / "questions.md").read_text())]
    assert minutes and all(8 <= m <= 15 for m in minutes) and sum(minutes) <= 50, minutes


# What a lecturer found trying the type fresh (issue 35's review): each test failed before its fix.
def test_canvas_asks_a_row_of_pe_and_x_pe_with_work_in_it(tmp_path, run_cli):
    """Position 0's row of PE is 0, 1, 0, 1 and of X + PE, X's row plus those: Canvas asks another row."""
    spec = tmp_path / "pe.toml"
    spec.write_text('type = "positions"\nX = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]\n'
                    'W_Q = [[1, 0], [0, 1], [1, 1], [0, 0]]\nW_K = [[1, 1], [0, 1], [1, 0], [0, 1]]\n'
                    'W_V = [[1, 0], [0, 1], [1, 0], [0, 1]]\n', encoding="utf-8")
    assert run_cli("--spec", spec, "--format", "qti", "--out", tmp_path / "out")[0] == 0
    with zipfile.ZipFile(tmp_path / "out" / "qti.zip") as package:
        quiz = next(package.read(name).decode() for name in package.namelist() if name.endswith("quiz.xml"))
    asked = set(re.findall(r"\(row (\d+) of (PE|X̃)\)", quiz))
    assert {of for _, of in asked} == {"PE", "X̃"} and all(row != "1" for row, _ in asked), asked


def test_the_rope_key_writes_its_formulas_readably_and_its_extra_angles_truly(tmp_path, run_cli):
    spec = tmp_path / "rope.toml"
    spec.write_text('type = "positions"\nencoding = "rope"\nshift = 3\nQ = [[1, 0, 1, 1], [0, 1, 1, 0]]\n'
                    'K = [[1, 1, 0, 1], [0, 1, 1, 1]]\nV = [[1, 0], [0, 1]]\n', encoding="utf-8")
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "out")[0] == 0
    key = (tmp_path / "out" / "answers.md").read_text(encoding="utf-8")
    assert "(x cos(mθ_i) - y sin(mθ_i), x sin(mθ_i) + y cos(mθ_i))" in key
    assert "θ_i = 10000^(-2i/d_k)" in key and "same extra angle" in key
    assert "pair i of q and pair i of k by the same extra angle, 3θ_i" in key  # θ_0 and θ_1 differ
