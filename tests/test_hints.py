"""Hints read as the key does: a matrix read off another says which rows and columns (each
head its own block; A′ both rows and columns swapped), and a row question's boxes are numbered
as the row they are."""

from __future__ import annotations

import html
import re

import pytest

from generator.cli import main


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("hints")
    assert main(["--practice", "--types", "heads,permute,row", "--count", "3", "--seed", "3",
                 "--format", "html", "--out", str(out)]) == 0
    return (out / "practice.html").read_text()


def hints(page: str) -> list[str]:
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", block)).split())
            for block in re.findall(r'<div class="hint">(.*?)</div></details>', page, re.S)]


def test_each_heads_block_is_its_own(page):
    split = next(h for h in hints(page) if "every row" in h)
    assert "Q 1 : columns 1 to 2 of Q" in split and "V 2 : columns 3 to 4 of V" in split
    assert "X W" not in split


def test_the_swapped_weights_swap_rows_and_columns(page):
    joined = " | ".join(hints(page))
    assert re.search(r"A ′ : the rows of A in the order [\d, ]+, and its columns in the order", joined)
    assert re.search(r"O ′ : the rows of O in the order [\d, ]+; each row keeps its entries", joined)


def test_a_row_questions_boxes_are_numbered_as_its_row(page):
    labels = re.findall(r'aria-label="Problem 3 \(b\), A, row (\d+), column 1"', page)
    assert labels and labels != ["1"]
