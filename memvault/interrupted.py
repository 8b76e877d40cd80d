"""A sync's own merge or rebase, recorded so that a killed sync never stops the vault.

Before sync starts ``git merge`` or ``git rebase`` (under the vault's write lock) it writes
``.memvault/sync-integrating.json``: which of the two, the commit it started from and the
commit it integrates. The record goes when the merge or rebase has ended (finished or
undone). A sync killed in between leaves both the record and git's half-done state; the
next memvault command that holds the write lock (a write, a sync, the recovery of crash
leftovers, the watcher's commit) finds that git's state matches the record (``MERGE_HEAD``
and ``HEAD``, or the rebase's ``onto`` and ``orig-head``) and aborts it, with a warning.
A merge or rebase that does not match (a person's own) is left to the person, as before.

Nothing is aborted over a person's work: memvault commits nothing while git is half-way,
so whatever a person changed since the kill is only in the working tree, and ``git rebase
--abort`` (a hard reset) or ``git merge --abort`` would throw it away. When such changes
are there (:func:`persons_changes`), the record stays, a warning names the files and what
to do, and every write and sync is refused until the person ends the merge or rebase.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import GitError
from .history import History
from .vault import Vault, is_temporary

log = logging.getLogger(__name__)

RECORD = "sync-integrating.json"


@dataclass(frozen=True)
class Started:
    """What a sync started: ``merge`` or ``rebase`` of ``onto`` over ``head``."""

    what: str
    head: str
    onto: str


@contextmanager
def recorded(vault: Vault, history: History, what: str, head: str, onto: str) -> Iterator[None]:
    """Record that sync starts a ``what`` of ``onto`` over ``head`` while the block runs.
    The record stays when git is still half-way afterwards (an undo that failed), so the
    next command tries again."""
    path = vault.state_dir / RECORD
    _write(path, Started(what, head, onto))
    try:
        yield
    finally:
        if not history.unfinished():
            path.unlink(missing_ok=True)


def _write(path: Path, started: Started) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"what": started.what, "head": started.head, "onto": started.onto}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def read(vault: Vault) -> Started | None:
    try:
        data = json.loads((vault.state_dir / RECORD).read_text(encoding="utf-8"))
        return Started(str(data["what"]), str(data["head"]), str(data["onto"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def own(vault: Vault, history: History) -> Started | None:
    """The half-done merge or rebase in the vault when it is a sync's own (the record
    matches git's state), else None (none, or a person's)."""
    started = read(vault)
    if started is None or not history.unfinished():
        return None
    git_dir = history.git_dir()
    if started.what == "merge":
        found = (_ref(git_dir / "MERGE_HEAD"), history.head())
    else:
        folder = next(
            (git_dir / d for d in ("rebase-merge", "rebase-apply") if (git_dir / d).is_dir()), None
        )
        if folder is None:
            return None
        found = (_ref(folder / "onto"), _ref(folder / "orig-head"))
    return started if found == (started.onto, started.head) else None


def _ref(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").split()[0]
    except (OSError, IndexError):
        return None


def undo(vault: Vault, history: History) -> bool:
    """Abort a sync's own half-done merge or rebase (left by a killed sync); the caller
    holds the write lock. A record with nothing half-done behind it is dropped. True when
    something was undone."""
    if not (vault.state_dir / RECORD).exists():
        return False
    started = own(vault, history)
    if started is None:
        if not history.unfinished():
            (vault.state_dir / RECORD).unlink(missing_ok=True)  # the sync ended, then died
        return False
    kept = persons_changes(vault, history)
    if kept:
        log.warning("%s", kept_back(vault, started.what, kept))
        return False
    try:
        history.run(started.what, "--abort")
    except GitError as exc:
        log.warning("could not undo the %s a killed sync left: %s", started.what, exc)
        return False
    (vault.state_dir / RECORD).unlink(missing_ok=True)
    log.warning(
        "undid the %s of %s that a killed `memvault sync` left half-way (`git %s --abort`): "
        "the vault is back at %s, as before that sync; sync again to integrate the remote",
        started.what,
        started.onto[:12],
        started.what,
        started.head[:12],
    )
    return True


def persons_changes(vault: Vault, history: History) -> list[str]:
    """Files changed while a merge or rebase sat half-way that are not its own, which its
    abort would lose or overwrite: unstaged changes of files git did not leave unmerged,
    untracked files that are not ignored (editor and temporary files aside), and unmerged
    files a person settled by hand (no conflict markers left, and the bytes are none of
    the file's versions in the merge) or started to (written after git stopped, markers
    or not, staged or not); one the killed sync itself settled, listed in the write
    journal, is its own."""
    unmerged = history.unmerged()
    unstaged = [
        p for p in _names(history, "diff", "--name-only", "--no-renames") if p not in unmerged
    ]
    untracked = [
        p
        for p in _names(history, "ls-files", "--others", "--exclude-standard")
        if not is_temporary(p.rsplit("/", 1)[-1])
    ]
    journal = vault.journal_paths()
    stopped = _stopped_at(history)
    settled = [
        path
        for path, stages in unmerged.items()
        if path not in journal
        and (_settled_by_hand(vault, history, path, stages) or _touched(vault, path, stopped))
    ]
    staged = [  # settled and `git add`ed: no longer unmerged, no unstaged change
        path
        for path in history.staged_paths()
        if path not in unmerged and path not in journal and _touched(vault, path, stopped)
    ]
    return sorted({*unstaged, *untracked, *settled, *staged})


def _stopped_at(history: History) -> int | None:
    """When git stopped on the conflicts (ns): it writes ``MERGE_HEAD`` or ``REBASE_HEAD``
    after the conflicted files, and nothing rewrites them until the merge or rebase ends."""
    git_dir = history.git_dir()
    for name in ("MERGE_HEAD", "REBASE_HEAD"):
        try:
            return (git_dir / name).stat().st_mtime_ns
        except OSError:
            continue
    return None


def _touched(vault: Vault, path: str, stopped: int | None) -> bool:
    """Whether a file of the merge was written after git stopped: a person started settling
    it (conflict markers may remain, it may be staged), which an abort would lose."""
    full = vault.root / path
    try:
        return stopped is not None and not full.is_symlink() and full.stat().st_mtime_ns > stopped
    except OSError:
        return False


def _names(history: History, *args: str) -> list[str]:
    return [name for name in history.run(*args, "-z").split("\0") if name]


_MARKERS = (re.compile(rb"^<{7}(?: |\r?$)", re.M), re.compile(rb"^>{7}(?: |\r?$)", re.M))


def _settled_by_hand(
    vault: Vault, history: History, path: str, stages: dict[int, tuple[str, str]]
) -> bool:
    """Whether an unmerged file holds what a person made of it: a regular file without
    git's conflict markers whose bytes are none of the versions git merged (the one git
    left of a binary or deleted-on-one-side conflict is such a version: nothing to lose)."""
    full = vault.root / path
    if full.is_symlink() or not full.is_file():
        return False
    try:
        data = full.read_bytes()
    except OSError:
        return False
    if all(marker.search(data) for marker in _MARKERS):
        return False
    blob = history.run("hash-object", "--", path, check=False).strip()
    return blob not in {sha for _mode, sha in stages.values()}


def kept_back(vault: Vault, what: str, kept: list[str]) -> str:
    """Why a killed sync's ``what`` was not undone (``kept`` changed since) and how to end it."""
    named = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    finish = (
        "`git add` the settled files and `git rebase --continue`"
        if what == "rebase"
        else "`git add` the settled files and `git commit`"
    )
    return (
        f"a git {what} that a killed `memvault sync` left half-way is in progress, and files "
        f"were changed since: {named}. memvault does not undo it, because `git {what} "
        "--abort` would lose those changes; every memvault write and sync is refused until "
        f"it ends: copy those files aside, run `git -C {vault.root} {what} --abort` and put "
        f"them back (memvault then commits them), or finish the {what} with git ({finish})"
    )
