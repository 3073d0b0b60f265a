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
