"""A teacher's templates cannot make TeX read or write outside its work folder.

A hostile ``--templates`` folder (one folder whose questions.tex.j2 picks its attack by
the ``--title`` it is given) runs on both engines: pdflatex with kpathsea's paranoid
settings, LuaLaTeX with its Lua confined too (``generator/pdf/texconfine.lua``).  Each run
either succeeds harmlessly or fails with one line (exit 1); no file outside the output
folder is created, changed or removed; a secret file and /etc/passwd never reach the
PDF (its text, read with pdftotext, and every stream in it); the font cache of the
built-in templates and the key that signs cached bytecode stay out of reach.  A disk
that fills while TeX writes is one line saying so, and the earlier set stays.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pikepdf
import pytest
from conftest import unmount

from generator.pdf import texjail
from generator.pdf.texconfine import font_key, templates_digest
from generator.pdf.texrun import raise_if_disk_full

ROOT = Path(__file__).resolve().parent.parent
SECRET = "GPSECRETMARKER"  # the secret file's content
IMAGE = "GPIMAGEMARKER"  # the text of a PDF outside the work folder
PASSWD_LINE = Path("/etc/passwd").read_text().splitlines()[0]

pytestmark = [pytest.mark.tex, pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="TeX and pdftotext are installed by scripts/test.sh")]
needs_lualatex = pytest.mark.skipif(shutil.which("lualatex") is None,
                                    reason="LuaLaTeX is installed by scripts/setup.sh")

# The Lua attacks: each is tried, and what it got is printed into the document.
LUA_PROBES = r"""
local victim, secret, image, guarded = "@VICTIM@", "@SECRET@", "@IMAGE@", "@GUARDED@"
local function report(name, ...)
  local parts = {}
  for index = 1, select("#", ...) do parts[#parts + 1] = tostring((select(index, ...))) end
  tex.print(-2, "PROBE " .. name .. ": " .. string.gsub(table.concat(parts, " "), "%c", " ") .. ";")
end
local function probe(name, action) report(name, pcall(action)) end
local function whole(file) if file then local text = file:read("a") file:close() return text end end
local function put(file) file:write("x") file:close() end
local climb = string.rep("../", 30) .. string.sub(secret, 2)

-- reading
probe("io.open", function() return whole(io.open(secret)) end)
probe("io.open passwd", function() return whole(io.open("/etc/passwd")) end)
probe("io.open climbing", function() return whole(io.open(climb)) end)
probe("io.lines", function() for line in io.lines(secret) do return line end end)
probe("io.input", function() io.input(secret) return io.read("a") end)
probe("loadfile", function() return loadfile(secret) end)
probe("dofile", function() return dofile(secret) end)
probe("require", function() return require(string.sub(secret, 1, -5)) end)
probe("lfs.dir", function() local names = {} for name in lfs.dir(victim) do names[#names + 1] = name end
  return table.concat(names, ",") end)
probe("gzip.open", function() local file = gzip.open(secret) return file and file:read("a") end)
probe("fontloader", function() return fontloader.info(secret) end)
probe("pdfe", function() local pdf = pdfe.open(image) return pdf and pdfe.getnofpages(pdf) end)
probe("img", function() local picture = img.scan({filename = image}) img.write(picture) end)
probe("harfbuzz", function() return require("luaharfbuzz").Blob.new_from_file(secret):get_data() end)
probe("metapost", function()
  local mp = mplib.new({})
  local result = mp:execute('string s; s := readfrom "' .. secret .. '"; message s;')
  return result and result.log
end)
probe("pdf.immediateobj", function() return pdf.immediateobj("file", secret) end)
probe("key", function() return whole(io.open(guarded .. "/../key", "rb")) end)
probe("debug", function() local _, open = debug.getupvalue(io.open, 1) return whole(open(secret)) end)

-- writing, removing, running
probe("io.open write", function() put(io.open(victim .. "/PWNED-open", "w")) end)
probe("io.open append", function() put(io.open(victim .. "/sentinel", "a")) end)
probe("io.output", function()
  local saved = io.output() io.output(victim .. "/PWNED-output") io.write("x") io.output(saved) end)
probe("os.remove", function() return os.remove(victim .. "/sentinel") end)
probe("os.rename", function() return os.rename(victim .. "/sentinel", "stolen") end)
probe("os.rename in", function() return os.rename("moved", victim .. "/PWNED-renamed") end)
probe("lfs.mkdir", function() return lfs.mkdir(victim .. "/PWNED-dir") end)
probe("lfs.rmdir", function() return lfs.rmdir(victim .. "/empty") end)
probe("lfs.touch", function() return lfs.touch(victim .. "/sentinel", 0, 0) end)
probe("lfs.link", function() lfs.link(secret, "linked", true) return whole(io.open("linked")) end)
probe("lfs.chdir", function() lfs.chdir(victim) put(io.open("PWNED-chdir", "w")) return lfs.currentdir() end)
probe("os.tmpdir", function() return os.tmpdir(victim .. "/PWNED-XXXXXX") end)
probe("gzip write", function() put(gzip.open(victim .. "/PWNED-gz", "wb")) end)
probe("font cache", function() put(io.open(guarded .. "/PWNED-cache", "w")) end)
probe("os.execute", function() return os.execute("touch " .. victim .. "/PWNED-execute") end)
probe("io.popen", function() return whole(io.popen("cat " .. secret)) end)
probe("os.spawn", function() return os.spawn("touch " .. victim .. "/PWNED-spawn") end)
probe("os.exec", function() return os.exec("touch " .. victim .. "/PWNED-exec") end)
probe("loadlib", function() return package.loadlib("libc.so.6", "system") end)

-- bytecode: a document's own can be loaded only when string.dump made it
probe("crafted bytecode", function()
  local file = io.open("crafted.luc", "wb") file:write("\27LuaS\0crafted") file:close()
  file = io.open("crafted.luc.gen-problems-signature", "wb") file:write(string.rep("x", 32))
  file:close()
  return loadfile("crafted.luc")
end)
probe("bytecode", function()
  local file = io.open("genuine.luc", "wb")
  file:write(string.dump(function() return "GENUINE" end)) file:close()
  return loadfile("genuine.luc")()
end)
"""

# The TeX attacks, by title (the Lua ones run in a luacode* environment).
TEX_PROBES = {
    "input": r"\input{/etc/passwd}",
    "input-secret": r"\input{@SECRET@}",
    "openin": r"\newread\probe\openin\probe=@SECRET@ "
              r"\ifeof\probe EOF\else\read\probe to\got GOT:\got\fi",
    "openout": r"\newwrite\probe\immediate\openout\probe=@VICTIM@/PWNED-tex "
               r"\immediate\write\probe{x}",
    "shell": r"\immediate\write18{touch @VICTIM@/PWNED-shell}",
    "object": r"\immediate\pdfobj file {@SECRET@}\pdfrefobj\pdflastobj",
    "lua-object": r"\immediate\pdfextension obj file {@SECRET@}",
    "lua-image": r"\saveimageresource{@IMAGE@}\useimageresource\lastsavedimageresourceindex",
    "lua-write-callback": "\\begin{luacode*}\nluatexbase.add_to_callback('find_write_file', "
                          "function(id, name) return name end, 'probe')\n\\end{luacode*}\n"
                          r"\newwrite\probe\immediate\openout\probe=@VICTIM@/PWNED-callback "
                          r"\immediate\write\probe{x}",
    "lua-read-callback": "\\begin{luacode*}\nluatexbase.add_to_callback('find_read_file', "
                         "function(id, name) return '@SECRET@' end, 'probe')\n\\end{luacode*}\n"
                         r"\newread\probe\openin\probe=anything \ifeof\probe EOF\else"
                         r"\read\probe to\got GOT:\got\fi",
    "lua-object-callback": "\\begin{luacode*}\nluatexbase.add_to_callback('find_data_file', "
                           "function(name) return nil end, 'probe')\n\\end{luacode*}\n"
                           r"\immediate\pdfextension obj file {@SECRET@}",
    "lua-environment": "\\begin{luacode*}\nos.setenv('openout_any', 'a')\n\\end{luacode*}\n"
                       r"\newwrite\probe\immediate\openout\probe=@VICTIM@/PWNED-env "
                       r"\immediate\write\probe{x}",
}

QUESTIONS = r"""<% set answer_key = false %>
<% set document_name = "Questions" %>
<% include "latex/preamble.tex.j2" %>
<% if typesetting.unicode %>\usepackage{luacode}<% endif %>
\begin{document}
@PROBES@
<% for paper in papers %>
<% include "latex/paper.tex.j2" %>
<% endfor %>
\end{document}
"""


class Scene:
    """A scratch machine: a folder TeX must not touch (with a secret, an outside PDF and a
    victim folder), a teacher's hostile template folder, and caches of their own."""

    def __init__(self, root: Path):
        self.root = root
        self.cache = root / "cache"
        self.victim = root / "victim"
        self.victim.mkdir()
        (self.victim / "sentinel").write_text("keep\n")
        (self.victim / "empty").mkdir()
        self.secret = root / "secret.txt"
        self.secret.write_text(SECRET + "\n")
        self.image = root / "outside.pdf"
        make_pdf(self.image, IMAGE)
        self.guarded = self.cache / "gen-problems" / "luatex" / "built-in"
        for folder in ("cache", "cache/gen-problems", "cache/gen-problems/luatex", self.guarded):
            (root / folder).mkdir(mode=0o700)  # (an absolute path joined stays itself)
        self.roster = root / "greek.csv"
        self.roster.write_text("id,name\ns1,Αλέξανδρος Παπαδόπουλος\n", encoding="utf-8")
        self.templates = root / "teacher"
        (self.templates / "latex").mkdir(parents=True)
        questions = self.templates / "latex" / "questions.tex.j2"
        questions.write_text(self.questions(), encoding="utf-8")
        self.before: dict[str, tuple] = {}

    def questions(self) -> str:
        branches = "\n".join(f'<% elif info.title == "{title}" %>\n{code}'
                             for title, code in TEX_PROBES.items())
        lua = "\\begin{luacode*}" + LUA_PROBES + "\\end{luacode*}"
        probes = f'<% if info.title == "lua" %>\n{lua}\n{branches}\n<% endif %>'
        text = QUESTIONS.replace("@PROBES@", probes)
        for name, value in (("VICTIM", self.victim), ("SECRET", self.secret),
                            ("IMAGE", self.image), ("GUARDED", self.guarded)):
            text = text.replace(f"@{name}@", str(value))
        return text

    def run(self, title: str, *options, out: Path | None = None) -> subprocess.CompletedProcess:
        out = out or self.root / f"out-{title}"
        self.before = self.outside()
        return subprocess.run(
            [sys.executable, "-m", "generator.cli", "--count", "1", "--seed", "7", "--pdf",
             "--title", title, "--templates", str(self.templates), "--out", str(out), *options],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env={**os.environ, "XDG_CACHE_HOME": str(self.cache)})

    def outside(self) -> dict[str, tuple]:
        """Every file and folder of the scratch machine outside the outputs and the caches,
        and what an attack would leave in the built-in templates' font cache."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            relative = path.relative_to(self.root).as_posix()
            if relative.split("/")[0].startswith("out-") or (
                    relative.startswith("cache") and not path.name.startswith("PWNED")):
                continue
            status = path.lstat()
            found[relative] = (status.st_mode, status.st_mtime_ns,
                               path.read_bytes() if path.is_file() else None)
        return found


def make_pdf(path: Path, text: str) -> None:
    subprocess.run(["pdftex", "-interaction=batchmode", f"\\nopagenumbers {text}\\bye"],
                   cwd=path.parent, capture_output=True, check=True, timeout=120)
    (path.parent / "texput.pdf").rename(path)
    for name in ("texput.log",):
        (path.parent / name).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    return Scene(tmp_path_factory.mktemp("machine"))


def pdf_text(path: Path) -> str:
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def every_stream(path: Path) -> bytes:
    """The PDF's bytes and every stream in it, decoded: what a reader of the file could see."""
    found = [path.read_bytes()]
    with pikepdf.open(path) as pdf:
        for item in pdf.objects:
            if isinstance(item, pikepdf.Stream):
                try:
                    found.append(item.read_bytes())
                except pikepdf.PdfError:
                    found.append(item.read_raw_bytes())
    return b"\n".join(found)


def assert_harmless(scene: Scene, done: subprocess.CompletedProcess, out: Path) -> None:
    """Exit 0, or exit 1 with one line; nothing leaked into the PDFs, nothing touched outside."""
    assert done.returncode in (0, 1), done.stderr
    if done.returncode == 1:
        assert done.stderr.count("\n") == 1, done.stderr
        assert "failed on questions.tex" in done.stderr, done.stderr
    else:
        assert done.stderr.splitlines()[-1].startswith("wrote 1 problem"), done.stderr
    for pdf in out.glob("*.pdf"):
        text, streams = pdf_text(pdf), every_stream(pdf)
        for leaked in (SECRET, PASSWD_LINE, IMAGE):
            assert leaked not in text, (pdf.name, leaked)
            assert leaked.encode() not in streams, (pdf.name, leaked)
    assert scene.outside() == scene.before


def engine_of(done: subprocess.CompletedProcess, out: Path) -> str:
    if done.returncode != 0:
        return done.stderr.split()[1]  # gen-problems: <engine> failed on questions.tex: ...
    first = (out / "questions.tex").read_text(encoding="utf-8").splitlines()[0]
    return "lualatex" if first == "% !TEX program = lualatex" else "pdflatex"


# -- LuaLaTeX's Lua --------------------------------------------------------------------------------

@needs_lualatex
def test_lua_in_a_template_reads_and_writes_nothing_outside_and_runs_nothing(scene):
    out = scene.root / "out-lua"
    done = scene.run("lua", "--students", str(scene.roster), out=out)
    assert done.returncode == 0, done.stderr
    assert engine_of(done, out) == "lualatex"
    text = " ".join(pdf_text(out / "questions.pdf").split())
    assert text.count("PROBE ") == LUA_PROBES.count('probe("'), text  # every attack was tried
    assert "PROBE bytecode: true GENUINE" in text  # genuine bytecode still loads
    assert_harmless(scene, done, out)


@needs_lualatex
@pytest.mark.parametrize("title", ["input", "input-secret", "openin", "openout", "shell",
                                   "lua-object", "lua-image", "lua-write-callback",
                                   "lua-read-callback", "lua-object-callback", "lua-environment"])
def test_tex_in_a_template_on_lualatex_reads_and_writes_nothing_outside(scene, title):
    out = scene.root / f"out-{title}-lualatex"
    done = scene.run(title, "--students", str(scene.roster), out=out)
    assert_harmless(scene, done, out)
    assert engine_of(done, out) == "lualatex"
    assert "GOT:" not in (pdf_text(out / "questions.pdf") if done.returncode == 0 else "")


@needs_lualatex
def test_the_built_in_templates_font_cache_is_another_than_a_teacher_folders(scene):
    """What a template leaves in its font cache never reaches a run of other templates; the
    key that signs the caches' bytecode is beside them, private."""
    built_in = subprocess.run(
        [sys.executable, "-m", "generator.cli", "--count", "1", "--pdf", "--students",
         str(scene.roster), "--out", str(scene.root / "out-built-in")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(scene.cache)})
    assert built_in.returncode == 0, built_in.stderr
    caches = scene.cache / "gen-problems" / "luatex"
    assert scene.guarded.is_dir()
    assert (scene.guarded.stat().st_mode & 0o777) == 0o700
    teacher = caches / templates_digest(scene.templates)
    assert scene.run("lua", "--students", str(scene.roster)).returncode == 0
    assert teacher.is_dir() and teacher != scene.guarded
    key = caches / "key"
    assert (key.stat().st_mode & 0o777) == 0o600 and key.stat().st_size == 32


def test_the_signing_key_is_made_once_and_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = font_key()
    assert key is not None and key.read_bytes() == font_key().read_bytes()
    key.chmod(0o644)  # readable by others: not used
    assert font_key() is None


# -- pdflatex ------------------------------------------------------------------------------------

@pytest.mark.parametrize("title", ["input", "input-secret", "openin", "openout", "shell"])
def test_tex_in_a_template_on_pdflatex_reads_and_writes_nothing_outside(scene, title):
    out = scene.root / f"out-{title}-pdflatex"
    done = scene.run(title, out=out)
    assert_harmless(scene, done, out)
    assert engine_of(done, out) == "pdflatex"
    assert "GOT:" not in (pdf_text(out / "questions.pdf") if done.returncode == 0 else "")


@pytest.mark.skipif(not texjail.available(), reason="this kernel has no Landlock")
def test_pdflatex_embeds_no_file_from_outside(scene):
    """pdfTeX's \\pdfobj file reads any file by absolute name whatever openin_any says, and
    pdfTeX has no hook to refuse it; the kernel does (``texjail``)."""
    out = scene.root / "out-object-pdflatex"
    assert_harmless(scene, scene.run("object", out=out), out)


# -- a full disk ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "!pdfTeX error: /usr/bin/pdflatex: fwrite() failed",
    "! error:  (file io): fflush() failed (No space left on device)",
])
def test_a_tex_log_that_says_it_could_not_write_is_a_full_disk(tmp_path, line):
    (tmp_path / "answers.log").write_text(f"(./answers.tex\n{line}\n ==> Fatal error occurred\n")
    with pytest.raises(OSError) as raised:
        raise_if_disk_full(tmp_path / "answers.tex")
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == str(tmp_path / "answers.pdf")


def test_a_tex_error_is_not_a_full_disk(tmp_path):
    (tmp_path / "answers.log").write_text("./answers.tex:3: Undefined control sequence.\n")
    raise_if_disk_full(tmp_path / "answers.tex")  # nothing raised
    raise_if_disk_full(tmp_path / "questions.tex")  # no log at all: nothing raised either


def test_a_disk_that_fills_while_tex_writes_is_one_line_and_the_earlier_set_stays(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=250k", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        out = small / "out"
        gen = [sys.executable, "-m", "generator.cli", "--out", str(out)]
        assert subprocess.run([*gen, "--count", "1", "--seed", "1"], cwd=ROOT,
                              capture_output=True, timeout=300).returncode == 0
        before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()}
        done = subprocess.run([*gen, "--count", "3", "--seed", "2", "--pdf"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr == (f"gen-problems: cannot write the new set to {out}/ (no space left "
                               f"on the disk holding {out}/); the earlier files are as they were\n")
        assert {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()} == before
        assert not (out / ".gen-problems" / "tex-failure").exists()
    finally:
        unmount(small)


# -- the kernel's confinement, on its own ---------------------------------------------------------

@pytest.mark.skipif(not texjail.available(), reason="this kernel has no Landlock")
def test_a_jailed_program_reads_and_writes_only_where_it_is_allowed(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("secret\n")
    (work / "mine").write_text("mine\n")
    script = ("import sys\n"
              "print(open('mine').read().strip())\n"
              "open('made', 'w').write('x')\n"
              "for attempt in (lambda: open(sys.argv[1]).read(), lambda: open(sys.argv[2], 'w'),\n"
              "                lambda: open('/etc/hostname').read()):\n"
              "    try:\n"
              "        attempt()\n"
              "        print('allowed')\n"
              "    except PermissionError:\n"
              "        print('refused')\n")
    command = texjail.jailed([sys.executable, "-S", "-I", "-c", script, str(outside / "secret"),
                              str(outside / "new")], str(work))
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["mine", "refused", "refused", "refused"], done.stderr
    assert (work / "made").exists() and not (outside / "new").exists()
