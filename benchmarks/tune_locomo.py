"""Grid over fusion settings on the LoCoMo dev split (conv-26, conv-30) only.

Usage: python -m benchmarks.tune_locomo [--cache DIR] [--variant T]
Prints hybrid R_any@5/@10, nDCG@10 and R_frac@10 for each setting; vaults are reused
from the cache, so only ranking runs.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from memvault.config import Settings
from memvault.eval import runner

GRID = [
    ("weighted", kw, vec)
    for kw, vec in ((0.3, 0.5), (0.4, 0.4), (0.5, 0.3), (0.6, 0.2), (0.7, 0.1))
] + [("rrf", kw, vec) for kw, vec in ((0.4, 0.4), (0.5, 0.3), (0.6, 0.2))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--variant", default="T")
    args = parser.parse_args()
    data = runner.default_data()
    assert data is not None, "LoCoMo data not found"
    for fusion, kw, vec in GRID:
        settings = replace(Settings(), fusion=fusion, weight_keyword=kw, weight_vector=vec)
        result = runner.run(data, (args.variant,), ("hybrid",), "dev", args.cache, settings)
        cats = result["tables"][args.variant]["hybrid"]
        head, everything = cats["1-4"], cats["all"]
        print(
            f"{fusion:8} kw={kw:.1f} vec={vec:.1f}  R_any@5 {head['R_any@5']:.1f}  "
            f"R_any@10 {head['R_any@10']:.1f}  nDCG@10 {head['nDCG@10']:.1f}  "
            f"R_frac@10(all) {everything['R_frac@10']:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
