"""Stage 3 helper: the formats other than LaTeX written by a forked process, beside the run.

Once every problem is solved, a large run forks a child for each format other than
LaTeX (Markdown, JSON, the practice page, Moodle).  Each writes its files into the
run's work folder while the parent renders the LaTeX and feeds TeX, so that both cores
work.  A child shares the solved problems with the parent (the pages are copied only if
written) instead of solving them again, and renders exactly what the parent would
have: the files are the same bytes.  It reports the files it wrote, or the exception
that stopped it, through a pipe; the parent raises that exception as its own.  A small
run is written in one process: a fork would cost more than it saves.
"""

from __future__ import annotations

import os
import pickle
import signal
from dataclasses import dataclass
from pathlib import Path

FORK_FROM = 60  # problems in the run


@dataclass
class Forked:
    pid: int
    pipe: int

    def result(self) -> dict[str, Path]:
        """The child's files, once it has ended; what stopped it is raised here."""
        chunks = []
        while chunk := os.read(self.pipe, 1 << 16):
            chunks.append(chunk)
        os.close(self.pipe)
        _, status = os.waitpid(self.pid, 0)
        try:
            outcome = pickle.loads(b"".join(chunks))
        except (pickle.UnpicklingError, EOFError):
            outcome = RuntimeError(f"the process writing the other formats ended unexpectedly "
                                   f"(status {status})")
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def stop(self) -> None:
        """The run stops: the child is ended at once and its files are not wanted."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        try:
            os.close(self.pipe)
        except OSError:
            pass


def write_in_child(driver, rendering, workspace: Path) -> Forked | None:
    """Start a child writing ``driver``'s files into ``workspace``; None where fork is not
    available, or for a small run."""
    problems = sum(len(questions) for questions in rendering.sets.values())
    if problems < FORK_FROM or not hasattr(os, "fork"):
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return Forked(pid, read)
    try:  # the child, from here on: whatever happens, it ends here and never returns
        os.close(read)
        os._exit(_child(driver, rendering, workspace, write))
    except BaseException:
        os._exit(1)


def _child(driver, rendering, workspace: Path, pipe: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it, not this
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        outcome = {name: content if isinstance(content, Path) else _written(workspace, name, content)
                   for name, content in dict(driver.write(rendering)).items()}
        code = 0
    except BaseException as error:  # handed to the parent, which raises it as its own
        outcome, code = error, 1
    try:
        payload = pickle.dumps(outcome)
    except Exception:
        payload = pickle.dumps(RuntimeError(f"{type(outcome).__name__}: {outcome}"))
    view = memoryview(payload)
    while view:
        view = view[os.write(pipe, view):]
    return code


def _written(workspace: Path, name: str, content: str | bytes) -> Path:
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path
