"""Recall outputs of a fixed set of searches, to check that a speed change keeps every
result the same.

Usage: python -m benchmarks.recall_dump VAULT OUT.json [--compare BEFORE.json]

Runs 51 questions (167 searches) (English, Chinese, mixed; without and with type, tag, since and
min_relevance filters; hybrid, full text and vector) against an existing vault (for example
the 10k vault of ``benchmarks.scale --keep``) with the clock fixed, and writes each hit's
id, score, relevance, snippet and ``why`` to OUT.json. With --compare, prints every search
whose hits differ from BEFORE.json and exits 1 if any does. The vault is only read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import QUERIES
from memvault.config import Settings
from memvault.models import Filters
from memvault.service import MemoryService

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)

MORE = [
    "PostgreSQL billing outage",
    "dark mode editor",
    "vinyl records the manager approved",
    "Kubernetes on bare metal",
    "weekly status emails",
    "who is learning Python",
    "quarterly budget review in Shanghai",
    "hiking on weekends",
    "snake_case naming for database fields",
    "用 Python 写脚本",
    "小王不喜欢在上海办公室开会",
    "季度预算评审",
    "周末去爬山",
    "数据库字段命名规范 snake_case",
    "Mia 喜欢 dark mode",
    "PostgreSQL 账单服务",
    "the new hire 新同事",
    "audit 审计",
    "costs down 降低成本",
    "what did Alice ask",
    "ref 42",
    "outage in March",
    "xyzzy plugh frobnicate",
    "the",
    "a b c d e f g",
    "Rust Go Python TypeScript Kubernetes PostgreSQL Redis",
    "office",
    "为什么",
    "meeting notes from the Tokyo trip in April about the migration plan",
]

FILTERED = [
    ("which database for billing", Filters(types=("preference",))),
    ("dark mode editor", Filters(tags=("work",))),
    ("团队的命名规范", Filters(types=("note", "fact"))),
    ("budget review", Filters(since=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))),
    ("Kubernetes", Filters(tags=("home", "work"), types=("episode",))),
    ("trip to Japan", Filters(min_relevance=0.3)),
    ("季度预算评审", Filters(until=dt.datetime(2026, 3, 1, tzinfo=dt.UTC))),
    ("morning exercise habits", Filters(include_archived=True)),
    ("office location", Filters(folder="facts")),
    ("status emails frequency", Filters(min_relevance=0.0)),
]


def searches() -> list[tuple[str, Filters | None, str, int]]:
    out: list[tuple[str, Filters | None, str, int]] = []
    for query in [*QUERIES, *MORE]:
        out.append((query, None, "hybrid", 8))
        out.append((query, None, "bm25", 8))
        out.append((query, Filters(min_relevance=0.0), "hybrid", 8))  # the floor cuts many
    for query in QUERIES[:6]:
        out.append((query, None, "vector", 8))
        out.append((query, None, "hybrid", 30))
        out.append((query, Filters(min_relevance=0.0), "hybrid", 30))
        out.append((query, Filters(min_relevance=0.0), "vector", 8))
    for query, filters in FILTERED:
        out.append((query, filters, "hybrid", 8))
        out.append((query, filters, "bm25", 8))
    return out


def dump(root: Path) -> tuple[list[dict[str, Any]], list[float]]:
    service = MemoryService.open(root, Settings())
    service.clock = lambda: NOW
    service.index.loader.get()
    service.ensure_synced()
    out, cpu = [], []
    for query, filters, mode, k in searches():
        begin = time.process_time()
        hits = service.recall(query, k, filters, mode)
        cpu.append(time.process_time() - begin)
        out.append(
            {
                "search": [query, repr(filters), mode, k],
                "hits": [
                    [h.id, h.score, h.relevance, h.snippet, h.why, h.title, h.path] for h in hits
                ],
            }
        )
    service.close()
    return out, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args()
    results, cpu = dump(args.vault)
    text = json.dumps(results, ensure_ascii=False, indent=1)
    args.out.write_text(text)
    results = json.loads(text)  # compared as read back, like the file compared with
    cpu.sort()
    print(
        f"{len(results)} searches, {sum(len(r['hits']) for r in results)} hits; "
        f"CPU p50 {cpu[len(cpu) // 2] * 1000:.1f} ms (query embeddings included)"
    )
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [
            (a["search"], a["hits"], b["hits"])
            for a, b in zip(before, results, strict=True)
            if a != b
        ]
        for search, old, new in differ:
            print(f"DIFFERS: {search}\n  before: {old}\n  after:  {new}")
        print(f"{len(differ)} of {len(results)} searches differ from {args.compare}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
