"""The REST door, through a real uvicorn on 127.0.0.1 and httpx: every endpoint,
API keys, two users' isolation, bad inputs, turns, dreams, and draining on SIGTERM."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app as cli
from reverie.keys import create_key, revoke_key
from reverie.server import create_app
from reverie.server.shapes import ErrorAnswer, TurnOpened
from tests.fake_openai import Reply
from tests.live_server import free_port, live_server, wait_for, wait_until
from tests.pg import drop_schema, new_schema

ROOT = Path(__file__).resolve().parents[1]


class Api:
    def __init__(self, url: str, memory: Memory):
        self.url = url
        self.memory = memory
        self.keys = {user: create_key(memory.store, user=user).secret for user in ("ana", "bob")}
        self.keys["admin"] = create_key(memory.store, user="ops", admin=True, name="console").secret

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def api(request, tmp_path_factory):
    """The app over SQLite, then over PostgreSQL (a schema of its own, dropped afterwards)."""
    schema, store = new_schema() if request.param == "postgresql" else (None, None)
    try:
        memory = Memory(tmp_path_factory.mktemp("rest") / "home", background=False, store=store)
        with live_server(create_app(memory)) as url:
            yield Api(url, memory)
        memory.close()
    finally:
        if schema:
            drop_schema(schema)


@pytest.fixture(scope="module")
def ana(api):
    with api.client("ana") as client:
        yield client


@pytest.fixture(scope="module")
def bob(api):
    with api.client("bob") as client:
        yield client


@pytest.fixture(scope="module")
def admin(api):
    with api.client("admin") as client:
        yield client


def add_fact(client: httpx.Client, content: str, **extra) -> dict:
    r = client.post("/api/memory/facts", json={"content": content, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def test_healthz_answers_without_a_key(api):
    r = httpx.get(f"{api.url}/healthz")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


def test_no_key_or_an_unknown_key_is_401(api):
    r = httpx.get(f"{api.url}/api/memory")
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert "API key" in r.json()["detail"]
    assert "[token]" not in r.json()["detail"] and "'Authorization: Bearer' followed by your key" in r.json()["detail"]
    bad = httpx.get(f"{api.url}/api/memory", headers={"Authorization": "Bearer rv_not-a-real-key"})
    assert bad.status_code == 401


def test_a_key_sent_without_the_word_bearer_is_told_how_to_write_the_header(api):
    # it was "no API key" for a key that was sent, with a hint redaction had made "Bearer [token]..."
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for authorization in (api.keys["ana"], "Basic Zm9vOmJhcg==", "Bearer"):
        headers = {"Authorization": authorization}
        rest = httpx.get(f"{api.url}/api/memory/profile", headers=headers)
        mcp = httpx.post(f"{api.url}/mcp", json=ping, headers={**headers, "Accept": "application/json"})
        assert rest.status_code == mcp.status_code == 401
        for said in (rest.json()["detail"], mcp.json()["error"]["message"]):
            assert said.startswith("the Authorization header holds no Bearer key: write it as `Authorization: Bearer`")
            assert "X-API-Key" in said and api.keys["ana"] not in said
    # the key in X-API-Key beside such a header still works, and "bearer" in any case
    assert httpx.get(f"{api.url}/api/memory/profile", headers={"Authorization": "Basic Zm9vOmJhcg==",
                                                               "X-API-Key": api.keys["ana"]}).status_code == 200
    assert httpx.get(f"{api.url}/api/memory/profile",
                     headers={"Authorization": f"bearer {api.keys['ana']}"}).status_code == 200


def test_a_revoked_key_is_401(api):
    new = create_key(api.memory.store, user="ana", name="to revoke")
    headers = {"Authorization": f"Bearer {new.secret}"}
    assert httpx.get(f"{api.url}/api/memory/profile", headers=headers).status_code == 200
    revoke_key(api.memory.store, new.key.id)
    assert httpx.get(f"{api.url}/api/memory/profile", headers=headers).status_code == 401


def test_the_x_api_key_header_works_too(api):
    r = httpx.get(f"{api.url}/api/memory/profile", headers={"X-API-Key": api.keys["bob"]})
    assert r.status_code == 200
    assert "workContext" in r.json()["user"]


def test_a_stated_fact_says_whether_it_was_created_reinforced_or_superseded(api):
    with api.client("admin") as admin:  # a user of its own: the other tests count ana's facts
        post = lambda body: admin.post("/api/memory/facts", params={"user": "cal"}, json=body)  # noqa: E731
        first = post({"content": "Takes 5 mg of melatonin at night"})
        assert first.status_code == 201 and first.json()["outcome"] == "created"
        again = post({"content": "takes 5 mg of melatonin at night."})
        assert again.status_code == 200 and again.json()["outcome"] == "reinforced"
        assert again.json()["id"] == first.json()["id"] and again.json()["uses"] == first.json()["uses"] + 1
        newer = post({"content": "Takes 10 mg of melatonin at night"})
    assert newer.status_code == 201 and newer.json()["outcome"] == "superseded"
    assert newer.json()["supersedes"] == first.json()["id"] and newer.json()["user"] == "cal"


def test_a_fact_patch_clears_the_area_with_null_and_refuses_other_nulls_and_an_empty_patch(api):
    with api.client("admin") as admin:
        fact = admin.post("/api/memory/facts", params={"user": "dee"},
                          json={"content": "Prefers tabs", "category": "preference", "area": "Code"}).json()
        patch = lambda body: admin.patch(f"/api/memory/facts/{fact['id']}", params={"user": "dee"}, json=body)  # noqa: E731
        for body, field in (({"content": None}, "content"), ({}, "content"), ({"confidence": None}, "confidence")):
            r = patch(body)
            assert r.status_code == 400 and r.json()["field"] == field, r.text
        assert admin.get(f"/api/memory/facts/{fact['id']}", params={"user": "dee"}).json()["area"] == "Code"
        cleared = patch({"area": None})
        assert cleared.status_code == 200 and cleared.json()["area"] is None
        assert cleared.json()["content"] == "Prefers tabs"


def test_fact_lifecycle_create_read_edit_reinforce_archive_delete(ana):
    fact = add_fact(ana, "Prefers answers with the conclusion first", category="preference", area="Communication")
    assert fact["status"] == "consolidated" and fact["user"] == "ana"
    fid = fact["id"]
    assert ana.get(f"/api/memory/facts/{fid}").json()["content"] == fact["content"]

    edited = ana.patch(f"/api/memory/facts/{fid}", json={"content": "Wants the conclusion first, then details"})
    assert edited.status_code == 200
    assert edited.json()["content"] == "Wants the conclusion first, then details"

    reinforced = ana.post(f"/api/memory/facts/{fid}/reinforce").json()
    assert reinforced["uses"] == fact["uses"] + 1

    archived = ana.delete(f"/api/memory/facts/{fid}")
    assert archived.json() == {"id": fid, "status": "archived"}
    assert fid not in [f["id"] for f in ana.get("/api/memory/facts").json()]
    assert fid in [f["id"] for f in ana.get("/api/memory/facts", params={"status": "archived"}).json()]

    assert ana.delete(f"/api/memory/facts/{fid}", params={"hard": "true"}).json()["status"] == "deleted"
    assert ana.get(f"/api/memory/facts/{fid}").status_code == 404


def test_one_users_key_cannot_see_or_touch_another_users_fact(ana, bob):
    fid = add_fact(ana, "Ana keeps her passport in the blue drawer")["id"]
    for method, path, body in (
        ("GET", f"/api/memory/facts/{fid}", None),
        ("PATCH", f"/api/memory/facts/{fid}", {"content": "stolen"}),
        ("POST", f"/api/memory/facts/{fid}/reinforce", None),
        ("DELETE", f"/api/memory/facts/{fid}", None),
    ):
        r = bob.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
    assert fid not in [f["id"] for f in bob.get("/api/memory/facts").json()]
    assert "passport" not in bob.post("/api/memory/recall", json={"query": "where is the passport"}).json()["context"]
    # untouched for its owner
    assert ana.get(f"/api/memory/facts/{fid}").json()["content"] == "Ana keeps her passport in the blue drawer"


def test_a_plain_key_cannot_name_another_user(bob):
    r = bob.get("/api/memory/facts", params={"user": "ana"})
    assert r.status_code == 403
    assert bob.get("/api/memory/facts", params={"user": "bob"}).status_code == 200


def test_an_admin_key_acts_for_the_user_it_names(ana, admin):
    fid = add_fact(ana, "Ana's team ships on Thursdays")["id"]
    seen = admin.get(f"/api/memory/facts/{fid}", params={"user": "ana"})
    assert seen.status_code == 200
    assert admin.get(f"/api/memory/facts/{fid}").status_code == 404  # its own user is ops
    made = admin.post("/api/memory/facts", params={"user": "bob"}, json={"content": "Bob runs the build server"})
    assert made.status_code == 201 and made.json()["user"] == "bob"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("POST", "/api/memory/facts", {}, 422, "content"),
        ("POST", "/api/memory/facts", {"content": "   "}, 400, "content"),
        ("POST", "/api/memory/facts", {"content": "x", "confidence": 2}, 400, "confidence"),
        ("POST", "/api/memory/facts", {"content": "x", "area": "Nowhere"}, 400, "area"),
        ("POST", "/api/memory/facts", {"content": "x", "colour": "red"}, 422, "colour"),
        ("PUT", "/api/memory/profile/user.shoeSize", {"summary": "42"}, 400, "section"),
        ("POST", "/api/memory/recall", {"query": "tea", "budget": 0}, 422, "budget"),
        ("POST", "/api/turns", {"message": ""}, 400, "message"),
        ("POST", "/api/memory/feedback", {"id": "ep_x", "status": "loved"}, 422, "status"),
        ("GET", "/api/memory/facts?status=lost", None, 422, "status"),
        ("GET", "/api/memory/episodes?limit=0", None, 422, "limit"),
        ("POST", "/api/memory/import", {"format": "nope"}, 400, None),
    ],
)
def test_bad_input_is_a_4xx_that_names_the_field(ana, method, path, body, status, field):
    r = ana.request(method, path, json=body)
    assert r.status_code == status, r.text
    if field:
        assert r.json()["field"] == field
        assert field in r.json()["detail"]


def test_a_malformed_json_body_is_a_400_naming_the_body_not_500(ana):
    r = ana.post("/api/memory/facts", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["field"] == "body"


def test_profile_section_put_then_get_and_overview(ana):
    r = ana.put("/api/memory/profile/user.cognitiveStyle", json={"summary": "Thinks in diagrams"})
    assert r.status_code == 200
    assert r.json()["user"]["cognitiveStyle"]["summary"] == "Thinks in diagrams"
    assert ana.get("/api/memory/profile").json()["user"]["cognitiveStyle"]["summary"] == "Thinks in diagrams"
    assert ana.post("/api/memory/facts", json={"content": "Sketches plans on paper first"}).status_code == 201
    overview = ana.get("/api/memory").json()
    assert overview["user"] == "ana"
    assert overview["profile"]["user"]["cognitiveStyle"]["summary"] == "Thinks in diagrams"
    assert overview["counts"]["facts"] == len(overview["facts"]) > 0


def test_recall_delivers_a_remembered_fact_with_reasons(ana):
    add_fact(ana, "Ana's cat is called Miso", category="identity")
    r = ana.post("/api/memory/recall", json={"query": "What is my cat called?", "budget": 500, "explain": True})
    assert r.status_code == 200
    data = r.json()
    assert "Miso" in data["context"]
    assert data["tokens"] <= 500
    item = next(i for i in data["items"] if "Miso" in i["text"])
    assert item["kind"] == "fact" and item["parts"]


def test_turn_opens_completes_once_then_conflicts(ana, bob):
    add_fact(ana, "Ana is learning Portuguese for a move to Lisbon")
    opened = ana.post("/api/turns", json={"message": "How is my Portuguese going?", "thread": "lang"})
    assert opened.status_code == 201
    turn = opened.json()
    assert turn["turn_id"].startswith("ep_") and turn["route"] in ("shallow", "medium", "deep")
    assert set(turn) == set(TurnOpened.model_fields)  # the same shape as MCP's process_message
    assert "Portuguese" in turn["context"]
    pending = ana.get("/api/memory/episodes", params={"thread": "lang", "status": "pending"}).json()
    assert [e["id"] for e in pending] == [turn["turn_id"]]

    assert bob.post(f"/api/turns/{turn['turn_id']}/complete", json={"reply": "hijack"}).status_code == 404
    done = ana.post(f"/api/turns/{turn['turn_id']}/complete", json={"reply": "Steady progress: keep the daily lessons."})
    assert done.status_code == 200
    assert done.json() == {"turn_id": turn["turn_id"], "status": "completed", "late": False}
    again = ana.post(f"/api/turns/{turn['turn_id']}/complete", json={"reply": "twice"})
    assert again.status_code == 409
    assert "already completed" in again.json()["detail"]


def test_a_secret_of_a_turns_message_repeated_in_its_reply_is_taken_out_of_the_reply(ana):
    opened = ana.post("/api/turns", json={"message": "my new wifi password is Zebra#4421x", "thread": "echo"}).json()
    done = ana.post(f"/api/turns/{opened['turn_id']}/complete", json={"reply": "Saved Zebra#4421x for you."})
    assert done.status_code == 200
    [stored] = ana.get("/api/memory/episodes", params={"thread": "echo"}).json()
    assert "Zebra#4421x" not in json.dumps(stored) and stored["reply_text"] == "Saved [password] for you."


def test_ingest_stores_a_conversation_once_and_learns(ana):
    talk = [{"speaker": "Ana", "content": "I moved my sourdough starter to the fridge"},
            {"speaker": "Bot", "content": "Good idea for slowing it down."}]
    first = ana.post("/api/memory/ingest", json={"messages": talk, "thread": "baking"})
    assert first.status_code == 200 and first.json()["episodes"] == 1 and first.json()["learned"] >= 1
    again = ana.post("/api/memory/ingest", json={"messages": talk, "thread": "baking"}).json()
    assert (again["episodes"], again["skipped"]) == (0, 1)


def test_feedback_marks_an_episode(ana):
    turn = ana.post("/api/turns", json={"message": "Recommend a podcast about jazz"}).json()
    ana.post(f"/api/turns/{turn['turn_id']}/complete", json={"reply": "Try 'Jazz Library'."})
    r = ana.post("/api/memory/feedback", json={"id": turn["turn_id"], "status": "confirmed", "reason": "liked it"})
    assert r.status_code == 200
    assert r.json()["feedback"]["status"] == "confirmed"


def test_flush_learns_from_queued_turns_and_tags_list_them(api):
    with api.client("admin") as admin:
        # a user of its own, so that other tests' queued turns do not count here
        turn = admin.post("/api/turns", params={"user": "dora"}, json={"message": "I am a marine biologist studying octopus behaviour"}).json()
        admin.post(f"/api/turns/{turn['turn_id']}/complete", params={"user": "dora"}, json={"reply": "Fascinating field!"})
        assert admin.post("/api/memory/flush", params={"user": "dora"}).json() == {"learned": 1, "waiting": 0, "error": ""}
        assert admin.post("/api/memory/flush", params={"user": "dora"}).json() == {"learned": 0, "waiting": 0, "error": ""}
        tags = admin.get("/api/tags", params={"user": "dora"}).json()
    assert tags and all({"name", "status", "items"} <= set(t) for t in tags)
    assert any("octopus" in t["name"] for t in tags)


def test_export_then_import_into_another_user(ana, admin):
    add_fact(ana, "Ana takes her coffee black")
    envelope = ana.get("/api/memory/export")
    assert envelope.status_code == 200
    r = admin.post("/api/memory/import", params={"user": "carol"}, json=envelope.json())
    assert r.status_code == 200, r.text
    assert r.json()["facts"] >= 1
    contents = [f["content"] for f in admin.get("/api/memory/facts", params={"user": "carol"}).json()]
    assert "Ana takes her coffee black" in contents


def dream_until_done(client: httpx.Client, **body) -> dict:
    r = client.post("/api/memory/dream", json=body)
    assert r.status_code == 202, r.text
    status_url = r.json()["status_url"]
    assert r.headers["location"] == status_url
    deadline = time.monotonic() + 20
    while (run := client.get(status_url).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, run
        time.sleep(0.05)
    return run


def test_dream_is_accepted_with_a_status_url_polled_to_completion(ana):
    ana.post("/api/memory/flush")
    run = dream_until_done(ana, days=2)
    assert run["status"] == "done", run
    assert run["user"] == "ana" and run["days"] == 2


def test_dream_days_out_of_range_is_400_naming_days(ana):
    r = ana.post("/api/memory/dream", json={"days": 0})
    assert r.status_code == 400
    assert r.json()["field"] == "days"


def test_another_users_dream_run_is_404(ana, bob):
    run = ana.post("/api/memory/dream", json={}).json()
    assert bob.get(run["status_url"]).status_code == 404


def _walk(client: httpx.Client, path: str, **params) -> list[list[dict]]:
    """Every page of a list, following each page's Link rel="next" to the end."""
    pages, r = [], client.get(path, params=params)
    while True:
        assert r.status_code == 200, r.text
        pages.append(r.json())
        following = r.links.get("next", {}).get("url")
        if following is None:
            return pages
        r = client.get(following)


def test_lists_that_grow_come_a_page_at_a_time_and_the_pages_hold_each_item_once(api, admin):
    mem = api.memory
    for n in range(105):  # more than the overview's 100, each its own fact (no near-duplicates)
        mem.remember(f"Project orbit{n} runs on module kestrel{n} with sensor lumen{n}", user="pager")
    days = [f"2024-05-0{d}T10:00:00Z" for d in range(1, 6)]
    for n, day in enumerate(days):
        mem.add([{"role": "user", "content": f"I always want a summary of topic tundra{n} first", "at": day}],
                user="pager", thread=f"t{n}")
    mem.flush(user="pager")

    every = mem.facts(user="pager")
    facts = _walk(admin, "/api/memory/facts", user="pager", limit=40)
    assert len(every) > 105 and [len(p) for p in facts] == [40, 40, len(every) - 80]
    assert sorted(f["id"] for p in facts for f in p) == sorted(f.id for f in every)
    uses = [f["uses"] for p in facts for f in p]
    assert uses == sorted(uses, reverse=True)  # most used first, across pages

    notes = _walk(admin, "/api/memory/notes", user="pager", limit=2)
    dates = [n["date"] for p in notes for n in p]
    assert len(dates) == len(mem.notes(user="pager")) == 5 and dates == sorted(dates, reverse=True)

    episodes = _walk(admin, "/api/memory/episodes", user="pager", limit=2)
    assert [e["id"] for p in episodes for e in p] == [e.id for e in mem.episodes(user="pager", limit=None)]

    tags = _walk(admin, "/api/tags", user="pager", limit=3)
    names = [t["name"] for p in tags for t in p]
    assert len(names) > 3 and names == sorted(t["name"] for t in mem.tags(user="pager"))

    overview = admin.get("/api/memory", params={"user": "pager"}).json()
    assert len(overview["facts"]) == 100 and overview["counts"]["facts"] == len(every)
    rest = _walk(admin, "/api/memory/facts", user="pager", after=overview["facts_next"])
    assert {f["id"] for f in overview["facts"]} | {f["id"] for p in rest for f in p} == {f.id for f in mem.facts(user="pager")}

    for n in range(5):
        mem.add_knowledge(f"Runbook {n}", f"- step {n}", user="pager")
    knowledge = _walk(admin, "/api/memory/knowledge", user="pager", limit=2)
    assert [[d["title"] for d in p] for p in knowledge] == [["Runbook 4", "Runbook 3"], ["Runbook 2", "Runbook 1"],
                                                            ["Runbook 0"]]  # the newest first
    assert admin.get("/api/memory/knowledge", params={"user": "pager", "limit": 101}).status_code == 422

    from datetime import datetime, timezone

    for d in (1, 2, 3):  # a diary for each of three days
        run = mem.dream(user="pager", days=1, force=True, now=datetime(2024, 5, d, 12, tzinfo=timezone.utc))
        assert run.status == "done", run.report
    diaries = _walk(admin, "/api/memory/diaries", user="pager", limit=2)
    assert [list(p) for p in diaries] == [["2024-05-03", "2024-05-02"], ["2024-05-01"]]  # the newest day first
    assert all(text.startswith("# Dream diary") for p in diaries for text in p.values())

    r = admin.get("/api/memory/facts", params={"user": "pager", "after": "not-a-cursor"})
    assert r.status_code == 400 and r.json()["field"] == "after"
    for limit in (0, 1001):
        assert admin.get("/api/memory/notes", params={"user": "pager", "limit": limit}).status_code == 422


def crafted(values: list) -> str:
    """A cursor as a list would encode it, holding ``values`` no list gave out."""
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


# an int past 64 bits (either way) in each place a cursor may hold one, and a bool posing as an int
CRAFTED = [crafted(v) for big in (2**63, -(2**63) - 1, 99999999999999999999999)
           for v in ([big, 1], ["2024-05-01T10:00:00+00:00", big], [big], [big, "2024-05-01", "fact_x"])]
CRAFTED += [crafted([True, 1]), crafted(["2024-05-01", False])]


def test_a_crafted_cursor_out_of_range_is_the_400_naming_after_in_every_list_and_the_console(api):
    not_ours = {"detail": "after is not a cursor this list gave out", "field": "after"}
    with api.client("ana") as ana:
        for path in ("/api/memory/facts", "/api/memory/knowledge", "/api/memory/episodes", "/api/memory/notes",
                     "/api/tags", "/api/memory/changes", "/api/memory/diaries"):
            for after in CRAFTED:
                r = ana.get(path, params={"after": after})
                assert (r.status_code, r.json()) == (400, not_ours), (path, after, r.text)
    with httpx.Client(base_url=api.url, timeout=30) as browser:  # the console, signed in with ana's key
        page = browser.get("/console/sign-in").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        browser.post("/console/sign-in", data={"key": api.keys["ana"], "csrf": csrf, "next": ""})
        for path in ("/console/facts", "/console/timeline", "/console/notes", "/console/tags", "/console/dreams"):
            for after in CRAFTED:
                r = browser.get(path, params={"after": after})
                assert r.status_code == 400 and not_ours["detail"] in r.text, (path, after, r.status_code)


def test_a_cursor_nested_past_the_json_parsers_depth_is_the_400_naming_after_not_a_500(api):
    deep = base64.urlsafe_b64encode(b"[" * 1490).decode().rstrip("=")  # 1,990 characters: under max_length
    not_ours = {"detail": "after is not a cursor this list gave out", "field": "after"}
    with api.client("ana") as ana:
        for path in ("/api/memory/facts", "/api/memory/knowledge", "/api/memory/episodes", "/api/memory/notes",
                     "/api/tags", "/api/memory/changes", "/api/memory/diaries"):
            r = ana.get(path, params={"after": deep})
            assert (r.status_code, r.json()) == (400, not_ours), (path, r.text)
    with httpx.Client(base_url=api.url, timeout=30) as browser:
        page = browser.get("/console/sign-in").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        browser.post("/console/sign-in", data={"key": api.keys["ana"], "csrf": csrf, "next": ""})
        for path, name in (("/console/facts", "after"), ("/console/dreams", "before"), ("/console/dreams", "after"),
                           ("/console/notes", "after"), ("/console/tags", "after"), ("/console/timeline", "after")):
            r = browser.get(path, params={name: deep})
            assert r.status_code == 400 and f"{name} is not a cursor this list gave out" in r.text, (path, name)


# what a tester typed where a date, a section, an id or a user belonged
SECRETS = ("Hunter2Secret", "AKIAIOSFODNN7EXAMPLE", "ghp_0123456789abcdefghij", "sk-proj-0123456789")


def test_an_error_answer_never_echoes_a_secret_sent_in_the_value_it_refuses(api, ana):
    with api.client("admin") as admin:
        answers = [
            ana.post("/api/memory/ingest", json={"messages": [
                {"role": "user", "content": "hello", "at": "password Hunter2Secret"}]}),  # 400: not a date
            ana.put("/api/memory/profile/AKIAIOSFODNN7EXAMPLE", json={"summary": "x"}),  # 400: no such section
            ana.get("/api/memory/facts", params={"category": "AKIAIOSFODNN7EXAMPLE"}),  # 400: no such category
            ana.get("/api/memory/facts/ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"),  # 404 naming the id
            ana.post("/api/memory/feedback", json={"id": "sk-proj-0123456789abcdefghijklmnopqrstu",
                                                   "status": "confirmed"}),  # 404
            ana.post("/api/memory/changes/ghp_0123456789abcdefghijklmnopqrstuvwxyzAB/undo"),  # 404
            admin.get("/api/memory/facts", params={"user": "pw=Hunter2Secret"}),  # 400: not a user id
            ana.post("/api/memory/facts", content=b"hi", headers={"Content-Type": "text/plain; password=Hunter2Secret"}),
        ]
    assert [r.status_code for r in answers] == [400, 400, 400, 404, 404, 404, 400, 415], [r.text for r in answers]
    for r in answers:
        assert not any(secret in r.text for secret in SECRETS), r.text
        assert ErrorAnswer.model_validate(r.json()).detail
    assert "[password]" in answers[0].json()["detail"] and answers[0].json()["field"] == "messages[0].at"
    assert "user" in answers[6].json()["detail"]


def test_a_damaged_store_file_is_a_503_that_says_so_and_how_to_recover(tmp_path):
    import sqlite3

    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        for n in range(40):
            memory.remember(f"Keeps note number {n} about the garden", user="ana")
    db = home / "reverie.db"
    with sqlite3.connect(db) as conn:  # the facts' table and indexes: their first pages overwritten, as a bad disk would
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        roots = [r[0] for r in conn.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'facts' AND rootpage > 1")]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with db.open("r+b") as f:
        for root in roots:
            f.seek((root - 1) * size)
            f.write(os.urandom(size))
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        r = httpx.get(f"{url}/api/memory", params={"user": "ana"})
        assert r.status_code == 503, r.text
        detail = r.json()["detail"]
        assert f"the store file {db} is damaged" in detail and "malformed" in detail
        assert ".recover" in detail and "reverie import" in detail and "Stop every process" in detail


def test_a_422_names_the_field_but_never_echoes_the_value_sent(ana):
    secret = "rv_0123456789secretvalue"
    for r in (ana.post("/api/memory/facts", json={"content": "Likes figs", "api_key": secret}),
              ana.post("/api/memory/feedback", json={"id": "ep_x", "status": secret}),
              ana.post("/api/memory/recall", json={"query": "figs", "budget": secret}),
              ana.get("/api/memory/episodes", params={"limit": secret})):
        assert r.status_code == 422, r.text
        assert secret not in r.text
        assert r.json()["errors"] and all(set(e) == {"loc", "msg", "type"} for e in r.json()["errors"])
        ErrorAnswer.model_validate(r.json())
    unknown = ana.post("/api/memory/facts", json={"content": "Likes figs", "api_key": secret}).json()
    assert unknown["detail"] == "api_key: unknown field"
    assert unknown["errors"] == [{"loc": ["body", "api_key"], "msg": "Extra inputs are not permitted",
                                  "type": "extra_forbidden"}]


def test_an_oversized_body_is_the_same_413_naming_body_and_the_limit_declared_or_streamed(tmp_path):
    with Memory(tmp_path / "home", background=False, max_body_bytes=64 * 1024) as memory, \
            live_server(create_app(memory, auth=False, mcp=False)) as url:
        big = b'{"content": "' + b"x" * 100_000 + b'"}'

        def streamed():
            for at in range(0, len(big), 10_000):
                yield big[at:at + 10_000]

        for body in (big, streamed()):
            r = httpx.post(f"{url}/api/memory/facts", content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == 413
            assert r.json() == {"detail": "request body is larger than 65536 bytes (max_body_bytes)", "field": "body"}
        assert memory.facts(user="default") == []


def test_an_export_too_large_to_import_over_rest_is_a_413_that_says_where_it_goes_in(tmp_path):
    # an export streams at any size; its import is a body held to max_body_bytes like any other
    with Memory(tmp_path / "home", background=False, max_body_bytes=64 * 1024) as memory, \
            live_server(create_app(memory, auth=False, mcp=False)) as url:
        memory.add([{"role": "user", "content": "a long story " * 10_000}], user="ana")
        exported = httpx.get(f"{url}/api/memory/export", params={"user": "ana"})
        assert exported.status_code == 200 and len(exported.content) > 64 * 1024
        refused = httpx.post(f"{url}/api/memory/import", params={"user": "bob"}, content=exported.content,
                             headers={"Content-Type": "application/json"})
        assert refused.status_code == 413 and refused.json()["field"] == "body"
        assert "`reverie import FILE --user USER`" in refused.json()["detail"]
        assert memory.episodes(user="bob") == []


def test_notes_and_diaries_by_date(ana):
    ana.post("/api/memory/flush")
    notes = ana.get("/api/memory/notes").json()
    assert notes and all(n["user"] == "ana" for n in notes)
    day = notes[-1]["date"]
    assert {n["date"] for n in ana.get(f"/api/memory/notes/{day}").json()} == {day}
    assert ana.get("/api/memory/notes/not-a-date").status_code == 422

    dream_until_done(ana)
    diaries = ana.get("/api/memory/diaries").json()
    assert diaries
    day = max(diaries)
    assert ana.get(f"/api/memory/diaries/{day}").json() == {day: diaries[day]}
    assert ana.get("/api/memory/diaries/1999-01-01").status_code == 404


def test_health_reports_on_the_users_facts(ana):
    r = ana.get("/api/memory/health")
    assert r.status_code == 200
    report = r.json()
    assert report["user"] == "ana"
    assert report["facts"] == len(ana.get("/api/memory/facts", params={"status": "consolidated"}).json())


def test_no_auth_mode_takes_the_named_user_and_refuses_foreign_hosts(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        made = httpx.post(f"{url}/api/memory/facts", params={"user": "eve"}, json={"content": "Eve sails on weekends"})
        assert made.status_code == 201 and made.json()["user"] == "eve"
        assert httpx.get(f"{url}/api/memory/profile").status_code == 200  # the default user
        rebound = httpx.get(f"{url}/api/memory/profile", headers={"Host": "evil.example"})
        assert rebound.status_code == 400


def test_a_foreign_host_without_keys_is_a_json_400_that_says_why(tmp_path):
    # it was starlette's plain-text "Invalid host header", at odds with every other error
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory, auth=False)) as url:
        for path in ("/api/memory/profile", "/console", "/healthz"):
            refused = httpx.get(f"{url}{path}", headers={"Host": "evil.example:8765"})
            assert refused.status_code == 400
            assert refused.json()["field"] == "headers"
            assert "Host 'evil.example:8765' is not 127.0.0.1 or localhost" in refused.json()["detail"]
            assert "--no-auth" in refused.json()["detail"]
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        mcp = httpx.post(f"{url}/mcp", json=ping, headers={"Host": "evil.example", "Accept": "application/json"})
        assert mcp.status_code == 400 and "is not 127.0.0.1 or localhost" in mcp.json()["error"]["message"]
        for host in ("localhost", "LOCALHOST:1", "127.0.0.1"):
            assert httpx.get(f"{url}/api/memory/profile", headers={"Host": host}).status_code == 200
        assert memory.users() == []


def test_serve_refuses_no_auth_off_localhost(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--no-auth", "--host", "0.0.0.0", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert "--no-auth" in result.output


@pytest.mark.parametrize("command", ["serve", "console"])
@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_serve_and_console_refuse_a_port_no_tcp_port_can_be(tmp_path, command, port):
    # 99999 was served on 34463 (the port modulo 65536) while it said 99999; -1 failed in getaddrinfo
    result = CliRunner().invoke(cli, [command, "--port", port, "--home", str(tmp_path / "home")])
    assert result.exit_code == 2
    assert "--port" in result.output
    assert not (tmp_path / "home").exists()  # refused before anything was opened (or a key created)


def test_keys_cli_creates_a_working_key_lists_it_and_revokes_it(api):
    home = str(api.memory.home)
    store = ["--store", api.memory.settings.store] if api.memory.settings.store else []
    runner = CliRunner()
    created = runner.invoke(cli, ["keys", "create", "--user", "bob", "--name", "cli", "--home", home, "--json", *store])
    assert created.exit_code == 0, created.output
    new = json.loads(created.output)
    headers = {"Authorization": f"Bearer {new['key']}"}
    assert httpx.get(f"{api.url}/api/memory/profile", headers=headers).status_code == 200
    listed = runner.invoke(cli, ["keys", "list", "--home", home, "--json", *store])
    rows = json.loads(listed.output)
    assert new["id"] in [r["id"] for r in rows]
    assert new["key"] not in listed.output  # only ids, never the keys
    revoked = runner.invoke(cli, ["keys", "revoke", new["id"], "--home", home, *store])
    assert revoked.exit_code == 0
    assert httpx.get(f"{api.url}/api/memory/profile", headers=headers).status_code == 401


def test_keys_cli_keeps_no_control_character_in_a_label_it_lists(tmp_path):
    # "lap\x07top\x1b[31mred" was stored as sent and `reverie keys list` wrote the escape to the terminal
    home = str(tmp_path / "home")
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "create", "--user", "ana", "--name", "lap\x07top\x1b[31mred", "--home", home, "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["name"] == "laptop[31mred"
    listed = runner.invoke(cli, ["keys", "list", "--home", home])
    assert "\x1b" not in listed.output and "\x07" not in listed.output
    too_long = runner.invoke(cli, ["keys", "create", "--user", "ana", "--name", "n" * 201, "--home", home])
    assert too_long.exit_code != 0 and "name is 201 characters" in too_long.output


def test_keys_list_refuses_a_user_id_no_key_can_have_instead_of_listing_none(tmp_path):
    home = str(tmp_path / "home")
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "create", "--user", "ana", "--home", home]).exit_code == 0
    refused = runner.invoke(cli, ["keys", "list", "--user", "../x", "--home", home])
    assert refused.exit_code == 2 and "user '../x' is not a valid user id" in refused.output
    assert "ana" in runner.invoke(cli, ["keys", "list", "--user", "ana", "--home", home]).output


@contextlib.contextmanager
def served(home, *args: str, debounce: str):
    """``reverie serve --no-auth`` as a subprocess on a free port; yields its URL, then sends
    SIGTERM and asserts a clean exit (killed if it does not go)."""
    port = free_port()
    env = {**os.environ, "REVERIE_DEBOUNCE_SECONDS": debounce, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie.cli", "serve", "--no-auth", *args, "--port", str(port), "--home", str(home)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/healthz", proc)
        yield url
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_drains_the_learning_queue_before_exit(tmp_path):
    home = tmp_path / "home"
    with served(home, debounce="3600") as url:
        turn = httpx.post(f"{url}/api/turns", json={"message": "I started learning the violin this month"}).json()
        httpx.post(f"{url}/api/turns/{turn['turn_id']}/complete", json={"reply": "Great choice!"}).raise_for_status()
    with Memory(home, background=False) as memory:
        assert memory.store.get_episode(turn["turn_id"]).learned


def test_several_workers_serve_and_one_process_learns_what_they_complete(tmp_path):
    home = tmp_path / "home"
    with served(home, "--workers", "2", debounce="0.5") as url:
        ids = []
        with httpx.Client(base_url=url, timeout=30) as client:
            for text in ("I started learning the violin this month", "My sister Lena lives in Oslo",
                         "I prefer tea over coffee in the morning", "We adopted a cat called Miso"):
                turn = client.post("/api/turns", json={"message": text}).json()
                client.post(f"/api/turns/{turn['turn_id']}/complete", json={"reply": "Noted."}).raise_for_status()
                ids.append(turn["turn_id"])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                episodes = client.get("/api/memory/episodes", params={"limit": 10}).json()
                if len(episodes) == 4 and all(e["learned"] for e in episodes):
                    break
                time.sleep(0.3)
        assert sorted(e["id"] for e in episodes) == sorted(ids)
        assert all(e["learned"] and e["summary"] for e in episodes)  # learned once, by the serving parent
    with Memory(home, background=False) as memory:
        notes = memory.notes(user="default")
        assert len(notes) == len({n.content for n in notes})  # no exchange was learned twice


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_stop_serving_when_the_serve_process_is_killed_outright(tmp_path):
    """SIGKILL of `reverie serve --workers 2` (nothing of it runs again: no learning, no dream)
    must not leave its workers serving the port as if all were well."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie.cli", "serve", "--no-auth", "--workers", "2", "--port", str(port),
         "--home", str(tmp_path / "home")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/healthz", proc)
        workers = _children(proc.pid)
        assert len(workers) >= 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

        def port_free() -> bool:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
            except httpx.HTTPError:
                return True
            return False

        wait_until(port_free, 8, "the port to be free after the serve process was killed")
        wait_until(lambda: not any(_alive(w) for w in workers), 25, "the workers to exit")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for worker in workers:
            if _alive(worker):
                os.kill(worker, signal.SIGKILL)


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of a Prometheus text (0 when it is not there)."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_of_several_workers_add_up_whichever_worker_answers(tmp_path):
    home = tmp_path / "home"
    with served(home, "--workers", "2", debounce="0.2") as url:
        turn = httpx.post(f"{url}/api/turns", json={"message": "I started learning the violin this month"}).json()
        httpx.post(f"{url}/api/turns/{turn['turn_id']}/complete", json={"reply": "Noted."}).raise_for_status()
        for n in range(12):  # each on a connection of its own: both workers answer some
            httpx.post(f"{url}/api/memory/recall", json={"query": f"violin lesson {n}"}).raise_for_status()

        def scrape() -> str:
            r = httpx.get(f"{url}/metrics")  # a new connection: either worker answers
            assert r.status_code == 200
            return r.text

        # the serving parent learned the turn (workers never learn): its engine calls count too
        wait_until(lambda: _sample(scrape(), "reverie_engine_calls_total", step="summarize") >= 1, 15,
                   "the learning process's engine calls in /metrics")
        # a worker that did not answer the scrape is counted as its last snapshot says (one
        # every SNAPSHOT_SECONDS): on a loaded machine the other's recalls may not be in it yet
        wait_until(lambda: _sample(scrape(), "reverie_recall_seconds_count") >= 12, 15,
                   "every worker's recalls in /metrics")
        counts = []
        for _ in range(10):
            text = scrape()
            counts.append(_sample(text, "reverie_recall_seconds_count"))
            assert _sample(text, "reverie_engine_calls_total", step="summarize") >= 1
        assert counts == sorted(counts)  # a summed counter never goes back
        assert counts[-1] >= 12  # every worker's recalls (a turn opened recalls too)


def test_knowledge_changes_and_undo_over_rest(api, ana):
    doc = ana.post("/api/memory/knowledge", json={"title": "Release checklist", "body": "- tag\n- changelog",
                                                  "tags": ["release"]})
    assert doc.status_code == 201 and doc.json()["title"] == "Release checklist"
    assert any(d["id"] == doc.json()["id"] for d in ana.get("/api/memory/knowledge").json())
    assert ana.post("/api/memory/knowledge", json={"title": "x", "body": "y", "scope": "planet"}).status_code == 422
    again = ana.post("/api/memory/knowledge", json={"title": "Release checklist", "body": "- tag\n- changelog",
                                                    "tags": ["release"]})
    assert again.status_code == 200 and again.json()["id"] == doc.json()["id"]  # stored before: nothing added
    too_long = ana.post("/api/memory/knowledge", json={"title": "t" * 201, "body": "y"})
    assert too_long.status_code == 400 and too_long.json()["field"] == "title"
    from reverie.models import Fact

    memory = api.memory
    with memory.store.transaction():  # two copies of one line, as an old import could leave them
        for _ in range(2):
            memory.ctx.facts.index_fact(Fact(user="ana", content="Keeps a sourdough starter", status="consolidated"), [])
    report = memory.consolidate(user="ana")
    assert report.archived == 1 and report.journal
    changes = ana.get("/api/memory/changes").json()
    assert changes[0]["id"] == report.journal and changes[0]["action"] == "consolidate"
    assert changes[0]["undone_at"] is None
    undone = ana.post(f"/api/memory/changes/{report.journal}/undo")
    assert undone.status_code == 200 and undone.json()["restored"] >= 1
    assert ana.post(f"/api/memory/changes/{report.journal}/undo").status_code == 409
    assert ana.get("/api/memory/changes").json()[0]["undone_at"] is not None


def test_openapi_carries_the_enums(ana):
    spec = ana.get("/openapi.json").json()
    feedback = spec["components"]["schemas"]["FeedbackIn"]["properties"]["status"]
    assert set(feedback["enum"]) == {"confirmed", "rejected", "ignored", "partial"}
    params = {p["name"]: p for p in spec["paths"]["/api/memory/facts"]["get"]["parameters"]}
    status = params["status"]["schema"]
    values = status.get("enum") or next(s["enum"] for s in status["anyOf"] if "enum" in s)
    assert set(values) == {"pending", "consolidated", "archived"}


def test_openapi_declares_the_error_answers_each_route_gives(api, ana):
    spec = ana.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and schemas["ErrorAnswer"]["required"] == ["detail"]
    error = {"$ref": "#/components/schemas/ErrorAnswer"}
    operations = {(method.upper(), path): op for path, ops in spec["paths"].items() for method, op in ops.items()
                  if path.startswith("/api/")}
    assert len(operations) > 30
    for (method, path), op in operations.items():
        for code in ("400", "401", "403", "413", "422", "503"):
            assert op["responses"][code]["content"]["application/json"]["schema"] == error, (method, path, code)
        with_body = "requestBody" in op
        assert ("415" in op["responses"]) == with_body, (method, path)
    codes = lambda method, path: set(operations[(method, path)]["responses"])  # noqa: E731
    assert {"404", "409"} <= codes("POST", "/api/turns/{turn_id}/complete")
    assert {"404", "409"} <= codes("POST", "/api/memory/changes/{change_id}/undo")
    assert "409" in codes("PUT", "/api/memory/memory-md") and "409" in codes("POST", "/api/memory/dream")
    for method, path in (("GET", "/api/memory/facts/{fact_id}"), ("PATCH", "/api/memory/facts/{fact_id}"),
                         ("DELETE", "/api/memory/facts/{fact_id}"), ("POST", "/api/memory/facts/{fact_id}/reinforce"),
                         ("POST", "/api/memory/feedback"), ("GET", "/api/memory/dream/{run_id}"),
                         ("GET", "/api/memory/diaries/{date}")):
        assert "404" in codes(method, path), (method, path)
    for path, model in (("/api/memory/facts", "RememberedFact"), ("/api/memory/knowledge", "KnowledgeDoc")):
        reinforced = operations[("POST", path)]["responses"]["200"]["content"]["application/json"]["schema"]
        assert reinforced == {"$ref": f"#/components/schemas/{model}"}

    # and what the server sends for each of them is that shape
    with api.client("bob") as bob:
        answers = [
            httpx.get(f"{api.url}/api/memory"),  # 401
            bob.get("/api/memory/facts", params={"user": "ana"}),  # 403
            ana.get("/api/memory/facts/fact_missing"),  # 404
            ana.post("/api/memory/facts", json={"content": "   "}),  # 400
            ana.post("/api/memory/facts", content=b"{not json", headers={"Content-Type": "application/json"}),  # 400
            ana.post("/api/memory/facts", content=b"hi", headers={"Content-Type": "text/plain"}),  # 415
            ana.post("/api/memory/facts", json={}),  # 422
        ]
    assert [r.status_code for r in answers] == [401, 403, 404, 400, 400, 415, 422]
    for r in answers:
        assert ErrorAnswer.model_validate(r.json()).detail, r.text


def test_a_busy_store_is_503_with_retry_after_and_says_nothing_was_written():
    from reverie import StoreBusy, StoreError
    from reverie.server.rest import error_response

    busy = error_response(StoreBusy("the store at x was busy, nothing was written; try again: deadlock detected"))
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert "nothing was written; try again" in json.loads(busy.body)["detail"]
    down = error_response(StoreError("the PostgreSQL store at x failed: connection refused"))
    assert down.status_code == 503 and "retry-after" not in down.headers


def test_a_knowledge_document_is_deleted_for_good_by_its_owner_only(api, ana, bob):
    old = ana.post("/api/memory/knowledge", json={"title": "Deploy runbook", "body": "- ssh to the kestrel box"}).json()
    new = ana.post("/api/memory/knowledge", json={"title": "Deploy runbook v2", "body": "- run the kestrel pipeline"})
    assert bob.delete(f"/api/memory/knowledge/{old['id']}").status_code == 404  # not bob's: as if absent
    gone = ana.delete(f"/api/memory/knowledge/{old['id']}")
    assert gone.status_code == 200 and gone.json()["title"] == "Deploy runbook"
    assert ana.delete(f"/api/memory/knowledge/{old['id']}").status_code == 404
    listed = [d["id"] for d in ana.get("/api/memory/knowledge").json()]
    assert old["id"] not in listed and new.json()["id"] in listed
    recalled = ana.post("/api/memory/recall", json={"query": "how do I deploy to the kestrel box?", "budget": 2000}).json()
    assert "ssh to the kestrel box" not in recalled["context"] and "kestrel pipeline" in recalled["context"]
    assert api.memory.check_store().intact  # its full-text row, postings and counts went with it


def test_facts_walked_newest_first_meet_every_fact_once_while_they_are_used(api, admin):
    """Paged by uses, a fact used between two pages moved to a page already read and was never
    seen; order=recent is a walk that meets every fact once."""
    mem = api.memory
    plants = ("ferns", "cacti", "orchids", "basil", "mint", "tomatoes", "lavender", "ivy", "bonsai", "succulents")
    facts = [mem.remember(f"Grows {plant} on the balcony", user="walker") for plant in plants]
    assert len(mem.facts(user="walker")) == 10
    seen: list[str] = []
    r = admin.get("/api/memory/facts", params={"user": "walker", "limit": 3, "order": "recent"})
    while True:
        assert r.status_code == 200, r.text
        seen += [f["id"] for f in r.json()]
        for fact in facts:  # each page read, the facts not yet read are used again
            if fact.id not in seen:
                mem.reinforce(fact.id, user="walker")
                break
        following = r.links.get("next", {}).get("url")
        if following is None:
            break
        r = admin.get(following)
    assert sorted(seen) == sorted(f.id for f in facts) and len(seen) == len(set(seen))
    bad = admin.get("/api/memory/facts", params={"user": "walker", "order": "alphabetical"})
    assert bad.status_code == 400 and bad.json()["field"] == "order"


def test_an_import_with_a_wrong_value_is_refused_whole_or_corrected_when_lenient(api, ana):
    envelope = {"version": 1, "facts": [{"content": "Grows basil on the sill", "confidence": 7},
                                        {"content": "Prefers oat milk", "confidence": 0.8}]}
    refused = ana.post("/api/memory/import", json=envelope)
    assert refused.status_code == 400 and refused.json()["field"] == "facts[0].confidence"
    taken = ana.post("/api/memory/import", params={"lenient": "true"}, json=envelope)
    assert taken.status_code == 200 and taken.json()["facts"] == 2 and taken.json()["corrected"] == 1


def test_ingest_and_flush_say_what_a_failing_engine_left_unlearned(tmp_path, fake_openai):
    memory = Memory(tmp_path / "home", background=False, engines={"extract": "openai"},
                    llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})
    secret = create_key(memory.store, user="ana").secret
    fake_openai.respond_by_step({"extract": Reply.error(500, "the model is down")})
    try:
        with live_server(create_app(memory)) as url, httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client:
            talk = [{"role": "user", "content": "I moved to Porto last spring"}, {"role": "assistant", "content": "Nice"}]
            r = client.post("/api/memory/ingest", json={"messages": talk})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["episodes"] == 1 and body["learned"] == 0
            assert body["waiting"] == 1 and "the model is down" in body["learning_error"]
            r = client.post("/api/memory/flush")
            assert r.json()["learned"] == 0 and r.json()["waiting"] == 1 and "the model is down" in r.json()["error"]
    finally:
        memory.close()
