"""Change notifications for both protocol generations.

The service calls ``Notifier.on_change`` on the writer's thread. Which URIs a change
touches is decided from the change itself (its paths, and ``reports.affected`` for the
aggregate views): nothing is rendered or read there, so a write never waits on
notifications. The sending happens on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from .. import changes, reports
from ..errors import MemvaultError
from ..models import ChangeEvent
from .resources import NOTE_PREFIX, note_uri

log = logging.getLogger(__name__)


def changed_uris(event: ChangeEvent) -> list[str]:
    """The resources a change may alter: its notes (by path, and by id for the memories the
    event names), the aggregates its memories feed, and the changes (every write is a
    commit)."""
    if not (event.changed or event.added or event.removed):
        return [changes.URI]  # a commit of edits already announced (the watcher's)
    notes = [note_uri(p) for p in [*event.changed, *event.removed]]
    notes += [note_uri(m.id) for m in event.memories if m.id]
    return [*dict.fromkeys(notes), *reports.affected(event), changes.URI]


class Notifier:
    """Bridges service change events (any thread) to MCP notifications on the event loop.

    2026-07-28 clients listen through the SubscriptionBus; 2025-11-25 clients
    get notifications on their connection: list_changed once initialized,
    resources/updated for the URIs they subscribed to with resources/subscribe.
    Each connection is attached once (the SDK builds a new session proxy per
    request) and forgotten when it closes. The server's lifespan gives the loop.

    A memory is read as ``memory://note/<path>`` or ``memory://note/<id>``. A write by
    memvault names the memory, so both forms are notified; a change seen only by its paths
    (a person's edit, a sync) reaches a 2025-11-25 subscriber of the other form through
    ``_aliases``: each such URI and the note URI its memory was last found at (``locate``,
    the memory's path; looked up again after each change it was notified of).
    """

    def __init__(
        self,
        bus: InMemorySubscriptionBus,
        locate: Callable[[str], str] | None = None,
        proposing: bool = False,
    ) -> None:
        self.bus = bus
        self.locate = locate
        self.proposing = proposing  # a note not in the vault may be a client's proposal
        self.loop: asyncio.AbstractEventLoop | None = None
        self._legacy: dict[str, set[Any]] = {}
        self._aliases: dict[str, str | None] = {}
        self._connections: set[Any] = set()
        self._lock = threading.Lock()

    @property
    def attached(self) -> int:
        """How many client connections receive notifications on their own channel."""
        with self._lock:
            return len(self._connections)

    @asynccontextmanager
    async def serving(self, server: Any) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: changes are sent from its loop as soon as it serves, to
        a client that only listens or reads as well (before, the loop was learnt from a
        first tool call, and a person's edit was announced to nobody until then)."""
        self.loop = asyncio.get_running_loop()
        yield {}

    def attach(self, session: Any) -> None:
        """Remember the running loop and the session's connection (for list_changed)."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        connection = _connection(session)
        with self._lock:
            if connection in self._connections:
                return
            self._connections.add(connection)
        connection.exit_stack.callback(self.detach, connection)

    def detach(self, connection: Any) -> None:
        """Forget a closed connection and its subscriptions."""
        with self._lock:
            self._connections.discard(connection)
            for subscribers in self._legacy.values():
                subscribers.discard(connection)
            self._forget_aliases()

    async def subscribe(self, uri: str, session: Any) -> None:
        """Follow ``uri`` for the session's connection; a URI that names no resource of this
        server is refused (-32602), not followed in silence for ever (in proposal mode a
        note not in the vault may be the client's proposal, followed until accepted)."""
        target = await self._where(uri)
        note, views = uri.startswith(NOTE_PREFIX), (*reports.AGGREGATES, changes.URI)
        if target is None:  # no memory: followed only where it may be a waiting proposal
            known = note and self.proposing
        else:
            known = target.startswith(NOTE_PREFIX) or target in views
        if not known:
            raise MCPError(INVALID_PARAMS, _unknown(uri, note))
        self.attach(session)
        with self._lock:
            self._legacy.setdefault(uri, set()).add(_connection(session))
            if target != uri and uri.startswith(NOTE_PREFIX):
                self._aliases[uri] = target

    def unsubscribe(self, uri: str, session: Any) -> None:
        with self._lock:
            self._legacy.get(uri, set()).discard(_connection(session))
            self._forget_aliases()

    def _forget_aliases(self) -> None:
        """Under the lock: stop following the memories nobody subscribes to any more."""
        self._aliases = {a: t for a, t in self._aliases.items() if self._legacy.get(a)}

    def on_change(self, event: ChangeEvent) -> None:
        """Service listener: decide the URIs from the event, send from the loop."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        coro = self._send(changed_uris(event), bool(event.added or event.removed))
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.create_task(coro)
        else:
            asyncio.run_coroutine_threadsafe(coro, loop)

    async def _where(self, uri: str) -> str | None:
        """The note URI, by path, of the memory a ``memory://note/`` URI names, if any."""
        if self.locate is None or not uri.startswith(NOTE_PREFIX):
            return uri
        locate, name = self.locate, unquote(uri.removeprefix(NOTE_PREFIX))
        try:
            return note_uri(await anyio.to_thread.run_sync(lambda: locate(name)))
        except (MemvaultError, OSError):
            return None

    async def _aliased(self, uris: list[str]) -> list[str]:
        """The subscribed aliases of ``uris``' notes, found again where they are now."""
        with self._lock:
            hit = [a for a, target in self._aliases.items() if target in uris or a in uris]
        for alias in hit:  # the memory may have moved (archived, renamed)
            target = await self._where(alias)
            with self._lock:
                if alias in self._aliases:
                    self._aliases[alias] = target
        return [alias for alias in hit if alias not in uris]

    async def _send(self, uris: list[str], list_changed: bool) -> None:
        uris = [*uris, *await self._aliased(uris)]
        for uri in uris:
            await self.bus.publish(ResourceUpdated(uri=uri))
            with self._lock:
                connections = list(self._legacy.get(uri, ()))
            for connection in connections:
                await self._safely(connection.send_resource_updated(uri), connection)
        if list_changed:
            await self.bus.publish(ResourcesListChanged())
            with self._lock:
                connections = list(self._connections)
            for connection in connections:
                await self._safely(connection.send_resource_list_changed(), connection)

    async def _safely(self, coro: Any, connection: Any) -> None:
        try:
            await coro
        except Exception as exc:  # a broken connection must not stop the others
            log.debug("dropping connection after failed notification: %s", exc)
            self.detach(connection)


def _unknown(uri: str, note: bool) -> str:
    what = "no memory is" if note else "this server has no resource"
    return (
        f"not_found: {what} at {uri}: read memory://index for the memories there are; to "
        f"hear of new ones, subscribe to {changes.URI}"
    )


def _connection(session: Any) -> Any:
    """The connection behind a per-request ServerSession proxy.

    The SDK keeps it private (``ServerSession._connection``); the list_changed
    test in tests/test_trust_adapters.py fails loudly if that changes.
    """
    return session._connection


def register_legacy_subscriptions(server: MCPServer, notifier: Notifier) -> None:
    """resources/subscribe + unsubscribe for 2025-11-25 clients, and the capabilities
    that say we send resources list_changed (MCPServer advertises false by default).

    MCPServer has no public hook for these; this is the one place that reaches
    into the SDK's private ``_lowlevel_server`` (tests/test_server.py fails
    loudly if the SDK changes it).
    """
    import mcp.types as mt
    from mcp.server.lowlevel import NotificationOptions

    lowlevel = server._lowlevel_server

    async def on_subscribe(ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        await notifier.subscribe(str(params.uri), ctx.session)
        return mt.EmptyResult()

    async def on_unsubscribe(ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        notifier.unsubscribe(str(params.uri), ctx.session)
        return mt.EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", mt.SubscribeRequestParams, on_subscribe)
    lowlevel.add_request_handler(
        "resources/unsubscribe", mt.UnsubscribeRequestParams, on_unsubscribe
    )

    async def on_initialized(ctx: Any, params: mt.NotificationParams) -> None:
        notifier.attach(ctx.session)  # list_changed from the start, not from a first tool call

    lowlevel.add_notification_handler(
        "notifications/initialized", mt.NotificationParams, on_initialized
    )
    initialization_options = lowlevel.create_initialization_options

    def with_list_changed(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        options = notification_options or NotificationOptions(resources_changed=True)
        return initialization_options(options, *args, **kwargs)

    lowlevel.create_initialization_options = with_list_changed  # type: ignore[method-assign]
