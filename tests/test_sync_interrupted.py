"""A sync killed half-way through its merge or rebase never stops the vault, and what
doctor and sync say about git's half-done state and about failing remotes (real git,
real files, a bare remote in tmp_path)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.errors import InvalidInputError, MemvaultError
from memvault.syncing import sync

from .helpers import Pair, git, run_memvault, synced_pair


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """A bare remote, vault A pushed to it, vault B cloned from it."""
    with synced_pair(tmp_path) as made:
        yield made


def _edited_on_both_sides(pair: Pair) -> str:
    """A memory both vaults changed since they last synced; A's change is on the remote."""
    written = pair.a.remember("Reports are written in British English", type="preference")
    assert written.memory is not None
    sync(pair.a)
    sync(pair.b)
    memory_id = written.memory.id
    pair.a.update(memory_id, content="Reports are written in British English, no Oxford comma")
    pair.b.update(memory_id, content="Reports are written in American English since March")
    sync(pair.a)
    git(pair.b.root, "fetch", "-q", "origin")
    return memory_id


def _rev(root: Path, rev: str) -> str:
    return git(root, "rev-parse", rev).strip()


def _half_done(root: Path) -> bool:
    git_dir = root / ".git"
    return any((git_dir / f).exists() for f in ("MERGE_HEAD", "rebase-merge", "rebase-apply"))


def _record(root: Path, what: str, head: str, onto: str) -> None:
    """What sync writes before it starts a merge or rebase."""
    record = {"what": what, "head": head, "onto": onto}
    (root / ".memvault" / "sync-integrating.json").write_text(json.dumps(record))


GIT = ["git", "-c", "user.name=Person", "-c", "user.email=p@example.org"]


def _conflicted_merge(root: Path) -> None:
    out = subprocess.run(
        [*GIT, "merge", "--no-ff", "--no-commit", "origin/main"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    assert out.returncode != 0 and (root / ".git" / "MERGE_HEAD").exists()


def _conflicted_rebase(root: Path) -> None:
    out = subprocess.run(
        [*GIT, "rebase", "origin/main"], cwd=root, capture_output=True, check=False
    )
    assert out.returncode != 0 and (root / ".git" / "rebase-merge").is_dir()


# -- 1. a killed sync's merge or rebase is undone by the next command ------------------
def test_a_write_after_a_sync_killed_mid_merge_undoes_that_merge_and_succeeds(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    _edited_on_both_sides(pair)
    head = _rev(pair.b.root, "HEAD")
    _record(pair.b.root, "merge", head, _rev(pair.b.root, "origin/main"))
    _conflicted_merge(pair.b.root)
    caplog.set_level("WARNING", logger="memvault.interrupted")
    written = pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    assert written.action == "created" and written.commit is not None
    assert not _half_done(pair.b.root)
    assert _rev(pair.b.root, "HEAD~1") == head
    assert "undid the merge" in caplog.text and "killed `memvault sync`" in caplog.text
    assert not (pair.b.root / ".memvault" / "sync-integrating.json").exists()
    result = sync(pair.b)
    assert result.action == "merged" and result.error is None


def test_a_sync_after_a_sync_killed_mid_rebase_undoes_that_rebase_and_syncs(
    pair: Pair,
) -> None:
    memory_id = _edited_on_both_sides(pair)
    head = _rev(pair.b.root, "HEAD")
    _record(pair.b.root, "rebase", head, _rev(pair.b.root, "origin/main"))
    _conflicted_rebase(pair.b.root)
    result = sync(pair.b)
    assert result.action == "merged" and result.conflicts and result.error is None
    assert not _half_done(pair.b.root)
    assert "American English" in pair.b.get(memory_id).body


@pytest.mark.parametrize("recorded", ["none", "another merge"])
def test_a_persons_own_half_done_merge_is_still_refused_and_left_alone(
    pair: Pair, recorded: str
) -> None:
    _edited_on_both_sides(pair)
    head = _rev(pair.b.root, "HEAD")
    if recorded == "another merge":  # a record whose merge is not the one in progress
        _record(pair.b.root, "merge", head, _rev(pair.b.root, "HEAD~1"))
    _conflicted_merge(pair.b.root)
    merging = (pair.b.root / ".git" / "MERGE_HEAD").read_text()
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        sync(pair.b)
    assert (pair.b.root / ".git" / "MERGE_HEAD").read_text() == merging
    assert _rev(pair.b.root, "HEAD") == head


def test_a_persons_own_half_done_rebase_is_refused_as_one_not_as_a_detached_head(
    pair: Pair,
) -> None:
    _edited_on_both_sides(pair)
    _conflicted_rebase(pair.b.root)
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        sync(pair.b)
    assert (pair.b.root / ".git" / "rebase-merge").is_dir()


GIT_SHIM = """#!/bin/sh
# git, but a three-way line merge first says so and then waits until it is killed
case " $* " in
  *" merge-file "*) echo ready > "$SHIM_READY"; read never < "$SHIM_BLOCK" ;;
esac
exec {git} "$@"
"""


def test_a_memvault_sync_killed_with_sigkill_mid_merge_does_not_stop_the_next_write(
    pair: Pair, tmp_path: Path
) -> None:
    """The real thing: `memvault sync` in its own process, stopped inside its merge (a git
    on PATH that blocks on a FIFO when sync asks it for a line merge) and SIGKILLed."""
    _edited_on_both_sides(pair)
    head = _rev(pair.b.root, "HEAD")
    shim = tmp_path / "shim"
    shim.mkdir()
    real_git = shutil.which("git")
    assert real_git is not None
    (shim / "git").write_text(GIT_SHIM.format(git=real_git))
    (shim / "git").chmod(0o755)
    ready, block = tmp_path / "ready", tmp_path / "block"
    os.mkfifo(ready)
    os.mkfifo(block)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "MEMVAULT_EMBEDDER": "none"}
    env |= {"SHIM_READY": str(ready), "SHIM_BLOCK": str(block)}
    command = [sys.executable, "-m", "memvault.cli", "--vault", str(pair.b.root), "sync"]
    process = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.PIPE)
    said: list[str] = []
    waiting = threading.Thread(target=lambda: said.append(ready.read_text()), daemon=True)
    waiting.start()
    waiting.join(timeout=120)
    if not said:  # never reached the merge: let the reader go and say why
        process.kill()
        ready.write_text("")
        pytest.fail(f"sync never reached its merge: {process.communicate()[1]!r}")
    assert (pair.b.root / ".git" / "MERGE_HEAD").exists()
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    added = run_memvault("--vault", str(pair.b.root), "add", "Herons nest in the old alder wood")
    assert added.returncode == 0, added.stderr
    assert "undid the merge" in added.stderr
    assert not _half_done(pair.b.root)
    assert _rev(pair.b.root, "HEAD~1") == head
    synced = run_memvault("--vault", str(pair.b.root), "sync")
    assert synced.returncode == 0, synced.stderr
    assert _rev(pair.a.root, "HEAD") in git(pair.b.root, "rev-list", "HEAD")


# -- 1b. never undone over what a person changed since the kill -----------------------
def _killed_mid(pair: Pair, what: str) -> tuple[str, str]:
    """B as a sync killed in its ``what`` leaves it, with a second note (on both sides,
    untouched by the sync) for a person to edit: (B's HEAD before the sync, that note)."""
    other = pair.a.remember("Herons nest in the old alder wood", type="fact")
    assert other.memory is not None
    sync(pair.a)
    _edited_on_both_sides(pair)
    head = _stopped_as_sync_leaves_it(pair.b.root, what)
    # the conflicted note is there, markers and all (its id may be unreadable: when the two
    # updates fell in different seconds, `updated:` conflicts inside the frontmatter too)
    assert git(pair.b.root, "diff", "--name-only", "--diff-filter=U").strip()
    return head, other.memory.path


def _stopped_as_sync_leaves_it(root: Path, what: str) -> str:
    """Sync's record, then git's ``what`` stopped on a conflict, as a killed sync leaves
    them: the HEAD from before."""
    head = _rev(root, "HEAD")
    _record(root, what, head, _rev(root, "origin/main"))
    if what == "merge":
        _conflicted_merge(root)
    else:
        _conflicted_rebase(root)
    return head


def _still_kept(pair: Pair, what: str, path: str, text: str) -> None:
    """The write was refused, the person's change is still in the file, git is still
    half-way and the record is still there."""
    assert text in (pair.b.root / path).read_text(encoding="utf-8")
    assert _half_done(pair.b.root)
    if what == "rebase":
        assert (pair.b.root / ".git" / "rebase-merge").is_dir()
    assert (pair.b.root / ".memvault" / "sync-integrating.json").exists()


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_a_persons_edit_after_a_sync_was_killed_is_never_undone_by_the_next_write(
    pair: Pair, what: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, path = _killed_mid(pair, what)
    edit = "\nPERSON EDIT: they moved to the willows by the river.\n"
    with open(pair.b.root / path, "a", encoding="utf-8") as handle:
        handle.write(edit)
    caplog.set_level("WARNING", logger="memvault.interrupted")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    _still_kept(pair, what, path, edit)
    assert "undid" not in caplog.text
    assert path in caplog.text and "copy those files aside" in caplog.text
    assert f"git -C {pair.b.root} {what} --abort" in caplog.text
    assert pair.b.commit_external([path]) is None  # the watcher's commit of that save
    _still_kept(pair, what, path, edit)
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        sync(pair.b)
    _still_kept(pair, what, path, edit)


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_a_conflict_a_person_settled_by_hand_is_never_undone_by_the_next_write(
    pair: Pair, what: str
) -> None:
    _killed_mid(pair, what)
    [conflicted] = git(pair.b.root, "diff", "--name-only", "--diff-filter=U").split()
    settled = "---\ntype: preference\n---\nReports: British English, settled by hand.\n"
    (pair.b.root / conflicted).write_text(settled, encoding="utf-8")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    _still_kept(pair, what, conflicted, "settled by hand")


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_a_conflict_a_person_only_started_to_settle_is_never_undone_by_the_next_write(
    pair: Pair, what: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Markers left in, one side's line rewritten by hand: the abort would lose it."""
    _killed_mid(pair, what)
    [conflicted] = git(pair.b.root, "diff", "--name-only", "--diff-filter=U").split()
    full = pair.b.root / conflicted
    text = full.read_text(encoding="utf-8")
    assert "<<<<<<<" in text and ">>>>>>>" in text
    started = text.replace("since March", "since March (half settled by hand)")
    assert started != text
    full.write_text(started, encoding="utf-8")
    _saved_later(pair.b.root, full, what)
    caplog.set_level("WARNING", logger="memvault.interrupted")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    _still_kept(pair, what, conflicted, "half settled by hand")
    assert conflicted in caplog.text and "undid" not in caplog.text


def _saved_later(root: Path, full: Path, what: str) -> None:
    """A person's save comes after git stopped on the conflicts."""
    stopped = (root / ".git" / ("MERGE_HEAD" if what == "merge" else "REBASE_HEAD")).stat()
    later = stopped.st_mtime_ns + 10**9
    os.utime(full, ns=(later, later))


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_a_conflict_a_person_settled_and_staged_is_never_undone_by_the_next_write(
    pair: Pair, what: str
) -> None:
    """`git add` of the settled file: no longer unmerged, no unstaged change; the abort
    would still throw it away."""
    _killed_mid(pair, what)
    [conflicted] = git(pair.b.root, "diff", "--name-only", "--diff-filter=U").split()
    full = pair.b.root / conflicted
    full.write_text("---\ntype: preference\n---\nReports: settled, then added.\n", "utf-8")
    _saved_later(pair.b.root, full, what)
    git(pair.b.root, "add", conflicted)
    assert conflicted not in git(pair.b.root, "diff", "--name-only", "--diff-filter=U")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    _still_kept(pair, what, conflicted, "settled, then added")


def test_a_new_note_made_after_a_sync_was_killed_keeps_it_from_being_undone(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    _killed_mid(pair, "rebase")
    new = "inbox/typed-during-the-rebase.md"
    (pair.b.root / new).parent.mkdir(exist_ok=True)
    (pair.b.root / new).write_text("Otters were seen below the weir.\n", encoding="utf-8")
    caplog.set_level("WARNING", logger="memvault.interrupted")
    with pytest.raises(InvalidInputError, match="merge or rebase is in progress"):
        pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    _still_kept(pair, "rebase", new, "Otters")
    assert new in caplog.text and "undid" not in caplog.text


def test_editor_droppings_made_after_a_sync_was_killed_do_not_keep_it_from_being_undone(
    pair: Pair,
) -> None:
    head, path = _killed_mid(pair, "rebase")
    swap = pair.b.root / path
    (swap.parent / f".{swap.name}.swp").write_bytes(b"\0vim swap")
    written = pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    assert written.action == "created" and not _half_done(pair.b.root)
    assert _rev(pair.b.root, "HEAD~1") == head


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_a_deleted_on_one_side_conflict_left_as_git_left_it_is_still_undone(
    pair: Pair, what: str
) -> None:
    """Git leaves the edited side's file, without markers, for a file deleted on the other
    side: that is the merge's own, not a person's settling."""
    written = pair.a.remember("Swifts return in the first week of May", type="fact")
    assert written.memory is not None
    sync(pair.a)
    sync(pair.b)
    path = written.memory.path
    git(pair.a.root, *GIT[1:], "rm", "-q", path)
    git(pair.a.root, *GIT[1:], "commit", "-qm", "gone")
    git(pair.a.root, "push", "-q")
    with open(pair.b.root / path, "a", encoding="utf-8") as handle:
        handle.write("\nAnd leave in August.\n")
    git(pair.b.root, *GIT[1:], "commit", "-qam", "edited")
    git(pair.b.root, "fetch", "-q", "origin")
    head = _stopped_as_sync_leaves_it(pair.b.root, what)
    assert path in git(pair.b.root, "diff", "--name-only", "--diff-filter=U")
    written = pair.b.remember("Kites fly best in a steady onshore wind", type="fact")
    assert written.action == "created" and not _half_done(pair.b.root)
    assert _rev(pair.b.root, "HEAD~1") == head


# -- 2. doctor on a half-done merge or rebase ------------------------------------------
def _doctor(root: Path) -> tuple[int, list[dict[str, str]]]:
    out = run_memvault("--vault", str(root), "--json", "doctor")
    return out.returncode, json.loads(out.stdout)["problems"]


def test_doctor_reports_a_persons_half_done_merge_and_promises_no_commit_of_its_files(
    pair: Pair,
) -> None:
    _edited_on_both_sides(pair)
    _conflicted_merge(pair.b.root)
    code, problems = _doctor(pair.b.root)
    assert code == 1
    unfinished = [p for p in problems if p["kind"] == "unfinished"]
    assert len(unfinished) == 1
    assert "git merge is in progress" in unfinished[0]["message"]
    assert "every memvault write and sync is refused" in unfinished[0]["message"]
    assert "merge --abort" in unfinished[0]["message"]
    assert [p["kind"] for p in problems if p["kind"] in ("unmerged", "uncommitted")] == ["unmerged"]
    assert not [p for p in problems if "next write command commits it" in p["message"]]


def test_doctor_reports_a_half_done_rebase_and_says_when_memvault_will_undo_it(
    pair: Pair,
) -> None:
    _edited_on_both_sides(pair)
    head = _rev(pair.b.root, "HEAD")
    _conflicted_rebase(pair.b.root)
    code, problems = _doctor(pair.b.root)
    assert code == 1
    assert [p["message"] for p in problems if p["kind"] == "unfinished"] == [
        f"a git rebase is in progress in the vault: every memvault write and sync is refused, "
        f"and nothing is committed, until it ends; finish it (resolve the conflicts, `git add` "
        f"them, `git -C {pair.b.root} rebase --continue`) or abort it (`git -C {pair.b.root} "
        "rebase --abort`)"
    ]
    _record(pair.b.root, "rebase", head, _rev(pair.b.root, "origin/main"))
    code, problems = _doctor(pair.b.root)
    assert code == 1
    [message] = [p["message"] for p in problems if p["kind"] == "unfinished"]
    assert "killed `memvault sync`" in message and "next memvault write or sync undoes" in message
    assert _half_done(pair.b.root)  # doctor reports, never repairs


@pytest.mark.parametrize("what", ["rebase", "merge"])
def test_doctor_says_a_killed_syncs_git_step_is_left_to_the_person_once_they_edited_files(
    pair: Pair, what: str
) -> None:
    _, path = _killed_mid(pair, what)
    with open(pair.b.root / path, "a", encoding="utf-8") as handle:
        handle.write("\nPERSON EDIT: they moved to the willows.\n")
    code, problems = _doctor(pair.b.root)
    assert code == 1
    [message] = [p["message"] for p in problems if p["kind"] == "unfinished"]
    assert "killed `memvault sync`" in message and path in message
    assert "memvault does not undo it" in message and "copy those files aside" in message
    assert f"git -C {pair.b.root} {what} --abort" in message
    assert "next memvault write or sync undoes" not in message
    assert _half_done(pair.b.root)


# -- 3. a file name that is not UTF-8 ------------------------------------------------
def test_doctor_says_once_that_a_file_with_a_name_that_is_not_utf8_is_never_committed(
    pair: Pair,
) -> None:
    name = os.fsencode(pair.b.root / "facts") + b"/caf\xe9.md"
    with open(name, "wb") as handle:
        handle.write(b"---\ntype: fact\n---\n# Latin\n\nA note saved with a latin-1 name.\n")
    pair.b.remember("Ferries leave from pier four", type="fact")
    sync(pair.b)
    assert (
        b"caf"
        not in subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", "HEAD"],
            cwd=pair.b.root,
            capture_output=True,
            check=True,
        ).stdout
    )
    code, problems = _doctor(pair.b.root)
    assert code == 1
    about = [p for p in problems if "caf" in p["path"]]
    assert [p["kind"] for p in about] == ["bad_name"]
    assert "never commits, indexes or syncs" in about[0]["message"]
    assert "rename it with a UTF-8 name" in about[0]["message"]


# -- 4. git's own reason when a remote cannot be reached ---------------------------------
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("missing.git", "does not appear to be a git repository"),
        ("ssh://git@nonexistent.invalid/me/vault.git", "Could not resolve hostname"),
    ],
)
def test_a_remote_that_cannot_be_reached_is_reported_with_gits_own_reason(
    pair: Pair, tmp_path: Path, url: str, reason: str
) -> None:
    if shutil.which("ssh") is None and url.startswith("ssh:"):
        pytest.skip("no ssh client")
    where = str(tmp_path / url) if url == "missing.git" else url
    git(pair.b.root, "remote", "set-url", "origin", where)
    result = sync(pair.b)
    assert result.action == "offline" and result.error is not None
    assert reason in result.error
    assert "the repository exists" not in result.error
    git(pair.b.root, "remote", "set-url", "--push", "origin", where)
    git(pair.b.root, "remote", "set-url", "origin", str(pair.remote))
    pair.b.remember("Ferries leave from pier four", type="fact")
    pushed = sync(pair.b)
    assert pushed.fetched and pushed.pushed == 0 and pushed.error is not None
    assert reason in pushed.error and "the repository exists" not in pushed.error


# -- 5. a rebase git would not start -------------------------------------------------
def test_a_rebase_git_will_not_start_is_reported_with_its_cause_not_as_mid_rebase(
    pair: Pair, tmp_path: Path
) -> None:
    written = pair.a.remember("Sailing boats moor in the east harbour", type="fact")
    assert written.memory is not None
    sync(pair.a)
    sync(pair.b)
    pair.a.remember("Mountain trails close at dusk in winter", type="fact")
    sync(pair.a)
    pair.b.remember("Jazz piano chords stack thirds", type="fact")
    note = pair.b.root / written.memory.path
    outside = tmp_path / "outside.md"
    note.rename(outside)
    note.symlink_to(outside)  # a change memvault never commits
    head = _rev(pair.b.root, "HEAD")
    with pytest.raises(MemvaultError) as raised:
        sync(pair.b)
    said = str(raised.value)
    assert "mid-rebase" not in said and "rebase --abort" not in said
    assert written.memory.path in said and "symlink" in said
    assert "memvault never commits" in said and "nothing was changed" in said
    assert not _half_done(pair.b.root)
    assert _rev(pair.b.root, "HEAD") == head
