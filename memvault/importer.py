"""Turn a folder of Markdown files or a JSONL of memories into files to write. Pure-ish:
reads the source, returns (relative path, text) pairs; writes nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from . import fields, frontmatter, history, ids, knowledge_graph, note, validate
from .errors import InvalidInputError, MalformedMemoryError, MemvaultError, UnsafePathError
from .models import ImportSkip
from .vault import template_folders

_KNOWN = ("content", "text", "body", "title", "folder", "path")
# Folders never imported and never reported: git's, Obsidian's settings and trash, memvault's
# state, templates, and every other dot-folder.
PRUNED = frozenset({".git", ".obsidian", ".trash", ".memvault", "_templates"})
# Files read as notes: Markdown, and plain text (Apple Notes, Simplenote, Bear exports); a
# .markdown or .txt file is kept as the note of the same name ending in .md.
NOTE_SUFFIXES = (".md", ".markdown", ".txt")
# Plain text files that are no one's notes: licences, pip's package lists, build and web files
# (a person's History.txt or Requirements.txt is a note). A .txt file a note links or embeds
# is an attachment: importing leaves it out as a note.
NOT_NOTES = re.compile(
    r"((?i:licen[cs]e|copying)([-_. ].*)?|requirements([-_.].*)?|(?i:cmakelists|robots))\.(?i:txt)"
)


@dataclass(frozen=True)
class ImportItem:
    path: str  # wanted vault-relative path (may be taken; the caller finds a free one)
    text: str  # the source text (an id is added by the caller when it has none)
    source: str  # where it came from, for error messages
    origin: Path | None = None  # the source file (folder imports): attachments resolve from it
    defaults: frozenset[str] = frozenset()  # frontmatter keys memvault filled in, not the source
    # when the note was written, for one without ``created``: a Logseq journal's day, else
    # the date of the commit that added the file (a source folder in git), else the source
    # file's modification time (folder imports)
    dated: dt.datetime | None = None


def pruned(name: str) -> bool:
    return name in PRUNED or name.startswith(".")


def from_folder(
    root: Path, is_memory: Callable[[str], bool], max_bytes: int, vault: Path | None = None
) -> Iterator[ImportItem | ImportSkip]:
    """Markdown files under ``root``, relative paths kept; a skip for each unreadable one,
    and for the folder ``vault`` (the vault itself, when ``root`` holds it)."""
    templates = set(template_folders(root))  # the source's own Obsidian settings say which
    source = _Source(is_logseq(root), added_dates(root), is_memory, max_bytes)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in [d for d in dirnames if (here / d).relative_to(root).as_posix() in templates]:
            dirnames.remove(name)
            rel = (here / name).relative_to(root).as_posix()
            yield _skip(rel, "templates", f"{here / name} is Obsidian's template folder there")
        for name in [d for d in dirnames if not pruned(d) and (here / d).is_symlink()]:
            rel = (here / name).relative_to(root).as_posix()
            yield _skip(rel, "symlink", f"{here / name} is a symlinked folder: not followed")
        dirnames[:] = sorted(d for d in dirnames if not pruned(d) and not (here / d).is_symlink())
        for name in [d for d in dirnames if vault is not None and _same_folder(here / d, vault)]:
            dirnames.remove(name)
            rel = (here / name).relative_to(root).as_posix()
            yield _skip(rel, "the vault", f"{here / name} is the vault itself: not imported")
        for name in sorted(filenames):
            if not is_note_name(name):
                continue  # not a note (attachments are copied when a note links them)
            full = here / name
            rel = full.relative_to(root).as_posix()
            yield _read_note(full, rel, source)


def is_note_name(name: str) -> bool:
    """Whether a file of that name is read as a note (``LICENSE.txt`` is not)."""
    if name.startswith(".") or not name.lower().endswith(NOTE_SUFFIXES):
        return False
    return NOT_NOTES.fullmatch(name) is None


def is_logseq(root: Path) -> bool:
    """Whether ``root`` is a Logseq graph or a folder of one (its ``logseq/`` settings
    folder, or ``pages/`` and ``journals/``): only there are ``key:: value`` lines page
    properties (in Obsidian they are Dataview's inline fields, part of the text)."""
    for graph in (root, root.parent):  # the graph, or its pages/ or journals/ folder
        if (graph / "logseq").is_dir() or (
            (graph / "pages").is_dir() and (graph / "journals").is_dir()
        ):
            return True
    return False


# oldest first: each file added (A) or renamed (R, old and new name), after its commit's date
_ADDED_LOG: tuple[str, ...] = ("log", "--reverse", "--diff-filter=AR", "-M", "--name-status")
_ADDED_LOG += ("-z", "--relative", "--format=%x01%aI", "--", ".")


def added_dates(root: Path) -> dict[str, dt.datetime]:
    """Source path (relative to ``root``) -> when the commit that added it was written,
    for a ``root`` inside a git work tree ({} else): a clone's or a copy's files all have
    the checkout's modification time, not the day their notes were written. One ``git
    log`` for the whole folder; a renamed file keeps the date it was added under its old
    name."""
    try:
        runner = history.CleanGit(str(root))
        out = runner.execute(
            ["git", "-c", "core.quotepath=off", "-c", "log.showSignature=false", *_ADDED_LOG],
            stdout_as_string=False,
        )
    except (git.GitCommandError, git.GitCommandNotFound, MemvaultError, OSError):
        return {}  # not in a git work tree (or no git): the files' modification times
    dates: dict[str, dt.datetime] = {}
    for record in bytes(out).decode("utf-8", "replace").split("\x01")[1:]:
        when, _, changes = record.partition("\0")
        parts = changes.lstrip("\n").split("\0")
        try:
            date = dt.datetime.fromisoformat(when).astimezone(dt.UTC)
        except ValueError:
            continue  # a commit git gives no readable date: its files keep their own time
        while len(parts) > 1:
            status, path = parts[0], parts[1]
            if status.startswith("R") and len(parts) > 2:
                dates[parts[2]] = dates.pop(path, date)
                parts = parts[3:]
                continue
            dates[path] = date
            parts = parts[2:]
    return dates


@dataclass(frozen=True)
class _Source:
    """What reading a source folder's notes needs to know of the folder."""

    logseq: bool  # a Logseq graph: page properties become frontmatter
    added: dict[str, dt.datetime]  # path -> the date of the commit that added it
    is_memory: Callable[[str], bool]
    max_bytes: int


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _skip(path: str, reason: str, detail: str) -> ImportSkip:
    return ImportSkip(path, reason, detail)


def _read_note(full: Path, rel: str, source: _Source) -> ImportItem | ImportSkip:
    stem, _, suffix = rel.rpartition(".")
    note_path = portable(rel if suffix.lower() == "md" else f"{stem}.md")
    try:
        validate.relpath("path", note_path)
        if not source.is_memory(note_path):
            raise UnsafePathError(f"{full} is in a place memvault ignores")
        data = read_regular(full, source.max_bytes)
        if b"\x00" in data:
            raise InvalidInputError(f"{full} contains NUL bytes (binary?): not a note")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"{full} is not UTF-8 text (byte {exc.start}): re-save it as UTF-8"
            ) from exc
        text = logseq_properties(text) if source.logseq else text
        frontmatter.parse(text)
        dated = _journal_day(rel) or source.added.get(rel)
        dated = dated or dt.datetime.fromtimestamp(os.lstat(full).st_mtime, dt.UTC)
    except MalformedMemoryError as exc:
        return _skip(rel, "malformed frontmatter", f"{full}: {exc}")
    except (InvalidInputError, UnsafePathError, OSError) as exc:
        detail = str(exc) if str(full) in str(exc) else f"{full}: {exc}"
        return _skip(rel, reason_of(exc), detail)
    return ImportItem(note_path, text, str(full), full, dated=dated.replace(microsecond=0))


_NOT_PORTABLE = re.compile(f"[{re.escape(validate.NOT_PORTABLE)}]")
_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?", re.IGNORECASE)
_MAX_PART_BYTES = 180  # a name holds 255 bytes: room for a -2 and a write's temporary name
_MAX_KEPT_BYTES = 235  # longer, the temporary name of the vault's write would not fit


def portable(rel: str) -> str:
    """``rel`` (a note's path in the source) as a path the vault can hold on every OS:
    where the vault refuses it, the characters Windows refuses become spaces, a name ending
    in a dot or a space or reserved by Windows (``CON``) is changed, and a name too long to
    write is shortened to 180 bytes."""
    try:  # a name the vault takes stays as it is (a re-import finds it where it was)
        validate.relpath("path", rel)
        if all(len(part.encode("utf-8")) <= _MAX_KEPT_BYTES for part in rel.split("/")):
            return rel
    except (InvalidInputError, UnsafePathError):
        pass
    *folders, name = rel.split("/")
    stem, dot, suffix = name.rpartition(".")
    cleaned = []
    for given in [*folders, stem] if dot else [*folders, name]:
        part = " ".join(_NOT_PORTABLE.sub(" ", given).split())
        while len(part.encode("utf-8")) > _MAX_PART_BYTES:
            part = part[:-1]
        part = part.rstrip(". ") or "note"
        cleaned.append(f"{part}_" if _RESERVED.fullmatch(part) else part)
    return "/".join(cleaned) + (f".{suffix}" if dot else "")


def _journal_day(rel: str) -> dt.datetime | None:
    """The day a Logseq journal page (``journals/2023_04_05.md``) is about."""
    match = re.fullmatch(r"(?:.*/)?journals/(\d{4})_(\d\d)_(\d\d)\.md", rel)
    if match is None:
        return None
    try:
        return dt.datetime.strptime("-".join(match.groups()), "%Y-%m-%d").replace(tzinfo=dt.UTC)
    except ValueError:  # no such day (2023_02_30)
        return None


_PROPERTY = re.compile(r"([A-Za-z][\w-]*):: ?(.*)")
_LISTS = {"tags": "tags", "alias": "aliases"}  # Logseq's list properties, by memvault's names
# keys memvault reads as plain values: ``type:: [[book]]`` is of type ``book``
_PLAIN = frozenset({"title", "type", "source", "status"})
_ONE_PAGE = re.compile(r"\[\[[^\[\]]+\]\]")  # `type:: [[book]]`: the page's name is the value
_ITEM = re.compile(r"(?:\[\[[^\[\]]*\]\]|[^,])+")  # a list's item: commas in [[...]] kept


def _page_name(value: str) -> str:
    """``[[book]]``, ``#book`` or ``book``: ``book``."""
    return value.strip().lstrip("#").removeprefix("[[").removesuffix("]]").strip()


def logseq_properties(text: str) -> str:
    """A Logseq page's properties (its first lines, ``key:: value``) as YAML frontmatter,
    so its title, tags and aliases are read as such; any other text is returned as it is,
    and so is a page made of properties only (its lines would leave no body)."""
    lines = text.split("\n")
    count = next((n for n, line in enumerate(lines) if not _PROPERTY.fullmatch(line)), len(lines))
    rest = "\n".join(lines[count:]).lstrip("\n")
    if count == 0 or text.startswith(("---", "\ufeff")) or not rest.strip():
        return text
    meta: dict[str, Any] = {}
    for line in lines[:count]:
        match = _PROPERTY.fullmatch(line)
        assert match is not None
        key, value = match.group(1).lower(), match.group(2).strip()  # Logseq's keys: lower
        if key in _LISTS:
            items = [_page_name(v) for v in _ITEM.findall(value)]
            have = meta.setdefault(_LISTS[key], [])
            have.extend(v for v in items if v and v not in have)  # a key given twice: both
            continue
        if key in _PLAIN and _ONE_PAGE.fullmatch(value):
            value = _page_name(value)
        if key not in meta:
            meta[key] = value  # a link elsewhere stays one: "[[Ursula Le Guin]]"
        elif value not in (have := meta[key] if isinstance(meta[key], list) else [meta[key]]):
            meta[key] = [*have, value]
    return frontmatter.new_file(meta, rest)


def reason_of(exc: BaseException) -> str:
    """A short reason for a summary line; the whole message goes to the log."""
    text = str(exc)
    for needle, reason in (
        ("symlink", "symlink"),
        ("not a regular file", "not a regular file"),
        ("NUL", "binary"),
        ("UTF-8", "not UTF-8"),
        ("max_file_bytes", "too large"),
        ("over the limit", "too large"),
        ("memvault ignores", "ignored path"),
        ("has problems", "vault copy has problems"),
        ("no import wrote", "vault has another file there"),
        ("edited in the vault since", "edited since the last import"),
    ):
        if needle in text:
            return reason
    if isinstance(exc, UnsafePathError):
        return "unsafe name"
    if isinstance(exc, OSError):
        return "unreadable"
    return "invalid"


def read_regular(path: Path, max_bytes: int) -> bytes:
    """Bytes of a regular file of at most ``max_bytes``; symlinks and FIFOs are refused
    unopened (a FIFO would block the read forever)."""
    mode = os.lstat(path)
    if stat.S_ISLNK(mode.st_mode):
        raise UnsafePathError(f"{path} is a symlink: memvault never follows symlinks")
    if not stat.S_ISREG(mode.st_mode):
        raise UnsafePathError(f"{path} is not a regular file (a FIFO, socket or device)")
    if mode.st_size > max_bytes:
        raise UnsafePathError(
            f"{path} is {mode.st_size:,} bytes, over the limit of {max_bytes:,}: split it"
        )
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        return handle.read(max_bytes + 1)


def from_jsonl(path: Path, now: dt.datetime) -> Iterator[ImportItem | ImportSkip]:
    """One memory per line: ``content`` (or text/body) plus any frontmatter keys; a skip
    (naming the line) for each line that is not one. The lines of the MCP memory server's
    knowledge graph (entities, relations) become one memory per entity, after the others."""
    graph = knowledge_graph.Graph()
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        where = f"{path.name}:{number}"
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            detail = f"{path}:{number} is not UTF-8 text (byte {exc.start}): re-save it as UTF-8"
            yield _skip(where, "not UTF-8", detail)
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield _skip(where, "not JSON", f"{path}:{number} is not valid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict):
            yield _skip(where, "not an object", f"{path}:{number} must be a JSON object")
            continue
        if knowledge_graph.is_record(record):
            skipped = graph.add(record, where)
            yield from [skipped] if skipped else []
            continue
        yield from _items([(record, where)], path.parent, now)
    yield from _items(graph.records(), path.parent, now)


def is_graph_file(path: Path) -> bool:
    """Whether a ``.json`` file is the MCP memory server's graph written as JSON Lines (its
    older ``memory.json``): its first line is an entity or a relation."""
    if not path.is_file():  # a FIFO would block the read
        return False
    try:
        with path.open("rb") as handle:  # a line at a time, each read at most 1 MB
            first = b""
            while not first.strip():
                first = handle.readline(1_000_000)
                if not first:
                    break
        record = json.loads(first.decode("utf-8-sig"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and knowledge_graph.is_record(record)


def _items(
    records: Iterable[tuple[dict[str, Any], str] | ImportSkip], folder: Path, now: dt.datetime
) -> Iterator[ImportItem | ImportSkip]:
    for entry in records:
        if isinstance(entry, ImportSkip):
            yield entry
            continue
        record, where = entry
        try:
            yield _record_item(record, now, str(folder / where))
        except (InvalidInputError, UnsafePathError) as exc:
            yield _skip(where, "invalid record", f"{folder / where}: {exc}")


_UNITS = ("importance", "confidence")
_TIMES = ("created", "updated", "expires", "valid_from", "valid_until")


def _check_fields(record: dict[str, Any]) -> None:
    """Refuse what ``remember`` refuses in the fields memvault reads (a memory written with
    ``importance: high`` or ``created: 12/03/2024`` would rank and date as if unset)."""
    for key in _UNITS:
        value = record.get(key)
        if value is None:
            continue
        try:  # "0.7" from a spreadsheet's export is a number too
            number = None if isinstance(value, bool) else float(value)
        except (TypeError, ValueError):
            number = None
        if number is None:
            raise InvalidInputError(f"{key} must be a number between 0 and 1, got {value!r}")
        fields.check_unit(key, number)  # as remember checks it
        record[key] = number
    for key in _TIMES:
        if record.get(key) not in (None, ""):
            validate.moment(key, record[key])
    if not isinstance(record.get("type", "note"), str):
        raise InvalidInputError(f"type must be text (note, fact...), got {record['type']!r}")


def _record_item(record: dict[str, Any], now: dt.datetime, where: str) -> ImportItem:
    content = str(record.get("content") or record.get("text") or record.get("body") or "").strip()
    if not content:
        raise InvalidInputError("the record has no content, text or body")
    _check_fields(record)
    validate.text("content", content)
    title = validate.title(str(record.get("title") or note.title_from(content)).strip())
    tags = record.get("tags") or []
    tags = validate.tags([str(t) for t in ([tags] if isinstance(tags, str) else tags)])
    meta: dict[str, Any] = {
        "id": str(record["id"]) if ids.is_id(str(record.get("id", ""))) else ids.new_id(),
        "type": record.get("type", "note"),
        "tags": tags,
        "confidence": record.get("confidence", 0.8),
        "importance": record.get("importance", 0.5),
        "created": record.get("created") or now,
        "updated": record.get("updated") or record.get("created") or now,
        "source": record.get("source", "import"),
    }
    extra = {k: v for k, v in record.items() if k not in meta and k not in _KNOWN}
    meta.update(extra)
    given = {k for k in meta if record.get(k) not in (None, "", [])}
    if not ids.is_id(str(record.get("id", ""))):
        given.discard("id")
    if "updated" not in given and "created" in given:
        given.add("updated")  # taken from the record's own ``created``
    if record.get("path"):
        rel = ids.clean_relpath(str(record["path"]))
    else:
        folder = str(record.get("folder") or "inbox").strip("/")
        rel = f"{folder}/{ids.slugify(title)}.md"
    text = frontmatter.new_file(meta, note.compose(title, content))
    return ImportItem(rel, text, where, defaults=frozenset(set(meta) - given))
