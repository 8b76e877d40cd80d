"""Cross-language recall: hit@1/3/5 and MRR@10 per direction on the bilingual set.

Usage: python benchmarks/crosslingual/run.py [--mode hybrid|bm25|vector] [--all-modes]
                                             [--half dev|holdout|all] [--k 3] [--misses]

Builds a temporary vault from memories.jsonl through the product's bulk import (default
settings, so the default embedder), asks every question of queries.jsonl through
``MemoryService.recall`` twice, with the default relevance floor and without one
(``min_relevance=0``), and prints one table per mode and floor, then hit@3 per half
(validate.half: settings are chosen on dev, holdout only reports them). --half keeps one
half only. --misses lists the questions whose gold memory is not in the top --k (with the
floor), with what came first instead.

Then the other side of the floor, "no match" across languages: two more vaults, one of
the English memories only and one of the Chinese ones; each same-language question
(en->en, zh->zh) is asked of the vault of the other language, which does not hold its
answer (it holds memories on the same family and job), and the share answered with no hit
at all (default floor) is printed, per half.

Only the public service API is used (create_vault, MemoryService.open, import_path, recall),
so the script survives a refactor of the index.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.crosslingual.validate import DIRECTIONS, HERE, half, load
from memvault.config import Settings
from memvault.models import Filters
from memvault.service import MemoryService, create_vault

MODES = ("bm25", "vector", "hybrid")
DEPTH = 10  # results asked for; MRR is computed over these


def build(root: Path, memories: list[dict[str, Any]]) -> tuple[MemoryService, dict[str, str]]:
    """A vault holding the set's memories, and the vault path of each set id."""
    create_vault(root)
    service = MemoryService.open(root, Settings())
    source = root.parent / "memories-import.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for m in memories:
            record = {k: m[k] for k in ("title", "content", "type", "tags")}
            handle.write(json.dumps(record | {"folder": f"{m['type']}s"}, ensure_ascii=False))
            handle.write("\n")
    paths = list(service.import_path(source).paths)
    service.fill_vectors(wait=600)
    if len(paths) != len(memories):
        raise SystemExit(f"imported {len(paths)} of {len(memories)} memories")
    return service, {path: m["id"] for path, m in zip(paths, memories, strict=True)}


def rank_of(ranked: list[str], gold: list[str]) -> int | None:
    """1-based rank of the first gold memory, None when none was returned."""
    return next((n for n, i in enumerate(ranked, 1) if i in gold), None)


def evaluate(
    service: MemoryService,
    by_path: dict[str, str],
    queries: list[dict[str, Any]],
    mode: str,
    floor: float | None = None,
) -> list[dict[str, Any]]:
    """Each query with its ranked set ids and the gold's rank; ``floor`` None: the default."""
    filters = None if floor is None else Filters(min_relevance=floor)
    out = []
    for q in queries:
        hits = service.recall(q["query"], k=DEPTH, filters=filters, mode=mode)
        ranked = [by_path.get(h.path, h.path) for h in hits]
        out.append(q | {"ranked": ranked, "rank": rank_of(ranked, q["gold"])})
    return out


def table(results: list[dict[str, Any]], mode: str) -> str:
    groups: dict[str, list[int | None]] = defaultdict(list)
    for r in results:
        groups[r["direction"]].append(r["rank"])
        groups["all"].append(r["rank"])
        if r["direction"] in ("zh->en", "en->zh"):
            groups["cross (zh->en + en->zh)"].append(r["rank"])
    rows = [
        f"mode {mode}",
        "| direction | n | hit@1 | hit@3 | hit@5 | MRR@10 |",
        "|---|---|---|---|---|---|",
    ]
    for name in [*DIRECTIONS, "cross (zh->en + en->zh)", "all"]:
        ranks = groups.get(name)
        if not ranks:
            continue
        hit = [
            100 * sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in (1, 3, 5)
        ]
        mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
        rows.append(
            f"| {name} | {len(ranks)} | {hit[0]:.1f} | {hit[1]:.1f} | {hit[2]:.1f} | {mrr:.3f} |"
        )
    return "\n".join(rows)


def hit3(results: list[dict[str, Any]]) -> tuple[int, float]:
    n = len(results)
    return n, 100 * sum(1 for r in results if r["rank"] is not None and r["rank"] <= 3) / (n or 1)


def _part(results: list[dict[str, Any]], direction: str, part: str) -> list[dict[str, Any]]:
    return [r for r in results if r["direction"] == direction and part in ("all", half(r["query"]))]


def halves(floored: list[dict[str, Any]], unfloored: list[dict[str, Any]], mode: str) -> str:
    """hit@3 per direction and half, without the floor / with the default floor."""
    rows = [
        f"mode {mode}, hit@3 without floor / with the default floor, per half",
        "| direction | dev n | dev | holdout n | holdout | all n | all |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in DIRECTIONS:
        cells = []
        for part in ("dev", "holdout", "all"):
            n, without = hit3(_part(unfloored, name, part))
            _, with_floor = hit3(_part(floored, name, part))
            cells.append(f"{n} | {without:.1f} / {with_floor:.1f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(rows)


def no_match(root: Path, memories: list[dict[str, Any]], queries: list[dict[str, Any]]) -> str:
    """Same-language questions asked of a vault of the other language's memories only."""
    rows = [
        "hybrid, same-language questions asked of the other language's memories only",
        "| questions | vault | dev n | no match | holdout n | no match |",
        "|---|---|---|---|---|---|",
    ]
    for direction, lang in (("en->en", "zh"), ("zh->zh", "en")):
        vault = [m for m in memories if m["lang"] == lang]
        service, _ = build(root / f"only-{lang}", vault)
        try:
            cells = []
            for part in ("dev", "holdout"):
                asked = [q for q in queries if q["direction"] == direction]
                asked = [q for q in asked if half(q["query"]) == part]
                silent = sum(1 for q in asked if not service.recall(q["query"], k=DEPTH))
                cells.append(f"{len(asked)} | {100 * silent / (len(asked) or 1):.1f}%")
        finally:
            service.close()
        rows.append(f"| {direction} | {lang} only ({len(vault)}) | {' | '.join(cells)} |")
    return "\n".join(rows)


def misses(results: list[dict[str, Any]], k: int) -> str:
    lines = [f"misses at {k} (gold -> rank; top 3 returned):"]
    for r in results:
        if r["rank"] is None or r["rank"] > k:
            lines.append(
                f"  [{r['direction']}] {r['query']}  gold {','.join(r['gold'])} -> "
                f"{r['rank'] or '-'}; got {', '.join(r['ranked'][:3])}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="hybrid")
    parser.add_argument("--all-modes", action="store_true", help="bm25, vector and hybrid")
    parser.add_argument("--k", type=int, default=3, help="cut-off for --misses")
    parser.add_argument("--misses", action="store_true", help="list queries missed at --k")
    parser.add_argument("--half", choices=("dev", "holdout", "all"), default="all")
    args = parser.parse_args(argv)
    memories, queries = load(HERE)
    queries = [q for q in queries if args.half in ("all", half(q["query"]))]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        service, by_path = build(Path(tmp) / "vault", memories)
        index = service.index_status()
        print(
            f"{len(memories)} memories, {len(queries)} queries; embedder "
            f"{index.get('model') or index.get('name') or index.get('state')}, "
            f"{index.get('with_vectors')} with vectors; built in "
            f"{time.perf_counter() - start:.0f}s"
        )
        try:
            for mode in MODES if args.all_modes else (args.mode,):
                results = evaluate(service, by_path, queries, mode)
                unfloored = evaluate(service, by_path, queries, mode, floor=0.0)
                print()
                print(table(results, f"{mode}, default floor"))
                print()
                print(table(unfloored, f"{mode}, no floor (min_relevance=0)"))
                print()
                print(halves(results, unfloored, mode))
                if args.misses:
                    print(misses(results, args.k))
        finally:
            service.close()
        print()
        print(no_match(Path(tmp), memories, queries))


if __name__ == "__main__":
    sys.exit(main())
