"""Choosing PostgreSQL (``--store`` on every command, ``REVERIE_STORE``, ``store`` in config.toml),
the LoCoMo bench on it, and what a shared store changes above the store: documents in the
store, the claimed learning queue, one dream per user across processes."""

from __future__ import annotations

import json
import threading
import time
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reverie import Conflict, InvalidInput, Memory
from reverie.bench import load_locomo, run_locomo
from reverie.cli import app
from reverie.models import Episode, Fact, Message, Note
from reverie.scheduler import Scheduler
from reverie.store import PostgresStore, SQLiteStore
from reverie.text import terms
from tests.fake_openai import Reply
from tests.live_server import wait_until
from tests.test_bench import locomo_data
from tests.test_dream import keep_all_and_add

DAY = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
keep_all = keep_all_and_add({})

runner = CliRunner()


def cli(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_every_command_takes_store(home, pg_url):
    made = cli("remember", "Prefers tea over coffee", "--user", "ana", "--json", "--home", str(home), "--store", pg_url)
    assert made.exit_code == 0, made.output
    fact_id = json.loads(made.output)["id"]
    # a read-only command on a home that holds no reverie.db: the store is elsewhere
    listed = cli("facts", "--user", "ana", "--json", "--home", str(home / "nothing"), "--store", pg_url)
    assert [f["id"] for f in json.loads(listed.output)] == [fact_id]
    created = cli("keys", "create", "--user", "ana", "--json", "--home", str(home), "--store", pg_url)
    assert json.loads(created.output)["key"].startswith("rv_")
    assert [k.user for k in PostgresStore(pg_url).list_api_keys()] == ["ana"]
    assert not (home / "reverie.db").exists()
    for command in (["facts"], ["keys", "list"], ["bench", "locomo"], ["dream"], ["serve"], ["migrate"]):
        shown = cli(*command, "--help").output
        assert "--store" in shown, (command, shown)


def test_store_from_the_environment_and_from_config_toml(home, pg_url, monkeypatch):
    monkeypatch.setenv("REVERIE_STORE", pg_url)
    assert cli("remember", "Uses vim", "--user", "ana", "--home", str(home)).exit_code == 0
    monkeypatch.delenv("REVERIE_STORE")
    # without it, the default again: SQLite in the home (none there yet)
    assert json.loads(cli("facts", "--user", "ana", "--json", "--home", str(home / "other")).output)["type"] == "NotFound"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'store = "{pg_url}"\n', encoding="utf-8")
    with Memory(home, background=False) as mem:
        assert isinstance(mem.store, PostgresStore)
        assert [f.content for f in mem.facts(user="ana")] == ["Uses vim"]
    for wrong in ("mysql://x", "postgresql:/postgres@127.0.0.1:5432/test", "localhost:5432/test"):
        (home / "config.toml").write_text(f'store = "{wrong}"\n', encoding="utf-8")
        with pytest.raises(InvalidInput, match="postgresql://"):  # never a stray SQLite file of that name
            Memory(home, background=False)
    assert not any(p.name.endswith("test") for p in Path.cwd().rglob("*5432*"))


def test_sqlite_stays_the_default(home):
    with Memory(home, background=False) as mem:
        assert isinstance(mem.store, SQLiteStore) and (home / "reverie.db").exists()


def test_locomo_recall_is_the_same_on_both_stores(tmp_path, pg_url):
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "tiny.json").write_text(json.dumps(locomo_data()), encoding="utf-8")
    cases = load_locomo(folder)
    on_sqlite = run_locomo(cases, budgets=[50, 200]).as_dict()["reverie"]
    on_postgres = run_locomo(cases, budgets=[50, 200], store=pg_url).as_dict()["reverie"]
    for figure in ("recall_at_budget", "recall_at_k", "held_at_budget"):
        assert on_sqlite[figure] == on_postgres[figure], figure
    # the bench's scratch schemas are gone
    store = PostgresStore(pg_url)
    assert store._q("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'reverie_bench_%%'")[0][0] == 0
    store.close()


def test_reads_that_do_not_depend_on_each_other_wait_for_the_server_once(pg_url):
    """Round trips are what a server on another machine charges for: items of several kinds
    with tags and the profile, a tag's size with its postings, and a search's statistics with its matches (and every
    kind's best) each come back from one wait, with the rows the separate reads give."""
    store = PostgresStore(pg_url)
    try:
        ep = Episode(user="ana", messages=[Message(role="user", content="Green tea in Kyoto")], status="completed")
        fact, note = Fact(user="ana", content="Likes green tea"), Note(user="ana", date="2024-05-01", content="- green tea")
        store.put_episode(ep)
        store.put_fact(fact)
        store.put_note(note)
        store.set_item_tags("ana", "episode", ep.id, {"tea": 1.0})
        store.set_item_tags("ana", "fact", fact.id, {"tea": 1.0})

        def waits(read):  # type: ignore[no-untyped-def]
            before = store.waits
            out = read()
            return out, store.waits - before

        read, n = waits(lambda: store.read_keyed("ana", items={"episode": [ep.id], "fact": [fact.id], "note": [note.id]},
                                                 tags=["tea"], profile=True))
        assert n == 1 and set(read.items["episode"]) == {ep.id} and set(read.items["fact"]) == {fact.id}
        assert set(read.items["note"]) == {note.id} and read.tags == {} and read.profile is not None
        (counts, posts), n = waits(lambda: store.sized_postings("ana", {"tea": (5, 1)}, ["episode", "fact"],
                                                                frequent_over=10))
        assert n == 1 and counts == {"tea": 2} and [p.id for p in posts] == [ep.id, fact.id]
        hits, n = waits(lambda: store.search("ana", terms("green tea"), ["episode", "fact", "note"], 10))
        assert n == 2 and {h.kind for h in hits} == {"episode", "fact", "note"}
        # inside a transaction, one read at a time (its locks come first), the same rows
        with store.transaction():
            assert store.read_keyed("ana", items={"episode": [ep.id], "fact": [fact.id]}).items == {
                "episode": store.get_episodes([ep.id]), "fact": store.get_facts([fact.id])}
    finally:
        store.close()


# ---------------------------------------------------------------- documents in the store


def say(mem: Memory, text: str, at: datetime, user: str = "ana", thread: str = "default") -> None:
    mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}], user=user, at=at,
            thread=thread)


def test_a_stale_mirror_of_another_replica_does_not_undo_an_edit_made_through_this_one(tmp_path, pg_url):
    # two replicas, each with a mirror folder of its own: B's mirror still holds what B wrote
    # before A's edit; B's next dream must not take B's stale file for a hand edit
    a = Memory(tmp_path / "a", background=False, store=pg_url, mirror_dir=tmp_path / "mirror-a")
    b = Memory(tmp_path / "b", background=False, store=pg_url, mirror_dir=tmp_path / "mirror-b")
    try:
        b.remember("Hates mushrooms in any form", user="ana", category="preference")
        assert b.dream(user="ana", days=30, now=DAY).status == "done"
        text = a.memory_md(user="ana")
        edited = a.save_memory_md(text.replace("Hates mushrooms in any form", "Hates mushrooms and olives"),
                                  user="ana")
        assert [line.content for line in edited.edited] == ["Hates mushrooms and olives"]
        assert b.dream(user="ana", days=30, now=DAY, force=True).status == "done"
        assert [f.content for f in b.facts(user="ana")] == ["Hates mushrooms and olives"]
        # a hand edit of B's mirror file still counts
        md = tmp_path / "mirror-b" / "users" / "ana" / "MEMORY.md"
        md.write_text(md.read_text(encoding="utf-8").replace("and olives", "and capers"), encoding="utf-8")
        assert [line.content for line in b.sync(user="ana").edited] == ["Hates mushrooms and capers"]
    finally:
        a.close()
        b.close()


def test_a_hand_edit_of_a_mirror_another_replica_has_since_outdated_is_refused_not_taken_against_the_new(
        tmp_path, pg_url):
    from reverie import Conflict

    a = Memory(tmp_path / "a", background=False, store=pg_url, mirror_dir=tmp_path / "mirror-a")
    b = Memory(tmp_path / "b", background=False, store=pg_url)  # a replica without a mirror
    try:
        a.remember("Prefers window seats on flights", user="u", category="preference")
        assert a.dream(user="u", days=30, now=DAY).status == "done"
        b.remember("Allergic to peanuts", user="u", category="constraint")
        assert b.dream(user="u", days=30, now=DAY, force=True).status == "done"  # the store moves on
        md = tmp_path / "mirror-a" / "users" / "u" / "MEMORY.md"
        stale = md.read_text(encoding="utf-8")
        assert "peanuts" not in stale
        md.write_text(stale.replace("window seats", "aisle seats"), encoding="utf-8")
        with pytest.raises(Conflict, match="written before the store's current version"):
            a.sync(user="u")
        assert sorted(f.content for f in a.facts(user="u")) == ["Allergic to peanuts", "Prefers window seats on flights"]
        assert "aisle seats" in md.read_text(encoding="utf-8")  # the person's edit is left where it is
        md.unlink()  # moved aside: the next sync writes the current version there
        assert a.sync(user="u").changed is False and "peanuts" in md.read_text(encoding="utf-8")
        md.write_text(md.read_text(encoding="utf-8").replace("window seats", "aisle seats"), encoding="utf-8")
        assert [f.content for f in a.sync(user="u").edited] == ["Prefers aisle seats on flights"]
        assert "Allergic to peanuts" in [f.content for f in a.facts(user="u")]
    finally:
        a.close()
        b.close()


def test_without_a_mirror_documents_live_in_the_store_and_every_replica_sees_them(tmp_path, pg_url):
    first = Memory(tmp_path / "one", background=False, store=pg_url)
    second = Memory(tmp_path / "two", background=False, store=pg_url)
    try:
        first.remember("Prefers tea over coffee", user="ana", category="preference")
        say(first, "I decided to move the team to weekly releases", DAY)
        first.flush()
        run = first.dream(user="ana", days=30, now=DAY)
        assert run.status == "done"
        assert "Prefers tea over coffee" in second.memory_md(user="ana")  # another replica reads it
        assert list(second.diaries(user="ana")) == [DAY.date().isoformat()]
        assert second.notes(user="ana")
        assert not any(p.is_file() for p in tmp_path.rglob("*.md"))  # no file anywhere
        # an edit made through any replica (the API's, the console's) is taken in by sync
        text = second.memory_md(user="ana").replace("Prefers tea over coffee", "Prefers green tea over coffee")
        second.files.write("ana", second.files.memory_md("ana"), text)
        report = first.sync(user="ana")
        assert [line.content for line in report.edited] == ["Prefers green tea over coffee"]
        assert [f.content for f in first.facts(user="ana", category="preference")] == ["Prefers green tea over coffee"]
        assert "green tea" in first.memory_md(user="ana")
    finally:
        first.close()
        second.close()


def test_a_mirror_folder_gets_the_files_and_a_hand_edit_there_is_synced(tmp_path, pg_url):
    mirror = tmp_path / "mirror"
    mem = Memory(tmp_path / "home", background=False, store=pg_url, mirror_dir=mirror)
    try:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        say(mem, "I decided to move the team to weekly releases", DAY)
        mem.flush()
        assert mem.dream(user="ana", days=30, now=DAY).status == "done"
        md = mirror / "users" / "ana" / "MEMORY.md"
        assert md.read_text(encoding="utf-8") == mem.memory_md(user="ana")
        assert (mirror / "users" / "ana" / "memory" / f"{DAY.date()}.md").is_file()
        md.write_text(md.read_text(encoding="utf-8").replace("Prefers tea", "Prefers black tea"), encoding="utf-8")
        assert [line.content for line in mem.sync(user="ana").edited] == ["Prefers black tea over coffee"]
        assert "black tea" in mem.memory_md(user="ana")  # the store took it
        deleted = mem.delete_user(user="ana", confirm="ana")
        assert deleted["documents"] >= 2 and not (mirror / "users" / "ana").exists()
    finally:
        mem.close()


# ---------------------------------------------------------------- usage under concurrent writers


def test_a_usage_flush_that_deadlocks_with_another_writer_is_tried_again(home, pg_url):
    # another process's writer holds one delivered episode and then asks for the other,
    # which the flush holds: PostgreSQL breaks the deadlock by rolling the flush back, and
    # the flush writes its counts on its next try instead of failing the recall
    import psycopg

    from reverie.store.postgres import split_schema

    with Memory(home, background=False, store=pg_url, usage_flush_seconds=3600) as mem:
        ids = sorted(mem.add([{"speaker": "Ana", "content": f"kayak trip number {n} on the fjord"}], user="ana",
                             thread="t", group="message")[0].id for n in range(2))
        recaller = mem.recaller
        recaller._usage, recaller._usage_at = {("episode", i): 1 for i in ids}, DAY  # two delivered, counted
        conninfo, schema = split_schema(pg_url)
        left: list[int] = []
        with psycopg.connect(conninfo) as other:
            other.execute(f'SET search_path TO "{schema}"')
            other.execute("UPDATE episodes SET uses = uses WHERE id = %s", (ids[1],))
            flush = threading.Thread(target=lambda: left.append(recaller.flush_usage()))
            flush.start()
            time.sleep(0.3)  # the flush holds the first episode and waits for the second
            other.execute("UPDATE episodes SET uses = uses WHERE id = %s", (ids[0],))  # waits for the first
            other.commit()
            flush.join(30)
        assert left == [0]
        assert [mem.episode(i).uses for i in ids] == [1, 1]


def test_a_usage_flush_waits_for_a_writer_of_the_same_user(pg_url):
    # every writer of a user's rows takes the user's lock first; so does a usage write, so
    # it queues behind another replica's learning batch instead of deadlocking with it
    from reverie.models import Episode, Fact, Message

    writer, flusher = PostgresStore(pg_url), PostgresStore(pg_url)
    episode = Episode(user="ana", status="completed", messages=[Message(content="kayak on the fjord")])
    writer.put_episode(episode)
    holding, release = threading.Event(), threading.Event()

    def learning_batch() -> None:
        with writer.transaction():
            writer.put_fact(Fact(user="ana", content="likes kayaks"))  # holds ana's lock from here
            holding.set()
            release.wait(10)

    batch = threading.Thread(target=learning_batch)
    batch.start()
    assert holding.wait(10)

    def flush() -> None:
        with flusher.transaction():
            flusher.touch("episode", [episode.id], DAY)

    touching = threading.Thread(target=flush)
    touching.start()
    touching.join(0.5)
    assert touching.is_alive()  # waiting for ana's lock, not writing beside the batch
    release.set()
    batch.join(10)
    touching.join(10)
    assert not touching.is_alive()
    assert flusher.get_episode(episode.id).uses == 1
    writer.close()
    flusher.close()


def test_a_learning_batch_that_deadlocks_with_another_writer_is_learned_on_the_next_claim(home, pg_url):
    # another process's writer holds ana's profile and then asks for the episode the batch
    # has already written: PostgreSQL rolls the batch back, which gives the episode back to
    # the queue, and the same flush claims it again and learns it once the writer is done
    import psycopg

    from reverie.store.postgres import split_schema

    with Memory(home, background=False, store=pg_url) as mem:
        mem.store.put_profile_section("ana", "user.workContext", "Works as a pilot", DAY)
        made = mem.add([{"role": "user", "content": "I work as a nurse at the city hospital now"}], user="ana",
                       thread="t", group="message")[0].id
        conninfo, schema = split_schema(pg_url)
        learned: list[int] = []
        with psycopg.connect(conninfo) as other:
            other.execute(f'SET search_path TO "{schema}"')
            other.execute("UPDATE profile SET summary = summary WHERE user_id = 'ana'")
            flush = threading.Thread(target=lambda: learned.append(mem.flush(user="ana")))
            flush.start()
            time.sleep(0.5)  # the batch has written the episode and waits for the profile
            other.execute("UPDATE episodes SET uses = uses WHERE id = %s", (made,))  # waits for the episode
            other.commit()
            flush.join(30)
        assert learned == [1]  # claimed again and learned by the same flush, nothing raised
        assert mem.episode(made).learned
        assert mem.store.get_profile("ana").section("user.workContext").summary.startswith("Works as a nurse")
        assert mem.store.learning_backlog("ana")[0] == 0


# ---------------------------------------------------------------- the shared learning queue


def test_two_replicas_learn_every_episode_exactly_once(tmp_path, pg_url):
    replicas = [Memory(tmp_path / f"r{n}", store=pg_url, debounce_seconds=0.2) for n in range(2)]
    try:
        for n in range(30):
            with replicas[n % 2].turn(f"I planned trip number {n} to city{n} for spring", user=f"u{n % 3}",
                                      thread=f"t{n % 4}") as turn:
                turn.complete("Sounds good.")
        deadline = time.monotonic() + 30
        while replicas[0].learning_backlog() != (0, "") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert replicas[0].learning_backlog() == (0, "")
        learned_by = {}
        for user in ("u0", "u1", "u2"):
            for note in replicas[1].notes(user=user):
                for episode in note.episodes:
                    learned_by[episode] = learned_by.get(episode, 0) + 1
        assert len(learned_by) == 30 and set(learned_by.values()) == {1}
    finally:
        for mem in replicas:
            mem.close()


def test_a_failed_engine_leaves_the_claim_to_retry_later(tmp_path, pg_url, fake_openai):
    mem = Memory(tmp_path / "home", background=False, store=pg_url, engines={"extract": "openai"},
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0, "breaker_seconds": 0})
    try:
        fake_openai.respond_by_step({"extract": Reply.error(500)})
        say(mem, "I moved to Lisbon last spring", DAY)
        assert mem.flush() == 0
        waiting, error = mem.learning_backlog()
        assert waiting == 1 and error
        assert mem.store.claim_learning("other", lease_seconds=60, debounce_seconds=0, limit=10) == []  # retry waits
        fake_openai.respond_by_step({"extract": {"user": {}, "history": {}, "newFacts": [], "factsToReinforce": [],
                                                 "factsToRemove": [], "tags": []}})
        assert mem.flush() == 1  # a flush retries at once
    finally:
        mem.close()


# ---------------------------------------------------------------- one dream at a time, one night's run


def test_a_dream_runs_once_per_user_across_replicas(tmp_path, pg_url, fake_openai):
    def replica(name: str) -> Memory:
        return Memory(tmp_path / name, background=False, store=pg_url, engines={"distill": "openai"},
                      llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})

    first, second = replica("one"), replica("two")
    try:
        first.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": lambda body: Reply.delayed(0.8, keep_all(body))})
        done = threading.Event()
        run = first.dream(user="ana", background=True, on_done=lambda r: done.set())
        time.sleep(0.2)
        with pytest.raises(Conflict, match="already running for ana in another process"):
            second.dream(user="ana")
        assert done.wait(10) and first.dream_status(run.id, user="ana").status == "done"
        assert second.dream(user="ana", force=True).status == "done"  # free again once it ended
    finally:
        first.close()
        second.close()


def test_both_schedules_firing_at_once_run_the_night_once(tmp_path, pg_url):
    replicas = [Memory(tmp_path / f"r{n}", background=False, store=pg_url) for n in range(2)]
    try:
        replicas[0].remember("Prefers tea over coffee", user="ana", category="preference")
        replicas[0].remember("Likes jazz", user="bo", category="preference")
        due = datetime.now().astimezone().replace(microsecond=0)
        results: list[list] = []
        threads = [threading.Thread(target=lambda m=m: results.append(Scheduler(m).run_due(due))) for m in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(len(r) for r in results) == [0, 2]
        assert Scheduler(replicas[1]).run_due(due) == []  # that night is done
        for user in ("ana", "bo"):
            assert replicas[1].dream_status(user=user).status == "done"
    finally:
        for mem in replicas:
            mem.close()


def test_memory_md_is_read_and_edited_through_the_api_of_any_replica(tmp_path, pg_url):
    from reverie.server import create_app
    from tests.live_server import live_server

    first = Memory(tmp_path / "one", background=False, store=pg_url)
    second = Memory(tmp_path / "two", background=False, store=pg_url)
    try:
        first.remember("Prefers tea over coffee", user="ana", category="preference")
        assert first.dream(user="ana", days=30, now=DAY).status == "done"
        with live_server(create_app(second, auth=False, default_user="ana")) as url:
            import httpx

            with httpx.Client(base_url=url, timeout=30) as http:
                shown = http.get("/api/memory/memory-md").json()
                assert "Prefers tea over coffee" in shown["text"] and shown["sha"]
                edited = shown["text"].replace("Prefers tea over coffee", "Prefers mint tea over coffee")
                saved = http.put("/api/memory/memory-md", json={"text": edited, "base": shown["sha"]})
                assert saved.status_code == 200, saved.text
                assert [line["content"] for line in saved.json()["edited"]] == ["Prefers mint tea over coffee"]
                stale = http.put("/api/memory/memory-md", json={"text": edited, "base": shown["sha"]})
                assert stale.status_code == 409  # MEMORY.md changed since that edit began
                # the answer's sha is the next edit's base: no second read needed
                again = http.get("/api/memory/memory-md").json()["text"]
                assert saved.json()["sha"] == http.get("/api/memory/memory-md").json()["sha"]
                further = again.replace("Prefers mint tea over coffee", "Prefers sage tea over coffee")
                assert http.put("/api/memory/memory-md", json={"text": further, "base": saved.json()["sha"]}).status_code == 200
        assert "sage tea" in first.memory_md(user="ana")  # the other replica reads the edits
        assert [f.content for f in first.facts(user="ana")] == ["Prefers sage tea over coffee"]
    finally:
        first.close()
        second.close()


def as_schema(pg_url: str, version: int, *undo: str) -> None:
    """Make the store at ``pg_url`` look as schema ``version`` left it: ``undo`` what came later."""
    with closing(PostgresStore(pg_url)) as store:
        for statement in undo:
            store._do(statement)
        store._do("UPDATE schema_version SET version = %s", (version,))


def test_a_schema_3_store_gets_its_tag_sizes_counted_on_upgrade(pg_url):
    with closing(PostgresStore(pg_url)) as store:
        for n in range(3):
            store.set_item_tags("ana", "episode", f"ep_{n}", {"tea": 1.0, "kyoto": 0.5})
        store.set_item_tags("bob", "episode", "ep_b", {"tea": 1.0})
    # as schema 3 left it: no sizes, no triggers
    as_schema(pg_url, 3, "DROP TRIGGER item_tags_counted ON item_tags", "DROP TRIGGER item_tags_uncounted ON item_tags",
              "DROP TABLE tag_sizes")
    with closing(PostgresStore(pg_url)) as store:
        assert store.schema_version() == 13
        assert store.tag_counts("ana") == {"tea": 3, "kyoto": 3} and store.tag_counts("bob") == {"tea": 1}
        store.set_item_tags("ana", "episode", "ep_0", {"kyoto": 1.0})  # the triggers count again
        assert store.tag_counts("ana", ["tea", "kyoto"]) == {"tea": 2, "kyoto": 3}


def test_a_schema_4_store_reads_a_tags_newest_postings_from_the_index_alone_on_upgrade(pg_url):
    with closing(PostgresStore(pg_url)) as store:
        for n in range(5):
            store.set_item_tags("ana", "episode", f"ep_{n}", {"tea": 1.0})
        newest = store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 2})
    # as schema 4 left it: the (user_id, tag, seq) index without the columns recall reads
    as_schema(pg_url, 4, "DROP INDEX item_tags_newest", "CREATE INDEX item_tags_recent ON item_tags (user_id, tag, seq)")
    with closing(PostgresStore(pg_url)) as store:
        assert store.schema_version() == 13
        assert [p.id for p in newest] == ["ep_3", "ep_4"]
        assert store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 2}) == newest
        indexes = dict(store._q("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'item_tags' "
                                "AND schemaname = current_schema()"))
        assert "item_tags_recent" not in indexes
        assert "INCLUDE (kind, item_id, weight)" in indexes["item_tags_newest"]
        with store.transaction(), store._connection() as conn:  # the planner reads the postings from the index
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = " ".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT seq, kind, item_id, tag, weight FROM item_tags WHERE user_id = 'ana' AND tag = 'tea' "
                "AND kind = ANY(ARRAY['episode']) ORDER BY seq DESC LIMIT 2").fetchall())
        assert "item_tags_newest" in plan


# ---------------------------------------------------------------- the full-text term index


def terms_as_written(store: PostgresStore) -> tuple[set[tuple], set[tuple], set[tuple], set[tuple]]:
    """(terms rows, what every item's tsv says they should be, term_sizes rows above zero,
    what counting the terms says they should be)."""
    rows = set(store._q("SELECT user_id, kind, lexeme, pk, tf, doc_len FROM terms"))
    expected: set[tuple] = set()
    for code, table in ((1, "episodes"), (2, "facts"), (3, "notes"), (4, "knowledge")):
        expected |= set(store._q(
            f"SELECT m.user_id, {code}::smallint, u.lexeme, m.pk, array_length(u.positions, 1), m.doc_len "
            f"FROM {table} m, unnest(m.tsv) u"))
    sizes = set(store._q("SELECT user_id, kind, lexeme, n FROM term_sizes WHERE n > 0"))
    counted = set(store._q("SELECT user_id, kind, lexeme, count(*) FROM terms GROUP BY 1, 2, 3"))
    return rows, expected, sizes, counted


def test_the_term_index_follows_every_write_path(pg_url):
    from reverie.models import Fact

    with closing(PostgresStore(pg_url)) as store:
        fact = Fact(user="ana", content="Walks the dog in Kyoto every morning", status="consolidated")
        store.put_fact(fact)
        other = Fact(user="bob", content="Walks to the office", status="consolidated")
        store.put_fact(other)
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted and len(rows) > 5
        assert ("ana", 2, "kyoto", 1) in sizes
        fact.content = "Walks the dog in Osaka every evening"  # the text changes: its terms with it
        store.put_fact(fact)
        fact.uses = 3  # a write that keeps the text keeps the terms
        store.put_fact(fact)
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted
        assert ("ana", 2, "osaka", 1) in sizes and not any(s[2] == "kyoto" for s in sizes)
        fact.status = "archived"  # an archived fact is not searched: no terms
        store.put_fact(fact)
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted and not any(r[0] == "ana" for r in rows)
        assert store.search("bob", ["walk"], ["fact"], 5)[0].id == other.id
        store.load_items("fact", [Fact(user="cy", content=f"Plays chess on day {i}", status="consolidated")
                                  for i in range(3)])  # one COPY: one statement trigger
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted and ("cy", 2, "chess", 3) in sizes
        store.delete_user("bob")
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted and not any(r[0] == "bob" for r in rows)
        assert store._q("SELECT count(*) FROM term_sizes WHERE user_id = 'bob'")[0][0] == 0


def test_a_schema_5_store_gets_its_term_index_on_upgrade(tmp_path, pg_url):
    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        for day in range(1, 6):
            say(mem, f"Day {day}: walked the dog by the Kamo river", DAY.replace(day=day))
        say(mem, "Booked a ryokan in Kyoto for the autumn", DAY.replace(day=7))
        before = mem.store.search("ana", ["walk", "kyoto"], ["episode"], 10)
        old = mem.remember("Lives in Kyoto", user="ana")
        mem.remember("Lives in Osaka", user="ana")  # Kyoto's fact archived: no text searched
    finally:
        mem.close()
    # as schema 5 left it: no term index, GIN indexes on every kind's tsv, archived facts' text searched
    as_schema(pg_url, 5, f"UPDATE facts SET tsv = $$'kyoto':1 'live':1$$::tsvector, doc_len = 2 WHERE id = '{old.id}'",
              "UPDATE fts_stats SET tokens = tokens + 2 WHERE kind = 'fact'", *(f"DROP TRIGGER {t}_terms_{e} ON {t}" for t in ("episodes", "facts", "notes", "knowledge")
                            for e in ("added", "removed", "changed")),
              "DROP TABLE terms, term_sizes", "DROP INDEX notes_user_pk",
              *(f"CREATE INDEX {t}_fts ON {t} USING gin (tsv)" for t in ("episodes", "notes", "knowledge")))
    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        store = mem.store
        assert store.schema_version() == 13
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted and len(rows) > 20
        assert store.search("ana", ["walk", "kyoto"], ["episode"], 10) == before
        assert store._q(f"SELECT doc_len, tsv = ''::tsvector FROM facts WHERE id = '{old.id}'") == [(0, True)]
        assert store._q("SELECT tokens FROM fts_stats WHERE user_id = 'ana' AND kind = 'fact'") == store._q(
            "SELECT sum(doc_len) FROM facts WHERE user_id = 'ana'")
        assert [h.id for h in store.search("ana", ["kyoto"], ["fact"], 5)] == []
        say(mem, "Walked along the Kamo river at dusk", DAY.replace(day=9))  # new writes are indexed again
        assert len(store.search("ana", ["walk"], ["episode"], 10)) == 6
        indexes = {r[0] for r in store._q("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        assert "episodes_fts" not in indexes and "facts_fts" not in indexes and "terms_newest" in indexes
    finally:
        mem.close()


def test_a_schema_6_store_reads_its_strongest_facts_from_an_index_on_upgrade(tmp_path, pg_url):
    from reverie.store.base import strength

    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        weak = mem.remember("Likes green tea", user="ana", category="preference")
        strong = mem.remember("Never schedules calls before ten", user="ana", category="constraint")
        mem.store.touch("fact", [strong.id], DAY, by=40)
        before = [f.id for f in mem.store.strongest_facts("ana", ["preference", "constraint"], None, 5)]
    finally:
        mem.close()
    assert before == [strong.id, weak.id]
    # as schema 6 left it: no confidence or strength columns
    as_schema(pg_url, 6, "DROP INDEX facts_strength", "ALTER TABLE facts DROP COLUMN strength",
              "ALTER TABLE facts DROP COLUMN confidence")
    with closing(PostgresStore(pg_url)) as store:
        assert store.schema_version() == 13
        assert [f.id for f in store.strongest_facts("ana", ["preference", "constraint"], None, 5)] == before
        rows = dict(store._q("SELECT id, strength FROM facts"))
        assert rows[strong.id] == strength(strong.confidence, 40) and rows[weak.id] == strength(weak.confidence, 0)
        with store.transaction(), store._connection() as conn:  # an index serves each category's strongest in order
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = " ".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT strength, pk FROM facts WHERE user_id = 'ana' AND status = 'consolidated' "
                "AND category = 'preference' ORDER BY strength DESC, pk LIMIT 5").fetchall())
        assert "facts_strength" in plan and "Sort" not in plan


def _postings_key(store: PostgresStore) -> str:
    return str(store._q("SELECT indexdef FROM pg_indexes WHERE tablename = 'item_tags' AND indexname = 'item_tags_pkey' "
                        "AND schemaname = current_schema()")[0][0])


def test_a_schema_8_store_keys_its_postings_by_item_on_upgrade(pg_url):
    with closing(PostgresStore(pg_url)) as store:
        for n in range(5):
            store.set_item_tags("ana", "episode", f"ep_{n}", {"tea": 1.0, "kyoto": 0.5})
        store.set_item_tags("bob", "episode", "ep_b", {"tea": 1.0})
        newest = store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 2})
        rows = store._q("SELECT user_id, tag, kind, item_id, weight, seq FROM item_tags ORDER BY seq")
    # as schema 8 left it: keyed by tag first, with an (user_id, kind, item_id) index
    as_schema(pg_url, 8, "ALTER TABLE item_tags DROP CONSTRAINT item_tags_pkey",
              "ALTER TABLE item_tags ADD CONSTRAINT item_tags_pkey PRIMARY KEY (user_id, tag, kind, item_id)",
              "CREATE INDEX item_tags_item ON item_tags (user_id, kind, item_id)")
    with closing(PostgresStore(pg_url)) as store:  # opening it upgrades it
        assert store.schema_version() == 13
        assert "(user_id, kind, item_id, tag)" in _postings_key(store)
        indexes = {r[0] for r in store._q("SELECT indexname FROM pg_indexes WHERE tablename = 'item_tags' "
                                          "AND schemaname = current_schema()")}
        assert indexes == {"item_tags_pkey", "item_tags_newest"}
        assert store._q("SELECT user_id, tag, kind, item_id, weight, seq FROM item_tags ORDER BY seq") == rows
        assert store.postings("ana", ["tea"], ["episode"], per_tag={"tea": 2}) == newest
        store.set_item_tags("ana", "episode", "ep_4", {"matcha": 1.0, "kyoto": 1.0})  # replaced by the key
        assert store.tag_counts("ana", ["tea", "kyoto", "matcha"]) == {"tea": 4, "kyoto": 5, "matcha": 1}
        assert store.retag("ana", "kyoto", "tea") == 1  # only ep_4 had no tea: one posting per item and tag
        assert store.tag_counts("ana", ["tea", "kyoto"]) == {"tea": 5}


def test_a_schema_7_store_looks_up_a_searchs_best_from_the_index_alone_on_upgrade(tmp_path, pg_url):
    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        for day in range(1, 4):
            say(mem, f"Day {day}: walked the dog by the Kamo river", DAY.replace(day=day))
        before = mem.store.search("ana", ["walk", "river"], ["episode"], 10)
    finally:
        mem.close()
    assert len(before) == 3
    # as schema 7 left them: (user_id, pk) alone
    as_schema(pg_url, 7, *(f"DROP INDEX {t}_user_pk" for t in ("episodes", "facts", "notes", "knowledge")),
              *(f"CREATE INDEX {t}_user_pk ON {t} (user_id, pk)" for t in ("episodes", "facts", "notes", "knowledge")))
    with closing(PostgresStore(pg_url)) as store:
        assert store.schema_version() == 13
        assert store.search("ana", ["walk", "river"], ["episode"], 10) == before
        indexes = dict(store._q("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"))
        assert "INCLUDE (id, status, archived)" in indexes["episodes_user_pk"]
        assert "INCLUDE (id, status)" in indexes["facts_user_pk"] and "INCLUDE (id)" in indexes["notes_user_pk"]
        store._do("VACUUM episodes")  # what autovacuum does: the pages all visible, the index read alone
        with store.transaction(), store._connection() as conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            plan = " ".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT m.pk, m.id FROM episodes m WHERE m.user_id = 'ana' AND m.pk = ANY(ARRAY[1, 2]::bigint[]) "
                "AND m.status = 'completed' AND NOT m.archived").fetchall())
        assert "Index Only Scan using episodes_user_pk" in plan


def test_a_schema_9_store_finds_the_same_knowledge_document_by_its_digest_on_upgrade(tmp_path, pg_url):
    from reverie.store.base import knowledge_digest

    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        docs = [mem.add_knowledge(f"Runbook {n}", f"- step {n}", user="ana") for n in range(3)]
    finally:
        mem.close()
    # as schema 9 left it: no digest, no index of it
    as_schema(pg_url, 9, "DROP INDEX knowledge_user_digest", "ALTER TABLE knowledge DROP COLUMN digest")
    mem = Memory(tmp_path / "home", background=False, store=pg_url)  # opening it upgrades it
    try:
        assert mem.store.schema_version() == 13
        stored = dict(mem.store._q("SELECT id, digest FROM knowledge WHERE user_id = 'ana'"))
        assert stored == {d.id: knowledge_digest(d) for d in docs}
        again = mem.add_knowledge("Runbook 1", "- step 1", user="ana")
        assert again.id == docs[1].id and len(mem.knowledge(user="ana")) == 3
        indexes = {r[0] for r in mem.store._q("SELECT indexname FROM pg_indexes WHERE tablename = 'knowledge' "
                                                "AND schemaname = current_schema()")}
        assert "knowledge_user_digest" in indexes
    finally:
        mem.close()


def test_a_schema_12_store_learns_the_days_its_episodes_speak_of_on_upgrade(tmp_path, pg_url):
    monday = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    with closing(Memory(tmp_path / "home", background=False, store=pg_url)) as mem:
        dentist = mem.add([{"speaker": "ana", "content": "Dentist on Friday at 3pm"}], user="ana", thread="t",
                          at=monday)[0].id
        mem.add([{"speaker": "bo", "content": "Gym tomorrow"}], user="bo", thread="t", at=monday)
    as_schema(pg_url, 12, "DROP TABLE mentions")  # as schema 12 left it: no index of the days spoken of
    with closing(Memory(tmp_path / "home", background=False, store=pg_url)) as mem:  # opening it upgrades it
        assert mem.store.schema_version() == 13
        friday = datetime(2026, 12, 4).date()
        assert [e.id for e in mem.store.mentioning("ana", friday, friday, 10)] == [dentist]
        assert len(mem.store.mentioning("bo", friday - timedelta(days=3), friday - timedelta(days=3), 10)) == 1
        assert "Dentist on Friday" in mem.recall("what do I have tomorrow?", user="ana",
                                                 at=monday + timedelta(days=3), track=False).context


def test_a_schema_10_store_indexes_its_chinese_again_on_upgrade(tmp_path, pg_url):
    from collections import Counter

    def old_tsv(index: str) -> tuple[str, int]:  # a tsvector as schema 10 wrote it, from its index text
        counts = Counter(index.split())
        return " ".join(f"'{t}':{','.join(map(str, range(1, n + 1)))}" for t, n in counts.items()), sum(counts.values())

    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    try:
        airport = mem.remember("下周要去北京首都机场接朋友", user="ana")
        english = mem.remember("Walks the dog every morning", user="ana")
        moved = mem.remember("住在上海浦东新区", user="ana")
        mem.forget(moved.id, user="ana")  # archived: no lexeme
        dentist = mem.add([{"speaker": "Ana", "content": "我3月5日去看牙医"}], user="ana", thread="t",
                          group="message")[0].id
        vet = mem.add([{"speaker": "Bo", "content": "我家附近新开了一家宠物医院"}], user="bo", thread="t",
                      group="message")[0].id
        mem.store.put_note(Note(user="ana", date="2024-05-01", content="周末带狗去宠物医院打疫苗"))
        guide = mem.add_knowledge("机场指南", "- 北京首都机场T3航站楼", user="ana")
        kept = mem.store._q(f"SELECT tsv::text, doc_len FROM facts WHERE id IN ('{english.id}', '{moved.id}') ORDER BY pk")
    finally:
        mem.close()
    # as schema 10 indexed them (reverie.text before the compounds' parts and dates as one word);
    # its triggers keep the term index and its counts, and the token totals are counted again
    undo = []
    for table, where, index in (("facts", f"id = '{airport.id}'", "下周 北京首都机场 接 朋友"),
                                ("episodes", f"id = '{dentist}'", "ana 月 日去 牙医"),
                                ("episodes", f"id = '{vet}'", "bo 我家 附近 新开 一家 宠物医院"),
                                ("notes", "user_id = 'ana'", "周末 带狗 宠物医院 打 疫苗"),
                                ("knowledge", f"id = '{guide.id}'", "机场 指南 北京首都机场 t3 航站楼")):
        tsv, length = old_tsv(index)
        undo.append(f"UPDATE {table} SET tsv = $${tsv}$$::tsvector, doc_len = {length} WHERE {where}")
    undo.append("UPDATE fts_stats s SET tokens = (SELECT coalesce(sum(doc_len), 0) FROM (SELECT user_id, 'episode' AS kind, "
                "doc_len FROM episodes UNION ALL SELECT user_id, 'fact', doc_len FROM facts UNION ALL SELECT user_id, "
                "'note', doc_len FROM notes UNION ALL SELECT user_id, 'knowledge', doc_len FROM knowledge) m "
                "WHERE m.user_id = s.user_id AND m.kind = s.kind)")
    as_schema(pg_url, 10, *undo)
    mem = Memory(tmp_path / "home", background=False, store=pg_url)  # opening it upgrades it
    try:
        store = mem.store
        assert store.schema_version() == 13
        assert mem.check_store().intact
        rows, expected, sizes, counted = terms_as_written(store)
        assert rows == expected and sizes == counted
        assert store._q("SELECT user_id, kind, tokens FROM fts_stats ORDER BY 1, 2") == store._q(
            "SELECT user_id, kind, sum(doc_len) FROM (SELECT user_id, 'episode' AS kind, doc_len FROM episodes "
            "UNION ALL SELECT user_id, 'fact', doc_len FROM facts UNION ALL SELECT user_id, 'note', doc_len FROM notes "
            "UNION ALL SELECT user_id, 'knowledge', doc_len FROM knowledge) m GROUP BY 1, 2 ORDER BY 1, 2")
        assert [h.id for h in store.search("ana", ["北京", "机场"], ["fact", "knowledge"], 10)] == [airport.id, guide.id]
        assert [h.id for h in store.search("ana", ["3月5日"], ["episode"], 10)] == [dentist]
        assert [h.id for h in store.search("bo", ["宠物"], ["episode"], 10)] == [vet]
        assert len(store.search("ana", ["宠物"], ["note"], 10)) == 1
        assert store._q(f"SELECT tsv::text, doc_len FROM facts WHERE id IN ('{english.id}', '{moved.id}') "
                        "ORDER BY pk") == kept  # English, and an archived fact: left as they were
        assert store._q(f"SELECT doc_len FROM episodes WHERE id = '{dentist}'") == [(4,)]  # ana 3月5日 牙医 3月
        assert "北京首都机场" in mem.recall("北京机场", user="ana", track=False).context
    finally:
        mem.close()


def test_health_says_when_the_server_runs_without_autovacuum(home, pg_url, tmp_path):
    import psycopg

    from reverie.store.postgres import split_schema

    with psycopg.connect(split_schema(pg_url)[0]) as conn:
        row = conn.execute("SHOW autovacuum").fetchone()
    off = row is not None and row[0] == "off"
    with Memory(home, background=False, store=pg_url) as mem:
        advice = mem.health(user="ana").advice
    assert any("autovacuum is off" in line for line in advice) is off
    with Memory(tmp_path / "embedded", background=False) as mem:  # SQLite has no server to speak of
        assert not any("autovacuum" in line for line in mem.health(user="ana").advice)


# ---------------------------------------------------------------- vacuum and statistics without autovacuum


def _without_autovacuum(store: PostgresStore) -> None:
    """Turn autovacuum off for the store's tables, whatever the server's own setting."""
    for (table,) in store._q("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"):
        store._do(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')


def _upsert_reads(store: PostgresStore, episode) -> int:  # type: ignore[no-untyped-def]
    """How many episode rows the server fetched to write ``episode`` (this transaction's own counters)."""
    with store.transaction(), store._connection() as conn:
        store.put_episode(episode)
        row = conn.execute("SELECT idx_tup_fetch + seq_tup_read FROM pg_stat_xact_user_tables "
                           "WHERE relid = 'episodes'::regclass").fetchone()
    return int(row[0])


@pytest.fixture
def unvacuumed():  # type: ignore[no-untyped-def]
    """A store in a schema of its own with autovacuum off for its tables, on one connection
    (the plans it caches are the ones measured); the test runs the upkeep's passes itself."""
    from tests.pg import drop_schema, new_schema

    name, url = new_schema()
    store = PostgresStore(url, min_size=1, max_size=1)
    store._upkeep.every = 3600
    try:
        _without_autovacuum(store)
        yield store
    finally:
        store.close()
        drop_schema(name)


def _learned(count: int):  # type: ignore[no-untyped-def]
    from reverie.models import Episode, Message

    return [Episode(user="ana", thread=f"t{n % 9}", status="completed", learned=True,
                    messages=[Message(content=f"done {n}")]) for n in range(count)]


def test_without_autovacuum_the_store_analyzes_its_tables_and_a_write_stays_one_probe(unvacuumed):
    from reverie.models import Episode, Message

    store = unvacuumed
    for n in range(20):  # psycopg prepares the upsert after five runs, the server plans it generic after five more
        store.put_episode(Episode(user="ana", thread="t", status="completed", messages=[Message(content=f"m{n}")]))
    store.load_items("episode", _learned(4000))
    # once the counters reach the server
    wait_until(lambda: ("episodes", "vacuum") in store._upkeep.run(), 30, "a pass that vacuums the episodes")
    row = store._one("SELECT last_vacuum IS NOT NULL, last_analyze IS NOT NULL, last_autovacuum IS NULL "
                     "FROM pg_stat_user_tables WHERE relid = 'episodes'::regclass")
    assert row == (True, True, True)
    assert store._one("SHOW vacuum_cost_delay") == ("0",)  # autovacuum's pace was for the pass alone
    assert ("episodes", "vacuum") not in store._upkeep.run()  # nothing more is due
    # the upsert finds the row it replaces by its key, not among the user's every episode
    new = Episode(user="ana", thread="t", status="completed", messages=[Message(content="new")])
    assert _upsert_reads(store, new) < 20
    new.messages.append(Message(content="more"))
    assert _upsert_reads(store, new) < 20


def test_without_autovacuum_a_learning_claim_reads_the_queue_not_every_learned_episode(unvacuumed):
    from reverie.models import Episode, Message

    store = unvacuumed
    for n in range(20):  # the claims' statements planned generic while the table is nearly empty
        episode = Episode(user="ana", thread="t", status="completed", messages=[Message(content=f"m{n}")])
        store.put_episode(episode)
        for user in ("ana", None):
            refs = store.claim_learning("r1", lease_seconds=60, debounce_seconds=0, limit=10, user=user)
            store.release_learning("r1", [r.id for r in refs])
        store.mark_learned([episode.id])
    store.load_items("episode", _learned(4000))
    wait_until(lambda: ("episodes", "vacuum") in store._upkeep.run(), 30, "a pass that vacuums the episodes")
    waiting = Episode(user="ana", thread="t1", status="completed", messages=[Message(content="new")])
    store.put_episode(waiting)
    for user in ("ana", None):  # one user's queue, and every user's
        with store.transaction(), store._connection() as conn:
            refs = store.claim_learning("r1", lease_seconds=60, debounce_seconds=0, limit=10, user=user)
            read = conn.execute("SELECT idx_tup_fetch + seq_tup_read FROM pg_stat_xact_user_tables "
                                "WHERE relid = 'episodes'::regclass").fetchone()[0]
        assert [r.id for r in refs] == [waiting.id]
        assert read < 100, (user, read)  # 21,885 and 33,951 with the plans made on the empty table
        store.release_learning("r1", [waiting.id])


def test_the_upkeep_thread_runs_after_writes_and_only_where_autovacuum_does_not():
    from reverie.models import Episode, Message
    from reverie.store.pg_upkeep import DUE
    from reverie.store.postgres import TABLES
    from tests.pg import drop_schema, new_schema

    name, url = new_schema()
    store = PostgresStore(url)
    store._upkeep.every = 0.2
    try:
        woken: list[int] = []
        wake = store._upkeep.soon
        store._upkeep.soon = lambda: (woken.append(1), wake())[1]  # type: ignore[method-assign]
        store.list_episodes("ana")
        store.get_profile("ana")
        assert woken == []  # reads change no counter: a recall never wakes it
        store.put_episode(Episode(user="ana", thread="t", messages=[Message(content="first")]))
        assert woken and store._upkeep._thread is not None and store._upkeep._thread.is_alive()  # writes wake it
        # the tables it looks after: all of them where the server runs without autovacuum, else none
        server_off = store._one("SELECT current_setting('autovacuum')") == ("off",)
        assert bool(store._q(DUE, (list(TABLES),))) is server_off
        _without_autovacuum(store)  # now every table, whatever the server says
        assert [r[0] for r in store._q(DUE, (list(TABLES),))] == sorted(TABLES)
        # the store's tables are all that it looks after: another application's beside them are not its own
        assert tuple(r[0] for r in store._q("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                                            "ORDER BY 1")) == TABLES
        store._do("CREATE TABLE theirs (n int) WITH (autovacuum_enabled = false)")
        store._do("INSERT INTO theirs SELECT generate_series(1, 5000)")
        assert "theirs" not in {r[0] for r in store._q(DUE, (list(TABLES),))}

        def episodes_done() -> bool:
            store.put_episode(Episode(user="ana", thread="t", messages=[Message(content="a turn")]))
            return any(table == "episodes" for table, _ in store._upkeep.done)

        store.load_items("episode", [Episode(user="ana", thread="t", learned=True, messages=[Message(content=f"{n}")])
                                     for n in range(3000)])
        wait_until(episodes_done, 30, "the thread's pass over the episodes")
    finally:
        store.close()
        drop_schema(name)
    assert store._upkeep._thread is None  # closing stops it


def test_closing_the_store_cancels_a_vacuum_under_way():
    from contextlib import contextmanager

    from reverie.models import Episode, Message
    from reverie.store.pg_upkeep import DUE
    from reverie.store.postgres import TABLES
    from tests.pg import drop_schema, new_schema

    name, url = new_schema()
    store = PostgresStore(url)
    try:
        _without_autovacuum(store)
        store.load_items("episode", [Episode(user="ana", thread="t", learned=True, messages=[Message(content=f"{n}")])
                                     for n in range(20000)])
        wait_until(lambda: any(r[0] == "episodes" and r[1] for r in store._q(DUE, (list(TABLES),))), 30,
                   "the episodes due for a vacuum")

        @contextmanager
        def slow():  # type: ignore[no-untyped-def]
            with store._pool.connection() as conn:  # a pause after every page: seconds for this table
                conn.execute("SET vacuum_cost_limit = 1")
                yield conn
                conn.execute("RESET vacuum_cost_limit")

        store._upkeep._connect = slow
        store._upkeep.every = 0
        store._upkeep.soon()

        def vacuuming() -> int:
            return int(store._one("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'VACUUM%%' "
                                  "AND state = 'active' AND datname = current_database()")[0])

        wait_until(lambda: vacuuming() > 0, 20, "a vacuum under way")
        started = time.monotonic()
        store.close()
        assert time.monotonic() - started < 10
        assert store._upkeep._thread is None
        with closing(PostgresStore(url)) as again:
            wait_until(lambda: again._one("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'VACUUM%%' "
                                             "AND state = 'active'")[0] == 0, 5, "the cancelled vacuum gone")
    finally:
        store.close()
        drop_schema(name)


def test_a_failing_upkeep_pass_warns_once_and_the_store_goes_on(caplog):
    import logging
    from contextlib import contextmanager

    from reverie.models import Episode, Message
    from tests.pg import drop_schema, new_schema

    name, url = new_schema()
    store = PostgresStore(url)
    try:
        @contextmanager
        def refused():  # type: ignore[no-untyped-def]
            with store._pool.connection() as conn:  # a server that cannot run the pass (one older than 13)
                conn.execute("SET statement_timeout = 1")
                try:
                    yield conn
                finally:
                    conn.execute("RESET statement_timeout")

        store._upkeep._connect = refused
        store._upkeep.every = 0.05
        with caplog.at_level(logging.DEBUG, logger="reverie.store"):
            for n in range(40):
                store.put_episode(Episode(user="ana", thread="t", messages=[Message(content=f"turn {n}")]))
                time.sleep(0.02)
            wait_until(lambda: len([r for r in caplog.records if "vacuum or analyze" in r.getMessage()]) >= 2, 10,
                       "two failed passes")
        failed = [r for r in caplog.records if "vacuum or analyze" in r.getMessage()]
        assert [r.levelno for r in failed][:2] == [logging.WARNING, logging.DEBUG]
        assert len(store.list_episodes("ana", limit=100)) == 40  # every write landed
    finally:
        store.close()
        drop_schema(name)


def test_the_dream_command_names_where_the_documents_are(tmp_path, pg_url):
    home = tmp_path / "home"
    assert cli("remember", "Prefers tea over coffee", "--user", "ana", "--home", str(home), "--store", pg_url).exit_code == 0
    shown = cli("dream", "--user", "ana", "--force", "--home", str(home), "--store", pg_url)
    assert shown.exit_code == 0, shown.output
    assert "MEMORY.md: MEMORY.md of ana, in the store" in shown.output and str(home) not in shown.output
    mirrored = tmp_path / "mirrored"
    mirrored.mkdir()
    (mirrored / "config.toml").write_text(f'store = "{pg_url}"\nmirror_dir = "{tmp_path / "mirror"}"\n', encoding="utf-8")
    shown = cli("dream", "--user", "ana", "--force", "--home", str(mirrored))
    assert shown.exit_code == 0, shown.output
    paths = [line.split(": ", 1)[1] for line in shown.output.splitlines()
             if line.startswith(("MEMORY.md: ", "diary: "))]
    assert len(paths) == 2 and all(p.startswith(str(tmp_path / "mirror")) for p in paths), shown.output
    assert all(Path(p).is_file() for p in paths)


def test_a_closed_store_refuses_to_be_used(tmp_path, pg_url):
    from reverie import StoreError

    mem = Memory(tmp_path / "home", background=False, store=pg_url)
    mem.remember("Keeps bees", user="ana")
    mem.close()
    with pytest.raises(StoreError, match="is closed"):
        mem.recall("bees", user="ana")
    with pytest.raises(StoreError, match="is closed"):
        mem.remember("Likes tea", user="ana")


def test_a_hint_carries_the_store_given_as_a_flag_and_stats_names_the_store(tmp_path, pg_url, monkeypatch):
    from typer.testing import CliRunner

    from reverie.cli import app

    monkeypatch.delenv("REVERIE_STORE", raising=False)
    home = tmp_path / "no-such-home"
    runner = CliRunner()
    for line in ("Likes kayaks", "Owns a red canoe", "Rows on Sundays"):
        runner.invoke(app, ["remember", line, "--user", "ana", "--store", pg_url, "--home", str(home)])
    listed = runner.invoke(app, ["facts", "--user", "ana", "--limit", "2", "--store", pg_url, "--home", str(home)])
    hint = next(line for line in listed.output.splitlines() if line.startswith("more: "))
    assert f"--store {pg_url}" in hint.replace("'", "")
    more = runner.invoke(app, hint.removeprefix("more: reverie ").replace("'", "").split())
    assert more.exit_code == 0 and "ana" in more.output and "more:" not in more.output
    stats = runner.invoke(app, ["stats", "--store", pg_url, "--home", str(home)])
    assert f"reverie at {pg_url.split('?')[0]}" in stats.output.replace("\n", "")
