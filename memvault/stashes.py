"""The person's ``git stash`` across a purge.

A stash entry other than the newest lives only in ``refs/stash``'s reflog, and a purge
forgets every reflog before it deletes unreachable objects: the person's stashed work
would go with it. So each entry is set aside under a ref of its own while history is
rewritten (the purge then reaches inside stashed work too, and ``gc`` keeps it), and put
back afterwards, oldest first, in the same order and with its own message (the rewrite
has already replaced purged names in it). A purge killed half way leaves the entries set
aside; the vault's next opening (its recovery, under the write lock) puts them back.
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
    listed = history.run("reflog", "show", "--format=%H", STASH, "--", check=False).split()
    if not listed:  # no stash (git said so on stderr)
        return set()
    entries = list(reversed(listed))
    moves = [f"create {ASIDE}{n:06d} {sha}\n" for n, sha in enumerate(entries)]
    history.run("update-ref", "--stdin", input_text="".join([*moves, f"delete {STASH}\n"]))
    made_of = history.run("rev-list", "--no-walk", "--parents", *set(entries)).splitlines()
    kept: set[str] = set()
    for line in filter(None, made_of):
        entry, _, *parts = line.split()  # the entry, the commit it was made on, the rest
        kept.update([entry, *parts])
    return kept


def put_back(history: History) -> None:
    """Store every entry set aside back on the stash, oldest first, each ref deleted as
    soon as its entry is stored (a kill in between leaves the newer ones aside, still in
    order for the next call)."""
    refs = history.run("for-each-ref", "--format=%(refname) %(objectname)", ASIDE).split("\n")
    for line in sorted(filter(None, refs)):
        ref, sha = line.split(" ")
        subject = history.run("log", "-1", "--format=%s", sha).strip()
        history.run("stash", "store", "-q", "-m", subject, sha)
        history.run("update-ref", "-d", ref, sha)
