"""The processes a run starts beside itself (a forked writer or solver, a TeX run, a paper
cutter) and the one line the run ends with when one of them dies.

A helper killed by a signal (kill -9, or the kernel's out-of-memory killer, which sends
SIGKILL), or one that ends with a failure and no word of why, is ``HelperDied``: the run
stops before anything is committed, and the command line says which helper, its pid and
how it ended, exit 1.  It is never taken for another outcome: not for a closed standard
output (exit 141), and not for a TeX error, which the run would answer by compiling again.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


class HelperDied(Exception):
    """A helper process ended without doing its work; ``out`` is the output folder the run
    would have written (the scheduler sets it as the failure passes), left as it was."""

    def __init__(self, helper: str, pid: int, how: str):
        super().__init__(helper, pid, how)
        self.helper, self.pid, self.how = helper, pid, how
        self.out: Path | str | None = None

    def __str__(self) -> str:
        where = (f"nothing was changed in {self.out}/" if self.out is not None
                 else "the output folder is as it was")
        return f"{self.helper} (pid {self.pid}) {self.how}; {where}"


def ended(returncode: int | None) -> str:
    """How a process ended, from ``subprocess.Popen.returncode`` (minus a signal's number)."""
    if returncode is not None and returncode < 0:
        return f"was killed by {signal_name(-returncode)}"
    if returncode is not None:
        return f"exited with status {returncode}"
    return "ended unexpectedly"


def ended_with_status(status: int | None) -> str:
    """How a process ended, from the status ``os.waitpid`` gives (None: not known)."""
    if status is not None and os.WIFSIGNALED(status):
        return ended(-os.WTERMSIG(status))
    if status is not None and os.WIFEXITED(status):
        return ended(os.WEXITSTATUS(status))
    return ended(None)


def signal_name(number: int) -> str:
    """SIGKILL, or 'signal 64' for one without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
