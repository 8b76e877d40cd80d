"""Several processes on one vault: servers, the command line, a person's git, and the
locks a killed process leaves behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.history import History
from memvault.service import MemoryService

from .helpers import PERSON, git, git_objects, run_memvault, start_git, stop_git

HOUR = 3600.0
TEXT_ONLY = {"MEMVAULT_EMBEDDER": "none"}


@pytest.fixture
def persons_git(vault_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A person's long-running git in the vault, as `git log` in a pager: it holds no lock."""
    proc = start_git(vault_path)
    yield proc
    stop_git(proc)


def killed_gits_lock(vault: Path, age: float = HOUR) -> Path:
    """``.git/index.lock`` as a git killed ``age`` seconds ago left it."""
    lock = vault / ".git" / "index.lock"
    lock.write_bytes(b"")
    then = time.time() - age
    os.utime(lock, (then, then))
    return lock


def test_a_git_a_person_started_after_a_kill_does_not_keep_the_killed_gits_lock(
    vault_path: Path, persons_git: subprocess.Popen[str]
) -> None:
    lock = killed_gits_lock(vault_path)
    doctor = run_memvault("--vault", str(vault_path), "doctor", env=TEXT_ONLY)
    assert "stale_lock" in doctor.stdout and ".git/index.lock" in doctor.stdout
    assert lock.exists()  # doctor only reports

    added = run_memvault(
        "--vault", str(vault_path), "add", "The user rides a red bicycle to work.", env=TEXT_ONLY
    )

    assert added.returncode == 0, added.stderr
    assert "removed stale git lock" in added.stderr
    assert not lock.exists()
    assert "red bicycle" in git(vault_path, "show", "HEAD")
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_git_already_running_when_a_lock_was_written_still_protects_it(
    vault_path: Path, persons_git: subprocess.Popen[str]
) -> None:
    lock = killed_gits_lock(vault_path, age=0)
    later = lock.stat().st_mtime + HOUR
    history = History(vault_path)
    assert history.stale_locks(now=later) == []
    assert history.clear_stale_locks(now=later) == []
    assert lock.exists()


def test_a_full_reindex_keeps_a_running_servers_writes_visible_to_the_other_processes(
    vault_path: Path,
) -> None:
    server = MemoryService.open(vault_path, Settings(embedder="none"))  # Claude's server
    try:
        server.remember("The user keeps bees on the roof of the garage.")
        reindex = run_memvault("--vault", str(vault_path), "reindex", "--full", env=TEXT_ONLY)
        assert reindex.returncode == 0, reindex.stderr
        other = MemoryService.open(vault_path, Settings(embedder="none"))  # Cursor's server
        try:
            other.ensure_synced()
            result = server.remember("The user plays the cello on Sunday mornings.")
            assert result.memory is not None

            hits = other.recall("cello sunday", k=3)

            assert [h.id for h in hits][:1] == [result.memory.id]
            assert "bees" in " ".join(h.title for h in other.recall("bees garage", k=3))
        finally:
            other.close()
    finally:
        server.close()


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from memvault.vault import Vault
vault = Vault(Path(sys.argv[1]))
with vault.write_lock(30):
    text = "---\\nid: 01KILLEDWRITE000\\n---\\n# Killed\\n\\nThe user naps.\\n"
    vault.write("inbox/killed.md", text, "")
    os.kill(os.getpid(), signal.SIGKILL)  # before its commit
"""


def test_a_write_killed_before_its_commit_is_committed_by_a_watching_server_as_memvaults(
    person_vault: MemoryService,
) -> None:
    root = person_vault.root
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(root)], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert (root / "inbox/killed.md").exists()
    (root / "inbox/by-hand.md").write_text("# By hand\n\nThe person's own note.\n")

    # what the other server's watcher does with the two files it saw appear
    person_vault.commit_external(["inbox/killed.md", "inbox/by-hand.md"])

    ops = git(root, "log", "-2", "--format=%an|%(trailers:key=Memvault-Op,valueonly,separator=)")
    assert ops.splitlines() == [f"{PERSON}|external", "memvault|recover"]
    assert "inbox/killed.md" in git(root, "show", "--name-only", "HEAD~1")
    assert person_vault.vault.journal_paths() == set()
    assert git(root, "status", "--porcelain") == ""


KILL_GROUP_AWK = """#!/bin/sh
# a purge's message filter runs awk: the purging process and its git die there (kill -9)
read -r _ _ _ _ group _ < /proc/$$/stat
kill -9 "-$group"
exec {awk} "$@"
"""


def killed_purge(root: Path, memory_id: str, tools: Path) -> None:
    """`memvault forget --purge` killed (with its git) while git rewrites history."""
    tools.mkdir()
    (tools / "awk").write_text(KILL_GROUP_AWK.format(awk=shutil.which("awk")))
    (tools / "awk").chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    command = ["forget", memory_id, "--purge", "--yes"]
    purge = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "--vault", str(root), *command],
        env=env,
        capture_output=True,
        start_new_session=True,  # its own process group, as a host's server would be
        timeout=120,
        check=False,
    )
    assert purge.returncode == -signal.SIGKILL


def test_a_purge_killed_while_git_rewrites_history_leaves_no_scratch_files_to_commit(
    person_vault: MemoryService, tmp_path: Path
) -> None:
    root = person_vault.root
    memory = person_vault.remember("The user's locker code is zanzibar4417.").memory
    assert memory is not None
    killed_purge(root, memory.id, tmp_path / "tools")

    assert not (root / ".git-rewrite").exists()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert len(list((root / ".git").glob("memvault-purge-*"))) == 1  # its scratch, in .git
    added = run_memvault("--vault", str(root), "--json", "add", "The user swims on Fridays.")
    assert added.returncode == 0, added.stderr
    assert [p for p in git(root, "ls-files").splitlines() if "rewrite" in p] == []
    swim = json.loads(added.stdout)["id"]
    again = run_memvault("--vault", str(root), "forget", swim, "--purge", "--yes")
    assert again.returncode == 0, again.stderr
    assert list((root / ".git").glob("memvault-purge-*")) == []  # the next purge's cleanup


def test_a_purge_killed_after_its_file_went_can_be_run_again_and_erases_the_text(
    person_vault: MemoryService, tmp_path: Path
) -> None:
    root = person_vault.root
    memory = person_vault.remember("The user's locker code is quagmire9931.").memory
    assert memory is not None
    killed_purge(root, memory.id, tmp_path / "tools")
    assert not (root / memory.path).exists()  # its deletion was committed before the kill
    assert b"quagmire9931" in git_objects(root)
    doctor = run_memvault("--vault", str(root), "doctor")
    assert "unfinished_purge" in doctor.stdout
    assert f"memvault forget {memory.id} --purge" in doctor.stdout

    again = run_memvault("--vault", str(root), "forget", memory.id, "--purge", "--yes")

    assert again.returncode == 0, again.stderr
    assert f"purged {memory.path}" in again.stdout
    assert b"quagmire9931" not in git_objects(root)
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert "unfinished_purge" not in run_memvault("--vault", str(root), "doctor").stdout
    gone = run_memvault("--vault", str(root), "forget", memory.id, "--purge", "--yes")
    assert gone.returncode == 1 and "no memory with id" in gone.stderr  # nothing left


KILLED_FULL_REINDEX = """
import os, signal, sys
from pathlib import Path
from memvault.config import Settings
from memvault.service import MemoryService
service = MemoryService.open(Path(sys.argv[1]), Settings(embedder="none"))
service.reset_index()  # what `memvault reindex --full` does first
os.kill(os.getpid(), signal.SIGKILL)  # before it indexed the files again
"""


def test_a_server_finds_its_memories_again_after_a_full_reindex_killed_half_way(
    text_only: MemoryService,
) -> None:
    memory = text_only.remember("The user grows tomatoes on the balcony.").memory
    assert memory is not None
    assert [h.id for h in text_only.recall("tomatoes balcony", k=1)] == [memory.id]
    root = text_only.root
    killed = subprocess.run([sys.executable, "-c", KILLED_FULL_REINDEX, str(root)], check=False)
    assert killed.returncode == -signal.SIGKILL

    assert [h.id for h in text_only.recall("tomatoes balcony", k=1)] == [memory.id]


def test_a_persons_git_log_running_since_before_a_kill_does_not_keep_the_lock(
    vault_path: Path,
) -> None:
    """`git log` or `git show` left open in a pager all day takes no lock: it kept a killed
    git's lock from being removed, and every write was stuck until the person closed it."""
    (vault_path / "big.txt").write_text("a line the person scrolls past\n" * 20_000)
    git(vault_path, "add", "big.txt")
    git(vault_path, "commit", "-qm", "a big file")
    # its output fills the pipe nobody reads: it stays running, as in a pager
    reader = subprocess.Popen(
        ["git", "-C", str(vault_path), "--no-pager", "show", "HEAD:big.txt"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    try:
        assert reader.stdout.readline()  # it runs: started before the lock below
        lock = killed_gits_lock(vault_path, age=0)
        later = lock.stat().st_mtime + HOUR
        assert [s.path for s in History(vault_path).stale_locks(now=later)] == [".git/index.lock"]
        assert reader.poll() is None  # it was running all along
    finally:
        reader.communicate(timeout=30)
