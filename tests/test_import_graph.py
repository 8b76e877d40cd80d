"""Importing the official MCP memory server's knowledge graph (``memory.jsonl``), the way
its users move to memvault: one memory per entity, its observations kept, its relations
wikilinks that resolve, repeatable like every import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memvault.errors import InvalidInputError
from memvault.links import graph_of
from memvault.service import MemoryService

from .helpers import commit_count, git

GRAPH: list[dict[str, Any]] = [
    {
        "type": "entity",
        "name": "John_Smith",
        "entityType": "person",
        "observations": ["Speaks fluent Spanish", "Prefers morning meetings"],
    },
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
    {"type": "entity", "name": "Atlas: v2/beta", "entityType": "project", "observations": ["Q3"]},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "John_Smith", "to": "Atlas: v2/beta", "relationType": "leads"},
    {"type": "relation", "from": "Ghost", "to": "Anthropic", "relationType": "haunts"},
    {"type": "entity", "name": "王小明", "entityType": "person", "observations": ["喜欢喝绿茶"]},
]


def write_graph(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def related_titles(service: MemoryService, path: str) -> set[str]:
    memory = service.get(path)
    graph = graph_of(service.records, memory.info())
    return {r.memory.title for r in graph.related(memory.id)}


def test_each_entity_becomes_a_memory_with_its_observations_and_linked_relations(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = write_graph(tmp_path / "memory.jsonl", GRAPH)
    report = text_only.import_path(source)
    assert report.imported == 4
    assert [(s.path, s.reason) for s in report.skipped] == [("memory.jsonl:6", "unknown entity")]
    john = text_only.get("people/John_Smith.md")
    assert john.title == "John_Smith" and john.type == "fact"
    assert john.meta["entity_type"] == "person" and john.tags == ("person",)
    assert "- Speaks fluent Spanish\n- Prefers morning meetings" in john.body
    # a name Obsidian cannot use as a file name gets one it can, and keeps its name as alias
    project = text_only.get("entities/Atlas v2 beta.md")
    assert project.title == "Atlas: v2/beta" and project.meta["aliases"] == ["Atlas: v2/beta"]
    assert "- leads [[entities/Atlas v2 beta|Atlas: v2/beta]]" in john.body
    assert related_titles(text_only, john.path) == {"Anthropic", "Atlas: v2/beta"}
    assert related_titles(text_only, "entities/Anthropic.md") == {"John_Smith"}
    assert text_only.get("people/王小明.md").body.endswith("- 喜欢喝绿茶\n")
    assert text_only.recall("who speaks Spanish")[0].id == john.id


def test_a_graph_imported_again_changes_nothing_and_a_new_observation_updates_the_entity(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = write_graph(tmp_path / "memory.jsonl", GRAPH)
    text_only.import_path(source)
    john = text_only.get("people/John_Smith.md")
    commits = commit_count(text_only.vault.root)
    again = text_only.import_path(source)
    assert (again.imported, again.updated, again.commit) == (0, 0, None)
    assert commit_count(text_only.vault.root) == commits
    grown = [dict(r) for r in GRAPH]
    grown[0]["observations"] = [*GRAPH[0]["observations"], "Moved to Lisbon"]
    report = text_only.import_path(write_graph(source, grown))
    assert (report.imported, report.updated) == (0, 1)
    after = text_only.get("people/John_Smith.md")
    assert after.id == john.id and "- Moved to Lisbon" in after.body


def test_names_one_file_name_apart_stay_two_memories(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = write_graph(
        tmp_path / "memory.jsonl",
        [
            {"type": "entity", "name": "a/b", "entityType": "topic", "observations": ["one"]},
            {"type": "entity", "name": "A:B", "entityType": "topic", "observations": ["two"]},
            {"type": "relation", "from": "a/b", "to": "A:B", "relationType": "precedes"},
        ],
    )
    assert text_only.import_path(source).imported == 2
    first, second = text_only.get("entities/a b.md"), text_only.get("entities/A B 2.md")
    assert (first.title, second.title) == ("a/b", "A:B")
    assert related_titles(text_only, first.path) == {"A:B"}


def test_memory_lines_and_graph_lines_of_one_file_are_both_imported(
    text_only: MemoryService, tmp_path: Path
) -> None:
    records = [{"content": "The user's dog is called Pepper.", "type": "fact"}, *GRAPH[:2]]
    report = text_only.import_path(write_graph(tmp_path / "mixed.jsonl", records))
    assert report.imported == 3
    assert {text_only.get(p).title for p in report.paths} == {
        "The user's dog is called Pepper.",
        "John_Smith",
        "Anthropic",
    }


def test_the_older_memory_json_is_read_as_the_graph_it_is(
    text_only: MemoryService, tmp_path: Path
) -> None:
    report = text_only.import_path(write_graph(tmp_path / "memory.json", GRAPH[:2]))
    assert report.imported == 2


def test_another_json_file_is_refused_without_a_commit(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = tmp_path / "notes.json"
    source.write_text(json.dumps([{"content": "an array, not lines"}], indent=2))
    commits = commit_count(text_only.vault.root)
    with pytest.raises(InvalidInputError, match=r"memory\.json"):
        text_only.import_path(source)
    assert commit_count(text_only.vault.root) == commits


@pytest.mark.parametrize(
    "line",
    [
        {"type": "entity", "name": "", "entityType": "person"},
        {"type": "entity", "name": "Eve", "entityType": "person", "observations": "not a list"},
        {"type": "relation", "from": "Eve", "to": ["x"], "relationType": "knows"},
    ],
)
def test_a_graph_line_that_cannot_be_read_is_skipped_and_named(
    text_only: MemoryService, tmp_path: Path, line: dict[str, Any]
) -> None:
    report = text_only.import_path(write_graph(tmp_path / "memory.jsonl", [GRAPH[1], line]))
    assert report.imported == 1
    assert [(s.path, s.reason) for s in report.skipped] == [("memory.jsonl:2", "invalid record")]


def test_a_person_s_edit_of_an_imported_entity_survives_the_next_import(
    person_vault: MemoryService, tmp_path: Path
) -> None:
    """A migration runs both servers a while and imports again: the graph's new
    observation came in over the person's own line, which was lost but for git."""
    source = write_graph(tmp_path / "memory.jsonl", GRAPH)
    person_vault.import_path(source)
    john = person_vault.vault.abspath("people/John_Smith.md")
    with john.open("a", encoding="utf-8") as handle:
        handle.write("\nMy own note: John prefers calls after 10am.\n")
    git(person_vault.root, "commit", "-qam", "my note")
    grown = [dict(r) for r in GRAPH]
    grown[2]["observations"] = ["Q3", "Q4"]  # another entity changes too
    grown[0]["observations"] = ["Speaks fluent Spanish", "Prefers phone calls"]
    report = person_vault.import_path(write_graph(source, grown))
    assert report.updated == 2
    text = john.read_text(encoding="utf-8")
    assert "- Prefers phone calls" in text and "My own note: John prefers calls" in text
    assert "- Prefers morning meetings" not in text


def test_an_import_never_overwrites_an_edit_its_source_changed_too(
    person_vault: MemoryService, tmp_path: Path
) -> None:
    source = write_graph(tmp_path / "memory.jsonl", GRAPH)
    person_vault.import_path(source)
    john = person_vault.vault.abspath("people/John_Smith.md")
    mine = john.read_text(encoding="utf-8").replace("fluent Spanish", "some Spanish")
    john.write_text(mine, encoding="utf-8")
    git(person_vault.root, "commit", "-qam", "my correction")
    changed = [dict(r) for r in GRAPH]
    changed[0]["observations"] = ["Speaks fluent Spanish and Portuguese"]
    commits = commit_count(person_vault.root)
    report = person_vault.import_path(write_graph(source, changed))
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("memory.jsonl:6", "unknown entity"),
        ("people/John_Smith.md", "edited since the last import"),
    ]
    assert john.read_text(encoding="utf-8") == mine
    assert commit_count(person_vault.root) == commits


def test_names_are_told_apart_as_written_once_spaces_and_composition_are_set_aside(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """A name with a double space (or composed differently on a Mac) lost its relations
    as 'unknown entity'; a null observation read '- None'."""
    decomposed = "Ame\u0301lie  Poulain"
    source = tmp_path / "memory.jsonl"
    lines = [
        {"type": "entity", "name": decomposed, "entityType": "person", "observations": [None]},
        {"type": "entity", "name": "Café", "entityType": "place", "observations": [{"x": 1}]},
        {"type": "relation", "from": "Amélie Poulain", "to": "Café", "relationType": "runs"},
    ]
    source.write_bytes(b"\xef\xbb\xbf" + write_graph(source, lines).read_bytes())  # a BOM
    report = text_only.import_path(source)
    assert (report.imported, report.skipped) == (2, ())
    amelie = text_only.get("people/Amélie Poulain.md")
    assert amelie.meta["aliases"] == ["Amélie Poulain"] and "None" not in amelie.body
    assert related_titles(text_only, amelie.path) == {"Café"}
    assert '- {"x": 1}' in text_only.get("entities/Café.md").body


def test_a_very_long_name_gets_a_file_name_a_disk_can_hold_and_keeps_its_links(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """100 Chinese characters are 300 bytes: over the 255 a file name may hold."""
    long = "长" * 300
    lines = [
        {"type": "entity", "name": long, "entityType": "project", "observations": ["大项目"]},
        {"type": "entity", "name": "Ana", "entityType": "person", "observations": ["PM"]},
        {"type": "relation", "from": "Ana", "to": long, "relationType": "leads"},
    ]
    report = text_only.import_path(write_graph(tmp_path / "memory.jsonl", lines))
    assert (report.imported, report.skipped) == (2, ())
    (path,) = [p for p in report.paths if p.startswith("entities/")]
    assert len(path.rsplit("/", 1)[1].encode("utf-8")) <= 255
    assert text_only.get(path).meta["aliases"] == [long]
    assert related_titles(text_only, "people/Ana.md") == {long[:200]}


def test_a_relation_reaches_the_entity_put_beside_a_persons_note_of_its_name(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """The person has a note where an entity would go: the entity is imported beside it
    (``-2``), and the relations reach the imported entity, not the person's note."""
    person = text_only.vault.root / "entities" / "Anthropic.md"
    person.parent.mkdir(parents=True, exist_ok=True)
    person.write_text("# Anthropic\n\nMy own notes on the company.\n")
    git(text_only.vault.root, "add", "-A")
    git(text_only.vault.root, "commit", "-qm", "mine")
    mine = person.read_bytes()
    source = write_graph(tmp_path / "memory.jsonl", GRAPH)
    text_only.import_path(source)
    assert person.read_bytes() == mine
    entity = text_only.get("entities/Anthropic-2.md")
    assert entity.title == "Anthropic"
    john = text_only.get("people/John_Smith.md")
    assert "- works_at [[entities/Anthropic-2|Anthropic]]" in john.body
    assert related_titles(text_only, john.path) == {"Anthropic", "Atlas: v2/beta"}
    assert related_titles(text_only, entity.path) == {"John_Smith"}
    # again: the same files, nothing changed
    commits = commit_count(text_only.vault.root)
    again = text_only.import_path(source)
    assert again.imported == 0 and commit_count(text_only.vault.root) == commits
    assert "[[entities/Anthropic-2|Anthropic]]" in text_only.get(john.path).body
