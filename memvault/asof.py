"""What the vault said at a past time: memories, listings and search as of a commit or date.

Git keeps every version, so an as-of read needs no index of its own: the files of that
commit are read in one ``cat-file`` call and parsed like today's. ``recall`` as of a time is
full text only (BM25 over a throw-away Whoosh index of that commit's files), and says so in
``why``; vectors are not rebuilt for the past.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import ids, validate
from .errors import (
    GitError,
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    MemvaultError,
)
from .index import text_doc
from .index.fulltext import FullText
from .index.rank import relevance
from .models import EVERY, Filters, Hit, Memory, MemoryInfo
from .note import parse_time, snippet
from .text import tokens

if TYPE_CHECKING:
    from .service import MemoryService


def resolve(service: MemoryService, as_of: str) -> str:
    """The commit ``as_of`` names: a revision, or the last commit at or before a time (a bare
    date means the end of that day, in the vault's local time)."""
    text = validate.point("as_of", as_of)
    moment = _moment(service, text)
    if moment is not None:
        sha = service.history.commit_before(moment.isoformat())
        if sha is None:
            hint = service.history.shallow_hint()
            raise InvalidInputError(
                f"the vault has no history before {text}{hint}: pick a later time"
            )
        return sha
    try:
        return service.history.resolve(text)
    except (GitError, InvalidInputError):
        raise  # git refused the vault; a short sha of several commits
    except MemvaultError as exc:
        raise InvalidInputError(
            f"as_of {as_of!r} is neither a time (2026-11-30 or 2026-11-30T10:00) nor a "
            f"commit of this vault{service.history.shallow_hint()}: pick one from `memvault log`"
        ) from exc


def _moment(service: MemoryService, text: str) -> dt.datetime | None:
    """The time ``text`` names (a bare date: the end of that day, 2026-11-30 or 20261130,
    in the vault's local time), else None."""
    moment = parse_time(text, naive_tz=service.clock().tzinfo or dt.UTC)
    if moment is not None and _bare_date(text):
        moment += dt.timedelta(days=1, seconds=-1)
    return moment


def _bare_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def memories(service: MemoryService, sha: str) -> list[Memory]:
    """Every readable memory in commit ``sha``."""
    tree = service.history.tree(sha)
    paths = [p for p in tree if service.vault.is_memory_path(p)]
    data_of = service.history.blob_bytes(tree[p] for p in paths)
    out = []
    for rel, data in ((p, data_of[tree[p]]) for p in paths if tree[p] in data_of):
        try:  # today's record of a person's later edits does not apply to the past
            out.append(replace(service.vault.parse_bytes(rel, data), edited=None))
        except MalformedMemoryError:
            continue  # binary or not UTF-8 then: nothing to show
    return out


def get(service: MemoryService, id_or_path: str, as_of: str) -> Memory:
    """One memory as it was at ``as_of`` (by id, or by its path then)."""
    sha = resolve(service, as_of)
    text = id_or_path.strip()
    if not ids.is_id(text):
        rel = ids.clean_relpath(text)
        rel = rel if rel.lower().endswith(".md") else rel + ".md"
        tree = service.history.tree(sha)
        if rel not in tree:  # moved since: its name then
            with contextlib.suppress(MemvaultError):
                rel = service.history.path_at(rel, sha)
        blob = tree.get(rel)
        data = service.history.blob_bytes([blob]).get(blob) if blob else None
        if data is not None:
            return replace(service.vault.parse_bytes(rel, data), edited=None)
    else:
        for memory in memories(service, sha):
            if memory.id == text:
                return memory
    raise MemoryNotFoundError(
        f"{id_or_path!r} did not exist as of {as_of} (commit {sha[:12]}): "
        "see `memvault log` for when it was written"
    )


def _then(service: MemoryService, as_of: str, sha: str, filters: Filters | None) -> Filters:
    """``filters`` judging expiry at ``as_of`` (a time), or when commit ``sha`` was made:
    what had lapsed by then, not by today."""
    moment = _moment(service, validate.point("as_of", as_of))
    moment = moment or parse_time(service.history.commit_time(sha))
    return (filters or Filters()).at(moment) if moment else filters or Filters()


def records(service: MemoryService, as_of: str, filters: Filters | None = None) -> list[MemoryInfo]:
    """The index records the vault would have had at ``as_of``, filtered."""
    sha = resolve(service, as_of)
    filters = _then(service, as_of, sha, filters)
    return [i for i in (m.info() for m in memories(service, sha)) if filters.accepts(i)]


def records_of(service: MemoryService, as_of: str) -> Callable[[Filters], list[MemoryInfo]]:
    """The records of ``as_of`` as a function of filters (what link resolution asks for)."""
    everything = records(service, as_of, EVERY)  # links reach archived and lapsed ones
    return lambda filters: [i for i in everything if filters.accepts(i)]


def recall(
    service: MemoryService, query: str, as_of: str, k: int = 8, filters: Filters | None = None
) -> list[Hit]:
    """Full-text recall over the vault as of ``as_of`` (no vectors for the past)."""
    validate.query(query)
    sha = resolve(service, as_of)
    filters = _then(service, as_of, sha, filters)
    found = {m.id: m for m in memories(service, sha) if filters.accepts(m.info())}
    return full_text_hits(
        found, query, k, {"as_of": f"full text only, over the vault at commit {sha[:12]}"}
    )


def full_text_hits(found: dict[str, Memory], query: str, k: int, why: dict[str, Any]) -> list[Hit]:
    """The ``k`` of ``found`` (id -> memory) that best match ``query`` by BM25, over a
    throw-away Whoosh index (the vault as of a past commit, or a client's proposals);
    ``why`` is added to each hit's explanation."""
    with tempfile.TemporaryDirectory(prefix="memvault-asof-") as folder:
        text = FullText(Path(folder))
        try:
            text.upsert([text_doc(m) for m in found.values()])
            scores = text.search(query, limit=k)
            covered = text.coverage(query, scores)
        finally:
            text.close()
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:k]
    terms = len(set(tokens(query)))
    out = []
    for i, score in ranked:
        level = relevance(score, None, terms, coverage=covered.get(i, 0.0))
        detail = {**why, "bm25": round(score, 4), "coverage": round(covered.get(i, 0.0), 3)}
        detail["relevance"] = round(level, 3)
        out.append(
            Hit.of(found[i], snippet(found[i].readable, query), round(score, 4), detail, level)
        )
    return out
