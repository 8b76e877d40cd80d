#!/usr/bin/env bash
# Create .venv/ in the repository root and install memvault into it.
# Usage: scripts/setup-venv.sh [EXTRAS]   e.g. "st,dev" for everything the tests need.
# The install is editable, so code changes need no reinstall: pip runs only when the venv is
# new, the project's install inputs changed (pyproject.toml, this script, the checkout's
# location) or an extra is asked for that is not installed. A stamp in the venv records what
# the last install was made from.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
stamp=.venv/.memvault-installed
inputs="$(cat pyproject.toml scripts/setup-venv.sh | cksum) at $PWD"

installed() {  # the stamp names these inputs, and every extra asked for was installed
  [ -x .venv/bin/python ] && [ -f "$stamp" ] || return 1
  [ "$(sed -n 1p "$stamp")" = "$inputs" ] || return 1
  local have extra
  have=",$(sed -n 2p "$stamp"),"
  for extra in ${extras//,/ }; do
    [[ "$have" == *",$extra,"* ]] || return 1
  done
}

if installed; then
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
rm -f "$stamp"
if [[ ",$extras," == *",st,"* ]]; then
  # CPU torch first: otherwise sentence-transformers pulls a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet -e "$spec"
printf '%s\n%s\n' "$inputs" "$extras" > "$stamp"
