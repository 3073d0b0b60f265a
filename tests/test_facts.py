"""reverie.facts: the one fact write path every line uses."""

from __future__ import annotations

from reverie.journal import Journal
from reverie.models import Fact, Provenance, utcnow
from reverie.tags import TagWriter


def test_add_fact_reinforces_a_duplicate_and_archives_an_older_value(mem):
    writer, facts = TagWriter(mem.store, "ana"), mem.ctx.facts
    with mem.store.transaction():
        first = facts.add_fact(writer, Fact(user="ana", content="Lives in Lisbon"), [])
        again = facts.add_fact(writer, Fact(user="ana", content="lives in Lisbon."), [])
        moved = facts.add_fact(writer, Fact(user="ana", content="Lives in Berlin"), [])
    assert again.id == first.id and again.uses == 1
    old = mem.fact(first.id)
    assert old.status == "archived" and old.superseded_by == moved.id and moved.supersedes == first.id


def test_fold_moves_provenance_tags_and_uses_to_the_kept_fact_and_journals_both(mem):
    facts = mem.ctx.facts
    keep = Fact(user="ana", content="Prefers tea", uses=1, tags=[], provenance=Provenance(episodes=["ep_a"]))
    drop = Fact(user="ana", content="Likes tea a lot", uses=4, provenance=Provenance(episodes=["ep_b"]))
    journal = Journal(user="ana", action="test")
    with mem.store.transaction():
        facts.index_fact(keep, ["tea"])
        facts.index_fact(drop, ["drinks"])
        facts.fold(drop, keep, "same", journal, utcnow())
        journal.commit(mem.store)
    kept, dropped = mem.fact(keep.id), mem.fact(drop.id)
    assert kept.uses == 4 and set(kept.provenance.episodes) == {"ep_a", "ep_b"} and set(kept.tags) == {"tea", "drink"}  # tags are normalised (singular)
    assert drop.id in kept.provenance.facts
    assert dropped.status == "archived" and dropped.superseded_by == keep.id
    assert {c.id for c in journal.changes} == {keep.id, drop.id}


def test_a_fact_said_again_and_again_keeps_its_first_and_newest_episodes_and_counts_the_rest(mem):
    from reverie.facts import absorb
    from reverie.models import MAX_PROVENANCE, PROVENANCE_FIRST

    facts = mem.ctx.facts
    fact = Fact(user="ana", content="Prefers green tea", provenance=Provenance(origin="learned", episodes=["ep_0"]))
    with mem.store.transaction():
        facts.index_fact(fact, [])
    for n in range(1, 200):
        stored = mem.fact(fact.id)
        with mem.store.transaction():
            facts.reinforce_fact(stored, [f"ep_{n}"], utcnow())
    kept = mem.fact(fact.id)
    said = [f"ep_{n}" for n in range(200)]
    assert kept.uses == 199
    assert kept.provenance.episodes == said[:PROVENANCE_FIRST] + said[200 - MAX_PROVENANCE + PROVENANCE_FIRST:]
    assert kept.provenance.episodes_left_out == 200 - MAX_PROVENANCE
    # a recall that delivers it carries the kept ids, not every episode that ever said it
    item = next(i for i in mem.recall("green tea?", user="ana", budget=300, explain=True).items if i.id == fact.id)
    assert item.provenance == kept.provenance.episodes

    # folding facts together bounds the merged lists the same way and adds up what was left out
    other = Fact(user="ana", content="Likes tea", provenance=Provenance(
        episodes=[f"ep_x{n}" for n in range(100)], source_ids=[f"turn-{n}" for n in range(100)]))
    absorb(kept, [other])
    assert len(kept.provenance.episodes) == MAX_PROVENANCE and kept.provenance.episodes[0] == "ep_0"
    assert kept.provenance.episodes[-1] == "ep_x99"
    assert kept.provenance.episodes_left_out == (200 - MAX_PROVENANCE) + (MAX_PROVENANCE + 100 - MAX_PROVENANCE)
    assert len(kept.provenance.source_ids) == MAX_PROVENANCE and kept.provenance.sources_left_out == 100 - MAX_PROVENANCE


def test_one_agents_fact_is_never_reinforced_or_superseded_by_another_agents_or_everyones(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    cooking = mem.remember("Is vegetarian", user="ana", agent="cooking-bot", category="constraint")
    shared = mem.remember("Is vegetarian", user="ana", category="constraint")
    assert shared.id != cooking.id and shared.agent is None  # not folded into cooking-bot's own
    assert "vegetarian" in mem.recall("what can I eat? vegetarian", user="ana", agent="travel-bot").context
    coder = mem.remember("Prefers vim", user="ana", agent="coder")
    writer = mem.remember("Prefers vim", user="ana", agent="writer")
    assert writer.id != coder.id and mem.fact(coder.id).uses == 0
    sleep = mem.remember("Takes 5 mg of melatonin at night", user="ana", agent="sleep-bot")
    mem.remember("Takes 10 mg of melatonin at night", user="ana", agent="other-bot")
    assert mem.fact(sleep.id).status == "consolidated"  # another agent's new value is not sleep-bot's
    assert "5 mg" in mem.recall("melatonin dose", user="ana", agent="sleep-bot").context


def test_an_agents_fact_may_say_again_one_every_agent_sees_but_not_replace_it(bmem):
    mem = bmem
    everyone = mem.remember("Drinks green tea daily", user="ana", category="preference")
    again = mem.remember("Drinks green tea daily", user="ana", agent="tea-bot", category="preference")
    assert again.id == everyone.id and mem.fact(everyone.id).uses == 1  # it sees that one already
    dose = mem.remember("Takes 5 mg of melatonin at night", user="ana")
    mine = mem.remember("Takes 10 mg of melatonin at night", user="ana", agent="sleep-bot")
    assert mem.fact(dose.id).status == "consolidated" and mine.agent == "sleep-bot"


def test_a_fact_another_call_made_meanwhile_is_answered_reinforced_not_created(mem):
    from reverie.curation import remembered

    def racing() -> object:  # another request stores the line after this one began, then this one writes
        mem.remember("Collects vintage stamps", user="ana")
        return mem.remember("Collects vintage stamps", user="ana")

    fact, outcome = remembered(racing)
    assert outcome == "reinforced" and fact.uses == 1
    assert remembered(lambda: mem.remember("Plays the cello", user="ana"))[1] == "created"


def test_a_preference_of_another_kind_leaves_the_older_one_live_through_every_door(bmem):
    """"Prefers tea" archived "Prefers email", and "Prefers tabs over spaces" the README's
    "Prefers trash over rm": remember, learning and a MEMORY.md line alike."""
    mem = bmem
    email = mem.remember("Prefers email", user="ana", category="preference")
    assert mem.remember("Prefers tea", user="ana", category="preference").supersedes is None
    trash = mem.remember("Prefers trash over rm", user="ana", category="preference")
    mem.add([{"role": "user", "content": "I prefer tabs over spaces."}], user="ana")
    mem.flush()
    live = {f.content for f in mem.facts(user="ana")}
    assert {"Prefers email", "Prefers tea", "Prefers trash over rm"} <= live
    assert any("tabs over spaces" in c for c in live), live
    assert mem.fact(email.id).status != "archived" and mem.fact(trash.id).status != "archived"
    # a value of one kind still takes the older one's place
    coffee = mem.remember("Prefers coffee", user="ana", category="preference")
    assert coffee.supersedes is not None and mem.fact(coffee.supersedes).content == "Prefers tea"


def test_a_correction_takes_back_what_it_contradicts_whatever_that_was_filed_under(mem):
    writer, facts = TagWriter(mem.store, "ana"), mem.ctx.facts
    with mem.store.transaction():
        dose = facts.add_fact(writer, Fact(user="ana", content="Takes 5 mg of melatonin", category="health"), [])
        other = facts.add_fact(writer, Fact(user="ana", content="Takes 10 mg of melatonin", category="preference"), [])
        peanuts = facts.add_fact(writer, Fact(user="ana", content="Is allergic to peanuts", category="constraint"), [])
        fixed = facts.add_fact(writer, Fact(user="ana", content="Is allergic to cashews, not peanuts",
                                            category="correction"), [])
    assert mem.fact(dose.id).status != "archived" and other.supersedes is None  # another category: both stay
    assert mem.fact(peanuts.id).status == "archived" and mem.fact(peanuts.id).superseded_by == fixed.id
