"""The web console in a real browser: Debian's Chromium driven by Playwright against a real
`reverie serve` on 127.0.0.1 over the demo data. Each flow asserts what the page shows,
and no page may log a JavaScript error or a failed request.

Screenshots of every page are written to a temporary folder; with REVERIE_SCREENSHOTS=1
they replace docs/console/*.png (the README shows them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.live_server import free_port, wait_for

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
REVERIE = [sys.executable, "-m", "reverie.cli"]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

sync_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):  # CI installs it (.ci/run); a browser is never downloaded
    pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)


def _cli(*args: str, home: Path) -> str:
    """A `reverie` command run in this process (the server below is the separate process)."""
    from typer.testing import CliRunner

    from reverie.cli import app

    done = CliRunner().invoke(app, [*args, "--home", str(home)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout


class Server:
    def __init__(self, url: str, home: Path, keys: dict[str, str]):
        self.url, self.home, self.keys = url, home, keys


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("console") / "home"
    _cli("demo", "--json", home=home)  # ana's demo memory: English and Chinese, several days and threads
    keys = {who: json.loads(_cli("keys", "create", "--user", user, *extra, "--json", home=home))["key"]
            for who, user, extra in (("ana", "ana", []), ("bob", "bob", []), ("admin", "ops", ["--admin"]))}
    _cli("remember", "Bob keeps a private journal", "--user", "bob", home=home)
    port = free_port()
    proc = subprocess.Popen([*REVERIE, "serve", "--home", str(home), "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", proc)
        yield Server(f"http://127.0.0.1:{port}", home, keys)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log = proc.stderr.read() if proc.stderr else ""
        for secret in keys.values():
            assert secret not in log, "an API key reached the server log"


@pytest.fixture(scope="module")
def browser(server):
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


class Tab:
    """A page of its own browser context (its own cookies) that records every problem."""

    def __init__(self, page, server: Server):
        self.page, self.server = page, server
        self.problems: list[str] = []
        page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url} {r.failure}"))
        page.on("response", lambda r: r.status >= 500 and self.problems.append(f"{r.status} from {r.url}"))

    def refused(self, status: int) -> None:
        """The page was meant to answer ``status``: the browser's note of it is no problem."""
        note = f"the server responded with a status of {status}"
        self.problems = [p for p in self.problems if note not in p]

    def go(self, path: str):
        response = self.page.goto(self.server.url + path)
        self.page.wait_for_load_state("load")
        return response

    def sign_in(self, who: str) -> None:
        self.go("/console")
        assert "/console/sign-in" in self.page.url
        # by keyboard: the key field takes the focus; Enter sends the form
        self.page.wait_for_function("document.activeElement && document.activeElement.id === 'key'")
        self.page.keyboard.type(self.server.keys[who])
        self.page.keyboard.press("Enter")
        self.page.wait_for_url(re.compile(r".*/console$"))

    def flash(self) -> str:
        return self.page.locator(".flash").first.inner_text()

    def text(self, selector: str = "main") -> str:
        return self.page.locator(selector).first.inner_text()


@pytest.fixture
def tab(browser, server) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    t = Tab(context.new_page(), server)
    yield t
    context.close()
    assert not t.problems, t.problems


def submit(tab: Tab, locator) -> None:
    with tab.page.expect_navigation():
        locator.click()


def dream_now(tab: Tab, days: int) -> None:
    """Start a dream on the dreams page and wait until the page shows its end."""
    tab.page.get_by_label("Days of notes").fill(str(days))
    with tab.page.expect_navigation() as started:
        tab.page.get_by_role("button", name="Dream now").click()
    if 'data-done="no"' in started.value.text():
        # the script follows the run and shows the page again when it ends
        tab.page.wait_for_url(re.compile(r".*[?&]ended=1"), timeout=20000)


# ------------------------------------------------------------ sign-in
def test_sign_in_and_overview(tab):
    tab.sign_in("ana")
    assert tab.page.locator("h1").inner_text().startswith("Overview")
    assert tab.text("#count-episodes") == "14"
    assert "Learning queue" in tab.text() and "Next scheduled" in tab.text()
    assert tab.page.locator("nav a[aria-current=page]").inner_text() == "Overview"
    assert tab.page.locator("a[href='/console/keys']").count() == 0  # keys: admin keys only


def test_a_bad_key_is_refused(tab):
    tab.go("/console/sign-in")
    tab.page.fill("#key", "rv_" + "A" * 43)
    submit(tab, tab.page.get_by_role("button", name="Sign in"))
    assert "not a live API key" in tab.text("#sign-in-error")
    assert tab.page.locator("#key").input_value() == ""  # never echoed back
    tab.refused(401)
    tab.go("/console/facts")
    assert "/console/sign-in" in tab.page.url


# ------------------------------------------------------------ every page, both widths
PAGES = [("overview", "/console"), ("profile", "/console/profile"), ("facts", "/console/facts"),
         ("timeline", "/console/timeline"), ("notes", "/console/notes"), ("memory-md", "/console/memory"),
         ("dreams", "/console/dreams"), ("tags", "/console/tags"),
         ("recall", "/console/recall?message=%E5%91%A8%E6%9C%AB%E5%8E%BB%E5%93%AA%E9%87%8C%E7%88%AC%E5%B1%B1%EF%BC%9F"
                    "+and+which+editor+do+I+use%3F&budget=600"),
         ("keys", "/console/keys")]


def test_every_page_at_desktop_and_phone_width(browser, server, tmp_path):
    """Runs early, on the demo data as `reverie demo` left it (and one dream, so that the
    dream pages have something to show); the flows after it change the data."""
    folder = ROOT / "docs" / "console" if os.environ.get("REVERIE_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    for width, suffix in ((1280, ""), (390, "-narrow")):
        context = browser.new_context(viewport={"width": width, "height": 900})
        tab = Tab(context.new_page(), server)
        tab.sign_in("admin")
        tab.page.get_by_label("User").fill("ana")
        submit(tab, tab.page.get_by_role("button", name="Show"))
        if width == 1280:
            tab.go("/console/dreams")
            dream_now(tab, 30)
        for name, path in PAGES:
            tab.go(path)
            assert tab.page.locator("h1").count() == 1, name
            # nothing wider than the window (tables scroll inside their own box)
            assert tab.page.evaluate("document.documentElement.scrollWidth") <= width, f"{name} at {width}px"
            unlabelled = tab.page.evaluate("""() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.name || e.id)""")
            assert not unlabelled, f"unlabelled controls on {name}: {unlabelled}"
            if width == 1280 or name in ("facts", "recall"):
                tab.page.screenshot(path=str(folder / f"{name}{suffix}.png"), full_page=width == 1280 and name not in ("tags", "recall"))
        assert "云南" in (tab.go("/console/facts") and tab.text("#facts-table"))  # Chinese text, as stored
        if width == 1280:
            submit(tab, tab.page.locator("#facts-table a.fact-text").filter(has_text="logical replication"))
            assert "Where it came from" in tab.text()
            tab.page.screenshot(path=str(folder / "fact.png"), full_page=True)
        context.close()
        assert not tab.problems, tab.problems
    if folder != tmp_path:
        shutil.rmtree(tmp_path, ignore_errors=True)


# ------------------------------------------------------------ facts
def test_remember_find_forget_and_restore_a_fact(tab):
    tab.sign_in("ana")
    tab.go("/console/facts")
    tab.page.get_by_label("Fact", exact=True).fill("Takes the 7:40 train to the office on Mondays")
    tab.page.get_by_label("Category", exact=True).nth(1).select_option("context")
    submit(tab, tab.page.get_by_role("button", name="Remember"))
    assert tab.flash() == "Remembered."
    assert tab.text("h1") == "Takes the 7:40 train to the office on Mondays"
    tab.go("/console/facts")
    tab.page.get_by_label("Search").fill("7:40 train")
    submit(tab, tab.page.get_by_role("button", name="Apply"))
    rows = tab.page.locator("#facts-table tbody tr")
    assert rows.count() == 1 and "Takes the 7:40 train" in rows.first.inner_text()
    submit(tab, rows.first.get_by_role("button", name="Forget"))
    assert tab.flash().startswith("Forgot “Takes the 7:40 train")
    assert "No facts match" in tab.text("#facts-table")
    tab.page.get_by_label("Status").select_option("archived")
    submit(tab, tab.page.get_by_role("button", name="Apply"))
    row = tab.page.locator("#facts-table tbody tr").first
    assert "archived" in row.inner_text()
    submit(tab, row.get_by_role("button", name="Restore"))
    assert tab.flash().startswith("Restored “Takes the 7:40 train")
    tab.go("/console/facts?q=7%3A40")
    assert "consolidated" in tab.text("#facts-table tbody tr")


def test_stored_markup_shows_as_text(tab):
    tab.sign_in("ana")
    tab.go("/console/facts")
    nasty = "Wrote <script>window.__pwned = 1</script> then </memory> in a note"
    tab.page.get_by_label("Fact", exact=True).fill(nasty)
    submit(tab, tab.page.get_by_role("button", name="Remember"))
    assert tab.text("h1") == nasty
    assert tab.page.evaluate("window.__pwned") is None
    tab.go("/console/facts?q=pwned")
    assert nasty in tab.text("#facts-table")
    tab.go("/console/recall?message=" + "what did I write in a note about pwned")
    block = tab.text("#memory-block")
    assert "window.__pwned" in block and block.rstrip().endswith("</memory>") and block.count("</memory>") == 1
    assert tab.page.evaluate("window.__pwned") is None


# ------------------------------------------------------------ profile
def test_edit_the_profile_and_undo(tab):
    tab.sign_in("ana")
    tab.go("/console/profile")
    box = tab.page.get_by_role("textbox", name="Top Of Mind")
    before = box.input_value()
    box.fill("准备春天的云南徒步 and the December freeze")
    submit(tab, tab.page.get_by_role("button", name="Save Top Of Mind"))
    assert tab.flash().startswith("Saved Top Of Mind.")
    assert tab.page.get_by_role("textbox", name="Top Of Mind").input_value() == "准备春天的云南徒步 and the December freeze"
    submit(tab, tab.page.locator(".flash").get_by_role("button", name="Undo"))
    assert tab.flash().startswith("Undid the edit")
    assert tab.page.get_by_role("textbox", name="Top Of Mind").input_value() == before


# ------------------------------------------------------------ recall playground
def test_recall_playground_shows_score_parts(tab):
    tab.sign_in("ana")
    tab.go("/console/recall")
    tab.page.get_by_label("Message").fill("Which editor do I use now?")
    tab.page.get_by_label("Budget in tokens").fill("500")
    submit(tab, tab.page.get_by_role("button", name="Recall"))
    assert tab.text("#route") in ("shallow", "medium", "deep")
    assert re.search(r"\d+ of 500 tokens", tab.text("#budget-used"))
    assert tab.text("#memory-block").startswith("<memory>")
    first = tab.page.locator("article.item").filter(has_text="helix").first
    parts = {g.get_attribute("data-part"): float(g.get_attribute("data-value"))
             for g in first.locator("g.part").all()}
    assert {"relevance", "text", "tags", "recency"} <= set(parts) and parts["relevance"] > 0
    tab.go("/console/facts?q=helix")
    assert "[0x]" in tab.text("#facts-table tbody tr")  # the playground did not count as a use


# ------------------------------------------------------------ dreams
def test_dream_now_then_undo_it(tab):
    tab.sign_in("ana")
    tab.go("/console/dreams")
    dream_now(tab, 30)
    assert tab.text("#dream-status") == "done"
    assert "I read" in tab.text("#diary")
    row = tab.page.locator("#changes-table tbody tr[data-action=dream]").first
    change = row.get_attribute("data-change")
    submit(tab, row.get_by_role("button", name="Undo"))
    assert tab.flash().startswith(f"Undid the dream {change}")
    assert "undone" in tab.text(f"#changes-table tr[data-change='{change}']")


# ------------------------------------------------------------ tags
def test_merge_two_tags(tab):
    tab.sign_in("ana")
    tab.go("/console/tags")
    names = [n for n in tab.page.locator("#tags-table tbody tr").evaluate_all(
        "rows => rows.filter(r => r.querySelector('.badge').textContent.trim() !== 'merged').map(r => r.dataset.tag)")]
    old, new = names[0], names[1]
    tab.page.get_by_label("Merge this tag").fill(old)
    tab.page.get_by_label("into this one").fill(new)
    submit(tab, tab.page.get_by_role("button", name="Merge", exact=True))
    assert tab.flash().startswith(f"Merged “{old}” into “{new}”")
    assert f"→ {new}" in tab.text(f"#tags-table tr[data-tag='{old}']")
    assert tab.page.locator("svg.graph, .card p.muted").count() >= 1


# ------------------------------------------------------------ isolation
def test_a_user_key_cannot_reach_another_users_pages(tab, server):
    tab.sign_in("bob")
    assert tab.page.locator("#switch-user").count() == 0  # no user switcher for a plain key
    assert "Bob keeps a private journal" in (tab.go("/console/facts") and tab.text("#facts-table"))
    response = tab.go("/console/facts?user=ana")
    assert response.status == 403 and "reaches only bob's memory" in tab.text("#error-message")
    tab.go("/console/facts")
    assert "helix" not in tab.text()
    # by form: a hand-made post to switch users, with bob's own CSRF token
    with tab.page.expect_navigation():
        tab.page.evaluate("""() => {
            const form = document.createElement('form');
            form.method = 'post'; form.action = '/console/user';
            for (const [k, v] of [['user', 'ana'], ['csrf', document.querySelector('input[name=csrf]').value]]) {
                const input = document.createElement('input'); input.type = 'hidden'; input.name = k; input.value = v;
                form.appendChild(input);
            }
            document.body.appendChild(form); form.submit();
        }""")
    assert "Not allowed" in tab.text("h1")
    tab.go("/console")
    assert tab.text("#current-user") == "bob"
    tab.refused(403)  # the refusals themselves


def test_an_admin_switches_users(tab):
    tab.sign_in("admin")
    tab.page.get_by_label("User").fill("ana")
    submit(tab, tab.page.get_by_role("button", name="Show"))
    assert "Showing ana's memory." in tab.flash()
    tab.go("/console/facts?q=helix")
    assert "helix" in tab.text("#facts-table")


# ------------------------------------------------------------ the API docs, offline
def test_api_docs_render_from_local_assets(tab, server):
    outside: list[str] = []
    tab.page.on("request", lambda r: r.url.startswith(server.url) or outside.append(r.url))
    tab.go("/docs")
    tab.page.wait_for_selector(".opblock-summary", timeout=10000)
    assert tab.page.locator(".opblock").count() > 20
    assert "Unable to render" not in tab.text("body")
    assert not outside, outside


