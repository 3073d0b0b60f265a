"""Time references: the dates a message points at, in English and Chinese.

``resolve_time_refs("what did we do last week?", now)`` gives the week before
``now``'s week, Monday 00:00 to Sunday 23:59:59.999999 in ``now``'s time zone.
Absolute dates ("2023-05-08", "8 May, 2023", "2023年5月"), months ("in May",
"去年三月"), "3 weeks ago", "三天前", "yesterday", "上周", "last Monday", "下周五",
bare years.

``anchored(line, at)`` writes a learned line's relative times as the dates they meant,
in the line's own language: "Moved to Hamburg last weekend" reads "Moved to Hamburg on
the weekend of 21-22 March 2026", "我明天去上海出差" reads "我2026年12月6日去上海出差".

``mentioned_days(message, at)`` gives the days a message speaks of, past or to come, for the
stores' index of them: "I have the dentist on Friday", said on a Monday, speaks of that
Friday, and "what do I have tomorrow?" asked on the Thursday finds it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from datetime import date, datetime, time, timedelta

from reverie.models import TimeRef
from reverie.text import has_cjk, normalize_space

# the calendar's words, as the patterns below read them
MONTHS: dict[str, int] = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# a bare month name that is also an everyday word needs a year, a day or "in"
AMBIGUOUS_MONTHS: frozenset[str] = frozenset({"may", "march", "mar", "jan", "jun", "dec", "oct", "sep", "aug"})
WEEKDAYS: dict[str, int] = {
    d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
NUMBER_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
}
ZH_DIGITS: dict[str, int] = {
    "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "几": 3,
}


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
        return ZH_DIGITS.get(tens, 1) * 10 + ZH_DIGITS.get(ones, 0)
    return ZH_DIGITS.get(text, 1)


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
_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))
_ZH_M = r"1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九]"
_ZH_D = r"[12]\d|3[01]|0?[1-9]|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_REL_DAY_EN = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "today": 0, "tonight": 0,
               "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1,
               "the day after tomorrow": 2}
_REL_ZH: dict[str, tuple[str, int]] = {
    **{w: ("year", k) for w, k in (("大前年", -3), ("前年", -2), ("去年", -1), ("今年", 0), ("明年", 1),
                                   ("后年", 2))},
    **{w: ("week", k) for w, k in (("上上周", -2), ("上周", -1), ("上星期", -1), ("上个星期", -1), ("上礼拜", -1),
                                   ("上个礼拜", -1), ("本周", 0), ("这周", 0), ("这个星期", 0), ("这星期", 0),
                                   ("下周", 1), ("下星期", 1), ("下个星期", 1), ("下下周", 2))},
    **{w: ("weekend", k) for w, k in (("上周末", -1), ("上个周末", -1), ("这周末", 0), ("这个周末", 0),
                                      ("本周末", 0), ("下周末", 1), ("下个周末", 1))},
    **{w: ("month", k) for w, k in (("上上个月", -2), ("上个月", -1), ("上月", -1), ("本月", 0), ("这个月", 0),
                                    ("下个月", 1), ("下月", 1), ("下下个月", 2))},
    **{w: ("day", k) for w, k in (("大前天", -3), ("前天", -2), ("昨天", -1), ("昨日", -1), ("昨晚", -1),
                                  ("今天", 0), ("今日", 0), ("今晚", 0), ("今早", 0), ("明天", 1), ("明早", 1),
                                  ("明晚", 1), ("后天", 2), ("大后天", 3))},
}
# the same times in German, Spanish, French, Italian and Portuguese ("was habe ich gestern
# gemacht?", "¿qué hice la semana pasada?"): read by questions and indexed as days spoken of,
# never anchored (a learned line's dates are written in English or Chinese only)
_REL_OTHER: dict[str, tuple[str, int]] = {
    **{w: ("day", -2) for w in ("vorgestern", "anteayer", "avant-hier", "l'altro ieri", "anteontem")},
    **{w: ("day", -1) for w in ("gestern", "ayer", "ieri", "ontem")},
    **{w: ("day", 0) for w in ("heute", "hoy", "aujourd'hui", "aujourd’hui", "oggi", "hoje")},
    **{w: ("day", 1) for w in ("morgen", "mañana", "demain", "domani", "amanhã")},
    **{w: ("day", 2) for w in ("übermorgen", "pasado mañana", "après-demain", "dopodomani", "depois de amanhã")},
    **{w: ("week", -1) for w in ("letzte woche", "vergangene woche", "la semana pasada", "la semaine dernière",
                                 "la settimana scorsa", "a semana passada", "na semana passada")},
    **{w: ("week", 0) for w in ("diese woche", "esta semana", "cette semaine", "questa settimana")},
    **{w: ("week", 1) for w in ("nächste woche", "la próxima semana", "la semana que viene", "la semaine prochaine",
                                "la settimana prossima", "la prossima settimana", "a próxima semana", "na próxima semana")},
    **{w: ("weekend", -1) for w in ("letztes wochenende", "el fin de semana pasado", "le week-end dernier",
                                    "lo scorso fine settimana", "o fim de semana passado")},
    **{w: ("weekend", 1) for w in ("nächstes wochenende", "el próximo fin de semana", "le week-end prochain",
                                   "il prossimo fine settimana", "o próximo fim de semana")},
    **{w: ("month", -1) for w in ("letzten monat", "vergangenen monat", "el mes pasado", "le mois dernier",
                                  "il mese scorso", "o mês passado", "no mês passado")},
    **{w: ("month", 1) for w in ("nächsten monat", "el próximo mes", "el mes que viene", "le mois prochain",
                                 "il mese prossimo", "il prossimo mese", "o próximo mês", "no próximo mês")},
    **{w: ("year", -1) for w in ("letztes jahr", "letzten jahr", "el año pasado", "l'année dernière", "l'an dernier",
                                 "l'anno scorso", "o ano passado", "no ano passado")},
    **{w: ("year", 1) for w in ("nächstes jahr", "el próximo año", "el año que viene", "l'année prochaine",
                                "l'anno prossimo", "o próximo ano", "no próximo ano")},
}
# "heute Morgen", "guten Morgen", "por la mañana", "esta mañana": a morning, not tomorrow
_REL_OTHER_RE = ("(?<![\\w'’-])(?:" + "|".join(
    ("(?<!heute )(?<!guten )(?<!am )(?<!jeden )(?<!bis )morgen" if w == "morgen" else
     "(?<!la )(?<!esta )(?<!de )(?<!cada )(?<!pasado )mañana" if w == "mañana" else re.escape(w))
    for w in sorted(_REL_OTHER, key=len, reverse=True)) + ")(?![\\w'’-])")
# a weekday said alone ("周五有什么安排？", "星期三见"), as the English "on Friday": its week unsaid,
# so the last such day, or the next (not "每周五", a habit, nor "周五周六" read twice: both are days)
_ZH_BARE_WEEKDAY = (r"(?<![上下这本个每])(?<!上上)(?<!下下)(?:周|星期|礼拜)"
                    r"(?P<wd>[一二三四五六](?![天个次周遍回趟年月位名场件本十百点起直共定切样些般致同并块半边面旦])"
                    r"|日(?![程常期记报子历志])|(?<=[期拜])天)")


# "上周五", "下个星期三", "这周日": a day of a week said relative to this one. Not "下周一起"
# (together next week), "这周一直" (all this week), "上周三天" (three days last week), "这周日程"
_ZH_WEEK_OFFSET = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_ZH_WEEKDAY = (r"(?P<rel>上上|下下|上|下|这|本)个?(?:周|星期|礼拜)"
               r"(?P<wd>一(?!起|直|共|定|切|样|些|般|致|同|并|块|半|边|面|旦|下子|会儿|点|天|个|次|周|遍|回|趟|整|年"
               r"|月|场|阵|名|位|件|本|再|律|向|度|连|步|层|路)"
               r"|[二三四五六](?![天个次周遍回趟年月位名场件本十百点])|日(?![程常期记报子历志])|(?<=[期拜])天)")


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


def _t_iso(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _day_or_month(int(m["y"]), int(m["m"]), int(m["d"]) if m["d"] else None)


def _t_zh_date(m: re.Match[str], today: date) -> tuple[date, date] | None:
    if not m["m"]:
        return _year_range(int(m["y"]))
    return _day_or_month(int(m["y"]), _zh_number(m["m"]), _zh_number(m["d"]) if m["d"] else None)


def _t_zh_month(m: re.Match[str], today: date) -> tuple[date, date] | None:
    month = _zh_number(m["m"])
    year = today.year + _REL_ZH[m["pre"]][1] if m["pre"] else _recent_year(today, month)
    return _day_or_month(year, month, _zh_number(m["d"]) if m["d"] else None)


def _t_en_month(m: re.Match[str], today: date) -> tuple[date, date] | None:
    word, pre, year = m["mon"], (m["pre"] or "").lower(), m["y"]
    day = m["d1"] or m["d2"]
    if word.lower() in AMBIGUOUS_MONTHS and not (year or pre or (day and word[0].isupper())):
        return None
    month = MONTHS[word.lower()]
    y = int(year) if year else _recent_year(today, month, strictly_before=pre == "last")
    return _day_or_month(y, month, int(day) if day else None)


def _t_en_nth(m: re.Match[str], today: date) -> tuple[date, date] | None:
    """"on the 8th": the latest 8th begun, this month's or an earlier month's (the 31st: the
    latest month that has one)."""
    day = int(m["d"])
    year, month = (today.year, today.month) if day <= today.day else _shift_month(today, -1)
    while day > _month_range(year, month)[1].day:
        year, month = _shift_month(date(year, month, 1), -1)
    return date(year, month, day), date(year, month, day)


def _nth_ahead(today: date, day: int) -> tuple[date, date]:
    """The next ``day`` of a month after ``today``, as one day."""
    year, month = today.year, today.month
    if day <= today.day:
        year, month = _shift_month(today, 1)
    while day > _month_range(year, month)[1].day:
        year, month = _shift_month(date(year, month, 1), 1)
    return date(year, month, day), date(year, month, day)


def _t_en_ago(m: re.Match[str], today: date) -> tuple[date, date] | None:
    raw = m["n"].lower()
    n = int(raw) if raw.isdigit() else NUMBER_WORDS.get(raw, 1)
    return _ago(today, n, m["unit"].lower())


def _t_zh_ago(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _ago(today, _zh_number(m["n"]), _UNITS_ZH[m["unit"]])


def _t_en_rel_day(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _relative(today, "day", _REL_DAY_EN[normalize_space(m.group(0).lower())])


def _t_en_period(m: re.Match[str], today: date) -> tuple[date, date] | None:
    rel, unit = m["rel"].lower(), m["unit"].lower()
    if rel in ("past", "the past", "the last") and unit != "weekend":
        span = {"week": 6, "month": 29, "year": 364}[unit]
        return today - timedelta(days=span), today
    offset = {"last": -1, "previous": -1, "past": -1, "the past": -1, "the last": -1, "this": 0, "next": 1}[rel]
    return _relative(today, unit, offset)


def _t_en_weekday(m: re.Match[str], today: date) -> tuple[date, date] | None:
    rel, day = normalize_space(m["rel"].lower()), WEEKDAYS[m["wd"].lower()]
    if rel == "this":  # this week's: "this Friday" asked on a Monday is to come, as "this weekend" is
        d = today + timedelta(days=day - today.weekday())
        return d, d
    if rel == "next":  # the coming one, or next week's: people mean either, so both days and between
        ahead = (day - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead), _week_range(today, 1)[0] + timedelta(days=day)
    back = (today.weekday() - day) % 7
    if rel in ("last", "this past") and back == 0:
        back = 7
    d = today - timedelta(days=back)
    return d, d


def _t_zh_rel(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _relative(today, *_REL_ZH[m.group(0)])


def _t_other_rel(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _relative(today, *_REL_OTHER[normalize_space(m.group(0).lower())])


def _t_zh_bare_weekday(m: re.Match[str], today: date) -> tuple[date, date] | None:
    d = today - timedelta(days=(today.weekday() - "一二三四五六".find(m["wd"]) % 7) % 7)  # 日, 天: -1, Sunday
    return d, d


def _t_zh_weekday(m: re.Match[str], today: date) -> tuple[date, date] | None:
    monday, _ = _week_range(today, _ZH_WEEK_OFFSET[m["rel"]])
    d = monday + timedelta(days="一二三四五六".find(m["wd"]) % 7)  # 日, 天: -1, Sunday
    return d, d


def _t_year(m: re.Match[str], today: date) -> tuple[date, date] | None:
    return _year_range(int(m["y"]))


def _edge(first: date, last: date, unit: str, end: bool) -> tuple[date, date]:
    """The end or the beginning of a week, month or year: its last or first days (Friday to
    Sunday or Monday and Tuesday, a week of a month, the year's December or January)."""
    if unit == "week":
        return (first + timedelta(days=4), last) if end else (first, first + timedelta(days=1))
    if unit == "month":
        return (last - timedelta(days=6), last) if end else (first, first + timedelta(days=6))
    return _month_range(first.year, 12 if end else 1)


def _t_en_edge(m: re.Match[str], today: date) -> tuple[date, date] | None:
    unit = m["unit"].lower()
    offset = {"last": -1, "next": 1}.get((m["rel"] or "").lower(), 0)
    return _edge(*_relative(today, unit, offset), unit, m["edge"].lower() == "end")


def _t_zh_edge(m: re.Match[str], today: date) -> tuple[date, date] | None:
    unit = "month" if m["unit"] == "月" else "year"
    offset = {"上": -1, "下": 1, "去": -1, "明": 1}.get((m["rel"] or " ")[0], 0)
    return _edge(*_relative(today, unit, offset), unit, m["edge"] != "初")


_NUM_EN = "|".join(sorted((re.escape(k) for k in NUMBER_WORDS), key=len, reverse=True))
# a handler reads one match into its first and last day, or None when the match is no date
Handler = Callable[[re.Match[str], date], tuple[date, date] | None]
TIME_PATTERNS: tuple[tuple[re.Pattern[str], Handler], ...] = tuple(
    (re.compile(p, re.IGNORECASE), handler)
    for p, handler in (
        (r"\b(?P<y>(?:19|20)\d\d)[-/](?P<m>\d{1,2})(?:[-/](?P<d>\d{1,2}))?\b", _t_iso),
        (rf"(?P<y>(?:19|20)\d\d)\s*年\s*(?:(?P<m>{_ZH_M})\s*月份?\s*(?:(?P<d>{_ZH_D})\s*[日号])?)?", _t_zh_date),
        (rf"(?P<pre>去年|今年|前年|明年)?(?<![\d个])(?P<m>{_ZH_M})月份?(?:(?P<d>{_ZH_D})[日号])?", _t_zh_month),
        (rf"\b(?:(?P<pre>in|during|since|last|this|early|late|mid|until|by|on)\s+(?:the\s+)?)?"
         rf"(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<mon>{_MONTH_ALT})\b\.?"
         rf"(?:\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<y>(?:19|20)\d\d)\b)?", _t_en_month),
        # "on the 8th", "on the 21st at noon": a day of this month or the last (not "on the 2nd
        # floor", "on the 3rd try": only before the end of a clause or a word that goes on it)
        (r"\bon\s+the\s+(?P<d>3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)\b(?=\s*(?:$|[.,;:!?)]|(?:at|and|or|but|so|"
         r"when|then|too|around|before|after|we|i|you|he|she|they|it|is|was|will|in|from|with|for)\b))", _t_en_nth),
        (rf"\b(?P<n>\d+|{_NUM_EN})\s+(?P<unit>day|week|month|year)s?\s+ago\b", _t_en_ago),
        (r"(?P<n>\d+|[零一二两三四五六七八九十几]+)\s*个?(?P<unit>天|日|周|星期|礼拜|月|年)(?:前|之前|以前)", _t_zh_ago),
        (r"\b(?:the day before yesterday|the day after tomorrow|yesterday|last\s+night|today|tonight|"
         r"this\s+(?:morning|afternoon|evening)|tomorrow)\b", _t_en_rel_day),
        # "at the end of the month", "the beginning of next year", 月底, 下个月初, 年底: before the
        # patterns of "next month", 下个月, 今年, which would take part of them
        (r"\b(?P<edge>end|beginning|start)\s+of\s+(?:the\s+)?(?:(?P<rel>this|next|last)\s+)?(?P<unit>week|month|year)\b",
         _t_en_edge),
        (r"(?<![\d一二三四五六七八九十])(?P<rel>上个?|下个?|这个?|本|去年?|今年?|明年?)?(?P<unit>月|年)(?P<edge>底|末|初)(?![\d一二三四五六七八九十])",
         _t_zh_edge),
        (r"\b(?P<rel>last|previous|this|next|the past|past|the last)\s+(?P<unit>week|month|year|weekend)\b",
         _t_en_period),
        (r"\b(?P<rel>last|this\s+past|on|this|next)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|"
         r"sunday)\b", _t_en_weekday),
        (_ZH_WEEKDAY, _t_zh_weekday),
        (_ZH_BARE_WEEKDAY, _t_zh_bare_weekday),
        # a week's word that is the start of another: "这周围" (around here), "下周期" (next cycle)
        (rf"(?:{'|'.join(sorted(_REL_ZH, key=len, reverse=True))})(?!(?<=周)[围边期])", _t_zh_rel),
        (_REL_OTHER_RE, _t_other_rel),
        (r"\b(?P<y>(?:19|20)\d\d)\b", _t_year),
    )
)


# what a text holds wherever a pattern matches: a year's digits (YEAR), or one of these
# strings (lowercase) in the lowercased text. A text without it is not searched with the
# pattern: most messages name no time, and the dozen patterns took 190 µs for a 130-character
# LoCoMo message where these tests take a few
YEAR = ("<year>",)
_YEARISH = re.compile(r"(?:19|20)\d\d")
NEEDS: dict[Handler, tuple[str, ...]] = {
    _t_iso: YEAR,
    _t_zh_date: ("年",),
    _t_zh_month: ("月",),
    _t_en_month: ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    _t_en_nth: ("st", "nd", "rd", "th"),  # (and a digit before it: _ORDINAL)
    _t_en_ago: ("ago",),
    _t_zh_ago: ("前",),
    _t_en_rel_day: ("yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening"),
    _t_en_period: ("week", "month", "year"),
    _t_en_weekday: tuple(WEEKDAYS),
    _t_zh_weekday: ("周", "星期", "礼拜"),
    _t_zh_bare_weekday: ("周", "星期", "礼拜"),
    _t_zh_rel: ("年", "周", "星期", "礼拜", "月", "天", "日", "晚", "早"),
    _t_other_rel: ("gestern", "heute", "morgen", "woche", "monat", "jahr", "ayer", "hoy", "mañana", "semana", "el mes",
                   "próximo", "año", "aujourd", "demain", "semaine", "mois", "dernier", "année", "ieri", "oggi", "domani",
                   "settimana", "mese", "anno", "ontem", "hoje", "amanhã", "mês", "ano passado", "avant-hier", "anteayer",
                   "week-end"),
    _t_year: YEAR,
    _t_en_edge: ("end", "beginning", "start"),
    _t_zh_edge: ("底", "末", "初"),
}


_MONTH_WORD = re.compile(rf"\b(?:{_MONTH_ALT})\b")
_ORDINAL = re.compile(r"\d(?:st|nd|rd|th)\b")


CHINESE: frozenset[Handler] = frozenset({_t_zh_date, _t_zh_month, _t_zh_ago, _t_zh_weekday, _t_zh_rel, _t_zh_edge,
                                        _t_zh_bare_weekday})
# TIME_PATTERNS with what each needs: (pattern, handler, strings, Chinese?, a year?)
_GATED = tuple((pattern, handler, NEEDS[handler], handler in CHINESE, NEEDS[handler] is YEAR)
               for pattern, handler in TIME_PATTERNS)


def _searched(text: str) -> list[tuple[re.Pattern[str], Handler]]:
    """The patterns of TIME_PATTERNS that may match ``text``, by :data:`NEEDS`."""
    low = text.lower()
    year: bool | None = None
    cjk = has_cjk(text)
    found = []
    for pattern, handler, needs, chinese, yearly in _GATED:
        if chinese and not cjk:
            continue
        if yearly:
            if year is None:
                year = _YEARISH.search(text) is not None
            if not year:
                continue
        else:
            for word in needs:
                if word in low:
                    break
            else:
                continue
            if handler is _t_en_month and not _MONTH_WORD.search(low):  # "mar" of "summary", "dec" of "decide"
                continue
            if handler is _t_en_nth and not _ORDINAL.search(low):  # "the" alone: no day of a month
                continue
        found.append((pattern, handler))
    return found


def times_to_come(text: str) -> list[str]:
    """The words of each time ``text`` names relative to the moment of speaking that is still to
    come then, in reading order: "Next Friday we decided to launch" -> ["Next Friday"]; not
    "yesterday", nor a date (whether it is to come depends on when it was said)."""
    day = date(2000, 1, 5)  # any day: a relative time's place against it is the same on every day
    return [m.group(0).strip() for _, m, handler, (first, _) in _times(text, day) if handler in RELATIVE and first > day]


def names_a_time(text: str) -> bool:
    """Whether ``text`` names a time any pattern of TIME_PATTERNS matches."""
    return any(pattern.search(text) for pattern, _ in _searched(text))


# the handlers of times said relative to the moment of speaking
RELATIVE: frozenset[Handler] = frozenset({_t_en_ago, _t_zh_ago, _t_en_rel_day, _t_en_period, _t_en_weekday, _t_zh_rel,
                                         _t_other_rel, _t_zh_bare_weekday,
                                         _t_zh_weekday, _t_en_edge, _t_zh_edge})


def _times(text: str, today: date) -> list[tuple[int, re.Match[str], Handler, tuple[date, date]]]:
    """Each time ``text`` names, read on ``today``: where it starts, its match, the handler
    that read it and its first and last day, in reading order."""
    # spans already taken, kept sorted and disjoint: an overlap test is two neighbours
    # (bisect), so the whole pass stays linear in the text, however many dates it holds
    starts: list[int] = []
    ends: list[int] = []
    found: list[tuple[int, re.Match[str], Handler, tuple[date, date]]] = []
    for pattern, handler in _searched(text):
        for m in pattern.finditer(text):
            start, end = m.span()
            at = bisect.bisect_right(starts, start)
            if (at > 0 and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                continue
            try:
                span = handler(m, today)
            except (ValueError, OverflowError):  # "4500 years ago": before the calendar's year 1
                span = None
            if span is None:
                continue
            starts.insert(at, start)
            ends.insert(at, end)
            found.append((start, m, handler, span))
    found.sort(key=lambda item: item[0])
    return found


# the past tense of a question or a message: "what did I do on Friday?", "we went out on the 8th"
# ... and of a Chinese one: "周五做了什么？", "周五去过哪里？"
_PAST_ZH = re.compile(r"了|过(?![来去年])|昨|上次")
_PAST_TENSE = re.compile(r"\b(?:did|didn['’]t|was|wasn['’]t|were|weren['’]t|had|went|happened)\b", re.IGNORECASE)


def _next_of(m: re.Match[str], handler: Handler, today: date, first: date) -> tuple[date, date] | None:
    """Of a day said without its week or month, read as the last such day (``first``): the
    next one ("on Friday", "on the 13th", "周五"). None for any other time."""
    if handler is _t_en_nth:
        return _nth_ahead(today, first.day)
    if handler is _t_zh_bare_weekday or (handler is _t_en_weekday and m["rel"].lower() == "on"):
        return _weekday_ahead(today, first.weekday())
    return None


def resolve_time_refs(text: str, now: datetime) -> list[TimeRef]:
    """Dates the text refers to, as whole days in ``now``'s time zone, in reading order.

    ``resolve_time_refs("what did we do last week?", now)`` gives one TimeRef from
    Monday 00:00 to Sunday 23:59:59.999999 of the week before ``now``'s week. A day said
    without its week or month ("on Friday", "on the 13th") is the last such day; in a text
    not in the past tense ("what do I have on Friday?", "am I free on the 13th?") it is the
    next one as well, right after it.
    """
    today = now.date()
    past: bool | None = None  # (read once, for the first such day)
    refs = []
    for _, m, handler, span in _times(text, today):
        spans = [span]
        ahead = _next_of(m, handler, today, span[0])
        if ahead is not None and past is None:
            past = bool(_PAST_TENSE.search(text) or _PAST_ZH.search(text))
        if ahead is not None and not past:
            spans.append(ahead)
        refs += [TimeRef(text=m.group(0).strip(), start=datetime.combine(first, time.min, tzinfo=now.tzinfo),
                         end=datetime.combine(last, time.max, tzinfo=now.tzinfo), relative=handler in RELATIVE)
                 for first, last in spans]
    return refs


# the longest time a message is indexed as speaking of: a month. A year ("in 2023", "last
# year") speaks of too many days to tell one message from the next
MENTION_MAX_DAYS = 31


def mentioned_days(text: str, at: datetime) -> list[tuple[date, date]]:
    """The days ``text``, said at ``at``, speaks of, each time as its first and last day in
    ``at``'s time zone, for the times of at most :data:`MENTION_MAX_DAYS` days: "I have the
    dentist on Friday" said on Monday 30 November 2026 speaks of Friday 4 December (and of the
    Friday before: "on Friday" is either, and only the tense tells). A month or day named
    without its year ("in May", "on 12 December") is the latest such time begun and the next
    one to come. Times past and to come alike: a plan names its day before it comes."""
    today = at.date()
    days: list[tuple[date, date]] = []
    for _, m, handler, (first, last) in _times(text, today):
        if (last - first).days >= MENTION_MAX_DAYS:
            continue
        if handler is _t_en_weekday and first != last:  # "next Tuesday": the coming one or next week's
            days += [(first, first), (last, last)]
            continue
        days.append((first, last))
        if (ahead := _next_of(m, handler, today, first)) is not None:  # "on Friday": the last one, or the next
            days.append(ahead)
        elif last < today and _yearless(m, handler):  # "on 12 December": maybe next year's
            days.append(_day_or_month(first.year + 1, first.month, first.day if first == last else None)
                        or (date(first.year + 1, 2, 28),) * 2)  # (29 February: the 28th)
    # "See you Friday", "Meeting Tuesday at 10": a weekday said alone, in plans mostly
    low = text.lower()
    for m in _BARE_WEEKDAY.finditer(text) if "day" in low and any(day in low for day in WEEKDAYS) else ():
        day = WEEKDAYS[m.group(1).lower()]
        back = (today.weekday() - day) % 7 or 7
        days += [(today - timedelta(days=back),) * 2, _weekday_ahead(today, day)]
    return days


# a weekday's name said alone: not after a word that TIME_PATTERNS reads with it ("on
# Friday", "last Monday") or that makes it a habit ("every Tuesday", "on Tuesdays")
_BARE_WEEKDAY = re.compile(
    r"(?<!\blast )(?<!\bnext )(?<!\bthis )(?<!\bpast )(?<!\bon )(?<!\bevery )(?<!\beach )\b("
    + "|".join(WEEKDAYS) + r")\b(?!s\b)", re.IGNORECASE)


def _weekday_ahead(today: date, weekday: int) -> tuple[date, date]:
    """The next such weekday after ``today``, as one day."""
    d = today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
    return d, d


def _yearless(m: re.Match[str], handler: Handler) -> bool:
    """Whether a month's time was read as this or last year's without a year said: "in May",
    "on 12 December", "3月5日" (not "last May", "May 2023", "去年三月")."""
    if handler is _t_en_month:
        return not m["y"] and (m["pre"] or "").lower() != "last"
    return handler is _t_zh_month and not m["pre"]


def _day(d: date) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


def _dates_of(first: date, last: date) -> str:
    """The dates a time covers, as words that stay true: "on 22 March 2026", "on the weekend of
    21-22 March 2026", "in the week of 16 March 2026", "in February 2026", "in 2025"."""
    if first == last:
        return f"on {_day(first)}"
    if first.weekday() == last.weekday() and last == first + timedelta(days=7):  # "next Tuesday": either
        return f"on {first:%A} {first.day} or {_day(last)}" if first.month == last.month else \
            f"on {first:%A} {_day(first)} or {_day(last)}"
    if first.weekday() == 5 and last == first + timedelta(days=1):
        return f"on the weekend of {first.day}-{_day(last)}"
    if first.weekday() == 0 and last == first + timedelta(days=6):
        return f"in the week of {_day(first)}"
    if (first.day, first.month) == (1, 1) and (last.day, last.month) == (31, 12) and first.year == last.year:
        return f"in {first.year}"
    if first.day == 1 and last == _month_range(first.year, first.month)[1]:
        return f"in {first.strftime('%B')} {first.year}"
    return f"between {_day(first)} and {_day(last)}"


# a time these stand before is part of a phrase the dates would break: "since last year",
# "for the past month", "until tomorrow"
_LEADS_IN = re.compile(r"\b(?:since|for|until|till|by|from|before|after|over|during|through|of|every|each)\s*$",
                       re.IGNORECASE)
# "the past month", "the last year": a span up to now, not a time
_SPAN = re.compile(r"^(?:the\s+(?:past|last)|past)\s+(?:week|month|year)$", re.IGNORECASE)


def _one_time(text: str, start: int, said: str) -> bool:
    """Whether ``said``, at ``start`` of ``text``, names one time the dates can stand for: not
    a weekly habit ("prefers meetings on Tuesday"), a span ("the past month"), part of a
    phrase ("since last year", "yesterday's test") or a name ("Reads USA Today", "Today FM",
    "Last Week Tonight")."""
    end = start + len(said)
    after = text[end:].lstrip()
    if said.lower().startswith("on ") or _SPAN.match(said) or _LEADS_IN.search(text[:start]):
        return False
    if text[end:end + 2] in ("'s", "’s") or (start > 0 and said[0].isupper()):
        return False
    return not (start == 0 and after[:1].isupper())


def _zh_day(d: date) -> str:
    return f"{d.year}年{d.month}月{d.day}日"


def _zh_dates(first: date, last: date) -> str:
    """The dates a time covers, written the Chinese way: "2026年12月6日", "2026年11月23日至29日"
    (a week, a weekend), "2026年11月", "2025年"."""
    if first == last:
        return _zh_day(first)
    if (first.day, first.month) == (1, 1) and (last.day, last.month) == (31, 12) and first.year == last.year:
        return f"{first.year}年"
    if first.day == 1 and last == _month_range(first.year, first.month)[1]:
        return f"{first.year}年{first.month}月"
    if first.year != last.year:
        return f"{_zh_day(first)}至{_zh_day(last)}"
    if first.month != last.month:
        return f"{_zh_day(first)}至{last.month}月{last.day}日"
    return f"{_zh_day(first)}至{last.day}日"


# the part of the day a word says besides its day: 昨晚 is the evening of that day
_ZH_PART_OF_DAY = {"昨晚": "晚上", "今晚": "晚上", "明晚": "晚上", "今早": "早上", "明早": "早上"}
# a time these stand right before is the start or end of a span, said as a span: "从去年开始",
# "自从去年", "直到明天", "每周末" (as the English "since last year", "until tomorrow" are)
_ZH_LEADS_IN = re.compile(r"(?:从|自|由|直到|到|至|截至|截止|每个?|每逢)\s*$")
# ... and right after: "去年以来", "明天起", "下周之前", "上个月至今", "明天至后天", "去年到现在"
_ZH_LEADS_ON = re.compile(r"^\s*(?:以来|起(?![床来飞])|之前|以前|之后|以后|为止|期间|至|到现在|到目前|到今天)")
# a habit in the clause before the time: "每年的今天", "我一般下周…"
_ZH_HABIT = re.compile(r"每|经常|总是|一般|通常|常常|平时|往往|老是|向来|一向")
_ZH_CLAUSE_END = re.compile(r"[，,。！!？?；;：:\n]")
# the first character of a time word that ends a word before it: "马上周末" (nearly the
# weekend), "讨论一下周末", "以前天天跑步" (every day, once), "午后天气", "聪明天才", "过去年轻时"
_ZH_GLUED = {"上": "马晚早", "下": "一楼乡底私线地天", "前": "以之提目当眼空", "后": "最午雨然之以随饭而落先背",
             "明": "聪光文发证表声透分英精高鲜清", "去": "过回"}
# "后天" that is "acquired", not the day after tomorrow: "后天形成的", "是后天的。"
_ZH_ACQUIRED = re.compile(r"^(?:性|形成|养成|获得|习得|因素|努力|培养|的(?:努力|因素|$|[。，,.！!？?；;]))")
# a year word that begins another word: "去年轻化", "今年纪"
_ZH_NOT_A_YEAR = re.compile(r"^[轻纪龄代]")
_TITLE_MARKS = (("《", "》"), ("「", "」"), ("『", "』"), ("“", "”"))


def _one_time_zh(text: str, start: int, said: str) -> bool:
    """Whether the Chinese ``said``, at ``start`` of ``text``, names one time the dates can
    stand for: not a span ("从去年开始", "去年以来", "直到明天"), a habit ("每年的今天"), a
    vague count ("几天前"), a title (《明天会更好》), the literary 今日/昨日 of names (今日头条),
    or characters of other words ("马上周末", "这周围", "后天形成的")."""
    before, after = text[:start], text[start + len(said):]
    if "几" in said or said.startswith(("今日", "昨日")):
        return False
    if _ZH_LEADS_IN.search(before) or _ZH_LEADS_ON.match(after):
        return False
    if _ZH_HABIT.search(_ZH_CLAUSE_END.split(before)[-1]):
        return False
    if before and before[-1] in _ZH_GLUED.get(said[0], ""):
        return False
    if said == "后天" and (before.endswith("先天") or _ZH_ACQUIRED.match(after)):
        return False
    if said.endswith("年") and _ZH_NOT_A_YEAR.match(after):
        return False
    return not any(before.count(op) > before.count(cl) for op, cl in _TITLE_MARKS)


# times said relative to now that a learned line keeps in its words: another language's (its
# dates are written in English or Chinese only) and a weekday alone (the last one or the next)
_NOT_ANCHORED: frozenset[Handler] = frozenset({_t_other_rel, _t_zh_bare_weekday})


# a learned line about a time to come ("Is getting married in June", "Has a dentist appointment on May
# 3", "Is planning a trip to Kyoto in April") and one about a time past ("Got married in June", "Moved to
# Lisbon in May"): a month or a day said without its year is the coming one, or the one past
_PLAN_LINE = re.compile(r"^(?:is|are|am)\s+(?:(?:also|finally|actually|officially|still)\s+)?\w+ing\b"
                        r"|^has\s+(?:an?|my|their|our)\s+(?:[\w'-]+\s+){0,3}?(?:appointment|interview|exam|surgery|flight|"
                        r"wedding|operation|check-?up|recital|concert|conference|deadline|trip)\b|^will\b", re.IGNORECASE)
_PAST_LINE = re.compile(r"^(?:went|moved|relocated|got|visited|met|started|finished|graduated|joined|left|quit|travell?ed|"
                        r"flew|won|bought|sold|adopted|returned|came|was|were|had|took)\b", re.IGNORECASE)


def _yearless_words(m: re.Match[str], today: date, ahead: bool) -> tuple[int, str] | None:
    """Where in ``m`` (an English month's time said without its year) the date starts, and the
    date with its year: the coming one when ``ahead``, else the latest begun ("May 3" said on
    1 May 2026: "3 May 2026" ahead, "3 May 2025" past)."""
    if m["y"] or (m["pre"] or "").lower() in ("last", "this", "since", "until", "by"):
        return None
    month, day = MONTHS[m["mon"].lower()], m["d1"] or m["d2"]
    for year in ((today.year, today.year + 1) if ahead else (today.year, today.year - 1)):
        span = _day_or_month(year, month, int(day) if day else None)
        if span is None:
            return None
        if (span[1] >= today) if ahead else (span[0] <= today):
            first = span[0]
            return m.start("d1") if m["d1"] else m.start("mon"), (_day(first) if day else f"{first:%B} {first.year}")
    return None


def anchored(text: str, at: datetime) -> str:
    """``text`` (a line about the user, said at ``at``) with each time said relative to the
    moment of speaking given as the dates it meant: "Moved to Hamburg last weekend", said on
    23 March 2026, reads "Moved to Hamburg on the weekend of 21-22 March 2026". Weeks later
    "last weekend" would name another weekend. A Chinese time is written the Chinese way where
    it stood: "我明天去上海出差", said on 5 December 2026, reads "我2026年12月6日去上海出差".
    A line without such a time is returned as it is."""
    # the times said relative to now, and a Chinese month whose year is ("去年三月")
    today = at.date()
    # ... and a month or a day without its year, in a line about a time to come or one past
    plan = _PLAN_LINE.match(text) is not None
    dated = plan or _PAST_LINE.match(text) is not None
    times = [(start, m, handler, span) for start, m, handler, span in _times(text, today)
             if (handler in RELATIVE and handler not in _NOT_ANCHORED) or (handler is _t_zh_month and m["pre"])
             or (dated and handler is _t_en_month)]
    for start, m, handler, (first, last) in reversed(times):  # from the end: a replacement moves nothing before it
        if handler is _t_en_month:
            yearless = _yearless_words(m, today, plan)
            if yearless is not None:
                at_date, words = yearless
                text = text[:start + at_date - m.start()] + words + text[start + len(m.group(0).rstrip()):]
            continue
        said = m.group(0).strip()
        start += m.group(0).index(said)
        if has_cjk(said):  # (Chinese has no preposition to give: the dates stand for the words)
            if not _one_time_zh(text, start, said):
                continue
            if handler is _t_zh_edge:  # "下个月底": 2027年1月底, "年底": 2026年底
                words = (f"{first.year}年{first.month}月" if m["unit"] == "月" else f"{first.year}年") + m["edge"]
            else:
                words = _zh_dates(first, last) + _ZH_PART_OF_DAY.get(said, "")
        else:
            if not _one_time(text, start, said):
                continue
            if handler is _t_en_edge:  # "the end of the month": the end of December 2026 (the words around it stay)
                unit, edge = m["unit"].lower(), m["edge"]
                words = (f"{edge} of {first:%B} {first.year}" if unit == "month" else f"{edge} of {first.year}"
                         if unit == "year" else f"{edge} of the week of {_day(_week_range(first)[0])}")
            else:
                words = _dates_of(first, last)
            if start == 0:
                words = words[0].upper() + words[1:]
        text = text[:start] + words + text[start + len(said):]
    return text
