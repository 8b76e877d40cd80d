"""Names common in the vault are left out of the query's embedding (text.without_names):
the keyword leg matches them, and a small embedder would read them as the topic."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from memvault.index.language import language_means
from memvault.models import Filters
from memvault.service import MemoryService
from memvault.text import without_names

from .helpers import imported


def common_is(*names: str) -> Callable[[str], bool]:
    return lambda term: term in names


@pytest.mark.parametrize(
    ("question", "embedded"),
    [
        (
            "What did Caroline realize after the charity race?",
            "What did realize after the charity race?",
        ),
        ("What is Caroline's job?", "What is job?"),
        ("用户和 Caroline 去了哪里", "用户和 去了哪里"),
    ],
)
def test_a_common_name_inside_a_sentence_is_left_out(question: str, embedded: str) -> None:
    assert without_names(question, common_is("carolin")) == embedded


@pytest.mark.parametrize(
    "question",
    [
        "Caroline's job?",  # the name starts the sentence
        "Where did the user stay in Kyoto?",  # a name the vault does not hold often
        "What happened in May?",  # a month
        "Who is Caroline?",  # nothing of the question's own would be left
        "Caroline",
        "Caroline Race Results Summary",  # Title Case: no way to tell names
        "用户的狗叫什么",
    ],
)
def test_other_words_and_questions_are_embedded_as_asked(question: str) -> None:
    assert without_names(question, common_is("carolin", "race", "may", "result")) == question


CAROLINE = [
    "Caroline: I painted a sunset over the lake last weekend.",
    "Caroline: My new job at the library starts on Monday.",
    "Caroline: I adopted a grey cat called Oscar.",
    "Caroline: The book club is reading a mystery novel this month.",
    "Caroline: I planted tomatoes and basil in the garden.",
    "Caroline: My sister visited from Toronto for a week.",
    "Caroline: I started learning the guitar in the evenings.",
    "Caroline: We went camping by the river with friends.",
    "Caroline: I baked bread for the neighbours on Sunday.",
    "Caroline: The museum trip with my class was a lot of fun.",
    "Caroline: I repainted the kitchen a pale yellow.",
    "Caroline: My phone broke, so I bought a new one.",
]
ANSWER = "Melanie: Running the charity race made me realize how much self-care matters."


@pytest.fixture(scope="module")
def caroline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    """Twelve memories about Caroline and one about a charity race, by Melanie."""
    memories = [
        {"title": f"Note {n}", "content": c, "type": "event"}
        for n, c in enumerate([*CAROLINE, ANSWER])
    ]
    service = imported(tmp_path_factory.mktemp("names") / "vault", memories)
    yield service
    service.close()


QUESTION = "What did Caroline realize after the charity race?"


def cosines(service: MemoryService, text: str) -> dict[str, float]:
    """Every memory's cosine to ``text`` embedded as a query (the language taken out)."""
    index = service.indexing.index
    embedder = index.loader.get()
    assert embedder is not None
    means = language_means(embedder.name)
    assert means is not None
    vector = means.query(index._query_vector(embedder, text))
    found, _ = index.store.nearest_and(vector, 13, lambda i: True, (), means.passages)
    return {i: round(c, 4) for i, c in found.items()}


def nearest(service: MemoryService, text: str) -> list[str]:
    """Ids of every memory, nearest first to ``text``."""
    found = cosines(service, text)
    return sorted(found, key=lambda i: -found[i])


def test_the_vector_leg_ranks_by_the_question_without_the_common_name(
    caroline: MemoryService,
) -> None:
    """The vector candidates come in the order of the question with "Caroline" left out
    (twelve of the thirteen memories hold the name), not of the question as asked."""
    hits = caroline.search(QUESTION, k=13, mode="vector", filters=Filters(min_relevance=0.0))
    rewritten = without_names(QUESTION, caroline.indexing.index._common)
    assert rewritten == "What did realize after the charity race?"
    assert nearest(caroline, rewritten) != nearest(caroline, QUESTION)
    assert [h.doc.id for h in hits] == nearest(caroline, rewritten)


def test_relevance_is_judged_on_the_question_as_asked(caroline: MemoryService) -> None:
    """The cosines behind relevance (and the no-match floor) are the asked question's, the
    scale the calibration was fitted on, not the rewrite's that found the candidates."""
    hits = caroline.search(QUESTION, k=13, mode="vector", filters=Filters(min_relevance=0.0))
    rewritten = without_names(QUESTION, caroline.indexing.index._common)
    asked = cosines(caroline, QUESTION)
    assert asked != cosines(caroline, rewritten)
    assert {h.doc.id: h.why["cosine"] for h in hits} == {h.doc.id: asked[h.doc.id] for h in hits}


def test_how_many_memories_hold_a_name_follows_the_writes(svc: MemoryService) -> None:
    """``FullText.holding`` keeps its counts per index generation: a write that adds or
    forgets a memory with the name is counted by the next search, never a stale count."""
    text = svc.indexing.index.text
    assert text.holding("oscar") == (0, 0)
    first = svc.remember("Oscar the cat sleeps on the sofa.", type="fact")
    svc.ensure_synced()
    assert text.holding("oscar") == (1, 1)
    assert text.holding("oscar") == (1, 1)  # asked again, same generation
    svc.remember("The vet said Oscar is healthy.", type="fact", check_similar=False)
    svc.ensure_synced()
    assert text.holding("oscar") == (2, 2)
    svc.forget(first.memory.id, mode="delete")
    svc.ensure_synced()
    assert text.holding("oscar") == (1, 1)
