"""The memory lifecycle: access statistics, soft and hard forgetting, expiry, and a
session's working memory forgotten at once. Real vaults, real git, a real MCP client; time
comes from an injected clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from memvault import lifecycle
from memvault.cli import cli
from memvault.config import Settings, load_settings
from memvault.errors import InvalidInputError
from memvault.models import Filters
from memvault.note import strip_title
from memvault.service import MemoryService

from .helpers import DAY0, Clock, call_tool, commit_count, git
from .helpers import in_process as mcp


def hits_of(service: MemoryService, memory_id: str) -> tuple[int, str | None]:
    seen = service.access.of([memory_id])[memory_id]
    return seen.hits, seen.last_accessed


def add(service: MemoryService, text: str, **kwargs: Any) -> str:
    result = service.remember(text, check_similar=False, **kwargs)
    assert result.memory is not None, result.reason
    return result.memory.id


# -- access statistics ------------------------------------------------------------------------
def test_recall_and_get_memory_count_hits_for_the_client_and_internal_reads_do_not(
    service: MemoryService, clock: Clock
) -> None:
    svc = service  # with the embedder: remember's duplicate check reads memories too
    svc.clock = clock

    async def body(client: Client) -> dict[str, Any]:
        made = await call_tool(
            client, "remember", {"content": "The user's cat is called Miso.", "type": "fact"}
        )
        # memvault's own reads: a duplicate check, the aggregate resources, consolidation
        await call_tool(client, "remember", {"content": "The user's cat is called Miso."})
        for uri in ("memory://index", "memory://recent", "memory://profile"):
            await client.read_resource(uri)
        await call_tool(client, "consolidate", {})
        untouched = await call_tool(client, "list_memories", {})
        assert [(m["hits"], m["last_accessed"]) for m in untouched["memories"]] == [(0, None)]
        clock.days(3)
        found = await call_tool(client, "recall", {"query": "cat Miso"})
        assert [r["id"] for r in found["results"]] == [made["id"]]
        clock.days(5)
        first = await call_tool(client, "get_memory", {"id": made["id"]})
        second = await call_tool(client, "get_memory", {"id": made["id"]})
        listed = await call_tool(client, "list_memories", {})
        return {"first": first, "second": second, "listed": listed, "id": made["id"]}

    out = mcp(svc, body)
    # get_memory shows the statistics as they were before its own read
    assert (out["first"]["hits"], out["first"]["last_accessed"]) == (1, "2026-01-04T09:00:00+00:00")
    assert (out["second"]["hits"], out["second"]["last_accessed"]) == (
        2,
        "2026-01-06T09:00:00+00:00",
    )
    assert [m["hits"] for m in out["listed"]["memories"]] == [3]
    assert hits_of(svc, out["id"]) == (3, "2026-01-06T09:00:00+00:00")


def test_cli_show_and_search_count_hits_and_list_shows_them(vault_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(cli, ["--vault", str(vault_path), "--json", *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    made = run("add", "Standup is at 9:30 on weekdays.", "--type", "fact")
    assert run("list")[0]["hits"] == 0
    assert run("show", made["id"])["hits"] == 0
    assert run("search", "standup")[0]["id"] == made["id"]
    listed = run("list")
    assert listed[0]["hits"] == 2 and listed[0]["last_accessed"] is not None


def test_access_statistics_survive_reopening_and_a_full_reindex(
    vault_path: Path, svc: MemoryService, clock: Clock
) -> None:
    memory_id = add(svc, "The user's passport number is kept in the safe.", type="fact")
    svc.access.hit([memory_id])
    svc.access.hit([memory_id])
    svc.close()
    again = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        again.reset_index()  # `memvault reindex --full`
        again.sync_index()
        assert hits_of(again, memory_id) == (2, DAY0.isoformat())
        assert not (vault_path / ".memvault" / "index" / "access.sqlite").exists()
        assert "access" not in git(vault_path, "ls-files")
    finally:
        again.close()


def test_purge_erases_a_memorys_access_statistics(svc: MemoryService) -> None:
    memory_id = add(svc, "A memory the user wants erased completely.", type="fact")
    svc.access.hit([memory_id])
    result = svc.forget(memory_id, "purge")
    assert "access statistics" in result.erased
    assert hits_of(svc, memory_id) == (0, None)


# -- soft forgetting -------------------------------------------------------------------------
def test_a_rarely_used_idle_memory_ranks_lower_and_why_says_so(
    svc: MemoryService, clock: Clock
) -> None:
    idle = add(svc, "The office plant needs water on Mondays.", type="fact")
    core = add(svc, "The office plant is a ficus.", type="fact", importance=0.95)
    clock.days(89)
    before = {h.id: h for h in svc.recall("office plant")}
    assert "soft_forget" not in before[idle].why  # 89 days: not yet
    clock.days(120)
    after = {h.id: h for h in svc.recall("office plant")}
    assert after[idle].why["soft_forget"] == 0.3
    parts = sum(v for k, v in after[idle].why.items() if k in ("keyword", "vector", "recency"))
    parts += after[idle].why["importance"]
    assert after[idle].score == pytest.approx(parts * 0.3, abs=1e-3)
    assert "soft_forget" not in after[core].why  # importance >= 0.9: never
    svc.access.hit([idle])  # returned to a client today: no longer idle
    assert "soft_forget" not in {h.id: h for h in svc.recall("office plant")}[idle].why


def test_a_memory_returned_often_is_not_softly_forgotten(svc: MemoryService, clock: Clock) -> None:
    memory_id = add(svc, "The wifi password hint is the dog's name.", type="fact")
    for _ in range(3):  # more than soft_forget_hits (2)
        svc.access.hit([memory_id])
    clock.days(200)
    (hit,) = svc.recall("wifi password hint")
    assert "soft_forget" not in hit.why


# -- hard forgetting and expiry in consolidate ---------------------------------------------------
def test_consolidate_proposes_archiving_long_unused_doubtful_memories_only(
    svc: MemoryService, clock: Clock
) -> None:
    doubtful = add(svc, "The user might like jazz.", type="preference", confidence=0.5)
    sure = add(svc, "The user likes blues records.", type="preference", confidence=0.9)
    core = add(svc, "The user is maybe left-handed.", type="fact", confidence=0.3, importance=0.9)
    used = add(svc, "The user may prefer tea to coffee.", type="preference", confidence=0.5)
    clock.days(150)
    svc.access.hit([used])
    clock.days(181)
    proposed = {p.ids[0]: p for p in lifecycle.consolidate(svc) if p.kind == "archive"}
    assert set(proposed) == {doubtful}
    assert "not accessed or changed for 181 days" in proposed[doubtful].reason
    assert {sure, core, used}.isdisjoint(proposed)


def test_expired_memories_are_hidden_from_recall_list_and_resources_then_archived(
    svc: MemoryService, clock: Clock
) -> None:
    lapsing = add(
        svc, "The parking spot this week is B12.", type="fact", dates={"expires": "2026-01-07"}
    )
    core = add(
        svc,
        "The parking badge lives in the parking glovebox.",
        type="fact",
        importance=0.95,
        dates={"expires": "2026-01-05T12:00:00+00:00"},
    )
    clock.days(6)  # 2026-01-07 09:00: a date alone lasts through that day
    assert lapsing in {h.id for h in svc.recall("parking spot")}
    clock.days(7)
    assert {h.id for h in svc.recall("parking")} == set()
    assert svc.list_memories().total == 0
    assert "B12" not in lifecycle_view(svc, "memory://recent")
    everything = Filters(include_expired=True)
    assert {h.id for h in svc.recall("parking", filters=everything)} == {lapsing, core}
    assert svc.list_memories(everything).total == 2
    proposals = lifecycle.consolidate(svc, dry_run=False)
    assert [(p.kind, p.ids, p.applied) for p in proposals] == [("archive", (lapsing,), True)]
    archived = svc.get(lapsing)
    assert archived.path.startswith("archive/") and archived.status == "archived"


def test_an_expired_memory_does_not_make_a_new_one_a_duplicate(
    service: MemoryService, clock: Clock
) -> None:
    service.clock = clock
    text = "This week's standup is in room Juniper."
    first = service.remember(text, dates={"expires": "2026-01-02"})
    assert first.action == "created"
    assert service.remember(text).action == "duplicate"  # still current: not written twice
    clock.days(5)
    again = service.remember(text)
    assert again.action == "created" and again.memory is not None
    assert first.memory is not None and again.memory.id != first.memory.id


def lifecycle_view(service: MemoryService, uri: str) -> str:
    from memvault import reports

    return reports.aggregate(service, uri)


def test_forgetting_thresholds_can_differ_per_type(vault_path: Path, clock: Clock) -> None:
    (vault_path / ".memvault.toml").write_text(
        'embedder = "none"\n[types.episode]\nhard_forget_days = 30\nsoft_forget_days = 10\n'
    )
    service = MemoryService.open(vault_path)
    service.clock = clock
    try:
        episode = add(service, "Lunch with Ana at the noodle bar.", type="episode", confidence=0.5)
        fact = add(service, "Ana works at the noodle bar.", type="fact", confidence=0.5)
        clock.days(31)
        proposed = [p.ids[0] for p in lifecycle.consolidate(service) if p.kind == "archive"]
        assert proposed == [episode]
        why = {h.id: h.why for h in service.recall("noodle bar Ana")}
        assert why[episode]["soft_forget"] == 0.3 and "soft_forget" not in why[fact]
    finally:
        service.close()


def test_per_type_settings_refuse_what_cannot_be_set_per_type(tmp_path: Path) -> None:
    (tmp_path / ".memvault.toml").write_text("[types.task]\nembedder = 'none'\n")
    with pytest.raises(InvalidInputError, match=r"\[types.task\].*embedder.*per type only"):
        load_settings(tmp_path)
    (tmp_path / ".memvault.toml").write_text("[types.task]\nhard_forget_days = 'soon'\n")
    with pytest.raises(
        InvalidInputError, match=r"'hard_forget_days' must be a float.*\[types.task\]"
    ):
        load_settings(tmp_path)


# -- expiry and validity on writes ----------------------------------------------------------------
def test_remember_stores_expires_and_validity_and_update_memory_changes_them(
    svc: MemoryService,
) -> None:
    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        made = await call_tool(
            client,
            "remember",
            {
                "content": "The user is on call this week.",
                "type": "task",
                "expires": "2026-01-09T18:00:00+01:00",
                "valid_from": "2026-01-05",
                "valid_until": "2026-01-09",
            },
        )
        await call_tool(client, "update_memory", {"id": made["id"], "expires": "2026-02-01"})
        return made, await call_tool(client, "get_memory", {"id": made["id"]})

    made, shown = mcp(svc, body)
    text = (svc.root / made["path"]).read_text()
    assert "expires: 2026-02-01\n" in text and "valid_from: 2026-01-05\n" in text
    assert shown["meta"]["valid_until"] == "2026-01-09"
    assert svc.records(Filters(include_expired=True))[0].expires == "2026-02-01"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"expires": "next friday"}, "expires must be an ISO date like 2026-12-31"),
        ({"valid_from": "2026-13-01"}, "valid_from must be an ISO date"),
        (
            {"valid_from": "2026-03-01", "valid_until": "2026-02-01"},
            "valid_from (2026-03-01) is after valid_until (2026-02-01)",
        ),
    ],
)
def test_an_invalid_date_is_refused_leaving_no_file_and_no_commit(
    svc: MemoryService, args: dict[str, str], message: str
) -> None:
    commits = commit_count(svc.root)
    files = sorted(svc.root.rglob("*.md"))

    async def body(client: Client) -> Any:
        return await client.call_tool("remember", {"content": "Dentist on Friday at 3pm.", **args})

    result = mcp(svc, body)
    assert result.is_error and message in result.content[0].text
    assert commit_count(svc.root) == commits and sorted(svc.root.rglob("*.md")) == files


def test_unknown_tool_arguments_are_refused_not_dropped(svc: MemoryService) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("remember", {"content": "A fine memory.", "expiry": "x"})

    result = mcp(svc, body)
    assert result.is_error and "unknown argument 'expiry'" in result.content[0].text


def test_cli_add_and_update_set_expiry_and_list_hides_expired_unless_asked(
    vault_path: Path,
) -> None:
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(cli, ["--vault", str(vault_path), "--json", *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    made = run("add", "Pick up the parcel from the post office.", "--expires", "2020-01-01")
    assert made["expires"] == "2020-01-01"
    assert run("list") == [] and len(run("list", "--include-expired")) == 1
    assert run("search", "parcel") == []
    assert run("search", "parcel", "--include-expired")[0]["id"] == made["id"]
    run("update", made["id"], "--expires", "")
    assert [m["id"] for m in run("list")] == [made["id"]]
    run("update", made["id"], "--expires", "2020-01-02", "--valid-until", "2020-01-02")
    plan = run("consolidate")
    assert [p["kind"] for p in plan["proposals"]] == ["archive"] and not plan["applied"]
    done = run("consolidate", "--apply")
    assert done["proposals"][0]["applied"] is True
    assert run("list", "--include-expired") == []


def test_cli_update_refuses_a_bad_date_with_one_line(vault_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(cli, ["--vault", str(vault_path), "--json", "add", "Renew the lease."])
    memory_id = json.loads(made.stdout)["id"]
    commits = commit_count(vault_path)
    result = runner.invoke(cli, ["--vault", str(vault_path), "update", memory_id, "--expires", "x"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: expires must be an ISO date")
    assert commit_count(vault_path) == commits


# -- working memory ---------------------------------------------------------------------------
def test_forgetting_a_session_scope_archives_all_and_only_its_memories_in_one_commit(
    svc: MemoryService,
) -> None:
    session = [
        add(svc, f"Draft step {n}: compare the three hotel offers.", scope=["session:trip"])
        for n in (1, 2, 3)
    ]
    other = add(svc, "Draft step: book the dentist.", scope=["session:dentist"])
    lasting = add(svc, "The user prefers aisle seats.", type="preference", scope=["user:me"])
    commits = commit_count(svc.root)

    async def body(client: Client) -> dict[str, Any]:
        args = {"scope": "session:trip", "reason": "done"}
        asked = await call_tool(client, "forget", args)  # more than one memory: confirm first
        return await call_tool(client, "forget", args | {"confirm": asked["confirm"]})

    out = mcp(svc, body)
    assert sorted(out["archived"]) == sorted(session) and out["action"] == "archived"
    assert commit_count(svc.root) == commits + 1
    assert "Memvault-Scope: session:trip" in git(svc.root, "log", "-1", "--format=%B")
    for memory_id in session:
        memory = svc.get(memory_id)
        assert memory.status == "archived" and memory.path.startswith("archive/")
    assert {m.id for m in svc.list_memories().memories} == {other, lasting}
    again = mcp(svc, lambda client: call_tool(client, "forget", {"scope": "session:trip"}))
    assert again["archived"] == [] and again["commit"] is None
    assert commit_count(svc.root) == commits + 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"scope": "user:me"}, "not a working-memory scope"),
        ({"scope": "session:x", "mode": "delete"}, "archive only"),
        ({"scope": "session:x", "id": "inbox/a.md"}, "give one of id"),
        ({}, "give one of id"),
    ],
)
def test_scope_forgetting_refuses_what_it_does_not_do(
    svc: MemoryService, args: dict[str, str], message: str
) -> None:
    add(svc, "The user prefers window seats.", scope=["user:me"])
    commits = commit_count(svc.root)

    async def body(client: Client) -> Any:
        return await client.call_tool("forget", args)

    result = mcp(svc, body)
    assert result.is_error and message in result.content[0].text
    assert commit_count(svc.root) == commits


def test_scheduled_forgetting_is_off_by_default_and_archives_only(
    svc: MemoryService, clock: Clock
) -> None:
    import threading

    stop = threading.Event()
    assert lifecycle.schedule(svc, stop) is None  # consolidate_every_hours = 0
    lapsed = add(svc, "The visitor pass is valid today only.", dates={"expires": "2026-01-01"})
    clock.days(2)
    applied = lifecycle.forget_by_policy(svc)
    assert [(p.kind, p.ids, p.applied) for p in applied] == [("archive", (lapsed,), True)]


def test_a_vault_that_enables_scheduled_forgetting_gets_its_expired_memories_archived(
    vault_path: Path, clock: Clock
) -> None:
    import threading

    from memvault.models import ChangeEvent

    service = MemoryService.open(
        vault_path,
        Settings(embedder="none", consolidate_every_hours=0.0001),  # 0.36 s
    )
    service.clock = clock
    stop, archived = threading.Event(), threading.Event()
    try:
        lapsing = add(
            service, "Visitor wifi code for today: 4471.", dates={"expires": "2026-01-01"}
        )
        keep = add(service, "The user's desk is by the window.", type="fact")
        commits = commit_count(vault_path)
        clock.days(1)

        def on_change(event: ChangeEvent) -> None:
            if any(p.startswith("archive/") for p in event.added):
                archived.set()

        service.listeners.append(on_change)
        thread = lifecycle.schedule(service, stop)
        assert thread is not None
        assert archived.wait(timeout=30)
        stop.set()
        thread.join(timeout=30)
        assert service.get(lapsing).path.startswith("archive/")
        assert service.get(keep).status == "active"
        assert commit_count(vault_path) == commits + 1
    finally:
        stop.set()
        service.close()


def test_consolidation_commits_say_what_they_do_and_never_supersede_what_the_user_stated(
    service: MemoryService,
) -> None:
    kept = service.remember(
        "The user's favourite editor is Neovim.", type="preference", importance=0.9
    )
    stated = service.remember(
        "The user's favourite editor is Neovim.",
        type="preference",
        importance=0.4,
        source="user",
        check_similar=False,
    )
    assert kept.memory and stated.memory
    commits = commit_count(service.root)
    (proposal,) = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind == "merge"]
    assert not proposal.applied and "the user stated it" in proposal.reason
    assert service.get(stated.memory.id).status == "active"
    assert commit_count(service.root) == commits
    service.update(stated.memory.id, fields={"source": "conversation"})
    (done,) = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind == "merge"]
    assert done.applied and service.get(stated.memory.id).status == "superseded"
    assert git(service.root, "log", "-1", "--format=%s").startswith("merge: ")
    assert "Memvault-Op: merge" in git(service.root, "log", "-1", "--format=%B")


STANDUP_1030 = "The daily standup is at 10:30 on Zoom."
STANDUP_1100 = "The daily standup is at 11:00 on Zoom."


@pytest.mark.parametrize("corrected_by", ["remember", "consolidate"])
def test_consolidate_never_brings_back_a_fact_that_was_corrected(
    service: MemoryService, clock: Clock, corrected_by: str
) -> None:
    service.clock = clock
    stale = add(service, STANDUP_1030, type="fact")
    clock.days(1)
    if corrected_by == "remember":
        correction = add(service, STANDUP_1100, type="fact", supersedes=[stale])
    else:  # a consolidation's supersession: only the old one says superseded_by
        correction = add(service, STANDUP_1100, type="fact")
        lifecycle.consolidate(service, dry_run=False)
    assert service.get(stale).meta["superseded_by"] == correction
    clock.days(2)
    relearned = add(service, STANDUP_1030, type="fact")  # re-learned from an old conversation
    (step,) = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind != "archive"]
    assert step.applied and step.ids == (correction, relearned)
    assert "which" in step.reason and "corrected" in step.reason
    assert service.get(correction).status == "active"
    assert service.get(relearned).meta["superseded_by"] == correction


def test_consolidate_calls_older_the_fact_stated_first_not_the_one_edited_first(
    service: MemoryService, clock: Clock
) -> None:
    service.clock = clock
    first = add(service, STANDUP_1030, type="fact")
    clock.days(1)
    second = add(service, STANDUP_1100, type="fact")
    clock.days(2)
    service.update(first, fields={"tags": ["work", "meetings"]})  # now "updated" later
    (step,) = [p for p in lifecycle.consolidate(service) if p.kind == "supersede"]
    assert step.ids == (second, first)
    assert f"contradict the older {service.get(first).path}" in step.reason


def test_the_hint_on_a_refused_step_makes_a_real_supersession(service: MemoryService) -> None:
    kept = add(service, "The user's favourite editor is Neovim.", type="preference", importance=0.9)
    stated = add(
        service, "The user's favourite editor is Neovim.", type="preference", source="user"
    )
    (refused,) = [p for p in lifecycle.consolidate(service, dry_run=False) if p.kind == "merge"]
    assert not refused.applied and refused.ids == (kept, stated)
    hint = f"remember the text of {refused.paths[0]} again with supersedes=[{kept!r}, {stated!r}]"
    assert hint in refused.reason
    text = strip_title(service.get(kept).body)
    new = service.remember(text, type="preference", source="user", supersedes=[kept, stated])
    assert new.action == "created" and new.memory is not None
    for old in (kept, stated):
        memory = service.get(old)
        assert memory.status == "superseded" and memory.meta["superseded_by"] == new.memory.id
    assert [p for p in lifecycle.consolidate(service) if p.kind != "archive"] == []
