"""Hunted bugs in the memory lifecycle and the write verdicts: corrections of a currency or
a sign taken for duplicates (and never written), and consolidation steps that superseded a
memory twice, kept an expired memory over its lasting duplicate, or went ahead although a
memory had been archived meanwhile. Real vaults, real git, real embeddings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitRequestParams, ElicitResult

from memvault import facts, lifecycle, policy, profile
from memvault.errors import MalformedMemoryError
from memvault.models import ChangeEvent, Proposal
from memvault.service import MemoryService

from .helpers import Clock, commit_count, git, in_process


def add(service: MemoryService, text: str, **kwargs: Any) -> str:
    result = service.remember(text, check_similar=False, **kwargs)
    assert result.memory is not None, result.reason
    return result.memory.id


# -- facts: a currency and a sign are part of an amount ------------------------------------
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The rent for the flat is $1200 a month.", "The rent for the flat is €1200 a month."),
        ("公寓的房租是每月100元", "公寓的房租是每月100美元"),
        ("The freezer is set to -5 degrees.", "The freezer is set to 5 degrees."),
        ("冰箱冷冻室的温度设为-5度", "冰箱冷冻室的温度设为5度"),
        ("The backend service is written in C++.", "The backend service is written in C#."),
        ("The user's blood type is O+", "The user's blood type is O-"),
        ("用户是O+型血", "用户是O-型血"),  # \w and \b read Chinese as letters
        ("用户对花生过敏", "用户对花生无过敏"),
        ("The user works at Google.", "The user worked at Google."),
        (
            "The team sync with the design group is every week.",
            "The team sync with the design group is every other week.",
        ),
    ],
)
def test_a_changed_currency_or_sign_is_written_as_a_correction_not_dropped_as_a_duplicate(
    service: MemoryService, old: str, new: str
) -> None:
    first = add(service, old)
    commits = commit_count(service.root)
    result = service.remember(new)
    assert result.action == "created" and result.memory is not None
    assert [(s.id, s.relation) for s in result.similar] == [(first, "possible_contradiction")]
    assert commit_count(service.root) == commits + 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The rent is $1200 a month", "The rent is 1200 dollars a month"),
        ("The rent is $1200 a month", "The rent is 1200 USD a month"),
        ("The budget is HK$500", "The budget is 500港币"),
        ("房租是每月100元", "房租是每月¥100"),
        ("房租是每月100元", "房租是每月一百块钱"),
        ("The freezer is at -5 degrees", "The freezer is at minus 5 degrees"),
        ("用户非常喜欢无线耳机", "用户非常喜欢无线耳机。"),
        ("The user gets a 20% discount", "The user gets a twenty percent discount"),
        ("用户有20%的折扣", "用户有百分之二十的折扣"),
        ("冰箱温度是-5度", "冰箱温度是零下五度"),
    ],
)
def test_the_same_amount_written_another_way_is_still_a_duplicate(old: str, new: str) -> None:
    difference = facts.compare(new, old)
    assert difference.conflicts == () and difference.extras == ()
    assert policy.relation(new, old, 0.99, same_type=True) == "duplicate"


# -- consolidation: one step per memory, and only over what is still there --------------------
def test_consolidate_supersedes_each_duplicate_once_by_the_memory_it_keeps(
    service: MemoryService,
) -> None:
    ids = [
        add(service, text, type="preference", importance=importance)
        for text, importance in [
            ("The user's favourite editor is Neovim.", 0.5),
            ("The user's favourite editor is Neovim!", 0.6),
            ("The user's favourite editor is neovim.", 0.7),
        ]
    ]
    plan = [p for p in lifecycle.consolidate(service) if p.kind == "merge"]
    assert sorted(p.ids[1] for p in plan) == sorted(ids[:2])  # each dropped once
    commits = commit_count(service.root)
    done = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind == "merge"]
    assert all(p.applied for p in done) and len(done) == 2
    assert commit_count(service.root) == commits + 2
    for dropped in ids[:2]:
        memory = service.get(dropped)
        assert memory.status == "superseded" and memory.meta["superseded_by"] == ids[2]
    log = git(service.root, "log", "-2", "--format=%s").split("\n")
    assert all(subject.startswith("merge: ") for subject in log if subject)


def test_consolidate_never_keeps_an_expired_memory_over_its_lasting_duplicate(
    service: MemoryService, clock: Clock
) -> None:
    service.clock = clock
    lapsing = add(
        service,
        "The office wifi is called Orchard-5G.",
        importance=0.8,
        dates={"expires": "2026-01-10"},
    )
    lasting = add(service, "The office wifi is called Orchard-5G!", importance=0.5)
    clock.days(30)
    plan = lifecycle.consolidate(service)
    assert [(p.kind, p.ids) for p in plan] == [("archive", (lapsing,))]
    lifecycle.consolidate(service, dry_run=False)
    assert service.get(lapsing).path.startswith("archive/")
    kept = service.get(lasting)
    assert kept.status == "active" and "superseded_by" not in kept.meta
    assert [h.id for h in service.recall("office wifi name", k=3)] == [lasting]


def test_a_step_whose_memory_was_archived_meanwhile_is_not_applied(
    service: MemoryService,
) -> None:
    keep = add(service, "The user's favourite editor is Neovim.", importance=0.9)
    drop = add(service, "The user's favourite editor is Neovim!", importance=0.5)
    other = add(service, "The team's standup is at 10:30 on Zoom.", importance=0.9)
    other_drop = add(service, "The team's standup is at 10:30 on Zoom!", importance=0.5)

    def archive_by_hand(event: ChangeEvent) -> None:
        """After the first step, a person archives the keeper of the other pair."""
        service.listeners.remove(archive_by_hand)
        first_drop = service.get(event.changed[0]).id
        target = keep if first_drop == other_drop else other
        path = service.root / service.get(target).path
        path.write_text(path.read_text().replace("type: note\n", "type: note\nstatus: archived\n"))

    service.listeners.append(archive_by_hand)
    steps = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind == "merge"]
    assert [p.applied for p in steps] == [True, False]
    assert "archived now; consolidate again" in steps[1].reason
    late = steps[1].ids[1]
    assert late in (drop, other_drop) and service.get(late).status == "active"


# -- supersedes: what it names is resolved to ids, each once, before anything is written ----
def test_supersedes_naming_one_memory_twice_or_by_path_supersedes_it_once_by_id(
    svc: MemoryService,
) -> None:
    old = svc.remember("The standup is at 10:30 on Zoom.").memory
    assert old is not None
    commits = commit_count(svc.root)
    result = svc.remember("The standup is at 11:00 on Zoom.", supersedes=[old.id, old.path])
    assert result.action == "created" and result.memory is not None
    assert result.memory.meta["supersedes"] == [old.id]
    assert svc.get(old.id).meta["superseded_by"] == result.memory.id
    assert commit_count(svc.root) == commits + 1
    assert git(svc.root, "status", "--porcelain") == ""


def _consolidate_two_expired(
    svc: MemoryService, clock: Clock, meanwhile: Callable[[str], object]
) -> list[Proposal]:
    """Consolidate two expired memories (two archive steps); after the first step is
    applied, ``meanwhile`` gets the id of the other one (what a person does then)."""
    ids = [
        add(svc, text, dates={"expires": "2026-01-10"})
        for text in ("Bring the blue folder to the Monday review.", "The parking pass is 4471.")
    ]
    clock.days(30)

    def after_the_first(event: ChangeEvent) -> None:
        svc.listeners.remove(after_the_first)
        archived = svc.get(event.added[0]).id
        meanwhile(next(i for i in ids if i != archived))

    svc.listeners.append(after_the_first)
    return lifecycle.consolidate(svc, dry_run=False)


def test_an_archive_step_is_not_applied_once_a_person_moved_its_expiry_on(
    svc: MemoryService, clock: Clock
) -> None:
    def extend(other: str) -> None:  # a person gives the other memory another month
        path = svc.root / svc.get(other).path
        path.write_text(path.read_text().replace("expires: 2026-01-10", "expires: 2026-03-01"))

    steps = _consolidate_two_expired(svc, clock, extend)
    assert [(p.kind, p.applied) for p in steps] == [("archive", True), ("archive", False)]
    assert "no longer to archive" in steps[1].reason
    kept = svc.get(steps[1].ids[0])
    assert kept.status == "active" and not kept.path.startswith("archive/")


def test_an_archive_step_whose_memory_a_person_archived_meanwhile_is_not_applied(
    svc: MemoryService, clock: Clock
) -> None:
    """It was reported applied, with no commit: the archive had been the person's."""
    steps = _consolidate_two_expired(
        svc, clock, lambda other: svc.forget(other, "archive", "done with it")
    )
    assert [(p.kind, p.applied) for p in steps] == [("archive", True), ("archive", False)]
    assert "is archived now" in steps[1].reason and steps[1].commit is None


# -- expiry: a date written without dashes is still a date, lasting through that day --------
def test_an_expiry_date_written_compactly_lasts_through_that_day(
    svc: MemoryService, clock: Clock
) -> None:
    memory_id = add(svc, "The hotel booking code is QX7-2291.", dates={"expires": "20260110"})
    assert svc.get(memory_id).meta["expires"] == dt.date(2026, 1, 10)
    clock.now = dt.datetime(2026, 1, 10, 20, 0, tzinfo=dt.UTC)  # that evening: still valid
    assert [p for p in lifecycle.consolidate(svc) if p.kind == "archive"] == []
    assert [h.id for h in svc.recall("hotel booking code", k=3)] == [memory_id]
    clock.now = dt.datetime(2026, 1, 11, 0, 1, tzinfo=dt.UTC)
    assert [p.ids for p in lifecycle.consolidate(svc) if p.kind == "archive"] == [(memory_id,)]


def test_consolidate_never_merges_away_a_profile_field_that_says_what_another_says(
    service: MemoryService,
) -> None:
    profile.set_field(service, "name", "Ada Lovelace", source="agent")
    profile.set_field(service, "preferred_name", "Ada Lovelace", source="agent")
    commits = commit_count(service.root)
    steps = lifecycle.consolidate(service, dry_run=False)
    assert [p for p in steps if p.kind != "archive"] == []
    assert commit_count(service.root) == commits
    values = {e.field: e.value for e in profile.read(service).fields}
    assert values == {"name": "Ada Lovelace", "preferred_name": "Ada Lovelace"}


# -- forgetting a session: what the person confirmed, not what joined while they were asked --
def test_a_session_memory_added_while_the_person_is_asked_is_not_archived_with_the_others(
    svc: MemoryService,
) -> None:
    shown = [
        add(svc, text, scope=["session:trip-42"])
        for text in ("Draft itinerary: Lisbon first.", "Hotel shortlist: Alfama, Baixa.")
    ]
    joined: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        """While the person reads the question, the agent stores one more session note."""
        joined.append(add(svc, "Train to Porto on day three.", scope=["session:trip-42"]))
        return ElicitResult(action="accept", content={"confirm": True})

    async def body(client: Client) -> Any:
        result = await client.call_tool("forget", {"scope": "session:trip-42"})
        return result.structured_content

    out = in_process(svc, body, elicitation_callback=elicit)
    assert sorted(out["archived"]) == sorted(shown)
    assert all(svc.get(i).status == "archived" for i in shown)
    assert svc.get(joined[0]).status == "active"
    assert "2 memories of session:trip-42" in git(svc.root, "log", "-1", "--format=%s")


def test_remember_refused_for_a_malformed_memory_it_supersedes_leaves_no_file(
    svc: MemoryService,
) -> None:
    broken = svc.root / "facts" / "standup.md"
    broken.write_text("---\ntags: [work\ntitle: x: y\n---\nThe standup is at 10:30.\n")
    git(svc.root, "add", "-A")
    git(svc.root, "commit", "-qm", "a person's note with broken YAML")
    commits = commit_count(svc.root)
    with pytest.raises(MalformedMemoryError, match="fix the file by hand"):
        svc.remember("The standup is at 11:00.", supersedes=["facts/standup.md"])
    assert git(svc.root, "status", "--porcelain") == ""
    assert commit_count(svc.root) == commits
    assert svc.recover() is None  # nothing left for a recovery commit to bring back


def test_consolidate_never_merges_memories_of_different_scopes(service: MemoryService) -> None:
    text = "Draft itinerary: Lisbon first, then Porto by train."
    mine = add(service, text, scope=["session:trip-a"], importance=0.4)
    theirs = add(service, text, scope=["session:trip-b"], importance=0.6)
    same = add(service, text, scope=["session:trip-b"], importance=0.3)
    steps = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind != "archive"]
    assert [(p.kind, p.ids, p.applied) for p in steps] == [("merge", (theirs, same), True)]
    assert service.get(mine).status == "active"
    lifecycle.forget_scope(service, "session:trip-b")
    assert service.get(mine).status == "active"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The user prefers green tea in the morning",
            "The user's preferred drink in the morning is green tea",
        ),
        ("Deploys are based on the staging branch", "Deploys base on the staging branch"),
        ("The cat's name is Tom", "The cat is named Tom"),
    ],
)
def test_a_word_in_ed_that_is_no_verb_in_the_past_is_no_change_of_tense(old: str, new: str) -> None:
    """The tense rule read "the preferred drink" and "is based on" as verbs in the past,
    calling paraphrases contradictions (and only in one order: "is named" after "name")."""
    assert facts.tenses(new, old) == [] and facts.tenses(old, new) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [("用户住在开普敦", "用户是南非人，住在开普敦"), ("用户吃什么都可以", "用户无所谓吃什么")],
)
def test_south_africa_and_either_is_fine_hold_no_negation(old: str, new: str) -> None:
    """南非 (South Africa) and 无所谓 (either is fine) were read as negations."""
    assert not any("negation" in c for c in facts.compare(old, new).conflicts)


def test_a_read_by_a_process_whose_clock_runs_behind_never_moves_the_last_access_back(
    tmp_path: Path,
) -> None:
    """Two processes share .memvault/access.sqlite; the one whose clock is behind set
    last_accessed back, so a memory read today could look idle to soft forgetting."""
    from memvault.access import AccessStats

    today = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)
    ahead = AccessStats(tmp_path / "access.sqlite", lambda: today)
    behind = AccessStats(tmp_path / "access.sqlite", lambda: today - dt.timedelta(days=3))
    ahead.hit(["m1"])
    behind.hit(["m1"])
    seen = ahead.of(["m1"])["m1"]
    assert seen.hits == 2 and seen.last_accessed == today.isoformat()
