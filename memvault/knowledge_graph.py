"""The official MCP memory server's ``memory.jsonl`` (its knowledge graph) as memories. Pure.

Its lines are entities (``{"type": "entity", "name", "entityType", "observations": [...]}``)
and relations (``{"type": "relation", "from", "to", "relationType"}``). Each entity becomes
one memory, a ``fact`` titled with its name, in ``people/`` when it is a person and in
``entities/`` otherwise. The file is named after the entity, so a wikilink by its name
finds it in Obsidian as in memvault. Its observations are a list. Its relations are list
items such as ``- works_at [[entities/Anthropic|Anthropic]]`` under ``Relations:`` (by
path: a note of the same name elsewhere in the vault is not reached), which ``related`` and
``build_context`` follow. A relation from an entity the file does not hold is skipped and
named, because there is no memory to write it in.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import ids
from .errors import UnsafePathError
from .models import ImportSkip
from .validate import MAX_TITLE_CHARS

PEOPLE = frozenset({"person", "people", "human", "user", "contact"})
_UNSAFE_NAME = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]')  # what Obsidian refuses in a name
_UNSAFE_LABEL = re.compile(r"[\[\]|#^\r\n]")
_BRACKETS, _TAG_START = re.compile(r"[\[\]]"), re.compile(r"(^|\s)#")
_MAX_STEM_BYTES = 180  # a file name holds 255 bytes: room for " 2", ".md" and a -2 suffix


@dataclass
class _Entity:
    name: str
    kind: str
    where: str
    observations: list[str] = field(default_factory=list)
    relations: list[tuple[str, str]] = field(default_factory=list)  # (relation, target)


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSONL object is a line of the memory server's graph, not a memory."""
    if any(key in record for key in ("content", "text", "body")):
        return False
    kind = record.get("type")
    return (kind == "entity" and "name" in record) or (
        kind == "relation" and "from" in record and "to" in record
    )


class Graph:
    """The entities and relations of one file, gathered line by line, then one memory
    record (the keys a memvault JSONL line has) per entity."""

    def __init__(self) -> None:
        self._entities: dict[str, _Entity] = {}
        self._relations: list[tuple[str, str, str, str]] = []  # from, relation, to, where

    def add(self, record: dict[str, Any], where: str) -> ImportSkip | None:
        """Take one line; a skip naming it when it cannot be read."""
        if record["type"] == "relation":
            source, relation, target = (
                _name(p) if isinstance(p, str) else ""
                for p in (record.get("from"), record.get("relationType"), record.get("to"))
            )
            if not (source and relation and target):
                return _skip(where, "from, relationType and to must be names")
            self._relations.append((source, relation, target, where))
            return None
        name, kind = record.get("name"), record.get("entityType", "")
        observations = record.get("observations", [])
        if not isinstance(name, str) or not _name(name) or not isinstance(kind, str):
            return _skip(where, "an entity needs a name and an entityType")
        if not isinstance(observations, list):
            return _skip(where, "observations must be a list")
        entity = self._entities.setdefault(_name(name), _Entity(_name(name), kind.strip(), where))
        entity.observations += [text for text in map(_observation, observations) if text]
        return None

    def records(self) -> Iterator[tuple[dict[str, Any], str] | ImportSkip]:
        """One memory record per entity (with where it came from), and a skip per relation
        whose ``from`` entity the file does not hold."""
        for source, relation, target, where in self._relations:
            entity = self._entities.get(source)
            if entity is None:
                why = f"the relation's entity {source!r} is not in the file"
                yield ImportSkip(where, "unknown entity", f"{where}: {why}")
            else:
                entity.relations.append((relation, target))
        places = _places(self._entities.values())
        for entity in self._entities.values():
            yield _record(entity, places), entity.where


def _record(entity: _Entity, places: dict[str, str]) -> dict[str, Any]:
    lines = [f"Entity type: {entity.kind}"] if entity.kind else []
    if entity.observations:
        lines += ["", *(f"- {o}" for o in entity.observations)]
    if entity.relations:
        lines += ["", "Relations:"]
        lines += [f"- {_relation(rel)} {_link(target, places)}" for rel, target in entity.relations]
    title = entity.name[:MAX_TITLE_CHARS]
    record: dict[str, Any] = {
        "title": title,
        "content": "\n".join(lines).strip() or title,
        "type": "fact",
        "path": f"{places[entity.name]}.md",
        "aliases": [entity.name],  # found by its name, whatever file it ends up in
    }
    if entity.kind:
        record["tags"] = [ids.slugify(entity.kind)]
        record["entity_type"] = entity.kind
    return record


def _places(entities: Any) -> dict[str, str]:
    """A vault path (without ``.md``) per entity: its folder and a file name, its name where
    Obsidian allows it, and never one name for two entities of one folder (case aside, as
    on macOS)."""
    taken: set[tuple[str, str]] = set()
    places: dict[str, str] = {}
    for entity in entities:
        base, number, folder = _stem(entity.name), 1, _folder(entity.kind)
        stem = base
        while (folder, stem.casefold()) in taken:
            number += 1
            stem = f"{base} {number}"
        taken.add((folder, stem.casefold()))
        places[entity.name] = f"{folder}/{stem}"
    return places


def _stem(name: str) -> str:
    stem = " ".join(_UNSAFE_NAME.sub(" ", unicodedata.normalize("NFC", name)).split())
    while len(stem.encode("utf-8")) > _MAX_STEM_BYTES:  # by bytes: 60 Chinese are 180
        stem = stem[:-1]
    stem = stem.strip(". ")
    try:
        ids.clean_relpath(f"entities/{stem}.md")
    except UnsafePathError:
        return ids.slugify(name)
    return stem or ids.slugify(name)


def _link(target: str, places: dict[str, str]) -> str:
    """A link to the entity named ``target`` by its path, labelled with its name: a note of
    the person's with the same file name in another folder (``Projects/Anthropic.md``)
    must not be what the relation reaches, in memvault or Obsidian. An entity the file does
    not hold is linked by its name (a broken link until a note takes it)."""
    label = " ".join(_UNSAFE_LABEL.sub(" ", target).split())
    place = places.get(target)
    if place is not None:
        return f"[[{place}|{label}]]"
    stem = _stem(target)
    return f"[[{stem}]]" if stem == target else f"[[{stem}|{label}]]"


def _relation(relation: str) -> str:
    """A relation's type as plain words: no link (``[[Evil Corp]] owns``) and no tag
    (``#urgent``) the graph did not have; ``\\#`` is Obsidian's escaped ``#``."""
    return _TAG_START.sub(r"\1\\#", _BRACKETS.sub("", relation)).strip()


def _folder(kind: str) -> str:
    return "people" if kind.strip().casefold() in PEOPLE else "entities"


def _name(text: str) -> str:
    """A name as one line, composed (NFC): how entities are told apart and found."""
    return unicodedata.normalize("NFC", " ".join(text.split()))


def _observation(value: Any) -> str:
    """An observation as one line ("" for none): text as it is, anything else as JSON."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return " ".join(text.split())


def _skip(where: str, why: str) -> ImportSkip:
    return ImportSkip(where, "invalid record", f"{where}: {why}")
