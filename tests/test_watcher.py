"""The live vault: a real watchdog observer on real files (no sleeps: waits on events)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.service import MemoryService
from memvault.watcher import Watcher

from .helpers import Watched, commit_count, git, watching


@pytest.fixture
def watched(service: MemoryService) -> Iterator[Watched]:
    with watching(service) as running:
        yield running


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_an_external_edit_is_found_by_recall_and_committed_once(watched: Watched) -> None:
    service, watcher, events = watched
    before = commit_count(service.vault.root)
    write(
        service.vault.root / "facts" / "hand.md",
        "---\ntype: fact\n---\nThe boat is moored in Porto.\n",
    )
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert service.recall("where is the boat moored")[0].path == "facts/hand.md"
    assert commit_count(service.vault.root) == before + 1
    message = git(service.vault.root, "log", "-1", "--format=%s%n%b")
    assert message.startswith("external: facts/hand.md") and "Memvault-Op: external" in message
    assert any("facts/hand.md" in e.added for e in events)


def test_a_save_by_rename_is_one_change(watched: Watched) -> None:
    service, watcher, _ = watched
    created = service.remember("The printer is on the second floor.", type="fact")
    assert created.memory is not None
    target = service.vault.root / created.memory.path
    before = commit_count(service.vault.root)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(target.read_text().replace("second floor", "third floor"))
    os.replace(tmp, target)
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert watcher.batches == 1 and commit_count(service.vault.root) == before + 1
    assert "third floor" in service.recall("printer floor")[0].snippet


def test_a_deleted_file_disappears_and_triggers_list_changed(watched: Watched) -> None:
    service, watcher, events = watched
    created = service.remember("Parking is behind building C.", type="fact")
    assert created.memory is not None
    os.remove(service.vault.root / created.memory.path)
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert all(r.id != created.memory.id for r in service.recall("parking building"))
    assert any(created.memory.path in e.removed for e in events)


def test_a_moved_file_and_folder_keep_their_ids(watched: Watched) -> None:
    service, watcher, _ = watched
    # The product's quiet period: on a loaded machine a folder move can arrive as a delete
    # and a create in two batches more than the fixture's 0.4 s apart (seen at load ~20).
    watcher.debounce = 2.0
    created = service.remember("The VPN config lives in the wiki.", type="fact")
    assert created.memory is not None
    root = service.vault.root
    (root / "projects" / "net").mkdir(parents=True)
    os.replace(root / created.memory.path, root / "projects" / "net" / "vpn.md")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    os.replace(root / "projects" / "net", root / "projects" / "network")
    assert watcher.wait_for(lambda: watcher.commits == 2)
    hit = service.recall("vpn config")[0]
    assert hit.id == created.memory.id and hit.path == "projects/network/vpn.md"
    assert [c.trailers.get("Memvault-Op") for c in service.log(created.memory.id)] == [
        "external",
        "external",
        "remember",
    ]


def test_a_malformed_edit_does_not_stop_the_watcher(watched: Watched) -> None:
    service, watcher, _ = watched
    write(service.vault.root / "facts" / "bad.md", "---\ntags: [oops\n---\nstill searchable text\n")
    assert watcher.wait_for(lambda: watcher.batches >= 1)
    write(
        service.vault.root / "facts" / "good.md",
        "---\ntype: fact\n---\nA good edit after a bad one.\n",
    )
    assert watcher.wait_for(lambda: watcher.commits >= 1 and watcher.batches >= 2)
    assert service.recall("good edit after a bad one")[0].path == "facts/good.md"
    assert (service.vault.root / "facts" / "bad.md").read_text().startswith("---\ntags: [oops")
    assert watcher.errors == []


def test_memvaults_own_write_is_not_recommitted(watched: Watched) -> None:
    service, watcher, _ = watched
    before = commit_count(service.vault.root)
    service.remember("Own writes are not external edits.", type="fact")
    service.remember("Neither is this second one.", type="fact")
    write(service.vault.root / "inbox" / "marker.md", "a person's marker file\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert commit_count(service.vault.root) == before + 3
    assert (
        git(service.vault.root, "log", "-1", "--format=%s").strip() == "external: inbox/marker.md"
    )
    assert watcher.batches == 1


def test_a_burst_of_many_files_is_one_commit(watched: Watched) -> None:
    service, watcher, _ = watched
    before = commit_count(service.vault.root)
    for n in range(30):
        write(service.vault.root / "facts" / f"pulled-{n}.md", f"Pulled fact {n} about item {n}.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert commit_count(service.vault.root) == before + 1
    assert git(service.vault.root, "log", "-1", "--format=%s").strip() == "external: 30 files"


def test_stopping_processes_and_commits_what_was_already_seen(service: MemoryService) -> None:
    service.ensure_synced()
    watcher = Watcher(service, settle=0.5, debounce=30)
    watcher.start()
    before = commit_count(service.vault.root)
    write(service.vault.root / "facts" / "late.md", "A save just before shutdown.\n")
    assert watcher.wait_for(lambda: watcher.pending > 0)
    watcher.stop()
    assert commit_count(service.vault.root) == before + 1
    assert service.recall("save just before shutdown")[0].path == "facts/late.md"


def test_an_edit_saved_while_the_watcher_starts_up_is_committed(text_only: MemoryService) -> None:
    """`memvault watch` syncs the index before it watches (a first sync can embed for long):
    a note saved after the sync read it and before the observer ran had no event. Starting
    commits what is uncommitted then, as opening a vault does."""
    service = text_only
    note = service.vault.root / "facts" / "boat.md"
    write(note, "---\ntype: fact\n---\nThe boat is moored in Porto.\n")
    service.recover()  # a person's note, committed
    service.ensure_synced()
    before = commit_count(service.vault.root)
    write(note, "---\ntype: fact\n---\nThe boat is moored in Lisbon now.\n")  # the gap
    watcher = Watcher(service, debounce=0.4)
    watcher.start()
    try:
        assert commit_count(service.vault.root) == before + 1
        assert git(service.vault.root, "status", "--porcelain") == ""
        assert service.recall("where is the boat moored")[0].snippet.endswith("Lisbon now.")
    finally:
        watcher.stop()


def test_an_edit_caught_up_at_start_then_undone_is_committed_too(
    text_only: MemoryService,
) -> None:
    """The start-up catch-up commits a saved edit; the person then puts the old text back:
    that is a change too, committed, not taken for the text the index held before."""
    service = text_only
    note = service.vault.root / "facts" / "boat.md"
    porto = "---\ntype: fact\n---\nThe boat is moored in Porto.\n"
    write(note, porto)
    service.recover()
    service.ensure_synced()
    write(note, "---\ntype: fact\n---\nThe boat is moored in Lisbon now.\n")
    watcher = Watcher(service, debounce=0.4)
    watcher.start()
    try:
        caught_up = commit_count(service.vault.root)
        write(note, porto)  # undone
        assert watcher.wait_for(lambda: watcher.commits == 1)
        assert commit_count(service.vault.root) == caught_up + 1
        assert git(service.vault.root, "status", "--porcelain") == ""
    finally:
        watcher.stop()
