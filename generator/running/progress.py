"""How far a run is: one line on the terminal that says how far it is and how long it has
left, or, when stderr is a pipe or a log, a plain line now and then.

On a terminal the bar (tqdm's) appears once a run has taken a second; elsewhere a line such
as ``gen-problems: writing, 40% done after 20 s`` comes every ``LOG_EVERY`` seconds, so a
scheduler's log of a large set shows it is moving (a thread says it, so a long stretch
of writing one document, which counts nothing, is not silent), and short runs print
nothing.  ``--progress S`` says such a line every S seconds, on a terminal too; 0, nothing.
A run's work is counted in problems: each is solved, then written in each format; TeX's
documents count as the problems they hold.
The estimate of the time left is tqdm's, from the rate so far.
"""

from __future__ import annotations

import os
import sys
import threading
import time

LOG_EVERY = 10.0  # seconds between the plain lines of a run whose stderr is not a terminal
# Held while a line is said: a process forked meanwhile would inherit stderr's lock held.
SAYING = threading.Lock()
os.register_at_fork(before=SAYING.acquire, after_in_parent=SAYING.release,
                    after_in_child=SAYING.release)


class RunProgress:
    """The run's progress, counted in problems: a bar on a terminal, else a line now and then."""

    def __init__(self, problems: int, formats: int, pdf: bool, every: float | None = None):
        self.problems = problems
        self.total = problems * (1 + formats + (2 if pdf else 0))
        self.done = 0
        self.stage_name = "solving"
        self.started = time.monotonic()
        self.bar = self.beat = None
        self.ended = threading.Event()
        self.every = LOG_EVERY if every is None else every
        if self.every <= 0:  # --progress 0: nothing said
            return
        if every is not None or not sys.stderr.isatty():
            self.beat = threading.Thread(target=self._say_now_and_then, name="progress", daemon=True)
            self.beat.start()
        else:
            from tqdm import tqdm  # imported only for a terminal: it is a tenth of a short run
            # No monitor thread: a run forks (``forked``), and a thread alive at a fork may
            # hold a lock the child then never sees let go.
            tqdm.monitor_interval = 0
            self.bar = tqdm(total=self.total, desc="solving",
                            unit="step", leave=False, delay=1.0, file=sys.stderr,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")

    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, *exception) -> None:
        self.ended.set()
        if self.beat is not None:
            self.beat.join()
        if self.bar is not None:
            self.bar.close()

    def solved(self) -> None:
        """One problem solved."""
        self._advance(1)

    def stage(self, name: str) -> None:
        """The run has moved on to stage ``name`` (solving, writing, typesetting...)."""
        self.stage_name = name
        if self.bar is not None:
            self.bar.set_description_str(name, refresh=False)

    def written(self, share: float = 1) -> None:
        """One format written, every problem of it; or a share of it (one of its documents)."""
        self._advance(self.problems * share)

    def compiled(self, name: str = "") -> None:
        """One of the two TeX documents compiled (and cut into papers)."""
        self._advance(self.problems)

    def _advance(self, steps: float) -> None:
        self.done += steps
        if self.bar is not None:
            self.bar.update(steps)

    def _say_now_and_then(self) -> None:
        while not self.ended.wait(self.every):
            done = int(100 * self.done // max(self.total, 1))
            with SAYING:
                print(f"gen-problems: {self.stage_name}, {done}% done after "
                      f"{time.monotonic() - self.started:.0f} s", file=sys.stderr, flush=True)
