"""The op registry: each way a step can be computed, as one object carrying all its faces.

A step of the plan (``steps.StepDef``) names its op.  Everything that computes, checks,
marks, times, explains or draws a step looks the op up here and asks it (as SymPy's
printers ask an object for its own ``printmethod``):

- ``exact``: the engine's exact arithmetic (sympy), which records the working;
- ``numeric``: the cross-check's own float arithmetic (numpy);
- ``script``: the practice page's own arithmetic (JavaScript, on the student's numbers);
- ``tolerance``: marking's rule for how far rounding can move each entry, and ``slips``,
  the common slips the page names;
- ``hint``: how to start the op by hand, and its first entry's working (``hints.OpHint``);
- ``seconds``: how long its entries take by hand, with and without a calculator;
- ``templates``: the template that draws its working, in each format steps are drawn in
  (found along the template folders, as every template is: a plugin ships its op's own);
- ``shape``: its result's shape from its inputs', refusing inputs that do not fit.

The three arithmetics stay three independent implementations (the engine is checked
against numpy; the page computes from the student's values): they only hang on one object.

``register_op(op)`` adds an op, from anywhere (a plugin, a test's toy op); then a step of
that op is one ``steps.register`` call.  The built-in ops are assembled in ``builtin_ops``
from the modules that hold their faces; those modules import the step registry, which reads
this one, so the built-in ops join on first use (``registered``).  This module imports
nothing of the project's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

# The formats a step's working is drawn in (the key's templates), with their templates' suffix;
# the other formats reuse one of these (the page and Moodle reveal the Markdown key).
STEP_FORMATS = {"latex": "tex", "markdown": "md"}


def not_computed(step, *_, **__):
    """The numeric and tolerance face of an op whose step is read, not computed (a given
    matrix: the cross-check and marking take it as it is); never called."""
    raise TypeError(f"{step.name} is read as given, not computed")


def no_slips(*_) -> list:
    """The slips face of an op the page names no common slip of."""
    return []


def keeps_shape(step, shapes: list[tuple[int, int]]) -> tuple[int, int]:
    """The shape face of an op whose result has its first input's shape."""
    return shapes[0]


NO_SCRIPT = ""  # the script face of an op the page never computes (a given is read, not worked)


class ScriptFile(str):
    """A script face given as the file that holds it, html/ops/<op>.js: read, when the page
    is made, along the template folders (a teacher's --templates first, then the plugins',
    then the built-in one), so a teacher may rewrite an op's page function as any template.
    A plain string is the function itself (as pylatex's NoEscape marks a string trusted,
    this marks one as a file's name)."""


def script_file(name: str) -> ScriptFile:
    """An op's page function by the convention the built-in ones follow: html/ops/<name>.js."""
    return ScriptFile(f"html/ops/{name}.js")


@dataclass(frozen=True)
class Op:
    """One op and every face it is known by: exact (the engine), numeric (the cross-check),
    tolerance (marking), hint, seconds by hand, working templates, its page function, shape and
    slips."""

    name: str
    exact: Callable  # (step_def, input Steps, spec, num: engine.Evaluator) -> engine.Step
    numeric: Callable  # (step_def, *input arrays, scale, d_k) -> the result as a float array
    tolerance: Callable  # (step_def, input arrays, their errors, u, spec) -> each entry's bound
    hint: Any  # hints.OpHint
    seconds: Callable  # (step, cost) -> seconds by hand; cost(item) is one item's (paper.SECONDS)
    templates: Mapping[str, str]  # a format of STEP_FORMATS -> the template drawing its working
    # JavaScript: the function (step, ...inputs) => matrix the page computes it with, or the
    # ScriptFile holding it
    script: str
    shape: Callable = keeps_shape  # (step_def, input shapes) -> its shape; ValueError if unfit
    slips: Callable = no_slips  # (step_def, sym, spec, before, whole) -> [(change, what it says)]
    # its tolerance face is a true bound (the op is linear in its inputs' errors, or piecewise so),
    # not a first-order one: its chain takes no margin (marking.MARGIN), which would compound
    # through every later step
    sharp: bool = False


def working_templates(name: str) -> dict[str, str]:
    """An op's own working templates, by the convention the built-in ones follow:
    latex/steps/<name>.tex.j2 and markdown/steps/<name>.md.j2."""
    return {form: f"{form}/steps/{name}.{suffix}.j2" for form, suffix in STEP_FORMATS.items()}


# The working of a step with no template of its own: its matrix under its formula.
DEFAULT_TEMPLATES = working_templates("default")

OPS: dict[str, Op] = {}  # every registered op by name; read it through ``registered``


def registered() -> dict[str, Op]:
    """Every registered op by name, the built-in ones first (imported on first use, see the
    module's docstring)."""
    if not OPS:
        from generator.maths import builtin_ops  # noqa: F401 (importing it registers them)
    return OPS


def op(name: str) -> Op:
    """The registered op of that name; a ValueError names the registered ones."""
    found = registered().get(name)
    if found is None:
        raise ValueError(f"op {name!r} is not registered; the ops are {', '.join(OPS)}")
    return found


def register_op(new: Op) -> None:
    """Add an op, or describe one anew (a test's toy op may).  An installed plugin only adds:
    ``running.plugins`` refuses one whose op takes a registered name."""
    registered()[new.name] = new


def unregister_op(name: str) -> None:
    """Take an op out again (a test's toy op)."""
    registered().pop(name, None)


def working_template(kind: str, form: str) -> str:
    """The template drawing the working of a step of that op (a Step's ``kind``) in that
    format; a step no op computes (a permutation) gets the default one."""
    found = registered().get(kind)
    return found.templates[form] if found else DEFAULT_TEMPLATES[form]
