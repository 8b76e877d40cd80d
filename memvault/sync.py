"""Keeping the index in step with the files. The index is a cache: this is how it is filled.

The service owns one :class:`IndexSync`; it syncs all files once per process (only those
whose (mtime, size) changed are re-read) and the paths each write or the watcher names.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from .config import Settings
from .embedding import VectorFiller
from .errors import MalformedMemoryError, MemoryNotFoundError, MemvaultError, UnsafePathError
from .history import History
from .index import Index
from .models import Filters, Memory, MemoryInfo, Problem
from .vault import Vault

log = logging.getLogger(__name__)

INDEX_BATCH = 256
EMBED_NOW = 16  # a sync of more files leaves their vectors to embedding.embed_missing
# ...and so does a sync of fewer files holding more text than one of the filler's batches
# (embed_batch_chars): a 322 KB note embedded at once held the engine, and whoever synced
# (`memvault watch` starting, the watcher committing a person's save), for 40 s.


class IndexSync:
    """Brings one index in line with one vault."""

    def __init__(
        self, vault: Vault, index: Index, settings: Settings, history: History | None = None
    ) -> None:
        self.vault = vault
        self.history = history or History(vault.root)
        self.index = index
        self.settings = settings
        self.unreadable: dict[str, Problem] = {}  # files the last syncs could not index
        # id -> other files holding it that the index leaves out (a copy made by hand):
        # one of them is indexed once the id's holder lets go of it (see _held)
        self.shadowed: dict[str, set[str]] = {}
        self._synced = False
        self._seen = 0  # index.reopened at the last full sync
        self._cleared: str | None = None  # the index's ``cleared`` mark at the last sync
        self._syncing = False
        self._lock = threading.Lock()
        self.filler: VectorFiller | None = None

    def sync(
        self, paths: Iterable[str] | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Bring the index in line with the files (all of them, or ``paths``).

        Only files whose (mtime, size) changed are re-read. Returns how many were indexed.
        A few files (at most EMBED_NOW, holding no more text than one of the filler's
        batches) are embedded at once; more are indexed as text now and their vectors left
        to :func:`embedding.embed_missing` (the filler of ``serve``/``watch``, ``reindex``):
        nothing waits for the model on a bulk sync.
        """
        self.index.let_go()  # a purge elsewhere (its deletion is why we sync) rewrote files
        if paths is None:
            read, drop = self.index.plan_sync(self.vault.stats())
            self.index.remove(drop)
        else:
            read = [p for p in dict.fromkeys(paths) if self.vault.is_memory_path(p)]
            gone = [p for p in read if not self.vault.is_safe_file(p)]  # symlinks, FIFOs too
            self.index.remove_paths(gone)
            read = [p for p in read if p not in gone]
        done, embed, left = 0, len(read) <= EMBED_NOW, False
        for start in range(0, len(read), INDEX_BATCH):
            chunk = read[start : start + INDEX_BATCH]
            # stats before the read: a save in between leaves newer stats, read next time
            stamps = self.vault.stats(chunk)
            batch = self._read(chunk)
            # a file that cannot be read now (binary, too large, not UTF-8) is not served
            # as it was: its old record goes
            unread = set(chunk) - {m.path for m in batch}
            if unread:
                self.index.remove_paths(unread)
            batch = self._held(batch)
            now = embed and self._embeds_now(batch)
            self.upsert(batch, now, stamps)
            left = left or (bool(batch) and not now)
            done += len(batch)
            if progress:
                progress(min(start + INDEX_BATCH, len(read)), len(read))
        self._revive()
        if left and self.filler is not None:
            self.filler.wake.set()
        return done

    def _held(self, batch: list[Memory]) -> list[Memory]:
        """Of the files holding one id (a note copied by hand keeps its `id:`), the one
        :func:`holders_of` names keeps it; the others are left out (``shadowed``, named by
        `doctor` and `status` as duplicate_id) until the holder lets go of the id."""
        held = {d.id: d.path for d in self.index.records()}
        groups: dict[str, list[Memory]] = {}
        for memory in batch:
            groups.setdefault(memory.id, []).append(memory)
        candidates = {}
        for memory_id, group in groups.items():
            paths = {m.path for m in group}
            known = self.shadowed.get(memory_id, set()) | {held.get(memory_id) or ""}
            candidates[memory_id] = paths | {p for p in known - paths if self._holds(p, memory_id)}
        holders = holders_of(self.history, self.vault, candidates)
        kept: list[Memory] = []
        for memory_id, group in groups.items():
            paths, first = {m.path for m in group}, holders[memory_id]
            if first not in paths and first != held.get(memory_id):  # indexed by older rules
                group += [m for m in self._read([first]) if m.id == memory_id]
            for memory in group:
                if memory.path == first:
                    kept.append(memory)
                    for paths_of in self.shadowed.values():
                        paths_of.discard(memory.path)
                else:
                    self.shadowed.setdefault(memory_id, set()).add(memory.path)
        return kept

    def _holds(self, path: str | None, memory_id: str) -> bool:
        """Whether the file at ``path`` still holds ``memory_id``."""
        if not path:
            return False
        try:
            return self.vault.read(path).id == memory_id
        except (MemvaultError, OSError):
            return False

    def _revive(self) -> None:
        """Index, for each shadowed id the index no longer holds, one of the files left
        out for it (the holder was deleted, moved away or given another id)."""
        held = {d.id for d in self.index.records()} if self.shadowed else set()
        for memory_id in [i for i in self.shadowed if i not in held]:
            paths = sorted(p for p in self.shadowed.pop(memory_id) if self.vault.is_safe_file(p))
            found = [m for m in self._read(paths) if m.id == memory_id]
            self.upsert(self._held(found))

    def read(self, paths: Sequence[str]) -> list[Memory]:
        """The memories at ``paths`` (unreadable ones are noted and left out)."""
        return self._read(paths)

    def start_filler(self) -> VectorFiller:
        """Make missing vectors in a background thread from now on (``serve``, ``watch``)."""
        if self.filler is None:
            self.filler = VectorFiller(self).start()
        return self.filler

    def close(self) -> None:
        if self.filler is not None:
            self.filler.stop()

    def _read(self, paths: Sequence[str]) -> list[Memory]:
        batch = []
        for rel in paths:
            try:
                batch.append(self.vault.read(rel))
            except (MalformedMemoryError, MemoryNotFoundError, UnsafePathError) as exc:
                # said where it is asked (list, status, doctor, vault_status): a command
                # printed each such file twice, as a log line and as its own warning
                log.info("not indexed: %s", exc)
                self.unreadable[rel] = Problem(rel, getattr(exc, "kind", "unreadable"), str(exc))
            else:
                self.unreadable.pop(rel, None)
        return batch

    def upsert(
        self,
        memories: Sequence[Memory],
        embed: bool = True,
        stats: dict[str, tuple[int, int]] | None = None,
    ) -> None:
        """Index memories just read or written (with their file stats: ``stats``, taken
        before they were read, else now); their vectors now, or later when not ``embed``.

        A path indexed under another id before (a person changed the ``id:``, or a moved
        id-less file got its first path's id back) loses that entry.
        """
        ids = {m.id for m in memories}
        held = {d.id: d.path for d in self.index.records()} if memories else {}
        for memory in memories:  # a write to a copy: the file it displaces is kept in mind
            holder = held.get(memory.id, memory.path)
            if holder != memory.path and self._holds(holder, memory.id):
                self.shadowed.setdefault(memory.id, set()).add(holder)
        self.index.remove(
            [i for i in self.index.ids_at([m.path for m in memories]) if i not in ids]
        )
        stats = stats or {}
        stats |= self.vault.stats([m.path for m in memories if m.path not in stats])
        self.index.upsert(memories, stats, embed)

    @contextmanager
    def upserting(self, paths: Sequence[str]) -> Iterator[list[Memory]]:
        """Read and index the memories just written at ``paths`` in a thread while the block
        runs (a git commit: a subprocess, so both proceed at once on two cores); the list
        holds them once the block is done. An error of either is raised, the block's first,
        but an index that cannot be written now (another process holds it, sqlite's own
        error): the write stands, and the next read brings the index up to date."""
        written: list[Memory] = []
        failed: list[BaseException] = []

        def run() -> None:
            try:
                written.extend(self.vault.read(rel) for rel in paths)
            except BaseException as exc:  # raised in the caller's thread below
                failed.append(exc)
                return
            try:
                self.upsert(written, self._embeds_now(written))
            except Exception as exc:  # saved all the same: the index is disposable
                self._synced = False  # the next read syncs it with the files
                unexpected = not isinstance(exc, MemvaultError)  # a bug, or sqlite's error
                log.warning(
                    "%d file(s) saved, not indexed yet (%s)", len(paths), exc, exc_info=unexpected
                )

        worker = threading.Thread(target=run, name="memvault-index-write", daemon=True)
        worker.start()
        try:
            yield written
        except BaseException:
            worker.join()
            if failed:  # the block's error is raised; this one must not vanish with it
                log.warning("indexing %d file(s) failed too: %s", len(paths), failed[0])
            raise
        worker.join()
        if failed:
            raise failed[0]

    def _embeds_now(self, memories: Sequence[Memory]) -> bool:
        """Whether memories are embedded at once (a sync's few files; a write, which holds
        the vault's write lock): at most one filler batch of text. A write of more (a
        pasted log: 150 KB took 52 s, and every other writer of every process waited, then
        failed `busy`) gets its vectors from :meth:`embed_left` once the lock is released."""
        return sum(len(m.body) for m in memories) <= self.settings.embed_batch_chars

    def embed_left(self, memories: Sequence[Memory]) -> None:
        """The vectors :meth:`upserting` left out (called after the write lock is released:
        the caller still gets its memory embedded, nobody else waits for it)."""
        if memories and not self._embeds_now(memories):
            self.index.embed_vectors(memories)

    def ensure(self, wait: bool = True) -> bool:
        """Sync the index with the files once per process, and again once another process
        emptied it (``reindex --full``, which may have been killed before refilling it).

        Returns False, without waiting, when another thread is syncing and ``wait`` is False.
        """
        self.index.follow()  # a deleted or replaced index folder is opened anew ...
        cleared = self.index.store.cleared()  # ... or another process's `reindex --full`
        if self._synced and self._seen == self.index.reopened and cleared == self._cleared:
            return True
        if not wait and self._syncing:
            return False
        with self._lock:
            if not self._synced or self._seen != self.index.reopened or cleared != self._cleared:
                self._syncing = True
                try:
                    seen = self.index.reopened
                    self.sync()
                    self._synced, self._seen, self._cleared = True, seen, cleared
                finally:
                    self._syncing = False
        return True

    def reset(self) -> Index:
        """Empty the index (rebuilt by the next sync): in place, so that a running server
        keeps writing where every process reads; wiped and opened anew only when it
        cannot be emptied (a broken database or full-text file)."""
        try:
            self.index.clear()
        except (OSError, sqlite3.DatabaseError) as exc:
            log.warning("could not empty the index in place (%s): made anew", exc)
            self.index.close()
            self.index.wipe()
            self.index = Index(self.index.folder, self.settings)
        self.shadowed = {}
        self._synced, self._seen, self._cleared = False, 0, None
        return self.index

    def census(self) -> tuple[list[MemoryInfo], list[Problem]]:
        """Every memory file as it is now, and every problem, without reading unchanged
        files: the index record of each file whose (mtime, size) it matches, a fresh read
        of the others (new, edited, unreadable files), unsafe entries from the same walk.
        Waits for nothing and writes nothing (the index catches up in :meth:`sync`)."""
        stats, unsafe = self.vault.walk()
        by_path = {d.path: d for d in self.index.records()}
        infos: list[MemoryInfo] = []
        problems: list[Problem] = []
        changed = []
        for path, stat in stats.items():
            doc = by_path.get(path)
            if doc is None or (doc.mtime_ns, doc.size) != stat:
                changed.append(path)
                continue
            infos.append(doc)
            problems.extend(Problem(path, "malformed", p) for p in doc.problems)
        memories, unread = self.vault.read_all(changed)
        infos.extend(m.info(*stats[m.path]) for m in memories)
        unsafe_ones = self.vault.unsafe_problems(unsafe)
        return infos, problems + unread + unsafe_ones + _same_ids(infos, self.history, self.vault)

    def records(self, filters: Filters | None = None) -> list[MemoryInfo]:
        """Index records of memories (fast; no file reads), filtered."""
        self.ensure(wait=False)
        filters = filters or Filters()
        return [info for info in self.index.records() if filters.accepts(info)]


def holders_of(
    history: History, vault: Vault, groups: Mapping[str, Iterable[str]]
) -> dict[str, str]:
    """For each id, which of the files holding it keeps it (a note copied by hand keeps
    its `id:`): the one first committed with it, wherever it has moved since; within one
    commit, or when none was committed, the smallest path. Git decides, so every clone
    agrees, and a full reindex keeps what it held. The index, `status` and `doctor` all
    ask this; git is asked only for ids two files hold, in one ``git log`` for all."""
    found = {memory_id: sorted(set(paths)) for memory_id, paths in groups.items()}
    out = {memory_id: paths[0] for memory_id, paths in found.items()}
    shared = {
        memory_id: {p: vault.origins.get(p, p) for p in paths}
        for memory_id, paths in found.items()
        if len(paths) > 1
    }
    if shared:
        try:
            out.update(history.first_holders(shared))
        except MemvaultError as exc:  # not a git repository (yet): the path decides
            log.info("which files keep ids %s: %s", ", ".join(shared), exc)
    return out


def same_id_problem(path: str, memory_id: str, kept: str) -> Problem:
    """What `status` and `doctor` say of a file left out because ``kept`` holds its id."""
    return Problem(
        path,
        "duplicate_id",
        f"{path} has the same id {memory_id} as {kept}, which keeps it and is the one "
        f"searched and listed: give {path} an id of its own (delete its `id:` line) or "
        "remove it if it is a copy",
    )


def _same_ids(infos: Sequence[MemoryInfo], history: History, vault: Vault) -> list[Problem]:
    """A problem for each file holding an id another file holds too, but the one that
    keeps it (:func:`holders_of`)."""
    paths: dict[str, list[str]] = {}
    for info in infos:
        paths.setdefault(info.id, []).append(info.path)
    shared = {memory_id: found for memory_id, found in paths.items() if len(found) > 1}
    kept = holders_of(history, vault, shared)
    return [
        same_id_problem(p, memory_id, kept[memory_id])
        for memory_id, found in shared.items()
        for p in sorted(found)
        if p != kept[memory_id]
    ]
