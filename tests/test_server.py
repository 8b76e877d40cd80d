"""The MCP surface in-process (mcp.Client on the server object), both protocol generations."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from memvault.server import build_server, note_uri, register_legacy_subscriptions
from memvault.service import MemoryService

from .helpers import call_tool, git, updated_listener, watching

MODES = ["legacy", "2026-07-28"]


def run(
    service: MemoryService,
    mode: str,
    body: Callable[[Client], Awaitable[Any]],
    **client_kwargs: Any,
) -> Any:
    server, _ = build_server(service)

    async def main() -> Any:
        async with Client(server, mode=mode, **client_kwargs) as client:
            return await body(client)

    return asyncio.run(main())


async def tool_error(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_has_a_description_schema_and_annotations(
    service: MemoryService, mode: str
) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "remember",
            "recall",
            "get_memory",
            "list_memories",
            "update_memory",
            "forget",
            "memory_history",
            "memory_changes",
            "memory_diff",
            "revert_memory",
            "related",
            "consolidate",
            "set_profile",
            "get_profile",
            "build_context",
            "vault_status",
            "sync",
            "list_proposals",
        }
        for t in tools.values():
            assert t.description and len(t.description) > 40
            assert t.annotations is not None
        assert tools["recall"].annotations.read_only_hint is True
        assert tools["forget"].annotations.destructive_hint is True
        assert not tools["remember"].annotations.read_only_hint  # false by default (MCP)
        assert tools["remember"].annotations.destructive_hint is False

    run(service, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_remember_recall_update_history_diff_revert_round_trip(
    service: MemoryService, mode: str
) -> None:
    async def body(client: Client) -> None:
        made = await call_tool(
            client,
            "remember",
            {
                "content": "The user wants weekly reports as Markdown tables.",
                "type": "preference",
                "tags": ["reports"],
                "importance": 0.8,
                "confidence": 1.0,
            },
        )
        assert made["action"] == "created" and made["uri"] == note_uri(made["path"])
        found = await call_tool(client, "recall", {"query": "how should reports look", "k": 3})
        assert found["results"][0]["id"] == made["id"] and found["results"][0]["why"]
        got = await call_tool(client, "get_memory", {"id": made["id"]})
        assert "Markdown tables" in got["body"] and got["meta"]["importance"] == 0.8
        updated = await call_tool(
            client,
            "update_memory",
            {
                "id": made["id"],
                "content": "The user wants weekly reports as bullet lists.",
                "expected_revision": got["revision"],
            },
        )
        assert updated["previous_revision"] == got["revision"] and updated["commit"]
        history = await call_tool(client, "memory_history", {"id": made["id"]})
        assert [c["op"] for c in history["commits"]] == ["update", "remember"]
        diff = await call_tool(client, "memory_diff", {"id": made["id"], "rev": made["commit"]})
        assert "-The user wants weekly reports as Markdown tables." in diff["diff"]
        reverted = await call_tool(
            client, "revert_memory", {"id": made["id"], "rev": made["commit"]}
        )
        assert reverted["action"] == "reverted"
        again = await call_tool(client, "get_memory", {"id": made["id"]})
        assert "Markdown tables" in again["body"]

    run(service, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_errors_come_back_as_results_that_say_what_to_do(service: MemoryService, mode: str) -> None:
    async def body(client: Client) -> None:
        made = await call_tool(
            client, "remember", {"content": "The office closes at 6pm.", "type": "fact"}
        )
        stale = (await call_tool(client, "get_memory", {"id": made["id"]}))["revision"]
        await call_tool(
            client, "update_memory", {"id": made["id"], "content": "The office closes at 7pm."}
        )
        text = await tool_error(
            client,
            "update_memory",
            {
                "id": made["id"],
                "content": "8pm",
                "expected_revision": stale,
            },
        )
        assert "stale_revision" in text and "call get_memory and retry" in text
        assert "not_found" in await tool_error(client, "get_memory", {"id": "01NOPE00000000"})
        assert "unsafe_path" in await tool_error(client, "get_memory", {"id": "../../etc/passwd"})
        rejected = await call_tool(client, "remember", {"content": "好的"})
        assert rejected["action"] == "rejected" and rejected["reason"]
        dup = await call_tool(
            client, "remember", {"content": "The office closes at 7pm.", "type": "fact"}
        )
        assert dup["action"] == "duplicate" and dup["similar"][0]["id"] == made["id"]

    run(service, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_list_forget_consolidate_and_status(service: MemoryService, mode: str) -> None:
    async def body(client: Client) -> None:
        ids = []
        # Three different facts: one sentence with only its numbers changed would be a
        # possible contradiction, which consolidate proposes to supersede.
        for content in (
            "The sprint retrospective moved to Friday afternoons.",
            "The office printer needs a badge to print.",
            "Release notes go in CHANGELOG.md before tagging.",
        ):
            made = await call_tool(client, "remember", {"content": content, "type": "fact"})
            ids.append(made["id"])
        page = await call_tool(client, "list_memories", {"limit": 2})
        assert page["total"] == 3 and len(page["memories"]) == 2 and page["next_cursor"] == "2"
        rest = await call_tool(client, "list_memories", {"limit": 2, "cursor": page["next_cursor"]})
        assert len(rest["memories"]) == 1 and rest["next_cursor"] is None
        gone = await call_tool(client, "forget", {"id": ids[0], "reason": "obsolete"})
        assert gone["action"] == "archived" and gone["path"].startswith("archive/")
        assert (await call_tool(client, "list_memories", {}))["total"] == 2
        plan = await call_tool(client, "consolidate", {})
        assert plan["dry_run"] is True and plan["message"] == "no proposals"
        status = await call_tool(client, "vault_status", {})
        assert status["memories"] == 3 and status["archived"] == 1

    run(service, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_consolidate_proposes_then_applies_merges_as_separate_commits(
    service: MemoryService, mode: str
) -> None:
    a = service.remember(
        "The user's favourite editor is Neovim.",
        type="preference",
        importance=0.9,
        check_similar=False,
    )
    b = service.remember(
        "The user's favourite editor is Neovim.",
        type="preference",
        importance=0.4,
        check_similar=False,
    )
    assert a.memory and b.memory

    async def body(client: Client) -> dict[str, Any]:
        plan = await call_tool(client, "consolidate", {"dry_run": True})
        assert [p["kind"] for p in plan["proposals"]] == ["merge"]
        assert plan["proposals"][0]["ids"] == [a.memory.id, b.memory.id]  # type: ignore[union-attr]
        return await call_tool(client, "consolidate", {"dry_run": False})

    applied = run(service, mode, body)
    assert applied["proposals"][0]["applied"] is True
    assert service.get(b.memory.id).status == "superseded"
    assert git(service.vault.root, "log", "-1", "--format=%s").startswith("merge: ")


@pytest.mark.parametrize("mode", MODES)
def test_resources_templates_and_prompts(service: MemoryService, mode: str) -> None:
    service.remember("Prefers concise answers without preamble.", type="preference", importance=0.9)
    fact = service.remember(
        "The user lives in Lisbon.", type="fact", importance=0.8, scope=["user:me"]
    )
    assert fact.memory is not None

    async def body(client: Client) -> None:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert uris == {
            "memory://index",
            "memory://preferences",
            "memory://recent",
            "memory://profile",
            "memory://changes",
        }
        index = (await client.read_resource("memory://index")).contents[0].text  # type: ignore[union-attr]
        lines = index.strip().splitlines()
        assert len(lines) <= 51 and all(len(line) <= 80 for line in lines[1:])
        assert "Prefers concise answers" in index
        prefs = (await client.read_resource("memory://preferences")).contents[0].text  # type: ignore[union-attr]
        assert "without preamble" in prefs and "Lisbon" not in prefs
        profile = (await client.read_resource("memory://profile")).contents[0].text  # type: ignore[union-attr]
        assert "Lisbon" in profile
        recent = (await client.read_resource("memory://recent")).contents[0].text  # type: ignore[union-attr]
        assert recent.index("Lisbon") < recent.index("preamble")
        note = await client.read_resource(note_uri(fact.memory.path))  # type: ignore[union-attr]
        assert note.contents[0].text.startswith("---\nid: " + fact.memory.id)  # type: ignore[union-attr]
        prompt = await client.get_prompt("recall_context", {"topic": "travel plans"})
        assert "recall" in prompt.messages[0].content.text  # type: ignore[union-attr]
        prompt = await client.get_prompt("extract_memories", {"conversation": "I hate meetings"})
        assert "I hate meetings" in prompt.messages[0].content.text  # type: ignore[union-attr]

    run(service, mode, body)


def test_the_index_resource_stays_within_its_budget(service: MemoryService) -> None:
    for n in range(60):
        service.remember(
            f"Memory number {n} with a deliberately long title that goes on and on "
            f"well past eighty characters {n}",
            type="fact",
            check_similar=False,
        )

    async def body(client: Client) -> str:
        return (await client.read_resource("memory://index")).contents[0].text  # type: ignore[union-attr]

    text = run(service, "legacy", body)
    lines = text.strip().splitlines()
    assert len(lines) == 51 and max(len(line) for line in lines[1:]) <= 80
    assert len(text) <= 4100


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_legacy_subscribers_get_resource_updated_and_list_changed(service: MemoryService) -> None:
    made = service.remember("The release train leaves on Thursdays.", type="fact")
    assert made.memory is not None
    uri = note_uri(made.memory.path)
    seen: list[str] = []
    wanted = {f"updated:{uri}", "updated:memory://index", "list_changed"}
    all_seen = asyncio.Event()

    async def body(client: Client) -> None:
        await client.session.subscribe_resource(uri)
        await client.session.subscribe_resource("memory://index")
        await call_tool(
            client, "update_memory", {"id": made.memory.id, "content": "Wednesdays now."}
        )  # type: ignore[union-attr]
        await call_tool(
            client, "remember", {"content": "A brand new memory appears.", "type": "fact"}
        )
        await asyncio.wait_for(all_seen.wait(), timeout=10)

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", "")
        if method == "notifications/resources/updated":
            seen.append(f"updated:{root.params.uri}")
        elif method == "notifications/resources/list_changed":
            seen.append("list_changed")
        if wanted <= set(seen):
            all_seen.set()

    run(service, "legacy", body, message_handler=on_message)
    assert f"updated:{uri}" in seen and "updated:memory://index" in seen and "list_changed" in seen


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_aggregate_updates_are_decided_from_the_write_not_by_rendering_the_views(
    service: MemoryService,
) -> None:
    """A note whose confidence changes leaves every view's text as it was; the write
    still says memory://index and memory://recent may have changed (the notifier renders
    nothing on the writer's thread), and never the views a note cannot feed."""
    made = service.remember("The team lunch is on Fridays.", type="note")
    assert made.memory is not None
    memory_id = made.memory.id
    seen, arrived, on_message = updated_listener()

    async def until(done: Callable[[], bool]) -> None:
        while not done():
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), timeout=10)

    async def body(client: Client) -> None:
        for uri in (
            "memory://index",
            "memory://recent",
            "memory://preferences",
            "memory://profile",
        ):
            await client.session.subscribe_resource(uri)
        before = (await client.read_resource("memory://index")).contents[0].text  # type: ignore[union-attr]

        async def update(confidence: float, n: int) -> None:
            args = {"id": memory_id, "confidence": confidence}
            await call_tool(client, "update_memory", args)
            await until(lambda: seen.count("memory://index") == seen.count("memory://recent") == n)

        await update(0.3, 1)
        await update(0.4, 2)  # no view's text changes, yet the views are announced again
        after = (await client.read_resource("memory://index")).contents[0].text  # type: ignore[union-attr]
        assert after == before
        await call_tool(
            client, "remember", {"content": "Prefers window seats.", "type": "preference"}
        )
        await until(lambda: "memory://preferences" in seen)

    run(service, "legacy", body, message_handler=on_message)
    assert seen.count("memory://index") == 3 and seen.count("memory://preferences") == 1
    assert "memory://profile" not in seen


def test_listen_subscribers_get_resource_updated(service: MemoryService) -> None:
    made = service.remember("Standups are at 9:15.", type="fact")
    assert made.memory is not None
    uri = note_uri(made.memory.path)

    async def body(client: Client) -> list[str]:
        events: list[str] = []
        async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as sub:
            await call_tool(
                client, "update_memory", {"id": made.memory.id, "content": "Standups are at 9:30."}
            )  # type: ignore[union-attr]

            async def first() -> None:
                async for event in sub:
                    events.append(type(event).__name__ + ":" + str(getattr(event, "uri", "")))
                    if any(e.startswith("ResourceUpdated") for e in events):
                        return

            await asyncio.wait_for(first(), timeout=10)
        return events

    events = run(service, "2026-07-28", body)
    assert f"ResourceUpdated:{uri}" in events


def test_commits_through_the_server_name_the_client(service: MemoryService) -> None:
    from mcp.types import Implementation

    async def body(client: Client) -> None:
        await call_tool(
            client, "remember", {"content": "Named clients leave a trailer.", "type": "fact"}
        )

    run(service, "legacy", body, client_info=Implementation(name="test-host", version="1.2"))
    assert "Memvault-Client: test-host/1.2" in git(service.vault.root, "log", "-1", "--format=%B")


def test_the_sdk_still_has_the_private_hook_for_legacy_subscriptions(
    service: MemoryService,
) -> None:
    server = MCPServer(name="probe")
    assert hasattr(server, "_lowlevel_server"), "mcp SDK changed: fix register_legacy_subscriptions"
    register_legacy_subscriptions(server, build_server(service)[1])
    assert server._lowlevel_server.get_request_handler("resources/subscribe") is not None


_RECORDERS: list[list[str]] = []  # lists the audit hook appends opened paths to


def _record_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _RECORDERS and isinstance(args[0], (str, bytes)):
        path = args[0].decode() if isinstance(args[0], bytes) else args[0]
        for recorder in _RECORDERS:
            recorder.append(path)


def memory_files(service: MemoryService, opened: list[str]) -> set[str]:
    """The memory files (vault-relative paths) among ``opened``."""
    root = service.vault.root.resolve()
    found = set()
    for path in opened:
        full = Path(path).resolve()
        if full.is_relative_to(root) and full.suffix == ".md":
            rel = full.relative_to(root).as_posix()
            if not rel.startswith((".git/", ".memvault/")):
                found.add(rel)
    return found


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_the_write_path_does_not_read_other_memory_files(text_only: MemoryService) -> None:
    """remember over MCP, with a client subscribed to every aggregate view and to the
    changes, opens no memory file but its own: which views changed is decided from the
    write itself, nothing is re-rendered. (The duplicate check reads the memories sharing
    the new text's words, at most retrieval.WORDED_CANDIDATES: the texts written here share
    none with the others, so any read is the notification path's.)"""
    from memvault import changes, reports

    sys.addaudithook(_record_opens)  # stays for the process; records only into _RECORDERS
    for n in range(6):  # every aggregate view has memories to show
        text_only.remember(f"The user prefers tea number {n} in the morning.", type="preference")
        text_only.remember(f"The user was born in city {n}.", type="fact", importance=0.9)
        text_only.remember(f"Meeting notes {n}: the team agreed on plan {n}.", type="note")
    _, announced, on_message = updated_listener(changes.URI)

    async def body(client: Client) -> tuple[set[str], set[str], set[str]]:
        for uri in (*reports.AGGREGATES, changes.URI):
            await client.session.subscribe_resource(uri)
        written, during, rendering = set(), [], []
        _RECORDERS.append(during)
        try:
            for content, kind in [
                ("Ana grows basil on her balcony.", "preference"),
                ("Rio lives in Lisbon.", "fact"),
            ]:
                announced.clear()
                args = {"content": content, "type": kind, "importance": 0.9}
                written.add((await call_tool(client, "remember", args))["path"])
                await asyncio.wait_for(announced.wait(), timeout=10)
        finally:
            _RECORDERS.remove(during)
        _RECORDERS.append(rendering)
        try:
            await client.read_resource(reports.PREFERENCES)  # a rendering reads files
        finally:
            _RECORDERS.remove(rendering)
        return written, memory_files(text_only, during), memory_files(text_only, rendering)

    written, during, rendering = run(text_only, "legacy", body, message_handler=on_message)
    assert len(written) == 2 and during <= written  # its own file, read back after writing
    assert len(rendering) >= 6  # the hook does see memory files being read


def test_a_binary_file_named_md_is_refused_as_a_note_resource_not_shown_as_garbage(
    service: MemoryService,
) -> None:
    """doctor calls it binary and the index leaves it out; reading it as a resource says
    so, instead of returning its bytes decoded into replacement characters."""
    (service.root / "scan.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    latin = service.root / "old-note.md"
    latin.write_bytes("# Café notes\nThe café opens at nine.\n".encode("latin-1"))

    async def body(client: Client) -> str:
        with pytest.raises(MCPError, match=r"scan\.md looks binary \(NUL bytes\)") as refused:
            await client.read_resource(note_uri("scan.md"))
        assert refused.value.error.code == INVALID_PARAMS  # not the server's own failure
        shown = await client.read_resource(note_uri("old-note.md"))
        return str(shown.contents[0].text)  # type: ignore[union-attr]

    assert run(service, "legacy", body).startswith("# Caf\ufffd notes")


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_or_unsafe_note_is_invalid_params_not_an_internal_error(
    service: MemoryService, mode: str
) -> None:
    """-32602 with the reason and the URI (SEP-2164 gives a missing resource that code);
    -32603 would tell the host the server broke."""
    (service.root.parent / "secret.md").write_text("---\nid: SECRET\n---\nouter secret\n")
    asked = {
        "memory://note/preferences": "no memory with id or path 'preferences'",
        "memory://note/01M8TZGHCWNX5747": "no memory with id or path '01M8TZGHCWNX5747'",
        "memory://note/.git/config": "'.git/config' is not a memory file (ignored path)",
        "memory://note/inbox/..": "'inbox/..' contains '..'",
        "memory://note/..%2fsecret.md": "Unknown resource",
    }

    async def body(client: Client) -> dict[str, MCPError]:
        errors = {}
        for uri in asked:
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            errors[uri] = raised.value
        return errors

    for uri, error in run(service, mode, body).items():
        assert error.code == INVALID_PARAMS, (uri, error.code)
        assert error.message.startswith(asked[uri]) and error.data == {"uri": uri}


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_subscriber_of_a_memory_by_id_is_notified_of_its_changes_wherever_it_moves(
    service: MemoryService,
) -> None:
    """resources/read takes memory://note/<id>, so resources/subscribe does too: a write
    through memvault, a person's edit of the file, and an edit after forget moved it to
    archive/ are all announced at the id form it was subscribed by."""
    made = service.remember("The user's bike is a blue Brompton.", type="fact")
    assert made.memory is not None
    memory_id, by_id = made.memory.id, f"memory://note/{made.memory.id}"
    seen, arrived, on_message = updated_listener(by_id)

    async def announced(n: int) -> None:
        while seen.count(by_id) < n:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), timeout=10)

    def edit(path: str, old: str, new: str) -> None:
        file = service.root / path
        file.write_text(file.read_text().replace(old, new))

    async def body(client: Client) -> None:
        await client.session.subscribe_resource(by_id)
        await call_tool(client, "update_memory", {"id": memory_id, "content": "A red one."})
        await announced(1)
        edit(made.memory.path, "red", "green")  # type: ignore[union-attr]
        await announced(2)
        await call_tool(client, "forget", {"id": memory_id})
        await announced(3)
        archived = await call_tool(client, "get_memory", {"id": memory_id})
        assert archived["path"].startswith("archive/")
        edit(archived["path"], "green", "yellow")
        await announced(4)

    with watching(service):
        run(service, "legacy", body, message_handler=on_message)
    assert made.memory.path not in by_id and seen.count(by_id) >= 4


def test_listen_subscribers_of_a_memory_by_id_get_resource_updated(service: MemoryService) -> None:
    made = service.remember("Standups are at 9:15.", type="fact")
    assert made.memory is not None
    by_id = f"memory://note/{made.memory.id}"

    async def body(client: Client) -> None:
        async with client.listen(resource_subscriptions=[by_id]) as sub:
            args = {"id": made.memory.id, "content": "Standups are at 9:30."}  # type: ignore[union-attr]
            await call_tool(client, "update_memory", args)

            async def first() -> None:
                async for event in sub:
                    if str(getattr(event, "uri", "")) == by_id:
                        return

            await asyncio.wait_for(first(), timeout=10)

    run(service, "2026-07-28", body)
