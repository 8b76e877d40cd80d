"""The disposable index: full text (Whoosh) + vectors (SQLite/numpy) + ranking.

Everything here can be rebuilt from the files. A version mismatch or a corrupt
index means: wipe, warn, rebuild. Never a crash, never a migration.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import numpy as np

from ..config import Settings
from ..errors import LockTimeoutError, MemvaultError
from ..models import Access, Filters, Memory, MemoryInfo, last_seen
from ..note import parse_time
from ..text import term_count, without_names
from .fulltext import DamagedIndexError, FullText, commit_lock
from .language import cjk_share, language_means, script_overlap
from .passages import (
    best_chunk,
    embedding_texts,
    passages,
    query_vectors,
    text_doc,
    when_text,
)
from .rank import Candidate, SoftForget, Weights, rank, relevance
from .store import Store
from .vectors import Embedder, EmbedderLoader

log = logging.getLogger(__name__)

INDEX_VERSION = 11  # 2: aliases, link targets; 3: records carry problems; 4: and `expires`;
# 5: tags and aliases under `Tags:`, `tag:`, `alias:` (records of such files were wrong);
# 6: a Markdown link's target marked as one (note.MARKDOWN); 7: Markdown link targets in
# angle brackets, with brackets, with an encoded %23, and wikilinks in properties (their
# records lacked those links); 8: full-width letters and digits as ASCII, zero-width
# characters dropped, katakana words whole, hiragana and Korean by pairs (text.tokens);
# 9: records carry the canonical type (models.canonical_type: a hand-typed `type: Episode`
# is `episode`), which ranking, counts and duplicate checks compare with
# 10: no links from tags, aliases or cssclasses; a label with brackets ([see [1]](x.md)),
# backticks closed only by a run of their length, "# C#" titled C#, no title from a code
# block's "# comment", inline code ends with its paragraph, fences in list items and
# callouts hide their text (records were wrong)
# 11: records carry the status a hand-typed `status: Archived` names (models.lifecycle_value:
# such a memory was indexed as active, listed and recalled), and the type, status,
# importance and confidence of a `Type:`, `Status:`, `Importance:` or `Confidence:` key
# (models.SPELLINGS: such a file was indexed as an active note of default importance),
# the type `Book` of `type: "[[Book]]"` and unquoted links in properties (models.yaml_link)
KEYWORD_CANDIDATES = 100
VECTOR_CANDIDATES = 100
# a name held by this share of the memories (and at least MIN of them) is left out of
# the query's embedding (text.without_names); chosen on LoCoMo's dev split and the
# cross-language set's dev half (docs/benchmarks.md, "Ranking ideas, round 4")
COMMON_NAME_SHARE = 0.1
COMMON_NAME_MIN = 10
NARROW_KEYWORD_CANDIDATES = 1000  # filters may drop most of the best keyword matches
# While vectors fill in behind the text index (a bulk import), a search embeds one chunk
# of each of its best hits still without vectors (as many as it returns, at least 4, at
# most this many), so that they are judged as the others are (Index._judge_unembedded;
# ~25 ms a chunk on an idle core, up to ~500 ms on two busy ones; kept a while)
UNEMBEDDED_JUDGED = 16
HEALS = 3  # rebuilds of a damaged index per process (Index._healing)
RATE_KEY = "embed_rate"  # memories/s of the last embedding run (store info), for the ETA


class IndexVersionError(ValueError):
    """The index was written by an older version of memvault: rebuild it, no retry."""


class _TextUnusable(Exception):
    """The full-text part of the index cannot be opened (its records may be sound)."""


class NewerIndexError(MemvaultError):
    """The index was written by a newer memvault: this one must not rebuild it (the newer
    one, running beside, would rebuild it back: each wiping the other's, for ever)."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    return any(word in str(exc).lower() for word in ("locked", "busy"))


# the question as asked, embedded beside its rewrite (Index._nearest_to_query)
_second_query = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memvault-query")


@dataclass(frozen=True)
class SearchQuery:
    text: str
    k: int = 8
    filters: Filters | None = None
    mode: str = "hybrid"  # hybrid | bm25 | vector


@dataclass(frozen=True)
class SearchHit:
    doc: MemoryInfo
    score: float
    why: dict[str, Any] = field(default_factory=dict)
    relevance: float = 1.0  # absolute, in [0, 1]: see rank.relevance


class Index:
    def __init__(self, folder: Path, settings: Settings, load_embedder: bool = True) -> None:
        self.folder = folder
        self.settings = settings
        self.weights = Weights(
            vector=settings.weight_vector,
            keyword=settings.weight_keyword,
            recency=settings.weight_recency,
            importance=settings.weight_importance,
            decay_per_day=settings.decay_per_day,
            decay_per_day_episode=settings.decay_per_day_episode,
            fusion=settings.fusion,
            # a type's own decay only where its table sets one: ``[types.episode]`` with
            # forgetting settings alone keeps decay_per_day_episode
            type_decay={
                t: o["decay_per_day"] for t, o in settings.types.items() if "decay_per_day" in o
            },
            soft_forget=soft_forget(settings),
            type_soft_forget={t: soft_forget(settings.for_type(t)) for t in settings.types},
        )
        self.rebuilt_reason: str | None = None
        # Several processes may open a new (or broken) index at once: one creates or
        # rebuilds it while the others wait, instead of deleting it under each other.
        self.reopened = 0  # times the folder was found deleted or replaced (follow)
        self._heals = 0  # times a damaged index was rebuilt (_healing)
        self._retired: list[tuple[Store, FullText]] = []
        self._write_lock = threading.Lock()
        with self._opening():
            self.store, self.text = self._open()
            self._home = _identity(folder)
        self.loader = EmbedderLoader(settings.embedder if load_embedder else "none")

    @contextmanager
    def _opening(self) -> Iterator[None]:
        """The lock of opening (or wiping) the index folder, across processes."""
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(str(self.folder.parent / "index-open.lock"))
        try:
            lock.acquire(timeout=max(self.settings.lock_timeout, 0.1))
        except filelock.Timeout as exc:
            raise LockTimeoutError(
                f"another memvault process kept the index {self.folder} locked while opening "
                f"it for {self.settings.lock_timeout:g} s; retry, or look for a stuck process"
            ) from exc
        try:
            yield
        finally:
            lock.release()

    def follow(self) -> None:
        """Open the index anew when its folder was deleted or replaced since we opened it
        (a person's `rm -rf .memvault/index`, another process's `reindex --full`): the
        files held open are gone, and every read would fail or see a stale copy. The old
        handles are closed with the index (a search in another thread may hold them)."""
        if _identity(self.folder) == self._home:
            return
        with self._write_lock, self._opening():
            if _identity(self.folder) == self._home:
                return
            store, text = self._open()  # a newer memvault's index: refused, said once a call
            log.warning("the index at %s was deleted or replaced: opened it anew", self.folder)
            self._retired.append((self.store, self.text))
            self.store, self.text = store, text
            self._home = _identity(self.folder)
            self.reopened += 1

    @contextmanager
    def _healing(self) -> Iterator[None]:
        """A full-text index found damaged in use (past the checks of opening) is wiped and
        opened anew, empty (the next sync fills it: IndexSync.ensure), at most HEALS times a
        process (a bug read as damage must not rebuild the index at every search); the
        error is raised all the same (the caller's answer would be incomplete)."""
        try:
            yield
        except DamagedIndexError as exc:
            self._heal(exc)
            raise

    def _heal(self, damage: DamagedIndexError) -> bool:
        """Wipe and reopen a damaged index (see _healing); False past HEALS times."""
        if self._heals >= HEALS:
            return False
        self._heals += 1
        with self._write_lock, self._opening():
            if _identity(self.folder) == self._home:  # not rebuilt by another yet
                self.rebuilt_reason = f"{damage.args[0].split(';')[0]}; rebuilt from the files"
                log.warning("%s", self.rebuilt_reason)
                self._wipe_text()  # the records and their vectors are sound: kept
        self.follow()
        return True

    # -- opening ---------------------------------------------------------------
    def _open(self) -> tuple[Store, FullText]:
        version_file = self.folder / "version.json"
        try:
            store, text = self._open_as_is()
        except NewerIndexError:
            raise
        except Exception as exc:
            store, text = self._reopen_or_rebuild(exc)
        version_file.write_text(json.dumps({"version": INDEX_VERSION}))
        return store, text

    def _open_as_is(self) -> tuple[Store, FullText]:
        version_file = self.folder / "version.json"
        found = json.loads(version_file.read_text()) if version_file.exists() else None
        version = found.get("version") if found is not None else INDEX_VERSION
        if isinstance(version, int) and version > INDEX_VERSION:
            raise NewerIndexError(
                f"the index at {self.folder} was made by a newer memvault (index version "
                f"{version}; this one reads {INDEX_VERSION}): an upgraded memvault uses this "
                "vault; stop this older one (a server started before the upgrade) and start "
                "it again. If you went back to an older memvault on purpose, stop every "
                f"memvault process and delete {self.folder} (the index is rebuilt from the "
                "files)"
            )
        if version != INDEX_VERSION:
            raise IndexVersionError(f"index version {version} != {INDEX_VERSION}")
        self.folder.mkdir(parents=True, exist_ok=True)
        store = Store(self.folder / "store.sqlite")
        try:
            store.get_info("gen")
        except BaseException:
            store.close()
            raise
        try:
            text = FullText(self.folder / "text", self.settings.lock_timeout)
            text.count()
        except Exception as exc:
            store.close()
            raise _TextUnusable(f"its full text: {exc}") from exc
        except BaseException:
            store.close()
            raise
        return store, text

    def _reopen_or_rebuild(self, first: Exception) -> tuple[Store, FullText]:
        """Open once more, else wipe and start empty (the next sync rebuilds it).

        A first failure may be another process's commit, not corruption: Whoosh replaces
        its table of contents while committing, and a process opening the index just then
        finds the file it listed gone. Wiping then would pull the index from under every
        process using it. So open again while holding Whoosh's write lock (no commit can
        run): only a failure then is the index's own.
        """
        problem: Exception = first
        if not isinstance(first, IndexVersionError):
            try:
                with commit_lock(self.folder / "text"):
                    return self._open_as_is()
            except (LockTimeoutError, NewerIndexError):
                raise
            except Exception as exc:
                problem = exc
        if isinstance(problem, sqlite3.OperationalError) and _busy(problem):
            raise LockTimeoutError(
                f"the index database {self.folder / 'store.sqlite'} stayed locked by another "
                f"process ({problem}); try again when it is done"
            ) from problem
        self.rebuilt_reason = (
            f"index at {self.folder} was unusable ({problem}); rebuilt from the files"
        )
        log.warning("%s", self.rebuilt_reason)
        if isinstance(problem, _TextUnusable):
            self._wipe_text()  # the records and their vectors are sound: kept
        else:
            self.wipe()
        return Store(self.folder / "store.sqlite"), FullText(
            self.folder / "text", self.settings.lock_timeout
        )

    def _embedder(self, timeout: float | None = None) -> Embedder | None:
        """The embedder once loaded (see EmbedderLoader.get); searches then compare its
        queries with its own vectors only (Store.use_model)."""
        embedder = self.loader.get(timeout=timeout)
        if embedder is not None:
            self.store.use_model(embedder.name)
        return embedder

    def wipe(self) -> None:
        """Empty the index folder: its files go (a link to a folder elsewhere, another disk,
        stays a link), but for the lock files other processes may hold (``embed.lock``: two
        embedders at once else); a file or a broken link in its place goes, and a folder
        is made."""
        if self.folder.is_dir():
            for entry in self.folder.iterdir():
                if not entry.name.endswith(".lock"):
                    _delete(entry)
        elif self.folder.is_symlink() or self.folder.exists():
            self.folder.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)

    def _wipe_text(self) -> None:
        """Delete the full-text index only: the next sync finds its count short of the
        records and reads every file again, keeping the vectors of unchanged text (a full
        wipe would embed every memory again: hours for 10k on a laptop)."""
        _delete(self.folder / "text")

    def _fresh(self) -> None:
        """Rows other processes wrote since our last look, in the index folder there is now."""
        self.follow()
        self.store.refresh()

    def let_go(self) -> None:
        """Close full-text files another process's commit replaced (its purge rewrote
        them): deleted, they stay on disk while this process's searcher holds them."""
        self.text.release()

    def _close_retired(self) -> None:
        """Close the handles of index files deleted or replaced since they were opened
        (kept for a search that may still read them): their bytes stay on disk while they
        are open, memories a purge erases among them."""
        for store, text in self._retired:
            store.close()
            text.close()
        self._retired.clear()

    def close(self) -> None:
        self._close_retired()
        self.store.close()
        self.text.close()

    # -- writing ---------------------------------------------------------------
    def upsert(
        self,
        memories: Sequence[Memory],
        stats: dict[str, tuple[int, int]] | None = None,
        embed: bool = True,
    ) -> None:
        """Index memories in one batch: text and records, and vectors when ``embed``
        (waiting for the embedder to load). Without ``embed`` a memory keeps the vectors
        of unchanged text; the others are filled in later (:meth:`embed_vectors`)."""
        if not memories:
            return
        self.follow()
        stats = stats or {}
        embedder = self._embedder() if embed else None
        vectors = self._vectors_of(embedder, memories) if embedder is not None else {}
        docs = [m.info(*stats.get(m.path, (0, 0))) for m in memories]
        with self._healing(), self._write_lock:
            self.text.upsert([text_doc(m) for m in memories])
            self.store.put(docs, vectors, embedder.name if embedder else None, keep=not embed)

    def _vectors_of(
        self, embedder: Embedder, memories: Sequence[Memory], background: bool = False
    ) -> dict[str, np.ndarray]:
        """Chunk vectors per memory id, embedded in one call (``background``: the filler's,
        which lets writes go first)."""
        texts, owners = [], []
        for memory in memories:
            for text in embedding_texts(memory.title, memory.tags, memory.readable):
                texts.append(text)
                owners.append(memory.id)
        matrix = self._embed_passages(embedder, texts, background)
        return {
            doc_id: matrix[[i for i, o in enumerate(owners) if o == doc_id]]
            for doc_id in dict.fromkeys(owners)
        }

    def embed_vectors(self, memories: Sequence[Memory]) -> int:
        """Embed memories whose records lack vectors and store them, one transaction; a
        memory whose file changed since it was read is skipped. Returns how many got them."""
        embedder = self._embedder()
        if embedder is None or not memories:
            return 0
        vectors = self._vectors_of(embedder, memories, background=True)
        self.follow()
        hashes = {m.id: m.content_hash for m in memories}
        with self._write_lock:
            return self.store.put_vectors(
                {i: (hashes[i], v) for i, v in vectors.items()}, embedder.name
            )

    def missing_vectors(self) -> list[str]:
        """Ids of memories without vectors from the current embedder (none if it is off)."""
        embedder = self._embedder()
        return self.store.missing_vectors(embedder.name) if embedder else []

    def embedding_state(self) -> dict[str, Any]:
        """How many memories have vectors from the current embedder, of how many, and the
        seconds the rest takes at the last embedding run's rate (None: no run measured)."""
        self._fresh()
        total = len(self.store.docs)
        embedder = self._embedder(timeout=0) if self.loader.ready else None
        done = total - self.store.count_missing(embedder.name) if embedder else 0
        raw = self.store.get_info(RATE_KEY)
        rate = float(raw) if raw else 0.0
        left = total - done
        eta = 0 if not left else round(left / rate) if rate > 0 else None
        return {"done": done, "total": total, "eta_seconds": eta}

    def remove(self, ids: Iterable[str]) -> None:
        self.follow()
        ids = list(ids)
        with self._healing(), self._write_lock:
            self.text.delete(ids)
            self.store.delete(ids)

    def clear(self) -> None:
        """Empty the index in place (records, vectors, full text): other processes keep
        sharing its files, where deleting the folder would leave them writing to
        unlinked ones that nobody else reads."""
        with self._write_lock:
            self.store.clear()  # first: it tells the other processes to sync again
            self.text.clear()

    def erase(self, ids: Iterable[str]) -> list[str]:
        """Remove memories so that no byte of them stays in the index files (purge):
        full-text segments rewritten, vector database vacuumed, vector caches emptied.
        Returns the places erased."""
        self.follow()
        ids = list(ids)
        with self._write_lock:
            self._close_retired()  # a replaced index's files, deleted but held open
            self.text.delete(ids, erase=True)
            self.store.delete(ids)
            if not self.store.erase_freed():
                log.warning(
                    "another process was reading %s: its write-ahead log may keep the purged "
                    "vectors until that process ends",
                    self.store.path,
                )
        query_vectors.clear()
        passages.clear()
        return ["full-text index", "vectors", "vector caches"]

    def remove_paths(self, paths: Iterable[str]) -> None:
        self.remove(self.ids_at(paths))

    def ids_at(self, paths: Iterable[str]) -> list[str]:
        """Ids the index holds for these paths."""
        self._fresh()
        return self.store.ids_by_path(paths)

    def plan_sync(self, stats: dict[str, tuple[int, int]]) -> tuple[list[str], list[str]]:
        """(paths to (re)read, ids to drop) to match the files described by ``stats``."""
        self._fresh()
        by_path = {d.path: d for d in self.store.docs.values()}
        drop = [d.id for d in self.store.docs.values() if d.path not in stats]
        try:
            counted = self.text.count()
        except DamagedIndexError as exc:
            if not self._heal(exc):
                raise
            return sorted(stats), []  # wiped: everything is read again
        if counted != len(self.store.docs):
            return sorted(stats), drop  # text and records disagree: re-read everything
        # memories without vectors (or with another model's) are not read again here: the
        # vectors fill in behind the text index (IndexSync.embed_missing)
        read = [
            path
            for path, st in stats.items()
            if path not in by_path or (by_path[path].mtime_ns, by_path[path].size) != st
        ]
        return sorted(read), drop

    # -- searching -------------------------------------------------------------
    def search(
        self,
        query: SearchQuery,
        now: dt.datetime,
        wait_for_vectors: float = 2.0,
        usage: Callable[[list[str]], Mapping[str, Access]] | None = None,
        texts: Callable[[list[str]], Mapping[str, Memory]] | None = None,
    ) -> list[SearchHit]:
        """Ranked hits; ``usage`` gives the candidates' access statistics (soft forgetting),
        ``texts`` the memories at paths (to judge hits still without vectors)."""
        with self._healing():
            return self._search(query, now, wait_for_vectors, usage, texts)

    def _search(
        self,
        query: SearchQuery,
        now: dt.datetime,
        wait_for_vectors: float,
        usage: Callable[[list[str]], Mapping[str, Access]] | None,
        texts: Callable[[list[str]], Mapping[str, Memory]] | None,
    ) -> list[SearchHit]:
        self._fresh()
        docs = self.store.docs
        filters = query.filters

        def keep(doc_id: str) -> bool:
            doc = docs.get(doc_id)
            return doc is not None and (filters is None or filters.accepts(doc))

        notes: dict[str, Any] = {}
        keyword: dict[str, float] = {}
        if query.mode in ("hybrid", "bm25"):
            narrow = filters is not None and filters.narrowing
            limit = NARROW_KEYWORD_CANDIDATES if narrow else KEYWORD_CANDIDATES
            keyword = {i: s for i, s in self.text.search(query.text, limit).items() if keep(i)}
        vector, cosines = self._vector_leg(query, keep, keyword, wait_for_vectors, notes)
        keyword = self._beyond_the_cut(query, keyword, vector)
        reach, covered, scored = self._levels(query, keyword, vector, cosines)
        floor = self._min_relevance(filters)
        if query.mode == "hybrid" and texts is not None:
            self._judge_waiting(query, floor, texts, (keyword, cosines, reach, covered, scored))
        ids = [i for i, level in scored.items() if i in docs and level >= floor]
        seen = usage(ids) if usage else {}
        candidates = [
            Candidate(
                id=i,
                type=docs[i].type,
                when=parse_time(docs[i].updated or docs[i].created),
                importance=docs[i].importance,
                confidence=docs[i].confidence,
                keyword=keyword.get(i) if keyword else None,
                vector=vector.get(i) if vector else None,
                keyword_reach=reach.get(i, 1.0),
                relevance=scored[i],
                hits=seen[i].hits if i in seen else 0,
                last_seen=last_seen(docs[i], seen.get(i)),
            )
            for i in ids
        ]
        raw = (keyword, cosines, covered, scored)
        return [
            SearchHit(docs[r.id], r.score, {**r.why, **_raw(r.id, *raw), **notes}, scored[r.id])
            for r in rank(candidates, self.weights, now)[: query.k]
        ]

    def _beyond_the_cut(
        self, query: SearchQuery, keyword: dict[str, float], vector: dict[str, float]
    ) -> dict[str, float]:
        """The keyword candidates, and the BM25 of each vector candidate that matches the
        query's words but ranked below the keyword leg's cut: without it, a memory both
        legs find fairly well (BM25's 101st, the vector leg's 30th) scored on its cosine
        alone, below a memory only one leg found. The best BM25, and so every other
        candidate's keyword part, stays the same."""
        beyond = [i for i in vector if i not in keyword]
        if not keyword or not beyond:
            return keyword
        return {**keyword, **self.text.scores(query.text, beyond)}

    def _vector_leg(
        self,
        query: SearchQuery,
        keep: Callable[[str], bool],
        keyword: dict[str, float],
        wait: float,
        notes: dict[str, Any],
    ) -> tuple[dict[str, float], dict[str, float]]:
        """(vector candidates, cosines of those and of keyword-only ones); a note in
        ``notes`` when no embedder is there to run it."""
        if query.mode not in ("hybrid", "vector"):
            return {}, {}
        embedder = self._embedder(timeout=wait)
        if embedder is None:
            state = self.loader.state()
            notes["note"] = f"full text only: embedder {state['state']}" + (
                f" ({state['reason']})" if state.get("reason") else ""
            )
            return {}, {}
        missing = self.store.count_missing(embedder.name)
        if missing:
            total = len(self.store.docs)
            notes["vectors"] = (
                f"{total - missing} of {total} memories embedded; "
                "the others rank by text only until their vectors are made"
            )
        return self._nearest_to_query(embedder, query.text, keep, keyword)

    def _levels(
        self,
        query: SearchQuery,
        keyword: dict[str, float],
        vector: dict[str, float],
        cosines: dict[str, float],
    ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """Per candidate: keyword reach, share of the query's terms (when full text ran)
        and absolute relevance."""
        ids = [*keyword, *vector]
        reach = self._keyword_reach(query.text, ids) if vector else {}
        covered = self.text.coverage(query.text, ids) if query.mode != "vector" else {}
        return (
            reach,
            covered,
            _relevance(
                query, keyword, cosines if vector else None, reach, covered, self._stretch()
            ),
        )

    def _judge_waiting(
        self,
        query: SearchQuery,
        floor: float,
        texts: Callable[[list[str]], Mapping[str, Memory]],
        signals: tuple[dict[str, float], ...],
    ) -> None:
        """Judge the hits still waiting for their vectors as the others are (updates the
        cosines and relevance in ``signals``): the full-text fit that judges them otherwise
        is generous (a long note holding one of the question's words passes the floor).
        The best of them by that fit are embedded; any left over is held no more relevant
        than the best one judged, so it never outranks a hit judged by its meaning."""
        keyword, cosines, reach, covered, scored = signals
        waiting = sorted(
            (i for i in keyword if i not in cosines and scored[i] >= floor),
            key=lambda i: -scored[i],
        )
        if not waiting:
            return
        judged = self._judge_unembedded(
            query, waiting[: min(max(query.k, 4), UNEMBEDDED_JUDGED)], texts
        )
        cosines.update(judged)
        scored.update(_relevance(query, keyword, judged, reach, covered, self._stretch(), judged))
        best = max((scored[i] for i in judged), default=None)
        for i in waiting:
            if best is not None and i not in judged:
                scored[i] = min(scored[i], best)

    def _judge_unembedded(
        self,
        query: SearchQuery,
        waiting: list[str],
        texts: Callable[[list[str]], Mapping[str, Memory]],
    ) -> dict[str, float]:
        """Cosines of the question with one chunk of each of ``waiting`` (the chunk that
        holds most of the question's words: one chunk may understate a long memory's best,
        so a real match errs towards the floor)."""
        embedder = self._embedder(timeout=0)
        if embedder is None or not waiting:
            return {}
        docs = self.store.docs
        paths = {docs[i].path: i for i in waiting}
        memories = texts(list(paths))
        if not memories:
            return {}
        ids = [paths[p] for p in memories]
        chunks = [best_chunk(query.text, m) for m in memories.values()]
        matrix = self._embed_passages(embedder, chunks)
        asked = self._query_vector(embedder, query.text)
        means = language_means(embedder.name) if self.settings.crosslingual else None
        if means is not None:
            matrix, asked = means.passages(matrix), means.query(asked)
        found = np.einsum("ij,j->i", matrix, asked)
        return {i: float(c) for i, c in zip(ids, found, strict=True)}

    def _stretch(self) -> float:
        """How far below the same-language scale the loaded embedder's cosines across
        scripts sit (language.LanguageMeans.stretch; 1 without a correction)."""
        embedder = self._embedder(timeout=0) if self.settings.crosslingual else None
        means = language_means(embedder.name) if embedder is not None else None
        return means.stretch if means is not None else 1.0

    def _min_relevance(self, filters: Filters | None) -> float:
        """The filters' floor, else the setting's (0 keeps every candidate)."""
        if filters is not None and filters.min_relevance is not None:
            return filters.min_relevance
        return self.settings.min_relevance

    def _nearest_to_query(
        self, embedder: Embedder, text: str, keep: Callable[[str], bool], also: Iterable[str]
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Vector candidates, and the cosines of those plus of ``also`` (the keyword
        candidates: relevance needs every hit's cosine). With ``crosslingual``, cosines
        without the language in them.

        The candidates are found with the query embedded without the names common in the
        vault (text.without_names: the keyword leg matches those); relevance keeps the
        cosines of the question as asked, the scale its calibration was fitted on (such
        a query is embedded twice, both at once: a short query embeds on one core)."""
        means = language_means(embedder.name) if self.settings.crosslingual else None
        transform = means.passages if means is not None else None

        def embed(words: str) -> np.ndarray:
            vector = self._query_vector(embedder, words)
            return means.query(vector) if means is not None else vector

        rewritten = without_names(text, self._common)
        if rewritten == text:
            return self.store.nearest_and(embed(text), VECTOR_CANDIDATES, keep, also, transform)
        asking = _second_query.submit(embed, text)
        vector = embed(rewritten)
        return self.store.nearest_and(
            vector, VECTOR_CANDIDATES, keep, also, transform, asking.result()
        )

    def _common(self, term: str) -> bool:
        """Whether so many memories hold ``term`` that it cannot pick one out."""
        held, total = self.text.holding(term)
        return held >= COMMON_NAME_MIN and held >= COMMON_NAME_SHARE * total

    def _keyword_reach(self, text: str, ids: list[str]) -> dict[str, float]:
        """Per candidate, how far the question's words can reach its script (judged by
        its title and tags: the body is not in the records)."""
        if not self.settings.crosslingual:
            return {}
        share, docs = cjk_share(text), self.store.docs
        return {
            i: script_overlap(share, _record_share(docs[i].title, docs[i].tags))
            for i in ids
            if i in docs
        }

    def _query_vector(self, embedder: Embedder, text: str) -> np.ndarray:
        """Query embeddings are cached: agents and benchmarks repeat questions."""
        key = (embedder.name, text)
        vector = query_vectors.get(key)
        if vector is None:
            vector = embedder.embed_query(text)
            query_vectors.put(key, vector)
        return vector

    def _embed_passages(
        self, embedder: Embedder, texts: list[str], background: bool = False
    ) -> np.ndarray:
        """Embed passages, reusing vectors of texts embedded moments ago (the duplicate
        check of ``remember`` embeds exactly what the index stores next)."""
        found: dict[str, np.ndarray] = {}
        for text in dict.fromkeys(texts):
            cached = passages.get((embedder.name, text))
            if cached is not None:
                found[text] = cached
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            made = embedder.embed_passages(missing, background)
            for text, vector in zip(missing, made, strict=True):
                found[text] = vector
                passages.put((embedder.name, text), vector)
        return np.vstack([found[t] for t in texts])

    def embedded(self, title: str, tags: Sequence[str], body: str) -> np.ndarray | None:
        """The vector of a (new) memory's first chunk, as :meth:`nearest` embeds it (kept a
        while: asking again costs nothing); None without an embedder."""
        embedder = self._embedder()
        if embedder is None:
            return None
        vectors = self._embed_passages(embedder, embedding_texts(title, tags, body)[:1])
        return np.asarray(vectors[0])

    def nearest(
        self, title: str, tags: Sequence[str], body: str, k: int = 5
    ) -> list[tuple[MemoryInfo, float]]:
        """Memories whose stored vectors are closest to a (new) memory's first chunk."""
        vector = self.embedded(title, tags, body)
        if vector is None:
            return []
        self._fresh()
        best = self.store.nearest(vector, k, lambda i: i in self.store.docs)
        return [(self.store.docs[i], score) for i, score in best.items()]

    def all_embedded(self) -> bool:
        """Whether every indexed memory has a vector of the embedder in use (as of the last
        look; False before one was loaded): a duplicate check by vectors then saw them all."""
        return self.store.vector_count() >= len(self.store.docs)

    def worded(self, text: str, k: int = 20) -> list[MemoryInfo]:
        """Memories sharing the most words with ``text`` (BM25), best first: the candidates
        of a duplicate check that needs no vector (a text-only vault, a memory whose
        vector is not yet made)."""
        self._fresh()
        best = self.text.search(text, k)
        return [self.store.docs[i] for i in best if i in self.store.docs]

    def cosines(
        self, title: str, tags: Sequence[str], body: str, others: Sequence[Memory]
    ) -> list[float]:
        """The cosine of a (new) memory's first chunk to each of ``others``' first chunk,
        embedded as the index would embed them (memories it does not hold: a client's
        proposals); empty without an embedder."""
        new = self.embedded(title, tags, body) if others else None
        embedder = self._embedder()
        if new is None or embedder is None:
            return []
        texts = [embedding_texts(m.title, m.tags, m.readable)[0] for m in others]
        return [float(v) for v in self._embed_passages(embedder, texts) @ new]

    def records(self) -> list[MemoryInfo]:
        """Every indexed memory's record, as of now (other processes' writes included)."""
        self._fresh()
        return list(self.store.docs.values())

    def undated(self) -> list[MemoryInfo]:
        """Every indexed memory whose ``created`` is not a readable time."""
        self._fresh()
        return self.store.undated()

    def record(self, memory_id: str) -> MemoryInfo | None:
        self._fresh()
        return self.store.docs.get(memory_id)

    def pairs_above(self, threshold: float) -> list[tuple[str, str, float]]:
        """(id, id, cosine) of memories whose first chunks are at least this close."""
        self._fresh()
        self._embedder()
        return self.store.pairs_above(threshold)

    def status(self) -> dict[str, Any]:
        self._fresh()
        if self.loader.ready:
            self._embedder(timeout=0)  # with_vectors: the current model's
        state = {
            "version": INDEX_VERSION,
            "memories": len(self.store.docs),
            "with_vectors": self.store.vector_count(),
            **self.loader.state(),
        }
        if self.loader.ready and self._embedder(timeout=0) is not None:
            state["embedding"] = self.embedding_state()
        if self.rebuilt_reason:
            state["rebuilt"] = self.rebuilt_reason
        return state


def _delete(path: Path) -> None:
    """Delete a file, or a folder and what it holds; a link goes, never what it points to."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _identity(folder: Path) -> tuple[tuple[int, int], ...] | None:
    """Which files the index folder holds now (device and inode of the record database and
    of the full-text folder); None when they are gone."""
    try:
        found = [(folder / name).stat() for name in ("store.sqlite", "text")]
    except OSError:
        return None
    return tuple((st.st_dev, st.st_ino) for st in found)


def soft_forget(settings: Settings) -> SoftForget:
    return SoftForget(
        settings.soft_forget_hits, settings.soft_forget_days, settings.soft_forget_factor
    )


def _relevance(
    query: SearchQuery,
    keyword: dict[str, float],
    cosines: dict[str, float] | None,
    reach: dict[str, float],
    covered: dict[str, float],
    stretch: float = 1.0,
    only: Iterable[str] | None = None,
) -> dict[str, float]:
    """Each candidate's absolute relevance (rank.relevance) from the legs that ran (of the
    candidates ``only``, when given); ``covered``: each candidate's share of the query's
    terms (full text ran)."""
    terms = term_count(query.text)
    return {
        i: relevance(
            keyword.get(i, 0.0) if query.mode != "vector" else None,
            cosines.get(i) if cosines is not None else None,
            terms,
            reach.get(i, 1.0),
            covered.get(i, 0.0) if query.mode != "vector" else None,
            stretch,
        )
        for i in dict.fromkeys(only if only is not None else [*keyword, *(cosines or {})])
    }


@functools.lru_cache(maxsize=1 << 16)
def _record_share(title: str, tags: tuple[str, ...]) -> float:
    """cjk_share of a record's title and tags (the same records come back query after
    query: ~200 candidates each)."""
    return cjk_share(f"{title} {' '.join(tags)}")


def _raw(
    doc_id: str,
    keyword: dict[str, float],
    vector: dict[str, float],
    covered: dict[str, float],
    scored: dict[str, float],
) -> dict[str, Any]:
    """A hit's raw signals and its relevance, for ``why``."""
    out: dict[str, Any] = {}
    if doc_id in keyword:
        out["bm25"] = round(keyword[doc_id], 3)
    if doc_id in covered:
        out["coverage"] = round(covered[doc_id], 3)
    if doc_id in vector:
        out["cosine"] = round(vector[doc_id], 4)
    out["relevance"] = round(scored[doc_id], 3)
    return out


__all__ = [
    "INDEX_VERSION",
    "DamagedIndexError",
    "Index",
    "SearchHit",
    "SearchQuery",
    "embedding_texts",
    "text_doc",
    "when_text",
]
