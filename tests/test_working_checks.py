"""Every line of working in the keys checks on a calculator, from the numbers it prints.

The test reads the Markdown keys as a student does, line by line: it takes the numbers a
line prints, recomputes the line with them (exactly, in decimal), rounds the result to the
decimals the printed result has, and expects the printed result.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, getcontext

import pytest
from conftest import make_question, render, solved_set

from generator.kinds import TYPES, type_names
from generator.kinds.sampling import draw_options
from generator.rendering.paper import DocumentInfo
from generator.rendering.render import render_markdown

# The types whose keys have calculator lines to check: a counting question's products are whole
# numbers written in full, and drawing it among the others would only shift which problems they get.
QUESTION_TYPES = tuple(name for name in type_names() if TYPES[name].matrices_given)

getcontext().prec = 40
NUMBER = r"-?\d+(?:\.\d+)?"
PRODUCT = re.compile(rf"^- \S+\[\d+,\d+\] = (.+?) (?:=|≈) ({NUMBER})$")
SCALING = re.compile(rf"^- \S+\[\d+,\d+\] = ({NUMBER}) (/|·) \(?({NUMBER})\)? (?:=|≈) ({NUMBER})")
SOFTMAX = re.compile(r"^- Row \d+: (.+); sum = (\S+)\n  → \[(.+)\] (?:=|≈) \[(.+)\] \(the row", re.M)
BLEND = re.compile(r"^- \S+\[\d+,:\] = (.+) (?:=|≈) \[(.+)\]$")
JACOBIAN = re.compile(rf"^- J\[\d+,\d+\] = (?:({NUMBER})·\(1 - ({NUMBER})\)|-({NUMBER})·({NUMBER})) (?:=|≈) ({NUMBER})$")
SOFTMAX_BACKWARD = re.compile(r"^- (?:Row \d+: sum of weights·gradients|∑_k \S+) = (.+) (?:=|≈) (\S+)\n"
                              r"  → (?:\S+ = )?\[(.+)\] (?:=|≈) \[(.+)\]$", re.M)
ROW_ENTRY = re.compile(r"^- \S+_\d+ = (.+)$")  # an entry of one row worked alone: da_j, ds_j


def rounds_to(value: Decimal, printed: str) -> bool:
    places = len(printed.split(".")[1]) if "." in printed else 0
    return value.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP) == Decimal(printed)


def number(text: str) -> Decimal:
    return Decimal(text.strip().strip("()"))


def check_product(line: str) -> bool | None:
    match = PRODUCT.match(line)
    if not match or SCALING.match(line) or line.startswith("- J[") or "[" in match.group(1):
        return None
    terms = [term.split("·") for term in match.group(1).split(" + ")]  # a bias term alone: X W + b
    return rounds_to(sum(number(t[0]) * number(t[1]) if len(t) == 2 else number(t[0]) for t in terms),
                     match.group(2))


def check_scaling(line: str) -> bool | None:
    match = SCALING.match(line)
    if not match:
        return None
    a, operation, b, result = match.groups()
    value = Decimal(a) / Decimal(b) if operation == "/" else Decimal(a) * Decimal(b)
    return rounds_to(value, result)


def check_row_entry(line: str) -> bool | None:
    """An entry of one row worked alone (da_j, ds_j), checked as a scaling's or a product's."""
    match = ROW_ENTRY.match(line)
    if not match:
        return None
    scaled = f"- scaled[1,1] = {match[1]}"
    return check_scaling(scaled) if SCALING.match(scaled) else check_product(f"- x[1,1] = {match[1]}")


def check_blend(line: str) -> bool | None:
    match = BLEND.match(line)
    if not match:
        return None
    terms = [term.split("·") for term in match.group(1).split(" + ")]
    rows = [(number(w), [number(v) for v in vector.strip("[]").split(", ")]) for w, vector in terms]
    results = match.group(2).split(", ")
    return all(rounds_to(sum(w * values[c] for w, values in rows), printed)
               for c, printed in enumerate(results))


def check_jacobian(line: str) -> bool | None:
    match = JACOBIAN.match(line)
    if not match:
        return None
    a, b, c, d, result = match.groups()
    value = number(a) * (1 - number(b)) if a is not None else -number(c) * number(d)
    return rounds_to(value, result)


def check_softmax_backward(block: re.Match) -> bool:
    """The row's dot product, then each a_j (g_j - dot), from the numbers printed."""
    products, dot, terms, results = block.groups()
    pairs = [term.split("·") for term in products.split(" + ")]
    if not rounds_to(sum(number(a) * number(g) for a, g in pairs), dot):
        return False
    for term, printed in zip(terms.split(", "), results.split(", ")):
        if term == "0":
            continue
        a, rest = term.split("·(", 1)
        g, s = rest[:-1].split(" - ", 1)
        if not rounds_to(number(a) * (number(g) - number(s)), printed):
            return False
    return True


def check_softmax(block: re.Match) -> bool:
    powers, total, quotients, weights = block.groups()
    exponentials = []
    for power in powers.split(", "):
        if power.startswith("masked"):
            continue
        exponent, result = re.match(rf"e\^({NUMBER}) (?:=|≈) ({NUMBER})$", power).groups()
        if not rounds_to(Decimal(exponent).exp(), result):
            return False
        exponentials.append(Decimal(result))
    if sum(exponentials) != Decimal(total):  # the sum shown is exactly that of the terms shown
        return False
    for quotient, weight in zip(quotients.split(", "), weights.split(", ")):
        if quotient == "0":
            continue
        top, bottom = quotient.split("/")
        if bottom != total or not rounds_to(Decimal(top) / Decimal(bottom), weight):
            return False
    return True


def failures_in(key: str) -> tuple[list[str], int]:
    failed, checked = [], 0
    for line in key.splitlines():
        for check in (check_product, check_scaling, check_blend, check_jacobian, check_row_entry):
            verdict = check(line)
            if verdict is not None:
                checked += 1
                if not verdict:
                    failed.append(line)
    for block in SOFTMAX.finditer(key):
        checked += 1
        if not check_softmax(block):
            failed.append(block.group(0))
    for block in SOFTMAX_BACKWARD.finditer(key):
        checked += 1
        if not check_softmax_backward(block):
            failed.append(block.group(0))
    return failed, checked


@pytest.mark.parametrize("difficulty", ["easy", pytest.param("medium", marks=pytest.mark.slow),
                                        pytest.param("hard", marks=pytest.mark.slow)])
@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_every_working_line_of_many_keys_recomputes_to_what_it_prints(difficulty, decimals):
    options = draw_options(difficulty, decimals=decimals)
    types = tuple(t for t in QUESTION_TYPES if not (difficulty == "easy" and t == "heads"))
    questions = solved_set(options, 13, 42, types=types)
    key = render(render_markdown, questions, DocumentInfo(decimals=decimals))["answers.md"]
    failed, checked = failures_in(key)
    assert checked > 300
    assert failed == []


def test_the_issues_own_example_now_adds_up():
    """O = 0.6698·[2, 0] + 0.3302·[0, 1] printed 1.3395 while a calculator gives 1.3396."""
    question = make_question(X=[[1, 0], [0, 1]], W_Q=[[1, 0], [0, 1]], W_K=[[1, 0], [0, 2]],
                             W_V=[[2, 0], [0, 1]])
    key = render(render_markdown, [question])["answers.md"]
    line = next(l for l in key.splitlines() if l.startswith("- O[1,:]"))
    assert check_blend(line), line
    assert failures_in(key)[0] == []


@pytest.mark.parametrize("decimals", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_no_calculator_keys_check_too_with_the_tables_own_values(decimals):
    from generator.kinds.sampling import NO_CALCULATOR_EXPONENTS, why_not_drawable
    from generator.rendering.formatting import table_places
    options = draw_options("medium", decimals=decimals, no_calculator=True)
    types = tuple(t for t in QUESTION_TYPES if t != "heads" and why_not_drawable(t, options) is None)
    questions = solved_set(options, 13, 30, types=types)
    steps = [s for q in questions for sol in q.solutions() for s in sol.steps if s.kind == "softmax"]
    info = DocumentInfo(decimals=decimals, exponent_table=NO_CALCULATOR_EXPONENTS,
                        table_places=table_places(steps, decimals))
    failed, checked = failures_in(render(render_markdown, questions, info)["answers.md"])
    assert checked > 200 and failed == []
