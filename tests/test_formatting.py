"""Numbers as a student writes them: exact when short, else rounded half away from zero."""

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
import sympy
from hypothesis import example, given
from hypothesis import strategies as st

from generator.maths.engine import Num
from generator.rendering.formatting import decimal_text, is_exact_at, plain_matrix, short_exact_text


def text(value, decimals=4):
    return decimal_text(Num.of(sympy.sympify(value)), decimals)


def test_exact_numbers_keep_their_short_form():
    assert text(0) == "0"
    assert text(2) == "2"
    assert text(-7) == "-7"
    assert text(sympy.Rational(-14, 100)) == "-0.14"
    assert text(sympy.Rational(396, 1000), 3) == "0.396"


def test_other_numbers_round_half_away_from_zero_from_the_exact_value():
    assert text(sympy.sqrt(2) / 2) == "0.7071"
    assert text(sympy.Rational(1, 3)) == "0.3333"
    assert text(sympy.Rational(2, 3)) == "0.6667"
    assert text(sympy.Rational(125, 1000), 2) == "0.13"
    assert text(sympy.Rational(-125, 1000), 2) == "-0.13"
    assert text(sympy.Rational(145, 1000), 2) == "0.15"  # the float 0.145 is 0.14499...
    assert text(sympy.Rational(12955, 10000), 3) == "1.296"


def test_no_negative_zero():
    assert text(sympy.Rational(-1, 100000)) == "0.0000"
    assert text(-sympy.exp(-20)) == "0.0000"


def test_masked_and_huge_numbers():
    assert text(sympy.S.NegativeInfinity) == "-inf"
    assert text(sympy.exp(100)) == "2.6881e+43"


def test_exactness_and_short_exact_forms():
    assert is_exact_at(Num.of(sympy.Rational(1, 4)), 4)
    assert not is_exact_at(Num.of(sympy.Rational(1, 3)), 4)
    assert short_exact_text(Num.of(sympy.sqrt(2) / 2), 4) == "sqrt(2)/2"
    assert short_exact_text(Num.of(sympy.Rational(1, 2)), 4) is None


def test_plain_matrix_aligns_columns():
    assert plain_matrix([["1", "-0.5"], ["10", "2"]], indent="") == "[  1  -0.5 ]\n[ 10     2 ]"


@pytest.mark.slow
def test_softmax_forms_are_written_as_sympy_writes_them():
    """problems.json's exact forms: the softmax's own writer gives sympy's text to the letter
    on every form it takes (and leaves the rest to sympy), over sets of every kind."""
    from dataclasses import replace

    from generator.kinds.sampling import draw_options, sample_set
    from generator.rendering.formatting import _unsorted, softmax_text
    from generator.running.pipeline import solve_checked

    kinds = ("full", "row", "mistake", "permute", "masked", "heads", "concept", "backward")
    sets = [(draw_options("hard", mask="mixed"), kinds), (draw_options("medium"), kinds),
            (draw_options("easy"), ("full",)), (draw_options("medium", no_calculator=True), ("full",)),
            (replace(draw_options("medium"), scale=sympy.Rational(1, 2)), ("full", "masked")),
            (draw_options("medium", embeddings="one-hot", d_model=3), ("full", "heads"))]
    written = others = surds = 0
    for options, types in sets:
        for spec in sample_set(options, 11, 16, types=types):
            for solution in solve_checked(spec).solutions():
                for step in solution.steps:
                    for exact in {n.exact for row in step.entries for n in row}:
                        mine = softmax_text(exact)
                        if mine is None:
                            others += 1
                        elif not exact.is_Rational:
                            assert mine == _unsorted().doprint(exact), (spec.id, step.name)
                            written += 1
                            surds += "sqrt" in mine
    # both writers are met, many times over, and scores divided by sqrt(d_k) among the forms
    assert written > 1000 and others > 500 and surds > 500


ROOT2 = sympy.sqrt(2)


@pytest.mark.parametrize("exact", [ROOT2, ROOT2 / 2, -ROOT2 / 2, 3 * ROOT2, -3 * sympy.sqrt(5),
                                   sympy.Rational(-7, 3) * sympy.sqrt(3), sympy.exp(-sympy.sqrt(6) / 6),
                                   sympy.exp(sympy.Rational(12, 5) * ROOT2),
                                   sympy.Mul(sympy.Rational(1, 2), ROOT2, evaluate=False)])
def test_scaled_scores_are_written_as_sympy_writes_them(exact):
    from generator.rendering.formatting import _unsorted, softmax_text

    assert softmax_text(exact) == _unsorted().doprint(exact)


@given(st.floats(min_value=-1e7, max_value=1e7, allow_nan=False, allow_subnormal=True)
       | st.integers(-10**7, 10**7).map(lambda n: n / 2**12), st.integers(0, 12))
@example(0.03125, 4).via("a tie: 1/32 at 4 places")
@example(-0.00005, 4).via("rounds to minus zero")
@example(2.675, 2).via("just below the half it looks like")
def test_a_float_is_rounded_half_away_from_zero_as_decimal_rounds_it(value, decimals):
    """The quick path (Python's formatting, which rounds half to even) gives what Decimal's
    ROUND_HALF_UP of the float's exact value gives, ties included."""
    from generator.rendering.formatting import _float_text

    quick = _float_text(value, decimals)
    exact = f"{Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
    exact = "0" + exact[2:] if exact.startswith("-0") and set(exact[1:]) <= set("0.") else exact
    assert quick in (None, exact)
    if abs(value) < 1e7 and (value * 2 ** (decimals + 1)) % 1:
        assert quick == exact


@given(st.fractions(max_denominator=10**6).filter(lambda x: abs(x) < 10**8)
       | st.integers(-10**9, 10**9).map(lambda n: Fraction(n, 10**4)), st.integers(0, 9))
@example(Fraction(-1, 30000), 4).via("rounds to minus zero")
@example(Fraction(1, 20000), 4).via("a tie, half away from zero")
@example(Fraction(-1, 20000), 4).via("a negative tie")
@example(Fraction(99_999_999_999, 10**4), 4).via("just below scientific notation")
@example(Fraction(10**11 + 1, 10**4), 4).via("scientific notation")
@example(Fraction(10**11, 10**4), 4).via("a whole number in full")
def test_a_rational_is_written_as_decimal_writes_it(value, decimals):
    """The quick path in whole numbers gives what Decimal's quantize gave: exact and
    stripped of trailing zeros when the denominator divides 10^decimals, else rounded half
    away from zero; from 10^7 on, scientific notation, but for a whole number, written in full
    (a count of parameters or bytes, exact)."""
    number = sympy.Rational(value.numerator, value.denominator)
    exact_here = 10**decimals % number.q == 0
    decimal = Decimal(number.p) / Decimal(number.q)
    if not exact_here:
        decimal = Decimal(round_half_away(value * 10**decimals)).scaleb(-decimals)
    if number.is_Integer:
        expected = str(number)
    elif abs(decimal) >= 10**7:
        expected = f"{decimal:.{decimals}e}"
    else:
        expected = f"{decimal.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
        if exact_here and "." in expected:
            expected = expected.rstrip("0").rstrip(".")
        if expected.startswith("-0") and set(expected[1:]) <= set("0."):
            expected = expected[1:]
    assert decimal_text(Num.of(number), decimals) == expected


def round_half_away(x: Fraction) -> int:
    return int((abs(x) * 2 + 1) // 2) * (1 if x >= 0 else -1)


@pytest.mark.parametrize("difficulty, decimals", [("hard", 4), ("hard", 2), ("medium", 4), ("easy", 1)])
def test_a_dot_product_of_exact_numbers_checks_as_the_full_check_says(difficulty, decimals):
    """The short cut for sums of products of numbers written exactly agrees with the full
    calculator check, on every line of a set it is taken on."""
    from generator.kinds.sampling import draw_options, sample_set
    from generator.rendering.formatting import _equations
    from generator.running.pipeline import solve_checked

    taken = 0
    for spec in sample_set(draw_options(difficulty, decimals=decimals), 3, 12):
        for solution in solve_checked(spec).solutions():
            for line in (w for step in solution.steps for w in step.working or ()):
                for equation in _equations(line):
                    if equation.exact_at(decimals):
                        taken += 1
                        assert equation.computed_checks(decimals, decimals)
    assert taken > 50


def test_a_rational_in_disguise_rounds_its_tie_as_the_rational_it_is():
    """A backward row's dot product 1·(89117/20000) is 4.45585 exactly, whose float is
    4.455849999...: rounded half away from zero it is 4.4559 (the float gave 4.4558, and the
    key's working line then did not add up on a calculator)."""
    disguised = sympy.Mul(1, sympy.Rational(89117, 20000), evaluate=False)
    assert not disguised.is_Rational
    assert decimal_text(Num(disguised, 4.45585), 4) == "4.4559"
    assert decimal_text(Num(-disguised, -4.45585), 4) == "-4.4559"
