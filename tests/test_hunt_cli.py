"""The command line, export, the changes feed, purge and imports as a person uses them."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.errors import InvalidInputError
from memvault.models import Filters
from memvault.service import MemoryService

from .helpers import REPO, git, git_objects, run_memvault

APRIL_2023 = dt.datetime(2023, 4, 5, 10, 0, tzinfo=dt.UTC)


def test_a_note_imported_without_a_created_date_is_dated_by_its_file_and_found_by_period(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "notes"
    src.mkdir()
    (src / "kyoto.md").write_text("# Trip to Kyoto\n\nWent to Kyoto in spring.\n")
    (src / "dated.md").write_text("---\ncreated: 2021-01-02\n---\n# Dated\n\nIts own date.\n")
    (src / "template.md").write_text("---\ndate: 2022-06-01\n---\n# Template\n\nA date key.\n")
    for name in ("kyoto.md", "dated.md", "template.md"):
        os.utime(src / name, (APRIL_2023.timestamp(), APRIL_2023.timestamp()))

    report = text_only.import_path(src)

    assert report.imported == 3
    template = text_only.vault.read("template.md")
    assert template.created is not None and template.created.startswith("2022-06-01")
    kyoto = text_only.vault.read("kyoto.md")
    assert kyoto.created is not None and kyoto.created.startswith("2023-04-05T10:00:00")
    assert "created: 2021-01-02\n" in (text_only.root / "dated.md").read_text()  # its own kept
    period = Filters(since=dt.datetime(2023, 1, 1, tzinfo=dt.UTC), until=APRIL_2023)
    assert [m.path for m in text_only.list_memories(period).memories] == ["kyoto.md"]
    again = text_only.import_path(src)  # the date memvault added is not a change
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 3)


def test_plain_text_files_import_as_notes_and_a_folder_without_notes_is_refused(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "apple-notes"
    (src / "Recipes").mkdir(parents=True)
    (src / "Recipes" / "Soup.txt").write_text("Miso soup\nDashi, miso, tofu.\n")
    (src / "Recipes" / "Tea.markdown").write_text("# Tea\n\nSteep three minutes.\n")
    report = text_only.import_path(src)
    assert report.paths == ("Recipes/Soup.md", "Recipes/Tea.md")
    soup = text_only.vault.read("Recipes/Soup.md")
    assert "Dashi, miso, tofu." in soup.body
    assert text_only.import_path(src).unchanged == 2

    empty = tmp_path / "pictures"
    (empty / ".obsidian").mkdir(parents=True)
    (empty / ".obsidian" / "app.md").write_text("# settings\n")
    (empty / "photo.png").write_bytes(b"\x89PNG\r\n")
    head = git(text_only.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match="holds no note"):
        text_only.import_path(empty)
    assert git(text_only.root, "rev-parse", "HEAD") == head
    assert not (text_only.root / "photo.png").exists()


def test_an_export_into_the_vault_is_refused_so_its_history_never_holds_a_purged_text(
    text_only: MemoryService, tmp_path: Path
) -> None:
    text_only.remember("My passport number is ZZ998877, keep it private.")
    head = git(text_only.root, "rev-parse", "HEAD")
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    for out in (text_only.root / "export.json", text_only.root / "inbox" / "all.json"):
        result = run_memvault("--vault", str(text_only.root), "export", "--out", str(out), env=env)
        assert result.returncode == 1
        assert result.stderr.startswith("error: ") and "outside the vault" in result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert not out.exists()
    assert git(text_only.root, "status", "--porcelain") == ""
    assert git(text_only.root, "rev-parse", "HEAD") == head
    outside = tmp_path / "export.json"
    args = ("--vault", str(text_only.root), "export", "--out", str(outside))
    assert run_memvault(*args, env=env).returncode == 0
    assert "ZZ998877" in outside.read_text()


def test_a_logseq_graph_imports_with_its_page_properties_and_journal_days(
    text_only: MemoryService, tmp_path: Path
) -> None:
    graph = tmp_path / "logseq"
    (graph / "pages").mkdir(parents=True)
    (graph / "journals").mkdir()
    (graph / "pages" / "Garden.md").write_text(
        "title:: Garden plans\ntags:: home, [[spring work]], #outdoors\nalias:: Yard\n"
        "rating:: 9\ntype:: [[project]]\n\n- plant tomatoes\n- fix the fence, see [[Tools]]\n"
    )
    (graph / "journals" / "2023_04_05.md").write_text("- bought seeds for [[Garden]]\n")

    text_only.import_path(graph)

    garden = text_only.vault.read("pages/Garden.md")
    assert garden.title == "Garden plans"
    assert list(garden.tags) == ["home", "spring work", "outdoors"]
    assert garden.meta["aliases"] == ["Yard"] and garden.meta["rating"] == "9"
    assert garden.type == "project"  # a page named as a value is its name
    assert garden.body.startswith("- plant tomatoes\n")  # the property lines moved up
    journal = text_only.vault.read("journals/2023_04_05.md")
    assert journal.created is not None and journal.created.startswith("2023-04-05")
    again = text_only.import_path(graph)
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 2)


def test_a_command_run_inside_a_vault_or_given_a_file_says_which_vault_to_pass(
    text_only: MemoryService, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    env = {
        "MEMVAULT_EMBEDDER": "none",
        "PYTHONPATH": str(REPO),
        "MEMVAULT_VAULT": "",
        "HOME": str(elsewhere),
        "XDG_DATA_HOME": str(elsewhere / "data"),
    }
    inside = run_memvault("list", cwd=text_only.root / "inbox", env=env)
    assert inside.returncode == 1 and inside.stdout == ""
    assert inside.stderr.startswith("error: no vault at ")
    assert f"--vault {text_only.root}" in inside.stderr and len(inside.stderr.splitlines()) == 1
    a_file = text_only.root / "README.md"
    given_file = run_memvault("--vault", str(a_file), "status", env=env)
    assert given_file.returncode == 1
    assert (
        given_file.stderr == f"error: {a_file} is a file, not a vault folder: give --vault "
        "the vault's folder\n"
    )


def test_notes_named_as_apple_notes_and_notion_name_them_import_under_portable_names(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "export"
    (src / "Q&A: 2024").mkdir(parents=True)
    long_name = "长" * 80  # 240 bytes: the vault's write needs a longer temporary name
    notes = {
        "What? Why: now.md": "What?",
        "Q&A: 2024/a|b.txt": "A or b",
        "CON.md": "Console",
        f"{long_name}.md": "Long",
        "Dr..md": "Kept as it is",
    }
    for rel, text in notes.items():
        (src / rel).write_text(f"# {text}\n\nBody of {text}.\n")
    (src / "Q&A: 2024" / "board?.png").write_bytes(b"\x89PNG whiteboard")
    (src / "Q&A: 2024" / "board.md").write_text("# Board\n\n![](board%3F.png)\n")

    report = text_only.import_path(src)

    assert not report.skipped
    wanted = ["What Why now.md", "Q&A 2024/a b.md", "Q&A 2024/board.md", "CON_.md", "Dr..md"]
    assert sorted(report.paths) == sorted([*wanted, f"{'长' * 60}.md"])
    assert report.attachments == ("Q&A 2024/board.png",)  # beside its note, as in the source
    assert text_only.vault.read("What Why now.md").title == "What?"
    again = text_only.import_path(src)
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 6)
    assert again.attachments == ()


def test_jsonl_records_with_fields_remember_refuses_are_skipped_by_line_and_the_rest_imports(
    text_only: MemoryService, tmp_path: Path
) -> None:
    source = tmp_path / "memories.jsonl"
    lines = [
        {"content": "The user rates tea highly.", "importance": "high"},
        {"content": "The user trusts this a lot.", "confidence": 7},
        {"content": "The user moved on a US date.", "created": "12/03/2024"},
        {"content": "The user logged this at an epoch.", "created": 1700000000},
        {"content": "The user lapses soon.", "expires": "soon"},
        {"content": "The user typed a number.", "type": 5},
        {"content": "The user likes green tea.", "importance": "0.7", "created": "2024-03-12"},
    ]
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")

    report = text_only.import_path(source)

    assert [s.path for s in report.skipped] == [f"memories.jsonl:{n}" for n in range(1, 7)]
    assert "importance must be a number between 0 and 1, got 'high'" in report.skipped[0].detail
    assert "12/03/2024" in report.skipped[2].detail
    (path,) = report.paths
    tea = text_only.vault.read(path)
    assert tea.meta["importance"] == 0.7 and tea.created is not None
    assert tea.created.startswith("2024-03-12")
    assert not [p for p in text_only.problems() if p.kind == "bad_date"]


def test_add_dash_reads_the_text_from_stdin_and_refuses_bytes_that_are_not_utf8(
    text_only: MemoryService,
) -> None:
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    text = "The user prefers window seats on night flights.\n\n靠窗的座位。\n"
    piped = run_memvault("--vault", str(text_only.root), "add", "-", input_text=text, env=env)
    assert piped.returncode == 0, piped.stderr
    path = piped.stdout.split()[1]
    assert "靠窗的座位。" in (text_only.root / path).read_text()
    head = git(text_only.root, "rev-parse", "HEAD")
    latin = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "--vault", str(text_only.root), "add", "-"],
        input="Été au café, a long summer.".encode("latin-1"),
        capture_output=True,
        env={**os.environ, **env},
        check=False,
    )
    assert latin.returncode == 1 and latin.stdout == b""
    assert latin.stderr.decode().startswith("error: the text on stdin is not UTF-8")
    assert git(text_only.root, "rev-parse", "HEAD") == head
    assert git(text_only.root, "status", "--porcelain") == ""


def test_a_bare_embed_takes_the_attachment_obsidian_shows_its_folder_then_the_shortest_path(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "obsidian"
    for folder, data in (("img", b"shown"), ("projects/old", b"old"), ("trip", b"trip")):
        (src / folder).mkdir(parents=True)
        (src / folder / "photo.png").write_bytes(data)
    (src / "projects" / "web").mkdir()
    (src / "projects" / "web" / "Page.md").write_text("# Page\n\n![[photo.png]]\n")
    (src / "trip" / "Trip.md").write_text("# Trip\n\n![[photo.png]]\n")

    report = text_only.import_path(src)

    # Obsidian (and memvault's own links): the note's folder, else the shortest path
    assert sorted(report.attachments) == ["img/photo.png", "trip/photo.png"]
    assert not report.skipped and not (text_only.root / "projects/old/photo.png").exists()


def test_importing_the_vault_or_a_folder_inside_it_is_refused_and_copies_nothing(
    person_vault: MemoryService,
) -> None:
    (person_vault.root / "inbox" / "idless.md").write_text("# Idless\n\nA note of mine.\n")
    git(person_vault.root, "add", "-A")
    git(person_vault.root, "commit", "-qm", "my note")
    head = git(person_vault.root, "rev-parse", "HEAD")
    for inside in (person_vault.root, person_vault.root / "inbox"):
        with pytest.raises(InvalidInputError, match="inside it"):
            person_vault.import_path(inside)
    assert not (person_vault.root / "idless.md").exists()
    assert git(person_vault.root, "rev-parse", "HEAD") == head
    assert git(person_vault.root, "status", "--porcelain") == ""


def test_the_export_carries_the_text_of_a_note_that_is_not_utf8(
    person_vault: MemoryService, tmp_path: Path
) -> None:
    (person_vault.root / "inbox" / "latin.md").write_bytes(
        "# Café\n\nÉté à Paris.\n".encode("latin-1")
    )
    git(person_vault.root, "add", "-A")
    git(person_vault.root, "commit", "-qm", "a note saved by an old editor")
    out = tmp_path / "export.json"
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    result = run_memvault("--vault", str(person_vault.root), "export", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    (problem,) = [p for p in json.loads(out.read_text())["problems"] if p["kind"] == "encoding"]
    assert problem["path"] == "inbox/latin.md"
    assert problem["text"] == "# Caf\ufffd\n\n\ufffdt\ufffd \ufffd Paris.\n"


def test_export_out_dash_writes_to_stdout_not_a_file_named_dash(
    text_only: MemoryService, tmp_path: Path
) -> None:
    text_only.remember("The user keeps bees on the roof.")
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    args = ("--vault", str(text_only.root), "export", "--out", "-")
    result = run_memvault(*args, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "bees" in json.loads(result.stdout)["memories"][0]["body"]
    assert not (tmp_path / "-").exists()


def test_importing_an_export_zip_says_to_unzip_it_and_writes_nothing(
    text_only: MemoryService, tmp_path: Path
) -> None:
    archive = tmp_path / "Export-1a2b3c.zip"
    archive.write_bytes(b"PK\x03\x04 a Notion export")
    head = git(text_only.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match=r"unzip the export first"):
        text_only.import_path(archive)
    assert git(text_only.root, "rev-parse", "HEAD") == head
    assert git(text_only.root, "status", "--porcelain") == ""


def test_add_dash_at_a_terminal_says_how_to_end_the_text(text_only: MemoryService) -> None:
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"The user waters the garden at dawn.\n\x04")
        env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
        args = ("--vault", str(text_only.root), "add", "-")
        result = run_memvault(*args, env=env, stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 0, result.stderr
    assert "then Ctrl-D" in result.stderr
    assert "waters the garden" in (text_only.root / result.stdout.split()[1]).read_text()


def test_a_purge_rewrites_annotated_tags_so_none_keeps_the_text(
    person_vault: MemoryService,
) -> None:
    """A tag object names its commit: filter-branch moved branches and plain tags only,
    and `git show release:inbox/x.md` still printed the erased text."""
    secret = person_vault.remember("The user's safe code is HIPPO7731.").memory
    assert secret is not None
    person_vault.remember("The user waters the ferns on Sundays.")
    git(person_vault.root, "tag", "plain")
    git(person_vault.root, "tag", "-a", "release", "-m", "a person's annotated tag")
    person_vault.forget(secret.id, mode="purge")
    assert "HIPPO7731" not in git(person_vault.root, "log", "--all", "-p")
    assert "HIPPO7731" not in git(person_vault.root, "log", "-p", "release")
    assert git(person_vault.root, "cat-file", "-t", "release").strip() == "tag"
    assert "a person's annotated tag" in git(person_vault.root, "tag", "-n", "release")
    assert "ferns" in git(person_vault.root, "log", "-p", "release")
    assert b"hippo7731" not in git_objects(person_vault.root)


def test_changes_with_since_and_more_than_the_limit_gives_the_oldest_and_a_cursor_on(
    text_only: MemoryService,
) -> None:
    start = git(text_only.root, "rev-parse", "HEAD").strip()
    for n in range(3):
        text_only.remember(f"The user planted tree number {n} in the orchard row {n * 7}.")
    env = {"MEMVAULT_EMBEDDER": "none", "PYTHONPATH": str(REPO)}
    args = ("--vault", str(text_only.root), "changes", "--since", start, "--limit", "1")
    result = run_memvault(*args, env=env)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 and "number-0" in result.stdout
    assert "(newer changes follow: pass the cursor below as --since)" in result.stderr


def commit_at(repo: Path, when: str, message: str) -> None:
    git(repo, "add", "-A")
    ident = ("-c", "user.name=Ann", "-c", "user.email=ann@example.com")
    git(repo, *ident, "commit", "-qm", message, f"--date={when}")


def test_dataview_fields_stay_text_and_a_logseq_page_keeps_repeats_links_and_its_lines(
    text_only: MemoryService, tmp_path: Path
) -> None:
    obsidian = tmp_path / "obsidian"
    obsidian.mkdir()
    book = "author:: [[Ursula Le Guin]]\ntags:: fantasy\n\nA Wizard of Earthsea.\n"
    (obsidian / "Book.md").write_text(book)
    graph = tmp_path / "graph"
    (graph / "logseq").mkdir(parents=True)
    (graph / "pages").mkdir()
    (graph / "pages" / "Reading.md").write_text(
        "tags:: a, b\ntags:: c, [[Smith, John]]\nAlias:: Books\nalias:: Library\n"
        "author:: [[Ursula Le Guin]]\n\n- read more\n"
    )
    (graph / "pages" / "Only.md").write_text("alias:: Bare\nrating:: 3\n")

    text_only.import_path(obsidian)
    text_only.import_path(graph)

    kept = text_only.vault.read("Book.md")
    assert "author" not in kept.meta and kept.body.startswith("author:: [[Ursula Le Guin]]\n")
    assert text_only.import_path(obsidian).unchanged == 1
    page = text_only.vault.read("pages/Reading.md")
    assert list(page.tags) == ["a", "b", "c", "Smith, John"]
    assert page.meta["aliases"] == ["Books", "Library"]
    assert page.meta["author"] == "[[Ursula Le Guin]]"  # still a link in Obsidian
    assert "alias:: Bare\nrating:: 3" in text_only.vault.read("pages/Only.md").body


def test_a_cloned_folder_s_notes_are_dated_by_the_commit_that_added_them(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "notes"
    (src / "trips").mkdir(parents=True)
    git(src, "init", "-q")
    (src / "trips" / "Kyōto.md").write_text("# Kyōto\n\nTemples in spring.\n")
    (src / "Old name.md").write_text("# Moved\n\nA note renamed later.\n")
    (src / "Edited.md").write_text("---\nupdated: 2020-05-06\n---\n# Edited\n\nIts date.\n")
    commit_at(src, "2021-03-04T05:06:07+00:00", "notes")
    git(src, "mv", "Old name.md", "New name.md")
    commit_at(src, "2022-01-01T00:00:00+00:00", "rename")
    (src / "Untracked.md").write_text("# Untracked\n\nNot committed yet.\n")
    os.utime(src / "Untracked.md", (APRIL_2023.timestamp(), APRIL_2023.timestamp()))

    text_only.import_path(src)

    created = {m.path: m.created for m in text_only.list_memories(Filters()).memories}
    assert created["trips/Kyōto.md"] == "2021-03-04T05:06:07+00:00"
    assert created["New name.md"] == "2021-03-04T05:06:07+00:00"  # added under its old name
    assert str(created["Edited.md"]).startswith("2020-05-06")  # never after its own updated
    assert str(created["Untracked.md"]).startswith("2023-04-05T10:00:00")  # its file's time


def test_a_text_file_a_note_embeds_is_an_attachment_and_licence_files_are_no_notes(
    text_only: MemoryService, tmp_path: Path
) -> None:
    src = tmp_path / "project"
    (src / "logs").mkdir(parents=True)
    (src / "logs" / "Note.md").write_text("# Build\n\nIt failed: ![[build.txt]]\n")
    (src / "logs" / "build.txt").write_text("error: linker failed\n")
    for name in (
        "LICENSE.txt",
        "COPYING.TXT",
        "requirements-dev.txt",
        "CMakeLists.txt",
        "robots.txt",
    ):
        (src / name).write_text("not a note\n")
    for name in ("Soup.txt", "History.txt", "Requirements.txt"):  # a person's notes
        (src / name).write_text(f"{name}\nDashi, miso, tofu.\n")

    report = text_only.import_path(src)

    assert report.paths == ("History.md", "Requirements.md", "Soup.md", "logs/Note.md")
    assert report.attachments == ("logs/build.txt",)
    assert not (text_only.root / "logs" / "build.md").exists()
    assert (text_only.root / "logs" / "build.txt").read_text() == "error: linker failed\n"


def test_a_logseq_graphs_pages_folder_imported_alone_keeps_its_properties(
    text_only: MemoryService, tmp_path: Path
) -> None:
    graph = tmp_path / "graph"
    (graph / "logseq").mkdir(parents=True)
    (graph / "pages").mkdir()
    (graph / "pages" / "Dune.md").write_text("tags:: book\nalias:: Dune novel\n\n- Read it.\n")
    report = text_only.import_path(graph / "pages")
    assert report.imported == 1
    memory = text_only.get(report.paths[0])
    assert list(memory.tags) == ["book"] and list(memory.aliases) == ["Dune novel"]


def test_a_purge_a_tag_on_the_memorys_own_text_would_undo_is_refused_before_writing(
    person_vault: MemoryService,
) -> None:
    """A tag naming the memory's file (or a folder holding it), not a commit, is moved by
    no rewrite: the purge reported success and the text stayed, reachable by the tag."""
    secret = person_vault.remember("The user's safe code is HIPPO7731.").memory
    assert secret is not None
    root = person_vault.root
    for name, rev in (("file", f"HEAD:{secret.path}"), ("folder", "HEAD:inbox")):
        git(root, "tag", "-a", name, git(root, "rev-parse", rev).strip(), "-m", "kept")
        head = git(root, "rev-parse", "HEAD")
        with pytest.raises(InvalidInputError, match=f"tag '{name}' names the memory's text"):
            person_vault.forget(secret.id, mode="purge")
        assert git(root, "rev-parse", "HEAD") == head and (root / secret.path).exists()
        git(root, "tag", "-d", name)
    person_vault.forget(secret.id, mode="purge")
    assert b"hippo7731" not in git_objects(root)
