"""Text <-> (frontmatter, body), preserving the person's file.

python-frontmatter does the YAML: its ``YAMLHandler``, given a guarded libyaml loader
(anchors and aliases refused, size and depth capped), reads every frontmatter, and
``frontmatter.dumps`` writes the frontmatter of a new file. The split into fences and
body is ours (a BOM, CRLF, a ``...`` closer and an unclosed fence keep their meaning,
and the body keeps every byte). Rewriting an existing file never re-serialises the
whole frontmatter: only the blocks of keys that changed are replaced, so unknown keys,
key order, comments and blank lines of a hand-written file survive. A key written more
than once is set at its last occurrence (the one YAML reads) and removed at every one.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import frontmatter as pyfrontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from .errors import InvalidInputError, MalformedMemoryError

BOM = "\ufeff"
_FENCE = "---"
_CLOSERS = ("---", "...")
_KEY_LINE = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s#'"\-][^:]*?)\s*:(?:\s|$)""")
_TRAILING_COMMENT = re.compile(r"\s+#\s.*$")
# libyaml's safe loader when PyYAML was built with it (several times faster), else pure Python
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_DEPTH = 20  # levels of lists/mappings; real frontmatter uses 2 or 3


class _Delete:
    """Marker: remove this key from the frontmatter."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()


@dataclass(frozen=True)
class Document:
    """A memory file split into its parts. ``meta`` is what YAML said."""

    meta: dict[str, Any]
    frontmatter: str | None  # raw YAML text between the fences, "\n" newlines
    body: str  # "\n" newlines
    crlf: bool
    bom: bool


_TAG = re.compile(r"constructor for the tag '(?:tag:yaml\.org,2002:)?([^']*)'")


def yaml_problem(exc: yaml.YAMLError, line_word: str = "line") -> str:
    """What is wrong, after the name of what was read: "is not valid YAML at line 3", or,
    for a tag plain YAML does not read (``!!python/object/apply:os.system``, written to run
    code), "uses the YAML tag ... at line 3, which memvault never runs"."""
    mark = getattr(exc, "problem_mark", None)
    line = f" at {line_word} {mark.line + 1}" if mark is not None else ""
    tag = _TAG.search(str(getattr(exc, "problem", "") or ""))
    if tag is not None:
        name = tag.group(1)
        shown = f"!!{name}" if not name.startswith("!") else name
        return (
            f"uses the YAML tag {shown}{line}, which memvault never runs (only plain values "
            "are read): remove the tag"
        )
    return f"is not valid YAML{line}"


def parse(text: str) -> Document:
    """Split and parse a memory file. Raises MalformedMemoryError on bad YAML."""
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n")
    if "\x00" in text:
        raise MalformedMemoryError("file contains NUL bytes (binary?); it is left untouched")
    fm_text, body = _split(text)
    if fm_text is None:
        return Document({}, None, body, crlf, bom)
    loaded = _HANDLER.load(fm_text) if fm_text.strip() else {}
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise MalformedMemoryError("frontmatter is not a mapping of keys to values: fix it by hand")
    meta = {str(k): v for k, v in loaded.items()}
    return Document(meta, fm_text, body, crlf, bom)


class _MemoryHandler(YAMLHandler):
    """python-frontmatter's YAML handler with memvault's guards and output style."""

    def load(self, fm: str, **kwargs: object) -> Any:
        """YAML values of a frontmatter, refusing what could take the vault down.

        Anchors and aliases are refused before anything is composed (an alias bomb of
        a kilobyte expands to billions of items for whoever walks the values), and so
        are frontmatters over MAX_FRONTMATTER_BYTES or nested deeper than MAX_DEPTH.
        """
        size = len(fm.encode("utf-8", "surrogatepass"))
        if size > MAX_FRONTMATTER_BYTES:
            raise MalformedMemoryError(
                f"frontmatter is {size:,} bytes, over the {MAX_FRONTMATTER_BYTES:,}-byte limit: "
                "move the long values into the body by hand"
            )
        try:
            if "&" in fm or "*" in fm:  # cheap: no anchor or alias without these
                _refuse_anchors(fm)
            return super().load(fm, Loader=_guarded(_Loader))
        except yaml.YAMLError as exc:
            raise MalformedMemoryError(
                f"frontmatter {yaml_problem(exc, 'frontmatter line')}: fix the YAML by hand; "
                "memvault will not rewrite this file"
            ) from exc
        except (ValueError, OverflowError, RecursionError) as exc:  # e.g. a date 2024-13-45
            raise MalformedMemoryError(
                f"frontmatter has a value YAML cannot read ({exc}): fix it by hand; "
                "memvault will not rewrite this file"
            ) from exc

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        """Keys in the given order, datetimes as ISO timestamps, unicode as written,
        top-level lists of scalars inline (``[a, b]``), no line wrapping."""
        kwargs.update(Dumper=_Dumper, sort_keys=False, width=10**9)
        flowing = {k: _flow_if_scalars(v) for k, v in metadata.items()}
        text: str = super().export(flowing, allow_unicode=True, **kwargs)
        if any(ch in text for ch in _UNICODE_BREAKS):
            # libyaml reads NEL/LS/PS as line breaks even inside quotes: escape everything
            text = super().export(flowing, allow_unicode=False, **kwargs)
        return text


@functools.cache
def _guarded(base: type) -> type:
    """``base`` (a PyYAML safe loader) checking the nesting depth before building values."""

    def get_single_node(self: Any) -> Any:
        node = base.get_single_node(self)  # type: ignore[attr-defined]
        if node is not None:
            _check_depth(node)
        return node

    return type(f"Guarded{base.__name__}", (base,), {"get_single_node": get_single_node})


def _refuse_anchors(fm_text: str) -> None:
    for event in yaml.parse(fm_text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise MalformedMemoryError(
                "frontmatter uses YAML anchors or aliases (&name / *name), which memvault "
                "refuses (one small file could expand to billions of values): "
                "write the values out by hand"
            )


def _check_depth(root: yaml.Node) -> None:
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if depth > MAX_DEPTH:
            raise MalformedMemoryError(
                f"frontmatter values are nested more than {MAX_DEPTH} levels deep: "
                "flatten them by hand"
            )
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)


def block(text: str) -> str | None:
    """A file's frontmatter as written (a BOM and CRLF aside), None without one."""
    return _split(text.removeprefix(BOM).replace("\r\n", "\n"))[0]


def duplicate_keys(text: str) -> list[str]:
    """Top-level keys a file's frontmatter writes more than once (YAML reads the last one),
    in file order; [] for a file without frontmatter or with frontmatter YAML cannot read."""
    fm_text = block(text)
    if fm_text is None or not fm_text.strip():
        return []
    try:
        root = yaml.compose(fm_text, Loader=_guarded(_Loader))
    except (yaml.YAMLError, MalformedMemoryError):
        return []  # reported as malformed by whoever parses it
    if not isinstance(root, yaml.MappingNode):
        return []
    seen = Counter(str(key.value) for key, _ in root.value if isinstance(key, yaml.ScalarNode))
    return [key for key, count in seen.items() if count > 1]


def _split(text: str) -> tuple[str | None, str]:
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _FENCE:
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _CLOSERS:
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    return None, text  # an opening fence with no closer is just body text


def render(doc: Document, changes: dict[str, Any] | None = None, body: str | None = None) -> str:
    """Render ``doc`` with ``changes`` applied to its frontmatter (minimal edit)."""
    changes = changes or {}
    fm_lines = doc.frontmatter.split("\n") if doc.frontmatter is not None else []
    if doc.frontmatter == "":
        fm_lines = []
    for key, value in changes.items():
        fm_lines = _apply(fm_lines, key, value)
    check_written("\n".join(fm_lines), changes)
    new_body = doc.body if body is None else body
    if doc.frontmatter is None and not fm_lines:
        text = new_body
    else:
        text = "\n".join([_FENCE, *fm_lines, _FENCE]) + "\n" + new_body
    if doc.crlf:
        text = text.replace("\n", "\r\n")
    return (BOM if doc.bom else "") + text


def new_file(meta: dict[str, Any], body: str) -> str:
    """A fresh memory file with keys in the given order (python-frontmatter writes it)."""
    if not meta:
        return f"{_FENCE}\n{_FENCE}\n{body}"
    post = pyfrontmatter.Post("", _HANDLER)
    post.metadata.update(meta)
    # dumps strips the text it returns: the body is added after it, byte for byte
    head = pyfrontmatter.dumps(post)
    check_written(head[len(_FENCE) + 1 : -len(_FENCE) - 1], meta)
    return head + "\n" + body


def check_edit(text: str, changes: dict[str, Any]) -> None:
    """Refuse an edited file whose frontmatter does not read back with ``changes`` made:
    a layout the minimal-edit writer cannot change in place (a flow mapping ``{a: 1}``)
    would otherwise be left as YAML nobody can read, the person's keys lost with it."""
    try:
        meta = parse(text).meta
    except MalformedMemoryError:
        meta = None
    if meta is None or any((key in meta) == (value is DELETE) for key, value in changes.items()):
        raise MalformedMemoryError(
            "memvault cannot change this file's frontmatter in place (it is not written as "
            "`key: value` lines, e.g. a `{...}` mapping), so nothing was written: rewrite "
            "the frontmatter as one `key: value` per line and retry"
        )


def check_written(fm_text: str, written: dict[str, Any]) -> None:
    """Refuse to write a frontmatter the reader would refuse (over MAX_FRONTMATTER_BYTES):
    the file would read back as malformed, its id, type and tags lost. Names the biggest
    of the ``written`` fields, the ones the caller can shorten."""
    size = len(fm_text.encode("utf-8", "surrogatepass"))
    if size <= MAX_FRONTMATTER_BYTES:
        return
    sizes = {
        key: len("\n".join(render_value(key, value)).encode("utf-8", "surrogatepass"))
        for key, value in written.items()
        if value is not DELETE
    }
    ranked = sorted(sizes, key=lambda key: -sizes[key])
    biggest = [key for key in ranked[:3] if sizes[key] >= 1024] or ranked[:1]
    named = ", ".join(f"{key} ({sizes[key]:,} bytes)" for key in biggest)
    raise InvalidInputError(
        f"the frontmatter would be {size:,} bytes, over the {MAX_FRONTMATTER_BYTES:,}-byte "
        f"limit memvault reads back, so nothing was written; the biggest fields: {named}: "
        "shorten them (long text belongs in a memory's content)"
    )


def _apply(lines: list[str], key: str, value: Any) -> list[str]:
    spans = _find_blocks(lines, key)
    if value is DELETE:
        # every occurrence goes: an earlier one left behind would become the value YAML reads
        for start, end in reversed(spans):
            lines = lines[:start] + lines[end:]
        return lines
    new = render_value(key, value)
    if not spans:
        return [*lines, *new]
    # A key written twice: YAML (and so memvault's reader) takes the last occurrence, so
    # that is the one replaced, and the write takes effect. The earlier lines never had an
    # effect; they stay as the person wrote them (doctor names the file for them to settle)
    # rather than being overwritten with a value they did not choose.
    start, end = spans[-1]
    if len(new) == 1 and end - start == 1:
        comment = _TRAILING_COMMENT.search(lines[start])
        value = lines[start][: comment.start()] if comment else ""
        if comment and "'" not in value and '"' not in value:  # no "#" inside quotes
            new = [new[0] + comment.group(0)]
    return lines[:start] + new + lines[end:]


def _find_blocks(lines: list[str], key: str) -> list[tuple[int, int]]:
    """Line spans [start, end) of each occurrence of a top-level key with its continuation
    lines, in file order (a hand-written file may repeat a key)."""
    spans = []
    for start, line in enumerate(lines):
        match = _KEY_LINE.match(line)
        if not match or match.group("key").strip("\"'") != key:
            continue
        end = start + 1
        while end < len(lines):
            nxt = lines[end]
            if _continues(nxt):
                end += 1
                continue
            if nxt.strip() == "" and _blank_run_continues(lines, end):
                end += 1
                continue
            break
        spans.append((start, end))
    return spans


def _continues(line: str) -> bool:
    return line[:1] in (" ", "\t") or line == "-" or line.startswith("- ")


def _blank_run_continues(lines: list[str], index: int) -> bool:
    while index < len(lines) and lines[index].strip() == "":
        index += 1
    return index < len(lines) and lines[index][:1] in (" ", "\t")


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # one object under two keys (created = updated) is written out twice


class _FlowList(list[Any]):
    """A list written inline (``[a, b]``)."""


def _represent_datetime(dumper: yaml.SafeDumper, value: dt.datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", value.isoformat())


def _represent_flow_list(dumper: yaml.SafeDumper, value: _FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """Text with white space at an end that YAML takes for text (U+00A0, U+3000) quoted:
    python-frontmatter strips what it dumps, so a last value ``会议　`` lost its space (and
    one of white space only became null)."""
    if value and any(c.isspace() and c not in " \t\r\n" for c in (value[0], value[-1])):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(dt.datetime, _represent_datetime)
_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_FlowList, _represent_flow_list)
_HANDLER = _MemoryHandler()


def _flow_if_scalars(value: Any) -> Any:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
        return _FlowList(value)
    return value


def render_value(key: str, value: Any) -> list[str]:
    """YAML lines for one key; lists of scalars stay inline (``[a, b]``)."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
        flow = _dump(value, flow=True)
        return [f"{_dump({key: None}, flow=False).split(':', 1)[0]}: {flow}"]
    return _dump({key: value}, flow=False).split("\n")


_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _dump(value: Any, flow: bool, allow_unicode: bool = True) -> str:
    text = yaml.dump(
        value,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=allow_unicode,
        default_flow_style=flow,
        width=10**9,
    )
    if allow_unicode and any(ch in text for ch in _UNICODE_BREAKS):
        # libyaml reads NEL/LS/PS as line breaks even inside quotes: escape everything
        return _dump(value, flow, allow_unicode=False)
    return text.rstrip("\n").removesuffix("\n...").rstrip("\n")
