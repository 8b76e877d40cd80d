"""Parse rate of N memory files (default 10,000): frontmatter.parse and Vault.scan.

Builds N realistic memory files (the frontmatter memvault writes, a tenth with a
person's comments and unknown keys, a quarter Chinese) in a temporary folder, then
prints files/s of `frontmatter.parse` over their texts and of `Vault.scan()` (read,
parse, build each Memory), best of ROUNDS. Usage: python -m benchmarks.parse_rate [N] [ROUNDS]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import TYPES, memory_text
from memvault import frontmatter
from memvault.vault import Vault

TAGS = ["work", "health", "travel", "reports", "数据库", "billing", "family", "rust"]


def memory_file(rng: random.Random, n: int) -> str:
    """One file as memvault writes it; every tenth edited by hand."""
    day = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:15:00+00:00"
    tags = ", ".join(rng.sample(TAGS, rng.randint(0, 3)))
    lines = [
        "---",
        f"id: {TYPES[n % len(TYPES)][0]}-{n:012x}",
        f"type: {TYPES[n % len(TYPES)]}",
        f"tags: [{tags}]",
        f"confidence: {rng.choice([0.6, 0.8, 0.9, 1.0])}",
        f"importance: {rng.choice([0.3, 0.5, 0.7])}",
        f"created: {day}",
        f"updated: {day}",
        "source: benchmark",
    ]
    if n % 10 == 0:
        lines[2] += "  # set by hand"
        lines += ["# my own notes", "reviewed_by: Ada", "links:", "  - '[[project-x]]'"]
    body = memory_text(rng, n)
    return "\n".join([*lines, "---", f"# Memory {n}", "", body, ""])


def build(root: Path, count: int) -> list[str]:
    rng = random.Random(11)
    texts = []
    for n in range(count):
        text = memory_file(rng, n)
        folder = root / TYPES[n % len(TYPES)] / f"{n // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"memory-{n}.md").write_text(text, encoding="utf-8")
        texts.append(text)
    return texts


def best(rounds: int, work: object) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        texts = build(root, count)
        parse = best(rounds, lambda: [frontmatter.parse(t) for t in texts])
        vault = Vault(root)
        memories, problems = vault.scan()
        assert len(memories) == count and not problems, problems[:3]
        scan = best(rounds, vault.scan)
    print(f"frontmatter.parse of {count} files: {count / parse:,.0f} files/s ({parse:.2f} s)")
    print(f"Vault.scan of {count} files: {count / scan:,.0f} files/s ({scan:.2f} s)")


if __name__ == "__main__":
    main()
