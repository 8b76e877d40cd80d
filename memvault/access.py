"""Access statistics: how often each memory was returned to a client, and when last.

Kept in ``.memvault/access.sqlite``, beside the index folder rather than in it: the index is
disposable (a rebuild or a version change wipes it) but these counts cannot be rebuilt from
the files, and they never go into the files or git (a read is not a change). Keyed by memory
id, so they follow a memory through moves and archiving; a purge erases its row.

Only reads *for a client* count (the ``recall`` and ``get_memory`` tools, ``memvault search``
and ``show``): the adapters call :meth:`AccessStats.hit`. memvault's own reads (duplicate
checks, resources, consolidation) never do. SQLite in WAL mode lets every server process
of one vault count into the same file.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from .models import Access

log = logging.getLogger(__name__)

ACCESS_FILE = "access.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS access(
  id TEXT PRIMARY KEY, hits INTEGER NOT NULL, last_accessed TEXT NOT NULL);
"""
BATCH = 500  # ids per IN (...) query


class AccessStats:
    """Per-memory hits and last access, counted by the adapters, read by ranking and policy."""

    def __init__(self, path: Path, clock: Callable[[], dt.datetime]) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        try:
            self._db = _connect(path)
        except sqlite3.DatabaseError as exc:
            if any(word in str(exc).lower() for word in ("locked", "busy")):
                raise
            # damaged (a disk error, a half copy): the counts only soften ranking, so start
            # anew rather than refuse every command (not kept aside: a purge could not
            # erase a memory's id from a copy it does not know of)
            log.warning("access statistics %s unreadable (%s): started anew", path, exc)
            for suffix in ("", "-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            self._db = _connect(path)

    def close(self) -> None:
        self._db.close()

    def hit(self, memory_ids: Iterable[str]) -> dict[str, Access]:
        """Count one access to each memory (now, by the clock); their stats as they were
        before this access. Counting never fails a read: a database error is logged."""
        ids = list(dict.fromkeys(memory_ids))
        before = self.of(ids)
        when = self.clock().replace(microsecond=0).isoformat()
        try:
            with self._lock:
                self._db.executemany(
                    "INSERT INTO access(id, hits, last_accessed) VALUES(?, 1, ?) "
                    "ON CONFLICT(id) DO UPDATE SET hits = hits + 1, "
                    # never backwards: another process's clock may run behind this one's
                    "last_accessed = CASE WHEN last_accessed IS NULL "
                    "OR excluded.last_accessed > last_accessed "
                    "THEN excluded.last_accessed ELSE last_accessed END",
                    [(i, when) for i in ids],
                )
        except sqlite3.Error as exc:
            log.warning("access statistics not counted (%s): %s", self.path, exc)
        return before

    def of(self, memory_ids: Iterable[str]) -> dict[str, Access]:
        """Stats of these memories (never accessed: zero hits, no last access)."""
        ids = list(dict.fromkeys(memory_ids))
        found: dict[str, Access] = {}
        try:
            with self._lock:
                for start in range(0, len(ids), BATCH):
                    batch = ids[start : start + BATCH]
                    marks = ",".join("?" * len(batch))
                    rows = self._db.execute(
                        f"SELECT id, hits, last_accessed FROM access WHERE id IN ({marks})", batch
                    ).fetchall()
                    found.update({row[0]: Access(int(row[1]), str(row[2])) for row in rows})
        except sqlite3.Error as exc:
            log.warning("access statistics unreadable (%s): %s", self.path, exc)
        return {i: found.get(i, Access()) for i in ids}

    def erase(self, memory_ids: Iterable[str]) -> list[str]:
        """Forget these memories' stats for good (purge); the places erased."""
        ids = list(memory_ids)
        with self._lock:
            self._db.executemany("DELETE FROM access WHERE id=?", [(i,) for i in ids])
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return ["access statistics"]


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # no fsync per counted read (27 ms of every recall over MCP): WAL stays consistent
        # after any crash; a power cut may lose the last counts, which only soften ranking
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        db.execute("SELECT COUNT(*) FROM access").fetchone()
    except BaseException:
        db.close()
        raise
    return db
