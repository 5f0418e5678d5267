"""Entries of a spec file: exact, and parsed safely (a spec file is untrusted input)."""

import pytest
import sympy
from sympy import srepr

from generator.maths.exact import parse_exact, to_float


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


@pytest.mark.parametrize("kind, args", [
    (sympy.Add, (sympy.exp(sympy.Rational(1, 2), evaluate=False), sympy.Rational(-3, 4))),
    (sympy.Add, (sympy.Rational(1, 3), sympy.sqrt(2), sympy.S.One)),
    (sympy.Mul, (sympy.exp(sympy.Rational(-1, 3), evaluate=False),
                 sympy.Pow(sympy.Add(sympy.E, sympy.exp(sympy.Rational(1, 2))), -1))),
    (sympy.Mul, (sympy.Rational(5, 7), sympy.S.Half)),
    (sympy.Add, (sympy.sqrt(3),)),
])
def test_sums_and_products_as_written_are_sympys_unevaluated_ones(kind, args):
    from generator.maths.exact import as_written
    built, sympys = as_written(kind, *args), kind(*args, evaluate=False)
    assert type(built) is type(sympys) and built.args == sympys.args
    assert built == sympys and hash(built) == hash(sympys) and srepr(built) == srepr(sympys)
    assert built.is_commutative == sympys.is_commutative


@pytest.mark.parametrize("x", [sympy.Rational(1, 2), sympy.Rational(-7, 3), sympy.Integer(2),
                               sympy.sqrt(2) / 2])
def test_an_exponential_as_written_is_sympys_unevaluated_one(x):
    from generator.maths.exact import exp_as_written
    built, sympys = exp_as_written(x), sympy.exp(x, evaluate=False)
    assert type(built) is sympy.exp and built.args == sympys.args and built.nargs == sympys.nargs
    assert built == sympys and hash(built) == hash(sympys) and srepr(built) == srepr(sympys)
    assert built.is_positive and float(built) == float(sympys)
