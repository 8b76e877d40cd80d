"""Dependencies point inward: files, git and the index know nothing of MCP or the CLI."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from .helpers import REPO

PACKAGE = REPO / "memvault"
INNER = [
    "confirm",
    "errors",
    "models",
    "note",
    "links",
    "text",
    "config",
    "frontmatter",
    "ids",
    "fields",
    "policy",
    "facts",
    "knowledge_graph",
    "vault",
    "history",
    "changes",
    "template",
    "doctor",
    "importer",
    "importing",
    "purging",
    "asof",
    "proposals",
    "provenance",
    "recovery",
    "interrupted",
    "guard",
    "views",
    "sync",
    "syncing",
    "merging",
    "retrieval",
    "service",
    "lifecycle",
    "profile",
    "reports",
    "context",
    "index/__init__",
    "index/rank",
    "index/store",
    "index/fulltext",
    "index/vectors",
]
FORBIDDEN = ("mcp", "click", "memvault.server", "memvault.cli", "uvicorn")
PURE = ["frontmatter", "ids", "note", "links", "text", "models", "policy", "facts", "index/rank"]
PURE += ["views"]
PURE += ["merging", "knowledge_graph"]
SERVER = sorted(f"server/{p.stem}" for p in (PACKAGE / "server").glob("*.py"))
ADAPTERS = ["cli", "watcher", *SERVER]
# What a pure module must not drag in, even indirectly: index engines, databases, numeric
# libraries, transports, the CLI toolkit, the segmenter, and (but for frontmatter) YAML.
HEAVY = (
    "numpy",
    "whoosh",
    "sqlite3",
    "jieba",
    "mcp",
    "pydantic",
    "anyio",
    "uvicorn",
    "click",
    "watchdog",
    "filelock",
    "yaml",
)
TRANSITIVELY_PURE = {"note": HEAVY, "text": HEAVY, "models": HEAVY, "policy": HEAVY}
TRANSITIVELY_PURE |= {"facts": HEAVY, "links": HEAVY, "knowledge_graph": HEAVY}
TRANSITIVELY_PURE |= {"views": HEAVY, "ids": HEAVY, "frontmatter": HEAVY[:-1]}
SERVICE_PARTS = ("index", "vault", "history", "indexing", "retrieval")


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
    bad = [m for m in imports_of(module) if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
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


@pytest.mark.parametrize("module", sorted(TRANSITIVELY_PURE))
def test_pure_modules_load_nothing_heavy_even_indirectly(module: str) -> None:
    code = (
        f"import json, sys, memvault.{module}; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    loaded = set(json.loads(out.stdout))
    assert not loaded & set(TRANSITIVELY_PURE[module]), f"memvault.{module} loads {loaded}"


def _reaches_through_service(node: ast.Attribute) -> str | None:
    """``service.index`` / ``self.service.vault`` / ``service._private``: the part reached."""
    owner = node.value
    name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    if name not in ("service", "svc"):
        return None
    if node.attr in SERVICE_PARTS or node.attr.startswith("_"):
        return ast.unparse(node)
    return None


@pytest.mark.parametrize("module", ADAPTERS)
def test_adapters_use_the_service_api_not_its_parts(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    reached = [
        found
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and (found := _reaches_through_service(node))
    ]
    assert not reached, f"memvault/{module}.py reaches into the service: {reached}"


def test_the_architecture_checks_can_fail() -> None:
    """The reach-through check sees the patterns it forbids."""
    for source in ("service.index.status()", "self.service.vault.root", "service._locate(x)"):
        node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute))
        while isinstance(node.value, ast.Attribute) and node.value.attr != "service":
            node = node.value
        assert _reaches_through_service(node), source


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} {length}")
    assert not long, long


def test_the_service_stays_small() -> None:
    lines = (PACKAGE / "service.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 500, f"service.py has {lines} lines: move a concern to its own module"


def test_every_mcp_tool_is_a_short_module_level_adapter() -> None:
    """parse, one service call, format: at most 30 lines, registered from a table."""
    from memvault.server.tools import TOOLS

    tree = ast.parse((PACKAGE / "server" / "tools.py").read_text(encoding="utf-8"))
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for fn, _ in TOOLS:
        node = top[fn.__name__]  # a KeyError here: the tool is not module-level
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        assert length <= 30, f"the {fn.__name__} tool is {length} lines: move logic inward"
