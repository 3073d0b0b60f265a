"""The heuristic engine: offline, deterministic rules for English and Chinese."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reverie.engines.base import (
    DistillRequest,
    Engine,
    ExtractRequest,
    FactRef,
    GovernRequest,
    NoteRef,
    PerceiveRequest,
    SummarizeRequest,
    TagInfo,
)
from reverie.engines.heuristic import (
    GENERIC_WORDS,
    HeuristicEngine,
    detect_route,
    keyphrases,
    resolve_time_refs,
)
from reverie.timerefs import anchored
from reverie.models import CATEGORIES, Message, Profile
from reverie.text import STOPWORDS, token_set

NOW = datetime(2024, 3, 14, 15, 30, tzinfo=timezone.utc)  # a Thursday
engine = HeuristicEngine()


def user(text: str, speaker: str | None = None) -> Message:
    return Message(role="user", content=text, speaker=speaker)


def extract(*texts: str, profile: Profile | None = None, facts: list[FactRef] | None = None):
    return engine.extract(ExtractRequest(
        messages=[user(t) for t in texts], episode_ids=[f"ep{i}" for i in range(len(texts))],
        profile=profile or Profile(), facts=facts or [],
    ))


def test_engine_implements_the_protocol():
    assert isinstance(engine, Engine)
    assert engine.name == "heuristic"


# ---------------------------------------------------------------- perceive

@pytest.mark.parametrize("text, route", [
    ("Hi there!", "shallow"),
    ("What language do I prefer?", "shallow"),
    ("你好", "shallow"),
    ("What happened with the migration?", "medium"),
    ("Can you recap our trip planning?", "medium"),
    ("Give me an overview of the project", "medium"),
    ("Summarize the discussion", "medium"),
    ("回顾一下我们的讨论", "medium"),
    ("总结一下这个项目", "medium"),
    ("上次发生了什么", "medium"),
    ("When did Caroline go to the support group?", "medium"),
    ("What did Melanie do at the beach?", "medium"),
    ("When Jon has lost his job as a banker?", "medium"),
    ("What exactly did we agree on?", "deep"),
    ("Tell me the details of the contract", "deep"),
    ("What did I say about the budget?", "deep"),
    ("Repeat it word for word", "deep"),
    ("我当时的原话是什么", "deep"),
    ("具体是怎么配置的", "deep"),
    ("把细节告诉我", "deep"),
])
def test_routes_for_the_example_phrases(text, route):
    assert detect_route(text) == route
    assert engine.perceive(PerceiveRequest(message=text, now=NOW)).route == route


@pytest.mark.parametrize("text, scene, sub_scene", [
    ("I fixed the bug in the python function before the deploy", "work", "coding"),
    ("My kids and my husband went to see grandma", "personal", "family"),
    ("I booked a flight and a hotel for the trip", "travel", "trip"),
    ("I signed up for a pottery class and a painting workshop", "hobby", "art"),
    ("My doctor sent me to the hospital", "health", "medical"),
    ("我在准备大学的考试和作业", "learning", "study"),
    ("The weather is nice", "general", ""),
])
def test_scene_and_sub_scene(text, scene, sub_scene):
    perception = engine.perceive(PerceiveRequest(message=text, now=NOW))
    assert (perception.scene, perception.sub_scene) == (scene, sub_scene)


@pytest.mark.parametrize("text, intent", [
    ("Hello!", "greeting"),
    ("你好呀", "greeting"),
    ("What is my favorite editor?", "question"),
    ("你喜欢什么颜色？", "question"),
    ("Please write a test for the parser", "request"),
    ("帮我写一个脚本", "request"),
    ("Thanks, that worked", "feedback"),
    ("No, actually it was Tuesday", "correction"),
    ("不对，应该是周二", "correction"),
    ("I went hiking on Sunday", "statement"),
])
def test_intent(text, intent):
    assert engine.perceive(PerceiveRequest(message=text, now=NOW)).intent == intent


@pytest.mark.parametrize("text, emotion", [
    ("I'm so happy and excited about the new job!", "positive"),
    ("I feel sad and lonely since she left", "negative"),
    ("Ugh, this is so frustrating, the build is still broken", "frustrated"),
    ("这个又不行了，真是崩溃", "frustrated"),
    ("今天很开心", "positive"),
    ("The meeting is at noon", "neutral"),
])
def test_emotion(text, emotion):
    assert engine.perceive(PerceiveRequest(message=text, now=NOW)).emotion == emotion


def _span(text: str) -> list[tuple[str, str]]:
    return [(r.start.date().isoformat(), r.end.date().isoformat()) for r in resolve_time_refs(text, NOW)]


@pytest.mark.parametrize("text, spans", [
    ("what did we do last week?", [("2024-03-04", "2024-03-10")]),
    ("in May 2023", [("2023-05-01", "2023-05-31")]),
    ("May 2023", [("2023-05-01", "2023-05-31")]),
    ("back in 2022", [("2022-01-01", "2022-12-31")]),
    ("yesterday", [("2024-03-13", "2024-03-13")]),
    ("last month", [("2024-02-01", "2024-02-29")]),
    ("last year", [("2023-01-01", "2023-12-31")]),
    ("two weeks ago", [("2024-02-26", "2024-03-03")]),
    ("3 days ago", [("2024-03-11", "2024-03-11")]),
    ("on May 8, 2023", [("2023-05-08", "2023-05-08")]),
    ("in May", [("2023-05-01", "2023-05-31")]),
    ("in March", [("2024-03-01", "2024-03-31")]),
    ("去年", [("2023-01-01", "2023-12-31")]),
    ("上周", [("2024-03-04", "2024-03-10")]),
    ("昨天", [("2024-03-13", "2024-03-13")]),
    ("上个月", [("2024-02-01", "2024-02-29")]),
    ("2023年5月", [("2023-05-01", "2023-05-31")]),
    ("2023年5月8日", [("2023-05-08", "2023-05-08")]),
    ("5月", [("2023-05-01", "2023-05-31")]),
    ("去年5月", [("2023-05-01", "2023-05-31")]),
    ("三个月前", [("2023-12-01", "2023-12-31")]),
    ("yesterday and last year", [("2024-03-13", "2024-03-13"), ("2023-01-01", "2023-12-31")]),
    ("you may go now", []),
    ("I have 2 cats", []),
    # NOW is a Thursday: "this" is this week's day, "on" the last one (and the next one, unless
    # said in the past tense), "next" the coming one or next week's (people mean either)
    ("this Friday", [("2024-03-15", "2024-03-15")]),
    ("this Monday", [("2024-03-11", "2024-03-11")]),
    ("on Friday", [("2024-03-08", "2024-03-08"), ("2024-03-15", "2024-03-15")]),
    ("we went out on Friday", [("2024-03-08", "2024-03-08")]),
    ("next Tuesday", [("2024-03-19", "2024-03-19")]),
    ("next Friday", [("2024-03-15", "2024-03-22")]),
])
def test_time_refs_resolve_against_now(text, spans):
    assert _span(text) == spans


@pytest.mark.parametrize("text, relative", [
    ("last weekend", True), ("yesterday", True), ("3 days ago", True), ("next Tuesday", True), ("上周", True),
    ("in May 2023", False), ("2023年5月8日", False), ("back in 2022", False),
])
def test_a_time_said_relative_to_the_moment_of_speaking_is_marked(text, relative):
    (ref,) = resolve_time_refs(text, NOW)
    assert ref.relative is relative


@pytest.mark.parametrize("line, said", [
    # said on Monday 23 March 2026
    ("Moved to Hamburg last weekend", "Moved to Hamburg on the weekend of 21-22 March 2026"),
    ("Was sick yesterday", "Was sick on 22 March 2026"),
    ("Yesterday ran a 10k", "On 22 March 2026 ran a 10k"),
    ("Started a new job last month", "Started a new job in February 2026"),
    ("Visited Rome 3 years ago", "Visited Rome in 2023"),
    ("Has a dentist appointment next Tuesday", "Has a dentist appointment on Tuesday 24 or 31 March 2026"),
    ("Has a review this Friday", "Has a review on 27 March 2026"),
    ("Went to Paris in May 2023", "Went to Paris in May 2023"),  # a date already
    ("Lives in Hamburg now", "Lives in Hamburg now"),
    ("Reads USA Today every morning", "Reads USA Today every morning"),  # a name
    ("上周去了黄山", "2026年3月16日至22日去了黄山"),  # Chinese times are anchored too (tests/test_anchoring_zh.py)
    # a weekly habit, a span, part of a phrase, a title: as said
    ("Prefers meetings on Tuesday", "Prefers meetings on Tuesday"),
    ("Always goes to church on Sunday", "Always goes to church on Sunday"),
    ("Works on Monday and Tuesday", "Works on Monday and Tuesday"),
    ("Lives in Hamburg since last year", "Lives in Hamburg since last year"),
    ("Has trained for the past month", "Has trained for the past month"),
    ("Passed yesterday's test", "Passed yesterday's test"),
    ("Today FM is their radio station", "Today FM is their radio station"),
    ("Last Week Tonight is their favourite show", "Last Week Tonight is their favourite show"),
    # the same words twice: each read where it stands
    ("Is busy since last week and was sick last week", "Is busy since last week and was sick in the week of 16 March 2026"),
])
def test_a_learned_line_gives_its_relative_times_as_the_dates_they_meant(line, said):
    assert anchored(line, datetime(2026, 3, 23, 9, tzinfo=timezone.utc)) == said


def test_time_refs_cover_whole_days_in_the_callers_zone():
    tz = timezone(timedelta(hours=8))
    (ref,) = resolve_time_refs("昨天", datetime(2024, 3, 14, 1, 0, tzinfo=tz))
    assert ref.text == "昨天"
    assert ref.start == datetime(2024, 3, 13, 0, 0, tzinfo=tz)
    assert ref.end == datetime(2024, 3, 13, 23, 59, 59, 999999, tzinfo=tz)
    (week,) = engine.perceive(PerceiveRequest(message="What happened last week?", now=NOW)).time_refs
    assert week.text == "last week"


def test_keyphrases_are_content_words_without_stopwords():
    phrases = keyphrases("When did Caroline go to the LGBTQ support group?", 6)
    assert phrases[:2] == ["lgbtq support group", "caroline"]
    assert not {w for p in phrases for w in p.split()} & (STOPWORDS | GENERIC_WORDS)
    assert "python" in keyphrases("我喜欢用Python写代码", 6)
    assert "代码" in " ".join(keyphrases("我喜欢用Python写代码", 6))


def test_perceive_keyphrases_and_tags_map_onto_known_tags_only():
    known = ["Support-Groups", "caroline", "painting", "travel"]
    perception = engine.perceive(PerceiveRequest(
        message="When did Caroline go to the LGBTQ support group?", now=NOW, known_tags=known))
    assert 2 <= len(perception.keyphrases) <= 6
    assert perception.tags == ["Support-Groups", "caroline"]
    assert engine.perceive(PerceiveRequest(message="When did Caroline go?", now=NOW)).tags == []
    many = engine.perceive(PerceiveRequest(message="vim emacs python rust docker git", now=NOW,
                                           known_tags=["vim", "emacs", "python", "rust", "docker", "git"]))
    assert len(many.tags) == 4 and set(many.tags) <= {"vim", "emacs", "python", "rust", "docker", "git"}


# ---------------------------------------------------------------- extract

def test_english_conversation_gives_facts_tags_and_profile():
    result = engine.extract(ExtractRequest(
        messages=[
            user("Hi! I'm a backend engineer at Stripe, and I prefer dark mode in my editor."),
            Message(role="assistant", content="Noted. I love helping with editors, and I prefer light mode."),
            user("Please don't use emojis in commit messages. My goal is to run a marathon this year."),
            user("We decided to use Postgres for the event store."),
        ],
        episode_ids=["ep1", "ep1", "ep2", "ep3"],
    ))
    facts = {f.content: f for f in result.new_facts}
    assert set(facts) == {
        "Is a backend engineer at Stripe",
        "Prefers dark mode in their editor",
        "Don't use emojis in commit messages",
        "Goal: run a marathon this year",
        "Decided to use Postgres for the event store",
    }
    assert facts["Is a backend engineer at Stripe"].category == "identity"
    assert facts["Prefers dark mode in their editor"].category == "preference"
    assert facts["Prefers dark mode in their editor"].area == "Tools"
    assert facts["Don't use emojis in commit messages"].category == "constraint"
    assert facts["Goal: run a marathon this year"].category == "goal"
    assert facts["Decided to use Postgres for the event store"].category == "decision"
    assert facts["Decided to use Postgres for the event store"].sources == ["ep3"]
    for fact in result.new_facts:
        assert fact.category in CATEGORIES
        assert 0.85 <= fact.confidence <= 0.95
        assert 1 <= len(fact.tags) <= 3
        assert len(fact.content) <= 120
    assert result.user["workContext"].summary == "Is a backend engineer at Stripe"
    assert result.user["workContext"].should_update
    assert result.user["topOfMind"].summary == "Goal: run a marathon this year"
    assert "cognitiveStyle" not in result.user
    assert 2 <= len(result.tags) <= 4
    assert "stripe" in result.tags


def test_chinese_conversation_gives_cognitive_fact_and_thinking_style():
    profile = Profile()
    profile.user.cognitive_style.summary = "喜欢用表格对比方案"
    result = engine.extract(ExtractRequest(
        messages=[user("先给结论，不要长铺垫。我是一名后端工程师，我喜欢用Python写脚本。"),
                  user("我的目标是成为架构师。服务器现在在 3000 端口。")],
        episode_ids=["e1", "e2"], profile=profile,
    ))
    facts = {f.content: f for f in result.new_facts}
    assert set(facts) == {"先给结论，不要长铺垫", "是后端工程师", "喜欢用Python写脚本", "目标是成为架构师"}
    cognitive = facts["先给结论，不要长铺垫"]
    assert (cognitive.category, cognitive.area, cognitive.sources) == ("cognitive", "Communication", ["e1"])
    assert facts["喜欢用Python写脚本"].area == "Code"
    style = result.user["cognitiveStyle"]
    assert style.should_update
    assert style.summary == "喜欢用表格对比方案；先给结论；不要长铺垫"
    assert result.user["workContext"].summary == "是后端工程师"
    assert result.user["topOfMind"].summary == "目标是成为架构师"
    assert "python" in result.tags


def test_a_thinking_style_of_english_and_chinese_parts_uses_a_chinese_semicolon_only_between_chinese():
    profile = Profile()
    profile.user.cognitive_style.summary = "Conclusion first, then details"
    result = engine.extract(ExtractRequest(
        messages=[user("先给结论，不要长铺垫。")], episode_ids=["e1"], profile=profile,
    ))
    assert result.user["cognitiveStyle"].summary == "Conclusion first, then details; 先给结论；不要长铺垫"


@pytest.mark.parametrize("text, canon", [
    ("Please give me the conclusion first, then the details.", "Conclusion first, then details"),
    ("Explain it step by step.", "Step-by-step explanations"),
    ("Give me the big picture first.", "Big picture first"),
    ("Be concise.", "Concise answers"),
    ("Show me the code first.", "Code first, then explanation"),
])
def test_english_cognitive_style_signals(text, canon):
    profile = Profile()
    profile.user.cognitive_style.summary = "Likes tables"
    result = extract(text, profile=profile)
    assert [f.category for f in result.new_facts] == ["cognitive"]
    assert result.user["cognitiveStyle"].summary == f"Likes tables; {canon}"


def test_cognitive_style_already_known_is_not_rewritten():
    profile = Profile()
    profile.user.cognitive_style.summary = "Conclusion first, then details"
    result = extract("Conclusion first, please.", profile=profile)
    assert "cognitiveStyle" not in result.user
    assert [f.category for f in result.new_facts] == ["cognitive"]


@pytest.mark.parametrize("text", [
    "The server is on port 3000 right now.",
    "Today I'm working on the login page.",
    "服务器现在在 3000 端口",
    "我今天在改登录页",
    "Error at /src/index.ts:42",
    "I like it.",
    "Do you like pizza?",
    "If I prefer tabs, would that matter?",
    "I'm a bit tired.",
    "Don't worry about it.",
    "Don't give up, buddy!",
    "Never had a chance to visit it.",
    "Always here to cheer you on!",
    "Everyone we love was there to celebrate us.",
    "I love that you chose pottery for your art.",
    "I love it, it brings us closer.",
    "Till next time, then.",
    "I worked in the garden with Theo over the holidays.",  # something done, not a job
    "I work in the backyard every Sunday.",
])
def test_temporary_generic_and_question_lines_are_not_facts(text):
    assert extract(text).new_facts == []


@pytest.mark.parametrize("text, content, category", [
    ("I love hiking on weekends", "Loves hiking on weekends", "preference"),
    ("I hate long meetings", "Hates long meetings", "preference"),
    ("Always use type hints", "Always use type hints", "constraint"),
    ("Never push to main", "Never push to main", "constraint"),
    ("I work as a nurse", "Works as a nurse", "identity"),
    ("I want to become a counselor", "Wants to become a counselor", "goal"),
    ("Let's go with FastAPI", "Go with FastAPI", "decision"),
    ("I meant Python 3.12", "Meant Python 3.12", "correction"),
    ("I always write tests first", "Always writes tests first", "behavior"),
    ("我不喜欢太长的会议", "不喜欢太长的会议", "preference"),
    ("以后都用中文回答", "以后都用中文回答", "constraint"),
    ("我们决定用PostgreSQL", "决定用PostgreSQL", "decision"),
    ("不对，应该是3.12版本", "应该是3.12版本", "correction"),
    ("禁止 rm，优先 trash", "禁止rm，优先 trash", "constraint"),
    ("我在字节跳动工作", "在字节跳动工作", "identity"),
    ("Lesson learned: run migrations before deploying", "Run migrations before deploying", "knowledge"),
    ("Alice is my manager", "Alice is their manager", "context"),
    ("My daughter is named Lucia", "Lucia is their daughter", "context"),
    ("My son is called Tom", "Tom is their son", "context"),
    ("My name is not Bob, it's Rob.", "Name is Rob", "identity"),
    ("I have type 2 diabetes.", "Has type 2 diabetes", "identity"),
    ("Hi, I'm Sam, a product manager at Klarna.", "Name is Sam", "identity"),
    ("Next Friday we decided to launch v2.", "Decided to launch v2 next Friday", "decision"),
    ("I use vim for editing.", "Uses vim for editing", "preference"),
    ("I'm learning Portuguese.", "Is learning Portuguese", "goal"),
    ("下周五我们决定上线v2", "下周五决定上线v2", "decision"),
    ("我对青霉素过敏。", "对青霉素过敏", "identity"),
    ("I take 5 mg of Ramipril every morning.", "Takes 5 mg of Ramipril every morning", "identity"),
    ("I'm pregnant with twins.", "Is pregnant with twins", "identity"),
    ("I also have a brother named Tim.", "Has a brother named Tim", "identity"),
    ("My daughter Mia is allergic to shellfish.", "Their daughter is allergic to shellfish", "context"),
    ("I'm from Sweden", "Is from Sweden", "identity"),
    ("I no longer use emacs", "No longer uses emacs", "correction"),
    ("I run a bakery in Porto", "Runs a bakery in Porto", "identity"),
    ("I work in a hospital in Lyon", "Works in a hospital in Lyon", "identity"),
])
def test_signal_rules(text, content, category):
    (fact,) = extract(text).new_facts
    assert (fact.content, fact.category) == (content, category)


@pytest.mark.parametrize("text", ["My husband is allergic to shellfish.", "My sister is pregnant.", "My son is autistic.",
                                  "My mother is Brazilian.", "My wife is Catholic.", "She is my sister.",
                                  "My partner is unemployed.", "My name is not important."])
def test_a_word_that_is_no_name_is_not_learned_as_a_relatives_name(text):
    assert not any("is their" in f.content or f.content.startswith("Name is") for f in extract(text).new_facts)


@pytest.mark.parametrize("text, contents", [
    ("I live in Porto and work as a nurse at the Santo António hospital.",
     ["Lives in Porto", "Works as a nurse at the Santo António hospital"]),
    ("I work at Acme and live in Lyon.", ["Works at Acme", "Lives in Lyon"]),
    ("I love Porto and have two kids.", ["Loves Porto", "Has two kids"]),
    ("I like to cook and play guitar on weekends.", ["Likes to cook and play guitar on weekends"]),  # one liking
])
def test_two_facts_said_in_one_breath_are_two_facts(text, contents):
    # (so that a move archives the city, not the job said with it)
    assert [f.content for f in extract(text).new_facts] == contents


@pytest.mark.parametrize("text", ["I use it every day.", "I'm learning a lot here.", "I'm learning about myself."])
def test_a_tool_or_a_skill_that_names_nothing_is_no_fact(text):
    assert extract(text).new_facts == []


def test_a_line_said_and_taken_back_in_one_batch_is_not_learned_beside_what_took_it_back():
    # the demo's "I use neovim ..." then "No, actually I switched to helix last month, not neovim."
    said = "I use neovim with the lazy.nvim plugin manager. No, actually I switched to helix last month, not neovim."
    assert [f.content for f in extract(said).new_facts] == ["Switched to helix last month, not neovim"]
    assert [f.content for f in extract("I like tea and coffee. I like coffee, not tea.").new_facts] == \
        ["Likes coffee, not tea"]


def test_weak_signal_has_lower_confidence_and_no_profile_update():
    result = extract("I plan to learn Rust")
    (fact,) = result.new_facts
    assert fact.category == "goal" and 0.6 <= fact.confidence <= 0.75
    assert result.user == {}


def test_near_duplicate_is_reinforced_instead_of_added():
    facts = [FactRef(id="f1", content="Prefers dark mode in editors"), FactRef(id="f2", content="Likes Python")]
    result = extract("I prefer dark mode in my editors.", facts=facts)
    assert result.facts_to_reinforce == ["f1"]
    assert result.new_facts == []


def test_correction_removes_the_contradicted_fact():
    facts = [FactRef(id="f1", content="Uses emacs for editing"), FactRef(id="f2", content="Likes Python")]
    result = extract("No, actually I use vim, not emacs.", facts=facts)
    assert [(r.id, "emacs" in r.reason or "vim" in r.reason) for r in result.facts_to_remove] == [("f1", True)]
    (fact,) = result.new_facts
    assert (fact.content, fact.category) == ("Uses vim, not emacs", "correction")
    again = extract("No, actually I use vim, not emacs.", facts=[FactRef(id="c1", content="Uses vim, not emacs")])
    assert (again.facts_to_remove, again.facts_to_reinforce, again.new_facts) == ([], ["c1"], [])


@pytest.mark.parametrize("old, new", [
    ("Likes long meetings", "I don't like long meetings"),
    ("Works at Google", "I work at Stripe"),
    ("Prefers tabs for indentation", "I prefer spaces for indentation"),
    ("用emacs写代码", "我不再用emacs写代码"),
])
def test_a_new_statement_takes_back_the_old_one(old, new):
    result = extract(new, facts=[FactRef(id="old", content=old), FactRef(id="other", content="Likes jazz")])
    assert [r.id for r in result.facts_to_remove] == ["old"]


def test_only_the_users_messages_count():
    messages = [Message(role="user", speaker="Caroline", content="I love pottery."),
                Message(role="user", speaker="Melanie", content="I love camping.")]
    result = engine.extract(ExtractRequest(messages=messages, episode_ids=["a", "b"], user_speakers=["caroline"]))
    assert [(f.content, f.sources) for f in result.new_facts] == [("Loves pottery", ["a"])]
    by_role = engine.extract(ExtractRequest(messages=[Message(role="assistant", content="I love camping.")]))
    assert by_role.new_facts == []


def test_repeated_signal_is_one_fact_with_every_source():
    result = extract("I prefer tabs over spaces.", "I still prefer tabs over spaces!")
    (fact,) = result.new_facts
    assert fact.sources == ["ep0", "ep1"]


def test_long_lines_are_clipped():
    langs = ["python", "rust", "haskell", "ocaml", "erlang", "elixir", "clojure", "scala", "kotlin", "swift",
             "zig", "nim", "crystal", "julia", "fortran", "cobol", "pascal", "prolog"]
    result = extract("I prefer " + " and ".join(langs) + " for side projects")
    (fact,) = result.new_facts
    assert len(fact.content) <= 120 and fact.content.endswith("…")


@pytest.mark.parametrize("text", [
    "Let's say I work as a pirate on a ship, what would my day look like",
    "Pretend I'm a pirate",
    "Suppose I'm a lawyer",
    "Imagine I'm a pirate and I live on a ship",
    "My brother told me: I work as a plumber.",
    "My sister said I'm a terrible cook",
    "Everyone says I'm a great cook",
    "According to my mom, I'm a genius",
    "I'm a doctor, just kidding",
    "I work at Google lol jk",
    "I'm a doctor. Just kidding!",
    "I'm an idiot",
])
def test_made_up_reported_and_joking_lines_are_not_facts(text):
    result = extract(text)
    assert (result.new_facts, result.user) == ([], {})


@pytest.mark.parametrize("text, content", [
    ("That said, I prefer tea", "Prefers tea"),  # a phrase, not someone's words
    ("I told her I work as a nurse", "Works as a nurse"),  # the user's own words
    ("I'm not joking, I work at Google", "Works at Google"),
    ("I love joking around with my kids", "Loves joking around with their kids"),
])
def test_the_users_own_words_around_those_cues_are_still_facts(text, content):
    assert [f.content for f in extract(text).new_facts] == [content]


@pytest.mark.parametrize("text, content, section", [
    ("I'm vegetarian", "Is vegetarian", "personalContext"),
    ("I am allergic to peanuts", "Is allergic to peanuts", "personalContext"),
    ("I'm allergic to peanuts", "Is allergic to peanuts", "personalContext"),
    ("I have a severe peanut allergy", "Has a severe peanut allergy", "personalContext"),
    ("I'm married to Joao", "Is married to Joao", "personalContext"),
    ("I just joined Tidepool as a staff engineer", "Joined Tidepool as a staff engineer", "workContext"),
    ("I now work at Tidepool", "Works at Tidepool", "workContext"),
    ("I'm currently working at Google as an SRE", "Works at Google as an SRE", "workContext"),
    ("Actually I moved to Lisbon last month", "Moved to Lisbon last month", "personalContext"),
])
def test_statements_about_oneself_a_user_expects_to_be_learned(text, content, section):
    result = extract(text)
    assert [(f.content, f.category) for f in result.new_facts] == [(content, "identity")]
    assert section in result.user


@pytest.mark.parametrize("text", [
    "Am I allergic to peanuts?",
    "If I'm vegetarian, what should I cook?",
    "Suppose I moved to Lisbon",
    "I joined a book club",  # joined, but no job
    "I'm not vegetarian",
])
def test_those_statements_asked_or_supposed_are_not_facts(text):
    assert extract(text).new_facts == []


def test_a_move_tells_the_profile_where_the_user_lives_now():
    profile = Profile()
    profile.user.personal_context.summary = "Lives in Porto"
    result = extract("Actually I moved to Lisbon last month", profile=profile)
    assert result.user["personalContext"].summary == "Lives in Lisbon"


@pytest.mark.parametrize("text, contents", [
    ("I live in Porto and I work as a backend engineer at Finlytics.",
     ["Lives in Porto", "Works as a backend engineer at Finlytics"]),
    ("I like tea but I hate coffee", ["Likes tea", "Hates coffee"]),
    ("My wife and I love hiking", ["Loves hiking"]),  # one subject of two people: one clause
])
def test_each_first_person_clause_gives_its_own_signal(text, contents):
    assert [f.content for f in extract(text).new_facts] == contents


CHANGED_VALUES = [
    ("I prefer dark mode in every editor", "I prefer light mode in every editor"),
    ("I prefer 2 spaces for indentation", "I prefer 4 spaces for indentation"),
    ("I work as a backend engineer at Finlytics", "I work as a backend engineer at Tidepool"),
    ("I prefer Python for data work", "I prefer SQL for data work"),
]


def _told(said: str) -> str:
    return said.replace("I prefer", "Prefers").replace("I work", "Works")


@pytest.mark.parametrize("old, new", CHANGED_VALUES)
def test_a_value_changed_within_one_batch_is_kept_in_order_not_merged(old, new):
    result = extract(old, new)
    assert [(f.content, f.sources) for f in result.new_facts] == [(_told(old), ["ep0"]), (_told(new), ["ep1"])]


@pytest.mark.parametrize("old, new", CHANGED_VALUES)
def test_the_later_value_wins_within_one_learning_batch_as_across_batches(mem, old, new):
    day1 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    mem.add([{"role": "user", "content": old, "at": day1.isoformat()},
             {"role": "user", "content": new, "at": (day1 + timedelta(days=1)).isoformat()}], user="ana")
    mem.flush()
    (live,) = mem.facts(user="ana")
    (archived,) = mem.facts(user="ana", status="archived")  # the older value, kept as history
    assert (live.content, archived.content, archived.superseded_by) == (_told(new), _told(old), live.id)


def test_a_value_said_again_after_a_change_wins_again(mem):
    day1 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    mem.add([{"role": "user", "content": f"I prefer {mode} mode in every editor",
              "at": (day1 + timedelta(days=i)).isoformat()} for i, mode in enumerate(["dark", "light", "dark"])],
            user="ana")
    mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Prefers dark mode in every editor"]


# ---------------------------------------------------------------- summarize

def test_summary_keeps_the_speaker_and_stays_short():
    messages = [
        Message(role="user", speaker="Caroline", content="Hey Mel! Good to see you! How have you been?"),
        Message(role="user", speaker="Melanie", content="Hey Caroline! I'm swamped with the kids & work."),
        Message(role="user", speaker="Caroline",
                content="I went to a LGBTQ support group yesterday and it was so powerful."),
    ]
    result = engine.summarize(SummarizeRequest(messages=messages))
    assert result.summary == "Caroline: went to a LGBTQ support group yesterday and it was so powerful"
    assert len(result.overview.split()) <= 60
    assert "LGBTQ support group" in result.overview
    assert "Good to see you" not in result.overview
    assert "lgbtq support group" in result.tags and 2 <= len(result.tags) <= 4
    assert not set(result.tags) & (STOPWORDS | GENERIC_WORDS)
    assert result.scene == "personal"


def test_summary_of_a_long_turn_is_one_short_line():
    text = ("I finally finished the quarterly report for the finance team, and then I spent the whole "
            "afternoon fixing the broken deployment pipeline for the payments service in Kubernetes. ") * 3
    result = engine.summarize(SummarizeRequest(messages=[user(text)]))
    assert result.summary.startswith("User: ")
    assert len(result.summary.split()) <= 26
    assert len(result.overview.split()) <= 62


@pytest.mark.parametrize("said, told", [
    ("I drank tea with the team today", "User: drank tea with the team today"),
    ("I swam across the lake on Sunday", "User: swam across the lake on Sunday"),
    ("I caught a cold after the trip", "User: caught a cold after the trip"),
    ("I sold my old bike to a neighbour", "User: sold their old bike to a neighbour"),
    ("I prefer tea over coffee", "User: prefers tea over coffee"),
    ("I watch a film every Friday", "User: watches a film every Friday"),
])
def test_a_summary_tells_a_past_tense_as_it_was_said_and_a_present_one_in_the_third_person(said, told):
    assert engine.summarize(SummarizeRequest(messages=[user(said)])).summary == told


@pytest.mark.parametrize("said, told", [
    ("I no longer eat meat", "No longer eats meat"),
    ("I cannot eat gluten", "Cannot eat gluten"),
    ("I recently moved to Lisbon", "Recently moved to Lisbon"),
    ("I only drink decaf", "Only drinks decaf"),
    ("I just joined Tidepool", "Just joined Tidepool"),
    ("I still use vim", "Still uses vim"),
    ("I can't stand jazz", "Can't stand jazz"),
    ("I won't fly", "Won't fly"),
    ("I don't eat pork", "Doesn't eat pork"),
    ("I kind of like jazz", "Kind of likes jazz"),
    ("I fly a lot", "Flies a lot"),
])
def test_the_third_person_keeps_adverbs_and_modals_and_conjugates_the_verb_after_them(said, told):
    from reverie.engines.heuristic.person import third_clause

    assert third_clause(said) == told
    summary = engine.summarize(SummarizeRequest(messages=[user(said)])).summary
    assert summary == f"User: {told[:1].lower()}{told[1:]}"


def test_tidy_keeps_the_adverb_of_a_filler_wrapped_fact():
    plan = engine.tidy([FactRef(id="a", content="The user said that they only drink decaf")])
    assert [(a.op, a.content) for a in plan.actions] == [("rewrite", "Only drinks decaf")]


def test_chinese_summary():
    messages = [user("我上周去了北京出差，见了客户，顺便爬了长城。"),
                Message(role="assistant", content="听起来很充实！")]
    result = engine.summarize(SummarizeRequest(messages=messages))
    assert result.summary == "用户：我上周去了北京出差，见了客户，顺便爬了长城"
    assert len(result.summary) <= 64
    assert {"长城", "客户"} <= set(result.tags)
    assert not set(result.tags) & (STOPWORDS | GENERIC_WORDS)


def test_summarize_empty_conversation():
    assert engine.summarize(SummarizeRequest(messages=[])).summary == ""


# ---------------------------------------------------------------- distill

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _sixty_inputs() -> tuple[list[FactRef], list[NoteRef]]:
    topics = ["pottery", "camping", "jazz", "chess", "sushi", "kayaking", "poetry", "gardening", "origami",
              "cycling", "baking", "astronomy", "birdwatching", "karaoke", "surfing"]
    facts = [FactRef(id=f"f{i}", content=f"Loves {t} on weekends", uses=i % 4, confidence=0.8,
                     updated_at=T0 + timedelta(days=i)) for i, t in enumerate(topics)]
    facts += [FactRef(id=f"d{i}", content=f"Loves {t} on the weekends", uses=0, confidence=0.7,
                      updated_at=T0) for i, t in enumerate(topics[:10])]
    facts += [
        FactRef(id="w1", content="Works at Google", uses=3, updated_at=T0),
        FactRef(id="w2", content="Works at Stripe", uses=0, updated_at=T0 + timedelta(days=40)),
        FactRef(id="e1", content="Prefers emacs for editing", uses=2, updated_at=T0),
        FactRef(id="t1", content="The server is on port 3000 right now", updated_at=T0),
        FactRef(id="t2", content="---", updated_at=T0),
        FactRef(id="t3", content="服务器现在在 3000 端口", updated_at=T0),
    ]
    facts += [FactRef(id=f"x{i}", content=f"Uses tool number {i} for project {i * 7}", updated_at=T0)
              for i in range(9)]
    notes = [NoteRef(id="n1", date="2024-02-15", content="No, actually I use vim, not emacs."),
             NoteRef(id="n2", date="2024-02-15", content="Caroline: went to a support group"),
             NoteRef(id="n3", date="2024-02-16", content="We decided to use Postgres for the event store."),
             NoteRef(id="n4", date="2024-02-17", content="User prefers tabs over spaces"),
             NoteRef(id="n5", date="2024-02-17", content="先给结论，不要长铺垫"),
             NoteRef(id="n6", date="2024-02-18", content="Lesson learned: run migrations before deploying")]
    notes += [NoteRef(id=f"m{i}", date="2024-02-19", content=f"Talked about the weather, round {i}")
              for i in range(14)]
    return facts, notes


def test_distill_sixty_inputs_respects_the_limit_and_never_fabricates():
    facts, notes = _sixty_inputs()
    assert len(facts) + len(notes) == 60
    texts = {f.id: f.content for f in facts} | {n.id: n.content for n in notes}
    plan = engine.distill(DistillRequest(facts=facts, notes=notes, max_entries=12))
    kept = [e for e in plan.entries if e.action != "remove"]
    assert 0 < len(kept) <= 12
    for entry in plan.entries:
        assert entry.sources and set(entry.sources) <= set(texts)
        allowed = frozenset().union(*(token_set(texts[s]) for s in entry.sources))
        assert token_set(entry.content) <= allowed, entry
    removed = {e.sources[0]: e.reason for e in plan.entries if e.action == "remove"}
    assert removed["w1"] == "superseded by w2"
    assert removed["e1"] == "superseded by n1"
    assert {"t1", "t2", "t3"} <= set(removed)
    assert not any(e.content == "Works at Google" for e in kept)


def test_distill_merges_near_duplicates_into_the_most_used_wording():
    facts = [FactRef(id="a", content="Prefers dark mode in editors", uses=1, confidence=0.8),
             FactRef(id="b", content="Prefers dark mode in the editor", uses=5, confidence=0.9),
             FactRef(id="c", content="prefers dark mode in the editor", uses=0),
             FactRef(id="d", content="Likes Python")]
    plan = engine.distill(DistillRequest(facts=facts, notes=[]))
    merged = [e for e in plan.entries if e.action == "merge"]
    assert [(e.content, e.sources) for e in merged] == [("Prefers dark mode in the editor", ["b", "a", "c"])]
    assert [(e.action, e.content) for e in plan.entries if e.sources == ["d"]] == [("keep", "Likes Python")]


def test_distill_adds_durable_lines_from_notes_only():
    notes = [NoteRef(id="n1", date="2024-02-16", content="We decided to use Postgres for the event store."),
             NoteRef(id="n2", date="2024-02-16", content="Chatted about the weather."),
             NoteRef(id="n3", date="2024-02-17", content="先给结论，不要长铺垫"),
             NoteRef(id="n4", date="2024-02-15", content="User: prefers tabs over spaces"),
             NoteRef(id="n5", date="2024-02-14", content="用户：我喜欢周末去爬山")]
    plan = engine.distill(DistillRequest(facts=[], notes=notes))
    assert [(e.action, e.content, e.sources) for e in plan.entries] == [  # equal confidence: newer first
        ("add", "先给结论，不要长铺垫", ["n3"]),
        ("add", "Decided to use Postgres for the event store", ["n1"]),
        ("add", "Prefers tabs over spaces", ["n4"]),
        ("add", "喜欢周末去爬山", ["n5"]),
    ]
    assert engine.distill(DistillRequest(facts=[], notes=[])).entries == []


def test_distill_newer_wins_on_a_conflict():
    facts = [FactRef(id="old", content="Prefers tabs for indentation", uses=9, updated_at=T0),
             FactRef(id="new", content="Prefers spaces for indentation", uses=0, updated_at=T0 + timedelta(days=1))]
    plan = engine.distill(DistillRequest(facts=facts, notes=[]))
    assert [(e.action, e.sources, e.reason) for e in plan.entries] == [
        ("keep", ["new"], "kept"), ("remove", ["old"], "superseded by new")]


def test_distill_keeps_distinct_things_that_share_a_qualifier_apart():
    topics = ["chess", "jazz", "bowling", "pottery", "camping", "sushi", "kayaking", "poetry", "gardening", "origami",
              "cycling", "baking", "astronomy", "birdwatching", "karaoke", "surfing", "tennis", "knitting", "yoga",
              "salsa", "hiking", "climbing", "sailing", "fishing", "painting", "sketching", "skating", "rowing",
              "archery", "fencing", "juggling", "improv", "podcasts", "crosswords", "sudoku", "volunteering",
              "gaming", "skiing", "snorkeling", "calligraphy"]
    facts = [FactRef(id=f"f{i}", content=f"Loves {t} on weekends", updated_at=T0 + timedelta(days=i))
             for i, t in enumerate(topics)]
    facts.append(FactRef(id="again", content="Loves chess on the weekends", updated_at=T0))
    plan = engine.distill(DistillRequest(facts=facts, notes=[], max_entries=100))
    kept = [e for e in plan.entries if e.action != "remove"]
    assert len(kept) == 40
    assert [e.sources for e in kept if e.action == "merge"] == [["f0", "again"]]  # the same thing, said twice


@pytest.mark.parametrize("old, new", [
    ("Prefers tabs over spaces in Go code", "Prefers spaces over tabs in Go code"),
    ("Prefers tabs over spaces", "Prefers spaces over tabs, gofmt handles it anyway"),
    ("Works as a backend engineer at Finlytics", "Works as a staff engineer at Tidepool"),
])
def test_distill_lets_the_newer_value_win_over_a_more_used_older_one(old, new):
    facts = [FactRef(id="old", content=old, uses=3, updated_at=T0),
             FactRef(id="new", content=new, uses=0, updated_at=T0 + timedelta(days=1))]
    plan = engine.distill(DistillRequest(facts=facts, notes=[]))
    assert [(e.action, e.content, e.sources, e.reason) for e in plan.entries] == [
        ("keep", new, ["new"], "kept"), ("remove", old, ["old"], "superseded by new")]


def test_a_dream_reports_a_newer_value_from_the_notes_as_a_replacement(mem):
    from reverie.models import Note

    day1 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    mem.add([{"role": "user", "content": "I prefer tabs over spaces in Go code", "at": day1.isoformat()}], user="ana")
    mem.flush()
    (old,) = mem.facts(user="ana")
    for _ in range(3):
        mem.reinforce(old.id, user="ana")
    mem.update_fact(old.id, user="ana", status="consolidated")
    mem.store.put_note(Note(user="ana", date="2024-03-05", content="User: prefers spaces over tabs in Go code",
                            created_at=day1 + timedelta(days=4)))
    run = mem.dream(user="ana", days=10, now=day1 + timedelta(days=5))
    assert run.status == "done", run.error
    assert run.report["merged"] == []
    assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
        ("Prefers spaces over tabs in Go code", ["Prefers tabs over spaces in Go code"])]
    assert mem.fact(old.id).status == "archived"
    assert "spaces over tabs" in mem.memory_md(user="ana") and "tabs over spaces" not in mem.memory_md(user="ana")


# ---------------------------------------------------------------- tidy

def test_tidy_removes_exact_duplicates_keeping_the_most_used():
    facts = [FactRef(id="a", content="Prefers tabs", uses=1), FactRef(id="b", content="prefers tabs.", uses=4),
             FactRef(id="c", content="Likes jazz")]
    plan = engine.tidy(facts)
    assert [(a.op, a.fact_id, a.reason) for a in plan.actions] == [("remove", "a", "exact duplicate of b")]


def test_tidy_strips_filler_and_keeps_every_content_word():
    facts = [FactRef(id="a", content="The user said that they prefer short commit messages"),
             FactRef(id="b", content="用户说他喜欢Python"),
             FactRef(id="c", content="Never  force-push to main", category="constraint"),
             FactRef(id="d", content="User research is a weekly ritual")]
    plan = engine.tidy(facts)
    rewrites = {a.fact_id: a.content for a in plan.actions if a.op == "rewrite"}
    assert rewrites == {"a": "Prefers short commit messages", "b": "喜欢Python", "c": "Never force-push to main"}
    assert not [a for a in plan.actions if a.op == "remove"]


def test_tidy_keeps_constraints_and_unclear_lines():
    facts = [FactRef(id="a", content="Never deploy on Fridays", category="constraint"),
             FactRef(id="b", content="Deploys happen on Fridays sometimes"),
             FactRef(id="c", content="He is their brother and lives in Oslo"),
             FactRef(id="d", content="我们决定用Postgres")]
    assert engine.tidy(facts).actions == []


# ---------------------------------------------------------------- govern tags

def test_govern_tags():
    decisions = engine.govern_tags(GovernRequest(
        candidates=[TagInfo(name=n) for n in ["Code-Styles", "python typing", "thing", "时候", "rust", "代码审查",
                                              "API", "api"]],
        existing=[TagInfo(name=n, status="active") for n in ["code style", "python", "代码", "old"]]
        + [TagInfo(name="rusty", status="deprecated")],
    ))
    relations = {(r.source, r.target, r.level) for r in decisions.relations}
    assert relations == {("Code-Styles", "code style", "synonym"), ("python typing", "python", "related"),
                         ("代码审查", "代码", "related"), ("api", "API", "synonym")}
    assert decisions.activate == ["rust", "API"]
    assert decisions.deprecate == ["thing", "时候"]


def test_generic_words_can_be_extended():
    request = GovernRequest(candidates=[TagInfo(name="misc")], existing=[])
    assert engine.govern_tags(request).activate == ["misc"]
    GENERIC_WORDS.add("misc")
    try:
        assert engine.govern_tags(request).deprecate == ["misc"]
    finally:
        GENERIC_WORDS.discard("misc")


# ---------------------------------------------------------------- determinism

def test_every_step_is_deterministic():
    facts, notes = _sixty_inputs()
    messages = [user("先给结论，不要长铺垫。I prefer tabs, and I'm a nurse at St. Mary's."),
                Message(role="assistant", content="Got it.")]
    runs = []
    for _ in range(2):
        fresh = HeuristicEngine()
        runs.append([
            fresh.perceive(PerceiveRequest(message="What did Caroline do last week?", now=NOW,
                                           known_tags=["caroline"])).model_dump(),
            fresh.extract(ExtractRequest(messages=messages, episode_ids=["a", "b"])).model_dump(),
            fresh.summarize(SummarizeRequest(messages=messages)).model_dump(),
            fresh.distill(DistillRequest(facts=facts, notes=notes)).model_dump(),
            fresh.tidy(facts).model_dump(),
            fresh.govern_tags(GovernRequest(candidates=[TagInfo(name="Tabs")],
                                            existing=[TagInfo(name="tab", status="active")])).model_dump(),
        ])
    assert runs[0] == runs[1]
