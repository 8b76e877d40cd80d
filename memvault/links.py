"""Links between memories, resolved as Obsidian resolves them. Pure: index records in, answers out.

A memory's record keeps its link targets as written (``MemoryInfo.links``, see
:func:`note.link_target`; a Markdown link's marked as one); they are resolved here, against
the records of the moment, so a renamed note is still found by its title or alias while a
link by its old file name breaks.
A target resolves, in order, by vault path (with or without ``.md``; a path with folders may
be a suffix of the real one), by file name (case-insensitive; of several, the one in the
linking note's folder, else the shortest path), by title, by alias; a Markdown link's
relative path that reaches nothing from the note's folder is tried again as written, as
Obsidian does (its shortest form, ``[x](Note%20name.md)``, names a note in any folder); a
wikilink's never is (``[[sub/Note]]`` is that path); a wikilink starting ``./`` or ``../``
is a path from the note's folder. A target that is not a memory and names another kind of
file (``![[photo.jpg]]``) is an attachment: not a memory link, and never broken.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .errors import InvalidInputError
from .models import EVERY, Filters, MemoryInfo
from .note import MARKDOWN

MAX_DEPTH = 3
RELATED = "Related: "  # the body line remember/update_memory write their links on
_ATTACHMENT = re.compile(r"\.(?=[a-z0-9]*[a-z])[a-z0-9]{1,8}$", re.IGNORECASE)
_UNSAFE_LABEL = re.compile(r"[\[\]|#^\n]")


@dataclass(frozen=True)
class Outgoing:
    """One link of a memory: where it points, and the memory it reaches (None: broken)."""

    target: str
    memory: MemoryInfo | None


@dataclass(frozen=True)
class Related:
    """A memory reached from another by following links ``depth`` hops; ``relation`` says
    whether the last hop was a link out of the previous memory or a link into it."""

    memory: MemoryInfo
    relation: Literal["out", "in"]
    depth: int


def is_attachment(target: str) -> bool:
    """True when the target names a file that is not a note (``photo.jpg``, ``a.pdf``)."""
    return bool(_ATTACHMENT.search(target)) and not target.lower().endswith(".md")


def _key(text: str) -> str:
    # composed: a Mac writes file names decomposed (é as e + accent), a keyboard composed
    key = unicodedata.normalize("NFC", text.strip()).casefold()
    return key[:-3] if key.endswith(".md") else key


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class Graph:
    """The links among a set of records (all of a vault's, normally)."""

    def __init__(self, records: Iterable[MemoryInfo]) -> None:
        self.records = {r.id: r for r in records}
        self._paths: dict[str, MemoryInfo] = {}
        self._stems: dict[str, list[MemoryInfo]] = {}
        self._titles: dict[str, list[MemoryInfo]] = {}
        self._aliases: dict[str, list[MemoryInfo]] = {}
        for record in self.records.values():
            self._paths[_key(record.path)] = record
            self._stems.setdefault(_key(_name(record.path)), []).append(record)
            self._titles.setdefault(_key(record.title), []).append(record)
            for alias in record.aliases:
                self._aliases.setdefault(_key(alias), []).append(record)
        self._incoming: dict[str, list[str]] | None = None

    # -- resolving ----------------------------------------------------------------------
    def resolve(self, target: str, source: str = "", markdown: bool = False) -> MemoryInfo | None:
        """The memory a link to ``target`` from the note at ``source`` reaches, or None;
        ``markdown``: a Markdown link's path (made vault-relative), also tried as written."""
        key = _key(target)
        here = unicodedata.normalize("NFC", _folder(source)).casefold()
        if key.startswith(("./", "../")):  # Obsidian's "relative path to file" link format
            key = posixpath.normpath(posixpath.join(here, key))
        elif key.startswith("/"):  # from the vault's root
            key = key.lstrip("/")
        if not key or key.startswith("../"):
            return None
        found = self._lookup(key, source)
        if found is None and markdown and here and key.startswith(here + "/"):
            # a Markdown link's path, made vault-relative from the note's folder: Obsidian
            # tries it there, then as written (``[x](Note%20name.md)`` is its shortest form)
            found = self._lookup(key[len(here) + 1 :], source)
        return found

    def _lookup(self, key: str, source: str) -> MemoryInfo | None:
        if key in self._paths:
            return self._paths[key]
        if "/" in key:
            tail = [r for p, r in self._paths.items() if p.endswith("/" + key.lstrip("/"))]
            return _nearest(tail, source)
        for table in (self._stems, self._titles, self._aliases):
            if key in table:
                return _nearest(table[key], source)
        return None

    def outgoing(self, record: MemoryInfo) -> list[Outgoing]:
        """The record's links to other memories, resolved; broken ones have no memory."""
        out = []
        for written in record.links:
            target = written.removeprefix(MARKDOWN)
            memory = self.resolve(target, record.path, markdown=target != written)
            if memory is None and is_attachment(target):
                continue
            if memory is None or memory.id != record.id:
                out.append(Outgoing(target, memory))
        return out

    def links_of(self, memory_id: str) -> list[MemoryInfo]:
        """The memories a memory links to, each once."""
        record = self.records.get(memory_id)
        found = (o.memory for o in self.outgoing(record)) if record else ()
        return list({m.id: m for m in found if m is not None}.values())

    def backlinks(self, memory_id: str) -> list[MemoryInfo]:
        """The memories that link to a memory, by path."""
        if self._incoming is None:
            self._incoming = {}
            for record in self.records.values():
                for linked in self.links_of(record.id):
                    self._incoming.setdefault(linked.id, []).append(record.id)
        found = [self.records[i] for i in self._incoming.get(memory_id, ())]
        return sorted(found, key=lambda r: r.path)

    # -- questions ----------------------------------------------------------------------
    def related(self, memory_id: str, depth: int = 1) -> list[Related]:
        """Memories linked from or to a memory, then from or to those, up to ``depth`` hops;
        each once, at its smallest depth (a link out before a link in)."""
        if not 1 <= depth <= MAX_DEPTH:
            raise InvalidInputError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
        seen, frontier, out = {memory_id}, [memory_id], []
        for hop in range(1, depth + 1):
            reached: list[str] = []
            for node in frontier:
                steps = [(m, "out") for m in self.links_of(node)]
                steps += [(m, "in") for m in self.backlinks(node)]
                for memory, relation in steps:
                    if memory.id not in seen:
                        seen.add(memory.id)
                        reached.append(memory.id)
                        out.append(Related(memory, relation, hop))  # type: ignore[arg-type]
            frontier = reached
        return out

    def among(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``ids`` that links to others of them: the ids it links to."""
        wanted = set(ids)
        linked = {i: [m.id for m in self.links_of(i) if m.id in wanted] for i in ids}
        return {i: found for i, found in linked.items() if found}

    def broken(self) -> list[tuple[MemoryInfo, str]]:
        """(memory, target) of every link that reaches no memory, by path."""
        found = [
            (record, link.target)
            for record in self.records.values()
            for link in self.outgoing(record)
            if link.memory is None
        ]
        return sorted(found, key=lambda pair: (pair[0].path, pair[1]))

    def wikilinks(self, refs: Sequence[str]) -> list[str]:
        """``[[name|Title]]`` for each memory named by id, path, file name, title or alias;
        the name is the file name (the path when another file has the same name), so
        Obsidian resolves it too. Unknown references are one error naming them all."""
        found = {ref: self.records.get(ref.strip()) or self.resolve(ref) for ref in refs}
        unknown = [ref for ref, memory in found.items() if memory is None]
        if unknown:
            raise InvalidInputError(
                f"no memory to link to for {', '.join(map(repr, unknown))}: give ids or titles "
                "of existing memories (recall or list_memories finds them)"
            )
        return list(dict.fromkeys(self._wikilink(m) for m in found.values() if m is not None))

    def _wikilink(self, memory: MemoryInfo) -> str:
        stem = _name(memory.path).removesuffix(".md")
        name = stem if len(self._stems[_key(stem)]) == 1 else memory.path.removesuffix(".md")
        label = " ".join(_UNSAFE_LABEL.sub(" ", memory.title).split())
        return f"[[{name}]]" if _key(label) == _key(name) or not label else f"[[{name}|{label}]]"


def _nearest(candidates: Sequence[MemoryInfo], source: str) -> MemoryInfo | None:
    """Of several notes, the one in the linking note's folder, else the shortest path, as
    Obsidian picks (``getFirstLinkpathDest``): the shortest path written, ``a/b/Note.md``
    before ``zzzz/Note.md``, not the one fewest folders deep."""
    if not candidates:
        return None
    here = _folder(source)
    return min(candidates, key=lambda r: (_folder(r.path) != here, len(r.path), r.path))


def add_related(text: str, wikilinks: Sequence[str]) -> str:
    """``text`` ending with a ``Related:`` line holding ``wikilinks`` (an existing last
    ``Related:`` line is extended, without repeats)."""
    lines = text.rstrip().split("\n")
    have: list[str] = []
    if lines and lines[-1].startswith(RELATED):
        have = [w.strip() for w in lines.pop()[len(RELATED) :].split(", ") if w.strip()]
    head = "\n".join(lines).rstrip()
    line = RELATED + ", ".join(dict.fromkeys([*have, *wikilinks]))
    return f"{head}\n\n{line}" if head else line


Records = Callable[[Filters], Sequence[MemoryInfo]]  # MemoryService.records


_last: tuple[tuple[tuple[str, str, str], ...], Graph] | None = None


def _graph(records: Sequence[MemoryInfo]) -> Graph:
    """The graph of ``records``; the last one is kept while no record changes (recall and
    get_memory ask again and again of an unchanged vault)."""
    global _last  # noqa: PLW0603 - one cached value
    key = tuple((r.id, r.path, r.hash) for r in records)
    last = _last
    if last is not None and last[0] == key:
        return last[1]
    graph = Graph(records)
    _last = (key, graph)
    return graph


def graph_of(records: Records, *fresh: MemoryInfo) -> Graph:
    """The graph of every memory's record (archived ones too), with ``fresh`` records (of
    files just read) in place of what the index holds for them."""
    ours = {r.id: r for r in fresh}
    everything = [ours.pop(r.id, r) for r in records(EVERY)]
    return _graph([*everything, *ours.values()])


def linked_among(records: Records, ids: Sequence[str]) -> dict[str, list[str]]:
    """For each of ``ids`` that links to others of them: the ids it links to."""
    everything = records(EVERY)
    wanted = set(ids)
    if not any(r.links for r in everything if r.id in wanted):
        return {}  # the common case: no graph to build
    return _graph(everything).among(ids)


def with_links(text: str, refs: Sequence[str], records: Records) -> str:
    """``text`` with wikilinks to the memories ``refs`` names (ids or titles) on its
    ``Related:`` line; ``records`` gives the vault's records (asked only when linking)."""
    if not refs:
        return text
    return add_related(text, graph_of(records).wikilinks(refs))


__all__ = [
    "MAX_DEPTH",
    "Graph",
    "Outgoing",
    "Related",
    "add_related",
    "graph_of",
    "linked_among",
    "with_links",
]
