"""MemoryService: the only write path.

Every write runs: cross-process lock -> file (atomic) -> one git commit -> index -> notify.
The CLI and the MCP server are thin adapters over this class.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import filelock

from . import frontmatter, ids, importer, policy
from .config import Settings, load_settings
from .errors import (
    InvalidInputError,
    LockTimeoutError,
    MalformedMemoryError,
    MemoryNotFoundError,
    MemvaultError,
    StaleRevisionError,
    VaultNotFoundError,
)
from .history import CLONE_WARNING, History
from .index import Index, SearchHit, SearchQuery
from .index.store import DocInfo
from .models import MEMORY_TYPES, Commit, Memory, Problem, WriteResult, jsonable, parse_time
from .vault import STATE_DIR, Vault

log = logging.getLogger(__name__)

# The MCP client (or CLI) on whose behalf the current call runs; named in commit trailers.
T = TypeVar("T")
current_client: ContextVar[str | None] = ContextVar("memvault_client", default=None)

TYPE_FOLDERS = {
    "preference": "preferences",
    "fact": "facts",
    "summary": "summaries",
    "task": "tasks",
    "note": "inbox",
}
FORGET_MODES = ("archive", "delete", "purge")
INDEX_BATCH = 256
SEARCH_MODES = ("hybrid", "bm25", "vector")


@dataclass(frozen=True)
class ChangeEvent:
    """What a write changed, for subscribers (MCP notifications)."""

    changed: tuple[str, ...] = ()  # paths whose content changed
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


class Filterable(Protocol):
    """What filters look at: a Memory or an index record (DocInfo)."""

    @property
    def path(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def scope(self) -> tuple[str, ...]: ...
    @property
    def created(self) -> str | None: ...


@dataclass(frozen=True)
class RememberResult:
    action: Literal["created", "duplicate", "rejected"]
    memory: Memory | None
    commit: str | None
    similar: tuple[policy.Similar, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class Filters:
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    folder: str | None = None
    scope: tuple[str, ...] = ()
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    include_archived: bool = False

    def accepts(self, memory: Filterable) -> bool:
        if self.types and memory.type not in self.types:
            return False
        if self.tags and not set(self.tags) <= set(memory.tags):
            return False
        if self.folder and not (memory.path + "/").startswith(self.folder.strip("/") + "/"):
            return False
        if self.scope and not set(self.scope) & set(memory.scope):
            return False
        if not self.include_archived and memory.status in ("archived", "superseded"):
            return False
        if self.since is None and self.until is None:
            return True
        when = parse_time(memory.created)
        if self.since and (when is None or when < self.since):
            return False
        return not (self.until and (when is None or when > self.until))

    @property
    def narrowing(self) -> bool:
        """True when more than archived/superseded memories are filtered out."""
        return bool(
            self.types or self.tags or self.folder or self.scope or self.since or self.until
        )


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
    _synced: bool = False
    _syncing: bool = False
    _sync_lock: threading.Lock = field(default_factory=threading.Lock)

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
        vault = Vault(root, settings.max_file_bytes)
        history = History(vault.root, settings.author_name, settings.author_email)
        if not history.is_repo():
            raise VaultNotFoundError(
                f"{root} is not a git repository: run `memvault init {root}` to make it a vault"
            )
        vault.state_dir.mkdir(exist_ok=True)
        _exclude_state_dir(vault.root)
        index = Index(vault.state_dir / "index", settings, load_embedder=load_embedder)
        service = cls(vault, history, settings, index)
        if recover:
            service.recover()
        return service

    def close(self) -> None:
        self.index.close()

    def _lock(self) -> filelock.BaseFileLock:
        return filelock.FileLock(
            str(self.vault.state_dir / "write.lock"), timeout=self.settings.lock_timeout
        )

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The vault's cross-process write lock (every MCP host runs its own server)."""
        lock = self._lock()
        try:
            lock.acquire()
        except filelock.Timeout as exc:
            raise LockTimeoutError(
                f"another memvault process held the vault lock for {self.settings.lock_timeout}s: "
                "retry, or look for a stuck process"
            ) from exc
        try:
            yield
        finally:
            lock.release()

    def recover(self) -> str | None:
        """Commit changes left uncommitted (crash between write and commit, hand edits)."""
        with self._writing():
            pending = self.history.uncommitted()
            if not pending:
                return None
            sha = self.history.commit_all(
                f"recover: {len(pending)} uncommitted file(s)",
                self._trailers("recover", None),
            )
            log.warning("committed %d file(s) left uncommitted: %s", len(pending), pending[:5])
        self.sync_index(pending)
        return sha

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
        subject = f"external: {paths[0]}" if len(paths) == 1 else f"external: {len(paths)} files"
        with self._writing():
            return self.history.commit(
                paths, subject, self._trailers("external", None), as_person=True
            )

    def indexed_hashes(self) -> dict[str, str]:
        """path -> content hash of what the index holds now (other processes included)."""
        self.index.store.refresh()
        return {d.path: d.hash for d in self.index.store.docs.values()}

    def _notify(self, event: ChangeEvent) -> None:
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
            self.index.store.refresh()
            doc = self.index.store.docs.get(text)
            if doc is not None:
                try:
                    if self.vault.read(doc.path).id == text:
                        return doc.path
                except (MemoryNotFoundError, MalformedMemoryError):
                    pass  # moved or changed since it was indexed: ask the vault
        return self.vault.locate(text)

    def list_memories(
        self, filters: Filters | None = None, sort: str = "updated", limit: int | None = None
    ) -> list[Memory]:
        filters = filters or Filters()
        memories = sort_memories([m for m in self.vault.scan()[0] if filters.accepts(m)], sort)
        return memories[:limit] if limit else memories

    def problems(self) -> list[Problem]:
        return self.vault.scan()[1]

    def log(self, id_or_path: str | None = None, limit: int | None = None) -> list[Commit]:
        if id_or_path is None:
            return self.history.log(limit=limit)
        return self.history.log(self._history_path(id_or_path), limit=limit)

    def show_at(self, id_or_path: str, rev: str) -> str:
        path = self._history_path(id_or_path)
        return self.history.show(rev, self._path_at(path, rev))

    def diff(self, id_or_path: str, rev: str) -> str:
        path = self._history_path(id_or_path)
        return self.history.diff(rev, self._path_at(path, rev), path)

    def _history_path(self, id_or_path: str) -> str:
        """Current path of a memory, or a deleted file's last path (for log/revert)."""
        try:
            return self._locate(id_or_path)
        except MemoryNotFoundError:
            if ids.is_id(id_or_path):
                raise
            rel = ids.clean_relpath(id_or_path)
            if self.history.log(rel, limit=1):
                return rel
            raise

    def _path_at(self, path: str, rev: str) -> str:
        sha = self.history.resolve(rev)
        for name in self.history.names_in_history(path):
            if self._exists_at(sha, name):
                return name
        raise MemvaultError(
            f"{path} did not exist at {rev[:12]}: pick a revision from `memvault log {path}`"
        )

    def _exists_at(self, sha: str, name: str) -> bool:
        out = self.history.run("ls-tree", "--name-only", sha, "--", name, check=False)
        return out.strip() == name

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
    ) -> RememberResult:
        """Write a new memory file and commit it (supersession in the same commit).

        Trivial content is rejected and a near-duplicate is reported instead of
        written twice; likely contradictions come back in ``similar``.
        """
        content = content.strip()
        reason = policy.triviality(content)
        if reason:
            return RememberResult("rejected", None, None, (), reason)
        _check_unit("importance", importance)
        _check_unit("confidence", confidence)
        type = (type or "note").strip()
        title = (title or _first_line(content)).strip()
        similar = self.similar(content, type, title, tags) if check_similar else []
        duplicate = next((s for s in similar if s.relation == "duplicate"), None)
        if duplicate and not supersedes:  # an explicit supersession is never refused
            why = f"already remembered as {duplicate.path} (id {duplicate.id})"
            return RememberResult("duplicate", None, None, tuple(similar), why)
        now = self.clock().replace(microsecond=0)
        meta: dict[str, Any] = {
            "id": ids.new_id(),
            "type": type,
            "tags": _clean_tags(tags),
            "confidence": confidence,
            "importance": importance,
            "created": now,
            "updated": now,
            "source": source,
        }
        if scope:
            meta["scope"] = list(scope)
        if supersedes:
            meta["supersedes"] = list(supersedes)
        body = _body(title, content)
        target_folder = folder if folder is not None else _default_folder(type, now)
        with self._writing():
            path = self.vault.free_path(target_folder, ids.slugify(title))
            old = [self.get(s) for s in supersedes]
            self.vault.write(path, frontmatter.new_file(meta, body), expected_hash="")
            for previous in old:
                self._rewrite(previous, {"status": "superseded", "superseded_by": meta["id"]})
            paths = [path, *(m.path for m in old)]
            sha = self.history.commit(
                paths, f"remember: {path}", self._trailers("remember", meta["id"])
            )
        memory = self.vault.read(path)
        self._index([memory, *(self.vault.read(m.path) for m in old)])
        self._notify(ChangeEvent(changed=tuple(paths), added=(path,)))
        others = tuple(s for s in similar if s.id not in supersedes)
        return RememberResult("created", memory, sha, others, None)

    def similar(
        self,
        content: str,
        type: str,
        title: str | None = None,
        tags: Sequence[str] = (),
        k: int = 5,
    ) -> list[policy.Similar]:
        """Existing active memories close to ``content``, with their relation to it.

        The text is embedded exactly as the index will store it, so a memory that is
        then written reuses the vector.
        """
        out = []
        title = title or _first_line(content)
        for doc, cosine in self.index.nearest(title, _clean_tags(tags), content, k):
            if doc.status != "active":
                continue
            try:
                other = self.vault.read(doc.path)
            except (MemoryNotFoundError, MalformedMemoryError):
                continue
            relation = policy.relation(content, _strip_title(other.body), cosine, doc.type == type)
            if relation:
                out.append(policy.Similar(doc.id, doc.path, doc.title, round(cosine, 4), relation))
        return out

    def update(
        self,
        id_or_path: str,
        content: str | None = None,
        fields: dict[str, Any] | None = None,
        title: str | None = None,
        expected_revision: str | None = None,
    ) -> WriteResult:
        """Change a memory's body and/or frontmatter, keeping everything else of the file."""
        with self._writing():
            memory = self.get(id_or_path)
            if expected_revision and memory.content_hash != expected_revision:
                raise StaleRevisionError(
                    f"{memory.path} changed since you read it (revision {memory.content_hash}, "
                    f"you had {expected_revision}): call get_memory and retry"
                )
            changes = _clean_fields(fields or {})
            body = None
            if content is not None or title is not None:
                body = _body(
                    title or memory.title,
                    content if content is not None else _strip_title(memory.body),
                )
            if not changes and body is None:
                raise InvalidInputError("nothing to update: give content, title or fields")
            self._rewrite(memory, changes, body)
            sha = self.history.commit(
                [memory.path], f"update: {memory.path}", self._trailers("update", memory.id)
            )
        fresh = self.vault.read(memory.path)
        self._index([fresh])
        self._notify(ChangeEvent(changed=(memory.path,)))
        action = "updated" if sha else "unchanged"
        return WriteResult(fresh, sha, action, previous_revision=memory.content_hash)

    def _rewrite(self, memory: Memory, changes: dict[str, Any], body: str | None = None) -> None:
        """Minimal-edit rewrite of a file; refuses files memvault cannot parse."""
        if memory.problems:
            raise MalformedMemoryError(
                f"{memory.path} has problems memvault will not paper over "
                f"({memory.problems[0]}): fix the file by hand first"
            )
        raw = self.vault.read_bytes(memory.path).decode("utf-8")
        doc = frontmatter.parse(raw)
        changes = dict(changes)
        if memory.id_derived:
            changes = {"id": memory.id, **changes}
        changes.setdefault("updated", self.clock().replace(microsecond=0))
        text = frontmatter.render(doc, changes, body)
        self.vault.write(memory.path, text, expected_hash=memory.content_hash)

    def forget(
        self, id_or_path: str, mode: str = "archive", reason: str | None = None
    ) -> WriteResult:
        """archive (default, reversible: status + move to archive/), delete, or purge."""
        if mode not in FORGET_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(FORGET_MODES)}, not {mode!r}")
        if mode == "purge":
            return self._purge(id_or_path, reason)
        with self._writing():
            memory = self.get(id_or_path)
            trailers = self._trailers(f"forget-{mode}", memory.id)
            if reason:
                trailers["Memvault-Reason"] = reason
            if mode == "delete":
                self.vault.delete(memory.path)
                paths, new_path = [memory.path], None
            else:
                fields: dict[str, Any] = {
                    "status": "archived",
                    "archived": self.clock().replace(microsecond=0),
                }
                if reason:
                    fields["archived_reason"] = reason
                self._rewrite(memory, fields)
                new_path = memory.path
                if not memory.path.startswith("archive/"):
                    new_path = self.vault.free_path("archive", _stem_path(memory.path))
                    self.vault.move(memory.path, new_path)
                paths = [memory.path, new_path]
            sha = self.history.commit(paths, f"forget: {memory.path} ({mode})", trailers)
        self.index.remove([memory.id])
        if new_path:
            fresh = self.vault.read(new_path)
            self._index([fresh])
        else:
            fresh = memory
        self._notify(
            ChangeEvent(
                changed=tuple(paths),
                added=(new_path,) if new_path and new_path != memory.path else (),
                removed=(memory.path,),
            )
        )
        return WriteResult(fresh, sha, "archived" if mode == "archive" else "deleted")

    def _purge(self, id_or_path: str, reason: str | None) -> WriteResult:
        with self._writing():
            memory = self.get(id_or_path)
            names = self.history.names_in_history(memory.path)
            pending = self.history.uncommitted()
            if pending:  # filter-branch needs a clean tree; keep the person's edits
                self.history.commit_all(
                    f"recover: {len(pending)} file(s) before purge", self._trailers("recover", None)
                )
            self.vault.delete(memory.path)
            self.history.commit(
                [memory.path],
                f"forget: {memory.id} (purge)",
                self._trailers("forget-purge", memory.id),
            )
            self.history.purge(names)
            trailers = self._trailers("purge", memory.id)
            if reason:
                trailers["Memvault-Reason"] = reason
            sha = self.history.commit_empty(
                f"purge: memory {memory.id} erased from history", trailers
            )
        self.index.remove([memory.id])
        self._notify(ChangeEvent(changed=(memory.path,), removed=(memory.path,)))
        log.warning("%s %s", memory.path, CLONE_WARNING)
        return WriteResult(memory, sha, "purged")

    def revert(self, id_or_path: str, rev: str) -> WriteResult:
        """Restore a memory's text as it was at ``rev``, as a new commit."""
        with self._writing():
            path = self._history_path(id_or_path)
            sha_rev = self.history.resolve(rev)
            old_text = self.history.show(sha_rev, self._path_at(path, sha_rev))
            current = self.vault.abspath(path)
            previous = None
            if current.exists():
                previous = self.vault.read(path).content_hash
                expected: str | None = previous
            else:
                expected = ""
            self.vault.write(path, old_text, expected_hash=expected)
            restored = self.vault.read(path)
            sha = self.history.commit(
                [path], f"revert: {path} to {sha_rev[:7]}", self._trailers("revert", restored.id)
            )
        self._index([restored])
        self._notify(ChangeEvent(changed=(path,), added=() if previous else (path,)))
        return WriteResult(restored, sha, "reverted", previous_revision=previous)

    def import_path(
        self, source: Path, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Bulk import (folder of Markdown or JSONL) as one commit, then index in batches."""
        source = source.expanduser()
        if source.is_dir():
            items = list(importer.from_folder(source, self.vault.is_memory_path))
        elif source.suffix.lower() in (".jsonl", ".ndjson"):
            items = list(importer.from_jsonl(source, self.clock().replace(microsecond=0)))
        else:
            raise InvalidInputError(f"{source} is neither a folder nor a .jsonl file")
        with self._writing():
            written = []
            for item in items:
                stem = _stem_path(ids.clean_relpath(item.path))
                folder, _, name = stem.rpartition("/")
                rel = self.vault.free_path(folder, name)
                self.vault.write(rel, item.text, expected_hash="")
                written.append(rel)
            sha = self.history.commit(
                written,
                f"import: {len(written)} memories from {source.name}",
                self._trailers("import", None),
            )
        self.sync_index(written, progress=progress)
        self._notify(ChangeEvent(changed=tuple(written), added=tuple(written)))
        return {"imported": len(written), "commit": sha, "paths": written}

    def reset_index(self) -> None:
        """Drop the index and start an empty one (rebuilt by the next sync)."""
        self.index.close()
        shutil.rmtree(self.index.folder, ignore_errors=True)
        self.index = Index(self.index.folder, self.settings)
        self._synced = False

    def consolidate(self, dry_run: bool = True) -> list[dict[str, Any]]:
        """Proposals per policy; applied (one commit each, archive never delete) when asked."""
        now = self.clock()
        docs = {d.id: d for d in self.catalog()}
        proposals: list[dict[str, Any]] = []
        for a, b, cosine in self.index.store.pairs_above(policy.RELATED_COSINE):
            if a not in docs or b not in docs or docs[a].type != docs[b].type:
                continue
            proposal = self._pair_proposal(docs[a], docs[b], cosine)
            if proposal:
                proposals.append(proposal)
        for doc in docs.values():
            verdict = policy.forget_verdict(doc, now, self._expires(doc))
            if verdict:
                proposals.append(
                    {"kind": "archive", "ids": [doc.id], "paths": [doc.path], "reason": verdict}
                )
        if dry_run:
            return proposals
        for proposal in proposals:
            proposal.update(self._apply(proposal))
        return proposals

    def _pair_proposal(self, a: DocInfo, b: DocInfo, cosine: float) -> dict[str, Any] | None:
        try:
            text_a = _strip_title(self.vault.read(a.path).body)
            text_b = _strip_title(self.vault.read(b.path).body)
        except MemvaultError:
            return None
        verdict = policy.relation(text_a, text_b, cosine, same_type=True)
        if verdict == "duplicate":
            keep, drop = sorted((a, b), key=lambda d: (-d.importance, _neg(d.updated)))
            reason = (
                f"near-duplicates (cosine {cosine:.3f}): keep {keep.path}, "
                f"mark {drop.path} superseded by it"
            )
            return {
                "kind": "merge",
                "ids": [keep.id, drop.id],
                "paths": [keep.path, drop.path],
                "reason": reason,
            }
        if verdict == "possible_contradiction":
            new, old = sorted((a, b), key=lambda d: _neg(d.updated))
            reason = (
                f"{new.path} seems to contradict the older {old.path}: mark the older one "
                "superseded (check first; revert if wrong)"
            )
            return {
                "kind": "supersede",
                "ids": [new.id, old.id],
                "paths": [new.path, old.path],
                "reason": reason,
            }
        return None

    def _expires(self, doc: DocInfo) -> str | None:
        if doc.type != "task":
            return None
        try:
            value = self.vault.read(doc.path).meta.get("expires")
        except MemvaultError:
            return None
        return None if value is None else str(value)

    def _apply(self, proposal: dict[str, Any]) -> dict[str, Any]:
        try:
            if proposal["kind"] in ("merge", "supersede"):
                keep, drop = proposal["ids"]
                result = self.update(drop, fields={"status": "superseded", "superseded_by": keep})
            else:
                result = self.forget(proposal["ids"][0], "archive", proposal["reason"])
        except MemvaultError as exc:
            return {"applied": False, "reason": f"{proposal['reason']} (not applied: {exc})"}
        return {"applied": True, "commit": result.commit}

    # -- index --------------------------------------------------------------
    def sync_index(
        self, paths: Iterable[str] | None = None, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Bring the index in line with the files (all of them, or ``paths``).

        Only files whose (mtime, size) changed are re-read. Returns how many were indexed.
        """
        if paths is None:
            read, drop = self.index.plan_sync(self.vault.stats())
            self.index.remove(drop)
        else:
            read = [p for p in dict.fromkeys(paths) if self.vault.is_memory_path(p)]
            gone = [p for p in read if not (self.vault.root / p).is_file()]
            self.index.remove_paths(gone)
            read = [p for p in read if p not in gone]
        done = 0
        for start in range(0, len(read), INDEX_BATCH):
            batch = []
            for rel in read[start : start + INDEX_BATCH]:
                try:
                    batch.append(self.vault.read(rel))
                except (MalformedMemoryError, MemoryNotFoundError) as exc:
                    log.warning("not indexed: %s", exc)
            self._index(batch)
            done += len(batch)
            if progress:
                progress(min(start + INDEX_BATCH, len(read)), len(read))
        return done

    def _index(self, memories: Sequence[Memory]) -> None:
        self.index.upsert(memories, self.vault.stats([m.path for m in memories]))

    def search(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[SearchHit]:
        if mode not in SEARCH_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")
        if not query.strip():
            raise InvalidInputError("query is empty: say what to look for")
        if not 1 <= k <= 100:
            raise InvalidInputError(f"k must be between 1 and 100, got {k}")
        ready = self.ensure_synced(wait=False)
        hits = self.index.search(SearchQuery(query, k, filters or Filters(), mode), self.clock())
        if not ready:
            note = "index still catching up with the files; results may be incomplete"
            hits = [replace(h, why={**h.why, "index": note}) for h in hits]
        return hits

    def ensure_synced(self, wait: bool = True) -> bool:
        """Sync the index with the files once per process.

        Returns False, without waiting, when another thread is syncing and ``wait`` is False.
        """
        if self._synced:
            return True
        if not wait and self._syncing:
            return False
        with self._sync_lock:
            if not self._synced:
                self._syncing = True
                try:
                    self.sync_index()
                    self._synced = True
                finally:
                    self._syncing = False
        return True

    def catalog(self, filters: Filters | None = None) -> list[DocInfo]:
        """Index records of memories (fast; no file reads), filtered."""
        self.ensure_synced(wait=False)
        self.index.store.refresh()
        filters = filters or Filters()
        return [d for d in self.index.store.docs.values() if filters.accepts(d)]

    def recall(
        self, query: str, k: int = 8, filters: Filters | None = None, mode: str = "hybrid"
    ) -> list[dict[str, Any]]:
        """Ranked memories with snippet and ``why`` (the shape of the MCP ``recall`` tool)."""
        out = []
        for hit in self.search(query, k, filters, mode):
            try:
                memory = self.vault.read(hit.doc.path)
            except (MemoryNotFoundError, MalformedMemoryError):
                continue  # changed under us since it was indexed; the watcher will catch up
            out.append(
                {
                    "id": memory.id,
                    "path": memory.path,
                    "title": memory.title,
                    "type": memory.type,
                    "tags": list(memory.tags),
                    "snippet": snippet(memory.body, query),
                    "score": round(hit.score, 4),
                    "why": hit.why,
                    "created": memory.created,
                    "updated": memory.updated,
                }
            )
        return out

    # -- reports ------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        memories, problems = self.vault.scan()
        by_type: dict[str, int] = {}
        for memory in memories:
            by_type[memory.type] = by_type.get(memory.type, 0) + 1
        return {
            "vault": str(self.vault.root),
            "memories": len(memories),
            "by_type": dict(sorted(by_type.items())),
            "archived": sum(1 for m in memories if m.status == "archived"),
            "problems": len(problems),
            "uncommitted": len(self.history.uncommitted()),
            "last_commits": [c.brief() for c in self.history.log(limit=5)],
            "index": self.index.status(),
        }

    def export(self) -> dict[str, Any]:
        """Every memory with metadata, body and history (one git log for the whole vault)."""
        memories, problems = self.vault.scan()
        commits = self.history.log()
        out = []
        for memory in memories:
            history = _history_of(memory.path, commits)
            out.append(
                {
                    **memory.summary(),
                    "meta": jsonable(memory.meta),
                    "body": memory.body,
                    "history": [c.brief() | {"path": p} for c, p in history],
                }
            )
        return {
            "vault": str(self.vault.root),
            "exported": self.clock().isoformat(),
            "memories": out,
            "problems": [p.__dict__ for p in problems],
        }


def create_vault(
    root: Path, template: Path | None = None, settings: Settings | None = None
) -> bool:
    """Make ``root`` a vault from the template (git init + first commit).

    Returns False when ``root`` already is a vault (nothing is touched).
    """
    root = root.expanduser()
    settings = settings or Settings()
    history = History(
        root.resolve() if root.exists() else root, settings.author_name, settings.author_email
    )
    if root.is_dir() and history.is_repo():
        return False
    template = template or template_dir()
    root.mkdir(parents=True, exist_ok=True)
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        dst = root / rel
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        elif not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    history = History(root.resolve(), settings.author_name, settings.author_email)
    if not history.is_repo():
        history.init()
    _exclude_state_dir(root)
    history.commit_all("init: memvault vault", {"Memvault-Op": "init"})
    return True


def template_dir() -> Path:
    """The vault template: packaged copy when installed, else the repository's folder."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_template", here.parent / "vault-template"):
        if candidate.is_dir():
            return candidate
    raise MemvaultError("vault-template not found: reinstall memvault")


def _exclude_state_dir(root: Path) -> None:
    """Keep ``.memvault/`` out of git even where the vault's .gitignore forgot it."""
    exclude = root / ".git" / "info" / "exclude"
    if not (root / ".git").is_dir():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if f"/{STATE_DIR}/" not in text.split("\n"):
        exclude.write_text(text.rstrip("\n") + f"\n/{STATE_DIR}/\n", encoding="utf-8")


def _history_of(path: str, commits: list[Commit]) -> list[tuple[Commit, str]]:
    """Commits (newest first) that touched ``path``, following renames backwards."""
    out, name = [], path
    for commit in commits:
        if name in commit.files:
            out.append((commit, name))
            for old, new in commit.renames:
                if new == name:
                    name = old
    return out


def snippet(body: str, query: str, width: int = 240) -> str:
    """The body line(s) sharing most words with the query, cut to ``width`` characters."""
    wanted = {w.lower() for w in query.split() if len(w) > 2}
    lines = [ln.strip() for ln in body.split("\n") if ln.strip() and not ln.startswith("# ")]
    if not lines:
        return body.strip()[:width]
    best = max(lines, key=lambda ln: sum(w in ln.lower() for w in wanted))
    return best if len(best) <= width else best[: width - 3] + "..."


def _clean_tags(tags: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t.strip().lstrip("#") for t in tags if t.strip().lstrip("#")))


def _neg(value: str | None) -> str:
    return "".join(chr(0x7F - ord(c)) for c in (value or ""))


def _default_folder(memory_type: str, now: dt.datetime) -> str:
    if memory_type == "episode":
        return f"episodes/{now.year:04d}"
    return TYPE_FOLDERS.get(memory_type, "inbox")


def _first_line(content: str, limit: int = 60) -> str:
    line = content.strip().split("\n", 1)[0].lstrip("# ").strip()
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + "..."


def _body(title: str, content: str) -> str:
    content = content.strip()
    if content.startswith("# "):
        return content + "\n"
    return f"# {title}\n\n{content}\n"


def _strip_title(body: str) -> str:
    lines = body.lstrip("\n").split("\n")
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _stem_path(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(f"{name} must be between 0 and 1, got {value}")


_PROTECTED = {"id", "created"}


def _clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in fields.items():
        if key in _PROTECTED:
            raise InvalidInputError(f"{key!r} cannot be changed: it is set by memvault")
        if key in ("importance", "confidence") and value is not None:
            _check_unit(key, float(value))
        if key == "type" and value is not None and not str(value).strip():
            raise InvalidInputError("type cannot be empty")
        if value is not None:
            out[key] = frontmatter.DELETE if value == "" else value
    return out


def sort_memories(items: Sequence[T], sort: str) -> list[T]:
    """Memories or index records by updated/created/importance (newest first) or path."""
    return sorted(items, key=_sort_key(sort), reverse=sort != "path")


def _sort_key(sort: str) -> Callable[[Any], Any]:
    if sort == "path":
        return lambda m: m.path
    if sort == "importance":
        return lambda m: (m.importance, m.updated or "")
    if sort == "created":
        return lambda m: m.created or ""
    if sort == "updated":
        return lambda m: m.updated or ""
    raise InvalidInputError(f"sort must be updated, created, importance or path, not {sort!r}")


__all__ = ["MEMORY_TYPES", "ChangeEvent", "Filters", "MemoryService", "create_vault"]
