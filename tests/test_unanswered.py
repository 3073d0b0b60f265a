"""Turns that never get their reply: after ``reply_timeout_seconds`` the user's message is
closed as an episode of its own, learned and recalled, counted in health; a late reply is
still stored with it (reverie.unanswered)."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import pytest

from reverie import Memory
from reverie.errors import Conflict
from reverie.models import utcnow
from reverie.server import create_app
from tests.live_server import live_server

MESSAGE = "I am allergic to peanuts and my dog is called Rex"


def opened_ago(memory: Memory, turn_id: str, seconds: float) -> None:
    """Move a turn's opening ``seconds`` into the past (as if it had waited that long)."""
    ep = memory.store.get_episode(turn_id)
    assert ep is not None
    ep.created_at = utcnow() - timedelta(seconds=seconds)
    with memory.store.transaction():
        memory.store.put_episode(ep)


def test_a_turn_without_reply_past_the_timeout_is_learned_and_recalled(bmem):
    turn = bmem.turn(MESSAGE, user="ana")
    opened_ago(bmem, turn.id, 3600)

    assert bmem.flush(user="ana") == 1
    ep = bmem.store.get_episode(turn.id)
    assert (ep.status, ep.learned, ep.meta["unanswered"], ep.reply_text) == ("completed", True, True, "")
    assert ep.completed_at is not None
    found = bmem.recall("what is my dog called?", user="ana")
    assert "Rex" in found.context
    assert any("peanuts" in f.content for f in bmem.facts(user="ana"))
    health = bmem.health(user="ana")
    assert health.unanswered_turns == 1
    assert any("no reply within reply_timeout_seconds" in a for a in health.advice)


def test_a_turn_within_the_timeout_keeps_waiting_for_its_reply(bmem):
    turn = bmem.turn(MESSAGE, user="ana")
    opened_ago(bmem, turn.id, 1700)  # the default timeout is 1800 s

    assert bmem.flush(user="ana") == 0
    assert bmem.store.get_episode(turn.id).status == "pending"
    assert bmem.health(user="ana").unanswered_turns == 0
    turn.complete("Noted.")
    assert bmem.store.get_episode(turn.id).meta.get("unanswered") is None


def test_timeout_zero_keeps_turns_waiting_for_ever(home):
    with Memory(home, background=False, reply_timeout_seconds=0) as memory:
        turn = memory.turn(MESSAGE, user="ana")
        opened_ago(memory, turn.id, 10 * 86400)
        assert memory.flush(user="ana") == 0
        assert memory.store.get_episode(turn.id).status == "pending"


def test_an_interrupted_turn_is_closed_too(bmem):
    with bmem.turn(MESSAGE, user="ana") as turn:
        pass  # left without a reply: interrupted
    assert bmem.store.get_episode(turn.id).status == "interrupted"
    opened_ago(bmem, turn.id, 3600)

    assert bmem.flush(user="ana") == 1
    ep = bmem.store.get_episode(turn.id)
    assert (ep.status, ep.meta["unanswered"]) == ("completed", True)
    assert "Rex" in bmem.recall("what is my dog called?", user="ana").context


def test_a_failed_turn_is_not_closed(bmem):
    with pytest.raises(RuntimeError):
        with bmem.turn(MESSAGE, user="ana") as turn:
            raise RuntimeError("the agent broke")
    opened_ago(bmem, turn.id, 3600)
    assert bmem.flush(user="ana") == 0
    assert bmem.store.get_episode(turn.id).status == "failed"


def test_a_late_reply_is_stored_and_searched_not_learned_twice(bmem):
    turn = bmem.turn(MESSAGE, user="ana")
    opened_ago(bmem, turn.id, 3600)
    bmem.flush(user="ana")
    facts_before = sorted(f.content for f in bmem.facts(user="ana"))

    ep = bmem.complete_turn(turn.id, "Noted: no peanuts in the zucchini bread recipe.", user="ana")
    assert (ep.status, ep.meta["unanswered"]) == ("completed", "late")
    assert [m.role for m in ep.messages] == ["user", "assistant"]
    assert bmem.flush(user="ana") == 0  # the message was learned once; the reply is not learned again
    assert sorted(f.content for f in bmem.facts(user="ana")) == facts_before
    assert "zucchini" in bmem.recall("the zucchini bread recipe", user="ana").context  # the reply is searched
    with pytest.raises(Conflict, match="already completed"):
        bmem.complete_turn(turn.id, "a second reply", user="ana")


def test_a_reply_before_the_learning_is_learned_with_the_message(mem):
    """Closed but not yet learned (the learner had not run): the late reply is learned with it."""
    turn = mem.turn(MESSAGE, user="ana")
    opened_ago(mem, turn.id, 3600)
    closed = mem.learner.close_unanswered()  # closed and queued, not learned yet
    assert closed == 1
    mem.complete_turn(turn.id, "Rex is a good name for a beagle.", user="ana")
    assert mem.flush(user="ana") == 1
    ep = mem.store.get_episode(turn.id)
    assert ep.learned and ep.meta["unanswered"] == "late"
    assert "beagle" in (ep.summary or "") + (ep.overview or "") + ep.reply_text


def test_a_reply_that_came_first_wins_over_the_sweep(mem):
    turn = mem.turn(MESSAGE, user="ana")
    opened_ago(mem, turn.id, 3600)
    turn.complete("Noted.")
    assert mem.learner.close_unanswered() == 0
    ep = mem.store.get_episode(turn.id)
    assert ep.reply_text == "Noted." and "unanswered" not in ep.meta
    assert mem.health(user="ana").unanswered_turns == 0


def test_the_background_learner_closes_turns_on_its_own(home):
    with Memory(home, reply_timeout_seconds=0.3, debounce_seconds=0) as memory:
        turn = memory.turn(MESSAGE, user="ana")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ep = memory.store.get_episode(turn.id)
            if ep.learned:
                break
            time.sleep(0.1)
        assert (ep.status, ep.learned, ep.meta.get("unanswered")) == ("completed", True, True)


def test_a_server_worker_leaves_closing_to_the_learning_process(home):
    with Memory(home, background=False) as setup:
        turn = setup.turn(MESSAGE, user="ana")
        opened_ago(setup, turn.id, 3600)
    with Memory(home, background=False, learn="elsewhere") as worker:
        assert worker.learner.close_unanswered() == 0
        assert worker.store.get_episode(turn.id).status == "pending"
    with Memory(home, background=False) as learner:  # opening the learning process closes it
        assert learner.store.get_episode(turn.id).status == "completed"


def test_rest_says_a_reply_came_late(home):
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            opened = client.post("/api/turns?user=ana", json={"message": MESSAGE}).json()
            opened_ago(memory, opened["turn_id"], 3600)
            assert client.post("/api/memory/flush?user=ana").status_code == 200
            done = client.post(f"/api/turns/{opened['turn_id']}/complete?user=ana", json={"reply": "Noted."})
            assert done.status_code == 200, done.text
            assert done.json() == {"turn_id": opened["turn_id"], "status": "completed", "late": True}
            again = client.post(f"/api/turns/{opened['turn_id']}/complete?user=ana", json={"reply": "Noted."})
            assert again.status_code == 409
            health = client.get("/api/memory/health?user=ana").json()
            assert health["unanswered_turns"] == 1


def test_a_timeout_no_date_can_hold_is_refused_with_the_setting_named(home):
    from reverie.errors import InvalidInput

    with pytest.raises(InvalidInput, match="reply_timeout_seconds"):
        Memory(home, background=False, reply_timeout_seconds=1e12)
