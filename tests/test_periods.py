"""since/until read alike wherever they are given (recall, list filters, forget's filter),
a period that ends before it starts is refused, and the memories a period leaves out only
for want of a readable ``created`` (a person's note) are counted, not silently dropped."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from memvault.errors import InvalidInputError
from memvault.selection import parse, period
from memvault.service import MemoryService

from .helpers import commit_count, in_process, run_memvault, tool


def failing(service: MemoryService, name: str, args: dict[str, Any]) -> str:
    async def body(client: Client) -> str:
        result = await client.call_tool(name, args)
        assert result.is_error, result.structured_content
        return str(result.content[0].text)  # type: ignore[union-attr]

    text: str = in_process(service, body)
    return text


@pytest.fixture
def garden(svc: MemoryService) -> MemoryService:
    """One memory remembered on the test clock's day (2026-01-01) and a person's note with
    no created date."""
    svc.remember("The user planted tulip bulbs along the garden fence.", type="episode")
    note = svc.root / "notes" / "tulips.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Tulips\nThe red tulips came up by the garden fence in spring.\n")
    svc.recover()  # committed as a person's edit, indexed
    return svc


@pytest.mark.parametrize("since", ["2026", "2026-01", "2026-01-01", "2026-01-01T00:00:00Z"])
def test_recall_reads_a_year_or_a_month_as_forgets_filter_does(
    garden: MemoryService, since: str
) -> None:
    found = tool(garden, "recall", {"query": "tulip garden fence", "since": since})
    assert [h["type"] for h in found["results"]] == ["episode"]
    assert parse(f"since:{since}").since == period(since, None)[0]


def test_recall_says_how_many_memories_a_period_left_out_for_want_of_a_date(
    garden: MemoryService,
) -> None:
    found = tool(garden, "recall", {"query": "tulip garden fence", "since": "2025-06"})
    assert found["count"] == 1
    assert found["note"] == "1 memory without a readable created date: left out by since/until"
    unfiltered = tool(garden, "recall", {"query": "tulip garden fence"})
    assert unfiltered["count"] == 2 and unfiltered["note"] is None
    later = tool(garden, "recall", {"query": "tulip garden fence", "since": "2027"})
    assert later["count"] == 0
    assert later["note"].startswith("no memory matches the filters")  # none since 2027
    assert later["note"].endswith(
        "; 1 memory without a readable created date: left out by since/until"
    )


def test_a_period_that_ends_before_it_starts_is_refused_everywhere(garden: MemoryService) -> None:
    said = failing(garden, "recall", {"query": "tulips", "since": "2026-02", "until": "2026-01"})
    assert "since (2026-02) is after until (2026-01)" in said
    with pytest.raises(InvalidInputError, match=r"filter since \(2026\) is after until"):
        parse("since:2026 until:2025-12-31")
    with pytest.raises(InvalidInputError, match=r"same moment \(2026-03\).*until:2026-04"):
        parse("since:2026-03 until:2026-03")
    before = commit_count(garden.root)
    said = failing(garden, "forget", {"filter": "since:2026-02 until:2026-01"})
    assert "is after until" in said
    assert commit_count(garden.root) == before


def test_an_unreadable_date_is_refused_with_every_form_it_could_take(svc: MemoryService) -> None:
    said = failing(svc, "recall", {"query": "tulips", "since": "12/03/2024"})
    assert (
        "since must be an ISO date like 2026-11-30 (or a month, 2026-11, or a year, 2026)" in said
    )


def test_forgetting_by_a_period_says_which_memories_it_cannot_select(
    garden: MemoryService,
) -> None:
    """forget(filter="until:...") lists what it would forget and warns of the memories the
    period cannot see; nothing is forgotten before the confirmation."""
    before = commit_count(garden.root)
    asked = tool(garden, "forget", {"filter": "until:2027-01-01"})
    assert asked["action"] == "needs_confirmation" and len(asked["pending"]) == 1
    assert asked["warning"].endswith(
        "1 memory without a readable created date: left out by since/until"
    )
    assert commit_count(garden.root) == before
    listed = run_memvault(
        "--vault",
        str(garden.root),
        "forget",
        "--filter",
        "until:2027-01-01",
        "--dry-run",
        env={"MEMVAULT_EMBEDDER": "none"},
    )
    assert listed.returncode == 0 and listed.stdout.strip().startswith("episodes/")
    assert "warning: 1 memory without a readable created date" in listed.stderr
    assert commit_count(garden.root) == before


def test_a_note_without_a_date_written_later_is_counted_too(garden: MemoryService) -> None:
    """The count is kept per index generation: a write changes it at once."""
    asked = {"query": "tulip garden fence", "since": "2025-06"}
    assert tool(garden, "recall", asked)["note"].startswith("1 memory without")
    (garden.root / "notes" / "fence.md").write_text("# Fence\nThe fence was mended.\n")
    garden.recover()
    assert tool(garden, "recall", asked)["note"].startswith("2 memories without")
