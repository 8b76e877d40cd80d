"""A person's note with a frontmatter key written twice: YAML reads the last occurrence, so
memvault's edits must land there (and a removal must take every occurrence), and doctor
names the file."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from memvault import frontmatter
from memvault.doctor import run_checks
from memvault.service import MemoryService

from .helpers import git

WHEN = "2026-01-01T09:00:00+00:00"  # the svc fixture's clock (helpers.DAY0)


def _person_writes(root: Path, rel: str, data: bytes) -> None:
    """``data`` at ``rel``, written and committed by hand as a person would."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git(root, "add", "--", rel)
    identity = ("-c", "user.name=Person", "-c", "user.email=p@example.org")
    git(root, *identity, "commit", "-qm", f"person: {rel}")


def test_forgetting_a_note_with_status_written_twice_really_archives_it(
    svc: MemoryService, vault_path: Path
) -> None:
    text = "---\ntitle: Wombat\nstatus: active\ntags: [a]\nstatus: active\n---\nBody text.\n"
    _person_writes(vault_path, "facts/wombat.md", text.encode())

    result = svc.forget("facts/wombat.md")

    memory = svc.get(result.memory.id)
    assert result.action == "archived" and memory.status == "archived"
    assert memory.id not in {info.id for info in svc.records()}  # no longer listed as active
    assert svc.read_text(memory.path) == (
        "---\ntitle: Wombat\nstatus: active\ntags: [a]\nstatus: archived\n"
        f"id: {memory.id}\narchived: {WHEN}\nupdated: {WHEN}\n---\nBody text.\n"
    )
    assert git(vault_path, "status", "--porcelain").strip() == ""


def test_updating_tags_written_twice_changes_the_tags_yaml_reads(
    svc: MemoryService, vault_path: Path
) -> None:
    text = "---\ntype: fact\ntags: [x]\ntags: [y]  # the real ones\n---\nWombats dig.\n"
    _person_writes(vault_path, "facts/wombat.md", text.encode())

    result = svc.update("facts/wombat.md", fields={"tags": ["z"]})

    memory = svc.get(result.memory.id)
    assert result.action == "updated" and memory.tags == ("z",)
    assert svc.read_text(memory.path) == (
        "---\ntype: fact\ntags: [x]\ntags: [z]  # the real ones\n"
        f"id: {memory.id}\nupdated: {WHEN}\n---\nWombats dig.\n"
    )


def test_a_new_title_replaces_the_title_line_yaml_reads(
    svc: MemoryService, vault_path: Path
) -> None:
    text = "---\ntitle: Old wombat\ntype: fact\ntitle: Wombat\n---\nWombats dig.\n"
    _person_writes(vault_path, "facts/wombat.md", text.encode())

    result = svc.update("facts/wombat.md", title="Big wombat")

    memory = svc.get(result.memory.id)
    assert memory.title == "Big wombat"
    assert svc.read_text(memory.path) == (
        "---\ntitle: Old wombat\ntype: fact\ntitle: Big wombat\n"
        f"id: {memory.id}\nupdated: {WHEN}\n---\nWombats dig.\n"
    )


def test_removing_a_key_written_twice_removes_every_occurrence(
    svc: MemoryService, vault_path: Path
) -> None:
    text = (
        "---\n# my wombat note\ntags:\n  - x\n  - w\ntype: fact  # kind\ntags: [y]\n---\n"
        "Wombats dig.\n"
    )
    _person_writes(vault_path, "facts/wombat.md", text.encode())

    result = svc.update("facts/wombat.md", fields={"tags": ""})

    memory = svc.get(result.memory.id)
    assert "tags" not in memory.meta and memory.tags == ()
    assert svc.read_text(memory.path) == (
        f"---\n# my wombat note\ntype: fact  # kind\nid: {memory.id}\nupdated: {WHEN}\n---\n"
        "Wombats dig.\n"
    )


def test_bom_crlf_and_comments_survive_archiving_a_note_with_status_twice(
    svc: MemoryService, vault_path: Path
) -> None:
    text = (
        "\ufeff---\r\n# mine\r\nstatus: active  # first try\r\ntype: fact\r\n"
        "status: active  # for real\r\n---\r\nWombats sleep.\r\n"
    )
    _person_writes(vault_path, "facts/wombat.md", text.encode())

    result = svc.forget("facts/wombat.md")

    memory = svc.get(result.memory.id)
    assert memory.status == "archived"
    assert (vault_path / memory.path).read_bytes().decode() == (
        "\ufeff---\r\n# mine\r\nstatus: active  # first try\r\ntype: fact\r\n"
        f"status: archived  # for real\r\nid: {memory.id}\r\narchived: {WHEN}\r\n"
        f"updated: {WHEN}\r\n---\r\nWombats sleep.\r\n"
    )


def test_doctor_names_a_note_with_a_key_written_twice_and_only_that_note(
    svc: MemoryService, vault_path: Path
) -> None:
    twice = '---\ntype: fact\ntags: [x]\n"tags": [y]\nstatus: active\nstatus: active\n---\nW.\n'
    _person_writes(vault_path, "facts/wombat.md", twice.encode())
    _person_writes(vault_path, "facts/koala.md", b"---\ntype: fact\ntags: [x]\n---\nK.\n")

    problems = run_checks(svc.vault, svc.history, "none")

    found = [p for p in problems if p.kind == "duplicate_key"]
    assert [p.path for p in found] == ["facts/wombat.md"]
    assert "`tags:` and `status:`" in found[0].message
    assert "last" in found[0].message


keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
values = st.one_of(st.integers(-1000, 1000), st.booleans(), st.text(max_size=40), st.none())
values = st.one_of(values, st.lists(values, max_size=4))


@given(st.dictionaries(keys, values, max_size=5), keys, values, values, values)
def test_setting_or_removing_a_repeated_key_is_what_yaml_reads_after(
    meta: dict[str, object], key: str, first: object, last: object, value: object
) -> None:
    written = frontmatter.new_file({**meta, key: first}, "body\n").split("\n---\n", 1)[0]
    text = written + "\n" + "\n".join(frontmatter.render_value(key, last)) + "\n---\nbody\n"
    doc = frontmatter.parse(text)
    assert frontmatter.duplicate_keys(text) == [key]

    out = frontmatter.parse(frontmatter.render(doc, {key: value}))
    expected = yaml.safe_load(yaml.safe_dump({key: value}))[key]
    assert out.meta == {**doc.meta, key: expected} and out.body == doc.body

    removed = frontmatter.render(doc, {key: frontmatter.DELETE})
    assert frontmatter.parse(removed).meta == {k: v for k, v in doc.meta.items() if k != key}
    assert frontmatter.duplicate_keys(removed) == []
