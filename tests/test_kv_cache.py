"""The kv-cache type: the new token's row from the cache equals PyTorch's (the last row of full
causal attention over all t + 1 tokens, and the single query over the appended K and V), the
cache's size equals a tensor's bytes, the slips are marked wrong, and spec files fail in one line."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy
from conftest import solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web import needs_browser

from generator.kinds.kv_cache import UNITS
from generator.kinds.sampling import draw_options
from generator.maths.marking import Tolerances
from generator.maths.spec import SpecError, spec_from_record
from generator.running.pipeline import solve_checked

ENTRY = st.one_of(st.integers(-3, 3), st.integers(-200, 200).map(lambda n: str(sympy.Rational(n, 100))))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODEL = dict(layers=32, kv_heads=8, head_dim=128, context=4096, bytes_per_value=2, unit="MiB")


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


def floats(rows) -> np.ndarray:
    return np.array([[float(sympy.sympify(x)) for x in row] for row in rows], dtype=float)


@st.composite
def records(draw):
    t, d_model, d_k, d_v = (draw(st.integers(1, n)) for n in (5, 4, 4, 3))
    record = {"type": "kv-cache", "X": draw(matrix(1, d_model)), "W_Q": draw(matrix(d_model, d_k)),
              "W_K": draw(matrix(d_model, d_k)), "W_V": draw(matrix(d_model, d_v))}
    if draw(st.booleans()):
        record["X_past"] = draw(matrix(t, d_model))
    else:
        record.update(K_cache=draw(matrix(t, d_k)), V_cache=draw(matrix(t, d_v)))
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2", "1/sqrt(5)"]))
    return record


def torch_rows(question):
    """(o as the engine has it, the last row of torch's causal pass over all t + 1 tokens, torch's
    single query over the appended K and V), in float64."""
    torch = torch_or_skip()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    spec, solution = question.spec, question.solution
    m = {name: torch.tensor(floats(value), dtype=torch.float64) for name, value in spec.matrices.items()}
    scale = None if spec.scale is None else float(spec.scale)
    x = m["X"]
    q, k, v = x @ m["W_Q"], x @ m["W_K"], x @ m["W_V"]
    if "X_past" in m:  # every token's Q, K and V from scratch
        everything = torch.cat([m["X_past"], x])
        queries, keys, values = everything @ m["W_Q"], everything @ m["W_K"], everything @ m["W_V"]
    else:  # the earlier tokens' queries are never read by the last row: any will do
        keys, values = torch.cat([m["K_cache"], k]), torch.cat([m["V_cache"], v])
        queries = torch.cat([torch.randn(len(m["K_cache"]), q.shape[1], dtype=torch.float64), q])
    full = sdpa(queries, keys, values, is_causal=True, scale=scale)[-1:]
    single = sdpa(q, torch.cat([keys[:-1], k]), torch.cat([values[:-1], v]), scale=scale)
    return solution.step("o_new").numeric, full.numpy(), single.numpy()


def assert_row_is_torchs(question):
    mine, full, single = torch_rows(question)
    np.testing.assert_allclose(mine, full, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mine, single, rtol=0, atol=1e-9)


@SETTINGS
@given(records())
def test_the_new_row_is_the_last_row_of_torchs_causal_pass(record):
    try:
        question = solve_checked(spec_from_record(record, "kv"))
    except SpecError as error:
        assert "too large to exponentiate" in str(error)
        return
    assert_row_is_torchs(question)
    steps = {n: question.solution.step(n).numeric for n in ("K_all", "V_all", "s_new", "a_new")}
    assert steps["K_all"].shape[0] == steps["V_all"].shape[0] == steps["s_new"].shape[1]
    assert abs(steps["a_new"].sum() - 1) < 1e-12


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize("decimals", [2, 4])
def test_drawn_problems_match_torch(difficulty, decimals):
    questions = solved_set(draw_options(difficulty, decimals=decimals), 5, 8, 1, ("kv-cache",))
    for question in questions:
        assert_row_is_torchs(question)
        assert "X_past" in question.spec.matrices and len(question.spec.matrices["X"]) == 1
        full = question.extra["full"].step("output").numeric[-1:]  # the key's check, exactly
        np.testing.assert_allclose(question.solution.step("o_new").numeric, full, atol=1e-12)


def torch_dtype(torch, width: int):
    return {1: torch.uint8, 2: torch.float16, 4: torch.float32, 8: torch.float64}[width]


@SETTINGS
@given(st.integers(1, 128), st.integers(1, 64), st.sampled_from([32, 64, 80, 128, 256]),
       st.integers(1, 10**6), st.sampled_from([1, 2, 4, 8]), st.sampled_from(sorted(UNITS)))
def test_the_cache_size_is_a_tensors_bytes(layers, kv_heads, head_dim, context, width, unit):
    torch = torch_or_skip()
    record = {"type": "kv-cache", "X": [[1, 0]], "W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]],
              "W_V": [[1, 0], [0, 1]], "K_cache": [[0, 1]], "V_cache": [[1, 1]], "layers": layers,
              "kv_heads": kv_heads, "head_dim": head_dim, "context": context, "bytes_per_value": width,
              "unit": unit}
    size = solve_checked(spec_from_record(record, "kv")).solution.step("cache_size")
    cache = torch.empty(layers, 2, kv_heads, context, head_dim, dtype=torch_dtype(torch, width), device="meta")
    assert size.exact[0][0] == sympy.Rational(cache.nbytes, UNITS[unit])
    assert abs(size.numeric[0][0] - cache.nbytes / UNITS[unit]) <= 1e-9 * max(1, size.numeric[0][0])


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_drawn_sizes_match_torch_and_are_short_in_their_unit(difficulty):
    torch = torch_or_skip()
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 8, 1, ("kv-cache",)):
        spec = question.spec
        cache = torch.empty(spec.layers, 2, spec.kv_heads, spec.context, spec.head_dim,
                            dtype=torch_dtype(torch, spec.bytes_per_value), device="meta")
        size = question.solution.step("cache_size").exact[0][0]
        assert size == sympy.Rational(cache.nbytes, UNITS[spec.unit])
        assert (size * 100).is_Integer  # shown exactly at 2 places: the answer is exact


def wrong(question, name: str, theirs: np.ndarray, decimals: int = 2) -> bool:
    """Whether an answer to step ``name`` is marked wrong (Moodle's and Canvas's chain tolerance,
    which the page uses too where the inputs are the key's): a grid of another shape is."""
    step = question.solution.step(name)
    if theirs.shape != step.numeric.shape:
        return True
    tolerance = Tolerances(question, decimals).of(step).chain
    return bool((np.abs(np.round(theirs, decimals) - step.numeric) > tolerance).any())


def softmax(row: np.ndarray) -> np.ndarray:
    e = np.exp(row - row.max())
    return e / e.sum()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_typical_slips_are_marked_wrong(difficulty):
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 8, 1, ("kv-cache",)):
        s = question.solution
        get = {n: s.step(n).numeric for n in ("q_new", "K_cache", "V_cache", "K_all", "V_all", "cache_size")}
        scale = 1 / np.sqrt(question.spec.d_k)
        # k not appended: the row against the cache alone
        short = get["q_new"] @ get["K_cache"].T
        assert wrong(question, "s_new", short)
        assert wrong(question, "o_new", softmax(short[0] * scale)[None, :] @ get["V_cache"])
        # q taken from the cache (the last cached key as the query), or the previous token's row
        # of the full pass recomputed
        cached = get["K_cache"][-1:] @ get["K_all"].T
        assert wrong(question, "o_new", softmax(cached[0] * scale)[None, :] @ get["V_all"])
        previous = question.extra["full"].step("output").numeric[-2:-1]
        assert wrong(question, "o_new", previous)
        # the cache's size without the factor 2
        assert wrong(question, "cache_size", get["cache_size"] / 2)


def test_the_page_names_the_slips():
    from generator.formats.web import step_graph

    question = solved_set(draw_options("medium", decimals=2), 5, 1, 1, ("kv-cache",))[0]
    graph = step_graph(question)
    says = {name: " ".join(slip["says"] for slip in graph[name]["slips"]) for name in graph}
    assert "factor 2" in says["cache_size"]
    assert "missing" in says["K_all"]
    assert "K_cache" in " ".join(str(slip["change"]) for slip in graph["s_new"]["slips"])


BASE = {"type": "kv-cache", "X": [[1, 0]], "W_Q": [[1, 0, 0], [0, 1, 1]], "W_K": [[1, 0, 1], [0, 1, 1]],
        "W_V": [[1, 0], [0, 1]], "K_cache": [[1, 0, 1], [0, 1, 0]], "V_cache": [[1, 1], [0, 1]]}


@pytest.mark.parametrize("change, says", [
    ({"K_cache": [[1, 0], [0, 1]]}, "K_cache must be t × 3 (d_k = 3, the columns of W_K); its row 1 has 2"),
    ({"V_cache": [[1, 1]]}, "V_cache must be 2 × 2, a row per cached token as K_cache has; it has 1 rows"),
    ({"V_cache": [[1, 1, 1], [0, 1, 1]]}, "V_cache must be t × 2 (d_v = 2, the columns of W_V)"),
    ({"X": [[1, 0], [0, 1]]}, "X is the new token's embedding x, one row (1 × 2); it has 2 rows"),
    ({"X_past": [[1, 0]]}, "give the cache as K_cache and V_cache, or the earlier tokens' embeddings"),
    ({"K_cache": None}, "not V_cache"),
    ({"K_cache": [[1, 0, "x"], [0, 1, 0]]}, "K_cache row 1, column 3"),
    ({"layers": 0}, "layers must be a whole number from 1 to 1000, got 0"),
    ({"unit": "MiBs"}, "unit must be one of bytes, KiB, MiB, GiB, KB, MB, GB"),
    ({"K_cache": [[1, 0, 1]] * 12, "V_cache": [[1, 1]] * 12}, "at most 11"),
])
def test_a_bad_spec_fails_in_one_line(change, says):
    record = {**BASE, **change}
    record = {key: value for key, value in record.items() if value is not None}
    with pytest.raises(SpecError) as caught:
        spec_from_record(record, "kv", "kv.toml")
    message = str(caught.value)
    assert message.startswith("kv.toml: ") and says in message and "\n" not in message


def test_only_the_cache_given_says_what_the_equality_rests_on():
    from conftest import render

    from generator.rendering.render import render_markdown

    question = solve_checked(spec_from_record({**BASE, **MODEL}, "kv"))
    assert "full" not in question.extra
    key = "".join(render(render_markdown, [question]).values())
    assert "as long as the cache holds" in key and "536870912 / 1048576 = 512" in key


@needs_browser
def test_the_page_marks_students_from_their_own_values(tmp_path):
    """Four students type kv-cache problems into the practice page (test_practice_students'): who
    rounds, who keeps full precision, who slips early and carries it forward; every cell is marked
    right but the slipped one (the page works each step from the student's own earlier grids);
    the size without its factor 2 is marked wrong and named."""
    import test_practice_students as students

    students.OPS.setdefault("append", lambda s, *parts: np.vstack(parts))
    students.OPS.setdefault("cache-size", lambda s, m: np.array([[2 * np.prod(m[0, :5]) / m[0, 5]]]))
    for page, problems, decimals in students.student_pages(tmp_path, ["--types", "kv-cache", "--count", "4",
                                                                      "--seed", "6"]):
        for way, (right, cells, wrong, slipped) in students.students_marks(page, problems, decimals).items():
            assert cells > 100 and wrong == slipped, (decimals, way, sorted(wrong ^ slipped)[:10])
        problem_id, problem = next(iter(problems.items()))
        size = students.grids_of(problem)["cache_size"] / 2
        marks = students.type_and_check(page, {problem_id: {"cache_size": students.texts(
            size, size, decimals)}}, [[problem_id, "g"]])
        assert marks[f"{problem_id} cache_size"] == ["wrong"] and "factor 2" in marks[f"{problem_id} (g)"]


def test_moodle_and_canvas_mark_the_size_in_the_unit_asked(tmp_path):
    """512 MiB is the answer to the default model: Moodle's gap and Canvas's condition take 512 (to
    a hair), so neither the bytes nor half of it (the factor 2 left out) is right."""
    import zipfile

    from generator.cli import main

    spec = tmp_path / "kv.toml"
    spec.write_text('type = "kv-cache"\nX = [[1, 0]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 1]]\n'
                    'W_V = [[1, 0], [0, 1]]\nK_cache = [[0, 1]]\nV_cache = [[1, 1]]\n', encoding="utf-8")
    assert main(["--spec", str(spec), "--format", "moodle,qti", "--out", str(tmp_path / "out")]) == 0
    moodle = (tmp_path / "out" / "moodle.xml").read_text(encoding="utf-8")
    gap = re.search(r"NUMERICAL:=512:([\d.]+)\}", moodle)
    assert gap and float(gap[1]) < 0.01
    with zipfile.ZipFile(tmp_path / "out" / "qti.zip") as package:
        quiz = next(package.read(n).decode() for n in package.namelist() if n.endswith("quiz.xml"))
    low, high = (float(x) for x in re.search(
        r"<varequal [^>]*>512</varequal>\s*<and>\s*<vargte [^>]*>([\d.]+)</vargte>\s*"
        r"<varlte [^>]*>([\d.]+)</varlte>", quiz).groups())
    assert low <= 512 <= high and high - low < 0.01


def test_a_40_minute_paper_of_four_new_kinds_fits(tmp_path, run_cli):
    """A lecturer's 50-minute sitting, 40 minutes of working: masked, cross, kv-cache and full
    (the kv-cache shrinks by d_v and d_k; it once needed 13 minutes at its shortest)."""
    code, _, err = run_cli("--minutes", "40", "--types", "masked,cross,kv-cache,full", "--versions", "2",
                           "--seed", "11", "--practice", "--out", tmp_path)
    assert code == 0, err
    minutes = re.findall(r"about (\d+) minutes of working", (tmp_path / "questions.md").read_text())
    assert minutes and all(int(m) <= 40 for m in minutes)
