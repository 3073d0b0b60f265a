"""Issue 9.4 and 9.5: every input has a documented size limit, and input that is valid JSON
but not valid text is a 4xx naming the field, never a 500 and never a partial write."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reverie import InvalidInput, Memory
from reverie.bench.inputs import message_of
from reverie.engines.heuristic import resolve_time_refs
from reverie.engines.heuristic.timerefs import TIME_PATTERNS
from reverie.inputs import check_json
from reverie.keys import create_key
from reverie.messages import clip
from reverie.server import create_app
from tests.live_server import live_server

NOW = datetime(2024, 6, 15, 12, tzinfo=timezone.utc)


# ------------------------------------------------------------ sizes
def test_a_fact_longer_than_the_cap_is_refused_naming_the_field(mem):
    limit = mem.settings.max_fact_chars
    with pytest.raises(InvalidInput) as err:
        mem.remember("x" * (limit + 1), user="ana")
    assert err.value.field == "content" and str(limit) in str(err.value)
    assert mem.facts(user="ana") == []
    fact = mem.remember("y" * limit, user="ana")
    with pytest.raises(InvalidInput):
        mem.update_fact(fact.id, user="ana", content="z" * (limit + 1))
    assert mem.fact(fact.id).content == "y" * limit


def test_the_fact_cap_is_a_setting(home):
    with Memory(home, background=False, max_fact_chars=40) as memory:
        with pytest.raises(InvalidInput):
            memory.remember("Takes the long way home through the park every day", user="ana")


def test_an_import_with_an_oversized_fact_is_refused_whole(mem):
    envelope = {"version": 1, "facts": [{"content": "short one"}, {"content": "w" * 5000}]}
    with pytest.raises(InvalidInput) as err:
        mem.import_(envelope, user="ana")
    assert err.value.field == "facts[1].content"
    assert mem.facts(user="ana") == []


def test_recall_matches_on_the_clipped_message_keeping_its_end(mem):
    mem.remember("Ana's marathon is in Lisbon", user="ana")
    query = "blah " * 200_000 + "where is my marathon?"
    result = mem.recall(query, user="ana", budget=300)
    assert len(result.query) <= mem.settings.max_query_chars
    assert "Lisbon" in result.context


def test_clip_keeps_short_messages_whole_and_long_ones_head_and_tail():
    assert clip("short", 100) == "short"
    clipped = clip("a" * 500 + "b" * 500, 100)
    assert clipped.startswith("a" * 47) and clipped.endswith("b" * 47) and len(clipped) <= 100


def test_a_turn_keeps_the_whole_long_message(mem):
    text = message_of(200_000)
    with mem.turn(text, user="ana") as turn:
        turn.complete("ok")
    assert mem.episode(turn.id).user_text == text.strip()


def _naive_time_refs(text: str, now: datetime) -> list[tuple[str, str, str]]:
    """The quadratic reference: each match checked against every span taken before."""
    taken, found = [], []
    for pattern, handler in TIME_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            if handler(m, now.date()) is None:
                continue
            taken.append((start, end))
            found.append((start, m.group(0).strip()))
    return [t for _, t in sorted(found)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["met in 2023", "last week", "in May 2023", "May", "2023", "去年", "上周",
                                 "yesterday", "last Monday", "on 8 May, 2023", " and ", "then "]), max_size=30))
def test_time_references_with_bisect_match_the_exhaustive_reference(parts):
    text = " ".join(parts)
    assert [r.text for r in resolve_time_refs(text, NOW)] == _naive_time_refs(text, NOW)


def test_many_time_references_all_resolve():
    text = "met in 2023 " * 20_000
    refs = resolve_time_refs(text, NOW)
    assert len(refs) == 20_000 and all(r.start.year == 2023 for r in refs)


# ------------------------------------------------------------ REST: bodies and text
@pytest.fixture(scope="module")
def api(tmp_path_factory):
    memory = Memory(tmp_path_factory.mktemp("limits") / "home", background=False, max_body_bytes=64 * 1024)
    key = create_key(memory.store, user="ana").secret
    memory.remember("Ana prefers short answers", user="ana", category="preference")
    with live_server(create_app(memory, mcp=False)) as url:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}",
                                                 "content-type": "application/json"}, timeout=30) as client:
            yield memory, client
    memory.close()


def state(memory: Memory) -> str:
    data = memory.export(user="ana")
    data.pop("exportedAt")
    for fact in data["facts"]:
        fact.pop("last_used_at", None)
    return json.dumps(data, sort_keys=True)


def test_a_body_over_the_limit_is_a_413_declared_or_streamed(api):
    memory, client = api
    before = state(memory)
    big = json.dumps({"content": "x" * 100_000}).encode()
    r = client.post("/api/memory/facts", content=big)
    assert r.status_code == 413 and r.json()["field"] == "body"

    def stream():
        yield b'{"content": "'
        for _ in range(20):
            yield b"x" * 10_000
        yield b'"}'

    r = client.post("/api/memory/facts", content=stream())
    assert r.status_code == 413
    assert state(memory) == before


def test_a_misspelled_field_is_named_as_unknown(api):
    _, client = api
    r = client.post("/api/memory/facts", content=json.dumps({"contnet": "hi"}))
    assert r.status_code == 422
    assert r.json()["field"] == "contnet" and "unknown field" in r.json()["detail"] and "content" in r.json()["detail"]


@pytest.mark.parametrize("path, body", [
    ("/api/memory/recall", {"query": "What happened with the billing migration and its replication lag?"}),
    ("/api/turns", {"message": "What happened with the billing migration and its replication lag?"}),
])
def test_a_budget_past_the_largest_is_a_clear_422_not_a_500(api, path, body):
    memory, client = api
    before = state(memory)
    for budget in (100_001, 10**20):
        r = client.post(path, content=json.dumps({**body, "budget": budget}))
        assert r.status_code == 422, r.text
        assert r.json()["field"] == "budget" and "100000" in r.json()["detail"]
    assert state(memory) == before
    assert client.post("/api/memory/recall", content=json.dumps({"query": body.get("query", "tea"),
                                                                  "budget": 100_000})).status_code == 200


def test_a_budget_past_the_largest_is_refused_in_python_and_in_settings(mem, home):
    with pytest.raises(InvalidInput, match="budget must be a whole number of tokens from 1 to 100,000"):
        mem.recall("What happened with the billing migration?", user="ana", budget=10**20)
    with pytest.raises(InvalidInput, match="budget"):
        Memory(home, background=False, budget=10**20)


def test_a_misspelled_field_of_an_ingested_message_is_named_and_nothing_is_stored(api):
    memory, client = api
    before = state(memory)
    r = client.post("/api/memory/ingest", content=json.dumps(
        {"messages": [{"role": "user", "content": "We moved to Porto", "timestmp": "2020-01-01T00:00:00"}]}))
    assert r.status_code == 422 and r.json()["field"] == "messages.0.timestmp"
    assert "unknown field" in r.json()["detail"]
    r = client.post("/api/memory/ingest", content=json.dumps({"messages": [{"role": "user", "content": 123}]}))
    assert r.status_code == 400 and r.json()["detail"] == "messages[0].content must be text, not int"
    assert state(memory) == before
    # every documented spelling still goes in
    r = client.post("/api/memory/ingest", content=json.dumps({"learn": False, "messages": [
        {"speaker": "Ana", "text": "We moved to Porto in May", "dia_id": "D9:1", "timestamp": "2023-05-02T10:00:00"}]}))
    assert r.status_code == 200 and r.json()["episodes"] == 1
    stored = memory.store.list_episodes("ana", limit=None)
    assert any(e.source_ids == ["D9:1"] and e.occurred_at.year == 2023 for e in stored)


def test_a_body_that_is_not_json_says_so(api):
    memory, client = api
    before = state(memory)
    r = client.post("/api/memory/recall", content="{bad json")
    assert r.status_code == 400 and r.json()["field"] == "body"
    assert r.json()["detail"].startswith("body: not valid JSON (at character 1:")
    r = client.post("/api/memory/facts", content='{"content": "x"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["detail"]
    assert state(memory) == before


LONE = "x\ud800y"
CASES = [
    ("POST", "/api/memory/facts", {"content": LONE}, "content"),
    ("POST", "/api/memory/facts", {"content": "ok", "tags": [LONE]}, "tags"),
    ("POST", "/api/memory/recall", {"query": LONE}, "query"),
    ("POST", "/api/memory/recall", {"query": "tea", "thread": LONE}, "thread"),
    ("POST", "/api/turns", {"message": LONE}, "message"),
    ("POST", "/api/turns", {"message": "hi", "thread": LONE}, "thread"),
    ("PUT", "/api/memory/profile/user.workContext", {"summary": LONE}, "summary"),
    ("POST", "/api/memory/import", {"version": 1, "facts": [{"content": LONE}]}, "facts[0].content"),
    ("POST", "/api/memory/import", {"version": 1, "notes": [{"date": "2024-01-01", "content": LONE}]},
     "notes[0].content"),
]


@pytest.mark.parametrize("method, path, body, field", CASES)
def test_a_lone_surrogate_is_a_400_naming_the_field(api, method, path, body, field):
    memory, client = api
    before = state(memory)
    r = client.request(method, path, content=json.dumps(body))  # ensure_ascii: "\ud800" travels as JSON
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field
    assert state(memory) == before


def test_an_import_nested_900_deep_is_a_400_naming_where(api):
    memory, client = api
    before = state(memory)
    nested: list = []
    cursor = nested
    for _ in range(900):
        cursor.append([])
        cursor = cursor[0]
    r = client.post("/api/memory/import", content=json.dumps({"version": 1, "facts": nested}))
    assert r.status_code == 400 and r.json()["field"].startswith("facts[0]")
    r = client.post("/api/memory/import", content=b'{"version": 1, "facts": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert r.status_code == 400 and r.json()["field"] == "body"
    assert state(memory) == before


@pytest.mark.parametrize("doc, limit, field", [
    ({"facts": [{"content": "ok"}, {"content": "ok", "tags": ["fine", "\u00e9\udc00"]}]}, 10, "facts[1].tags[1]"),
    ({"facts": [{"k\ud800": 1}]}, 10, "facts[0]"),  # a key names the record that holds it
    ([["ok", ["x\udfff"]]], 10, "$[0][1][0]"),
    ({"a": {"b": {"c": []}}}, 3, "a.b.c"),  # the document is level 1
    ([[["x"]]], 2, "$[0][0]"),
])
def test_check_json_names_the_path_of_what_it_refuses(doc, limit, field):
    with pytest.raises(InvalidInput) as refused:
        check_json(doc, limit)
    assert refused.value.field == field and str(refused.value).startswith(field)
    check_json({"a": {"b": {"c": []}}}, 4)
    check_json({"caf\u00e9": ["\u674e\u96f7", "\U0001f600"]}, 3)  # text beyond ASCII that is valid passes


def test_python_import_nested_deeper_than_the_recursion_limit_is_refused(mem):
    text = '{"version": 1, "facts": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(InvalidInput):
        mem.import_(text, user="ana")


# ------------------------------------------------------------ fuzz: no 500, no change on rejection
NASTY = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(["\ud800", "\udfff", "\x00", "\u202e", "\u200f", "＜", "＞", "</memory>",
                              "a", "李", " ", "\n", "../", "2024-01-01"]), max_size=12).map("".join),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(content=NASTY, query=NASTY, thread=NASTY, summary=NASTY, category=NASTY, date=NASTY)
def test_fuzzed_text_never_gets_a_500_and_a_rejection_changes_nothing(api, content, query, thread, summary,
                                                                      category, date):
    memory, client = api
    requests = [
        ("POST", "/api/memory/facts", {"content": content, "category": category}),
        ("POST", "/api/memory/recall", {"query": query, "thread": thread}),
        ("PUT", "/api/memory/profile/user.topOfMind", {"summary": summary}),
        ("POST", "/api/memory/import", {"version": 1, "facts": [{"content": content, "category": category}],
                                        "notes": [{"date": date, "content": summary}]}),
    ]
    rng = random.Random(len(content))
    rng.shuffle(requests)
    for method, path, body in requests:
        before = state(memory)
        r = client.request(method, path, content=json.dumps(body))
        assert r.status_code < 500, (method, path, body, r.text)
        if r.status_code >= 400:
            assert state(memory) == before, (method, path, body, r.text)
            assert r.json().get("field") or r.json().get("detail")


def test_tags_and_a_feedback_reason_have_their_limits(mem):
    with pytest.raises(InvalidInput, match="an item takes at most 32"):
        mem.remember("Plays the cello", user="ana", tags=[f"t{i}" for i in range(33)])
    with pytest.raises(InvalidInput, match="a tag is at most 200 characters"):
        mem.remember("Plays the cello", user="ana", tags=["x" * 201])
    assert mem.facts(user="ana") == []
    [episode] = mem.add(["We talked about the cello"], user="ana")
    with pytest.raises(InvalidInput, match="reason is 2,001 characters"):
        mem.feedback(episode.id, "confirmed", reason="r" * 2001, user="ana")
    assert mem.episode(episode.id, user="ana").feedback is None
    mem.feedback(episode.id, "confirmed", reason="helpful", user="ana")


def test_an_import_too_deep_names_the_setting_as_it_is_set_whether_read_whole_or_streamed(mem, tmp_path):
    nested: list = []
    for _ in range(40):
        nested = [nested]
    deep = {"version": 1, "facts": [{"content": "x", "provenance": {"a": nested}}]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(deep), encoding="utf-8")
    for load in (lambda: mem.import_(deep, user="ana"), lambda: mem.import_file(path, user="ana")):
        with pytest.raises(InvalidInput, match=r"nested deeper than max_import_depth \(32 levels\)"):
            load()
