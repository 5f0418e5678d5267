"""Question types beyond the full pipeline: each built from the engine's own numbers."""

import json
import re

import numpy as np
import pytest
import sympy
from conftest import make_question, torch_or_skip
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.kinds import default_mix, type_names
from generator.kinds.sampling import draw_options, sample_set
from generator.maths.spec import MISTAKES, SpecError
from generator.rendering.formatting import decimal_text

QUESTION_TYPES = type_names()

# Three tokens with d_k = d_v = 3, so that every mistake's wrong product has matching shapes.
SQUARE = {"X": [[1, 0, 1], [0, 2, 1], [1, 1, 0]], "W_Q": [[1, 0, 1], [0, 1, 0], [1, 1, 0]],
          "W_K": [[0, 1, 1], [1, 0, 0], [1, 0, 1]], "W_V": [[1, 0, 0], [0, 1, 1], [2, 0, 1]]}


def shown(step, decimals=4):
    return [[decimal_text(n, decimals) for n in row] for row in step.entries]


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_changes_its_step_at_the_shown_decimals(mistake):
    question = make_question(**SQUARE, type="mistake", mistake=mistake)
    wrong_step = MISTAKES[mistake]
    wrong, right = question.extra["flawed"].step(wrong_step), question.solution.step(wrong_step)
    assert shown(wrong) != shown(right)
    find, fix = question.parts
    assert (find.task, find.marks, fix.task, fix.marks) == ("mistake-find", 2, "mistake-fix", 3)
    assert find.steps == (wrong, right) and find.written == ()  # the key compares; a choice asks
    assert find.item.choices[find.item.answer] == mistake
    assert fix.steps[0] is right and fix.steps[-1] is question.solution.step("output")
    # the student writes only the steps from the mistake on; the steps before it, the
    # student's right working, are kept as given
    names = [s.name for s in question.solution.steps if s.kind != "given"]
    at = names.index(wrong_step)
    assert [s.name for s in fix.written] == names[at:]
    assert [s.name for s in fix.kept] == names[:at]
    for step in fix.kept:
        assert shown(question.extra["flawed"].step(step.name)) == shown(step)


def test_column_softmax_rows_do_not_sum_to_one_but_columns_do():
    question = make_question(**SQUARE, type="mistake", mistake="column-softmax")
    weights = question.extra["flawed"].step("weights").numeric
    assert np.allclose(weights.sum(axis=0), 1) and not np.allclose(weights.sum(axis=1), 1)


def test_mistakes_that_do_not_fit_the_shapes_are_refused():
    with pytest.raises(SpecError, match="needs square shapes"):
        make_question(X=[[1, 0], [0, 1]], W_Q=[[1, 0, 1], [0, 1, 1]], W_K=[[1, 0, 0], [0, 1, 1]],
                      W_V=[[1], [2]], type="mistake", mistake="k-not-transposed")


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), difficulty=st.sampled_from(["easy", "medium", "hard"]))
def test_permuting_tokens_permutes_the_results(seed, difficulty):
    options = draw_options(difficulty, tokens=(2, 4) if difficulty != "easy" else None)
    [spec] = sample_set(options, seed, 1, types=("permute",))
    question = make_question_from(spec)
    predicted_weights, predicted_output = (part.steps[0] for part in question.parts[:2])
    assert question.extra["swapped"].step("weights").exact == predicted_weights.exact
    assert question.extra["swapped"].step("output").exact == predicted_output.exact or np.allclose(
        question.extra["swapped"].step("output").numeric, predicted_output.numeric, rtol=0, atol=1e-12)
    i, j = spec.swap
    assert predicted_weights.entries[i][i] is question.solution.step("weights").entries[j][j]


def make_question_from(spec):
    from generator.running.pipeline import solve_checked
    return solve_checked(spec)


def test_heads_agree_with_an_explicit_torch_computation():
    torch = torch_or_skip()
    [spec] = sample_set(draw_options("hard"), 3, 1, types=("heads",))
    question = make_question_from(spec)
    steps = question.named_steps()
    x, w_q, w_k, w_v, w_o = (torch.tensor(steps[n].numeric, dtype=torch.float64)
                             for n in ("X", "W_Q", "W_K", "W_V", "W_O"))
    q, k, v = ((x @ w).unsqueeze(0) for w in (w_q, w_k, w_v))
    heads = [torch.nn.functional.scaled_dot_product_attention(*(t.chunk(2, dim=-1)[h] for t in (q, k, v)))
             for h in range(2)]
    expected = (torch.cat(heads, dim=-1) @ w_o).squeeze(0).numpy()
    assert np.allclose(steps["projected"].numeric, expected, rtol=1e-9, atol=1e-9)
    assert [p.task for p in question.parts] == ["Q", "split", "head", "head", "concat", "projected"]
    assert question.marks == 16


def test_a_no_calculator_heads_projection_agrees_with_torch_from_c_to_two_places():
    """Without a calculator Y is worked from C to two places (so no O_h needs a long
    division): torch's heads and C agree with the key's, and the key's Y is exactly C rounded
    to two places times W_O, within rounding's reach of torch's own Y."""
    torch = torch_or_skip()
    [spec] = sample_set(draw_options("medium", no_calculator=True), 4, 1, types=("heads",))
    assert spec.places == 2
    steps = make_question_from(spec).named_steps()
    q, k, v, w_o = (torch.tensor(steps[n].numeric, dtype=torch.float64) for n in ("Q", "K", "V", "W_O"))
    heads = [torch.nn.functional.scaled_dot_product_attention(
        *(t.unsqueeze(0).chunk(2, dim=-1)[h] for t in (q, k, v))).squeeze(0) for h in range(2)]
    concat = torch.cat(heads, dim=-1)
    assert np.allclose(steps["concat"].numeric, concat.numpy(), atol=1e-9)
    y = steps["projected"].numeric
    assert np.allclose(y, (torch.round(concat * 100) / 100 @ w_o).numpy(), atol=1e-9)
    assert not np.allclose(y, (concat @ w_o).numpy(), atol=1e-6)
    assert np.abs(y - (concat @ w_o).numpy()).max() <= 0.005 * np.abs(w_o.numpy()).sum(axis=0).max()


def test_heads_match_torch_multihead_attention_when_widths_agree():
    torch = torch_or_skip()
    [spec] = sample_set(draw_options("hard"), 8, 1, types=("heads",))  # d_model = d_k = d_v = 4
    steps = make_question_from(spec).named_steps()
    mha = torch.nn.MultiheadAttention(4, 2, bias=False, batch_first=True, dtype=torch.float64)
    weights = [torch.tensor(steps[n].numeric, dtype=torch.float64).T for n in ("W_Q", "W_K", "W_V")]
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat(weights, dim=0))
        mha.out_proj.weight.copy_(torch.tensor(steps["W_O"].numeric, dtype=torch.float64).T)
        x = torch.tensor(steps["X"].numeric, dtype=torch.float64).unsqueeze(0)
        expected, _ = mha(x, x, x, need_weights=False)
    assert np.allclose(steps["projected"].numeric, expected.squeeze(0).numpy(), atol=1e-9)


def test_row_question_matches_the_full_solution_row():
    question = make_question(**SQUARE, type="row", row=1)
    scaled, weights = (part.steps[0] for part in question.parts)
    assert shown(scaled)[0] == shown(question.solution.step("scaled"))[0]
    assert shown(weights)[0] == shown(question.solution.step("weights"))[0]
    assert question.marks == 4


def test_a_row_whose_top_weight_is_shared_is_refused():
    # SQUARE's row 2 gives keys 1 and 3 the same weight: "which key gets most?" has two answers
    with pytest.raises(SpecError, match="keys 1 and 3 share token 2's top weight"):
        make_question(**SQUARE, type="row", row=2)


def test_concept_items_have_one_right_answer_among_distinct_choices():
    for spec in sample_set(draw_options("medium"), 11, 6, types=("concept",)):
        question = make_question_from(spec)
        topics = [item.topic for item in question.items]
        assert topics == ["top-attention", "row-sum", "output-shape", "no-scaling"]
        top, row_sum, shape, unscaled = question.items
        weights = question.solution.step("weights").numeric[spec.row]
        token, weight = top.choices[top.answer]
        assert token == int(np.argmax(weights)) and weight.value == weights.max()
        assert row_sum.choices[row_sum.answer] == 1
        assert shape.choices[shape.answer] == (spec.n_queries, spec.d_v)
        for item in question.items:
            assert 3 <= len(item.choices) <= 4
            assert len({str(c) if not hasattr(c, "value") else round(c.value, 4)
                        for c in item.choices}) == len(item.choices)


def test_masked_type_is_causal_with_exact_zeros():
    [spec] = sample_set(draw_options("medium"), 2, 1, types=("masked",))
    question = make_question_from(spec)
    assert spec.mask == "causal"
    assert [p.task for p in question.parts] == ["Q", "scores", "scaled", "masked", "weights", "output"]
    weights = question.solution.step("weights").exact
    assert all(w == 0 for i, row in enumerate(weights) for w in row[i + 1:])


def test_types_option_and_json_parts(tmp_path, run_cli):
    code, _, err = run_cli("--count", "4", "--seed", "1", "--types", "row,mistake", "--out", tmp_path)
    assert code == 0, err
    problems = json.loads((tmp_path / "problems.json").read_text())["problems"]
    assert [p["type"] for p in problems] == ["row", "mistake", "row", "mistake"]
    row, mistake = problems[:2]
    assert [(p["part"], p["task"], p["marks"]) for p in row["parts"]] == [
        ("a", "row-scaled", 1), ("b", "row-weights", 3)]
    assert row["given"] == ["given.scores"] and len(row["steps"]["given.scores"]) == 1
    assert mistake["spec"]["type"] == "mistake" and mistake["spec"]["mistake"] in MISTAKES
    assert any(name.startswith("flawed.") for name in mistake["steps"])


def test_every_type_round_trips_through_a_spec_file(tmp_path, run_cli):
    assert run_cli("--count", "7", "--seed", "42", "--out", tmp_path / "a")[0] == 0
    problems = json.loads((tmp_path / "a" / "problems.json").read_text())["problems"]
    assert [p["type"] for p in problems] == list(default_mix())
    spec_file = tmp_path / "again.json"
    spec_file.write_text(json.dumps([p["spec"] for p in problems]))
    assert run_cli("--spec", spec_file, "--out", tmp_path / "b")[0] == 0
    again = json.loads((tmp_path / "b" / "problems.json").read_text())["problems"]
    for first, second in zip(problems, again):
        assert first["steps"] == second["steps"] and first["parts"] == second["parts"]


@pytest.mark.parametrize("changes, expected", [
    ({"type": "essay"}, "unknown type 'essay'"),
    ({"type": "mistake", "mistake": "typo"}, "unknown mistake 'typo'"),
    ({"type": "row", "row": 4}, "row must be a whole number from 1 to 3"),
    ({"type": "permute", "swap": [2, 2]}, "swap must name two different tokens"),
    ({"type": "permute", "mask": "causal"}, "type permute takes no mask"),
    ({"type": "masked"}, 'type masked needs mask = "causal"'),
    ({"type": "heads"}, "type heads needs W_O (the output projection)"),
    ({"W_O": [[1, 0, 0]] * 3}, "W_O goes with type heads or grouped or block, and only there"),
    ({"row": 2}, "row goes with type row or concept or backward or softmax-jacobian, not full"),
    ({"type": "heads", "W_O": [[1, 0, 0]] * 3}, "d_k must split evenly into 2 heads: W_Q and W_K have 3 "
                                                 "columns, expected a multiple of 2"),
])
def test_bad_question_specs(tmp_path, run_cli, changes, expected):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**SQUARE, **changes}))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 2 and expected in err and err.count("\n") == 1, err


def test_unknown_type_on_the_command_line(tmp_path, run_cli):
    code, _, err = run_cli("--types", "full,essay", "--out", tmp_path)
    assert code == 2 and "unknown question type 'essay'" in err


def test_column_softmax_mistake_with_a_constant_value_column():
    """Regression: equal values blend to themselves only when the weights sum to 1.  V's middle
    column is all 1 (a drawn problem; written out, as draws change with the rules of a draw)."""
    question = make_question(  # raises if the engine and the numpy mistake disagree
        X=[[1, -1, 0], [0, 1, -1], [2, 0, 1]], W_Q=[[0, 1, 0, 0], [0, 0, 1, 1], [-1, 0, 1, 0]],
        W_K=[[1, -1, 0, 0], [1, 1, 0, -1], [0, 0, -1, 0]], W_V=[[0, 1, -1], [-1, 0, -1], [-1, -1, 0]],
        type="mistake", mistake="column-softmax")
    assert question.named_steps()["V"].numeric[:, 1].tolist() == [1, 1, 1]


# -- every type honours every option a spec gives, or refuses it in one line ------------------

BASE = {"X": [[1, 0], [0, 2], [1, 1]], "W_Q": [[1, 1], [0, 1]], "W_K": [[1, 0], [1, 1]],
        "W_V": [[1, 0], [0, 1]]}
PROJECTIONS = {"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 2], [1, 1]], "V": [[1, 0], [0, 1], [2, 1]]}
TYPE_KEYS = {"full": {}, "masked": {}, "row": {"row": 2}, "mistake": {"mistake": "column-softmax"}, "backward": {},
             "softmax-jacobian": {"row": 2}, "kv-cache": {},
             "permute": {"swap": [1, 3]}, "heads": {"W_O": [[1, 0], [1, 1]]}, "concept": {"row": 2},
             "cross": {}, "grouped": {"W_O": [[1, 0], [1, 1]]}, "counting": {}, "positions": {"encoding": "rope"},
             "block": {"gamma": [[1, 2]], "beta": [[0, 1]], "W_1": [[1, -1], [0, 1]], "b_1": [[0, 1]],
                       "W_2": [[1, 0], [-1, 1]], "b_2": [[1, 0]]},
             "why-scale": {}}
OPTIONS = {"none": {}, "causal mask": {"mask": "causal"}, "scale 1/2": {"scale": "1/2"},
           "scale 1": {"scale": 1}, "Q, K, V given (cross-attention)": {"projections": True}}


def type_with_option(kind: str, option: dict) -> dict:
    record = dict(PROJECTIONS) if option.get("projections") else dict(BASE)
    record.update({k: v for k, v in option.items() if k != "projections"}, type=kind,
                  **TYPE_KEYS[kind])
    if kind == "masked":
        record.setdefault("mask", "causal")
    if kind == "kv-cache" and "X" in record:  # the last token the new one, the others the cache's
        record.update(X=record["X"][-1:], X_past=record["X"][:-1])
    if kind in ("backward", "softmax-jacobian"):  # the upstream gradient has the output's shape
        rows, columns = len(record.get("Q", record.get("X"))), len(record.get("V", record.get("W_V"))[0])
        record["dO"] = [[(i + j) % 3 - 1 or 0.5 for j in range(columns)] for i in range(rows)]
    return record


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("kind", QUESTION_TYPES)
def test_every_type_honours_every_spec_option_or_refuses_it(kind, option):
    record = type_with_option(kind, OPTIONS[option])
    try:
        question = make_question(**record)
    except SpecError as refusal:
        assert "\n" not in str(refusal)
        return
    spec = question.spec
    for solution in question.solutions():  # heads: each head too
        assert solution.spec.scale == spec.scale
        if kind == "kv-cache":  # its full pass is causal whatever the file says, as a decoder's is
            continue
        assert solution.spec.mask == (spec.mask if solution.spec is spec or kind != "heads" else "none")
    if kind == "kv-cache":  # the new row is the full causal pass's last row, at the spec's scale
        np.testing.assert_allclose(question.solution.step("o_new").numeric,
                                   question.extra["full"].step("output").numeric[-1:], atol=1e-12)
        return
    full = question.solution.step("weights").numeric
    if kind == "row":
        row = question.parts[-1].steps[0].numeric[0]
        np.testing.assert_allclose(row, full[spec.row][:len(row)], atol=1e-12)
        assert full[spec.row][len(row):].sum() == 0  # the keys left out are the masked ones
    if kind == "concept":
        top = question.items[0]
        token, weight = top.choices[top.answer]
        assert token == int(np.argmax(full[spec.row])) and weight.value == full[spec.row].max()


@pytest.mark.parametrize("kind", ["full", "masked", "row"])
def test_the_causal_mask_is_honoured_not_refused(kind):
    question = make_question(**type_with_option(kind, {"mask": "causal"}))
    assert question.solution.spec.mask == "causal"
    if kind == "row":  # the case: the row's weights are the masked problem's own row
        weights = question.parts[-1].steps[0].numeric[0]
        np.testing.assert_allclose(weights, question.solution.step("weights").numeric[1][:2])


@pytest.mark.parametrize("kind", ["full", "row", "permute", "heads", "concept", "mistake"])
def test_a_scale_is_honoured_not_refused(kind):
    assert make_question(**type_with_option(kind, {"scale": "1/2"})).solution.spec.scale == sympy.Rational(1, 2)


def test_the_concept_key_names_the_slip_behind_each_wrong_choice(tmp_path, run_cli):
    assert run_cli("--types", "concept", "--count", 3, "--seed", 4, "--out", tmp_path)[0] == 0
    for problem in json.loads((tmp_path / "problems.json").read_text())["problems"]:
        for item in problem["choices"]:
            answer = "abcd".index(item["answer"])
            assert item["slips"][answer] == ""
            assert all(slip for k, slip in enumerate(item["slips"]) if k != answer)
    key = (tmp_path / "answers.md").read_text()
    assert key.count("Where the others come from:") == 12  # 3 problems, 4 items each
    assert "softmax down each column instead of along the row" in key


def test_an_eight_by_eight_reads_an_eight():
    from generator.rendering.render import make_environment
    article = make_environment(None).filters["article"]
    assert [article(n) for n in (3, 8, 11, 18, 80, 12)] == ["a", "an", "an", "an", "an", "a"]


def test_a_heads_key_labels_each_step_with_its_head_and_its_marks(tmp_path, run_cli):
    assert run_cli("--types", "heads", "--count", 1, "--seed", 2, "--out", tmp_path)[0] == 0
    key = (tmp_path / "answers.tex").read_text()
    for h in (1, 2):
        assert f"$S_{{{h}}} = Q_{{{h}}} K_{{{h}}}^{{\\top}}$" in key
        assert f"$A_{{{h}}} = \\operatorname{{softmax}}(\\tilde{{S}}_{{{h}}})$" in key
        assert f"$O_{{{h}}} = A_{{{h}}} V_{{{h}}}$" in key
        assert f"(S_{{{h}}})_{{1,1}} = " in key
        assert f"Q_{h} = \\left[" in key
    assert "(1~mark a head)" in key  # a no-break space: the number stays with its unit
    assert "A_{1} = [" not in key and "A_{1,:}" not in key.split("Head 1")[0]  # rows are A_{i,:}
    headings = [line for line in key.splitlines()
                if re.match(r"(\\needspace\{\d+\\baselineskip\})?\\medskip\\textbf", line)]
    assert headings and all(re.search(r"\\quad \[\d\]\\par$", line) for line in headings)


def test_a_row_questions_key_never_misnames_its_token(tmp_path, run_cli):
    """The one-row step numbers its row 1: notes written from it would name the wrong token."""
    spec = tmp_path / "row.toml"
    spec.write_text('type = "row"\nrow = 2\nX = [[1, 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\n'
                    'W_K = [[1, 0], [0, 2]]\nW_V = [[1, 0], [0, 1]]\n')
    assert run_cli("--spec", spec, "--out", tmp_path / "o")[0] == 0
    key = (tmp_path / "o" / "answers.md").read_text()
    assert "token 1 attends" not in key and "Reading the weights" not in key
    assert "The most attention goes to key 2" in key
