"""Watch the vault for edits made by people (Obsidian, editors, git pull).

Two stages per burst of file events:
1. after a short settle (~0.15 s of quiet): re-read the files, update the index, notify
   listeners, so a person's save is searchable and pushed within a second;
2. after ``debounce_seconds`` of quiet: one commit with ``Memvault-Op: external`` for
   everything that settled, attributed to the repository's own git identity.

memvault's own writes are recognised by content hash and never processed twice.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .config import Settings
from .errors import MemvaultError
from .models import ChangeEvent
from .vault import content_hash

log = logging.getLogger(__name__)

SETTLE_SECONDS = 0.15


class Watched(Protocol):
    """What the watcher needs of a vault's service (MemoryService provides it)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def root(self) -> Path: ...
    def is_ignored(self, rel: str) -> bool: ...
    def is_memory_path(self, rel: str) -> bool: ...
    def last_written(self, rel: str) -> str | None: ...
    def indexed_hashes(self) -> dict[str, str]: ...
    def sync_index(self, paths: Iterable[str] | None = None) -> int: ...
    def publish(self, event: ChangeEvent) -> None: ...
    def commit_external(self, paths: Sequence[str]) -> str | None: ...


class _Handler(FileSystemEventHandler):
    def __init__(self, on_path: Callable[[str], None]) -> None:
        self.on_path = on_path

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                self.on_path(os.fsdecode(raw))


class Watcher:
    """Runs a watchdog observer and a worker thread over one service."""

    def __init__(
        self,
        service: Watched,
        settle: float = SETTLE_SECONDS,
        debounce: float | None = None,
    ) -> None:
        self.service = service
        self.settle = settle
        self.debounce = service.settings.debounce_seconds if debounce is None else debounce
        self.root = service.root
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._to_commit: set[str] = set()
        self._last_event = 0.0
        self._stopping = False
        self._seen: dict[str, str] = {}
        self.batches = 0  # bursts processed (index + notify)
        self.commits = 0  # external commits made
        self.errors: list[str] = []
        self._observer: Any = None
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------
    def start(self) -> None:
        self._seen = self.service.indexed_hashes()
        self._observer = Observer()
        self._observer.schedule(_Handler(self._event), str(self.root), recursive=True)
        self._observer.start()
        self._thread = threading.Thread(target=self._run, name="memvault-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=30)

    @property
    def pending(self) -> int:
        """Paths seen by the observer and not processed yet."""
        with self._cond:
            return len(self._pending)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate()`` holds after a batch or commit (for tests and tools)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    # -- events -------------------------------------------------------------------
    def _event(self, abspath: str) -> None:
        try:
            rel = Path(abspath).relative_to(self.root).as_posix()
        except ValueError:
            return
        if self.service.is_ignored(rel):
            return
        with self._cond:
            self._pending.add(rel)
            self._last_event = time.monotonic()
            self._cond.notify_all()

    def _hash(self, rel: str) -> str | None:
        try:
            return content_hash((self.root / rel).read_bytes())
        except OSError:
            return None

    # -- worker -------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                batch, commit_now = self._next_work()
                if batch is None and not commit_now:
                    if self._stopping and not (self._pending or self._to_commit):
                        return  # everything seen before stop() is processed and committed
                    continue
            try:
                if batch:
                    self._process(batch)
                if commit_now:
                    self._commit()
            except Exception as exc:  # the watcher must survive anything a person does
                log.exception("watcher batch failed")
                self.errors.append(str(exc))
            with self._cond:
                self._cond.notify_all()

    def _next_work(self) -> tuple[set[str] | None, bool]:
        """Wait (holding the condition) until a batch settles or a commit is due."""
        now = time.monotonic()
        quiet = now - self._last_event
        if self._pending and quiet >= self.settle:
            batch, self._pending = self._pending, set()
            return batch, False
        if self._to_commit and not self._pending and (quiet >= self.debounce or self._stopping):
            return None, True
        if self._stopping and not self._pending and not self._to_commit:
            return None, False
        if self._pending:
            wait = self.settle - quiet
        elif self._to_commit:
            wait = self.debounce - quiet
        else:
            wait = 1.0
        self._cond.wait(max(wait, 0.01))
        return None, False

    def _process(self, batch: set[str]) -> None:
        files = self._expand(batch)
        changed: list[str] = []
        added: list[str] = []
        removed: list[str] = []
        for rel in sorted(files):
            if not self.service.is_memory_path(rel):
                continue
            digest = self._hash(rel)
            baseline = self._seen.get(rel)
            mine = self.service.last_written(rel)
            if mine is not None:  # memvault wrote (or deleted) it: that is the baseline
                baseline = mine or None
            if digest != baseline:
                if digest is None:
                    removed.append(rel)
                elif baseline is None:
                    added.append(rel)
                else:
                    changed.append(rel)
            self._record(rel, digest)
        if not (changed or added or removed):
            return
        indexed = self.service.indexed_hashes()
        stale = [p for p in changed + added if indexed.get(p) != self._seen.get(p)]
        self.service.sync_index([*stale, *removed])  # another process may have indexed it
        with self._cond:
            self._to_commit.update([*changed, *added, *removed])
            self.batches += 1
        self.service.publish(
            ChangeEvent(changed=tuple(changed + added), added=tuple(added), removed=tuple(removed))
        )

    def _record(self, rel: str, digest: str | None) -> None:
        if digest is None:
            self._seen.pop(rel, None)
        else:
            self._seen[rel] = digest

    def _expand(self, batch: set[str]) -> set[str]:
        """Files behind a batch of paths: folders are walked, vanished folders resolved."""
        files: set[str] = set()
        for rel in batch:
            full = self.root / rel
            if full.is_dir():
                for dirpath, dirnames, filenames in os.walk(full):
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                    for name in filenames:
                        files.add(Path(dirpath, name).relative_to(self.root).as_posix())
            elif full.exists() or rel.lower().endswith(".md"):
                files.add(rel)
            if not full.exists():  # a moved or deleted folder: what we knew under it
                files.update(p for p in self._seen if p.startswith(rel + "/"))
        return files

    def _commit(self) -> None:
        with self._cond:
            paths, self._to_commit = sorted(self._to_commit), set()
        try:
            sha = self.service.commit_external(paths)
        except MemvaultError as exc:
            log.warning("could not commit external edits (will retry): %s", exc)
            with self._cond:
                self._to_commit.update(paths)
                self._last_event = time.monotonic()
            return
        if sha:
            with self._cond:
                self.commits += 1
