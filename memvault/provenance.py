"""What git knows about a file that its frontmatter does not say, kept in step with history.

- **Origin.** A hand-made file without an ``id`` gets an id derived from the path it had
  when it was first committed; git's rename detection follows it through moves, so the id
  survives them without memvault rewriting the file (the id is written into the file only
  when memvault next edits it).
- **A person's last edit.** The author date of the last commit by a person (no memvault
  operation, or ``external``) that touched the file. A memory's ``updated`` is the later of
  its frontmatter's and this, so a correction made in Obsidian counts as fresh.
- **When it came in.** The earliest author date of a commit that added the file (moves
  followed; a deletion forgets it, so a later file of that name is new). A file without
  ``created:`` (a note written in Obsidian, imported, taken in by ``init``) counts as
  created then, so ``since:``/``until:`` and sorting by creation do not pass it over. It
  is not its ``updated``: a note taken in is not news, for recency or for forgetting.

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
from .note import timestamp

log = logging.getLogger(__name__)

PERSON_OPS = (None, "external")  # commits without a memvault op are a person's (or their tools')
VERSION = 2


@dataclass
class Provenance:
    path: Path
    head: str | None = None
    origins: dict[str, str] = field(default_factory=dict)  # path -> first committed path
    edited: dict[str, str] = field(default_factory=dict)  # path -> ISO time of a person's edit
    added: dict[str, str] = field(default_factory=dict)  # path -> ISO time it was first added
    # the watcher's thread and a write command's may both refresh
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def load(cls, path: Path) -> Provenance:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != VERSION:
                raise ValueError("other version")
            origins, edited, added = (dict(data[k]) for k in ("origins", "edited", "added"))
            return cls(path, data["head"], origins, edited, added)
        except (OSError, ValueError, KeyError, TypeError):
            return cls(path)  # missing or unreadable: rebuilt from history

    def refresh(
        self,
        history: History,
        exists: Callable[[str], bool],
        undated: Callable[[set[str]], set[str]] = set,
    ) -> set[str]:
        """Fold in commits made since the last refresh; the paths whose origin or edit
        time changed, and those of ``undated(paths whose first commit changed)``: their
        index entries need re-reading."""
        with self._lock:
            return self._refresh(history, exists, undated)

    @property
    def maps(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        return self.origins, self.edited, self.added

    def _refresh(
        self,
        history: History,
        exists: Callable[[str], bool],
        undated: Callable[[set[str]], set[str]],
    ) -> set[str]:
        head = history.head()
        if head == self.head:
            return set()
        since = self.head if self.head and head and history.is_ancestor(self.head, head) else None
        before = [dict(known) for known in self.maps]
        if since is None:
            self.origins, self.edited, self.added = {}, {}, {}
        touched: set[str] = set()
        for commit in history.commits_since(since):
            self._fold(commit)
            touched.update(commit.files, *commit.renames)

        @functools.cache
        def kept(rel: str) -> bool:
            # a file only leaves history by a commit that touches it: checking the others
            # (an lstat walk each) cost 0.77 s per watcher commit at 10k person-made files
            return (since is not None and rel not in touched) or exists(rel)

        self.origins = {p: o for p, o in self.origins.items() if p != o and kept(p)}
        self.edited = {p: t for p, t in self.edited.items() if kept(p)}
        self.added = {p: t for p, t in self.added.items() if kept(p)}
        self.head = head
        self._save()
        moved, edited, added = (
            {p for p in set(old) | set(new) if old.get(p) != new.get(p) and kept(p)}
            for old, new in zip(before, self.maps, strict=True)
        )
        return moved | edited | (undated(added) if added else set())

    def _fold(self, commit: Commit) -> None:
        for old, new in commit.renames:
            self.origins[new] = self.origins.pop(old, old)
            for known in (self.edited, self.added):
                if old in known:
                    known[new] = known.pop(old)
        for rel in commit.deleted:
            self.added.pop(rel, None)
        for rel in commit.added:  # the earliest: a file added on two branches, then merged
            first = self.added.get(rel)
            if first is None or timestamp(commit.date) < timestamp(first):
                self.added[rel] = commit.date
        if commit.trailers.get("Memvault-Op") in PERSON_OPS:
            for rel in commit.files:
                self.edited[rel] = commit.date

    def _save(self) -> None:
        data = {"version": VERSION, "head": self.head, "origins": self.origins}
        data["edited"], data["added"] = self.edited, self.added
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as exc:  # a cache: losing it costs one rebuild
            log.warning("could not save %s: %s", self.path, exc)
