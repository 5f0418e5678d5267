"""The practice page in another language (issue 36): the page says its language, its script is
given the catalogue's messages for it and says every message of its own through them, and every
answer box takes a decimal comma and a decimal point alike, in every language (grouped
thousands only in a grid of whole numbers, by the mark that is not the language's decimal
mark)."""

import json
import re

import pytest
from test_extending import browser_page
from test_web import needs_browser

COUNTING, WHY_SCALE = "H1-1", "H1-2"
# Words of the script's own English messages (too high, 2 of 3 answers right, score 1.0 of 3,
# your choice: wrong, changed since Check, ...): none may be left on a German page.
SCRIPT_ENGLISH = {"answer", "answers", "right", "wrong", "score", "marks", "high", "low", "row",
                  "column", "changed", "since", "check", "your", "choice", "give", "decimal",
                  "places", "read", "type", "number", "every", "entry", "times", "more"}


LANGUAGES = ("en", "de", "fr", "es", "zh-Hans")  # every shipped language
COMMA_LANGUAGES = ("de", "fr", "es")


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """A hard counting problem (a count in the thousands) and a hard why-scale one (σ = √d_k,
    a decimal), in every shipped language."""
    from generator.cli import main
    out = {}
    for tag in LANGUAGES:
        out[tag] = tmp_path_factory.mktemp(f"lang-{tag}")
        assert main(["--types", "counting,why-scale", "--count", "2", "--seed", "1",
                     "--difficulty", "hard", "--lang", tag, "--format", "html", "--practice",
                     "--out", str(out[tag])]) == 0
    return out


def page_json(site, name) -> dict | None:
    found = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>',
                      (site / "practice.html").read_text(), re.S)
    return json.loads(found[1]) if found else None


def test_the_page_says_its_language_and_gives_its_script_the_messages(sites):
    german, english = (sites[tag] / "practice.html" for tag in ("de", "en"))
    assert '<html lang="de">' in german.read_text()
    assert '<html lang="en">' in english.read_text()
    language = page_json(sites["de"], "language")
    assert language["decimal"] == ","
    assert language["messages"]["too high"] == "zu hoch"
    assert language["messages"]["{right} of {total} answers right"] == ["{right} von {total} Antworten richtig"] * 2
    assert page_json(sites["en"], "language") is None  # English: the script's own words
    text = german.read_text()
    assert ">Prüfen</button>" in text and "Check</button>" not in text
    assert 'aria-label="Aufgabe 1 (a), ' in text and "Problem 1 (a)" not in text


def part_of(page, problem, letter):
    return page.locator(f"section.problem[data-problem={problem}] .part[data-part={letter}]")


def check(part, grid, texts):
    inputs = part.locator(f"table.grid[data-step={grid}] input")
    for k, text in enumerate(texts):
        inputs.nth(k).fill(text)
    part.locator("button.check").click()
    cells = part.locator(f"table.grid[data-step={grid}] td")
    return [cells.nth(k).get_attribute("data-mark") for k in range(cells.count())]


@needs_browser
@pytest.mark.parametrize("tag", LANGUAGES)
def test_a_decimal_comma_and_a_decimal_point_are_both_read_in_every_language(sites, tag):
    """σ = √d_k typed as 11,3137 and as 11.3137 is right on the English page and on the German
    one; a count typed grouped the language's way (1,048,576 in English, 1.048.576 in German)
    is right, and in German 1,048 (a decimal comma) is not a thousand and forty-eight."""
    problems = page_json(sites[tag], "answers")["problems"]
    sigma = problems[WHY_SCALE]["steps"]["b0"]["values"][0][0]
    count = int(problems[COUNTING]["steps"]["a0"]["values"][0][0])
    assert sigma != round(sigma) and count >= 1000, (sigma, count)
    point = f"{sigma:.4f}"
    comma = tag in COMMA_LANGUAGES  # the decimal mark; thousands are grouped by the other mark
    grouped = f"{count:,}".replace(",", ".") if comma else f"{count:,}"
    with browser_page(sites[tag] / "practice.html") as page:
        spread = part_of(page, WHY_SCALE, "b")
        for typed in (point, point.replace(".", ",")):
            assert check(spread, "b0", [typed, "1"]) == ["right", "right"], typed
        counts = part_of(page, COUNTING, "a")
        assert check(counts, "a0", [grouped]) == ["right"], grouped
        assert check(counts, "a0", [str(count)]) == ["right"]
        if comma:  # a comma is the decimal mark: 1,024 is not 1024
            thousands, rest = divmod(count, 1000)
            assert check(counts, "a0", [f"{thousands},{rest:03d}"]) == ["wrong"]


@needs_browser
def test_a_german_page_marks_a_decimal_comma_and_says_its_feedback_in_german(sites):
    """A German student types the key's σ with a decimal comma: marked right, the tally in
    German; a wrong entry is said too low in German; the scores use the decimal comma; nothing
    the script writes is in English."""
    problems = page_json(sites["de"], "answers")["problems"]
    sigma = problems[WHY_SCALE]["steps"]["b0"]["values"][0][0]
    with browser_page(sites["de"] / "practice.html") as page:
        spread = part_of(page, WHY_SCALE, "b")
        assert check(spread, "b0", [f"{sigma:.4f}".replace(".", ","), "1"]) == ["right", "right"]
        assert spread.locator(".marks").text_content() == "2 von 2 Antworten richtig \u2713"
        assert check(spread, "b0", ["1,5", "1"]) == ["wrong", "right"]
        said = [spread.locator(".marks").text_content(), spread.locator(".grid-note").text_content(),
                page.locator("#page-score").text_content(),
                page.locator(f"section[data-problem={WHY_SCALE}] h2 .score").text_content(),
                spread.locator("input.wrong").get_attribute("aria-description")]
        assert said[0] == "1 von 2 Antworten richtig" and said[1] == "\u2717 zu niedrig: Zeile 1, Spalte 1.", said
        assert re.fullmatch(r"Ihre Punktzahl: \d+,\d von \d+\u00a0Punkten", said[2]), said
        check(spread, "b0", ["sqrt(", "1"])  # an unreadable entry: the message says how to type
        said.append(spread.locator(".message").text_content())
        assert said[-1].startswith("„sqrt(“ nicht lesbar") and "0,25" in said[-1], said
        spread.locator("table.grid[data-step=b0] input").nth(1).fill("2")  # an edit after Check
        said.append(spread.locator(".marks").text_content())
        assert said[-1] == "seit dem Prüfen geändert"
        english = {word for text in said for word in re.findall(r"[A-Za-z]+", text or "")
                   if word.lower() in SCRIPT_ENGLISH}
        assert not english, (english, said)


def test_what_the_page_says_of_a_slip_is_in_the_pages_language(sites):
    """Each common slip the German page names (the step graph's "says") is the catalogue's German,
    not the English page's words: the same slips, other words."""
    def says(tag):
        problems = page_json(sites[tag], "answers")["problems"]
        return [slip["says"] for problem in problems.values() for step in problem["graph"].values()
                for slip in step.get("slips", [])]
    english, german = says("en"), says("de")
    assert len(english) == len(german) > 5
    assert all(e != g for e, g in zip(english, german)), [e for e, g in zip(english, german) if e == g]
    assert "d_k ist die Varianz von q·k; ihre Standardabweichung ist √d_k" in german


def test_a_right_to_left_language_gives_the_page_its_direction(tmp_path):
    """A teacher's catalogue for Arabic (locales/ar.po in a --templates folder): the page is
    <html lang="ar" dir="rtl">, its buttons in the catalogue's words."""
    from generator.cli import main
    locales = tmp_path / "templates" / "locales"
    locales.mkdir(parents=True)
    (locales / "ar.po").write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                                   'msgid "Check"\nmsgstr "تحقق"\n', encoding="utf-8")
    assert main(["--types", "full", "--count", "1", "--seed", "3", "--lang", "ar", "--templates",
                 str(tmp_path / "templates"), "--format", "html", "--practice",
                 "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "practice.html").read_text(encoding="utf-8")
    assert '<html lang="ar" dir="rtl">' in page
    assert ">تحقق</button>" in page
