"""MCP resources and prompts: the aggregate views, one template for every memory file, and
two prompts. What each view shows is decided in ``reports``; this module only serves it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from .. import changes, reports
from ..errors import MemvaultError
from ..service import MemoryService

NOTE_PREFIX = "memory://note/"
AGGREGATES = {
    reports.INDEX: "Compact list of the most important and recent memories "
    "(<= 50 lines of <= 80 characters, about 4 KB). Read it at the start of a task.",
    reports.PREFERENCES: "The user's preferences, most important first.",
    reports.RECENT: "The 20 most recently changed memories.",
    reports.PROFILE: "The user's profile fields and values (set_profile), then other stable "
    "facts about the user (important facts, `profile` tag, `user:` scope).",
}

CHANGES = (
    "The last 20 changes to memories, newest first: what, by whom (a person or memvault and "
    "its client), and the cursor for memory_changes."
)


def note_uri(path: str) -> str:
    """The resource URI of the memory file at vault-relative ``path``."""
    return NOTE_PREFIX + quote(path, safe="/")


def register(mcp: MCPServer, service: MemoryService) -> None:
    """The aggregate resources, the recent changes, the note template and the prompts."""
    for uri, description in AGGREGATES.items():
        name = uri.removeprefix("memory://")
        mcp.resource(uri, name=name, description=description, mime_type="text/markdown")(
            _aggregate(service, uri)
        )

    async def recent_changes() -> str:
        return await _read(lambda: changes.render(changes.feed(service)))

    mcp.resource(changes.URI, name="changes", description=CHANGES, mime_type="text/markdown")(
        recent_changes
    )

    async def note(path: str) -> str:
        """One memory file, exactly as stored (frontmatter and body)."""
        return await _read(lambda: service.read_text(path))

    mcp.resource("memory://note/{+path}", mime_type="text/markdown")(note)
    mcp.prompt()(recall_context)
    mcp.prompt()(extract_memories)


async def _read(render: Callable[[], str]) -> str:
    """Render in a worker thread (file reads); memvault errors as resource errors."""
    try:
        return await anyio.to_thread.run_sync(render)
    except MemvaultError as exc:
        raise ResourceError(str(exc)) from exc


def _aggregate(service: MemoryService, uri: str) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return await _read(lambda: reports.aggregate(service, uri))

    return read


def recall_context(topic: str) -> str:
    """Gather what memory knows about a topic before working on it."""
    return (
        f"Before working on '{topic}', call the `recall` tool with query {topic!r} "
        "(and, if useful, read memory://preferences). Summarise what the user prefers and "
        "what is already known that bears on this topic, citing memory ids. If memories "
        "conflict, say so and prefer the most recent, highest-confidence one."
    )


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
