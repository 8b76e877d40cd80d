"""Run LoCoMo through the product path: one real vault per conversation (bulk import: files,
git, index), each question through the same ranking as the MCP ``recall`` tool."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..config import Settings
from ..index import INDEX_VERSION
from ..models import Filters
from ..service import MemoryService
from ..template import create_vault
from . import locomo

log = logging.getLogger(__name__)

VARIANTS = ("T", "C", "S", "O")
MODES = ("bm25", "vector", "hybrid")
SPLITS = ("dev", "test", "all")
TOP = 50
# The moment every question is asked. Recency is exp(-rate x age): with the wall clock
# the fused scores of LoCoMo's 2023 turns shrank a little every day and near-ties flipped,
# so the same code gave figures a question apart on two days. Years after every session,
# so recency adds almost nothing, as in every figure published before it was fixed.
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def default_data() -> Path | None:
    """``../shared/datasets/locomo/locomo10.json`` beside the repository, when present."""
    here = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo" / "locomo10.json"
    cwd = Path.cwd().parent / "shared" / "datasets" / "locomo" / "locomo10.json"
    return next((p for p in (cwd, here) if p.is_file()), None)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memvault" / "eval"


def pick(convs: list[locomo.Conversation], split: str) -> list[locomo.Conversation]:
    if split == "dev":
        return [c for c in convs if c.sample_id in locomo.DEV]
    if split == "test":
        return [c for c in convs if c.sample_id not in locomo.DEV]
    return convs


def vault_for(
    conv: str, variant: str, items: Sequence[locomo.Item], cache: Path, settings: Settings
) -> MemoryService:
    """A vault of these items, reused when the same content was built before; its clock
    stands still at ``NOW``."""
    digest = hashlib.sha256(
        json.dumps(
            [
                [asdict(i) | {"covers": sorted(i.covers)} for i in items],
                INDEX_VERSION,
                settings.embedder,
            ]
        ).encode()
    ).hexdigest()[:12]
    root = cache / f"{variant}-{conv}-{digest}"
    if not (root / ".memvault" / "eval-ready").exists():
        shutil.rmtree(root, ignore_errors=True)
        create_vault(root)
        service = MemoryService.open(root, settings)
        source = root.parent / f"{root.name}.jsonl"
        with source.open("w", encoding="utf-8") as handle:
            for item in items:
                record = {
                    "id": item.key,
                    "content": item.content,
                    "title": item.title,
                    "created": item.created,
                    "type": "episode",
                    "source": "import",
                    "confidence": 1.0,
                    "importance": 0.5,
                    "gold": sorted(item.covers),
                    "folder": f"locomo/{variant.lower()}",
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        service.import_path(source)
        service.fill_vectors(wait=600)  # a bulk import leaves vectors to be made
        source.unlink()
        (root / ".memvault" / "eval-ready").write_text("ok")
    else:
        service = MemoryService.open(root, settings)
        service.ensure_synced()
    service.clock = lambda: NOW
    return service


def run(
    data: Path,
    variants: Sequence[str] = VARIANTS,
    modes: Sequence[str] = MODES,
    split: str = "all",
    cache: Path | None = None,
    settings: Settings | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Metric tables: result[variant][mode][category] -> {metric: percent}."""
    settings = settings or Settings()
    cache = cache or default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    convs = pick(locomo.load(data), split)
    started = time.perf_counter()
    tables: dict[str, Any] = {}
    for variant in variants:
        rows: dict[str, list[tuple[int, dict[str, float]]]] = {m: [] for m in modes}
        for conv in convs:
            items = locomo.items(conv, variant)
            covers = {i.key: i.covers for i in items}
            if progress:
                progress(f"{variant} {conv.sample_id}: {len(items)} memories")
            service = vault_for(conv.sample_id, variant, items, cache, settings)
            try:
                for question in locomo.questions(conv, variant):
                    relevant = sum(1 for i in items if i.covers & question.gold)
                    for mode in modes:
                        hits = service.search(
                            question.text,
                            k=TOP,
                            # the ranking's figures: the relevance floor is measured
                            # apart (benchmarks/no_match.py)
                            filters=Filters(include_archived=True, min_relevance=0.0),
                            mode=mode,
                        )
                        ranked = [covers.get(h.doc.id, frozenset()) for h in hits]
                        sessions = locomo.session_covers(ranked) if variant in ("T", "C") else None
                        metrics = locomo.score(ranked, question.gold, relevant, sessions)
                        rows[mode].append((question.category, metrics))
            finally:
                service.close()
        tables[variant] = {m: locomo.aggregate(r) for m, r in rows.items()}
    return {
        "split": split,
        "conversations": [c.sample_id for c in convs],
        "settings": asdict(settings),
        "seconds": round(time.perf_counter() - started, 1),
        "tables": tables,
    }


def render(result: dict[str, Any]) -> str:
    out = [
        f"LoCoMo retrieval, split {result['split']} ({len(result['conversations'])} "
        f"conversations), {result['seconds']}s\n"
    ]
    for variant, by_mode in result["tables"].items():
        for mode, table in by_mode.items():
            out.append(locomo.format_table(f"variant {variant}, {mode}", table))
    return "\n".join(out)
