"""Dietary restrictions and exclusives the heuristic engine learns: "I cannot eat gluten",
"I only drink decaf", "I avoid caffeine"; and what it leaves alone: eating at a time, a place
or an amount ("I can't eat right now"), questions, made-up, reported and joking lines."""

from __future__ import annotations

import pytest

from reverie.claims import fact_relation
from reverie.engines.base import ExtractRequest, FactRef
from reverie.engines.heuristic import HeuristicEngine
from reverie.models import Message, Profile

engine = HeuristicEngine()


def extract(text: str, facts: list[FactRef] | None = None):
    return engine.extract(ExtractRequest(messages=[Message(role="user", content=text)], episode_ids=["ep0"],
                                         profile=Profile(), facts=facts or []))


def learned(text: str) -> list[str]:
    return [f.content for f in extract(text).new_facts]


@pytest.mark.parametrize("text, content", [
    ("I cannot eat gluten", "Cannot eat gluten"),
    ("I can't eat gluten", "Can't eat gluten"),
    ("I can't have dairy", "Can't have dairy"),
    ("I don't eat pork", "Doesn't eat pork"),
    ("I do not eat pork or shellfish", "Does not eat pork or shellfish"),
    ("I only drink decaf", "Only drinks decaf"),
    ("I only eat halal food", "Only eats halal food"),
    ("I eat only kosher food", "Eats only kosher food"),
    ("I drink nothing but water", "Drinks nothing but water"),
    ("I avoid caffeine", "Avoids caffeine"),
    ("I try to avoid sugar", "Tries to avoid sugar"),
    ("I stay away from dairy products", "Stays away from dairy products"),
    ("I can't handle spicy food", "Can't handle spicy food"),
    ("I don't drink coffee after 3pm", "Doesn't drink coffee after 3pm"),
    ("I can't eat gluten anymore", "Can't eat gluten anymore"),
    ("Sadly, I can't eat gluten", "Can't eat gluten"),
    ("Unfortunately I really can't eat gluten", "Can't eat gluten"),
    ("I'm intolerant to lactose", "Is intolerant to lactose"),
    ("I'm dairy intolerant", "Is dairy intolerant"),
    ("I have a gluten intolerance", "Has a gluten intolerance"),
    ("I have celiac disease", "Has celiac disease"),
])
def test_a_dietary_restriction_or_exclusive_is_learned_in_the_third_person_for_the_profile(text, content):
    result = extract(text)
    assert [(f.content, f.category) for f in result.new_facts] == [(content, "identity")]
    assert result.user["personalContext"].summary == content


# each line that says no restriction, beside the same kind of line that says one
@pytest.mark.parametrize("text, restriction, content", [
    ("I can't eat right now, I'm in a meeting", "I can't eat gluten", "Can't eat gluten"),
    ("I can't eat gluten right now", "I can't eat gluten", "Can't eat gluten"),
    ("I cannot eat another bite", "I cannot eat meat", "Cannot eat meat"),
    ("I can't eat anything today", "I can't eat anything with gluten", "Can't eat anything with gluten"),
    ("I can't eat more", "I can't eat nuts", "Can't eat nuts"),
    ("I can't eat it", "I can't eat eggs", "Can't eat eggs"),
    ("I can't eat my lunch", "I can't eat shellfish", "Can't eat shellfish"),
    ("I only drink on weekends", "I only drink decaf", "Only drinks decaf"),  # when, not what
    ("I only eat once a day", "I only eat halal food", "Only eats halal food"),  # how often, not what
    ("I only eat at home", "I only eat organic food", "Only eats organic food"),  # where, not what
    ("I can't drink and drive", "I can't drink alcohol", "Can't drink alcohol"),
    ("I don't drink enough water", "I don't drink soda", "Doesn't drink soda"),
    ("I don't eat out much", "I don't eat red meat", "Doesn't eat red meat"),
    ("I don't eat fast", "I don't eat fast food", "Doesn't eat fast food"),
    ("I can't eat solid food for two weeks", "I can't eat solid food", "Can't eat solid food"),
    ("I cannot eat until the surgery is over", "I cannot eat gluten", "Cannot eat gluten"),
    ("I can't have coffee this week", "I can't have coffee", "Can't have coffee"),
    ("I can't have another coffee", "I can't have caffeinated coffee", "Can't have caffeinated coffee"),
    ("I can't have kids", "I can't have dairy", "Can't have dairy"),  # no food
    ("I avoid coffee shops on Mondays", "I avoid coffee on Mondays", "Avoids coffee on Mondays"),
    ("I avoid the highway at rush hour", "I avoid caffeine", "Avoids caffeine"),
    ("I don't avoid caffeine", "I avoid caffeine", "Avoids caffeine"),
    ("The one thing I can't eat is gluten", "I can't eat gluten", "Can't eat gluten"),  # no clause of its own
    ("My son can't eat gluten", "My son and I can't eat gluten", "Can't eat gluten"),  # someone else
])
def test_eating_at_a_time_a_place_or_an_amount_or_someone_elses_diet_is_no_restriction(text, restriction, content):
    assert extract(text).new_facts == []
    assert learned(restriction) == [content]


@pytest.mark.parametrize("text, said", [
    ("Can't I eat gluten?", "I can't eat gluten"),
    ("Is it true that I only drink decaf?", "I only drink decaf"),
    ("If I can't eat gluten, what should I bake?", "I can't eat gluten"),
    ("Suppose I can't eat gluten", "I can't eat gluten"),
    ("Let's say I only drink decaf", "I only drink decaf"),
    ("Pretend I avoid caffeine", "I avoid caffeine"),
    ("My doctor says I can't eat gluten", "I can't eat gluten"),
    ("My sister said I only drink decaf", "I only drink decaf"),
    ("She thinks I can't have dairy", "I can't have dairy"),
    ("I only drink decaf, just kidding", "I only drink decaf"),
    ("I don't eat pork lol jk", "I don't eat pork"),
])
def test_a_restriction_asked_supposed_reported_or_joked_is_not_learned(text, said):
    assert extract(text).new_facts == []
    assert len(learned(said)) == 1  # said as a fact, it is learned


@pytest.mark.parametrize("said, old, content", [
    ("I don't eat pork", "Eats pork on Sundays", "Doesn't eat pork"),
    ("I can't eat gluten anymore", "Eats gluten", "Can't eat gluten anymore"),
    ("I avoid caffeine", "Drinks coffee with caffeine", "Avoids caffeine"),
])
def test_a_restriction_takes_back_the_older_fact_that_says_the_opposite(said, old, content):
    result = extract(said, facts=[FactRef(id="old", content=old)])
    assert [f.content for f in result.new_facts] == [content]
    assert [r.id for r in result.facts_to_remove] == ["old"] and result.facts_to_reinforce == []


@pytest.mark.parametrize("said, old, content", [
    ("I don't eat pork", "Doesn't eat beef", "Doesn't eat pork"),
    ("I avoid caffeine", "Avoids sugar", "Avoids caffeine"),
    ("I can't eat gluten", "Eats gluten-free bread", "Can't eat gluten"),
    # decaf for coffee with caffeine takes knowing what decaf is, and "only" what it is said of
    ("I only drink decaf", "Drinks coffee with caffeine", "Only drinks decaf"),
])
def test_a_restriction_leaves_a_fact_about_another_food_alone(said, old, content):
    result = extract(said, facts=[FactRef(id="old", content=old)])
    assert [f.content for f in result.new_facts] == [content]
    assert (result.facts_to_remove, result.facts_to_reinforce) == ([], [])


def test_cannot_is_a_negation_as_cant_is_and_so_is_a_free_suffix():
    assert fact_relation("Can't eat gluten", "Cannot eat gluten", 0.6) == "duplicate"
    assert fact_relation("Can eat gluten again", "Cannot eat gluten", 0.6) == "conflict"
    assert fact_relation("Can't eat gluten", "Eats gluten-free bread", 0.6) is None  # without gluten, too
    # said again in other words, the restriction is the stored fact reinforced, not taken back
    result = extract("I can't eat gluten", facts=[FactRef(id="old", content="Cannot eat gluten")])
    assert (result.new_facts, result.facts_to_remove, result.facts_to_reinforce) == ([], [], ["old"])


# each pair of drinks preferred at one time or place, beside a pair that stays two facts
@pytest.mark.parametrize("new, old, other_new, other_old", [
    ("Prefers coffee in the morning", "Prefers tea in the morning",
     "Prefers running in the morning", "Prefers tea in the morning"),  # not a drink
    ("Prefers green tea in the morning", "Prefers coffee in the morning",
     "Prefers coffee in the morning", "Prefers tea in the evening"),  # another time
    ("Prefers espresso at work", "Prefers matcha at work",
     "Prefers jeans at work", "Prefers tea at work"),  # not a drink
    ("Prefers tea in the morning", "Prefers coffee in the morning",
     "Likes tea in the morning", "Likes coffee in the morning"),  # liking both is no clash
])
def test_two_drinks_preferred_at_the_same_time_are_one_slot(new, old, other_new, other_old):
    assert fact_relation(new, old, 0.6) == "conflict"
    assert fact_relation(other_new, other_old, 0.6) is None


def test_restrictions_learned_through_the_public_api_are_recalled(home):
    from reverie import Memory

    with Memory(home, background=False) as mem:
        for said in ("I cannot eat gluten", "I only drink decaf", "I avoid caffeine", "I can't have dairy",
                     "I'm lactose intolerant", "I went hiking with Ana last weekend",
                     "I can't eat right now, I'm in a meeting", "I cannot eat another bite"):
            mem.add([{"role": "user", "content": said}], user="ana")
        mem.flush()
        assert sorted(f.content for f in mem.facts(user="ana")) == [
            "Avoids caffeine", "Can't have dairy", "Cannot eat gluten", "Is lactose intolerant", "Only drinks decaf"]
        eat = mem.recall("what can't I eat?", user="ana").context
        assert "Cannot eat gluten" in eat and "Can't have dairy" in eat
        assert "Only drinks decaf" in mem.recall("what do I drink?", user="ana").context


def test_a_newer_drink_preferred_in_the_morning_archives_the_older(home):
    from reverie import Memory

    with Memory(home, background=False) as mem:
        mem.add([{"role": "user", "content": "I prefer tea in the morning"}], user="ana")
        mem.flush()
        mem.add([{"role": "user", "content": "I prefer coffee in the morning"}], user="ana")
        mem.flush()
        assert [f.content for f in mem.facts(user="ana")] == ["Prefers coffee in the morning"]
        assert [f.content for f in mem.facts(user="ana", status="archived")] == ["Prefers tea in the morning"]
