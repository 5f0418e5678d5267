"""Stage 3, renderers: solved problems -> document texts, through Jinja templates.

Templates hold layout; numbers become text only through ``formatting``.  A
user's template folder (``--templates DIR``) is searched before the built-in
one, so a teacher overrides one file and keeps the rest.  Each step is drawn by
the first template found of ``steps/<name>``, ``steps/<kind>`` and its op's own
(``ops.working_template``: ``steps/<op>``, or ``steps/default``).

In LaTeX everything a template prints is escaped (pylatex's ``escape_latex``)
unless it is marked trusted with ``NoEscape``; only ``formatting`` makes those.
Every template, built-in or the teacher's, runs in Jinja's immutable sandbox: a
template can read the values it is given and call the filters, nothing more
(no ``__globals__``, no ``os``, no changing a list).
"""

from __future__ import annotations

import builtins
import contextlib
import difflib
import re
import traceback
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import jinja2
import jinja2.sandbox
import sympy
from babel import Locale, UnknownLocaleError
from babel.lists import format_list
from markupsafe import Markup
from pylatex.utils import NoEscape, escape_latex

from generator.kinds import TYPES
from generator.maths import insight, ops, steps
from generator.maths.engine import Num
from generator.pdf.typesetting import (
    PDFLATEX,
    actual_text,
    pdflatex_lacks,
    right_to_left,
    typesetting_of,
)
from generator.rendering import formatting as fmt
from generator.rendering.language import CATALOGUES, ENGLISH, Language, language_of, placed
from generator.rendering.paper import DocumentInfo, Paper, header_text, writing_lines
from generator.rendering.prose import (
    PRINTERS,
    LatexPrinter,
    ProseRenderer,
    SourceLoader,
    TypeProse,
    plain_maths,
    prose_file_of,
)
from generator.rendering.sinks import IN_MEMORY, Job, Sink
from generator.rendering.teacher_text import markdown_code_span, markdown_literal
from generator.rendering.template_files import (
    BUILTIN_TEMPLATES,  # noqa: F401 (not used here: the tests read render.BUILTIN_TEMPLATES)
    CheckedLoader,
    template_folders,
)
from generator.running.private import private_cache

# Each paper format's documents, in the order they are written (LaTeX's key first: it is the
# longer TeX run), and the papers each prints.
DOCUMENTS = {"markdown": (("questions.md", "questions"), ("answers.md", "keys")),
             "latex": (("answers.tex", "keys"), ("questions.tex", "questions"))}


def paper_documents(printer: str, questions: list[Paper], keys: list[Paper], info: DocumentInfo,
                    user_templates: Path | None = None, sink: Sink = IN_MEMORY) -> list[Job]:
    """The question papers and the answer keys as LaTeX or Markdown (``printer``): a job for
    each document, which writes it into ``sink`` as it is rendered.

    A LaTeX document is rendered for pdflatex; when it then holds a character pdflatex cannot
    typeset (a name in Greek or Chinese, a Σ in the title), it is rendered again for
    LuaLaTeX with the fonts its characters need (see ``typesetting``)."""
    latex = printer == "latex"
    language = language_of(info.language, user_templates)
    environment = (latex_environment if latex else markdown_environment)(
        info.decimals, user_templates, language=language)
    write = _latex_document if latex else _markdown_document
    papers = {"questions": questions, "keys": keys}
    return [partial(write, environment, name, papers[printed], info, sink)
            for name, printed in DOCUMENTS[printer]]


def render_papers(printer: str, questions: list[Paper], keys: list[Paper], info: DocumentInfo,
                  user_templates: Path | None = None) -> dict[str, str]:
    """The question papers and the answer keys as LaTeX or Markdown, by file name."""
    return every_file(paper_documents(printer, questions, keys, info, user_templates))


render_latex, render_markdown = partial(render_papers, "latex"), partial(render_papers, "markdown")


def every_file(jobs: list[Job]) -> dict:
    """The files of a format's jobs, run one after another."""
    return {name: content for job in jobs for name, content in job().items()}


def _markdown_document(environment, name: str, papers: list[Paper], info: DocumentInfo,
                       sink: Sink) -> dict:
    return {name: sink.text(name, _pieces(environment, "markdown", name, papers, info))}


def _latex_document(environment, name: str, papers: list[Paper], info: DocumentInfo,
                    sink: Sink) -> dict:
    foreign = ForeignCharacters()
    source = sink.text(name, _pieces(environment, "latex", name, papers, info,
                                     typesetting=PDFLATEX), foreign)
    if foreign.found:  # its fonts follow from those characters, its identifier from that text
        typesetting = typesetting_of(foreign.found, sink.bytes_of(source))
        source = sink.text(name, _pieces(environment, "latex", name, papers, info,
                                         typesetting=typesetting))
    return {name: source}


class ForeignCharacters:
    """The characters of a text that pdflatex cannot typeset, gathered as it is written: a
    LaTeX source's check (``sinks.Check``), which calls the text a draft once it has any."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def __call__(self, text: str) -> bool:
        """Gather the characters of ``text`` pdflatex cannot typeset; False (a draft) once there are
        any."""
        self.found |= pdflatex_lacks(text)
        return not self.found


PIECE = 256  # template chunks a piece: a few kilobytes


def _pieces(environment, folder: str, name: str, papers, info, **extra) -> Iterator[str]:
    template = environment.get_template(f"{folder}/{name}.j2")
    return rendered_pieces(template, papers=papers, info=info, **extra)


def rendered_pieces(template: jinja2.Template, **values) -> Iterator[str]:
    """A template's text in pieces of a few kilobytes, each given as soon as it is rendered
    (a large document never sits in memory whole); whatever the template's code raises is
    a template error (``template_failures``)."""
    batch = []
    with template_failures():
        for chunk in template.generate(**values):
            batch.append(chunk)
            if len(batch) == PIECE:
                yield "".join(batch)
                batch = []
    yield "".join(batch)


@contextlib.contextmanager
def template_failures():
    """Whatever a template's code raises (a filter given the wrong kind of value, say by a
    teacher's template) is a template error, whose one line names the template and line."""
    try:
        yield
    except (jinja2.TemplateError, OSError):  # OSError: the disk's, not the template's
        raise
    except Exception as error:
        where = next((f" ({frame.f_code.co_filename}, line {line})" for frame, line
                      in reversed(list(traceback.walk_tb(error.__traceback__)))
                      if frame.f_code.co_filename.endswith(".j2")), "")
        raise jinja2.TemplateRuntimeError(f"{type(error).__name__}: {error}{where}") from error


# Folders whose templates are looked up by a step's, part's or type's name at run time.
LOOKED_UP_BY_NAME = ("steps", "notes")


def ignored_overrides(folder: Path) -> list[str]:
    """Files of a teacher's template folder that no run would read: not in a place of a
    built-in or a plugin's template, not in a folder looked up by name, not a registered
    type's prose file, not included by another of theirs."""
    known = {p.relative_to(base).as_posix() for base in template_folders()
             for p in base.rglob("*") if p.is_file()}
    mine = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    texts = "\n".join(p.read_text(encoding="utf-8", errors="replace")[:100_000]
                      for p in list(mine.values())[:500])
    notes = []
    for name in mine:
        parts = name.split("/")
        looked_up = len(parts) == 3 and parts[1] in LOOKED_UP_BY_NAME and name.endswith(".j2")
        catalogue = len(parts) == 2 and parts[0] == CATALOGUES and name.endswith(".po")
        if name in known or looked_up or catalogue or prose_file_of(name) in TYPES or name in texts:
            continue
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.5) or [
            b for b in sorted(known) if b.endswith("/" + parts[-1])][:1]
        notes.append(f"{folder / name} is not where a template is read, so it is ignored"
                     + (f" (did you mean {folder / near[0]}?)" if near else ""))
    return notes


def markdown_environment(decimals: int, user_templates: Path | None = None,
                         autoescape: bool = False, language: Language = ENGLISH) -> jinja2.Environment:
    """Plain-text numbers and matrices, with the language's decimal mark; with ``autoescape`` it
    also serves the HTML pages, which show the Markdown key's working as it is."""
    environment = make_environment(user_templates, language, autoescape=autoescape)
    add_prose(environment, "markdown", decimals, language)
    if autoescape:  # the page's working: a message's words are the template's (trusted, as its
        # text is), its values escaped for HTML as any value the template prints
        install_messages(environment, language, str, lambda value: str(Markup.escape(value)), Markup)
    else:
        install_messages(environment, language)
    # --no-calculator's example, in text: with the language's decimal mark
    environment.globals["table_quotient"] = lambda places: language.number(fmt.table_quotient(places))
    def decimal_text(num, decimals: int) -> str:
        return language.number(fmt.decimal_text(num, decimals))

    number = partial(decimal_text, decimals=decimals)
    listed = language.list_separator.join
    environment.filters.update(
        num=number,
        paren=lambda n: fmt.parenthesized(number(n)),
        vector=lambda nums: "[" + listed(number(n) for n in nums) + "]",
        matrix=lambda step: fmt.plain_matrix([[number(n) for n in row] for row in step.entries]),
        given_matrix=lambda step, spec: fmt.plain_matrix(
            [[str(n.exact) if (step.name, i, j) in spec.fractions else number(n)
              for j, n in enumerate(row)] for i, row in enumerate(step.entries)]),
        exact=partial(fmt.short_exact_text, decimals=decimals),
        # a symbol the Python side wrote in TeX (A', Q_1), as plain text, its words in the language
        maths=lambda tex: plain_maths(words_in_maths(tex, language)),
        symbol=lambda name, head=None: plain_maths(steps.symbol(name, head)),  # scores: S
        entry_symbol=fmt.plain_entry_symbol,  # S[1,2]; S_1[1,2] for head 1
        literal=markdown_literal, code_span=markdown_code_span,  # a teacher's text, as typed
        **_relations(decimals, exact="=", rounded="≈"),
        **_working_filters(decimals, decimal_text, lambda texts: "[" + listed(texts) + "]",
                           summed=lambda nums, places: language.number(fmt.printed_sum(nums, places))),
    )
    return environment


def words_need_unicode(language: Language) -> bool:
    """Whether the language's translations bring characters pdflatex cannot typeset that their
    English messages lack (Chinese: yes; German: no; a σ kept from the English does not count)."""
    for message, translated in getattr(language.translations, "_catalog", {}).items():  # gettext's
        english = message[0] if isinstance(message, tuple) else message  # (a plural: (id, n))
        if isinstance(translated, str) and pdflatex_lacks(translated) - pdflatex_lacks(english):
            return True
    return False


def latex_environment(decimals: int, user_templates: Path | None = None,
                      language: Language = ENGLISH) -> jinja2.Environment:
    """The Jinja environment of the LaTeX templates: delimiters TeX never writes, untrusted values
    escaped, and the filters that print numbers, matrices and working for LaTeX (whose maths
    prints the language's decimal mark: the preamble makes a point in maths a comma)."""
    # Delimiters that TeX never writes: {{ }} and {# #} clash with TeX's braces and {#1}.
    environment = make_environment(
        user_templates, block_start_string="<%", block_end_string="%>",
        variable_start_string="<<", variable_end_string=">>",
        comment_start_string="<#", comment_end_string="#>", finalize=_escape_untrusted,
        language=language)
    add_prose(environment, "latex", decimals, language)
    # whether the language's own words need LuaLaTeX's fallback fonts at every size (see the
    # preamble): a language written in another script prints them in maths' small sizes too
    environment.globals["language_unicode"] = words_need_unicode(language)
    install_messages(environment, language, MESSAGE_PRINTER.print, _escape_untrusted, NoEscape)
    def number(num) -> NoEscape:
        return NoEscape(fmt.latex_number(num, decimals))

    latex_vector = partial(fmt.latex_vector, separator=language.list_separator.strip())
    environment.filters.update(
        num=number,
        paren=lambda n: NoEscape(fmt.parenthesized(number(n))),
        vector=lambda nums: NoEscape(latex_vector([number(n) for n in nums])),
        matrix=lambda step: NoEscape(fmt.latex_matrix([[number(n) for n in row]
                                                       for row in step.entries])),
        exact=lambda n: _trusted_or_none(fmt.short_exact_latex(n, decimals)),
        tex=lambda value: NoEscape(fmt.exact_latex(value)),
        given_matrix=lambda step, spec: NoEscape(fmt.latex_matrix(
            [[fmt.exact_latex(n.exact) if (step.name, i, j) in spec.fractions else number(n)
              for j, n in enumerate(row)] for i, row in enumerate(step.entries)])),
        symbol=lambda name, head=None: NoEscape(steps.symbol(name, head)),
        maths=NoEscape,  # a symbol the Python side wrote in TeX (A', Q_1); LaTeX the template wrote
        shown_symbol=lambda tex: NoEscape(words_in_maths(tex, language, MESSAGE_PRINTER.print)),
        # a command may wrap after a space or a slash of a long path, never run off the page
        shell_command=shell_command_latex,
        entry_symbol=lambda name, head=None: NoEscape(fmt.latex_entry_symbol(name, head)),
        pdf_text=pdf_text_latex,
        **_relations(decimals, exact="=", rounded=NoEscape(r"\approx")),
        **_working_filters(decimals, fmt.latex_number, latex_vector, NoEscape,
                           rounded=NoEscape(r"\approx")),
    )
    return environment


class MessagePrinter(LatexPrinter):
    """Prints a template's sentence for LaTeX as prose is printed (words escaped, ``$maths$``
    kept, ``**bold**``), a hyphen as written (TeX sets it alike: the English documents keep
    their bytes) and a no-break space as ``~``."""

    def _print_Text(self, piece) -> str:
        return super()._print_Text(piece).replace("{-}", "-")


MESSAGE_PRINTER = MessagePrinter()


TEXT_IN_MATHS = re.compile(r"\\text\{([^{}]*?)(\s*)\}")


def words_in_maths(tex: str, language: Language, escape=str) -> str:
    """TeX whose ``\\text{...}`` words (marked N_ where the code writes them: "the student's")
    are in the language, a translation's words escaped by ``escape``."""
    def translated(match: re.Match) -> str:
        words = language.gettext(match[1])
        return r"\text{" + (match[1] if words == match[1] else escape(words)) + match[2] + "}"
    return TEXT_IN_MATHS.sub(translated, tex)


def install_messages(environment: jinja2.Environment, language: Language, print_words=str,
                     print_value=str, mark=str) -> None:
    """The templates' ``_``, ``gettext`` and ``ngettext`` (newstyle: ``%(name)s`` placeholders,
    ``%(num)s`` the count): the message in the language, its words printed by ``print_words``
    and each value by ``print_value``, a number in text with the language's decimal mark
    (2,5 marks)."""
    def value_text(value):
        if type(value) is float:
            value = language.number(f"{value:g}")
        return print_value(value)

    def gettext(message: str, **values):
        return mark(placed(language.gettext(message), values, print_words, value_text))

    def ngettext(singular: str, plural: str, n, **values):
        return mark(placed(language.ngettext(singular, plural, n), {"num": n, **values},
                           print_words, value_text))

    environment.globals.update(_=gettext, gettext=gettext, ngettext=ngettext)


DEFAULT_PROMPT = ("Compute {% for step in part.steps %}${{ step.name | sym }}$"
                  "{% if not loop.last %}, {% endif %}{% endfor %}, showing your working.")


# What prose may read of a template's values (and what a pass_context filter finds there).
PROSE_VALUES = ("spec", "question", "problem", "part", "step", "choice", "info")


def add_prose(environment: jinja2.Environment, printer: str, decimals: int,
              language: Language = ENGLISH) -> None:
    """The globals that print prose (see ``prose``) in this environment's format:
    ``say(source)`` renders it with the template's values; ``kind_of(question)`` is the
    question's type, whose title, statement, prompts and keys are prose;
    ``prompt_of(question, part)`` and ``formula_of(step)`` find a part's or a step's.
    A template sets ``prose_format`` (or passes ``format``) to print in another format (plain
    text in a <pre>)."""
    renderers: dict[str, ProseRenderer] = {}

    def marked_sentence(value):
        """A sentence the code keeps as data and prose prints as a value (a choice, the slip
        behind it: marked N_), in the language; any other value as it is."""
        return language.gettext(value) if type(value) is str and " " in value else value

    def renderer(name: str) -> ProseRenderer:
        if name not in renderers:
            prose_environment = Sandbox(loader=SourceLoader(), undefined=jinja2.StrictUndefined,
                                        autoescape=False, finalize=marked_sentence,
                                        bytecode_cache=_bytecode_cache({"finalize": marked_sentence}))
            renderers[name] = ProseRenderer(PRINTERS[name], prose_environment, language.gettext,
                                            "." if name == "latex" else language.decimal)
            prose_environment.filters.update(_prose_filters(renderers[name], decimals),
                                             **_list_filters(language.tag))
            prose_environment.tests["read_with_an"] = _read_with_an
            prose_environment.globals["zip"] = zip
        return renderers[name]

    @jinja2.pass_context
    def say(context, source: str, format: str | None = None, **values):
        """A template's loop variables are not in its context: pass them (part=part)."""
        name = format or context.get("prose_format") or printer
        known = {key: context.get(key) for key in PROSE_VALUES}
        return renderer(name)(source, {**known, **values})

    kinds: dict[str, TypeProse] = {}

    def kind_of(question) -> TypeProse:
        """The question's type's prose, each piece from its file where a template folder
        holds one (the teacher's first), else the type's own."""
        if question.kind not in kinds:
            kinds[question.kind] = TypeProse(TYPES[question.kind], partial(_prose_file, environment))
        return kinds[question.kind]

    def prompt_of(question, part) -> str:
        step = steps.REGISTRY.get(part.task)
        return (kind_of(question).prompts.get(part.task)
                or (step.prompt if step and step.prompt else DEFAULT_PROMPT))

    @jinja2.pass_context
    def formula_of(context, step) -> str:
        # a step the part shows by a symbol of its own: head 2's Q as Q_2, a shared key head's
        # K_1 (not kv1.K), the permuted weights A'
        part = context.get("part")
        shown = getattr(part, "shown_as", None) or ()
        at = next((k for k, s in enumerate(getattr(part, "steps", ())) if s is step), None)
        if at is not None and at < len(shown):
            return f"${shown[at]}$"
        known = steps.REGISTRY.get(step.name)
        return known.formula if known and known.formula else "{{ step.formula }}"

    environment.globals.update(say=say, kind_of=kind_of, prompt_of=prompt_of, formula_of=formula_of)


def _prose_file(environment: jinja2.Environment, name: str) -> str | None:
    """A prose file's source, from the environment's template folders; None if none has it."""
    try:
        return environment.loader.get_source(environment, name)[0]
    except jinja2.TemplateNotFound:
        return None


def _shared(part, name: str) -> str:
    """The name a head's step reads ``name`` by: a shared key/value head's (kv1.K, grouped-query
    attention, printed K_1 whichever query head reads it), else ``name``."""
    solution = getattr(part, "solution", None) if part is not None else None
    if solution is None or name in solution.step_names:
        return name
    return next((n for n in solution.step_names if n.startswith("kv") and n.endswith("." + name)), name)


def _prose_filters(renderer: ProseRenderer, decimals: int) -> dict:
    """What prose may write: a step's symbol (a head's carries its number), the step its
    formula takes its input from, another step's formula, numbers and exact values."""
    def head_of(context) -> int | None:
        part = context.get("part")
        return getattr(part, "head", None) if part is not None else None

    @jinja2.pass_context
    def sym(context, name: str) -> str:
        return steps.symbol(_shared(context.get("part"), name), head_of(context))

    @jinja2.pass_context
    def input_of(context, name: str) -> str:
        question, part = context.get("question"), context.get("part")
        solutions = (getattr(part, "solution", None), question.solution)
        # where it is computed: a part's plan may take it as given (a mistake's fix keeps Q)
        return next((step.inputs[0] for solution in solutions if solution is not None
                     for step in solution.plan if step.name == name and step.inputs),
                    steps.REGISTRY[name].inputs[0])

    @jinja2.pass_context
    def formula(context, name: str) -> str:
        known = steps.REGISTRY.get(name)
        values = {key: context.get(key) for key in PROSE_VALUES}
        return renderer.render(known.formula, values) if known else name

    return dict(sym=sym, input_of=input_of, formula=formula,
                num=lambda n: fmt.latex_number(n, decimals), tex=fmt.exact_latex,
                # a measured value (a float, not a step's entry) to the shown decimals
                fixed=lambda x: f"{float(x):.{decimals}f}",
                total=lambda values, size=False: fmt.total(values, decimals, size),
                as_printed=lambda value: fmt.as_printed(value, decimals),
                # a sentence kept as data whose message has named values (a choice's %(key)s)
                filled=lambda text, **values: renderer.translate(text) % values,
                letter_index=lambda letter: "abcdefghijklmnopqrstuvwxyz".index(letter),
                article=_article)


def _article(n) -> str:
    return "an" if _read_with_an(n) else "a"


def _read_with_an(n) -> bool:
    """Whether English writes "an" before the number (an 8, an 11, an 18): prose asks it as a
    test, ``{% if n is read_with_an %}an{% else %}a{% endif %}``, so that both words are in the
    message a translator sees."""
    return str(n).startswith("8") or n in (11, 18)


def _list_filters(tag: str) -> dict:
    """``and_list`` and ``or_list``: items joined as the language joins a list ("1, 2 and 3",
    "1, 2 und 3", "1、2和3"), each written by an optional pattern (``'$O_{}$'``)."""
    # the prose's English writes no serial comma (CLDR's "en" does): British English's lists
    locale = Locale.parse("en_GB") if tag == "en" else _list_locale(tag)

    def joined(style: str):
        def filter_(items, pattern: str = "{}") -> str:
            return format_list([pattern.replace("{}", str(item)) for item in items], style, locale)
        return filter_
    return dict(and_list=joined("standard"), or_list=joined("or"))


def _list_locale(tag: str) -> Locale:
    """The locale whose list patterns the language takes; English's for a tag CLDR does not know."""
    try:
        return Locale.parse(tag, sep="-")
    except (UnknownLocaleError, ValueError):
        return Locale.parse("en_GB")


SANDBOX_KEY = "immutable-sandbox"


# Values whose methods a template may call: plain data, which can only answer (the immutable
# sandbox already refuses the methods that change a list or a dict).  Exact types: a
# subclass may add methods (numpy's float64 is a float that writes files with .tofile).
PLAIN_DATA = frozenset({str, Markup, int, float, bool, list, tuple, dict, set, frozenset})


class Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, which a template cannot leave by calling what it reads.

    A template reads live objects (a step's sympy numbers, the papers' records), whose
    methods reach further than reading: sympy's ``subs``, ``equals`` or a class given a
    string parse it with ``eval``.  So a template may call only what the environment gives
    it to call (its globals: ``say``, ``zip``, ``range`` ...), Jinja's own (macros, ``loop``,
    ``super``) and the methods of plain data (``name.upper()``); anything else is refused.

    The sandbox's verdict on an attribute is remembered per (type, name): it depends on
    nothing else, and asking it afresh for every attribute a template reads would slow
    rendering markedly (docs/performance.md)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._safe: dict[tuple[type, str], bool] = {}
        self._plain_data: set[tuple[type, str]] = set()  # safe, and read as a value, not a method

    def is_safe_callable(self, obj) -> bool:
        """Whether a template may call ``obj``: only a method of plain data, Jinja's own, or what
        the environment gives."""
        return super().is_safe_callable(obj) and (
            type(getattr(obj, "__self__", None)) in PLAIN_DATA
            or getattr(obj, "__module__", None) == "jinja2.runtime"  # a macro, loop.cycle, super
            or any(obj is given for given in self.globals.values()))

    def is_safe_attribute(self, obj, attr: str, value) -> bool:
        """The sandbox's verdict on reading ``attr``, remembered per (type, name)."""
        key = (type(obj), attr)
        if key not in self._safe:
            self._safe[key] = super().is_safe_attribute(obj, attr, value)
        return self._safe[key]

    def getattr(self, obj, attribute: str):
        """A step's ``.entries`` or a number's ``.value`` is read thousands of times: once the
        sandbox has passed it as safe plain data, it is read directly (a method, such as a
        str.format the sandbox must wrap, always takes the full path)."""
        key = (type(obj), attribute)
        if key in self._plain_data:
            return builtins.getattr(obj, attribute)
        value = super().getattr(obj, attribute)
        if (self._safe.get(key) and not callable(value)
                and not isinstance(value, jinja2.runtime.Undefined)):
            self._plain_data.add(key)
        return value


class QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """A cache that never fails a run: a full or unwritable cache folder only costs speed.

    Its keys name the sandbox and the environment's options: Jinja keys compiled templates by
    their source alone, but code compiled outside the sandbox calls functions without the
    sandbox's checks, and code compiled with autoescape (the page's Markdown working) escapes
    what the Markdown key must print as it is (A' as A&#39;)."""

    def __init__(self, directory: str, flavor: str = ""):
        super().__init__(directory)
        self.flavor = flavor

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        """The cache key of a template, naming the sandbox and the environment's flavour."""
        return super().get_cache_key(f"{SANDBOX_KEY}:{self.flavor}:{name}", filename)

    def dump_bytecode(self, bucket) -> None:
        """Store a compiled template; a folder that cannot take it is passed over."""
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass

    def load_bytecode(self, bucket) -> None:
        """Read a compiled template back; a folder that cannot be read is passed over."""
        try:
            super().load_bytecode(bucket)
        except OSError:
            pass


def make_environment(user_templates: Path | None, language: Language = ENGLISH,
                     **options) -> jinja2.Environment:
    """A sandboxed Jinja environment over the template folders (a teacher's first): undefined values
    refused, the language's sentences (``_("...")``, ``{% trans %}``), and the globals and filters
    every format's templates share."""
    # the cache's flavour names the options a caller chose (the i18n extension is always there)
    cache = _bytecode_cache(options)
    options = {"autoescape": False, "extensions": ["jinja2.ext.i18n"], **options}
    environment = Sandbox(
        loader=CheckedLoader(template_folders(user_templates)),  # a bad file is one line
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=cache,
        auto_reload=False,  # a template is read once a run: no stat of its file at every include
        **options)
    environment.install_gettext_translations(language.translations, newstyle=True)
    environment.globals.update(lang=language.tag, decimal_mark=language.decimal,
                               list_separator=language.list_separator,
                               text_list_separator=language.text_list_separator,
                               punctuation=language.punctuation, full_width=language.full_width)
    environment.globals["zip"] = zip
    environment.filters["header_text"] = partial(header_text, gettext=language.gettext)
    # a sentence that starts a note's run of sentences, its first letter a capital (as printed:
    # LaTeX or Markup stays so)
    environment.filters["capitalize_first"] = lambda text: type(text)(text[:1].upper() + text[1:])
    environment.globals["working_template"] = ops.working_template  # a step's, by its op
    environment.filters["writing_lines"] = writing_lines
    environment.filters["exp_of"] = lambda x: Num.of(sympy.exp(_exact_number(x)))
    environment.filters["num_of"] = lambda x: Num.of(_exact_number(x))
    environment.globals["table_quotient"] = fmt.table_quotient  # --no-calculator's example
    environment.filters.update(attention_focus=insight.attention_focus,
                               blend_focus=insight.blend_focus, scaling_effect=insight.scaling_effect)
    environment.filters["article"] = _article
    environment.filters["letter_index"] = lambda letter: "abcdefghijklmnopqrstuvwxyz".index(letter)
    return environment




def _bytecode_cache(options: dict | None = None) -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (keyed by each template's source, so an edited
    template is compiled afresh): compiling them all anew would cost every run time
    (docs/performance.md).
    A compiled template is code the run loads: it is kept only in a folder private to the
    user (``private``), never in the temp folder; without one, templates are compiled anew."""
    folder = private_cache("templates")
    flavor = ";".join(f"{key}={getattr(value, '__qualname__', value)}"
                      for key, value in sorted((options or {}).items()))
    return QuietBytecodeCache(str(folder), flavor) if folder else None


def _exact_number(value) -> sympy.Expr:
    """A filter's operand as an exact number, only from a number (sympy would parse a string
    with ``eval``: a template's text must never become code)."""
    if isinstance(value, Num):
        return value.exact
    if isinstance(value, sympy.Expr) or type(value) is int:
        return sympy.sympify(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def _relations(decimals: int, exact: str, rounded: str) -> dict:
    """Filters that write '=' after an exact number and '≈' after a rounded one."""

    def all_exact(nums) -> bool:
        return all(fmt.is_exact_at(n, decimals) for n in nums)

    return dict(rel=lambda n: exact if all_exact([n]) else rounded,
                vrel=lambda nums: exact if all_exact(nums) else rounded)


def _working_filters(decimals: int, number, vector, mark=str, exact="=", rounded="≈",
                     summed=fmt.printed_sum) -> dict:
    """Filters for a step's working, whose operands are printed with the places that make each
    line check on a calculator: ``{% set places = line | places %}``, then
    ``x | num_at(places)``; a dot product with ``line | products(places, "·")``; an exponent
    with ``x | num_at(x | exponent_places(e, places))``;
    a softmax row's sum as the sum of what it prints.  ``mark`` makes the format's text
    trusted (NoEscape in LaTeX)."""
    def number_at(n, places):
        return mark(number(n, places))

    def parenthesized_at(n, places):
        return mark(fmt.parenthesized(number(n, places)))

    def products(line, places, times):
        """A dot product's working, a·b + c·(-d) + ...: one filter, not a template loop over
        its pairs, which cost a fifth of a large key's rendering."""
        return mark(" + ".join((number_at if k == 0 else parenthesized_at)(a, places) + times
                               + parenthesized_at(b, places) for k, (a, b) in enumerate(line.pairs)))

    def quotient_at(line, places, times):
        """A no-calculator output row as one quotient of table values (``fmt.QuotientForm``):
        its terms e_j·v_j, the column sums they give and the row's sum; None where it has none."""
        form = fmt.quotient_form(line, places)
        if form is None:
            return None
        terms = " + ".join(number(e, places) + times + vector([number(v, places) for v in row])
                           for e, row in form.terms)
        return dict(terms=mark(terms), numerator=mark(vector(list(form.numerator))),
                    denominator=mark(form.denominator))

    return dict(
        quotient_at=quotient_at,
        places=lambda line: fmt.working_places(line, decimals),
        exponent_places=fmt.exponent_places,
        num_at=number_at,
        paren_at=parenthesized_at,
        products=products,
        vector_at=lambda nums, places: mark(vector([number(n, places) for n in nums])),
        rel_at=lambda n, places: exact if fmt.is_exact_at(n, places) else rounded,
        printed_sum=lambda nums, places: mark(summed(nums, places)))


def shell_command_latex(command: str) -> NoEscape:
    """A shell command as LaTeX that pastes back as the same command: straight quotes (T1's
    typewriter ' is a curly ’), a line break at a space between words (a break inside a
    quoted title or a path would paste as a newline there), after a / only where a path is
    longer than the line, each space kept."""
    quote = None
    pieces = []
    for char in command:
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        if char == " ":
            pieces.append("~" if quote else " ")
        elif char == "/":
            pieces.append(r"/\penalty5000{}")  # the last resort: a break here pastes a newline
        else:
            pieces.append({"'": r"\textquotesingle{}", '"': r"\textquotedbl{}"}.get(char)
                          or escape_latex(char).replace(r"\^{}", r"\textasciicircum{}"))
    return NoEscape("".join(pieces))


def _escape_untrusted(value):
    if value is None or isinstance(value, (NoEscape, int)):
        return value
    literal = _literal_latex(str(value))
    typeset = right_to_left(literal)  # an Arabic or Hebrew name reads right to left
    if typeset == literal:
        return NoEscape(literal)
    # and copies back in reading order, ligatures and all (LuaLaTeX: pdflatex never sets it)
    return NoEscape(actual_text(str(value), typeset))


# Characters T1 and TeX's ligatures would print as others: ' as a right quote (which copies
# back as U+2019), ` and " as quotes, ,, << >> as one glyph each.
LITERAL_CHARACTERS = {"'": r"\textquotesingle{}", "`": r"\textasciigrave{}", '"': r"\textquotedbl{}"}
LIGATURE_PAIR = re.compile(r"(?<=([,<>]))(?=\1)")


def _literal_latex(text: str) -> str:
    """Text as LaTeX that prints (and copies back as) each of its characters."""
    # pylatex writes ^ as the accent \^{}, which prints a small hat; T1 has the real caret.
    escaped = escape_latex(text).replace(r"\^{}", r"\textasciicircum{}")
    escaped = LIGATURE_PAIR.sub("{}", escaped)
    return "".join(LITERAL_CHARACTERS.get(char, char) for char in escaped)


def pdf_text_latex(value) -> NoEscape:
    """Text for a PDF string that hyperref makes of LaTeX (the title, a bookmark): escaped,
    with no typesetting commands in it."""
    return NoEscape(_literal_latex(str(value)))  # (hyperref too makes -- a dash: {-}{-} is not)


def _trusted_or_none(text: str | None):
    return None if text is None else NoEscape(text)
