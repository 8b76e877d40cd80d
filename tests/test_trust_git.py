"""Trust under crashes (issue 13): git locks left by a killed git, and purge that erases."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from memvault import stashes
from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.errors import GitError, InvalidInputError
from memvault.history import CLONE_WARNING, STALE_LOCK_SECONDS, History
from memvault.provenance import Provenance
from memvault.server import build_server
from memvault.service import MemoryService
from memvault.text import tokens

from .helpers import commit_count, git, git_objects, run_memvault, start_git, stop_git, watching

HOUR = 3600.0
MARKER = "zebra-quartz-7731"


def leave_lock(vault: Path, rel: str, age: float = HOUR) -> Path:
    """A lock file as a killed git leaves it, last written ``age`` seconds ago."""
    path = vault / ".git" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.fixture
def live_git(vault_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A real git process working in the vault."""
    proc = start_git(vault_path)
    yield proc
    if proc.poll() is None:
        stop_git(proc)


# -- 1. stale git locks ----------------------------------------------------------------
@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_a_write_removes_a_lock_left_by_a_killed_git_with_a_warning_naming_it(
    text_only: MemoryService, caplog: pytest.LogCaptureFixture, lock: str
) -> None:
    vault = text_only.vault.root
    path = leave_lock(vault, lock)
    before = commit_count(vault)
    with caplog.at_level(logging.WARNING, logger="memvault.history"):
        created = text_only.remember("The user keeps spare keys in the blue drawer.", type="fact")
    assert created.commit is not None
    assert commit_count(vault) == before + 1
    assert not path.exists()
    removed = [r.getMessage() for r in caplog.records if "stale git lock" in r.getMessage()]
    assert len(removed) == 1 and str(path) in removed[0]


def test_opening_a_vault_with_a_stale_lock_commits_the_left_over_edits(
    vault_path: Path,
) -> None:
    lock = leave_lock(vault_path, "index.lock")
    (vault_path / "facts").mkdir(exist_ok=True)
    (vault_path / "facts" / "by-hand.md").write_text("# By hand\n\nWritten by a person.\n")
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert not lock.exists()
        assert service.history.uncommitted() == []
        assert "facts/by-hand.md" in git(vault_path, "log", "-1", "--name-only")
    finally:
        service.close()


def test_doctor_reports_stale_locks_and_leftover_next_index_locks_without_removing_them(
    text_only: MemoryService,
) -> None:
    vault = text_only.vault.root
    index_lock = leave_lock(vault, "index.lock")
    next_index = leave_lock(vault, "next-index-4242.lock")
    problems = run_checks(text_only.vault, text_only.history, "none")
    found = {p.path for p in problems if p.kind == "stale_lock"}
    assert found == {".git/index.lock", ".git/next-index-4242.lock"}
    assert index_lock.exists() and next_index.exists()
    proc = run_memvault("--vault", str(vault), "doctor", env={"MEMVAULT_EMBEDDER": "none"})
    assert "stale_lock" in proc.stdout and ".git/next-index-4242.lock" in proc.stdout
    assert index_lock.exists()


def test_doctor_finds_nothing_when_no_lock_is_left(text_only: MemoryService) -> None:
    problems = run_checks(text_only.vault, text_only.history, "none")
    assert [p for p in problems if p.kind == "stale_lock"] == []


def test_a_lock_younger_than_the_safe_age_is_not_stale(vault_path: Path) -> None:
    history = History(vault_path)
    lock = leave_lock(vault_path, "index.lock", age=0)
    written = lock.stat().st_mtime
    assert history.stale_locks(now=written + STALE_LOCK_SECONDS / 2) == []
    assert history.clear_stale_locks(now=written + STALE_LOCK_SECONDS / 2) == []
    assert lock.exists()
    later = history.stale_locks(now=written + STALE_LOCK_SECONDS + 1)
    assert [s.path for s in later] == [".git/index.lock"]


def test_a_lock_is_never_removed_while_a_git_process_works_in_the_vault(
    vault_path: Path, live_git: subprocess.Popen[str]
) -> None:
    history = History(vault_path, lock_retry_seconds=0.3)
    lock = leave_lock(vault_path, "index.lock", age=0)  # written while that git runs
    later = lock.stat().st_mtime + HOUR
    (vault_path / "note.md").write_text("# Note\n\nA note.\n")
    assert history.stale_locks(now=later) == []
    assert history.clear_stale_locks(now=later) == []
    with pytest.raises(GitError, match=r"index\.lock"):
        history.commit(["note.md"], "add: note")  # keeps retrying, then gives up
    assert lock.exists()
    stop_git(live_git)
    assert [s.path for s in history.clear_stale_locks(now=later)] == [".git/index.lock"]
    assert history.commit(["note.md"], "add: note") is not None


def test_a_git_run_with_dash_c_from_elsewhere_counts_as_working_in_the_vault(
    vault_path: Path, tmp_path: Path
) -> None:
    proc = start_git(tmp_path, "-C", str(vault_path))
    later = leave_lock(vault_path, "index.lock", age=0).stat().st_mtime + HOUR
    try:
        assert History(vault_path).stale_locks(now=later) == []
    finally:
        stop_git(proc)
    assert len(History(vault_path).stale_locks(now=later)) == 1


def test_a_git_process_in_another_folder_does_not_protect_the_vaults_locks(
    vault_path: Path, tmp_path: Path
) -> None:
    leave_lock(vault_path, "index.lock")
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", str(elsewhere))
    proc = start_git(elsewhere)
    try:
        assert len(History(vault_path).stale_locks()) == 1
    finally:
        stop_git(proc)


def test_without_proc_only_a_much_older_lock_counts_as_stale(
    vault_path: Path, tmp_path: Path
) -> None:
    history = History(vault_path)
    no_proc = tmp_path / "no-proc"
    written = leave_lock(vault_path, "index.lock").stat().st_mtime
    assert history.stale_locks(now=written + 60, proc=no_proc) == []
    assert len(history.stale_locks(now=written + 600, proc=no_proc)) == 1


# -- 7. purge erases every byte ------------------------------------------------------
def files_containing(root: Path, needles: list[bytes]) -> dict[str, list[str]]:
    """needle -> files under ``root`` (all of them: .git and .memvault too) holding it."""
    found: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes().lower()
            for needle in needles:
                if needle in data:
                    found.setdefault(needle.decode(), []).append(str(path.relative_to(root)))
    return found


def test_purge_leaves_no_byte_of_the_text_anywhere_under_the_vault(
    service: MemoryService,
) -> None:
    vault = service.vault.root
    # The marker and the words the analyzer stores ("7731" is left out: hex shas may hold it)
    needles = [MARKER.encode(), *(t.encode() for t in tokens(MARKER) if not t.isdigit())]
    content = f"The locker code hint is {MARKER}, do not share it."
    created = service.remember(content, type="fact", title=f"Locker {MARKER}")
    assert created.memory is not None
    service.update(created.memory.id, content=content + " Updated once.")
    service.remember("The user drinks oat milk in coffee.", type="fact")
    assert service.search(MARKER)  # the index (and the query cache) hold it
    service.vault.id_map()  # the id catalog names its path
    before = files_containing(vault, needles)
    assert any(f.startswith(".memvault/index/text/") for f in before[MARKER])
    assert any(f.startswith(".memvault/index/store.sqlite") for f in before["quartz"])
    service.forget(created.memory.id, mode="purge", reason="privacy request")
    assert files_containing(vault, needles) == {}
    objects = git_objects(vault)
    assert [n for n in needles if n in objects] == []
    assert [h.doc.title for h in service.search("oat milk coffee")] == [
        "The user drinks oat milk in coffee."
    ]
    assert created.memory.id not in {h.doc.id for h in service.search(MARKER)}


def test_purging_a_memory_that_superseded_another_keeps_the_other_and_its_history(
    text_only: MemoryService,
) -> None:
    """git log --follow also follows copies: the superseded file (similar text, changed
    in the same commit) must not be taken for a former name of the purged one."""
    vault = text_only.vault.root
    old = text_only.remember("The user's gym is on Elm Street.", type="fact")
    assert old.memory is not None
    new = text_only.remember(
        f"The user's gym moved to {MARKER} Road.",
        type="fact",
        title=f"Gym at {MARKER}",
        supersedes=[old.memory.id],
    )
    assert new.memory is not None
    assert text_only.history.names_in_history(new.memory.path) == [new.memory.path]
    result = text_only.forget(new.memory.id, mode="purge")
    assert (vault / old.memory.path).is_file()
    assert git(vault, "status", "--porcelain") == ""
    subjects = git(vault, "log", "--format=%s", "--", old.memory.path).splitlines()
    assert subjects == ["remember: (purged)", f"remember: {old.memory.path}"]
    assert MARKER not in git(vault, "log", "--all", "--format=%B")
    assert MARKER.encode() not in git_objects(vault)
    assert result.erased[0] == "git history (2 commits rewritten)"  # + the deletion


def test_purging_an_archived_memory_keeps_the_memory_written_since_at_its_old_path(
    text_only: MemoryService,
) -> None:
    """A purge takes out the memory's versions, not its paths: a later memory written at
    the path the purged one had before its archive keeps its file and its history."""
    vault = text_only.vault.root
    old = text_only.remember(f"Old diagnosis: {MARKER} syndrome.", type="fact", title="Health")
    assert old.memory is not None
    path = old.memory.path
    text_only.forget(old.memory.id)  # archived: moved out of the way
    new = text_only.remember("Runs 10 km every Saturday with Sam.", type="fact", title="Health")
    assert new.memory is not None and new.memory.path == path  # the same path again
    text_only.forget(old.memory.id, mode="purge")
    assert "10 km every Saturday" in (vault / path).read_text(encoding="utf-8")
    assert text_only.get(new.memory.id).path == path
    assert "10 km every Saturday" in git(vault, "show", f"HEAD:{path}")
    assert len(git(vault, "log", "--format=%H", "--", path).split()) == 1  # its remember
    assert git(vault, "status", "--porcelain") == ""
    assert MARKER.encode() not in git_objects(vault)


def test_purge_of_a_persons_note_without_id_keeps_a_note_saved_later_where_it_was(
    text_only: MemoryService,
) -> None:
    """A note without ``id:`` is known by its path: its versions are those its own history
    put there, not another id-less note saved at that path after it moved away."""
    vault = text_only.vault.root
    (vault / "facts" / "health.md").write_text(f"# Health\n\nDiagnosis: {MARKER}.\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "a note by hand")
    git(vault, "mv", "facts/health.md", "facts/old-health.md")
    git(vault, "commit", "-q", "-m", "renamed by hand")
    (vault / "facts" / "health.md").write_text("# Health\n\nRuns on Saturdays with Sam.\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "another note by hand")
    text_only.forget("facts/old-health.md", mode="purge")
    assert MARKER.encode() not in git_objects(vault)
    assert "Saturdays" in (vault / "facts" / "health.md").read_text(encoding="utf-8")
    assert "Saturdays" in git(vault, "show", "HEAD:facts/health.md")
    assert git(vault, "status", "--porcelain") == ""


def test_purging_a_note_without_id_keeps_other_files_with_the_same_bytes(
    text_only: MemoryService,
) -> None:
    """A version is a blob at a path: an empty note is byte for byte every .gitkeep, a note
    made from the template is the template, a copied note its copy; they all stay."""
    vault = text_only.vault.root
    (vault / "inbox" / "empty.md").write_bytes(b"")
    template = (vault / "_templates" / "memory.md").read_bytes()
    (vault / "inbox" / "meeting.md").write_bytes(template)
    (vault / "people" / "bob.md").write_text("Bob owns a boat.\n", encoding="utf-8")
    (vault / "people" / "bob-copy.md").write_text("Bob owns a boat.\n", encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "a person's notes")
    keeps = git(vault, "ls-files", "*.gitkeep", "_templates/memory.md").split()
    for rel in ("inbox/empty.md", "inbox/meeting.md", "people/bob.md"):
        text_only.forget(rel, mode="purge")
        assert not (vault / rel).exists()
        assert git(vault, "log", "--all", "--format=%h", "--", rel) == ""
    assert git(vault, "ls-files", "*.gitkeep", "_templates/memory.md").split() == keeps
    assert (vault / "_templates" / "memory.md").read_bytes() == template
    assert (vault / "people" / "bob-copy.md").read_text(encoding="utf-8") == "Bob owns a boat.\n"
    assert git(vault, "status", "--porcelain") == ""


def test_purge_finds_a_version_a_person_moved_and_rewrote_in_one_commit(
    text_only: MemoryService,
) -> None:
    """git sees a move with a rewrite as a deletion and an addition, so following renames
    misses the old name: the memory's id finds it."""
    vault = text_only.vault.root
    created = text_only.remember(f"My diagnosis is {MARKER} syndrome.", type="fact")
    assert created.memory is not None
    memory_id, old_path = created.memory.id, created.memory.path
    (vault / "people").mkdir(exist_ok=True)
    (vault / "people" / "health.md").write_text(
        f"---\nid: {memory_id}\ntype: fact\n---\n# Health\n\nSeen by the doctor in May, "
        "all fine now, nothing else to note here.\n",
        encoding="utf-8",
    )
    (vault / old_path).unlink()
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "moved and rewritten by hand")
    assert text_only.get(memory_id).path == "people/health.md"
    text_only.forget(memory_id, mode="purge")
    assert MARKER.encode() not in git_objects(vault)
    assert old_path not in git(vault, "log", "--all", "--format=%B")
    assert not (vault / "people" / "health.md").exists()


def stash_entries(vault: Path) -> list[tuple[str, str]]:
    """The stash, newest first: (message, the changes it would bring back)."""
    out = []
    for message in git(vault, "stash", "list", "--format=%gs").splitlines():
        n = len(out)
        diff = git(vault, "stash", "show", "-p", "--include-untracked", f"stash@{{{n}}}")
        out.append((message, "".join(x for x in diff.splitlines(True) if x[:1] in "+-")))
    return out


def test_a_purge_keeps_every_stash_entry_and_purges_the_memory_inside_them(
    text_only: MemoryService,
) -> None:
    """Entries below the newest live only in refs/stash's reflog, which a purge forgets
    before gc: they were all lost. A stashed edit of the purged memory is purged too."""
    vault = text_only.vault.root
    secret = text_only.remember(f"The alarm code is {MARKER}.", type="fact")
    tea = text_only.remember("The user likes green tea.", type="preference")
    assert secret.memory is not None and tea.memory is not None
    (vault / "README.md").write_text((vault / "README.md").read_text() + "draft one\n")
    git(vault, "stash", "push", "-q", "-m", "draft one")
    with (vault / secret.memory.path).open("a") as f:
        f.write(f"Also {MARKER} for the gate.\n")
    git(vault, "stash", "push", "-q")  # git's own message, naming HEAD's subject
    with (vault / tea.memory.path).open("a") as f:
        f.write("Only in the morning.\n")
    git(vault, "add", tea.memory.path)  # staged: the entry's index commit differs
    (vault / "inbox" / "loose.md").write_text("an untracked thought\n")
    git(vault, "stash", "push", "-q", "-u", "-m", "draft three")
    before = stash_entries(vault)
    assert [m for m, _ in before][::2] == ["On main: draft three", "On main: draft one"]
    text_only.forget(secret.memory.id, mode="purge")
    after = stash_entries(vault)
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1] == (before[1][0], "")  # the entry stays; what it held of the memory goes
    assert MARKER.encode() not in git_objects(vault)
    assert git(vault, "for-each-ref", "refs/memvault/") == ""
    git(vault, "stash", "apply", "-q", "--index", "stash@{0}")
    assert git(vault, "status", "--porcelain").splitlines() == [
        f"M  {tea.memory.path}",
        "?? inbox/loose.md",
    ]


def test_a_purge_keeps_each_stash_entry_s_date(text_only: MemoryService) -> None:
    """`git stash list --date=iso` showed every entry made at the purge's moment."""
    vault = text_only.vault.root
    secret = text_only.remember(f"The alarm code is {MARKER}.", type="fact")
    assert secret.memory is not None
    for day in ("2026-03-01T09:00:00+00:00", "2026-04-02T10:30:00+00:00"):
        (vault / "README.md").write_text((vault / "README.md").read_text() + f"{day}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        subprocess.run(
            ["git", "stash", "push", "-q", "-m", day],
            cwd=vault,
            check=True,
            env={**env, "GIT_COMMITTER_DATE": day},
        )

    def dates() -> list[str]:
        return git(vault, "stash", "list", "--date=iso-strict", "--format=%gd %gs").splitlines()

    before = dates()
    assert before == [
        "stash@{2026-04-02T10:30:00+00:00} On main: 2026-04-02T10:30:00+00:00",
        "stash@{2026-03-01T09:00:00+00:00} On main: 2026-03-01T09:00:00+00:00",
    ]
    text_only.forget(secret.memory.id, mode="purge")
    assert dates() == before


@pytest.mark.parametrize("stored", [0, 1])
def test_the_stash_entries_a_killed_purge_left_aside_are_put_back_when_the_vault_opens(
    vault_path: Path, stored: int
) -> None:
    """Killed after setting them aside (``stored`` 0), or half way through putting them
    back (1: the oldest is on the stash again, its ref not yet deleted): every entry comes
    back once, in order, below the one stashed since."""
    readme = vault_path / "README.md"
    for n in (1, 2):
        readme.write_text(readme.read_text() + f"draft {n}\n")
        git(vault_path, "stash", "push", "-q", "-m", f"draft {n}")
    entries = git(vault_path, "stash", "list", "--format=%H").split()[::-1]
    for n, sha in enumerate(entries):  # what a purge killed half way leaves behind
        git(vault_path, "update-ref", f"{stashes.ASIDE}{n:06d}", sha)
    git(vault_path, "update-ref", "-d", "refs/stash")
    for sha in entries[:stored]:
        git(vault_path, "stash", "store", "-q", "-m", "On main: draft 1", sha)
    readme.write_text(readme.read_text() + "draft 3\n")
    git(vault_path, "stash", "push", "-q", "-m", "draft 3")  # stashed since
    MemoryService.open(vault_path, Settings(embedder="none")).close()  # recovery runs
    messages = git(vault_path, "stash", "list", "--format=%gs").splitlines()
    assert messages == ["On main: draft 3", "On main: draft 2", "On main: draft 1"]
    assert git(vault_path, "for-each-ref", "refs/memvault/") == ""


def test_purge_says_what_it_erased(text_only: MemoryService) -> None:
    created = text_only.remember(f"Private: {MARKER}.", type="fact")
    assert created.memory is not None
    text_only.update(created.memory.id, content=f"Private: {MARKER}, changed.")
    result = text_only.forget(created.memory.id, mode="purge")
    assert result.action == "purged"
    assert result.erased == (
        "git history (3 commits rewritten)",  # remember, update, the deletion
        "full-text index",
        "vectors",
        "vector caches",
        "access statistics",
        "id catalog",
        "provenance cache",
    )


def test_the_cli_says_the_clone_warning_once(vault_path: Path) -> None:
    env = {"MEMVAULT_EMBEDDER": "none"}
    added = run_memvault(
        "--vault", str(vault_path), "--json", "add", f"Private note {MARKER}.", env=env
    )
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["id"]
    proc = run_memvault("--vault", str(vault_path), "forget", memory_id, "--purge", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout + proc.stderr).count(CLONE_WARNING) == 1
    assert "erased from: git history" in proc.stderr and "full-text index" in proc.stderr


def test_the_mcp_forget_tool_says_the_clone_warning_once(
    text_only: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    created = text_only.remember(f"Private: {MARKER}.", type="fact")
    assert created.memory is not None
    server, _ = build_server(text_only)

    async def main() -> str:
        async with Client(server) as client:
            args = {"id": created.memory.id, "mode": "purge"}
            asked = await client.call_tool("forget", args)  # purge is confirmed first
            assert asked.structured_content is not None
            args["confirm"] = asked.structured_content["confirm"]
            result = await client.call_tool("forget", args)
            assert not result.is_error
            assert result.structured_content is not None
            assert "full-text index" in result.structured_content["erased"]
            return json.dumps(result.structured_content)

    with caplog.at_level(logging.WARNING):
        said = asyncio.run(main())
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert (said + logged).count("clones, remotes and backups") == 1


# -- a git merge or rebase the person has not finished ----------------------------------------
def leave_a_merge_half_way(service: MemoryService) -> str:
    """A real conflicting merge stopped for the person to finish; the conflicted file."""
    made = service.remember("The user's car is blue.", type="fact").memory
    assert made is not None
    main = git(service.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    note = service.root / made.path
    git(service.root, "switch", "-q", "-c", "elsewhere")
    note.write_text(note.read_text(encoding="utf-8").replace("blue", "red"), encoding="utf-8")
    git(service.root, "commit", "-qam", "red on another machine")
    git(service.root, "switch", "-q", main)
    note.write_text(note.read_text(encoding="utf-8").replace("blue", "green"), encoding="utf-8")
    git(service.root, "commit", "-qam", "green here")
    with pytest.raises(subprocess.CalledProcessError):
        git(service.root, "merge", "elsewhere")
    return made.path


def test_no_write_starts_over_an_unfinished_merge_and_nothing_is_left_behind(
    text_only: MemoryService,
) -> None:
    leave_a_merge_half_way(text_only)
    before = (commit_count(text_only.root), git(text_only.root, "status", "--porcelain"))
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        text_only.remember("The user's bike is black.", type="fact")
    added = run_memvault("--vault", str(text_only.root), "add", "The user's boat is white.")
    assert added.returncode != 0 and "merge or rebase is in progress" in added.stderr
    after = (commit_count(text_only.root), git(text_only.root, "status", "--porcelain"))
    assert after == before and (text_only.root / ".git" / "MERGE_HEAD").exists()
    assert "bike" not in after[1] and "boat" not in after[1]


def test_the_watcher_leaves_a_persons_edit_during_an_unfinished_merge_to_their_merge(
    text_only: MemoryService,
) -> None:
    leave_a_merge_half_way(text_only)
    other = text_only.root / "inbox" / "by-hand.md"
    commits = commit_count(text_only.root)
    with watching(text_only) as (_, watcher, _events):
        other.write_text("A note typed during the merge.\n", encoding="utf-8")
        assert watcher.wait_for(lambda: watcher.batches >= 1)
    assert watcher.errors == [] and watcher.commits == 0
    assert commit_count(text_only.root) == commits
    assert (text_only.root / ".git" / "MERGE_HEAD").exists()
    git(text_only.root, "commit", "-qam", "merged by hand")  # the person finishes it
    text_only.remember("The user's bike is black.", type="fact")  # and memvault writes again


def test_a_file_deleted_in_a_merge_resolution_leaves_provenance_too(vault_path: Path) -> None:
    # a merge's own changes name no file in `git log --name-status`: provenance must still
    # drop what is gone (the refresh looks the survivors up in one walk of the folder)
    person = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    for n in range(3):
        (vault_path / "facts" / f"f{n}.md").write_text(f"Fact number {n}.\n", encoding="utf-8")
    git(vault_path, "add", "-A")
    git(vault_path, *person, "commit", "-qm", "my notes")
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert {"facts/f0.md", "facts/f1.md"} <= set(service.vault.edited)
        git(vault_path, "checkout", "-qb", "phone")
        (vault_path / "facts" / "f1.md").write_text("Fact one, from the phone.\n", "utf-8")
        git(vault_path, *person, "commit", "-qam", "phone")
        git(vault_path, "checkout", "-q", "main")
        (vault_path / "facts" / "f2.md").write_text("Fact two, from the laptop.\n", "utf-8")
        git(vault_path, *person, "commit", "-qam", "laptop")
        git(vault_path, *person, "merge", "-q", "--no-commit", "--no-ff", "phone")
        git(vault_path, "rm", "-q", "facts/f0.md")  # decided while merging
        git(vault_path, *person, "commit", "-qm", "merge phone")
        service.refresh_provenance()
        assert "facts/f0.md" not in service.vault.edited
        assert {"facts/f1.md", "facts/f2.md"} <= set(service.vault.edited)
    finally:
        service.close()


def test_a_file_made_again_at_a_deleted_files_path_is_a_new_file(vault_path: Path) -> None:
    # a person writes x.md and deletes it; memvault later writes a new x.md there: its
    # edit time and origin are not the old file's, whether provenance was built up commit
    # by commit or rebuilt from the whole history in one go
    person = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    old, new = vault_path / "facts" / "old.md", vault_path / "facts" / "x.md"
    old.write_text("A person's note.\n", encoding="utf-8")
    git(vault_path, "add", "-A")
    git(vault_path, *person, "commit", "-qm", "my note")
    git(vault_path, *person, "mv", "facts/old.md", "facts/x.md")
    git(vault_path, *person, "commit", "-qm", "renamed")
    history = History(vault_path)
    stepwise = Provenance(vault_path / "stepwise.json")
    assert stepwise.refresh(history, lambda p: (vault_path / p).exists()) == {"facts/x.md"}
    assert stepwise.origins == {"facts/x.md": "facts/old.md"} and "facts/x.md" in stepwise.edited
    git(vault_path, *person, "rm", "-q", "facts/x.md")
    git(vault_path, *person, "commit", "-qm", "gone")
    stepwise.refresh(history, lambda p: (vault_path / p).exists())
    new.write_text("---\nid: fresh\n---\nWritten by memvault.\n", encoding="utf-8")
    git(vault_path, "add", "-A")
    git(vault_path, "commit", "-qm", "remember: fresh", "-m", "Memvault-Op: remember")
    stepwise.refresh(history, lambda p: (vault_path / p).exists())
    rebuilt = Provenance(vault_path / "rebuilt.json")
    rebuilt.refresh(history, lambda p: (vault_path / p).exists())
    for provenance in (stepwise, rebuilt):
        assert provenance.origins == {} and provenance.edited == {}


def test_a_note_whose_name_holds_a_newline_is_refused_a_purge_before_anything_changes(
    text_only: MemoryService,
) -> None:
    """git's batch commands read one name a line: such a file cannot be found in every
    commit, so the purge is refused up front (no deletion, no commit) rather than half done."""
    vault = text_only.vault.root
    (vault / "facts" / "a\nb.md").write_text("A note with an odd name.\n", encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "an odd name")
    commits = commit_count(vault)
    with pytest.raises(InvalidInputError, match="newline cannot be purged"):
        text_only.forget("facts/a\nb.md", mode="purge")
    assert (vault / "facts" / "a\nb.md").exists()
    assert commit_count(vault) == commits
