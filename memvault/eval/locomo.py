"""LoCoMo retrieval evaluation (DESIGN section 8): data, gold, metrics. Pure functions.

The data (CC BY-NC) is read from where the user keeps it; nothing is copied into the
repository. Memories carry their gold key in frontmatter only (never in indexed text).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEV = ("conv-26", "conv-30")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)
_TURN = re.compile(r"^D(\d+):(\d+)$")


@dataclass(frozen=True)
class Item:
    """One memory to import, and the gold units it covers (turn ids or session numbers)."""

    key: str  # memory id (valid memvault id)
    content: str
    title: str
    created: str
    covers: frozenset[str]


@dataclass(frozen=True)
class Question:
    conv: str
    text: str
    category: int
    gold: frozenset[str]  # evidence turn ids ("D1:3"), or sessions ("S1") for variant S


@dataclass
class Conversation:
    sample_id: str
    sessions: dict[int, tuple[dt.datetime, list[dict[str, Any]]]]
    qa: list[dict[str, Any]]
    observation: dict[str, Any] = field(default_factory=dict)

    @property
    def turn_ids(self) -> set[str]:
        return {t["dia_id"] for _, turns in self.sessions.values() for t in turns}


def parse_date(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08T13:56."""
    match = _DATE.search(text)
    if not match:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    moment = dt.datetime.strptime(f"{day} {month} {year}", "%d %B %Y")
    return moment.replace(hour=hour_24, minute=int(minute))


def load(path: Path) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        sessions = {}
        for key, turns in conv.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if match and isinstance(turns, list):
                number = int(match.group(1))
                sessions[number] = (parse_date(conv[f"{key}_date_time"]), turns)
        out.append(
            Conversation(
                sample["sample_id"],
                dict(sorted(sessions.items())),
                sample["qa"],
                sample.get("observation", {}),
            )
        )
    return out


def clean_evidence(raw: Iterable[str], known: set[str]) -> frozenset[str]:
    """Split 'D8:6; D9:17' and 'D9:1 D4:4', fix 'D:11:26' and 'D30:05', drop unknown ids."""
    out = set()
    for entry in raw:
        for raw_piece in re.split(r"[;,\s]+", str(entry)):
            piece = raw_piece.strip().replace("D:", "D")
            match = _TURN.match(piece)
            if match:
                turn = f"D{int(match.group(1))}:{int(match.group(2))}"
                if turn in known:
                    out.add(turn)
    return frozenset(out)


def session_of(turn: str) -> str:
    return "S" + turn[1:].split(":", 1)[0]


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def reply_context(turn: dict[str, Any]) -> str:
    """What a turn replies to, as a line of its memory (variant C): the previous turn's
    speaker and its last sentence (usually the question the turn answers)."""
    sentences = [s for s in _SENTENCE.split(turn["text"].strip()) if s]
    last = sentences[-1] if sentences else turn["text"]
    return f"(in reply to {turn['speaker']}: {last})"


def _key(conv: str, kind: str, unit: str) -> str:
    return f"{kind}-{conv}-{unit}".replace(":", "-").replace("_", "-")


def items(
    conv: Conversation, variant: str, reply: Callable[[dict[str, Any]], str] | None = None
) -> list[Item]:
    """Memories of one conversation for variant T (turns), C (turns with the line they reply
    to, written by ``reply``, default :func:`reply_context`), S (sessions) or O
    (observations)."""
    out: list[Item] = []
    for number, (when, turns) in conv.sessions.items():
        stamp, day = when.isoformat(), f"{when:%d %B %Y}".lstrip("0")
        if variant in ("T", "C"):
            for before, turn in zip([None, *turns], turns, strict=False):
                text = _turn_text(turn)
                if variant == "C" and before is not None:
                    text += "\n\n" + (reply or reply_context)(before)
                out.append(
                    Item(
                        _key(conv.sample_id, variant.lower(), turn["dia_id"]),
                        text,
                        f"{turn['speaker']}, {day}",
                        stamp,
                        frozenset([turn["dia_id"]]),
                    )
                )
        elif variant == "S":
            body = "\n".join(_turn_text(t) for t in turns)
            out.append(
                Item(
                    _key(conv.sample_id, "s", str(number)),
                    body,
                    f"Session {number}, {day}",
                    stamp,
                    frozenset([f"S{number}"]),
                )
            )
        elif variant == "O":
            facts = conv.observation.get(f"session_{number}_observation", {})
            for speaker, rows in facts.items():
                for n, row in enumerate(rows):
                    refs = row[1] if isinstance(row[1], list) else [row[1]]
                    covers = clean_evidence(refs, conv.turn_ids)
                    out.append(
                        Item(
                            _key(conv.sample_id, "o", f"{number}-{speaker}-{n}"),
                            row[0],
                            f"{speaker}, {day}",
                            stamp,
                            covers,
                        )
                    )
        else:
            raise ValueError(f"variant must be T, C, S or O, not {variant!r}")
    return out


def questions(conv: Conversation, variant: str) -> list[Question]:
    """Questions with at least one valid evidence turn (sessions for variant S)."""
    known = conv.turn_ids
    out = []
    for qa in conv.qa:
        gold = clean_evidence(qa.get("evidence", []), known)
        if not gold:
            continue
        if variant == "S":
            gold = frozenset(session_of(t) for t in gold)
        out.append(Question(conv.sample_id, qa["question"], int(qa["category"]), gold))
    return out


# -- metrics ------------------------------------------------------------------
KS = (1, 5, 10)
FRAC_KS = (5, 10, 25, 50)


def score(
    ranked: Sequence[frozenset[str]],
    gold: frozenset[str],
    relevant_total: int,
    sessions: Sequence[frozenset[str]] | None = None,
) -> dict[str, float]:
    """Metrics of one question. ``ranked`` is what each result covers, best first;
    ``relevant_total`` is how many items of the collection cover any gold unit."""
    out: dict[str, float] = {}
    hits = [bool(c & gold) for c in ranked]
    for k in KS:
        out[f"R_any@{k}"] = float(any(hits[:k]))
    for k in (5, 10):
        covered = frozenset().union(*ranked[:k]) if ranked[:k] else frozenset()
        out[f"R_all@{k}"] = float(gold <= covered)
    for k in FRAC_KS:
        covered = frozenset().union(*ranked[:k]) if ranked[:k] else frozenset()
        out[f"R_frac@{k}"] = len(gold & covered) / len(gold)
    dcg = sum(1 / math.log2(i + 2) for i, h in enumerate(hits[:10]) if h)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(relevant_total, 10)))
    out["nDCG@10"] = dcg / ideal if ideal else 0.0
    first = next((i for i, h in enumerate(hits) if h), None)
    out["MRR"] = 0.0 if first is None else 1 / (first + 1)
    if sessions is not None:
        gold_sessions = {session_of(t) for t in gold}
        order = list(dict.fromkeys(s for cover in sessions for s in cover))
        for k in (5, 10):
            out[f"S_any@{k}"] = float(bool(gold_sessions & set(order[:k])))
    return out


def session_covers(ranked: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    return [frozenset(session_of(t) for t in c) for c in ranked]


COLUMNS = (
    "R_any@1",
    "R_any@5",
    "R_any@10",
    "R_all@5",
    "R_all@10",
    "R_frac@5",
    "R_frac@10",
    "R_frac@25",
    "R_frac@50",
    "nDCG@10",
    "MRR",
    "S_any@5",
    "S_any@10",
)


def aggregate(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of each metric (in %) per category, for 1-4 together, and over everything."""
    groups: dict[str, list[dict[str, float]]] = {}
    for category, metrics in rows:
        groups.setdefault(str(category), []).append(metrics)
        if category != 5:
            groups.setdefault("1-4", []).append(metrics)
        groups.setdefault("all", []).append(metrics)
    table = {}
    for name, group in groups.items():
        keys = [c for c in COLUMNS if c in group[0]]
        table[name] = {k: 100 * sum(m[k] for m in group) / len(group) for k in keys}
        table[name]["n"] = float(len(group))
    return table


def format_table(title: str, table: dict[str, dict[str, float]]) -> str:
    order = [k for k in ("1", "2", "3", "4", "1-4", "5", "all") if k in table]
    columns = [c for c in COLUMNS if c in table[order[0]]]
    head = "| category | n | " + " | ".join(columns) + " |"
    lines = [f"### {title}", "", head, "|" + "---|" * (len(columns) + 2)]
    for key in order:
        label = f"{key} {CATEGORIES[int(key)]}" if key.isdigit() else key
        row = table[key]
        cells = " | ".join(f"{row[c]:.1f}" for c in columns)
        lines.append(f"| {label} | {int(row['n'])} | {cells} |")
    return "\n".join(lines) + "\n"
