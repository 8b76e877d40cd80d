"""Sync through ordinary git remotes: commit pending edits, fetch, integrate, push.

Fetch and push run outside the vault's write lock (they touch no file: a slow or absent
network never holds up a write); integrating runs under it. Local commits are rebased
onto the remote when that applies cleanly; otherwise the two histories are merged and
every memory git cannot merge is merged here (:mod:`merging`), so no side is lost: the
other side's text goes under a ``## Conflicting version`` heading and the memory's
lifecycle becomes ``conflict`` until :func:`resolve_conflict` or a person settles it.
A failure midway aborts the rebase or merge: the repository is never left half-way.
Offline is normal: a failed fetch or push is reported (result and status), not raised.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import frontmatter, incoming, interrupted, merging, purging, recovery
from .config import Settings
from .errors import GitError, InvalidInputError, MalformedMemoryError, MemvaultError
from .history import History, format_message
from .models import EVERY, ChangeEvent, WriteResult
from .template import create_vault, exclude_state_dir
from .vault import IGNORE_FILE, STATE_DIR

if TYPE_CHECKING:
    from .service import MemoryService

log = logging.getLogger(__name__)

STATE_FILE = "sync.json"
Pause = Callable[[], AbstractContextManager[Any]]  # held while git rewrites the tree
REPLACED = "replaced the remote's history"  # sync --replace-remote, after a purge
ADOPTED = "took the remote's purge"  # the remote was purged elsewhere: so is this vault
ATTEMPTS = 2  # a push refused because the remote moved meanwhile: fetch and integrate again
MOVED = "the remote moved meanwhile"
# `merge=union` in .gitattributes (advice for obsidian-git) has git glue both sides' lines
# together: frontmatter keys twice, two bodies in one, no conflict. memvault's own rebase
# and merge run it as git's line merge instead for notes (.md), so overlaps reach the memory
# merge; other files keep their union.
_LINE_MERGE = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "merge.union.driver",
    "GIT_CONFIG_VALUE_0": "case %P in *.[mM][dD]) git merge-file --quiet --marker-size=%L "
    "%A %O %B ;; *) git merge-file --quiet --union %A %O %B ;; esac",
}
_running: ContextVar[bool] = ContextVar("memvault_sync_running", default=False)


_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(root: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(Path(root).resolve(), threading.Lock())


def running() -> bool:
    """Whether the caller is inside a sync (its changes come from the remote: the
    sync-after-writes countdown ignores them)."""
    return _running.get()


@dataclass(frozen=True)
class SyncResult:
    """What one sync did."""

    remote: str
    branch: str
    action: str  # up to date | fast-forward | rebased | merged | offline | refused | ...
    fetched: bool
    pushed: int  # commits sent to the remote
    changed: tuple[str, ...] = ()  # files the remote's commits changed here
    conflicts: tuple[str, ...] = ()  # memories now holding both versions (status: conflict)
    error: str | None = None  # why fetching or pushing failed (the vault is fine)
    commit: str | None = None  # HEAD after the sync
    time: str = ""


@dataclass(frozen=True)
class _Integrated:
    action: str
    conflicts: tuple[str, ...] = ()
    lease: str | None = None  # REPLACED: the remote's tip that was checked
    purged: dict[str, str] = field(default_factory=dict)  # ADOPTED: path -> id it erased


@dataclass(frozen=True)
class _Consent:
    """What the person allowed this sync to do beyond exchanging memories."""

    replace_remote: bool = False
    accept_settings: bool = False


def sync(
    service: MemoryService,
    remote: str | None = None,
    pause: Pause | None = None,
    replace_remote: bool = False,
    accept_settings: bool = False,
) -> SyncResult:
    """Commit pending edits, fetch, integrate and push; re-index what changed.

    ``pause`` (default: ``service.pause``, the running watcher's) is held while git
    rewrites the tree. ``replace_remote``: when this vault purged and the remote holds
    nothing but the commits the purge rewrote, push over them (the purge reaches it).
    ``accept_settings``: take the remote's change to a setting that decides what this
    machine trusts (:mod:`incoming`; refused otherwise)."""
    try:
        return _sync(service, remote, pause, _Consent(replace_remote, accept_settings))
    except MemvaultError as exc:  # status shows it, not an older sync that went well
        now = service.clock().replace(microsecond=0).isoformat()
        save_state(
            service, SyncResult(remote or "", "", "refused", False, 0, error=str(exc), time=now)
        )
        raise


def _sync(
    service: MemoryService, remote: str | None, pause: Pause | None, consent: _Consent
) -> SyncResult:
    history = service.history
    with service.vault.write_lock(service.settings.lock_timeout):
        interrupted.undo(service.vault, history)  # a killed sync's merge or rebase
    branch = _branch(history)
    name = _remote(history, branch, remote)
    _same_branch(history, name, branch)
    changed: list[str] = []
    inside = _running.set(True)
    try:
        with _lock_for(service.root):  # the tool, the schedule and after-writes take turns
            for _ in range(ATTEMPTS):
                result = _round(
                    service, name, branch, pause or service.pause or nullcontext, consent
                )
                changed += result.changed
                if result.error is None or MOVED not in result.error:
                    break
    finally:
        _running.reset(inside)
    final = replace(result, changed=tuple(dict.fromkeys(changed)))
    save_state(service, final)
    if final.error:
        log.warning("%s", final.error)
    return final


def _round(
    service: MemoryService, remote: str, branch: str, pause: Pause, consent: _Consent
) -> SyncResult:
    """One fetch, integrate (under the write lock), push."""
    history = service.history
    now = service.clock().replace(microsecond=0).isoformat()
    try:
        history.run("fetch", "--quiet", "--prune", remote, env=_network_env(history))
    except GitError as exc:
        why = f"could not fetch from {remote} ({exc.reason}): the vault works as before"
        with service._writing():
            _commit_pending(service)
        return SyncResult(remote, branch, "offline", False, 0, error=why + _LATER, time=now)
    with pause():
        with service._writing():
            _commit_pending(service)
            before = history.head()
            integrated = _integrate(service, remote, branch, consent)
        event = _after(service, before)  # before the watcher looks again
        if integrated.action == ADOPTED:
            _forget_purged(service, remote, branch, integrated.purged)
    pushed, error = _push(history, remote, branch, integrated.lease)
    if integrated.lease and not error:
        with service._writing():  # the remote's old history, fetched before
            history.drop_unreachable(_synced_refs(remote, branch))
    files = [
        p for p in (*event.changed, *event.added, *event.removed) if p not in integrated.purged
    ]
    return SyncResult(
        remote,
        branch,
        integrated.action,
        True,
        pushed,
        changed=tuple(p for p in files if service.vault.is_memory_path(p)),
        conflicts=integrated.conflicts,
        error=error,
        commit=history.head(),
        time=now,
    )


_LATER = "; sync again when the remote can be reached"


def _commit_pending(service: MemoryService) -> None:
    service.history.clear_stale_locks()
    _, pending = recovery.commit_leftovers(service.vault, service.history, service._op_trailers)
    if pending:
        service.sync_index(pending)


def _network_env(history: History) -> dict[str, str]:
    """ssh that fails instead of asking (no terminal behind a server), unless the person
    chose their own ssh command (``GIT_SSH_COMMAND``, ``GIT_SSH`` or ``core.sshCommand``)."""
    if os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH"):
        return {}
    if history.run("config", "--get", "core.sshCommand", check=False).strip():
        return {}
    return {"GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}


# -- which remote, which branch ------------------------------------------------------
def _branch(history: History) -> str:
    if history.unfinished():  # before the branch: a rebase under way detaches HEAD
        raise InvalidInputError(
            "a git merge or rebase is in progress in the vault: finish or abort it "
            "(`git merge --abort` / `git rebase --abort`), then sync"
        )
    name = history.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
    if not name:
        raise InvalidInputError(
            "the vault is not on a branch (detached HEAD): check out its branch, e.g. "
            "`git switch main`, then sync"
        )
    return name


def _remote(history: History, branch: str, wanted: str | None) -> str:
    remotes = history.run("remote").split()
    if wanted:
        if wanted not in remotes:
            known = ", ".join(remotes) or "none"
            raise InvalidInputError(f"no git remote named {wanted!r} (known: {known})")
        return wanted
    upstream = history.run("config", "--get", f"branch.{branch}.remote", check=False).strip()
    for candidate in (upstream, "origin"):
        if candidate in remotes:
            return candidate
    if len(remotes) == 1:
        return remotes[0]
    if not remotes:
        raise InvalidInputError(
            f"the vault has no git remote: add one with `git -C {history.root} remote add "
            "origin URL` (any git host or a bare repository), or start from one with "
            "`memvault init --clone URL`"
        )
    raise InvalidInputError(f"the vault has several remotes ({', '.join(remotes)}): pick one")


def _same_branch(history: History, remote: str, branch: str) -> None:
    """Sync exchanges the branch with the remote's branch of the same name: refuse a branch
    set to track another one (it would start a branch of its own there, silently apart)."""
    if history.run("config", "--get", f"branch.{branch}.remote", check=False).strip() != remote:
        return
    merge = history.run("config", "--get", f"branch.{branch}.merge", check=False).strip()
    if merge and merge != f"refs/heads/{branch}":
        other = merge.removeprefix("refs/heads/")
        raise InvalidInputError(
            f"the vault's branch {branch} tracks {remote}/{other}, but sync exchanges a branch "
            f"with the remote's branch of the same name: rename it (`git -C {history.root} "
            f"branch -m {other}`), then sync; nothing was changed"
        )


def _refuse_other_branches(history: History, remote: str, branch: str) -> None:
    """A remote that holds other branches but not this one: pushing would start it apart
    from the others (nothing exchanged, every sync fine), so only a person starts it."""
    refs = history.run("for-each-ref", "--format=%(refname)", f"refs/remotes/{remote}/")
    others = [r.split("/", 3)[3] for r in refs.split() if not r.endswith("/HEAD")]
    if others:
        raise InvalidInputError(
            f"{remote} has no branch {branch} (its branches: {', '.join(others[:5])}): to "
            f"sync with one of those, `git -C {history.root} branch -m NAME` first; to start "
            f"{branch} there, `git -C {history.root} push -u {remote} {branch}`, then sync"
        )


# -- integrating ---------------------------------------------------------------------
def _integrate(service: MemoryService, remote: str, branch: str, consent: _Consent) -> _Integrated:
    history = service.history
    theirs = history.commit_of(f"refs/remotes/{remote}/{branch}")
    ours = history.head()
    if theirs is None:
        _refuse_other_branches(history, remote, branch)
    if theirs is None or ours is None or history.is_ancestor(theirs, ours):
        return _Integrated("up to date" if theirs else "nothing on the remote yet")
    incoming.refuse(history, remote, branch, ours, theirs, consent.accept_settings)
    if history.is_ancestor(ours, theirs):
        try:
            history.run("merge", "--ff-only", "--quiet", theirs)
        except GitError as exc:  # a file memvault never commits is in the way
            raise _not_started(service, exc, "fast-forward") from exc
        return _Integrated("fast-forward")
    after = purging.refuse_undoing_a_purge(
        history, remote, branch, ours, theirs, consent.replace_remote
    )
    if after and after.kind == "replace":
        return _Integrated(REPLACED, lease=theirs)
    if after:
        return _adopt(service, ours, theirs, after.base)
    if not history.run("rev-list", "--merges", f"{theirs}..{ours}").strip() and _rebase(
        service, ours, theirs
    ):
        return _Integrated("rebased")
    return _Integrated("merged", _merge(service, remote, branch, theirs))


def _adopt(service: MemoryService, ours: str, theirs: str, base: str) -> _Integrated:
    """Take the remote's history, rewritten by another machine's purge: this vault's own
    commits (after ``base``) are replayed onto it, the memories the purge removed lose
    their access statistics here too. Refused, with nothing changed, when a replayed
    commit does not apply (it changed a purged memory)."""
    history = service.history
    ids = {i.path: i.id for i in service.records(EVERY)}
    with interrupted.recorded(service.vault, history, "rebase", ours, theirs):
        try:
            history.run(
                "rebase", "--quiet", "--no-autostash", "--onto", theirs, base, env=_LINE_MERGE
            )
        except GitError as exc:
            if not history.unfinished():
                raise _not_started(service, exc) from exc
            _undo(history, "rebase")
            raise MemvaultError(
                f"sync refused: the remote was rewritten by a purge on another machine, and "
                f"this vault's own commits since its last sync do not apply to the purged "
                f"history ({exc.reason}); nothing was changed. Clone the vault anew "
                "(`memvault init NEW_FOLDER --clone URL`), copy into it the memory files "
                f"this vault wrote since (`git -C {history.root} log --name-status "
                f"{base[:12]}..HEAD`), then delete this folder, which holds the purged text"
            ) from exc
    gone = history.run("diff", "--name-only", "--diff-filter=D", "--no-renames", ours, "HEAD")
    purged = {
        p: ids[p]
        for p in gone.splitlines()
        if p in ids and not history.run("log", "-1", "--format=%H", theirs, "--", p).strip()
    }  # a memory only deleted there keeps what this vault knows of it
    return _Integrated(ADOPTED, purged=purged)


def _synced_refs(remote: str, branch: str) -> list[str]:
    """The refs whose reflogs hold the history a sync past a purge leaves behind."""
    return [
        "HEAD",
        f"refs/heads/{branch}",
        *(f"refs/remotes/{remote}/{b}" for b in (branch, "HEAD")),
    ]


def _forget_purged(
    service: MemoryService, remote: str, branch: str, purged: dict[str, str]
) -> None:
    """After taking another machine's purge: erase what this vault derived from the purged
    memories (index segments, vectors, access statistics, id catalog, provenance), then the
    old history itself, under the write lock."""
    with service._writing():
        service.index.erase(purged.values())
        service.access.erase(purged.values())
        service.vault.id_map()
        service.history.drop_unreachable(_synced_refs(remote, branch))
    service.refresh_provenance()


def _rebase(service: MemoryService, ours: str, onto: str) -> bool:
    """Replay local commits on ``onto``; False (and nothing changed) when it does not
    apply cleanly."""
    history = service.history
    with interrupted.recorded(service.vault, history, "rebase", ours, onto):
        try:
            history.run("rebase", "--quiet", "--no-autostash", onto, env=_LINE_MERGE)
        except GitError as exc:
            if not history.unfinished():
                raise _not_started(service, exc) from exc
            log.info("rebase did not apply cleanly, merging instead: %s", exc.reason)
            _undo(history, "rebase")
            return False
    return True


def _not_started(service: MemoryService, exc: GitError, what: str = "rebase") -> MemvaultError:
    """Why git would not even start the rebase or fast-forward (nothing changed): usually an
    uncommitted change that memvault never commits (a symlink, a FIFO, a file
    .memvaultignore hides), since it commits the rest."""
    vault = service.vault
    refused = recovery.never_committed(vault, service.history.uncommitted())
    if refused:
        return MemvaultError(
            f"cannot sync: git will not {what} over uncommitted changes, and memvault never "
            f"commits these: {'; '.join(refused[:3])}. Replace or remove a link or FIFO; "
            f"{recovery.HIDDEN_EDIT_HINT}. Then sync; nothing was changed"
        )
    return MemvaultError(
        f"cannot sync: git would not start the {what} ({exc.reason}); nothing was changed: "
        "fix what git reports, then sync"
    )


def _merge(service: MemoryService, remote: str, branch: str, theirs: str) -> tuple[str, ...]:
    """Merge ``theirs``, settling every file git cannot; one commit. Aborted on failure."""
    history = service.history
    ours = history.head()
    assert ours is not None
    with interrupted.recorded(service.vault, history, "merge", ours, theirs):
        return _merge_recorded(service, remote, branch, theirs)


def _merge_recorded(
    service: MemoryService, remote: str, branch: str, theirs: str
) -> tuple[str, ...]:
    history = service.history
    try:
        try:
            history.run("merge", "--no-ff", "--no-commit", "--quiet", theirs, env=_LINE_MERGE)
        except GitError:
            if not unmerged_files(history):
                raise  # not a conflict (e.g. an untracked file in the way)
        conflicts = _settle(service, remote, theirs)
        if history.run("ls-files", "-u").strip():
            raise MemvaultError("files remained unmerged after settling the conflicts")
        trailers = service._op_trailers("sync")
        if conflicts:
            trailers["Memvault-Conflicts"] = str(len(conflicts))
        message = format_message(f"sync: merge {remote}/{branch}", trailers)
        history.run("commit", "-q", "--no-verify", "-F", "-", input_text=message)
    except (MemvaultError, OSError) as exc:
        _undo(history, "merge")
        raise MemvaultError(
            f"sync could not merge {remote}/{branch} ({exc}); the merge was undone and the "
            "vault is as it was: run `memvault doctor`, then merge by hand with git"
        ) from exc
    return conflicts


def _undo(history: History, what: str) -> None:
    """Abort a rebase or merge; if even that fails, say so (never a silent half-way)."""
    try:
        history.run(what, "--abort")
    except GitError as exc:
        if what == "merge" and not (history.root / ".git" / "MERGE_HEAD").exists():
            return  # the merge never started: nothing to undo
        raise MemvaultError(
            f"sync could not undo a {what} it started ({exc.reason}): the vault is mid-{what};"
            f" run `git -C {history.root} {what} --abort`, fix what it reports, then sync"
        ) from exc


def _settle(service: MemoryService, remote: str, theirs: str) -> tuple[str, ...]:
    """Write a merged file for each path git left unmerged; the memories in conflict."""
    history = service.history
    stages = unmerged_files(history)
    if not stages:
        return ()
    blobs = history.blob_bytes(b for by_stage in stages.values() for b in by_stage.values())
    conflicts = []
    for path, by_stage in stages.items():
        base, ours, theirs_blob = (by_stage.get(n) for n in (1, 2, 3))
        if ours is None and theirs_blob is None:  # moved away on both sides, to two places
            history.run("rm", "-q", "--", path)
            continue
        texts = [blobs.get(b) if b else None for b in (base, ours, theirs_blob)]
        if _two_memories(service, path, texts):
            _keep_apart(service, path, texts[2])
            texts = [None, texts[1], None]  # this side's, as it was
        data, conflict = _settle_one(service, remote, theirs, path, texts)
        service.vault.write(path, data)
        history.run("add", "--", path)
        if conflict:
            conflicts.append(path)
    return tuple(conflicts)


def _two_memories(service: MemoryService, path: str, texts: list[bytes | None]) -> bool:
    """Whether both sides added a different memory (another id) at the same path: two
    memories that chose one name (the same title), not two versions of one."""
    base, ours, other = texts
    if base is not None or ours is None or other is None:
        return False
    if not service.vault.is_memory_path(path):
        return False
    try:
        ids = [frontmatter.parse(t.decode("utf-8")).meta.get("id") for t in (ours, other)]
    except (UnicodeDecodeError, MalformedMemoryError):
        return False
    return all(isinstance(i, str) and i for i in ids) and ids[0] != ids[1]


def _keep_apart(service: MemoryService, path: str, theirs: bytes | None) -> None:
    """The other side's memory at a free path beside ``path`` (this side's stays there)."""
    assert theirs is not None
    folder, _, name = path.rpartition("/")
    other = service.vault.free_path(folder, name[: -len(".md")])
    service.vault.write(other, theirs)
    service.history.run("add", "--", other)


def _settle_one(
    service: MemoryService,
    remote: str,
    theirs: str,
    path: str,
    texts: list[bytes | None],
) -> tuple[bytes, bool]:
    """The bytes to keep at ``path`` and whether both versions were kept for a person."""
    base, ours, other = texts
    if ours is None or other is None:  # deleted on one side, edited on the other: keep it
        kept = ours if ours is not None else other
        assert kept is not None
        return kept, False
    if not service.vault.is_memory_path(path):
        log.warning("%s changed on both sides and is not a memory: kept this side's", path)
        return ours, False
    when = _when(service.history, theirs, path)
    try:
        decoded = [t.decode("utf-8") if t is not None else None for t in (base, ours, other)]
    except UnicodeDecodeError:  # not text memvault can merge: both kept, byte for byte
        heading = merging.conflict_heading(remote, when).encode("utf-8")
        both = [ours.rstrip(b"\n"), heading, other.strip(b"\n")]
        return b"\n\n".join(both) + b"\n", True
    mine, their_text = decoded[1], decoded[2]
    assert mine is not None and their_text is not None
    merged = merging.merge_memory(
        decoded[0], mine, their_text, remote, when, service.history.merge_lines
    )
    return merged.text.encode("utf-8"), merged.conflict


def unmerged_files(history: History) -> dict[str, dict[int, str]]:
    """path -> stage (1 base, 2 ours, 3 theirs) -> blob, of every unmerged file; a symlink
    or submodule changed on both sides is refused (memvault merges files only)."""
    out: dict[str, dict[int, str]] = {}
    for path, stages in history.unmerged().items():
        if any(mode not in _FILE_MODES for mode, _ in stages.values()):
            raise MemvaultError(
                f"{path} is a symbolic link or submodule changed on both sides, which "
                "memvault does not merge"
            )
        out[path] = {stage: blob for stage, (_, blob) in stages.items()}
    return out


_FILE_MODES = ("100644", "100755")


def _when(history: History, rev: str, path: str) -> str:
    """When the other side last changed ``path`` (its author date, minutes)."""
    fmt = ["--date=format:%Y-%m-%d %H:%M", "--format=%ad"]
    out = history.run("log", "-1", *fmt, rev, "--", path, check=False).strip()
    return out or dt.date.today().isoformat()


# -- pushing -------------------------------------------------------------------------
def _push(
    history: History, remote: str, branch: str, lease: str | None = None
) -> tuple[int, str | None]:
    """Send local commits: (how many, None) or (0, why it failed). ``lease``: over the
    remote's history at that tip, which was checked (a remote that moved since, even by
    another process's fetch, is not overwritten)."""
    tracking = history.commit_of(f"refs/remotes/{remote}/{branch}")
    ahead = history.run("rev-list", "--count", f"{tracking}..HEAD" if tracking else "HEAD")
    count = int(ahead.strip() or 0)
    if count == 0:
        return 0, None
    upstream = history.run("config", "--get", f"branch.{branch}.remote", check=False).strip()
    leased = [f"--force-with-lease={branch}:{lease}"] if lease else []
    args = ["push", "--quiet", *leased, *([] if upstream else ["-u"]), remote, f"{branch}:{branch}"]
    try:
        history.run(*args, env=_network_env(history))
    except GitError as exc:
        moved = any(m in exc.stderr for m in ("fetch first", "non-fast-forward", "stale info"))
        why = MOVED if moved else exc.reason
        return 0, f"could not push to {remote} ({why}): the commits stay here{_LATER}"
    return count, None


# -- afterwards: index, provenance, subscribers, status ----------------------------------
def _after(service: MemoryService, before: str | None) -> ChangeEvent:
    """Re-index exactly the files the sync changed; tell subscribers."""
    history = service.history
    after = history.head()
    if not before or not after or before == after:
        service.refresh_provenance()  # the pending edits just committed
        return ChangeEvent()
    out = history.run("diff", "--name-status", "--no-renames", "-z", before, after)
    tokens = [t for t in out.split("\0") if t]
    pairs = [_typed(service, s, p) for s, p in zip(tokens[::2], tokens[1::2], strict=False)]
    if IGNORE_FILE in {p for _, p in pairs}:  # every file's place in the index may change
        event = _under_pulled_rule(service, pairs)
        service.sync_index()
    else:
        hides = service.vault.hidden()
        pairs = [(s, p) for s, p in pairs if not hides(p)]  # a hidden path: never told
        event = ChangeEvent(
            changed=tuple(p for s, p in pairs if s.startswith("M")),
            added=tuple(p for s, p in pairs if s.startswith("A")),
            removed=tuple(p for s, p in pairs if s.startswith("D")),
        )
        service.sync_index([p for _, p in pairs])
    service.refresh_provenance()
    if event.added or event.changed or event.removed:
        service.publish(event)
    return event


def _under_pulled_rule(service: MemoryService, pairs: list[tuple[str, str]]) -> ChangeEvent:
    """Apply a pulled ``.memvaultignore`` at once (the notes pulled with it are hidden by
    it), and tell subscribers what changed for them: against the notes shown before the
    pull (what they were told of), a note now hidden or gone is removed, one now shown that
    was not is added, and a pulled edit of one shown before and after is changed. A note
    hidden before and after is never named."""
    # the notes shown before the pull, by the rule in force until now
    known = set(service.memory_paths()) - {p for s, p in pairs if s.startswith("A")}
    known |= {p for s, p in pairs if s.startswith("D") and service.is_memory_path(p)}
    try:
        service.reload_ignore(True)
    except OSError as exc:
        log.warning("could not read the pulled %s (%s): its rule applies at the next start",
                    IGNORE_FILE, exc)  # fmt: skip
    shown = set(service.memory_paths())
    edited = {p for s, p in pairs if s.startswith("M")}
    return ChangeEvent(
        changed=tuple(sorted(edited & known & shown)),
        added=tuple(sorted(shown - known)),
        removed=tuple(sorted(known - shown)),
    )


def _typed(service: MemoryService, status: str, path: str) -> tuple[str, str]:
    """A type change (a file replaced by a symlink, or one put back) as what it is to
    memvault: the memory removed, or added."""
    if not status.startswith("T"):
        return status, path
    return ("A" if service.vault.is_safe_file(path) else "D"), path


def save_state(service: MemoryService, result: SyncResult) -> None:
    path = service.vault.state_dir / STATE_FILE
    try:
        path.write_text(json.dumps(asdict(result)), encoding="utf-8")
    except OSError as exc:  # a report, not the vault: losing it loses nothing
        log.warning("could not save %s: %s", path, exc)


def last_sync(service: MemoryService) -> dict[str, Any] | None:
    """The last sync's result as saved (for status), or None when there was none."""
    try:
        data = json.loads((service.vault.state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- starting from a remote ---------------------------------------------------------
def clone_vault(
    url: str, root: Path, settings: Settings | None = None, branch: str | None = None
) -> str:
    """Make ``root`` (new or empty) a vault cloned from ``url`` (its ``branch``, else the
    one its HEAD names): "cloned", or "created" when the remote is empty (the template,
    on ``branch`` if given, with ``url`` as origin for the first sync)."""
    root = root.expanduser().absolute()
    existed = root.exists()
    if existed and (not root.is_dir() or any(root.iterdir())):
        raise InvalidInputError(f"{root} exists and is not empty: clone into a new folder")
    settings = settings or Settings()
    root.parent.mkdir(parents=True, exist_ok=True)
    outside = History(root.parent, settings.author_name, settings.author_email)
    try:
        outside.run("clone", "--quiet", "--", url, str(root), env=_network_env(outside))
    except GitError as exc:
        raise MemvaultError(
            f"could not clone {url} ({exc.reason}): check the URL and that this machine can "
            "reach it (ssh keys, tokens), then retry"
        ) from exc
    clone = History(root)
    refs = clone.run("for-each-ref", "--format=%(refname:strip=3)", "refs/remotes/origin/")
    branches = [b for b in refs.split() if b != "HEAD"]
    if not branches:  # an empty remote: this vault starts it
        _empty(root, existed)
        create_vault(root, settings=settings)
        made = History(root, settings.author_name, settings.author_email)
        if branch:
            made.run("branch", "-M", branch)
        made.run("remote", "add", "origin", url)
        return "created"
    why = f"has no branch {branch!r}" if branch and branch not in branches else ""
    if branch is None and clone.head() is None:  # its HEAD names a branch it does not have
        if len(branches) == 1:
            branch = branches[0]
        else:
            why = "names no branch to start from (its HEAD points at a branch it does not have)"
    if why:
        _empty(root, existed)
        raise InvalidInputError(
            f"{url} {why}; its branches: {', '.join(branches[:10])}: clone the one this vault "
            f"lives on with `memvault init {root} --clone {url} --branch BRANCH`"
        )
    if branch:
        clone.run("checkout", "--quiet", "-B", branch, "--track", f"origin/{branch}")
    tracked = clone.run("ls-tree", "-r", "--name-only", "HEAD", "--", STATE_DIR)
    if tracked.strip():  # never opened: another machine's index (Whoosh unpickles it)
        _empty(root, existed)
        raise MemvaultError(
            f"could not clone: {incoming.state_tracked(url, tracked)}, then clone again"
        )
    exclude_state_dir(root)
    return "cloned"


def _empty(root: Path, keep: bool) -> None:
    """Remove what a clone put in ``root``; the folder itself too unless it was there."""
    if not keep:
        shutil.rmtree(root)
        return
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


# -- settling a conflict -------------------------------------------------------------
def resolve_conflict(service: MemoryService, id_or_path: str, keep: str) -> WriteResult:
    """Settle a memory a sync left with two versions: keep ``ours`` (this vault's text),
    ``theirs`` (the other side's) or ``both`` (one after the other); one commit."""
    if keep not in merging.KEEP:
        raise InvalidInputError(f"keep must be one of {', '.join(merging.KEEP)}, not {keep!r}")
    with service._writing():
        memory = service.get(id_or_path)
        body = merging.resolved_body(memory.body, keep)
        if body is None and memory.status != "conflict":
            raise InvalidInputError(
                f"{memory.path} is not in conflict: nothing to resolve (doctor lists conflicts)"
            )
        service._rewrite(memory, {"status": frontmatter.DELETE}, body)
        sha = service.history.commit(
            [memory.path],
            f"resolve: {memory.path} (kept {keep})",
            service._trailers("resolve", memory.id),
        )
    fresh = service.vault.read(memory.path)
    service.indexing.upsert([fresh])
    service.publish(ChangeEvent(changed=(memory.path,)))
    return WriteResult(fresh, sha, "resolved", previous_revision=memory.content_hash)
