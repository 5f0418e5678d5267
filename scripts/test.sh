#!/usr/bin/env bash
# The test suite: install what is needed (torch CPU from disk included), then run pytest.
# Arguments are passed to pytest; --fast runs only the fast tier (docs/testing.md): the tests
# marked neither slow, tex, browser nor equivalence.  Without it, every test runs (CI's run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FOR_TESTS=1 bash scripts/setup.sh
# The habits CI keeps, before the tests: ruff's rules ([tool.ruff] in pyproject.toml) over the
# repository, and mypy over the library's front door ([tool.mypy]).  Each lists what it found,
# then one line says which failed, and the script stops.
if ! .venv/bin/ruff check --quiet --output-format concise .; then
  echo "test.sh: ruff check failed (the findings above; fix them or say why in pyproject.toml)" >&2
  exit 1
fi
if ! .venv/bin/mypy --no-error-summary; then
  echo "test.sh: mypy failed on the library's front door (the errors above)" >&2
  exit 1
fi
FAST=()
ARGS=()
for arg in "$@"; do
  if [ "$arg" = --fast ]; then
    FAST=(-m "not slow and not tex and not browser and not equivalence")
  else
    ARGS+=("$arg")
  fi
done
exec .venv/bin/python -m pytest ${FAST[@]+"${FAST[@]}"} ${ARGS[@]+"${ARGS[@]}"}
