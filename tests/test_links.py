"""Tags and links like Obsidian: aliases are searchable, wikilinks resolve by path, file name,
title or alias, and the index answers links, backlinks and related memories (issue 10)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client

from memvault import note
from memvault.doctor import run_checks
from memvault.errors import InvalidInputError
from memvault.history import History
from memvault.ids import new_id
from memvault.links import Graph, add_related, graph_of
from memvault.models import Memory, MemoryInfo
from memvault.service import MemoryService

from .helpers import commit_count, git, run_memvault, tool
from .helpers import in_process as mcp


def write(service: MemoryService, rel: str, title: str, body: str = "", meta: str = "") -> str:
    """A hand-written note (committed and indexed); its id."""
    memory_id = new_id()
    text = f"---\nid: {memory_id}\ntype: note\n{meta}---\n# {title}\n\n{body}\n"
    path = service.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    service.commit_external([rel])
    service.sync_index([rel])
    return memory_id


def tool_error(service: MemoryService, name: str, args: dict[str, Any]) -> str:
    async def body(client: Client) -> str:
        result = await client.call_tool(name, args)
        assert result.is_error
        return str(result.content[0].text)  # type: ignore[union-attr]

    text: str = mcp(service, body)
    return text


def info(path: str, title: str = "", links: tuple[str, ...] = ()) -> MemoryInfo:
    record = MemoryInfo(path, path, title or path, "note", "active", (), (), None, None, 0.5, 0.8)
    return replace(record, links=links)


@pytest.fixture
def bob(text_only: MemoryService) -> str:
    meta = "aliases: [Bobby, Rob]\n"
    return write(text_only, "people/bob.md", "Bob Lee", "Works on the billing service.", meta)


# -- aliases ------------------------------------------------------------------------------------
def test_an_alias_finds_its_note_in_search_and_recall(text_only: MemoryService, bob: str) -> None:
    write(text_only, "facts/other.md", "Lunch", "The team eats at noon.")
    assert [h.doc.id for h in text_only.search("Bobby", mode="bm25")] == [bob]
    assert [h.id for h in text_only.recall("Bobby")] == [bob]


@pytest.mark.parametrize(
    ("meta", "aliases"),
    [
        ({"aliases": ["Bobby", "Rob", "Bobby"]}, ("Bobby", "Rob")),
        ({"aliases": "Bob Lee Jr."}, ("Bob Lee Jr.",)),
        ({"alias": "Bobby"}, ("Bobby",)),
        ({"aliases": None}, ()),
        ({}, ()),
    ],
)
def test_aliases_are_a_yaml_list_or_one_string_under_aliases_or_alias(
    meta: dict[str, Any], aliases: tuple[str, ...]
) -> None:
    assert Memory("x", "x.md", meta, "# X\n", "h").aliases == aliases


# -- resolving ----------------------------------------------------------------------------------
def test_every_link_form_resolves_by_path_name_title_or_alias(
    text_only: MemoryService, bob: str
) -> None:
    style = write(text_only, "preferences/report-style.md", "Reports as tables")
    body = (
        "Ask [[Bobby|our Bob]] about [[report-style#Tables]], also [[Bob Lee]] and "
        "[[people/bob]] and [the file](../people/bob.md) and [[Reports as tables|style]].\n"
        "![[attachments/whiteboard.jpg]] [[nobody here]]"
    )
    note = write(text_only, "facts/meeting.md", "Meeting", body)
    out = tool(text_only, "get_memory", {"id": note})
    assert out["links"] == [
        {"id": bob, "title": "Bob Lee"},
        {"id": style, "title": "Reports as tables"},
        {"id": bob, "title": "Bob Lee"},
        {"id": bob, "title": "Bob Lee"},
        {"id": bob, "title": "Bob Lee"},
        {"id": style, "title": "Reports as tables"},
        {"id": None, "title": "nobody here"},
    ]
    assert tool(text_only, "get_memory", {"id": bob})["backlinks"] == [
        {"id": note, "title": "Meeting"}
    ]


def test_a_file_name_shared_by_several_notes_resolves_to_the_nearest() -> None:
    graph = Graph(
        [info("a/deep/notes.md"), info("b/notes.md"), info("notes-x.md"), info("c/notes.md")]
    )
    assert graph.resolve("Notes", "c/today.md").path == "c/notes.md"  # type: ignore[union-attr]
    assert graph.resolve("notes", "today.md").path == "b/notes.md"  # type: ignore[union-attr]
    assert graph.resolve("deep/notes").path == "a/deep/notes.md"  # type: ignore[union-attr]
    assert graph.resolve("photo.png") is None


def test_links_in_code_comments_and_urls_are_not_links(text_only: MemoryService, bob: str) -> None:
    body = (
        "```\n[[Bob Lee]]\n```\n\nInline `[[Bobby]]` and %%[[Rob]]%% and "
        "<!-- [[bob]] --> and [web](https://example.com/bob.md)"
    )
    note = write(text_only, "facts/code.md", "Code", body)
    out = tool(text_only, "get_memory", {"id": note})
    assert out["links"] == []
    assert tool(text_only, "get_memory", {"id": bob})["backlinks"] == []


# -- related ------------------------------------------------------------------------------------
def test_related_follows_links_and_backlinks_to_depth_one_and_two(
    text_only: MemoryService,
) -> None:
    c = write(text_only, "facts/c.md", "Gamma")
    b = write(text_only, "facts/b.md", "Beta", "Depends on [[Gamma]].")
    a = write(text_only, "facts/a.md", "Alpha", "See [[b]].")
    d = write(text_only, "facts/d.md", "Delta", "Builds on [[Alpha]].")

    def related(depth: int) -> list[tuple[str, str, int]]:
        out = tool(text_only, "related", {"id": a, "depth": depth})["related"]
        return [(r["id"], r["relation"], r["depth"]) for r in out]

    assert related(1) == [(b, "out", 1), (d, "in", 1)]
    assert related(2) == [(b, "out", 1), (d, "in", 1), (c, "out", 2)]
    first = tool(text_only, "related", {"id": a})["related"][0]
    assert first == {"id": b, "title": "Beta", "path": "facts/b.md", "relation": "out", "depth": 1}
    assert "depth must be between 1 and 3" in tool_error(
        text_only, "related", {"id": a, "depth": 4}
    )


def test_recall_says_which_results_link_to_each_other(text_only: MemoryService) -> None:
    tea = write(text_only, "facts/tea.md", "Green tea", "The user drinks green tea daily.")
    cup = write(text_only, "facts/cup.md", "Tea cup", "The user's tea cup is blue. [[Green tea]]")
    results = tool(text_only, "recall", {"query": "tea"})["results"]
    by_id = {r["id"]: r for r in results}
    assert by_id[cup]["links"] == [tea]
    assert "links" not in by_id[tea]  # only when there are some


# -- writing links ------------------------------------------------------------------------------
def test_remember_and_update_write_the_links_as_wikilinks(
    text_only: MemoryService, bob: str
) -> None:
    style = write(text_only, "preferences/report-style.md", "Reports as tables")
    args = {"content": "Send Bob the weekly report.", "links": [bob, "Reports as tables"]}
    made = tool(text_only, "remember", args)
    text = (text_only.root / made["path"]).read_text(encoding="utf-8")
    assert text.rstrip().endswith("Related: [[bob|Bob Lee]], [[report-style|Reports as tables]]")
    assert {x["id"] for x in tool(text_only, "get_memory", {"id": made["id"]})["links"]} == {
        bob,
        style,
    }
    later = write(text_only, "facts/later.md", "Later")
    out = tool(text_only, "update_memory", {"id": made["id"], "links": ["Later", "Bobby"]})
    text = (text_only.root / out["path"]).read_text(encoding="utf-8")
    assert text.rstrip().endswith(
        "Related: [[bob|Bob Lee]], [[report-style|Reports as tables]], [[later]]"
    )
    assert "Send Bob the weekly report." in text
    assert tool(text_only, "get_memory", {"id": later})["backlinks"][0]["id"] == made["id"]


def test_a_link_to_an_unknown_memory_is_refused_and_writes_nothing(
    text_only: MemoryService, bob: str
) -> None:
    before = commit_count(text_only.root)
    tree = git(text_only.root, "status", "--porcelain", "--untracked-files=all")
    files = sorted(p for p in text_only.root.rglob("*.md") if ".git" not in p.parts)
    text = tool_error(
        text_only, "remember", {"content": "Call Alice on Monday.", "links": ["Alice", bob, "Zed"]}
    )
    assert "invalid_input" in text and "'Alice', 'Zed'" in text and bob not in text
    text = tool_error(text_only, "update_memory", {"id": bob, "links": ["Alice"]})
    assert "'Alice'" in text
    assert commit_count(text_only.root) == before
    assert git(text_only.root, "status", "--porcelain", "--untracked-files=all") == tree
    assert sorted(p for p in text_only.root.rglob("*.md") if ".git" not in p.parts) == files
    assert "Related" not in (text_only.root / "people/bob.md").read_text(encoding="utf-8")


def test_a_related_line_grows_without_repeats() -> None:
    assert add_related("# T\n\nText.", ["[[a]]"]) == "# T\n\nText.\n\nRelated: [[a]]"
    grown = add_related("# T\n\nText.\n\nRelated: [[a]]\n", ["[[a]]", "[[b]]"])
    assert grown == "# T\n\nText.\n\nRelated: [[a]], [[b]]"


def test_a_name_shared_by_two_files_is_written_as_a_path() -> None:
    graph = Graph([info("a/notes.md", "Notes"), info("b/notes.md", "B notes")])
    assert graph.wikilinks(["b/notes"]) == ["[[b/notes|B notes]]"]
    with pytest.raises(InvalidInputError, match="'nope'"):
        graph.wikilinks(["nope"])


# -- renames and broken links -------------------------------------------------------------------
def test_renaming_a_linked_note_keeps_title_and_alias_links_and_breaks_the_file_name_link(
    text_only: MemoryService, bob: str
) -> None:
    note = write(text_only, "facts/team.md", "Team", "[[Bob Lee]] and [[Bobby]] and [[bob]].")

    def links() -> list[Any]:
        return [x["id"] for x in tool(text_only, "get_memory", {"id": note})["links"]]

    def broken() -> list[tuple[str, str]]:
        found = run_checks(text_only.vault, History(text_only.root), "none")
        return [(p.path, p.message) for p in found if p.kind == "broken_link"]

    assert links() == [bob, bob, bob] and broken() == []
    git(text_only.root, "mv", "people/bob.md", "people/robert.md")
    git(text_only.root, "commit", "-qm", "rename")
    text_only.sync_index()
    assert links() == [bob, bob, None]
    [(path, message)] = broken()
    assert path == "facts/team.md" and "[[bob]]" in message and "facts/team.md" in message
    backlinks = tool(text_only, "get_memory", {"id": bob})["backlinks"]
    assert backlinks == [{"id": note, "title": "Team"}]


def test_attachments_are_no_memory_links_and_never_broken(text_only: MemoryService) -> None:
    note = write(text_only, "facts/board.md", "Board", "![[whiteboard.jpg]] [plan](files/plan.pdf)")
    assert tool(text_only, "get_memory", {"id": note})["links"] == []
    problems = run_checks(text_only.vault, History(text_only.root), "none")
    assert not [p for p in problems if p.kind == "broken_link"]


def test_memvault_links_shows_related_memories_and_broken_links(
    text_only: MemoryService, bob: str
) -> None:
    note = write(text_only, "facts/team.md", "Team", "[[Bobby]] and [[Nobody]].")
    vault = str(text_only.root)
    human = run_memvault("--vault", vault, "links", note, env={"MEMVAULT_EMBEDDER": "none"})
    assert human.returncode == 0, human.stderr
    assert "-> Bob Lee  [people/bob.md]" in human.stdout
    assert "[[Nobody]]" in human.stdout and "broken" in human.stdout
    out = run_memvault("--vault", vault, "links", bob, "--json", env={"MEMVAULT_EMBEDDER": "none"})
    data = json.loads(out.stdout)
    assert [(r["id"], r["relation"], r["depth"]) for r in data["related"]] == [(note, "in", 1)]
    assert data["broken"] == []


def test_a_doctor_finding_for_a_broken_link_names_the_file_and_the_target(
    text_only: MemoryService,
) -> None:
    write(text_only, "facts/team.md", "Team", "Ask [[Nobody]].")
    out = run_memvault(
        "--vault", str(text_only.root), "doctor", "--json", env={"MEMVAULT_EMBEDDER": "none"}
    )
    findings = [p for p in json.loads(out.stdout)["problems"] if p["kind"] == "broken_link"]
    assert [(p["path"], "[[Nobody]]" in p["message"]) for p in findings] == [
        ("facts/team.md", True)
    ]


def test_a_memory_whose_expiry_passed_is_still_a_link_target_both_ways(
    text_only: MemoryService,
) -> None:
    """Lapsed is not gone: a link to it resolves as a link to an archived one does, from
    either end, and a new link to it is accepted."""
    hotel = text_only.remember(
        "Berlin hotel: the Adler, near the station.",
        type="fact",
        title="Berlin hotel",
        dates={"expires": "2026-11-15"},
    )
    assert hotel.memory is not None
    plan = text_only.remember(
        "Plan for the Berlin trip in spring.", type="note", links=["Berlin hotel"]
    )
    assert plan.memory is not None
    graph = graph_of(text_only.records)
    assert [m.id for m in graph.links_of(plan.memory.id)] == [hotel.memory.id]
    assert [m.id for m in graph.backlinks(hotel.memory.id)] == [plan.memory.id]


@pytest.mark.parametrize(
    ("written", "target", "heading"),
    [
        ("[plan](<Trip plan.md>)", "Trip plan.md", None),
        ('[plan](<notes/Trip plan.md#Day 2> "the plan")', "notes/Trip plan.md", "Day 2"),
        ("[draft](Trip%20plan%20(draft).md)", "Trip plan (draft).md", None),
        ("[lang](Languages/C%23.md#Pointers)", "Languages/C#.md", "Pointers"),
    ],
)
def test_markdown_link_targets_are_read_as_obsidian_writes_them(
    written: str, target: str, heading: str | None
) -> None:
    """Obsidian writes a target with spaces in angle brackets or percent-encoded, and a
    name may hold brackets; an encoded ``%23`` is part of the name, not a heading."""
    (link,) = note.links(f"See {written} today.\n")
    assert (link.target, link.heading, link.wiki) == (target, heading, False)


def test_wikilinks_in_tags_and_aliases_are_names_not_links(
    text_only: MemoryService, bob: str
) -> None:
    """Obsidian reads ``aliases`` and ``tags`` (any spelling) as names, never as links: no
    backlink from them, and no broken link reported by doctor."""
    path = text_only.vault.root / "notes" / "book.md"
    path.parent.mkdir()
    path.write_text(
        '---\naliases: ["[[Bob Lee]]", "[[Gone Note]]"]\nTag: "[[Nowhere]]"\n'
        'cssclasses: ["[[wide]]"]\nauthor: "[[Bob Lee]]"\n---\n# The Left Hand\nA novel.\n',
        encoding="utf-8",
    )
    text_only.sync_index()
    book = text_only.vault.read("notes/book.md")
    assert book.links == ("Bob Lee",)
    assert tool(text_only, "get_memory", {"id": book.id})["links"] == [
        {"id": bob, "title": "Bob Lee"}
    ]
    problems = run_checks(text_only.vault, History(text_only.root), "none")
    assert not [p for p in problems if p.kind == "broken_link"]


def test_wikilinks_in_properties_are_links_as_in_obsidian(
    text_only: MemoryService, bob: str
) -> None:
    """Obsidian links a property's ``"[[...]]"`` (a text or a list item): backlinks and
    related follow it; a broken one is reported like a body's."""
    path = text_only.vault.root / "notes" / "book.md"
    path.parent.mkdir()
    path.write_text(
        '---\nauthor: "[[Bob Lee]]"\nreviewers:\n  - "[[Nobody Here]]"\n  - Ann\n'
        "title: The Left Hand\n---\nA novel about Gethen.\n",
        encoding="utf-8",
    )
    text_only.sync_index()
    book = text_only.vault.read("notes/book.md").id
    assert tool(text_only, "get_memory", {"id": book})["links"] == [
        {"id": bob, "title": "Bob Lee"},
        {"id": None, "title": "Nobody Here"},
    ]
    assert {"id": book, "title": "The Left Hand"} in tool(text_only, "get_memory", {"id": bob})[
        "backlinks"
    ]
