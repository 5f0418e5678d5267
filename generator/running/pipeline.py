"""Stages 1 and 2, wired: which problems a run sets, and each one built and verified.

From the run's ``Options`` (``generator.options``): the specs of every version (a teacher's
file, a record's one problem, or random draws, fitted to a length if asked), then each
question built by its type and every solution inside it held against the independent numpy
pipeline.  ``generate`` (``generator.api``), the run's ``scheduler`` (which decides when
and where each problem is solved) and the tests call this.
"""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from functools import partial
from pathlib import Path

from generator.kinds import default_mix
from generator.kinds.budget import Budget, fit
from generator.kinds.questions import Question, build_question
from generator.kinds.sampling import (
    DrawOptions,
    difficulty_of,
    draw_options,
    drawable_types,
    sample_problem,
    sample_set,
)
from generator.maths.crosscheck import cross_check
from generator.maths.exact import to_float
from generator.maths.spec import ProblemSpec, SpecError, load_recorded_problem, load_spec_file
from generator.running.exam_key import load_or_create_key
from generator.running.options import (  # noqa: F401
    DECLARED,
    DEFAULT_COUNT,
    DEFAULT_DECIMALS,
    MAX_COUNT,
    OPTIONS,
    Options,
    given,
)

MAX_TOTAL_PROBLEMS = 5000
# The options that override the preset: each a field of DrawOptions of the same name.
OVERRIDES = tuple(f.name for f in fields(DrawOptions) if f.name in DECLARED
                  and f.name not in ("difficulty", "decimals"))  # the preset, and what it shows


def solve_checked(spec: ProblemSpec) -> Question:
    """Build the question, then hold every solution in it (mistakes, heads and the heads'
    projection included) against numpy's arithmetic on the same plan."""
    question = build_question(spec)
    for solution in question.solutions():
        scale = None if solution.spec.scale is None else to_float(solution.spec.scale)
        cross_check({step.name: step.numeric for step in solution.steps}, solution.plan,
                    scale, solution.spec.d_k, solution.spec.visible)
    return question


def problem_sets(options: Options, seed: int, students) -> tuple[dict[int, Sequence[ProblemSpec]],
                                                                 list[str]]:
    """The specs of each version (one version unless --versions or a roster asks for more;
    random ones drawn when first read, see ``Drawn``), and notes for the teacher on what the
    mix left out."""
    if options.spec:
        return {1: load_spec_file(Path(options.spec))}, []
    if options.record:
        return {1: [load_recorded_problem(options.record, options.problem)]}, []
    versions = options.versions or (len(students) if students else 1)
    draw, types, skipped = draw_plan(options)
    notes = [f"the mix leaves out {kind} questions: {reason}" for kind, reason in skipped.items()]
    if options.problem is not None:
        return {1: [sample_problem(draw, options.problem, types)]}, notes
    forms = None
    if (budget := budget_of(options)) is not None:  # every listed type, each sized to fit
        fixed = frozenset(name for name in ("tokens", "d_model", "d_k", "d_v")
                          if getattr(options, name) is not None)
        mix = types
        types, forms = fit(budget, types, draw, seed, fixed, solve_checked, bool(options.types))
        if len(types) < len(mix):
            notes.append(f"--{budget.name} {budget.limit} holds the first {len(types)} types of the "
                         f"default mix ({', '.join(types)}); choose them with --types")
    count = len(forms) if forms else problem_count(options)
    if versions * count > MAX_TOTAL_PROBLEMS:
        raise SpecError(f"{versions} versions of {count} problems is more than "
                         f"{MAX_TOTAL_PROBLEMS} problems in one run")
    return {version: Drawn(count, partial(sample_set, draw, seed, version=version, types=types,
                                          forms=forms))
            for version in range(1, versions + 1)}, notes


def problem_count(options: Options) -> int:
    """--count, or a list of types read as "these problems, in this order" (default 20)."""
    listed = len(options.types or ())
    if options.count is None:
        return listed if listed > 1 else DEFAULT_COUNT
    if listed > 1 and options.count % listed:
        raise SpecError(f"--types lists {listed} problems and --count repeats that list, so "
                         f"--count must be {listed}, {2 * listed}, {3 * listed}, ...; got "
                         f"{options.count}")
    return options.count


def budget_of(options: Options) -> Budget | None:
    """--minutes or --marks (the minutes at the rates without a calculator, with
    --no-calculator), or None."""
    calculator = not options.no_calculator
    if options.minutes is not None:
        return Budget("minutes", options.minutes, calculator)
    if options.marks is not None:
        return Budget("marks", options.marks, calculator)
    return None


def draw_plan(options: Options):
    """The draw options (the preset, then each override given), the types taken in turn, and
    the types left out (with why)."""
    difficulty = options.difficulty or (difficulty_of(options.problem) if options.problem
                                        else None)
    decimals = DEFAULT_DECIMALS if options.decimals is None else options.decimals
    draw = draw_options(difficulty or "medium", decimals=decimals,
                        **{name: getattr(options, name) for name in OVERRIDES
                           if given(getattr(options, name))})
    if not (options.practice or options.problem is not None):  # an exam: the teacher's draws
        draw = replace(draw, secret=load_or_create_key(options.key_file))
    return (draw, *drawable_types(options.types or default_mix(), draw, bool(options.types)))


class Drawn(Sequence):
    """One version's random problems, drawn when first read.  Problem i is drawn the same
    however many follow it, so a large set's solving child draws only the problems it
    solves (``first``), beside the run, which goes on to draw them all."""

    def __init__(self, count: int, draw: Callable[[int], list[ProblemSpec]]):
        self.count, self.draw, self.specs = count, draw, None

    def first(self, count: int) -> list[ProblemSpec]:
        """The first ``count`` problems, drawn without drawing the rest."""
        return self.specs[:count] if self.specs is not None else self.draw(count)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if self.specs is None:
            self.specs = self.draw(self.count)
        return self.specs[index]


def first_specs(specs: dict[int, Sequence[ProblemSpec]], count: int) -> list[ProblemSpec]:
    """The first ``count`` specs, in version order, drawing no more than those."""
    first = []
    for version_specs in specs.values():
        wanted = min(count - len(first), len(version_specs))
        if wanted <= 0:
            break
        first += (version_specs.first(wanted) if isinstance(version_specs, Drawn)
                  else list(version_specs[:wanted]))
    return first


def softmax_steps(sets: dict[int, list[Question]]):
    """Every softmax step with its working, in every question of the sets."""
    return [step for questions in sets.values() for question in questions
            for solution in question.solutions() for step in solution.steps
            if step.kind == "softmax" and step.working]


def draw_command(options: Options, seed: int) -> str:
    """The command that writes this random set again: every option ``OPTIONS`` marks for it
    that the run has, in the table's order, with the run's own seed, length and difficulty;
    each value quoted for a shell (``shell_word``)."""
    budget = budget_of(options)
    run = replace(options, seed=seed, count=None if budget else problem_count(options),
                  difficulty=options.difficulty or "medium")
    words = []
    for option in OPTIONS:
        value = getattr(run, option.name)
        if option.redraw and given(value) and (option.unwritten is None
                                               or value != option.unwritten):
            words.append((option.flag,) if option.switch else (option.flag, option.shown(value)))
    return "gen-problems " + " ".join(" ".join(map(shell_word, word)) for word in words)


def shell_word(value) -> str:
    """A value as one word for a POSIX shell: quoted where it must be (shlex.quote); in
    $'...' (bash, zsh, POSIX 2024) where it holds a line break or another control character,
    written as its escape, so that the command stays on one line."""
    text = str(value)
    if not any(unicodedata.category(c) in CONTROLS for c in text):
        return shlex.quote(text)
    return "$'" + "".join(SHELL_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if unicodedata.category(c)
                                                    in CONTROLS else c) for c in text) + "'"


CONTROLS = ("Cc", "Zl", "Zp")  # control characters, and the line and paragraph separators
SHELL_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
