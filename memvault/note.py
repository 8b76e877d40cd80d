"""The rules of a memory's Markdown body, in one place. Pure: text in, text out.

A body starts with a ``# title`` line, then the content. Inline ``#tags`` count as tags.
Times are ISO text; newest-first ordering compares real instants, not strings.
"""

from __future__ import annotations

import bisect
import datetime as dt
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

# Every pattern below stays linear on a hostile line (a megabyte of ``[``, `````, ``~``,
# ``<!--``, spaces...): a match may start only where a run starts, and a run it cannot give
# back is taken possessively (``*+``). benchmarks/hostile_parse.py measures them.
_HEADING = re.compile(r"^#[ \t]+(\S[^\n]*)", re.MULTILINE)  # its closing #s: see heading()
_INLINE_TAG = re.compile(r"(?:^|(?<=\s))#([\w/-]+)")
# Where Obsidian sees no tags and no links: fenced code, inline code, comments, URLs.
# a fence may be indented (in a list item) or quoted (in a callout); a backtick fence's
# info string holds no backtick (```x``` on a line is inline code)
_FENCE = re.compile(
    r"^[ \t>]*+(`{3,}+(?=[^`\n]*\n)|~{3,}+)[^\n]*\n.*?(?:^[ \t>]*+\1[`~]*+[ \t]*$|\Z)", re.S | re.M
)
_TICKS = re.compile(r"`+")
_BLOCK_MARKS = ("```", "~~~", "%%", "<!--")  # where a code block or a comment may start
_BLANK_LINE = re.compile(r"\n[ \t]*+(?=\n)")  # ends a paragraph (and an inline code span)
_COMMENTS = (("%%", "%%"), ("<!--", "-->"))
_SCHEME = re.compile(r"[\w+.-]")  # a URL's scheme (``https``, ``git+ssh``) of these
_URL_REST = re.compile(r"[^\s<>()\[\]]+")
# ``[label](target "title")``: a label may hold balanced brackets (``[see [1]](x.md)``, not
# ``[[x]]``: a wikilink), a target in angle brackets spaces, a bare one balanced brackets
# (``Note%20(draft).md``)
_MD_LINK = re.compile(
    r"(!?)\[(?!\[)((?:[^\[\]\n]|\[[^\[\]\n]*\])*+)\]"
    r"\(\s*(?:<([^<>\n]+)>|((?:[^()\s]|\([^()\s]*\))+))"
    r"(?:\s+\"[^\"]*\")?\s*\)"
)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n|#^]*)(?:[#^]([^\[\]\n|]*))?(?:\|([^\[\]\n]*))?\]\]")
# Scripts written without spaces between words (a snippet matches their character pairs)
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
TITLE_LIMIT = 60
SNIPPET_WIDTH = 240
# An Obsidian Excalidraw drawing (``name.excalidraw.md``, frontmatter ``excalidraw-plugin``):
# its text elements are words a person wrote; its scene data (base64 or JSON, in a comment)
# and the banner Obsidian shows outside the drawing view are not
EXCALIDRAW_KEY = "excalidraw-plugin"
_DRAWING_DATA = re.compile(
    r"^#{1,2} Drawing[ \t]*\n```(?:compressed-json|json)[ \t]*\n.*?(?:^```[ \t]*$|\Z)", re.S | re.M
)
_DRAWING_BANNER = re.compile(r"^==⚠\s*Switch to EXCALIDRAW VIEW.*$", re.M)
# the plugin's own headings, its embedded files' hashes and the block id after each text
_DRAWING_HEADINGS = re.compile(
    r"^#{1,3} (?:Excalidraw Data|Text Elements|Element Links|Embedded Files)[ \t]*$", re.M
)
_DRAWING_FILES = re.compile(r"^[0-9a-f]{40}: \[\[[^\]\n]*\]\][ \t]*$", re.M)
_BLOCK_ID = re.compile(r"(?<![ \t])[ \t]++\^[A-Za-z0-9-]++[ \t]*$", re.M)


def heading(body: str) -> str | None:
    """The first Markdown heading's text, or None: not a ``# comment`` in a code block or
    a heading in an HTML or Obsidian comment."""
    match = _HEADING.search(body)
    if match is not None and any(mark in body[: match.end()] for mark in _BLOCK_MARKS):
        # a block may hold it: blank them (a "#" right before a blanked comment is no heading)
        found = _HEADING.finditer(_without_blocks(body))
        match = next((m for m in found if body[m.start() + 1] in " \t"), None)
    if match is None:
        return None
    text = match.group(1).rstrip()  # a block blanked: the same text, it is on one line
    closed = text.rstrip("#")  # ``# Title ##``: a closing run of #s, after a space
    return closed.rstrip() if closed.endswith((" ", "\t")) else text


def title_from(content: str, limit: int = TITLE_LIMIT) -> str:
    """A title made from the content's first line, cut at a word near ``limit``: at a
    space in its last third (Chinese has none between words, so 我们的 CRM 是 Salesforce，
    销售团队… is not cut back to 我们的 CRM 是), else at ``limit``, never inside an emoji
    sequence or an accented letter."""
    line = content.strip().split("\n", 1)[0].lstrip("# ").strip()
    if len(line) <= limit:
        return line
    head = _clip(line, limit)
    space = head.rfind(" ")
    return (head[:space] if space >= limit * 2 // 3 else head).rstrip(" ,，、;；:：") + "..."


def compose(title: str, content: str) -> str:
    """The body of a memory: ``# title``, a blank line, the content (kept when it has a title)."""
    content = content.strip()
    if content.startswith("# "):
        return content + "\n"
    return f"# {title}\n\n{content}\n"


def kept_title(title: str, body: str, content: str | None) -> str:
    """The title a memory keeps when its text becomes ``content`` (None: unchanged): its
    own, unless it was only the old text's first line, which the new text's replaces."""
    if content is None or title != title_from(strip_title(body)):
        return title
    return title_from(content)


def strip_title(body: str) -> str:
    """The body without its leading ``# title`` line."""
    body = body.strip()
    if body.startswith("# "):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    return body.strip()


def reader_text(body: str, meta: dict[str, Any]) -> str:
    """The body as a reader sees it, for the index, snippets and context: an Excalidraw
    drawing's without its scene data and banner (the file itself keeps them, of course)."""
    if EXCALIDRAW_KEY not in meta:
        return body
    for pattern in (_DRAWING_DATA, _DRAWING_BANNER, _DRAWING_HEADINGS, _DRAWING_FILES, _BLOCK_ID):
        body = pattern.sub("", body)
    return body


def snippet(body: str, query: str, width: int = SNIPPET_WIDTH) -> str:
    """The body line sharing most words with the query, cut to ``width`` characters
    around the first of them. Chinese, Japanese and Korean are written without spaces:
    their words are the query's pairs of characters (上线 in 下周什么时候上线)."""
    wanted = {w.lower() for w in query.split() if len(w) > 2 and not _UNSPACED.search(w)}
    for run in _UNSPACED.findall(query):
        wanted.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    lines = [ln.strip() for ln in body.split("\n") if ln.strip() and not ln.startswith("# ")]
    if not lines:
        return _clip(body.strip(), width)
    best = max(lines, key=lambda ln: sum(w in ln.lower() for w in wanted))
    if len(best) <= width:
        return best
    # found in the line itself: a lower-cased line may be longer (Turkish İ is two letters),
    # by the query's words as written too (lower-cased, İstanbul is no longer İstanbul)
    words = wanted | {w for w in query.split() if w.lower() in wanted}
    at = min((m.start() for w in words if (m := re.search(re.escape(w), best, re.I))), default=0)
    start = 0 if at < width // 2 else _grapheme_start(best, at - width // 4)
    head = "..." if start else ""
    return head + _clip(best[start:], width - len(head), "...")


def _grapheme_start(text: str, at: int) -> int:
    """``at``, moved back to where a character with all its marks and joiners starts."""
    while at > 0 and (_attached(text[at]) or text[at - 1] == "\u200d" or _half_flag(text, at)):
        at -= 1
    return at


def _attached(char: str) -> bool:
    """Whether ``char`` belongs to the one before it: a combining mark, a joiner, a skin
    tone, a tag of a flag, a decomposed Korean syllable's vowel or final consonant."""
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char in "\u200c\u200d"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or "\U000e0020" <= char <= "\U000e007f"
        or "\u1160" <= char <= "\u11ff"
    )


def _half_flag(text: str, at: int) -> bool:
    """Whether ``at`` falls between the two letters of a flag (🇨🇳)."""
    flags = 0
    while at - flags > 0 and "\U0001f1e6" <= text[at - flags - 1] <= "\U0001f1ff":
        flags += 1
    return flags % 2 == 1 and "\U0001f1e6" <= text[at] <= "\U0001f1ff"


def _clip(text: str, width: int, mark: str = "") -> str:
    """``text`` at most ``width`` characters, never cutting an accent from its letter or
    an emoji sequence (👨‍👩‍👧, 👍🏽) in two."""
    if len(text) <= width:
        return text
    return text[: _grapheme_start(text, width - len(mark))].rstrip() + mark


def cut(text: str, width: int, mark: str = "…") -> str:
    """``text`` on one line, at most ``width`` characters."""
    return _clip(" ".join(text.split()), width, mark)


@dataclass(frozen=True)
class Link:
    """One link in a body: ``[[target#heading|label]]``, ``![[embed]]`` or ``[label](target)``."""

    target: str  # as written: a note name, title, alias or relative path (no ``#heading``)
    heading: str | None = None
    label: str | None = None
    embed: bool = False
    wiki: bool = True  # False for a Markdown ``[label](target)`` link


def prose(body: str) -> str:
    """The body with code, comments and URLs blanked out: where tags and links live."""
    body = _without_blocks(body)
    return _blank(body, _code_spans(body))


def _without_blocks(body: str) -> str:
    """The body with fenced code and comments blanked out."""
    if "```" in body or "~~~" in body:
        body = _FENCE.sub(lambda m: " " * len(m.group(0)), body)
    return _blank(body, _comments(body))


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each (start, end) span, in order, overwritten by spaces."""
    parts, at = [], 0
    for start, end in spans:
        parts += [text[at:start], " " * (end - start)]
        at = end
    return "".join(parts) + text[at:]


def _comments(text: str) -> Iterator[tuple[int, int]]:
    """The spans of ``%% comments %%`` and ``<!-- comments -->``, leftmost first; one never
    closed hides nothing (found with ``str.find``, not a regex that would try every start
    of a megabyte of ``<!--``)."""
    at, ahead = 0, {kind: -1 for kind in _COMMENTS if kind[0] in text}  # its next opening
    while ahead:
        for (start, end), found in list(ahead.items()):
            if found < at and (found := text.find(start, at)) < 0:
                del ahead[start, end]  # none left
            else:
                ahead[start, end] = found
        if not ahead:
            return
        (start, end), begin = min(ahead.items(), key=lambda kind: kind[1])
        close = text.find(end, begin + len(start))
        if close < 0:  # nothing after it closes one of its kind: stop looking for them
            del ahead[start, end]
            continue
        yield begin, close + len(end)
        at = close + len(end)


def _urls(text: str) -> Iterator[tuple[int, int]]:
    """The spans of URLs (``scheme://rest``), from each ``://`` back to its scheme's first
    letter after a word's edge: each character is looked at about once (a regex would try
    every letter of a megabyte of ``a-a-a-`` as a scheme's start)."""
    at = 0
    while (colon := text.find("://", at)) >= 0:
        start = colon
        while start > at and _SCHEME.match(text[start - 1]):
            start -= 1
        first = (i for i in range(start, colon) if _letter(text, i, start))
        begin, rest = next(first, -1), _URL_REST.match(text, colon + 3)
        if begin < 0 or rest is None:
            at = colon + 1
            continue
        yield begin, rest.end()
        at = rest.end()


def _letter(text: str, i: int, start: int) -> bool:
    """Whether a scheme may start at ``i``: an ASCII letter at a word's edge."""
    return text[i].isascii() and text[i].isalpha() and (i == start or text[i - 1] in "+.-")


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """The spans of inline code: a run of backticks up to the next run of the same length
    in its paragraph (CommonMark); a run that none closes is text (a lone ` in one
    paragraph and one three paragraphs later hide nothing between them)."""
    if "`" not in text:
        return
    runs = [m.span() for m in _TICKS.finditer(text)]
    breaks = [m.start() for m in _BLANK_LINE.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    i = 0
    while i < len(runs):
        same = by_length[runs[i][1] - runs[i][0]]
        later = bisect.bisect_right(same, i)
        if later == len(same) or _paragraph(breaks, runs[same[later]][0]) != _paragraph(
            breaks, runs[i][0]
        ):
            i += 1
            continue
        yield runs[i][0], runs[same[later]][1]
        i = same[later] + 1


def _paragraph(breaks: list[int], at: int) -> int:
    """The number of the paragraph ``at`` is in, given where blank lines are."""
    return bisect.bisect_right(breaks, at)


def links(body: str) -> list[Link]:
    """Wiki and Markdown links of the body's prose, in order (external URLs excluded)."""
    text = prose(body)
    found: list[tuple[int, Link]] = []
    for m in _WIKILINK.finditer(text):
        # in a table the label's bar is written `\|`: that backslash is not the target's
        target = m.group(2).strip().removesuffix("\\").rstrip()
        if target or m.group(3):
            label = (m.group(4) or "").strip() or None
            heading = (m.group(3) or "").strip().removesuffix("\\").rstrip() or None
            found.append((m.start(), Link(target, heading, label, bool(m.group(1)))))
    for m in _MD_LINK.finditer(text):
        raw = (m.group(3) or m.group(4)).strip()
        if ":" in raw.split("/", 1)[0] or raw.startswith("#"):
            continue  # a URL (any scheme) or an anchor in this note
        target, _, heading = (unquote(part) for part in raw.partition("#"))  # %23 is a "#"
        found.append(
            (
                m.start(),
                Link(target, heading or None, m.group(2) or None, bool(m.group(1)), wiki=False),
            )
        )
    return [link for _, link in sorted(found, key=lambda pair: pair[0])]


# starts a Markdown link's target in a record's links (Obsidian tries its path again as
# written, a wikilink's not); no target holds it: a wikilink's cannot, a Markdown link's
# ends at its first "#"
MARKDOWN = "#"


def link_target(source: str, link: Link) -> str:
    """What ``link`` in the note at ``source`` names: a wikilink's target as written, a
    Markdown link's relative path made vault-relative, after :data:`MARKDOWN` ("" for a
    link to the note itself)."""
    if link.wiki or not link.target:
        return link.target.strip()
    if link.target.startswith("/"):
        return MARKDOWN + link.target.lstrip("/")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), link.target))
    return MARKDOWN + (link.target if joined.startswith("..") else joined)


def inline_tags(body: str) -> list[str]:
    """``#tag`` words of the body's prose, as Obsidian reads them.

    Not in code, comments, URLs or link targets; not headings (``# x``) and not ``#123``.
    """
    text = prose(body)
    text = _blank(text, _urls(text))
    text = _WIKILINK.sub(" ", _MD_LINK.sub(" ", text))
    return list(dict.fromkeys(t for t in _INLINE_TAG.findall(text) if not t.isdigit()))


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags without ``#``, blanks or repeats, in the given order."""
    cleaned = (t.strip().lstrip("#") for t in tags)
    return list(dict.fromkeys(t for t in cleaned if t))


def parse_time(value: object, naive_tz: dt.tzinfo = dt.UTC) -> dt.datetime | None:
    """ISO text to an aware datetime (naive times get ``naive_tz``); None if unreadable."""
    if value is None or value == "":
        return None
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=naive_tz)


def timestamp(value: str | None) -> float:
    """Seconds since the epoch of an ISO time; missing or unreadable times are the oldest."""
    moment = parse_time(value)
    return moment.timestamp() if moment is not None else float("-inf")


def newest_first(value: str | None) -> float:
    """Sort key putting the newest time first (ascending sort), missing times last."""
    return -timestamp(value)
