"""Latency from a person's file save to the MCP-side notification and to searchability.

Builds (or reuses) a vault of N memories (default 10,000), runs the real watcher on it, then
saves EDITS files by plain writes and measures, per edit: save -> change event (what the MCP
server turns into notifications/resources/updated) and save -> found by recall.
Usage: python -m benchmarks.watch_latency [N] [EDITS] [VAULT]
VAULT: an already built vault (for example one left by `benchmarks.scale N --keep DIR`); the
edits are undone with git afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time

from benchmarks.common import given_or_built, summary
from memvault.config import Settings
from memvault.service import ChangeEvent, MemoryService
from memvault.watcher import Watcher


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    edits = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory() as tmp:
        root = given_or_built(sys.argv, 3, tmp, count)
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        service = MemoryService.open(root, Settings())
        service.ensure_synced()
        arrived: dict[str, float] = {}
        signal = threading.Condition()

        def on_change(event: ChangeEvent) -> None:
            with signal:
                for path in event.changed:
                    arrived.setdefault(path, time.perf_counter())
                signal.notify_all()

        service.listeners.append(on_change)
        watcher = Watcher(service)
        watcher.start()
        to_event, to_search = [], []
        for n in range(edits):
            rel = f"inbox/edit-{n}.md"
            marker = f"zebracode{n}x"
            start = time.perf_counter()
            (root / rel).write_text(f"---\ntype: note\n---\nA person typed {marker} here.\n")
            with signal:
                signal.wait_for(lambda rel=rel: rel in arrived, timeout=10)  # type: ignore[misc]
            to_event.append(arrived[rel] - start)
            while not any(r.path == rel for r in service.recall(marker, k=3, mode="bm25")):
                if time.perf_counter() - start > 10:
                    raise SystemExit(f"{rel} not searchable after 10s")
            to_search.append(time.perf_counter() - start)
        print(summary(f"save -> change notification at {count} memories", to_event))
        print(summary(f"save -> searchable by recall at {count} memories", to_search))
        watcher.stop()
        service.close()
        if len(sys.argv) > 3:  # leave a given vault as it was
            subprocess.run(["git", "reset", "-q", "--hard", head], cwd=root, check=True)
            subprocess.run(["git", "clean", "-q", "-fd", "inbox"], cwd=root, check=True)


if __name__ == "__main__":
    main()
