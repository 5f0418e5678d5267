"""Four honest students on the practice page, in chromium, over every question type at 2 and
at 4 decimals and two seeds: every cell they work is marked right.

- one rounds each step to the shown decimals and works on from what they wrote;
- one keeps full calculator precision (types the key's values, rounded for display);
- one slips early, in one entry, and carries the slip forward correctly;
- one slips so too, but keeps full precision after it (types each value rounded, works on
  from the unrounded ones).

Their values are worked here in numpy from the page's own data (its step graph, the matrices
it shows, the key), not by the page's script.  Then typical mistakes are typed, one grid at a
time: each is marked wrong and the page says what it is, in the paper's symbols.

One browser for the module, each page loaded once; a student's whole page is typed and checked
in one script call (input events, then each part's Check), so the module runs in seconds.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_web import CHROMIUM, CHROMIUM_ARGS, needs_browser

ALL_TYPES = "full,row,mistake,permute,masked,heads,concept,backward,softmax-jacobian"
RUNS = [(seed, decimals) for seed in (3, 8) for decimals in (2, 4)]
STUDENTS = {"rounds": "rounds each step", "precise": "keeps full precision",
            "slips": "slips early and carries it forward",
            "slips-precise": "slips early and keeps full precision"}
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Each run's page, written by gen-problems (the four runs at once), loaded once in one
    browser, with the page's marking data."""
    from playwright.sync_api import sync_playwright
    folders = {run: tmp_path_factory.mktemp(f"students-{run[0]}-{run[1]}") for run in RUNS}
    runs = [subprocess.Popen([sys.executable, "-m", "generator.cli", "--practice", "--types", ALL_TYPES,
                              "--count", "9", "--seed", str(seed), "--decimals", str(decimals),
                              "--format", "html", "--out", str(folders[seed, decimals])],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for seed, decimals in RUNS]
    for run in runs:
        assert run.wait() == 0, run.stderr.read().decode()
        run.stderr.close()
    opened = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for seed, decimals in RUNS:
            out = folders[seed, decimals]
            page = browser.new_page()
            page.errors = []
            page.on("pageerror", lambda error, page=page: page.errors.append(str(error)))
            page.goto((out / "practice.html").as_uri())
            opened[seed, decimals] = (page, marking_data(out / "practice.html"))
        yield opened
        for page, _ in opened.values():
            assert page.errors == []
        browser.close()


def marking_data(path) -> dict:
    html = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="answers" type="application/json">(.*?)</script>',
                                html, re.S)[1])["problems"]


def matrix(rows) -> np.ndarray:
    return np.array([[-np.inf if x is None else x for x in row] for row in rows], dtype=float)


def softmax(z, axis=1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# Each op of the page's step graph, in numpy (the page's script has its own).
OPS = {
    "product": lambda s, a, b: (a.T if s["transpose_left"] else a) @ (b.T if s["transpose"] else b),
    "blend": lambda s, a, b: a @ b,
    "scaling": lambda s, a: a * s["factor"],
    "masking": lambda s, a, m=None: np.where(  # the student's own M where the question asks it
        np.isfinite(m) if m is not None else np.array(s["visible"], dtype=bool) if "visible" in s
        else ~np.triu(np.ones(a.shape, dtype=bool), k=1), a, -np.inf),  # else the mask: causal
    "softmax": lambda s, a: softmax(a, axis=0 if s["by_columns"] else 1),
    "add": lambda s, *terms: sum(terms[1:], terms[0]),
    "concat": lambda s, *parts: np.hstack(parts),
    "jacobian": lambda s, a: np.diag(a[0]) - np.outer(a[0], a[0]),
    "softmax-backward": lambda s, a, g: a * (g - (a * g).sum(axis=1, keepdims=True)),
    "pick": lambda s, a: a[np.ix_(s["rows"], s["columns"])],
}


def rounded(values, decimals):
    return np.where(np.isfinite(values), np.round(values, decimals), values)


def grids_of(problem) -> dict:
    """The problem's grids on the page, in page order: {name: the key's values}."""
    return {grid["name"]: matrix(grid["values"]) for grid in problem["steps"].values()}


def work(problem, decimals: int, way: str) -> dict:
    """What a student types into each grid: the key's value rounded ("precise"), or the value
    the step graph gives from what they typed before and the matrices the page shows, rounded
    ("rounds"; "slips" adds 1 to the first entry of the first grid and carries that forward;
    "slips-precise" slips so too, but works on from the unrounded values, typing each rounded)."""
    grids = grids_of(problem)
    first = next(iter(grids), None)
    full = way == "slips-precise"  # works on from what they worked, not from what they typed
    mine: dict[str, np.ndarray] = {}

    def value(name):
        if name in mine:
            return mine[name]
        if name in grids:
            step = problem["graph"][name]
            worked = grids[name] if way == "precise" else OPS[step["op"]](
                step, *(value(i) for i in step["inputs"]))
            typed = worked.copy() if full else rounded(worked, decimals)
            if way.startswith("slips") and name == first:
                typed[tuple(np.argwhere(np.isfinite(typed))[0])] += 1
        elif name in problem["given"]:
            typed = matrix(problem["given"][name])
        elif full:  # a matrix no grid asks and the page does not show: worked out
            typed = matrix(problem["known"][name])
        else:  # ... and rounded
            typed = rounded(matrix(problem["known"][name]), decimals)
        mine[name] = typed
        return typed

    return {name: rounded(value(name), decimals) for name in grids}


def texts(typed: np.ndarray, key: np.ndarray, decimals: int) -> list:
    """A grid's entries as typed: a box per entry the key has (none for a masked one)."""
    return [f"{x:.{decimals}f}" if np.isfinite(k) else None
            for x, k in zip(typed.ravel(), key.ravel())]


# Type every grid given, with an input event each, press each part's Check in order, and read
# back each grid's marks (and each part's message).
TYPE_AND_CHECK = """([entries, parts]) => {
  for (const [id, grids] of Object.entries(entries)) {
    const section = document.querySelector(`section.problem[data-problem="${id}"]`);
    for (const [name, values] of Object.entries(grids)) {
      const inputs = section.querySelectorAll(`table.grid[data-name="${CSS.escape(name)}"] td input`);
      // the masking step has a box for each −∞ (typed -inf); later steps show it, no box
      const typed = inputs.length === values.length ? values.map((x) => (x === null ? "-inf" : x))
        : values.filter((x) => x !== null);
      if (inputs.length !== typed.length) throw new Error(`${id} ${name}: ${inputs.length} boxes`);
      inputs.forEach((input, k) => {
        input.value = typed[k];
        input.dispatchEvent(new Event("input", { bubbles: true }));
      });
    }
  }
  const checked = parts || [...document.querySelectorAll(".part")].filter((p) => p.querySelector("table.grid"))
    .map((p) => [p.closest("section").dataset.problem, p.dataset.part]);
  const found = {};
  for (const [id, letter] of checked) {
    const part = document.querySelector(`section.problem[data-problem="${id}"] .part[data-part="${letter}"]`);
    part.querySelector("button.check").click();
    for (const table of part.querySelectorAll("table.grid")) {
      found[`${id} ${table.dataset.name}`] = [...table.querySelectorAll("td input")].map((i) => i.closest("td").dataset.mark || "");
    }
    const note = part.querySelector(".message");
    found[`${id} (${letter})`] = note ? note.textContent : "";
  }
  return found;
}"""


def type_and_check(page, entries: dict, parts=None) -> dict:
    return page.evaluate(TYPE_AND_CHECK, [entries, parts])


def student_pages(tmp_path, args: list[str], decimals_list=(2, 4)):
    """For each of ``decimals_list``: the practice page ``gen-problems --practice args --decimals d``
    makes, open in chromium, with its marking data; a page that raised a script error fails."""
    from playwright.sync_api import sync_playwright

    from generator.cli import main

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            for decimals in decimals_list:
                out = tmp_path / f"d{decimals}"
                assert main(["--practice", *args, "--decimals", str(decimals), "--format", "html",
                             "--out", str(out)]) == 0
                page = browser.new_page()
                errors: list = []
                page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
                page.goto((out / "practice.html").as_uri())
                yield page, marking_data(out / "practice.html"), decimals
                assert errors == []
        finally:
            browser.close()


def students_marks(page, problems, decimals):
    """For each student, (cells right, cells, the cells marked wrong, the cells they slipped)."""
    found = {}
    for way in STUDENTS:
        entries, slipped = {}, set()
        for problem_id, problem in problems.items():
            keys = grids_of(problem)
            entries[problem_id] = {name: texts(m, keys[name], decimals)
                                   for name, m in work(problem, decimals, way).items()}
            if way.startswith("slips") and keys:
                slipped.add((f"{problem_id} {next(iter(keys))}", 0))  # its first box
        marks = type_and_check(page, entries)
        cells = [(grid, k, mark) for grid, row in marks.items() if not grid.endswith(")")
                 for k, mark in enumerate(row)]
        wrong = {(grid, k) for grid, k, mark in cells if mark != "right"}
        found[way] = (len(cells) - len(wrong), len(cells), wrong, slipped)
    return found


@needs_browser
def test_four_honest_students_are_marked_right_on_every_cell(pages, capsys):
    lines = []
    for (seed, decimals), (page, problems) in pages.items():
        for problem in problems.values():  # every grid follows from others by the step graph
            assert set(grids_of(problem)) <= set(problem["graph"])
        for way, (right, cells, wrong, slipped) in students_marks(page, problems, decimals).items():
            lines.append(f"seed {seed}, {decimals} decimals, the student who {STUDENTS[way]}: {right} / "
                         f"{cells} cells right" + (f" ({len(slipped)} slips)" if slipped else ""))
            assert cells > 150
            assert wrong == slipped, (seed, decimals, way, sorted(wrong ^ slipped)[:10])
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def mistakes(problem, typed: dict) -> list[tuple[str, np.ndarray, str]]:
    """Typical mistakes, each in one grid worked from a student's right values: (grid, what
    the student types, what the page should say)."""
    given = {name: matrix(m) for name, m in problem["given"].items()}
    have = {**{name: matrix(m) for name, m in problem["known"].items()}, **given, **typed}
    graph = problem["graph"]
    found = []
    if "A′" in typed:
        found.append(("A′", given["weights"], "this is A unchanged"))
        found.append(("O′", given["output"], "this is O unchanged"))
    for name in typed:
        step, base = graph[name], name.rpartition(".")[2]
        ins = [have.get(i) for i in step["inputs"]]
        says = " ".join(slip["says"] for slip in step["slips"])
        if base == "weights":
            found.append((name, np.exp(ins[0]), "the exponentials are not divided by the row's sum"))
        if base in ("scaled", "dscores", "dscores_row") and "multiplies by √d_k" in says:
            found.append((name, ins[0] / step["factor"], "this multiplies by √d_k instead of dividing"))
        if base == "scaled" and "." in name and "whole model's d_k" in says:  # a head's
            found.append((name, ins[0] * graph["scaled"]["factor"], "the whole model's d_k: a head's "
                          f"d_k is its own share, {round(step['factor'] ** -2)}"))
        if base == "weights" and graph.get(step["inputs"][0], {}).get("op") == "masking":
            found.append((name, softmax(have[graph[step["inputs"][0]]["inputs"][0]]), "the mask is missing"))
        elif base == "weights":
            found.append((name, softmax(ins[0], axis=0), "this is softmax down each column"))
        elif base == "scaled":
            found.append((name, ins[0], "itself, not scaled"))
        elif base == "scores":
            found.append((name, ins[1] @ ins[0].T, "this is K"))
        elif base == "output":
            found.append((name, ins[0].T @ ins[1], "ᵀ V"))
        elif name == "dV":
            found.append((name, ins[0] @ ins[1], "this is A dO, not dV = Aᵀ dO"))
        elif name == "dweights":
            found.append((name, ins[1] @ ins[0].T, "this is V dOᵀ, not dA = dO Vᵀ"))
        elif name in ("dscaled", "dscaled_row"):
            found.append((name, ins[0] * ins[1], "the row-sum term is missing"))
        elif name in ("dscores", "dscores_row"):
            found.append((name, ins[0], "itself, not scaled"))
        elif name == "dK":
            found.append((name, ins[0] @ ins[1], " Q, not dK = dS"))
        elif name == "dQ":
            found.append((name, ins[0].T @ ins[1], "ᵀ K, not dQ = dS"))
        elif name == "jacobian":
            a = ins[0][0]
            found.append((name, -OPS["jacobian"](step, ins[0]), "every entry has the wrong sign"))
            found.append((name, np.diag(a) + np.outer(a, a) - 2 * np.diag(a * a),
                          "the entries off the diagonal have the wrong sign"))
            found.append((name, -np.outer(a, a), "the diagonal's aᵢ is missing"))
        elif name == "concat":
            found.append((name, np.hstack(ins[::-1]), "the heads are the wrong way round"))
        elif re.fullmatch(r"head1\.[QKV]", name):
            other = name.replace("head1", "head2")
            found.append((name, OPS["pick"](graph[other], have[step["inputs"][0]]), "this is head 2's block"))
    return found


@needs_browser
@pytest.mark.parametrize("run", RUNS[:2])
def test_typical_mistakes_are_marked_wrong_and_said(pages, run):
    """Every other grid right (the precise student's), one grid a typical mistake: some of its
    entries are wrong, and the part says which mistake it is."""
    page, problems = pages[run]
    decimals = run[1]
    said = []
    for problem_id, problem in problems.items():
        typed = work(problem, decimals, "precise")
        keys = grids_of(problem)
        right = {name: texts(m, keys[name], decimals) for name, m in typed.items()}
        type_and_check(page, {problem_id: right}, [])
        letters = {grid["name"]: key[0] for key, grid in problem["steps"].items()}
        for name, wrong, message in mistakes(problem, typed):
            wrong = rounded(wrong, decimals)
            if wrong.shape != keys[name].shape or np.allclose(wrong, typed[name], equal_nan=True):
                continue  # this problem's numbers hide the mistake (a symmetric A, say)
            marks = type_and_check(page, {problem_id: {name: texts(wrong, keys[name], decimals)}},
                                   [[problem_id, letters[name]]])
            assert "wrong" in marks[f"{problem_id} {name}"], (problem_id, name)
            assert message in marks[f"{problem_id} ({letters[name]})"], (problem_id, name, marks)
            said.append(name.rpartition(".")[2])
            type_and_check(page, {problem_id: {name: right[name]}}, [])
    assert {"A′", "O′", "weights", "dV", "dK", "dQ", "output", "dscaled", "dscores", "scaled", "Q",
            "concat", "jacobian"} <= set(said) and len(said) >= 30


# Choose an option of a part, press its Check, and read back how the option chosen is marked.
CHOOSE_AND_CHECK = """([id, letter, choice]) => {
  const part = document.querySelector(`section.problem[data-problem="${id}"] .part[data-part="${letter}"]`);
  const radio = part.querySelector(`input[type=radio][value="${choice}"]`);
  radio.checked = true;
  radio.dispatchEvent(new Event("change", { bubbles: true }));
  part.querySelector("button.check").click();
  const label = radio.closest("label"), badge = label.querySelector(".choice-mark");
  return { chosen: label.dataset.chosen || "", shown: badge ? badge.textContent : "",
           said: radio.getAttribute("aria-description") || "",
           badges: part.querySelectorAll(".choice-mark").length };
}"""


@needs_browser
def test_the_top_key_is_marked_against_the_students_own_weights_and_the_choice_shows_its_mark(pages):
    """Which key gets the most attention: against the key's weights while the grid is blank,
    against the student's own once they typed them (a slip swapped two weights); the option
    chosen shows ✓ or ✗, and says so to a screen reader."""
    page, problems = pages[RUNS[1]]
    decimals, asked = RUNS[1][1], 0
    for problem_id, problem in problems.items():
        for letter, grid in problem["top_of"].items():
            key, blank = problem["answers"][letter], grids_of(problem)[grid]
            other = (key + 1) % blank.shape[1]
            choose = lambda k: page.evaluate(CHOOSE_AND_CHECK, [problem_id, letter, k])
            type_and_check(page, {problem_id: {grid: [""] * blank.size}}, [])
            assert choose(other) == {"chosen": "wrong", "shown": " ✗ your choice: wrong",
                                     "said": "your choice: wrong", "badges": 1}
            assert choose(key)["chosen"] == "right"
            weights = work(problem, decimals, "precise")[grid]
            weights[0, [key, other]] = weights[0, [other, key]]  # their slip: key `other` on top
            type_and_check(page, {problem_id: {grid: texts(weights, blank, decimals)}}, [])
            assert choose(key)["chosen"] == "wrong"
            assert choose(other) == {"chosen": "right", "shown": " ✓ your choice: right",
                                     "said": "your choice: right", "badges": 1}
            asked += 1
    assert asked
