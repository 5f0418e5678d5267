"""A teacher's templates and the caches cannot run code: what a template may call is what it
is given to call, a filter never turns text into code, and a cache another user could write
is never loaded."""

import contextlib
import os
import stat
import subprocess
import sys

import pytest

from generator.formats import web
from generator.rendering import render
from generator.running import private

PAYLOAD = "__import__('pathlib').Path({marker!r}).touch()"

# (template file, its delimiters, a way into a live sympy number from that template's values)
TEMPLATES = [
    ("latex/problem.tex.j2", ("<<", ">>"), "problem.question.solution.steps[0].entries[0][0].exact"),
    ("markdown/problem.md.j2", ("{{", "}}"), "problem.question.solution.steps[0].entries[0][0].exact"),
    ("web/statement.html.j2", ("{{", "}}"), "problem.question.solution.steps[0].entries[0][0].exact"),
]
CALLS = {  # each made sympy run the string with eval before the sandbox refused the call
    "exp_of": "{o} ({text!r} | exp_of) {c}",
    "num_of": "{o} ({text!r} | num_of) {c}",
    "subs": "{o} {number}.subs({text!r}, 1) {c}",
    "equals": "{o} {number}.equals({text!r}) {c}",
    "class": "{o} {number}.func({text!r}) {c}",
    "num_method": "{o} problem.question.solution.steps[0].entries[0][0].of({text!r}) {c}",
}


@pytest.mark.parametrize("template, delimiters, number", TEMPLATES)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_template_cannot_make_sympy_run_text(tmp_path, run_cli, monkeypatch, template,
                                               delimiters, number, call):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "PWNED"
    mine = tmp_path / "mine" / template
    mine.parent.mkdir(parents=True)
    builtin = (render.BUILTIN_TEMPLATES / template).read_text()
    line = CALLS[call].format(o=delimiters[0], c=delimiters[1], number=number,
                              text=PAYLOAD.format(marker=str(marker)))
    mine.write_text(line + "\n" + builtin)
    code, out, err = run_cli("--count", 1, "--types", "full", "--format", "html,moodle",
                             "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert code == 2 and err.count("\n") == 1 and "template: " in err, err
    assert ("expected a number" if "_of" in call else "is not safely callable") in err, err
    assert not marker.exists()
    assert not (tmp_path / "o").exists()


def test_a_method_of_the_values_a_template_reads_is_not_callable(tmp_path, run_cli, monkeypatch):
    """Not plain data, so no method: a problem's exact number, its spec, a step."""
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    builtin = (render.BUILTIN_TEMPLATES / "markdown" / "problem.md.j2").read_text()
    (mine / "problem.md.j2").write_text("{{ problem.question.solution.steps[0].entries[0][0].exact"
                                        ".evalf() }}\n" + builtin)
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert code == 2 and "template: " in err and "not safely callable" in err, err


def test_what_templates_may_still_call(tmp_path, run_cli, monkeypatch):
    """Macros, loop helpers, the environment's globals and plain data's methods stay callable."""
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    builtin = (render.BUILTIN_TEMPLATES / "markdown" / "preamble.md.j2").read_text()
    (mine / "preamble.md.j2").write_text(
        '{% macro shout(x) %}{{ x.upper() }}{% endmacro %}{{ shout("marks") }} '
        '{% for p in papers %}{{ loop.cycle("a", "b") }}{% endfor %} {{ range(2) | list }} '
        '{{ "a,b".split(",") | join("+") }} {{ say("{{ 1 + 1 }}") }}\n' + builtin)
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert code == 0, err
    assert "MARKS a [0, 1] a+b 2" in (tmp_path / "o" / "questions.md").read_text()


def environments():
    latex = render.latex_environment(4)
    markdown = render.markdown_environment(4)
    page = web.web_environment(4, None, "html")
    return {"latex": latex, "markdown": markdown, "html": page}


@pytest.mark.parametrize("name, environment", sorted(environments().items()))
def test_no_filter_or_global_turns_text_into_code(tmp_path, name, environment):
    """Every filter and every callable global, given the attack as each of its arguments."""
    marker = tmp_path / "PWNED"
    text = PAYLOAD.format(marker=str(marker))
    context = environment.from_string("").new_context({})
    callables = {**environment.filters, **{k: v for k, v in environment.globals.items()
                                           if callable(v)}}
    for function in callables.values():
        takes_context = getattr(function, "jinja_pass_arg", None) is not None
        for count in (1, 2, 3):
            with contextlib.suppress(Exception):  # it may fail any way, but not run the text
                function(*([context] if takes_context else []), *[text] * count)
    assert not marker.exists()


# -- caches ------------------------------------------------------------------------------------

def test_a_cache_folder_others_may_write_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "gen-problems" / "templates"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert private.private_cache("templates") is None
    assert render.make_environment(None).bytecode_cache is None
    folder.chmod(0o700)
    assert private.private_cache("templates") == folder


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "cache" / "gen-problems").mkdir(parents=True)
    (tmp_path / "cache" / "gen-problems" / "templates").symlink_to(elsewhere)
    assert private.private_cache("templates") is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs another user's files: run as root (CI is)")
def test_a_cache_folder_another_user_owns_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "gen-problems" / "tex"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 65534, 65534)
    assert private.private_cache("tex") is None


def test_folders_are_made_private_under_any_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    old = os.umask(0)
    try:
        folder = private.private_cache("templates")
    finally:
        os.umask(old)
    for made in (folder, folder.parent, folder.parent.parent):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made


@pytest.mark.slow
def test_a_planted_compiled_template_in_a_shared_cache_never_runs(tmp_path):
    """The attack as found: a cache folder anyone may write (a shared drive, a umask 000
    home), with a compiled template planted in it under the key a run would look for."""
    cache = tmp_path / "cache"
    folder = cache / "gen-problems" / "templates"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    marker = tmp_path / "PWNED"
    plant = f"""
import marshal, pickle, sys
from generator.rendering import render
env = render.make_environment(None)
cache = render.QuietBytecodeCache({str(folder)!r})
code = compile("__import__('pathlib').Path({str(marker)!r}).touch()", "x", "exec")
for template in render.BUILTIN_TEMPLATES.rglob("*.j2"):
    name = template.relative_to(render.BUILTIN_TEMPLATES).as_posix()
    source = template.read_text()
    key = cache.get_cache_key(name, str(template))
    checksum = cache.get_source_checksum(source)
    import jinja2.bccache as bc
    with open({str(folder)!r} + "/" + cache.pattern % key, "wb") as f:
        f.write(bc.bc_magic); pickle.dump(checksum, f, 2); marshal.dump(code, f)
"""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    subprocess.run([sys.executable, "-c", plant], check=True, env=env)
    assert len(list(folder.iterdir())) > 10
    result = subprocess.run([sys.executable, "-m", "generator.cli", "--count", "1", "--out",
                             str(tmp_path / "o")], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


@pytest.mark.parametrize("target", ["/etc/passwd", "{key}"])
def test_a_template_that_links_outside_its_folder_is_refused(tmp_path, run_cli, monkeypatch, target):
    """A colleague's folder with notes/softmax.md.j2 -> /etc/passwd, or -> your exam key,
    would print it into the papers."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert run_cli("--count", 1, "--out", tmp_path / "o")[0] == 0
    key = tmp_path / "config" / "gen-problems" / "exam.key"
    notes = tmp_path / "mine" / "markdown" / "notes"
    notes.mkdir(parents=True)
    (notes / "softmax.md.j2").symlink_to(target.format(key=key))
    before = (tmp_path / "o" / "answers.md").read_bytes()
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert code == 2 and err.count("\n") == 1 and "outside the template folder" in err, err
    assert (tmp_path / "o" / "answers.md").read_bytes() == before


def test_a_link_inside_the_template_folder_is_fine(tmp_path, run_cli):
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    (mine / "mine.md.j2").write_text((render.BUILTIN_TEMPLATES / "markdown" / "preamble.md.j2")
                                     .read_text())
    (mine / "preamble.md.j2").symlink_to(mine / "mine.md.j2")
    assert run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")[0] == 0


def test_an_include_that_climbs_out_is_a_template_error(tmp_path, run_cli):
    mine = tmp_path / "mine" / "markdown"
    mine.mkdir(parents=True)
    (mine / "preamble.md.j2").write_text('{% include "markdown/../../../../etc/passwd" %}\n')
    code, _, err = run_cli("--count", 1, "--out", tmp_path / "o", "--templates", tmp_path / "mine")
    assert code == 2 and err.count("\n") == 1 and "template" in err, err


def test_a_template_compiled_for_the_page_is_not_reused_by_the_markdown_key(tmp_path,
                                                                           monkeypatch):
    """The page shows the Markdown key's working with autoescape; the cache of compiled
    templates must not hand that escaping code to the Markdown key (A' printed as A&#39;)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "note.md.j2").write_text("{{ text }}")
    page = render.markdown_environment(4, tmp_path / "own", autoescape=True)
    key = render.markdown_environment(4, tmp_path / "own")  # finds the page's compiled code
    assert page.get_template("note.md.j2").render(text="A'") == "A&#39;"
    assert key.get_template("note.md.j2").render(text="A'") == "A'"
