"""Embedding throughput of a whole synthetic vault, and A/B against another checkout.

Usage:
    python -m benchmarks.embed_throughput N [--code DIR] [--keep DIR]

Builds a text-only vault of N synthetic memories (benchmarks/common.py, through the bulk
import, embedder off), then times making every vector: ``fill_vectors`` (this code: batches
committed one by one) or, when ``--code`` points at a checkout without it (the code before
issue 15), a full ``sync_index`` after dropping the index (how the build was timed then).
Prints wall and CPU seconds, memories/s and the load average before and after, so runs on
a shared machine can be judged. ``--code DIR`` imports memvault from DIR instead of here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int)
    parser.add_argument("--code", type=Path, default=None, help="memvault checkout to measure")
    parser.add_argument("--keep", type=Path, default=None, help="keep the vault here")
    args = parser.parse_args()
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    from benchmarks.common import write_jsonl
    from memvault.config import Settings
    from memvault.service import MemoryService
    from memvault.template import create_vault

    base = args.keep or Path(tempfile.mkdtemp(prefix="embed-throughput-"))
    root = base / f"vault-{args.count}"
    if root.exists():
        import shutil

        shutil.rmtree(root)
    create_vault(root)
    service = MemoryService.open(root, Settings(embedder="none"))
    service.import_path(write_jsonl(base / f"synthetic-{args.count}.jsonl", args.count))
    service.close()
    service = MemoryService.open(root, Settings())
    service.index.loader.get()
    code = args.code or Path(__file__).resolve().parent.parent
    load = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    if hasattr(service, "fill_vectors"):
        service.sync_index()
        made = service.fill_vectors()
    else:
        service.reset_index()
        made = service.sync_index()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    status = service.index_status()
    service.close()
    print(
        f"[{args.count}] code {code}: {made} memories embedded in {wall:.1f}s wall "
        f"({made / wall:.1f} memories/s), {cpu:.1f}s CPU ({cpu / max(made, 1) * 1000:.1f} ms "
        f"CPU per memory); {status['with_vectors']} with vectors; load average "
        f"{load[0]:.1f} before, {os.getloadavg()[0]:.1f} after"
    )


if __name__ == "__main__":
    main()
