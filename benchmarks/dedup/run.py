"""Duplicate or correction? memvault's verdict on labelled pairs of memories.

Usage: python benchmarks/dedup/run.py [--pairs FILE] [--embedder NAME] [--details]

Each line of pairs.jsonl (or of --pairs FILE, such as holdout.jsonl) holds two memories
``a`` and ``b`` of one type and a label: duplicate (a paraphrase, same facts), correction
(same topic, but a number, date, time, name, negation or quantity differs), related (same
topic, other facts) or unrelated.

Every ``a`` is imported into one temporary vault (default settings, so the default
embedder; --embedder none: a text-only vault); then, for each pair,
``Retrieval.similar(b, type)`` (the check ``remember`` runs before writing) gives the
relation of ``a`` to ``b`` without writing ``b``: duplicate, possible_contradiction,
related, or none when ``a`` is not reported. The relation is pairwise, so the other
memories of the vault do not change it.

Prints the confusion matrix (label x verdict), precision and recall of the duplicate
verdict, the corrections judged duplicates (a correction that ``remember`` would drop),
and with --details every pair whose verdict is not the expected one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from memvault.config import Settings
from memvault.service import MemoryService, create_vault

HERE = Path(__file__).resolve().parent
LABELS = ("duplicate", "correction", "related", "unrelated")
VERDICTS = ("duplicate", "possible_contradiction", "related", "none")
EXPECTED = {
    "duplicate": "duplicate",
    "correction": "possible_contradiction",
    "related": "related",
    "unrelated": "none",
}


def load(path: Path = HERE / "pairs.jsonl") -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        pairs = [json.loads(line) for line in handle if line.strip()]
    bad = [p for p in pairs if p.get("label") not in LABELS or p.get("lang") not in ("en", "zh")]
    if bad or any(not p.get("a") or not p.get("b") or not p.get("type") for p in pairs):
        raise SystemExit(f"{path.name}: malformed lines, e.g. {bad[:1]}")
    return pairs


def build(
    root: Path, pairs: list[dict[str, Any]], settings: Settings
) -> tuple[MemoryService, list[str]]:
    """A vault with every pair's ``a``; the vault path of each, in pair order."""
    create_vault(root)
    service = MemoryService.open(root, settings)
    source = root.parent / "a-side.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for p in pairs:
            handle.write(json.dumps({"content": p["a"], "type": p["type"]}, ensure_ascii=False))
            handle.write("\n")
    paths: list[str] = list(service.import_path(source).paths)
    service.fill_vectors(wait=600)
    if len(paths) != len(pairs):
        raise SystemExit(f"imported {len(paths)} of {len(pairs)} memories")
    return service, paths


def verdicts(
    service: MemoryService, pairs: list[dict[str, Any]], paths: list[str]
) -> list[dict[str, Any]]:
    out = []
    for pair, path in zip(pairs, paths, strict=True):
        found = service.retrieval.similar(pair["b"], pair["type"], None, [], k=len(pairs))
        match = next((s for s in found if s.path == path), None)
        out.append(
            pair
            | {
                "verdict": match.relation if match else "none",
                "cosine": match.cosine if match else None,
            }
        )
    return out


def matrix(results: list[dict[str, Any]], title: str) -> str:
    counts = Counter((r["label"], r["verdict"]) for r in results)
    rows = [
        f"{title} (rows: label, columns: memvault's verdict)",
        "| label | n | " + " | ".join(VERDICTS) + " |",
        "|---|---|" + "---|" * len(VERDICTS),
    ]
    for label in LABELS:
        n = sum(counts[(label, v)] for v in VERDICTS)
        if n:
            cells = " | ".join(str(counts[(label, v)]) for v in VERDICTS)
            rows.append(f"| {label} | {n} | {cells} |")
    return "\n".join(rows)


def scores(results: list[dict[str, Any]]) -> str:
    judged = [r for r in results if r["verdict"] == "duplicate"]
    true_dups = [r for r in results if r["label"] == "duplicate"]
    caught = sum(1 for r in true_dups if r["verdict"] == "duplicate")
    precision = 100 * caught / len(judged) if judged else float("nan")
    corrections = [r for r in results if r["label"] == "correction"]
    dropped = sum(1 for r in corrections if r["verdict"] == "duplicate")
    flagged = sum(1 for r in corrections if r["verdict"] == "possible_contradiction")
    agree = sum(1 for r in results if r["verdict"] == EXPECTED[r["label"]])
    return "\n".join(
        [
            f"duplicate verdict: precision {precision:.1f}% ({caught}/{len(judged)}), "
            f"recall {100 * caught / len(true_dups):.1f}% ({caught}/{len(true_dups)} "
            "paraphrase duplicates caught)",
            f"corrections judged duplicate (would be dropped by remember): "
            f"{dropped}/{len(corrections)}",
            f"corrections reported as possible_contradiction: {flagged}/{len(corrections)}",
            f"verdict as expected (duplicate/contradiction/related/none): {agree}/{len(results)}",
        ]
    )


def details(results: list[dict[str, Any]]) -> str:
    lines = ["pairs whose verdict is not the expected one:"]
    for r in results:
        if r["verdict"] != EXPECTED[r["label"]]:
            cos = f"{r['cosine']:.4f}" if r["cosine"] is not None else "-"
            change = f"/{r['change']}" if r.get("change") else ""
            lines.append(
                f"  [{r['lang']} {r['label']}{change} -> {r['verdict']}, cos {cos}] "
                f"{r['a']}  ||  {r['b']}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--details", action="store_true", help="list unexpected verdicts")
    parser.add_argument(
        "--pairs", type=Path, default=HERE / "pairs.jsonl", help="labelled pairs (JSON lines)"
    )
    parser.add_argument("--embedder", help="embedder setting (none: a text-only vault)")
    args = parser.parse_args(argv)
    pairs = load(args.pairs)
    settings = Settings(embedder=args.embedder) if args.embedder else Settings()
    with tempfile.TemporaryDirectory() as tmp:
        service, paths = build(Path(tmp) / "vault", pairs, settings)
        try:
            results = verdicts(service, pairs, paths)
        finally:
            service.close()
    by_lang = Counter((p["lang"], p["label"]) for p in pairs)
    print(
        f"{args.pairs.name}, {len(pairs)} pairs: "
        + ", ".join(f"{k[0]} {k[1]} {v}" for k, v in by_lang.items())
    )
    print()
    print(matrix(results, "all"))
    for lang in ("en", "zh"):
        print()
        print(matrix([r for r in results if r["lang"] == lang], lang))
    print()
    print(scores(results))
    if args.details:
        print()
        print(details(results))


if __name__ == "__main__":
    sys.exit(main())
