"""The question-type registry: each type of question described once, as one unit.

A ``QuestionType`` holds all that makes a type: its builder (spec -> Question), its
prose (title, statement, prompts and key explanations, see ``prose``), the spec
keys it reads and the specs it refuses, and how a random problem of its type is
drawn.  Each built-in type is a module of this package and registers itself; a new
type is one ``register`` call (a test defines one in its own file).

This module imports nothing of the project's, so that the spec reader and the
sampler can consult the registry below the types themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

# Blocks of a statement that are not prose: the given matrices, and the question's own
# matrices to show (a flawed worked solution; the weights before a swap).
GIVEN = "@given"
SHOWN = "@shown"


def _nothing(*_):
    return None


def _same(value, *_):
    return value


@dataclass(frozen=True)
class QuestionType:
    name: str
    build: Callable  # ProblemSpec -> Question
    title: str  # prose: the heading of a problem without a title of its own
    statement: tuple[str, ...]  # prose blocks, and GIVEN / SHOWN where matrices go
    prompts: Mapping[str, str] = field(default_factory=dict)  # a part's task -> what it asks
    keys: Mapping[str, str] = field(default_factory=dict)  # a part's task -> said before its answer
    after: Mapping[str, str] = field(default_factory=dict)  # a part's task -> said after its answer
    choice: str = ""  # prose: one choice of a multiple-choice part (``choice`` is at hand)
    spec_keys: tuple[str, ...] = ()  # the keys of a spec file it reads (row, swap, mistake)
    read: Callable = _same  # (spec, record, where) -> the spec with those keys read
    check: Callable = _nothing  # spec -> why this type cannot ask about it, or None
    matrices: tuple[str, ...] = ()  # given matrices it takes besides attention's own (W_O)
    heads: int = 0  # attention heads (a heads question's d_k splits between them)
    min_tokens: int = 1
    draw_options: Callable = _same  # DrawOptions -> what its problems are drawn with
    draw_params: Callable = lambda rng, candidate, decimals: {}  # its own choices; None redraws
    not_drawable: Callable = _nothing  # DrawOptions -> why it cannot be drawn so, or None
    in_default_mix: bool = True  # drawn when --types is not given (else only when asked for)
    # Sizing a paper to a budget (``budget``): how this type's problems get shorter, in the
    # order tried: "given" (Q, K and V given instead of X and the weights), "focus" (its lean
    # part set, ``focus``), "tokens" (down to the preset's fewest), "fewer-tokens" (down to
    # two), "d_v", "d_k", "d_model" (down to two).
    shrinks: tuple[str, ...] = ("tokens", "fewer-tokens")
    # (rng, candidate, params, decimals) -> the spec keys that ask the lean part set (one head
    # worked, the other given; one row of a gradient), or None to draw again
    focus: Callable | None = None
    # Its own draw choices (spec keys) that every version of a problem shares, as its shape:
    # draw_params takes each as a keyword and keeps to it (the mistake; the choice parts).
    shared: tuple[str, ...] = ()
    # (rng, candidate, params, decimals) -> the spec keys it adds without a calculator (the
    # lean part set, a row of weights given to two places), or None to draw again
    no_calculator: Callable | None = None


TYPES: dict[str, QuestionType] = {}


def register(kind: QuestionType) -> QuestionType:
    TYPES[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    TYPES.pop(name, None)


def type_names() -> tuple[str, ...]:
    """The registered types, in the order of the default mix."""
    return tuple(TYPES)


def default_mix() -> tuple[str, ...]:
    """The types a set draws in turn when the teacher names none."""
    return tuple(name for name, kind in TYPES.items() if kind.in_default_mix)


def spec_keys() -> dict[str, tuple[str, ...]]:
    """Each type's own spec key, with the types that read it."""
    keys: dict[str, tuple[str, ...]] = {}
    for kind in TYPES.values():
        for key in kind.spec_keys:
            keys[key] = keys.get(key, ()) + (kind.name,)
    return keys
