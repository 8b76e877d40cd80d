"""Text of the aggregate resources (memory://index, preferences, recent, profile). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from .models import MemoryInfo
from .note import cut, newest_first

INDEX_ENTRIES = 50
INDEX_LINE = 80
INDEX_BUDGET = 4100  # 50 lines of 80 characters plus a short header
SECTION_BUDGET = 8000
SECTION_ITEMS = 50  # more than a section's budget can show; bounds the files read


def index_view(entries: Sequence[MemoryInfo]) -> str:
    """Most important, then most recent first: at most 50 lines of at most 80 characters."""
    ranked = sorted(entries, key=lambda e: (-e.importance, newest_first(e.updated), e.id))
    shown = min(len(entries), INDEX_ENTRIES)
    lines = [f"# memvault index: {shown} of {len(entries)} memories"]
    used = len(lines[0]) + 1
    for entry in ranked[:INDEX_ENTRIES]:
        suffix = f" ({entry.id})"
        head = f"- [{cut(entry.type, 20)}] "  # a person's type: may be any length
        line = head + cut(entry.title, INDEX_LINE - len(head) - len(suffix)) + suffix
        if used + len(line) + 1 > INDEX_BUDGET:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) + "\n"


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


def profile_view(
    fields: Sequence[tuple[str, str]], unset: Sequence[str], problems: Sequence[str] = ()
) -> str:
    """The profile's fields and values, one line each, then the names of the unset ones."""
    lines = ["# The user's profile", ""]
    lines += [f"- {name}: {value}" for name, value in fields] or ["No profile fields set yet."]
    if unset:
        lines += ["", f"Not set (set_profile): {', '.join(unset)}"]
    lines += [f"Problem: {problem}" for problem in problems]
    return "\n".join(lines) + "\n"
