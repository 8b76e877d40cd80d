#!/usr/bin/env bash
# The official MCP Inspector CLI against `memvault serve` on a scratch vault: list the tools
# and call `recall`. Needs npm and the npm registry (not part of the test suite).
set -euo pipefail
cd "$(dirname "$0")/.."
vault="$(mktemp -d)/vault"
.venv/bin/memvault --vault "$vault" init >/dev/null
.venv/bin/memvault --vault "$vault" add "The user prefers answers as short bullet lists." --type preference >/dev/null
inspector=(npx -y @modelcontextprotocol/inspector --cli .venv/bin/memvault --vault "$vault" serve)
echo "== tools/list"
"${inspector[@]}" --method tools/list | head -c 1500; echo
echo "== tools/call recall"
"${inspector[@]}" --method tools/call --tool-name recall --tool-arg 'query=how should answers look'
