"""Models parsed for readers that do not change them (recall): kept beside their rows, handed
out again only for an equal row, on SQLite and PostgreSQL alike; and recall changes none."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from reverie import Memory
from reverie.models import Episode, Fact, Message, Note
from reverie.store import open_store
from reverie.store.parsed import ParsedRows


@pytest.fixture
def store(store_url):
    opened = open_store(store_url)
    yield opened
    opened.close()


def _parse(row):  # type: ignore[no-untyped-def]
    return {"parsed": row[1]}


def _read(kept: ParsedRows, rows):  # type: ignore[no-untyped-def]
    return kept.parse("episode", rows, key=lambda r: r[0], size=lambda r: len(r[1]), parse=_parse)


def test_an_equal_row_gives_back_the_kept_model_and_a_changed_one_is_parsed_again():
    kept = ParsedRows(max_chars=1000)
    first = _read(kept, [("a", "body one"), ("b", "body two")])
    again = _read(kept, [("a", "body one"), ("b", "body 2")])
    assert again["a"] is first["a"]
    assert again["b"] is not first["b"] and again["b"] == {"parsed": "body 2"}
    assert (kept.hits, kept.misses) == (1, 3)


def test_the_kept_rows_stay_within_their_bound_oldest_out_first():
    kept = ParsedRows(max_chars=100)
    for n in range(20):
        _read(kept, [(f"id{n}", "x" * 10)])
    assert kept.chars <= 100 and len(kept) == 10
    assert _read(kept, [("id19", "x" * 10)])["id19"] is _read(kept, [("id19", "x" * 10)])["id19"]
    misses = kept.misses
    _read(kept, [("id0", "x" * 10)])  # evicted long ago: parsed again
    assert kept.misses == misses + 1
    _read(kept, [("big", "y" * 11)])  # more than a tenth of the bound: parsed, never kept
    _read(kept, [("big", "y" * 11)])
    assert kept.misses == misses + 3


def _episode(text: str) -> Episode:
    when = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    return Episode(user="ana", thread="t", status="completed", occurred_at=when, completed_at=when,
                   messages=[Message(role="user", content=text)])


def test_shared_reads_reuse_models_until_their_row_changes(store):
    ep = _episode("we planted tulips")
    fact = Fact(user="ana", content="Ana grows tulips")
    note = Note(user="ana", date="2024-05-01", content="planted tulips", episodes=[ep.id])
    store.put_episode(ep)
    store.put_fact(fact)
    store.put_note(note)
    first = (store.get_episodes([ep.id], shared=True)[ep.id], store.get_facts([fact.id], shared=True)[fact.id],
             store.get_notes([note.id], shared=True)[note.id])
    again = (store.get_episodes([ep.id], shared=True)[ep.id], store.get_facts([fact.id], shared=True)[fact.id],
             store.get_notes([note.id], shared=True)[note.id])
    assert all(a is b for a, b in zip(first, again))
    # a plain read is always the caller's own, equal in content
    own = store.get_episodes([ep.id])[ep.id]
    assert own is not first[0] and own.model_dump() == first[0].model_dump()

    # a counter moved in its column (no JSON rewrite), and bodies rewritten
    store.touch("episode", [ep.id], datetime(2024, 6, 1, tzinfo=timezone.utc))
    fact.content = "Ana grows red tulips"
    store.put_fact(fact)
    note.content = "planted red tulips"
    store.put_note(note)
    episode = store.get_episodes([ep.id], shared=True)[ep.id]
    assert episode is not first[0] and episode.uses == first[0].uses + 1
    assert store.get_facts([fact.id], shared=True)[fact.id].content == "Ana grows red tulips"
    assert store.get_notes([note.id], shared=True)[note.id].content == "planted red tulips"


def test_a_row_another_store_rewrote_is_read_fresh(store, store_url):
    ep = _episode("we planted tulips")
    store.put_episode(ep)
    assert store.get_episodes([ep.id], shared=True)[ep.id].summary == ""
    other = open_store(store_url)  # another process's connection to the same store
    try:
        changed = other.get_episode(ep.id)
        assert changed is not None
        changed.summary = "tulips planted"
        other.put_episode(changed, reindex=False)
    finally:
        other.close()
    assert store.get_episodes([ep.id], shared=True)[ep.id].summary == "tulips planted"


def test_recall_changes_none_of_the_models_it_shares(home, backend):
    mem = Memory(home, background=False, store=backend, mirror_dir=home if backend else None)
    try:
        mem.add([{"role": "user", "content": f"I went kayaking in Lisbon with Noor on day {n}. We loved it."}
                 for n in range(6)], user="ana", thread="t")
        mem.remember("Ana prefers kayaking to hiking", user="ana")
        mem.flush()
        for query in ("kayaking with Noor?", "What does Ana prefer?", "Lisbon", "day 3 kayaking"):
            mem.recall(query, user="ana", budget=300, track=False)
        kept = mem.store._parsed  # type: ignore[attr-defined]
        assert kept.hits > 0 and len(kept) > 0
        for (kind, item_id), (_, model, _) in list(kept._items.items()):
            fresh = {"episode": mem.store.get_episodes, "fact": mem.store.get_facts, "note": mem.store.get_notes}[kind]
            assert fresh([item_id])[item_id].model_dump() == model.model_dump(), (kind, item_id)
    finally:
        mem.close()
