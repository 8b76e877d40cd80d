"""`vault_status` / `memvault status` and `list` at scale, in process and from the CLI.

Usage: python -m benchmarks.status_list [N] [--keep DIR] [--calls K]

Builds (or reuses, with --keep) a text-only synthetic vault of N memories (embedder off:
status and list never embed), archives 20 of them and adds a malformed file and a symlink,
then prints: p50/p95 of ``reports.status`` and of ``list_memories`` (all memories, as
`memvault list` asks) in one process with a synced index; and the wall time of the CLI
commands `memvault status` and `memvault list` (a new process each, index already synced).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import build_vault, summary
from memvault import reports
from memvault.config import Settings
from memvault.service import MemoryService

TEXT_ONLY = Settings(embedder="none")
ARCHIVED = 20


def prepare(root: Path, count: int) -> None:
    """The synthetic vault plus what status must count: archived, malformed, unsafe files."""
    service, seconds = build_vault(root, count, TEXT_ONLY)
    print(f"[{count}] vault built (files + one commit + text index): {seconds:.1f}s")
    for info in service.list_memories(limit=ARCHIVED).memories:
        service.forget(info.id)
    (root / "facts" / "broken.md").write_text("---\ntype: [fact\n---\nUnclosed list.\n")
    (root / "facts" / "link.md").symlink_to(root / "README.md")
    service.close()
    (root / ".memvault" / "bench-ready").write_text("ok")


def in_process(root: Path, count: int, calls: int) -> None:
    start = time.perf_counter()
    service = MemoryService.open(root, TEXT_ONLY, recover=False)
    status = reports.status(service)
    print(f"[{count}] open + first status in a new process: {time.perf_counter() - start:.2f}s")
    print(
        f"[{count}] status: {status.memories} memories, archived {status.archived}, "
        f"problems {status.problems}, by type {status.by_type}"
    )
    service.ensure_synced()
    timed(count, "status in process", calls, lambda: reports.status(service))
    page = service.list_memories()
    print(f"[{count}] list: {page.total} memories, {len(page.unreadable)} unreadable")
    timed(count, "list (all memories) in process", calls, service.list_memories)
    service.close()


def timed(count: int, label: str, calls: int, call: Callable[[], object]) -> None:
    """Wall time, and this process's CPU time (less sensitive to other jobs' load; git's
    own processes are not in it)."""
    wall, cpu = [], []
    for _ in range(calls):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - begin)
        cpu.append(time.process_time() - begin_cpu)
    print(f"[{count}] " + summary(label, wall))
    print(f"[{count}] " + summary(f"{label}, CPU time", cpu))


def cli(root: Path, count: int) -> None:
    env = {**os.environ, "MEMVAULT_EMBEDDER": "none"}
    for command in ("status", "list"):
        begin = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memvault.cli", "--vault", str(root), "--json", command],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print(f"[{count}] `memvault {command}` (new process): {time.perf_counter() - begin:.2f}s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=10_000)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.keep or Path(tmp)) / f"text-vault-{args.count}"
        if not (root / ".memvault" / "bench-ready").exists():
            prepare(root, args.count)
        in_process(root, args.count, args.calls)
        cli(root, args.count)


if __name__ == "__main__":
    main()
