"""Ids a caller chooses (threads, agents, message ids) find their items again, and never
carry personal data into the store: one that holds what redaction strips becomes a
pseudonym keyed by the install's secret salt."""

from __future__ import annotations

import json

import pytest

from reverie import InvalidInput, Memory

PHONES = ("15012345678", "15087654321")


def _exported(mem: Memory, user: str) -> str:
    return json.dumps(mem.export(user=user), ensure_ascii=False)


def test_threads_named_by_phone_numbers_stay_apart_and_are_found_by_the_number(tmp_path):
    with Memory(tmp_path / "home", background=False) as mem:
        for phone, city in zip(PHONES, ("Porto", "Lisbon")):
            with mem.turn(f"I moved to {city} last spring", user="ana", thread=phone) as turn:
                turn.complete("Noted.")
        threads = {phone: mem.episodes(user="ana", thread=phone) for phone in PHONES}
        assert [len(found) for found in threads.values()] == [1, 1]
        assert "Porto" in threads[PHONES[0]][0].user_text and "Lisbon" in threads[PHONES[1]][0].user_text
        stored = {found[0].thread for found in threads.values()}
        assert len(stored) == 2 and all(t.startswith("[phone]#") for t in stored)
        mem.flush(user="ana")
        recalled = mem.recall("When did I move to Porto?", user="ana", thread=PHONES[0], explain=True)
        assert any("Porto" in item.text for item in recalled.items)
        text = _exported(mem, "ana")
        assert not any(phone in text for phone in PHONES)
        pseudonym = threads[PHONES[0]][0].thread
    # the same number gives the same pseudonym after a restart (the salt is the install's)
    with Memory(tmp_path / "home", background=False) as mem:
        assert [e.thread for e in mem.episodes(user="ana", thread=PHONES[0])] == [pseudonym]
    # and another install gives another: the digest is keyed, not a plain hash of the number
    with Memory(tmp_path / "other", background=False) as mem:
        mem.add(["We moved again"], user="ana", thread=PHONES[0])
        assert mem.episodes(user="ana", thread=PHONES[0])[0].thread != pseudonym


def test_an_ordinary_id_is_kept_as_given(tmp_path):
    with Memory(tmp_path / "home", background=False) as mem:
        mem.add(["We talked about the roadmap"], user="ana", thread="support-42", agent="helpdesk")
        [episode] = mem.episodes(user="ana", thread="support-42")
        assert (episode.thread, episode.agent) == ("support-42", "helpdesk")


@pytest.mark.parametrize("thread, message", [
    ("t" * 201, "thread is 201 characters; an id is at most 200"),
    ({"id": 1}, "thread must be text, not dict"),
])
def test_a_thread_id_that_is_too_long_or_not_text_is_refused(tmp_path, thread, message):
    with Memory(tmp_path / "home", background=False) as mem:
        with pytest.raises(InvalidInput, match=message):
            mem.add(["We talked about the roadmap"], user="ana", thread=thread)
        assert mem.episodes(user="ana") == []
