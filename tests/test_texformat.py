"""The cached TeX format: the same PDF bytes with it or without it, and never a bad one used.

Each test has a cache folder of its own (XDG_CACHE_HOME), runs gen-problems as a
teacher would, and compares every file of the output, PDFs and per-paper PDFs included.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import folder_files

from generator.pdf import texformat
from generator.pdf.build import compile_pdfs

pytestmark = [pytest.mark.tex,
              pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs pdflatex")]

# A class of three with a roster: questions.pdf and answers.pdf are cut into papers and keys.
ROSTER = "id,name\ns1,Ada Lovelace\ns2,Zoë Ångström\ns3,Jürgen Müller\n"


def outputs(run_cli, folder: Path, roster: Path) -> dict[str, bytes]:
    code, _, err = run_cli("--count", "2", "--seed", "11", "--pdf", "--students", roster,
                           "--out", folder)
    assert code == 0, err
    files = folder_files(folder)
    assert "papers/001-s1.pdf" in files and "keys/version-03.pdf" in files
    return {name: data for name, data in files.items() if not name.startswith(".gen-problems")}


def formats_in(cache: Path) -> list[Path]:
    return sorted((cache / "gen-problems" / "tex").glob("*.fmt"))


@pytest.fixture
def roster(tmp_path) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    return path


def test_the_same_files_without_a_format_with_a_new_one_and_with_a_cached_one(
        run_cli, tmp_path, roster, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-cache-here")  # cannot be made: the plain path
    plain = outputs(run_cli, tmp_path / "plain", roster)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    first = outputs(run_cli, tmp_path / "first", roster)  # builds the formats, then uses them
    built = formats_in(cache)
    assert len(built) == 2  # the questions' preamble and the key's
    cached = outputs(run_cli, tmp_path / "cached", roster)
    assert formats_in(cache) == built  # used again, not rebuilt
    assert plain.keys() == first.keys() == cached.keys()
    for name in plain:
        assert plain[name] == first[name] == cached[name], name
    assert (cache / "gen-problems" / "tex").stat().st_mode & 0o777 == 0o700


def test_a_damaged_format_is_found_and_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = minimal_document()
    fmt = texformat.format_for(source, os.environ.copy())
    assert fmt is not None and texformat.intact(fmt)
    expected = compile_pdfs({"doc.tex": source})["doc.pdf"].pdf
    data = bytearray(fmt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    fmt.write_bytes(bytes(data))
    assert not texformat.intact(fmt)
    rebuilt = texformat.format_for(source, os.environ.copy())
    assert rebuilt is not None and texformat.intact(rebuilt)
    assert compile_pdfs({"doc.tex": source})["doc.pdf"].pdf == expected


def test_a_truncated_format_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = minimal_document()
    fmt = texformat.format_for(source, os.environ.copy())
    fmt.write_bytes(fmt.read_bytes()[:1000])
    again = texformat.format_for(source, os.environ.copy())
    assert again is not None and texformat.intact(again) and again.stat().st_size > 100_000


def test_a_format_tex_cannot_load_costs_time_only(tmp_path, monkeypatch):
    """A file whose name matches its content but is no format: TeX fails on it, the document
    is compiled plainly, and the file is removed."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    source = minimal_document()
    fmt = texformat.format_for(source, os.environ.copy())
    expected = compile_pdfs({"doc.tex": source})["doc.pdf"].pdf
    junk = b"not a format" * 100
    import hashlib
    digest = hashlib.sha256(junk).hexdigest()[:texformat.DIGEST_LENGTH]
    fake = fmt.with_name(f"{fmt.stem.rsplit('-', 1)[0]}-{digest}.fmt")
    fmt.unlink()
    fake.write_bytes(junk)
    fake.chmod(0o600)
    assert texformat.format_for(source, os.environ.copy()) == fake
    assert compile_pdfs({"doc.tex": source})["doc.pdf"].pdf == expected
    assert not fake.exists()


def test_an_edited_preamble_never_meets_the_old_format(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = texformat.format_for(minimal_document(), os.environ.copy())
    edited = minimal_document().replace("\\usepackage{amsmath}", "\\usepackage{amsmath,amssymb}")
    second = texformat.format_for(edited, os.environ.copy())
    assert first != second and first.exists() and second.exists()


def test_a_cache_folder_another_user_can_write_is_not_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    (cache / "gen-problems" / "tex").mkdir(parents=True)
    (cache / "gen-problems" / "tex").chmod(0o777)
    assert texformat.format_for(minimal_document(), os.environ.copy()) is None
    assert formats_in(cache) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    folder = cache / "gen-problems" / "tex"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 65534, 65534)
    assert texformat.format_for(minimal_document(), os.environ.copy()) is None


def test_a_read_only_cache_folder_falls_back_to_the_plain_path(run_cli, tmp_path, roster,
                                                               monkeypatch):
    """A cache on a read-only disk: nothing can be built there, and the run still succeeds."""
    if os.geteuid() == 0:
        monkeypatch.setenv("XDG_CACHE_HOME", "/proc/self")  # read-only even for root
    else:
        cache = tmp_path / "cache"
        (cache / "gen-problems" / "tex").mkdir(parents=True, mode=0o700)
        (cache / "gen-problems" / "tex").chmod(0o500)
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert texformat.format_for(minimal_document(), os.environ.copy()) is None
    read_only = outputs(run_cli, tmp_path / "ro", roster)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "writable"))
    assert outputs(run_cli, tmp_path / "rw", roster) == read_only


def test_old_formats_are_pruned(tmp_path):
    folder = tmp_path / "tex"
    folder.mkdir()
    for number in range(texformat.KEPT_FORMATS + 3):
        path = folder / f"k{number}-x.fmt"
        path.write_bytes(b"x")
        os.utime(path, (number, number))
    texformat.prune(folder)
    left = sorted(p.name for p in folder.glob("*.fmt"))
    assert len(left) == texformat.KEPT_FORMATS and "k0-x.fmt" not in left


def minimal_document() -> str:
    return ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{lmodern}\n"
            "\\usepackage{amsmath}\n\\begin{document}\nA matrix: $\\begin{pmatrix}1&2\\\\3&4"
            "\\end{pmatrix}$.\n\\end{document}\n")


@pytest.mark.equivalence
def test_the_same_files_on_one_core_as_on_all(tmp_path):
    """TeX runs and the cutting of papers spread over the cores a run may use (a class of
    twice PAPERS_PER_WORKER is cut by two workers a document on two cores or more); one core
    or all, the files are the same, byte for byte."""
    import subprocess
    import sys

    from generator.pdf.pdfcut import PAPERS_PER_WORKER

    roster = tmp_path / "class.csv"
    roster.write_text("id,name\n" + "".join(f"s{i},Student {i}\n"
                                            for i in range(2 * PAPERS_PER_WORKER)))

    def run(folder: Path, cores: set[int]) -> dict[str, bytes]:
        done = subprocess.run([sys.executable, "-m", "generator.cli", "--count", "1", "--seed", "11",
                               "--pdf", "--students", str(roster), "--out", str(folder)],
                              cwd=Path(__file__).resolve().parent.parent, capture_output=True,
                              text=True, preexec_fn=lambda: os.sched_setaffinity(0, cores))
        assert done.returncode == 0, done.stderr
        return {name: data for name, data in folder_files(folder).items()
                if not name.startswith(".gen-problems")}

    every = os.sched_getaffinity(0)
    assert run(tmp_path / "one", {min(every)}) == run(tmp_path / "all", every)


def test_a_format_of_another_tex_installation_is_not_used(tmp_path, monkeypatch):
    """After a TeX Live update (pdftex, its LaTeX format or mylatexformat rewritten), the
    format made with the old installation is stale: a new one is built under a new name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    old = texformat.format_for(minimal_document(), os.environ.copy())
    identity = texformat.tex_identity()
    monkeypatch.setattr(texformat, "tex_identity", lambda: identity + "\nupdated")
    new = texformat.format_for(minimal_document(), os.environ.copy())
    assert new is not None and new != old
    assert new.name.split("-")[0] != old.name.split("-")[0]


def test_the_installation_is_named_by_its_files():
    identity = texformat.tex_identity()
    assert identity is not None
    files = [line.rsplit(":", 2)[0] for line in identity.splitlines()]
    assert [Path(name).name for name in files] == ["pdftex", "pdflatex.fmt", "mylatexformat.ltx"]


def taken_early(monkeypatch) -> dict[str, bool]:
    """For each document TeX reads from a stream: whether it was given the TeX process that
    was started before the document was rendered."""
    from generator.pdf import build as pdf
    taken = {}
    take = pdf.WarmTex.take

    def spied(self, name, fmt):
        process = take(self, name, fmt)
        taken[name] = process is not None
        return process

    monkeypatch.setattr(pdf.WarmTex, "take", spied)
    return taken


def test_the_key_s_tex_starts_on_its_last_format_while_the_set_is_solved(run_cli, tmp_path, roster,
                                                                        monkeypatch):
    """The second run starts pdflatex on the key's format before solving; the files are the
    same as a run without any format, and no TeX is left running."""
    from generator.pdf.texrun import RUNNING
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-cache-here")
    plain = outputs(run_cli, tmp_path / "plain", roster)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    taken = taken_early(monkeypatch)
    first = outputs(run_cli, tmp_path / "first", roster)
    assert taken == {"answers.tex": False, "questions.tex": False}  # nothing remembered yet
    record = cache / "gen-problems" / "tex" / "answers.tex.last"
    assert (record.parent / record.read_text()) in formats_in(cache)
    second = outputs(run_cli, tmp_path / "second", roster)
    assert taken == {"answers.tex": True, "questions.tex": False}  # only the key starts early
    assert plain == first == second
    assert not RUNNING
    assert not [p for p in tmp_path.rglob("*") if p.is_symlink()]  # no link to a TeX's input


def test_a_wrong_guess_of_the_key_s_format_costs_only_time(run_cli, tmp_path, roster, monkeypatch):
    """TeX started on the questions' format for the key (an edited template, say) is stopped
    once the key's preamble asks for another; the files are the same."""
    from generator.pdf.texrun import RUNNING
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    first = outputs(run_cli, tmp_path / "first", roster)
    folder = cache / "gen-problems" / "tex"
    right = (folder / "answers.tex.last").read_text()
    (folder / "answers.tex.last").write_text((folder / "questions.tex.last").read_text())
    taken = taken_early(monkeypatch)
    assert outputs(run_cli, tmp_path / "second", roster) == first
    assert taken["answers.tex"] is False
    assert (folder / "answers.tex.last").read_text() == right
    assert not RUNNING


@pytest.mark.parametrize("record", ["../../../etc/passwd", "0" * 32 + "-" + "0" * 16 + ".fmt", "",
                                    "\x00\xff"])
def test_a_record_naming_no_cached_format_starts_nothing(tmp_path, monkeypatch, record):
    folder = tmp_path / "cache" / "gen-problems" / "tex"
    folder.mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (folder / "answers.tex.last").write_bytes(record.encode("latin-1"))
    assert texformat.last_used("answers.tex") is None


def test_a_run_that_fails_while_tex_waits_leaves_no_tex_and_the_old_files(run_cli, tmp_path, roster,
                                                                           monkeypatch):
    from generator.maths.spec import SpecError
    from generator.pdf.texrun import RUNNING
    from generator.running import scheduler
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = outputs(run_cli, tmp_path / "out", roster)
    waiting = []

    def failing(*args, **kwargs):
        waiting.append(len(RUNNING))
        raise SpecError("a spec that cannot be solved")

    monkeypatch.setattr(scheduler.Scheduler, "solve", failing)
    code, _, err = run_cli("--count", "2", "--seed", "12", "--pdf", "--students", roster,
                           "--out", tmp_path / "out")
    assert code == 2 and "cannot be solved" in err
    assert waiting == [1] and not RUNNING
    assert {name: data for name, data in folder_files(tmp_path / "out").items()
            if not name.startswith(".gen-problems")} == first
