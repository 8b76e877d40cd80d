#!/usr/bin/env bash
# Install everything (including the sentence-transformers extra) into .venv/ and run
# the whole suite: ruff (format + lint), mypy, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh "st,dev"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff format --check memvault tests benchmarks
.venv/bin/ruff check memvault tests benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
