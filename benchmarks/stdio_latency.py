"""`recall` round trip over stdio against `memvault serve` on a vault of N memories.

Prints p50/p95 of recall round trips and the time from process start to the first
successful recall. Usage: python -m benchmarks.stdio_latency [N] [CALLS] [VAULT]
VAULT: an already built vault (for example one left by `benchmarks.scale N --keep DIR`).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks.common import QUERIES, given_or_built, summary


async def measure(root: Path, calls: int) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memvault.cli", "--vault", str(root), "serve"]
    )
    start = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        initialized = time.perf_counter() - start
        while True:
            result = await client.call_tool("recall", {"query": QUERIES[0]})
            if (
                not result.is_error
                and result.structured_content
                and result.structured_content["results"]
            ):
                break
        first = time.perf_counter() - start
        timings = []
        for n in range(calls):
            query = QUERIES[n % len(QUERIES)] + ("" if n < len(QUERIES) else f" {n}")
            begin = time.perf_counter()
            result = await client.call_tool("recall", {"query": query})
            assert not result.is_error
            timings.append(time.perf_counter() - begin)
    print(f"process start -> initialize answered: {initialized:.2f}s")
    print(f"process start -> first successful recall: {first:.2f}s")
    print(summary("recall round trip over stdio", timings))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with tempfile.TemporaryDirectory() as tmp:
        root = given_or_built(sys.argv, 3, tmp, count)
        print(f"vault of {count} memories ready")
        asyncio.run(measure(root, calls))


if __name__ == "__main__":
    main()
