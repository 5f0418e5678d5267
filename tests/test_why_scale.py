"""The why-scale type: every number equals PyTorch's in float64 (the scores, softmax with and
without the scale, scaled_dot_product_attention's output, the standard deviations), the variance
argument holds on sampled vectors, the choices' right answers are right, the slips are marked
wrong, drawn problems take 8 to 15 minutes, and spec files fail in one line."""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
import sympy
from conftest import render, solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_web import needs_browser

from generator.kinds.sampling import draw_options, why_not_drawable
from generator.kinds.why_scale import STATED
from generator.maths.marking import Tolerances
from generator.maths.spec import SpecError, spec_from_record
from generator.rendering.paper import ExamProblem
from generator.rendering.render import render_markdown
from generator.running.pipeline import solve_checked

ENTRY = st.one_of(st.integers(-3, 3), st.integers(-25, 25).map(lambda n: str(sympy.Rational(n, 10))))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIFFICULTIES = ("easy", "medium", "hard")


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


@st.composite
def records(draw):
    n_q, n_k, d_k, d_v = draw(st.integers(1, 3)), draw(st.integers(2, 4)), draw(st.integers(2, 8)), draw(
        st.integers(1, 3))
    return {"type": "why-scale", "Q": draw(matrix(n_q, d_k)), "K": draw(matrix(n_k, d_k)),
            "V": draw(matrix(n_k, d_v)), "stated_dk": draw(st.sampled_from([2, 64, 100, 512, 4096]))}


def assert_numbers_are_torchs(question):
    """S, S̃, A, A_raw, O and σ against PyTorch float64, to 1e-9."""
    torch = torch_or_skip()
    step = {name: question.solution.step(name).numeric
            for name in ("Q", "K", "V", "scores", "scaled", "weights", "weights_raw", "output", "spread")}
    q, k, v = (torch.tensor(step[name], dtype=torch.float64) for name in "QKV")
    scores = q @ k.T
    d_k = q.shape[1]
    expected = {"scores": scores, "scaled": scores / math.sqrt(d_k),
                "weights": torch.softmax(scores / math.sqrt(d_k), dim=-1),
                "weights_raw": torch.softmax(scores, dim=-1),
                "output": torch.nn.functional.scaled_dot_product_attention(q, k, v),
                "spread": torch.tensor([[math.sqrt(question.spec.stated_dk), 1.0]], dtype=torch.float64)}
    for name, value in expected.items():
        np.testing.assert_allclose(step[name], value.numpy(), rtol=0, atol=1e-9, err_msg=name)


@SETTINGS
@given(records())
def test_every_number_is_torchs_on_random_specs(record):
    try:
        question = solve_checked(spec_from_record(record, "ws"))
    except SpecError as error:  # every row uniform: no largest weight to compare
        assert "no row of the weights has one largest weight" in str(error)
        return
    assert_numbers_are_torchs(question)
    assert_choices_are_right(question)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("decimals", [2, 4])
def test_drawn_problems_are_torchs_and_worth_an_exam(difficulty, decimals):
    for question in solved_set(draw_options(difficulty, decimals=decimals), 5, 6, 1, ("why-scale",)):
        assert_numbers_are_torchs(question)
        assert_choices_are_right(question)
        spec = question.spec
        assert spec.stated_dk in STATED and set(spec.matrices) == {"Q", "K", "V"}
        assert 8 <= ExamProblem(1, question).minutes <= 15
        half = 0.5 * 10.0**-decimals
        for name in ("weights", "weights_raw"):  # no weight shown as 0 or 1
            weights = question.solution.step(name).numeric
            assert weights.min() > half and weights.max() < 1 - half
        entries = np.concatenate([question.solution.step(n).numeric.ravel() for n in "QK"])
        assert np.abs(entries).max() <= 2.5  # entries that look like mean 0, variance 1
        places = 10 if difficulty == "hard" else 1  # one-place decimals at hard, whole numbers else
        assert np.allclose(entries * places, np.round(entries * places))


def assert_choices_are_right(question):
    """The variance item's right answer is d_k; the lesson's is the row's largest weight rising to
    torch's, on the key torch's softmax puts it; the slope sentence is a(1 - a) of those weights."""
    torch = torch_or_skip()
    variance, lesson = question.items
    assert variance.choices[variance.answer] == "$d_k$"
    kind, row, key, scaled, raw = lesson.choices[lesson.answer]
    s = torch.tensor(question.solution.step("scores").numeric, dtype=torch.float64)
    with_scale = torch.softmax(s / math.sqrt(question.spec.d_k), dim=-1)[row]
    without = torch.softmax(s, dim=-1)[row]
    assert kind == "sharper" and int(torch.argmax(with_scale)) == key == int(torch.argmax(without))
    assert abs(scaled.value - float(with_scale[key])) < 1e-9 and abs(raw.value - float(without[key])) < 1e-9
    assert raw.value > scaled.value
    facts = question.parts[-1].answer
    assert abs(facts[4].value - scaled.value * (1 - scaled.value)) < 1e-12
    assert abs(facts[5].value - raw.value * (1 - raw.value)) < 1e-12
    others = [choice for i, choice in enumerate(lesson.choices) if i != lesson.answer]
    assert {choice[0] for choice in others} <= {"flatter", "other", "same"}
    for choice in others:  # each false of these numbers
        if choice[0] == "flatter":
            assert choice[4].value < choice[3].value
        if choice[0] == "other":
            assert choice[2] != key


@pytest.mark.parametrize("d_k", [4, 8, 64, 512])
def test_the_variance_argument_holds_on_sampled_vectors(d_k):
    """Unit-variance q and k, independent: the sample variance of q·k is within 3% of d_k, and of
    q·k/√d_k within 3% of 1 (seeded: the same numbers every run)."""
    torch = torch_or_skip()
    rows = min(200_000, 12_800_000 // d_k)
    generator = torch.Generator().manual_seed(35)
    q = torch.randn(rows, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(rows, d_k, generator=generator, dtype=torch.float64)
    scores = (q * k).sum(dim=1)
    assert abs(float(scores.var()) / d_k - 1) < 0.03
    assert abs(float((scores / math.sqrt(d_k)).var()) - 1) < 0.03
    assert abs(float(scores.std()) / math.sqrt(d_k) - 1) < 0.03  # the spread step's first entry


def wrong(question, name: str, theirs, decimals: int = 2) -> bool:
    """Whether an answer to step ``name`` is marked wrong (Moodle's and Canvas's chain tolerance)."""
    step = question.solution.step(name)
    theirs = np.asarray(theirs, dtype=float)
    tolerance = Tolerances(question, decimals).of(step).chain
    return bool((np.abs(np.round(theirs, decimals) - step.numeric) > tolerance).any())


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_typical_slips_are_marked_wrong(difficulty):
    for question in solved_set(draw_options(difficulty, decimals=2), 5, 6, 1, ("why-scale",)):
        d = question.spec.stated_dk
        get = {n: question.solution.step(n).numeric for n in ("scores", "weights", "weights_raw")}
        assert wrong(question, "spread", [[d, 1]])  # the variance for the standard deviation
        assert wrong(question, "spread", [[math.sqrt(d), 1 / math.sqrt(d)]])  # divided by d_k
        assert wrong(question, "spread", [[d**2, d]])  # the variance taken as d_k²
        assert wrong(question, "weights", get["weights_raw"])  # the tables swapped
        assert wrong(question, "weights_raw", get["weights"])
        over_dk = np.exp(get["scores"] / question.spec.d_k)
        assert wrong(question, "weights", over_dk / over_dk.sum(axis=1, keepdims=True))  # S/d_k


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_a_student_who_rounds_is_never_marked_wrong(difficulty, decimals, tmp_path):
    """test_marking's rounding student on the page and in Moodle, and test_qti's in Canvas (its
    import rules), over eight why-scale problems of each difficulty."""
    import canvas_import as canvas
    from test_marking import false_marks, rounded
    from test_qti import numerical_items, package_of, student_values, typed

    questions = solved_set(draw_options(difficulty, decimals=decimals), 17, 8, 1, ("why-scale",))
    assert [mark for question in questions for mark in false_marks(question, decimals)] == []
    by_id = {q.spec.id: q for q in questions}
    mine = {pid: student_values(q, decimals) for pid, q in by_id.items()}
    checked, refused = 0, []
    for item, pid, letter, k, i, j in numerical_items(canvas.import_package(
            package_of(questions, tmp_path, decimals))):
        step = next(p for p in by_id[pid].parts if p.letter == letter).written[k - 1]
        value = typed(mine[pid].get(id(step), rounded(step.numeric, decimals))[i, j], decimals)
        checked += 1
        if not canvas.accepts(item, value):
            refused.append((item.migration_id, value))
    assert checked == 8 * 22 and refused == []  # σ (2), S and S̃ (8), A and A_raw (8), O (4)


def test_the_page_names_the_slips():
    from generator.formats.web import step_graph

    question = solved_set(draw_options("medium", decimals=2), 5, 1, 1, ("why-scale",))[0]
    graph = step_graph(question)
    says = " ".join(slip["says"] for slip in graph["spread"]["slips"])
    assert "variance" in says and "√d_k / √d_k = 1" in says
    assert graph["weights_raw"]["inputs"] == ["scores"] and graph["weights"]["inputs"] == ["scaled"]


def test_the_key_states_true_sentences_of_its_own_numbers():
    question = solve_checked(spec_from_record(BASE, "ws"))
    key = "".join(render(render_markdown, [question]).values())
    weights, raw = (question.solution.step(n).numeric for n in ("weights", "weights_raw"))
    for i in range(2):  # side by side: each row's largest weight, with and without the scale
        assert f"row {i + 1}, {weights[i].max():.4f} with the scale and {raw[i].max():.4f} without" in key
    scores = question.solution.step("scores").numeric
    assert f"mean square {np.mean(scores**2):g}" in key  # the problem's own scores
    assert "σ(q·k) = √512 ≈ 22.6274" in key


def test_the_stated_dk_goes_through_a_spec_file_and_the_record(tmp_path, run_cli):
    spec = tmp_path / "ws.toml"
    spec.write_text('type = "why-scale"\nstated_dk = 64\nQ = [[1, -1, 1, 1], [-1, 1, 1, -1]]\n'
                    'K = [[1, 1, -1, 1], [1, -1, 1, 1]]\nV = [[1, 2], [-1, 0]]\n', encoding="utf-8")
    code, _, err = run_cli("--spec", spec, "--format", "md,json", "--out", tmp_path / "a")
    assert code == 0, err
    record = json.loads((tmp_path / "a" / "problems.json").read_text(encoding="utf-8"))
    assert record["problems"][0]["spec"]["stated_dk"] == 64
    assert "σ(q·k) = √64 = 8" in (tmp_path / "a" / "answers.md").read_text(encoding="utf-8")
    code, _, err = run_cli("--record", tmp_path / "a" / "problems.json", "--format", "md,json",
                           "--out", tmp_path / "b")
    assert code == 0, err
    for name in ("answers.md", "questions.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


BASE = {"type": "why-scale", "Q": [[1, -1, 1, 1], [-1, 1, 1, -1]], "K": [[1, 1, -1, 1], [1, -1, -1, 1]],
        "V": [[1, 2], [-1, 0]]}


@pytest.mark.parametrize("change, says", [
    ({"stated_dk": 0}, "stated_dk must be a whole number from 2 to 1000000, got 0"),
    ({"stated_dk": "64"}, "stated_dk must be a whole number"),
    ({"stated_dk": True}, "stated_dk must be a whole number"),
    ({"mask": "causal"}, "type why-scale takes no mask"),
    ({"scale": "1/2"}, "type why-scale is about the usual scale 1/sqrt(d_k); it takes no scale"),
    ({"Q": [[1], [2]], "K": [[1], [-1]]}, "type why-scale needs d_k of 2 or more"),
    ({"K": [[1, 1, -1, 1]], "V": [[1, 2]]}, "type why-scale needs 2 keys or more"),
    ({"Q": None, "K": None, "V": None, "X": [[1, 0]], "W_Q": [[1, 0], [0, 1]], "W_K": [[1, 0], [0, 1]],
      "W_V": [[1, 0], [0, 1]]}, "type why-scale gives Q, K and V"),
    ({"Q": [[1, 1, 1, 1], [2, 2, 2, 2]], "K": [[1, 1, 1, 1], [1, 1, 1, 1]]},
     "no row of the weights has one largest weight"),
    ({"K": [[1, 1, -1], [1, -1, 1]]}, "K has 3 columns but Q has 4"),
])
def test_a_bad_spec_fails_in_one_line(change, says):
    record = {key: value for key, value in {**BASE, **change}.items() if value is not None}
    with pytest.raises(SpecError) as caught:
        solve_checked(spec_from_record(record, "ws", "ws.toml"))
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_a_bad_spec_file_exits_2_in_one_line(tmp_path, run_cli):
    spec = tmp_path / "ws.toml"
    spec.write_text('type = "why-scale"\nstated_dk = 1\nQ = [[1, 0], [0, 1]]\nK = [[1, 0], [0, 1]]\n'
                    'V = [[1, 0], [0, 1]]\n', encoding="utf-8")
    code, _, err = run_cli("--spec", spec, "--out", tmp_path / "out")
    assert code == 2 and "stated_dk must be a whole number from 2" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_without_a_calculator_it_is_refused_in_one_line():
    reason = why_not_drawable("why-scale", draw_options("medium", no_calculator=True))
    assert reason and "calculator" in reason and "\n" not in reason


@pytest.mark.slow
def test_a_50_minute_paper_with_full_fits(tmp_path, run_cli):
    code, _, err = run_cli("--minutes", "50", "--types", "why-scale,full", "--seed", "3", "--format", "md",
                           "--out", tmp_path)
    assert code == 0, err
    minutes = re.findall(r"about (\d+) minutes of working", (tmp_path / "questions.md").read_text())
    assert minutes and all(int(m) <= 50 for m in minutes)


@needs_browser
def test_the_page_marks_students_from_their_own_values(tmp_path):
    """Four students type why-scale problems into the practice page (test_practice_students'): who
    rounds, who keeps full precision, who slips early and carries it forward; every cell is marked
    right but the slipped one; the variance typed for σ is marked wrong and named."""
    import test_practice_students as students

    students.OPS.setdefault("spread", lambda s, d: np.array([[np.sqrt(d[0, 0]), 1.0]]))
    for page, problems, decimals in students.student_pages(tmp_path, ["--types", "why-scale", "--count", "4",
                                                                      "--seed", "6"]):
        for way, (right, cells, wrong, slipped) in students.students_marks(page, problems, decimals).items():
            assert cells > 60 and wrong == slipped, (decimals, way, sorted(wrong ^ slipped)[:10])
        problem_id, problem = next(iter(problems.items()))
        variance = students.grids_of(problem)["spread"] ** [[2, 1]]
        marks = students.type_and_check(page, {problem_id: {"spread": students.texts(
            variance, variance, decimals)}}, [[problem_id, "b"]])
        assert marks[f"{problem_id} spread"][0] == "wrong" and "variance" in marks[f"{problem_id} (b)"]


@pytest.mark.parametrize("decimals", ["2", "4"])
def test_the_lessons_slopes_and_ratio_follow_from_the_numbers_it_prints(tmp_path, run_cli, decimals):
    """The lesson's key: each slope is a(1 - a) of the weight as printed, the ratio the quotient of
    the slopes as printed, each rounded half up, so that a calculator on the printed numbers
    agrees (worked from the exact weights, 0.0066 / 0.1017 read 0.0654 beside them)."""
    assert run_cli("--types", "why-scale", "--count", 30, "--seed", 5, "--decimals", decimals, "--format", "md",
                   "--out", tmp_path / "o")[0] == 0
    key = (tmp_path / "o" / "answers.md").read_text(encoding="utf-8")
    unit = Decimal(1).scaleb(-int(decimals))
    sentences = re.findall(r"rises from ([\d.]+) with the scale to ([\d.]+) without it.*?falls from "
                           r"([\d.]+) with the scale to ([\d.]+) without it: .*? is ([\d.]+) times", key)
    assert len(sentences) >= 10
    for numbers in sentences:
        a, b, s1, s2, ratio = map(Decimal, numbers)
        assert [x.quantize(unit, ROUND_HALF_UP) for x in (a * (1 - a), b * (1 - b), s2 / s1)] == [
            s1, s2, ratio], numbers
