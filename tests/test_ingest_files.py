"""Ingesting files as people have them: not UTF-8, with blank lines, read twice, and
'Speaker: text' transcripts whose lines hold times and links."""

from __future__ import annotations

import codecs
import json

import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie import ingest as ingest_module
from reverie.cli import app
from reverie.errors import InvalidInput

runner = CliRunner()



def _refused(tmp_path, path, user="u"):
    """The error of ingesting ``path``, which must be refused having stored nothing."""
    with Memory(tmp_path / "h", background=False) as mem:
        with pytest.raises(InvalidInput) as caught:
            mem.ingest(path, user=user)
        assert mem.episodes(user=user, limit=1000) == []
    return caught.value

def _turns(n: int) -> list[dict[str, str]]:
    return [{"speaker": ("Ana", "Ben")[i % 2], "content": f"turn {i} about the boat"} for i in range(n)]


# ------------------------------------------------------------ not UTF-8


@pytest.mark.parametrize("suffix", [".jsonl", ".txt", ".json"])
def test_a_file_that_is_not_utf8_is_refused_in_one_line_and_nothing_is_stored(tmp_path, suffix):
    path = tmp_path / f"x{suffix}"
    path.write_bytes(b"\xff\xfe\x00bad\n")
    caught = _refused(tmp_path, path, "dan")
    message = str(caught)
    assert f"x{suffix} is not UTF-8 text" in message and "offset 0" in message and "line 1" in message
    assert "UTF-16" in message and "nothing was stored" in message and "\n" not in message
    assert caught.field == "path"


def test_the_cli_says_which_file_is_not_utf8_without_a_traceback(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\xff\xfe\x00bad\n")
    result = runner.invoke(app, ["ingest", str(path), "--user", "dan", "--home", str(tmp_path / "h")])
    assert result.exit_code == 2
    assert "x.jsonl is not UTF-8 text" in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, UnicodeDecodeError)


def test_a_bad_byte_far_into_a_streamed_file_stores_nothing_and_says_where(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 5)
    lines = [json.dumps(m, ensure_ascii=False).encode("utf-8") for m in _turns(80)]
    lines[69] = '{"speaker": "Ana", "content": "caf\u00e9 '.encode("utf-8") + b"\xe9" + b' latin-1"}'
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "late.jsonl"
    path.write_bytes(data)
    caught = _refused(tmp_path, path)
    offset = data.index(b"\xe9 latin")
    assert f"byte 0xe9 at offset {offset} (line 70)" in str(caught)


def test_a_json_file_that_is_not_utf8_names_the_byte_and_line(tmp_path):
    data = codecs.BOM_UTF8 + b'[{"role": "user", "content": "caf\xc3\xa9"},\n {"role": "user", "content": "\xe9"}]'
    path = tmp_path / "talk.json"
    path.write_bytes(data)
    caught = _refused(tmp_path, path)
    offset = data.index(b"\xe9\"")  # the offset counts the byte order mark
    assert f"byte 0xe9 at offset {offset} (line 2)" in str(caught)


@pytest.mark.parametrize("suffix", [".jsonl", ".txt", ".json"])
def test_a_utf8_file_with_a_byte_order_mark_is_read(tmp_path, suffix):
    # what "save as UTF-8" gives in some editors: the mark is not part of the first message
    turns = [{"speaker": "Ana", "content": "Morning"}, {"speaker": "Ben", "content": "Café at ten?"}]
    text = {
        ".jsonl": "\n".join(json.dumps(t, ensure_ascii=False) for t in turns),
        ".json": json.dumps(turns, ensure_ascii=False),
        ".txt": "\n".join(f"{t['speaker']}: {t['content']}" for t in turns),
    }[suffix]
    path = tmp_path / f"talk{suffix}"
    path.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    with Memory(tmp_path / "h", background=False) as mem:
        report = mem.ingest(path, user="u", learn=False)
        (episode,) = mem.episodes(user="u")
    assert report.episodes == 1
    assert [(m.speaker, m.content) for m in episode.messages] == [("Ana", "Morning"), ("Ben", "Café at ten?")]


# ------------------------------------------------------------ where a bad message is


def test_a_bad_message_in_jsonl_names_its_line_in_the_file(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text('{"role": "user", "content": "hi there"}\n\n\n{"role": "assistant", "content": ""}\n',
                    encoding="utf-8")
    caught = _refused(tmp_path, path)
    assert str(caught).startswith("b.jsonl line 4: messages[1].content is missing or empty")
    assert caught.field == "messages[1].content"


def test_a_bad_date_in_jsonl_names_its_line_in_the_file(tmp_path):
    lines = [json.dumps(m) for m in _turns(4)]
    lines[2] = json.dumps({"speaker": "Ana", "content": "then", "at": "the day after tomorrow"})
    path = tmp_path / "dated.jsonl"
    path.write_text("\n\n".join(lines), encoding="utf-8")  # a blank line between messages
    caught = _refused(tmp_path, path)
    assert str(caught).startswith("dated.jsonl line 5: messages[2].at")
    assert caught.field == "messages[2].at"


def test_a_bad_message_in_a_transcript_names_the_line_it_begins_on(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("# notes\nAna: hi\ngoing on\n\nBen:  \t \nAna: bye\n", encoding="utf-8")
    caught = _refused(tmp_path, path)
    assert str(caught).startswith("chat.txt line 5: messages[1].content is missing or empty")
    assert caught.field == "messages[1].content"


# ------------------------------------------------------------ what was stored when a file is refused


def test_a_file_refused_in_its_first_part_says_nothing_was_stored(tmp_path):
    path = tmp_path / "talk.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": " "}]),
                    encoding="utf-8")
    caught = _refused(tmp_path, path)
    assert "nothing was stored" in str(caught)
    assert caught.field == "messages[1].content"


def test_the_cli_says_nothing_was_stored_for_a_refused_file(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "user"}\n', encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(path), "--user", "u", "--home", str(tmp_path / "h")])
    assert result.exit_code == 2
    assert "b.jsonl line 2: messages[1].content is missing or empty (nothing was stored)" in result.output


def test_a_second_run_of_a_refused_file_says_the_parts_before_were_skipped_not_stored(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 10)
    turns = _turns(60)
    lines = [json.dumps(m) for m in turns]
    lines[44] = json.dumps({"speaker": "Ana", "content": ""})
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        with pytest.raises(InvalidInput) as first:
            mem.ingest(path, user="u", learn=False)
        stored = sum(len(e.messages) for e in mem.episodes(user="u", limit=1000))
        assert 0 < stored < 45
        assert f"{stored} messages before it were stored;" in str(first.value)

        with pytest.raises(InvalidInput) as again:
            mem.ingest(path, user="u", learn=False)
        message = str(again.value)
        assert f"the {stored} messages before it were stored already and were skipped" in message
        assert "nothing new was stored" in message and f"({stored} messages before it were stored;" not in message
        assert sum(len(e.messages) for e in mem.episodes(user="u", limit=1000)) == stored

        # part of the way fixed: the old parts are skipped, the new ones stored, and the error says both
        lines[44] = json.dumps(turns[44])
        lines[54] = json.dumps({"speaker": "Ben", "content": ""})
        path.write_text("\n".join(lines), encoding="utf-8")
        with pytest.raises(InvalidInput) as mixed:
            mem.ingest(path, user="u", learn=False)
        now = sum(len(e.messages) for e in mem.episodes(user="u", limit=1000))
        assert now > stored
        assert f"{now - stored} messages before it were stored and {stored} more skipped as stored already" \
            in str(mixed.value)


# ------------------------------------------------------------ 'Speaker: text' lines


def test_a_continuation_line_with_a_time_and_a_link_stays_in_the_message_before_it(tmp_path):
    path = tmp_path / "meeting.txt"
    path.write_text(
        "Ana: Let's meet tomorrow\n"
        "at 10:30 in room B, see https://example.com/x\n"
        "https://example.com/agenda\n"
        "10:45 coffee\n"
        "Step 2: bring the slides\n"
        "Ben: Works for me\n",
        encoding="utf-8",
    )
    with Memory(tmp_path / "h", background=False) as mem:
        mem.ingest(path, user="u", learn=False)
        (episode,) = mem.episodes(user="u")
    assert [(m.speaker, m.content) for m in episode.messages] == [
        ("Ana", "Let's meet tomorrow\nat 10:30 in room B, see https://example.com/x\nhttps://example.com/agenda\n"
                "10:45 coffee\nStep 2: bring the slides"),
        ("Ben", "Works for me"),
    ]


@pytest.mark.parametrize("line, speaker, text", [
    ("Ana: hi", "Ana", "hi"),
    ("Dr. Smith: ok", "Dr. Smith", "ok"),
    ("张三：你好", "张三", "你好"),
    ("user: x", None, "x"),  # a role's name is the role, no speaker's name
    ("assistant: y", None, "y"),
    ("Caroline: I went to the support group at 10:30", "Caroline", "I went to the support group at 10:30"),
    ("Melanie Smith: see https://example.com", "Melanie Smith", "see https://example.com"),
    ("Speaker 1: hello", "Speaker 1", "hello"),
    ("Jean-Luc O'Brien: engage", "Jean-Luc O'Brien", "engage"),
])
def test_real_speakers_still_start_a_message_and_keep_their_continuation_lines(tmp_path, line, speaker, text):
    path = tmp_path / "chat.txt"
    path.write_text(f"Someone: before\n{line}\nat 11:15, after https://example.com/y\n", encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        mem.ingest(path, user="u", learn=False)
        (episode,) = mem.episodes(user="u")
    assert [(m.speaker, m.content) for m in episode.messages] == [
        ("Someone", "before"), (speaker, f"{text}\nat 11:15, after https://example.com/y")]


@pytest.mark.parametrize("line", [
    "at 10:30 in room B",
    "see https://example.com/x",
    "Meeting at 10: bring slides",
    "Note that the time is: noon",
    "Well, here it is: the plan",
    "C:\\Users\\ana\\notes.txt",
])
def test_lines_that_do_not_start_with_a_name_continue_the_message(tmp_path, line):
    path = tmp_path / "chat.txt"
    path.write_text(f"Ana: first\n{line}\n", encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        mem.ingest(path, user="u", learn=False)
        (episode,) = mem.episodes(user="u")
    assert [(m.speaker, m.content) for m in episode.messages] == [("Ana", f"first\n{line}")]



def test_locomos_own_release_file_of_wrapped_samples_is_read(tmp_path):
    from reverie import Memory

    def sample(text: str) -> dict:
        return {"speaker_a": "Caroline", "speaker_b": "Melanie", "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": text},
                              {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds brave!"}]}

    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "conv-26", "conversation": sample("I went to a support group."), "qa": []},
                                {"sample_id": "conv-27", "conversation": sample("I adopted a puppy."), "qa": []}]),
                    encoding="utf-8")
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest(path, user="ana", learn=False)
        said = " ".join(e.user_text for e in mem.episodes(user="ana"))
        assert "support group" in said and "puppy" in said


def test_a_key_value_line_in_a_message_is_its_text_and_a_speaker_may_stand_alone_on_a_line(tmp_path):
    from reverie import Memory

    path = tmp_path / "plan.txt"
    path.write_text("Ana: Here is my plan for the trip:\nFlight: Monday morning to Tokyo\nHotel: Park Hyatt\n"
                    "Bot: Sounds great.\nAna:\nI work as a carpenter in Leeds.\nBot:\nThat is great.\n",
                    encoding="utf-8")
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest(path, user="ana", learn=False)
        messages = [m for e in reversed(mem.episodes(user="ana")) for m in e.messages]
        assert [m.speaker or m.role for m in messages] == ["Ana", "bot", "Ana", "bot"]  # Bot: the agent's role
        assert messages[0].content == "Here is my plan for the trip:\nFlight: Monday morning to Tokyo\nHotel: Park Hyatt"
        assert messages[2].content == "I work as a carpenter in Leeds."


def test_messages_out_of_time_order_are_grouped_as_they_were_said(tmp_path):
    from reverie import Memory

    lines = [{"role": "assistant", "content": "Noted, Paris it is.", "timestamp": "2024-05-01T10:03:00Z"},
             {"role": "user", "content": "I am a vegan and I live in Paris.", "timestamp": "2024-05-01T10:02:00Z"},
             {"role": "assistant", "content": "Hello! How can I help?", "timestamp": "2024-05-01T10:01:00Z"},
             {"role": "user", "content": "Hi there", "timestamp": "2024-05-01T10:00:00Z"}]
    path = tmp_path / "newest-first.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    with Memory(tmp_path / "home", background=False) as mem:
        mem.ingest(path, user="ana", learn=False)
        pairs = sorted((e.occurred_at.minute, e.user_text, e.reply_text) for e in mem.episodes(user="ana"))
        assert pairs == [(0, "Hi there", "Hello! How can I help?"),
                         (2, "I am a vegan and I live in Paris.", "Noted, Paris it is.")]


def test_a_jsonl_line_cut_short_names_the_column_where_it_ends(tmp_path):
    path = tmp_path / "talk.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "user", "content": "yo"\n', encoding="utf-8")
    caught = _refused(tmp_path, path)
    assert "line 2 is not JSON: Expecting ',' delimiter (column 33)" in str(caught)  # just past its end
