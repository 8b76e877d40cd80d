"""Tokenisation shared by indexing, queries and policies: English stemming + Chinese (jieba).

Pure functions, no index engine: importing this module loads neither Whoosh's index nor
jieba. jieba is imported (and its dictionary loaded) only when a text contains Chinese;
the Porter2 stemmer (a pure-Python algorithm that ships with Whoosh) on the first stem.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7a3]+")
# katakana words (ー included, ・ between names left out); runs of hiragana or Hangul
_KANA = re.compile(r"[\u30a1-\u30fa\u30fc-\u30ff]+|[\u3041-\u309f]+|[\uac00-\ud7a3]+")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")  # soft hyphen, zero-widths
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Whoosh's (NLTK's) English stop list, plus auxiliaries; changing it changes the index.
_ENGLISH_STOP = """a about above after again against all am an and any are as at be because been
before being below between both but by can did do does doing don down during each few for
from further had has have having he her here hers herself him himself his how i if in into is
it its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own s same she should so some such t than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with you your yours yourself yourselves"""
STOPWORDS = frozenset(_ENGLISH_STOP.split())
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
_loaded: dict[str, Any] = {}  # "jieba" -> the module, once its dictionary is loaded


def _segmenter() -> Any:
    with _jieba_lock:
        if "jieba" not in _loaded:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _loaded["jieba"] = jieba
    return _loaded["jieba"]


def warm_up() -> None:
    """Load jieba's dictionary now (about 0.6 s) rather than in the first Chinese query."""
    _segmenter()


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    word = IRREGULAR.get(word, word)
    return _porter2()(word) if word.isascii() else word


def porter_stem(word: str) -> str:
    """Porter2 alone (no irregular forms); whoosh's stemmer is loaded on first use."""
    return str(_porter2()(word))


@lru_cache(maxsize=1)
def _porter2() -> Any:
    from whoosh.lang.porter2 import stem as porter2

    return porter2


_PREFIX = re.compile(r"(?<![\w*])([^\W_]{3,})\*(?![\w*])")


MAX_PREFIXES = 4  # prefix words of one query; more stay ordinary words (each costs a scan)


def prefix_words(text: str) -> tuple[str, list[str]]:
    """The words of a query that end in ``*`` (``postgr*``: any word starting so),
    lowercased, and the query without them. At least 3 letters, at most MAX_PREFIXES of
    them; Chinese (segmented, not spelled in words) stays an ordinary word. A stop word is
    a prefix like any other (``not*``: Notion, notes)."""
    found: list[str] = []

    def take(match: re.Match[str]) -> str:
        word = match.group(1).lower()
        if _CJK.search(word) or len(found) >= MAX_PREFIXES or word in found:
            return match.group(1)
        found.append(word)
        return " "

    return _PREFIX.sub(take, text), found


def term_count(text: str) -> int:
    """How many distinct terms a query has: its words' (tokens) and its prefix words."""
    rest, prefixes = prefix_words(text)
    return len(set(tokens(rest))) + len(prefixes)


def tokens(text: str) -> list[str]:
    """Index/query terms of ``text``: lowercased, stop words dropped, stemmed; CJK segmented.

    Full-width letters and digits (ＡＢＣ１２３, typed with a Chinese input method) are the
    ASCII ones, and invisible characters (a zero-width space pasted from a web page, a
    soft hyphen) do not split a word."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    out: list[str] = []
    pos = 0
    for match in _CJK.finditer(text):
        out.extend(_latin_tokens(text[pos : match.start()]))
        out.extend(_cjk_tokens(match.group(0)))
        pos = match.end()
    out.extend(_latin_tokens(text[pos:]))
    return out


def _latin_tokens(text: str) -> Iterator[str]:
    if not text.isascii():  # one word however it was composed: a Mac's decomposed "Café",
        # and "İstanbul", whose lower case is i + a combining dot
        text = unicodedata.normalize("NFC", text.lower().replace("i\u0307", "i"))
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
        if not word or word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        yield stem(word)


def _cjk_tokens(run: str) -> Iterator[str]:
    """Chinese (and the Han of Japanese) segmented by jieba; a katakana word (オフィス)
    whole, hiragana and Korean by pairs of characters: jieba, a Chinese dictionary, splits
    kana into single characters, so オフィス matched フィットネス (フ, ィ, ス); a Korean word
    carries its particle (회의는: the meeting + topic), so 회의 found nothing."""
    pos = 0
    for match in _KANA.finditer(run):
        yield from _han_tokens(run[pos : match.start()])
        kana = match.group(0)
        if "\u30a0" <= kana[0] <= "\u30ff" or len(kana) == 1:
            yield kana
        else:
            yield from (kana[i : i + 2] for i in range(len(kana) - 1))
        pos = match.end()
    yield from _han_tokens(run[pos:])


def _han_tokens(run: str) -> Iterator[str]:
    if not run:
        return
    for piece in _segmenter().cut_for_search(run):
        word = piece.strip()
        if word.isalnum() and word not in _CJK_STOP:  # not the ・ between names
            yield word


_NAME = re.compile(r"\b([A-Z][a-z]+)(?:['’]s)?\b")
_MONTHS_AND_DAYS = """january february march april may june july august september october
november december monday tuesday wednesday thursday friday saturday sunday"""
CALENDAR = frozenset(_MONTHS_AND_DAYS.split())


def without_names(text: str, common: Callable[[str], bool]) -> str:
    """``text`` for the vector leg: the names common in the vault left out.

    A name is a capitalised word that does not start a sentence (month and weekday names
    are not names); ``common`` says whether so many memories hold a term that it cannot
    pick one out (the people a vault is mostly about). A small embedder reads such a name
    as the topic: "What did Caroline realise after the race?" lands nearest Caroline's
    other memories, not the one about the race, which the keyword leg finds by both words.
    A rarer name (a place, a project) says what the question is about and stays. A query
    in Title Case, or one that would keep no word of its own, is left as it is."""
    found = [m for m in _NAME.finditer(text) if _is_name(text, m)]
    words = _WORD.findall(text)
    if not found or 2 * sum(w[:1].isupper() for w in words) > len(words):
        return text
    out, last = [], 0
    for m in found:
        if all(common(t) for t in tokens(m.group(1))):
            out.append(text[last : m.start()])
            last = m.end()
    out.append(text[last:])
    kept = re.sub(r"\s+(?=[?.!,;:])", "", re.sub(r"\s{2,}", " ", "".join(out))).strip()
    return kept if tokens(kept) else text


def _is_name(text: str, match: re.Match[str]) -> bool:
    before = text[: match.start()].rstrip()
    return bool(before) and before[-1] not in ".?!:\"'“" and match.group(1).lower() not in CALENDAR
