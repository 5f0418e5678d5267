"""The documents' language: its sentences and its way of writing numbers.

A language is one gettext catalogue, ``locales/<tag>.po`` in a template folder (a teacher's
``--templates`` folder first, then the built-in one), named by its BCP 47 tag: ``de``,
``zh-Hans``.  Its number conventions come from the Unicode CLDR through Babel, so that a
teacher who adds ``locales/it.po`` gets Italian's decimal comma without saying so.

Every sentence is written in English in the templates and the code, and translated as it
is printed: ``_("...")`` in a template, a type's prose (itself a small template) by its whole
source, the page's script through the messages it is given (``page_messages``).  English
needs no catalogue: a message without a translation is printed as written.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from babel import Locale, UnknownLocaleError
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import PoFileError, read_po
from babel.numbers import get_decimal_symbol
from babel.support import Translations

from generator.rendering.template_files import template_folders
from generator.running.inputs import InputError

DEFAULT_TAG = "en"
CATALOGUES = "locales"  # the folder of a template folder that holds the catalogues
PAGE = "page"  # the context (msgctxt) of the practice page script's messages
TAG = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}")


FULL_WIDTH_LANGUAGES = ("zh", "ja")
FULL_WIDTH_MARKS = str.maketrans({",": "，", ";": "；", ":": "：", ".": "。", "(": "（", ")": "）"})


@dataclass(frozen=True)
class Language:
    """A document language: its tag, its decimal mark and its translations."""

    tag: str = DEFAULT_TAG
    decimal: str = "."
    translations: Translations = field(default_factory=Translations, compare=False, repr=False)
    page: dict = field(default_factory=dict, compare=False, repr=False)  # the script's messages

    def gettext(self, message: str) -> str:
        """The message in this language (as written where the catalogue has none)."""
        return self.translations.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        """The singular or plural message for ``n``, by the language's plural rule."""
        # gettext's plural rules take whole numbers: a fraction of a mark (2.5) takes the form of
        # a number other than one, as the languages shipped write it
        whole = n if isinstance(n, int) else int(n) if n == int(n) else 2
        return self.translations.ngettext(singular, plural, whole)

    def number(self, text: str) -> str:
        """A number written with this language's decimal mark: 0.25 as 0,25 in German."""
        return text if self.decimal == "." else text.replace(".", self.decimal)

    @property
    def list_separator(self) -> str:
        """What separates the numbers of a list: a semicolon where the comma is the decimal mark
        (0,5; 0,25), as those languages write it."""
        return "; " if self.decimal == "," else ", "

    @property
    def full_width(self) -> bool:
        """Whether the language punctuates its text with full-width marks (，；。), which hold
        their own space: Chinese and Japanese."""
        return self.tag.split("-")[0] in FULL_WIDTH_LANGUAGES

    def punctuation(self, mark: str) -> str:
        """A punctuation mark a template writes in text, after a formula: the language's own
        (a full-width semicolon in Chinese, with no space after it: it holds its own), the mark
        itself elsewhere."""
        return mark.translate(FULL_WIDTH_MARKS).replace(" ", "") if self.full_width else mark

    @property
    def text_list_separator(self) -> str:
        """What separates a list's formulas in text: ``list_separator``, or a full-width comma."""
        return "，" if self.full_width else self.list_separator

    @property
    def direction(self) -> str:
        """The direction the language is written in: "rtl" or "ltr"."""
        locale = _locale_or_none(self.tag)
        return "rtl" if locale and locale.character_order == "right-to-left" else "ltr"


ENGLISH = Language()


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a message marked, not translated)
    """A message marked for the catalogue (scripts/make_catalogue.py), translated where it is
    printed: a sentence the code keeps as data (a default title, a choice's explanation)."""
    return message


PLACEHOLDER = re.compile(r"%\((\w+)\)s")
SLOT = "\ue000{}\ue001"  # a placeholder's place while the message's words are printed


def placed(message: str, values: dict, print_words, print_value) -> str:
    """A message with its ``%(name)s`` placeholders filled: its words printed by ``print_words``
    (escaped for LaTeX), each value by ``print_value`` (as the template would print it), so
    that a value is never escaped twice nor a word left unescaped."""
    slots = []

    def slot(match: re.Match) -> str:
        slots.append(print_value(values[match[1]]))
        return SLOT.format(len(slots) - 1)

    text = print_words(PLACEHOLDER.sub(slot, message))
    for index, value in enumerate(slots):
        text = text.replace(SLOT.format(index), str(value))
    return text


# The language of the sentences the code makes deep in a stage that knows no language (the
# practice page's slips, made by each op's slips face): set around that stage (``speaking``),
# read by ``gettext``; English elsewhere.
_SPEAKING: ContextVar[Language] = ContextVar("speaking", default=ENGLISH)


@contextmanager
def speaking(language: Language):
    """The sentences made inside this block (by ``gettext``) in ``language``."""
    token = _SPEAKING.set(language)
    try:
        yield language
    finally:
        _SPEAKING.reset(token)


def gettext(message: str) -> str:
    """A message in the language being spoken (``speaking``): English outside any."""
    return _SPEAKING.get().gettext(message)


def said(message, gettext=str) -> str:
    """A sentence kept as (message, values) until it is said (a question's slips, made before its
    page's language is known), said by ``gettext``: a value that is itself (message, values) is
    said alike; a plain string is already said."""
    if isinstance(message, str):
        return message
    text, values = message
    return gettext(text) % {name: said(value, gettext) if isinstance(value, tuple) else value
                            for name, value in values.items()}


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural message for ``n`` in the language being spoken (``speaking``)."""
    return _SPEAKING.get().ngettext(singular, plural, n)


def catalogue_path(tag: str, teacher: Path | None = None) -> Path | None:
    """The first template folder's catalogue for ``tag`` (a teacher's first), or None."""
    return next((path for folder in template_folders(teacher)
                 if (path := folder / CATALOGUES / f"{tag}.po").is_file()), None)


def shipped_languages(teacher: Path | None = None) -> list[str]:
    """The tags of every catalogue the template folders hold, English among them."""
    return sorted({DEFAULT_TAG} | {path.stem for folder in template_folders(teacher)
                               for path in (folder / CATALOGUES).glob("*.po")})


def language_of(tag: str, teacher: Path | None = None) -> Language:
    """The language ``tag`` names, from its catalogue; bad input (one line) if there is none."""
    path = catalogue_path(tag, teacher)
    if tag == DEFAULT_TAG and path is None:
        return ENGLISH
    if not TAG.fullmatch(tag) or path is None:
        raise InputError(f"--lang {tag}: no catalogue {CATALOGUES}/{tag}.po in the template folders "
                         f"(languages: {', '.join(shipped_languages(teacher))}); a teacher adds one "
                         f"as {CATALOGUES}/<tag>.po in a --templates folder (see the README)")
    return _loaded(tag, path, path.stat().st_mtime_ns)


@lru_cache(maxsize=16)
def _loaded(tag: str, path: Path, _modified: int) -> Language:
    catalogue = read_catalogue(path, tag)
    buffer = io.BytesIO()
    write_mo(buffer, catalogue)
    buffer.seek(0)
    page = {}  # a plural (practice.js's tn) as the list of its forms, under its singular
    for message in catalogue:
        if message.context != PAGE or not message.id or not all(
                message.string if message.pluralizable else [message.string]):
            continue
        if message.pluralizable:
            page[message.id[0]] = list(message.string)
        else:
            page[message.id] = message.string
    return Language(tag, decimal_mark(tag), Translations(buffer), page)


def read_catalogue(path: Path, tag: str) -> Catalog:
    """A catalogue read, or a one-line error naming its file and what is wrong."""
    try:
        with path.open("rb") as file:
            return read_po(file, locale=_locale_or_none(tag), abort_invalid=True)
    except (PoFileError, UnicodeDecodeError, ValueError) as error:
        raise InputError(f"{path}: not a gettext catalogue ({error})") from error


def _locale_or_none(tag: str) -> Locale | None:
    try:
        return Locale.parse(tag, sep="-")
    except (UnknownLocaleError, ValueError):
        return None


def decimal_mark(tag: str) -> str:
    """The language's decimal mark by the CLDR ("," in German); "." for a tag CLDR does not know."""
    locale = _locale_or_none(tag)
    return get_decimal_symbol(locale) if locale else "."
