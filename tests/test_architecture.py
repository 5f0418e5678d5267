"""The package's shape, read from its source: the domain (the mathematics, the question
types, the renderers, the formats) never reaches for the run's scheduler, and only the
command line reads argparse."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "generator"
DOMAIN = ("maths", "kinds", "rendering", "formats")
SCHEDULER = {"generator.running.scheduler", "generator.running.lockstep",
             "generator.running.forked"}
# The scheduler's objects and functions: a domain module that names one (or asks an object
# for one, hasattr(x, "read_as")) duck-types the scheduler.
SCHEDULERS_NAMES = {"read_as", "versions_of", "in_step", "Versions", "Solved", "LaidOut",
                    "Scheduler", "WorkFolder", "compute_in_child", "stream_from_child"}


def modules(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (PACKAGE / folder).rglob("*.py"))


def imported(tree: ast.Module) -> set[str]:
    """Every module a file imports, by its full name (``from a import b``: a and a.b)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:  # the package's are absolute
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def named(tree: ast.Module) -> set[str]:
    """Every name a file's code uses: variables, attributes, imports, and words in strings."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_domain_module_imports_the_scheduler():
    assert [relative(path) for path in modules(*DOMAIN) if imported(parsed(path)) & SCHEDULER] == []


def test_no_domain_module_names_the_schedulers_objects():
    assert [(relative(path), sorted(named(parsed(path)) & SCHEDULERS_NAMES))
            for path in modules(*DOMAIN) if named(parsed(path)) & SCHEDULERS_NAMES] == []


def test_only_the_command_line_imports_argparse():
    assert [relative(path) for path in modules(".")
            if "argparse" in imported(parsed(path))] == ["generator/cli.py"]


def test_the_checks_see_an_import_and_a_duck_typed_name():
    tree = ast.parse("from generator.running.lockstep import in_step\n"
                     "import argparse\nhasattr(x, 'read_as')\n")
    assert imported(tree) >= {"generator.running.lockstep", "argparse"}
    assert named(tree) & SCHEDULERS_NAMES == {"in_step", "read_as"}
