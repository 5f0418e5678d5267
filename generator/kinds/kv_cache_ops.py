"""The ops of the KV-cache question (``kv_cache``), each with every face (see ``maths.ops``):

- ``append``: a cache and the new token's row stacked, K = [K_cache; k] (the rows of the first
  input, then those of the second): nothing is computed, rows are copied;
- ``cache-size``: the KV cache's size for a stated model, 2 x layers x KV heads x head width x
  tokens x bytes per value (the 2 for K and V), in the unit the question asks (bytes, MiB, ...),
  from one given row [layers, kv_heads, head_dim, tokens, bytes per value, bytes per unit].

Each arithmetic is its own (the engine's exact sympy here, numpy's for the cross-check, the
page's JavaScript in templates/html/ops/<op>.js), as for the built-in ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from generator.maths import ops
from generator.maths.engine import Num, Step
from generator.rendering import paper
from generator.rendering.hints import OpHint
from generator.rendering.language import gettext as _

APPEND = "append"
CACHE_SIZE = "cache-size"


# append: K = [K_cache; k]
def append_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: the first input's rows, then the second's, copied as they are."""
    return Step(step_def.name, step_def.worded(), APPEND, sum((step.entries for step in inputs), ()))


def append_numeric(step_def, *parts, **_):
    """numpy's own arithmetic (the cross-check): the parts stacked row on row."""
    return np.vstack(parts)


def append_tolerance(step_def, inputs, errors, u, spec):
    """A copied entry moves as far as the entry it copies."""
    return np.vstack(errors)


def append_shape(step_def, shapes: list[tuple[int, int]]) -> tuple[int, int]:
    """The parts' rows added; a ValueError when their widths differ."""
    if len({columns for _, columns in shapes}) > 1:
        widths = " and ".join(f"{name} has {columns}" for name, (_, columns) in zip(step_def.inputs, shapes))
        raise ValueError(f"{step_def.worded()}: the rows must be as wide, but {widths} columns")
    return sum(rows for rows, _ in shapes), shapes[0][1]


def append_slips(step_def, sym, spec, before, whole=None):
    """The new row left off (the cache alone), or put first rather than last."""
    me, cache, new = sym(step_def.name), sym(step_def.inputs[0]), sym(step_def.inputs[-1])
    values = {"me": me, "cache": cache, "new": new}
    return [({"inputs": [step_def.inputs[0]]}, _(
                "the new token's own row %(new)s is missing: %(me)s = [%(cache)s; %(new)s], the "
                "cache's rows and then %(new)s, since the new token attends to itself") % values),
            ({"inputs": list(step_def.inputs[::-1])}, _(
                "%(new)s goes last: %(me)s = [%(cache)s; %(new)s], the rows in the tokens' order")
             % values)]


APPEND_OP = ops.Op(
    APPEND, append_exact, append_numeric, append_tolerance,
    OpHint("copy the rows of ${{ a }}$, then write ${{ b }}$ under them as the last row."),
    paper.copy_seconds, ops.DEFAULT_TEMPLATES, ops.script_file(APPEND), shape=append_shape,
    slips=append_slips)


# cache-size: 2 x layers x kv_heads x head_dim x tokens x bytes, in the unit asked
@dataclass(frozen=True)
class CacheProduct:
    """The cache's size worked: the factors (2, layers, KV heads, head width, tokens, bytes per
    value), the running products, the bytes, the unit's bytes and the size in that unit."""

    row: int
    col: int
    factors: tuple[Num, ...]
    running: tuple[Num, ...]  # 2·L, 2·L·H, ...: the product so far after each factor
    unit: Num  # the bytes in one unit of the answer (1, 2^20, ...)
    result: Num

    @property
    def total(self) -> Num:
        """The cache's size in bytes."""
        return self.running[-1]

    def calculator_lines(self):
        """What a calculator checks of the working (``formatting``): each running product, and
        the bytes over the unit."""
        lines = [((before, factor), lambda a, b: a * b, after)
                 for before, factor, after in zip((self.factors[0], *self.running[:-1]),
                                                  self.factors[1:], self.running)]
        return lines + [((self.total, self.unit), lambda a, b: a / b, self.result)]


def cache_size_exact(step_def, inputs, spec, num) -> Step:
    """The exact face: the model's numbers multiplied, times 2 for K and V, over the unit."""
    *model, unit = inputs[0].entries[0]
    factors = (num(sympy.Integer(2)), *model)
    running, product = [], factors[0].exact
    for factor in factors[1:]:
        product = product * factor.exact
        running.append(num(product))
    line = CacheProduct(0, 0, factors, tuple(running), unit, num(product / unit.exact))
    return Step(step_def.name, step_def.worded(), CACHE_SIZE, ((line.result,),), (line,))


def cache_size_numeric(step_def, model, **_):
    """numpy's own arithmetic (the cross-check)."""
    return np.array([[2 * np.prod(model[0, :5]) / model[0, 5]]])


def cache_size_tolerance(step_def, inputs, errors, u, spec):
    """A product moves by its relative errors added (the model's numbers are exact: nothing)."""
    model, error = inputs[0][0], errors[0][0]
    size = 2 * np.prod(model[:5]) / model[5]
    relative = float(np.sum(error / np.abs(model)))
    return np.array([[abs(size) * relative]])


def cache_size_shape(step_def, shapes):
    """One number, from one row of six."""
    if shapes[0] != (1, 6):
        raise ValueError(f"{step_def.worded()}: the model is one row of six numbers")
    return 1, 1


def cache_size_slips(step_def, sym, spec, before, whole=None):
    """The factor 2 left out (K alone), or the bytes not turned into the unit asked."""
    me = sym(step_def.name)
    return [({"halved": True}, _("this counts the keys alone: the cache holds K and V, so %(me)s has "
                                 "a factor 2 for the two") % {"me": me}),
            ({"in_bytes": True}, _("this is the size in bytes: divide by the bytes in one unit asked"))]


def cache_size_seconds(step, cost) -> int:
    """Five multiplications and one division, each a long one."""
    return 5 * cost("long product term") + cost("quotient") + cost("product entry")


def cache_size_first(w) -> str:
    """The hint's first line: the product written out, every digit (whole numbers, as the key's
    working writes them, never in scientific notation)."""
    line = w.line
    return w._("%(product)s = %(total)s bytes.", product=" × ".join(str(f.exact) for f in line.factors),
               total=line.total.exact)


CACHE_SIZE_OP = ops.Op(
    CACHE_SIZE, cache_size_exact, cache_size_numeric, cache_size_tolerance,
    OpHint("multiply 2 (for $K$ and $V$) by the layers, the KV heads, the head width, the tokens "
           "and the bytes per value; then divide by the bytes in one unit asked.", cache_size_first),
    cache_size_seconds, ops.working_templates(CACHE_SIZE), ops.script_file(CACHE_SIZE),
    shape=cache_size_shape, slips=cache_size_slips)


def register() -> None:
    """Register both ops (their templates are the built-in folder's)."""
    ops.register_op(APPEND_OP)
    ops.register_op(CACHE_SIZE_OP)
