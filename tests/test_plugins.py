"""Plugins (generator/running/plugins.py) and the template search path they add to, with fake
entry points: a plugin's type reaches --types and --help, a faulty plugin is one line and
exit 2 (it raises, it names nothing, it takes a built-in's name) and leaves nothing behind,
and a plugin's template folder sits between a teacher's --templates and the built-in one,
for templates, the page's script and a type's prose files.  The real installed package,
examples/gen-problems-pooling, is tested in test_plugin_package.py."""

import json
import re
from dataclasses import replace
from importlib.metadata import EntryPoint, EntryPoints

import pytest
from test_extending import SCALED_ONLY, W, X, spec_file

from generator import kinds
from generator.formats import FORMATS
from generator.maths import ops, steps
from generator.rendering.render import ignored_overrides
from generator.rendering.template_files import PLUGIN_TEMPLATES, add_template_folder
from generator.running import plugins


@pytest.fixture
def installed(monkeypatch):
    """Fake installed plugins: ``installed(("gen_problems.kinds", "name", "module:attr"), ...)``
    makes them what importlib.metadata lists; every registry is as it was afterwards."""
    before = (dict(ops.registered()), dict(kinds.TYPES), dict(FORMATS), dict(steps.REGISTRY),
              list(steps.PIPELINE), list(PLUGIN_TEMPLATES))

    def install(*points):
        listed = EntryPoints(EntryPoint(name, value, group) for group, name, value in points)
        monkeypatch.setattr(plugins, "entry_points", lambda: listed)
        plugins._outcome.cache_clear()

    yield install
    plugins._outcome.cache_clear()
    for registry, saved in zip((ops.OPS, kinds.TYPES, FORMATS, steps.REGISTRY, steps.PIPELINE,
                                PLUGIN_TEMPLATES), before):
        registry.clear()
        (registry.extend if isinstance(registry, list) else registry.update)(saved)
    steps.plan.cache_clear()


def register_scaled_only():
    """A plugin's registering function (an entry point may name a function)."""
    kinds.register(replace(SCALED_ONLY, in_default_mix=False))


def register_a_second_row():
    kinds.register(replace(SCALED_ONLY, name="row"))


def register_then_fail():
    kinds.register(replace(SCALED_ONLY, name="half-done"))
    raise RuntimeError("no GPU found")


def test_no_plugin_installed_loads_nothing():
    plugins._outcome.cache_clear()
    assert plugins.load_plugins() == ()


def test_a_plugins_type_reaches_the_flags_the_help_and_a_run(tmp_path, run_cli, installed,
                                                              capsys):
    installed(("gen_problems.kinds", "scaled", "test_plugins:register_scaled_only"))
    with pytest.raises(SystemExit) as stop:
        run_cli("--help")
    # argparse may wrap the list of types at a name's hyphen ("scaled-" / "only")
    assert stop.value.code == 0 and "scaled-only" in re.sub(r"-\s+", "-", capsys.readouterr().out)
    code, _, err = run_cli("--types", "scaled-only", "--count", 2, "--seed", 3, "--out", tmp_path)
    assert code == 0, err
    problems = json.loads((tmp_path / "problems.json").read_text())["problems"]
    assert [p["type"] for p in problems] == ["scaled-only"] * 2


@pytest.mark.parametrize("value, says", [
    ("test_plugins:register_then_fail", "RuntimeError: no GPU found"),
    ("no_such_plugin_module", "ModuleNotFoundError: No module named 'no_such_plugin_module'"),
    ("test_plugins:no_such_function", "AttributeError: "),
    ("test_plugins:register_a_second_row", "it registers the question type 'row', which "
                                           "gen-problems or another plugin already has"),
])
def test_a_faulty_plugin_is_one_line_and_exit_2(tmp_path, run_cli, installed, value, says):
    installed(("gen_problems.kinds", "faulty", value))
    built_in_row = kinds.TYPES["row"]
    code, out, err = run_cli("--count", 1, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"gen-problems: error: the plugin 'faulty' (gen_problems.kinds, {value}, "
                          "from an installed package) failed to load: ")
    assert says in err and err.rstrip().endswith("fix or uninstall that package")
    assert not (tmp_path / "out").exists()
    assert "half-done" not in kinds.TYPES and kinds.TYPES["row"] is built_in_row  # nothing left
    with pytest.raises(plugins.PluginError):  # and the library says the same, every time
        plugins.load_plugins()


def test_a_faulty_module_plugin_stops_generate_too(tmp_path, installed, monkeypatch):
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('needs torch')\n")
    monkeypatch.syspath_prepend(tmp_path)
    installed(("gen_problems.formats", "broken", "broken_plugin"))
    from generator import Options, generate
    with pytest.raises(plugins.PluginError, match="'broken' .*ImportError: needs torch"):
        generate(Options(count=1, out=tmp_path / "out"))


def test_a_later_step_that_reads_a_plugins_step_is_no_clash(installed):
    """steps.register(takes_place_of=...) makes the later steps read the new one: allowed."""
    installed(("gen_problems.ops", "positional", "test_plugins:register_positional_step"))
    assert plugins.load_plugins() == ("gen_problems.ops:positional",)
    assert steps.REGISTRY["Q"].inputs == ("positioned", "W_Q")


def register_positional_step():
    steps.register(steps.given_def("P", "P"), before="Q")
    steps.register(steps.StepDef("positioned", "add", ("X", "P"), symbol="X'"),
                   before="Q", takes_place_of="X")


# --- the template search path: the teacher's, the plugins', the built-in ------------------

@pytest.fixture
def plugin_folder(tmp_path, installed):
    """A plugin's template folder with the scaled-only type's prose as files."""
    folder = tmp_path / "plugin-templates"
    prose = folder / "kinds" / "scaled-only"
    (prose / "prompts").mkdir(parents=True)
    (prose / "title.j2").write_text("Scaled scores,\nfrom a file\n")
    (prose / "statement.j2").write_text("Given {{ spec.n_queries }} tokens:\n\n@given\n\n"
                                        "Stop at $\\tilde{S}$.\n")
    (prose / "prompts" / "scaled.j2").write_text("Divide by $\\sqrt{d_k}$, from a file.\n")
    kinds.register(replace(SCALED_ONLY, title="", statement=()))  # its prose: the files only
    add_template_folder(folder)
    return folder


def test_a_types_prose_comes_from_its_files_and_a_teacher_may_reword_it(tmp_path, run_cli,
                                                                      plugin_folder):
    spec = spec_file(tmp_path, type="scaled-only", X=X, **W)
    assert run_cli("--spec", spec, "--format", "md,html", "--out", tmp_path / "out")[0] == 0
    questions = (tmp_path / "out" / "questions.md").read_text()
    assert "## Problem 1: Scaled scores, from a file (3 marks" in questions
    assert "Given 3 tokens:" in questions and "Stop at S̃." in questions
    assert "(b) [1 mark] Divide by √(d_k), from a file." in questions
    assert "(a) [2 marks] First the raw scores" in questions  # no file: the type's own string
    assert "Scaled scores, from a file" in (tmp_path / "out" / "practice.html").read_text()

    mine = tmp_path / "mine" / "kinds" / "scaled-only"
    mine.mkdir(parents=True)
    (mine / "title.j2").write_text("My own title")
    code, _, err = run_cli("--spec", spec, "--templates", tmp_path / "mine", "--out", tmp_path / "o2")
    assert code == 0 and "ignored" not in err, err
    assert "## Problem 1: My own title (3 marks" in (tmp_path / "o2" / "questions.md").read_text()


def test_ignored_overrides_know_the_plugins_files_and_the_types_prose(tmp_path, plugin_folder):
    (plugin_folder / "html" / "ops").mkdir(parents=True)
    (plugin_folder / "html" / "ops" / "toy.js").write_text("(step, a) => a\n")
    mine = tmp_path / "mine"
    for name in ("html/ops/toy.js", "kinds/scaled-only/after/scaled.j2", "kinds/row/title.j2",
                 "kinds/no-such-type/title.j2", "kinds/row/tittle.j2"):
        (mine / name).parent.mkdir(parents=True, exist_ok=True)
        (mine / name).write_text("x")
    ignored = [note.split(" is not where")[0] for note in ignored_overrides(mine)]
    assert ignored == [str(mine / "kinds/no-such-type/title.j2"), str(mine / "kinds/row/tittle.j2")]


def test_a_teachers_page_script_and_op_function_are_honoured(tmp_path, run_cli):
    from generator.rendering.template_files import BUILTIN_TEMPLATES
    mine = tmp_path / "mine" / "html"
    (mine / "ops").mkdir(parents=True)
    script = (BUILTIN_TEMPLATES / "html" / "practice.js").read_text()
    (mine / "practice.js").write_text("// my own page script\n" + script)
    (mine / "ops" / "scaling.js").write_text("(step, a) => a.map((row) => row.map((x) => x * step.factor)) /* mine */\n")
    code, _, err = run_cli("--count", 1, "--format", "html", "--templates", tmp_path / "mine",
                           "--out", tmp_path / "out")
    assert code == 0 and "ignored" not in err, err
    page = (tmp_path / "out" / "practice.html").read_text()
    assert "// my own page script" in page
    assert "    scaling: (step, a) => a.map((row) => row.map((x) => x * step.factor)) /* mine */,\n" in page
    assert "    softmax: " in page  # the others stay built in

    (mine / "practice.js").write_text("// no OPS table here\n")
    code, _, err = run_cli("--count", 1, "--format", "html", "--templates", tmp_path / "mine",
                           "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{mine / 'practice.js'}: the line its OPS table's ops go in is missing" in err
