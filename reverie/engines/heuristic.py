"""The heuristic engine: offline, deterministic rules for English and Chinese.

It is the embedded default and runs on every ingested turn, so every regex is
compiled once, jieba is touched only by text that holds CJK, and nothing here
reads the clock, the network or a random source: the same input always gives
the same plan.

Usage::

    from reverie.engines.heuristic import HeuristicEngine
    engine = HeuristicEngine()
    engine.perceive(PerceiveRequest(message="What happened last week?", now=now)).route  # "medium"
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from functools import lru_cache

from reverie.claims import fact_relation
from reverie.engines import lexicon as lx
from reverie.engines.base import (
    DistillRequest,
    DreamPlan,
    EpisodeSummary,
    Extraction,
    ExtractRequest,
    FactRef,
    FactRemoval,
    GovernRequest,
    NewFact,
    PerceiveRequest,
    PlanEntry,
    RelationProposal,
    SectionUpdate,
    SummarizeRequest,
    TagDecisions,
    TidyAction,
    TidyPlan,
)
from reverie.engines.lexicon import GENERIC_WORDS
from reverie.models import AREAS, Message, Perception, Profile, TimeRef, as_utc
from reverie.text import CJK_RE, STOPWORDS, has_cjk, normalize_space, stem, token_set, words

__all__ = ["GENERIC_WORDS", "HeuristicEngine", "detect_route", "keyphrases", "resolve_time_refs"]

log = logging.getLogger(__name__)

_CJK_RANGES = CJK_RE.pattern.strip("[]")
_LATIN = rf"[^\W_{_CJK_RANGES}]"
_TOKEN = re.compile(rf"[{_CJK_RANGES}]+|{_LATIN}(?:{_LATIN}|['.+#-](?={_LATIN}))*[+#]*|[.!?;:。！？；：]")
# a sentence ends at . ! ? ; before a space or the end ("3.12" stays whole) and after 。！？；
_SENTENCE = re.compile(r"[^.!?;。！？；\n]+(?:[.!?;]+(?=[^\s.!?;])[^.!?;。！？；\n]*)*[.!?;。！？；]*")
_YEAR = re.compile(r"(?:19|20)\d\d")
_WEAK_STEMS = frozenset(stem(w) for w in lx.WEAK_WORDS)
_MODIFIER_ENDINGS = ("ly", "ful", "ous", "ive", "able", "ible", "less", "ed", "est", "ish")
_MAX_LINE = 120


@lru_cache(maxsize=16384)
def _tokens(text: str) -> frozenset[str]:
    return token_set(text)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text.replace("’", "'")) if s.strip()]


def _clip_line(text: str, limit: int = _MAX_LINE) -> str:
    text = normalize_space(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not has_cjk(cut) and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;，；") + "…"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------- keyphrases

@dataclass(frozen=True, slots=True)
class _Phrase:
    key: str  # stems joined by spaces: what makes two phrases the same
    text: str  # lower-case surface form
    weight: float


@dataclass(frozen=True, slots=True)
class _Analysis:
    """One sentence, read once (and cached: summarize and extract read the same turn)."""

    phrases: tuple[_Phrase, ...]
    stems: tuple[str, ...]  # every content word, for scenes
    n_words: int
    n_dates: int


_ZH_NUMERAL = re.compile(r"[零一二两三四五六七八九十百千万几个]+")
_ZH_PRONOUN_LED = re.compile(r"[我你他她它][\u4e00-\u9fff]$")  # jieba's "我用", "你说"


def _is_content(word: str) -> bool:
    if word in STOPWORDS or word in GENERIC_WORDS or word in lx.WEAK_WORDS or word in lx.NUMBER_WORDS:
        return False
    if _ZH_NUMERAL.fullmatch(word) or _ZH_PRONOUN_LED.match(word):
        return False
    if word.isdigit():
        return len(word) >= 3 and not _YEAR.fullmatch(word)
    if len(word) < 2:
        return False
    s = stem(word)
    return s not in _WEAK_STEMS and s not in GENERIC_WORDS


@lru_cache(maxsize=65536)
def _latin_info(token: str) -> tuple[str, str, bool, bool, str]:
    """(lower-case word, its stem, is content, is a date word, kind) of one Latin token."""
    if token.endswith("'s"):
        token = token[:-2]
    low = token.lower()
    is_date = bool(_YEAR.fullmatch(low)) or low in lx.MONTHS or low in lx.WEEKDAYS
    if any(ch.isdigit() for ch in token):
        kind = "num"
    elif len(token) > 1 and token.isupper():
        kind = "acro"
    else:
        kind = "cap" if token[:1].isupper() else "word"
    return low, stem(low), _is_content(low) if low else False, is_date, kind


@lru_cache(maxsize=65536)
def _cjkwords(run: str) -> tuple[tuple[str, bool], ...]:
    return tuple((w, len(w) >= 2 and _is_content(w)) for w in words(run))


@lru_cache(maxsize=65536)
def _phrase(run: tuple[tuple[str, str], ...], joiner: str) -> _Phrase:
    ws = [w for w, _ in run]
    entity = any(k != "word" for _, k in run)
    weight = 1.0 + 0.5 * (len(ws) - 1) + (1.0 if entity else 0.0) + (0.3 if max(map(len, ws)) >= 7 else 0.0)
    if len(ws) == 1 and not entity and ws[0].endswith(_MODIFIER_ENDINGS):
        weight -= 0.6  # "powerful", "swamped": a lone modifier locates little
    return _Phrase(" ".join(stem(w) for w in ws), joiner.join(ws), weight)


def _is_cjk_char(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


@lru_cache(maxsize=8192)
def _analyze(sentence: str) -> _Analysis:
    """Candidate phrases: runs of content words (names kept apart from common words, 3 words at most)."""
    phrases: list[_Phrase] = []
    stems: list[str] = []
    run: list[tuple[str, str]] = []
    n_words = n_dates = 0
    initial = True
    for token in _TOKEN.findall(sentence):
        first = token[0]
        if _is_cjk_char(first):
            if run:
                phrases.append(_phrase(tuple(run), " "))
                run = []
            for word, content in _cjkwords(token):
                n_words += 1
                if content:
                    run.append((word, "word"))
                    stems.append(word)
                if run and (not content or len(run) == 2):
                    phrases.append(_phrase(tuple(run), ""))
                    run = []
            initial = False
            continue
        if not first.isalnum():
            if run:
                phrases.append(_phrase(tuple(run), " "))
                run = []
            initial = first in ".!?。！？"
            continue
        n_words += 1
        low, stemmed, content, is_date, kind = _latin_info(token)
        n_dates += is_date
        if kind == "cap":
            kind = "word" if initial else "name"
        initial = False
        if not content:
            if run:
                phrases.append(_phrase(tuple(run), " "))
                run = []
            continue
        if run and ((kind == "name" and run[-1][1] == "word") or (kind == "word" and run[-1][1] == "name")):
            phrases.append(_phrase(tuple(run), " "))
            run = []
        run.append((low, kind))
        stems.append(stemmed)
        if len(run) == 3:
            phrases.append(_phrase(tuple(run), " "))
            run = []
    if run:
        phrases.append(_phrase(tuple(run), " "))
    return _Analysis(tuple(phrases), tuple(stems), n_words, n_dates)


def _rank(analyses: list[_Analysis], limit: int) -> list[str]:
    """Best phrases first: weight, repetition, then first appearance; no phrase inside a chosen one."""
    merged: dict[str, list] = {}
    order = 0
    for analysis in analyses:
        for p in analysis.phrases:
            entry = merged.get(p.key)
            if entry is None:
                merged[p.key] = [p.text, p.weight, order, 1]
            else:
                entry[1] = max(entry[1], p.weight)
                entry[3] += 1
            order += 1
    ranked = sorted(merged.items(), key=lambda kv: (-(kv[1][1] + 0.5 * (kv[1][3] - 1)), kv[1][2]))
    chosen: list[str] = []
    chosen_keys: list[set[str]] = []
    for key, (text, *_rest) in ranked:
        parts = set(key.split())
        if any(parts <= c for c in chosen_keys):
            continue
        chosen.append(text)
        chosen_keys.append(parts)
        if len(chosen) >= limit:
            break
    return chosen


def _analyze_text(text: str) -> list[_Analysis]:
    return [_analyze(sentence) for sentence in _sentences(text)]


def keyphrases(text: str, limit: int = 4) -> list[str]:
    """The content phrases of ``text``, best first: ``keyphrases("I love pottery class")`` -> ``["pottery class"]``."""
    return _rank(_analyze_text(text), limit)


# ---------------------------------------------------------------- scenes, intent, emotion, route

_SCENE_INDEX: dict[str, tuple[str, str]] = {}
for _scene_name, _subs in lx.SCENES.items():
    for _sub_name, _keywords in _subs.items():
        for _kw in _keywords:
            _SCENE_INDEX.setdefault(stem(_kw), (_scene_name, _sub_name))

_AREA_INDEX: dict[str, str] = {stem(w): area for area, ws in lx.AREA_WORDS.items() for w in ws}


def _scene(stems: list[str]) -> tuple[str, str]:
    counts: dict[tuple[str, str], int] = {}
    for s in stems:
        hit = _SCENE_INDEX.get(s)
        if hit:
            counts[hit] = counts.get(hit, 0) + 1
    if not counts:
        return "general", ""
    order = list(lx.SCENES)
    totals: dict[str, int] = {}
    for (scene, _), n in counts.items():
        totals[scene] = totals.get(scene, 0) + n
    scene = min(totals, key=lambda s: (-totals[s], order.index(s)))
    subs = list(lx.SCENES[scene])
    sub = min((k for k in counts if k[0] == scene), key=lambda k: (-counts[k], subs.index(k[1])))[1]
    return scene, sub


def _emotion_re(alternation: str) -> re.Pattern[str]:
    parts = alternation.split("|")
    latin = "|".join(p for p in parts if not has_cjk(p))
    cjk = "|".join(p for p in parts if has_cjk(p))
    return re.compile(rf"\b(?:{latin})\b" + (f"|{cjk}" if cjk else ""), re.IGNORECASE)


_EMOTION_RES = {label: _emotion_re(alt) for label, alt in lx.EMOTIONS.items()}


def _emotion(text: str) -> str:
    best, best_n = "neutral", 0
    for label, rx in _EMOTION_RES.items():
        n = len(rx.findall(text))
        if n > best_n:
            best, best_n = label, n
    return best


def _intent(text: str) -> str:
    t = text.strip()
    if lx.GREETING.match(t) and (len(t.split()) <= 6 if not has_cjk(t) else len(t) <= 12):
        return "greeting"
    for intent, rx in (("correction", lx.CORRECTION_CUE), ("feedback", lx.FEEDBACK_CUE),
                       ("request", lx.REQUEST_CUE), ("question", lx.QUESTION_CUE)):
        if rx.search(t):
            return intent
    return "statement"


def detect_route(text: str) -> str:
    """``shallow`` (profile and facts), ``medium`` (+ overviews, notes) or ``deep`` (+ full text)."""
    if lx.DEEP_CUES.search(text):
        return "deep"
    if lx.MEDIUM_CUES.search(text) or any(p.search(text) for p, _ in _TIME_PATTERNS):
        return "medium"
    return "shallow"


# ---------------------------------------------------------------- time references

def _month_range(year: int, month: int) -> tuple[date, date]:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return date(year, month, 1), nxt - timedelta(days=1)


def _shift_month(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _week_range(day: date, weeks: int = 0) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks)
    return monday, monday + timedelta(days=6)


def _year_range(year: int) -> tuple[date, date]:
    return date(year, 1, 1), date(year, 12, 31)


def _recent_year(today: date, month: int, strictly_before: bool = False) -> int:
    """The year of the latest such month that has begun ("in May" asked in March means last May)."""
    if month < today.month or (month == today.month and not strictly_before):
        return today.year
    return today.year - 1


def _day_or_month(year: int, month: int, day: int | None) -> tuple[date, date] | None:
    if not 1 <= month <= 12:
        return None
    if day:
        try:
            d = date(year, month, day)
        except ValueError:
            return None
        return d, d
    return _month_range(year, month)


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return lx.ZH_DIGITS.get(tens, 1) * 10 + lx.ZH_DIGITS.get(ones, 0)
    return lx.ZH_DIGITS.get(text, 1)


def _ago(today: date, n: int, unit: str) -> tuple[date, date]:
    if unit == "day":
        d = today - timedelta(days=n)
        return d, d
    if unit == "week":
        return _week_range(today - timedelta(weeks=n))
    if unit == "month":
        return _month_range(*_shift_month(today, -n))
    return _year_range(today.year - n)


_UNITS_ZH = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}
_MONTH_ALT = "|".join(sorted(lx.MONTHS, key=len, reverse=True))
_ZH_M = r"1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九]"
_ZH_D = r"[12]\d|3[01]|0?[1-9]|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_REL_DAY_EN = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "today": 0, "tonight": 0,
               "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1,
               "the day after tomorrow": 2}
_REL_ZH: dict[str, tuple[str, int]] = {
    **{w: ("year", k) for w, k in (("大前年", -3), ("前年", -2), ("去年", -1), ("今年", 0), ("明年", 1))},
    **{w: ("week", k) for w, k in (("上上周", -2), ("上周", -1), ("上星期", -1), ("上个星期", -1), ("上礼拜", -1),
                                   ("上个礼拜", -1), ("本周", 0), ("这周", 0), ("这个星期", 0), ("这星期", 0),
                                   ("下周", 1), ("下星期", 1), ("下个星期", 1))},
    "上周末": ("weekend", -1),
    **{w: ("month", k) for w, k in (("上上个月", -2), ("上个月", -1), ("上月", -1), ("本月", 0), ("这个月", 0),
                                    ("下个月", 1), ("下月", 1))},
    **{w: ("day", k) for w, k in (("大前天", -3), ("前天", -2), ("昨天", -1), ("昨日", -1), ("昨晚", -1),
                                  ("今天", 0), ("今日", 0), ("今晚", 0), ("今早", 0), ("明天", 1), ("后天", 2))},
}


def _relative(today: date, unit: str, offset: int) -> tuple[date, date]:
    if unit == "day":
        d = today + timedelta(days=offset)
        return d, d
    if unit == "week":
        return _week_range(today, offset)
    if unit == "weekend":
        monday, _ = _week_range(today, offset)
        return monday + timedelta(days=5), monday + timedelta(days=6)
    if unit == "month":
        return _month_range(*_shift_month(today, offset))
    return _year_range(today.year + offset)


def _t_iso(m: re.Match, today: date) -> tuple[date, date] | None:
    return _day_or_month(int(m["y"]), int(m["m"]), int(m["d"]) if m["d"] else None)


def _t_zh_date(m: re.Match, today: date) -> tuple[date, date] | None:
    if not m["m"]:
        return _year_range(int(m["y"]))
    return _day_or_month(int(m["y"]), _zh_number(m["m"]), _zh_number(m["d"]) if m["d"] else None)


def _t_zh_month(m: re.Match, today: date) -> tuple[date, date] | None:
    month = _zh_number(m["m"])
    year = today.year + _REL_ZH[m["pre"]][1] if m["pre"] else _recent_year(today, month)
    return _day_or_month(year, month, _zh_number(m["d"]) if m["d"] else None)


def _t_en_month(m: re.Match, today: date) -> tuple[date, date] | None:
    word, pre, year = m["mon"], (m["pre"] or "").lower(), m["y"]
    day = m["d1"] or m["d2"]
    if word.lower() in lx.AMBIGUOUS_MONTHS and not (year or pre or (day and word[0].isupper())):
        return None
    month = lx.MONTHS[word.lower()]
    y = int(year) if year else _recent_year(today, month, strictly_before=pre == "last")
    return _day_or_month(y, month, int(day) if day else None)


def _t_en_ago(m: re.Match, today: date) -> tuple[date, date] | None:
    raw = m["n"].lower()
    n = int(raw) if raw.isdigit() else lx.NUMBER_WORDS.get(raw, 1)
    return _ago(today, n, m["unit"].lower())


def _t_zh_ago(m: re.Match, today: date) -> tuple[date, date] | None:
    return _ago(today, _zh_number(m["n"]), _UNITS_ZH[m["unit"]])


def _t_en_rel_day(m: re.Match, today: date) -> tuple[date, date] | None:
    return _relative(today, "day", _REL_DAY_EN[normalize_space(m.group(0).lower())])


def _t_en_period(m: re.Match, today: date) -> tuple[date, date] | None:
    rel, unit = m["rel"].lower(), m["unit"].lower()
    if rel in ("past", "the past", "the last") and unit != "weekend":
        span = {"week": 6, "month": 29, "year": 364}[unit]
        return today - timedelta(days=span), today
    offset = {"last": -1, "previous": -1, "past": -1, "the past": -1, "the last": -1, "this": 0, "next": 1}[rel]
    return _relative(today, unit, offset)


def _t_en_weekday(m: re.Match, today: date) -> tuple[date, date] | None:
    back = (today.weekday() - lx.WEEKDAYS[m["wd"].lower()]) % 7
    if m["rel"].lower() in ("last", "this past") and back == 0:
        back = 7
    d = today - timedelta(days=back)
    return d, d


def _t_zh_rel(m: re.Match, today: date) -> tuple[date, date] | None:
    return _relative(today, *_REL_ZH[m.group(0)])


def _t_year(m: re.Match, today: date) -> tuple[date, date] | None:
    return _year_range(int(m["y"]))


_NUM_EN = "|".join(sorted((re.escape(k) for k in lx.NUMBER_WORDS), key=len, reverse=True))
_TIME_PATTERNS: tuple[tuple[re.Pattern[str], object], ...] = tuple(
    (re.compile(p, re.IGNORECASE), handler)
    for p, handler in (
        (r"\b(?P<y>(?:19|20)\d\d)[-/](?P<m>\d{1,2})(?:[-/](?P<d>\d{1,2}))?\b", _t_iso),
        (rf"(?P<y>(?:19|20)\d\d)\s*年\s*(?:(?P<m>{_ZH_M})\s*月份?\s*(?:(?P<d>{_ZH_D})\s*[日号])?)?", _t_zh_date),
        (rf"(?P<pre>去年|今年|前年|明年)?(?<![\d个])(?P<m>{_ZH_M})月份?(?:(?P<d>{_ZH_D})[日号])?", _t_zh_month),
        (rf"\b(?:(?P<pre>in|during|since|last|this|early|late|mid|until|by|on)\s+(?:the\s+)?)?"
         rf"(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<mon>{_MONTH_ALT})\b\.?"
         rf"(?:\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<y>(?:19|20)\d\d)\b)?", _t_en_month),
        (rf"\b(?P<n>\d+|{_NUM_EN})\s+(?P<unit>day|week|month|year)s?\s+ago\b", _t_en_ago),
        (r"(?P<n>\d+|[零一二两三四五六七八九十几]+)\s*个?(?P<unit>天|日|周|星期|礼拜|月|年)(?:前|之前|以前)", _t_zh_ago),
        (r"\b(?:the day before yesterday|the day after tomorrow|yesterday|last\s+night|today|tonight|"
         r"this\s+(?:morning|afternoon|evening)|tomorrow)\b", _t_en_rel_day),
        (r"\b(?P<rel>last|previous|this|next|the past|past|the last)\s+(?P<unit>week|month|year|weekend)\b",
         _t_en_period),
        (r"\b(?P<rel>last|this past|on|this)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
         _t_en_weekday),
        ("|".join(sorted(_REL_ZH, key=len, reverse=True)), _t_zh_rel),
        (r"\b(?P<y>(?:19|20)\d\d)\b", _t_year),
    )
)


def resolve_time_refs(text: str, now: datetime) -> list[TimeRef]:
    """Dates the text refers to, as whole days in ``now``'s time zone, in reading order.

    ``resolve_time_refs("what did we do last week?", now)`` gives one TimeRef from
    Monday 00:00 to Sunday 23:59:59.999999 of the week before ``now``'s week.
    """
    today = now.date()
    # spans already taken, kept sorted and disjoint: an overlap test is two neighbours
    # (bisect), so the whole pass stays linear in the text, however many dates it holds
    starts: list[int] = []
    ends: list[int] = []
    found: list[tuple[int, TimeRef]] = []
    for pattern, handler in _TIME_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            at = bisect.bisect_right(starts, start)
            if (at > 0 and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                continue
            span = handler(m, today)
            if span is None:
                continue
            starts.insert(at, start)
            ends.insert(at, end)
            found.append((start, TimeRef(
                text=m.group(0).strip(),
                start=datetime.combine(span[0], time.min, tzinfo=now.tzinfo),
                end=datetime.combine(span[1], time.max, tzinfo=now.tzinfo),
            )))
    return [ref for _, ref in sorted(found, key=lambda item: item[0])]


# ---------------------------------------------------------------- tags

def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _tag_key(name: str) -> str:
    """Case, hyphens, plurals and -ing/-ed folded: "Code-Styles" and "code style" share a key."""
    return " ".join(stem(_singular(w)) for w in words(name))


@lru_cache(maxsize=64)
def _tag_index(known: tuple[str, ...]) -> dict[str, str]:
    index: dict[str, str] = {}
    for name in known:
        index.setdefault(_tag_key(name), name)
    return index


def _map_tags(phrases: list[str], known: list[str], limit: int = 4) -> list[str]:
    """Known tags that the phrases name, whole or in part; never a tag that is not known."""
    if not known:
        return []
    index = _tag_index(tuple(known))
    tags: list[str] = []
    for phrase in phrases:
        parts = [stem(w) for w in words(phrase)]
        # the whole phrase first, then its shorter runs: "lgbtq support group" -> "support group", "lgbtq"
        spans = [" ".join(parts[i:i + n]) for n in range(len(parts), 0, -1) for i in range(len(parts) - n + 1)]
        for span in spans:
            tag = index.get(span)
            if tag and tag not in tags:
                tags.append(tag)
                if len(tags) >= limit:
                    return tags
    return tags


# ---------------------------------------------------------------- English person and verbs

_UNCHANGED_VERBS = frozenset(
    """can could will would shall should may might must always never usually often sometimes rarely also
    just still really went was were had did got made saw took came gave found felt thought told said bought ran
    met left knew began wrote heard kept lost won became brought taught sent spent built sat stood paid drove
    ate fell forgot understood chose picked agreed decided settled meant""".split()
)
_IRREGULAR = {"be": "is", "am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't"}
_PRONOUNS = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs", "i": "they", "i'm": "they're",
             "i've": "they've", "i'll": "they'll", "i'd": "they'd", "our": "their", "ours": "theirs", "we": "they",
             "we're": "they're", "we've": "they've"}
_PRONOUN_RE = re.compile(r"\b(?:i'm|i've|i'll|i'd|we're|we've|myself|mine|my|me|i|our|ours|we)\b", re.IGNORECASE)
_CLAUSE_SUBJECT = re.compile(
    r"^(?:(?P<be>i'm|i am|we're|we are)|(?P<has>i've|we've)|(?P<will>i'll|we'll)|(?P<would>i'd|we'd)"
    r"|(?:i|we)\s+(?P<adv>(?:really|also|just|still|always|never|usually|often|sometimes|actually)\s+)*"
    r"(?P<v>[\w']+))\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def _third_verb(verb: str) -> str:
    """"prefer" -> "prefers", "don't like" -> "doesn't like"; past tenses and modals stay."""
    head, _, tail = verb.partition(" ")
    low = head.lower()
    if low == "do" and tail.startswith("not"):
        out = "does"
    elif low in _IRREGULAR:
        out = _IRREGULAR[low]
    elif low in _UNCHANGED_VERBS or (low.endswith("ed") and not low.endswith("eed")) or low.endswith("n't") \
            or not low.isalpha():
        out = head
    elif low.endswith(("ss", "us", "sh", "ch", "x", "z", "o")):
        out = head + "es"
    elif low.endswith("s"):
        out = head
    elif len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        out = head[:-1] + "ies"
    else:
        out = head + "s"
    return f"{out} {tail}" if tail else out


def _swap_pronouns(text: str) -> str:
    return _PRONOUN_RE.sub(lambda m: _PRONOUNS[m.group(0).lower()], text)


def _third_clause(clause: str) -> str:
    """"I use vim" -> "Uses vim"; a clause without a first-person subject stays as written."""
    m = _CLAUSE_SUBJECT.match(clause)
    if not m:
        return _cap(clause)
    rest = _swap_pronouns(m["rest"])
    for group, word in (("be", "is"), ("has", "has"), ("will", "will"), ("would", "would")):
        if m[group]:
            return _cap(word + rest)
    return _cap((m["adv"] or "") + _third_verb(m["v"]) + rest)


def _conjugate_first(text: str) -> str:
    head, _, tail = text.partition(" ")
    return f"{_third_verb(head)} {tail}" if tail else _third_verb(head)


# ---------------------------------------------------------------- signals (extract)

@dataclass(slots=True)
class _Signal:
    content: str
    category: str
    confidence: float
    section: str | None = None
    negated: str = ""  # what a correction takes back
    canon: tuple[str, ...] = ()  # cognitive habits in the summary's wording
    sources: list[str] = field(default_factory=list)


_COGNITIVE_EN = [(re.compile(p, re.IGNORECASE), c) for p, c in lx.COGNITIVE_EN]
_COGNITIVE_ZH = [(re.compile(p), c) for p, c in lx.COGNITIVE_ZH]
_CUT_EN = re.compile(r"[.;!?](?=\s|$)|,\s*(?:but|because|so|although|though|which|since|and then|while)\b"
                     r"|\s+(?:but|because|although|though|so that)\s+|\s+[-–—]+\s+|(?<=\w)[-–—]\s+",
                     re.IGNORECASE)
_CUT_ZH = re.compile(r"[。；！？;!?]|[，,](?:但|但是|因为|所以|不过|可是)")
_POLITE_EN = re.compile(r"^(?:please|pls|i'd like you to|i want you to|can you|could you|would you)\b[,\s]*",
                        re.IGNORECASE)
_POLITE_ZH = re.compile(r"^(?:请|麻烦|我希望你?|希望你?|以后|你|回答时|回答的时候)+[，,]?")
_ZH_SELF = re.compile(r"^我(?!们)")
# "I love that you chose pottery", "I love it, it brings us closer": a reaction, not a preference
_VAGUE_OBJECT = re.compile(r"(?:it|that|this|them|you|your|him|her|how|what|when|the way|those|these|everyone|"
                           r"everything)\b", re.IGNORECASE)
# "User: ..." / "Caroline: ..." / "用户：..." opens a note line; "Lesson learned: ..." is no speaker
_SPEAKER_PREFIX = re.compile(r"^(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}:\s+|[\u4e00-\u9fff]{1,6}：)")


def _has_content(text: str) -> bool:
    return any(_is_content(w) for w in words(text))


def _clip_object(text: str, cjk: bool) -> str:
    cut = (_CUT_ZH if cjk else _CUT_EN).search(text)
    if cut:
        text = text[: cut.start()]
    if text.count('"') % 2:
        text = text.replace('"', "")
    return _clip_line(text.strip(" ,，、:：\"'"), 100)


@dataclass(slots=True)
class _Clause:
    """A clause, lower-cased once, with its English words: what the cue gates look at."""

    text: str
    low: str
    cjk: bool
    present: frozenset[str]

    @classmethod
    def of(cls, text: str) -> "_Clause":
        low = text.lower()
        return cls(text, low, has_cjk(text), frozenset(_WORD_EN.findall(low)))

    def has_cue(self, cues: tuple[frozenset[str], tuple[str, ...]]) -> bool:
        """A cue word among the clause's English words, or a Chinese cue inside a CJK clause."""
        words_en, substrings = cues
        return not words_en.isdisjoint(self.present) or (self.cjk and any(c in self.low for c in substrings))


def _cues(cues: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    return frozenset(c for c in cues if not has_cjk(c)), tuple(c for c in cues if has_cjk(c))


_WORD_EN = re.compile(r"[a-z']+")


def _by_cue(rules: tuple[lx.Rule, ...]) -> dict[str, tuple[int, ...]]:
    cues = sorted({c for rule in rules for c in rule.cues})
    return {cue: tuple(i for i, rule in enumerate(rules) if cue in rule.cues) for cue in cues}


_RULES_BY_CUE_EN = _by_cue(lx.RULES_EN)
_RULE_CUES_EN = frozenset(_RULES_BY_CUE_EN)
_RULES_BY_CUE_ZH = _by_cue(lx.RULES_ZH)


def _candidate_rules(clause: "_Clause") -> list[lx.Rule]:
    """The rules whose cues the clause holds, in rule order."""
    if clause.cjk:
        rules, index = lx.RULES_ZH, _RULES_BY_CUE_ZH
        hits = [cue for cue in index if cue in clause.text]
    else:
        rules, index = lx.RULES_EN, _RULES_BY_CUE_EN
        hits = clause.present & _RULE_CUES_EN
    return [rules[i] for i in sorted({i for cue in hits for i in index[cue]})]
_TEMPORARY_CUES = _cues(lx.TEMPORARY_CUES)
_COGNITIVE_CUES = _cues(lx.COGNITIVE_CUES)


def _cognitive(clause: _Clause) -> _Signal | None:
    if not clause.has_cue(_COGNITIVE_CUES):
        return None
    cjk, text = clause.cjk, clause.text
    canon = tuple(dict.fromkeys(c for rx, c in (_COGNITIVE_ZH if cjk else _COGNITIVE_EN) if rx.search(text)))
    if not canon:
        return None
    cleaned = (_POLITE_ZH if cjk else _POLITE_EN).sub("", text).strip(" 。.!！")
    content = cleaned if cjk else _third_clause(cleaned)
    if len(content) > 80:
        content = ("；" if cjk else "; ").join(canon)
    return _Signal(_clip_line(content), "cognitive", 0.9, "cognitiveStyle", canon=canon)


def _render(rule: lx.Rule, m: re.Match, cjk: bool) -> str | None:
    raw = _clip_object(m["x"], cjk)
    if not raw or not _has_content(raw):
        return None
    if not cjk and rule.category in ("preference", "behavior") and _VAGUE_OBJECT.match(raw):
        return None
    groups = m.groupdict()
    verb = (groups.get("v") or "").strip()
    if cjk:
        raw = _ZH_SELF.sub("", raw)
    values = {"v": verb, "Vraw": _cap(verb), "raw": raw, "Raw": _cap(raw)}
    if not cjk:
        x = _swap_pronouns(raw)
        w = groups.get("w") or ""
        values.update(V=_cap(_third_verb(verb.lower())) if verb else "", x=x, xv=_conjugate_first(x),
                      X=_third_clause(raw), w=w, w3=_third_verb(w) if w else "")
    return _clip_line(rule.template.format(**values))


def _negated(sentence: str, rule: lx.Rule, m: re.Match, cjk: bool) -> str:
    if rule.negates:
        return _clip_object(m["x"], cjk)
    if rule.category != "correction":
        return ""
    found = (lx.NEGATED_ZH if cjk else lx.NEGATED_EN).search(sentence)
    return found["y"].strip() if found else ""


def _is_temporary(clause: _Clause) -> bool:
    return clause.has_cue(_TEMPORARY_CUES) and bool(lx.TEMPORARY.search(lx.DURABLE_NOW.sub(" ", clause.low)))


def _is_noise(clause: _Clause) -> bool:
    return any(c in clause.low for c in lx.NOISE_CUES) and bool(lx.NOISE.search(clause.low))


def _signal(text: str) -> _Signal | None:
    """The one durable signal a clause carries, or None (questions, temporary state, noise)."""
    s = text.strip()
    if not s or s.endswith(("?", "？")):
        return None
    clause = _Clause.of(s)
    if lx.HEDGE.search(clause.low) or _is_noise(clause) or _is_temporary(clause):
        return None
    cognitive = _cognitive(clause)
    if cognitive:
        return cognitive
    for rule in _candidate_rules(clause):
        m = rule.pattern.search(s)
        if not m:
            continue
        content = _render(rule, m, clause.cjk)
        if content is None:
            continue
        section = rule.section
        if section == "workContext" and any(w in lx.PERSONAL_ROLES for w in words(m["x"])):
            section = "personalContext"
        return _Signal(content, rule.category, rule.confidence, section, _negated(s, rule, m, clause.cjk))
    return None


_CLAUSE_START = re.compile(r"[,，;；]\s*(?:(?:and|but|also|so)\s+|而且|并且|但是?|所以|也)?(?=我|(?:i|i'm|we|my)\b)",
                           re.IGNORECASE)


def _clauses(sentence: str) -> list[str]:
    """A sentence cut where a new first-person clause starts ("..., and I prefer ...", "...，我喜欢...")."""
    pieces: list[str] = []
    start = 0
    for m in _CLAUSE_START.finditer(sentence):
        if len(sentence[start:m.start()].strip()) >= 4:  # "No, I meant ..." stays whole
            pieces.append(sentence[start:m.start()])
            start = m.end()
    pieces.append(sentence[start:])
    return [p.strip() for p in pieces if p.strip()]


def _line_signals(text: str) -> list[_Signal]:
    """Signals of a message or a note line, clause by clause."""
    found = []
    for sentence in _sentences(text):
        for clause in _clauses(sentence):
            sig = _signal(clause)
            if sig:
                found.append(sig)
    return found


def _area(content: str, category: str) -> str | None:
    if category == "cognitive":
        return "Communication"
    if category not in ("preference", "constraint", "behavior"):
        return None
    counts: dict[str, int] = {}
    for s in _tokens(content):
        area = _AREA_INDEX.get(s)
        if area:
            counts[area] = counts.get(area, 0) + 1
    if not counts:
        return "General"
    return min(counts, key=lambda a: (-counts[a], AREAS.index(a)))


# ---------------------------------------------------------------- conflicts (extract and distill)

_CLAIM_EN = re.compile(
    r"^(?:(?:the\s+)?user\s+|i\s+|we\s+)?(?:really\s+|also\s+|still\s+|actually\s+)?(?P<p>would prefer|prefers?|"
    r"likes?|loves?|enjoys?|adores?|dislikes?|hates?|can't stand|(?:doesn't|does not|don't|do not)\s+"
    r"(?:like|enjoy|want|use)|no longer\s+(?:likes?|uses?|enjoys?)|uses?|works?\s+(?:at|for)|lives?\s+in|"
    r"is from|am from|moved to)\s+(?P<o>.+)", re.IGNORECASE)
_CLAIM_ZH = re.compile(r"^(?:用户|我)?(?:也|很|非常|特别|最|更|比较|一直|还是)*(?P<p>不喜欢|讨厌|不再喜欢|不再用|"
                       r"不再使用|更喜欢|喜欢|偏好|偏爱|热爱|爱|习惯|使用|用|住在|来自)(?P<o>.+)")
_CLAIM_ZH_WORK = re.compile(r"^(?:用户|我)?(?:现在)?在(?P<o>.+?)(?:工作|上班|任职)")
_SINGLE_VALUED = frozenset({"employer", "home", "origin"})
_EXCLUSIVE = tuple(frozenset(stem(w) for w in g) for g in lx.EXCLUSIVE_GROUPS)


def _predicate(p: str) -> tuple[str, bool]:
    p = p.lower()
    negative = any(n in p for n in ("dislike", "hate", "can't", "n't", "not", "no longer", "不", "讨厌"))
    if "use" in p or "用" in p:
        return "use", not negative
    if "work" in p:
        return "employer", True
    if "live" in p or "moved" in p or "住" in p:
        return "home", True
    if "from" in p or "来自" in p:
        return "origin", True
    return "like", not negative


@dataclass(frozen=True, slots=True)
class _Claim:
    group: str = ""
    positive: bool = True
    obj: frozenset[str] = frozenset()
    negated: frozenset[str] = frozenset()
    tokens: frozenset[str] = frozenset()


def _claim(content: str, negated: str = "") -> _Claim:
    text = content.strip()
    m = _CLAIM_ZH_WORK.match(text) if has_cjk(text) else None
    if m:
        group, positive = "employer", True
    else:
        m = (_CLAIM_ZH if has_cjk(text) else _CLAIM_EN).match(text)
        group, positive = _predicate(m["p"]) if m else ("", True)
    obj = _tokens(_clip_object(m["o"], has_cjk(text))) if m else frozenset()
    return _Claim(group, positive, obj, _tokens(negated) if negated else frozenset(), _tokens(text))


def _exclusive_clash(a: frozenset[str], b: frozenset[str]) -> bool:
    for group in _EXCLUSIVE:
        va, vb = a & group, b & group
        if len(va) == 1 and len(vb) == 1 and va != vb:
            rest_a, rest_b = a - group, b - group
            return not rest_a or not rest_b or bool(rest_a & rest_b)
    return False


def _contradicts(newer: _Claim, older: _Claim) -> bool:
    """True when ``newer`` takes ``older`` back: a correction, an opposite liking, a new single value."""
    if newer.negated and newer.negated <= older.tokens:
        affirmed = newer.tokens - newer.negated
        return not affirmed or not affirmed <= older.tokens  # an older copy of the correction itself stays
    if not newer.group or newer.group != older.group or not newer.obj or not older.obj:
        return False
    same_object = _overlap(newer.obj, older.obj) >= 0.5
    if newer.positive != older.positive:
        return same_object
    if newer.group in _SINGLE_VALUED:
        return not same_object
    return _exclusive_clash(newer.obj, older.obj)


# ---------------------------------------------------------------- profile sections

_SUMMARY_PARTS = re.compile(r"[;；。\n]|\.\s")


def _same_line(a: str, b: str) -> bool:
    la, lb = a.casefold().strip(" .。"), b.casefold().strip(" .。")
    return la in lb or lb in la or _overlap(_tokens(a), _tokens(b)) >= 0.6


def _merge_summary(existing: str, additions: list[str]) -> str:
    """The existing summary with each new line added once; nothing already said is
    repeated, and a part the new line contradicts ("Lives in Berlin" after "Lives in
    Lisbon") gives way to it."""
    parts = [p.strip() for p in _SUMMARY_PARTS.split(existing) if p.strip()]
    changed = False
    for line in additions:
        kept = [p for p in parts if fact_relation(line, p, 0.7) != "conflict"]
        if len(kept) == len(parts) and any(_same_line(line, p) for p in parts):
            continue
        parts, changed = kept + [line], True
    if not changed:
        return existing.strip()
    merged = ""
    for part in parts:
        if merged:
            merged = merged.rstrip(" ;；") + ("；" if has_cjk(part) else "; ")
        merged += part
    return merged


def _section_updates(signals: list[_Signal], profile: Profile) -> dict[str, SectionUpdate]:
    additions: dict[str, list[str]] = {}
    for sig in signals:
        if sig.section and sig.confidence >= 0.85:
            additions.setdefault(sig.section, []).extend(sig.canon or (sig.content,))
    updates: dict[str, SectionUpdate] = {}
    for section, lines in additions.items():
        existing = profile.section(f"user.{section}").summary
        merged = _merge_summary(existing, lines)
        if merged != existing.strip():
            updates[section] = SectionUpdate(summary=merged, should_update=True)
    return updates


# ---------------------------------------------------------------- extract

def _is_user(message: Message, speakers: set[str]) -> bool:
    if speakers:
        return (message.speaker or "").casefold() in speakers
    return message.role == "user"


def _fact_tags(content: str, category: str) -> list[str]:
    return keyphrases(content, 3) or [category]


def _collect_signals(request: ExtractRequest) -> tuple[list[_Signal], list[str]]:
    speakers = {s.casefold() for s in request.user_speakers}
    signals: list[_Signal] = []
    texts: list[str] = []
    for i, message in enumerate(request.messages):
        if not _is_user(message, speakers):
            continue
        texts.append(message.content)
        source = request.episode_ids[i] if i < len(request.episode_ids) else message.source_id
        for sig in _line_signals(message.content):
            twin = next((s for s in signals if _overlap(_tokens(s.content), _tokens(sig.content)) >= 0.6), None)
            target = twin or sig
            if twin is None:
                signals.append(sig)
            else:
                twin.confidence = max(twin.confidence, sig.confidence)
            if source and source not in target.sources:
                target.sources.append(source)
    return signals, texts


_TWIN = 0.6  # a stored fact this close says the same: reinforce it


def _reconcile(sig: _Signal, stored: list[tuple[FactRef, _Claim]], removed: set[str], result: Extraction) -> bool:
    """Marks the stored facts ``sig`` takes back; True when a stored fact already says it (reinforce it)."""
    if not stored:
        return False
    claim = _claim(sig.content, sig.negated)
    for fact, old in stored:
        if fact.id not in removed and (
            _contradicts(claim, old) or fact_relation(sig.content, fact.content, _TWIN) == "conflict"
        ):
            removed.add(fact.id)
            result.facts_to_remove.append(FactRemoval(id=fact.id, reason=f"contradicted by: {sig.content}"))
    twin = next((f for f, old in stored if f.id not in removed and _overlap(claim.tokens, old.tokens) >= _TWIN), None)
    if twin is None:
        return False
    if twin.id not in result.facts_to_reinforce:
        result.facts_to_reinforce.append(twin.id)
    return True


def _extract(request: ExtractRequest) -> Extraction:
    signals, texts = _collect_signals(request)
    result = Extraction(tags=keyphrases("\n".join(texts), 4) if texts else [])
    if not signals:
        return result
    stored = [(f, _claim(f.content)) for f in request.facts]
    removed: set[str] = set()
    for sig in signals:
        if _reconcile(sig, stored, removed, result):
            continue
        result.new_facts.append(NewFact(
            content=sig.content, category=sig.category, confidence=sig.confidence,
            area=_area(sig.content, sig.category), tags=_fact_tags(sig.content, sig.category), sources=sig.sources,
        ))
    result.user = _section_updates(signals, request.profile)
    return result


# ---------------------------------------------------------------- summarize

_INTERJECTION = re.compile(r"^(?:(?:hey|hi|hello|wow|oh|well|so|yeah|yes|haha|lol|omg|ok|okay|um|uh|hmm|btw|"
                           r"anyway|aw+|ah)\b[\s,!.~]*)+", re.IGNORECASE)
_ROLE_LABELS = {"user": ("User", "用户"), "assistant": ("Assistant", "助手")}


@dataclass(slots=True)
class _Unit:
    label: str
    text: str
    score: float
    order: int


def _label(message: Message, cjk: bool) -> str:
    if message.speaker:
        return message.speaker
    en, zh = _ROLE_LABELS.get(message.role, (message.role.title(), message.role))
    return zh if cjk else en


def _said(label: str, text: str) -> str:
    return f"{label}：{text}" if has_cjk(text) else f"{label}: {text}"


def _informativeness(sentence: str, analysis: _Analysis) -> float:
    base = sum(p.weight for p in analysis.phrases) + 0.5 * analysis.n_dates
    score = base / max(analysis.n_words, 6) ** 0.3
    if lx.GREETING.match(sentence):
        score *= 0.3
    if sentence.endswith(("?", "？")):
        score *= 0.6
    return score


def _length(text: str) -> float:
    """Words, counting 2.5 Chinese characters as one."""
    if not has_cjk(text):
        return len(text.split())
    cjk = len(CJK_RE.findall(text))
    return len(CJK_RE.sub(" ", text).split()) + cjk / 2.5


def _clipwords(text: str, limit: float) -> str:
    if _length(text) <= limit:
        return text
    if has_cjk(text):
        return text[: int(limit * 2.5)].rstrip("，,、 ") + "…"
    return " ".join(text.split()[: int(limit)]).rstrip(",;: ") + "…"


def _compress(sentence: str) -> str:
    """The sentence without greeting words, its first-person subject folded into the speaker label."""
    text = _INTERJECTION.sub("", sentence).strip() or sentence
    if not has_cjk(text) and _CLAUSE_SUBJECT.match(text):
        clause = _third_clause(text)
        text = clause[:1].lower() + clause[1:]
    return text.rstrip(" .!。！")


def _units(messages: list[Message]) -> tuple[list[_Unit], list[_Analysis]]:
    units: list[_Unit] = []
    analyses: list[_Analysis] = []
    for message in messages:
        for sentence in _sentences(message.content):
            analysis = _analyze(sentence)
            analyses.append(analysis)
            units.append(_Unit(_label(message, has_cjk(sentence)), sentence,
                               _informativeness(sentence, analysis), len(units)))
    return units, analyses


def _overview(units: list[_Unit], budget: float = 60) -> str:
    chosen: list[_Unit] = []
    used = 0.0
    for unit in sorted(units, key=lambda u: (-u.score, u.order)):
        if len(chosen) == 3 or used >= budget - 3:
            break
        text = _clipwords(_INTERJECTION.sub("", unit.text).strip() or unit.text, budget - used)
        used += _length(text)
        chosen.append(_Unit(unit.label, text, unit.score, unit.order))
    pieces: list[str] = []
    last_label = None
    for unit in sorted(chosen, key=lambda u: u.order):
        pieces.append(unit.text if unit.label == last_label else _said(unit.label, unit.text))
        last_label = unit.label
    return " ".join(pieces)


def _summarize(request: SummarizeRequest) -> EpisodeSummary:
    units, analyses = _units(request.messages)
    if not units:
        return EpisodeSummary()
    best = min(units, key=lambda u: (-u.score, u.order))
    compressed = _compress(best.text)
    summary = _said(best.label, _clipwords(compressed, 24))
    scene, sub = _scene([s for a in analyses for s in a.stems])
    return EpisodeSummary(
        summary=summary, overview=_overview(units),
        tags=_rank(analyses, 4), scene=scene, sub_scene=sub,
    )


# ---------------------------------------------------------------- perceive

def _perceive(request: PerceiveRequest) -> Perception:
    text = request.message
    analyses = _analyze_text(text)
    phrases = _rank(analyses, 6)
    scene, sub = _scene([s for a in analyses for s in a.stems])
    return Perception(
        route=detect_route(text), scene=scene, sub_scene=sub, intent=_intent(text), emotion=_emotion(text),
        time_refs=resolve_time_refs(text, request.now), keyphrases=phrases,
        tags=_map_tags(phrases, request.known_tags),
    )


# ---------------------------------------------------------------- distill (Deep Dream)

_ARTIFACT = re.compile(r"^[\s\-*#>`_=|\[\]().:;,。，、~]*$")
_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


def _drop_reason(content: str) -> str | None:
    """Why a line has no place in long-term memory (seed 004's "clean invalid"), or None."""
    if _ARTIFACT.match(content):
        return "empty or a formatting artifact"
    clause = _Clause.of(content)
    if _is_temporary(clause) or _is_noise(clause):
        return "temporary state"
    if not _has_content(content):
        return "too generic"
    return None


@dataclass(slots=True)
class _Item:
    id: str
    content: str
    category: str
    confidence: float
    uses: int
    when: datetime
    order: int
    is_fact: bool
    source_text: str  # the input text the content must stay within
    claim: _Claim


@dataclass(slots=True)
class _Cluster:
    items: list[_Item]

    @property
    def head(self) -> _Item:
        return self.items[0]

    @property
    def when(self) -> datetime:
        return max(i.when for i in self.items)


def _note_time(day: str) -> datetime:
    try:
        return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return _EPOCH


def _recency(when: datetime) -> float:
    """Sort key: newer first, an unknown time last."""
    return -when.timestamp() if when > _EPOCH else 0.0


def _rank_key(item: _Item) -> tuple:
    return (-item.uses, -item.confidence, _recency(item.when), item.order)


def _similar(a: _Item, b: _Item) -> bool:
    ta, tb = a.claim.tokens, b.claim.tokens
    if _contradicts(a.claim, b.claim) or _contradicts(b.claim, a.claim):
        return False
    if a.content.casefold() == b.content.casefold() or _overlap(ta, tb) >= 0.5:
        return True
    small, large = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    return len(small) >= 2 and small <= large


_AGENT_LINE = re.compile(r"^\s*(?:assistant|agent|bot|助手)\s*[:：]", re.IGNORECASE)


def _note_text(line: str) -> str:
    """A note line as the signal rules read it: "User: prefers tabs" (a summary) -> "The user prefers tabs"."""
    line = line.strip()
    label = _SPEAKER_PREFIX.match(line)
    if not label:
        return line
    rest = line[label.end():]
    return f"The user {rest}" if rest[:1].islower() else rest


def _dream_items(request: DistillRequest, removals: list[PlanEntry]) -> list[_Item]:
    items: list[_Item] = []
    for fact in request.facts:
        reason = _drop_reason(fact.content)
        if reason:
            removals.append(PlanEntry(action="remove", content=fact.content, category=fact.category,
                                      sources=[fact.id], reason=reason))
            continue
        when = as_utc(fact.updated_at) if fact.updated_at else _EPOCH
        negated = ""
        if fact.category == "correction":
            found = (lx.NEGATED_ZH if has_cjk(fact.content) else lx.NEGATED_EN).search(fact.content)
            negated = found["y"] if found else ""
        items.append(_Item(fact.id, fact.content.strip(), fact.category, fact.confidence, fact.uses, when,
                           len(items), True, fact.content, _claim(fact.content, negated)))
    for note in request.notes:
        if _AGENT_LINE.match(note.content):
            continue  # what the agent said is no fact about the user
        for sig in _line_signals(_note_text(note.content)):
            items.append(_Item(note.id, sig.content, sig.category, sig.confidence, 0, _note_time(note.date),
                               len(items), False, note.content, _claim(sig.content, sig.negated)))
    return items


def _cluster(items: list[_Item]) -> list[_Cluster]:
    clusters: list[_Cluster] = []
    for item in sorted(items, key=_rank_key):
        home = next((c for c in clusters if _similar(item, c.head)), None)
        if home is None:
            clusters.append(_Cluster([item]))
        else:
            home.items.append(item)
    return clusters


def _supersede(clusters: list[_Cluster]) -> tuple[list[_Cluster], list[PlanEntry]]:
    """Newer wins on a same-subject conflict; every fact of the older side is removed."""
    kept: list[_Cluster] = []
    removals: list[PlanEntry] = []
    for cluster in sorted(clusters, key=lambda c: (_recency(c.when), c.head.order)):
        winner = next((k for k in kept if _contradicts(k.head.claim, cluster.head.claim)
                       or _contradicts(cluster.head.claim, k.head.claim)), None)
        if winner is None:
            kept.append(cluster)
            continue
        removals.extend(PlanEntry(action="remove", content=i.content, category=i.category, sources=[i.id],
                                  reason=f"superseded by {winner.head.id}") for i in cluster.items if i.is_fact)
    return kept, removals


def _grounded(content: str, items: list[_Item]) -> str:
    """The content if every content word of it is in its sources, else the head's own words."""
    allowed = frozenset().union(*(_tokens(i.source_text) for i in items))
    if _tokens(content) <= allowed:
        return content
    log.debug("dream line %r strays from its sources; keeping their own words", content)
    return _clip_line(items[0].source_text)


def _plan_entry(cluster: _Cluster) -> PlanEntry:
    head = cluster.head
    sources = list(dict.fromkeys(i.id for i in cluster.items))
    facts = [i for i in cluster.items if i.is_fact]
    if not facts:
        action, reason = "add", "new from daily notes"
    elif len(sources) == 1:
        action, reason = "keep", "kept"
    else:
        action, reason = "merge", f"merged {len(sources)} similar entries"
    content = _grounded(head.content, cluster.items)
    return PlanEntry(action=action, content=content, category=head.category, sources=sources, reason=reason)


def _cluster_rank(cluster: _Cluster) -> tuple:
    return (-sum(i.uses for i in cluster.items), -max(i.confidence for i in cluster.items),
            _recency(cluster.when), cluster.head.order)


def _distill(request: DistillRequest) -> DreamPlan:
    """Seed 004's Deep Dream without an LLM. Facts ranked below ``max_entries`` are left out of the plan."""
    removals: list[PlanEntry] = []
    items = _dream_items(request, removals)
    kept, superseded = _supersede(_cluster(items))
    ranked = sorted(kept, key=_cluster_rank)[: max(request.max_entries, 0)]
    return DreamPlan(entries=[_plan_entry(c) for c in ranked] + removals + superseded)


# ---------------------------------------------------------------- tidy

_FILLER_STEMS = frozenset(stem(w) for w in lx.FILLER_TERMS) | lx.FILLER_TERMS
_ZH_PRONOUN = re.compile(r"^[他她我](?!们)")
_LEADING_PRONOUN = re.compile(r"^(?:(?P<they>they)|he|she)\s+(?P<v>[\w']+)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def _defluff(content: str) -> str:
    """Without "The user said that" and its pronoun: "they prefer tabs" -> "Prefers tabs"."""
    text = normalize_space(content)
    stripped = lx.FILLER_PREFIX.sub("", text)
    if stripped == text:
        return text
    if has_cjk(stripped):
        return _ZH_PRONOUN.sub("", stripped)
    m = _LEADING_PRONOUN.match(stripped)
    if m:
        stripped = (_third_verb(m["v"]) if m["they"] else m["v"]) + m["rest"]
    return _cap(stripped)


def _exact_key(content: str) -> str:
    return normalize_space(content).casefold().rstrip(" .。!！")


def _tidy(facts: list[FactRef]) -> TidyPlan:
    actions: list[TidyAction] = []
    groups: dict[str, list[tuple[int, FactRef]]] = {}
    for i, fact in enumerate(facts):
        groups.setdefault(_exact_key(fact.content), []).append((i, fact))
    survivors: list[tuple[int, FactRef]] = []
    for group in groups.values():
        keep = min(group, key=lambda p: (-p[1].uses, -p[1].confidence, p[0]))
        survivors.append(keep)
        actions.extend(TidyAction(op="remove", fact_id=f.id, category=f.category,
                                  reason=f"exact duplicate of {keep[1].id}") for _, f in group if f is not keep[1])
    kept = {_exact_key(f.content): f.id for _, f in survivors}
    for _, fact in sorted(survivors, key=lambda p: p[0]):
        new = _defluff(fact.content)
        needed = _tokens(fact.content) - _FILLER_STEMS
        if not new or new == fact.content or len(new) >= len(fact.content) or not needed <= _tokens(new):
            continue
        twin = kept.get(_exact_key(new))
        if twin and twin != fact.id:
            actions.append(TidyAction(op="remove", fact_id=fact.id, category=fact.category,
                                      reason=f"same as {twin} once filler words are removed"))
        else:
            actions.append(TidyAction(op="rewrite", fact_id=fact.id, content=new, category=fact.category,
                                      reason="removed filler words"))
    return TidyPlan(actions=actions)


# ---------------------------------------------------------------- govern tags

def _compact(name: str) -> str:
    return re.sub(r"[\s_\-./]+", "", name.casefold())


def _bigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 2] for i in range(len(text) - 1)) or frozenset({text})


def _is_generic_tag(name: str) -> bool:
    ws = words(name)
    return not ws or all(
        w in STOPWORDS or w in GENERIC_WORDS or stem(w) in GENERIC_WORDS or (len(w) < 2 and not has_cjk(w))
        for w in ws
    )


@lru_cache(maxsize=65536)
def _tag_features(name: str) -> tuple[str, str, frozenset[str], frozenset[str], bool]:
    """What the pairwise checks compare, computed once per tag name (govern is pairwise)."""
    key = _tag_key(name)
    compact = _compact(name)
    return key, compact, _bigrams(compact), frozenset(key.split()), has_cjk(compact)


def _tag_relation(a: str, b: str) -> str | None:
    """synonym (only case, plural or hyphen differ), related (near spelling or containment), or None."""
    ka, ca, ba, wa, cjk = _tag_features(a)
    kb, cb, bb, wb, _ = _tag_features(b)
    if ka == kb:
        return "synonym"
    if _overlap(ba, bb) >= 0.8:
        return "related"
    if wa < wb or wb < wa:
        return "related"
    if cjk and min(len(ca), len(cb)) >= 2 and (ca in cb or cb in ca):
        return "related"
    return None


class _TagPool:
    """The live tags, indexed so a candidate is compared only with tags that could relate
    to it (same key, a shared word, a shared spelling prefix, a shared CJK bigram)."""

    def __init__(self, names: list[str]):
        self.names: list[str] = []
        self._index: dict[str, list[str]] = {}
        for name in names:
            self.add(name)

    @staticmethod
    def _keys(name: str) -> set[str]:
        key, compact, bigrams, word_set, cjk = _tag_features(name)
        keys = {f"k:{key}", f"p:{compact[:4]}"} | {f"w:{w}" for w in word_set}
        if cjk:
            keys |= {f"b:{b}" for b in bigrams}
        return keys

    def add(self, name: str) -> None:
        self.names.append(name)
        for k in self._keys(name):
            self._index.setdefault(k, []).append(name)

    def neighbours(self, name: str) -> list[str]:
        seen: dict[str, None] = {}
        for k in sorted(self._keys(name)):
            for other in self._index.get(k, ()):
                if other != name:
                    seen.setdefault(other)
        return list(seen)


def _govern(request: GovernRequest) -> TagDecisions:
    decisions = TagDecisions()
    pool = _TagPool([t.name for t in request.existing if t.status not in ("deprecated", "merged")])
    live = set(pool.names)
    for candidate in request.candidates:
        name = candidate.name
        if _is_generic_tag(name):
            decisions.deprecate.append(name)
            continue
        related = [(other, level) for other in pool.neighbours(name) if (level := _tag_relation(name, other))]
        if related:
            decisions.relations.extend(RelationProposal(source=name, target=other, level=level)
                                       for other, level in related[:3])
            continue
        if name not in live:
            decisions.activate.append(name)
            pool.add(name)
            live.add(name)
    return decisions


# ---------------------------------------------------------------- the engine

class HeuristicEngine:
    """The offline engine: every step is a pure function of its request."""

    name = "heuristic"
    batch_chars = None  # rules read any length: no need to split a long talk

    def perceive(self, request: PerceiveRequest) -> Perception:
        return _perceive(request)

    def extract(self, request: ExtractRequest) -> Extraction:
        return _extract(request)

    def summarize(self, request: SummarizeRequest) -> EpisodeSummary:
        return _summarize(request)

    def distill(self, request: DistillRequest) -> DreamPlan:
        return _distill(request)

    def tidy(self, facts: list[FactRef]) -> TidyPlan:
        return _tidy(facts)

    def govern_tags(self, request: GovernRequest) -> TagDecisions:
        return _govern(request)
