from __future__ import annotations

import datetime as dt
import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from memvault import frontmatter
from memvault.errors import InvalidInputError, MalformedMemoryError

HAND_MADE = """---
# my own notes about this memory
zeta: keep me   # odd order on purpose
type: preference  # what kind
tags:
  - formatting
  - reports
custom:
  nested: [1, 2]

importance: 0.7
---
# Report style

Tables, not bullets. See [[report-style]].
"""


def test_an_unchanged_document_renders_byte_for_byte() -> None:
    doc = frontmatter.parse(HAND_MADE)
    assert frontmatter.render(doc) == HAND_MADE


def test_changing_one_key_keeps_comments_unknown_keys_order_and_body() -> None:
    doc = frontmatter.parse(HAND_MADE)
    out = frontmatter.render(doc, {"importance": 0.9, "type": "fact"})
    assert "# my own notes about this memory" in out
    assert "zeta: keep me   # odd order on purpose" in out
    assert "type: fact  # what kind" in out  # the inline comment survives the new value
    assert "custom:\n  nested: [1, 2]\n" in out
    assert out.index("zeta") < out.index("type") < out.index("tags") < out.index("importance")
    assert out.endswith("# Report style\n\nTables, not bullets. See [[report-style]].\n")
    assert frontmatter.parse(out).meta["importance"] == 0.9


def test_a_block_list_is_replaced_whole_and_new_keys_are_appended() -> None:
    doc = frontmatter.parse(HAND_MADE)
    out = frontmatter.render(doc, {"tags": ["a", "b"], "status": "archived"})
    meta = frontmatter.parse(out).meta
    assert meta["tags"] == ["a", "b"]
    assert "  - formatting" not in out
    assert list(meta)[-1] == "status"


def test_deleting_a_key_removes_its_whole_block() -> None:
    out = frontmatter.render(frontmatter.parse(HAND_MADE), {"custom": frontmatter.DELETE})
    assert "nested" not in out and "custom" not in frontmatter.parse(out).meta


def test_crlf_and_bom_survive_a_rewrite() -> None:
    text = "\ufeff---\r\ntype: fact\r\n---\r\nbody line\r\n"
    out = frontmatter.render(frontmatter.parse(text), {"importance": 0.5})
    assert out.startswith("\ufeff---\r\n") and "\r\nimportance: 0.5\r\n" in out
    assert out.endswith("body line\r\n")


def test_a_file_without_frontmatter_gets_one_only_when_changed() -> None:
    doc = frontmatter.parse("# Just a note\n")
    assert frontmatter.render(doc) == "# Just a note\n"
    out = frontmatter.render(doc, {"id": "p-123456789abc"})
    assert out == "---\nid: p-123456789abc\n---\n# Just a note\n"


@pytest.mark.parametrize(
    "text",
    ["---\nkey: [unclosed\n---\nbody", "---\n- just\n- a list\n---\nbody", "---\na: b: c\n---\n"],
)
def test_malformed_frontmatter_raises_a_clear_error(text: str) -> None:
    with pytest.raises(MalformedMemoryError, match="fix"):
        frontmatter.parse(text)


def test_datetimes_render_as_plain_iso_timestamps() -> None:
    moment = dt.datetime(2026, 11, 30, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    out = frontmatter.new_file({"created": moment, "tags": ["x y", "数据库"]}, "body\n")
    assert "created: 2026-11-30T10:30:00+08:00\n" in out
    assert "tags: [x y, 数据库]\n" in out
    assert frontmatter.parse(out).meta["created"] == moment


keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
scalars = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.text(max_size=40),
    st.none(),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4))


@given(st.dictionaries(keys, values, max_size=6), keys, values, st.text(max_size=200))
def test_any_change_round_trips_and_leaves_other_keys_alone(
    meta: dict[str, object], key: str, value: object, body: str
) -> None:
    body = body.replace("\r", "").replace("\x00", "")
    text = frontmatter.new_file(meta, body)
    doc = frontmatter.parse(text)
    assert doc.meta == yaml.safe_load(yaml.safe_dump(meta))
    out = frontmatter.parse(frontmatter.render(doc, {key: value}))
    expected = {**doc.meta, key: yaml.safe_load(yaml.safe_dump({key: value}))[key]}
    assert out.meta == expected
    assert out.body == doc.body


LOADERS = [pytest.param(getattr(yaml, "CSafeLoader", yaml.SafeLoader), id="libyaml")]
LOADERS.append(pytest.param(yaml.SafeLoader, id="pure-python"))


def _bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "---\n" + "\n".join([*lines, "tags: *i"]) + "\n---\nbody\n"


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("yaml_text", "phrase"),
    [
        ("type: &t fact", "anchors or aliases"),
        ("a: &a [x]\ntags: *a", "anchors or aliases"),
        ("base: &b {type: fact}\nmeta:\n  <<: *b", "anchors or aliases"),
        ("tags: " + "[" * 21 + "]" * 21, "nested more than 20"),
        ("note: " + "y" * 70_000, "65,536-byte limit"),
        ("created: 2024-13-45", "a value YAML cannot read"),
        ("importance: !!float high", "a value YAML cannot read"),
    ],
)
def test_anchors_aliases_oversize_deep_nesting_and_bad_values_are_malformed(
    monkeypatch: pytest.MonkeyPatch, loader: type, yaml_text: str, phrase: str
) -> None:
    monkeypatch.setattr(frontmatter, "_Loader", loader)
    with pytest.raises(MalformedMemoryError, match=phrase):
        frontmatter.parse(f"---\n{yaml_text}\n---\nbody\n")


@pytest.mark.parametrize("loader", LOADERS)
def test_an_alias_bomb_is_refused_before_any_alias_is_expanded(
    monkeypatch: pytest.MonkeyPatch, loader: type
) -> None:
    monkeypatch.setattr(frontmatter, "_Loader", loader)
    with pytest.raises(MalformedMemoryError, match="anchors or aliases"):
        frontmatter.parse(_bomb())


@pytest.mark.parametrize("loader", LOADERS)
def test_ampersands_stars_and_nesting_up_to_the_limit_still_parse(
    monkeypatch: pytest.MonkeyPatch, loader: type
) -> None:
    monkeypatch.setattr(frontmatter, "_Loader", loader)
    text = "title: R&D *notes* & more\nx: " + "[" * 19 + "1" + "]" * 19
    doc = frontmatter.parse(f"---\n{text}\n---\nbody\n")
    assert doc.meta["title"] == "R&D *notes* & more"


moments = st.datetimes(
    min_value=dt.datetime(1970, 1, 2),
    max_value=dt.datetime(2200, 1, 1),
    timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=8))]),
).map(lambda d: d.replace(microsecond=0))
leaves = st.one_of(
    scalars, moments, st.dates(), st.text(alphabet="数据库 cafébar:#-'\"[]{},&*", max_size=12)
)
nested = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(keys, inner, min_size=1, max_size=3)
    ),
    max_leaves=8,
)
BREAKS = ("\x85", "\u2028", "\u2029")


@given(st.dictionaries(keys, nested, min_size=1, max_size=6), st.text(max_size=80))
def test_a_new_file_is_what_the_minimal_diff_writer_writes_from_an_empty_frontmatter(
    meta: dict[str, object], body: str
) -> None:
    """python-frontmatter writes new files, the minimal-diff writer edits: one format."""
    body = body.replace("\r", "").replace("\x00", "")
    text = frontmatter.new_file(meta, body)
    by_writer = frontmatter.render(frontmatter.Document({}, "", "", False, False), meta, body)
    if any(ch in json.dumps(meta, default=str, ensure_ascii=False) for ch in BREAKS):
        assert frontmatter.parse(text).meta == frontmatter.parse(by_writer).meta
    else:
        assert text == by_writer
    assert frontmatter.parse(text).body == body


@pytest.mark.parametrize("body", ["", "\n", "\n\n# Title\n\n  indented\n\n\n", "  \t\n"])
def test_a_new_file_keeps_its_body_byte_for_byte(body: str) -> None:
    text = frontmatter.new_file({"id": "f-1", "tags": []}, body)
    assert text == "---\nid: f-1\ntags: []\n---\n" + body
    assert frontmatter.parse(text).body == body


def test_a_value_with_a_unicode_line_separator_is_escaped_and_reads_back() -> None:
    meta = {"title": "数据库\u2028second line", "note": "x\x85y"}
    text = frontmatter.new_file(meta, "body\n")
    assert "\u2028" not in text and "\x85" not in text
    assert frontmatter.parse(text).meta == meta


def test_one_object_under_two_keys_is_written_twice_never_as_an_anchor() -> None:
    now = dt.datetime(2026, 11, 30, 10, 30, tzinfo=dt.UTC)
    tags = ["a", "b"]
    links = {"see": ["x"]}
    meta = {"created": now, "updated": now, "tags": tags, "scope": tags, "l1": links, "l2": links}
    text = frontmatter.new_file(meta, "body\n")
    assert "&" not in text and "*" not in text
    assert frontmatter.parse(text).meta == meta


def test_a_frontmatter_the_reader_would_refuse_is_never_written_and_the_big_field_is_named() -> (
    None
):
    doc = frontmatter.parse(frontmatter.new_file({"id": "01ABCDEFGHJKMNPQ"}, "# Cat\n"))
    with pytest.raises(InvalidInputError, match=r"biggest fields: archived_reason \(70,017 bytes"):
        frontmatter.render(doc, {"status": "archived", "archived_reason": "x" * 70_000})
    scope = [f"user:{i:03d}" + "z" * 90 for i in range(1000)]
    with pytest.raises(InvalidInputError, match=r"65,536-byte limit.*fields: scope \("):
        frontmatter.new_file({"id": "01ABCDEFGHJKMNPQ", "scope": scope}, "")
    near = "y" * (frontmatter.MAX_FRONTMATTER_BYTES - 100)  # still fits: written, reads back
    assert frontmatter.parse(frontmatter.render(doc, {"note": near})).meta["note"] == near


@pytest.mark.parametrize("value", ["\xa0", "会议记录\u3000", "\u3000缩进", "x\u2003"])
def test_text_ending_in_white_space_yaml_reads_as_text_is_written_whole(value: str) -> None:
    """python-frontmatter strips what it dumps: a last value ending in a no-break or an
    ideographic space lost it, and one of such a space only was read back as null."""
    text = frontmatter.new_file({"type": "note", "title": value}, "Body.\n")
    assert frontmatter.parse(text).meta["title"] == value
    edited = frontmatter.render(
        frontmatter.parse("---\ntype: note\n---\nBody.\n"), {"title": value}
    )
    assert frontmatter.parse(edited).meta["title"] == value
