"""Turn a folder of Markdown files or a JSONL of memories into files to write. Pure-ish:
reads the source, returns (relative path, text) pairs; writes nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import frontmatter, ids, note, validate
from .errors import InvalidInputError, MalformedMemoryError, UnsafePathError

_KNOWN = ("content", "text", "body", "title", "folder", "path")


@dataclass(frozen=True)
class ImportItem:
    path: str  # wanted vault-relative path (may be taken; the caller finds a free one)
    text: str
    source: str  # where it came from, for error messages


def from_folder(root: Path, is_memory: Callable[[str], bool]) -> Iterator[ImportItem]:
    """Markdown files under ``root``, relative paths kept; an ``id`` added where missing."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if not is_memory(rel) or full.is_symlink():
                continue
            try:
                text = full.read_text(encoding="utf-8", errors="strict")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"{full} is not UTF-8 text (byte {exc.start}): re-save it as UTF-8 "
                    "or move it out of the folder; nothing was imported"
                ) from exc
            yield ImportItem(rel, _with_id(text), str(full))


def _with_id(text: str) -> str:
    try:
        doc = frontmatter.parse(text)
    except MalformedMemoryError:
        return text  # copied as-is; `doctor` will report it
    if doc.meta.get("id") and ids.is_id(str(doc.meta["id"])):
        return text
    return frontmatter.render(doc, {"id": ids.new_id()})


def from_jsonl(path: Path, now: dt.datetime) -> Iterator[ImportItem]:
    """One memory per line: ``content`` (or text/body) plus any frontmatter keys."""
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not UTF-8 text (byte {exc.start}): re-save it as UTF-8"
        ) from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise InvalidInputError(f"{path}:{number} must be a JSON object")
        where = f"{path}:{number}"
        try:
            yield _record_item(record, now, where)
        except (InvalidInputError, UnsafePathError) as exc:
            raise type(exc)(f"{where}: {exc}; nothing was imported") from exc


def _record_item(record: dict[str, Any], now: dt.datetime, where: str) -> ImportItem:
    content = str(record.get("content") or record.get("text") or record.get("body") or "").strip()
    if not content:
        raise InvalidInputError("the record has no content, text or body")
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
    if record.get("path"):
        rel = ids.clean_relpath(str(record["path"]))
    else:
        folder = str(record.get("folder") or "inbox").strip("/")
        rel = f"{folder}/{ids.slugify(title)}.md"
    return ImportItem(rel, frontmatter.new_file(meta, note.compose(title, content)), where)
