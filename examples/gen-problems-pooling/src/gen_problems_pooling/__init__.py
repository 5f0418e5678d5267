"""A gen-problems plugin: the mean-pool op, the sentence-vector question type and the
answer-sheet format (see README.md).  Each entry point is a ``register`` function, so that
importing a module registers nothing by itself."""

from pathlib import Path

# The plugin's templates: its op's working and page function, its type's prose.  gen-problems
# searches them after a teacher's --templates and before its own.
TEMPLATES = Path(__file__).resolve().parent / "templates"
