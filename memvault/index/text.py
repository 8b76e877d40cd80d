"""Tokenisation shared by indexing and queries: English stemming + Chinese (jieba).

Pure functions. jieba is imported (and its dictionary loaded) only when a text
actually contains Chinese characters.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from whoosh.analysis import Token, Tokenizer
from whoosh.lang.porter2 import stem as _porter2
from whoosh.lang.stopwords import stoplists

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
STOPWORDS = frozenset(stoplists["en"]) | frozenset({"did", "does", "doing", "has", "had", "having"})
_CJK_STOP = frozenset("的了和是在我也就都而及与着或之吗呢吧啊")
# Irregular forms a suffix stemmer cannot join (ran/run, went/go ...), common in memories.
IRREGULAR = {
    "ran": "run",
    "went": "go",
    "gone": "go",
    "ate": "eat",
    "eaten": "eat",
    "saw": "see",
    "seen": "see",
    "bought": "buy",
    "brought": "bring",
    "thought": "think",
    "took": "take",
    "taken": "take",
    "made": "make",
    "met": "meet",
    "got": "get",
    "gotten": "get",
    "gave": "give",
    "given": "give",
    "found": "find",
    "told": "tell",
    "felt": "feel",
    "left": "leave",
    "kept": "keep",
    "began": "begin",
    "begun": "begin",
    "wrote": "write",
    "written": "write",
    "drove": "drive",
    "driven": "drive",
    "flew": "fly",
    "flown": "fly",
    "swam": "swim",
    "sang": "sing",
    "sung": "sing",
    "drew": "draw",
    "drawn": "draw",
    "taught": "teach",
    "caught": "catch",
    "built": "build",
    "spent": "spend",
    "sent": "send",
    "won": "win",
    "lost": "lose",
    "paid": "pay",
    "said": "say",
    "heard": "hear",
    "knew": "know",
    "known": "know",
    "grew": "grow",
    "grown": "grow",
    "became": "become",
    "came": "come",
    "held": "hold",
    "read": "read",
    "led": "lead",
    "fell": "fall",
    "children": "child",
    "kids": "kid",
    "mice": "mouse",
    "people": "person",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "was": "be",
    "were": "be",
    "is": "be",
}

_jieba_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def warm_up() -> None:
    """Load jieba's dictionary now (about 0.6 s) rather than in the first Chinese query."""
    _segmenter()


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    word = IRREGULAR.get(word, word)
    return _porter2(word) if word.isascii() else word


def tokens(text: str) -> list[str]:
    """Index/query terms of ``text``: lowercased, stop words dropped, stemmed; CJK segmented."""
    out: list[str] = []
    pos = 0
    for match in _CJK.finditer(text):
        out.extend(_latin_tokens(text[pos : match.start()]))
        out.extend(_cjk_tokens(match.group(0)))
        pos = match.end()
    out.extend(_latin_tokens(text[pos:]))
    return out


def _latin_tokens(text: str) -> Iterator[str]:
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
        if not word or word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        yield stem(word)


def _cjk_tokens(run: str) -> Iterator[str]:
    for word in _segmenter().cut_for_search(run):
        word = word.strip()
        if word and word not in _CJK_STOP:
            yield word


class MixedTokenizer(Tokenizer):  # type: ignore[misc]
    """Whoosh tokenizer over :func:`tokens` (the terms are final: no further filters)."""

    def __call__(  # type: ignore[override]
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for i, term in enumerate(tokens(value)):
            token.text = term
            token.boost = 1.0
            token.stopped = False
            if positions:
                token.pos = start_pos + i
            if chars:
                token.startchar = token.endchar = start_char
            yield token


def analyzer() -> MixedTokenizer:
    return MixedTokenizer()
