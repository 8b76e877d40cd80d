"""Proposal mode: an agent's writes go to its branch, visible to it alone, until a person
accepts (on the vault, for everyone) or rejects them. Real git, real MCP sessions of two
differently named clients, the real command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.server.runner import modern_on_request
from mcp.shared.direct_dispatcher import create_direct_dispatcher_pair
from mcp.types import Implementation
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import LATEST_MODERN_VERSION

from memvault import confirm as confirming
from memvault import proposals
from memvault.cli import cli
from memvault.config import Settings, load_settings
from memvault.errors import InvalidInputError, NotSavedError, StaleRevisionError
from memvault.models import ChangeEvent
from memvault.server import build_server
from memvault.service import MemoryService, current_client

from .helpers import (
    PausingClock,
    branch_locked,
    commit_count,
    git,
    in_process,
    tool,
    watching,
    while_paused,
)

PERSON = "Ada Person"
BRANCH = "memvault/proposals/cursor"
TEA = "The user's favourite tea is genmaicha, brewed at 80 degrees."


@pytest.fixture
def vault(vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryService]:
    """A text-only vault in proposal mode whose repository names a person."""
    git(vault_path, "config", "user.name", PERSON)
    git(vault_path, "config", "user.email", "ada@example.org")
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "none")  # the command line's service too
    monkeypatch.setenv("MEMVAULT_AGENT_WRITES", "propose")
    service = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    yield service
    service.close()


def host(name: str) -> dict[str, Any]:
    return {"client_info": Implementation(name=name, version="2.0")}


def as_client(service: MemoryService, name: str, tool_name: str, args: dict[str, Any]) -> Any:
    return tool(service, tool_name, args, **host(name))


def failing(service: MemoryService, name: str, tool_name: str, args: dict[str, Any]) -> str:
    """A tool call that must fail: its error text."""

    async def body(client: Client) -> str:
        result = await client.call_tool(tool_name, args)
        assert result.is_error, result.structured_content
        return str(result.content[0].text)  # type: ignore[union-attr]

    text: str = in_process(service, body, **host(name))
    return text


def recalled(service: MemoryService, name: str, query: str) -> list[dict[str, Any]]:
    out = as_client(service, name, "recall", {"query": query, "min_relevance": 0})
    return list(out["results"])


def vault_state(service: MemoryService) -> tuple[int, str, list[str]]:
    """The vault's commits, working tree status and memory files."""
    status = git(service.root, "status", "--porcelain", "--untracked-files=all")
    return commit_count(service.root), status, service.memory_paths()


def branch_commits(service: MemoryService) -> int:
    return int(git(service.root, "rev-list", "--count", BRANCH).strip())


def cli_run(vault: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def propose_tea(service: MemoryService) -> dict[str, Any]:
    made = as_client(service, "cursor", "remember", {"content": TEA, "type": "preference"})
    assert made["action"] == "proposed", made
    return dict(made)


# -- write -> branch --------------------------------------------------------------------
def test_a_proposing_clients_write_is_one_commit_on_its_branch_and_not_in_the_vault(
    vault: MemoryService,
) -> None:
    before = vault_state(vault)
    made = propose_tea(vault)
    assert vault_state(vault) == before  # no commit, no file, nothing uncommitted
    assert not (vault.root / made["path"]).exists()
    assert not vault.recall("genmaicha", filters=None)  # not in the vault's index
    message = git(vault.root, "log", "-1", "--format=%s%n%b", BRANCH)
    assert message.startswith(f"remember: {made['path']}")
    assert "Memvault-Client: cursor/2.0" in message and f"Memvault-Id: {made['id']}" in message
    assert git(vault.root, "rev-parse", BRANCH).strip() == made["commit"]
    mine = as_client(vault, "cursor", "list_proposals", {})
    assert mine["mode"] == "propose"
    assert [(p["id"], p["op"], p["memory"]) for p in mine["proposals"]] == [
        (made["commit"][:12], "remember", made["id"])
    ]
    assert mine["proposals"][0]["paths"] == [made["path"]]


def test_the_proposal_worktree_lives_under_the_ignored_state_folder(
    vault: MemoryService,
) -> None:
    made = propose_tea(vault)
    worktree = vault.root / ".memvault" / "proposals" / "cursor"
    assert (worktree / made["path"]).is_file()
    assert vault.is_ignored(f".memvault/proposals/cursor/{made['path']}")
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all", "--ignored=no") == ""
    vault.sync_index()  # a full re-index finds only the vault's own memories
    assert made["id"] not in {r.id for r in vault.records()}


def test_a_running_watcher_commits_nothing_when_an_agent_proposes(vault: MemoryService) -> None:
    with watching(vault) as (_, watcher, events):
        made = propose_tea(vault)
        note = vault.root / "facts" / "by-hand.md"
        note.parent.mkdir(exist_ok=True)
        note.write_text("# By hand\n\nThe user bikes to work.\n", encoding="utf-8")
        assert watcher.wait_for(lambda: vault.history.uncommitted() == [], timeout=20)
        assert watcher.wait_for(lambda: any("facts/by-hand.md" in e.changed for e in events), 20)
    seen = {p for e in events for p in (*e.changed, *e.added)}
    assert made["path"] not in seen and not any(".memvault" in p for p in seen)
    assert "remember" not in git(vault.root, "log", "--format=%s", "HEAD")


# -- visible to its client only ---------------------------------------------------------
def test_a_proposal_is_visible_to_its_client_only(vault: MemoryService) -> None:
    made = propose_tea(vault)
    hits = recalled(vault, "cursor", "genmaicha tea")
    assert [(h["id"], h.get("proposed")) for h in hits] == [(made["id"], True)]
    assert "proposed" in hits[0]["why"]
    assert recalled(vault, "claude-code", "genmaicha tea") == []

    got = as_client(vault, "cursor", "get_memory", {"id": made["id"]})
    assert got["proposed"] is True and "genmaicha" in got["body"]
    assert "not_found" in failing(vault, "claude-code", "get_memory", {"id": made["id"]})

    listed = as_client(vault, "cursor", "list_memories", {})["memories"]
    assert [m.get("proposed") for m in listed if m["id"] == made["id"]] == [True]
    others = as_client(vault, "claude-code", "list_memories", {})["memories"]
    assert made["id"] not in {m["id"] for m in others}
    assert as_client(vault, "claude-code", "list_proposals", {})["proposals"] == []


def test_an_update_proposal_replaces_the_memory_for_its_client_only(vault: MemoryService) -> None:
    made = vault.remember("The user drinks coffee every morning.", type="preference")
    assert made.memory is not None
    memory_id = made.memory.id
    args = {"id": memory_id, "content": "The user drinks green tea every morning, not coffee."}
    assert as_client(vault, "cursor", "update_memory", args)["action"] == "proposed"

    mine = recalled(vault, "cursor", "every morning")
    assert [(h["id"], h.get("proposed")) for h in mine] == [(memory_id, True)]
    assert "green tea" in mine[0]["snippet"]
    theirs = recalled(vault, "claude-code", "every morning")
    assert [(h["id"], h.get("proposed")) for h in theirs] == [(memory_id, None)]
    assert "coffee" in theirs[0]["snippet"]
    assert "coffee" in vault.get(memory_id).body


def test_a_proposed_archive_hides_the_memory_from_its_client_only(vault: MemoryService) -> None:
    made = vault.remember("The user lives in Lisbon.", type="fact")
    assert made.memory is not None
    result = as_client(vault, "cursor", "forget", {"id": made.memory.id})
    assert result["action"] == "proposed"
    assert recalled(vault, "cursor", "Lisbon") == []  # archived ones are not recalled
    assert [h["id"] for h in recalled(vault, "claude-code", "Lisbon")] == [made.memory.id]
    assert vault.get(made.memory.id).path == made.memory.path


# -- accept -> on the vault -> visible to all --------------------------------------------
def test_accepting_puts_the_proposal_in_the_vault_in_one_commit_by_the_person(
    vault: MemoryService,
) -> None:
    made = propose_tea(vault)
    events: list[ChangeEvent] = []
    vault.listeners.append(events.append)
    before = commit_count(vault.root)

    decision = proposals.accept(vault, made["commit"][:8])

    assert commit_count(vault.root) == before + 1
    head = git(vault.root, "log", "-1", "--format=%an%n%s%n%b")
    assert head.startswith(f"{PERSON}\naccept: remember: {made['path']}")
    assert (
        f"Memvault-Proposal: {made['commit']}" in head
        and "Memvault-Proposed-By: cursor/2.0" in head
    )
    assert decision.commit == git(vault.root, "rev-parse", "HEAD").strip()
    assert (vault.root / made["path"]).is_file()
    assert vault.get(made["id"]).body == vault.get(made["path"]).body
    assert any(made["path"] in e.added for e in events)  # subscribers are told

    for name in ("claude-code", "cursor"):
        hits = recalled(vault, name, "genmaicha tea")
        assert [(h["id"], h.get("proposed")) for h in hits] == [(made["id"], None)]
    assert as_client(vault, "cursor", "list_proposals", {})["proposals"] == []


def test_an_accept_whose_commit_fails_leaves_the_vault_and_the_proposal_as_they_were(
    vault: MemoryService,
) -> None:
    """git cannot commit the person's accept (another git holds the branch's lock): the
    file written for it is taken back, nothing is committed on either side, the proposal
    still waits, and the same accept succeeds once git can commit again."""
    made = propose_tea(vault)
    before, on_branch = vault_state(vault), branch_commits(vault)
    with branch_locked(vault), pytest.raises(NotSavedError, match="nothing was saved"):
        proposals.accept(vault, made["commit"][:8])
    assert vault_state(vault) == before
    assert not (vault.root / made["path"]).exists()
    assert branch_commits(vault) == on_branch
    assert [p.commit for p in proposals.pending(vault)] == [made["commit"]]
    assert recalled(vault, "claude-code", "genmaicha tea") == []

    proposals.accept(vault, made["commit"][:8])
    assert commit_count(vault.root) == before[0] + 1
    assert [h["id"] for h in recalled(vault, "claude-code", "genmaicha tea")] == [made["id"]]


def test_proposals_that_build_on_each_other_are_accepted_in_order(vault: MemoryService) -> None:
    made = propose_tea(vault)
    args = {"id": made["id"], "content": "The user's favourite tea is sencha."}
    changed = as_client(vault, "cursor", "update_memory", args)
    assert changed["action"] == "proposed"
    first, second = proposals.pending(vault)
    with pytest.raises(StaleRevisionError, match="earlier proposal"):
        proposals.accept(vault, second.id)
    before = commit_count(vault.root)
    with pytest.raises(InvalidInputError, match="reject that one first"):
        proposals.reject(vault, first.id)
    assert commit_count(vault.root) == before
    proposals.accept(vault, first.id)
    assert [p.id for p in proposals.pending(vault)] == [second.id]
    assert recalled(vault, "cursor", "sencha")[0].get("proposed") is True
    proposals.accept(vault, second.id)
    assert "sencha" in vault.get(made["id"]).body and proposals.pending(vault) == []


def test_a_proposal_over_a_memory_changed_in_the_vault_since_is_refused(
    vault: MemoryService,
) -> None:
    made = vault.remember("The user's desk is by the window.", type="fact")
    assert made.memory is not None
    args = {"id": made.memory.id, "content": "The user's desk is by the door."}
    as_client(vault, "cursor", "update_memory", args)
    vault.update(made.memory.id, content="The user's desk is in the attic.")  # a person, meanwhile
    before = vault_state(vault)
    (waiting,) = proposals.pending(vault)
    with pytest.raises(StaleRevisionError, match="not what proposal"):
        proposals.accept(vault, waiting.id)
    assert vault_state(vault) == before
    assert "attic" in vault.get(made.memory.id).body
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]


def propose_forgetting(service: MemoryService, mode: str) -> tuple[str, str, proposals.Pending]:
    """A vault memory and a cursor proposal to forget it (archive or delete): id, path and
    the proposal."""
    made = service.remember("Carol runs the design team.", type="fact")
    assert made.memory is not None
    args = {"id": made.memory.id, "mode": mode}
    result = as_client(service, "cursor", "forget", args)
    if result["action"] == "needs_confirmation":  # a deletion is confirmed first
        result = as_client(service, "cursor", "forget", {**args, "confirm": result["confirm"]})
    assert result["action"] == "proposed"
    (waiting,) = proposals.pending(service)
    return made.memory.id, made.memory.path, waiting


def test_accepting_an_archive_proposal_moves_the_memory_to_the_archive_in_one_commit(
    vault: MemoryService,
) -> None:
    memory_id, path, waiting = propose_forgetting(vault, "archive")
    before = commit_count(vault.root)
    decision = proposals.accept(vault, waiting.id)
    assert commit_count(vault.root) == before + 1
    assert set(decision.paths) == {path, f"archive/{path}"}
    assert not (vault.root / path).exists()
    assert vault.get(memory_id).path == f"archive/{path}"
    assert vault.vault.id_map()[memory_id] == [f"archive/{path}"]
    assert proposals.pending(vault) == []


def test_accepting_an_archive_of_a_memory_the_person_deleted_since_is_refused(
    vault: MemoryService,
) -> None:
    """Deleting is a change: the archive's half that adds archive/... must not bring the
    memory back. Nothing is written or committed on either side, and the proposal waits,
    to be rejected."""
    memory_id, path, waiting = propose_forgetting(vault, "archive")
    git(vault.root, "rm", "--quiet", path)  # a person, meanwhile, with git
    git(vault.root, "commit", "--quiet", "-m", "person deletes carol")
    before, on_branch = vault_state(vault), branch_commits(vault)

    with pytest.raises(StaleRevisionError, match="was deleted from the vault") as refused:
        proposals.accept(vault, waiting.id)

    assert path in str(refused.value) and memory_id in str(refused.value)
    assert f"memvault review reject {waiting.id}" in str(refused.value)
    assert vault_state(vault) == before
    assert not (vault.root / "archive" / path).exists()
    assert branch_commits(vault) == on_branch
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]
    code, _, err = cli_run(vault.root, "review", "accept", "--all")
    assert code == 1 and "was deleted from the vault" in err
    assert vault_state(vault) == before
    proposals.reject(vault, waiting.id)
    assert proposals.pending(vault) == [] and vault_state(vault) == before


@pytest.mark.parametrize("mode", ["archive", "delete"])
def test_accepting_a_forget_of_a_memory_the_person_moved_since_is_refused(
    vault: MemoryService, mode: str
) -> None:
    """Moving is a change: accepting would leave the memory active where the person put it
    (and, for an archive, add a second file with the same id in archive/)."""
    memory_id, path, waiting = propose_forgetting(vault, mode)
    git(vault.root, "mv", path, "people/carol.md")  # a person, meanwhile, with git
    git(vault.root, "commit", "--quiet", "-m", "person moves carol")
    before, on_branch = vault_state(vault), branch_commits(vault)

    with pytest.raises(StaleRevisionError, match=r"was moved to people/carol\.md") as refused:
        proposals.accept(vault, waiting.id)

    assert path in str(refused.value) and memory_id in str(refused.value)
    assert f"memvault review reject {waiting.id}" in str(refused.value)
    assert vault_state(vault) == before
    assert vault.vault.id_map()[memory_id] == ["people/carol.md"]  # no second copy
    assert branch_commits(vault) == on_branch
    assert [p.id for p in proposals.pending(vault)] == [waiting.id]


# -- reject -------------------------------------------------------------------------------
def test_rejecting_drops_the_proposal_in_one_commit_by_the_person(vault: MemoryService) -> None:
    made = propose_tea(vault)
    before, on_branch = vault_state(vault), branch_commits(vault)

    decision = proposals.reject(vault, made["commit"][:12])

    assert vault_state(vault) == before
    assert branch_commits(vault) == on_branch + 1
    head = git(vault.root, "log", "-1", "--format=%an%n%s%n%b", BRANCH)
    assert head.startswith(f"{PERSON}\nreject: remember: {made['path']}")
    (key,) = (t for t in head.splitlines() if t.startswith("Memvault-Rejected: "))
    assert key in git(vault.root, "log", "-1", "--format=%b", made["commit"]).replace(
        "Memvault-Proposed", "Memvault-Rejected"
    )
    assert decision.commit == git(vault.root, "rev-parse", BRANCH).strip()
    assert recalled(vault, "cursor", "genmaicha tea") == []
    assert as_client(vault, "cursor", "list_proposals", {})["proposals"] == []
    with pytest.raises(InvalidInputError, match="no pending proposal"):
        proposals.reject(vault, made["commit"][:12])


# -- refusals -----------------------------------------------------------------------------
@pytest.fixture
def embedded(vault_path: Path) -> Iterator[MemoryService]:
    """Proposal mode with real embeddings (duplicates are found by their vectors)."""
    service = MemoryService.open(vault_path, Settings(agent_writes="propose"))
    yield service
    service.close()


def test_a_refused_proposal_leaves_no_file_and_no_commit(embedded: MemoryService) -> None:
    vault = embedded
    vault.remember("The user's bicycle is a blue Brompton.", type="fact")
    before = vault_state(vault)
    worktree = vault.root / ".memvault" / "proposals" / "cursor"

    trivial = as_client(vault, "cursor", "remember", {"content": "ok"})
    assert trivial["action"] == "rejected"
    secret = {"content": "The deploy key is AKIAIOSFODNN7EXAMPLE for the user's AWS account."}
    assert "secret" in failing(vault, "cursor", "remember", secret)
    duplicate = {"content": "The user's bicycle is a blue Brompton.", "type": "fact"}
    assert as_client(vault, "cursor", "remember", duplicate)["action"] == "duplicate"
    unknown = {"id": "01ZZZZZZZZZZZZZZ", "content": "The user rides a red bicycle."}
    assert "not_found" in failing(vault, "cursor", "update_memory", unknown)

    assert vault_state(vault) == before
    assert git(vault.root, "rev-list", "--count", f"HEAD..{BRANCH}").strip() == "0"
    assert git(worktree, "status", "--porcelain", "--untracked-files=all") == ""
    assert as_client(vault, "cursor", "list_proposals", {})["proposals"] == []


def test_a_client_proposing_what_it_already_proposed_is_told_and_nothing_is_written(
    embedded: MemoryService,
) -> None:
    """The duplicate check sees the client's own pending proposals, as it sees the vault:
    the same fact again is no second proposal; a correction of it is one, reported as a
    possible contradiction of the pending proposal; other clients' proposals are theirs."""
    vault = embedded
    made = propose_tea(vault)
    on_branch = branch_commits(vault)

    again = as_client(vault, "cursor", "remember", {"content": TEA, "type": "preference"})
    assert again["action"] == "duplicate"
    waiting = f"already proposed as {made['path']} (id {made['id']}), waiting for review"
    assert again["reason"] == waiting
    assert [(s["id"], s["relation"], s["proposed"]) for s in again["similar"]] == [
        (made["id"], "duplicate", True)
    ]
    assert branch_commits(vault) == on_branch
    assert len(proposals.pending(vault)) == 1

    corrected = TEA.replace("80 degrees", "70 degrees")
    fixed = as_client(vault, "cursor", "remember", {"content": corrected, "type": "preference"})
    assert fixed["action"] == "proposed"
    assert (made["id"], "possible_contradiction", True) in [
        (s["id"], s["relation"], s["proposed"]) for s in fixed["similar"]
    ]
    other = as_client(vault, "claude-code", "remember", {"content": TEA, "type": "preference"})
    assert other["action"] == "proposed"  # cursor's proposals are not in the vault yet


def test_a_proposing_clients_consolidate_proposes_merges_judged_on_the_vaults_vectors(
    embedded: MemoryService,
) -> None:
    """consolidate(dry_run=false) by a proposing client finds the vault's near-duplicates
    (the vault's vectors, not its branch's text-only index) and proposes the merge."""
    vault = embedded
    kept = vault.remember("The user's favourite editor is Neovim.", type="preference")
    twin = vault.remember(
        "The user's favourite editor is Neovim.",
        check_similar=False,
        type="preference",
        importance=0.3,
    )
    assert kept.memory and twin.memory
    before = vault_state(vault)

    out = as_client(vault, "cursor", "consolidate", {"dry_run": False})
    merges = [p for p in out["proposals"] if p["kind"] == "merge"]
    assert [(p["ids"], p["applied"]) for p in merges] == [([kept.memory.id, twin.memory.id], True)]
    assert vault_state(vault) == before
    (waiting,) = as_client(vault, "cursor", "list_proposals", {})["proposals"]
    assert waiting["op"] == "merge" and waiting["memory"] == twin.memory.id
    proposals.accept(vault, waiting["id"])
    assert vault.get(twin.memory.id).status == "superseded"


@pytest.mark.parametrize("target", ["id", "filter"])
def test_a_purge_cannot_be_proposed_so_it_is_refused_before_anyone_is_asked_to_confirm_it(
    vault: MemoryService, target: str
) -> None:
    """Asking the person to confirm a purge and then refusing the confirmed call would
    waste their yes: the first call refuses, and no confirmation token is minted."""
    made = vault.remember("The user's locker code is four digits long.", type="fact")
    assert made.memory is not None
    before = vault_state(vault)
    chosen = {"id": made.memory.id} if target == "id" else {"filter": "type:fact"}
    text = failing(vault, "cursor", "forget", {**chosen, "mode": "purge"})
    assert "invalid_input" in text and "a purge erases history and cannot be one" in text
    assert ("--filter ... --purge" in text) == (target == "filter")
    assert confirming.tokens(vault)._pending == {}
    assert vault_state(vault) == before


def test_only_the_named_clients_propose_when_the_vault_writes_directly(
    vault_path: Path,
) -> None:
    settings = Settings(embedder="none", propose_clients=("Cursor",))
    service = MemoryService.open(vault_path, settings)
    try:
        direct = as_client(service, "claude-code", "remember", {"content": "The user owns a cat."})
        assert direct["action"] == "created" and (service.root / direct["path"]).is_file()
        proposed = as_client(service, "cursor", "remember", {"content": "The user owns a dog."})
        assert proposed["action"] == "proposed"
        assert not (service.root / proposed["path"]).exists()
        assert as_client(service, "claude-code", "list_proposals", {})["mode"] == "direct"
        hits = recalled(service, "cursor", "cat dog")
        assert {h["id"]: h.get("proposed") for h in hits} == {
            direct["id"]: None,
            proposed["id"]: True,
        }
    finally:
        service.close()


def test_the_settings_take_a_list_and_refuse_an_unknown_mode(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault_path / ".memvault.toml").write_text('propose_clients = ["cursor", "zed"]\n')
    assert load_settings(vault_path).propose_clients == ("cursor", "zed")
    monkeypatch.setenv("MEMVAULT_PROPOSE_CLIENTS", "cursor, claude-code")
    assert load_settings(vault_path).propose_clients == ("cursor", "claude-code")
    assert proposals.proposing(load_settings(vault_path), "Claude Code/1.2")
    assert not proposals.proposing(load_settings(vault_path), None)  # the command line
    with pytest.raises(InvalidInputError, match="agent_writes must be"):
        proposals.proposing(Settings(agent_writes="ask"), "cursor")


# -- the command line ---------------------------------------------------------------------
def test_review_lists_proposals_with_diffs_and_accepts_or_rejects_them(
    vault: MemoryService,
) -> None:
    tea = propose_tea(vault)
    cat = as_client(vault, "claude-code", "remember", {"content": "The user's cat is Miso."})

    git(vault.root, "config", "diff.external", "false")  # a person's own diff tool: not ours
    git(vault.root, "config", "diff.noprefix", "true")
    code, out, _ = cli_run(vault.root, "review")
    assert code == 0
    assert tea["commit"][:12] in out and cat["commit"][:12] in out
    assert "+The user's favourite tea is genmaicha" in out and f"+++ b/{tea['path']}" in out

    code, out, _ = cli_run(vault.root, "--json", "review", "--client", "cursor")
    listed = json.loads(out)
    assert [p["id"] for p in listed] == [tea["commit"][:12]]
    assert listed[0]["client"] == "cursor" and "genmaicha" in listed[0]["diff"]

    before = commit_count(vault.root)
    code, out, _ = cli_run(vault.root, "review", "reject", cat["commit"][:12])
    assert code == 0 and out.startswith(f"rejected {cat['commit'][:12]}")
    code, out, _ = cli_run(vault.root, "review", "accept", "--all")
    assert code == 0 and out.startswith(f"accepted {tea['commit'][:12]}")
    assert commit_count(vault.root) == before + 1
    assert (vault.root / tea["path"]).is_file() and not (vault.root / cat["path"]).exists()
    code, _, err = cli_run(vault.root, "review", "accept", "0000000")
    assert code == 1 and "no pending proposal" in err


def test_list_proposals_costs_at_most_190_characters_of_tools_list(vault: MemoryService) -> None:
    async def body(client: Client) -> dict[str, Any]:
        found = {t.name: t for t in (await client.list_tools()).tools}
        return found["list_proposals"].model_dump(mode="json", exclude_none=True, by_alias=True)

    listed = in_process(vault, body)
    assert len(json.dumps(listed)) + 2 <= 190  # with the ", " that joins it to the list
    assert listed["annotations"] == {"readOnlyHint": True}


def test_a_purge_erases_the_memory_from_proposals_too(vault: MemoryService) -> None:
    made = vault.remember("The user's locker code is four digits long.", type="fact")
    assert made.memory is not None
    args = {"id": made.memory.id, "content": "The user's locker code has five digits."}
    as_client(vault, "cursor", "update_memory", args)
    tea = propose_tea(vault)
    proposals.accept(vault, tea["commit"][:12])

    vault.forget(made.memory.id, mode="purge")
    bike = as_client(vault, "cursor", "remember", {"content": "The user rides a red bicycle."})

    everything = git(vault.root, "log", "--all", "-p")
    assert "locker" not in everything and "bicycle" in everything
    worktree = vault.root / ".memvault" / "proposals" / "cursor"
    assert not any("locker" in p.name for p in worktree.rglob("*"))
    assert [p.id for p in proposals.pending(vault)] == [bike["commit"][:12]]  # tea stays accepted


def test_a_proposal_survives_its_memory_being_deleted_in_the_vault_and_is_then_refused(
    vault: MemoryService,
) -> None:
    made = vault.remember("The user's gym is on Elm Street.", type="fact")
    assert made.memory is not None
    args = {"id": made.memory.id, "content": "The user's gym is on Oak Street."}
    as_client(vault, "cursor", "update_memory", args)
    vault.forget(made.memory.id, mode="delete")  # a person, meanwhile
    as_client(vault, "cursor", "remember", {"content": "The user swims on Fridays."})

    mine = as_client(vault, "cursor", "get_memory", {"id": made.memory.id})
    assert mine["proposed"] is True and "Oak Street" in mine["body"]
    assert "not_found" in failing(vault, "claude-code", "get_memory", {"id": made.memory.id})
    update, swim = proposals.pending(vault)
    before = vault_state(vault)
    with pytest.raises(StaleRevisionError):
        proposals.accept(vault, update.id)
    assert vault_state(vault) == before
    proposals.accept(vault, swim.id)
    assert [p.id for p in proposals.pending(vault)] == [update.id]


def test_a_proposal_whose_memory_the_person_deleted_since_can_be_rejected(
    vault: MemoryService,
) -> None:
    """Reverting it on the branch brings the memory's file back there; the vault has none,
    so the branch drops it again (the vault's version of what no proposal changes)."""
    made = vault.remember("The user's gym is on Elm Street.", type="fact")
    assert made.memory is not None
    args = {"id": made.memory.id, "content": "The user's gym is on Oak Street."}
    as_client(vault, "cursor", "update_memory", args)
    vault.forget(made.memory.id, mode="delete")  # a person, meanwhile
    (update,) = proposals.pending(vault)
    before = vault_state(vault)

    proposals.reject(vault, update.id)

    assert vault_state(vault) == before and proposals.pending(vault) == []
    assert git(vault.root, "diff", "--name-only", "HEAD", BRANCH) == ""
    assert "not_found" in failing(vault, "cursor", "get_memory", {"id": made.memory.id})


def test_what_a_crash_left_in_the_worktree_becomes_a_proposal_not_a_vault_commit(
    vault: MemoryService,
) -> None:
    propose_tea(vault)
    worktree = vault.root / ".memvault" / "proposals" / "cursor"
    (worktree / "facts" / "half-written.md").write_text("# Half\n\nThe user likes figs.\n")
    before = vault_state(vault)
    as_client(vault, "cursor", "remember", {"content": "The user swims on Fridays."})
    assert vault_state(vault) == before
    ops = [p.op for p in proposals.pending(vault)]
    assert ops == ["remember", "recover", "remember"]
    assert [h["title"] for h in recalled(vault, "cursor", "figs")] == ["Half"]


def test_status_counts_the_waiting_proposals_and_a_profile_field_is_proposed_too(
    vault: MemoryService,
) -> None:
    assert as_client(vault, "claude-code", "vault_status", {}).get("proposals") is None
    propose_tea(vault)
    before = vault_state(vault)
    field = {"field": "name", "value": "Ada"}
    assert as_client(vault, "cursor", "set_profile", field)["action"] == "proposed"
    assert vault_state(vault) == before
    assert as_client(vault, "claude-code", "vault_status", {})["proposals"] == {"cursor": 2}
    code, out, _ = cli_run(vault.root, "status")
    assert code == 0 and "proposals: 2 from cursor" in out


def test_a_stale_git_lock_in_a_proposal_worktree_is_cleared_like_the_vaults(
    vault: MemoryService,
) -> None:
    propose_tea(vault)
    lock = vault.root / ".git" / "worktrees" / "cursor" / "index.lock"
    lock.write_text("")  # left by a git killed while proposing
    old = lock.stat().st_mtime - 3600
    os.utime(lock, (old, old))
    made = as_client(vault, "cursor", "remember", {"content": "The user swims on Fridays."})
    assert made["action"] == "proposed" and not lock.exists()


# -- the branch after a decision -----------------------------------------------------------
def test_after_a_reject_the_client_sees_the_vaults_version_and_proposes_on_it(
    vault: MemoryService,
) -> None:
    made = vault.remember("The user's gym is on Elm Street.", type="fact")
    assert made.memory is not None
    memory_id = made.memory.id
    args = {"id": memory_id, "content": "The user's gym is on Oak Street."}
    as_client(vault, "cursor", "update_memory", args)
    vault.update(memory_id, content="The user's gym is on Pine Street.")  # a person, meanwhile
    as_client(vault, "cursor", "remember", {"content": "The user swims on Fridays."})
    update, _swim = proposals.pending(vault)
    proposals.reject(vault, update.id)

    mine = as_client(vault, "cursor", "get_memory", {"id": memory_id})
    assert "Pine Street" in mine["body"] and not mine.get("proposed")
    assert [h["id"] for h in recalled(vault, "cursor", "gym Elm Street")] == [memory_id]
    assert "Pine" in recalled(vault, "cursor", "gym Pine Street")[0]["snippet"]
    on_branch = git(vault.root, "diff", "--name-only", "HEAD", BRANCH)
    assert made.memory.path not in on_branch  # the branch holds the vault's version again

    again = {"id": memory_id, "content": "The user's gym is on Birch Street."}
    assert as_client(vault, "cursor", "update_memory", again)["action"] == "proposed"
    latest = proposals.pending(vault)[-1]
    proposals.accept(vault, latest.id)  # built on Pine: not stale
    assert "Birch Street" in vault.get(memory_id).body


def test_after_accepting_onto_a_taken_path_the_client_sees_both_memories(
    vault: MemoryService,
) -> None:
    made = propose_tea(vault)
    theirs = vault.remember(TEA, type="preference")  # a person, the same title meanwhile
    assert theirs.memory is not None and theirs.memory.path == made["path"]
    assert theirs.memory.id != made["id"]

    decision = proposals.accept(vault, made["commit"][:12])
    assert decision.paths != (made["path"],)  # the proposal went beside the person's memory

    got = as_client(vault, "cursor", "get_memory", {"id": theirs.memory.id})
    assert got["path"] == made["path"] and not got.get("proposed")
    listed = as_client(vault, "cursor", "list_memories", {})["memories"]
    assert sorted((m["id"], m["path"], m.get("proposed")) for m in listed) == sorted(
        [(theirs.memory.id, made["path"], None), (made["id"], decision.paths[0], None)]
    )
    assert git(vault.root, "diff", "--name-only", "HEAD", BRANCH) == ""
    assert as_client(vault, "cursor", "list_proposals", {})["proposals"] == []


def test_accepting_onto_a_taken_path_names_the_path_it_wrote_in_the_commit_and_the_output(
    vault: MemoryService,
) -> None:
    made = propose_tea(vault)
    theirs = vault.remember(TEA, type="preference")  # a person, the same title meanwhile
    assert theirs.memory is not None and theirs.memory.path == made["path"]

    code, out, _ = cli_run(vault.root, "review", "accept", made["commit"][:12])

    assert code == 0
    (written,) = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert written != made["path"]  # beside the person's memory, which it did not touch
    subject = git(vault.root, "log", "-1", "--format=%s").strip()
    assert subject == f"accept: remember: {written} (proposal {made['commit'][:12]})"
    assert f"(remember: {written})" in out and made["path"] not in out


# -- a vault mid-merge ---------------------------------------------------------------------
def test_decisions_and_proposals_are_refused_while_the_vault_is_mid_merge(
    vault: MemoryService,
) -> None:
    made = propose_tea(vault)
    car = vault.remember("The user's car is blue.", type="fact").memory
    assert car is not None
    main = git(vault.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    note = vault.root / car.path
    git(vault.root, "switch", "-q", "-c", "elsewhere")
    note.write_text(note.read_text().replace("blue", "red"))
    git(vault.root, "commit", "-qam", "red on another machine")
    git(vault.root, "switch", "-q", main)
    note.write_text(note.read_text().replace("blue", "green"))
    git(vault.root, "commit", "-qam", "green here")
    with pytest.raises(subprocess.CalledProcessError):
        git(vault.root, "merge", "elsewhere")  # stops on the conflict: the person's to finish
    before, on_branch = vault_state(vault), branch_commits(vault)

    for decide in (proposals.accept, proposals.reject):
        with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
            decide(vault, made["commit"][:12])
    code, _, err = cli_run(vault.root, "review", "accept", made["commit"][:12])
    assert code == 1 and "merge or rebase is in progress" in err
    text = failing(vault, "cursor", "remember", {"content": "The user swims on Fridays."})
    assert "merge or rebase is in progress" in text

    assert vault_state(vault) == before and branch_commits(vault) == on_branch
    assert git(vault.root, "ls-files", "-u").strip()  # still the person's conflict
    assert not (vault.root / made["path"]).exists()
    assert [p.key for p in proposals.pending(vault)] == [proposals.pending(vault)[0].key]


# -- who proposes --------------------------------------------------------------------------
def test_an_mcp_call_without_a_client_name_is_a_proposal_not_a_direct_write(
    vault: MemoryService,
) -> None:
    """A modern (per-request) MCP call may leave out its client info: it still proposes."""
    server, notifier = build_server(vault)
    envelope = {PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION, CLIENT_CAPABILITIES_META_KEY: {}}
    args = {"content": "The user keeps bees.", "type": "fact"}

    async def unnamed(tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        lowlevel = server._lowlevel_server
        async with AsyncExitStack() as stack:
            state = await stack.enter_async_context(lowlevel.lifespan(lowlevel))
            ours, theirs = create_direct_dispatcher_pair(raise_handler_exceptions=False)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(theirs.close)
            await group.start(theirs.run, modern_on_request(lowlevel, state), _no_notifications)
            stack.callback(ours.close)
            await group.start(ours.run, _no_requests, _no_notifications)
            params = {"name": tool_name, "arguments": arguments, "_meta": envelope}
            return await ours.send_raw_request("tools/call", params)

    before = vault_state(vault)
    try:
        made = asyncio.run(unnamed("remember", args))["structuredContent"]
        seen = asyncio.run(unnamed("get_memory", {"id": made["id"]}))["structuredContent"]
    finally:
        vault.listeners.remove(notifier.on_change)
    assert made["action"] == "proposed" and vault_state(vault) == before
    assert seen["proposed"] is True  # the unnamed client sees what it proposed
    assert [p.client for p in proposals.pending(vault)] == ["unnamed"]


async def _no_notifications(*_: Any) -> None:
    return None


async def _no_requests(*_: Any) -> dict[str, Any]:
    raise AssertionError("the server asked the client something")


def test_a_purge_between_opening_the_branch_and_writing_to_it_breaks_nothing(
    vault: MemoryService,
) -> None:
    propose_tea(vault)
    before = vault_state(vault)
    asking = current_client.set("cursor/2.0")
    try:
        with proposals.writer(vault) as drafts:
            proposals.drop_worktrees(vault)  # what a purge does, between the two
            made = drafts.remember("The user swims on Fridays.", type="fact")
    finally:
        current_client.reset(asking)
    assert made.action == "proposed" and vault_state(vault) == before
    assert git(vault.root, "log", "-1", "--format=%s", BRANCH).startswith("remember: ")
    later = as_client(vault, "cursor", "remember", {"content": "The user keeps bees."})
    assert later["action"] == "proposed" and vault_state(vault) == before
    assert [p.op for p in proposals.pending(vault)] == ["remember"] * 3


def test_a_proposal_of_what_the_vault_got_meanwhile_is_a_duplicate(
    embedded: MemoryService,
) -> None:
    """A proposing client and a direct writer state the same fact at once: the proposal's
    duplicate check, taken under the vault's write lock, sees the vault's new memory."""
    vault = embedded
    fact = "The user's passport expires on 2031-04-02."
    clock = PausingClock("proposer")
    vault.clock = clock
    results: list[Any] = []

    def propose() -> None:
        asking = current_client.set("cursor/2.0")
        try:
            with proposals.writer(vault) as drafts:
                results.append(drafts.remember(fact, type="fact"))
        finally:
            current_client.reset(asking)

    proposer = threading.Thread(target=propose, name="proposer")
    # while the proposal is embedded and not judged yet, the fact goes straight into the vault
    direct = while_paused(clock, proposer, lambda: vault.remember(fact, type="fact"))
    assert direct.action == "created" and direct.memory is not None
    (late,) = results
    assert late.action == "duplicate" and late.commit is None
    assert [s.id for s in late.similar if s.relation == "duplicate"] == [direct.memory.id]
    assert proposals.pending(vault) == []
