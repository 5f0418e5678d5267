"""--no-calculator, really: every answer of the key can be worked by hand from the printed table.

Over seeded no-calculator sets of every type (and the 50-minute midterm, one version and six),
read back from problems.json and the rendered key (answers.md):
  - every exponential is one of the table's, written as the table prints it;
  - every division the key asks is a quotient of table values (a softmax weight: an
    exponential over the row's sum of exponentials, as printed), or a halving by sqrt(d_k) = 2;
  - every product is short: one factor has at most SHORT significant digits (a small whole
    number or a half, such as 2, -0.5 or 1.5); the other is a number of the working;
  - neither document says that a calculator gives the result shown;
  - the table is printed wherever the question is: questions.md and .tex, each problem of the
    practice page (its statement, not only the reveal), each Moodle question's text and each
    Canvas problem's first item.

The softmax backward pass (backward, softmax-jacobian), a_j (da_j - a.da), is worked from the
row of weights a given to two places, so that a_j is the short factor of each product; the two-head
projection Y = C W_O (heads) from C with O_1 and O_2 to two places, so that each product is a
two-place decimal times a whole number of W_O and no O_h needs its long division.
"""

from __future__ import annotations

import json
import re
import zipfile
from decimal import Decimal

import pytest
import sympy

from generator.cli import main
from generator.kinds.sampling import NO_CALCULATOR_EXPONENTS

pytestmark = pytest.mark.slow  # every test reads sets drawn once for the module

SHORT = 2  # significant digits of the short factor of every product
TYPES = ("full", "row", "mistake", "permute", "masked", "heads", "concept", "backward",
         "softmax-jacobian")
# The types with steps worked on from numbers rounded to PLACES (a row of A; C before W_O).
LONG_PRODUCTS = ("backward", "softmax-jacobian", "heads")
PLACES = 2
SETS = {f"type-{kind}": ("--types", kind, "--count", 3) for kind in TYPES} | {
    "midterm": ("--minutes", 50, "--types", "full,masked,heads,backward"),
    "midterm-versions": ("--minutes", 50, "--types", "full,masked,heads,backward", "--versions", 6),
}
NUMBER = r"-?\d+(?:\.\d+)?"
EXPONENTIAL = re.compile(rf"e\^({NUMBER}) (≈|=) ({NUMBER})")
QUOTIENT = re.compile(rf"({NUMBER})/({NUMBER})")
HALVING = re.compile(rf"= ({NUMBER}) / ({NUMBER}) (?:≈|=)")
EXACTLY = re.compile(r" \(exactly [^)]*\)")  # the key's exact form of a rational, not a division asked
PRODUCT = re.compile(rf"\(?({NUMBER})\)?·(\({NUMBER} - |\(?{NUMBER}\)?|\[[^\]]*\])")


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Each set drawn once, into a folder of its own."""
    root = tmp_path_factory.mktemp("no-calculator")
    for name, options in SETS.items():
        assert main([*map(str, options), "--no-calculator", "--seed", "30", "--practice",
                     "--format", "md,json,html,moodle,qti", "--out", str(root / name)]) == 0
    return {name: root / name for name in SETS}


def table(folder) -> dict[str, str]:
    """The table the set prints: exponent text -> value text."""
    places = json.loads((folder / "problems.json").read_text())["documents"]["table_places"]
    return {_text(x): _text(sympy.exp(x).evalf(30), places) for x in NO_CALCULATOR_EXPONENTS}


def _text(x, places: int | None = None) -> str:
    if places is None:
        return format(Decimal(str(float(x))).normalize(), "f")
    text = format(Decimal(str(x)).quantize(Decimal(1).scaleb(-places)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def key_lines(folder) -> list[str]:
    return [line for line in (folder / "answers.md").read_text().splitlines()
            if line.startswith(("- ", "  →"))]


def significant(text: str) -> int:
    digits = text.strip("()-").replace(".", "").lstrip("0")
    return len(digits) or 1


@pytest.mark.parametrize("name", SETS)
def test_every_exponential_is_in_the_table(sets, name):
    folder = sets[name]
    printed, seen = table(folder), 0
    for line in (folder / "answers.md").read_text().splitlines():
        for x, _, value in EXPONENTIAL.findall(line):
            assert printed.get(x) == value, line
            seen += 1
    assert seen


@pytest.mark.parametrize("name", SETS)
def test_every_division_is_a_quotient_of_table_values_or_a_halving(sets, name):
    folder = sets[name]
    values = set(table(folder).values()) | {"0", "1"}
    previous = ""  # the line before: a softmax row's exponentials, above its weights
    for line in key_lines(folder):
        if line.startswith("  → by hand"):  # an output row as one quotient of table values
            assert_quotient_of_table_values(line, values)
        elif line.startswith("  →"):  # a softmax row's weights: e_j / (the row's printed sum)
            exponentials = EXPONENTIAL.findall(previous)
            total = sum(Decimal(v) for _, _, v in exponentials)
            for numerator, denominator in QUOTIENT.findall(line.split("]")[0]):
                assert numerator in values and Decimal(denominator) == total, line
        else:
            for _, divisor in HALVING.findall(line):
                assert divisor == "2", line
            assert "/" not in EXACTLY.sub("", HALVING.sub("", line)), line
        previous = line


BY_HAND = re.compile(r"\((.*)\) / ([\d.]+) = \[([^\]]*)\] / ([\d.]+)$")
TERM = re.compile(rf"({NUMBER})·\[([^\]]*)\]")


def assert_quotient_of_table_values(line: str, values: set[str]) -> None:
    """(e_1·v_1 + e_2·v_2 + …) / S = [n_1, …] / S: each e_j from the table, S their sum, and
    each n_c the exact sum of the products as written."""
    terms_text, denominator, numerator, again = BY_HAND.search(line).groups()
    terms = [(e, [Decimal(v) for v in row.split(", ")]) for e, row in TERM.findall(terms_text)]
    assert len(terms) >= 2 and all(e in values for e, _ in terms), line
    assert denominator == again and Decimal(denominator) == sum(Decimal(e) for e, _ in terms), line
    sums = [sum(Decimal(e) * row[c] for e, row in terms) for c in range(len(terms[0][1]))]
    assert [Decimal(n) for n in numerator.split(", ")] == sums, line


def test_an_output_row_by_hand_is_one_quotient_of_table_values(sets):
    """The key shows the no-calculator form of every output row blended from softmax weights."""
    lines = [line for line in key_lines(sets["midterm"]) if line.startswith("  → by hand")]
    assert len(lines) >= 6


def long_products(folder, rounded: bool) -> list[str]:
    """The key's lines with a product of two long factors: with ``rounded``, of the steps worked
    from numbers to two places (the softmax backward pass a_j (g_j - a.g), the softmax
    Jacobian's a_i (d_ij - a_j), the heads' projection Y = C W_O), whose first factor must have
    at most PLACES places; else of every other step."""
    found = []
    for line in key_lines(folder):
        worked_rounded = line.startswith(("- J[", "- Y["))
        for left, right in PRODUCT.findall(line):
            if (right.endswith(" - ") or worked_rounded) != rounded:
                continue
            if right.startswith("["):  # a weight times a row of V: each entry short
                right = max(right.strip("[]").split(", "), key=significant)
            if not rounded and min(significant(left), significant(right)) > SHORT:
                found.append(line)
            if rounded and places(left) > PLACES:
                found.append(line)
    return found


def places(text: str) -> int:
    return len(text.strip("()").partition(".")[2])


@pytest.mark.parametrize("name", SETS)
def test_every_product_has_a_short_factor(sets, name):
    assert long_products(sets[name], rounded=False) == []


@pytest.mark.parametrize("name", [*(f"type-{kind}" for kind in LONG_PRODUCTS), "midterm",
                                  "midterm-versions"])
def test_the_products_worked_from_two_places_are_short(sets, name):
    assert long_products(sets[name], rounded=True) == []


def test_the_heads_projection_is_worked_from_two_places(sets):
    """Y = C W_O: every product's C factor to two places (O_1 as the prompt says), and Y
    exact from them; the check sees every line of Y."""
    lines = [line for line in key_lines(sets["type-heads"]) if line.startswith("- Y[")]
    assert len(lines) >= 3 * 4
    for line in lines:
        terms = PRODUCT.findall(line)
        assert terms and all(places(left) <= PLACES for left, _ in terms), line
        total = sum(Decimal(left) * Decimal(right.strip("()")) for left, right in terms)
        assert line.endswith(f"= {_text(total)}"), line
    assert "with $O_1$ and $O_2$ to 2 places" in (sets["type-heads"] / "questions.tex").read_text()


@pytest.mark.parametrize("name", ["midterm", "type-full", "type-heads"])
def test_no_document_says_a_calculator_gives_the_result(sets, name):
    for document in ("questions.md", "answers.md", "questions.tex", "answers.tex"):
        text = (sets[name] / document).read_text()
        assert "calculator gives" not in text
        assert "quotient of table values" in text


@pytest.mark.parametrize("name", ["midterm", "midterm-versions", "type-backward"])
def test_the_table_is_printed_wherever_the_question_is(sets, name):
    folder = sets[name]
    printed = table(folder)
    problems = json.loads((folder / "problems.json").read_text())["problems"]
    for document in ("questions.md", "questions.tex"):
        text = (folder / document).read_text()
        assert all(value in text for value in printed.values())
    pages = sorted(folder.glob("practice*.html")) + sorted(folder.glob("practice/*.html"))
    for page in pages:
        html = page.read_text()
        statements = re.findall(r'<p class="exponent-table">(.*?)</p>', html)
        reveals = html.split('class="exponent-table"')
        assert statements and all(all(v in s for v in printed.values()) for s in statements)
        assert all("reveal" not in before[-200:].lower() for before in reveals[:-1])
    assert sum(len(re.findall('class="exponent-table"', p.read_text())) for p in pages) == len(problems)
    moodle = (folder / "moodle.xml").read_text()
    texts = re.findall(r"<questiontext.*?</questiontext>", moodle, re.S)
    assert len(texts) == len(problems)
    assert all("exponent-table" in text and printed["0.5"] in text for text in texts)
    with zipfile.ZipFile(folder / "qti.zip") as package:
        quizzes = [package.read(n).decode() for n in package.namelist()
                   if n.endswith(".xml") and "manifest" not in n]
    assert sum(quiz.count("exponent-table") for quiz in quizzes) == len(problems)


def test_the_hints_in_errors_work_when_followed(run_cli, tmp_path):
    """Each error's suggestion, followed, draws the set."""
    followed = [
        (("--types", "heads", "--difficulty", "easy"), ("--weights", "integer")),
        (("--difficulty", "easy", "--types", "full"), ("--dk", "4")),
        (("--difficulty", "easy", "--types", "full"), ("--scale", "1/2")),
        (("--difficulty", "hard", "--types", "full"), ("--difficulty", "medium")),
        (("--difficulty", "hard", "--types", "full"), ("--embeddings", "integer", "--weights", "integer")),
        (("--dk", "3", "--types", "full"), ("--dk", "4")),
    ]
    for n, (args, hint) in enumerate(followed):
        common = ("--no-calculator", "--count", 3, "--seed", 5, "--practice", "--format", "json")
        code, _, err = run_cli(*common, *args, "--out", tmp_path / f"a{n}")
        assert code == 2 and " ".join(hint) in err, err
        code, _, err = run_cli(*common, *args, *hint, "--out", tmp_path / f"b{n}")
        assert code == 0, err
    for dk in ("2", "4", "6"):  # heads: each head's d_k is 4 whatever --dk says
        assert run_cli("--no-calculator", "--types", "heads", "--count", 2, "--dk", dk, "--practice",
                       "--format", "json", "--out", tmp_path / f"h{dk}")[0] == 0


def test_a_timed_paper_says_the_time_allowed_and_that_calculators_are_not_permitted(sets):
    for document in ("questions.md", "questions.tex"):
        text = (sets["midterm"] / document).read_text()
        assert "Time allowed: 50 minutes." in text and "Calculators are not permitted." in text
    assert "Time allowed" not in (sets["type-full"] / "questions.md").read_text()


@pytest.mark.parametrize("name", ["midterm", "midterm-versions", "type-backward"])
def test_a_lean_backward_problem_prints_only_what_it_uses(sets, name):
    """dV and one row of dS read A, V, that row of A and dO: not X, W_Q, W_K, W_V, Q or K."""
    folder = sets[name]
    problems = json.loads((folder / "problems.json").read_text())["problems"]
    lean = [p for p in problems if p["type"] == "backward" and "row" in p["spec"]]
    assert lean
    assert all(set(p["given"]) <= {"V", "dO"} for p in lean)
    text = (folder / "questions.md").read_text()
    for problem in lean:
        statement = text.split(f"Problem id `{problem['id']}`")[1].split("(a) [")[0]
        assert "V" in statement and "A =" in statement and "dO (" in statement
        assert not re.search(r"^(X|W_Q|W_K|W_V|Q|K)\b.*=$", statement, re.M), statement
