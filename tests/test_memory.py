"""The Memory facade: facts, turns (two-phase), ingest, feedback, crash recovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import pytest

from reverie import Conflict, InvalidInput, Memory, NotFound
from reverie import turn as turn_module


# ---------------------------------------------------------------- facts

def test_remember_stores_a_consolidated_manual_fact(mem):
    fact = mem.remember("Prefers trash over rm", user="ana", category="preference", area="Tools")
    stored = mem.fact(fact.id)
    assert stored.status == "consolidated"
    assert stored.provenance.origin == "manual"
    assert stored.area == "Tools" and stored.uses == 0


def test_remember_of_a_near_duplicate_reinforces_instead_of_adding(mem):
    first = mem.remember("Prefers trash over rm", user="ana", category="preference")
    again = mem.remember("prefers trash over rm!", user="ana", category="preference")
    assert again.id == first.id
    assert again.uses == 1
    assert len(mem.facts(user="ana")) == 1


def test_unknown_category_is_stored_as_other_keeping_the_original(mem):
    fact = mem.remember("Runs on oat milk", user="ana", category="beverages")
    assert fact.category == "other" and fact.original_category == "beverages"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"content": "   "}, "content"),
        ({"content": "x", "confidence": 1.5}, "confidence"),
        ({"content": "x", "area": "Kitchen"}, "area"),
        ({"content": 42}, "content"),
        ({"content": "x", "user": ""}, "user"),
    ],
)
def test_bad_remember_names_the_field(mem, kwargs, field):
    args = {"user": "ana", **kwargs}
    with pytest.raises(InvalidInput) as err:
        mem.remember(args.pop("content"), **args)
    assert err.value.field == field
    assert mem.facts(user="ana") == []


def test_newer_contradicting_fact_archives_the_older_with_links(mem):
    old = mem.remember("Prefers vim", user="ana", category="preference")
    new = mem.remember("Prefers emacs", user="ana", category="preference")
    old_now = mem.fact(old.id)
    assert old_now.status == "archived" and old_now.superseded_by == new.id
    assert mem.fact(new.id).supersedes == old.id
    # reversible: the older fact can be brought back
    assert mem.update_fact(old.id, status="consolidated").status == "consolidated"


def test_forget_archives_and_hard_forget_deletes(mem):
    a = mem.remember("Likes tea", user="ana")
    b = mem.remember("Owns a red bicycle", user="ana")
    mem.forget(a.id)
    assert [f.id for f in mem.facts(user="ana")] == [b.id]
    assert [f.id for f in mem.facts(user="ana", status="archived")] == [a.id]
    mem.forget(b.id, hard=True)
    with pytest.raises(NotFound):
        mem.fact(b.id)


def test_reinforce_counts_uses_and_refuses_archived(mem):
    fact = mem.remember("Uses Go for services", user="ana")
    assert mem.reinforce(fact.id).uses == 1
    assert mem.reinforce(fact.id).uses == 2
    mem.forget(fact.id)
    with pytest.raises(InvalidInput):
        mem.reinforce(fact.id)


def test_another_users_fact_is_not_found(mem):
    fact = mem.remember("Bob's secret hobby is chess", user="bob")
    with pytest.raises(NotFound):
        mem.forget(fact.id, user="ana")
    assert mem.fact(fact.id).status == "consolidated"


def test_a_profile_section_is_cleaned_as_every_text_and_an_invisible_one_is_refused(mem):
    prof = mem.set_profile("user.topOfMind", "Plays\u0007 bass\u0000 trio \u200b\u2060", user="ana")
    assert prof.user.top_of_mind.summary == "Plays bass trio"  # the same on every store
    with pytest.raises(InvalidInput, match="shows nothing"):
        mem.set_profile("user.personalContext", "\u200b", user="ana")
    assert mem.set_profile("user.topOfMind", "", user="ana").user.top_of_mind.summary == ""  # cleared


def test_secrets_are_stripped_on_remember_and_profile(mem):
    fact = mem.remember("Email me at ana@example.com, key sk-abcdefghijklmnopqrstuvwx123456", user="ana")
    assert "ana@example.com" not in fact.content and "sk-abcdef" not in fact.content
    prof = mem.set_profile("user.personalContext", "Phone +1 415-555-0132", user="ana")
    assert "555-0132" not in prof.user.personal_context.summary


def test_a_secret_repeated_in_another_message_of_the_same_write_is_taken_out_there_too(mem, tmp_path, monkeypatch):
    said = [{"role": "user", "content": "My wifi password is Geheim!42, mail me at ana@example.com"},
            {"role": "assistant", "content": "Got it, I saved Geheim!42 and ana@example.com for you. PIN-like 123456789?"}]
    added = mem.add(said, user="ana")
    text = " ".join(m.content for e in added for m in e.messages)
    assert "Geheim!42" not in text and "ana@example.com" not in text
    assert "I saved [password] and [email] for you" in text and "123456789" in text  # (no secret said)
    # a number is known by its digits however they are grouped
    added = mem.add([{"role": "user", "content": "Meine Handynummer ist 0171 2345678."},
                     {"role": "assistant", "content": "Alles klar, 01712345678 ist gespeichert."}], user="ana", thread="de")
    assert added[0].messages[1].content == "Alles klar, [phone] ist gespeichert."
    # a file's conversation, and a turn's reply
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in said), encoding="utf-8")
    mem.ingest(path, user="bob", learn=False)
    assert not any("Geheim!42" in m.content for e in mem.store.list_episodes("bob", limit=10) for m in e.messages)
    with mem.turn("The door code at home is 48151623", user="cy") as turn:
        turn.complete("Noted, I will remember 48151623.")
    assert turn.episode.reply_text == "Noted, I will remember [password]."
    # held for a while only: a reply past HELD_SECONDS is redacted on its own (as in another process)
    monkeypatch.setattr(turn_module, "HELD_SECONDS", 0.0)
    with mem.turn("The door code at home is 48151623", user="eve") as late:
        late.complete("Noted, I will remember 48151623.")
    assert late.episode.reply_text == "Noted, I will remember 48151623."
    # a value shorter than ECHO_MIN_CHARS is left where nothing marks it: a PIN's digits are any number's
    with mem.turn("my PIN is 4521", user="dee") as turn:
        turn.complete("You walked 4521 steps today")
    assert turn.episode.reply_text == "You walked 4521 steps today"


# ---------------------------------------------------------------- ingest

def test_add_groups_messages_into_exchanges_with_source_ids(mem):
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    episodes = mem.add(
        [
            {"speaker": "Caroline", "text": "I went to a support group yesterday.", "dia_id": "D1:1"},
            {"speaker": "Melanie", "text": "How was it?", "dia_id": "D1:2"},
            {"speaker": "Caroline", "text": "Really moving.", "dia_id": "D1:3"},
        ],
        user="conv", thread="s1", at=when,
    )
    assert [e.source_ids for e in episodes] == [["D1:1", "D1:2"], ["D1:3"]]
    assert all(e.status == "completed" and e.occurred_at == when for e in episodes)
    assert episodes[0].messages[1].speaker == "Melanie"


def test_add_with_a_bad_message_names_it_and_stores_nothing(mem):
    with pytest.raises(InvalidInput) as err:
        mem.add([{"role": "user", "content": "fine"}, {"role": "user", "content": ""}], user="ana")
    assert err.value.field == "messages[1].content"
    assert mem.episodes(user="ana") == []


def test_add_rejects_a_bad_timestamp(mem):
    with pytest.raises(InvalidInput) as err:
        mem.add([{"content": "hello there", "at": "last tuesday"}], user="ana")
    assert err.value.field == "messages[0].at"


# ---------------------------------------------------------------- turns

def test_turn_frame_is_stored_pending_before_the_reply(mem):
    with mem.turn("I always want the conclusion first", user="ana", thread="t1") as turn:
        assert mem.episode(turn.id).status == "pending"
        assert isinstance(turn.context, str)
        turn.complete("Noted.")
    ep = mem.episode(turn.id)
    assert ep.status == "completed" and ep.reply_text == "Noted." and ep.completed_at is not None


def test_leaving_a_turn_without_complete_marks_it_interrupted(mem):
    with mem.turn("Something I started to ask", user="ana") as turn:
        pass
    assert mem.episode(turn.id).status == "interrupted"


def test_an_interrupted_turn_takes_its_reply_when_it_comes_and_is_learned_and_recalled(home):
    """A server restarted between a message and its reply left the turn interrupted, and
    completing it was a 409: the user's message was never learned nor recalled."""
    with Memory(home, background=False) as first:
        turn = first.turn("I am vegetarian since 2019", user="ana")
        turn.__exit__(None, None, None)  # the process stops before the reply (as start-up recovery marks it)
        assert first.episode(turn.id).status == "interrupted"
    with Memory(home, background=False) as second:
        done = second.complete_turn(turn.id, "Noted: no meat in the recipes I suggest.")
        assert done.status == "completed" and done.user_text == "I am vegetarian since 2019"
        assert second.flush() == 1
        assert "vegetarian" in second.recall("what should I cook tonight?", user="ana", track=False).context
        with pytest.raises(Conflict):
            second.complete_turn(turn.id, "again")


def test_an_exception_inside_a_turn_marks_it_failed(mem):
    with pytest.raises(RuntimeError):
        with mem.turn("This will blow up", user="ana") as turn:
            raise RuntimeError("model crashed")
    assert mem.episode(turn.id).status == "failed"


def test_completing_a_turn_twice_is_a_conflict(mem):
    with mem.turn("Hello there, remember my cat Miso", user="ana") as turn:
        turn.complete("Hi!")
    with pytest.raises(Conflict):
        mem.complete_turn(turn.id, "again")


def test_learning_fills_summary_and_tags_after_completion(mem):
    with mem.turn("We decided to migrate billing to Postgres with logical replication", user="ana") as turn:
        turn.complete("Good plan: logical replication keeps downtime short.")
    assert mem.flush() == 1
    ep = mem.episode(turn.id)
    assert ep.learned and ep.summary and ep.tags


def test_a_pending_frame_left_by_a_crashed_process_becomes_interrupted(home):
    Memory(home, background=False).close()
    script = textwrap.dedent(
        f"""
        import os
        from reverie import Memory
        mem = Memory({str(home)!r}, background=False)
        turn = mem.turn("Crash right after the frame is stored", user="ana")
        print(turn.id, flush=True)
        os._exit(1)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    frame_id = out.stdout.strip()
    assert frame_id.startswith("ep_"), out.stderr
    mem = Memory(home, background=False)
    ep = mem.episode(frame_id)
    assert ep.status == "interrupted"
    assert ep.user_text == "Crash right after the frame is stored"
    mem.close()


def test_a_pending_turn_whose_pid_another_process_has_taken_since_becomes_interrupted(home):
    import socket

    mem = Memory(home, background=False)
    turn = mem.turn("Opened by a process that died", user="ana")
    # as a restarted container leaves it: this host, a pid that is taken now (by this very
    # process), but by a process that began at another time
    stored = mem.episode(turn.id)
    stored.owner = f"{socket.gethostname()}:{os.getpid()}/1"
    with mem.store.transaction():
        mem.store.put_episode(stored)
    mem.close()
    again = Memory(home, background=False)
    recovered = again.episode(turn.id)
    assert recovered.status == "interrupted" and recovered.owner is None
    again.close()


def test_a_live_processes_pending_frame_is_left_alone(home):
    first = Memory(home, background=False)
    turn = first.turn("Still thinking about this one", user="ana")
    second = Memory(home, background=False)
    assert second.episode(turn.id).status == "pending"
    turn.complete("Done now.")
    second.close()
    first.close()


def test_completed_episodes_never_learned_are_picked_up_at_start(home):
    first = Memory(home, background=False)
    first.add([{"role": "user", "content": "I prefer tabs over spaces in Go code"}], user="ana")
    first.store.close()  # simulate a crash: no drain at close
    first._closed = True
    second = Memory(home, background=False)
    assert second.flush() == 1
    assert any("tabs" in f.content.lower() for f in second.facts(user="ana"))
    second.close()


# ---------------------------------------------------------------- feedback

def test_feedback_is_recorded_and_validated(mem):
    eps = mem.add([{"role": "user", "content": "Our cutover is on November 28"}], user="ana")
    ep = mem.feedback(eps[0].id, "confirmed", reason="right date")
    assert ep.feedback.status == "confirmed"
    with pytest.raises(InvalidInput) as err:
        mem.feedback(eps[0].id, "meh")
    assert err.value.field == "status"


def test_stats_counts_per_user(mem):
    mem.remember("Likes tea", user="ana")
    mem.add([{"role": "user", "content": "hello world of memory"}], user="ana", thread="x")
    mem.add([{"role": "user", "content": "more about the cutover"}], user="ana", thread="x")
    mem.add([{"role": "user", "content": "a word in another thread"}], user="ana", thread="y")
    stats = mem.stats(user="ana")["users"]["ana"]
    # threads are counted, not listed: a user with 40,000 threads gets one number
    assert stats["facts"] == 1 and stats["episodes"] == 3 and stats["threads"] == 2


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda m: m.remember("a fine fact", user="ana", category=3), "category"),
        (lambda m: m.remember("a fine fact", user="ana", confidence="high"), "confidence"),
        (lambda m: m.remember("a fine fact", user="ana", tags="one,two"), "tags"),
        (lambda m: m.add("just a string", user="ana"), "messages"),
        (lambda m: m.add(None, user="ana"), "messages"),
        (lambda m: m.add([{"content": "hi", "at": 5}], user="ana"), "messages[0].at"),
        (lambda m: m.add([{"content": "hi"}], user="ana", at="yesterday"), "at"),
        (lambda m: m.recall("hello", user="ana", at=12), "at"),
        (lambda m: m.recall("hello", user="ana", thread=["t"]), "thread"),
        (lambda m: m.forget(["fact_1"]), "id"),
        (lambda m: m.episodes(user="ana", status="done"), "status"),
        (lambda m: m.episodes(user="ana", limit=0), "limit"),
        (lambda m: m.facts(user="ana", category=["a"]), "category"),
        (lambda m: m.merge_tags(None, "x", user="ana"), "old"),
        (lambda m: m.trim(42, user="ana"), "messages"),
    ],
)
def test_wrong_types_are_clear_errors_naming_the_field(mem, call, field):
    with pytest.raises(InvalidInput) as err:
        call(mem)
    assert err.value.field == field


def test_a_near_miss_of_a_known_category_is_an_error_and_an_own_category_is_kept(mem):
    import pytest as _pytest

    from reverie import InvalidInput

    with _pytest.raises(InvalidInput) as err:
        mem.remember("Likes tea", user="ana", category="Prefernce")
    assert err.value.field == "category" and "preference" in str(err.value)
    fact = mem.remember("Runs on oat milk", user="ana", category="beverages")
    with _pytest.raises(InvalidInput):
        mem.update_fact(fact.id, user="ana", category="corection")
    assert mem.fact(fact.id).original_category == "beverages"


def test_a_closed_memory_refuses_to_be_used_instead_of_writing_behind_its_owners_back(tmp_path):
    from reverie import StoreError

    mem = Memory(tmp_path / "home", background=False)
    mem.remember("Keeps bees", user="ana")
    mem.close()
    for use in (lambda: mem.recall("bees", user="ana"), lambda: mem.remember("Likes tea", user="ana"),
                lambda: mem.add(["We talked"], user="ana")):
        with pytest.raises(StoreError, match="is closed"):
            use()
    with Memory(tmp_path / "home", background=False) as again:
        assert [f.content for f in again.facts(user="ana")] == ["Keeps bees"]
