"""A purge erases the memory's own versions and nothing else: not a note a person (or
memvault) saved later at the path it had, not a note that stood there before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.service import MemoryService

from .helpers import PERSON, git, git_objects

SECRET = "Zanzibarquill"  # the memory's text: in no object once it is purged


def person_commits(vault: Path, path: str, message: str, text: str | None) -> None:
    """A person writes (or, with None, deletes) ``path`` and commits it by hand."""
    if text is None:
        (vault / path).unlink()
    else:
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(text, encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", message)


def persons_history(vault: Path, path: str) -> list[tuple[str, str, str]]:
    """The person's commits of ``path`` on every ref, newest first: subject, dates, and the
    file's bytes there (a rewrite changes the shas, never these)."""
    out = []
    for line in git(vault, "log", "--all", f"--author={PERSON}", "--format=%H %at %ct %s",
                    "--", path).splitlines():  # fmt: skip
        sha, author, committer, subject = line.split(" ", 3)
        held = git(vault, "ls-tree", "--name-only", sha, "--", path).strip()
        text = git(vault, "show", f"{sha}:{path}") if held else "(deleted)"
        out.append((subject, f"{author} {committer}", text))
    return out


def assert_erased(vault: Path) -> None:
    assert SECRET.lower().encode() not in git_objects(vault)
    assert SECRET not in git(vault, "log", "--all", "-p", "--format=%B")
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""


def test_purging_a_deleted_memory_keeps_the_persons_note_saved_since_at_its_path(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None
    person_vault.forget(memory.id, mode="delete")
    person_commits(vault, memory.path, "person's note", "# db hint\n\nCall Alice.\n")
    person_commits(vault, memory.path, "person's edit", "# db hint\n\nCall Alice. Then Bob.\n")
    before = persons_history(vault, memory.path)

    person_vault.forget(memory.id, mode="purge")

    assert (vault / memory.path).read_bytes() == b"# db hint\n\nCall Alice. Then Bob.\n"
    assert persons_history(vault, memory.path) == before
    assert [s for s, _, _ in before] == ["person's edit", "person's note"]
    assert_erased(vault)


def test_purging_a_deleted_memory_keeps_the_memory_written_since_at_its_path_and_its_log(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    old = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert old is not None
    person_vault.forget(old.id, mode="delete")
    new = person_vault.remember("Weekly sync moved to Thursdays.", title="db hint").memory
    assert new is not None and new.path == old.path
    person_vault.forget(old.id, mode="purge")
    assert "Thursdays" in person_vault.get(new.id).body
    subjects = git(vault, "log", "--all", "--format=%s", "--", new.path).splitlines()
    assert subjects == [f"remember: {new.path}"]  # its own message, not "(purged)"
    assert_erased(vault)


def test_purging_a_deleted_memory_keeps_a_note_with_another_id_saved_at_its_path(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None
    person_vault.forget(memory.id, mode="delete")
    text = "---\nid: 01HANDWRITTEN0001\ntype: note\n---\n# db hint\n\nCall Alice.\n"
    person_commits(vault, memory.path, "person's note with an id", text)
    before = persons_history(vault, memory.path)
    person_vault.forget(memory.id, mode="purge")
    assert (vault / memory.path).read_text(encoding="utf-8") == text
    assert persons_history(vault, memory.path) == before
    assert_erased(vault)


def test_purging_a_memory_renamed_then_deleted_erases_both_names_and_keeps_later_notes(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None
    moved = "archive/db-hint-old.md"
    (vault / "archive").mkdir(exist_ok=True)
    git(vault, "mv", memory.path, moved)
    git(vault, "commit", "-q", "-m", "moved by hand")
    person_commits(vault, moved, "deleted by hand", None)
    person_commits(vault, memory.path, "a new note", "# db hint\n\nCall Alice.\n")
    person_commits(vault, moved, "another new note", "# old hint\n\nCall Bob.\n")
    kept = persons_history(vault, memory.path), persons_history(vault, moved)

    person_vault.forget(memory.id, mode="purge")

    assert (vault / memory.path).read_text(encoding="utf-8") == "# db hint\n\nCall Alice.\n"
    assert (vault / moved).read_text(encoding="utf-8") == "# old hint\n\nCall Bob.\n"
    assert [s for s, _, _ in persons_history(vault, memory.path)] == ["a new note"]
    assert [s for s, _, _ in persons_history(vault, moved)] == ["another new note"]
    assert persons_history(vault, memory.path)[0] == kept[0][0]
    assert persons_history(vault, moved)[0] == kept[1][0]
    assert_erased(vault)


def test_purging_a_memory_keeps_the_persons_notes_before_and_after_it_at_its_path(
    person_vault: MemoryService,
) -> None:
    """The path reused twice: a person's note there, deleted; the memory, deleted; a
    person's note again. Only the memory's versions go."""
    vault = person_vault.root
    path = "inbox/db-hint.md"
    person_commits(vault, path, "first note", "# db hint\n\nThe old server is in room 4.\n")
    person_commits(vault, path, "first note edited", "# db hint\n\nServer in room 4, rack 2.\n")
    person_commits(vault, path, "first note deleted", None)
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None and memory.path == path
    person_vault.forget(memory.id, mode="delete")
    person_commits(vault, path, "second note", "# db hint\n\nCall Alice.\n")
    before = persons_history(vault, path)

    person_vault.forget(memory.id, mode="purge")

    assert persons_history(vault, path) == before
    assert (vault / path).read_text(encoding="utf-8") == "# db hint\n\nCall Alice.\n"
    assert_erased(vault)


def test_purging_a_present_memory_keeps_a_persons_note_deleted_before_it_at_its_path(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    path = "inbox/db-hint.md"
    person_commits(vault, path, "a note", "# db hint\n\nThe old server is in room 4.\n")
    person_commits(vault, path, "the note deleted", None)
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None and memory.path == path
    before = persons_history(vault, path)
    person_vault.forget(memory.id, mode="purge")
    assert persons_history(vault, path) == before
    assert not (vault / path).exists()
    assert_erased(vault)


@pytest.mark.parametrize("deleted", [False, True])
def test_purging_a_persons_note_that_later_got_an_id_erases_its_versions_without_one(
    person_vault: MemoryService, deleted: bool
) -> None:
    """A person's note (no ``id:``) that memvault later gave an id is one file: its
    id-less versions are the memory's, and go with it (the memory present or deleted)."""
    vault = person_vault.root
    path = "inbox/health.md"
    person_commits(vault, path, "a note", f"# Health\n\nDiagnosis: {SECRET}.\n")
    person_commits(vault, path, "edited", f"# Health\n\nDiagnosis: {SECRET}, mild.\n")
    memory = person_vault.get(path)
    person_vault.update(memory.id, content="# Health\n\nAll fine now.")  # writes the id
    assert f"id: {memory.id}" in (vault / path).read_text(encoding="utf-8")
    if deleted:
        person_vault.forget(memory.id, mode="delete")
    person_vault.forget(memory.id, mode="purge")
    assert not (vault / path).exists()
    assert git(vault, "log", "--all", "--format=%h", "--", path) == ""
    assert_erased(vault)


def test_purging_a_memory_deleted_and_restored_erases_its_versions_before_the_gap(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    path = "inbox/health.md"
    person_commits(vault, path, "a note", f"# Health\n\nDiagnosis: {SECRET}.\n")
    memory = person_vault.get(path)
    person_vault.update(memory.id, content="# Health\n\nAll fine now.")  # writes the id
    person_vault.forget(memory.id, mode="delete")
    git(vault, "checkout", "HEAD~1", "--", path)  # the person brings it back
    git(vault, "commit", "-q", "-m", "restored by hand")
    person_vault.forget(memory.id, mode="purge")
    assert not (vault / path).exists()
    assert git(vault, "log", "--all", "--format=%h", "--", path) == ""
    assert_erased(vault)


def test_purging_a_memory_whose_id_line_a_person_removed_before_deleting_it_erases_all(
    person_vault: MemoryService,
) -> None:
    vault = person_vault.root
    memory = person_vault.remember(f"The hint is {SECRET}.", title="db hint").memory
    assert memory is not None
    text = (vault / memory.path).read_text(encoding="utf-8")
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("id:"))
    person_commits(vault, memory.path, "no id", kept + f"\nAlso {SECRET} again.\n")
    person_commits(vault, memory.path, "deleted by hand", None)
    person_commits(vault, memory.path, "a new note", "# db hint\n\nCall Alice.\n")
    before = persons_history(vault, memory.path)[0]
    person_vault.forget(memory.id, mode="purge")
    assert persons_history(vault, memory.path) == [before]
    assert_erased(vault)


def test_purging_a_deleted_memory_keeps_a_later_note_at_its_path_with_its_first_bytes(
    person_vault: MemoryService,
) -> None:
    """A person's note that later got an id began as the template's bytes; after the
    memory's deletion, a new note there begins as those bytes again: that one stays."""
    vault = person_vault.root
    path, start = "inbox/meeting.md", "# Meeting\n\nAgenda:\n"
    person_commits(vault, path, "from the template", start)
    person_commits(vault, path, "given an id", f"---\nid: 01HANDMADE000001\n---\n{SECRET}\n")
    person_vault.forget("01HANDMADE000001", mode="delete")
    person_commits(vault, path, "a new meeting", start)
    before = persons_history(vault, path)[0]
    person_vault.forget("01HANDMADE000001", mode="purge")
    assert (vault / path).read_text(encoding="utf-8") == start
    assert persons_history(vault, path) == [before]
    assert_erased(vault)
