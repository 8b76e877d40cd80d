"""Ranking ideas of issue 14 part 4, round 5: measured offline on the dev split only.

Usage:
  python -m benchmarks.rank_round5 [--per-conv]

Round 4 changed what the vector leg embeds (common names left out), and the vector leg
alone gained 6-7 points of R_any@10; the fusion weights (keyword 0.5, vector 0.3) were
chosen before that. The rows re-weigh the two legs against the product as it is,
re-measure the English question words the stop list keeps (round 2's list) on top of it,
and move the keyword leg's cut (its best 100), or let a vector candidate below it keep its
BM25 (kept: ``Index._beyond_the_cut``, so the rows are now against the product with it, and
one row is the product as it was).
Each row is re-computed from the product's own signals (``benchmarks.rank_ideas``; the
re-computation with the product's constants gives the product's figures exactly,
asserted).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from benchmarks.rank_ideas import KEPT, QUESTION_WORDS, Knobs, load, measure
from benchmarks.rank_learned import REWRITES
from benchmarks.tune_locomo import line


def rows() -> list[tuple[str, Knobs]]:
    out = [(f"vector weight {w} (0.3)", replace(KEPT, w_vec=w)) for w in (0.2, 0.35, 0.4, 0.5)]
    out += [(f"keyword weight {w} (0.5)", replace(KEPT, w_kw=w)) for w in (0.4, 0.6)]
    out += [
        (f"keyword candidates {n} (100)", replace(KEPT, kw_pool=n))
        for n in (50, 200, 300, 500, 1000)
    ]
    out += [
        ("the product before round 5: BM25 of the best 100 only", replace(KEPT, kw_of_vec=False))
    ]
    out += [("English question words as stop words", replace(KEPT, stop=QUESTION_WORDS))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-conv", action="store_true")
    args = parser.parse_args()
    dev = load(None, "dev", {k: v for k, v in REWRITES.items() if "before" in k})
    product = measure(dev, None)
    assert measure(dev, KEPT) == product, "the re-computation no longer matches the product"
    print("| idea (dev, n = 231 / 71) | R_any@5 | R_any@10 | nDCG@10 | cat 5 R_any@5 |")
    print("|---|---|---|---|---|")
    print(line("variant T, hybrid, the product as it is", product, product), flush=True)
    for name, knobs in rows():
        print(line(name, measure(dev, knobs), product), flush=True)
        if args.per_conv:
            for c in dev:
                print(line(f"  {c.name}", measure([c], knobs), measure([c], None)), flush=True)


if __name__ == "__main__":
    main()
