"""The question-type registry: each type of question described once, as one unit.

A ``QuestionType`` holds all that makes a type: its builder (spec -> Question), its
prose (title, statement, prompts and key explanations, see ``prose``: given here, or as
files of a template folder, kinds/<type>/title.j2, ...), its parameters
(``Param``: the keys of a spec file it reads, as PrairieLearn's ``data["params"]``: each
read, checked and written back to problems.json by its own functions, and held in the
spec's ``params``), the specs it refuses, and how a random problem of its type is drawn.
Each built-in type is a module of this package and registers itself; a new type is one
``register`` call (a test defines one in its own file; an installed plugin registers its
own, see ``running.plugins``), and needs no edit anywhere else.

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
class Param:
    """A parameter of a question type: a key of a spec file (and of problems.json's spec),
    held in ``ProblemSpec.params`` under its name as the type works with it (a row from 0)."""

    name: str
    # (value as a file writes it, spec, where) -> the value held; a bad value raises the
    # one-line SpecError the file's reader shows ("{where}: row must be ...")
    read: Callable
    write: Callable = _same  # the value held -> as problems.json writes it (``read`` reads it back)
    default: object = None  # read as if the file wrote it when it does not; None: left unset


@dataclass(frozen=True)
class QuestionType:
    """A question type as one unit: how it builds a question from a spec, its prose, its own spec
    keys, how its problems are drawn, and how they get shorter to fit a budget."""

    name: str
    build: Callable  # ProblemSpec -> Question
    # Its prose (each piece may instead be a file of its template folder, kinds/<name>/...,
    # see ``prose.TypeProse``; a teacher's --templates may reword any piece so):
    title: str = ""  # the heading of a problem without a title of its own
    statement: tuple[str, ...] = ()  # prose blocks, and GIVEN / SHOWN where matrices go
    prompts: Mapping[str, str] = field(default_factory=dict)  # a part's task -> what it asks
    keys: Mapping[str, str] = field(default_factory=dict)  # a part's task -> said before its answer
    after: Mapping[str, str] = field(default_factory=dict)  # a part's task -> said after its answer
    choice: str = ""  # prose: one choice of a multiple-choice part (``choice`` is at hand)
    params: tuple[Param, ...] = ()  # its own keys of a spec file, in the order problems.json writes them
    check: Callable = _nothing  # spec -> why this type cannot ask about it, or None
    matrices: tuple[str, ...] = ()  # given matrices it takes besides attention's own (W_O)
    may_take: tuple[str, ...] = ()  # given matrices it reads where a file gives them (its check
                                    # says which it needs: the KV cache, or the tokens before)
    heads: int = 0  # attention heads (a heads question's d_k splits between them), unless drawn otherwise
    own_widths: bool = False  # its K may be narrower than its Q (shared heads): its check checks widths
    min_tokens: int = 1
    # Its problems give attention's matrices (X and the weights, or Q, K, V); False: a configuration
    # alone, its params (a counting question's layer), and no matrix at all.
    matrices_given: bool = True
    draw_options: Callable = _same  # DrawOptions -> what its problems are drawn with
    # (rng, candidate, decimals) -> its params' values, drawn together (a row and its places),
    # as ``params`` holds them, and "matrices" its own given ones (dO); None draws again
    draw_params: Callable = lambda rng, candidate, decimals: {}
    not_drawable: Callable = _nothing  # DrawOptions -> why it cannot be drawn so, or None
    in_default_mix: bool = True  # drawn when --types is not given (else only when asked for)
    # Sizing a paper to a budget (``budget``): how this type's problems get shorter, in the
    # order tried: "given" (Q, K and V given instead of X and the weights), "focus" (its lean
    # part set, ``focus``), "tokens" (down to the preset's fewest), "fewer-tokens" (down to
    # two), "d_v", "d_k", "d_model" (down to two).
    shrinks: tuple[str, ...] = ("tokens", "fewer-tokens")
    # (rng, candidate, params, decimals) -> the params that ask the lean part set (one head
    # worked, the other given; one row of a gradient), or None to draw again
    focus: Callable | None = None
    # Its own draw choices (params) that every version of a problem shares, as its shape:
    # draw_params takes each as a keyword and keeps to it (the mistake; the choice parts); "version"
    # among them is the version drawn (1, 2, ...), for a type whose versions differ by design.
    shared: tuple[str, ...] = ()
    # A draw choice its problems take in turn through a set unless a form keeps one: (the param,
    # its values); a set's k-th problem of the type takes value k (positions' encodings).
    in_turn: tuple[str, tuple] | None = None
    # (rng, candidate, params, decimals) -> the params it adds without a calculator (the
    # lean part set, a row of weights given to two places), or None to draw again
    no_calculator: Callable | None = None


TYPES: dict[str, QuestionType] = {}
# The built-in types in their declared order: every list of types gives them so, and the
# default mix draws those of them it takes (``in_default_mix``) in turn.  A type registered
# besides them (a plugin's, a test's) comes after them, in the order registered.
BUILT_IN = ("full", "row", "mistake", "permute", "masked", "heads", "concept", "backward",
            "softmax-jacobian", "cross", "kv-cache", "grouped", "counting", "positions", "block",
            "why-scale")


def register(kind: QuestionType) -> QuestionType:
    """Add a question type to ``TYPES`` under its name (a plugin's, a test's) and give it back."""
    TYPES[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Take the type ``name`` out of ``TYPES``, if it is there."""
    TYPES.pop(name, None)


def type_names() -> tuple[str, ...]:
    """The registered types in their declared order: the built-in ones, then the others."""
    registered = list(TYPES)
    return tuple(sorted(registered, key=lambda name: (
        BUILT_IN.index(name) if name in BUILT_IN else len(BUILT_IN), registered.index(name))))


def default_mix() -> tuple[str, ...]:
    """The types a set draws in turn when the teacher names none."""
    return tuple(name for name in type_names() if TYPES[name].in_default_mix)


def spec_keys() -> dict[str, tuple[str, ...]]:
    """Each type's own spec key (a param's name), with the types that read it."""
    keys: dict[str, tuple[str, ...]] = {}
    for name in type_names():
        for param in TYPES[name].params:
            keys[param.name] = keys.get(param.name, ()) + (name,)
    return keys


def declares(kind_name: str, param: str) -> bool:
    """Whether the type (registered) has the parameter ``param``."""
    kind = TYPES.get(kind_name)
    return kind is not None and any(p.name == param for p in kind.params)
