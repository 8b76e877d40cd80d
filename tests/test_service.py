"""The write path on real git repositories: commits, person-made files, history, safety."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from memvault.errors import (
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    StaleRevisionError,
    UnsafePathError,
)
from memvault.models import Filters
from memvault.reports import export
from memvault.service import MemoryService

from .helpers import commit_count, git


def test_remember_makes_exactly_one_commit_naming_the_file(service: MemoryService) -> None:
    before = commit_count(service.vault.root)
    result = service.remember("The user wants summaries as Markdown tables.", type="preference")
    assert result.action == "created" and result.memory is not None
    assert commit_count(service.vault.root) == before + 1
    message = git(service.vault.root, "log", "-1", "--format=%B")
    assert message.startswith(f"remember: {result.memory.path}\n")
    assert f"Memvault-Id: {result.memory.id}" in message
    assert "Memvault-Op: remember" in message
    assert git(service.vault.root, "log", "-1", "--format=%an <%ae>").strip() == (
        "memvault <memvault@localhost>"
    )
    assert result.memory.path.startswith("preferences/")


def test_trivial_content_is_rejected_with_a_reason(service: MemoryService) -> None:
    before = commit_count(service.vault.root)
    for text in ("ok", "好的", "thanks"):
        result = service.remember(text)
        assert result.action == "rejected" and result.reason
    assert commit_count(service.vault.root) == before


def test_a_near_duplicate_is_reported_not_written_twice(service: MemoryService) -> None:
    first = service.remember("The user drinks green tea every morning.", type="fact")
    before = commit_count(service.vault.root)
    again = service.remember("The user drinks green tea every morning.", type="fact")
    assert again.action == "duplicate" and again.memory is None
    assert first.memory is not None and first.memory.path in (again.reason or "")
    assert commit_count(service.vault.root) == before


def test_a_likely_contradiction_is_reported(service: MemoryService) -> None:
    service.remember("The user likes spicy food.", type="preference")
    result = service.remember("The user does not like spicy food.", type="preference")
    assert result.action == "created"
    assert [s.relation for s in result.similar] == ["possible_contradiction"]


def test_a_hand_edited_file_keeps_unknown_keys_comments_and_order(service: MemoryService) -> None:
    path = service.vault.root / "facts" / "hand.md"
    original = textwrap.dedent(
        """\
        ---
        # written by a person in Obsidian
        mood: curious   # not a memvault key
        type: fact
        aliases: [Hand note]
        importance: 0.4
        ---
        # Hand note

        Body written by hand, with a [[link]] and #inline-tag.
        """
    )
    path.write_text(original, encoding="utf-8")
    service.recover()
    memory = service.get("facts/hand.md")
    assert memory.id_derived and "inline-tag" in memory.tags
    service.update(memory.id, fields={"importance": 0.8})
    text = path.read_text(encoding="utf-8")
    assert "# written by a person in Obsidian" in text
    assert "mood: curious   # not a memvault key" in text
    assert (
        text.index("mood")
        < text.index("type")
        < text.index("aliases")
        < text.index("importance: 0.8")
    )
    assert text.endswith("Body written by hand, with a [[link]] and #inline-tag.\n")
    assert f"id: {memory.id}" in text  # the derived id is now written, so it survives moves
    assert service.get(memory.id).path == "facts/hand.md"


def test_a_rename_by_hand_keeps_the_id_and_log_follows_it(service: MemoryService) -> None:
    result = service.remember("Project Apollo uses PostgreSQL 16.", type="fact")
    assert result.memory is not None
    memory_id, old = result.memory.id, result.memory.path
    root = service.vault.root
    (root / "projects" / "apollo").mkdir(parents=True)
    os.replace(root / old, root / "projects" / "apollo" / "database.md")
    service.recover()
    assert service.get(memory_id).path == "projects/apollo/database.md"
    commits = service.log(memory_id)
    assert [c.trailers.get("Memvault-Op") for c in commits] == ["external", "remember"]
    assert commits[-1].path == old


def test_revert_restores_the_old_text_as_a_new_commit(service: MemoryService) -> None:
    created = service.remember("The deploy day is Tuesday.", type="fact")
    assert created.memory is not None
    original = (service.vault.root / created.memory.path).read_text(encoding="utf-8")
    service.update(created.memory.id, content="The deploy day is Friday.")
    before = commit_count(service.vault.root)
    result = service.revert(created.memory.id, created.commit or "")
    assert commit_count(service.vault.root) == before + 1
    assert (service.vault.root / created.memory.path).read_text(encoding="utf-8") == original
    assert git(service.vault.root, "log", "-1", "--format=%s").startswith(
        f"revert: {created.memory.path} to "
    )
    assert result.previous_revision is not None


def test_update_refuses_a_stale_expected_revision(service: MemoryService) -> None:
    created = service.remember("The office is in Berlin.", type="fact")
    assert created.memory is not None
    stale = created.memory.content_hash
    path = service.vault.root / created.memory.path
    path.write_text(path.read_text(encoding="utf-8") + "\nEdited by a person.\n", encoding="utf-8")
    with pytest.raises(StaleRevisionError, match="get_memory"):
        service.update(created.memory.id, content="Munich", expected_revision=stale)
    assert "Edited by a person." in path.read_text(encoding="utf-8")


def test_purge_leaves_no_trace_of_the_text_in_any_history(service: MemoryService) -> None:
    secret = "The user's bank PIN hint is zebra-7731"
    created = service.remember(secret, type="fact")
    assert created.memory is not None
    service.update(created.memory.id, content=secret + " (updated)")
    service.remember("An unrelated memory that must survive.", type="fact")
    assert "zebra-7731" in git(service.vault.root, "log", "-p", "--all")
    service.forget(created.memory.id, mode="purge", reason="privacy request")
    history = git(service.vault.root, "log", "-p", "--all")
    assert "zebra-7731" not in history
    assert "An unrelated memory that must survive." in history
    assert not (service.vault.root / created.memory.path).exists()
    objects = git(service.vault.root, "rev-list", "--all", "--objects")
    assert created.memory.path not in objects
    assert git(service.vault.root, "log", "-1", "--format=%s").startswith("purge: memory ")


def test_forget_archives_by_default_and_is_reversible(service: MemoryService) -> None:
    created = service.remember("The user is training for a marathon.", type="fact")
    assert created.memory is not None
    archived = service.forget(created.memory.id, reason="user asked")
    assert archived.memory.path.startswith("archive/") and archived.memory.status == "archived"
    assert all(m.id != created.memory.id for m in service.list_memories().memories)
    assert any(
        m.id == created.memory.id
        for m in service.list_memories(Filters(include_archived=True)).memories
    )
    deleted = service.forget(created.memory.id, mode="delete")
    assert deleted.action == "deleted" and not (service.vault.root / archived.memory.path).exists()
    restored = service.revert(archived.memory.path, archived.commit or "")
    assert restored.memory.id == created.memory.id


TOO_MANY_SCOPES = [f"user:{i:03d}" + "z" * 90 for i in range(1000)]


@pytest.mark.parametrize(
    ("write", "phrase"),
    [
        (lambda s, i: s.forget(i, reason="x" * 70_000), "reason is 70,000 characters"),
        (lambda s, i: s.forget(i, reason="user\x00asked"), "reason contains a NUL byte"),
        (lambda s, i: s.update(i, fields={"scope": TOO_MANY_SCOPES}), "1000 scope labels"),
        (lambda s, i: s.update(i, fields={"notes": "n" * 70_000}), r"fields: notes \(70,0"),
        (lambda s, i: s.update(i, fields={"aliases": ["a" * 900] * 80}), r"fields: aliases"),
    ],
    ids=["forget-long-reason", "forget-nul-reason", "scope-labels", "long-field", "long-list"],
)
def test_a_write_that_would_not_read_back_is_refused_and_the_memory_keeps_its_id_and_status(
    svc: MemoryService, write: Any, phrase: str
) -> None:
    made = svc.remember("The user's cat is called Miso and is nine years old.", tags=["pets"])
    assert made.memory is not None
    root, memory = svc.vault.root, made.memory
    head, before = git(root, "rev-parse", "HEAD"), (root / memory.path).read_bytes()
    with pytest.raises(InvalidInputError, match=phrase):
        write(svc, memory.id)
    assert git(root, "rev-parse", "HEAD") == head, "a refused write made a commit"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert (root / memory.path).read_bytes() == before
    again = svc.get(memory.id)
    assert (again.id, again.path, again.status, again.tags) == (
        memory.id,
        memory.path,
        "active",
        ("pets",),
    )


CRASH_SCRIPT = """
import os, signal, sys
from pathlib import Path
from memvault.config import Settings
from memvault.service import MemoryService
svc = MemoryService.open(Path(sys.argv[1]), Settings(embedder="none"))
def crash(*args, **kwargs):  # the process dies after the file write, before the commit
    os.kill(os.getpid(), signal.SIGKILL)
svc.history.commit = crash
svc.remember("Written just before the crash.", type="fact", check_similar=False)
"""


def test_a_crash_between_write_and_commit_is_recovered_on_next_start(vault_path: Path) -> None:
    before = commit_count(vault_path)
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(vault_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9
    written = [p.read_text(encoding="utf-8") for p in vault_path.glob("facts/*.md")]
    assert any("Written just before the crash." in text for text in written)
    assert commit_count(vault_path) == before
    svc = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert commit_count(vault_path) == before + 1
        assert git(vault_path, "log", "-1", "--format=%B").count("Memvault-Op: recover") == 1
        assert git(vault_path, "status", "--porcelain").strip() == ""
        found = svc.recall("crash", mode="bm25")
        assert found and found[0].snippet == "Written just before the crash."
    finally:
        svc.close()


def test_opening_the_vault_never_stages_a_file_git_left_unmerged(vault_path: Path) -> None:
    note = vault_path / "facts" / "car.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# Car\n\nThe user's car is blue.\n", encoding="utf-8")
    git(vault_path, "add", "facts/car.md")
    git(vault_path, "commit", "-qm", "car")
    note.write_text("# Car\n\nThe user's car is red.\n", encoding="utf-8")
    git(vault_path, "stash", "-q")
    note.write_text("# Car\n\nThe user's car is green.\n", encoding="utf-8")
    git(vault_path, "commit", "-qam", "green")
    with pytest.raises(subprocess.CalledProcessError):
        git(vault_path, "stash", "pop")  # a conflict, and no merge in progress
    before = commit_count(vault_path)

    MemoryService.open(vault_path, Settings(embedder="none")).close()

    assert commit_count(vault_path) == before
    assert git(vault_path, "ls-files", "-u", "--", "facts/car.md").strip()  # still the person's


WRITER = """
import sys
from pathlib import Path
from memvault.config import Settings
from memvault.service import MemoryService
svc = MemoryService.open(Path(sys.argv[1]), Settings(embedder="none"))
for n in range(50):
    svc.remember(f"Writer {sys.argv[2]} remembers fact number {n}.", type="fact",
                 check_similar=False)
svc.close()
"""


def test_two_processes_adding_fifty_each_end_with_100_files_and_100_commits(
    vault_path: Path,
) -> None:
    before = commit_count(vault_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault_path), name],
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("A", "B")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert len(list((vault_path / "facts").glob("*.md"))) == 100
    assert commit_count(vault_path) == before + 100
    assert git(vault_path, "status", "--porcelain").strip() == ""


@pytest.mark.parametrize("bad", ["../../etc/passwd", "/etc/passwd", "facts/../../x.md"])
def test_unsafe_ids_are_refused_with_a_clear_error(service: MemoryService, bad: str) -> None:
    with pytest.raises(UnsafePathError, match="vault"):
        service.get(bad)
    with pytest.raises(UnsafePathError):
        service.update(bad, content="x")
    with pytest.raises(UnsafePathError):
        service.remember("A fact to store somewhere odd.", folder="../outside")


def test_a_symlink_out_of_the_vault_is_refused(service: MemoryService, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntype: fact\n---\nsecret\n")
    os.symlink(outside, service.vault.root / "facts" / "link.md")
    with pytest.raises(UnsafePathError, match="outside the vault"):
        service.get("facts/link.md")
    assert all(m.path != "facts/link.md" for m in service.list_memories().memories)


@pytest.mark.parametrize("replacement", ["symlink", "fifo"])
def test_a_memory_turned_into_a_symlink_or_fifo_blocks_no_other_write_or_recall(
    service: MemoryService, tmp_path: Path, replacement: str
) -> None:
    """The index still holds the note a person replaced: the duplicate check and recall
    pass over it instead of failing on a file nobody asked about."""
    old = service.remember("Note about sailing boats in the harbor at dawn.", type="fact")
    assert old.memory is not None
    where = service.vault.root / old.memory.path
    where.unlink()
    if replacement == "symlink":
        (tmp_path / "outside.md").write_text("---\ntype: fact\n---\nsailing boats\n")
        where.symlink_to(tmp_path / "outside.md")
    else:
        os.mkfifo(where)
    new = service.remember("Sailing boats leave the harbor at dawn, a note.", type="fact")
    assert new.action == "created" and new.memory is not None
    assert (service.vault.root / new.memory.path).is_file()
    found = [h.path for h in service.recall("sailing boats harbor dawn", k=5)]
    assert new.memory.path in found and old.memory.path not in found


def test_reading_a_memory_refuses_links_fifos_and_oversized_files_and_misses_folders(
    service: MemoryService,
) -> None:
    """What a recall reads for each hit: only a regular file inside the vault."""
    root, vault = service.vault.root, service.vault
    (root / "facts" / "real.md").write_text("---\ntype: fact\n---\nreal body\n")
    os.symlink(root / "facts" / "real.md", root / "facts" / "inside-link.md")
    (root / "linked").symlink_to(root / "facts", target_is_directory=True)
    os.mkfifo(root / "facts" / "pipe.md")
    (root / "facts" / "folder.md").mkdir()
    (root / "facts" / "huge.md").write_text("x" * (vault.max_file_bytes + 1))
    assert vault.read("facts/real.md").body.strip() == "real body"
    assert vault.read("./facts//real.md").path == "facts/real.md"
    with pytest.raises(UnsafePathError, match="is a symlink"):
        vault.read("facts/inside-link.md")
    with pytest.raises(UnsafePathError, match="is a symlink"):
        vault.read("linked/real.md")  # a symlinked folder on the way
    with pytest.raises(UnsafePathError, match="not a regular file"):
        vault.read("facts/pipe.md")  # refused unopened: opening a FIFO would block
    for missing in ("facts/folder.md", "facts/nothing.md"):
        with pytest.raises(MemoryNotFoundError):
            vault.read(missing)
    with pytest.raises(MalformedMemoryError, match="over the"):
        vault.read("facts/huge.md")


def test_bad_files_do_not_crash_listing_and_are_reported(service: MemoryService) -> None:
    root = service.vault.root
    (root / "facts" / "broken.md").write_text("---\ntags: [unclosed\n---\nstill readable body\n")
    (root / "facts" / "bom.md").write_bytes(b"\xef\xbb\xbf---\r\ntype: fact\r\n---\r\nBOM body\r\n")
    (root / "facts" / "binary.md").write_bytes(b"\x00\x01\x02 binary")
    (root / "facts" / "huge.md").write_text("x" * (5 * 1024 * 1024))
    (root / "facts" / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    page = service.list_memories(Filters(include_archived=True))
    listed = {m.path: m for m in page.memories}
    assert set(listed) >= {"facts/bom.md", "facts/broken.md"}
    assert listed["facts/bom.md"].type == "fact" and "BOM body" in service.get("facts/bom.md").body
    assert "still readable body" in service.get("facts/broken.md").body
    unreadable = {p.path: p.kind for p in page.unreadable}
    assert unreadable == {
        "facts/binary.md": "binary",
        "facts/huge.md": "too_large",
        "facts/latin1.md": "encoding",
    }
    kinds = {p.path: p.kind for p in service.problems()}
    assert kinds == {
        "facts/broken.md": "malformed",
        "facts/binary.md": "binary",
        "facts/huge.md": "too_large",
        "facts/latin1.md": "encoding",
    }
    with pytest.raises(MalformedMemoryError, match="by hand"):
        service.update("facts/broken.md", content="overwrite")
    assert (root / "facts" / "broken.md").read_text().startswith("---\ntags: [unclosed")


def test_input_errors_say_what_to_do(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        service.remember("A valid sentence to remember.", importance=3.0)
    with pytest.raises(MemoryNotFoundError, match="list"):
        service.get("01NOSUCHMEMORY00")
    with pytest.raises(InvalidInputError, match="nothing to update"):
        created = service.remember("Another valid sentence here.", type="fact")
        assert created.memory is not None
        service.update(created.memory.id)


def test_export_has_every_memory_with_its_history(service: MemoryService) -> None:
    created = service.remember("The user's cat is called Miso.", type="fact")
    assert created.memory is not None
    service.update(created.memory.id, fields={"importance": 0.9})
    data = export(service)
    entry = next(m for m in data["memories"] if m["id"] == created.memory.id)
    assert [h["op"] for h in entry["history"]] == ["update", "remember"]
    assert entry["meta"]["importance"] == 0.9 and "Miso" in entry["body"]


def test_paths_are_literal_not_git_globs(service: MemoryService) -> None:
    root = service.vault.root
    (root / "facts" / "star*.md").write_text("---\ntype: fact\n---\nA star in the name.\n")
    (root / "facts" / "starX.md").write_text("---\ntype: fact\n---\nMatched by the glob.\n")
    service.commit_external(["facts/star*.md"])
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["facts/star*.md"]
    assert "facts/starX.md" in git(root, "status", "--porcelain", "-uall")


def test_show_at_returns_a_memory_as_it_was_before_a_rename(service: MemoryService) -> None:
    created = service.remember("The wiki lives on the intranet.", type="fact")
    assert created.memory is not None and created.commit
    root = service.vault.root
    os.replace(root / created.memory.path, root / "facts" / "wiki.md")
    service.update(created.memory.id, content="The wiki moved to the cloud.")
    old = service.show_at(created.memory.id, created.commit)
    assert "The wiki lives on the intranet." in old and "cloud" not in old


@pytest.mark.parametrize(
    "lines",
    [
        ["/README.md"],
        ["private/", "*.draft.md", "**/secret/**", "journal/2019-*.md", "# a comment", ""],
        ["drafts/", "!drafts/keep.md", "*.tmp.md", "!keep.tmp.md"],
        ["# only a comment", ""],
    ],
)
def test_memvaultignore_decides_every_path_as_gitignore_does(lines: list[str]) -> None:
    import pathspec

    from memvault.vault import ignore_rule

    paths = [
        "README.md", "notes/README.md", "private/a.md", "notes/private/b.md", "privateer.md",
        "x.draft.md", "notes/x.draft.md", "a/secret/b/c.md", "secret.md", "journal/2019-05.md",
        "journal/2020-05.md", "old/journal/2019-05.md", "drafts/a.md", "drafts/keep.md",
        "a.tmp.md", "keep.tmp.md", "notes/keep.tmp.md", "facts/plain.md",
    ]  # fmt: skip
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    rule = ignore_rule(lines)
    decided = {p: bool(rule and rule(p)) for p in paths}
    assert decided == {p: spec.match_file(p) for p in paths}
    assert any(decided.values()) == any(line and not line.startswith("#") for line in lines)


def test_new_text_replaces_a_title_that_was_only_the_old_texts_first_line(
    text_only: MemoryService,
) -> None:
    """A derived title would otherwise keep stating the corrected fact ("locker 42" over
    "locker 57"); a title of its own is kept."""
    derived = text_only.remember("The user's locker number is 42.", type="fact")
    named = text_only.remember("Locker 7 at the pool.", type="fact", title="Pool locker")
    assert derived.memory is not None and named.memory is not None
    text_only.update(derived.memory.id, content="The user's locker number is 57.")
    text_only.update(named.memory.id, content="Locker 9 at the pool.")
    fixed = text_only.get(derived.memory.id)
    assert fixed.title == "The user's locker number is 57."
    assert "42" not in fixed.body
    assert text_only.get(named.memory.id).title == "Pool locker"


def test_archiving_an_archived_memory_changes_nothing(text_only: MemoryService) -> None:
    created = text_only.remember("The user's old phone number ended in 4411.", type="fact")
    assert created.memory is not None
    first = text_only.forget(created.memory.id, reason="outdated")
    commits = commit_count(text_only.vault.root)
    again = text_only.forget(created.memory.id, reason="again")
    assert (again.action, again.commit) == ("unchanged", None)
    assert commit_count(text_only.vault.root) == commits
    kept = text_only.get(created.memory.id)
    assert kept.meta["archived_reason"] == "outdated"
    assert kept.meta["archived"] == first.memory.meta["archived"]


def test_status_archived_through_update_is_refused_in_favour_of_forget(
    text_only: MemoryService,
) -> None:
    """Only forget moves a memory to archive/ and records when and why."""
    created = text_only.remember("The user's gym is on Elm Street.", type="fact")
    assert created.memory is not None
    commits = commit_count(text_only.vault.root)
    with pytest.raises(InvalidInputError, match="call forget"):
        text_only.update(created.memory.id, fields={"status": "archived"})
    assert commit_count(text_only.vault.root) == commits
    assert text_only.get(created.memory.id).status == "active"
