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


def test_message_ids_that_hold_secrets_are_pseudonyms_that_still_skip_input_seen_before(tmp_path):
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    talk = [{"role": "user", "content": "We moved the standup to Tuesdays", "source_id": key},
            {"role": "assistant", "content": "Noted, Tuesdays it is.", "source_id": PHONES[0]},
            {"role": "user", "content": "And the retro to Fridays", "source_id": PHONES[1]},
            {"role": "assistant", "content": "Fridays for the retro.", "id": "msg-4"}]
    with Memory(tmp_path / "home", background=False) as mem:
        first = mem.ingest(talk, user="ana", learn=False)
        assert first.episodes == 2
        again = mem.ingest(talk, user="ana", learn=False)
        assert (again.episodes, again.skipped_messages) == (0, 4)
        ids = [i for e in mem.episodes(user="ana") for i in e.source_ids]
        assert len(set(ids)) == 4 and "msg-4" in ids
        assert sum(i.startswith("[api-key]#") for i in ids) == 1 and sum(i.startswith("[phone]#") for i in ids) == 2
        text = _exported(mem, "ana")
        assert key not in text and not any(phone in text for phone in PHONES)


def test_a_message_id_that_is_not_text_is_refused(tmp_path):
    with Memory(tmp_path / "home", background=False) as mem:
        with pytest.raises(InvalidInput, match=r"messages\[0\].source_id must be text, not dict"):
            mem.add([{"role": "user", "content": "hi there", "source_id": {"a": 1}}], user="ana")
        assert mem.episodes(user="ana") == []
