"""What the heuristic engine learns from Chinese: what one is, where one lives, what one likes
now; and what it leaves alone: everyday talk that looks like it ("我叫外卖了", "我是真的很累"),
what held once ("去年我在华为实习过") and plans for the talk ("我是说我们明天再聊吧")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reverie.engines.base import ExtractRequest, FactRef
from reverie.engines.heuristic import HeuristicEngine
from reverie.models import Message, Profile

engine = HeuristicEngine()
AT = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def extract(*texts: str, facts: list[FactRef] | None = None, profile: Profile | None = None):
    return engine.extract(ExtractRequest(
        messages=[Message(role="user", content=t) for t in texts], episode_ids=[f"ep{i}" for i in range(len(texts))],
        profile=profile or Profile(), facts=facts or [],
    ))


def learned(text: str) -> list[tuple[str, str]]:
    return [(f.content, f.category) for f in extract(text).new_facts]


def say(mem, texts: list[str], user: str = "li") -> None:
    """Each text in a thread of its own, learned in one batch."""
    for i, text in enumerate(texts):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "好的。"}],
                user=user, thread=f"t{i}", at=AT + timedelta(days=i))
    mem.flush()


@pytest.mark.parametrize("text, content, section", [
    ("我叫王小明", "叫王小明", "personalContext"),
    ("我叫王小明，今年25岁。", "叫王小明", "personalContext"),
    ("我叫Tom", "叫Tom", "personalContext"),
    ("我的名字是王小明", "名字是王小明", "personalContext"),
    ("我的名字叫王小明", "名字是王小明", "personalContext"),
    ("我住在上海", "住在上海", "personalContext"),
    ("我一直住在上海", "住在上海", "personalContext"),
    ("我来自成都", "来自成都", "personalContext"),
    ("我是程序员", "是程序员", "workContext"),
    ("我是一名医生", "是医生", "workContext"),
    ("我是做前端的", "是做前端的", "workContext"),
    ("我是素食者", "是素食者", "personalContext"),
    ("我在腾讯工作", "在腾讯工作", "workContext"),
    # "now" that says what holds from now on, not a passing state
    ("我现在住在北京", "住在北京", "personalContext"),
    ("我现在在字节跳动工作", "在字节跳动工作", "workContext"),
    ("我目前是一名医生", "是医生", "workContext"),
    # a move: where one lives now, however long ago
    ("我搬到北京了", "住在北京", "personalContext"),
    ("我上个月搬到了杭州", "住在杭州", "personalContext"),
    ("我刚搬到深圳", "住在深圳", "personalContext"),
])
def test_a_statement_about_oneself_is_learned_for_the_profile(text, content, section):
    result = extract(text)
    assert [(f.content, f.category) for f in result.new_facts] == [(content, "identity")]
    assert result.user[section].summary == content


@pytest.mark.parametrize("text, content, category", [
    ("我喜欢喝茶", "喜欢喝茶", "preference"),
    ("我不喜欢太长的会议", "不喜欢太长的会议", "preference"),
    ("我不喜欢过度设计", "不喜欢过度设计", "preference"),  # "过度" is no "过" of the past
    ("我喜欢吃过桥米线", "喜欢吃过桥米线", "preference"),
    ("我之前说过我喜欢喝茶", "喜欢喝茶", "preference"),  # said before, liked now
    ("我喜欢周末去爬山，上周去了黄山", "喜欢周末去爬山", "preference"),  # the trip is not the liking
    ("我不喝酒了", "不喝酒了", "preference"),
    ("我改用vim了", "改用vim", "preference"),
    ("我想成为医生", "想成为医生", "goal"),
    ("我的目标是在年底之前跑完马拉松", "目标是在年底之前跑完马拉松", "goal"),  # a deadline, not the past
    ("张三是我的同事", "张三：同事", "context"),
    ("我是说Python 3.12，不是3.11", "Python 3.12，不是3.11", "correction"),
    ("不对，应该是3.12版本", "应该是3.12版本", "correction"),
    ("我现在不再用emacs", "不再用emacs", "correction"),
])
def test_other_statements_are_still_learned(text, content, category):
    assert learned(text) == [(content, category)]


# each everyday line beside the statement it looks like
@pytest.mark.parametrize("text, statement", [
    ("我是说我们明天再聊吧。", "我是说Python 3.12，不是3.11"),  # "I mean", not "I meant"
    ("不是的，我是说我们明天再聊吧", "不对，应该是3.12版本"),
    ("不对，我们明天再聊", "不对，应该是3.12版本"),
    ("我是真的很累。", "我是程序员"),  # stress, not a job
    ("我是昨天到的上海。", "我是程序员"),  # when one came
    ("我是你的老板。", "我是程序员"),  # a role towards someone
    ("我是认真的", "我是程序员"),
    ("我是来旅游的", "我是做前端的"),
    ("我是第一次来上海", "我是程序员"),
    ("我现在是在地铁上", "我现在是一名医生"),
    ("我叫外卖了。", "我叫王小明"),  # ordered, not named
    ("我叫了一辆滴滴。", "我叫王小明"),
    ("我叫个车", "我叫王小明"),
    ("我叫妈妈来接我", "我叫王小明"),
    ("我住在酒店里，明天退房。", "我住在上海"),  # a stay, not a home
    ("我这几天住在上海", "我住在上海"),
    ("我现在在开会", "我现在在字节跳动工作"),
    ("我要搬到北京了", "我搬到北京了"),  # not moved yet
    ("我还没搬到北京", "我搬到北京了"),
    ("我不吃了", "我不喝酒了"),  # done eating, nothing given up
    ("我不用担心了", "我不喝酒了"),  # "need not", not "no longer use"
    ("改用中文回答", "我改用vim了"),  # an instruction, no subject
    ("帮我改用Python写", "我改用vim了"),
])
def test_everyday_talk_that_looks_like_a_statement_is_not_learned(text, statement):
    result = extract(text)
    assert (result.new_facts, result.user) == ([], {})
    assert extract(statement).new_facts  # the statement it looks like is


@pytest.mark.parametrize("text, statement", [
    ("去年我在深圳的华为实习过半年。", "我在深圳的华为实习"),
    ("我在华为工作过", "我在华为工作"),
    ("三年前我在华为工作", "我在华为工作"),
    ("去年夏天，我在华为实习", "我在华为实习"),
    ("当时我住在上海", "我住在上海"),
    ("以前我是老师", "我是老师"),
    ("他以前是我的老板", "张三是我的老板"),
    ("小时候我想成为医生", "我想成为医生"),
    ("我以前搬到过北京", "我搬到北京了"),
])
def test_what_held_once_is_not_learned_as_what_holds_now(text, statement):
    result = extract(text)
    assert (result.new_facts, result.user) == ([], {})
    assert extract(statement).new_facts


def test_a_clause_that_goes_on_without_its_subject_is_the_users_own():
    assert learned("我现在不喝茶了，改喝咖啡") == [("不喝茶了", "preference"), ("改喝咖啡", "preference")]


@pytest.mark.parametrize("old, new, content", [
    ("住在上海", "我搬到北京了", "住在北京"),
    ("住在上海", "我现在住在北京", "住在北京"),
    ("在腾讯工作", "我在字节跳动工作", "在字节跳动工作"),
    ("在腾讯工作", "我现在在字节跳动工作", "在字节跳动工作"),
    ("喜欢喝茶", "我现在不喝茶了，改喝咖啡", "不喝茶了"),
])
def test_a_new_value_takes_back_the_stored_one(old, new, content):
    result = extract(new, facts=[FactRef(id="old", content=old), FactRef(id="other", content="喜欢爬山")])
    assert [r.id for r in result.facts_to_remove] == ["old"]
    assert result.new_facts[0].content == content


@pytest.mark.parametrize("old, new, section, summary", [
    ("住在上海", "我搬到北京了", "personalContext", "住在北京"),
    ("在腾讯工作", "我在字节跳动工作", "workContext", "在字节跳动工作"),
    ("叫小明", "我叫王小明", "personalContext", "叫王小明"),
])
def test_a_new_value_takes_the_old_ones_place_in_the_profile(old, new, section, summary):
    profile = Profile()
    profile.section(f"user.{section}").summary = old
    assert extract(new, profile=profile).user[section].summary == summary


def test_updates_said_in_later_talks_archive_the_old_facts(mem):
    for texts in (["我住在上海", "我喜欢喝茶", "我在腾讯工作"], ["我搬到北京了", "我现在不喝茶了，改喝咖啡", "我在字节跳动工作"]):
        say(mem, texts)
    live = {f.content for f in mem.facts(user="li")}
    assert live == {"住在北京", "不喝茶了", "改喝咖啡", "在字节跳动工作"}
    archived = {f.content: f.superseded_by for f in mem.facts(user="li", status="archived")}
    assert set(archived) == {"住在上海", "喜欢喝茶", "在腾讯工作"} and all(archived.values())
    profile = mem.profile(user="li").user
    assert (profile.personal_context.summary, profile.work_context.summary) == ("住在北京", "在字节跳动工作")


def test_updates_said_in_one_batch_leave_the_newest_value(mem):
    say(mem, ["我住在上海", "我喜欢喝茶", "我在腾讯工作", "我现在住在北京", "我现在不喝茶了，改喝咖啡", "我在字节跳动工作"])
    live = {f.content for f in mem.facts(user="li")}
    assert {"住在北京", "不喝茶了", "改喝咖啡", "在字节跳动工作"} <= live
    assert not {"住在上海", "喜欢喝茶", "在腾讯工作"} & live
    profile = mem.profile(user="li").user
    assert (profile.personal_context.summary, profile.work_context.summary) == ("住在北京", "在字节跳动工作")


def test_the_testers_everyday_lines_leave_no_fact_and_no_profile(mem):
    say(mem, ["我是说我们明天再聊吧。", "我是真的很累。", "我叫外卖了。", "我是昨天到的上海。", "我住在酒店里，明天退房。",
              "我叫了一辆滴滴。", "我是你的老板。", "去年我在深圳的华为实习过半年。"])
    assert mem.facts(user="li") == []
    profile = mem.profile(user="li").user
    assert (profile.work_context.summary, profile.personal_context.summary) == ("", "")


def test_a_wrong_name_said_is_no_name_and_where_one_is_from_is_personal(mem):
    say(mem, ["我叫李明", "我叫错了名字", "我是北京人", "我是素食主义者", "我是程序员"])
    profile = mem.profile(user="li").user
    assert profile.work_context.summary == "是程序员"
    assert profile.personal_context.summary == "叫李明；是北京人；是素食主义者"


def test_a_relatives_allergy_is_theirs_and_never_the_users(mem):
    """"我女儿小雨对花生过敏" was learned as the user's own allergy, "对女儿小雨对花生过敏", and
    written into the profile; "我对猫毛过敏" learned nothing ("猫毛" is no content word)."""
    say(mem, ["我女儿小雨对花生过敏", "我老公也对海鲜过敏", "我对猫毛过敏"], user="lei")
    contents = {f.content: f for f in mem.facts(user="lei")}
    assert {"女儿小雨对花生过敏", "老公对海鲜过敏", "对猫毛过敏"} <= set(contents)
    assert contents["女儿小雨对花生过敏"].category == "context"
    assert not any(c.startswith("对女儿") or c.startswith("对老公") for c in contents)
    personal = mem.profile(user="lei").user.personal_context.summary
    assert "对猫毛过敏" in personal and "花生" not in personal and "海鲜" not in personal
