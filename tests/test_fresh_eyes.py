"""What a lecturer trying the tool fresh found (issue 35's fix-ups): choice parts shuffled each
on its own, spec-file typos answered in one short line with the closest name, why-scale's
lesson claiming only what its numbers show, and Moodle's dropdowns readable and shuffled."""

from __future__ import annotations

import json
import re
from pathlib import Path

import canvas_import as canvas
import pytest
from conftest import render, solved_set
from test_moodle import extract_question

from generator.kinds.questions import shuffled_item
from generator.kinds.sampling import draw_options
from generator.maths.spec import known_keys, spec_from_record
from generator.rendering.prose import unicode_maths
from generator.rendering.render import render_markdown
from generator.running.pipeline import solve_checked


def letters(question) -> str:
    return "".join("abcd"[part.item.answer] for part in question.parts if part.item is not None)


def test_each_choice_part_of_a_problem_is_shuffled_on_its_own():
    """counting's (d), (e), (f) and why-scale's (a), (f) once shared one shuffle: one letter."""
    problems = [question for seed in range(1, 6) for version in (1, 2, 3)
                for question in solved_set(draw_options("medium"), seed, 2, version, ("counting", "why-scale"))]
    answers = [letters(question) for question in problems]
    assert all(len(answer) >= 2 for answer in answers), answers
    assert sum(len(set(answer)) > 1 for answer in answers) >= len(answers) * 2 // 3, answers
    assert len({answer[0] for answer in answers}) > 1, answers  # and between problems, versions


def test_a_shuffle_is_fixed_by_the_problem_and_the_part():
    reasons = tuple((f"choice {k}", "" if k == 0 else f"slip {k}") for k in range(4))
    assert shuffled_item("a", reasons, "ID-1") == shuffled_item("a", reasons, "ID-1")
    orders = {shuffled_item(topic, reasons, "ID-1").choices for topic in ("a", "b", "c", "d", "e")}
    assert len(orders) > 1
    item = shuffled_item("a", reasons, "ID-1")
    assert item.choices[item.answer] == "choice 0" and item.slips[item.answer] == ""


IDENTITY = [[1, 0], [0, 1]]
MATRICES = {"X": IDENTITY, "W_Q": IDENTITY, "W_K": IDENTITY, "W_V": IDENTITY}


def toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


@pytest.mark.parametrize("record, message", [
    ({"type": "count", "model_dim": 64}, "unknown type 'count'; did you mean 'counting'?"),
    ({"type": "Counting"}, "unknown type 'Counting'; did you mean 'counting'?"),
    ({"type": "why-scale "}, "unknown type 'why-scale '; did you mean 'why-scale'?"),
    ({"type": "why_scale", **MATRICES}, "unknown type 'why_scale'; did you mean 'why-scale'?"),
    ({"type": "essay"}, "unknown type 'essay' (expected one of: full, row,"),
    ({"type": "counting", "d_ff": 64}, "unknown key 'd_ff'; did you mean 'ffn_dim'?"),
    ({"type": "counting", "layer": 2}, "unknown key 'layer'; did you mean 'layers'?"),
    ({**MATRICES, "v": IDENTITY}, "unknown key 'v'; did you mean 'V'?"),
    ({**MATRICES, "colour": "red"}, "unknown key 'colour'; see the spec-file keys in docs/reference.md"),
    ({"type": "positions", **MATRICES, "alibi_m": [[1]]}, "unknown key 'alibi_m'; see the spec-file keys"),
])
def test_a_typo_in_a_spec_file_is_one_short_line_naming_the_nearest(tmp_path, run_cli, record, message):
    """The type is read first (a mistyped type once said "missing X"), and an unknown key names
    the documented key it is nearest, not some 70 keys, many of them internal step names."""
    path = tmp_path / "problem.toml"
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in record.items()))
    code, _, err = run_cli("--spec", path, "--out", tmp_path / "out")
    assert code == 2 and f"problem.toml: {message}" in err, err
    assert len(err.strip().splitlines()) == 1 and len(err.split("problem.toml: ")[1]) < (200 if "expected" in message else 80), err


def test_the_spec_keys_are_the_documented_ones():
    """A given step a type works out itself (counting's terms, RoPE's angles) is no key."""
    reference = (Path(__file__).parent.parent / "docs" / "reference.md").read_text(encoding="utf-8")
    section = reference.split("## Spec file keys")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))
    assert known_keys() == documented
    assert not {"count_attention_terms", "stated_width", "alibi_m", "angles"} & known_keys()
    assert {"W_O", "dO", "K_cache", "V_cache", "X_past", "X_dec", "X_enc"} <= known_keys()


def lesson_key(q, k) -> str:
    record = {"type": "why-scale", "Q": q, "K": k, "V": [[1, 2], [3, 4]]}
    key = render(render_markdown, [solve_checked(spec_from_record(record, "ws"))])["answers.md"]
    return key.split("Here it rises")[1].split("Where the others go wrong")[0]


def test_the_lesson_claims_a_stall_only_where_the_softmax_saturates():
    """0.7311 to 0.8808 is no saturated softmax: the key says the slope falls, by how much, and
    stops there; 0.9820 to 0.9997 is, and only then does the key say training stalls."""
    mild = lesson_key([[1, 1, 0, 0], [1, 0, 0, 0]], [[1, 1, 0, 0], [0, 0, 0, 0]])
    assert "from 0.7311 with the scale to 0.8808 without it" in mild
    assert "falls from 0.1966 with the scale to 0.1050 without it" in mild and "0.5341 times" in mild
    assert "stall" not in mild and "one-hot" not in mild and "little gradient" not in mild
    saturated = lesson_key([[1, 1, 1, 1], [0, 0, 0, 0]], [[1, 1, 1, 1], [-1, -1, -1, -1]])
    assert "to 0.9997 without it" in saturated and "training through it stalls" in saturated


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_a_drawn_lesson_says_stalls_exactly_when_its_weight_saturates(difficulty):
    for question in solved_set(draw_options(difficulty), 5, 8, 1, ("why-scale",)):
        facts = question.parts[-1].answer
        key = render(render_markdown, [question])["answers.md"]
        assert ("stalls" in key) == (facts[3].value >= 0.99), key
        assert abs(facts[6].value - facts[5].value / facts[4].value) < 1e-12


@pytest.mark.parametrize("tex, text", [
    ("d_k^2", "dₖ²"), (r"\sqrt{d_k}", "√dₖ"), (r"d_{\text{model}} \times h d_k", "d_model × h dₖ"),
    (r"\frac{1}{\sqrt{d_k}}", "1/√dₖ"), (r"\sqrt{d_k + 1}", "√(dₖ + 1)"), (r"QK^{\top}", "QKᵀ"),
    ("W_Q", "W_Q"), (r"d_{\text{ff}}", "d_ff"), ("10^{-3}", "10⁻³"), ("x_{ij}", "xᵢⱼ"),
])
def test_maths_for_a_dropdown_is_unicode_text(tex, text):
    assert unicode_maths(tex) == text


def test_moodles_dropdowns_are_lettered_unicode_text_and_shuffled(tmp_path, run_cli):
    """The feedback names choices (A) to (D): the options show those letters; a <select> typesets
    nothing, so no d_k^2 nor √(d_k); and MULTICHOICE_S shuffles them for each attempt."""
    assert run_cli("--types", "counting,why-scale,permute,row", "--count", "4", "--seed", "1",
                   "--format", "moodle,qti", "--out", tmp_path)[0] == 0
    gaps = [gap for gap in extract_question((tmp_path / "moodle.xml").read_text(encoding="utf-8"))
            if gap["type"] == "multichoice"]
    assert len(gaps) >= 5 and all(gap["shuffled"] for gap in gaps)
    for gap in gaps:
        assert [answer[:4] for answer in gap["answers"]] == [f"({c}) " for c in "ABCD"[:len(gap["answers"])]]
        assert not any(re.search(r"_k|\^|√\(\w+\)|\\", answer) for answer in gap["answers"]), gap["answers"]
    assert any("dₖ" in answer for gap in gaps for answer in gap["answers"])
    labels = re.findall(r'<response_label ident="choice(\d)"><material><mattext texttype="text/html">(.{4})',
                        canvas.read_package(tmp_path / "qti.zip")["quiz.xml"].decode())
    assert labels and all(text == f"({'ABCD'[int(n) - 1]}) " for n, text in labels)


def test_a_paper_of_one_later_problem_starts_on_its_first_page(tmp_path, run_cli):
    """--problem H9-2 wrote a page break before its one problem: page 1 held only the header."""
    code, _, _ = run_cli("--types", "positions", "--difficulty", "hard", "--problem", "H9-2", "--out", tmp_path / "one")
    assert code == 0
    for name in ("questions.tex", "answers.tex"):
        assert "\\newpage" not in (tmp_path / "one" / name).read_text()
    code, _, _ = run_cli("--types", "full", "--count", "2", "--seed", "9", "--out", tmp_path / "two")
    assert code == 0 and (tmp_path / "two" / "answers.tex").read_text().count("\\newpage") == 1


def test_unscaled_scores_too_large_to_exponentiate_are_one_line(tmp_path, run_cli):
    """scale = 1 skips the scaling step, whose check it was: scores of 900 overflowed e^x and
    the run stopped on an engine/numpy disagreement instead (a block's hypothesis spec found it)."""
    spec = tmp_path / "big.toml"
    spec.write_text("X = [[30, 0], [0, 1]]\nW_Q = [[1, 0], [0, 1]]\nW_K = [[1, 0], [0, 1]]\n"
                    "W_V = [[1, 0], [0, 1]]\nscale = 1\n")
    code, _, err = run_cli("--spec", spec, "--out", tmp_path / "out")
    assert code == 2 and "a score of 900 is too large to exponentiate" in err and err.count("\n") == 1
