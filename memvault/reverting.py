"""Reverting a memory to the text it had at a past commit, as a new commit: its bytes
exactly as committed (line endings, encoding), where the memory is now (a person may
have moved it), never over another memory that took its path, and not at all when the
file holds that version already."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from . import guard
from .errors import MemoryNotFoundError
from .models import ChangeEvent, WriteResult
from .vault import content_hash

if TYPE_CHECKING:
    from .service import MemoryService


def revert(service: MemoryService, id_or_path: str, rev: str) -> WriteResult:
    """Restore a memory's text as it was at ``rev``, as a new commit."""
    with service._writing():
        path = service.history_path(id_or_path)
        sha_rev = service.history.resolve(rev)
        path_then = service.history.path_at(path, sha_rev)
        old_text = service.history.file_bytes(sha_rev, path_then)
        ident = guard.check_revert(service.settings, path, path_then, old_text, sha_rev)
        if ident and not service.vault.abspath(path).exists():  # moved since by a person?
            with contextlib.suppress(MemoryNotFoundError):  # then revert it where it is
                path = service._locate(ident)
        current = service.vault.read(path) if service.vault.abspath(path).exists() else None
        previous = current.content_hash if current else None
        guard.check_revert_over(path, current, ident, sha_rev, path_then)
        if current and previous == content_hash(old_text):  # already so: left alone
            return WriteResult(current, None, "unchanged", previous_revision=previous)
        service.vault.write(path, old_text, expected_hash=previous or "")
        restored = service.vault.read(path)
        sha = service.history.commit(
            [path], f"revert: {path} to {sha_rev[:7]}", service._trailers("revert", restored.id)
        )
    service.indexing.upsert([restored])
    service._notify(ChangeEvent(changed=(path,), added=() if previous else (path,)), restored)
    return WriteResult(restored, sha, "reverted", previous_revision=previous)
