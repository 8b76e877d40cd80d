"""Links, context and the profile over notes people wrote in Obsidian (found by hand in a
hostile vault): the link forms Obsidian writes, and what an agent is given as context."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from mcp import Client

from memvault import profile
from memvault.doctor import run_checks
from memvault.ids import new_id
from memvault.models import Problem
from memvault.service import MemoryService

from .helpers import in_process, tool


def write(service: MemoryService, rel: str, body: str, meta: str = "") -> str:
    """A note written by hand (committed and indexed); its id."""
    memory_id = new_id()
    path = service.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\n{meta}---\n{body}", encoding="utf-8")
    service.commit_external([rel])
    service.sync_index([rel])
    return memory_id


def resource_lines(service: MemoryService, uri: str) -> list[str]:
    """The text of a resource read over a real MCP session, as lines."""

    async def body(client: Client) -> str:
        result = await client.read_resource(uri)
        return str(result.contents[0].text)  # type: ignore[union-attr]

    text: str = in_process(service, body)
    return text.split("\n")


# -- links --------------------------------------------------------------------------------------
def broken_links(service: MemoryService) -> list[Problem]:
    """What doctor reports as broken links."""
    return [
        p for p in run_checks(service.vault, service.history, "none") if p.kind == "broken_link"
    ]


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
    broken = broken_links(text_only)
    assert [p.path for p in broken] == ["journal/Incident.md"]
    assert "Nowhere" in broken[0].message


def test_wikilinks_in_obsidians_relative_path_format_reach_the_note_they_name(
    text_only: MemoryService,
) -> None:
    near = write(text_only, "work/Dup.md", "# Dup at work\n")
    write(text_only, "Dup.md", "# Dup at the root\n")
    up = write(text_only, "Plan.md", "# Plan\n")
    # "New link format: Relative path to file" writes the way from the linking note
    body = "# Src\n\n[[../Dup]] [[../../Plan|the plan]] ![[../dup#Top]] [[../../../Above]]\n"
    note = write(text_only, "work/notes/Src.md", body)
    out = tool(text_only, "get_memory", {"id": note})
    assert out["links"] == [
        {"id": near, "title": "Dup at work"},
        {"id": up, "title": "Plan"},
        {"id": near, "title": "Dup at work"},
        {"id": None, "title": "../../../Above"},
    ]


def test_an_imported_relation_reaches_the_entity_not_a_persons_note_of_the_same_name(
    text_only: MemoryService, tmp_path: Path
) -> None:
    deck = write(text_only, "Projects/Anthropic.md", "# Anthropic pitch deck\n\nMy notes.\n")
    lines = [
        {"type": "entity", "name": "Anthropic", "entityType": "organization"},
        {"type": "entity", "name": "John Smith", "entityType": "person"},
        {"type": "relation", "from": "John Smith", "to": "Anthropic", "relationType": "works_at"},
    ]
    source = tmp_path / "memory.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert text_only.import_path(source).imported == 2
    john = text_only.get("people/John Smith.md")
    assert "- works_at [[entities/Anthropic|Anthropic]]" in john.body  # so in Obsidian too
    entity = text_only.get("entities/Anthropic.md").id
    assert tool(text_only, "get_memory", {"id": john.id})["links"] == [
        {"id": entity, "title": "Anthropic"}
    ]
    assert tool(text_only, "get_memory", {"id": deck})["backlinks"] == []


def test_an_imported_relation_type_adds_no_link_and_no_tag_the_graph_did_not_have(
    text_only: MemoryService, tmp_path: Path
) -> None:
    lines = [
        {"type": "entity", "name": "Ana", "entityType": "person"},
        {"type": "entity", "name": "Atlas", "entityType": "project"},
        {"type": "relation", "from": "Ana", "to": "Atlas", "relationType": "[[Evil Corp]] owns"},
        {"type": "relation", "from": "Ana", "to": "Atlas", "relationType": "#urgent review"},
    ]
    source = tmp_path / "memory.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    text_only.import_path(source)
    ana = text_only.get("people/Ana.md")
    assert "- Evil Corp owns [[entities/Atlas|Atlas]]" in ana.body
    assert "- \\#urgent review [[entities/Atlas|Atlas]]" in ana.body
    assert ana.tags == ("person",)
    atlas = text_only.get("entities/Atlas.md").id
    assert tool(text_only, "get_memory", {"id": ana.id})["links"] == [
        {"id": atlas, "title": "Atlas"}
    ]


# -- context ------------------------------------------------------------------------------------
def test_context_gives_the_prose_of_a_note_without_the_queries_obsidian_renders(
    text_only: MemoryService,
) -> None:
    board = (
        "# Kafka board\n\nOpen Kafka work, newest first.\n\n"
        '```dataview\nTABLE owner FROM #kafka WHERE status != "done"\n```\n\n'
        "~~~tasks\nnot done\ntag includes #kafka\n~~~\n\n"
        "```query\ntag:#kafka\n```\n\n"
        "```dataviewjs\ndv.table(['a'], dv.pages('#kafka'))\n```\n\n"
        "Kafka retention is 7 days.\n\n"
        "```python\nprint('kafka')  # code a person wrote stays\n```\n"
    )
    board_id = write(text_only, "projects/Kafka board.md", board)
    only = write(text_only, "projects/Kafka tasks.md", "```tasks\nnot done\n#kafka\n```\n")
    text = tool(text_only, "build_context", {"topic": "kafka"})["text"]
    line = next(ln for ln in text.split("\n") if board_id in ln)
    assert line == (
        "- Kafka board: Open Kafka work, newest first. Kafka retention is 7 days. "
        f"```python print('kafka') # code a person wrote stays ``` [{board_id}]"
    )
    assert f"- Kafka tasks [{only}]" in text.split("\n")
    for query in ("TABLE owner", "tag includes", "tag:#kafka", "dv.table", "not done"):
        assert query not in text


def test_a_persons_own_note_in_the_profile_folder_is_in_the_context_a_broken_field_is_not(
    text_only: MemoryService,
) -> None:
    about = write(text_only, "profile/About me.md", "# About me\n\nI am allergic to shellfish.\n")
    # a field's file whose value the schema refuses: unset, and named, never given as text
    write(text_only, "profile/units.md", "# Units\n\nshellfish units\n", "value: shellfish\n")
    # and one renamed by hand: its value is stale, not a memory of its own
    stale = "field: diet\nvalue: [shellfish stew]\n"
    write(text_only, "profile/My diet.md", "# Diet\n\nshellfish stew\n", stale)
    context = tool(text_only, "build_context", {"topic": "shellfish"})
    assert f"- About me: I am allergic to shellfish. [{about}]" in context["text"].split("\n")
    assert "shellfish units" not in context["text"] and "stew" not in context["text"]
    assert "units" in context["text"]  # the header names it: a file to fix by hand


def test_a_hub_note_linked_from_every_daily_note_brings_a_few_neighbours_not_all(
    text_only: MemoryService,
) -> None:
    hub = write(text_only, "Kafka.md", "# Kafka\n\nOur event bus; see [[Retention policy]].\n")
    policy = write(text_only, "Retention policy.md", "# Retention policy\n\nSeven days.\n")
    days = [
        write(text_only, f"daily/{n:02d}.md", f"# Day {n}\n\nLunch, then [[Kafka]].\n")
        for n in range(30)
    ]
    out = tool(text_only, "build_context", {"topic": "event bus", "budget_tokens": 32000})
    (memories,) = [s for s in out["sections"] if s["name"] == "memories"]
    assert memories["left_out"] == []
    ids = memories["ids"]
    # what the hub links to first, then 9 of the notes linking to it (the newest)
    assert ids[:2] == [hub, policy] and len(ids) == 11 and set(ids[2:]) < set(days)


# -- the profile --------------------------------------------------------------------------------
def test_setting_a_field_over_a_persons_note_at_its_path_keeps_their_heading_and_text(
    text_only: MemoryService,
) -> None:
    write(text_only, "profile/location.md", "# Where I live\n\nLisbon, near the river.\n")
    for city in ("Porto", "Faro"):
        out = tool(text_only, "set_profile", {"field": "location", "value": city})
        assert out["action"] == "updated"
        body = text_only.get("profile/location.md").body
        assert body == f"# Location\n\n{city}\n\n# Where I live\n\nLisbon, near the river.\n"
    assert tool(text_only, "get_profile", {})["fields"][0]["value"] == "Faro"


def test_a_link_reaches_a_file_named_in_decomposed_unicode_and_a_root_path_the_root_note(
    text_only: MemoryService,
) -> None:
    # a Mac (or a sync from one) writes "é" as "e" and a combining accent in file names
    cafe = write(text_only, unicodedata.normalize("NFD", "people/Café Zoë.md"), "# Owner\n")
    root = write(text_only, "Dup.md", "# Dup at the root\n")
    write(text_only, "x/Dup.md", "# Dup in x\n")
    note = write(text_only, "x/Src.md", "# Src\n\n[[Café Zoë]] and [[/Dup]]\n")
    assert tool(text_only, "get_memory", {"id": note})["links"] == [
        {"id": cafe, "title": "Owner"},
        {"id": root, "title": "Dup at the root"},
    ]


def test_an_allergy_typed_into_the_fields_list_by_hand_reaches_the_agent_as_a_question(
    text_only: MemoryService,
) -> None:
    tool(text_only, "set_profile", {"field": "health.allergies", "value": "penicillin, peanuts"})
    path = text_only.root / "profile/health.allergies.md"
    # in Obsidian the person sees the list in the note's text and adds to it there
    path.write_text(path.read_text().replace("- peanuts\n", "- peanuts\n- shellfish\n"))
    text_only.commit_external(["profile/health.allergies.md"])
    text = tool(text_only, "build_context", {"topic": "dinner"})["text"]
    assert "penicillin, peanuts (its file also lists shellfish: ask the user)" in text
    (problem,) = tool(text_only, "get_profile", {})["problems"]
    assert "lists shellfish in its text but not in its `value:`" in problem
    doctor = run_checks(text_only.vault, text_only.history, "none")
    assert [p.path for p in doctor if p.kind == "profile"] == ["profile/health.allergies.md"]
    every = "penicillin, peanuts, shellfish"  # set again with it: once in the text, no problem
    tool(text_only, "set_profile", {"field": "health.allergies", "value": every})
    body = text_only.get("profile/health.allergies.md").body
    assert body == "# Allergies\n\n- penicillin\n- peanuts\n- shellfish\n"
    assert tool(text_only, "get_profile", {})["problems"] == []


# -- views --------------------------------------------------------------------------------------
def test_the_index_keeps_its_80_character_lines_for_a_note_with_a_very_long_type(
    text_only: MemoryService,
) -> None:
    meta = f"type: {'meeting-notes-' * 8}x\n"
    note = write(text_only, "notes/Standup.md", "# Standup of the platform team\n", meta)
    (line,) = [ln for ln in resource_lines(text_only, "memory://index") if note in ln]
    assert len(line) <= 80 and "Standup" in line


def test_an_allergy_typed_under_none_by_hand_is_named_too(text_only: MemoryService) -> None:
    tool(text_only, "set_profile", {"field": "health.allergies", "value": []})
    path = text_only.root / "profile/health.allergies.md"
    path.write_text(path.read_text().replace("(none)\n", "(none)\n- shellfish\n"))
    text_only.commit_external(["profile/health.allergies.md"])
    text = tool(text_only, "build_context", {"topic": "dinner"})["text"]
    assert "(none) (its file also lists shellfish: ask the user)" in text


def test_of_notes_sharing_a_name_a_link_reaches_the_shortest_path_written_as_obsidian_does(
    text_only: MemoryService,
) -> None:
    short = write(text_only, "a/b/Note.md", "# Short path, deeper\n")
    write(text_only, "zzzz/Note.md", "# Longer path, shallower\n")
    beside = write(text_only, "src/Note.md", "# Beside the source\n")
    note = write(text_only, "other/Src.md", "# Src\n\n[[Note]]\n")
    near = write(text_only, "src/Near.md", "# Near\n\n[[Note]]\n")
    assert tool(text_only, "get_memory", {"id": note})["links"][0]["id"] == short
    assert tool(text_only, "get_memory", {"id": near})["links"][0]["id"] == beside


def test_an_items_indented_details_and_a_later_list_of_notes_are_not_items_of_the_field() -> None:
    spec = profile.FieldSpec("health.allergies", "list", "allergies")
    have = ["penicillin", "peanuts"]
    detail = "# Allergies\n\n- penicillin\n  - severe: carry the pen\n- peanuts\n"
    assert profile.unlisted(spec, detail, have) == ()
    assert profile.unlisted(spec, detail + "- latex\n", have) == ("latex",)
    notes = "# Allergies\n\n- penicillin\n- peanuts\n\nAsk about:\n- latex\n"
    assert profile.unlisted(spec, notes, have) == ()


def test_a_wikilink_with_a_folder_reaches_no_note_of_that_name_in_another_folder(
    text_only: MemoryService,
) -> None:
    elsewhere = write(text_only, "other/Missing.md", "# Missing elsewhere\n")
    # Obsidian reads [[sub/Missing]] as that path: a broken link here, not other/Missing
    # (only a Markdown link's path is tried again as written: its shortest form)
    note = write(text_only, "sub/A.md", "# A\n\n[[sub/Missing]] and [md](Missing.md)\n")
    assert tool(text_only, "get_memory", {"id": note})["links"] == [
        {"id": None, "title": "sub/Missing"},
        {"id": elsewhere, "title": "Missing elsewhere"},
    ]
    broken = broken_links(text_only)
    assert [p.path for p in broken] == ["sub/A.md"]
    assert "[[sub/Missing]]" in broken[0].message


def test_an_allergys_details_typed_by_hand_stay_under_it_when_the_field_is_set_again(
    text_only: MemoryService,
) -> None:
    tool(text_only, "set_profile", {"field": "health.allergies", "value": ["peanuts"]})
    path = text_only.root / "profile/health.allergies.md"
    typed = "- peanuts\n  mild: itchy mouth\n- shellfish\n  anaphylaxis: carries an EpiPen\n"
    path.write_text(path.read_text().replace("- peanuts\n", typed))
    text_only.commit_external(["profile/health.allergies.md"])
    every = ["shellfish", "peanuts", "latex"]
    assert tool(text_only, "set_profile", {"field": "health.allergies", "value": every})
    body = text_only.get("profile/health.allergies.md").body
    assert body == (
        "# Allergies\n\n- shellfish\n  anaphylaxis: carries an EpiPen\n"
        "- peanuts\n  mild: itchy mouth\n- latex\n"
    )
    assert tool(text_only, "get_profile", {})["problems"] == []
    # an item the new list drops goes with its details, not onto another item
    tool(text_only, "set_profile", {"field": "health.allergies", "value": ["latex", "peanuts"]})
    body = text_only.get("profile/health.allergies.md").body
    assert body == "# Allergies\n\n- latex\n- peanuts\n  mild: itchy mouth\n"


def test_a_list_of_notes_below_an_empty_fields_none_is_no_unlisted_item(
    text_only: MemoryService,
) -> None:
    tool(text_only, "set_profile", {"field": "health.allergies", "value": []})
    path = text_only.root / "profile/health.allergies.md"
    notes = "(none)\n\nTo ask the doctor next visit:\n- latex test\n- blood panel\n"
    path.write_text(path.read_text().replace("(none)\n", notes))
    text_only.commit_external(["profile/health.allergies.md"])
    assert tool(text_only, "get_profile", {})["problems"] == []
    assert "ask the user" not in tool(text_only, "build_context", {"topic": "doctor"})["text"]
    doctor = run_checks(text_only.vault, text_only.history, "none")
    assert [p for p in doctor if p.kind == "profile"] == []
    # typed right under "(none)", an item is named, with a way out that works
    path.write_text(path.read_text().replace("(none)\n", "(none)\n- shellfish\n"))
    text_only.commit_external(["profile/health.allergies.md"])
    (problem,) = tool(text_only, "get_profile", {})["problems"]
    assert "lists shellfish in its text but not in its `value:`" in problem
    assert "set the field with them, or remove them from the text" in problem
    assert "set the field again" not in problem


def test_setting_an_empty_field_leaves_the_persons_own_list_and_its_lines_alone(
    text_only: MemoryService,
) -> None:
    """Of an empty field, the body's first list is the person's notes: their indented line
    under "- latex" was moved under the new value's latex item."""
    tool(text_only, "set_profile", {"field": "health.allergies", "value": []})
    path = text_only.root / "profile/health.allergies.md"
    notes = "(none)\n\nTo ask the doctor:\n\n- latex\n  does it matter for gloves?\n"
    path.write_text(path.read_text().replace("(none)\n", notes))
    text_only.commit_external(["profile/health.allergies.md"])
    tool(text_only, "set_profile", {"field": "health.allergies", "value": ["latex"]})
    body = text_only.get("profile/health.allergies.md").body
    assert body.startswith("# Allergies\n\n- latex\n\n")
    assert "To ask the doctor:\n\n- latex\n  does it matter for gloves?" in body
