"""Stage 2 for a class: each version solved when the documents reach it, and let go once
they have all passed it, so that a class's run holds a few versions, not the whole class.

A run with a paper per student (a roster, or --versions) may have every document of every
format written at once, each on a thread of its own (``in_step``, which the run's
``scheduler`` calls), reading the versions in order: ``answers.tex`` and ``questions.tex``,
both Markdown files, ``problems.json``, ...  A forked child solves (and checks, as ever)
the versions ahead of them, in order, and sends each as it is solved
(``forked.stream_from_child``; without one, the first document to reach a version solves
it).  A document may run at most ``WINDOW`` versions ahead of the
slowest, and a version is let go when the slowest document has passed it.  Python renders
one thread at a time, so this costs no more than writing the documents one after another,
while TeX and the cutting of papers take the other cores.  A document that reads a version
again after it was let go (a teacher's template that looks back) has it solved again: the
same questions, later.  Nothing reaches the output folder before the whole set is written.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from generator.running.forked import stream_from_child

WINDOW = 3  # versions a document may run ahead of the slowest one
# How far the documents' threads and the solving child stand back for TeX (a nice value,
# for those threads alone): the answer key's TeX run, the longest one, is started before
# them (``pdf.WarmTex``) and then keeps up with them instead of trailing far behind.
BESIDE_TEX = 8


class Stopped(Exception):
    """Another document failed: this one stops too (the run reports the first failure)."""


class Versions:
    """The versions of a class, solved when first read (see the module's docstring)."""

    def __init__(self, specs: dict[int, Sequence], solve: Callable, on_solved=lambda: None,
                 ahead: bool = True):
        self.specs, self.solve, self.on_solved = specs, solve, on_solved
        self.order = sorted(specs)
        self.index = {version: i for i, version in enumerate(self.order)}
        self.held: dict[int, list] = {}
        self.reached: dict[object, int] = {}  # each document -> the furthest version it read
        self.mine = threading.local()  # the document the calling thread writes (``in_step``)
        self.changed = threading.Condition()
        self.stopped: BaseException | None = None
        self.arrived = 0  # versions solved so far, in order
        self.child = (stream_from_child(self._ahead, "the forked solver of the class's versions")
                      if ahead else None)  # a child solving ahead

    def sets(self) -> dict[int, "Solved"]:
        """Each version's questions, as the documents read them (solved when first read)."""
        return {version: Solved(self, version) for version in self.specs}

    def questions(self, version: int) -> list:
        """Version ``version``'s questions, for the calling document: it waits while it is more than
        ``WINDOW`` versions ahead of the slowest; a version let go is solved again."""
        index = self.index[version]
        with self.changed:
            self._reach(index)
            while index > self._slowest() + WINDOW and self.stopped is None:
                self.changed.wait()
            if self.stopped is not None:
                raise Stopped from self.stopped
            try:
                while index not in self.held and self.arrived <= index:  # the next ones, in order
                    self.held[self.arrived] = self._next()
                    self.arrived += 1
                if index not in self.held:  # read again after it was let go
                    questions = self._solve(version)
                    if index < self._slowest():
                        return questions
                    self.held[index] = questions
            except BaseException as error:  # the run reports it, however the reader wraps it
                self.stop(error)
                raise
            return self.held[index]

    def _next(self) -> list:
        """The next version's questions: from the child solving ahead (``forked``), or solved
        here on a machine of one core."""
        version = self.order[self.arrived]
        questions = self.child.next() if self.child else self._solve(version)
        for _ in questions:
            self.on_solved()
        if self.child and self.arrived == len(self.order) - 1:
            self.child.finish()  # it has sent them all
            self.child = None
        return questions

    def _ahead(self):
        """In the child: every version, in order."""
        stand_back()
        for version in self.order:
            yield self._solve(version)

    def _solve(self, version: int) -> list:
        return [self.solve(spec) for spec in self.specs[version]]

    def close(self) -> None:
        """The run ends (or fails): a child still solving is stopped."""
        with self.changed:  # not while a document reads from it
            if self.child:
                self.child.stop()
                self.child = None

    def enter(self) -> object:
        """A document about to be written: until it reads, nobody runs ahead of it."""
        with self.changed:
            self.reached[token := object()] = -1
            return token

    def leave(self, token=None) -> None:
        """The document (by default the calling thread's) has read all it will."""
        with self.changed:
            self.reached.pop(token or getattr(self.mine, "token", None), None)
            self.changed.notify_all()

    def _reach(self, index: int) -> None:
        if getattr(self.mine, "token", None) is None:  # a thread in_step did not start
            self.mine.token = self.enter()
        me = self.mine.token
        if index > self.reached.get(me, -1):
            self.reached[me] = index
            slowest = self._slowest()
            for passed in [i for i in self.held if i < slowest]:
                del self.held[passed]
            self.changed.notify_all()

    def _slowest(self) -> int:
        return min(self.reached.values(), default=0)

    def stop(self, error: BaseException) -> None:
        """A document failed (or the run was stopped): every other one stops at its next read."""
        with self.changed:
            self.stopped = self.stopped or error
            self.changed.notify_all()
        self.close()


class Solved(Sequence):
    """One version's questions, read from ``Versions`` each time they are asked for."""

    def __init__(self, versions: Versions, version: int):
        self.versions, self.version = versions, version

    def __len__(self) -> int:
        return len(self.versions.specs[self.version])

    def __getitem__(self, index):
        return self.versions.questions(self.version)[index]

    def __iter__(self):
        return iter(self.versions.questions(self.version))


class LaidOut(Sequence):
    """A version's questions laid out (as a paper's numbered problems) when read, by
    ``lay_out(questions)``."""

    def __init__(self, solved: Solved, lay_out: Callable):
        self.solved, self.lay_out = solved, lay_out

    def __len__(self) -> int:
        return len(self.solved)

    def __getitem__(self, index):
        return self.lay_out(list(self.solved))[index]

    def __iter__(self):
        return iter(self.lay_out(list(self.solved)))


def in_step(jobs: list[Callable], versions: Versions) -> list:
    """Each job's result, the jobs run at once, each on its own thread, so that the documents
    they write read the versions in step.  The first failure is raised once every job has
    stopped."""
    tokens = [versions.enter() for _ in jobs]  # before any starts: none runs ahead of another
    versions.leave()  # the calling thread, if it was a document's, now only waits
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:  # its end waits for every thread
        futures = [pool.submit(_reading, versions, job, token) for job, token in zip(jobs, tokens)]
        try:
            for future in futures:
                future.exception()  # waits; a thread that failed has stopped the others
        except BaseException as error:  # Ctrl-C here: every thread stops at its next read
            versions.stop(error)
            raise
    if versions.stopped is not None:
        raise versions.stopped
    return [future.result() for future in futures]


def stand_back() -> None:
    """The calling thread (its process's, if it has one) yields to TeX (``BESIDE_TEX``)."""
    try:
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + BESIDE_TEX))
    except (AttributeError, OSError):  # not Linux, or not allowed: only the order of work
        pass


def _reading(versions: Versions, job: Callable, token: object):
    stand_back()
    versions.mine.token = token
    try:
        return job()
    except BaseException as error:
        versions.stop(error)
        raise
    finally:
        versions.leave(token)
        versions.mine.token = None
