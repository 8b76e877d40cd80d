"""Where the relevance floor falls for one direction's questions, per half.

Usage: python benchmarks/crosslingual/floor.py [--direction en->en] [--lowest 4]

Builds the set's vault as run.py does, asks each question of ``--direction`` with no floor
(``min_relevance=0``) and prints, per half, the relevance of its gold memory (-1: not in
the top 10 even without the floor), its rank, and the best relevance of a wrong memory in
the top 3: whether the default floor (0.5) or the ranking misses a question, and how much
room a floor of that direction has on dev. Settings are chosen on dev; holdout only reports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchmarks.crosslingual.run import DEPTH, build
from benchmarks.crosslingual.validate import DIRECTIONS, HERE, half, load
from memvault.models import Filters


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--direction", choices=DIRECTIONS, default="en->en")
    parser.add_argument("--lowest", type=int, default=4, help="questions listed per half")
    args = parser.parse_args(argv)
    memories, queries = load(HERE)
    asked = [q for q in queries if q["direction"] == args.direction]
    rows: list[tuple[str, float, int | None, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        service, by_path = build(Path(tmp) / "vault", memories)
        try:
            for q in asked:
                hits = service.recall(q["query"], k=DEPTH, filters=Filters(min_relevance=0.0))
                ranked = [(by_path.get(h.path, h.path), h.relevance or 0.0) for h in hits]
                found = [(n, r) for n, (i, r) in enumerate(ranked, 1) if i in q["gold"]]
                rank, level = found[0] if found else (None, -1.0)
                other = max((r for i, r in ranked[:3] if i not in q["gold"]), default=0.0)
                rows.append((half(q["query"]), level, rank, other, q["query"]))
        finally:
            service.close()
    for part in ("dev", "holdout"):
        mine = sorted(r for r in rows if r[0] == part)
        if not mine:
            continue
        middle = mine[len(mine) // 2][1]
        print(f"{args.direction} {part}: n {len(mine)}, gold relevance median {middle:.3f}")
        for _, level, rank, other, text in mine[: args.lowest]:
            print(f"  gold {level:.3f} rank {rank or '-'}, best wrong in top 3 {other:.3f}: {text}")


if __name__ == "__main__":
    sys.exit(main())
