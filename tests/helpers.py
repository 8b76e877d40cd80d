"""Helpers shared by tests: real git and the real command line."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client

from memvault.config import Settings
from memvault.models import ChangeEvent
from memvault.server import build_server
from memvault.service import MemoryService, create_vault
from memvault.watcher import Watcher

REPO = Path(__file__).resolve().parent.parent


PERSON = "Ada Person"  # the person a vault's repository names (person_vault)
# what a raw client (a pipe, an HTTP post) sends first
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-pipe", "version": "1"},
    },
}


def git(vault: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(
        ["git", *args], cwd=vault, capture_output=True, text=True, check=True, env=env
    )
    return out.stdout


def git_objects(vault: Path) -> bytes:
    """Every object in the repository (loose and packed, reachable or not), decompressed
    and lowercased: where a purged text must not be."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault,
        capture_output=True,
        check=True,
    ).stdout.lower()


@contextmanager
def broken_git_index(root: Path) -> Iterator[None]:
    """git cannot stage while this lasts: a write's commit fails after its files are written."""
    index = root / ".git" / "index"
    saved = index.read_bytes()
    index.write_bytes(b"DIRC garbage")
    try:
        yield
    finally:
        index.write_bytes(saved)


@contextmanager
def branch_locked(service: MemoryService) -> Iterator[None]:
    """Another git holds the lock of the vault's current branch while this lasts (a fresh
    ``refs/heads/<branch>.lock``, so not stale), and the service does not wait for it:
    a commit on that branch fails after its files are written; other git commands work."""
    branch = git(service.root, "symbolic-ref", "HEAD").strip()
    lock = service.root / ".git" / f"{branch}.lock"
    patience = service.history.lock_retry_seconds
    lock.write_text("")
    service.history.lock_retry_seconds = 0.0
    try:
        yield
    finally:
        service.history.lock_retry_seconds = patience
        lock.unlink()


def imported(root: Path, memories: list[dict[str, Any]]) -> MemoryService:
    """A new vault at ``root`` holding ``memories`` (JSONL import objects), imported in one
    go with default settings, vectors made; the caller closes it."""
    create_vault(root)
    source = root.parent / f"{root.name}.jsonl"
    lines = [json.dumps(m, ensure_ascii=False) for m in memories]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    service = MemoryService.open(root, Settings())
    service.import_path(source)
    service.fill_vectors(wait=600)  # a bulk import leaves the vectors to be made
    return service


def commit_count(vault: Path) -> int:
    return int(git(vault, "rev-list", "--count", "HEAD").strip())


def run_memvault(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input_text: str | None = None,
    stdin: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess (``stdin``: a file descriptor, e.g. a pty's,
    instead of ``input_text``)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memvault.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        input=input_text,
        stdin=stdin,
        timeout=120,
        check=False,
    )


async def call_tool(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call an MCP tool that must succeed; its structured output."""
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


Watched = tuple[MemoryService, Watcher, list[ChangeEvent]]


@contextmanager
def watching(service: MemoryService, debounce: float = 0.4) -> Iterator[Watched]:
    """A real watcher over an indexed service, recording the change events it publishes."""
    events: list[ChangeEvent] = []
    service.listeners.append(events.append)
    service.ensure_synced()
    watcher = Watcher(service, debounce=debounce)
    watcher.start()
    try:
        yield service, watcher, events
    finally:
        watcher.stop()


@contextmanager
def watched_as_person(service: MemoryService) -> Iterator[Watched]:
    """:func:`watching`, in a vault whose git names a person (their edits are theirs)."""
    git(service.vault.root, "config", "user.name", "Ada Person")
    git(service.vault.root, "config", "user.email", "ada@example.org")
    with watching(service) as running:
        yield running


def in_process(
    service: MemoryService,
    body: Callable[[Client], Awaitable[Any]],
    mode: str = "legacy",
    **client: Any,
) -> Any:
    """Run ``body`` with a real in-process MCP client session of ``service``'s server
    (``mode``: the protocol era, "legacy" or "2026-07-28")."""
    server, notifier = build_server(service)

    async def main() -> Any:
        async with Client(server, mode=mode, **client) as session:
            return await body(session)

    try:
        return asyncio.run(main())
    finally:
        service.listeners.remove(notifier.on_change)


def tool(service: MemoryService, name: str, args: dict[str, Any], **client: Any) -> dict[str, Any]:
    """One MCP tool call that must succeed, in its own session: its structured output."""

    async def body(session: Client) -> dict[str, Any]:
        return await call_tool(session, name, args)

    result: dict[str, Any] = in_process(service, body, **client)
    return result


T = TypeVar("T")
DAY0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


class Clock:
    """A clock the test moves by hand (``service.clock = Clock()``)."""

    def __init__(self) -> None:
        self.now = DAY0

    def __call__(self) -> dt.datetime:
        return self.now

    def days(self, n: float) -> None:
        self.now = DAY0 + dt.timedelta(days=n)


class PausingClock:
    """The service's clock; the thread named ``paused`` stops at its first reading (in
    ``remember``: after the duplicate check, before the write lock) until ``go`` is set."""

    def __init__(self, paused: str) -> None:
        self.paused, self.reached, self.go = paused, threading.Event(), threading.Event()

    def __call__(self) -> dt.datetime:
        if threading.current_thread().name == self.paused and not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(timeout=60)
        return DAY0


def while_paused(clock: PausingClock, paused: threading.Thread, meanwhile: Callable[[], T]) -> T:
    """Start ``paused`` (named ``clock.paused``), run ``meanwhile`` once it stopped at its
    first clock reading, then let it go and wait for it: ``meanwhile``'s result."""
    paused.start()
    try:
        assert clock.reached.wait(timeout=60)
        return meanwhile()
    finally:
        clock.go.set()
        paused.join(timeout=60)


def updated_listener(
    uri: str | None = None,
) -> tuple[list[str], asyncio.Event, Callable[[Any], Awaitable[None]]]:
    """(URIs seen, an event set on each (or only on ``uri``'s), a client message handler
    recording every ``notifications/resources/updated``)."""
    seen: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            seen.append(str(root.params.uri))
            if uri is None or seen[-1] == uri:
                arrived.set()

    return seen, arrived, on_message


@dataclass
class Pair:
    """Two machines' vaults on one bare remote."""

    remote: Path
    a: MemoryService
    b: MemoryService


@contextmanager
def synced_pair(tmp_path: Path) -> Iterator[Pair]:
    """A bare remote, vault A pushed to it, vault B cloned from it (full text only)."""
    from memvault.syncing import sync  # here: only the sync tests need it

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-q", "--initial-branch=main", str(remote))
    create_vault(tmp_path / "a")
    git(tmp_path / "a", "remote", "add", "origin", str(remote))
    a = MemoryService.open(tmp_path / "a", Settings(embedder="none"))
    first = sync(a)
    assert first.error is None and first.pushed >= 1
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    b = MemoryService.open(tmp_path / "b", Settings(embedder="none"))
    try:
        yield Pair(remote, a, b)
    finally:
        a.close()
        b.close()


def start_git(cwd: Path, *options: str) -> subprocess.Popen[str]:
    """A real git process, answering once (so it has started) then waiting for input."""
    proc = subprocess.Popen(
        ["git", *options, "cat-file", "--batch-check"],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("HEAD\n")
    proc.stdin.flush()
    assert proc.stdout.readline()
    return proc


def stop_git(proc: subprocess.Popen[str]) -> None:
    proc.communicate(timeout=30)  # closes its input: it ends
