"""Extensions from installed packages: ops, question types and output formats.

A package adds to gen-problems by declaring entry points in its ``pyproject.toml``::

    [project.entry-points."gen_problems.ops"]
    hadamard = "my_package.ops"            # a module that registers its things when imported
    [project.entry-points."gen_problems.kinds"]
    gated = "my_package.kinds:register"    # or a function, called once with no arguments
    [project.entry-points."gen_problems.formats"]
    csv = "my_package.formats"

It registers what it adds as a test does: ``ops.register_op`` (and ``steps.register`` for a
step of its op), ``kinds.register``, ``formats.register``, and ``template_files.
add_template_folder`` for the folder holding its templates (its op's working templates and
page function, its type's prose files), searched after a teacher's ``--templates`` and before
the built-in folder.  examples/gen-problems-pooling is one such package.

Ops load first (a type's steps are computed by them), then types, then formats.  The CLI
loads them before it reads its flags, so ``--types``, ``--format``, ``--help`` and the redraw
command a paper prints know them; ``generate`` loads them too.  A plugin adds names, it never
replaces one: an op, type, format or step that gen-problems (or a plugin loaded before it)
already has is refused.  A plugin that fails to load (it raises, its entry point names
nothing, it takes a name) stops the run with one line that names it, and what it had
registered is taken out again.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from importlib.metadata import EntryPoint, entry_points

GROUPS = ("gen_problems.ops", "gen_problems.kinds", "gen_problems.formats")


class PluginError(Exception):
    """An installed plugin failed to load; the message is one line naming it."""


def load_plugins() -> tuple[str, ...]:
    """Load every installed plugin, once a process, group by group; the names loaded, as
    ``group:name``.  A failure is raised again at every call (nothing is half-loaded)."""
    outcome = _outcome()
    if isinstance(outcome, PluginError):
        raise outcome
    return outcome


@cache  # once a process: a plugin registers its things once
def _outcome() -> tuple[str, ...] | PluginError:
    registries = _registries()
    installed = entry_points()  # read once: every installed package's metadata
    loaded = []
    try:
        for group in GROUPS:
            for point in sorted(installed.select(group=group), key=lambda p: p.name):
                _load(point, group, registries)
                loaded.append(f"{group}:{point.name}")
    except PluginError as error:
        return error
    return tuple(loaded)


class NameTaken(Exception):
    """A plugin registered a name that was there before it."""


# The registries a plugin adds to whose names it may not take, as a message names them.
NAMED = ("op", "question type", "format", "step")


def _registries() -> dict[str, dict | list]:
    """Every registry a plugin adds to (the built-in entries in them): by what each holds."""
    from generator import formats, kinds
    from generator.maths import ops, steps
    from generator.rendering import template_files
    ops.registered()  # the built-in ops join on first use
    return {"op": ops.OPS, "question type": kinds.TYPES, "format": formats.FORMATS,
            "step": steps.REGISTRY, "pipeline": steps.PIPELINE,
            "template folder": template_files.PLUGIN_TEMPLATES}


def _load(point: EntryPoint, group: str, registries: dict) -> None:
    before = {what: registry.copy() for what, registry in registries.items()}
    try:
        target = point.load()
        if callable(target):  # a function that registers; a module registered on import
            target()
        _refuse_taken_names(before, registries)
    except Exception as error:  # noqa: BLE001 - whatever it is, the plugin is named
        _restore(before, registries)
        package = point.dist.name if point.dist else "an installed package"
        raised = "" if isinstance(error, NameTaken) else f"{type(error).__name__}: "
        reason = " ".join(str(error).split()) or type(error).__name__
        raise PluginError(f"the plugin {point.name!r} ({group}, {point.value}, from {package}) "
                          f"failed to load: {raised}{reason}; fix or uninstall that package") from None


def _refuse_taken_names(before: dict, registries: dict) -> None:
    """A plugin adds names, it never describes one anew (a later step that now reads the
    plugin's step instead of an earlier one, ``steps.register(takes_place_of=...)``, is not a
    new description)."""
    for what in NAMED:
        old, now = before[what], registries[what]
        for name in old:
            if now.get(name) is not old[name] and not _reads_anew(what, old[name], now.get(name)):
                raise NameTaken(f"it registers the {what} {name!r}, which gen-problems or "
                                f"another plugin already has; a plugin adds new names only")


def _reads_anew(what: str, old, new) -> bool:
    """A step whose inputs alone changed."""
    return what == "step" and new is not None and replace(new, inputs=old.inputs) == old


def _restore(before: dict, registries: dict) -> None:
    """Every registry as it was before the plugin loaded."""
    from generator.maths import steps
    for what, registry in registries.items():
        registry.clear()
        (registry.extend if isinstance(registry, list) else registry.update)(before[what])
    steps.plan.cache_clear()
