"""Stage 3, renderers: solved problems -> document texts, through Jinja templates.

Templates hold layout; numbers become text only through ``formatting``.  A
user's template folder (``--templates DIR``) is searched before the built-in
one, so a teacher overrides one file and keeps the rest.  Each step is drawn by
the first template found of ``steps/<name>``, ``steps/<kind>``, ``steps/default``.

In LaTeX everything a template prints is escaped (pylatex's ``escape_latex``)
unless it is marked trusted with ``NoEscape``; only ``formatting`` makes those.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jinja2
from pylatex.utils import NoEscape, escape_latex

from . import formatting as fmt
from .paper import Paper

# In the repository (and an editable install) the templates are at its top; an installed
# wheel carries them inside the package.
BUILTIN_TEMPLATES = next(folder for folder in (Path(__file__).resolve().parent.parent / "templates",
                                               Path(__file__).resolve().parent / "templates")
                         if folder.is_dir())


@dataclass(frozen=True)
class DocumentInfo:
    """What the header of a document says; set from the command line."""

    title: str = "Scaled dot-product self-attention"
    course: str = ""
    date: str = ""
    instructions: str = ("Answer every part. Show every intermediate matrix, in order: "
                         "each step earns its own marks.")
    seed: int | None = None
    decimals: int = 4
    draw_command: str = ""  # how to draw the same random set again; empty for a spec file
    versioned: bool = False  # several versions or a roster: label each paper


def render_markdown(questions: list[Paper], keys: list[Paper], info: DocumentInfo,
                    user_templates: Path | None = None) -> dict[str, str]:
    """The question papers and the answer keys as Markdown, keyed by file name."""
    return _render_pair(markdown_environment(info.decimals, user_templates), "markdown", "md",
                        questions, keys, info)


def render_latex(questions: list[Paper], keys: list[Paper], info: DocumentInfo,
                 user_templates: Path | None = None) -> dict[str, str]:
    """The question papers and the answer keys as LaTeX sources, keyed by file name."""
    return _render_pair(latex_environment(info.decimals, user_templates), "latex", "tex",
                        questions, keys, info)


def _render_pair(environment, folder, suffix, questions, keys, info) -> dict[str, str]:
    """Each document holds its papers one after another (one paper unless versions are asked)."""
    return {f"{document}.{suffix}":
            environment.get_template(f"{folder}/{document}.{suffix}.j2").render(
                papers=papers, info=info)
            for document, papers in (("questions", questions), ("answers", keys))}


def markdown_environment(decimals: int, user_templates: Path | None = None,
                         autoescape: bool = False) -> jinja2.Environment:
    """Plain-text numbers and matrices; with ``autoescape`` it also serves the HTML pages,
    which show the Markdown key's working as it is."""
    environment = make_environment(user_templates, autoescape=autoescape)
    number = partial(fmt.decimal_text, decimals=decimals)
    environment.filters.update(
        num=number,
        paren=lambda n: fmt.parenthesized(number(n)),
        vector=lambda nums: "[" + ", ".join(number(n) for n in nums) + "]",
        matrix=lambda step: fmt.plain_matrix([[number(n) for n in row] for row in step.entries]),
        exact=partial(fmt.short_exact_text, decimals=decimals),
        **_relations(decimals, exact="=", rounded="≈"),
    )
    return environment


def latex_environment(decimals: int, user_templates: Path | None = None) -> jinja2.Environment:
    # Delimiters that TeX never writes: {{ }} and {# #} clash with TeX's braces and {#1}.
    environment = make_environment(
        user_templates, block_start_string="<%", block_end_string="%>",
        variable_start_string="<<", variable_end_string=">>",
        comment_start_string="<#", comment_end_string="#>", finalize=_escape_untrusted)
    def number(num) -> NoEscape:
        return NoEscape(fmt.latex_number(num, decimals))

    environment.filters.update(
        num=number,
        paren=lambda n: NoEscape(fmt.parenthesized(number(n))),
        vector=lambda nums: NoEscape(fmt.latex_vector([number(n) for n in nums])),
        matrix=lambda step: NoEscape(fmt.latex_matrix([[number(n) for n in row]
                                                       for row in step.entries])),
        exact=lambda n: _trusted_or_none(fmt.short_exact_latex(n, decimals)),
        tex=lambda value: NoEscape(fmt.exact_latex(value)),
        symbol=lambda name: NoEscape(fmt.latex_symbol(name)),
        **_relations(decimals, exact="=", rounded=NoEscape(r"\approx")),
    )
    return environment


def make_environment(user_templates: Path | None, **options) -> jinja2.Environment:
    folders = [user_templates] if user_templates else []
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, BUILTIN_TEMPLATES]),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=_bytecode_cache(),
        **{"autoescape": False, **options})
    environment.globals["zip"] = zip
    environment.filters["letter_index"] = lambda letter: "abcdefghijklmnopqrstuvwxyz".index(letter)
    return environment


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (keyed by each template's source, so an edited
    template is compiled afresh): compiling them all costs a tenth of a second a run."""
    try:
        return jinja2.FileSystemBytecodeCache()  # a private folder under the system's temp dir
    except (OSError, RuntimeError):
        return None


def _relations(decimals: int, exact: str, rounded: str) -> dict:
    """Filters that write '=' after an exact number and '≈' after a rounded one."""

    def all_exact(nums) -> bool:
        return all(fmt.is_exact_at(n, decimals) for n in nums)

    return dict(rel=lambda n: exact if all_exact([n]) else rounded,
                vrel=lambda nums: exact if all_exact(nums) else rounded)


def _escape_untrusted(value):
    if value is None or isinstance(value, (NoEscape, int)):
        return value
    # pylatex writes ^ as the accent \^{}, which prints a small hat; T1 has the real caret.
    return NoEscape(escape_latex(str(value)).replace(r"\^{}", r"\textasciicircum{}"))


def _trusted_or_none(text: str | None):
    return None if text is None else NoEscape(text)
