"""Many heads and shared heads: multi-head attention with 2 to 4 heads and W_O, grouped-query
and multi-query attention (type grouped).  Every head, the concatenation and the projection
equal PyTorch's float64 (``nn.MultiheadAttention`` where the widths allow it, else each head
by ``scaled_dot_product_attention``; grouped queries by ``scaled_dot_product_attention`` with
``enable_gqa=True``) to 1e-9, over random spec files (hypothesis) and over drawn problems at
every difficulty; the rounding student is never marked wrong and the typical slips are (a
query head with the wrong key/value head, another head's block of columns); a spec's faults
are one line; every format is written and the record sets a problem again as it was."""

import json
from pathlib import Path

import numpy as np
import pytest
import sympy
from conftest import make_question, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_marking import false_marks, gap_tolerances, page_tolerances, rounded
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.formats.web import practice_data, step_graph
from generator.kinds.sampling import draw_options, sample_set
from generator.rendering.paper import answer_keys
from generator.running.pipeline import solve_checked

ENTRY = st.one_of(st.integers(-2, 2), st.integers(-150, 150).map(lambda n: str(sympy.Rational(n, 100))))
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


def tensor(step):
    torch = torch_or_skip()
    return torch.tensor(step.numeric, dtype=torch.float64)


def scale_of(spec):
    return None if spec.scale is None else float(spec.scale)


def torch_heads(question, heads: int, kv_heads: int):
    """Each head's output, C and Y by torch from the question's Q, K, V and W_O: grouped queries
    by scaled_dot_product_attention with enable_gqa (q (1, H_q, n, d), k and v (1, H_kv, n, d))."""
    torch = torch_or_skip()
    steps = question.named_steps()
    q, k, v = (tensor(steps[n]) for n in "QKV")

    def split(t, count):  # (n, count * d) -> (1, count, n, d)
        return t.reshape(t.shape[0], count, -1).transpose(0, 1).unsqueeze(0)

    out = torch.nn.functional.scaled_dot_product_attention(
        split(q, heads), split(k, kv_heads), split(v, kv_heads), scale=scale_of(question.spec),
        enable_gqa=kv_heads != heads)
    concat = out.squeeze(0).transpose(0, 1).reshape(q.shape[0], -1)
    return out.squeeze(0), concat, concat @ tensor(steps["W_O"])


def torch_weights(question, heads: int, kv_heads: int):
    """Each query head's weights, softmax(scale Q_h K_g^T), K_g repeated for its group as
    enable_gqa does."""
    torch = torch_or_skip()
    steps = question.named_steps()
    q, k = (tensor(steps[n]) for n in "QK")
    queries = q.reshape(q.shape[0], heads, -1).transpose(0, 1)
    keys = k.reshape(k.shape[0], kv_heads, -1).transpose(0, 1).repeat_interleave(heads // kv_heads, dim=0)
    scale = scale_of(question.spec) or queries.shape[-1] ** -0.5
    return torch.softmax(queries @ keys.transpose(1, 2) * scale, dim=-1)


def assert_equals_torch(question, heads: int, kv_heads: int):
    steps = question.named_steps()
    outputs, concat, projected = torch_heads(question, heads, kv_heads)
    weights = torch_weights(question, heads, kv_heads)
    for h in range(1, heads + 1):
        assert np.allclose(steps[f"head{h}.output"].numeric, outputs[h - 1].numpy(), rtol=0, atol=1e-9)
        assert np.allclose(steps[f"head{h}.weights"].numeric, weights[h - 1].numpy(), rtol=0, atol=1e-9)
    assert np.allclose(steps["concat"].numeric, concat.numpy(), rtol=0, atol=1e-9)
    if question.spec.params.get("places") is None:
        assert np.allclose(steps["projected"].numeric, projected.numpy(), rtol=0, atol=1e-9)


def assert_equals_multihead_attention(question, heads: int):
    """torch.nn.MultiheadAttention(embed_dim, heads, bias=False) with in_proj_weight from W_Q, W_K,
    W_V and out_proj.weight from W_O: Y for self-attention from X."""
    torch = torch_or_skip()
    steps = question.named_steps()
    x = tensor(steps["X"])
    mha = torch.nn.MultiheadAttention(x.shape[1], heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([tensor(steps[n]).T for n in ("W_Q", "W_K", "W_V")], dim=0))
        mha.out_proj.weight.copy_(tensor(steps["W_O"]).T)
        expected, _ = mha(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0), need_weights=False)
    assert np.allclose(steps["projected"].numeric, expected.squeeze(0).numpy(), rtol=0, atol=1e-9)


@st.composite
def heads_records(draw):
    heads, tokens = draw(st.integers(2, 4)), draw(st.integers(1, 4))
    d_k, d_v = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    square = draw(st.booleans())  # d_model = h d_k = h d_v: torch's MultiheadAttention fits
    d_v = d_k if square else d_v
    d_model = heads * d_k if square else draw(st.integers(1, 3))
    record = {"type": "heads", "heads": heads, "W_O": draw(matrix(heads * d_v, d_model))}
    if draw(st.booleans()) or square:
        record.update(X=draw(matrix(tokens, d_model)), W_Q=draw(matrix(d_model, heads * d_k)),
                      W_K=draw(matrix(d_model, heads * d_k)), W_V=draw(matrix(d_model, heads * d_v)))
    else:
        record.update(Q=draw(matrix(tokens, heads * d_k)), K=draw(matrix(tokens, heads * d_k)),
                      V=draw(matrix(tokens, heads * d_v)))
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2"]))
    if draw(st.booleans()):
        record["head"] = draw(st.integers(1, heads))
    return record, square


@SETTINGS
@given(heads_records())
def test_many_heads_equal_torch(drawn):
    record, square = drawn
    question = make_question(**record)
    assert_equals_torch(question, record["heads"], record["heads"])
    if square and "scale" not in record:
        assert_equals_multihead_attention(question, record["heads"])
    asked = [part.head for part in question.parts if part.task == "head"]
    assert asked == ([record["head"]] if "head" in record else list(range(1, record["heads"] + 1)))
    assert len(question.shown) == record["heads"] - len(asked)  # the other heads' outputs, given


@st.composite
def grouped_records(draw):
    kv_heads, group = draw(st.integers(1, 2)), draw(st.integers(2, 3))
    heads, tokens = kv_heads * group, draw(st.integers(1, 4))
    d_k, d_v, d_model = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    record = {"type": "grouped", "heads": heads, "kv_heads": kv_heads,
              "W_O": draw(matrix(heads * d_v, d_model))}
    if draw(st.booleans()):
        record.update(X=draw(matrix(tokens, d_model)), W_Q=draw(matrix(d_model, heads * d_k)),
                      W_K=draw(matrix(d_model, kv_heads * d_k)), W_V=draw(matrix(d_model, kv_heads * d_v)))
    else:
        record.update(Q=draw(matrix(tokens, heads * d_k)), K=draw(matrix(tokens, kv_heads * d_k)),
                      V=draw(matrix(tokens, kv_heads * d_v)))
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2"]))
    return record


@SETTINGS
@given(grouped_records())
def test_grouped_queries_equal_torch_with_enable_gqa(record):
    question = make_question(**record)
    assert_equals_torch(question, record["heads"], record["kv_heads"])
    assert question.kind == "grouped"


DRAWN = [("grouped", "easy", {}), ("grouped", "medium", {}), ("grouped", "hard", {}),
         ("heads", "medium", {}), ("heads", "hard", {"d_k": 6, "d_v": 3}),
         ("heads", "hard", {"d_k": 8, "d_v": 4})]


def drawn(kind, difficulty, overrides, seed=5, count=2, decimals=4):
    options = draw_options(difficulty, decimals=decimals, **overrides)
    return [solve_checked(spec) for spec in sample_set(options, seed, count, types=(kind,))]


def counts(question) -> tuple[int, int]:
    heads = question.spec.params.get("heads", 2)
    return heads, question.spec.params.get("kv_heads", heads)


@pytest.mark.parametrize("kind, difficulty, overrides", DRAWN)
def test_drawn_problems_equal_torch(kind, difficulty, overrides):
    for question in drawn(kind, difficulty, overrides):
        heads, kv_heads = counts(question)
        assert_equals_torch(question, heads, kv_heads)
        if kind == "heads" and question.spec.d_model == question.spec.d_k == question.spec.d_v:
            assert_equals_multihead_attention(question, heads)


def test_what_each_difficulty_draws():
    """Easy: multi-query, two query heads over one; medium and hard: four query heads over two,
    one worked; heads: two as ever at medium, three or four at hard where --dk allows."""
    layouts = {(kind, difficulty, tuple(overrides.values())):
               {(*counts(q), q.spec.head is not None) for q in drawn(kind, difficulty, overrides)}
               for kind, difficulty, overrides in DRAWN}
    assert layouts == {("grouped", "easy", ()): {(2, 1, False)}, ("grouped", "medium", ()): {(4, 2, True)},
                       ("grouped", "hard", ()): {(4, 2, True)}, ("heads", "medium", ()): {(2, 2, False)},
                       ("heads", "hard", (6, 3)): {(3, 3, True)}, ("heads", "hard", (8, 4)): {(4, 4, True)}}


@pytest.mark.parametrize("decimals", [2, 4])
@pytest.mark.parametrize("kind, difficulty, overrides", DRAWN)
def test_a_student_who_rounds_is_never_marked_wrong(kind, difficulty, overrides, decimals):
    for question in drawn(kind, difficulty, overrides, seed=11, count=3, decimals=decimals):
        assert false_marks(question, decimals) == []


GQA = {"type": "grouped", "heads": 4, "kv_heads": 2,
       "X": [[1, 0, 1], [0, 1, 1], [1, 1, 0]], "W_Q": [[1, 0, 1, -1], [0, 1, 1, 1], [1, 1, 0, 0]],
       "W_K": [[0, 1], [1, 0], [1, -1]], "W_V": [[1, 0], [0, 1], [1, 1]],
       "W_O": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 1, 1]]}


def test_the_key_says_which_heads_share():
    question = make_question(**GQA)
    split = next(part for part in question.parts if part.task == "split")
    assert split.shown_as == ("Q_1", "Q_2", "K_1", "V_1", "Q_3", "Q_4", "K_2", "V_2")
    assert split.grid_names == ("head1.Q", "head2.Q", "kv1.K", "kv1.V", "head3.Q", "head4.Q", "kv2.K",
                                "kv2.V")
    # query heads 1 and 2 read K_1 (the first column of K), 3 and 4 K_2
    k = question.solution.step("K").numeric
    for head, kv in ((1, 1), (2, 1), (3, 2), (4, 2)):
        assert np.array_equal(question.extra[f"head{head}"].step(f"kv{kv}.K").numeric, k[:, kv - 1:kv])


def test_the_wrong_head_shared_and_the_wrong_block_are_marked_wrong():
    """Query head 2 worked with K_2, V_2 (the other group's), and Q_2 read off head 3's block: on
    the page (from the student's own grids) and in Moodle each is wrong, and the page names it."""
    question = make_question(**GQA)
    decimals = 4
    moodle, page = gap_tolerances(question, decimals), page_tolerances(question, decimals)
    head2, head3 = question.extra["head2"], question.extra["head3"]
    q2 = head2.step("Q").numeric
    k1, v1 = head2.step("kv1.K").numeric, head2.step("kv1.V").numeric
    k2, v2 = head3.step("kv2.K").numeric, head3.step("kv2.V").numeric
    scores = head2.step("scores")
    for wrong in (q2 @ k2.T, head3.step("Q").numeric @ k1.T):  # the wrong K shared; Q_3's block
        off = np.abs(rounded(wrong, decimals) - scores.numeric)
        assert (off > moodle[id(scores)]).any() and (off > page[id(scores)][0]).any()
    output = head2.step("output")
    wrong = head2.step("weights").numeric @ v2
    assert (np.abs(rounded(wrong, decimals) - output.numeric) > moodle[id(output)]).any()
    assert not np.allclose(wrong, head2.step("weights").numeric @ v1)
    graph = step_graph(question)
    assert graph["head2.scores"]["inputs"] == ["head2.Q", "kv1.K"]  # carried from the student's K_1
    assert graph["head4.output"]["inputs"] == ["head4.weights", "kv2.V"]
    assert [s["says"] for s in graph["kv1.K"]["slips"]] == [
        "the wrong head shared: query heads 1 and 2 use K_1, column 1 of K, not K_2"]
    assert graph["kv1.K"]["slips"][0]["change"]["columns"] == (1,)
    assert any("this is head 3's block" in s["says"] for s in graph["head2.Q"]["slips"])


def test_the_statement_says_grouped_or_multi_query_and_why(tmp_path, run_cli):
    spec = tmp_path / "gqa.json"
    spec.write_text(json.dumps(GQA))
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "o")[0] == 0
    text = (tmp_path / "o" / "answers.md").read_text()
    assert "Problem 1: Grouped-query attention" in text
    assert "Query heads 1 and 2 use K_1, V_1; query heads 3 and 4 use K_2, V_2." in text
    assert "KV cache" in text and "S_2 = Q_2 K_1^T" in text and "O_4 = A_4 V_2" in text
    mqa = {**GQA, "heads": 2, "kv_heads": 1, "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[1], [1], [0]],
           "W_V": [[1], [2], [0]], "W_O": [[1, 0, 1], [0, 1, 0]]}
    spec.write_text(json.dumps(mqa))
    assert run_cli("--spec", spec, "--format", "md", "--out", tmp_path / "m")[0] == 0
    text = (tmp_path / "m" / "questions.md").read_text()
    assert "Problem 1: Multi-query attention" in text and "2 query heads share one key/value head" in text


TWO_HEADS = {"type": "heads", "X": GQA["X"], "W_Q": GQA["W_Q"], "W_K": [[0, 1, 1, 0]] * 3,
             "W_V": [[1, 0, 0, 1]] * 3, "W_O": [[1, 0, 1]] * 4}


@pytest.mark.parametrize("base, changes, expected", [
    (GQA, {"heads": 5}, "heads = 5 query heads must be a multiple of kv_heads = 2"),
    (GQA, {"heads": 9}, "heads must be a whole number from 2 to 8, got 9"),
    (GQA, {"heads": 3}, "heads = 3 query heads must be a multiple of kv_heads = 2 key/value heads"),
    (GQA, {"kv_heads": 4}, "must be a multiple of kv_heads = 4 key/value heads, and more"),
    (GQA, {"W_K": [[0, 1, 1], [1, 0, 1], [1, -1, 1]]},
     "W_K has 3 columns but 2 key/value heads of d_k = 1 need 2 (W_Q's 4 columns over 4 query heads)"),
    (GQA, {"W_O": [[1, 0, 1]] * 3}, "W_O has 3 rows but 4 query heads of d_v = 1 give 4 columns"),
    (GQA, {"head": 5}, "head must be one of 1 to 4"),
    (GQA, {"mask": "causal"}, "type grouped takes no mask"),
    (TWO_HEADS, {"kv_heads": 2}, "kv_heads goes with type kv-cache or grouped or counting, not heads"),
    (TWO_HEADS, {"heads": 3}, "d_k must split evenly into 3 heads: W_Q and W_K have 4 columns, "
                              "expected a multiple of 3"),
    (TWO_HEADS, {"heads": 1}, "heads must be a whole number from 2 to 4, got 1"),
    (TWO_HEADS, {"head": 3}, "head must be one of 1 to 2"),
    (TWO_HEADS, {"W_O": [[1, 0, 1]] * 3}, "W_O has 3 rows but the heads give 4 columns (2 heads x d_v 2)"),
])
def test_a_spec_fault_is_one_line(tmp_path, run_cli, base, changes, expected):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**base, **changes}))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "o")
    assert code == 2 and expected in err and err.count("\n") == 1, err


@pytest.mark.parametrize("kind, difficulty, extra", [
    ("grouped", "easy", []), ("grouped", "medium", []), ("heads", "hard", ["--dk", "8", "--dv", "4"])])
def test_every_format_and_the_record_sets_it_again(tmp_path, run_cli, kind, difficulty, extra):
    out = tmp_path / "set"
    assert run_cli("--types", kind, "--difficulty", difficulty, *extra, "--count", 2, "--seed", 4,
                   "--practice", "--format", "md,json,html,moodle,qti", "--out", out)[0] == 0
    assert {"questions.md", "answers.md", "problems.json", "practice.html", "moodle.xml",
            "qti.zip"} <= {p.name for p in out.iterdir()}
    record = json.loads((out / "problems.json").read_text())
    for problem in record["problems"]:
        again = tmp_path / problem["id"]
        assert run_cli("--problem", problem["id"], "--record", out / "problems.json", "--out", again)[0] == 0
        [redone] = json.loads((again / "problems.json").read_text())["problems"]
        assert (redone["spec"], redone["type"]) == (problem["spec"], problem["type"])
    data = practice_data(answer_keys({1: [solve_checked(s) for s in sample_set(
        draw_options(difficulty, **({"d_k": 8, "d_v": 4} if extra else {})), 4, 2, types=(kind,))]})[0], 4)
    assert all(problem["graph"] for problem in data["problems"].values())


@pytest.mark.parametrize("kind, difficulty", [("grouped", "easy"), ("grouped", "medium"),
                                              ("grouped", "hard"), ("heads", "hard")])
def test_sized_to_fifteen_minutes(tmp_path, run_cli, kind, difficulty):
    """--minutes 15 fits one problem: one head worked where there are many, the others given."""
    extra = ["--dk", "8", "--dv", "4"] if kind == "heads" else []
    assert run_cli("--minutes", 15, "--types", kind, "--difficulty", difficulty, *extra, "--seed", 2,
                   "--practice", "--format", "md", "--out", tmp_path)[0] == 0
    text = Path(tmp_path / "questions.md").read_text()
    minutes = int(text.split("about ")[1].split(" minutes")[0])
    assert 5 <= minutes <= 15, text[:400]


@pytest.mark.tex
def test_the_papers_compile(tmp_path, run_cli):
    assert run_cli("--types", "grouped,heads", "--difficulty", "hard", "--dk", "8", "--dv", "4", "--count", 2,
                   "--seed", 1, "--pdf", "--out", tmp_path)[0] == 0
    assert (tmp_path / "answers.pdf").stat().st_size > 0 and (tmp_path / "questions.pdf").stat().st_size > 0


PAGES = {"easy": ["--types", "grouped", "--difficulty", "easy"],
         "medium": ["--types", "grouped,heads", "--difficulty", "medium"],
         "hard": ["--types", "grouped,heads", "--difficulty", "hard", "--dk", "8", "--dv", "4"]}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A practice page of each of PAGES (seed 6, 4 decimals), loaded in one Chromium."""
    from playwright.sync_api import sync_playwright
    from test_practice_students import marking_data

    from generator.cli import main
    opened = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for name, args in PAGES.items():
            out = tmp_path_factory.mktemp(f"heads-{name}")
            assert main([*args, "--count", "2", "--seed", "6", "--practice", "--format", "html",
                         "--out", str(out)]) == 0
            page = browser.new_page()
            page.errors = []
            page.on("pageerror", lambda error, page=page: page.errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            opened[name] = (page, marking_data(out / "practice.html"))
        yield opened
        for page, _ in opened.values():
            assert page.errors == []
        browser.close()


@needs_browser
def test_on_the_page_honest_students_are_right_and_the_slips_wrong(pages):
    """The four honest students of test_practice_students are marked right on every cell (a
    slip carried forward costs only its own cell); then, one grid at a time: a shared K_g read
    off the other group's block ("the wrong head shared"), a Q_h off another head's block, and
    a head's scores worked with the other group's K are each marked wrong."""
    from test_practice_students import OPS, grids_of, students_marks, texts, type_and_check, work
    said = []
    for name, (page, problems) in pages.items():
        for way, (right, cells, wrong, slipped) in students_marks(page, problems, 4).items():
            assert wrong == slipped, (name, way, sorted(wrong ^ slipped)[:10])
        for problem_id, problem in problems.items():
            typed, keys, graph = work(problem, 4, "precise"), grids_of(problem), problem["graph"]
            letters = {grid["name"]: key[0] for key, grid in problem["steps"].items()}
            right = {grid: texts(m, keys[grid], 4) for grid, m in typed.items()}
            type_and_check(page, {problem_id: right})
            for grid in typed:
                step = graph[grid]
                if step["op"] == "pick":
                    source = {**{n: np.array(m, dtype=float) for n, m in problem["given"].items()},
                              **typed}.get(step["inputs"][0], keys.get(step["inputs"][0]))
                    for slip in step["slips"]:
                        wrong = OPS["pick"]({**step, **slip["change"]}, source)
                        marks = type_and_check(page, {problem_id: {grid: texts(wrong, keys[grid], 4)}},
                                               [[problem_id, letters[grid]]])
                        assert "wrong" in marks[f"{problem_id} {grid}"], (problem_id, grid)
                        assert slip["says"] in marks[f"{problem_id} ({letters[grid]})"]
                        said.append(slip["says"].split(":")[0])
                        type_and_check(page, {problem_id: {grid: right[grid]}})
                elif grid.endswith(".scores") and step["inputs"][1].startswith("kv"):
                    shared = graph[step["inputs"][1]]  # K_g as picked off K; its slip, K_other
                    if not shared["slips"]:
                        continue  # one key/value head: no other to take
                    other = OPS["pick"]({**shared, **shared["slips"][0]["change"]}, typed["K"])
                    wrong = typed[step["inputs"][0]] @ other.T  # the other group's keys
                    marks = type_and_check(page, {problem_id: {grid: texts(wrong, keys[grid], 4)}},
                                           [[problem_id, letters[grid]]])
                    assert "wrong" in marks[f"{problem_id} {grid}"], (problem_id, grid)
                    said.append("wrong K")
                    type_and_check(page, {problem_id: {grid: right[grid]}})
    assert {"the wrong head shared", "wrong K"} <= set(said)
    assert any(s.startswith("this is head") for s in said)
