"""Ingest streams: a file is read a line at a time and stored and learned in parts, and the
parts add up to exactly what one add of the whole conversation would store."""

from __future__ import annotations

import json
import random

import pytest

from reverie import Memory
from reverie import ingest as ingest_module
from reverie.errors import InvalidInput
from reverie.ingest import exchange_parts
from reverie.messages import group, parse_message

SPEAKERS = ("Ana", "Ben", "Cy")


def _conversation(n: int, seed: int = 7) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [
        {"speaker": rng.choice(SPEAKERS), "content": f"message {i} about the {rng.choice(['boat', 'garden', 'trip'])}"}
        for i in range(n)
    ]


def _texts(groups):
    return [[m.content for m in g] for g in groups]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 17])
def test_the_parts_of_a_conversation_group_into_the_exchanges_of_the_whole(size):
    raw = _conversation(200)
    whole = group([parse_message(m, i, None) for i, m in enumerate(raw)], "exchange")
    parts = list(exchange_parts(iter(raw), size))
    assert len(parts) > 1
    assert all(len(p) >= size for p in parts[:-1])
    assert _texts(g for p in parts for g in group(p, "exchange")) == _texts(whole)


def test_exchange_parts_reads_its_input_lazily():
    read = []

    def source():
        for i, m in enumerate(_conversation(100)):
            read.append(i)
            yield m

    parts = exchange_parts(source(), 10)
    first = next(parts)
    assert len(first) >= 10
    assert len(read) < 30  # the first part came before the rest of the input was read


def test_a_streamed_jsonl_file_stores_what_one_add_of_it_stores(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 25)
    raw = _conversation(300)
    path = tmp_path / "talk.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in raw) + "\n", encoding="utf-8")

    with Memory(tmp_path / "streamed", background=False) as mem:
        report = mem.ingest(path, user="u")
        streamed = mem.episodes(user="u", limit=1000)
        backlog = mem.learning_backlog(user="u")
    with Memory(tmp_path / "whole", background=False) as mem:
        added = mem.add(raw, user="u", thread="talk")
        mem.flush(user="u")
        whole = mem.episodes(user="u", limit=1000)

    assert report.episodes == len(added) == len(whole) == len(streamed)
    key = lambda e: [(m.speaker, m.content) for m in e.messages]  # noqa: E731
    assert sorted(map(key, streamed)) == sorted(map(key, whole))
    assert report.learned == len(streamed) and backlog[0] == 0
    assert {e.thread for e in streamed} == {"talk"}


def test_identical_exchanges_in_different_parts_are_all_kept_and_a_rerun_skips_them(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 4)
    # no times: the same two lines again are the same input, yet each one in the file is kept
    raw = [{"speaker": s, "content": c} for _ in range(6) for s, c in (("Ana", "Morning!"), ("Ben", "Morning, Ana."))]
    path = tmp_path / "greetings.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in raw), encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        first = mem.ingest(path, user="u", learn=False)
        again = mem.ingest(path, user="u", learn=False)
    assert first.episodes == 6 and first.skipped == 0
    assert again.episodes == 0 and again.skipped == 6


def test_a_bad_line_stops_the_ingest_there_and_says_what_was_stored(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 10)
    raw = _conversation(60)
    lines = [json.dumps(m) for m in raw]
    lines[44] = "{not json"
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        with pytest.raises(InvalidInput) as caught:
            mem.ingest(path, user="u")
        message = str(caught.value)
        assert "line 45 is not JSON" in message and "messages before it were stored" in message
        assert "(column 2)" in message  # where on the line: `{not json` breaks at its second character
        stored = len(mem.episodes(user="u", limit=1000))
        assert stored > 0
        lines[44] = json.dumps(raw[44])
        path.write_text("\n".join(lines), encoding="utf-8")
        fixed = mem.ingest(path, user="u")
        assert fixed.skipped == stored
        assert len(mem.episodes(user="u", limit=1000)) == stored + fixed.episodes


def test_speaker_lines_stream_with_their_continuation_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "STREAM_MESSAGES", 2)
    path = tmp_path / "chat.txt"
    path.write_text("# a comment\nAna: first line\nstill Ana\nBen: reply\nAna: again\nBen: ok then, the boat\n",
                    encoding="utf-8")
    with Memory(tmp_path / "h", background=False) as mem:
        report = mem.ingest(path, user="u", learn=False)
        episodes = sorted(mem.episodes(user="u"), key=lambda e: e.messages[0].content)
    assert report.episodes == 2
    assert episodes[0].messages[0].content == "again"
    assert episodes[1].messages[0].content == "first line\nstill Ana"


def test_ingest_of_something_that_is_not_a_list_of_messages_is_refused(tmp_path):
    with Memory(tmp_path / "h", background=False) as mem:
        with pytest.raises(InvalidInput, match="list of messages"):
            mem.ingest({"speaker": "Ana", "content": "hi"}, user="u")  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="empty"):
            mem.ingest([], user="u")


def test_bench_ingest_writes_the_file_once_and_measures_a_child(tmp_path):
    from reverie.bench.stream import run_ingest_bench

    first = run_ingest_bench(300, cache=tmp_path, learn=True)
    path = tmp_path / "turns-300.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 300 and len(set(lines)) == 300  # generated turns, none repeated
    assert first.turns == 300 and first.episodes > 0 and first.learned == first.episodes
    assert first.rss_bytes > 10_000_000 and first.seconds > 0
    stamp = path.stat().st_mtime_ns
    again = run_ingest_bench(300, cache=tmp_path, learn=False)
    assert path.stat().st_mtime_ns == stamp  # the cached file is reused
    assert again.episodes == first.episodes and again.learned == 0
