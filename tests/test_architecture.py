"""Dependencies point inward: files, git and the index know nothing of MCP or the CLI."""

from __future__ import annotations

import ast

import pytest

from .helpers import REPO

PACKAGE = REPO / "memvault"
INNER = [
    "errors",
    "models",
    "config",
    "frontmatter",
    "ids",
    "policy",
    "facts",
    "vault",
    "history",
    "doctor",
    "importer",
    "views",
    "index/__init__",
    "index/text",
    "index/rank",
    "index/store",
    "index/fulltext",
    "index/vectors",
]
FORBIDDEN = ("mcp", "click", "memvault.server", "memvault.cli", "memvault.http", "uvicorn")
PURE = ["frontmatter", "ids", "policy", "facts", "index/text", "index/rank", "views"]


def imports_of(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = ["memvault", *module.split("/")[:-1]][
                    : len(module.split("/")) + 1 - node.level
                ]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
    return found


@pytest.mark.parametrize("module", INNER)
def test_inner_modules_do_not_import_adapters(module: str) -> None:
    bad = [
        m
        for m in imports_of(module)
        if m.split(".")[0] in ("mcp", "click", "uvicorn") or m in FORBIDDEN
    ]
    assert not bad, f"memvault/{module}.py imports {bad}"


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_do_no_io(module: str) -> None:
    bad = {"subprocess", "sqlite3", "shutil", "tempfile", "memvault.vault", "memvault.history"}
    assert not (imports_of(module) & bad)


def test_only_the_cli_prints() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name == "cli.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        assert not calls, f"{path.name} calls print(): log to stderr instead"
