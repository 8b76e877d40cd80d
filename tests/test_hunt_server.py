"""Hunt: the MCP adapters and transports under hostile and real clients."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp import Client

from memvault.server import build_server, note_uri
from memvault.service import MemoryService

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


def run(
    service: MemoryService,
    mode: str,
    body: Callable[[Client], Awaitable[Any]],
    **client_kwargs: Any,
) -> Any:
    server, notifier = build_server(service)

    async def main() -> Any:
        async with Client(server, mode=mode, **client_kwargs) as client:
            return await body(client)

    try:
        return asyncio.run(main())
    finally:
        service.listeners.remove(notifier.on_change)


def test_a_client_that_only_listens_hears_of_changes_made_elsewhere(svc: MemoryService) -> None:
    """A host listening to a memory (2026-07-28) heard nothing of a change made by anyone
    but itself (a person's edit seen by the watcher, a sync, the scheduled forgetting) until
    it had called a tool: the notifier learnt the server's loop from a first tool call."""
    made = svc.remember("Standups are at 9:15.", type="fact")
    assert made.memory is not None
    uri = note_uri(made.memory.path)

    async def body(client: Client) -> list[str]:
        events: list[str] = []
        async with client.listen(resource_subscriptions=[uri]) as sub:
            await asyncio.to_thread(svc.update, made.memory.id, "Standups are at 9:30.", {})  # type: ignore[union-attr]

            async def first() -> None:
                async for event in sub:
                    events.append(str(getattr(event, "uri", "")))
                    if uri in events:
                        return

            await asyncio.wait_for(first(), timeout=10)
        return events

    assert uri in run(svc, "2026-07-28", body)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_legacy_client_that_only_reads_hears_that_the_list_changed(svc: MemoryService) -> None:
    """resources/list_changed is promised to every 2025-11-25 client (the capability says
    so; a client subscribes to nothing for it), not only to those that called a tool."""
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", "") == "notifications/resources/list_changed":
            changed.set()

    async def body(client: Client) -> None:
        await client.list_resources()
        await asyncio.to_thread(svc.remember, "The office moved to Elm Street.", type="fact")
        await asyncio.wait_for(changed.wait(), timeout=10)

    run(svc, "legacy", body, message_handler=on_message)
