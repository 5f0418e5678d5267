"""Stage 3, the JSON renderer: solved problems -> ``problems.json``.

For each problem: its id, its spec (numbers as JSON numbers where they are
integers or short decimals, exact strings such as "sqrt(2)/2" otherwise), and
every step as full-precision floats (a masked entry is null) with the exact
form of each entry alongside.
"""

from __future__ import annotations

import json
import math
import re

import sympy

from .engine import Solution
from .formatting import exact_text
from .paper import Paper
from .render import DocumentInfo

SCALAR_LIST = re.compile(r"\[\s+([^\[\]{}]*?)\s+\]")


def problems_json(sets: dict[int, list[Solution]], info: DocumentInfo,
                  papers: list[Paper] | None = None) -> str:
    """Every problem of every version; with versions or a roster, also who sits which version."""
    document = {
        "seed": info.seed,
        "decimals": info.decimals,
        "problems": [problem_record(solution, version)
                     for version, solutions in sorted(sets.items()) for solution in solutions],
    }
    if papers is not None:
        document["papers"] = [paper_record(paper) for paper in papers]
    text = json.dumps(document, indent=1, allow_nan=False)
    # One matrix row per line: a list holding only numbers, strings or nulls is folded.
    return SCALAR_LIST.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", text) + "\n"


def problem_record(solution: Solution, version: int = 1) -> dict:
    spec = solution.spec
    return {
        "id": spec.id,
        "version": version,
        "seed": spec.seed,
        "spec": spec_record(solution),
        "shape": {"n_queries": spec.n_queries, "n_keys": spec.n_keys, "d_model": spec.d_model,
                  "d_k": spec.d_k, "d_v": spec.d_v},
        "formulas": {step.name: step.formula for step in solution.steps},
        "steps": {step.name: [[_float_or_null(n.value) for n in row] for row in step.entries]
                  for step in solution.steps},
        "exact": {step.name: [[exact_text(n) for n in row] for row in step.entries]
                  for step in solution.steps},
    }


def paper_record(paper: Paper) -> dict:
    student = paper.student
    return {"paper": paper.number, "version": paper.version,
            "student_id": student.id if student else None, "name": student.name if student else None,
            "problems": [problem.spec.id for problem in paper.problems], "marks": paper.marks}


def spec_record(solution: Solution) -> dict:
    """The spec as a teacher's spec file would write it: it can be loaded back."""
    spec = solution.spec
    record = {name: [[_spec_entry(x) for x in row] for row in matrix]
              for name, matrix in spec.matrices.items()}
    record["mask"] = spec.mask
    if spec.scale is not None:
        record["scale"] = _spec_entry(spec.scale)
    if spec.title:
        record["title"] = spec.title
    return record


def _spec_entry(value: sympy.Expr):
    if value.is_Integer:
        return int(value)
    if value.is_Rational and sympy.Rational(repr(float(value))) == value:
        return float(value)  # a short decimal such as 0.25, written as the teacher typed it
    return str(value)


def _float_or_null(value: float) -> float | None:
    return None if math.isinf(value) else value
