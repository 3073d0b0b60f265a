"""What an operator of several ``reverie serve`` replicas over one PostgreSQL database meets
when following docs/postgres.md: the store URL as an environment variable fills it in, the
home moved with ``reverie migrate``, a newer reverie upgrading the schema under replicas still
running the older one. Every test works in schemas of its own on the test server and drops
them, whatever happens."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from typer.testing import CliRunner

from reverie import Memory, StoreError
from reverie.cli import app
from reverie.server import create_app
from reverie.store import PostgresStore
from reverie.store.postgres import migration_target_problem, split_schema
from tests.live_server import live_server
from tests.pg import _connect, scratch_schema, server_url

runner = CliRunner()


def tables_in(schema: str) -> list[str]:
    with _connect(server_url()) as conn:
        return [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]


def test_an_empty_schema_name_is_refused_and_no_other_schema_is_opened_in_its_place():
    # `REVERIE_STORE=postgresql://...?schema=$TENANT` with TENANT unset: the store must not open
    # (and migrate, and write to) the connection's default schema instead. The connection's own
    # search path here is a scratch schema, so that a store opened without the name lands there,
    # not in the shared database's public schema.
    with scratch_schema("reverie_operator") as (name, _):
        base = split_schema(server_url())[0]
        url = base + ("&" if "?" in base else "?") + "options=" + quote(f"-c search_path={name}") + "&schema="
        with pytest.raises(StoreError, match=r"\?schema= names no schema"):
            PostgresStore(url).close()
        assert tables_in(name) == []
        # the dry run of a migration into it says so too, instead of counting a copy into public
        assert "?schema= names no schema" in migration_target_problem(url)
        result = runner.invoke(app, ["stats", "--store", url])
        assert result.exit_code == 2 and "?schema= names no schema" in result.output
        assert tables_in(name) == []


def test_migrate_copies_the_home_when_its_config_already_names_the_target(tmp_path: Path):
    # docs/postgres.md first names the database in <home>/config.toml, then moves the home
    # with `reverie migrate --home ~/.reverie --to <that URL>`: the copy reads the home's
    # SQLite store (it said "this memory is already in PostgreSQL" and copied nothing)
    home = tmp_path / "home"
    with Memory(home=home) as mem:
        fact = mem.remember("Keeps the release notes in the wiki", user="ana", category="preference")
    with scratch_schema("reverie_operator") as (name, url):
        (home / "config.toml").write_text(f'store = "{url}"\n', encoding="utf-8")
        dry = runner.invoke(app, ["migrate", "--home", str(home), "--to", url, "--dry-run", "--json"])
        assert dry.exit_code == 0, dry.output
        assert tables_in(name) == []  # a dry run writes nothing
        done = runner.invoke(app, ["migrate", "--home", str(home), "--to", url, "--json"])
        assert done.exit_code == 0, done.output
        # the configured store is the migrated one now: the home's commands read it there
        listed = runner.invoke(app, ["facts", "--home", str(home), "--user", "ana", "--json"])
        assert listed.exit_code == 0 and fact.id in listed.output
        store = PostgresStore(url)
        try:
            assert store.get_fact(fact.id) is not None
        finally:
            store.close()


def _set_version(schema: str, change: int) -> None:
    with _connect(server_url()) as conn:
        conn.execute(f'UPDATE "{schema}".schema_version SET version = version + %s', (change,))


def test_a_replica_whose_schema_a_newer_reverie_upgraded_goes_unready_and_learns_nothing(tmp_path: Path):
    # docs/postgres.md's upgrade with no downtime: a newer reverie migrates the schema while
    # replicas of this one still run. They answered /readyz 200 and went on learning with the
    # older code, writing rows without what the newer schema derives from them (schema 13's
    # day index was missing for every episode an older replica learned); now the balancer is
    # told to route around them, and their learning loop stops until they are upgraded.
    with scratch_schema("reverie_operator") as (name, url):
        other = PostgresStore(url)  # a second replica's store, opened before the upgrade
        try:
            with Memory(tmp_path / "home", background=False, store=url) as memory, \
                    live_server(create_app(memory, auth=False, mcp=False)) as served:
                with httpx.Client(base_url=served, timeout=30) as http:
                    assert http.get("/readyz").status_code == 200
                    turn = http.post("/api/turns", params={"user": "ana"},
                                     json={"message": "On Friday I see the dentist at 3pm"}).json()["turn_id"]
                    http.post(f"/api/turns/{turn}/complete", params={"user": "ana"}, json={"reply": "Noted."})
                    _set_version(name, +1)  # what a newer reverie's start does
                    down = http.get("/readyz")
                    assert down.status_code == 503 and "newer than this reverie" in down.json()["detail"], down.text
                    assert http.get("/healthz").status_code == 200
                    # the learning loop's poll claims nothing (each replica reads the version
                    # itself: this one was never asked for /readyz), a flush says why
                    assert other.claim_learning("other", lease_seconds=30, debounce_seconds=0.01, limit=10) == []
                    with pytest.raises(StoreError, match="newer than this reverie"):
                        other.claim_learning("other", lease_seconds=30, debounce_seconds=0.0, limit=10)
                    flushed = http.post("/api/memory/flush", params={"user": "ana"})
                    assert flushed.status_code == 503 and "newer than this reverie" in flushed.json()["detail"], \
                        flushed.text
                    assert memory.store.get_episode(turn).learned is False  # type: ignore[union-attr]
                    # the schema restored from the backup taken before the upgrade: it serves again
                    _set_version(name, -1)
                    assert http.get("/readyz").status_code == 200
                    assert http.post("/api/memory/flush", params={"user": "ana"}).json()["learned"] == 1
        finally:
            other.close()


def test_replicas_reaching_one_store_by_different_urls_share_its_locks():
    # one replica names the schema with ?schema=S, another reaches the same tables through
    # the connection's search path (options=-c search_path=S): they are one store, so one
    # dream per user at a time, one nightly run and one migration between them (their lock
    # names differed, "reverie:S:..." and "reverie::...", and both dreamed at once)
    with scratch_schema("reverie_operator") as (name, url):
        base = split_schema(server_url())[0]
        by_path = base + ("&" if "?" in base else "?") + "options=" + quote(f"-c search_path={name}")
        first = PostgresStore(url)
        second = PostgresStore(by_path)
        try:
            assert second.schema is None and second.schema_version() == first.schema_version()
            held = first.try_lock("dream:ana")
            assert held is not None
            try:
                assert second.try_lock("dream:ana") is None  # taken: by the same store's other replica
            finally:
                held()
            again = second.try_lock("dream:ana")
            assert again is not None
            again()
        finally:
            first.close()
            second.close()
