#!/usr/bin/env bash
# The test suite: install what is needed (torch CPU from disk included), then run pytest.
# Arguments are passed to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FOR_TESTS=1 bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
