"""The watcher and the index under what real editors and file tools do to a vault.

Real watchdog observers on real files, real git, real Whoosh; waits on Watcher.wait_for,
never sleeps.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli import cli
from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.history import History
from memvault.reports import status
from memvault.service import MemoryService
from memvault.vault import Vault

from .helpers import Watched, git, watched_as_person


@pytest.fixture
def watched(text_only: MemoryService) -> Iterator[Watched]:
    with watched_as_person(text_only) as running:
        yield running


def found(service: MemoryService, query: str) -> list[tuple[str, str]]:
    return [(hit.path, hit.id) for hit in service.recall(query)]


def indexed_paths(service: MemoryService) -> set[str]:
    return {record.path for record in service.index.records()}


def test_deleting_a_hand_copy_of_a_note_keeps_the_original_findable(watched: Watched) -> None:
    service, watcher, _ = watched
    created = service.remember("The dentist is Dr Molar, on Tuesdays at nine.", type="fact")
    assert created.memory is not None
    original, memory_id = created.memory.path, created.memory.id
    copy = service.vault.root / "facts" / "dentist copy.md"
    shutil.copy(service.vault.root / original, copy)  # same `id:`, a newer file
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert found(service, "dentist Molar") == [(original, memory_id)]  # not the copy
    assert any(p.kind == "duplicate_id" for p in run_checks(service.vault, service.history, "none"))

    copy.unlink()
    assert watcher.wait_for(lambda: watcher.commits == 2)
    assert found(service, "dentist Molar") == [(original, memory_id)]


def test_a_hand_copy_takes_the_id_once_the_original_is_deleted(watched: Watched) -> None:
    service, watcher, _ = watched
    created = service.remember("The boat is moored at pier seven in Porto.", type="fact")
    assert created.memory is not None
    root, memory_id = service.vault.root, created.memory.id
    shutil.copy(root / created.memory.path, root / "facts" / "boat.md")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    (root / created.memory.path).unlink()
    assert watcher.wait_for(lambda: watcher.commits == 2)
    assert found(service, "boat moored pier") == [("facts/boat.md", memory_id)]


def test_removing_a_copied_folder_keeps_every_original_note_indexed(
    text_only: MemoryService,
) -> None:
    """`cp -r` of a folder as a backup, then `rm -r` of the backup: the sync of the index
    (what `reindex`, a start and the watcher run) keeps the originals."""
    root = text_only.vault.root
    for i in range(5):
        text_only.remember(f"Project note {i}: the zebra migration step {i}.", folder="projects")
    originals = indexed_paths(text_only)
    shutil.copytree(root / "projects", root / "projects-backup")
    text_only.sync_index()
    assert indexed_paths(text_only) == originals
    shutil.rmtree(root / "projects-backup")
    text_only.sync_index()
    assert indexed_paths(text_only) == originals
    assert {path for path, _ in found(text_only, "zebra migration step")} == originals


def test_a_full_reindex_gives_the_id_to_the_original_not_to_its_cp_a_copy(
    text_only: MemoryService,
) -> None:
    root = text_only.vault.root
    created = text_only.remember("The piano tuner comes every March.", type="fact")
    assert created.memory is not None
    shutil.copytree(root / "facts", root / "old-facts")  # `cp -a`: the same modification time
    text_only.reset_index()
    text_only.sync_index()
    assert found(text_only, "piano tuner March") == [(created.memory.path, created.memory.id)]


def test_a_note_replaced_by_a_folder_of_its_name_leaves_the_index(watched: Watched) -> None:
    service, watcher, events = watched
    created = service.remember("The spare key is under the blue flower pot.", type="fact")
    assert created.memory is not None
    note = service.vault.root / created.memory.path
    note.unlink()
    note.mkdir()
    (note / "inside.md").write_text("Hiking boots are in the attic.\n", encoding="utf-8")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert indexed_paths(service) == {f"{created.memory.path}/inside.md"}
    assert found(service, "spare key flower pot") == []
    assert any(created.memory.path in e.removed for e in events)
    assert git(service.vault.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("inside", [None, "photo.jpg"])
def test_a_note_replaced_by_a_folder_without_notes_is_committed_as_deleted(
    watched: Watched, inside: str | None
) -> None:
    """An empty folder (or one holding no note) where a note was: the deletion is
    committed, and nothing in the folder is."""
    service, watcher, _ = watched
    created = service.remember("The spare key is under the blue flower pot.", type="fact")
    assert created.memory is not None
    note = service.vault.root / created.memory.path
    note.unlink()
    note.mkdir()
    if inside:
        (note / inside).write_bytes(b"\xff\xd8 not a note")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    tracked = git(service.vault.root, "ls-files").splitlines()
    assert [p for p in tracked if p.startswith(created.memory.path)] == []
    assert git(service.vault.root, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_new_folder_named_like_a_note_is_only_a_folder(watched: Watched) -> None:
    service, watcher, events = watched
    folder = service.vault.root / "projects" / "ideas.md"
    folder.mkdir()
    (folder / "kite.md").write_text("Build a kite from bamboo and silk.\n", encoding="utf-8")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert indexed_paths(service) == {"projects/ideas.md/kite.md"}
    assert not [e for e in events if "projects/ideas.md" in e.removed]


def test_a_note_moved_away_frees_its_id_for_the_copy_at_the_next_sync(
    text_only: MemoryService,
) -> None:
    root = text_only.vault.root
    created = text_only.remember("The piano tuner comes every March.", type="fact")
    assert created.memory is not None
    shutil.copy(root / created.memory.path, root / "inbox" / "tuner.md")
    text_only.sync_index()
    (root / created.memory.path).unlink()
    text_only.sync_index([created.memory.path])
    assert found(text_only, "piano tuner March") == [("inbox/tuner.md", created.memory.id)]


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00\x01 a note saved as binary", b"# Pasted log\n" + b"x" * 1_100_000],
    ids=["binary", "too-large"],
)
def test_a_note_that_can_no_longer_be_read_is_no_longer_listed(
    watched: Watched, content: bytes
) -> None:
    service, watcher, _ = watched
    created = service.remember("The garage code hint is grandma's birthday.", type="fact")
    assert created.memory is not None
    (service.vault.root / created.memory.path).write_bytes(content)
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert created.memory.path not in indexed_paths(service)
    page = service.list_memories()
    assert [m.path for m in page.memories] == []
    assert created.memory.path in {p.path for p in page.unreadable}


def test_doctor_passes_a_clean_vault_whose_person_chose_no_embedder(vault_path: Path) -> None:
    (vault_path / ".memvault.toml").write_text('embedder = "none"\n', encoding="utf-8")
    git(vault_path, "add", ".memvault.toml")
    git(vault_path, "commit", "-q", "-m", "text only")
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: no problems found")


def test_doctor_names_two_notes_without_id_first_saved_at_one_path(
    person_vault: MemoryService,
) -> None:
    """Obsidian's new note is `Untitled.md`: renamed to `Groceries.md`, then another new
    `Untitled.md`; both derive their id from the first path, and the index holds one."""
    root = person_vault.vault.root
    untitled = root / "inbox" / "Untitled.md"
    untitled.write_text("Buy oat milk, lentils and saffron at the market.\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "new note")
    git(root, "mv", "inbox/Untitled.md", "inbox/Groceries.md")
    git(root, "commit", "-qm", "named")
    untitled.write_text("Call the plumber about the dripping kitchen tap.\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "another new note")
    problems = run_checks(Vault(root), History(root), "none")
    named = [p for p in problems if p.kind == "duplicate_id"]
    assert [p.path for p in named] == ["inbox/Untitled.md"]
    assert "inbox/Groceries.md" in named[0].message and "`id:`" in named[0].message


def test_vault_status_counts_a_hand_copy_with_the_same_id_as_a_problem(watched: Watched) -> None:
    service, watcher, _ = watched
    created = service.remember("The lighthouse keeper is named Bartholomew Quill.", type="fact")
    assert created.memory is not None
    root = service.vault.root
    shutil.copy(root / created.memory.path, root / "facts" / "keeper.md")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert [(p.path, p.kind) for p in service.problems()] == [("facts/keeper.md", "duplicate_id")]
    assert status(service).problems == 1


def _piano_with_an_edited_original(service: MemoryService) -> tuple[str, str, str]:
    """A note, its copy made by hand (`cp`, a newer file), then the person's edit of the
    original (now the newer file of the two), all committed: (original, copy, id)."""
    created = service.remember("The piano tuner comes every March.", type="fact")
    assert created.memory is not None
    root, original = service.vault.root, created.memory.path
    shutil.copy(root / original, root / "facts" / "piano copy.md")
    service.commit_external(["facts/piano copy.md"])
    with (root / original).open("a", encoding="utf-8") as f:
        f.write("\nSince 2026 the tuner comes on Thursdays.\n")
    service.commit_external([original])
    return original, "facts/piano copy.md", created.memory.id


def test_a_full_reindex_keeps_the_id_with_the_original_a_person_edited_after_copying_it(
    text_only: MemoryService,
) -> None:
    original, _copy, memory_id = _piano_with_an_edited_original(text_only)
    text_only.reset_index()
    text_only.sync_index()
    assert found(text_only, "piano tuner") == [(original, memory_id)]
    assert "Thursdays" in text_only.get(memory_id).body


def test_a_clone_of_the_vault_gives_a_shared_id_to_the_same_file(
    text_only: MemoryService, tmp_path: Path
) -> None:
    original, _copy, memory_id = _piano_with_an_edited_original(text_only)
    git(tmp_path, "clone", "-q", str(text_only.vault.root), "clone")
    clone = MemoryService.open(tmp_path / "clone", Settings(embedder="none"))
    try:
        assert found(clone, "piano tuner") == [(original, memory_id)]
        assert clone.update(memory_id, content="The tuner comes in April.").memory.path == original
    finally:
        clone.close()
    assert found(text_only, "piano tuner") == [(original, memory_id)]


def test_doctor_and_status_name_the_copy_not_the_original_that_keeps_the_id(
    text_only: MemoryService,
) -> None:
    original, copy, memory_id = _piano_with_an_edited_original(text_only)
    text_only.sync_index()
    checks = run_checks(text_only.vault, text_only.history, "none")
    named = [p for p in checks if p.kind == "duplicate_id"]
    from_status = [p for p in text_only.problems() if p.kind == "duplicate_id"]
    assert [p.path for p in named] == [p.path for p in from_status] == [copy]
    assert named[0].message == from_status[0].message
    assert f"as {original}, which keeps it" in named[0].message
    assert f"give {copy} an id of its own" in named[0].message
    assert found(text_only, "piano tuner") == [(original, memory_id)]


def test_a_moved_original_keeps_its_id_from_a_copy_put_back_at_its_old_path(
    text_only: MemoryService,
) -> None:
    """`git mv a b` committed, then `cp b a`: both files' first path is `a`, but `b` is
    the note that was there first (it moved); the copy at the old path is the copy."""
    root = text_only.vault.root
    created = text_only.remember("The piano tuner comes every March.", type="fact")
    assert created.memory is not None
    old, memory_id = created.memory.path, created.memory.id
    git(root, "mv", old, "inbox/tuner.md")
    git(root, "commit", "-qm", "move the tuner note")
    shutil.copy(root / "inbox" / "tuner.md", root / old)
    git(root, "add", old)
    git(root, "commit", "-qm", "a copy back at the old place")
    reopened = MemoryService.open(root, Settings(embedder="none"))  # a CLI command, a restart
    try:
        reopened.reset_index()
        reopened.sync_index()
        assert found(reopened, "piano tuner March") == [("inbox/tuner.md", memory_id)]
        named = [p.path for p in reopened.problems() if p.kind == "duplicate_id"]
        assert named == [old]
    finally:
        reopened.close()
