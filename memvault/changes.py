"""What changed since a commit or a time: the feed behind ``memory_changes``,
``memvault changes`` and ``memory://changes``.

One ``git log`` (raw entries and line counts) per page of commits, one ``cat-file`` for
the frontmatters needed, and each commit's memory files turned into change records:
who (a person's git name, or memvault and its client), the operation (from git's
status and the ``Memvault-Op`` trailer), the memory's id, a short diff summary.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import frontmatter, validate
from .errors import InvalidInputError, MemvaultError
from .history import PURGED_NAME, Delta, Deltas, History
from .models import Change, ChangeFeed, lifecycle_of
from .note import parse_time
from .vault import Vault

if TYPE_CHECKING:
    from .service import MemoryService

URI = "memory://changes"
RESOURCE_COUNT = 20  # memory://changes, and the feed without `since`
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
WALK_MAX = 1_000_000  # commits one step of a page may read (a merge brings them all)
SHORT_SHA = 10
MAX_BLOB_BYTES = 256 * 1024  # larger files are named by their path, without a field list
STATUS_OPS = {"A": "created", "C": "created", "D": "deleted", "M": "edited", "T": "edited"}
STATUS_OPS["R"] = "moved"
TRAILER_OPS = {
    "forget-archive": "archived",
    "forget-delete": "deleted",
    "forget-purge": "deleted",
    "revert": "reverted",
    "archive": "archived",  # consolidate's steps
    "merge": "superseded",
    "supersede": "superseded",
}
PERSON_OPS = ("", "external")  # no memvault op: a person's commit (by hand, obsidian-git)
ONE_MEMORY_OPS: tuple[str, ...] = ("update", "forget-archive", "forget-delete", "forget-purge")
ONE_MEMORY_OPS += ("revert", "archive", "merge", "supersede")
QUIET_FIELDS = frozenset({"updated"})  # changes with every rewrite: says nothing


def feed(service: MemoryService, since: str | None = None, limit: int | None = None) -> ChangeFeed:
    """Changes to memories after ``since`` (a commit, e.g. a previous cursor, or an ISO
    time), newest first: at most ``limit`` (default 50; without ``since`` the last 20);
    when more came since ``since``, the oldest of them (:func:`_oldest_page`)."""
    return changes(service.history, service.vault, since, limit)


def changes(
    history: History, vault: Vault, since: str | None = None, limit: int | None = None
) -> ChangeFeed:
    if limit is None:
        limit = DEFAULT_LIMIT if since else RESOURCE_COUNT
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    head = history.head()
    if head is None:
        return ChangeFeed((), None, False)
    base, moment = _since(history, since, head)
    revs = f"{base}..{head}" if base else head
    when = moment.isoformat() if moment else None
    found: list[Change] = []
    page, skip = limit + 1, 0
    while len(found) <= limit:
        commits = history.deltas(revs, when, skip, page)
        kept = [c for c in commits if moment is None or _after(c.time, moment)]
        found += _records(history, vault, kept)
        skip += page
        if len(commits) < page:
            break
    if len(found) <= limit or (base is None and moment is None):
        return ChangeFeed(tuple(found[:limit]), head, len(found) > limit)
    return _oldest_page(history, vault, (base, when, moment), limit, head)


def _oldest_page(
    history: History,
    vault: Vault,
    walk: tuple[str | None, str | None, dt.datetime | None],
    limit: int,
    head: str,
) -> ChangeFeed:
    """More changes than ``limit`` since the caller's cursor: the oldest of them, newest
    first, with the newest commit taken as the cursor, so the next call goes on from there
    and misses none (the newest ``limit`` would leave the older ones behind a cursor at the
    head). The walk follows first parents: a cursor is always one of them, and a merge
    comes with every commit it brought (``cursor..HEAD`` would list them again otherwise);
    a commit, or a merge's commits, bigger than the limit come whole."""
    base, when, moment = walk
    page: list[Change] = []
    cursor, prev = head, base
    for run in _runs(history.spine(f"{base}..{head}" if base else head, when), limit + 1):
        top, merge = run[-1]
        range_ = f"{prev}..{top}" if prev else top
        kept = [
            c
            for c in history.deltas(range_, when, 0, WALK_MAX)
            if moment is None or _after(c.time, moment)
        ]
        records = _records(history, vault, kept)
        steps = (
            [(top, records)]
            if merge
            else [(sha, [r for r in records if sha.startswith(r.commit)]) for sha, _ in run]
        )
        for sha, own in steps:
            if page and len(page) + len(own) > limit:
                return ChangeFeed(tuple(page), cursor, True)
            page, cursor = own + page, sha
        prev = top
    return ChangeFeed(tuple(page), head, False)


def _runs(spine: list[tuple[str, bool]], size: int) -> list[list[tuple[str, bool]]]:
    """The spine cut into runs read with one ``git log`` each: up to ``size`` commits
    that are no merges, or one merge alone."""
    runs: list[list[tuple[str, bool]]] = []
    for commit in spine:
        if commit[1] or not runs or runs[-1][-1][1] or len(runs[-1]) >= size:
            runs.append([commit])
        else:
            runs[-1].append(commit)
    return runs


def _since(history: History, since: str | None, head: str) -> tuple[str | None, dt.datetime | None]:
    """(commit, None) for a commit of this history, (None, time) for a time."""
    text = validate.point("since", since or "")
    if not text:
        return None, None
    sha = history.commit_of(text)
    if sha is not None and history.is_ancestor(sha, head):
        return sha, None
    local = dt.datetime.now().astimezone().tzinfo or dt.UTC
    moment = parse_time(text, naive_tz=local)
    if sha is None and moment is not None:
        return None, moment
    raise InvalidInputError(
        f"since={text!r} is neither a commit in this vault's history nor an ISO time "
        "(a purge rewrites history, as does a person's amend or rebase, so cursors from "
        "before it no longer work)"
        f"{history.shallow_hint()}: pass the "
        "cursor of the last memory_changes, a time like 2026-11-30T18:00, or no since"
    )


def _after(time: str, moment: dt.datetime) -> bool:
    committed = parse_time(time)
    return committed is None or committed >= moment


def _records(history: History, vault: Vault, commits: Sequence[Deltas]) -> list[Change]:
    """The memory changes of ``commits``, newest first (one ``cat-file`` for all of them)."""
    # a shallow clone's first commit lists every file as new: what it holds, not what it
    # changed, nor who wrote it; the feed stops there
    boundary = history.shallow()
    commits = [c for c in commits if c.sha not in boundary]
    picked = [(c, [m for d in c.files if (m := _as_memory(vault, d))]) for c in commits]
    wanted = [
        blob
        for commit, files in picked
        for d in files
        if _trailer_id(commit, d) is None or d.status in "MRT"
        for blob in (d.old_blob, d.new_blob)
        if blob
    ]
    texts = history.blobs(wanted, MAX_BLOB_BYTES)
    out: list[Change] = []
    for commit, files in picked:
        out += _commit_changes(commit, files, texts)
        if commit.merge and not files:  # a sync's, or a person's who settled a conflict
            out += _settled(history, vault, commit)
    return out


def _settled(history: History, vault: Vault, merge: Deltas) -> list[Change]:
    """What a merge commit (a sync's, a person's) settled itself (git's log shows no
    files for a merge): ``conflict`` for a memory now holding both sides' texts,
    ``merged`` for one merged field by field or line by line, or by a person's hand."""
    found = {
        p: b for p, b in history.settled_by_merge(merge.sha).items() if vault.is_memory_path(p)
    }
    texts = history.blobs(found.values(), MAX_BLOB_BYTES)
    out = []
    for path, blob in found.items():
        meta = _meta(texts, blob) or {}
        both = lifecycle_of(meta) == "conflict"  # `Status: conflict` too
        op, diff = ("conflict", "both versions kept") if both else ("merged", "both sides merged")
        out.append(_change(merge, _meta_id(meta) or path, op, path, diff))
    return out


def _as_memory(vault: Vault, delta: Delta) -> Delta | None:
    """``delta`` as a change of a memory file, or None (attachments, settings, ignored
    folders). A file renamed into the memories is created there, one renamed out of
    them deleted; a copy is a new file."""
    new = vault.is_memory_path(delta.path)
    old = delta.old_path is not None and vault.is_memory_path(delta.old_path)
    if delta.old_path is None or (new and old and delta.status == "R"):
        return delta if new else None
    if new:
        return replace(delta, status="A", old_path=None, old_blob=None)
    if old and delta.status == "R":
        return replace(delta, status="D", path=delta.old_path, old_path=None, new_blob=None)
    return None


def _commit_changes(commit: Deltas, files: list[Delta], texts: dict[str, str]) -> list[Change]:
    op = commit.trailers.get("Memvault-Op", "").strip()
    if op == "purge" and not files:
        return [_change(commit, commit.trailers.get("Memvault-Id") or PURGED_NAME, "purged")]
    records = []
    for delta in files:
        old_meta, new_meta = _meta(texts, delta.old_blob), _meta(texts, delta.new_blob)
        ident = _trailer_id(commit, delta) or _meta_id(new_meta or old_meta) or delta.path
        records.append((delta, ident, _summary(delta, old_meta, new_meta)))
    out = []
    for delta, ident, diff in _paired(records):
        name = STATUS_OPS.get(delta.status, "edited")
        if op == "remember" and delta.status == "M":
            name = "superseded"
        kind = TRAILER_OPS.get(op, name)
        out.append(_change(commit, ident, kind, delta.path, diff, delta.old_path))
    return out


def _paired(records: list[tuple[Delta, str, str]]) -> list[tuple[Delta, str, str]]:
    """A deletion and an addition of the same id in one commit (a move git's rename
    detection missed, e.g. with heavy edits) as one move."""
    added = {ident: d for d, ident, _ in records if d.status == "A"}
    removed = {ident: d for d, ident, _ in records if d.status == "D" and ident in added}
    out = []
    for delta, ident, diff in records:
        if ident not in removed or delta.status not in "AD":
            out.append((delta, ident, diff))
        elif delta.status == "A":
            gone = removed[ident]
            out.append((replace(delta, status="R", old_path=gone.path), ident, diff))
    return out


def _change(
    commit: Deltas,
    ident: str,
    op: str,
    path: str = PURGED_NAME,
    diff: str = "",
    old_path: str | None = None,
) -> Change:
    by = commit.trailers.get("Memvault-Op", "").strip()
    person = by in PERSON_OPS
    name = commit.author if person else commit.trailers.get("Memvault-Client") or None
    who = "person" if person else "memvault"
    sha = commit.sha[:SHORT_SHA]
    return Change(ident, path, op, who, name, sha, commit.time, diff, old_path)


def _trailer_id(commit: Deltas, delta: Delta) -> str | None:
    """The ``Memvault-Id`` trailer, where it names this file's memory: a one-memory
    operation, or the new file of a ``remember`` (its other files are superseded ones)."""
    ident = commit.trailers.get("Memvault-Id") or None
    op = commit.trailers.get("Memvault-Op", "")
    if op in ONE_MEMORY_OPS or (op == "remember" and delta.status == "A"):
        return ident
    return None


def _meta(texts: dict[str, str], blob: str | None) -> dict[str, Any] | None:
    text = texts.get(blob or "")
    if text is None:
        return None
    try:
        return frontmatter.parse(text).meta
    except MemvaultError:
        return None


def _meta_id(meta: dict[str, Any] | None) -> str | None:
    value = (meta or {}).get("id")
    if isinstance(value, str | int) and not isinstance(value, bool):
        return str(value).strip() or None
    return None


def _summary(delta: Delta, old_meta: dict[str, Any] | None, new_meta: dict[str, Any] | None) -> str:
    """``+3 -1 lines`` (git's count) and, for edits, the frontmatter keys that changed."""
    parts = []
    if delta.added is not None:
        parts.append(f"+{delta.added} -{delta.deleted} lines")
    if old_meta is not None and new_meta is not None:
        keys = [
            k
            for k in dict.fromkeys([*old_meta, *new_meta])
            if k not in QUIET_FIELDS and old_meta.get(k) != new_meta.get(k)
        ]
        if keys:
            parts.append("fields: " + ", ".join(keys))
    return "; ".join(parts)


# -- text -----------------------------------------------------------------------------------
def line(change: Change) -> str:
    """One change as one line: time, op, path (and the old one), id, who, diff, commit."""
    where = f"{change.old_path} -> {change.path}" if change.old_path else change.path
    ident = "" if change.id == change.path else f" ({change.id})"
    if change.who == "person":
        who = f"{change.name} (person)"
    else:
        who = f"memvault ({change.name})" if change.name else "memvault"
    diff = f", {change.diff}" if change.diff else ""
    when = change.time[:16].replace("T", " ")
    return f"{when} {change.op} {where}{ident} by {who}{diff} [{change.commit}]"


def render(changes_feed: ChangeFeed) -> str:
    """memory://changes: the last changes as Markdown, one line each."""
    head = f"# Changes to memories, newest first (cursor {changes_feed.cursor or 'none'})"
    if not changes_feed.changes:
        return f"{head}\n\nNo changes yet.\n"
    lines = [f"- {line(c)}" for c in changes_feed.changes]
    if changes_feed.more:
        lines.append("- (older changes: call memory_changes with since)")
    return head + "\n\n" + "\n".join(lines) + "\n"
