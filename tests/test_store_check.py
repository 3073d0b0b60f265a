"""`reverie check`: the whole store read for damage and for derived data that disagrees
with the items, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone

from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app
from tests.test_small_holes import _damage_the_facts_table

runner = CliRunner()
DAY = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)


def _live_a_little(mem: Memory) -> None:
    """Every write path that moves derived data: turns learned, facts remembered, replaced,
    forgotten and deleted, a document, a user deleted."""
    for user in ("ana", "bob", "cy"):
        for n in range(4):
            mem.add([{"role": "user", "content": f"Day {n}: I went kayaking on the fjord with Mei, {user}"},
                     {"role": "assistant", "content": "Sounds lovely."}], user=user, at=DAY.replace(day=n + 1))
    mem.flush()
    mem.remember("Lives in Berlin", user="ana")
    mem.remember("Lives in Lisbon", user="ana")  # archives Berlin
    gone = mem.remember("Prefers tea", user="ana")
    mem.forget(gone.id, user="ana", hard=True)
    mem.forget(mem.remember("Plays chess", user="bob").id, user="bob")
    mem.add_knowledge("Runbook", "- restart the fjord service", user="ana")
    mem.delete_user(user="cy", confirm="cy")


def test_a_store_that_lived_a_little_is_intact(bmem):
    """The triggers and writes keep every derived count and row right (the check would say)."""
    _live_a_little(bmem)
    report = bmem.check_store()
    assert report.problems == [] and report.intact and report.advice == ""
    assert report.store == bmem.store.where


def test_derived_data_that_disagrees_with_the_items_is_named_with_what_to_do(bmem):
    _live_a_little(bmem)
    if bmem.store.where.startswith("postgresql"):
        tamper = ["UPDATE tag_sizes SET n = n + 3 WHERE (user_id, tag) IN (SELECT user_id, tag FROM tag_sizes LIMIT 1)",
                  "DELETE FROM terms WHERE ctid IN (SELECT ctid FROM terms WHERE kind = 1 LIMIT 1)",
                  "UPDATE fts_stats SET tokens = tokens + 1 WHERE user_id = 'bob' AND kind = 'fact'"]
        for statement in tamper:
            bmem.store._do(statement)
        expected = ["tag count(s) differ", "the term index holds", "full-text totals of 1 user(s) differ from their facts"]
    else:
        conn = sqlite3.connect(bmem.store.where)
        conn.execute("UPDATE tag_sizes SET n = n + 3 WHERE (user, tag) IN (SELECT user, tag FROM tag_sizes LIMIT 1)")
        conn.execute("DELETE FROM episodes_fts WHERE rowid = (SELECT min(pk) FROM episodes)")
        conn.commit()
        conn.close()
        expected = ["tag count(s) differ", "1 episode(s) have no full-text row"]
    report = bmem.check_store()
    assert not report.intact
    for said in expected:
        assert any(said in p for p in report.problems), (said, report.problems)
    assert "reverie export --user USER -o USER.json" in report.advice
    assert "reverie import USER.json --user USER --home NEW" in report.advice


def test_reverie_check_finds_damaged_pages_the_commands_never_read(tmp_path):
    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        for n in range(40):
            memory.remember(f"Keeps note number {n} about the garden", user="ana")
        memory.add([{"role": "user", "content": "Planted tulips"}], user="ana")
    ok = runner.invoke(app, ["check", "--home", str(home)])
    assert ok.exit_code == 0 and ok.output.startswith("intact:"), ok.output
    _damage_the_facts_table(home)
    episodes = runner.invoke(app, ["episodes", "--user", "ana", "--home", str(home)])
    assert episodes.exit_code == 0 and "Planted tulips" in episodes.output  # what is read works on
    found = runner.invoke(app, ["check", "--home", str(home)])
    assert found.exit_code == 1 and found.output.startswith("damaged:"), found.output
    assert "SQLite:" in found.output and '".recover"' in found.output
    as_json = runner.invoke(app, ["check", "--home", str(home), "--json"])
    report = json.loads(as_json.output)
    assert as_json.exit_code == 1 and report["intact"] is False and len(report["problems"]) <= 20
    assert all(p.startswith("SQLite:") or "could not be read" in p or "full-text" in p for p in report["problems"])


def test_a_postgres_store_missing_a_derived_table_is_reported_not_a_crash(pg_session_url):
    """What a reverie before a4366b0 did to a schema beside its own: the term index dropped.
    The check names the tables instead of failing on them (in a schema of its own, dropped after)."""
    from contextlib import closing

    from reverie.store.postgres import PostgresStore
    from tests.pg import drop_schema, new_schema

    name, url = new_schema("reverie_check")
    try:
        with closing(PostgresStore(url)) as store:
            store._do("DROP TABLE term_sizes")
            problems = store.integrity_problems()
        assert len(problems) == 1 and "term_sizes" in problems[0].said and not problems[0].damaged
    finally:
        drop_schema(name)
