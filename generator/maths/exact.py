"""Exact numbers: safe parsing of a teacher's entries and their float values.

A spec file is untrusted input, and ``sympy.sympify`` on a raw string runs
Python code.  So entries are parsed here with Python's ``ast`` and only numbers,
``+ - * / ^``, parentheses and ``sqrt(...)`` are turned into sympy values; all
else is refused with a message that says what is allowed.
"""

from __future__ import annotations

import ast
import math
import re
import reprlib
from functools import lru_cache

import sympy
from mpmath.libmp import (
    fone,
    from_int,
    mpf_add,
    mpf_div,
    mpf_e,
    mpf_exp,
    mpf_mul,
    mpf_pow_int,
    mpf_sign,
    mpf_sqrt,
    round_nearest,
)
from mpmath.libmp import to_float as mpmath_float

ALLOWED = "numbers, + - * / ^, parentheses and sqrt(...)"
MAX_ENTRY_TEXT = 100      # characters in one exact string
MAX_EXPONENT = 8          # |n| in a^n, also after powers of powers combine
MAX_DIGITS = 15           # of any integer, numerator or denominator inside an entry
MAX_MAGNITUDE = 1000      # |entry|: an exam, not a model
# A number as people write it: digits, a point, an exponent; not 0x10, 1_000 or 0o7.
PLAIN_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxlong = _SHORT.maxother = 40
_SHORT.maxlist, _SHORT.maxlevel = 4, 2


def shown(value) -> str:
    """A value as an error message quotes it: its repr, cut short if it is long."""
    return _SHORT.repr(value)


def parse_exact(entry) -> sympy.Expr:
    """Turn a JSON/TOML entry (int, float or exact string) into an exact sympy number.

    Raises ValueError with a one-line reason.
    """
    if isinstance(entry, bool) or not isinstance(entry, (int, float, str)):
        raise ValueError(f"{shown(entry)} is not a number (allowed: {ALLOWED})")
    if isinstance(entry, str):
        value = _parse_text(entry)
    else:
        value = _literal(entry)
    _check_value(value, entry)
    return value


def to_float(value: sympy.Expr) -> float:
    """Float64 of an exact value, correctly rounded (evaluated at 30 digits first)."""
    if value.is_Rational:
        return value.p / value.q  # int / int is correctly rounded (sympy's float() goes through mpmath)
    if value is sympy.S.NegativeInfinity:
        return -math.inf
    quick = _at_120_bits(value)
    if quick is not None:
        return mpmath_float(quick, rnd=round_nearest)
    return float(value.evalf(30))


BITS = 120  # some 36 digits: more than evalf(30) carries, so the float64 is the same


def as_written(kind, *args: sympy.Expr) -> sympy.Expr:
    """``kind(*args, evaluate=False)`` for Add or Mul of arguments that are sympy numbers
    already: the same object, built without sympy's cache, which hashes every argument to
    look it up (a fifth of a hard set's solving)."""
    return kind._from_args(args)


def exp_as_written(x: sympy.Expr) -> sympy.Expr:
    """``exp(x, evaluate=False)`` without its per-object work: every exponential holds the
    same set of argument counts, which sympy makes anew for each."""
    exponential = sympy.Basic.__new__(sympy.exp, x)
    exponential.nargs = _exp_argument_counts()
    return exponential


@lru_cache(maxsize=None)
def _exp_argument_counts():
    return sympy.exp(sympy.Integer(1), evaluate=False).nargs


def _at_120_bits(value: sympy.Expr):
    """The value at 120 bits (an mpmath mpf), for what the engine makes most often: rationals,
    square roots, e^x, and their products and same-signed sums, where rounding each step at
    120 bits cannot reach the 53 a float64 keeps (no cancellation: a sum of mixed signs is
    left to evalf).  None for anything else.  Many times faster than evalf."""
    if value.is_Rational:
        return mpf_div(from_int(value.p), from_int(value.q), BITS)
    if value is sympy.S.Exp1:
        return mpf_e(BITS)
    if isinstance(value, sympy.exp):
        x = _at_120_bits(value.args[0])
        return None if x is None else mpf_exp(x, BITS)
    if value.is_Pow and value.exp.is_Rational and value.exp.q in (1, 2):
        base = _at_120_bits(value.base)
        if base is None or (value.exp.q == 2 and mpf_sign(base) < 0):
            return None
        root = mpf_sqrt(base, BITS) if value.exp.q == 2 else base
        power = mpf_pow_int(root, abs(value.exp.p), BITS)
        return mpf_div(fone, power, BITS) if value.exp.p < 0 else power
    if value.is_Mul or value.is_Add:
        terms = [_at_120_bits(arg) for arg in value.args]
        if any(t is None for t in terms):
            return None
        if value.is_Add and len({mpf_sign(t) for t in terms} - {0}) > 1:
            return None
        total = terms[0]
        for term in terms[1:]:
            total = (mpf_mul if value.is_Mul else mpf_add)(total, term, BITS)
        return total
    return None


def _literal(number) -> sympy.Expr:
    if isinstance(number, int):
        if abs(number) > 10**MAX_DIGITS:  # checked before sympy sees it: no huge conversions
            raise ValueError(f"{shown(number)} is larger than {MAX_MAGNITUDE} in magnitude")
        return sympy.Integer(number)
    if not math.isfinite(number):
        raise ValueError(f"{shown(number)} is not a finite number")
    # repr gives the shortest decimal that round-trips: 0.1 -> 1/10, as the teacher meant.
    return sympy.Rational(repr(number))


def _parse_text(text: str) -> sympy.Expr:
    if len(text) > MAX_ENTRY_TEXT:
        raise ValueError(f"exact string longer than {MAX_ENTRY_TEXT} characters")
    # U+2212 is the minus sign that word processors and PDFs put in place of "-".
    source = text.strip().replace("^", "**").replace("\u2212", "-")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        raise ValueError(f"{shown(text)} is not a number (allowed: {ALLOWED})") from None
    return _build(tree.body, text, source)


def _build(node: ast.AST, text: str, source: str) -> sympy.Expr:
    """The value of one node, each checked for size as soon as it is made."""
    value = _node_value(node, text, source)
    _check_size(value, text)
    return value


def _node_value(node: ast.AST, text: str, source: str) -> sympy.Expr:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        written = ast.get_source_segment(source, node) or ""
        if not PLAIN_NUMBER.fullmatch(written):
            raise ValueError(f"{shown(written)} is not written as a plain number (allowed: {ALLOWED})")
        return _literal(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _build(node.operand, text, source)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _build(node.left, text, source), _build(node.right, text, source)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right, text)
        return _BINARY[type(node.op)](left, right)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "sqrt" and len(node.args) == 1 and not node.keywords):
        return sympy.sqrt(_build(node.args[0], text, source))
    raise ValueError(f"{shown(text)} is not a number (allowed: {ALLOWED})")


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _check_power(base: sympy.Expr, exponent: sympy.Expr, text: str) -> None:
    """Before a power is computed: a small rational exponent, and a result of few digits."""
    if not exponent.is_Rational or abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"{shown(text)}: exponents must be rational numbers between "
                         f"-{MAX_EXPONENT} and {MAX_EXPONENT}")
    if base.is_Rational and base != 0:
        digits = max(len(str(abs(base.p))), len(str(base.q))) * abs(float(exponent))
        if digits > MAX_DIGITS + 1:
            raise ValueError(f"{shown(text)}: too large to work with exactly")


def _check_size(value: sympy.Expr, text: str) -> None:
    """An entry's exact form stays small: few digits, small exponents (sympy folds (a^8)^8
    into a^64, and big numbers make every later step slow)."""
    for number in value.atoms(sympy.Rational):
        if abs(number.p) > 10**MAX_DIGITS or number.q > 10**MAX_DIGITS:
            raise ValueError(f"{shown(text)}: too large to work with exactly")
    for power in value.atoms(sympy.Pow):
        if power.exp.is_Rational and abs(power.exp) > MAX_EXPONENT:
            raise ValueError(f"{shown(text)}: exponents must be rational numbers between "
                             f"-{MAX_EXPONENT} and {MAX_EXPONENT}")


def _check_value(value: sympy.Expr, entry) -> None:
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ValueError(f"{shown(entry)} is not a finite number (division by zero?)")
    if value.is_real is not True:
        raise ValueError(f"{shown(entry)} is not a real number")
    if abs(to_float(value)) > MAX_MAGNITUDE:
        raise ValueError(f"{shown(entry)} is larger than {MAX_MAGNITUDE} in magnitude")
