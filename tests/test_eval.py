"""The LoCoMo harness on a small LoCoMo-shaped sample written here (never the real data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memvault import frontmatter
from memvault.config import Settings
from memvault.eval import locomo, runner

SAMPLE = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Ana",
                    "dia_id": "D1:1",
                    "text": "I adopted a grey kitten named Pepper.",
                },
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Lovely! I started learning the cello.",
                },
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "Here is my garden.",
                    "img_url": ["x"],
                    "blip_caption": "a photo of tomatoes in a raised bed",
                },
            ],
            "session_2_date_time": "10:05 am on 2 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher moved to Porto."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Pepper knocked over my coffee."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's kitten?",
                "answer": "Pepper",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What instrument does Ben learn and where did his teacher go?",
                "answer": "cello, Porto",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {
                "question": "What is in Ana's garden?",
                "answer": "tomatoes",
                "evidence": ["D:1:3"],
                "category": 4,
            },
            {"question": "Unanswerable", "answer": "", "evidence": [], "category": 3},
            {
                "question": "What did Ben's kitten knock over?",
                "evidence": ["D2:02"],
                "category": 5,
                "adversarial_answer": "coffee",
            },
        ],
        "observation": {
            "session_1_observation": {
                "Ana": [["Ana adopted a kitten called Pepper.", "D1:1"]],
                "Ben": [["Ben is learning the cello.", ["D1:2"]]],
            },
            "session_2_observation": {"Ben": [["Ben's teacher moved to Porto.", "D2:1"]]},
        },
    }
]


def test_dates_parse_as_in_the_protocol() -> None:
    assert locomo.parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00"
    assert locomo.parse_date("12:09 am on 13 September, 2023").hour == 0


def test_evidence_quirks_are_cleaned() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D4:4"}
    assert locomo.clean_evidence(["D8:6; D9:17"], known) == {"D8:6", "D9:17"}
    assert locomo.clean_evidence(["D:11:26", "D30:05", "D", "D99:1"], known) == {"D11:26", "D30:5"}
    assert locomo.clean_evidence(["D9:1 D4:4"], known) == {"D4:4"}


def test_items_keep_gold_out_of_the_text(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(SAMPLE))
    conv = locomo.load(path)[0]
    turns = locomo.items(conv, "T")
    assert [i.covers for i in turns][2] == {"D1:3"}
    assert (
        turns[2].content == "Ana: Here is my garden. [shares a photo of tomatoes in a raised bed]"
    )
    assert all("D1" not in i.content and "D1" not in i.title for i in turns)
    assert turns[0].created == "2023-05-08T13:56:00"
    assert [i.covers for i in locomo.items(conv, "S")] == [{"S1"}, {"S2"}]
    assert [i.covers for i in locomo.items(conv, "O")] == [{"D1:1"}, {"D1:2"}, {"D2:1"}]
    qs = locomo.questions(conv, "T")
    assert [q.gold for q in qs] == [{"D1:1"}, {"D1:2", "D2:1"}, {"D1:3"}, {"D2:2"}]
    assert [q.gold for q in locomo.questions(conv, "S")][1] == {"S1", "S2"}


def test_variant_c_adds_the_last_sentence_a_turn_replies_to_and_keeps_its_own_gold(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(SAMPLE))
    conv = locomo.load(path)[0]
    turns, in_context = locomo.items(conv, "T"), locomo.items(conv, "C")
    assert [i.covers for i in in_context] == [i.covers for i in turns]
    assert [i.title for i in in_context] == [i.title for i in turns]
    # the first turn of each session replies to nothing; the others carry the line before
    assert in_context[0].content == turns[0].content
    assert in_context[3].content == turns[3].content
    assert in_context[2].content == (
        f"{turns[2].content}\n\n(in reply to Ben: I started learning the cello.)"
    )
    assert in_context[4].content.endswith("(in reply to Ben: My cello teacher moved to Porto.)")
    assert len({i.key for i in in_context} | {i.key for i in turns}) == 10


def test_metrics_match_hand_computed_values() -> None:
    gold = frozenset({"D1:2", "D2:1"})
    ranked = [frozenset({"D1:1"}), frozenset({"D2:1"}), frozenset({"D3:1"}), frozenset({"D1:2"})]
    m = locomo.score(ranked, gold, relevant_total=2, sessions=locomo.session_covers(ranked))
    assert m["R_any@1"] == 0 and m["R_any@5"] == 1
    assert m["R_all@5"] == 1 and m["R_frac@5"] == 1
    assert m["MRR"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert m["nDCG@10"] == pytest.approx(dcg / ideal)
    assert m["S_any@5"] == 1
    only_first = locomo.score(ranked[:2], gold, 2, locomo.session_covers(ranked[:2]))
    assert only_first["R_frac@10"] == 0.5 and only_first["R_all@10"] == 0
    table = locomo.aggregate([(4, m), (1, only_first), (5, m)])
    assert table["1-4"]["n"] == 2 and table["1-4"]["R_frac@10"] == pytest.approx(75.0)
    assert table["5"]["n"] == 1 and table["all"]["n"] == 3


def test_the_harness_builds_real_vaults_and_ranks_through_recall(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(SAMPLE))
    cache = tmp_path / "cache"
    result = runner.run(path, ("T", "O"), ("bm25", "hybrid"), "all", cache, Settings())
    t_bm25 = result["tables"]["T"]["bm25"]
    assert t_bm25["4"]["n"] == 2 and t_bm25["1-4"]["n"] == 3 and t_bm25["5"]["n"] == 1
    assert t_bm25["4"]["R_any@1"] == 100.0  # "kitten" and "garden" hit their turn first
    # no observation cites the garden turn, so O can answer 2 of the 3 questions
    assert result["tables"]["O"]["hybrid"]["1-4"]["R_any@5"] == pytest.approx(200 / 3)
    vaults = sorted(p.name for p in cache.iterdir())
    assert len(vaults) == 2 and all(p.startswith(("T-conv-1-", "O-conv-1-")) for p in vaults)
    files = sorted((cache / vaults[1] / "locomo" / "t").glob("*.md"))
    assert len(files) == 5
    docs = [frontmatter.parse(f.read_text()) for f in files]
    assert sorted(d.meta["gold"][0] for d in docs) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert all("D1:" not in d.body and "D2:" not in d.body for d in docs)
    again = runner.run(path, ("T",), ("bm25",), "all", cache, Settings())
    assert again["tables"]["T"]["bm25"] == t_bm25
    assert sorted(p.name for p in cache.iterdir()) == vaults  # reused, not rebuilt
    rendered = runner.render(result)
    assert "| 1-4 |" in rendered and "R_any@10" in rendered
