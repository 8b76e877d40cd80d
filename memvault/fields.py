"""The frontmatter memvault writes: a new memory's fields, checks of fields a caller sets,
and where a memory of each type lives by default."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from . import frontmatter, ids, validate
from .errors import InvalidInputError
from .models import LIFECYCLE_KEY, canonical_type, lifecycle_value, spelling
from .note import clean_tags

TYPE_FOLDERS = {
    "preference": "preferences",
    "fact": "facts",
    "summary": "summaries",
    "task": "tasks",
    "note": "inbox",
}
PROTECTED = {"id", "created"}


def new_meta(
    type: str,
    tags: Sequence[str],
    confidence: float,
    importance: float,
    now: dt.datetime,
    source: str,
    scope: Sequence[str] = (),
    supersedes: Sequence[str] = (),
) -> dict[str, Any]:
    """A new memory's frontmatter, keys in the order a person reads them (a known type in
    its canonical spelling: ``Ｅｐｉｓｏｄｅ`` is written ``episode``, a blank one ``note``)."""
    meta: dict[str, Any] = {
        "id": ids.new_id(),
        "type": canonical_type(type),
        "tags": clean_tags(tags),
        "confidence": confidence,
        "importance": importance,
        "created": now,
        "updated": now,
        "source": source,
    }
    if scope:
        meta["scope"] = list(scope)
    if supersedes:
        meta["supersedes"] = list(supersedes)
    return meta


def default_folder(memory_type: str, now: dt.datetime) -> str:
    """Where a new memory of ``memory_type`` goes (``Episode``: an episode's folder)."""
    known = canonical_type(memory_type)
    if known == "episode":
        return f"episodes/{now.year:04d}"
    return TYPE_FOLDERS.get(known, "inbox")


def stem_path(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def check_unit(name: str, value: float) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInputError(f"{name} must be between 0 and 1, got {value}")


def clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Fields a caller asked to change, checked; "" means delete the key."""
    out = {}
    for key, value in fields.items():
        if key in PROTECTED:
            raise InvalidInputError(f"{key!r} cannot be changed: it is set by memvault")
        if key == "status" and value == "archived":
            raise InvalidInputError(
                "status archived is set by forget (mode archive): it also moves the file to "
                "archive/ and records when and why; call forget instead"
            )
        if key in ("importance", "confidence") and value is not None:
            check_unit(key, float(value))
        if key == "type" and value is not None and not str(value).strip():
            raise InvalidInputError("type cannot be empty")
        if key == "type" and value is not None:
            validate.label("type", str(value))
        if key == "tags" and value is not None:
            validate.tags(value if isinstance(value, (list, tuple)) else [value])
        if key == "scope" and value is not None:
            validate.labels("scope", value if isinstance(value, (list, tuple)) else [value])
        if value is not None:
            out[key] = frontmatter.DELETE if value == "" else value
    given = {k: v for k, v in out.items() if k in validate.DATE_KEYS and v != frontmatter.DELETE}
    return out | validate.dates(given)


def place_status(meta: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Where memvault's lifecycle state goes in a file: ``status`` when that key is free or
    already memvault's; otherwise ``lifecycle``, so a person's own ``status: draft`` is kept
    (archiving and restoring never lose it). Under the file's own key: a person's
    ``Status: active`` becomes ``Status: conflict``, never a second ``status:``."""
    if "status" not in changes:
        return changes
    out = dict(changes)
    value = out.pop("status")
    key = spelling(meta, "status")
    own = meta.get(key)
    if own is None or own == "" or lifecycle_value(own):  # `Archived` by hand is ours
        out[key] = value
        if LIFECYCLE_KEY in meta:
            out[LIFECYCLE_KEY] = frontmatter.DELETE
    else:
        keep = value not in ("active", frontmatter.DELETE)
        out[LIFECYCLE_KEY] = value if keep else frontmatter.DELETE
    return out
