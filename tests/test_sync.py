"""Sync through ordinary git remotes: a bare repository in tmp_path and two vaults cloned
from it (real git, real files, real Whoosh); no network, file-path remotes only."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp import Client

from memvault import changes, frontmatter, merging
from memvault.autosync import AfterWrites
from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.errors import InvalidInputError, MemvaultError
from memvault.models import ChangeEvent
from memvault.reports import status
from memvault.server import build_server, start_sync_schedule
from memvault.service import MemoryService
from memvault.syncing import SyncResult, resolve_conflict, sync
from memvault.template import create_vault

from .helpers import Pair, call_tool, git, run_memvault, synced_pair, watching

EARLY = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.UTC)
LATE = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)


def _open(root: Path) -> MemoryService:
    return MemoryService.open(root, Settings(embedder="none"))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """A bare remote, vault A pushed to it, vault B cloned from it."""
    with synced_pair(tmp_path) as made:
        yield made


def _log(service: MemoryService) -> list[str]:
    return git(service.root, "log", "--format=%s%x09%an").splitlines()


def _problems(service: MemoryService) -> list[tuple[str, str]]:
    """What doctor reports (but that this test vault has no embedder)."""
    found = run_checks(service.vault, service.history, "none")
    return [(p.path, p.kind) for p in found if p.kind != "embedder"]


def _shared(pair: Pair) -> str:
    """A memory on both sides: written on A, synced to B."""
    result = pair.a.remember("Reports are written in British English", type="preference")
    assert result.memory is not None
    sync(pair.a)
    sync(pair.b)
    return result.memory.id


def test_writes_on_both_sides_reach_both_with_ids_and_commits_intact(pair: Pair) -> None:
    on_a = pair.a.remember("The staging database is called heron", type="fact").memory
    on_b = pair.b.remember("Deploys happen on Tuesdays after standup", type="fact").memory
    assert on_a is not None and on_b is not None
    assert sync(pair.a).pushed == 1
    second = sync(pair.b)
    assert second.action == "rebased" and second.pushed == 1 and second.error is None
    assert on_a.path in second.changed
    third = sync(pair.a)
    assert third.action == "fast-forward" and on_b.path in third.changed
    for service in (pair.a, pair.b):
        assert service.get(on_a.id).path == on_a.path
        assert service.get(on_b.id).path == on_b.path
        assert {h.id for h in service.recall("staging database heron")} >= {on_a.id}
        assert {h.id for h in service.recall("deploys tuesdays")} >= {on_b.id}
    assert git(pair.a.root, "rev-parse", "HEAD") == git(pair.b.root, "rev-parse", "HEAD")
    subjects = [line.split("\t")[0] for line in _log(pair.a)]
    assert f"remember: {on_a.path}" in subjects and f"remember: {on_b.path}" in subjects
    assert git(pair.a.root, "status", "--porcelain") == ""


def test_sync_tells_subscribers_what_the_remote_changed(pair: Pair) -> None:
    written = pair.a.remember("The office wifi is called kestrel", type="fact").memory
    assert written is not None
    sync(pair.a)
    events: list[ChangeEvent] = []
    pair.b.listeners.append(events.append)
    sync(pair.b)
    assert [e.added for e in events] == [(written.path,)]


def pull_a_rule(pair: Pair, lines: str, message: str) -> list[ChangeEvent]:
    """A adds ``lines`` to its `.memvaultignore` (the template's kept) and commits them
    with its other changes; B pulls them. What B's subscribers were told."""
    root = pair.a.vault.root
    rule = root / ".memvaultignore"
    rule.write_text(rule.read_text() + lines)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    assert sync(pair.a).error is None
    events: list[ChangeEvent] = []
    pair.b.listeners.append(events.append)
    assert sync(pair.b).error is None
    return events


def test_a_pulled_ignore_rule_hides_the_notes_pulled_with_it_at_once(pair: Pair) -> None:
    """A's `.memvaultignore` hides `private/`, pushed with a diary there: B indexed the
    diary with its old rule, found it by recall and told its subscribers it was added."""
    shown = pair.b.remember("The user's bike is a blue Brompton.", type="fact").memory
    assert shown is not None
    sync(pair.b)
    sync(pair.a)
    root = pair.a.vault.root
    (root / "private").mkdir()
    (root / "private" / "diary.md").write_text("# Diary\n\nWorried about the ankle surgery.\n")
    events = pull_a_rule(pair, f"private/\n{shown.path}\n", "hide private/ and the bike")
    assert pair.b.recall("ankle surgery") == [] and pair.b.recall("Brompton") == []
    assert {r.path for r in pair.b.index.records()}.isdisjoint({"private/diary.md", shown.path})
    told = [p for e in events for p in (*e.added, *e.changed, *e.removed)]
    assert "private/diary.md" not in told
    assert [e.removed for e in events] == [(shown.path,)]  # shown before, hidden now


def test_a_memory_edited_on_both_sides_keeps_both_texts_and_is_flagged(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    assert sync(pair.a).pushed == 1
    result = sync(pair.b)
    path = pair.b.get(memory_id).path
    assert result.action == "merged" and result.conflicts == (path,) and result.error is None
    text = (pair.b.root / path).read_text(encoding="utf-8")
    assert "American English since March" in text and "no Oxford comma" in text
    assert text.index("American") < text.index("## Conflicting version (from origin, ")
    assert text.index("## Conflicting version") < text.index("no Oxford comma")
    assert pair.b.get(memory_id).status == "conflict"
    assert _problems(pair.b) == [(path, "conflict")]
    assert status(pair.b).conflicts == [path]
    assert git(pair.b.root, "status", "--porcelain") == ""
    merge = _log(pair.b)[0]
    assert merge.startswith("sync: merge origin/main")
    trailers = git(pair.b.root, "log", "-1", "--format=%(trailers:only)")
    assert "Memvault-Op: sync" in trailers
    sync(pair.a)
    assert pair.a.get(memory_id).status == "conflict"  # the other side sees it too


@pytest.mark.parametrize(
    ("keep", "present", "absent"),
    [
        ("ours", ["American English since March"], ["no Oxford comma"]),
        ("theirs", ["no Oxford comma"], ["American English since March"]),
        ("both", ["American English since March", "no Oxford comma"], []),
    ],
)
def test_a_conflict_is_resolved_by_keeping_ours_theirs_or_both(
    pair: Pair, keep: str, present: list[str], absent: list[str]
) -> None:
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    sync(pair.b)
    result = resolve_conflict(pair.b, memory_id, keep)
    assert result.commit is not None and result.action == "resolved"
    text = (pair.b.root / result.memory.path).read_text(encoding="utf-8")
    for words in present:
        assert words in text
    for words in absent:
        assert words not in text
    assert "Conflicting version" not in text and "conflict" not in text
    assert pair.b.get(memory_id).status == "active"
    assert _problems(pair.b) == []
    with pytest.raises(InvalidInputError, match="not in conflict"):
        resolve_conflict(pair.b, memory_id, keep)


def test_resolving_refuses_a_memory_that_is_not_in_conflict_without_a_commit(
    pair: Pair,
) -> None:
    memory_id = _shared(pair)
    head = git(pair.b.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match="not in conflict"):
        resolve_conflict(pair.b, memory_id, "ours")
    with pytest.raises(InvalidInputError, match="keep must be one of"):
        resolve_conflict(pair.b, memory_id, "mine")
    assert git(pair.b.root, "rev-parse", "HEAD") == head
    assert git(pair.b.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("deleted_first", [True, False])
def test_a_memory_deleted_on_one_side_and_edited_on_the_other_is_kept_edited(
    pair: Pair, deleted_first: bool
) -> None:
    memory_id = _shared(pair)
    path = pair.a.get(memory_id).path
    pair.a.forget(memory_id, mode="delete")
    pair.b.update(memory_id, content="Reports are written in British English, always")
    first, second = (pair.a, pair.b) if deleted_first else (pair.b, pair.a)
    sync(first)
    result = sync(second)
    assert result.error is None and result.conflicts == ()
    sync(first)
    for service in (pair.a, pair.b):
        assert service.get(memory_id).path == path
        assert "British English, always" in (service.root / path).read_text(encoding="utf-8")
        assert service.get(memory_id).status == "active"
        assert [h.id for h in service.recall("British English always")][:1] == [memory_id]


def test_edits_to_different_lines_of_one_memory_merge_without_a_conflict(pair: Pair) -> None:
    content = "Owner: Ana\n\nSome filler line\n\nDeadline: March"
    first = pair.a.remember(content, type="note", title="Project heron").memory
    assert first is not None
    sync(pair.a)
    sync(pair.b)
    pair.a.clock, pair.b.clock = (lambda: LATE), (lambda: EARLY)  # `updated` differs too
    pair.a.update(first.id, content=content.replace("Ana", "Bea"))
    pair.b.update(first.id, content=content.replace("March", "April"))
    sync(pair.a)
    result = sync(pair.b)
    assert result.action == "merged" and result.conflicts == ()
    body = pair.b.get(first.id).body
    assert "Owner: Bea" in body and "Deadline: April" in body
    assert pair.b.get(first.id).status == "active"


def test_frontmatter_only_changes_on_both_sides_merge_field_by_field(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.clock = lambda: LATE
    pair.b.clock = lambda: EARLY
    pair.a.update(memory_id, fields={"tags": ["writing", "style"], "importance": 0.9})
    pair.b.update(memory_id, fields={"tags": ["writing", "reports"], "importance": 0.2})
    sync(pair.a)
    result = sync(pair.b)
    assert result.conflicts == () and result.error is None
    memory = pair.b.get(memory_id)
    assert set(memory.tags) == {"writing", "style", "reports"}
    assert memory.importance == 0.9  # the later edit's value
    assert memory.status == "active" and "Conflicting" not in memory.body
    sync(pair.a)
    assert pair.a.get(memory_id).content_hash == memory.content_hash


def test_a_failed_push_or_fetch_is_reported_and_writes_go_on(pair: Pair) -> None:
    shutil.rmtree(pair.remote)
    written = pair.b.remember("The release train leaves every second Thursday", type="fact")
    assert written.action == "created"
    result = sync(pair.b)
    assert result.action == "offline" and not result.fetched and result.pushed == 0
    assert result.error is not None and "could not fetch from origin" in result.error
    later = pair.b.remember("Retros are on Fridays at four", type="fact")
    assert later.action == "created" and later.commit is not None
    assert status(pair.b).sync is not None
    assert status(pair.b).sync["error"] == result.error  # type: ignore[index]
    cli = run_memvault("--vault", str(pair.b.root), "sync")
    assert cli.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr and "could not fetch from origin" in cli.stdout


def test_a_push_the_remote_refuses_is_reported_and_the_commit_stays(
    pair: Pair, tmp_path: Path
) -> None:
    hooks = pair.remote / "hooks"
    hook = hooks / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'read-only mirror' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    written = pair.b.remember("Standups are at nine thirty", type="fact")
    result = sync(pair.b)
    assert result.fetched and result.pushed == 0
    assert result.error is not None and "could not push to origin" in result.error
    assert written.commit == git(pair.b.root, "rev-parse", "HEAD").strip()


def test_sync_without_a_remote_says_how_to_add_one(tmp_path: Path) -> None:
    create_vault(tmp_path / "solo")
    service = _open(tmp_path / "solo")
    try:
        with pytest.raises(InvalidInputError, match="remote add origin"):
            sync(service)
        with pytest.raises(InvalidInputError, match="no git remote named 'elsewhere'"):
            sync(service, "elsewhere")
    finally:
        service.close()


def test_sync_commits_a_persons_pending_edit_before_integrating(pair: Pair) -> None:
    memory_id = _shared(pair)
    path = pair.b.get(memory_id).path
    file = pair.b.root / path
    file.write_text(file.read_text(encoding="utf-8") + "\nAdded by hand.\n", encoding="utf-8")
    assert sync(pair.b).pushed == 1
    sync(pair.a)
    assert "Added by hand." in (pair.a.root / path).read_text(encoding="utf-8")


def test_sync_while_the_watcher_runs_adds_no_commit_of_its_own(pair: Pair) -> None:
    written = pair.a.remember("The build server is named osprey", type="fact").memory
    assert written is not None
    sync(pair.a)
    with watching(pair.b) as (_, watcher, _events):
        result = sync(pair.b)
        assert result.action == "fast-forward"
        assert watcher.wait_for(lambda: watcher.settled >= 1)
    assert watcher.batches == 0  # the sync's files are no person's edits
    # stopping the watcher processed and committed everything it saw: nothing to commit
    assert watcher.commits == 0 and watcher.errors == []
    assert git(pair.b.root, "rev-parse", "HEAD") == git(pair.a.root, "rev-parse", "HEAD")
    assert git(pair.b.root, "status", "--porcelain") == ""
    assert [h.id for h in pair.b.recall("build server osprey")][:1] == [written.id]


def test_sync_with_the_watcher_paused_is_not_taken_for_a_persons_edit(pair: Pair) -> None:
    written = pair.a.remember("The build server is named osprey", type="fact").memory
    assert written is not None
    sync(pair.a)
    with watching(pair.b) as (_, watcher, events):
        pair.b.pause = watcher.paused  # as `serve` sets it: every sync holds the watcher off
        result = sync(pair.b)
        assert result.action == "fast-forward" and result.changed == (written.path,)
    # stopping the watcher processed everything it saw: nothing new to it
    assert watcher.batches == 0 and watcher.commits == 0 and watcher.errors == []
    assert [e.added for e in events] == [(written.path,)]  # the sync's own notice, once


def test_a_persons_edit_during_a_paused_sync_is_still_seen(pair: Pair) -> None:
    memory_id = _shared(pair)
    path = pair.b.get(memory_id).path
    with watching(pair.b) as (_, watcher, _events):
        with watcher.paused():
            file = pair.b.root / path
            file.write_text(file.read_text(encoding="utf-8") + "\nBy hand.\n", encoding="utf-8")
        assert watcher.wait_for(lambda: watcher.commits == 1, timeout=30)
    assert "By hand." in git(pair.b.root, "show", f"HEAD:{path}")


def test_serve_syncs_on_its_interval(pair: Pair) -> None:
    written = pair.a.remember("Lunch orders close at eleven", type="fact").memory
    assert written is not None
    sync(pair.a)
    arrived = threading.Event()
    pair.b.listeners.append(lambda e: arrived.set() if written.path in e.added else None)
    stop = start_sync_schedule(pair.b, 0.05)
    try:
        assert arrived.wait(timeout=60)
    finally:
        stop()
    assert pair.b.get(written.id).path == written.path
    assert pair.b.settings.sync_interval == 0.0  # off unless set


def test_the_sync_tool_answers_an_mcp_client_even_when_offline(pair: Pair) -> None:
    written = pair.a.remember("Invoices go out on the first of the month", type="fact")
    sync(pair.a)
    server, notifier = build_server(pair.b)

    async def main() -> tuple[dict[str, object], dict[str, object]]:
        async with Client(server, mode="legacy") as client:
            online = await call_tool(client, "sync", {})
            shutil.rmtree(pair.remote)
            offline = await call_tool(client, "sync", {"remote": "origin"})
            return online, offline

    try:
        online, offline = asyncio.run(main())
    finally:
        pair.b.listeners.remove(notifier.on_change)
    assert written.memory is not None and online["changed"] == [written.memory.path]
    assert online["action"] == "fast-forward" and online["error"] is None
    assert offline["action"] == "offline" and "could not fetch" in str(offline["error"])


def test_the_command_line_syncs_and_resolves_a_conflict(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    vault = ["--vault", str(pair.b.root)]
    done = run_memvault(*vault, "--json", "sync")
    assert done.returncode == 0, done.stderr
    path = pair.b.get(memory_id).path
    assert json.loads(done.stdout)["conflicts"] == [path]
    doctor = run_memvault(*vault, "doctor")
    assert doctor.returncode == 1 and f"conflict      {path} holds two versions" in doctor.stdout
    settled = run_memvault(*vault, "resolve", memory_id, "--keep", "theirs")
    assert settled.returncode == 0, settled.stderr
    assert "no Oxford comma" in pair.b.get(memory_id).body
    again = run_memvault(*vault, "resolve", memory_id, "--keep", "theirs")
    assert again.returncode == 1 and again.stderr.startswith("error: ")
    assert "not in conflict" in again.stderr and "Traceback" not in again.stderr


def test_a_conflict_is_also_settled_by_an_ordinary_update(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    sync(pair.b)
    pair.b.update(memory_id, content="Reports: American English", fields={"status": "active"})
    assert pair.b.get(memory_id).status == "active"
    assert _problems(pair.b) == []


def test_a_merge_that_cannot_finish_is_undone_and_reported(pair: Pair, tmp_path: Path) -> None:
    """A required git clean filter (as git-crypt or LFS set up) that refuses the merged
    file: memvault cannot stage it, and nothing is left half-way."""
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    seal = tmp_path / "seal.sh"
    seal.write_text(
        '#!/bin/sh\nt=$(mktemp); cat > "$t"\n'
        'if grep -q "Conflicting version" "$t"; then rm "$t"; exit 1; fi\ncat "$t"; rm "$t"\n'
    )
    seal.chmod(0o755)
    git(pair.b.root, "config", "filter.seal.clean", str(seal))
    git(pair.b.root, "config", "filter.seal.smudge", "cat")
    git(pair.b.root, "config", "filter.seal.required", "true")
    (pair.b.root / ".git" / "info" / "attributes").write_text("*.md filter=seal\n")
    head = git(pair.b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match="the merge was undone"):
        sync(pair.b)
    git_dir = pair.b.root / ".git"
    assert not any((git_dir / f).exists() for f in ("MERGE_HEAD", "rebase-merge", "rebase-apply"))
    assert git(pair.b.root, "rev-parse", "HEAD") == head
    assert git(pair.b.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_symlink_changed_on_both_sides_is_left_to_a_person_not_turned_into_a_file(
    pair: Pair,
) -> None:
    def relink(service: MemoryService, target: str) -> None:
        link = service.root / "facts" / "link.md"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        git(service.root, "add", "facts/link.md")
        git(service.root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "link")

    relink(pair.a, "../README.md")
    sync(pair.a)
    sync(pair.b)
    relink(pair.a, "../inbox/.gitkeep")
    relink(pair.b, "../tasks/.gitkeep")
    sync(pair.a)
    head = git(pair.b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match="symbolic link or submodule changed on both sides"):
        sync(pair.b)
    assert not (pair.b.root / ".git" / "MERGE_HEAD").exists()
    assert git(pair.b.root, "rev-parse", "HEAD") == head
    assert (pair.b.root / "facts" / "link.md").is_symlink()


def test_init_clone_sets_up_a_vault_from_a_remote_with_ids_and_index(
    pair: Pair, tmp_path: Path
) -> None:
    written = pair.a.remember("The team calendar lives in the shared drive", type="fact")
    assert written.memory is not None
    sync(pair.a)
    target = tmp_path / "laptop" / "vault"
    done = run_memvault("--json", "init", str(target), "--clone", str(pair.remote))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "cloned"
    assert json.loads(done.stdout)["indexed"] == 1
    clone = _open(target)
    try:
        assert clone.get(written.memory.id).path == written.memory.path
        assert [r.id for r in clone.records()] == [written.memory.id]
        assert git(target, "status", "--porcelain") == ""  # .memvault/ stays out of git
        assert sync(clone).action == "up to date"
    finally:
        clone.close()


def test_init_clone_of_an_empty_remote_starts_it_and_refuses_a_used_folder(
    tmp_path: Path,
) -> None:
    remote = tmp_path / "empty.git"
    git(tmp_path, "init", "--bare", "-q", "--initial-branch=main", str(remote))
    done = run_memvault("--json", "init", str(tmp_path / "v"), "--clone", str(remote))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "created"
    named = run_memvault("init", str(tmp_path / "t"), "--clone", str(remote), "--branch", "trunk")
    assert named.returncode == 0 and "is empty: created a vault" in named.stdout
    assert git(tmp_path / "t", "branch", "--show-current").strip() == "trunk"
    service = _open(tmp_path / "v")
    try:
        assert sync(service).pushed == 1
    finally:
        service.close()
    again = run_memvault("init", str(tmp_path / "v"), "--clone", str(remote))
    assert again.returncode == 1 and "exists and is not empty" in again.stderr
    missing = run_memvault("init", str(tmp_path / "w"), "--clone", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "could not clone" in missing.stderr
    assert "Traceback" not in missing.stderr and not (tmp_path / "w").exists()


def test_init_clone_of_a_remote_whose_head_names_no_branch_takes_its_branch_not_a_new_vault(
    pair: Pair, tmp_path: Path
) -> None:
    """A bare remote whose HEAD points at a branch it lacks (pushed to under another name):
    git clones nothing checked out. Its one branch is the vault; with two, the person
    chooses (--branch), because a fresh vault there would start an unrelated history."""
    written = pair.a.remember("The bike lock code is 4719", type="fact")
    assert written.memory is not None
    git(pair.a.root, "push", "-q", str(pair.remote), "HEAD:refs/heads/trunk")
    git(pair.remote, "update-ref", "-d", "refs/heads/main")  # HEAD still says main
    one = tmp_path / "one"
    done = run_memvault("--json", "init", str(one), "--clone", str(pair.remote))
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert (said["state"], said["indexed"]) == ("cloned", len(pair.a.records()))
    assert git(one, "rev-parse", "HEAD") == git(pair.a.root, "rev-parse", "HEAD")
    assert git(one, "rev-parse", "--abbrev-ref", "@{upstream}").strip() == "origin/trunk"

    git(pair.a.root, "push", "-q", str(pair.remote), "HEAD~1:refs/heads/old")
    two = tmp_path / "two"
    two.mkdir()  # the person made the folder: it stays, empty
    refused = run_memvault("init", str(two), "--clone", str(pair.remote))
    assert refused.returncode == 1 and "old, trunk" in refused.stderr
    assert "--branch BRANCH" in refused.stderr and two.is_dir() and not any(two.iterdir())
    missing = run_memvault("init", str(two), "--clone", str(pair.remote), "--branch", "nope")
    assert missing.returncode == 1 and "has no branch 'nope'" in missing.stderr
    assert not any(two.iterdir())
    chosen = run_memvault("init", str(two), "--clone", str(pair.remote), "--branch", "trunk")
    assert chosen.returncode == 0, chosen.stderr
    assert git(two, "rev-parse", "HEAD") == git(pair.a.root, "rev-parse", "HEAD")
    alone = run_memvault("init", str(tmp_path / "three"), "--branch", "trunk")
    assert alone.returncode == 2 and not (tmp_path / "three").exists()


# -- the merge of two versions (pure) ----------------------------------------------------
def test_tags_merge_as_a_union_less_what_either_side_removed() -> None:
    base = {"tags": ["a", "b"], "importance": 0.5}
    ours = {"tags": ["a"], "importance": 0.5}
    theirs = {"tags": ["a", "b", "c"], "importance": 0.7}
    assert merging.merge_fields(base, ours, theirs) == {"tags": ["a", "c"], "importance": 0.7}


def test_a_value_changed_on_both_sides_takes_the_later_side() -> None:
    base = {"type": "note", "updated": "2026-11-01T00:00:00+00:00"}
    ours = {"type": "fact", "updated": "2026-11-03T00:00:00+00:00"}
    theirs = {"type": "task", "updated": "2026-11-02T00:00:00+00:00"}
    assert merging.merge_fields(base, ours, theirs) == {}
    assert merging.merge_fields(base, theirs, ours) == {
        "type": "fact",
        "updated": "2026-11-03T00:00:00+00:00",
    }


def test_a_person_status_is_kept_and_the_conflict_goes_under_lifecycle() -> None:
    base = "---\nstatus: draft\n---\n# T\n\nbase\n"
    ours = "---\nstatus: draft\n---\n# T\n\nours\n"
    theirs = "---\nstatus: draft\n---\n# T\n\ntheirs\n"
    merged = merging.merge_memory(base, ours, theirs, "laptop", "2026-11-02 09:00")
    meta = frontmatter.parse(merged.text).meta
    assert merged.conflict and meta["status"] == "draft" and meta["lifecycle"] == "conflict"
    assert "## Conflicting version (from laptop, 2026-11-02 09:00)\n\n# T\n\ntheirs" in merged.text


def test_two_sides_whose_fields_together_would_not_read_back_are_kept_as_a_conflict() -> None:
    base = "---\nid: 01ABCDEFGHJKMNPQ\n---\n# T\n\nbase\n"
    ours = base.replace("id:", f"mine: {'m' * 40_000}\nid:")
    theirs = base.replace("id:", f"yours: {'y' * 40_000}\nid:")
    merged = merging.merge_memory(base, ours, theirs, "laptop", "2026-11-02 09:00")
    meta = frontmatter.parse(merged.text).meta  # readable: not 80 KB of frontmatter
    assert merged.conflict and meta["id"] == "01ABCDEFGHJKMNPQ" and "yours:" in merged.text


# -- the changes feed sees what a sync's merge settled -----------------------------------------
def test_memory_changes_lists_the_conflict_a_sync_merge_kept(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    before = git(pair.b.root, "rev-parse", "HEAD")
    assert sync(pair.b).conflicts
    found = changes.feed(pair.b, before).changes
    conflict = [c for c in found if c.op == "conflict"]
    assert [(c.id, c.path, c.who) for c in conflict] == [
        (memory_id, pair.b.get(memory_id).path, "memvault")
    ]
    assert conflict[0].diff == "both versions kept"
    assert any(c.op == "edited" and c.id == memory_id and c.who == "memvault" for c in found)


def test_memory_changes_lists_a_field_by_field_merge_as_merged(pair: Pair) -> None:
    memory_id = _shared(pair)
    pair.a.clock, pair.b.clock = (lambda: LATE), (lambda: EARLY)
    pair.a.update(memory_id, fields={"tags": ["writing", "style"], "importance": 0.9})
    pair.b.update(memory_id, fields={"tags": ["writing", "reports"], "importance": 0.2})
    sync(pair.a)
    before = git(pair.b.root, "rev-parse", "HEAD")
    result = sync(pair.b)
    assert result.action == "merged" and not result.conflicts
    ops = [(c.op, c.id) for c in changes.feed(pair.b, before).changes]
    assert ("merged", memory_id) in ops and ("conflict", memory_id) not in ops


# -- sync after writes -----------------------------------------------------------------------
class FakeTimer:
    """A countdown the test fires by hand: no threads, no waiting."""

    def __init__(self, delay: float, fire: Callable[[], None]) -> None:
        self.delay, self.fire = delay, fire
        self.started = self.cancelled = False

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True


def fake_timers() -> tuple[list[FakeTimer], Callable[[float, Callable[[], None]], FakeTimer]]:
    timers: list[FakeTimer] = []

    def make(delay: float, fire: Callable[[], None]) -> FakeTimer:
        timers.append(FakeTimer(delay, fire))
        return timers[-1]

    return timers, make


def test_a_burst_of_writes_is_synced_once_after_the_quiet_period(pair: Pair) -> None:
    timers, make = fake_timers()
    syncs: list[SyncResult] = []
    after = AfterWrites(pair.a, 5.0, sync=lambda s: syncs.append(sync(s)), timer=make)
    try:
        written = [pair.a.remember(f"Sprint {n} ends on a Friday", type="fact") for n in (1, 2)]
        assert len(timers) == 2 and timers[0].cancelled and not timers[1].cancelled
        assert timers[1].delay == 5.0 and syncs == []
        timers[1].fire()
        assert len(syncs) == 1 and syncs[0].pushed == 2
        assert len(timers) == 2  # what the sync itself changed starts no new countdown
    finally:
        after.stop()
    pair.a.remember("Sprint 3 ends on a Friday", type="fact")
    assert len(timers) == 2  # stopped: no longer listening
    sync(pair.b)
    assert all(pair.b.get(w.memory.id) for w in written if w.memory)


def test_changes_a_sync_brings_in_start_no_sync_after_writes(pair: Pair) -> None:
    timers, make = fake_timers()
    after = AfterWrites(pair.b, 5.0, timer=make)
    try:
        pair.a.remember("The office closes at six", type="fact")
        sync(pair.a)
        assert sync(pair.b).changed  # B's subscribers heard of the new file...
        assert timers == []  # ...and no countdown started for it
    finally:
        after.stop()


def test_serve_syncs_a_write_after_the_quiet_period_with_a_real_timer(pair: Pair) -> None:
    done = threading.Event()

    def run(service: MemoryService) -> SyncResult:
        result = sync(service)
        done.set()
        return result

    after = AfterWrites(pair.a, 0.05, sync=run)
    try:
        written = pair.a.remember("Expense reports are due on the 5th", type="fact").memory
        assert written is not None and done.wait(timeout=60)
    finally:
        after.stop()
    assert sync(pair.b).action == "fast-forward"
    assert pair.b.get(written.id).path == written.path
    assert Settings().sync_after_writes == 0.0  # off unless set


def test_a_failing_sync_after_writes_never_fails_the_write(pair: Pair) -> None:
    done = threading.Event()

    def run(service: MemoryService) -> None:
        done.set()
        raise MemvaultError("no remote reachable")

    after = AfterWrites(pair.a, 0.01, sync=run)
    try:
        result = pair.a.remember("The printer is on floor two", type="fact")
        assert result.action == "created" and done.wait(timeout=60)
    finally:
        after.stop()
    assert git(pair.a.root, "status", "--porcelain") == ""


# -- beside obsidian-git ---------------------------------------------------------------------
def obsidian_git_round(root: Path, n: int) -> str | None:
    """What the obsidian-git plugin does on its timer: commit everything, pull, push (plain
    git, no memvault lock). Returns its error, as the plugin would show it, or None."""
    steps = [
        ["add", "-A"],
        ["commit", "-q", "-m", f"vault backup: round {n}"],
        ["pull", "-q", "--no-rebase", "--no-edit"],
        ["push", "-q"],
    ]
    for args in steps:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        quiet = "nothing to commit" in done.stdout + done.stderr
        if done.returncode != 0 and not quiet:
            return f"git {args[0]}: {done.stderr.strip()}"
    return None


def side_by_side(pair: Pair) -> tuple[list[str], list[str]]:
    """obsidian-git's rounds and an agent's writes (and syncs) on vault A at the same time,
    with memvault's watcher running: the ids written and the plugin's errors."""
    plugin_errors: list[str] = []
    written: list[str] = []

    def plugin() -> None:
        for n in range(6):
            error = obsidian_git_round(pair.a.root, n)
            if error:
                plugin_errors.append(error)

    def agent() -> None:
        for n in range(8):
            result = pair.a.remember(f"Standup note {n}: ship the {n}th widget", type="episode")
            assert result.memory is not None
            written.append(result.memory.id)
            if n % 3 == 2:
                sync(pair.a)

    with watching(pair.a) as (_, watcher, _events):
        threads = [threading.Thread(target=plugin), threading.Thread(target=agent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert watcher.errors == []
    return written, plugin_errors


def test_memvault_and_obsidian_git_on_one_vault_lose_nothing_and_commit_nothing_twice(
    pair: Pair,
) -> None:
    for service in (pair.a, pair.b):
        git(service.root, "config", "user.name", "Person")
        git(service.root, "config", "user.email", "person@example.org")
    written, _plugin_errors = side_by_side(pair)
    assert len(written) == 8, "a memvault write failed beside obsidian-git"
    assert obsidian_git_round(pair.a.root, 99) is None  # the plugin's next round is clean
    assert sync(pair.a).error is None and sync(pair.b).error is None
    for memory_id in written:
        path = pair.b.get(memory_id).path
        added = git(pair.b.root, "log", "--diff-filter=A", "--format=%H", "--", path).split()
        assert len(added) == 1, f"{path} was committed as new {len(added)} times"
    assert git(pair.a.root, "status", "--porcelain") == ""
    git(pair.a.root, "fsck", "--no-progress")


def test_stopping_sync_after_writes_waits_for_a_sync_under_way(pair: Pair) -> None:
    timers, make = fake_timers()
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow_sync(service: MemoryService) -> None:
        started.set()
        release.wait(timeout=60)
        order.append("sync finished")

    after = AfterWrites(pair.a, 5.0, sync=slow_sync, timer=make)
    pair.a.remember("The wiki moved to a new host", type="fact")
    firing = threading.Thread(target=timers[-1].fire)
    firing.start()
    assert started.wait(timeout=60)

    def stop() -> None:
        after.stop()
        order.append("stopped")

    stopping = threading.Thread(target=stop)
    stopping.start()
    release.set()
    for thread in (firing, stopping):
        thread.join(timeout=60)
    assert order == ["sync finished", "stopped"]


def test_sync_uses_the_persons_own_ssh_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_SSH_COMMAND (say `ssh -i ~/.ssh/vault_key`) is the person's choice: memvault's
    batch-mode ssh is only the default."""
    create_vault(tmp_path / "v")
    git(tmp_path / "v", "remote", "add", "origin", "ssh://git@example.invalid/vault.git")
    called = tmp_path / "called"
    script = tmp_path / "my-ssh"
    script.write_text(f'#!/bin/sh\necho "$@" > {called}\nexit 1\n', encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(script))
    service = _open(tmp_path / "v")
    try:
        result = sync(service)
    finally:
        service.close()
    assert result.action == "offline" and called.exists()
    assert "example.invalid" in called.read_text(encoding="utf-8")


def test_a_pulled_ignore_rule_that_hides_notes_the_pull_edits_or_deletes_says_removed(
    pair: Pair,
) -> None:
    """A pull that edits the bike note and deletes the car note, hiding both: the index
    dropped them, but subscribers were told nothing (the pulled paths were left out)."""
    bike = pair.b.remember("The user's bike is a blue Brompton.", type="fact").memory
    car = pair.b.remember("The user's car is a red Fiat.", type="fact").memory
    assert bike is not None and car is not None
    sync(pair.b)
    sync(pair.a)
    root = pair.a.vault.root
    note = root / bike.path
    note.write_text(note.read_text().replace("blue", "green"))
    (root / car.path).unlink()
    events = pull_a_rule(pair, f"{bike.path}\n{car.path}\n", "edit and delete, hide both")
    assert [(e.added, e.changed, e.removed) for e in events] == [
        ((), (), tuple(sorted([bike.path, car.path])))
    ]
    assert pair.b.recall("Brompton") == [] and pair.b.recall("Fiat") == []
