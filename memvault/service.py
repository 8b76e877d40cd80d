"""MemoryService: the only write path, and the reads and history of memories.

Every write runs: cross-process lock -> file (atomic) -> one git commit -> index -> notify.
The CLI and the MCP server are thin adapters over this class (plus ``lifecycle`` for
consolidation and ``reports`` for status, export and the aggregate views).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import (
    embedding,
    frontmatter,
    guard,
    ids,
    importing,
    policy,
    purging,
    recovery,
    reverting,
    validate,
)
from . import fields as _fields
from .access import ACCESS_FILE, AccessStats
from .config import Settings, load_settings
from .errors import (
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    StaleRevisionError,
    UnsafePathError,
    VaultNotFoundError,
)
from .history import History
from .index import Index, SearchHit
from .links import with_links
from .models import (
    ChangeEvent,
    Commit,
    Filters,
    Hit,
    ImportReport,
    Memory,
    MemoryInfo,
    Page,
    Problem,
    RememberResult,
    WriteResult,
    sort_infos,
)
from .note import compose as _body
from .note import kept_title
from .note import strip_title as _strip_title
from .note import title_from as _first_line
from .provenance import Provenance
from .retrieval import Retrieval
from .sync import IndexSync
from .template import create_vault, prepare_state_dir
from .vault import Vault, writable

log = logging.getLogger(__name__)

# The MCP client (or CLI) on whose behalf the current call runs; named in commit trailers.
current_client: ContextVar[str | None] = ContextVar("memvault_client", default=None)


@dataclass
class MemoryService:
    """Operations on one vault. Create with :meth:`open`."""

    vault: Vault
    history: History
    settings: Settings
    index: Index
    client: str | None = None
    clock: Callable[[], dt.datetime] = field(default=lambda: dt.datetime.now().astimezone())
    listeners: list[Callable[[ChangeEvent], None]] = field(default_factory=list)
    pause: Callable[[], AbstractContextManager[Any]] | None = None  # the watcher's, for sync
    indexing: IndexSync = field(init=False)
    retrieval: Retrieval = field(init=False)

    def __post_init__(self) -> None:
        self.indexing = IndexSync(self.vault, self.index, self.settings, self.history)
        self.provenance = Provenance.load(self.vault.state_dir / "provenance.json")
        # late-bound on purpose: tests and benchmarks replace service.clock after opening
        self.access = AccessStats(self.vault.state_dir / ACCESS_FILE, lambda: self.clock())  # noqa: PLW0108
        self.retrieval = Retrieval(self.vault, self.indexing, self.access.clock, self.access)

    # -- life cycle ---------------------------------------------------------
    @classmethod
    def open(
        cls,
        root: Path,
        settings: Settings | None = None,
        recover: bool = True,
        load_embedder: bool = True,
    ) -> MemoryService:
        """Open an existing vault; commit anything a crash or a person left uncommitted."""
        root = root.expanduser()
        if not root.is_dir():
            raise VaultNotFoundError(f"no vault at {root}: create one with `memvault init {root}`")
        settings = settings or load_settings(root)
        vault = Vault(root, settings.max_file_bytes, read_only=not writable(root))
        history = History(vault.root, settings.author_name, settings.author_email)
        if not history.is_repo():
            raise VaultNotFoundError(
                f"{root} is not a git repository: run `memvault init {root}` to make it a vault"
            )
        prepare_state_dir(vault)  # a folder, out of git
        index = Index(vault.state_dir / "index", settings, load_embedder=load_embedder)
        service = cls(vault, history, settings, index)
        if recover:
            service.recover()
        service.refresh_provenance()
        return service

    def close(self) -> None:
        self.indexing.close()  # the background embedder, if one runs
        self.index.close()
        self.access.close()

    def _writing(self) -> AbstractContextManager[None]:
        """The write lock: no write over a half-done merge; a failed commit's write undone."""
        lock_timeout = self.settings.lock_timeout
        return recovery.writing(self.vault, self.history, lock_timeout, self.sync_index)

    def recover(self) -> str | None:
        """Commit changes left uncommitted, as what they are (see :mod:`recovery`)."""
        if self.vault.read_only:  # nothing can be committed: what was left stays so
            return None
        with self.vault.write_lock(self.settings.lock_timeout):
            self.history.clear_stale_locks()  # a git killed mid-write must not stop the vault
            sha, pending = recovery.commit_leftovers(self.vault, self.history, self._op_trailers)
        if pending:
            self.sync_index(pending)
        return sha

    def _op_trailers(self, op: str) -> dict[str, str]:
        return self._trailers(op, None)

    def _trailers(self, op: str, memory_id: str | None) -> dict[str, str]:
        trailers = {"Memvault-Op": op}
        if memory_id:
            trailers["Memvault-Id"] = memory_id
        client = current_client.get() or self.client
        if client:
            trailers["Memvault-Client"] = client
        return trailers

    def publish(self, event: ChangeEvent) -> None:
        """Tell listeners about changes made outside memvault (the watcher's findings)."""
        self._notify(event)

    def commit_external(self, paths: Sequence[str]) -> str | None:
        """Commit edits made by a person, with the repository's own git identity."""
        if not paths:
            return None
        with self.vault.write_lock(self.settings.lock_timeout):
            sha = recovery.commit_external(self.vault, self.history, paths, self._op_trailers)
        self.refresh_provenance()
        return sha

    def refresh_provenance(self) -> None:
        """Fold new commits into what git says of the files: where id-less files were
        first committed (their ids survive moves) and when a person last edited each."""
        changed = self.provenance.fold_into(self.vault, self.history)
        if changed:
            self.sync_index(sorted(changed))

    def indexed_hashes(self) -> dict[str, str]:
        """path -> content hash of what the index holds now (other processes included)."""
        return {d.path: d.hash for d in self.index.records()}

    @property
    def root(self) -> Path:
        return self.vault.root

    def is_ignored(self, rel: str) -> bool:
        return self.vault.is_ignored(rel)

    def is_memory_path(self, rel: str) -> bool:
        return self.vault.is_memory_path(rel)

    def reload_ignore(self, settled: bool) -> bool:
        return self.vault.reload_ignore(settled)

    def memory_paths(self) -> list[str]:
        return list(self.vault.iter_paths())

    def read_regular(self, rel: str) -> bytes:
        return self.vault.read_regular(rel)

    def last_written(self, rel: str) -> str | None:
        """What this process last wrote to ``rel`` (hash, "" for a deletion), or None."""
        return self.vault.last_written(rel)

    def _notify(self, event: ChangeEvent, *memories: Memory) -> None:
        if memories:  # which memories (and types) changed: lets views skip work
            event = replace(event, memories=tuple(m.info() for m in memories))
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:  # a broken subscriber must not break a write
                log.exception("change listener failed")

    # -- reading ------------------------------------------------------------
    def get(self, id_or_path: str) -> Memory:
        return self.vault.read(self._locate(id_or_path))

    def _locate(self, id_or_path: str) -> str:
        """Path of a memory. An id is looked up in the index first (no folder walk), and
        the file itself confirms it; otherwise the vault's own id catalog decides."""
        text = id_or_path.strip()
        if ids.is_id(text):
            doc = self.index.record(text)
            if doc is not None:
                try:
                    if self.vault.read(doc.path).id == text:
                        return doc.path
                except (MemoryNotFoundError, MalformedMemoryError, UnsafePathError):
                    pass  # moved or changed since it was indexed: ask the vault
        return self.vault.locate(text)

    def read_text(self, id_or_path: str) -> str:
        """A memory file exactly as stored (frontmatter and body)."""
        return self.vault.read_text(self.vault.locate(id_or_path))

    def records(self, filters: Filters | None = None) -> list[MemoryInfo]:
        """Index records of memories (fast; no file reads), filtered."""
        return self.indexing.records((filters or Filters()).at(self.clock()))

    def list_memories(
        self,
        filters: Filters | None = None,
        sort: str = "updated",
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        """One page of memories from the index, sorted; ``cursor`` is a previous next_cursor."""
        ordered = sort_infos(self.records(filters), sort)
        return Page.of(ordered, limit, cursor, tuple(self.indexing.unreadable.values()))

    def problems(self) -> list[Problem]:
        return self.indexing.census()[1]  # index records, fresh reads of changed files

    def log(self, id_or_path: str | None = None, limit: int | None = None) -> list[Commit]:
        if id_or_path is None:
            return self.history.log(limit=limit)
        memory_id = id_or_path.strip() if ids.is_id(id_or_path.strip()) else None
        return self.history.log_of(self.history_path(id_or_path), memory_id)[:limit]

    def show_at(self, id_or_path: str, rev: str) -> str:
        path = self.history_path(id_or_path)
        return self.history.show(rev, self.history.path_at(path, rev))

    def diff(self, id_or_path: str, rev: str) -> str:
        path = self.history_path(id_or_path)
        return self.history.diff(rev, self.history.path_at(path, rev), path)

    def history_path(self, id_or_path: str) -> str:
        """Current path of a memory, or a deleted file's last path (for log/revert)."""
        try:
            return self._locate(id_or_path)
        except MemoryNotFoundError:
            text = id_or_path.strip()
            rel = self.history.last_path_of(text) if ids.is_id(text) else ids.clean_relpath(text)
            if rel and self.history.knows(rel):
                return rel
            raise

    # -- writing ------------------------------------------------------------
    def remember(
        self,
        content: str,
        type: str = "note",
        tags: Sequence[str] = (),
        importance: float = 0.5,
        confidence: float = 0.8,
        title: str | None = None,
        folder: str | None = None,
        scope: Sequence[str] = (),
        source: str = "agent",
        supersedes: Sequence[str] = (),
        check_similar: bool = True,
        links: Sequence[str] = (),
        dates: dict[str, Any] | None = None,
    ) -> RememberResult:
        """Write a new memory and commit it (a supersession in the same commit). Trivial text
        is rejected; a near-duplicate is reported, not written twice; contradictions are in
        ``similar``. ``dates``: expires, valid_from, valid_until."""
        content = with_links(content.strip(), links, self.records)
        when = validate.dates(dates or {})
        target_folder = guard.check_new(
            self.settings, self.vault, content, title, tags, type, source, scope, folder
        )
        if reason := policy.triviality(content):
            return RememberResult("rejected", None, None, (), reason)
        _fields.check_unit("importance", importance)
        _fields.check_unit("confidence", confidence)
        type = (type or "note").strip()
        title = (title or "").strip() or _first_line(content).strip()  # "  ": no title given
        if check_similar:  # embedded outside the lock (slow), judged inside it (below)
            self.retrieval.prepare(content, title, tags)
        now = self.clock().replace(microsecond=0)
        supersedes = list(dict.fromkeys(self.get(s).id for s in supersedes))  # ids, once each
        meta = _fields.new_meta(type, tags, confidence, importance, now, source, scope, supersedes)
        text = frontmatter.new_file(meta | when, _body(title, content))
        chosen = target_folder or _fields.default_folder(type, now)
        target_folder = self.vault.spelled(chosen)  # a person's Inbox/ for inbox
        with self._writing():
            # every write that landed meanwhile is indexed by now: no fact is stored twice
            similar = self.retrieval.similar(content, type, title, tags) if check_similar else []
            duplicate = next((s for s in similar if s.relation == "duplicate"), None)
            if duplicate and not supersedes:  # an explicit supersession is never refused
                return RememberResult("duplicate", None, None, tuple(similar), duplicate.already())
            path = self.vault.free_path(target_folder, ids.slugify(title))
            guard.check_memory_path(self.vault, path, path)
            validate.file_size(path, text, self.settings.max_file_bytes)
            old = [self.get(s) for s in supersedes]
            self.vault.write(path, text, expected_hash="")
            for previous in old:
                self._rewrite(previous, {"status": "superseded", "superseded_by": meta["id"]})
            paths = [path, *(m.path for m in old)]
            with self.indexing.upserting(paths) as written:  # indexed while git commits
                sha = self.history.commit(
                    paths, f"remember: {path}", self._trailers("remember", meta["id"])
                )
        self.indexing.embed_left(written)
        self._notify(ChangeEvent(changed=tuple(paths), added=(path,)), written[0], *old)
        others = tuple(s for s in similar if s.id not in supersedes)
        return RememberResult("created", written[0], sha, others, None)

    def update(
        self,
        id_or_path: str,
        content: str | None = None,
        fields: dict[str, Any] | None = None,
        title: str | None = None,
        expected_revision: str | None = None,
        links: Sequence[str] = (),
        op: str = "update",  # the commit's subject and Memvault-Op (consolidate: merge...)
    ) -> WriteResult:
        """Change a memory's body and/or frontmatter, keeping everything else of the file."""
        guard.check_update(self.settings, content, title, fields or {}, expected_revision)
        title = title.strip() or None if title is not None else None  # "  " wrote a "# " heading
        changes = _fields.clean_fields(fields or {})
        with self._writing():
            memory = self.get(id_or_path)
            if expected_revision is not None and memory.content_hash != expected_revision:
                raise StaleRevisionError(
                    f"{memory.path} changed since you read it (revision {memory.content_hash}, "
                    f"you had {expected_revision}): call get_memory and retry"
                )
            if title is not None and "title" in memory.meta:  # the person's `title:` key
                changes["title"], title = title, None
            body = None
            if content is not None or title is not None or links:
                text = content if content is not None else _strip_title(memory.body)
                own = kept_title(memory.title, memory.body, content)
                body = _body(title or own, with_links(text, links, self.records))
            if not changes and body is None:
                raise InvalidInputError("nothing to update: give content, title or fields")
            self._rewrite(memory, changes, body)
            sha = self.history.commit(
                [memory.path], f"{op}: {memory.path}", self._trailers(op, memory.id)
            )
        fresh = self.vault.read(memory.path)
        self.indexing.upsert([fresh])
        self._notify(ChangeEvent(changed=(memory.path,)), memory, fresh)
        action = "updated" if sha else "unchanged"
        return WriteResult(fresh, sha, action, previous_revision=memory.content_hash)

    def _archive_file(self, memory: Memory, reason: str | None) -> str:
        """Mark ``memory`` archived and move it under archive/ (no commit); its new path."""
        fields: dict[str, Any] = {
            "status": "archived",
            "archived": self.clock().replace(microsecond=0),
        }
        if reason:
            fields["archived_reason"] = reason
        self._rewrite(memory, fields)
        if memory.path.startswith("archive/"):
            return memory.path
        new_path = self.vault.free_path("archive", _fields.stem_path(memory.path))
        self.vault.move(memory.path, new_path)
        return new_path

    def _rewrite(self, memory: Memory, changes: dict[str, Any], body: str | None = None) -> None:
        """Minimal-edit rewrite of a file; refuses files memvault cannot parse."""
        self.vault.rewrite(memory, changes, body, self.clock().replace(microsecond=0))

    def forget(
        self, id_or_path: str, mode: str = "archive", reason: str | None = None, op: str = ""
    ) -> WriteResult:
        """archive (default, reversible: status + move to archive/), delete, or purge."""
        guard.check_forget(mode, reason)  # before any file is touched
        if mode == "purge":
            return purging.purge(self, id_or_path, reason)
        with self._writing():
            memory = self.get(id_or_path)
            if mode == "archive" and memory.status == "archived" and memory.path[:8] == "archive/":
                return WriteResult(memory, None, "unchanged")  # keeps when and why it was
            trailers = self._trailers(f"forget-{mode}", memory.id)
            if reason:
                trailers["Memvault-Reason"] = reason
            if mode == "delete":
                self.vault.delete(memory.path)
                paths, new_path = [memory.path], None
            else:
                new_path = self._archive_file(memory, reason)
                paths = [memory.path, new_path]
            subject = f"{op}: {memory.path}" if op else f"forget: {memory.path} ({mode})"
            sha = self.history.commit(paths, subject, trailers)
        if new_path:  # replaced in place (same id): never absent from the index meanwhile
            fresh = self.vault.read(new_path)
            self.indexing.upsert([fresh])
        else:
            self.index.remove([memory.id])
            fresh = memory
        self._notify(
            ChangeEvent(
                changed=tuple(paths),
                added=(new_path,) if new_path and new_path != memory.path else (),
                removed=(memory.path,),
            ),
            memory,
        )
        return WriteResult(fresh, sha, "archived" if mode == "archive" else "deleted")

    def revert(self, id_or_path: str, rev: str) -> WriteResult:
        """Restore a memory's text as it was at ``rev``, as a new commit (see reverting)."""
        return reverting.revert(self, id_or_path, rev)

    def import_path(
        self, source: Path, progress: Callable[[int, int], None] | None = None
    ) -> ImportReport:
        """Import a folder of Markdown or a JSONL, repeatably, as one commit (see importing)."""
        return importing.import_path(self, source, self._trailers("import", None), progress)

    # -- index --------------------------------------------------------------
    def reset_index(self) -> None:
        """Drop the index and start an empty one (rebuilt by the next sync)."""
        self.index = self.indexing.reset()

    def sync_index(
        self, paths: Iterable[str] | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Bring the index in line with the files (all, or ``paths``); how many were indexed."""
        return self.indexing.sync(paths, progress)

    def fill_vectors(self, progress: Callable[[Any], None] | None = None, wait: float = 0) -> int:
        """Make the vectors bulk indexing left out, in committed batches (see embedding)."""
        return embedding.embed_missing(self.indexing, progress, wait=wait)

    def start_embedding(self) -> None:
        """Make missing vectors in a background thread from now on (serve, watch)."""
        self.indexing.start_filler()

    def ensure_synced(self, wait: bool = True) -> bool:
        """Sync once per process; False, without waiting, while another thread syncs."""
        return self.indexing.ensure(wait)

    def index_status(self) -> dict[str, Any]:
        return self.index.status()

    def search(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Ranked index records (``why`` says how each ranked)."""
        return self.retrieval.search(query, k, filters, mode)

    def undated(self, filters: Filters) -> int:
        """How many memories ``filters`` selects but for its period (no readable created)."""
        return self.retrieval.undated(filters)

    def recall(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[Hit]:
        """Ranked memories with snippet and ``why`` (the shape of the MCP ``recall`` tool)."""
        return self.retrieval.recall(query, k, filters, mode)


__all__ = ["ChangeEvent", "Filters", "MemoryService", "RememberResult", "create_vault"]
