"""PostgreSQL URLs: passwords never shown (in the user part or a ``password`` parameter),
every URL form libpq reads kept as written, and a URL that cannot connect failing at once
with libpq's own reason. The stores of other schemas and other applications' tables in the
same database are never touched."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Iterator

import pytest
from typer.testing import CliRunner

from reverie import Memory, StoreError
from reverie.cli import app
from reverie.store.base import DreamRun
from reverie.store import PostgresStore
from reverie.store.postgres import redact_url, split_schema, with_schema
from tests.pg import _connect, drop_schema, new_schema, server_url

runner = CliRunner()


# ---------------------------------------------------------------- redact_url, split_schema


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://postgres:pw@127.0.0.1:5432/test", "postgresql://postgres:***@127.0.0.1:5432/test"),
    # several hosts, a port that is no number, IPv6 in brackets: the shape stays, nothing raises
    ("postgresql://postgres:pw@127.0.0.1:5432,127.0.0.1:5433/test?schema=x",
     "postgresql://postgres:***@127.0.0.1:5432,127.0.0.1:5433/test?schema=x"),
    ("postgresql://postgres:pw@127.0.0.1:notaport/test", "postgresql://postgres:***@127.0.0.1:notaport/test"),
    ("postgresql://postgres:pw@[::1]:5433/test", "postgresql://postgres:***@[::1]:5433/test"),
    # a password as a parameter (libpq takes it), under any spelling of its name
    ("postgresql://postgres@db/test?password=S3cret", "postgresql://postgres@db/test?password=***"),
    ("postgresql://postgres@db/test?sslmode=require&password=S3cret&schema=x",
     "postgresql://postgres@db/test?sslmode=require&password=***&schema=x"),
    ("postgresql://postgres@db/test?%70assword=S3cret", "postgresql://postgres@db/test?%70assword=***"),
    ("postgresql://postgres@db/test?sslpassword=S3cret", "postgresql://postgres@db/test?sslpassword=***"),
    ("postgresql:///test?host=127.0.0.1&user=postgres&password=S3cret",
     "postgresql:///test?host=127.0.0.1&user=postgres&password=***"),
    # a password with '?' and ':' in it (libpq ends the user part at the first '@' before a '/')
    ("postgresql://postgres:a?b:c@db/test?schema=x", "postgresql://postgres:***@db/test?schema=x"),
    ("postgresql://postgres@db/test", "postgresql://postgres@db/test"),
    ("postgresql://db", "postgresql://db"),
    ("postgresql://", "postgresql://"),
])
def test_redact_url_hides_every_password_and_keeps_the_shape(url, shown):
    assert redact_url(url) == shown
    assert "S3cret" not in redact_url(url)


def test_split_schema_keeps_the_rest_of_the_url_as_written():
    assert split_schema("postgresql:///test?host=127.0.0.1&user=postgres&schema=x") == (
        "postgresql:///test?host=127.0.0.1&user=postgres", "x")
    assert split_schema("postgresql:///test?schema=x") == ("postgresql:///test", "x")
    assert split_schema("postgresql://u:pw@h1:1,h2:2/db?options=-c%20jit%3Doff&schema=s&sslmode=prefer") == (
        "postgresql://u:pw@h1:1,h2:2/db?options=-c%20jit%3Doff&sslmode=prefer", "s")
    assert split_schema("postgresql://u:a?b@h/db") == ("postgresql://u:a?b@h/db", None)
    with pytest.raises(StoreError, match="names no schema"):  # `?schema=$UNSET`: not the default schema
        split_schema("postgresql://h/db?schema=")
    assert with_schema("postgresql://h/db?schema=", "s") == "postgresql://h/db?schema=s"
    assert with_schema("postgresql:///test?host=127.0.0.1", "s") == "postgresql:///test?host=127.0.0.1&schema=s"
    assert with_schema("postgresql://h/db?schema=old", "new") == "postgresql://h/db?schema=new"


def _parts() -> dict[str, str]:
    from psycopg.conninfo import conninfo_to_dict

    return {k: str(v) for k, v in conninfo_to_dict(split_schema(server_url())[0]).items()}


def test_a_url_without_a_host_part_opens_the_store():
    parts = _parts()
    name, _ = new_schema()
    try:
        params = "&".join(f"{k}={v}" for k, v in parts.items() if k in ("host", "port", "user"))
        url = f"postgresql:///{parts['dbname']}?{params}&schema={name}"
        store = PostgresStore(url)
        try:
            store.put_document("ana", "MEMORY.md", "# hi")
            assert store.get_document("ana", "MEMORY.md") == "# hi"
        finally:
            store.close()
        with _connect(server_url()) as conn:
            assert conn.execute(f'SELECT count(*) FROM "{name}".documents').fetchone()[0] == 1
    finally:
        drop_schema(name)


# ---------------------------------------------------------------- a URL that cannot connect


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bad_urls() -> list[tuple[str, str]]:
    p = _parts()
    host, port, user, db = p.get("host", "127.0.0.1"), p.get("port", "5432"), p.get("user", "postgres"), p["dbname"]
    missing = f"reverie_missing_{uuid.uuid4().hex[:8]}"
    return [
        (f"postgresql://{user}:S3cretpw@127.0.0.1:{_closed_port()}/{db}", "refused"),
        (f"postgresql://{user}@{host}:{port}/{missing}", f'database "{missing}" does not exist'),
        (f"postgresql://{missing}:S3cretpw@{host}:{port}/{db}", f'role "{missing}" does not exist'),
        (f"postgresql://{user}@{host}:{port}/{missing}?password=S3cretpw", "does not exist"),
        (f"postgresql://{user}@{host}:notaport/{db}", "notaport"),
    ]


def test_a_url_that_cannot_connect_fails_at_once_with_the_reason(caplog):
    caplog.set_level(logging.INFO)
    for url, reason in _bad_urls():
        began = time.monotonic()
        with pytest.raises(StoreError) as failed:
            PostgresStore(url, timeout=10.0)
        message = str(failed.value)
        assert time.monotonic() - began < 5, url
        assert message.startswith(f"cannot connect to PostgreSQL at {redact_url(url)}: "), message
        assert reason in message and "\n" not in message and "pool" not in message, message
        assert "S3cretpw" not in message
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]  # no pool retries logged


def test_a_schema_that_is_no_plain_name_fails_before_connecting():
    began = time.monotonic()
    # a closed port: a connection attempt would fail otherwise
    with pytest.raises(StoreError, match="schema 'bad-name' is not a plain name"):
        PostgresStore(f"postgresql://postgres@127.0.0.1:{_closed_port()}/test?schema=bad-name")
    for twice in ("?schema=a&schema=b", "?schema=a&sslmode=disable&schema=a"):
        with pytest.raises(StoreError, match="names one schema, once"):  # not the last one named
            PostgresStore(f"postgresql://postgres@127.0.0.1:{_closed_port()}/test{twice}")
    assert time.monotonic() - began < 1


def test_a_password_parameter_is_never_shown(home, pg_url):
    secret_url = f"{pg_url}&password=S3cretpw"  # trust auth takes any password
    with Memory(home, background=False) as mem:
        mem.remember("Likes tea", user="ana")
    dry = runner.invoke(app, ["migrate", "--home", str(home), "--json", "--to", secret_url, "--dry-run"])
    assert dry.exit_code == 0 and "S3cretpw" not in dry.output
    assert json.loads(dry.output)["target"].endswith("&password=***")
    shown = runner.invoke(app, ["migrate", "--home", str(home), "--to", secret_url, "--dry-run"])
    assert shown.exit_code == 0 and "S3cretpw" not in shown.output and "password=***" in shown.output
    _, port = split_schema(pg_url)[0], _closed_port()
    failed = runner.invoke(app, ["facts", "--user", "ana", "--home", str(home), "--json", "--store",
                                 f"postgresql://postgres@127.0.0.1:{port}/test?password=S3cretpw"])
    assert failed.exit_code != 0 and "S3cretpw" not in failed.output and "password=***" in failed.output


# ---------------------------------------------------------------- other schemas, other applications


@pytest.fixture
def fresh_db() -> Iterator[str]:
    """A database of its own for this test (its public schema free to fill), dropped afterwards."""
    name = f"reverie_test_db_{uuid.uuid4().hex[:12]}"
    with _connect(server_url()) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = split_schema(server_url())[0]
    path_end = base.find("?")
    path_end = len(base) if path_end < 0 else path_end
    slash = base.rfind("/", 0, path_end)
    try:
        yield base[:slash + 1] + name + base[path_end:]
    finally:
        with _connect(server_url()) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _tables(url: str, schema: str) -> set[str]:
    with _connect(split_schema(url)[0]) as conn:
        return {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}


def test_a_store_in_another_schema_leaves_the_public_store_intact(fresh_db, home):
    with Memory(home, background=False, store=fresh_db) as first:
        first.remember("Likes sushi", user="ana")
    before = _tables(fresh_db, "public")
    assert {"terms", "term_sizes", "episodes"} <= before
    for schema in ("team2", "team3"):
        with Memory(home, background=False, store=with_schema(fresh_db, schema)) as other:
            other.remember("Likes ramen", user="bob")
            assert "ramen" in other.recall("ramen", user="bob", track=False).context
            assert other.users() == ["bob"]
        assert {"terms", "term_sizes"} <= _tables(fresh_db, schema)
    assert _tables(fresh_db, "public") == before
    with Memory(home, background=False, store=fresh_db) as first:
        assert first.users() == ["ana"]
        assert "sushi" in first.recall("sushi", user="ana", track=False).context
        first.remember("Likes miso soup", user="ana")  # the triggers still write public's terms
        assert "miso" in first.recall("miso soup", user="ana", track=False).context
    with _connect(split_schema(fresh_db)[0]) as conn:
        # the store changed nothing outside its schema: no extension was made for it either
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'btree_gin'").fetchone()[0] == 0
        counts = conn.execute("SELECT (SELECT count(*) FROM public.terms), (SELECT count(*) FROM team2.terms)").fetchone()
        assert counts[0] > 0 and counts[1] > 0


def test_another_applications_table_in_the_schema_is_a_clear_error(fresh_db, home):
    with _connect(split_schema(fresh_db)[0]) as conn:
        conn.execute("CREATE TABLE public.notes (id serial PRIMARY KEY, text text)")
        conn.execute("INSERT INTO public.notes (text) VALUES ('theirs')")
    with pytest.raises(StoreError, match=r"\?schema=NAME") as failed:
        PostgresStore(fresh_db)
    assert "notes" in str(failed.value)
    with Memory(home, background=False) as mem:
        mem.remember("Likes tea", user="ana")
    done = runner.invoke(app, ["migrate", "--home", str(home), "--json", "--to", fresh_db])
    assert done.exit_code == 2 and "?schema=NAME" in json.loads(done.output)["error"]
    assert _tables(fresh_db, "public") == {"notes"}  # nothing of reverie's was left behind
    # in a schema of its own, it works beside the other application
    moved = runner.invoke(app, ["migrate", "--home", str(home), "--json", "--to", with_schema(fresh_db, "reverie")])
    assert moved.exit_code == 0, moved.output
    with _connect(split_schema(fresh_db)[0]) as conn:
        assert conn.execute("SELECT text FROM public.notes").fetchall() == [("theirs",)]


# ---------------------------------------------------------------- migrate never merges


@pytest.mark.parametrize("what", ["dream_run", "document", "meta", "user_meta", "input_key", "tag"])
def test_migrate_refuses_a_target_with_any_row(home, pg_url, what):
    from datetime import datetime, timezone

    with Memory(home, background=False) as mem:
        mem.remember("Likes tea", user="ana")
    target = PostgresStore(pg_url)
    try:
        if what == "dream_run":
            target.put_dream_run(DreamRun(id="run_1", user="zed", status="done", days=3,
                                          started_at=datetime(2024, 5, 1, tzinfo=timezone.utc)))
        elif what == "document":
            target.put_document("zed", "MEMORY.md", "# zed")
        elif what == "meta":
            target.set_meta("something.install.wide", "1")
        elif what == "user_meta":
            target.set_meta("memory_md:zed", "{}")
        elif what == "input_key":
            target.put_inputs("zed", "t", "ep_1", ["k"])
        else:
            target._do("INSERT INTO tags (user_id, name, status, body) VALUES ('zed', 'x', 'active', '{}')")
    finally:
        target.close()
    done = runner.invoke(app, ["migrate", "--home", str(home), "--json", "--to", pg_url])
    error = json.loads(done.output)["error"]
    assert done.exit_code == 2 and "already holds a memory" in error and "nothing was copied" in error, done.output
    target = PostgresStore(pg_url)
    try:
        assert target.users() == [] and target.list_api_keys() == []  # nothing was written
    finally:
        target.close()


def test_an_empty_target_has_no_filled_tables(pg_url):
    target = PostgresStore(pg_url)
    try:
        assert target.filled_tables() == []
        target.put_document("ana", "MEMORY.md", "x")
        assert target.filled_tables() == ["documents"]
    finally:
        target.close()


@pytest.mark.parametrize("args", [["check"], ["stats"], ["facts", "--user", "ana"], ["export", "--user", "ana"]])
def test_a_command_that_only_reads_a_schema_with_no_store_says_so_and_creates_nothing(tmp_path, args):
    """A typo in ?schema= made every reading command create an empty store there and read it
    (`reverie check` then said "intact")."""
    name = f"reverie_test_typo_{uuid.uuid4().hex[:12]}"
    url = with_schema(server_url(), name)
    result = CliRunner().invoke(app, [*args, "--home", str(tmp_path / "home"), "--store", url])
    assert result.exit_code == 2 and f"no reverie store at {redact_url(url)}" in result.output
    with _connect(server_url()) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()[0] == 0
    schema, existing = new_schema()
    try:
        with Memory(tmp_path / "made", background=False, store=existing) as mem:
            mem.remember("Likes figs", user="ana")
        ok = CliRunner().invoke(app, [*args, "--home", str(tmp_path / "home"), "--store", existing])
        assert ok.exit_code == 0, ok.output
    finally:
        drop_schema(schema)
