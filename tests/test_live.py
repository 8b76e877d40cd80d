"""Live vault across processes: real `memvault serve` subprocesses over stdio."""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from memvault.server import note_uri

from .helpers import call_tool, updated_listener

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def params(vault: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memvault.cli", "--vault", str(vault), "serve"]
    )


def test_a_subscriber_is_notified_when_a_person_edits_the_file(vault_path: Path) -> None:
    async def main() -> list[str]:
        seen, arrived, on_message = updated_listener()

        async with Client(params(vault_path), mode="legacy", message_handler=on_message) as c:
            made = await call_tool(
                c, "remember", {"content": "The cat eats at 7am.", "type": "fact"}
            )
            uri = note_uri(made["path"])
            await c.session.subscribe_resource(uri)
            seen.clear()
            arrived.clear()
            path = vault_path / made["path"]
            path.write_text(path.read_text().replace("7am", "8am"))  # a plain file write
            await asyncio.wait_for(arrived.wait(), timeout=10)
            for _ in range(50):
                if uri in seen:
                    break
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), timeout=10)
            found = await call_tool(c, "recall", {"query": "when does the cat eat"})
            assert "8am" in found["results"][0]["snippet"]
            return seen

    assert any(u.startswith("memory://note/facts/") for u in asyncio.run(main()))


def test_two_servers_on_one_vault_see_each_others_writes(vault_path: Path) -> None:
    async def main() -> None:
        async with AsyncExitStack() as stack:
            a = await stack.enter_async_context(Client(params(vault_path), mode="legacy"))
            b = await stack.enter_async_context(Client(params(vault_path), mode="legacy"))
            made = await call_tool(
                a,
                "remember",
                {
                    "content": "The staging database is refreshed every Sunday night.",
                    "type": "fact",
                },
            )
            found = await call_tool(b, "recall", {"query": "when is staging refreshed"})
            assert found["results"] and found["results"][0]["id"] == made["id"]
            again = await call_tool(
                b,
                "remember",
                {
                    "content": "Production deploys need two approvals.",
                    "type": "fact",
                },
            )
            back = await call_tool(a, "recall", {"query": "how many approvals for production"})
            assert back["results"][0]["id"] == again["id"]

    asyncio.run(main())
