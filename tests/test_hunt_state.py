"""memvault's own state in ``.memvault/`` (the write journal, provenance) damaged, left
half-written by a kill, or on a vault it may not write: writes and reads go on, and nothing
of a person's is lost or left behind."""

from __future__ import annotations

from pathlib import Path

from memvault.config import Settings
from memvault.service import MemoryService

from .helpers import commit_count, git

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
