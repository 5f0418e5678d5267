"""Stage 1, problem specs: what a problem gives, checked before anything is solved.

A ``ProblemSpec`` holds the given matrices as exact sympy numbers plus the
options (mask, scale, title), and its question type's own parameters in one free
mapping (``params``), each read and checked by the type's ``kinds.Param``.  It comes
from a random draw (``sampling``) or from a teacher's TOML/JSON file
(``load_spec_file``).  Every fault in a file becomes a ``SpecError`` whose message is
one line naming the field and what was expected.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Mapping

import sympy

from generator import kinds
from generator.maths import masks, steps
from generator.maths.exact import parse_exact, shown
from generator.maths.steps import MISTAKES
from generator.rendering.teacher_text import text_fault
from generator.running import inputs

Matrix = tuple[tuple[sympy.Expr, ...], ...]

MAX_TOKENS = 12
MAX_PROBLEMS = 2000
MAX_DIMENSION = 16
MAX_SIDE = max(MAX_TOKENS, MAX_DIMENSION)  # a matrix's rows or columns: tokens or a dimension
MAX_FILE_BYTES = inputs.MAX_BYTES  # a spec, roster or header file: far above any real one
MASKS = masks.KINDS
FROM_EMBEDDINGS = ("X", "W_Q", "W_K", "W_V")
# cross-attention: the queries from a decoder's tokens, the keys and values from an encoder's
FROM_TWO_SEQUENCES = ("X_dec", "X_enc", "W_Q", "W_K", "W_V")
FROM_PROJECTIONS = ("Q", "K", "V")
OPTION_KEYS = ("mask", "scale", "title", "type", *masks.SPEC_KEYS)


# What a teacher who knows the notation may write for a key (difflib finds no likeness).
NOTATION = {"d_ff": "ffn_dim", "d_model": "model_dim", "d_k": "head_dim", "n_heads": "heads",
            "num_heads": "heads", "n_layers": "layers", "num_layers": "layers", "n_kv_heads": "kv_heads"}


def known_keys() -> set[str]:
    """A spec file's keys: the options, Q, K, V or a given matrix of the step registry that a
    file may give (attention's own, or one a type takes: W_O, dO, K_cache), and the question
    types' parameters (row, swap, mistake).  A given step a type works out itself (a counting
    step's terms, RoPE's angles) is no key: a file could never write it."""
    taken = {name for kind in kinds.TYPES.values() for name in kind.matrices + kind.may_take}
    given = {name for name, step in steps.REGISTRY.items()
             if step.is_given and (name in steps.PIPELINE or name in taken)}
    options = set(OPTION_KEYS) | set(FROM_PROJECTIONS) | given
    params = kinds.spec_keys()
    clashes = sorted(name for name in params if name in options or hasattr(ProblemSpec, name)
                     or name in {f.name for f in fields(ProblemSpec)})
    if clashes:  # a fault of the type's, not the file's: a file could never tell the two apart
        raise TypeError(f"type {params[clashes[0]][0]}'s parameter {clashes[0]!r} is taken "
                        f"by a problem's own key or attribute; name it otherwise")
    return options | set(params)


class SpecError(ValueError):
    """A problem spec that cannot be solved; the message is one line for the user."""


@dataclass(frozen=True)
class ProblemSpec:
    """One attention problem: either X and the three weight matrices, or Q, K, V."""

    id: str
    matrices: dict[str, Matrix]
    mask: str = "none"
    scale: sympy.Expr | None = None  # None means the usual 1/sqrt(d_k)
    title: str = ""
    seed: int | None = None
    question: str = "full"  # a registered question type (kinds.TYPES): what the student is asked
    # Its type's own parameters (kinds.Param) by name, as the type works with them (a row
    # from 0); each reads as an attribute too (spec.row), None where the spec leaves it unset.
    params: Mapping[str, object] = field(default_factory=dict)
    number: int | None = None  # its number on the paper, kept when it is drawn again alone
    fractions: frozenset = frozenset()  # (matrix, row, column) the teacher wrote as a fraction
    # The mask's arguments (``masks``): valid lengths (one number, or one per query), a window's
    # width, a teacher's own matrix (True: may attend); None where the mask takes none.
    valid: int | tuple[int, ...] | None = None
    window: int | None = None
    mask_matrix: masks.Visible | None = None

    def __getattr__(self, name: str):
        """A parameter of its type (``spec.row``, ``spec.pair``): the templates' prose and the
        type's own code read them so.  Only names no field or property has come here."""
        values = self.__dict__.get("params")
        if values is None or name.startswith("_"):  # being unpickled, or a protocol's lookup
            raise AttributeError(name)
        if name in values:
            return values[name]
        if kinds.declares(self.__dict__.get("question"), name):
            return None
        raise AttributeError(f"a {self.__dict__.get('question')} problem has no parameter {name!r}")

    @property
    def masked(self) -> bool:
        """Whether any mask applies (causal, padding, window, both, or the teacher's own)."""
        return self.mask != "none"

    @property
    def visible(self) -> masks.Visible:
        """The mask, n_q x n_k: True where query i may attend to key j (all True without one)."""
        return masks.visible(self.mask, self.n_queries, self.n_keys, self.valid, self.window,
                             self.mask_matrix)

    @property
    def mask_name(self) -> str:
        """What the prose calls the mask: "causal mask", "padding mask", "mask"."""
        return masks.NAMES.get(self.mask, "mask")

    @property
    def unscaled(self) -> bool:
        """Scale 1: attention on the raw dot products, softmax(QK^T)V, with no scaling step."""
        return self.scale is not None and self.scale == 1

    @property
    def scale_is_usual(self) -> bool:
        """A scale set in the spec that is 1/sqrt(d_k) all the same (1/2 with d_k = 4)."""
        return self.scale is not None and self.scale**2 * self.d_k == 1

    @property
    def from_embeddings(self) -> bool:
        """Whether the problem starts from embeddings and weights W_Q, W_K, W_V (X, or X_dec and
        X_enc), not from Q, K and V."""
        return "X" in self.matrices or "X_dec" in self.matrices

    @property
    def cross(self) -> bool:
        """Cross-attention: queries from one sequence, keys and values from another (a decoder's
        tokens X_dec over an encoder's X_enc; or Q, K and V given, with more or fewer queries
        than keys)."""
        return "X_dec" in self.matrices or (not self.from_embeddings and self.n_queries != self.n_keys)

    @property
    def n_queries(self) -> int:
        """The number of queries (of tokens, in self-attention; of the decoder's, in
        cross-attention)."""
        return len(self.matrices.get(_first_present(self.matrices, ("X_dec", "X", "Q")), ()))

    @property
    def n_keys(self) -> int:
        """The number of keys (and values): of tokens, or of the encoder's in cross-attention."""
        return len(self.matrices.get(_first_present(self.matrices, ("X_enc", "X", "K")), ()))

    @property
    def d_model(self) -> int | None:
        """The embeddings' width (X's; in cross-attention the decoder's, d_dec, the width of the
        model whose queries attend), or None when the problem starts from Q, K and V."""
        name = _first_present(self.matrices, ("X_dec", "X"))
        return len(self.matrices[name][0]) if name else None

    @property
    def d_enc(self) -> int | None:
        """The width of the embeddings the keys and values come from: the encoder's (X_enc) in
        cross-attention, else d_model (None from Q, K and V)."""
        return len(self.matrices["X_enc"][0]) if "X_enc" in self.matrices else self.d_model

    @property
    def d_k(self) -> int:
        """The width of the queries and keys (0 for a problem with no matrices: a configuration)."""
        if not self.matrices:
            return 0
        return len(self.matrices["W_Q" if self.from_embeddings else "Q"][0])

    @property
    def d_v(self) -> int:
        """The width of the values, and so of the output (0 with no matrices)."""
        if not self.matrices:
            return 0
        return len(self.matrices["W_V" if self.from_embeddings else "V"][0])


def _first_present(matrices: Mapping, names: tuple[str, ...]) -> str:
    """The first of ``names`` the matrices hold ("" for none)."""
    return next((name for name in names if name in matrices), "")


def load_spec_file(path: Path) -> list[ProblemSpec]:
    """Read one problem or a list of problems from a TOML or JSON file."""
    document = _read_document(path)
    if _is_exam_record(document):
        raise SpecError(f"{path} is an exam's record, not a spec file: set the exam again with "
                        f"gen-problems --record {shlex.quote(str(path))} --out DIR")
    records = _problem_records(document)
    if not records:
        raise SpecError(f"{path}: no problems in the file")
    if len(records) > MAX_PROBLEMS:
        raise SpecError(f"{path}: {len(records)} problems; at most {MAX_PROBLEMS} in one file")
    return [spec_from_record(record, f"{path.stem}-{index}", _where(path, index, len(records)))
            for index, record in enumerate(records, start=1)]


def _is_exam_record(document) -> bool:
    """A problems.json that gen-problems wrote: its problems beside its seed and documents."""
    return (isinstance(document, dict) and isinstance(document.get("problems"), list)
            and bool(set(document) & RECORD_KEYS))


RECORD_KEYS = {"seed", "decimals", "documents", "papers"}


def load_recorded_problem(path: Path, problem_id: str) -> ProblemSpec:
    """One problem of a run's record (its problems.json), exactly as it was set: type,
    matrices, options and number."""
    wanted = problem_id.strip().upper()
    for record in recorded_problems(path):
        if isinstance(record, dict) and str(record.get("id", "")).upper() == wanted:
            return recorded_spec(record, path)
    raise SpecError(f"{path}: no problem {problem_id} in this record")


def recorded_problems(path: Path) -> list:
    """A run's record's problems, each as its record (a dict, unchecked until read)."""
    text = read_user_file(path, "a problems.json record", inputs.MAX_RECORD_BYTES)
    check_record_size(text, path)
    document = _parse(json.loads, text, path, "JSON")
    problems = document.get("problems") if isinstance(document, dict) else None
    if not isinstance(problems, list):
        raise SpecError(f"{path}: not a problems.json that gen-problems wrote")
    return problems


MAX_RECORD_PROBLEMS = 5000  # as pipeline.MAX_TOTAL_PROBLEMS: the most one run sets


def check_record_size(text: str, path: Path) -> None:
    """A record of more problems than a run sets is refused before it is parsed (a 240 MB
    record takes half a minute to parse): each problem has one key "spec", and JSON escapes
    every quote inside a string, so the text holds "spec" once a problem (once more for
    each text that is "spec" and nothing else)."""
    if text.count('"spec"') > MAX_RECORD_PROBLEMS + 2 * MAX_PROBLEMS:
        raise SpecError(f"{path}: more than {MAX_RECORD_PROBLEMS} problems; a run sets at most "
                        f"{MAX_RECORD_PROBLEMS}")


def recorded_spec(record: dict, path: Path) -> ProblemSpec:
    """A recorded problem's spec, its id, number and seed as they were."""
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise SpecError(f"{path}: a problem without an id; not a problems.json that gen-problems wrote")
    where = f"{path}, problem {record['id']}"
    spec = spec_from_record(record.get("spec"), record["id"], where)
    from generator.kinds.sampling import MAX_SEED  # late: sampling builds on this module
    return replace(spec, number=recorded_whole(record, "number", 1, MAX_PROBLEMS, where),
                   seed=recorded_whole(record, "seed", 0, MAX_SEED, where))


def recorded_whole(record: dict, key: str, lowest: int, most: int, where: str) -> int | None:
    """A record's whole number (a problem's number, a seed), or None where it has none; what
    gen-problems never writes (true, -5, 1e100, "3") is refused naming the field."""
    value = record.get(key)
    if value is not None and (type(value) is not int or not lowest <= value <= most):
        raise SpecError(f"{where}: {key} must be a whole number from {lowest} to {most}, "
                        f"got {shown(value)}")
    return value


def spec_from_record(record: dict, problem_id: str, where: str = "problem") -> ProblemSpec:
    """Check one problem's keys and matrices and build its spec."""
    if not isinstance(record, dict):
        raise SpecError(f"{where}: expected a table of keys such as X, W_Q, W_K, W_V")
    if (fault := text_fault(str(problem_id))):  # made from the file's name, or a record's id
        raise SpecError(f"{where}: the problem id {shown(problem_id)} {fault}")
    kind = kinds.TYPES[_type_name(record, where)]  # first: a mistyped type misleads every later fault
    known = known_keys()
    unknown = sorted(set(record) - known)
    if unknown:
        raise SpecError(f"{where}: unknown key {shown(unknown[0])}{_suggestion(unknown[0], known)}")
    if not kind.matrices_given:
        return _configured_spec(record, problem_id, kind, where)
    names = _matrix_names(record, where)
    names += tuple(name for name in record if name not in names and name in known
                   and name in steps.REGISTRY)  # a further given matrix: W_O, say
    matrices = {name: _parse_matrix(record[name], name, where) for name in names}
    # A type whose keys are narrower than its queries (grouped-query attention) checks the
    # widths itself, once its own keys are read (``QuestionType.own_widths``).
    own_widths = kind.own_widths
    _check_shapes(matrices, where, own_widths)
    mask, valid, window, mask_matrix = _parse_mask(record, matrices, where)
    spec = ProblemSpec(id=problem_id, matrices=matrices, mask=mask, valid=valid, window=window,
                       mask_matrix=mask_matrix, scale=_parse_scale(record, where),
                       title=_parse_title(record, where),
                       fractions=_written_as_fractions(record, matrices))
    # its type first: a type that refuses the problem says why (backward, of cross-attention's
    # X_dec and X_enc) before a step of its plan that cannot be taken says what does not fit
    spec = _with_question(spec, record, where)
    try:  # every step's inputs fit, by the registry's shape rules (a step added to it, too)
        if not own_widths:
            steps.shapes(steps.plan_for(spec), {name: (len(m), len(m[0])) for name, m in matrices.items()})
    except ValueError as error:
        raise SpecError(f"{where}: {error}") from None
    return spec


def _configured_spec(record: dict, problem_id: str, kind, where: str) -> ProblemSpec:
    """The spec of a type whose problems give a configuration and no matrices (``counting``):
    its title and its own keys, and no matrix, mask or scale."""
    for key in record:
        if key not in ("type", "title") and key not in {param.name for param in kind.params} \
                and not (key == "mask" and record[key] == "none"):  # problems.json writes it so
            raise SpecError(f"{where}: type {kind.name} takes no {key}: its problems give a "
                            f"configuration ({', '.join(param.name for param in kind.params)}), no matrices")
    return _with_question(ProblemSpec(id=problem_id, matrices={}, title=_parse_title(record, where)),
                          record, where)


def _with_question(spec: ProblemSpec, record: dict, where: str) -> ProblemSpec:
    """The question type and the keys it reads (rows and tokens counted from 1 in files)."""
    name = _type_name(record, where)
    kind = kinds.TYPES[name]
    for key, readers in kinds.spec_keys().items():
        if key in record and name not in readers:
            raise SpecError(f"{where}: {key} goes with type {' or '.join(readers)}, not {name}")
    spec = replace(spec, question=name, params=_read_params(kind, spec, record, where))
    _check_question(spec, kind, where)
    return spec


def _type_name(record: dict, where: str) -> str:
    """The problem's question type, exactly as registered (``full`` where the file names none);
    a near miss (``"Counting"``, ``"why-scale "``) is refused with the name it is nearest."""
    name = record.get("type", "full")
    if isinstance(name, str) and name in kinds.TYPES:
        return name
    nearest = closest(name, kinds.type_names())
    raise SpecError(f"{where}: unknown type {shown(name)}" + (f"; did you mean {nearest!r}?" if nearest else
                    f" (expected one of: {', '.join(kinds.type_names())})"))


def _suggestion(key: str, known: set[str]) -> str:
    """After "unknown key 'd_ff'": the documented key it is nearest, or where they are listed."""
    nearest = NOTATION.get(key) if NOTATION.get(key) in known else closest(key, sorted(known))
    return f"; did you mean {nearest!r}?" if nearest else "; see the spec-file keys in docs/reference.md"


def closest(word: object, names) -> str | None:
    """The name ``word`` is nearest, case and surrounding spaces aside (difflib), or None."""
    if not isinstance(word, str):
        return None
    lowered = {name.lower(): name for name in names}
    found = difflib.get_close_matches(word.strip().lower(), list(lowered), n=1)
    return lowered[found[0]] if found else None


def _read_params(kind, spec: ProblemSpec, record: dict, where: str) -> dict[str, object]:
    """The type's parameters as the file writes them, each read by its ``Param`` (a default
    where the file has none)."""
    params = {}
    for param in kind.params:
        if param.name in record or param.default is not None:
            params[param.name] = param.read(record.get(param.name, param.default), spec, where)
    return params


def mistakes_that_fit(spec: ProblemSpec) -> tuple[str, ...]:
    """The mistakes whose wrong products still fit this problem's shapes (``mistakes_for_shapes``)."""
    return mistakes_for_shapes(spec.n_queries, spec.n_keys, spec.d_k, spec.d_v)


def mistakes_for_shapes(n_queries: int, n_keys: int, d_k: int, d_v: int) -> tuple[str, ...]:
    """The mistakes whose wrong products still have matching shapes: Q K needs d_k equal
    to the number of keys, V · weights needs d_v equal to the number of queries."""
    fits = {"k-not-transposed": d_k == n_keys, "v-times-weights": d_v == n_queries}
    return tuple(name for name in MISTAKES if fits.get(name, True))


def one_based(value, limit: int, key: str, where: str) -> int:
    """A row or token a file counts from 1, as an index from 0."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise SpecError(f"{where}: {key} must be a whole number from 1 to {limit}, got {shown(value)}")
    return value - 1


def _check_question(spec: ProblemSpec, kind, where: str) -> None:
    """A further matrix (W_O, K_cache) only with a type that takes it; then the type's own rules."""
    for name in spec.matrices:
        if name not in FROM_EMBEDDINGS + FROM_PROJECTIONS and name not in kind.matrices \
                and name not in kind.may_take and name not in steps.PIPELINE:
            takers = [k.name for k in kinds.TYPES.values() if name in k.matrices + k.may_take]
            raise SpecError(f"{where}: {name} goes with type {' or '.join(takers) or 'none'}, "
                            f"and only there")
    for name in kind.matrices:
        if name not in spec.matrices:
            raise SpecError(f"{where}: type {kind.name} needs {name}"
                            f"{f' ({steps.REGISTRY[name].text})' if name in steps.REGISTRY else ''}")
    reason = kind.check(spec)
    if reason:
        raise SpecError(f"{where}: {reason}")


def read_user_bytes(path: Path, what: str = "the file", limit: int = MAX_FILE_BYTES) -> bytes:
    """A file the user named, read up to a bound (``inputs``: a FIFO, /dev/zero or a link
    that loops is refused in one line)."""
    return inputs.read_bytes(path, what, limit)


def read_user_file(path: Path, what: str = "the file", limit: int = MAX_FILE_BYTES) -> str:
    """A file the user named, as UTF-8 text; an ``InputError`` naming it when it cannot be read."""
    return inputs.read_text(path, what, limit)


# Bounds a TOML text must meet before it is parsed: Python's TOML parser takes some 5 µs an
# entry (7.9 million zeros, 36 s), so a file of far more entries than any set is refused first.
MAX_ENTRIES = MAX_PROBLEMS * 1000  # commas in a file: 2000 problems of X 12 x 16 and three 16 x 16 weights
MAX_KEYS = MAX_PROBLEMS * 100  # "=" in a file: a problem has a dozen keys or so
MAX_VALUE_ENTRIES = 1000  # commas from one "=" to the next: a matrix is at most 16 x 16


def parse_toml(text: str, path: Path) -> dict:
    """A spec file's TOML text parsed; any failure as a SpecError of one line naming ``path``.
    Its size is checked first, and a number TOML reads though a person would not write it so
    (0x10, 1_000, inf) arrives as the string it is written as, which ``parse_exact`` refuses."""
    _check_toml_size(text, path)
    literal = _quoted_literals(text)
    if literal != text:
        _parse(tomllib.loads, text, path, "TOML")  # its own faults first, at their own columns
    return _parse(tomllib.loads, literal, path, "TOML")


def _check_toml_size(text: str, path: Path) -> None:
    """Counted in the text, before parsing: so many keys or entries, or one value of so many
    entries, is no spec file (nor header config)."""
    if text.count("=") > MAX_KEYS:
        raise SpecError(f"{path}: more than {MAX_KEYS} keys; at most {MAX_PROBLEMS} problems")
    pieces = text.split("=")
    for number, piece in enumerate(pieces[1:], start=1):
        if piece.count(",") > MAX_VALUE_ENTRIES:  # between entries, and between rows
            key = (pieces[number - 1].split() or ["?"])[-1]
            line = sum(p.count("\n") for p in pieces[:number]) + 1
            raise SpecError(f"{path}, line {line}: {key} holds more than {MAX_VALUE_ENTRIES} "
                            f"entries; a matrix is at most {MAX_SIDE} x {MAX_SIDE}")
    if text.count(",") > MAX_ENTRIES:
        raise SpecError(f"{path}: more than {MAX_ENTRIES} entries; at most {MAX_PROBLEMS} "
                        f"problems of at most {MAX_SIDE} x {MAX_SIDE} entries a matrix")


# The numbers TOML reads that the spec files' grammar refuses (docs/guide.md: "not 0x10 or
# 1_000"): hexadecimal, octal, binary, digits grouped by "_", inf and nan.
MAYBE_NOT_PLAIN = ("0x", "0o", "0b", "inf", "nan")  # or a digit before "_": DIGIT_GROUPS
DIGIT_GROUPS = re.compile("[0-9]_")
TOML_NUMBER = re.compile(r"[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|inf|nan"
                         r"|\d[\d_]*(?:\.[\d_]+)?(?:[eE][+-]?[\d_]+)?)")
PLAIN_TOML_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
# What a TOML text holds, token by token: its strings and comments (passed over whole) and
# its bare words (a key, a number, a date, true).
TOML_TOKENS = re.compile("|".join((
    r'"""(?:[^\\]|\\[\s\S])*?"{3,5}',  # a multi-line string (its closing quotes may be 5)
    r"'''[\s\S]*?'{3,5}",
    r'"(?:[^"\\\n]|\\.)*"', r"'[^'\n]*'", r"#[^\n]*",  # a string, a literal string, a comment
    r"(?P<word>[\w.:+-]+)")))


def _quoted_literals(text: str) -> str:
    """The TOML text with each number not written plainly in quotes ("0x10"): parsed, it is
    the string the teacher wrote, and the entry's own check names it.  A bare key so written
    (1_000 = 1) is the same key quoted."""
    if not any(word in text for word in MAYBE_NOT_PLAIN) and not DIGIT_GROUPS.search(text):
        return text  # the usual file: looked through at C's speed (0.1 s for 10 MB)

    def quoted(match: re.Match) -> str:
        word = match["word"]
        if word and TOML_NUMBER.fullmatch(word) and not PLAIN_TOML_NUMBER.fullmatch(word):
            return f'"{word}"'
        return match.group()
    return TOML_TOKENS.sub(quoted, text)


def _parse(parser, text: str, path: Path, kind: str):
    """A parser's every failure as one line: bad syntax, nesting too deep for the parser,
    an integer too long to convert (Python refuses over 4300 digits)."""
    try:
        return parser(text)
    except RecursionError:
        raise SpecError(f"{path}: malformed {kind} (nested too deeply)") from None
    except ValueError as error:  # TOMLDecodeError and JSONDecodeError are ValueErrors too
        reason = str(error).split(";")[0].splitlines()[0][:120]
        raise SpecError(f"{path}: malformed {kind} ({reason}){_quote_hint(text, reason)}") from None


UNQUOTED_EXACT = re.compile(r"(?<![\"'\w.])(\d+\s*/\s*\d|sqrt\s*\(|\d\s*\^)")


def _quote_hint(text: str, reason: str) -> str:
    """An exact entry written bare (1/2, sqrt(2)) is not a TOML or JSON number: say so."""
    line = re.search(r"line (\d+)", reason)
    if line:
        lines = text.splitlines()
        number = int(line.group(1))
        if 1 <= number <= len(lines) and UNQUOTED_EXACT.search(lines[number - 1]):
            return '; write exact entries in quotes, e.g. "1/2" or "sqrt(2)/2"'
    return ""


def _read_document(path: Path):
    text = read_user_file(path, "a problem spec")
    if path.suffix.lower() == ".toml":
        return parse_toml(text, path)
    if path.suffix.lower() == ".json":
        return _parse(json.loads, text, path, "JSON")
    raise SpecError(f"{path}: spec files must end in .toml or .json")


def _problem_records(document) -> list:
    """Accept a single problem, ``[[problem]]`` tables, ``{"problems": [...]}`` or a list."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in ("problem", "problems"):
            if key in document:
                if len(document) > 1 or not isinstance(document[key], list):
                    raise SpecError(f"'{key}' must be the only top-level key and hold a list")
                return document[key]
        return [document]
    raise SpecError("a spec file holds one problem, or a list of problems")


def _where(path: Path, index: int, count: int) -> str:
    return f"{path}" if count == 1 else f"{path}, problem {index}"


def _matrix_names(record: dict, where: str) -> tuple[str, ...]:
    sequences = _sequences(record, where)
    has_embeddings = bool(sequences) or any(name in record for name in FROM_EMBEDDINGS)
    has_projections = any(name in record for name in FROM_PROJECTIONS)
    embeddings = FROM_TWO_SEQUENCES if "X_dec" in sequences else FROM_EMBEDDINGS
    if has_embeddings and has_projections:
        raise SpecError(f"{where}: give either {', '.join(embeddings)} or Q, K, V, not both")
    names = FROM_PROJECTIONS if has_projections else embeddings
    missing = [name for name in names if name not in record]
    if missing:
        raise SpecError(f"{where}: missing {missing[0]} (a problem needs {', '.join(names)})")
    return names


def _sequences(record: dict, where: str) -> tuple[str, ...]:
    """The embeddings a file gives: X (self-attention), or X_dec and X_enc (cross-attention:
    the decoder's tokens query the encoder's), never both, never one of the two alone."""
    found = tuple(name for name in ("X", "X_dec", "X_enc") if name in record)
    if "X" in found and len(found) > 1:
        raise SpecError(f"{where}: give either X (self-attention) or X_dec and X_enc "
                        f"(cross-attention), not both")
    if len(found) == 1 and found[0] != "X":
        other = "X_enc" if found[0] == "X_dec" else "X_dec"
        raise SpecError(f"{where}: {found[0]} needs {other}: cross-attention takes its queries from "
                        f"the decoder's tokens (X_dec) and its keys and values from the encoder's "
                        f"(X_enc)")
    return found


def _written_as_fractions(record: dict, matrices: dict[str, Matrix]) -> frozenset:
    """Entries typed as a fraction ("1/2") that are one: they print as the teacher wrote them."""
    return frozenset(
        (name, i, j) for name, matrix in matrices.items()
        for i, row in enumerate(matrix) for j, value in enumerate(row)
        if isinstance(record[name][i][j], str) and "/" in record[name][i][j]
        and value.is_Rational and not value.is_Integer)


def _parse_matrix(rows, name: str, where: str) -> Matrix:
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        # a flat list is most often one row (a bias, γ) written without its outer brackets
        example = (f"[{rows}]" if isinstance(rows, list) and rows and len(str(rows)) < 60
                   and not any(isinstance(r, (list, dict)) for r in rows) else "[[1, 0], [0, 1]]")
        raise SpecError(f"{where}: {name} must be a non-empty list of rows, e.g. {example}")
    width = len(rows[0])
    # A matrix far larger than any (16 x 16) is refused before its entries are parsed: sympy
    # on a row of a million would take minutes.  Nearer sizes get _check_shapes's account.
    if len(rows) > 4 * MAX_SIDE or width > 4 * MAX_SIDE:
        raise SpecError(f"{where}: {name} is {len(rows)} x {width}; a matrix is at most "
                        f"{MAX_SIDE} x {MAX_SIDE} (an exam, not a model)")
    for number, row in enumerate(rows, start=1):
        if not row:
            raise SpecError(f"{where}: {name} row {number} is empty")
        if len(row) != width:
            raise SpecError(f"{where}: {name} row {number} has {len(row)} entries "
                            f"but row 1 has {width}")
    return tuple(tuple(_parse_entry(entry, name, i, j, where) for j, entry in enumerate(row, 1))
                 for i, row in enumerate(rows, 1))


def _parse_entry(entry, name: str, row: int, column: int, where: str) -> sympy.Expr:
    try:
        return parse_exact(entry)
    except ValueError as error:
        raise SpecError(f"{where}: {name} row {row}, column {column}: {error}") from None


def _check_shapes(matrices: dict[str, Matrix], where: str, own_widths: bool = False) -> None:
    def rows(name):
        return len(matrices[name])

    def columns(name):
        return len(matrices[name][0])

    def require(condition: bool, message: str) -> None:
        if not condition:
            raise SpecError(f"{where}: {message}")

    if "X" in matrices or "X_dec" in matrices:
        for weight, source in _projection_sources(matrices).items():
            require(rows(weight) == columns(source),
                    f"{weight} has {rows(weight)} rows but {source} has {columns(source)} columns")
        require(own_widths or columns("W_K") == columns("W_Q"),
                f"W_K has {columns('W_K')} columns but W_Q has {columns('W_Q')} (both are d_k)")
        sequences = [name for name in ("X", "X_dec", "X_enc") if name in matrices]
        tokens = max(rows(name) for name in sequences)
        dimensions = [columns(n) for n in (*sequences, "W_Q", "W_K", "W_V")]
    else:
        require(own_widths or columns("K") == columns("Q"),
                f"K has {columns('K')} columns but Q has {columns('Q')} (both are d_k)")
        require(rows("V") == rows("K"), f"V has {rows('V')} rows but K has {rows('K')}")
        tokens, dimensions = max(rows("Q"), rows("K")), [columns(n) for n in FROM_PROJECTIONS]
    require(tokens <= MAX_TOKENS, f"{tokens} tokens; at most {MAX_TOKENS} (an exam, not a model)")
    require(max(dimensions) <= MAX_DIMENSION,
            f"dimension {max(dimensions)}; at most {MAX_DIMENSION} (an exam, not a model)")


def _projection_sources(matrices: dict[str, Matrix]) -> dict[str, str]:
    """Each weight and the embeddings it projects, as the plan routes them (the step registry):
    W_Q, W_K and W_V all project X (or a step that stands in for it, X + P, of X's width); in
    cross-attention W_Q projects X_dec, W_K and W_V X_enc."""
    return {step.inputs[1]: step.inputs[0] if step.inputs[0] in matrices else "X"  # X + P: X's
            for step in steps.plan(tuple(matrices), through="V") if step.name in FROM_PROJECTIONS}


def _parse_mask(record: dict, matrices: dict[str, Matrix], where: str):
    """The mask's kind and arguments (``masks.parse``), for the scores' shape n_q x n_k."""
    queries = next(name for name in ("X", "X_dec", "Q") if name in matrices)
    keys = next(name for name in ("X", "X_enc", "K") if name in matrices)
    try:
        return masks.parse(record, len(matrices[queries]), len(matrices[keys]))
    except ValueError as error:
        raise SpecError(f"{where}: {error}") from None


def _parse_scale(record: dict, where: str) -> sympy.Expr | None:
    if "scale" not in record:
        return None
    try:
        scale = parse_exact(record["scale"])
    except ValueError as error:
        raise SpecError(f"{where}: scale: {error}") from None
    if not scale.is_positive:
        raise SpecError(f"{where}: scale must be positive, got {shown(record['scale'])}")
    return scale


def _parse_title(record: dict, where: str) -> str:
    title = record.get("title", "")
    if not isinstance(title, str) or len(title) > 200 or "\n" in title:
        raise SpecError(f"{where}: title must be one line of text, at most 200 characters")
    if (fault := text_fault(title)):
        raise SpecError(f"{where}: title {fault}")
    return title
