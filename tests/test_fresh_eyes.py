"""What a lecturer trying the tool fresh found (issue 35's fix-ups): choice parts shuffled each
on its own, spec-file typos answered in one short line with the closest name, why-scale's
lesson claiming only what its numbers show, and Moodle's dropdowns readable and shuffled."""

from __future__ import annotations

import pytest
from conftest import solved_set

from generator.kinds.questions import shuffled_item
from generator.kinds.sampling import draw_options


def letters(question) -> str:
    return "".join("abcd"[part.item.answer] for part in question.parts if part.item is not None)


def test_each_choice_part_of_a_problem_is_shuffled_on_its_own():
    """counting's (d), (e), (f) and why-scale's (a), (f) once shared one shuffle: one letter."""
    problems = [question for seed in range(1, 6) for version in (1, 2, 3)
                for question in solved_set(draw_options("medium"), seed, 2, version, ("counting", "why-scale"))]
    answers = [letters(question) for question in problems]
    assert all(len(answer) >= 2 for answer in answers), answers
    assert sum(len(set(answer)) > 1 for answer in answers) >= len(answers) * 2 // 3, answers
    assert len({answer[0] for answer in answers}) > 1, answers  # and between problems, versions


def test_a_shuffle_is_fixed_by_the_problem_and_the_part():
    reasons = tuple((f"choice {k}", "" if k == 0 else f"slip {k}") for k in range(4))
    assert shuffled_item("a", reasons, "ID-1") == shuffled_item("a", reasons, "ID-1")
    orders = {shuffled_item(topic, reasons, "ID-1").choices for topic in ("a", "b", "c", "d", "e")}
    assert len(orders) > 1
    item = shuffled_item("a", reasons, "ID-1")
    assert item.choices[item.answer] == "choice 0" and item.slips[item.answer] == ""
