"""Vectors fill in behind the text index: reads never wait for embedding, a stopped
embedding run resumes where it ended, and status says how far it is."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp import Client

from memvault.config import Settings
from memvault.server import build_server
from memvault.service import MemoryService

from .helpers import call_tool, run_memvault

COUNT = 40


def text_imported(vault: Path, count: int = COUNT) -> None:
    """A bulk import of ``count`` memories (more than a sync embeds at once)."""
    source = vault.parent / "memories.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for n in range(count):
            text = f"Project note {n}: the deploy of service {n} runs every Tuesday at noon."
            if n == 7:
                text = "The office dog is a beagle named Pixel who sleeps under desk 7."
            handle.write(json.dumps({"content": text, "type": "note"}) + "\n")
    service = MemoryService.open(vault, Settings())
    try:
        service.import_path(source)
    finally:
        service.close()


def stored_vectors(vault: Path) -> dict[str, tuple[int, list[bytes]]]:
    """id -> (generation of its record, its chunk blobs) of every memory with vectors."""
    db = sqlite3.connect(vault / ".memvault" / "index" / "store.sqlite")
    try:
        done = db.execute("SELECT id, gen FROM docs WHERE model IS NOT NULL").fetchall()
        return {
            doc_id: (
                gen,
                [
                    r[0]
                    for r in db.execute("SELECT vec FROM chunks WHERE id=? ORDER BY n", (doc_id,))
                ],
            )
            for doc_id, gen in done
        }
    finally:
        db.close()


def test_a_cli_search_after_a_bulk_import_answers_from_text_and_says_how_much_is_embedded(
    vault_path: Path,
) -> None:
    text_imported(vault_path)
    found = run_memvault("--vault", str(vault_path), "search", "beagle named Pixel")
    assert found.returncode == 0, found.stderr
    assert "office dog" in found.stdout
    assert f"embedded: 0 of {COUNT} memories" in found.stderr
    assert stored_vectors(vault_path) == {}  # the search embedded nothing to answer
    explained = run_memvault("--vault", str(vault_path), "--json", "search", "beagle")
    why = json.loads(explained.stdout)[0]["why"]
    assert why["vectors"].startswith(f"0 of {COUNT} memories embedded")


def test_embedding_resumes_after_a_kill_without_redoing_stored_vectors(
    vault_path: Path,
) -> None:
    text_imported(vault_path)
    env = {**os.environ, "MEMVAULT_EMBED_BATCH_CHARS": "200"}  # a few memories per batch
    first = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "--vault", str(vault_path), "reindex"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert first.stderr is not None
        for line in first.stderr:  # the first progress line follows the first stored batch
            if line.startswith("embedding:"):
                break
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(timeout=60)
        if first.stderr is not None:
            first.stderr.close()
    kept = stored_vectors(vault_path)
    assert 0 < len(kept) < COUNT
    second = run_memvault("--vault", str(vault_path), "--json", "reindex", env=env)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["embedded"] == COUNT - len(kept)
    after = stored_vectors(vault_path)
    assert len(after) == COUNT
    assert {i: after[i] for i in kept} == kept  # same vectors, same generation: not redone


def test_vault_status_reports_embedded_of_total_and_an_eta(vault_path: Path) -> None:
    text_imported(vault_path)
    service = MemoryService.open(vault_path, Settings())
    server, _ = build_server(service)

    async def status() -> dict[str, object]:
        async with Client(server) as client:
            result = await call_tool(client, "vault_status", {})
            return dict(result["index"]["embedding"])

    try:
        service.index.loader.get()
        assert asyncio.run(status()) == {"done": 0, "total": COUNT, "eta_seconds": None}
        assert service.fill_vectors() == COUNT
        assert asyncio.run(status()) == {"done": COUNT, "total": COUNT, "eta_seconds": 0}
    finally:
        service.close()


def test_a_write_through_memvault_is_embedded_at_once(service: MemoryService) -> None:
    result = service.remember("The user's bicycle is a green Brompton.", type="fact")
    assert result.memory is not None
    assert service.index.embedding_state()["done"] == 1
    assert service.recall("folding bike colour", mode="vector")[0].id == result.memory.id


def test_the_background_embedder_of_serve_and_watch_fills_in_every_vector(
    vault_path: Path,
) -> None:
    text_imported(vault_path)
    service = MemoryService.open(vault_path, Settings())
    try:
        assert service.index_status()["with_vectors"] == 0
        service.start_embedding()
        filler = service.indexing.filler
        assert filler is not None and filler.idle.wait(timeout=300)
        assert service.index_status()["embedding"]["done"] == COUNT
        hit = service.recall("a sleepy puppy at the office", k=1, mode="vector")[0]
        assert "beagle" in hit.snippet
    finally:
        service.close()


def test_a_memory_of_a_few_chunks_is_written_while_a_background_batch_holds_the_engine(
    service: MemoryService,
) -> None:
    """A background batch (a long note's hundreds of chunks) holds the engine's batch turn
    for tens of seconds; remember, whose memory is a few chunks, does not wait for it."""
    embedder = service.index.loader.get()
    assert embedder is not None
    long_text = " ".join(
        f"Paragraph {n}: the user's allotment grows beans, leeks and rhubarb by the shed."
        for n in range(24)
    )  # three chunks of at most 900 characters
    done = threading.Event()
    results: list[Any] = []

    def write() -> None:
        results.append(service.remember(long_text, type="note"))
        done.set()

    with embedder._lock:  # a batch under way, as the background filler's
        writer = threading.Thread(target=write)
        writer.start()
        finished = done.wait(timeout=30)
    writer.join(timeout=60)
    assert finished, "remember waited for the background batch"
    (made,) = results
    assert made.action == "created" and made.memory is not None
    assert service.index.embedding_state()["done"] == 1


def test_a_write_goes_before_the_rest_of_a_background_batch(service: MemoryService) -> None:
    """The filler's batch runs in slices; a write's batch (more passages than go without a
    turn) that waits for the engine is served before the filler's next slice. (Which of
    the two gets the engine first is up to the thread scheduler: both ways must hold.)"""
    embedder = service.index.loader.get()
    assert embedder is not None
    write = [f"The user's note {n} about the allotment shed." for n in range(8)]
    filler = [f"Imported note {n}: the deploy of service {n} runs at noon." for n in range(130)]
    finished: list[str] = []

    def run(name: str, texts: list[str], background: bool) -> None:
        embedder.embed_passages(texts, background=background)
        finished.append(name)

    threads = [
        threading.Thread(target=run, args=("filler", filler, True)),
        threading.Thread(target=run, args=("write", write, False)),
    ]
    with embedder._lock:  # a slice of an earlier batch under way
        threads[0].start()  # the filler: it waits for the engine, at its first slice or before
        threads[1].start()
        with embedder._turns:  # the write asked for its turn
            assert embedder._turns.wait_for(lambda: embedder._foreground == 1, timeout=30)
    # Whichever gets the engine first, the write is done before the filler's 130 passages
    # (three slices): if the filler got it, it lets the write go before its second slice.
    for thread in threads:
        thread.join(timeout=120)
    assert finished == ["write", "filler"]


def test_a_sync_of_one_long_note_leaves_its_vectors_to_the_filler(vault_path: Path) -> None:
    """A person's long note (more text than one of the filler's batches) is searchable by
    its words as soon as it is synced; its vectors come from the background filler, not
    from whoever synced (a watcher about to commit, `memvault watch` starting)."""
    note = vault_path / "notes" / "allotment.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(
        "# Allotment\n" + " ".join(f"Bed {n} holds leeks and rhubarb." for n in range(60)) + "\n"
    )
    service = MemoryService.open(vault_path, Settings(embed_batch_chars=1000))
    try:
        service.ensure_synced()
        assert service.index.embedding_state()["done"] == 0
        assert service.search("rhubarb leeks", mode="bm25")[0].doc.path == "notes/allotment.md"
        assert service.fill_vectors() == 1
        assert service.index.embedding_state()["done"] == 1
    finally:
        service.close()
