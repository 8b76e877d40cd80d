"""MCP server: a thin adapter from MCP tools, resources and prompts to MemoryService.

``tools`` (the tools), ``schemas`` (what they return), ``surface`` (how they appear to a
client), ``resources`` (views and prompts), ``notify`` (change notifications), ``http``
and ``stdio`` (the transports). Logs go to stderr only: over stdio, one stray byte on
stdout breaks the protocol.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from .. import __version__, lifecycle, syncing
from ..binding import serving_token
from ..errors import LockTimeoutError, MemvaultError
from ..service import MemoryService
from ..text import warm_up
from . import resources
from .notify import Notifier, register_legacy_subscriptions
from .resources import note_uri
from .tools import build_tools

log = logging.getLogger(__name__)

INSTRUCTIONS = """memvault is the user's long-term memory: Markdown files they can read and edit,
with every change committed to git. At the start of a task, read memory://index (or call
`recall` with the topic) to learn the user's preferences and facts. When the user states a
preference, a fact about themselves or their work, or a decision, call `remember` once per
item, written so it stands alone later (who, what, when, and what it answers: "Mel has
been married 5 years", not "5 years already!"); a fact the profile holds (name, language,
allergies...: see `get_profile`) goes to `set_profile` instead. When something you
remembered turns out wrong, call `update_memory` (or `remember` with `supersedes`). Never
store secrets. Nothing is lost: every change can be reverted."""


def build_server(service: MemoryService) -> tuple[MCPServer, Notifier]:
    """The MCP server over ``service``; the notifier is already listening to it."""
    bus = InMemorySubscriptionBus()
    settings = service.settings
    proposing = settings.agent_writes == "propose" or bool(settings.propose_clients)
    notifier = Notifier(bus, lambda name: service.get(name).path, proposing)
    mcp: MCPServer = MCPServer(
        name="memvault",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=list(build_tools(service, notifier)),
        subscriptions=bus,
        log_level="WARNING",
        lifespan=notifier.serving,
    )
    service.listeners.append(notifier.on_change)
    register_legacy_subscriptions(mcp, notifier)
    resources.register(mcp, service)
    return mcp, notifier


# -- running ------------------------------------------------------------------
JIEBA_WARM_UP_DELAY = 3.0  # seconds after start
START_WAIT = 5.0  # seconds serve waits for start-up recovery (a lock held elsewhere: no more)


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

    ``announce`` gets where it serves ("stdio", or the URL once HTTP accepts connections),
    once the vault is open. A blank or whitespace-only token is no token.
    """
    token = serving_token(http, host, token)
    # Recovery waits for the vault's write lock, which another process may hold for long
    # (an import, a purge): it runs behind the server, which answers `initialize` soon.
    service = MemoryService.open(vault, recover=False)
    mcp, _ = build_server(service)
    watcher = _watcher(service) if watch else None
    stopping = _start_behind(service, watcher)
    # jieba's dictionary load holds the GIL for ~0.6 s: do it once `initialize` is long
    # answered (hosts time that), not in the first Chinese query.
    warm = threading.Timer(JIEBA_WARM_UP_DELAY, warm_up)
    warm.daemon = True
    warm.start()
    stop_forgetting = threading.Event()  # consolidate_every_hours > 0: archive by policy
    lifecycle.schedule(service, stop_forgetting)
    stop_syncing = start_sync_schedule(service, service.settings.sync_interval)
    after_writes = _sync_after_writes(service)
    log.info("memvault serving %s over %s", service.root, "HTTP" if http else "stdio")
    _stop_on_sigterm()
    try:
        if http:
            from .http import run_http

            run_http(mcp, host, port, token, announce)
        else:
            from .stdio import run_stdio

            (announce or log.info)("stdio")
            run_stdio(mcp)
    finally:
        stopping.set()
        stop_forgetting.set()
        stop_syncing()
        if after_writes is not None:
            after_writes.stop()
        if watcher is not None:
            watcher.stop()
        service.close()


def _stop_on_sigterm() -> None:
    """SIGTERM (a host closing, `kill`) stops the server as Ctrl-C does, not at once: the
    writes under way finish, the watcher commits what it saw, the index is closed."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def _recovered(service: MemoryService, stopping: threading.Event) -> bool:
    """Start-up recovery, waiting for the write lock as long as another process holds it;
    False if the server stopped first. A recovery that fails is logged: the vault is
    served all the same (its writes say what is wrong)."""
    while not stopping.is_set():
        try:
            service.recover()
        except LockTimeoutError as exc:
            log.warning("start-up recovery waits: %s", exc)
            continue
        except (MemvaultError, OSError) as exc:
            log.error("could not commit what was left uncommitted at start-up: %s", exc)
        break
    return not stopping.is_set()


def start_sync_schedule(service: MemoryService, interval: float) -> Callable[[], None]:
    """Sync with the git remote every ``interval`` seconds (none when 0), the watcher
    paused while git rewrites the tree; returns the function that stops it."""
    stop = threading.Event()
    if interval <= 0:
        return stop.set

    def loop() -> None:
        while not stop.wait(interval):
            try:
                result = syncing.sync(service)
                log.info("scheduled sync: %s", result.error or result.action)
            except MemvaultError as exc:  # no remote yet, a merge to finish by hand: retried
                log.warning("scheduled sync failed (retried in %.0fs): %s", interval, exc)
            except Exception:  # the server must outlive any sync
                log.exception("scheduled sync failed")

    thread = threading.Thread(target=loop, name="memvault-git-sync", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(timeout=60)

    return halt


def _sync_after_writes(service: MemoryService) -> Any:
    """With ``sync_after_writes`` set: sync each burst of writes once it is quiet."""
    if service.settings.sync_after_writes <= 0:
        return None
    from ..autosync import AfterWrites

    return AfterWrites(service, service.settings.sync_after_writes)


def _watcher(service: MemoryService) -> Any:
    """The watcher, not started yet; every sync (tool or schedule) holds it off."""
    from ..watcher import Watcher

    watcher = Watcher(service)
    service.pause = watcher.paused
    return watcher


def _start_behind(service: MemoryService, watcher: Any) -> threading.Event:
    """:func:`_start_up` on its own thread, waited for until the watcher runs (usually
    before the first request) or START_WAIT passes; the event that stops it."""
    stopping, watching = threading.Event(), threading.Event()
    threading.Thread(
        target=_start_up,
        args=(service, watcher, stopping, watching),
        name="memvault-sync",
        daemon=True,
    ).start()
    watching.wait(START_WAIT)
    return stopping


def _start_up(
    service: MemoryService, watcher: Any, stopping: threading.Event, watching: threading.Event
) -> None:
    """:func:`_starting`; a stop meanwhile closes the service under it, which is no error."""
    try:
        _starting(service, watcher, stopping, watching)
    except Exception:
        if not stopping.is_set():
            raise
        log.debug("start-up cut short by the server's stop", exc_info=True)
    finally:
        watching.set()


def _starting(
    service: MemoryService, watcher: Any, stopping: threading.Event, watching: threading.Event
) -> None:
    """Commit what a crash or a person left, start the watcher (then set ``watching``),
    then bring the index up to date."""
    if not _recovered(service, stopping):
        return
    if watcher is not None:
        try:
            watcher.start()
        except (MemvaultError, OSError) as exc:  # the vault is still served
            log.error("the watcher did not start (%s): restart memvault to watch edits", exc)
    watching.set()
    service.ensure_synced()
    log.info("index ready: %s", service.index_status())
    service.start_embedding()  # vectors the text index lacks fill in behind it


__all__ = ["Notifier", "build_server", "note_uri", "register_legacy_subscriptions", "serve"]
