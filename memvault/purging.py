"""Purge: erase memories from the files, all of git history and every index structure
(privacy requests). The user is told that remotes and clones keep their copies."""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import frontmatter, ids, recovery, stashes
from .errors import InvalidInputError, MemoryNotFoundError, MemvaultError
from .history import PURGED_NAME, History
from .models import Archival, ChangeEvent, Memory, WriteResult, memory_count
from .vault import state_elsewhere

if TYPE_CHECKING:
    from .service import MemoryService

log = logging.getLogger(__name__)


def purge(service: MemoryService, id_or_path: str, reason: str | None) -> WriteResult:
    """Delete the file, rewrite history without it, erase it from the index and catalog."""
    with service._writing():
        memory, present = target(service, id_or_path)
        sha, rewritten = _erase(service, [memory], reason, memory.id, present)
    erased = _forget_derived(service, [memory], rewritten)
    return WriteResult(memory, sha, "purged", erased=tuple(erased))


def target(service: MemoryService, id_or_path: str) -> tuple[Memory, bool]:
    """The memory to purge, and whether its file is in the vault. By id, also one whose
    file is gone but whose history stays: a memory deleted before, or one whose purge was
    killed after its file's deletion was committed (the rewrite had not finished)."""
    try:
        return service.get(id_or_path), True
    except MemoryNotFoundError:
        text = id_or_path.strip()
        if not ids.is_id(text):
            raise
        for path in service.history.paths_holding(f"^id:[[:space:]]*[\"']?{text}"):
            for data in service.history.blob_bytes(service.history.blobs_at([path])).values():
                found = _ID_LINE.findall(frontmatter.block(data.decode("utf-8", "replace")) or "")
                if found and found[-1] == text:
                    return service.vault.parse_bytes(path, data), False
        raise


def not_proposable(command: str) -> InvalidInputError:
    """Why a client whose writes are proposals cannot purge (``command``: what the person
    runs instead, e.g. ``ID --purge``)."""
    return InvalidInputError(
        "this client's writes are proposals (agent_writes): a purge erases history and "
        "cannot be one; forget with mode archive or delete, or ask the person to run "
        f"`memvault forget {command}`"
    )


def purge_many(service: MemoryService, ids: Sequence[str], reason: str | None) -> Archival:
    """Purge several memories with one history rewrite (a confirmed ``forget(filter=...)``).
    The commits name how many, never which: the filter itself may say what was private."""
    from .proposals import Drafts  # here: proposals builds on the service

    if isinstance(service, Drafts):  # a client whose writes are proposals (agent_writes)
        raise not_proposable("--filter ... --purge")
    with service._writing():
        memories = [service.get(i) for i in ids]
        if not memories:
            return Archival(None, (), "purge")
        sha, rewritten = _erase(service, memories, reason, None)
    erased = _forget_derived(service, memories, rewritten)
    return Archival(sha, tuple(memories), "purge", tuple(erased))


def _erase(
    service: MemoryService,
    memories: list[Memory],
    reason: str | None,
    memory_id: str | None,
    present: bool = True,
) -> tuple[str | None, int]:
    """Under the write lock: delete the files, commit, rewrite history without every name
    they ever had, and record the purge in an empty commit. The new commit and how many
    commits were rewritten."""
    names = {m.id: _lineage(service.history, m, present) for m in memories}
    if odd := [n for own, _ in names.values() for n in own if "\n" in n]:
        raise InvalidInputError(f"{odd[0]!r}: a file name holding a newline cannot be purged")
    _refuse_tags_holding(service.history, names)
    # filter-branch needs a clean tree: commit the person's edits first
    recovery.commit_leftovers(service.vault, service.history, service._op_trailers)
    _refuse_changes_left(service)
    what = f"memory {memory_id}" if memory_id else memory_count(len(memories))
    if present:  # else only its history is left to erase
        for memory in memories:
            service.vault.delete(memory.path)
        service.history.commit(
            [m.path for m in memories],
            f"forget: {what} (purge)",
            service._trailers("forget-purge", memory_id),
        )
    from .proposals import drop_worktrees  # here: proposals builds on the service

    # first: a worktree's index refers to the memories' blobs, and gc keeps what it refers to
    drop_worktrees(service)
    with stashes.aside(service.history) as parts:  # the person's stash: purged, and kept
        versions, rewritten, others, spare = _versions(service.history, names)
        paths = {path for _blob, path in versions}
        service.history.purge(versions, paths, parts, others, spare)
    trailers = service._trailers("purge", memory_id)
    # which commits held them: a sync refuses a side that still reaches one of these
    trailers[REWROTE] = " ".join(sorted(rewritten))
    if reason:
        trailers["Memvault-Reason"] = reason
    sha = service.history.commit_empty(f"purge: {what} erased from history", trailers)
    _erase_leftovers(service, [n for own, _ in names.values() for n in own])
    return sha, len(rewritten)


def _erase_leftovers(service: MemoryService, paths: list[str]) -> None:
    """Erase the temporary files that saves killed before their rename left (the memory's
    text beside its file, at any name it had; its paths in memvault's caches; a commit
    message or merge in .git), and the index kept elsewhere while the vault was read-only.
    Under the write lock: no write of memvault's is live."""
    leftovers = service.vault.save_leftovers(paths) + service.history.temp_leftovers()
    elsewhere = state_elsewhere(service.vault.root)  # its index while it was read-only
    if elsewhere.is_dir():
        shutil.rmtree(elsewhere, ignore_errors=True)
        log.info("erased the index kept while the vault was read-only: %s", elsewhere)
    for path in leftovers:
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # another process's cache save renamed it meanwhile
        except OSError as exc:
            log.warning("a purge could not erase the leftover %s: %s", path, exc)
    if leftovers:
        log.info("erased %d temporary file(s) left by interrupted saves", len(leftovers))


def _refuse_changes_left(service: MemoryService) -> None:
    """Refuse (nothing written) while tracked files hold changes memvault never commits (a
    file .memvaultignore hides, a symlink): git rewrites no history over them."""
    out = service.history.run("diff-index", "--name-only", "--no-renames", "-z", "HEAD")
    left = recovery.never_committed(service.vault, [p for p in out.split("\0") if p])
    if left:
        raise MemvaultError(
            f"cannot purge: git rewrites no history over uncommitted changes, and memvault "
            f"never commits these: {'; '.join(left[:3])}. Replace or remove a link or FIFO; "
            f"{recovery.HIDDEN_EDIT_HINT}. Then purge again; nothing was changed"
        )


def _lineage(history: History, memory: Memory, present: bool) -> tuple[list[str], set[str]]:
    """The names the memory's file had and the commits of its own history. A memory whose
    file is gone is followed back from its last version, never from what stands at its
    path now (a person's note saved there since, another memory given the same name)."""
    if present:
        return history.lineage(memory.path, memory_id=memory.id)
    rev, path = history.last_held(memory.id) or (None, memory.path)
    if rev is None:
        return [path], set()  # no version of it in any history: nothing id-less is its own
    return history.lineage(path, rev=rev, memory_id=memory.id)


REWROTE = "Memvault-Rewrote"  # trailer of a purge commit: the original commits that held it
_ID_LINE = re.compile(r"^id:[ \t]*[\"']?([^\"'\s#]+)", re.MULTILINE)


def _refuse_tags_holding(history: History, names: dict[str, tuple[list[str], set[str]]]) -> None:
    """Refuse, before anything is written, a purge a tag would undo: a tag that names one
    of the memory's versions itself (a file, or a folder holding it) rather than a commit
    is moved by no rewrite of history, and keeps the text. The versions (the purge's
    costliest step) are looked up only when some tag names a file or a folder."""
    held: dict[str, set[str]] = {}
    for ref in history.run("for-each-ref", "--format=%(refname)", "refs/tags/").split():
        target = history.run("rev-parse", "--verify", "--quiet", f"{ref}^{{}}", check=False)
        kind = history.run("cat-file", "-t", target.strip(), check=False).strip()
        if kind == "blob":
            held[ref] = {target.strip()}
        elif kind == "tree":
            listing = history.run("ls-tree", "-r", target.strip()).splitlines()
            held[ref] = {line.split()[2] for line in listing if line.strip()}
    blobs = {blob for blob, _ in _versions(history, names)[0]} if held else set()
    for ref, found in held.items():
        if found & blobs:
            name = ref.removeprefix("refs/tags/")
            raise InvalidInputError(
                f"the tag {name!r} names the memory's text itself (a file or folder, not a "
                f"commit), which no rewrite of history moves: delete it (`git -C "
                f"{history.root} tag -d {name}`) and purge again; nothing was written"
            )


def _versions(
    history: History, names: dict[str, tuple[list[str], set[str]]]
) -> tuple[set[tuple[str, str]], set[str], set[str], set[tuple[str, str]]]:
    """Every version of these memories in any commit of any ref, as ``(blob, path)``, the
    commits that changed them, the commits that changed only other notes at their paths
    (whose messages name those notes, not the memories), and the ``(commit, path)`` where
    another note holds the bytes of an id-less version (a later note begun from the same
    template): those stay. A version is a blob whose ``id:`` is the memory's, wherever it
    lies (a person may move and rewrite a note in one commit), or one without an ``id:``
    that a commit of the memory's own history put at one of its paths (a person's note).
    A blob with another id, or an id-less one saved at a path the memory has left (or
    before it came), is another note; so are the same bytes at another path."""
    versions: set[tuple[str, str]] = set()
    commits: set[str] = set()
    others: set[str] = set()
    spare: set[tuple[str, str]] = set()
    for memory_id, (own, lineage) in names.items():
        where = own + history.paths_holding(f"^id:[[:space:]]*[\"']?{memory_id}")
        for path in dict.fromkeys(where):
            changed = history.blobs_at([path])
            for sha, data in history.blob_bytes(changed).items():
                found = _ID_LINE.findall(frontmatter.block(data.decode("utf-8", "replace")) or "")
                if (found[-1] == memory_id) if found else bool(changed[sha] & lineage):
                    elsewhere = set()  # the same bytes there in another note's commits
                    if not found and (rest := changed[sha] - lineage):
                        elsewhere = history.other_lives(sha, path, lineage, rest)
                        spare |= {(commit, path) for commit in elsewhere}
                    versions.add((sha, path))
                    commits |= changed[sha] - elsewhere
                    others |= changed[sha] & elsewhere
                else:
                    others |= changed[sha]
    return versions, commits, others - commits, spare


def _forget_derived(service: MemoryService, memories: list[Memory], rewritten: int) -> list[str]:
    """Erase what the index, the access statistics and the id catalog kept of them."""
    ids = [m.id for m in memories]
    erased = [f"git history ({rewritten} commits rewritten)", *service.index.erase(ids)]
    erased += service.access.erase(ids)
    service.vault.id_map()  # rewrites the id catalog without the purged paths
    erased.append("id catalog")
    service.refresh_provenance()  # history was rewritten: its cache is rebuilt without them
    erased.append("provenance cache")
    paths = tuple(m.path for m in memories)
    service._notify(ChangeEvent(changed=paths, removed=paths), *memories)
    return erased


# -- a purge and a remote ------------------------------------------------------------------
@dataclass(frozen=True)
class _Commit:
    sha: str
    time: int  # committer time (a purge's rewrite keeps the times of what it rewrote)
    purge: bool
    subject: str
    rewrote: frozenset[str] | None  # a purge's original commits (None: a purge from before)
    stamp: str = ""  # author and committer, with times: what a purge's rewrite keeps
    message: str = ""  # kept too, but for the purged names in it

    def held_in(self, side: list[_Commit]) -> list[_Commit]:
        """The commits of ``side`` that held what this purge erased: its original commits
        (a purge recorded before they were: every commit of ``side`` no newer than it)."""
        if self.rewrote is None:
            return [c for c in side if c.time <= self.time and not c.purge]
        return [c for c in side if c.sha in self.rewrote]


@dataclass(frozen=True)
class AfterPurge:
    """How sync goes on past a purge: ``replace`` the remote's history with this vault's,
    or ``adopt`` the remote's purged history (this vault's own commits, if any, replayed
    onto it from ``base``)."""

    kind: str  # replace | adopt
    base: str = ""


def refuse_undoing_a_purge(
    history: History, remote: str, branch: str, ours: str, theirs: str, replace: bool = False
) -> AfterPurge | None:
    """Before sync integrates two diverged histories: refuse when that would bring back what
    a purge erased, because (a) this vault purged and the remote still reaches a commit the
    purge rewrote, or (b) the remote holds a purge this vault has not seen while this vault
    still reaches a commit that purge rewrote. Nothing is changed; the message says what to
    do. Histories that merely diverged (a memory added and purged before any sync, the other
    machine's ordinary work) integrate as usual (None). With ``replace``, case (a) is
    ``replace`` when the remote holds nothing but what this vault's purges rewrote and no
    other branch of it reaches that. Case (b) is ``adopt`` when this vault made no purge of
    its own, nothing but this branch reaches the rewritten commits here, and this vault's
    own commits sit in one line on top of them: the purge then reaches this vault."""
    mine = _commits(history, f"{theirs}..{ours}")
    other = _commits(history, f"{ours}..{theirs}")
    purged, older = _first_held([c for c in mine if c.purge], other)
    if purged and older:
        rewritten = {c.sha for p in mine if p.purge for c in p.held_in(other)}
        twins = _rewrites(history, other, mine, ours)
        extra = [c for c in other if c.sha not in rewritten | twins]
        also = _reached_elsewhere(history, remote, branch, rewritten)
        if replace and not extra and not also:
            return AfterPurge("replace")
        raise MemvaultError(
            f"sync refused: this vault purged a memory ({purged.sha[:12]}, not on {remote} "
            f"yet), but {remote}/{branch} still holds {len(older)} commit(s) the purge "
            "rewrote here, which hold the purged text: integrating them would bring it back. "
            f"Nothing was changed. {_finish_here(history, remote, branch, theirs, extra, also)}"
        )
    purged, older = _first_held([c for c in other if c.purge], mine)
    if purged and older:
        rewritten = {c.sha for p in other if p.purge for c in p.held_in(mine)}
        twins = _rewrites(history, mine, other, theirs)
        own = [c for c in mine if c.sha not in rewritten | twins]
        base = _own_base(history, ours, [c.sha for c in own])
        recorded = all(p.rewrote is not None for p in other if p.purge)  # else by time
        also = _reached_elsewhere(history, remote, branch, rewritten)
        if base and recorded and not also and not any(c.purge for c in own):
            return AfterPurge("adopt", base)
        raise MemvaultError(
            f"sync refused: {remote}/{branch} was rewritten by a purge on another machine "
            f"({purged.sha[:12]} {purged.subject!r}), and this vault still holds "
            f"{len(older)} commit(s) that purge rewrote there, which hold the purged text: "
            "syncing would bring it back. Nothing was changed. "
            + _why_not_taken(own, base, recorded, also)
            + _clone_anew(history, remote, branch)
        )
    return None


def _why_not_taken(own: list[_Commit], base: str | None, recorded: bool, also: list[str]) -> str:
    """Why this vault could not take the remote's purge by itself."""
    if also:
        return f"Other refs here still reach the purged history ({', '.join(also[:5])}). "
    if any(c.purge for c in own):
        return "This vault made a purge of its own since its last sync. "
    if not recorded:
        return "That purge comes from an older memvault, which did not name what it rewrote. "
    if base is None:
        return "This vault's own commits since its last sync include merges. "
    return ""


def _clone_anew(history: History, remote: str, branch: str) -> str:
    url = history.run("remote", "get-url", remote, check=False).strip() or remote
    return (
        f"Clone the vault anew: `memvault init NEW_FOLDER --clone {url}`; purge there again "
        "anything this vault purged since its last sync, copy into it the memory files this "
        f"vault wrote since (`git -C {history.root} log --name-status "
        f"{remote}/{branch}@{{1}}..HEAD` lists them; its next write or sync commits them), "
        f"then delete {history.root}, which still holds the purged text"
    )


def _finish_here(
    history: History,
    remote: str,
    branch: str,
    theirs: str,
    extra: list[_Commit],
    also: list[str],
) -> str:
    """How to finish a purge on a remote that still holds the text it erased."""
    root, where = history.root, f"{remote}/{branch}"
    if foreign := [c for c in extra if c.purge]:
        return (
            f"{where} also holds a purge made on another machine ({foreign[0].sha[:12]} "
            f"{foreign[0].subject!r}): replacing the remote would undo that purge, taking it "
            f"would undo this one. {_clone_anew(history, remote, branch)}"
        )
    if also:
        return (
            f"Other refs still reach the purged history ({', '.join(also[:5])}): delete or "
            "rewrite them (on the remote too), then `memvault sync --replace-remote`"
        )
    if not extra:
        return (
            f"{where} holds nothing else this vault lacks: `memvault sync --replace-remote` "
            "replaces its history with this vault's and finishes the purge there; other "
            "clones take the purge at their next sync (or refuse and say how)"
        )
    named = ", ".join(f"{c.sha[:12]} {c.subject!r}" for c in extra[:3])
    return (
        f"{where} also holds {len(extra)} commit(s) no purge here rewrote ({named}"
        f"{' ...' if len(extra) > 3 else ''}), which replacing it would drop: copy what "
        f"you want of them into this vault (`git -C {root} log --stat HEAD..{theirs}`), "
        f"then replace the remote's history: `git -C {root} push --force-with-lease="
        f"{branch}:{theirs} {remote} {branch}`; other clones take the purge at their next "
        "sync (or refuse and say how)"
    )


def _rewrites(history: History, side: list[_Commit], against: list[_Commit], tip: str) -> set[str]:
    """The commits of ``side`` that a purge's rewrite turned into one of ``against`` (or
    the reverse): a commit after a purged memory's first, which only changed other files,
    is rewritten too. Its twin (``side`` holds the originals) keeps its authors, times and
    message but for the purged names in it, and their trees differ only in files that no
    commit of ``tip``'s history ever held (the purged ones)."""
    by_stamp: dict[str, list[_Commit]] = {}
    for commit in against:
        by_stamp.setdefault(commit.stamp, []).append(commit)
    found: set[str] = set()
    ever: set[str] | None = None
    for commit in side:
        for twin in by_stamp.get(commit.stamp, []):
            if not _rewritten_message(commit.message, twin.message):
                continue
            if ever is None:
                names = history.run("log", "--name-only", "--no-renames", "--format=", "-z", tip)
                ever = {name for name in names.split("\0") if name}
            differ = history.run("diff", "--name-only", "--no-renames", "-z", commit.sha, twin.sha)
            if not {name for name in differ.split("\0") if name} & ever:
                found.add(commit.sha)
                break
    return found


def _rewritten_message(original: str, rewritten: str) -> bool:
    """Whether ``rewritten`` is ``original`` with some names replaced by the purge's mark."""
    parts = rewritten.split(PURGED_NAME)
    pattern = ".+?".join(re.escape(part) for part in parts)
    return re.fullmatch(pattern, original, re.DOTALL) is not None


def _own_base(history: History, ours: str, own: list[str]) -> str | None:
    """The commit this vault's own commits (``own``, none a merge) sit on in one line,
    ``ours`` when there are none; None when they do not (merges, or mixed with others)."""
    if not own:
        return ours
    parents = {}
    for line in history.run("rev-list", "--parents", "--no-walk", *own).splitlines():
        sha, *rest = line.split()
        parents[sha] = rest
    if any(len(rest) != 1 for rest in parents.values()):
        return None
    bases = {rest[0] for rest in parents.values()} - set(own)
    if len(bases) != 1:
        return None
    base = bases.pop()
    between = history.run("rev-list", f"{base}..{ours}").split()
    return base if sorted(between) == sorted(own) else None


def _reached_elsewhere(history: History, remote: str, branch: str, commits: set[str]) -> list[str]:
    """The refs other than this branch and the remote's copy of it (other branches and
    remote branches, tags, proposals, every stash entry, their reflogs) that still reach
    one of ``commits``."""
    own = {f"refs/heads/{branch}", f"refs/remotes/{remote}/{branch}", f"refs/remotes/{remote}/HEAD"}
    refs = [r for r in history.run("for-each-ref", "--format=%(refname)").split() if r not in own]
    found = []
    for ref in refs:
        logged = history.run("reflog", "show", "--format=%H", ref, "--", check=False).split()
        tips = list(dict.fromkeys([ref, *logged]))
        if commits & set(history.run("rev-list", *tips, "--").split()):
            found.append(ref.removeprefix("refs/"))
    return found


def _first_held(purges: list[_Commit], side: list[_Commit]) -> tuple[_Commit | None, list[_Commit]]:
    """The first of ``purges`` whose erased commits ``side`` still holds, and those."""
    for purge in purges:
        if held := purge.held_in(side):
            return purge, held
    return None, []


def _commits(history: History, spec: str) -> list[_Commit]:
    out = history.run("log", "--format=%H %ct%x00%an %ae %at %cn %ce%x00%s%x00%B%x01", spec)
    found = []
    for record in out.split("\x01"):
        head, _, rest = record.strip("\n").partition("\0")
        stamp, _, rest = rest.partition("\0")
        subject, _, body = rest.partition("\0")
        sha, _, time = head.partition(" ")
        if sha:
            lines = body.splitlines()
            purge = "Memvault-Op: purge" in lines
            listed = [ln.split(":", 1)[1].split() for ln in lines if ln.startswith(f"{REWROTE}:")]
            rewrote = frozenset(listed[0]) if listed else None
            found.append(
                _Commit(sha, int(time), purge, subject, rewrote, f"{stamp} {time}", body.strip())
            )
    return found
