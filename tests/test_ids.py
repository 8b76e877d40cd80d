from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import ids
from memvault.errors import UnsafePathError


@pytest.mark.parametrize(
    "bad",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../b.md",
        "..",
        "C:/Windows/x.md",
        "~/x.md",
        "a\\..\\..\\b.md",
        "x\x00.md",
        "",
    ],
)
def test_paths_that_could_escape_the_vault_are_refused(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        ids.clean_relpath(bad)


def test_clean_paths_are_normalised() -> None:
    assert ids.clean_relpath("./facts//tea.md") == "facts/tea.md"


def test_a_symlink_pointing_outside_the_vault_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    os.symlink(outside, root / "link.md")
    with pytest.raises(UnsafePathError, match="outside the vault"):
        ids.resolve_inside(root, "link.md")


def test_new_ids_are_valid_unique_and_time_ordered() -> None:
    first = ids.new_id(now_ms=1_000, rand=b"\x00\x00\x00\x01")
    later = ids.new_id(now_ms=2_000, rand=b"\x00\x00\x00\x00")
    assert ids.is_id(first) and ids.is_id(later)
    assert first < later
    assert len({ids.new_id() for _ in range(2000)}) == 2000


@given(st.text(max_size=200))
def test_slugs_are_safe_file_names(text: str) -> None:
    slug = ids.slugify(text)
    assert slug and "/" not in slug and ".." not in slug and len(slug) <= 60
    assert ids.clean_relpath(f"{slug}.md") == f"{slug}.md"


def test_slugs_keep_chinese_characters() -> None:
    assert ids.slugify("数据库字段命名规范用 snake_case") == "数据库字段命名规范用-snake-case"


def test_derived_ids_are_stable_per_path() -> None:
    assert ids.derived_id("facts/a.md") == ids.derived_id("facts/a.md")
    assert ids.derived_id("facts/a.md") != ids.derived_id("facts/b.md")
    assert ids.is_id(ids.derived_id("facts/a.md"))


@pytest.mark.parametrize(
    ("raw", "phrase"),
    [
        ("x" * 5000, "at most 255 bytes"),
        ("f" * 300 + "/a.md", "at most 255 bytes"),
        ("n" * 253, "at most 255 bytes"),  # no room left for the .md
        ("记" * 90 + ".md", "at most 255 bytes"),
        ("/".join(["d" * 200] * 6), "1024-byte limit"),
        ("a\ud800b.md", "not valid Unicode"),
        ("a:*?<>|b", "drive letter"),
    ],
    ids=[
        "id-5000",
        "folder-300",
        "name-253",
        "chinese-273-bytes",
        "path-1205",
        "surrogate",
        "drive",
    ],
)
def test_overlong_names_and_paths_and_lone_surrogates_are_refused_up_front(
    raw: str, phrase: str
) -> None:
    with pytest.raises(UnsafePathError, match=phrase):
        ids.clean_relpath(raw)


def test_names_up_to_the_file_system_limit_are_accepted() -> None:
    assert ids.clean_relpath("n" * 252) == "n" * 252
    assert ids.clean_relpath("f" * 255 + "/" + "n" * 252 + ".md").endswith(".md")
