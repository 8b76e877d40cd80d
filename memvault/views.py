"""Text of the aggregate resources (memory://index, preferences, recent, profile). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

INDEX_ENTRIES = 50
INDEX_LINE = 80
INDEX_BUDGET = 4100  # 50 lines of 80 characters plus a short header
SECTION_BUDGET = 8000
SECTION_ITEMS = 50  # more than a section's budget can show; bounds the files read


class Entry(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def updated(self) -> str | None: ...


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def index_view(entries: Sequence[Entry]) -> str:
    """Most important, then most recent first: at most 50 lines of at most 80 characters."""
    ranked = sorted(entries, key=lambda e: (-e.importance, _neg_time(e.updated), e.id))
    shown = min(len(entries), INDEX_ENTRIES)
    lines = [f"# memvault index: {shown} of {len(entries)} memories"]
    used = len(lines[0]) + 1
    for entry in ranked[:INDEX_ENTRIES]:
        suffix = f" ({entry.id})"
        head = f"- [{entry.type}] "
        line = head + _cut(entry.title, INDEX_LINE - len(head) - len(suffix)) + suffix
        if used + len(line) + 1 > INDEX_BUDGET:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) + "\n"


def _neg_time(value: str | None) -> str:
    # sorts newest first when used ascending: invert each digit of the ISO text
    return "".join(chr(0x7F - ord(c)) if c.isdigit() else c for c in (value or "0000"))


def section_view(title: str, items: Sequence[tuple[str, str, str]], empty: str) -> str:
    """A Markdown section of (title, id, text) items, cut at the size budget."""
    if not items:
        return f"# {title}\n\n{empty}\n"
    out = [f"# {title}\n"]
    used = len(out[0])
    for item_title, item_id, text in items:
        block = f"## {item_title} ({item_id})\n{text.strip()}\n"
        if used + len(block) > SECTION_BUDGET:
            out.append(f"\n({len(items) - len(out) + 1} more not shown: use recall)\n")
            break
        out.append(block)
        used += len(block)
    return "\n".join(out)
