"""The git layer over GitPython: clean environment, identity from config, raw output, errors."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memvault.errors import GitError, MemvaultError
from memvault.history import History
from memvault.service import MemoryService

from .helpers import call_tool, commit_count, git, in_process


def new_history(root: Path) -> History:
    root.mkdir(parents=True, exist_ok=True)
    history = History(root)
    history.init()
    return history


def has_commits(root: Path) -> bool:
    probe = ["git", "rev-parse", "--verify", "-q", "HEAD"]
    return subprocess.run(probe, cwd=root, capture_output=True, check=False).returncode == 0


def test_init_makes_a_repository_on_main_and_a_folder_inside_another_repo_is_not_one(
    tmp_path: Path,
) -> None:
    outer = new_history(tmp_path / "outer")
    inner = History(tmp_path / "outer" / "inner")
    (tmp_path / "outer" / "inner").mkdir()
    assert outer.is_repo()
    assert git(outer.root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert not inner.is_repo()
    assert not History(tmp_path / "missing").is_repo()


def test_git_variables_in_memvaults_environment_neither_redirect_nor_reattribute_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memvault run from a git hook inherits GIT_DIR and GIT_INDEX_FILE of another repo."""
    history = new_history(tmp_path / "vault")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Someone Else")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Someone Else")
    (history.root / "a.md").write_text("hello\n", encoding="utf-8")
    sha = history.commit(["a.md"], "add a")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert sha is not None and commit_count(history.root) == 1
    assert git(history.root, "log", "-1", "--format=%an|%cn").strip() == "memvault|memvault"
    assert not (other / ".git" / "index").exists()
    assert not has_commits(other)


def test_a_persons_edit_is_committed_with_the_repository_identity_over_the_global_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Global Person\n\temail = g@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    history = new_history(tmp_path / "vault")
    assert history.repo_identity() == ("Global Person", "g@example.com")
    with (history.root / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write('[user]\n\tname = "Ada  Lovelace" ; set by hand\n')
    assert git(history.root, "config", "user.name").strip() == "Ada  Lovelace"
    assert history.repo_identity() == ("Ada  Lovelace", "g@example.com")
    (history.root / "a.md").write_text("edited by hand\n", encoding="utf-8")
    history.commit(["a.md"], "external edit", as_person=True)
    assert git(history.root, "log", "-1", "--format=%an <%ae>").strip() == (
        "Ada  Lovelace <g@example.com>"
    )


def test_without_any_configured_identity_memvaults_own_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    history = new_history(tmp_path / "vault")
    assert history.repo_identity() == ("memvault", "memvault@localhost")


def test_output_is_the_committed_text_with_its_final_newline_and_non_ascii(
    tmp_path: Path,
) -> None:
    history = new_history(tmp_path / "vault")
    text = "---\ntitle: Café 咖啡\n---\nbody\n\n"
    (history.root / "note é.md").write_text(text, encoding="utf-8")
    sha = history.commit(["note é.md"], "add")
    assert sha is not None
    assert history.show(sha, "note é.md") == text
    assert history.log("note é.md")[0].path == "note é.md"


def test_a_failing_git_command_raises_git_error_with_command_exit_code_and_stderr(
    tmp_path: Path,
) -> None:
    history = new_history(tmp_path / "vault")
    with pytest.raises(GitError) as caught:
        history.run("cat-file", "-p", "no-such-object")
    assert caught.value.command == ["cat-file", "-p", "no-such-object"]
    assert caught.value.returncode == 128
    assert "no-such-object" in caught.value.stderr
    assert history.run("cat-file", "-p", "no-such-object", check=False) == ""


def test_a_vault_folder_that_vanished_raises_instead_of_running_git_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = new_history(tmp_path / "here")
    (here.root / "a.md").write_text("not memvault's\n", encoding="utf-8")
    monkeypatch.chdir(here.root)
    gone = History(tmp_path / "gone")
    with pytest.raises(MemvaultError, match="cannot run git in"):
        gone.commit(["a.md"], "should not happen")
    assert not has_commits(here.root)
    assert git(here.root, "diff", "--cached", "--name-only") == ""


def test_a_folder_with_a_broken_git_file_is_no_repository_and_init_says_why(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").write_text("garbage\n", encoding="utf-8")
    history = History(tmp_path)
    assert not history.is_repo()
    with pytest.raises(GitError) as caught:
        history.init()
    assert caught.value.command[0] == "init"
    assert caught.value.returncode == 128
    assert caught.value.stderr.startswith("fatal: invalid gitfile format")
    assert (tmp_path / ".git").read_text(encoding="utf-8") == "garbage\n"


def test_a_commit_holds_only_its_paths_and_names_itself_whatever_else_is_staged(
    tmp_path: Path,
) -> None:
    history = new_history(tmp_path / "vault")
    root = history.root
    (root / "mine.md").write_text("one\n")
    first = history.commit(["mine.md"], "add: mine", {})
    assert first == git(root, "rev-parse", "HEAD").strip()
    git(root, "pack-refs", "--all")  # HEAD's branch now only in packed-refs
    (root / "also.md").write_text("also\n")
    also = history.commit(["also.md"], "add: also", {"Memvault-Op": "add"})
    assert also == git(root, "rev-parse", "HEAD").strip()  # the whole index was ours
    assert (
        git(root, "log", "-1", "--format=%P%n%B", also)
        == f"{first}\nadd: also\n\nMemvault-Op: add\n\n"
    )
    assert "commit: add: also" in git(root, "reflog", "-1")
    assert git(root, "status", "--porcelain") == ""
    (root / "theirs.md").write_text("a person's draft\n")
    git(root, "add", "theirs.md")  # staged by a person, not by memvault
    (root / "mine.md").write_text("two\n")
    second = history.commit(["mine.md"], "edit: mine", {})
    assert second == git(root, "rev-parse", "HEAD").strip()
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["mine.md"]
    assert git(root, "diff", "--cached", "--name-only").split() == ["theirs.md"]  # still staged
    assert history.commit(["mine.md"], "edit: nothing", {}) is None  # no change, no commit
    assert commit_count(root) == 3


@pytest.mark.slow
def test_loose_objects_are_still_packed_when_git_would_pack_them(tmp_path: Path) -> None:
    """memvault's commits skip git's own check after each commit (a process each time) and
    start the maintenance themselves once as many objects are loose as git waits for."""
    import threading

    history = new_history(tmp_path / "vault")
    root = history.root
    git(root, "config", "gc.autoDetach", "false")  # the maintenance ends before its thread
    files = root / "files"
    files.mkdir()
    for n in range(10_000):  # committed by hand without git's own check: all left loose
        (files / f"{n}.txt").write_text(f"loose object {n}\n")
    git(root, "add", "files")
    git(root, "-c", "maintenance.auto=false", "commit", "-q", "-m", "files")
    loose = int(git(root, "count-objects").split()[0])
    assert loose > 10_000
    (root / "a.md").write_text("one\n")
    history.commit(["a.md"], "add: a", {})
    for thread in threading.enumerate():
        if thread.name == "memvault-git-maintenance":
            thread.join(timeout=120)
    assert int(git(root, "count-objects").split()[0]) < 100  # packed


def test_a_ref_that_moved_is_reported_at_once_not_waited_for_as_a_busy_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    history = new_history(tmp_path / "vault")
    (history.root / "a.md").write_text("one\n")
    first = history.commit(["a.md"], "add: a", {})
    (history.root / "a.md").write_text("two\n")
    second = history.commit(["a.md"], "edit: a", {})
    assert first and second
    caplog.set_level("DEBUG", logger="memvault.history")
    with pytest.raises(GitError, match="but expected"):  # HEAD is at `second`, not `first`
        history.run("update-ref", "HEAD", first, first)
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert git(history.root, "rev-parse", "HEAD").strip() == second


def test_a_memory_log_leaves_out_another_memory_that_stood_at_its_path(
    text_only: MemoryService,
) -> None:
    """A path reused after a delete: the new memory's log listed the old one's commits,
    and memory_history of the old id (asked by its path) the new one's."""
    old = text_only.remember("The printer is on floor two near the kitchen", title="Printer")
    assert old.memory is not None
    text_only.forget(old.memory.id, mode="delete")
    new = text_only.remember("Printer codes are in the blue binder at reception", title="Printer")
    assert new.memory is not None and new.memory.path == old.memory.path
    assert [c.subject.split(":")[0] for c in text_only.log(new.memory.id)] == ["remember"]
    assert [c.subject.split(":")[0] for c in text_only.log(old.memory.id)] == [
        "forget",
        "remember",
    ]

    async def body(client: Client) -> Any:
        return await call_tool(client, "memory_history", {"id": old.memory.id})  # type: ignore[union-attr]

    history = in_process(text_only, body)
    assert [c["subject"].split(":")[0] for c in history["commits"]] == ["forget", "remember"]


def test_the_log_of_a_memory_whose_id_a_person_edited_keeps_its_earlier_versions(
    text_only: MemoryService,
) -> None:
    text_only.remember("The office printer is on floor two", title="Printer")
    made = text_only.remember("The VPN password rotates every ninety days", title="VPN").memory
    assert made is not None
    text_only.update(made.id, content="The VPN password rotates every sixty days")
    file = text_only.root / made.path
    file.write_text(file.read_text().replace(made.id, "01J0000000000000000000ABCD"))
    git(text_only.root, "commit", "-qam", "person: fix the id")
    subjects = [c.subject.split(":")[0] for c in text_only.log(made.path)]
    assert subjects == ["person", "update", "remember"]  # not the printer's creation
