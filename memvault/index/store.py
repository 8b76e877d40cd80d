"""Per-memory index records and vectors in SQLite, mirrored into numpy for search.

SQLite (WAL) lets several server processes share one index safely; a generation
counter tells each process which rows to reload after another process wrote.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..models import MemoryInfo
from ..note import parse_time

SCHEMA = """
CREATE TABLE IF NOT EXISTS info(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
  id TEXT PRIMARY KEY, path TEXT NOT NULL, hash TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL, model TEXT, gen INTEGER NOT NULL, meta TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS docs_path ON docs(path);
CREATE INDEX IF NOT EXISTS docs_gen ON docs(gen);
CREATE TABLE IF NOT EXISTS chunks(id TEXT NOT NULL, n INTEGER NOT NULL, vec BLOB NOT NULL,
  PRIMARY KEY(id, n));
CREATE TABLE IF NOT EXISTS tombstones(id TEXT PRIMARY KEY, gen INTEGER NOT NULL);
"""


def info_json(info: MemoryInfo) -> str:
    """The record's fields that are not columns, as the ``meta`` column's JSON."""
    data = asdict(info)
    for key in ("id", "path", "hash", "mtime_ns", "size"):
        data.pop(key)
    return json.dumps(data, ensure_ascii=False)


def info_from_row(
    id_: str, path: str, hash_: str, mtime_ns: int, size: int, meta: str
) -> MemoryInfo:
    data = json.loads(meta)
    data["tags"] = tuple(data.get("tags", ()))
    for key in ("scope", "aliases", "links", "problems"):
        data[key] = tuple(data.get(key, ()))
    return MemoryInfo(id=id_, path=path, hash=hash_, mtime_ns=mtime_ns, size=size, **data)


class Store:
    """SQLite records + an in-memory mirror (docs dict and a chunk matrix)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(
            str(path), timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.RLock()
        self.docs: dict[str, MemoryInfo] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._models: dict[str, str | None] = {}  # the model that made each one's vectors
        self._model: str | None = None  # the only model whose vectors are mirrored
        self._gen = -1
        self._missing: tuple[int, str, int] | None = None
        self._undated: tuple[int, list[MemoryInfo]] | None = None
        self._matrix: np.ndarray | None = None
        self._transformed: tuple[Callable[[np.ndarray], np.ndarray], np.ndarray] | None = None
        self._row_owner: list[str] = []
        self._owner_row: dict[str, int] = {}
        self._starts: np.ndarray = np.zeros(0, dtype=np.int64)
        self.refresh()

    # -- info -----------------------------------------------------------------
    def get_info(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM info WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def close(self) -> None:
        self._db.close()

    # -- writes ---------------------------------------------------------------
    def _next_gen(self) -> int:
        self._db.execute("INSERT OR IGNORE INTO info(key, value) VALUES('gen', '0')")
        self._db.execute("UPDATE info SET value = CAST(value AS INTEGER) + 1 WHERE key='gen'")
        return int(self.get_info("gen") or 0)

    def put(
        self,
        docs: Sequence[MemoryInfo],
        vectors: dict[str, np.ndarray],
        model: str | None,
        keep: bool = False,
    ) -> None:
        """Insert or replace records (and their chunk vectors when given).

        With ``keep``, a record given no vectors keeps the ones it has when its content
        (hash) is unchanged: they were made from this very text.
        """
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                gen = self._next_gen()
                for doc in docs:
                    kept = None
                    if keep and doc.id not in vectors:
                        row = self._db.execute(
                            "SELECT hash, model FROM docs WHERE id=?", (doc.id,)
                        ).fetchone()
                        kept = row[1] if row is not None and row[0] == doc.hash else None
                    self._db.execute(
                        "INSERT OR REPLACE INTO docs VALUES(?,?,?,?,?,?,?,?)",
                        (
                            doc.id,
                            doc.path,
                            doc.hash,
                            doc.mtime_ns,
                            doc.size,
                            model if doc.id in vectors else kept,
                            gen,
                            info_json(doc),
                        ),
                    )
                    self._db.execute("DELETE FROM tombstones WHERE id=?", (doc.id,))
                    if kept is not None:
                        continue
                    self._db.execute("DELETE FROM chunks WHERE id=?", (doc.id,))
                    for n, vec in enumerate(vectors.get(doc.id, ())):
                        blob = np.asarray(vec, dtype=np.float32).tobytes()
                        self._db.execute("INSERT INTO chunks VALUES(?,?,?)", (doc.id, n, blob))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.refresh()

    def put_vectors(self, vectors: dict[str, tuple[str, np.ndarray]], model: str) -> int:
        """Store chunk vectors of records whose content is still ``hash`` (id -> (hash,
        vectors)), in one transaction; a record changed meanwhile is left for the next
        round. Returns how many records got their vectors."""
        done = 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                gen = self._next_gen()
                for doc_id, (hash_, matrix) in vectors.items():
                    cursor = self._db.execute(
                        "UPDATE docs SET model=?, gen=? WHERE id=? AND hash=?",
                        (model, gen, doc_id, hash_),
                    )
                    if cursor.rowcount != 1:
                        continue
                    done += 1
                    self._db.execute("DELETE FROM chunks WHERE id=?", (doc_id,))
                    for n, vec in enumerate(matrix):
                        blob = np.asarray(vec, dtype=np.float32).tobytes()
                        self._db.execute("INSERT INTO chunks VALUES(?,?,?)", (doc_id, n, blob))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.refresh()
        return done

    def set_info(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO info(key, value) VALUES(?, ?)", (key, value))

    def delete(self, ids: Iterable[str]) -> None:
        ids = [i for i in ids]
        if not ids:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                gen = self._next_gen()
                for doc_id in ids:
                    self._db.execute("DELETE FROM docs WHERE id=?", (doc_id,))
                    self._db.execute("DELETE FROM chunks WHERE id=?", (doc_id,))
                    self._db.execute(
                        "INSERT OR REPLACE INTO tombstones VALUES(?, ?)", (doc_id, gen)
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.refresh()

    def clear(self) -> None:
        """Delete every record (tombstoned, so other processes' mirrors drop them too) and
        record when, in one transaction: a process that synced the index before syncs it
        again (:meth:`cleared`), also when the clearing one was killed before refilling it."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                gen = self._next_gen()
                self._db.execute("INSERT OR REPLACE INTO tombstones SELECT id, ? FROM docs", (gen,))
                self._db.execute("DELETE FROM docs")
                self._db.execute("DELETE FROM chunks")
                self._db.execute(
                    "INSERT OR REPLACE INTO info(key, value) VALUES('cleared', ?)", (str(gen),)
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.refresh()

    def cleared(self) -> str | None:
        """The generation at which the index was last emptied (``reindex --full``)."""
        return self.get_info("cleared")

    def erase_freed(self) -> bool:
        """Rewrite the database so deleted rows leave no bytes behind: VACUUM drops freed
        pages, a truncating checkpoint empties the write-ahead log. False when another
        connection's read kept the log from being emptied."""
        with self._lock:
            self._db.execute("VACUUM")
            busy, _log, _done = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    def ids_by_path(self, paths: Iterable[str]) -> list[str]:
        wanted = set(paths)
        return [d.id for d in self.docs.values() if d.path in wanted]

    def missing_vectors(self, model: str) -> list[str]:
        rows = self._db.execute("SELECT id FROM docs WHERE model IS NULL OR model != ?", (model,))
        return [r[0] for r in rows]

    def undated(self) -> list[MemoryInfo]:
        """Records whose ``created`` is not a readable time (a person's note without one),
        as of the last refresh; worked out once per generation (a period's recall asks)."""
        with self._lock:
            if self._undated is None or self._undated[0] != self._gen:
                found = [d for d in self.docs.values() if parse_time(d.created) is None]
                self._undated = (self._gen, found)
            return self._undated[1]

    def count_missing(self, model: str) -> int:
        """How many records have no vectors from ``model``."""
        with self._lock:
            gen = int(self.get_info("gen") or 0)
            if self._missing is not None and self._missing[:2] == (gen, model):
                return self._missing[2]  # cached until the next write: recall asks each time
            row = self._db.execute(
                "SELECT COUNT(*) FROM docs WHERE model IS NULL OR model != ?", (model,)
            ).fetchone()
            self._missing = (gen, model, int(row[0]))
            return self._missing[2]

    # -- mirror -----------------------------------------------------------------
    def refresh(self) -> bool:
        """Reload rows written since our last look (by us or another process)."""
        with self._lock:
            gen = int(self.get_info("gen") or 0)
            if gen == self._gen:
                return False
            since = self._gen
            rows = self._db.execute(
                "SELECT id, path, hash, mtime_ns, size, meta, model FROM docs WHERE gen > ?",
                (since,),
            ).fetchall()
            gone = [
                r[0] for r in self._db.execute("SELECT id FROM tombstones WHERE gen > ?", (since,))
            ]
            for doc_id in gone:
                self.docs.pop(doc_id, None)
                self._vectors.pop(doc_id, None)
                self._models.pop(doc_id, None)
            changed = [r[0] for r in rows]
            # only new memories (a write): their rows go at the end, where a rebuild would
            # put them (the order of self._vectors), without copying the other rows again
            appended = not gone and not any(i in self._vectors for i in changed)
            for row in rows:
                self.docs[row[0]] = info_from_row(*row[:6])
                self._models[row[0]] = row[6]
            self._load_vectors(changed)
            self._gen = gen
            if not (appended and self._append_rows(changed)):
                self._matrix = None
                self._transformed = None
            return True

    def use_model(self, model: str) -> None:
        """Mirror only the vectors ``model`` made: another model's (left from before the
        embedder setting changed, until they are made anew) are not comparable with its
        queries, and may not even have as many dimensions."""
        with self._lock:
            if model == self._model:
                return
            self._model = model
            stale = [i for i in self._vectors if self._models.get(i) != model]
            for doc_id in stale:
                del self._vectors[doc_id]
            if stale:
                self._matrix = None
                self._transformed = None

    def _load_vectors(self, ids: list[str]) -> None:
        for doc_id in ids:
            self._vectors.pop(doc_id, None)
        if self._model is not None:
            ids = [i for i in ids if self._models.get(i) == self._model]
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT id, n, vec FROM chunks WHERE id IN ({marks}) ORDER BY id, n", batch
            ).fetchall()
            grouped: dict[str, list[np.ndarray]] = {}
            for doc_id, _n, blob in rows:
                grouped.setdefault(doc_id, []).append(np.frombuffer(blob, dtype=np.float32))
            for doc_id, vecs in grouped.items():
                self._vectors[doc_id] = np.vstack(vecs)

    def vector_count(self) -> int:
        return len(self._vectors)

    def nearest(
        self,
        query: np.ndarray,
        n: int,
        keep: Callable[[str], bool],
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> dict[str, float]:
        """The ``n`` memories (accepted by ``keep``) whose best chunk is closest to ``query``.

        One matrix product, a max per memory, then a partial sort: no Python loop over
        every memory unless filters reject most of the nearest ones. ``transform`` maps
        the stored vectors before the product (kept until the next change).
        """
        return self.nearest_and(query, n, keep, (), transform)[0]

    def nearest_and(
        self,
        query: np.ndarray,
        n: int,
        keep: Callable[[str], bool],
        also: Iterable[str],
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
        asked: np.ndarray | None = None,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """:meth:`nearest`, and the best cosines of those and of the memories ``also``
        (those with vectors): from the same product, or with ``asked`` (the question as
        asked, when ``query`` is a rewrite of it) ``asked``'s."""
        matrix, owners, starts, rows = self._search_matrix(transform)
        if matrix is None or matrix.shape[0] == 0 or matrix.shape[1] != query.shape[0]:
            return {}, {}
        # einsum, not `matrix @ query`: BLAS worker threads keep spinning after a product
        # and starve the embedder's own threads (measured: query embedding 10 ms -> 100 ms)
        best = np.maximum.reduceat(np.einsum("ij,j->i", matrix, query), starts)
        first = min(len(best), n * 4)
        head = np.argpartition(-best, first - 1)[:first]
        out = _take(head[np.argsort(-best[head])], best, owners, keep, n)
        if len(out) < n and first < len(best):  # filters rejected most of the head
            more = _take(np.argsort(-best)[first:], best, owners, keep, n - len(out))
            out.update(more)
        if asked is not None:  # the same product (einsum, as above) for the asked question
            best = np.maximum.reduceat(np.einsum("ij,j->i", matrix, asked), starts)
        return out, {i: float(best[rows[i]]) for i in (*out, *also) if i in rows}

    def _search_matrix(
        self, transform: Callable[[np.ndarray], np.ndarray] | None
    ) -> tuple[np.ndarray | None, list[str], np.ndarray, dict[str, int]]:
        """The stored vectors (``transform``-ed, cached until the next change), their owners,
        each memory's first row and each owner's place among them."""
        with self._lock:
            if self._matrix is None:
                self._build_matrix()
            matrix, owners, starts = self._matrix, self._row_owner, self._starts
            rows = self._owner_row
            if transform is not None and matrix is not None and matrix.shape[0]:
                if self._transformed is None or self._transformed[0] != transform:
                    self._transformed = (transform, transform(matrix))
                matrix = self._transformed[1]
        return matrix, owners, starts, rows

    def pairs_above(
        self, threshold: float, block: int = 512, limit: int = 1000
    ) -> list[tuple[str, str, float]]:
        """The ``limit`` closest pairs of memories whose first chunks have cosine >=
        ``threshold`` (computed blockwise, never the full n x n matrix)."""
        with self._lock:
            owners = list(self._vectors)
            firsts = np.vstack([self._vectors[o][0] for o in owners]) if owners else None
        if firsts is None:
            return []
        pairs = []
        for start in range(0, len(owners), block):
            scores = firsts[start : start + block] @ firsts.T
            rows, cols = np.nonzero(scores >= threshold)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                i = start + r
                if i < c:
                    pairs.append((owners[i], owners[c], float(scores[r, c])))
        pairs.sort(key=lambda p: -p[2])
        return pairs[:limit]

    def _append_rows(self, ids: list[str]) -> bool:
        """Add the vectors of new memories ``ids`` (now the last of self._vectors) to the
        search matrix and its transformed copy; False when the matrix must be rebuilt."""
        if self._matrix is None or not self._matrix.shape[0]:
            return False
        added = [i for i in ids if i in self._vectors]
        owners = list(self._vectors)[len(self._vectors) - len(added) :]
        blocks = [self._vectors[o] for o in owners]
        if sorted(owners) != sorted(added) or any(
            b.shape[1] != self._matrix.shape[1] for b in blocks
        ):
            return False
        if not blocks:
            return True
        rows = np.vstack(blocks).astype(np.float32, copy=False)
        lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
        first, first_owner = self._matrix.shape[0], len(self._row_owner)
        starts = first + np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self._matrix = _grown(self._matrix, rows)
        self._starts = np.concatenate([self._starts, starts.astype(np.int64)])
        # new objects, not changed in place: a search outside the lock holds the old ones
        self._owner_row = {**self._owner_row, **{o: first_owner + n for n, o in enumerate(owners)}}
        self._row_owner = [*self._row_owner, *owners]
        if self._transformed is not None:  # rows are transformed one by one (see language)
            transform, matrix = self._transformed
            self._transformed = (transform, _grown(matrix, transform(rows)))
        return True

    def _build_matrix(self) -> None:
        owners = list(self._vectors)
        if not owners:
            self._matrix, self._row_owner, self._starts = (
                np.zeros((0, 0), np.float32),
                [],
                np.zeros(0, np.int64),
            )
            self._owner_row = {}
            return
        dims = [self._vectors[o].shape[1] for o in owners]
        dim = max(set(dims), key=dims.count)  # after a model change, until all are redone
        owners = [o for o, d in zip(owners, dims, strict=True) if d == dim]
        blocks = [self._vectors[o] for o in owners]
        lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self._matrix = np.vstack(blocks).astype(np.float32, copy=False)
        self._row_owner = owners
        self._owner_row = {o: n for n, o in enumerate(owners)}


def _grown(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix`` with ``rows`` below it: a view of a buffer with room to spare, so that
    adding a few rows after each write does not copy the whole matrix each time."""
    base = matrix.base if isinstance(matrix.base, np.ndarray) else matrix
    used = matrix.shape[0]
    if (
        base.shape[0] >= used + rows.shape[0]
        and base.shape[1] == matrix.shape[1]
        and base[:used].ctypes.data == matrix.ctypes.data
        and base.flags.c_contiguous
    ):
        base[used : used + rows.shape[0]] = rows
        return base[: used + rows.shape[0]]
    grown = np.empty((max(2 * used, used + rows.shape[0], 64), matrix.shape[1]), np.float32)
    grown[:used] = matrix
    grown[used : used + rows.shape[0]] = rows
    return grown[: used + rows.shape[0]]


def _take(
    order: np.ndarray,
    best: np.ndarray,
    owners: list[str],
    keep: Callable[[str], bool],
    n: int,
) -> dict[str, float]:
    """Up to ``n`` memories accepted by ``keep``, in ``order``, with their best cosine."""
    out: dict[str, float] = {}
    for index in order.tolist():
        if keep(owners[index]):
            out[owners[index]] = float(best[index])
            if len(out) == n:
                break
    return out
