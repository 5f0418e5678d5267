"""Random problems worth an exam: presets, constraints, distinctness, reproducibility."""

import json
from dataclasses import replace

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.kinds import TYPES
from generator.kinds.sampling import PRESETS, draw_options, sample_problem, sample_set
from generator.maths.spec import SpecError
from generator.maths.worthiness import QKV_BOUND, SCALED_BOUND, SCORE_BOUND
from generator.running.pipeline import solve_checked


def entries(spec, name):
    return [x for row in spec.matrices[name] for x in row]


def token_order_free(spec):
    """A problem's identity up to swapping tokens: its sorted X rows and its weights."""
    return (tuple(sorted(spec.matrices["X"])), spec.matrices["W_Q"], spec.matrices["W_K"],
            spec.matrices["W_V"], spec.mask)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), difficulty=st.sampled_from(list(PRESETS)),
       count=st.integers(1, 8))
def test_every_drawn_problem_meets_its_difficulty(seed, difficulty, count):
    options = draw_options(difficulty)
    specs = sample_set(options, seed, count)
    assert len({token_order_free(s) for s in specs}) == count
    for spec in specs:
        solution = solve_checked(spec).solution  # raises if the engine and numpy disagree
        check_constraints(solution, difficulty, options.decimals)


def check_constraints(solution, difficulty, decimals):
    for name in ("X", "Q", "K", "V", "scores"):
        rows = solution.step(name).exact
        assert len(set(rows)) == len(rows), f"repeated row in {name}"
        assert all(any(x != 0 for x in row) for row in rows), f"zero row in {name}"
    if difficulty in QKV_BOUND:
        for name in "QKV":
            assert all(x.is_Integer and abs(x) <= QKV_BOUND[difficulty]
                       for row in solution.step(name).exact for x in row)
        assert all(s.is_Integer and abs(s) <= SCORE_BOUND[difficulty]
                   for row in solution.step("scores").exact for s in row)
    assert np.abs(solution.step("scaled").numeric).max() <= SCALED_BOUND
    if difficulty == "medium":  # d_k = 4: every scaled score is a whole or half number
        assert all((2 * s).is_Integer for row in solution.step("scaled").exact for s in row)
    visible = np.array(solution.spec.visible, dtype=bool)  # the keys each query sees
    for i, row in enumerate(solution.step("weights").numeric):
        shown = row[visible[i]]
        if len(shown) > 1:
            assert np.ptp(shown) > 1e-9, "uniform weights"
            assert all(0.5 * 10**-decimals < w < 1 - 0.5 * 10**-decimals for w in shown)


def test_easy_is_the_first_seeds_kind():
    for spec in sample_set(draw_options("easy"), 3, 10):
        assert (spec.n_queries, spec.d_model, spec.d_k, spec.d_v, spec.mask) == (2, 2, 2, 2, "none")
        assert sorted(map(tuple, spec.matrices["X"])) == [(0, 1), (1, 0)]  # one-hot
        for name in ("W_Q", "W_K", "W_V"):
            w = spec.matrices[name]
            assert w[0][1] == w[1][0] == 0 and all(w[i][i] in (-2, -1, 1, 2, 3) for i in range(2))


def test_easy_sets_vary():
    """Twenty easy problems used to need five softmax calculations between them."""
    rows = {tuple(sorted(round(float(x), 4) for x in row))
            for spec in sample_set(draw_options("easy"), 7, 20) for row in spec_scores(spec)}
    assert len(rows) >= 8


def spec_scores(spec):
    import numpy as np
    x, w_q, w_k = (np.array(spec.matrices[n], dtype=float) for n in ("X", "W_Q", "W_K"))
    return (x @ w_q) @ (x @ w_k).T / np.sqrt(spec.d_k)


def test_medium_is_small_integers_with_exact_scaling():
    for spec in sample_set(draw_options("medium"), 3, 10):
        assert (spec.n_queries, spec.d_model, spec.d_k, spec.d_v, spec.mask) == (3, 3, 4, 3, "none")
        assert all(x.is_Integer and -1 <= x <= 2 for x in entries(spec, "X"))
        assert all(x in (-1, 0, 1) for name in ("W_Q", "W_K", "W_V") for x in entries(spec, name))


def test_hard_is_the_second_seeds_kind():
    specs = sample_set(draw_options("hard"), 3, 30)
    assert {s.n_queries for s in specs} == {3, 4, 5}
    assert {s.mask for s in specs} == {"none", "causal", "padding", "window", "causal+padding"}
    for spec in specs:
        assert (spec.d_model, spec.d_k, spec.d_v) == (4, 4, 4)
        values = [x for name in ("X", "W_Q", "W_K", "W_V") for x in entries(spec, name)]
        assert all((100 * x).is_Integer for x in values)
        assert any(not x.is_Integer for x in values)


def test_overrides_change_only_what_they_name():
    options = draw_options("medium", tokens=(4, 5), d_k=2, mask="causal")
    specs = sample_set(options, 11, 6)
    assert all(s.n_queries in (4, 5) and s.d_k == 2 and s.mask == "causal" for s in specs)
    assert all(s.d_model == 3 and s.d_v == 3 for s in specs)


def test_a_problem_does_not_depend_on_the_count_or_later_problems():
    options = draw_options("hard")
    assert sample_set(options, 5, 3) == sample_set(options, 5, 9)[:3]
    assert sample_problem(options, "H5-7") == sample_set(options, 5, 7)[-1]
    assert sample_problem(options, "H5v2-3") == sample_set(options, 5, 3, version=2)[-1]
    assert sample_set(options, 5, 3, version=2) != sample_set(options, 5, 3)


@pytest.mark.slow
def test_problem_id_regenerates_a_problem_from_a_twenty_problem_set(tmp_path, run_cli):
    assert run_cli("--count", "20", "--seed", "99", "--practice", "--out", tmp_path / "set")[0] == 0
    problems = json.loads((tmp_path / "set" / "problems.json").read_text())["problems"]
    assert problems[12]["id"] == "M99-13"
    assert run_cli("--problem", "M99-13", "--out", tmp_path / "one")[0] == 0
    [again] = json.loads((tmp_path / "one" / "problems.json").read_text())["problems"]
    assert again == problems[12]


@pytest.mark.parametrize("args, expected", [
    (["--tokens", "0"], "--tokens 0-0: need 1 <= low <= high <= 12"),
    (["--tokens", "5-2"], "--tokens 5-2: need 1 <= low <= high <= 12"),
    (["--tokens", "13"], "need 1 <= low <= high <= 12"),
    (["--tokens", "two"], "expected a number or a range such as 2-4"),
    (["--dk", "-1"], "--dk must be a whole number from 1 to 16, got -1"),
    (["--d-model", "17"], "--d-model must be a whole number from 1 to 16, got 17"),
    (["--difficulty", "insane"], "invalid choice: 'insane'"),
    (["--embeddings", "one-hot", "--tokens", "5"], "one-hot needs d_model >= the number of tokens"),
    (["--weights", "identity"], "--weights identity needs d_model = d_k = d_v"),
    (["--problem", "42-7"], "expected an id such as M42-7 or H42v3-7"),
    (["--problem", "E42-7", "--difficulty", "medium"], "drawn at another difficulty; add --difficulty easy"),
    (["--problem", ""], "--problem needs an id"),
    (["--problem", "M42v0-7"], "the version must be between 1 and 500"),
    (["--problem", "M42-7", "--seed", "1"], "--problem ID draws one problem named by its id; it takes no --count, --seed"),
    (["--count", "5", "--types", "full", "--difficulty", "easy", "--weights", "identity"],
     "could not draw problem 2 (a full question)"),
    (["--types", "heads", "--difficulty", "easy"], "cannot draw heads questions with these options: with diagonal weights"),
    (["--decimals", "0"], "at 0 decimals every attention weight shows as 0 or 1"),
])
def test_invalid_draws_get_one_line_and_exit_2(tmp_path, run_cli, args, expected):
    code, out, err = run_cli(*args, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "o").exists()


def test_exact_inputs_are_exactly_the_drawn_numbers():
    spec = sample_set(draw_options("hard"), 1, 1)[0]
    assert all(isinstance(x, sympy.Rational) for x in entries(spec, "X"))


def test_the_printed_redraw_command_and_the_id_reproduce_a_draw_at_other_decimals(tmp_path, run_cli):
    assert run_cli("--count", 5, "--seed", 3, "--decimals", 2, "--practice", "--out", tmp_path / "set")[0] == 0
    key = (tmp_path / "set" / "answers.md").read_text()
    assert "gen-problems --seed 3 --count 5 --difficulty medium --practice --decimals 2" in key
    problems = json.loads((tmp_path / "set" / "problems.json").read_text())["problems"]
    assert run_cli("--problem", "M3-5", "--decimals", 2, "--out", tmp_path / "one")[0] == 0
    [again] = json.loads((tmp_path / "one" / "problems.json").read_text())["problems"]
    assert again["spec"] == problems[4]["spec"]
    # Why the command must carry them: the shown decimals decide which draws are kept.
    at = {d: sample_set(draw_options("hard", decimals=d), 3, 20) for d in (1, 4)}
    assert [s.matrices for s in at[1]] != [s.matrices for s in at[4]]


def test_an_id_alone_names_its_difficulty(tmp_path, run_cli):
    assert run_cli("--count", 2, "--seed", 8, "--difficulty", "hard", "--practice", "--out", tmp_path / "set")[0] == 0
    problems = json.loads((tmp_path / "set" / "problems.json").read_text())["problems"]
    assert run_cli("--problem", "H8-2", "--out", tmp_path / "one")[0] == 0
    [again] = json.loads((tmp_path / "one" / "problems.json").read_text())["problems"]
    assert again["spec"] == problems[1]["spec"]



@pytest.mark.slow
def test_a_heads_question_draws_longer_before_it_gives_up(monkeypatch):
    """Heads draws pass 1 in 500 with one-hot 3-dimensional tokens (every head passes a single
    head's tests); seed 3's first heads problem takes 1,199 draws.  A heads question has ten
    times the draws of another before it gives up, and draws past a cap change nothing that
    was drawn before."""
    import generator.kinds.sampling as sampling

    options = replace(draw_options("medium", embeddings="one-hot", d_model=3), d_k=4, d_v=4)
    drawn = sample_set(options, 3, 1, types=("heads",))
    monkeypatch.setattr(sampling, "HEADS_ATTEMPTS", 2000)
    assert sample_set(options, 3, 1, types=("heads",)) == drawn
    monkeypatch.setattr(sampling, "HEADS_ATTEMPTS", 1000)  # a cap the draw does not reach
    with pytest.raises(SpecError, match="no new exam-worthy problem in 1000 draws"):
        sample_set(options, 3, 1, types=("heads",))


def zero_lines(matrix: np.ndarray) -> list[str]:
    """The rows and columns of a matrix that are all 0."""
    nonzero = np.abs(np.where(np.isinf(matrix), 1.0, matrix)) > 1e-12
    return ([f"row {i + 1}" for i in np.flatnonzero(~nonzero.any(axis=1))]
            + [f"column {j + 1}" for j in np.flatnonzero(~nonzero.any(axis=0))])


@pytest.mark.parametrize("difficulty, overrides", [
    ("easy", {}), pytest.param("medium", {}, marks=pytest.mark.slow),
    pytest.param("hard", {}, marks=pytest.mark.slow),
    pytest.param("medium", {"no_calculator": True}, marks=pytest.mark.slow),
    pytest.param("medium", {"weights": "diagonal"}, marks=pytest.mark.slow),
    ("easy", {"d_k": 4, "no_calculator": True}),
    pytest.param("medium", {"embeddings": "one-hot", "d_model": 3}, marks=pytest.mark.slow),
])
def test_no_drawn_problem_has_a_zero_row_or_column(difficulty, overrides):
    """Issue 30 found an all-zero column of V in 27 of 160 drawn problems (41 of Q): a whole
    column of the working that is 0.  Every type still draws at every preset, each head too."""
    from generator.kinds import type_names
    from generator.kinds.sampling import drawable_types

    options = draw_options(difficulty, **overrides)
    types, _ = drawable_types(type_names(), options, False)
    assert len(types) >= 8  # every type but heads where it cannot be (easy, diagonal)
    for seed in range(3):
        for spec in sample_set(options, seed, 2 * len(types), types=types):
            for prefix, solution in solve_checked(spec).worked:
                for step in solution.steps:
                    if step.name in ("Q", "K", "V", "output"):
                        assert not zero_lines(step.numeric), (spec.question, prefix + step.name)


def test_diagonal_weights_wider_than_the_tokens_wrap_round():
    options = draw_options("medium", weights="diagonal")  # d_model 3, d_k 4: W_Q is 3 x 4
    for spec in sample_set(options, 1, 5):
        w_q = np.array(spec.matrices["W_Q"], dtype=float)
        assert not zero_lines(w_q)
        assert all(np.count_nonzero(column) == 1 for column in w_q.T)  # one entry a column


def test_options_that_always_leave_a_zero_column_say_why():
    from generator.kinds.sampling import why_not_drawable
    options = draw_options("medium", embeddings="one-hot", d_model=4, tokens=(2, 2),
                           weights="diagonal")
    assert "at least 4 tokens; use --tokens 4" in why_not_drawable("full", options)


# Issue 37: --tokens 1-5 --mask mixed drew a mask for a 1-token problem (numpy "high <= 0") and a
# KV-cache question with no cached token (an IndexError): tracebacks, where a set was wanted.
CAMPAIGN_TYPES = ("full", "row", "mistake", "permute", "masked", "cross", "positions", "backward",
                  "grouped", "heads", "kv-cache", "counting")
FAST_TYPES = ("full", "row", "masked", "cross", "kv-cache", "counting")  # the ones that broke, and kin


def draw_or_refuse(types, high: int, mask: str, seed: int) -> list:
    """A set drawn as the CLI draws it (the types that cannot be drawn left out, as the default
    mix does), or a SpecError of one line; any other error fails the test."""
    from generator.kinds.sampling import drawable_types

    try:
        options = draw_options("medium", tokens=(1, high), mask=mask)
        drawn, _ = drawable_types(types, options, False)
        specs = sample_set(options, seed, 2 * len(drawn), types=drawn)
    except SpecError as error:
        assert "\n" not in str(error)
        return []
    least = {kind: TYPES[kind].min_tokens for kind in drawn}
    for spec in specs:  # a type that needs 2 tokens drew 2 or more within the range asked
        tokens = spec.n_keys + len(spec.matrices.get("X_past", ()))  # a KV cache's X: the new token
        assert tokens >= least[spec.question] or not spec.matrices, spec.id
        assert spec.mask == "none" or tokens >= 2 or mask != "mixed", spec.id  # 1 token: nothing to hide
    return specs


@pytest.mark.parametrize("mask", ["none", "causal", "padding", "window", "causal+padding", "mixed"])
@pytest.mark.parametrize("high", range(1, 7))
def test_any_token_range_from_one_draws_or_refuses_in_one_line(high, mask):
    for seed in range(2):
        draw_or_refuse(FAST_TYPES, high, mask, seed)


def test_the_campaigns_mixed_set_with_one_token_draws():
    specs = draw_or_refuse(CAMPAIGN_TYPES, 5, "mixed", 4)  # its command: --count 36 --seed 4
    assert [spec.question for spec in specs] == [*CAMPAIGN_TYPES] * 2


@pytest.mark.slow
@pytest.mark.parametrize("mask", ["none", "causal", "padding", "window", "causal+padding", "mixed"])
@pytest.mark.parametrize("high", range(1, 7))
def test_every_type_with_any_token_range_from_one_draws_or_refuses(high, mask):
    for seed in range(2):
        draw_or_refuse(CAMPAIGN_TYPES, high, mask, seed)
