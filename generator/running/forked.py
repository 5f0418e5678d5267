"""Work done by a forked process beside the run; which work, and when, the run's
``scheduler`` decides.

A child shares the run's memory as it was at the fork (the solved problems, say: the pages
are copied only if written) and computes what the parent would have: the same results,
the same files.  It hands back its result, or the exception that stopped it, through a
pipe (``compute_in_child``), or a stream of results, each as soon as it is made
(``stream_from_child``); the parent raises that exception as its own.  sympy's
expressions cross the pipe as they are, not rebuilt and simplified again, which would
cost as much as solving them.  A child that dies without a word (killed, out of memory) is
``helpers.HelperDied``, named as the caller named it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pickle
import signal
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Iterable

from sympy import Add, Mul, Pow, Rational, exp

from generator.maths.exact import exp_as_written
from generator.running.helpers import HelperDied, ended_with_status


@dataclass
class Forked:
    """A child process forked to compute a result, and the pipe it sends the result back on."""

    pid: int
    pipe: int
    helper: str = "a forked worker"  # what it does, as the line that says it died names it

    def result(self):
        """The child's result, once it has ended; what stopped it is raised here."""
        chunks = []
        while chunk := os.read(self.pipe, 1 << 16):
            chunks.append(chunk)
        status = self._reap()
        try:
            outcome = pickle.loads(b"".join(chunks))
        except Exception:  # cut short (it died while writing) or nothing at all
            raise self._died(status) from None
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def stop(self) -> int | None:
        """The run stops: the child is ended at once and its files are not wanted.  How it
        ended is returned (one that had died already keeps its own status)."""
        if self.pipe < 0:  # waited for already: its pid may be another process's by now
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        return self._reap()

    def _died(self, status: int | None) -> HelperDied:
        return HelperDied(self.helper, self.pid, ended_with_status(status))

    def _reap(self) -> int | None:
        """The pipe closed and the child waited for, once (a descriptor closed twice may be
        another file's by then); how the child ended."""
        os.close(self.pipe)
        self.pipe = -1
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return None


def compute_in_child(work: Callable[[], object], helper: str) -> Forked | None:
    """Start a child computing ``work()``, whose result ``Forked.result()`` returns; None where
    fork is not available.  ``helper`` names it (``the forked writer of the moodle files``) should it die."""
    if not hasattr(os, "fork"):
        return None
    return _start_fork(lambda pipe: _report(work, pipe), helper)


class Streamed(Forked):
    """A child sending its results one at a time, each as soon as it is made (``next``)."""

    def next(self):
        """The child's next result; what stopped it is raised here."""
        size = int.from_bytes(self._read(8) or self._raise_died(), "big")
        ok, outcome = pickle.loads(self._read(size) or self._raise_died())
        if not ok:
            raise outcome
        return outcome

    def finish(self) -> None:
        """After the last result: the child ends."""
        self._reap()

    def _read(self, size: int) -> bytes:
        chunks = []
        while size:
            chunk = os.read(self.pipe, min(size, 1 << 20))
            if not chunk:
                return b""
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _raise_died(self):
        raise self._died(self.stop())


def stream_from_child(results: Callable[[], Iterable], helper: str) -> Streamed | None:
    """Start a child making ``results()`` and sending each as it comes (``Streamed.next``),
    ahead of the run by as much as a pipe holds; None where fork is not available."""
    if not hasattr(os, "fork"):
        return None
    forked = _start_fork(lambda pipe: _send_each(results, pipe), helper)
    return Streamed(forked.pid, forked.pipe, helper)


def _send_each(results: Callable[[], Iterable], pipe: int) -> int:
    try:
        for result in results():
            _send(_compact((True, result)), pipe)
    except BaseException as error:  # handed to the parent, which raises it as its own
        try:
            _send(_compact((False, error)), pipe)
        except Exception:
            _send(pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}"))), pipe)
        return 1
    return 0


def _send(payload: bytes, pipe: int) -> None:
    _write_all(pipe, len(payload).to_bytes(8, "big") + payload)


def _widen_pipe(pipe: int) -> None:
    """A pipe of a megabyte, where Linux allows it (a few dozen of a class's versions): a
    child solving ahead gets that far ahead of the run instead of waiting on every version,
    and one with a single result writes more of it before the run reads."""
    with contextlib.suppress(ImportError, AttributeError, OSError):
        import fcntl
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, 1 << 20)


def _start_fork(child: Callable[[int], int], helper: str) -> Forked:
    read, write = os.pipe()
    _widen_pipe(write)
    pid = os.fork()
    if pid:
        os.close(write)
        return Forked(pid, read, helper)
    try:  # the child, from here on: whatever happens, it ends here and never returns
        os.close(read)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it, not this
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os._exit(child(write))
    except BaseException:
        os._exit(1)


def _report(work: Callable[[], object], pipe: int) -> int:
    """Run ``work`` and send the parent its result, or the exception that stopped it."""
    try:
        outcome, code = work(), 0
    except BaseException as error:  # handed to the parent, which raises it as its own
        outcome, code = error, 1
    try:
        payload = _compact(outcome)
    except Exception:
        payload = pickle.dumps(RuntimeError(f"{type(outcome).__name__}: {outcome}"))
    _write_all(pipe, payload)
    return code


def _write_all(pipe: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(pipe, view):]


class _Reducers(dict):
    """The pickler's dispatch table: how each kind of object is pickled, worked out the first
    time the kind is met.  A sympy expression goes as its class and arguments, to be put back
    together as it was: sympy's own pickling rebuilds it through its constructors, which
    simplify anew.  The engine's many small records go by their constructor, not field by
    field.  Anything else (KeyError) is pickled as sympy or pickle does it."""

    def __missing__(self, kind: type):
        reducer = _reducer_for(kind)
        if reducer is None:
            raise KeyError(kind)
        self[kind] = reducer
        return reducer


def _reducer_for(kind: type):
    # Only sympy's public API: an expression's ``args``, and constructors told not to
    # evaluate (``evaluate=False``); a Rational's gcd of terms already lowest is cheap.
    if kind in (Add, Mul, Pow):  # its arguments as they were, in their order
        return lambda obj: (_unevaluated, (kind, obj.args))
    if kind is Rational:
        return lambda obj: (Rational, (obj.p, obj.q))
    if kind is exp:
        return lambda obj: (exp_as_written, obj.args)
    if _slotted_record(kind):
        fields = attrgetter(*kind.__slots__)
        if len(kind.__slots__) == 1:
            return lambda obj: (kind, (fields(obj),))
        return lambda obj: (kind, fields(obj))
    return None


def _slotted_record(kind: type) -> bool:
    """A dataclass with __slots__ whose constructor takes its fields in order and does
    nothing else (the engine's records)."""
    if (not dataclasses.is_dataclass(kind) or "__slots__" not in kind.__dict__
            or hasattr(kind, "__post_init__")):
        return False
    fields = dataclasses.fields(kind)
    return kind.__slots__ == tuple(field.name for field in fields) and all(f.init for f in fields)


def _unevaluated(kind, args):
    return kind(*args, evaluate=False)


REDUCERS = _Reducers()


def _compact(outcome) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = REDUCERS
    pickler.dump(outcome)
    return buffer.getvalue()
