"""The rules of a memory's Markdown body, in one place. Pure: text in, text out.

A body starts with a ``# title`` line, then the content. Inline ``#tags`` count as tags.
Times are ISO text; newest-first ordering compares real instants, not strings.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_INLINE_TAG = re.compile(r"(?:^|\s)#([^\s#\[\]()\"',.;:!?]+)")
TITLE_LIMIT = 60
SNIPPET_WIDTH = 240


def heading(body: str) -> str | None:
    """The first Markdown heading's text, or None."""
    match = _HEADING.search(body)
    return match.group(1) if match else None


def title_from(content: str, limit: int = TITLE_LIMIT) -> str:
    """A title made from the content's first line, cut at a word near ``limit``."""
    line = content.strip().split("\n", 1)[0].lstrip("# ").strip()
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + "..."


def compose(title: str, content: str) -> str:
    """The body of a memory: ``# title``, a blank line, the content (kept when it has a title)."""
    content = content.strip()
    if content.startswith("# "):
        return content + "\n"
    return f"# {title}\n\n{content}\n"


def strip_title(body: str) -> str:
    """The body without its leading ``# title`` line."""
    body = body.strip()
    if body.startswith("# "):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    return body.strip()


def snippet(body: str, query: str, width: int = SNIPPET_WIDTH) -> str:
    """The body line sharing most words with the query, cut to ``width`` characters."""
    wanted = {w.lower() for w in query.split() if len(w) > 2}
    lines = [ln.strip() for ln in body.split("\n") if ln.strip() and not ln.startswith("# ")]
    if not lines:
        return body.strip()[:width]
    best = max(lines, key=lambda ln: sum(w in ln.lower() for w in wanted))
    return best if len(best) <= width else best[: width - 3] + "..."


def cut(text: str, width: int, mark: str = "…") -> str:
    """``text`` on one line, at most ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - len(mark)] + mark


def inline_tags(body: str) -> list[str]:
    """``#tag`` words of the body (not ``#123``, not headings)."""
    return [t for t in _INLINE_TAG.findall(body) if not t.isdigit()]


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags without ``#``, blanks or repeats, in the given order."""
    cleaned = (t.strip().lstrip("#") for t in tags)
    return list(dict.fromkeys(t for t in cleaned if t))


def parse_time(value: object, naive_tz: dt.tzinfo = dt.UTC) -> dt.datetime | None:
    """ISO text to an aware datetime (naive times get ``naive_tz``); None if unreadable."""
    if value is None or value == "":
        return None
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=naive_tz)


def timestamp(value: str | None) -> float:
    """Seconds since the epoch of an ISO time; missing or unreadable times are the oldest."""
    moment = parse_time(value)
    return moment.timestamp() if moment is not None else float("-inf")


def newest_first(value: str | None) -> float:
    """Sort key putting the newest time first (ascending sort), missing times last."""
    return -timestamp(value)
