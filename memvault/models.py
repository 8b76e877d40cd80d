"""Vocabulary: the one shape of each concept passed between layers (frozen dataclasses).

A memory is a :class:`Memory` (the file, read) or a :class:`MemoryInfo` (its index record,
no file read). Services return these dataclasses; adapters render them.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Literal

from .errors import InvalidInputError
from .note import (
    EXCALIDRAW_KEY,
    heading,
    inline_tags,
    link_target,
    links,
    newest_first,
    parse_time,
    reader_text,
    timestamp,
)

MEMORY_TYPES = ("preference", "fact", "episode", "summary", "task", "note")
STATUSES = ("active", "superseded", "archived")  # what a caller may set
LIFECYCLE = (*STATUSES, "conflict")  # memvault's values of ``status``; any other is the person's
LIFECYCLE_KEY = "lifecycle"  # memvault's state when ``status`` holds the person's own value
SOURCES = ("conversation", "user", "file", "tool", "agent", "import")
SORTS = ("updated", "created", "importance", "path")
CORE_IMPORTANCE = 0.9  # a core memory: never forgotten automatically, softly or not


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
    edited: str | None = None  # when a person last edited the file (from git), if known

    @property
    def title(self) -> str:
        """``title:`` when the frontmatter has one, else the first heading, else the file name
        (an Excalidraw drawing: always its file name, as Obsidian shows it)."""
        own = " ".join(str(self.meta.get("title") or "").split())
        stem = PurePosixPath(self.path).stem
        if not own and EXCALIDRAW_KEY in self.meta:  # its headings are the plugin's own
            return stem.removesuffix(".excalidraw") or stem
        return own or heading(self.body) or stem

    @property
    def readable(self) -> str:
        """The body as a reader sees it (note.reader_text): what is indexed, quoted and given
        as context."""
        return reader_text(self.body, self.meta)

    @property
    def type(self) -> str:
        """The memory's type, decided here once (see :func:`canonical_type`): ``type:
        Episode`` (or ``Type: Episode``) typed by hand is an ``episode``. The file keeps the
        person's spelling."""
        return canonical_type(self.meta.get(spelling(self.meta, "type")))

    @property
    def status(self) -> str:
        """memvault's lifecycle state: ``lifecycle:``, else ``status:`` when it holds one of
        memvault's values (whatever its case: ``status: Archived`` typed by hand is archived),
        else active (a person's ``status: draft`` is theirs, not ours)."""
        return lifecycle_of(self.meta)

    @property
    def tags(self) -> tuple[str, ...]:
        own = [tag for value in spelled(self.meta, "tags") for tag in tag_list(value)]
        return tuple(dict.fromkeys([*own, *inline_tags(self.body)]))

    @property
    def scope(self) -> tuple[str, ...]:
        return tuple(as_str_list(self.meta.get("scope")))

    @property
    def aliases(self) -> tuple[str, ...]:
        """Obsidian's other names of the note: ``aliases:`` (or ``alias:``), a list or one name."""
        names: list[Any] = []
        for value in spelled(self.meta, "aliases"):
            names.extend(value if isinstance(value, list | tuple) else [value])
        return tuple(
            dict.fromkeys(str(n).strip() for n in names if n is not None and str(n).strip())
        )

    @property
    def links(self) -> tuple[str, ...]:
        """What the links of the properties (wikilinks in text values, as Obsidian reads
        them: ``author: "[[Ursula Le Guin]]"``, unquoted too; not in tags, aliases or CSS
        classes, which Obsidian never reads as links) and of the body name (see
        :func:`note.link_target`), each once, in order."""
        values = [v for k, v in self.meta.items() if str(k).lower() not in NOT_LINKS]
        texts = [t for v in values for t in _link_texts(v)]
        own = [x for t in texts if isinstance(t, str) for x in links(t) if x.wiki]
        found = (link_target(self.path, link) for link in [*own, *links(self.body)])
        return tuple(dict.fromkeys(t for t in found if t))

    @property
    def importance(self) -> float:
        return as_unit(self.meta.get(spelling(self.meta, "importance")), 0.5)

    @property
    def confidence(self) -> float:
        return as_unit(self.meta.get(spelling(self.meta, "confidence")), 0.8)

    @property
    def created(self) -> str | None:
        return as_iso(self.meta.get("created"))

    @property
    def expires(self) -> str | None:
        """When the memory lapses (``expires:``, a date or a date-time), if it does."""
        value = self.meta.get("expires")
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value.isoformat()  # a date alone: lasts through that day
        return as_iso(value)

    @property
    def updated(self) -> str | None:
        """The frontmatter's ``updated`` (else ``created``), or a person's later edit."""
        own = as_iso(self.meta.get("updated")) or self.created
        if self.edited is not None and timestamp(self.edited) > timestamp(own):
            return self.edited
        return own

    def info(self, mtime_ns: int = 0, size: int = 0) -> MemoryInfo:
        """The index record of this memory."""
        return MemoryInfo(
            id=self.id,
            path=self.path,
            title=self.title,
            type=self.type,
            status=self.status,
            tags=self.tags,
            scope=self.scope,
            created=self.created,
            updated=self.updated,
            importance=self.importance,
            confidence=self.confidence,
            hash=self.content_hash,
            mtime_ns=mtime_ns,
            size=size,
            aliases=self.aliases,
            links=self.links,
            problems=self.problems,
            expires=self.expires,
        )

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly view without the body."""
        return self.info().summary()


@dataclass(frozen=True)
class MemoryInfo:
    """A memory's index record: what listing, filtering and ranking need, without the file."""

    id: str
    path: str
    title: str
    type: str
    status: str
    tags: tuple[str, ...]
    scope: tuple[str, ...]
    created: str | None
    updated: str | None
    importance: float
    confidence: float
    hash: str = ""  # the file's content hash: its revision
    mtime_ns: int = 0
    size: int = 0
    aliases: tuple[str, ...] = ()
    links: tuple[str, ...] = ()  # link targets (resolved when asked: see links.py)
    problems: tuple[str, ...] = ()  # what is wrong with the file (malformed frontmatter...)
    expires: str | None = None

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly view (the shape of CLI ``list`` and ``show``)."""
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
            "expires": self.expires,
            "revision": self.hash,
        }


def memory_count(count: int) -> str:
    """``1 memory``, ``3 memories``: how many, for messages and commit subjects."""
    return f"{count} memor{'y' if count == 1 else 'ies'}"


def sort_infos(infos: Sequence[MemoryInfo], sort: str = "updated") -> list[MemoryInfo]:
    """Records newest first by ``updated``/``created``, by importance (then newest), or by path."""
    return sorted(infos, key=_sort_key(sort))


def _sort_key(sort: str) -> Callable[[MemoryInfo], Any]:
    if sort == "path":
        return lambda m: m.path
    if sort == "importance":
        return lambda m: (-m.importance, newest_first(m.updated))
    if sort == "created":
        return lambda m: newest_first(m.created)
    if sort == "updated":
        return lambda m: newest_first(m.updated)
    raise InvalidInputError(f"sort must be {', '.join(SORTS)}, not {sort!r}")


def type_key(memory_type: str) -> str:
    """A type as types are compared: ``Recipe``, ``RECIPE`` and a full-width ``Ｒｅｃｉｐｅ``
    are one type (NFKC, casefolded). A known type's key is its canonical spelling."""
    return unicodedata.normalize("NFKC", memory_type).casefold().strip()


def canonical_type(value: Any) -> str:
    """The type a frontmatter's ``type:`` value names: one of MEMORY_TYPES whatever its
    case or Unicode form (``Episode``: ``episode``); any other type as the person wrote it
    (compared by :func:`type_key`); ``note`` when there is none. A link alone (Obsidian's
    ``type: "[[Book]]"``, quoted or not) names the type of the note it links to's name:
    ``Book`` (the link counts as a link too: :attr:`Memory.links`)."""
    written = str(yaml_link(value) or "").strip() or "note"
    found = links(written) if written.startswith("[[") and written.endswith("]]") else []
    if len(found) == 1 and found[0].target.strip():
        written = PurePosixPath(found[0].target.strip()).name.removesuffix(".md") or written
    key = type_key(written)
    return key if key in MEMORY_TYPES else written


def lifecycle_of(meta: dict[str, Any]) -> str:
    """memvault's lifecycle state in a frontmatter (see :attr:`Memory.status`)."""
    for key in (LIFECYCLE_KEY, spelling(meta, "status")):  # or `Status:`
        if value := lifecycle_value(meta.get(key)):
            return value
    return "active"


def lifecycle_value(value: Any) -> str | None:
    """The one of memvault's lifecycle states (LIFECYCLE) a ``status:`` value names, case
    and Unicode form aside (``Archived``: ``archived``), or None for a person's own value
    (``draft``) or none. Read, never written back: the file keeps the person's spelling."""
    if not isinstance(value, str):
        return None
    key = type_key(value)
    return key if key in LIFECYCLE else None


def yaml_link(value: Any) -> Any:
    """An unquoted wikilink as YAML reads it (``type: [[Book]]``: a list in a list,
    ``[['Book']]``) as the link a person typed (``[[Book]]``); any other value as it is."""
    inner = value[0] if isinstance(value, list) and len(value) == 1 else None
    if isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], str):
        return f"[[{inner[0]}]]"
    return value


def _link_texts(value: Any) -> list[Any]:
    """A property's values that may hold links: its items (each maybe an unquoted link)."""
    value = yaml_link(value)
    return [yaml_link(v) for v in value] if isinstance(value, list) else [value]


def same_type(a: str, b: str) -> bool:
    """Whether two types are one (see :func:`type_key`; a blank type is a note)."""
    return type_key(canonical_type(a)) == type_key(canonical_type(b))


def _tag_set(tags: Sequence[str]) -> set[str]:
    """Tags as Obsidian compares them: case aside, with or without the ``#`` (and a ``/``
    at either end), composed (a Mac's decomposed ``café`` is ``café``)."""
    return {unicodedata.normalize("NFC", tag.lstrip("#").strip("/")).casefold() for tag in tags}


def _tags_held(tags: Sequence[str]) -> set[str]:
    """A memory's tags (as :func:`_tag_set`) with the tags they nest in: as in Obsidian, a
    note tagged ``#coffee/pour-over`` is found by the tag ``coffee``."""
    held: set[str] = set()
    for tag in _tag_set(tags):
        parts = tag.split("/")
        held.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return held


def _within(path: str, folder: str) -> bool:
    """Whether ``path`` is in ``folder``, case aside (``inbox`` is a person's ``Inbox/``,
    as on the disks of macOS and Windows)."""
    return (path + "/").casefold().startswith(folder.strip("/").casefold() + "/")


@dataclass(frozen=True)
class Filters:
    """Which memories a list or a search keeps."""

    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    folder: str | None = None
    scope: tuple[str, ...] = ()
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    include_archived: bool = False
    # search and recall only: drop hits less relevant than this (None: the setting)
    min_relevance: float | None = None
    include_expired: bool = False
    now: dt.datetime | None = None  # what "expired" is judged against (the service's clock)

    def at(self, now: dt.datetime) -> Filters:
        """These filters judging expiry at ``now`` (unless a time was given already)."""
        return self if self.now is not None else replace(self, now=now)

    def accepts(self, memory: Memory | MemoryInfo) -> bool:
        # lazily, the cheap checks first: listing 10k records runs this 10k times
        return (
            (self.include_archived or memory.status not in ("archived", "superseded"))
            and (not self.types or type_key(memory.type) in {type_key(t) for t in self.types})
            and (not self.tags or _tag_set(self.tags) <= _tags_held(memory.tags))
            and (not self.folder or _within(memory.path, self.folder))
            and (not self.scope or bool(set(self.scope) & set(memory.scope)))
            and (self.include_expired or not memory.expires or not self._expired(memory))
            and self._in_period(memory.created)
        )

    def _expired(self, memory: Memory | MemoryInfo) -> bool:
        return lapsed(memory.expires, self.now or dt.datetime.now(dt.UTC))

    def _in_period(self, created: str | None) -> bool:
        if self.since is None and self.until is None:
            return True
        when = parse_time(created)
        if when is None:
            return False
        return not (self.since and when < self.since) and not (self.until and when > self.until)

    @property
    def narrowing(self) -> bool:
        """True when more than archived/superseded memories are filtered out."""
        return bool(
            self.types or self.tags or self.folder or self.scope or self.since or self.until
        )


# every record: archived and lapsed ones too (links reach them; "is the vault empty?")
EVERY = Filters(include_archived=True, include_expired=True)


@dataclass(frozen=True)
class Page:
    """One page of a listing, and the cursor of the next one."""

    memories: tuple[MemoryInfo, ...]
    total: int
    next_cursor: str | None
    unreadable: tuple[Problem, ...] = ()  # files that could not be read, so are not listed

    @classmethod
    def of(
        cls,
        ordered: Sequence[MemoryInfo],
        limit: int | None,
        cursor: str | None,
        unreadable: tuple[Problem, ...] = (),
    ) -> Page:
        """The page of ``ordered`` starting at ``cursor`` (a previous ``next_cursor``); any
        other cursor is refused (taken as the first page, it sent a client round again)."""
        if cursor and not (cursor.isascii() and cursor.isdigit()):
            raise InvalidInputError(
                f"cursor {cursor[:40]!r} is not a next_cursor of this listing: pass the "
                "last one given, or none for the first page"
            )
        start = int(cursor) if cursor else 0
        end = start + limit if limit else len(ordered)
        nxt = str(end) if end < len(ordered) else None
        return cls(tuple(ordered[start:end]), len(ordered), nxt, unreadable)


@dataclass(frozen=True)
class Hit:
    """One recall result: the memory's record, the best-matching line, and why it ranked."""

    id: str
    path: str
    title: str
    type: str
    tags: tuple[str, ...]
    snippet: str
    score: float  # rank among this query's hits (relative)
    why: dict[str, Any]
    created: str | None
    updated: str | None
    relevance: float = 1.0  # absolute, 0..1: how likely it answers the query at all
    proposed: bool = False  # a proposal of the asking client, not yet accepted (proposals)

    @classmethod
    def of(
        cls, memory: Memory, snippet: str, score: float, why: dict[str, Any], relevance: float
    ) -> Hit:
        return cls(
            memory.id,
            memory.path,
            memory.title,
            memory.type,
            memory.tags,
            snippet,
            score,
            why,
            memory.created,
            memory.updated,
            relevance,
        )


@dataclass(frozen=True)
class Access:
    """How often a memory was returned to a client, and when last (``.memvault/``, not git)."""

    hits: int = 0
    last_accessed: str | None = None


@dataclass(frozen=True)
class Similar:
    """An existing memory close to a new text, and how it relates to it."""

    id: str
    path: str
    title: str
    cosine: float
    relation: str  # duplicate | possible_contradiction | related | superseded (said again)
    proposed: bool = False  # a pending proposal of the asking client (proposals)

    def already(self) -> str:
        """Why a new memory that says what this one says is not written."""
        if self.proposed:
            return f"already proposed as {self.path} (id {self.id}), waiting for review"
        return f"already remembered as {self.path} (id {self.id})"


@dataclass(frozen=True)
class Proposal:
    """A consolidation step: merge near-duplicates, supersede a contradiction, or archive."""

    kind: Literal["merge", "supersede", "archive"]
    ids: tuple[str, ...]
    paths: tuple[str, ...]
    reason: str
    applied: bool = False
    commit: str | None = None


@dataclass(frozen=True)
class Status:
    """What ``vault_status`` / ``memvault status`` report."""

    vault: str
    memories: int
    by_type: dict[str, int]
    archived: int
    problems: int
    uncommitted: int
    last_commits: list[dict[str, Any]]
    index: dict[str, Any]
    conflicts: list[str] = field(default_factory=list)  # memories a sync left with two versions
    sync: dict[str, Any] | None = None  # the last sync's result, when there was one
    proposals: dict[str, int] = field(default_factory=dict)  # client -> waiting for review


@dataclass(frozen=True)
class ImportSkip:
    """A source file (or JSONL line) an import left out, and why."""

    path: str  # relative to the source folder, or ``name.jsonl:LINE``
    reason: str  # short: "not UTF-8", "malformed frontmatter", "too large", ...
    detail: str  # the whole message, naming the file and what to do


@dataclass(frozen=True)
class ImportReport:
    imported: int  # new memories
    commit: str | None  # None when nothing changed
    paths: tuple[str, ...]  # memories written (new and updated)
    updated: int = 0
    unchanged: int = 0
    skipped: tuple[ImportSkip, ...] = ()
    attachments: tuple[str, ...] = ()  # non-Markdown files copied (new or changed)

    def summary(self, shown: int = 5) -> str:
        """One line: ``imported 5, updated 1, unchanged 3, skipped 1 (not UTF-8: a.md), ...``"""
        skipped = f"skipped {len(self.skipped)}"
        if self.skipped:
            named = [f"{s.reason}: {s.path}" for s in self.skipped[:shown]]
            if len(self.skipped) > shown:
                named.append(f"{len(self.skipped) - shown} more")
            skipped += f" ({'; '.join(named)})"
        return (
            f"imported {self.imported}, updated {self.updated}, unchanged {self.unchanged}, "
            f"{skipped}, attachments {len(self.attachments)}"
        )


@dataclass(frozen=True)
class ChangeEvent:
    """What a write changed, for subscribers (MCP notifications)."""

    changed: tuple[str, ...] = ()  # paths whose content changed
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    memories: tuple[MemoryInfo, ...] = ()  # records of the memories involved, when known


@dataclass(frozen=True)
class Problem:
    """Something wrong with a file or the vault, for ``doctor`` and logs."""

    path: str
    # malformed | binary | too_large | duplicate_id | duplicate_key | bad_date | uncommitted | ...
    kind: str
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
    deleted: tuple[str, ...] = ()  # paths this commit removed (also in ``files``)

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
class Change:
    """One memory's change in one commit: what ``memory_changes`` lists."""

    id: str  # the memory's id (Memvault-Id trailer, else its frontmatter then), else its path
    path: str
    op: str  # created | edited | moved | archived | deleted | reverted | superseded | purged
    who: str  # person (edited by hand) | memvault (a tool or command)
    name: str | None  # the person's git name, or the MCP client (None when not known)
    commit: str  # short sha
    time: str  # commit time, ISO 8601
    diff: str  # e.g. "+3 -1 lines; fields: status"
    old_path: str | None = None  # moves: the path before


@dataclass(frozen=True)
class ChangeFeed:
    """Changes newest first, the cursor to pass as ``since`` next time, and whether the
    limit left changes out (newer ones, after the cursor, when a ``since`` was given)."""

    changes: tuple[Change, ...]
    cursor: str | None  # the newest commit read (None in a repository without commits)
    more: bool


@dataclass(frozen=True)
class WriteResult:
    memory: Memory
    commit: str | None
    action: str  # created | updated | archived | deleted | purged | reverted | unchanged
    previous_revision: str | None = None
    erased: tuple[str, ...] = ()  # purge: the places the memory's text was erased from


@dataclass(frozen=True)
class Archival:
    """Memories forgotten together in one commit (a session's working memory, or what a
    filter matched): archived (their new versions), deleted or purged (as they were)."""

    commit: str | None
    memories: tuple[Memory, ...]
    mode: str = "archive"
    erased: tuple[str, ...] = ()  # purge: where the memories were erased from

    @property
    def action(self) -> str:
        """What happened: archived, deleted or purged; unchanged when nothing matched."""
        done = {"archive": "archived", "delete": "deleted", "purge": "purged"}
        return done.get(self.mode, self.mode) if self.memories else "unchanged"


@dataclass(frozen=True)
class RememberResult:
    action: Literal["created", "duplicate", "rejected"]
    memory: Memory | None
    commit: str | None
    similar: tuple[Similar, ...] = ()
    reason: str | None = None


def validity(meta: dict[str, Any], now: dt.datetime) -> str | None:
    """What to say of a fact ``now`` lies outside of (``valid_from``/``valid_until`` hide
    nothing, so a result says it): None while it holds, or without those dates."""
    until = str(meta.get("valid_until") or "").strip()
    if until and lapsed(until, now):
        return f"valid until {until}: may no longer hold"
    since = str(meta.get("valid_from") or "").strip()
    if since and not lapsed(since, now) and since[:10] != now.date().isoformat():
        return f"valid from {since}: does not hold yet"
    return None


def lapsed(expires: str | None, now: dt.datetime) -> bool:
    """True when ``expires`` lies before ``now``: a date alone lasts through that day, a
    naive time is in ``now``'s zone. Missing or unreadable: never lapses."""
    zone = now.tzinfo or dt.UTC
    text = (expires or "").strip()
    if not any(c in text for c in "Tt: "):  # a date alone (2026-12-31, 20261231)
        try:
            day = dt.date.fromisoformat(text.rstrip("Zz"))
        except ValueError:
            return False
        return now.date() > day  # in now's own zone
    moment = parse_time(text, naive_tz=zone)
    return moment is not None and moment < now


def last_seen(info: MemoryInfo, access: Access | None) -> dt.datetime | None:
    """When a memory was last returned to a client or changed, whichever is later (the
    "not accessed for N days" of forgetting); None when neither is known."""
    last = access.last_accessed if access else None
    times = [parse_time(t) for t in (info.updated or info.created, last)]
    known = [t for t in times if t is not None]
    return max(known) if known else None


@dataclass(frozen=True)
class ContextItem:
    """One memory (or profile field) in an assembled context, as one line of text."""

    id: str
    title: str
    text: str  # the line as rendered, id included
    tokens: int  # estimated tokens of ``text`` (see context.estimate_tokens)


@dataclass(frozen=True)
class ContextSection:
    """One section of a context: what was put in, and what matched but did not fit."""

    name: str  # profile | preferences | memories | episodes
    items: tuple[ContextItem, ...]
    tokens: int  # estimated tokens of the section's text (heading and items)
    left_out: tuple[ContextItem, ...] = ()


@dataclass(frozen=True)
class Context:
    """What memory knows that bears on a topic, within a token budget (build_context)."""

    topic: str
    budget_tokens: int
    text: str  # the sections rendered, with ids to cite
    sections: tuple[ContextSection, ...]
    used_tokens: int  # estimated tokens of ``text``
    # True only when what is always carried (heading, the whole profile, the left-out note)
    # is alone over the budget: then nothing else is put in
    over_budget: bool = False

    @property
    def ids(self) -> tuple[str, ...]:
        """The ids of every memory in the context, in order, each once."""
        return tuple(item.id for section in self.sections for item in section.items)

    @property
    def left_out(self) -> tuple[ContextItem, ...]:
        """What matched but was left out for the budget."""
        return tuple(item for section in self.sections for item in section.left_out)


# keys read in any case (and tags, aliases singular too); a person typing `Type: Episode`
# or `Importance: 0.9` means the type or the importance, though Obsidian's property keys
# are case-sensitive
SPELLINGS = {
    "tags": ("tags", "tag"),
    "aliases": ("aliases", "alias"),
    "type": ("type",),
    "status": ("status",),
    "importance": ("importance",),
    "confidence": ("confidence",),
}
# properties whose values are names, never links (``aliases: ["[[X]]"]`` is a name)
NOT_LINKS = frozenset((*SPELLINGS["tags"], *SPELLINGS["aliases"], "cssclasses", "cssclass"))


def spelling(meta: dict[str, Any], key: str) -> str:
    """The key a file writes ``key`` under: Obsidian reads ``tags`` and ``aliases`` in any
    case and singular too (``Tags:``, ``tag:``, ``ALIAS:``), memvault ``type``,
    ``status``, ``importance`` and ``confidence`` in any case (``Type:``); ``key`` itself
    when the file has it or none of them."""
    names = SPELLINGS.get(key, (key,))
    found = [k for k in meta if isinstance(k, str) and k.lower() in names]
    return key if key in found or not found else found[0]


def spelled(meta: dict[str, Any], key: str) -> list[Any]:
    """The values of every spelling of ``key`` in ``meta`` (see :func:`spelling`)."""
    names = SPELLINGS.get(key, (key,))
    return [v for k, v in meta.items() if isinstance(k, str) and k.lower() in names]


def as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip().lstrip("#") for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip().lstrip("#") for v in value if v is not None and str(v).strip()]
    return [str(value)]


def tag_list(value: Any) -> list[str]:
    """Tags as Obsidian reads them: a list, or one text of names separated by commas or
    spaces (``tags: travel work``: a tag holds no space)."""
    if isinstance(value, str):
        return [t for t in (part.lstrip("#") for part in re.split(r"[,\s]+", value)) if t]
    return as_str_list(value)


def as_unit(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if math.isnan(number):
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


def jsonable(value: Any) -> Any:
    """Frontmatter values made JSON-friendly (dates as ISO text)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value


__all__ = [
    "MEMORY_TYPES",
    "Access",
    "Archival",
    "ChangeEvent",
    "Commit",
    "Context",
    "ContextItem",
    "ContextSection",
    "Filters",
    "Hit",
    "ImportReport",
    "ImportSkip",
    "Memory",
    "MemoryInfo",
    "Page",
    "Problem",
    "Proposal",
    "RememberResult",
    "Similar",
    "Status",
    "WriteResult",
    "memory_count",
    "parse_time",
]
