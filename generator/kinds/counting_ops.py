"""The ops of the counting question (``counting``), each with every face (see ``maths.ops``):

- ``count``: a count written as a sum of products, Σ_rows Π_entries, of its inputs stacked row
  on row: a given table of terms (one row a term, its factors padded with 1s, each term named
  by the question's ``TERMS``), or earlier counts of one entry each (a layer's total is the
  attention's, the feed-forward layer's and the LayerNorms' counts added);
- ``count-times``: the product of every entry of its inputs (a layer's count times the layers).

Every entry is a whole number and exact: the tolerance is nothing, and a count is never
rounded.  Each arithmetic is its own (the engine's exact sympy here, numpy's for the
cross-check, the page's JavaScript in templates/html/ops/<op>.js), as for the built-in ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.rendering.hints import OpHint

COUNT = "count"
COUNT_TIMES = "count-times"


@dataclass(frozen=True)
class Term:
    """One term of a count: what it counts (prose: "$W_Q$"), its factors (whole numbers) and
    their product."""

    label: str
    factors: tuple[Num, ...]
    product: Num


@dataclass(frozen=True)
class CountWorking:
    """A count worked: each term's product written out, then the terms added."""

    row: int
    col: int
    terms: tuple[Term, ...]
    result: Num


# Each counting step's terms, by step name: (spec) -> ((label, factors or None), ...), a term
# per row of its inputs.  The question fills it (``counting``).
LABELS: dict[str, Callable] = {}


def _entry(step: Step) -> Num:
    return step.entries[0][0]


def count_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: each row's entries multiplied, the products added.  Each term is named and
    its factors written as the question's table gives them (``LABELS``: a factor 1 of the
    configuration shown, the padding 1s not); a row the table has no factors for is written as
    it is (an earlier count)."""
    rows = [row for step in inputs for row in step.entries]
    named = LABELS[step_def.name](spec) if step_def.name in LABELS else [("", None)] * len(rows)
    terms = []
    for (label, factors), row in zip(named, rows, strict=True):
        product = num(sympy.Mul(*(n.exact for n in row)))
        shown = tuple(num(sympy.Integer(f)) for f in factors) if factors is not None else row[:1]
        assert sympy.Mul(*(f.exact for f in shown)) == product.exact, (step_def.name, label)
        terms.append(Term(label, shown, product))
    total = num(sympy.Add(*(t.product.exact for t in terms)))
    line = CountWorking(0, 0, tuple(terms), total)
    return Step(step_def.name, step_def.worded(), COUNT, ((total,),), (line,))


def count_numeric(step_def, *tables, **_):
    """numpy's own arithmetic (the cross-check): the rows' products, added."""
    return np.array([[float(np.prod(np.vstack(tables), axis=1).sum())]])


def exact_nothing(step_def, inputs, errors, u, spec):
    """A count of whole numbers read off the configuration is exact: it may move by nothing."""
    return np.zeros((1, 1))


def count_shape(step_def, shapes):
    """One number, from terms as wide as each other."""
    if len({columns for _, columns in shapes}) > 1:
        raise ValueError(f"{step_def.worded()}: the terms must be as wide as each other")
    return 1, 1


def count_slips(step_def, sym, spec, before, whole=None):
    """The question's own slips of this count: each another table of terms (biases forgotten,
    d_k for d_k - 1), which the page works in place of the right one."""
    slips = SLIPS.get(step_def.name)
    return [({"terms": terms}, says) for terms, says in slips(spec)] if slips else []


SLIPS: dict[str, Callable] = {}  # step name -> (spec) -> [(terms, what the page says)]


SHORT = 10**4  # products up to this are short ones, done in the head or on paper in a moment


def _product_cost(terms, cost) -> int:
    """A product's cost: short while every product is small (a configuration counted on paper),
    else long (the digits of a real-sized layer)."""
    return cost("product term" if all(abs(t.product.value) <= SHORT for t in terms) else "long product term")


def count_seconds(step, cost) -> int:
    """Each term's factors multiplied (a product each but the first factor), each term added on,
    the count written down."""
    terms = step.working[0].terms
    products = sum(max(len(t.factors) - 1, 0) for t in terms)
    return products * _product_cost(terms, cost) + len(terms) * cost("product term") + cost("product entry")


def count_first(w) -> str:
    """The hint's first line: the first term's product written out."""
    term = w.line.terms[0]
    return f"{' × '.join(str(f.exact) for f in term.factors)} = {term.product.exact}."


COUNT_OP = ops.Op(
    COUNT, count_exact, count_numeric, exact_nothing,
    OpHint("write each term as a product of the configuration's numbers, multiply it out, then add "
           "the terms; every count is a whole number.", count_first),
    count_seconds, ops.working_templates(COUNT), ops.script_file(COUNT), shape=count_shape,
    slips=count_slips)


def times_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: every entry of the inputs multiplied (a layer's count times the layers)."""
    factors = tuple(n for step in inputs for row in step.entries for n in row)
    product = num(sympy.Mul(*(n.exact for n in factors)))
    line = CountWorking(0, 0, (Term("", factors, product),), product)
    return Step(step_def.name, step_def.worded(), COUNT_TIMES, ((product,),), (line,))


def times_numeric(step_def, *inputs, **_):
    """numpy's own arithmetic (the cross-check)."""
    return np.array([[float(np.prod([np.prod(a) for a in inputs]))]])


def times_seconds(step, cost) -> int:
    """One product, written down."""
    return _product_cost(step.working[0].terms, cost) + cost("product entry")


COUNT_TIMES_OP = ops.Op(
    COUNT_TIMES, times_exact, times_numeric, exact_nothing,
    OpHint("multiply ${{ a }}$ by ${{ b }}$.", count_first),
    times_seconds, ops.working_templates(COUNT), ops.script_file(COUNT_TIMES),
    shape=lambda step_def, shapes: (1, 1))


def register() -> None:
    """Register both ops (their templates are the built-in folder's)."""
    ops.register_op(COUNT_OP)
    ops.register_op(COUNT_TIMES_OP)
