"""A sync never silently brings back what a purge erased (real git, a bare remote and two
vaults in tmp_path)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.errors import MemvaultError
from memvault.service import MemoryService
from memvault.syncing import sync
from memvault.template import create_vault

from .helpers import git, git_objects

SECRET = "My diagnosis is XYZZYSECRET syndrome"


@pytest.fixture
def vaults(tmp_path: Path) -> Iterator[tuple[Path, MemoryService, MemoryService]]:
    """A bare remote, vault A holding the secret memory synced to it, and vault B cloned
    from it afterwards (so B holds the secret too)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-q", "--initial-branch=main", str(remote))
    create_vault(tmp_path / "a")
    git(tmp_path / "a", "remote", "add", "origin", str(remote))
    a = MemoryService.open(tmp_path / "a", Settings(embedder="none"))
    a.remember("Trains to the coast leave hourly", type="fact")
    a.remember(SECRET, type="fact")
    sync(a)
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    b = MemoryService.open(tmp_path / "b", Settings(embedder="none"))
    yield remote, a, b
    a.close()
    b.close()


def _holds_secret(repo: Path, rev: str = "--all") -> bool:
    """Whether any commit reachable from ``rev`` (default: any ref) of ``repo`` holds the
    text."""
    out = subprocess.run(
        ["git", "log", rev, "-p", "--format=%B"], cwd=repo, capture_output=True, check=True
    )
    return b"XYZZYSECRET" in out.stdout


def _purge(service: MemoryService) -> None:
    [path] = [p for p in service.root.rglob("*.md") if "XYZZY" in p.read_text()]
    service.forget(str(path.relative_to(service.root)), mode="purge")


def test_a_sync_after_a_purge_refuses_to_bring_the_remotes_old_history_back(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    remote, a, _ = vaults
    a.remember("Buses run all night on Saturdays", type="fact")  # after the secret: the
    sync(a)  # purge rewrites this commit too, and it is no other work on the remote
    _purge(a)
    head, tip = git(a.root, "rev-parse", "HEAD"), git(remote, "rev-parse", "main")
    with pytest.raises(MemvaultError) as raised:
        sync(a)
    said = str(raised.value)
    assert "this vault purged a memory" in said and "would bring it back" in said
    assert "`memvault sync --replace-remote`" in said and "Nothing was changed" in said
    assert git(a.root, "rev-parse", "HEAD") == head and not _holds_secret(a.root, "HEAD")
    assert git(remote, "rev-parse", "main") == tip
    assert not [h for h in a.recall("XYZZYSECRET", k=5) if "XYZZY" in h.snippet]
    assert _stored_anywhere(a.root)  # the fetch brought the remote's old history back
    replaced = sync(a, replace_remote=True)
    assert replaced.error is None and replaced.action == "replaced the remote's history"
    assert git(remote, "rev-parse", "main") == git(a.root, "rev-parse", "HEAD") == head
    assert not _holds_secret(remote) and not _stored_anywhere(a.root)
    again = sync(a, replace_remote=True)  # nothing left to replace: an ordinary sync
    assert again.error is None and again.action == "up to date"


def test_replace_remote_never_drops_work_no_purge_rewrote(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """The other machine pushed a memory on top of the old history: replacing the remote
    would lose it, so sync refuses, names it, and gives the manual way after copying it."""
    remote, a, b = vaults
    b.remember("Ferries leave from pier four", type="fact")
    sync(b)
    _purge(a)
    head, tip = git(a.root, "rev-parse", "HEAD"), git(remote, "rev-parse", "main")
    with pytest.raises(MemvaultError) as raised:
        sync(a, replace_remote=True)
    said = str(raised.value)
    assert "1 commit(s) no purge here rewrote" in said and "ferries-leave" in said
    assert "Nothing was changed" in said and "push --force-with-lease=main:" in said
    assert git(remote, "rev-parse", "main") == tip and git(a.root, "rev-parse", "HEAD") == head
    command = said.rsplit("`git -C", 1)[1].split("`", 1)[0].split()  # as given
    git(a.root, *command[1:])
    assert sync(a).action == "up to date" and not _holds_secret(remote)


def _stored_anywhere(repo: Path) -> bool:
    """Whether any object of ``repo`` (reachable or not) holds the secret text."""
    return b"xyzzysecret" in git_objects(repo)


def _secret_id(service: MemoryService) -> str:
    [hit] = [r for r in service.records() if "XYZZY" in (service.root / r.path).read_text()]
    return hit.id


def test_a_clone_takes_a_purge_made_elsewhere_and_keeps_its_own_unsynced_work(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """B cloned before A's purge and wrote since: its sync replays that work onto the
    purged history, and B no longer holds the purged text anywhere."""
    remote, a, b = vaults
    secret = _secret_id(b)
    b.access.hit([secret])
    assert b.access.of([secret])[secret].hits == 1
    a.remember("Buses run all night on Saturdays", type="fact")  # rewritten by the purge
    sync(a)
    sync(b)
    b.remember("Ferries leave from pier four", type="fact")  # not pushed yet
    _purge(a)
    assert sync(a, replace_remote=True).action == "replaced the remote's history"
    assert _stored_anywhere(b.root)
    result = sync(b)
    assert result.error is None and result.action == "took the remote's purge"
    assert result.pushed == 1 and git(remote, "rev-parse", "main") == git(
        b.root, "rev-parse", "HEAD"
    )
    assert not _stored_anywhere(b.root) and not _holds_secret(remote)
    assert not any("XYZZY" in p.read_text() for p in b.root.rglob("*.md"))
    assert [h.title for h in b.recall("pier four ferries", k=3)][:1] == [
        "Ferries leave from pier four"
    ]
    assert not [h for h in b.recall("XYZZYSECRET", k=5) if "XYZZY" in h.snippet]
    assert secret not in {r.id for r in b.records()} and b.access.of([secret])[secret].hits == 0
    assert sync(a).action == "fast-forward" and sync(b).action == "up to date"


def test_a_clone_whose_own_work_changed_the_purged_memory_refuses_and_changes_nothing(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    _, a, b = vaults
    b.update(_secret_id(b), content=SECRET + ", noted again on B")  # B's own edit of it
    _purge(a)
    git(a.root, "push", "-q", "--force", "origin", "main")  # the purge, finished on the remote
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError) as raised:
        sync(b)
    said = str(raised.value)
    assert "rewritten by a purge on another machine" in said and "nothing was changed" in said
    assert "--clone" in said and "log --name-status" in said
    assert git(b.root, "rev-parse", "HEAD") == head and git(b.root, "status", "--porcelain") == ""
    assert not (b.root / ".git" / "rebase-merge").exists()


def test_a_clone_that_still_reaches_purged_history_by_another_ref_refuses_to_sync_it_back(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    remote, a, b = vaults
    b.remember("Ferries leave from pier four", type="fact")  # not pushed yet
    git(b.root, "tag", "before-trip")  # a person's tag on the old history
    _purge(a)
    git(a.root, "push", "-q", "--force", "origin", "main")
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError) as raised:
        sync(b)
    said = str(raised.value)
    assert "rewritten by a purge on another machine" in said and "Nothing was changed" in said
    assert f"--clone {remote}" in said and "origin/main@{1}..HEAD" in said
    assert git(b.root, "rev-parse", "HEAD") == head
    assert not _holds_secret(remote)
    listed = git(b.root, "log", "--name-status", "--format=", "origin/main@{1}..HEAD")
    assert "ferries" in listed and "xyzzysecret" not in listed


def test_a_sync_after_a_purge_of_a_memory_the_remote_never_had_pushes_as_usual(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    remote, a, _ = vaults
    written = a.remember("A private note about XYZZYOTHER", type="fact")
    assert written.memory is not None
    a.forget(written.memory.id, mode="purge")
    result = sync(a)
    assert result.error is None and result.pushed >= 1
    assert git(remote, "rev-parse", "main") == git(a.root, "rev-parse", "HEAD")


def test_a_purge_before_any_sync_and_the_other_machines_work_integrate_either_way(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """Diverged histories that never held the purged memory on both sides are ordinary
    work: no refusal, no re-clone, nothing dropped, whichever machine syncs first."""
    _, a, b = vaults
    b.remember("Bob's team meets on Tuesdays at ten", type="fact")
    sync(b)  # the remote moved with the other machine's work
    pin = a.remember("My bank PIN hint is XYZZYPIN", type="fact")
    assert pin.memory is not None
    a.forget(pin.memory.id, mode="purge")  # never left this machine
    first = sync(a)
    assert first.error is None and first.action in ("rebased", "merged")
    c = b.remember("Ferries leave from pier four", type="fact")  # b's local work
    assert c.memory is not None
    second = sync(b)
    assert second.error is None and second.action in ("rebased", "merged")
    for side in (a, b):
        sync(side)
        texts = git(side.root, "log", "-p", "--format=", "HEAD")
        assert "Tuesdays at ten" in texts and "pier four" in texts
        assert "XYZZYPIN" not in git(side.root, "log", "--all", "-p", "--format=%B")


def test_a_clone_with_a_change_git_will_not_rebase_over_is_told_which_and_keeps_everything(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """A note replaced by a symlink (memvault never commits one): taking the purge would
    need a rebase git refuses; the refusal names the symlink, not the purge."""
    _, a, b = vaults
    [trains] = [r.path for r in b.records() if "Trains" in r.title]
    (b.root / trains).unlink()
    (b.root / trains).symlink_to("/etc/hostname")
    _purge(a)
    git(a.root, "push", "-q", "--force", "origin", "main")
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match="git will not rebase over uncommitted") as raised:
        sync(b)
    assert trains in str(raised.value) and git(b.root, "rev-parse", "HEAD") == head
    assert (b.root / trains).is_symlink() and _stored_anywhere(b.root)


def _traces(root: Path) -> list[str]:
    """Files under .memvault/ that hold the secret's text (index, vectors, state)."""
    return [
        str(p.relative_to(root))
        for p in (root / ".memvault").rglob("*")
        if p.is_file() and b"xyzzysecret" in p.read_bytes().lower()
    ]


def test_a_clone_that_took_a_purge_keeps_no_trace_of_it_in_its_index_or_state(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    _, a, b = vaults
    b.ensure_synced()
    assert _traces(b.root)  # indexed
    _purge(a)
    sync(a, replace_remote=True)
    assert sync(b).action == "took the remote's purge"
    assert _traces(b.root) == [] and not _stored_anywhere(b.root)


def _stash_a_draft(service: MemoryService) -> None:
    """A person's edit of the trains memory, stashed with git (never committed)."""
    [trains] = [r.path for r in service.records() if "Trains" in r.title]
    with open(service.root / trains, "a", encoding="utf-8") as handle:
        handle.write("\nA draft the person stashed.\n")
    git(service.root, "-c", "user.name=P", "-c", "user.email=p@example.org", "stash", "-q")


def test_replace_remote_keeps_a_stash_made_after_the_purge(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    _, a, _ = vaults
    _purge(a)
    _stash_a_draft(a)
    assert sync(a, replace_remote=True).action == "replaced the remote's history"
    assert git(a.root, "stash", "list").count("\n") == 1
    assert "A draft the person stashed." in git(a.root, "stash", "show", "-p")
    assert not _stored_anywhere(a.root)


def test_a_clone_with_a_stash_on_the_old_history_refuses_to_take_the_purge_and_keeps_it(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    _, a, b = vaults
    _stash_a_draft(b)
    _purge(a)
    sync(a, replace_remote=True)
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match="Other refs here still reach the purged history"):
        sync(b)
    assert git(b.root, "rev-parse", "HEAD") == head
    assert git(b.root, "stash", "list").count("\n") == 1


def test_a_clone_that_purged_too_refuses_to_take_another_machines_purge(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """Taking A's purged history would bring back what B purged (A's tree still holds it)."""
    remote, a, b = vaults
    [trains] = [r.id for r in b.records() if "Trains" in r.title]
    b.forget(trains, mode="purge")
    _purge(a)
    sync(a, replace_remote=True)
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(MemvaultError, match="also holds a purge made on another machine"):
        sync(b)
    assert git(b.root, "rev-parse", "HEAD") == head
    assert "Trains" not in git(b.root, "log", "-p", "--format=%B", "HEAD")
    assert git(remote, "rev-parse", "main") == git(a.root, "rev-parse", "HEAD")


def test_a_purge_without_the_rewrote_trailer_is_never_taken_by_guessing(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    """An older memvault's purge names no commits: judged by time, the clone's own unsynced
    commits would count as rewritten and be dropped, so it refuses instead."""
    _, a, b = vaults
    ferries = b.remember("Ferries leave from pier four", type="fact")
    assert ferries.memory is not None
    _purge(a)
    message = git(a.root, "log", "-1", "--format=%B")
    older = "\n".join(ln for ln in message.splitlines() if not ln.startswith("Memvault-Rewrote"))
    git(
        a.root,
        "-c",
        "user.name=P",
        "-c",
        "user.email=p@example.org",
        "commit",
        "-q",
        "--amend",
        "--allow-empty",
        "-m",
        older,
    )
    git(a.root, "push", "-q", "--force", "origin", "main")
    with pytest.raises(MemvaultError, match="older memvault"):
        sync(b)
    assert (b.root / ferries.memory.path).exists()


def test_two_purges_before_a_sync_replace_the_remote_in_one_go(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    remote, a, _ = vaults
    a.remember("Buses run all night on Saturdays", type="fact")
    sync(a)
    _purge(a)
    [trains] = [r.id for r in a.records() if "Trains" in r.title]
    a.forget(trains, mode="purge")
    assert sync(a, replace_remote=True).action == "replaced the remote's history"
    assert not _holds_secret(remote) and "hourly" not in git(remote, "log", "--all", "-p")


def test_replace_remote_refuses_while_another_branch_of_the_remote_holds_the_text(
    vaults: tuple[Path, MemoryService, MemoryService],
) -> None:
    remote, a, _ = vaults
    git(remote, "branch", "backup", "main")
    _purge(a)
    tip = git(remote, "rev-parse", "main")
    with pytest.raises(MemvaultError, match="remotes/origin/backup"):
        sync(a, replace_remote=True)
    assert git(remote, "rev-parse", "main") == tip
