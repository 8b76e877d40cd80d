"""The checkable facts a memory states, and how two memories differ in them. Pure.

A correction usually keeps the sentence and changes one fact: a number, a date, a time, a
weekday, a name, or a negation ("Dr. Okafor on Thursday at 3pm" / "...at 4pm", 四张 / 三张,
刘浩 / 王浩, 过敏 / 不过敏). Embedding cosines cannot see such a change (0.99+), so the
dedup verdict (:func:`memvault.policy.relation`) compares the facts extracted here.

Facts are ``(kind, value)`` pairs with normalised values, so that paraphrases agree:
"3pm", "15:00" and 下午三点 are all ``("time", "3:00")`` plus ``("daypart", "pm")``;
"six", "6" and 六 are ``("number", "6")``; "March 16", 3月16日 and 三月十六号 are
``("date", "3-16")``.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import pairwise

from .text import STOPWORDS, porter_stem

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4}
_CN_DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_BIG = {"万": 10_000, "亿": 100_000_000}
_BIG = _CN_BIG | {"k": 1000, "K": 1000}  # after digits: 12万, 1.5亿, 120k
_CN_NUM = "零〇一二两三四五六七八九十百千万亿"
# Words that count (years old, pieces, years, hours...): 半 after one adds a half (三岁半 is
# 3.5), while 一半 alone is a half of something, no number
_MEASURE = "个|岁|年|天|周|星期|月|小时|钟头|分钟|公里|千米|公斤|斤|米|倍|圈|层|杯|碗|瓶"
_NUM_ZH = rf"(?:\d+|[{_CN_NUM}]+)"
_FACT, _KEEP = "\ue000", "\ue001"  # private-use marks: a fact's span; a span to keep as text
# 五点五 before a unit is 5.5 (五点五公里, 五点五倍, 五点五%: its % or 元 already a fact's
# mark), not 5:05 (五点五分, 下午五点五 are times)
_DECIMAL_UNIT = (
    "公里|千米|厘米|毫米|米|公斤|千克|克|斤|毫升|升|吨|英里|磅|亩|平方|立方|倍|度|折|成|级|"
    f"万|亿|个|岁|年|天|周|小时|分钟|秒|元|块|{_FACT}"
)
# Common words that contain a numeral but state no number ("together", "always", "very" ...).
_CN_NOT_NUMBERS = re.compile(
    "一起|一直|一下|一定|一样|一般|一些|一切|一致|一边|一旦|一向|一再|一律|一同|一贯|一会|"
    "一点点|有一点|统一|唯一|万一|十分|一方面|不一"
    # 千万不要: "by no means", no 10,000,000 (but 三千万不到 is 30,000,000 "not reached")
    "|(?<![零〇一二两三四五六七八九十百])千万(?=[不别要记注小莫])|(?<![零〇一二两三四五六七八九十百千])万万(?=[不没])"
)

_EN_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen"
_EN_UNITS += " fourteen fifteen sixteen seventeen eighteen nineteen"
_EN_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_EN_ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth"
_EN_NUMBERS: dict[str, float] = {w: i for i, w in enumerate(_EN_UNITS.split())}
_EN_NUMBERS |= {w: 20 + 10 * i for i, w in enumerate(_EN_TENS.split())}
_EN_NUMBERS |= {w: i + 1 for i, w in enumerate(_EN_ORDINALS.split())}
_EN_NUMBERS |= {"hundred": 100, "thousand": 1000, "dozen": 12, "twice": 2, "half": 0.5}
_MONTH_NAMES = "january february march april may june july august september october november"
_MONTH_NAMES += " december"
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES.split())}
_MONTH_ABBR = {m[:3]: i for m, i in _MONTHS.items()} | {"sept": 9}
_MONTH = r"(?P<month>(?:January|February|March|April|May|June|July|August|September|October|"
_MONTH += r"November|December)|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?)"
_WEEKDAYS = {"mon": 1, "tues": 2, "wednes": 3, "thurs": 4, "fri": 5, "satur": 6, "sun": 7}
_ZH_WEEKDAYS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}
_ZH_PM = ("下午", "傍晚", "晚上", "夜里", "今晚")
_ZH_AM = ("上午", "早上", "早晨", "凌晨")

# A currency: a symbol or code before an amount ($, €, HK$, USD) or a word or code after one
# (美元, 元, euros): "$1200" / "€1200" and 100元 / 100美元 are different amounts.
_CURRENCIES = {"$": "usd", "us$": "usd", "dollar": "usd", "dollars": "usd", "bucks": "usd"}
_CURRENCIES |= {"美元": "usd", "美金": "usd", "hk$": "hkd", "港币": "hkd", "港元": "hkd"}
_CURRENCIES |= {"c$": "cad", "ca$": "cad", "a$": "aud", "au$": "aud", "s$": "sgd", "nt$": "twd"}
_CURRENCIES |= {"€": "eur", "euro": "eur", "euros": "eur", "欧元": "eur", "£": "gbp", "英镑": "gbp"}
_CURRENCIES |= {"¥": "cny", "元": "cny", "块": "cny", "块钱": "cny", "人民币": "cny"}
_CURRENCIES |= {"yuan": "cny", "rmb": "cny", "日元": "jpy", "円": "jpy", "yen": "jpy"}
_CURRENCIES |= {"₹": "inr", "rupees": "inr", "₩": "krw", "韩元": "krw", "卢布": "rub"}
_CODES = "usd|eur|gbp|jpy|cny|rmb|hkd|cad|aud|chf|inr|krw|sgd"
_AMOUNT = rf"[\d{_CN_NUM}]"
_CURRENCY = re.compile(
    rf"(?<![A-Za-z])(?P<sym>(?:US|HK|NT|CA|AU|[CAS])?\$|[€£¥₹₩])(?=\s?[-−]?{_AMOUNT})"
    rf"|\b(?P<code>{_CODES})(?=\s?{_AMOUNT})"
    rf"|(?:(?<={_AMOUNT})|(?<={_AMOUNT}\s))(?:(?P<zh>美元|美金|港币|港元|欧元|英镑|日元|韩元|卢布|"
    rf"人民币|元|块钱|块(?![\u4e00-\u9fff])|円)|(?P<word>dollars?|bucks|euros?|yuan|yen|rupees|"
    rf"{_CODES})\b)",
    re.IGNORECASE,
)

_PICTURE = "[\u2600-\u27bf\U0001f000-\U0001faff][\ufe0f\U0001f3fb-\U0001f3ff]*"
EMOJI = re.compile(f"[\U0001f1e6-\U0001f1ff]{{2}}|(?:{_PICTURE}\u200d?)*{_PICTURE}")

# Patterns, most specific first: each match is masked before the next pattern runs, so the
# 16 of "March 16" is a date and not also a number.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("currency", _CURRENCY),
    # 20%, 20 percent and 百分之二十 say the same; the number is read after
    (
        "percent",
        re.compile(
            rf"%|\bper\s*cent\b|百分之(?=[\d{_CN_NUM}])",
            re.IGNORECASE,
        ),
    ),
    # A sign that ends a short name is part of it: C++ / C# / C, blood type A+ / A-, O+ / O-.
    (
        "signed",
        re.compile(
            # ASCII edges: in Python \w and \b read Chinese as letters (用户是O+型血)
            r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]*(?:\+\+|#)(?![A-Za-z0-9_+#])"
            r"|(?<![A-Za-z0-9_])[A-Za-z]{1,2}[+\-−](?![A-Za-z0-9_+#\-−])"
        ),
    ),
    # An emoji says something (the team's sign 👍🏽, a favourite 😂): a sequence (skin tone,
    # ZWJ family, flag) is one value, so 😂 / 😭 and 👍🏽 / 👍🏿 are a change
    ("emoji", EMOJI),
    ("iso", re.compile(r"(?<!\d)(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)")),
    ("slash", re.compile(r"(?<![\d.])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{2,4}))?(?!\d)")),
    (
        "zh_date",
        re.compile(
            rf"(?:(?P<y>\d{{4}}|[{_CN_NUM}]{{4}})\s*年\s*)?(?P<m>\d{{1,2}}|[一二三四五六七八九十]{{1,3}})"
            rf"\s*月(?:\s*(?P<d>\d{{1,2}}|[一二三四五六七八九十]{{1,3}})\s*[日号號])?"
        ),
    ),
    (
        "en_date",
        re.compile(
            rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?"
            rf"|\b(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>[A-Z][a-z]+\.?)"
            rf"(?:,?\s+(?P<y2>\d{{4}})\b)?"
        ),
    ),
    ("en_month", re.compile(rf"\b{_MONTH}(?![a-z])")),
    (
        "en_time",
        re.compile(
            r"(?<![\d:.])(?P<h>\d{1,2})(?:[:.](?P<mi>\d{2}))?\s*(?P<p>[ap])\.?m\b\.?"
            # a time only after at/by/until... ("take 2 in the morning" is a count)
            r"|(?:(?<=\bat\s)|(?<=\bby\s)|(?<=around\s)|(?<=until\s)|(?<=\btill\s)"
            r"|(?<=\bfrom\s)|(?<=before\s)|(?<=\bafter\s)|(?<=\bto\s))"
            r"(?P<hw>\d{1,2})(?::(?P<miw>\d{2}))?(?:\s+o'clock)?\s+"
            r"(?:in\s+the\s+(?P<part>morning|afternoon|evening)|at\s+(?P<night>night))\b"
            r"|(?<![\d:.])(?P<h24>[01]?\d|2[0-3]):(?P<mi24>[0-5]\d)(?![\d:])"
            r"|\b(?P<word>noon|midnight)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "zh_time",
        re.compile(
            # linear on a hostile line (a run of spaces or of 一): starts only where the hour
            # starts, and gives back no space or digit it took
            rf"(?:(?P<part>上午|早上|早晨|凌晨|中午|下午|傍晚|晚上|夜里|今晚)\s*+)?"
            rf"(?<![\d{_CN_NUM}])(?P<h>\d++|[{_CN_NUM}]++)\s*+"
            rf"(?:[点點](?!\s*{_NUM_ZH}\s*(?:{_DECIMAL_UNIT}))|时)"
            rf"(?:(?P<half>半)|(?P<quarter>[一三])刻|(?P<mi>{_NUM_ZH})分?)?"
        ),
    ),
    (
        "weekday",
        re.compile(
            r"\b(?P<en>mon|tues|wednes|thurs|fri|satur|sun)days?\b"
            r"|(?:周|星期|礼拜)(?P<zh>[一二三四五六日天])",
            re.IGNORECASE,
        ),
    ),
    # every other week / 隔周: every second one, not every one ("other" is a stop word)
    ("alternate", re.compile(r"\bevery\s+other\b|隔(?=[周天日月年])|每隔一", re.IGNORECASE)),
    # A word of letters and digits (zq0x0k, us-east-1, A12345, v2.1) or digits joined by
    # dashes (4-7-1-9, 555-1234) is one value: the order of its parts is the value.
    (
        "code",
        re.compile(r"(?<![A-Za-z0-9_.,:-])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*(?![A-Za-z0-9_])"),
    ),
    ("not_number", _CN_NOT_NUMBERS),
    (
        "number",
        re.compile(
            # a sign (-5, 零下五, minus 5) is part of the value: -5 degrees is not 5 degrees
            rf"(?P<minus>(?<![A-Za-z0-9_.,:/\-−])[-−](?=\d)|零下\s*|\bminus\s+)?"
            rf"(?:(?<![\d.,])(?P<digits>\d+(?:[.,]\d+)*(?:[点點]\d+)?)(?P<big>[万亿]|[kK](?![A-Za-z0-9]))?"
            rf"|(?P<zh>[{_CN_NUM}]+(?:[点點][{_CN_NUM[:12]}]+[万亿]?)?)"  # 五点五: 5.5
            r"|\b(?P<en>(?:" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + r")"
            r"(?:-(?:one|two|three|four|five|six|seven|eight|nine))?)\b)"
            rf"(?P<half>(?:{_MEASURE})半)?",  # 三岁半, 两个半小时, 一年半: and a half
            re.IGNORECASE,
        ),
    ),
)

_NEGATION = re.compile(
    r"\b(not|no|never|none|nor|neither|without|cannot|can't|don't|doesn't|didn't|isn't|aren't"
    r"|wasn't|weren't|won't|stopped|no longer|dislikes?|hates?)\b|不|没|别|未|勿|讨厌|并非"
    # 无 and 非 negate (无过敏, 非素食者), not in 无论 (regardless), 无线 (wireless), 非常 (very),
    # 无所谓 (either is fine), 无人机 (drone), 无限 (unlimited), 南非, 除非 (unless), 莫非, 是非
    r"|无(?!论|线|聊|数|比|疑|锡|奈|所谓|人机|限)|(?<![南除莫是])非(?!常|洲|凡|得)",
    re.IGNORECASE,
)
_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff"
_CJK = re.compile(rf"[{_CJK_CHARS}]")
_TOKEN = re.compile(rf"[{_CJK_CHARS}{_FACT}]|[^\W_{_CJK_CHARS}]+(?:['’][^\W_{_CJK_CHARS}]+)?")
_NAME = re.compile(r"(?<![\w'’])[A-Z][\w'’-]*")
_WEEKDAY_WORD = re.compile(r"(mon|tues|wednes|thurs|fri|satur|sun)days?")
_SENTENCE_END = ".!?:;。！？；：\n"
_FILLER = frozenset(("a", "an", "the"))
_CJK_FILLER = frozenset("的了着地得吗呢吧啊")
_STOP = STOPWORDS | {"user"}  # "user" is in most memories: no signal
_TITLES = ("Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "St.")  # a period that ends no sentence


@dataclass(frozen=True)
class Stated:
    """One fact where the text states it: what it says, how it is written, and the words
    next to it (the key of the nearest Latin word, or of the two nearest CJK characters;
    "" at either end), which tell "row 12, seat 3" from "row 3, seat 12"."""

    kind: str
    value: str
    written: str
    before: str
    after: str


@dataclass(frozen=True)
class Facts:
    """What a text states that a correction would change."""

    values: frozenset[tuple[str, str]]  # (kind, normalised value)
    names: frozenset[str]  # capitalised words not at a sentence start, lowercased
    negated: bool
    rest: str  # the text with each fact replaced by one placeholder
    stated: tuple[Stated, ...]  # every fact in text order

    def sequence(self, kind: str) -> list[str]:
        """The values of one kind in the order the text states them, repeats kept."""
        return [s.value for s in self.stated if s.kind == kind]


@dataclass(frozen=True)
class Difference:
    """How a new text differs from an old one, each item said in words.

    ``conflicts``: a kind of fact where each text states a value the other does not
    (3pm / 4pm), a negation in one text only, or words swapped in the same sentence frame:
    a possible contradiction. ``extras``: a fact only one text states (a time added to an
    appointment) or words the new text adds: new information, so not a duplicate.
    """

    conflicts: tuple[str, ...]
    extras: tuple[str, ...]


def _clean(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def zh_number(run: str) -> int | None:
    """The value of a Chinese numeral (四百五十 -> 450, 两 -> 2, 二〇二七 -> 2027), or None.

    A last digit right after 百, 千 or 万 counts in the next unit down, as people say it:
    一万二 is 12,000, 三千五 3,500, 两百五 250 (一万零二 is 10,002)."""
    if not run or any(c not in _CN_NUM for c in run):
        return None
    if not any(c in _CN_UNITS or c in _CN_BIG for c in run):
        digits = "".join(str(_CN_DIGITS[c]) for c in run)
        return int(digits) if len(digits) <= 30 else None  # a run of 一 is no number
    # yi: whole 亿 groups; wan: 万 groups within the current 亿 group (三万五千亿 is
    # 35,000 亿, 一亿二千万 120,000,000); section: below 万
    yi = wan = section = digit = 0
    for char in run:
        if char in _CN_DIGITS:
            digit = _CN_DIGITS[char]
        elif char in _CN_UNITS:
            section += (digit or 1) * _CN_UNITS[char]
            digit = 0
        elif char == "万":
            wan += ((section + digit) or 1) * 10_000
            section = digit = 0
        else:
            yi += ((wan + section + digit) or 1) * 100_000_000
            wan = section = digit = 0
    unit = _CN_UNITS.get(run[-2], _CN_BIG.get(run[-2], 0)) if len(run) > 1 else 0
    if run[-1] in _CN_DIGITS and unit >= 100:
        digit *= unit // 10
    return yi + wan + section + digit


def _zh_decimal(run: str) -> int | float | None:
    """A Chinese numeral, with a decimal part after 点 (五点五 -> 5.5, 三点二五万 -> 32500)."""
    whole, point, rest = run.replace("點", "点").partition("点")
    big = _CN_BIG.get(rest[-1:], 1)
    number = zh_number(whole)
    if not point or number is None:
        return number
    value = float(f"{number}.{''.join(str(_CN_DIGITS[c]) for c in rest.rstrip('万亿'))}") * big
    return int(value) if value.is_integer() else value


def _num(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else zh_number(text)


def _date(month: int | None, day: int | None, year: int | None) -> list[tuple[str, str]]:
    out = []
    if month is not None and day is not None:
        out.append(("date", f"{month}-{day}"))
    elif month is not None:
        out.append(("month", str(month)))
    if year is not None:
        out.append(("year", str(year % 100 + 2000 if year < 100 else year)))
    return out


def _month(name: str | None) -> int | None:
    if not name:
        return None
    key = name.lower().rstrip(".")
    return _MONTHS.get(key) or _MONTH_ABBR.get(key)


def _time(hour: int | None, minute: int | None, pm: bool | None) -> list[tuple[str, str]]:
    if hour is None or hour > 24:
        return []
    if pm is None and 12 < hour < 24:  # 15:00 is 3pm
        pm = True
    out = [("time", f"{hour % 12}:{minute or 0:02d}")]
    if pm is not None:
        out.append(("daypart", "pm" if pm else "am"))
    return out


Groups = dict[str, str | None]
Found = list[tuple[str, str]]


def _facts_of(kind: str, m: re.Match[str]) -> Found | None:
    """The facts a match states; None when it is not a match of ``kind`` after all."""
    if kind == "code":
        return _code(m.group(0))
    if kind == "signed":
        return [("signed", m.group(0).lower().replace("−", "-"))]
    if kind == "emoji":
        return [("emoji", m.group(0).replace("\ufe0f", ""))]  # ❤️ and ❤ are one
    if (
        kind == "number"
        and _VERSION_BEFORE.search(m.string, _back(m.string, m.start()), m.start())
        and not _UNIT_AFTER.match(m.string, m.end())
    ):
        digits = m.group("digits")
        plain = not (m.group("minus") or m.group("big"))
        if digits and plain and re.fullmatch(r"\d+\.\d*[1-9]\d*", digits):  # 2.0 is 2
            return [("number", digits)]  # as written: Python 3.10 is not Python 3.1
    reader = _READERS.get(kind)
    return reader(m.groupdict()) if reader else []


# A decimal right after "version" or a name (a capitalised word inside a sentence: not
# its first word, not an acronym like GPA), with no unit after it, is a version, where
# every digit counts: Python 3.10 and Python 3.1 are two; 36.0 and 36 degrees, "Dose 0.50
# mg" and "0.5 mg", version 2.0 and version 2 are one value.
_VERSION_BEFORE = re.compile(
    r"(?:\b(?:[Vv]ersion|[Vv]er\.?)|版本|(?<=[A-Za-z,;]\s)[A-Z][a-z][A-Za-z]*)\s*$"
)
_VERSION_REACH = 40  # letters before a version's number: "version", a name (Python)


def _back(text: str, at: int) -> int:
    """Where to look back from ``at`` for what comes before it: past the spaces before it
    and a word's length (looking back to the start would make a text of many numbers
    quadratic)."""
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return max(0, at - _VERSION_REACH)


_UNIT_AFTER = re.compile(
    r"\s*(?:%|°|(?:mg|g|kg|km|m|cm|mm|ml|l|lbs?|oz|degrees?|hours?|h|min|minutes?|s|"
    r"seconds?|percent)(?![A-Za-z]))",
    re.IGNORECASE,
)
_NUMBER_WORD = re.compile(r"\d+(?:[.,]\d+)*(?:-?[A-Za-z]+)+")  # 36GB, 2nd, 3-day: a number


def _code(word: str) -> Found | None:
    """zq0x0k, us-east-1 (letters and digits) or 4-7-1-9 (digits and dashes): one value."""
    has_letter = any(c.isalpha() for c in word)
    if has_letter and any(c.isdigit() for c in word) and not _NUMBER_WORD.fullmatch(word):
        return [("code", word.lower())]
    if not has_letter and re.fullmatch(r"\d+(?:-\d+)+", word):
        return [("number", word)]
    return None  # a plain number or word: left to the patterns after this one


def _en_date(g: Groups) -> Found:
    if g["month"]:
        return _date(_month(g["month"]), _num(g["d"]), _num(g["y"]))
    month = _month(g["month2"])
    if month is None:  # "3 Apples": not a date after all; keep the number
        return [("number", str(int(g["d2"] or 0)))]
    return _date(month, _num(g["d2"]), _num(g["y2"]))


def _en_time(g: Groups) -> Found:
    if g["word"]:
        return [("time", "0:00"), ("daypart", "pm" if g["word"].lower() == "noon" else "am")]
    if g["h"]:
        return _time(int(g["h"]), _num(g["mi"]), (g["p"] or "").lower() == "p")
    if g["hw"]:  # 9 in the morning = 9am; 8 at night = 8pm, but 1 to 4 at night are am
        hour, part = int(g["hw"]), (g["part"] or "night").lower()
        small_hours = part == "night" and (hour == 12 or hour <= 4)
        return _time(hour, _num(g["miw"]), part != "morning" and not small_hours)
    return _time(int(g["h24"] or 0), int(g["mi24"] or 0), None)


def _zh_time(g: Groups) -> Found:
    hour = _num(g["h"])
    part = g["part"]
    if hour == 1 and not part and not g["half"] and not g["mi"] and not g["quarter"]:
        return [("number", "1")]  # 一点 is mostly "a little"
    pm = True if part in _ZH_PM or (part == "中午" and (hour or 0) < 6) else None
    pm = False if part in _ZH_AM else pm
    minute = 15 * (_num(g["quarter"]) or 0) if g["quarter"] else _num(g["mi"])  # 一刻: 15
    return _time(hour, 30 if g["half"] else minute, pm)


def _currency(g: Groups) -> Found:
    written = next(v for v in (g["sym"], g["code"], g["zh"], g["word"]) if v)
    key = written.lower()
    return [("currency", _CURRENCIES.get(key, "cny" if key == "rmb" else key))]


def _weekday(g: Groups) -> Found:
    day = _WEEKDAYS[(g["en"] or "").lower()] if g["en"] else _ZH_WEEKDAYS[g["zh"] or ""]
    return [("weekday", str(day))]


_READERS: dict[str, Callable[[Groups], Found]] = {
    "iso": lambda g: _date(int(g["m"] or 0), int(g["d"] or 0), int(g["y"] or 0)),
    "slash": lambda g: [("date", f"{g['a']}/{g['b']}"), *_date(None, None, _num(g["y"]))],
    "zh_date": lambda g: _date(_num(g["m"]), _num(g["d"]), _num(g["y"])),
    "en_date": _en_date,
    "en_month": lambda g: _date(_month(g["month"]), None, None),
    "en_time": _en_time,
    "zh_time": _zh_time,
    "weekday": _weekday,
    "currency": _currency,
    "alternate": lambda g: [("every", "2")],
    "percent": lambda g: [("unit", "%")],
}


def _half(g: Groups) -> float:
    return 0.5 if g["half"] else 0


def _number(g: Groups) -> Found:
    if g["digits"]:
        digits = g["digits"].replace("点", ".").replace("點", ".")  # 5点5公里: not a time
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+", digits):
            digits = digits.replace(",", "")
        value: str | int | float = digits
        if re.fullmatch(r"\d+(?:\.\d+)?", digits):
            number = float(digits) * (_BIG[g["big"]] if g["big"] else 1) + _half(g)
            value = int(number) if number.is_integer() else number
        kind = "year" if re.fullmatch(r"(?:19|20)\d\d", digits) and not g["big"] else "number"
        return [(kind, f"{'-' if g['minus'] else ''}{value}")]
    if g["zh"]:
        zh = _zh_decimal(g["zh"])
        if zh is None:
            return []
        value = zh + _half(g) if g["half"] else zh
        return [("number", f"{'-' if g['minus'] else ''}{value}")]
    if g["en"]:
        total = 0.0
        for part in g["en"].lower().split("-"):
            total += _EN_NUMBERS[part]
        return [("number", str(int(total) if total.is_integer() else total))]
    return []


@lru_cache(maxsize=4096)
def extract(text: str) -> Facts:
    """The numbers, dates, times, weekdays, codes, names and negation ``text`` states."""
    text = _clean(text)
    masked = text
    found: list[tuple[int, int, str, str]] = []  # start, end, kind, value
    for kind, pattern in _PATTERNS:
        spans = []
        for m in pattern.finditer(masked):
            facts = _facts_of(kind, m)
            if facts is not None:
                found.extend((*m.span(), k, v) for k, v in facts)
                spans.append(m.span())
        masked = _mask(masked, spans, _KEEP if kind == "not_number" else _FACT)
    plain = "".join(c if mark == _KEEP else mark for c, mark in zip(text, masked, strict=True))
    stated = _stated(text, plain, sorted(found))
    rest = re.sub(rf"{_FACT}(?:\s*{_FACT})*", f" {_FACT} ", plain)  # "1200 dollars": one
    values = frozenset((s.kind, s.value) for s in stated)
    return Facts(values, _names(plain), bool(_NEGATION.search(text)), rest, stated)


def _mask(text: str, spans: list[tuple[int, int]], mark: str) -> str:
    """``text`` with each (start, end) span, in order, overwritten by ``mark``: linear time."""
    parts, at = [], 0
    for start, end in spans:
        parts += [text[at:start], mark * (end - start)]
        at = end
    return "".join(parts) + text[at:]


def _stated(text: str, plain: str, found: list[tuple[int, int, str, str]]) -> tuple[Stated, ...]:
    """Each fact with how it is written and its neighbouring words in ``plain``."""
    words = [
        (m.start(), m.end(), _key(w))
        for m in _TOKEN.finditer(plain)
        if (w := m.group(0).lower().replace("’", "'")) != _FACT
        and w not in _FILLER
        and w not in _CJK_FILLER
    ]
    starts = [start for start, _, _ in words]
    out = []
    for start, end, kind, value in found:
        left = bisect_left(starts, start)
        before = _neighbour(reversed(words[max(0, left - 2) : left]))
        right = bisect_left(starts, end)
        after = _neighbour(words[right : right + 2])
        out.append(Stated(kind, value, text[start:end], before, after))
    return tuple(out)


def _neighbour(words: Iterable[tuple[int, int, str]]) -> str:
    """The nearest Latin word, or the nearest one or two CJK characters, nearest first."""
    out = ""
    for _, _, key in words:
        if not _CJK.fullmatch(key):
            return out or key
        out += key
    return out


_READERS["number"] = _number


def _names(text: str) -> frozenset[str]:
    """Capitalised words after a sentence's first word, calendar words and stop words aside."""
    out = set()
    for m in _NAME.finditer(text):
        before = text[_back(text, m.start()) : m.start()].rstrip()
        if not before or (before[-1] in _SENTENCE_END and not before.endswith(_TITLES)):
            continue
        word = m.group(0).rstrip("'’-").lower().removesuffix("'s").removesuffix("’s")
        if word in _STOP or word in _FILLER or _month(word) or _WEEKDAY_WORD.fullmatch(word):
            continue
        out.add(word)
    return frozenset(out)


# The longest text compared fact by fact. The word diff of :func:`compare` is quadratic, and
# ``remember`` runs it under the vault's write lock against up to 5 memories: 150 KB against
# 30 KB took 16 s (a 900 KB remember held the lock for 10 minutes). At 4,000 characters
# (about a page) it takes at most about 0.1 s (benchmarks/dedup/timing.py). The fact rule
# is for a corrected fact in a sentence or a paragraph, not for a changed line in a long
# log or document.
MAX_CHARS = 4000


def comparable(a: str, b: str) -> bool:
    """Whether both texts are short enough (:data:`MAX_CHARS`) to compare fact by fact."""
    return len(a) <= MAX_CHARS and len(b) <= MAX_CHARS


def compare(new: str, old: str) -> Difference:
    """How ``new`` differs from ``old``: the facts they disagree on, and what only one states.

    Besides the extracted facts, words swapped in the same sentence frame (刘浩 / 王浩,
    metric / imperial) are a conflict, and content words ``new`` inserts into ``old``
    ("...black" / "...black with oat milk") are an extra. Texts longer than
    :data:`MAX_CHARS` are not compared: their difference is one extra saying so, so that
    they are never taken for duplicates.
    """
    if not comparable(new, old):
        return Difference((), (f"too long to compare fact by fact (> {MAX_CHARS} characters)",))
    fa, fb = extract(new), extract(old)
    conflicts: list[str] = []
    extras: list[str] = []
    for kind in sorted({k for k, _ in fa.values | fb.values}):
        conflict, extra = _compare_kind(kind, fa, fb)
        conflicts += conflict
        extras += extra
    names_a, names_b = _unmatched_names(new, old), _unmatched_names(old, new)
    if names_a and names_b:
        conflicts.append(f"name {'/'.join(sorted(names_a))} vs {'/'.join(sorted(names_b))}")
    elif names_a or names_b:
        extras.append(f"name {'/'.join(sorted(names_a | names_b))}")
    if fa.negated != fb.negated:
        conflicts.append("negation in one text only")
    conflicts.extend(f"swapped {was!r} for {now!r}" for was, now in swaps(new, old))
    conflicts.extend(f"tense {was!r} vs {now!r}" for was, now in tenses(new, old))
    added = additions(new, old)
    if added:
        extras.append(f"adds {' '.join(added)!r}")
    return Difference(tuple(conflicts), tuple(extras))


def _compare_kind(kind: str, fa: Facts, fb: Facts) -> tuple[list[str], list[str]]:
    """The conflict or extra in one kind of fact, as (conflicts, extras).

    Values are compared as multisets (item 0, item 0 / item 0, item 1 is a change of one
    value), then, when both texts state the same values in another order, by the words
    next to each: "row 12, seat 3" / "row 3, seat 12" is a conflict, "seat 3 in row 12"
    is not.
    """
    seq_a, seq_b = fa.sequence(kind), fb.sequence(kind)
    count_a, count_b = Counter(seq_a), Counter(seq_b)
    only_a, only_b = sorted((count_a - count_b).elements()), sorted((count_b - count_a).elements())
    if only_a and only_b:
        return [f"{kind} {'/'.join(only_a)} vs {'/'.join(only_b)}"], []
    one_sided = sorted(set(seq_a) ^ set(seq_b))
    # "one"/一只 is mostly an article: stating it in one text only adds nothing; a digit is
    # a number ("item 1").
    if [v for v in one_sided if not (kind == "number" and v == "1" and _spelled_one(fa, fb))]:
        return [], [f"{kind} {'/'.join(one_sided)}"]
    if count_a == count_b and seq_a != seq_b and not _same_neighbours(kind, fa, fb):
        return [f"{kind} {'/'.join(seq_a)} in another order than {'/'.join(seq_b)}"], []
    return [], []


def _spelled_one(*found: Facts) -> bool:
    """Whether every 1 stated is written as a word (one, 一), not as the digit."""
    ones = [s for f in found for s in f.stated if s.kind == "number" and s.value == "1"]
    return not any(s.written.isdigit() for s in ones)


def _same_neighbours(kind: str, fa: Facts, fb: Facts) -> bool:
    """Whether each value of ``kind`` in ``fa`` has, in ``fb``, the same value with the
    same word before or after it. Not when all of ``fb``'s have the same neighbours
    ("the PIN hint is 1 2 3"): then the words cannot tell them apart, and only the order can.
    """
    old = [s for s in fb.stated if s.kind == kind]
    if len({(s.before, s.after) for s in old}) == 1:
        return False
    before = {(s.value, s.before) for s in old}
    after = {(s.value, s.after) for s in old}
    new = [s for s in fa.stated if s.kind == kind]
    return all((s.value, s.before) in before or (s.value, s.after) in after for s in new)


def _unmatched_names(a: str, b: str) -> set[str]:
    """Names in ``a`` that ``b`` does not mention at all (in any case, anywhere)."""
    words_b = {_key(w) for w in _words(_clean(b))}
    return {n for n in extract(a).names if _key(n) not in words_b}


def _words(text: str) -> list[str]:
    return [m.group(0).lower().replace("’", "'") for m in _TOKEN.finditer(text)]


@lru_cache(maxsize=50_000)
def _key(word: str) -> str:
    """A light stem: porter2, cut to 6 letters, so allergic/allergy and editor/editors meet."""
    word = word.removesuffix("'s")
    if not word.isascii() or not word.isalpha():
        return word
    return porter_stem(word)[:6]


def _sequence(text: str) -> list[str]:
    """Word keys and single CJK characters, each fact one placeholder, articles dropped."""
    return [
        _key(w) for w in _words(extract(text).rest) if w not in _FILLER and w not in _CJK_FILLER
    ]


MAX_SWAPS = 3  # slots changed in one sentence frame; more is a rewrite, not a correction
MAX_SPAN = 3  # tokens per swapped slot


def _changes(
    new: str, old: str
) -> tuple[list[str], list[str], list[tuple[str, int, int, int, int]]]:
    so, sn = _sequence(old), _sequence(new)
    ops = SequenceMatcher(None, so, sn, autojunk=False).get_opcodes()
    return so, sn, [op for op in ops if op[0] != "equal"]


def swaps(new: str, old: str) -> list[tuple[str, str]]:
    """Words swapped in one sentence frame, as (old, new) spans; [] when rephrased.

    刘浩 / 王浩, Taro / uni-app, "aisle seats on short flights" / "window seats on long
    flights": every change replaces a few tokens in place (none added, dropped or moved),
    and most tokens are unchanged. Such an edit changes what is said; a paraphrase moves
    or adds words as well.
    """
    so, sn, changed = _changes(new, old)
    if not changed or len(changed) > MAX_SWAPS or any(op[0] != "replace" for op in changed):
        return []
    if any(i2 - i1 > MAX_SPAN or j2 - j1 > MAX_SPAN for _, i1, i2, j1, j2 in changed):
        return []
    same = len(so) - sum(i2 - i1 for _, i1, i2, _, _ in changed)
    if same < 2 or same < 0.6 * max(len(so), len(sn)):
        return []
    return [(" ".join(so[i1:i2]), " ".join(sn[j1:j2])) for _, i1, i2, j1, j2 in changed]


_COPULA = frozenset(("is", "are", "was", "were", "be", "been", "being", "am", "'s"))
# a verb in the past is followed by a preposition or an article, or ends the sentence
# ("worked at Google", "rented the flat", "the flat we rented"); before a noun it is an
# adjective ("the preferred drink")
_AFTER_VERB = frozenset(("at", "in", "on", "for", "with", "as", "from", "to", "by", "into"))
_AFTER_VERB |= {"a", "an", "the", "my", "our", "his", "her", "their", "its"}


def tenses(new: str, old: str) -> list[tuple[str, str]]:
    """The same verb in the past (-ed) in one text only, as (old, new) words: "works at" /
    "worked at" (stemming makes them one word). A fact that held and one that holds are
    not the same fact. Only in a verb's place: "is based on" or "the preferred drink" say
    what "bases" and "prefers" say."""
    raw = [_words(extract(t).rest) for t in (old, new)]
    words = [[(_key(w), w, i) for i, w in enumerate(side) if w not in _FILLER] for side in raw]
    before, after = ([key for key, _, _ in side] for side in words)
    out = []
    for block in SequenceMatcher(None, before, after, autojunk=False).get_matching_blocks():
        for n in range(block.size):
            (key, was, i), (_, now, j) = words[0][block.a + n], words[1][block.b + n]
            if was != now and _past(raw[0], i, key) != _past(raw[1], j, key):
                out.append((was, now))
    return out


def _past(words: list[str], i: int, key: str) -> bool:
    """Whether ``words[i]`` is its stem ``key`` in the past (-ed: worked, lived, not need)
    in a verb's place: not after a copula, and before a preposition or at the end."""
    word = words[i]
    if not word.endswith("ed") or key.endswith("ed") or not word.isascii():
        return False
    after = words[i + 1] if i + 1 < len(words) else None
    return (i == 0 or words[i - 1] not in _COPULA) and (after is None or after in _AFTER_VERB)


def additions(new: str, old: str) -> list[str]:
    """Content words ``new`` inserts into ``old`` left otherwise unchanged, else [].

    "The user drinks coffee black" / "...black with oat milk" adds "oat milk": new
    information, not a duplicate. A single CJK character (对, 在) is not content.
    """
    _, sn, changed = _changes(new, old)
    if not changed or any(op[0] != "insert" for op in changed):
        return []
    inserted = [w for _, _, _, j1, j2 in changed for w in sn[j1:j2]]
    latin = [w for w in inserted if not _CJK.fullmatch(w) and w not in _STOP]
    cjk = [w for w in inserted if _CJK.fullmatch(w)]
    return latin + cjk if latin or len(cjk) >= 2 else []


def _features(text: str) -> set[str]:
    """Facts, content-word keys, CJK characters and bigrams: the material of :func:`overlap`."""
    found = extract(text)
    out = {f"{kind}={value}" for kind, value in found.values}
    rest = found.rest.lower()
    for run in re.split(rf"[^{_CJK_CHARS}]+", rest):
        chars = [c for c in run if c not in _CJK_FILLER]
        out.update(chars)  # characters and bigrams: reordered clauses keep most of both
        out.update(a + b for a, b in pairwise(chars))
    latin = _CJK.sub(" ", rest)
    out.update(_key(w) for w in _words(latin) if w not in _STOP and w != _FACT)
    return out


def overlap(a: str, b: str) -> float:
    """Dice overlap of facts, content words (light-stemmed), CJK characters and bigrams, 0..1.

    Word order does not matter ("Priya Raman is the user's manager" / "The user's manager
    is Priya Raman": 1.0); synonyms do (prefers / likes).
    """
    fa, fb = _features(a), _features(b)
    return 2 * len(fa & fb) / (len(fa) + len(fb)) if fa or fb else 1.0
