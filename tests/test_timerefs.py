"""Time references: which patterns a text is searched with, and the days a message speaks of."""

from __future__ import annotations

import bisect
import json
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

import reverie
from reverie import timerefs
from reverie.bench.scale import ConversationGenerator
from reverie.models import Episode, Message
from reverie.store.base import MAX_MENTIONS, MENTION_CHARS, episode_days
from reverie.timerefs import MONTHS, NEEDS, TIME_PATTERNS, YEAR, mentioned_days, names_a_time, resolve_time_refs

MONDAY = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)  # Monday 30 November 2026


def _every_pattern(text: str, today: date) -> list[tuple[int, str, date, date]]:
    """What resolve_time_refs finds when every pattern searches the whole text (no NEEDS)."""
    starts: list[int] = []
    ends: list[int] = []
    found = []
    for pattern, handler in TIME_PATTERNS:
        for m in pattern.finditer(text):
            at = bisect.bisect_right(starts, m.start())
            if (at > 0 and ends[at - 1] > m.start()) or (at < len(starts) and starts[at] < m.end()):
                continue
            try:
                span = handler(m, today)
            except (ValueError, OverflowError):
                span = None
            if span is not None:
                starts.insert(at, m.start())
                ends.insert(at, m.end())
                found.append((m.start(), m.group(0).strip(), *span))
    return sorted(found)


def _texts() -> list[str]:
    """Times of every kind, the bundled sample conversation and a few thousand synthetic
    messages of the scale benchmark (speakers, dates, plans)."""
    texts = [
        "We met on 2023-05-08 and again in May 2023", "3 weeks ago", "the day before yesterday", "last night",
        "this morning I ran", "next weekend", "this past Friday", "on sept 3rd", "Dec. 24", "in the past month",
        "三天前", "去年三月", "下个星期三", "2023年5月8日", "上周末", "这周日程很满", "今年5月8日", "明晚", "两个月前",
        "LAST WEEK", "Tomorrow!", "A FEW DAYS AGO", "in 1999", "2023/7", "summary of the market", "我明天 meeting on Friday",
        "The process may be tough", "what did we decide in March?", "It was the 3rd of June, 2023", "this evening",
        "what did I do on the 8th?", "on the 2nd floor", "On the 21st, we left",
        "Was habe ich gestern gemacht?", "¿Qué hice la semana pasada?", "Guten Morgen!", "Por la mañana corro",
        "Mañana tengo cita", "L'année dernière, je suis allé à Rome", "o que fiz no mês passado?",
        "周五有什么安排？", "一周三次", "我周一到周五上班", "礼拜天去教堂了",
    ]
    sample = json.loads((Path(reverie.__file__).parent / "data" / "sample_conversation.json").read_text(encoding="utf-8"))
    texts += [m["content"] for c in sample["conversations"] for m in c["messages"]]
    for session in ConversationGenerator(1000).sessions():
        texts += [m["content"] for m in session.messages]
    return texts


def test_a_text_is_searched_only_with_the_patterns_it_may_match_and_finds_what_all_of_them_find():
    texts = _texts()
    assert len(texts) > 2000
    for text in texts:
        found = timerefs._times(text, MONDAY.date())
        expected = _every_pattern(text, MONDAY.date())
        assert [(start, m.group(0).strip(), *span) for start, m, _, span in found] == expected, text
        assert names_a_time(text) == any(pattern.search(text) for pattern, _ in TIME_PATTERNS), text


@pytest.mark.parametrize("asked, days", [
    # a day said without its week or month: the last one, and the next one unless it is asked of the past
    ("what do I have on Friday?", ["2026-11-27", "2026-12-04"]),
    ("am I free on the 13th?", ["2026-11-13", "2026-12-13"]),
    ("anything on Friday? and on the 2nd", ["2026-11-27", "2026-12-04", "2026-11-02", "2026-12-02"]),
    ("what did I do on Friday?", ["2026-11-27"]),
    ("what happened on the 13th?", ["2026-11-13"]),
    ("We went out on Friday", ["2026-11-27"]),
    ("what do I have next Friday?", ["2026-12-04"]),  # said with its week: one time (its first day)
    ("周五有什么安排？", ["2026-11-27", "2026-12-04"]),  # Chinese too: its week unsaid
    ("周五做了什么？", ["2026-11-27"]),
    ("每周五去游泳", []),  # a habit
    ("下周五开会", ["2026-12-11"]),
])
def test_a_day_said_alone_is_also_the_next_one_unless_asked_of_the_past(asked, days):
    assert [r.start.date().isoformat() for r in resolve_time_refs(asked, MONDAY)] == days


def test_what_a_pattern_needs_is_in_every_word_it_reads():
    month_needs = NEEDS[timerefs._t_en_month]
    assert all(any(need in name for need in month_needs) for name in MONTHS)
    rel_needs = NEEDS[timerefs._t_zh_rel]
    assert all(any(need in word for need in rel_needs) for word in timerefs._REL_ZH)
    other_needs = NEEDS[timerefs._t_other_rel]
    assert all(any(need in word for need in other_needs) for word in timerefs._REL_OTHER)
    assert set(NEEDS) == {handler for _, handler in TIME_PATTERNS}
    assert NEEDS[timerefs._t_year] is YEAR


@pytest.mark.parametrize("said, days", [
    ("I have the dentist on Friday at 3pm", [("2026-11-27", "2026-11-27"), ("2026-12-04", "2026-12-04")]),
    ("My sister flies in next Tuesday", [("2026-12-01", "2026-12-01"), ("2026-12-08", "2026-12-08")]),
    ("Meeting Tuesday at 10", [("2026-11-24", "2026-11-24"), ("2026-12-01", "2026-12-01")]),
    ("Tomorrow I fly to Lisbon", [("2026-12-01", "2026-12-01")]),
    ("We went hiking last weekend", [("2026-11-28", "2026-11-29")]),
    ("The party is on 12 December", [("2025-12-12", "2025-12-12"), ("2026-12-12", "2026-12-12")]),
    ("Going to Japan in May", [("2026-05-01", "2026-05-31"), ("2027-05-01", "2027-05-31")]),
    ("Back in May 2023 we moved", [("2023-05-01", "2023-05-31")]),
    # a day of the month alone: this month's or an earlier one's, and the next to come
    ("Dentist on the 8th at 3pm", [("2026-11-08", "2026-11-08"), ("2026-12-08", "2026-12-08")]),
    ("On the 31st, we party", [("2026-10-31", "2026-10-31"), ("2026-12-31", "2026-12-31")]),
    ("We live on the 2nd floor", []), ("I passed on the 3rd try", []), ("on the 8th of every month", []),
    ("我明天去上海出差", [("2026-12-01", "2026-12-01")]),
    ("下周五开会", [("2026-12-11", "2026-12-11")]),
    # a year is too long a time to tell one message by; a habit is no day
    ("We moved here in 2019", []), ("Last year was hard", []), ("Yoga on Tuesdays", []),
    ("Every Monday I swim", []), ("Nothing planned", []),
])
def test_the_days_a_message_speaks_of(said, days):
    assert [(a.isoformat(), b.isoformat()) for a, b in mentioned_days(said, MONDAY)] == days


def test_an_episode_speaks_of_the_days_in_the_first_part_of_each_message_and_of_fifty_at_most():
    def days_of(*texts: str) -> list[tuple[str, str]]:
        return episode_days(Episode(user="ana", thread="t", status="completed", occurred_at=MONDAY,
                                    messages=[Message(content=t, at=MONDAY) for t in texts]))

    filler = "x " * (MENTION_CHARS // 2)
    assert days_of("Dentist tomorrow. " + filler) == [("2026-12-01", "2026-12-01")]
    assert days_of(filler + "Dentist tomorrow.") == []  # past the part read: a document, not a plan
    assert days_of(filler + "Dentist tomorrow.", "and the vet on 3 December, 2026") == [("2026-12-03", "2026-12-03")]
    calendar = " ".join(f"on {d} January 2027" for d in range(1, 32)) + " " + \
        " ".join(f"on {d} February 2027" for d in range(1, 29))
    assert len(days_of(calendar)) == MAX_MENTIONS
    pending = Episode(user="ana", thread="t", status="pending", occurred_at=MONDAY, user_text="Dentist tomorrow")
    assert episode_days(pending) == []  # found only once it is completed (and written again then)


@pytest.mark.parametrize("said, days, written", [
    ("Rent is due at the end of the month", ("2026-11-24", "2026-11-30"), "Rent is due at the end of November 2026"),
    ("I finish the draft by the end of next month", ("2026-12-25", "2026-12-31"),
     "I finish the draft by the end of December 2026"),
    ("We start at the beginning of next year", ("2027-01-01", "2027-01-31"), "We start at the beginning of 2027"),
    ("Free at the end of this week", ("2026-12-04", "2026-12-06"), "Free at the end of the week of 30 November 2026"),
    ("月底交报告", ("2026-11-24", "2026-11-30"), "2026年11月底交报告"),
    ("下个月底搬家", ("2026-12-25", "2026-12-31"), "2026年12月底搬家"),
    ("去年年底回国", ("2025-12-01", "2025-12-31"), "2025年底回国"),
    ("明年初换工作", ("2027-01-01", "2027-01-31"), "2027年初换工作"),
])
def test_the_end_or_beginning_of_a_week_month_or_year_is_read_and_anchored_in_its_words(said, days, written):
    assert [(r.start.date().isoformat(), r.end.date().isoformat()) for r in resolve_time_refs(said, MONDAY)] == [days]
    assert mentioned_days(said, MONDAY) == [(date.fromisoformat(days[0]), date.fromisoformat(days[1]))]
    assert timerefs.anchored(said, MONDAY) == written


@pytest.mark.parametrize("said", ["happy end of story", "学期末考试", "周末见", "the start of the meeting", "年初一"])
def test_an_end_or_beginning_of_something_else_is_no_time(said):
    assert resolve_time_refs(said, MONDAY) == [] and timerefs.anchored(said, MONDAY) == said


def test_the_end_of_a_named_month_is_that_month():
    assert [(r.text, r.relative) for r in resolve_time_refs("三月底见", MONDAY)] == [("三月", False)]
