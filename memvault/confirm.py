"""Confirmation of destructive forgetting.

What needs it: ``delete``, ``purge``, forgetting a profile field, and forgetting more than
one memory at once (a session scope), and anything a filter selects (even one memory: the
person sees the list first). Archiving one named memory is reversible and goes ahead.

How it is asked: through the host (MCP elicitation, or a terminal prompt) when whoever
runs the call can ask the person (:data:`current_asker`); otherwise the first call writes
nothing and returns a token bound to that exact operation (mode and the ids it forgets),
single use and valid for :data:`TOKEN_TTL`; the second call passes it back. Tokens are
kept in the process, per vault: a server session's memory, never a file or a commit.
The clock is the caller's (``service.clock``), so tests can move time.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfirmationError
from .models import memory_count

if TYPE_CHECKING:
    from .service import MemoryService

TOKEN_TTL = dt.timedelta(minutes=5)
PROFILE_FOLDER = "profile/"  # profile fields are memories under profile/ (memvault.profile)
SHOWN_PATHS = 5

# Asks the person a yes/no question: True confirmed, False declined, None could not ask.
Asker = Callable[[str], "bool | None"]
current_asker: ContextVar[Asker | None] = ContextVar("memvault_asker", default=None)

_MODES = {
    "archive": "archive (restorable)",
    "delete": "delete (git history keeps it)",
    "purge": "purge (erased from all git history)",
}


@dataclass(frozen=True)
class Operation:
    """One forget request, resolved: the memories it would forget and how."""

    mode: str
    ids: tuple[str, ...]
    paths: tuple[str, ...]
    scope: str | None = None
    selection: str | None = None  # forget(filter=...): the filter as given

    @property
    def destructive(self) -> bool:
        """Whether the person must confirm it first."""
        return (
            self.mode != "archive"
            or len(self.ids) > 1
            or self.selection is not None
            or any(p.startswith(PROFILE_FOLDER) for p in self.paths)
        )

    def describe(self) -> str:
        count = len(self.paths)
        shown = ", ".join(self.paths[:SHOWN_PATHS])
        more = f" and {count - SHOWN_PATHS} more" if count > SHOWN_PATHS else ""
        what = memory_count(count)
        of = f" of {self.scope}" if self.scope else ""
        of = f" matching {self.selection!r}" if self.selection is not None else of
        return f"forget {what}{of} by {_MODES.get(self.mode, self.mode)}: {shown}{more}"


@dataclass(frozen=True)
class Verdict:
    """Whether an operation may go ahead now; if not, why and the token to confirm it."""

    go: bool
    token: str | None = None
    note: str | None = None


class Tokens:
    """Single-use confirmation tokens, each bound to one operation, valid for ``ttl``."""

    def __init__(self, ttl: dt.timedelta = TOKEN_TTL) -> None:
        self.ttl = ttl
        self._pending: dict[str, tuple[Operation, dt.datetime]] = {}
        self._lock = threading.Lock()

    def mint(self, operation: Operation, now: dt.datetime) -> str:
        token = secrets.token_urlsafe(9)
        with self._lock:
            self._pending = {t: e for t, e in self._pending.items() if e[1] > now}
            self._pending[token] = (operation, now + self.ttl)
        return token

    def redeem(self, token: str, operation: Operation, now: dt.datetime) -> None:
        """Accept ``token`` for ``operation`` (once), or raise :class:`ConfirmationError`.
        A token is spent by any attempt, right or wrong."""
        again = "nothing was forgotten; call forget again without confirm for a new token"
        with self._lock:
            entry = self._pending.pop(token.strip(), None)
        if entry is None:
            raise ConfirmationError(f"confirmation token {token!r} is unknown or used: {again}")
        bound, expires = entry
        if now >= expires:
            minutes = int(self.ttl.total_seconds() // 60)
            raise ConfirmationError(
                f"confirmation token {token!r} expired (tokens last {minutes} minutes): {again}"
            )
        if (bound.mode, sorted(bound.ids)) != (operation.mode, sorted(operation.ids)):
            raise ConfirmationError(
                f"confirmation token {token!r} was given to {bound.describe()}, "
                f"not to {operation.describe()}: {again}"
            )


_tokens: dict[Path, Tokens] = {}
_tokens_lock = threading.Lock()


def tokens(service: MemoryService) -> Tokens:
    """The confirmation tokens of this vault in this process."""
    with _tokens_lock:
        return _tokens.setdefault(Path(service.root), Tokens())


def resolve(
    service: MemoryService,
    id_or_path: str | None,
    mode: str,
    scope: str | None = None,
    selection: str | None = None,
) -> Operation:
    """The memories a forget request names: one memory, a session scope's memories, or
    every memory a filter selects (memvault.selection)."""
    if selection is not None:
        from .selection import parse

        infos = sorted(service.records(parse(selection)), key=lambda i: i.path)
        if mode == "archive":  # archiving an archived memory again would only rewrite it
            infos = [i for i in infos if i.status != "archived"]
        ids, paths = tuple(i.id for i in infos), tuple(i.path for i in infos)
        return Operation(mode, ids, paths, selection=selection.strip())
    if scope is not None:
        from .lifecycle import session_members

        infos = session_members(service, scope)
        ids, paths = tuple(i.id for i in infos), tuple(i.path for i in infos)
        return Operation(mode, ids, paths, scope.strip())
    if mode == "purge":  # also a memory whose file is gone but whose history stays
        from .purging import target

        memory = target(service, id_or_path or "")[0]
    else:
        memory = service.get(id_or_path or "")
    return Operation(mode, (memory.id,), (memory.path,))


def gate(service: MemoryService, operation: Operation, token: str | None) -> Verdict:
    """Whether ``operation`` may go ahead: a token given back is checked (and spent);
    otherwise destructive forgetting asks the person when the caller can, else returns a
    token to confirm with."""
    if token:
        tokens(service).redeem(token, operation, service.clock())
        return Verdict(True)
    if not operation.destructive or not operation.ids:
        return Verdict(True)
    asker = current_asker.get()
    answer = asker(f"Confirm: {operation.describe()}?") if asker else None
    if answer is True:
        return Verdict(True)
    if answer is False:
        return Verdict(False, note="the user declined: nothing was forgotten")
    minted = tokens(service).mint(operation, service.clock())
    minutes = int(TOKEN_TTL.total_seconds() // 60)
    note = (
        f"not done yet: {operation.describe()}. Ask the user; if they agree, call forget "
        f"again with the same arguments and confirm={minted!r} (valid {minutes} minutes)"
    )
    return Verdict(False, token=minted, note=note)
