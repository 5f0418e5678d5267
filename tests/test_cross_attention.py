"""Cross-attention: a decoder's tokens X_dec attend over an encoder's X_enc (Q = X_dec W_Q,
K = X_enc W_K, V = X_enc W_V), from spec files and drawn as the type ``cross`` at every
difficulty.  Every step equals PyTorch's in float64 to 1e-9 (``MultiheadAttention`` with
kdim and vdim where its widths allow, ``scaled_dot_product_attention`` on Q, K and V
otherwise); the plan routes the projections' inputs; a file's faults are one line naming
both sides; the rounding student is never marked wrong and the typical slips are."""

import json
import re

import numpy as np
import pytest
import sympy
from conftest import make_question, make_solution, solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_marking import false_marks, gap_tolerances, rounded
from test_practice_students import grids_of, marking_data, students_marks, texts, type_and_check, work
from test_practice_students import matrix as page_matrix
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.formats.web import moodle_gaps, step_graph
from generator.kinds import TYPES, type_names
from generator.kinds.sampling import draw_options, sample_set
from generator.maths.engine import solve
from generator.maths.spec import known_keys
from generator.maths.steps import plan_for

DIFFICULTIES = ("easy", "medium", "hard")
TOLERANCE = 1e-9
ENTRY = st.one_of(
    st.integers(-3, 3),
    st.integers(-200, 200).map(lambda n: str(sympy.Rational(n, 100))),  # two-place decimals
    st.sampled_from(["1/2", "-1/3", "sqrt(2)/2"]),
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The lecturer: two decoder tokens over three encoder tokens, widths 3 and 3.
LECTURE = {"X_dec": [[1, 0, 1], [0, 2, -1]], "X_enc": [[1, 1, 0], [0, 1, 1], [1, 0, -1]],
           "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[1, 0], [1, -1], [0, 1]],
           "W_V": [[1, 0], [0, 1], [2, -1]]}


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


@st.composite
def cross_records(draw):
    """A cross-attention spec from embeddings: n_q decoder tokens of width d_dec over n_k encoder
    tokens of width d_enc; half the time d_k = d_v = d_dec, the widths MultiheadAttention takes."""
    n_q, n_k, d_dec, d_enc = (draw(st.integers(1, n)) for n in (4, 5, 4, 4))
    d_k, d_v = (d_dec, d_dec) if draw(st.booleans()) else (draw(st.integers(1, 4)), draw(st.integers(1, 3)))
    record = {"X_dec": draw(matrix(n_q, d_dec)), "X_enc": draw(matrix(n_k, d_enc)),
              "W_Q": draw(matrix(d_dec, d_k)), "W_K": draw(matrix(d_enc, d_k)),
              "W_V": draw(matrix(d_enc, d_v))}
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2", "1/sqrt(5)"]))
    return record


def tensor(torch, step):
    return torch.tensor(step.numeric, dtype=torch.float64)


def close(actual: np.ndarray, expected) -> bool:
    expected = np.asarray(expected)
    return actual.shape == expected.shape and np.allclose(actual, expected, rtol=TOLERANCE, atol=TOLERANCE)


def assert_steps_match_torch(solution) -> None:
    """Every step of a cross-attention solution against torch: the projections from the given
    embeddings, the scores, scaled scores, weights and output; the output against
    scaled_dot_product_attention, and, where d_k = d_v = d_dec, every step against
    MultiheadAttention(embed_dim=d_dec, kdim=vdim=d_enc) with out_proj the identity."""
    torch = torch_or_skip()
    spec = solution.spec
    scale = 1 / np.sqrt(spec.d_k) if spec.scale is None else float(spec.scale)
    names = solution.step_names
    if "X_dec" in names:
        x_dec, x_enc, w_q, w_k, w_v = (tensor(torch, solution.step(n)) for n in
                                       ("X_dec", "X_enc", "W_Q", "W_K", "W_V"))
        q, k, v = x_dec @ w_q, x_enc @ w_k, x_enc @ w_v
        for name, expected in zip("QKV", (q, k, v)):
            assert close(solution.step(name).numeric, expected.numpy()), name
    else:
        q, k, v = (tensor(torch, solution.step(n)) for n in "QKV")
    scores = q @ k.T
    assert close(solution.step("scores").numeric, scores.numpy())
    if "scaled" in names:
        assert close(solution.step("scaled").numeric, (scores * scale).numpy())
    weights = torch.softmax(scores * scale, dim=-1)
    assert close(solution.step("weights").numeric, weights.numpy())
    output = torch.nn.functional.scaled_dot_product_attention(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), scale=scale).squeeze(0)
    assert close(solution.step("output").numeric, output.numpy())
    assert solution.step("output").shape == (spec.n_queries, spec.d_v)
    assert solution.step("weights").shape == (spec.n_queries, spec.n_keys)
    if "X_dec" in names and spec.d_k == spec.d_v == spec.d_model and spec.scale is None:
        assert_multihead_attention(torch, solution)


def assert_multihead_attention(torch, solution, key_padding_mask=None) -> None:
    """torch.nn.MultiheadAttention, one head, kdim = vdim = d_enc: its projections set from W_Q^T,
    W_K^T and W_V^T, its output projection the identity, the encoder's padding (True) hidden by
    ``key_padding_mask``: the key's output and weights."""
    spec = solution.spec
    x_dec, x_enc, w_q, w_k, w_v = (tensor(torch, solution.step(n)) for n in
                                   ("X_dec", "X_enc", "W_Q", "W_K", "W_V"))
    mha = torch.nn.MultiheadAttention(embed_dim=spec.d_model, num_heads=1, kdim=spec.d_enc,
                                      vdim=spec.d_enc, bias=False, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:  # d_enc = d_dec: torch keeps the three in one matrix
            mha.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T], dim=0))
        else:
            mha.q_proj_weight.copy_(w_q.T)
            mha.k_proj_weight.copy_(w_k.T)
            mha.v_proj_weight.copy_(w_v.T)
        mha.out_proj.weight.copy_(torch.eye(spec.d_model, dtype=torch.float64))
        output, weights = mha(x_dec.unsqueeze(0), x_enc.unsqueeze(0), x_enc.unsqueeze(0),
                              key_padding_mask=key_padding_mask)
    assert close(solution.step("output").numeric, output.squeeze(0).numpy())
    assert close(solution.step("weights").numeric, weights.squeeze(0).numpy())


# -- the engine against torch ---------------------------------------------------------------

@SETTINGS
@given(cross_records())
def test_random_cross_specs_match_torch(record):
    solution = make_solution(**record)  # raises if the engine and numpy differ beyond 1e-9
    assert solution.spec.cross and solution.spec.from_embeddings
    assert_steps_match_torch(solution)


def test_multihead_attention_is_met_with_encoder_and_decoder_of_other_widths():
    """kdim = vdim = 3 (the encoder's width) with embed_dim = 2 (the decoder's): torch keeps
    separate projections, set from W_Q^T, W_K^T, W_V^T."""
    torch = torch_or_skip()
    solution = make_solution(X_dec=[[1, -1], [2, "1/2"]], X_enc=[[1, 0, 1], [0, 1, -1], ["0.5", 1, 0]],
                             W_Q=[[1, 0], [1, 1]], W_K=[[1, 0], [0, 1], [1, -1]],
                             W_V=[[0, 1], [1, 0], [1, 1]])
    assert (solution.spec.d_model, solution.spec.d_enc) == (2, 3)
    assert_multihead_attention(torch, solution)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_drawn_cross_problems_match_torch_at_every_difficulty(difficulty):
    questions = solved_set(draw_options(difficulty), 5, 6, 1, ("cross",))
    for question in questions:
        spec = question.spec
        assert question.kind == "cross" and spec.cross and spec.n_queries < spec.n_keys
        assert spec.from_embeddings == (difficulty != "easy")  # easy gives Q, K and V
        assert_steps_match_torch(question.solution)
    if difficulty == "hard":  # d_model = d_k = d_v: MultiheadAttention itself
        assert all(q.spec.d_model == q.spec.d_k == q.spec.d_v for q in questions)


@pytest.mark.parametrize("difficulty, queries, keys", [
    ("easy", {2}, {3}), ("medium", {2}, {3}), ("hard", {2, 3}, {3, 4})])
def test_drawn_sizes_are_the_presets(difficulty, queries, keys):
    specs = sample_set(draw_options(difficulty), 11, 12, types=("cross",))
    assert {s.n_queries for s in specs} <= queries and {s.n_keys for s in specs} <= keys
    assert all(s.n_queries < s.n_keys and s.mask == "none" for s in specs)
    if difficulty == "easy":
        assert all(set(s.matrices) == {"Q", "K", "V"} and s.d_k == 2 for s in specs)
        assert all(abs(x) <= 3 for s in specs for m in s.matrices.values() for row in m for x in row)
    else:
        assert all(list(s.matrices) == ["X_dec", "X_enc", "W_Q", "W_K", "W_V"] for s in specs)


def test_one_hot_tokens_are_as_wide_as_the_encoder_has_tokens():
    specs = sample_set(draw_options("medium", embeddings="one-hot"), 2, 4, types=("cross",))
    assert all((s.n_queries, s.n_keys) == (2, 3) and s.d_model >= 3 for s in specs)


# -- the plan routes the projections' inputs -------------------------------------------------

def test_the_plan_routes_the_decoder_into_q_and_the_encoder_into_k_and_v():
    solution = make_solution(**LECTURE)
    steps = {step.name: step for step in solution.plan}
    assert steps["Q"].inputs == ("X_dec", "W_Q") and steps["Q"].mixed_up_first == "X_enc"
    assert steps["K"].inputs == ("X_enc", "W_K") and steps["K"].mixed_up_first == "X_dec"
    assert steps["V"].inputs == ("X_enc", "W_V")
    assert solution.step("Q").formula == "Q = X_dec W_Q"
    self_plan = plan_for(make_solution(X=LECTURE["X_enc"], W_Q=LECTURE["W_Q"], W_K=LECTURE["W_K"],
                                       W_V=LECTURE["W_V"]).spec)
    assert {s.name: s.inputs for s in self_plan}["Q"] == ("X", "W_Q")  # self-attention as it was
    assert all(not s.mixed_up_first for s in self_plan)


def test_spec_properties_of_cross_attention():
    spec = make_solution(**{**LECTURE, "X_enc": [[1, 1, 0, 2], [0, 1, 1, 0], [1, 0, -1, 1]],
                            "W_K": [[1, 0], [1, -1], [0, 1], [1, 1]],
                            "W_V": [[1, 0], [0, 1], [2, -1], [0, 0]]}).spec
    assert spec.cross and spec.from_embeddings
    assert (spec.n_queries, spec.n_keys, spec.d_model, spec.d_enc, spec.d_k, spec.d_v) == (2, 3, 3, 4, 2, 2)
    assert {"X_dec", "X_enc"} <= known_keys()
    # the same number of tokens on both sides is still cross-attention: two sequences
    square = make_solution(**{**LECTURE, "X_dec": LECTURE["X_enc"]}).spec
    assert square.cross and square.n_queries == square.n_keys == 3


@pytest.mark.parametrize("changes, expected", [
    ({"X": [[1, 0, 1]]}, "give either X (self-attention) or X_dec and X_enc (cross-attention), not both"),
    ({"X_enc": None}, "X_dec needs X_enc: cross-attention takes its queries from the decoder's tokens"),
    ({"X_dec": None}, "X_enc needs X_dec"),
    ({"Q": [[1, 0]]}, "give either X_dec, X_enc, W_Q, W_K, W_V or Q, K, V, not both"),
    ({"W_K": [[1, 0], [1, -1]]}, "W_K has 2 rows but X_enc has 3 columns"),
    ({"W_V": [[1, 0], [1, -1]]}, "W_V has 2 rows but X_enc has 3 columns"),
    ({"W_Q": [[1, 0], [0, 1]]}, "W_Q has 2 rows but X_dec has 3 columns"),
    ({"W_K": [[1], [1], [0]]}, "W_K has 1 columns but W_Q has 2 (both are d_k)"),
    ({"W_Q": None}, "missing W_Q (a problem needs X_dec, X_enc, W_Q, W_K, W_V)"),
    ({"type": "backward", "dO": [[1, 0], [0, 1]]}, "type backward's dX adds up what reaches one X"),
    ({"type": "softmax-jacobian", "dO": [[1, 0], [0, 1]]}, "cross-attention's X_dec and X_enc are two"),
    ({"type": "permute"}, "type permute swaps two tokens of one sequence"),
    ({"type": "mistake"}, "cross-attention is type full or cross"),
    ({"type": "heads", "W_O": [[1, 0], [0, 1]]}, "type heads is self-attention over one sequence"),
])
def test_a_cross_spec_fault_is_one_line_naming_both_sides(tmp_path, run_cli, changes, expected):
    record = {k: v for k, v in {**LECTURE, **changes}.items() if v is not None}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 2 and expected in err and err.count("\n") == 1, err


def test_type_cross_refuses_a_single_sequence(tmp_path, run_cli):
    path = tmp_path / "self.json"
    path.write_text(json.dumps({"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]],
                                "W_V": [[1, 0], [0, 1]], "type": "cross"}))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 2 and "type cross needs two sequences" in err and err.count("\n") == 1


def test_a_causal_cross_draw_is_refused_in_one_line(tmp_path, run_cli):
    code, _, err = run_cli("--types", "cross", "--mask", "causal", "--out", tmp_path)
    assert code == 2 and "cannot draw cross questions" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("kind", ["full", "cross", "row", "concept"])
def test_types_that_take_cross_attention_solve_a_lecturers_spec(kind):
    question = make_question(**LECTURE, type=kind, **({"row": 1} if kind in ("row", "concept") else {}))
    assert question.solution.step("weights").shape == (2, 3)
    if kind in ("full", "cross"):
        assert question.parts[0].task == "Q" and question.solution.step("output").shape == (2, 2)


# -- what the key says ----------------------------------------------------------------------

def test_the_key_says_cross_attention_and_never_a_token_attending_to_itself(tmp_path, run_cli):
    spec = tmp_path / "lecture.json"
    square = {**LECTURE, "X_dec": LECTURE["X_enc"]}  # 3 decoder tokens over 3 encoder tokens
    spec.write_text(json.dumps([LECTURE, square, {**LECTURE, "type": "cross"}]))
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "o")[0] == 0
    key = (tmp_path / "o" / "answers.md").read_text()
    assert key.count("## Problem") == 3 and key.count("Cross-attention, step by step") == 3
    assert "Self-attention" not in key and "itself" not in key
    assert "In cross-attention the 2 tokens of a decoder attend over the 3 tokens of an encoder" in key
    assert "Compute the queries Q = X_dec W_Q from the decoder's tokens" in key
    assert "**K = X_enc W_K** (3×2" in key and "**V = X_enc W_V** (3×2" in key
    assert "so the output has a row per decoder token, not per encoder token" in key
    assert "query 1 attends most to key" in key


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_every_format_and_the_record_round_trip(tmp_path, run_cli, difficulty):
    first, again = tmp_path / "first", tmp_path / "again"
    code, _, err = run_cli("--types", "cross", "--count", 2, "--seed", 3, "--difficulty", difficulty,
                           "--practice", "--format", "md,json,html,moodle,qti", "--out", first)
    assert code == 0, err
    problems = json.loads((first / "problems.json").read_text())["problems"]
    assert [p["type"] for p in problems] == ["cross", "cross"]
    shape = problems[0]["shape"]
    assert shape["n_queries"] < shape["n_keys"]
    if difficulty != "easy":
        assert shape["d_enc"] == shape["d_model"] and "X_dec" in problems[0]["spec"]
    page = (first / "practice.html").read_text()
    assert '"X_dec"' in page if difficulty != "easy" else '"Q"' in page
    assert "Cross-attention, step by step" in (first / "moodle.xml").read_text()
    assert run_cli("--record", first / "problems.json", "--format", "md,json,html,moodle,qti",
                   "--out", again)[0] == 0
    for name in ("problems.json", "answers.md", "questions.tex", "practice.html", "moodle.xml", "qti.zip"):
        assert (again / name).read_bytes() == (first / name).read_bytes(), name


def test_a_budget_shrinks_the_queries_and_the_keys(tmp_path, run_cli):
    code, _, err = run_cli("--types", "cross", "--minutes", 9, "--seed", 2, "--difficulty", "hard",
                           "--practice", "--format", "json", "--out", tmp_path)
    assert code == 0, err
    problems = json.loads((tmp_path / "problems.json").read_text())["problems"]
    assert problems and all(p["type"] == "cross" for p in problems)
    shapes = [(p["shape"]["n_queries"], p["shape"]["n_keys"]) for p in problems]
    assert all(n_q < n_k <= 3 for n_q, n_k in shapes), shapes
    assert "cross" in TYPES and "cross" in type_names() and not TYPES["cross"].in_default_mix


# -- marking: the rounding student, and the slips --------------------------------------------

@pytest.mark.parametrize("decimals", [2, 4])
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_a_student_who_rounds_is_never_marked_wrong(difficulty, decimals):
    marked = []
    for question in solved_set(draw_options(difficulty, decimals=decimals), 19, 8, 1, ("cross",)):
        marked += false_marks(question, decimals)
    assert marked == []


def test_keys_and_values_from_the_decoder_and_queries_from_the_encoder_are_marked_wrong():
    """The slips of cross-attention: K = X_dec W_K and V = X_dec W_V (the decoder's tokens for the
    encoder's), Q = X_enc W_Q, and the output with n_k rows: each fills no grid of the key's
    shape, or where the shapes agree (3 decoder tokens over 3 encoder tokens), is outside every
    entry's tolerance; the page names each as a slip of its step."""
    for record in (LECTURE, {**LECTURE, "X_dec": [[2, 0, 1], [0, 1, 0], [1, 1, 1]]}):
        question = make_question(**record, type="cross")
        spec, decimals = question.spec, 4
        tolerances = gap_tolerances(question, decimals)
        wrong = {"K": ("X_dec", "W_K"), "V": ("X_dec", "W_V"), "Q": ("X_enc", "W_Q")}
        for name, (x, w) in wrong.items():
            right = question.solution.step(name)
            theirs = rounded(np.array(spec.matrices[x], dtype=float) @ np.array(spec.matrices[w], dtype=float),
                             decimals)
            assert theirs.shape != right.shape or (np.abs(theirs - right.numeric) > tolerances[id(right)]).any()
        graph = step_graph(question)
        assert {"op": "product", "inputs": ["X_dec", "W_K"]} in [s["change"] for s in graph["K"]["slips"]]
        assert {"op": "product", "inputs": ["X_enc", "W_Q"]} in [s["change"] for s in graph["Q"]["slips"]]
        said = next(s["says"] for s in graph["K"]["slips"] if s["change"].get("inputs") == ["X_dec", "W_K"])
        assert said.startswith("this is X_dec W_K, not K = X_enc W_K")


def test_the_output_with_a_row_per_encoder_token_is_marked_wrong():
    question = make_question(**LECTURE, type="cross")
    gaps, _ = moodle_gaps(question, 4)
    output_part = next(part for part in question.parts if part.task == "output")
    shape_gap = gaps[output_part.letter]["shapes"][0]
    accepted = re.findall(r"=([^~}]+)", shape_gap)
    assert "2x2" in accepted and "2 × 2" in accepted
    assert not any(form.startswith("3") for form in accepted)  # n_k × d_v is wrong


def test_real_mistakes_of_a_drawn_cross_problem_are_marked_wrong():
    caught = missed = 0
    for question in solved_set(draw_options("medium"), 23, 10, 1, ("cross",)):
        tolerances = gap_tolerances(question, 4)
        for mistake, step in (("no-scaling", "scaled"), ("column-softmax", "weights"),
                              ("weights-times-k", "output")):
            right, theirs = question.solution.step(step), solve(question.spec, mistake).step(step)
            if theirs.shape != right.shape:
                caught += 1
                continue
            off = np.abs(rounded(theirs.numeric, 4) - right.numeric)
            if (off > tolerances[id(right)]).any():
                caught += 1
            elif (rounded(theirs.numeric, 4) != rounded(right.numeric, 4)).any():
                missed += 1
    assert caught >= 20 and missed == 0


# -- the practice page, in chromium ---------------------------------------------------------

SQUARE_DECODER = [[2, 0, 1], [0, 1, 0], [1, 1, 1]]  # 3 decoder tokens over 3: the slips fit a grid


@needs_browser
def test_the_practice_page_marks_honest_students_right_and_names_the_cross_slips(tmp_path, run_cli):
    """Drawn cross pages at every difficulty and a decoder-over-encoder spec: four honest
    students (test_practice_students's) are marked right on every cell they did not slip in;
    K = X_dec W_K typed into K's grid, and Q = X_enc W_Q into Q's, are marked wrong and named."""
    from playwright.sync_api import sync_playwright
    spec = tmp_path / "square.json"
    spec.write_text(json.dumps([{**LECTURE, "X_dec": SQUARE_DECODER, "type": "cross"}]))
    runs = {d: ("--types", "cross", "--count", 3, "--seed", 6, "--difficulty", d, "--practice")
            for d in DIFFICULTIES}
    runs["spec"] = ("--spec", spec)
    for name, args in runs.items():
        assert run_cli(*args, "--format", "html", "--out", tmp_path / name)[0] == 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for name in runs:
            page = browser.new_page()
            page.goto((tmp_path / name / "practice.html").as_uri())
            problems = marking_data(tmp_path / name / "practice.html")
            for way, (right, cells, wrong, slipped) in students_marks(page, problems, 4).items():
                assert cells > 20 and wrong == slipped, (name, way, sorted(wrong ^ slipped)[:6])
        (problem_id, problem), = marking_data(tmp_path / "spec" / "practice.html").items()
        keys = grids_of(problem)
        given = {n: page_matrix(m) for n, m in problem["given"].items()}
        right = {n: texts(m, keys[n], 4) for n, m in work(problem, 4, "precise").items()}
        letter = next(key[0] for key, grid in problem["steps"].items() if grid["name"] == "K")
        for grid, wrong, says in (("K", given["X_dec"] @ given["W_K"], "this is X_dec W_K, not K = X_enc W_K"),
                                  ("Q", given["X_enc"] @ given["W_Q"], "this is X_enc W_Q, not Q = X_dec W_Q")):
            type_and_check(page, {problem_id: right}, [])
            marks = type_and_check(page, {problem_id: {grid: texts(wrong, keys[grid], 4)}},
                                   [[problem_id, letter]])
            assert "wrong" in marks[f"{problem_id} {grid}"] and says in marks[f"{problem_id} ({letter})"]
        browser.close()


# -- cross-attention under a padding mask on the encoder's tokens --------------------------

@st.composite
def padded_cross_records(draw):
    """A cross-attention spec whose encoder has padding: one valid length (key padding), or one
    per decoder query (d2l's valid_lens), each leaving every query a key to see."""
    record = draw(cross_records())
    n_q, n_k = len(record["X_dec"]), len(record["X_enc"])
    if draw(st.booleans()):
        record["valid"] = draw(st.integers(1, n_k))
    else:
        record["valid"] = draw(st.lists(st.integers(1, n_k), min_size=n_q, max_size=n_q))
    record["mask"] = "padding"
    return record


def padding_of(record, n_q: int, n_k: int) -> np.ndarray:
    """True where query i may attend to key j, from the record's valid lengths."""
    valid = record["valid"]
    lengths = [valid] * n_q if isinstance(valid, int) else valid
    return np.array([[j < lengths[i] for j in range(n_k)] for i in range(n_q)])


@SETTINGS
@given(padded_cross_records())
def test_padded_cross_attention_equals_torch_with_a_boolean_and_an_additive_mask(record):
    torch = torch_or_skip()
    solution = make_solution(**record)
    spec = solution.spec
    seen = padding_of(record, spec.n_queries, spec.n_keys)
    assert spec.cross and np.array_equal(np.array(spec.visible), seen)
    q, k, v = (tensor(torch, solution.step(n)).unsqueeze(0) for n in "QKV")
    scale = None if spec.scale is None else float(spec.scale)
    boolean = torch.tensor(seen)
    additive = torch.zeros(seen.shape, dtype=torch.float64).masked_fill(~boolean, float("-inf"))
    for mask in (boolean, additive):
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        assert close(solution.step("output").numeric, expected.squeeze(0).numpy())
    weights = solution.step("weights").numeric
    assert np.all(weights[~seen] == 0) and np.allclose(weights.sum(axis=1), 1, rtol=0, atol=1e-12)


# The README's spec: two decoder tokens over three encoder tokens, d_k = d_v = d_dec = d_enc = 2
README_CROSS = {"X_dec": [[1, 0], [0, 1]], "X_enc": [[1, 1], [0, 1], [1, 0]], "W_Q": [[1, 0], [0, 1]],
                "W_K": [[1, 1], [0, 1]], "W_V": [[1, 0], [0, 2]]}


@pytest.mark.parametrize("valid", [1, 2, 3])
def test_a_padded_cross_spec_equals_multihead_attention_with_key_padding_mask(valid):
    """MultiheadAttention(kdim=vdim=d_enc) with key_padding_mask True on the encoder's padding."""
    torch = torch_or_skip()
    solution = make_solution(**README_CROSS, mask="padding", valid=valid)
    padding = (torch.arange(solution.spec.n_keys) >= valid).unsqueeze(0)
    assert_multihead_attention(torch, solution, key_padding_mask=padding)


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_drawn_cross_problems_with_a_padding_mask_equal_torch(difficulty):
    torch = torch_or_skip()
    for question in solved_set(draw_options(difficulty, mask="padding"), 6, 4, 1, ("cross",)):
        spec = question.spec
        assert spec.cross and spec.mask == "padding"
        seen = torch.tensor(np.array(spec.visible))
        assert not bool(seen.all())  # the padding hides a key
        q, k, v = (tensor(torch, question.solution.step(n)).unsqueeze(0) for n in "QKV")
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=seen)
        assert close(question.solution.step("output").numeric, expected.squeeze(0).numpy())


@pytest.mark.parametrize("mask", ["causal", "window", "causal+padding"])
def test_a_drawn_cross_problem_takes_no_mask_of_one_sequence(run_cli, tmp_path, mask):
    code, out, err = run_cli("--types", "cross", "--mask", mask, "--count", "1", "--out", str(tmp_path / "o"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--mask padding" in err
