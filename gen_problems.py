"""The console script ``gen-problems``: it sets how a stop ends the run, then loads it.

Loading the generator (sympy, numpy, Jinja, ...) takes about half a second, during
which nothing has been read or written.  A Ctrl-C or SIGTERM then ends the run at once
with the one line and exit code 130 that a stop gives later (``generator.cli``),
instead of a traceback from inside an import (or, for SIGTERM, no word at all).  This
module is outside the ``generator`` package because importing any module of the
package runs the package's own imports first.
"""

import os
import signal

STOPPED = b"gen-problems: interrupted; the output folder is as it was\n"
EXIT_INTERRUPTED = 130


def entry() -> None:
    """The console script: a stop while the generator loads ends the run in one line (exit 130);
    then the run itself (``generator.cli.entry``)."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, _stopped_while_loading)
    from generator.cli import entry as run  # the run installs its own handlers when it starts
    run()


def _stopped_while_loading(signum, frame):
    os.write(2, STOPPED)  # not print: the signal may land inside a write to sys.stderr
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    entry()
