"""Importing a folder of Markdown notes (an Obsidian vault, say) or a JSONL of memories.

Never harms, and can be repeated:

- a file that cannot be read (not UTF-8, malformed frontmatter, binary, too large, an ignored
  name, a symlink or FIFO) is skipped with a warning naming it; the rest imports (a name
  Windows refuses, ``What? Why.md``, is made portable: ``importer.portable``);
- each note maps to an existing memory by its frontmatter ``id``, else by the vault path it
  would get when an import wrote the file there (a note a person or an agent saved at that
  path is kept, and the imported one takes a free name, ``-2``..., and the import's links
  to it by that path, a knowledge graph's relations, follow it); an unchanged note is
  left alone (also when the vault's copy was edited after the import that wrote it: the
  source says what that import wrote), a changed one updates that same file (its id and
  memvault's own keys kept, the source's body and keys written), a new one is created;
  an id that an earlier note of the import (a copy) or another memory holds is not matched
  twice: that note is matched by path, and a new memory for it gets an id of its own;
- a new note without ``created`` gets its own ``date:``, else a Logseq journal page's
  day, else the date of the commit that added its file (a source in git: a clone's files
  all have the clone's time), else its source file's modification time, never after its
  own ``updated:`` (else a period, ``since:``/``until:``, would never select it);
- in a Logseq graph, a page's properties (``key:: value`` lines first in the file) become
  its frontmatter (``tags``, ``alias`` as lists: title, tags and aliases are read as such);
  elsewhere (Obsidian's Dataview fields) such lines are text, left as they are;
- a ``.txt`` file a note links or embeds is an attachment, not a note;
- non-Markdown files the notes link or embed are copied to the same relative path, unless
  the vault has another file there that no import wrote (kept; the attachment is skipped);
- everything is one commit (none when nothing changed); a failed import leaves no file.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import frontmatter, guard, ids, importer, merging, note, recovery, validate
from .errors import (
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    StaleRevisionError,
    UnsafePathError,
)
from .history import History
from .importer import ImportItem
from .models import LIFECYCLE_KEY, ChangeEvent, ImportReport, ImportSkip
from .vault import Vault

if TYPE_CHECKING:
    from .service import MemoryService

log = logging.getLogger(__name__)

# Keys memvault writes and keeps across re-imports when the source does not set them.
MEMVAULT_KEYS = frozenset(
    {
        "id",
        "type",
        "tags",
        "confidence",
        "importance",
        "created",
        "updated",
        "source",
        "scope",
        "supersedes",
        "superseded_by",
        "status",
        LIFECYCLE_KEY,
        "archived",
        "archived_reason",
    }
)
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
_MISSING = object()
_PER_ITEM = (
    InvalidInputError,
    UnsafePathError,
    MalformedMemoryError,
    MemoryNotFoundError,
    StaleRevisionError,
    OSError,
)


def import_path(
    service: MemoryService,
    source: Path,
    trailers: dict[str, str],
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import ``source`` (a folder or a .jsonl) into the service's vault as one commit."""
    source, vault = source.expanduser(), service.vault
    now = service.clock().replace(microsecond=0)
    max_bytes = service.settings.max_file_bytes
    if source.is_dir() and source.resolve().is_relative_to(vault.root.resolve()):
        raise InvalidInputError(
            f"{source} is the vault or a folder inside it: its notes are memories already "
            "(an import would copy them); give a folder outside the vault"
        )
    if source.is_dir():
        found = importer.from_folder(source, vault.is_memory_path, max_bytes, vault.root)
        entries = list(found)
    elif source.suffix.lower() in (".jsonl", ".ndjson") or (
        source.suffix.lower() == ".json" and importer.is_graph_file(source)
    ):
        entries = list(importer.from_jsonl(source, now))
    else:
        raise InvalidInputError(
            f"{source} is neither a folder nor a .jsonl file (nor the MCP memory server's "
            "memory.json): give the folder the notes are in"
            + (" (unzip the export first)" if source.suffix.lower() == ".zip" else "")
        )
    run = _Run(vault, service.history, source if source.is_dir() else None, now)
    for entry in entries:
        if isinstance(entry, ImportSkip):
            run.skip(entry)
    with vault.write_lock(service.settings.lock_timeout), vault.undoable(limit=None) as undo:
        recovery.ready(vault, service.history, "import")
        try:
            run.apply([e for e in entries if isinstance(e, ImportItem)])
            run.drop_ignored()
            run.check_something_imported(source)
            sha = service.history.commit(run.changed(), run.subject(source.name), trailers)
        except BaseException:
            recovery.take_back(vault, service.history, undo)
            raise
    written = [*run.new, *run.updated]
    service.sync_index(written, progress=progress)
    if run.changed():
        service.publish(ChangeEvent(changed=tuple(run.changed()), added=tuple(run.new)))
    return run.report(sha)


@dataclass
class _Run:
    """One import's state: what it wrote, skipped and kept (what it replaced: vault.undoable)."""

    vault: Vault
    history: History
    root: Path | None  # the source folder (None for JSONL)
    now: dt.datetime
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[ImportSkip] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)  # vault paths this import has matched
    ids: set[str] = field(default_factory=set)  # the source ids this import has taken
    written: list[str] = field(default_factory=list)  # every path this import wrote
    notes: list[tuple[ImportItem, frontmatter.Document]] = field(default_factory=list)
    by_id: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, list[str]] | None = None  # file name -> source paths, for bare embeds
    imported: dict[str, str] | None = None  # path -> the last import commit that changed it

    def skip(self, entry: ImportSkip) -> None:
        log.warning("import: skipped %s (%s): %s", entry.path, entry.reason, entry.detail)
        self.skipped.append(entry)

    def apply(self, items: list[ImportItem]) -> None:
        self.by_id = self.vault.id_map()
        if self.root is not None:  # a .txt file a note links or embeds is its attachment
            linked = self._linked_text(self.root, items)
            items = [i for i in items if i.origin is None or i.origin not in linked]
        placed: list[_Placed] = []
        for item in items:  # every path first: a link must reach where its note goes
            try:
                placed.append(self._place(item))
            except _PER_ITEM as exc:
                self.skip(ImportSkip(item.path, importer.reason_of(exc), str(exc)))
        taken = {p.path for p in placed}
        moved = {p.wanted[:-3]: p.path[:-3] for p in placed if p.wanted not in taken}
        for one in placed:
            try:
                self._put(_relinked(one, moved) if moved else one)
            except _PER_ITEM as exc:
                self.skip(ImportSkip(one.item.path, importer.reason_of(exc), str(exc)))
        if self.root is not None:
            self._attachments(self.root)

    def _place(self, item: ImportItem) -> _Placed:
        """Where the note goes, and whether a memory there is this note already."""
        doc = frontmatter.parse(item.text)
        raw_id = doc.meta.get("id")
        # a copy of a note (Obsidian's "make a copy" keeps the frontmatter) whose id an
        # earlier note of this import took gets an id of its own: no duplicate ids
        has_id = raw_id is not None and ids.is_id(str(raw_id)) and str(raw_id) not in self.ids
        given = str(raw_id) if has_id and "id" not in item.defaults else None
        folder, name = guard.import_target(self.vault, item)
        path, existing = self._match(given, folder, name, lambda p: self._holds(p, doc, item))
        self.claimed.add(path)
        if has_id:
            self.ids.add(str(raw_id))
        wanted = f"{folder}/{name}.md" if folder else f"{name}.md"
        return _Placed(item, doc, path, wanted, existing, str(raw_id) if has_id else None)

    def _put(self, placed: _Placed) -> None:
        item, doc, path = placed.item, placed.doc, placed.path
        if placed.existing:
            self._update(item, doc, path)
        else:
            own = placed.id is not None and placed.id not in self.by_id  # else another's id
            added: dict[str, Any] = {} if own else {"id": ids.new_id()}
            if "created" not in doc.meta and (when := _dated(doc, item)) is not None:
                added["created"] = when  # else since:/until: never select it
            text = frontmatter.render(doc, added) if added else item.text
            guard.check_memory_path(self.vault, path, path)
            validate.file_size(path, text, self.vault.max_file_bytes)
            self.vault.write(path, text, expected_hash="")
            self.written.append(path)
            self.new.append(path)
        self.notes.append((item, doc))

    def _match(
        self, given: str | None, folder: str, name: str, holds: Callable[[str], bool]
    ) -> tuple[str, bool]:
        """(vault path, whether a memory there is this note): by id, else by path, where
        an import wrote the file or it ``holds`` this note already. The n-th note wanting
        one path in this import gets its n-th free name (``-2``...)."""
        if given is not None:
            for path in self.by_id.get(given, []):
                if path not in self.claimed:
                    return path, True
            if given in self.by_id:
                given = None  # its memory is another note's: this one is matched by path
        return self._by_path(given, f"{folder}/{name}" if folder else name, holds)

    def _by_path(
        self, given: str | None, base: str, holds: Callable[[str], bool]
    ) -> tuple[str, bool]:
        kept = None  # the first path taken by a file no import wrote
        for n in range(1, 10_000):
            path = f"{base}.md" if n == 1 else f"{base}-{n}.md"
            if path in self.claimed:
                continue
            if not os.path.lexists(self.vault.abspath(path)):
                if kept:
                    log.warning(
                        "import: %s is not from an import: kept, the note is imported as %s",
                        kept,
                        path,
                    )
                return path, False
            if self._from_import(path) and (given is None or self._derived_id(path)):
                return path, True
            if holds(path):
                return path, True
            kept = kept or path
        raise InvalidInputError(f"{base}.md: no free name left for it in the vault")

    def _holds(self, path: str, doc: frontmatter.Document, item: ImportItem) -> bool:
        """Whether the vault's file at ``path`` says what the note says (copied in by hand:
        it is this note, unchanged, not a note to put beside it)."""
        try:
            current = frontmatter.parse(self.vault.read_bytes(path).decode("utf-8"))
        except (MalformedMemoryError, UnsafePathError, OSError, UnicodeDecodeError):
            return False
        return _same(current, doc, item.defaults)

    def _from_import(self, path: str) -> bool:
        """Whether an import wrote the vault's file at ``path`` (a re-import may update it);
        a note a person or an agent saved there is never replaced by an import."""
        if self.imported is None:
            self.imported = self.history.last_by_op("import")
        return path in self.imported

    def _derived_id(self, path: str) -> bool:
        """Whether the memory at ``path`` has no id of its own (it takes the source's)."""
        try:
            return self.vault.read(path).id_derived
        except (MalformedMemoryError, MemoryNotFoundError, UnsafePathError, OSError):
            return False

    def _update(self, item: ImportItem, doc: frontmatter.Document, path: str) -> None:
        memory = self.vault.read(path)
        if memory.problems:
            raise MalformedMemoryError(
                f"{path} in the vault has problems ({memory.problems[0]}): "
                "fix it by hand, then import again"
            )
        old = self.vault.read_bytes(path).decode("utf-8")
        current = frontmatter.parse(old)
        if _same(current, doc, item.defaults):
            self.unchanged += 1
            return
        base = self._last_imported(path)  # read once: for the check below and the merge
        if _says(base, doc, item.defaults):
            self.unchanged += 1  # the source did not change since the import that wrote it
            return
        changes: dict[str, Any] = {"id": memory.id}
        for key in sorted(MEMVAULT_KEYS - {"id"}):
            if key in current.meta and (key not in doc.meta or key in item.defaults):
                changes[key] = current.meta[key]
        if "updated" not in doc.meta or "updated" in item.defaults:
            changes["updated"] = self.now
        text = self._with_edits(path, base, old, frontmatter.render(doc, changes))
        validate.file_size(path, text, self.vault.max_file_bytes)
        self.vault.write(path, text, expected_hash=memory.content_hash)
        self.written.append(path)
        self.updated.append(path)

    def _with_edits(self, path: str, base: str | None, current: str, text: str) -> str:
        """``text`` (the source's new version) with what was edited in the vault since the
        import that wrote ``base`` merged in: field by field, line by line. An edit the
        source's change overlaps is never overwritten: the vault's file is kept."""
        if base is None or base == current:
            return text
        merged = merging.merge_memory(
            base, current, text, "import", self.now.isoformat(), self.history.merge_lines
        )
        if merged.conflict:
            raise InvalidInputError(
                f"{path} was edited in the vault since the last import, and the source "
                "changed the same lines: kept the vault's; bring the source's change in by hand"
            )
        return merged.text

    def _last_imported(self, path: str) -> str | None:
        """The text the last import that wrote ``path`` wrote (None: no import did)."""
        if not self._from_import(path):
            return None
        assert self.imported is not None
        (text,) = self.history.texts_at([(self.imported[path], path)])
        return text

    # -- attachments ----------------------------------------------------------
    def _linked_text(self, root: Path, items: list[ImportItem]) -> set[Path]:
        """The source's .txt files that its notes link or embed (``![[build.txt]]``)."""
        linked: set[Path] = set()
        for item in items:
            assert item.origin is not None  # folder imports set it
            base = item.origin.parent.relative_to(root).as_posix()
            for link in note.links(frontmatter.parse(item.text).body):
                if not link.target.strip().lower().endswith(".txt"):
                    continue
                try:
                    rel = self._resolve(root, "" if base == "." else base, link.target)
                except _PER_ITEM:
                    continue  # named by the attachments' step
                if rel is not None:
                    linked.add(root / rel)
        return linked

    def _attachments(self, root: Path) -> None:
        seen: set[str] = set()
        for item, doc in self.notes:
            assert item.origin is not None  # folder imports set it
            base = item.origin.parent.relative_to(root).as_posix()
            for link in note.links(doc.body):
                rel = None
                try:
                    rel = self._resolve(root, "" if base == "." else base, link.target)
                    if rel is None or rel in seen:
                        continue
                    seen.add(rel)
                    self._copy(root, rel)
                except _PER_ITEM as exc:
                    if rel is None:  # a bare name it cannot tell: named once
                        if link.target in seen:
                            continue
                        seen.add(link.target)
                    self.skip(ImportSkip(rel or link.target, importer.reason_of(exc), str(exc)))

    def _resolve(self, root: Path, base: str, target: str) -> str | None:
        """Source path of a linked non-Markdown file: relative to the note, to the source
        folder, or (a bare name, as Obsidian does) the file of that name nearest the note."""
        target = target.strip()
        if not target or target.lower().endswith(".md"):
            return None
        for given in (posixpath.join(base, target), target.lstrip("/")):
            rel = posixpath.normpath(given)
            if rel == ".." or rel.startswith(("../", "/")):
                continue
            full = root / rel
            if os.path.lexists(full) and not full.is_dir():
                return rel
        if "/" in target:
            return None
        return _nearest(base, self._names(root).get(target, []))

    def _names(self, root: Path) -> dict[str, list[str]]:
        if self.names is None:
            self.names = {}
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if not importer.pruned(d)]
                for name in filenames:
                    rel = (Path(dirpath) / name).relative_to(root).as_posix()
                    self.names.setdefault(name, []).append(rel)
        return self.names

    def _copy(self, root: Path, source: str) -> None:
        """Copy the attachment at ``source`` to the same path in the vault, made portable
        as the notes' paths are (a note in ``Q&A: 2024/`` is in ``Q&A 2024/``)."""
        rel = importer.portable(source)
        if any(importer.pruned(p) for p in rel.split("/")) or self.vault.is_ignored(rel):
            raise UnsafePathError(f"{root / source} is in a place memvault ignores")
        validate.relpath("path", rel)
        data = importer.read_regular(root / source, MAX_ATTACHMENT_BYTES)
        if os.path.lexists(self.vault.abspath(rel)):
            if self.vault.read_regular(rel) == data:
                return
            if not self._from_import(rel):
                raise InvalidInputError(
                    f"{rel}: the vault has another file there that no import wrote: kept it; "
                    "rename one of them to import this one"
                )
        self.vault.write(rel, data)
        self.written.append(rel)
        self.attachments.append(rel)

    def drop_ignored(self) -> None:
        """Take out again, as skipped, what git ignores (a .gitignore, the person's global
        excludes): it could not be committed, and the rest of the import can."""
        for path, rule in self.history.ignored(self.written).items():
            self.vault.delete(path)
            for done in (self.written, self.new, self.updated, self.attachments):
                if path in done:
                    done.remove(path)
            self.skip(ImportSkip(path, "ignored by git", f"git ignores {path} ({rule})"))

    # -- outcome --------------------------------------------------------------
    def check_something_imported(self, source: Path) -> None:
        if not (self.skipped or self.new or self.updated or self.unchanged):
            what = "note (a .md or .txt file outside dot-folders)" if self.root else "memory"
            raise InvalidInputError(f"nothing was imported from {source}: it holds no {what}")
        if self.skipped and not (self.new or self.updated or self.unchanged):
            more = f" ({len(self.skipped) - 1} more skipped)" if len(self.skipped) > 1 else ""
            raise InvalidInputError(
                f"nothing was imported from {source}: {self.skipped[0].detail}{more}"
            )

    def changed(self) -> list[str]:
        return list(self.written)

    def subject(self, name: str) -> str:
        return (
            f"import: {len(self.new)} new, {len(self.updated)} updated, "
            f"{len(self.attachments)} attachments from {name}"
        )

    def report(self, sha: str | None) -> ImportReport:
        return ImportReport(
            imported=len(self.new),
            commit=sha,
            paths=(*self.new, *self.updated),
            updated=len(self.updated),
            unchanged=self.unchanged,
            skipped=tuple(self.skipped),
            attachments=tuple(self.attachments),
        )


@dataclass(frozen=True)
class _Placed:
    """A note of the import and the vault path it goes to (``wanted``: the one it asked
    for, when that was taken by a person's note)."""

    item: ImportItem
    doc: frontmatter.Document
    path: str
    wanted: str
    existing: bool  # a memory at ``path`` is this note (updated, not created)
    id: str | None  # the id the note brings, when it may keep it


def _relinked(placed: _Placed, moved: dict[str, str]) -> _Placed:
    """``placed`` with its links by full path (``[[entities/Anthropic|Anthropic]]``, as a
    knowledge graph's relations are written) to a note put beside a person's note of its
    name (``entities/Anthropic-2``) pointing there: else they would reach the person's
    note. Only links by the path asked for change (a bare name is one at the vault's top):
    Obsidian resolves other bare names itself."""
    text = placed.item.text
    for wanted, path in moved.items():
        for end in ("|", "]]", "#"):
            text = text.replace(f"[[{wanted}{end}", f"[[{path}{end}")
    if text == placed.item.text:
        return placed
    item = replace(placed.item, text=text)
    return replace(placed, item=item, doc=frontmatter.parse(text))


def _dated(doc: frontmatter.Document, item: ImportItem) -> dt.datetime | None:
    """When a note without ``created`` was written: its own ``date:`` (a common template
    key) when it reads as one, else what the source says (a journal's day, the commit that
    added the file, the file's modification time), never after its own ``updated:``."""
    own = note.parse_time(doc.meta.get("date")) if doc.meta.get("date") else None
    when = own or item.dated
    updated = note.parse_time(doc.meta.get("updated")) if doc.meta.get("updated") else None
    if when is not None and updated is not None and updated < when:
        return updated  # a copy's or a clone's time is not when it was written
    return when


def _nearest(base: str, found: list[str]) -> str | None:
    """Of the files called by one name, the one Obsidian shows for a bare embed: in the
    note's folder ``base``, else the shortest path (then the first by name); the rule of
    ``links._nearest`` (``getFirstLinkpathDest``), for source paths (None for none)."""
    return min(found, key=lambda rel: (posixpath.dirname(rel) != base, len(rel), rel), default=None)


def _says(base: str | None, doc: frontmatter.Document, defaults: frozenset[str]) -> bool:
    """Whether ``base`` (what the last import wrote, None: none did) says what the source
    says now: then the vault's copy, edited since or not, is left as it is."""
    try:
        return base is not None and _same(frontmatter.parse(base), doc, defaults)
    except MalformedMemoryError:
        return False


def _same(
    vault_doc: frontmatter.Document, doc: frontmatter.Document, ignore: frozenset[str]
) -> bool:
    """The vault's copy says what the source says: same body, same value for every key the
    source sets (its id and keys memvault filled in aside), no key the source dropped
    (memvault's own keys aside)."""
    if vault_doc.body != doc.body:
        return False
    keys = set(doc.meta) - ignore - {"id"}
    if any(vault_doc.meta.get(key, _MISSING) != doc.meta[key] for key in keys):
        return False
    return all(key in doc.meta or key in MEMVAULT_KEYS for key in vault_doc.meta)
