#!/usr/bin/env bash
# The main job: install what is needed, then generate a set of problems into out/.
# Arguments are passed to gen-problems; without any, it runs `--count 20 --pdf`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then set -- --count 20 --pdf; fi
exec .venv/bin/gen-problems "$@"
