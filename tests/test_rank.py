"""Ranking is a pure function: properties checked with hypothesis."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from memvault.index.rank import Candidate, SoftForget, Weights, forgotten, rank, recency

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
units = st.floats(0, 1)
ages = st.integers(0, 3650)


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        out.append(
            Candidate(
                id=f"m{i}",
                type=draw(st.sampled_from(["fact", "episode", "preference"])),
                when=NOW - dt.timedelta(days=draw(ages)),
                importance=draw(units),
                confidence=draw(units),
                keyword=draw(st.none() | st.floats(0, 50)),
                vector=draw(st.none() | st.floats(-1, 1)),
            )
        )
    return out


@given(candidates(), st.sampled_from(["weighted", "rrf"]))
def test_results_are_sorted_finite_and_explained(cands: list[Candidate], fusion: str) -> None:
    ranked = rank(cands, Weights(fusion=fusion), NOW)
    assert sorted(r.id for r in ranked) == sorted(c.id for c in cands)
    scores = [r.score for r in ranked]
    assert scores == sorted(scores, reverse=True)
    for r in ranked:
        assert set(r.why) == {"keyword", "vector", "recency", "importance"}
        assert 0.0 <= r.score <= 1.0 + 1e-9


@given(candidates(), st.integers(0, 11), st.floats(0.1, 10))
def test_a_better_keyword_score_never_lowers_a_memory(
    cands: list[Candidate], pick: int, boost: float
) -> None:
    target = cands[pick % len(cands)]
    if target.keyword is None:
        return
    before = {r.id: r.score for r in rank(cands, Weights(), NOW)}
    better = [
        Candidate(**{**c.__dict__, "keyword": c.keyword + boost}) if c.id == target.id else c
        for c in cands
    ]
    after = {r.id: r.score for r in rank(better, Weights(), NOW)}
    assert after[target.id] >= before[target.id] - 1e-9


@given(st.integers(0, 1000), st.integers(1, 1000), st.sampled_from(["fact", "episode"]))
def test_the_same_text_older_ranks_lower(age: int, extra: int, kind: str) -> None:
    newer = Candidate("new", kind, NOW - dt.timedelta(days=age), 0.5, 0.8, 3.0, 0.8)
    older = Candidate("old", kind, NOW - dt.timedelta(days=age + extra), 0.5, 0.8, 3.0, 0.8)
    ranked = rank([older, newer], Weights(), NOW)
    assert ranked[0].id == "new" or ranked[0].score == ranked[1].score
    assert ranked[0].why["recency"] >= ranked[1].why["recency"]


def test_episodes_decay_slower_than_other_types() -> None:
    old = NOW - dt.timedelta(days=60)
    assert recency(old, NOW, Weights().decay_per_day_episode) > recency(
        old, NOW, Weights().decay_per_day
    )


def test_a_missing_leg_hands_its_weight_to_the_other() -> None:
    only_keyword = [Candidate("a", "fact", NOW, 0.5, 0.8, keyword=5.0)]
    ranked = rank(only_keyword, Weights(), NOW)
    assert ranked[0].why["keyword"] == Weights().keyword + Weights().vector


@given(
    st.integers(0, 5),
    st.integers(0, 400),
    units,
    st.floats(0, 1),
)
def test_soft_forgetting_only_ever_lowers_a_score_and_spares_core_memories(
    hits: int, idle: int, importance: float, factor: float
) -> None:
    seen = NOW - dt.timedelta(days=idle)
    base = Candidate("m", "fact", seen, importance, 0.5, keyword=3.0, hits=hits, last_seen=seen)
    weights = Weights(soft_forget=SoftForget(hits=2, days=90, factor=factor))
    (plain,) = rank([replace(base, hits=99)], weights, NOW)
    (ranked,) = rank([base], weights, NOW)
    applies = hits <= 2 and idle >= 90 and importance < 0.9
    assert ranked.score == (plain.score * factor if applies else plain.score)
    assert ("soft_forget" in ranked.why) == (applies and factor != 1.0)


def test_soft_forgetting_rules_can_differ_per_type() -> None:
    seen = NOW - dt.timedelta(days=40)
    weights = Weights(type_soft_forget={"episode": SoftForget(days=30)})
    episode = Candidate("e", "episode", seen, 0.5, 0.5, keyword=1.0, last_seen=seen)
    fact = replace(episode, id="f", type="fact")
    assert forgotten(episode, weights, NOW) == 0.3
    assert forgotten(fact, weights, NOW) == 1.0
    assert forgotten(replace(episode, last_seen=None), weights, NOW) == 1.0
