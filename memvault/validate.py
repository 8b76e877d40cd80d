"""Checks on what a caller asks memvault to write, made before anything touches the disk.

Pure: values in, the cleaned value out, InvalidInputError or UnsafePathError raised with
a message that says what is wrong and what to send instead. One function per input kind.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping

from . import ids
from .errors import InvalidInputError, UnsafePathError

MAX_TITLE_CHARS = 200
MAX_LABEL_CHARS = 100  # type, source, one scope label
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_SCOPES = MAX_TAGS  # scope labels of one memory: like tags, labels to filter by
MAX_REASON_CHARS = 500  # why a memory was forgotten or a profile field set: one sentence
# A question, not a document: the embedder reads at most ~512 tokens of it anyway, and the
# cost of analysing a query grows with its length (about a second per thousand characters).
MAX_QUERY_CHARS = 2000
FRONTMATTER_ROOM = 4096  # bytes of a file's size budget kept for its frontmatter
# Refused in file and folder names: they break the vault on Windows and in Obsidian sync.
NOT_PORTABLE = '<>:"|?*'
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:([/\\]|$)")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # keeps \t \n \r
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # keeps \t
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def text(field: str, value: str, one_line: bool = False) -> str:
    """Refuse lone surrogates and control characters (other than tab, and newlines
    unless ``one_line``)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be text, not {type(value).__name__}")
    bad = _SURROGATE.search(value)
    if bad:
        raise InvalidInputError(
            f"{field} contains a lone surrogate (U+{ord(bad.group()):04X} at character "
            f"{bad.start()}), which is not valid Unicode: send valid UTF-8 text"
        )
    bad = (_CONTROL_ONE_LINE if one_line else _CONTROL).search(value)
    if bad:
        name = "a NUL byte" if bad.group() == "\x00" else f"control character {bad.group()!r}"
        where = "must be one line and " if one_line and bad.group() in "\n\r" else ""
        raise InvalidInputError(
            f"{field} {where}contains {name} at character {bad.start()}: "
            "send plain text (tabs and, in content, line breaks are fine)"
        )
    return value


def content(value: str, max_file_bytes: int) -> str:
    text("content", value)
    limit = max(max_file_bytes - FRONTMATTER_ROOM, 1)
    size = len(value.encode("utf-8"))
    if size > limit:
        raise InvalidInputError(
            f"content is {size:,} bytes, over the {limit:,}-byte limit (max_file_bytes "
            f"{max_file_bytes:,} less room for the frontmatter): split it into several memories"
        )
    return value


def title(value: str) -> str:
    text("title", value, one_line=True)
    if len(value) > MAX_TITLE_CHARS:
        raise InvalidInputError(
            f"title is {len(value):,} characters, over the limit of {MAX_TITLE_CHARS}: "
            "give a short title and put the rest in content"
        )
    return value


def label(field: str, value: str) -> str:
    """A short one-line value: type, source, a scope label."""
    text(field, value, one_line=True)
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidInputError(
            f"{field} is {len(value):,} characters, over the limit of {MAX_LABEL_CHARS}"
        )
    return value


def labels(field: str, values: Iterable[str]) -> list[str]:
    out = list(values)
    if len(out) > MAX_SCOPES:
        raise InvalidInputError(
            f"{len(out)} {field} labels is more than the limit of {MAX_SCOPES}: "
            "keep the ones you filter by"
        )
    return [label(field, v) for v in out]


def reason(value: str | None) -> str | None:
    """Why a memory is forgotten or a profile field set: it goes into the commit message
    (and the archived file's frontmatter), so one line of text of sentence length."""
    if value is not None and len(text("reason", value, one_line=True)) > MAX_REASON_CHARS:
        raise InvalidInputError(
            f"reason is {len(value):,} characters, over the limit of {MAX_REASON_CHARS}: "
            "say it shorter"
        )
    return value


def query(value: str, field: str = "query") -> str:
    """A recall or search query (or a context topic): not empty, not a whole document."""
    if not value.strip():
        raise InvalidInputError(f"{field} is empty: say what to look for")
    if len(value) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"{field} is {len(value):,} characters, over the limit of {MAX_QUERY_CHARS:,}: "
            "shorten it to the question or the few key words you are looking for"
        )
    return value


def point(field: str, value: str) -> str:
    """``as_of`` / ``since``: a commit or a time, stripped (``git rev-parse`` output ends
    in a newline), then one line of text (git and file paths would choke on a NUL byte)."""
    return text(field, value.strip(), one_line=True)


def tags(values: Iterable[str]) -> list[str]:
    out = list(values)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(
            f"{len(out)} tags is more than the limit of {MAX_TAGS}: keep the ones you filter by"
        )
    for tag in out:
        text("a tag", tag, one_line=True)
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(
                f"a tag of {len(tag):,} characters is over the limit of {MAX_TAG_CHARS}: "
                "tags are short labels"
            )
    return out


def relpath(field: str, value: str) -> str:
    """A vault-relative folder or file path memvault may create, portable to every OS."""
    text(field, value, one_line=True)
    if _DRIVE.match(value):
        ids.clean_relpath(value)  # refuses it as a Windows drive path
    bad = sorted({ch for ch in value if ch in NOT_PORTABLE})
    if bad:
        raise UnsafePathError(
            f"{field} {value!r} contains {' '.join(bad)}: the characters {NOT_PORTABLE} "
            "are not allowed in names (they break the vault on Windows and in Obsidian sync)"
        )
    rel = ids.clean_relpath(value)
    for part in rel.split("/"):
        if part.endswith((".", " ")) or _WINDOWS_RESERVED.match(part):
            raise UnsafePathError(
                f"{field} {value!r} has the name {part!r}, which Windows cannot store "
                "(reserved, or ending in a dot or space): choose another name"
            )
    return rel


def revision(value: str | None) -> str | None:
    """expected_revision: absent (no check) or a revision; an empty one is a mistake."""
    if value is not None and not value.strip():
        raise InvalidInputError(
            "expected_revision is empty: pass the revision from get_memory or recall, "
            "or leave expected_revision out to skip the check"
        )
    return value


def file_size(rel: str, data: str, max_file_bytes: int) -> None:
    """The whole file must stay readable: memvault does not index files over the limit."""
    size = len(data.encode("utf-8"))
    if size > max_file_bytes:
        raise InvalidInputError(
            f"{rel} would be {size:,} bytes, over max_file_bytes ({max_file_bytes:,}), so it "
            "could not be read back: split it into several memories"
        )


DATE_KEYS = ("expires", "valid_from", "valid_until")


def has_time(text: str) -> bool:
    """Whether an ISO text gives a time of day, not only a date (2026-12-31, 20261231)."""
    return any(c in text for c in "Tt: ")


def moment(field: str, value: object) -> dt.date | dt.datetime:
    """A date (2026-12-31) or a date-time (2026-12-31T18:00:00+08:00, Z allowed), parsed."""
    if isinstance(value, dt.date):
        return value
    given = str(value).strip()
    try:
        if not has_time(given):  # 20261231 too: a date lasts through that day
            return dt.date.fromisoformat(given.rstrip("Zz"))
        return dt.datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(
            f"{field} must be an ISO date like 2026-12-31 or a date-time like "
            f"2026-12-31T18:00:00+08:00, got {str(value)[:40]!r}"
        ) from None


def dates(values: Mapping[str, object]) -> dict[str, dt.date | dt.datetime]:
    """expires / valid_from / valid_until, parsed; None values are left out, and
    valid_from may not come after valid_until."""
    unknown = sorted(set(values) - set(DATE_KEYS))
    if unknown:
        raise InvalidInputError(f"unknown date field(s) {', '.join(unknown)}: use {DATE_KEYS}")
    out = {k: moment(k, v) for k, v in values.items() if v is not None}
    start, end = out.get("valid_from"), out.get("valid_until")
    if start is not None and end is not None and _sortable(start) > _sortable(end):
        raise InvalidInputError(
            f"valid_from ({start.isoformat()}) is after valid_until ({end.isoformat()}): "
            "swap them or leave one out"
        )
    return out


def _sortable(value: dt.date | dt.datetime) -> dt.datetime:
    """Dates and naive times compare as UTC with aware ones (enough to order two bounds)."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
