"""Proposal mode: an agent's writes wait on a branch until a person accepts them.

With ``agent_writes = "propose"`` (or the client named in ``propose_clients``), every write
an MCP client makes runs the service's own write path (guard, validation, frontmatter, one
commit whose trailers name the client) over :class:`Drafts`: the same ``MemoryService``
pointed at a git worktree of the branch ``memvault/proposals/<client>``, checked out under
``.memvault/proposals/<client>``. The vault's working tree, its index, the watcher and
Obsidian never see a proposal (``.memvault/`` is ignored by all four); other clients don't
either. The writing client does: its ``recall``, ``get_memory`` and ``list_memories`` are
the vault's plus its branch's changes (:func:`overlay`), marked ``proposed``.

Each proposal is one commit on the branch, named by its sha. Before a proposal is written the
branch merges the vault's branch (its own version winning where both changed a file), so
the worktree starts from what the vault says now. :func:`accept` applies a proposal's change
to the vault under the write lock (one commit attributed to the person, naming the proposal
and its client; index, provenance and subscribers as for any write), then records the
acceptance on the branch; :func:`reject` reverts it on the branch (one commit, attributed).
A proposal whose files changed in the vault since is refused, never merged over.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import asof, ids
from .config import Settings
from .errors import (
    GitError,
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    StaleRevisionError,
)
from .history import History, format_message
from .index import Index
from .models import ChangeEvent, Filters, Hit, Memory, MemoryInfo, Page, sort_infos
from .service import MemoryService, current_client
from .sync import IndexSync
from .vault import Vault

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

log = logging.getLogger(__name__)

BRANCHES = "memvault/proposals/"
FOLDER = "proposals"  # under .memvault/
MODES = ("direct", "propose")
_FS, _RS, _GS = "\x1f", "\x1e", "\x1d"


# -- who proposes ------------------------------------------------------------------------
def client_name(client: str) -> str:
    """A client's name without the version the MCP adapter appends (``cursor/1.2``)."""
    name, slash, version = client.rpartition("/")
    return name if slash and name and version[:1].isdigit() else client


def slug(client: str) -> str:
    """The client's name as a branch and folder name: ``Claude Code/1.0`` -> ``claude-code``."""
    text = re.sub(r"[^a-z0-9_-]+", "-", client_name(client).lower()).strip("-_")
    return text[:60] or "client"


def proposing(settings: Settings, client: str | None) -> bool:
    """Whether ``client``'s writes are proposals (the CLI, a person, never proposes)."""
    if settings.agent_writes not in MODES:
        raise InvalidInputError(
            f"agent_writes must be 'direct' or 'propose', not {settings.agent_writes!r}: "
            "fix it in .memvault.toml or MEMVAULT_AGENT_WRITES"
        )
    if client is None:
        return False
    if settings.agent_writes == "propose":
        return True
    names = {client_name(client).lower(), slug(client)}
    return any(c.strip().lower() in names for c in settings.propose_clients)


def _asking() -> str | None:
    """The MCP client of the current call, if it proposes (set by the MCP adapter)."""
    return current_client.get()


# -- writing proposals -------------------------------------------------------------------
@dataclass
class Drafts(MemoryService):
    """The service's write path over a client's proposal worktree: files and commits go
    there; duplicates, contradictions and links are judged against the vault; the lock is
    the vault's. Its own small index (text only) holds what it wrote, for ids."""

    main: MemoryService | None = None

    def __post_init__(self) -> None:
        main = self._main
        self.indexing = IndexSync(self.vault, self.index, self.settings)
        self.provenance = main.provenance
        self.access = main.access
        self.retrieval = main.retrieval

    @property
    def _main(self) -> MemoryService:
        assert self.main is not None, "Drafts is made by proposals.writer"
        return self.main

    def _writing(self) -> AbstractContextManager[None]:
        return self._main._writing()

    def _trailers(self, op: str, memory_id: str | None) -> dict[str, str]:
        return super()._trailers(op, memory_id) | _proposal_key()

    def records(self, filters: Filters | None = None) -> list[MemoryInfo]:
        return self._main.records(filters)  # links resolve among the vault's memories

    def remember(self, *args: Any, **kwargs: Any) -> Any:
        return _proposed(super().remember(*args, **kwargs))

    def update(self, *args: Any, **kwargs: Any) -> Any:
        return _proposed(super().update(*args, **kwargs))

    def revert(self, *args: Any, **kwargs: Any) -> Any:
        return _proposed(super().revert(*args, **kwargs))

    def forget(
        self, id_or_path: str, mode: str = "archive", reason: str | None = None, op: str = ""
    ) -> Any:
        if mode == "purge":
            raise InvalidInputError(
                "this client's writes are proposals (agent_writes): a purge erases history "
                "and cannot be one; forget with mode archive or delete, or ask the person to "
                "run `memvault forget ID --purge`"
            )
        return _proposed(super().forget(id_or_path, mode, reason, op))


def _proposal_key() -> dict[str, str]:
    """The trailer that makes a commit a proposal; its value names it for good (the commit's
    sha changes when a purge rewrites history, the message does not)."""
    return {"Memvault-Proposed": ids.new_id()}


def as_proposed(service: MemoryService, result: Any) -> Any:
    """``result`` marked ``proposed`` when ``service`` is a client's :class:`Drafts`: for the
    writes that do not pass through its methods (a profile field)."""
    return _proposed(result) if isinstance(service, Drafts) else result


def _proposed(result: Any) -> Any:
    """A write's result, its action ``proposed`` when it made a commit (on the branch)."""
    return replace(result, action="proposed") if result.commit else result


@contextmanager
def writer(service: MemoryService) -> Iterator[MemoryService]:
    """The service the current MCP call writes through: ``service`` itself, or the calling
    client's :class:`Drafts` when its writes are proposals."""
    client = _asking()
    if not proposing(service.settings, client):
        yield service
        return
    assert client is not None
    root = service.vault.state_dir / FOLDER / slug(client)
    with service._writing():
        branch = _worktree(service, root, slug(client))
        _follow(service, branch, {"Memvault-Op": "follow"})
    vault = Vault(root, service.settings.max_file_bytes)
    vault.state_dir.mkdir(exist_ok=True)
    # what git says of the vault's files: ids of id-less files are the same in the worktree
    vault.origins, vault.edited = service.vault.origins, service.vault.edited
    text_only = replace(service.settings, embedder="none")
    index = Index(vault.state_dir / "index", text_only, load_embedder=False)
    drafts = Drafts(vault, branch, service.settings, index, service.client, main=service)
    drafts.clock = lambda: service.clock()  # noqa: PLW0108 (tests move the vault's clock)
    try:
        yield drafts
    finally:
        index.close()


def _worktree(service: MemoryService, root: Path, name: str) -> History:
    """The client's branch, checked out at ``root`` (created from the vault's HEAD)."""
    if not (root / ".git").is_file():
        history = service.history
        history.run("worktree", "prune")
        branch = BRANCHES + name
        if history.commit_of(f"refs/heads/{branch}"):
            history.run("worktree", "add", "--quiet", str(root), branch)
        else:
            history.run("worktree", "add", "--quiet", "-b", branch, str(root), "HEAD")
    settings = service.settings
    return History(root, settings.author_name, settings.author_email)


def _follow(service: MemoryService, branch: History, trailers: dict[str, str]) -> None:
    """Bring the branch up to the vault: leftovers of a crashed proposal committed, then the
    vault's HEAD merged in, the branch's version winning where both changed a file."""
    _recover(branch)
    head, before = service.history.head(), branch.head()
    forced = "Memvault-Accepted" in trailers  # the acceptance is recorded by this commit
    if head is None or (branch.is_ancestor(head, "HEAD") and not forced):
        return
    subject = "proposals: follow the vault"
    args = ["merge", "--quiet", "--no-ff", "-X", "ours", "-m", format_message(subject, trailers)]
    try:
        branch.run(*args, head)
    except GitError:
        if not _keep_ours(branch):  # not a conflict: leave the branch as it was
            branch.run("merge", "--abort", check=False)
            raise
        branch.run("commit", "--quiet", "--no-verify", "--no-edit")
    if forced and branch.head() == before:  # nothing to merge: record it all the same
        branch.commit_empty(subject, trailers)


def _recover(branch: History) -> None:
    """Commit what a crash left in the worktree, as a proposal (a person reviews it)."""
    leftovers = branch.uncommitted()
    if leftovers:
        trailers = {"Memvault-Op": "recover"} | _proposal_key()
        branch.commit(leftovers, "recover: an unfinished proposal", trailers)


def _keep_ours(branch: History) -> bool:
    """Settle what ``-X ours`` leaves unmerged (a file changed on the branch and deleted in
    the vault, or the reverse) with the branch's side; False when nothing was unmerged."""
    unmerged: dict[str, set[int]] = {}
    for entry in branch.run("ls-files", "-u", "-z").split("\0"):
        head, tab, path = entry.partition("\t")
        if tab:
            unmerged.setdefault(path, set()).add(int(head.split()[2]))
    for path, stages in unmerged.items():
        if 2 in stages:
            branch.run("checkout", "--ours", "--", path)
            branch.run("add", "--", path)
        else:
            branch.run("rm", "--quiet", "--", path)
    return bool(unmerged)


# -- what is pending ---------------------------------------------------------------------
@dataclass(frozen=True)
class Pending:
    """One proposal: a commit on a client's branch, neither accepted nor rejected yet."""

    id: str  # the commit's first 12 hex digits
    client: str  # as in the branch name
    commit: str
    key: str  # Memvault-Proposed: what acceptance and rejection refer to
    time: str
    subject: str
    op: str
    memory: str | None  # Memvault-Id
    by: str | None  # Memvault-Client: the client and version that wrote it
    paths: tuple[str, ...]


def clients(service: MemoryService) -> list[str]:
    refs = service.history.run("for-each-ref", "--format=%(refname)", f"refs/heads/{BRANCHES}")
    return sorted(r.removeprefix(f"refs/heads/{BRANCHES}") for r in refs.split())


def pending(service: MemoryService, client: str | None = None) -> list[Pending]:
    """Proposals waiting for review, oldest first: one client's (a name or slug), or all."""
    names = [slug(client)] if client else clients(service)
    return [p for name in names for p in _pending_of(service.history, name)]


def waiting(service: MemoryService) -> dict[str, int]:
    """client -> how many of its proposals wait for review (clients with none left out)."""
    counts = {name: len(_pending_of(service.history, name)) for name in clients(service)}
    return {name: n for name, n in counts.items() if n}


def mine(service: MemoryService) -> tuple[bool, list[Pending]]:
    """Whether the calling client proposes, and its proposals waiting for review."""
    client = _asking()
    if not proposing(service.settings, client) or client is None:
        return False, []
    return True, pending(service, client)


def _pending_of(history: History, name: str) -> list[Pending]:
    branch = f"refs/heads/{BRANCHES}{name}"
    if history.commit_of(branch) is None or history.head() is None:
        return []
    fmt = _FS.join(["%H", "%P", "%aI", "%s", "%(trailers:only,unfold,separator=%x1d)"]) + _RS
    out = history.run("log", "--reverse", f"--format={fmt}", f"HEAD..{branch}")
    done: set[str] = set()
    found = []
    for record in filter(None, (r.strip("\n") for r in out.split(_RS))):
        sha, parents, time, subject, raw = (record.split(_FS) + [""] * 5)[:5]
        trailers = dict(
            (k.strip(), v.strip()) for k, _, v in (t.partition(":") for t in raw.split(_GS))
        )
        done.update(
            trailers[k] for k in ("Memvault-Accepted", "Memvault-Rejected") if k in trailers
        )
        key = trailers.get("Memvault-Proposed")
        if len(parents.split()) == 1 and key:
            op, memory = trailers.get("Memvault-Op", "?"), trailers.get("Memvault-Id")
            by = trailers.get("Memvault-Client")
            found.append(Pending(sha[:12], name, sha, key, time, subject, op, memory, by, ()))
    left = [p for p in found if p.key not in done]
    return [replace(p, paths=tuple(path for _, path in _changes(history, p.commit))) for p in left]


def _changes(history: History, commit: str) -> list[tuple[str, str]]:
    """(status A/M/D, path) of each file ``commit`` changed against its parent."""
    out = history.run(
        "diff-tree", "-r", "--no-commit-id", "--no-renames", "--name-status", "-z", commit
    )
    tokens = [t for t in out.split("\0") if t]
    return [(s[:1], p) for s, p in zip(tokens[::2], tokens[1::2], strict=False)]


def diff(service: MemoryService, proposal: Pending) -> str:
    """The proposal's change as a unified diff."""
    return service.history.run("diff", "--no-color", "-M", f"{proposal.commit}^", proposal.commit)


def _find(service: MemoryService, proposal_id: str) -> Pending:
    wanted = proposal_id.strip().lower()
    found = [p for p in pending(service) if wanted and p.commit.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidInputError(
            f"no pending proposal {proposal_id!r}: `memvault review` lists them"
        )
    raise InvalidInputError(f"{proposal_id!r} names several proposals: give more of the id")


# -- accepting and rejecting -------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What accepting or rejecting one proposal did."""

    proposal: Pending
    action: str  # accepted | rejected
    commit: str | None  # the vault's commit (accepted) or the branch's (rejected)
    paths: tuple[str, ...]  # files changed in the vault (accepted)


def accept(service: MemoryService, proposal_id: str) -> Decision:
    """Apply a proposal to the vault as one commit by the person; record it on the branch."""
    with service._writing():
        proposal = _find(service, proposal_id)
        plan = _plan(service, proposal)
        for path, data in plan:
            if data is None:
                service.vault.delete(path)
            else:
                service.vault.write(path, data)
        trailers = service._trailers("accept", proposal.memory)
        trailers |= {
            "Memvault-Proposal": proposal.commit,
            "Memvault-Proposed-By": proposal.by or proposal.client,
        }
        paths = [path for path, _ in plan]
        subject = f"accept: {proposal.subject} (proposal {proposal.id})"
        sha = service.history.commit(paths, subject, trailers, as_person=True) if paths else None
        branch = _worktree(service, _root(service, proposal.client), proposal.client)
        _follow(service, branch, {"Memvault-Op": "accepted", "Memvault-Accepted": proposal.key})
    if paths:
        service.sync_index(paths)
        service.refresh_provenance()
        service.publish(_event(plan, proposal))
    return Decision(proposal, "accepted", sha, tuple(paths))


def _event(plan: Sequence[tuple[str, bytes | None]], proposal: Pending) -> ChangeEvent:
    return ChangeEvent(
        changed=tuple(p for p, _ in plan),
        added=tuple(p for p, d in plan if d is not None),
        removed=tuple(p for p, d in plan if d is None),
    )


def _plan(service: MemoryService, proposal: Pending) -> list[tuple[str, bytes | None]]:
    """(path, new bytes or None to delete) for each file to change in the vault; refused
    when a file the proposal changed was changed in the vault since it was proposed."""
    history, vault = service.history, service.vault
    changes = _changes(history, proposal.commit)
    before = _blobs_at(history, f"{proposal.commit}^", [p for s, p in changes if s != "A"])
    after = _blobs_at(history, proposal.commit, [p for s, p in changes if s != "D"])
    plan: list[tuple[str, bytes | None]] = []
    for status, path in changes:
        current = vault.read_regular(path) if vault.abspath(path).exists() else None
        wanted = after.get(path)
        if current == wanted:
            continue  # already so (accepted before a crash, or the same edit by hand)
        if current != before.get(path):
            if status == "A":  # another memory took the path meanwhile: keep both
                folder, _, name = path.rpartition("/")
                plan.append((vault.free_path(folder, name.removesuffix(".md")), wanted))
                continue
            raise StaleRevisionError(
                f"{path} in the vault is not what proposal {proposal.id} changed (it changed "
                "since, or an earlier proposal that made it is not accepted yet): accept that "
                f"one first, or reject this one (`memvault review reject {proposal.id}`) and "
                "edit the memory by hand"
            )
        plan.append((path, wanted))
    return plan


def _blobs_at(history: History, rev: str, paths: Sequence[str]) -> dict[str, bytes]:
    """path -> bytes of each of ``paths`` in ``rev`` (missing ones left out)."""
    if not paths:
        return {}
    names = "".join(f"{rev}:{path}\n" for path in paths)
    found = history.run("cat-file", "--batch-check", input_text=names).splitlines()
    blobs = {
        p: parts[0]
        for p, parts in zip(paths, (line.split() for line in found), strict=False)
        if len(parts) == 3 and parts[1] == "blob"
    }
    data = history.blob_bytes(blobs.values())
    return {p: data[b] for p, b in blobs.items() if b in data}


def reject(service: MemoryService, proposal_id: str) -> Decision:
    """Revert a proposal on its branch: one commit by the person; the vault is untouched."""
    with service._writing():
        proposal = _find(service, proposal_id)
        branch = _worktree(service, _root(service, proposal.client), proposal.client)
        _recover(branch)
        try:
            branch.run("revert", "--no-commit", proposal.commit)
        except GitError as exc:
            branch.run("reset", "--hard", "--quiet", "HEAD")
            raise InvalidInputError(
                f"proposal {proposal.id} cannot be rejected alone: a later proposal changes "
                "the same memory; reject that one first (`memvault review` lists them)"
            ) from exc
        trailers = service._trailers("reject", proposal.memory)
        trailers["Memvault-Rejected"] = proposal.key
        subject = f"reject: {proposal.subject} (proposal {proposal.id})"
        sha = branch.commit(list(proposal.paths), subject, trailers, as_person=True)
        if sha is None:
            sha = branch.commit_empty(subject, trailers)
    return Decision(proposal, "rejected", sha, ())


def _root(service: MemoryService, name: str) -> Path:
    return service.vault.state_dir / FOLDER / name


def drop_worktrees(service: MemoryService) -> None:
    """Remove the proposal worktrees (after a purge rewrote their branches: their files and
    small indexes may hold what was erased); they are checked out again when next needed."""
    folder = service.vault.state_dir / FOLDER
    for root in sorted(folder.iterdir()) if folder.is_dir() else ():
        service.history.run("worktree", "remove", "--force", str(root), check=False)
        shutil.rmtree(root, ignore_errors=True)
    service.history.run("worktree", "prune")


# -- what the proposing client sees ------------------------------------------------------
@dataclass(frozen=True)
class Overlay:
    """A client's pending changes over the vault: the memories as it proposed them (by id),
    and the vault's paths they replace, move or delete."""

    memories: dict[str, Memory]
    hidden: frozenset[str]

    def hides(self, memory_id: str, path: str) -> bool:
        return memory_id in self.memories or path in self.hidden


def overlay(service: MemoryService) -> Overlay | None:
    """The calling client's pending changes, or None when it has none (or does not propose)."""
    client = _asking()
    if not proposing(service.settings, client) or client is None:
        return None
    history = service.history
    tip = history.commit_of(f"refs/heads/{BRANCHES}{slug(client)}")
    if tip is None or history.head() is None:
        return None
    out = history.run("diff", "--name-status", "--no-renames", "-z", f"HEAD...{tip}")
    tokens = [t for t in out.split("\0") if t]
    pairs = [(s[:1], p) for s, p in zip(tokens[::2], tokens[1::2], strict=False)]
    if not pairs:
        return None
    wanted = [p for s, p in pairs if s != "D" and service.vault.is_memory_path(p)]
    memories = {}
    for path, data in _blobs_at(history, tip, wanted).items():
        try:
            memory = service.vault.parse_bytes(path, data)
        except MalformedMemoryError:
            continue
        memories[memory.id] = memory
    return Overlay(memories, frozenset(p for _, p in pairs))


def recall(service: MemoryService, query: str, k: int, filters: Filters) -> list[Hit]:
    """``service.recall``, plus the calling client's matching proposals (``proposed``)."""
    view = overlay(service)
    if view is None:
        return service.recall(query, k=k, filters=filters)
    wider = min(100, k + len(view.hidden))
    hits = [
        h for h in service.recall(query, k=wider, filters=filters) if not view.hides(h.id, h.path)
    ]
    at = filters.at(service.clock())
    found = {i: m for i, m in view.memories.items() if at.accepts(m.info())}
    why = {"proposed": "not accepted yet: full text only, over this client's proposals"}
    floor = (
        service.settings.min_relevance if filters.min_relevance is None else filters.min_relevance
    )
    mine = [
        replace(h, proposed=True)
        for h in asof.full_text_hits(found, query, k, why)
        if h.relevance >= floor
    ]
    return sorted([*hits, *mine], key=lambda h: -h.relevance)[:k]


def get(service: MemoryService, id_or_path: str) -> tuple[Memory, bool]:
    """A memory as the calling client sees it, and whether that is its proposal."""
    view = overlay(service)
    if view is None:
        return service.get(id_or_path), False
    text = id_or_path.strip()
    for memory in view.memories.values():
        if text in (memory.id, memory.path, memory.path.removesuffix(".md")):
            return memory, True
    memory = service.get(id_or_path)
    if view.hides(memory.id, memory.path):
        raise MemoryNotFoundError(
            f"you proposed deleting {memory.path}: until a person accepts or rejects that, "
            "it is gone for you (list_proposals shows it)"
        )
    return memory, False


def page(
    service: MemoryService, filters: Filters, sort: str, limit: int | None, cursor: str | None
) -> tuple[Page, frozenset[str]]:
    """``service.list_memories`` with the calling client's proposals in place, and their ids."""
    view = overlay(service)
    if view is None:
        return service.list_memories(filters, sort, limit, cursor), frozenset()
    at = filters.at(service.clock())
    records = [i for i in service.records(filters) if not view.hides(i.id, i.path)]
    records += [m.info() for m in view.memories.values() if at.accepts(m.info())]
    unreadable = tuple(service.indexing.unreadable.values())
    return Page.of(sort_infos(records, sort), limit, cursor, unreadable), frozenset(view.memories)


__all__ = ["Decision", "Drafts", "Pending", "accept", "pending", "reject", "writer"]
