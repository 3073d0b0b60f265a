"""``reverie migrate --to postgresql://...``: a SQLite home with everything in it, copied and checked."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app
from reverie.keys import create_key, verify_key
from reverie.store import PostgresStore
from tests.test_delete_user import fill

runner = CliRunner()


def _undated(context: str) -> list[str]:
    return [line for line in context.splitlines() if not line.startswith("- [20")]


def migrate(home, *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["migrate", "--home", str(home), "--json", *args], catch_exceptions=False)


def test_a_home_is_copied_whole_and_checked(home, pg_url):
    with Memory(home, background=False) as mem:
        fill(mem, "ana", "zanzibar")
        fill(mem, "bob", "lofoten")
        mem.trim([{"role": "user", "content": "We should book the ferry to Stone Town early"},
                  {"role": "assistant", "content": "I will remind you."}], user="ana")
        mem.consolidate(user="ana")
        secret = create_key(mem.store, user="cid", name="a user with nothing but a key").secret
        before = {u: mem.recall("trip to zanzibar in March", user=u, track=False).context for u in ("ana", "bob")}
        memory_md = mem.memory_md(user="ana")
        diaries = mem.diaries(user="ana")
        changes = [c.id for c in mem.changes(user="ana")]
    assert memory_md and diaries and changes

    dry = migrate(home, "--to", pg_url, "--dry-run")
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)
    assert planned["dry_run"] and set(planned["users"]) == {"ana", "bob", "cid"}
    assert planned["users"]["ana"]["episodes"] >= 2 and planned["users"]["ana"]["documents"] >= 2
    assert planned["totals"]["api_keys"] == 3 and planned["users"]["cid"]["episodes"] == 0
    assert PostgresStore(pg_url).users() == []  # a dry run copies nothing

    done = migrate(home, "--to", pg_url)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["verified"] and report["problems"] == [] and report["users"] == planned["users"]

    with Memory(home / "elsewhere", background=False, store=pg_url) as copy:
        assert copy.users() == ["ana", "bob"]
        after = {u: copy.recall("trip to zanzibar in March", user=u, track=False).context for u in ("ana", "bob")}
        for user in ("ana", "bob"):
            # the same lines; an exchange may come as its episode or as its daily note (BM25 counts
            # a user's own rows in PostgreSQL, the whole file's in SQLite), but never goes missing
            assert _undated(after[user]) == _undated(before[user])
            assert len(after[user].splitlines()) == len(before[user].splitlines())
        assert copy.memory_md(user="ana") == memory_md and copy.diaries(user="ana") == diaries
        assert [c.id for c in copy.changes(user="ana")] == changes
        assert verify_key(copy.store, secret).user == "cid"  # the key still works: hash and salt came along
        copy.undo(changes[0], user="ana")  # a journal written in SQLite is undone in PostgreSQL

    # the copy is loaded many rows at a time: BM25's per-user row and token counts are those
    # of the rows written, as one write at a time keeps them
    target = PostgresStore(pg_url)
    try:
        for table, kind in (("episodes", "episode"), ("facts", "fact"), ("notes", "note")):
            rows = {(u, n, t) for u, n, t in target._q(
                f"SELECT user_id, count(*), sum(doc_len) FROM {table} GROUP BY user_id")}
            stats = {(u, n, t) for u, n, t in target._q(
                "SELECT user_id, rows, tokens FROM fts_stats WHERE kind = %s AND rows > 0", (kind,))}
            assert rows and stats == rows, table
        # and each episode's days spoken of, as put_episode writes them ("a trip for March")
        with closing(sqlite3.connect(home / "reverie.db")) as source:
            said = set(source.execute("SELECT m.user, e.id, m.first, m.last FROM mentions m "
                                      "JOIN episodes e ON e.pk = m.episode_pk").fetchall())
        copied = {(u, i, f.isoformat(), t.isoformat())
                  for u, i, f, t in target._q("SELECT user_id, episode_id, first, last FROM mentions")}
        assert said and copied == said
    finally:
        target.close()

    again = migrate(home, "--to", pg_url)
    assert again.exit_code == 2 and "already holds a memory" in json.loads(again.output)["error"]


def test_migrate_needs_a_postgres_url_and_a_home(home, pg_url):
    with Memory(home, background=False) as mem:
        mem.remember("Likes tea", user="ana")
    assert "postgresql://" in json.loads(migrate(home, "--to", "mysql://x").output)["error"]
    assert json.loads(migrate(home / "none", "--to", pg_url).output)["type"] == "NotFound"


def test_migrate_reads_the_home_when_reverie_store_already_names_the_target(home, pg_url, monkeypatch):
    # docs/postgres.md: set REVERIE_STORE to the new database, then migrate the home into it
    with Memory(home, background=False) as mem:
        mem.remember("Keeps bees on the roof", user="ana")
    monkeypatch.setenv("REVERIE_STORE", pg_url)
    dry = migrate(home, "--to", pg_url, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["users"]["ana"]["facts"] == 1


def test_migrate_tells_each_step_as_it_begins(home, pg_url):
    with Memory(home, background=False) as mem:
        mem.remember("Keeps bees on the roof", user="ana")
        mem.remember("Sails on weekends", user="bob")
        steps: list[str] = []
        report = mem.migrate_to(pg_url, on_progress=steps.append)
    assert report.verified
    assert steps == ["copying ana (1 of 2)", "copying bob (2 of 2)",
                     "counting the rows of the copy", "checking ana's export (1 of 2)", "checking bob's export (2 of 2)"]


def test_exports_are_compared_a_part_at_a_time_naming_what_differs(tmp_path):
    from reverie.portability import differing_parts

    talk = [{"role": "user", "content": "I keep bees on the roof of our building."},
            {"role": "assistant", "content": "How many hives?"}]
    with Memory(tmp_path / "a", background=False) as a, Memory(tmp_path / "b", background=False) as b:
        a.remember("Likes tea", user="ana")
        a.add(talk, user="ana")
        a.flush()
        b.import_(a.export(user="ana"), user="ana")  # the same items, ids and times
        assert differing_parts(a.ctx, b.ctx, "ana") == []
        b.set_profile("user.topOfMind", "Moving to Porto", user="ana")
        b.remember("Sails on weekends", user="ana")
        assert differing_parts(a.ctx, b.ctx, "ana") == ["profile", "facts"]
        a.add([{"role": "user", "content": "We harvested honey today."}], user="ana")
        assert differing_parts(a.ctx, b.ctx, "ana") == ["profile", "facts", "episodes"]  # one side has one more


def test_a_dry_run_says_what_the_copy_would_refuse(home, pg_url):
    import psycopg

    from reverie.store.postgres import split_schema, with_schema

    with Memory(home, background=False) as mem:
        mem.remember("Keeps bees", user="ana")
    files = sorted(p.name for p in home.iterdir())
    ok = migrate(home, "--to", pg_url, "--dry-run")
    assert ok.exit_code == 0 and json.loads(ok.output)["problems"] == []
    assert sorted(p.name for p in home.iterdir()) == files  # no log or shared-memory file left beside the store
    assert migrate(home, "--to", pg_url).exit_code == 0
    filled = migrate(home, "--to", pg_url, "--dry-run")
    assert filled.exit_code == 1 and "already holds a memory" in json.loads(filled.output)["problems"][0]
    down = migrate(home, "--to", "postgresql://postgres@127.0.0.1:5499/test", "--dry-run")
    assert down.exit_code == 1 and "cannot connect to PostgreSQL" in json.loads(down.output)["problems"][0]
    base, schema = split_schema(pg_url)
    other = f"{schema}_other"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{other}"')
        conn.execute(f'CREATE TABLE "{other}".notes (id int)')  # another application's table
    try:
        foreign = migrate(home, "--to", with_schema(pg_url, other), "--dry-run")
        assert foreign.exit_code == 1 and "another application" in json.loads(foreign.output)["problems"][0]
        said = runner.invoke(app, ["migrate", "--home", str(home), "--to", with_schema(pg_url, other), "--dry-run"])
        assert said.exit_code == 1 and "the copy would fail" in said.output
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{other}" CASCADE')


def test_a_dry_run_and_a_refused_migration_leave_an_older_home_as_it_was(home, pg_url):
    """A dry run reads the home without opening it (an older reverie can still open it, as a
    rollback needs), and a migration the target refuses stops before the home is upgraded."""
    import hashlib

    with Memory(home, background=False) as mem:
        mem.remember("Keeps bees", user="ana")
        mem.remember("Grows figs", user="bob")
    db = home / "reverie.db"
    with sqlite3.connect(db) as conn:  # as the reverie before migration 12 left it
        conn.execute("UPDATE schema_version SET version = 11")
    conn.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    dry = migrate(home, "--to", pg_url, "--dry-run")
    assert dry.exit_code == 0, dry.output
    said = json.loads(dry.output)
    assert said["dry_run"] and said["totals"]["facts"] == 2 and sorted(said["users"]) == ["ana", "bob"]
    refused = migrate(home, "--to", "postgresql://postgres@127.0.0.1:5499/test")
    assert refused.exit_code != 0 and "cannot connect" in refused.output
    not_postgres = migrate(home, "--to", "mysql://x@y/z")
    assert not_postgres.exit_code != 0 and "postgresql://" in not_postgres.output

    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 11
    conn.close()
