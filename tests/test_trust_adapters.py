"""Adapters under hostile use (issue 13): CLI outcomes and flags, MCP notifications and
capabilities, errors from the unexpected, HTTP auth and token checks."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.server.mcpserver.exceptions import ToolError

from memvault.cli import cli
from memvault.server import Notifier, build_server, note_uri
from memvault.server.http import http_app
from memvault.server.tools import call
from memvault.service import MemoryService

from .helpers import INITIALIZE, call_tool, commit_count, git

MODES = ["legacy", "2026-07-28"]
LONG_ID = "a" * 5000
LONG_FOLDER = "f" * 300


def invoke(vault: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def files(vault: Path) -> set[str]:
    return set(git(vault, "ls-files").split()) | set(
        git(vault, "ls-files", "--others", "--exclude-standard").split()
    )


# -- CLI add: rejected and duplicate (item 9) ----------------------------------------------
def test_add_of_trivial_text_says_it_was_rejected_exits_3_and_writes_nothing(
    vault_path: Path,
) -> None:
    before, tree = commit_count(vault_path), files(vault_path)
    code, out, err = invoke(vault_path, "add", "ok")
    assert code == 3 and "Traceback" not in out + err
    assert len(out.strip().splitlines()) == 1 and out.startswith("rejected: ")
    assert "nothing written" in out
    code, out, _ = invoke(vault_path, "add", "ok", "--json")
    data = json.loads(out)
    assert code == 3 and data["action"] == "rejected" and data["reason"] and data["id"] is None
    assert commit_count(vault_path) == before and files(vault_path) == tree


def test_add_of_a_duplicate_names_the_memory_it_duplicates_and_exits_3(vault_path: Path) -> None:
    text = "The user drinks green tea every morning before work."
    code, out, _ = invoke(vault_path, "--json", "add", text, "--type", "preference")
    first = json.loads(out)
    assert code == 0 and first["action"] == "created"
    before, tree = commit_count(vault_path), files(vault_path)
    code, out, err = invoke(vault_path, "add", text, "--type", "preference")
    assert code == 3 and err == "" and len(out.strip().splitlines()) == 1
    assert out.startswith("duplicate: ") and first["path"] in out and first["id"] in out
    code, out, _ = invoke(vault_path, "add", text, "--type", "preference", "--json")
    data = json.loads(out)
    assert code == 3 and data["action"] == "duplicate" and data["commit"] is None
    assert data["duplicate_of"] == {"id": first["id"], "path": first["path"]}
    assert commit_count(vault_path) == before and files(vault_path) == tree


def test_add_help_documents_the_exit_codes() -> None:
    result = CliRunner().invoke(cli, ["add", "--help"])
    assert "exit 3" in " ".join(result.stdout.split())


# -- CLI flags: --json and --debug after the command name ----------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("search", "coffee", "--json"),
        ("list", "--json"),
        ("status", "--json"),
        ("doctor", "--json"),
        ("log", "--json"),
        ("connect", "--json"),
        ("list", "--debug", "--json"),
    ],
)
def test_json_is_accepted_after_the_command_name(vault_path: Path, args: tuple[str, ...]) -> None:
    code, out, err = invoke(vault_path, *args)
    assert code == 0, err
    json.loads(out)


def test_every_command_takes_json_and_debug_in_either_place() -> None:
    def commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
        found = []
        for name, command in group.commands.items():
            found.append((prefix + name, command))
            if hasattr(command, "commands"):
                found += commands(command, prefix + name + " ")
        return found

    for name, command in commands(cli):
        options = {opt for p in command.params for opt in getattr(p, "opts", [])}
        assert {"--json", "--debug"} <= options, name


def test_debug_after_the_command_name_turns_on_debug_logs(vault_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "--vault", str(vault_path), "list", "--debug"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and "DEBUG " in proc.stderr


# -- CLI: doctor's exit status ---------------------------------------------------------------
def test_doctor_exits_1_when_it_finds_a_problem_and_0_on_a_clean_vault(vault_path: Path) -> None:
    code, out, _ = invoke(vault_path, "doctor")
    assert code == 0 and out.startswith("ok: no problems")
    (vault_path / "facts" / "bad.md").write_text("---\n: : :\n---\n")
    code, out, _ = invoke(vault_path, "doctor", "--json")
    assert code == 1 and "malformed" in {p["kind"] for p in json.loads(out)["problems"]}


def test_doctor_does_not_fail_on_edits_that_are_only_uncommitted(vault_path: Path) -> None:
    (vault_path / "facts" / "fine.md").write_text("---\ntype: fact\n---\nA good hand edit.\n")
    code, out, _ = invoke(vault_path, "doctor")
    assert code == 0 and "uncommitted" in out


# -- CLI: the unexpected is one line, no traceback -------------------------------------------
def test_a_5000_character_id_on_the_command_line_is_one_short_line_without_a_traceback(
    vault_path: Path,
) -> None:
    for args in (("show", LONG_ID), ("add", "Folders have limits too.", "--folder", LONG_FOLDER)):
        before, tree = commit_count(vault_path), files(vault_path)
        result = CliRunner().invoke(cli, ["--vault", str(vault_path), *args])
        assert result.exit_code == 1 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert len(lines[0]) < 400 and LONG_ID[:400] not in lines[0]
        assert commit_count(vault_path) == before and files(vault_path) == tree


# -- MCP: list_changed once per change per subscriber (item 10) ------------------------------
async def reads(client: Client, n: int) -> None:
    for _ in range(n):
        await call_tool(client, "list_memories", {"limit": 1})


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_legacy_clients_get_one_list_changed_per_change_however_many_calls_came_before(
    service: MemoryService,
) -> None:
    sentinel = service.remember("The sentinel memory marks the end of a burst.", type="fact")
    assert sentinel.memory is not None
    uri = note_uri(sentinel.memory.path)
    server, notifier = build_server(service)
    counts = {"a": 0, "b": 0}
    done = {"a": anyio.Event(), "b": anyio.Event()}

    def handler(name: str) -> Any:
        async def on_message(message: Any) -> None:
            root = getattr(message, "root", message)
            method = getattr(root, "method", "")
            if method == "notifications/resources/list_changed":
                counts[name] += 1
            elif method == "notifications/resources/updated" and str(root.params.uri) == uri:
                done[name].set()

        return on_message

    async def main() -> None:
        async with (
            Client(server, mode="legacy", message_handler=handler("a")) as a,
            Client(server, mode="legacy", message_handler=handler("b")) as b,
        ):
            for client in (a, b):
                await client.session.subscribe_resource(uri)
            await reads(a, 10)
            await reads(b, 3)
            await call_tool(
                a, "remember", {"content": "A new memory appears once.", "type": "fact"}
            )
            await reads(b, 5)
            await call_tool(
                a, "update_memory", {"id": sentinel.memory.id, "content": "Burst over."}
            )  # type: ignore[union-attr]
            with anyio.fail_after(10):
                await done["a"].wait()
                await done["b"].wait()

    asyncio.run(main())
    assert counts == {"a": 1, "b": 1}
    assert notifier.attached == 0  # closed sessions are forgotten, not kept for ever


def test_listen_clients_get_one_list_changed_per_change(service: MemoryService) -> None:
    sentinel = service.remember("The sentinel memory marks the end of a burst.", type="fact")
    assert sentinel.memory is not None
    uri = note_uri(sentinel.memory.path)
    server, _ = build_server(service)

    async def main() -> list[Any]:
        events: list[Any] = []
        async with (
            Client(server, mode="2026-07-28") as client,
            client.listen(resource_subscriptions=[uri], resources_list_changed=True) as sub,
        ):
            await reads(client, 10)
            await call_tool(
                client, "remember", {"content": "A new memory appears once.", "type": "fact"}
            )
            await reads(client, 5)
            await call_tool(
                client, "update_memory", {"id": sentinel.memory.id, "content": "Burst over."}
            )  # type: ignore[union-attr]
            with anyio.fail_after(10):
                async for event in sub:
                    events.append(event)
                    if isinstance(event, ResourceUpdated) and event.uri == uri:
                        break
        return events

    events = asyncio.run(main())
    assert sum(isinstance(e, ResourcesListChanged) for e in events) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_capabilities_say_that_resource_lists_change_and_can_be_subscribed(
    service: MemoryService, mode: str
) -> None:
    """ "auto" asks server/discover, so the 2026-07-28 capabilities are the server's own."""
    server, _ = build_server(service)

    async def main() -> tuple[str, Any]:
        async with Client(server, mode=mode) as client:
            return client.protocol_version, client.server_capabilities.resources

    version, resources = asyncio.run(main())
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert resources is not None
    assert resources.list_changed is True and resources.subscribe is True


# -- MCP: the unexpected comes back as a clear error result ---------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_a_5000_character_id_or_300_character_folder_is_a_clear_error_result(
    service: MemoryService, mode: str
) -> None:
    server, _ = build_server(service)
    before, tree = commit_count(service.vault.root), files(service.vault.root)
    calls = [
        ("get_memory", {"id": LONG_ID}),
        ("memory_history", {"id": LONG_ID}),
        ("remember", {"content": "Folders have limits too.", "folder": LONG_FOLDER}),
    ]

    async def main() -> list[str]:
        texts = []
        async with Client(server, mode=mode) as client:
            for name, args in calls:
                result = await client.call_tool(name, args)
                assert result.is_error
                texts.append(str(result.content[0].text))  # type: ignore[union-attr]
        return texts

    for (name, _), text in zip(calls, asyncio.run(main()), strict=True):
        assert text.startswith(f"Error executing tool {name}: "), text
        assert len(text) > len(f"Error executing tool {name}: ") + 20
        assert LONG_ID[:400] not in text
    assert commit_count(service.vault.root) == before and files(service.vault.root) == tree


def test_an_os_error_in_a_tool_names_what_failed_and_what_to_do(service: MemoryService) -> None:
    notifier = Notifier(build_server(service)[1].bus)

    def too_long() -> None:
        raise OSError(errno.ENAMETOOLONG, "File name too long", "/vault/" + LONG_ID)

    def bug() -> None:
        raise KeyError("surprise")

    async def message(fn: Any) -> str:
        with pytest.raises(ToolError) as caught:
            await call(None, notifier, fn)
        return str(caught.value)

    text = asyncio.run(message(too_long))
    assert text.startswith("name_too_long: ") and "shorter" in text and len(text) < 400
    text = asyncio.run(message(bug))
    assert text.startswith("internal_error: ") and "KeyError" in text and "memvault doctor" in text


# -- HTTP: bearer scheme in any case, blank tokens are no tokens ------------------------------
@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_accepted_in_any_case(service: MemoryService, scheme: str) -> None:
    server, _ = build_server(service)
    app = http_app(server, "127.0.0.1", 8765, "s3cret")

    async def statuses(*authorizations: str) -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with (
            server.session_manager.run(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http,
        ):
            return [
                (
                    await http.post(
                        "/mcp",
                        json=INITIALIZE,
                        headers={
                            "Accept": "application/json, text/event-stream",
                            "Authorization": value,
                        },
                    )
                ).status_code
                for value in authorizations
            ]

    assert asyncio.run(
        statuses(
            f"{scheme} s3cret",
            f"{scheme}  s3cret ",
            f"{scheme} S3CRET",
            f"{scheme}s3cret",
            "Basic s3cret",
            "s3cret",
            "",
        )
    ) == [200, 200, 401, 401, 401, 401, 401]


@pytest.mark.slow
@pytest.mark.parametrize("token", ["", "   ", "\t\n"])
def test_a_blank_token_does_not_allow_a_public_bind(tmp_path: Path, token: str) -> None:
    """Refused before anything is made: the vault `serve --init` would create is not."""
    vault_path = tmp_path / "new-vault"
    for how in (["--token", token], []):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "memvault.cli",
                "--vault",
                str(vault_path),
                "serve",
                "--http",
                "--host",
                "0.0.0.0",
                *how,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "MEMVAULT_TOKEN": token},
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert "without a token" in proc.stderr and "Traceback" not in proc.stderr
        assert not vault_path.exists()


def test_a_public_bind_with_a_token_serves_clients_by_any_name_and_loopback_stays_local(
    service: MemoryService,
) -> None:
    """On 0.0.0.0 clients arrive as the machine's address or name: the token guards them.
    On loopback a foreign Host or Origin (DNS rebinding from a web page) is refused."""

    async def status(bind: str, token: str | None, base: str, headers: dict[str, str]) -> int:
        server, _ = build_server(service)
        transport = httpx.ASGITransport(app=http_app(server, bind, 8765, token))
        async with (
            server.session_manager.run(),
            httpx.AsyncClient(transport=transport, base_url=base) as http,
        ):
            accept = {"Accept": "application/json, text/event-stream"}
            response = await http.post("/mcp", json=INITIALIZE, headers={**accept, **headers})
            return response.status_code

    bearer = {"Authorization": "Bearer s3cret"}
    assert asyncio.run(status("0.0.0.0", "s3cret", "http://192.0.2.7:8765", bearer)) == 200
    assert asyncio.run(status("0.0.0.0", "s3cret", "http://vault.example:8765", {})) == 401
    assert asyncio.run(status("127.0.0.1", None, "http://evil.example:8765", {})) == 421
    origin = {"Origin": "http://evil.example:8765"}
    assert asyncio.run(status("127.0.0.1", None, "http://127.0.0.1:8765", origin)) == 403
