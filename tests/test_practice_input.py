"""What a student types on the practice page and what it says back (issue 35, met practising the
counting and why-scale types in Debian's chromium): arithmetic read as its value (√512, 3*784),
a number short of the page's decimals said to be so, entries in the wrong order and a step worked
from the unscaled weights named, a wide matrix on a phone that shows it scrolls, and a one-box
grid (a count) with its label on one line and no "1×1" or "row 1, column 1"."""

import json
import math
import re

import numpy as np
import pytest
from test_extending import browser_page
from test_web import needs_browser

COUNTING, WHY_SCALE = "H1-1", "H1-2"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A hard counting problem (H1-1) and a hard why-scale one (H1-2, its Q and K 2×8)."""
    from generator.cli import main
    out = tmp_path_factory.mktemp("input")
    assert main(["--types", "counting,why-scale", "--count", "2", "--seed", "1", "--difficulty", "hard",
                 "--format", "html", "--practice", "--out", str(out)]) == 0
    return out


def data(site) -> dict:
    text = (site / "practice.html").read_text()
    return json.loads(re.search(r'<script id="answers" type="application/json">(.*?)</script>', text, re.S)[1])


def part_of(page, problem, letter):
    return page.locator(f"section.problem[data-problem={problem}] .part[data-part={letter}]")


def typed(part, grid, texts):
    inputs = part.locator(f"table.grid[data-step={grid}] input")
    for k, text in enumerate(texts):
        inputs.nth(k).fill(text)


def marks(part, grid):
    cells = part.locator(f"table.grid[data-step={grid}] td")
    return [cells.nth(k).get_attribute("data-mark") for k in range(cells.count())]


@needs_browser
def test_roots_products_and_arithmetic_are_read_as_their_values(site):
    """σ = √d_k typed as sqrt(128), √128 or 8*sqrt(2), and a count as the product it is written
    out as (the prompt says "show each product written out"), are marked as their values."""
    problems = data(site)["problems"]
    sigma = problems[WHY_SCALE]["steps"]["b0"]["values"][0][0]
    d_k = round(sigma ** 2)
    root = math.isqrt(d_k // 2) if d_k % 2 == 0 and math.isqrt(d_k // 2) ** 2 == d_k // 2 else None
    assert root, d_k  # 128 = 2 * 8²: 8*sqrt(2)
    count = int(problems[COUNTING]["steps"]["a0"]["values"][0][0])
    with browser_page(site / "practice.html") as page:
        spread = part_of(page, WHY_SCALE, "b")
        for text in (f"sqrt({d_k})", f"\u221a{d_k}", f"{root}*sqrt(2)", f"{root}\u221a2", f"sqrt({d_k}/1)"):
            typed(spread, "b0", [text, "1"])
            spread.locator("button.check").click()
            assert marks(spread, "b0") == ["right", "right"], text
        typed(spread, "b0", [f"sqrt({d_k}", "e^0"])  # a bracket left open: still unread, said so
        spread.locator("button.check").click()
        assert marks(spread, "b0") == ["unread", "right"]
        message = spread.locator(".message").text_content()
        assert message.startswith(f"can't read \"sqrt({d_k}\"") and "16*sqrt(2)" in message and "3*784" in message
        counts = part_of(page, COUNTING, "a")
        typed(counts, "a0", [f"4*{count // 4}"])
        counts.locator("button.check").click()
        assert marks(counts, "a0") == ["right"]
        typed(counts, "a0", [f"4\u00d7{count // 4:,}"])  # grouped thousands in a count's product
        counts.locator("button.check").click()
        assert marks(counts, "a0") == ["right"]


@needs_browser
def test_a_number_short_of_the_pages_decimals_is_told_to_give_them(site):
    """22.627 for 22.6274 (rounded, or cut short, to three places) is not merely "too low"."""
    sigma = data(site)["problems"][WHY_SCALE]["steps"]["b0"]["values"][0][0]
    with browser_page(site / "practice.html") as page:
        spread = part_of(page, WHY_SCALE, "b")
        for short in (f"{sigma:.3f}", f"{math.floor(sigma * 1000) / 1000:.3f}", f"{sigma:.2f}"):
            typed(spread, "b0", [short, "1"])
            spread.locator("button.check").click()
            assert marks(spread, "b0") == ["wrong", "right"], short
            assert spread.locator(".message").text_content() == "give 4 decimal places", short
        typed(spread, "b0", [f"{sigma + 0.5:.3f}", "1"])  # wrong, not short: no such advice
        spread.locator("button.check").click()
        assert spread.locator(".message").text_content() != "give 4 decimal places"


@needs_browser
def test_entries_in_the_wrong_order_and_the_unscaled_weights_are_named(site):
    problem = data(site)["problems"][WHY_SCALE]
    sigma = problem["steps"]["b0"]["values"][0][0]
    raw_output = np.array(problem["known"]["weights_raw"]) @ np.array(problem["given"]["V"])
    assert not np.allclose(raw_output, problem["steps"]["e0"]["values"], atol=1e-3)
    with browser_page(site / "practice.html") as page:
        spread = part_of(page, WHY_SCALE, "b")
        typed(spread, "b0", ["1", f"{sigma:.4f}"])
        spread.locator("button.check").click()
        assert spread.locator(".message").text_content().startswith("the entries are in the wrong order")
        output = part_of(page, WHY_SCALE, "e")
        typed(output, "e0", [f"{x:.4f}" for x in raw_output.flat])
        output.locator("button.check").click()
        assert output.locator(".message").text_content() == \
            "this is worked from A_raw, not A: A_raw is from S, skipping S\u0303"


SCROLLED = "[...document.querySelectorAll('.more-right, .more-left')]"


def until(page, expression, arg=None):
    """Wait for an expression to hold (the page's CSP forbids wait_for_function's eval)."""
    for _ in range(100):
        if page.evaluate(expression, arg):
            return
        page.wait_for_timeout(30)
    raise AssertionError(expression)


@needs_browser
def test_a_matrix_wider_than_a_phone_shows_that_it_scrolls(site, tmp_path):
    """At 390 px the 2×8 Q and K run past the edge: each fades on the side that has more (it
    once cut off at a stray "−" with nothing to say so); at 1280 px, and in print, none does."""
    with browser_page(site / "practice.html") as page:
        page.set_viewport_size({"width": 390, "height": 900})
        until(page, f"{SCROLLED}.length > 0")
        statement = page.locator(f"section.problem[data-problem={WHY_SCALE}] .given .m").first
        assert statement.get_attribute("class").split() == ["m", "more-right"]
        mask = "(e) => getComputedStyle(e).webkitMaskImage || getComputedStyle(e).maskImage"
        assert "gradient" in statement.evaluate(mask)
        statement.evaluate("(e) => { e.scrollLeft = e.scrollWidth; }")
        until(page, "(e) => e.classList.contains('more-left') && !e.classList.contains('more-right')",
              statement.element_handle())
        page.screenshot(path=str(tmp_path / "phone.png"))
        page.emulate_media(media="print")
        assert statement.evaluate(mask) == "none"
        page.emulate_media(media="screen")
        page.set_viewport_size({"width": 1280, "height": 900})
        until(page, f"{SCROLLED}.length === 0")


@needs_browser
def test_a_one_box_grid_has_its_label_on_one_line_and_no_shape_or_position(site, tmp_path):
    """At 1280 px a count's label and box sit on one line (the label once wrapped a word a line
    in an 80 px column); no "1×1"; "✗ too low." without "row 1, column 1"; the tally counts
    answers, not marks ([6 marks], 5 answers)."""
    count = data(site)["problems"][COUNTING]["steps"]["a0"]["values"][0][0]
    with browser_page(site / "practice.html") as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        counts = part_of(page, COUNTING, "a")
        grid = counts.locator("table.grid[data-step=a0]")
        caption, box = grid.locator("caption").bounding_box(), grid.locator("input").bounding_box()
        assert caption["height"] < 2 * 24 and box["x"] > caption["x"] + caption["width"] - 1
        assert box["y"] < caption["y"] + caption["height"] and caption["y"] < box["y"] + box["height"]
        assert not any("1×1" in text for text in counts.locator("caption").all_text_contents())
        assert not grid.locator("input").get_attribute("aria-label").endswith("column 1")
        typed(counts, "a0", [str(int(count) - 1)])
        counts.locator("button.check").click()
        assert counts.locator(".grid-note").first.text_content() == "\u2717 too low."
        assert counts.locator(".marks").text_content() == "0 of 5 answers right"
        page.screenshot(path=str(tmp_path / "desktop.png"), full_page=True)


def test_the_step_graph_names_a_step_worked_from_a_sibling_that_skips_a_step(site):
    """O = A_raw V (the unscaled weights for A): a slip of O's step, found from the plan (A_raw =
    softmax(S) skips S̃); no other type's plan has such a pair, so their pages are as they were."""
    from generator.cli import main
    output = data(site)["problems"][WHY_SCALE]["graph"]["output"]
    assert {"change": {"inputs": ["weights_raw", "V"]},
            "says": "this is worked from A_raw, not A: A_raw is from S, skipping S\u0303"} in output["slips"]
    assert main(["--types", "full,row,masked,heads,backward,positions,counting", "--count", "7", "--seed", "3",
                 "--format", "html", "--out", str(site / "others")]) == 0
    for problem in data(site / "others")["problems"].values():
        assert not any("skipping" in slip["says"] for step in problem["graph"].values() for slip in step["slips"])
