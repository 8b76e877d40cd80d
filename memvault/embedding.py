"""Vectors fill in behind the text index.

Bulk indexing (imports, a first sync, ``reindex``) writes text and records at once and
leaves vectors missing; :func:`embed_missing` makes them in batches, each committed on
its own, so a stopped run loses at most one batch and a new run starts where it ended.
One process at a time does this per vault (a file lock): the others read what it stores.
:class:`VectorFiller` runs it in the background of ``serve`` and ``watch``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import filelock

from .errors import MemvaultError
from .index import RATE_KEY
from .models import Memory

if TYPE_CHECKING:
    from .sync import IndexSync

log = logging.getLogger(__name__)

IDLE_SECONDS = 30.0  # the filler looks for new work this often when nothing woke it


@dataclass(frozen=True)
class Progress:
    done: int  # memories with vectors from the current model
    total: int  # memories in the index
    rate: float | None  # memories per second in this run
    eta_seconds: float | None


class EmbeddingBusy(MemvaultError):
    """Another process is making this vault's vectors."""


def embed_missing(
    sync: IndexSync,
    progress: Callable[[Progress], None] | None = None,
    stop: threading.Event | None = None,
    wait: float = 0.0,
) -> int:
    """Make the vectors the index lacks, batch by batch; returns how many memories got
    them. Raises :class:`EmbeddingBusy` when another process holds the lock for ``wait``
    seconds."""
    index = sync.index
    lock = filelock.FileLock(str(index.folder / "embed.lock"))
    try:
        lock.acquire(timeout=wait)
    except filelock.Timeout as exc:
        raise EmbeddingBusy(
            f"another memvault process is embedding {sync.vault.root}; its vectors appear "
            "as they are stored"
        ) from exc
    try:
        return _run(sync, progress, stop)
    finally:
        lock.release()


def _run(
    sync: IndexSync,
    progress: Callable[[Progress], None] | None,
    stop: threading.Event | None,
) -> int:
    index = sync.index
    missing = index.missing_vectors()
    if not missing:
        return 0
    records = {d.id: d for d in index.records()}
    paths = [records[i].path for i in missing if i in records]
    budget = max(1, sync.settings.embed_batch_chars)
    start, made = time.perf_counter(), 0
    at = 0
    while at < len(paths):
        if stop is not None and stop.is_set():
            break
        batch: list[Memory] = []
        size = 0
        while at < len(paths) and size < budget:
            for memory in sync.read(paths[at : at + 1]):
                batch.append(memory)
                size += len(memory.body)
            at += 1
        made += index.embed_vectors(batch)
        rate = made / max(time.perf_counter() - start, 1e-6)
        index.store.set_info(RATE_KEY, f"{rate:.3f}")
        if progress is not None:
            state = index.embedding_state()
            left = state["total"] - state["done"]
            progress(Progress(state["done"], state["total"], rate, left / rate if rate else None))
    return made


class VectorFiller:
    """A daemon thread that makes missing vectors whenever there are some."""

    def __init__(self, sync: IndexSync) -> None:
        self.sync = sync
        self.wake = threading.Event()
        self.idle = threading.Event()  # set while nothing is left to embed
        self.stopping = threading.Event()
        self.running = False
        self.last: Progress | None = None
        self._thread = threading.Thread(target=self._loop, name="memvault-vectors", daemon=True)

    def start(self) -> VectorFiller:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current batch (stored) and wait for the thread up to ``timeout``."""
        self.stopping.set()
        self.wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _note(self, progress: Progress) -> None:
        self.last = progress

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self.wake.clear()
            self.idle.clear()
            try:
                self.running = True
                made = embed_missing(self.sync, self._note, self.stopping)
                if made:
                    log.info("vectors made for %d memories", made)
                if not self.sync.index.missing_vectors():
                    self.idle.set()
            except EmbeddingBusy:
                pass  # another process embeds; look again later
            except Exception:  # the index was closed or replaced under us: try again later
                if self.stopping.is_set():
                    return
                log.exception("background embedding failed; retrying later")
            finally:
                self.running = False
            self.wake.wait(IDLE_SECONDS)
