"""Hunt: the MCP adapters and transports under hostile and real clients."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from memvault import proposals
from memvault.config import Settings
from memvault.server import note_uri
from memvault.service import MemoryService

from .helpers import INITIALIZE, call_tool, in_process, run_memvault


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

    assert uri in in_process(svc, body, "2026-07-28")


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

    in_process(svc, body, "legacy", message_handler=on_message)


def test_a_garbled_line_on_stdio_is_answered_not_left_hanging(vault_path: Path) -> None:
    """The SDK dropped a line it could not read: a host whose request was cut short or
    malformed waited for its answer forever. JSON-RPC answers it (-32700 for what is no
    JSON, -32600 with the request's id when it has one); a blank line or a notification
    gets no answer, and the server goes on serving."""
    lines = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rec',
        "",
        json.dumps({"id": 3, "method": "ping"}),  # no "jsonrpc"
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": 5}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": 5}),
        json.dumps([1, 2]),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "--vault", str(vault_path), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMVAULT_EMBEDDER": "none"},
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline())]
    while answers[-1].get("id") != 5:  # the last request's answer: each line was read
        answers.append(json.loads(proc.stdout.readline()))
    proc.communicate(timeout=60)
    errors = [(a["id"], a["error"]["code"]) for a in answers if "error" in a]
    assert errors == [(None, -32700), (3, -32600), (4, -32600), (None, -32600)]
    assert "jsonrpc" in answers[2]["error"]["message"]


def test_a_token_no_http_header_can_carry_is_refused_at_start(tmp_path: Path) -> None:
    """`--token pässwort` served, and every client was refused for ever: an HTTP client
    cannot send it (Python's refuses non-ASCII, browsers and Node send Latin-1 bytes, the
    server compared UTF-8). Refused at start, before a vault is created."""
    vault = tmp_path / "vault"
    for token in ("pässwort", "s3cret\x07"):
        done = run_memvault("--vault", str(vault), "serve", "--http", "--token", token)
        assert done.returncode == 1, done.stderr
        assert "HTTP header cannot carry" in done.stderr and "Traceback" not in done.stderr
    assert not vault.exists()


def test_list_memories_refuses_a_cursor_it_never_gave(svc: MemoryService) -> None:
    """A cursor that was no next_cursor (a memory id, '-1', '1.5') silently listed the first
    page again, so an agent paging on saw the same memories twice; '²' was an internal
    error. Each is refused by name; the cursors given page through every memory once."""
    for i in range(3):
        svc.remember(f"Memory {i} about the red bicycle number {i * 13}.", check_similar=False)

    async def body(client: Client) -> tuple[list[str], list[str]]:
        refused = []
        for cursor in ("01M8VRT66Z1G25TF", "-1", "1.5", " 1", "²"):
            result = await client.call_tool("list_memories", {"cursor": cursor, "limit": 1})
            assert result.is_error, cursor
            refused.append(str(result.content[0].text))  # type: ignore[union-attr]
        seen, cursor = [], None
        while True:
            page = await call_tool(client, "list_memories", {"limit": 2, "cursor": cursor})
            seen += [m["id"] for m in page["memories"]]
            if not (cursor := page["next_cursor"]):
                return refused, seen

    refused, seen = in_process(svc, body, "legacy")
    assert all("invalid_input: cursor" in r and "next_cursor" in r for r in refused), refused
    assert len(seen) == len(set(seen)) == 3


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_wrong_prompt_request_is_invalid_params_naming_what_is_wrong(
    svc: MemoryService, mode: str
) -> None:
    """prompts/get answered an unknown prompt, a missing argument and an argument of the
    wrong type with the JSON-RPC code 0 (MCP says -32602), the last one only as "Error
    rendering prompt recall_context", which a person typing the arguments cannot act on."""
    asked = {
        "unknown": ("nope", {}),
        "missing": ("recall_context", {}),
        "extra": ("extract_memories", {"conversation": "hi", "extra": "x"}),
        "mistyped": ("recall_context", {"topic": "tea", "budget_tokens": "abc"}),
    }

    async def body(client: Client) -> dict[str, MCPError]:
        errors = {}
        for what, (name, args) in asked.items():
            with pytest.raises(MCPError) as caught:
                await client.get_prompt(name, args)
            errors[what] = caught.value
        return errors

    errors = in_process(svc, body, mode)
    assert {e.error.code for e in errors.values()} == {INVALID_PARAMS}
    assert "nope" in errors["unknown"].error.message
    assert "topic" in errors["missing"].error.message
    assert "unknown argument 'extra'" in errors["extra"].error.message
    wrong = errors["mistyped"].error.message
    assert "budget_tokens" in wrong and "'abc'" in wrong and "rendering" not in wrong


def test_update_memory_with_empty_content_keeps_the_text(svc: MemoryService) -> None:
    """An agent passing "" for an optional argument it means to leave alone (models do)
    wiped the memory's text in a commit: `update_memory(content="")` was 'updated', its
    body and title gone. remember refuses an empty text; so does update now, writing
    nothing."""
    made = svc.remember("The user drinks oolong tea every afternoon.", tags=["tea"])
    assert made.memory is not None
    before = (svc.root / made.memory.path).read_text(encoding="utf-8")
    commits = svc.history.run("rev-list", "--count", "HEAD")

    async def body(client: Client) -> list[str]:
        refused = []
        for content in ("", "  \n "):
            args = {"id": made.memory.id, "content": content, "tags": []}  # type: ignore[union-attr]
            result = await client.call_tool("update_memory", args)
            assert result.is_error, content
            refused.append(str(result.content[0].text))  # type: ignore[union-attr]
        return refused

    for message in in_process(svc, body, "legacy"):
        assert "invalid_input: content is empty" in message
    assert (svc.root / made.memory.path).read_text(encoding="utf-8") == before
    assert svc.history.run("rev-list", "--count", "HEAD") == commits


def test_a_blank_title_is_no_title(svc: MemoryService) -> None:
    """A title of spaces (an agent's placeholder) named the file `memory.md` (then
    `memory-2.md`...) under an empty `# ` heading on remember, and wrote an empty heading on
    update_memory: it is no title, as "" is (the first line is the title)."""

    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        args = {"content": "The user's dog is called Pepper.", "title": "   ", "type": "fact"}
        made = await call_tool(client, "remember", args)
        change = {"id": made["id"], "title": " \t", "importance": 0.9}
        await call_tool(client, "update_memory", change)
        return made, await call_tool(client, "get_memory", {"id": made["id"]})

    made, got = in_process(svc, body, "legacy")
    assert made["path"] == "facts/the-user-s-dog-is-called-pepper.md"
    assert got["title"] == "The user's dog is called Pepper."
    assert "# The user's dog is called Pepper.\n" in got["body"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_subscribing_to_a_resource_that_is_not_there_is_refused_not_silent(
    svc: MemoryService,
) -> None:
    """A misspelt URI was accepted and then never announced: the client waited for ever.
    Memories by path or id, the views and memory://changes are followed; anything else,
    or a memory that does not exist, is refused (-32602) with where to look instead."""
    made = svc.remember("The office moved to Elm Street.", type="fact").memory
    assert made is not None

    async def body(client: Client) -> list[str]:
        for uri in (
            note_uri(made.path),
            f"memory://note/{made.id}",
            "memory://index",
            "memory://changes",
        ):
            await client.session.subscribe_resource(uri)
        refused = []
        for uri in ("memory://note/facts/nowhere.md", "memory://indx", "file:///etc/passwd"):
            with pytest.raises(MCPError) as error:
                await client.session.subscribe_resource(uri)
            assert error.value.error.code == INVALID_PARAMS
            refused.append(error.value.error.message)
        return refused

    refused = in_process(svc, body, "legacy")
    assert "no memory is at memory://note/facts/nowhere.md" in refused[0]
    assert all("subscribe to memory://changes" in m for m in refused)
    assert "this server has no resource at memory://indx" in refused[1]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_proposing_client_may_subscribe_to_its_own_proposal(vault_path: Path) -> None:
    """In proposal mode remember returns the uri the memory will have once accepted: a
    client following it is told when a person accepts it."""
    svc = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    accepted = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", "") == "notifications/resources/updated":
            accepted.set()

    async def body(client: Client) -> None:
        made = await call_tool(client, "remember", {"content": "The gate code is 4411."})
        await client.session.subscribe_resource(made["uri"])
        (waiting,) = proposals.pending(svc)
        await asyncio.to_thread(proposals.accept, svc, waiting.id)
        await asyncio.wait_for(accepted.wait(), timeout=10)

    try:
        in_process(svc, body, "legacy", message_handler=on_message)
    finally:
        svc.close()
