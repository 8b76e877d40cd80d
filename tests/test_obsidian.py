"""A person's Obsidian file, faithfully: their `title:`, their own `status` vocabulary, line
endings and comments survive memvault's edits (issue 10)."""

from __future__ import annotations

from pathlib import Path

from memvault.service import MemoryService

from .helpers import git

DRAFT = """---
id: 01JDRAFT0000000000
type: note
status: draft  # my own workflow
kanban: doing
---
# Trip ideas

Kyoto in autumn.
"""


def write(service: MemoryService, rel: str, text: str, newline: str = "\n") -> Path:
    path = service.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    service.commit_external([rel])
    service.sync_index([rel])
    return path


def test_a_title_key_is_the_title_and_an_update_of_the_title_changes_that_key(
    text_only: MemoryService,
) -> None:
    path = write(
        text_only,
        "inbox/bl.md",
        "---\nid: 01JTITLE0000000000\ntitle: Bob Lee\n---\n# Contact\n\nPhone 555.\n",
    )
    assert text_only.get("01JTITLE0000000000").title == "Bob Lee"
    assert [i.title for i in text_only.records()] == ["Bob Lee"]
    text_only.update("01JTITLE0000000000", title="Robert Lee")
    text = path.read_text(encoding="utf-8")
    assert "title: Robert Lee\n" in text and "# Contact\n" in text
    assert text_only.get("01JTITLE0000000000").title == "Robert Lee"


def test_a_persons_own_status_is_kept_through_archive_and_revert(
    text_only: MemoryService,
) -> None:
    write(text_only, "inbox/trip.md", DRAFT)
    memory = text_only.get("01JDRAFT0000000000")
    assert memory.status == "active"  # `draft` is the person's word, not memvault's state
    before = git(text_only.root, "rev-parse", "HEAD").strip()
    archived = text_only.forget("01JDRAFT0000000000").memory
    text = (text_only.root / archived.path).read_text(encoding="utf-8")
    assert "status: draft  # my own workflow\n" in text and "kanban: doing\n" in text
    assert "lifecycle: archived\n" in text
    assert archived.status == "archived"
    assert [i.id for i in text_only.records()] == []  # archived ones are hidden by default
    text_only.revert("01JDRAFT0000000000", before)
    restored = text_only.get("01JDRAFT0000000000")
    assert restored.meta["status"] == "draft" and restored.status == "active"
    assert "lifecycle" not in restored.meta


def test_setting_memvaults_status_on_a_draft_and_back_never_touches_the_draft(
    text_only: MemoryService,
) -> None:
    path = write(text_only, "inbox/trip.md", DRAFT)
    text_only.update("01JDRAFT0000000000", fields={"status": "superseded"})
    assert "status: draft" in path.read_text(encoding="utf-8")
    assert text_only.get("01JDRAFT0000000000").status == "superseded"
    text_only.update("01JDRAFT0000000000", fields={"status": "active"})
    text = path.read_text(encoding="utf-8")
    assert "status: draft" in text and "lifecycle" not in text


def test_memvaults_own_status_key_is_used_when_the_file_has_none_or_memvaults_value(
    text_only: MemoryService,
) -> None:
    path = write(text_only, "inbox/plain.md", "---\nid: 01JPLAIN0000000000\n---\nA note.\n")
    text_only.update("01JPLAIN0000000000", fields={"status": "superseded"})
    text = path.read_text(encoding="utf-8")
    assert "status: superseded\n" in text and "lifecycle" not in text


def test_crlf_bom_comments_and_unknown_keys_survive_an_update(text_only: MemoryService) -> None:
    original = (
        "\ufeff---\n# a comment the person wrote\nid: 01JCRLF00000000000\nzeta: 1\n"
        "tags: [a]  # inline comment\nalpha: two\n---\n# Windows note\n\nLine one.\n"
    )
    path = write(text_only, "inbox/win.md", original, newline="\r\n")
    text_only.update("01JCRLF00000000000", fields={"importance": 0.9})
    data = path.read_bytes()
    assert data.startswith("\ufeff---\r\n".encode())
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line ending is still CRLF
    text = data.decode("utf-8")
    assert "# a comment the person wrote\r\n" in text and "tags: [a]  # inline comment\r\n" in text
    keys = [ln.split(":")[0] for ln in text.split("\r\n")[1:8] if ln and not ln.startswith("#")]
    assert keys[:4] == ["id", "zeta", "tags", "alpha"] and "importance" in keys
    assert text.endswith("# Windows note\r\n\r\nLine one.\r\n")
