"""Input checks are pure: what they accept and refuse, as properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import validate
from memvault.config import load_settings
from memvault.errors import InvalidInputError, UnsafePathError

PLAIN = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\x85")
    | st.sampled_from("\t\n\r")
)
BAD = st.sampled_from(["\x00", "\x07", "\x1b", "\x7f", "\x9b", "\ud800", "\udfff"])


@given(PLAIN)
def test_text_without_control_characters_or_surrogates_is_accepted(value: str) -> None:
    assert validate.text("content", value) == value


@given(PLAIN, BAD, PLAIN)
def test_one_control_character_or_lone_surrogate_anywhere_is_refused(
    head: str, bad: str, tail: str
) -> None:
    with pytest.raises(InvalidInputError, match="content contains"):
        validate.text("content", head + bad + tail)


@pytest.mark.parametrize("value", ["a:b", "a*", "what?", "x<y", "x>y", 'say "hi"', "a|b"])
def test_characters_windows_and_obsidian_cannot_store_are_named_in_the_refusal(
    value: str,
) -> None:
    with pytest.raises(UnsafePathError, match="are not allowed in names"):
        validate.relpath("folder", value)


@pytest.mark.parametrize("value", ["facts", "notes/2026/q1", "记忆/偏好", "a b/c-d_e.f"])
def test_ordinary_folders_pass(value: str) -> None:
    assert validate.relpath("folder", value) == value


def test_an_empty_expected_revision_is_refused_and_none_means_no_check() -> None:
    assert validate.revision(None) is None
    with pytest.raises(InvalidInputError, match="expected_revision is empty"):
        validate.revision("")


def test_allow_secrets_is_off_by_default_and_can_be_turned_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings(None).allow_secrets is False
    monkeypatch.setenv("MEMVAULT_ALLOW_SECRETS", "true")
    assert load_settings(None).allow_secrets is True


def test_dates_are_parsed_and_their_order_checked() -> None:
    import datetime as dt

    parsed = validate.dates({"expires": "2026-12-31T18:00:00Z", "valid_from": "2026-01-01"})
    assert parsed == {
        "expires": dt.datetime(2026, 12, 31, 18, tzinfo=dt.UTC),
        "valid_from": dt.date(2026, 1, 1),
    }
    assert validate.dates({"expires": None}) == {}
    with pytest.raises(InvalidInputError, match="expires must be an ISO date"):
        validate.dates({"expires": "tomorrow"})
    with pytest.raises(InvalidInputError, match="is after valid_until"):
        validate.dates({"valid_from": "2026-02-02T00:00:00+08:00", "valid_until": "2026-02-01"})
