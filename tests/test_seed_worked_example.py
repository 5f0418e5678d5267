"""Golden test of seed 000: the two-token worked example, every printed number."""

import sympy
from conftest import WORKED_EXAMPLE, make_question, make_solution, render

from generator.rendering.formatting import decimal_text
from generator.rendering.render import render_markdown


def shown(step, decimals=4):
    return [[decimal_text(n, decimals) for n in row] for row in step.entries]


def test_every_matrix_as_printed_in_the_seed():
    solution = make_solution(**WORKED_EXAMPLE)
    assert shown(solution.step("Q")) == [["1", "0"], ["0", "1"]]
    assert shown(solution.step("K")) == [["1", "0"], ["0", "2"]]
    assert shown(solution.step("V")) == [["1", "0"], ["0", "1"]]
    assert shown(solution.step("scores")) == [["1", "0"], ["0", "2"]]
    assert shown(solution.step("scaled")) == [["0.7071", "0"], ["0", "1.4142"]]
    assert shown(solution.step("weights")) == [["0.6698", "0.3302"], ["0.1956", "0.8044"]]
    assert shown(solution.step("output")) == [["0.6698", "0.3302"], ["0.1956", "0.8044"]]


def test_steps_come_in_exam_order():
    assert make_solution(**WORKED_EXAMPLE).step_names == (
        "X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "weights", "output")


def test_weights_stay_exact():
    weight = make_solution(**WORKED_EXAMPLE).step("weights").entries[0][0].exact
    root = sympy.exp(1 / sympy.sqrt(2))
    assert sympy.simplify(weight - root / (root + 1)) == 0
    assert weight.is_Rational is False


def test_softmax_working_has_the_seed_exponentials_and_sums():
    rows = make_solution(**WORKED_EXAMPLE).step("weights").working
    assert [decimal_text(e, 4) for e in rows[0].exponentials] == ["2.0281", "1"]
    assert decimal_text(rows[0].total, 4) == "3.0281"
    assert [decimal_text(e, 4) for e in rows[1].exponentials] == ["1", "4.1133"]
    assert decimal_text(rows[1].total, 4) == "5.1133"


def test_answer_key_shows_the_seed_working_line_by_line():
    answers = render(render_markdown, [make_question(**WORKED_EXAMPLE)])["answers.md"]
    for line in (
        "S[1,2] = 1·0 + 0·2 = 0",
        "S[2,2] = 0·0 + 1·2 = 2",
        "sqrt(d_k) = sqrt(2) ≈ 1.4142",
        "S̃[1,1] = 1 / 1.4142 ≈ 0.7071",
        "Row 1: e^0.7071 ≈ 2.0281, e^0 = 1; sum = 3.0281",  # the seed's "sum =" too
        "→ [2.0281/3.0281, 1/3.0281] ≈ [0.6698, 0.3302]",
        # The seed writes e^1.4142 ≈ 4.1133, but a calculator gives e^1.4142 = 4.11324...:
        # e^sqrt(2) = 4.1132504 sits on a rounding edge, so the key shows the digits it needs.
        "Row 2: e^0 = 1, e^1.414214 ≈ 4.1133; sum = 5.1133",
        "→ [1/5.1133, 4.1133/5.1133] ≈ [0.1956, 0.8044]",
        "O[1,:] = 0.6698·[1, 0] + 0.3302·[0, 1] ≈ [0.6698, 0.3302]",
        "O[2,:] = 0.1956·[1, 0] + 0.8044·[0, 1] ≈ [0.1956, 0.8044]",
    ):
        assert line in answers


def test_the_key_says_what_the_numbers_mean():
    """As the seed explains it: token 2 attends mostly to itself, and scaling tempers it."""
    answers = render(render_markdown, [make_question(**WORKED_EXAMPLE)])["answers.md"]
    assert ("token 1 attends most to itself (0.6698), whose score 0.7071 is the largest it sees; "
            "token 2 attends most to itself (0.8044), whose score 1.4142 is the largest it sees.") in answers
    # without the 1/sqrt(2), row 2 would be softmax([0, 2]): e^2/(1 + e^2) = 0.8808
    assert "Here token 2's largest weight is 0.8044; on the raw scores it would be 0.8808." in answers
    assert "Output row 1 takes most (0.6698) from value row 1; output row 2 takes most (0.8044) " \
           "from value row 2." in answers
