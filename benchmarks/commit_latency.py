"""Commit latency of one `add` in a vault of N files (default 10,000).

Prints p50/p95 of the whole remember call (file + git commit + index) and of the
git commit alone. Usage: python benchmarks/commit_latency.py [N] [ADDS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import build_vault, summary
from memvault.config import Settings


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    adds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory() as tmp:
        service, build = build_vault(Path(tmp) / "vault", count, Settings(embedder="none"))
        print(f"vault of {count} files built in {build:.1f}s (text index only)")
        total, commit_only = [], []
        original = service.history.commit

        def timed_commit(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                commit_only.append(time.perf_counter() - start)

        service.history.commit = timed_commit  # type: ignore[method-assign]
        for n in range(adds):
            start = time.perf_counter()
            service.remember(
                f"Benchmark memory number {n} about topic {n * 13}.",
                type="fact",
                check_similar=False,
            )
            total.append(time.perf_counter() - start)
        print(summary(f"add (file + commit + text index) at {count} files", total))
        print(summary(f"git commit alone at {count} files", commit_only))
        service.close()


if __name__ == "__main__":
    main()
