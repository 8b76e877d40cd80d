"""Consolidation: the policy's plan (pure) over the index records, applied through the
service (one commit per step, archive never delete, so every step can be reverted)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from . import policy
from .errors import MemvaultError
from .models import MemoryInfo, Proposal
from .note import strip_title

if TYPE_CHECKING:
    from .service import MemoryService


def consolidate(service: MemoryService, dry_run: bool = True) -> list[Proposal]:
    """Proposals per policy; applied (one commit each) when ``dry_run`` is False."""
    now = service.clock()
    infos = service.records()
    pairs = service.index.pairs_above(policy.RELATED_COSINE)
    close = policy.related_pairs({i.id: i for i in infos}, pairs)
    texts = _texts(service, {m.id: m for a, b, _ in close for m in (a, b)}.values())
    expires = {i.id: _expires(service, i) for i in infos if i.type == "task"}
    proposals = policy.plan_consolidation(infos, pairs, texts, expires, now)
    if dry_run:
        return proposals
    return [_apply(service, proposal) for proposal in proposals]


def _texts(service: MemoryService, infos: Iterable[MemoryInfo]) -> dict[str, str]:
    """Bodies (without title) of the memories in close pairs; unreadable ones are left out."""
    out = {}
    for info in infos:
        try:
            out[info.id] = strip_title(service.vault.read(info.path).body)
        except MemvaultError:
            continue
    return out


def _expires(service: MemoryService, info: MemoryInfo) -> str | None:
    try:
        value = service.vault.read(info.path).meta.get("expires")
    except MemvaultError:
        return None
    return None if value is None else str(value)


def _apply(service: MemoryService, proposal: Proposal) -> Proposal:
    try:
        if proposal.kind in ("merge", "supersede"):
            keep, drop = proposal.ids
            fields = {"status": "superseded", "superseded_by": keep}
            result = service.update(drop, fields=fields)
        else:
            result = service.forget(proposal.ids[0], "archive", proposal.reason)
    except MemvaultError as exc:
        return replace(proposal, reason=f"{proposal.reason} (not applied: {exc})")
    return replace(proposal, applied=True, commit=result.commit)
