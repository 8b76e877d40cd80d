"""A person's git set-up, however hostile, neither stops memvault's writes nor changes
what memvault reads from git; and imports of real folders land as one commit or none."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memvault import changes
from memvault.config import Settings
from memvault.errors import InvalidInputError, NotSavedError
from memvault.history import CleanGit
from memvault.service import MemoryService

from .helpers import Clock, commit_count, git, git_objects
from .test_trust_git import leave_a_merge_half_way


def _nested_repository(vault: Path, owls: str) -> Path:
    """``reading/``: a git repository of the person's own inside the vault, holding owls.md."""
    nested = vault / "reading"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "owls.md").write_text(owls, encoding="utf-8")
    return nested


def _commit_as_person(vault: Path, message: str) -> None:
    git(vault, "-c", "user.name=Person", "-c", "user.email=p@example.org", "commit", "-qm", message)


def test_writes_are_committed_in_a_vault_whose_attributes_ask_crlf_with_safecrlf_on(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    (vault / ".gitattributes").write_bytes(b"* text=auto eol=crlf\r\n")
    git(vault, "add", ".gitattributes")
    _commit_as_person(vault, "line endings as on Windows")
    git(vault, "config", "core.safecrlf", "true")
    before = commit_count(vault)

    made = text_only.remember("The user's dentist is Dr Okafor on Hill Street.", type="fact")
    assert made.memory is not None
    text_only.update(made.memory.id, content="The user's dentist is Dr Okafor on Mill Street.")

    assert commit_count(vault) == before + 2
    assert git(vault, "status", "--porcelain") == ""
    assert "Mill Street" in git(vault, "show", f"HEAD:{made.memory.path}")


def test_a_memorys_diff_is_gits_own_whatever_external_diff_or_textconv_is_set(
    text_only: MemoryService, tmp_path: Path
) -> None:
    vault = text_only.root
    made = text_only.remember("The user's locker code is on the green card.", type="fact")
    assert made.memory is not None
    first = git(vault, "rev-parse", "HEAD").strip()
    text_only.update(made.memory.id, content="The user's locker code is on the red card.")
    tool = tmp_path / "other-diff.sh"
    tool.write_text("#!/bin/sh\necho SHOWN BY ANOTHER TOOL\n", encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    git(vault, "config", "diff.external", str(tool))
    git(vault, "config", "diff.noprefix", "true")
    git(vault, "config", "diff.loud.textconv", "tr a-z A-Z <")
    (vault / ".git" / "info" / "attributes").write_text("*.md diff=loud\n", encoding="utf-8")

    diff = text_only.diff(made.memory.id, first)

    assert "ANOTHER TOOL" not in diff and "GREEN" not in diff
    assert f"--- a/{made.memory.path}\n+++ b/{made.memory.path}\n" in diff
    assert "-The user's locker code is on the green card." in diff
    assert "+The user's locker code is on the red card." in diff


def test_a_write_to_a_folder_git_ignores_is_refused_naming_the_rule_and_leaves_nothing(
    text_only: MemoryService, tmp_path: Path
) -> None:
    vault = text_only.root
    excludes = tmp_path / "global-ignore"
    excludes.write_text("# the person's own\ninbox/*.md\n", encoding="utf-8")
    git(vault, "config", "core.excludesFile", str(excludes))
    before = (commit_count(vault), git(vault, "status", "--porcelain", "--ignored"))

    with pytest.raises(NotSavedError) as refused:
        text_only.remember("The user's passport expires in March.")

    said = str(refused.value)
    assert "nothing was saved" in said and "git ignores inbox/" in said
    assert f"`inbox/*.md` in {excludes}, line 2" in said
    assert not list((vault / "inbox").glob("*.md"))
    assert (commit_count(vault), git(vault, "status", "--porcelain", "--ignored")) == before


def test_an_import_over_an_unfinished_merge_is_refused_as_any_write_and_leaves_nothing(
    text_only: MemoryService, tmp_path: Path
) -> None:
    leave_a_merge_half_way(text_only)
    source = tmp_path / "notes"
    source.mkdir()
    (source / "boat.md").write_text("# Boat\n\nThe user's boat is white.\n", encoding="utf-8")
    before = (commit_count(text_only.root), git(text_only.root, "status", "--porcelain"))

    with pytest.raises(InvalidInputError, match=r"merge or rebase is in progress.*import again"):
        text_only.import_path(source)

    after = (commit_count(text_only.root), git(text_only.root, "status", "--porcelain"))
    assert after == before and not (text_only.root / "boat.md").exists()
    assert (text_only.root / ".git" / "MERGE_HEAD").exists()


def test_copies_of_a_note_keeping_its_id_import_as_memories_with_ids_of_their_own(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = tmp_path / "obsidian"
    (source / "trips").mkdir(parents=True)
    note = "---\nid: 01JB7Q5ZK3M4N5P6Q7R8S9T0VW\ntags: [trip]\n---\n# Lisbon\n\nWe took the {}.\n"
    (source / "Lisbon.md").write_text(note.format("tram"), encoding="utf-8")
    (source / "Lisbon 1.md").write_text(note.format("ferry"), encoding="utf-8")
    (source / "trips" / "Lisbon.md").write_text(note.format("train"), encoding="utf-8")

    first = text_only.import_path(source)
    again = text_only.import_path(source)

    assert first.imported == 3 and first.commit is not None
    found = {m.path: m for m in (text_only.get(p) for p in first.paths)}
    given = {m.id for m in found.values()}
    assert len(given) == 3 and "01JB7Q5ZK3M4N5P6Q7R8S9T0VW" in given  # the first keeps it
    assert "ferry" in found["Lisbon 1.md"].body and "train" in found["trips/Lisbon.md"].body
    problems = [p.code for p in text_only.problems()]
    assert "duplicate_id" not in problems
    assert (again.imported, again.updated, again.unchanged, again.commit) == (0, 0, 3, None)


def test_importing_a_folder_that_holds_the_vault_leaves_the_vault_itself_out(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    home = vault.parent
    (home / "kayak.md").write_text("# Kayak\n\nThe user's kayak is orange.\n", encoding="utf-8")

    report = text_only.import_path(home)

    assert report.paths == ("kayak.md",)
    assert [(s.path, s.reason) for s in report.skipped] == [(vault.name, "the vault")]
    assert not (vault / vault.name).exists()
    assert git(vault, "show", "--name-only", "--format=", "HEAD").split() == ["kayak.md"]


def test_a_note_inside_another_git_repository_in_the_vault_is_never_rewritten_or_moved(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    nested = _nested_repository(vault, "# Owls\n\nNotes on owls from the library.\n")
    git(nested, "add", "owls.md")
    _commit_as_person(nested, "the person's own repository")
    text_only.sync_index()
    before = (
        commit_count(vault),
        git(vault, "status", "--porcelain"),
        (nested / "owls.md").read_bytes(),
    )

    with pytest.raises(NotSavedError, match="reading/ is another git repository inside the vault"):
        text_only.update("reading/owls.md", content="Notes on owls and hawks.")
    with pytest.raises(NotSavedError, match="reading/ is another git repository"):
        text_only.forget("reading/owls.md")

    after = (
        commit_count(vault),
        git(vault, "status", "--porcelain"),
        (nested / "owls.md").read_bytes(),
    )
    assert after == before
    assert git(nested, "status", "--porcelain") == ""
    assert not list((vault / "archive").rglob("*.md"))


def test_a_folder_the_vault_tracks_stays_the_vaults_when_it_gets_a_git_of_its_own(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    (vault / "notes").mkdir()
    (vault / "notes" / "figs.md").write_text("# Figs\n\nThe user likes figs.\n", "utf-8")
    text_only.recover()
    git(vault / "notes", "init", "-q")  # git goes on treating the folder as the vault's

    text_only.update("notes/figs.md", content="The user likes figs and dates.")

    assert "figs and dates" in git(vault, "show", "HEAD:notes/figs.md")
    assert git(vault, "status", "--porcelain") == ""


def test_memvaults_commits_read_as_its_own_whatever_trailer_separators_the_person_set(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    git(vault, "config", "trailer.separators", "#")
    made = text_only.remember("The user's bike lock code starts with a seven.")
    assert made.memory is not None

    history = text_only.log(made.memory.id)
    feed = changes.feed(text_only)

    assert history[0].trailers.get("Memvault-Op") == "remember"
    assert [(c.op, c.who) for c in feed.changes] == [("created", "memvault")]


@pytest.mark.parametrize("setting", ["i18n.commitEncoding", "i18n.logOutputEncoding"])
def test_a_memorys_history_keeps_its_accents_whatever_encoding_the_person_set_for_git(
    text_only: MemoryService, setting: str
) -> None:
    git(text_only.root, "config", setting, "ISO-8859-1")
    made = text_only.remember("Zoë's café order is a crème brûlée.")
    assert made.memory is not None

    subjects = [c.subject for c in text_only.log(made.memory.id)]

    assert subjects == [f"remember: {made.memory.path}"] and "zoë" in made.memory.path


def test_archiving_into_a_folder_outside_a_sparse_checkout_is_refused_saying_so(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    made = text_only.remember("The user's stamp album is in the attic.")
    assert made.memory is not None
    git(vault, "sparse-checkout", "set", "--no-cone", "/*", "!/archive/")
    before = (commit_count(vault), git(vault, "status", "--porcelain"))
    kept = (vault / made.memory.path).read_bytes()

    with pytest.raises(NotSavedError) as refused:
        text_only.forget(made.memory.id)

    assert f"archive/{made.memory.path} is outside the vault's sparse checkout" in str(
        refused.value
    )
    assert (commit_count(vault), git(vault, "status", "--porcelain")) == before
    assert (vault / made.memory.path).read_bytes() == kept
    assert not list((vault / "archive").rglob("*.md"))


def test_memvaults_state_is_never_committed_where_dot_git_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    git(root, "init", "-q", f"--separate-git-dir={tmp_path / 'elsewhere.git'}")
    (root / ".gitignore").write_text("*.tmp\n", encoding="utf-8")  # the person's, no .memvault
    (root / "pears.md").write_text("# Pears\n\nConference pears.\n", encoding="utf-8")
    git(root, "add", "-A")
    _commit_as_person(root, "my notes")
    for text in ("The user bakes rye bread on Sundays.", "The user knits scarves in winter."):
        service = MemoryService.open(root, Settings(embedder="none"))
        try:
            service.remember(text)
        finally:
            service.close()

    committed = git(root, "log", "--format=", "--name-only").split()
    assert not [p for p in committed if p.startswith(".memvault/")]
    assert git(root, "status", "--porcelain") == ""


def test_git_keeps_the_persons_certificates_and_config_but_not_a_hooks_repository(
    text_only: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "work.gitconfig"
    config.write_text("[memvault-test]\n\tprobe = from-the-persons-config\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_SSL_CAINFO", str(tmp_path / "corporate-ca.pem"))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    shell = CleanGit(text_only.root)

    seen = shell.execute(["sh", "-c", 'printf "%s|%s" "$GIT_SSL_CAINFO" "${GIT_DIR:-}"'])
    probe = text_only.history.run("config", "--global", "--get", "memvault-test.probe")

    assert seen == f"{tmp_path / 'corporate-ca.pem'}|"
    assert probe.strip() == "from-the-persons-config"


def test_importing_an_unchanged_folder_again_keeps_edits_made_in_the_vault_since(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = tmp_path / "garden"
    source.mkdir()
    note = "---\ntags: [garden]\n---\n# Roses\n\nPrune the roses in {}.\n"
    (source / "roses.md").write_text(note.format("March"), encoding="utf-8")
    first = text_only.import_path(source)
    edited = text_only.update("roses.md", content="Prune the roses in late February.")
    commits = commit_count(text_only.root)

    again = text_only.import_path(source)

    assert first.imported == 1 and edited.commit is not None
    assert (again.updated, again.unchanged, again.commit) == (0, 1, None)
    assert commit_count(text_only.root) == commits
    assert "late February" in text_only.get("roses.md").body
    # the source now changes the line edited in the vault: the edit is kept, never overwritten
    (source / "roses.md").write_text(note.format("April"), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="edited in the vault since the last import"):
        text_only.import_path(source)  # its one note skipped: nothing imported, and why
    assert "late February" in text_only.get("roses.md").body
    assert commit_count(text_only.root) == commits
    # and a change elsewhere in the note comes in beside the edit
    (source / "roses.md").write_text(
        "---\ntags: [garden, roses]\n---\n# Roses\n\nPrune the roses in March.\n",
        encoding="utf-8",
    )
    merged = text_only.import_path(source)
    assert merged.updated == 1 and text_only.get("roses.md").tags == ("garden", "roses")
    assert "late February" in text_only.get("roses.md").body


def test_a_persons_edits_commit_beside_an_edit_inside_another_repository_in_the_vault(
    text_only: MemoryService,
) -> None:
    vault = text_only.root
    _nested_repository(vault, "# Owls\n\nBarn owls.\n")
    mine = vault / "inbox" / "swifts.md"
    mine.write_text("# Swifts\n\nSwifts sleep on the wing.\n", encoding="utf-8")

    sha = text_only.commit_external(["reading/owls.md", "inbox/swifts.md"])

    assert sha is not None
    assert git(vault, "show", "--name-only", "--format=", sha).split() == ["inbox/swifts.md"]
    assert git(vault, "status", "--porcelain") == "?? reading/\n"


def test_a_short_note_archived_keeps_its_history_and_its_purge_leaves_no_version(
    svc: MemoryService, clock: Clock
) -> None:
    text_only, vault = svc, svc.root
    # a person's short note: archiving adds more frontmatter lines than it has text, so git
    # does not see the move to archive/ as a rename
    (vault / "inbox" / "plums.md").write_text("# Plums\n\nPlum zx81q.\n", encoding="utf-8")
    text_only.recover()
    made = text_only.update("inbox/plums.md", content="Plum zx81q, damson.")
    clock.days(1)  # archived a day later: its `updated:` line changes too
    archived = text_only.forget(made.memory.id)
    assert archived.memory is not None and archived.memory.path == "archive/inbox/plums.md"

    ops = [c.trailers.get("Memvault-Op") for c in text_only.log(made.memory.id)]
    assert ops == ["forget-archive", "update", "external"]
    assert len(text_only.log(made.memory.id, limit=2)) == 2

    text_only.forget(made.memory.id, mode="purge")
    assert b"zx81q" not in git_objects(vault)


def test_a_persons_edit_with_a_file_time_before_1970_is_committed_dated_now(
    text_only: MemoryService,
) -> None:
    note = text_only.root / "inbox" / "restored.md"
    note.write_text("# Restored\n\nFrom a backup that lost its file times.\n", encoding="utf-8")
    before_1970 = -315_619_200  # 1960-01-01
    os.utime(note, (before_1970, before_1970))

    sha = text_only.recover()

    assert sha is not None
    author, committer = git(text_only.root, "show", "-s", "--format=%at %ct", sha).split()
    assert author == committer  # not 1960, nor a date git made up from it


def test_an_import_skips_by_name_what_git_ignores_and_commits_the_rest(
    text_only: MemoryService, tmp_path: Path
) -> None:
    vault = text_only.root
    with (vault / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write("private/\n")
    git(vault, "add", ".gitignore")
    _commit_as_person(vault, "my private folder stays out of git")
    source = tmp_path / "obsidian"
    (source / "private").mkdir(parents=True)
    (source / "notes").mkdir()
    (source / "private" / "diary.md").write_text("# Diary\n\nDear diary.\n", encoding="utf-8")
    (source / "notes" / "kites.md").write_text("# Kites\n\nKites fly in March.\n", "utf-8")

    report = text_only.import_path(source)

    assert report.paths == ("notes/kites.md",)
    assert [(s.path, s.reason) for s in report.skipped] == [("private/diary.md", "ignored by git")]
    assert "`private/` in .gitignore" in report.skipped[0].detail
    assert git(vault, "show", "--name-only", "--format=", "HEAD").split() == ["notes/kites.md"]
    assert not (vault / "private" / "diary.md").exists()
    assert git(vault, "status", "--porcelain") == ""


def test_a_persons_edit_is_signed_with_the_identity_their_git_config_global_gives(
    text_only: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "person.gitconfig"
    config.write_text("[user]\n\tname = Ada Person\n\temail = ada@example.org\n", "utf-8")
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    (text_only.root / "inbox" / "kiwis.md").write_text("# Kiwis\n\nAda likes kiwis.\n", "utf-8")

    sha = text_only.recover()

    assert sha is not None
    assert git(text_only.root, "show", "-s", "--format=%an <%ae>", sha).strip() == (
        "Ada Person <ada@example.org>"
    )
