"""Whoosh full-text index (BM25F) over title, aliases, tags, body and date words."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import index as windex
from whoosh import query as wq
from whoosh.analysis import Token, Tokenizer
from whoosh.fields import ID, TEXT, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.scoring import BM25F
from whoosh.util.filelock import try_for

from ..errors import LockTimeoutError
from ..text import tokens

INDEX_NAME = windex._DEF_INDEX_NAME  # MAIN: Whoosh's file names start with it

FIELD_BOOSTS = {"title": 1.5, "aliases": 1.5, "tags": 1.5, "body": 1.0, "when": 1.0}


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
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if windex.exists_in(str(folder)):
            self._ix = windex.open_dir(str(folder))
        else:
            self._ix = windex.create_in(str(folder), schema())
        self._lock = threading.Lock()
        self._searcher = self._ix.searcher(weighting=BM25F())

    def close(self) -> None:
        self._searcher.close()
        self._ix.close()

    def count(self) -> int:
        with self._lock:
            return int(self._current().doc_count())

    def _current(self) -> Any:
        """A searcher that sees the latest commit (by any process).

        A new searcher rather than ``refresh()``: whoosh3's refresh fails on a
        reader of an index that was empty.
        """
        if not self._searcher.up_to_date():
            self._searcher.close()
            self._searcher = self._ix.searcher(weighting=BM25F())
        return self._searcher

    def upsert(self, docs: Sequence[TextDoc]) -> None:
        if not docs:
            return
        writer = self._ix.writer(timeout=60.0, delay=0.05)
        try:
            for doc in docs:
                writer.update_document(
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

    def delete(self, ids: Iterable[str], erase: bool = False) -> None:
        """Delete documents; ``erase`` also rewrites every segment so their words are gone
        from the files (Whoosh otherwise only marks them deleted until a merge)."""
        ids = list(ids)
        if not ids:
            return
        writer = self._ix.writer(timeout=60.0, delay=0.05)
        try:
            for doc_id in ids:
                writer.delete_by_term("id", doc_id)
        except BaseException:
            writer.cancel()
            raise
        writer.commit(optimize=erase)

    def search(self, text: str, limit: int = 100) -> dict[str, float]:
        """BM25F scores of the best ``limit`` memories; terms are OR-ed (natural language)."""
        terms = list(dict.fromkeys(tokens(text)))
        if not terms:
            return {}
        clauses = [
            wq.Term(field, term, boost=boost)
            for term in terms
            for field, boost in FIELD_BOOSTS.items()
        ]
        with self._lock:
            results = self._current().search(wq.Or(clauses), limit=limit)
            return {hit["id"]: float(hit.score) for hit in results}

    def coverage(self, text: str, ids: Iterable[str]) -> dict[str, float]:
        """Per memory of ``ids``, the share of the query's distinct terms it contains (in
        any field): unlike BM25 it does not depend on how many memories the vault holds.
        Only the given memories are looked at (posting lists skipped to them)."""
        terms = list(dict.fromkeys(tokens(text)))
        if not terms:
            return {}
        with self._lock:
            searcher = self._current()
            numbers: dict[int, str] = {}
            for doc_id in dict.fromkeys(ids):
                number = searcher.document_number(id=doc_id)
                if number is not None:
                    numbers[number] = doc_id
            order = sorted(numbers)
            found = dict.fromkeys(order, 0)
            for term in terms:
                for number in _containing(searcher.reader(), term, order):
                    found[number] += 1
        return {numbers[n]: count / len(terms) for n, count in found.items()}


def _containing(reader: Any, term: str, order: list[int]) -> set[int]:
    """The document numbers of ``order`` (ascending) with ``term`` in any field."""
    has: set[int] = set()
    for field in FIELD_BOOSTS:
        if (field, term) not in reader:
            continue
        postings = reader.postings(field, term)
        for number in order:
            if not postings.is_active():
                break
            if number in has or postings.id() > number:
                continue
            if postings.id() < number:
                postings.skip_to(number)
            if postings.is_active() and postings.id() == number:
                has.add(number)
    return has
