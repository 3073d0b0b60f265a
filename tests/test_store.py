"""The store contract, on SQLite and PostgreSQL alike (``store_url`` runs each test on both):
schema, transactions, full text in two languages, tags, runs, keys, documents, several
processes. Then what only one of them has: SQLite's WAL file, PostgreSQL's shared queue."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from reverie import InvalidInput, Memory, StoreBusy, StoreError
from reverie.models import Episode, Fact, KnowledgeDoc, Message, Note, Profile, ProfileSection, Tag, TagRelation, utcnow
from reverie.store import ApiKey, DreamRun, PostgresStore, SQLiteStore, open_store
from reverie.store.base import ITEM_KINDS, NAME_DEPTH
from reverie.text import terms
from tests.pg import drop_schema, new_schema


@pytest.fixture
def store(store_url):
    opened = open_store(store_url)
    yield opened
    opened.close()


def _day(n: int) -> datetime:
    return datetime(2024, 5, 1, 12, tzinfo=timezone.utc) + timedelta(days=n)


def test_recent_threads_are_the_most_recently_active_first_each_once(store):
    for n, thread in enumerate(["old", "mid", "old", "new", "mid", "new", "newest"]):
        store.put_episode(Episode(user="ana", thread=thread, status="completed", user_text=f"note {n}",
                                  occurred_at=_day(n)))
    store.put_episode(Episode(user="bob", thread="bobs", status="completed", user_text="x", occurred_at=_day(9)))
    assert store.recent_threads("ana") == ["newest", "new", "mid", "old"]
    assert store.recent_threads("ana", limit=2) == ["newest", "new"]
    assert store.recent_threads("nobody") == []


def test_an_episode_is_found_by_the_days_it_speaks_of_whenever_it_was_said(store):
    monday = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)

    def said(text: str, **kw) -> Episode:
        episode = Episode(**{"user": "ana", "thread": "t", "status": "completed", "occurred_at": monday,
                             "messages": [Message(speaker="ana", content=text)], **kw})
        store.put_episode(episode)
        return episode

    dentist = said("I have the dentist on Friday at 3pm")  # the Friday before, or 4 December
    sister = said("My sister flies in next Tuesday")  # 1 or 8 December
    offsite = said("The offsite is in the week of 14 December, 2026")
    said("Nothing planned, really")
    said("Dentist again on Friday", archived=True)  # never found: archived,
    said("Friday I am off", status="pending")  # or not completed
    store.put_episode(Episode(user="bob", thread="t", status="completed", occurred_at=monday,
                              messages=[Message(speaker="bob", content="Gym on Friday")]))
    day = datetime(2026, 12, 4).date()
    assert [e.id for e in store.mentioning("ana", day, day, 10)] == [dentist.id]
    assert [e.id for e in store.mentioning("ana", day.replace(day=1), day.replace(day=7), 10)] == [sister.id, dentist.id]
    assert [e.id for e in store.mentioning("ana", day.replace(day=14), day.replace(day=14), 10)] == [offsite.id]
    assert store.mentioning("ana", day.replace(day=2), day.replace(day=3), 10) == []
    assert len(store.mentioning("ana", day.replace(day=1), day.replace(day=31), 1)) == 1
    # the text rewritten speaks of another day; the episode deleted speaks of none
    store.put_episode(dentist.model_copy(update={"messages": [Message(speaker="ana", content="Dentist tomorrow")]}))
    assert store.mentioning("ana", day, day, 10) == []
    assert [e.id for e in store.mentioning("ana", monday.date() + timedelta(days=1), monday.date() + timedelta(days=1),
                                           10)] == [sister.id, dentist.id]
    store.delete_episode(dentist.id)
    store.put_episode(sister.model_copy(update={"learned": True}), reindex=False)  # keeps its days
    assert [e.id for e in store.mentioning("ana", day.replace(day=1), day.replace(day=1), 10)] == [sister.id]
    store.delete_user("ana")
    assert store.mentioning("ana", day.replace(day=1), day.replace(day=31), 10) == []
    assert len(store.mentioning("bob", day, day, 10)) == 1


# ---------------------------------------------------------------- schema and transactions


def test_a_new_store_has_a_schema_version_and_reopening_keeps_it(store_url):
    first = open_store(store_url)
    version = first.schema_version()
    first.close()
    again = open_store(store_url)
    assert version >= 1 and again.schema_version() == version
    again.close()


def test_failed_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_fact(Fact(user="ana", content="first"))
            with store.transaction():  # nested blocks join the outer one
                store.put_fact(Fact(user="ana", content="second"))
            raise RuntimeError("boom")
    assert store.list_facts("ana") == []
    assert store.search("ana", ["first"], ["fact"], 10) == []


def test_a_transaction_sees_its_own_writes_and_commits_them_together(store):
    with store.transaction():
        store.put_fact(Fact(user="ana", content="likes tea"))
        assert len(store.list_facts("ana")) == 1
        with store.transaction():
            store.put_profile_section("ana", "user.topOfMind", "tea tasting", utcnow())
    assert store.get_profile("ana").section("user.topOfMind").summary == "tea tasting"
    assert len(store.search("ana", ["tea"], ["fact"], 10)) == 1


def test_a_batch_transaction_commits_every_write_reads_its_own_and_counts_right(store):
    episodes = [Episode(user="ana", thread="t", status="completed", user_text=f"kayak trip number {n}",
                        messages=[Message(content=f"kayak trip number {n}")]) for n in range(5)]
    with store.transaction(batch=True):
        for ep in episodes:
            store.put_episode(ep)
        store.set_items_tags("ana", "episode", {ep.id: {"kayak": 1.0} for ep in episodes})
        learned = episodes[0].model_copy(update={"summary": "a kayak trip", "learned": True})
        store.put_episode(learned, reindex=False)  # an existing row keeps its text
        assert set(store.get_episodes(ep.id for ep in episodes)) == {ep.id for ep in episodes}
        assert store.retag("ana", "kayak", "kayaking") == 5  # a count waits for what was sent
    assert store.get_episode(episodes[0].id).summary == "a kayak trip"
    assert len(store.search("ana", ["kayak"], ["episode"], 10)) == 5


def test_a_failed_batch_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError):
        with store.transaction(batch=True):
            store.put_fact(Fact(user="ana", content="first"))
            store.put_episode(Episode(user="ana", status="completed", user_text="a walk by the river",
                                      messages=[Message(content="a walk by the river")]))
            raise RuntimeError("boom")
    assert store.list_facts("ana") == [] and store.list_episodes("ana") == []
    assert store.search("ana", ["river"], ["episode"], 10) == []


def test_a_server_error_inside_a_postgresql_batch_rolls_the_whole_batch_back(pg_url):
    """Pipeline mode sends statements without waiting for each answer: an error the server
    found halfway still undoes the block, and surfaces by its end."""
    import psycopg

    store = PostgresStore(pg_url)
    try:
        with pytest.raises(psycopg.Error):
            with store.transaction(batch=True):
                store.put_fact(Fact(user="ana", content="first"))
                store._do("INSERT INTO no_such_table VALUES (1)")
                store.put_fact(Fact(user="ana", content="second"))
        assert store.list_facts("ana") == []
        store.put_fact(Fact(user="ana", content="after"))  # the connection went back to the pool usable
        assert [f.content for f in store.list_facts("ana")] == ["after"]
    finally:
        store.close()


def test_one_users_read_then_write_transactions_do_not_lose_updates(store):
    """Two threads add to the same counter in read-then-write transactions: none is lost."""
    fact = Fact(user="ana", content="counted")
    store.put_fact(fact)

    def bump() -> None:
        for _ in range(15):
            with store.transaction():
                current = store.get_fact(fact.id)
                assert current is not None
                current.confidence = round(current.confidence + 0.01, 4)
                store.put_fact(current)

    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get_fact(fact.id).confidence == pytest.approx(0.8 + 0.45)


# ---------------------------------------------------------------- full text


def test_full_text_finds_english_stems_and_chinese_words(store):
    store.put_fact(Fact(user="ana", content="Runs marathons every spring"))
    store.put_fact(Fact(user="ana", content="回答时先给结论，不要长铺垫"))
    store.put_fact(Fact(user="bob", content="Runs a bakery"))
    english = store.search("ana", ["marathon", "run"], ["fact"], 10)
    chinese = store.search("ana", ["结论"], ["fact"], 10)
    assert len(english) == 1 and len(chinese) == 1
    assert store.get_fact(chinese[0].id).content.startswith("回答时")


def test_full_text_finds_a_part_of_a_stored_chinese_compound(store):
    from reverie.text import compound_parts

    airport = Fact(user="ana", content="下周要去北京首都机场接朋友")
    vet = Fact(user="ana", content="周末带狗去宠物医院打疫苗")
    for fact in (airport, vet, Fact(user="bob", content="我家附近新开了一家宠物医院")):
        store.put_fact(fact)
    store.put_note(Note(user="ana", date="2024-05-01", content="宠物医院说它需要减肥"))

    def found(query):  # the query's terms and the parts of its compounds, as recall searches
        searched = terms(query) + compound_parts(terms(query))
        return [h.id for h in store.search("ana", searched, ["fact"], 10)]

    assert found("宠物") == [vet.id]  # a word the compound holds
    assert found("北京机场") == found("首都机场") == found("北京首都机场") == [airport.id]  # another compound of its parts
    assert len(store.search("ana", ["宠物"], ["note"], 10)) == 1
    assert store.index_tokens("fact", "ana", [vet.id])[vet.id] >= {"宠物医院", "宠物", "医院"}


def test_full_text_finds_a_date_and_not_every_date(store):
    said = {text: Episode(user="ana", status="completed", messages=[Message(speaker="Ana", content=text)])
            for text in ("我3月5日去看牙医", "我3月20日搬家了", "我4月18日有个面试", "我12月25日要去上海")}
    for episode in said.values():
        store.put_episode(episode)

    def found(query):
        return {h.id for h in store.search("ana", terms(query), ["episode"], 10)}

    assert found("3月5日") == found("3月5号") == {said["我3月5日去看牙医"].id}
    assert found("3月") == {said["我3月5日去看牙医"].id, said["我3月20日搬家了"].id}  # the days of March
    assert found("12月25日") == {said["我12月25日要去上海"].id}


def test_full_text_folds_diacritics_and_keeps_query_syntax_inert(store):
    store.put_fact(Fact(user="ana", content="Orders a café crème every morning"))
    assert len(store.search("ana", ["cafe"], ["fact"], 10)) == 1
    assert len(store.search("ana", ["café"], ["fact"], 10)) == 1
    for hostile in ('"', "'", "a & b", "!x", "cafe:*", "(", "NEAR", "\\"):
        store.search("ana", [hostile], ["fact", "episode", "note", "knowledge"], 10)  # never an error


def test_search_sees_only_completed_unarchived_episodes(store):
    done = Episode(user="ana", status="completed", messages=[Message(content="kayak trip")])
    pending = Episode(user="ana", status="pending", messages=[Message(content="kayak rental")])
    archived = Episode(user="ana", status="completed", archived=True, messages=[Message(content="kayak club")])
    for ep in (done, pending, archived):
        store.put_episode(ep)
    hits = store.search("ana", ["kayak"], ["episode"], 10)
    assert [h.id for h in hits] == [done.id]


def test_search_skips_archived_facts_and_covers_notes_and_knowledge(store):
    live = Fact(user="ana", content="climbs in the alps", status="consolidated")
    gone = Fact(user="ana", content="climbs in the andes", status="archived")
    store.put_fact(live)
    store.put_fact(gone)
    store.put_note(Note(user="ana", date="2024-05-01", content="planned a climb"))
    store.put_knowledge(KnowledgeDoc(user="ana", title="Climb checklist", body="- boots", tags=["outdoors"]))
    hits = store.search("ana", ["climb"], ["fact", "note", "knowledge"], 10)
    assert sorted(h.kind for h in hits) == ["fact", "knowledge", "note"]
    assert [h.id for h in hits if h.kind == "fact"] == [live.id]
    assert store.search("ana", ["outdoor"], ["knowledge"], 10)  # tags are indexed too


def _named_talk(store, short: int) -> Episode:
    """A user's store where "Gina" is rare among everything held (other talk, some of it
    about bringing things), ``short`` short lines of Gina's about dance that say her name
    again, and one of hers about what dance brings: the evidence, returned."""
    def ep(speaker: str, text: str) -> Episode:
        return Episode(user="ana", status="completed", messages=[Message(speaker=speaker, content=text)])
    for n in range(600):
        store.put_episode(ep("Jon", f"remember to bring the snacks for match {n}" if n % 5 == 0
                             else f"match {n} starts at noon"))
    for n in range(short):
        store.put_episode(ep("Gina", f"Gina, Gina: dance {n}"))
    evidence = ep("Gina", "dance brings freedom")
    store.put_episode(evidence)
    return evidence


def test_a_name_most_of_the_best_matches_hold_leaves_their_order_to_the_other_words(store):
    # more rows than kept hold the name: it cannot choose among them, and its store-wide idf
    # ranked them by how often it stands in each (the evidence came last of the best)
    limit = 3
    evidence = _named_talk(store, NAME_DEPTH * limit - 1)
    query = terms("How does Gina describe the feeling that dance brings?")
    assert evidence.id not in [h.id for h in store.search("ana", query, ["episode"], limit)]
    hits = store.search("ana", query, ["episode"], limit, names=["gina"])
    assert hits[0].id == evidence.id
    # those kept hold the name, and say which of the query's words they hold
    assert all(h.held is not None and "gina" in h.held for h in hits)
    assert hits[0].held == {"gina", "dance", "bring"}
    # a name the query does not search for, or a search of the name alone, changes nothing
    assert store.search("ana", query, ["episode"], limit, names=["jon"]) == store.search("ana", query, ["episode"], limit)
    assert store.search("ana", ["gina"], ["episode"], limit, names=["gina"]) == store.search("ana", ["gina"], ["episode"], limit)


def test_a_name_few_of_the_best_matches_hold_still_ranks_them(store):
    limit = 3
    _named_talk(store, NAME_DEPTH * limit - 1)
    max_the_dog = Episode(user="ana", status="completed", messages=[Message(speaker="Jon", content="Max and I dance")])
    store.put_episode(max_the_dog)
    query = terms("When did Max dance?")
    hits = store.search("ana", query, ["episode"], limit, names=["max"])
    assert hits == store.search("ana", query, ["episode"], limit)
    assert hits[0].id == max_the_dog.id


def test_index_tokens_are_the_words_full_text_holds_for_the_users_items(store):
    ep = Episode(user="ana", status="completed", messages=[Message(speaker="Ana", content="Kayaking at the Café, kayaks!")])
    fact = Fact(user="ana", content="likes tea", tags=["drinks"])
    note = Note(user="ana", date="2024-05-01", content="planned a climb")
    theirs = Episode(user="bob", status="completed", messages=[Message(content="kayak")])
    for item in (ep, theirs):
        store.put_episode(item)
    store.put_fact(fact)
    store.put_note(note)

    def tokens(found):
        return {item_id: set(held) for item_id, held in found.items()}

    # stemmed index terms, diacritics removed: the tokens a search of the same words matches
    assert tokens(store.index_tokens("episode", "ana", [ep.id, theirs.id, "missing"])) == {ep.id: {"ana", "kayak", "cafe"}}
    assert tokens(store.index_tokens("fact", "ana", [fact.id])) == {fact.id: set(terms("likes tea drinks"))}
    assert tokens(store.index_tokens("note", "ana", [note.id])) == {note.id: {"plan", "climb"}}
    assert store.index_tokens("episode", "ana", []) == {}


def test_rewriting_an_item_keeps_one_search_row(store):
    fact = Fact(user="ana", content="likes tea")
    store.put_fact(fact)
    fact.content = "likes coffee"
    store.put_fact(fact)
    assert store.search("ana", ["tea"], ["fact"], 10) == []
    assert len(store.search("ana", ["coffee"], ["fact"], 10)) == 1


def test_an_episode_written_without_reindexing_keeps_its_search_text(store):
    ep = Episode(user="ana", status="completed", messages=[Message(content="sailing lessons")])
    store.put_episode(ep)
    ep.summary = "something else entirely"
    ep.learned = True
    store.put_episode(ep, reindex=False)
    assert [h.id for h in store.search("ana", ["sail"], ["episode"], 10)] == [ep.id]
    assert store.get_episode(ep.id).learned


def test_bm25_prefers_rare_words_and_short_texts(store):
    store.put_fact(Fact(user="ana", content="plays chess on weekends"))
    store.put_fact(Fact(user="ana", content="plays tennis"))
    store.put_fact(Fact(user="ana", content="plays piano, plays guitar, plays violin and plays drums at home"))
    hits = store.search("ana", ["play", "chess"], ["fact"], 10)
    assert len(hits) == 3
    assert store.get_fact(hits[0].id).content.startswith("plays chess")
    assert hits[0].score > hits[1].score > 0


def test_related_and_recent_facts_are_the_newest_live_ones_oldest_first(store):
    facts = [Fact(user="ana", content=f"likes green tea number {n}", status="pending") for n in range(5)]
    facts.append(Fact(user="ana", content="likes green tea, archived", status="archived"))
    for fact in facts:
        store.put_fact(fact)
    related = store.related_facts("ana", ["tea"], 3)
    assert [f.id for f in related] == [f.id for f in facts[2:5]]
    assert [f.id for f in store.recent_facts("ana", 2)] == [f.id for f in facts[3:5]]
    assert store.count_facts("ana") == 5
    # a bounded count stops at its bound, and says the whole count below it
    assert [store.count_facts("ana", up_to=n) for n in (0, 3, 5, 9)] == [0, 3, 5, 5]
    assert store.count_facts("bob", up_to=3) == 0


# ---------------------------------------------------------------- episodes and input


def test_episodes_list_by_thread_status_time_and_order(store):
    eps = [
        Episode(user="ana", thread="a" if n % 2 else "b", status="completed", occurred_at=_day(n),
                messages=[Message(content=f"day {n}")])
        for n in range(6)
    ]
    eps.append(Episode(user="ana", status="pending", occurred_at=_day(9), messages=[Message(content="open")]))
    eps.append(Episode(user="bob", status="completed", occurred_at=_day(1), messages=[Message(content="bob's")]))
    for ep in eps:
        store.put_episode(ep)
    newest = store.list_episodes("ana")
    assert [e.id for e in newest] == [e.id for e in reversed(eps[:7])]
    assert [e.id for e in store.list_episodes("ana", thread="a", newest_first=False)] == [eps[1].id, eps[3].id, eps[5].id]
    assert [e.id for e in store.list_episodes("ana", status="pending")] == [eps[6].id]
    window = store.list_episodes("ana", since=_day(2), until=_day(4), newest_first=False)
    assert [e.id for e in window] == [e.id for e in eps[2:5]]
    assert len(store.list_episodes("ana", limit=2)) == 2
    assert [e.id for e in store.pending_turns()] == [eps[6].id]
    got = store.get_episodes([eps[0].id, eps[7].id, "ep_missing"])
    assert set(got) == {eps[0].id, eps[7].id} and store.get_episode("ep_missing") is None
    assert got[eps[7].id].user == "bob" and got[eps[0].id].occurred_at == _day(0)


def test_archived_episodes_are_listed_only_when_asked(store):
    ep = Episode(user="ana", status="completed", archived=True, messages=[Message(content="old")])
    store.put_episode(ep)
    assert store.list_episodes("ana") == []
    assert [e.id for e in store.list_episodes("ana", archived=True)] == [ep.id]
    assert [e.id for e in store.list_episodes("ana", archived=None)] == [ep.id]


def test_unlearned_episodes_learning_backlog_and_marking(store):
    eps = [Episode(user=u, status="completed", messages=[Message(content=u)]) for u in ("ana", "ana", "bob")]
    for ep in eps:
        store.put_episode(ep)
    store.put_episode(Episode(user="ana", status="pending", messages=[Message(content="not yet")]))
    assert [r.id for r in store.unlearned_episodes()] == [e.id for e in eps]
    assert [r.id for r in store.unlearned_episodes(user="bob")] == [eps[2].id]
    assert store.unlearned_episodes(limit=1)[0].thread == "default"
    store.mark_learned([eps[0].id], learned=False, error="engine down")
    assert store.learning_backlog() == (3, "engine down")
    assert store.learning_backlog("bob") == (1, "")
    store.mark_learned([eps[0].id, eps[1].id])
    assert store.learning_backlog("ana") == (0, "")
    assert store.get_episode(eps[0].id).learned


def test_input_keys_are_known_per_user_and_thread_and_the_first_episode_keeps_a_key(store):
    store.put_inputs("ana", "t1", "ep_1", ["d:abc", "s:D1:1"])
    store.put_inputs("ana", "t1", "ep_2", ["d:abc", "s:D1:2"])
    assert store.known_inputs("ana", "t1", ["d:abc", "s:D1:2", "s:D9"]) == {"d:abc": "ep_1", "s:D1:2": "ep_2"}
    assert store.known_inputs("ana", "t2", ["d:abc"]) == {}
    assert store.known_inputs("bob", "t1", ["d:abc"]) == {}
    assert store.known_inputs("ana", "t1", []) == {}


def test_touch_counts_uses(store):
    fact = Fact(user="ana", content="uses tea")
    ep = Episode(user="ana", status="completed", messages=[Message(content="tea")])
    store.put_fact(fact)
    store.put_episode(ep)
    at = _day(3)
    store.touch("fact", [fact.id], at, by=2)
    store.touch("episode", [ep.id], at)
    store.touch("note", ["note_x"], at)  # kinds without counters are ignored
    assert store.get_fact(fact.id).uses == 2 and store.get_fact(fact.id).last_used_at == at
    assert store.get_episode(ep.id).uses == 1


# ---------------------------------------------------------------- facts, profile, notes, knowledge


def test_facts_by_status_category_and_agent_and_deletion(store):
    a = Fact(user="ana", content="rule one", category="constraint", status="consolidated")
    b = Fact(user="ana", content="pending idea", agent="coder", status="pending")
    c = Fact(user="ana", content="old", agent="writer", status="archived")
    for f in (a, b, c):
        store.put_fact(f)
    store.set_item_tags("ana", "fact", b.id, {"idea": 1.0})
    assert [f.id for f in store.list_facts("ana")] == [a.id, b.id]
    assert [f.id for f in store.list_facts("ana", status="archived")] == [c.id]
    assert [f.id for f in store.list_facts("ana", status=["archived", "pending"])] == [b.id, c.id]
    assert [f.id for f in store.list_facts("ana", category="constraint")] == [a.id]
    assert [f.id for f in store.list_facts("ana", agent="coder")] == [a.id, b.id]
    assert set(store.get_facts([a.id, c.id])) == {a.id, c.id}
    store.delete_fact(b.id)
    assert store.get_fact(b.id) is None
    assert store.search("ana", ["idea"], ["fact"], 10) == []
    assert store.postings("ana", ["idea"], ["fact"]) == []
    store.delete_fact("fact_missing")


def test_the_strongest_facts_rank_confidence_and_uses_without_reading_every_fact(store):
    import random

    from reverie.store.base import Store, strength

    rng = random.Random(7)
    facts = []
    for i in range(60):
        fact = Fact(user="ana", content=f"rule number {i}", category=rng.choice(["preference", "constraint", "goal"]),
                    status=rng.choice(["consolidated", "consolidated", "pending"]), agent=rng.choice([None, "coder"]),
                    confidence=rng.choice([0.5, 0.7, 0.9]), uses=rng.choice([0, 0, 3, 12]))
        store.put_fact(fact)
        facts.append(fact)
    store.put_fact(Fact(user="bob", content="bob's rule", category="preference", status="consolidated", confidence=1.0))
    wanted = ("preference", "constraint")
    expect = [f for f in facts if f.status == "consolidated" and f.category in wanted]
    expect.sort(key=lambda f: strength(f.confidence, f.uses), reverse=True)  # ties stay in the order written
    assert [f.id for f in store.strongest_facts("ana", wanted, None, 10)] == [f.id for f in expect[:10]]
    mine = [f for f in expect if f.agent in (None, "coder")]
    assert [f.id for f in store.strongest_facts("ana", wanted, "coder", 50)] == [f.id for f in mine[:50]]
    writer = [f.id for f in store.strongest_facts("ana", wanted, "writer", 50)]
    assert writer == [f.id for f in expect if f.agent is None]
    # the same as the plain reading of every fact, which a store without its own ranking uses
    assert [f.id for f in Store.strongest_facts(store, "ana", wanted, "coder", 7)] == [f.id for f in mine[:7]]
    got = store.strongest_facts("ana", wanted, None, 3)
    assert got[0].uses == expect[0].uses and got[0].content == expect[0].content
    # of pending facts too, and without those excluded (recall's matches): still ``limit`` of them
    both = sorted([f for f in facts if f.category in wanted], key=lambda f: strength(f.confidence, f.uses), reverse=True)
    skipped = {f.id for f in both[:4]} | {both[6].id}
    left = [f.id for f in both if f.id not in skipped]
    statuses = ("consolidated", "pending")
    assert [f.id for f in store.strongest_facts("ana", wanted, None, 5, statuses, exclude=skipped)] == left[:5]
    assert [f.id for f in Store.strongest_facts(store, "ana", wanted, None, 5, statuses, exclude=skipped)] == left[:5]
    assert store.strongest_facts("ana", ["identity"], None, 5) == [] and store.strongest_facts("cy", wanted, None, 5) == []
    # a use moves a fact's strength where the index keeps it: the weakest, used often, leads
    weakest = expect[-1]
    store.touch("fact", [weakest.id], datetime(2024, 5, 2, tzinfo=timezone.utc), by=1000)
    weakest.uses += 1000
    expect.sort(key=lambda f: strength(f.confidence, f.uses), reverse=True)
    assert expect[0] is weakest
    assert [f.id for f in store.strongest_facts("ana", wanted, None, 10)] == [f.id for f in expect[:10]]
    assert [f.id for f in Store.strongest_facts(store, "ana", wanted, None, 10)] == [f.id for f in expect[:10]]


def test_profile_sections(store):
    store.put_profile_section("ana", "user.workContext", "builds compilers", _day(0))
    store.put_profile_section("ana", "user.workContext", "builds databases", _day(1))
    profile = store.get_profile("ana")
    assert profile.section("user.workContext").summary == "builds databases"
    assert profile.section("user.workContext").updated_at == _day(1)
    assert store.get_profile("bob").section("user.workContext").summary == ""


def test_a_profile_section_put_back_to_never_set_reads_as_never_set(store):
    store.put_profile_section("ana", "user.workContext", "builds compilers", _day(0))
    store.put_profile_section("ana", "user.topOfMind", "a move", _day(0))
    store.put_profile_section("ana", "user.workContext", "", None)
    assert store.get_profile("ana").section("user.workContext") == ProfileSection()
    assert store.get_profile("ana").section("user.topOfMind").summary == "a move"  # only that section


def test_a_profile_section_of_an_unknown_name_is_refused_not_dropped(store):
    # a store reads only the known sections: one written under another name would vanish
    with pytest.raises(InvalidInput, match="unknown profile section 'user.hobbies'") as caught:
        store.put_profile_section("ana", "user.hobbies", "plays chess", _day(0))
    assert caught.value.field == "section"
    assert store.get_profile("ana").to_json() == Profile().to_json()


def test_notes_by_date_range_and_knowledge(store):
    notes = [Note(user="ana", date=d, content=f"note of {d}") for d in ("2024-05-02", "2024-05-01", "2024-05-03")]
    for n in notes:
        store.put_note(n)
    assert [n.date for n in store.list_notes("ana")] == ["2024-05-01", "2024-05-02", "2024-05-03"]
    assert [n.id for n in store.list_notes("ana", since="2024-05-02", until="2024-05-02")] == [notes[0].id]
    assert set(store.get_notes([notes[1].id])) == {notes[1].id}
    later = Note(user="ana", date="2024-05-02", content="a second line, with \"quotes\" and 中文")
    store.put_note(later)
    store.put_note(Note(user="bob", date="2024-05-02", content="bob's line"))
    assert store.note_lines("ana", "2024-05-02") == ["note of 2024-05-02", later.content]  # as list_notes orders them
    assert store.note_lines("ana", "2024-05-02") == [n.content for n in store.list_notes("ana", since="2024-05-02",
                                                                                         until="2024-05-02")]
    assert store.note_lines("ana", "2024-05-09") == []
    doc = KnowledgeDoc(user="ana", title="Deploy", body="- run the tests", tags=["ops"])
    store.put_knowledge(doc)
    doc.body = "- run the tests\n- tag the release"
    store.put_knowledge(doc)
    assert [d.body for d in store.list_knowledge("ana")] == [doc.body]
    assert store.get_knowledge([doc.id])[doc.id].title == "Deploy"


def test_knowledge_comes_newest_first_a_page_at_a_time_and_the_same_document_is_found_by_its_digest(store):
    docs = [KnowledgeDoc(user="ana", title=f"Runbook {n}", body=f"- step {n}", scope="global") for n in range(5)]
    for doc in docs:
        store.put_knowledge(doc)
    store.put_knowledge(KnowledgeDoc(user="bob", title="Runbook 0", body="- step 0"))
    first = store.page_knowledge("ana", limit=2)
    assert [d.title for d in first.items] == ["Runbook 4", "Runbook 3"] and first.next is not None
    rest = store.page_knowledge("ana", after=first.next, limit=10)
    assert [d.title for d in rest.items] == ["Runbook 2", "Runbook 1", "Runbook 0"] and rest.next is None
    with pytest.raises(InvalidInput) as err:
        store.page_knowledge("ana", after="not-a-cursor")
    assert err.value.field == "after"

    again = KnowledgeDoc(user="ana", title="Runbook 3", body="- step 3")
    assert store.same_knowledge(again) == docs[3]  # the same title, body, scope, agent and project
    for other in (KnowledgeDoc(user="ana", title="Runbook 3", body="- step 3 "),
                  KnowledgeDoc(user="ana", title="Runbook 3", body="- step 3", scope="agent", agent="ops"),
                  KnowledgeDoc(user="cy", title="Runbook 3", body="- step 3")):
        assert store.same_knowledge(other) is None
    docs[3].body = "- step 3, changed"  # an edited document is found by what it says now
    store.put_knowledge(docs[3])
    assert store.same_knowledge(again) is None
    assert store.same_knowledge(KnowledgeDoc(user="ana", title="Runbook 3", body="- step 3, changed")) == docs[3]
    # an export reads them a page at a time, in the order they were stored
    pages = [store.stored_after("knowledge", "ana", 0, 3)]
    pages.append(store.stored_after("knowledge", "ana", pages[0][-1][0], 3))
    assert [d.title for page in pages for _, d in page] == [d.title for d in docs]


def test_a_nul_character_in_text_is_stored_without_error(store):
    store.put_profile_section("ana", "user.topOfMind", "tea\x00time", utcnow())
    store.put_tag(Tag(user="ana", name="te\x00a"))
    assert store.get_profile("ana").section("user.topOfMind").summary.replace("\x00", "") == "teatime"


def test_users_are_everyone_with_something_stored(store):
    assert store.users() == []
    store.put_fact(Fact(user="cid", content="x"))
    store.put_profile_section("bob", "user.topOfMind", "y", utcnow())
    store.put_note(Note(user="ana", date="2024-05-01", content="z"))
    assert store.users() == ["ana", "bob", "cid"]
    # each found once however many rows hold them, in every kind of row, in order
    for n in range(5):
        store.put_episode(Episode(user="dee", thread="t", status="completed", occurred_at=utcnow(), user_text=f"e{n}"))
        store.put_fact(Fact(user="ana", content=f"fact {n}"))
    store.put_knowledge(KnowledgeDoc(user="abe", title="Runbook", body="- step"))
    store.put_episode(Episode(user="zed", thread="t", status="pending", occurred_at=utcnow(), user_text="hi"))
    assert store.users() == ["abe", "ana", "bob", "cid", "dee", "zed"]


# ---------------------------------------------------------------- tags


def test_tags_postings_counts_relations_and_retag(store):
    for name, status in (("tea", "active"), ("coffee", "unexamined"), ("drinks", "active")):
        store.put_tag(Tag(user="ana", name=name, status=status))
    tags = store.get_tags("ana", ["tea", "coffee", "nope"])
    assert set(tags) == {"tea", "coffee"} and isinstance(tags["tea"].id, int)
    assert [t.name for t in store.list_tags("ana")] == ["coffee", "drinks", "tea"]
    assert [t.name for t in store.list_tags("ana", status="active")] == ["drinks", "tea"]
    assert store.count_tags("ana") == 3 and store.count_tags("ana", status="active") == 2
    store.put_tag(Tag(user="ana", name="coffee", status="merged", merged_to="drinks"))
    assert store.get_tags("ana", ["coffee"])["coffee"].merged_to == "drinks"
    # what recall reads of a tag: the same status and merge target, from the columns alone
    states = store.tag_states("ana", ["tea", "coffee", "nope", "tea"])
    assert states == {"tea": ("active", None), "coffee": ("merged", "drinks")}
    assert states["coffee"].merged_to == "drinks" and store.tag_states("bob", ["tea"]) == {}

    for n in range(4):
        store.set_item_tags("ana", "episode", f"ep_{n}", {"tea": 1.0, "drinks": 0.5})
    store.set_item_tags("ana", "fact", "fact_1", {"coffee": 1.0})
    store.set_item_tags("ana", "episode", "ep_0", {"drinks": 0.5})  # replaces ep_0's tags
    posts = store.postings("ana", ["tea"], ["episode"])
    assert [p.id for p in posts] == ["ep_1", "ep_2", "ep_3"] and posts[0].weight == 1.0
    newest = store.postings("ana", ["tea", "drinks"], ["episode", "fact"], per_tag={"tea": 2, "drinks": 1})
    assert [(p.tag, p.id) for p in newest] == [("tea", "ep_2"), ("tea", "ep_3"), ("drinks", "ep_0")]
    assert store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 0}) == []
    assert store.tag_counts("ana") == {"tea": 3, "drinks": 4, "coffee": 1}
    assert store.tag_counts("ana", ["tea", "nope"]) == {"tea": 3}

    store.put_relation(TagRelation(user="ana", source="tea", target="drinks", level="related"))
    assert [(r.source, r.target) for r in store.relations("ana", ["drinks"])] == [("drinks", "tea")]
    store.put_relation(TagRelation(user="ana", source="drinks", target="tea", level="synonym"))
    assert store.relations("ana", ["tea"])[0].level == "synonym"
    pairs = [("tea", "drinks"), ("drinks", "tea"), ("tea", "coffee"), ("tea", "drinks")]
    pairs += [(f"x{n}", "tea") for n in range(500)]  # more pairs than one statement takes
    assert store.relation_levels("ana", pairs) == {("tea", "drinks"): "synonym", ("drinks", "tea"): "synonym"}
    assert store.relation_levels("bob", pairs) == {} and store.relation_levels("ana", []) == {}

    before = {t: sorted(store.postings("ana", [t], ITEM_KINDS)) for t in ("coffee", "drinks")}
    moved = [(p.kind, p.id, p.weight) for p in before["coffee"]]
    kept = [(p.kind, p.id) for p in before["coffee"] if (p.kind, p.id) in {(q.kind, q.id) for q in before["drinks"]}]
    assert store.retag("ana", "coffee", "drinks") == 1
    assert store.tag_counts("ana", ["coffee", "drinks"]) == {"drinks": 5}
    assert store.postings("bob", ["tea"], ["episode"]) == []
    # a merge taken back: each tag carries what it carried before, and the counts follow
    store.unretag("ana", "coffee", "drinks", moved, kept)
    assert {t: sorted(store.postings("ana", [t], ITEM_KINDS)) for t in ("coffee", "drinks")} == before
    assert store.tag_counts("ana", ["coffee", "drinks"]) == {t: len(p) for t, p in before.items() if p}


def test_tag_sizes_follow_every_write_of_the_postings(store):
    """tag_counts reads sizes kept by the store (not a count of the postings): they match
    the postings after replacing, retagging, forgetting a fact and deleting a user."""

    def counted(user: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for p in store.postings(user, ["tea", "drinks", "coffee", "herbal"], ["episode", "fact"]):
            found[p.tag] = found.get(p.tag, 0) + 1
        return found

    for user in ("ana", "bob"):
        for n in range(5):
            store.set_item_tags(user, "episode", f"{user}_ep_{n}", {"tea": 1.0, "drinks": 0.5})
        store.set_item_tags(user, "fact", f"{user}_fact", {"coffee": 1.0, "drinks": 1.0})
    store.set_item_tags("ana", "episode", "ana_ep_0", {"herbal": 1.0})  # tea and drinks leave ep_0
    store.set_item_tags("ana", "episode", "ana_ep_1", {})
    store.retag("ana", "tea", "herbal")
    store.put_fact(Fact(id="ana_fact", user="ana", content="Drinks coffee"))
    store.delete_fact("ana_fact")
    assert store.tag_counts("ana") == counted("ana") == {"herbal": 4, "drinks": 3}
    assert store.tag_counts("ana", ["herbal", "tea", "nope"]) == {"herbal": 4}
    assert store.tag_counts("bob") == counted("bob") == {"tea": 5, "drinks": 6, "coffee": 1}
    store.delete_user("bob")
    assert store.tag_counts("bob") == {} and store.tag_counts("ana") == counted("ana")


def test_sized_postings_pick_each_tags_cap_by_its_size_and_give_the_sizes(store):
    """A tag on at most ``frequent_over`` items reads its rare cap of newest postings, a tag
    on more its frequent cap; the sizes come back with them, as tag_counts gives them."""
    for n in range(6):
        store.set_item_tags("ana", "episode", f"ep_{n}", {"tea": 1.0, "drinks": 0.5} if n < 2 else {"drinks": 0.5})
    store.set_item_tags("ana", "fact", "fact_1", {"tea": 1.0})
    store.set_item_tags("bob", "episode", "bob_ep", {"tea": 1.0})
    caps = {"drinks": (5, 2), "tea": (2, 1), "nope": (3, 3)}
    counts, posts = store.sized_postings("ana", caps, ["episode", "fact"], frequent_over=4)
    assert counts == store.tag_counts("ana", caps) == {"drinks": 6, "tea": 3}
    # drinks is on 6 items, over 4: its 2 newest; tea on 3: its 2 newest; oldest first
    assert [(p.tag, p.id) for p in posts] == [("tea", "ep_1"), ("drinks", "ep_4"), ("drinks", "ep_5"), ("tea", "fact_1")]
    assert posts == store.postings("ana", caps, ["episode", "fact"], per_tag={"drinks": 2, "tea": 2, "nope": 3})
    # only the kinds asked for; the sizes count every kind
    counts, posts = store.sized_postings("ana", {"tea": (5, 5)}, ["fact"], frequent_over=4)
    assert counts == {"tea": 3} and [p.id for p in posts] == ["fact_1"]
    assert store.sized_postings("ana", {}, ["episode"], frequent_over=4) == ({}, [])
    assert store.sized_postings("carl", caps, ["episode"], frequent_over=4) == ({}, [])


def test_reads_by_key_together_give_what_each_read_alone_gives(store):
    ep = Episode(user="ana", messages=[Message(role="user", content="Tea in Kyoto")], status="completed")
    fact = Fact(user="ana", content="Likes green tea")
    note = Note(user="ana", date="2024-05-01", content="- tea in Kyoto")
    store.put_episode(ep)
    store.put_fact(fact)
    store.put_note(note)
    store.put_tag(Tag(user="ana", name="tea", status="active"))
    store.put_tag(Tag(user="ana", name="kyoto", status="merged", merged_to="japan"))
    store.put_profile_section("ana", "user.workContext", "Writes about tea", _day(0))
    got = store.read_keyed("ana", items={"episode": [ep.id, "missing"], "fact": [fact.id, fact.id], "note": [note.id],
                                         "knowledge": []}, tags=["tea", "kyoto", "nope", "tea"], profile=True)
    assert got.items == {"episode": store.get_episodes([ep.id]), "fact": store.get_facts([fact.id]),
                         "note": store.get_notes([note.id]), "knowledge": {}}
    assert got.items["episode"][ep.id].messages[0].content == "Tea in Kyoto"
    assert got.tags == store.tag_states("ana", ["tea", "kyoto"]) == {"tea": ("active", None), "kyoto": ("merged", "japan")}
    assert got.profile == store.get_profile("ana") and got.profile.section("user.workContext").summary == "Writes about tea"
    # only what was asked for; another user's tags and profile are not this user's
    assert store.read_keyed("bob", tags=["tea"], profile=True) == ({}, {}, store.get_profile("bob"))
    assert store.read_keyed("ana", items={"fact": [fact.id]}) == ({"fact": store.get_facts([fact.id])}, {}, None)
    with store.transaction():  # inside a transaction too
        again = store.read_keyed("ana", items={"fact": [fact.id], "note": [note.id]}, tags=["tea"], profile=True)
        assert again == ({"fact": got.items["fact"], "note": got.items["note"]}, {"tea": got.tags["tea"]}, got.profile)
    assert store.read_keyed("ana") == ({}, {}, None)


def test_many_items_tagged_at_once_are_posted_as_one_call_each_would(store):
    for name in ("tea", "drinks", "kyoto"):
        store.put_tag(Tag(user="ana", name=name, status="active"))
    store.set_item_tags("ana", "episode", "ep_0", {"kyoto": 1.0})
    items = {f"ep_{n}": {"tea": 1.0, "drinks": 0.5} for n in range(700)}  # more ids than one statement takes
    items["ep_1"] = {}
    store.set_items_tags("ana", "episode", items)  # ep_0's kyoto is replaced, ep_1 carries nothing
    posts = store.postings("ana", ["tea", "drinks", "kyoto"], ["episode"])
    assert [(p.id, p.tag, p.weight) for p in posts[:4]] == [
        ("ep_0", "tea", 1.0), ("ep_0", "drinks", 0.5), ("ep_2", "tea", 1.0), ("ep_2", "drinks", 0.5)]
    assert len(posts) == 2 * 699 and posts[-1].id == "ep_699"
    newest = store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 2})
    assert [p.id for p in newest] == ["ep_698", "ep_699"]
    assert store.tag_counts("ana") == {"tea": 699, "drinks": 699}
    store.set_items_tags("ana", "episode", {})  # nothing to do
    many = [f"x{n}" for n in range(600)] + ["tea", "kyoto"]  # more names than one statement takes
    assert set(store.tag_states("ana", many)) == set(store.get_tags("ana", many)) == {"tea", "kyoto"}


# ---------------------------------------------------------------- runs, keys, meta, journals, documents


def test_dream_runs(store):
    first = DreamRun(id="dream_1", user="ana", status="done", days=3, started_at=_day(0), input_hash="h1",
                     report={"entries": 2})
    second = DreamRun(id="dream_2", user="ana", status="running", days=1, started_at=_day(1))
    store.put_dream_run(first)
    store.put_dream_run(second)
    assert store.last_dream_run("ana").id == "dream_2"
    assert store.last_dream_run("ana", status="done").report == {"entries": 2}
    second.status, second.finished_at, second.error = "failed", _day(2), "engine down"
    store.put_dream_run(second)
    got = store.get_dream_run("dream_2")
    assert (got.status, got.finished_at, got.error, got.started_at) == ("failed", _day(2), "engine down", _day(1))
    assert store.get_dream_run("dream_x") is None and store.last_dream_run("bob") is None


def test_api_keys(store):
    key = ApiKey(id="key_1", user="ana", name="laptop", admin=True, created_at=_day(0))
    store.put_api_key(key, "hash-1")
    store.put_api_key(ApiKey(id="key_2", user="bob", name="", admin=False, created_at=_day(1)), "hash-2")
    found = store.find_api_key("hash-1")
    assert (found.id, found.user, found.admin, found.created_at) == ("key_1", "ana", True, _day(0))
    assert [k.id for k in store.list_api_keys()] == ["key_1", "key_2"]
    assert store.revoke_api_key("key_1", _day(2)) and not store.revoke_api_key("key_1", _day(3))
    assert store.find_api_key("hash-1").revoked_at == _day(2)
    assert store.find_api_key("nope") is None


def test_meta_journals_and_documents(store):
    store.set_meta("api_keys.salt", "00ff")
    store.set_meta("api_keys.salt", "0aff")
    store.set_meta("memory_md:ana", '{"sha": "x"}')
    assert store.get_meta("api_keys.salt") == "0aff" and store.get_meta("memory_md:ana") == '{"sha": "x"}'
    assert store.get_meta("nothing") is None
    for n, at in enumerate(("2024-05-01T10:00:00+00:00", "2024-05-03T10:00:00+00:00", "2024-05-02T10:00:00+00:00")):
        store.set_meta(f"journal:chg_{n}", f'{{"id": "chg_{n}", "user": "ana", "at": "{at}"}}')
    store.set_meta("journal:chg_9", '{"id": "chg_9", "user": "bob", "at": "2024-05-09T10:00:00+00:00"}')
    assert [j[8:13] for j in store.list_journals("ana")] == ["chg_1", "chg_2", "chg_0"]
    assert len(store.list_journals("ana", limit=1)) == 1
    assert '"chg_9"' in store.get_meta("journal:chg_9")

    store.put_document("ana", "MEMORY.md", "# Memory of ana\n")
    store.put_document("ana", "memory/dreams/2024-05-02.md", "two")
    store.put_document("ana", "memory/dreams/2024-05-01.md", "one")
    store.put_document("ana", "memory/dreams/2024-05-01.md", "one, again")
    store.put_document("bob", "MEMORY.md", "# Memory of bob\n")
    assert store.get_document("ana", "MEMORY.md") == "# Memory of ana\n"
    assert store.get_document("ana", "memory/dreams/2024-05-01.md") == "one, again"
    assert store.list_documents("ana", "memory/dreams/") == ["memory/dreams/2024-05-01.md", "memory/dreams/2024-05-02.md"]
    assert store.list_documents("ana") == ["MEMORY.md", "memory/dreams/2024-05-01.md", "memory/dreams/2024-05-02.md"]
    assert store.get_document("cid", "MEMORY.md") is None


def test_delete_user_removes_everything_of_them_and_nothing_else(store):
    for user in ("ana", "bob"):
        fact = Fact(user=user, content=f"{user} likes tea")
        store.put_fact(fact)
        store.put_episode(Episode(user=user, status="completed", messages=[Message(content="tea")]))
        store.put_note(Note(user=user, date="2024-05-01", content="tea"))
        store.put_knowledge(KnowledgeDoc(user=user, title="tea", body="tea"))
        store.put_profile_section(user, "user.topOfMind", "tea", utcnow())
        store.put_tag(Tag(user=user, name="tea"))
        store.set_item_tags(user, "fact", fact.id, {"tea": 1.0})
        store.put_relation(TagRelation(user=user, source="tea", target="drink", level="related"))
        store.put_dream_run(DreamRun(id=f"dream_{user}", user=user, status="done", days=1, started_at=_day(0)))
        store.put_api_key(ApiKey(id=f"key_{user}", user=user, name="", admin=False, created_at=_day(0)), f"h-{user}")
        store.put_inputs(user, "default", "ep_x", ["d:1"])
        store.set_meta(f"memory_md:{user}", "{}")
        store.set_meta(f"journal:chg_{user}", f'{{"user": "{user}", "at": "2024-05-01T00:00:00+00:00"}}')
        store.put_document(user, "MEMORY.md", "# x")
    deleted = store.delete_user("ana")
    assert deleted["episodes"] == deleted["facts"] == deleted["notes"] == deleted["knowledge"] == 1
    assert deleted["api_keys"] == 1 and deleted["meta"] >= 2
    assert store.users() == ["bob"]
    assert store.search("ana", ["tea"], ["fact", "episode", "note", "knowledge"], 10) == []
    assert store.list_tags("ana") == [] and store.get_meta("memory_md:ana") is None
    assert store.list_journals("ana") == [] and store.get_document("ana", "MEMORY.md") is None
    assert [k.user for k in store.list_api_keys()] == ["bob"]
    assert len(store.search("bob", ["tea"], ["fact", "episode", "note", "knowledge"], 10)) == 4
    assert store.get_document("bob", "MEMORY.md") == "# x" and len(store.list_journals("bob")) == 1


def test_pages_walk_every_row_once_in_the_order_of_the_default_pages(store):
    from reverie.store.base import Store

    for n in range(11):
        fact = Fact(user="ana", content=f"fact {n} {'alpha' if n % 2 else 'beta'}", confidence=0.5 + n % 3 / 10,
                    uses=n % 4, status="consolidated")
        store.put_fact(fact)
        if n % 3 == 0:
            store.touch("fact", [fact.id], _day(n))
        store.put_episode(Episode(user="ana", thread="t" if n % 2 else "u", status="completed",
                                  occurred_at=_day(n % 5), messages=[Message(content=f"m{n}")]))
        store.put_note(Note(user="ana", date=f"2024-05-0{1 + n % 3}", content=f"note {n}"))
        store.put_tag(Tag(user="ana", name=f"tag{n:02d}", status="active" if n % 2 else "unexamined"))
        store.set_meta(f"journal:chg_{n:02d}",
                       f'{{"id": "chg_{n:02d}", "user": "ana", "at": "2024-05-0{1 + n % 4}T10:00:00+00:00"}}')
        store.put_knowledge(KnowledgeDoc(user="ana", title=f"doc {n}", body=f"- step {n}"))

    def walk(read):  # type: ignore[no-untyped-def]
        out, after = [], None
        while True:
            page = read(after)
            out += [getattr(i, "id", None) or getattr(i, "name", None) or i for i in page.items]
            if page.next is None:
                return out
            after = page.next

    reads = [
        lambda s, a: s.page_episodes("ana", after=a, limit=4),
        lambda s, a: s.page_episodes("ana", thread="t", after=a, limit=2),
        lambda s, a: s.page_notes("ana", after=a, limit=3),
        lambda s, a: s.page_tags("ana", after=a, limit=4),
        lambda s, a: s.page_tags("ana", status="active", after=a, limit=2),
        lambda s, a: s.page_journals("ana", after=a, limit=3),
        lambda s, a: s.page_knowledge("ana", after=a, limit=4),
        *(lambda s, a, o=order: s.page_facts("ana", order=o, after=a, limit=3)
          for order in ("uses", "recent", "last_used", "confidence")),
        lambda s, a: s.page_facts("ana", contains="ALPHA", after=a, limit=2),
    ]
    defaults = type("Defaults", (), {k: getattr(Store, k) for k in dir(Store) if k.startswith("page_")})
    for read in reads:
        got = walk(lambda a: read(store, a))
        assert got and len(got) == len(set(got))
        base = walk(lambda a: read(_Default(store, defaults), a))
        assert sorted(map(str, got)) == sorted(map(str, base))
    assert [f.content for f in store.fact_texts("ana")] == [f.content for f in store.list_facts("ana")]
    assert [t.content for t in store.fact_texts("ana", ["alpha"], 2)] == ["fact 7 alpha", "fact 9 alpha"]
    assert store.counts("ana") == Store.counts(store, "ana")


class _Default:
    """A store read through the ABC's default page methods."""

    def __init__(self, store, defaults):  # type: ignore[no-untyped-def]
        self.store, self.defaults = store, defaults

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        if name.startswith("page_"):
            return lambda *a, **k: getattr(self.defaults, name)(self.store, *a, **k)
        return getattr(self.store, name)


# ---------------------------------------------------------------- several processes


def _writer(home: str, store: str | None, worker: int, count: int) -> None:
    mem = Memory(home, background=False, store=store)
    for _ in range(count):
        mem.remember(f"w{worker} stored item {uuid.uuid4().hex} {uuid.uuid4().hex}", user="ana")
    mem.store.close()


def test_two_processes_writing_at_once_lose_nothing(home, backend):
    Memory(home, background=False, store=backend).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(home), backend, w, 60)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    mem = Memory(home, background=False, store=backend)
    assert len(mem.facts(user="ana")) == 120
    mem.close()


# ---------------------------------------------------------------- the same ranking on both stores


def _fill(store) -> None:  # type: ignore[no-untyped-def]
    words = ["tea", "coffee", "hike", "chess", "piano", "garden", "paris", "marathon", "novel", "python"]
    for n in range(60):
        picked = [words[(n * k) % len(words)] for k in (1, 3, 7)]
        store.put_episode(Episode(user="ana", status="completed", occurred_at=_day(n % 9),
                                  messages=[Message(speaker="Ana", content=f"I talked about {' and '.join(picked)} "
                                                                           f"{'again ' * (n % 4)}today")]))
        store.put_fact(Fact(user="ana", content=f"Ana likes {picked[0]} more than {picked[1]}"))


def test_both_stores_rank_the_same_items_with_the_same_scores(tmp_path, pg_url):
    stores = [SQLiteStore(tmp_path / "r.db"), PostgresStore(pg_url)]
    for s in stores:
        _fill(s)
    for query in (["tea"], ["chess", "piano"], ["paris", "marathon", "again"], ["talk", "today"]):
        sqlite_hits, pg_hits = (s.search("ana", query, ["episode", "fact"], 8) for s in stores)
        by_item = lambda hits: {(h.kind, h.id): h.score for h in hits}  # noqa: E731
        # ids are random per store: compare the texts the hits point at, with their scores
        texts = []
        for s, hits in zip(stores, (sqlite_hits, pg_hits)):
            eps = s.get_episodes(h.id for h in hits if h.kind == "episode")
            facts = s.get_facts(h.id for h in hits if h.kind == "fact")
            texts.append(sorted(
                ((eps[h.id].messages[0].content if h.kind == "episode" else facts[h.id].content), round(h.score, 6))
                for h in hits
            ))
            assert len(by_item(hits)) == len(hits)
        assert texts[0] == texts[1], query
    for s in stores:
        s.close()


# ---------------------------------------------------------------- SQLite only


def test_sqlite_store_uses_wal_and_foreign_keys(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    conn = sqlite3.connect(tmp_path / "r.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._x("PRAGMA foreign_keys").fetchone()[0] == 1
    rows = store._x("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert rows == 1
    store.close()


def test_a_sqlite_store_of_schema_11_indexes_its_chinese_again_on_upgrade(tmp_path):
    from reverie.store.sqlite import MIGRATIONS

    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        airport = memory.remember("下周要去北京首都机场接朋友", user="ana")
        english = memory.remember("Walks the dog every morning", user="ana")
        moved = memory.remember("住在上海浦东新区", user="ana")
        memory.forget(moved.id, user="ana")  # archived: its row holds no text
        dentist = memory.add([{"speaker": "Ana", "content": "我3月5日去看牙医"}], user="ana", thread="t",
                             group="message")[0].id
        memory.add([{"speaker": "Ana", "content": "我4月18日有个面试"}], user="ana", thread="t", group="message")
        memory.store.put_note(Note(user="ana", date="2024-05-01", content="周末带狗去宠物医院打疫苗"))
        guide = memory.add_knowledge("机场指南", "- 北京首都机场T3航站楼", user="ana")
    # as schema 11 indexed them (reverie.text before the compounds' parts and dates as one word)
    before = {("facts", airport.id): "下周 北京首都机场 接 朋友", ("facts", english.id): "walk dog morn",
              ("facts", moved.id): "", ("episodes", dentist): "ana 月 日去 牙医",
              ("knowledge", guide.id): "机场 指南 北京首都机场 t3 航站楼"}
    conn = sqlite3.connect(home / "reverie.db")
    for (table, item), text in before.items():
        conn.execute(f"UPDATE {table}_fts SET text = ? WHERE rowid = (SELECT pk FROM {table} WHERE id = ?)",
                     (text, item))
    conn.execute("UPDATE episodes_fts SET text = 'ana 月 18 日有 个 面试' WHERE text LIKE '%面试%'")
    conn.execute("UPDATE notes_fts SET text = '周末 带狗 宠物医院 打 疫苗'")
    conn.execute("UPDATE schema_version SET version = 11")
    conn.commit()
    untouched = conn.execute("SELECT rowid, text, owner FROM facts_fts WHERE text NOT GLOB '*[一-鿿]*'").fetchall()
    conn.close()
    assert len(untouched) == 2  # the English fact and the archived one
    with Memory(home, background=False) as memory:
        store = memory.store
        assert store.schema_version() == len(MIGRATIONS) == 13
        assert memory.check_store().intact
        assert [h.id for h in store.search("ana", ["北京", "机场"], ["fact", "knowledge"], 10)] == [airport.id, guide.id]
        assert [h.id for h in store.search("ana", ["3月5日"], ["episode"], 10)] == [dentist]
        assert len(store.search("ana", ["宠物"], ["note"], 10)) == 1
        assert store.search("ana", ["上海"], ["fact"], 10) == []  # the archived fact stays unsearched
        assert "北京首都机场" in memory.recall("北京机场", user="ana", track=False).context
    conn = sqlite3.connect(home / "reverie.db")
    assert conn.execute("SELECT rowid, text, owner FROM facts_fts WHERE text NOT GLOB '*[一-鿿]*'").fetchall() == untouched
    assert conn.execute("SELECT text FROM episodes_fts ORDER BY rowid").fetchall() == [
        ("ana 3月5日 牙医 3月",), ("ana 4月18日 有个 面试 4月",)]
    conn.close()


def test_a_sqlite_store_of_schema_12_learns_the_days_its_episodes_speak_of_on_upgrade(tmp_path):
    home, monday = tmp_path / "home", datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    with Memory(home, background=False) as memory:
        dentist = memory.add([{"speaker": "ana", "content": "Dentist on Friday at 3pm"}], user="ana", thread="t",
                             at=monday)[0].id
        memory.add([{"speaker": "ana", "content": "Nothing planned"}], user="ana", thread="t", at=monday)
    conn = sqlite3.connect(home / "reverie.db")  # as schema 12 left it: no index of the days spoken of
    conn.execute("DROP TABLE mentions")
    conn.execute("UPDATE schema_version SET version = 12")
    conn.commit()
    conn.close()
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == 13
        friday = datetime(2026, 12, 4).date()
        assert [e.id for e in memory.store.mentioning("ana", friday, friday, 10)] == [dentist]
        assert "Dentist on Friday" in memory.recall("what do I have tomorrow?", user="ana",
                                                    at=monday + timedelta(days=3), track=False).context


def test_store_from_a_newer_reverie_is_refused(tmp_path):
    SQLiteStore(tmp_path / "r.db").close()
    conn = sqlite3.connect(tmp_path / "r.db")
    conn.execute("UPDATE schema_version SET version = 999")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(tmp_path / "r.db")


# ---------------------------------------------------------------- PostgreSQL only


def test_postgres_store_from_a_newer_reverie_is_refused():
    name, url = new_schema()
    try:
        store = PostgresStore(url)
        store._do("UPDATE schema_version SET version = 999")
        store.close()
        with pytest.raises(StoreError, match="newer"):
            PostgresStore(url)
    finally:
        drop_schema(name)


def test_postgres_tables_and_indexes_lead_with_the_user_id(pg_url):
    store = PostgresStore(pg_url)
    keys = store._q(
        "SELECT t.relname, array_agg(a.attname ORDER BY k.n) FROM pg_index i "
        "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace s ON s.oid = t.relnamespace "
        "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
        "WHERE s.nspname = %s AND i.indisprimary GROUP BY t.relname",
        (store.schema,),
    )
    per_user = {table: cols for table, cols in keys if table not in ("meta",)}
    assert len(per_user) >= 15
    assert all(cols[0] == "user_id" for cols in per_user.values()), per_user
    # every other index a user's reads go through leads with the user id too (reads by an id
    # or a key's hash alone have plain indexes of their own)
    indexes = dict(store._q("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (store.schema,)))
    for name, definition in indexes.items():
        if not name.endswith(("_pkey", "_by_id", "_by_hash")):
            assert "(user_id, " in definition, definition
    assert "terms_newest" in indexes and "INCLUDE (tf, doc_len)" in indexes["terms_newest"]
    assert not [d for d in indexes.values() if " gin " in d]  # full text reads terms_newest alone
    store.close()


def test_an_unreachable_postgres_server_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL at postgresql://reverie:\\*\\*\\*@127.0.0.1:1/x"):
        PostgresStore("postgresql://reverie:secret@127.0.0.1:1/x", timeout=1)


def test_without_the_extra_the_error_names_it(tmp_path):
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from reverie import Memory, StoreError\n"
        "try:\n    Memory(sys.argv[1], store='postgresql://x@127.0.0.1/db')\n"
        "except StoreError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert "pip install 'reverie[postgres]'" in out.stdout, out.stderr


def test_learning_claims_are_leased_debounced_and_never_shared(pg_url):
    store = PostgresStore(pg_url)
    eps = [Episode(user="ana", thread="t", status="completed", messages=[Message(content=f"m{n}")]) for n in range(3)]
    eps.append(Episode(user="bob", thread="t", status="completed", messages=[Message(content="b")]))
    for ep in eps:
        store.put_episode(ep)
    assert store.claim_learning("r1", lease_seconds=60, debounce_seconds=30, limit=100) == []  # still quiet-waiting
    first = store.claim_learning("r1", lease_seconds=60, debounce_seconds=0, limit=100)
    second = store.claim_learning("r2", lease_seconds=60, debounce_seconds=0, limit=100)
    assert {r.id for r in first} == {e.id for e in eps[:3]} and [r.id for r in second] == [eps[3].id]
    assert store.claim_learning("r3", lease_seconds=60, debounce_seconds=0, limit=100) == []
    store.mark_learned([first[0].id])
    store.release_learning("r1", [r.id for r in first[1:]], error="engine down", retry_base=0.5)
    assert store.claim_learning("r3", lease_seconds=60, debounce_seconds=0, limit=100) == []  # waits to retry
    time.sleep(0.7)
    again = store.claim_learning("r3", lease_seconds=0.5, debounce_seconds=0, limit=100)
    assert {r.id for r in again} == {r.id for r in first[1:]}
    time.sleep(0.7)  # r3 died: its lease runs out
    taken = store.claim_learning("r4", lease_seconds=60, debounce_seconds=0, limit=100)
    assert {r.id for r in taken} == {r.id for r in first[1:]}
    store.close()


def test_claims_from_many_threads_hand_out_each_episode_once(pg_url):
    store = PostgresStore(pg_url)
    for n in range(40):
        store.put_episode(Episode(user=f"u{n % 8}", thread=f"t{n % 3}", status="completed",
                                  messages=[Message(content=f"m{n}")]))
    claimed: list[str] = []
    lock = threading.Lock()

    def claim(owner: str) -> None:
        while True:
            refs = store.claim_learning(owner, lease_seconds=60, debounce_seconds=0, limit=3)
            if not refs:
                return
            with lock:
                claimed.extend(r.id for r in refs)
            store.mark_learned([r.id for r in refs])  # learned: the thread's next episodes are free

    threads = [threading.Thread(target=claim, args=(f"r{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 40 and len(set(claimed)) == 40
    store.close()


def test_a_named_lock_holds_across_stores_and_dies_with_its_holder(pg_url):
    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    release = a.try_lock("dream:ana")
    assert release is not None
    assert b.try_lock("dream:ana") is None
    other = b.try_lock("dream:bob")
    assert other is not None
    other()
    release()
    again = b.try_lock("dream:ana")
    assert again is not None
    b.close()  # the holder goes away: its session and its lock end
    assert (third := a.try_lock("dream:ana")) is not None
    third()
    a.close()


def test_full_text_tokens_of_plain_index_text_are_its_words_as_the_tokenizer_reads_them():
    # index text is mostly ASCII words between single spaces and is then split as it is;
    # whatever else (capitals, punctuation, runs of spaces, diacritics, CJK, a huge word)
    # goes through the tokenizer's rules: both ways give what the tokenizer reads
    import random
    import re
    import string
    import unicodedata

    from reverie.store.base import MAX_LEXEME_BYTES, fts_tokens

    def tokenizer(text):
        bare = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
        words = re.split(r"[\W_]+", unicodedata.normalize("NFC", bare).lower())
        return [w for w in words if w and len(w.encode("utf-8")) <= MAX_LEXEME_BYTES]

    rng = random.Random(7)
    alphabet = string.ascii_lowercase + string.digits + "   _-'.,éÉ中文" + "AB"
    samples = ["", " ", "a  b", " lead", "trail ", "kayak trip", "x" * 3000 + " y", "Café au lait"]
    # at the longest token kept: a text within the limit is split as it is, a longer one filtered
    samples += ["x" * MAX_LEXEME_BYTES, "x" * (MAX_LEXEME_BYTES + 1), "a " + "x" * MAX_LEXEME_BYTES,
                "a " + "x" * (MAX_LEXEME_BYTES + 1) + " b", "a b " * (MAX_LEXEME_BYTES // 3)]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in samples:
        assert fts_tokens(text) == tokenizer(text), text


def test_a_sqlite_write_that_waits_out_the_busy_timeout_says_the_store_was_busy(tmp_path):
    store = SQLiteStore(tmp_path / "reverie.db", busy_timeout_ms=50)
    other = sqlite3.connect(tmp_path / "reverie.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        with pytest.raises(StoreBusy, match="busy, nothing was written; try again"):
            with store.transaction():
                store.put_fact(Fact(user="ana", content="likes tea"))
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.list_facts("ana") == []
    with store.transaction():
        store.put_fact(Fact(user="ana", content="likes tea"))
    assert [f.content for f in store.list_facts("ana")] == ["likes tea"]
    store.close()
