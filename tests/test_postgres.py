"""Choosing PostgreSQL (``--store`` on every command, ``REVERIE_STORE``, ``store`` in config.toml),
the LoCoMo bench on it, and what a shared store changes above the store: documents in the
store, the claimed learning queue, one dream per user across processes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory
from reverie.bench import load_locomo, run_locomo
from reverie.cli import app
from reverie.store import PostgresStore, SQLiteStore
from tests.test_bench import locomo_data

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
    for command in (["facts"], ["keys", "list"], ["bench", "locomo"], ["dream"], ["serve"]):
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
    (home / "config.toml").write_text('store = "mysql://x"\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="postgresql://"):
        Memory(home, background=False)


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
