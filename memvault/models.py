"""Vocabulary: frozen dataclasses passed between layers."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

MEMORY_TYPES = ("preference", "fact", "episode", "summary", "task", "note")
STATUSES = ("active", "superseded", "archived")
SOURCES = ("conversation", "user", "file", "tool", "agent", "import")

_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_INLINE_TAG = re.compile(r"(?:^|\s)#([^\s#\[\]()\"',.;:!?]+)")


@dataclass(frozen=True)
class Memory:
    """One memory file as memvault understands it."""

    id: str
    path: str  # vault-relative, "/"-separated
    meta: dict[str, Any]
    body: str
    content_hash: str  # sha256 of the file's bytes: the revision token
    id_derived: bool = False  # True when the file has no ``id`` key yet
    problems: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        match = _HEADING.search(self.body)
        if match:
            return match.group(1)
        return PurePosixPath(self.path).stem

    @property
    def type(self) -> str:
        return str(self.meta.get("type") or "note")

    @property
    def status(self) -> str:
        return str(self.meta.get("status") or "active")

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*as_str_list(self.meta.get("tags")), *inline_tags(self.body)]))

    @property
    def scope(self) -> tuple[str, ...]:
        return tuple(as_str_list(self.meta.get("scope")))

    @property
    def importance(self) -> float:
        return as_unit(self.meta.get("importance"), 0.5)

    @property
    def confidence(self) -> float:
        return as_unit(self.meta.get("confidence"), 0.8)

    @property
    def created(self) -> str | None:
        return as_iso(self.meta.get("created"))

    @property
    def updated(self) -> str | None:
        return as_iso(self.meta.get("updated")) or self.created

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly view without the body."""
        return {
            "id": self.id,
            "path": self.path,
            "title": self.title,
            "type": self.type,
            "tags": list(self.tags),
            "status": self.status,
            "importance": self.importance,
            "confidence": self.confidence,
            "created": self.created,
            "updated": self.updated,
            "revision": self.content_hash,
        }


@dataclass(frozen=True)
class Problem:
    """Something wrong with a file or the vault, for ``doctor`` and logs."""

    path: str
    kind: str  # malformed | binary | too_large | duplicate_id | uncommitted | git | ...
    message: str


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    author: str
    subject: str
    path: str | None = None  # the memory's path at that commit, when following one file
    trailers: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # paths this commit touched (new names for renames)
    renames: tuple[tuple[str, str], ...] = ()  # (old, new) pairs

    def brief(self) -> dict[str, Any]:
        return {
            "commit": self.sha,
            "date": self.date,
            "author": self.author,
            "subject": self.subject,
            "op": self.trailers.get("Memvault-Op"),
            "path": self.path,
        }


@dataclass(frozen=True)
class WriteResult:
    memory: Memory
    commit: str | None
    action: str  # created | updated | archived | deleted | purged | reverted | unchanged
    previous_revision: str | None = None
    erased: tuple[str, ...] = ()  # purge: the places the memory's text was erased from


def as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip().lstrip("#") for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip().lstrip("#") for v in value if v is not None and str(v).strip()]
    return [str(value)]


def inline_tags(body: str) -> list[str]:
    return [t for t in _INLINE_TAG.findall(body) if not t.isdigit()]


def as_unit(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if number != number:  # NaN
        return default
    return min(1.0, max(0.0, number))


def as_iso(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).isoformat()
    return str(value)


def parse_time(value: str | None) -> dt.datetime | None:
    """ISO text to an aware datetime (naive times are taken as UTC)."""
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed


def jsonable(value: Any) -> Any:
    """Frontmatter values made JSON-friendly (dates as ISO text)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value
