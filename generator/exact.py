"""Exact numbers: safe parsing of a teacher's entries and their float values.

A spec file is untrusted input, and ``sympy.sympify`` on a raw string runs
Python code.  So entries are parsed here with Python's ``ast`` and only numbers,
``+ - * / ^``, parentheses and ``sqrt(...)`` are turned into sympy values; all
else is refused with a message that says what is allowed.
"""

from __future__ import annotations

import ast
import math

import sympy

ALLOWED = "numbers, + - * / ^, parentheses and sqrt(...)"
MAX_ENTRY_TEXT = 100      # characters in one exact string
MAX_EXPONENT = 8          # |n| in a^n: keeps 9^9^9 from eating the machine
MAX_MAGNITUDE = 1000      # |entry|: an exam, not a model


def parse_exact(entry) -> sympy.Expr:
    """Turn a JSON/TOML entry (int, float or exact string) into an exact sympy number.

    Raises ValueError with a one-line reason.
    """
    if isinstance(entry, bool) or not isinstance(entry, (int, float, str)):
        raise ValueError(f"{entry!r} is not a number (allowed: {ALLOWED})")
    if isinstance(entry, str):
        value = _parse_text(entry)
    else:
        value = _literal(entry)
    _check_value(value, entry)
    return value


def to_float(value: sympy.Expr) -> float:
    """Float64 of an exact value, correctly rounded (evaluated at 30 digits first)."""
    if value.is_Rational:
        return float(value)
    if value is sympy.S.NegativeInfinity:
        return -math.inf
    return float(value.evalf(30))


def _literal(number) -> sympy.Expr:
    if isinstance(number, int):
        return sympy.Integer(number)
    if not math.isfinite(number):
        raise ValueError(f"{number!r} is not a finite number")
    # repr gives the shortest decimal that round-trips: 0.1 -> 1/10, as the teacher meant.
    return sympy.Rational(repr(number))


def _parse_text(text: str) -> sympy.Expr:
    if len(text) > MAX_ENTRY_TEXT:
        raise ValueError(f"exact string longer than {MAX_ENTRY_TEXT} characters")
    try:
        # U+2212 is the minus sign that word processors and PDFs put in place of "-".
        tree = ast.parse(text.strip().replace("^", "**").replace("\u2212", "-"), mode="eval")
    except SyntaxError:
        raise ValueError(f"{text!r} is not a number (allowed: {ALLOWED})") from None
    return _build(tree.body, text)


def _build(node: ast.AST, text: str) -> sympy.Expr:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _literal(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _build(node.operand, text)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _build(node.left, text), _build(node.right, text)
        if isinstance(node.op, ast.Pow):
            _check_exponent(right, text)
        return _BINARY[type(node.op)](left, right)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "sqrt" and len(node.args) == 1 and not node.keywords):
        return sympy.sqrt(_build(node.args[0], text))
    raise ValueError(f"{text!r} is not a number (allowed: {ALLOWED})")


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _check_exponent(exponent: sympy.Expr, text: str) -> None:
    if not exponent.is_Rational or abs(exponent) > MAX_EXPONENT:
        raise ValueError(
            f"{text!r}: exponents must be rational numbers between -{MAX_EXPONENT} and {MAX_EXPONENT}")


def _check_value(value: sympy.Expr, entry) -> None:
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ValueError(f"{entry!r} is not a finite number (division by zero?)")
    if value.is_real is not True:
        raise ValueError(f"{entry!r} is not a real number")
    if abs(to_float(value)) > MAX_MAGNITUDE:
        raise ValueError(f"{entry!r} is larger than {MAX_MAGNITUDE} in magnitude")
