"""Hunt: real text from real people (Chinese, mixed scripts, odd Unicode)."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from mcp import Client

from memvault import facts, note
from memvault.service import MemoryService

from .helpers import call_tool, git, in_process


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("孩子三岁半。", "孩子三岁。"),
        ("飞行时间是三个小时。", "飞行时间是三个半小时。"),
        ("一年后复查。", "一年半后复查。"),
    ],
)
def test_a_half_said_in_chinese_is_a_correction_not_a_duplicate(
    service: MemoryService, old: str, new: str
) -> None:
    """三岁半 (three and a half) read as 三 (three): "the child is three" after "the child
    is three and a half" was judged a duplicate, and the correction was never written."""
    first = service.remember(old, type="fact")
    assert first.action == "created" and first.memory is not None
    second = service.remember(new, type="fact")
    assert second.action == "created", second.reason
    assert second.memory is not None
    assert [(s.id, s.relation) for s in second.similar] == [
        (first.memory.id, "possible_contradiction")
    ]
    assert second.memory.path in git(service.root, "-c", "core.quotePath=false", "ls-files")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("房租一万二。", ("number", "12000")),
        ("房租三千五。", ("number", "3500")),
        ("预算两百五。", ("number", "250")),
        ("房租一万零二。", ("number", "10002")),
        ("每天睡七个半小时。", ("number", "7.5")),
        ("会议在三点一刻。", ("time", "3:15")),
        ("会议在三点三刻。", ("time", "3:45")),
    ],
)
def test_chinese_numbers_as_people_say_them(text: str, value: tuple[str, str]) -> None:
    """一万二 is 12,000 (not 10,002), 三点一刻 is 3:15 (not 3:01), 七个半 is 7.5: else a
    paraphrase (房租12000) is reported as a contradiction, and a correction may pass for
    a duplicate."""
    assert value in facts.extract(text).values


def test_colloquial_chinese_amount_and_its_digits_are_one_fact() -> None:
    assert not facts.compare("房租一万二。", "房租12000。").conflicts
    assert not facts.compare("会议在三点一刻。", "会议在3:15。").conflicts
    assert facts.compare("房租三千五。", "房租三千。").conflicts
    assert ("number", "1.5") not in facts.extract("把蛋糕分成一半。").values  # a half, alone


@pytest.mark.parametrize(
    ("written", "query"),
    [
        ("The staging licence key starts with ＡＢＣ１２３.", "ABC123"),
        ("The staging licence key starts with ABC123.", "ＡＢＣ１２３"),
        ("Deploys go through Argo\u200bCD on Thursdays.", "ArgoCD"),
        ("发布流程走 Argo\u200bCD，每周四。", "ArgoCD 发布"),
        ("Our CRM is Sales\u00adforce.", "Salesforce"),
    ],
)
def test_full_width_and_zero_width_text_is_found_by_what_people_type(
    svc: MemoryService, written: str, query: str
) -> None:
    """ＡＢＣ１２３ (typed with a Chinese input method) was not found by ABC123, nor
    Argo<zero-width space>CD (pasted from a web page) by ArgoCD: the words were indexed
    as other words than the ones typed."""

    async def body(client: Client) -> dict[str, Any]:
        made = await call_tool(client, "remember", {"content": written, "type": "fact"})
        assert made["action"] == "created"
        return await call_tool(client, "recall", {"query": query})

    found = in_process(svc, body)
    assert [hit["title"] for hit in found["results"]] == [written]


WEEKLY = (
    "项目周报\n\n第一部分：本周完成了登录模块。\n第二部分：数据库迁移到 PostgreSQL。\n"
    "第三部分：下周计划上线支付功能，预计周五发布。"
)


@pytest.mark.parametrize(
    ("query", "line"),
    [
        ("上线", "第三部分：下周计划上线支付功能，预计周五发布。"),
        ("下周上线支付功能", "第三部分：下周计划上线支付功能，预计周五发布。"),
        ("数据库迁移", "第二部分：数据库迁移到 PostgreSQL。"),
    ],
)
def test_a_chinese_query_gets_the_line_that_answers_it_as_snippet(
    svc: MemoryService, query: str, line: str
) -> None:
    """The snippet took the query's space-separated words of 3+ characters: a Chinese
    question (no spaces) or a two-character word (上线) matched no line, and every hit
    showed its first line, not the one that answers."""
    svc.remember(WEEKLY, type="project")

    async def body(client: Client) -> dict[str, Any]:
        return await call_tool(client, "recall", {"query": query})

    assert [hit["snippet"] for hit in in_process(svc, body)["results"]] == [line]


def test_a_snippet_of_one_long_line_shows_where_the_query_matches(svc: MemoryService) -> None:
    """A memory of one long line (a pasted log, 200 KB, no newline) showed its first 240
    characters, never the words that matched."""
    svc.remember("Server log " + "ok " * 70_000 + "密钥在保险箱里 " + "ok " * 70_000, type="note")
    hit = svc.recall("密钥", k=1)[0]
    assert "密钥在保险箱里" in hit.snippet and len(hit.snippet) <= 240


def test_a_snippet_of_a_line_in_turkish_capitals_shows_the_match() -> None:
    """Lower-cased, Turkish İ is two letters: the match was found in the longer lower-cased
    line and its position used in the line itself, past its end with many İ (IndexError:
    every recall ranking that memory failed), else shifted off the word."""
    line = "İŞ İÇİN İZİN İSTEDİĞİMİZ İKİ İLİÇİN İDARİ İŞLERİ " * 8 + "ve toplantı zebra notu."
    assert "zebra notu" in note.snippet(line, "zebra")
    shorter = "İŞ İÇİN İZİN " * 12 + "ve toplantı zebra notu ve " + "İKİ İDARİ " * 12
    assert "toplantı zebra notu" in note.snippet(shorter, "zebra")
    city = "Toplantı notları " * 30 + "ve İstanbul ofisi " + "kapalı " * 40
    assert "İstanbul ofisi" in note.snippet(city, "İstanbul")


@pytest.mark.parametrize(
    "tail",
    [
        "👨\u200d👩\u200d👧\u200d👦",  # a family: four emoji joined by ZWJ
        "👍🏽",  # a thumb with a skin tone
        "🇨🇳",  # a flag: two regional letters
        "e\u0301",  # é decomposed (a Mac's file names and pastes)
        "\u1112\u1161\u11ab",  # 한 decomposed into jamo
    ],
)
def test_a_cut_never_splits_what_people_see_as_one_character(tail: str) -> None:
    """A snippet or a context line cut at its width could keep half an emoji sequence (a
    man of the family, a bare thumb, a lone regional letter) or a letter without its
    accent: text the person never wrote."""
    text = "x" * 9 + tail
    for width in range(10, len(text)):
        assert note.cut(text, width, "") == "x" * 9
        assert note.snippet(text + " y" * 200, "", width + 3) == "x" * 9 + "..."


@pytest.mark.parametrize(
    ("theirs", "title"),
    [
        ("Wi-Fi.md", "wi-fi"),  # only case differs
        (unicodedata.normalize("NFD", "Café.md"), "café"),  # a Mac's decomposed name
        ("NUL.md", "nul"),  # no file on Linux: a device name on Windows
    ],
)
def test_a_new_memory_never_takes_a_name_another_system_reads_as_the_persons(
    svc: MemoryService, theirs: str, title: str
) -> None:
    """memvault wrote facts/wi-fi.md next to the person's facts/Wi-Fi.md (and café.md next
    to a Mac's decomposed café.md): on macOS and Windows they are one file, so a clone
    there checked one out over the other; nul.md cannot be checked out on Windows at all."""
    if not theirs.startswith("NUL"):
        (svc.root / "facts" / theirs).write_text("# Mine\n\nThe person's own note.\n")
        svc.commit_external([f"facts/{theirs}"])
    made = svc.remember("The guest network and the café open at 8.", title=title, type="fact")
    assert made.action == "created" and made.memory is not None
    name = made.memory.path.removeprefix("facts/")
    assert (
        unicodedata.normalize("NFC", name).casefold()
        != unicodedata.normalize("NFC", theirs).casefold()
    )
    tracked = git(svc.root, "-c", "core.quotePath=false", "ls-files", "facts").split()
    folded = [unicodedata.normalize("NFC", p).casefold() for p in tracked]
    assert len(set(folded)) == len(folded)


def test_a_long_chinese_first_line_keeps_its_words_in_the_title_and_file_name(
    svc: MemoryService,
) -> None:
    """A title was cut back to the last space before 60 characters: Chinese has none
    between words, so a long mixed first line became the title 我们的 CRM 是... and the
    file 我们的-crm-是.md, the words that say what the memory is about gone."""
    text = (
        "我们的 CRM 是 Salesforce，销售团队每天用它跟进客户，每周五下午四点前必须更新商机阶段，"
        "否则周报会漏数据，这一点非常重要请记住。"
    )
    made = svc.remember(text, type="fact")
    assert made.memory is not None
    title = made.memory.meta.get("title") or svc.get(made.memory.id).body.split("\n")[0]
    assert "Salesforce，销售团队" in title and title.endswith("...")
    assert "salesforce-销售团队" in made.memory.path
    assert note.title_from("x" * 59 + "👍🏽 and more words after it") == "x" * 59 + "..."


def test_a_tag_filter_finds_a_tag_written_decomposed(person_vault: MemoryService) -> None:
    """A tag written decomposed (café as e + U+0301, pasted from a Mac's file name) was
    not found by the same tag typed composed: the filter said no memory has it."""
    decomposed = unicodedata.normalize("NFD", "café")
    note_file = person_vault.root / "notes" / "coffee.md"
    note_file.parent.mkdir(exist_ok=True)
    note_file.write_text(f"---\ntags: [{decomposed}]\n---\n# Coffee\n\nOat milk flat white.\n")
    person_vault.commit_external(["notes/coffee.md"])
    person_vault.sync_index()

    async def body(client: Client) -> list[int]:
        counts = []
        for tag in ("café", decomposed, "CAFÉ"):
            listed = await call_tool(client, "list_memories", {"tags": [tag]})
            counts.append(listed["total"])
        return counts

    assert in_process(person_vault, body) == [1, 1, 1]


def test_a_decomposed_file_name_is_found_by_its_composed_path(
    person_vault: MemoryService,
) -> None:
    """A note made on a Mac (file name decomposed: e + U+0301) was "no memory with id or
    path" for the path an agent writes (composed, as every model writes text): get_memory,
    update_memory and forget by path all failed."""
    decomposed = unicodedata.normalize("NFD", "notes/Café Müller.md")
    (person_vault.root / "notes").mkdir(exist_ok=True)
    (person_vault.root / decomposed).write_text("# Café Müller\n\nOffsite venue in Zürich.\n")
    person_vault.commit_external([decomposed])

    async def body(client: Client) -> dict[str, Any]:
        got = await call_tool(client, "get_memory", {"id": "notes/Café Müller.md"})
        assert got["title"] == "Café Müller"
        args = {"id": "notes/Café Müller", "tags": ["venue"]}
        return await call_tool(client, "update_memory", args)

    in_process(person_vault, body)
    assert [p.name for p in (person_vault.root / "notes").iterdir()] == [decomposed[6:]]
    assert "venue" in (person_vault.root / decomposed).read_text()
    assert git(person_vault.root, "status", "--porcelain") == ""


def test_a_japanese_word_finds_only_the_memories_that_hold_it(svc: MemoryService) -> None:
    """jieba (a Chinese dictionary) cut kana into single characters, so オフィス (office)
    found フィットネス (fitness: フ, ィ, ス) and スマートフォン at relevance 0.99 and 0.86."""
    office = "オフィスの住所は東京都港区です。"
    for text in (
        office,
        "フィットネスクラブのスケジュールは毎週変わる。",
        "スマートフォンの機種変更は来月。",
    ):
        svc.remember(text, type="fact")

    async def body(client: Client) -> list[str]:
        found = await call_tool(client, "recall", {"query": "オフィス"})
        return [hit["title"] for hit in found["results"]]

    assert in_process(svc, body) == [office]


@pytest.mark.parametrize("query", ["회의", "월요일 회의", unicodedata.normalize("NFD", "회의")])
def test_a_korean_word_finds_the_memory_where_it_carries_a_particle(
    svc: MemoryService, query: str
) -> None:
    """Korean writes a particle onto its word (회의는: "the meeting" + topic marker), and
    a word was a whole space-separated run: 회의 (meeting) found nothing."""
    meeting = "회의는 매주 월요일 오전 10시에 있습니다."
    svc.remember(meeting, type="fact")
    svc.remember("점심은 보통 회사 근처 식당에서 먹습니다.", type="fact")

    async def body(client: Client) -> list[str]:
        found = await call_tool(client, "recall", {"query": query})
        return [hit["title"] for hit in found["results"]]

    assert in_process(svc, body) == [meeting]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("用户最喜欢的表情是 😂", "用户最喜欢的表情是 😭"),
        ("The team's sign for approved is 👍🏽", "The team's sign for approved is 👍🏿"),
    ],
)
def test_a_changed_emoji_is_a_correction_not_a_duplicate(
    service: MemoryService, old: str, new: str
) -> None:
    """Normalising for duplicates dropped every symbol, emoji included: "the user's
    favourite emoji is 😭" after "... is 😂" was the same text, and never written."""
    first = service.remember(old, type="preference")
    assert first.memory is not None
    second = service.remember(new, type="preference")
    assert second.action == "created", second.reason
    assert [(s.id, s.relation) for s in second.similar] == [
        (first.memory.id, "possible_contradiction")
    ]
    assert service.remember(old, type="preference").action == "duplicate"  # the same emoji


def test_archiving_never_takes_a_name_another_system_reads_as_the_persons(
    svc: MemoryService,
) -> None:
    """Archiving facts/wi-fi.md looked for a free name in archive/ itself, not in the
    archive/facts/ it moves to: next to the person's archive/facts/Wi-Fi.md it wrote
    archive/facts/wi-fi.md, one file on macOS and Windows."""
    made = svc.remember("The guest network is called Lobby.", title="wi-fi", type="fact")
    assert made.memory is not None and made.memory.path == "facts/wi-fi.md"
    (svc.root / "archive" / "facts").mkdir(parents=True, exist_ok=True)
    (svc.root / "archive" / "facts" / "Wi-Fi.md").write_text("# Wi-Fi\n\nMy old notes.\n")
    svc.commit_external(["archive/facts/Wi-Fi.md"])
    svc.forget(made.memory.id)
    tracked = git(svc.root, "ls-files", "archive").split()
    assert "archive/facts/Wi-Fi.md" in tracked and "archive/facts/wi-fi.md" not in tracked
    assert (svc.root / "archive" / "facts" / "Wi-Fi.md").read_text() == "# Wi-Fi\n\nMy old notes.\n"
