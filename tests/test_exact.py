"""Entries of a spec file: exact, and parsed safely (a spec file is untrusted input)."""

import pytest
import sympy

from generator.exact import parse_exact, to_float


@pytest.mark.parametrize("entry, expected", [
    (3, sympy.Integer(3)),
    (-2, sympy.Integer(-2)),
    (0.25, sympy.Rational(1, 4)),
    (0.1, sympy.Rational(1, 10)),
    ("1/2", sympy.Rational(1, 2)),
    ("-3", sympy.Integer(-3)),
    ("0.25", sympy.Rational(1, 4)),
    ("\u22123", sympy.Integer(-3)),
    ("sqrt(2)/2", sympy.sqrt(2) / 2),
    ("2^3", sympy.Integer(8)),
    ("(1 + 2) * 3", sympy.Integer(9)),
    ("1e-3", sympy.Rational(1, 1000)),
    (" 7 ", sympy.Integer(7)),
])
def test_parses_exactly(entry, expected):
    assert parse_exact(entry) == expected


@pytest.mark.parametrize("entry", [
    "__import__('os').system('echo owned')",
    "exp(1)", "x", "1 if 1 else 2", "[1]", "lambda: 1", "(1).__class__", "sqrt(2, 3)",
    "", "1/0", "sqrt(-1)", "9^9^9", "2^(1/1000000)*2^100", "1e400", "10^4", "1" * 101,
    True, None, [1], {"a": 1}, float("nan"), float("inf"),
])
def test_refuses_anything_but_a_finite_real_number(entry):
    with pytest.raises(ValueError):
        parse_exact(entry)


def test_error_says_what_is_allowed():
    with pytest.raises(ValueError, match=r"allowed: numbers, \+ - \* / \^, parentheses and sqrt"):
        parse_exact("abc")


def test_to_float_is_correctly_rounded():
    assert to_float(sympy.Rational(1, 3)) == 1 / 3
    assert to_float(sympy.sqrt(2)) == 2**0.5
    assert to_float(sympy.exp(sympy.Rational(1, 2))) == 1.6487212707001282
