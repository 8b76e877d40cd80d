"""Reports over a vault: status, export, and the aggregate views an agent reads first
(memory://index, preferences, recent, profile: its fields, then stable facts). What each
view shows is decided here; ``views`` renders the text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from . import profile, proposals, syncing, views
from .errors import InvalidInputError, MemvaultError
from .models import ChangeEvent, MemoryInfo, Problem, Status, jsonable, type_key
from .note import strip_title, timestamp
from .retrieval import CATCHING_UP

if TYPE_CHECKING:
    from .service import MemoryService

INDEX, PREFERENCES, RECENT, PROFILE = (
    "memory://index",
    "memory://preferences",
    "memory://recent",
    "memory://profile",
)
AGGREGATES = (INDEX, PREFERENCES, RECENT, PROFILE)
RECENT_COUNT = 20
PROFILE_IMPORTANCE = 0.7


def status(service: MemoryService, wait_for_embedder: float | None = None) -> Status:
    """Counts by type, problems, uncommitted files, last commits, index and embedder state."""
    if wait_for_embedder:
        service.index.loader.get(timeout=wait_for_embedder)
    with ThreadPoolExecutor(2) as git:  # two git processes run while the folder is walked
        uncommitted = git.submit(service.history.uncommitted)
        commits = git.submit(service.history.log, limit=5)
        memories, problems = service.indexing.census()
        by_type = Counter(type_key(m.type) for m in memories)  # RECIPE, recipe: one
        return Status(
            vault=str(service.root),
            memories=len(memories),
            by_type=dict(sorted(by_type.items())),
            archived=sum(1 for m in memories if m.status == "archived"),
            problems=len(problems),
            uncommitted=len(uncommitted.result()),
            last_commits=[c.brief() for c in commits.result()],
            index=service.index_status(),
            conflicts=[m.path for m in memories if m.status == "conflict"],
            sync=syncing.last_sync(service),
            proposals=proposals.waiting(service),
        )


def export(service: MemoryService) -> dict[str, Any]:
    """Every memory (profile fields too: they are memories) with metadata, body and its
    full version history, newest first, the file's text at each commit (one git log for
    the whole vault, the texts in two git calls): "export everything about me", as a JSON
    document for a person or another tool."""
    memories, problems = service.vault.scan()
    commits = service.history.log()
    histories = [service.history.history_of(m.path, commits) for m in memories]
    texts = iter(service.history.texts_at([(c.sha, p) for h in histories for c, p in h]))
    out = []
    for memory, history in zip(memories, histories, strict=True):
        out.append(
            {
                **memory.summary(),
                "meta": jsonable(memory.meta),
                "body": memory.body,
                "history": [c.brief() | {"path": p, "text": next(texts)} for c, p in history],
            }
        )
    return {
        "vault": str(service.root),
        "exported": service.clock().isoformat(),
        "memories": out,
        "problems": [_problem(service, p) for p in problems],
    }


def _problem(service: MemoryService, problem: Problem) -> dict[str, Any]:
    """A problem of the export; a note that is not UTF-8 comes with its text (the bytes
    that do not decode shown replaced): it is the person's too, not only a warning."""
    out = asdict(problem)
    # gone or changed into something else since the scan: the problem stays, without text
    with suppress(MemvaultError, OSError):
        if problem.kind == "encoding":
            out["text"] = service.vault.read_text(problem.path)
    return out


# -- aggregate views ------------------------------------------------------------
def aggregate(service: MemoryService, uri: str) -> str:
    """The text of one aggregate resource, from the index records of active memories;
    while the index is still catching up with the files, its second line says so (an
    empty list then is not an empty vault)."""
    caught_up = service.ensure_synced(wait=False)
    text = _aggregate(service, uri)
    if caught_up:
        return text
    head, _, rest = text.partition("\n")
    return f"{head}\n({CATCHING_UP}: this may be incomplete; read it again shortly)\n{rest}"


def _aggregate(service: MemoryService, uri: str) -> str:
    active = service.records()
    if uri == INDEX:
        return views.index_view(active)
    if uri == PREFERENCES:
        prefs = sorted((d for d in active if d.type == "preference"), key=lambda d: -d.importance)
        empty = "No preferences remembered yet."
        return views.section_view("The user's preferences", _items(service, prefs), empty)
    if uri == RECENT:
        newest = sorted(active, key=lambda d: (timestamp(d.updated), d.id), reverse=True)
        recent = newest[:RECENT_COUNT]  # same second: the later id (ids grow with time) first
        items = _items(service, recent, 300)
        return views.section_view("Recently changed memories", items, "No memories yet.")
    if uri == PROFILE:
        facts = [d for d in active if is_profile(d) and not profile.is_field_path(d.path)]
        facts.sort(key=lambda d: -d.importance)
        empty = "No other stable facts yet."
        about = views.section_view("Stable facts about the user", _items(service, facts), empty)
        return profile.view(service) + "\n" + about
    raise InvalidInputError(f"unknown resource {uri}: use one of {', '.join(AGGREGATES)}")


def is_profile(info: MemoryInfo) -> bool:
    """A stable fact about the user: important, tagged ``profile``, or in a ``user:`` scope."""
    return info.type == "fact" and (
        info.importance >= PROFILE_IMPORTANCE
        or "profile" in info.tags
        or any(s.startswith("user:") for s in info.scope)
    )


def affected(event: ChangeEvent) -> tuple[str, ...]:
    """The aggregates a change may alter, decided from the event alone (no rendering).

    The index and the recent list can change with any memory (a write makes it the
    newest); preferences only with a preference, the profile only with a fact that is or
    was a profile fact (importance, ``profile`` tag, ``user:`` scope: the records hold the
    memory before and after the change). Without records (edits by a person, imports)
    every aggregate may have changed.
    """
    if not event.memories:
        return AGGREGATES
    uris = [INDEX, RECENT]
    if any(m.type == "preference" for m in event.memories):
        uris.append(PREFERENCES)
    if any(is_profile(m) for m in event.memories):
        uris.append(PROFILE)
    return tuple(uris)


def _items(
    service: MemoryService, infos: Sequence[MemoryInfo], width: int = 1000
) -> list[tuple[str, str, str]]:
    """(title, id, text) of the first memories, enough to fill a section's size budget."""
    out = []
    for info in infos[: views.SECTION_ITEMS]:
        try:
            memory = service.vault.read(info.path)
        except MemvaultError:
            continue
        text = strip_title(memory.readable)
        out.append((memory.title, memory.id, text if len(text) <= width else text[:width] + "…"))
    return out
