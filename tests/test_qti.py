"""qti.zip as Canvas imports and grades it (tests/canvas_import.py holds Canvas's rules): every
item imports with its type, its numbers are the key's with a fair margin, a student who rounds
each step is accepted and a real mistake is not, and each part's points are its marks."""

import os
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import canvas_import as canvas
import numpy as np
import pytest
from conftest import solved_set
from test_marking import by_hand, rounded

from generator.formats.qti import render_qti
from generator.kinds import type_names
from generator.kinds.sampling import draw_options
from generator.maths.engine import solve
from generator.maths.spec import MISTAKES, mistakes_that_fit
from generator.rendering.paper import DocumentInfo, answer_keys

SNAPSHOT = Path(__file__).parent / "snapshots" / "qti-small" / "qti.txt"
FAIR = 4  # a margin wider than this many times what rounding can move an entry is not fair
QUIZ_TYPES = {"text_only_question", "numerical_question", "short_answer_question",
              "multiple_choice_question"}


def package_of(questions, tmp_path, decimals, versions=None) -> Path:
    sets = versions or {1: questions}
    info = DocumentInfo(decimals=decimals, versioned=len(sets) > 1)
    path = tmp_path / f"qti-{decimals}.zip"
    path.write_bytes(render_qti(answer_keys(sets), info))
    return path


def drawn(difficulty, decimals, count=56, seed=17, types=None):
    types = types or tuple(t for t in type_names() if not (difficulty == "easy" and t == "heads"))
    return solved_set(draw_options(difficulty, decimals=decimals), seed, count, 1, types)


def numerical_items(quizzes):
    """(question, problem id, part letter, step number, row, column) of every numerical item."""
    for quiz in quizzes:
        for question in quiz.questions:
            if question.question_type == "numerical_question":
                letter, k, i, j = question.migration_id.rsplit("-", 4)[1:]
                yield question, question.name.split(" (")[0], letter, int(k), int(i) - 1, int(j) - 1


def student_values(question, decimals) -> dict:
    """Each step's matrix as a student works it by hand (test_marking's rules): every step from
    their own rounded earlier steps, or as the statement shows it; by the step's identity."""
    written, by_id = {}, {}
    shown = {id(step) for _, _, step in question.shown}
    for prefix, solution in question.worked:
        mine = {}
        for step_def, step in zip(solution.plan, solution.steps):
            name = prefix + step.name if "." not in step.name else step.name
            if id(step) in shown and not step_def.is_given:
                mine[step.name] = rounded(step.numeric, decimals)
                continue
            if step_def.is_given:
                mine[step.name] = step.numeric if step.name in question.spec.matrices else written.get(
                    name, rounded(step.numeric, decimals))
                continue
            mine[step.name] = written[name] = by_hand(step_def, [mine[i] for i in step_def.inputs],
                                                      decimals, solution.spec)
            by_id[id(step)] = mine[step.name]
    return by_id


def typed(value: float, decimals: int) -> str:
    """What the student types: their value to the decimals the quiz asks (at most Canvas's 4,
    times the scale the item states when the paper shows more)."""
    scale = 10 ** max(0, decimals - 4)
    return f"{value * scale:.{min(decimals, 4)}f}"


# -- how far a student who rounds can land: interval arithmetic, written apart from marking ---

def interval(low, high=None):
    return (np.asarray(low, dtype=float), np.asarray(low if high is None else high, dtype=float))


def times(a, b):
    """Each entry's product over two intervals: the least and the most of its corners."""
    corners = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return interval(np.minimum.reduce(corners), np.maximum.reduce(corners))


def read(value, decimals):
    """Numbers read as shown, to the shown decimals: each within half a unit of its value,
    unless it has no more decimals than are shown."""
    value, u = np.asarray(value, dtype=float), 0.5 * 10.0**-decimals
    finite = np.where(np.isfinite(value), value, 0.0)
    off = np.where(np.abs(np.round(finite, decimals) - finite) < 1e-12, 0.0, u)
    return interval(value - off, value + off)


def step_interval(step, inputs, spec, decimals):
    """Every value the student can reach for a step from inputs anywhere in their intervals,
    writing sqrt(d_k), exponentials and a row's dot product to the shown decimals; before the
    student rounds the result."""
    u = 0.5 * 10.0**-decimals
    if step.op in ("product", "blend"):
        (al, ah), (bl, bh) = inputs
        if step.transpose_left:
            al, ah = al.T, ah.T
        if step.transpose:
            bl, bh = bl.T, bh.T
        low, high = times(interval(al[:, :, None], ah[:, :, None]), interval(bl[None], bh[None]))
        return interval(low.sum(axis=1), high.sum(axis=1))
    if step.op == "scaling":
        factor = {"one": interval(1.0), "one-over-dk": interval(1.0 / spec.d_k)}.get(step.factor)
        if factor is None and spec.scale is None:  # divided by sqrt(d_k) or times 1/sqrt(d_k), each written
            divisor, inverse = read(np.sqrt(spec.d_k), decimals), read(1 / np.sqrt(spec.d_k), decimals)
            factor = interval(min(1 / divisor[1], inverse[0]), max(1 / divisor[0], inverse[1]))
        elif factor is None:
            factor = read(float(spec.scale), decimals)
        return times(inputs[0], factor)
    if step.op == "masking":
        (low, high), = inputs
        rows, columns = np.indices(low.shape)
        return interval(np.where(columns > rows, -np.inf, low), np.where(columns > rows, -np.inf, high))
    if step.op == "softmax":
        (low, high), = inputs
        if step.by_columns:
            low, high = low.T, high.T
        seen = np.isfinite(low)
        e_low = np.where(seen, np.maximum(np.exp(np.where(seen, low, 0.0)) - u, 0.0), 0.0)
        e_high = np.where(seen, np.exp(np.where(seen, high, 0.0)) + u, 0.0)
        # w_j = e_j / sum: least with e_j least and every other exponential most, and so on
        below = e_low + e_high.sum(axis=1, keepdims=True) - e_high
        w_low = np.divide(e_low, below, out=np.ones_like(below), where=below > 0)  # e/e: 1
        w_high = e_high / (e_high + e_low.sum(axis=1, keepdims=True) - e_low)
        w_low, w_high = np.where(seen, w_low, 0.0), np.where(seen, w_high, 0.0)
        return interval(w_low.T, w_high.T) if step.by_columns else interval(w_low, w_high)
    if step.op == "add":
        return interval(sum(low for low, _ in inputs), sum(high for _, high in inputs))
    if step.op == "softmax-backward":
        a, g = inputs
        products = times(a, g)
        dot = interval(products[0].sum(axis=1, keepdims=True) - u,
                       products[1].sum(axis=1, keepdims=True) + u)
        return times(a, interval(g[0] - dot[1], g[1] - dot[0]))
    if step.op == "jacobian":
        low, high = inputs[0][0][0], inputs[0][1][0]
        delta = np.eye(len(low))
        return times(interval(low[:, None], high[:, None]),
                     interval(delta - high[None, :], delta - low[None, :]))
    if step.op == "concat":
        return interval(np.hstack([low for low, _ in inputs]), np.hstack([high for _, high in inputs]))
    if step.op == "append":  # the KV cache with the new token's row under it
        return interval(np.vstack([low for low, _ in inputs]), np.vstack([high for _, high in inputs]))
    if step.op == "cache-size":  # a product of positive whole numbers, over the unit's bytes
        low, high = inputs[0][0][0], inputs[0][1][0]
        return interval([[2 * np.prod(low[:5]) / high[5]]], [[2 * np.prod(high[:5]) / low[5]]])
    if step.op == "spread":  # √d_k of a stated (exact) d_k, and 1
        d_k = inputs[0][0][0][0]
        return interval([[np.sqrt(d_k), 1.0]])
    if step.op in ("sinusoid", "rope"):  # angles p·w written, then their cos and sin written
        positions, rates = inputs[-2], inputs[-1]
        angle = times(interval(positions[0][:, :1], positions[1][:, :1]), interval(rates[0], rates[1]))
        middle, reach = (angle[0] + angle[1]) / 2, (angle[1] - angle[0]) / 2 + u  # |sin'|, |cos'| <= 1
        # RoPE's cos and sin are written before they are used; PE's are its entries, whose writing
        # the caller adds (``reaches``): not twice
        reach = reach + (u if step.op == "rope" else 0)
        sin = interval(np.sin(middle) - reach, np.sin(middle) + reach)
        cos = interval(np.cos(middle) - reach, np.cos(middle) + reach)
        if step.op == "sinusoid":
            return tuple(np.stack([sin[k], cos[k]], axis=2).reshape(len(middle), -1) for k in (0, 1))
        (low, high), h = inputs[0], inputs[0][0].shape[1] // 2
        x, y = interval(low[:, 0::2], high[:, 0::2]), interval(low[:, 1::2], high[:, 1::2])
        xc, ys, xs, yc = times(x, cos), times(y, sin), times(x, sin), times(y, cos)
        out_low, out_high = np.empty((len(low), 2 * h)), np.empty((len(low), 2 * h))
        out_low[:, 0::2], out_high[:, 0::2] = xc[0] - ys[1], xc[1] - ys[0]
        out_low[:, 1::2], out_high[:, 1::2] = xs[0] + yc[0], xs[1] + yc[1]
        return interval(out_low, out_high)
    if step.op == "alibi-bias":  # -m |p_i - p_j|, the positions whole numbers
        p, (m_low, m_high) = inputs[0][0][:, 0], inputs[1]
        distance = np.abs(p[:, None] - p[None, :])
        return interval(-m_high[0, 0] * distance, -m_low[0, 0] * distance)
    if step.op == "linear":  # the block's feed-forward layer: X W + b
        x, w, b = inputs
        low, high = times(interval(x[0][:, :, None], x[1][:, :, None]), interval(w[0][None], w[1][None]))
        return interval(low.sum(axis=1) + b[0], high.sum(axis=1) + b[1])
    if step.op == "relu":
        (low, high), = inputs
        return interval(np.maximum(low, 0.0), np.maximum(high, 0.0))
    if step.op == "layer-norm":
        return layer_norm_interval(*inputs, u)
    raise AssertionError(f"no interval rule for the op {step.op!r}")


def layer_norm_interval(x, gamma, beta, u):
    """γ(x − μ)/σ + β over every corner of each row's box (LayerNorm is smooth: its extremes over
    a small box are at its corners, to first order), each moved by what writing μ, σ², σ and x̂ to
    the shown decimals can add."""
    import itertools

    rows_low, rows_high = [], []
    for low, high in zip(x[0], x[1]):
        ys = []
        for corner in itertools.product(*zip(low, high)):
            row = np.array(corner)
            sigma = row.std()
            hat = (row - row.mean()) / sigma
            exact = (low == high).all()  # from an exact row a short decimal is written as it is
            def rounding(value, before=0.0, exact=exact):  # σ is the root of the σ² written, and so on
                short = abs(np.round(value / (2 * u)) * 2 * u - value) < 1e-12
                return 0.0 if exact and not before and short else u
            mean = rounding(row.mean())
            variance = rounding(sigma**2, mean)
            root = rounding(sigma, variance)
            written = (mean / sigma + np.abs(hat) * (variance / (2 * sigma**2) + root / sigma)
                       + np.array([rounding(h, mean + root) for h in hat]))
            ys += [gamma[0][0] * hat + beta[0][0] - np.abs(gamma[0][0]) * written,
                   gamma[0][0] * hat + beta[0][0] + np.abs(gamma[0][0]) * written]
        rows_low.append(np.min(ys, axis=0))
        rows_high.append(np.max(ys, axis=0))
    return interval(np.array(rows_low), np.array(rows_high))


def reaches(question, decimals) -> dict:
    """How far from the key each written entry can be for a student who rounds every step to
    the shown decimals and works on from their own rounded values (the statement's shown
    matrices read as shown), by the step's identity: the documented tolerance rule, bounded
    by interval arithmetic instead of marking's first-order rule."""
    u = 0.5 * 10.0**-decimals
    shown = {id(step) for _, _, step in question.shown}
    written, found = {}, {}
    for prefix, solution in question.worked:
        mine = {}
        for step_def, step in zip(solution.plan, solution.steps):
            name = prefix + step.name if "." not in step.name else step.name
            if step_def.is_given and step.name in question.spec.matrices:
                mine[step.name] = interval(step.numeric)
            elif step_def.is_given and name in written:
                mine[step.name] = written[name]
            elif step_def.is_given or id(step) in shown:
                mine[step.name] = read(step.numeric, decimals)
            elif step_def.counted:  # a count of the configuration's whole numbers: nothing is rounded
                mine[step.name] = written[name] = interval(step.numeric)
            else:
                low, high = step_interval(step_def, [mine[i] for i in step_def.inputs],
                                          solution.spec, decimals)
                mine[step.name] = written[name] = interval(low - u, high + u)
            found.setdefault(id(step), distance(step.numeric, *mine[step.name]))
    return found


def distance(key, low, high):
    """How far each entry of an interval reaches from the key's (none where the key is -inf)."""
    seen = np.isfinite(key)
    key, low, high = (np.where(seen, x, 0.0) for x in (key, low, high))
    return np.maximum(key - low, high - key)


def read_reach(value, decimals):
    """How far a matrix read off the page, as shown, can be from its value."""
    return distance(value, *read(value, decimals))


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow),
                                      pytest.param(6, marks=pytest.mark.slow)])
@pytest.mark.parametrize("difficulty", ["easy", pytest.param("hard", marks=pytest.mark.slow)])
def test_every_item_imports_and_a_student_who_rounds_is_accepted(difficulty, decimals, tmp_path):
    questions = drawn(difficulty, decimals, count=28)
    by_id = {q.spec.id: q for q in questions}
    quizzes = canvas.import_package(package_of(questions, tmp_path, decimals))
    assert len(quizzes) == 1 and quizzes[0].title
    imported = [q for q in quizzes[0].questions]
    assert {q.question_type for q in imported} <= QUIZ_TYPES
    assert all(q.name and q.name.split(":")[0].split(" (")[0] in by_id for q in imported)
    refused, checked = [], 0
    mine = {pid: student_values(q, decimals) for pid, q in by_id.items()}
    for item, pid, letter, k, i, j in numerical_items(quizzes):
        question = by_id[pid]
        part = next(p for p in question.parts if p.letter == letter)
        step = part.written[k - 1]
        assert [a.kind for a in item.answers] == ["exact_answer"], item.migration_id
        values = mine[pid].get(id(step), rounded(step.numeric, decimals))
        checked += 1
        if not canvas.accepts(item, typed(values[i, j], decimals)):
            refused.append((item.migration_id, typed(values[i, j], decimals), item.answers[0]))
    assert checked > 200 and refused == []


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow),
                                      pytest.param(6, marks=pytest.mark.slow)])
def test_numerical_answers_are_the_keys_values_with_the_fair_margin(decimals, tmp_path):
    """The margin covers every student the tolerance rule accepts (within reach of the key,
    bounded here by interval arithmetic), wherever 4 decimals put the key and as Canvas
    rounds, and is no more than FAIR times that reach."""
    questions = drawn("medium", decimals, count=21)
    by_id = {q.spec.id: q for q in questions}
    reach = {pid: reaches(q, decimals) for pid, q in by_id.items()}
    mine = {pid: student_values(q, decimals) for pid, q in by_id.items()}
    scale = 10 ** max(0, decimals - 4)
    for item, pid, letter, k, i, j in numerical_items(canvas.import_package(
            package_of(questions, tmp_path, decimals))):
        question = by_id[pid]
        step = next(p for p in question.parts if p.letter == letter).written[k - 1]
        far = reach[pid].get(id(step), read_reach(step.numeric, decimals))[i, j] * scale
        student = mine[pid].get(id(step), rounded(step.numeric, decimals))[i, j] * scale
        assert abs(student - step.numeric[i, j] * scale) <= far + 1e-12  # within reach
        answer = item.answers[0]
        assert answer.exact == pytest.approx(step.numeric[i, j] * scale, abs=5e-5 + 1e-12)  # a half unit: 4 places
        off = abs(answer.exact - step.numeric[i, j] * scale)
        assert far + off + 5e-5 <= answer.margin + 1e-12
        assert answer.margin <= FAIR * far + off + 5e-5 + 1e-4 + 1e-12
        assert f"[{i + 1},{j + 1}]" in item.name and item.name.startswith(pid)
        if scale != 1:
            assert f"multiplied by {scale}" in item.text


@pytest.mark.slow
@pytest.mark.parametrize("decimals", [2, 4])
def test_real_mistakes_are_refused(decimals, tmp_path):
    caught = missed = 0
    for question in solved_set(draw_options("medium", decimals=decimals), 23, 30, 1, ("full",)):
        spec = question.spec
        quizzes = canvas.import_package(package_of([question], tmp_path, decimals))
        items = {}
        for item, _, letter, k, i, j in numerical_items(quizzes):
            step = next(p for p in question.parts if p.letter == letter).written[k - 1]
            items.setdefault(step.name, []).append((item, i, j))
        slips = [(MISTAKES[m], solve(spec, m)) for m in mistakes_that_fit(spec)]
        x = [list(row) for row in spec.matrices["X"]]
        x[0][0] += 1  # a slip of one unit in X
        slips.append(("Q", solve(replace(spec, matrices={**spec.matrices, "X": tuple(map(tuple, x))}))))
        for name, wrong in slips:
            right = question.solution.step(name).numeric
            theirs = rounded(wrong.step(name).numeric, decimals)
            asked = items.get(name, [])
            if theirs.shape != right.shape or not asked:
                continue
            if all(rounded(right, decimals)[i, j] == theirs[i, j] for _, i, j in asked):
                continue  # invisible in the entries asked, at the shown decimals
            if any(not canvas.accepts(item, typed(theirs[i, j], decimals)) for item, i, j in asked
                   if np.isfinite(theirs[i, j])):
                caught += 1
            else:
                missed += 1
    assert caught > 60 and missed == 0


def test_each_parts_points_are_its_marks(tmp_path):
    questions = drawn("hard", 2, count=21)
    quizzes = canvas.import_package(package_of(questions, tmp_path, 2))
    points = {}
    for question in quizzes[0].questions:
        if question.question_type == "text_only_question":
            assert question.points == 0
            continue
        pid, letter = re.match(r"(\S+) \(([a-z])\)", question.name).groups()
        points[pid, letter] = points.get((pid, letter), Decimal(0)) + Decimal(repr(question.points))
    marks = {(q.spec.id, p.letter): p.marks for q in questions for p in q.parts}
    assert points == {key: Decimal(m) for key, m in marks.items()}


def test_the_package_is_well_formed_and_its_manifest_lists_every_file(tmp_path, run_cli):
    assert run_cli("--count", "4", "--seed", "3", "--versions", "3", "--format", "qti",
                   "--out", tmp_path)[0] == 0
    files = canvas.read_package(tmp_path / "qti.zip")
    for name, data in files.items():
        ElementTree.fromstring(data)  # well-formed
    assert canvas.check_manifest(files) == [f"version-0{v}.xml" for v in (1, 2, 3)]
    quizzes = canvas.import_package(tmp_path / "qti.zip")
    assert [q.title.rsplit(", ", 1)[1] for q in quizzes] == ["version 1", "version 2", "version 3"]
    assert len({q.migration_id for q in quizzes}) == 3


def test_the_same_seed_gives_the_same_package(tmp_path, run_cli):
    for out in ("a", "b"):
        assert run_cli("--count", "3", "--seed", "9", "--format", "qti", "--out", tmp_path / out)[0] == 0
    assert (tmp_path / "a" / "qti.zip").read_bytes() == (tmp_path / "b" / "qti.zip").read_bytes()


def test_html_is_what_canvas_keeps_and_feedback_is_the_worked_key(tmp_path):
    questions = drawn("medium", 2, count=14)  # test_marking's, solved once
    for question in canvas.import_package(package_of(questions, tmp_path, 2))[0].questions:
        elements = canvas.html_elements(question.text)
        assert elements <= canvas.HTML_ELEMENTS | canvas.MATHML_ELEMENTS, elements
        assert "math" in elements or question.question_type == "multiple_choice_question"
        assert "\\(" not in question.text and "$" not in question.text  # no literal LaTeX
        if question.question_type != "text_only_question":
            assert "Worked answer" in question.neutral_comments
            assert "**" not in question.neutral_comments
        for answer in question.answers:
            assert canvas.html_elements(answer.text) <= canvas.HTML_ELEMENTS | canvas.MATHML_ELEMENTS


def test_the_importer_model_catches_the_known_traps():
    """The rules in canvas_import bite: these are the traps the issue lists."""
    item = """<questestinterop><assessment ident="a" title="t"><section ident="s">
      <item ident="{ident}" title="x"><itemmetadata><qtimetadata>
        <qtimetadatafield><fieldlabel>question_type</fieldlabel><fieldentry>numerical_question</fieldentry></qtimetadatafield>
        <qtimetadatafield><fieldlabel>points_possible</fieldlabel><fieldentry>1</fieldentry></qtimetadatafield>
      </qtimetadata></itemmetadata><presentation><material><mattext>q</mattext></material>
      <response_str ident="response1"><render_fib><response_label ident="answer1"/></render_fib>
      </response_str>
      </presentation><resprocessing><outcomes><decvar/></outcomes><respcondition><conditionvar><or>
      <varequal respident="response1">{exact}</varequal>
      <and><{low_tag} respident="response1">{low}</{low_tag}>
      <varlte respident="response1">{high}</varlte></and></or></conditionvar>
      <setvar action="Set" varname="SCORE">100</setvar></respcondition></resprocessing></item>
    </section></assessment></questestinterop>"""
    def question(ident="i1", exact="2.5", low="2.4", high="2.6", low_tag="vargte"):
        xml = item.format(ident=ident, exact=exact, low=low, high=high, low_tag=low_tag)
        return canvas.import_assessment(xml.encode()).questions[0]
    good = question()
    assert canvas.accepts(good, "2.45") and not canvas.accepts(good, "2.7")
    comma = question(exact="2,5", low="2,4", high="2,6")  # a decimal comma: exact 2, no margin
    assert comma.answers[0].exact == 2.0 and comma.answers[0].margin == 0.0
    assert not canvas.accepts(comma, "2.5")
    fives = question(exact="1", low="0.95", high="1.05", low_tag="vargt")  # read as significant digits
    assert fives.answers[0].kind == "precision_answer"
    with pytest.raises(canvas.ImportError_):
        question(ident="1-starts-with-a-digit")
    with pytest.raises(canvas.ImportError_):
        canvas.import_assessment(item.replace("<outcomes>", "<response_na/><outcomes>").format(
            ident="i", exact="1", low="0", high="2", low_tag="vargte").encode())
    manifest = {"imsmanifest.xml": b'<manifest xmlns="http://www.imsglobal.org/xsd/imsqti_v2p1"/>'}
    with pytest.raises(canvas.ImportError_):
        canvas.check_manifest(manifest)


def test_a_small_package_matches_its_reviewed_snapshot(tmp_path, run_cli):
    assert run_cli("--count", "2", "--seed", "7", "--practice", "--format", "qti",
                   "--out", tmp_path)[0] == 0
    files = canvas.read_package(tmp_path / "qti.zip")
    produced = "".join(f"===== {name}\n{data.decode()}" for name, data in files.items())
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(produced, encoding="utf-8")
    assert produced == SNAPSHOT.read_text(encoding="utf-8")


def test_huge_values_are_plain_decimals_that_canvas_reads(tmp_path, run_cli, huge_spec):
    assert run_cli("--spec", huge_spec, "--format", "qti", "--out", tmp_path / "o")[0] == 0
    files = canvas.read_package(tmp_path / "o" / "qti.zip")
    bounds = re.findall(rb"<var(?:equal|gte|lte) respident=\"response1\">([^<]*)<", files["quiz.xml"])
    numbers = [b.decode() for b in bounds if not b.startswith(b"choice")
               and not re.fullmatch(r"\(?\d+(×| × |x| x | by |,|, )\d+\)?", b.decode())]  # a shape
    assert numbers and all(re.fullmatch(r"-?\d+(\.\d+)?", n) for n in numbers)
    quiz = canvas.import_package(tmp_path / "o" / "qti.zip")[0]
    assert any(a.exact >= 1e7 for q in quiz.questions for a in q.answers if a.kind == "exact_answer")


def test_a_roster_of_own_versions_is_told_what_canvas_makes_of_it(tmp_path, run_cli):
    roster = tmp_path / "class.csv"
    roster.write_text("id,name\n" + "".join(f"s{k},Student {k}\n" for k in range(8)))
    code, _, err = run_cli("--count", "1", "--seed", "2", "--students", roster, "--format", "qti",
                           "--out", tmp_path / "o")
    assert code == 0 and "qti.zip holds 8 quizzes" in err and "--versions" in err
    assert len(canvas.import_package(tmp_path / "o" / "qti.zip")) == 8
    code, _, err = run_cli("--count", "1", "--seed", "2", "--students", roster, "--versions", "2",
                           "--format", "qti", "--out", tmp_path / "p")
    assert code == 0 and "quizzes" not in err
    assert len(canvas.import_package(tmp_path / "p" / "qti.zip")) == 2


@pytest.mark.equivalence
def test_a_large_set_is_written_as_it_is_rendered_with_the_same_bytes(tmp_path):
    """Given the run's work folder, qti.zip, moodle.xml and the practice pages are written
    there as they are rendered (a thousand hard problems' quiz XML is 160 MB), and hold exactly
    what the in-memory rendering holds, versions and every question type included."""
    from generator.formats.web import render_moodle, render_practice
    from generator.running.work_folder import WorkFolder

    versions = {1: drawn("hard", 4, count=16, seed=3), 2: drawn("medium", 4, count=16, seed=4)}
    keys, info = answer_keys(versions), DocumentInfo(decimals=4, versioned=True)
    folder = WorkFolder(tmp_path)
    assert render_qti(keys, info, sink=folder).read_bytes() == render_qti(keys, info)
    assert render_moodle(keys, info, sink=folder).read_text(encoding="utf-8") == \
        render_moodle(keys, info)
    written = render_practice(keys, info, sink=folder)
    assert {name: path.read_text(encoding="utf-8") for name, path in written.items()} == \
        render_practice(keys, info)


def test_each_item_carries_the_worked_key_of_its_own_part(tmp_path):
    """The assessment renders a part's key once and gives it to each of the part's items: an
    item's feedback is its own part's key, the same for each item of the part, and no two
    parts of the set share one."""
    path = package_of(drawn("medium", 4, count=14, seed=5), tmp_path, 4)
    keys: dict[tuple[str, str], set[str]] = {}
    for question in canvas.import_package(path)[0].questions:
        if question.question_type == "text_only_question":
            continue
        problem, rest = question.name.split(" (", 1)
        letter = rest[0]
        assert f"Worked answer, ({letter})" in question.neutral_comments
        keys.setdefault((problem, letter), set()).add(question.neutral_comments)
    assert len(keys) > 14 and all(len(texts) == 1 for texts in keys.values())
    assert len({text for texts in keys.values() for text in texts}) == len(keys)
