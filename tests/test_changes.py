"""What changed since: memory_changes, `memvault changes` and memory://changes, over real
git, a real MCP client (with a client name), the real command line and a person's edits."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.types import Implementation

from memvault import changes
from memvault.cli import cli
from memvault.errors import InvalidInputError
from memvault.importing import import_path
from memvault.models import Change
from memvault.server import build_server, note_uri
from memvault.server.notify import changed_uris
from memvault.service import MemoryService

from .helpers import PERSON, call_tool, commit_count, git, in_process, updated_listener, watching
from .helpers import tool as helpers_tool


@pytest.fixture
def vault(person_vault: MemoryService) -> MemoryService:
    return person_vault


def mcp(
    service: MemoryService, body: Callable[[Client], Awaitable[Any]], name: str = "test-host"
) -> Any:
    """``body`` with a real in-process MCP client that introduces itself as ``name``."""
    return in_process(service, body, client_info=Implementation(name=name, version="2.0"))


def tool(service: MemoryService, name: str, args: dict[str, Any]) -> dict[str, Any]:
    host = Implementation(name="test-host", version="2.0")
    return helpers_tool(service, name, args, client_info=host)


def cli_run(vault: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def by_hand(service: MemoryService, rel: str, text: str) -> str:
    """A person writes a file; committed as the watcher commits it."""
    path = service.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    sha = service.commit_external([rel])
    assert sha
    return sha


def ops(feed: tuple[Change, ...]) -> list[tuple[str, str]]:
    return [(c.op, c.path) for c in feed]


def test_a_persons_edit_a_tool_write_and_a_cli_write_each_name_who_made_them(
    vault: MemoryService,
) -> None:
    made = tool(vault, "remember", {"content": "The user drinks green tea.", "type": "fact"})
    path = made["path"]
    text = (vault.root / path).read_text(encoding="utf-8")
    by_hand(vault, path, text.rstrip("\n") + "\nNever coffee.\n")
    code, _, _ = cli_run(vault.root, "add", "The user walks to work on Mondays.", "--type", "fact")
    assert code == 0

    result = tool(vault, "memory_changes", {})
    found = [(c["op"], c["who"], c["name"], c["id"]) for c in result["changes"]]
    cli_id = result["changes"][0]["id"]
    assert found == [
        ("created", "memvault", "cli", cli_id),
        ("edited", "person", PERSON, made["id"]),
        ("created", "memvault", "test-host/2.0", made["id"]),
    ]
    assert result["changes"][1]["path"] == path and result["changes"][1]["diff"] == "+1 -0 lines"
    assert result["cursor"] == git(vault.root, "rev-parse", "HEAD").strip()
    assert result["more"] is False
    head = result["changes"][0]["commit"]
    assert git(vault.root, "rev-parse", "HEAD").startswith(head)


def test_each_operation_is_named_with_the_memorys_id_and_the_old_path_of_a_move(
    vault: MemoryService,
) -> None:
    old = vault.remember("The office is in Porto.", type="fact").memory
    assert old is not None
    start = vault.history.head()
    assert start
    vault.update(old.id, fields={"importance": 0.9})
    moved_to = "facts/office location.md"
    os.rename(vault.root / old.path, vault.root / moved_to)
    vault.commit_external([old.path, moved_to])
    new = vault.remember("The office is in Lisbon now.", type="fact", supersedes=[old.id]).memory
    assert new is not None
    vault.forget(old.id)  # archive: moved to archive/
    vault.forget(new.id, mode="delete")
    vault.revert(new.path, "HEAD~1")

    feed = changes.feed(vault, since=start).changes
    archived = f"archive/{moved_to}"
    assert ops(feed) == [
        ("reverted", new.path),
        ("deleted", new.path),
        ("archived", archived),
        ("superseded", moved_to),  # one commit with the new memory, files in path order
        ("created", new.path),
        ("moved", moved_to),
        ("edited", old.path),
    ]
    assert [c.id for c in feed] == [new.id, new.id, old.id, old.id, new.id, old.id, old.id]
    assert [c.old_path for c in feed if c.old_path] == [moved_to, old.path]
    assert "fields: importance" in feed[-1].diff and "fields: status" in feed[2].diff
    assert feed[-2].who == "person" and feed[-2].name == PERSON
    assert {c.who for c in feed if c is not feed[-2]} == {"memvault"}


def test_the_cursor_returns_only_newer_changes_and_nothing_when_nothing_changed(
    vault: MemoryService,
) -> None:
    first = vault.remember("The user's dog is called Bruno.", type="fact").memory
    assert first is not None
    cursor = changes.feed(vault).cursor
    assert cursor is not None
    later = by_hand(vault, "facts/by hand ü.md", "# Bike\n\nThe user cycles on Sundays.\n")

    result = tool(vault, "memory_changes", {"since": cursor})
    assert [(c["op"], c["path"], c["who"]) for c in result["changes"]] == [
        ("created", "facts/by hand ü.md", "person")
    ]
    assert result["changes"][0]["id"] == "facts/by hand ü.md"  # no frontmatter: the path
    assert result["cursor"] == later
    again = tool(vault, "memory_changes", {"since": result["cursor"]})
    assert again == {"changes": [], "cursor": later, "more": False}


def test_since_a_time_returns_the_commits_made_at_or_after_it(vault: MemoryService) -> None:
    def commit_at(rel: str, text: str, when: str) -> None:
        (vault.root / rel).write_text(text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        subprocess.run(["git", "add", rel], cwd=vault.root, check=True, env=env)
        subprocess.run(
            ["git", "commit", "-q", "-m", f"vault backup {when}"],
            cwd=vault.root,
            check=True,
            env=env,
        )

    commit_at("facts/old.md", "# Old\n\nWritten long ago.\n", "2020-01-01T10:00:00+00:00")
    commit_at("facts/newer.md", "# Newer\n\nWritten later.\n", "2021-01-01T10:00:00+00:00")
    recent = vault.remember("The user moved to Lisbon.", type="fact").memory
    assert recent is not None

    feed = changes.feed(vault, since="2020-06-01T00:00:00+00:00").changes
    assert ops(feed) == [("created", recent.path), ("created", "facts/newer.md")]
    assert feed[1].who == "person" and feed[1].name == PERSON  # a commit without trailers
    exact = changes.feed(vault, since="2021-01-01T10:00:00+00:00").changes
    assert ops(exact)[-1] == ("created", "facts/newer.md")
    assert ops(changes.feed(vault, since="2019-01-01T00:00:00Z").changes)[-1][1] == "facts/old.md"


def test_an_unknown_commit_or_an_unreadable_since_is_a_clear_error(
    vault: MemoryService,
) -> None:
    vault.remember("The user's birthday is in May.", type="fact")
    before = commit_count(vault.root)
    for since in ("deadbeefdeadbeef", "last tuesday", "--all"):
        with pytest.raises(InvalidInputError, match="neither a commit in this vault's history"):
            changes.feed(vault, since=since)

    async def body(client: Client) -> str:
        result = await client.call_tool("memory_changes", {"since": "0123abcd"})
        assert result.is_error
        return str(result.content[0].text)  # type: ignore[union-attr]

    text = mcp(vault, body)
    assert "invalid_input: since='0123abcd' is neither a commit" in text
    assert "pass the cursor of the last memory_changes" in text
    code, out, err = cli_run(vault.root, "changes", "--since", "0123abcd")
    assert code == 1 and out == "" and err.startswith("error: since='0123abcd' is neither")
    assert commit_count(vault.root) == before


def test_a_cursor_from_a_history_a_purge_rewrote_is_refused(vault: MemoryService) -> None:
    secret = vault.remember("The user's locker code is 4711.", type="fact").memory
    assert secret is not None
    cursor = changes.feed(vault).cursor
    assert cursor is not None
    vault.forget(secret.id, mode="purge")
    with pytest.raises(InvalidInputError, match="a purge rewrites history"):
        changes.feed(vault, since=cursor)
    latest = changes.feed(vault).changes
    assert latest[0].op == "purged" and latest[0].id == secret.id
    assert all(c.path != secret.path for c in latest)


def test_the_limit_says_when_older_changes_were_left_out(vault: MemoryService) -> None:
    start = vault.history.head()
    assert start
    for n in range(3):
        by_hand(vault, f"inbox/note {n}.md", f"# Note {n}\n\nSomething to keep, number {n}.\n")
    two = changes.feed(vault, since=start, limit=2)  # the oldest two: the cursor goes on
    assert ops(two.changes) == [("created", "inbox/note 1.md"), ("created", "inbox/note 0.md")]
    assert two.more is True
    rest = changes.feed(vault, since=two.cursor, limit=2)
    assert ops(rest.changes) == [("created", "inbox/note 2.md")] and rest.more is False
    assert rest.cursor == vault.history.head()
    three = changes.feed(vault, since=start, limit=3)
    assert len(three.changes) == 3 and three.more is False
    newest = changes.feed(vault, limit=2)  # no cursor: the newest, as the resource shows
    assert ops(newest.changes)[0] == ("created", "inbox/note 2.md") and newest.more is True


def test_an_agent_following_the_cursor_misses_no_change_of_a_big_import(
    vault: MemoryService, tmp_path: Path
) -> None:
    """60 notes imported in one commit and one written after, asked 50 at a time: the
    newest 50 came with the head as cursor, and the next call had nothing (11 lost)."""
    start = vault.history.head()
    source = tmp_path / "notes"
    source.mkdir()
    for n in range(60):
        (source / f"note {n}.md").write_text(f"# Note {n}\n\nImported fact number {n}.\n")
    import_path(vault, source, {})
    vault.remember("The user waters the ferns on Sundays.", type="fact")
    seen: list[tuple[str, str]] = []
    cursor = start
    for _ in range(5):
        page = changes.feed(vault, since=cursor, limit=50)
        seen += ops(page.changes)
        cursor = page.cursor
        if not page.more:
            break
    assert len(seen) == 61 and len(set(seen)) == 61
    for bad in (0, 501):
        with pytest.raises(InvalidInputError, match="limit must be between 1 and 500"):
            changes.feed(vault, limit=bad)


def test_only_memory_files_count_and_odd_paths_come_back_exactly(vault: MemoryService) -> None:
    start = vault.history.head()
    assert start
    (vault.root / "attachments").mkdir()
    (vault.root / "attachments" / "whiteboard.jpg").write_bytes(b"\xff\xd8\xff\xe0 jpeg")
    (vault.root / ".memvault.toml").write_text('embedder = "none"\n', encoding="utf-8")
    odd = "people/Zoë  Müller – notes (draft).md"
    (vault.root / odd).write_text("# Zoë\n\nLikes long walks.\n", encoding="utf-8")
    vault.commit_external(["attachments/whiteboard.jpg", ".memvault.toml", odd])
    assert ops(changes.feed(vault, since=start).changes) == [("created", odd)]


def test_a_move_that_git_sees_as_delete_and_add_is_one_move(vault: MemoryService) -> None:
    made = vault.remember("The user plays chess on Thursdays.", type="fact").memory
    assert made is not None
    start = vault.history.head()
    assert start
    text = (vault.root / made.path).read_text(encoding="utf-8")
    head, _, _ = text.partition("# ")
    rewritten = head + "# Games\n\n" + "\n".join(f"Line {i} of a rewrite." for i in range(40))
    (vault.root / made.path).unlink()
    (vault.root / "facts" / "games.md").write_text(rewritten, encoding="utf-8")
    vault.commit_external([made.path, "facts/games.md"])
    feed = changes.feed(vault, since=start).changes
    assert [(c.op, c.path, c.old_path, c.id) for c in feed] == [
        ("moved", "facts/games.md", made.path, made.id)
    ]


def test_the_command_line_lists_changes_as_lines_or_json(vault: MemoryService) -> None:
    made = vault.remember("The user reads science fiction.", type="preference").memory
    assert made is not None
    code, out, err = cli_run(vault.root, "changes")
    assert code == 0
    assert f"created {made.path} ({made.id}) by memvault, +" in out
    head = git(vault.root, "rev-parse", "HEAD").strip()
    assert f"cursor: {head}" in err
    code, out, _ = cli_run(vault.root, "changes", "--since", head, "--json")
    assert code == 0 and json.loads(out) == {"changes": [], "cursor": head, "more": False}


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_the_changes_resource_lists_the_last_20_and_is_announced_on_every_write(
    vault: MemoryService,
) -> None:
    for n in range(21):
        by_hand(vault, f"inbox/item {n:02}.md", f"# Item {n}\n\nThing number {n} to keep.\n")
    seen, arrived, on_message = updated_listener()

    async def body(client: Client) -> str:
        await client.session.subscribe_resource(changes.URI)
        text = (await client.read_resource(changes.URI)).contents[0].text  # type: ignore[union-attr]
        await call_tool(client, "remember", {"content": "The user sails.", "type": "fact"})
        await asyncio.wait_for(arrived.wait(), timeout=10)
        return str(text)

    server, notifier = build_server(vault)

    async def main() -> str:
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            return await body(client)

    try:
        text = asyncio.run(main())
    finally:
        vault.listeners.remove(notifier.on_change)
    items = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(items) == 21 and items[-1] == "- (older changes: call memory_changes with since)"
    assert "created inbox/item 20.md by Ada Person (person)" in items[0]
    assert "inbox/item 01.md" in items[19] and "inbox/item 00.md" not in text
    assert changes.URI in seen


def test_a_watched_edit_announces_the_changes_once_it_is_committed(
    vault: MemoryService,
) -> None:
    with watching(vault) as (_, watcher, events):
        (vault.root / "inbox" / "seen.md").write_text("# Seen\n\nBy the watcher.\n")
        assert watcher.wait_for(lambda: watcher.commits == 1)
    assert changed_uris(events[0])[0] == note_uri("inbox/seen.md")  # seen: indexed, announced
    assert changed_uris(events[-1]) == [changes.URI]  # then committed: only the feed changed
    feed = changes.feed(vault).changes
    assert (feed[0].op, feed[0].path, feed[0].who) == ("created", "inbox/seen.md", "person")


def test_pages_past_the_limit_neither_repeat_nor_skip_the_commits_of_a_merge(
    vault: MemoryService,
) -> None:
    """Pages cut in log order gave a cursor whose `cursor..HEAD` still held commits of
    the other branch already listed: a1 and b1 came twice."""
    start = vault.history.head()
    assert start
    root = vault.root
    git(root, "checkout", "-q", "-b", "side")
    for name in ("a1", "a2"):
        (root / f"inbox/{name}.md").write_text(f"# {name}\n\nOn the side branch: {name}.\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", name)
    git(root, "checkout", "-q", "-")
    for name in ("b1", "b2", "b3"):
        (root / f"inbox/{name}.md").write_text(f"# {name}\n\nOn the main branch: {name}.\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", name)
    git(root, "merge", "-q", "--no-edit", "side")
    (root / "inbox/c1.md").write_text("# c1\n\nAfter the merge.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    seen: list[str] = []
    cursor: str | None = start
    for _ in range(10):
        page = changes.feed(vault, since=cursor, limit=2)
        seen += [c.path for c in page.changes]
        cursor = page.cursor
        if not page.more:
            break
    assert sorted(seen) == [f"inbox/{n}.md" for n in ("a1", "a2", "b1", "b2", "b3", "c1")]
