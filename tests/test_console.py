"""The web console through FastAPI's TestClient: sign-in with API keys, the session cookie,
CSRF on every form post, one user's key never reaching another user, everything stored
shown as text, keyset pages, and each page's writes going through Memory."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from fastapi.testclient import TestClient

from reverie import Memory
from reverie.keys import create_key, revoke_key
from reverie.server import create_app
from reverie.store.base import Store
from tests.homes import new_home
from tests.live_server import free_port
from tests.pg import drop_schema, new_schema

BASE = "http://127.0.0.1"


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


class Browser:
    """A TestClient that signs in like a person: the sign-in form, then its cookie."""

    def __init__(self, app, key: str | None = None):
        self.client = TestClient(app, base_url=BASE, follow_redirects=False)
        if key is not None:
            self.sign_in(key)

    def sign_in(self, key: str):
        page = self.client.get("/console/sign-in")
        return self.client.post("/console/sign-in", data={"key": key, "csrf": csrf_of(page.text), "next": ""})

    def get(self, path: str, **kw):
        return self.client.get(path, **kw)

    def post(self, path: str, data: dict | None = None, *, page: str = "/console", **kw):
        """A form post carrying the CSRF token of ``page`` (as the form on it would)."""
        token = csrf_of(self.client.get(page).text)
        return self.client.post(path, data={**(data or {}), "csrf": token}, **kw)


@pytest.fixture
def setup(tmp_path, new_store_file):
    memory = Memory(new_home(tmp_path / "home", new_store_file), background=False)
    keys = {
        "ana": create_key(memory.store, user="ana").secret,
        "bob": create_key(memory.store, user="bob").secret,
        "admin": create_key(memory.store, user="ops", admin=True).secret,
    }
    app = create_app(memory, mcp=False)
    yield memory, app, keys
    memory.close()


# ------------------------------------------------------------ signing in
def test_pages_need_a_signed_in_session_and_the_key_never_shows(setup):
    memory, app, keys = setup
    browser = Browser(app)
    first = browser.get("/console/facts?q=x")
    assert first.status_code == 303 and first.headers["location"].startswith("/console/sign-in?next=")
    page = browser.get("/console/sign-in")
    assert page.status_code == 200 and 'type="password"' in page.text
    signed = browser.client.post("/console/sign-in", data={"key": keys["ana"], "csrf": csrf_of(page.text),
                                                           "next": "/console/facts?q=x"})
    assert signed.status_code == 303 and signed.headers["location"] == "/console/facts?q=x"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert keys["ana"] not in cookie and keys["ana"] not in signed.headers["location"]
    overview = browser.get("/console")
    assert overview.status_code == 200 and "Overview" in overview.text and ">ana<" in overview.text
    assert keys["ana"] not in overview.text
    # the security headers of every console page
    assert "script-src 'self'" in overview.headers["content-security-policy"]
    assert overview.headers["x-frame-options"] == "DENY" and overview.headers["cache-control"] == "no-store"


def test_a_bad_key_is_refused_and_not_echoed(setup):
    _, app, keys = setup
    browser = Browser(app)
    wrong = "rv_" + "x" * 43
    refused = browser.sign_in(wrong)
    assert refused.status_code == 401 and "not a live API key" in refused.text
    assert wrong not in refused.text
    assert browser.get("/console").status_code == 303  # still signed out
    assert browser.sign_in("").status_code == 401


def test_sign_out_and_revoking_the_key_end_the_session(setup):
    memory, app, keys = setup
    browser = Browser(app, keys["bob"])
    assert browser.get("/console").status_code == 200
    assert browser.post("/console/sign-out").status_code == 303
    assert browser.get("/console").status_code == 303
    browser.sign_in(keys["bob"])
    assert browser.get("/console").status_code == 200
    bob_key = next(k for k in memory.store.list_api_keys() if k.user == "bob")
    revoke_key(memory.store, bob_key.id)
    assert browser.get("/console").status_code == 303


def test_a_tampered_cookie_is_no_session(setup):
    _, app, keys = setup
    browser = Browser(app, keys["ana"])
    cookie = browser.client.cookies.get("reverie_console")
    body, signature = cookie.rsplit(".", 1)
    browser.client.cookies.clear()
    browser.client.cookies.set("reverie_console", body + "." + "0" * len(signature))
    assert browser.get("/console").status_code == 303


def test_a_cookie_with_characters_past_ascii_is_no_session_not_a_500(setup):
    # hmac.compare_digest raised TypeError on a non-ASCII signature: a 500 for any such cookie
    _, app, keys = setup
    client = TestClient(app, base_url=BASE, follow_redirects=False)
    for cookie in (b"reverie_console=abc.\xc3\xa9", b"reverie_console_flash=abc.\xe9"):
        page = client.get("/console/facts", headers={"Cookie": cookie})
        assert page.status_code == 303 and page.headers["location"].startswith("/console/sign-in")
        assert client.get("/console/sign-in", headers={"Cookie": cookie}).status_code == 200
    browser = Browser(app, keys["ana"])
    signed = browser.client.cookies.get("reverie_console")
    body, _ = signed.rsplit(".", 1)
    page = browser.client.get("/console", headers={"Cookie": f"reverie_console={body}.".encode() + b"\xe9" * 64})
    assert page.status_code == 303


# ------------------------------------------------------------ CSRF
def test_every_form_post_needs_the_sessions_csrf_token(setup):
    memory, app, keys = setup
    browser = Browser(app, keys["ana"])
    data = {"content": "Likes green tea", "category": "preference"}
    assert browser.client.post("/console/facts", data=data).status_code == 403
    assert browser.client.post("/console/facts", data={**data, "csrf": "forged"}).status_code == 403
    token = csrf_of(browser.get("/console").text)
    other_site = browser.client.post("/console/facts", data={**data, "csrf": token},
                                     headers={"Origin": "https://evil.example"})
    assert other_site.status_code == 403
    cross = browser.client.post("/console/facts", data={**data, "csrf": token}, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    assert memory.facts(user="ana") == []
    # the token in a header works too (for scripts), and from this origin
    assert browser.client.post("/console/facts", data=data, headers={"X-CSRF-Token": token,
                                                                       "Origin": BASE}).status_code == 303
    assert [f.content for f in memory.facts(user="ana")] == ["Likes green tea"]
    # another session's token is worth nothing here
    other = Browser(app, keys["ana"])
    assert other.client.post("/console/facts", data={**data, "csrf": token}).status_code == 403


def test_an_origin_or_referer_that_is_no_url_is_refused_or_ignored_not_a_500(setup):
    # urlsplit raises ValueError on "http://[x" (an unclosed IPv6 bracket): it made these 500s
    memory, app, keys = setup
    browser = Browser(app, keys["ana"])
    data = {"content": "Likes green tea", "category": "preference"}
    token = csrf_of(browser.get("/console").text)
    foreign = browser.client.post("/console/facts", data={**data, "csrf": token}, headers={"Origin": "http://[bad"})
    assert foreign.status_code == 403 and "another site" in foreign.text
    assert memory.facts(user="ana") == []
    refused = browser.client.post("/console/facts", data={"content": "", "csrf": token},
                                  headers={"Referer": "http://[bad/console/tags"})
    assert refused.status_code == 303 and refused.headers["location"] == "/console/facts"


def test_the_sign_in_form_needs_its_csrf_token_too(setup):
    _, app, keys = setup
    browser = Browser(app)
    assert browser.client.post("/console/sign-in", data={"key": keys["ana"]}).status_code == 403
    assert browser.get("/console").status_code == 303


# ------------------------------------------------------------ one user's key, one user's memory
def test_a_user_key_reaches_only_its_own_user(setup):
    memory, app, keys = setup
    bob_fact = memory.remember("Bob's secret plan", user="bob")
    bob_episodes = memory.add([{"role": "user", "content": "bob was here"}], user="bob")
    ana = Browser(app, keys["ana"])
    # by URL
    assert ana.get("/console/facts?user=bob").status_code == 403
    assert "Bob&#39;s secret plan" not in ana.get("/console/facts?user=bob").text
    assert ana.get(f"/console/facts/{bob_fact.id}").status_code == 404
    assert ana.get(f"/console/episodes/{bob_episodes[0].id}").status_code == 404
    assert ana.get("/console/recall?message=secret+plan&user=bob").status_code == 403
    # by form
    assert ana.post("/console/user", {"user": "bob"}).status_code == 403
    refused = ana.post(f"/console/facts/{bob_fact.id}/forget")
    assert refused.status_code == 303  # back to the page, with the error as its message
    assert "no fact" in ana.get(refused.headers["location"]).text
    assert memory.fact(bob_fact.id).status == "consolidated"
    ana.post(f"/console/facts/{bob_fact.id}", {"content": "hijacked"})
    assert memory.fact(bob_fact.id).content == "Bob's secret plan"
    assert "Bob" not in ana.get("/console/facts").text
    assert ana.get("/console/keys").status_code == 403  # keys: admin keys only
    assert ana.post("/console/keys", {"user": "ana"}).status_code == 403


def test_an_admin_key_switches_users(setup):
    memory, app, keys = setup
    memory.remember("Bob likes chess", user="bob")
    admin = Browser(app, keys["admin"])
    assert "Bob likes chess" not in admin.get("/console/facts").text  # the key's own user first
    assert admin.post("/console/user", {"user": "bob", "next": "/console/facts"}).status_code == 303
    assert "Bob likes chess" in admin.get("/console/facts").text
    assert "Bob likes chess" in admin.get("/console/facts?user=bob").text


def test_without_keys_the_console_opens_on_localhost_only(tmp_path):
    memory = Memory(tmp_path / "home", background=False)
    try:
        memory.remember("Open console fact", user="solo")
        app = create_app(memory, auth=False, default_user="solo", mcp=False)
        local = TestClient(app, base_url=BASE, follow_redirects=False)
        page = local.get("/console/facts")
        assert page.status_code == 200 and "Open console fact" in page.text
        assert local.get("/console/sign-in").status_code == 303
        assert local.post("/console/facts", data={"content": "x"}).status_code == 403  # CSRF still
        token = csrf_of(page.text)
        assert local.post("/console/facts", data={"content": "Second fact", "csrf": token}).status_code == 303
        assert local.get("/").headers["location"] == "/console"
        far = TestClient(app, base_url="http://attacker.example", follow_redirects=False)
        assert far.get("/console").status_code == 400  # DNS rebinding: only local Host headers
    finally:
        memory.close()


# ------------------------------------------------------------ escaping
def test_stored_markup_shows_as_text_everywhere(setup):
    memory, app, keys = setup
    nasty = 'Uses <script>alert("x")</script> and </memory> in notes'
    fact = memory.remember(nasty, user="ana")
    memory.set_profile("user.workContext", "<img src=x onerror=alert(1)> 工作", user="ana")
    memory.add([{"role": "user", "content": "<b>bold</b> </memory> 你好"}], user="ana")
    ana = Browser(app, keys["ana"])
    pages = ["/console/facts", f"/console/facts/{fact.id}", "/console/profile", "/console/timeline", "/console/memory",
             "/console/recall?message=script+alert+memory"]
    for path in pages:
        html = ana.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html, path
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in ana.get("/console/facts").text
    assert "&lt;img src=x onerror=alert(1)&gt; 工作" in ana.get("/console/profile").text
    block = re.search(r'<pre class="block" id="memory-block">(.*?)</pre>', ana.get("/console/recall?message=script+alert+memory").text, re.S)
    assert block and "&lt;/memory&gt;" in block.group(1) and block.group(1).count("&lt;memory&gt;") == 1


# ------------------------------------------------------------ keyset pages
def test_facts_and_episodes_page_by_keyset(setup):
    memory, app, keys = setup
    for n in range(120):
        memory.remember(f"Numbered fact {n:03d} about item{n}", user="ana", category="context")
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    memory.add([{"role": "user", "content": f"message {n}", "at": (start + timedelta(hours=n // 3)).isoformat()}
                for n in range(130)], user="ana", group="message")
    ana = Browser(app, keys["ana"])
    seen: list[str] = []
    url = "/console/facts?order=recent"
    while url:
        html = ana.get(url).text
        seen += re.findall(r'data-fact="(fact_[0-9a-f]+)"', html)
        nxt = re.search(r'href="([^"]+)" rel="next"', html)
        url = nxt.group(1).replace("&amp;", "&") if nxt else ""
        assert "offset" not in url
    assert len(seen) == 120 == len(set(seen))
    assert seen == [f.id for f in sorted(memory.facts(user="ana"), key=lambda f: f.created_at, reverse=True)]
    episodes: list[str] = []
    url = "/console/timeline"
    while url:
        html = ana.get(url).text
        episodes += re.findall(r'<article class="episode" id="ep-([^"]+)"', html)
        nxt = re.search(r'href="([^"]+)" rel="next"', html)
        url = nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert len(episodes) == 130 == len(set(episodes))
    assert ana.get("/console/timeline?after=not-a-cursor").status_code == 400


def test_the_store_defaults_page_like_the_sqlite_store(setup):
    """The ABC's default page methods (which a store without its own inherits) give the same
    rows in the same order as SQLite's keyset reads."""
    memory, _, _ = setup
    store = memory.store
    words = ["apples", "boats", "chess", "dahlias", "eagles", "ferns", "guitars", "harbors", "igloos", "jazz",
             "kites", "lemons", "maps", "novels", "operas", "pianos", "quilts", "rivers", "sailing", "tulips",
             "umbrellas", "violins", "walnuts"]
    for n, word in enumerate(words):
        memory.remember(f"Enjoys {word} {'alpha' if n % 2 else 'beta'}", user="ana", tags=[word])
    memory.add([{"role": "user", "content": f"hello {n}", "at": f"2024-02-0{1 + n % 3}T10:00:00+00:00"}
                for n in range(17)], user="ana", group="message")

    def walk(read) -> list[str]:
        out, after = [], None
        while True:
            page = read(after)
            out += [getattr(i, "id", None) or getattr(i, "name") for i in page.items]
            if page.next is None:
                return out
            after = page.next

    pairs = [
        (lambda a: store.page_episodes("ana", after=a, limit=4),
         lambda a: Store.page_episodes(store, "ana", after=a, limit=4)),
        (lambda a: store.page_facts("ana", contains="ALPHA", order="uses", after=a, limit=3),
         lambda a: Store.page_facts(store, "ana", contains="ALPHA", order="uses", after=a, limit=3)),
        (lambda a: store.page_tags("ana", after=a, limit=5), lambda a: Store.page_tags(store, "ana", after=a, limit=5)),
    ]
    for fast, default in pairs:
        got = walk(fast)
        assert got and len(got) == len(set(got))
        assert sorted(got) == sorted(walk(default))
    assert len(walk(pairs[0][0])) == 17 and len(walk(pairs[1][0])) == 11
    assert Store.counts(store, "ana") == store.counts("ana")


# ------------------------------------------------------------ the writes, through Memory
def test_profile_edit_is_journaled_and_undone_from_the_console(setup):
    memory, app, keys = setup
    memory.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    ana = Browser(app, keys["ana"])
    saved = ana.post("/console/profile", {"section": "user.topOfMind", "summary": "Shipping the 2.0 release"},
                     page="/console/profile")
    assert saved.status_code == 303
    page = ana.get("/console/profile").text
    assert "Saved Top Of Mind." in page and "Shipping the 2.0 release" in page
    undo = re.search(r'action="/console/changes/(chg_[0-9a-f]+)/undo"', page)
    assert undo, "the message offers Undo"
    assert ana.post(f"/console/changes/{undo.group(1)}/undo", page="/console/profile").status_code == 303
    assert memory.profile(user="ana").section("user.topOfMind").summary == "Moving to Lisbon"


def test_a_profile_edit_past_the_limit_is_refused_and_the_form_says_the_limit(setup):
    memory, app, keys = setup
    memory.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/profile").text
    assert f'maxlength="{memory.settings.max_profile_chars}"' in page
    refused = ana.post("/console/profile", {"section": "user.topOfMind", "summary": "word " * 200},
                       page="/console/profile")
    assert refused.status_code == 303  # back to the form, which says why
    assert "max_profile_chars" in ana.get("/console/profile").text
    assert memory.profile(user="ana").section("user.topOfMind").summary == "Moving to Lisbon"


def test_forget_restore_confirm_and_bulk_archive(setup):
    memory, app, keys = setup
    facts = [memory.remember(text, user="ana") for text in ("Keeps bees", "Plays the cello", "Reads Borges")]
    ana = Browser(app, keys["ana"])
    ana.post(f"/console/facts/{facts[0].id}/forget")
    assert memory.fact(facts[0].id).status == "archived"
    ana.post(f"/console/facts/{facts[0].id}/restore")
    assert memory.fact(facts[0].id).status == "consolidated"
    ana.post(f"/console/facts/{facts[1].id}/confirm")
    assert memory.fact(facts[1].id).uses == facts[1].uses + 1
    ask = ana.post("/console/facts/archive", {"ids": [facts[1].id, facts[2].id]})
    assert ask.status_code == 200 and "Archive 2 facts?" in ask.text
    assert all(memory.fact(f.id).status == "consolidated" for f in facts)  # nothing until confirmed
    ana.post("/console/facts/archive", {"ids": [facts[1].id, facts[2].id], "confirm": "yes"})
    assert [memory.fact(f.id).status for f in facts] == ["consolidated", "archived", "archived"]


def test_recall_playground_changes_no_usage_counter(setup):
    memory, app, keys = setup
    fact = memory.remember("Prefers the helix editor over neovim", user="ana", category="preference")
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/recall?message=which+editor+do+I+use%3F&budget=400")
    assert page.status_code == 200 and "helix" in page.text
    assert 'data-part="relevance"' in page.text and "Route" in page.text
    memory.recaller.flush_usage()
    assert memory.fact(fact.id).uses == fact.uses and memory.fact(fact.id).last_used_at is None
    memory.recall("which editor do I use?", user="ana")  # an agent's recall does count
    memory.recaller.flush_usage()
    assert memory.fact(fact.id).uses == fact.uses + 1


def test_memory_md_editor_saves_through_sync_and_refuses_a_stale_edit(setup):
    memory, app, keys = setup
    memory.remember("Drinks oolong tea", user="ana", category="preference")
    ana = Browser(app, keys["ana"])
    assert "no MEMORY.md yet" in ana.get("/console/memory").text
    memory.dream(user="ana", force=True)
    page = ana.get("/console/memory").text
    base = re.search(r'name="base" value="([0-9a-f]+)"', page).group(1)
    text = memory.memory_md(user="ana").replace("Drinks oolong tea", "Drinks jasmine tea")
    saved = ana.post("/console/memory", {"text": text, "base": base}, page="/console/memory")
    assert saved.status_code == 303
    after = ana.get("/console/memory").text
    assert "1 edited" in after and any(f.content == "Drinks jasmine tea" for f in memory.facts(user="ana"))
    stale = ana.post("/console/memory", {"text": text.replace("jasmine", "green"), "base": base}, page="/console/memory")
    assert stale.status_code == 409 and "changed since this edit began" in stale.text
    assert not any("green" in f.content for f in memory.facts(user="ana"))


def test_tags_deprecate_with_undo_and_merge(setup):
    memory, app, keys = setup
    memory.remember("Hikes in the alps every summer", user="ana", tags=["hiking", "mountain"])
    memory.remember("Went trekking in Nepal", user="ana", tags=["trekking"])
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/tags").text
    assert 'data-tag="hiking"' in page and 'data-tag="trekking"' in page
    ana.post("/console/tags/status", {"name": "mountain", "status": "deprecated"}, page="/console/tags")
    tags = {t["name"]: t for t in memory.tags(user="ana")}
    assert tags["mountain"]["status"] == "deprecated"
    undo = re.search(r'action="/console/changes/(chg_[0-9a-f]+)/undo"', ana.get("/console/tags").text).group(1)
    ana.post(f"/console/changes/{undo}/undo", page="/console/tags")
    assert {t["name"]: t for t in memory.tags(user="ana")}["mountain"]["status"] != "deprecated"
    merged = ana.post("/console/tags/merge", {"old": "trekking", "new": "hiking"}, page="/console/tags")
    assert merged.status_code == 303
    tags = {t["name"]: t for t in memory.tags(user="ana")}
    assert tags["trekking"]["status"] == "merged" and tags["trekking"]["merged_to"] == "hiking"
    page = ana.get("/console/tags").text
    assert "Merged “trekking” into “hiking”" in page
    # the merge is journaled: its Undo gives trekking its items back
    undo = re.search(r'action="/console/changes/(chg_[0-9a-f]+)/undo"', page).group(1)
    ana.post(f"/console/changes/{undo}/undo", page="/console/tags")
    tags = {t["name"]: t for t in memory.tags(user="ana")}
    assert tags["trekking"]["status"] != "merged" and tags["trekking"]["items"] == 1


def test_an_undo_offered_after_a_write_takes_back_that_write_or_none(setup):
    memory, app, keys = setup
    memory.remember("Paints watercolours", user="ana", tags=["painting", "art"])
    ana = Browser(app, keys["ana"])
    ana.post("/console/tags/status", {"name": "art", "status": "deprecated"}, page="/console/tags")
    # a status the tag has already records nothing: no Undo (the newest "tags" change, the
    # deprecation above, was offered, and its Undo took that back)
    ana.post("/console/tags/status", {"name": "art", "status": "deprecated"}, page="/console/tags")
    page = ana.get("/console/tags").text
    assert "nothing changed" in page
    assert re.findall(r'action="/console/changes/(chg_[0-9a-f]+)/undo"', page) == []


def test_dream_now_runs_in_the_background_and_reports(setup):
    memory, app, keys = setup
    memory.remember("Writes Rust at work", user="ana", category="context")
    ana = Browser(app, keys["ana"])
    started = ana.post("/console/dreams", {"days": "2"}, page="/console/dreams")
    assert started.status_code == 303 and "run=dream_" in started.headers["location"]
    run_id = started.headers["location"].split("run=")[1]
    memory.dream_status(run_id, user="ana")
    for _ in range(200):
        status = ana.get(f"/console/dreams/runs/{run_id}").json()
        if status["done"]:
            break
    assert status["done"] and status["status"] in ("done", "skipped")
    assert ana.post("/console/dreams", {"days": "31"}, page="/console/dreams").status_code == 303
    assert "days must be a whole number from 1 to 30" in ana.get("/console/dreams").text


def test_the_dreams_page_shows_the_newest_diaries_and_links_the_older(setup):
    from datetime import datetime, timezone

    from reverie.console.pages import DIARY_PAGE

    memory, app, keys = setup
    days = [f"2024-05-{d:02d}" for d in range(1, DIARY_PAGE + 3)]
    for day in days:
        memory.add([{"role": "user", "content": f"I prefer green tea on {day}"}], user="ana", at=f"{day}T09:00:00Z")
        memory.flush()
        at = datetime.fromisoformat(f"{day}T12:00:00+00:00")
        assert memory.dream(user="ana", days=1, force=True, now=at).status == "done"
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/dreams").text
    shown = re.findall(r"Dream diary, (\d{4}-\d\d-\d\d)", page)
    assert shown == days[::-1][:DIARY_PAGE]
    older = re.search(r'href="(/console/dreams\?before=[^"]+)"', page)
    assert older is not None
    rest = re.findall(r"Dream diary, (\d{4}-\d\d-\d\d)", ana.get(older.group(1).replace("&amp;", "&")).text)
    assert rest == days[::-1][DIARY_PAGE:]


def test_keys_page_creates_a_key_shown_once_and_revokes(setup):
    memory, app, keys = setup
    admin = Browser(app, keys["admin"])
    made = admin.post("/console/keys", {"user": "carol", "name": "tablet"}, page="/console/keys")
    secret = re.search(r'value="(rv_[^"]+)"', made.text).group(1)
    assert made.status_code == 200 and "shown this once" in made.text
    assert secret not in admin.get("/console/keys").text
    carol = Browser(app, secret)
    assert carol.get("/console").status_code == 200
    key_id = next(k.id for k in memory.store.list_api_keys() if k.user == "carol")
    admin.post(f"/console/keys/{key_id}/revoke", page="/console/keys")
    assert carol.get("/console").status_code == 303


def test_docs_are_served_from_local_assets(setup):
    _, app, _ = setup
    client = TestClient(app, base_url=BASE)
    docs = client.get("/docs")
    assert docs.status_code == 200
    urls = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert urls and all(u.startswith("/") for u in urls), urls
    for u in urls:
        assert client.get(u).status_code == 200, u
    assert "cdn" not in docs.text and "https://" not in docs.text
    assert client.get("/redoc").status_code == 404
    # the bundled Swagger UI reads OpenAPI 3.0: /docs loads the same document written that way
    spec = client.get("/docs/openapi.json").json()
    assert spec["openapi"] == "3.0.3" and spec["paths"].keys() == client.get("/openapi.json").json()["paths"].keys()
    assert '{"type": "null"}' not in json.dumps(spec) and '"const"' not in json.dumps(spec)
    assert not any(p.startswith("/console") for p in client.get("/openapi.json").json()["paths"])


def test_reverie_console_serves_on_localhost_and_prints_the_url(tmp_path):
    """`reverie console` on a home with no key yet: an admin key is made and printed once,
    then the URL; the console answers there and the key signs in."""
    port = free_port()
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-m", "reverie.cli", "console", "--home", str(home), "--port", str(port),
                             "--user", "ana"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        key = lines[1].strip()
        assert lines[0].startswith("No API key yet: created admin key") and key.startswith("rv_")
        url = f"http://127.0.0.1:{port}/console"
        assert url in lines[2] and "sign in with that key" in lines[2]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=False, timeout=10) as client:
            for _ in range(100):
                try:
                    page = client.get("/console/sign-in")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            signed = client.post("/console/sign-in", data={"key": key, "csrf": csrf_of(page.text)})
            assert signed.status_code == 303
            assert client.get("/console").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert key not in proc.stderr.read()


def test_reverie_console_over_postgresql_names_that_store_not_a_home_it_never_made(tmp_path):
    # it said "reverie console for <home>", a folder a PostgreSQL store leaves uncreated
    schema, store = new_schema()
    home = tmp_path / "home"
    with_password = store.replace("postgresql://postgres@", "postgresql://postgres:S3cretPw@", 1)
    proc = subprocess.Popen([sys.executable, "-m", "reverie.cli", "console", "--home", str(home), "--port",
                             str(free_port()), "--user", "ana", "--store", with_password],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("No API key yet: created admin key")
        assert lines[2].startswith("reverie console for postgresql://postgres:")
        assert schema in lines[2] and "S3cretPw" not in lines[2] and str(home) not in lines[2]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        drop_schema(schema)
    assert not home.exists()


# ------------------------------------------------------------ a refused form keeps what was typed
def test_a_refused_fact_returns_to_its_filtered_page_with_the_text_typed(setup):
    memory, app, keys = setup
    ana = Browser(app, keys["ana"])
    too_long = ("Keeps a very long note about tea " * 40)[:1223]
    assert len(too_long) > memory.settings.max_fact_chars
    page = ana.get("/console/facts?q=zzz&order=recent").text
    assert 'name="next" value="/console/facts?q=zzz&amp;order=recent"' in page  # the form says where it returns
    refused = ana.post("/console/facts", {"content": too_long, "category": "preference",
                                          "next": "/console/facts?q=zzz&order=recent"})
    assert refused.status_code == 303 and refused.headers["location"] == "/console/facts?q=zzz&order=recent"
    back = ana.get(refused.headers["location"]).text
    assert "max_fact_chars" in back
    assert f'name="content" rows="2" required placeholder="e.g. Prefers the conclusion first">{too_long}</textarea>' in back
    assert '<option value="preference" selected>' in back and 'id="q" name="q" type="search" value="zzz"' in back
    assert memory.facts(user="ana") == []
    # shown once: the next visit has an empty box again
    assert too_long not in ana.get("/console/facts?q=zzz&order=recent").text


def test_a_refused_form_without_next_returns_to_the_referring_page_and_query(setup):
    memory, app, keys = setup
    fact = memory.remember("Plays the oboe", user="ana")
    ana = Browser(app, keys["ana"])
    # the Referer's query is kept
    token = csrf_of(ana.get("/console/facts").text)
    refused = ana.client.post("/console/facts", data={"content": "", "csrf": token},
                              headers={"Referer": f"{BASE}/console/facts?q=oboe&status=all"})
    assert refused.headers["location"] == "/console/facts?q=oboe&status=all"
    # no Referer, no next: the page the post belongs to (never the overview), the edit kept
    edit = ana.post(f"/console/facts/{fact.id}", {"content": "Plays the oboe and the flute", "confidence": "lots"})
    assert edit.status_code == 303 and edit.headers["location"] == f"/console/facts/{fact.id}"
    page = ana.get(edit.headers["location"]).text
    assert "confidence must be a number" in page and ">Plays the oboe and the flute</textarea>" in page
    assert 'value="lots"' in page and memory.fact(fact.id).content == "Plays the oboe"
    forget = ana.post("/console/facts/fact_0000/forget")
    assert forget.headers["location"] == "/console/facts/fact_0000"
    undo = ana.post("/console/changes/chg_0000/undo")
    assert undo.headers["location"] == "/console/dreams"


def test_a_refused_profile_edit_keeps_the_text_in_its_own_section(setup):
    memory, app, keys = setup
    memory.set_profile("user.topOfMind", "Moving to Lisbon", user="ana")
    ana = Browser(app, keys["ana"])
    typed = "word " * 200
    refused = ana.post("/console/profile", {"section": "user.topOfMind", "summary": typed,
                                            "next": "/console/profile#user.topOfMind"})
    assert refused.headers["location"] == "/console/profile#user.topOfMind"
    page = ana.get("/console/profile").text
    kept = re.findall(r'data-section="([^"]+)">([^<]*)</textarea>', page)
    assert dict(kept)["user.topOfMind"] == typed.strip() or dict(kept)["user.topOfMind"] == typed
    assert sum(1 for _, text in kept if text.startswith("word word")) == 1  # only in that section's form


def test_a_memory_md_conflict_keeps_the_users_text_beside_the_current_version(setup):
    memory, app, keys = setup
    memory.remember("Drinks oolong tea", user="ana", category="preference")
    memory.dream(user="ana", force=True)
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/memory").text
    base = re.search(r'name="base" value="([0-9a-f]+)"', page).group(1)
    original = memory.memory_md(user="ana")
    # another tab saves first
    memory.save_memory_md(original.replace("Drinks oolong tea", "Drinks jasmine tea"), user="ana", base=base)
    mine = original.replace("Drinks oolong tea", "Drinks matcha every morning")
    refused = ana.post("/console/memory", {"text": mine, "base": base}, page="/console/memory")
    assert refused.status_code == 409
    html = refused.text
    assert "changed since this edit began" in html and "Your text is kept in the editor" in html
    editor = re.search(r'<textarea id="md-text"[^>]*>(.*?)</textarea>', html, re.S).group(1)
    assert "Drinks matcha every morning" in editor and "jasmine" not in editor
    assert "Drinks jasmine tea" in re.search(r'id="md-current".*?</details>', html, re.S).group(0)
    assert not any("matcha" in f.content for f in memory.facts(user="ana"))
    # saving from here, having seen both, takes the user's text in
    new_base = re.search(r'name="base" value="([0-9a-f]+)"', html).group(1)
    assert ana.post("/console/memory", {"text": editor.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                                        .replace("&#34;", '"').replace("&#39;", "'"), "base": new_base},
                    page="/console/memory").status_code == 303
    assert any("matcha" in f.content for f in memory.facts(user="ana"))


def test_a_memory_md_save_when_there_is_none_says_so_not_that_it_changed(setup):
    # the editor was drawn while MEMORY.md existed; the memory was deleted before the save:
    # "changed since this edit began" offered a save that could only be refused again
    memory, app, keys = setup
    memory.remember("Drinks oolong tea", user="ana", category="preference")
    memory.dream(user="ana", force=True)
    admin = Browser(app, keys["admin"])  # (deleting ana's memory deletes her keys: an admin shows her)
    page = admin.get("/console/memory?user=ana").text
    base = re.search(r'name="base" value="([0-9a-f]+)"', page).group(1)
    mine = memory.memory_md(user="ana").replace("Drinks oolong tea", "Drinks matcha every morning")
    memory.delete_user(user="ana", confirm="ana")
    refused = admin.post("/console/memory", {"text": mine, "base": base, "as_user": "ana"}, page="/console/memory")
    assert refused.status_code == 409
    html = refused.text
    assert "there is no MEMORY.md to edit yet: the first dream writes it" in html
    assert "changed since this edit began" not in html and "your text is kept in the editor below" in html
    assert "Drinks matcha every morning" in re.search(r'<textarea id="md-text"[^>]*>(.*?)</textarea>', html, re.S).group(1)
    assert memory.facts(user="ana") == []


# ------------------------------------------------------------ messages say what happened
def test_remember_says_whether_it_reinforced_or_replaced(setup):
    memory, app, keys = setup
    known = memory.remember("Likes green tea", user="ana", category="preference")
    older = memory.remember("Takes 5 mg of melatonin at night", user="ana", category="context")
    ana = Browser(app, keys["ana"])
    again = ana.post("/console/facts", {"content": "likes green tea", "category": "context"}, page="/console/facts")
    assert again.headers["location"] == f"/console/facts/{known.id}"
    said = ana.get(again.headers["location"]).text
    assert "Already known: reinforced “Likes green tea” (now [1x])" in said and "stays preference" in said
    assert "Remembered." not in said
    newer = ana.post("/console/facts", {"content": "Takes 10 mg of melatonin at night", "category": "context"},
                     page="/console/facts")
    said = ana.get(newer.headers["location"]).text
    assert "Remembered; it replaces “Takes 5 mg of melatonin at night” (archived)." in said
    assert memory.fact(older.id).status == "archived"
    fresh = ana.post("/console/facts", {"content": "Keeps bees", "category": "other"}, page="/console/facts")
    assert "Remembered." in ana.get(fresh.headers["location"]).text


def test_restore_brings_a_pending_fact_back_pending_with_undo(setup):
    memory, app, keys = setup
    fact = memory.remember("Maybe learning Welsh", user="ana")
    memory.update_fact(fact.id, user="ana", status="pending")
    ana = Browser(app, keys["ana"])
    ana.post(f"/console/facts/{fact.id}/forget")
    assert memory.fact(fact.id).status == "archived"
    restored = ana.post(f"/console/facts/{fact.id}/restore")
    assert memory.fact(fact.id).status == "pending"
    page = ana.get(restored.headers["location"]).text
    assert "Restored “Maybe learning Welsh” (pending)." in page
    undo = re.search(r'action="/console/changes/(chg_[0-9a-f]+)/undo"', page).group(1)
    ana.post(f"/console/changes/{undo}/undo")
    assert memory.fact(fact.id).status == "archived"


def test_forget_restore_and_bulk_archive_say_when_nothing_happened(setup):
    memory, app, keys = setup
    facts = [memory.remember(text, user="ana") for text in ("Keeps bees", "Plays the cello", "Reads Borges")]
    memory.forget(facts[0].id, user="ana")
    before = memory.fact(facts[0].id)
    ana = Browser(app, keys["ana"])
    forgot = ana.get(ana.post(f"/console/facts/{facts[0].id}/forget").headers["location"]).text
    assert "“Keeps bees” was archived already: nothing changed." in forgot and "Forgot" not in forgot
    assert memory.fact(facts[0].id).updated_at == before.updated_at
    restored = ana.get(ana.post(f"/console/facts/{facts[1].id}/restore").headers["location"]).text
    assert "“Plays the cello” is consolidated, not archived: nothing to restore." in restored
    assert "Restored" not in restored
    ids = [f.id for f in facts]
    memory.forget(facts[1].id, user="ana")
    some = ana.post("/console/facts/archive", {"ids": ids, "confirm": "yes", "next": "/console/facts"})
    said = ana.get(some.headers["location"]).text
    assert "Archived 1 fact (2 were archived already)" in said
    none = ana.post("/console/facts/archive", {"ids": ids, "confirm": "yes", "next": "/console/facts"})
    said = ana.get(none.headers["location"]).text
    assert "Nothing archived: all 3 facts were archived already." in said and "Archived 3" not in said
    episode = memory.add([{"role": "user", "content": "hello there"}], user="ana")[0]
    again = ana.get(ana.post(f"/console/episodes/{episode.id}/restore").headers["location"]).text
    assert "This episode is not archived: nothing to restore." in again and "Episode restored." not in again


def test_a_key_label_is_redacted(setup):
    memory, app, keys = setup
    admin = Browser(app, keys["admin"])
    made = admin.post("/console/keys", {"user": "carol", "name": "carol@example.com sk-abcdefghijklmnopqrstuvwxyz123456"},
                      page="/console/keys")
    assert made.status_code == 200
    for html in (made.text, admin.get("/console/keys").text):
        assert "carol@example.com" not in html and "sk-abcdefghijklmnopqrstuvwxyz123456" not in html
    label = next(k.name for k in memory.store.list_api_keys() if k.user == "carol")
    assert label == "[email] [api-key]"


def test_a_key_label_keeps_no_control_character(setup):
    # an escape sequence in a label reached the terminal of whoever ran `reverie keys list`
    memory, app, keys = setup
    admin = Browser(app, keys["admin"])
    made = admin.post("/console/keys", {"user": "dave", "name": "lap\x07top\x1b[31m red\x00"}, page="/console/keys")
    assert made.status_code == 200
    assert next(k.name for k in memory.store.list_api_keys() if k.user == "dave") == "laptop[31m red"


def test_the_dream_status_answers_json_even_for_an_error(setup):
    memory, app, keys = setup
    ana = Browser(app, keys["ana"])
    # the page's script reads JSON, errors included
    missing = ana.get("/console/dreams/runs/dream_nothing")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/json")
    assert "dream_nothing" in missing.json()["error"]
    run = memory.dream(user="bob", force=True)
    other = ana.get(f"/console/dreams/runs/{run.id}")
    assert other.status_code == 404 and "error" in other.json()
    signed_out = Browser(app).get("/console/dreams/runs/dream_nothing")
    assert signed_out.status_code == 401 and "error" in signed_out.json()


@pytest.mark.parametrize("path, status, said", [
    ("/console/facts?user=bob", 403, "this key reaches only ana&#39;s memory"),  # no quotes round the name
    ("/console/facts?status=gone", 400, "archived or all"),  # every choice of the filter
    ("/console/facts?order=bogus", 400, "order must be one of uses, recent, last_used, confidence"),  # as REST
    ("/console/dreams?before=zz", 400, "before is not a cursor this list gave out"),  # the page's own name
])
def test_a_refused_page_says_plainly_why(setup, path, status, said):
    _, app, keys = setup
    refused = Browser(app, keys["ana"]).get(path)
    assert refused.status_code == status and said in refused.text


def test_the_switch_form_with_no_user_asks_to_choose_one(setup):
    _, app, keys = setup
    admin = Browser(app, keys["admin"])
    empty = admin.post("/console/user", {"user": "  ", "next": "/console/facts"})
    assert empty.headers["location"] == "/console/facts"
    page = admin.get("/console/facts").text
    assert "choose a user" in page and "pass user=" not in page


def test_fact_search_trims_spaces(setup):
    memory, app, keys = setup
    for text in ("Drinks tea at breakfast", "Grows tea in the garden", "Collects antique tea pots"):
        memory.remember(text, user="ana")
    assert len(memory.facts(user="ana")) == 3
    page = Browser(app, keys["ana"]).get("/console/facts?q=++tea++").text
    assert len(re.findall(r'data-fact="', page)) == 3 and 'name="q" type="search" value="tea"' in page


def test_tag_merge_says_the_real_tag_names(setup):
    memory, app, keys = setup
    memory.remember("Edits code in helix", user="ana", tags=["helix", "python"])
    memory.remember("Writes Python daily", user="ana", tags=["python"])
    ana = Browser(app, keys["ana"])
    merged = ana.post("/console/tags/merge", {"old": "HELIX", "new": "Python", "next": "/console/tags"})
    page = ana.get(merged.headers["location"]).text
    assert "Merged “helix” into “python”" in page and "HELIX" not in page


def test_a_form_drawn_for_one_user_never_writes_into_the_user_another_tab_switched_to(setup):
    memory, app, keys = setup
    admin = Browser(app, keys["admin"])
    tab_a = admin.get("/console/profile?user=ana").text  # tab A shows ana's profile
    drawn_for = re.search(r'name="as_user" value="([^"]*)"', tab_a).group(1)
    assert drawn_for == "ana"
    admin.get("/console/facts?user=bob")  # tab B switches the session to bob
    sent = admin.client.post("/console/profile", data={
        "section": "user.workContext", "summary": "ANA: works as a pilot", "csrf": csrf_of(tab_a), "as_user": "ana"})
    assert sent.status_code == 303
    page = admin.get(sent.headers["location"]).text
    assert "nothing was saved: this form was for ana" in page
    assert "ANA: works as a pilot" not in page  # nor is ana's text offered on bob's form
    assert memory.profile(user="bob").section("user.workContext").summary == ""
    assert memory.profile(user="ana").section("user.workContext").summary == ""
    admin.get("/console/profile?user=ana")
    again = admin.client.post("/console/profile", data={
        "section": "user.workContext", "summary": "ANA: works as a pilot", "csrf": csrf_of(tab_a), "as_user": "ana"})
    assert again.status_code == 303 and memory.profile(user="ana").section("user.workContext").summary


def test_the_recall_playground_shows_a_person_the_text_itself_and_no_markup_runs(setup):
    memory, app, keys = setup
    memory.remember("Writes arrows like --> and <-- in notes <script>alert(1)</script>", user="ana")
    page = Browser(app, keys["ana"]).get("/console/recall?message=arrows+in+notes&budget=400").text
    shown = re.search(r'<p class="pre item-text">([^<]*)</p>', page).group(1)
    assert "--&gt; and &lt;--" in shown and "&amp;gt;" not in shown  # escaped once, for the page
    assert "<script>alert(1)</script>" not in page


# ------------------------------------------------------------ signing out ends the session; no secret rides a cookie
def test_a_cookie_copied_before_sign_out_reads_and_writes_nothing_after_it(setup):
    memory, app, keys = setup
    ana = Browser(app, keys["ana"])
    page = ana.get("/console/facts")
    assert page.status_code == 200
    copied, token = ana.client.cookies.get("reverie_console"), csrf_of(page.text)
    assert ana.post("/console/sign-out").status_code == 303
    # the copy, replayed by another client (as a thief of the cookie would)
    thief = TestClient(app, base_url=BASE, follow_redirects=False)
    thief.cookies.set("reverie_console", copied)
    read = thief.get("/console/facts")
    assert read.status_code == 303 and read.headers["location"].startswith("/console/sign-in")
    wrote = thief.post("/console/facts", data={"content": "Was written after sign-out", "category": "other",
                                               "csrf": token})
    assert wrote.status_code in (401, 403) or wrote.headers["location"].startswith("/console/sign-in")
    assert memory.facts(user="ana") == []
    # with another server process over the same store too (its sessions read the same record)
    other = create_app(memory, mcp=False)
    again = TestClient(other, base_url=BASE, follow_redirects=False)
    again.cookies.set("reverie_console", copied)
    assert again.get("/console/facts").status_code == 303
    # signing in again starts a session of its own, which works
    assert ana.sign_in(keys["ana"]).status_code == 303 and ana.get("/console/facts").status_code == 200


def _flash_of(response) -> dict:
    """The flash message a response sets, as the browser keeps it (signed, not encrypted)."""
    import base64
    import zlib

    value = response.cookies.get("reverie_console_flash") or ""
    packed = value.strip('"').rsplit(".", 1)[0]
    return json.loads(zlib.decompress(base64.urlsafe_b64decode(packed)))


def test_a_refused_forms_draft_and_its_message_carry_no_secret_in_the_cookie_or_the_form(setup):
    memory, app, keys = setup
    ana = Browser(app, keys["ana"])
    secret = "password Hunter2Secret"
    too_long = f"My {secret} is for the wiki; " + "and a very long note about tea " * 40
    refused = ana.post("/console/facts", {"content": too_long, "category": "preference"}, page="/console/facts")
    assert refused.status_code == 303
    flash = _flash_of(refused)
    assert flash["error"] and "Hunter2Secret" not in json.dumps(flash)
    assert "[password]" in flash["draft"]["fields"]["content"]  # what was typed comes back, the secret masked
    page = ana.get(refused.headers["location"]).text
    assert "Hunter2Secret" not in page and "[password]" in page
    # a message built from a value typed (the profile section) is redacted too
    section = ana.post("/console/profile", {"section": "AKIAIOSFODNN7EXAMPLE", "summary": "x"}, page="/console/profile")
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(_flash_of(section))
    assert "AKIAIOSFODNN7EXAMPLE" not in ana.get(section.headers["location"]).text
    assert memory.facts(user="ana") == []
