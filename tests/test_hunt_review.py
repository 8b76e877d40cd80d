"""A hostile look at review, the profile and context: a person's notes in a field file,
a proposal whose memory the person moved or deleted, an acceptance git could not record on
the branch, a topic no one could read. Real vaults, real git, the real command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import profile
from memvault.cli import cli
from memvault.config import Settings
from memvault.context import build_context
from memvault.errors import InvalidInputError
from memvault.service import MemoryService

from .helpers import commit_count, git

PERSON = "Ada Person"


@pytest.fixture
def vault(vault_path: Path) -> Iterator[MemoryService]:
    """A text-only vault in proposal mode whose repository names a person."""
    git(vault_path, "config", "user.name", PERSON)
    git(vault_path, "config", "user.email", "ada@example.org")
    service = MemoryService.open(vault_path, Settings(embedder="none", agent_writes="propose"))
    yield service
    service.close()


def commit_by_hand(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", message)


# -- the profile ------------------------------------------------------------------------
def test_setting_a_field_keeps_the_notes_a_person_wrote_below_its_value(
    vault: MemoryService,
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    path = vault.root / "profile" / "location.md"
    note = "Moving to Porto in May; ask before booking anything."
    path.write_text(path.read_text(encoding="utf-8") + f"\n{note}\n", encoding="utf-8")
    commit_by_hand(vault.root, "a note by hand")

    result = profile.set_field(vault, "location", "Madrid")

    assert result.action == "updated"
    text = path.read_text(encoding="utf-8")
    assert text.endswith(f"---\n# Location\n\nMadrid\n\n{note}\n")
    assert "Lisbon" not in text  # the old value's line is the value, not a note
    assert profile.get_field(vault, "location").value == "Madrid"  # type: ignore[union-attr]
    assert git(vault.root, "status", "--porcelain") == ""
    assert commit_count(vault.root) == 4  # init, the first set, the note, this set


def test_a_list_fields_notes_survive_and_its_items_are_replaced(vault: MemoryService) -> None:
    profile.set_field(vault, "health.allergies", ["penicillin", "peanuts"])
    path = vault.root / "profile" / "health.allergies.md"
    text = path.read_text(encoding="utf-8") + "\nThe peanut one is severe: EpiPen in the bag.\n"
    path.write_text(text, encoding="utf-8")
    commit_by_hand(vault.root, "a note by hand")

    profile.set_field(vault, "health.allergies", ["penicillin", "peanuts", "latex"])

    body = path.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert body == (
        "# Allergies\n\n- penicillin\n- peanuts\n- latex\n\n"
        "The peanut one is severe: EpiPen in the bag.\n"
    )


# -- context ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("topic", "said"),
    [
        ("tra\x00vel", "a NUL byte"),
        ("tra\x1bvel", "control character"),
        ("tra\udcffvel", "a lone surrogate"),
    ],
)
def test_a_context_topic_with_a_character_no_one_could_read_is_refused_not_echoed(
    vault: MemoryService, topic: str, said: str
) -> None:
    profile.set_field(vault, "location", "Lisbon")
    with pytest.raises(InvalidInputError, match=f"topic contains {said}"):
        build_context(vault, topic)
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "context", topic])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: topic contains ")
