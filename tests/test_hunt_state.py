"""memvault's own state in ``.memvault/`` (the write journal, provenance) damaged, left
half-written by a kill, or on a vault it may not write: writes and reads go on, and nothing
of a person's is lost or left behind."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.errors import ReadOnlyVaultError
from memvault.service import MemoryService
from memvault.vault import state_elsewhere

from .helpers import commit_count, git, run_memvault

JOURNAL = Path(".memvault") / "pending-writes"


def _op(vault: Path, path: str) -> str:
    """The ``Memvault-Op`` of the last commit of ``path``."""
    return git(
        vault, "log", "-1", "--format=%(trailers:key=Memvault-Op,valueonly)", "--", path
    ).strip()


def test_a_write_journal_that_is_not_utf8_does_not_stop_writes(vault_path: Path) -> None:
    (vault_path / ".memvault").mkdir(exist_ok=True)
    (vault_path / JOURNAL).write_bytes(b"\xff\xfe")
    before = commit_count(vault_path)

    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        made = service.remember("The user drinks green tea every morning.", type="preference")
    finally:
        service.close()

    assert made.memory is not None
    assert commit_count(vault_path) == before + 1
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_damaged_write_journal_keeps_the_paths_it_still_names_and_loses_no_file(
    vault_path: Path,
) -> None:
    (vault_path / ".memvault").mkdir(exist_ok=True)
    (vault_path / "facts" / "left.md").write_text("---\ntype: fact\n---\nLeft by a crash.\n")
    (vault_path / "facts" / "mine.md").write_text("# Mine\n\nWritten by hand.\n", "utf-8")
    (vault_path / JOURNAL).write_bytes(b"\xff\xfe\x00\nfacts/left.md\nfacts/\x00mine.md\n")

    service = MemoryService.open(vault_path, Settings(embedder="none"))
    service.close()

    assert _op(vault_path, "facts/left.md") == "recover"  # named in the journal: memvault's
    assert _op(vault_path, "facts/mine.md") == "external"  # a damaged line names nothing
    assert git(vault_path, "status", "--porcelain") == ""
    assert not (vault_path / JOURNAL).exists()


def _left_by_a_kill(folder: Path, prefix: str, text: str, suffix: str = ".tmp") -> Path:
    """A temporary file as a save killed between writing it and renaming it leaves."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return Path(name)


def test_a_purge_erases_what_saves_killed_before_their_rename_left_of_the_memory(
    svc: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = svc.remember("The user's locker code is xyzzy-4417.", type="fact")
    assert made.memory is not None
    root, rel = svc.root, made.memory.path
    note = root / rel
    left = [
        _left_by_a_kill(note.parent, f".{note.name}.", note.read_text("utf-8")),
        _left_by_a_kill(root / ".memvault", ".provenance.", json.dumps({rel: rel})),
        _left_by_a_kill(root / ".memvault", ".catalog.", json.dumps({rel: made.memory.id})),
        _left_by_a_kill(root / ".git", "memvault-", f"remember: {rel}", suffix=""),
    ]
    mine = _left_by_a_kill(note.parent, ".kites.md.", "a person's own temporary file")
    read_only_days = state_elsewhere(root) / "index"  # its index while it was read-only
    read_only_days.mkdir(parents=True)
    (read_only_days / "store.sqlite").write_text(note.read_text("utf-8"), encoding="utf-8")

    svc.forget(made.memory.id, mode="purge")

    assert [p for p in left if p.exists()] == []
    assert not state_elsewhere(root).exists()
    assert mine.exists()  # beside another file: not the purged memory's
    holding = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.is_relative_to(root / ".git" / "objects")
        if b"xyzzy-4417" in p.read_bytes() or rel.encode() in p.read_bytes()
    ]
    assert holding == []


def test_the_provenance_cache_keeps_its_permissions_when_saved_again(svc: MemoryService) -> None:
    cache = svc.root / ".memvault" / "provenance.json"
    assert cache.exists()
    cache.chmod(0o644)
    (svc.root / "inbox" / "dog.md").write_text("# Dog\n\nWalks at seven.\n", "utf-8")

    svc.commit_external(["inbox/dog.md"])  # a person's edit: the cache folds it in

    assert '"inbox/dog.md"' in cache.read_text("utf-8")  # saved again
    assert stat.S_IMODE(cache.stat().st_mode) == 0o644
    assert [p.name for p in cache.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any permissions")
def test_a_read_only_vault_answers_reads_and_refuses_writes_leaving_nothing(
    vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    made = first.remember("The user's cat is called Miso.", type="fact")
    first.close()
    assert made.memory is not None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "none")
    head = git(vault_path, "rev-parse", "HEAD")
    subprocess.run(["chmod", "-R", "a-w", str(vault_path)], check=True)
    try:
        before = sorted(p.relative_to(vault_path) for p in vault_path.rglob("*"))
        service = MemoryService.open(vault_path, Settings(embedder="none"))
        try:
            assert [h.id for h in service.recall("cat Miso", k=1)] == [made.memory.id]
            with pytest.raises(ReadOnlyVaultError, match=r"read-only.*nothing was written"):
                service.remember("The user plays chess on Tuesdays.", type="fact")
        finally:
            service.close()
        searched = run_memvault("--vault", str(vault_path), "search", "Miso")
        added = run_memvault("--vault", str(vault_path), "add", "The user swims.")
        assert searched.returncode == 0 and "Miso" in searched.stdout, searched.stderr
        assert added.returncode == 1 and "is read-only" in added.stderr
        nowhere = {"XDG_CACHE_HOME": str(vault_path / "cache")}  # no index can be kept there
        blocked = run_memvault("--vault", str(vault_path), "search", "Miso", env=nowhere)
        assert blocked.returncode == 1 and "set XDG_CACHE_HOME" in blocked.stderr
        assert sorted(p.relative_to(vault_path) for p in vault_path.rglob("*")) == before
        assert git(vault_path, "rev-parse", "HEAD") == head
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(vault_path)], check=True)


def test_a_write_while_another_process_holds_the_vector_database_stands_and_is_found_later(
    svc: MemoryService,
) -> None:
    """sqlite's own error ("database is locked", after its 30 s wait) in the thread that
    indexes a write must neither die unseen nor leave the memory out of later searches."""
    holder = sqlite3.connect(svc.root / ".memvault" / "index" / "store.sqlite")
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    try:
        made = svc.remember("The user rides a red bicycle to work.", type="fact")
    finally:
        holder.rollback()
        holder.close()

    assert made.memory is not None
    assert git(svc.root, "status", "--porcelain") == ""  # committed
    assert [h.id for h in svc.recall("red bicycle", k=1)] == [made.memory.id]
