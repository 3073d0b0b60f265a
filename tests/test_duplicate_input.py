"""Duplicated input (issue 9, part 7): the same input ingested twice is stored once, and
recall never delivers the same line twice."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app

runner = CliRunner()
NOW = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
TALK = [
    {"role": "user", "content": "I'm a data engineer at a bank.", "at": "2024-02-01T09:00:00Z"},
    {"role": "assistant", "content": "Nice.", "at": "2024-02-01T09:01:00Z"},
    {"role": "user", "content": "I prefer short answers with the conclusion first.", "at": "2024-02-01T09:02:00Z"},
    {"role": "assistant", "content": "Will do.", "at": "2024-02-01T09:03:00Z"},
]


def _cli(*args: str, home) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _locomo() -> dict:
    return {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds brave, how was it?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "It was powerful, I felt accepted."},
            {"speaker": "Melanie", "dia_id": "D1:4", "text": "I'm so glad. I painted a lake sunrise last week."},
        ],
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "I ran a charity race for mental health."},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "Amazing! I'm looking into counseling careers."},
        ],
    }


def test_cli_ingest_of_the_same_file_twice_stores_nothing_new_and_says_so(home, tmp_path):
    talk = tmp_path / "talk.json"
    talk.write_text(json.dumps(TALK), encoding="utf-8")
    first = json.loads(_cli("ingest", str(talk), "--user", "ana", "--json", home=home))
    assert (first["episodes"], first["skipped"]) == (2, 0)
    second = json.loads(_cli("ingest", str(talk), "--user", "ana", "--json", home=home))
    assert (second["episodes"], second["skipped"], second["skipped_messages"]) == (0, 2, 4)
    third = _cli("ingest", str(talk), "--user", "ana", home=home)
    assert "Ingested 0 episodes" in third and "skipped 2 stored before" in third
    # the count is the user's, after the ingest (not what this ingest added)
    facts = json.loads(_cli("facts", "--user", "ana", "--json", home=home))
    assert f"ana has {len(facts)} facts now" in third
    episodes = json.loads(_cli("episodes", "--user", "ana", "--json", home=home))
    assert len(episodes) == 2

    # a LoCoMo file: its turns are known by their dia_id, even where a re-export changed a word
    conv = tmp_path / "conv-26.json"
    conv.write_text(json.dumps(_locomo()), encoding="utf-8")
    first = json.loads(_cli("ingest", str(conv), "--user", "ana", "--json", home=home))
    assert first["skipped"] == 0 and first["episodes"] > 0
    edited = _locomo()
    edited["session_2"][0]["text"] = "I ran a charity race for mental health!"
    conv.write_text(json.dumps(edited), encoding="utf-8")
    again = json.loads(_cli("ingest", str(conv), "--user", "ana", "--json", home=home))
    assert (again["episodes"], again["skipped"], again["skipped_messages"]) == (0, first["episodes"], 6)
    assert len(json.loads(_cli("episodes", "--user", "ana", "--json", home=home))) == 2 + first["episodes"]


def test_memory_add_twice_stores_once_and_reports_what_it_skipped(mem):
    first = mem.add(TALK, user="ana", thread="t1")
    assert isinstance(first, list) and len(first) == 2 and first.skipped == 0
    second = mem.add(TALK, user="ana", thread="t1")
    assert second == [] and isinstance(second, list)
    assert (second.skipped, second.skipped_messages) == (2, 4)
    assert len(mem.episodes(user="ana")) == 2
    # the same words at another time, in another thread or for another user are new input
    moved = [{**m, "at": m["at"].replace("2024-02-01", "2024-02-02")} for m in TALK]
    assert len(mem.add(moved, user="ana", thread="t1")) == 2
    assert len(mem.add(TALK, user="ana", thread="t2")) == 2
    assert len(mem.add(TALK, user="bo", thread="t1")) == 2
    # one file may hold the same exchange twice: both are kept, and both are known next time
    repeated = ["Thanks!", {"role": "assistant", "content": "You're welcome."}] * 2
    assert len(mem.add(repeated, user="ana", thread="t3")) == 2
    again = mem.add(repeated, user="ana", thread="t3")
    assert (len(again), again.skipped) == (0, 2)
    # a file that grew: only what is new is stored
    grown = mem.add([*TALK, {"role": "user", "content": "I moved to Lisbon.", "at": "2024-02-01T09:04:00Z"}],
                    user="ana", thread="t1")
    assert [e.user_text for e in grown] == ["I moved to Lisbon."] and grown.skipped == 2
    # a live turn with the same words is a new exchange, not a duplicate
    with mem.turn("I'm a data engineer at a bank.", user="ana", thread="t1") as turn:
        turn.complete("Noted.")
    assert len(mem.episodes(user="ana", thread="t1")) == 2 + 2 + 1 + 1


def test_a_store_made_before_the_upgrade_knows_its_input(home):
    with Memory(home, background=False) as mem:
        mem.add(TALK, user="ana", thread="t1")
    conn = sqlite3.connect(home / "reverie.db")  # the store as schema version 1 left it
    conn.execute("DROP TABLE input_keys")
    conn.execute("UPDATE schema_version SET version = 1")
    conn.commit()
    conn.close()
    with Memory(home, background=False) as mem:
        assert mem.store.schema_version() >= 2
        again = mem.add(TALK, user="ana", thread="t1")
        assert (len(again), again.skipped) == (0, 2)
        assert len(mem.episodes(user="ana")) == 2


def _visible(item) -> str:
    return item.text.split("] ", 1)[-1]


def test_recall_delivers_a_repeated_line_once_then_other_items(mem):
    for i in range(15):
        mem.add([{"speaker": "Melanie", "content": "the marathon is going well."}], user="ana",
                thread=f"t{i % 3}", at=NOW - timedelta(days=i + 1, hours=i))
    others = [
        "Melanie: my knee hurt after the marathon training run on Sunday.",
        "Melanie: I bought new shoes for the marathon in Porto.",
        "Melanie: I did not finish the half marathon in May because of the heat.",
        "Melanie: I did finish the half marathon in May despite the heat.",
    ]
    for i, line in enumerate(others):
        speaker, text = line.split(": ", 1)
        mem.add([{"speaker": speaker, "content": text}], user="ana", thread="t9", at=NOW - timedelta(days=20 + i))
    mem.flush()
    result = mem.recall("how is the marathon going?", user="ana", budget=2000, at=NOW, explain=True)
    episodes = [i for i in result.items if i.kind == "episode"]
    said = [_visible(i) for i in episodes]
    assert sum("the marathon is going well" in s for s in said) == 1
    assert len(said) == len(set(said))
    assert sum(any(o.split(": ", 1)[1][:30] in s for s in said) for o in others) == len(others)
    # a negation apart is not the same line; the kept line still says why and where from
    kept = next(i for i in episodes if "the marathon is going well" in _visible(i))
    assert kept.parts and kept.parts["relevance"] > 0 and len(kept.provenance) == 1
    assert mem.episode(kept.provenance[0]).messages[0].content == "the marathon is going well."
    assert result.context.count("the marathon is going well") == 1


def test_an_id_given_again_with_other_text_is_another_message_and_the_same_is_skipped(mem):
    first = mem.add([{"id": "m1", "role": "user", "content": "I am allergic to shellfish"},
                     {"id": "m2", "role": "assistant", "content": "Noted."}], user="ana")
    again = mem.add([{"id": "m1", "role": "user", "content": "I am allergic to shellfish"},
                     {"id": "m2", "role": "assistant", "content": "Noted."}], user="ana")
    other = mem.add([{"id": "m1", "role": "user", "content": "I bought a Honda Civic"},
                     {"id": "m2", "role": "assistant", "content": "Nice car."}], user="ana")  # the next day's export
    assert len(first) == 1 and (len(again), again.skipped) == (0, 1) and len(other) == 1
    texts = sorted(e.user_text for e in mem.episodes(user="ana"))
    assert texts == ["I am allergic to shellfish", "I bought a Honda Civic"]


@pytest.mark.parametrize("stored, again", [
    ("I really like the new sushi place downtown", "I really do not like the new sushi place downtown"),
    ("The team meeting moved to 3pm on Friday", "The team meeting moved to 4pm on Friday"),
])
def test_an_id_given_again_with_text_that_says_the_opposite_is_another_message(mem, stored, again):
    mem.add([{"id": "m1", "role": "user", "content": stored}], user="ana", thread="t")
    fixed = mem.add([{"id": "m1", "role": "user", "content": stored.replace("the", "teh", 1)}], user="ana", thread="t")
    assert (len(fixed), fixed.skipped) == (0, 1)  # a word fixed: the same message
    said = mem.add([{"id": "m1", "role": "user", "content": again}], user="ana", thread="t")
    assert (len(said), said.skipped) == (1, 0)
    assert sorted(e.user_text for e in mem.episodes(user="ana")) == sorted([stored, again])


def test_an_older_homes_keys_by_id_alone_still_skip_what_it_stored(mem):
    from reverie.store.base import source_key

    [episode] = mem.add(["I am allergic to shellfish"], user="ana", thread="t")
    with mem.store.transaction():  # the key an older reverie kept for message m1: its id alone
        mem.store.put_inputs("ana", "t", episode.id, [source_key("m1")])
    again = mem.add([{"id": "m1", "role": "user", "content": "I am allergic to shellfish"}], user="ana", thread="t")
    assert (len(again), again.skipped_messages) == (0, 1)



def test_another_locomo_conversation_in_the_same_thread_is_kept_though_its_ids_repeat(home, tmp_path):
    other = {
        "speaker_a": "Jon", "speaker_b": "Gina",
        "session_1_date_time": "4:04 pm on 20 January, 2023",
        "session_1": [
            {"speaker": "Jon", "dia_id": "D1:1", "text": "I lost my banking job and want to open a dance studio."},
            {"speaker": "Gina", "dia_id": "D1:2", "text": "Wow, I started an online clothing store myself!"},
        ],
    }
    for name, conv in (("conv-26.json", _locomo()), ("conv-30.json", other)):
        (tmp_path / name).write_text(json.dumps(conv), encoding="utf-8")
    first = json.loads(_cli("ingest", str(tmp_path / "conv-26.json"), "--user", "ana", "--thread", "chats", "--json",
                            home=home))
    second = json.loads(_cli("ingest", str(tmp_path / "conv-30.json"), "--user", "ana", "--thread", "chats", "--json",
                             home=home))
    assert second["episodes"] >= 1 and second["skipped_messages"] == 0  # D1:1 again, but another message
    texts = " ".join(e["user_text"] for e in json.loads(_cli("episodes", "--user", "ana", "--json", home=home)))
    assert "dance studio" in texts and "support group" in texts
    assert first["skipped_messages"] == 0


def test_an_id_holding_a_hash_mark_given_again_with_other_text_is_another_message(mem):
    mem.add([{"id": "chat#1", "role": "user", "content": "I am allergic to shellfish"}], user="ana")
    other = mem.add([{"id": "chat#1", "role": "user", "content": "I bought a Honda Civic"}], user="ana")
    again = mem.add([{"id": "chat#1", "role": "user", "content": "I am allergic to shellfish!"}], user="ana")
    assert len(other) == 1 and (len(again), again.skipped_messages) == (0, 1)
