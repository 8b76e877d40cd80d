"""A filter written as one line of text, for forgetting many memories at once.

``type:episode tag:trip folder:journal until:2026-01-01`` selects the memories that match
every condition. The words are ``key:value`` pairs (a value with spaces in double quotes):

- ``type:`` and ``scope:`` may repeat and match any of their values;
- ``tag:`` may repeat and matches memories carrying all of them;
- ``folder:`` a folder the memory is under; ``since:``/``until:`` when it was created
  (ISO date or time, or a year or month meaning its first day; ``until`` leaves out later
  times, as in ``recall``);
- ``archived:yes`` also selects archived and superseded memories (default: active only).

Expired memories are selected like any other. A filter with no condition, an unknown key or
a bare word is refused: forgetting "everything" is never one call away, and free text
would make the selection fuzzy, which is the wrong property for forgetting.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex

from . import validate
from .errors import InvalidInputError
from .models import Filters
from .note import parse_time

KEYS = ("type", "tag", "scope", "folder", "since", "until", "archived")
MAX_FILTER_CHARS = 1000
_YES = {"yes", "true", "1"}
_NO = {"no", "false", "0"}


def parse(text: str) -> Filters:
    """The :class:`Filters` a filter line names, or :class:`InvalidInputError` saying why not."""
    words = _words(text)
    found: dict[str, list[str]] = {key: [] for key in KEYS}
    for word in words:
        key, sep, value = word.partition(":")
        key = key.strip().lower()
        if not sep or key not in found or not value.strip():
            raise InvalidInputError(
                f"filter word {word!r} is not key:value with a key of {', '.join(KEYS)} "
                "(for example 'type:episode tag:trip until:2026-01-01')"
            )
        found[key].append(value.strip())
    for key in ("folder", "since", "until", "archived"):
        if len(found[key]) > 1:
            raise InvalidInputError(f"filter names {key}: more than once")
    first = {key: values[0] if values else None for key, values in found.items()}
    since, until = period(first["since"], first["until"], "filter ")
    return Filters(
        types=tuple(validate.labels("type", found["type"])),
        tags=tuple(validate.tags(found["tag"])),
        scope=tuple(validate.labels("scope", found["scope"])),
        folder=validate.relpath("folder", first["folder"]) if first["folder"] else None,
        since=since,
        until=until,
        include_archived=_flag(found["archived"]),
        include_expired=True,
    )


def _words(text: str) -> list[str]:
    if len(text) > MAX_FILTER_CHARS:
        raise InvalidInputError(f"a filter is at most {MAX_FILTER_CHARS} characters")
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise InvalidInputError(f"filter {text!r} cannot be read: {exc}") from None
    if not words or all(w.lower().startswith("archived:") for w in words):
        raise InvalidInputError(
            "a filter needs at least one condition (type:, tag:, scope:, folder:, since:, "
            "until:): forgetting everything is not offered"
        )
    return words


def undated_note(count: int) -> str | None:
    """The line that says how many memories a period left out only because they have no
    readable ``created`` (a person's note without one); None for none. Said, so that the
    period's silence about them is not taken for their absence."""
    if not count:
        return None
    return (
        f"{count} memor{'y' if count == 1 else 'ies'} without a readable created date: "
        "left out by since/until"
    )


def period(
    since: str | None, until: str | None, said: str = ""
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``since`` and ``until`` (recall's, list's and a filter's alike) as moments: an ISO
    date or time; a year (``2025``) or a month (``2026-01``) means its first day. A period
    that ends before it starts is refused: it would select nothing, silently."""
    start, end = _moment(said + "since", since), _moment(said + "until", until)
    if start and end and start > end:
        raise InvalidInputError(
            f"{said}since ({since}) is after until ({until}): no memory was created in between"
        )
    if start and end and start == end:  # since:2026-03 until:2026-03, meant as "in March"
        raise InvalidInputError(
            f"{said}since and until are the same moment ({until}): a month or a year means its "
            "first day, so until:2026-04 ends March; nothing would be selected"
        )
    return start, end


def _moment(name: str, value: str | None) -> dt.datetime | None:
    if not value:
        return None
    text = value.strip()
    if re.fullmatch(r"\d{4}(-\d{2})?", text):
        text = f"{text}-01-01" if len(text) == 4 else f"{text}-01"
    moment = parse_time(text)
    if moment is None:
        raise InvalidInputError(
            f"{name} must be an ISO date like 2026-11-30 (or a month, 2026-11, or a year, "
            f"2026), got {value!r}"
        )
    return moment


def _flag(values: list[str]) -> bool:
    if not values:
        return False
    value = values[0].lower()
    if value not in _YES | _NO:
        raise InvalidInputError("filter archived: takes yes or no")
    return value in _YES
