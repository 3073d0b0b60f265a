"""Issue 11: the paths that keep learning bounded as a user's memory grows behave like the
small-store paths they replace."""

from __future__ import annotations

import sqlite3
from datetime import date, datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie import Memory
from reverie.facts import FULL_SCAN_FACTS, RELATED_FACTS
from reverie.models import Fact, Note, Provenance
from reverie.tags import TagWriter
from reverie.store.base import query_tokens, strength
from reverie.store.sqlite import MIGRATIONS
from reverie.text import terms

WORDS = [f"{a}{b}" for a in ("kayak", "violin", "garden", "pottery", "tennis", "sushi", "chess", "opera")
         for b in ("club", "lesson", "trip", "shop", "night", "book", "class", "team", "camp", "fund")]


def fill(mem: Memory, n: int) -> None:
    with mem.store.transaction():
        for i in range(n):
            mem.ctx.facts.index_fact(Fact(user="ana", content=f"Joined the {WORDS[i % len(WORDS)]} number {i}",
                                          status="consolidated", provenance=Provenance(origin="learned")), [])


def test_a_new_value_is_found_among_many_facts_through_the_index(mem):
    old = mem.remember("Takes 5 mg of melatonin", user="ana")
    fill(mem, FULL_SCAN_FACTS + 100)
    assert mem.store.count_facts("ana") > FULL_SCAN_FACTS
    new = mem.remember("Takes 10 mg of melatonin", user="ana")
    assert mem.fact(old.id).status == "archived" and new.supersedes == old.id
    again = mem.remember("takes 10 mg of melatonin!", user="ana")
    assert again.id == new.id and again.uses == 1


def test_related_facts_are_the_newest_sharing_a_term_oldest_first(bmem):
    mem = bmem
    fill(mem, 200)  # "kayakclub" is facts 0, 80 and 160, "chessteam" 67 and 147
    found = mem.store.related_facts("ana", terms("kayakclub"), 2)
    assert [f.content for f in found] == ["Joined the kayakclub number 80", "Joined the kayakclub number 160"]
    either = terms("kayakclub or chessteam")  # the newest three holding either word, oldest first
    assert [f.content.rsplit(" ", 1)[-1] for f in mem.store.related_facts("ana", either, 3)] == ["80", "147", "160"]
    assert [t.content.rsplit(" ", 1)[-1] for t in mem.store.fact_texts("ana", either, 3)] == ["80", "147", "160"]
    mem.forget(found[1].id, user="ana")  # an archived fact is no longer related to anything
    assert [f.content.rsplit(" ", 1)[-1] for f in mem.store.related_facts("ana", either, 3)] == ["67", "80", "147"]
    recent = mem.store.recent_facts("ana", 3)
    assert [f.content.rsplit(" ", 1)[-1] for f in recent] == ["197", "198", "199"]


def test_the_tag_index_is_read_again_when_another_writer_changed_the_live_tags(mem):
    with mem.turn("I started pottery classes in Kyoto", user="ana") as turn:
        turn.complete("Lovely.")
    mem.flush()
    index = mem.learner._live_tags("ana")
    assert len(index) == mem.store.count_tags("ana", status="active") > 0
    writer = TagWriter(mem.store, "ana")
    with mem.store.transaction():
        tag = writer.ensure(["ikebana"])[0]
        writer.set_status(mem.store.get_tags("ana", [tag])[tag], "active")
    assert "ikebana" in mem.learner._live_tags("ana")


def as_schema(home, version: int, *undo: str) -> None:  # type: ignore[no-untyped-def]
    """Make the home's store look as schema ``version`` left it: ``undo`` what came later."""
    conn = sqlite3.connect(home / "reverie.db")
    for statement in undo:
        conn.execute(statement)
    conn.execute("UPDATE schema_version SET version = ?", (version,))
    conn.commit()
    conn.close()


def test_a_store_written_by_the_previous_schema_opens_and_upgrades(home):
    with Memory(home, background=False) as memory:
        memory.remember("Prefers tea", user="ana")
    as_schema(home, 2, "DROP INDEX tags_user_status")
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert [f.content for f in memory.facts(user="ana")] == ["Prefers tea"]
    conn = sqlite3.connect(home / "reverie.db")
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tags_user_status'").fetchone()
    conn.close()


def test_a_store_of_schema_4_gets_its_tag_sizes_counted_on_upgrade(home):
    with Memory(home, background=False) as memory:
        for text in ("Tea in Kyoto with Mei", "More tea with Mei in Osaka", "Mei loves Kyoto"):
            memory.add([{"speaker": "Ana", "content": text}], user="ana", thread="t", group="message")
        memory.flush()
        sizes = memory.store.tag_counts("ana")
    assert sizes and max(sizes.values()) >= 2
    # as schema 4 left it: no sizes, no triggers
    as_schema(home, 4, "DROP TRIGGER item_tags_counted", "DROP TRIGGER item_tags_uncounted", "DROP TABLE tag_sizes")
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert memory.store.tag_counts("ana") == sizes
        tag = next(iter(sizes))
        memory.store.set_item_tags("ana", "episode", "ep_new", {tag: 1.0})  # the triggers count again
        assert memory.store.tag_counts("ana", [tag]) == {tag: sizes[tag] + 1}


def test_a_store_of_schema_5_gets_full_text_searched_by_user_on_upgrade(home):
    with Memory(home, background=False) as memory:
        for user in ("ana", "bob"):
            memory.add([{"speaker": "Ana", "content": f"{user} went kayaking on the fjord"}], user=user, thread="t",
                       group="message")
        before = {u: memory.recall("kayaking on the fjord", user=u, track=False).context for u in ("ana", "bob")}
    undo = []
    for fts, main in (("episodes_fts", "episodes"), ("facts_fts", "facts"), ("notes_fts", "notes"),
                      ("knowledge_fts", "knowledge")):  # as schema 5 left them: one column, every user's rows
        undo += [f"CREATE VIRTUAL TABLE {fts}_old USING fts5(text, tokenize='unicode61 remove_diacritics 2')",
                 f"INSERT INTO {fts}_old (rowid, text) SELECT rowid, text FROM {fts}",
                 f"DROP TABLE {fts}", f"ALTER TABLE {fts}_old RENAME TO {fts}"]
    as_schema(home, 5, *undo)
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert {u: memory.recall("kayaking on the fjord", user=u, track=False).context for u in ("ana", "bob")} == before
        hits = memory.store.search("ana", terms("kayaking fjord"), ["episode", "note"], 10)
        owners = {memory.episode(h.id).user for h in hits if h.kind == "episode"}
        assert hits and owners == {"ana"}
        memory.add([{"speaker": "Ana", "content": "More kayaking, on the lake this time"}], user="ana", thread="t",
                   group="message")
        assert len(memory.store.search("ana", terms("kayaking"), ["episode"], 10)) == 2  # new rows are owned too
        assert len(memory.store.search("bob", terms("kayaking"), ["episode"], 10)) == 1


def test_a_store_of_schema_6_reads_a_tags_newest_postings_from_one_index_on_upgrade(home):
    with Memory(home, background=False) as memory:
        for i in range(6):
            memory.add([{"speaker": "Ana", "content": f"Tea number {i} in Kyoto with Mei"}], user="ana", thread="t",
                       group="message")
        memory.flush()
        sizes = memory.store.tag_counts("ana")
        tag = max(sizes, key=lambda t: sizes[t])
        newest = memory.store.postings("ana", [tag], ["episode"], per_tag={tag: 3})
        before = memory.recall("tea in Kyoto", user="ana", track=False).context
    assert sizes[tag] >= 4 and len(newest) == 3
    # as schema 6 left it: no seq column, postings ordered through (user, tag) and the rowid
    as_schema(home, 6, "DROP TRIGGER item_tags_sequenced", "DROP INDEX item_tags_newest",
              "ALTER TABLE item_tags DROP COLUMN seq", "CREATE INDEX item_tags_recent ON item_tags(user, tag)")
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert memory.store.postings("ana", [tag], ["episode"], per_tag={tag: 3}) == newest
        assert memory.recall("tea in Kyoto", user="ana", track=False).context == before
        memory.store.set_item_tags("ana", "episode", "ep_new", {tag: 1.0})  # written now: the newest
        assert memory.store.postings("ana", [tag], ["episode"], per_tag={tag: 1})[0].id == "ep_new"
    conn = sqlite3.connect(home / "reverie.db")
    assert conn.execute("SELECT count(*) FROM item_tags WHERE seq IS NULL OR seq != rowid").fetchone()[0] == 0
    plan = " ".join(str(r) for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT seq, kind, item_id, tag, weight FROM item_tags WHERE user = 'ana' AND tag = ? "
        "AND kind IN ('episode') ORDER BY seq DESC LIMIT 3", (tag,)))
    assert "COVERING INDEX item_tags_newest" in plan
    conn.close()


def fts_text(home, fact_id: str) -> str:
    conn = sqlite3.connect(home / "reverie.db")
    row = conn.execute("SELECT f.text FROM facts_fts f JOIN facts m ON m.pk = f.rowid WHERE m.id = ?",
                       (fact_id,)).fetchone()
    conn.close()
    return row[0]


def test_an_archived_fact_holds_no_search_text_and_a_restored_one_is_found_again(mem):
    fact = mem.remember("Paddles a green kayak on weekends", user="ana")
    assert [h.id for h in mem.store.search("ana", ["kayak"], ["fact"], 5)] == [fact.id]
    mem.forget(fact.id, user="ana")
    assert mem.store.get_fact(fact.id).status == "archived"
    assert fts_text(mem.home, fact.id) == "" and mem.store.search("ana", ["kayak"], ["fact"], 5) == []
    restored = mem.store.get_fact(fact.id)
    restored.status = "consolidated"
    mem.store.put_fact(restored)
    assert "kayak" in fts_text(mem.home, fact.id)
    assert [h.id for h in mem.store.search("ana", ["kayak"], ["fact"], 5)] == [fact.id]


def test_a_store_of_schema_7_loses_its_archived_facts_search_text_on_upgrade(home):
    with Memory(home, background=False) as memory:
        kept = memory.remember("Paddles a green kayak on weekends", user="ana")
        gone = memory.remember("Paddles a red kayak on Sundays", user="ana")
        memory.forget(gone.id, user="ana")
    conn = sqlite3.connect(home / "reverie.db")  # as schema 7 left it: the archived fact's text indexed
    conn.execute("UPDATE facts_fts SET text = 'paddles a red kayak on sundays' WHERE rowid = "
                 "(SELECT pk FROM facts WHERE id = ?)", (gone.id,))
    conn.commit()
    conn.close()
    as_schema(home, 7)
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert [h.id for h in memory.store.search("ana", ["kayak"], ["fact"], 5)] == [kept.id]
    assert fts_text(home, gone.id) == "" and "kayak" in fts_text(home, kept.id)


def test_a_store_of_schema_8_reads_its_strongest_facts_from_an_index_on_upgrade(home):
    with Memory(home, background=False) as memory:
        weak = memory.remember("Likes green tea", user="ana", category="preference")
        strong = memory.remember("Never schedules calls before ten", user="ana", category="constraint")
        memory.store.touch("fact", [strong.id], strong.updated_at, by=40)
        before = [f.id for f in memory.store.strongest_facts("ana", ["preference", "constraint"], None, 5)]
    assert before == [strong.id, weak.id]
    # as schema 8 left it: no confidence or strength columns
    as_schema(home, 8, "DROP INDEX facts_strength", "ALTER TABLE facts DROP COLUMN strength",
              "ALTER TABLE facts DROP COLUMN confidence")
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        assert [f.id for f in memory.store.strongest_facts("ana", ["preference", "constraint"], None, 5)] == before
        plan = " ".join(str(r[-1]) for r in memory.store._x(
            "EXPLAIN QUERY PLAN SELECT strength, pk FROM facts WHERE user = 'ana' AND status IN ('consolidated') "
            "AND category IN ('preference') ORDER BY strength DESC, pk LIMIT 5").fetchall())
        assert "facts_strength" in plan and "TEMP B-TREE" not in plan  # read in order from the index
    conn = sqlite3.connect(home / "reverie.db")
    rows = dict(conn.execute("SELECT id, strength FROM facts").fetchall())
    conn.close()
    assert rows[strong.id] == strength(strong.confidence, 40) and rows[weak.id] == strength(weak.confidence, 0)


_SCHEMA_9_POSTINGS = (  # item_tags as schema 9 left it: keyed by tag first, with a (kind, item_id) index
    "CREATE TABLE item_tags_old (user TEXT NOT NULL, tag TEXT NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL, "
    "weight REAL NOT NULL DEFAULT 1.0, seq INTEGER, PRIMARY KEY (user, tag, kind, item_id))",
    "INSERT INTO item_tags_old (rowid, user, tag, kind, item_id, weight, seq) "
    "SELECT rowid, user, tag, kind, item_id, weight, seq FROM item_tags",
    "DROP TABLE item_tags",
    "ALTER TABLE item_tags_old RENAME TO item_tags",
    "CREATE INDEX item_tags_item ON item_tags(kind, item_id)",
    "CREATE INDEX item_tags_newest ON item_tags(user, tag, seq, kind, item_id, weight)",
    "CREATE TRIGGER item_tags_counted AFTER INSERT ON item_tags BEGIN INSERT INTO tag_sizes (user, tag, n) "
    "VALUES (new.user, new.tag, 1) ON CONFLICT (user, tag) DO UPDATE SET n = n + 1; END",
    "CREATE TRIGGER item_tags_uncounted AFTER DELETE ON item_tags BEGIN "
    "UPDATE tag_sizes SET n = n - 1 WHERE user = old.user AND tag = old.tag; END",
    "CREATE TRIGGER item_tags_sequenced AFTER INSERT ON item_tags WHEN new.seq IS NULL BEGIN "
    "UPDATE item_tags SET seq = new.rowid WHERE rowid = new.rowid; END",
)


def _postings_key(home) -> str:  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(home / "reverie.db")
    try:
        index = conn.execute("SELECT name FROM pragma_index_list('item_tags') WHERE origin = 'pk'").fetchone()[0]
        return ", ".join(r[0] for r in conn.execute(f"SELECT name FROM pragma_index_info('{index}') ORDER BY seqno"))
    finally:
        conn.close()


def test_a_store_of_schema_9_keys_its_postings_by_item_on_upgrade(home):
    with Memory(home, background=False) as memory:
        for i in range(6):
            memory.add([{"speaker": "Ana", "content": f"Tea number {i} in Kyoto with Mei"}], user="ana", thread="t",
                       group="message")
        memory.add([{"speaker": "Bob", "content": "Tea in Osaka with Mei"}], user="bob", thread="t", group="message")
        memory.flush()
        sizes = {u: memory.store.tag_counts(u) for u in ("ana", "bob")}
        tag = max(sizes["ana"], key=lambda t: sizes["ana"][t])
        newest = memory.store.postings("ana", [tag], ["episode"], per_tag={tag: 3})
        before = memory.recall("tea in Kyoto", user="ana", track=False).context
        rows = memory.store._x("SELECT rowid, user, tag, kind, item_id, weight, seq FROM item_tags ORDER BY rowid").fetchall()
    assert sizes["ana"][tag] >= 4 and len(newest) == 3
    as_schema(home, 9, *_SCHEMA_9_POSTINGS)
    assert _postings_key(home) == "user, tag, kind, item_id"
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        after = memory.store._x("SELECT rowid, user, tag, kind, item_id, weight, seq FROM item_tags ORDER BY rowid")
        assert [tuple(r) for r in after.fetchall()] == [tuple(r) for r in rows]  # every posting, rowid and seq kept
        assert {u: memory.store.tag_counts(u) for u in ("ana", "bob")} == sizes
        assert memory.store.postings("ana", [tag], ["episode"], per_tag={tag: 3}) == newest
        assert memory.recall("tea in Kyoto", user="ana", track=False).context == before
        # the triggers were made again on the new table: sizes counted, seq given
        memory.store.set_item_tags("ana", "episode", newest[0].id, {"matcha": 1.0})  # replaces that item's tags
        memory.store._x("INSERT INTO item_tags (user, tag, kind, item_id, weight) VALUES ('ana', 'matcha', 'fact', 'f1', 1)")
        assert memory.store.tag_counts("ana", [tag, "matcha"]) == {tag: sizes["ana"][tag] - 1, "matcha": 2}
        assert memory.store.postings("ana", ["matcha"], ["episode", "fact"], per_tag={"matcha": 1})[0].id == "f1"
        plan = " ".join(str(r[-1]) for r in memory.store._x(
            "EXPLAIN QUERY PLAN DELETE FROM item_tags WHERE user = 'ana' AND kind = 'episode' AND item_id IN ('a', 'b')"))
        assert "sqlite_autoindex_item_tags" in plan  # an item's postings found by the key, not by a scan
    assert _postings_key(home) == "user, kind, item_id, tag"
    conn = sqlite3.connect(home / "reverie.db")
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'item_tags'")}
    assert {"item_tags_newest", "item_tags_counted", "item_tags_uncounted", "item_tags_sequenced"} <= names
    assert "item_tags_item" not in names and "item_tags_by_item" not in names
    assert conn.execute("SELECT count(*) FROM item_tags WHERE seq IS NULL OR seq != rowid").fetchone()[0] == 0
    conn.close()


def test_a_store_of_schema_10_finds_the_same_knowledge_document_by_its_digest_on_upgrade(home):
    from reverie.store.base import knowledge_digest

    with Memory(home, background=False) as memory:
        docs = [memory.add_knowledge(f"Runbook {n}", f"- step {n}", user="ana") for n in range(3)]
        docs.append(memory.add_knowledge("Runbook 0", "- step 0", user="ana", scope="agent", agent="ops"))
    as_schema(home, 10, "DROP INDEX knowledge_user_digest", "ALTER TABLE knowledge DROP COLUMN digest")
    with Memory(home, background=False) as memory:
        assert memory.store.schema_version() == len(MIGRATIONS) == 13
        stored = dict(memory.store._x("SELECT id, digest FROM knowledge").fetchall())
        assert stored == {d.id: knowledge_digest(d) for d in docs}  # every document's digest, computed on upgrade
        assert memory.add_knowledge("Runbook 0", "- step 0", user="ana", scope="agent", agent="ops").id == docs[3].id
        assert memory.add_knowledge("Runbook 2", "- step 2", user="ana").id == docs[2].id
        assert len(memory.knowledge(user="ana")) == 4
        plan = " ".join(str(r[-1]) for r in memory.store._x(
            "EXPLAIN QUERY PLAN SELECT body FROM knowledge WHERE user = 'ana' AND digest = 'x' ORDER BY pk LIMIT 1"))
        assert "knowledge_user_digest" in plan  # one probe, not every document read


def test_a_new_store_keys_its_postings_by_item(home):
    with Memory(home, background=False) as memory:
        memory.store.set_item_tags("ana", "episode", "ep_1", {"tea": 1.0, "kyoto": 0.5})
    assert _postings_key(home) == "user, kind, item_id, tag"


def test_postings_a_tag_merge_moves_are_ordered_too(mem):
    mem.store.set_item_tags("ana", "episode", "ep_1", {"tea": 1.0})
    mem.store.set_item_tags("ana", "episode", "ep_2", {"teas": 1.0})
    assert mem.store.retag("ana", "teas", "tea") == 1  # a merge moves postings by INSERT ... SELECT
    found = mem.store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 5})
    assert {p.id for p in found} == {"ep_1", "ep_2"}
    conn = sqlite3.connect(mem.home / "reverie.db")
    assert conn.execute("SELECT count(*) FROM item_tags WHERE seq IS NULL OR seq != rowid").fetchone()[0] == 0
    conn.close()


def test_search_past_the_window_keeps_old_memories_named_by_a_rare_word(bmem, monkeypatch):
    from reverie.store import postgres, sqlite

    mem = bmem
    old = mem.add([{"speaker": "Ana", "content": "Our trip to the quokka island was the best trip"}], user="ana",
                  thread="t", group="message")[0]
    mem.add([{"speaker": "Ana", "content": f"Another trip story number {i} about the weather"} for i in range(30)],
            user="ana", thread="t", group="message")
    query = terms("trip to see the quokka")
    full = {h.id for h in mem.store.search("ana", query, ["episode"], 5)}
    for store in (sqlite, postgres):
        monkeypatch.setattr(store, "SEARCH_WINDOW", 10)  # 31 episodes say "trip": past the window
    windowed = mem.store.search("ana", query, ["episode"], 5)
    assert old.id in full and old.id == windowed[0].id
    assert len(windowed) == 5 and all(h.score > 0 for h in windowed)
    # the rest of the five are among the ten newest "trip" stories (numbers 20 to 29): the window
    numbers = [int(mem.episode(h.id).messages[0].content.split("number ")[1].split()[0]) for h in windowed[1:]]
    assert all(n >= 20 for n in numbers), numbers


def test_an_old_memory_a_rare_word_finds_is_ranked_by_every_query_word_it_holds(bmem, monkeypatch):
    # past the window the newest "trip" stories leave out the old ones; "quokka" finds them
    # again, and the one that says "trip" too scores as it would with every match ranked
    from reverie.store import postgres, sqlite

    mem = bmem
    both = mem.add([{"speaker": "Ana", "content": "Our trip to the quokka island was the best trip"}], user="ana",
                   thread="t", group="message")[0]
    rare = mem.add([{"speaker": "Ana", "content": "A quokka smiled at me on the ferry"}], user="ana",
                   thread="t", group="message")[0]
    mem.add([{"speaker": "Ana", "content": f"Another trip story number {i} about the weather"} for i in range(30)]
            + [{"speaker": "Ana", "content": f"Weather report number {i}, rain again"} for i in range(60)],
            user="ana", thread="t", group="message")
    query = terms("trip to see the quokka")
    full = {h.id: h.score for h in mem.store.search("ana", query, ["episode"], 40)}
    for store in (sqlite, postgres):
        monkeypatch.setattr(store, "SEARCH_WINDOW", 10)  # 30 newer episodes say "trip": past the window
    windowed = {h.id: h.score for h in mem.store.search("ana", query, ["episode"], 5)}
    assert windowed[both.id] == pytest.approx(full[both.id], rel=1e-9)
    assert windowed[rare.id] == pytest.approx(full[rare.id], rel=1e-9)
    assert sorted(windowed, key=windowed.__getitem__)[-2:] == sorted([both.id, rare.id], key=full.__getitem__)

def _says_what_it_holds(store, user, query, hits):
    """Every hit whose ``held`` is given holds just those of the query's tokens (as the
    index reads its text); the hits that leave it to the index."""
    wanted = set(query_tokens(query))
    unknown = []
    for hit in hits:
        text = store.index_tokens(hit.kind, user, [hit.id])[hit.id]
        if hit.held is None:
            unknown.append(hit)
        else:
            assert set(hit.held) == wanted & text, (hit, wanted & text)
    return unknown


def test_a_hit_says_which_query_tokens_its_text_holds(bmem, monkeypatch):
    from reverie.store import postgres, sqlite

    mem = bmem
    mem.add([{"speaker": "Ana", "content": "Our trip to the quokka island was the best trip"}], user="ana",
            thread="t", group="message")
    mem.add([{"speaker": "Ana", "content": f"Another trip story number {i} about the weather"} for i in range(30)],
            user="ana", thread="t", group="message")
    mem.store.put_note(Note(user="ana", date="2024-05-01", content="a quokka trip, and rain"))
    mem.store.put_note(Note(user="ana", date="2024-05-02", content="quokka photos"))
    for i in range(12):
        mem.store.put_note(Note(user="ana", date=f"2024-06-{i + 1:02d}", content=f"trip planning {i}"))
    query = terms("trip to see the quokka island")
    hits = mem.store.search("ana", query, ["episode", "note"], 40)
    assert {h.kind for h in hits} == {"episode", "note"}
    assert _says_what_it_holds(mem.store, "ana", query, hits) == []  # every match ranked: each says
    for store in (sqlite, postgres):
        monkeypatch.setattr(store, "SEARCH_WINDOW", 10)  # past the window: the rare word's old rows too
    hits = mem.store.search("ana", query, ["episode", "note"], 40)
    unknown = _says_what_it_holds(mem.store, "ana", query, hits)
    # a store may leave an old note to the index (its common words were not read for it),
    # never a match of the window
    assert {h.kind for h in unknown} <= {"note"}
    assert any(h.held is not None and {"quokka", "island"} <= h.held for h in hits if h.kind == "episode")


def test_coverage_is_the_same_whether_the_search_says_what_a_match_holds(bmem):
    from reverie.recall import _Candidate, _cover

    mem = bmem
    mem.add([{"speaker": "Ana", "content": f"Ana and Jon went to the {place} with the kids"}
             for place in ("lake", "city museum", "lake house", "old city")], user="ana", thread="t", group="message")
    query = terms("Which city did Jon visit with Ana?")
    hits = mem.store.search("ana", query, ["episode"], 10)
    assert len(hits) == 4 and all(h.held is not None for h in hits)

    def covered(with_held: bool) -> dict[str, float]:
        pool = [_Candidate(h.kind, h.id, text_score=h.score, held=h.held if with_held else None) for h in hits]
        _cover(mem.store, "ana", query, pool, frozenset({"jon"}))
        return {c.id: c.text_score for c in pool}

    said, read = covered(True), covered(False)
    assert said == read
    assert len(set(said.values())) > 1  # the words held tell the matches apart


def test_search_looks_up_the_windows_best_until_enough_are_the_users_live_rows(mem):
    # bob holds most facts, so his search reads the index without naming him: the best
    # matches are ana's and his archived facts, and the rows are looked up a batch at a time
    store = mem.store
    facts = [Fact(user="ana", content="kayak kayak kayak kayak", status="consolidated") for _ in range(2)]
    facts += [Fact(user="bob", content=f"kayak kayak kayak trip {i}", status="archived") for i in range(6)]
    facts += [Fact(user="bob", content=f"kayak trip {i} with friends", status="consolidated") for i in range(6)]
    for fact in facts:
        store.put_fact(fact)
    assert store._owner("fact", "bob") is None
    hits = store.search("bob", ["kayak"], ["fact"], 3)
    live = {f.id for f in facts[8:]}
    assert len(hits) == 3 and {h.id for h in hits} <= live
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the same three as ranking all of bob's live matches
    every = store.search("bob", ["kayak"], ["fact"], 20)
    assert {h.id for h in every} == live and [h.id for h in every[:3]] == [h.id for h in hits]


def test_full_text_names_the_owner_only_for_a_user_who_holds_a_minority_of_the_rows(mem):
    mem.add([{"speaker": "Ana", "content": "ana paddled the kayak on the fjord"}], user="ana", thread="t",
            group="message")
    mem.add([{"speaker": "Bob", "content": f"bob paddled the kayak, trip {i}"} for i in range(9)], user="bob",
            thread="t", group="message")
    store = mem.store
    assert store._owner("episode", "ana") == "ana"  # 1 row of 10: the query names her
    assert store._owner("episode", "bob") is None  # 9 of 10: the join keeps his rows
    for user, count in (("ana", 1), ("bob", 9)):
        hits = store.search(user, terms("paddled the kayak"), ["episode"], 20)
        assert len(hits) == count and {mem.episode(h.id).user for h in hits} == {user}


def _traced(store):
    """The statements ``store``'s connection in this thread runs from now on."""
    seen: list[str] = []
    store._conn().set_trace_callback(seen.append)
    return seen


def _counts(statements):
    """The word counts among ``statements`` (see SQLiteStore._holds_few)."""
    return [s for s in statements if s.startswith("SELECT count(*) FROM (SELECT rowid FROM episodes_fts")]


def _fresh_search(mem, query, limit):
    """ana's episodes ``query`` finds through a store opened anew (no word count known)."""
    from reverie.store.sqlite import SQLiteStore

    fresh = SQLiteStore(mem.home / "reverie.db")
    try:
        return fresh.search("ana", query, ["episode"], limit)
    finally:
        fresh.close()


def test_a_words_count_is_read_again_only_when_rows_added_since_could_have_made_it_common(mem, monkeypatch):
    from reverie.store import sqlite

    monkeypatch.setattr(sqlite, "SEARCH_WINDOW", 10)
    store = mem.store
    old = mem.add([{"speaker": "Ana", "content": "Our trip to the quokka island"}], user="ana", thread="t",
                  group="message")[0]
    mem.add([{"speaker": "Ana", "content": f"Another trip story number {i}"} for i in range(12)], user="ana",
            thread="t", group="message")
    query = terms("trip to see the quokka")
    seen = _traced(store)
    first = store.search("ana", query, ["episode"], 5)
    counted = _counts(seen)
    assert len(counted) == 2  # "trip" and "quokka", each counted once
    seen.clear()
    assert store.search("ana", query, ["episode"], 5) == first
    assert not _counts(seen)  # nothing added: both known
    # five more rows: "quokka" (1 row) cannot have passed the window of 10; "trip" stays past it
    mem.add([{"speaker": "Ana", "content": f"Rain again, day {i}"} for i in range(5)], user="ana", thread="t",
            group="message")
    seen.clear()
    store.search("ana", query, ["episode"], 5)
    assert not _counts(seen)
    # ten more could all say "quokka": it is counted again
    mem.add([{"speaker": "Ana", "content": f"A quokka photo, number {i}"} for i in range(10)], user="ana",
            thread="t", group="message")
    seen.clear()
    hits = store.search("ana", query, ["episode"], 30)
    counted = _counts(seen)
    assert len(counted) == 1 and '"quokka"' in counted[0]  # the statement as run, its word bound
    assert old.id in {h.id for h in first}  # while "quokka" was rare, its old memory was found
    assert _fresh_search(mem, query, 30) == hits  # what a store that knows no count finds


def test_rewriting_a_searched_row_makes_every_word_count_be_read_again(mem, monkeypatch):
    # a rewritten row keeps its rowid, so the rows added since do not bound what it now says
    from reverie.store import sqlite

    monkeypatch.setattr(sqlite, "SEARCH_WINDOW", 3)
    store = mem.store
    episodes = mem.add([{"speaker": "Ana", "content": f"Another trip story number {i}"} for i in range(4)],
                       user="ana", thread="t", group="message")
    mem.add([{"speaker": "Ana", "content": "The quokka island"}], user="ana", thread="t", group="message")
    query = terms("trip quokka")
    store.search("ana", query, ["episode"], 5)
    seen = _traced(store)
    store.search("ana", query, ["episode"], 5)
    assert _counts(seen) == []
    for ep in episodes[:3]:  # three old rows now say "quokka" too: four in all, past the window of 3
        ep.messages[0].content += " with a quokka"
        store.put_episode(ep)
    seen.clear()
    hits = store.search("ana", query, ["episode"], 5)
    assert len(_counts(seen)) == 2
    assert _fresh_search(mem, query, 5) == hits


def test_a_query_of_words_known_to_be_rare_is_ranked_over_all_its_matches_at_once(mem, monkeypatch):
    from reverie.store import sqlite

    monkeypatch.setattr(sqlite, "SEARCH_WINDOW", 10)
    store = mem.store
    mem.add([{"speaker": "Ana", "content": f"A quokka story, number {i}"} for i in range(6)]
            + [{"speaker": "Ana", "content": f"The ferry to the island, trip {i}"} for i in range(6)],
            user="ana", thread="t", group="message")
    query = terms("quokka ferry")  # 12 matches: past the window of 10, but each word is in 6
    first = store.search("ana", query, ["episode"], 20)
    seen = _traced(store)
    again = store.search("ana", query, ["episode"], 20)
    reads = [s for s in seen if "bm25(episodes_fts" in s]
    assert len(reads) == 1 and "LIMIT" not in reads[0]  # one read of every match, no window
    assert again == first and len(first) == 12


def test_the_own_bm25_of_a_large_table_gives_fts5s_very_scores_and_hits(mem, monkeypatch):
    # a large table is ranked by reverie (FTS5's bm25() walks every query word's doclist);
    # below the size FTS5 ranks: both must give the same doubles, so the same hits
    from reverie.store import sqlite

    store = mem.store
    talk = ["The kayak trip to the lake with Ana", "Ana's kayak, the kayak club and the lake again",
            "Jon paddled; a quokka watched the ferry", "Weather report: rain, rain and more rain",
            "我们周末去爬山，看日出", "Café au lait at the e-mail café with Jon", "Nothing about boats here"]
    mem.add([{"speaker": "Ana", "content": t} for t in talk], user="ana", thread="t", group="message")
    mem.add([{"speaker": "Bob", "content": t} for t in talk[:4]], user="bob", thread="t", group="message")
    for user, texts in (("ana", talk), ("bob", talk[:4])):
        for text in texts:
            store.put_fact(Fact(user=user, content=text, status="consolidated"))
    queries = ["kayak lake", "rain kayak quokka ferry", "爬山 日出", "e-mail café", "ana kayak kayak", "boats"]
    kinds = ["episode", "fact"]
    for user in ("ana", "bob"):
        monkeypatch.setattr(sqlite, "OWN_BM25_ROWS", 10**9)
        monkeypatch.setattr(sqlite, "OWN_BM25_FACT_ROWS", 10**9)
        store._counts.clear()
        by_fts5 = {q: store.search(user, terms(q), kinds, 20) for q in queries}
        monkeypatch.setattr(sqlite, "OWN_BM25_ROWS", 0)
        monkeypatch.setattr(sqlite, "OWN_BM25_FACT_ROWS", 0)
        store._counts.clear()
        seen = _traced(store)
        own = {q: store.search(user, terms(q), kinds, 20) for q in queries}
        assert not [s for s in seen if "bm25(" in s]  # ranked here, not by FTS5
        assert own == by_fts5  # ids and scores, to the last bit
        found = {q for q, hits in by_fts5.items() if hits}
        assert found == (set(queries) if user == "ana" else {"kayak lake", "rain kayak quokka ferry", "ana kayak kayak"}), found
    # rows added since are counted into the kept document counts, not counted again
    mem.add([{"speaker": "Ana", "content": "One more kayak on the lake"}], user="ana", thread="t", group="message")
    seen.clear()
    hits = store.search("ana", terms("kayak lake"), ["episode"], 20)
    assert any("rowid > " in s for s in seen)
    monkeypatch.setattr(sqlite, "OWN_BM25_ROWS", 10**9)
    assert store.search("ana", terms("kayak lake"), ["episode"], 20) == hits


_WORDS = ["rain", "kayak", "lake", "ana", "rainy", "ra", "in", "7", "lake7"]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12), min_size=1, max_size=30),
    query=st.lists(st.sampled_from(_WORDS + ["absent"]), min_size=1, max_size=4, unique=True),
    long_row=st.booleans(),
)
def test_plain_rows_are_scored_without_splitting_to_the_same_doubles(rows, query, long_row):
    # a window of plain index text is scored from counts of " term " in the padded row;
    # repeated words side by side ("rain rain"), words inside others ("rainy", "ra"), a row
    # past MAX_LEXEME_BYTES: the same doubles as splitting every row into tokens
    from reverie.store.sqlite import MAX_LEXEME_BYTES, _plain_rows, _plain_scores, _token_scores

    found = [(i, " ".join(words)) for i, words in enumerate(rows, start=1)]
    if long_row:
        found.append((len(found) + 1, " ".join(["rain", "x" * (MAX_LEXEME_BYTES + 5), "rain", "lake"])))
    words = [(1.0 + 0.37 * n, term) for n, term in enumerate(query)]
    assert _plain_rows(found)
    assert _plain_scores(found, words, 6.5) == _token_scores(found, list(words), 6.5)


def test_a_window_with_any_other_text_is_not_plain():
    from reverie.store.sqlite import _plain_rows

    assert _plain_rows([(1, "kayak lake"), (2, "rain rain")])
    for other in ["Kayak lake", "kayak  lake", " kayak", "kayak ", "café", "e-mail", "", None, "爬山"]:
        assert not _plain_rows([(1, "kayak lake"), (2, other)]), other
    assert not _plain_rows([])


def test_fts5s_averages_record_holds_the_rows_and_tokens_bm25_reads(mem):
    mem.add([{"speaker": "Ana", "content": f"kayak trip number {i}"} for i in range(5)], user="ana", thread="t",
            group="message")
    store = mem.store
    rows, tokens = store._averages("episodes_fts")
    conn = store._conn()
    assert rows == conn.execute("SELECT count(*) FROM episodes_fts").fetchone()[0] == 5
    texts = conn.execute("SELECT text, owner FROM episodes_fts").fetchall()
    from reverie.store.base import fts_tokens

    assert tokens == sum(len(fts_tokens(t)) + len(fts_tokens(o)) for t, o in texts)


def test_a_batch_judges_new_facts_against_what_it_wrote_before_them(mem):
    """Within ``judging`` the judge reads a user's live facts from memory: a fact the batch
    wrote is met by the next, one it archived is not, and past FULL_SCAN_FACTS the store's
    related facts take over."""
    facts, writer = mem.ctx.facts, TagWriter(mem.store, "ana")

    def learned(text: str) -> Fact:
        return Fact(user="ana", content=text, status="pending", provenance=Provenance(origin="learned"))

    with mem.store.transaction(), facts.judging():
        first = facts.add_fact(writer, learned("Lives in Lisbon"), [])
        moved = facts.add_fact(writer, learned("Lives in Berlin"), [])  # contradicts the fact just written
        assert mem.store.get_fact(first.id).status == "archived" and moved.supersedes == first.id
        again = facts.add_fact(writer, learned("lives in Berlin!"), [])
        assert again.id == moved.id and again.uses == 1
        assert [t.id for t in facts.comparable(learned("Lives in Porto"))] == [moved.id]
    fill(mem, FULL_SCAN_FACTS)
    with mem.store.transaction(), facts.judging():
        assert facts.comparable(learned("Lives in Porto")) == [t for t in mem.store.fact_texts("ana") if "Lives" in t.content]
        facts.add_fact(writer, learned("Plays the oboe on Sundays"), [])  # past FULL_SCAN_FACTS now
        newest = mem.store.fact_texts("ana", terms("Joined the chessclub"), RELATED_FACTS)
        assert facts.comparable(learned("Joined the chessclub")) == newest
    assert mem.store.count_facts("ana") == FULL_SCAN_FACTS + 2


def test_the_learning_lines_index_of_live_tags_follows_what_a_batch_retired(mem, monkeypatch):
    """A batch that deprecates an active tag takes it out of the index of live tags kept
    between batches: the next batch finds the index in step with the store and does not
    read every tag again."""
    import reverie.tags

    said = ["I went kayaking on the river with Ana today", "We paddled the kayak down the river again",
            "The kayak club meets by the river on Sundays"]
    mem.add([{"role": "user", "content": said[0]}], user="ana")
    mem.flush(user="ana")
    index = mem.learner._tag_index["ana"]
    assert len(index) == mem.store.count_tags("ana", status="active") > 0
    name = next(n for n in index.names if "river" in n)
    monkeypatch.setattr(reverie.tags, "GENERIC_TAGS", reverie.tags.GENERIC_TAGS | {name})  # now a word to retire
    reads: list[object] = []
    whole = mem.store.list_tags
    monkeypatch.setattr(mem.store, "list_tags", lambda *a, **k: reads.append(a) or whole(*a, **k))
    for text in said[1:]:
        mem.add([{"role": "user", "content": text}], user="ana")
        mem.flush(user="ana")
    assert mem.store.get_tags("ana", [name])[name].status == "deprecated"
    assert name not in mem.learner._tag_index["ana"] and reads == []
    assert len(mem.learner._tag_index["ana"]) == mem.store.count_tags("ana", status="active")


def test_a_search_looks_up_its_best_rows_best_first_in_growing_batches():
    # ties go to the older row; the first batch is the limit and a quarter, then twice the limit
    from reverie.store.base import best_first

    ranked = {pk: float(pk % 7) for pk in range(1, 301)}
    batches = list(best_first(ranked, 40))
    assert [len(b) for b in batches] == [51, 80, 80, 80, 9]
    flat = [pk for batch in batches for pk in batch]
    assert flat == sorted(ranked, key=lambda pk: (-ranked[pk], pk))
    assert list(best_first({}, 40)) == []


def test_a_shallow_recall_does_not_search_the_daily_notes_it_would_not_deliver(mem):
    mem.add([{"role": "user", "content": "We booked the kayak trip to Lake Bled for June"},
             {"role": "assistant", "content": "Lake Bled in June sounds lovely"}], user="ana", thread="t")
    mem.flush()
    assert mem.store.note_lines("ana", mem.episodes(user="ana")[0].occurred_at.date().isoformat())
    seen = _traced(mem.store)
    shallow = mem.recall("kayak trip?", user="ana", track=False)
    assert shallow.route == "shallow"
    assert not [s for s in seen if "notes_fts" in s] and shallow.items
    seen.clear()
    medium = mem.recall("what did we plan for the kayak trip to Lake Bled last month?", user="ana", track=False)
    assert medium.route == "medium"
    assert [s for s in seen if "notes_fts" in s]  # a medium answer may deliver a note: searched


def test_the_episodes_that_spoke_of_a_day_are_read_from_the_index_of_days_not_from_every_episode(mem):
    monday = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    for n in range(30):
        mem.add([{"role": "user", "content": f"Dentist on Friday, and the {WORDS[n]} after"}], user="ana", at=monday)
    mem.flush()
    statements: list[str] = []
    conn = mem.store._conn()
    conn.set_trace_callback(statements.append)
    try:
        found = mem.store.mentioning("ana", date(2026, 12, 4), date(2026, 12, 4), 5)
    finally:
        conn.set_trace_callback(None)
    assert len(found) == 5
    read = next(s for s in statements if "FROM mentions" in s)
    plan = " ".join(str(r["detail"]) for r in conn.execute(f"EXPLAIN QUERY PLAN {read}"))
    # every episode reached by its key from the index of days: none scanned, none through the
    # store-wide status index (a scan of every completed episode, 7 ms at 100k for no day at all)
    assert "mentions_user_day" in plan and "SCAN episodes" not in plan and "episodes_status" not in plan
