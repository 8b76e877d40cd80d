"""`memvault init` over a folder a person already has (an Obsidian vault, a notes folder):
their files stay byte for byte, their `.obsidian/` gets nothing new, their README stays a
memory, and a brand-new folder still gets the whole template."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from memvault.config import Settings
from memvault.models import Filters
from memvault.service import MemoryService
from memvault.template import create_vault, template_dir

from .helpers import commit_count, git, run_memvault

PERSON = ("-c", "user.name=Person", "-c", "user.email=p@example.org")

PERSONS_FILES = {
    ".obsidian/app.json": '{"showLineNumber": true}\n',
    ".obsidian/community-plugins.json": '["obsidian-git"]\n',
    ".obsidian/plugins/obsidian-git/data.json": '{"autoSaveInterval": 5}\n',
    "README.md": "# Mine\nCodename Bluebird, the garden project.\n",
    "notes/trip.md": "---\ntags: [travel]\n---\n# Trip\nLisbon in May.\n",
    ".gitignore": "secret/\n",
}


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def digests(root: Path) -> dict[str, str]:
    """sha256 of every regular file under ``root`` (git's own folder left out)."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink() and ".git" not in path.relative_to(root).parts
    }


def under(found: dict[str, str], folder: str) -> dict[str, str]:
    return {rel: digest for rel, digest in found.items() if rel.startswith(f"{folder}/")}


def test_init_over_an_obsidian_vault_writes_nothing_into_its_obsidian_folder(
    tmp_path: Path,
) -> None:
    root = tmp_path / "garden"
    write_files(root, PERSONS_FILES)
    before = under(digests(root), ".obsidian")
    done = run_memvault("init", str(root))
    assert done.returncode == 0, done.stderr
    assert commit_count(root) == 1
    assert under(digests(root), ".obsidian") == before  # same files, same bytes, none added


def test_a_readme_the_person_had_before_init_stays_a_memory_found_by_full_text(
    tmp_path: Path,
) -> None:
    root = tmp_path / "garden"
    write_files(root, PERSONS_FILES)
    assert create_vault(root)
    service = MemoryService.open(root, Settings(embedder="none"))
    try:
        assert not service.is_ignored("README.md")
        assert "README.md" in [hit.path for hit in service.recall("Bluebird")]
    finally:
        service.close()


def test_init_over_a_folder_never_rewrites_a_file_that_was_there(tmp_path: Path) -> None:
    root = tmp_path / "garden"
    write_files(root, {**PERSONS_FILES, ".memvaultignore": "drafts/\n"})
    before = digests(root)
    done = run_memvault("init", str(root))
    assert done.returncode == 0, done.stderr
    after = digests(root)
    assert {rel: after.get(rel) for rel in before} == before
    assert set(under(after, ".obsidian")) == set(under(before, ".obsidian"))


def test_a_persons_memvaultignore_gets_no_template_readme_it_does_not_hide(
    tmp_path: Path,
) -> None:
    root = tmp_path / "garden"
    write_files(root, {".memvaultignore": "drafts/\n", "notes/trip.md": "# Trip\nLisbon.\n"})
    assert create_vault(root)
    assert (root / ".memvaultignore").read_text(encoding="utf-8") == "drafts/\n"
    assert not (root / "README.md").exists()  # it would have become a memory of the vault


def test_init_writes_nothing_through_a_dangling_symlink_at_a_template_path(
    tmp_path: Path,
) -> None:
    root = tmp_path / "garden"
    write_files(root, {"notes/trip.md": "# Trip\nLisbon.\n"})
    (root / "README.md").symlink_to(tmp_path / "elsewhere.md")
    assert create_vault(root)
    assert (root / "README.md").is_symlink()
    assert not (tmp_path / "elsewhere.md").exists()


@pytest.mark.parametrize("notes", [{}, {"notes/trip.md": "# Trip\nLisbon.\n"}])
def test_init_of_a_folder_without_obsidian_settings_or_readme_copies_the_whole_template(
    tmp_path: Path, notes: dict[str, str]
) -> None:
    root = tmp_path / "new"
    write_files(root, notes)
    done = run_memvault("init", str(root))
    assert done.returncode == 0, done.stderr
    template = template_dir()
    expected = {**digests(template), **under(digests(root), "notes")}
    assert digests(root) == expected
    service = MemoryService.open(root, Settings(embedder="none"))
    try:
        assert service.is_ignored("README.md")  # the template's own README is no memory
    finally:
        service.close()


def test_init_writes_nothing_through_a_symlinked_or_dangling_folder(tmp_path: Path) -> None:
    """A person's `facts -> elsewhere` gets no template file written into elsewhere; a
    dangling `tasks -> nowhere` does not stop init."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "garden"
    root.mkdir()
    (root / "facts").symlink_to(elsewhere, target_is_directory=True)
    (root / "tasks").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    done = run_memvault("init", str(root))
    assert done.returncode == 0, done.stderr
    assert list(elsewhere.iterdir()) == []
    assert (root / "tasks").is_symlink() and not (tmp_path / "nowhere").exists()
    assert commit_count(root) == 1


def test_init_over_an_obsidian_vault_backed_up_with_git_commits_the_template_alone(
    tmp_path: Path,
) -> None:
    root = tmp_path / "garden"
    write_files(root, {**PERSONS_FILES, ".gitignore": "secret/\narchive/\n"})
    git(root, "init", "-q", "-b", "master")
    git(root, "add", "-A")
    git(root, *PERSON, "commit", "-qm", "vault backup")
    (root / "notes" / "trip.md").write_text("# Trip\nLisbon in June.\n", encoding="utf-8")
    git(root, "add", "notes/trip.md")
    (root / "notes" / "draft.md").write_text("# Draft\nNot yet.\n", encoding="utf-8")
    status = git(root, "status", "--porcelain")

    assert create_vault(root) is True

    made = git(root, "show", "--name-only", "--format=%s", "HEAD").split()
    assert made[:3] == ["init:", "memvault", "vault"] and "_schemas/profile.yaml" in made
    assert "inbox/.gitkeep" in made and "archive/.gitkeep" not in made  # the person ignores it
    assert not [p for p in made if p.startswith(("notes/", ".obsidian/"))]
    assert git(root, "status", "--porcelain") == status  # their changes: as they were
    assert commit_count(root) == 2 and create_vault(root) is False


def test_init_inside_another_repository_warns_that_it_will_see_the_vault_as_untracked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    git(dotfiles, "init", "-q")

    with caplog.at_level(logging.WARNING, logger="memvault.template"):
        assert create_vault(dotfiles / "memory") is True
        assert create_vault(tmp_path / "elsewhere") is True

    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and f"inside the git repository at {dotfiles.resolve()}" in said[0]
    assert commit_count(dotfiles / "memory") == 1


def test_init_over_a_vault_with_capitalised_folders_adds_no_twin_and_writes_into_them(
    tmp_path: Path,
) -> None:
    """On a case-sensitive disk `init` made `people/` and `inbox/` beside a person's
    `People/` and `Inbox/`, and every note memvault wrote went into its own twin."""
    root = tmp_path / "vault"
    write_files(root, {"People/Ana.md": "# Ana\nMy sister.\n", "Inbox/idea.md": "# Idea\n"})
    (root / "Facts").mkdir()
    create_vault(root)
    tops = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert "people" not in tops and "inbox" not in tops and "facts" not in tops
    assert {"People", "Inbox", "Facts", "archive", "profile", "preferences"} <= set(tops)
    source = tmp_path / "more.jsonl"
    source.write_text('{"content": "Water the ferns on Sundays."}\n', encoding="utf-8")
    service = MemoryService.open(root, Settings(embedder="none"))
    try:
        note = service.remember("Call the plumber about the leaking tap.", type="note")
        fact = service.remember("The boiler was serviced in October 2026.", type="fact")
        pref = service.remember("The user prefers tea over coffee.", type="preference")
        ana = service.remember("Ana moved to Porto.", type="fact", folder="people")
        imported = service.import_path(source)
        in_inbox = service.recall("plumber leaking tap", filters=Filters(folder="inbox"))
    finally:
        service.close()
    assert note.memory is not None and note.memory.path.startswith("Inbox/")
    assert fact.memory is not None and fact.memory.path.startswith("Facts/")
    assert pref.memory is not None and pref.memory.path.startswith("preferences/")
    assert ana.memory is not None and ana.memory.path.startswith("People/")
    assert [p.split("/")[0] for p in imported.paths] == ["Inbox"]
    assert [h.id for h in in_inbox] == [note.memory.id]  # a folder filter, case aside
