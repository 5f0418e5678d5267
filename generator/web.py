"""Stage 3, renderers for the web: a self-check practice page and a Moodle question bank.

Both reuse the Markdown templates' prompts and worked keys (the page reveals a
step's working exactly as the Markdown key has it), inside HTML that the
environment escapes by default.  The practice page is one self-contained file:
its style, its script and its maths (MathML) are inline, and it asks for nothing
from the network.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

from markupsafe import Markup

from . import formatting as fmt
from .paper import DocumentInfo, Paper
from . import steps
from .prose import mathml
from .render import BUILTIN_TEMPLATES, add_prose, markdown_environment
from .spec import MISTAKES

PRACTICE_SCRIPT = BUILTIN_TEMPLATES / "html" / "practice.js"


def render_moodle(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None) -> str:
    """A Moodle XML question bank: one cloze question per problem, a category per version."""
    environment = _web_environment(info.decimals, user_templates, "moodle")
    return environment.get_template("moodle/quiz.xml.j2").render(papers=keys, info=info)


def render_practice(keys: list[Paper], info: DocumentInfo,
                    user_templates: Path | None = None) -> dict[str, str]:
    """One practice page per version: practice.html, or practice/version-NN.html."""
    environment = _web_environment(info.decimals, user_templates, "html")
    template = environment.get_template("html/practice.html.j2")
    script = Markup(PRACTICE_SCRIPT.read_text(encoding="utf-8"))
    pages = {}
    for paper in keys:
        name = f"practice/version-{paper.version:02d}.html" if info.versioned else "practice.html"
        pages[name] = template.render(paper=paper, info=info, script=script,
                                      data=practice_data(paper, info.decimals),
                                      tolerance=fmt.key_tolerance(info.decimals))
    return pages


def practice_data(paper: Paper, decimals: int) -> dict:
    """What the page's script needs to mark answers: every step's values, the step graph
    (``step_graph``) for carrying a student's own values forward, and the tolerance."""
    problems = {}
    for problem in paper.problems:
        question = problem.question
        steps = {}
        for part in question.parts:
            for index, step in enumerate(part.steps):
                steps[f"{part.letter}{index}"] = {
                    "name": grid_name(part, index, step),
                    "values": [[None if n.value == float("-inf") else n.value for n in row]
                               for row in step.entries]}
        problems[question.spec.id] = {
            "steps": steps,
            "graph": step_graph(question),
            "given": {s.name: [[n.value for n in row] for row in s.entries] for s in question.given},
            "choices": [item.answer for item in question.items],
            "wrong_step": question.spec.mistake and MISTAKES[question.spec.mistake],
        }
    return {"tolerance": fmt.key_tolerance(decimals), "problems": problems}


def step_graph(question) -> dict:
    """How each step the student works follows from others, read from the plans the engine
    ran (``steps.plan``): {name: {op, inputs, ...}}, names as the page's grids are named."""
    graph = {}
    for prefix, solution in question.worked:
        scale = solution.spec.scale
        factor = 1 / math.sqrt(solution.spec.d_k) if scale is None else float(scale)
        for step in solution.plan:
            if not step.is_given:
                graph[prefix + step.name] = {
                    "op": step.op, "inputs": [prefix + name if "." not in name else name
                                              for name in step.inputs],
                    "transpose": step.transpose, "by_columns": step.by_columns, "factor": factor}
    return graph


def grid_name(part, index: int, step) -> str:
    """The name a step's grid goes by on the page; each head's steps are head1.scores, ...,
    so that a head's later steps can be marked against the student's own earlier ones."""
    if part.grid_names:
        return part.grid_names[index]
    return f"head{part.head}.{step.name}" if part.head is not None else step.name


def _web_environment(decimals: int, user_templates: Path | None, prose: str):
    """The Markdown environment, escaping HTML, with prose printed for the page (MathML) or
    for Moodle (TeX for its MathJax filter)."""
    environment = markdown_environment(decimals, user_templates, autoescape=True)
    add_prose(environment, prose, decimals)
    number = partial(fmt.decimal_text, decimals=decimals)
    environment.filters.update(
        mathml=lambda step: Markup(fmt.mathml_matrix([[number(n) for n in row]
                                                      for row in step.entries])),
        mathml_symbol=lambda tex: Markup(mathml(tex).removeprefix("<math>").removesuffix("</math>")),
        tex_symbol=steps.symbol,
        tex_matrix=lambda step: fmt.latex_matrix([[fmt.latex_number(n, decimals) for n in row]
                                                  for row in step.entries]),
        cloze=lambda num: fmt.cloze_numerical(num, decimals),
        cloze_text=fmt.cloze_escape,
        cdata=lambda text: Markup(str(text).replace("]]>", "]]]]><![CDATA[>")),
    )
    environment.tests["masked"] = lambda num: num.value == float("-inf")
    environment.globals["grid_name"] = grid_name
    return environment
