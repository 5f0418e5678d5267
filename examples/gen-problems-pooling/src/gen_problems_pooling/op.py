"""The op "mean-pool": a matrix's rows averaged into one row, ō_j = (o_1j + ... + o_nj) / n.

A sentence encoder pools its tokens' outputs so: the attention output O (one row a token)
becomes one vector for the whole sequence, which a classifier reads.  By hand it is a sum
and a division per column.  Every face of the op is here, each computed on its own (the
engine's exact sympy, numpy's check, the page's JavaScript in templates/html/ops/mean-pool.js),
and its working is drawn by templates/{latex,markdown}/steps/mean-pool.*.j2.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import sympy

from gen_problems_pooling import TEMPLATES
from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.rendering import formatting as fmt
from generator.rendering.hints import OpHint
from generator.rendering.template_files import add_template_folder

NAME = "mean-pool"


@dataclass(frozen=True)
class ColumnMean:
    """Entry (1, col + 1) of the pooled row, worked: the column's entries, and their mean."""

    row: int
    col: int
    column: tuple[Num, ...]
    result: Num

    def calculator_lines(self):
        """What a calculator checks of the line (``formatting``): the operands as printed,
        summed and divided by their count, give the result as printed."""
        count = len(self.column)
        return [(self.column, lambda *entries: sum(entries, Decimal(0)) / count, self.result)]


def mean_pool_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: each column's mean, from the column's exact entries."""
    working = tuple(column_mean(col, column, num)
                    for col, column in enumerate(zip(*inputs[0].entries)))
    return Step(step_def.name, step_def.worded(), NAME, (tuple(w.result for w in working),), working)


def column_mean(col: int, column: tuple[Num, ...], num) -> ColumnMean:
    total, count = num.total(column), len(column)
    if total.exact.is_Rational:
        return ColumnMean(0, col, column, num(total.exact / count))
    # an output's entries hold exponentials: the mean is left as written, (sum) / n
    mean = sympy.Mul(sympy.Rational(1, count), total.exact, evaluate=False)
    return ColumnMean(0, col, column, Num(mean, total.value / count))


def mean_pool_numeric(step_def, rows, **_):
    """numpy's own arithmetic (the cross-check)."""
    return rows.mean(axis=0, keepdims=True)


def mean_pool_tolerance(step_def, inputs, errors, u, spec):
    """A mean moves by the mean of its entries' errors."""
    return errors[0].mean(axis=0, keepdims=True)


def mean_pool_slips(step_def, sym, spec, before, whole=None):
    """Each (change to the step, what the page says) of the slips a student makes."""
    me, of = sym(step_def.name), sym(step_def.inputs[0])
    found = [({"summed": True}, f"this is the sum of each column of {of}: {me} is the mean, "
                                f"the sum divided by the {spec.n_queries} rows")]
    values = before(step_def.inputs[0])
    if values is not None and len(values.inputs) > 1:  # the output's values, V, pooled instead
        found.append(({"inputs": [values.inputs[1]]}, f"this pools the values "
                      f"{sym(values.inputs[1])}: pool {of}, the attention's output"))
    return found


def mean_first(w) -> str:
    """The hint's first entry, as the key's line writes it."""
    terms = " + ".join(w.text(x) if k == 0 else fmt.parenthesized(w.text(x))
                       for k, x in enumerate(w.line.column))
    return f"{w.entry} = ({terms}) / {len(w.line.column)} {w.result(w.line.result)}."


def mean_pool_seconds(step, cost) -> int:
    """Each entry added on, then one division per column."""
    terms = sum(len(line.column) for line in step.working)
    return terms * cost("product term") + step.shape[1] * cost("quotient")


def pooled_shape(step_def, shapes):
    return 1, shapes[0][1]


MEAN_POOL = ops.Op(
    NAME, mean_pool_exact, mean_pool_numeric, mean_pool_tolerance,
    OpHint("average the rows of ${{ a }}$: add up each column, then divide by the number of "
           "rows.", mean_first),
    mean_pool_seconds, ops.working_templates(NAME), ops.script_file(NAME),
    shape=pooled_shape, slips=mean_pool_slips)


def register() -> None:
    """The entry point (gen_problems.ops): the op, and the folder of its templates."""
    add_template_folder(TEMPLATES)
    ops.register_op(MEAN_POOL)
