"""A sync's own merge or rebase, recorded so that a killed sync never stops the vault.

Before sync starts ``git merge`` or ``git rebase`` (under the vault's write lock) it writes
``.memvault/sync-integrating.json``: which of the two, the commit it started from and the
commit it integrates. The record goes when the merge or rebase has ended (finished or
undone). A sync killed in between leaves both the record and git's half-done state; the
next memvault command that holds the write lock (a write, a sync, the recovery of crash
leftovers, the watcher's commit) finds that git's state matches the record (``MERGE_HEAD``
and ``HEAD``, or the rebase's ``onto`` and ``orig-head``) and aborts it, with a warning.
A merge or rebase that does not match (a person's own) is left to the person, as before.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import GitError
from .history import History
from .vault import Vault

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
