"""Stage 1, random specs: draw exam-worthy problems from an explicit seed.

A draw is fixed by its ``DrawOptions`` (a difficulty preset, possibly with
overrides), the set seed, the version and the problem's index.  Problem ``index``
of a set tries candidates seeded (seed, version, index, attempt) for attempt = 0,
1, 2, ... and keeps the first that ``worthiness.is_exam_worthy`` accepts and that
differs from the set's earlier problems, also up to swapping tokens.  So a
problem depends only on the problems before it, and its id (``M42-7``:
difficulty, seed, index; ``M42v3-7`` in version 3) is enough to draw it again
with the same options.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import sympy

from generator.kinds import TYPES
from generator.maths import masks
from generator.maths.spec import MAX_DIMENSION, MAX_TOKENS, ProblemSpec, SpecError
from generator.maths.steps import plan_for
from generator.maths.worthiness import Candidate, is_exam_worthy, scaled_scores_in
from generator.running.exam_key import problem_code, seed_words

EMBEDDINGS = ("one-hot", "integer", "decimal")
WEIGHTS = ("identity", "diagonal", "integer", "decimal")
MASK_CHOICES = ("none", "causal", "padding", "window", "causal+padding", "mixed")
# A drawn padding or window mask needs a key to hide beyond what causal hides, and two keys left.
MASK_MIN_TOKENS = {"padding": 3, "window": 3, "causal+padding": 3}
MAX_SEED = 10**18  # --seed, and the seed in a practice id
MAX_ATTEMPTS = 5000
# A heads question's draws must pass a single head's tests in every head: with one-hot
# 3-dimensional tokens one draw in 500 does, so 5,000 draws ran out about once in 20,000
# problems (a README command failed so).  Draws past the first 5,000 change no problem
# that was drawn before.
HEADS_ATTEMPTS = 10 * MAX_ATTEMPTS
DIAGONAL_ENTRIES = (-2, -1, 1, 2, 3)
# --no-calculator: the exponentials a student may need, printed on the question sheet.
NO_CALCULATOR_EXPONENTS = tuple(sympy.Rational(k, 2) for k in range(-4, 5))  # -2, -1.5, ..., 2
# ... and the d_k whose square root (2) halves whole scores into the table; a d_k of 1, 9 or 16
# keeps scores on the table's steps too, but its small scores seldom pass the draw's checks.
NO_CALCULATOR_DK = 4


@dataclass(frozen=True)
class DrawOptions:
    """What a random problem looks like; the presets below fill it in."""

    difficulty: str
    tokens: tuple[int, int]
    d_model: int
    d_k: int
    d_v: int
    embeddings: str
    weights: str
    mask: str
    decimals: int = 4
    scale: sympy.Expr | None = None  # the scores' factor; None for 1/sqrt(d_k)
    no_calculator: bool = False  # every scaled score one of NO_CALCULATOR_EXPONENTS
    # An exam's secret (exam_key): its draws are seeded from it too and its problems carry
    # opaque codes; empty for a practice set, whose readable ids say how to draw it again.
    secret: bytes = field(default=b"", repr=False)
    # Cross-attention (a type's draw_options set it): the decoder's tokens, fewer than the
    # encoder's ``tokens``, whose queries attend over them; None: self-attention.  Left out of
    # the repr (as ``given``), which an exam's codes are made from: sets drawn before stay.
    queries: tuple[int, int] | None = field(default=None, repr=False)
    given: str = field(default="X", repr=False)  # "X": the embeddings and weights; "QKV": Q, K, V
    # The heads a type's draws split d_k into, as its ``draw_options`` sets them: (h,), or
    # (H_q, H_kv) for grouped queries; () for a single head.  Out of the repr (and so of exam
    # codes): it follows from the other options.
    heads: tuple[int, ...] = field(default=(), repr=False)
    # A later version's mask arguments, the first version's (``Form.mask_args``): its valid
    # lengths and window width, so that every version hides as many keys.  Out of the repr.
    mask_args: tuple | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Form:
    """What one problem of a paper looks like, so that every version of it is alike: its
    tokens, widths and mask (None: as the options say), whether X and the weights or Q, K and
    V are given, whether its type asks its lean part set (``QuestionType.focus``), and the
    type's own choices every version keeps to (``QuestionType.shared``: the mistake, say)."""

    tokens: int | None = None
    d_model: int | None = None
    d_k: int | None = None
    d_v: int | None = None
    mask: str | None = None
    given: str = "X"  # "X": X, W_Q, W_K, W_V (or the options' own); "QKV": Q, K and V
    focus: bool = False
    shared: tuple[tuple[str, object], ...] = ()
    queries: int | None = None  # cross-attention: the decoder's tokens (None: as the options say)
    mask_args: tuple | None = None  # its mask's (valid lengths, window width), as every version's

    def options(self, options: DrawOptions) -> DrawOptions:
        """The draw options of a problem of this form."""
        sizes = {name: getattr(self, name) for name in ("d_model", "d_k", "d_v", "mask")
                 if getattr(self, name) is not None}
        if self.tokens is not None:
            sizes["tokens"] = (self.tokens, self.tokens)
        if self.queries is not None:
            sizes["queries"] = (self.queries, self.queries)
        if self.given == "QKV":
            sizes["given"] = "QKV"
        if self.mask_args is not None:
            sizes["mask_args"] = self.mask_args
        return replace(options, **sizes)


def form_of(spec: ProblemSpec, form: Form | None = None) -> Form:
    """The form a drawn problem has, for every other version of it to keep to."""
    kind = TYPES[spec.question]
    form = form or Form()  # a problem with no matrices (a configuration) keeps the form's tokens
    return replace(form, tokens=spec.n_keys if spec.matrices else form.tokens, mask=spec.mask,
                   queries=spec.n_queries if spec.cross else None,
                   mask_args=(spec.valid, spec.window) if spec.masked else None,
                   shared=tuple((name, spec.params.get(name)) for name in kind.shared))


PRESETS = {
    # the first seed's kind: two one-hot tokens, diagonal weights, d_k = 2
    "easy": DrawOptions("easy", (2, 2), 2, 2, 2, "one-hot", "diagonal", "none"),
    # small integers throughout; d_k = 4 so the scaling (by 2) is exact
    "medium": DrawOptions("medium", (3, 3), 3, 4, 3, "integer", "integer", "none"),
    # the second seed's kind: two-place decimals, 3 to 5 tokens, some masked
    "hard": DrawOptions("hard", (3, 5), 4, 4, 4, "decimal", "decimal", "mixed"),
}


def draw_options(difficulty: str = "medium", decimals: int = 4, **overrides) -> DrawOptions:
    """The preset with every override that is not None; raises SpecError on a bad combination."""
    options = replace(PRESETS[difficulty], decimals=decimals,
                      **{k: v for k, v in overrides.items() if v is not None})
    check_draw_options(options)
    return options


def check_draw_options(options: DrawOptions) -> None:
    """Refuse draw options no problem can be drawn with (tokens or sizes out of bounds, one-hot
    embeddings narrower than the tokens, identity weights of unequal sizes): a SpecError of one
    line."""
    low, high = options.tokens
    if not 1 <= low <= high <= MAX_TOKENS:
        raise SpecError(f"--tokens {low}-{high}: need 1 <= low <= high <= {MAX_TOKENS}")
    for name, option in (("d_model", "--d-model"), ("d_k", "--dk"), ("d_v", "--dv")):
        if not 1 <= getattr(options, name) <= MAX_DIMENSION:
            raise SpecError(f"{option} must be a whole number from 1 to {MAX_DIMENSION}, "
                            f"got {getattr(options, name)}")
    if options.embeddings == "one-hot" and options.d_model < high:
        raise SpecError(f"--embeddings one-hot needs d_model >= the number of tokens "
                        f"(got d_model {options.d_model} for {high} tokens)")
    if options.weights == "identity" and not options.d_model == options.d_k == options.d_v:
        raise SpecError("--weights identity needs d_model = d_k = d_v")


def why_not_drawable(kind: str, options: DrawOptions) -> str | None:
    """Why no problem of this type can be drawn under these options, or None if it can."""
    if options.decimals == 0:
        return "at 0 decimals every attention weight shows as 0 or 1; use --decimals 1 or more"
    if options.no_calculator:
        reason = _why_not_without_a_calculator(kind, options)
        if reason:
            return reason
    if (options.embeddings == "one-hot" and options.weights in ("identity", "diagonal")
            and options.tokens[1] < (least := min(options.d_model, max(options.d_k, options.d_v)))):
        return (f"one-hot tokens times {options.weights} weights leave a column of Q, K or V "
                f"all 0 unless there are at least {least} tokens; use --tokens {least}")
    if options.tokens[1] < TYPES[kind].min_tokens:
        return f"it needs at least {TYPES[kind].min_tokens} tokens"
    mask = options_for(kind, options).mask
    if options.tokens[0] < MASK_MIN_TOKENS.get(mask, 0):
        return (f"a drawn {mask} mask needs at least {MASK_MIN_TOKENS[mask]} tokens (one to hide, "
                f"two to weigh); use --tokens {MASK_MIN_TOKENS[mask]} or more")
    return TYPES[kind].not_drawable(options)


def _why_not_without_a_calculator(kind: str, options: DrawOptions) -> str | None:
    """--no-calculator needs scaled scores that are whole or half numbers: integer entries, and
    a scale that keeps them so (1/sqrt(d_k) with d_k a square, or a rational --scale)."""
    if not TYPES[kind].matrices_given:  # no scores at all: the type's own not_drawable says
        return None
    if "decimal" in (options.embeddings, options.weights):
        return ("--no-calculator needs whole-number entries, not two-place decimals; use "
                "--difficulty medium, or --embeddings integer --weights integer")
    drawn = options_for(kind, options)
    heads = drawn.heads[0] if drawn.heads else TYPES[kind].heads
    d_k = drawn.d_k // heads if heads else options.d_k  # as the type draws it
    if options.scale is None and d_k != NO_CALCULATOR_DK:
        where = "each head's" if heads else "the"
        how_often = "seldom" if math.isqrt(d_k) ** 2 == d_k else "never"
        return (f"--no-calculator: with {where} d_k = {d_k}, scores / sqrt({d_k}) are {how_often} "
                f"in the table; use --dk {NO_CALCULATOR_DK * (heads or 1)}, or --scale 1/2")
    return None


def drawable_types(types: tuple[str, ...], options: DrawOptions,
                   explicit: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    """The types to draw in turn, and those left out with the reason. A type the teacher
    named that cannot be drawn is an error; the default mix just leaves it out."""
    reasons = {kind: why_not_drawable(kind, options) for kind in dict.fromkeys(types)}
    skipped = {kind: reason for kind, reason in reasons.items() if reason}
    if skipped and (explicit or len(skipped) == len(reasons)):
        kind, reason = next(iter(skipped.items()))
        raise SpecError(f"cannot draw {kind} questions with these options: {reason}")
    return tuple(kind for kind in types if kind not in skipped), skipped


def sample_set(options: DrawOptions, seed: int, count: int, version: int = 1,
               types: tuple[str, ...] = ("full",), forms=None) -> list[ProblemSpec]:
    """Problems 1..count of one version of a set, each distinct from those before it.

    Problem i is a question of type ``types[(i - 1) % len(types)]``, of the form ``forms[i - 1]``
    where forms are given (a paper sized to a budget); without, a later version's problem i
    takes the form of the first version's, so that every version is as long and worth as much.
    """
    if forms is None and version > 1:
        forms = first_version_forms(options, seed, count, types)
    seen: set = set()
    specs = []
    for index in range(1, count + 1):
        kind = types[(index - 1) % len(types)]
        form = forms[index - 1] if forms else None
        spec, identity = draw_problem(options, seed, version, index, kind, form, seen,
                                      turn=(index - 1) // len(types))
        seen.add(identity)
        specs.append(spec)
    return specs


@lru_cache(maxsize=4)  # a class's versions all ask for the first version's forms
def first_version_forms(options: DrawOptions, seed: int, count: int,
                        types: tuple[str, ...]) -> tuple[Form, ...]:
    """The forms of the first version's problems, which every other version of a class draws its
    problems in."""
    return tuple(form_of(spec) for spec in sample_set(options, seed, count, 1, types))


def draw_problem(options: DrawOptions, seed: int, version: int, index: int, kind: str,
                 form: Form | None = None, seen=frozenset(),
                 turn: int | None = None) -> tuple[ProblemSpec, tuple]:
    """Problem ``index`` of a version, a question of type ``kind`` (of ``form``), and what
    makes it distinct from the set's others; ``turn``: how many of the type came before it
    (its ``in_turn`` choice), None to draw that choice too."""
    drawn_with = form.options(options) if form else options
    drawn = options_for(kind, drawn_with)
    candidate, params = _first_worthy(drawn, seed, version, index, seen, kind, form, turn)
    spec = candidate_spec(candidate, problem_id(drawn_with, seed, version, index, kind),
                          None if options.secret else seed)
    extra = params.pop("matrices", {})  # a type's own given matrix, such as dO
    undeclared = set(params) - {param.name for param in TYPES[kind].params}
    if undeclared:  # a fault of the type's: problems.json would not record it, nor --record read it
        raise TypeError(f"type {kind} draws {', '.join(sorted(undeclared))}, not among its params")
    spec = replace(spec, question=kind, number=index, scale=options.scale,
                   matrices={**spec.matrices, **extra}, params=params)
    if not TYPES[kind].matrices_given:  # a configuration alone: no matrix, mask nor scale of the candidate's
        spec = replace(spec, matrices=extra, mask="none", valid=None, window=None, scale=None)
    return (projections_given(spec) if drawn.given == "QKV" else spec), candidate.identity


def projections_drawn(candidate: Candidate) -> Candidate:
    """A candidate whose Q, K and V are given: X W_Q, X W_K, X W_V rounded to the two places of
    the draw (a product of two-place decimals has four, more than a sheet may print of a given
    matrix), held as X = I and W = those, so that every check and choice of the draw is made
    on the numbers the sheet prints."""
    def rounded(x, w):
        return np.round(x @ w, 2)

    x_enc = candidate.x if candidate.x_enc is None else candidate.x_enc  # keys' and values' tokens
    return replace(candidate, x=np.eye(len(candidate.x)), w_q=rounded(candidate.x, candidate.w_q),
                   w_k=rounded(x_enc, candidate.w_k), w_v=rounded(x_enc, candidate.w_v),
                   x_enc=None if candidate.x_enc is None else np.eye(len(x_enc)))


def projections_given(spec: ProblemSpec) -> ProblemSpec:
    """The problem with Q = XW_Q, K = XW_K and V = XW_V given instead of X and the weights
    (in cross-attention Q = X_dec W_Q, K = X_enc W_K, V = X_enc W_V, as its plan routes them;
    a type's own matrices, W_O or dO, stay)."""
    def product(left, right):
        return tuple(tuple(sympy.Add(*(a * b for a, b in zip(row, column)))
                           for column in zip(*right)) for row in left)

    projections = {step.name: step for step in plan_for(spec) if step.name in ("Q", "K", "V")}
    matrices = {name: product(*(spec.matrices[i] for i in projections[name].inputs)) for name in "QKV"}
    matrices.update((name, m) for name, m in spec.matrices.items()
                    if name not in ("X", "X_dec", "X_enc", "W_Q", "W_K", "W_V"))
    return replace(spec, matrices=matrices)


def sample_problem(options: DrawOptions, problem: str,
                   types: tuple[str, ...] = ("full",)) -> ProblemSpec:
    """The problem with this id, drawn again (the set's earlier problems decide its redraws)."""
    seed, version, index = parse_problem_id(problem, options)
    return sample_set(options, seed, index, version, types)[-1]


def options_for(kind: str, options: DrawOptions) -> DrawOptions:
    """What the question type needs of its problems: a mask or none, heads that split evenly."""
    return TYPES[kind].draw_options(options)


def problem_id(options: DrawOptions, seed: int, version: int, index: int, kind: str = "full") -> str:
    """M42-7 (problem 7 of the medium set drawn with seed 42; M42v3-7 in version 3); for an
    exam, an opaque code of all that drew it, which only the teacher's record maps back."""
    letter = options.difficulty[0].upper()
    readable = f"{letter}{seed}-{index}" if version == 1 else f"{letter}{seed}v{version}-{index}"
    if not options.secret:
        return readable
    return problem_code(options.secret, f"{readable}:{kind}:{replace(options, secret=b'')!r}")


PROBLEM_ID = re.compile(r"^([EMH])(\d+)(?:v(\d+))?-(\d+)$")


def parse_problem_id(text: str, options: DrawOptions) -> tuple[int, int, int]:
    """A --problem id (M42-7, H42v3-7) as (seed, version, index), checked against the difficulty and
    the bounds; a SpecError of one line when it is not one."""
    match = PROBLEM_ID.match(text.strip())
    if not match:
        raise SpecError(f"--problem {_short(text)!r}: expected an id such as M42-7 or H42v3-7")
    letter, seed, version, index = match.groups()
    text = _short(text)
    if letter != options.difficulty[0].upper():
        raise SpecError(f"--problem {text}: drawn at another difficulty; add --difficulty "
                        f"{next(d for d in PRESETS if d[0].upper() == letter)}")
    if not 1 <= _whole(index) <= 2000:
        raise SpecError(f"--problem {text}: the problem number must be between 1 and 2000")
    if version is not None and not 1 <= _whole(version) <= 500:
        raise SpecError(f"--problem {text}: the version must be between 1 and 500")
    if _whole(seed) > MAX_SEED:
        raise SpecError(f"--problem {text}: the seed must be between 0 and {MAX_SEED}")
    return int(seed), int(version or 1), int(index)


def _whole(digits: str) -> int:
    """Digits as a number; too many to be any id's (Python converts at most 4300) as one
    past every bound."""
    return int(digits) if len(digits) <= 30 else 10**30


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 40 else text[:30] + "…"


def difficulty_of(problem: str) -> str | None:
    """The preset an id was drawn at (its first letter), so --problem needs no --difficulty."""
    match = PROBLEM_ID.match(problem.strip())
    return next((d for d in PRESETS if match and d[0].upper() == match.group(1)), None)


def _first_worthy(options, seed, version, index, seen, kind, form=None,
                  turn=None) -> tuple[Candidate, dict]:
    """The first worthy candidate, and its type's own choices: kept to a form's shared choices
    (else the type's choice in turn), and asking the type's lean part set where the form says so."""
    attempts = HEADS_ATTEMPTS if TYPES[kind].heads else MAX_ATTEMPTS
    shared = dict(form.shared) if form else {}
    if TYPES[kind].in_turn and turn is not None and shared.get(TYPES[kind].in_turn[0]) is None:
        name, values = TYPES[kind].in_turn
        shared[name] = values[turn % len(values)]
    if "version" in shared:  # a type that tells its versions apart (counting: the first keeps its own)
        shared["version"] = version
    for attempt in range(attempts):
        rng = np.random.default_rng([*seed_words(options.secret), seed, version, index, attempt])
        candidate = draw_candidate(rng, options, with_output_projection="W_O" in TYPES[kind].matrices)
        if _keys(candidate) < TYPES[kind].min_tokens:  # --tokens 1-5 for a type of 2 or more
            continue
        if options.given == "QKV":
            candidate = projections_drawn(candidate)
        if candidate.identity in seen or not is_exam_worthy(candidate, options.difficulty,
                                                             options.decimals):
            continue
        if options.no_calculator and TYPES[kind].matrices_given and not scaled_scores_in(
                candidate, NO_CALCULATOR_EXPONENTS, options.heads[0] if options.heads else TYPES[kind].heads):
            continue
        params = TYPES[kind].draw_params(rng, candidate, options.decimals, **shared)
        if params is not None and form and form.focus:
            focus = TYPES[kind].focus(rng, candidate, params, options.decimals)
            params = None if focus is None else {**params, **focus}
        if params is not None and options.no_calculator and TYPES[kind].no_calculator:
            short = TYPES[kind].no_calculator(rng, candidate, params, options.decimals)
            params = None if short is None else {**params, **short}
        if params is not None:
            return candidate, params
    raise SpecError(f"could not draw problem {index} (a {kind} question): no new exam-worthy "
                    f"problem in {attempts} draws (these options may allow fewer distinct "
                    f"problems than --count); allow more tokens, dimensions or another kind "
                    f"of entries")


def draw_candidate(rng: np.random.Generator, options: DrawOptions,
                   with_output_projection: bool = False) -> Candidate:
    """One candidate problem drawn from ``rng``: its tokens, embeddings and weights of the options'
    kinds and sizes, its mask (a mixed set draws one) and, when asked, W_O."""
    tokens = int(rng.integers(options.tokens[0], options.tokens[1] + 1))
    x = _embeddings(rng, options.embeddings, tokens, options.d_model)
    x_enc = None
    if options.queries is not None:  # cross-attention: x the encoder's tokens, then the decoder's
        x_enc, x = x, _embeddings(rng, options.embeddings, _queries(rng, options.queries, tokens),
                                  options.d_model)
    w_q, w_k, w_v = (_weights(rng, options.weights, options.d_model, d)
                     for d in (options.d_k, options.d_k, options.d_v))
    mask = _mask_kind(rng, options.mask, tokens)
    w_o = _weights(rng, options.weights, options.d_v, options.d_model) if with_output_projection else None
    scale = None if options.scale is None else float(options.scale)
    valid, window = options.mask_args if options.mask_args and mask == options.mask else (
        _mask_arguments(rng, mask, len(x), tokens))
    return Candidate(x, w_q, w_k, w_v, mask, w_o, scale, x_enc=x_enc, valid=valid, window=window,
                     heads=options.heads, difficulty=options.difficulty)


def _keys(candidate: Candidate) -> int:
    """The candidate's tokens (the encoder's, in cross-attention): what --tokens draws."""
    return len(candidate.x if candidate.x_enc is None else candidate.x_enc)


def _queries(rng, queries: tuple[int, int], keys: int) -> int:
    """The decoder's tokens, drawn from ``queries`` and fewer than the encoder's ``keys`` (at
    least 1): the queries and the keys then always differ in number, as the key tells them apart."""
    high = max(1, min(queries[1], keys - 1))
    return int(rng.integers(min(queries[0], high), high + 1))


def _mask_kind(rng: np.random.Generator, choice: str, tokens: int) -> str:
    """The mask of one problem: the option's; a mixed set's none or causal, as it always drew,
    then (a further draw, where the tokens allow) any kind in place of causal; "any" (a
    masked question of a mixed set) every kind but none."""
    if choice == "none-or-causal":  # a backward question of a mixed set
        return "causal" if rng.integers(2) else "none"
    if choice == "mixed" and not rng.integers(2):
        return "none"
    if choice not in ("mixed", "any"):
        return choice
    fits = [kind for kind in masks.DRAWN if tokens >= MASK_MIN_TOKENS.get(kind, 2)]
    if not fits:  # one token: no mask hides a key (a type that needs one redraws: min_tokens)
        return "none"
    return fits[int(rng.integers(len(fits)))]


def _mask_arguments(rng: np.random.Generator, mask: str, queries: int, keys: int) -> tuple:
    """A padding mask's valid lengths (mostly one for every key, key padding; else one per query,
    as d2l's valid_lens) and a window's width: each hiding a key, leaving two where it can."""
    valid = window = None
    if mask in ("padding", "causal+padding"):
        if mask == "causal+padding" or rng.integers(3):
            valid = int(rng.integers(2, keys))
        else:
            valid = tuple(int(v) for v in rng.integers(2, keys + 1, size=queries))
            if min(valid) == keys:
                valid = (*valid[:-1], keys - 1)
            if len(set(valid)) == 1:  # one length for every query: key padding, said as such
                valid = valid[0]
    if mask == "window":
        window = int(rng.integers(2, keys))
    return valid, window


def _embeddings(rng, kind: str, tokens: int, d_model: int) -> np.ndarray:
    if kind == "one-hot":
        return np.eye(d_model)[rng.permutation(d_model)[:tokens]]
    if kind == "integer":
        return rng.choice([-1, 0, 1, 2], p=[0.2, 0.3, 0.35, 0.15], size=(tokens, d_model)).astype(float)
    return np.round(rng.standard_normal((tokens, d_model)), 2)


def _weights(rng, kind: str, rows: int, columns: int) -> np.ndarray:
    if kind == "identity":
        return np.eye(rows, columns)
    if kind == "diagonal":  # signed, so that easy sets vary: scores of either sign; wider than
        # tall, the diagonal wraps round, so that no column is 0 (worthiness: no zero column)
        wrapped = np.tile(np.eye(rows), (1, -(-columns // rows)))[:, :columns]
        return wrapped * rng.choice(DIAGONAL_ENTRIES, size=columns)
    if kind == "integer":
        return rng.choice([-1, 0, 1], p=[0.25, 0.4, 0.35], size=(rows, columns)).astype(float)
    return np.round(rng.standard_normal((rows, columns)), 2)


def candidate_spec(candidate: Candidate, problem: str, seed: int) -> ProblemSpec:
    """The candidate's floats (integers or two-place decimals) as exact sympy numbers."""
    def exact(matrix: np.ndarray):
        return tuple(tuple(sympy.Rational(int(round(v * 100)), 100) for v in row) for row in matrix)

    matrices = {name: exact(matrix) for name, matrix in candidate.given.items()}
    if candidate.w_o is not None:
        matrices["W_O"] = exact(candidate.w_o)
    return ProblemSpec(id=problem, matrices=matrices, mask=candidate.mask, seed=seed,
                       valid=candidate.valid, window=candidate.window)
