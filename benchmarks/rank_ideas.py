"""Ranking ideas of issue 14 part 4, rounds 2 and 3: measured offline on the dev split only.

Usage:
  python -m benchmarks.rank_ideas [--set main|bm25|prf|ontop|adaptive] [--only NAME ...]
      [--per-conv]

``main``: one row per idea (BM25 k1, b and field weights, question words, vector
candidates and normalisation, RM3 on the keyword leg, Rocchio on the vector leg, coverage
bonuses); ``bm25``: the k1 x b grid; ``prf``: RM3 from the memories' bodies only;
``ontop``: ideas on top of the kept k1 0.6, b 0.3. Every row of these is against variant
T hybrid with k1 1.2, b 0.75 (Whoosh's defaults, the product's before round 2).
``adaptive`` (round 3): the vector weight per query from how sure the keyword leg is
(the best candidate's coverage, its idf-weighted coverage, the share of the query's terms
the vault holds, the legs' agreement, the query's length, the cosine range), per
candidate (a coverage gate, a cap relative to the keyword part), and fusion on the
absolute relevance (rank.CALIBRATION); its rows are against the product as it is (k1 0.6,
b 0.3). ``--per-conv`` adds each dev conversation's row.

Each dev conversation's cached variant T vault (``benchmarks.tune_locomo``'s) is opened
once; per question the raw signals of every memory are computed once from the product's
own index (the full-text postings, the stored vectors with the language correction, the
query embedding): BM25F per term and field, cosines, the terms each memory contains. The
product's fusion (``rank.rank``: BM25 over the best BM25, min-max cosines of the 100
nearest, 100 + 100 candidates, recency and importance) is then re-computed in numpy with
one change per idea, so a row costs seconds, not a product run. The second row is the
product as it is (``MemoryService.search``); the re-computation with the product's K1 and
B must give the same figures (asserted). Categories 1-4 (n = 231)
and category 5 (n = 71); one question is 0.43 / 1.4 points.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from benchmarks.tune_locomo import line
from memvault.config import Settings
from memvault.eval import locomo, runner
from memvault.index import fulltext
from memvault.index.language import language_means
from memvault.index.rank import CALIBRATION, decay_rate, recency
from memvault.models import Filters
from memvault.note import parse_time
from memvault.text import tokens, without_names

POOL = 100
FIELDS = tuple(fulltext.FIELD_BOOSTS)


@dataclass
class Question:
    text: str
    category: int
    gold: frozenset[str]
    relevant: int
    terms: list[str]
    cosine: np.ndarray  # per memory (doc number order of the conversation)
    qvec: np.ndarray
    product: list[str] = field(default_factory=list)  # the product's top 50 ids
    alt: dict[str, np.ndarray] = field(default_factory=dict)  # rewrite -> cosines


@dataclass
class Conv:
    name: str
    ids: list[str]  # memory ids by number
    covers: list[frozenset[str]]
    lengths: dict[str, np.ndarray]  # field -> per memory
    avgfl: dict[str, float]
    recency: np.ndarray  # weights.recency x recency (constant importance left out)
    matrix: np.ndarray  # one (corrected) vector per memory (T: one chunk each)
    doc_terms: list[list[str]]  # every memory's body terms, for feedback
    df: dict[str, int]
    # every (term, field) of the vault: (memory numbers, term frequencies), and its idf
    postings: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
    idf: dict[tuple[str, str], float]
    questions: list[Question]


def load(
    cache: Path | None,
    split: str = "dev",
    rewrites: dict[str, Callable[[str, Callable[[str], tuple[int, int]]], str]] | None = None,
) -> list[Conv]:
    """``rewrites``: other query texts to embed per question (name -> rewrite of the
    text, given FullText.holding), their cosines in ``Question.alt``."""
    data = runner.default_data()
    assert data is not None, "LoCoMo data not found"
    settings, out = Settings(), []
    for conv in runner.pick(locomo.load(data), split):
        items = locomo.items(conv, "T")
        by_key = {i.key: i for i in items}
        service = runner.vault_for(
            conv.sample_id, "T", items, cache or runner.default_cache(), settings
        )
        try:
            index = service.indexing.index
            view = index.text._view()
            assert view.live.all(), "no deletions"
            ids = list(view.ids)
            lengths = {
                f: np.concatenate(
                    [view.cache.field_lengths(seg, r, f) for seg, r, _ in view.segments]
                )
                for f in FIELDS
            }
            avgfl = {f: view.searcher.avg_field_length(f) or 1 for f in FIELDS}
            embedder = index.loader.get()
            assert embedder is not None
            means = language_means(embedder.name)
            assert means is not None
            matrix, owners, starts, rows = index.store._search_matrix(means.passages)
            assert matrix is not None and len(starts) == len(owners) == len(ids)
            mat = np.vstack([matrix[starts[rows[i]]] for i in ids])
            now = runner.NOW  # as the product path of the eval
            docs = index.store.docs
            w = index.weights
            rec = np.array(
                [
                    w.recency
                    * recency(
                        parse_time(docs[i].updated or docs[i].created),
                        now,
                        decay_rate(docs[i].type, w),
                    )
                    for i in ids
                ]
            )
            doc_terms = [tokens(by_key[i].content) for i in ids]
            df: dict[str, int] = {}
            for terms in doc_terms:
                for t in set(terms):
                    df[t] = df.get(t, 0) + 1
            postings, idf = {}, {}
            questions = []

            for q in locomo.questions(conv, "T"):
                terms = list(dict.fromkeys(tokens(q.text)))
                # the product embeds the question without the names common in the vault
                text = without_names(q.text, index._common)
                qvec = means.query(index._query_vector(embedder, text))
                hits = service.search(
                    q.text, k=50, filters=Filters(include_archived=True, min_relevance=0.0)
                )
                questions.append(
                    Question(
                        q.text,
                        q.category,
                        q.gold,
                        sum(1 for i in items if i.covers & q.gold),
                        terms,
                        mat @ qvec,
                        qvec,
                        [h.doc.id for h in hits],
                        {
                            name: mat
                            @ means.query(
                                index._query_vector(embedder, rewrite(q.text, index.text.holding))
                            )
                            for name, rewrite in (rewrites or {}).items()
                        },
                    )
                )
            vocabulary = set(df) | {t for q in questions for t in q.terms}
            for t in vocabulary:
                for f in FIELDS:
                    parts = [
                        (found[0] + offset, found[1])
                        for seg, r, offset in view.segments
                        if (found := view.cache.postings(seg, r, f, t)) is not None
                    ]
                    if parts:
                        postings[(t, f)] = (
                            np.concatenate([p[0] for p in parts]),
                            np.concatenate([p[1] for p in parts]),
                        )
                        idf[(t, f)] = view.searcher.idf(f, t)
            out.append(
                Conv(
                    conv.sample_id,
                    ids,
                    [by_key[i].covers for i in ids],
                    lengths,
                    avgfl,
                    rec,
                    mat,
                    doc_terms,
                    df,
                    postings,
                    idf,
                    questions,
                )
            )
        finally:
            service.close()
    return out


# -- the product's ranking, re-computed with knobs ------------------------------------------
@dataclass(frozen=True)
class Knobs:
    k1: float = 1.2  # Whoosh's defaults, the product's until round 2
    b: float = 0.75
    boosts: tuple[tuple[str, float], ...] = tuple(fulltext.FIELD_BOOSTS.items())
    w_kw: float = 0.5
    w_vec: float = 0.3
    vec_pool: int = 100  # vector candidates
    kw_pool: int = 100
    # round 5: a vector candidate beyond the keyword cut keeps its BM25 (0 before)
    kw_of_vec: bool = False
    vec_norm: str = "minmax"  # minmax | max | absolute | z | z_all | minmax_all
    kw_norm: str = "max"  # max | absolute
    stop: frozenset[str] = frozenset()  # extra query stop terms
    prf_docs: int = 0  # RM3 on the keyword leg: feedback memories
    prf_terms: int = 10
    prf_weight: float = 0.3  # share of the expanded query
    prf_from: str = "bm25"  # bm25 | fused
    rocchio_docs: int = 0
    rocchio_weight: float = 0.5
    coverage: float = 0.0  # bonus x share of query terms present
    all_terms: float = 0.0  # bonus when every query term is present
    # round 3, adaptive fusion: the vector weight per query (``adapt``) or per candidate
    adapt: str = ""  # "" | cov_lin | cov_step | known_lin | known_step | idfcov_lin | spread
    adapt_a: float = 0.0  # strength: w_vec x (1 - a x signal), or x (1 - a) past the step
    adapt_t: float = 1.0  # the step's level
    gate: float = 2.0  # per candidate: the vector part x gate_keep at coverage >= gate
    gate_keep: float = 0.0
    cap: float = 0.0  # per candidate: vector part <= cap x keyword part (0: off)
    cap_kw_only: bool = False  # the cap only where BM25 found the candidate
    rel: float = 0.0  # fuse on absolute relevance (rank.CALIBRATION hybrid): its weight
    rel_only: bool = False  # relevance replaces the keyword and vector legs
    rel_logit: bool = False  # its logit (linear in the signals) instead of the sigmoid


def bm25(conv: Conv, q: Question, kn: Knobs, weights: dict[str, float]) -> np.ndarray:
    scores = np.zeros(len(conv.ids))
    boosts = dict(kn.boosts)
    for term, wt in weights.items():
        for f in FIELDS:
            if (term, f) not in conv.postings or not wt or not boosts.get(f):
                continue
            docs, tf = conv.postings[(term, f)]
            fl = conv.lengths[f][docs]
            norm = (1 - kn.b) + kn.b * fl / conv.avgfl[f]
            scores[docs] += (
                wt * boosts[f] * conv.idf[(term, f)] * (tf * (kn.k1 + 1)) / (tf + kn.k1 * norm)
            )
    return scores


def top(scores: np.ndarray, n: int) -> np.ndarray:
    matched = np.flatnonzero(scores > 0)
    return matched[np.lexsort((matched, -scores[matched]))][:n]


def vector_part(how: str, cos: np.ndarray, vec_c: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """The vector leg per memory, normalised ``how`` (``vec_c``: the vector candidates)."""
    vec = np.zeros(len(cos))
    v = cos[vec_c]
    if not len(vec_c):
        return vec
    if how == "minmax":  # the product's
        vec[vec_c] = (v - v.min()) / (v.max() - v.min())
    elif how == "minmax_all":  # over every candidate, keyword ones too
        c = cos[cand]
        vec[cand] = (c - c.min()) / (c.max() - c.min())
    elif how == "max":
        vec[vec_c] = np.maximum(0, v) / v.max()
    elif how == "absolute":  # the cosine itself (corrected cosines: about 0..0.6)
        vec[cand] = np.clip(cos[cand], 0, None) / 0.6
    elif how == "z_all":  # against every memory's cosine
        z = (cos - cos.mean()) / (cos.std() or 1)
        vec[cand] = np.clip(z[cand] / 3, 0, 1)
    elif how == "z":
        vec[vec_c] = np.clip((v - v.mean()) / (v.std() or 1) / 3, 0, None)
    return vec


def fuse(conv: Conv, q: Question, kn: Knobs, kw_scores: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """Fused score per memory, -inf for memories that are not candidates."""
    kw_c = top(kw_scores, kn.kw_pool)
    k = min(kn.vec_pool, len(cos))
    vec_c = np.argsort(-cos, kind="stable")[:k]
    if kn.kw_of_vec:
        kw_c = np.union1d(kw_c, vec_c[kw_scores[vec_c] > 0])
    cand = np.union1d(kw_c, vec_c)
    if not len(cand):
        return np.full(len(conv.ids), -np.inf)
    kw = np.zeros(len(conv.ids))
    if len(kw_c):
        if kn.kw_norm == "max":
            kw[kw_c] = kw_scores[kw_c] / kw_scores[kw_c].max()
        else:  # absolute: log1p bm25 on a fixed scale
            kw[kw_c] = np.minimum(1.0, np.log1p(kw_scores[kw_c]) / math.log1p(30.0))
    vec = vector_part(kn.vec_norm, cos, vec_c, cand)
    out = np.full(len(conv.ids), -np.inf)
    if not (kn.adapt or kn.gate <= 1.0 or kn.cap or kn.rel):
        out[cand] = kn.w_kw * kw[cand] + kn.w_vec * vec[cand] + conv.recency[cand]
        return out
    share = containing(conv, q, q.terms)
    w_vec = kn.w_vec * adaptive(conv, q, kn, share, kw_c, cos, vec_c)
    kw_part = kn.w_kw * kw[cand]
    vec_part = np.full(len(cand), w_vec) * vec[cand]
    if kn.gate <= 1.0:
        vec_part = np.where(share[cand] >= kn.gate, kn.gate_keep * vec_part, vec_part)
    if kn.cap:
        capped = np.minimum(vec_part, kn.cap * kw_part)
        vec_part = np.where(kw_part > 0, capped, vec_part) if kn.cap_kw_only else capped
    fused = kw_part + vec_part
    if kn.rel:
        level = calibrated(q, kw_scores, cos, share, kn.rel_logit)[cand]
        fused = (0 if kn.rel_only else fused) + kn.rel * level
    out[cand] = fused + conv.recency[cand]
    return out


def adaptive(
    conv: Conv,
    q: Question,
    kn: Knobs,
    share: np.ndarray,
    kw_c: np.ndarray,
    cos: np.ndarray,
    vec_c: np.ndarray,
) -> float:
    """The query's vector weight factor: how sure the keyword leg is, or how spread the
    vector leg is."""
    if not kn.adapt:
        return 1.0
    if kn.adapt.startswith("cov"):  # the best keyword candidate's share of the terms
        signal = float(share[kw_c].max()) if len(kw_c) else 0.0
    elif kn.adapt.startswith("known"):  # share of the query's terms the vault holds
        signal = known(conv, q.terms)
    elif kn.adapt.startswith("idfcov"):  # the best candidate's idf-weighted share
        signal = idf_coverage(conv, q.terms, kw_c)
    elif kn.adapt.startswith("agree"):  # share of BM25's top 10 in the vector leg's top 10
        signal = len(set(kw_c[:10].tolist()) & set(vec_c[:10].tolist())) / 10
    elif kn.adapt.startswith("short"):  # a query of few terms: 1 / its distinct terms
        signal = 1.0 / max(1, len(q.terms))
    else:  # spread: cosine range of the vector candidates against a reference range
        v = cos[vec_c]
        return min(1.0, float(v.max() - v.min()) / kn.adapt_t) if len(v) else 1.0
    if kn.adapt.endswith("_lin"):
        return 1.0 - kn.adapt_a * signal
    return 1.0 - kn.adapt_a if signal >= kn.adapt_t else 1.0


def known(conv: Conv, terms: list[str]) -> float:
    found = sum(1 for t in terms if any((t, f) in conv.postings for f in FIELDS))
    return found / max(1, len(terms))


def idf_coverage(conv: Conv, terms: list[str], kw_c: np.ndarray) -> float:
    n = len(conv.ids)
    weight = {t: math.log(1 + n / (1 + conv.df.get(t, 0))) for t in terms}
    total = sum(weight.values()) or 1.0
    has = np.zeros(len(conv.ids))
    for t in terms:
        has += weight[t] * holding(conv, t)
    return float(has[kw_c].max()) / total if len(kw_c) else 0.0


def holding(conv: Conv, term: str) -> np.ndarray:
    """Which memories hold ``term`` in any field."""
    mask = np.zeros(len(conv.ids), dtype=bool)
    for f in FIELDS:
        if (term, f) in conv.postings:
            mask[conv.postings[(term, f)][0]] = True
    return mask


def calibrated(
    q: Question, kw_scores: np.ndarray, cos: np.ndarray, share: np.ndarray, logit: bool = False
) -> np.ndarray:
    """rank.relevance of every memory with the hybrid fit (single script: reach 1); with
    ``logit`` its logit over 10 (linear in the signals)."""
    c = CALIBRATION["hybrid"]
    z = c.bias + c.keyword * np.log1p(np.maximum(0, kw_scores)) + c.coverage * share
    z = z + c.vector * cos
    if logit:
        return z / 10
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


def ranked(conv: Conv, q: Question, kn: Knobs) -> list[int]:
    terms = [t for t in q.terms if t not in kn.stop]
    weights = dict.fromkeys(terms, 1.0)
    kw_scores = bm25(conv, q, kn, weights)
    cos = q.cosine
    if kn.rocchio_docs:
        first = fuse(conv, q, kn, kw_scores, cos)
        fb = np.argsort(-first, kind="stable")[: kn.rocchio_docs]
        qv = q.qvec + kn.rocchio_weight * conv.matrix[fb].mean(axis=0)
        cos = conv.matrix @ (qv / np.linalg.norm(qv))
    if kn.prf_docs:
        if kn.prf_from == "bm25":
            fb = top(kw_scores, kn.prf_docs)
        else:
            first = fuse(conv, q, kn, kw_scores, cos)
            fb = np.argsort(-first, kind="stable")[: kn.prf_docs]
        # RM3-like: P(t|feedback) ~ sum over feedback memories of tf/len x doc weight, x idf
        mass: dict[str, float] = {}
        n = len(conv.ids)
        for d in fb:
            terms_d = conv.doc_terms[d]
            for t in terms_d:
                mass[t] = mass.get(t, 0.0) + 1.0 / len(terms_d)
        for t in list(mass):
            mass[t] *= math.log(n / conv.df.get(t, 1))
        picked = [t for t in sorted(mass, key=lambda t: -mass[t]) if t not in weights]
        picked = picked[: kn.prf_terms]
        if picked:
            total = sum(mass[t] for t in picked)
            extra = {t: kn.prf_weight * len(weights) * mass[t] / total for t in picked}
            kw_scores = bm25(conv, q, kn, {**weights, **extra})
    score = fuse(conv, q, kn, kw_scores, cos)
    if kn.coverage or kn.all_terms:
        share = containing(conv, q, terms)
        cand = np.isfinite(score)
        score[cand] += kn.coverage * share[cand]
        score[cand] += kn.all_terms * (share[cand] >= 1.0)
    order = np.lexsort((np.array(conv.ids), -score))
    return [int(i) for i in order[:50] if np.isfinite(score[i])]


def containing(conv: Conv, q: Question, terms: list[str]) -> np.ndarray:
    count = np.zeros(len(conv.ids))
    for t in terms:
        count += holding(conv, t)
    return count / max(1, len(terms))


def measure(convs: list[Conv], kn: Knobs | None) -> dict[str, dict[str, float]]:
    rows = []
    for conv in convs:
        pos = {i: n for n, i in enumerate(conv.ids)}
        for q in conv.questions:
            order = [pos[i] for i in q.product] if kn is None else ranked(conv, q, kn)
            covers = [conv.covers[i] for i in order]
            rows.append((q.category, locomo.score(covers, q.gold, q.relevant)))
    return locomo.aggregate(rows)


# Question words the stop list (memvault.text) keeps; "likely" stems to "like"
QUESTION_WORDS = frozenset(
    tokens("kind type sort would could might likely ever many much long also")
)
# what round 2 kept (memvault/index/fulltext.py K1, B) and round 5 (Index._beyond_the_cut)
KEPT = Knobs(k1=0.6, b=0.3, kw_of_vec=True)
BM25_ALONE = Knobs(vec_pool=0, w_vec=0.0)


def boosts(**change: float) -> tuple[tuple[str, float], ...]:
    return tuple({**fulltext.FIELD_BOOSTS, **change}.items())


def main_set() -> list[tuple[str, Knobs]]:
    """One row per idea of the brief, each against k1 1.2, b 0.75."""
    out = [("BM25 alone (re-computed)", BM25_ALONE)]
    out += [(f"BM25 k1 {k1}", Knobs(k1=k1)) for k1 in (0.6, 0.9, 1.5, 2.0)]
    out += [(f"BM25 b {b}", Knobs(b=b)) for b in (0.3, 0.5, 0.9, 1.0)]
    out += [
        ("field title 1.0", Knobs(boosts=boosts(title=1.0))),
        ("field title 3.0", Knobs(boosts=boosts(title=3.0))),
        ("field when 0", Knobs(boosts=boosts(when=0.0))),
        ("field when 0.5", Knobs(boosts=boosts(when=0.5))),
        ("field body 2.0", Knobs(boosts=boosts(body=2.0))),
    ]
    out += [("question words as stop words", Knobs(stop=QUESTION_WORDS))]
    out += [(f"vector candidates {n}", Knobs(vec_pool=n)) for n in (30, 50, 200, 1000)]
    out += [
        (f"vector norm {m}", Knobs(vec_norm=m))
        for m in ("max", "absolute", "z", "z_all", "minmax_all")
    ]
    out += [("keyword norm absolute (log1p bm25 / log1p 30)", Knobs(kw_norm="absolute"))]
    out += [
        (
            f"RM3 keyword from {src} docs {d} terms {t} weight {w}",
            Knobs(prf_docs=d, prf_terms=t, prf_weight=w, prf_from=src),
        )
        for src in ("bm25", "fused")
        for d in (3, 10)
        for t in (5, 20)
        for w in (0.2, 0.5)
    ]
    out += [
        (f"Rocchio vector docs {d} weight {w}", Knobs(rocchio_docs=d, rocchio_weight=w))
        for d in (3, 10)
        for w in (0.3, 1.0)
    ]
    out += [(f"coverage bonus {c}", Knobs(coverage=c)) for c in (0.05, 0.1, 0.2)]
    out += [(f"all query terms bonus {c}", Knobs(all_terms=c)) for c in (0.05, 0.1)]
    return out


def bm25_set() -> list[tuple[str, Knobs]]:
    """The k1 x b grid, and BM25 alone with some of its points (category 5's reference)."""
    out = [
        (f"k1 {k1} b {b}", Knobs(k1=k1, b=b))
        for k1 in (0.4, 0.6, 0.8, 1.0, 1.2)
        for b in (0.0, 0.2, 0.3, 0.4, 0.5, 0.75)
    ]
    out += [
        (f"BM25 alone k1 {k1} b {b}", replace(BM25_ALONE, k1=k1, b=b))
        for k1, b in ((1.2, 0.75), (0.6, 0.3), (0.8, 0.4), (0.9, 0.5))
    ]
    return out


def prf_set() -> list[tuple[str, Knobs]]:
    """RM3 with feedback terms from the memories' bodies only."""
    out = [
        (f"RM3 body docs {d} terms {t} weight {w}", Knobs(prf_docs=d, prf_terms=t, prf_weight=w))
        for d in (2, 3, 5)
        for t in (5, 10, 20)
        for w in (0.2, 0.3, 0.5)
    ]
    out += [
        (
            f"BM25 alone + RM3 docs {d} terms {t} weight {w}",
            replace(BM25_ALONE, prf_docs=d, prf_terms=t, prf_weight=w),
        )
        for d, t, w in ((3, 10, 0.3), (3, 20, 0.5))
    ]
    return out


def ontop_set() -> list[tuple[str, Knobs]]:
    """Other ideas on top of the kept k1 0.6, b 0.3."""
    return [
        ("k1 0.6 b 0.3", KEPT),
        ("+ RM3 3/10/0.3", replace(KEPT, prf_docs=3, prf_terms=10, prf_weight=0.3)),
        ("+ RM3 2/10/0.2", replace(KEPT, prf_docs=2, prf_terms=10, prf_weight=0.2)),
        ("+ vector norm minmax_all", replace(KEPT, vec_norm="minmax_all")),
        ("+ coverage bonus 0.1", replace(KEPT, coverage=0.1)),
        ("+ fusion 0.5 / 0.2", replace(KEPT, w_vec=0.2)),
        ("+ fusion 0.4 / 0.4", replace(KEPT, w_kw=0.4, w_vec=0.4)),
        ("+ fusion 0.5 / 0.4", replace(KEPT, w_vec=0.4)),
        ("+ question words as stop words", replace(KEPT, stop=QUESTION_WORDS)),
        ("+ field title 1.0", replace(KEPT, boosts=boosts(title=1.0))),
        ("BM25 alone, k1 0.6 b 0.3", replace(BM25_ALONE, k1=0.6, b=0.3)),
    ]


def adaptive_set() -> list[tuple[str, Knobs]]:
    """Round 3: adaptive fusion on top of the product (k1 0.6, b 0.3)."""
    out = [("k1 0.6 b 0.3 (the product, re-computed)", KEPT)]
    out += [("BM25 alone, k1 0.6 b 0.3", replace(BM25_ALONE, k1=0.6, b=0.3))]
    for sig in ("cov", "known", "idfcov"):
        out += [
            (f"{sig}: w_vec x (1 - {a} x signal)", replace(KEPT, adapt=f"{sig}_lin", adapt_a=a))
            for a in (0.25, 0.5, 0.75, 1.0)
        ]
        out += [
            (
                f"{sig}: w_vec x {1 - a:g} when signal >= {t}",
                replace(KEPT, adapt=f"{sig}_step", adapt_a=a, adapt_t=t),
            )
            for t in (0.5, 0.67, 0.8, 1.0)
            for a in (0.5, 1.0)
        ]
    for sig in ("agree", "short"):
        out += [
            (f"{sig}: w_vec x (1 - {a} x signal)", replace(KEPT, adapt=f"{sig}_lin", adapt_a=a))
            for a in (-1.0, -0.5, 0.5, 1.0)
        ]
    out += [
        (
            f"w_vec {w}, cov: x (1 - {a} x signal)",
            replace(KEPT, w_vec=w, adapt="cov_lin", adapt_a=a),
        )
        for w in (0.4, 0.5)
        for a in (0.5, 1.0)
    ]
    out += [
        (f"per candidate: vector x {k} at coverage >= {g}", replace(KEPT, gate=g, gate_keep=k))
        for g in (0.5, 0.67, 0.8, 1.0)
        for k in (0.0, 0.5)
    ]
    out += [
        (
            f"per candidate: vector <= {c} x keyword{' (BM25 hits only)' if o else ''}",
            replace(KEPT, cap=c, cap_kw_only=o),
        )
        for c in (0.5, 1.0, 2.0)
        for o in (False, True)
    ]
    out += [("relevance alone (+ recency)", replace(KEPT, rel=1.0, rel_only=True))]
    out += [
        (f"+ {r} x relevance", replace(KEPT, rel=r))
        for r in (0.05, 0.1, 0.2, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
    ]
    out += [
        (f"keyword 0.5 + {r} x relevance (no vector leg)", replace(KEPT, w_vec=0.0, rel=r))
        for r in (0.2, 0.3, 0.5)
    ]
    out += [
        (f"relevance alone, logit / 10, x {r}", replace(KEPT, rel=r, rel_only=True, rel_logit=True))
        for r in (0.5, 1.0, 2.0)
    ]
    out += [
        (f"relevance {r} + keyword {k} + vector {v}", replace(KEPT, w_kw=k, w_vec=v, rel=r))
        for r, k, v in (
            (1.0, 0.1, 0.0),
            (1.0, 0.1, 0.1),
            (1.0, 0.2, 0.1),
            (1.0, 0.0, 0.1),
            (2.0, 0.5, 0.3),
        )
    ]
    out += [
        (f"spread: w_vec x min(1, cosine range / {t})", replace(KEPT, adapt="spread", adapt_t=t))
        for t in (0.1, 0.15, 0.2, 0.25, 0.3)
    ]
    return out


SETS: dict[str, Callable[[], list[tuple[str, Knobs]]]] = {
    "adaptive": adaptive_set,
    "main": main_set,
    "bm25": bm25_set,
    "prf": prf_set,
    "ontop": ontop_set,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--set", choices=sorted(SETS), default="main")
    parser.add_argument("--per-conv", action="store_true")
    args = parser.parse_args()
    convs = load(args.cache)
    product = measure(convs, None)
    # round 3 compares with the product; the earlier sets with k1 1.2, b 0.75
    base = product if args.set == "adaptive" else measure(convs, Knobs())
    print("| idea (dev, n = 231 / 71) | R_any@5 | R_any@10 | nDCG@10 | cat 5 R_any@5 |")
    print("|---|---|---|---|---|")
    if args.set != "adaptive":
        print(line("variant T, hybrid, k1 1.2, b 0.75 (re-computed)", base, base), flush=True)
    print(line("variant T, hybrid, the product as it is", product, base), flush=True)
    same = measure(convs, Knobs(k1=fulltext.K1, b=fulltext.B))
    assert same == product, "the re-computation no longer matches the product"
    for name, kn in SETS[args.set]():
        if args.only and not any(o in name for o in args.only):
            continue
        print(line(name, measure(convs, kn), base), flush=True)
        if args.per_conv:
            for conv in convs:
                print(line(f"  {conv.name}", measure([conv], kn), measure([conv], None)))


if __name__ == "__main__":
    main()
