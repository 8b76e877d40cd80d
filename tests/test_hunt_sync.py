"""Hostile and odd content arriving by sync, and conflicts (real git: a bare remote, two
vaults and a plain git clone standing for another machine, in tmp_path)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.errors import InvalidInputError, MemvaultError
from memvault.models import ChangeEvent, Memory
from memvault.reports import status
from memvault.service import MemoryService
from memvault.syncing import clone_vault, sync
from memvault.template import create_vault

from .helpers import Pair, git, synced_pair


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """A bare remote, vault A pushed to it, vault B cloned from it."""
    with synced_pair(tmp_path) as made:
        yield made


def _push_from_elsewhere(pair: Pair, files: dict[str, bytes], message: str) -> Path:
    """Commit ``files`` in a plain git clone of the remote (another machine) and push."""
    other = pair.remote.parent / "elsewhere"
    if other.exists():
        git(other, "pull", "-q")
    else:
        git(pair.remote.parent, "clone", "-q", str(pair.remote), str(other))
    for rel, data in files.items():
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_bytes(data)
    git(other, "add", "-A", "--force")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", message)
    git(other, "push", "-q")
    return other


def _shared(pair: Pair, text: str, type: str = "preference") -> Memory:
    """A memory on both sides: written on A, synced to B."""
    written = pair.a.remember(text, type=type).memory
    assert written is not None
    sync(pair.a)
    sync(pair.b)
    return written


def test_a_remote_that_commits_memvaults_state_folder_is_refused_and_changes_nothing(
    pair: Pair,
) -> None:
    # git overwrites the files it ignores: the other machine's index would replace this
    # one's (Whoosh unpickles it), and the tracked state would stop every later sync
    sync(pair.b)
    state = pair.b.root / ".memvault" / "sync.json"
    head = git(pair.b.root, "rev-parse", "HEAD")
    other = _push_from_elsewhere(
        pair,
        {".memvault/sync.json": b"{}", "facts/ferry.md": b"# Ferry\n\nThe ferry leaves at 9\n"},
        "a vault with its state",
    )
    with pytest.raises(MemvaultError, match=r"state folder \.memvault/.*git rm -r --cached"):
        sync(pair.b)
    assert git(pair.b.root, "rev-parse", "HEAD") == head
    assert json.loads(state.read_text(encoding="utf-8"))["action"] == "refused"  # not `{}`
    assert git(pair.b.root, "status", "--porcelain") == ""
    git(other, "rm", "-r", "-q", "--cached", ".memvault")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "untrack")
    git(other, "push", "-q")
    assert sync(pair.b).action == "fast-forward"
    assert "ferry leaves at 9" in pair.b.get("facts/ferry.md").body
    pair.a.remember("Coffee is in the third cupboard", type="fact")
    sync(pair.a)
    pair.b.remember("Tea is in the second cupboard", type="fact")
    assert sync(pair.b).error is None  # no tracked state file stops a rebase


def test_a_vault_whose_history_tracked_the_state_folder_syncs_once_it_is_untracked(
    pair: Pair,
) -> None:
    """A vault that took a tracked .memvault/ with plain git (obsidian-git) was refused
    for ever: the remote's untracking commit was a change to the state folder too."""
    sync(pair.b)
    other = _push_from_elsewhere(pair, {".memvault/stray.txt": b"x"}, "tracked by mistake")
    git(pair.b.root, "pull", "-q", "--no-rebase", "origin", "main")
    git(other, "rm", "-r", "-q", "--cached", ".memvault")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "untrack")
    git(other, "push", "-q")
    result = sync(pair.b)
    assert result.error is None and result.action == "fast-forward"
    assert git(pair.b.root, "ls-files", ".memvault") == ""


def test_a_memory_that_is_not_utf8_edited_on_both_sides_keeps_both_and_is_a_conflict(
    pair: Pair,
) -> None:
    path = _shared(pair, "Reports are written in British English").path
    on_a, on_b = pair.a.root / path, pair.b.root / path
    on_a.write_bytes(on_a.read_bytes().replace(b"British English", b"English, no Oxford comma"))
    on_b.write_bytes(on_b.read_bytes().replace(b"British English", b"Fran\xe7ais (caf\xe9)"))
    sync(pair.a)
    result = sync(pair.b)
    assert result.action == "merged" and result.conflicts == (path,)
    kept = on_b.read_bytes()
    assert b"no Oxford comma" in kept and b"Fran\xe7ais (caf\xe9)" in kept
    assert b"## Conflicting version (from origin, " in kept
    assert git(pair.b.root, "status", "--porcelain") == ""


def test_a_memory_moved_to_two_places_on_two_machines_merges_and_keeps_both_copies(
    pair: Pair,
) -> None:
    written = _shared(pair, "The staging database is called heron", "fact")
    pair.a.forget(written.id, mode="archive")  # to archive/facts/
    git(pair.b.root, "mv", written.path, "projects/heron.md")  # moved by hand
    git(pair.b.root, "commit", "-qm", "moved by hand")
    sync(pair.a)
    result = sync(pair.b)  # was an AssertionError, the vault left mid-merge
    assert result.action == "merged" and result.error is None
    assert git(pair.b.root, "status", "--porcelain") == ""
    assert not (pair.b.root / written.path).exists()
    assert (pair.b.root / "projects/heron.md").exists()
    assert "heron" in pair.b.get(written.id).body
    found = run_checks(pair.b.vault, pair.b.history, "none")
    assert [p.kind for p in found if p.path == "projects/heron.md"] == ["duplicate_id"]


def test_a_vault_started_apart_takes_the_remote_but_never_its_state_folder(
    pair: Pair, tmp_path: Path
) -> None:
    other = _push_from_elsewhere(pair, {".memvault/index/x.toc": b"pickled"}, "state")
    create_vault(tmp_path / "d")  # `memvault init` on a third machine, then the same remote
    git(tmp_path / "d", "remote", "add", "origin", str(pair.remote))
    apart = MemoryService.open(tmp_path / "d", Settings(embedder="none"))
    try:
        written = apart.remember("Deploys happen on Tuesdays", type="fact").memory
        assert written is not None
        with pytest.raises(MemvaultError, match=r"state folder \.memvault/ \(\.memvault/index"):
            sync(apart)
        assert not (tmp_path / "d/.memvault/index/x.toc").exists()
        git(other, "rm", "-r", "-q", "--cached", ".memvault")
        git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "untrack")
        git(other, "push", "-q")
        pair.a.remember("The staging database is called heron", type="fact")
        sync(pair.a)
        assert sync(apart).error is None
        assert {h.path for h in apart.recall("staging database heron")}
        assert apart.get(written.id).path == written.path
    finally:
        apart.close()


def test_a_memory_the_remote_replaced_by_a_symlink_is_reported_gone_to_subscribers(
    pair: Pair,
) -> None:
    written = _shared(pair, "The staging database is called heron", "fact")
    other = pair.remote.parent / "elsewhere"
    git(pair.remote.parent, "clone", "-q", str(pair.remote), str(other))
    (other / written.path).unlink()
    (other / written.path).symlink_to("/etc/passwd")
    git(other, "add", "-A")
    git(other, "-c", "user.name=Other", "-c", "user.email=o@x", "commit", "-qm", "a link")
    git(other, "push", "-q")
    events: list[ChangeEvent] = []
    pair.b.listeners.append(events.append)
    result = sync(pair.b)
    assert result.changed == (written.path,)
    assert [e.removed for e in events] == [(written.path,)]
    assert pair.b.recall("staging database heron") == []


def test_two_memories_that_chose_one_name_on_two_machines_stay_two_memories(pair: Pair) -> None:
    on_a = pair.a.remember("Dentist appointment is on 3 March at 10:00", title="Dentist").memory
    on_b = pair.b.remember("The dentist is Dr Ruiz on Elm Street", title="Dentist").memory
    assert on_a is not None and on_b is not None and on_a.path == on_b.path
    sync(pair.a)
    result = sync(pair.b)  # were merged into one memory in conflict, A's id gone
    assert result.conflicts == () and result.error is None
    sync(pair.a)
    for service in (pair.a, pair.b):
        assert "3 March" in service.get(on_a.id).body
        assert "Dr Ruiz" in service.get(on_b.id).body
        assert service.get(on_a.id).path != service.get(on_b.id).path
        assert "Conflicting version" not in service.get(on_b.id).body
        assert git(service.root, "status", "--porcelain") == ""


def test_cloning_a_remote_that_tracks_memvaults_state_folder_is_refused_and_leaves_nothing(
    pair: Pair, tmp_path: Path
) -> None:
    sync(pair.a)
    git(pair.a.root, "add", "--force", ".memvault/index")  # another machine's index
    git(pair.a.root, "commit", "-qm", "everything")
    git(pair.a.root, "push", "-q")
    with pytest.raises(MemvaultError, match=r"state folder \.memvault/.*then clone again"):
        clone_vault(str(pair.remote), tmp_path / "e")
    assert not (tmp_path / "e").exists()


def test_a_union_merge_attribute_never_glues_two_versions_of_a_memory_together(
    pair: Pair,
) -> None:
    (pair.a.root / ".gitattributes").write_text("* merge=union\n", encoding="utf-8")
    (pair.a.root / "shopping.txt").write_text("milk\n", encoding="utf-8")
    path = _shared(pair, "Reports are written in British English").path  # the attribute too
    memory_id = pair.a.get(path).id
    (pair.a.root / "shopping.txt").write_text("milk\neggs\n", encoding="utf-8")
    (pair.b.root / "shopping.txt").write_text("milk\nbread\n", encoding="utf-8")
    pair.a.update(memory_id, content="Reports use British English, no Oxford comma")
    pair.a.update(memory_id, fields={"tags": ["style"]})
    pair.b.update(memory_id, content="Reports use American English since March")
    pair.b.update(memory_id, fields={"tags": ["writing"]})
    sync(pair.a)
    result = sync(pair.b)  # was `rebased`: both bodies in one, `tags:` written twice
    assert result.conflicts == (path,)
    merged = pair.b.get(memory_id)
    assert sorted(merged.tags) == ["style", "writing"] and merged.status == "conflict"
    assert (pair.b.root / path).read_text(encoding="utf-8").count("tags:") == 1
    assert "## Conflicting version" in merged.body
    found = run_checks(pair.b.vault, pair.b.history, "none")
    assert [p.kind for p in found if p.path == path] == ["conflict"]
    shopping = (pair.b.root / "shopping.txt").read_text(encoding="utf-8")  # not a note:
    assert "eggs" in shopping and "bread" in shopping  # the union the person asked for


def test_a_fast_forward_stopped_by_a_link_memvault_never_commits_names_it(pair: Pair) -> None:
    sync(pair.b)
    (pair.b.root / "facts/host.md").symlink_to("/etc/hostname")  # never committed
    _push_from_elsewhere(pair, {"facts/host.md": b"# Host\n\nThe host is wren\n"}, "a note")
    head = git(pair.b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match=r"git will not fast-forward .*facts/host\.md"):
        sync(pair.b)  # was git's own error, naming none of memvault's reasons
    assert git(pair.b.root, "rev-parse", "HEAD") == head


def test_a_branch_tracking_the_remotes_branch_of_another_name_is_refused_not_split_off(
    pair: Pair,
) -> None:
    git(pair.b.root, "branch", "-m", "main", "master")
    git(pair.b.root, "branch", "-u", "origin/main")  # as a person sets it up
    pair.b.remember("Tea is served at four", type="fact")
    head = git(pair.b.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match=r"tracks origin/main.*branch -m main"):
        sync(pair.b)  # was "nothing on the remote yet", and a new branch master pushed
    assert git(pair.remote, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(pair.b.root, "rev-parse", "HEAD") == head


def test_a_remote_holding_other_branches_but_not_this_one_is_not_given_a_new_one(
    pair: Pair,
) -> None:
    git(pair.b.root, "branch", "-m", "main", "master")
    git(pair.b.root, "branch", "--unset-upstream")
    with pytest.raises(InvalidInputError, match=r"origin has no branch master .*: main\)"):
        sync(pair.b)
    assert git(pair.remote, "branch", "--format=%(refname:short)").split() == ["main"]
    git(pair.b.root, "push", "-q", "-u", "origin", "master")  # the person means it
    assert sync(pair.b).error is None


def test_status_shows_a_refused_sync_not_the_last_one_that_went_well(pair: Pair) -> None:
    assert sync(pair.b).action == "up to date"
    (pair.b.root / "facts/host.md").symlink_to("/etc/hostname")
    _push_from_elsewhere(pair, {"facts/host.md": b"# Host\n\nThe host is wren\n"}, "a note")
    with pytest.raises(MemvaultError) as refused:
        sync(pair.b)
    last = status(pair.b).sync
    assert last is not None and last["action"] == "refused"  # was the earlier `up to date`
    assert last["error"] == str(refused.value)


def test_the_log_of_a_memory_two_machines_filed_at_one_path_is_its_own(pair: Pair) -> None:
    """After the sync moved one of them to `-2`, the log of the one that stayed listed the
    other's creation too (git follows the path, on both sides of the merge)."""
    on_a = pair.a.remember("Dentist appointment is on 3 March at 10:00", title="Dentist").memory
    on_b = pair.b.remember("The dentist is Dr Ruiz on Elm Street", title="Dentist").memory
    assert on_a is not None and on_b is not None
    sync(pair.a)
    sync(pair.b)
    for memory in (on_a, on_b):
        subjects = [c.subject for c in pair.b.log(memory.id)]
        assert len([s for s in subjects if s.startswith("remember:")]) == 1, subjects
        assert pair.b.log(pair.b.get(memory.id).path) == pair.b.log(memory.id)


def test_the_log_of_a_memory_the_sync_moved_to_2_keeps_its_start_once_archived(
    pair: Pair,
) -> None:
    on_a = pair.a.remember("Dentist appointment is on 3 March at 10:00", title="Dentist").memory
    pair.b.remember("The dentist is Dr Ruiz on Elm Street", title="Dentist")
    assert on_a is not None
    sync(pair.a)
    sync(pair.b)
    pair.b.forget(on_a.id)  # archived: moved from its -2 path
    subjects = [c.subject.split(":")[0] for c in pair.b.log(on_a.id)]
    assert subjects == ["forget", "sync", "remember"]
