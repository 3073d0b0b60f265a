"""A Chinese line learned about the user gives its relative times as the dates they meant,
written the Chinese way where the words stood: "我明天去上海出差", said on Saturday
5 December 2026, reads "我2026年12月6日去上海出差", true on any later day. Habits, spans,
since-phrases, vague counts and titles stay as said, as their English kin do."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reverie import Memory
from reverie.timerefs import anchored, resolve_time_refs

CST = timezone(timedelta(hours=8))
AT = datetime(2026, 12, 5, 10, 0, tzinfo=CST)  # a Saturday


@pytest.mark.parametrize("line, said", [
    # days
    ("我明天去上海出差", "我2026年12月6日去上海出差"),
    ("我昨天去了医院", "我2026年12月4日去了医院"),
    ("前天生病了", "2026年12月3日生病了"),
    ("后天回老家", "2026年12月7日回老家"),
    ("大后天回老家", "2026年12月8日回老家"),
    ("大前天到的北京", "2026年12月2日到的北京"),
    ("今天很累", "2026年12月5日很累"),
    ("昨晚看了电影", "2026年12月4日晚上看了电影"),  # the part of the day stays
    ("今早跑了5公里", "2026年12月5日早上跑了5公里"),
    ("明晚吃火锅", "2026年12月6日晚上吃火锅"),
    # weeks and weekends
    ("上周去了黄山", "2026年11月23日至29日去了黄山"),
    ("下周去北京", "2026年12月7日至13日去北京"),
    ("这周一直很忙", "2026年11月30日至12月6日一直很忙"),
    ("上上周去了日本", "2026年11月16日至22日去了日本"),
    ("这周末去爬山", "2026年12月5日至6日去爬山"),
    ("上周末去爬山", "2026年11月28日至29日去爬山"),
    ("下个周末去爬山", "2026年12月12日至13日去爬山"),
    # a day of a week
    ("下周五有个面试", "2026年12月11日有个面试"),
    ("上周三开会了", "2026年11月25日开会了"),
    ("这周一交了报告", "2026年11月30日交了报告"),
    ("下个星期天去公园", "2026年12月13日去公园"),
    ("上礼拜六搬家了", "2026年11月28日搬家了"),
    ("上周日去了公园", "2026年11月29日去了公园"),
    ("下周一起去吃饭", "2026年12月7日至13日一起去吃饭"),  # together next week, not next Monday
    ("上周三天都在加班", "2026年11月23日至29日三天都在加班"),  # three days last week
    # months and years
    ("上个月搬到了杭州", "2026年11月搬到了杭州"),
    ("下个月换工作", "2027年1月换工作"),
    ("这个月很忙", "2026年12月很忙"),
    ("去年去了日本", "2025年去了日本"),
    ("前年去了日本", "2024年去了日本"),
    ("明年想去日本", "2027年想去日本"),
    ("去年三月去了日本", "2025年3月去了日本"),
    ("今年5月8日结婚了", "2026年5月8日结婚了"),
    ("去年夏天去了日本", "2025年夏天去了日本"),
    ("去年开始学吉他", "2025年开始学吉他"),  # started then (from then on: "从去年开始", below)
    # counted back
    ("三天前买了车", "2026年12月2日买了车"),
    ("两周前换了工作", "2026年11月16日至22日换了工作"),
    ("三个月前换了工作", "2026年9月换了工作"),
    ("两年前去过日本", "2024年去过日本"),
    # a time of something: "上周的会议" is last week's meeting, and 今天的 is read the same way
    ("上周的会议很成功", "2026年11月23日至29日的会议很成功"),
    ("今天的天气很好", "2026年12月5日的天气很好"),
    # in a longer line, each where it stands
    ("喜欢周末去爬山，上周去了黄山", "喜欢周末去爬山，2026年11月23日至29日去了黄山"),
    ("从去年开始学吉他，上个月考了五级", "从去年开始学吉他，2026年11月考了五级"),
    ("我明天到上海，后天去杭州", "我2026年12月6日到上海，2026年12月7日去杭州"),
])
def test_a_chinese_relative_time_is_given_as_the_dates_it_meant(line, said):
    assert anchored(line, AT) == said


@pytest.mark.parametrize("line", [
    # habits
    "每周二去游泳",
    "周二上午开会",  # a weekday of no week: as the English "on Tuesday"
    "我一般周二上午开会",
    "每个周末去爬山",
    "每年的今天都去海边",
    "我经常把今天的事拖到明天",
    # spans
    "最近一个月很忙",
    "这几天很累",
    "从去年到现在一直在学日语",
    "去年至今住在上海",
    "明天至后天在上海",
    # since-phrases and the like, as "since last year", "until tomorrow", "before next month"
    "从去年开始学吉他",
    "自从去年搬到上海就没回过老家",
    "去年以来一直住在上海",
    "从明天起不喝酒",
    "直到明天都在上海",
    "在下个月之前跑完马拉松",
    # a vague count
    "几天前去过日本",
    "几个月前换了工作",
    # titles and names
    "喜欢听《明天会更好》",
    "在今日头条工作",
    # the characters of other words
    "马上周末了",  # 马上 (soon) + 周末
    "讨论一下周末的安排",  # 一下 + 周末
    "我以前天天跑步",  # 以前 + 天天
    "午后天气很好",  # 午后 + 天气
    "近视是后天形成的",  # 后天: acquired
    "这个习惯是后天的。",
    "这周围有很多餐馆",  # 周围: around
    "过去年轻的时候喜欢摇滚",  # 过去 + 年轻
])
def test_habits_spans_phrases_and_names_stay_as_said(line):
    assert anchored(line, AT) == line


@pytest.mark.parametrize("line, at, said", [
    ("下周去北京", datetime(2026, 12, 31, 10, tzinfo=CST), "2027年1月4日至10日去北京"),
    ("上周去了北京", datetime(2027, 1, 5, 10, tzinfo=CST), "2026年12月28日至2027年1月3日去了北京"),
    ("明天去北京", datetime(2026, 12, 31, 10, tzinfo=CST), "2027年1月1日去北京"),
    ("昨天去了北京", datetime(2024, 3, 1, 10, tzinfo=CST), "2024年2月29日去了北京"),
    ("上个月去了北京", datetime(2027, 1, 15, 10, tzinfo=CST), "2026年12月去了北京"),
])
def test_dates_across_a_month_or_a_year_say_both(line, at, said):
    assert anchored(line, at) == said


def test_the_day_is_the_speakers_day():
    # 23:30 in Shanghai on the 5th is 15:30 UTC: 明天 is the 6th there
    assert anchored("我明天去上海出差", datetime(2026, 12, 5, 23, 30, tzinfo=CST)) == "我2026年12月6日去上海出差"
    assert anchored("我明天去上海出差", datetime(2026, 12, 5, 23, 30, tzinfo=CST).astimezone(timezone.utc)) \
        == "我2026年12月6日去上海出差"
    assert anchored("我明天去上海出差", datetime(2026, 12, 6, 0, 30, tzinfo=CST)) == "我2026年12月7日去上海出差"


@pytest.mark.parametrize("line, said", [
    ("Moved to 北京 last weekend", "Moved to 北京 on the weekend of 28-29 November 2026"),
    ("Moved to Zürich last weekend", "Moved to Zürich on the weekend of 28-29 November 2026"),
    ("Was sick yesterday，今天好多了", "Was sick on 4 December 2026，2026年12月5日好多了"),
    ("Lives in 上海 since last year", "Lives in 上海 since last year"),
    ("Passed yesterday’s test", "Passed yesterday’s test"),
    ("Has a review this Friday, 下周五 too", "Has a review on 4 December 2026, 2026年12月11日 too"),
])
def test_english_times_in_a_line_with_chinese_keep_the_english_reading(line, said):
    assert anchored(line, AT) == said


@pytest.mark.parametrize("line", [
    "Moved to Hamburg last weekend", "Prefers meetings on Tuesday", "Lives in Hamburg since last year",
    "Has trained for the past month", "Today FM is their radio station", "Has a dentist appointment next Tuesday",
])
def test_an_english_line_reads_as_it_did_with_a_chinese_line_beside_it(line):
    alone = anchored(line, AT)
    assert anchored(f"{line}；我明天去上海出差", AT) == f"{alone}；我2026年12月6日去上海出差"


@pytest.mark.parametrize("text, day", [
    ("下周五", datetime(2026, 12, 11, tzinfo=CST)),
    ("上个星期天", datetime(2026, 11, 29, tzinfo=CST)),
    ("这周末", datetime(2026, 12, 5, tzinfo=CST)),
    ("大后天", datetime(2026, 12, 8, tzinfo=CST)),
])
def test_the_new_chinese_words_are_read_as_times_relative_to_now(text, day):
    (ref,) = resolve_time_refs(text, AT)
    assert (ref.text, ref.start, ref.relative) == (text, day, True)


def test_a_word_that_only_starts_like_a_week_is_no_time():
    assert resolve_time_refs("这周围有很多餐馆", AT) == []
    assert [r.text for r in resolve_time_refs("下周期的计划", AT)] == []


def test_a_fact_learned_from_chinese_holds_the_date_not_the_relative_words(tmp_path):
    # the heuristic engine learns a plan ("打算…") and a liking, not "我明天去上海出差" (a passing
    # plan of the talk: no fact); noon UTC is the same day in the machine's zone, wherever it is
    at = datetime(2026, 12, 5, 12, 0, tzinfo=timezone.utc)
    mem = Memory(tmp_path, background=False)
    try:
        mem.add([{"role": "user", "content": "我打算下周去北京出差"}], user="u", thread="t1", at=at)
        mem.add([{"role": "user", "content": "我喜欢周末去爬山，上周去了黄山"}], user="u", thread="t2", at=at)
        mem.flush(user="u")
        learned = {f.content: f.category for f in mem.facts(user="u")}
    finally:
        mem.close()
    # (the liking ends where the clause of another time begins: the trip is no part of it)
    assert learned == {"打算2026年12月7日至13日去北京出差": "goal", "喜欢周末去爬山": "preference"}
