"""The person's ``git stash`` across a purge.

A stash entry other than the newest lives only in ``refs/stash``'s reflog, and a purge
forgets every reflog before it deletes unreachable objects: the person's stashed work
would go with it. So each entry is set aside under a ref of its own while history is
rewritten (the purge then reaches inside stashed work too, and ``gc`` keeps it), and put
back afterwards, oldest first, in the same order, with its own message (the rewrite has
already replaced purged names in it) and its own date. A purge killed half way leaves the
entries set aside; the vault's next opening (its recovery, under the write lock) puts them
back, below any entry stashed since.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .history import History

STASH = "refs/stash"
ASIDE = "refs/memvault/stash-aside/"


@contextmanager
def aside(history: History) -> Iterator[set[str]]:
    """Within: every stash entry is held by a ref of its own (so ``--all`` reaches it) and
    ``refs/stash`` is gone; the value is the commits a rewrite must keep. After (even when
    the rewrite failed), the entries are the stash again."""
    try:
        yield _set_aside(history)
    finally:
        put_back(history)


def _set_aside(history: History) -> set[str]:
    """Move every stash entry to a ref under :data:`ASIDE` (numbered oldest first) and
    delete ``refs/stash``, in one ref transaction. Returns the commits a stash entry is
    made of (the entry, its index and its untracked files): a rewrite must keep each even
    when its tree equals its parent's, or the entry would no longer be a stash."""
    put_back(history)
    entries = _entries(history)
    if not entries:
        return set()
    _move(history, entries, 0)
    made_of = history.run("rev-list", "--no-walk", "--parents", *set(entries)).splitlines()
    kept: set[str] = set()
    for line in filter(None, made_of):
        entry, _, *parts = line.split()  # the entry, the commit it was made on, the rest
        kept.update([entry, *parts])
    return kept


def put_back(history: History) -> None:
    """Store every entry set aside back on the stash, oldest first, below any entry
    stashed since. Crash-safe: entries stashed since are set aside after the others
    first (one ref transaction), and the refs are deleted only once all are stored (a
    kill in between stores some twice, never loses one)."""
    listed = history.run("for-each-ref", "--format=%(refname) %(objectname)", ASIDE)
    aside = sorted(tuple(line.split(" ")) for line in listed.splitlines() if line)
    if not aside:
        return
    held, stashed = {sha for _, sha in aside}, _entries(history)
    since = [sha for sha in stashed if sha not in held]  # the others: stored once already
    if stashed:
        _move(history, since, int(aside[-1][0].rsplit("/", 1)[1]) + 1)
    for sha in [*(sha for _, sha in aside), *since]:
        # the entry's message, and its date (`git stash list --date=...`): when it was made
        when, _, subject = history.run("log", "-1", "--format=%cI%n%s", sha).strip().partition("\n")
        stored = {"GIT_COMMITTER_DATE": when}
        history.run("stash", "store", "-q", "-m", subject, sha, env=stored)
    refs = history.run("for-each-ref", "--format=%(refname)", ASIDE).split()
    history.run("update-ref", "--stdin", input_text="".join(f"delete {r}\n" for r in refs))


def _entries(history: History) -> list[str]:
    """The stash's entries, oldest first (none: git says so on stderr)."""
    return history.run("reflog", "show", "--format=%H", STASH, "--", check=False).split()[::-1]


def _move(history: History, entries: list[str], first: int) -> None:
    """Hold ``entries`` by refs numbered from ``first`` and delete ``refs/stash``: one
    ref transaction, so a kill leaves them either on the stash or aside."""
    moves = [f"create {ASIDE}{first + n:06d} {sha}\n" for n, sha in enumerate(entries)]
    history.run("update-ref", "--stdin", input_text="".join([*moves, f"delete {STASH}\n"]))
