"""Shared helpers for benchmark scripts: synthetic vaults, percentiles, memory."""

from __future__ import annotations

import json
import random
import resource
import statistics
import time
from pathlib import Path

from memvault.config import Settings
from memvault.service import MemoryService
from memvault.template import create_vault

EN_SUBJECTS = ["The user", "Alice", "The team", "Our client", "Bob", "The project lead", "Mia"]
EN_VERBS = [
    "prefers",
    "decided to use",
    "wants",
    "dislikes",
    "often mentions",
    "switched to",
    "asked about",
    "reviewed",
    "is learning",
    "recommended",
]
EN_OBJECTS = [
    "Markdown tables for reports",
    "PostgreSQL for the billing service",
    "weekly status emails",
    "dark mode in every editor",
    "Rust for the parser",
    "a four-day work week",
    "green tea in the afternoon",
    "Kubernetes on bare metal",
    "short answers without preamble",
    "the Lisbon office",
    "TypeScript strict mode",
    "a trip to Kyoto in April",
    "running before breakfast",
    "vinyl records",
    "the quarterly budget review",
    "pair programming on Fridays",
]
EN_TAILS = [
    "because it is easier to scan",
    "after the outage in March",
    "since the new hire joined",
    "for the sake of the audit",
    "as agreed in the retro",
    "to keep costs down",
    "which the manager approved",
    "until further notice",
]
ZH_SUBJECTS = ["用户", "团队", "客户", "产品经理", "小王", "我们"]
ZH_VERBS = ["喜欢", "决定使用", "希望", "不喜欢", "经常提到", "改用", "正在学习", "推荐"]
ZH_OBJECTS = [
    "用表格写周报",
    "数据库字段命名规范用 snake_case",
    "每周五结对编程",
    "深色主题",
    "下午喝绿茶",
    "在上海办公室开会",
    "用 Python 写脚本",
    "周末去爬山",
    "简洁的回答",
    "季度预算评审",
    "用 Rust 重写解析器",
    "四月去京都旅行",
]
ZH_TAILS = ["因为这样更清楚", "在三月的故障之后", "为了方便审计", "经理已经同意", "为了降低成本"]
TYPES = ["preference", "fact", "episode", "note", "task", "summary"]


def sentence(rng: random.Random, chinese: bool) -> str:
    if chinese:
        return (
            rng.choice(ZH_SUBJECTS)
            + rng.choice(ZH_VERBS)
            + rng.choice(ZH_OBJECTS)
            + "，"
            + (rng.choice(ZH_TAILS) + "。")
        )
    return (
        f"{rng.choice(EN_SUBJECTS)} {rng.choice(EN_VERBS)} {rng.choice(EN_OBJECTS)} "
        f"{rng.choice(EN_TAILS)}."
    )


def memory_text(rng: random.Random, n: int) -> str:
    chinese = n % 4 == 3  # a quarter of the vault is Chinese
    count = rng.choice([1, 1, 2, 2, 3, 4, 6])
    body = " ".join(sentence(rng, chinese) for _ in range(count))
    return f"{body} (ref {n})"


def write_jsonl(path: Path, count: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            kind = TYPES[n % len(TYPES)]
            day = 1 + n % 28
            record = {
                "content": memory_text(rng, n),
                "type": kind,
                "tags": rng.sample(["work", "home", "health", "travel", "code", "team"], 2),
                "importance": round(rng.random(), 2),
                "created": f"2026-{1 + n % 11:02d}-{day:02d}T10:00:00+00:00",
                "folder": f"{kind}s/{n % 20:02d}",
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def build_vault(
    root: Path, count: int, settings: Settings | None = None
) -> tuple[MemoryService, float]:
    """A vault of ``count`` synthetic memories through the product's bulk import."""
    create_vault(root)
    service = MemoryService.open(root, settings or Settings())
    source = write_jsonl(root.parent / f"synthetic-{count}.jsonl", count)
    start = time.perf_counter()
    service.import_path(source)
    service.fill_vectors(wait=600)  # vectors too (a bulk import leaves them to be made)
    return service, time.perf_counter() - start


def given_or_built(argv: list[str], index: int, tmp: str, count: int) -> Path:
    """The vault named at ``argv[index]`` (already built), else a new one of ``count``."""
    if len(argv) > index:
        return Path(argv[index])
    root = Path(tmp) / "vault"
    service, _ = build_vault(root, count, Settings())
    service.close()
    return root


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(label: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (
        f"{label}: p50 {pct(ms, 50):.1f} ms, p95 {pct(ms, 95):.1f} ms, "
        f"mean {statistics.mean(ms):.1f} ms (n={len(ms)})"
    )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


QUERIES = [
    "what does the user prefer for reports",
    "which database for billing",
    "用户喜欢什么样的周报",
    "when is the budget review",
    "who recommended Rust",
    "团队的命名规范",
    "trip to Japan",
    "morning exercise habits",
    "office location",
    "what editor theme",
    "结对编程是哪天",
    "status emails frequency",
]
