"""Importing a real-looking Obsidian vault: nothing readable is lost, nothing bad stops the
rest, a second import changes nothing, an edited note updates the same memory, and the
files the notes embed come along."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import doctor, ids
from memvault.cli import cli
from memvault.errors import GitError, InvalidInputError
from memvault.service import MemoryService
from memvault.sync import EMBED_NOW

from .helpers import REPO, commit_count, git, run_memvault

IMAGE = bytes(range(256)) * 8  # binary, NUL bytes included
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"
GIVEN_ID = "01JIMPORTEDNOTE0000000000A"
NOTES = {
    "people/Bob Lee.md": (
        "---\naliases: [Bobby]\ntags: [people]\n---\n# Bob Lee\n\n"
        "Bob runs the [[projects/shop/stack|shop stack]] and drew ![[whiteboard.jpg]].\n"
    ),
    "projects/shop/stack.md": (
        "---\ntitle: Shop stack\nstatus: draft  # mine, not memvault's\n---\n"
        "The shop runs on Django; see [[Bob Lee#Role]] and [the spec](../../attachments/spec.pdf)."
        "\n\nCode `#notatag` and <https://example.com/#nottag>.\n"
    ),
    "plain.md": "# Plain\n\nNo frontmatter at all.\n",
    "bom.md": "\ufeff# BOM note\n\nSaved by an editor that writes a byte order mark.\n",
    "kept.md": f"---\nid: {GIVEN_ID}\ntype: fact\n---\n# Kept\n\nThis note brings its own id.\n",
}
READABLE = sorted([*NOTES, "crlf.md"])


def obsidian_folder(tmp_path: Path) -> Path:
    """An Obsidian vault with the usual trouble in it."""
    src = tmp_path / "obsidian"
    for rel, text in NOTES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    (src / "crlf.md").write_bytes(b"---\r\nsource: windows\r\n---\r\n# Windows\r\n\r\nCRLF.\r\n")
    (src / "latin.md").write_bytes("# Café\n\nÉté à Paris.\n".encode("latin-1"))
    (src / "broken.md").write_text("---\ntags: [unclosed\n---\n# Broken\n\nBad YAML.\n")
    (src / "attachments").mkdir()
    (src / "attachments" / "whiteboard.jpg").write_bytes(IMAGE)
    (src / "attachments" / "spec.pdf").write_bytes(PDF)
    (src / "attachments" / "unused.png").write_bytes(IMAGE)
    for hidden in (".obsidian", ".trash"):
        (src / hidden).mkdir()
        (src / hidden / "workspace.md").write_text("# Not a note\n\nObsidian's own.\n")
    (src / ".obsidian" / "app.json").write_text("{}")
    return src


def vault_files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".memvault" not in p.parts
    }


def test_an_obsidian_vault_imports_whole_and_a_second_import_changes_nothing(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = obsidian_folder(tmp_path)
    root = text_only.root
    before = vault_files(root)
    report = text_only.import_path(src)
    assert sorted(report.paths) == READABLE and report.imported == len(READABLE)
    assert {(s.path, s.reason) for s in report.skipped} == {
        ("latin.md", "not UTF-8"),
        ("broken.md", "malformed frontmatter"),
    }
    assert sorted(report.attachments) == ["attachments/spec.pdf", "attachments/whiteboard.jpg"]
    assert (root / "attachments" / "whiteboard.jpg").read_bytes() == IMAGE
    assert (root / "attachments" / "spec.pdf").read_bytes() == PDF
    added = vault_files(root) - before
    assert added == {*READABLE, "attachments/spec.pdf", "attachments/whiteboard.jpg"}
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "-1", "--format=%s").startswith("import: ")
    assert text_only.get(GIVEN_ID).path == "kept.md"
    assert all(ids.is_id(text_only.get(rel).id) for rel in READABLE)
    assert (root / "crlf.md").read_bytes().count(b"\r\n") >= 5

    commits = commit_count(root)
    again = text_only.import_path(src)
    assert (again.imported, again.updated, again.unchanged) == (0, 0, len(READABLE))
    assert again.commit is None and again.attachments == () and len(again.skipped) == 2
    assert commit_count(root) == commits and vault_files(root) == added | before
    assert not [p for p in vault_files(root) if p.endswith("-2.md")]
    assert not [p for p in doctor.check_files(text_only.vault) if p.kind == "duplicate_id"]


def test_an_edited_note_updates_the_same_memory_and_keeps_memvaults_keys(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = obsidian_folder(tmp_path)
    text_only.import_path(src)
    plain_id = text_only.get("plain.md").id
    archived = text_only.forget(GIVEN_ID, "archive").memory.path  # moved to archive/
    (src / "plain.md").write_text("# Plain\n\nNo frontmatter, now edited.\n", encoding="utf-8")
    (src / "kept.md").write_text(NOTES["kept.md"].replace("own id", "own id, edited"))
    commits = commit_count(text_only.root)
    report = text_only.import_path(src)
    assert (report.imported, report.updated) == (0, 2)
    assert sorted(report.paths) == sorted([archived, "plain.md"])
    assert commit_count(text_only.root) == commits + 1
    plain = text_only.get("plain.md")
    assert plain.id == plain_id and "now edited" in plain.body
    kept = text_only.get(GIVEN_ID)
    assert kept.path == archived and "edited" in kept.body
    assert kept.meta["status"] == "archived" and kept.meta["type"] == "fact"
    assert not (text_only.root / "kept.md").exists()
    assert not [p for p in vault_files(text_only.root) if p.endswith("-2.md")]


def test_files_that_cannot_be_read_are_skipped_by_name_and_the_rest_imports(
    text_only: MemoryService, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    src = tmp_path / "mixed"
    (src / "_templates").mkdir(parents=True)
    (src / "good.md").write_text("# Good\n\nA fine note.\n")
    (src / "_templates" / "daily.md").write_text("# {{date}}\n")
    (src / "bin.md").write_bytes(b"# B\n\x00\x01\x02")
    (src / "what?.md").write_text("# Q\n\nA question.\n")
    (src / "huge.md").write_text("# Huge\n\n" + "x" * 1_100_000)
    (src / "link.md").symlink_to(src / "good.md")
    os.mkfifo(src / "pipe.md")
    with caplog.at_level(logging.WARNING):
        report = text_only.import_path(src)
    assert report.paths == ("good.md", "what.md")  # a name Windows refuses is made portable
    assert {(s.path, s.reason) for s in report.skipped} == {
        ("bin.md", "binary"),
        ("huge.md", "too large"),
        ("link.md", "symlink"),
        ("pipe.md", "not a regular file"),
    }
    for name in ("bin.md", "huge.md", "link.md", "pipe.md"):
        assert any(name in r.getMessage() for r in caplog.records), name
    assert not (text_only.root / "_templates" / "daily.md").exists()


def test_a_jsonl_import_skips_bad_lines_by_number_and_repeats_without_changes(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    good = json.dumps({"content": "The user prefers tea over coffee.", "type": "preference"})
    source.write_bytes(
        b"\n".join(
            [good.encode(), b"{not json", b"[1, 2]", '{"content": "caf\xe9"}'.encode("latin-1")]
        )
    )
    report = text_only.import_path(source)
    assert report.imported == 1
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("in.jsonl:2", "not JSON"),
        ("in.jsonl:3", "not an object"),
        ("in.jsonl:4", "not UTF-8"),
    ]
    commits = commit_count(text_only.root)
    again = text_only.import_path(source)  # created/updated default to "now": not a change
    assert (again.imported, again.updated, again.unchanged, again.commit) == (0, 0, 1, None)
    assert commit_count(text_only.root) == commits


def test_an_import_that_reads_nothing_fails_naming_the_file_and_writes_nothing(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "bad"
    src.mkdir()
    (src / "latin.md").write_bytes("# Café\n".encode("latin-1"))
    before, head = vault_files(text_only.root), git(text_only.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match=r"latin\.md is not UTF-8"):
        text_only.import_path(src)
    assert vault_files(text_only.root) == before
    assert git(text_only.root, "rev-parse", "HEAD") == head


def test_an_import_whose_commit_fails_leaves_no_file_behind(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = obsidian_folder(tmp_path)
    root = text_only.root
    before, head = vault_files(root), git(root, "rev-parse", "HEAD")
    index = root / ".git" / "index"
    saved = index.read_bytes()
    index.write_bytes(b"DIRC garbage")  # git cannot stage: the commit fails after the writes
    try:
        with pytest.raises(GitError):
            text_only.import_path(src)
    finally:
        index.write_bytes(saved)
    assert vault_files(root) == before
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""


def test_attachments_too_large_symlinked_or_outside_the_folder_are_not_copied(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    (src / "files").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("outside")
    with open(src / "files" / "big.bin", "wb") as handle:
        handle.truncate(20 * 1024 * 1024 + 1)  # sparse: never read
    (src / "files" / "ok.txt").write_text("fine")
    (src / "files" / "link.png").symlink_to(tmp_path / "secret.txt")
    (src / ".obsidian").mkdir()
    (src / ".obsidian" / "theme.css").write_text("body {}")
    (src / "note.md").write_text(
        "# Links\n\n![[files/big.bin]] ![[link.png]] [[ok.txt]] ![](../secret.txt) "
        "![[.obsidian/theme.css]] ![[missing.jpg]] [[Some Note]]\n"
    )
    report = text_only.import_path(src)
    assert report.attachments == ("files/ok.txt",)
    assert {(s.path, s.reason) for s in report.skipped} == {
        ("files/big.bin", "too large"),
        ("files/link.png", "symlink"),
        (".obsidian/theme.css", "ignored path"),
    }
    assert not (text_only.root / "secret.txt").exists()
    assert not (text_only.root / "files" / "big.bin").exists()


def test_the_import_command_prints_one_summary_line(vault_path: Path, tmp_path: Path) -> None:
    src = obsidian_folder(tmp_path)
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    result = run_memvault("--vault", str(vault_path), "import", str(src), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "imported 6, updated 0, unchanged 0, skipped 2 (malformed frontmatter: broken.md; "
        "not UTF-8: latin.md), attachments 2\n"
    )
    assert "latin.md" in result.stderr and "broken.md" in result.stderr  # warnings name them
    args = ["--vault", str(vault_path), "--json", "import", str(src)]
    again = CliRunner().invoke(cli, args, env={"MEMVAULT_EMBEDDER": "none"})
    data = json.loads(again.stdout)
    assert (data["imported"], data["unchanged"], data["commit"]) == (0, 6, None)
    assert {s["path"]: s["reason"] for s in data["skipped"]} == {
        "broken.md": "malformed frontmatter",
        "latin.md": "not UTF-8",
    }


def test_an_imported_obsidian_vault_keeps_what_the_person_wrote_through_memvaults_edits(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """Issue 10's whole story on one imported vault: titles, aliases, the person's status,
    tags only from prose, and line endings, BOM, keys and comments through an update."""
    text_only.import_path(obsidian_folder(tmp_path))
    root = text_only.root
    stack = text_only.get("projects/shop/stack.md")
    assert stack.title == "Shop stack"  # from `title:`, not the file name or a heading
    assert stack.status == "active" and stack.meta["status"] == "draft"
    assert "notatag" not in stack.tags and "nottag" not in stack.tags
    assert [h.path for h in text_only.recall("Bobby")][:1] == ["people/Bob Lee.md"]

    before = git(root, "rev-parse", "HEAD").strip()
    archived = text_only.forget(stack.id).memory
    text = (root / archived.path).read_text(encoding="utf-8")
    assert "status: draft  # mine, not memvault's" in text and "lifecycle: archived" in text
    assert stack.id not in {h.id for h in text_only.recall("Django shop")}
    text_only.revert(stack.id, before)
    back = text_only.get(stack.id)
    assert back.meta["status"] == "draft" and back.status == "active"

    crlf = text_only.get("crlf.md")
    text_only.update(crlf.id, fields={"importance": 0.8})
    data = (root / "crlf.md").read_bytes()
    assert b"source: windows\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    bom = text_only.get("bom.md")
    text_only.update(bom.id, content="Saved by an editor that writes a byte order mark. Edited.")
    assert (root / "bom.md").read_bytes().startswith("\ufeff".encode())


def test_an_import_never_replaces_a_note_or_a_file_it_did_not_write(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """Matching by path is for notes an earlier import wrote: a person's own note (or an
    agent's) at the path an imported note wants was overwritten, and so was an image."""
    root = text_only.root
    (root / "projects").mkdir(exist_ok=True)
    (root / "projects" / "car.md").write_text("# Car\n\nMy car is a red Volvo.\n")
    (root / "attachments").mkdir()
    (root / "attachments" / "car.png").write_bytes(IMAGE[:100])
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the person's own car note and photo")
    src = tmp_path / "src"
    (src / "projects").mkdir(parents=True)
    (src / "projects" / "car.md").write_text("# Car\n\nImported: a blue bike. ![[car.png]]\n")
    (src / "attachments").mkdir()
    (src / "attachments" / "car.png").write_bytes(IMAGE)
    report = text_only.import_path(src)
    assert (report.imported, report.updated) == (1, 0)
    assert (root / "projects" / "car.md").read_text() == "# Car\n\nMy car is a red Volvo.\n"
    assert "a blue bike" in (root / "projects" / "car-2.md").read_text()
    assert (root / "attachments" / "car.png").read_bytes() == IMAGE[:100]
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("attachments/car.png", "vault has another file there")
    ]
    (src / "projects" / "car.md").write_text("# Car\n\nImported: a green bike.\n")
    again = text_only.import_path(src)  # what the import wrote, it updates
    assert (again.imported, again.updated) == (0, 1)
    assert "a green bike" in (root / "projects" / "car-2.md").read_text()
    assert (root / "projects" / "car.md").read_text() == "# Car\n\nMy car is a red Volvo.\n"


def test_importing_notes_already_copied_in_by_hand_makes_no_twins(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """Notes a person copied into the vault (committed by them or the watcher) are the same
    notes: a first import of their folder leaves them alone instead of adding `-2` twins."""
    src = tmp_path / "src"
    (src / "projects").mkdir(parents=True)
    (src / "projects" / "car.md").write_text("---\ntags: [car]\n---\n# Car\n\nA red Volvo.\n")
    (src / "bike.md").write_text("# Bike\n\nA green bike.\n")
    root = text_only.root
    (root / "projects").mkdir(exist_ok=True)
    for rel in ("projects/car.md", "bike.md"):
        (root / rel).write_bytes((src / rel).read_bytes())
    git(root, "add", "-A")
    git(root, "commit", "-qm", "copied my notes in")
    report = text_only.import_path(src)
    assert (report.imported, report.updated, report.unchanged) == (0, 0, 2)
    assert not (root / "bike-2.md").exists() and not (root / "projects" / "car-2.md").exists()


def test_a_note_saved_where_an_imported_note_was_deleted_is_the_persons(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "car.md").write_text("# Car\n\nImported: a blue bike.\n")
    text_only.import_path(src)
    root = text_only.root
    git(root, "rm", "-q", "car.md")
    git(root, "commit", "-qm", "not mine")
    (root / "car.md").write_text("# Car\n\nMY OWN: plate AB-123.\n")
    git(root, "add", "car.md")
    git(root, "commit", "-qm", "my own car note")
    (src / "car.md").write_text("# Car\n\nImported: a green bike.\n")
    report = text_only.import_path(src)
    assert (report.imported, report.updated) == (1, 0)
    assert "AB-123" in (root / "car.md").read_text()
    assert "a green bike" in (root / "car-2.md").read_text()


def test_two_notes_of_one_import_wanting_one_path_say_nothing_about_the_vault(
    text_only: MemoryService, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "two.jsonl"
    lines = [
        {"content": "Tea at five.", "title": "Tea"},
        {"content": "Tea at six.", "title": "Tea"},
    ]
    source.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with caplog.at_level(logging.WARNING, logger="memvault.importing"):
        assert text_only.import_path(source).imported == 2
    assert "not from an import" not in caplog.text


def test_the_import_command_says_the_vectors_come_later(vault_path: Path, tmp_path: Path) -> None:
    """A bulk import indexes text only; until `reindex` or a running server embeds them,
    recall ranks the notes by text, which the person is told, not left to find out."""
    source = tmp_path / "many.jsonl"
    lines = [
        {"content": f"Shelf {n} holds the winter tyres, set {n}."} for n in range(EMBED_NOW + 1)
    ]
    source.write_text("".join(json.dumps(x) + "\n" for x in lines))
    said = CliRunner().invoke(cli, ["--vault", str(vault_path), "import", str(source)])
    assert said.exit_code == 0, said.output
    assert f"embedded: 0 of {EMBED_NOW + 1} memories" in said.stderr
    assert "memvault reindex" in said.stderr


def test_the_source_s_template_folder_is_not_imported(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """Importing an Obsidian vault copied its Templates/ (`# {{date}}`) in as memories:
    the vault's own settings said which folder holds templates, the import did not ask."""
    source = obsidian_folder(tmp_path)
    (source / ".obsidian" / "templates.json").write_text('{"folder": "Meta/Templates"}')
    (source / "Meta" / "Templates").mkdir(parents=True)
    (source / "Meta" / "Templates" / "Daily.md").write_text("# {{date}}\n\n## Tasks\n")
    (source / "Meta" / "about.md").write_text("# About\n\nThis vault is mine.\n")
    report = text_only.import_path(source)
    assert "Meta/about.md" in report.paths
    assert not any(p.startswith("Meta/Templates") for p in report.paths)
    assert ("Meta/Templates", "templates") in [(s.path, s.reason) for s in report.skipped]


def test_a_link_by_path_follows_a_note_put_beside_the_persons_note_of_its_name(
    text_only: MemoryService, tmp_path: Path
) -> None:
    """An imported note linking another by its path (``[[projects/car|car]]``) reaches the
    imported one when that one had to take a free name; a bare name is left to Obsidian."""
    root = text_only.root
    (root / "projects").mkdir(exist_ok=True)
    (root / "projects" / "car.md").write_text("# Car\n\nMy car is a red Volvo.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the person's own car note")
    src = tmp_path / "src"
    (src / "projects").mkdir(parents=True)
    (src / "projects" / "car.md").write_text("# Car\n\nA blue bike.\n")
    (src / "trips.md").write_text("Rode the [[projects/car|bike]] and the [[car]] to Oslo.\n")
    text_only.import_path(src)
    trips = (root / "trips.md").read_text()
    assert "[[projects/car-2|bike]] and the [[car]] to" in trips
    assert (root / "projects" / "car.md").read_text() == "# Car\n\nMy car is a red Volvo.\n"
    again = text_only.import_path(src)  # again: nothing to change
    assert (again.imported, again.updated) == (0, 0)
    assert (root / "trips.md").read_text() == trips
