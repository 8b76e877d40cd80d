"""Reports: status, export and which aggregate views a change can alter."""

from __future__ import annotations

from memvault import reports
from memvault.models import ChangeEvent, MemoryInfo
from memvault.service import MemoryService


def record(type_: str) -> MemoryInfo:
    return MemoryInfo("01A", "x.md", "x", type_, "active", (), (), None, None, 0.5, 0.8)


def test_a_change_names_only_the_views_its_memories_can_alter() -> None:
    note = ChangeEvent(changed=("inbox/x.md",), memories=(record("note"),))
    assert set(reports.affected(note)) == {reports.INDEX, reports.RECENT}
    retyped = ChangeEvent(changed=("x.md",), memories=(record("preference"), record("fact")))
    assert set(reports.affected(retyped)) == set(reports.AGGREGATES)


def test_a_change_without_records_may_alter_every_view() -> None:
    assert reports.affected(ChangeEvent(changed=("facts/by-hand.md",))) == reports.AGGREGATES


def test_service_writes_carry_the_records_of_the_memories_they_changed(
    service: MemoryService,
) -> None:
    events: list[ChangeEvent] = []
    service.listeners.append(events.append)
    made = service.remember("The user prefers tea to coffee.", type="preference")
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
