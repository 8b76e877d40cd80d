"""What a person hides with ``.memvaultignore`` never reaches git through memvault: not at
the vault's opening, not from the watcher's commits, not from a sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import doctor
from memvault.config import Settings
from memvault.errors import MemvaultError
from memvault.service import MemoryService
from memvault.syncing import sync
from memvault.template import create_vault

from .helpers import git, synced_pair


def _hide_private(vault: Path) -> None:
    (vault / ".memvaultignore").write_text("/README.md\nprivate/\n", encoding="utf-8")
    git(vault, "add", ".memvaultignore")
    git(vault, "-c", "user.name=P", "-c", "user.email=p@example.org", "commit", "-qm", "hide")


def _write_private(vault: Path) -> None:
    (vault / "private").mkdir(exist_ok=True)
    (vault / "private" / "diary.md").write_text("# Diary\n\nMy secret.\n", encoding="utf-8")
    (vault / "private" / "scan.png").write_bytes(b"\x89PNG secret")


def _committed(vault: Path) -> list[str]:
    return git(vault, "log", "--all", "--name-only", "--format=").split()


def test_a_hidden_note_written_while_nothing_ran_is_not_committed_when_the_vault_opens(
    vault_path: Path,
) -> None:
    _hide_private(vault_path)
    _write_private(vault_path)
    (vault_path / "inbox" / "kites.md").write_text("# Kites\n\nKites fly.\n", encoding="utf-8")

    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert "inbox/kites.md" in _committed(vault_path)  # the visible edit is committed
        assert not [p for p in _committed(vault_path) if p.startswith("private/")]
        assert (vault_path / "private" / "diary.md").read_text("utf-8").endswith("My secret.\n")
        found = {p.path: p for p in doctor.check_uncommitted(service.vault, service.history)}
        assert ".memvaultignore hides it" in found["private/diary.md"].message
        assert found["private/diary.md"].kind == "uncommitted"  # a notice, not a problem
    finally:
        service.close()


def test_a_note_hidden_after_the_vault_opened_is_not_committed_as_a_persons_edit(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    _hide_private(vault)  # the service read .memvaultignore before this line
    _write_private(vault)

    text_only.commit_external(["private/diary.md", "private/scan.png"])
    text_only.recover()

    assert not [p for p in _committed(vault) if p.startswith("private/")]
    assert "?? private/" in git(vault, "status", "--porcelain")


def test_a_sync_does_not_commit_nor_push_a_hidden_note(tmp_path: Path) -> None:
    with synced_pair(tmp_path) as pair:
        vault = pair.a.root
        _hide_private(vault)
        _write_private(vault)

        result = sync(pair.a)

        assert result.error is None
        assert not [p for p in _committed(pair.remote) if p.startswith("private/")]
        assert not [p for p in _committed(vault) if p.startswith("private/")]


def test_a_purge_over_a_hidden_edit_is_refused_before_writing_and_keeps_the_edit(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    _write_private(vault)
    git(vault, "add", "private")
    git(vault, "-c", "user.name=P", "-c", "user.email=p@example.org", "commit", "-qm", "diary")
    _hide_private(vault)  # committed before, hidden since
    (vault / "private" / "diary.md").write_text("# Diary\n\nA new secret.\n", encoding="utf-8")
    made = text_only.remember("The user's locker code is 5512.", type="fact")
    assert made.memory is not None
    head = git(vault, "rev-parse", "HEAD")

    with pytest.raises(MemvaultError, match=r"cannot purge.*private/diary.md is hidden") as no:
        text_only.forget(made.memory.id, mode="purge")
    assert "git rm --cached" in str(no.value)  # never "commit it": that sends it out

    assert git(vault, "rev-parse", "HEAD") == head
    assert (vault / made.memory.path).exists()
    assert (vault / "private" / "diary.md").read_text("utf-8").endswith("A new secret.\n")
    git(vault, "-c", "user.name=P", "-c", "user.email=p@example.org", "commit", "-qam", "mine")
    assert text_only.forget(made.memory.id, mode="purge").action == "purged"


def test_init_of_a_folder_with_its_own_memvaultignore_commits_none_of_what_it_hides(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "notes"
    (folder / "private").mkdir(parents=True)
    (folder / "private" / "diary.md").write_text("# Diary\n\nMy secret.\n", encoding="utf-8")
    (folder / "kites.md").write_text("# Kites\n\nKites fly in March.\n", encoding="utf-8")
    (folder / ".memvaultignore").write_text("private/\n", encoding="utf-8")

    create_vault(folder)

    assert "kites.md" in _committed(folder)
    assert not [p for p in _committed(folder) if p.startswith("private/")]
    assert (folder / "private" / "diary.md").exists()


def test_a_sync_over_an_edit_of_a_hidden_tracked_note_says_how_to_keep_it_private(
    tmp_path: Path,
) -> None:
    """B hides a note git tracks and edits it; A's change makes B rebase: the refusal
    advised committing the edit with git, which would push the private text."""
    with synced_pair(tmp_path) as pair:
        bike = pair.b.remember("The user's bike is a blue Brompton.", type="fact").memory
        car = pair.b.remember("The user's car is a red Fiat.", type="fact").memory
        assert bike is not None and car is not None
        sync(pair.b)
        sync(pair.a)
        root = pair.b.vault.root
        rule = root / ".memvaultignore"
        rule.write_text(rule.read_text() + f"{bike.path}\n")
        pair.b.reload_ignore(True)
        note = root / bike.path
        note.write_text(note.read_text() + "\nPrivate: bought it for 900 EUR.\n")
        pair.a.update(car.id, content="The user's car is a green Fiat.")
        assert sync(pair.a).error is None
        with pytest.raises(MemvaultError, match="git rm --cached") as refused:
            sync(pair.b)
        assert "would send it to your remote" in str(refused.value)
        assert "900 EUR" not in git(pair.remote, "log", "--all", "-p")
        assert note.read_text().endswith("900 EUR.\n")
