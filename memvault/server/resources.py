"""MCP resources and prompts: the aggregate views, one template for every memory file, and
three prompts. What each view shows is decided in ``reports``, what a context holds in
``context``; this module only serves them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from .. import changes, context, profile, reports
from ..errors import (
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    MemvaultError,
    UnsafePathError,
    explain_unexpected,
)
from ..models import Context
from ..profile import FieldSpec, Profile, Schema
from ..service import MemoryService
from .surface import SHOWN_VALUE

log = logging.getLogger(__name__)
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
    register_prompts(mcp, service)


def register_prompts(mcp: MCPServer, service: MemoryService) -> None:
    """recall_context and onboarding read the vault; extract_memories only instructs."""

    def recall_context(topic: str, budget_tokens: int = context.DEFAULT_BUDGET) -> str:
        """What memory knows about a topic (profile, preferences, memories, episodes, with
        ids), within a token budget, to read before working on it."""
        return _prompt(lambda: context_prompt(context.build_context(service, topic, budget_tokens)))

    def onboarding() -> str:
        """For a new vault: ask the person the few questions that fill their profile and
        first preferences, then store the answers."""
        return _prompt(
            lambda: onboarding_prompt(profile.load_schema(service), profile.read(service))
        )

    mcp.prompt()(recall_context)
    mcp.prompt()(onboarding)
    mcp.prompt()(extract_memories)
    _prompt_errors_as_the_spec_says(mcp)


def _prompt_errors_as_the_spec_says(mcp: MCPServer) -> None:
    """prompts/get refusals as -32602 (invalid params, as MCP says for an unknown prompt or
    a missing argument) naming what is wrong, and failures as -32603: the SDK answered
    every one with the code 0 and, for an argument of the wrong type, only "Error
    rendering prompt". Reaches into the SDK's private ``_lowlevel_server`` (as
    ``notify.register_legacy_subscriptions`` does)."""
    lowlevel = mcp._lowlevel_server
    entry = lowlevel.get_request_handler("prompts/get")
    assert entry is not None, "mcp SDK changed: prompts/get has no handler to wrap"
    sdk = entry.handler

    async def on_get_prompt(ctx: Any, params: Any) -> Any:
        try:
            return await sdk(ctx, params)
        except MCPError:
            raise
        except ValueError as exc:  # the SDK's: every failure, as a ValueError
            raise prompt_error(exc) from exc

    lowlevel.add_request_handler("prompts/get", entry.params_type, on_get_prompt)


def prompt_error(exc: ValueError) -> MCPError:
    """The SDK's ValueError for a prompt as the error MCP asks for."""
    causes, cause = [], exc.__cause__
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    invalid = next((c for c in causes if isinstance(c, ValidationError)), None)
    if invalid is not None:
        wrong = [_wrong_argument(e) for e in invalid.errors()]
        return MCPError(INVALID_PARAMS, f"invalid_input: {'; '.join(dict.fromkeys(wrong))}")
    if len(causes) <= 1:  # the SDK's own refusal (unknown prompt, missing argument), rewrapped
        return MCPError(INVALID_PARAMS, f"invalid_input: {str(exc)[:300]}")
    log.error("unexpected error in a prompt", exc_info=exc)
    error = explain_unexpected(causes[-1])
    return MCPError(INTERNAL_ERROR, f"{error.code}: {error}")


def _wrong_argument(error: ErrorDetails) -> str:
    name = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "unexpected_keyword_argument":
        return f"unknown argument {name!r}"
    shown = repr(error["input"])
    shown = shown if len(shown) <= SHOWN_VALUE else shown[: SHOWN_VALUE - 3] + "..."
    return f"{name}: {error['msg'][:1].lower()}{error['msg'][1:]}, got {shown}"


def _prompt(render: Callable[[], str]) -> str:
    """A prompt's text (the SDK runs it in a worker thread); memvault errors as the
    request's error, with their message (the SDK would only say the prompt failed)."""
    try:
        return render()
    except MemvaultError as exc:
        raise MCPError(INVALID_PARAMS, f"{exc.code}: {exc}") from exc


async def _read(render: Callable[[], str]) -> str:
    """Render in a worker thread (file reads); memvault errors as resource errors: a
    missing memory, a bad or unsafe URI (an ignored path, ``..``) or a file that is no
    note (binary, too large) as -32602 (invalid
    params; SEP-2164, 2026-07-28, gives a missing resource that code), the rest as -32603
    (internal error). The SDK adds the URI as the error's data."""
    try:
        return await anyio.to_thread.run_sync(render)
    except (MemoryNotFoundError, UnsafePathError, InvalidInputError, MalformedMemoryError) as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except MemvaultError as exc:
        raise ResourceError(str(exc)) from exc


def _aggregate(service: MemoryService, uri: str) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return await _read(lambda: reports.aggregate(service, uri))

    return read


def context_prompt(found: Context) -> str:
    """The recall_context prompt: how to use the context, then the context."""
    return (
        f"Before working on '{found.topic}', read what memory knows about it below "
        f"(about {found.used_tokens} of {found.budget_tokens} tokens). Follow the user's "
        "preferences and respect the profile, health facts above all. Cite the [ids] of "
        "what you use; if memories conflict, say so and prefer the most recent, "
        "highest-confidence one; correct what is wrong with `update_memory` or "
        "`set_profile`. For more, call `recall`.\n\n" + found.text
    )


def onboarding_prompt(schema: Schema, found: Profile) -> str:
    """The onboarding prompt: the unset profile fields as questions to ask, then how to
    store the answers."""
    done = {entry.field for entry in found.fields}
    todo = [spec for spec in schema.fields if spec.name not in done]
    lines = [f"- {_ask(spec)}" for spec in todo] or ["- (every field is set already)"]
    already = f"Already set: {', '.join(sorted(done))}.\n\n" if done else ""
    return (
        "Help the person set up their memory. Ask a few short questions, a related group "
        "at a time (who they are; how to answer them; health and diet; family and work; "
        "interests), in their language, in about five rounds at most. Every question may "
        "be skipped (health questions above all): never guess or fill in an answer.\n\n"
        f"Profile fields not set yet:\n{chr(10).join(lines)}\n\n{already}"
        "Then ask for two or three first preferences: how they like answers, tools, "
        "habits, things to avoid.\n\n"
        'Store each answer as it comes: `set_profile(field, value, source="user")` for a '
        "profile field (a list field takes a list; an enum exactly one of its values: map "
        'their words to it, or ask), and `remember(content, type="preference", '
        'confidence=1.0, source="user")` for each preference, one self-contained sentence '
        'each (`type="fact"` for other facts about them). If a call reports an error, fix '
        "the value and retry. End by calling `get_profile` and summarising what was stored."
    )


def _ask(spec: FieldSpec) -> str:
    kinds = {"date": " (a date, like 2019-04-23)", "bool": " (yes or no)", "number": " (a number)"}
    allowed = f" (one of: {', '.join(spec.values)})" if spec.values else kinds.get(spec.type, "")
    if spec.type == "list":
        allowed = f" (a list of: {', '.join(spec.values)})" if spec.values else " (a list)"
    return f"{spec.name}: {spec.description}{allowed}"


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
