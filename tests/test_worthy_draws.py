"""Every version does equal work (issue 30): no drawn problem, of any type or form a paper
may take, asks a student to compute a matrix with an all-zero row or column, two equal rows
where each row is a separate query's work, or (backward) push an upstream row of one
nonzero entry through softmax."""

from __future__ import annotations

import numpy as np
import pytest

from generator.kinds import type_names
from generator.kinds.budget import forms
from generator.kinds.sampling import draw_options, draw_problem, why_not_drawable
from generator.running.pipeline import solve_checked

# Steps whose rows are the queries' work, one row a query (a head's and the lone row's too).
PER_QUERY = {"Q", "scores", "scaled", "weights", "output", "concat", "projected",
             "dweights", "dscaled", "dscores", "dQ"}
# Rows that are 0 by the mask's lesson: under a causal mask the first query's weights are
# (1, 0, ...), so its softmax gradient, and what follows from it, is 0.
CAUSAL_FIRST_ROW_ZERO = {"dscaled", "dscores", "dQ"}
# Products with one-hot X (or X = I): their zero lines are X's and no work.
FROM_X = {"dW_Q", "dW_K", "dW_V", "dX_Q", "dX_K", "dX_V", "dX"}


def degeneracies(question) -> list[str]:
    """What makes a drawn question's written work degenerate, as readable findings."""
    found, causal = [], question.spec.mask == "causal"
    for part in question.parts:
        for step in part.written:
            m = np.where(np.isinf(step.numeric), 1.0, step.numeric)
            name, where = step.name, f"({part.letter}) {step.name}"
            nonzero = np.abs(m) > 1e-12
            if m.shape[0] == 1:
                if name == "dweights_row" and m.shape[1] > 1 and nonzero.sum() < 2:
                    found.append(f"{where}: upstream row {m.round(4).tolist()} has one entry")
                continue
            rows = [i for i in range(len(m)) if not nonzero[i].any()
                    and not (causal and i == 0 and name in CAUSAL_FIRST_ROW_ZERO)]
            if name not in FROM_X and (rows or not nonzero.any(axis=0).all()):
                found.append(f"{where}: a zero row or column")
            if name in PER_QUERY and name not in {s.name for s in question.given}:
                if len({tuple(r) for r in np.round(m, 9)}) < len(m):
                    found.append(f"{where}: two equal rows")
    return found


def cases():
    """Small whole numbers (with and without a calculator), where zeros and ties are common;
    two-place decimals only for backward, whose upstream dO is of halves there too."""
    options = {"medium": draw_options("medium"),
               "no-calculator": draw_options("medium", no_calculator=True),
               "hard": draw_options("hard")}
    for label, drawn in options.items():
        for kind in type_names() if label != "hard" else ("backward",):
            if why_not_drawable(kind, drawn) is None:  # the largest work, and the table: slow
                slow = (pytest.mark.slow if kind in ("heads", "grouped", "backward") or label != "medium"
                        else ())
                yield pytest.param(drawn, kind, id=f"{label}-{kind}", marks=slow)


@pytest.mark.parametrize("options, kind", list(cases()))
def test_no_form_of_any_type_asks_degenerate_work(options, kind):
    """Every form of the type's ladder (the sizes a timed paper gives it), ten seeds each:
    before issue 30's checks 12 of these 19 cases failed (version 2's Y with a zero column,
    version 3's A_1 with two equal rows, da = (1, 0, 0))."""
    bad = []
    for form in forms(kind, options, frozenset()):
        for seed in range(10):
            spec, _ = draw_problem(options, seed, 1, 1, kind, form)
            bad += [f"seed {seed} {form}: {d}" for d in degeneracies(solve_checked(spec))]
    assert not bad, "\n".join(bad[:8]) + f"\n({len(bad)} in all)"
