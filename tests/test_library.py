"""The library's front door: ``generate(Options(...))`` makes what ``gen-problems`` makes,
every option is declared once (``options.OPTIONS``) and the parser, the clashes and the
redraw command follow from it, and the docs' example runs as shown."""

import dataclasses
import re
from pathlib import Path

import pytest
from conftest import folder_files

from generator import Options, Result, UsageError, generate
from generator.cli import build_parser, parse_options
from generator.rendering.paper import HEADER_FIELDS
from generator.running.options import OPTIONS
from generator.running.pipeline import draw_command

ROOT = Path(__file__).resolve().parent.parent


def outputs(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in folder_files(folder).items()
            if not name.startswith(".gen-problems")}


def test_generate_makes_what_the_command_line_makes(tmp_path, run_cli):
    result = generate(Options(count=3, seed=4, types="full,row,mistake", formats=("html",),
                              out=tmp_path / "library"))
    assert isinstance(result, Result) and result.seed == 4 and result.count == 3
    assert [q.kind for q in result.sets[1]] == ["full", "row", "mistake"]
    assert {path.name for path in result.files} >= {"answers.tex", "problems.json",
                                                     "practice.html"}
    assert all(path.is_file() for path in result.files)
    code, _, err = run_cli("--count", 3, "--seed", 4, "--types", "full,row,mistake",
                           "--format", "html", "--out", tmp_path / "cli")
    assert code == 0, err
    assert outputs(tmp_path / "library") == outputs(tmp_path / "cli")


def test_the_result_holds_what_format_json_prints_and_the_options_the_run_went_by(tmp_path):
    result = generate(Options(count=1, seed=2, practice=True, formats="json", out=tmp_path))
    assert result.options.decimals == 4 and result.options.formats == ("json",)
    printed = "".join(text if isinstance(text, str) else text.read() for text in result.printed)
    assert printed == (tmp_path / "problems.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("options, message", [
    (dict(spec="x.toml", count=3),
     "--spec solves the file's problems as written; it takes no --count"),
    (dict(record="r.json", d_k=2), "--record without --problem sets the whole exam again as it was "
                                   "set; it takes no --dk"),
    (dict(record="r.json", problem="M42-7", types="row"), "--record sets the problem exactly as it "
                                                          "was set; it takes no --types"),
    (dict(count=0), "--count must be a whole number from 1 to 2000, got 0"),
    (dict(jobs=0), "--jobs must be a whole number from 1 to 1024, got 0"),
    (dict(count=2, minutes=30), "give one of --count, --minutes and --marks"),
    (dict(difficulty="extreme"), "argument --difficulty: invalid choice: 'extreme'"),
    (dict(types=("full", "rows")),
     "argument --types: unknown question type 'rows' (did you mean 'row'?"),
])
def test_python_values_are_refused_with_the_command_lines_messages(options, message, run_cli,
                                                                   tmp_path):
    with pytest.raises(UsageError) as refused:
        Options(**options).checked()
    assert message in str(refused.value)
    flags = [word for name, value in options.items() for word in _flag(name, value)]
    code, _, err = run_cli(*flags, "--out", tmp_path)
    assert code == 2 and message in err, err


def _flag(name, value):
    flag = next(option.flag for option in OPTIONS if option.name == name)
    return [flag, ",".join(value) if isinstance(value, tuple) else str(value)]


def test_text_is_read_as_its_flag_reads_it():
    options = Options(tokens="2-4", types="full,row", scale="1/2", count="3", spec="a.toml")
    assert options.tokens == (2, 4) and options.types == ("full", "row")
    assert str(options.scale) == "1/2" and options.count == 3 and options.spec == Path("a.toml")
    with pytest.raises(UsageError, match="argument --tokens: expected a number or a range"):
        Options(tokens="2to4")


def test_every_option_is_declared_once_and_the_parser_follows_the_table():
    fields = [field.name for field in dataclasses.fields(Options)]
    assert sorted(fields) == sorted(option.name for option in OPTIONS)
    assert len({option.flag for option in OPTIONS}) == len(OPTIONS)
    assert tuple(option.name for option in OPTIONS if option.header) == HEADER_FIELDS
    help_text = build_parser().format_help()
    assert all(option.flag in help_text for option in OPTIONS)
    assert parse_options([]) == Options()  # a flag left out: the field's default


# The redraw command as the base revision (5693dcf) printed it for these command lines.
REDRAWN = [
    (["--count", "4", "--difficulty", "hard", "--key-file", "my key", "--tokens", "2-3",
      "--d-model", "4", "--dk", "2", "--dv", "3", "--embeddings", "integer", "--weights", "integer",
      "--mask", "mixed", "--versions", "3", "--types", "full,row", "--scale", "sqrt(2)/4",
      "--decimals", "2", "--config", "c.toml", "--title", "It's $HOME", "--course", "ML",
      "--institution", "Uni", "--date", "1 May", "--instructions", "a\nb", "--templates", "my t",
      "--format", "md", "--format", "html,md", "--pdf"],
     "gen-problems --seed 7 --count 4 --difficulty hard --key-file 'my key' --tokens 2-3 "
     "--d-model 4 --dk 2 --dv 3 --embeddings integer --weights integer --mask mixed --versions 3 "
     "--types full,row --scale 'sqrt(2)/4' --decimals 2 --config c.toml --title 'It'\"'\"'s $HOME' "
     "--course ML --institution Uni --date '1 May' --instructions $'a\\nb' --templates 'my t' "
     "--format md,html --pdf"),
    (["--minutes", "50", "--practice", "--no-calculator", "--students", "r.csv"],
     "gen-problems --seed 7 --minutes 50 --difficulty medium --practice --students r.csv "
     "--no-calculator"),
    (["--types", "full,row,mistake"],
     "gen-problems --seed 7 --count 3 --difficulty medium --types full,row,mistake"),
    (["--marks", "30", "--decimals", "0", "--jobs", "1", "--out", "elsewhere"],
     "gen-problems --seed 7 --marks 30 --difficulty medium --decimals 0"),
]


@pytest.mark.parametrize("argv, command", REDRAWN)
def test_the_redraw_command_is_written_from_the_table_as_before(argv, command):
    assert draw_command(parse_options(argv).for_run(), 7) == command


DOC = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")


def test_the_library_docs_example_runs_as_shown(tmp_path, monkeypatch, capsys):
    """The docs' Python blocks, in order, in one namespace, in a folder of their own."""
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.DOTALL)
    assert len(blocks) >= 3
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/library.md", "exec"), namespace)
    shown = capsys.readouterr().out
    assert "1 3\n" in shown and "'moodle.xml', 'practice.html'" in shown
    assert "it takes no --count" in shown and ": answer key" in shown
    assert (tmp_path / "out" / "moodle" / "moodle.xml").is_file()
