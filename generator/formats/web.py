"""Stage 3, renderers for the web: a self-check practice page and a Moodle question bank.

Both reuse the Markdown templates' prompts and worked keys (the page reveals a
step's working exactly as the Markdown key has it), inside HTML that the
environment escapes by default.  The practice page is one self-contained file:
its style, its script and its maths (MathML) are inline, and it asks for nothing
from the network.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from functools import partial
from pathlib import Path

from markupsafe import Markup, escape

from generator.maths import ops, steps
from generator.maths.marking import Tolerances, slips
from generator.rendering import formatting as fmt
from generator.rendering.hints import hint_of, pick_hint
from generator.rendering.language import ENGLISH, Language, language_of, said, speaking
from generator.rendering.language import gettext as _
from generator.rendering.paper import DocumentInfo, Paper, header_text
from generator.rendering.prose import mathml, plain_maths, spoken, words_translated
from generator.rendering.render import add_prose, markdown_environment, rendered_pieces
from generator.rendering.sinks import IN_MEMORY, Sink
from generator.rendering.teacher_text import cloze_literal
from generator.rendering.template_files import template_source
from generator.running.inputs import InputError

PRACTICE_SCRIPT = "html/practice.js"  # found along the template folders, as a template is
# The line of practice.js's OPS table that each registered op's script face takes the place of.
OPS_LINE = "    /* the registered ops' own functions (each op's script face: web.practice_script) */\n"


def render_moodle(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None,
                  sink: Sink = IN_MEMORY) -> str | Path:
    """A Moodle XML question bank: one cloze question per problem, a category per version;
    written into ``sink`` as it is rendered."""
    environment = web_environment(info.decimals, user_templates, "moodle",
                                  language_of(info.language, user_templates))
    template = environment.get_template("moodle/quiz.xml.j2")
    return sink.text("moodle.xml", rendered_pieces(template, papers=keys, info=info))


def moodle_notes() -> list[str]:
    """What a teacher should know before setting the bank as a quiz: Moodle makes a cloze
    question's mark the sum of its gap weights (question/type/multianswer/questiontype.php,
    qtype_multianswer_extract_question; the XML import reads no <defaultgrade> for a cloze
    question, and its edit form has no mark), so only the quiz can hold the paper's marks."""
    return ["moodle.xml: Moodle makes a cloze question's mark the sum of its gap weights, which "
            "keep the paper's proportions but not its marks; after adding the questions to a "
            "quiz, set each one's maximum mark to the marks in its name and the quiz's maximum "
            "grade to the paper's total (Quiz, Questions)"]


def render_practice(keys: list[Paper], info: DocumentInfo, user_templates: Path | None = None,
                    sink: Sink = IN_MEMORY) -> dict[str, str | Path]:
    """One practice page per version: practice.html, or practice/version-NN.html, each
    written into ``sink`` as it is rendered."""
    language = language_of(info.language, user_templates)
    environment = web_environment(info.decimals, user_templates, "html", language)
    template = environment.get_template("html/practice.html.j2")
    script = Markup(practice_script(user_templates))
    pages = {}
    for paper in keys:
        name = f"practice/version-{paper.version:02d}.html" if info.versioned else "practice.html"
        pages[name] = sink.text(name, rendered_pieces(
            template, paper=paper, info=info, script=script,
            data=practice_data(paper, info.decimals, language), page_language=page_language(language)))
    return pages


def page_language(language: Language) -> dict | None:
    """What the page's script needs of the language, as its data (the JSON block #language):
    its decimal mark and its messages (the catalogue's, context "page"), which ``t`` in
    practice.js looks up; None for English, whose script says its messages as written."""
    if language.decimal == "." and not language.page:
        return None
    return {"tag": language.tag, "decimal": language.decimal, "messages": language.page}


def practice_script(user_templates: Path | None = None) -> str:
    """The page's script: practice.js, its OPS table holding each registered op's own
    function (its script face), in the registry's order; an op the page never computes (a
    given) has none.  practice.js and each op's script file are found along the template
    folders (``template_files``): a teacher's --templates folder may replace either."""
    script, found_at = template_source(PRACTICE_SCRIPT, user_templates)
    if OPS_LINE not in script:
        raise InputError(f"{found_at}: the line its OPS table's ops go in is missing "
                         f"({OPS_LINE.strip()})")
    return script.replace(OPS_LINE, "".join(_ops_entry(op, user_templates)
                                            for op in ops.registered().values() if op.script))


def _ops_entry(op, user_templates: Path | None) -> str:
    """An op's entry in the OPS table: its name, and its function indented as the table is."""
    source = (template_source(op.script, user_templates)[0] if isinstance(op.script, ops.ScriptFile)
              else op.script)
    function = source.rstrip("\n").replace("\n", "\n    ")
    return f"    {_js_key(op.name)}: {function},\n"


def _js_key(name: str) -> str:
    """A property name as JavaScript writes it: softmax, or "softmax-backward" quoted."""
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else json.dumps(name)


def practice_data(paper: Paper, decimals: int, language: Language = ENGLISH) -> dict:
    """What the page's script needs to mark answers: each grid's key values and tolerances
    (``marking``: ``local`` when every input is the student's own, else ``chain``), the key's
    value of every step (for an earlier step left blank), the matrices the page shows as it
    shows them (``shown_inputs``), the step graph (``step_graph``) that carries a student's
    own values forward and names each step's common slips, and each choice's answer (and,
    for "which key gets the most attention", the grid of weights it follows, ``top_choices``).
    What the page says of a slip is in the language."""
    problems = {}
    for problem in paper.problems:
        question = problem.question
        tolerances = Tolerances(question, decimals)
        grids = {}
        for part in question.parts:
            for index, step in enumerate(part.written):
                tolerance = tolerances.of(step)
                grids[f"{part.letter}{index}"] = {
                    "name": grid_name(part, index, step), "values": _values(step.numeric),
                    "chain": _values(tolerance.chain, 3), "local": _values(tolerance.local, 3)}
        problems[question.spec.id] = {
            "steps": grids,
            "graph": step_graph(question, language),
            "known": {prefix + step.name: _values(step.numeric)
                      for prefix, solution in question.worked for step in solution.steps
                      if "." not in step.name},
            "given": shown_inputs(question, decimals),
            "answers": {part.letter: part.item.answer for part in question.parts if part.item},
            "top_of": top_choices(question),
        }
    return {"problems": problems, "decimals": decimals}


def top_choices(question) -> dict:
    """The parts whose choice is the key with the most attention, each with the grid of the
    weights it is read off: the page marks the choice against the student's own weights."""
    return {part.letter: grid_name(part, 0, part.written[0]) for part in question.parts
            if part.item and part.item.largest_of_grid and part.written}


def shown_inputs(question, decimals: int) -> dict:
    """Every matrix the page shows that a step reads, as shown (to the shown decimals, as the
    student reads it): the given matrices, the worked steps the statement shows (A and O
    before a swap, the forward pass before the backward one, the other head's output), and
    the steps a part keeps.  Steps computed from these are marked as from the student's own."""
    names = {id(step): _prefixed(prefix, step.name)
             for prefix, solution in question.worked for step in solution.steps}
    shown = {step.name: as_shown(step, decimals) for step in question.given}
    shown.update({names[id(step)]: as_shown(step, decimals)
                  for _, _, step in question.shown if id(step) in names})
    return {**shown, **kept_as_shown(question, decimals)}


def as_shown(step, decimals: int) -> list:
    """A step's entries as the page shows them, rounded to the shown decimals; -inf as null."""
    return [[None if n.value == -math.inf else float(fmt.decimal_text(n, decimals)) for n in row]
            for row in step.entries]


def kept_as_shown(question, decimals: int) -> dict:
    """The steps a part keeps (shown, not asked) as the page shows them, rounded to the shown
    decimals: the student works on from these, so the steps after them are marked against
    what they give, as against given matrices."""
    return {step.name: as_shown(step, decimals) for part in question.parts for step in part.kept}


def _values(matrix, digits: int | None = None) -> list:
    """A matrix for the page's JSON: -inf (masked) as null; tolerances to a few digits, up."""
    def entry(x):
        if not math.isfinite(x):
            return None
        return float(fmt.rounded_up(x, digits)) if digits else float(x)
    return [[entry(x) for x in row] for row in matrix.tolist()]


def moodle_gaps(question, decimals: int) -> tuple[dict, int]:
    """Each part's gaps, with whole-number weights: a part's gaps add up to its marks times
    one factor for the whole question, which is its grade in Moodle (the sum of the weights).

    A part's marks go to its written steps by their step marks (else equally) and to its
    choice as to one more step; a step's share is split evenly between its entries, and its
    shape where the part asks it (a SHORTANSWER gap, counted as one more entry)."""
    shares = []
    # Where the question asks M itself, the masked scores' -inf entries are gaps too (typed as
    # M's are): shown as given, they would give M away to a student who reads on.
    typed = {"mask", "masking"} if any(part.task == "write-mask" for part in question.parts) else {"mask"}
    for part in question.parts:
        steps = part.written
        weights = part.answer_weights
        total = sum(weights)
        cells = [sum(1 for x in step.numeric.flat if math.isfinite(x) or step.kind in typed)
                 + part.asks_shape for step in steps]
        shares.append([Fraction(part.marks * w, total * n) for w, n in
                       zip(weights, cells + ([1] if part.item else []))])
    factor = math.lcm(*(share.denominator for part in shares for share in part))
    tolerances = Tolerances(question, decimals)
    gaps = {}
    for part, part_shares in zip(question.parts, shares):
        weight = [int(share * factor) for share in part_shares]
        gaps[part.letter] = {
            "steps": [(step, [[_gap(step, i, j, tolerance, weight[k], typed)
                                for j, tolerance in enumerate(tolerance_row)]
                               for i, tolerance_row in enumerate(tolerances.of(step).chain.tolist())])
                      for k, step in enumerate(part.written)],
            "shapes": [fmt.cloze_shortanswer(fmt.shape_forms(*step.shape), weight[k])
                       if part.asks_shape else None for k, step in enumerate(part.written)],
            "item_weight": weight[-1] if part.item else None}
    return gaps, question.marks * factor


# The ways a student may type minus infinity, each taken as it stands (Moodle's SHORTANSWER
# and Canvas's fill-in compare whole answers, ignoring case and the spaces around them).
MINUS_INFINITY_FORMS = ("-inf", "−inf", "-∞", "−∞", "-infinity", "−infinity")


ZERO_FORMS = ("0", "+0", "-0", *(f"0.{'0' * places}" for places in range(1, 7)))


def mask_forms(step, i: int, j: int) -> tuple[str, ...]:
    """The answers right for an entry of the mask M asked itself: 0, or −∞ typed any way."""
    return ZERO_FORMS if math.isfinite(step.numeric[i, j]) else MINUS_INFINITY_FORMS


def _gap(step, i: int, j: int, tolerance: float, weight: int, typed=("mask",)) -> str | None:
    """An entry's Moodle gap: NUMERICAL; a masked score's none (it shows −∞) unless its kind is
    ``typed``; each entry of the mask M asked itself a SHORTANSWER gap (0 or −∞), so that none
    tells which it is, and a typed masked score's −∞ one too."""
    if step.kind == "mask" or (step.kind in typed and not math.isfinite(step.numeric[i, j])):
        return fmt.cloze_shortanswer(mask_forms(step, i, j), weight)
    value = step.numeric[i, j]
    return fmt.cloze_numerical(value, tolerance, weight) if math.isfinite(value) else None


def step_graph(question, language: Language = ENGLISH) -> dict:
    """How each step the student works follows from others, read from the plans the engine
    ran (``steps.plan``) and the matrices the question picks off others (``Question.picks``):
    {name: {op, inputs, ..., slips}}, names as the page's grids are named.  Each slip is a
    change to the step and what the page says when a student's grid is what it gives (in the
    language: the ops' slips faces say it by ``language.gettext``, spoken here)."""
    with speaking(language):
        return _step_graph(question)


def _step_graph(question) -> dict:
    graph = {}
    for prefix, solution in question.worked:
        named = partial(_prefixed, prefix)

        def sym(name, named=named):
            return plain_symbol(named(name))
        before = {s.name: s for s in solution.plan if not s.is_given}.get
        for step in solution.plan:
            if not step.is_given:
                graph[named(step.name)] = {
                    "op": step.op, "inputs": [named(name) for name in step.inputs],
                    "transpose": step.transpose, "transpose_left": step.transpose_left,
                    "by_columns": step.by_columns, "factor": _factor(step, solution.spec),
                    "slips": [_slip(change, says, named)
                              for change, says in [*slips(step, sym, solution.spec, before,
                                                          question.spec if prefix else None),
                                                   *_skipping_slips(step, solution.plan, sym)]]}
                if step.op == "masking" and solution.spec.mask != "causal":  # the page's default
                    graph[named(step.name)]["visible"] = [list(row) for row in solution.spec.visible]
                if step.op == "masking" and any(part.task == "write-mask" for part in question.parts):
                    graph[named(step.name)]["inputs"].append("M")  # the student's own M, carried forward
    for pick in question.picks:
        graph[pick.name] = {"op": "pick", "inputs": [pick.source], "rows": pick.rows,
                            "columns": pick.columns,
                            "slips": [{"change": {"rows": rows, "columns": columns},
                                       "says": said(says, _)} for rows, columns, says in pick.slips]}
    return graph


def _skipping_slips(step, plan, sym) -> list[tuple[dict, str]]:
    """A step worked from a sibling of one of its inputs that skips a step: where an input X
    is op(Z, ...) with Z = f(W) and the plan also has Y = op(W, ...) (the weights A = softmax(S̃)
    and the unscaled A_raw = softmax(S)), a student may use Y for X (O = A_raw V)."""
    worked = {s.name: s for s in plan if not s.is_given}
    found = []
    for k, name in enumerate(step.inputs):
        x = worked.get(name)
        z = worked.get(x.inputs[0]) if x and x.inputs else None
        if not (x and z and z.inputs):
            continue
        for y in worked.values():
            if (y.name not in (name, step.name) and y.op == x.op
                    and list(y.inputs) == [z.inputs[0], *x.inputs[1:]]):
                inputs = [*step.inputs[:k], y.name, *step.inputs[k + 1:]]
                found.append(({"inputs": inputs}, _(
                    "this is worked from %(used)s, not %(input)s: %(used)s is from %(source)s, "
                    "skipping %(skipped)s") % {"used": sym(y.name), "input": sym(name),
                                                "source": sym(z.inputs[0]), "skipped": sym(z.name)}))
    return found


def _prefixed(prefix: str, name: str) -> str:
    return name if "." in name else prefix + name


def _slip(change: dict, says: str, named) -> dict:
    """A slip as the page's script reads it, any inputs it changes named as the grids are."""
    if "inputs" in change:
        change = {**change, "inputs": [named(name) for name in change["inputs"]]}
    return {"change": change, "says": says}


def _factor(step, spec) -> float:
    """What a scaling step multiplies by: the problem's scale (else 1/sqrt(d_k)), or a
    mistake's 1 or 1/d_k (1 for a problem with no matrices, which scales nothing)."""
    if not spec.d_k:
        return 1.0
    usual = 1 / math.sqrt(spec.d_k) if spec.scale is None else float(spec.scale)
    return {"one": 1.0, "one-over-dk": 1 / spec.d_k}.get(step.factor, usual)


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def plain_symbol(name: str) -> str:
    """A step's symbol as the page's messages print it, in plain text: S̃, dA, A₁ (head 1's)."""
    prefix, _, base = name.rpartition(".")
    text = plain_maths(steps.symbol(base))
    head = re.fullmatch(r"(?:head|kv)(\d+)", prefix)  # head1.scores: S₁; kv1.K (shared): K₁
    return text + head[1].translate(SUBSCRIPTS) if head else text


STRONG = re.compile(r"\*\*(.+?)\*\*")

def page_hint(question, step, part, info, decimals: int, language: Language = ENGLISH):
    """A step's hint: read off another matrix (a head's block, the swapped weights) as its
    pick says, else from the op that computes it; in the language."""
    index = part.written.index(step) if step in part.written else 0
    pick = next((p for p in question.picks if p.name == grid_name(part, index, step)), None)
    if pick is not None:
        return pick_hint(pick, steps.symbol(pick.source), written_symbol(part, index, step),
                         language)
    return hint_of(question, step, part.head, decimals,
                   info.table_places if info.exponent_table else None, language)


def grid_name(part, index: int, step) -> str:
    """The name a step's grid goes by on the page; each head's steps are head1.scores, ...,
    so that a head's later steps can be marked against the student's own earlier ones."""
    if part.grid_names:
        return part.grid_names[index]
    return f"head{part.head}.{step.name}" if part.head is not None else step.name


def written_symbol(part, index: int, step) -> str:
    """The symbol (TeX) of a step a part asks: as the part shows it (A', Q_1), else the step's
    own, with its head's number (S_1)."""
    return part.shown_as[index] if part.shown_as else steps.symbol(step.name, part.head)


def first_row(step) -> int:
    """The row of its matrix a one-row step is (a row question's row 3 of S̃ and A), as its
    working numbers it; 0 for a whole matrix."""
    if step.shape[0] != 1 or not step.working:
        return 0
    return getattr(step.working[0], "row", 0)


def grid_label(problem, part, index: int, step, gettext=str) -> str:
    """What a screen reader says of a grid's boxes before their row and column: which problem
    and part, and the step's symbol (every problem has a Q), in the language of ``gettext``."""
    _ = gettext
    return _("Problem %(number)s (%(part)s), %(symbol)s") % {
        "number": problem.number, "part": part.letter,
        "symbol": spoken(written_symbol(part, index, step), gettext)}


def widened_example(items, decimals: int, written=str) -> dict | None:
    """A number the key's working writes with more decimals than the matrices show (0.16425
    for 0.1643), and as they show it (each written by ``written``: the language's decimal
    mark): the first such in the working of these problems' or parts' steps, or None."""
    parts = [part for item in items for part in getattr(item, "parts", (item,))]
    shown = [step for part in parts for step in part.steps]
    # an entry of a matrix first (a weight): an exponential is in no matrix
    for step in sorted(shown, key=lambda step: step.kind == "softmax"):
        for line in step.working:
            found = fmt.widened_operand(line, decimals)
            if found is not None:
                return {"long": written(fmt.decimal_text(found, fmt.working_places(line, decimals))),
                        "short": written(fmt.decimal_text(found, decimals))}
    return None


def entry_chars(step, decimals: int) -> int:
    """How many characters a grid's boxes hold: its longest entry as the key writes it (-0.5)
    or as typed to the shown decimals (-0.5000), at least 4."""
    def longest(n):
        shown = fmt.decimal_text(n, decimals)
        return max(len(shown), len(f"{n.value:.{decimals}f}") if "e" not in shown else 0)
    return max([longest(n) for row in step.entries for n in row if n.value != -math.inf] + [4])


def matrix_words(name: str, rows: list[list[str]], gettext=str, decimal: str = ".") -> str:
    """A matrix in words for its accessible name: its name, its shape, then row by row, its
    entries apart by commas, or by semicolons where a comma is the decimal mark (0,5; −1,25)."""
    shape = gettext("%(rows)s by %(columns)s") % {"rows": len(rows), "columns": len(rows[0])}
    apart = "; " if decimal == "," else ", "
    said = ". ".join(gettext("row %(row)s") % {"row": i} + ": " + apart.join(row).replace("-", "\u2212")
                     for i, row in enumerate(rows, 1))
    return f"{name}, {shape}. {said}"


def web_environment(decimals: int, user_templates: Path | None, prose: str,
                    language: Language = ENGLISH):
    """The Markdown environment, escaping HTML, with prose printed for the page (MathML) or
    for Moodle (TeX for its MathJax filter), in the language."""
    environment = markdown_environment(decimals, user_templates, autoescape=True, language=language)
    add_prose(environment, prose, decimals, language)

    def number(n) -> str:  # a matrix's entry, with the language's decimal mark
        return language.number(fmt.decimal_text(n, decimals))

    def tex_number(n) -> str:  # in TeX a comma in braces is a decimal comma (no space after it)
        return fmt.latex_number(n, decimals).replace(".", "{" + language.decimal + "}") \
            if language.decimal != "." else fmt.latex_number(n, decimals)
    environment.filters.update(
        mathml=lambda step: Markup(fmt.mathml_matrix([[number(n) for n in row]
                                                      for row in step.entries])),
        mathml_symbol=lambda tex: Markup(mathml(words_translated(tex, language.gettext))
                                         .removeprefix("<math>").removesuffix("</math>")),
        # a symbol's accessible name, in the language: S tilde sub 1
        spoken=lambda tex: spoken(tex, language.gettext),
        # a default text (the title) translated, a teacher's kept as typed
        translated=partial(header_text, gettext=language.gettext),
        tex_symbol=steps.symbol,
        tex_matrix=lambda step: fmt.latex_matrix([[tex_number(n) for n in row]
                                                  for row in step.entries]),
        # a choice rendered by the escaping environment, unescaped, then escaped as Moodle reads it
        cloze_text=lambda text: Markup(fmt.cloze_escape(Markup(text).unescape())),
        cdata=lambda text: Markup(str(text).replace("]]>", "]]]]><![CDATA[>")),
        # a teacher's text, as typed: in a cloze question its braces must not form a gap
        literal=cloze_literal if prose == "moodle" else escape,
    )
    environment.tests["masked"] = lambda num: num.value == float("-inf")
    environment.globals["grid_name"] = grid_name
    environment.globals.update(
        hint_of=lambda question, step, part, info: page_hint(question, step, part, info, decimals,
                                                             language),
        grid_label=partial(grid_label, gettext=language.gettext), written_symbol=written_symbol,
        first_row=first_row, direction=language.direction,
        widened_example=lambda items: widened_example(items, decimals, language.number))
    # a given matrix's accessible name on the page, its rows said apart (MathML is read flat):
    # "X, 3 by 3. row 1: 0, 1, 1. row 2: ..."
    environment.filters["matrix_words"] = lambda step, symbol: matrix_words(
        spoken(symbol, language.gettext), [[number(n) for n in row] for row in step.entries],
        language.gettext, language.decimal)
    environment.filters["strong"] = lambda text: Markup(STRONG.sub(r"<b>\1</b>", str(text)))
    environment.filters["entry_chars"] = lambda step: entry_chars(step, decimals)
    environment.globals["moodle_gaps"] = lambda question: moodle_gaps(question, decimals)
    return environment
