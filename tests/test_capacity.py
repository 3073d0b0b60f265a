"""Issue 9.3: capacity keeps the injected block small; it never loses what a person said.

Facts stored with remember() (REST POST /facts, MCP remember) or import are never
evicted; learned facts past ``fact_capacity`` are archived by rank, journaled
(undo brings them back), and reported by ``health``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from reverie import Memory
from reverie.models import Fact, Provenance, utcnow

WORDS = ("apples bikes cameras drums easels flutes guitars hammocks igloos jackets kites lanterns mandolins "
         "notebooks oboes pianos quilts rackets saxophones tents ukuleles violins wagons xylophones yachts").split()


@pytest.fixture
def small(home):
    with Memory(home, background=False, fact_capacity=10) as memory:
        yield memory


def learned(memory: Memory, n: int, *, uses: int = 0) -> list[Fact]:
    """n consolidated facts as the learning line leaves them (origin learned)."""
    now = utcnow()
    out = []
    with memory.store.transaction():
        for i in range(n):
            fact = Fact(user="ana", content=f"Learned to repair {WORDS[i]}", status="consolidated",
                        uses=uses, provenance=Provenance(origin="learned"), created_at=now - timedelta(days=i),
                        updated_at=now - timedelta(days=i))
            memory.ctx.facts.index_fact(fact, [])
            out.append(fact)
    return out


def learn_something(memory: Memory) -> None:
    with memory.turn("I decided to move the team standup to Tuesdays", user="ana") as turn:
        turn.complete("Noted.")
    memory.flush()


def test_facts_a_person_stated_are_never_evicted(small):
    stated = [small.remember(f"Owns several {word}", user="ana").id for word in WORDS]
    learn_something(small)
    live = {f.id for f in small.facts(user="ana", status="consolidated")}
    assert set(stated) <= live
    assert small.health(user="ana").evicted_over_capacity == 0


def test_imported_facts_are_never_evicted(small):
    small.import_({"version": 1, "facts": [{"content": f"Collects {word}"} for word in WORDS[:15]]}, user="ana")
    learn_something(small)
    assert len([f for f in small.facts(user="ana", status="consolidated") if f.provenance.origin == "import"]) == 15


def test_learned_facts_past_capacity_are_evicted_journaled_and_reported(small):
    stated = small.remember("Allergic to peanuts", user="ana", category="constraint")
    facts = learned(small, 14)
    learn_something(small)
    consolidated = small.facts(user="ana", status="consolidated")
    assert len(consolidated) == 10 and stated.id in {f.id for f in consolidated}
    archived = [f for f in small.facts(user="ana", status="archived") if f.archived_reason == "over capacity"]
    assert len(archived) >= 5
    report = small.health(user="ana")
    assert report.evicted_over_capacity == len(archived)
    assert report.last_eviction and any("over capacity" in a for a in report.advice)
    assert any("capacity of 10" in a for a in report.advice)
    undone = small.undo(report.last_eviction, user="ana")
    assert undone.restored == len(archived)
    assert {f.id for f in facts} <= {f.id for f in small.facts(user="ana", status="consolidated")}


def test_health_warns_near_capacity_before_anything_is_evicted(small):
    learned(small, 9)
    report = small.health(user="ana")
    assert report.capacity == 10 and report.evicted_over_capacity == 0
    assert any("capacity of 10" in a for a in report.advice)
