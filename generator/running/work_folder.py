"""The run's sink (``rendering.sinks``), which the scheduler hands the renderers: each
document a file in the run's work folder, written as it is rendered (a large set's text
never sits in memory) and given as its path; a LaTeX source the PDF build compiles may also
be read by TeX as it is written (``pdf.build.TexStream``).
"""

from __future__ import annotations

from pathlib import Path

from generator.formats import PDF_FILES
from generator.pdf.build import PdfBuild, TexStream

TEX_SOURCES = frozenset(Path(name).with_suffix(".tex").name for name in PDF_FILES)


class WorkFolder:
    """Each document a file in ``folder``.  Given ``pdfs``, a source the PDF build compiles
    is also read by TeX as it is written, until its check calls it a draft (TeX then
    compiles the source written for good, ``TexStream.close``)."""

    def __init__(self, folder: Path, pdfs: PdfBuild | None = None):
        self.folder, self.pdfs = folder, pdfs
        self.streams: dict[str, TexStream] = {}

    def text(self, name: str, pieces, check=None) -> Path:
        """Write the document from its pieces into its file, streaming a source TeX reads as it is
        written until a piece fails its check; give the file's path."""
        path = self._made(name)
        stream = self._stream(name)
        with open(path, "w", encoding="utf-8") as file:
            writer = stream.through(file) if stream else file
            for piece in pieces:
                if check is not None and not check(piece) and writer is not file:
                    stream.abandon()  # TeX stops before it reads this piece
                    writer = file
                writer.write(piece)
        return path

    def binary(self, name: str, write) -> Path:
        """Write the document's bytes into its file; give the file's path."""
        path = self._made(name)
        with open(path, "wb") as file:
            write(file)
        return path

    def bytes_of(self, document: Path) -> bytes:
        """A document this sink wrote, as its bytes."""
        return document.read_bytes()

    def close_tex_streams(self, files: dict) -> dict:
        """``files`` are written for good: TeX reading any of them is handed its source."""
        for name, content in files.items():
            if name in self.streams:
                self.streams.pop(name).close(content)
        return files

    def _made(self, name: str) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _stream(self, name: str) -> TexStream | None:
        """TeX reading ``name`` as it is written: a source the PDF build compiles, the first
        time it is written."""
        if self.pdfs is None or name not in TEX_SOURCES or name in self.streams:
            return None
        self.streams[name] = self.pdfs.stream(name)
        return self.streams[name]
