"""The memory lifecycle beyond single writes: consolidation (the policy's plan over the
index records, applied through the service one commit per step, archive never delete, so
every step can be reverted), forgetting a session's working memory at once, and the
forgetting policy run on a schedule by ``serve`` when the vault asks for it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from . import guard, policy, purging, validate
from .errors import InvalidInputError, MemvaultError
from .models import (
    EVERY,
    Archival,
    ChangeEvent,
    Filters,
    Memory,
    MemoryInfo,
    Proposal,
    memory_count,
)
from .note import strip_title
from .profile import is_field_path

if TYPE_CHECKING:
    from .service import MemoryService

log = logging.getLogger(__name__)

SESSION_PREFIX = "session:"


def consolidate(service: MemoryService, dry_run: bool = True) -> list[Proposal]:
    """Proposals per policy; applied (one commit each) when ``dry_run`` is False."""
    now = service.clock()
    infos = service.records(Filters(include_expired=True))
    # the retrieval's: a proposing client's judges the vault's vectors (proposals._Judging)
    # a profile field (profile/<field>.md) is set_profile's: never merged away by another
    # field or memory that happens to say the same (name and preferred_name: "Ada")
    fields = {i.id for i in infos if is_field_path(i.path)}
    pairs = [
        (a, b, cosine)
        for a, b, cosine in service.retrieval.pairs_above(policy.RELATED_COSINE)
        if a not in fields and b not in fields
    ]
    close = policy.related_pairs({i.id: i for i in infos}, pairs)
    memories = _read(service, {m.id: m for a, b, _ in close for m in (a, b)}.values())
    texts = {i: strip_title(m.body) for i, m in memories.items()}
    corrected = _corrected(service, memories)
    access = service.access.of(i.id for i in infos)
    rules = {t: hard_forget(service, t) for t in {i.type for i in infos}}
    proposals = policy.plan_consolidation(infos, pairs, texts, now, access, rules, corrected)
    if dry_run:
        return proposals
    return [_apply(service, proposal) for proposal in proposals]


def hard_forget(service: MemoryService, memory_type: str) -> policy.HardForget:
    """The hard-forgetting rule of one memory type (``[types.<type>]`` overrides)."""
    settings = service.settings.for_type(memory_type)
    return policy.HardForget(settings.hard_forget_days, settings.hard_forget_confidence)


def forget_by_policy(service: MemoryService) -> list[Proposal]:
    """Apply only the archives the policy proposes (expired, long unused and doubtful),
    one commit each; merges and supersessions wait for someone to ask."""
    archives = [p for p in consolidate(service, dry_run=True) if p.kind == "archive"]
    return [_apply(service, proposal) for proposal in archives]


def schedule(service: MemoryService, stop: threading.Event) -> threading.Thread | None:
    """Run :func:`forget_by_policy` every ``consolidate_every_hours`` until ``stop`` is set
    (a daemon thread); None when the vault leaves it off (the default)."""
    hours = service.settings.consolidate_every_hours
    if hours <= 0:
        return None

    def run() -> None:
        while not stop.wait(hours * 3600):
            try:
                applied = forget_by_policy(service)
            except Exception:  # a failed round must not end the schedule
                log.exception("scheduled forgetting failed")
                continue
            log.info("scheduled forgetting archived %d memories", len(applied))

    thread = threading.Thread(target=run, name="memvault-forgetting", daemon=True)
    thread.start()
    return thread


def forget_scope(
    service: MemoryService,
    scope: str,
    reason: str | None = None,
    confirmed: Sequence[str] | None = None,
) -> Archival:
    """Archive every active memory of a working-memory scope (``session:<id>``) in one
    commit. More than one memory at once: the MCP tool and the CLI confirm it first
    (memvault.confirm), and pass the ids the person confirmed as ``confirmed``: a memory
    that joined the session while they were asked is not archived with the others."""
    label = _session_scope(scope)
    ids = [i.id for i in session_members(service, label)]
    if confirmed is not None:
        ids = [i for i in ids if i in set(confirmed)]
    return forget_many(service, ids, "archive", reason, {"Memvault-Scope": label}, label)


def forget_selected(
    service: MemoryService, ids: Sequence[str], mode: str, reason: str | None, selection: str
) -> Archival:
    """Forget what ``forget(filter=...)`` selected and the person confirmed (those ids, not
    a new reading of the filter); the filter goes into the commit, except for a purge."""
    trailers = {"Memvault-Filter": " ".join(selection.split())}
    return forget_many(service, ids, mode, reason, trailers, f"filter {selection.strip()!r}")


def forget_many(
    service: MemoryService,
    ids: Sequence[str],
    mode: str,
    reason: str | None,
    trailers: dict[str, str],
    label: str,
) -> Archival:
    """Forget the memories ``ids`` (a confirmed operation's) by archive or delete in one
    commit, or by purge in one history rewrite; ``label`` names the set in the subject."""
    guard.check_forget(mode, reason)
    if mode == "purge":
        return purging.purge_many(service, ids, reason)
    with service._writing():
        memories = [service.get(i) for i in ids]
        if not memories:
            return Archival(None, (), mode)
        moves: list[tuple[Memory, str | None]]
        if mode == "delete":
            moves = [(m, _delete(service, m)) for m in memories]
        else:
            moves = [(m, service._archive_file(m, reason)) for m in memories]
        trailers = service._trailers(f"forget-{mode}", None) | trailers
        if reason:
            trailers["Memvault-Reason"] = reason
        paths = list(dict.fromkeys(p for m, new in moves for p in (m.path, new) if p))
        subject = f"forget: {memory_count(len(memories))} of {label} ({mode})"
        sha = service.history.commit(paths, subject, trailers)
    fresh = [service.vault.read(new) for _, new in moves if new]
    service.indexing.upsert(fresh)
    gone = [m.id for m, new in moves if not new]
    if gone:
        service.index.remove(gone)
    event = ChangeEvent(
        changed=tuple(paths),
        added=tuple(new for m, new in moves if new and new != m.path),
        removed=tuple(m.path for m, new in moves if new != m.path),
    )
    service._notify(event, *memories)
    return Archival(sha, tuple(fresh) if mode == "archive" else tuple(memories), mode)


def session_members(service: MemoryService, scope: str) -> list[MemoryInfo]:
    """The active memories of a working-memory scope (``session:<id>``)."""
    label = _session_scope(scope)
    infos = service.records(Filters(scope=(label,), include_expired=True))
    return [i for i in infos if label in i.scope]


def _session_scope(scope: str) -> str:
    label = validate.label("scope", scope.strip())
    if not label.startswith(SESSION_PREFIX) or label == SESSION_PREFIX:
        raise InvalidInputError(
            f"scope {scope!r} is not a working-memory scope: forgetting by scope takes "
            f"{SESSION_PREFIX}<id> (forget other memories one id at a time)"
        )
    return label


def _delete(service: MemoryService, memory: Memory) -> str | None:
    """Delete a memory's file (no commit; git history keeps it): it has no new path."""
    service.vault.delete(memory.path)
    return None


def _read(service: MemoryService, infos: Iterable[MemoryInfo]) -> dict[str, Memory]:
    """The memories in close pairs, by id; unreadable ones are left out."""
    out = {}
    for info in infos:
        try:
            out[info.id] = service.vault.read(info.path)
        except MemvaultError:
            continue
    return out


def _corrected(service: MemoryService, memories: dict[str, Memory]) -> policy.Corrected:
    """What each of ``memories`` corrected: (path, text) of the memories it superseded,
    named by its own ``supersedes:`` or by their ``superseded_by:`` (a consolidation's)."""
    out: dict[str, dict[str, tuple[str, str]]] = {i: {} for i in memories}
    for memory in memories.values():
        for old_id in _ids(memory.meta.get("supersedes")):
            try:
                old = service.get(old_id)
            except MemvaultError:
                continue
            out[memory.id][old.id] = (old.path, strip_title(old.body))
    if memories:
        everything = service.records(EVERY)
        superseded = [
            i
            for i in everything
            if i.status == "superseded" and _names_any(service, i.path, memories.keys())
        ]
        for old in _read(service, superseded).values():
            by = str(old.meta.get("superseded_by") or "")
            if by in out:
                out[by][old.id] = (old.path, strip_title(old.body))
    return {i: tuple(found.values()) for i, found in out.items() if found}


def _names_any(service: MemoryService, path: str, ids: Iterable[str]) -> bool:
    """Whether the file's bytes hold one of ``ids`` at all: only those are parsed (a
    superseded memory names the one that replaced it; most name none of a few)."""
    try:
        data = service.vault.read_regular(path)
    except MemvaultError:
        return False
    return any(i.encode() in data for i in ids)


def _ids(value: object) -> list[str]:
    """A ``supersedes:`` value (a list of ids, or one id) as ids."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if str(v).strip()]
    return []


def _apply(service: MemoryService, proposal: Proposal) -> Proposal:
    """One proposal as one commit named for what it does (``merge:``, ``supersede:``,
    ``archive:``), if it still holds now (see :func:`_why_not`)."""
    try:
        why_not = _why_not(service, proposal)
        if why_not:
            return replace(proposal, reason=f"{proposal.reason} (not applied: {why_not})")
        if proposal.kind in ("merge", "supersede"):
            keep, drop = proposal.ids
            fields = {"status": "superseded", "superseded_by": keep}
            result = service.update(drop, fields=fields, op=proposal.kind)
        else:
            result = service.forget(proposal.ids[0], "archive", proposal.reason, op="archive")
    except MemvaultError as exc:
        return replace(proposal, reason=f"{proposal.reason} (not applied: {exc})")
    return replace(proposal, applied=True, commit=result.commit)


def _why_not(service: MemoryService, proposal: Proposal) -> str | None:
    """Why a step must not be applied now, or None. The files are read again: a person,
    another process or an earlier step may have changed them since the plan was made.
    A merge or supersession needs both memories still active, and never supersedes what
    the user stated (``source: user``) without them; an archive needs the policy's verdict
    to hold still (a person may have moved ``expires`` on meanwhile)."""
    memories = [service.get(i) for i in proposal.ids]
    for memory in memories:
        if memory.status != "active" or memory.path.startswith("archive/"):
            return f"{memory.path} is {memory.status} now; consolidate again"
    if proposal.kind == "archive":
        (memory,) = memories
        access = service.access.of([memory.id]).get(memory.id)
        rule = hard_forget(service, memory.type)
        if policy.forget_verdict(memory.info(), service.clock(), access, rule) is None:
            return f"{memory.path} changed since the plan and is no longer to archive"
        return None
    keep, drop = proposal.ids
    if str(memories[1].meta.get("source") or "") == "user":
        return (
            f"the user stated it: to confirm, remember the text of {proposal.paths[0]} "
            f"again with supersedes=[{keep!r}, {drop!r}], so that both point at it"
        )
    return None
