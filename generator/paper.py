"""Stage 3 helper: lay solved problems out as an exam paper, with parts and marks.

This is exam policy, not mathematics: which steps form a lettered part and how
many marks each step earns.  Every renderer (Markdown, LaTeX) takes the same
layout, so the question sheet and the answer key always number alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import Solution, Step
from .roster import Student

STEP_MARKS = {"Q": 1, "K": 1, "V": 1, "scores": 2, "scaled": 1, "masked": 1,
              "weights": 3, "output": 2}
PART_GROUPS = (("Q", "K", "V"), ("scores",), ("scaled",), ("masked",), ("weights",), ("output",))
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Part:
    letter: str
    steps: tuple[Step, ...]

    @property
    def marks(self) -> int:
        return sum(STEP_MARKS[step.name] for step in self.steps)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.steps)


@dataclass(frozen=True)
class ExamProblem:
    number: int
    solution: Solution
    given: tuple[Step, ...]
    parts: tuple[Part, ...]

    @property
    def spec(self):
        return self.solution.spec

    @property
    def marks(self) -> int:
        return sum(part.marks for part in self.parts)


@dataclass(frozen=True)
class Paper:
    """One paper: a student's question paper, or the answer key of one version."""

    number: int
    version: int
    problems: tuple[ExamProblem, ...]
    student: Student | None = None

    @property
    def marks(self) -> int:
        return total_marks(self.problems)


def question_papers(sets: dict[int, list[Solution]], students: list[Student] | None) -> list[Paper]:
    """A paper per student (student i sits version i, cycling through the versions), or
    without a roster one paper per version."""
    versions = sorted(sets)
    if students is None:
        return [Paper(n, v, tuple(lay_out(sets[v]))) for n, v in enumerate(versions, start=1)]
    return [Paper(n, versions[(n - 1) % len(versions)],
                  tuple(lay_out(sets[versions[(n - 1) % len(versions)]])), student)
            for n, student in enumerate(students, start=1)]


def answer_keys(sets: dict[int, list[Solution]]) -> list[Paper]:
    return [Paper(n, v, tuple(lay_out(sets[v]))) for n, v in enumerate(sorted(sets), start=1)]


def lay_out(solutions: list[Solution]) -> list[ExamProblem]:
    return [exam_problem(number, solution) for number, solution in enumerate(solutions, start=1)]


def exam_problem(number: int, solution: Solution) -> ExamProblem:
    present = {step.name for step in solution.steps if step.kind != "given"}
    groups = [group for group in PART_GROUPS if present.issuperset(group)]
    parts = tuple(Part(LETTERS[i], tuple(solution.step(name) for name in group))
                  for i, group in enumerate(groups))
    given = tuple(step for step in solution.steps if step.kind == "given")
    return ExamProblem(number, solution, given, parts)


def total_marks(problems: list[ExamProblem]) -> int:
    return sum(problem.marks for problem in problems)
