"""The watcher and the vault under hostile files, dying threads and git run by hand.

Real watchdog observers on real files, real git; waits on Watcher.wait_for, never sleeps.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import reports
from memvault.cli import cli
from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.errors import UnsafePathError
from memvault.service import MemoryService

from .helpers import Watched, commit_count, git, watched_as_person
from .test_service import CRASH_SCRIPT

SECRET = "root:x:0:0:the-secret-outside-the-vault"


@pytest.fixture
def watched(service: MemoryService) -> Iterator[Watched]:
    with watched_as_person(service) as running:
        yield running


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the vault that a symlink points at."""
    target = tmp_path / "outside" / "passwd"
    target.parent.mkdir()
    target.write_text(SECRET + "\n", encoding="utf-8")
    return target


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def tracked(vault: Path) -> list[str]:
    return git(vault, "ls-files").split()


def last_commit_files(vault: Path) -> str:
    return git(vault, "log", "-1", "-M", "--name-status", "--format=").strip()


# -- 3: symlinks ----------------------------------------------------------------------
def test_a_symlink_in_a_burst_is_skipped_and_the_rest_is_indexed_and_committed(
    watched: Watched, outside: Path
) -> None:
    service, watcher, events = watched
    root = service.vault.root
    before = commit_count(root)
    os.symlink(outside, root / "facts" / "leak.md")
    write(root / "facts" / "normal.md", "---\ntype: fact\n---\nThe kettle is descaled monthly.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert commit_count(root) == before + 1
    assert last_commit_files(root) == "A\tfacts/normal.md"
    assert "facts/leak.md" not in tracked(root)
    assert service.recall("kettle descaled")[0].path == "facts/normal.md"
    assert all(h.path != "facts/leak.md" for h in service.recall("secret outside the vault"))
    assert "symlink" in watcher.skipped["facts/leak.md"] and watcher.errors == []
    assert all("facts/leak.md" not in e.changed for e in events)
    problems = run_checks(service.vault, service.history, "none")
    assert [p.kind for p in problems if p.path == "facts/leak.md"] == ["unsafe"]


def test_a_symlink_inside_the_vault_is_never_read_or_committed(watched: Watched) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    created = service.remember("The office plant needs water on Fridays.", type="fact")
    assert created.memory is not None
    os.symlink(root / created.memory.path, root / "facts" / "alias.md")
    write(root / "facts" / "after.md", "A note written right after the alias.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert "facts/alias.md" not in tracked(root) and "facts/after.md" in tracked(root)
    assert "facts/alias.md" in watcher.skipped
    with pytest.raises(UnsafePathError, match="symlink"):
        service.vault.read("facts/alias.md")


def test_opening_a_vault_with_a_symlink_commits_the_person_edit_but_never_the_link(
    vault_path: Path, outside: Path
) -> None:
    os.symlink(outside, vault_path / "facts" / "leak.md")
    write(vault_path / "facts" / "hand.md", "---\ntype: fact\n---\nWritten while memvault slept.\n")
    before = commit_count(vault_path)
    svc = MemoryService.open(vault_path, Settings(embedder="none"))  # as `add` or `serve` does
    try:
        assert commit_count(vault_path) == before + 1
        assert last_commit_files(vault_path) == "A\tfacts/hand.md"
        assert "facts/leak.md" not in tracked(vault_path)
        assert git(vault_path, "status", "--porcelain").strip() == "?? facts/leak.md"
        result = svc.remember("A write after the symlink appeared.", type="fact")
        assert result.commit is not None and "facts/leak.md" not in tracked(vault_path)
    finally:
        svc.close()


# -- 4: FIFOs and other non-regular files -----------------------------------------------
def test_a_fifo_named_md_is_skipped_and_the_watcher_keeps_indexing(watched: Watched) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    os.mkfifo(root / "facts" / "pipe.md")
    write(root / "facts" / "later.md", "---\ntype: fact\n---\nThe bike lock code is in the app.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)  # opening the FIFO would block here
    write(root / "facts" / "last.md", "A third edit, after the FIFO burst.\n")
    assert watcher.wait_for(lambda: watcher.commits == 2)
    assert service.recall("bike lock code")[0].path == "facts/later.md"
    assert "facts/pipe.md" not in tracked(root) and watcher.errors == []
    assert "not a regular file" in watcher.skipped["facts/pipe.md"]


def test_status_list_and_lookups_work_with_a_fifo_in_the_vault(service: MemoryService) -> None:
    created = service.remember("Status survives odd files.", type="fact")
    assert created.memory is not None
    os.mkfifo(service.vault.root / "facts" / "pipe.md")
    status = reports.status(service)  # what vault_status returns
    assert status.memories == 1 and status.problems == 1
    assert [p.kind for p in service.problems()] == ["unsafe"]
    assert all("facts/pipe.md" not in paths for paths in service.vault.id_map().values())
    assert service.get(created.memory.id).path == created.memory.path
    assert [m.path for m in service.list_memories().memories] == [created.memory.path]
    with pytest.raises(UnsafePathError, match="not a regular file"):
        service.vault.read("facts/pipe.md")


# -- 8: what is watched, and a dead observer -------------------------------------------
def test_git_and_state_folders_are_never_watched(watched: Watched) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    for n in range(20):
        (root / ".memvault" / f"probe-{n}.tmp").write_text("noise")
        (root / ".git" / f"probe-{n}").write_text("noise")
    write(root / "facts" / "signal.md", "The signal after the noise.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert watcher.ignored == 0
    watched_paths = [Path(e.watch.path) for e in watcher.observer.emitters]
    assert root / "facts" in watched_paths
    assert not [p for p in watched_paths if {".git", ".memvault"} & set(p.parts)]


def test_a_new_top_level_folder_is_watched_including_files_written_at_once(
    watched: Watched,
) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    write(root / "projects" / "deep" / "plan.md", "The rollout plan has three phases.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    write(root / "projects" / "deep" / "second.md", "A second file in the new folder.\n")
    assert watcher.wait_for(lambda: watcher.commits == 2)
    assert {"projects/deep/plan.md", "projects/deep/second.md"} <= set(tracked(root))


def test_a_stopped_observer_is_restarted_and_edits_made_meanwhile_are_found(
    watched: Watched,
) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    dead = watcher.observer
    dead.stop()
    dead.join(timeout=5)
    write(root / "facts" / "unseen.md", "Written while the observer was dead.\n")
    assert watcher.wait_for(lambda: watcher.restarts == 1 and watcher.commits == 1)
    assert watcher.observer is not dead and "facts/unseen.md" in tracked(root)
    write(root / "facts" / "seen.md", "Written after the restart.\n")
    assert watcher.wait_for(lambda: watcher.commits == 2)
    assert service.recall("written after the restart")[0].path == "facts/seen.md"


def test_a_dead_event_thread_is_detected_and_the_watcher_restarts(
    watched: Watched, caplog: pytest.LogCaptureFixture
) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    emitter = next(e for e in watcher.observer.emitters if Path(e.watch.path) == root / "facts")
    emitter.stop()
    emitter.join(timeout=5)
    with caplog.at_level(logging.WARNING, logger="memvault.watcher"):
        assert watcher.wait_for(lambda: watcher.restarts == 1)
    assert any("restarting" in r.getMessage() for r in caplog.records)
    write(root / "facts" / "after-death.md", "An edit after the event thread died.\n")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert "facts/after-death.md" in tracked(root)


# -- 11: read commands never write; a person's edits are the person's -------------------
def invoke(vault: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_read_commands_never_commit_a_hand_edit(
    vault_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    invoke(vault_path, "add", "The fridge is defrosted in spring.", "--type", "fact")
    path = next(vault_path.glob("facts/*.md"))
    path.write_text(path.read_text().replace("spring", "autumn"), encoding="utf-8")
    rel = path.relative_to(vault_path).as_posix()
    before, porcelain = commit_count(vault_path), git(vault_path, "status", "--porcelain")
    with caplog.at_level(logging.WARNING):
        for args in (["status"], ["list"], ["show", rel], ["log"], ["search", "fridge"]):
            invoke(vault_path, *args)
        invoke(vault_path, "export")
    assert commit_count(vault_path) == before
    assert git(vault_path, "status", "--porcelain") == porcelain != ""
    assert "autumn" in path.read_text()
    assert not [r for r in caplog.records if r.name.startswith("memvault")]


def test_a_write_command_commits_a_hand_edit_as_external_with_the_persons_identity(
    vault_path: Path,
) -> None:
    git(vault_path, "config", "user.name", "Ada Person")
    git(vault_path, "config", "user.email", "ada@example.org")
    write(vault_path / "facts" / "hand.md", "---\ntype: fact\n---\nA hand-written fact.\n")
    before = commit_count(vault_path)
    invoke(vault_path, "add", "A fact added through the command line.", "--type", "fact")
    assert commit_count(vault_path) == before + 2
    authors = git(vault_path, "log", "-2", "--format=%an|%(trailers:key=Memvault-Op,valueonly)")
    lines = [line for line in authors.splitlines() if line.strip()]
    assert lines == ["memvault|remember", "Ada Person|external"]
    assert git(vault_path, "log", "-1", "--skip=1", "--format=%s").strip() == (
        "external: facts/hand.md"
    )


def test_a_persons_author_setting_never_signs_memvaults_commits_but_signs_their_edits(
    vault_path: Path,
) -> None:
    # git's author.* and committer.* outrank user.*: set in a person's config they used to
    # put the person's name on the agent's commits, and hide who wrote what
    git(vault_path, "config", "user.name", "Ada Person")
    git(vault_path, "config", "author.name", "Ada Author")
    git(vault_path, "config", "author.email", "ada@example.org")
    git(vault_path, "config", "committer.name", "Ada Committer")
    write(vault_path / "facts" / "hand.md", "---\ntype: fact\n---\nA hand-written fact.\n")
    invoke(vault_path, "add", "A fact added through the command line.", "--type", "fact")
    signed = git(vault_path, "log", "-2", "--format=%an <%ae> / %cn <%ce>").splitlines()
    assert signed == [
        "memvault <memvault@localhost> / memvault <memvault@localhost>",
        "Ada Author <ada@example.org> / Ada Author <ada@example.org>",
    ]


def test_a_crash_leftover_is_recovered_by_memvault_and_a_hand_edit_is_the_persons(
    vault_path: Path,
) -> None:
    git(vault_path, "config", "user.name", "Ada Person")
    git(vault_path, "config", "user.email", "ada@example.org")
    proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(vault_path)], check=False)
    assert proc.returncode == -9
    write(vault_path / "inbox" / "by-hand.md", "Typed by a person meanwhile.\n")
    before = commit_count(vault_path)
    MemoryService.open(vault_path, Settings(embedder="none")).close()
    assert commit_count(vault_path) == before + 2
    fmt = "--format=%ae|%(trailers:key=Memvault-Op,valueonly)"
    latest = git(vault_path, "log", "-1", "--name-only", fmt).split()
    earlier = git(vault_path, "log", "-1", "--skip=1", "--name-only", fmt).split()
    assert latest == ["ada@example.org|external", "inbox/by-hand.md"]
    assert earlier[0] == "memvault@localhost|recover" and earlier[1].startswith("facts/")
    assert git(vault_path, "status", "--porcelain").strip() == ""


# -- 12: git mv under a running watcher ---------------------------------------------------
def test_git_mv_under_a_running_watcher_is_one_rename_commit(watched: Watched) -> None:
    service, watcher, _ = watched
    root = service.vault.root
    created = service.remember("The spare key is under the blue pot.", type="fact")
    assert created.memory is not None
    before = commit_count(root)
    git(root, "mv", created.memory.path, "facts/spare-key.md")
    assert watcher.wait_for(lambda: watcher.commits == 1)
    assert commit_count(root) == before + 1
    status = last_commit_files(root).split("\t")
    assert status[0].startswith("R") and status[1:] == [created.memory.path, "facts/spare-key.md"]
    assert git(root, "status", "--porcelain").strip() == ""
    assert git(root, "log", "-1", "--format=%an").strip() == "Ada Person"
    assert service.get(created.memory.id).path == "facts/spare-key.md"
