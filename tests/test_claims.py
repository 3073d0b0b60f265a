"""One judge of duplicates and contradictions between one-line statements."""

from __future__ import annotations

import pytest

from reverie.claims import fact_relation


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


def test_learning_a_contrary_preference_archives_the_old_one(mem):
    old = mem.remember("Prefers vim for editing", user="ana", category="preference")
    with mem.turn("I prefer emacs over vim for all editing now", user="ana") as turn:
        turn.complete("Noted.")
    mem.flush()
    assert mem.fact(old.id).status == "archived"
    live = [f.content for f in mem.facts(user="ana")]
    assert any("emacs" in c.lower() for c in live) and not any(c == "Prefers vim for editing" for c in live)
