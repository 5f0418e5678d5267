"""Stage 3, the JSON renderer: questions -> ``problems.json``.

For each problem: its id, type, spec (numbers as JSON numbers where they are
integers or short decimals, exact strings such as "sqrt(2)/2" otherwise; the
spec can be solved again with --spec), its parts with their marks, and every
step as full-precision floats (a masked entry is null) with the exact form of
each entry alongside.  Steps of a type's further solutions are named by their prefix
(``Question.extra``): ``flawed.*`` of a flawed worked solution, ``head1.*`` of a head, ...
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import sympy

from generator.formats.exam_record import run_record
from generator.kinds import TYPES
from generator.kinds.questions import Question
from generator.maths import masks
from generator.maths.exact import to_float
from generator.maths.spec import ProblemSpec
from generator.maths.steps import REGISTRY
from generator.rendering.formatting import exact_text
from generator.rendering.paper import DocumentInfo, Paper
from generator.rendering.sinks import IN_MEMORY, Sink


def problems_json(sets: dict[int, list[Question]], info: DocumentInfo,
                  papers: list[Paper] | None = None, sink: Sink = IN_MEMORY) -> str | Path:
    """Every problem of every version; with versions or a roster, also who sits which version;
    and how the documents printed them (``exam_record``).  It is the teacher's record:
    `gen-problems --problem CODE --record problems.json` sets any one of its problems again,
    exactly, with the key the marker used."""
    # Each version is read once, in order: its problem ids and marks are noted as its problems
    # are written, and the papers' records read those notes.
    sums = {}
    records = {"problems": (problem_record(question, version, number)
                            for version, questions in sorted(sets.items())
                            for number, question in _noted(version, list(questions), sums))}
    if papers is not None:
        records["papers"] = (paper_record(paper, *sums[paper.version]) for paper in papers)
    return sink.text("problems.json", _json_pieces(info, records))


def _json_pieces(info: DocumentInfo, records: dict) -> Iterator[str]:
    """The document a record at a time, as json.dumps(indent=1) would write it whole: a large
    set's file never sits in memory twice."""
    yield _json_text(run_record(info), "")[:-2]
    for name, items in records.items():
        yield f',\n "{name}": ['
        for number, record in enumerate(items):
            yield ("," if number else "") + "\n  " + _json_text(record, "  ")
        yield "\n ]"
    yield "\n}\n"


def _json_text(value, indent: str) -> str:
    """``value`` as json.dumps(indent=1) writes it on a line indented by ``indent``, except
    that a row (``_one_line``) is written on one line, by one call to json's C encoder
    (with an indent, json.dumps uses its pure-Python encoder: most of a large set's JSON
    time)."""
    if isinstance(value, dict) and value:
        inner = indent + " "
        return ("{\n" + ",\n".join(f"{inner}{json.dumps(str(key))}: {_json_text(item, inner)}"
                                   for key, item in value.items()) + "\n" + indent + "}")
    if isinstance(value, (list, tuple)) and value and not _one_line(value):
        inner = indent + " "
        return "[\n" + ",\n".join(inner + _json_text(item, inner) for item in value) + "\n" + indent + "]"
    return json.dumps(value, allow_nan=False)


def _one_line(items) -> bool:
    """A row of numbers, nulls or short texts; a list holding LaTeX (a concept question's
    choices, with $...$ and braces) stays one item per line, as it always was."""
    return not any(isinstance(item, (dict, list, tuple)) or
                   isinstance(item, str) and not BRACKETS.isdisjoint(item) for item in items)


BRACKETS = frozenset("[]{}")


def problem_record(question: Question, version: int = 1, number: int = 1) -> dict:
    """A question as problems.json records it: its id, version, number, type and seed, its spec
    (enough to solve it again), its shape, its parts, and every step's exact and numeric entries."""
    spec = question.spec
    steps = question.named_steps()
    record = {
        "id": spec.id,
        "version": version,
        "number": spec.number or number,  # a problem set again alone keeps its number
        "type": question.kind,
        "seed": spec.seed,
        "spec": spec_record(spec),
        "shape": {"n_queries": spec.n_queries, "n_keys": spec.n_keys, "d_model": spec.d_model,
                  # cross-attention from embeddings: d_model is the decoder's, d_enc the encoder's
                  **({"d_enc": spec.d_enc} if "X_enc" in spec.matrices else {}),
                  "d_k": spec.d_k, "d_v": spec.d_v},
        "marks": question.marks,
        "given": [_name_in(steps, step) for step in question.given],
        "parts": [{"part": part.letter, "task": part.task, "marks": part.marks,
                   "steps": [_name_in(steps, step) for step in part.steps]} for part in question.parts],
        "formulas": {name: step.formula for name, step in steps.items()},
        "steps": {name: _values(step) for name, step in steps.items()},
        "exact": {name: [[exact_text(n) for n in row] for row in step.entries]
                  for name, step in steps.items()},
    }
    choices = [(part, part.item) for part in question.parts if part.item]
    if choices:
        record["choices"] = [{"part": part.letter, "topic": item.topic,
                              "answer": "abcdefghijkl"[item.answer],
                              "choices": [_choice(c) for c in item.choices],
                              "slips": list(item.slips)} for part, item in choices]
    return record


def _name_in(steps: dict, step) -> str:
    return next((name for name, known in steps.items() if known is step), step.name)


def _choice(choice):
    """A concept question's choice as JSON: a (token, weight) pair, a shape, a number, a word."""
    if isinstance(choice, tuple):
        return [_choice(c) for c in choice]
    return choice.value if hasattr(choice, "value") else choice


def _noted(version: int, questions: list[Question], sums: dict):
    sums[version] = [question.spec.id for question in questions], sum(q.marks for q in questions)
    return enumerate(questions, start=1)


def paper_record(paper: Paper, ids: list[str], marks: int) -> dict:
    """Who sits the paper, and its version's problem ids and marks."""
    student = paper.student
    return {"paper": paper.number, "version": paper.version,
            "student_id": student.id if student else None, "name": student.name if student else None,
            "problems": ids, "marks": marks}


def spec_record(spec: ProblemSpec) -> dict:
    """The spec as a teacher's spec file would write it: it can be loaded back."""
    record = {name: [[str(x) if (name, i, j) in spec.fractions else _spec_entry(x)
                      for j, x in enumerate(row)] for i, row in enumerate(matrix)]
              for name, matrix in spec.matrices.items()}
    record.update(masks.record(spec.mask, spec.valid, spec.window, spec.mask_matrix))
    if spec.scale is not None:
        record["scale"] = _spec_entry(spec.scale)
    if spec.title:
        record["title"] = spec.title
    if spec.question != "full":
        record["type"] = spec.question
    for param in TYPES[spec.question].params:  # each as the type's Param writes it, in its order
        if spec.params.get(param.name) is not None:
            record[param.name] = param.write(spec.params[param.name])
    return record


def _spec_entry(value: sympy.Expr):
    if value.is_Integer:
        return int(value)
    if value.is_Rational:
        number = to_float(value)
        if Fraction(repr(number)) == Fraction(value.p, value.q):
            return number  # a short decimal such as 0.25, written as the teacher typed it
    return str(value)


def _values(step) -> list[list]:
    """A step's entries as JSON numbers: a count's as whole numbers (ints, every digit), any
    other's as floats (null for -inf)."""
    known = REGISTRY.get(step.name)
    if known is not None and known.counted:
        return [[int(n.exact) for n in row] for row in step.entries]
    return [[_float_or_null(n.value) for n in row] for row in step.entries]


def _float_or_null(value: float) -> float | None:
    return None if math.isinf(value) else value
