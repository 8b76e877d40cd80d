"""Reports: status, export and which aggregate views a change can alter."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from memvault import reports
from memvault.config import Settings
from memvault.models import ChangeEvent, MemoryInfo
from memvault.service import MemoryService


def record(type_: str, importance: float = 0.5, tags: tuple[str, ...] = ()) -> MemoryInfo:
    return MemoryInfo("01A", "x.md", "x", type_, "active", tags, (), None, None, importance, 0.8)


def test_a_change_names_only_the_views_its_memories_can_alter() -> None:
    note = ChangeEvent(changed=("inbox/x.md",), memories=(record("note"),))
    assert set(reports.affected(note)) == {reports.INDEX, reports.RECENT}
    retyped = ChangeEvent(changed=("x.md",), memories=(record("preference"), record("fact")))
    assert set(reports.affected(retyped)) == set(reports.AGGREGATES) - {reports.PROFILE}
    important = ChangeEvent(changed=("x.md",), memories=(record("preference"), record("fact", 0.8)))
    assert set(reports.affected(important)) == set(reports.AGGREGATES)


def test_only_a_fact_that_is_or_was_in_the_profile_announces_the_profile() -> None:
    def views(*memories: MemoryInfo) -> tuple[str, ...]:
        return reports.affected(ChangeEvent(changed=("facts/x.md",), memories=memories))

    assert reports.PROFILE not in views(record("fact", 0.5))
    assert reports.PROFILE in views(record("fact", 0.9))
    assert reports.PROFILE in views(record("fact", 0.2, ("profile",)))
    assert reports.PROFILE in views(record("fact", 0.9), record("fact", 0.3))  # demoted
    assert reports.PROFILE not in views(record("note", 0.9))


def test_a_change_without_records_may_alter_every_view() -> None:
    assert reports.affected(ChangeEvent(changed=("facts/by-hand.md",))) == reports.AGGREGATES


def test_service_writes_carry_the_records_of_the_memories_they_changed(
    service: MemoryService,
) -> None:
    events: list[ChangeEvent] = []
    service.listeners.append(events.append)
    made = service.remember("The user prefers tea to coffee.", type="preference", importance=0.8)
    assert made.memory is not None
    service.update(made.memory.id, fields={"type": "fact"})
    assert [m.type for m in events[0].memories] == ["preference"]
    assert [m.type for m in events[1].memories] == ["preference", "fact"]
    assert reports.PROFILE in reports.affected(events[1])


def test_status_counts_what_the_vault_holds(service: MemoryService) -> None:
    service.remember("The user's desk is by the window.", type="fact")
    status = reports.status(service)
    assert status.memories >= 1 and status.by_type.get("fact", 0) >= 1
    assert status.last_commits[0]["op"] == "remember"


def full_read(service: MemoryService) -> tuple[int, dict[str, int], int, set[tuple[str, str]]]:
    """What status must say, worked out by reading every file (Vault.scan)."""
    memories, problems = service.vault.scan()
    by_type: dict[str, int] = {}
    for m in memories:
        by_type[m.type] = by_type.get(m.type, 0) + 1
    archived = sum(1 for m in memories if m.status == "archived")
    return (
        len(memories),
        dict(sorted(by_type.items())),
        archived,
        {(p.path, p.kind) for p in problems},
    )


def counted(service: MemoryService) -> tuple[int, dict[str, int], int, set[tuple[str, str]]]:
    status = reports.status(service)
    problems = {(p.path, p.kind) for p in service.problems()}
    assert status.problems == len(problems)
    return status.memories, status.by_type, status.archived, problems


def test_status_counts_what_a_full_read_finds_after_changes_the_index_has_not_seen(
    text_only: MemoryService,
) -> None:
    root = text_only.vault.root
    kept = text_only.remember("The user's desk is by the window.", type="fact")
    gone = text_only.remember("The user takes the 8:10 train.", type="episode")
    edited = text_only.remember("The user prefers tea.", type="preference")
    assert kept.memory and gone.memory and edited.memory
    text_only.forget(kept.memory.id)  # archived
    (root / "facts" / "broken.md").write_text("---\ntype: [fact\n---\nUnclosed list.\n")
    (root / "facts" / "binary.md").write_bytes(b"\x00\x01binary")
    text_only.ensure_synced()
    # after the index was synced: a hand-made file, an edit, a deletion, a symlink, a FIFO
    (root / "tasks" / "hand.md").write_text("---\ntype: task\n---\nWater the plants.\n")
    path = root / edited.memory.path
    path.write_text(path.read_text().replace("type: preference", "type: summary"))
    (root / gone.memory.path).unlink()
    (root / "facts" / "link.md").symlink_to(root / "README.md")
    os.mkfifo(root / "facts" / "pipe.md")
    status = counted(text_only)
    assert status == full_read(text_only)
    assert status[:3] == (4, {"fact": 1, "note": 1, "summary": 1, "task": 1}, 1)  # broken: a note
    reopened = MemoryService.open(root, Settings(embedder="none"), recover=False)
    try:  # a new process: the malformed file's problem comes from its index record
        assert counted(reopened) == status
    finally:
        reopened.close()


def test_status_and_list_take_indexed_files_from_the_index_without_reading_them(
    text_only: MemoryService,
) -> None:
    """The probe: a file's bytes change but its (mtime, size) is set back, as if unchanged.
    A status that read the file would count the new type; one from the index does not."""
    made = text_only.remember("The user's bike is blue.", type="fact")
    assert made.memory is not None
    text_only.ensure_synced()
    path = text_only.vault.root / made.memory.path
    before = path.stat()
    path.write_text(path.read_text().replace("type: fact", "type: task"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert reports.status(text_only).by_type == {"fact": 1}
    assert [m.type for m in text_only.list_memories().memories] == ["fact"]
    os.utime(path)  # now it looks changed: status reads it again
    assert reports.status(text_only).by_type == {"task": 1}


class ReadWhileIndexing(logging.Handler):
    """Reads the index resource from inside the first sync (on the log line of a file it
    cannot index), as an MCP host does when it reads it while the server starts up."""

    def __init__(self, service: MemoryService) -> None:
        super().__init__(logging.INFO)
        self.service, self.text = service, ""

    def emit(self, record: logging.LogRecord) -> None:
        if not self.text and "not indexed" in record.getMessage():
            self.text = reports.aggregate(self.service, reports.INDEX)


def test_the_index_resource_says_when_the_index_is_still_catching_up(vault_path: Path) -> None:
    """It said "0 of 0 memories" while the first sync ran: an empty vault, to an agent."""
    (vault_path / "scan.md").write_bytes(b"\x89PNG\x00\x00")  # a file the sync cannot index
    (vault_path / "tea.md").write_text("# Tea\n\nThe user drinks green tea.\n")
    service = MemoryService.open(vault_path, Settings(embedder="none"), recover=False)
    reader = ReadWhileIndexing(service)
    sync_log = logging.getLogger("memvault.sync")
    level = sync_log.level
    sync_log.addHandler(reader)
    sync_log.setLevel(logging.INFO)
    try:
        after = reports.aggregate(service, reports.INDEX)  # runs the first sync itself
    finally:
        sync_log.removeHandler(reader)
        sync_log.setLevel(level)
        service.close()
    assert reader.text.split("\n", 2)[1].startswith("(the index is still catching up")
    assert "still catching up" not in after and "- [note] Tea" in after
