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
from typing import Callable

from generator.maths import ops, steps
from generator.rendering import formatting as fmt
from generator.rendering.language import ENGLISH, N_, Language

# Prose (translated as the page prints it, by its whole source)
PICKED = N_("read it off the matrices shown above, in the new order.")
MASK = N_(r"row $i$ is query $i$'s: $0$ for each key it may attend to, $-\infty$ for each the mask "
          r"hides from it (type -inf).")


@dataclass(frozen=True)
class OpHint:
    """An op's hint face (see ops): how to start a step of it by hand, and its first entry's
    working.  ``how`` is prose, where {{ a }} and {{ b }} are the symbols of the step's
    inputs, {{ row }} and {{ col }} what of them a product's first entry takes; ``first``
    (a ``FirstEntry`` -> plain text) writes its first entry or row, or is None for none;
    ``says_places`` whether the hint notes that the key's working carries more places than
    the page shows (a softmax row says its own: the exponentials' places)."""

    how: str
    first: Callable | None = None
    says_places: bool = True


NO_HINT = OpHint("")  # an op whose hint is its formula alone


@dataclass(frozen=True)
class Hint:
    """A step's hint as the page shows it: how to start it (prose), the values that prose reads, its
    first entry worked, and a title where the step's formula would not name it."""

    how: str  # prose
    symbols: dict = field(default_factory=dict)  # the values its prose reads: a, b, row, col
    first: str = ""  # the first entry's working, as plain text
    title: str = ""  # prose naming the step, where its formula would not (Q_2, A′)


def hint_of(question, step, head: int | None, decimals: int, table_places: int | None = None,
            language: Language = ENGLISH) -> Hint:
    """How to start a step by hand, from its op in the plan that computed it, and its first
    entry's working; ``table_places``: the no-calculator table's, which the key's softmax
    working writes its exponentials with.  Its words in the language."""
    _ = language.gettext
    for _prefix, solution in question.worked:
        for step_def, known in zip(solution.plan, solution.steps):
            if known is step:
                inputs = [steps.symbol(name, head) for name in step_def.inputs
                          if "." not in name or name.startswith("kv")]  # a shared kv1.K: K_1
                row, column = _("row"), _("column")
                symbols = dict(zip("ab", inputs), row=column if step_def.transpose_left else row,
                               col=row if step_def.transpose else column, mask=solution.spec.mask)
                return Hint(ops.op(step_def.op).hint.how, symbols,
                            first_working(step, step_def, head, decimals, table_places, language))
    return Hint(MASK if step.kind == "mask" else PICKED)  # M asked itself, or a matrix read off


def pick_hint(pick, source_symbol: str, symbol: str, language: Language = ENGLISH) -> Hint:
    """How a matrix read off another is read: which rows and columns of ``source_symbol``, in
    what order (a head's block of Q's columns; A′ = PAPᵀ, both rows and columns swapped).
    Its words are the language's, the numbers put in before it is printed as prose."""
    _ = language.gettext
    moved_rows = list(pick.rows) != list(range(len(pick.rows)))
    moved_columns = list(pick.columns) != list(range(len(pick.columns)))
    listed = language.list_separator.join
    values = {"symbol": source_symbol, "rows": listed(str(i + 1) for i in pick.rows),
              "columns": listed(str(i + 1) for i in pick.columns)}
    if not moved_rows:
        if not _consecutive(pick.columns):
            how = _("the columns of $%(symbol)s$ in the order %(columns)s.")
        elif len(pick.columns) > 1:
            how = _("columns %(first)s to %(last)s of $%(symbol)s$, every row.")
        else:
            how = _("column %(first)s of $%(symbol)s$, every row.")
        values.update(first=pick.columns[0] + 1, last=pick.columns[-1] + 1)
    elif moved_columns:
        how = _("the rows of $%(symbol)s$ in the order %(rows)s, and its columns in the order "
                "%(columns)s.")
    else:
        how = _("the rows of $%(symbol)s$ in the order %(rows)s; each row keeps its entries.")
    return Hint(_raw(how % values), title=f"${symbol}$")


def _raw(prose: str) -> str:
    """Prose already in the language and with its values in: its braces (a symbol's S_{1})
    kept from being read as template code when it is printed."""
    return ("{% raw %}" + prose + "{% endraw %}" if any(m in prose for m in ("{{", "{%", "{#"))
            else prose)


def _consecutive(indices) -> bool:
    return list(indices) == list(range(indices[0], indices[0] + len(indices)))


def first_working(step, step_def, head: int | None, decimals: int,
                  table_places: int | None = None, language: Language = ENGLISH) -> str:
    """The working of a step's first entry (or row), with the key's numbers, by its op's hint
    face; where they carry more places than the page shows, the hint says so beside them."""
    _ = language.gettext
    computed_by = ops.registered().get(step.kind)
    hint = computed_by.hint if computed_by else NO_HINT
    if not step.working or hint.first is None:
        return ""
    places = fmt.working_places(step.working[0], decimals)
    working = hint.first(FirstEntry(step, step_def, head, decimals, places, table_places, language))
    if working and places > decimals and hint.says_places:
        working += " " + _("(The key works from %(places)s places, more than the %(decimals)s "
                           "shown, so that the line adds up; from the shown values you may "
                           "differ in the last digit, which is marked right.)") % {
                               "places": places, "decimals": decimals}
    return working


@dataclass(frozen=True)
class FirstEntry:
    """What a hint's first line of working is written from: the step, the plan's step that
    computed it, its head, the page's decimals, the places the key's line gives its operands,
    and the no-calculator table's places (its softmax rows' exponentials), or None."""

    step: object
    step_def: object
    head: int | None
    decimals: int
    places: int
    table_places: int | None
    language: Language = ENGLISH  # the hint's words and decimal mark

    def _(self, message: str, **values) -> str:
        """A message in the hint's language, its values in."""
        return self.language.gettext(message) % values if values else self.language.gettext(message)

    @property
    def line(self):
        """The working of the step's first entry (or row)."""
        return self.step.working[0]

    @property
    def entry(self) -> str:
        """The line's own place: a row question's one row is row 3 of S̃, not row 1."""
        line, comma = self.line, self.language.list_separator.strip()  # [1;2]: no number 1,2
        return (f"{fmt.plain_entry_symbol(self.step.name, self.head)}"
                f"[{line.row + 1}{comma}{getattr(line, 'col', 0) + 1}]")

    def text(self, num) -> str:
        """An operand, as the key's line writes it (with the language's decimal mark)."""
        return self.language.number(fmt.decimal_text(num, self.places))

    def result(self, num) -> str:
        """A result, to the shown decimals: "= 0.5", or "≈ 0.3333"."""
        sign = "=" if fmt.is_exact_at(num, self.decimals) else "≈"
        return f"{sign} {self.language.number(fmt.decimal_text(num, self.decimals))}"


# The first-entry faces of the built-in ops' hints (``builtin_ops``).
def product_first(w: FirstEntry) -> str:
    """The product's first entry: its sum of products, and the result."""
    return f"{w.entry} = {products(w.line.pairs, w.text)} {w.result(w.line.result)}."


def scaling_first(w: FirstEntry) -> str:
    """The scaling's first entry: the score divided by sqrt(d_k), or times the factor, and the
    result."""
    line = w.line
    how = (f"{w.text(line.score)} / {w.text(line.divisor)}" if line.divisor
           else f"{w.text(line.factor)} · {fmt.parenthesized(w.text(line.score))}")
    return f"{w.entry} = {how} {w.result(line.result)}."


def softmax_first(w: FirstEntry) -> str:
    """The softmax's first row: its exponentials, their sum and the weights, at the table's places
    where there is one."""
    return softmax_row(w.line, w.table_places or w.places, w.language)


def softmax_backward_first(w: FirstEntry) -> str:
    """The softmax backward pass's first row: its dot product a·g, the row-sum term."""
    pairs = zip(w.line.weights, w.line.upstream)
    return w._("the dot product %(products)s %(result)s.", products=products(pairs, w.text),
               result=w.result(w.line.dot))


def jacobian_first(w: FirstEntry) -> str:
    """The softmax Jacobian's first entry, on the diagonal: a_1·(1 - a_1)."""
    line = w.line
    return f"{w.entry} = {w.text(line.a_i)}·(1 - {w.text(line.a_j)}) {w.result(line.result)}."


def blend_first(w: FirstEntry) -> str:
    """The blend's first row: the weighted sum of the value rows, written with the rows' names."""
    rows = fmt.plain_entry_symbol(w.step_def.inputs[1], w.head)
    terms = [f"{w.text(weight)}·({w._('row %(row)s of %(symbol)s', row=k + 1, symbol=rows)})"
             for k, weight in enumerate(w.line.weights)]
    return (w._("row %(row)s of %(symbol)s", row=w.line.row + 1,
                symbol=fmt.plain_entry_symbol(w.step.name, w.head))
            + " = " + " + ".join(terms) + ".")


def products(pairs, text) -> str:
    """a·b + c·(-d) + ...: a dot product as the key writes it."""
    return " + ".join((text(a) if k == 0 else fmt.parenthesized(text(a))) + "·"
                      + fmt.parenthesized(text(b)) for k, (a, b) in enumerate(pairs))


def softmax_row(line, places: int, language: Language = ENGLISH) -> str:
    """A row's exponentials and their sum, as the key writes them: the sum is the sum of the
    exponentials as printed; in the language (its words, its decimal mark)."""
    _, number = language.gettext, language.number
    powers = language.list_separator.join(
        _("masked → 0") if x is None else
        f"e^{number(fmt.decimal_text(x, fmt.exponent_places(x, e, places)))} "
        f"{'=' if fmt.is_exact_at(e, places) else '≈'} {number(fmt.decimal_text(e, places))}"
        for x, e in zip(line.inputs, line.exponentials))
    return _("Row %(row)s: %(powers)s; sum = %(sum)s.") % {
        "row": line.row + 1, "powers": powers,
        "sum": number(fmt.printed_sum(line.exponentials, places))}
