"""Pure policies: what counts as a secret, what is forgotten, when a memory lapses."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest

from memvault.models import Access, MemoryInfo, lapsed
from memvault.policy import (
    HardForget,
    forget_verdict,
    pair_proposal,
    plan_consolidation,
    secret_kind,
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("token ghp_" + "a1B2c3D4e5" * 4, "a GitHub token"),
        ("gho_" + "Z" * 36, "a GitHub token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "a GitHub token"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("ASIAIOSFODNN7EXAMPLE is temporary", "an AWS access key id"),
        ("-----BEGIN PRIVATE KEY-----\nMIIE", "a private key block"),
        ("-----BEGIN EC PRIVATE KEY-----", "a private key block"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "a private key block"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "a private key block"),
        ("sk-abc123def456ghi789jkl012", "an API key (sk-...)"),
        ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12", "an API key (sk-...)"),
        ("sk-ant-api03-Ab12Cd34Ef56Gh78Ij90Kl12", "an API key (sk-...)"),
        ("xoxb-123456789012-abcdefghij", "a Slack token"),
        ("xoxp-123456789012-abcdefghij", "a Slack token"),
        ("sk_live_" + "a1" * 12, "a Stripe secret key"),
        ("AIza" + "B" * 35, "a Google API key"),
    ],
)
def test_common_credentials_are_recognised(text: str, kind: str) -> None:
    assert secret_kind(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers scikit-learn and sk-learn style APIs.",
        "sk-this-is-a-long-kebab-case-phrase-without-digits",
        "AKIA alone is just a word",
        "-----BEGIN PUBLIC KEY-----",
        "ghp_short",
        "The GitHub token lives in 1Password under 'CI deploy'.",
        "risk-free investment of 2000000000000000000000",
        "xoxo hugs",
    ],
)
def test_prose_that_merely_resembles_a_credential_is_not_a_secret(text: str) -> None:
    assert secret_kind(text) is None


# -- forgetting and expiry -----------------------------------------------------------------
NOW = dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.UTC)


def info(
    days_ago: float, confidence: float = 0.5, importance: float = 0.5, **kw: Any
) -> MemoryInfo:
    when = (NOW - dt.timedelta(days=days_ago)).isoformat()
    base = {"id": "m1", "path": "facts/m.md", "title": "m", "type": "fact", "status": "active"}
    return MemoryInfo(
        **base,
        tags=(),
        scope=(),
        created=when,
        updated=when,
        importance=importance,
        confidence=confidence,
        **kw,
    )


@pytest.mark.parametrize(
    ("memory", "access", "archived"),
    [
        (info(180), None, True),  # unused 180 days, confidence 0.5 < 0.6
        (info(179), None, False),  # not yet
        (info(400, confidence=0.6), None, False),  # sure enough
        (info(400, importance=0.9), None, False),  # core: never
        (info(400), Access(1, (NOW - dt.timedelta(days=10)).isoformat()), False),  # used lately
        (info(400), Access(5, (NOW - dt.timedelta(days=200)).isoformat()), True),  # used long ago
    ],
)
def test_hard_forgetting_archives_only_long_unused_doubtful_memories(
    memory: MemoryInfo, access: Access | None, archived: bool
) -> None:
    assert (forget_verdict(memory, NOW, access) is not None) is archived


def test_hard_forgetting_follows_the_rule_given_for_the_type() -> None:
    memory = info(40, confidence=0.7)
    assert forget_verdict(memory, NOW) is None
    verdict = forget_verdict(memory, NOW, rule=HardForget(days=30, confidence=0.8))
    assert verdict is not None and "not accessed or changed for 40 days" in verdict


@pytest.mark.parametrize("memory_type", ["task", "fact", "episode", "note"])
def test_an_expired_memory_of_any_type_is_archived_but_never_a_core_one(memory_type: str) -> None:
    expired = replace(info(1, confidence=1.0), type=memory_type, expires="2026-06-30")
    assert "expired on 2026-06-30" in (forget_verdict(expired, NOW) or "")
    assert forget_verdict(replace(expired, importance=0.95), NOW) is None
    assert forget_verdict(replace(expired, expires="2026-07-01"), NOW) is None  # through today


def test_the_plan_proposes_archives_with_per_type_rules_and_access() -> None:
    episode = replace(info(40), id="e", type="episode")
    fact = replace(info(40), id="f")
    used = replace(info(400), id="u")
    plan = plan_consolidation(
        [episode, fact, used],
        [],
        {},
        NOW,
        access={"u": Access(3, NOW.isoformat())},
        rules={"episode": HardForget(days=30)},
    )
    assert [(p.kind, p.ids) for p in plan] == [("archive", ("e",))]


@pytest.mark.parametrize(
    ("expires", "now", "lapsed_"),
    [
        ("2026-07-01", NOW, False),  # a date lasts through that day
        ("2026-06-30", NOW, True),
        ("2026-07-01T11:59:59+00:00", NOW, True),
        ("2026-07-01T13:00:00+02:00", NOW, True),  # 11:00 UTC
        ("2026-07-01T12:30:00", NOW, False),  # naive: in the clock's zone
        ("next week", NOW, False),  # unreadable: never lapses
        (None, NOW, False),
    ],
)
def test_when_a_memory_lapses(expires: str | None, now: dt.datetime, lapsed_: bool) -> None:
    assert lapsed(expires, now) is lapsed_


# -- consolidation pairs ---------------------------------------------------------------------
STANDUP_1030 = "The daily standup is at 10:30 on Zoom."
STANDUP_1100 = "The daily standup is at 11:00 on Zoom."


def fact(memory_id: str, created: str | None, updated: str | None) -> MemoryInfo:
    return replace(
        info(0), id=memory_id, path=f"facts/{memory_id}.md", created=created, updated=updated
    )


def test_a_contradiction_supersedes_the_fact_stated_earlier_not_the_one_edited_earlier() -> None:
    retagged = fact("a", "2026-06-01T09:00:00+00:00", "2026-06-20T09:00:00+00:00")
    later = fact("b", "2026-06-10T09:00:00+00:00", "2026-06-10T09:00:00+00:00")
    proposal = pair_proposal(retagged, later, 0.99, STANDUP_1030, STANDUP_1100)
    assert proposal is not None and proposal.kind == "supersede"
    assert proposal.ids == ("b", "a")
    assert "facts/b.md seems to contradict the older facts/a.md" in proposal.reason


def test_notes_committed_together_are_ordered_by_their_created_key_or_else_left_alone() -> None:
    commit = "2026-11-05T10:00:00+00:00"  # a person's notes: updated is the commit's time
    plate1 = fact("p1", "2026-11-01", commit)
    plate2 = fact("p2", "2026-11-03", commit)
    for a, b in ((plate1, plate2), (plate2, plate1)):
        proposal = pair_proposal(
            a,
            b,
            0.99,
            STANDUP_1030 if a is plate1 else STANDUP_1100,
            STANDUP_1100 if a is plate1 else STANDUP_1030,
        )
        assert proposal is not None and proposal.ids == ("p2", "p1")
    undated = fact("u", None, "2026-11-04T10:00:00+00:00")  # no created: its updated
    proposal = pair_proposal(plate1, undated, 0.99, STANDUP_1030, STANDUP_1100)
    assert proposal is not None and proposal.ids == ("u", "p1")
    twin = fact("t", "2026-11-01", commit)  # stated together: which holds is a guess
    assert pair_proposal(plate1, twin, 0.99, STANDUP_1030, STANDUP_1100) is None


@pytest.mark.parametrize(
    "restated",
    [
        STANDUP_1030,
        "the daily standup is at 10:30 on zoom",
        "On Zoom, the daily standup is at 10:30.",
    ],
)
def test_a_memory_restating_what_a_correction_corrected_is_superseded_not_the_correction(
    restated: str,
) -> None:
    correction = fact("b", "2026-06-10T09:00:00+00:00", "2026-06-10T09:00:00+00:00")
    stale = fact("c", "2026-06-20T09:00:00+00:00", "2026-06-20T09:00:00+00:00")
    corrected = {"b": [("facts/a.md", STANDUP_1030)]}
    proposal = pair_proposal(stale, correction, 0.99, restated, STANDUP_1100, corrected)
    assert proposal is not None and proposal.kind == "supersede"
    assert proposal.ids == ("b", "c")  # keep the correction, supersede the restatement
    assert "facts/c.md restates facts/a.md, which facts/b.md corrected" in proposal.reason
    other = {"b": [("facts/a.md", "The daily standup is at 09:45 on Zoom.")]}
    plain = pair_proposal(stale, correction, 0.99, restated, STANDUP_1100, other)
    assert plain is not None and plain.ids == ("c", "b")  # a new fact: the newer one wins
