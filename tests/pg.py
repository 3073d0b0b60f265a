"""The PostgreSQL side of the tests: one fresh schema per test run, emptied before each test.

The server is ``$REVERIE_TEST_POSTGRES`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
A server that does not answer fails the tests that need it, with a message that says so:
they are never skipped.

    def test_something(store_url):        # runs twice: "sqlite" and "postgresql"
        store = open_store(store_url)
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgresql")


def server_url() -> str:
    return os.environ.get("REVERIE_TEST_POSTGRES") or DEFAULT_URL


def _connect(url: str):  # type: ignore[no-untyped-def]
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL does not answer at {url} (REVERIE_TEST_POSTGRES): {exc}. The PostgreSQL store's "
            "tests need a running server; start it (pg_ctlcluster 15 main start) or point "
            "REVERIE_TEST_POSTGRES at one.",
            pytrace=False,
        )


def new_schema(prefix: str = "reverie_test") -> tuple[str, str]:
    """A fresh, empty schema on the test server: (its name, the store URL that uses it)."""
    from reverie.store.postgres import with_schema

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with _connect(server_url()) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return name, with_schema(server_url(), name)


def drop_schema(name: str) -> None:
    with _connect(server_url()) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@contextmanager
def scratch_schema(prefix: str = "reverie_test") -> Iterator[tuple[str, str]]:
    """A fresh schema for one test, (its name, its store URL), dropped when the test ends,
    whether it passed or not."""
    name, url = new_schema(prefix)
    try:
        yield name, url
    finally:
        drop_schema(name)


def empty(url: str) -> None:
    """Delete every row of the schema's tables (the schema version stays)."""
    from reverie.store.postgres import split_schema

    base, schema = split_schema(url)
    with _connect(base) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_version'", (schema,)
        )]
        with conn.transaction():
            for table in tables:
                conn.execute(f'DELETE FROM "{schema}"."{table}"')


@pytest.fixture(scope="session")
def pg_session_url() -> Iterator[str]:
    """One schema for the whole run, migrated once, dropped at the end."""
    from reverie.store import PostgresStore

    name, url = new_schema()
    try:
        PostgresStore(url).close()
        yield url
    finally:
        drop_schema(name)


@pytest.fixture
def pg_url(pg_session_url: str) -> str:
    """The run's schema, emptied for this test."""
    empty(pg_session_url)
    return pg_session_url


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives, once for each backend: a SQLite file, or the emptied test schema."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "reverie.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str | None:
    """The ``store`` setting for a Memory, once for each backend (None: SQLite in the home)."""
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("pg_url"))
