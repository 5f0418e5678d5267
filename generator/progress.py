"""One line on the terminal that says how far a run is and how long it has left.

It appears only on a terminal and only once a run has taken a second (tqdm's delay), so
short runs, pipes and tests print nothing.  A run's work is counted in problems: each is
solved, then written in each format; TeX's documents count as the problems they hold.
The estimate of the time left is tqdm's, from the rate so far.
"""

from __future__ import annotations

import sys


class RunProgress:
    def __init__(self, problems: int, formats: int, pdf: bool):
        self.problems = problems
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm  # imported only for a terminal: it is a tenth of a short run
            self.bar = tqdm(total=problems * (1 + formats + (2 if pdf else 0)), desc="solving",
                            unit="step", leave=False, delay=1.0, file=sys.stderr,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")

    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, *exception) -> None:
        if self.bar is not None:
            self.bar.close()

    def solved(self) -> None:
        self._advance(1)

    def stage(self, name: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(name, refresh=False)

    def written(self) -> None:
        """One format written, every problem of it."""
        self._advance(self.problems)

    def compiled(self, name: str = "") -> None:
        """One of the two TeX documents compiled (and cut into papers)."""
        self._advance(self.problems)

    def _advance(self, steps: int) -> None:
        if self.bar is not None:
            self.bar.update(steps)
