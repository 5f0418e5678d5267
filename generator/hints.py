"""Stage 3, the practice page's hints: how to start each step by hand, and its first entry
(or row) worked.

A hint's words are prose (maths between ``$...$``, printed as the page prints all prose),
naming a step's inputs by their symbols (S, A, dA), never by the steps' names.  Its first
line of working is the answer key's: each number written with the decimals the key's line
gives it (``formatting.working_places``), so that the hint shows what Reveal shows and
adds up from the numbers it prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import formatting as fmt
from . import steps

# How to start each op by hand; {{ a }} and {{ b }} are the symbols of the step's inputs.
HOW = {
    "product": "entry (1, 1) is {{ row }} 1 of ${{ a }}$ dotted with {{ col }} 1 of ${{ b }}$; "
               "the others likewise.",
    "blend": "row 1 adds up the rows of ${{ b }}$, each times its weight in row 1 of ${{ a }}$.",
    "scaling": "scale every entry of ${{ a }}$ alike: divide it by $\\sqrt{d_k}$ (or multiply it "
               "by the scale the problem gives).",
    "masking": r"copy ${{ a }}$, then write $-\infty$ wherever key $j$ comes after query $i$.",
    "softmax": "$e$ to the power of each entry of a row of ${{ a }}$, add them up, divide each "
               "by the sum.",
    "add": "add the matrices entry by entry.",
    "jacobian": r"on the diagonal $a_i\,(1 - a_i)$; off it $-a_i a_j$.",
    "softmax-backward": "row by row: first the dot product of the row of ${{ a }}$ with the row "
                        "of ${{ b }}$; then each entry of ${{ a }}$ times (its entry of ${{ b }}$ "
                        "minus that dot product).",
    "concat": "put the heads' outputs side by side, head 1 on the left.",
    "given": "take this head's block of columns (head 1 the first half).",
}
PICKED = "read it off the matrices shown above, in the new order."


@dataclass(frozen=True)
class Hint:
    how: str  # prose
    symbols: dict = field(default_factory=dict)  # the values its prose reads: a, b, row, col
    first: str = ""  # the first entry's working, as plain text
    title: str = ""  # prose naming the step, where its formula would not (Q_2, A′)


def hint_of(question, step, head: int | None, decimals: int, table_places: int | None = None) -> Hint:
    """How to start a step by hand, from its op in the plan that computed it, and its first
    entry's working; ``table_places``: the no-calculator table's, which the key's softmax
    working writes its exponentials with."""
    for _, solution in question.worked:
        for step_def, known in zip(solution.plan, solution.steps):
            if known is step:
                inputs = [steps.symbol(name, head) for name in step_def.inputs if "." not in name]
                symbols = dict(zip("ab", inputs), row="column" if step_def.transpose_left else "row",
                               col="row" if step_def.transpose else "column")
                return Hint(HOW[step_def.op], symbols,
                            first_working(step, step_def, head, decimals, table_places))
    return Hint(PICKED)


def pick_hint(pick, source_symbol: str, symbol: str) -> Hint:
    """How a matrix read off another is read: which rows and columns of ``source_symbol``, in
    what order (a head's block of Q's columns; A′ = PAPᵀ, both rows and columns swapped)."""
    moved_rows = list(pick.rows) != list(range(len(pick.rows)))
    moved_columns = list(pick.columns) != list(range(len(pick.columns)))
    if not moved_rows:
        how = (f"columns {_span(pick.columns)} of ${source_symbol}$, every row."
               if _consecutive(pick.columns) else
               f"the columns of ${source_symbol}$ in the order {_listed(pick.columns)}.")
    else:
        how = f"the rows of ${source_symbol}$ in the order {_listed(pick.rows)}" + (
            f", and its columns in the order {_listed(pick.columns)}." if moved_columns
            else "; each row keeps its entries.")
    return Hint(how, title=f"${symbol}$")


def _consecutive(indices) -> bool:
    return list(indices) == list(range(indices[0], indices[0] + len(indices)))


def _span(indices) -> str:
    return f"{indices[0] + 1} to {indices[-1] + 1}" if len(indices) > 1 else f"{indices[0] + 1}"


def _listed(indices) -> str:
    return ", ".join(str(i + 1) for i in indices)


def first_working(step, step_def, head: int | None, decimals: int,
                  table_places: int | None = None) -> str:
    """The working of a step's first entry (or row), with the key's numbers; where they carry
    more places than the page shows, the hint says so beside them."""
    if not step.working:
        return ""
    places = fmt.working_places(step.working[0], decimals)
    working = _first_working(step, step_def, head, decimals, places, table_places)
    if working and places > decimals and step.kind != "softmax":
        working += (f" (The key works from {places} places, more than the {decimals} shown, so "
                    "that the line adds up; from the shown values you may differ in the last "
                    "digit, which is marked right.)")
    return working


def _first_working(step, step_def, head: int | None, decimals: int, places: int,
                   table_places: int | None = None) -> str:
    line = step.working[0]
    text = lambda n: fmt.decimal_text(n, places)  # noqa: E731 (an operand, as the key writes it)
    # the line's own place: a row question's one row is row 3 of S̃, not row 1
    entry = f"{fmt.plain_entry_symbol(step.name, head)}[{line.row + 1},{getattr(line, 'col', 0) + 1}]"
    if step.kind == "product":
        return f"{entry} = {products(line.pairs, text)} {_result(line.result, decimals)}."
    if step.kind == "scaling":
        how = (f"{text(line.score)} / {text(line.divisor)}" if line.divisor
               else f"{text(line.factor)} · {fmt.parenthesized(text(line.score))}")
        return f"{entry} = {how} {_result(line.result, decimals)}."
    if step.kind == "softmax":
        return softmax_row(line, table_places or places)
    if step.kind == "softmax-backward":
        pairs = zip(line.weights, line.upstream)
        return f"the dot product {products(pairs, text)} {_result(line.dot, decimals)}."
    if step.kind == "jacobian":
        return f"{entry} = {text(line.a_i)}·(1 - {text(line.a_j)}) {_result(line.result, decimals)}."
    if step.kind == "blend":
        rows = fmt.plain_entry_symbol(step_def.inputs[1], head)
        terms = [f"{text(weight)}·(row {k + 1} of {rows})" for k, weight in enumerate(line.weights)]
        return (f"row {line.row + 1} of {fmt.plain_entry_symbol(step.name, head)} = "
                + " + ".join(terms) + ".")
    return ""


def products(pairs, text) -> str:
    """a·b + c·(-d) + ...: a dot product as the key writes it."""
    return " + ".join((text(a) if k == 0 else fmt.parenthesized(text(a))) + "·"
                      + fmt.parenthesized(text(b)) for k, (a, b) in enumerate(pairs))


def softmax_row(line, places: int) -> str:
    """A row's exponentials and their sum, as the key writes them: the sum is the sum of the
    exponentials as printed."""
    powers = ", ".join(
        "masked → 0" if x is None else
        f"e^{fmt.decimal_text(x, fmt.exponent_places(x, e, places))} "
        f"{'=' if fmt.is_exact_at(e, places) else '≈'} {fmt.decimal_text(e, places)}"
        for x, e in zip(line.inputs, line.exponentials))
    return f"Row {line.row + 1}: {powers}; sum = {fmt.printed_sum(line.exponentials, places)}."


def _result(num, decimals: int) -> str:
    return f"{'=' if fmt.is_exact_at(num, decimals) else '≈'} {fmt.decimal_text(num, decimals)}"
