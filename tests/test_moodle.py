"""The Moodle question bank read back by Moodle's own cloze rules.

The regular expressions below are those of Moodle's question/type/multianswer/questiontype.php
(ANSWER_REGEX and friends, and qtype_multianswer_extract_question's loop): the gaps are found,
split into alternatives and unescaped exactly as Moodle does when it imports the bank.
Python's re wants each look-behind of one width, so (?<!\\\\|&|&amp;) is written as three.
"""

import html
import json
import math
import re
import xml.etree.ElementTree as ElementTree

import pytest

from generator.maths.spec import spec_from_record
from generator.running.pipeline import solve_checked

FRACTION = r"=|%(-?[0-9]+(?:[.,][0-9]*)?)%"
ANSWER = r".+?(?<!\\)(?<!&)(?<!&amp;)(?=[~#}]|$)"
FEEDBACK = r".*?(?<!\\)(?=[~}]|$)"
ALTERNATIVE = f"({FRACTION})?({ANSWER})(#({FEEDBACK}))?"
NUMBER = r"-?(([0-9]+[.,]?[0-9]*|[.,][0-9]+)([eE][-+]?[0-9]+)?)"
NUMERICAL_ALTERNATIVE = f"^({NUMBER})(:{NUMBER})?$"
TYPES = ("(NUMERICAL|NM)|(MULTICHOICE|MC)|(MULTICHOICE_V|MCV)|(MULTICHOICE_H|MCH)|"
         "(SHORTANSWER|SA|MW)|(SHORTANSWER_C|SAC|MWC)|"
         "(MULTICHOICE_S|MCS)|(MULTICHOICE_VS|MCVS)|(MULTICHOICE_HS|MCHS)|"
         "(MULTIRESPONSE|MR)|(MULTIRESPONSE_H|MRH)|(MULTIRESPONSE_S|MRS)|(MULTIRESPONSE_HS|MRHS)")
START = r"\{([0-9]*):(" + TYPES + "):"
GAP = START + "(" + ALTERNATIVE + "(~" + ALTERNATIVE + r")*)\}"
NORM, NUMERICAL, MULTICHOICE, MULTICHOICE_S, ALTERNATIVES = 1, 3, 4, 9, 16


def extract_question(text: str) -> list[dict]:
    """qtype_multianswer_extract_question: every gap, in order, as Moodle stores it."""
    gaps = []
    while True:
        found = re.search(GAP, text, re.S)
        if not found:
            return gaps
        gap = {"weight": float(found.group(NORM) or 1), "answers": [], "fractions": [],
               "type": "numerical" if found.group(NUMERICAL) else
               "multichoice" if found.group(MULTICHOICE) or found.group(MULTICHOICE_S) else found.group(2),
               "shuffled": bool(found.group(MULTICHOICE_S)), "tolerances": []}
        remaining = found.group(ALTERNATIVES)
        while (alternative := re.search("~?" + ALTERNATIVE, remaining, re.S)):
            gap["fractions"].append(1 if alternative.group(1) == "=" else 0)
            answer = alternative.group(3)
            number = re.search(NUMERICAL_ALTERNATIVE, answer, re.S)
            if gap["type"] == "numerical" and number:
                gap["answers"].append(number.group(1))
                gap["tolerances"].append(number.group(6) if number.group(6) else "0")
            else:
                answer = html.unescape(answer).replace("\\}", "}").replace("\\#", "#")
                gap["answers"].append(answer)
            remaining = remaining.split(alternative.group(0), 1)[1]
        gaps.append(gap)
        text = text.replace(found.group(0), f"{{#{len(gaps)}}}", 1)


BANKS = {"every type, hard, 2 decimals": ["--count", "21", "--seed", "8", "--difficulty", "hard",
                                          "--decimals", "2"],
         "gradients": ["--types", "backward,softmax-jacobian", "--count", "6", "--seed", "2",
                       "--mask", "mixed"]}


@pytest.fixture(scope="module", params=["every type, hard, 2 decimals",
                                        pytest.param("gradients", marks=pytest.mark.slow)])
def bank(request, tmp_path_factory):
    from generator.cli import main
    out = tmp_path_factory.mktemp("moodle")
    assert main([*BANKS[request.param], "--format", "moodle", "--practice", "--out", str(out)]) == 0
    return out


def questions(out):
    root = ElementTree.parse(out / "moodle.xml").getroot()
    problems = {p["id"]: p for p in json.loads((out / "problems.json").read_text())["problems"]}
    for question in root:
        if question.get("type") == "cloze":
            yield question, problems[question.findtext("idnumber")]


def test_every_gap_parses_by_moodles_rules_and_weighs_as_the_paper(bank):
    for question, problem in questions(bank):
        text = question.findtext("questiontext/text")
        parts = re.split(r"<p><b>\(([a-z])\)</b> \[(\d+) marks?\]", text)[1:]
        weights = []
        for letter, marks, body in zip(parts[0::3], parts[1::3], parts[2::3]):
            gaps = extract_question(body)
            assert gaps, f"{problem['id']} ({letter}) carries marks and has no gap"
            assert not re.search(r"\{[0-9]*:[A-Z_]+:", re.sub(GAP, "", body, flags=re.S))
            weights.append(sum(g["weight"] for g in gaps) / int(marks))
            for gap in gaps:
                assert gap["weight"] == int(gap["weight"]) >= 1
                if gap["type"] == "SHORTANSWER":  # a shape, or an entry of the mask M (0 or -inf):
                    assert set(gap["fractions"]) == {1} and (all(  # every form it takes is right
                        re.fullmatch(r"\(?\d+(×| × |x| x | by |,|, )\d+\)?", a) for a in gap["answers"])
                        or set(gap["answers"]) in ({"0", "+0", "-0", *(f"0.{'0' * k}" for k in range(1, 7))},
                                                   {"-inf", "−inf", "-∞", "−∞", "-infinity", "−infinity"}))
                    continue
                assert sum(gap["fractions"]) == 1 and len(gap["answers"]) >= 1
                if gap["type"] == "multichoice":
                    assert len(gap["answers"]) >= 2
                    assert not any("\\" in a or "&#" in a for a in gap["answers"]), gap["answers"]
                else:
                    assert all(re.fullmatch(r"-?\d+(\.\d+)?", a) for a in gap["answers"])
                    assert all(float(t) > 0 for t in gap["tolerances"])
        assert len(set(weights)) == 1, (problem["id"], weights)  # one factor for the question
        total = sum(g["weight"] for g in extract_question(text))
        assert float(question.findtext("defaultgrade")) == total == weights[0] * problem["marks"]


def test_numerical_answers_are_the_keys_values(bank):
    for question, problem in questions(bank):
        solved = solve_checked(spec_from_record(problem["spec"], problem["id"]))
        expected = [x for part in solved.parts for step in part.written if step.kind != "mask"
                    for x in step.numeric.flatten() if math.isfinite(x)]  # M: SHORTANSWER gaps
        gaps = [g for g in extract_question(question.findtext("questiontext/text"))
                if g["type"] == "numerical"]
        assert [float(g["answers"][0]) for g in gaps] == pytest.approx(expected, abs=1e-8)


def test_a_choice_shows_no_escapes_even_with_cloze_characters(tmp_path, run_cli):
    from generator.rendering.formatting import cloze_escape
    nasty = "a } b # c ~ d \\ e / f \" g & h <i> j\\"
    gap = "{1:MULTICHOICE:=" + cloze_escape(nasty) + "~" + cloze_escape("other") + "}"
    parsed = extract_question(gap)
    assert parsed[0]["answers"] == [nasty, "other"]


def test_huge_values_are_plain_decimals(tmp_path, run_cli, huge_spec):
    assert run_cli("--spec", huge_spec, "--format", "moodle", "--out", tmp_path / "o")[0] == 0
    text = (tmp_path / "o" / "moodle.xml").read_text()
    gaps = [g for g in extract_question(text) if g["type"] == "numerical"]
    assert gaps and not any("e" in a.lower() for g in gaps for a in g["answers"])
    assert any(float(g["answers"][0]) >= 1e7 for g in gaps)  # V: 12,000,000


def test_the_general_feedback_is_html_without_markdown(bank):
    for question, _ in questions(bank):
        feedback = question.findtext("generalfeedback/text")
        assert "**" not in feedback  # the Markdown bold as <b>, not as asterisks


def moodle_mark(text: str) -> float:
    """A cloze question's mark as Moodle sets it on import: qtype_multianswer_extract_question
    starts at 0 and adds each gap's weight ({N:...}; 1 when N is empty).  The XML import
    (qformat_xml::import_multianswer) reads no <defaultgrade>, and the cloze edit form removes
    the mark field ("meaningless defaultmark"): only a quiz can give the question other marks."""
    return sum(gap["weight"] for gap in extract_question(text))


INSTRUCTION = "set each one's maximum mark to the marks in its name"


def test_each_question_names_its_paper_marks_and_the_bank_says_how_to_set_them(bank):
    root = ElementTree.parse(bank / "moodle.xml").getroot()
    categories = [q for q in root if q.get("type") == "category"]
    assert categories and all(INSTRUCTION in c.findtext("info/text") and
                              c.find("info").get("format") == "html" for c in categories)
    for question, problem in questions(bank):
        name = question.findtext("name/text")
        assert name.startswith(f"{problem['id']} ({problem['marks']} marks): "), name
        mark = moodle_mark(question.findtext("questiontext/text"))
        assert mark % problem["marks"] == 0  # the paper's marks times one factor
        assert float(question.findtext("defaultgrade")) == mark  # as Moodle computes it


def test_moodle_takes_the_papers_marks_where_it_can_and_the_run_says_what_to_do(tmp_path, run_cli):
    code, _, err = run_cli("--types", "concept", "--count", 2, "--seed", 1, "--format", "moodle",
                           "--out", tmp_path / "concept")
    assert code == 0
    for question, problem in questions(tmp_path / "concept"):  # a gap a mark: as on paper
        assert moodle_mark(question.findtext("questiontext/text")) == problem["marks"]
    code, _, err = run_cli("--types", "full", "--count", 1, "--seed", 1, "--format", "moodle",
                           "--out", tmp_path / "full")
    [(question, problem)] = questions(tmp_path / "full")
    assert moodle_mark(question.findtext("questiontext/text")) > problem["marks"]  # 396 for 11
    notes = [line for line in err.splitlines() if "moodle.xml" in line]
    assert len(notes) == 1 and INSTRUCTION in notes[0] and "maximum grade" in notes[0]
