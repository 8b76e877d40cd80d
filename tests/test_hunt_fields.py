"""Hunted bugs of fields and texts as people and agents really type them: the same text
remembered twice in a vault without vectors (text-only, or a memory not embedded yet), a
status or a key typed by hand with a capital. Real vaults, real git, real Whoosh and
embeddings."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.types import Implementation

from memvault import changes, merging, proposals
from memvault.config import Settings
from memvault.service import MemoryService
from memvault.sync import EMBED_NOW
from memvault.syncing import sync

from .helpers import commit_count, git, synced_pair, tool

SEATS = "The user prefers aisle seats on flights."


def memory_files(service: MemoryService) -> list[str]:
    root = service.vault.root
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.md") if ".git" not in p.parts)


@pytest.mark.parametrize(
    "again",
    [SEATS, "the user prefers  aisle seats on flights", "The user prefers aisle seats on flights!"],
)
def test_a_text_only_vault_refuses_the_same_text_twice_writing_nothing(
    text_only: MemoryService, again: str
) -> None:
    first = text_only.remember(SEATS, type="preference").memory
    assert first is not None
    files, commits = memory_files(text_only), commit_count(text_only.vault.root)
    second = text_only.remember(again, type="preference")
    assert second.action == "duplicate"
    assert second.reason == f"already remembered as {first.path} (id {first.id})"
    assert [(s.id, s.relation, s.cosine) for s in second.similar] == [(first.id, "duplicate", 1.0)]
    assert memory_files(text_only) == files
    assert commit_count(text_only.vault.root) == commits


@pytest.mark.parametrize(
    "correction",
    [
        "The user prefers window seats on flights.",
        "The user does not prefer aisle seats on flights.",
        "The user prefers aisle seats on flights over 3 hours.",
        "The user prefers aisle seats on flights.\n\nOnly on Lufthansa.",
    ],
)
def test_a_text_only_vault_still_writes_a_correction_of_one_word_or_number(
    text_only: MemoryService, correction: str
) -> None:
    text_only.remember(SEATS, type="preference")
    assert text_only.remember(correction, type="preference").action == "created"


def test_a_memory_whose_vector_is_not_made_yet_is_still_a_duplicate(
    service: MemoryService,
) -> None:
    # a person's folder of notes, synced at once: their vectors are left to the filler
    notes = service.vault.root / "notes"
    notes.mkdir()
    for n in range(EMBED_NOW + 1):
        (notes / f"{n}.md").write_text(f"---\ntype: fact\n---\nTrip {n} went to city {n}.\n")
    (notes / "seats.md").write_text(f"---\ntype: preference\n---\n{SEATS}\n", "utf-8")
    service.sync_index()
    assert service.index_status()["with_vectors"] == 0
    again = service.remember(SEATS, type="preference")
    assert again.action == "duplicate"
    assert [s.path for s in again.similar] == ["notes/seats.md"]


def test_a_client_proposing_the_same_text_twice_in_a_text_only_vault_is_told(
    vault_path: Path,
) -> None:
    """Proposal mode (agent_writes = "propose"): the duplicate check of a client's own
    waiting proposals compared vectors only, so without them each repeat was one more
    proposal for the person to review."""
    service = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    client = {"client_info": Implementation(name="cursor", version="2.0")}
    try:
        args = {"content": SEATS, "type": "preference"}
        made = tool(service, "remember", args, **client)
        again = tool(service, "remember", args | {"content": SEATS.upper()}, **client)
        assert (made["action"], again["action"]) == ("proposed", "duplicate")
        assert [(s["id"], s["proposed"]) for s in again["similar"]] == [(made["id"], True)]
        assert len(proposals.pending(service)) == 1
        fixed = tool(
            service, "remember", args | {"content": SEATS.replace("aisle", "window")}, **client
        )
        assert fixed["action"] == "proposed"
    finally:
        service.close()


def by_hand(service: MemoryService, rel: str, front: str, text: str) -> bytes:
    """A note a person wrote in Obsidian (frontmatter lines ``front``), indexed; its bytes."""
    path = service.vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"---\n{front}\n---\n{text}\n".encode())
    service.sync_index([rel])
    return path.read_bytes()


def listed(service: MemoryService) -> set[str]:
    return {m.path for m in service.list_memories().memories}


@pytest.mark.parametrize(
    ("written", "status"),
    [("Archived", "archived"), ("ARCHIVED", "archived"), ("Superseded", "superseded")],
)
def test_a_status_typed_by_hand_in_capitals_is_memvault_s_and_the_file_is_kept(
    svc: MemoryService, written: str, status: str
) -> None:
    kept = by_hand(svc, "notes/old.md", f"type: fact\nstatus: {written}", "Ana lived in Lyon.")
    by_hand(svc, "notes/own.md", "type: fact\nstatus: Draft", "Ana lives in Porto.")
    assert svc.get("notes/old.md").status == status
    assert svc.get("notes/own.md").status == "active"  # the person's own status
    assert listed(svc) == {"notes/own.md"}
    assert [h.path for h in svc.recall("where did Ana live Lyon")] == ["notes/own.md"]
    assert (svc.vault.root / "notes/old.md").read_bytes() == kept


def test_restoring_a_memory_archived_by_hand_in_capitals_rewrites_that_status(
    svc: MemoryService,
) -> None:
    by_hand(svc, "notes/old.md", "type: fact\nstatus: Archived", "Ana lived in Lyon.")
    svc.update("notes/old.md", fields={"status": "active"})
    text = (svc.vault.root / "notes/old.md").read_text("utf-8")
    assert "status: active\n" in text and "lifecycle" not in text and "Archived" not in text
    assert listed(svc) == {"notes/old.md"}


def test_a_capitalised_type_and_status_key_are_read_as_type_and_status(svc: MemoryService) -> None:
    kept = by_hand(
        svc, "notes/trip.md", "Type: Episode\nStatus: archived", "Night train to Vienna."
    )
    by_hand(
        svc, "notes/own.md", "TYPE: Preference\nStatus: Draft", "The user likes sleeper trains."
    )
    by_hand(svc, "notes/both.md", "type: fact\nType: Episode", "Vienna has a night train.")
    assert (svc.get("notes/trip.md").type, svc.get("notes/trip.md").status) == (
        "episode",
        "archived",
    )
    assert (svc.get("notes/own.md").type, svc.get("notes/own.md").status) == (
        "preference",
        "active",
    )
    assert svc.get("notes/both.md").type == "fact"  # the lower-case key, when there is one
    assert listed(svc) == {"notes/own.md", "notes/both.md"}
    assert (svc.vault.root / "notes/trip.md").read_bytes() == kept


def test_an_update_of_a_file_with_capitalised_keys_keeps_one_key_in_the_person_s_spelling(
    svc: MemoryService,
) -> None:
    by_hand(svc, "notes/trip.md", "id: trip\nType: Episode\nStatus: Draft", "Night train.")
    path = svc.vault.root / "notes/trip.md"
    svc.update("trip", fields={"importance": 0.9})
    assert path.read_text("utf-8").splitlines()[:5] == [
        "---",
        "id: trip",
        "Type: Episode",
        "Status: Draft",
        "importance: 0.9",
    ]
    svc.update("trip", fields={"type": "fact"})
    text = path.read_text("utf-8")
    assert "Type: fact\n" in text and "\ntype:" not in text and "Episode" not in text
    assert svc.get("trip").type == "fact"


def test_restoring_a_memory_archived_under_a_capitalised_status_key_leaves_one_key(
    svc: MemoryService,
) -> None:
    by_hand(svc, "notes/old.md", "type: fact\nStatus: Archived", "Ana lived in Lyon.")
    svc.update("notes/old.md", fields={"status": "active"})
    text = (svc.vault.root / "notes/old.md").read_text("utf-8")
    assert "Status: active\n" in text and "\nstatus:" not in text and "lifecycle" not in text
    assert listed(svc) == {"notes/old.md"}


@pytest.mark.parametrize("written", ['"[[Book]]"', "[[Book]]", "'[[Notes/Book|Books]]'"])
def test_a_type_that_is_a_link_is_the_linked_note_s_name_and_still_a_link(
    svc: MemoryService, written: str
) -> None:
    by_hand(svc, "Notes/Book.md", "type: note", "What a book is.")
    kept = by_hand(svc, "notes/dune.md", f"type: {written}", "Dune, by Frank Herbert.")
    memory = svc.get("notes/dune.md")
    assert memory.type == "Book"
    assert memory.links[0] in ("Book", "Notes/Book")
    assert {r.path: r.type for r in svc.records()}["notes/dune.md"] == "Book"
    assert (svc.vault.root / "notes/dune.md").read_bytes() == kept


def test_an_episode_typed_as_a_link_is_an_episode(svc: MemoryService) -> None:
    by_hand(svc, "notes/trip.md", 'type: "[[Episode]]"', "Night train to Vienna.")
    assert svc.get("notes/trip.md").type == "episode"


def test_a_sync_conflict_in_a_file_with_a_capitalised_status_key_leaves_one_key() -> None:
    base = "---\nStatus: active\nType: Fact\n---\n# T\n\nbase\n"
    ours, theirs = base.replace("base", "ours"), base.replace("base", "theirs")
    merged = merging.merge_memory(base, ours, theirs, "laptop", "2026-11-02 09:00")
    assert merged.conflict
    assert merged.text.startswith("---\nStatus: conflict\nType: Fact\n---\n# T\n\nours\n")


def test_the_changes_feed_names_a_conflict_kept_under_a_capitalised_status_key(
    tmp_path: Path,
) -> None:
    with synced_pair(tmp_path) as pair:
        made = pair.a.remember("Reports are written in British English", type="preference")
        assert made.memory is not None
        path = pair.a.root / made.memory.path
        path.write_text(path.read_text("utf-8").replace("---\n", "---\nStatus: active\n", 1))
        git(pair.a.root, "commit", "-qam", "my own key spelling")
        sync(pair.a)
        sync(pair.b)
        pair.a.update(made.memory.id, content="Reports are written in British English, always")
        pair.b.update(made.memory.id, content="Reports are written in American English now")
        sync(pair.a)
        before = git(pair.b.root, "rev-parse", "HEAD")
        assert sync(pair.b).conflicts
        text = (pair.b.root / made.memory.path).read_text("utf-8")
        assert "Status: conflict\n" in text and "\nstatus:" not in text
        found = changes.feed(pair.b, before).changes
        assert [c.id for c in found if c.op == "conflict"] == [made.memory.id]


def test_a_capitalised_importance_is_read_and_an_update_keeps_its_key(svc: MemoryService) -> None:
    by_hand(svc, "notes/core.md", "id: core1\nImportance: 0.95\nConfidence: 0.3", "Ana's birthday.")
    memory = svc.get("core1")
    assert (memory.importance, memory.confidence) == (0.95, 0.3)
    svc.update("core1", fields={"importance": 0.7})
    text = (svc.vault.root / "notes/core.md").read_text("utf-8")
    assert "Importance: 0.7\n" in text and "\nimportance:" not in text
