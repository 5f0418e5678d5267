"""Where a renderer's documents go: the sink it is handed.

A renderer writes each document it makes into a sink, piece by piece as it renders it,
and gives back what the sink gives back.  ``InMemory`` (the default, for a library call
or a test) gives the text itself; the run's scheduler hands the renderers a sink of its
own (each document a file in the run's work folder, and a LaTeX source also read by TeX
as it is written).  A renderer never knows which, nor in what order or alongside what
its documents are written.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO, Protocol

Content = str | bytes | Path  # a document: its text or bytes, or the file it was written to
# Shown each piece of a text before it goes anywhere; False says the text is a draft that
# will be written again (a reader of the document as it is written stops reading it).
Check = Callable[[str], bool]
# A renderer's work on one document (or a few written together): it writes them into its sink
# and gives {each file's name: what the sink gave back}.
Job = Callable[[], dict[str, Content]]


class Sink(Protocol):
    """Where a renderer writes its documents, and what it gives back for each."""

    def text(self, name: str, pieces: Iterable[str], check: Check | None = None) -> str | Path:
        """The document ``name``, written from ``pieces`` (a template's text as it is
        rendered); writing it again replaces it."""

    def binary(self, name: str, write: Callable[[BinaryIO], None]) -> bytes | Path:
        """The document ``name``, as ``write`` writes it into a binary file."""

    def bytes_of(self, document: str | Path) -> bytes:
        """A text document this sink gave back, as its bytes."""


class InMemory:
    """Each document kept as its text (or bytes)."""

    def text(self, name: str, pieces: Iterable[str], check: Check | None = None) -> str:
        """The document's text, its pieces joined (and shown to ``check``)."""
        text = "".join(pieces)
        if check is not None:
            check(text)
        return text

    def binary(self, name: str, write: Callable[[BinaryIO], None]) -> bytes:
        """The document's bytes, as ``write`` writes them."""
        buffer = io.BytesIO()
        write(buffer)
        return buffer.getvalue()

    def bytes_of(self, document: str) -> bytes:
        """A text document as its UTF-8 bytes."""
        return document.encode("utf-8")


IN_MEMORY = InMemory()
