"""The user's profile: a schema in the vault and one memory file per field.

The schema (``_schemas/profile.yaml``; a vault without one uses the shipped default) names
each field, its type and, for enumerable fields, the allowed values. A field lives in
``profile/<field>.md`` (``field:`` and ``value:`` in its frontmatter, a readable body: a
heading, the value, and whatever a person notes around it, which a set keeps), so git gives
every field its own history, revert and purge, like any memory. A value is checked against
the schema before anything touches the disk: a refused write leaves no file and no commit.
Each set is one commit, ``profile: <field>``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from . import frontmatter, guard, validate, views
from .errors import (
    InvalidInputError,
    MalformedMemoryError,
    MemoryNotFoundError,
    SchemaError,
    UnsafePathError,
)
from .fields import new_meta
from .models import (
    LIFECYCLE_KEY,
    ChangeEvent,
    Memory,
    Problem,
    WriteResult,
    lifecycle_value,
    spelling,
)
from .template import template_dir

if TYPE_CHECKING:
    from .service import MemoryService
    from .vault import Vault

log = logging.getLogger(__name__)

SCHEMA_PATH = "_schemas/profile.yaml"
FOLDER = "profile"
TYPES = ("string", "list", "enum", "number", "date", "bool")
IMPORTANCE = 0.9  # never forgotten automatically
UNSET_STATUSES = ("archived", "superseded")  # a field file in one of these is unset
CONFIDENCE = 1.0  # the user said it
MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_DEPTH = 8
MAX_VALUE_CHARS = 1000
MAX_ITEMS = 100
TRUE, FALSE = ("true", "yes", "y", "on", "1"), ("false", "no", "n", "off", "0")
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
_SPEC_KEYS = frozenset({"type", "description", "values", "title"})
_SEPARATORS, _OPENING, _CLOSING = ",;，、；", "([（【", ")]）】"  # of items in a list's text


# -- the schema -------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldSpec:
    """One profile field: its name (``health.allergies``), type and allowed values."""

    name: str
    type: str
    description: str
    values: tuple[str, ...] = ()  # allowed values: of an enum, or of a list's items
    title: str = ""

    @property
    def heading(self) -> str:
        return self.title or self.name.replace(".", " ").replace("_", " ").capitalize()

    def brief(self) -> str:
        """``units (metric|imperial)``: the field and what it takes, for a person or agent."""
        kind = "|".join(self.values) if self.values else self.type
        return f"{self.name} ({'list of ' if self.type == 'list' and self.values else ''}{kind})"


@dataclass(frozen=True)
class Schema:
    fields: tuple[FieldSpec, ...]
    source: str  # where it was read from: the vault's file, or the shipped default

    def spec(self, name: str) -> FieldSpec:
        """The field called ``name``; an unknown one is an error listing the known fields."""
        wanted = str(name).strip()
        for spec in self.fields:
            if spec.name == wanted:
                return spec
        names = [s.name for s in self.fields]
        close = difflib.get_close_matches(wanted, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InvalidInputError(
            f"unknown profile field {wanted!r}: {hint}the fields are {', '.join(names)} "
            f"(add a field to {SCHEMA_PATH} to use it)"
        )


def parse_schema(text: str, where: str) -> Schema:
    """The schema in ``text`` (YAML with a ``fields:`` mapping), checked field by field."""
    loaded = load_yaml(text, where)
    fields = loaded.get("fields") if isinstance(loaded, dict) else None
    if not isinstance(fields, dict) or not fields:
        raise SchemaError(
            f"{where} has no `fields:` mapping: fix it, or delete it to use the default"
        )
    return Schema(tuple(_field(str(name), spec, where) for name, spec in fields.items()), where)


def _field(name: str, raw: Any, where: str) -> FieldSpec:
    def bad(problem: str) -> SchemaError:
        return SchemaError(f"{where}: field {name!r} {problem}: fix the schema by hand")

    if not _NAME.match(name):
        raise bad("is not a field name (lowercase words joined by _ and grouped by .)")
    if not isinstance(raw, dict) or not set(raw) <= _SPEC_KEYS:
        raise bad(f"must be a mapping of {', '.join(sorted(_SPEC_KEYS))}")
    kind = raw.get("type")
    if kind not in TYPES:
        raise bad(f"has type {kind!r}; the types are {', '.join(TYPES)}")
    values = raw.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise bad("has `values` that are not a list of text")
    if kind == "enum" and not values:
        raise bad("is an enum without `values`")
    if values and kind not in ("enum", "list"):
        raise bad(f"has `values` but is a {kind} (only enum and list take values)")
    description, title = raw.get("description", ""), raw.get("title") or ""
    if not isinstance(description, str) or not isinstance(title, str) or "\n" in description:
        raise bad("needs a one-line text `description` (and a text `title`, if any)")
    return FieldSpec(name, kind, description.strip(), tuple(values), title.strip())


def load_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` with the guards of memvault's frontmatter: a size cap, no anchors
    or aliases (a small file could expand to billions of values), a nesting cap."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
        raise SchemaError(f"{where} is over {MAX_SCHEMA_BYTES:,} bytes: shorten it")
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise SchemaError(f"{where} uses YAML anchors or aliases: write the values out")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_SCHEMA_DEPTH:
                    raise SchemaError(f"{where} is nested too deep: flatten it")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        twice = _repeated_key(yaml.compose(text, Loader=loader))
        if twice is not None:
            raise SchemaError(
                f"{where} names {twice.value!r} twice (again at line {twice.start_mark.line + 1})"
                ": YAML would keep only the last one; merge the two by hand"
            )
        return yaml.load(text, Loader=loader)  # a safe loader
    except yaml.YAMLError as exc:
        raise SchemaError(f"{where} {frontmatter.yaml_problem(exc)}: fix it by hand") from exc
    except (ValueError, OverflowError, RecursionError) as exc:
        raise SchemaError(f"{where} has a value YAML cannot read ({exc}): fix it") from exc


def _repeated_key(node: yaml.Node | None) -> yaml.ScalarNode | None:
    """The first key written a second time in one mapping, at any depth (the depth is
    capped before this runs)."""
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    return key
                seen.add(key.value)
            children.append(value)
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    return next((k for k in map(_repeated_key, children) if k is not None), None)


def default_schema() -> Schema:
    """The schema memvault ships (the template's ``_schemas/profile.yaml``)."""
    text = (template_dir() / SCHEMA_PATH).read_text(encoding="utf-8")
    return parse_schema(text, f"memvault's default {SCHEMA_PATH}")


def load_schema(service: MemoryService) -> Schema:
    """The vault's schema; the shipped default when the vault has none (older vaults)."""
    return schema_in(service.vault)


def schema_in(vault: Vault) -> Schema:
    """The schema of ``vault`` (the shipped default when it has none)."""
    try:
        data = vault.read_regular(SCHEMA_PATH)
    except FileNotFoundError:
        return default_schema()
    except (OSError, UnsafePathError) as exc:
        raise SchemaError(f"{SCHEMA_PATH} cannot be read ({exc}): fix or delete it") from exc
    return parse_schema(data.decode("utf-8", errors="replace"), SCHEMA_PATH)


# -- values -----------------------------------------------------------------------------------
def check_value(spec: FieldSpec, value: Any) -> Any:
    """``value`` as stored for ``spec`` (text from a command line is converted), or an
    InvalidInputError that says what the field takes."""
    if spec.type == "list":
        return _check_list(spec, value)
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise _wrong(spec, value, "one value, not a list")
        value = value[0]
    if spec.type == "number":
        return _number(spec, value)
    if spec.type == "bool":
        return _bool(spec, value)
    text = _text(spec, value)
    if spec.type == "date":
        return _date(spec, text)
    if spec.type == "enum":
        return _choice(spec, text)
    return text


def _check_list(spec: FieldSpec, value: Any) -> list[str]:
    """A list of text items; text is split into items (``penicillin, peanuts``)."""
    if isinstance(value, str):
        text, value = value, split_items(value)
        if not value:  # "" from an empty shell variable must not say "none" over a list
            raise InvalidInputError(
                f"{spec.name} got no items in {text!r}: give the items, or to clear the "
                f"field forget {path_of(spec.name)} (an empty list, [], says there are none)"
            )
    if not isinstance(value, list | tuple):
        raise _wrong(spec, value, _takes(spec))
    if len(value) > MAX_ITEMS:
        raise InvalidInputError(f"{spec.name} takes at most {MAX_ITEMS} items, got {len(value)}")
    items = [_text(spec, item) for item in value]
    items = [_choice(spec, item) for item in items] if spec.values else items
    return list(dict.fromkeys(items))


def split_items(text: str) -> list[str]:
    """``text`` cut at commas and semicolons, Chinese ones too (``，`` ``、`` ``；``), but not
    inside brackets: ``Lily (born 2019, allergic to penicillin), Tom`` is two items."""
    items, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth = max(depth - 1, 0)
        elif char in _SEPARATORS and depth == 0:
            items.append(text[start:at])
            start = at + 1
    items.append(text[start:])
    return [item for item in items if item.strip()]


def _text(spec: FieldSpec, value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong(spec, value, _takes(spec))
    text = validate.text(spec.name, value.strip(), one_line=True)
    if not text:
        raise InvalidInputError(
            f"{spec.name} cannot be empty: to clear it, forget {path_of(spec.name)}"
        )
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidInputError(
            f"{spec.name} is {len(text):,} characters, over {MAX_VALUE_CHARS}: "
            "keep profile values short and put the rest in a memory"
        )
    return text


def _choice(spec: FieldSpec, text: str) -> str:
    for allowed in spec.values:
        if text.casefold() == allowed.casefold():
            return allowed
    raise InvalidInputError(
        f"{spec.name} must be one of {', '.join(spec.values)}, got {text!r}"
        + (" (one value per item)" if spec.type == "list" else "")
    )


def _number(spec: FieldSpec, value: Any) -> int | float:
    """A finite number; the error names the value as given (``1e999``, 400 digits), not
    what it became."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _wrong(spec, value, "a number") from None
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise _wrong(spec, value, "a number")
    try:
        finite = math.isfinite(number)
    except OverflowError:  # an int past a float's range: from JSON, or written by hand
        finite = False
    if not finite:
        raise _wrong(spec, value, "a number within ±1.7e308")
    return int(number) if float(number).is_integer() and abs(number) < 2**53 else number


def _bool(spec: FieldSpec, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE or word in FALSE:
        return word in TRUE
    raise _wrong(spec, value, "true or false")


def _date(spec: FieldSpec, text: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise _wrong(spec, text, "a date like 2019-04-23") from None


def _takes(spec: FieldSpec) -> str:
    if spec.type == "list":
        return "a list of text (or text with commas between items)"
    words = {"string": "text", "date": "a date like 2019-04-23", "bool": "true or false"}
    return words.get(spec.type) or "one of " + ", ".join(spec.values)


def _wrong(spec: FieldSpec, value: Any, takes: str) -> InvalidInputError:
    try:
        shown = repr(value)
    except ValueError:  # an int of more digits than Python will print
        shown = "a number of thousands of digits"
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return InvalidInputError(f"{spec.name} takes {takes}, got {shown}")


def plain(value: Any) -> Any:
    """A stored value as JSON-able data (YAML gives dates as date objects)."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [str(plain(v)) for v in value]
    return value


def show(value: Any) -> str:
    """A value in words, on one line: ``penicillin, peanuts``, ``true``, ``2019-04-23``."""
    value = plain(value)
    if isinstance(value, list):
        return ", ".join(value) if value else "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def path_of(field: str) -> str:
    return f"{FOLDER}/{field}.md"


def body_of(spec: FieldSpec, value: Any, details: Mapping[str, list[str]] | None = None) -> str:
    """The field file's readable body: its heading and value (one item per line, each
    followed by its indented lines in ``details``, by item casefolded)."""
    if isinstance(value, list):
        said = details or {}
        items = ("\n".join([f"- {i}", *said.get(str(i).casefold(), ())]) for i in value)
        text = "\n".join(items) if value else "(none)"
    else:
        text = show(value)
    return f"# {spec.heading}\n\n{text}\n"


def notes_of(body: str, shown: str, heading: str | None = None) -> str:
    """What a person wrote in a field file's body besides its heading and value: the value
    is the paragraph that starts with ``shown`` (the old value as :func:`body_of` wrote it;
    lines typed right below it are notes). Where no paragraph reads it (the value was
    changed by hand in the frontmatter), every paragraph is kept: nothing is guessed away.
    The first line is the field's heading when it is ``# heading`` (any heading when None);
    a heading of the person's own (a note of theirs at a field's path) is kept.
    A set rewrites heading and value and keeps the rest, below the value."""
    lines = body.split("\n")  # not splitlines: a person's \f or U+2028 stays
    top = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    if top < len(lines) and _is_heading(lines[top], heading):
        top += 1
    wanted = shown.strip("\n").split("\n")
    for start in range(top, len(lines)):
        opens = start == top or not lines[start - 1].strip()  # a paragraph's first line
        if opens and lines[start : start + len(wanted)] == wanted:
            around = (lines[top:start], lines[start + len(wanted) :])
            return "\n\n".join(p for p in ("\n".join(a).strip("\n") for a in around) if p)
    return "\n".join(lines[top:]).strip("\n")


def _is_heading(line: str, heading: str | None) -> bool:
    if not line.startswith("# "):
        return False
    return heading is None or " ".join(line[2:].split()).casefold() == heading.casefold()


# -- reading ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One field that is set: its value and the memory that holds it."""

    field: str
    value: Any
    id: str
    path: str
    updated: str | None
    unlisted: tuple[str, ...] = ()  # items the file's text lists beyond its `value:`


@dataclass(frozen=True)
class Profile:
    fields: tuple[Entry, ...]  # in the schema's order
    unset: tuple[str, ...]  # briefs of the fields not set: ``units (metric|imperial)``
    problems: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()  # the fields unset by a problem of their file
    files: frozenset[str] = frozenset()  # every field's file, set or not (profile/units.md)


def read(service: MemoryService) -> Profile:
    """Every field of the schema: the set ones with their values, the briefs of the rest.

    A broken schema file does not hide the profile: the default schema is used and the
    problem is reported. So is a field file that cannot be read, or whose value the schema
    refuses (a person's edit by hand): that field is unset, so no agent acts on it.
    """
    schema, problems = _schema_or_default(service.vault)
    entries, unset, broken = [], [], []
    for spec, memory, value, problem in stored(service.vault, schema.fields):
        if problem:
            problems.append(problem)
            broken.append(spec.name)
        if memory is None:
            unset.append(spec.brief())
            continue
        extra = unlisted(spec, memory.body, value)
        if extra:
            problems.append(_unlisted_problem(spec, memory.path, extra))
        entry = Entry(spec.name, value, memory.id, memory.path, memory.updated, extra)
        entries.append(entry)
    files = frozenset(path_of(spec.name) for spec in schema.fields)
    return Profile(tuple(entries), tuple(unset), tuple(problems), tuple(broken), files)


def get_field(service: MemoryService, field: str) -> Entry | None:
    """One field (None when it is not set); an unknown field is an error."""
    return lookup(service, field)[0]


def lookup(service: MemoryService, field: str) -> tuple[Entry | None, str | None]:
    """One field (None when it is not set) and, when its file is there but does not count
    (a value the schema refuses, a file that cannot be read), why; an unknown field is an
    error."""
    spec = load_schema(service).spec(field)
    ((_, memory, value, problem),) = stored(service.vault, [spec])
    if memory is None:
        return None, problem
    return Entry(spec.name, value, memory.id, memory.path, memory.updated), None


def checks(vault: Vault) -> list[Problem]:
    """What doctor reports of the profile: a schema memvault cannot use, a field file that
    cannot be read, or whose value the schema refuses (each such field is unset)."""
    schema, found = _schema_or_default(vault)
    problems = [Problem(SCHEMA_PATH, "profile", message) for message in found]
    for spec, memory, value, problem in stored(vault, schema.fields):
        extra = unlisted(spec, memory.body, value) if memory is not None else ()
        said = _unlisted_problem(spec, path_of(spec.name), extra) if extra else problem
        if said:
            problems.append(Problem(path_of(spec.name), "profile", said))
    return problems


_ITEM = re.compile(r"^[-*+][ \t]+(?:\[.\][ \t]+)?(.*?)\s*$")  # a top-level list item


def unlisted(spec: FieldSpec, body: str, value: Any) -> tuple[str, ...]:
    """Items a person added by hand to the list in a list field's text but not to its
    ``value:`` (Obsidian shows the text: ``- shellfish`` typed under ``- peanuts``): the
    items of the first list in the body that holds every item of the value (of ``[]``: the list
    right under its ``(none)``), less those."""
    if spec.type != "list" or not isinstance(value, list):
        return ()
    have = {str(item).casefold() for item in value}
    for items in _lists(body) if value else _under_none(body):
        if have <= {item.casefold() for item in items}:
            return tuple(dict.fromkeys(i for i in items if i and i.casefold() not in have))
    return ()


def _under_none(body: str) -> Iterator[list[str]]:
    """The items of the list right under an empty list field's ``(none)`` line (the others
    are the person's notes: ``To ask the doctor:`` and a list)."""
    lines = body.split("\n")
    at = next((n for n, line in enumerate(lines) if line.strip() == "(none)"), len(lines))
    rest = "\n".join(lines[at + 1 :]).lstrip("\n")
    if _ITEM.match(rest.split("\n", 1)[0]):
        yield next(_lists(rest))


def _lists(body: str) -> Iterator[list[str]]:
    """The items of each Markdown list in ``body`` (blank lines between items do not end a
    list, nor do an item's indented lines, its details; a line of other text does)."""
    items: list[str] = []
    for line in [*body.split("\n"), "end"]:
        match = _ITEM.match(line)
        if match:
            items.append(match.group(1))
        elif line.strip() and not line[0].isspace():
            if items:
                yield items
            items = []


def _without_items(notes: str, items: Sequence[str]) -> str:
    """``notes`` without the items ``items`` holds at its top: the items typed by hand under
    the value's list, which the new value now lists (lower down they are a note's own)."""
    have, lines = {item.casefold() for item in items}, notes.split("\n")
    top = next((n for n, ln in enumerate(lines) if _ends_list(ln)), len(lines))
    head = [
        ln for ln in lines[:top] if not ((m := _ITEM.match(ln)) and m.group(1).casefold() in have)
    ]
    return "\n".join([*head, *lines[top:]]).strip("\n")


def _ends_list(line: str) -> bool:
    """Whether ``line`` ends a list: text, not an item, a blank or an item's indented line."""
    return bool(line.strip()) and not line[0].isspace() and not _ITEM.match(line)


def _detached(body: str, names: set[str]) -> tuple[str, dict[str, list[str]]]:
    """``body`` without the indented lines (an item's details) of the items of its first
    list that ``names`` holds (casefolded), and those lines by item: they go where their
    item goes (under it in the new list, or away with it)."""
    lines = body.split("\n")
    n = next((n for n, ln in enumerate(lines) if _ITEM.match(ln)), len(lines))
    kept, details = lines[:n], dict[str, list[str]]()
    while n < len(lines) and not _ends_list(lines[n]):
        match = _ITEM.match(lines[n])
        kept.append(lines[n])
        n += 1
        if match and match.group(1).casefold() in names:
            end = n
            for k in range(n, len(lines)):  # indented lines, and blank lines between them
                if _ends_list(lines[k]) or _ITEM.match(lines[k]):
                    break
                end = k + 1 if lines[k].strip() else end
            details.setdefault(match.group(1).casefold(), []).extend(lines[n:end])
            n = end
    return "\n".join(kept + lines[n:]), details


def _unlisted_problem(spec: FieldSpec, path: str, extra: Sequence[str]) -> str:
    return (
        f"{spec.name}: {path} lists {', '.join(extra)} in its text but not in its `value:` "
        "(the value counts): add them to `value:` by hand or set the field with them, or "
        "remove them from the text"
    )


def _schema_or_default(vault: Vault) -> tuple[Schema, list[str]]:
    try:
        return schema_in(vault), []
    except SchemaError as exc:
        return default_schema(), [str(exc)]


def stored(
    vault: Vault, specs: Sequence[FieldSpec]
) -> Iterator[tuple[FieldSpec, Memory | None, Any, str | None]]:
    """Each field's file, value (as the schema takes it) and problem; the file is None when
    the field is unset: no file, an archived or superseded one, or a problem."""
    for spec in specs:
        path = path_of(spec.name)
        try:
            memory = vault.read(path)
        except MemoryNotFoundError:
            yield spec, None, None, None
            continue
        except (MalformedMemoryError, UnsafePathError, OSError) as exc:
            yield spec, None, None, f"{spec.name} is unset: {exc}"
            continue
        yield (spec, *_judged(spec, path, memory))


def _judged(spec: FieldSpec, path: str, memory: Memory) -> tuple[Memory | None, Any, str | None]:
    """A field file's memory and value, or None and why it does not count (None too for an
    archived or superseded one, which is simply unset)."""
    if memory.problems:
        return None, None, f"{spec.name} is unset: {'; '.join(memory.problems)}"
    if memory.status in UNSET_STATUSES:
        return None, None, None
    if "value" not in memory.meta:
        return None, None, f"{spec.name} is unset: {path} has no `value:`; add one"
    return _checked(spec, path, memory)


def refusal(vault: Vault, path: str, data: bytes) -> str | None:
    """Why ``data`` written at ``path`` would not count as its field under the vault's
    schema now (a proposal accepted after the schema changed); None when it would, or when
    ``path`` is no field's file."""
    spec = next((s for s in schema_in(vault).fields if path_of(s.name) == path), None)
    if spec is None:
        return None
    try:
        memory = vault.parse_bytes(path, data)
    except MalformedMemoryError as exc:
        return f"{spec.name} is unset: {exc}"
    return _judged(spec, path, memory)[2]


def _checked(spec: FieldSpec, path: str, memory: Memory) -> tuple[Memory | None, Any, str | None]:
    """A stored value as the schema takes it, or the schema's refusal as a problem."""
    try:
        return memory, check_value(spec, plain(memory.meta["value"])), None
    except InvalidInputError as exc:
        return (
            None,
            None,
            (
                f"{spec.name} is unset: {path} holds a value the schema refuses ({exc}); "
                "correct the file by hand, or set the field again"
            ),
        )


def view(service: MemoryService) -> str:
    """The profile in a few lines, for memory://profile."""
    profile = read(service)
    shown = [(e.field, show(e.value)) for e in profile.fields]
    unset = [brief.split(" ", 1)[0] for brief in profile.unset]
    return views.profile_view(shown, unset, profile.problems)


def is_field_path(path: str) -> bool:
    return path.startswith(f"{FOLDER}/")


# -- writing ----------------------------------------------------------------------------------
def set_field(
    service: MemoryService,
    field: str,
    value: Any,
    reason: str | None = None,
    source: str = "user",
) -> WriteResult:
    """Set one field (checked against the schema) in its own file, as one commit."""
    spec = load_schema(service).spec(field)
    clean = check_value(spec, value)
    validate.label("source", source)
    validate.reason(reason)
    path, body = path_of(spec.name), body_of(spec, clean)
    guard.check_memory_path(service.vault, path, path)
    guard.check_text(service.settings, body, None, ())  # sizes and credentials
    with service._writing():
        existing = _existing(service, path)
        if existing is not None and _holds(existing, clean):
            return WriteResult(existing, None, "unchanged", existing.content_hash)
        _write(service, spec, path, clean, body, source, existing)
        fresh = service.vault.read(path)
        trailers = service._trailers("profile", fresh.id)
        if reason:
            trailers["Memvault-Reason"] = reason
        sha = service.history.commit([path], f"profile: {spec.name}", trailers)
    service.indexing.upsert([fresh])
    event = ChangeEvent(changed=(path,), added=() if existing else (path,))
    service._notify(event, *([existing] if existing else []), fresh)
    previous = existing.content_hash if existing else None
    return WriteResult(fresh, sha, _action(spec, existing, clean), previous)


def _action(spec: FieldSpec, existing: Memory | None, value: Any) -> str:
    """created, updated, or replaced: a list that lost items of the one it replaced (a
    set is the whole list; the dropped items are logged, for the person at a terminal)."""
    if existing is None:
        return "created"
    old = plain(existing.meta.get("value"))
    if spec.type != "list" or existing.status in UNSET_STATUSES or not isinstance(old, list):
        return "updated"
    kept = {item.casefold() for item in value}
    dropped = [item for item in old if item.casefold() not in kept]
    if not dropped:
        return "updated"
    log.warning(
        "%s: the new list replaced the old one and dropped %s (to keep an item, set the "
        "field with every item)",
        spec.name,
        ", ".join(dropped),
    )
    return "replaced"


def _holds(memory: Memory, value: Any) -> bool:
    """Whether the field file serves ``value`` already (an archived one serves nothing)."""
    return memory.status not in UNSET_STATUSES and memory.meta.get("value") == value


def _existing(service: MemoryService, path: str) -> Memory | None:
    try:
        return service.vault.read(path)
    except MemoryNotFoundError:
        return None


def _write(
    service: MemoryService,
    spec: FieldSpec,
    path: str,
    value: Any,
    body: str,
    source: str,
    existing: Memory | None,
) -> None:
    """A new field file, or a minimal edit of the existing one (the person's keys and notes
    kept)."""
    now = service.clock().replace(microsecond=0)
    changes = {"field": spec.name, "value": value, "source": source}
    if existing is not None:
        for key in (LIFECYCLE_KEY, "status"):  # archived by hand in place: set again, active
            if lifecycle_value(existing.meta.get(spelling(existing.meta, key))) in UNSET_STATUSES:
                changes[key] = "active"
        old = plain(existing.meta.get("value"))
        shown, text = body_of(spec, old).split("\n\n", 1)[-1], existing.body
        olds = old if isinstance(old, list) else []
        # an item's indented lines go where the item goes; of an empty field, only a list
        # right under its (none) is items (another list is the person's notes)
        if isinstance(value, list) and (olds or next(_under_none(text), None)):
            names = {str(i).casefold() for i in [*value, *olds]}
            text, details = _detached(text, names)
            body = body_of(spec, value, details)
        notes = notes_of(text, shown, spec.heading)  # the person's: kept
        if isinstance(value, list):  # but not an item typed by hand that the value now holds
            notes = _without_items(notes, value)
        service.vault.rewrite(existing, changes, f"{body}\n{notes}\n" if notes else body, now)
        return
    meta = new_meta("fact", [FOLDER], CONFIDENCE, IMPORTANCE, now, source) | changes
    text = frontmatter.new_file(meta, body)
    validate.file_size(path, text, service.settings.max_file_bytes)
    service.vault.write(path, text, expected_hash="")
