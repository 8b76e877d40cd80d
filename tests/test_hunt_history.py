"""Reading history over hostile and real histories: a vault another user owns, people's
merges, clocks that were wrong, shallow clones, reverts to versions a person broke."""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import changes
from memvault.asof import get, recall, records
from memvault.cli import cli
from memvault.config import Settings
from memvault.errors import InvalidInputError, MemvaultError, UntrustedRepositoryError
from memvault.reports import export
from memvault.service import MemoryService

from .helpers import PERSON, git


@pytest.fixture
def vault(person_vault: MemoryService) -> MemoryService:
    return person_vault


def person_commit(root: Path, message: str, *, env: dict[str, str] | None = None) -> str:
    """Commit everything in the worktree as the person (optionally with git dates)."""
    git(root, "add", "-A")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(
        ["git", "commit", "-q", "-m", message],
        cwd=root,
        check=True,
        capture_output=True,
        env={**clean, **(env or {})},
    )
    return git(root, "rev-parse", "HEAD").strip()


def note(root: Path, rel: str, body: str, meta: str = "title: A note") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{meta}\n---\n{body}\n", encoding="utf-8")


def cli_run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# -- a vault another user owns -----------------------------------------------------------
def test_log_and_changes_of_a_vault_git_distrusts_say_why_and_what_to_run(
    vault: MemoryService,
) -> None:
    vault.remember("The deploy server is called hermes", tags=["infra"])
    vault.history.base_env = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}  # git's own switch
    for read in (vault.log, lambda: changes.feed(vault)):
        with pytest.raises(UntrustedRepositoryError) as caught:
            read()
        message = str(caught.value)
        assert "another user" in message
        assert f"git config --global --add safe.directory {vault.root}" in message


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_the_command_line_names_the_safe_directory_fix_for_a_folder_another_user_owns(
    vault: MemoryService,
) -> None:
    vault.remember("The deploy server is called hermes", tags=["infra"])
    for folder, _, files in os.walk(vault.root):
        for name in [".", *files]:
            os.chown(os.path.join(folder, name), 54321, 54321)
    for command in (["log"], ["changes"], ["export"]):
        code, out, err = cli_run(vault.root, *command)
        assert code == 1, command
        assert "safe.directory" in err and out == ""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_vault_is_made_inside_a_repository_another_user_owns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Only to warn, init asks git whether the new folder lies in another repository;
    git's refusal of that outer one stopped init half way (template files, no .git)."""
    outer = tmp_path / "outer"
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    for folder, _, files in os.walk(outer / ".git"):
        for name in [".", *files]:
            os.chown(os.path.join(folder, name), 54321, 54321)
    with caplog.at_level(logging.WARNING, logger="memvault.template"):
        code, _, err = cli_run(outer / "vault", "init")
    assert code == 0, err
    assert f"inside the git repository at {outer}" in caplog.text
    assert git(outer / "vault", "log", "--format=%s") == "init: memvault vault\n"


# -- clocks that were wrong --------------------------------------------------------------
def test_changes_since_a_time_reach_past_a_commit_made_with_a_clock_in_1970(
    vault: MemoryService,
) -> None:
    first = vault.remember("The deploy server is called hermes", tags=["infra"]).memory
    note(vault.root, "facts/board.md", "Written on a board without a real-time clock.")
    epoch = "1970-01-01T00:00:01+00:00"
    person_commit(vault.root, "board", env={"GIT_COMMITTER_DATE": epoch, "GIT_AUTHOR_DATE": epoch})
    last = vault.remember("Ada drinks tea in the morning", tags=["habits"]).memory
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).isoformat()
    found = [c.id for c in changes.feed(vault, since=yesterday).changes]
    assert found == [last.id, first.id]  # the 1970 commit is older than asked: left out


# -- a person's merges -------------------------------------------------------------------
def resolved_by_hand(vault: MemoryService) -> tuple[str, str, str]:
    """A memory both sides of a person's branch edited, the conflict settled by hand in
    the merge commit: (path, the memory's id, the merge's sha)."""
    memory = vault.remember("The deploy server is called hermes", tags=["infra"]).memory
    path, root = vault.root / memory.path, vault.root
    text = path.read_text(encoding="utf-8")
    git(root, "checkout", "-q", "-b", "side")
    path.write_text(text.replace("hermes", "zeus"), encoding="utf-8")
    person_commit(root, "side: zeus")
    git(root, "checkout", "-q", "main")
    path.write_text(text.replace("hermes", "apollo"), encoding="utf-8")
    person_commit(root, "main: apollo")
    merging = ["git", "merge", "-q", "side"]
    subprocess.run(merging, cwd=root, capture_output=True, check=False)  # it conflicts
    path.write_text(text.replace("hermes", "athena (settled by Ada)"), encoding="utf-8")
    merge = person_commit(root, "merge side, settled by hand")
    return memory.path, memory.id, merge


def test_a_conflict_a_person_settled_in_a_merge_is_in_the_changes_feed(
    vault: MemoryService,
) -> None:
    path, ident, merge = resolved_by_hand(vault)
    newest = changes.feed(vault, limit=5).changes[0]
    assert (newest.commit, newest.path, newest.id) == (merge[:10], path, ident)
    assert (newest.op, newest.who, newest.name) == ("merged", "person", PERSON)


def test_log_and_export_of_a_memory_show_the_merge_that_settled_it_by_hand(
    vault: MemoryService,
) -> None:
    _, ident, merge = resolved_by_hand(vault)
    assert [c.sha for c in vault.log(ident)][:1] == [merge]
    exported = export(vault)
    (history,) = [m["history"] for m in exported["memories"] if m["id"] == ident]
    assert history[0]["commit"] == merge and "athena" in history[0]["text"]
    assert len(history) == 4  # remember, both sides, the merge


# -- shallow clones ----------------------------------------------------------------------
@pytest.fixture
def shallow(vault: MemoryService, tmp_path: Path) -> Iterator[MemoryService]:
    """A clone with the last two commits of a vault that has three memories."""
    for text in ("hermes runs Debian", "Ada drinks tea", "the office is in Leeds"):
        vault.remember(text, tags=["t"])
    clone = tmp_path / "clone"
    url = f"file://{vault.root}"
    subprocess.run(["git", "clone", "-q", "--depth", "2", url, str(clone)], check=True)
    service = MemoryService.open(clone, Settings(embedder="none"))
    yield service
    service.close()


def test_a_shallow_clones_first_commit_is_not_reported_as_creating_every_memory(
    shallow: MemoryService,
) -> None:
    found = changes.feed(shallow, limit=50).changes
    head = shallow.log(limit=1)[0].sha[:10]
    assert [(c.op, c.commit, c.path) for c in found] == [
        ("created", head, "inbox/the-office-is-in-leeds.md")
    ]


def test_reading_before_a_shallow_clones_history_says_to_unshallow(
    shallow: MemoryService,
) -> None:
    memory = shallow.records()[0]
    for read in (
        lambda: shallow.revert(memory.id, "HEAD~2"),
        lambda: get(shallow, memory.id, "2001-01-01"),
        lambda: changes.feed(shallow, since="1234567"),
    ):
        with pytest.raises(MemvaultError, match="git fetch --unshallow"):
            read()


# -- revert ------------------------------------------------------------------------------
def test_revert_writes_back_a_persons_crlf_version_byte_for_byte(vault: MemoryService) -> None:
    memory = vault.remember("Meeting notes with Bob about the budget", tags=["work"]).memory
    path = vault.root / memory.path
    crlf = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    then = person_commit(vault.root, "saved on Windows")
    path.write_bytes(crlf + b"Bob agreed.\n")
    person_commit(vault.root, "more")
    vault.revert(memory.id, then)
    assert path.read_bytes() == crlf


def test_revert_to_a_version_whose_frontmatter_a_person_broke_is_refused(
    vault: MemoryService,
) -> None:
    memory = vault.remember("Ada likes green tea with honey", tags=["tea"]).memory
    path = vault.root / memory.path
    good = path.read_text(encoding="utf-8")
    path.write_text(good.replace("tags:", "tags: [unclosed\nx:"), encoding="utf-8")
    broken = person_commit(vault.root, "broken yaml")
    path.write_text(good, encoding="utf-8")
    head = person_commit(vault.root, "fixed")
    with pytest.raises(InvalidInputError, match="not a readable memory") as caught:
        vault.revert(memory.id, broken)
    assert f"git show {broken[:10]}:{memory.path}" in str(caught.value)
    assert path.read_text(encoding="utf-8") == good
    assert git(vault.root, "rev-parse", "HEAD").strip() == head
    assert git(vault.root, "status", "--porcelain") == ""


def test_revert_by_the_path_a_person_since_moved_the_memory_from_reverts_it_where_it_is(
    vault: MemoryService,
) -> None:
    memory = vault.remember("The office is in Leeds", tags=["work"]).memory
    first = git(vault.root, "rev-parse", "HEAD").strip()
    git(vault.root, "mv", memory.path, "facts/office.md")
    moved = vault.root / "facts/office.md"
    moved.write_text(moved.read_text(encoding="utf-8") + "Moved to York.\n", encoding="utf-8")
    person_commit(vault.root, "moved and edited")
    vault.sync_index()
    result = vault.revert(memory.path, first)
    assert result.memory.path == "facts/office.md"
    assert not (vault.root / memory.path).exists()  # no second file with the same id
    assert "York" not in moved.read_text(encoding="utf-8")


# -- revisions ---------------------------------------------------------------------------
def fast_imported(root: Path, count: int) -> list[str]:
    """A person's repository of ``count`` commits, each editing one of ten notes, with fixed
    names and dates (the same shas every run); its commits, newest first."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    stream = bytearray()
    for i in range(count):
        msg, text = f"edit {i}\n".encode(), f"---\ntitle: Note {i % 10}\n---\nRound {i}.\n"
        stream += b"commit refs/heads/main\n"
        stream += f"committer Ada <ada@example.org> {1_700_000_000 + 60 * i} +0000\n".encode()
        stream += f"data {len(msg)}\n".encode() + msg
        stream += f"M 100644 inline facts/note-{i % 10}.md\n".encode()
        stream += f"data {len(text.encode())}\n{text}\n".encode()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    importing = ["git", "fast-import", "--quiet"]
    subprocess.run(importing, cwd=root, input=bytes(stream), env=clean, check=True)
    git(root, "reset", "-q", "--hard", "main")
    return git(root, "rev-list", "HEAD").split()


def test_a_short_sha_of_several_commits_is_called_ambiguous_not_unknown(tmp_path: Path) -> None:
    shas = fast_imported(tmp_path / "vault", 800)
    seen: dict[str, str] = {}
    short = next(s[:4] for s in shas if seen.setdefault(s[:4], s) != s)
    service = MemoryService.open(tmp_path / "vault", Settings(embedder="none"))
    try:
        for read in (
            lambda: service.revert("facts/note-1.md", short),
            lambda: get(service, "facts/note-1.md", short),
            lambda: changes.feed(service, since=short),
        ):
            with pytest.raises(InvalidInputError, match="more than one commit"):
                read()
    finally:
        service.close()


def test_log_and_revert_find_a_deleted_memory_by_its_id(vault: MemoryService) -> None:
    memory = vault.remember("Carol's birthday is on 3 May", tags=["people"]).memory
    before = git(vault.root, "rev-parse", "HEAD").strip()
    vault.forget(memory.id, mode="delete", reason="tidy")
    assert [c.sha for c in vault.log(memory.id)][1:] == [before]
    restored = vault.revert(memory.id, before).memory
    assert (restored.id, restored.path) == (memory.id, memory.path)


# -- export ------------------------------------------------------------------------------
def test_export_to_a_folder_that_does_not_exist_blames_out_not_the_vault(
    vault: MemoryService, tmp_path: Path
) -> None:
    vault.remember("The office is in Leeds", tags=["work"])
    target = tmp_path / "missing" / "export.json"
    code, out, err = cli_run(vault.root, "export", "--out", str(target))
    assert code == 1 and out == ""
    assert f"cannot write the export to {target}" in err and "--out" in err
    assert "vault folder" not in err and not target.parent.exists()


def test_export_writes_through_a_link_into_a_pipe_and_keeps_a_files_mode(
    vault: MemoryService, tmp_path: Path
) -> None:
    """Written beside and renamed over, the export replaced a link with a file, made a
    0600 file 0644, and could not reach a pipe (`--out >(gzip > x)`)."""
    vault.remember("The office is in Leeds", tags=["work"])
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    real.chmod(0o600)
    link.symlink_to(real)
    assert cli_run(vault.root, "export", "--out", str(link))[0] == 0
    assert link.is_symlink() and "Leeds" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    read, write = os.pipe()
    with os.fdopen(read, encoding="utf-8") as stream:
        try:
            code = cli_run(vault.root, "export", "--out", f"/dev/fd/{write}")[0]
        finally:
            os.close(write)
        assert code == 0 and "Leeds" in stream.read()


# -- as of -------------------------------------------------------------------------------
def test_show_as_of_by_todays_path_finds_a_memory_a_person_moved_since(
    vault: MemoryService,
) -> None:
    memory = vault.remember("The office is in Leeds", tags=["work"]).memory
    then = git(vault.root, "rev-parse", "HEAD").strip()
    git(vault.root, "mv", memory.path, "facts/office.md")
    person_commit(vault.root, "moved")
    past = get(vault, "facts/office.md", then)
    assert (past.id, past.path) == (memory.id, memory.path)


def test_as_of_a_time_shows_the_vaults_folder_then_not_a_branch_merged_later(
    vault: MemoryService,
) -> None:
    """Main: a note at 09:00. A person's branch: another at 10:00, merged at 12:00. As of
    11:00 the vault held the first note only."""
    root = vault.root

    def at(hour: int) -> dict[str, str]:
        when = f"2026-11-30T{hour:02}:00:00+00:00"
        return {"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}

    git(root, "checkout", "-q", "-b", "side")
    note(root, "facts/side.md", "Written on the side branch.", "title: Side")
    person_commit(root, "side", env=at(10))
    git(root, "checkout", "-q", "main")
    note(root, "facts/main.md", "Written on main.", "title: Main")
    person_commit(root, "main", env=at(9))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    merge = ["git", "merge", "-q", "--no-ff", "-m", "merge side", "side"]
    subprocess.run(merge, cwd=root, check=True, env={**clean, **at(12)})
    held = {m.path for m in records(vault, "2026-11-30T11:00:00+00:00")}
    assert "facts/main.md" in held and "facts/side.md" not in held


@pytest.mark.parametrize("day", ["2026-11-30", "20261130"])
def test_as_of_a_date_written_either_iso_way_means_the_end_of_that_day(
    vault: MemoryService, day: str
) -> None:
    note(vault.root, "facts/afternoon.md", "Written in the afternoon.", "title: Afternoon")
    when = "2026-11-30T15:00:00+00:00"
    person_commit(vault.root, "afternoon", env={"GIT_COMMITTER_DATE": when})
    vault.clock = lambda: dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert "facts/afternoon.md" in {m.path for m in records(vault, day)}


def test_revert_to_the_version_the_file_already_holds_leaves_it_alone(
    vault: MemoryService,
) -> None:
    memory = vault.remember("The office is in Leeds", tags=["work"]).memory
    path = vault.root / memory.path
    head, mtime = git(vault.root, "rev-parse", "HEAD").strip(), path.stat().st_mtime_ns
    result = vault.revert(memory.id, head)
    assert (result.commit, result.action) == (None, "unchanged")
    assert path.stat().st_mtime_ns == mtime
    code, out, _ = cli_run(vault.root, "revert", memory.id, head)
    assert code == 0 and out.strip() == f"{memory.path} is already as at {head[:10]}"


def test_revert_of_a_deleted_memory_never_replaces_the_memory_now_at_its_path(
    vault: MemoryService,
) -> None:
    gone = vault.remember("Carol's birthday is on 3 May", tags=["people"]).memory
    then = git(vault.root, "rev-parse", "HEAD").strip()
    vault.forget(gone.id, mode="delete", reason="tidy")
    path = vault.root / gone.path
    path.write_text(
        "---\nid: 01HZZZZZZZZZZZZZZZZZZZZZZZ\ntitle: Dentist\n---\nDentist on Friday.\n"
    )
    head = person_commit(vault.root, "a new note where the old one was")
    with pytest.raises(InvalidInputError, match="holds memory 01HZZZZZZZZZZZZZZZZZZZZZZZ now"):
        vault.revert(gone.id, then)
    assert "Dentist on Friday" in path.read_text(encoding="utf-8")
    assert git(vault.root, "rev-parse", "HEAD").strip() == head


def test_reverting_a_memory_moved_then_deleted_names_a_git_show_that_works(
    vault: MemoryService,
) -> None:
    """The hint named today's path at the old revision, where the file was not."""
    gone = vault.remember("Carol's birthday is on 3 May", tags=["people"]).memory
    then = git(vault.root, "rev-parse", "HEAD").strip()
    git(vault.root, "mv", gone.path, "facts/carol.md")
    person_commit(vault.root, "moved")
    git(vault.root, "rm", "-q", "facts/carol.md")
    person_commit(vault.root, "deleted")
    (vault.root / "facts" / "carol.md").write_text(
        "---\nid: 01HZZZZZZZZZZZZZZZZZZZZZZZ\ntitle: Dentist\n---\nDentist on Friday.\n"
    )
    person_commit(vault.root, "another note at the path")
    with pytest.raises(InvalidInputError) as caught:
        vault.revert("facts/carol.md", then)
    shown = str(caught.value).split("`git show ", 1)[1].split("`", 1)[0]
    assert "Carol's birthday" in git(vault.root, "show", shown)


# -- hostile commit messages -------------------------------------------------------------
def test_a_commit_whose_subject_holds_control_characters_stays_in_the_log(
    vault: MemoryService,
) -> None:
    memory = vault.remember("The office is in Leeds", tags=["work"]).memory
    with (vault.root / memory.path).open("a", encoding="utf-8") as handle:
        handle.write("Moved to York.\n")
    subject = "evil \x1e subject \x1f with \x1d separators"
    sha = person_commit(vault.root, subject)
    for commits in (vault.log(), vault.log(memory.id)):
        assert (commits[0].sha, commits[0].subject, commits[0].author) == (sha, subject, PERSON)
    assert changes.feed(vault).changes[0].commit == sha[:10]


def test_revert_to_a_version_over_the_size_limit_is_refused_before_any_file_changes(
    vault_path: Path,
) -> None:
    service = MemoryService.open(vault_path, Settings(embedder="none", max_file_bytes=8_000))
    try:
        memory = service.remember("Meeting notes with Bob", tags=["work"]).memory
        path = vault_path / memory.path
        small = path.read_text(encoding="utf-8")
        path.write_text(small + "padding line\n" * 800, encoding="utf-8")
        big = person_commit(vault_path, "pasted a log")
        path.write_text(small, encoding="utf-8")
        head = person_commit(vault_path, "trimmed")
        with pytest.raises(InvalidInputError, match="max_file_bytes"):
            service.revert(memory.id, big)
        assert path.read_text(encoding="utf-8") == small
        assert git(vault_path, "status", "--porcelain") == ""
        assert git(vault_path, "rev-parse", "HEAD").strip() == head
    finally:
        service.close()


@pytest.mark.parametrize("as_of", ["2026-10-20T12:00:00+00:00", "2026-10-20", "HEAD"])
def test_as_of_judges_expiry_at_that_time_not_today(vault: MemoryService, as_of: str) -> None:
    """A note that expired on 1 November was live on 20 October (and at the commit
    of 15 October): a listing and a recall as of then show it."""
    meta = "title: Parking\nexpires: 2026-11-01T00:00:00+00:00"
    note(vault.root, "facts/parking.md", "Park on level 3 this month.", meta)
    when = "2026-10-15T12:00:00+00:00"
    person_commit(vault.root, "parking", env={"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when})
    vault.clock = lambda: dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert "facts/parking.md" in {m.path for m in records(vault, as_of)}
    assert [h.path for h in recall(vault, "parking level", as_of)] == ["facts/parking.md"]


def test_log_of_a_file_with_a_limit_is_not_cut_short_by_a_merge_that_took_it_whole(
    vault: MemoryService,
) -> None:
    root = vault.root
    git(root, "checkout", "-q", "-b", "side")
    note(root, "facts/side.md", "First words.", "title: Side")
    first = person_commit(root, "side: add")
    note(root, "facts/side.md", "Second words.", "title: Side")
    second = person_commit(root, "side: edit")
    git(root, "checkout", "-q", "main")
    note(root, "facts/main.md", "On main.", "title: Main")
    person_commit(root, "main: other file")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    merge = ["git", "merge", "-q", "--no-ff", "-m", "merge side", "side"]
    subprocess.run(merge, cwd=root, check=True, env=clean, capture_output=True)
    assert [c.sha for c in vault.log("facts/side.md", limit=2)] == [second, first]


def test_a_cursor_from_before_a_persons_amend_is_refused_naming_the_amend(
    vault: MemoryService,
) -> None:
    vault.remember("The office is in Leeds", tags=["work"])
    cursor = changes.feed(vault).cursor
    assert cursor is not None
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    amend = ["git", "commit", "-q", "--amend", "-m", "remember: the office"]
    subprocess.run(amend, cwd=vault.root, check=True, env=clean, capture_output=True)
    with pytest.raises(InvalidInputError, match="amend or rebase"):
        changes.feed(vault, since=cursor)


def test_log_and_changes_read_a_vault_whose_git_uses_sha256(tmp_path: Path) -> None:
    """Records were found by a 40-hex sha after the separator: a SHA-256 repository's
    log came out as one garbled commit, and `log FILE` failed."""
    root = tmp_path / "s256"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(root)], check=True)
    from memvault.template import create_vault

    create_vault(root)
    svc = MemoryService.open(root, Settings(embedder="none"))
    try:
        tea = svc.remember("The user drinks green tea.", type="preference").memory
        assert tea is not None
        svc.update(tea.id, content="The user drinks green tea, no sugar.")
        subjects = [c.subject for c in svc.history.log()]
        assert len(subjects) == 3 and subjects[-1].startswith("init")
        assert len(svc.history.log(tea.path)) == 2
        assert all(len(c.sha) == 64 for c in svc.history.log())
        recent = changes.feed(svc)
        assert [c.op for c in recent.changes] == ["edited", "created"]
        assert recent.cursor is not None and len(recent.cursor) == 64
    finally:
        svc.close()
