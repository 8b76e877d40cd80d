"""Ranking ideas of issue 14 part 4, round 4: measured offline on the dev split only.

Usage:
  python -m benchmarks.rank_learned [--per-conv]

Two families, each against the product as it is (variant T hybrid, k1 0.6, b 0.3):

- **Speaker-neutral vector query.** LoCoMo's adversarial questions (category 5) name the
  wrong speaker on purpose, and the vector leg favours turns of the speaker a question
  names. The rows embed the question with its proper names (capitalised words that do not
  start a sentence, months and weekdays kept) dropped, or replaced by "someone", for the
  vector leg only; the keyword leg still reads the names.
- **Learned fusion.** A linear ranker over the signals the product already computes for
  every candidate (the two legs' normalised scores, the raw BM25 and cosine, the cosine's
  gap to the best, the share of query terms held, its idf-weighted form, each leg's rank,
  both legs agreeing, recency, the memory's length), trained with a pairwise logistic loss
  on the dev questions' evidence turns. It is **cross-fitted**: the model that ranks
  conv-26's questions was trained on conv-30's only, and the reverse, so the dev figure is
  out of sample. "In sample" rows (trained on both) are a ceiling, not a result.

The idea kept (common names left out of the vector query, text.without_names) is in the
product, so the test split is read once with ``memvault eval locomo --split test``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from benchmarks.rank_ideas import (
    KEPT,
    Conv,
    Question,
    bm25,
    containing,
    fuse,
    load,
    measure,
    top,
)
from benchmarks.tune_locomo import line
from memvault.eval import locomo
from memvault.text import CALENDAR, without_names


def _all_names(text: str, by: str) -> str:
    """Every capitalised word that does not start a sentence (months and weekdays kept)
    replaced ``by``, whether the vault knows it or not: the first form measured."""
    out, last = [], 0
    for m in re.finditer(r"\b([A-Z][a-z]+)('s)?\b", text):
        before = text[: m.start()].rstrip()
        if not before or before[-1] in ".?!" or m.group(1).lower() in CALENDAR:
            continue
        out += [text[last : m.start()], by + ("'s" if by and m.group(2) else "")]
        last = m.end()
    return re.sub(r"\s{2,}", " ", "".join([*out, text[last:]])).strip()


Holding = Callable[[str], tuple[int, int]]  # FullText.holding


def _common_names(share: float, least: int) -> Callable[[str, Holding], str]:
    def rewrite(text: str, holding: Holding) -> str:
        def common(term: str) -> bool:
            held, total = holding(term)
            return held >= least and held >= share * total

        return without_names(text, common)

    return rewrite


REWRITES: dict[str, Callable[[str, Holding], str]] = {
    "names kept (before)": lambda t, holding: t,
    "every name dropped": lambda t, holding: _all_names(t, ""),
    "every name -> someone": lambda t, holding: _all_names(t, "someone"),
    **{
        f"names held by >= {share:.0%} and >= {least} memories dropped": _common_names(share, least)
        for share in (0.02, 0.05, 0.2, 0.3, 0.45)
        for least in (10,)
    },
}


def with_cosine(convs: list[Conv], rewrite: str, mix: float = 1.0) -> list[Conv]:
    """The convs with each question's cosines from ``rewrite`` (``mix``: its share, the
    rest the original question's)."""
    return [
        replace(
            c,
            questions=[
                replace(q, cosine=mix * q.alt[rewrite] + (1 - mix) * q.cosine) for q in c.questions
            ],
        )
        for c in convs
    ]


# -- learned fusion -----------------------------------------------------------------------
FEATURES = (
    "keyword (over the best)",
    "vector (min-max)",
    "log1p BM25",
    "cosine",
    "cosine - best cosine",
    "share of terms",
    "idf share of terms",
    "1 / (1 + keyword rank)",
    "1 / (1 + vector rank)",
    "in both legs",
    "log body length",
)


@dataclass
class Table:
    """One question's candidates and their features."""

    cand: np.ndarray
    x: np.ndarray
    positive: np.ndarray
    product: np.ndarray  # the product's fused score (for negatives)


def table(conv: Conv, q: Question) -> Table:
    kw_scores = bm25(conv, q, KEPT, dict.fromkeys(q.terms, 1.0))
    cos = q.cosine
    kw_c = top(kw_scores, KEPT.kw_pool)
    vec_c = np.argsort(-cos, kind="stable")[: KEPT.vec_pool]
    cand = np.union1d(kw_c, vec_c)
    n = len(conv.ids)
    kw = np.zeros(n)
    if len(kw_c):
        kw[kw_c] = kw_scores[kw_c] / kw_scores[kw_c].max()
    vec = np.zeros(n)
    v = cos[vec_c]
    vec[vec_c] = (v - v.min()) / ((v.max() - v.min()) or 1.0)
    kw_rank, vec_rank = np.zeros(n), np.zeros(n)
    kw_rank[kw_c] = 1.0 / (1 + np.arange(len(kw_c)))
    vec_rank[vec_c] = 1.0 / (1 + np.arange(len(vec_c)))
    share = containing(conv, q, q.terms)
    idf_share = np.zeros(n)
    weight = {t: math.log(1 + n / (1 + conv.df.get(t, 0))) for t in q.terms}
    for t in q.terms:
        idf_share += weight[t] * containing(conv, q, [t])
    idf_share /= sum(weight.values()) or 1.0
    both = np.zeros(n)
    both[np.intersect1d(kw_c, vec_c)] = 1.0
    x = np.column_stack(
        [
            kw,
            vec,
            np.log1p(kw_scores),
            cos,
            cos - cos.max(),
            share,
            idf_share,
            kw_rank,
            vec_rank,
            both,
            np.log1p(conv.lengths["body"]),
        ]
    )[cand]
    positive = np.array([bool(conv.covers[i] & q.gold) for i in cand])
    product = fuse(conv, q, KEPT, kw_scores, cos)[cand]
    return Table(cand, x, positive, product)


def train(tables: list[Table], l2: float, negatives: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights of a pairwise logistic ranker (features standardised on the training set),
    and the standardisation (mean, scale) folded into one affine map."""
    allx = np.vstack([t.x for t in tables])
    mean, scale = allx.mean(axis=0), allx.std(axis=0)
    scale[scale == 0] = 1.0
    diffs = []
    for t in tables:
        pos = np.flatnonzero(t.positive)
        if not len(pos):
            continue
        order = np.argsort(-t.product, kind="stable")
        neg = [i for i in order if not t.positive[i]][:negatives]
        z = (t.x - mean) / scale
        diffs.append((z[pos][:, None, :] - z[neg][None, :, :]).reshape(-1, z.shape[1]))
    d = np.vstack(diffs)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        m = d @ w
        value = float(np.mean(np.logaddexp(0, -m))) + l2 * float(w @ w)
        grad = -(d.T @ (1 / (1 + np.exp(np.clip(m, -60, 60))))) / len(m) + 2 * l2 * w
        return value, grad

    w0 = np.zeros(d.shape[1])
    w0[0], w0[1] = 0.5, 0.3  # start at the product's fusion
    w = minimize(loss, w0, jac=True, method="L-BFGS-B").x
    return w / scale, mean


Model = dict[str, tuple[np.ndarray, np.ndarray]]  # conversation -> (weights, mean)


def learned_measure(
    convs: list[Conv], tables: dict[str, list[Table]], model: Model
) -> dict[str, dict[str, float]]:
    rows = []
    for conv in convs:
        w, _ = model[conv.name]
        ids = np.array(conv.ids)
        for q, t in zip(conv.questions, tables[conv.name], strict=True):
            s = t.x @ w
            order = t.cand[np.lexsort((ids[t.cand], -s))][:50]
            covers = [conv.covers[i] for i in order]
            rows.append((q.category, locomo.score(covers, q.gold, q.relevant)))
    return locomo.aggregate(rows)


def pool_ceiling(convs: list[Conv], tables: dict[str, list[Table]]) -> str:
    found = total = 0
    for conv in convs:
        for q, t in zip(conv.questions, tables[conv.name], strict=True):
            if q.category == 5:
                continue
            total += 1
            found += bool(t.positive.any())
    return f"evidence among the 100 + 100 candidates: {100 * found / total:.1f} % (cats 1-4)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-conv", action="store_true")
    args = parser.parse_args()
    dev = load(None, "dev", REWRITES)
    product = measure(dev, None)
    print("| idea (dev, n = 231 / 71) | R_any@5 | R_any@10 | nDCG@10 | cat 5 R_any@5 |")
    print("|---|---|---|---|---|")
    print(line("variant T, hybrid, the product as it is", product, product), flush=True)
    assert measure(dev, KEPT) == product, "the re-computation no longer matches the product"

    def show(name: str, convs: list[Conv]) -> None:
        print(line(name, measure(convs, KEPT), product), flush=True)
        if args.per_conv:
            for c, p in zip(convs, dev, strict=True):
                print(line(f"  {c.name}", measure([c], KEPT), measure([p], None)))

    for rewrite in REWRITES:
        for mix in (1.0, 0.5) if "held" not in rewrite else (1.0,):
            show(f"vector query: {rewrite}, share {mix}", with_cosine(dev, rewrite, mix))
    tables = {c.name: [table(c, q) for q in c.questions] for c in dev}
    print(pool_ceiling(dev, tables))
    for l2 in (1e-2, 1e-1, 1.0):
        for negatives in (100, 300):
            cross = {
                c.name: train(
                    [t for o in dev if o.name != c.name for t in tables[o.name]], l2, negatives
                )
                for c in dev
            }
            both = train([t for c in dev for t in tables[c.name]], l2, negatives)
            name = f"learned, l2 {l2:g}, {negatives} negatives"
            print(line(name + ", cross-fitted", learned_measure(dev, tables, cross), product))
            if args.per_conv:
                for c in dev:
                    print(
                        line(
                            f"  {c.name}",
                            learned_measure([c], tables, cross),
                            measure([c], None),
                        )
                    )
            insample = dict.fromkeys(tables, both)
            print(line(name + ", in sample", learned_measure(dev, tables, insample), product))
            w, _ = both
            weights = ", ".join(f"{f} {v:+.3g}" for f, v in zip(FEATURES, w, strict=True))
            print("  weights:", weights)


if __name__ == "__main__":
    main()
