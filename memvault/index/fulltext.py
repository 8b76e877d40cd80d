"""Whoosh full-text index (BM25F) over title, aliases, tags, body and date words."""

from __future__ import annotations

import pickle
import struct
import threading
import zlib
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import index as windex
from whoosh.analysis import Token, Tokenizer
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher
from whoosh.fields import ID, TEXT, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import CorruptIndexError
from whoosh.scoring import BM25F
from whoosh.util.filelock import try_for
from whoosh.util.numeric import byte_to_length
from whoosh.writing import CLEAR

from ..errors import LockTimeoutError, MemvaultError
from ..text import prefix_words, stem, tokens

INDEX_NAME = windex._DEF_INDEX_NAME  # MAIN: Whoosh's file names start with it

FIELD_BOOSTS = {"title": 1.5, "aliases": 1.5, "tags": 1.5, "body": 1.0, "when": 1.0}
PREFIX_TERMS = 20  # a query word ``postgr*`` stands for at most this many index terms:
PREFIX_SCAN = 1000  # the most frequent of the first this many (alphabetically) per field
# the fields a prefix reaches: not the date words (``dec*`` would be every December memory)
PREFIX_FIELDS = tuple(f for f in FIELD_BOOSTS if f != "when")


@dataclass(frozen=True)
class TextDoc:
    id: str
    path: str
    title: str
    tags: str
    body: str
    when: str
    aliases: str = ""


class MixedTokenizer(Tokenizer):  # type: ignore[misc]
    """Whoosh tokenizer over :func:`tokens` (the terms are final: no further filters)."""

    def __call__(  # type: ignore[override]
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for i, term in enumerate(tokens(value)):
            token.text = term
            token.boost = 1.0
            token.stopped = False
            if positions:
                token.pos = start_pos + i
            if chars:
                token.startchar = token.endchar = start_char
            yield token


def analyzer() -> MixedTokenizer:
    return MixedTokenizer()


def schema() -> Schema:
    ana = analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        path=ID(stored=True),
        title=TEXT(analyzer=ana),
        aliases=TEXT(analyzer=ana),
        tags=TEXT(analyzer=ana),
        body=TEXT(analyzer=ana),
        when=TEXT(analyzer=ana),
    )


# What Whoosh raises reading a segment whose bytes are damaged past the header checks of
# opening (a disk error, a file cut short or half-copied): seen as struct.error, its own
# CorruptIndexError, EOFError; files gone: FileNotFoundError, EmptyIndexError (no TOC).
DAMAGE = (
    CorruptIndexError,
    windex.EmptyIndexError,
    struct.error,
    EOFError,
    zlib.error,
    pickle.UnpicklingError,
    UnicodeDecodeError,
    FileNotFoundError,
    ValueError,
    IndexError,
    KeyError,
)


class DamagedIndexError(MemvaultError):
    """The full-text index cannot be read: it is rebuilt from the files (Index.heal)."""


@contextmanager
def _damage(folder: Path) -> Iterator[None]:
    """Whoosh's errors from damaged files, as one error that says what they mean."""
    try:
        yield
    except MemvaultError:
        raise
    except DAMAGE as exc:
        raise DamagedIndexError(
            f"the full-text index {folder} is damaged ({type(exc).__name__}: {exc}); "
            "memvault rebuilds it from the files: if this repeats, run `memvault reindex --full`"
        ) from exc


@contextmanager
def commit_lock(folder: Path, timeout: float = 60.0) -> Iterator[None]:
    """Hold the lock Whoosh writers hold from their first change to the end of their
    commit (a file lock, across processes): no commit runs meanwhile."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileStorage(str(folder)).lock(f"{INDEX_NAME}_WRITELOCK")
    if not try_for(lock.acquire, timeout=timeout, delay=0.05):
        raise LockTimeoutError(
            f"another process kept the full-text index {folder} locked for {timeout:.0f} s; "
            "try again when it is done"
        )
    try:
        yield
    finally:
        lock.release()


class FullText:
    def __init__(self, folder: Path, wait: float = 60.0) -> None:
        self.folder, self.wait = folder, wait  # seconds a writer waits for Whoosh's lock
        folder.mkdir(parents=True, exist_ok=True)
        if windex.exists_in(str(folder)):
            self._ix = windex.open_dir(str(folder))
        else:
            self._ix = windex.create_in(str(folder), schema())
        self._lock = threading.Lock()
        self._searcher = self._ix.searcher(weighting=BM25F(B=B, K1=K1))
        self._postings = _Postings()
        self._last: _View | None = None

    def close(self) -> None:
        self._last = None
        self._searcher.close()
        self._ix.close()

    def count(self) -> int:
        with self._lock, _damage(self.folder):
            return int(self._current().doc_count())

    def release(self) -> None:
        """Let go of segments another process's commit replaced (its purge rewrote them):
        deleted, their bytes stay on disk while a searcher holds them. Best effort: damage
        is for the next search to find."""
        with self._lock:
            try:
                self._current()
            except Exception:  # damage: the next search finds it and says so
                return

    def _current(self) -> Any:
        """A searcher that sees the latest commit (by any process).

        A new searcher rather than ``refresh()``: whoosh3's refresh fails on a
        reader of an index that was empty.
        """
        if not self._searcher.up_to_date():
            fresh = self._ix.searcher(weighting=BM25F(B=B, K1=K1))  # may fail: keep the old
            self._searcher.close()
            self._searcher = fresh
        return self._searcher

    def _writer(self) -> Any:
        """Whoosh's writer, once another process's is done (a busy error after ``wait``)."""
        try:
            return self._ix.writer(timeout=self.wait, delay=0.05)
        except windex.LockError as exc:
            raise LockTimeoutError(
                f"another process kept the full-text index {self.folder} locked for "
                f"{self.wait:g} s; try again when it is done"
            ) from exc

    def upsert(self, docs: Sequence[TextDoc]) -> None:
        if docs:
            with _damage(self.folder):
                self._upsert(docs)

    def _upsert(self, docs: Sequence[TextDoc]) -> None:
        writer = self._writer()
        try:
            # the writer holds the index's lock: no other commit lands before ours, so the
            # current view tells which ids are there. A new one is added without Whoosh's
            # search for a document to replace (a searcher over every segment: ~15 ms at 10k)
            with self._lock:
                present = set(self._view().numbers)
            for doc in docs:
                add = writer.update_document if doc.id in present else writer.add_document
                present.add(doc.id)
                add(
                    id=doc.id,
                    path=doc.path,
                    title=doc.title,
                    aliases=doc.aliases,
                    tags=doc.tags,
                    body=doc.body,
                    when=doc.when,
                )
        except BaseException:
            writer.cancel()
            raise
        writer.commit()

    def clear(self) -> None:
        """Drop every document and segment, in place under Whoosh's lock: a process that
        has the index open (a running server) goes on with the same folder."""
        self._writer().commit(mergetype=CLEAR)

    def delete(self, ids: Iterable[str], erase: bool = False) -> None:
        """Delete documents; ``erase`` also rewrites every segment so their words are gone
        from the files (Whoosh otherwise only marks them deleted until a merge)."""
        ids = list(ids)
        if not ids:
            return
        with _damage(self.folder):
            writer = self._writer()
            try:
                for doc_id in ids:
                    writer.delete_by_term("id", doc_id)
            except BaseException:
                writer.cancel()
                raise
            writer.commit(optimize=erase)
        if erase:  # let go of the rewritten segments now: deleted, they stay on disk while open
            with self._lock:
                self._current()
                self._last, self._postings = None, _Postings()

    def search(self, text: str, limit: int = 100) -> dict[str, float]:
        """BM25F scores of the best ``limit`` memories; terms are OR-ed (natural language).

        The scores and the cut are Whoosh's (an Or of one Term per term and field, with
        FIELD_BOOSTS, under BM25F; ties to the lower document number), computed with numpy
        over posting lists read once per segment (:class:`_Postings`)."""
        with self._lock, _damage(self.folder):
            view = self._view()
            groups, prefixed = view.groups(text)
            terms = list(dict.fromkeys(t for group in groups for t in group))
            if not terms:
                return {}
            scores = view.scored(terms, prefixed)
            matched = np.flatnonzero(scores > 0)
            best = matched[np.lexsort((matched, -scores[matched]))][:limit]
            return {view.ids[n]: float(scores[n]) for n in best.tolist()}

    def scores(self, text: str, ids: Iterable[str]) -> dict[str, float]:
        """BM25F scores (as :meth:`search` gives them) of the memories ``ids`` that match the
        query, wherever they rank: a memory the vector leg found beyond search's cut keeps
        its keyword score instead of none."""
        with self._lock, _damage(self.folder):
            view = self._view()
            groups, prefixed = view.groups(text)
            terms = list(dict.fromkeys(t for group in groups for t in group))
            numbers = {i: view.numbers[i] for i in dict.fromkeys(ids) if i in view.numbers}
            if not terms or not numbers:
                return {}
            scores = view.scored(terms, prefixed)
            return {i: float(scores[n]) for i, n in numbers.items() if scores[n] > 0}

    def coverage(self, text: str, ids: Iterable[str]) -> dict[str, float]:
        """Per memory of ``ids``, the share of the query's distinct terms it contains (in
        any field): unlike BM25 it does not depend on how many memories the vault holds.
        Memories not in the index are left out."""
        with self._lock, _damage(self.folder):
            view = self._view()
            groups, prefixed = view.groups(text)
            numbers = {i: view.numbers[i] for i in dict.fromkeys(ids) if i in view.numbers}
            if not groups or not numbers:
                return {}
            found = view.containing(groups, prefixed)
            return {i: int(found[n]) / len(groups) for i, n in numbers.items()}

    def holding(self, term: str) -> tuple[int, int]:
        """(How many memories hold ``term``, an index term of text.tokens, in the field
        that has it most; how many memories the index holds)."""
        with self._lock, _damage(self.folder):
            return self._view().holding(term)

    def _view(self) -> _View:
        """The current searcher's segments with their cached data (a new view when another
        commit, by any process, changed the index; data of segments gone is dropped)."""
        searcher = self._current()
        if self._last is None or self._last.searcher is not searcher:
            self._last = _View(searcher, self._postings)
        return self._last


# BM25F as FullText's searchers score. Not Whoosh's defaults (1.2, 0.75): memories are
# short, and full length normalisation lifts a memory that is short because it says little
# ("Thanks, Gina!") above one that holds the answer; a lower K1 saturates a repeated word
# sooner, so the question's other words count for more. Chosen on LoCoMo's dev split
# (docs/benchmarks.md, "Ranking ideas, round 2").
K1 = 0.6
B = 0.3
_LENGTHS = np.array([byte_to_length(b) for b in range(256)], dtype=np.float64)
OR_ARRAY_LIMIT = 5000  # whoosh's Or sums larger segments in a tree (Or._matcher)
_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_SCORES = np.zeros(0)
POSTINGS_CACHE = 2_000_000  # postings (document number + weight) kept across searches


class _Postings:
    """What never changes in a Whoosh segment, read once: each document's stored id and
    field lengths, and posting lists (document numbers, weights) as numpy arrays, kept
    least recently used first up to POSTINGS_CACHE postings. Deletions are not in here:
    they change without changing the segment, so each :class:`_View` applies them."""

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {}
        self.lengths: dict[tuple[str, str], np.ndarray] = {}
        self.lists: OrderedDict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.size = 0

    def keep_only(self, segments: set[str]) -> None:
        """Drop everything of segments no longer in the index (a purge leaves no term
        of a purged memory in memory either)."""
        for seg in [s for s in self.ids if s not in segments]:
            del self.ids[seg]
        for field_key in [k for k in self.lengths if k[0] not in segments]:
            del self.lengths[field_key]
        for term_key in [k for k in self.lists if k[0] not in segments]:
            self.size -= _cost(self.lists.pop(term_key))

    def stored_ids(self, seg: str, reader: Any) -> list[str]:
        if seg not in self.ids:
            self.ids[seg] = [
                reader.stored_fields(n).get("id", "") for n in range(reader.doc_count_all())
            ]
        return self.ids[seg]

    def field_lengths(self, seg: str, reader: Any, field: str) -> np.ndarray:
        """Each document's length of ``field`` as BM25F sees it (Whoosh keeps it as one
        byte: ``byte_to_length``)."""
        key = (seg, field)
        if key not in self.lengths:
            column = reader._perdoc._cached_reader(f"_{field}_len", LENGTHS_COLUMN)
            raw = np.zeros(reader.doc_count_all(), dtype=np.uint8)
            if column is not None:
                stored = column._dbfile.get(column._basepos, column._count)
                raw[: len(stored)] = np.frombuffer(stored, dtype=np.uint8)
            self.lengths[key] = _LENGTHS[raw]
        return self.lengths[key]

    def postings(
        self, seg: str, reader: Any, field: str, term: str
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(document numbers in the segment, weights) of ``term`` in ``field``, deleted
        documents included; None when the segment does not have the term there."""
        key = (seg, field, term)
        found = self.lists.get(key)
        if found is not None:
            self.lists.move_to_end(key)
            return None if found is _ABSENT else found
        # a term missing from a segment is remembered too: Whoosh's look-up in its term
        # file is ~10 us, and a query asks each of its terms in each field (~1 ms a recall)
        found = _read_postings(reader.postings(field, term)) if (field, term) in reader else _ABSENT
        self.lists[key] = found
        self.size += _cost(found)
        while self.size > POSTINGS_CACHE and len(self.lists) > 1:
            self.size -= _cost(self.lists.popitem(last=False)[1])
        return None if found is _ABSENT else found


_ABSENT = (np.zeros(0, dtype=np.int64), np.zeros(0))  # a term the segment does not have


ENTRY_COST = 12  # an entry's own memory (key, node, arrays: ~190 bytes) in 16-byte postings


def _cost(found: tuple[np.ndarray, np.ndarray]) -> int:
    """What a cached posting list counts against POSTINGS_CACHE: its postings plus the
    entry itself, so that words no segment has (typos, other vaults' names: one entry per
    segment and field, with no postings) cannot fill memory by their number."""
    return len(found[0]) + ENTRY_COST


def _read_postings(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(matcher, FilterMatcher):  # the reader's filter of deleted documents
        matcher = matcher.child
    ids: list[int] = []
    weights: list[float] = []
    if isinstance(matcher, W3LeafMatcher):  # a block at a time
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            ids.extend(matcher._ids)
            weights.extend(matcher._weights)
            matcher._next_block()
    else:  # postings inlined in the term's info
        while matcher.is_active():
            ids.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
    return np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)


def _tree_sum(clauses: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum sparse clause scores pairwise as whoosh's ``make_weighted_tree`` nests its union
    matchers: the two lightest (fewest postings; equal weights keep their order) first."""
    nodes = [(len(docs), n, (docs, values)) for n, (docs, values) in enumerate(clauses)]
    nodes.sort(key=lambda node: node[0])
    made = len(nodes)
    while len(nodes) > 1:
        (wa, _, (da, va)), (wb, _, (db, vb)) = nodes.pop(0), nodes.pop(0)
        docs = np.union1d(da, db)
        values = np.zeros(len(docs))
        values[np.searchsorted(docs, da)] += va
        values[np.searchsorted(docs, db)] += vb
        weight = wa + wb
        at = bisect_right([node[0] for node in nodes], weight)
        nodes.insert(at, (weight, made, (docs, values)))
        made += 1
    return nodes[0][2]


class _View:
    """One searcher's segments: document numbers <-> ids of the live documents, and the
    scores and term counts of a query over all of them."""

    def __init__(self, searcher: Any, cache: _Postings) -> None:
        self.searcher = searcher
        self.cache = cache
        self.held: dict[str, tuple[int, int]] = {}  # FullText.holding's answers
        self.expanded: dict[str, list[str]] = {}  # the index terms of a prefix (groups)
        # the last query's BM25 (search, then scores of the vector candidates beyond its cut)
        self.last: tuple[tuple[str, ...], frozenset[str], np.ndarray] | None = None
        self.segments: list[tuple[str, Any, int]] = []
        self.ids: list[str] = []
        live = []
        for reader, offset in searcher.reader().leaf_readers():
            segment = reader.segment()
            if segment is None:  # an empty index
                continue
            seg = segment.segment_id()
            self.segments.append((seg, reader, offset))
            self.ids.extend(cache.stored_ids(seg, reader))
            mask = np.ones(reader.doc_count_all(), dtype=bool)
            deleted = list(reader.deleted_docs_set)
            mask[deleted] = False
            live.append(mask)
        cache.keep_only({seg for seg, _, _ in self.segments})
        self.live = np.concatenate(live) if live else np.zeros(0, dtype=bool)
        self.numbers = {self.ids[n]: n for n in np.flatnonzero(self.live).tolist()}

    def scored(self, terms: list[str], prefixed: frozenset[str]) -> np.ndarray:
        """:meth:`bm25`, kept for the next call with the same terms (read-only)."""
        if self.last is None or self.last[:2] != (tuple(terms), prefixed):
            self.last = (tuple(terms), prefixed, self.bm25(terms, prefixed))
        return self.last[2]

    def bm25(self, terms: list[str], prefixed: frozenset[str] = frozenset()) -> np.ndarray:
        """Per document number, the BM25F score of the Or of (term, field) clauses, deleted
        documents 0. The clauses are summed as Whoosh sums them, so that the scores are the
        same to the last bit (ties decide which memories make the cut): in clause order in
        a segment of up to OR_ARRAY_LIMIT documents, else in its weighted tree. A term
        only a prefix word brought (``prefixed``) is not looked for in the date words."""
        searcher, scores = self.searcher, np.zeros(len(self.live))
        avgfl = {f: searcher.avg_field_length(f) or 1 for f in FIELD_BOOSTS}
        for seg, reader, offset in self.segments:
            clauses: list[tuple[np.ndarray, np.ndarray]] = []
            for term in terms:
                for field, boost in FIELD_BOOSTS.items():
                    if field not in PREFIX_FIELDS and term in prefixed:
                        continue
                    found = self.cache.postings(seg, reader, field, term)
                    if found is None:
                        clauses.append((_NO_DOCS, _NO_SCORES))
                        continue
                    docs, tf = found
                    fl = self.cache.field_lengths(seg, reader, field)[docs]
                    idf = searcher.idf(field, term)
                    part = idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl[field])))
                    clauses.append((docs, part * boost))
            if reader.doc_count_all() > OR_ARRAY_LIMIT:
                docs, summed = _tree_sum(clauses)
                scores[docs + offset] = summed
            else:
                part = scores[offset : offset + reader.doc_count_all()]
                for docs, values in clauses:
                    part[docs] += values
        scores[~self.live] = 0.0
        return scores

    def holding(self, term: str) -> tuple[int, int]:
        """FullText.holding, counted once per view (one index generation). Live documents
        only: Whoosh's document frequency still counts a deleted one until its segment is
        merged."""
        if term not in self.held:
            most = max(np.count_nonzero(self._has(term, f) & self.live) for f in FIELD_BOOSTS)
            self.held[term] = (int(most), len(self.numbers))
        return self.held[term]

    def groups(self, text: str) -> tuple[list[list[str]], frozenset[str]]:
        """The query's terms, each a group of one, and per word ending in ``*`` the group
        of index terms it stands for (the most frequent PREFIX_TERMS; none found: empty,
        so it still counts as one of the query's terms that a memory lacks); and the terms
        only a prefix word brought."""
        rest, prefixes = prefix_words(text)
        plain = list(dict.fromkeys(tokens(rest)))
        expanded = [self._expand(prefix) for prefix in dict.fromkeys(prefixes)]
        brought = frozenset(t for group in expanded for t in group) - set(plain)
        return [[term] for term in plain] + expanded, brought

    def _expand(self, prefix: str) -> list[str]:
        """Index terms (stems) of words that start with ``prefix``, most frequent first:
        those starting with it or with its stem (``services*``: ``servic``), and those it
        runs past by a few letters (``authenti*``: the index holds ``authent``)."""
        if prefix not in self.expanded:  # search and coverage ask for the same query
            frequency: dict[str, int] = {}
            shorter = [prefix[:n] for n in range(max(3, len(prefix) - 4), len(prefix))]
            for _, reader, _ in self.segments:
                for field in PREFIX_FIELDS:
                    for start in dict.fromkeys([prefix, stem(prefix)]):
                        found = reader.iter_prefix(field, start)
                        for raw, info in islice(found, PREFIX_SCAN):
                            term = raw.decode("utf-8") if isinstance(raw, bytes) else raw
                            frequency[term] = frequency.get(term, 0) + info.doc_frequency()
                    for term in shorter:
                        count = reader.doc_frequency(field, term)
                        if count:
                            frequency[term] = frequency.get(term, 0) + count
            best = sorted(frequency, key=lambda t: (-frequency[t], t))[:PREFIX_TERMS]
            self.expanded[prefix] = best
        return self.expanded[prefix]

    def containing(
        self, groups: list[list[str]], prefixed: frozenset[str] = frozenset()
    ) -> np.ndarray:
        """Per document number, how many of the query's term ``groups`` it has a term of,
        in any field (a term only a prefix brought: not in the date words)."""
        count = np.zeros(len(self.live), dtype=np.int32)
        for group in groups:
            has = [
                self._has(term, f)
                for term in group
                for f in (PREFIX_FIELDS if term in prefixed else FIELD_BOOSTS)
            ]
            if has:
                count += np.logical_or.reduce(has)
        return count

    def _has(self, term: str, field: str) -> np.ndarray:
        """Per document number, whether ``field`` holds ``term`` (deleted documents too)."""
        has = np.zeros(len(self.live), dtype=bool)
        for seg, reader, offset in self.segments:
            found = self.cache.postings(seg, reader, field, term)
            if found is not None:
                has[found[0] + offset] = True
        return has
