"""What git knows about a file that its frontmatter does not say, kept in step with history.

- **Origin.** A hand-made file without an ``id`` gets an id derived from the path it had
  when it was first committed; git's rename detection follows it through moves, so the id
  survives them without memvault rewriting the file (the id is written into the file only
  when memvault next edits it).
- **A person's last edit.** The author date of the last commit by a person (no memvault
  operation, or ``external``) that touched the file. A memory's ``updated`` is the later of
  its frontmatter's and this, so a correction made in Obsidian counts as fresh.

The cache (``.memvault/provenance.json``) is disposable: it remembers the head it has read up
to and folds in only newer commits; after a history rewrite (purge) it is rebuilt.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .history import History
from .models import Commit
from .vault import Vault, save_state

log = logging.getLogger(__name__)

PERSON_OPS = (None, "external")  # commits without a memvault op are a person's (or their tools')
VERSION = 1


@dataclass
class Provenance:
    path: Path
    head: str | None = None
    origins: dict[str, str] = field(default_factory=dict)  # path -> first committed path
    edited: dict[str, str] = field(default_factory=dict)  # path -> ISO time of a person's edit
    # the watcher's thread and a write command's may both refresh
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def load(cls, path: Path) -> Provenance:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != VERSION:
                raise ValueError("other version")
            return cls(path, data["head"], dict(data["origins"]), dict(data["edited"]))
        except (OSError, ValueError, KeyError, TypeError):
            return cls(path)  # missing or unreadable: rebuilt from history

    def refresh(self, history: History, exists: Callable[[str], bool]) -> set[str]:
        """Fold in commits made since the last refresh; the paths whose origin or edit
        time changed (their index entries need re-reading). ``exists`` is asked of every
        path known (a file can leave in a merge's resolution, which names no file): it
        should be a look-up, not a file system call per path."""
        with self._lock:
            return self._refresh(history, exists)

    def fold_into(self, vault: Vault, history: History) -> set[str]:
        """:meth:`refresh`, then hand the vault what it says: the paths it changed."""
        # one walk of the folder, when there are new commits: an lstat per known path cost
        # 0.77 s per watcher commit at 10k files a person committed
        files = functools.cache(lambda: set(vault.walk()[0]))
        changed = self.refresh(history, lambda rel: rel in files())
        vault.origins, vault.edited = self.origins, self.edited
        if changed:
            vault.reset_catalog()
        return changed

    def _refresh(self, history: History, exists: Callable[[str], bool]) -> set[str]:
        head = history.head()
        if head == self.head:
            return set()
        since = self.head if self.head and head and history.is_ancestor(self.head, head) else None
        before = (dict(self.origins), dict(self.edited))
        if since is None:
            self.origins, self.edited = {}, {}
        for commit in history.commits_since(since):
            self._fold(commit)
        self.origins = {p: o for p, o in self.origins.items() if p != o and exists(p)}
        self.edited = {p: t for p, t in self.edited.items() if exists(p)}
        self.head = head
        self._save()
        return {
            p
            for old, new in zip(before, (self.origins, self.edited), strict=True)
            for p in set(old) | set(new)
            if old.get(p) != new.get(p) and exists(p)
        }

    def _fold(self, commit: Commit) -> None:
        for old, new in commit.renames:
            self.origins[new] = self.origins.pop(old, old)
            if old in self.edited:
                self.edited[new] = self.edited.pop(old)
        for rel in commit.deleted:  # a file made later at that path is another file
            self.origins.pop(rel, None)
            self.edited.pop(rel, None)
        if commit.trailers.get("Memvault-Op") in PERSON_OPS:
            for rel in set(commit.files).difference(commit.deleted):
                self.edited[rel] = commit.date

    def _save(self) -> None:
        data = {"version": VERSION, "head": self.head, "origins": self.origins}
        data["edited"] = self.edited
        try:  # a temporary file of its own: a server and a CLI command may save at once
            save_state(self.path, json.dumps(data))
        except OSError as exc:  # a cache: losing it costs one rebuild
            log.warning("could not save %s: %s", self.path, exc)
