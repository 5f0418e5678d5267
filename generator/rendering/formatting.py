"""The one place that turns numbers into text, for every output format.

Convention (stated on every document): a number is written exactly when it has
a terminating decimal form of at most ``decimals`` places (1, -0.5, 0.396);
otherwise it is rounded half away from zero to ``decimals`` places, always
from its full-precision value, and an "≈" says so where the working shows it.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

import sympy
from sympy.printing.str import StrPrinter

from generator.maths import steps
from generator.maths.engine import Num
from generator.rendering.prose import plain_maths


class _RememberingPrinter(StrPrinter):
    """sympy's str printer, remembering what it printed: an output entry repeats its
    weights, and a weight repeats its row's exponentials, many times over."""

    def __init__(self) -> None:
        super().__init__({"order": "none"})
        self._printed: dict = {}

    def _print(self, expr, **kwargs) -> str:
        if kwargs:
            return super()._print(expr, **kwargs)
        printed = self._printed.get(expr)
        if printed is None:
            if len(self._printed) > REMEMBERED:  # a large set's memory stays flat
                self._printed.clear()
            printed = self._printed[expr] = super()._print(expr)
        return printed


REMEMBERED = 20_000
_THREADS = threading.local()  # a printer counts how deep it is as it prints: one per thread


def _unsorted() -> _RememberingPrinter:
    if not hasattr(_THREADS, "printer"):
        _THREADS.printer = _RememberingPrinter()
    return _THREADS.printer


# Beyond this a number is written in scientific notation (exponentials of big scores).
SCIENTIFIC_FROM = Decimal(10) ** 7
_SCIENTIFIC_FLOAT, _SCIENTIFIC_INT = float(SCIENTIFIC_FROM), int(SCIENTIFIC_FROM)
MAX_SHORT_PLACES = 10  # a rational hidden in an exact form is looked for up to these places


def is_exact_at(num: Num, decimals: int) -> bool:
    """True when ``decimal_text`` writes the number without rounding it."""
    exact = rational_value(num)
    return bool(exact is not None and 10**decimals % exact.q == 0)


@lru_cache(maxsize=8192)  # bounded: a large set's numbers would only hold memory
def rational_value(num: Num) -> sympy.Rational | None:
    """The number as a rational, when it is one: also when its exact form does not say so, as
    an output entry (2 + 4e)/(1 + 2e), which is 2, so that it is written "= 2", not "≈ 2.0000".
    Only a value within two units of float64 rounding of a short decimal is tried (floats
    here are correctly rounded from the exact forms); equality is then proved by sympy."""
    exact = num.exact
    if exact.is_Rational:
        return exact
    if exact is sympy.S.NegativeInfinity or abs(num.value) > 1e12:
        return None
    # Most values are far from any short decimal: the float says so at once (an int divided
    # by an int is correctly rounded, as float() of the sympy Rational is).
    scaled = round(num.value * 10**MAX_SHORT_PLACES)
    if (abs(num.value - scaled / 10**MAX_SHORT_PLACES) > 1e-15 * max(1.0, abs(num.value))
            or _larger_than(exact, PROVABLE)):
        return None
    candidate = sympy.Rational(scaled, 10**MAX_SHORT_PLACES)
    if abs(sympy.N(exact - candidate, 50)) > sympy.Rational(1, 10**40):
        return None
    # Over one denominator, the numerator of a true zero expands to 0; what this cannot prove
    # equal is written "≈", which is never wrong.
    numerator = sympy.numer(sympy.together(exact - candidate))
    return candidate if sympy.expand(numerator) == 0 else None


PROVABLE = 400  # nodes: a larger exact form is not proved equal to a decimal (it is written ≈)


def _larger_than(exact: sympy.Expr, nodes: int) -> bool:
    """Whether the expression tree has more than ``nodes`` nodes (counted only that far)."""
    return any(count > nodes for count, _ in enumerate(sympy.preorder_traversal(exact)))


@lru_cache(maxsize=8192)  # the same numbers recur across the key, the sheet and the formats
def decimal_text(num: Num, decimals: int) -> str:
    """A number as a student writes it: exact if short, else rounded to ``decimals``."""
    exact = num.exact
    if exact is sympy.S.NegativeInfinity:
        return "-inf"
    exact_here = is_exact_at(num, decimals)
    # a rational in disguise (1·(89117/20000)) rounds as the rational it is: its float may fall
    # on the wrong side of a tie (4.45585 is 4.455849999... in binary)
    rational = rational_value(num)
    exact = rational if rational is not None else exact
    if exact.is_Integer:  # a count or a byte size: every digit, however large (exact, never rounded)
        return str(exact)
    if exact.is_Rational:
        scaled = _scaled(exact, decimals, exact_here)
        if scaled < _SCIENTIFIC_INT * 10**decimals:
            return _rational_text(scaled, exact.p < 0, decimals, exact_here)
        value = Decimal(-scaled if exact.p < 0 else scaled).scaleb(-decimals)
    else:
        text = _float_text(num.value, decimals)
        if text is not None:
            return text
        value = Decimal(num.value)  # the float's exact binary value: no double rounding
    if abs(value) >= SCIENTIFIC_FROM:
        return f"{value:.{decimals}e}"
    text = f"{value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
    if exact_here and "." in text:
        text = text.rstrip("0").rstrip(".")
    return _unsigned_zero(text)


def as_printed(value, decimals: int) -> Decimal:
    """A number as the key prints it at ``decimals`` (a step's entry by ``decimal_text``, a figure
    worked from such numbers rounded half up), to work on with: a note's figure worked from the
    figures it prints beside it agrees with them, as a softmax's sum is of its exponentials as written."""
    if isinstance(value, Num):
        return Decimal(decimal_text(value, decimals))
    return Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def total(values, decimals: int, size: bool = False) -> str:
    """A sum a sentence states, at ``decimals`` places: of a measured value (a float, printed
    nowhere else), or of printed entries (Nums) their sum as printed, so that it agrees with
    what a student adds up on the page (as a softmax's sum is of its exponentials as written);
    ``size`` adds their absolute values."""
    if isinstance(values, (int, float)):
        return f"{float(values):.{decimals}f}"
    written = (Decimal(decimal_text(n, decimals)) for n in values if n is not None)
    summed = sum((abs(d) if size else d for d in written), Decimal(0))
    return f"{summed.quantize(Decimal(1).scaleb(-decimals)):f}"


def _scaled(value: sympy.Rational, decimals: int, exact_here: bool) -> int:
    """|value|·10^decimals as a whole number: exact when the denominator divides 10^decimals,
    else rounded half away from zero (in integers: Decimal's division is not exact)."""
    unit = 10**decimals
    if exact_here:
        return abs(value.p) * (unit // value.q)
    return (2 * abs(value.p) * unit + value.q) // (2 * value.q)


def _rational_text(scaled: int, negative: bool, decimals: int, exact_here: bool) -> str:
    """A rational's ``_scaled`` digits as text (Decimal's quantize costs more than all the
    rest): trailing zeros dropped when it is exact at ``decimals``."""
    whole, fraction = divmod(scaled, 10**decimals)
    digits = f"{fraction:0{decimals}d}" if decimals else ""
    if exact_here:
        digits = digits.rstrip("0")
    sign = "-" if negative and scaled else ""
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"


def _float_text(value: float, decimals: int) -> str | None:
    """A float rounded half away from zero at ``decimals``, by Python's own formatting (a
    fifth of the time of Decimal's): it rounds the float's exact binary value correctly,
    half to even, which is half away from zero except at a tie.  A tie is a multiple of
    2^-(decimals+1) (x·2·10^d odd, x dyadic), so those, and the large, are left to Decimal."""
    if abs(value) >= _SCIENTIFIC_FLOAT or (value * 2.0 ** (decimals + 1)).is_integer():
        return None
    return _unsigned_zero(f"{value:.{decimals}f}")


def _unsigned_zero(text: str) -> str:
    return "0" + text[2:] if text.startswith("-0") and set(text[1:]) <= set("0.") else text


@lru_cache(maxsize=4096)  # an exact form can be kilobytes long
def exact_text(num: Num) -> str:
    """The exact form in plain text, e.g. 'sqrt(2)/2', 'exp(1/2)/(1 + exp(1/2))'.

    Terms stay in the order the engine built them: sorting them, as str() does,
    costs more than all the rest of a run.
    """
    text = softmax_text(num.exact)
    return text if text is not None else _unsorted().doprint(num.exact)


def softmax_text(exact: sympy.Expr) -> str | None:
    """What sympy's printer writes for the forms a softmax makes of scaled scores, written
    here (sympy finds each product's sign by negating it, most of problems.json's time):
    a score r or r*sqrt(n); e^a as exp(a) (E, 1); a weight exp(a)/(S); an output entry
    (exp(a)*(v) + ...)/(S), (exp(a)/(S))*(v), or a sum of such kept terms; S a sum of
    exponentials.  None for any other form, which sympy prints (a test holds the two equal
    on every form of many sets)."""
    if exact.is_Rational:
        return str(exact.p) if exact.q == 1 else f"{exact.p}/{exact.q}"
    return (_surd_text(exact) or _weight_text(exact) or _kept_text(exact)
            or _exponential_text(exact) or _sum_text(exact))


def _surd_text(exact) -> str | None:
    """r*sqrt(n) for a rational r and a whole n, as sympy writes it: 3*sqrt(2)/4, -sqrt(3)/3
    (a score divided by sqrt(d_k))."""
    if _is_root(exact):
        return f"sqrt({exact.base.p})"
    if not (exact.is_Mul and len(exact.args) == 2 and exact.args[0].is_Rational
            and _is_root(exact.args[1]) and exact.args[0] is not sympy.S.One):
        return None
    ratio = exact.args[0]
    sign, size = ("-" if ratio.p < 0 else ""), abs(ratio.p)
    over = f"sqrt({exact.args[1].base.p})" if size == 1 else f"{size}*sqrt({exact.args[1].base.p})"
    return sign + over + ("" if ratio.q == 1 else f"/{ratio.q}")


def _is_root(exact) -> bool:
    return bool(exact.is_Pow and exact.exp is sympy.S.Half and exact.base.is_Integer
                and exact.base.p > 1)


def _kept_text(exact) -> str | None:
    """(weight)*v: one value kept of a weight."""
    if not (exact.is_Mul and len(exact.args) == 2 and exact.args[1].is_Rational):
        return None
    weight = _weight_text(exact.args[0])
    return None if weight is None else f"({weight})*{_factor_text(exact.args[1])}"


def _weight_text(exact) -> str | None:
    """exp(a)/(S), or a blend of values over S: (exp(a)*(v) + ...)/(S)."""
    if not (exact.is_Mul and len(exact.args) == 2 and exact.args[1].is_Pow
            and exact.args[1].exp is sympy.S.NegativeOne and exact.args[1].base.is_Add):
        return None
    over = _exponential_text(exact.args[0]) or _sum_text(exact.args[0], parenthesized=True)
    under = _sum_text(exact.args[1].base, parenthesized=True)
    return None if over is None or under is None else f"{over}/{under}"


def _exponential_text(exact) -> str | None:
    """e^r for r rational or r*sqrt(n): exp(r), or E and 1 as sympy writes e^1 and e^0."""
    if isinstance(exact, sympy.exp):
        power = exact.args[0]
        written = softmax_text(power) if power.is_Rational else _surd_text(power)
        return None if written is None else f"exp({written})"
    return "E" if exact is sympy.S.Exp1 else "1" if exact is sympy.S.One else None


@lru_cache(maxsize=1024)  # a row's sum of exponentials is under each of its weights
def _sum_text(exact, parenthesized: bool = False) -> str | None:
    """A sum of e^r, e^r*(v), weight or (weight)*(v) terms, v rational, in the engine's
    order."""
    if not exact.is_Add:
        return None
    terms = [_exponential_text(term) or _weighted_text(term) or _weight_text(term)
             or _kept_text(term) for term in exact.args]
    if None in terms:
        return None
    return f"({' + '.join(terms)})" if parenthesized else " + ".join(terms)


def _weighted_text(term) -> str | None:
    """e^r*v, left unevaluated."""
    if not (term.is_Mul and len(term.args) == 2 and term.args[1].is_Rational):
        return None
    exponential = _exponential_text(term.args[0])
    return None if exponential is None else f"{exponential}*{_factor_text(term.args[1])}"


def _factor_text(value: sympy.Rational) -> str:
    """A rational factor of a product: in parentheses unless a whole number of at least 0."""
    return softmax_text(value) if value.q == 1 and value.p >= 0 else f"({softmax_text(value)})"


def short_exact_text(num: Num, decimals: int, limit: int = 14) -> str | None:
    """The exact form when it is short and says more than the decimal (1/3, sqrt(2)/2)."""
    if is_exact_at(num, decimals) or num.exact is sympy.S.NegativeInfinity:
        return None
    if _larger_than(num.exact, 3 * limit):  # no form of so many parts prints so short
        return None
    text = exact_text(num)
    return text if len(text) <= limit else None


# --- Working a calculator can check -----------------------------------------

MAX_EXTRA_PLACES = 4
_PLACES: OrderedDict[int, tuple] = OrderedDict()  # id(line) -> (line, places), the latest lines
REMEMBERED_LINES = 4096  # some thirty problems' working: every format writes a line near the others


def working_places(line, decimals: int) -> int:
    """How many decimals a line of working writes its operands with: the fewest, from
    ``decimals`` up, at which the line, recomputed on a calculator from the numbers it
    prints, gives the result it prints.  (Results are worked out from full precision; only
    the operands shown beside them may need a digit or two more, and only on the lines that
    need them.)"""
    remembered = _PLACES.get(id(line))
    if remembered is None or remembered[0] is not line:
        equations = _equations(line)
        remembered = line, _fewest(decimals, lambda p: all(e.checks(p, decimals) for e in equations))
        if len(_PLACES) >= REMEMBERED_LINES:  # the oldest goes: a class's lines are let go
            _PLACES.popitem(last=False)
        _PLACES[id(line)] = remembered
    return remembered[1]


def widened_operand(line, decimals: int) -> Num | None:
    """A number that a line of working writes with more decimals than ``decimals`` (so that
    the line checks), where it would read otherwise at ``decimals``; None if there is none."""
    places = working_places(line, decimals)
    if places == decimals:
        return None
    return next((n for equation in _equations(line) for n in equation.operands
                 if _printed(n, places) is not None
                 and decimal_text(n, places) != decimal_text(n, decimals)), None)


def table_places(softmax_steps, decimals: int) -> int:
    """The decimals a no-calculator table prints its exponentials with: as many as the set's
    softmax working needs, which then writes every exponential exactly as the table does."""
    lines = [line for step in softmax_steps for line in step.working]
    least = max([decimals] + [working_places(line, decimals) for line in lines])
    # More places can break a line that checked with fewer (0.135/0.871 rounds to 0.15 where
    # 0.14/0.88 gives the key's 0.16): the fewest from there at which every line checks.
    equations = [equation for line in lines for equation in _equations(line)]
    return _fewest(least, lambda p: all(e.checks(p, decimals) for e in equations))


def table_quotient(places: int) -> str:
    """The weight a no-calculator paper shows as its example of a quotient of table values,
    e^0.5 / (e^0.5 + e^-0.5 + e^0), written as the table prints its values."""
    powers = [Num.of(sympy.exp(sympy.Rational(k, 2))) for k in (1, -1, 0)]
    return f"{decimal_text(powers[0], places)}/{printed_sum(powers, places)}"


@dataclass(frozen=True)
class QuotientForm:
    """An output row as one quotient of table values, (e_1·v_1 + e_2·v_2 + …) / (e_1 + e_2 + …):
    the form a no-calculator key shows, since the student multiplies table values by the
    value rows' entries and adds, and may leave the one division that is left."""

    terms: tuple  # (e_j, v_j): each unmasked exponential with its value row
    numerator: tuple[str, ...]  # Σ_j e_j v_jc for each column c, exactly as the terms print
    denominator: str  # Σ_j e_j as printed


def quotient_form(line, places: int) -> QuotientForm | None:
    """``line`` (a Blend) written over its softmax row's exponentials at ``places``, or None
    when the weights are no softmax row or a value is not written exactly at ``places`` (then
    the products would not be short)."""
    if line.exponentials is None:
        return None
    terms = tuple((e, row) for e, row in zip(line.exponentials, line.values) if e is not None)
    if len(terms) < 2:  # one key left by the mask: its weight is 1, nothing to divide
        return None
    if not all(is_exact_at(v, places) for _, row in terms for v in row) or any(
            _printed(e, places) is None for e, _ in terms):
        return None
    numerator = tuple(_decimal_text(sum((_printed(e, places) * _printed(row[c], places)
                                         for e, row in terms), Decimal(0)))
                      for c in range(len(line.result)))
    return QuotientForm(terms, numerator, printed_sum([e for e, _ in terms], places))


def _decimal_text(value: Decimal) -> str:
    """An exact decimal with no trailing zeros: 9.03778, 14.77812, 2."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def exponent_places(exponent: Num, power: Num, places: int) -> int:
    """The decimals an exponent is written with so that e^x, on a calculator, gives the power
    as written (at ``places``): e^x magnifies the exponent's rounding, e^6 some 400 times."""
    equation = _Equation((exponent,), Decimal.exp, power, final=False)
    return _fewest(places, lambda p: equation.checks(places, places, operand_places=p))


def _fewest(start: int, works) -> int:
    return next((p for p in range(start, start + MAX_EXTRA_PLACES + 1) if works(p)),
                start + MAX_EXTRA_PLACES)


@dataclass(frozen=True)
class _Equation:
    """One line of working: operands, how a calculator combines them, and the result."""

    operands: tuple
    combine: object
    result: Num
    final: bool = True  # printed at the shown decimals; else at the operands' places

    def checks(self, places: int, decimals: int, operand_places: int | None = None) -> bool:
        return (self.exact_at(operand_places or places)
                or self.computed_checks(places, decimals, operand_places))

    def exact_at(self, places: int) -> bool:
        """A sum of products of numbers each written exactly at ``places`` (the dot products
        of a hard set's two-place entries): a calculator gets the exact result from them,
        which rounds as the result is written, so the line checks without working it out."""
        return self.combine is _sum_of_products and all(is_exact_at(n, places)
                                                        for n in self.operands)

    def computed_checks(self, places: int, decimals: int, operand_places: int | None = None) -> bool:
        printed = [_printed(n, operand_places or places) for n in self.operands]
        result_places = decimals if self.final else places
        target = _printed(self.result, result_places)
        if target is None or None in printed:
            return True  # -inf or scientific notation: nothing a calculator line checks
        unit = Decimal(1).scaleb(-result_places)
        try:
            computed = self.combine(*printed)
        except ArithmeticError:  # 0/0: exponentials so small they print as 0
            return False
        return computed.quantize(unit, ROUND_HALF_UP) == target.quantize(unit)


def _equations(line) -> list[_Equation]:
    kind = type(line).__name__
    if kind == "DotProduct":
        return [_Equation(tuple(n for pair in line.pairs for n in pair), _sum_of_products,
                          line.result)]
    if kind == "Scaling":
        if line.divisor is not None:
            return [_Equation((line.score, line.divisor), lambda s, d: s / d, line.result)]
        return [_Equation((line.factor, line.score), lambda f, s: f * s, line.result)]
    if kind == "SoftmaxRow":
        shown = [(x, e, w) for x, e, w in zip(line.inputs, line.exponentials, line.weights)
                 if x is not None]
        exponentials = tuple(e for _, e, _ in shown)  # the sum shown is theirs, as printed
        return [_Equation((e, *exponentials), lambda a, *es: a / sum(es), w) for _, e, w in shown]
    if kind == "Blend":
        return [_Equation(tuple(n for pair in zip(line.weights, (row[c] for row in line.values))
                                for n in pair), _sum_of_products, result)
                for c, result in enumerate(line.result)]
    if kind == "JacobianEntry":
        diagonal = 1 if line.row == line.col else 0
        return [_Equation((line.a_i, line.a_j), lambda ai, aj: ai * (diagonal - aj), line.result)]
    if kind == "SoftmaxBackwardRow":
        dot = _Equation(tuple(n for pair in zip(line.weights, line.upstream) for n in pair),
                        _sum_of_products, line.dot)
        return [dot] + [_Equation((a, g, line.dot), lambda a, g, s: a * (g - s), r)
                        for a, g, r in zip(line.weights, line.upstream, line.result) if a.value != 0]
    # A line of an op from outside (a plugin's) says its own: (operands, how a calculator
    # combines them as Decimals, result) for each equation it prints.
    says = getattr(line, "calculator_lines", None)
    return [_Equation(tuple(operands), combine, result)
            for operands, combine, result in says()] if says else []


def printed_sum(nums, places: int) -> str:
    """The sum of numbers as printed at ``places``, exactly: the row sum a softmax line shows,
    so that it is what a calculator gets from the exponentials beside it."""
    total = sum((Decimal(decimal_text(n, places)) for n in nums if n is not None), Decimal(0))
    if abs(total) >= SCIENTIFIC_FROM:  # exponentials of big scores, printed as 1.2346e+08
        return f"{total:.{places}e}"
    return _decimal_text(total)


def _sum_of_products(*numbers: Decimal) -> Decimal:
    return sum((a * b for a, b in zip(numbers[::2], numbers[1::2])), Decimal(0))


def _printed(num: Num, places: int) -> Decimal | None:
    text = decimal_text(num, places)
    return None if text == "-inf" or "e" in text else Decimal(text)


def parenthesized(text: str) -> str:
    """Wrap a negative number in parentheses, as in 0.49·(-0.14)."""
    return f"({text})" if text.startswith("-") else text


def plain_matrix(rows: list[list[str]], indent: str = "    ") -> str:
    """A matrix of texts as aligned rows in square brackets, for Markdown and terminals."""
    widths = [max(len(row[j]) for row in rows) for j in range(len(rows[0]))]
    lines = ["[ " + "  ".join(t.rjust(w) for t, w in zip(row, widths)) + " ]" for row in rows]
    return "\n".join(indent + line for line in lines)


# --- LaTeX -----------------------------------------------------------------

@lru_cache(maxsize=8192)  # a key writes each number several times: matrix, working, checks
def latex_number(num: Num, decimals: int) -> str:
    """A number for LaTeX, to ``decimals`` places: minus infinity for a masked score, and a number
    too large for its places as a power of ten (2.6881 times 10^43)."""
    text = decimal_text(num, decimals)
    if text == "-inf":
        return r"-\infty"
    if "e" in text:  # 2.6881e+43 -> 2.6881\times10^{43}
        mantissa, exponent = text.split("e")
        return rf"{mantissa}\times 10^{{{int(exponent)}}}"
    return text


def latex_vector(texts: list[str], separator: str = ",") -> str:
    """A row of numbers, already LaTeX, as [a, b, ...] (``separator`` a semicolon where the
    decimal mark is a comma: [0,5; 0,25])."""
    # \allowbreak: a long vector may wrap inside running text instead of overrunning the margin.
    return r"[" + (separator + r"\ \allowbreak ").join(texts) + r"]"


def latex_matrix(rows: list[list[str]]) -> str:
    """A bracketed array with right-aligned columns, so decimals line up."""
    body = r" \\ ".join(" & ".join(row) for row in rows)
    return rf"\left[\begin{{array}}{{{'r' * len(rows[0])}}}{body}\end{{array}}\right]"


def short_exact_latex(num: Num, decimals: int, limit: int = 14) -> str | None:
    """sympy's LaTeX of the exact form, when the plain form is short (see short_exact_text)."""
    if short_exact_text(num, decimals, limit) is None:
        return None
    return sympy.latex(num.exact)


def exact_latex(value: sympy.Expr) -> str:
    """An exact value as LaTeX: \\frac{\\sqrt{5}}{5}."""
    return sympy.latex(value)


# Each step's matrix symbol in LaTeX; an entry is written symbol_{i,j}.
def latex_entry_symbol(step_name: str, head: int | None = None) -> str:
    """What an entry's subscript attaches to: S (S_{1,2}), or (S_1) for a head ((S_1)_{1,2}),
    and (gJ) for a product ((gJ)_{1,2}: gJ_{1,2} would read as g times J_{1,2})."""
    symbol = steps.symbol(step_name, head)
    return symbol if "_" not in symbol and _one_letter(symbol) else f"({symbol})"


def plain_entry_symbol(step_name: str, head: int | None = None) -> str:
    """The same in plain text, where an entry is written symbol[i,j]: S[1,2], S_1[1,2], dA[1,2],
    dX^(Q)[1,2]; a product in parentheses, (gJ)[1,2]."""
    return plain_entry_text(steps.symbol(step_name, head))


def plain_entry_text(symbol: str) -> str:
    """A symbol (TeX) as plain text that an entry's [i,j] can follow: A', (gJ)."""
    text = plain_maths(symbol)
    return text if _one_letter(symbol) else f"({text})"


ONE_LETTER = re.compile(r"^[A-Za-z][\u0300-\u036f]*['\u2032]*(?:[_^].*)?$")  # S, S̃, Ŝ, A', A′, W_Q, X^(Q)


def _one_letter(symbol: str) -> bool:
    """Whether a symbol is one letter (accented, with a subscript or superscript, or a
    gradient's d before it), not a product of several.  Read decomposed: Ŝ prints as one
    precomposed character (U+015C), which is S and a combining hat."""
    text = plain_maths(symbol.removeprefix(r"\mathrm{d}"))
    return bool(ONE_LETTER.match(unicodedata.normalize("NFD", text)))


# --- HTML and Moodle ---------------------------------------------------------------

def plain_decimal(value: float, places: int) -> str:
    """A number in plain decimal notation (never 1.0978e+7), at most ``places`` decimals."""
    text = f"{value:.{places}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def rounded_up(value: float, digits: int = 2) -> str:
    """A tolerance to ``digits`` significant digits, rounded up so that it never shrinks."""
    if value <= 0:
        return "0"
    exponent = math.floor(math.log10(value)) - digits + 1
    step = 10.0**exponent
    return plain_decimal(math.ceil(value / step - 1e-9) * step, max(0, -exponent))


def cloze_numerical(value: float, tolerance: float, weight: int) -> str:
    """A Moodle cloze NUMERICAL gap: the key's full-precision value and the tolerance the
    marking rule gives it (see ``marking``), both in the plain notation Moodle's parser reads."""
    return f"{{{weight}:NUMERICAL:={plain_decimal(value, 9)}:{rounded_up(tolerance)}}}"


def shape_forms(rows: int, columns: int) -> tuple[str, ...]:
    """The ways a student may type a shape, each accepted as it stands (Moodle's SHORTANSWER
    and Canvas's fill-in compare whole answers, ignoring case and the spaces around them):
    2×3, 2x3, 2 x 3, 2 by 3, (2, 3) and their like."""
    joined = [f"{rows}{sep}{columns}" for sep in ("×", " × ", "x", " x ", " by ", ",", ", ")]
    return (*joined, f"({rows},{columns})", f"({rows}, {columns})")


def cloze_shortanswer(forms: tuple[str, ...], weight: int) -> str:
    """A Moodle cloze SHORTANSWER gap that takes any of these answers as right."""
    return f"{{{weight}:SHORTANSWER:" + "~".join("=" + cloze_escape(form) for form in forms) + "}"


# Moodle's cloze parser (question/type/multianswer/questiontype.php) ends an answer at an
# unescaped ~ # or }, and afterwards turns only \} and \# back; it decodes HTML entities.
# So } and # are escaped, ~ and \ (which would escape what follows) become entities.
CLOZE_ESCAPES = str.maketrans({"}": "\\}", "#": "\\#", "~": "&#126;", "\\": "&#92;",
                               "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def cloze_escape(text: str) -> str:
    """Text inside a cloze answer, as Moodle's parser reads it back."""
    return text.translate(CLOZE_ESCAPES)


def mathml_matrix(rows: list[list[str]]) -> str:
    """A bracketed matrix in MathML, which browsers draw without any script."""
    def cell(text: str) -> str:
        text = text.replace("-inf", "−∞").replace("-", "−")  # the minus sign, not a hyphen
        return f"<mtd><mn>{text}</mn></mtd>"

    cells = "".join("<mtr>" + "".join(cell(t) for t in row) + "</mtr>" for row in rows)
    return (f'<mrow><mo>[</mo><mtable columnalign="right">{cells}</mtable><mo>]</mo></mrow>')
