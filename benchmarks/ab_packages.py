"""This checkout's git layer and frontmatter parser against another checkout's, interleaved.

On a loaded machine two benchmark runs minutes apart measure the load, not the code. This
script loads the other checkout's ``memvault`` package under another name, builds one git
vault of N files (default 10,000), then alternates: one commit through each ``History``
(the order flips every round), and one ``frontmatter.parse`` pass over N realistic files
through each parser. Both sides see the same load. Prints p50/p95 of the commits and the
median files/s of the parse passes.

Usage: python -m benchmarks.ab_packages OTHER_CHECKOUT [N] [COMMITS] [PASSES]
"""

from __future__ import annotations

import importlib.util
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.common import pct
from benchmarks.parse_rate import memory_file
from memvault import frontmatter, history


def load_other(checkout: Path) -> tuple[ModuleType, ModuleType]:
    """The other checkout's ``history`` and ``frontmatter`` modules (package ``othervault``)."""
    package = checkout / "memvault"
    spec = importlib.util.spec_from_file_location(
        "othervault", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["othervault"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("othervault.history"), importlib.import_module(
        "othervault.frontmatter"
    )


def build(root: Path, count: int) -> list[str]:
    rng = random.Random(11)
    texts = [memory_file(rng, n) for n in range(count)]
    for n, text in enumerate(texts):
        folder = root / f"f{n % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"memory-{n}.md").write_text(text, encoding="utf-8")
    this = history.History(root)
    this.init()
    this.commit(this.changed_paths(), "init", {"Memvault-Op": "init"})
    return texts


def commits(sides: dict[str, Any], root: Path, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for n in range(rounds):
        for name in names if n % 2 == 0 else names[::-1]:
            rel = f"new/{name}-{n}.md"
            (root / "new").mkdir(exist_ok=True)
            (root / rel).write_text(f"---\nid: x-{n}\n---\nMemory {n} by {name}.\n", "utf-8")
            start = time.perf_counter()
            sides[name].commit([rel], f"add: {rel}", {"Memvault-Op": "add"})
            times[name].append(time.perf_counter() - start)
    return times


def parses(parsers: dict[str, ModuleType], texts: list[str], passes: int) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {name: [] for name in parsers}
    names = list(parsers)
    for n in range(passes):
        for name in names if n % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            for text in texts:
                parsers[name].parse(text)
            rates[name].append(len(texts) / (time.perf_counter() - start))
    return rates


def main() -> None:
    other = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    passes = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    other_history, other_frontmatter = load_other(other)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        texts = build(root, count)
        sides = {"this": history.History(root), "other": other_history.History(root)}
        for name, seconds in commits(sides, root, rounds).items():
            ms = [s * 1000 for s in seconds]
            print(
                f"git commit at {count} files, {name} checkout: p50 {pct(ms, 50):.1f} ms, "
                f"p95 {pct(ms, 95):.1f} ms (n={len(ms)})"
            )
    parsers = {"this": frontmatter, "other": other_frontmatter}
    for name, rates in parses(parsers, texts, passes).items():
        print(
            f"frontmatter.parse of {count} files, {name} checkout: "
            f"median {statistics.median(rates):,.0f} files/s, best {max(rates):,.0f} (n={passes})"
        )


if __name__ == "__main__":
    main()
