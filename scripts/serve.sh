#!/usr/bin/env bash
# Install memvault into .venv/ (first run, then only when pyproject.toml changed: see
# setup-venv.sh), create the vault from vault-template/ when missing, print how an MCP
# host connects, then serve it over stdio.
# The vault is $MEMVAULT_VAULT, else ~/.local/share/memvault/vault. Extra arguments go to
# `memvault serve` (for example --http --port 8765).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh "" >&2
vault="${MEMVAULT_VAULT:-${XDG_DATA_HOME:-$HOME/.local/share}/memvault/vault}"
.venv/bin/memvault --vault "$vault" init >&2
.venv/bin/memvault --vault "$vault" connect >&2
echo "serving $vault (stop with Ctrl-C) ..." >&2
exec .venv/bin/memvault --vault "$vault" serve "$@"
