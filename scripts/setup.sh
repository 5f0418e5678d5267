#!/usr/bin/env bash
# Installs everything the project needs, once; later runs return in a moment.
#   - a virtual environment in .venv with the package (editable) and its test tools
#   - PyTorch 2.13.0 CPU, for the tests' cross-check, only from a wheel already on disk:
#     from PyPI, `pip install torch` would pull a multi-gigabyte CUDA build
#   - TeX Live from Debian packages when pdflatex is missing (needs root or sudo), with
#     LuaLaTeX and Noto fonts for names in any script
#   - for the tests only (FOR_TESTS=1): torch, Debian's chromium for the browser tests,
#     poppler-utils for reading PDFs back, and axe-core (npm) for the accessibility tests
# Sourced by scripts/run.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
TEX_PACKAGES="texlive-latex-base texlive-latex-recommended texlive-latex-extra lmodern
  texlive-lang-german texlive-lang-french texlive-lang-spanish"  # babel for --lang de, fr, es
# For documents holding characters pdflatex cannot typeset (names in Greek, Chinese, Arabic...)
UNICODE_TEX_PACKAGES="texlive-luatex fonts-noto-core fonts-noto-cjk fonts-symbola fonts-noto-color-emoji"
TORCH_WHEEL_DIR=${TORCH_WHEEL_DIR:-/opt/wheels}

say() { echo "setup: $*" >&2; }

# pip, setuptools and apt talk a lot (every editable install warns that it is one); keep
# what they say in a log and show it only when a step fails.
LOG=$VENV/setup.log  # inside .venv, made before any quiet step runs
quietly() {
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    say "failed: $* (the whole log: $LOG)"
    return 1
  fi
}

install_python_packages() {
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  local stamp="$VENV/.installed" wanted
  wanted=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    say "installing Python packages"
    quietly "$VENV/bin/python" -m pip install --upgrade pip
    quietly "$VENV/bin/python" -m pip install -e ".[test]"
    echo "$wanted" > "$stamp"
  fi
  # The project's own bytecode, as pip compiles an installed package's: Python cannot write
  # it where PYTHONDONTWRITEBYTECODE is set (CI, containers), and compiling ~40 modules at
  # every start costs a run 30 ms.  Up-to-date files are skipped.
  quietly "$VENV/bin/python" -m compileall -q generator
}

install_torch_from_disk() {
  "$VENV/bin/python" -c "import torch" 2>/dev/null && return 0
  if ls "$TORCH_WHEEL_DIR"/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
    say "installing torch 2.13.0 (CPU) from $TORCH_WHEEL_DIR"
    quietly "$VENV/bin/python" -m pip install --find-links "$TORCH_WHEEL_DIR" "torch==2.13.0"
  else
    say "no torch 2.13.0 CPU wheel in $TORCH_WHEEL_DIR: the torch checks will be skipped"
  fi
}

install_debian_packages() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null; then
    say "$1 is missing and this is not a Debian/Ubuntu machine: install it by hand"
    return 1
  fi
  say "installing $1 from Debian packages"
  quietly $sudo apt-get update -qq
  shift
  quietly env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}

install_browser() {
  # For the practice page's browser tests: Debian's chromium, driven by Playwright; and
  # poppler's pdftotext, which reads names back out of the PDFs as a teacher's search would.
  command -v chromium >/dev/null && command -v pdftotext >/dev/null && return 0
  install_debian_packages "chromium and poppler-utils (for the tests)" chromium poppler-utils
}

# axe-core, which the accessibility tests run in chromium (tests/test_accessibility.py looks
# for it here, in the environment's folder, which git ignores)
AXE_PREFIX=$VENV/axe
install_axe() {
  [ -f "$AXE_PREFIX/node_modules/axe-core/axe.min.js" ] && return 0
  command -v npm >/dev/null || install_debian_packages "nodejs and npm (for axe-core)" nodejs npm
  say "installing axe-core (for the accessibility tests) from the npm registry"
  quietly npm install --prefix "$AXE_PREFIX" --no-audit --no-fund --no-save axe-core@4
}

tex_ready() {
  command -v pdflatex >/dev/null && command -v lualatex >/dev/null \
    && kpsewhich luaotfload.sty >/dev/null && kpsewhich ngerman.ldf >/dev/null \
    && command -v fc-list >/dev/null || return 1
  local families  # read whole: `fc-list | grep -q` fails under pipefail when grep stops early
  families=$(fc-list : family)
  [[ $families == *"Noto Serif CJK SC"* && $families == *"Symbola"* ]]
}

install_tex() {
  tex_ready && return 0
  # shellcheck disable=SC2086  # the package lists are meant to split into words
  install_debian_packages "TeX Live, LuaLaTeX and Noto fonts (about 300 MB, a minute or two)" \
    $TEX_PACKAGES $UNICODE_TEX_PACKAGES
}

install_python_packages
if [ "${FOR_TESTS:-0}" = 1 ]; then
  install_torch_from_disk
  install_browser
  install_axe
fi
install_tex
