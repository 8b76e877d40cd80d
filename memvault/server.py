"""MCP server: a thin adapter from MCP tools/resources/prompts to MemoryService.

Logs go to stderr only: over stdio, one stray byte on stdout breaks the protocol.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from . import __version__, lifecycle, reports
from .errors import MemvaultError, explain_unexpected
from .models import Memory, jsonable, parse_time
from .service import ChangeEvent, Filters, MemoryService, current_client
from .text import warm_up

log = logging.getLogger(__name__)
T = TypeVar("T")

NOTE_PREFIX = "memory://note/"
AGGREGATES = {
    "memory://index": "Compact list of the most important and recent memories "
    "(<= 50 lines of <= 80 characters, about 4 KB). Read it at the start of a task.",
    "memory://preferences": "The user's preferences, most important first.",
    "memory://recent": "The 20 most recently changed memories.",
    "memory://profile": "Stable facts about the user (important facts, `profile` tag, "
    "`user:` scope).",
}
INSTRUCTIONS = """memvault is the user's long-term memory: Markdown files they can read and edit,
with every change committed to git. At the start of a task, read memory://index (or call
`recall` with the topic) to learn the user's preferences and facts. When the user states a
preference, a fact about themselves or their work, or a decision, call `remember` once per
item. When something you remembered turns out wrong, call `update_memory` (or `remember` with
`supersedes`). Never store secrets. Nothing is lost: every change can be reverted."""


def note_uri(path: str) -> str:
    return NOTE_PREFIX + quote(path, safe="/")


# -- structured outputs -------------------------------------------------------
class SimilarOut(BaseModel):
    id: str
    path: str
    title: str
    cosine: float
    relation: str = Field(description="duplicate | possible_contradiction | related")


class RememberOut(BaseModel):
    id: str | None
    path: str | None
    uri: str | None
    action: Literal["created", "duplicate", "rejected"]
    commit: str | None
    similar: list[SimilarOut]
    reason: str | None = None


class RecallHit(BaseModel):
    id: str
    path: str
    uri: str
    title: str
    type: str
    tags: list[str]
    snippet: str
    score: float
    why: dict[str, Any]
    created: str | None
    updated: str | None


class RecallOut(BaseModel):
    results: list[RecallHit]
    count: int


class MemoryOut(BaseModel):
    id: str
    path: str
    uri: str
    title: str
    type: str
    tags: list[str]
    status: str
    importance: float
    confidence: float
    created: str | None
    updated: str | None
    revision: str = Field(description="pass as expected_revision to update_memory")
    meta: dict[str, Any]
    body: str
    problems: list[str]


class MemorySummary(BaseModel):
    id: str
    path: str
    title: str
    type: str
    tags: list[str]
    status: str
    importance: float
    updated: str | None


class ListOut(BaseModel):
    memories: list[MemorySummary]
    total: int
    next_cursor: str | None


class WriteOut(BaseModel):
    id: str
    path: str
    action: str
    commit: str | None
    revision: str | None
    previous_revision: str | None = None
    warning: str | None = None
    erased: list[str] = Field(default_factory=list, description="purge: where the text was erased")


class CommitOut(BaseModel):
    commit: str
    date: str
    author: str
    subject: str
    op: str | None
    path: str | None


class HistoryOut(BaseModel):
    id: str
    path: str
    commits: list[CommitOut]


class DiffOut(BaseModel):
    id: str
    rev: str
    diff: str


class Proposal(BaseModel):
    kind: str = Field(description="merge | supersede | archive")
    ids: list[str]
    paths: list[str]
    reason: str
    applied: bool = False
    commit: str | None = None


class ConsolidateOut(BaseModel):
    dry_run: bool
    proposals: list[Proposal]
    message: str


class StatusOut(BaseModel):
    vault: str
    memories: int
    by_type: dict[str, int]
    archived: int
    problems: int
    uncommitted: int
    last_commits: list[dict[str, Any]]
    index: dict[str, Any]


# -- notifications ------------------------------------------------------------
class Notifier:
    """Bridges service change events (any thread) to MCP notifications on the event loop.

    2026-07-28 clients listen through the SubscriptionBus; 2025-11-25 clients
    get notifications on their connection: list_changed once they made a request,
    resources/updated for the URIs they subscribed to with resources/subscribe.
    Each connection is attached once (the SDK builds a new session proxy per
    request) and forgotten when it closes.
    """

    def __init__(self, service: MemoryService, bus: InMemorySubscriptionBus) -> None:
        self.service = service
        self.bus = bus
        self.loop: asyncio.AbstractEventLoop | None = None
        self._legacy: dict[str, set[Any]] = {}
        self._connections: set[Any] = set()
        self._aggregate_hashes: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def attached(self) -> int:
        """How many client connections receive notifications on their own channel."""
        with self._lock:
            return len(self._connections)

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

    def subscribe(self, uri: str, session: Any) -> None:
        self.attach(session)
        with self._lock:
            self._legacy.setdefault(uri, set()).add(_connection(session))

    def unsubscribe(self, uri: str, session: Any) -> None:
        with self._lock:
            self._legacy.get(uri, set()).discard(_connection(session))

    def prime(self) -> None:
        """Record the aggregates' current text so later changes can be detected."""
        self._changed_aggregates(AGGREGATES)

    def on_change(self, event: ChangeEvent) -> None:
        """Service listener: work out the URIs and send from the loop."""
        uris = [note_uri(p) for p in dict.fromkeys([*event.changed, *event.removed])]
        uris += self._changed_aggregates(reports.affected(event))
        list_changed = bool(event.added or event.removed)
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        coro = self._send(uris, list_changed)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.create_task(coro)
        else:
            asyncio.run_coroutine_threadsafe(coro, loop)

    def _changed_aggregates(self, candidates: Iterable[str]) -> list[str]:
        """Of the aggregates a change may alter, those whose text did change."""
        changed = []
        for uri in candidates:
            try:
                text = reports.aggregate(self.service, uri)
            except MemvaultError:
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()
            if self._aggregate_hashes.get(uri) != digest:
                self._aggregate_hashes[uri] = digest
                changed.append(uri)
        return changed

    async def _send(self, uris: list[str], list_changed: bool) -> None:
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
        notifier.subscribe(str(params.uri), ctx.session)
        return mt.EmptyResult()

    async def on_unsubscribe(ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        notifier.unsubscribe(str(params.uri), ctx.session)
        return mt.EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", mt.SubscribeRequestParams, on_subscribe)
    lowlevel.add_request_handler(
        "resources/unsubscribe", mt.UnsubscribeRequestParams, on_unsubscribe
    )
    initialization_options = lowlevel.create_initialization_options

    def with_list_changed(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        options = notification_options or NotificationOptions(resources_changed=True)
        return initialization_options(options, *args, **kwargs)

    lowlevel.create_initialization_options = with_list_changed  # type: ignore[method-assign]


# -- the server ---------------------------------------------------------------
def _client_name(ctx: Context | None) -> str | None:
    try:
        params = ctx.session.client_params if ctx is not None else None
    except Exception:  # outside a request, or no session: no name
        return None
    if params is None or params.client_info is None:
        return None
    info = params.client_info
    return f"{info.name}/{info.version}" if info.version else info.name


async def _call(ctx: Context | None, notifier: Notifier, fn: Callable[[], T]) -> T:
    """Run a blocking service call in a worker thread, errors as tool errors."""
    if ctx is not None:
        try:
            notifier.attach(ctx.session)
        except Exception:
            notifier.loop = notifier.loop or asyncio.get_running_loop()
    else:
        notifier.loop = notifier.loop or asyncio.get_running_loop()
    token = current_client.set(_client_name(ctx))
    try:
        return await anyio.to_thread.run_sync(fn)
    except ToolError:
        raise
    except Exception as exc:
        raise _tool_error(exc) from exc
    finally:
        current_client.reset(token)


def _tool_error(exc: Exception) -> ToolError:
    """Any exception as an error result the agent can act on (never a bare "Error")."""
    if isinstance(exc, MemvaultError):
        return ToolError(f"{exc.code}: {exc}")
    log.error("unexpected error in a tool call", exc_info=exc)
    error = explain_unexpected(exc)
    return ToolError(f"{error.code}: {error}")


def _guarded(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """The tool ``fn``, with whatever it raises turned into a clear tool error."""

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> T:
        try:
            return await fn(*args, **kwargs)
        except (ToolError, MCPError):
            raise
        except Exception as exc:
            raise _tool_error(exc) from exc

    return tool


def _filters(
    types: list[str] | None,
    tags: list[str] | None,
    folder: str | None,
    scope: list[str] | None,
    since: str | None,
    until: str | None,
    include_archived: bool,
) -> Filters:
    def when(value: str | None, name: str) -> dt.datetime | None:
        if not value:
            return None
        moment = parse_time(value)
        if moment is None:
            raise ToolError(f"invalid_input: {name} must be an ISO date like 2026-11-30")
        return moment

    return Filters(
        types=tuple(types or ()),
        tags=tuple(tags or ()),
        folder=folder,
        scope=tuple(scope or ()),
        since=when(since, "since"),
        until=when(until, "until"),
        include_archived=include_archived,
    )


def _memory_out(memory: Memory) -> MemoryOut:
    return MemoryOut(
        **{k: v for k, v in memory.summary().items() if k not in ("revision",)},
        uri=note_uri(memory.path),
        revision=memory.content_hash,
        meta=jsonable(memory.meta),
        body=memory.body,
        problems=list(memory.problems),
    )


def _write_out(result: Any, warning: str | None = None) -> WriteOut:
    memory = result.memory
    return WriteOut(
        id=memory.id,
        path=memory.path,
        action=result.action,
        commit=result.commit,
        revision=memory.content_hash if result.action != "deleted" else None,
        previous_revision=result.previous_revision,
        warning=warning,
        erased=list(result.erased),
    )


READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)


def build_server(service: MemoryService) -> tuple[MCPServer, Notifier]:
    """The MCP server over ``service``; the notifier is already listening to it."""
    bus = InMemorySubscriptionBus()
    mcp: MCPServer = MCPServer(
        name="memvault",
        instructions=INSTRUCTIONS,
        version=__version__,
        subscriptions=bus,
        log_level="WARNING",
    )
    notifier = Notifier(service, bus)
    service.listeners.append(notifier.on_change)
    register_legacy_subscriptions(mcp, notifier)
    _register_tools(mcp, service, notifier)
    _register_resources(mcp, service, notifier)
    _register_prompts(mcp, service)
    return mcp, notifier


def _register_tools(mcp: MCPServer, service: MemoryService, notifier: Notifier) -> None:
    call = functools.partial(_call, notifier=notifier)

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Any]:
        """Register with the docstring as one clean paragraph (hosts show it verbatim)."""

        def register(fn: Callable[..., Any]) -> Any:
            description = " ".join((fn.__doc__ or "").split())
            return mcp.tool(annotations=annotations, description=description)(_guarded(fn))

        return register

    @tool(WRITE)
    async def remember(
        content: str,
        type: str = "note",
        tags: list[str] | None = None,
        importance: float = 0.5,
        confidence: float = 0.8,
        title: str | None = None,
        folder: str | None = None,
        scope: list[str] | None = None,
        source: str = "conversation",
        supersedes: list[str] | None = None,
        ctx: Context | None = None,
    ) -> RememberOut:
        """Store one durable memory: a preference, a fact about the user or their work, a
        decision, or an episode worth keeping. Call once per item, in the user's words.
        type: preference | fact | episode | summary | task | note. importance and confidence
        are 0..1 (user-stated facts: confidence 1.0). To correct an old memory pass its id in
        supersedes. Trivial text is rejected; a near-duplicate is reported, not written twice;
        `similar` lists possible contradictions you should resolve."""
        result = await call(
            ctx,
            fn=lambda: service.remember(
                content,
                type=type,
                tags=tags or [],
                importance=importance,
                confidence=confidence,
                title=title,
                folder=folder,
                scope=scope or [],
                source=source,
                supersedes=supersedes or [],
            ),
        )
        memory = result.memory
        return RememberOut(
            id=memory.id if memory else None,
            path=memory.path if memory else None,
            uri=note_uri(memory.path) if memory else None,
            action=result.action,
            commit=result.commit,
            similar=[SimilarOut(**s.__dict__) for s in result.similar],
            reason=result.reason,
        )

    @tool(READ)
    async def recall(
        query: str,
        k: int = 8,
        types: list[str] | None = None,
        tags: list[str] | None = None,
        folder: str | None = None,
        scope: list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        include_archived: bool = False,
        ctx: Context | None = None,
    ) -> RecallOut:
        """Search long-term memory (keywords + meaning, English and Chinese). Use before
        answering anything that may depend on the user's preferences, history or facts.
        Filters: types, tags (all must match), folder, scope, since/until (ISO dates).
        Each result says `why` it ranked (keyword, vector, recency, importance)."""
        filters = _filters(types, tags, folder, scope, since, until, include_archived)
        hits = await call(ctx, fn=lambda: service.recall(query, k=k, filters=filters))
        results = [RecallHit(**asdict(h), uri=note_uri(h.path)) for h in hits]
        return RecallOut(results=results, count=len(results))

    @tool(READ)
    async def get_memory(id_or_path: str, ctx: Context | None = None) -> MemoryOut:
        """Read one memory in full (metadata, body, revision). Pass its `revision` as
        expected_revision to update_memory so a concurrent edit is never overwritten."""
        memory = await call(ctx, fn=lambda: service.get(id_or_path))
        return _memory_out(memory)

    @tool(READ)
    async def list_memories(
        types: list[str] | None = None,
        tags: list[str] | None = None,
        folder: str | None = None,
        scope: list[str] | None = None,
        include_archived: bool = False,
        sort: Literal["updated", "created", "importance", "path"] = "updated",
        limit: int = 50,
        cursor: str | None = None,
        ctx: Context | None = None,
    ) -> ListOut:
        """Browse memories without a query (newest first by default). Page with the
        returned next_cursor. Use recall to search by meaning instead."""
        filters = _filters(types, tags, folder, scope, None, None, include_archived)
        size = max(1, min(limit, 500))
        page = await call(ctx, fn=lambda: service.list_memories(filters, sort, size, cursor))
        summaries = [
            MemorySummary(
                id=d.id,
                path=d.path,
                title=d.title,
                type=d.type,
                tags=list(d.tags),
                status=d.status,
                importance=d.importance,
                updated=d.updated,
            )
            for d in page.memories
        ]
        return ListOut(memories=summaries, total=page.total, next_cursor=page.next_cursor)

    @tool(WRITE)
    async def update_memory(
        id: str,
        content: str | None = None,
        title: str | None = None,
        type: str | None = None,
        tags: list[str] | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        status: Literal["active", "superseded", "archived"] | None = None,
        expected_revision: str | None = None,
        ctx: Context | None = None,
    ) -> WriteOut:
        """Change a memory's text and/or fields; everything else in the file is kept.
        Pass expected_revision (from get_memory or recall) so that an edit made meanwhile
        by the user is never overwritten: a stale revision is refused."""
        fields = {
            "type": type,
            "tags": tags,
            "importance": importance,
            "confidence": confidence,
            "status": status,
        }
        result = await call(
            ctx,
            fn=lambda: service.update(
                id,
                content=content,
                title=title,
                fields=fields,
                expected_revision=expected_revision,
            ),
        )
        return _write_out(result)

    @tool(DESTRUCTIVE)
    async def forget(
        id: str,
        mode: Literal["archive", "delete", "purge"] = "archive",
        reason: str | None = None,
        ctx: Context | None = None,
    ) -> WriteOut:
        """Forget a memory. archive (default) moves it to archive/ and hides it from recall;
        it can be restored. delete removes the file (history keeps it). purge erases it from
        all git history: only for explicit privacy requests from the user."""
        from .history import CLONE_WARNING

        result = await call(ctx, fn=lambda: service.forget(id, mode, reason))
        return _write_out(result, CLONE_WARNING if mode == "purge" else None)

    @tool(READ)
    async def memory_history(id: str, ctx: Context | None = None) -> HistoryOut:
        """Every change to one memory (following renames): who, when, which operation."""

        def run() -> HistoryOut:
            path = service.history_path(id)
            commits = [CommitOut(**c.brief()) for c in service.log(path)]
            return HistoryOut(id=id, path=path, commits=commits)

        return await call(ctx, fn=run)

    @tool(READ)
    async def memory_diff(id: str, rev: str, ctx: Context | None = None) -> DiffOut:
        """Unified diff between a memory at revision `rev` (from memory_history) and now."""
        diff = await call(ctx, fn=lambda: service.diff(id, rev))
        return DiffOut(id=id, rev=rev, diff=diff or "(no difference)")

    @tool(WRITE)
    async def revert_memory(id: str, rev: str, ctx: Context | None = None) -> WriteOut:
        """Restore a memory's text as it was at `rev` (from memory_history), as a new
        commit: the current version stays in history."""
        result = await call(ctx, fn=lambda: service.revert(id, rev))
        return _write_out(result)

    @tool(WRITE)
    async def consolidate(dry_run: bool = True, ctx: Context | None = None) -> ConsolidateOut:
        """Propose clean-ups: near-duplicate memories to merge, expired tasks to archive.
        With dry_run=false each proposal is applied as its own commit (archive, never
        delete), so every step can be reverted."""
        proposals = await call(ctx, fn=lambda: lifecycle.consolidate(service, dry_run))
        out = [Proposal(**asdict(p)) for p in proposals]
        message = "no proposals" if not out else f"{len(out)} proposal(s)"
        if out and dry_run:
            message += ": call consolidate(dry_run=false) to apply"
        return ConsolidateOut(dry_run=dry_run, proposals=out, message=message)

    @tool(READ)
    async def vault_status(ctx: Context | None = None) -> StatusOut:
        """Counts by type, index and embedder state, problems found, last commits."""
        data = await call(ctx, fn=lambda: reports.status(service))
        return StatusOut(**asdict(data))


def _register_resources(mcp: MCPServer, service: MemoryService, notifier: Notifier) -> None:
    async def aggregate(uri: str) -> str:
        try:
            return await anyio.to_thread.run_sync(lambda: reports.aggregate(service, uri))
        except MemvaultError as exc:
            raise ResourceError(str(exc)) from exc

    def reader(uri: str) -> Callable[[], Awaitable[str]]:
        async def read() -> str:
            return await aggregate(uri)

        return read

    for uri, description in AGGREGATES.items():
        name = uri.removeprefix("memory://")
        mcp.resource(uri, name=name, description=description, mime_type="text/markdown")(
            reader(uri)
        )

    @mcp.resource("memory://note/{+path}", mime_type="text/markdown")
    async def note(path: str) -> str:
        """One memory file, exactly as stored (frontmatter and body)."""

        try:
            return await anyio.to_thread.run_sync(lambda: service.read_text(path))
        except MemvaultError as exc:
            raise ResourceError(str(exc)) from exc


def _register_prompts(mcp: MCPServer, service: MemoryService) -> None:
    @mcp.prompt()
    def recall_context(topic: str) -> str:
        """Gather what memory knows about a topic before working on it."""
        return (
            f"Before working on '{topic}', call the `recall` tool with query {topic!r} "
            "(and, if useful, read memory://preferences). Summarise what the user prefers and "
            "what is already known that bears on this topic, citing memory ids. If memories "
            "conflict, say so and prefer the most recent, highest-confidence one."
        )

    @mcp.prompt()
    def extract_memories(conversation: str) -> str:
        """Pick durable memories out of a conversation and store each with `remember`."""
        return (
            "Read the conversation below. Pick out only what will still matter in a future "
            "session: the user's preferences (type preference), facts about the user, their "
            "work or their world (type fact), and decisions made (type fact or task). Skip "
            "small talk, acknowledgements and anything secret. For each item call `remember` "
            "once, with a self-contained sentence, a type, a few tags, confidence 1.0 for "
            "what the user said outright (lower for inferences) and importance 0..1. If "
            "`remember` reports a possible contradiction, ask the user or pass `supersedes`."
            f"\n\n<conversation>\n{conversation}\n</conversation>"
        )


# -- running ------------------------------------------------------------------
LOOPBACK = ("127.0.0.1", "localhost", "::1")
JIEBA_WARM_UP_DELAY = 3.0  # seconds after start


def serve(
    vault: Path,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    watch: bool = True,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Open the vault, start background indexing (and the watcher), serve MCP.

    ``announce`` gets one line for a person once HTTP accepts connections. A blank or
    whitespace-only token is no token.
    """
    token = (token or "").strip() or None
    if http and host not in LOOPBACK and not token:
        raise MemvaultError(
            f"refusing to serve HTTP on {host} without a token: pass --token or set "
            "MEMVAULT_TOKEN (loopback addresses need none)"
        )
    service = MemoryService.open(vault)
    mcp, notifier = build_server(service)

    def background() -> None:
        service.ensure_synced()
        notifier.prime()
        log.info("index ready: %s", service.index_status())

    threading.Thread(target=background, name="memvault-sync", daemon=True).start()
    # jieba's dictionary load holds the GIL for ~0.6 s: do it once `initialize` is long
    # answered (hosts time that), not in the first Chinese query.
    warm = threading.Timer(JIEBA_WARM_UP_DELAY, warm_up)
    warm.daemon = True
    warm.start()
    watcher = _start_watcher(service) if watch else None
    log.info("memvault serving %s over %s", service.root, "HTTP" if http else "stdio")
    try:
        if http:
            from .http import run_http

            run_http(mcp, host, port, token, announce)
        else:
            mcp.run("stdio")
    finally:
        if watcher is not None:
            watcher.stop()
        service.close()


def _start_watcher(service: MemoryService) -> Any:
    from .watcher import Watcher

    watcher = Watcher(service)
    watcher.start()
    return watcher
