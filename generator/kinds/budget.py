"""Stage 1 helper: a paper sized to a budget of minutes or marks, with every listed type on it.

Each problem of the paper climbs down a ladder of forms (``sampling.Form``), fullest first:
the preset's size, then the shorter forms its type allows, in the order its
``QuestionType.shrinks`` gives (Q, K and V given instead of X and the weights; fewer tokens;
its lean part set, such as one head worked and the other given, or dV and one row of dS;
narrower widths).  While the paper is over budget, the problem that takes longest takes its
next shorter form.  When every problem is as short as it gets and the paper is still over,
one line says the least the list needs: a listed type is never left out.

A form is measured by drawing the problem with it and solving it: the estimate follows from
the form alone (``paper.SECONDS`` counts what a student writes, by the shapes), and the draw
fixes what else a version could vary by (the mask of a mixed set, the type's own choices such
as the mistake), so that every version of a problem, drawn with its form, is as long and
worth as much as the one measured.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, NamedTuple

from generator.kinds import TYPES
from generator.kinds.sampling import (
    DrawOptions,
    Form,
    draw_problem,
    form_of,
    options_for,
    why_not_drawable,
)
from generator.maths.spec import SpecError
from generator.rendering.paper import ExamProblem

SMALLEST = 2  # the fewest tokens, and the narrowest width, a sized problem keeps
# The longest a problem of a sized paper takes, whatever the budget: courses examine these
# topics in problems of 8 to 15 minutes (a longer paper has more of them).
LONGEST = {"minutes": 15}
WIDTHS = ("d_model", "d_k", "d_v")


class Budget(NamedTuple):
    """The budget a paper is sized to: so many minutes (with a calculator or without) or so many
    marks."""

    name: str  # "minutes" or "marks"
    limit: int
    calculator: bool = True  # minutes at the rates with a calculator, or without (paper.SECONDS)

    def cost(self, problem: ExamProblem) -> int:
        """What one problem costs of the budget: its minutes or its marks."""
        return problem.minutes if self.name == "minutes" else problem.marks


def fit(budget: Budget, types: tuple[str, ...], options: DrawOptions, seed: int,
        fixed: frozenset[str], solve: Callable,
        listed: bool = True) -> tuple[tuple[str, ...], list[Form]]:
    """The paper's types (the list, repeated while it fits whole at its fullest) and each
    problem's form.  ``fixed`` names the sizes the teacher set (tokens, d_model, d_k, d_v),
    which stay; ``solve`` builds and checks a question from its spec.  A mix the teacher did
    not list (``listed`` False) keeps as many of its first types as fit at their shortest."""
    measure = Measure(budget, options, seed, solve)

    def ladders_for(kinds: tuple[str, ...]) -> list[Ladder]:
        return [Ladder(kind, index, forms(kind, options, fixed), measure)
                for index, kind in enumerate(kinds, start=1)]

    ladders = ladders_for(types)
    if not listed:
        least = [ladder.least() for ladder in ladders]
        kept = next((k for k in range(len(types), 0, -1) if sum(least[:k]) <= budget.limit), 1)
        types, ladders = types[:kept], ladders[:kept]
    at_most(ladders, LONGEST.get(budget.name))
    whole = sum(ladder.cost for ladder in ladders)
    repeats = max(1, min(budget.limit // max(1, whole), 2000 // len(types)))
    if repeats > 1:
        ladders = ladders_for(types * repeats)
        at_most(ladders, LONGEST.get(budget.name))
    while sum(ladder.cost for ladder in ladders) > budget.limit:
        longest = max((ladder for ladder in ladders if not ladder.shortest), key=lambda ladder: ladder.cost,
                      default=None)
        if longest is None:
            raise SpecError(too_little(budget, ladders))
        longest.shorten()
    return types * repeats, [ladder.form for ladder in ladders]


def at_most(ladders: list["Ladder"], longest: int | None) -> None:
    """Every problem shortened until it takes no more than ``longest`` (or is as short as it
    gets)."""
    for ladder in ladders if longest else ():
        while ladder.cost > longest and not ladder.shortest:
            ladder.shorten()


def too_little(budget: Budget, ladders: list["Ladder"]) -> str:
    """One line: the least the listed problems need, each at its shortest."""
    least = sum(ladder.cost for ladder in ladders)
    if len(ladders) == 1:
        return (f"--{budget.name} {budget.limit}: a {ladders[0].kind} problem needs at least "
                f"{least} {budget.name} at its shortest; allow --{budget.name} {least}")
    each = ", ".join(f"{ladder.kind} {ladder.cost}" for ladder in ladders)
    return (f"--{budget.name} {budget.limit}: the {len(ladders)} problems listed need at least "
            f"{least} {budget.name} at their shortest ({each}); allow --{budget.name} {least}, "
            f"or list fewer types")


def forms(kind: str, options: DrawOptions, fixed: frozenset[str]) -> list[Form]:
    """A type's ladder: the preset's size (the most tokens it allows), then each shorter form
    its ``shrinks`` allow, in order, each drawable under the options."""
    drawn = options_for(kind, options)
    ladder = [Form(tokens=drawn.tokens[1], d_model=drawn.d_model, d_k=drawn.d_k, d_v=drawn.d_v)]
    for move in TYPES[kind].shrinks:
        for form in _shorter(move, ladder[-1], kind, drawn, fixed):
            if why_not_drawable(kind, form.options(options)) is None:
                ladder.append(form)
    return ladder


def _shorter(move: str, form: Form, kind: str, options: DrawOptions, fixed: frozenset[str]):
    """The forms one move makes, one after the other (tokens go down one at a time)."""
    fewest = max(SMALLEST, TYPES[kind].min_tokens)
    if move == "given" and form.given == "X":
        yield replace(form, given="QKV")
    elif move == "focus" and TYPES[kind].focus is not None and not form.focus:
        yield replace(form, focus=True)
    elif move in ("tokens", "fewer-tokens") and not (move == "fewer-tokens" and "tokens" in fixed):
        floor = max(fewest, options.tokens[0]) if move == "tokens" else fewest
        for tokens in range(form.tokens - 1, floor - 1, -1):
            yield replace(form, tokens=tokens)
    elif move in WIDTHS and move not in fixed and options.weights != "identity":
        narrowest = max(SMALLEST, form.tokens) if (move == "d_model" and
                                                   options.embeddings == "one-hot") else SMALLEST
        if getattr(form, move) > narrowest:
            yield replace(form, **{move: narrowest})


class Measure:
    """A form's cost, by drawing problem ``index`` of the first version with it and solving it;
    None where no such problem can be drawn."""

    def __init__(self, budget: Budget, options: DrawOptions, seed: int, solve: Callable):
        self.budget, self.options, self.seed, self.solve = budget, options, seed, solve

    def __call__(self, kind: str, index: int, form: Form) -> tuple[Form, int] | None:
        """Problem ``index`` of type ``kind`` drawn in ``form``: the form it was drawn in and what
        it costs, or None when it cannot be drawn so."""
        try:
            spec, _ = draw_problem(self.options, self.seed, 1, index, kind, form)
        except SpecError:
            return None
        problem = ExamProblem(index, self.solve(spec), self.budget.calculator)
        return form_of(spec, form), self.budget.cost(problem)


class Ladder:
    """One problem of the paper on its ladder of forms: where it stands, and what that costs."""

    def __init__(self, kind: str, index: int, ladder: list[Form], measure: Measure):
        self.kind, self.index, self.ladder, self.measure = kind, index, ladder, measure
        self.at, self.shortest = -1, False
        if not self._step_to_next(cheaper_than=None):
            raise SpecError(f"could not draw problem {index} (a {kind} question) in any size; "
                            f"allow more tokens, dimensions or another kind of entries")
        # A mixed set's mask, once drawn, stays: a shorter form is the same problem, smaller.
        self.ladder = [replace(form, mask=self.form.mask) for form in self.ladder]

    def least(self) -> int:
        """What the shortest form that can be drawn costs (the ladder's last, as a rule)."""
        for form in reversed(self.ladder[self.at + 1:]):
            if (measured := self.measure(self.kind, self.index, form)) is not None:
                return min(measured[1], self.cost)
        return self.cost

    def shorten(self) -> None:
        """Step down to the next cheaper form; ``shortest`` once there is none."""
        self.shortest = not self._step_to_next(cheaper_than=self.cost)

    def _step_to_next(self, cheaper_than: int | None) -> bool:
        """Down to the next form that can be drawn (and costs less than ``cheaper_than``)."""
        for at in range(self.at + 1, len(self.ladder)):
            measured = self.measure(self.kind, self.index, self.ladder[at])
            if measured is not None and (cheaper_than is None or measured[1] < cheaper_than):
                self.at, (self.form, self.cost) = at, measured
                return True
        return False
