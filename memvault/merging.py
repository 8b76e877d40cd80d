"""Merging two versions of one memory so that no side is lost (pure: texts in, text out).

Sync calls this for each memory git could not merge. The frontmatter merges field by field
(tags and other lists: the union; other values: the side that changed it, or the side
updated later when both did); the bodies merge when only one side changed, or when a
line merge (given as ``merge_lines``) is clean; otherwise the file keeps our body and
appends the other side's under a ``## Conflicting version (from <where>, <date>)``
heading, and memvault's lifecycle becomes ``conflict`` until a person (or
``resolve_conflict``) settles it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import frontmatter
from .errors import InvalidInputError, MalformedMemoryError
from .fields import place_status
from .note import parse_time

CONFLICT_HEADING = "## Conflicting version (from "
KEEP = ("ours", "theirs", "both")
_MISSING: Any = object()

LineMerge = Callable[[str, str, str], str | None]  # (base, ours, theirs) -> merged or None


@dataclass(frozen=True)
class Merged:
    text: str
    conflict: bool  # both bodies kept: the person must choose


def conflict_heading(where: str, date: str) -> str:
    return f"{CONFLICT_HEADING}{where}, {date})"


def merge_memory(
    base: str | None,
    ours: str,
    theirs: str,
    where: str,
    date: str,
    merge_lines: LineMerge | None = None,
) -> Merged:
    """One file from two versions of a memory and their common ancestor (None: both added)."""
    try:
        mine, other = frontmatter.parse(ours), frontmatter.parse(theirs)
        common = frontmatter.parse(base) if base is not None else None
    except MalformedMemoryError:
        return Merged(_append(ours.rstrip("\n"), theirs, where, date), True)
    base_meta = common.meta if common is not None else {}
    changes = merge_fields(base_meta, mine.meta, other.meta)
    body, conflict = _merge_bodies(
        common.body if common is not None else None, mine.body, other.body, merge_lines
    )
    if conflict:
        body = _append(mine.body.rstrip("\n"), other.body, where, date)
        changes = place_status({**mine.meta, **changes}, {**changes, "status": "conflict"})
    if mine.frontmatter is None and not changes:
        return Merged(frontmatter.render(mine, None, body), conflict)
    try:
        return Merged(frontmatter.render(mine, changes, body), conflict)
    except InvalidInputError:  # both sides' fields together would not read back
        return Merged(_append(ours.rstrip("\n"), theirs, where, date), True)


def _merge_bodies(
    base: str | None, ours: str, theirs: str, merge_lines: LineMerge | None
) -> tuple[str, bool]:
    if theirs in (ours, base):
        return ours, False
    if ours == base:
        return theirs, False
    if base is not None and merge_lines is not None:
        merged = merge_lines(base, ours, theirs)
        if merged is not None:
            return merged, False
    return ours, True


def _append(ours: str, theirs: str, where: str, date: str) -> str:
    return f"{ours}\n\n{conflict_heading(where, date)}\n\n{theirs.strip(chr(10))}\n"


def merge_fields(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any]:
    """The changes to make to ``ours`` so it carries both sides' frontmatter edits."""
    later = _later(ours, theirs)
    changes: dict[str, Any] = {}
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        mine, other = ours.get(key, _MISSING), theirs.get(key, _MISSING)
        was = base.get(key, _MISSING)
        if other in (mine, was):
            continue
        if mine == was:
            changes[key] = frontmatter.DELETE if other is _MISSING else other
        elif isinstance(mine, list) and isinstance(other, list):
            union = _union(was if isinstance(was, list) else [], mine, other)
            if union != mine:
                changes[key] = union
        elif key == "updated":
            if later == "theirs" and other is not _MISSING:
                changes[key] = other
        elif later == "theirs":
            changes[key] = frontmatter.DELETE if other is _MISSING else other
    return changes


def _union(base: list[Any], ours: list[Any], theirs: list[Any]) -> list[Any]:
    """Both sides' items, less those either side removed from the common version."""
    dropped = [v for v in base if v not in ours or v not in theirs]
    return [v for v in [*ours, *(v for v in theirs if v not in ours)] if v not in dropped]


def _later(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """Which side was updated later (ours on a tie or when unknown)."""
    mine, other = parse_time(ours.get("updated")), parse_time(theirs.get("updated"))
    if mine is not None and other is not None and other > mine:
        return "theirs"
    return "ours"


def split_conflict(body: str) -> tuple[str, str] | None:
    """(our body, their body) of a body with a conflicting version, else None."""
    at = body.find("\n" + CONFLICT_HEADING)
    if at < 0:
        return None
    end = body.find("\n", at + 1)
    theirs = "" if end < 0 else body[end + 1 :]
    return body[:at].rstrip("\n") + "\n", theirs.strip("\n") + "\n"


def resolved_body(body: str, keep: str) -> str | None:
    """The body after choosing ``keep`` (ours, theirs or both), None when not in conflict."""
    parts = split_conflict(body)
    if parts is None:
        return None
    ours, theirs = parts
    if keep == "ours":
        return ours
    if keep == "theirs":
        return theirs
    return f"{ours.rstrip(chr(10))}\n\n{theirs}"
