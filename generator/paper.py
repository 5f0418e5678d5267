"""Stage 3 helper: lay questions out as exam papers, numbered, with their marks.

The questions module decides each question's parts and marks; this module only
numbers the problems of a paper and decides who sits which version.  Every
renderer takes the same layout, so question papers and keys always number alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .questions import Question
from .roster import Student


@dataclass(frozen=True)
class ExamProblem:
    number: int
    question: Question

    @property
    def spec(self):
        return self.question.spec

    @property
    def solution(self):
        return self.question.solution

    @property
    def given(self):
        return self.question.given

    @property
    def parts(self):
        return self.question.parts

    @property
    def marks(self) -> int:
        return self.question.marks


@dataclass(frozen=True)
class Paper:
    """One paper: a student's question paper, or the answer key of one version."""

    number: int
    version: int
    problems: tuple[ExamProblem, ...]
    student: Student | None = None

    @property
    def marks(self) -> int:
        return sum(problem.marks for problem in self.problems)


def lay_out(questions: list[Question]) -> tuple[ExamProblem, ...]:
    """Numbered 1, 2, ... in order; a problem drawn again alone keeps the number it had."""
    return tuple(ExamProblem(q.spec.number if len(questions) == 1 and q.spec.number else number, q)
                 for number, q in enumerate(questions, start=1))


def question_papers(sets: dict[int, list[Question]], students: list[Student] | None) -> list[Paper]:
    """A paper per student (student i sits version i, cycling through the versions), or
    without a roster one paper per version."""
    versions = sorted(sets)
    if students is None:
        return [Paper(n, v, lay_out(sets[v])) for n, v in enumerate(versions, start=1)]
    return [Paper(n, versions[(n - 1) % len(versions)],
                  lay_out(sets[versions[(n - 1) % len(versions)]]), student)
            for n, student in enumerate(students, start=1)]


def answer_keys(sets: dict[int, list[Question]]) -> list[Paper]:
    return [Paper(n, v, lay_out(sets[v])) for n, v in enumerate(sorted(sets), start=1)]
