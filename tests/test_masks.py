"""Masks of every kind (causal, padding, a sliding window, causal and padding, the teacher's own)
for any n_q x n_k scores: engine = numpy = PyTorch float64 to 1e-9, over random specs and drawn
problems; the spec file's mask keys and their one-line faults; the record read back byte for
byte; the rounding student never marked wrong; the mask's slips marked wrong."""

import json
import math
import re

import numpy as np
import pytest
from conftest import make_solution, make_spec, solved_set, torch_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_marking import false_marks, gap_tolerances, rounded
from test_practice_students import CHROMIUM, CHROMIUM_ARGS, marking_data, texts, type_and_check, work
from test_practice_students import matrix as page_matrix
from test_web import needs_browser

from generator.kinds.sampling import MASK_MIN_TOKENS, draw_options, why_not_drawable
from generator.maths.spec import SpecError
from generator.rendering.paper import answer_keys

ENTRY = st.one_of(st.integers(-3, 3), st.sampled_from(["1/2", "-1/3", "0.25", "sqrt(2)/2"]))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = ("causal", "padding", "window", "causal+padding")


def matrix(rows: int, columns: int):
    return st.lists(st.lists(ENTRY, min_size=columns, max_size=columns), min_size=rows, max_size=rows)


def allowed(record: dict, n_q: int, n_k: int) -> np.ndarray:
    """The mask the record asks for, worked out here from its keys (True: may attend)."""
    mask = record.get("mask", "none")
    if isinstance(mask, list):
        return np.array([[x if isinstance(x, bool) else x == 0 for x in row] for row in mask],
                        dtype=bool)
    i, j = np.indices((n_q, n_k))
    seen = np.ones((n_q, n_k), dtype=bool)
    if mask in ("causal", "window", "causal+padding"):
        seen &= j <= i
    if mask == "window":
        seen &= j > i - record["window"]
    if mask in ("padding", "causal+padding"):
        valid = record["valid"]
        lengths = np.array(valid if isinstance(valid, list) else [valid] * n_q)
        seen &= j < lengths[:, None]
    return seen


@st.composite
def records(draw, from_embeddings=None):
    """A spec with a mask of any kind; Q, K and V given with as many or fewer or more queries
    than keys (cross-attention), or X and the weights."""
    n_k, d_k, d_v = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    embeddings = draw(st.booleans()) if from_embeddings is None else from_embeddings
    if embeddings:
        d_model = draw(st.integers(1, 4))
        record = dict(X=draw(matrix(n_k, d_model)), W_Q=draw(matrix(d_model, d_k)),
                      W_K=draw(matrix(d_model, d_k)), W_V=draw(matrix(d_model, d_v)))
        n_q = n_k
    else:
        n_q = draw(st.integers(1, 4))
        record = dict(Q=draw(matrix(n_q, d_k)), K=draw(matrix(n_k, d_k)), V=draw(matrix(n_k, d_v)))
    kind = draw(st.sampled_from(("none", "custom") + KINDS))
    if kind == "custom":
        style = draw(st.sampled_from(["additive", "boolean"]))
        rows = [[draw(st.booleans()) for _ in range(n_k)] for _ in range(n_q)]
        rows = [row if any(row) else [True] + row[1:] for row in rows]  # every query sees a key
        record["mask"] = rows if style == "boolean" else [[0 if x else "-inf" for x in r] for r in rows]
    else:
        record["mask"] = kind
    if kind in ("padding", "causal+padding"):
        per_query = draw(st.booleans())
        record["valid"] = ([draw(st.integers(1, n_k)) for _ in range(n_q)] if per_query
                           else draw(st.integers(1, n_k)))
    if kind == "window":  # a width from 2 to n_q - 1 (1 leaves each query itself, n_q is causal)
        if n_q >= 3:
            record["window"] = draw(st.integers(2, n_q - 1))
        else:
            record["mask"] = "causal"
    if draw(st.booleans()):
        record["scale"] = draw(st.sampled_from([1, "1/2", "1/sqrt(3)"]))
    if not allowed(record, n_q, n_k).any(axis=1).all():
        record["mask"], record.pop("valid", None), record.pop("window", None)
        record["mask"] = "none"  # a query that sees no key is refused (test_spec_faults)
    return record


def torch_attention(torch, solution, attn_mask=None, is_causal=False):
    q, k, v = (torch.tensor(solution.step(n).numeric, dtype=torch.float64).unsqueeze(0) for n in "QKV")
    scale = None if solution.spec.scale is None else float(solution.spec.scale)
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale).squeeze(0).numpy()


def assert_matches_torch(record: dict, solution) -> None:
    """The output equals torch's with the mask as booleans and as -inf added; a causal mask with
    is_causal too; and every hidden weight is an exact 0."""
    torch = torch_or_skip()
    spec = solution.spec
    seen = allowed(record, spec.n_queries, spec.n_keys)
    assert np.array_equal(np.array(spec.visible), seen)
    output = solution.step("output").numeric
    boolean = torch.tensor(seen)
    additive = torch.zeros(seen.shape, dtype=torch.float64).masked_fill(~boolean, -math.inf)
    for mask in (boolean, additive):
        assert np.allclose(output, torch_attention(torch, solution, mask), rtol=1e-9, atol=1e-9)
    if record["mask"] == "causal":
        assert np.allclose(output, torch_attention(torch, solution, is_causal=True), rtol=1e-9, atol=1e-9)
    weights = solution.step("weights").exact
    assert all(w == 0 and w.is_Integer for i, row in enumerate(weights) for j, w in enumerate(row)
               if not seen[i, j])
    if spec.masked:
        masked = solution.step("masked").numeric
        assert np.array_equal(np.isinf(masked), ~seen)


@SETTINGS
@given(records())
def test_every_mask_equals_torch_scaled_dot_product_attention(record):
    assert_matches_torch(record, make_solution(**record))  # engine = numpy on the way


@st.composite
def square_records(draw):
    """From embeddings with d_model = d_k = d_v, as torch's MultiheadAttention projects them,
    with key padding (one valid length), a causal mask, both, or none."""
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    record = {name: draw(matrix(rows, d)) for name, rows in
              (("X", n), ("W_Q", d), ("W_K", d), ("W_V", d))}
    record["mask"] = draw(st.sampled_from(["none", "causal", "padding", "causal+padding"]))
    if "padding" in record["mask"]:
        record["valid"] = draw(st.integers(1, n))
    return record


@SETTINGS
@given(square_records())
def test_key_padding_equals_torch_multihead_attention(record):
    """nn.MultiheadAttention (one head, no bias, in_proj W_Q, W_K, W_V, out_proj the identity)
    with key_padding_mask for key padding and a boolean attn_mask (True: not allowed) for causal."""
    torch = torch_or_skip()
    solution = make_solution(**record)
    spec = solution.spec
    n, d = spec.n_queries, spec.d_k
    attention = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=torch.float64)
    weight = {name: torch.tensor(np.array(solution.step(name).numeric)).T for name in ("W_Q", "W_K", "W_V")}
    with torch.no_grad():
        attention.in_proj_weight.copy_(torch.cat([weight["W_Q"], weight["W_K"], weight["W_V"]]))
        attention.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    x = torch.tensor(solution.step("X").numeric).unsqueeze(0)
    padding = (torch.arange(n) >= record["valid"]).unsqueeze(0) if "valid" in record else None
    causal = torch.ones(n, n, dtype=torch.bool).triu(1) if "causal" in record["mask"] else None
    output, _ = attention(x, x, x, key_padding_mask=padding, attn_mask=causal, need_weights=False)
    assert np.allclose(solution.step("output").numeric, output.squeeze(0).detach().numpy(),
                       rtol=1e-9, atol=1e-9)


def drawn(difficulty: str, mask: str, count: int = 4, decimals: int = 4, types=("masked",)):
    options = draw_options(difficulty, decimals=decimals, mask=mask)
    return solved_set(options, 34, count, 1, types)


# Where each mask is drawn: easy's two tokens leave a padding or window mask nothing to hide
# but the one key a query must keep (test_two_tokens_cannot_be_padded).
DRAWABLE = [(d, m) for m in [*KINDS, "mixed"] for d in ("easy", "medium", "hard")
            if d != "easy" or m not in MASK_MIN_TOKENS]


@pytest.mark.parametrize("difficulty, mask", DRAWABLE)
def test_drawn_problems_of_every_mask_equal_torch(difficulty, mask):
    kinds = set()
    for question in drawn(difficulty, mask):
        spec = question.spec
        kinds.add(spec.mask)
        assert spec.mask in KINDS
        if mask != "mixed":
            assert spec.mask == mask
        record = {"mask": spec.mask}
        record.update({key: list(value) if isinstance(value, tuple) else value
                       for key in ("valid", "window") if (value := getattr(spec, key)) is not None})
        assert_matches_torch(record, question.solution)
        seen = np.array(spec.visible)
        assert seen.any(axis=1).all()
        if spec.mask != "causal":  # a drawn padding or window mask hides more than causal would
            causal = np.tril(np.ones_like(seen))
            assert not np.array_equal(seen, causal) and not seen.all()
    assert mask == "mixed" or kinds == {mask}


def test_masked_questions_keep_causal_without_a_mask_option():
    assert {q.spec.mask for q in solved_set(draw_options("medium"), 3, 3, 1, ("masked",))} == {"causal"}


@pytest.mark.parametrize("mask", MASK_MIN_TOKENS)
def test_two_tokens_cannot_be_padded(mask):
    reason = why_not_drawable("masked", draw_options("easy", mask=mask))
    assert reason and "at least 3 tokens" in reason


# The spec file's faults: each one line naming the key, the shape expected and the entry.
QKV = dict(Q=[[1, 0], [0, 1]], K=[[1, 0], [0, 1], [1, 1]], V=[[1], [2], [3]])
FAULTS = [
    (dict(mask="padding"), "mask padding needs valid"),
    (dict(mask="padding", valid=4), "valid must be a whole number from 1 to n_k = 3"),
    (dict(mask="padding", valid=0), "valid must be a whole number from 1 to n_k = 3"),
    (dict(mask="padding", valid=[1, 2, 3]), "valid has 3 lengths but there are 2 queries"),
    (dict(mask="causal", valid=2), "valid goes with mask padding or causal+padding, not causal"),
    (dict(mask="window"), "mask window needs window"),
    (dict(mask="window", window=0), "window 0 leaves each query at most itself"),
    (dict(mask=[[0, "-inf"], [0, 0]]), "mask is 2x2 but the scores are n_q x n_k = 2 x 3"),
    (dict(mask=[[0, "-inf", 1], [0, 0, 0]]), "mask row 1, column 3: 1 is neither 0 nor -inf"),
    (dict(mask=[[0, 0, 0], ["-inf", "-inf", "-inf"]]),
     "query 2 sees no key: every entry of its mask row is -inf"),
    (dict(mask=[[True, True, True], [False, False, False]]), "query 2 sees no key"),
    (dict(mask="sideways"), "unknown mask 'sideways'"),
]


@pytest.mark.parametrize("changes, message", FAULTS)
def test_spec_faults_are_one_line(changes, message, tmp_path, run_cli):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**QKV, "type": "masked", **changes}))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "out")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_a_window_past_every_key_is_refused():
    """Four queries over two keys under a window of 2: query 4 would see keys 3 and 4, not there."""
    with pytest.raises(SpecError, match="query 4 sees no key"):
        make_spec(**{**QKV, "K": [[1, 0], [0, 1]], "V": [[1], [2]], "Q": [[1, 0]] * 4,
                     "mask": "window", "window": 2})


@pytest.mark.parametrize("window, message", [
    (1, "window 1 leaves each query at most itself (every weight 1)"),
    (3, "window 3 on 3 queries hides nothing the causal mask does not; use a width from 2 to 2"),
    (5, "window 5 on 3 queries hides nothing the causal mask does not")])
def test_a_window_that_teaches_nothing_is_refused(window, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        make_spec(**{**QKV, "Q": [[1, 0], [0, 1], [1, 1]], "mask": "window", "window": window})


def test_a_toml_mask_of_minus_infinity_floats_reads(tmp_path, run_cli):
    path = tmp_path / "mine.toml"
    path.write_text('type = "masked"\nQ = [[1, 0], [0, 1]]\nK = [[1, 0], [0, 1], [1, 1]]\n'
                    'V = [[1], [2], [3]]\nmask = [[0, -inf, 0], [0, 0, -inf]]\n')
    code, _, err = run_cli("--spec", path, "--format", "md,json", "--out", tmp_path / "out")
    assert code == 0, err
    text = (tmp_path / "out" / "answers.md").read_text()
    assert "Cross-attention with a given mask" in text
    assert "its rows are (0, -∞, 0), (0, 0, -∞)" in text  # the statement gives the teacher's M
    assert "Write the mask" not in text  # so no part asks it


SPECS = {
    "padding-per-query": dict(mask="padding", valid=[2, 3, 1]),
    "key-padding": dict(mask="padding", valid=2),
    "window": dict(mask="window", window=2),
    "causal+padding": dict(mask="causal+padding", valid=2),
    "custom": dict(mask=[[True, False, True], [False, True, True], [True, True, False]]),
}
X3 = dict(X=[[1, 0, 1], [0, 1, 0], [1, 1, 0]], W_Q=[[1, 0], [0, 1], [1, 1]],
          W_K=[[1, 1], [0, 1], [1, 0]], W_V=[[1, 0], [0, 2], [1, 1]])


@pytest.mark.parametrize("name", SPECS)
def test_the_record_sets_the_same_problem_again(name, tmp_path, run_cli):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**X3, "type": "masked", **SPECS[name]}))
    code, _, err = run_cli("--spec", path, "--format", "json", "--out", tmp_path / "first")
    assert code == 0, err
    record = tmp_path / "first" / "problems.json"
    problem = json.loads(record.read_text())["problems"][0]
    code, _, err = run_cli("--record", record, "--problem", problem["id"], "--format", "json",
                           "--out", tmp_path / "again")
    assert code == 0, err
    again = json.loads((tmp_path / "again" / "problems.json").read_text())["problems"][0]
    assert json.dumps(again["spec"]) == json.dumps(problem["spec"])
    assert {k: problem["spec"][k] for k in ("mask", "valid", "window") if k in problem["spec"]} == {
        k: v for k, v in SPECS[name].items()}


@pytest.mark.parametrize("difficulty, mask", [(d, m) for d, m in DRAWABLE if m != "mixed"])
def test_a_student_who_rounds_is_never_marked_wrong_under_any_mask(difficulty, mask):
    """On the page and in Moodle (test_marking's student, who works the spec's mask)."""
    marked = []
    for question in drawn(difficulty, mask, 3, decimals=2, types=("masked", "full")):
        marked += false_marks(question, 2)
    assert marked == []


def masked_input(solution) -> np.ndarray:
    """What the mask is applied to: the scaled scores (the raw ones at scale 1)."""
    return solution.step(next(s for s in solution.plan if s.name == "masked").inputs[0]).numeric


def student_slips(question):
    """The mask's typical slips, as a student's masked scores or weights: (step, their grid)."""
    solution = question.solution
    spec = solution.spec
    seen = np.array(spec.visible)
    raw = masked_input(solution)
    every = np.exp(raw - raw.max(axis=1, keepdims=True))
    after = np.where(seen, every / every.sum(axis=1, keepdims=True), 0.0)
    found = [("weights", after)]
    n = len(seen)
    if spec.mask == "causal":
        found.append(("masked", np.where(seen.T, raw, -np.inf)))
    if isinstance(spec.valid, int):
        rows = (np.arange(n) < spec.valid)[:, None] & (np.tril(np.ones_like(seen)) if spec.mask
                                                        == "causal+padding" else True)
        found.append(("masked", np.where(rows, raw, -np.inf)))
    return found


@pytest.mark.parametrize("mask", KINDS)
def test_the_mask_slips_are_marked_wrong(mask):
    """Softmax over every key then the hidden weights set to 0, the causal mask transposed,
    key padding put on the query side: marked wrong in Moodle and on the page, and the page
    names the slip (its step graph carries each as a change that gives the student's grid)."""
    caught = 0
    for question in drawn("hard", mask, 4):
        moodle = gap_tolerances(question, 4)
        graph = practice_graph(question)
        for name, theirs in student_slips(question):
            right = question.solution.step(name)
            if np.array_equal(rounded(theirs, 4), rounded(right.numeric, 4)):
                continue
            finite = np.isfinite(right.numeric) & np.isfinite(theirs)
            off = np.abs(np.where(finite, theirs, 0.0) - np.where(finite, right.numeric, 0.0))
            assert (off > moodle[id(right)]).any() or (np.isinf(theirs) != np.isinf(right.numeric)).any()
            changes = [slip["change"] for slip in graph[name]["slips"]]
            assert any(gives(question, name, change, theirs) for change in changes), (name, mask)
            caught += 1
    assert caught >= 4


def practice_graph(question):
    from generator.formats.web import practice_data
    return practice_data(answer_keys({1: [question]})[0], 4)["problems"][question.spec.id]["graph"]


def gives(question, name, change, theirs) -> bool:
    """Whether the slip's change, worked as the page's script works it, gives the student's grid."""
    raw = masked_input(question.solution)
    if "visible" in change:
        mine = np.where(np.array(change["visible"]), raw, -np.inf)
    elif "hide_after" in change:
        every = np.exp(raw - raw.max(axis=1, keepdims=True))
        mine = np.where(np.array(change["hide_after"]), every / every.sum(axis=1, keepdims=True), 0.0)
    else:
        return False
    return np.allclose(np.where(np.isinf(mine), 0, mine), np.where(np.isinf(theirs), 0, theirs)) and \
        np.array_equal(np.isinf(mine), np.isinf(theirs))


def test_write_the_mask_is_asked_entry_by_entry_in_every_format(tmp_path, run_cli):
    """M's every entry is a box: on the page (−∞ typed as -inf, none shown), in Moodle (a
    SHORTANSWER gap each, 0 or −∞ alike, so that no gap tells which), in Canvas (a fill-in item
    each of the row that hides the most keys); "without the mask" is a choice everywhere."""
    import re
    import zipfile
    path = tmp_path / "pad.json"
    path.write_text(json.dumps({**X3, "type": "masked", **SPECS["padding-per-query"]}))
    out = tmp_path / "out"
    code, _, err = run_cli("--spec", path, "--format", "json,html,moodle,qti", "--out", out)
    assert code == 0, err
    problem = json.loads((out / "problems.json").read_text())["problems"][0]
    assert [p["task"] for p in problem["parts"]][3:5] == ["write-mask", "masked"]
    assert problem["choices"][0]["topic"] == "without-mask"
    page = (out / "practice.html").read_text()
    grid = re.search(r'<table class="grid"[^>]*data-name="M".*?</table>', page, re.S).group(0)
    assert grid.count("<input") == 9 and "−∞</td>" not in grid and "(type −∞ as -inf)" in grid
    moodle = (out / "moodle.xml").read_text()
    # M's 9 entries, and the masked scores' 3 -inf entries typed too (shown, they would give M away)
    assert moodle.count(":SHORTANSWER:=0~") == 6 and moodle.count(":SHORTANSWER:=-inf~") == 3 + 3
    assert "Type -inf for −∞." in moodle
    with zipfile.ZipFile(next(out.glob("*.zip"))) as package:
        quiz = "".join(package.read(n).decode() for n in package.namelist() if n.endswith("quiz.xml"))
    assert quiz.count("<varequal respident=\"response1\">-inf</varequal>") == 2  # row 3 hides two
    assert "0, or -inf for −∞" in quiz


@needs_browser
@pytest.mark.parametrize("decimals", [2, 4])
@pytest.mark.parametrize("mask", ["mixed", "causal"])
def test_the_page_marks_a_rounding_student_right_and_names_the_mask_slips(mask, decimals, tmp_path, run_cli):
    """In chromium, over a hard set of masked problems of every kind: the student who rounds
    every step (test_practice_students' worker, M typed as the key has it) gets every cell right;
    the mask applied after softmax, and a causal mask transposed, are marked wrong and named."""
    from playwright.sync_api import sync_playwright
    out = tmp_path / "page"
    code, _, err = run_cli("--types", "masked", "--mask", mask, "--difficulty", "hard", "--count", "6",
                           "--seed", "34", "--decimals", str(decimals), "--practice", "--format", "html",
                           "--out", out)
    assert code == 0, err
    problems = marking_data(out / "practice.html")
    entries = {}
    for problem_id, problem in problems.items():
        keys = {grid["name"]: page_matrix(grid["values"]) for grid in problem["steps"].values()}
        worked = {**problem, "steps": {k: g for k, g in problem["steps"].items() if g["name"] != "M"}}
        if "M" in keys:  # typed as the key has it (below): the masked scores follow from it
            worked["given"] = {**problem["given"], "M": [[None if np.isinf(x) else 0.0 for x in row]
                                                         for row in keys["M"]]}
        typed = work(worked, decimals, "rounds")
        entries[problem_id] = {name: texts(typed[name], keys[name], decimals) if name != "M"
                               else [None if np.isinf(x) else "0" for x in keys["M"].ravel()]
                               for name in keys}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((out / "practice.html").as_uri())
        marks = type_and_check(page, entries)
        wrong = [(grid, k) for grid, row in marks.items() if not grid.endswith(")")
                 for k, mark in enumerate(row) if mark != "right"]
        assert wrong == [] and len(marks) > 30
        said = []
        for problem_id, problem in problems.items():
            graph, known = problem["graph"], {n: page_matrix(m) for n, m in problem["known"].items()}
            before = graph["masked"]["inputs"][0]  # as the student typed it: the slip follows from it
            raw = np.array([float(x) for x in entries[problem_id][before]]).reshape(known[before].shape)
            seen = np.isfinite(known["masked"])
            every = np.exp(raw - raw.max(axis=1, keepdims=True))
            after = np.where(seen, every / every.sum(axis=1, keepdims=True), 0.0)
            slips = {"weights": after}
            if "visible" not in graph["masked"]:  # causal: the page's own default
                slips["masked"] = np.where(seen.T, raw, -np.inf)
            for name, grid in slips.items():
                if np.array_equal(np.round(grid, decimals), np.round(known[name], decimals)):
                    continue
                letter = next(g for g in problem["steps"] if problem["steps"][g]["name"] == name)[0]
                typed = {name: [None if np.isinf(x) else f"{x:.{decimals}f}" for x in grid.ravel()]}
                if name == "masked":  # a box for every entry: -inf typed where they hid one
                    typed = {name: ["-inf" if np.isinf(x) else f"{x:.{decimals}f}" for x in grid.ravel()]}
                found = type_and_check(page, {**entries, problem_id: {**entries[problem_id], **typed}},
                                       [[problem_id, letter]])
                assert "wrong" in found[f"{problem_id} {name}"], (problem_id, name)
                said.append(found[f"{problem_id} ({letter})"] or f"{name}: nothing said")
        browser.close()
    assert errors == []
    assert any("softmax over every key" in s for s in said)
    assert mask != "causal" or any("causal one transposed" in s for s in said), said


def test_drawn_valid_lengths_alike_for_every_query_are_one_length():
    """Key padding is said as such ("1 padding token (key 3)"), never as v = (2, 2, 2)."""
    for question in drawn("medium", "padding", count=12):
        valid = question.spec.valid
        assert isinstance(valid, int) or len(set(valid)) > 1


@needs_browser
def test_a_slip_in_m_carried_into_the_masked_scores_costs_only_the_slip(tmp_path, run_cli):
    """A student who writes a −∞ of M as 0 and adds their own M to S̃ is marked wrong at that
    entry of M alone: Ŝ, A and O follow from their M (the page carries M forward)."""
    from playwright.sync_api import sync_playwright
    out = tmp_path / "page"
    code, _, err = run_cli("--types", "masked", "--mask", "padding", "--count", "2", "--seed", "101",
                           "--practice", "--format", "html", "--out", out)
    assert code == 0, err
    entries, slipped = {}, []
    for problem_id, problem in marking_data(out / "practice.html").items():
        keys = {grid["name"]: page_matrix(grid["values"]) for grid in problem["steps"].values()}
        mine = keys["M"].copy()
        hidden = tuple(np.argwhere(np.isinf(mine))[0])
        mine[hidden] = 0.0  # the slip
        slipped.append((f"{problem_id} M", int(np.ravel_multi_index(hidden, mine.shape))))
        worked = {**problem, "steps": {k: g for k, g in problem["steps"].items() if g["name"] != "M"},
                  "given": {**problem["given"], "M": [[None if np.isinf(x) else 0.0 for x in row]
                                                      for row in mine]}}
        typed = work(worked, 4, "rounds")
        entries[problem_id] = {name: texts(typed[name], typed[name], 4) if name != "M"
                               else [None if np.isinf(x) else "0" for x in mine.ravel()]
                               for name in keys}
        entries[problem_id]["M"] = ["-inf" if x is None else x for x in entries[problem_id]["M"]]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((out / "practice.html").as_uri())
        marks = type_and_check(page, entries)
        browser.close()
    wrong = [(grid, k) for grid, row in marks.items() if not grid.endswith(")")
             for k, mark in enumerate(row) if mark != "right"]
    assert sorted(wrong) == sorted(slipped)
