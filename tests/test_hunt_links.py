"""Links, context and the profile over notes people wrote in Obsidian (found by hand in a
hostile vault): the link forms Obsidian writes, and what an agent is given as context."""

from __future__ import annotations

from memvault.doctor import run_checks
from memvault.ids import new_id
from memvault.service import MemoryService

from .helpers import tool


def write(service: MemoryService, rel: str, body: str, meta: str = "") -> str:
    """A note written by hand (committed and indexed); its id."""
    memory_id = new_id()
    path = service.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\n{meta}---\n{body}", encoding="utf-8")
    service.commit_external([rel])
    service.sync_index([rel])
    return memory_id


# -- links --------------------------------------------------------------------------------------
def test_markdown_links_obsidian_writes_by_shortest_name_reach_notes_in_other_folders(
    text_only: MemoryService,
) -> None:
    runbook = write(text_only, "projects/Kafka runbook.md", "# Kafka runbook\n\nRestart.\n")
    deploy = write(text_only, "projects/ops/Deploy.md", "# Deploy\n\nShip it.\n")
    # Obsidian's default link format, with wikilinks off: the name, URL-encoded, no folder
    body = (
        "# Incident\n\nSee [the runbook](Kafka%20runbook.md), [deploy](Deploy) and "
        "[deploy again](ops/Deploy.md); [gone](Nowhere.md) is missing.\n"
    )
    note = write(text_only, "journal/Incident.md", body)
    out = tool(text_only, "get_memory", {"id": note})
    assert out["links"] == [
        {"id": runbook, "title": "Kafka runbook"},
        {"id": deploy, "title": "Deploy"},
        {"id": deploy, "title": "Deploy"},
        {"id": None, "title": "journal/Nowhere.md"},
    ]
    assert tool(text_only, "get_memory", {"id": runbook})["backlinks"] == [
        {"id": note, "title": "Incident"}
    ]
    broken = [
        p for p in run_checks(text_only.vault, text_only.history, "none") if p.kind == "broken_link"
    ]
    assert [p.path for p in broken] == ["journal/Incident.md"]
    assert "Nowhere" in broken[0].message
