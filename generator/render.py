"""Stage 3, renderers: solved problems -> document texts, through Jinja templates.

Templates hold layout; numbers become text only through ``formatting``.  A
user's template folder (``--templates DIR``) is searched before the built-in
one, so a teacher overrides one file and keeps the rest.  Each step is drawn by
the first template found of ``steps/<name>``, ``steps/<kind>``, ``steps/default``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jinja2

from . import formatting as fmt
from .engine import Solution

BUILTIN_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@dataclass(frozen=True)
class DocumentInfo:
    """What the header of a document says; set from the command line."""

    title: str = "Scaled dot-product self-attention"
    seed: int | None = None
    decimals: int = 4


def markdown_environment(decimals: int, user_templates: Path | None = None) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=_loader(user_templates), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    number = partial(fmt.decimal_text, decimals=decimals)
    environment.filters.update(
        num=number,
        rel=partial(fmt.relation, decimals=decimals),
        vrel=lambda nums: "=" if all(fmt.is_exact_at(n, decimals) for n in nums) else "≈",
        exact=partial(fmt.short_exact_text, decimals=decimals),
        paren=lambda n: fmt.parenthesized(number(n)),
        vector=lambda nums: "[" + ", ".join(number(n) for n in nums) + "]",
        matrix=lambda step: fmt.plain_matrix([[number(n) for n in row] for row in step.entries]),
    )
    environment.globals["zip"] = zip
    return environment


def render_markdown(solutions: list[Solution], info: DocumentInfo,
                    user_templates: Path | None = None) -> dict[str, str]:
    """The question sheet and the answer key as Markdown, keyed by file name."""
    environment = markdown_environment(info.decimals, user_templates)
    context = dict(solutions=solutions, info=info)
    return {
        "questions.md": environment.get_template("markdown/questions.md.j2").render(context),
        "answers.md": environment.get_template("markdown/answers.md.j2").render(context),
    }


def _loader(user_templates: Path | None) -> jinja2.BaseLoader:
    folders = [user_templates] if user_templates else []
    return jinja2.FileSystemLoader([*folders, BUILTIN_TEMPLATES])
