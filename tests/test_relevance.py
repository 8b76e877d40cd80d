"""Relevance: an absolute 0..1 signal per hit, and an honest "no match" below the floor."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.config import Settings
from memvault.index.fulltext import FullText, TextDoc
from memvault.index.rank import CALIBRATION, relevance
from memvault.models import Filters
from memvault.retrieval import no_match_note
from memvault.server.tools import recall
from memvault.service import MemoryService

FLOOR = 0.5  # the calibrated cut (docs/benchmarks.md), also the default
MEMORIES = (
    "Dentist appointment with Dr. Okafor on Thursday at 3pm.",
    "The user prefers dark mode in every editor.",
    "The user's dog is a beagle named Pepper.",
    "We chose PostgreSQL for the billing service.",
    "Weekly status emails go out on Friday morning.",
)


def _fill(service: MemoryService) -> dict[str, str]:
    ids = {}
    for text in MEMORIES:
        result = service.remember(text, type="fact")
        assert result.memory is not None
        ids[text] = result.memory.id
    return ids


def test_an_unrelated_query_gets_no_results_and_a_note_saying_so(service: MemoryService) -> None:
    _fill(service)
    out = recall(service, "Kubernetes cluster upgrade schedule", min_relevance=FLOOR)
    assert out.results == [] and out.count == 0
    assert out.note is not None and "no relevant memory" in out.note
    assert service.recall("favourite football team", filters=Filters(min_relevance=FLOOR)) == []


def test_a_relevant_query_returns_its_memory_with_relevance_above_the_floor(
    service: MemoryService,
) -> None:
    ids = _fill(service)
    out = recall(service, "when is my dentist appointment", min_relevance=FLOOR)
    assert out.note is None and out.count == len(out.results) >= 1
    assert out.results[0].id == ids[MEMORIES[0]]
    assert FLOOR <= out.results[0].relevance <= 1.0
    assert out.results[0].why["relevance"] == round(out.results[0].relevance, 3)
    assert all(hit.relevance >= FLOOR for hit in out.results)


def test_min_relevance_zero_returns_every_candidate_as_before(service: MemoryService) -> None:
    _fill(service)
    everything = service.recall(
        "Kubernetes cluster upgrade", k=10, filters=Filters(min_relevance=0)
    )
    assert len(everything) == len(MEMORIES)  # the vector leg reaches every memory
    assert all(0.0 <= hit.relevance < FLOOR for hit in everything)
    assert [h.score for h in everything] == sorted((h.score for h in everything), reverse=True)


def test_an_archived_memory_asked_for_gives_no_match_rather_than_junk(
    service: MemoryService,
) -> None:
    ids = _fill(service)
    assert recall(service, "dentist", min_relevance=FLOOR).results[0].id == ids[MEMORIES[0]]
    service.forget(ids[MEMORIES[0]], reason="done")
    out = recall(service, "dentist", min_relevance=FLOOR)
    assert out.results == [] and out.note is not None
    archived = recall(service, "dentist", include_archived=True, min_relevance=FLOOR)
    assert [hit.id for hit in archived.results] == [ids[MEMORIES[0]]]


def test_an_exact_phrase_is_more_relevant_than_an_unrelated_memory(
    service: MemoryService,
) -> None:
    ids = _fill(service)
    hits = service.recall("a beagle named Pepper", k=10, filters=Filters(min_relevance=0))
    level = {hit.id: hit.relevance for hit in hits}
    dog = level[ids[MEMORIES[2]]]
    assert dog >= FLOOR
    assert all(dog > other + 0.3 for i, other in level.items() if i != ids[MEMORIES[2]])


def test_full_text_only_still_judges_relevance_from_bm25(text_only: MemoryService) -> None:
    ids = _fill(text_only)
    found = recall(text_only, "dentist appointment", min_relevance=FLOOR)
    assert [hit.id for hit in found.results] == [ids[MEMORIES[0]]]
    assert found.results[0].relevance >= FLOOR
    assert recall(text_only, "Kubernetes cluster upgrade", min_relevance=FLOOR).note is not None
    weak = text_only.recall("the user", k=10, filters=Filters(min_relevance=0))
    assert weak and all(hit.relevance < found.results[0].relevance for hit in weak)


def test_the_default_floor_is_the_calibrated_cut_and_drops_junk(service: MemoryService) -> None:
    assert Settings().min_relevance == FLOOR
    _fill(service)
    out = recall(service, "Kubernetes cluster upgrade schedule")
    assert out.results == [] and out.note is not None
    assert service.recall("favourite football team") == []


def test_a_true_match_in_a_vault_of_one_memory_passes_the_default_floor(
    service: MemoryService,
) -> None:
    made = service.remember("Version bumps rebuild the index.", type="fact").memory
    assert made is not None
    hits = service.recall("version bumps")
    assert [hit.id for hit in hits] == [made.id] and hits[0].relevance >= FLOOR
    assert service.recall("favourite football team") == []


@pytest.mark.parametrize("legs", ["service", "text_only"])
def test_true_matches_in_a_vault_of_three_memories_pass_the_default_floor(
    legs: str, request: pytest.FixtureRequest
) -> None:
    svc: MemoryService = request.getfixturevalue(legs)  # hybrid, or full text only
    made = [
        svc.remember(text, type="fact").memory
        for text in (
            "Backups run nightly at 2am to the NAS.",
            "The release checklist lives in docs/release.md.",
            "The user's sister is called Anna.",
        )
    ]
    ids = [m.id for m in made if m is not None]
    assert len(ids) == 3
    assert [h.id for h in svc.recall("backups nightly")][:1] == ids[:1]
    assert [h.id for h in svc.recall("release checklist")][:1] == ids[1:2]
    assert [h.id for h in svc.recall("Anna")][:1] == ids[2:]  # a name alone
    assert svc.recall("Kubernetes cluster upgrade") == []


def test_coverage_is_the_share_of_the_query_terms_a_memory_contains_in_any_field(
    tmp_path: Path,
) -> None:
    text = FullText(tmp_path / "text")
    try:
        text.upsert(
            [
                TextDoc("a", "a.md", "Version bumps", "", "We bump it on release.", ""),
                TextDoc("b", "b.md", "Backups", "nightly", "They run at 2am.", ""),
                TextDoc("c", "c.md", "Dog", "", "A beagle named Pepper.", ""),
            ]
        )
        text.upsert([TextDoc("a", "a.md", "Version bumps", "", "Changed.", "")])
        shares = text.coverage("version bumps nightly backups", ["a", "b", "c", "gone"])
        assert shares == {"a": 0.5, "b": 0.5, "c": 0.0}  # title, tags; unknown ids left out
        assert text.coverage("version", ["c"]) == {"c": 0.0}  # only the ids asked about
        assert text.coverage("the of", ["a"]) == {}  # no terms: nothing to share
    finally:
        text.close()


def test_a_min_relevance_outside_zero_to_one_is_refused(service: MemoryService) -> None:
    import pytest

    from memvault.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="min_relevance"):
        service.recall("dentist", filters=Filters(min_relevance=1.5))


@given(
    st.floats(0, 60),
    st.floats(0, 60),
    st.floats(-1, 1),
    st.floats(-1, 1),
    st.integers(1, 20),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_relevance_is_in_unit_range_and_grows_with_each_signal(
    low_bm25: float,
    high_bm25: float,
    low_cos: float,
    high_cos: float,
    terms: int,
    low_share: float,
    high_share: float,
) -> None:
    low_bm25, high_bm25 = sorted((low_bm25, high_bm25))
    low_cos, high_cos = sorted((low_cos, high_cos))
    low_share, high_share = sorted((low_share, high_share))
    for legs in ((True, True), (True, False), (False, True)):

        def level(b: float, c: float, s: float, legs: tuple[bool, bool] = legs) -> float:
            if not legs[0]:
                return relevance(None, c, terms)
            return relevance(b, c if legs[1] else None, terms, coverage=s)

        low = level(low_bm25, low_cos, low_share)
        high = level(high_bm25, high_cos, high_share)
        assert 0.0 <= low <= high <= 1.0 and not math.isnan(low)


@given(st.floats(0, 1), st.floats(0, 30), st.floats(1.0, 2.0))
def test_a_hit_across_scripts_is_judged_by_its_cosine_on_the_same_language_scale(
    cosine: float, bm25: float, stretch: float
) -> None:
    """Where the question's words cannot reach the memory (reach 0) the vector fit reads
    the cosine times the stretch; within one script (reach 1) the stretch changes nothing."""
    across = relevance(0.0, cosine, 3, reach=0.0, coverage=0.0, stretch=stretch)
    assert across == pytest.approx(CALIBRATION["vector"].level(None, cosine * stretch))
    assert across >= relevance(0.0, cosine, 3, reach=0.0, coverage=0.0)
    same = relevance(bm25, cosine, 3, reach=1.0, coverage=0.5, stretch=stretch)
    assert same == relevance(bm25, cosine, 3, reach=1.0, coverage=0.5)


def test_an_empty_answer_while_the_index_catches_up_does_not_blame_relevance() -> None:
    """A server just started on a vault it had not indexed: an empty recall may only be
    "not yet" (the MCP tool asks ``ensure_synced(wait=False)``), and says so."""
    assert "relevance" in no_match_note(0.5)
    waiting = no_match_note(0.5, catching_up=True)
    assert "catching up" in waiting and "relevance" not in waiting


def test_a_recall_whose_filters_select_no_memory_says_so_not_relevance(
    text_only: MemoryService,
) -> None:
    """A period (or type) holding no memory: lowering min_relevance would not help."""
    nothing = recall(text_only, "dentist")
    assert nothing.note == "the vault holds no memory yet"  # not "matches the filters"
    text_only.remember("The user's dentist is Dr. Okafor on Elm Street.", type="fact")
    empty = recall(text_only, "dentist", since="2030-01")
    assert empty.count == 0
    assert empty.note is not None and empty.note.startswith("no memory matches the filters")
    junk = recall(text_only, "quantum chromodynamics lecture notes")
    assert junk.note is not None and junk.note.startswith("no relevant memory")


def test_a_fact_whose_validity_ended_says_so_in_recall_and_context(
    text_only: MemoryService,
) -> None:
    """valid_until hides nothing, so the result says the fact may no longer hold."""
    from memvault.context import build_context

    text_only.remember(
        "Alice is on parental leave; send status updates to Bob instead.",
        type="fact",
        dates={"valid_from": "2026-08-01", "valid_until": "2026-10-31"},
    )
    text_only.remember("Status updates go out every Friday afternoon.", type="fact")
    text_only.clock = lambda: dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)
    hits = {h.title[:5]: h for h in text_only.recall("status updates", k=5)}
    assert hits["Alice"].why["validity"] == "valid until 2026-10-31: may no longer hold"
    assert "validity" not in hits["Statu"].why
    context = build_context(text_only, "status updates", 500).text
    assert "Alice is on parental leave" in context
    assert "(valid until 2026-10-31: may no longer hold)" in context
    text_only.clock = lambda: dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
    early = {h.title[:5]: h for h in text_only.recall("status updates", k=5)}
    assert early["Alice"].why["validity"] == "valid from 2026-08-01: does not hold yet"


def test_a_memory_still_waiting_for_its_vector_is_judged_as_it_will_be_once_embedded(
    service: MemoryService, tmp_path: Path
) -> None:
    """An import leaves vectors to the background; meanwhile a long note holding the
    question's word over and over passed the floor on full text alone (0.90 for "travel
    plans"), while the same note once embedded sits below it."""
    hosting = (
        "Pricing plans of the hosting provider. The basic plans cost 5 euros, the team plans "
        "cost 20 euros; all plans include backups. Plans renew monthly and plans can be "
        "cancelled at any time from the billing page."
    )
    records = [{"content": f"Shelf {n} holds the winter tyres, set {n}."} for n in range(17)]
    # more such notes than the 4 best a search embedded at first
    records += [{"content": f"{hosting} Offer {n}.", "title": f"Hosting {n}"} for n in range(6)]
    long_trip = " ".join(f"Packing list item {n}: warm socks and a charger." for n in range(60))
    records += [
        {"content": "Travel plans for May: Lisbon with Ana, flights booked.", "title": "May"},
        # the answer far past the first chunk of a long note
        {"content": f"{long_trip}\n\nTravel plans for June: Porto by train.", "title": "June"},
    ]
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    service.import_path(source)
    assert service.index_status()["embedding"]["done"] == 0  # the gap this test is about

    def judged() -> dict[str, float]:
        hits = service.recall("travel plans", filters=Filters(min_relevance=0))
        return {h.title: h.relevance for h in hits if not h.title.startswith("Shelf")}

    waiting = judged()
    assert waiting["May"] >= FLOOR and waiting["June"] >= FLOOR
    assert len([t for t in waiting if t.startswith("Hosting")]) == 6
    assert all(level < FLOOR for t, level in waiting.items() if t.startswith("Hosting"))
    assert sorted(h.title for h in service.recall("travel plans")) == ["June", "May"]
    service.fill_vectors()
    assert service.index_status()["embedding"]["done"] == len(records)
    assert judged() == pytest.approx(waiting, abs=0.05)
