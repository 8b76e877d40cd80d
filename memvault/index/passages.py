"""What of a memory the two indexes read: its full-text document, the chunks embedded for
it, and the per-process caches of embeddings (the model is shared too)."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import numpy as np

from ..models import Memory
from ..note import parse_time, strip_title
from ..text import tokens
from .fulltext import TextDoc
from .vectors import chunks

QUERY_CACHE = 4096
PASSAGE_CACHE = 1024


class VectorCache:
    """A small thread-safe LRU of embeddings keyed by (model name, text)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self._lock:
            vector = self._items.pop(key, None)
            if vector is not None:
                self._items[key] = vector
            return vector

    def put(self, key: tuple[str, str], vector: np.ndarray) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = vector
            while len(self._items) > self.size:
                self._items.pop(next(iter(self._items)))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


query_vectors = VectorCache(QUERY_CACHE)
passages = VectorCache(PASSAGE_CACHE)


def when_text(created: str | None) -> str:
    """Date words a question can hit: '2023-05-08 8 May 2023 Monday'."""
    moment = parse_time(created)
    if moment is None:
        return ""
    return f"{moment.date().isoformat()} {moment.day} {moment:%B %Y %A}"


# Link targets, bare URLs and HTML tags: many tokens (a URL is about 2 characters per
# token), little meaning for the model; the full-text index keeps them searchable.
_NOT_PROSE = re.compile(
    r"(?<=\])\([^)\s]*\)|<https?://[^>\s]*>|https?://[^\s)>\]]+|</?[A-Za-z][^<>\n]{0,200}>"
)


def embedding_texts(title: str, tags: Sequence[str], body: str) -> list[str]:
    """Chunks to embed: the title and tags ride along with every chunk, except a title
    that is only the text's own opening words (a title made from the first line): the
    model would read those words twice, a quarter of a short memory's tokens. Link
    targets, URLs and HTML tags are left out (``_NOT_PROSE``)."""
    text = _NOT_PROSE.sub("", strip_title(body))
    opening = title.removesuffix("...").removesuffix("…").strip()
    if opening and text.lstrip().startswith(opening):
        title = ""
    head = " ".join(filter(None, [title, "(" + ", ".join(tags) + ")" if tags else ""]))
    return [f"{head}\n{part}" if head else part for part in (chunks(text) or [""])]


def best_chunk(question: str, memory: Memory) -> str:
    """The chunk of ``memory`` (as embedded) holding most of the question's words."""
    wanted = set(tokens(question))
    chunks = embedding_texts(memory.title, memory.tags, memory.readable)
    return max(chunks, key=lambda chunk: len(wanted & set(tokens(chunk))))


def text_doc(memory: Memory) -> TextDoc:
    """What the full-text index stores of a memory (also for as-of search)."""
    return TextDoc(
        id=memory.id,
        path=memory.path,
        title=memory.title,
        tags=" ".join(memory.tags),
        body=memory.readable,
        when=when_text(memory.created),
        aliases=" ".join(memory.aliases),
    )
