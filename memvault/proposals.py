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
branch merges the vault's branch (its own version winning where both changed a file), and
every file no pending proposal changes is given the vault's version (:func:`_restore`), so
the worktree is the vault plus what waits for review. :func:`accept` applies a proposal's
change to the vault under the write lock (one commit attributed to the person, naming the
proposal and its client; index, provenance and subscribers as for any write), then records
the acceptance on the branch; :func:`reject` reverts it on the branch (one commit,
attributed). A proposal whose files changed in the vault since is refused, never merged
over, and so is one that removes a memory the person deleted or moved since. Nothing is
decided or proposed while the vault is mid-merge or mid-rebase.

An MCP call whose client gave no name proposes as ``unnamed`` (``server.tools`` names it): a
missing name never turns proposal mode into direct writes.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import asof, ids, purging
from .config import Settings
from .errors import (
    GitError,
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    MemvaultError,
    StaleRevisionError,
)
from .history import GITS_OWN_DIFF, History, format_message
from .index import Index
from .models import (
    ChangeEvent,
    Filters,
    Hit,
    Memory,
    MemoryInfo,
    Page,
    Similar,
    lapsed,
    same_type,
    sort_infos,
)
from .note import clean_tags, strip_title, title_from
from .profile import SCHEMA_PATH, is_field_path, refusal
from .retrieval import Retrieval, judged
from .service import MemoryService, current_client
from .sync import IndexSync
from .syncing import unmerged_files
from .vault import Vault

log = logging.getLogger(__name__)

BRANCHES = "memvault/proposals/"
FOLDER = "proposals"  # under .memvault/
MODES = ("direct", "propose")


# -- who proposes ------------------------------------------------------------------------
def client_name(client: str) -> str:
    """A client's name without the version the MCP adapter appends (``cursor/1.2``)."""
    name, slash, version = client.rpartition("/")
    return name if slash and name and version[:1].isdigit() else client


def slug(client: str) -> str:
    """The client's name as a branch and folder name: ``Claude Code/1.0`` -> ``claude-code``.
    A name the slug would lose (``克劳德``, ``???``, past 60 letters) gets a hash of it too,
    so two such clients never share a branch and see each other's proposals."""
    name = client_name(client)
    text = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")
    if text and len(text) <= 60 and name.isascii():  # punctuation may go: `Claude Code`
        return text
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{text[:48].rstrip('-_') or 'client'}-{digest}"


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
    name: str = ""  # the client's slug: its branch and folder

    def __post_init__(self) -> None:
        main = self._main
        self.indexing = IndexSync(self.vault, self.index, self.settings)
        self.provenance = main.provenance
        self.access = main.access
        self.retrieval = _Judging(main)

    @property
    def _main(self) -> MemoryService:
        assert self.main is not None, "Drafts is made by proposals.writer"
        return self.main

    def _writing(self) -> AbstractContextManager[None]:
        return self._checked_out()

    @contextmanager
    def _checked_out(self) -> Iterator[None]:
        """The vault's lock, with the worktree checked out again if a purge dropped it after
        :func:`writer` looked (its files and index then went with it)."""
        main = self._main
        with main._writing():
            _refuse_unfinished(main.history)
            if not (self.vault.root / ".git").is_file():
                branch = _worktree(main, self.vault.root, self.name)
                _follow(main, branch, self.name, {"Memvault-Op": "follow"})
                self.index.close()
                self.index = _drafts_index(self.vault, self.settings)
                self.indexing = IndexSync(self.vault, self.index, self.settings)
            yield

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
            raise purging.not_proposable("ID --purge")
        return _proposed(super().forget(id_or_path, mode, reason, op))


class _Judging(Retrieval):
    """The vault's retrieval (its index, vectors included: consolidate's pairs are the
    vault's), whose duplicate check also sees the asking client's pending proposals: what
    it proposed and is waiting for review is remembered as much as what the vault holds
    (a vault memory its proposals changed is judged as they changed it)."""

    def __init__(self, main: MemoryService) -> None:
        base = main.retrieval
        super().__init__(base.vault, base.indexing, base.clock, base.access)
        self.main = main

    def similar(
        self, content: str, type: str, title: str | None, tags: Sequence[str], k: int = 5
    ) -> list[Similar]:
        found = super().similar(content, type, title, tags, k)
        view = overlay(self.main)
        if view is None:
            return found
        found = [s for s in found if not view.hides(s.id, s.path)]
        now = self.clock()
        pending = [
            m for m in view.memories.values() if m.status == "active" and not lapsed(m.expires, now)
        ]
        title = title or title_from(content)
        cosines: list[float | None] = [
            *self.indexing.index.cosines(title, clean_tags(tags), content, pending)
        ]  # none without vectors: then the same text only
        for memory, measured in zip(pending, cosines or [None] * len(pending), strict=True):
            old = strip_title(memory.body)
            relation, cosine = judged(content, old, measured, same_type(memory.type, type))
            if relation:
                near = (memory.id, memory.path, memory.title, round(cosine, 4), relation)
                found.append(Similar(*near, proposed=True))
        return sorted(found, key=lambda s: -s.cosine)[:k]


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
    name = slug(client)
    root = _root(service, name)
    with service._writing():
        _refuse_unfinished(service.history)
        branch = _worktree(service, root, name)
        _follow(service, branch, name, {"Memvault-Op": "follow"})
    vault = Vault(root, service.settings.max_file_bytes)
    # what git says of the vault's files: ids of id-less files are the same in the worktree
    vault.origins, vault.edited = service.vault.origins, service.vault.edited
    index = _drafts_index(vault, service.settings)
    drafts = Drafts(vault, branch, service.settings, index, service.client, main=service)
    drafts.name = name
    drafts.clock = lambda: service.clock()  # noqa: PLW0108 (tests move the vault's clock)
    try:
        yield drafts
    finally:
        drafts.index.close()


def _drafts_index(vault: Vault, settings: Settings) -> Index:
    """The worktree's small text-only index (what the client's proposals wrote, for ids)."""
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    text_only = replace(settings, embedder="none")
    return Index(vault.state_dir / "index", text_only, load_embedder=False)


def _refuse_unfinished(history: History) -> None:
    if history.unfinished():
        raise InvalidInputError(
            "a git merge or rebase is in progress in the vault: finish or abort it "
            "(`git merge --abort` / `git rebase --abort`), then accept, reject or propose again"
        )


def _checkout(root: Path, settings: Settings) -> History:
    """A proposal worktree's git: it never looks above the worktree for a repository, so a
    checkout removed meanwhile fails instead of reaching the vault's own repository (every
    git process of it, blob reads included)."""
    history = History(root, settings.author_name, settings.author_email)
    history.base_env = {"GIT_CEILING_DIRECTORIES": str(root.parent)}
    return history


def _worktree(service: MemoryService, root: Path, name: str) -> History:
    """The client's branch, checked out at ``root`` (created from the vault's HEAD). A
    checkout whose branch a person deleted (``git update-ref -d``, the ref file removed) goes
    with it: its proposals were dropped, and it has no history to merge the vault into."""
    history, branch = service.history, BRANCHES + name
    kept = history.commit_of(f"refs/heads/{branch}") is not None
    if not kept or not (root / ".git").is_file():
        # what a write left after a purge dropped the checkout: not a checkout, maybe erased
        # text; or something a person put there
        if root.is_symlink() or root.is_file():
            root.unlink()
        shutil.rmtree(root, ignore_errors=True)
        history.run("worktree", "prune")  # and the registration of a folder gone
        if kept:
            history.run("worktree", "add", "--quiet", str(root), branch)
        else:
            history.run("worktree", "add", "--quiet", "-b", branch, str(root), "HEAD")
    return _checkout(root, service.settings)


def _follow(
    service: MemoryService,
    branch: History,
    name: str,
    trailers: dict[str, str],
    skip: str | None = None,
) -> None:
    """Bring the branch up to the vault in one commit: leftovers of a crashed proposal
    committed, the vault's HEAD merged in (the branch's version winning where both changed
    a file), and the vault's version of every file no pending proposal (but ``skip``)
    changes. An acceptance (``Memvault-Accepted``) is recorded even when nothing changed."""
    _recover(branch)
    head = service.history.head()
    if head is None:
        return
    merging = not branch.is_ancestor(head, "HEAD")
    if merging:
        args = ["merge", "--quiet", "--no-ff", "--no-commit", "-X", "ours", head]
        try:
            branch.run(*args)
        except GitError:
            if not _keep_ours(branch):  # not a conflict: leave the branch as it was
                branch.run("merge", "--abort", check=False)
                raise
    restored = _restore(service, branch, name, skip)
    if merging or restored or "Memvault-Accepted" in trailers:
        message = format_message("proposals: follow the vault", trailers)
        branch.run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", message)


def _restore(
    service: MemoryService, branch: History, name: str, skip: str | None = None
) -> list[str]:
    """Put the vault's version of each file no pending proposal (but ``skip``) changes in
    the worktree, staged: what ``-X ours`` kept of a decided proposal, what an accepted one
    left at a path the vault gave another memory, what a rejected one reverted to. The
    paths."""
    head = service.history.head()
    if head is None:
        return []
    waiting = {p for x in _pending_of(service.history, name) if x.key != skip for p in x.paths}
    out = branch.run("diff", "--name-only", "--no-renames", "-z", head)
    stale = [p for p in out.split("\0") if p and p not in waiting]
    for at in range(0, len(stale), 500):
        chunk = stale[at : at + 500]
        listed = branch.run("ls-tree", "-r", "--name-only", "-z", head, "--", *chunk)
        kept = [p for p in listed.split("\0") if p]  # in the vault: its version
        gone = [p for p in chunk if p not in set(kept)]  # not in the vault: removed
        if kept:
            branch.run("checkout", "--quiet", head, "--", *kept)
        if gone:  # forced: a revert being recorded (reject) may have staged them
            branch.run("rm", "--quiet", "--force", "--ignore-unmatch", "--", *gone)
    return stale


def _recover(branch: History) -> None:
    """Commit what a crash left in the worktree, as a proposal (a person reviews it); a
    merge a crash interrupted is dropped (the next follow makes it again), and so is a
    reject's revert (git's REVERT_HEAD: the proposal still waits; rejecting it again does
    it), never made a proposal of its own."""
    if branch.unfinished():
        branch.run("merge", "--abort", check=False)
    if (branch.git_dir() / "REVERT_HEAD").exists():
        branch.run("reset", "--hard", "--quiet", "HEAD")
    leftovers = branch.uncommitted()
    if leftovers:
        trailers = {"Memvault-Op": "recover"} | _proposal_key()
        branch.commit(leftovers, "recover: an unfinished proposal", trailers)


def _keep_ours(branch: History) -> bool:
    """Settle what ``-X ours`` leaves unmerged (a file changed on the branch and deleted in
    the vault, or the reverse) with the branch's side; False when nothing was unmerged."""
    unmerged = unmerged_files(branch)
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
    """client -> how many of its proposals wait for review (clients with none left out):
    one ``git log`` per client."""
    counts = {name: len(_pending_of(service.history, name)) for name in clients(service)}
    return {name: n for name, n in counts.items() if n}


def mine(service: MemoryService) -> tuple[bool, list[Pending]]:
    """Whether the calling client proposes, and its proposals waiting for review."""
    client = _asking()
    if not proposing(service.settings, client) or client is None:
        return False, []
    return True, pending(service, client)


def _pending_of(history: History, name: str) -> list[Pending]:
    found, done = _proposals_of(history, name)
    return [p for p in found if p.key not in done]


def _proposals_of(history: History, name: str) -> tuple[list[Pending], dict[str, str]]:
    """The client's proposals on its branch, decided or not, and key -> accepted/rejected
    of the decided ones."""
    branch = f"refs/heads/{BRANCHES}{name}"
    if history.commit_of(branch) is None or history.head() is None:
        return [], {}
    done: dict[str, str] = {}
    found = []
    for commit in history.commits_since("HEAD", branch):  # merges list no files
        trailers = commit.trailers
        for marker, decision in (
            ("Memvault-Accepted", "accepted"),
            ("Memvault-Rejected", "rejected"),
        ):
            if marker in trailers:
                done[trailers[marker]] = decision
        key = trailers.get("Memvault-Proposed")
        if key:  # only proposals carry one (never a merge of the vault)
            op, memory = trailers.get("Memvault-Op", "?"), trailers.get("Memvault-Id")
            by = trailers.get("Memvault-Client")
            paths = tuple(sorted({*commit.files, *(old for old, _ in commit.renames)}))
            sha, time, subject = commit.sha, commit.date, commit.subject
            found.append(Pending(sha[:12], name, sha, key, time, subject, op, memory, by, paths))
    return found, done


def _changes(history: History, commit: str) -> list[tuple[str, str]]:
    """(status A/M/D, path) of each file ``commit`` changed against its parent."""
    out = history.run(
        "diff-tree", "-r", "--no-commit-id", "--no-renames", "--name-status", "-z", commit
    )
    tokens = [t for t in out.split("\0") if t]
    return [(s[:1], p) for s, p in zip(tokens[::2], tokens[1::2], strict=False)]


def diff(service: MemoryService, proposal: Pending) -> str:
    """The proposal's change as a unified diff."""
    return service.history.run(*GITS_OWN_DIFF, f"{proposal.commit}^", proposal.commit)


def _find(service: MemoryService, proposal_id: str) -> Pending:
    wanted = proposal_id.strip().lower()
    found = [p for p in pending(service) if wanted and p.commit.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidInputError(
            f"no pending proposal {proposal_id!r}{_decided(service, wanted)}: "
            "`memvault review` lists those waiting"
        )
    raise InvalidInputError(f"{proposal_id!r} names several proposals: give more of the id")


def _decided(service: MemoryService, wanted: str) -> str:
    """`` (it was accepted already)`` when ``wanted`` names one decided proposal, else ""."""
    said = set()
    for name in clients(service) if wanted else ():
        found, done = _proposals_of(service.history, name)
        said |= {done[p.key] for p in found if p.commit.startswith(wanted) and p.key in done}
    return f" (it was {said.pop()} already)" if len(said) == 1 else ""


# -- accepting and rejecting -------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What accepting or rejecting one proposal did."""

    proposal: Pending  # accepted: its subject names the paths written (see _renamed)
    action: str  # accepted | rejected
    commit: str | None  # the vault's commit (accepted) or the branch's (rejected)
    paths: tuple[str, ...]  # files changed in the vault (accepted)


def accept(service: MemoryService, proposal_id: str) -> Decision:
    """Apply a proposal to the vault as one commit by the person; record it on the branch."""
    with service._writing():
        _refuse_unfinished(service.history)
        proposal = _find(service, proposal_id)
        plan, moved = _plan(service, proposal)
        proposal = replace(proposal, subject=_renamed(proposal.subject, moved))
        trailers = service._trailers("accept", proposal.memory)
        trailers |= {
            "Memvault-Proposal": proposal.commit,
            "Memvault-Proposed-By": proposal.by or proposal.client,
        }
        paths = [path for path, _ in plan]
        subject = f"accept: {proposal.subject} (proposal {proposal.id})"
        sha = _apply(service, plan, subject, trailers)
        unrecorded = _record(service, proposal, sha)
    if paths:
        service.sync_index(paths)
        service.refresh_provenance()
        service.publish(_event(plan))
    if unrecorded is not None:  # the vault's commit stands, indexed and announced
        raise unrecorded
    return Decision(proposal, "accepted", sha, tuple(paths))


def _record(service: MemoryService, proposal: Pending, sha: str | None) -> MemvaultError | None:
    """Record the acceptance on the proposal's branch (step 2's follow, with a marker); what
    to tell the person when git could not, after the vault took the proposal."""
    name = proposal.client
    marker = {"Memvault-Op": "accepted", "Memvault-Accepted": proposal.key}
    try:
        _follow(service, _worktree(service, _root(service, name), name), name, marker, proposal.key)
    except GitError as exc:
        done = f"commit {sha[:12]}" if sha else "it held the change already"
        return MemvaultError(
            f"proposal {proposal.id} is in the vault ({done}), but git could not mark it "
            f"accepted on {BRANCHES}{name} ({exc.reason}), so `memvault review` still lists "
            f"it: once git works again, `memvault review accept {proposal.id}` marks it"
        )
    return None


def _apply(
    service: MemoryService,
    plan: Sequence[tuple[str, bytes | None]],
    subject: str,
    trailers: dict[str, str],
) -> str | None:
    """Write the plan to the vault and commit it as the person (under ``_writing``, which
    puts the files back as they were when git cannot commit: recovery.writing)."""
    vault, paths = service.vault, [path for path, _ in plan]
    if not paths:
        return None
    for path, data in plan:
        if data is None:
            vault.delete(path)
        else:
            vault.write(path, data)
    return service.history.commit(paths, subject, trailers, as_person=True)


def _event(plan: Sequence[tuple[str, bytes | None]]) -> ChangeEvent:
    return ChangeEvent(
        changed=tuple(p for p, _ in plan),
        added=tuple(p for p, d in plan if d is not None),
        removed=tuple(p for p, d in plan if d is None),
    )


def _plan(
    service: MemoryService, proposal: Pending
) -> tuple[list[tuple[str, bytes | None]], dict[str, str]]:
    """(path, new bytes or None to delete) for each file to change in the vault, and the
    proposed path -> the free one written instead of each path another memory took
    meanwhile; refused when a file the proposal changed was changed in the vault since it
    was proposed."""
    history, vault = service.history, service.vault
    changes = _changes(history, proposal.commit)
    before = _blobs_at(history, f"{proposal.commit}^", [p for s, p in changes if s != "A"])
    after = _blobs_at(history, proposal.commit, [p for s, p in changes if s != "D"])
    plan: list[tuple[str, bytes | None]] = []
    moved: dict[str, str] = {}
    gone: list[str] = []  # files it removes that are gone from the vault already
    done: set[str] = set()  # files already as it wants them
    for status, path in changes:
        current = vault.read_regular(path) if vault.abspath(path).exists() else None
        wanted = after.get(path)
        if current == wanted:  # already so (accepted before a crash, or the same edit by hand)
            done.add(path)
            if status == "D":
                gone.append(path)
            continue
        if current != before.get(path):
            if status == "A" and is_field_path(path):  # a field's file is the field
                raise StaleRevisionError(
                    f"{path} was set in the vault since proposal {proposal.id} was made: "
                    "nothing was accepted and the profile keeps its value. Reject it "
                    f"(`memvault review reject {proposal.id}`) and set it by hand (`memvault "
                    f"profile {path[len('profile/') : -len('.md')]} VALUE`) if you want it"
                )
            if status == "A":  # another memory took the path meanwhile: keep both
                folder, _, name = path.rpartition("/")
                moved[path] = vault.free_path(folder, name.removesuffix(".md"))
                plan.append((moved[path], wanted))
                continue
            if current is None and status == "M" and _was_in_vault(history, path):
                _refuse_lost(service, proposal, path, before[path], done, True, "change")
            raise StaleRevisionError(
                f"{path} in the vault is not what proposal {proposal.id} changed (it changed "
                "since, or an earlier proposal that made it is not accepted yet): accept that "
                f"one first, or reject this one (`memvault review reject {proposal.id}`) and "
                "edit the memory by hand"
            )
        plan.append((path, wanted))
    for path in gone:
        _refuse_lost(service, proposal, path, before[path], done, bool(plan))
    _refuse_unfit(service, proposal, plan)
    return plan, moved


def _refuse_unfit(
    service: MemoryService, proposal: Pending, plan: Sequence[tuple[str, bytes | None]]
) -> None:
    """Refuse a proposed profile field the vault's schema refuses now (it changed since):
    the field would be written and read as unset."""
    for path, data in plan:
        problem = refusal(service.vault, path, data) if data and is_field_path(path) else None
        if problem:
            raise InvalidInputError(
                f"proposal {proposal.id} sets a profile field the vault's schema refuses now "
                f"({problem}): nothing was accepted. Reject it "
                f"(`memvault review reject {proposal.id}`), or fix {SCHEMA_PATH} first"
            )


def _was_in_vault(history: History, path: str) -> bool:
    """Whether the vault ever held ``path`` (a person moved or deleted it since), rather than
    only an earlier proposal not accepted yet."""
    return bool(history.run("log", "-1", "--format=%h", "HEAD", "--", path).strip())


def _renamed(subject: str, moved: dict[str, str]) -> str:
    """A proposal's subject naming the paths written instead of those another memory took."""
    for old, new in moved.items():
        literal = new.replace("\\", "\\\\")  # a replacement, not a template
        subject = re.sub(rf"(?<![^\s(]){re.escape(old)}(?=$|[\s,;)])", literal, subject)
    return subject


def _refuse_lost(
    service: MemoryService,
    proposal: Pending,
    path: str,
    was: bytes,
    done: set[str],
    more: bool,
    then: str = "forget",
) -> None:
    """Refuse a proposal that removes ``path`` (was ``was``) when the person moved that
    memory since (it lives elsewhere in the vault, not where the proposal already put it),
    or deleted it while something of the proposal is left to write (``more``: an archive's
    copy in archive/ would bring it back). Each half of a move looks fine alone: the file
    to remove is gone, the one to add is new. A deletion the person made as proposed is
    left alone: nothing to do. A proposal that changes ``path`` (``then``: "change") is
    refused the same way, saying where the memory went."""
    vault = service.vault
    try:
        memory_id = vault.parse_bytes(path, was).id
    except MalformedMemoryError:
        return  # not a memory (binary, not UTF-8): nothing to lose or duplicate
    where = [p for p in vault.id_map().get(memory_id, []) if p not in done]
    if where:
        happened = f"was moved to {', '.join(where)} in the vault"
        then = f" and {then} it at {where[0]} by hand if you still want to"
    elif more:
        happened, then = "was deleted from the vault", "; the memory stays deleted"
    else:
        return  # deleted by hand, as proposed: nothing left to do
    raise StaleRevisionError(
        f"{path} (memory {memory_id}) {happened} since proposal {proposal.id} "
        f"({proposal.subject}) was made: nothing was accepted. The proposal still waits; "
        f"reject it (`memvault review reject {proposal.id}`){then}"
    )


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
        _refuse_unfinished(service.history)
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
        restored = _restore(service, branch, proposal.client, skip=proposal.key)
        trailers = service._trailers("reject", proposal.memory)
        trailers["Memvault-Rejected"] = proposal.key
        subject = f"reject: {proposal.subject} (proposal {proposal.id})"
        paths = list(dict.fromkeys([*proposal.paths, *restored]))
        sha = branch.commit(paths, subject, trailers, as_person=True)
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
    history, name = service.history, slug(client)
    # what its pending proposals changed (none without a branch), never what the branch
    # kept of decided ones
    changed = sorted({p for x in _pending_of(history, name) for p in x.paths})
    if not changed:
        return None
    wanted = [p for p in changed if service.vault.is_memory_path(p)]  # the rest only hide
    memories = {}
    for path, data in _blobs_at(history, f"refs/heads/{BRANCHES}{name}", wanted).items():
        try:
            memory = service.vault.parse_bytes(path, data)
        except MalformedMemoryError:
            continue
        memories[memory.id] = memory
    return Overlay(memories, frozenset(changed))


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
