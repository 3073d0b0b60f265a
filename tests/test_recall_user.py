"""Recall as an agent's developer sees it: for each new message, the block holds what the
agent needs (a diet before cooking, a seat before booking), and nothing the user took back
ahead of what they say now."""

from __future__ import annotations

from datetime import datetime, timezone

from reverie import Memory

ASK = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def _say(mem: Memory, text: str, day: int, *, user: str = "maya", reply: str = "Noted.") -> None:
    mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": reply}], user=user,
            thread="chat", at=datetime(2026, 11, day, 10, 0, tzinfo=timezone.utc))


def test_a_rule_learned_from_the_talk_is_in_the_block_of_an_unrelated_message(bmem):
    mem = bmem
    # said in a conversation (learned, not yet confirmed by a dream or a use), beside a
    # preference the user stated with remember(): "what should I cook tonight?" names no meat,
    # yet the agent must not suggest any, even in a 200-token block
    _say(mem, "I'm vegetarian, so please never suggest meat dishes.", 3)
    _say(mem, "Can you help me write a SQL query that joins orders and customers?", 5)
    mem.flush()
    mem.remember("Home airport is SeaTac (SEA), the one in Seattle", user="maya", category="preference")
    rules = [f for f in mem.facts(user="maya") if f.category == "constraint"]
    assert rules and all(f.status == "pending" for f in rules)
    for budget in (200, 500):
        block = mem.recall("what should I cook tonight?", user="maya", budget=budget, at=ASK, track=False).context
        assert rules[0].content in block, (budget, block)


def test_someone_elses_liking_in_a_group_talk_is_no_standing_fact_of_the_user(mem):
    mem.add([{"speaker": "Jon", "content": "I love camping in the mountains with my family."},
             {"speaker": "Gina", "content": "I really enjoy pottery classes on weekends."}],
            user="maya", thread="group", at=datetime(2026, 11, 3, 10, 0, tzinfo=timezone.utc))
    mem.flush()
    named = [f for f in mem.facts(user="maya") if f.category == "preference"]
    assert named and all(f.content.startswith(("Jon: ", "Gina: ")) for f in named)
    result = mem.recall("what should I cook tonight?", user="maya", budget=500, at=ASK, track=False)
    assert not any(i.depth == "background" for i in result.items), result.context


def test_a_seat_taken_back_gives_way_to_the_one_preferred_now(mem):
    _say(mem, "I prefer window seats on flights.", 5)
    mem.flush()
    _say(mem, "Actually I prefer aisle seats now.", 23)
    mem.flush()
    old = [f for f in mem.facts(user="maya", status="archived") if "window" in f.content]
    assert old, "the window seat was taken back"
    result = mem.recall("book me a flight", user="maya", budget=500, at=ASK, explain=True, track=False)
    texts = [i.text for i in result.items]
    aisle = next(n for n, t in enumerate(texts) if "aisle" in t)
    window = [n for n, t in enumerate(texts) if "window" in t]
    assert all(aisle < n for n in window), texts
    for item in result.items:
        if "window" in item.text:  # still shown, as history, and said to be taken back
            assert item.parts.get("superseded"), item.parts
    now = next(i for i in result.items if "aisle" in i.text)
    assert now.parts.get("supersedes_match"), now.parts


def test_asking_to_be_reminded_or_helped_does_not_find_what_else_asked_for_help(mem):
    # "remind me", "帮我" (help me) speak to the assistant: they found "I'll remind you" and
    # "帮我写一个Go的例子" (help me write a Go example), ranked above the answer
    _say(mem, "Reminder to self: my manager wants the roadmap by Friday.", 17, reply="I'll remind you.")
    _say(mem, "My daughter is allergic to shellfish.", 4)
    _say(mem, "帮我写一个Go的HTTP服务器的例子。", 16, reply="好的，package main ...")
    mem.flush()
    block = mem.recall("remind me what my daughter is allergic to", user="maya", budget=500, at=ASK,
                       track=False).context
    assert "shellfish" in block and "remind you" not in block and "roadmap" not in block, block
    block = mem.recall("帮我订周五的机票", user="maya", budget=500, at=ASK, track=False).context
    assert "HTTP" not in block, block
    # a message that is nothing but the request keeps its words
    assert "remind" in mem.recall("remind me", user="maya", budget=500, at=ASK, track=False).context


def test_another_days_tonight_is_no_match_for_tonight(bmem):
    """"What should I cook tonight?" put "I watched The Bear tonight" (said weeks ago) above the
    plan to cook: the question asks about something within the time, so its time words were
    searched as words, and an older message's "tonight" was another night."""
    mem = bmem
    _say(mem, "I watched The Bear tonight, what a great show", 10)
    _say(mem, "Let's cook risotto on Sunday", 14)
    mem.flush()
    at = datetime(2026, 11, 30, 17, 0, tzinfo=timezone.utc)
    items = mem.recall("what should I cook tonight?", user="maya", budget=500, at=at, explain=True, track=False).items
    said = [i for i in items if i.kind == "episode"]
    assert said and "risotto" in said[0].text
    # what it shares with the question is at most a tag, never the words of the time
    assert all(i.parts.get("text", 0.0) == 0.0 for i in said if "The Bear" in i.text)
    # of a time past, the question's time words still find what was said ("what did I watch
    # last night?" asked the next day)
    next_day = datetime(2026, 11, 11, 9, 0, tzinfo=timezone.utc)
    items = mem.recall("what did I watch last night?", user="maya", budget=500, at=next_day, track=False).items
    assert any("The Bear" in i.text for i in items if i.kind == "episode")
