"""What leaving common names out of the query's embedding costs per search (issue 14 part 4,
round 4; text.without_names).

Usage:
  python -m benchmarks.common_names [--conv conv-26] [--cache DIR]

A LoCoMo conversation's variant T vault (built once into the eval cache, as `memvault eval
locomo` builds it) is asked every question of that conversation through
``MemoryService.search`` (k 10, hybrid). Each question is new to the query cache, so a
question with a common name pays for two embeddings (the question as asked, for relevance,
and the rewrite, for the vector candidates). Printed: how many questions were rewritten, the
median search time of each group, and the parts of the extra cost measured alone (the
rewrite itself, one more query embedding, the second cosine product).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from memvault.config import Settings
from memvault.eval import locomo, runner
from memvault.index.language import language_means
from memvault.models import Filters
from memvault.text import without_names


def ms(seconds: list[float]) -> str:
    return f"{1000 * statistics.median(seconds):.1f} ms" if seconds else "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conv", default="conv-26")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    data = runner.default_data()
    assert data is not None, "LoCoMo data not found"
    conv = next(c for c in locomo.load(data) if c.sample_id == args.conv)
    items = locomo.items(conv, "T")
    service = runner.vault_for(
        conv.sample_id, "T", items, args.cache or runner.default_cache(), Settings()
    )
    try:
        index = service.indexing.index
        embedder = index.loader.get()
        assert embedder is not None
        means = language_means(embedder.name)
        assert means is not None
        service.search("warm up the searcher", k=10)
        timed: dict[bool, list[float]] = {True: [], False: []}
        rewrite_s, embed_s, product_s = [], [], []
        matrix, *_ = index.store._search_matrix(means.passages)
        assert matrix is not None
        for q in locomo.questions(conv, "T"):
            start = time.perf_counter()
            rewritten = without_names(q.text, index._common)
            rewrite_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            service.search(q.text, k=10, filters=Filters(min_relevance=0.0))
            timed[rewritten != q.text].append(time.perf_counter() - start)
            if rewritten != q.text:
                start = time.perf_counter()
                vector = embedder.embed_query(rewritten + " ")  # not in the query cache
                embed_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                np.einsum("ij,j->i", matrix, vector)
                product_s.append(time.perf_counter() - start)
        print(f"{conv.sample_id}: {len(items)} memories, {sum(map(len, timed.values()))} questions")
        print(f"questions with a common name left out: {len(timed[True])}")
        print(f"search, median: with a rewrite {ms(timed[True])}, without {ms(timed[False])}")
        print(
            f"extra parts, median: the rewrite {ms(rewrite_s)}, one query embedding "
            f"{ms(embed_s)}, one more cosine product {ms(product_s)}"
        )
    finally:
        service.close()


if __name__ == "__main__":
    main()
