"""The user's profile: a schema in the vault, one memory file per field, every write checked
against the schema (a refused one leaves no file and no commit), each field with its own
history, revert and purge, over the library, MCP and the command line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from memvault import context, frontmatter, profile
from memvault.cli import cli
from memvault.config import Settings
from memvault.doctor import run_checks
from memvault.errors import InvalidInputError, SchemaError, SecretRefusedError
from memvault.models import Filters
from memvault.service import MemoryService

from .helpers import call_tool, commit_count, git
from .helpers import in_process as run

CUSTOM_SCHEMA = """\
fields:
  height_cm:
    type: number
    description: height in centimetres
  newsletter:
    type: bool
    description: wants the newsletter
  units:
    type: enum
    values: [metric, imperial]
    description: measurement units
"""


def tree(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


def refused(service: MemoryService, field: str, value: Any) -> str:
    """The message of a refused set, after checking it wrote nothing at all."""
    path = service.root / "profile" / f"{field}.md"
    was = path.read_bytes() if path.exists() else None
    before, files = commit_count(service.root), tree(service.root)
    with pytest.raises(InvalidInputError) as caught:
        profile.set_field(service, field, value)
    assert commit_count(service.root) == before
    assert tree(service.root) == files
    assert (path.read_bytes() if path.exists() else None) == was
    return str(caught.value)


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


# -- the schema -------------------------------------------------------------------------------
def test_the_template_ships_a_schema_that_is_committed_and_not_a_memory(
    text_only: MemoryService,
) -> None:
    root = text_only.root
    assert "_schemas/profile.yaml" in git(root, "ls-files").splitlines()
    schema = profile.load_schema(text_only)
    assert schema.source == profile.SCHEMA_PATH
    kinds = {s.name: s.type for s in schema.fields}
    assert kinds["health.allergies"] == "list" and kinds["units"] == "enum"
    assert schema.spec("units").values == ("metric", "imperial")
    assert all(s.description and "\n" not in s.description for s in schema.fields)
    (root / "_schemas" / "notes.md").write_text("# About the schema\n\nNot a memory.\n")
    assert not any(p.startswith("_schemas/") for p in text_only.memory_paths())
    assert text_only.is_memory_path("profile/health.allergies.md")


def test_a_vault_without_a_schema_uses_the_shipped_default(text_only: MemoryService) -> None:
    (text_only.root / profile.SCHEMA_PATH).unlink()
    schema = profile.load_schema(text_only)
    assert "default" in schema.source and schema.spec("health.allergies").type == "list"
    profile.set_field(text_only, "units", "imperial")
    assert profile.get_field(text_only, "units") is not None


def test_the_vaults_own_schema_decides_the_fields_and_their_types(
    text_only: MemoryService,
) -> None:
    (text_only.root / profile.SCHEMA_PATH).write_text(CUSTOM_SCHEMA, encoding="utf-8")
    message = refused(text_only, "health.allergies", "penicillin")
    assert "height_cm, newsletter, units" in message
    profile.set_field(text_only, "height_cm", "172.0")  # text from a command line
    profile.set_field(text_only, "newsletter", "no")
    values = {e.field: e.value for e in profile.read(text_only).fields}
    assert values == {"height_cm": 172, "newsletter": False}
    assert "height_cm takes a number, got 'tall'" in refused(text_only, "height_cm", "tall")
    assert "newsletter takes true or false" in refused(text_only, "newsletter", "maybe")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("fields:\n  a: &x {type: string}\n  b: *x\n", "anchors or aliases"),
        ("fields: [unclosed\n", "not valid YAML at line"),
        ("fields: !!python/object:os.system {}\n", "uses the YAML tag !!python/object:os.system"),
        ("fields:\n  units: {type: enum, description: units}\n", "enum without `values`"),
        ("fields:\n  units: {type: colour, description: units}\n", "the types are string"),
        ("fields:\n  Units!: {type: string, description: units}\n", "not a field name"),
        ("name: Ada\n", "no `fields:` mapping"),
    ],
)
def test_a_schema_memvault_cannot_use_is_an_error_that_names_it_and_nothing_is_written(
    text_only: MemoryService, text: str, problem: str
) -> None:
    (text_only.root / profile.SCHEMA_PATH).write_text(text, encoding="utf-8")
    before, files = commit_count(text_only.root), tree(text_only.root)
    with pytest.raises(SchemaError) as caught:
        profile.set_field(text_only, "units", "metric")
    assert profile.SCHEMA_PATH in str(caught.value) and problem in str(caught.value)
    assert commit_count(text_only.root) == before and tree(text_only.root) == files
    shown = profile.read(text_only)  # reading falls back to the default and says why
    assert shown.problems and problem in shown.problems[0]
    assert any(b.startswith("units ") for b in shown.unset)


# -- validation -------------------------------------------------------------------------------
def test_an_unknown_field_is_refused_with_the_known_fields(text_only: MemoryService) -> None:
    message = refused(text_only, "allergies", ["penicillin"])
    assert "unknown profile field 'allergies'" in message
    assert "did you mean 'health.allergies'?" in message
    for known in ("name", "language", "timezone", "response_style", "work.company"):
        assert known in message
    assert profile.SCHEMA_PATH in message


def test_a_value_outside_an_enum_is_refused_with_the_allowed_values(
    text_only: MemoryService,
) -> None:
    assert "units must be one of metric, imperial, got 'metres'" in refused(
        text_only, "units", "metres"
    )
    message = refused(text_only, "diet", ["vegetarian", "paleo"])
    assert "vegan" in message and "got 'paleo'" in message
    message = refused(text_only, "response_style", "chatty")
    assert "concise, balanced, detailed" in message


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("name", ["Ada", "Lovelace"], "name takes one value, not a list"),
        ("name", 42, "name takes text, got 42"),
        ("birthday", "next spring", "birthday takes a date like 2019-04-23"),
        ("birthday", "2019-02-30", "birthday takes a date like 2019-04-23"),
        ("health.allergies", True, "health.allergies takes a list of text"),
        ("health.allergies", {"drug": "penicillin"}, "health.allergies takes a list of text"),
        ("response_style", True, "response_style takes one of concise, balanced, detailed"),
        ("name", "   ", "name cannot be empty"),
        ("name", "Ada\nLovelace", "must be one line"),
        ("work.role", "x" * 1001, "over 1000"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_with_what_the_field_takes(
    text_only: MemoryService, field: str, value: Any, says: str
) -> None:
    assert says in refused(text_only, field, value)


def test_a_profile_value_that_looks_like_a_credential_is_refused(
    text_only: MemoryService,
) -> None:
    before = commit_count(text_only.root)
    with pytest.raises(SecretRefusedError):
        profile.set_field(text_only, "work.company", "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2)
    assert commit_count(text_only.root) == before
    assert not (text_only.root / "profile" / "work.company.md").exists()


def test_values_from_a_command_line_are_converted_to_the_fields_type() -> None:
    spec = profile.FieldSpec("diet", "list", "", ("vegetarian", "gluten_free"))
    assert profile.check_value(spec, "Vegetarian, gluten_free,") == ["vegetarian", "gluten_free"]
    allergies = profile.FieldSpec("health.allergies", "list", "")
    assert profile.check_value(allergies, ["penicillin", "penicillin", " nuts "]) == [
        "penicillin",
        "nuts",
    ]
    assert profile.check_value(profile.FieldSpec("n", "number", ""), "3.5") == 3.5
    assert profile.check_value(profile.FieldSpec("n", "number", ""), 3.0) == 3
    assert profile.check_value(profile.FieldSpec("b", "bool", ""), "Yes") is True
    assert profile.check_value(profile.FieldSpec("d", "date", ""), ["2019-04-23"]) == "2019-04-23"
    units = profile.FieldSpec("units", "enum", "", ("metric", "imperial"))
    assert profile.check_value(units, "METRIC") == "metric"


def test_list_text_is_split_at_chinese_separators_and_semicolons_but_not_inside_brackets() -> None:
    children = profile.FieldSpec("family.children", "list", "")
    example = "Lily (born 2019, allergic to penicillin)"  # the shipped schema's own example
    assert profile.check_value(children, example) == [example]
    assert profile.check_value(children, f"{example}, Tom [born 2021; twin]") == [
        example,
        "Tom [born 2021; twin]",
    ]
    assert profile.check_value(children, "莉莉（2019年出生，对青霉素过敏）、汤姆") == [
        "莉莉（2019年出生，对青霉素过敏）",
        "汤姆",
    ]
    interests = profile.FieldSpec("interests", "list", "")
    assert profile.check_value(interests, "摄影、徒步，读书；围棋") == [
        "摄影",
        "徒步",
        "读书",
        "围棋",
    ]
    assert profile.check_value(interests, "chess; go") == ["chess", "go"]
    assert profile.check_value(interests, ["a, b"]) == ["a, b"]  # a list's items stay whole


# -- one file per field -----------------------------------------------------------------------
def test_a_set_field_is_one_memory_file_and_one_commit(text_only: MemoryService) -> None:
    before = commit_count(text_only.root)
    result = profile.set_field(text_only, "health.allergies", "penicillin", reason="the user said")
    assert result.action == "created" and result.commit
    assert result.memory.path == "profile/health.allergies.md"
    assert commit_count(text_only.root) == before + 1
    assert subjects(text_only.root)[0] == "profile: health.allergies"
    message = git(text_only.root, "log", "-1", "--format=%B")
    assert "Memvault-Op: profile" in message and "Memvault-Reason: the user said" in message
    assert tree(text_only.root) == ""
    text = (text_only.root / "profile" / "health.allergies.md").read_text(encoding="utf-8")
    doc = frontmatter.parse(text)
    assert doc.meta["field"] == "health.allergies" and doc.meta["value"] == ["penicillin"]
    assert doc.meta["type"] == "fact" and doc.meta["tags"] == ["profile"]
    assert doc.meta["importance"] == 0.9 and doc.meta["id"] == result.memory.id
    assert doc.body == "# Allergies\n\n- penicillin\n"
    entry = profile.get_field(text_only, "health.allergies")
    assert entry is not None and entry.value == ["penicillin"] and entry.id == result.memory.id
    assert profile.get_field(text_only, "timezone") is None
    # Full text only, one memory, one of the question's three terms in it ("allergic" and
    # "Allergies" stem apart): below the calibrated relevance cut, so the floor is off here
    # (the floor itself: tests/test_relevance.py).
    hits = text_only.recall(
        "is the user allergic to penicillin", k=3, filters=Filters(min_relevance=0)
    )
    assert hits and hits[0].id == result.memory.id


def test_setting_a_field_again_updates_the_same_file_and_history_shows_both_values(
    text_only: MemoryService,
) -> None:
    first = profile.set_field(text_only, "health.allergies", ["penicillin"])
    path = text_only.root / "profile" / "health.allergies.md"
    path.write_text(  # a person's own key and comment survive memvault's edit
        path.read_text(encoding="utf-8").replace("source: user", "source: user  # from the GP"),
        encoding="utf-8",
    )
    text_only.commit_external(["profile/health.allergies.md"])
    before = commit_count(text_only.root)
    second = profile.set_field(text_only, "health.allergies", "penicillin, peanuts")
    assert second.action == "updated" and second.memory.id == first.memory.id
    assert second.previous_revision is not None
    assert commit_count(text_only.root) == before + 1
    assert sorted(p.name for p in (text_only.root / "profile").glob("*.md")) == [
        "health.allergies.md"
    ]
    text = path.read_text(encoding="utf-8")
    assert "value: [penicillin, peanuts]" in text and "# from the GP" in text
    assert "- peanuts" in text
    commits = text_only.log("profile/health.allergies.md")
    assert [c.subject for c in commits if c.subject.startswith("profile:")] == [
        "profile: health.allergies",
        "profile: health.allergies",
    ]
    old = text_only.show_at(first.memory.id, first.commit or "")
    assert "value: [penicillin]" in old


def test_a_list_set_that_drops_items_says_it_replaced_the_list_and_names_them(
    text_only: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # whatever level an earlier test left behind

    def said() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.levelno >= logging.INFO]

    profile.set_field(text_only, "health.allergies", "penicillin, Latex")
    added = profile.set_field(text_only, "health.allergies", "penicillin、latex、peanuts")
    assert added.action == "updated" and not said()
    dropped = profile.set_field(text_only, "health.allergies", "peanuts")
    assert dropped.action == "replaced" and dropped.commit
    (record,) = said()
    assert record.levelname == "WARNING" and "dropped penicillin, latex" in record.getMessage()
    entry = profile.get_field(text_only, "health.allergies")
    assert entry is not None and entry.value == ["peanuts"]


def test_setting_the_same_value_again_makes_no_commit(text_only: MemoryService) -> None:
    profile.set_field(text_only, "units", "metric")
    before = commit_count(text_only.root)
    again = profile.set_field(text_only, "units", "Metric")
    assert again.action == "unchanged" and again.commit is None
    assert commit_count(text_only.root) == before and tree(text_only.root) == ""


def test_a_field_is_reverted_like_any_memory(text_only: MemoryService) -> None:
    first = profile.set_field(text_only, "response_style", "concise")
    profile.set_field(text_only, "response_style", "detailed")
    reverted = text_only.revert("profile/response_style.md", first.commit or "")
    assert reverted.action == "reverted" and reverted.memory.id == first.memory.id
    entry = profile.get_field(text_only, "response_style")
    assert entry is not None and entry.value == "concise"
    assert subjects(text_only.root)[0].startswith("revert: profile/response_style.md")


def test_a_purged_field_is_gone_from_the_files_the_history_and_the_profile(
    text_only: MemoryService,
) -> None:
    made = profile.set_field(text_only, "health.conditions", "asthma-zx81")
    profile.set_field(text_only, "health.conditions", "asthma-zx81, hay fever")
    profile.set_field(text_only, "name", "Ada")
    assert "asthma-zx81" in git(text_only.root, "log", "-p", "--all")
    result = text_only.forget(made.memory.id, mode="purge", reason="privacy request")
    assert result.action == "purged"
    history = git(text_only.root, "log", "-p", "--all")
    assert "asthma-zx81" not in history and "value: Ada" in history
    assert not (text_only.root / "profile" / "health.conditions.md").exists()
    assert profile.get_field(text_only, "health.conditions") is None
    assert [e.field for e in profile.read(text_only).fields] == ["name"]


def test_an_archived_field_is_unset_and_can_be_set_again(text_only: MemoryService) -> None:
    made = profile.set_field(text_only, "work.company", "Acme")
    text_only.forget(made.memory.id)
    assert profile.get_field(text_only, "work.company") is None
    again = profile.set_field(text_only, "work.company", "Initech")
    assert again.action == "created" and again.memory.id != made.memory.id


def edit_by_hand(service: MemoryService, field: str, old: str, new: str) -> None:
    """A person's edit of a field file, committed as memvault commits edits it finds."""
    path = service.root / "profile" / f"{field}.md"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    service.commit_external([f"profile/{field}.md"])


def test_a_value_written_by_hand_that_the_schema_refuses_is_unset_and_named_as_a_problem(
    text_only: MemoryService,
) -> None:
    profile.set_field(text_only, "units", "metric")
    profile.set_field(text_only, "diet", "vegetarian")
    profile.set_field(text_only, "name", "Ada")
    edit_by_hand(text_only, "units", "value: metric", "value: metres")
    edit_by_hand(text_only, "diet", "value: [vegetarian]", "value: [vegetarian, carnivore]")
    found = profile.read(text_only)
    assert [(e.field, e.value) for e in found.fields] == [("name", "Ada")]
    assert "units (metric|imperial)" in found.unset
    assert any(u.startswith("diet ") for u in found.unset)
    units, diet = found.problems
    assert "profile/units.md" in units and "'metres'" in units and "metric, imperial" in units
    assert "profile/diet.md" in diet and "'carnivore'" in diet
    text = context.build_context(text_only, "what should I cook", 1500).text
    assert "metres" not in text and "carnivore" not in text and "Ada" in text
    again = profile.set_field(text_only, "units", "metric")  # setting it again repairs it
    assert again.action == "updated"
    entry = profile.get_field(text_only, "units")
    assert entry is not None and entry.value == "metric"
    assert len(profile.read(text_only).problems) == 1


def test_a_value_written_by_hand_in_another_form_the_schema_takes_is_served_as_it_takes_it(
    text_only: MemoryService,
) -> None:
    profile.set_field(text_only, "units", "metric")
    profile.set_field(text_only, "health.allergies", "penicillin")
    edit_by_hand(text_only, "units", "value: metric", "value: Imperial")
    edit_by_hand(text_only, "health.allergies", "value: [penicillin]", "value: penicillin, peanuts")
    found = profile.read(text_only)
    assert [(e.field, e.value) for e in found.fields] == [
        ("units", "imperial"),
        ("health.allergies", ["penicillin", "peanuts"]),
    ]
    assert found.problems == ()


def test_a_field_file_that_cannot_be_read_is_named_as_a_problem_not_silently_unset(
    text_only: MemoryService,
) -> None:
    profile.set_field(text_only, "birthday", "1990-05-17")
    edit_by_hand(text_only, "birthday", "value: '1990-05-17'", "value: 1990-13-45")  # YAML fails
    found = profile.read(text_only)
    assert any(u.startswith("birthday ") for u in found.unset)
    (problem,) = found.problems
    assert problem.startswith("birthday is unset: profile/birthday.md")
    assert "month must be in 1..12" in problem and "fix it by hand" in problem


def test_a_field_archived_by_hand_in_its_file_is_unset_and_active_again_once_set(
    text_only: MemoryService,
) -> None:
    profile.set_field(text_only, "response_style", "concise")
    edit_by_hand(text_only, "response_style", "source: user", "source: user\nstatus: archived")
    found = profile.read(text_only)
    assert found.fields == () and found.problems == ()
    assert "response_style (concise|balanced|detailed)" in found.unset
    assert "concise" not in context.build_context(text_only, "how to answer", 1500).text
    again = profile.set_field(text_only, "response_style", "concise")
    assert again.action == "updated" and again.commit
    assert again.memory.status == "active" and again.memory.path == "profile/response_style.md"
    entry = profile.get_field(text_only, "response_style")
    assert entry is not None and entry.value == "concise"


def test_doctor_names_profile_values_the_schema_refuses_and_each_unreadable_file_once(
    text_only: MemoryService,
) -> None:
    profile.set_field(text_only, "units", "metric")
    profile.set_field(text_only, "birthday", "1990-05-17")
    edit_by_hand(text_only, "units", "value: metric", "value: metres")
    edit_by_hand(text_only, "birthday", "value: '1990-05-17'", "value: 1990-13-45")
    found = run_checks(text_only.vault, text_only.history, "none")
    assert sorted((p.path, p.kind) for p in found if p.path.startswith("profile/")) == [
        ("profile/birthday.md", "malformed"),
        ("profile/units.md", "profile"),
    ]
    (units,) = [p for p in found if p.kind == "profile"]
    assert "'metres'" in units.message and "metric, imperial" in units.message


# -- the resource, MCP and the command line ---------------------------------------------------
def test_the_profile_resource_shows_the_fields_first_then_other_stable_facts(
    text_only: MemoryService,
) -> None:
    text_only.remember("The user lives in Lisbon.", type="fact", importance=0.8)
    profile.set_field(text_only, "health.allergies", "penicillin, peanuts")
    profile.set_field(text_only, "units", "metric")
    from memvault import reports

    text = reports.aggregate(text_only, reports.PROFILE)
    assert "- health.allergies: penicillin, peanuts\n" in text
    assert "- units: metric\n" in text
    assert text.index("health.allergies:") < text.index("Lisbon")
    assert "Not set (set_profile): name, " in text
    assert text.count("penicillin") == 1  # the field file is not repeated as a fact


def test_set_profile_and_get_profile_over_mcp(text_only: MemoryService) -> None:
    async def body(client: Client) -> dict[str, Any]:
        made = await call_tool(
            client,
            "set_profile",
            {"field": "health.allergies", "value": ["penicillin"], "reason": "said so"},
        )
        assert made["action"] == "created" and made["path"] == "profile/health.allergies.md"
        await call_tool(client, "set_profile", {"field": "units", "value": "imperial"})
        before = commit_count(text_only.root)
        bad = await client.call_tool("set_profile", {"field": "units", "value": "cubits"})
        assert bad.is_error and "metric, imperial" in bad.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("set_profile", {"field": "allergy", "value": "x"})
        assert bad.is_error and "health.allergies" in bad.content[0].text  # type: ignore[union-attr]
        assert commit_count(text_only.root) == before
        history = await call_tool(client, "memory_history", {"id": made["id"]})
        assert [c["op"] for c in history["commits"]] == ["profile"]
        got = await call_tool(client, "get_profile", {})
        resource = await client.read_resource("memory://profile")
        got["resource"] = resource.contents[0].text  # type: ignore[union-attr]
        return got

    got = run(text_only, body)
    values = {f["field"]: f["value"] for f in got["fields"]}
    assert values == {"units": "imperial", "health.allergies": ["penicillin"]}
    assert "timezone (string)" in got["unset"] and got["problems"] == []
    assert "- units: imperial" in got["resource"]


def invoke(vault: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_profile_command_sets_shows_and_lists_fields(vault_path: Path) -> None:
    code, out, _ = invoke(vault_path, "profile", "health.allergies", "penicillin", "peanuts")
    assert code == 0 and out.strip() == "created profile/health.allergies.md"
    code, out, _ = invoke(vault_path, "profile", "diet", "vegetarian, gluten_free")
    assert code == 0
    code, out, _ = invoke(vault_path, "profile", "name", "Ada Lovelace", "--reason", "intro")
    assert code == 0 and "Memvault-Reason: intro" in git(vault_path, "log", "-1", "--format=%B")
    code, out, _ = invoke(vault_path, "profile", "health.allergies")
    assert code == 0 and out == "penicillin, peanuts\n"
    code, out, err = invoke(vault_path, "profile", "timezone")
    assert code == 0 and out == "" and "timezone is not set" in err
    code, out, err = invoke(vault_path, "profile")
    assert out.splitlines() == [
        "name: Ada Lovelace",
        "diet: vegetarian, gluten_free",
        "health.allergies: penicillin, peanuts",
    ]
    assert "not set: preferred_name (string)" in err
    code, out, _ = invoke(vault_path, "--json", "profile", "diet")
    assert json.loads(out)["value"] == ["vegetarian", "gluten_free"]
    before = commit_count(vault_path)
    code, out, err = invoke(vault_path, "profile", "units", "metres")
    assert code == 1 and err.strip() == (
        "error: units must be one of metric, imperial, got 'metres'"
    )
    assert commit_count(vault_path) == before and tree(vault_path) == ""


def test_the_profile_survives_reopening_the_vault(vault_path: Path) -> None:
    with_default = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        profile.set_field(with_default, "language", "zh-CN")
    finally:
        with_default.close()
    reopened = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        entry = profile.get_field(reopened, "language")
        assert entry is not None and entry.value == "zh-CN"
    finally:
        reopened.close()
