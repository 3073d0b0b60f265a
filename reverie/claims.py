"""When two one-line statements say the same thing, or contradict each other.

One judge for every place that must decide: remembering a fact, the learning
line, the engines, the dream line and the health check.

Word overlap alone cannot tell "Takes 5 mg of melatonin" from "Takes 10 mg of
melatonin": the shared tokenizer (reverie.text) drops numbers of one digit and
single letters, and the rest is the same. So the judge first reads the *values*
a line states - numbers (2, 3.11, 两个, 三点), units (mg / g), codes (B12,
SKU-44), single letters (row B), proper names (Emma, Lisbon), months and
weekdays, numbered labels (Lesson 1, 第一课) - and compares them apart from the
words around them (the *rest*). Two lines that differ in a value never repeat
each other; they are one slot holding a new value (a conflict: newest wins) only
when the rest is the same, and otherwise two facts.

:func:`fact_relation` compares two lines as they are written. The heuristic engine
also reads a line as a *claim* - a predicate (likes, uses, eats or drinks, works at, lives
in, comes from), its polarity and its object - with :func:`parse_claim`, and asks
:func:`contradicts` whether a newer claim takes an older one back (a correction, the
opposite liking, a new single value, another value of an exclusive pair such as
vim / emacs).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from reverie.text import (
    STOPWORDS,
    clip_line,
    exact_key,
    has_cjk,
    jaccard,
    stem,
    term_set,
    token_set,
)

# "gluten-free" says without gluten: "Can't eat gluten" takes no "Eats gluten-free bread" back
NEGATION = re.compile(r"\b(not|never|no|cannot|don't|doesn't|dont|won't|isn't|hate|dislike)\b|n't|(?<=\w)-free\b"
                      r"|不|别|没|禁止", re.IGNORECASE)
EXCLUSIVE = re.compile(
    r"\b(prefers?|preferred|uses?|using|lives? in|works? (?:at|as|for|on)|based in|moved to|switched to|"
    r"decided|chose|favou?rite|name is|(?:i|user) (?:am|is) an?)\b|偏好|更喜欢|改用|用|住在|工作|决定|最喜欢",
    re.IGNORECASE,
)
# "emacs over vim", "tea instead of coffee", "Mia, not Mila": what follows is the value given up
# ("not Mila but Mia": what comes before "but")
GIVEN_UP = re.compile(r"\b(?:over|instead of|rather than)\s+[^\s,;]+|,\s*not\s+[^\s,;]+|\bnot\s+[^\s,;]+(?=,?\s+but\b)"
                      r"|而不是[^\s,;，；]+|，?不是[^\s,;，；]+", re.IGNORECASE)
# "light mode in editors": what follows such a word says where the value holds, not the value
QUALIFIER = re.compile(r"\b(?:in|at|on|for|during|when|while)\b", re.IGNORECASE)

# ---------------------------------------------------------------- values

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_POWERS = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_CN_NUMERAL = f"[{''.join(_CN_DIGITS)}{''.join(_CN_POWERS)}]+|半"
# what may follow a Chinese numeral for it to be a number: measure words and units
# (a bare numeral is too often part of a word: 一起, 一样, 统一, 万一, 三明治)
_CN_UNITS = sorted(
    """毫克 微克 千克 公斤 克 斤 毫升 升 厘米 毫米 公里 千米 英里 米 点钟 点半 点 小时 个小时 分钟 秒钟 秒 楼 层 号
    岁 个 位 只 条 本 次 遍 年 个月 月 日 天 周 星期 元 块钱 块 美元 欧元 杯 瓶 片 粒 颗 件 台 辆 套 间 家 门 节 课 章
    步 部 集 倍 度 张 份 口 名 人 碗 顿 双 对 支 首 篇 页 公分 寸 英寸 磅 盎司 卡 千卡 % ％""".split(),
    key=len,
    reverse=True,
)
_CN_UNIT = "|".join(map(re.escape, _CN_UNITS))
_CN_QUANTITY = re.compile(rf"(?P<n>\d+(?:\.\d+)?|{_CN_NUMERAL})\s*(?P<u>{_CN_UNIT})")
_CN_LABEL = re.compile(rf"第\s*(?P<n>\d+|{_CN_NUMERAL})\s*(?P<u>[{_CJK}])?")
_CN_WEEKDAY = re.compile(r"(?<![零〇一二两三四五六七八九十\d])(?:星期|礼拜|周)(?P<d>[一二三四五六日天1-7])")  # not 一周三次
_CN_WEEKDAYS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}

# a numbered label introduces another item ("Lesson 1" / "Lesson 2", "Ticket 1234" / "Ticket
# 5678"), never a new value
_LABEL_WORDS = (
    "lesson|chapter|step|part|week|day|episode|ep|session|item|section|module|exercise|question|task|"
    "season|scene|act|lecture|ticket|issue|bug|pr|order|invoice|incident|case|room|team|project|flight|table"
)
_EN_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "million": 1_000_000, "billion": 1_000_000_000,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}
_LABEL_NUMBER = "|".join(_EN_NUMBER_WORDS) + "|one"
_ROMAN = r"[IVX]{2,}|[VX]|I(?=\s*(?:[:.,;)]|$))"  # "Part I:", not "every day I run"
_EN_LABEL = re.compile(
    rf"\b(?P<w>(?i:{_LABEL_WORDS}))\.?\s*(?:#|no\.?\s*)?\s*(?P<n>\d+[a-zA-Z]?|{_ROMAN}|(?i:{_LABEL_NUMBER}))\b"
    r"|\b(?P<q>[Qq][1-4])\b|#\s*(?P<h>\d+)\b"
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())} | {"sept": 9})
_WEEKDAYS = {d: i + 1 for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_WEEKDAYS.update({d[:3]: i for d, i in list(_WEEKDAYS.items())} | {"tues": 2, "thur": 4, "thurs": 4})
# lower-case words that are also a month or a day only when capitalised
_AMBIGUOUS_TIME = {"may", "march", "august", "jan", "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
                   "sept", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"}
# units, read as such only right after a number ("5 mg", "10mg", "3 pm")
_UNITS = {
    "mg": "mg", "milligram": "mg", "milligrams": "mg", "mcg": "mcg", "µg": "mcg", "ug": "mcg",
    "g": "g", "gram": "g", "grams": "g", "gr": "g", "kg": "kg", "kgs": "kg", "kilo": "kg", "kilos": "kg",
    "kilogram": "kg", "kilograms": "kg", "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb",
    "oz": "oz", "ounce": "oz", "ounces": "oz", "iu": "iu", "ml": "ml", "milliliter": "ml",
    "milliliters": "ml", "millilitre": "ml", "millilitres": "ml", "l": "l", "liter": "l", "liters": "l",
    "litre": "l", "litres": "l", "cl": "cl", "dl": "dl", "km": "km", "kms": "km", "kilometer": "km",
    "kilometers": "km", "kilometre": "km", "kilometres": "km", "m": "m", "meter": "m", "meters": "m",
    "metre": "m", "metres": "m", "cm": "cm", "centimeter": "cm", "centimeters": "cm", "mm": "mm",
    "mi": "mi", "mile": "mi", "miles": "mi", "ft": "ft", "foot": "ft", "feet": "ft", "inch": "inch",
    "inches": "inch", "yd": "yd", "yards": "yd", "am": "am", "a.m": "am", "pm": "pm", "p.m": "pm",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "min": "min", "mins": "min",
    "minute": "min", "minutes": "min", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
    "year": "year", "years": "year", "yr": "year", "yrs": "year", "%": "%", "percent": "%",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "hz": "hz", "khz": "khz", "mhz": "mhz", "ghz": "ghz",
    "w": "w", "kw": "kw", "kwh": "kwh", "v": "v", "mph": "mph", "kph": "kph", "kmh": "kph", "c": "°c",
    "°c": "°c", "f": "°f", "°f": "°f", "k": "k", "x": "x", "usd": "usd", "eur": "eur", "gbp": "gbp",
    "dollar": "usd", "dollars": "usd", "euro": "eur", "euros": "eur", "bucks": "usd", "cal": "kcal",
    "kcal": "kcal", "calories": "kcal", "cups": "cup", "cup": "cup", "tablets": "tablet",
    "tablet": "tablet", "pills": "pill", "pill": "pill",
}
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp", "¥": "cny", "￥": "cny"}
# one letter that is a word, not a value ("I", "a"; chat shorthand u, r, y, n, k)
_LETTER_WORDS = set("aiurynkstxo")
# capitalised first words that are not names even when a verb follows ("Often visits Rome")
_NOT_NAMES = {"often", "seldom", "soon", "user", "someone", "somebody", "everyone", "everybody", "nobody",
              "anyone", "anybody", "person", "customer", "client"}
_CONTRACTIONS = ("m", "re", "ve", "ll", "d", "t")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "prof", "jr", "sr", "vs", "e.g", "i.e", "etc", "approx", "no"}
# an identifier that follows one of these (or a copula, or an exclusive verb) is a slot's value:
# "row B" / "row C", "gate B12" / "gate C7", "boss is Emma" / "boss is Olivia"
_SLOT_NOUNS = set(
    """row seat gate floor apartment apt flat unit suite spot bay lane room table desk locker platform terminal
    size grade class group team tier zone block level version plan type model code id pin""".split()
)
_COPULA = re.compile(r"\b(?:is|are|was|were|became|becomes)\b|[:=]|是|叫|姓", re.IGNORECASE)
# words that mark an update without changing what is said ("Currently takes 10 mg")
_UPDATE_WORDS = frozenset({"currently", "nowaday", "presently", "lately", "recently", "anymore",
                           "目前", "如今", "最近", "改成", "改为", "变成"})  # as terms: nowadays -> nowaday
_TOKEN = re.compile(rf"[^\W_{_CJK}]+(?:[.:,/-][^\W_{_CJK}]+)*(?:['’][^\W_{_CJK}]+)?%?")
_SENTENCE_END = re.compile(r"(?:^|[.!?。！？\n•*]|(?:^|\s)-)\s*[\"'“‘(\[]*\s*$")


@dataclass(frozen=True)
class _Values:
    labels: Counter[str]  # "lesson 1", "第1课"
    quantities: Counter[str]  # numbers, units, months and weekdays
    idents: dict[str, bool]  # codes, letters and proper names -> whether they fill a slot
    names: frozenset[str]  # proper names (compared by presence: "Lisbon" is said by "lisbon" too)
    name_terms: frozenset[str]  # the names as terms, to take out of the other line's rest
    words: frozenset[str]  # every Latin word, lower-cased
    rest: frozenset[str]  # content terms once the values are taken out


def _number(text: str) -> str:
    text = text.rstrip(".,:")
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text):
        text = text.replace(",", "")
    if text.isdigit():
        return str(int(text))
    return text


def _cn_number(text: str) -> str:
    if text[0].isdigit():
        return _number(text)
    if text == "半":
        return "0.5"
    if not any(ch in _CN_POWERS for ch in text):  # 二零二三: digit by digit
        return str(int("".join(str(_CN_DIGITS[ch]) for ch in text)))
    total = section = digit = 0
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch in ("万", "亿"):
            total += (section + digit) * _CN_POWERS[ch]
            section = digit = 0
        else:
            section += (digit or 1) * _CN_POWERS[ch]
            digit = 0
    return str(total + section + digit)


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start]
    if _SENTENCE_END.search(before) is None:
        return False
    word = re.search(r"([^\W_]+(?:\.[^\W_]+)*)\.\s*$", before)  # "Dr. Smith" does not start a sentence
    return not (word and word.group(1).lower() in _ABBREVIATIONS)


def _names_at_start(token: str, after: str) -> bool:
    """A capitalised first word is a name when it owns something ("Emma's") or does something
    ("Emma loves hiking", "Tom is 5"), not when it is the verb itself ("Prefers tea")."""
    lower = token.lower()
    if lower.endswith(("'s", "’s")):
        return True
    if lower.endswith(("s", "ed", "ing", "ly")) or lower in STOPWORDS or lower in _NOT_NAMES:
        return False
    nxt = re.match(r"\s+([a-z]+)\b", after)
    if nxt is None:
        return False
    verb = nxt.group(1)
    return verb in {"is", "was", "has", "had", "and", "will", "can", "does", "did"} or (
        len(verb) > 3 and verb.endswith("s") and not verb.endswith("ss")
    )


def _dated(text: str, start: int, end: int) -> bool:
    """"march 3", "3rd may": a lower-case month is a month next to a day of the month."""
    return bool(re.match(r"\s+\d{1,2}(?:st|nd|rd|th)?\b", text[end:])
                or re.search(r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?$", text[:start]))


def _slotted(text: str, start: int, previous: str | None) -> bool:
    if previous is not None and previous in _SLOT_NOUNS:
        return True
    head = text[:start]
    return bool(EXCLUSIVE.search(head) or _COPULA.search(head))


@lru_cache(maxsize=16384)
def _read_values(text: str) -> _Values:
    labels: Counter[str] = Counter()
    quantities: Counter[str] = Counter()
    idents: dict[str, bool] = {}
    names: set[str] = set()
    lowered: set[str] = set()
    spans: list[tuple[int, int]] = []
    blank = list(text)

    def take(start: int, end: int) -> None:
        spans.append((start, end))
        blank[start:end] = " " * (end - start)

    def free(start: int, end: int) -> bool:
        return all(e <= start or s >= end for s, e in spans)

    for m in _CN_LABEL.finditer(text):
        labels[f"第{_cn_number(m.group('n'))}{m.group('u') or ''}"] += 1
        take(m.start(), m.end())
    for m in _EN_LABEL.finditer(text):
        if not free(m.start(), m.end()):
            continue
        if m.group("q"):
            labels[m.group("q").lower()] += 1
        elif m.group("h"):
            labels[f"#{_number(m.group('h'))}"] += 1
        else:
            n = m.group("n")
            n = str(_EN_NUMBER_WORDS.get(n.lower(), 1 if n.lower() == "one" else n)).lower()
            labels[f"{stem(m.group('w').lower())} {_number(n) if n[0].isdigit() else n}"] += 1
        take(m.start(), m.end())
    for m in _CN_WEEKDAY.finditer(text):
        if free(m.start(), m.end()):
            d = m.group("d")
            quantities[f"weekday {_CN_WEEKDAYS.get(d, d)}"] += 1
            take(m.start(), m.end())
    for m in _CN_QUANTITY.finditer("".join(blank)):
        n, unit = m.group("n"), m.group("u")
        if n == "一" and unit == "点" and not re.match(r"[钟半\d零一二两三四五六七八九十]", text[m.end():m.end() + 1]):
            continue  # 有一点累: "a little", not one o'clock
        quantities[_cn_number(n)] += 1
        quantities[unit.replace("％", "%")] += 1
        take(m.start(), m.end())

    def ident(key: str, start: int, before: str | None) -> None:
        idents[key] = idents.get(key, False) or _slotted(text, start, before)

    previous, previous_end, number_end = "", -1, -1
    for m in _TOKEN.finditer("".join(blank)):
        token, start, end = m.group(0), m.start(), m.end()
        # the word right before, when nothing but spaces parts them ("row B", not "plan, John")
        before = previous if previous_end >= 0 and not text[previous_end:start].strip() else None
        after_number = number_end >= 0 and not text[number_end:start].strip()
        lower = base = token.lower().replace("’", "'")
        previous, previous_end = lower, end
        if "'" in lower:
            stem_part, suffix = lower.rsplit("'", 1)
            if lower in STOPWORDS or suffix in _CONTRACTIONS or (suffix != "s" and stem_part.endswith("n")):
                lowered.add(lower)
                continue  # let's, I'm, don't: words, never values
            if suffix == "s":
                base = previous = stem_part  # Emma's -> emma
        lowered.add(base)
        if any(ch.isdigit() for ch in base):
            number = re.fullmatch(r"(\d+(?:[.,:]\d+)*)(?:st|nd|rd|th)?%?", base)
            with_unit = re.fullmatch(r"(\d+(?:[.,:]\d+)*)([^\W\d_]+)", base)
            if number:
                quantities[_number(number.group(1))] += 1
                if base.endswith("%"):
                    quantities["%"] += 1
                if text[start - 1:start] in _CURRENCY:
                    quantities[_CURRENCY[text[start - 1]]] += 1  # $500
                number_end = end
            elif with_unit and with_unit.group(2) in _UNITS:  # 10mg, 3pm
                quantities[_number(with_unit.group(1))] += 1
                quantities[_UNITS[with_unit.group(2)]] += 1
                number_end = end
            else:
                ident(base, start, before)  # B12, SKU-44, 4B
        elif after_number and base in _UNITS:
            quantities[_UNITS[base]] += 1
        elif base in _EN_NUMBER_WORDS or ("-" in base and all(p in _EN_NUMBER_WORDS for p in base.split("-"))):
            quantities[str(sum(_EN_NUMBER_WORDS[p] for p in base.split("-")))] += 1
            number_end = end
        elif base in _WEEKDAYS and (token[0].isupper() or base not in _AMBIGUOUS_TIME):
            quantities[f"weekday {_WEEKDAYS[base]}"] += 1
        elif base in _MONTHS and (token[0].isupper() or base not in _AMBIGUOUS_TIME or _dated(text, start, end)):
            quantities[f"month {_MONTHS[base]}"] += 1
        elif len(base) == 1 and base.isalpha():
            if token.isupper() and token != "I" and not (token == "A" and _sentence_start(text, start)):
                ident(base, start, before)  # row B, Plan A, vitamin D
            elif token.islower() and base not in _LETTER_WORDS:
                ident(base, start, before)
            else:
                continue
        elif token[0].isupper() and base not in STOPWORDS and (
            not _sentence_start(text, start) or _names_at_start(token, text[end:])
        ):
            names.add(base)
            ident(base, start, before)
        else:
            continue
        take(start, end)
    name_terms = frozenset().union(*(token_set(n) for n in names)) if names else frozenset()
    rest = token_set("".join(blank)) - name_terms
    return _Values(labels, quantities, idents, frozenset(names), name_terms, frozenset(lowered), rest)


# ---------------------------------------------------------------- the judge


def _verb(match: re.Match[str]) -> str:
    return " ".join(stem(w) for w in match.group(0).lower().split())


def _split_object(text: str) -> tuple[frozenset[str], frozenset[str], str]:
    """What an exclusive verb takes (the value), where it holds (the qualifier) and the word
    that opens the qualifier ("for", "in"; "" without one). A clause after the statement
    ("..., gofmt handles it anyway") is neither."""
    text = clip_object(GIVEN_UP.sub(" ", text), False)
    head, comma, after = text.partition(",")
    if comma and len(after.split()) >= 3 and not re.search(r"\b(?:and|or)\b", after, re.IGNORECASE):
        text = head  # "spaces, gofmt handles it anyway": a clause of its own, not a list of values
    qualifier = QUALIFIER.search(text)
    if qualifier is None:
        return token_set(text), frozenset(), ""
    where = re.split(r"[,;]", text[qualifier.start():], maxsplit=1)[0]
    return token_set(text[: qualifier.start()]), token_set(where), qualifier.group(0).lower()


def _given_up(text: str) -> frozenset[str]:
    """The values a line gives up: "coffee over tea" -> {tea}."""
    found = [token_set(m.group(0)) for m in GIVEN_UP.finditer(text)]
    return frozenset().union(*found) - {"instead", "rather"} if found else frozenset()


# "Joined Acme last month": a new employer by its name alone, as written (capitalised), where
# the name is none of the networks, apps, clubs and groups one joins without working there
JOINED_NAME = (
    r"(?!(?i:facebook|twitter|x|instagram|tiktok|reddit|discord|slack|linkedin|mastodon|bluesky|threads|snapchat|"
    r"pinterest|tumblr|strava|duolingo|peloton|netflix|spotify|patreon|costco|toastmasters|weight\s+watchers|aa|na|"
    r"rotary|kiwanis|tinder|bumble|hinge|goodreads|letterboxd|github|nextdoor|whatsapp|telegram|signal|zoom|"
    r"classpass|equinox|mensa|the|a|an|my|our|his|her|their)\b)"
    r"(?!(?:[\w&.'-]+\s+){0,3}(?i:club|gym|team|group|league|society|choir|band|church|union|guild|association|"
    r"community|crew|circle|chapter|army|navy|corps|academy|school|college|university|program|programme|"
    r"challenge|server|channel|forum|class|course|fund)\b)"
    r"(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z])[\w&.'-]*){0,3}"
)
# when one joined it, after its name: "last month", "in March", "two weeks ago"
JOINED_WHEN = (
    r"(?:last|this|earlier\s+this|in|on|back\s+in|since)\s+[\w ]{1,40}?|(?:a|an|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|\d+|a\s+few|a\s+couple(?:\s+of)?|several)\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|recently|yesterday"
)

# One current job and one home at a time: "Works as a staff engineer at Tidepool", "Is a
# product manager at Globex" and "Works at Finlytics", "Moved to Lisbon last month" and "Lives
# in Porto" fill one slot with another named value, whatever else the lines say. (The first
# group: what it holds.)
_FRAMES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("employer", re.compile(r"\b(?:works?\s+(?:as\s+[^,;.!?]+?\s+)?(?:at|for)|joined(?=\s+[^,;.!?]+?\s+as\b)"
                            r"|^joined(?=\s+" + JOINED_NAME + r"(?:\s+(?:" + JOINED_WHEN + r"))?\s*(?:$|[,;.!?])))\s+"
                            r"(?P<o>[^,;.!?]+)", re.IGNORECASE)),
    # (being something "at" a place says a job less surely: only at a place named right there,
    # "at Globex", not "at a clinic in Lyon")
    ("employer", re.compile(r"\b(?i:is|am|i'm|i’m)\s+(?i:an?)\s+(?P<role>[^,;.!?]+?)\s+at\s+"
                            r"(?P<o>(?:the\s+)?[A-Z][^,;.!?]*)")),
    ("home", re.compile(r"\b(?:lives?\s+in|(?:is\s+)?based\s+in|moved\s+(?:back\s+)?to|relocated\s+to)\s+"
                        r"(?P<o>[^,;.!?]+)", re.IGNORECASE)),
    # "在腾讯工作" / "在字节跳动上班": the heuristic engine's Chinese lines for a job (not "在家工作")
    ("employer", re.compile(r"^(?:用户|我)?(?:现在|目前)?在(?!家)(?P<o>[^，,；;。]+?)(?:工作|上班|任职)")),
)


# what one is "at" a place without working there: "Is a regular at Joe's", "Is a speaker at PyCon"
# being one of these "at" a place is a job there ("Is a product manager at Globex"); one is a
# parent, a regular, a donor, a tutor on Saturdays or an intern for a summer at a place
# without it being one's job, so only a named job fills the slot (a job missed keeps both
# lines; a wrong one would archive the real job)
_JOBS = frozenset("""engineer developer programmer manager pm designer analyst scientist researcher architect
    consultant accountant lawyer attorney nurse doctor physician surgeon dentist pharmacist therapist teacher
    professor lecturer director head lead officer executive ceo cto cfo coo vp president founder cofounder
    co-founder owner partner associate specialist administrator admin technician editor writer journalist
    reporter producer marketer recruiter salesperson cook chef baker waiter waitress barista cashier clerk
    secretary assistant coordinator supervisor foreman mechanic electrician plumber carpenter pilot driver
    paramedic firefighter agent broker banker trader economist statistician librarian curator
    principal counselor psychologist veterinarian vet sre devops midwife receptionist bartender hairdresser
    barber photographer translator interpreter farmer soldier dietitian nutritionist optometrist radiologist
    physiotherapist""".split())


JOBS = _JOBS  # the jobs a line may name ("My sister is a doctor")


def _not_a_job(m: re.Match[str]) -> bool:
    role = (m.groupdict().get("role") or "").lower().split()
    return bool(role) and role[-1] not in _JOBS


def _frame(text: str, values: _Values) -> tuple[str, frozenset[str], frozenset[str]] | None:
    """(the frame, the terms of its subject, the names that fill it), for a line that fills
    one with a name: ("employer", {}, {"tidepool"}) for "Works as a staff engineer at Tidepool"."""
    for kind, pattern in _FRAMES:
        m = pattern.search(text)
        if m is None or _not_a_job(m):
            continue
        said = set(re.findall(r"[^\W_]+", m["o"].lower()))
        names = frozenset(n for n in values.names if n in said)
        if not names and has_cjk(m["o"]):
            names = token_set(m["o"])  # Chinese has no capitals: the place it names is the value
        return (kind, token_set(text[: m.start()]), names) if names else None
    return None


def _frame_conflict(a: "_Reading", b: "_Reading") -> bool:
    """Both fill one frame for the same subject with other names ("Works at Tidepool" /
    "Works as a backend engineer at Finlytics")."""
    return bool(a.frame and b.frame and a.frame[0] == b.frame[0] and a.frame[1] == b.frame[1]
                and not a.frame[2] & b.frame[2] and not a.negated and not b.negated)


@dataclass(frozen=True)
class _Reading:
    """What the judge reads of one line, once per line (a stored fact meets many new ones)."""

    negated: bool
    values: _Values
    slot: re.Match[str] | None  # the exclusive verb ("prefers", "lives in")
    verb: str  # that verb, stemmed ("" without one)
    subject: frozenset[str]  # the terms before that verb
    tokens: frozenset[str]
    atoms: frozenset[str]
    bare: bool  # nothing but names, values and update words: the rest alone cannot tell it apart
    frame: tuple[str, frozenset[str], frozenset[str]] | None  # one job, one home: see _frame
    given_up: frozenset[str]  # the values it gives up: "Mia, not Mila" -> {mila}


@lru_cache(maxsize=16384)
def _reading(text: str) -> _Reading:
    values = _read_values(text)
    slot = EXCLUSIVE.search(text)
    return _Reading(
        negated=bool(NEGATION.search(text)),
        values=values,
        slot=slot,
        verb=_verb(slot) if slot else "",
        subject=token_set(text[: slot.start()]) if slot else frozenset(),
        tokens=token_set(text),
        atoms=_atoms(values),
        bare=not (values.rest - values.name_terms - _UPDATE_WORDS),
        frame=_frame(text, values),
        given_up=_given_up(text),
    )


# words that name a value, not the relation it holds in: "is called Mia" / "Mila is their sister"
_NAMING = token_set("name named call called")


def _takes_back(a: _Reading, b: _Reading) -> bool:
    """``a`` gives up outright a value that ``b`` states, in the same relation: all the rest
    of ``b`` is said by ``a`` too ("My sister is called Mia, not Mila" / "Mila is their
    sister"; not "Mila lives in Munich", nor "Mia is their sister" / "Mila is their sister":
    one may have two sisters)."""
    if not a.given_up or not a.given_up <= b.tokens or b.negated or a.given_up & b.given_up:
        return False
    relation = b.tokens - a.given_up - _NAMING - _UPDATE_WORDS
    return bool(relation) and relation <= a.tokens


def _unrelated(a: _Reading, b: _Reading) -> bool:
    """No verdict is possible: the lines share no term, no value and no exclusive verb (a
    duplicate or a negation needs shared words, a slot needs the same verb, another value
    needs the same rest), and the rest of at least one says something."""
    return (
        not (a.tokens & b.tokens)
        and not (a.atoms & b.atoms)
        and not (a.verb and a.verb == b.verb)
        and not (a.bare and b.bare)
        and not (a.frame and b.frame and a.frame[0] == b.frame[0])
    )


def judge_keys(text: str) -> frozenset[str]:
    """What two lines must share for :func:`fact_relation` to judge them at all: a term, a
    value, the exclusive verb, or both being bare. Lines with no key in common are
    unrelated (:func:`_unrelated`), so an index over these keys finds every line a new one
    could duplicate or contradict without judging each pair. (Built from the cached reading
    each time: a cache of the keys too cost 11 MB of a 100k-turn ingest and saved nothing.)"""
    r = _reading(text)
    keys = {f"t:{t}" for t in r.tokens} | {f"a:{a}" for a in r.atoms}
    if r.verb:
        keys.add(f"v:{r.verb}")
    if r.bare:
        keys.add("bare")
    if r.frame:
        keys.add(f"f:{r.frame[0]}")
    return frozenset(keys)


# the exclusive verbs whose object is one of many a person holds at once (preferences, tools,
# choices), where one home, employer, name or role at a time is a single slot
_OPEN_SLOT = re.compile(r"prefers?|preferred|uses?|using|decided|chose|switched to|favou?rite|偏好|更喜欢|改用|用|决定|最喜欢",
                        re.IGNORECASE)


def _exclusive_conflict(new: str, old: str) -> bool:
    """Both fill the same exclusive slot ("prefers", "lives in") with another value."""
    a, b = _reading(new), _reading(old)
    slot_a, slot_b = a.slot, b.slot
    if not (slot_a and slot_b and a.verb == b.verb):
        return False
    # same subject (what precedes the verb), another value after it
    if a.subject != b.subject:
        return False
    obj_a, where_a, opens = _split_object(new[slot_a.end():])
    obj_b, where_b, _ = _split_object(old[slot_b.end():])
    if where_a != where_b:
        return False  # "Python at work" / "Python at home": two facts, not one changed
    only_a, only_b = obj_a - obj_b, obj_b - obj_a
    # one value for another ("vim" / "emacs"), or the same value words with another
    # ("dark mode in editors" / "light mode in editors")
    single = len(obj_a) == 1 and len(obj_b) == 1
    one_kind = _one_kind(obj_a, obj_b)  # "green tea" / "coffee": two drinks
    if not obj_a & obj_b and (
            # two things that only share where they hold ("jeans at work" / "tea at work"), unless
            # what they are for is the same ("Python for data work" / "SQL for data work")
            ((single or one_kind) and where_a and opens != "for")
            # one of the many things a person prefers or uses ("Prefers tea" / "Prefers email",
            # "Uses git" / "Uses vim"), where one home or one employer is a single slot
            or (single and _OPEN_SLOT.fullmatch(slot_a.group(0)) is not None)):
        # are two facts; one value for another only when they are two of an exclusive pair or
        # two things of one kind ("tea in the morning" / "coffee in the morning"), or one is
        # given up for the other ("coffee over tea in the morning")
        return (_exclusive_clash(obj_a, obj_b) or one_kind
                or bool(obj_b <= _given_up(new) or obj_a <= _given_up(old)))
    return bool((single or one_kind or obj_a & obj_b) and 0 < len(only_a) <= 2 and 0 < len(only_b) <= 2)


def _atoms(values: _Values) -> frozenset[str]:
    """What a line says, values normalised: its rest, its names as terms, its other values."""
    found = {f"#{v}" for v in values.quantities} | {f"#{v}" for v in values.idents if v not in values.names}
    return values.rest | values.name_terms | frozenset(found)


def _same_rest(a: _Values, b: _Values) -> bool:
    ignore = a.name_terms | b.name_terms | _UPDATE_WORDS
    return a.rest - ignore == b.rest - ignore


def _value_relation(a: _Values, b: _Values, negated_differs: bool) -> Literal["conflict", False] | None:
    """The verdict when the two lines state different values; False when they state the same."""
    if a.labels != b.labels:
        return None  # Lesson 1 / Lesson 2: two items
    more_a, more_b = a.quantities - b.quantities, b.quantities - a.quantities
    ids_a = {k: s for k, s in a.idents.items() if k not in b.idents and not (k in a.names and k in b.words)}
    ids_b = {k: s for k, s in b.idents.items() if k not in a.idents and not (k in b.names and k in a.words)}
    if not (more_a or more_b or ids_a or ids_b):
        return False
    # never the same fact; the same slot with another value only when all else is the same,
    # each line has a value the other lacks, and a different name, code or letter fills a slot
    if negated_differs or not _same_rest(a, b):
        return None
    if not ((more_a or ids_a) and (more_b or ids_b)):
        return None
    if not all(ids_a.values()) or not all(ids_b.values()):
        return None  # "Emma likes hiking" / "Olivia likes hiking", "vitamin D" / "vitamin C"
    return "conflict"


_NUMBER = re.compile(r"\d+(?:[.:]\d+)?")
# words a date is said with: no thing a correction and a fact share
_CALENDAR_WORDS = frozenset(term_set(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow week month year"))


def corrects_value(correction: str, old: str) -> bool:
    """Whether a correction ("Correction: the checkout launch moved to December 8") gives another
    number or date of what ``old`` says ("Decided to launch the new checkout on December 1"): two
    words of the thing at least in both (the calendar's words are no thing), and a number of the
    old line that the correction does not say, where it says one of its own."""
    shared = (term_set(correction) & term_set(old)) - _CALENDAR_WORDS
    if len(shared) < 2:
        return False
    said, before = set(_NUMBER.findall(correction)), set(_NUMBER.findall(old))
    return bool(said) and bool(before - said)


def fact_relation(new: str, old: str, duplicate_at: float) -> str | None:
    """"duplicate", "conflict" (same subject, a different claim) or None.

    A conflict is either the same statement with its polarity flipped ("likes
    coffee" / "doesn't like coffee"), an exclusive slot holding another value
    ("prefers vim" / "I prefer emacs over vim") or the same statement with another
    number ("has 2 kids" / "has 3 kids"); additive statements ("likes hiking" /
    "likes painting") and numbered items ("Lesson 1" / "Lesson 2") never conflict,
    and lines that state different values are never duplicates.
    """
    a, b = _reading(new), _reading(old)
    if _unrelated(a, b):
        return None
    if _frame_conflict(a, b):
        return "conflict"  # "Works at Tidepool" / "Works as a backend engineer at Finlytics"
    if _takes_back(a, b) or _takes_back(b, a):
        return "conflict"  # "My sister is called Mia, not Mila" / "Mila is their sister"
    negated_differs = a.negated != b.negated
    a_values, b_values = a.values, b.values
    verdict = _value_relation(a_values, b_values, negated_differs)
    if verdict is not False:
        if (verdict is None and not negated_differs and a_values.labels == b_values.labels
                and _same_rest(a_values, b_values) and _exclusive_conflict(new, old)):
            return "conflict"  # "I prefer Emacs over Vim" / "Prefers Vim": the slot takes another value
        return verdict
    if _exclusive_conflict(new, old):
        return "conflict"
    # the same values: the words around them decide ("Has 2 kids" / "has two kids", "3 pm" / "3pm")
    score = max(jaccard(a.tokens, b.tokens), jaccard(a.atoms, b.atoms))
    if score >= duplicate_at and not negated_differs:
        return "duplicate"
    if negated_differs and score >= 0.5:
        return "conflict"
    return None


# ---------------------------------------------------------------- claims: predicate, polarity, object

_CLAIM_EN = re.compile(
    r"^(?:(?:the\s+)?user\s+|i\s+|we\s+)?(?:really\s+|also\s+|still\s+|actually\s+)?(?P<p>would prefer|prefers?|"
    r"likes?|loves?|enjoys?|adores?|dislikes?|hates?|can't stand|(?:doesn't|does not|don't|do not)\s+"
    r"(?:like|enjoy|want|use|eat|drink)|(?:can't|cannot|can not|won't|will not)\s+(?:eat|drink)|"
    r"no longer\s+(?:likes?|uses?|enjoys?|eats?|drinks?)|uses?|eats?|drinks?|avoids?|works?\s+(?:at|for)|lives?\s+in|"
    r"is from|am from|moved to|switched to|left)\s+(?P<o>.+)", re.IGNORECASE)
_CLAIM_ZH = re.compile(r"^(?:用户|我)?(?:也|很|非常|特别|最|更|比较|一直|还是)*(?P<p>不喜欢|讨厌|不再喜欢|不再用|"
                       r"不再使用|更喜欢|喜欢|偏好|偏爱|热爱|爱|习惯|使用|用|住在|来自)(?P<o>.+)")
_CLAIM_ZH_WORK = re.compile(r"^(?:用户|我)?(?:现在)?在(?P<o>.+?)(?:工作|上班|任职)")
_SINGLE_VALUED = frozenset({"employer", "home", "origin", "diet", "marital"})
# states one is in one at a time: "Is pescatarian now" takes back "Is vegetarian", "Is single
# now" "Is married to João"
STATE_GROUPS: dict[str, frozenset[str]] = {
    "diet": frozenset({"vegetarian", "vegan", "pescatarian", "omnivore", "flexitarian", "carnivore"}),
    "marital": frozenset({"married", "single", "divorced", "widowed"}),
}
_STATE_OF = {word: group for group, words in STATE_GROUPS.items() for word in words}
# (not "Is single-minded": the word whole)
_STATE_EN = re.compile(r"^(?:is|am|got|became)\s+(?:now\s+)?(?:an?\s+)?(?:strict\s+)?(?P<o>[a-z]+)(?![\w-])", re.IGNORECASE)

# Two values of one exclusive slot cannot both hold ("Prefers tabs" vs "Prefers spaces").
EXCLUSIVE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"tabs", "spaces"}),
    frozenset({"vim", "emacs", "vscode", "neovim", "nano", "sublime", "intellij", "pycharm", "helix", "zed"}),
    frozenset({"light", "dark"}),
    frozenset({"window", "aisle"}),
    frozenset({"mac", "macos", "windows", "linux"}),
    frozenset({"npm", "yarn", "pnpm"}),
    frozenset({"pip", "poetry", "uv", "conda"}),
)
_EXCLUSIVE_STEMS = tuple(frozenset(stem(w) for w in g) for g in EXCLUSIVE_GROUPS)
# Things of one kind: one of them preferred where another was ("Prefers tea in the morning" /
# "Prefers coffee in the morning") fills one slot with another value, where two things of other
# kinds that only share where they hold stay two facts ("Prefers jeans at work" / "Prefers tea at
# work"). Unlike EXCLUSIVE_GROUPS, liking or drinking both is no clash ("Likes tea" / "Likes coffee").
ONE_KIND_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"tea", "coffee", "decaf", "espresso", "latte", "cappuccino", "matcha", "chai", "cocoa", "juice",
               "water", "milk", "soda", "beer", "wine", "kombucha", "smoothie", "smoothies"}),
    # the Chinese drinks, said with their verb or without ("喝茶" / "喝咖啡": one word each)
    frozenset(d for drink in "茶 咖啡 奶茶 绿茶 红茶 果汁 牛奶 可乐 啤酒 红酒 白酒 酸奶 豆浆".split() for d in (drink, "喝" + drink)),
)
_ONE_KIND_STEMS = tuple(frozenset(stem(w) for w in g) for g in ONE_KIND_GROUPS)


def _one_kind(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two short values (a word or two) that each name one thing of one kind, not the same one:
    "green tea" / "coffee"."""
    if len(a) > 2 or len(b) > 2:
        return False
    for group in _ONE_KIND_STEMS:
        ka, kb = a & group, b & group
        if len(ka) == 1 and len(kb) == 1 and ka != kb:
            return True
    return False

# where the object of a statement ends: a full stop, "but ...", "because ...", a dash,
# or a comma before a clause of its own ("three kids now, our son Max was born in June")
_CUT_EN = re.compile(r"(?<!\bMrs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bProf)(?<!\bMt)(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)"
                     r"[.;!?](?=\s|$)|,\s*(?:but|because|so|although|though|which|since|and then|while|our|my|his|her|"
                     r"their|we|i|he|she|they|it's|it\s+(?:is|was))\b"
                     r"|\s+(?:but|because|although|though|so that)\s+|\s+[-–—]+\s+|(?<=\w)[-–—]\s+"
                     # a clause of another time: "hiking on weekends, last week I went to Yosemite"
                     r"|,\s*(?:yesterday|today|tonight|earlier|recently|lately|last\s+(?:night|week|weekend|month|year|time)"
                     r"|this\s+(?:morning|afternoon|evening|week|weekend|month|year)|next\s+(?:week|weekend|month|year|time)"
                     r"|(?:a|one|two|three|four|five|a\s+few|\d+)\s+(?:days?|weeks?|months?|years?)\s+ago)\b",
                     re.IGNORECASE)
# ... and in Chinese ("周末去爬山，上周去了黄山": the liking is the first clause, the trip another)
_CUT_ZH = re.compile(r"[。；！？;!?]|[，,](?:但|但是|因为|所以|不过|可是)"
                     r"|[，,](?=上周|上个?星期|上个?礼拜|上个?月|上次|昨天|昨晚|前天|去年|前年|今天|刚才|那天|前几天|前段时间"
                     r"|明天|后天|下周|下个?月|明年)")


def clip_object(text: str, cjk: bool) -> str:
    """The object of a statement, up to its first clause break: "tea, but not at night" -> "tea"."""
    cut = (_CUT_ZH if cjk else _CUT_EN).search(text)
    if cut:
        text = text[: cut.start()]
    if text.count('"') % 2:
        text = text.replace('"', "")
    return clip_line(text.strip(" ,，、:：\"'"), 100)


def _predicate(p: str) -> tuple[str, bool]:
    p = p.lower()
    negative = any(n in p for n in ("dislike", "hate", "can't", "n't", "not", "no longer", "不", "讨厌"))
    if "eat" in p or "drink" in p or "avoid" in p:  # "Doesn't eat pork" / "Eats pork", "Avoids caffeine"
        return "consume", not (negative or "avoid" in p)
    if p == "left":  # "Left Globex": works there no more
        return "employer", False
    if "use" in p or "用" in p or "switch" in p:  # "Switched to emacs" / "Uses vim"
        return "use", not negative
    if "work" in p:
        return "employer", True
    if "live" in p or "moved" in p or "住" in p:
        return "home", True
    if "from" in p or "来自" in p:
        return "origin", True
    return "like", not negative


@dataclass(frozen=True, slots=True)
class Claim:
    """A line read as a claim: "Doesn't like coffee" -> group "like", not positive, object {coffee}."""

    group: str = ""  # like, use, consume, employer, home, origin, job, name of <role>; "" when no such claim
    positive: bool = True
    obj: frozenset[str] = frozenset()  # the object's terms
    negated: frozenset[str] = frozenset()  # the terms a correction takes back
    tokens: frozenset[str] = frozenset()  # the whole line's terms
    says_not: bool = False  # the line says "not" (or "n't", 不): it may be a copy of a correction
    replaces: bool = False  # said as a correction or a new one ("Actually I'm a nurse", "my new boss"): see REPLACEABLE
    prefers: bool = False  # a liking said over another ("更喜欢喝咖啡"): takes back the liking of another of its kind


# a job ("Is a nurse", "Works as a senior engineer at Globex") and the name of a relative or a
# colleague ("Mila is their sister"): one may hold two of these at once, so a second one takes
# the first back only when it is said as a correction or as a new one (Claim.replaces)
_JOB_CLAIM = re.compile(r"^(?:is|works\s+as)\s+an?\s+(?P<o>[\w -]+?)(?:\s+(?:at|for|in|with|on)\b.*)?$", re.IGNORECASE)
_NAME_CLAIM = re.compile(r"^(?P<o>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s+is\s+their\s+(?P<r>[a-z]+(?:\s+[a-z]+)?)$")
_SAME_ROLE = {"mom": "mother", "mum": "mother", "dad": "father", "manager": "boss"}
REPLACEABLE_PREFIX = ("job", "name of ")
# eating meat takes back a diet without it: "Eats meat again" / "Is vegetarian"
_DIET_EXCLUDES: dict[str, frozenset[str]] = {
    "vegetarian": frozenset(stem(w) for w in "meat beef pork chicken steak bacon ham lamb turkey sausage sausages burgers "
                                             "fish seafood shellfish salmon tuna".split()),
    "pescatarian": frozenset(stem(w) for w in "meat beef pork chicken steak bacon ham lamb turkey sausage sausages "
                                              "burgers".split()),
}
_DIET_EXCLUDES["vegan"] = _DIET_EXCLUDES["vegetarian"] | frozenset(stem(w) for w in "dairy cheese milk eggs egg butter "
                                                                                      "honey yogurt".split())
_DIET_EXCLUDES["pescetarian"] = _DIET_EXCLUDES["pescatarian"]
_DIET_EXCLUDES = {stem(diet): foods for diet, foods in _DIET_EXCLUDES.items()}  # as the terms of a claim


# "是护士", "是一名软件工程师": a job said in Chinese (the heuristic engine's line for "我是护士")
_JOB_CLAIM_ZH = re.compile(r"^(?:用户)?是(?:一[名个位])?(?P<o>[\u4e00-\u9fff]{0,6}(?:" + "|".join(
    sorted("""老师 教师 护士 医生 大夫 程序员 工程师 律师 会计 会计师 设计师 厨师 司机 警察 记者 编辑 作家 演员 歌手 画家 摄影师
    销售 经理 产品经理 建筑师 药剂师 牙医 兽医 飞行员 空姐 军人 农民 公务员 教授 研究员 科学家 翻译 秘书 店员 服务员 理发师
    快递员 外卖员 电工 木匠 保安 律师助理 咨询师 分析师 运营 产品 前端 后端 测试 架构师""".split(), key=len, reverse=True))
    + r"))$")


def _kind_claim(text: str) -> tuple[str, frozenset[str]] | None:
    """The job or the relative's name ``text`` states: ("job", {nurs}), ("name of sister", {mila}),
    ("job", {护士}) of "是护士"."""
    if has_cjk(text):
        m = _JOB_CLAIM_ZH.match(text)
        return ("job", term_set(m["o"]) or frozenset({m["o"]})) if m else None
    m = _JOB_CLAIM.match(text)
    if m and m["o"].split()[-1].lower() in _JOBS:
        return "job", term_set(m["o"])
    m = _NAME_CLAIM.match(text)
    if m:
        role = _SAME_ROLE.get(m["r"], m["r"])
        return f"name of {role}", term_set(m["o"])
    return None


_SAYS_NOT = re.compile(r"\bnot\b|n['’]t\b|不", re.IGNORECASE)
# "更喜欢喝咖啡", "现在偏好喝咖啡": one liked over another (in English, "Prefers coffee" and "Likes tea"
# stay two facts, as they were)
_PREFERS_ZH = re.compile(r"^(?:用户|我)?(?:现在|目前|如今)?(?:还是)?(?:更喜欢|更爱|偏好|偏爱)")


def parse_claim(content: str, negated: str = "", replaces: bool = False) -> Claim:
    """The claim of ``content``; ``negated`` is what the line takes back when it is a correction;
    ``replaces`` when it is said as a correction or a new one ("Actually I'm a nurse")."""
    text = content.strip()
    kind = _kind_claim(text)
    if kind:
        return Claim(kind[0], True, kind[1], term_set(negated) if negated else frozenset(), term_set(text),
                     bool(_SAYS_NOT.search(text)), replaces)
    m = _CLAIM_ZH_WORK.match(text) if has_cjk(text) else None
    if m:
        group, positive = "employer", True
    else:
        m = (_CLAIM_ZH if has_cjk(text) else _CLAIM_EN).match(text)
        group, positive = _predicate(m["p"]) if m else ("", True)
    taken_back = term_set(negated) if negated else frozenset()
    state = _STATE_EN.match(text) if m is None else None
    if state and state["o"].lower() in _STATE_OF:
        return Claim(_STATE_OF[state["o"].lower()], True, term_set(state["o"]), taken_back, term_set(text),
                     bool(_SAYS_NOT.search(text)))
    obj = term_set(clip_object(m["o"], has_cjk(text))) if m else frozenset()
    return Claim(group, positive, obj, taken_back, term_set(text), bool(_SAYS_NOT.search(text)),
                 prefers=group == "like" and positive and _PREFERS_ZH.match(text) is not None)


def _diet_clash(eats: Claim, diet: Claim) -> bool:
    """``eats`` says the user eats what the diet ``diet`` leaves out."""
    if eats.group != "consume" or not eats.positive or diet.group != "diet":
        return False
    return any(eats.obj & _DIET_EXCLUDES.get(word, frozenset()) for word in diet.obj)


def _exclusive_clash(a: frozenset[str], b: frozenset[str]) -> bool:
    for group in _EXCLUSIVE_STEMS:
        va, vb = a & group, b & group
        if len(va) == 1 and len(vb) == 1 and va != vb:
            rest_a, rest_b = a - group, b - group
            return not rest_a or not rest_b or bool(rest_a & rest_b)
    return False


def contradicts(newer: Claim, older: Claim) -> bool:
    """True when ``newer`` takes ``older`` back: a correction, an opposite liking, a new single value."""
    if newer.negated and newer.negated <= older.tokens:
        affirmed = newer.tokens - newer.negated
        # an older copy of the correction itself stays; a line that said both without a "not"
        # does not ("Is allergic to cats and dogs" after "only allergic to cats, not dogs")
        return not affirmed or not affirmed <= older.tokens or not older.says_not
    if _diet_clash(newer, older) or _diet_clash(older, newer):
        return True  # "Eats meat again" / "Is vegetarian"
    if not newer.group or newer.group != older.group or not newer.obj or not older.obj:
        return False
    same_object = jaccard(newer.obj, older.obj) >= 0.5
    if newer.group.startswith(REPLACEABLE_PREFIX):  # a job, a relative's name: another only as a correction
        return newer.replaces and not same_object
    if newer.positive != older.positive:
        return same_object
    if newer.prefers and _one_kind(newer.obj, older.obj):  # "更喜欢喝咖啡" / "喜欢喝茶"
        return True
    if newer.group in _SINGLE_VALUED:
        return not same_object
    return _exclusive_clash(newer.obj, older.obj)


# a line that names the user as its subject says what the same line without it says: every
# fact is about the user ("The user always wants X" is "Always wants X")
_USER_SUBJECT = re.compile(r"^\s*(?:the\s+user|user)\s*[:：,]?\s+(?=\S)", re.IGNORECASE)


def stored_relation(a: str, b: str, duplicate_at: float) -> str | None:
    """:func:`fact_relation` for two stored lines, the way the dream line and maintenance
    compare whole sets of facts: the same line but for case, spacing and a leading "the
    user" is a duplicate, and a pair that shares no word (most pairs) is judged unrelated
    without reading values."""
    a, b = _USER_SUBJECT.sub("", a), _USER_SUBJECT.sub("", b)
    if exact_key(a) == exact_key(b):
        return "duplicate"
    if not term_set(a) & term_set(b):
        return None
    return fact_relation(a, b, duplicate_at)


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def _alike(a: str, b: str) -> bool:
    """Two terms of one word: "editor" / "editors", "edit" / "editing" (terms are stems)."""
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= 4 and long.startswith(short))


def different_items(a: str, b: str) -> bool:
    """Two lines that say the same kind of thing of two different things, never one thing said
    twice: one frame with another thing in it ("Loves chess on weekends" / "Loves jazz on
    weekends", "Is a fan of Bach" / "Is a fan of jazz"), or each with a value the other lacks
    ("Has a dog named Max" / "Has a dog named Rex", "Lesson 1" / "Lesson 2"). Word overlap
    cannot tell them from a line said again; what folds lines into one (the dream) asks this.

    The frame is what the lines share from their first word on and from their last word
    back; what lies between differs, with no word in common, on both sides."""
    a, b = _USER_SUBJECT.sub("", a), _USER_SUBJECT.sub("", b)
    va, vb = _read_values(a), _read_values(b)
    if va.labels != vb.labels:
        return True
    more_a = bool(va.quantities - vb.quantities) or any(
        k not in vb.idents and not (k in va.names and k in vb.words) for k in va.idents)
    more_b = bool(vb.quantities - va.quantities) or any(
        k not in va.idents and not (k in vb.names and k in va.words) for k in vb.idents)
    if more_a and more_b:
        return True
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    sa, sb = [stem(w) for w in wa], [stem(w) for w in wb]
    head = 0
    while head < min(len(sa), len(sb)) and sa[head] == sb[head]:
        head += 1
    if not head:
        return False  # "Prefers dark mode" / "Likes dark mode": the frame itself differs
    tail = 0
    while tail < min(len(sa), len(sb)) - head and sa[-1 - tail] == sb[-1 - tail]:
        tail += 1
    mid_a = token_set(" ".join(wa[head:len(wa) - tail]))
    mid_b = token_set(" ".join(wb[head:len(wb) - tail]))
    return bool(mid_a and mid_b) and not any(_alike(x, y) for x in mid_a for y in mid_b)


def related_pairs(texts: list[str]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of ``texts`` that :func:`stored_relation` may judge a
    duplicate or a conflict, found through an index instead of trying every pair.

    A pair is kept when the lines are the same but for case and spacing; when they could
    share half their terms (prefix filtering: two term sets with Jaccard >= 0.5 share one of
    each set's first ``|x| - ceil(0.5 |x|) + 1`` terms, rarest first, which covers the
    duplicate threshold and a flipped negation); when they fill the same exclusive slot for
    the same subject; or when they state the same rest with other values. That is every pair
    the judge can relate but for freak cases (a duplicate only by its normalised values, a
    slot whose subject is spelled differently), so a whole set is checked in about the time
    of its related pairs, not of all n^2 / 2."""
    readings = [_reading(t) for t in texts]
    frequency: Counter[str] = Counter(term for r in readings for term in r.tokens)
    index: dict[str, list[int]] = {}
    for i, (text, r) in enumerate(zip(texts, readings)):
        ordered = sorted(r.tokens, key=lambda term: (frequency[term], term))
        prefix = len(ordered) - -(-len(ordered) // 2) + 1  # |x| - ceil(|x| / 2) + 1
        keys = {f"x:{exact_key(text)}"} | {f"t:{term}" for term in ordered[:prefix]}
        if r.verb:
            keys.add(f"s:{r.verb}:{' '.join(sorted(r.subject))}")
        if r.frame:
            keys.add(f"f:{r.frame[0]}:{' '.join(sorted(r.frame[1]))}")
        if r.given_up:  # the line it takes a value back from says little else: any of its terms
            keys |= {f"t:{term}" for term in r.tokens}
        rest = r.values.rest - r.values.name_terms - _UPDATE_WORDS
        keys.add(f"r:{' '.join(sorted(rest))}")  # the bare lines (no rest) share one key
        for key in keys:
            index.setdefault(key, []).append(i)
    return _pairs_within(index)


def _pairs_within(index: dict[str, list[int]]) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, that share a key of ``index`` (each key's positions
    ascending, as the index was built in order)."""
    pairs: set[tuple[int, int]] = set()
    for members in index.values():
        for a, i in enumerate(members):
            for j in members[a + 1:]:
                pairs.add((i, j))
    return sorted(pairs)


def duplicate_pairs(texts: list[str], duplicate_at: float) -> list[tuple[int, int]] | None:
    """The pairs ``(i, j)``, ``i < j``, of ``texts`` that :func:`stored_relation` may call
    duplicates at ``duplicate_at``, found through an index; None when any pair may be
    (``duplicate_at`` <= 0).

    A duplicate is the same line but for case, spacing and "the user", or a pair whose terms
    (or whose values-normalised atoms) have a Jaccard of at least ``duplicate_at``. Two sets
    that close share one of each set's first ``|x| - ceil(t |x|) + 1`` members, rarest first
    (prefix filtering), so at 0.9 a line is indexed under its one or two rarest terms, not
    half of them as for :func:`related_pairs`, and no duplicate is missed."""
    if duplicate_at <= 0:
        return None
    lines = [_USER_SUBJECT.sub("", t) for t in texts]
    readings = [_reading(line) for line in lines]
    index: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        index.setdefault(f"x:{exact_key(line)}", []).append(i)
    for space, sets in (("t", [r.tokens for r in readings]), ("a", [r.atoms for r in readings])):
        frequency: Counter[str] = Counter(m for members in sets for m in members)
        for i, members in enumerate(sets):
            if not members:  # two empty sets are alike (a Jaccard of 1)
                index.setdefault(f"{space}:", []).append(i)
                continue
            ordered = sorted(members, key=lambda m: (frequency[m], m))
            # (a hair under t |x|: 0.9 * 10 is 9.000000000000002 in floating point)
            prefix = len(ordered) - math.ceil(duplicate_at * len(ordered) - 1e-9) + 1
            for member in ordered[:prefix]:
                index.setdefault(f"{space}:{member}", []).append(i)
    return _pairs_within(index)


# what is true only for now ("the server is running on port 8080", "我现在在开会") is no
# durable fact; "from now on ..." announces something lasting
TEMPORARY = re.compile(
    r"\b(?:right now|at the moment|for now|today|tonight|this (?:morning|afternoon|evening)|just now|"
    r"at present|temporarily|for the time being|currently running|is running on|listening on)\b"
    r"|\bport\s+\d+|现在|目前|今天|刚才|刚刚|这会儿|暂时|此刻|当前|端口"
)
DURABLE_NOW = re.compile(r"from now on|going forward|从现在开始|从今以后|从现在起")


def is_temporary(text: str) -> bool:
    """The one rule for a statement that holds only for now (learning, the dream, the engines)."""
    return bool(TEMPORARY.search(DURABLE_NOW.sub(" ", text.lower())))
