"""One judge of duplicates and contradictions between one-line statements."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from reverie.claims import fact_relation
from tests.edits import dreamed, edit_text


@pytest.mark.parametrize(
    "new, old, expected",
    [
        ("Prefers trash over rm!", "Prefers trash over rm", "duplicate"),
        ("Prefers emacs", "Prefers vim", "conflict"),
        ("I prefer emacs over vim for all editing", "Prefers vim for editing", "conflict"),
        ("Likes coffee", "Does not like coffee", "conflict"),
        ("Lives in Lisbon", "Lives in Berlin", "conflict"),
        ("Prefers light mode in editors", "Prefers dark mode in editors", "conflict"),
        ("喜欢用emacs", "喜欢用vim", "conflict"),
        ("Likes hiking", "Likes painting", None),
        ("Prefers Python for scripting", "Prefers Postgres over MySQL", None),
        ("Prefers tabs in Go code", "Prefers mechanical keyboards", None),
        ("Project alpha uses codename alpha0", "Project bravo uses codename bravo1", None),
    ],
)
def test_fact_relation(new, old, expected):
    assert fact_relation(new, old, 0.7) == expected


# (new, old, verdict): a line that states another value (a number, a unit, a code, a letter,
# a proper name, a month or a day) is never a duplicate; it is a conflict (newest wins) only
# when everything else is the same, and a numbered label (Lesson 1 / Lesson 2) is another item.
DUP, CONFLICT, DISTINCT = "duplicate", "conflict", None
PAIRS = [
    # numbers: the same slot with a new value
    ("Takes 10 mg of melatonin", "Takes 5 mg of melatonin", CONFLICT),
    ("Has 3 kids", "Has 2 kids", CONFLICT),
    ("Has three kids", "Has 2 kids", CONFLICT),
    ("Meeting at 4 pm", "Meeting at 3 pm", CONFLICT),
    ("Lives on floor 3", "Lives on floor 2", CONFLICT),
    ("Lives on the third floor", "Lives on the second floor", CONFLICT),
    ("Birthday is March 30", "Birthday is March 3", CONFLICT),
    ("Uses Python 3.12", "Uses Python 3.11", CONFLICT),
    ("Weighs 72 kg", "Weighs 70 kg", CONFLICT),
    ("Runs 10 km every day", "Runs 5 km every day", CONFLICT),
    ("Budget is $600", "Budget is $500", CONFLICT),
    ("Sleeps 8 hours a night", "Sleeps 7 hours a night", CONFLICT),
    ("Is 35 years old", "Is 34 years old", CONFLICT),
    ("Drinks 3 cups of coffee a day", "Drinks 2 cups of coffee a day", CONFLICT),
    ("Wakes up at 6:30 am", "Wakes up at 7:00 am", CONFLICT),
    ("Runs Node 20 in production", "Runs Node 18 in production", CONFLICT),
    ("Meeting with Emma at 4 pm", "Meeting with Emma at 3 pm", CONFLICT),
    ("Currently takes 10 mg of melatonin", "Takes 5 mg of melatonin", CONFLICT),
    ("Meeting on Tuesday", "Meeting on Monday", CONFLICT),
    # units, codes, letters and names that fill a slot
    ("Takes 5 g of melatonin", "Takes 5 mg of melatonin", CONFLICT),
    ("Sits in row C", "Sits in row B", CONFLICT),
    ("Parking spot is C7", "Parking spot is B12", CONFLICT),
    ("Blood type is B", "Blood type is A", CONFLICT),
    ("Works at Meta", "Works at Google", CONFLICT),
    ("Boss is Olivia", "Boss is Emma", CONFLICT),
    # numbered labels: another item, not a new value
    ("Lesson 2: SQLite basics", "Lesson 1: SQLite basics", DISTINCT),
    ("Lesson 2: Postgres", "Lesson 1: SQLite", DISTINCT),
    ("Ticket 5678 is blocked", "Ticket 1234 is blocked", DISTINCT),  # ids of items a team tracks
    ("Room 102 is booked", "Room 101 is booked", DISTINCT),
    ("Project code P-0002 belongs to team 2", "Project code P-0001 belongs to team 1", DISTINCT),
    ("Flight 2 leaves at 9", "Flight 1 leaves at 9", DISTINCT),
    ("My room is 102", "My room is 101", CONFLICT),  # one room, a new number: no label
    ("PR 34 is merged", "PR 12 is merged", DISTINCT),
    ("Order #5531 shipped", "Order #5530 shipped", DISTINCT),
    ("Issue 12 is fixed", "Issue 13 is fixed", DISTINCT),
    ("Chapter 4 covers indexes", "Chapter 3 covers indexes", DISTINCT),
    ("Step 2: install uv", "Step 1: install uv", DISTINCT),
    ("Part 2: SQLite basics", "Part 1: SQLite basics", DISTINCT),
    ("Week 2: focus on cardio", "Week 1: focus on cardio", DISTINCT),
    ("Day 2 in Rome", "Day 1 in Rome", DISTINCT),
    ("Episode 5 was great", "Episode 4 was great", DISTINCT),
    ("Session 3 covered joins", "Session 2 covered joins", DISTINCT),
    ("Item 4: buy milk", "Item 3: buy milk", DISTINCT),
    ("Q4 revenue target is 5M", "Q3 revenue target is 5M", DISTINCT),
    # another value and another qualifier, subject or object: two facts
    ("Uses Python 3.12 at home", "Uses Python 3.11 at work", DISTINCT),
    ("Uses Python 3.11 at home", "Uses Python 3.11 at work", DISTINCT),
    ("Prefers dark mode in terminals", "Prefers dark mode in editors", DISTINCT),
    ("Olivia likes hiking", "Emma likes hiking", DISTINCT),
    ("Met Olivia at the conference", "Met Emma at the conference", DISTINCT),
    ("Has a dog named Max", "Has a dog named Rex", DISTINCT),
    ("Takes vitamin C daily", "Takes vitamin D daily", DISTINCT),
    ("Ordered SKU-45", "Ordered SKU-44", DISTINCT),
    ("Flight BA117 lands at 9 am", "Flight LH400 lands at 9 am", DISTINCT),
    ("Speaks Chinese", "Speaks English", DISTINCT),
    ("Takes 10 mg of melatonin nightly", "Takes 5 mg of melatonin", DISTINCT),
    ("Has 3 kids and a dog", "Has 2 kids", DISTINCT),
    ("Has 2 kids and 1 dog", "Has 2 kids", DISTINCT),
    # one job and one home at a time: another employer or place, whatever else the lines say
    ("Works as a staff engineer at Tidepool", "Works as a backend engineer at Finlytics", CONFLICT),
    ("Works at Tidepool", "Works as a backend engineer at Finlytics", CONFLICT),
    ("Joined Tidepool as a staff engineer", "Works as a backend engineer at Finlytics", CONFLICT),
    ("Moved to Lisbon last month", "Lives in Porto", CONFLICT),
    ("Works as a staff engineer at Tidepool", "Works at Tidepool", DISTINCT),
    ("Emma works at Google", "Works at Meta", DISTINCT),
    ("Works at Google", "Works at night", DISTINCT),
    # "is a <role> at <org>" is one's job too: another employer replaces it, either wording
    ("Is a product manager at Globex now", "Works as a data engineer at Acme Corp", CONFLICT),
    ("I'm a product manager at Globex", "Works at Acme Corp", CONFLICT),
    ("Is a product manager at Globex", "Is a data engineer at Acme Corp", CONFLICT),
    ("Is a product manager at Globex", "Works as a product manager at Globex", DUP),
    # ... but not where one is a guest, a customer or a speaker
    ("Is a regular at Joe's Bar", "Works as a data engineer at Acme Corp", DISTINCT),
    ("Is a speaker at PyCon", "Works at Acme Corp", DISTINCT),
    ("Is a data engineer at heart", "Works at Acme Corp", DISTINCT),
    ("Is a carpenter at a clinic in Porto", "Is a nurse at a clinic in Lyon", DISTINCT),  # no employer named
    # a value taken back outright ("Mia, not Mila") replaces the line that states it in the same
    # relation; another name alone is another person (one may have two sisters)
    ("My sister is called Mia, not Mila", "Mila is their sister", CONFLICT),
    ("Mia is their sister, not Mila", "Mila is their sister", CONFLICT),
    ("Actually my sister's name is Mia, not Mila", "My sister's name is Mila", CONFLICT),
    ("My sister is not Mila but Mia", "Mila is their sister", CONFLICT),
    ("Not Mila but Mia is my sister", "Mila is their sister", CONFLICT),
    ("Mia is their sister", "Mila is their sister", DISTINCT),
    ("My sister is called Mia", "Mila is their sister", DISTINCT),
    ("My sister is called Mia, not Mila", "Mila lives in Munich", DISTINCT),
    ("My sister is called Mia, not Mila", "My sister Mila lives in Munich", DISTINCT),
    ("Prefers tea over coffee", "Drinks coffee every morning", DISTINCT),
    ("Runs on Sundays, not just Saturdays", "Runs on Saturdays", DISTINCT),
    # a value given up, or a clause after the statement, does not hide another value
    ("Prefers spaces over tabs in Go code, gofmt handles it anyway", "Prefers tabs over spaces in Go code", CONFLICT),
    ("Prefers spaces over tabs, gofmt handles it anyway", "Prefers tabs over spaces", CONFLICT),
    ("Prefers coffee over tea in the morning", "Prefers tea in the morning", CONFLICT),
    ("Prefers SQL for data work", "Prefers Python for data work", CONFLICT),
    # two things that share only where they hold are two facts
    ("Prefers jeans at work", "Prefers tea at work", DISTINCT),
    # a person prefers and uses many things at once: one for another only when they are of a
    # kind or one is given up for the other (one home, one employer at a time)
    ("Prefers tea", "Prefers email", DISTINCT),
    ("Prefers tabs over spaces", "Prefers trash over rm", DISTINCT),
    ("Uses git", "Uses vim", DISTINCT),
    ("Prefers tea", "Prefers tabs", DISTINCT),
    ("Uses emacs", "Uses vim", CONFLICT),
    ("Switched to helix", "Switched to neovim", CONFLICT),
    ("Prefers coffee", "Prefers tea", CONFLICT),
    ("Prefers tea over coffee", "Prefers coffee", CONFLICT),
    ("Prefers light mode", "Prefers dark mode", CONFLICT),
    ("Lives in Lisbon", "Lives in Berlin", CONFLICT),
    # the same fact, said again
    ("Prefers trash over rm!", "Prefers trash over rm", DUP),
    ("PREFERS TABS OVER SPACES", "prefers tabs over spaces", DUP),
    ("Every morning drinks coffee", "Drinks coffee every morning", DUP),
    ("I prefer tea", "Prefers tea", DUP),
    ("takes 5 mg of melatonin", "Takes 5 mg of melatonin.", DUP),
    ("Takes 5 milligrams of melatonin", "Takes 5 mg of melatonin", DUP),
    ("has 2 kids", "Has 2 kids!", DUP),
    ("Has two kids", "Has 2 kids", DUP),
    ("Meeting at 3pm", "Meeting at 3 pm", DUP),
    ("lives in lisbon", "Lives in Lisbon", DUP),
    ("emma's birthday is march 3", "Emma's birthday is March 3", DUP),
    ("uses python 3.11 at work.", "Uses Python 3.11 at work", DUP),
    ("Sits in row B.", "Sits in row B", DUP),
    ("takes vitamin d daily", "Takes vitamin D daily", DUP),
    ("Lesson 1 - SQLite basics", "Lesson 1: SQLite basics", DUP),
    ("Pays 1200 EUR rent", "Pays 1,200 EUR rent", DUP),
    # Chinese: numerals count as numbers, 第N is a label
    ("每天吃10毫克褪黑素", "每天吃5毫克褪黑素", CONFLICT),
    ("每天吃5克褪黑素", "每天吃5毫克褪黑素", CONFLICT),
    ("有三个孩子", "有两个孩子", CONFLICT),
    ("下午4点开会", "下午3点开会", CONFLICT),
    ("住在3楼", "住在2楼", CONFLICT),
    ("生日是三月三十日", "生日是三月三日", CONFLICT),
    ("每周二开会", "每周一开会", CONFLICT),
    ("体重72公斤", "体重70公斤", CONFLICT),
    ("每天喝三杯咖啡", "每天喝两杯咖啡", CONFLICT),
    ("用Python 3.12", "用Python 3.11", CONFLICT),
    ("我女儿叫Olivia", "我女儿叫Emma", CONFLICT),
    ("不喜欢咖啡", "喜欢咖啡", CONFLICT),
    ("第二课", "第一课", DISTINCT),
    ("第二课：SQLite基础", "第一课：SQLite基础", DISTINCT),
    ("第2章讲索引", "第1章讲索引", DISTINCT),
    ("第四步：安装uv", "第三步：安装uv", DISTINCT),
    ("在家用Python 3.12", "在公司用Python 3.11", DISTINCT),
    ("喜欢画画", "喜欢爬山", DISTINCT),
    ("每天吃5毫克褪黑素。", "每天吃5毫克褪黑素", DUP),
    ("有2个孩子", "有两个孩子", DUP),
]


@pytest.mark.parametrize("new, old, expected", PAIRS)
def test_values_decide_between_duplicate_conflict_and_distinct(new, old, expected):
    assert fact_relation(new, old, 0.7) == expected
    assert fact_relation(old, new, 0.7) == expected  # whichever came first


def test_confusion_matrix():
    """Expected verdict (rows) against the judge's (columns); run with -s to see it."""
    labels = [DUP, CONFLICT, DISTINCT]
    names = {DUP: "duplicate", CONFLICT: "conflict", DISTINCT: "distinct"}
    counts = Counter((expected, fact_relation(new, old, 0.7)) for new, old, expected in PAIRS)
    wrong = [(new, old, expected, got) for new, old, expected in PAIRS
             if (got := fact_relation(new, old, 0.7)) != expected]
    width = max(len(n) for n in names.values()) + 2
    lines = [f"\nfact_relation on {len(PAIRS)} pairs (rows: expected, columns: judged)",
             "expected".ljust(width) + "".join(names[c].rjust(width) for c in labels)]
    for row in labels:
        lines.append(names[row].ljust(width) + "".join(str(counts[(row, c)]).rjust(width) for c in labels))
    print("\n".join(lines))
    assert len(PAIRS) >= 60
    assert not wrong, wrong


@pytest.mark.parametrize("a, b, different", [
    ("Loves chess on weekends", "Loves jazz on weekends", True),
    ("Is a fan of Bach", "Is a fan of jazz", True),
    ("Has a dog named Max", "Has a dog named Rex", True),
    ("Lesson 1: SQLite basics", "Lesson 2: SQLite basics", True),
    ("Loves playing chess on weekends", "Loves playing jazz piano on weekends", True),
    ("The user loves chess on weekends", "Loves jazz on weekends", True),
    # one thing in two wordings
    ("Loves pottery on weekends", "Loves pottery on the weekends", False),
    ("Prefers dark mode in editors", "Prefers dark mode in the editor", False),
    ("Prefers dark mode in editors", "Likes dark mode in editors", False),
    ("Uses vim for editing", "Uses vim as their main editor", False),
    ("Loves chess", "Loves chess on weekends", False),
])
def test_different_items_tells_two_things_of_one_kind_from_one_thing_said_twice(a, b, different):
    from reverie.claims import different_items

    assert different_items(a, b) is different
    assert different_items(b, a) is different


def test_learning_a_contrary_preference_archives_the_old_one(mem):
    old = mem.remember("Prefers vim for editing", user="ana", category="preference")
    with mem.turn("I prefer emacs over vim for all editing now", user="ana") as turn:
        turn.complete("Noted.")
    mem.flush()
    assert mem.fact(old.id).status == "archived"
    live = [f.content for f in mem.facts(user="ana")]
    assert any("emacs" in c.lower() for c in live) and not any(c == "Prefers vim for editing" for c in live)


def test_remembering_a_new_number_replaces_the_old_value(mem):
    old = mem.remember("Takes 5 mg of melatonin", user="ana", category="health")
    new = mem.remember("Takes 10 mg of melatonin", user="ana", category="health")
    assert new.id != old.id and new.content == "Takes 10 mg of melatonin"
    assert mem.fact(old.id).status == "archived" and mem.fact(old.id).superseded_by == new.id
    assert [f.content for f in mem.facts(user="ana")] == ["Takes 10 mg of melatonin"]


def test_a_new_job_elsewhere_replaces_the_old_one(mem):
    old = mem.remember("Works as a backend engineer at Finlytics", user="ana", category="identity")
    new = mem.remember("Works as a staff engineer at Tidepool", user="ana", category="identity")
    assert mem.fact(old.id).status == "archived" and mem.fact(old.id).superseded_by == new.id


def test_a_correction_that_names_the_wrong_value_archives_the_fact_that_said_it(mem, home):
    """"My sister is called Mia, not Mila" takes back "Mila is their sister" through remember
    (a correction, whatever the older fact was filed under) and a line added to MEMORY.md;
    another name without "not Mila" is a second sister, and both stay."""
    mem.add([{"role": "user", "content": "My sister's name is Mila."}], user="ana")
    mem.flush()
    (mila,) = mem.facts(user="ana")
    assert mila.content == "Mila is their sister" and mila.category == "context"
    mem.remember("My sister Mia is coming over", user="ana", category="context")
    mem.remember("Mia is their sister", user="ana", category="context")
    assert mem.fact(mila.id).status != "archived"  # two sisters, as far as anyone said
    fixed = mem.remember("My sister is called Mia, not Mila", user="ana", category="correction")
    assert mem.fact(mila.id).status == "archived" and mem.fact(mila.id).superseded_by == fixed.id
    assert "Mila is their sister" not in mem.recall("what's my sister's name?", user="ana", track=False).context

    ben = mem.remember("Ben is their brother", user="ana", category="context")
    path = dreamed(mem, home)
    edit_text(path, "## Context\n\n", "## Context\n\n- My brother is called Tom, not Ben\n")
    report = mem.sync(user="ana")
    assert [(s.fact_id, s.content) for s in report.superseded] == [(ben.id, "Ben is their brother")]


@pytest.mark.parametrize("correction", ["No, my sister is called Mia, not Mila.",
                                        "Actually my sister's name is Mia, not Mila."])
def test_a_correction_said_in_conversation_archives_the_wrong_name(mem, correction):
    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    for days, text in [(0, "My sister's name is Mila."), (5, correction)]:
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}],
                user="ana", thread=f"t{days}", at=t0 + timedelta(days=days))
        mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Mia is their sister, not Mila"]
    assert [f.content for f in mem.facts(user="ana", status="archived")] == ["Mila is their sister"]


def test_saying_one_is_a_role_at_another_company_replaces_the_old_job(mem):
    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    for days, text in [(0, "I work as a data engineer at Acme Corp."),
                       (20, "I switched jobs, I'm a product manager at Globex now.")]:
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}],
                user="ana", thread=f"t{days}", at=t0 + timedelta(days=days))
        mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Is a product manager at Globex now"]
    assert [f.content for f in mem.facts(user="ana", status="archived")] == ["Works as a data engineer at Acme Corp"]
    assert mem.profile(user="ana").user.work_context.summary == "Is a product manager at Globex now"


@pytest.mark.parametrize("line", ["Is a parent at Lincoln Elementary", "Is a season ticket holder at Arsenal",
                                  "Is a donor at the Red Cross", "Is a tutor at Kumon on Saturdays",
                                  "Is an intern at Google this summer", "Is a newbie at Rust"])
def test_being_something_at_a_place_that_is_no_job_leaves_the_job_alone(line):
    assert fact_relation(line, "Works as a data engineer at Acme", 0.6) is None


@pytest.mark.parametrize("new, old, verdict", [
    ("在字节跳动工作", "在腾讯工作", "conflict"),
    ("现在在字节跳动上班", "在腾讯工作", "conflict"),
    ("在家工作", "在腾讯工作", None),  # working from home says no employer
])
def test_a_chinese_job_line_fills_the_job_slot(new, old, verdict):
    assert fact_relation(new, old, 0.6) == verdict and fact_relation(old, new, 0.6) == verdict


def test_numbered_items_are_kept_side_by_side(mem):
    first = mem.remember("Lesson 1: SQLite basics", user="ana")
    second = mem.remember("Lesson 2: SQLite basics", user="ana")
    again = mem.remember("Lesson 1: SQLite basics!", user="ana")
    assert second.id != first.id and again.id == first.id
    assert sorted(f.content for f in mem.facts(user="ana")) == ["Lesson 1: SQLite basics", "Lesson 2: SQLite basics"]


def test_related_pairs_finds_every_pair_the_judge_relates_without_trying_them_all():
    from itertools import combinations

    from reverie.claims import related_pairs, stored_relation

    lines = list(dict.fromkeys(text for pair in PAIRS for text in pair[:2]))
    lines += [f"Melanie: went to the {place} on day {n}" for n, place in enumerate(["lake", "museum", "market"] * 20)]
    every = {(i, j) for i, j in combinations(range(len(lines)), 2) if stored_relation(lines[i], lines[j], 0.9)}
    candidates = related_pairs(lines)
    assert every and every <= set(candidates)
    assert len(candidates) < len(lines) * (len(lines) - 1) // 4  # an index read, not all pairs


@pytest.mark.parametrize("threshold", [0.3, 0.6, 0.9, 1.0])
def test_duplicate_pairs_hold_every_pair_the_judge_calls_a_duplicate_at_any_threshold(threshold):
    import random
    from itertools import combinations

    from reverie.claims import duplicate_pairs, stored_relation

    rng = random.Random(7)
    words = ["tea", "coffee", "hiking", "rust", "go", "jazz", "chess", "kayak", "garden", "novels", "trains", "maps"]
    lines = list(dict.fromkeys(text for pair in PAIRS for text in pair[:2]))
    for n in range(150):  # near-duplicates: the same words, a few more or fewer, "the user", case
        picked = rng.sample(words, rng.randint(1, 5))
        line = f"{rng.choice(['Likes', 'Enjoys', 'Has 2', 'Wants'])} {' and '.join(picked)}"
        lines.append(rng.choice([line, line.upper(), f"The user {line.lower()}", f"{line} {n % 3}"]))
    every = {(i, j) for i, j in combinations(range(len(lines)), 2)
             if stored_relation(lines[i], lines[j], threshold) == "duplicate"}
    candidates = duplicate_pairs(lines, threshold)
    assert candidates is not None and every and every <= set(candidates)
    if threshold >= 0.9:
        assert len(candidates) < len(lines) * (len(lines) - 1) // 8  # an index read, not all pairs
    assert duplicate_pairs(lines, 0.0) is None  # every pair may be one: the caller tries them all


def test_the_judges_keys_find_every_line_it_relates_and_leave_most_lines_unjudged():
    from reverie.facts import LiveTexts
    from reverie.store.base import FactText

    lines = list(dict.fromkeys(text for pair in PAIRS for text in pair[:2]))
    lines += [f"Melanie: went to the {place} on day {n}" for n, place in enumerate(["lake", "museum", "market"] * 20)]
    live = LiveTexts(FactText(f"f{i}", line, "fact") for i, line in enumerate(lines))
    judged = 0
    for new in lines:
        related = [t.content for t in live.related(new)]
        assert related == [old for old in lines if old in related]  # oldest first, as stored
        assert {old for old in lines if fact_relation(new, old, 0.7)} <= set(related)
        judged += len(related)
    assert judged < len(lines) ** 2 // 2  # most pairs are never judged
