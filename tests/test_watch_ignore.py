"""An edit of ``.memvaultignore`` while the watcher runs: applied live, never un-hiding a
note half-way through a save.

A real watcher (real watchdog observer, real files, real git, real Whoosh) on a clock the
test moves by hand: nothing settles until the test says so, so each state of a save (an
empty file, a missing one) is held until the watcher has read it, then checked. No sleeps.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memvault.config import Settings
from memvault.models import ChangeEvent
from memvault.server.resources import note_uri
from memvault.service import MemoryService
from memvault.vault import Vault
from memvault.watcher import Watcher

from .helpers import git, in_process, updated_listener

DIARY = "private/diary.md"
PLAN = "drafts/plan.md"
OPEN = "facts/open.md"
HIDING_PRIVATE = ("/README.md", "private/")


class Ticks:
    """The watcher's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Scene:
    service: MemoryService
    watcher: Watcher
    clock: Ticks
    events: list[ChangeEvent] = field(default_factory=list)
    # what the index held (hidden paths only) each time subscribers were told anything
    leaked: list[tuple[str, ...]] = field(default_factory=list)
    secret: set[str] = field(default_factory=lambda: {DIARY})

    @property
    def root(self) -> Path:
        return self.service.vault.root

    def indexed(self) -> set[str]:
        return {record.path for record in self.service.index.records()}

    def on_change(self, event: ChangeEvent) -> None:
        self.events.append(event)
        held = tuple(sorted(self.indexed() & self.secret))
        if held:
            self.leaked.append(held)

    def announced(self) -> set[str]:
        return {p for e in self.events for p in (*e.changed, *e.added)}

    def assert_nothing_hidden_leaked(self) -> None:
        assert not self.indexed() & self.secret
        assert not self.announced() & self.secret
        assert self.leaked == []
        assert self.service.recall("ankle surgery") == []

    def save_ignore_seen(self, *lines: str) -> None:
        """Wait until the watcher has read ``.memvaultignore`` holding ``lines`` and brought
        the index in line with it."""
        watcher, texts = self.watcher, lambda: self.service.vault.ignore_texts
        assert watcher.wait_for(lambda: tuple(lines) in texts() and not watcher.reading_ignore)

    def run_until(self, done: Callable[[], bool], step: float) -> None:
        """Move the clock by ``step`` at each event and each step of the watcher until
        ``done()``: however late a file event comes, it gets its quiet time."""

        def moved() -> bool:
            if done():
                return True
            self.clock.now += step
            return False

        assert self.watcher.wait_for(moved)

    def settle(self) -> None:
        """Let everything settle: the save of ``.memvaultignore`` and every file event."""
        watcher = self.watcher

        def idle() -> bool:
            return not (watcher.ignore_pending or watcher.reading_ignore or watcher.pending)

        self.run_until(idle, watcher.ignore_settle)

    def commit(self) -> None:
        """Let the watcher's commit come due and wait for it."""
        self.run_until(lambda: self.watcher.commits == 1, self.watcher.debounce)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def scene(vault_path: Path) -> Iterator[Scene]:
    """A vault hiding ``private/`` (a diary) with two visible notes, watched."""
    write(vault_path / ".memvaultignore", "\n".join(HIDING_PRIVATE) + "\n")
    git(vault_path, "config", "user.name", "Ada Person")
    git(vault_path, "config", "user.email", "ada@example.org")
    write(vault_path / OPEN, "# Open\nThe boat is moored in Porto.\n")
    write(vault_path / PLAN, "# Plan\nA draft plan for the garden shed.\n")
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    write(vault_path / DIARY, "# Diary\nI worry about the ankle surgery.\n")
    service.ensure_synced()
    clock = Ticks()
    watcher = Watcher(service, debounce=60, clock=clock)  # nothing is due by chance
    running = Scene(service, watcher, clock)
    service.listeners.append(running.on_change)
    watcher.start()
    try:
        assert running.indexed() >= {OPEN, PLAN}
        running.assert_nothing_hidden_leaked()
        yield running
        assert watcher.errors == []
    finally:
        clock.now += 3600  # what is still pending settles, so stop() finishes it
        watcher.stop()
        service.close()


def test_a_plain_save_of_the_ignore_file_never_unhides_a_note_half_way(scene: Scene) -> None:
    """Truncate, then write (most editors): the empty file the watcher reads in between
    hides nothing, yet the diary stays out; `drafts/` added by the save leaves at once."""
    with open(scene.root / ".memvaultignore", "w", encoding="utf-8") as saving:
        scene.save_ignore_seen()  # the watcher has read the file empty
        scene.assert_nothing_hidden_leaked()
        saving.write("/README.md\nprivate/\ndrafts/\n")
    scene.save_ignore_seen(*HIDING_PRIVATE, "drafts/")
    scene.secret.add(PLAN)
    assert PLAN not in scene.indexed()  # newly hidden: gone before the save settled
    assert any(PLAN in e.removed for e in scene.events)
    scene.assert_nothing_hidden_leaked()

    scene.settle()
    assert scene.service.vault.ignore_texts == ((*HIDING_PRIVATE, "drafts/"),)
    assert OPEN in scene.indexed()
    scene.assert_nothing_hidden_leaked()


def test_a_vim_style_save_of_the_ignore_file_never_unhides_a_note(scene: Scene) -> None:
    """vim: probe file 4913, the old file renamed to a backup (so for a moment there is no
    ignore file at all), the new one written, the backup deleted."""
    root = scene.root
    write(root / "4913", "")
    (root / "4913").unlink()
    os.rename(root / ".memvaultignore", root / ".memvaultignore~")
    scene.save_ignore_seen()  # read while missing
    scene.assert_nothing_hidden_leaked()
    write(root / ".memvaultignore", "/README.md\nprivate/\n# my notes\n")
    scene.save_ignore_seen(*HIDING_PRIVATE, "# my notes")
    (root / ".memvaultignore~").unlink()
    scene.assert_nothing_hidden_leaked()

    scene.settle()
    assert scene.service.vault.ignore_texts == ((*HIDING_PRIVATE, "# my notes"),)
    assert {OPEN, PLAN} <= scene.indexed()
    scene.assert_nothing_hidden_leaked()


def test_an_ignore_file_deleted_and_made_again_quickly_never_unhides(scene: Scene) -> None:
    ignore = scene.root / ".memvaultignore"
    ignore.unlink()
    scene.save_ignore_seen()
    scene.assert_nothing_hidden_leaked()
    write(ignore, "private/\n")
    scene.save_ignore_seen("private/")
    scene.assert_nothing_hidden_leaked()

    scene.settle()
    assert scene.service.vault.ignore_texts == (("private/",),)
    scene.assert_nothing_hidden_leaked()


def test_an_ignore_file_deleted_for_good_unhides_its_notes_once_settled(scene: Scene) -> None:
    """Only after the quiet time: the diary, edited while hidden, is indexed, announced and
    committed; until then it stays out."""
    write(scene.root / DIARY, "# Diary\nThe ankle surgery is on Friday.\n")
    (scene.root / ".memvaultignore").unlink()
    scene.save_ignore_seen()
    scene.assert_nothing_hidden_leaked()

    scene.secret.clear()
    scene.settle()
    assert DIARY in scene.indexed()
    assert [hit.path for hit in scene.service.recall("ankle surgery Friday")] == [DIARY]
    assert any(DIARY in e.added for e in scene.events)
    scene.commit()
    assert git(scene.root, "status", "--porcelain", "--", DIARY) == ""
    assert "Friday" in git(scene.root, "show", f"HEAD:{DIARY}")


def test_a_note_hidden_before_its_edit_is_committed_is_never_committed(scene: Scene) -> None:
    """A person edits the plan (indexed, its commit due after the debounce), then hides
    `drafts/`: the plan leaves the index at once and the watcher never commits it."""
    plan_commits = git(scene.root, "log", "--format=%H", "--", PLAN).split()
    write(scene.root / PLAN, "# Plan\nThe secret shed costs a fortune.\n")
    # the edit settles; its commit is not due yet
    scene.run_until(lambda: scene.watcher.batches == 1, 2 * scene.watcher.settle)
    assert [hit.path for hit in scene.service.recall("secret shed fortune")] == [PLAN]

    write(scene.root / ".memvaultignore", "/README.md\nprivate/\ndrafts/\n")
    scene.save_ignore_seen(*HIDING_PRIVATE, "drafts/")
    assert PLAN not in scene.indexed()
    assert scene.service.recall("secret shed fortune") == []

    write(scene.root / OPEN, "# Open\nThe boat is moored in Lisbon now.\n")
    scene.settle()
    scene.commit()
    assert git(scene.root, "show", "--name-only", "--format=", "HEAD").split() == [OPEN]
    assert git(scene.root, "log", "--format=%H", "--", PLAN).split() == plan_commits
    assert PLAN not in scene.indexed()
    scene.assert_nothing_hidden_leaked()


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_subscriber_of_a_note_hidden_live_hears_of_it_once_and_never_again(
    scene: Scene,
) -> None:
    """A real MCP session subscribed to the plan: hiding `drafts/` tells it once (the note
    is gone); a later vim-style save of the ignore file, seen half-way with no file at
    all, tells it nothing more, and the plan cannot be read."""
    root = scene.root
    plan_uri, open_uri = note_uri(PLAN), note_uri(OPEN)
    seen, arrived, on_message = updated_listener(open_uri)
    hiding_drafts = (*HIDING_PRIVATE, "drafts/")

    def hide_drafts_then_save_again() -> None:
        write(root / ".memvaultignore", "\n".join(hiding_drafts) + "\n")
        scene.save_ignore_seen(*hiding_drafts)
        scene.secret.add(PLAN)
        scene.settle()
        os.rename(root / ".memvaultignore", root / ".memvaultignore~")
        scene.save_ignore_seen()
        write(root / ".memvaultignore", "\n".join(hiding_drafts) + "\n# kept\n")
        scene.save_ignore_seen(*hiding_drafts, "# kept")
        (root / ".memvaultignore~").unlink()
        scene.settle()
        batches = scene.watcher.batches
        write(root / OPEN, "# Open\nThe boat is moored in Lisbon now.\n")  # the last word
        scene.run_until(lambda: scene.watcher.batches > batches, scene.watcher.ignore_settle)

    async def body(client: Client) -> bool:
        for uri in (plan_uri, open_uri):
            await client.session.subscribe_resource(uri)
        await asyncio.to_thread(hide_drafts_then_save_again)
        await asyncio.wait_for(arrived.wait(), timeout=10)
        try:
            await client.read_resource(plan_uri)
        except MCPError:
            return False
        return True

    assert in_process(scene.service, body, message_handler=on_message) is False
    assert seen.count(plan_uri) == 1  # told once that it is gone, never that it is back
    scene.assert_nothing_hidden_leaked()


def test_while_a_save_settles_a_path_any_text_read_hides_stays_hidden(tmp_path: Path) -> None:
    """The union is of each text's own verdict (gitignore's `!` inside one text), and the
    settled text alone applies afterwards."""
    write(tmp_path / ".memvaultignore", "private/*\n!private/public.md\n")
    vault = Vault(tmp_path)
    write(tmp_path / ".memvaultignore", "drafts/\n")
    assert vault.reload_ignore(settled=False)
    assert vault.is_ignored("private/secret.md") and vault.is_ignored("drafts/plan.md")
    assert not vault.is_ignored("private/public.md")
    assert not vault.reload_ignore(settled=False)  # the same text again: nothing new
    assert vault.reload_ignore(settled=True)
    assert not vault.is_ignored("private/secret.md") and vault.is_ignored("drafts/plan.md")
