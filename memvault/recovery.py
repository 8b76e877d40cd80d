"""Committing what was left uncommitted, as what it is.

Files memvault wrote and did not commit (a crash; known from the vault's write journal)
become a ``recover`` commit by memvault; everything else is a person's edit and is
committed as ``external`` with the repository's own identity. What a person hid with
``.memvaultignore`` is never committed (it stays uncommitted: a private note must not
reach the history, nor a remote through a sync). Symlinks and other
non-regular files are never staged (``git add`` would commit the link; doctor reports it),
nor is a file git left unmerged (``git add`` would settle a person's conflict with its
markers); while a merge or rebase is stopped half-way nothing is committed: it is the
person's to finish (one a killed sync left is undone first: :mod:`interrupted`). The
caller holds the vault's write lock.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from . import interrupted, stashes
from .errors import GitError, MemvaultError, NotSavedError, UnsafePathError
from .history import History
from .vault import IGNORE_FILE, STATE_DIR, Undo, Vault

log = logging.getLogger(__name__)

Trailers = Callable[[str], dict[str, str]]  # op -> commit trailers
EARLIEST_MTIME = 86_400.0  # 1970-01-02: a day's margin for the local zone's offset


@contextmanager
def writing(
    vault: Vault,
    history: History,
    timeout: float,
    reindex: Callable[[list[str]], object] = lambda paths: None,
) -> Iterator[None]:
    """The vault's write lock for a write: refused (nothing written) while a git merge or
    rebase is half-way, which a commit would fail over or join.

    A write whose git commit fails (a full disk, a broken index, git's own lock held by a
    live git) is taken back: its files are put back as they were, unstaged, and
    ``reindex`` is given them; :class:`NotSavedError` says so with git's reason. Where
    not everything could be kept to put back (more than UNDO_BYTES replaced), the files
    stay, journalled, for the recovery commit of the vault's next opening, and the error
    says that. A write refused half-way (a file it had to rewrite turned out malformed) is
    taken back the same way, and its own error raised: a refused write leaves no file."""
    with vault.write_lock(timeout):
        ready(vault, history, "write")
        head = history.tip()
        with vault.undoable() as undo:
            try:
                yield
            except MemvaultError as exc:
                if not undo.before or history.tip() != head:
                    raise  # nothing written yet, or a commit was made: history has it
                if not isinstance(exc, GitError):  # refused half-way: take back what it wrote
                    if undo.complete:
                        take_back(vault, history, undo)
                        reindex(list(undo.before))
                    raise
                if not undo.complete:
                    raise NotSavedError(
                        f"git could not commit the {len(undo.before)} file(s) written "
                        f"({exc.reason}): they stay in the vault and are committed when "
                        "memvault next opens it"
                    ) from exc
                restored, touched = take_back(vault, history, undo), list(undo.before)
                reindex(touched)
                raise NotSavedError(
                    f"nothing was saved: git could not commit ({exc.reason}); the "
                    f"{len(restored)} file(s) written are back as they were"
                    f"{_not_back(undo.kept, len(touched) - len(restored))}. Fix the cause "
                    "(`memvault doctor` checks the repository) and retry"
                ) from exc


def take_back(vault: Vault, history: History, undo: Undo) -> list[str]:
    """Put back what a write that failed replaced (a file saved again since stays, and
    leaves the write journal: it is committed as the person's), and unstage everything it
    touched. The paths put back."""
    restored = undo.restore()
    unstage(history, list(undo.before))
    vault.unjournal(undo.kept)
    return restored


def _not_back(kept: list[str], missing: int) -> str:
    """What a failed write's error adds about the files it did not put back."""
    failed = missing - len(kept)
    return "".join(
        [
            f"; {len(kept)} saved again meanwhile (an editor, a person) stay as saved"
            if kept
            else "",
            f"; {failed} could not be put back (the log names them)" if failed else "",
        ]
    )


def ready(vault: Vault, history: History, what: str) -> None:
    """Undo what a killed sync left half-way (never a person's merge or rebase), then refuse
    ``what`` (nothing written) while a merge or rebase is still half-way. Under the lock."""
    interrupted.undo(vault, history)
    history.refuse_unfinished(what)


def unstage(history: History, paths: Sequence[str]) -> None:
    """Take back what a failed commit staged (the files are already put back)."""
    if not paths or not history.head():
        return
    try:
        spec = "\0".join(paths)
        history.run("reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", input_text=spec)
    except GitError as exc:
        log.warning("could not unstage what a failed commit staged: %s", exc)


def commit_leftovers(
    vault: Vault, history: History, trailers: Trailers
) -> tuple[str | None, list[str]]:
    """Commit uncommitted safe paths: (last sha, the paths)."""
    interrupted.undo(vault, history)
    stashes.put_back(history)  # the person's stash entries a killed purge left aside
    if history.unfinished():
        log.warning("a git merge or rebase is in progress in the vault: nothing recovered")
        return None, []
    own = vault.journal_paths()
    unmerged = history.unmerged()
    changed = committable(vault, unhidden(vault, history.changed_paths()), history)
    pending = [p for p in changed if p not in unmerged]
    theirs = [p for p in pending if p not in own]
    sha = _commit_mine(history, [p for p in pending if p in own], trailers)
    if theirs:
        subject = external_subject(theirs)
        when = saved_at(vault, theirs)
        sha = history.commit(theirs, subject, trailers("external"), True, when) or sha
        log.info("committed %d file(s) edited outside memvault", len(theirs))
    vault.clear_journal()
    return sha, pending


def commit_external(
    vault: Vault, history: History, paths: Sequence[str], trailers: Trailers
) -> str | None:
    """Commit a person's edits (and what they staged for memories, e.g. by `git mv`).
    Nothing while a merge or rebase is half-way: the person's merge commit takes them."""
    interrupted.undo(vault, history)
    if history.unfinished():
        log.info("a git merge or rebase is in progress: %d edit(s) left to it", len(paths))
        return None
    staged = [p for p in history.staged_paths() if vault.is_memory_path(p)]
    paths = committable(vault, unhidden(vault, [*paths, *staged]), history)
    # a file in the write journal is another memvault process's write, killed before its
    # commit (the caller holds the lock: no writer is live): memvault's, not the person's
    own = vault.journal_paths()
    sha = _commit_mine(history, [p for p in paths if p in own], trailers)
    vault.unjournal([p for p in paths if p in own])
    theirs = [p for p in paths if p not in own]
    if not theirs:
        return sha
    when = saved_at(vault, theirs)
    subject = external_subject(theirs)
    return history.commit(theirs, subject, trailers("external"), True, when) or sha


def _commit_mine(history: History, mine: Sequence[str], trailers: Trailers) -> str | None:
    """Commit what memvault wrote and a killed write did not commit, as ``recover``."""
    if not mine:
        return None
    subject = f"recover: {len(mine)} file(s) memvault wrote but did not commit"
    sha = history.commit(mine, subject, trailers("recover"))
    log.warning("committed %d file(s) left by an interrupted write: %s", len(mine), mine[:5])
    return sha


def unhidden(vault: Vault, paths: Iterable[str]) -> list[str]:
    """``paths`` minus those a person hid with ``.memvaultignore``: memvault never commits
    them (they stay uncommitted; `memvault doctor` lists them as hidden)."""
    hidden = vault.hidden()
    out, left = [], 0
    for rel in paths:
        if hidden(rel):
            left += 1
        else:
            out.append(rel)
    if left:
        log.info("not committed: %d change(s) hidden by %s", left, IGNORE_FILE)
    return out


HIDDEN_EDIT_HINT = (
    "undo your edit of a hidden file git already tracks, or stop tracking it (`git rm "
    "--cached PATH`, then commit: at the next sync the remote drops its copy too); a `git "
    "commit` of the edit would send it to your remote at the next sync"
)


def never_committed(vault: Vault, paths: Iterable[str]) -> list[str]:
    """Why memvault never commits each of ``paths`` that it leaves alone: a symlink, a FIFO,
    a path leading outside (:func:`refusal`), or a file ``.memvaultignore`` hides."""
    hidden, out = vault.hidden(), []
    for rel in paths:
        why = refusal(vault, rel)
        if why is None and hidden(rel):
            why = f"{rel} is hidden by {IGNORE_FILE}"
        if why is not None:
            out.append(why)
    return out


def committable(vault: Vault, paths: Iterable[str], history: History | None = None) -> list[str]:
    """``paths`` that may be staged: regular files inside the vault, or deletions; with
    ``history``, none inside another git repository in the vault (git would not stage it)."""
    out = []
    for rel in dict.fromkeys(paths):
        why = refusal(vault, rel)
        if why is not None:
            log.warning("not committed: %s", why)
            continue
        out.append(rel)
    apart = history.apart(out) if history is not None else {}
    for rel, inner in apart.items():
        log.warning(
            "not committed: %s is in %s/, another git repository inside the vault", rel, inner
        )
    return [rel for rel in out if rel not in apart]


def refusal(vault: Vault, rel: str) -> str | None:
    """Why memvault never stages ``rel`` (a symlink, a FIFO, a path leading outside), or
    None when it may (a regular file inside the vault, or a deletion)."""
    if rel.split("/", 1)[0] == STATE_DIR:
        return f"{rel} is memvault's own state (an index, statistics): never committed"
    try:
        if os.path.lexists(vault.abspath(rel) / ".git"):
            return f"{rel}/ is another git repository inside the vault: memvault leaves it alone"
        full = vault.abspath(rel)
        if full.is_dir() and not full.is_symlink() and vault.is_memory_path(rel):
            return None  # a folder took the note's name: its deletion (History.commit)
        if os.path.lexists(full):
            vault.check_regular(rel)
    except UnsafePathError as exc:
        return str(exc)
    except OSError as exc:
        return f"{rel}: {exc}"
    return None


def saved_at(vault: Vault, paths: Iterable[str]) -> str | None:
    """When the person last saved any of ``paths`` (ISO, local zone): the commit's author
    date, so a memory's `updated` is the time of the edit, not of the commit."""
    times = []
    for rel in paths:
        try:
            times.append(os.lstat(vault.abspath(rel)).st_mtime)
        except (OSError, UnsafePathError):
            continue
    if not times or max(times) < EARLIEST_MTIME:
        return None  # no time or one git cannot store (before 1970: it reads another date)
    latest = min(max(times), dt.datetime.now(dt.UTC).timestamp())  # a clock ahead: now
    return dt.datetime.fromtimestamp(latest, dt.UTC).astimezone().isoformat(timespec="seconds")


def external_subject(paths: Sequence[str]) -> str:
    return f"external: {paths[0]}" if len(paths) == 1 else f"external: {len(paths)} files"
