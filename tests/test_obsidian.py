"""A person's Obsidian file, faithfully: their `title:`, their own `status` vocabulary, line
endings and comments survive memvault's edits (issue 10)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest

from memvault import note
from memvault.config import Settings
from memvault.service import MemoryService
from memvault.template import create_vault
from memvault.vault import Vault

from .helpers import git, watching

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


def test_a_persons_edit_moves_updated_without_the_file_being_rewritten(
    text_only: MemoryService,
) -> None:
    text_only.clock = lambda: dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)
    old = text_only.remember("The dentist is Dr. Okafor on Elm Street.", type="fact")
    newer = text_only.remember("The user's dog is a beagle named Pepper.", type="fact")
    assert old.memory is not None and newer.memory is not None
    path = text_only.root / old.memory.path
    path.write_text(path.read_text(encoding="utf-8").replace("Elm", "Oak"), encoding="utf-8")
    saved = dt.datetime(2026, 3, 2, 3, 4, 5, tzinfo=dt.UTC)  # the person's save, the latest
    os.utime(path, (saved.timestamp(), saved.timestamp()))
    edited = path.read_bytes()
    text_only.commit_external([old.memory.path])  # what the watcher does after a save
    assert path.read_bytes() == edited  # `updated` was not written into the person's file
    first = text_only.list_memories().memories[0]
    assert first.id == old.memory.id
    assert note.timestamp(first.updated) == saved.timestamp()
    assert note.timestamp(text_only.get(old.memory.id).updated) == saved.timestamp()
    author_date = git(text_only.root, "log", "-1", "--format=%at").strip()
    assert int(author_date) == int(saved.timestamp())  # the commit is dated by the save


def test_memvaults_own_later_write_is_newer_than_an_earlier_hand_edit(
    text_only: MemoryService,
) -> None:
    result = text_only.remember("The office wifi is called Meadow.", type="fact")
    assert result.memory is not None
    path = text_only.root / result.memory.path
    path.write_text(path.read_text(encoding="utf-8") + "\nGuest network too.\n", "utf-8")
    past = dt.datetime(2020, 5, 5, tzinfo=dt.UTC).timestamp()
    os.utime(path, (past, past))
    text_only.commit_external([result.memory.path])
    written = text_only.update(result.memory.id, fields={"importance": 0.7}).memory
    assert written.updated == written.meta["updated"].isoformat()


ID_LESS = "# Packing list\n\nPassport, charger, the blue umbrella.\n"


def test_a_file_without_frontmatter_keeps_its_id_when_moved_and_is_not_rewritten(
    text_only: MemoryService,
) -> None:
    write(text_only, "inbox/packing.md", ID_LESS)
    first_id = text_only.get("inbox/packing.md").id
    (text_only.root / "travel").mkdir()
    os.rename(text_only.root / "inbox/packing.md", text_only.root / "travel/packing.md")
    text_only.commit_external(["inbox/packing.md", "travel/packing.md"])
    moved = text_only.get(first_id)
    assert moved.path == "travel/packing.md" and moved.id == first_id
    assert (text_only.root / "travel/packing.md").read_text(encoding="utf-8") == ID_LESS
    assert [(i.id, i.path) for i in text_only.records()] == [(first_id, "travel/packing.md")]
    # the id memvault writes on its next edit is that same id
    text_only.update(first_id, fields={"importance": 0.6})
    assert text_only.get("travel/packing.md").meta["id"] == first_id


def test_ids_and_edit_times_come_back_after_the_cache_is_deleted(vault_path: Path) -> None:
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    write(service, "inbox/packing.md", ID_LESS)
    first_id = service.get("inbox/packing.md").id
    (vault_path / "travel").mkdir()
    os.rename(vault_path / "inbox/packing.md", vault_path / "travel/packing.md")
    service.commit_external(["inbox/packing.md", "travel/packing.md"])
    updated = service.get(first_id).updated
    service.close()
    shutil.rmtree(vault_path / ".memvault")
    reopened = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        again = reopened.get("travel/packing.md")
        assert (again.id, again.updated) == (first_id, updated)
        assert [(i.id, i.updated) for i in reopened.records()] == [(first_id, updated)]
    finally:
        reopened.close()


def test_the_watcher_carries_an_id_less_file_through_a_move(text_only: MemoryService) -> None:
    write(text_only, "inbox/packing.md", ID_LESS)
    first_id = text_only.get("inbox/packing.md").id
    (text_only.root / "travel").mkdir()
    # the product's quiet period: inotify reports a move across watched folders as a
    # deletion half a second after the creation, and both must land in one commit
    with watching(text_only, debounce=text_only.settings.debounce_seconds) as (service, watcher, _):
        os.rename(service.root / "inbox/packing.md", service.root / "travel/packing.md")
        assert watcher.wait_for(lambda: watcher.commits >= 1)
        assert watcher.wait_for(
            lambda: [(i.id, i.path) for i in service.records()] == [(first_id, "travel/packing.md")]
        )
    assert service.get(first_id).path == "travel/packing.md"


SCENE = "N4KAkARALgngDgUwgLgAQQQDwMYEMA2AlgCYBOuA7hADTgQBuCpAzoQPYB2KqATLZMzYhMytTQ"
DRAWING = f"""---

excalidraw-plugin: parsed
tags: [excalidraw]

---
==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠== You can \
decompress Drawing data with the command palette: 'Decompress current Excalidraw file'. \
For more info check in plugin settings under 'Saving'


# Excalidraw Data

## Text Elements
Login service ^Xk3b9QpA

Session database ^h7TtR2mZ

%%
## Drawing
```compressed-json
{SCENE}
{SCENE[::-1]}
```
%%
"""


def test_an_excalidraw_drawing_is_found_by_its_words_not_its_scene_data(
    text_only: MemoryService,
) -> None:
    """The Excalidraw plugin's drawings are Markdown files: each was titled "Excalidraw
    Data", and its base64 scene and the plugin's banner were searched and quoted."""
    from memvault.context import build_context

    path = write(text_only, "projects/Auth flow.excalidraw.md", DRAWING)
    text_only.sync_index()
    hits = text_only.recall("login service", k=3)
    assert [(h.title, h.snippet) for h in hits] == [("Auth flow", "Login service")]
    for words in (SCENE, "decompress plugin settings", "text elements", "Xk3b9QpA"):
        assert text_only.recall(words, k=3) == []
    context = build_context(text_only, "auth flow login", 1500).text
    assert "Login service" in context and SCENE[:20] not in context
    assert "Switch to EXCALIDRAW" not in context
    assert path.read_text(encoding="utf-8") == DRAWING  # the file is the plugin's, untouched


@pytest.mark.parametrize(
    ("settings", "templates"),
    [
        ({".obsidian/templates.json": '{"folder": "Templates"}'}, "Templates"),
        (
            {".obsidian/plugins/templater-obsidian/data.json": '{"templates_folder": "Meta/T/"}'},
            "Meta/T",
        ),
    ],
)
def test_the_notes_of_obsidian_s_template_folder_are_not_memories(
    tmp_path: Path, settings: dict[str, str], templates: str
) -> None:
    """A daily-note template (`# {{date}}`) was listed, recalled and given as context like
    a memory, wherever the person's Templates or Templater setting put it."""
    root = tmp_path / "vault"
    for rel, text in {
        **settings,
        f"{templates}/Daily.md": "# {{date:YYYY-MM-DD}}\n\n## Tasks\n- [ ] plan the garden\n",
        "Daily/2026-11-30.md": "# 2026-11-30\n\n- [ ] plan the garden beds\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    create_vault(root)
    service = MemoryService.open(root, Settings(embedder="none"))
    try:
        assert [m.path for m in service.list_memories().memories] == ["Daily/2026-11-30.md"]
        assert [h.path for h in service.recall("plan the garden")] == ["Daily/2026-11-30.md"]
    finally:
        service.close()


@pytest.mark.parametrize(
    "setting",
    [
        '{"folder": "/"}',
        '{"folder": ""}',
        '{"folder": 3}',
        "[1, 2]",
        "not json",
        '{"folder": "../x"}',
    ],
)
def test_a_templates_setting_that_names_no_folder_of_the_vault_hides_nothing(
    tmp_path: Path, setting: str
) -> None:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "templates.json").write_text(setting, encoding="utf-8")
    (root / "note.md").write_text("# Note\n\nKept.\n", encoding="utf-8")
    assert Vault(root).is_memory_path("note.md")


def test_a_tag_filter_matches_tags_as_obsidian_does_case_and_hash_aside(
    text_only: MemoryService,
) -> None:
    """Obsidian's #Drinks and #drinks are one tag: a filter on `drinks` found nothing."""
    from memvault.models import Filters

    made = text_only.remember("The user drinks oolong tea.", type="fact", tags=["Drinks"])
    assert made.memory is not None
    for tags in (("drinks",), ("#DRINKS",), ("Drinks",)):
        hits = text_only.recall("oolong tea", filters=Filters(tags=tags))
        listed = text_only.list_memories(Filters(tags=tags)).memories
        assert [h.id for h in hits] == [m.id for m in listed] == [made.memory.id], tags
    assert text_only.recall("oolong tea", filters=Filters(tags=("coffee",))) == []


def test_a_tag_filter_finds_the_tags_nested_in_it_as_obsidian_does(
    text_only: MemoryService,
) -> None:
    """Obsidian's tag search for #咖啡 finds #咖啡/手冲: a filter on the parent found nothing;
    a nested filter is no parent's, and a tag that only starts alike is another tag."""
    from memvault.models import Filters

    nested = text_only.remember("用户每天早上喝手冲咖啡。", type="preference", tags=["咖啡/手冲"])
    alike = text_only.remember("用户在咖啡馆工作。", type="fact", tags=["咖啡馆"])
    assert nested.memory is not None and alike.memory is not None
    for tags, expected in (
        (("咖啡",), [nested.memory.id]),
        (("#咖啡/",), [nested.memory.id]),
        (("咖啡/手冲",), [nested.memory.id]),
        (("咖啡/拿铁",), []),
        (("手冲",), []),
    ):
        listed = text_only.list_memories(Filters(tags=tags)).memories
        assert [m.id for m in listed] == expected, tags
    hits = text_only.recall("咖啡", filters=Filters(tags=("咖啡",)))
    assert [h.id for h in hits] == [nested.memory.id]
