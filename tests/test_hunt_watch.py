"""The watcher and the index under what real editors and file tools do to a vault.

Real watchdog observers on real files, real git, real Whoosh; waits on Watcher.wait_for,
never sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memvault.service import MemoryService

from .helpers import Watched, git, watching


@pytest.fixture
def watched(text_only: MemoryService) -> Iterator[Watched]:
    git(text_only.vault.root, "config", "user.name", "Ada Person")
    git(text_only.vault.root, "config", "user.email", "ada@example.org")
    with watching(text_only) as running:
        yield running


def found(service: MemoryService, query: str) -> list[tuple[str, str]]:
    return [(hit.path, hit.id) for hit in service.recall(query)]


def indexed_paths(service: MemoryService) -> set[str]:
    return {record.path for record in service.index.records()}


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
