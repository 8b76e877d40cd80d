"""Watch the vault for edits made by people (Obsidian, editors, git pull).

Two stages per burst of file events:
1. after a short settle (~0.15 s of quiet): re-read the files, update the index, notify
   listeners, so a person's save is searchable and pushed within a second;
2. after ``debounce_seconds`` of quiet: one commit with ``Memvault-Op: external`` for
   everything that settled, attributed to the repository's own git identity.

An edit of ``.memvaultignore`` applies while watching: what the file hides now is hidden at
each of its events (its notes leave the index, subscribers are told they are gone, they are
never committed), what it no longer hides comes back only once the file has been left alone
for ``debounce_seconds``: a save seen half-way (empty, or missing between a delete and a
rename) never un-hides a note.

memvault's own writes are recognised by content hash and never processed twice.
Symlinks and other non-regular files are skipped (never opened, never committed) and
logged; the rest of their burst is processed as usual.

What is watched: the vault root (not recursively) and each top-level folder that can hold
memories (recursively), so ``.git/`` and ``.memvault/`` are never watched at all. The
observer's threads are checked about once a second; if one died, the observer is
replaced and the whole vault rescanned, so no edit is lost.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from .config import Settings
from .errors import MemvaultError, UnsafePathError
from .models import ChangeEvent
from .vault import IGNORE_FILE, IGNORED_DIRS, content_hash

log = logging.getLogger(__name__)

SETTLE_SECONDS = 0.15
HEALTH_SECONDS = 1.0  # how often the observer's threads are checked
# Only events that can change content: no opened/closed-without-write/access noise
# (memvault's own reads of the vault would otherwise wake the watcher).
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]


class Watched(Protocol):
    """What the watcher needs of a vault's service (MemoryService provides it)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def root(self) -> Path: ...
    def is_ignored(self, rel: str) -> bool: ...
    def is_memory_path(self, rel: str) -> bool: ...
    def reload_ignore(self, settled: bool) -> bool: ...
    def last_written(self, rel: str) -> str | None: ...
    def memory_paths(self) -> list[str]: ...
    def read_regular(self, rel: str) -> bytes: ...
    def indexed_hashes(self) -> dict[str, str]: ...
    def sync_index(self, paths: Iterable[str] | None = None) -> int: ...
    def publish(self, event: ChangeEvent) -> None: ...
    def commit_external(self, paths: Sequence[str]) -> str | None: ...
    def recover(self) -> str | None: ...


class _Handler(FileSystemEventHandler):
    def __init__(self, on_event: Callable[[FileSystemEvent], None]) -> None:
        self.on_event = on_event

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.on_event(event)


class Watcher:
    """Runs a watchdog observer and a worker thread over one service."""

    def __init__(
        self,
        service: Watched,
        settle: float = SETTLE_SECONDS,
        debounce: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.settle = settle
        self.debounce = service.settings.debounce_seconds if debounce is None else debounce
        self.clock = clock  # seconds, monotonic; tests move a fake one by hand
        # .memvaultignore: what it hides more is hidden at each event; what it hides less
        # only once it has been left alone this long (a save, a `rm` then a re-create)
        self.ignore_settle = max(settle, self.debounce)
        self._ignore_at: float | None = None  # its last event, until its reload settles
        self._ignore_unread = False  # an event on it since it was last read
        self._ignore_reading = False  # read and applied by the worker right now
        self.root = service.root
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._to_commit: set[str] = set()
        self._last_event = 0.0
        self._stopping = False
        self._paused = 0  # > 0 while a sync rewrites the tree
        self._seen: dict[str, str] = {}
        self._overtaken: dict[str, str] = {}  # memvault's writes a person's edit followed
        self._gone: set[str] = set()  # deleted while paused (a sync): known, not a change
        self.batches = 0  # bursts processed (index + notify)
        self.settled = 0  # bursts looked at, changed or not
        self.commits = 0  # external commits made
        self.restarts = 0  # observers replaced after one of their threads died
        self.ignored = 0  # events that reached us from folders that are never watched
        self.errors: list[str] = []
        self.skipped: dict[str, str] = {}  # unsafe path -> why it is not read or committed
        self.health_interval = HEALTH_SECONDS
        self._observer: Any = None
        self._handler = _Handler(self._on_fs_event)
        self._watches: dict[str, Any] = {}  # top-level folder -> its recursive watch
        self._rewatch = False  # a top-level folder appeared, vanished or moved
        self._life = threading.Lock()  # observer replacement vs stop()
        self._next_check = 0.0
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------
    def start(self) -> None:
        with self._life:
            self._start_observer()
        # What was saved before the observer ran had no event (`memvault watch` syncs the
        # index first, which can take long): committed and indexed now, as at opening; the
        # baseline is taken after, or a file put back to its old text would look unchanged.
        self.service.recover()
        self._seen = self.service.indexed_hashes()
        self._ignore_changed()  # saved after the vault read it, before the observer ran
        self._next_check = time.monotonic() + self.health_interval
        self._thread = threading.Thread(target=self._run, name="memvault-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        with self._life:
            observer = self._observer
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=30)

    @property
    def observer(self) -> Any:
        """The running watchdog observer (replaced when one of its threads dies)."""
        return self._observer

    def _start_observer(self) -> None:
        """A new observer: the root alone, and every top-level memory folder recursively."""
        self._observer = Observer()
        self._watches = {}
        self._observer.schedule(self._handler, str(self.root), event_filter=EVENTS)
        self._sync_watches()
        self._observer.start()

    def _top_folders(self) -> set[str]:
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return set()
        return {
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False)
            and e.name not in IGNORED_DIRS
            and not e.name.startswith(".")
        }

    def _sync_watches(self) -> list[str]:
        """Watch new top-level folders and drop vanished ones; returns the new ones.

        Runs on the worker thread (or before the observer starts), never in a handler:
        watchdog calls handlers under its own lock.
        """
        wanted = self._top_folders()
        for name in [n for n in self._watches if n not in wanted]:
            watch = self._watches.pop(name)
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError, RuntimeError) as exc:
                log.debug("unschedule %s: %s", name, exc)
        added = []
        for name in sorted(wanted - self._watches.keys()):
            try:
                self._watches[name] = self._observer.schedule(
                    self._handler, str(self.root / name), recursive=True, event_filter=EVENTS
                )
            except OSError as exc:  # vanished again, or out of inotify watches
                log.warning("cannot watch %s: %s", self.root / name, exc)
                continue
            added.append(name)
        return added

    def _observer_dead(self) -> str | None:
        """Why the observer no longer reports events, or None while it is healthy."""
        observer = self._observer
        if observer is None:
            return None
        if not observer.is_alive() or observer.stopped_event.is_set():
            return "the watchdog observer thread stopped"
        reader = getattr(observer, "_inotify_fd", None)  # the inotify reader thread
        if isinstance(reader, threading.Thread) and not reader.is_alive():
            return "the inotify reader thread died"
        for emitter in list(observer.emitters):
            if not emitter.is_alive() and os.path.isdir(emitter.watch.path):
                return f"the event thread for {emitter.watch.path} died"
        return None

    def _check_observer(self) -> None:
        """Keep the watches in line with the top-level folders; replace a dead observer."""
        with self._life:
            if self._stopping:
                return
            if self._rewatch:
                self._rewatch = False
                for name in self._sync_watches():  # files made before the watch existed
                    self._event(str(self.root / name))
            if time.monotonic() < self._next_check:
                return
            self._next_check = time.monotonic() + self.health_interval
            reason = self._observer_dead()
            if reason is None:
                return
            log.warning("file watcher failed (%s): restarting it and rescanning the vault", reason)
            old = self._observer
            # Stopping joins watchdog's threads: never let a wedged one block the worker.
            threading.Thread(target=old.stop, name="memvault-old-observer", daemon=True).start()
            self._start_observer()
            self.restarts += 1
        self._rescan()

    def _rescan(self) -> None:
        """Look at every memory file again (after a gap in events); unchanged ones cost a hash."""
        paths = set(self.service.memory_paths()) | set(self._seen)
        with self._cond:
            self._pending.update(paths)
            self._last_event = self.clock()
            self._cond.notify_all()
        self._ignore_changed()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold off processing while git rewrites the tree (a sync); events are kept.

        Afterwards, what the index holds is the baseline (the sync indexed every file it
        changed), so those files, even when their events arrive late, are not taken for a
        person's edits; anything else changed meanwhile is processed as usual.
        """
        with self._cond:
            self._paused += 1
        try:
            yield
        finally:
            indexed = self.service.indexed_hashes()
            with self._cond:
                self._seen.update(indexed)
                for rel in [r for r in self._seen if r not in indexed]:
                    if not os.path.lexists(self.root / rel):
                        del self._seen[rel]
                        self._gone.add(rel)
                self._paused -= 1
                self._cond.notify_all()

    @property
    def ignore_pending(self) -> bool:
        """A change of ``.memvaultignore`` not settled yet (what it hid stays hidden)."""
        with self._cond:
            return self._ignore_at is not None

    @property
    def reading_ignore(self) -> bool:
        """``.memvaultignore`` is being read and the index brought in line with it."""
        with self._cond:
            return self._ignore_reading

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
    def _on_fs_event(self, event: FileSystemEvent) -> None:
        raws = [os.fsdecode(r) for r in (event.src_path, getattr(event, "dest_path", "")) if r]
        if event.is_directory and any(os.path.dirname(r) == str(self.root) for r in raws):
            with self._cond:
                self._rewatch = True  # the worker (re)schedules watches: not under watchdog's lock
        for raw in raws:
            self._event(raw)

    def _event(self, abspath: str) -> None:
        try:
            rel = Path(abspath).relative_to(self.root).as_posix()
        except ValueError:
            return
        first = rel.split("/", 1)[0]
        if first in (".git", ".memvault", ".obsidian", ".trash") or rel == ".":
            self.ignored += 1  # should stay 0: those folders are not watched
            return
        if rel == IGNORE_FILE:
            self._ignore_changed()
            return
        if self.service.is_ignored(rel):
            return
        with self._cond:
            self._pending.add(rel)
            self._last_event = self.clock()
            self._cond.notify_all()

    def _ignore_changed(self) -> None:
        with self._cond:
            self._ignore_at, self._ignore_unread = self.clock(), True
            self._cond.notify_all()

    def _hash(self, rel: str) -> str | None:
        """Content hash of a regular file; None when it is gone. Raises UnsafePathError
        (without opening it) for a symlink, FIFO or anything leading outside the vault."""
        full = self.root / rel
        if full.is_dir() and not full.is_symlink():  # the note made way for a folder
            return None
        try:
            return content_hash(self.service.read_regular(rel))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if os.path.lexists(self.root / rel):
                raise UnsafePathError(f"{rel} cannot be read: {exc}") from exc
            return None

    # -- worker -------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                self._check_observer()
            except Exception as exc:  # keep the worker alive; the next check retries
                log.exception("could not check or restart the file watcher")
                self.errors.append(str(exc))
            with self._cond:
                settled = self._ignore_work()
                batch, commit_now = (None, False) if settled is not None else self._next_work()
                if settled is None and batch is None and not commit_now:
                    if self._stopping and not (self._pending or self._to_commit):
                        return  # everything seen before stop() is processed and committed
                    continue
            try:
                if settled is not None:
                    self._reload_ignore(settled)
                if batch:
                    self._process(batch)
                    self.settled += 1
                if commit_now:
                    self._commit()
            except Exception as exc:  # the watcher must survive anything a person does
                log.exception("watcher batch failed")
                self.errors.append(str(exc))
            with self._cond:
                self._cond.notify_all()

    def _next_work(self) -> tuple[set[str] | None, bool]:
        """Wait (holding the condition) until a batch settles or a commit is due."""
        if self._paused and not self._stopping:
            self._cond.wait(self.health_interval)
            return None, False
        now = self.clock()
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
            wait = self.health_interval
        if self._ignore_at is not None:  # .memvaultignore's reload settles then
            wait = min(wait, self._ignore_at + self.ignore_settle - now)
        if self._rewatch:
            return None, False
        self._cond.wait(max(min(wait, self.health_interval), 0.01))
        return None, False

    def _process(self, batch: set[str]) -> None:
        files = self._expand(batch)
        changed: list[str] = []
        added: list[str] = []
        removed: list[str] = []
        hidden: list[str] = []  # became unsafe: out of the index, nothing committed
        indexed: dict[str, str] | None = None  # read once, for paths seen for the first time
        for rel in sorted(files):
            if not self.service.is_memory_path(rel):
                continue
            try:
                digest = self._hash(rel)
            except UnsafePathError as exc:
                self._skip(rel, str(exc))
                if self._seen.pop(rel, None) is not None:
                    hidden.append(rel)
                continue
            self.skipped.pop(rel, None)
            baseline, known = self._baseline(rel, digest)
            if not known:  # the index was still being built when watching started
                indexed = self.service.indexed_hashes() if indexed is None else indexed
                baseline, known = indexed.get(rel), rel in indexed
            if digest != baseline or not known:  # gone unseen: a commit drops what git lacks
                if digest is None:
                    removed.append(rel)
                elif baseline is None:
                    added.append(rel)
                else:
                    changed.append(rel)
            self._record(rel, digest)
        if not (changed or added or removed or hidden):
            return
        indexed = self.service.indexed_hashes()
        stale = [p for p in changed + added if indexed.get(p) != self._seen.get(p)]
        self.service.sync_index([*stale, *removed, *hidden])  # another process may have indexed
        with self._cond:
            self._to_commit.update([*changed, *added, *removed])
            self.batches += 1
        self.service.publish(
            ChangeEvent(
                changed=tuple(changed + added), added=tuple(added), removed=tuple(removed + hidden)
            )
        )

    def _ignore_work(self) -> bool | None:
        """(Holding the condition.) Whether to read ``.memvaultignore`` again: False while
        a save of it is in progress (what it hides now is hidden too), True once it has
        been left alone for ``ignore_settle`` (it alone applies), None for nothing to do."""
        if self._ignore_at is None or (self._paused and not self._stopping):
            return None
        settled = self.clock() >= self._ignore_at + self.ignore_settle
        if not (settled or self._ignore_unread):
            return None
        self._ignore_unread, self._ignore_reading = False, True
        if settled:
            self._ignore_at = None
        return settled

    def _reload_ignore(self, settled: bool) -> None:
        """Apply ``.memvaultignore`` as it is now (see :meth:`_ignore_work`): the notes it
        hides leave the index at once (subscribers told they are gone), never committed;
        those it no longer hides come back (indexed, announced, committed if changed)."""
        try:
            if self.service.reload_ignore(settled):
                self._apply_ignore()
        except OSError as exc:  # what it hid stays hidden; the next event reads it again
            log.warning("cannot read %s (%s): the notes it hid stay hidden", IGNORE_FILE, exc)
        finally:
            with self._cond:
                self._ignore_reading = False

    def _apply_ignore(self) -> None:
        """Bring the index, the baseline and the commit queue in line with a new rule."""
        before = self.service.indexed_hashes()
        self.service.sync_index()
        after = self.service.indexed_hashes()
        with self._cond:
            for rel in [r for r in {*self._seen, *self._to_commit} if self._hidden(r)]:
                self._seen.pop(rel, None)
                self._to_commit.discard(rel)
            added = tuple(sorted(after.keys() - before.keys()))
            self._seen.update({r: after[r] for r in added})
            self._to_commit.update(added)  # what a person changed while it was hidden
        removed = tuple(sorted(before.keys() - after.keys()))
        if added or removed:
            self.service.publish(ChangeEvent(changed=added, added=added, removed=removed))

    def _hidden(self, rel: str) -> bool:
        """A path ``.memvaultignore`` (or another ignore rule) now hides."""
        return not self.service.is_memory_path(rel)

    def _baseline(self, rel: str, digest: str | None) -> tuple[str | None, bool]:
        """What ``rel`` held before this batch, and whether that is known: memvault's own
        last write (or deletion) of it, until a person changes the file after it; then
        what the watcher saw last, so a person who puts memvault's text back (an undo) has
        made a change too. Unknown for a path the watcher never saw."""
        mine = self.service.last_written(rel)
        if mine is None or self._overtaken.get(rel) == mine:
            return self._seen.get(rel), rel in self._seen or rel in self._gone
        if digest != (mine or None):
            self._overtaken[rel] = mine  # the file moved on from memvault's write
        return mine or None, True

    def _skip(self, rel: str, reason: str) -> None:
        """An unsafe entry: logged (once per reason), never read, indexed or committed."""
        if self.skipped.get(rel) != reason:
            log.warning("watcher skipped %s", reason)
        self.skipped[rel] = reason

    def _record(self, rel: str, digest: str | None) -> None:
        self._gone.discard(rel)
        if digest is None:
            self._seen.pop(rel, None)
        else:
            self._seen[rel] = digest

    def _expand(self, batch: set[str]) -> set[str]:
        """Files behind a batch of paths: folders are walked, vanished folders resolved."""
        files: set[str] = set()
        # what the watcher saw or the index holds (the index too: watching may have begun
        # before it was built); read once, when a batch needs it
        known = functools.cache(lambda: set(self._seen) | set(self.service.indexed_hashes()))
        for rel in batch:
            full = self.root / rel
            if full.is_dir() and not full.is_symlink():  # a symlinked folder is not entered
                if rel.lower().endswith(".md") and rel in known():  # a note made way for it
                    files.add(rel)
                for dirpath, dirnames, filenames in os.walk(full):
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                    for name in filenames:
                        files.add(Path(dirpath, name).relative_to(self.root).as_posix())
            elif os.path.lexists(full) or rel.lower().endswith(".md"):
                files.add(rel)
            if not os.path.lexists(full):  # a moved or deleted folder: what we knew under it
                files.update(p for p in known() if p.startswith(rel + "/"))
        return files

    def _commit(self) -> None:
        with self._cond:
            paths, self._to_commit = sorted(self._to_commit), set()
        paths = [p for p in paths if not self._hidden(p)]  # hidden since: never committed
        try:
            sha = self.service.commit_external(paths)
        except MemvaultError as exc:
            log.warning("could not commit external edits (will retry): %s", exc)
            with self._cond:
                self._to_commit.update(paths)
                self._last_event = self.clock()
            return
        if sha:
            self.service.publish(ChangeEvent())  # committed: memory://changes has them now
            with self._cond:
                self.commits += 1
