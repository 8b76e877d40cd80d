"""Purge: erase a memory from the files, all of git history and every index structure
(privacy requests). The user is told that remotes and clones keep their copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import recovery
from .models import ChangeEvent, WriteResult

if TYPE_CHECKING:
    from .service import MemoryService


def purge(service: MemoryService, id_or_path: str, reason: str | None) -> WriteResult:
    """Delete the file, rewrite history without it, erase it from the index and catalog."""
    with service._writing():
        memory = service.get(id_or_path)
        names = service.history.names_in_history(memory.path)
        # filter-branch needs a clean tree: commit the person's edits first
        recovery.commit_leftovers(service.vault, service.history, service._op_trailers)
        service.vault.delete(memory.path)
        service.history.commit(
            [memory.path],
            f"forget: {memory.id} (purge)",
            service._trailers("forget-purge", memory.id),
        )
        rewritten = service.history.purge(names)
        from .proposals import drop_worktrees  # here: proposals builds on the service

        drop_worktrees(service)  # checked out before the rewrite: they may hold the memory
        trailers = service._trailers("purge", memory.id)
        if reason:
            trailers["Memvault-Reason"] = reason
        sha = service.history.commit_empty(
            f"purge: memory {memory.id} erased from history", trailers
        )
    erased = [f"git history ({rewritten} commits rewritten)", *service.index.erase([memory.id])]
    erased += service.access.erase([memory.id])
    service.vault.id_map()  # rewrites the id catalog without the purged path
    erased.append("id catalog")
    service._notify(ChangeEvent(changed=(memory.path,), removed=(memory.path,)), memory)
    return WriteResult(memory, sha, "purged", erased=tuple(erased))
