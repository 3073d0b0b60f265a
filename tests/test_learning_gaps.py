"""What the offline engine learns from everyday statements a user expects remembered, through
the Memory API: each message said on its own day, learned, then the facts (live and archived)
and the profile looked at as a user would."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reverie import Memory

_DAY0 = datetime(2026, 3, 1, 10, tzinfo=timezone.utc)


def said(mem: Memory, *messages: str) -> tuple[list[str], list[str], str]:
    """Each message said by ana on a day of its own, then learned: (live facts, archived facts,
    the profile's user sections as one text)."""
    for day, text in enumerate(messages):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Got it."}], user="ana",
                at=_DAY0 + timedelta(days=day))
        mem.flush()
    live = [f.content for f in mem.facts(user="ana")]
    archived = [f.content for f in mem.facts(user="ana", status="archived")]
    profile = mem.profile(user="ana")
    sections = " | ".join(s.summary for name, s in profile.sections().items() if name.startswith("user.") and s.summary)
    return live, archived, sections


# ---------------------------------------------------------------- a time liked or disliked

@pytest.mark.parametrize("text, fact", [
    ("I hate mornings", "Hates mornings"),
    ("I love lazy Sundays", "Loves lazy Sundays"),
    ("I'm a morning person", "Is a morning person"),
])
def test_a_time_of_day_or_week_liked_or_disliked_is_learned(mem, text, fact):
    live, _, _ = said(mem, text)
    assert live == [fact]


# ---------------------------------------------------------------- a new employer by its name

def test_joining_a_company_by_its_name_is_a_new_employer_that_supersedes_the_old(mem):
    live, archived, profile = said(mem, "I work at Globex", "I joined Acme last month")
    assert live == ["Joined Acme in February 2026"]
    assert archived == ["Works at Globex"]
    assert "Works at Acme" in profile and "Globex" not in profile


@pytest.mark.parametrize("text", ["I joined Strava last month", "I joined the Rotary Club", "I joined Acme Book Club"])
def test_joining_a_network_or_a_club_is_no_new_employer(mem, text):
    live, archived, profile = said(mem, "I work at Globex", text)
    assert live == ["Works at Globex"] and not archived
    assert profile == "Works at Globex"


# ---------------------------------------------------------------- an age, one at a time

@pytest.mark.parametrize("first, then", [
    ("I'm 38 years old", "I turned 39"),
    ("I'm 38 years old", "I turned 39 today"),
    ("I'm 38", "I'm 39 now"),
])
def test_an_age_is_learned_and_a_later_one_supersedes_it(mem, first, then):
    live, archived, profile = said(mem, first, then)
    assert live == ["Is 39 years old"]
    assert archived == ["Is 38 years old"]
    assert profile == "Is 39 years old"


@pytest.mark.parametrize("text", ["I'm 38 weeks pregnant", "I'm almost 40", "I'm 40 minutes late"])
def test_a_number_that_is_no_age_is_not_learned_as_one(mem, text):
    live, _, _ = said(mem, text)
    assert not any("years old" in f for f in live)


# ---------------------------------------------------------------- a household's diet

def test_what_we_avoid_eating_is_learned_as_the_users_diet(mem):
    live, _, profile = said(mem, "We avoid red meat")
    assert live == ["Avoids red meat"]
    assert profile == "Avoids red meat"


# ---------------------------------------------------------------- allergies in other languages

@pytest.mark.parametrize("text, fact", [
    ("Soy alérgico a los cacahuetes", "Alérgico a los cacahuetes"),
    ("Tengo alergia al polen", "Alergia al polen"),
    ("Je suis allergique aux arachides", "Allergique aux arachides"),
    ("Ich bin allergisch gegen Erdnüsse", "Allergisch gegen Erdnüsse"),
    ("Ich habe eine Erdnussallergie", "Erdnussallergie"),
])
def test_an_allergy_said_in_spanish_french_or_german_is_learned(mem, text, fact):
    live, _, profile = said(mem, text)
    assert live == [fact]
    assert profile == fact


@pytest.mark.parametrize("text", ["No soy alérgico a los cacahuetes", "Je ne suis pas allergique aux arachides",
                                  "Ich bin nicht allergisch gegen Erdnüsse",
                                  "Si je suis allergique aux arachides, je le saurais"])
def test_no_allergy_or_an_if_in_those_languages_is_not_learned(mem, text):
    live, _, _ = said(mem, text)
    assert live == []


# ---------------------------------------------------------------- a later statement wins

def test_a_preference_said_with_these_days_is_learned_and_supersedes_the_old(mem):
    live, archived, _ = said(mem, "I prefer tea", "These days I prefer coffee")
    assert live == ["Prefers coffee"] and archived == ["Prefers tea"]


@pytest.mark.parametrize("then, fact", [
    ("I switched to emacs", "Switched to emacs"),
    ("I switched from vim to helix", "Switched to helix"),
])
def test_a_tool_switched_to_is_learned_and_archives_the_old_one(mem, then, fact):
    live, archived, _ = said(mem, "I use vim", then)
    assert live == [fact] and archived == ["Uses vim"]


@pytest.mark.parametrize("then", ["I quit my job at Google", "I quit Google last month"])
def test_quitting_an_employer_archives_working_there(mem, then):
    live, archived, profile = said(mem, "I work at Google", then)
    assert live == ["Left Google"] and archived == ["Works at Google"]
    assert "Works at Google" not in profile


def test_leaving_a_city_on_a_trip_takes_no_home_back(mem):
    live, archived, _ = said(mem, "I live in Paris", "I left Paris yesterday")
    assert live == ["Lives in Paris"] and not archived


# ---------------------------------------------------------------- nothing learned wrongly

def test_a_quoted_line_is_not_learned_as_the_users_statement(mem):
    live, _, profile = said(mem, '"I live in Paris" is a line from the movie')
    assert live == [] and profile == ""


def test_a_clause_about_another_thing_after_and_my_stays_out_of_the_fact(mem):
    live, _, profile = said(mem, "I live in Berlin and my email is ana@example.com")
    assert live == ["Lives in Berlin"] and profile == "Lives in Berlin"
    live, _, _ = said(mem, "I live in Berlin and my wife is called Laura")
    assert "Laura is their wife" in live


# ---------------------------------------------------------------- Chinese

def test_an_age_said_in_chinese_is_learned_and_a_later_one_supersedes_it(mem):
    live, archived, profile = said(mem, "我今年38岁", "我39岁了")
    assert live == ["39岁"] and archived == ["38岁"] and profile == "39岁"


@pytest.mark.parametrize("text", ["我儿子今年5岁", "去年我38岁"])
def test_a_childs_age_or_a_past_age_in_chinese_is_not_the_users_age(mem, text):
    live, _, _ = said(mem, text)
    assert live == []


def test_a_new_employer_in_chinese_supersedes_the_old(mem):
    live, archived, profile = said(mem, "我在腾讯工作", "我上个月跳槽到了阿里巴巴")
    assert live == ["在阿里巴巴工作"] and archived == ["在腾讯工作"] and profile == "在阿里巴巴工作"


def test_a_job_change_only_wished_for_in_chinese_changes_nothing(mem):
    live, archived, _ = said(mem, "我在腾讯工作", "我想跳槽到阿里巴巴")
    assert live == ["在腾讯工作"] and not archived


def test_quitting_an_employer_in_chinese_archives_working_there(mem):
    live, archived, profile = said(mem, "我在腾讯工作", "我从腾讯辞职了")
    assert archived == ["在腾讯工作"] and "在腾讯工作" not in profile


@pytest.mark.parametrize("text", ["我朋友说我是个工作狂", "我妈总觉得我是个急性子"])
def test_someone_elses_words_about_the_user_in_chinese_are_not_learned(mem, text):
    live, _, profile = said(mem, text)
    assert live == [] and profile == ""


def test_the_users_own_words_told_to_someone_in_chinese_are_learned(mem):
    live, _, _ = said(mem, "我跟他说我是程序员")
    assert live == ["是程序员"]


def test_an_allergy_in_another_language_stops_at_its_clause(mem):
    live, _, profile = said(mem, "Soy alérgico a los cacahuetes, mi correo es ana@example.com")
    assert live == ["Alérgico a los cacahuetes"] and profile == "Alérgico a los cacahuetes"


# ---------------------------------------------------------------- pets by name

@pytest.mark.parametrize("text, fact", [
    ("I have a golden retriever named Biscuit", "Has a golden retriever named Biscuit"),
    ("We have a cat called Miso and I love her", "Has a cat called Miso"),
])
def test_a_pet_of_any_kind_said_by_name_is_learned(mem, text, fact):
    live, _, _ = said(mem, text)
    assert fact in live


@pytest.mark.parametrize("text", ["My neighbor has a parrot named Kiwi", "If I ever get a dog I'll call it Rex",
                                  "Do I have a cat named Miso?"])
def test_someone_elses_pet_a_hypothetical_or_a_question_is_not_learned(mem, text):
    live, _, _ = said(mem, text)
    assert live == []
