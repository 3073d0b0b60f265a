"""reverie.messages: one reading of a conversation for add, ingest and trim."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from reverie import InvalidInput
from reverie.messages import as_line, clip, group, is_trivial, parse_message
from reverie.models import Message


def msg(speaker: str, text: str) -> Message:
    return Message(role="speaker", speaker=speaker, content=text)


def test_exchanges_start_at_the_opener_once_the_other_side_spoke():
    talk = [msg("A", "hi"), msg("A", "are you there?"), msg("B", "yes"), msg("A", "good"), msg("B", "ok"), msg("B", "bye")]
    assert [[m.content for m in g] for g in group(talk, "exchange")] == [
        ["hi", "are you there?", "yes"], ["good", "ok", "bye"]]
    assert len(group(talk, "message")) == 6
    with pytest.raises(InvalidInput):
        group(talk, "sentence")


def test_parse_message_reads_every_accepted_form_and_names_bad_fields():
    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    assert parse_message("plain words", 0, at).role == "user"
    loc = parse_message({"speaker": "Mel", "text": "Went hiking", "dia_id": "D1:3"}, 1, None)
    assert (loc.role, loc.speaker, loc.content, loc.source_id) == ("speaker", "Mel", "Went hiking", "D1:3")
    assert parse_message({"content": "x", "at": "2024-05-02T10:00:00"}, 2, at).at.day == 2
    with pytest.raises(InvalidInput) as err:
        parse_message({"content": "  "}, 3, None)
    assert err.value.field == "messages[3].content"
    with pytest.raises(InvalidInput) as err:
        parse_message(42, 4, None)
    assert err.value.field == "messages[4]"


def test_a_message_is_redacted_as_it_is_read():
    assert "[email]" in parse_message("mail me at ana@example.com", 0, None).content


def test_clip_keeps_head_and_tail_and_trivial_messages_are_known():
    text = "start " + "x" * 1000 + " end"
    clipped = clip(text, 100)
    assert clipped.startswith("start") and clipped.endswith("end") and len(clipped) <= 100
    assert is_trivial("ok!") and is_trivial("好的") and not is_trivial("I moved to Lisbon")
    assert as_line(msg("Mel", "hi")) == "Mel: hi"


def test_a_message_time_may_be_named_at_timestamp_created_at_or_time():
    for name in ("at", "timestamp", "created_at", "time"):
        parsed = parse_message({"content": "hi there", name: "2024-05-02T10:00:00"}, 0, None)
        assert parsed.at is not None and parsed.at.day == 2, name
    with pytest.raises(InvalidInput) as err:
        parse_message({"content": "hi", "timestamp": "yesterday-ish"}, 5, None)
    assert err.value.field == "messages[5].timestamp"


def test_a_speaker_named_assistant_without_a_role_is_the_agent_not_a_person(tmp_path):
    from reverie import Memory

    said = parse_message({"speaker": "Assistant", "content": "Noted."}, 0, None)
    assert (said.role, said.speaker) == ("assistant", None)
    assert parse_message({"speaker": "Ana", "content": "hi"}, 0, None).role == "speaker"
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest([{"speaker": "user", "content": "I always want the conclusion first"},
                    {"speaker": "assistant", "content": "I never share passwords with anyone"}], user="ana")
        facts = [f.content for f in mem.facts(user="ana")]
    assert facts == ["Always wants the conclusion first"]


def test_a_chinese_transcript_labelled_by_role_is_the_user_and_the_agent(tmp_path):
    from reverie import Memory

    assert (parse_message({"speaker": "用户", "content": "你好"}, 0, None).role,
            parse_message({"speaker": "助手", "content": "好的"}, 0, None).role) == ("user", "assistant")
    path = tmp_path / "zh.txt"
    path.write_text("用户：我是上海的一名小学老师，教数学。\n助手：好的，我记住了。\n", encoding="utf-8")
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest(path, user="ana")
        [episode] = mem.episodes(user="ana")
        assert [m.role for m in episode.messages] == ["user", "assistant"]
        assert all(m.speaker is None for m in episode.messages)
        assert "用户" not in " ".join(f.content for f in mem.facts(user="ana"))


@pytest.mark.parametrize("raw, role, speaker", [
    ({"role": "User", "content": "hi"}, "user", None),
    ({"role": "human", "content": "hi"}, "user", None),
    ({"role": "ai", "content": "hi"}, "assistant", None),
    ({"role": "model", "content": "hi"}, "assistant", None),
    ({"speaker": "AI", "content": "hi"}, "assistant", None),
    ({"speaker": "Ai", "content": "hi"}, "speaker", "Ai"),  # a person's name too
])
def test_roles_as_frameworks_spell_them_are_reverie_roles(raw, role, speaker):
    said = parse_message(raw, 0, None)
    assert (said.role, said.speaker) == (role, speaker)


def test_a_langchain_buffer_transcript_learns_the_humans_facts_not_the_ais(tmp_path):
    from reverie import Memory

    path = tmp_path / "buffer.txt"
    path.write_text("Human: I work as a teacher in Leeds.\nAI: Great, I work as a chef in Paris, as it were.\n",
                    encoding="utf-8")
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest(path, user="ana")
        said = " ".join(f.content for f in mem.facts(user="ana"))
        assert "Leeds" in said and "Paris" not in said
        assert "Paris" not in mem.profile(user="ana").user.work_context.summary
