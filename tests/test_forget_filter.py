"""Forgetting everything a filter selects: the list comes first (nothing forgotten until the
person confirms, by elicitation or by a token bound to exactly those memories), then one
commit (archive, delete) or one history rewrite (purge). Real vaults, real git, a real
in-process MCP client and the real command line."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memvault import selection
from memvault.config import Settings
from memvault.errors import MemvaultError
from memvault.service import MemoryService

from .helpers import (
    DAY0,
    Clock,
    call_tool,
    commit_count,
    git,
    git_objects,
    in_process,
    run_memvault,
)
from .test_confirm import add, answering, at_terminal, error, forget
from .test_proposals import as_client, host, vault_state


def files(svc: MemoryService) -> list[str]:
    return sorted(str(p.relative_to(svc.root)) for p in svc.root.rglob("*.md"))


# -- the filter language ---------------------------------------------------------------------
def test_a_filter_line_becomes_the_same_filters_recall_uses() -> None:
    found = selection.parse('type:episode type:task tag:trip tag:"road trip" until:2026-01-01')
    assert found.types == ("episode", "task") and found.tags == ("trip", "road trip")
    assert found.until == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert not found.include_archived and found.include_expired
    assert selection.parse("folder:journal/2025 archived:yes").include_archived
    assert selection.parse("folder:journal/2025").folder == "journal/2025"
    assert selection.parse("type:x until:2026-01").until == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert selection.parse("type:x since:2025").since == dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "at least one condition"),
        ("archived:yes", "at least one condition"),
        ("dentist", "not key:value"),
        ("colour:blue", "not key:value"),
        ("type:", "not key:value"),
        ("since:last-may", "ISO date"),
        ("until:2026-1", "ISO date"),
        ("folder:a folder:b", "more than once"),
        ('tag:"unclosed', "cannot be read"),
        ("archived:maybe type:fact", "yes or no"),
        ("folder:../outside", "inside the vault"),
    ],
)
def test_a_filter_that_is_not_clear_is_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(MemvaultError) as refused:
        selection.parse(text)
    assert says in str(refused.value)


# -- over MCP --------------------------------------------------------------------------------
def test_a_filter_lists_its_memories_first_and_the_token_archives_exactly_those(
    svc: MemoryService, clock: Clock
) -> None:
    old = [add(svc, f"The user hiked trail {n} in 2025.", type="episode") for n in (1, 2)]
    clock.now = DAY0 + dt.timedelta(days=40)
    recent = add(svc, "The user hiked the coast trail last week.", type="episode")
    fact = add(svc, "The user's boots are size 43.", type="fact")
    before, commits = files(svc), commit_count(svc.root)
    until = (DAY0 + dt.timedelta(days=10)).date().isoformat()
    args = {"filter": f"type:episode until:{until}", "reason": "old hikes"}

    listed = forget(svc, args)
    assert listed["action"] == "needs_confirmation" and sorted(listed["pending"]) == sorted(old)
    assert listed["pending_paths"] == sorted(svc.get(i).path for i in old)
    assert "2 memories matching" in listed["warning"] and listed["confirm"]
    assert files(svc) == before and commit_count(svc.root) == commits

    done = forget(svc, args | {"confirm": listed["confirm"]})
    assert done["action"] == "archived" and sorted(done["archived"]) == sorted(old)
    assert commit_count(svc.root) == commits + 1
    assert all(svc.get(i).status == "archived" for i in old)
    assert svc.get(recent).status == "active" and svc.get(fact).status == "active"
    message = git(svc.root, "log", "-1", "--format=%B")
    assert f"Memvault-Filter: type:episode until:{until}" in message
    assert "Memvault-Reason: old hikes" in message and "Memvault-Op: forget-archive" in message


def test_a_filter_selecting_one_memory_is_still_listed_before_anything_is_forgotten(
    svc: MemoryService,
) -> None:
    only = add(svc, "The user planned a picnic.", type="episode", tags=["picnic"])
    commits = commit_count(svc.root)
    listed = forget(svc, {"filter": "tag:picnic"})
    assert listed["action"] == "needs_confirmation" and listed["pending"] == [only]
    assert commit_count(svc.root) == commits and svc.get(only).status == "active"


def test_a_memory_added_after_the_list_voids_the_token_and_nothing_is_written(
    svc: MemoryService,
) -> None:
    add(svc, "The user drafted plan A for the move.", type="task", tags=["move"])
    token = forget(svc, {"filter": "tag:move", "mode": "delete"})["confirm"]
    add(svc, "The user drafted plan B for the move.", type="task", tags=["move"])
    before, commits = files(svc), commit_count(svc.root)
    text = error(forget(svc, {"filter": "tag:move", "mode": "delete", "confirm": token}))
    assert "was given to forget 1 memory" in text and "2 memories" in text
    assert files(svc) == before and commit_count(svc.root) == commits


def test_delete_by_filter_removes_every_file_in_one_commit_and_history_keeps_them(
    svc: MemoryService,
) -> None:
    gone = [add(svc, f"Scratch note {n} for the talk.", type="note", tags=["talk"]) for n in (1, 2)]
    kept = add(svc, "The talk is on Friday.", type="fact", tags=["talk"])
    paths = [svc.get(i).path for i in gone]
    commits = commit_count(svc.root)
    args = {"filter": "type:note tag:talk", "mode": "delete"}
    done = forget(svc, args | {"confirm": forget(svc, args)["confirm"]})
    assert done["action"] == "deleted" and sorted(done["forgotten"]) == sorted(gone)
    assert commit_count(svc.root) == commits + 1
    assert not any((svc.root / p).exists() for p in paths) and svc.get(kept).status == "active"
    assert "Scratch note 1" in git(svc.root, "log", "-p")
    assert all(h.id not in gone for h in svc.recall("scratch note talk", k=5))


def test_purge_by_filter_erases_every_text_and_no_commit_names_the_filter(
    svc: MemoryService,
) -> None:
    secret = [
        add(svc, f"The user's therapist session {n} was about grief.", type="episode", tags=["x7"])
        for n in (1, 2)
    ]
    kept = add(svc, "The user likes long walks.", type="preference")
    args = {"filter": "tag:x7", "mode": "purge", "reason": "privacy request"}
    done = forget(svc, args | {"confirm": forget(svc, args)["confirm"]})
    assert done["action"] == "purged" and sorted(done["forgotten"]) == sorted(secret)
    assert done["warning"] and "clone" in done["warning"]
    history = git(svc.root, "log", "--all", "-p")
    assert "therapist" not in history and "x7" not in history
    assert "Memvault-Reason: privacy request" in git(svc.root, "log", "-1", "--format=%B")
    assert svc.get(kept).status == "active"
    assert not svc.recall("therapist grief", k=5)


def test_a_filter_matching_nothing_forgets_nothing_and_says_so(svc: MemoryService) -> None:
    add(svc, "The user reads on Sundays.", type="preference")
    commits = commit_count(svc.root)
    out = forget(svc, {"filter": "type:task tag:none-such"})
    assert out["action"] == "unchanged" and "nothing forgotten" in out["warning"]
    assert commit_count(svc.root) == commits


@pytest.mark.parametrize(
    "args",
    [
        {"filter": "type:episode", "id": "x"},
        {"filter": "type:episode", "scope": "session:a"},
        {"filter": "colour:blue"},
        {"filter": "   "},
    ],
)
def test_a_filter_forget_with_unclear_arguments_is_refused_and_nothing_is_written(
    svc: MemoryService, args: dict[str, str]
) -> None:
    add(svc, "The user visited a museum.", type="episode")
    before, commits = files(svc), commit_count(svc.root)
    text = error(forget(svc, args))
    assert "invalid_input" in text, text
    assert files(svc) == before and commit_count(svc.root) == commits


def test_an_elicitation_capable_client_shows_the_person_the_selection_and_forgets_it(
    svc: MemoryService,
) -> None:
    chosen = [add(svc, f"Errand {n}: buy stamps.", type="task", tags=["errand"]) for n in (1, 2)]
    elicit, asked = answering("accept")
    done = forget(svc, {"filter": "tag:errand", "mode": "delete"}, elicit)
    assert done["action"] == "deleted" and sorted(done["forgotten"]) == sorted(chosen)
    assert len(asked) == 1 and "2 memories matching 'tag:errand'" in asked[0]


# -- the command line ------------------------------------------------------------------------
def test_the_cli_lists_a_filter_and_forgets_only_with_yes(svc: MemoryService) -> None:
    chosen = [add(svc, f"Packing list {n}.", type="task", tags=["pack"]) for n in (1, 2)]
    paths = sorted(svc.get(i).path for i in chosen)
    commits = commit_count(svc.root)
    vault = ["--vault", str(svc.root)]

    dry = run_memvault(*vault, "--json", "forget", "--filter", "tag:pack", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert sorted(m["path"] for m in json.loads(dry.stdout)["matches"]) == paths
    scripted = run_memvault(*vault, "forget", "--filter", "tag:pack", "--delete")
    assert scripted.returncode == 0 and "add --yes" in scripted.stderr
    assert scripted.stdout.split() == paths and commit_count(svc.root) == commits

    done = run_memvault(*vault, "forget", "--filter", "tag:pack", "--delete", "--yes")
    assert done.returncode == 0, done.stderr
    assert commit_count(svc.root) == commits + 1
    assert not any((svc.root / p).exists() for p in paths)


def test_a_person_at_a_terminal_sees_the_list_and_no_keeps_everything(
    svc: MemoryService,
) -> None:
    chosen = [add(svc, f"Gift idea {n}.", type="note", tags=["gifts"]) for n in (1, 2)]
    commits = commit_count(svc.root)
    kept = at_terminal(svc.root, "n", "--filter", "tag:gifts")
    assert kept.returncode != 0 and "are you sure?" in kept.stderr
    assert all(svc.get(i).path in kept.stderr for i in chosen)
    assert commit_count(svc.root) == commits
    done = at_terminal(svc.root, "y", "--filter", "tag:gifts")
    assert done.returncode == 0, done.stderr
    assert commit_count(svc.root) == commits + 1


def test_archiving_by_filter_leaves_memories_already_archived_untouched(svc: MemoryService) -> None:
    done_before = add(svc, "The user finished book one.", type="episode", tags=["books"])
    svc.forget(done_before, "archive")
    archived_text = (svc.root / svc.get(done_before).path).read_text(encoding="utf-8")
    current = add(svc, "The user is reading book two.", type="episode", tags=["books"])
    listed = forget(svc, {"filter": "tag:books archived:yes"})
    assert listed["pending"] == [current]
    forget(svc, {"filter": "tag:books archived:yes", "confirm": listed["confirm"]})
    assert (svc.root / svc.get(done_before).path).read_text(encoding="utf-8") == archived_text
    deleting = forget(svc, {"filter": "tag:books archived:yes", "mode": "delete"})
    assert sorted(deleting["pending"]) == sorted([done_before, current])


# -- in proposal mode ----------------------------------------------------------------------
@pytest.fixture
def proposing(vault_path: Path) -> Iterator[MemoryService]:
    """A text-only vault whose MCP clients' writes are proposals."""
    service = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    yield service
    service.close()


def test_a_purge_by_filter_cannot_be_proposed_and_the_vault_history_is_untouched(
    proposing: MemoryService,
) -> None:
    made = proposing.remember(
        "The user's locker code is four digits long.", type="fact", tags=["x9"]
    )
    assert made.memory is not None
    before, history = vault_state(proposing), git(proposing.root, "rev-list", "--all")
    args = {"filter": "tag:x9", "mode": "purge"}

    async def body(client: Client) -> str:
        first = await client.call_tool("forget", args)
        token = (first.structured_content or {}).get("confirm")
        second = await client.call_tool("forget", {**args, "confirm": token})
        assert second.is_error
        return str(second.content[0].text)  # type: ignore[union-attr]

    assert "cannot be one" in in_process(proposing, body, **host("cursor"))
    assert vault_state(proposing) == before and git(proposing.root, "rev-list", "--all") == history


def test_archiving_by_filter_as_a_proposing_client_says_proposed(proposing: MemoryService) -> None:
    made = proposing.remember("The user jogs on Mondays.", type="episode", tags=["jog"])
    assert made.memory is not None
    before = vault_state(proposing)

    async def body(client: Client) -> dict[str, Any]:
        first = await call_tool(client, "forget", {"filter": "tag:jog"})
        return await call_tool(client, "forget", {"filter": "tag:jog", "confirm": first["confirm"]})

    done = in_process(proposing, body, **host("cursor"))
    assert done["action"] == "proposed" and done["archived"] == [made.memory.id]
    assert vault_state(proposing) == before  # the vault itself is unchanged until accepted


def test_a_purge_leaves_no_object_of_the_memory_while_a_proposal_worktree_exists(
    proposing: MemoryService,
) -> None:
    made = proposing.remember("The user's locker code is four digits long.", type="fact")
    assert made.memory is not None
    as_client(proposing, "cursor", "remember", {"content": "The user rides a red bicycle."})
    assert (proposing.root / ".memvault" / "proposals" / "cursor").is_dir()
    proposing.forget(made.memory.id, mode="purge")
    objects = git_objects(proposing.root)
    assert b"locker" not in objects and b"bicycle" in objects
    provenance = proposing.root / ".memvault" / "provenance.json"
    assert not provenance.exists() or "locker" not in provenance.read_text(encoding="utf-8")


def test_a_later_purge_keeps_the_records_of_earlier_purges(svc: MemoryService) -> None:
    first = add(svc, "The user's old bank PIN hint is 'garden'.", type="fact")
    second = add(svc, "The user's old alarm code hint is 'harbour'.", type="fact")
    svc.forget(first, "purge", "privacy request")
    svc.forget(second, "purge", "privacy request")
    subjects = git(svc.root, "log", "--format=%s").splitlines()
    records = [s for s in subjects if s.startswith("purge: ")]
    assert records == [
        f"purge: memory {second} erased from history",
        f"purge: memory {first} erased from history",
    ]
    history = git(svc.root, "log", "--all", "-p")
    assert "garden" not in history and "harbour" not in history
