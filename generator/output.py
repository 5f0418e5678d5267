"""Stage 4, writers: put finished documents into the output folder, atomically.

Everything is rendered before this stage runs, so a bad input never gets here.
Each file is written to a temporary name in the same folder and then renamed
over the old one: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_outputs(folder: Path, documents: dict[str, str | bytes],
                  owned_folders: tuple[str, ...] = ()) -> list[Path]:
    """Write every document into ``folder`` (created if missing); return the paths.

    Files under ``owned_folders`` (papers/, keys/, practice/) that this run did not
    write are left over from an earlier run with more papers: they are removed afterwards.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in documents.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        paths.append(write_atomically(folder / name, content))
    for owned in owned_folders:
        for stale in {p for p in (folder / owned).glob("*") if p.is_file()} - set(paths):
            stale.unlink()
    return paths


def write_atomically(path: Path, content: str | bytes) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
