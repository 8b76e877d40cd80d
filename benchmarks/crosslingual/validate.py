"""Check the cross-language recall set and print its counts.

Usage: python benchmarks/crosslingual/validate.py

Fails (exit 1, one line per problem) when an id is repeated, a gold id does not exist, a
field is missing, a direction has too few queries, a direction label disagrees with the
languages of the query and its gold memories, or a query copies its memory's text.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TYPES = {"preference", "fact", "episode", "summary", "task", "note"}
DIRECTIONS = ("en->en", "zh->zh", "zh->en", "en->zh", "mixed->en", "mixed->zh")
MINIMUM = {"zh->en": 60, "en->zh": 60, "en->en": 30, "zh->zh": 30}
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
COPY_WORDS = 5  # an English query sharing this many consecutive words with its memory copies it
COPY_CHARS = 8  # a Chinese query sharing this many consecutive characters copies it


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def script(text: str) -> str:
    """'zh', 'en' or 'mixed' by the scripts a query is written in."""
    has_cjk = bool(CJK.search(text))
    has_latin = bool(LATIN_WORD.search(CJK.sub(" ", text)))
    if has_cjk and has_latin:
        return "mixed"
    return "zh" if has_cjk else "en"


def _shared_words(a: str, b: str) -> int:
    wa, wb = re.findall(r"\w+", a.lower()), re.findall(r"\w+", b.lower())
    best = 0
    for i in range(len(wa)):
        for j in range(len(wb)):
            n = 0
            while i + n < len(wa) and j + n < len(wb) and wa[i + n] == wb[j + n]:
                n += 1
            best = max(best, n)
    return best


def _shared_chars(a: str, b: str) -> int:
    """Longest run of Chinese characters the two share (Latin names may repeat)."""
    a, b = "".join(CJK.findall(a)), "".join(CJK.findall(b))
    best = 0
    for i in range(len(a)):
        for n in range(best + 1, len(a) - i + 1):
            if a[i : i + n] in b:
                best = n
            else:
                break
    return best


def copies(query: str, memory: dict[str, Any]) -> bool:
    text = f"{memory['title']} {memory['content']}"
    if memory["lang"] == "zh" and CJK.search(query):
        return _shared_chars(query, text) >= COPY_CHARS
    return _shared_words(query, text) >= COPY_WORDS


def problems(memories: list[dict[str, Any]], queries: list[dict[str, Any]]) -> list[str]:
    out = []
    ids = Counter(m.get("id") for m in memories)
    out += [f"memory id {i!r} appears {n} times" for i, n in ids.items() if n > 1]
    by_id = {m["id"]: m for m in memories}
    for m in memories:
        missing = {"id", "title", "content", "type", "tags", "lang"} - m.keys()
        if missing:
            out.append(f"memory {m.get('id')} lacks {sorted(missing)}")
        elif m["type"] not in TYPES or m["lang"] not in ("en", "zh"):
            out.append(f"memory {m['id']}: type {m['type']!r} / lang {m['lang']!r} unknown")
        elif m["lang"] == "zh" and not CJK.search(m["content"]):
            out.append(f"memory {m['id']} is labelled zh but has no Chinese")
        elif m["lang"] == "en" and CJK.search(m["content"]):
            out.append(f"memory {m['id']} is labelled en but has Chinese")
    seen: Counter[str] = Counter(q.get("query", "") for q in queries)
    out += [f"query {q!r} appears {n} times" for q, n in seen.items() if n > 1]
    for q in queries:
        out += _query_problems(q, by_id)
    counts = Counter(q.get("direction") for q in queries)
    for direction, least in MINIMUM.items():
        if counts[direction] < least:
            out.append(f"{direction}: {counts[direction]} queries, need at least {least}")
    return out


def _query_problems(q: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    text, gold, direction = q.get("query", ""), q.get("gold") or [], q.get("direction")
    if direction not in DIRECTIONS:
        return [f"query {text!r}: direction {direction!r} unknown"]
    unknown = [g for g in gold if g not in by_id]
    if not gold or unknown:
        return [f"query {text!r}: gold {gold} empty or unknown ids {unknown}"]
    out = []
    source, target = direction.split("->")
    if script(text) != source:
        out.append(f"query {text!r} is written as {script(text)}, labelled {direction}")
    if any(by_id[g]["lang"] != target for g in gold):
        out.append(f"query {text!r}: gold {gold} not all {target}, labelled {direction}")
    out += [f"query {text!r} copies the text of {g}" for g in gold if copies(text, by_id[g])]
    return out


def half(query: str) -> str:
    """'dev' or 'holdout', fixed by the query's text (first byte of its SHA-256 even: dev).
    Settings are chosen on dev; holdout only reports them."""
    return "dev" if hashlib.sha256(query.encode("utf-8")).digest()[0] % 2 == 0 else "holdout"


def load(folder: Path = HERE) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memories and queries of the set; SystemExit with the problems when it is broken."""
    memories = read_jsonl(folder / "memories.jsonl")
    queries = read_jsonl(folder / "queries.jsonl")
    found = problems(memories, queries)
    if found:
        raise SystemExit("\n".join(found))
    return memories, queries


def main() -> None:
    memories, queries = load()
    langs = Counter(m["lang"] for m in memories)
    types = Counter(m["type"] for m in memories)
    directions = Counter(q["direction"] for q in queries)
    devs = Counter(q["direction"] for q in queries if half(q["query"]) == "dev")
    print(f"memories: {len(memories)} ({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))})")
    print("types: " + ", ".join(f"{k} {v}" for k, v in sorted(types.items())))
    print(f"queries: {len(queries)}")
    for direction in DIRECTIONS:
        n, dev = directions[direction], devs[direction]
        print(f"  {direction}: {n} (dev {dev}, holdout {n - dev})")
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
