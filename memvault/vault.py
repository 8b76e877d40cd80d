"""The vault folder: which files are memories, reading them tolerantly, atomic writes.

Knows nothing of git, the index or MCP.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import pathspec

from . import fields, frontmatter, ids, validate
from .errors import (
    LockTimeoutError,
    MalformedMemoryError,
    MemoryNotFoundError,
    ReadOnlyVaultError,
    StaleRevisionError,
    UnsafePathError,
)
from .models import SPELLINGS, Memory, Problem, spelling

log = logging.getLogger(__name__)

STATE_DIR = ".memvault"
IGNORED_DIRS = frozenset({".git", ".obsidian", STATE_DIR, ".trash", "_templates", "_schemas"})
TEMP_PATTERNS = ("*.tmp", "*.swp", "*.swx", "~$*", ".#*", "*~")
_TEMP_NAME = re.compile("|".join(fnmatch.translate(p) for p in TEMP_PATTERNS))
IGNORE_FILE = ".memvaultignore"
# Obsidian's template folders (the core Templates plugin's, Templater's): their notes hold
# placeholders such as {{date}}, not memories, wherever the person keeps them
TEMPLATE_SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)


def writable(root: Path) -> bool:
    """Whether memvault may write the vault at ``root``: its state folder (else, before it
    is made, the vault's folder) can be written (not a read-only mount; permissions)."""
    state = root / STATE_DIR
    return os.access(state if state.is_dir() else root, os.W_OK)


def state_elsewhere(root: Path) -> Path:
    """Where the index and state of a read-only vault go (they are caches): the person's
    cache folder, one per vault."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    return Path(cache) / "memvault" / "read-only" / f"{root.name}-{digest}"


def is_temporary(name: str) -> bool:
    """Whether a file name is an editor's or a program's temporary file (``*.swp``, ...)."""
    return _TEMP_NAME.match(name) is not None


WRITE_JOURNAL = "pending-writes"  # in STATE_DIR: paths written, maybe not committed yet
WRITTEN_MEMORY = 10_000
UNDO_BYTES = 64 * 1024 * 1024  # what a write may replace and still be taken back in full


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class CatalogEntry:
    mtime_ns: int
    size: int
    id: str


class Vault:
    """A folder of Markdown memories."""

    def __init__(
        self, root: Path, max_file_bytes: int = 1_000_000, read_only: bool = False
    ) -> None:
        self.root = root.expanduser().resolve()
        self.max_file_bytes = max_file_bytes
        # a vault memvault may not write: reads only, its index and state kept elsewhere
        self.read_only = read_only
        self._state = state_elsewhere(self.root) if read_only else self.root / STATE_DIR
        # the texts of .memvaultignore in force: the settled one, then any seen while a
        # person saves it (see reload_ignore); a path any of them hides is hidden
        self._ignores: tuple[tuple[str, ...], ...] = (self.ignore_lines(),)
        self._ignore = _any_of(self._ignores)
        self._templates = template_folders(self.root)
        # What this process last wrote to each path (hash; "" for a deletion), so a
        # watcher can tell memvault's own writes from a person's edits (see last_written).
        self._written: dict[str, str] = {}
        self._written_lock = threading.Lock()
        # While set (by the service, under its write lock), every path memvault writes is
        # appended here first, so a crash leftover can be told from a person's edit.
        self.journal: Path | None = None
        # From git, set by the service (see provenance): the first committed path of
        # moved files (an id-less file's id comes from it) and when a person last edited.
        self.origins: dict[str, str] = {}
        self.edited: dict[str, str] = {}
        self._undo: Undo | None = None  # see undoable

    @property
    def state_dir(self) -> Path:
        """``.memvault/``: the index and memvault's state (see :func:`state_elsewhere`)."""
        return self._state

    def ignore_lines(self) -> tuple[str, ...]:
        """The lines of ``.memvaultignore`` as the file is now (none when it is missing).
        Raises OSError when it is there but cannot be read."""
        path = self.root / IGNORE_FILE
        try:
            if not path.is_file():
                return ()
            return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())
        except FileNotFoundError:  # deleted since is_file()
            return ()

    @property
    def ignore_texts(self) -> tuple[tuple[str, ...], ...]:
        """The ``.memvaultignore`` texts in force: the settled one first, then those read
        while a save of it settles (a path any of them hides is hidden)."""
        return self._ignores

    def reload_ignore(self, settled: bool) -> bool:
        """Read ``.memvaultignore`` again while a person saves it (the watcher's part).

        Until the save has ``settled``, what the file hides now is hidden *as well as* what
        it hid: a half-written, empty or briefly missing file never un-hides a note. Once
        settled, the file alone applies. Whether the rule changed (the caller brings the
        index in line). Raises OSError when the file cannot be read: nothing changes."""
        lines = self.ignore_lines()
        texts = (lines,) if settled else tuple(dict.fromkeys([*self._ignores, lines]))
        if texts == self._ignores:
            return False
        self._ignores, self._ignore = texts, _any_of(texts)
        return True

    # -- which files are memories -------------------------------------------
    def is_ignored(self, rel: str) -> bool:
        """The one ignore rule: memvault's, git's and Obsidian's folders, dot-files,
        ``.memvaultignore`` patterns. Applies to folders and files alike."""
        if rel in ("", "."):
            return True
        if any(p in IGNORED_DIRS or p.startswith(".") for p in rel.split("/")):
            return True
        if any(rel == t or rel.startswith(t + "/") for t in self._templates):
            return True
        return self._ignore is not None and self._ignore(rel)

    def hidden(self) -> Callable[[str], bool]:
        """Whether a person hid a path with ``.memvaultignore`` (a pattern matching it or a
        folder holding it), as the file says now or as any text of it in force says (a
        save of it still settling, see reload_ignore): memvault never commits such a path
        (it stays uncommitted, the person's to keep)."""
        try:
            rule = _any_of(tuple(dict.fromkeys((self.ignore_lines(), *self._ignores))))
        except OSError as exc:  # unreadable now: the rules in force
            log.warning("cannot read %s (%s): using the rules read before", IGNORE_FILE, exc)
            rule = self._ignore
        return rule or (lambda rel: False)

    def is_memory_path(self, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        if not name.lower().endswith(".md") or is_temporary(name):
            return False
        return not self.is_ignored(rel)

    def iter_paths(self) -> Iterator[str]:
        """Vault-relative paths of every memory file, sorted; only regular files (no
        symlinks, FIFOs or devices: see :meth:`unsafe_paths`)."""
        yield from sorted(self.walk()[0])

    def unsafe_paths(self) -> list[str]:
        """Memory-named entries that are not regular files (symlinks, FIFOs, sockets...)."""
        return self.walk()[1]

    def walk(self) -> tuple[dict[str, tuple[int, int]], list[str]]:
        """One pass over the folder: (mtime_ns, size) of every memory file by path, and the
        memory-named entries that are not regular files (sorted). Symlinked folders are not
        entered and no file is opened (one lstat each, from the directory listing)."""
        regular: dict[str, tuple[int, int]] = {}
        unsafe: list[str] = []
        ignore, folders = self._ignore, [(str(self.root), "")]
        while folders:
            folder, prefix = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name[0] == ".":  # dot-files and dot-folders are ignored
                    continue
                if _is_folder(entry):  # a symlinked folder is neither entered nor a memory
                    inside = prefix + name
                    kept = name not in IGNORED_DIRS and inside not in self._templates
                    if kept and not entry.is_symlink():
                        folders.append((entry.path, inside + "/"))
                    continue
                if name[-3:].lower() != ".md" or is_temporary(name):
                    continue
                rel = prefix + name
                if ignore is None or not ignore(rel):
                    _note(entry, rel, regular, unsafe)
        return regular, sorted(unsafe)

    def check_regular(self, rel: str) -> Path:
        """Absolute path of ``rel`` when it is a regular file inside the vault.

        Raises UnsafePathError for a symlink (anywhere on the path), a FIFO, socket or
        device, or a path leading outside; FileNotFoundError when nothing is there.
        Never opens the file (opening a FIFO for reading blocks forever).
        """
        path = self.abspath(rel)
        self._check_regular_at(path, path.relative_to(self.root).as_posix())
        return path

    def _check_regular_at(self, path: Path, rel: str) -> os.stat_result:
        """:meth:`check_regular` of the resolved ``path`` (its lstat when it passes)."""
        st = os.lstat(path)
        mode = st.st_mode
        if stat.S_ISLNK(mode) or os.path.realpath(path) != str(path):
            raise UnsafePathError(
                f"{rel} is a symlink: memvault never reads or commits symlinks; "
                "replace it with a regular file or remove it"
            )
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
            raise UnsafePathError(
                f"{rel} is not a regular file ({kind}): it is skipped; remove or rename it"
            )
        return st

    def is_safe_file(self, rel: str) -> bool:
        """True for a regular file inside the vault (see :meth:`check_regular`)."""
        try:
            self.check_regular(rel)
        except (UnsafePathError, OSError):
            return False
        return True

    def read_regular(self, rel: str) -> bytes:
        """Bytes of a regular file inside the vault; refuses anything else unopened."""
        return self._read_regular_at(self.check_regular(rel), rel)

    def _read_regular_at(self, path: Path, rel: str) -> bytes:
        """:meth:`read_regular` of a ``path`` that passed :meth:`_check_regular_at`."""
        # O_NOFOLLOW|O_NONBLOCK: a symlink or FIFO swapped in after the check is not
        # followed and cannot block; fstat confirms what was opened.
        fd = os.open(
            path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        )
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise UnsafePathError(f"{rel} is not a regular file: it is skipped")
            return handle.read()

    def stats(self, paths: Iterable[str] | None = None) -> dict[str, tuple[int, int]]:
        """(mtime_ns, size) of every memory file (or of ``paths`` that exist)."""
        if paths is None:
            return self.walk()[0]
        out = {}
        for rel in paths:
            try:
                st = (self.root / rel).stat()
            except OSError:
                continue
            out[rel] = (st.st_mtime_ns, st.st_size)
        return out

    # -- reading --------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        return ids.resolve_inside(self.root, rel)

    def read(self, rel: str) -> Memory:
        """Parse one file. Malformed frontmatter gives a read-only Memory with problems.

        Raises MemoryNotFoundError, MalformedMemoryError (binary, too large).
        """
        path = self.abspath(rel)
        rel = path.relative_to(self.root).as_posix()
        if not os.path.lexists(path) or os.path.isdir(path):
            raise MemoryNotFoundError(f"no memory file at {rel!r}: check the path with `list`")
        return self.parse_bytes(rel, self._read_note(path, rel))

    def _read_note(self, path: Path, rel: str) -> bytes:
        """The bytes of a regular file no bigger than ``max_file_bytes``."""
        size = self._check_regular_at(path, rel).st_size  # a regular file: as stat() says
        if size > self.max_file_bytes:
            raise MalformedMemoryError(
                f"{rel} is {size:,} bytes, over the {self.max_file_bytes:,}-byte limit: "
                "it is not indexed; split it or raise max_file_bytes",
                kind="too_large",
            )
        return self._read_regular_at(path, rel)

    def parse_bytes(self, rel: str, data: bytes) -> Memory:
        digest = content_hash(data)
        _refuse_binary(rel, data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMemoryError(
                f"{rel} is not UTF-8 text (byte {exc.start}): re-save it as UTF-8",
                kind="encoding",
            ) from exc
        try:
            doc = frontmatter.parse(text)
        except MalformedMemoryError as exc:
            body = text.lstrip(frontmatter.BOM).replace("\r\n", "\n")
            problem = (f"{rel}: {exc}",)
            return Memory(self.derived_id(rel), rel, {}, body, digest, True, problem)
        edited = self.edited.get(rel)
        raw_id = doc.meta.get("id")
        if raw_id is not None and ids.is_id(str(raw_id)):
            return Memory(str(raw_id), rel, doc.meta, doc.body, digest, edited=edited)
        problems: tuple[str, ...] = ()
        if raw_id is not None:
            problems = (f"{rel}: id {raw_id!r} is not a valid id; a derived id is used",)
        memory_id = self.derived_id(rel)
        return Memory(memory_id, rel, doc.meta, doc.body, digest, True, problems, edited)

    def derived_id(self, rel: str) -> str:
        """The id of a file without one: from the path it was first committed at."""
        return ids.derived_id(self.origins.get(rel, rel))

    def read_bytes(self, rel: str) -> bytes:
        return self.read_regular(rel)

    def read_text(self, rel: str) -> str:
        """A file exactly as stored, as text (bytes that are not UTF-8 shown replaced); a
        binary file or one over ``max_file_bytes`` is refused, as every read of it is."""
        path = self.abspath(rel)
        data = self._read_note(path, path.relative_to(self.root).as_posix())
        _refuse_binary(rel, data)
        return data.decode("utf-8", errors="replace")

    def scan(self) -> tuple[list[Memory], list[Problem]]:
        """Every readable memory, and a problem for every file that is not."""
        regular, unsafe = self.walk()
        memories, problems = self.read_all(sorted(regular))
        return memories, problems + self.unsafe_problems(unsafe)

    def read_all(self, paths: Iterable[str]) -> tuple[list[Memory], list[Problem]]:
        """The readable memories among ``paths``, and a problem for every file that is not
        (and for every problem a readable one has)."""
        memories: list[Memory] = []
        problems: list[Problem] = []
        for rel in paths:
            try:
                memory = self.read(rel)
            except MalformedMemoryError as exc:
                problems.append(Problem(rel, exc.kind, str(exc)))
                continue
            except (OSError, UnsafePathError, MemoryNotFoundError) as exc:
                problems.append(Problem(rel, "unreadable", f"{rel}: {exc}"))
                continue
            memories.append(memory)
            problems.extend(Problem(rel, "malformed", p) for p in memory.problems)
        return memories, problems

    def unsafe_problems(self, paths: Iterable[str] | None = None) -> list[Problem]:
        """A problem for every memory-named symlink or non-regular file (never read), of
        the vault or among ``paths`` (as :meth:`walk` found them)."""
        out = []
        for rel in self.unsafe_paths() if paths is None else paths:
            try:
                self.check_regular(rel)
            except UnsafePathError as exc:
                out.append(Problem(rel, "unsafe", str(exc)))
            except OSError:
                continue  # vanished meanwhile
        return out

    # -- id lookup ------------------------------------------------------------
    def id_map(self) -> dict[str, list[str]]:
        """id -> paths, from a stat-keyed cache so unchanged files are not re-read."""
        cache_path = self.state_dir / "catalog.json"
        cache = _load_catalog(cache_path)
        fresh: dict[str, CatalogEntry] = {}
        for rel in self.iter_paths():
            try:
                st = (self.root / rel).stat()
            except OSError:
                continue
            entry = cache.get(rel)
            if entry is None or entry.mtime_ns != st.st_mtime_ns or entry.size != st.st_size:
                try:
                    memory_id = self.read(rel).id
                except (MalformedMemoryError, MemoryNotFoundError, UnsafePathError, OSError):
                    memory_id = self.derived_id(rel)
                entry = CatalogEntry(st.st_mtime_ns, st.st_size, memory_id)
            fresh[rel] = entry
        if fresh != cache:
            _save_catalog(cache_path, fresh)
        by_id: dict[str, list[str]] = {}
        for rel, entry in fresh.items():
            by_id.setdefault(entry.id, []).append(rel)
        return by_id

    def reset_catalog(self) -> None:
        """Forget the id catalog (rebuilt on next use): derived ids changed."""
        (self.state_dir / "catalog.json").unlink(missing_ok=True)

    def locate(self, id_or_path: str) -> str:
        """Vault-relative path of a memory given its id or its path."""
        text = id_or_path.strip()
        if ids.is_id(text):
            paths = self.id_map().get(text)
            if paths:
                if len(paths) > 1:
                    log.warning("id %s is used by %s; using %s", text, paths, paths[0])
                return paths[0]
        rel = ids.clean_relpath(text)
        if not rel.lower().endswith(".md") and (self.root / f"{rel}.md").exists():
            rel = f"{rel}.md"
        if not os.path.lexists(self.root / rel):  # a Mac's decomposed name, asked composed
            rel = _as_spelled(self.root, rel) or _as_spelled(self.root, f"{rel}.md") or rel
        self.abspath(rel)  # symlink escape check
        if (self.root / rel).is_file():
            if not self.is_memory_path(rel):
                raise UnsafePathError(f"{rel!r} is not a memory file (ignored path)")
            return rel
        raise MemoryNotFoundError(
            f"no memory with id or path {id_or_path!r}: use `list` or `recall` to find it"
        )

    # -- writing --------------------------------------------------------------
    @contextmanager
    def write_lock(self, timeout: float) -> Iterator[None]:
        """The vault's cross-process write lock (every MCP host runs its own server); a
        read-only vault refuses every write here, before anything is written."""
        if self.read_only:
            raise ReadOnlyVaultError(
                f"the vault {self.root} is read-only (a read-only mount, or its permissions): "
                "nothing was written. Reads work; to write, make it writable (remount it "
                "read-write, or `chmod -R u+w` it) and retry"
            )
        lock = filelock.FileLock(str(self.state_dir / "write.lock"), timeout=timeout)
        try:
            lock.acquire()
        except filelock.Timeout as exc:
            raise LockTimeoutError(
                f"another memvault process held the vault lock for {timeout}s: "
                "retry, or look for a stuck process"
            ) from exc
        journal = self.state_dir / WRITE_JOURNAL
        leftovers = journal.exists()  # an earlier write failed before its commit: keep them
        self.journal = journal
        try:
            yield
            if not leftovers:
                journal.unlink(missing_ok=True)
        finally:
            self.journal = None
            lock.release()

    def journal_paths(self) -> set[str]:
        """Paths memvault wrote under its lock and may not have committed (crash leftovers).

        A journal that cannot be read, or lines of it that are no path (bytes that are not
        UTF-8, a NUL: a disk's or a person's damage), count for nothing: those files are
        then committed as a person's edits, under the wrong name but never lost."""
        try:
            data = (self.state_dir / WRITE_JOURNAL).read_bytes()
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("cannot read the write journal (%s): leftovers count as edits", exc)
            return set()
        lines = data.decode("utf-8", errors="replace").splitlines()
        paths = {line for line in lines if line and "\ufffd" not in line and "\0" not in line}
        if len(paths) < len(set(lines) - {""}):
            log.warning("the write journal holds damaged lines: they are skipped")
        return paths

    def unjournal(self, paths: Sequence[str]) -> None:
        """Take ``paths`` out of the write journal (files memvault no longer answers for)."""
        if not paths:
            return
        kept, journal = self.journal_paths() - set(paths), self.state_dir / WRITE_JOURNAL
        if kept:
            journal.write_text("".join(f"{p}\n" for p in sorted(kept)), encoding="utf-8")
        else:
            journal.unlink(missing_ok=True)

    def save_leftovers(self, paths: Iterable[str]) -> list[Path]:
        """Temporary files of atomic saves that a kill left (written, never renamed): the
        text of a memory beside each of ``paths`` (``.name.XXXXXXXX.tmp``), and paths and
        ids in the state folder's caches. What a purge erases with the memory."""
        found: list[Path] = []
        for rel in paths:
            try:
                full = self.abspath(rel)
            except UnsafePathError:
                continue
            prefix = _temp_prefix(full.name)
            found += [
                entry
                for entry in _files_in(full.parent)
                if entry.name.startswith(prefix) and _TEMP_TAIL.fullmatch(entry.name[len(prefix) :])
            ]
        found += [e for e in _files_in(self.state_dir) if _STATE_TEMP.fullmatch(e.name)]
        return found

    def clear_journal(self) -> None:
        (self.state_dir / WRITE_JOURNAL).unlink(missing_ok=True)

    def write(self, rel: str, text: str | bytes, expected_hash: str | None = None) -> str:
        """Atomically write ``rel`` (text as UTF-8, or bytes as they are); refuse if its
        content hash is not ``expected_hash``.

        ``expected_hash`` of ``""`` means the file must not exist yet. Returns the new hash.
        """
        path = self.abspath(rel)
        self.check_unchanged(rel, expected_hash)
        made = self._make_folders(path.parent)
        data = text.encode("utf-8") if isinstance(text, str) else text
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path.name), suffix=".tmp")
        try:
            os.fchmod(fd, _file_mode(path))  # mkstemp's 0600 would replace the file's own
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            digest = content_hash(data)
            self._remember_write(rel, digest)
            # A person may have saved while the temporary file was written and synced
            # (milliseconds): checked again at the last moment, so their save is refused
            # over, not replaced. A new file is linked in, which fails if one appeared.
            self.check_unchanged(rel, expected_hash)
            if expected_hash == "":
                _link_new(tmp, path, rel)
            else:
                os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            remove_empty(made)
            raise
        return digest

    def _make_folders(self, folder: Path) -> list[Path]:
        """Create ``folder`` and its missing parents; the ones created, outermost first
        (a write taken back removes them again, when empty: see :class:`Undo`)."""
        made: list[Path] = []
        while not os.path.lexists(folder) and folder != self.root:
            made.insert(0, folder)
            folder = folder.parent
        for each in made:
            each.mkdir(exist_ok=True)
        if self._undo is not None:
            self._undo.folders += made
        return made

    def check_unchanged(self, rel: str, expected_hash: str | None) -> None:
        """Refuse when ``rel``'s content hash is not ``expected_hash`` ("": no file)."""
        if expected_hash is None:
            return
        path = self.abspath(rel)
        current = content_hash(self.read_regular(rel)) if os.path.lexists(path) else ""
        if current != expected_hash:
            raise StaleRevisionError(
                f"{rel} changed since it was read (revision {current or 'absent'}, "
                f"expected {expected_hash or 'absent'}): read it again and retry"
            )

    def rewrite(
        self, memory: Memory, changes: dict[str, Any], body: str | None, now: dt.datetime
    ) -> None:
        """Minimal-edit rewrite of a memory's file (``updated`` set to ``now`` unless given);
        refuses files memvault cannot parse and files changed since ``memory`` was read."""
        if memory.problems:
            raise MalformedMemoryError(
                f"{memory.path} has problems memvault will not paper over "
                f"({memory.problems[0]}): fix the file by hand first"
            )
        doc = frontmatter.parse(self.read_bytes(memory.path).decode("utf-8"))
        changes = fields.place_status(memory.meta, changes)
        # under the person's own key (`Tags:`, `Type:`, `Importance:`), never a second one
        spelled = {key: spelling(memory.meta, key) for key in SPELLINGS}
        changes = {spelled.get(key, key): value for key, value in changes.items()}
        if memory.id_derived:
            changes = {"id": memory.id, **changes}
        changes.setdefault("updated", now)
        text = frontmatter.render(doc, changes, body)
        frontmatter.check_edit(text, changes)
        validate.file_size(memory.path, text, self.max_file_bytes)
        self.write(memory.path, text, expected_hash=memory.content_hash)

    @contextmanager
    def undoable(self, limit: int | None = UNDO_BYTES) -> Iterator[Undo]:
        """While the block runs, what each write, move and deletion replaces is kept (up
        to ``limit`` bytes in all), so a write whose commit fails can be taken back (the
        caller holds the write lock)."""
        undo = Undo(self, limit)
        self._undo = undo
        try:
            yield undo
        finally:
            self._undo = None

    def _remember_write(self, rel: str, digest: str) -> None:
        rel = self.abspath(rel).relative_to(self.root).as_posix()
        if self._undo is not None:
            self._undo.keep(rel)
        if self.journal is not None:
            with open(self.journal, "a", encoding="utf-8") as handle:
                handle.write(rel + "\n")
        with self._written_lock:
            self._written.pop(rel, None)
            self._written[rel] = digest
            while len(self._written) > WRITTEN_MEMORY:
                self._written.pop(next(iter(self._written)))

    def last_written(self, rel: str) -> str | None:
        """Hash of what this process last wrote to ``rel`` ("" for a deletion), or None."""
        with self._written_lock:
            return self._written.get(rel)

    def delete(self, rel: str) -> None:
        self._remember_write(rel, "")
        self.abspath(rel).unlink()

    def move(self, src: str, dst: str) -> None:
        target = self.abspath(dst)
        if target.exists():
            raise UnsafePathError(f"{dst} already exists: choose another path")
        self._make_folders(target.parent)
        source = self.abspath(src)
        self._remember_write(src, "")
        self._remember_write(dst, content_hash(self.read_regular(src)))
        os.replace(source, target)

    def spelled(self, folder: str) -> str:
        """``folder`` as the vault spells it: its first part in the case of the one folder
        the person has that differs only in case (their ``Inbox/`` for ``inbox``), else as
        given."""
        top, _, rest = folder.partition("/")
        if not top or os.path.lexists(self.root / top):
            return folder
        same = case_variants(self.root, top)
        return f"{same[0]}/{rest}".rstrip("/") if len(same) == 1 else folder

    def free_path(self, folder: str, slug: str) -> str:
        """A path ``folder/slug.md`` that does not exist yet (suffix -2, -3 ...), nor in
        another case or Unicode form (the person's ``Wi-Fi.md`` for ``wi-fi``, a Mac's
        decomposed ``café.md``): on macOS and Windows those are one file, and a clone there
        would check out one over the other. A name Windows reserves (``nul``, ``com1``)
        is never given either."""
        folder = ids.clean_relpath(folder) if folder.strip("/ ") else ""
        base = f"{folder}/{slug}" if folder else slug
        taken = _folded_names((self.root / base).parent)  # slug may hold folders (archive)
        candidate, n = f"{base}.md", 2
        while (self.root / candidate).exists() or _clashes(candidate, taken):
            candidate, n = f"{base}-{n}.md", n + 1
        self.abspath(candidate)
        return candidate


def _as_spelled(root: Path, rel: str) -> str | None:
    """``rel`` as the disk spells it where it differs only in Unicode form (``café`` asked
    for a Mac's decomposed ``café``), when one entry matches each part; else None."""
    parts: list[str] = []
    for part in rel.split("/"):
        here = root.joinpath(*parts)
        if os.path.lexists(here / part):
            parts.append(part)
            continue
        want = unicodedata.normalize("NFC", part)
        try:
            same = [
                e.name for e in os.scandir(here) if unicodedata.normalize("NFC", e.name) == want
            ]
        except OSError:
            return None
        if len(same) != 1:
            return None
        parts.append(same[0])
    return "/".join(parts)


_WINDOWS_DEVICES = re.compile(r"con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]", re.I)


def _fold(name: str) -> str:
    """A file name as case-insensitive, normalisation-insensitive file systems see it."""
    return unicodedata.normalize("NFC", name).casefold()


def _folded_names(folder: Path) -> set[str]:
    """The names in ``folder``, folded (:func:`_fold`); none when it cannot be read."""
    try:
        return {_fold(entry.name) for entry in os.scandir(folder)}
    except OSError:
        return set()


def _clashes(rel: str, taken: set[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return _fold(name) in taken or bool(_WINDOWS_DEVICES.fullmatch(name.split(".")[0]))


def case_variants(root: Path, name: str) -> list[str]:
    """The folders of ``root`` whose names differ from ``name`` only in case (a person's
    ``Inbox/`` for ``inbox``); none when ``root`` cannot be read."""
    try:
        return [
            entry.name
            for entry in os.scandir(root)
            if entry.name != name
            and entry.name.casefold() == name.casefold()
            and entry.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return []


def template_folders(root: Path) -> tuple[str, ...]:
    """The template folders Obsidian's settings in ``root`` name (see TEMPLATE_SETTINGS);
    a setting that is missing, unreadable or names no folder inside the vault names none."""
    found = []
    for rel, key in TEMPLATE_SETTINGS:
        path = root / rel
        try:
            if not path.is_file() or path.stat().st_size > 1_000_000:  # never a FIFO
                continue
            folder = json.loads(path.read_text(encoding="utf-8")).get(key)
            folder = ids.clean_relpath(folder.strip().strip("/")) if folder.strip("/ ") else ""
        except (OSError, ValueError, AttributeError, UnsafePathError):
            continue
        if folder:
            found.append(folder)
    return tuple(found)


def ignore_rule(lines: Sequence[str]) -> Callable[[str], bool] | None:
    """``.memvaultignore`` as a test of a vault-relative path (None: it ignores nothing).

    Without ``!`` patterns a path is ignored when any pattern matches it, so pathspec's
    regular expressions are joined into one (their directory-marker groups made plain):
    pathspec's ``match_file`` normalises the path and weighs every match, 3 us a file, a
    fifth of a status walk at 10k files. With ``!`` patterns pathspec decides (gitignore's
    order and precedence)."""
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    active = [p for p in spec.patterns if p.include is not None]
    if not active:
        return None
    regexes = [p.regex for p in active if isinstance(p, pathspec.RegexPattern)]
    plain = [r for r in regexes if r is not None and r.flags == re.UNICODE]
    if len(plain) != len(active) or not all(p.include for p in active):
        return spec.match_file
    joined = "|".join(f"(?:{r.pattern.replace('(?P<ps_d>', '(?:')})" for r in plain)
    match = re.compile(joined).match
    return lambda rel: match(rel) is not None


def _any_of(texts: Sequence[Sequence[str]]) -> Callable[[str], bool] | None:
    """A test of whether any of several ``.memvaultignore`` texts hides a path."""
    rules = [rule for rule in map(ignore_rule, texts) if rule is not None]
    if len(rules) <= 1:
        return rules[0] if rules else None
    return lambda rel: any(rule(rel) for rule in rules)


def _note(
    entry: os.DirEntry[str], rel: str, regular: dict[str, tuple[int, int]], unsafe: list[str]
) -> None:
    """File a memory-named entry of the walk: a regular file's stats, or an unsafe path."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return  # vanished meanwhile
    if stat.S_ISREG(st.st_mode):
        regular[rel] = (st.st_mtime_ns, st.st_size)
    else:
        unsafe.append(rel)


def _files_in(folder: Path) -> list[Path]:
    """The regular files directly in ``folder`` (none when it cannot be listed)."""
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """A folder, or a symlink to one (as os.walk sorts them)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _load_catalog(path: Path) -> dict[str, CatalogEntry]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {k: CatalogEntry(*v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}


def _save_catalog(path: Path, entries: dict[str, CatalogEntry]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_state(path, json.dumps({k: [e.mtime_ns, e.size, e.id] for k, e in entries.items()}))
    except OSError as exc:  # the catalog is a cache: losing it only costs time
        log.warning("could not save the id catalog: %s", exc)


def save_state(path: Path, text: str) -> None:
    """Atomically save one of memvault's state files (a cache in ``.memvault/``) through a
    ``.<name>.XXXXXXXX.tmp`` beside it, keeping the file's permissions (mkstemp's are 0600);
    the temporary file is removed on failure. A kill before the rename leaves it: see
    :meth:`Vault.save_leftovers`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        os.fchmod(fd, _file_mode(path))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class Undo:
    """What a write replaced, path by path, oldest first (None: there was no file)."""

    vault: Vault
    limit: int | None = UNDO_BYTES  # bytes kept in all at most (None: no limit)
    before: dict[str, bytes | None] = field(default_factory=dict)
    complete: bool = True  # False when something could not be kept (over the limit, unreadable)
    size: int = 0
    folders: list[Path] = field(default_factory=list)  # created by the writes, outermost first
    kept: list[str] = field(default_factory=list)  # saved again since: not put back

    def keep(self, rel: str) -> None:
        if rel in self.before or not self.complete:
            return
        try:
            exists = os.path.lexists(self.vault.abspath(rel))
            data = self.vault.read_regular(rel) if exists else None
        except (OSError, UnsafePathError):  # a link, a FIFO, unreadable: never opened
            self.complete = False
            return
        self.size += len(data or b"")
        if self.limit is not None and self.size > self.limit:
            self.complete = False
            return
        self.before[rel] = data

    def restore(self) -> list[str]:
        """Put every path back as it was, newest first; the paths put back. A path saved
        again since the write (an editor, a person) stays as saved, in :attr:`kept`; one
        that cannot be put back is logged and left as the write made it."""
        done = []
        for rel, data in reversed(self.before.items()):
            mine = self.vault.last_written(rel)  # what the write left there
            try:
                if data is not None:
                    self.vault.write(rel, data, expected_hash=mine)  # refused over a save
                elif os.path.lexists(self.vault.abspath(rel)):
                    self.vault.check_unchanged(rel, mine)
                    self.vault.delete(rel)
                done.append(rel)
            except StaleRevisionError:
                self.kept.append(rel)
                log.warning("%s was saved again since the write that failed: kept as it is", rel)
            except (OSError, UnsafePathError) as exc:
                log.error("could not put %s back as it was: %s", rel, exc)
        remove_empty(self.folders)
        return done


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove ``folders`` (outermost first) that are empty now, innermost first."""
    for folder in reversed(folders):
        with contextlib.suppress(OSError):  # not empty (someone saved there meanwhile)
            folder.rmdir()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once: setting it to read it is not thread-safe


def _file_mode(path: Path) -> int:
    """The permissions a write gives ``path``: the file's own, else what the umask allows."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


# mkstemp's random part; the state folder's saves, and unnamed ones of older versions
_TEMP_TAIL = re.compile(r"[a-z0-9_]{8}\.tmp")
_STATE_TEMP = re.compile(r"(?:\.[^.]+\.|tmp)[a-z0-9_]{8}\.tmp")


def _temp_prefix(name: str) -> str:
    """``.name.`` for a write's temporary file beside ``name``, the name cut so that the
    whole (random part and ``.tmp`` added) fits the 255 bytes a file name may have."""
    return f".{os.fsencode(name)[:200].decode('utf-8', 'ignore')}."


def _link_new(tmp: str, path: Path, rel: str) -> None:
    """Put the written ``tmp`` at ``path`` only if nothing is there (never over a file
    someone created meanwhile); ``tmp`` is removed either way."""
    try:
        os.link(tmp, path)
    except FileExistsError as exc:
        raise StaleRevisionError(
            f"{rel} was created by someone else while memvault wrote it: read it and retry"
        ) from exc
    except OSError:  # a file system without hard links: the check just made must do
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _refuse_binary(rel: str, data: bytes) -> None:
    if b"\x00" in data[:8192]:
        raise MalformedMemoryError(
            f"{rel} looks binary (NUL bytes): it is left untouched", kind="binary"
        )
