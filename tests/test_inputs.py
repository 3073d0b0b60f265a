"""Input cleaning (reverie.inputs): zero-width characters that split a word are dropped from stored text, and
an id that holds a mobile number after a Latin prefix ("wx-13987654321") is stored as a pseudonym, never as
given, nor echoed back in an error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from reverie import InvalidInput, Memory
from reverie.inputs import clean_text
from reverie.keys import create_key
from reverie.server import create_app
from tests.live_server import live_server

PHONE = "13987654321"


@pytest.mark.parametrize(
    "text, stored",
    [
        ("喜欢\u200b喝\u200b茶", "喜欢喝茶"),
        ("喜欢\u2060喝茶\ufeff", "喜欢喝茶"),
        ("\ufeff喜欢喝茶", "喜欢喝茶"),
        ("喜欢\u200d喝茶", "喜欢喝茶"),  # a joiner between Han characters joins nothing
        ("likes\u200c tea\u200d", "likes tea"),
        ("mail bob\u200b@example.com", "mail [email]"),
        # joiners that shape an emoji sequence or a script stay
        ("👩\u200d💻 writes code", "👩\u200d💻 writes code"),
        ("🏳\ufe0f\u200d🌈 parade", "🏳\ufe0f\u200d🌈 parade"),
        ("👨\u200d👩\u200d👧 family photo, ب\u200cه", "👨\u200d👩\u200d👧 family photo, ب\u200cه"),
        ("می\u200cخواهم", "می\u200cخواهم"),
        ("क्\u200dष", "क्\u200dष"),
    ],
)
def test_clean_text_drops_zero_width_characters_that_join_nothing(text, stored):
    assert clean_text(text, "content") == stored


def test_text_of_invisible_characters_only_is_still_refused_as_showing_nothing():
    with pytest.raises(InvalidInput, match="content shows nothing"):
        clean_text("\u200b\u200d\ufeff", "content")
    with pytest.raises(InvalidInput, match="content is empty"):
        clean_text(" \n", "content")


def test_a_fact_written_with_zero_width_spaces_is_the_fact_without_them_and_is_found(mem):
    first = mem.remember("喜欢喝茶", user="ana")
    again = mem.remember("喜欢\u200b喝\u200b茶", user="ana")
    assert again.content == "喜欢喝茶"
    assert [f.content for f in mem.facts(user="ana")] == ["喜欢喝茶"]
    assert again.id == first.id
    recalled = mem.recall("喝茶", user="ana", track=False)
    assert any("喜欢喝茶" in item.text for item in recalled.items)


def _files_holding(home: Path, value: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


def test_ids_that_end_in_a_mobile_number_are_stored_as_pseudonyms(home):
    with Memory(home, background=False) as mem:
        mem.add([{"role": "user", "content": "你好", "source_id": f"msg-{PHONE}"}], user="ana", thread=f"wx-{PHONE}")
        mem.add(["我住在上海"], user="ana", thread=f"qq_{PHONE}", agent=f"bot-{PHONE}")
        [wx] = mem.episodes(user="ana", thread=f"wx-{PHONE}")
        [qq] = mem.episodes(user="ana", thread=f"qq_{PHONE}")
        assert wx.thread.startswith("wx-[phone]#") and qq.thread.startswith("qq_[phone]#")
        assert qq.agent is not None and qq.agent.startswith("bot-[phone]#")
        mem.flush(user="ana")
        assert PHONE not in json.dumps(mem.export(user="ana"), ensure_ascii=False)
    assert _files_holding(home, PHONE) == []


def test_a_missing_fact_named_by_an_id_holding_a_phone_number_is_refused_without_echoing_it(mem):
    key = create_key(mem.store, user="ana").secret
    with live_server(create_app(mem)) as url:
        answer = httpx.get(f"{url}/api/memory/facts/fact_{PHONE}", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 404
    assert PHONE not in answer.text and "fact_[phone]" in answer.json()["detail"]


def test_a_fact_that_is_nothing_but_sensitive_data_is_refused_not_stored_as_a_placeholder(tmp_path):
    with Memory(tmp_path / "home", background=False) as mem:
        for secret in ("sk-proj-abcdEFGHijklMNOPqrstUVWXyz012345", "ana@example.com, +1 415 555 0100"):
            with pytest.raises(InvalidInput, match="nothing but sensitive data"):
                mem.remember(secret, user="ana")
        assert mem.facts(user="ana") == []
        assert mem.remember("my email is ana@example.com", user="ana").content == "my email is [email]"


def test_a_recall_query_longer_than_any_text_is_refused_like_every_other_text(mem):
    with pytest.raises(InvalidInput, match="query is 1,000,001 characters; at most 1,000,000"):
        mem.recall("a" * 1_000_001, user="ana")
    assert mem.recall("a" * 1_000_000, user="ana").found == 0
