"""A person's Obsidian vault under a hostile person: saves racing memvault's writes,
file modes, and the notes Obsidian writes (found by hand in a real vault)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from memvault import note
from memvault.config import Settings
from memvault.errors import MalformedMemoryError, StaleRevisionError
from memvault.models import Filters
from memvault.server import note_uri
from memvault.service import MemoryService
from memvault.syncing import sync
from memvault.watcher import Watcher

from .helpers import commit_count, git, in_process, synced_pair, watching

NOTE = "---\ntags: [tea]\n---\n# Alice\n\nAlice likes oolong tea.\n"


def saving_during_fsync(monkeypatch: pytest.MonkeyPatch, save: Callable[[], None]) -> None:
    """The person's editor saves while memvault's temporary file is being synced."""
    real = os.fsync
    done: list[bool] = []

    def fsync(fd: int) -> None:
        real(fd)
        if not done:
            done.append(True)
            save()

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_save_made_while_memvault_writes_the_same_note_is_never_replaced(
    svc: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    (svc.root / "Alice.md").write_text(NOTE, encoding="utf-8")
    svc.commit_external(["Alice.md"])
    commits = commit_count(svc.root)
    mine = NOTE + "\nShe moved to Lisbon.\n"
    saving_during_fsync(
        monkeypatch, lambda: (svc.root / "Alice.md").write_text(mine, encoding="utf-8")
    )
    with pytest.raises(StaleRevisionError, match="changed since it was read"):
        svc.update("Alice.md", fields={"importance": 0.9})
    assert (svc.root / "Alice.md").read_text(encoding="utf-8") == mine
    assert commit_count(svc.root) == commits
    assert [p.name for p in svc.root.iterdir() if p.name.endswith(".tmp")] == []


def test_a_note_created_by_a_person_while_memvault_creates_it_is_never_replaced(
    svc: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = "# Mine\n\nwritten by hand at the same moment\n"
    target = svc.root / "facts" / "x.md"
    saving_during_fsync(monkeypatch, lambda: target.write_text(theirs, encoding="utf-8"))
    with pytest.raises(StaleRevisionError, match=r"was created|changed since"):
        svc.vault.write("facts/x.md", "# memvault's\n", expected_hash="")
    assert target.read_text(encoding="utf-8") == theirs
    assert sorted(p.name for p in target.parent.iterdir()) == [".gitkeep", "x.md"]


def test_memvault_keeps_a_files_permissions_and_gives_new_files_the_usual_ones(
    svc: MemoryService,
) -> None:
    path = svc.root / "Shared.md"
    path.write_text(NOTE, encoding="utf-8")
    path.chmod(0o664)  # group-writable, as a shared or synced vault has it
    svc.commit_external(["Shared.md"])
    svc.update("Shared.md", fields={"importance": 0.9})
    assert path.stat().st_mode & 0o777 == 0o664
    mask = os.umask(0o022)
    os.umask(mask)
    created = svc.remember("Bob prefers green tea in the morning.").memory
    assert created is not None
    assert (svc.root / created.path).stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_person_putting_back_the_text_memvault_wrote_is_indexed_and_committed(
    text_only: MemoryService,
) -> None:
    """memvault writes a note; the person edits it, then undoes the edit (Ctrl-Z in
    Obsidian, `git checkout -- note.md`): the file is memvault's text again, and that is a
    change of the person's like any other, not memvault's own write seen late."""
    service = text_only
    with watching(service) as (_, watcher, _events):
        created = service.remember("The spare key is under the blue flowerpot.", type="fact")
        assert created.memory is not None
        path = service.root / created.memory.path
        original = path.read_bytes()
        path.write_bytes(original.replace(b"blue flowerpot", b"red doormat"))
        assert watcher.wait_for(lambda: watcher.commits == 1)
        path.write_bytes(original)  # undone
        assert watcher.wait_for(lambda: watcher.commits == 2)
        assert git(service.root, "status", "--porcelain") == ""
        assert "blue flowerpot" in service.recall("where is the spare key")[0].snippet


def test_a_note_memvault_deleted_then_restored_and_deleted_again_by_hand_leaves_the_index(
    text_only: MemoryService,
) -> None:
    service = text_only
    with watching(service) as (_, watcher, _events):
        created = service.remember("The boat is moored in Porto harbour.", type="fact")
        assert created.memory is not None
        path = service.root / created.memory.path
        text = path.read_bytes()
        service.forget(created.memory.id, mode="delete")
        path.write_bytes(text)  # restored from Obsidian's .trash
        assert watcher.wait_for(lambda: watcher.commits == 1)
        assert service.recall("where is the boat moored")[0].path == created.memory.path
        path.unlink()  # deleted again
        assert watcher.wait_for(lambda: watcher.commits == 2)
        assert git(service.root, "status", "--porcelain") == ""
        assert service.recall("where is the boat moored") == []


ALICE = """---
Tags: [person, friend]  # as the properties panel shows them
ALIAS: Ally
---
# Alice Smith

Alice likes jasmine tea.
"""


def test_tags_and_aliases_count_in_any_spelling_obsidian_reads_and_stay_where_they_are(
    text_only: MemoryService,
) -> None:
    service = text_only
    path = service.root / "People" / "Alice Smith.md"
    path.parent.mkdir()
    path.write_text(ALICE, encoding="utf-8")
    service.commit_external(["People/Alice Smith.md"])
    service.ensure_synced()
    hits = service.recall("jasmine tea", filters=Filters(tags=("friend",)))
    assert [h.path for h in hits] == ["People/Alice Smith.md"]
    assert service.recall("Ally")[0].path == "People/Alice Smith.md"
    service.update("People/Alice Smith.md", fields={"tags": ["person", "colleague"]})
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\nTags: [person, colleague]  # as the properties panel shows them\n")
    assert "\ntags:" not in text and "ALIAS: Ally\n" in text
    assert service.get("People/Alice Smith.md").tags == ("person", "colleague")


def test_tags_written_as_one_text_count_one_by_one_as_obsidian_reads_them(
    text_only: MemoryService,
) -> None:
    """`tags: travel work` (a tag holds no space) was one tag, "travel work"; aliases,
    which may hold spaces, stay whole."""
    note = "---\ntags: travel work,family\naliases: Bob Lee\n---\n# Trip\n\nLisbon in May.\n"
    (text_only.root / "trip.md").write_text(note, encoding="utf-8")
    memory = text_only.get("trip.md")
    assert memory.tags == ("travel", "work", "family")
    assert memory.aliases == ("Bob Lee",)


def test_a_note_over_the_size_limit_is_refused_as_a_resource_not_sent_whole(
    text_only: MemoryService,
) -> None:
    """doctor calls it too large and the index leaves it out; an agent reading it as a
    resource gets that reason, not megabytes of text in its context."""
    service = text_only
    big = service.vault.max_file_bytes + 1

    async def body(client: Client) -> MCPError:
        (service.root / "Huge.md").write_text("# Huge\n" + "x" * big, encoding="utf-8")
        with pytest.raises(MCPError, match=r"Huge\.md is [\d,]+ bytes, over the") as refused:
            await client.read_resource(note_uri("Huge.md"))
        return refused.value

    assert in_process(service, body).error.code == INVALID_PARAMS


def test_a_rename_and_a_deletion_while_serve_rebuilds_the_index_are_committed(
    vault_path: Path,
) -> None:
    """A serve whose index is rebuilt (a new index version, a deleted cache) starts its
    watcher while the index builds behind it. A note renamed meanwhile is one move, and a
    note or a folder deleted afterwards leaves the index and history like any other."""
    for name in ("Kyoto.md", "Porto.md", "Old trips/Lima.md", "Old trips/2015/Cusco.md"):
        (vault_path / name).parent.mkdir(parents=True, exist_ok=True)
        (vault_path / name).write_text(f"# {name[:-3]}\n\nTravel notes on {name[:-3]}.\n")
    git(vault_path, "add", "-A")
    git(vault_path, "commit", "-qm", "my notes")
    MemoryService.open(vault_path, Settings(embedder="none")).close()
    shutil.rmtree(vault_path / ".memvault" / "index")  # a cache: a new version rebuilds it
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    watcher = Watcher(service, debounce=0.4)
    watcher.start()  # as serve does: the index is still empty
    try:
        os.rename(vault_path / "Kyoto.md", vault_path / "Kyoto 2019.md")
        assert watcher.wait_for(lambda: watcher.commits == 1)
        moved = git(vault_path, "show", "--name-status", "--format=", "HEAD").strip()
        assert moved.split("\t")[1:] == ["Kyoto.md", "Kyoto 2019.md"], moved
        service.ensure_synced()  # the background build is done
        (vault_path / "Porto.md").unlink()
        (vault_path / ".trash").mkdir()
        os.rename(vault_path / "Old trips", vault_path / ".trash" / "Old trips")  # Obsidian
        assert watcher.wait_for(lambda: git(vault_path, "status", "--porcelain") == "")
        assert [h.path for h in service.recall("travel notes")] == ["Kyoto 2019.md"]
    finally:
        watcher.stop()
        service.close()


def test_a_comment_with_an_apostrophe_survives_memvault_changing_its_key(
    text_only: MemoryService,
) -> None:
    service = text_only
    path = service.root / "Trip.md"
    path.write_text("---\nimportance: 0.2  # it's only an idea\n---\n# Trip\n\nKyoto.\n")
    service.commit_external(["Trip.md"])
    service.update("Trip.md", fields={"importance": 0.9})
    assert "importance: 0.9  # it's only an idea\n" in path.read_text()


def test_a_file_name_that_is_not_utf8_is_skipped_with_advice_for_a_person(
    text_only: MemoryService,
) -> None:
    service = text_only
    with watching(service) as (_, watcher, _events):
        os.close(os.open(os.fsencode(service.root) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY))
        rel = os.fsdecode(b"caf\xe9.md")
        assert watcher.wait_for(lambda: rel in watcher.skipped)
        assert watcher.skipped[rel].endswith("is never read or committed: rename it")
        assert watcher.errors == []


def test_a_wikilink_in_a_table_with_its_bar_escaped_names_its_note() -> None:
    body = (
        "| who | note |\n|---|---|\n| [[Alice Smith\\|Alice]] | [[Project X#Timeline\\|plan]] |\n"
    )
    found = note.links(body)
    assert [(link.target, link.heading, link.label) for link in found] == [
        ("Alice Smith", None, "Alice"),
        ("Project X", "Timeline", "plan"),
    ]


def test_a_frontmatter_memvault_cannot_edit_in_place_is_refused_not_broken(
    text_only: MemoryService,
) -> None:
    service = text_only
    path = service.root / "Flow.md"
    original = b"---\n{title: Flow, tags: [a]}\n---\nA note with flow-style properties.\n"
    path.write_bytes(original)
    service.commit_external(["Flow.md"])
    commits = commit_count(service.root)
    with pytest.raises(MalformedMemoryError, match="cannot change this file's frontmatter"):
        service.update("Flow.md", fields={"importance": 0.9})
    assert path.read_bytes() == original
    assert commit_count(service.root) == commits
    assert service.get("Flow.md").tags == ("a",)


def test_a_note_a_sync_deletes_is_no_persons_deletion_for_the_paused_watcher(
    tmp_path: Path,
) -> None:
    with synced_pair(tmp_path) as pair:
        made = pair.a.remember("The build server is named osprey.", type="fact").memory
        assert made is not None
        sync(pair.a)
        sync(pair.b)
        pair.a.forget(made.id, mode="delete")
        sync(pair.a)
        with watching(pair.b) as (_, watcher, _events):
            pair.b.pause = watcher.paused  # as serve sets it
            assert sync(pair.b).action == "fast-forward"
            assert watcher.wait_for(lambda: watcher.settled >= 1)
        assert watcher.batches == 0 and watcher.commits == 0
