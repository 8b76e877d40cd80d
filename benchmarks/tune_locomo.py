"""Choices for LoCoMo retrieval, measured on the dev split (conv-26, conv-30) only.

Usage:
  python -m benchmarks.tune_locomo [--cache DIR] [--variant T]      the fusion weight grid
  python -m benchmarks.tune_locomo --ideas [--cache DIR]            each idea of issue 14 part 4

The grid prints hybrid R_any@5/@10, nDCG@10 and R_frac@10 for each setting. ``--ideas``
prints, per idea, categories 1-4 (R_any@5, R_any@10, nDCG@10) and category 5 (R_any@5) with
the change against variant T hybrid with default settings. Ranking ideas re-score the
product's own hits (``MemoryService.search``, top 100, no relevance floor) by adding their
bonus to each hit's score, or by re-weighting the keyword and vector parts of its ``why``;
the memory-construction idea (variant C) runs through the whole product path. Vaults are
reused from the cache, so only ranking runs.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memvault.config import Settings
from memvault.eval import locomo, runner
from memvault.index import SearchHit
from memvault.models import Filters
from memvault.note import parse_time

GRID = [
    ("weighted", kw, vec)
    for kw, vec in ((0.3, 0.5), (0.4, 0.4), (0.5, 0.3), (0.6, 0.2), (0.7, 0.1))
] + [("rrf", kw, vec) for kw, vec in ((0.4, 0.4), (0.5, 0.3), (0.6, 0.2))]
POOL = 100  # hits re-scored per question (the product fuses at most 100 + 100 candidates)
_MONTHS = "january february march april may june july august september october november december"
_MONTH_YEAR = re.compile(rf"\b({_MONTHS.replace(' ', '|')})\b\W+(?:\d{{1,2}}\W+)?(\d{{4}})", re.I)
_YEAR = re.compile(r"\b(?:in|of|during)\s+((?:19|20)\d\d)\b")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")


@dataclass(frozen=True)
class Asked:
    """One dev question and the product's hits for it."""

    question: locomo.Question
    hits: list[SearchHit]
    covers: dict[str, frozenset[str]]
    relevant: int


Rescore = Callable[[Asked, SearchHit], float]
PARTS = ("keyword", "vector", "recency", "importance")


def fused(hit: SearchHit) -> float:
    """The hit's fused score before soft forgetting (the parts in ``why``): every imported
    LoCoMo memory is softly forgotten alike, so the factor orders nothing and would only
    scale the bonuses below."""
    return sum(hit.why.get(part, 0.0) for part in PARTS)


def grid(cache: Path | None, variant: str) -> None:
    data = runner.default_data()
    assert data is not None, "LoCoMo data not found"
    for fusion, kw, vec in GRID:
        settings = replace(Settings(), fusion=fusion, weight_keyword=kw, weight_vector=vec)
        result = runner.run(data, (variant,), ("hybrid",), "dev", cache, settings)
        cats = result["tables"][variant]["hybrid"]
        head, everything = cats["1-4"], cats["all"]
        print(
            f"{fusion:8} kw={kw:.1f} vec={vec:.1f}  R_any@5 {head['R_any@5']:.1f}  "
            f"R_any@10 {head['R_any@10']:.1f}  nDCG@10 {head['nDCG@10']:.1f}  "
            f"R_frac@10(all) {everything['R_frac@10']:.1f}",
            flush=True,
        )


def whole_turn(turn: dict[str, Any]) -> str:
    """A reply line with the whole previous turn (the kept one has its last sentence)."""
    return f"(in reply to {turn['speaker']}: {turn['text']})"


def ask(
    variant: str,
    mode: str,
    cache: Path | None,
    reply: Callable[[dict[str, Any]], str] | None = None,
) -> list[Asked]:
    """Every dev question of ``variant`` through ``MemoryService.search`` (default settings);
    ``reply`` writes variant C's reply line."""
    data = runner.default_data()
    assert data is not None, "LoCoMo data not found"
    settings, out = Settings(), []
    for conv in runner.pick(locomo.load(data), "dev"):
        items = locomo.items(conv, variant, reply)
        covers = {i.key: i.covers for i in items}
        service = runner.vault_for(
            conv.sample_id, variant, items, cache or runner.default_cache(), settings
        )
        try:
            for question in locomo.questions(conv, variant):
                hits = service.search(
                    question.text,
                    k=POOL,
                    filters=Filters(include_archived=True, min_relevance=0.0),
                    mode=mode,
                )
                relevant = sum(1 for i in items if i.covers & question.gold)
                out.append(Asked(question, hits, covers, relevant))
        finally:
            service.close()
    return out


def measure(asked: list[Asked], rescore: Rescore | None = None) -> dict[str, dict[str, float]]:
    rows = []
    for one in asked:
        score = {h.doc.id: rescore(one, h) if rescore else h.score for h in one.hits}
        order = sorted(score, key=lambda i: (-score[i], i))[: runner.TOP]
        ranked = [one.covers.get(i, frozenset()) for i in order]
        rows.append((one.question.category, locomo.score(ranked, one.question.gold, one.relevant)))
    return locomo.aggregate(rows)


# -- the ideas: each a bonus on the product's score, from the memory's title and dates ------
def reweighted(keyword: float, vector: float) -> Rescore:
    """The fused score with other fusion weights (from the weighted parts in ``why``)."""

    def rescore(_: Asked, hit: SearchHit) -> float:
        why = hit.why
        rest = fused(hit) - why.get("keyword", 0.0) - why.get("vector", 0.0)
        defaults = Settings()
        return (
            rest
            + why.get("keyword", 0.0) * keyword / defaults.weight_keyword
            + why.get("vector", 0.0) * vector / defaults.weight_vector
        )

    return rescore


def speaker(bonus: float) -> Rescore:
    """+bonus when a capitalised word of the question (or its start: Mel, Melanie) is the
    first word of the memory's title (who said it)."""

    def rescore(one: Asked, hit: SearchHit) -> float:
        who = hit.doc.title.split(",")[0].strip()
        names = _NAME.findall(one.question.text)
        said = any(who == n or (len(n) >= 3 and who.startswith(n)) for n in names)
        return fused(hit) + (bonus if said else 0.0)

    return rescore


def dated(bonus: float) -> Rescore:
    """+bonus when the question names a month and year (or "in 2023") that the memory's
    ``created`` falls in."""

    def rescore(one: Asked, hit: SearchHit) -> float:
        when = parse_time(hit.doc.created)
        text = one.question.text
        if when is None:
            return fused(hit)
        month_year = _MONTH_YEAR.search(text)
        if month_year:
            month = _MONTHS.split().index(month_year.group(1).lower()) + 1
            same = (when.year, when.month) == (int(month_year.group(2)), month)
        else:
            year = _YEAR.search(text)
            same = year is not None and when.year == int(year.group(1))
        return fused(hit) + (bonus if same else 0.0)

    return rescore


def same_moment(weight: float) -> Rescore:
    """+weight x the best score among the hits created at the same moment (a LoCoMo session:
    every turn of a session has its date)."""

    def rescore(one: Asked, hit: SearchHit) -> float:
        best = max(fused(h) for h in one.hits if h.doc.created == hit.doc.created)
        return fused(hit) + weight * best

    return rescore


IDEAS: list[tuple[str, Rescore]] = [
    *[
        (f"fusion keyword {k} / vector {v}", reweighted(k, v))
        for k, v in ((0.5, 0.2), (0.4, 0.4), (0.6, 0.3))
    ],
    *[(f"speaker named in the question +{b}", speaker(b)) for b in (0.02, 0.05, 0.1)],
    *[(f"month/year of the question = created +{b}", dated(b)) for b in (0.05, 0.2)],
    *[(f"session (same created) x {w}", same_moment(w)) for w in (0.1, 0.4)],
]


def line(name: str, table: dict[str, dict[str, float]], base: dict[str, dict[str, float]]) -> str:
    head, five = table["1-4"], table["5"]
    cells = []
    for row, key in ((head, "R_any@5"), (head, "R_any@10"), (head, "nDCG@10"), (five, "R_any@5")):
        ref = base["1-4" if row is head else "5"][key]
        cells.append(f"{row[key]:.1f} ({row[key] - ref:+.1f})")
    return f"| {name} | " + " | ".join(cells) + " |"


def ideas(cache: Path | None) -> None:
    base_asked = ask("T", "hybrid", cache)
    base = measure(base_asked)
    print("| idea (dev, n = 231 / 71) | R_any@5 | R_any@10 | nDCG@10 | cat 5 R_any@5 |")
    print("|---|---|---|---|---|")
    print(line("variant T, hybrid, default settings", base, base), flush=True)
    print(line("variant T, BM25 alone", measure(ask("T", "bm25", cache)), base), flush=True)
    for name, rescore in IDEAS:
        print(line(name, measure(base_asked, rescore), base), flush=True)
    for mode in ("hybrid", "bm25"):
        table = measure(ask("C", mode, cache))
        print(line(f"variant C (reply line: last sentence), {mode}", table, base), flush=True)
    for mode in ("hybrid", "bm25"):
        table = measure(ask("C", mode, cache, whole_turn))
        print(line(f"variant C with the whole previous turn, {mode}", table, base), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--variant", default="T")
    parser.add_argument("--ideas", action="store_true", help="measure each idea of issue 14")
    args = parser.parse_args()
    if args.ideas:
        ideas(args.cache)
    else:
        grid(args.cache, args.variant)


if __name__ == "__main__":
    main()
