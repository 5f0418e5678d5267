"""The counting type: its parameter counts are those of PyTorch's own modules (TransformerEncoderLayer,
MultiheadAttention, and a grouped-query layer of nn.Linear), the heads trap holds, its operation
counts are a hand rule's (loops over a tiny matmul and softmax, counting each multiplication and
addition) and FlopCounterMode's, its bytes a tensor's; every count is an exact whole number in every
format (problems.json, the key, the page, Moodle, Canvas), the typical slips are marked wrong, and
spec files fail in one line."""

from __future__ import annotations

import json
import math
import re
import zipfile

import numpy as np
import pytest
from conftest import solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

from generator.kinds.counting import PARTS
from generator.kinds.sampling import draw_options
from generator.maths.marking import Tolerances
from generator.maths.spec import SpecError, spec_from_record
from generator.rendering.paper import problem_seconds
from generator.running.pipeline import solve_checked

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PARAMETERS = ("count_attention", "count_ffn", "count_norms", "count_layer", "count_model")


def counted(**record):
    """The question of a counting record, solved and cross-checked."""
    return solve_checked(spec_from_record({"type": "counting", **record}, "cnt"))


def count(question, name: str) -> int:
    """A count's exact value, as a Python int (a sympy Integer is one)."""
    value = question.solution.step(name).entries[0][0].exact
    assert value.is_Integer
    return int(value)


def numel(module) -> int:
    return sum(p.numel() for p in module.parameters())


@st.composite
def layers(draw):
    """An encoder layer: d_model a multiple of its heads, biases on or off."""
    heads = draw(st.integers(1, 8))
    return dict(model_dim=heads * draw(st.integers(1, 16)), heads=heads, ffn_dim=draw(st.integers(1, 64)),
                bias=draw(st.booleans()), layers=draw(st.integers(1, 6)))


@SETTINGS
@given(layers())
def test_the_parameters_are_torchs_modules(layer):
    torch = torch_or_skip()
    d, h, dff, bias = layer["model_dim"], layer["heads"], layer["ffn_dim"], layer["bias"]
    question = counted(**layer, parts=["parameters"])
    encoder = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=dff, bias=bias, dropout=0)
    attention = torch.nn.MultiheadAttention(d, h, bias=bias)
    assert count(question, "count_attention") == numel(attention) == numel(encoder.self_attn)
    assert count(question, "count_ffn") == numel(encoder.linear1) + numel(encoder.linear2)
    assert count(question, "count_norms") == numel(encoder.norm1) + numel(encoder.norm2)
    assert count(question, "count_layer") == numel(encoder)
    stack = torch.nn.TransformerEncoder(encoder, layer["layers"], enable_nested_tensor=False)
    assert count(question, "count_model") == numel(stack)


def grouped_layer(torch, d: int, h: int, kv: int, dk: int, bias: bool):
    """Grouped-query attention's projections as PyTorch modules: W_Q to h heads, W_K and W_V to
    the kv shared heads, W_O back from the h heads."""
    linear = torch.nn.Linear
    return torch.nn.ModuleList([linear(d, h * dk, bias=bias), linear(d, kv * dk, bias=bias),
                                linear(d, kv * dk, bias=bias), linear(h * dk, d, bias=bias)])


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 12), st.integers(1, 40), st.booleans())
def test_grouped_query_parameters_are_a_modules_and_the_cache_shrinks_alike(kv, group, dk, d, bias):
    torch = torch_or_skip()
    h = kv * group
    question = counted(model_dim=d, heads=h, kv_heads=kv, head_dim=dk, ffn_dim=8, bias=bias, tokens=5,
                       parts=["parameters", "memory", "traps"])
    assert count(question, "count_attention") == numel(grouped_layer(torch, d, h, kv, dk, bias))
    cache = torch.empty(6, 2, kv, 5, dk, dtype=torch.float16, device="meta")  # default 6 layers, 2 bytes
    assert count(question, "count_kv_cache") == cache.nbytes
    if group > 1:  # the choice compares with a key/value head per head: W_K, W_V and the cache shrink alike
        item = next(part.item for part in question.parts if part.task == "count-kv")
        full = torch.empty(6, 2, h, 5, dk, dtype=torch.float16, device="meta").nbytes
        assert full // cache.nbytes == numel(torch.nn.Linear(d, h * dk, bias=False)) // numel(
            torch.nn.Linear(d, kv * dk, bias=False)) == group
        assert item.choices[item.answer].startswith("$W_K$, $W_V$ and the KV cache shrink;")


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_the_heads_trap_holds_more_heads_same_parameters(h, width, bias):
    torch = torch_or_skip()
    d = 2 * h * width  # both h and 2h divide it
    same = {numel(torch.nn.MultiheadAttention(d, heads, bias=bias)) for heads in (h, 2 * h)}
    assert len(same) == 1
    question = counted(model_dim=d, heads=h, ffn_dim=4, bias=bias, parts=["traps"])
    item = next(part.item for part in question.parts if part.task == "count-heads")
    assert item.choices[item.answer] == "They stay the same."


def test_the_heads_trap_is_asked_only_where_twice_the_heads_split_d_model():
    tasks = {part.task for part in counted(model_dim=6, heads=2, parts=["traps"]).parts}
    assert tasks == {"count-kv", "count-growth"}  # 4 heads do not split 6
    assert {part.task for part in counted(model_dim=8, heads=1, parts=["traps"]).parts} == {
        "count-heads", "count-growth"}  # one head shares nothing


def by_hand(n_q: int, n_k: int, d_k: int) -> dict[str, int]:
    """The hand rule, apart from the engine: QKᵀ, softmax and AV of n_q queries over n_k keys worked
    by loops on real numbers, each multiplication, addition, exponential, division and scaling
    counted as it happens (a dot product of length k: k multiplications, k - 1 additions)."""
    tally = dict.fromkeys(("mult", "add", "exp", "div", "scale"), 0)
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_k))

    def dot(a, b):
        total = a[0] * b[0]
        tally["mult"] += 1
        for x, y in zip(a[1:], b[1:]):
            total += x * y
            tally["mult"] += 1
            tally["add"] += 1
        return total

    scores = [[dot(q[i], k[j]) for j in range(n_k)] for i in range(n_q)]
    qk = dict(tally)
    weights = []
    for row in scores:
        tally["scale"] += len(row)
        e = [math.exp(s / math.sqrt(d_k)) for s in row]
        tally["exp"] += len(row)
        total = e[0]
        for x in e[1:]:
            total += x
            tally["add"] += 1
        weights.append([x / total for x in e])
        tally["div"] += len(row)
    softmax = tally["scale"] + tally["exp"] + (tally["add"] - qk["add"]) + tally["div"]
    before = dict(tally)
    out = [[dot(weights[i], v[:, c]) for c in range(d_k)] for i in range(n_q)]
    assert np.allclose(out, np.array(weights) @ v)
    return {"count_qk_mult": qk["mult"], "count_qk_add": qk["add"], "count_softmax": softmax,
            "count_av_mult": tally["mult"] - before["mult"], "count_av_add": tally["add"] - before["add"]}


@pytest.mark.parametrize("n, d, h", [(1, 4, 2), (3, 8, 2), (4, 6, 3), (5, 4, 4), (2, 12, 3)])
def test_the_operations_are_the_hand_rules(n, d, h):
    question = counted(model_dim=d, heads=h, ffn_dim=8, tokens=n, parts=["operations"])
    for name, value in by_hand(n, n, d // h).items():
        assert count(question, name) == value, name


@pytest.mark.parametrize("n, d, h, kv", [(1, 4, 2, 2), (3, 8, 2, 1), (4, 6, 3, 3), (2, 12, 4, 2)])
def test_the_projections_multiplications_are_the_hand_rules(n, d, h, kv):
    """X W by loops, a multiplication counted each time one is made: X W_Q, X W_K, X W_V and C W_O."""
    dk, tally = d // h, [0]

    def times(rows, inner, columns):
        for _ in range(rows):
            for _ in range(columns):
                for _ in range(inner):
                    tally[0] += 1
    for inner, columns in ((d, h * dk), (d, kv * dk), (d, kv * dk), (h * dk, d)):
        times(n, inner, columns)
    question = counted(model_dim=d, heads=h, kv_heads=kv, tokens=n, parts=["operations"])
    assert count(question, "count_projections") == tally[0]


@pytest.mark.parametrize("n, d, h, kv", [(3, 8, 2, 2), (16, 64, 4, 1), (128, 512, 8, 2)])
def test_the_projections_are_half_a_flop_counters_linear_layers(n, d, h, kv):
    """FlopCounterMode counts a bias-free linear layer's multiply-adds as 2 FLOPs each."""
    torch = torch_or_skip()
    from torch.utils.flop_counter import FlopCounterMode

    layer = grouped_layer(torch, d, h, kv, d // h, bias=False)
    x = torch.ones(n, d)
    with FlopCounterMode(display=False) as counter:
        for projection in layer[:3]:
            projection(x)
        layer[3](torch.ones(n, h * (d // h)))
    question = counted(model_dim=d, heads=h, kv_heads=kv, tokens=n, parts=["operations"])
    assert 2 * count(question, "count_projections") == counter.get_total_flops()


@pytest.mark.parametrize("n, d, h", [(3, 8, 2), (16, 64, 4), (128, 512, 8)])
def test_the_flops_are_flop_counters(n, d, h):
    """FlopCounterMode counts a matmul's m·k·n multiply-adds as 2 FLOPs each: the question's
    convention, which its prompt states."""
    torch = torch_or_skip()
    from torch.utils.flop_counter import FlopCounterMode

    dk = d // h
    q, k, v = torch.ones(n, dk), torch.ones(n, dk), torch.ones(n, dk)
    with FlopCounterMode(display=False) as counter:
        torch.matmul(torch.matmul(q, k.T), v)
    question = counted(model_dim=d, heads=h, tokens=n, parts=["operations"])
    assert count(question, "count_flops") == counter.get_total_flops()


def test_doubling_n_quadruples_the_scores_and_doubles_the_projections():
    small, large = (counted(model_dim=8, heads=2, tokens=n, parts=["operations", "memory"]) for n in (3, 6))
    assert count(large, "count_qk_mult") == 4 * count(small, "count_qk_mult")
    assert count(large, "count_scores_bytes") == 4 * count(small, "count_scores_bytes")
    assert count(large, "count_kv_cache") == 2 * count(small, "count_kv_cache")
    assert count(large, "count_projections") == 2 * count(small, "count_projections")
    item = next(part.item for part in counted(model_dim=8, heads=2, tokens=3, parts=["traps"]).parts
                if part.task == "count-growth")
    assert item.choices[item.answer] == "The scores grow four times, the projections' multiplications double."


def test_the_scores_bytes_are_a_tensors():
    torch = torch_or_skip()
    question = counted(model_dim=512, heads=8, tokens=256, bytes_per_value=4, parts=["memory"])
    assert count(question, "count_scores_bytes") == torch.empty(8, 256, 256, dtype=torch.float32,
                                                                 device="meta").nbytes


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_drawn_problems_are_exact_whole_numbers_and_match_torch(difficulty):
    torch = torch_or_skip()
    for question in solved_set(draw_options(difficulty), 7, 6, 1, ("counting",)):
        spec = question.spec
        assert not spec.matrices and spec.parts == PARTS
        for step in question.solution.steps:
            assert all(n.exact.is_Integer for row in step.entries for n in row), step.name
        if spec.kv_heads == spec.heads:
            encoder = torch.nn.TransformerEncoderLayer(spec.model_dim, spec.heads, dim_feedforward=spec.ffn_dim,
                                                       bias=spec.bias, dropout=0)
            assert count(question, "count_layer") == numel(encoder)
        assert 8 * 60 <= problem_seconds(question.parts) <= 15 * 60  # by hand, with a calculator
        if difficulty == "easy":  # and without one
            assert 8 * 60 <= problem_seconds(question.parts, calculator=False) <= 15 * 60
        for part in question.parts:  # a tolerance of nothing: a count is right or it is wrong
            for step in part.written:
                assert not Tolerances(question, 2).of(step).chain.any()


def test_the_notes_say_what_the_numbers_say():
    from conftest import render

    from generator.rendering.render import render_markdown

    question = counted(model_dim=8, heads=2, ffn_dim=16, layers=2, tokens=3, bytes_per_value=4)
    key = "".join(render(render_markdown, [question]).values())
    ffn, layer = count(question, "count_ffn"), count(question, "count_layer")
    assert f"holds about {round(100 * ffn / layer)}% of a layer's parameters" in key
    assert "takes 36 multiplications but 27 additions" in key  # 3·3·4 and 3·3·3
    assert "at n = 6 tokens the scores would take 288 bytes and the cache 768 bytes" in key
    assert "- W_Q: 8 × 2 × 4 = 64" in key and "64 + 64 + 64 + 64 + 8 + 8 + 8 + 8 = 288" in key


def wrong(question, name: str, theirs: int) -> bool:
    """Whether an answer to step ``name`` is marked wrong by the chain tolerance (Moodle's, Canvas's
    and the page's where the inputs are the key's)."""
    step = question.solution.step(name)
    return abs(theirs - step.numeric[0, 0]) > Tolerances(question, 4).of(step).chain[0, 0] + 1e-12


def test_the_typical_slips_are_marked_wrong_and_named_on_the_page():
    from generator.formats.web import step_graph

    question = counted(model_dim=8, heads=2, kv_heads=1, ffn_dim=16, tokens=3)
    d, h, kv, dk = 8, 2, 1, 4
    right = count(question, "count_attention")
    slips = {"biases forgotten": right - (h + 2 * kv) * dk - d, "the heads counted twice": 4 * h * d * d,
             "every head its own K and V": right + 2 * (h - kv) * dk * (d + 1)}
    assert all(wrong(question, "count_attention", value) for value in slips.values())
    assert wrong(question, "count_qk_add", 3 * 3 * dk)  # d_k, not d_k - 1
    assert wrong(question, "count_norms", 2 * d)  # γ alone
    assert wrong(question, "count_kv_cache", count(question, "count_kv_cache") // 2)  # K alone
    assert not wrong(question, "count_attention", right)
    graph = step_graph(question)
    theirs = {name: [sum(math.prod(row) for row in slip["change"]["terms"]) for slip in graph[name]["slips"]]
              for name in ("count_attention", "count_qk_add", "count_norms")}
    assert set(slips.values()) == set(theirs["count_attention"])
    assert theirs["count_qk_add"] == [36] and 2 * d in theirs["count_norms"]
    says = " ".join(slip["says"] for slip in graph["count_attention"]["slips"])
    assert "biases are missing" in says and "not d_model × d_model" in says


@pytest.mark.parametrize("change, says", [
    ({"heads": 3}, "heads must divide model_dim (d_k = d_model/h) unless head_dim is given: 8 / 3"),
    ({"kv_heads": 3}, "kv_heads must divide heads"),
    ({"parts": ["parameters", "flops"]}, "parts must be a list of some of parameters, operations, memory, traps"),
    ({"parts": []}, "parts must be a list"),
    ({"bias": 1}, "bias must be true or false, got 1"),
    ({"model_dim": 0}, "model_dim must be a whole number from 1 to 65536, got 0"),
    ({"X": [[1, 0]]}, "type counting takes no X: its problems give a configuration"),
    ({"mask": "causal"}, "type counting takes no mask"),
    ({"row": 1}, "type counting takes no row"),
])
def test_a_bad_spec_fails_in_one_line(change, says):
    with pytest.raises(SpecError) as caught:
        spec_from_record({"type": "counting", "model_dim": 8, "heads": 2, **change}, "cnt", "cnt.toml")
    message = str(caught.value)
    assert message.startswith("cnt.toml: ") and says in message and "\n" not in message


def test_every_format_writes_the_counts_as_whole_numbers(tmp_path, run_cli):
    """problems.json holds Python ints, --record sets the problem again byte for byte, Moodle's
    gaps take the whole number with tolerance 0, Canvas's the whole number (its least margin,
    0.0001, lets no other whole number in), and the page's data the whole number with nothing
    either side."""
    out = tmp_path / "out"
    code, _, err = run_cli("--types", "counting", "--difficulty", "hard", "--count", "2", "--seed", "4",
                           "--format", "md,html,moodle,qti", "--practice", "--out", out)
    assert code == 0, err
    problems = json.loads((out / "problems.json").read_text())["problems"]
    values = [p["steps"][name] for p in problems for name in p["steps"] if name.startswith("count_")]
    assert values and all(type(v) is int for rows in values for row in rows for v in row), values[:1]
    for problem in problems:
        code, _, err = run_cli("--record", out / "problems.json", "--problem", problem["id"], "--format",
                               "md", "--out", tmp_path / problem["id"])
        assert code == 0, err
        again = json.loads((tmp_path / problem["id"] / "problems.json").read_text())["problems"][0]
        assert again == problem  # the problem set again: every key of its record alike
    moodle = (out / "moodle.xml").read_text()
    gaps = re.findall(r"NUMERICAL:=([^:}]+):([^}]+)\}", moodle)
    assert gaps and all(re.fullmatch(r"\d+", v) and t == "0" for v, t in gaps), gaps[:3]
    with zipfile.ZipFile(out / "qti.zip") as package:
        quiz = next(package.read(n).decode() for n in package.namelist() if n.endswith("quiz.xml"))
    for exact, low, high in re.findall(r"<varequal [^>]*>([^<]+)</varequal>\s*<and>\s*<vargte [^>]*>([^<]+)"
                                       r"</vargte>\s*<varlte [^>]*>([^<]+)</varlte>", quiz):
        assert re.fullmatch(r"\d+", exact) and int(exact) - 1 < float(low) <= float(high) < int(exact) + 1
    page = (out / "practice.html").read_text()
    assert "count_model" in page


def test_no_calculator_is_refused_in_one_line_beyond_easy(tmp_path, run_cli):
    code, _, err = run_cli("--types", "counting", "--difficulty", "hard", "--no-calculator", "--out", tmp_path)
    assert code == 2 and "calculator" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("--types", "counting", "--difficulty", "easy", "--no-calculator", "--count", "2",
                           "--format", "md", "--out", tmp_path / "easy")
    assert code == 0, err


def test_a_50_minute_paper_with_full_fits(tmp_path, run_cli):
    code, _, err = run_cli("--minutes", "50", "--types", "counting,full", "--seed", "3", "--out", tmp_path)
    assert code == 0, err
    minutes = re.findall(r"about (\d+) minutes of working", (tmp_path / "questions.md").read_text())
    assert minutes and all(int(m) <= 50 for m in minutes)
    each = [int(m) for m in re.findall(r"Counting parameters, operations and bytes \(\d+ marks, about (\d+) min",
                                       (tmp_path / "answers.md").read_text())]
    assert each and all(8 <= m <= 15 for m in each)


@needs_browser
def test_the_page_marks_counts_from_the_students_own_values(tmp_path):
    """Four students type counting problems into the practice page (test_practice_students'): who
    rounds, who keeps full precision, who slips in the attention's count and carries it into the
    layer's and the model's; every cell is marked right but the slipped one; a head counted as
    d_model × d_model is marked wrong and named."""
    import test_practice_students as students
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    students.OPS.setdefault("count", lambda s, *tables: np.array([[
        sum(math.prod(row) for row in (s.get("terms") or np.vstack(tables).tolist()))]], dtype=float))
    students.OPS.setdefault("count-times", lambda s, *inputs: np.array([[math.prod(
        x for m in inputs for x in np.ravel(m))]], dtype=float))
    students.OPS.setdefault("cache-size", lambda s, m: np.array([[2 * np.prod(m[0, :5]) / m[0, 5]]]))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium", args=CHROMIUM_ARGS)
        for difficulty in ("easy", "hard"):
            out = tmp_path / difficulty
            assert main(["--practice", "--types", "counting", "--count", "3", "--seed", "6", "--difficulty",
                         difficulty, "--decimals", "2", "--format", "html", "--out", str(out)]) == 0
            page = browser.new_page()
            errors: list = []
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            problems = students.marking_data(out / "practice.html")
            for way, (right, cells, wrong, slipped) in students.students_marks(page, problems, 2).items():
                assert cells >= 39 and wrong == slipped, (difficulty, way, sorted(wrong ^ slipped)[:10])
            problem_id, terms = next((problem_id, s["change"]["terms"]) for problem_id, problem in problems.items()
                                     for s in problem["graph"]["count_attention"]["slips"]
                                     if "not d_model × d_model" in s["says"])  # every head d_model × d_model
            slip = np.array([[sum(math.prod(row) for row in terms)]], dtype=float)
            marks = students.type_and_check(page, {problem_id: {"count_attention": students.texts(
                slip, slip, 2)}}, [[problem_id, "a"]])
            assert marks[f"{problem_id} count_attention"] == ["wrong"], marks
            assert "the heads split d_model" in marks[f"{problem_id} (a)"]
            assert errors == []
        browser.close()


def test_a_short_paper_asks_the_lean_part_set(tmp_path, run_cli):
    """--minutes too short for every part: the operations are left out (``parts`` says so, and the
    record draws it again so)."""
    code, _, err = run_cli("--minutes", "8", "--types", "counting", "--seed", "2", "--out", tmp_path)
    assert code == 0, err
    problem = json.loads((tmp_path / "problems.json").read_text())["problems"][0]
    assert problem["spec"]["parts"] == ["parameters", "memory", "traps"]
    assert not any(name.startswith("count_qk") for name in problem["steps"])


# What a lecturer found trying the type fresh (issue 35's review): each test failed before its fix.
def answers_of(question) -> set[str]:
    return {str(count(question, step.name)) for part in question.parts for step in part.written}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_no_choice_states_an_answer_and_the_right_one_is_not_the_long_one(difficulty):
    questions = [*solved_set(draw_options(difficulty), 11, 4, 1, ("counting",)),
                 counted(model_dim=32, heads=4, kv_heads=4, ffn_dim=128, bias=False, layers=4, tokens=16,
                         bytes_per_value=2)]
    for question in questions:
        asked = answers_of(question)
        for part in question.parts:
            if part.item:
                choices = part.item.choices
                assert not set(re.findall(r"\d+", " ".join(choices))) & asked, (part.task, choices)
                right = len(choices[part.item.answer])
                assert right < max(len(c) for c in choices), (part.task, choices)  # not the long one


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_versions_share_shape_and_time_and_differ_in_their_counts(difficulty, seed):
    from generator.kinds.counting import Config, shape

    first, second = (solved_set(draw_options(difficulty), seed, 1, version, ("counting",))[0]
                     for version in (1, 2))
    assert shape(Config.of(first.spec)) == shape(Config.of(second.spec))
    assert [p.task for p in first.parts] == [p.task for p in second.parts]
    assert first.marks == second.marks and problem_seconds(first.parts) == problem_seconds(second.parts)
    common = answers_of(first) & answers_of(second)
    assert len(common) <= (2 if difficulty == "easy" else 0), common


def test_the_marks_are_about_a_mark_a_minute_and_a_half():
    for difficulty in ("easy", "medium", "hard"):
        for question in solved_set(draw_options(difficulty), 7, 3, 1, ("counting",)):
            assert 8 <= question.marks <= 10
            assert 60 <= problem_seconds(question.parts) / question.marks <= 120


def test_the_guide_lists_the_defaults():
    from generator.kinds.counting import KEYS

    guide = open("docs/guide.md", encoding="utf-8").read()
    section = guide[guide.index("### Counting parameters, operations and bytes"):]
    section = section[:section.index("\n## ", 1)]
    for key, _, default in KEYS:
        assert f"`{key}`" in section and (default is None or str(default) in section), key
    assert "`bias`" in section and "`parts`" in section


def test_the_heads_trap_is_left_out_where_the_head_width_is_not_d_model_over_h():
    tasks = {part.task for part in counted(heads=8, head_dim=48, parts=["traps"]).parts}
    assert "count-heads" not in tasks
    asked = counted(heads=8, head_dim=64, parts=["traps"])  # 8 · 64 = 512: the stated layer's own split
    assert "count-heads" in {part.task for part in asked.parts}


def test_the_statement_asks_for_products_written_out_on_paper_only():
    from generator.kinds.counting_prose import STATEMENT

    assert "show each product written out" not in " ".join(STATEMENT)
    assert "on paper" in STATEMENT[-1]


def test_the_lecturers_paper_gives_each_version_its_own_counts_in_one_shape(tmp_path, run_cli):
    """Issue 35's trial: --minutes 50 with three other types, three versions (a paper sized to a
    budget draws every version, the first too, in the measured form)."""
    from generator.kinds.counting import Config, answers, shape

    code, _, err = run_cli("--minutes", "50", "--types", "full,counting,why-scale,masked", "--seed", "11",
                           "--versions", "3", "--format", "md", "--out", tmp_path)
    assert code == 0, err
    records = [p["spec"] for p in json.loads((tmp_path / "problems.json").read_text())["problems"]
               if p["type"] == "counting"]
    configs = [Config(r["model_dim"], r["heads"], r["kv_heads"], r["model_dim"] // r["heads"], r["ffn_dim"],
                      r["bias"], r["layers"], r["tokens"], r["bytes_per_value"]) for r in records]
    assert len(configs) == 3 and len({shape(c) for c in configs}) == 1
    first = set(answers(configs[0]).values())
    assert all(not first & set(answers(c).values()) for c in configs[1:])
    assert len(set(configs)) == 3
    heads = re.findall(r"Counting parameters, operations and bytes \((\d+) marks, about (\d+) min",
                       (tmp_path / "questions.md").read_text())
    assert len(set(heads)) == 1 and 8 <= int(heads[0][0]) <= 10, heads


def test_every_part_that_writes_cw_o_says_what_c_is(tmp_path, run_cli):
    """C (the heads' outputs side by side) is named in every part that writes CW_O: a paper of the
    lean part set has no operations part to name it first."""
    for minutes, seed in (("8", "2"), ("15", "1")):
        out = tmp_path / minutes
        code, _, err = run_cli("--minutes", minutes, "--types", "counting", "--seed", seed, "--format", "md",
                               "--out", out)
        assert code == 0, err
        parts = [line for line in (out / "questions.md").read_text().splitlines() if "CW_O" in line]
        assert parts and all("side by side" in line for line in parts), parts
