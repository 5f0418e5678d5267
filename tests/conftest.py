"""Builders shared by the tests: specs, solved problems and a CLI runner."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from generator.cli import main
from generator.kinds.sampling import sample_set
from generator.maths.spec import spec_from_record
from generator.rendering.paper import DocumentInfo, answer_keys, question_papers
from generator.running.pipeline import solve_checked

# Copies of the two source documents in shared/seeds, kept here so a clone tests alone.
SEEDS = Path(__file__).resolve().parent / "seeds"

WORKED_EXAMPLE = {  # seed 000: two one-hot tokens, W_K doubles token 2's key
    "X": [[1, 0], [0, 1]],
    "W_Q": [[1, 0], [0, 1]],
    "W_K": [[1, 0], [0, 2]],
    "W_V": [[1, 0], [0, 1]],
}


def module05_record() -> dict:
    """Seed 004's problem: X and the weights drawn by np.random.seed(42), rounded to 2 places."""
    legacy = np.random.RandomState(42)
    names = ("X", "W_Q", "W_K", "W_V")
    shapes = ((3, 4), (4, 4), (4, 4), (4, 4))
    # str() of a 2-place float is its short decimal, parsed exactly as the teacher typed it.
    return {name: [[str(x) for x in row] for row in np.round(legacy.randn(*shape), 2).tolist()]
            for name, shape in zip(names, shapes)}


def make_spec(problem_id: str = "test-1", **record):
    return spec_from_record(record or dict(WORKED_EXAMPLE), problem_id)


def make_question(**record):
    return solve_checked(make_spec(**record))


def make_solution(**record):
    """The checked solution of a full problem."""
    return make_question(**record).solution


SOLVED: dict[tuple, list] = {}  # drawn sets solved so far in this test run


def solved_set(options, seed: int, count: int, version: int = 1, types=None) -> list:
    """The first ``count`` problems of ``sample_set(options, seed, count, version, types)``,
    solved and checked once per test run and shared (a question is frozen): problem i is
    drawn the same however many follow, so a longer set solved already serves a shorter one."""
    key = (options, seed, version, types)
    solved = SOLVED.get(key, [])
    if len(solved) < count:
        specs = sample_set(options, seed, count, version, types)
        solved = SOLVED[key] = solved + [solve_checked(spec) for spec in specs[len(solved):]]
    return solved[:count]


def render(renderer, questions, info=None):
    """One paper of these questions, through render_latex or render_markdown."""
    sets = {1: questions}
    return dict(renderer(question_papers(sets, None), answer_keys(sets), info or DocumentInfo()))


def pytest_configure(config):
    """One exam key for the whole session, in a folder of its own (never the user's own key):
    exams drawn twice with one seed are the same, as they are for one teacher."""
    import os
    import tempfile
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="gen-problems-test-config-")


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under a folder (the tool's own state included), by relative path."""
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def run_cli(capsys):
    """Run gen-problems in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str):
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture(scope="session")
def written_once(tmp_path_factory):
    """``copy(folder, *args)``: the output folder gen-problems writes for ``args`` (a seed among
    them), written once per test run and copied to ``folder``, its .gen-problems state too."""
    written: dict[tuple[str, ...], Path] = {}

    def copy(folder: Path, *args) -> Path:
        key = tuple(map(str, args))
        if key not in written:
            written[key] = tmp_path_factory.mktemp("written-once") / "out"
            said = io.StringIO()  # not the output of the test that first asks for it
            with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
                assert main([*key, "--out", str(written[key])]) == 0, said.getvalue()
        return Path(shutil.copytree(written[key], folder, symlinks=True))
    return copy


@pytest.fixture
def huge_spec(tmp_path) -> Path:
    """A teacher's spec whose values run past 1e7 (V is 12,000,000): no exponent form anywhere."""
    spec = tmp_path / "big.toml"
    ones = [[1, 0]] * 12
    spec.write_text(f'X = {[[1000] * 12, [1] * 12]}\nW_Q = {ones}\nW_K = {ones}\n'
                    f'W_V = {[[1000, 1]] * 12}\nscale = "1/100000000"\n')
    return spec


def torch_or_skip():
    return pytest.importorskip("torch", reason="torch 2.13.0 CPU is the optional 'verify' extra")


def unmount(folder: Path) -> None:
    """Unmount a test's small disk.  A TeX process the run killed as it stopped may still be
    dying, holding the disk busy for a moment: wait for it, then detach the disk anyway."""
    import subprocess
    import time
    for _ in range(50):
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


# -- the tiers: pyproject.toml's markers, scripts/test.sh --fast, docs/testing.md ----------------

NOT_FAST = ("slow", "tex", "browser", "equivalence")


@pytest.fixture(autouse=True)
def fast_tier_starts_no_tex_nor_chromium(request, monkeypatch):
    """A test of the fast tier (none of the NOT_FAST marks) that starts TeX or Chromium fails,
    saying which mark it needs: the fast tier stays fast as tests are added."""
    if any(request.node.get_closest_marker(mark) for mark in NOT_FAST):
        yield
        return
    started = []

    def refused(what):
        def start(*args, **kwargs):
            started.append(what)
            raise RuntimeError(f"{what} started by a test of the fast tier")
        return start

    from generator.pdf import texformat, texrun
    monkeypatch.setattr(texrun, "jailed", refused("TeX"))
    monkeypatch.setattr(texformat, "jailed", refused("TeX"))
    try:
        from playwright.sync_api._generated import BrowserType
        monkeypatch.setattr(BrowserType, "launch", refused("Chromium"))
    except ImportError:
        pass
    yield
    if started:
        pytest.fail(f"this test starts {started[0]}: mark it "
                    f"{'tex' if started[0] == 'TeX' else 'browser'} (or slow)", pytrace=False)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright (the browser tests' own; see test_web)."""
    from playwright.sync_api import sync_playwright
    from test_web import CHROMIUM, CHROMIUM_ARGS
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM or "/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        yield browser
        browser.close()
