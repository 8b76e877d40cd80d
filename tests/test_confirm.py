"""Destructive forgetting asks first: by MCP elicitation when the client can ask the person,
else by a short-lived, single-use token bound to the exact operation. Real vaults, real git,
a real in-process MCP client; the token's time comes from an injected clock."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import pty
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ElicitRequestParams, ElicitResult

from memvault import profile, reports
from memvault.service import MemoryService

from .helpers import DAY0, REPO, Clock, call_tool, commit_count, git, in_process, run_memvault

Elicit = Callable[[Any, ElicitRequestParams], Awaitable[ElicitResult]]


def mcp(
    service: MemoryService, body: Callable[[Client], Awaitable[Any]], elicit: Elicit | None = None
) -> Any:
    """Run ``body`` against a real in-process client (able to elicit if ``elicit`` is given)."""
    extra: dict[str, Any] = {"elicitation_callback": elicit} if elicit else {}
    return in_process(service, body, **extra)


def forget(service: MemoryService, args: dict[str, Any], elicit: Elicit | None = None) -> Any:
    """One forget call: its structured result, or the error result as it came."""

    async def body(client: Client) -> Any:
        result = await client.call_tool("forget", args)
        return result if result.is_error else result.structured_content

    return mcp(service, body, elicit)


def add(service: MemoryService, text: str, **kwargs: Any) -> str:
    result = service.remember(text, check_similar=False, **kwargs)
    assert result.memory is not None, result.reason
    return result.memory.id


def error(result: Any) -> str:
    assert not isinstance(result, dict), f"expected an error, got {result}"
    assert result.is_error
    return str(result.content[0].text)


def answering(action: str, confirm: bool = True) -> tuple[Elicit, list[str]]:
    """An elicitation callback that answers ``action`` and records what it was asked."""
    asked: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        content = {"confirm": confirm} if action == "accept" else None
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit, asked


# -- the token -------------------------------------------------------------------------------
def test_delete_without_confirmation_writes_nothing_and_returns_a_token_that_then_deletes(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user's old gym locker code is 4411.", type="fact")
    path = svc.get(memory_id).path
    commits = commit_count(svc.root)

    first = forget(svc, {"id": memory_id, "mode": "delete", "reason": "moved gyms"})
    assert first["action"] == "needs_confirmation" and first["commit"] is None
    assert first["pending"] == [memory_id] and first["confirm"]
    assert path in first["warning"] and "confirm=" in first["warning"]
    assert (svc.root / path).exists() and commit_count(svc.root) == commits

    args = {"id": memory_id, "mode": "delete", "reason": "moved gyms", "confirm": first["confirm"]}
    done = forget(svc, args)
    assert done["action"] == "deleted" and done["commit"]
    assert not (svc.root / path).exists() and commit_count(svc.root) == commits + 1
    message = git(svc.root, "log", "-1", "--format=%B")
    assert "Memvault-Reason: moved gyms" in message and "Memvault-Client: " in message


def test_both_calls_can_come_from_one_client_session(svc: MemoryService) -> None:
    memory_id = add(svc, "The user's spare key is under the blue pot.", type="fact")

    async def body(client: Client) -> dict[str, Any]:
        args = {"id": memory_id, "mode": "delete"}
        first = await call_tool(client, "forget", args)
        return await call_tool(client, "forget", args | {"confirm": first["confirm"]})

    assert mcp(svc, body)["action"] == "deleted"


@pytest.mark.parametrize("case", ["unknown", "expired", "other memory", "other mode"])
def test_a_bad_token_is_refused_with_a_clear_error_and_nothing_is_written(
    svc: MemoryService, clock: Clock, case: str
) -> None:
    target = add(svc, "The user's old phone PIN hint is 'grandma'.", type="fact")
    other = add(svc, "The user's old bike lock hint is 'river'.", type="fact")
    token = forget(svc, {"id": target, "mode": "delete"})["confirm"]
    args: dict[str, Any] = {"id": target, "mode": "delete", "confirm": token}
    expected = "unknown or used"
    if case == "unknown":
        args["confirm"] = "not-a-token"
    elif case == "expired":
        clock.now = DAY0 + dt.timedelta(minutes=5, seconds=1)
        expected = "expired (tokens last 5 minutes)"
    elif case == "other memory":
        args["id"] = other
        expected = "was given to forget 1 memory by delete"
    else:
        args["mode"] = "purge"
        expected = "was given to forget 1 memory by delete"
    files = sorted(p.relative_to(svc.root) for p in svc.root.rglob("*.md"))
    commits = commit_count(svc.root)

    text = error(forget(svc, args))
    assert "confirmation_refused" in text and expected in text, text
    assert "nothing was forgotten" in text and "without confirm" in text
    assert sorted(p.relative_to(svc.root) for p in svc.root.rglob("*.md")) == files
    assert commit_count(svc.root) == commits


def test_a_used_token_does_not_work_twice(svc: MemoryService) -> None:
    made = profile.set_field(svc, "language", "en", None, "user")
    args = {"id": made.memory.id}
    token = forget(svc, args)["confirm"]
    assert forget(svc, args | {"confirm": token})["action"] == "archived"
    commits = commit_count(svc.root)
    text = error(forget(svc, args | {"confirm": token}))  # the archived field, again
    assert "confirmation_refused" in text and "unknown or used" in text
    assert commit_count(svc.root) == commits


def test_a_token_is_spent_by_a_wrong_attempt(svc: MemoryService) -> None:
    target = add(svc, "The user's old locker is number 12.", type="fact")
    other = add(svc, "The user's old desk is number 7.", type="fact")
    token = forget(svc, {"id": target, "mode": "delete"})["confirm"]
    error(forget(svc, {"id": other, "mode": "delete", "confirm": token}))
    text = error(forget(svc, {"id": target, "mode": "delete", "confirm": token}))
    assert "unknown or used" in text
    assert (svc.root / svc.get(target).path).exists()


def test_a_token_still_valid_just_before_five_minutes(svc: MemoryService, clock: Clock) -> None:
    memory_id = add(svc, "The user's old badge number is 5521.", type="fact")
    token = forget(svc, {"id": memory_id, "mode": "delete"})["confirm"]
    clock.now = DAY0 + dt.timedelta(minutes=4, seconds=59)
    assert forget(svc, {"id": memory_id, "mode": "delete", "confirm": token})["commit"]


# -- what needs confirmation -----------------------------------------------------------------
def test_archiving_one_memory_needs_no_confirmation(svc: MemoryService) -> None:
    memory_id = add(svc, "The user is reading a novel about whales.", type="episode")
    commits = commit_count(svc.root)
    done = forget(svc, {"id": memory_id, "reason": "finished it"})
    assert done["action"] == "archived" and done["confirm"] is None
    assert commit_count(svc.root) == commits + 1


def test_purge_needs_confirmation_then_erases(svc: MemoryService) -> None:
    memory_id = add(svc, "The user's ex-partner's address is 3 Elm Road.", type="fact")
    path = svc.get(memory_id).path
    commits = commit_count(svc.root)
    first = forget(svc, {"id": memory_id, "mode": "purge", "reason": "privacy request"})
    assert first["action"] == "needs_confirmation" and "purge" in first["warning"]
    assert commit_count(svc.root) == commits and (svc.root / path).exists()
    args = {"id": memory_id, "mode": "purge", "reason": "privacy request"}
    done = forget(svc, args | {"confirm": first["confirm"]})
    assert done["action"] == "purged" and not (svc.root / path).exists()
    assert "3 Elm Road" not in git(svc.root, "log", "--all", "-p")
    message = git(svc.root, "log", "-1", "--format=%B")
    assert "Memvault-Reason: privacy request" in message and "Memvault-Client: " in message


def test_archiving_a_profile_field_needs_confirmation(svc: MemoryService) -> None:
    made = profile.set_field(svc, "language", "en", None, "user")
    commits = commit_count(svc.root)
    first = forget(svc, {"id": made.memory.path})
    assert first["action"] == "needs_confirmation" and first["pending"] == [made.memory.id]
    assert commit_count(svc.root) == commits
    done = forget(svc, {"id": made.memory.path, "confirm": first["confirm"]})
    assert done["action"] == "archived" and commit_count(svc.root) == commits + 1


def test_forgetting_a_session_scope_of_several_memories_needs_confirmation(
    svc: MemoryService,
) -> None:
    session = [add(svc, f"Draft {n}: compare flights.", scope=["session:trip"]) for n in (1, 2)]
    commits = commit_count(svc.root)
    first = forget(svc, {"scope": "session:trip", "reason": "trip booked"})
    assert first["action"] == "needs_confirmation" and sorted(first["pending"]) == sorted(session)
    assert "2 memories of session:trip" in first["warning"]
    assert commit_count(svc.root) == commits
    assert all(svc.get(i).status == "active" for i in session)

    later = add(svc, "Draft 3: compare trains.", scope=["session:trip"])
    text = error(forget(svc, {"scope": "session:trip", "confirm": first["confirm"]}))
    assert "was given to forget 2 memories" in text and commit_count(svc.root) == commits + 1
    second = forget(svc, {"scope": "session:trip"})
    assert sorted(second["pending"]) == sorted([*session, later])
    done = forget(svc, {"scope": "session:trip", "confirm": second["confirm"]})
    assert sorted(done["archived"]) == sorted([*session, later])


def test_a_session_scope_of_one_memory_is_archived_without_confirmation(
    svc: MemoryService,
) -> None:
    only = add(svc, "Draft: compare hotels.", scope=["session:solo"])
    done = forget(svc, {"scope": "session:solo"})
    assert done["archived"] == [only] and done["commit"]


# -- elicitation -----------------------------------------------------------------------------
def test_a_client_that_can_ask_the_user_confirms_by_elicitation_in_one_call(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user's old office is room 402.", type="fact")
    path = svc.get(memory_id).path
    elicit, asked = answering("accept")
    done = forget(svc, {"id": memory_id, "mode": "delete", "reason": "left"}, elicit)
    assert done["action"] == "deleted" and done["confirm"] is None
    assert len(asked) == 1 and path in asked[0] and "delete" in asked[0]
    assert not (svc.root / path).exists()


@pytest.mark.parametrize(
    ("action", "confirm"), [("decline", True), ("cancel", True), ("accept", False)]
)
def test_declining_the_elicitation_writes_nothing(
    svc: MemoryService, action: str, confirm: bool
) -> None:
    memory_id = add(svc, "The user's old car was a red hatchback.", type="fact")
    path = svc.get(memory_id).path
    commits = commit_count(svc.root)
    elicit, asked = answering(action, confirm)
    out = forget(svc, {"id": memory_id, "mode": "purge"}, elicit)
    assert out["action"] == "declined" and out["confirm"] is None and asked
    assert "declined" in out["warning"]
    assert (svc.root / path).exists() and commit_count(svc.root) == commits


def test_an_elicitation_capable_client_is_not_asked_to_archive_one_memory(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user watched a film about bees.", type="episode")
    elicit, asked = answering("decline")
    assert forget(svc, {"id": memory_id}, elicit)["action"] == "archived"
    assert asked == []


# -- export ----------------------------------------------------------------------------------
def test_export_carries_every_version_of_every_memory_and_profile_field(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user drinks green tea.", type="preference")
    svc.update(memory_id, "The user drinks oolong tea.")
    profile.set_field(svc, "language", "en", None, "user")
    profile.set_field(svc, "language", "zh", "moved", "user")
    exported = json.loads(json.dumps(reports.export(svc)))
    by_id = {m["id"]: m for m in exported["memories"]}
    texts = [v["text"] for v in by_id[memory_id]["history"]]
    assert len(texts) == 2 and "oolong" in texts[0] and "green tea" in texts[1]
    field = next(m for m in exported["memories"] if m["path"] == "profile/language.md")
    values = [v["text"] for v in field["history"]]
    assert len(values) == 2 and "value: zh" in values[0] and "value: en" in values[1]


# -- the command line ------------------------------------------------------------------------
def at_terminal(vault: Path, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``memvault forget ...`` with a real terminal on stdin, answering ``answer``."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, f"{answer}\n".encode())
        env = {"PYTHONPATH": str(REPO)}
        return run_memvault("--vault", str(vault), "forget", *args, env=env, stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)


def test_a_person_at_a_terminal_is_asked_before_a_delete_and_no_keeps_it(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user's old library card is 90210.", type="fact")
    path = svc.get(memory_id).path
    commits = commit_count(svc.root)
    kept = at_terminal(svc.root, "n", memory_id, "--delete")
    assert kept.returncode != 0 and "are you sure?" in kept.stderr and path in kept.stderr
    assert (svc.root / path).exists() and commit_count(svc.root) == commits
    done = at_terminal(svc.root, "y", memory_id, "--delete", "--reason", "expired card")
    assert done.returncode == 0, done.stderr
    assert not (svc.root / path).exists() and commit_count(svc.root) == commits + 1
    assert "Memvault-Client: cli" in git(svc.root, "log", "-1", "--format=%B")


def test_yes_skips_the_question_and_a_script_is_never_asked(svc: MemoryService) -> None:
    first = add(svc, "The user's old locker was 31.", type="fact")
    second = add(svc, "The user's old locker was 32.", type="fact")
    path = svc.get(second).path
    skipped = at_terminal(svc.root, "n", first, "--delete", "--yes")
    assert skipped.returncode == 0 and "are you sure" not in skipped.stderr
    scripted = run_memvault("--vault", str(svc.root), "forget", second, "--purge")
    assert scripted.returncode == 0, scripted.stderr
    assert "are you sure" not in scripted.stderr
    assert not (svc.root / path).exists() and "locker was 32" not in git(svc.root, "log", "-p")


def test_a_confirmation_nobody_answers_falls_back_to_the_token(
    svc: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that takes the question and never answers kept the call (and a worker
    thread) waiting for ever; after ELICIT_SECONDS it answers with a token instead."""
    from memvault.server import tools

    monkeypatch.setattr(tools, "ELICIT_SECONDS", 0.5)
    memory_id = add(svc, "The user's old bike lock code is 2231.", type="fact")
    asked: list[str] = []

    async def never(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        await anyio.Event().wait()
        raise AssertionError("unreachable")

    result = forget(svc, {"id": memory_id, "mode": "delete"}, never)
    assert asked and result["action"] == "needs_confirmation" and result["confirm"]
    assert svc.get(memory_id).id == memory_id  # nothing deleted
    done = forget(svc, {"id": memory_id, "mode": "delete", "confirm": result["confirm"]})
    assert done["action"] == "deleted"


def test_a_2026_07_28_client_is_given_the_token_without_a_warning_each_time(
    svc: MemoryService,
) -> None:
    """The server cannot ask such a client (no server-initiated requests); each destructive
    forget logged a WARNING that it "could not ask through the client", as if broken."""
    memory_id = add(svc, "The user's old office is room 402.", type="fact")
    elicit, asked = answering("accept")
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("memvault.server.tools")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)

    async def body(client: Client) -> Any:
        return (
            await client.call_tool("forget", {"id": memory_id, "mode": "delete"})
        ).structured_content

    try:
        out = in_process(svc, body, "2026-07-28", elicitation_callback=elicit)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert out["action"] == "needs_confirmation" and out["confirm"] and asked == []
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    assert any("confirming by token" in r.getMessage() for r in records)  # said, quietly


def test_a_purge_by_mcp_of_a_memory_whose_file_is_gone_is_confirmed_then_erases_its_history(
    svc: MemoryService,
) -> None:
    memory_id = add(svc, "The user's old PIN was 8812, kept on a sticky note.", type="fact")
    path = svc.get(memory_id).path
    svc.forget(memory_id, mode="delete")  # the file is gone; git history keeps the text
    assert "8812" in git(svc.root, "log", "--all", "-p")
    commits = commit_count(svc.root)
    args = {"id": memory_id, "mode": "purge"}

    first = forget(svc, args)

    assert first["action"] == "needs_confirmation", first
    assert first["pending"] == [memory_id] and first["pending_paths"] == [path]
    assert commit_count(svc.root) == commits
    done = forget(svc, args | {"confirm": first["confirm"]})
    assert done["action"] == "purged" and done["id"] == memory_id
    assert "8812" not in git(svc.root, "log", "--all", "-p")
