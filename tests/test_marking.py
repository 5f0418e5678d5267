"""Marks a student can trust: a student who rounds every step to the shown decimals and works
on from those rounded values is never marked wrong, in Moodle or on the practice page; real
mistakes still are.  The student is simulated by arithmetic written here, from each op's
definition (not by the engine, nor by the cross-check's numpy faces that the tolerances sit
beside)."""

import math
import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import solved_set

from generator.formats.web import moodle_gaps, practice_data
from generator.kinds import type_names
from generator.kinds.sampling import draw_options
from generator.maths.engine import solve
from generator.maths.spec import MISTAKES, mistakes_that_fit
from generator.rendering.paper import answer_keys


def rounded(values, decimals):
    finite = np.isfinite(values)
    return np.where(finite, np.round(np.where(finite, values, 0.0), decimals), values)


def by_hand(step, inputs, decimals, spec, inverse=False):
    """One step as a student works it: sqrt(d_k) (or, ``inverse``, 1/sqrt(d_k)), each exponential
    and a row's dot product written to the shown decimals, then the result rounded to them."""
    return rounded(worked(step, inputs, spec, decimals, inverse), decimals)


def worked(step, inputs, spec, decimals=None, inverse=False):
    """One step of a plan from its inputs, by the op's definition; with ``decimals``, what the
    student writes down on the way (sqrt(d_k), exponentials, a row's dot product) is rounded
    to them.  Written apart from the project's own arithmetics."""
    def written(x):
        return x if decimals is None else rounded(np.asarray(x, dtype=float), decimals)
    if step.op in ("product", "blend"):
        a, b = inputs
        a = a.T if step.transpose_left else a
        b = b.T if step.transpose else b
        return np.array([[sum(a[i, k] * b[k, j] for k in range(a.shape[1]))
                          for j in range(b.shape[1])] for i in range(a.shape[0])], dtype=float)
    if step.op == "scaling":
        (x,) = inputs
        if step.factor == "one":
            return x
        if step.factor == "one-over-dk":
            return x / spec.d_k
        if spec.scale is None and inverse:  # times 1/sqrt(d_k), written to the shown decimals
            return x * written(1 / np.sqrt(spec.d_k))
        if spec.scale is None:
            return x / written(np.sqrt(spec.d_k))
        return x * float(spec.scale)
    if step.op == "masking":  # the spec's mask: causal, padding, a window, both, the teacher's
        (x,) = inputs
        return np.where(np.array(spec.visible, dtype=bool), x, -np.inf)
    if step.op == "softmax":
        z = inputs[0].T if step.by_columns else inputs[0]
        seen = np.isfinite(z)
        e = np.where(seen, written(np.exp(np.where(seen, z, 0.0))), 0.0)
        w = e / e.sum(axis=1, keepdims=True)
        return w.T if step.by_columns else w
    if step.op == "add":
        total = np.zeros_like(inputs[0])
        for term in inputs:
            total = total + term
        return total
    if step.op == "softmax-backward":
        a, g = inputs
        dot = written(np.array([[float(np.dot(a[i], g[i]))] for i in range(len(a))]))
        return a * (g - dot)
    if step.op == "jacobian":
        a = inputs[0][0]
        return np.array([[a[i] * ((i == j) - a[j]) for j in range(len(a))] for i in range(len(a))])
    if step.op == "concat":
        return np.concatenate(inputs, axis=1)
    if step.op == "append":  # the KV cache with the new token's row
        return np.concatenate(inputs, axis=0)
    if step.op == "cache-size":  # 2 x layers x KV heads x head width x tokens x bytes, in the unit
        model = inputs[0][0]
        return np.array([[2 * np.prod(model[:5]) / model[5]]])
    if step.op == "spread":  # σ(q·k) = √d_k for a stated d_k, and σ(q·k/√d_k) = 1
        d_k = inputs[0][0, 0]
        return np.array([[np.sqrt(d_k), 1.0]])
    if step.op == "count":  # a sum of products: each row's factors multiplied, the rows added
        return np.array([[sum(math.prod(int(x) for x in row) for table in inputs for row in table)]], dtype=float)
    if step.op == "count-times":  # a layer's count times the layers
        return np.array([[math.prod(int(x) for table in inputs for x in table.flat)]], dtype=float)
    if step.op == "sinusoid":  # PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i), the angle written down
        angles = written(np.outer(inputs[0][:, 0], inputs[1][0]))
        return np.stack([np.sin(angles), np.cos(angles)], axis=2).reshape(len(angles), -1)
    if step.op == "rope":  # each pair (x, y) of row m turned by m theta_i; the angle, cos and sin written
        x, angles = inputs[0], written(np.outer(inputs[1][:, 0], inputs[2][0]))
        c, s = written(np.cos(angles)), written(np.sin(angles))
        out = np.empty_like(x)
        out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
        out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
        return out
    if step.op == "alibi-bias":  # -m |p_i - p_j|
        p = inputs[0][:, 0]
        return -inputs[1][0, 0] * np.abs(p[:, None] - p[None, :])
    if step.op == "layer-norm":  # the block's: mean, variance over n, sigma and x-hat written down
        x, gamma, beta = inputs
        mean = written(x.mean(axis=1, keepdims=True))
        sigma = written(np.sqrt(written(((x - mean) ** 2).mean(axis=1, keepdims=True))))
        return gamma * written((x - mean) / sigma) + beta
    if step.op == "linear":  # the block's feed-forward layer: X W + b
        x, w, b = inputs
        return x @ w + b
    if step.op == "relu":
        return np.maximum(inputs[0], 0.0)
    raise AssertionError(f"the test's student cannot work the op {step.op!r}")


def gap_tolerances(question, decimals):
    """Each written step's tolerances as Moodle's gaps state them, by the step's identity."""
    gaps, _ = moodle_gaps(question, decimals)
    found = {}
    for part in question.parts:
        for step, rows in gaps[part.letter]["steps"]:
            found[id(step)] = np.array([[np.inf if g is None or ":SHORTANSWER:" in g  # M's 0 or -inf
                                          else float(re.search(r":([\d.]+)\}$", g).group(1))
                                          for g in row] for row in rows])
    return found


def page_tolerances(question, decimals):
    grids = practice_data(answer_keys({1: [question]})[0], decimals)["problems"][question.spec.id]["steps"]
    found = {}
    for part in question.parts:
        for index, step in enumerate(part.written):
            grid = grids[f"{part.letter}{index}"]
            found[id(step)] = tuple(np.array([[np.inf if x is None else x for x in row]
                                              for row in grid[kind]]) for kind in ("local", "chain"))
    return found


def false_marks(question, decimals, inverse=False):
    """Entries the rounding student gets marked wrong: in Moodle (every step from their own
    rounded chain, from the matrices the statement shows as shown), and on the page (each
    step from exactly the values they typed)."""
    moodle, page = gap_tolerances(question, decimals), page_tolerances(question, decimals)
    wrong, written = [], {}
    shown = {id(step) for _, _, step in question.shown}  # read off the statement, as shown
    for prefix, solution in question.worked:
        mine = {}
        for step_def, step in zip(solution.plan, solution.steps):
            key = step.numeric
            name = prefix + step.name if "." not in step.name else step.name
            if id(step) in shown and not step_def.is_given:
                mine[step.name] = rounded(key, decimals)
                continue
            if step_def.is_given:
                mine[step.name] = key if step.name in question.spec.matrices else written.get(
                    name, rounded(key, decimals))
                continue
            inputs = [mine[i] for i in step_def.inputs]
            mine[step.name] = written[name] = by_hand(step_def, inputs, decimals, solution.spec, inverse)
            seen = np.isfinite(key)
            if id(step) in moodle:
                off = np.abs(np.where(seen, mine[step.name], 0.0) - np.where(seen, key, 0.0))
                wrong += [("moodle", question.spec.id, name)] * int((off > moodle[id(step)]).sum())
            if id(step) in page:
                local, _ = page[id(step)]
                expected = worked(step_def, inputs, solution.spec)
                off = np.abs(np.where(seen, mine[step.name], 0.0) - np.where(seen, expected, 0.0))
                wrong += [("page", question.spec.id, name)] * int((off > local).sum())
    return wrong


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_a_student_who_rounds_is_never_marked_wrong(difficulty, decimals):
    types = tuple(t for t in type_names() if not (difficulty == "easy" and t == "heads"))
    marked = []
    for question in solved_set(draw_options(difficulty, decimals=decimals), 17, 56, 1, types):
        marked += false_marks(question, decimals)
    assert marked == []


@pytest.mark.parametrize("decimals", [2, 4])
def test_a_student_who_multiplies_by_a_rounded_one_over_root_dk_is_never_marked_wrong(decimals):
    # 1/sqrt(8) written 0.3536 moves a score of 3 by 1.4e-4, eight times what sqrt(8) written
    # 2.8284 moves it: a student who scales so was marked wrong on hard problems
    marked = []
    for question in solved_set(draw_options("hard", decimals=decimals), 17, 24, 1, ("full", "why-scale")):
        marked += false_marks(question, decimals, inverse=True)
    assert marked == []


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_real_mistakes_are_still_marked_wrong(decimals):
    caught = missed = 0
    for question in solved_set(draw_options("medium", decimals=decimals), 23, 30, 1, ("full",)):
        spec = question.spec
        moodle = gap_tolerances(question, decimals)
        slips = [(MISTAKES[m], solve(spec, m)) for m in mistakes_that_fit(spec)]
        x = [list(row) for row in spec.matrices["X"]]
        x[0][0] += 1  # a slip of one unit in an integer of X
        slips.append(("Q", solve(replace(spec, matrices={**spec.matrices, "X": tuple(map(tuple, x))}))))
        for name, wrong in slips:
            right = question.solution.step(name)
            theirs = rounded(wrong.step(name).numeric, decimals)
            if theirs.shape != right.numeric.shape:
                caught += 1  # a matrix of the wrong shape fills no grid
                continue
            seen = np.isfinite(right.numeric)
            if not (rounded(right.numeric, decimals) != theirs)[seen].any():
                continue  # this mistake changes nothing at the shown decimals
            off = np.abs(np.where(seen, theirs - right.numeric, 0.0))
            if (off > moodle[id(right)]).any():
                caught += 1
            else:
                missed += 1
    assert caught > 100 and missed == 0
