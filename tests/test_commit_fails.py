"""A write whose git commit fails is taken back: every file as it was, nothing staged, the
index in step, and an error that says nothing was saved and why (recovery.writing)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from mcp import Client

from memvault.errors import NotSavedError
from memvault.models import Filters
from memvault.server import build_server
from memvault.service import MemoryService
from memvault.vault import Vault

from .helpers import broken_git_index, git


def files(root: Path) -> dict[str, bytes]:
    """Every file of the vault (not git's, not memvault's state) and its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and ".memvault" not in p.parts
    }


def found(service: MemoryService, words: str) -> list[str]:
    hits = service.search(words, k=10, filters=Filters(include_archived=True, min_relevance=0))
    return [h.doc.path for h in hits]


def test_a_remember_whose_commit_fails_leaves_no_file_and_no_commit(
    text_only: MemoryService,
) -> None:
    bike = text_only.remember("The user's bike is black.", type="fact").memory
    assert bike is not None
    root = text_only.root
    before, head = files(root), git(root, "rev-parse", "HEAD")
    with broken_git_index(root), pytest.raises(NotSavedError) as caught:
        text_only.remember("The user's bike is red now.", type="fact", supersedes=[bike.id])
    said = str(caught.value)
    assert said.startswith("nothing was saved: git could not commit (")
    assert "2 file(s) written are back as they were" in said
    assert files(root) == before  # the new file gone, the superseded one byte for byte
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    assert found(text_only, "red") == []  # the index forgot what it had read meanwhile
    assert text_only.get(bike.id).status == "active"
    again = text_only.remember("The user's bike is red now.", type="fact", supersedes=[bike.id])
    assert again.action == "created" and text_only.get(bike.id).status == "superseded"


def test_an_archive_whose_commit_fails_moves_the_file_back(text_only: MemoryService) -> None:
    boat = text_only.remember("The user's boat is moored in Kiel.", type="fact").memory
    assert boat is not None
    root = text_only.root
    before, head = files(root), git(root, "rev-parse", "HEAD")
    with broken_git_index(root), pytest.raises(NotSavedError, match="nothing was saved"):
        text_only.forget(boat.id)
    assert files(root) == before and git(root, "rev-parse", "HEAD") == head
    assert found(text_only, "Kiel") == [boat.path]
    assert text_only.forget(boat.id).memory.path.startswith("archive/")


def test_the_mcp_remember_tool_says_nothing_was_saved(text_only: MemoryService) -> None:
    server, _ = build_server(text_only)
    root = text_only.root
    before = files(root)

    async def main() -> str:
        async with Client(server) as client:
            args = {"content": "The user's kayak is yellow.", "type": "fact"}
            result = await client.call_tool("remember", args)
            assert result.is_error
            return " ".join(getattr(c, "text", "") for c in result.content)

    with broken_git_index(root):
        said = asyncio.run(main())
    assert "not_saved: nothing was saved: git could not commit (" in said
    assert files(root) == before


def test_what_a_write_replaces_is_kept_up_to_a_limit(vault_path: Path) -> None:
    """Past the limit nothing more is kept, and the undo says it is not complete (the
    write's files then stay for the recovery commit instead of being half put back)."""
    vault = Vault(vault_path)
    vault.write("notes/a.md", "a" * 100)
    with vault.undoable(limit=50) as undo:
        vault.write("notes/b.md", "new")
        vault.move("notes/b.md", "notes/c.md")
        vault.write("notes/a.md", "changed")  # its 100 bytes are over the limit
    assert undo.before == {"notes/b.md": None, "notes/c.md": None} and not undo.complete
    with vault.undoable() as undo:
        vault.write("notes/a.md", "again")
        vault.move("notes/c.md", "notes/d.md")
        assert undo.restore() == ["notes/d.md", "notes/c.md", "notes/a.md"]
    assert (vault_path / "notes/a.md").read_text() == "changed"
    assert (vault_path / "notes/c.md").read_text() == "new"
    assert not (vault_path / "notes/d.md").exists()


class SaveWhileGitWaits(logging.Handler):
    """A person's editor saving ``path`` while memvault's commit waits on git's lock: run
    from memvault's own retry log line, so it lands after the write and before the undo."""

    def __init__(self, path: Path, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.path, self.text, self.saved = path, text, False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.saved and "lock busy" in record.getMessage():
            self.path.write_text(self.text, encoding="utf-8")
            self.saved = True


def test_a_failed_write_never_undoes_a_save_made_while_it_waited(
    text_only: MemoryService,
) -> None:
    """The undo put the old bytes back over whatever was there: a person's save between
    memvault's write and its failed commit was lost."""
    bike = text_only.remember("The user's bike is black.", type="fact").memory
    assert bike is not None
    root, head = text_only.root, git(text_only.root, "rev-parse", "HEAD")
    person = (root / bike.path).read_text(encoding="utf-8") + "\nSaved by the person.\n"
    saver = SaveWhileGitWaits(root / bike.path, person)
    history_log = logging.getLogger("memvault.history")
    level, text_only.history.lock_retry_seconds = history_log.level, 0.3
    branch = git(root, "symbolic-ref", "HEAD").strip()
    (root / ".git" / f"{branch}.lock").write_text("")  # fresh: a live git's, not stale
    history_log.addHandler(saver)
    history_log.setLevel(logging.DEBUG)
    try:
        with pytest.raises(NotSavedError) as caught:
            text_only.update(bike.id, content="The user's bike is green.")
    finally:
        history_log.removeHandler(saver)
        history_log.setLevel(level)
        (root / ".git" / f"{branch}.lock").unlink()
    assert saver.saved
    assert (root / bike.path).read_text(encoding="utf-8") == person
    assert "1 saved again meanwhile" in str(caught.value)
    assert "could not be put back" not in str(caught.value)
    assert bike.path not in text_only.vault.journal_paths()  # committed as the person's
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "diff", "--cached", "--name-only") == ""  # memvault's version unstaged
    assert found(text_only, "Saved by the person") == [bike.path]


def test_a_write_taken_back_leaves_no_folder_it_made(text_only: MemoryService) -> None:
    """The file went, the new folders stayed: an empty `trips/2027/` in Obsidian's tree."""
    root = text_only.root
    before = files(root)
    (root / "trips").mkdir()
    (root / "trips" / "keep").mkdir()  # a person's empty folder: not the write's to remove
    with broken_git_index(root), pytest.raises(NotSavedError):
        text_only.remember("Flights to Lisbon are booked.", type="event", folder="trips/2027/may")
    assert not (root / "trips" / "2027").exists()
    assert (root / "trips" / "keep").is_dir()
    assert files(root) == before
