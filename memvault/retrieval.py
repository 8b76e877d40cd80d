"""Finding memories: ranked search over the index, recall with snippets, and the
memories similar to a new text (for ``remember``'s duplicate and contradiction checks)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import replace

from . import policy, validate
from .access import AccessStats
from .errors import InvalidInputError, MalformedMemoryError, MemoryNotFoundError, UnsafePathError
from .index import DamagedIndexError, SearchHit, SearchQuery
from .links import Records
from .models import (
    EVERY,
    Filters,
    Hit,
    Memory,
    MemoryInfo,
    Similar,
    lapsed,
    same_type,
    validity,
)
from .note import clean_tags, snippet, strip_title, title_from
from .sync import IndexSync
from .vault import Vault

SEARCH_MODES = ("hybrid", "bm25", "vector")
# keyword candidates a new text is compared with word for word (its duplicate check without
# vectors): the same text ranks first but for a crowd of much shorter memories
WORDED_CANDIDATES = 20


CATCHING_UP = "the index is still catching up with the vault's files (memvault has just started)"


def judged(new: str, old: str, cosine: float | None, same_type: bool) -> tuple[str | None, float]:
    """The relation of an existing text to a new one (:func:`policy.relation`) and the
    cosine to report. Without a ``cosine`` (no vectors) only the same text counts: a
    duplicate, reported at cosine 1.0; a differing word, number or name is not one."""
    if cosine is not None:
        return policy.relation(new, old, cosine, same_type), cosine
    return ("duplicate" if policy.same_text(new, old) else None), 1.0


def no_match_note(
    floor: float, catching_up: bool = False, none_selected: bool = False, empty: bool = False
) -> str:
    """The one line that says a search found nothing relevant (for an empty result); while
    the index is still being brought in line with the files (a server just started on a
    vault it had not indexed), that nothing may only be not yet; when the vault is empty or
    the filters select no memory at all, that is what it says (a lower relevance would not
    help)."""
    if catching_up:
        return f"nothing found yet: {CATCHING_UP}; ask again in a moment"
    if empty:
        return "the vault holds no memory yet"
    if none_selected:
        return "no memory matches the filters (types, tags, folder, scope, period): none to rank"
    if floor <= 0:
        return "no memory matches this query"
    return (
        f"no relevant memory: no memory reached relevance {floor:g} "
        "(min_relevance=0 shows the closest ones)"
    )


def nothing_found(
    records: Records,
    floor: float,
    filters: Filters,
    catching_up: bool = False,
) -> str:
    """:func:`no_match_note` for a search of ``filters`` that found nothing: ``records``
    (the service's) says whether the vault, or the filters, hold any memory at all."""
    if catching_up:
        return no_match_note(floor, catching_up=True)
    return no_match_note(floor, none_selected=not records(filters), empty=not records(EVERY))


class Retrieval:
    """Reads through the index (kept in step by ``indexing``) and confirms with the files."""

    def __init__(
        self,
        vault: Vault,
        indexing: IndexSync,
        clock: Callable[[], dt.datetime],
        access: AccessStats | None = None,
    ) -> None:
        self.vault = vault
        self.indexing = indexing
        self.clock = clock
        self.access = access  # access statistics feed soft forgetting

    def search(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        if mode not in SEARCH_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
        validate.query(query)
        if not 1 <= k <= 100:
            raise InvalidInputError(f"k must be between 1 and 100, got {k}")
        floor = filters.min_relevance if filters else None
        if floor is not None and not 0.0 <= floor <= 1.0:
            raise InvalidInputError(f"min_relevance must be between 0 and 1, got {floor}")
        ready = self.indexing.ensure(wait=False)
        index = self.indexing.index
        now = self.clock()
        search = SearchQuery(query, k, (filters or Filters()).at(now), mode)
        usage = self.access.of if self.access else None
        try:
            hits = index.search(search, now, usage=usage, texts=self._memories)
        except DamagedIndexError:  # wiped by the index: filled from the files, asked again
            ready = self.indexing.ensure()
            hits = self.indexing.index.search(search, now, usage=usage, texts=self._memories)
        if not ready:
            note = "index still catching up with the files; results may be incomplete"
            hits = [replace(h, why={**h.why, "index": note}) for h in hits]
        return hits

    def _memories(self, paths: list[str]) -> dict[str, Memory]:
        """The memories at these paths that can still be read (by path, in order)."""
        out = {}
        for path in paths:
            try:
                out[path] = self.vault.read(path)
            except (MemoryNotFoundError, MalformedMemoryError, UnsafePathError):
                continue
        return out

    def recall(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[Hit]:
        """Ranked memories with snippet and ``why`` (the shape of the MCP ``recall`` tool)."""
        out = []
        for hit in self.search(query, k, filters, mode):
            try:
                memory = self.vault.read(hit.doc.path)
            except (MemoryNotFoundError, MalformedMemoryError, UnsafePathError):
                continue  # changed under us since it was indexed; the watcher will catch up
            text = snippet(memory.readable, query)
            held = validity(memory.meta, self.clock())
            why = {**hit.why, "validity": held} if held else hit.why
            out.append(Hit.of(memory, text, round(hit.score, 4), why, round(hit.relevance, 3)))
        return out

    def pairs_above(self, threshold: float) -> list[tuple[str, str, float]]:
        """(id, id, cosine) of memories whose first chunks are at least this close."""
        return self.indexing.index.pairs_above(threshold)

    def undated(self, filters: Filters) -> int:
        """How many memories ``filters`` would select but for its period: they have no
        readable ``created`` (0 without a period)."""
        if filters.since is None and filters.until is None:
            return 0
        others = replace(filters, since=None, until=None).at(self.clock())
        return sum(1 for r in self.indexing.index.undated() if others.accepts(r))

    def prepare(self, content: str, title: str | None, tags: Sequence[str]) -> None:
        """Embed ``content`` as :meth:`similar` will (outside a write lock: the slow part)."""
        self.indexing.index.embedded(title or title_from(content), clean_tags(tags), content)

    def similar(
        self, content: str, type: str, title: str | None, tags: Sequence[str], k: int = 5
    ) -> list[Similar]:
        """Existing active memories close to ``content``, with their relation to it, and
        superseded ones it says again (``superseded``: a fact corrected since).

        The text is embedded exactly as the index will store it, so a memory that is
        then written reuses the vector. Memories sharing its words (BM25) are compared
        too, word for word: the same text, case, spacing and punctuation aside, is a
        duplicate without vectors (a text-only vault, a memory not yet embedded).
        """
        title = title or title_from(content)
        index = self.indexing.index
        near = index.nearest(title, clean_tags(tags), content, k)
        out = [s for doc, cosine in near if (s := self._judged(doc, cosine, content, type))]
        if near and index.all_embedded():
            return out  # the vectors judged every memory: no file read for the word check
        seen = {doc.id for doc, _ in near}
        for doc in index.worded(content, max(k, WORDED_CANDIDATES)):
            if doc.id not in seen and (same := self._judged(doc, None, content, type)):
                out.append(same)  # no vector (text-only vault, or not yet made): same text
        return out

    def _judged(
        self, doc: MemoryInfo, cosine: float | None, content: str, type: str
    ) -> Similar | None:
        """How the memory of ``doc`` relates to a new text (see :func:`judged`), or None
        when unrelated or not a candidate."""
        if doc.status not in ("active", "superseded") or lapsed(doc.expires, self.clock()):
            return None  # an expired memory is no reason to refuse a new one
        try:
            other = self.vault.read(doc.path)
        except (MemoryNotFoundError, MalformedMemoryError, UnsafePathError):
            return None
        relation, cosine = judged(
            content, strip_title(other.body), cosine, same_type(doc.type, type)
        )
        if doc.status == "superseded":
            relation = "superseded" if relation == "duplicate" else None
        return (
            Similar(doc.id, doc.path, doc.title, round(cosine, 4), relation) if relation else None
        )
