"""A type's prose keeps its words in the message a translator sees: no word of English grammar
chosen in code (a plural 's', "a"/"an", "is"/"are", a list joined with ' and '), and lists
joined as the document's language joins them (``and_list``)."""

from __future__ import annotations

import re
import sys

import jinja2
import pytest

from generator.maths import steps
from generator.rendering.language import Language
from generator.rendering.render import Sandbox, _list_filters, _read_with_an, add_prose
from tests.pseudo_language import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from make_catalogue import prose_messages  # noqa: E402

CODE = re.compile(r"\{\{.*?\}\}|\{%-?\s*set .*?%\}", re.DOTALL)  # what prints, what is set to print
LITERAL = re.compile(r"'([^']*)'")
COMPARED = re.compile(r"(==|!=|\bin|\(|,|=)\s*$")  # a value compared or passed on, not printed
# literals that are no words: maths (no small letter: 'X', 'N_1', ' + M'), a pattern in maths, a unit
NOT_WORDS = re.compile(r"[^a-z]*|\$.*\$|[KMG]i?B")


def words_in_code(prose: str) -> list[str]:
    """The string literals with words in them that the prose's code prints or sets."""
    return [match[1] for code in CODE.findall(prose) for match in LITERAL.finditer(code)
            if not NOT_WORDS.fullmatch(match[1]) and match[1] not in steps.REGISTRY
            and not COMPARED.search(code[:match.start()])
            and not code[match.end():].lstrip().startswith("|")]


def test_no_prose_chooses_english_words_in_code():
    found = {prose[:80]: words for prose, _, _ in prose_messages() if (words := words_in_code(prose))}
    assert not found, f"words chosen in code, out of a translator's reach: {found}"


def test_the_check_sees_a_plural_in_code():
    assert words_in_code("{{ n }} token{{ 's' if n != 1 }}") == ["s"]
    assert words_in_code("{{ 'Cross' if spec.cross else 'Self' }}-attention") == ["Cross", "Self"]
    assert words_in_code("{{ others | and_list('$O_{}$') }} and {{ 'scores' | sym }}") == []


@pytest.mark.parametrize("tag, joined, pair", [
    ("en", "1, 2 and 3", "$O_1$ and $O_2$"),  # no serial comma, as the prose always wrote
    ("de", "1, 2 und 3", "$O_1$ und $O_2$"),
    ("fr", "1, 2 et 3", "$O_1$ et $O_2$"),
    ("es", "1, 2 y 3", "$O_1$ y $O_2$"),
    ("zh-Hans", "1、2和3", "$O_1$和$O_2$"),
])
def test_a_list_is_joined_as_the_language_joins_it(tag, joined, pair):
    and_list = _list_filters(tag)["and_list"]
    assert and_list([1, 2, 3]) == joined
    assert and_list(range(1, 3), "$O_{}$") == pair
    assert and_list([4]) == "4"


def test_prose_reads_the_list_filters_and_the_article_test_in_its_language():
    environment = Sandbox(loader=jinja2.DictLoader({}))
    add_prose(environment, "markdown", 4, Language("de"))
    template = environment.from_string(
        "{{ say(\"Heads {{ [1, 2, 3] | and_list }}, {{ [1, 2] | or_list('$O_{}$') }}: "
        "{% if 8 is read_with_an %}an{% else %}a{% endif %} {% if 3 is read_with_an %}an{% else %}a"
        "{% endif %}\") }}")
    assert template.render() == "Heads 1, 2 und 3, O_1 oder O_2: an a"
    assert [n for n in (1, 8, 11, 18, 80, 800, 81) if _read_with_an(n)] == [8, 11, 18, 80, 800, 81]
