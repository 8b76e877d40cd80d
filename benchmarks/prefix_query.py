"""What a prefix word (``con*``) costs the full-text leg on a large vocabulary.

Usage: python -m benchmarks.prefix_query [N_MEMORIES] [VOCABULARY]

Builds a Whoosh index of N memories (default 10,000), each 60 words drawn from VOCABULARY
made-up words (default 50,000: a real vault's lexicon is of that order; a fifth of them
start with "con"), then prints the median time of FullText.search, and of search then
coverage (a recall does both), for a plain word, prefixes of 4 and 3 letters (3: the
shortest memvault expands) and the crowded "con*", with the index terms each stands for.
"""

from __future__ import annotations

import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

from memvault.index.fulltext import FullText, TextDoc


def words(rng: random.Random, count: int) -> list[str]:
    """Made-up words; a fifth of them share the start "con" (as English words crowd a
    few starts), so that a 3-letter prefix can stand for thousands of index terms."""
    made: set[str] = set()
    while len(made) < count:
        start = "con" if rng.random() < 0.2 else ""
        made.add(start + "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 8))))
    return sorted(made)


def median_ms(run: object, repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str]) -> None:
    count = int(argv[0]) if argv else 10_000
    vocabulary = int(argv[1]) if len(argv) > 1 else 50_000
    rng = random.Random(7)
    lexicon = words(rng, vocabulary)
    with tempfile.TemporaryDirectory() as tmp:
        index = FullText(Path(tmp) / "text")
        docs = [
            TextDoc(
                f"m{n}",
                f"m{n}.md",
                " ".join(rng.sample(lexicon, 3)),
                "",
                " ".join(rng.choices(lexicon, k=60)),
                "",
            )
            for n in range(count)
        ]
        start = time.perf_counter()
        index.upsert(docs)
        built = time.perf_counter() - start
        print(f"{count:,} memories, {vocabulary:,} words: built in {built:.1f} s")
        plain = lexicon[len(lexicon) // 2]
        ids = [d.id for d in docs[:200]]
        for label, query in [
            ("plain word", plain),
            ("prefix, 4 letters", plain[:4] + "*"),
            ("prefix, 3 letters", plain[:3] + "*"),
            ("crowded start", "con*"),
        ]:
            with index._lock:
                groups, _ = index._view().groups(query)
                index._view().expanded.clear()  # timed below from scratch
            search = median_ms(lambda q=query: (index._view().expanded.clear(), index.search(q)))
            both = median_ms(
                lambda q=query: (
                    index._view().expanded.clear(),
                    index.search(q),
                    index.coverage(q, ids),
                )
            )
            print(
                f"{label:18} {query:12} terms {sum(len(g) for g in groups):3}  "
                f"search {search:6.1f} ms  search + coverage {both:6.1f} ms"
            )
        index.close()


if __name__ == "__main__":
    main(sys.argv[1:])
