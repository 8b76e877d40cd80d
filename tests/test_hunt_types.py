"""Hunted bugs of memory types typed by hand: ``type: Episode`` or ``type: PREFERENCE`` in a
person's frontmatter is that type everywhere (ranking decay and soft forgetting, the
preferences resource, status counts, near-duplicates, ``[types.Episode]`` settings), while
the person's file keeps their spelling. Real vaults, real git, real Whoosh and embeddings,
a real MCP client; time comes from an injected clock."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memvault import lifecycle, models, reports
from memvault.config import Settings, load_settings
from memvault.errors import InvalidInputError
from memvault.service import MemoryService

from .helpers import DAY0, Clock, commit_count, in_process


def by_hand(service: MemoryService, rel: str, memory_type: str, text: str) -> None:
    """A note a person wrote in Obsidian, committed as they would."""
    path = service.vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    when = DAY0.isoformat()
    path.write_text(
        f"---\ntype: {memory_type}\ncreated: {when}\nupdated: {when}\n---\n{text}\n", "utf-8"
    )
    service.sync_index([rel])


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("Episode", "episode"),
        ("EPISODE", "episode"),
        (" preference ", "preference"),
        ("ｆａｃｔ", "fact"),  # full-width, as a Japanese keyboard types it
        ("Recipe", "Recipe"),  # a person's own type: as they wrote it
        (None, "note"),
        ("", "note"),
    ],
)
def test_a_known_type_has_one_spelling_whatever_the_case_and_others_stay_as_written(
    written: str | None, canonical: str
) -> None:
    assert models.canonical_type(written) == canonical


def test_a_hand_typed_episode_decays_and_is_softly_forgotten_like_an_episode(
    svc: MemoryService, clock: Clock
) -> None:
    for rel, kind in [("a.md", "Episode"), ("b.md", "episode"), ("c.md", "fact")]:
        by_hand(svc, f"notes/{rel}", kind, "We took the night train to Vienna in March.")
    clock.days(100)
    why = {h.path: h.why for h in svc.recall("night train to Vienna")}
    assert why["notes/a.md"]["recency"] == why["notes/b.md"]["recency"]
    assert why["notes/a.md"]["recency"] == pytest.approx(0.1 * math.exp(-0.01 * 100), abs=1e-4)
    assert why["notes/c.md"]["recency"] < why["notes/a.md"]["recency"]


def test_a_types_table_in_another_case_applies_and_keeps_the_episodes_decay(
    vault_path: Path, clock: Clock
) -> None:
    """``[types.Episode]`` is the episodes' table; setting only soft forgetting there
    used to make episodes decay as fast as any other type (decay_per_day, not
    decay_per_day_episode)."""
    (vault_path / ".memvault.toml").write_text(
        'embedder = "none"\n[types.Episode]\nsoft_forget_days = 10\nhard_forget_days = 30\n'
    )
    service = MemoryService.open(vault_path)
    service.clock = clock
    try:
        by_hand(service, "notes/lunch.md", "EPISODE", "Lunch with Ana at the noodle bar.")
        by_hand(service, "notes/ana.md", "fact", "Ana works at the noodle bar.")
        clock.days(31)
        why = {h.path: h.why for h in service.recall("noodle bar Ana")}
        assert (
            why["notes/lunch.md"]["soft_forget"] == 0.3 and "soft_forget" not in why["notes/ana.md"]
        )
        assert why["notes/lunch.md"]["recency"] == pytest.approx(
            0.1 * math.exp(-0.01 * 31), abs=1e-4
        )
        assert service.settings.for_type("episode").hard_forget_days == 30
    finally:
        service.close()


def test_two_types_tables_of_one_type_are_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / ".memvault.toml").write_text(
        "[types.episode]\nsoft_forget_days = 10\n[types.Episode]\nsoft_forget_days = 20\n"
    )
    with pytest.raises(
        InvalidInputError, match=r"\[types.Episode\] and \[types.episode\].*merge them"
    ):
        load_settings(tmp_path)


def test_a_person_s_own_type_is_one_type_in_any_case(tmp_path: Path) -> None:
    (tmp_path / ".memvault.toml").write_text("[types.Recipe]\nsoft_forget_days = 5\n")
    settings = load_settings(tmp_path)
    assert settings.for_type("RECIPE").soft_forget_days == 5
    assert Settings().for_type("Recipe") == Settings()


def test_a_hand_typed_preference_is_in_the_preferences_and_counted_as_a_preference(
    svc: MemoryService,
) -> None:
    by_hand(svc, "notes/seat.md", "Preference", "# Seats\nThe user prefers aisle seats.")
    by_hand(svc, "notes/tea.md", "PREFERENCE", "# Tea\nThe user drinks green tea.")
    by_hand(svc, "notes/pie.md", "Recipe", "# Pie\nApple pie with cinnamon.")
    by_hand(svc, "notes/soup.md", "recipe", "# Soup\nLentil soup.")

    async def body(client: object) -> str:
        result = await client.read_resource("memory://preferences")  # type: ignore[attr-defined]
        return str(result.contents[0].text)

    text = in_process(svc, body)
    assert "aisle seats" in text and "green tea" in text
    counts = reports.status(svc).by_type
    assert counts["preference"] == 2 and counts["recipe"] == 2
    assert not {"Preference", "PREFERENCE", "Recipe"} & set(counts)


def test_a_hand_typed_preference_and_the_same_preference_remembered_are_merged(
    service: MemoryService,
) -> None:
    by_hand(service, "notes/editor.md", "Preference", "The user's favourite editor is Neovim.")
    again = service.remember(
        "The user's favourite editor is Neovim.", type="preference", check_similar=False
    )
    assert again.memory is not None
    merges = [p for p in lifecycle.consolidate(service) if p.kind == "merge"]
    assert [sorted(p.paths) for p in merges] == [sorted(["notes/editor.md", again.memory.path])]


def test_a_new_memory_close_to_a_hand_typed_one_of_its_type_is_reported_related(
    service: MemoryService,
) -> None:
    by_hand(service, "notes/coffee.md", "Preference", "The user drinks coffee black, no sugar.")
    result = service.remember("The user takes their coffee black without sugar.", type="preference")
    related = {s.path: s.relation for s in result.similar}
    assert related.get("notes/coffee.md") in ("related", "duplicate")


def test_an_update_by_memvault_keeps_the_person_s_spelling_of_the_type(
    svc: MemoryService,
) -> None:
    by_hand(svc, "notes/trip.md", "Episode", "# Vienna\nWe took the night train to Vienna.")
    before = (svc.vault.root / "notes/trip.md").read_bytes()
    commits = commit_count(svc.root)
    svc.update("notes/trip.md", fields={"tags": ["travel"]})
    svc.update("notes/trip.md", content="We took the night train to Vienna and back.")
    after = (svc.vault.root / "notes/trip.md").read_bytes()
    assert before.split(b"\n")[1] == after.split(b"\n")[1] == b"type: Episode"
    assert commit_count(svc.root) == commits + 2
    memory = svc.get("notes/trip.md")
    assert memory.type == "episode" and memory.meta["type"] == "Episode"
    svc.update("notes/trip.md", fields={"type": "Fact"})  # changed by this write: as asked
    assert b"\ntype: Fact\n" in (svc.vault.root / "notes/trip.md").read_bytes()
    assert svc.get("notes/trip.md").type == "fact"


@pytest.mark.parametrize(
    ("asked", "written", "folder"),
    [("Ｐｒｅｆｅｒｅｎｃｅ", "preference", "preferences/"), ("  ", "note", "inbox/")],
)
def test_a_new_memory_is_written_with_its_type_s_canonical_spelling(
    svc: MemoryService, asked: str, written: str, folder: str
) -> None:
    """A type asked in capitals or full-width letters goes to its type's folder under its
    own name; a blank one was written ``type: ''``."""
    result = svc.remember("The user's cat is called Miso and is nine.", type=asked)
    assert result.memory is not None and result.memory.path.startswith(folder)
    text = (svc.vault.root / result.memory.path).read_text("utf-8")
    assert f"\ntype: {written}\n" in text
