#!/usr/bin/env bash
# Create .venv/ in the repository root and install memvault into it.
# Usage: scripts/setup-venv.sh [EXTRAS]   e.g. "st,dev" for everything the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
if [[ ",$extras," == *",st,"* ]]; then
  # CPU torch first: otherwise sentence-transformers pulls a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet -e "$spec"
