"""As-of reads: what the vault said at a past commit or time, across updates and renames."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memvault import asof
from memvault.cli import cli
from memvault.errors import InvalidInputError, MemoryNotFoundError
from memvault.service import MemoryService

from .helpers import git, tool

Story = tuple[MemoryService, str, str, str]


@pytest.fixture
def story(text_only: MemoryService) -> Story:
    """v1: the dentist is on Elm Street; v2: corrected to Oak Street; then moved by hand."""
    first = text_only.remember("The dentist, Dr. Okafor, is on Elm Street.", type="fact")
    assert first.memory is not None
    v1 = git(text_only.root, "rev-parse", "HEAD").strip()
    text_only.update(first.memory.id, content="The dentist, Dr. Okafor, is on Oak Street.")
    v2 = git(text_only.root, "rev-parse", "HEAD").strip()
    (text_only.root / "people").mkdir(exist_ok=True)
    git(text_only.root, "mv", first.memory.path, "people/dentist.md")
    git(text_only.root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-q", "-m", "mv")
    text_only.sync_index()
    return text_only, first.memory.id, v1, v2


def test_get_as_of_a_revision_gives_that_version_across_an_update_and_a_rename(
    story: Story,
) -> None:
    service, memory_id, v1, v2 = story
    assert "Elm Street" in asof.get(service, memory_id, v1).body
    assert "Oak Street" in asof.get(service, memory_id, v2).body
    then = asof.get(service, memory_id, v1)
    assert then.path.startswith("facts/") and service.get(memory_id).path == "people/dentist.md"
    assert "Elm Street" in asof.get(service, then.path, v1).body  # by the path it had then


def test_as_of_a_time_is_the_last_commit_at_or_before_it(story: Story) -> None:
    service, memory_id, v1, _ = story
    when = git(service.root, "show", "-s", "--format=%cI", v1).strip()
    assert asof.resolve(service, when) in (
        v1,
        git(service.root, "rev-list", "-1", f"--before={when}", "HEAD").strip(),
    )
    with pytest.raises(InvalidInputError, match="no history before"):
        asof.get(service, memory_id, "1999-01-01")


def test_list_and_recall_as_of_answer_from_that_revision(story: Story) -> None:
    service, memory_id, v1, v2 = story
    assert [(i.id, i.path) for i in asof.records(service, v1)] == [
        (memory_id, asof.get(service, memory_id, v1).path)
    ]
    hits = asof.recall(service, "Elm Street dentist", v1)
    assert [h.id for h in hits] == [memory_id] and "Elm" in hits[0].snippet
    assert "full text only" in hits[0].why["as_of"]
    assert asof.recall(service, "Oak", v1) == []  # not written yet then
    assert [h.id for h in asof.recall(service, "Oak", v2)] == [memory_id]


def test_a_memory_that_did_not_exist_yet_and_a_bad_as_of_are_clear_errors(story: Story) -> None:
    service, _, v1, _ = story
    later = service.remember("The user's dog is a beagle named Pepper.", type="fact")
    assert later.memory is not None
    with pytest.raises(MemoryNotFoundError, match="did not exist as of"):
        asof.get(service, later.memory.id, v1)
    with pytest.raises(InvalidInputError, match="neither a time"):
        asof.get(service, later.memory.id, "not-a-rev")


def test_the_tools_answer_as_of_a_commit_over_mcp(story: Story) -> None:
    service, memory_id, v1, _ = story
    then = tool(service, "get_memory", {"id": memory_id, "as_of": v1})
    assert "Elm Street" in then["body"] and then["path"].startswith("facts/")
    now = tool(service, "get_memory", {"id": memory_id})
    assert "Oak Street" in now["body"] and now["path"] == "people/dentist.md"
    listed = tool(service, "list_memories", {"as_of": v1})
    assert [m["id"] for m in listed["memories"]] == [memory_id]
    found = tool(service, "recall", {"query": "Elm Street", "as_of": v1})
    assert [h["id"] for h in found["results"]] == [memory_id]
    assert "full text only" in found["results"][0]["why"]["as_of"]


def test_the_command_line_shows_and_searches_as_of(story: Story) -> None:
    service, memory_id, v1, _ = story
    runner = CliRunner()
    base = ["--vault", str(service.root), "--json"]
    shown = runner.invoke(cli, [*base, "show", memory_id, "--as-of", v1])
    assert shown.exit_code == 0, shown.output
    assert "Elm Street" in json.loads(shown.stdout)["body"]
    found = runner.invoke(cli, [*base, "search", "Elm", "--as-of", v1])
    assert [r["id"] for r in json.loads(found.stdout)] == [memory_id]
    bad = runner.invoke(cli, ["--vault", str(service.root), "show", memory_id, "--as-of", "x"])
    assert bad.exit_code == 1 and "neither a time" in bad.stderr
