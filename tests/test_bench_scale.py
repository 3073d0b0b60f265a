"""``reverie bench scale``: the synthetic conversation generator, the cached stores, and one real
small run (a few hundred episodes, a handful of recalls, a tiny LoCoMo conversation)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reverie.bench import ConversationGenerator, load_locomo, recall_queries, run_scale, warmup_queries
from reverie.bench.machine import measure
from reverie.bench.scale import ABSENT, GENERIC_QUERIES, MARKER, USER, BuildRecord, cached_build
from reverie.bench.targets import DILUTION_LOSS, FRESH_TURNS_PER_S, targets
from reverie.cli import app
from reverie.cli.bench_cmds import _sizes
from reverie.memory import Memory
from tests.test_bench import QA, locomo_data

EPISODES = 300
RECALLS = 20

@pytest.fixture(scope="module")
def locomo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("locomo")
    (folder / "tiny.json").write_text(json.dumps(locomo_data()), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, locomo_dir: Path) -> tuple[Path, dict, dict]:
    """The cache, a first run (builds) and a second run (reuses the cached store; it asks for
    the old-memory check without conversations, which it must skip and say why)."""
    cache = tmp_path_factory.mktemp("scale-cache")
    cases = load_locomo(locomo_dir)
    first = run_scale([EPISODES], cache=cache, recalls=RECALLS, cases=cases).as_dict()
    second = run_scale([EPISODES], cache=cache, recalls=RECALLS, old=50).as_dict()
    return cache, first, second


@pytest.fixture(scope="module")
def cli_table(runs: tuple[Path, dict, dict], locomo_dir: Path):
    """`reverie bench scale` printing its table over the cached store, with the old-memory check
    of the tiny conversation and no dilution or concurrency check (run once for the module)."""
    cache, _, _ = runs
    args = ["bench", "scale", "--episodes", str(EPISODES), "--cache", str(cache), "--recalls", "5", "--no-dilution",
            "--locomo", str(locomo_dir), "--old-memories", "40", "--serve-requests", "0"]
    return CliRunner().invoke(app, args)


# ---------------------------------------------------------------- the generator


def test_generator_never_repeats_a_text_across_twenty_thousand_turns():
    gen = ConversationGenerator(8_000)
    sessions = list(gen.sessions())
    texts = [m["content"] for s in sessions for m in s.messages]
    assert len(texts) >= 20_000
    assert len(set(texts)) == len(texts)
    assert sum(s.exchanges for s in sessions) == 8_000


def test_generator_is_varied_conversation_over_years():
    gen = ConversationGenerator(3_000)
    sessions = list(gen.sessions())
    messages = [m for s in sessions for m in s.messages]
    speakers = Counter(m["speaker"] for m in messages)
    assert len(speakers) >= 6 and min(speakers.values()) > len(messages) / 50
    assert len({s.thread for s in sessions}) >= 50
    years = {m["at"].year for m in messages}
    assert len(years) >= 5
    assert [m["at"] for m in messages] == sorted(m["at"] for m in messages)
    lengths = [len(m["content"]) for m in messages]
    assert min(lengths) < 60 and max(lengths) > 250
    vocabulary = {w.strip(".,!?;:").lower() for m in messages for w in m["content"].split()}
    assert len(vocabulary) > 1_000


def test_generator_is_deterministic_and_the_size_cuts_the_last_session():
    a = [s.messages for s in ConversationGenerator(500).sessions()]
    b = [s.messages for s in ConversationGenerator(500).sessions()]
    assert a == b
    assert sum(s.exchanges for s in ConversationGenerator(17).sessions()) == 17


def test_queries_are_varied_and_about_half_name_what_the_store_holds():
    gen = ConversationGenerator(2_000)
    for _ in gen.sessions():
        pass
    queries = recall_queries(300, gen.mentions)
    assert len(queries) == 300
    assert len(set(queries)) > 200
    # a favorite is asked by its kind ("What is Noor's favorite season?")
    held = {v.split(":")[0] if k == "favorite" else v for m in gen.mentions for k, v in m.items() if k != "speaker"}
    about_stored = [q for q in queries[::2] if any(v in q for v in held)]
    assert len(about_stored) == 150
    others = queries[1::2]
    assert any(q in GENERIC_QUERIES for q in others)
    assert any(any(word in q for word in ABSENT) for q in others)


def test_the_warm_up_asks_as_many_other_queries_of_the_same_kinds():
    gen = ConversationGenerator(2_000)
    for _ in gen.sessions():
        pass
    timed, warm = recall_queries(300, gen.mentions), warmup_queries(300, gen.mentions)
    assert len(warm) == len(timed) == 300
    assert warm == warmup_queries(300, gen.mentions)  # deterministic, like the timed ones
    held = {v.split(":")[0] if k == "favorite" else v for m in gen.mentions for k, v in m.items() if k != "speaker"}
    assert len([q for q in warm[::2] if any(v in q for v in held)]) == 150
    # about what the store holds, the warm-up asks other things than the timed queries (a
    # few recur: the same mention drawn and asked the same way)
    assert len(set(warm[::2]) & set(timed[::2])) < 15


# ---------------------------------------------------------------- a real small run


def test_small_run_reports_every_figure(runs):
    _, first, _ = runs
    (size,) = first["sizes"]
    assert size["episodes"] == EPISODES and size["built"] is True and size["cached"] is False
    assert size["messages"] > EPISODES and size["threads"] > 1
    assert size["ingest_turns_per_s"] > 0 and size["tail"]["learn_turns_per_s"] > 0
    assert size["tail"]["ingest_turns_per_s"] > 0
    assert size["recalls"] == RECALLS
    ms = size["recall_ms"]
    assert 0 < ms["p50"] <= ms["p95"] <= ms["p99"]
    warm = size["warmup_ms"]  # as many warm-up recalls, timed as the page cache was found
    assert 0 < warm["p50"] <= warm["p95"] <= warm["p99"]
    assert size["first_recall_ms"] > 0 and size["open_ms"] > 0
    assert size["disk_mb"] > 0 and size["peak_rss_mb"] > 0
    assert first["budget"] == 500 and first["engine"] == "heuristic"


def test_every_run_times_the_same_fixed_work_as_the_machine_reference(runs):
    _, first, second = runs
    a, b = first["machine"], second["machine"]
    assert a["python_ms"] > 0 and a["sqlite_ms"] > 0 and a["sqlite_version"] == sqlite3.sqlite_version
    # the same work on every run (its results' checksum), whatever time it took
    assert a["checksum"] == b["checksum"] == measure(repeats=1).checksum


def test_small_run_reports_the_dilution_check(runs):
    _, first, second = runs
    dilution = first["dilution"]
    assert dilution["store_episodes"] == EPISODES and dilution["budget"] == 500
    (row,) = dilution["conversations"]
    assert row["conversation"] == "tiny" and row["questions"] == sum(q["category"] in (1, 2, 3, 4) for q in QA)
    assert 0 <= row["empty"] <= 1 and 0 <= row["diluted"] <= 1
    assert row["difference"] == pytest.approx(row["diluted"] - row["empty"], abs=1e-3)
    assert row["empty"] > 0  # plain questions about a few turns: recall finds something
    assert second["dilution"] is None and second["dilution_skipped"]


def test_the_run_judges_each_target_it_measured(runs):
    _, first, second = runs
    by_name = {(t["name"], t["where"]): t for t in first["targets"]}
    fresh = by_name[("learning (add + learn) from an empty store", f"SQLite, the {EPISODES:,}-episode build")]
    assert fresh["value"] == first["sizes"][0]["ingest_turns_per_s"] and fresh["bound"] == FRESH_TURNS_PER_S
    assert fresh["met"] is (fresh["value"] >= FRESH_TURNS_PER_S)
    (row,) = first["dilution"]["conversations"]
    diluted = by_name[("evidence recall at 500, diluted against alone", f"conversation tiny, beside {EPISODES:,} episodes")]
    assert diluted["value"] == row["difference"] and diluted["met"] is (row["difference"] >= -DILUTION_LOSS)
    # no dilution check, no size of 100k or 1M: only the learning target is measured
    assert [t["name"] for t in second["targets"]] == ["learning (add + learn) from an empty store"]


def test_targets_name_only_the_sizes_and_stores_they_bound(runs):
    _, first, _ = runs
    size = first["sizes"][0]
    shared = {"users": 800, "episodes_each": 1000, "messages": 1, "ingest_turns_per_s": 1.0}
    report = {"sizes": [
        {**size, "episodes": 100_000, "user_episodes": 100_000, "recall_ms": {**size["recall_ms"], "p95": 24.0}},
        {**size, "episodes": 100_000, "user_episodes": 20_000, "others": shared},  # a shared 100k: no target
        {**size, "episodes": 1_000_000, "user_episodes": 200_000, "others": shared, "peak_rss_mb": 250.0,
         "recall_ms": {**size["recall_ms"], "p95": 49.0}},
        {**size, "store": "postgresql", "episodes": 1_000_000, "user_episodes": 200_000, "others": shared,
         "copied_from": "sqlite", "recall_ms": {**size["recall_ms"], "p95": 51.0}},
    ]}
    got = [(t.name, t.where, t.value, t.met) for t in targets(report)]
    assert got == [
        ("recall p95 at budget 500", "SQLite, 100,000 episodes (one user)", 24.0, True),
        ("recall p95 at budget 500", "SQLite, 1,000,000 episodes (heavy user of 200,000 among 800 users)", 49.0, True),
        ("peak RSS of a recall-only process", "SQLite, 1,000,000 episodes (heavy user of 200,000 among 800 users)",
         250.0, False),
        ("recall p95 at budget 500", "PostgreSQL, 1,000,000 episodes (heavy user of 200,000 among 800 users)", 51.0, False),
        ("peak RSS of a recall-only process", "PostgreSQL, 1,000,000 episodes (heavy user of 200,000 among 800 users)",
         size["peak_rss_mb"], size["peak_rss_mb"] <= 200),
        # learning from the one-user SQLite build of 100k (its last tenth); none of 100k is "fresh"
        ("learning (add + learn) with 100k stored", "SQLite, the last tenth of the 100,000-episode build",
         size["tail"]["ingest_turns_per_s"], size["tail"]["ingest_turns_per_s"] >= 2000),
    ]


def test_second_run_reuses_the_cached_store_and_its_recorded_figures(runs):
    cache, first, second = runs
    home = cache / f"episodes-{EPISODES}"
    record = BuildRecord.read(home / MARKER)
    assert record is not None and record.episodes == EPISODES
    (a,), (b,) = first["sizes"], second["sizes"]
    assert b["built"] is False and b["cached"] is True
    assert b["build_seconds"] == a["build_seconds"] == record.seconds
    assert b["ingest_turns_per_s"] == a["ingest_turns_per_s"]
    assert b["messages"] == a["messages"]
    # the dilution ran on copies: the cached store holds the synthetic user only
    with Memory(home, background=False) as mem:
        assert mem.users() == [USER]
        assert mem.stats(user=USER)["users"][USER]["episodes"] == EPISODES


def test_an_interrupted_build_is_built_again(tmp_path):
    home, record, built = cached_build(tmp_path, 40)
    assert built and (home / MARKER).is_file()
    assert cached_build(tmp_path, 40)[2] is False
    (home / MARKER).unlink()  # as if the build had stopped before its end
    (home / "stray-file").write_text("left by the interrupted build", encoding="utf-8")
    again_home, again, built = cached_build(tmp_path, 40)
    assert built and again_home == home and not (home / "stray-file").exists()
    assert again.messages == record.messages


def test_cli_prints_json_and_a_table(runs, cli_table):
    cache, first, _ = runs
    args = ["bench", "scale", "--episodes", str(EPISODES), "--cache", str(cache), "--recalls", "5", "--no-dilution"]
    result = CliRunner().invoke(app, [*args, "--json", "--serve-requests", "8"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sizes"][0]["cached"] is True and data["sizes"][0]["recalls"] == 5
    assert data["sizes"][0]["build_seconds"] == first["sizes"][0]["build_seconds"]
    # the concurrency check: `reverie serve` over the store with 1 and 2 workers, 1 and 8 clients
    serve = data["serve"]
    assert serve["store_episodes"] == EPISODES and serve["replicas"] == []  # (no PostgreSQL in this run)
    assert [w["workers"] for w in serve["workers"]] == [1, 2]
    rows = [row for w in serve["workers"] for row in w["rows"]]
    assert [r["clients"] for r in rows] == [1, 8, 1, 8] and all(r["errors"] == 0 and r["recalls"] == 8 for r in rows)
    assert rows[0]["x_first"] == 1.0
    assert serve["workers_ratio"] == pytest.approx(rows[-1]["recalls_per_s"] / rows[0]["recalls_per_s"], abs=0.01)
    assert serve["workers_p95_ms"] == rows[-1]["p95_ms"]
    judged = {t["name"]: t for t in data["targets"]}
    ratio = judged["throughput, 2 workers and 8 clients against 1 and 1"]
    assert ratio["value"] == serve["workers_ratio"] and ratio["met"] is (serve["workers_ratio"] >= 1.6)
    assert judged["recall p95, 2 workers and 8 clients"]["value"] == serve["workers_p95_ms"]
    # the servers recalled (and counted uses) in a copy: the cached store is as it was built
    with closing(sqlite3.connect(Path(data["sizes"][0]["home"]) / "reverie.db")) as db:
        assert db.execute("SELECT max(uses) FROM episodes").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM facts WHERE uses > 0").fetchone()[0] == 0
    table = cli_table  # the same store, run without --json (and with --serve-requests 0)
    assert table.exit_code == 0, table.output
    assert "recall p95" in table.stdout and "peak RSS" in table.stdout and "machine reference" in table.stdout
    assert "concurrency check skipped" in table.stdout
    assert "Targets" in table.stdout and "learning (add + learn) from an empty store" in table.stdout


def test_cli_runs_the_old_memory_check_on_its_own(cli_table):
    result = cli_table  # --no-dilution --locomo <tiny> --old-memories 40
    assert result.exit_code == 0, result.output
    assert "Old memories" in result.stdout and "40 newer episodes" in result.stdout
    assert "dilution check skipped" in result.stdout and "tiny" in result.stdout



def test_old_memory_check_asks_the_conversation_beneath_newer_episodes(runs, locomo_dir, tmp_path):
    from reverie.bench.scale import old_memories

    cache, first, _ = runs
    cases = load_locomo(locomo_dir)
    report = run_scale([EPISODES], cache=cache, recalls=5, cases=cases, old=120, dilute=False).as_dict()
    assert report["dilution"] is None and "old_memories_skipped" not in report
    old = report["old_memories"]
    assert old["newer_episodes"] == 120 and old["budget"] == 500
    (row,) = old["conversations"]
    assert row["conversation"] == "tiny" and row["questions"] == first["dilution"]["conversations"][0]["questions"]
    # alone, the conversation recalls as in the dilution check; beneath newer talk, a share of that
    assert row["empty"] == first["dilution"]["conversations"][0]["empty"]
    assert 0 <= row["diluted"] <= 1 and row["difference"] == pytest.approx(row["diluted"] - row["empty"], abs=1e-3)
    assert old["all_questions"]["questions"] == row["questions"]
    assert sorted(p.name for p in cache.iterdir()) == [f"episodes-{EPISODES}"]  # built in a temporary home

    # the conversation is the oldest memory: every synthetic episode was stored after its turns
    home = tmp_path / "old"
    old_memories(cases, 60, home=home)
    with closing(sqlite3.connect(home / "reverie.db")) as db:
        rows = db.execute("SELECT thread, pk FROM episodes WHERE user = ?", (USER,)).fetchall()
    mine = [pk for thread, pk in rows if thread == "tiny"]
    newer = [pk for thread, pk in rows if thread != "tiny"]
    assert mine and len(newer) == 60 and max(mine) < min(newer)

    # asked for without conversations (the module's second run, old=50), the check says why it was not made
    bare = runs[2]
    assert bare["old_memories"] is None and bare["old_memories_skipped"]


def test_cli_reads_sizes_with_suffixes_and_refuses_nonsense(tmp_path):
    assert _sizes("100k, 10000,1m,300") == [300, 10_000, 100_000, 1_000_000]
    result = CliRunner().invoke(app, ["bench", "scale", "--episodes", "ten", "--cache", str(tmp_path)])
    assert result.exit_code == 2 and "ten" in result.output
    assert not any(tmp_path.iterdir())


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory):
    """Two runs with PostgreSQL beside SQLite in one cache: 120 episodes with the concurrency
    check, then 120 and a shared store of 400 (3 other users of 50), which finds the first
    run's 120-episode stores cached and reuses them. The schemas are dropped at the end."""
    from reverie.bench.scale import _drop_schema, _schema_bytes, pg_schema
    from tests.pg import server_url

    server = server_url()
    cache = tmp_path_factory.mktemp("scale-pg")
    schemas = [pg_schema(cache / "pg-episodes-120"), pg_schema(cache / "pg-episodes-400-others-3x50")]
    serving_before = _serve_schemas(server)  # (another run's, killed midway, may have left one)
    try:
        first = run_scale([120], cache=cache, recalls=5, postgres=server, serve_requests=8).as_dict()
        first_schema_bytes = _schema_bytes(server, schemas[0])  # as the first run left it
        shared = run_scale([120, 400], cache=cache, recalls=5, postgres=server, others=3, each=50).as_dict()
        yield {"server": server, "cache": cache, "first": first, "first_schema_bytes": first_schema_bytes,
               "shared": shared, "serving_before": serving_before}
    finally:
        for schema in schemas:
            _drop_schema(server, schema)


def _serve_schemas(server: str) -> set[str]:
    """The scratch schemas the concurrency check's replicas serve (``reverie_serve_...``) now in the server."""
    from reverie.bench.scale import _pg_connect

    with _pg_connect(server) as conn:
        return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'reverie_serve%'")}


def test_postgresql_side_by_side_builds_a_schema_of_its_own_and_reuses_it(side_by_side):
    from reverie.bench.scale import _drop_schema, _schema_bytes, pg_schema

    server, cache = side_by_side["server"], side_by_side["cache"]
    schema = pg_schema(cache / "pg-episodes-120")
    try:
        first = side_by_side["first"]  # run_scale([120], postgres=server, serve_requests=8)
        sqlite, pg = first["sizes"]
        # the concurrency check also sets two replicas over the PostgreSQL copy against one
        replicas = first["serve"]["replicas"]
        assert [r["replicas"] for r in replicas] == [1, 2] and {r["store"] for r in replicas} == {"postgresql"}
        assert all(row["clients"] == 8 and row["errors"] == 0 and row["recalls"] == 16 for r in replicas for row in r["rows"])
        assert first["serve"]["replicas_ratio"] == pytest.approx(
            replicas[1]["rows"][0]["recalls_per_s"] / replicas[0]["rows"][0]["recalls_per_s"], abs=0.01)
        (judged,) = [t for t in first["targets"] if t["name"] == "throughput, 2 replicas against 1, 8 clients"]
        assert judged["value"] == first["serve"]["replicas_ratio"] and judged["where"].startswith("reverie serve, PostgreSQL")
        # learning is judged on the SQLite build only (the PostgreSQL store's build is not issue 11's default)
        assert [t["where"] for t in first["targets"] if t["name"].startswith("learning")] == ["SQLite, the 120-episode build"]
        assert _serve_schemas(server) == side_by_side["serving_before"]  # they served a scratch copy, dropped after
        assert (sqlite["store"], pg["store"]) == ("sqlite", "postgresql")
        assert pg["built"] is True and pg["messages"] == sqlite["messages"]  # the same generated store
        assert pg["recalls"] == 5 and pg["recall_ms"]["p50"] > 0 and pg["peak_rss_mb"] > 0
        # what a recall waits for the server, on PostgreSQL only (SQLite is in-process)
        assert sqlite["round_trips"] is None and 1 <= pg["round_trips"] <= 20
        # the schema holds the store: its size counts, and no SQLite file was made for it
        built_bytes = side_by_side["first_schema_bytes"]
        assert built_bytes > 0 and pg["disk_mb"] * 1e6 >= built_bytes
        assert not (cache / "pg-episodes-120" / "reverie.db").exists()
        # the next run over the same cache (120 and a shared 400) reuses the PostgreSQL store
        again = side_by_side["shared"]
        assert again["sizes"][1]["store"] == "postgresql" and again["sizes"][1]["episodes"] == 120
        assert again["sizes"][1]["cached"] is True
        assert again["sizes"][1]["build_seconds"] == pg["build_seconds"]
        with pytest.raises(Exception, match="postgresql://"):
            run_scale([120], cache=cache, recalls=5, postgres="mysql://nope")
    finally:
        _drop_schema(server, schema)
    assert _schema_bytes(server, schema) == 0


def test_a_shared_store_holds_the_measured_user_among_others_and_postgresql_copies_it(side_by_side):
    from reverie.bench.scale import _schema_bytes, pg_schema

    server, cache = side_by_side["server"], side_by_side["cache"]
    schema = pg_schema(cache / "pg-episodes-400-others-3x50")
    data = side_by_side["shared"]  # run_scale([120, 400], postgres=server, others=3, each=50)
    small, small_pg, shared, shared_pg = data["sizes"]
    assert small["others"] is None and small["user_episodes"] == 120  # only the largest size is shared
    assert shared["episodes"] == 400 and shared["user_episodes"] == 250
    assert shared["others"]["users"] == 3 and shared["others"]["episodes_each"] == 50
    assert shared["others"]["messages"] > 150 and shared["others"]["ingest_turns_per_s"] > 0
    home = cache / "episodes-400-others-3x50"
    with Memory(home, background=False) as mem:
        assert sorted(mem.users()) == ["other-0000", "other-0001", "other-0002", USER]
        counts = mem.stats()["users"]
        assert counts[USER]["episodes"] == 250
        assert all(counts[f"other-000{i}"]["episodes"] == 50 for i in range(3))
        # each other user talks of other things: their texts are not the measured user's
        mine = {m.content for e in mem.episodes(user=USER, limit=None) for m in e.messages}
        theirs = {m.content for e in mem.episodes(user="other-0001", limit=None) for m in e.messages}
        assert theirs and not mine & theirs
    # PostgreSQL holds a checked copy of the SQLite build (reverie migrate), measured alike
    assert shared_pg["store"] == "postgresql" and shared_pg["copied_from"] == str(home)
    assert shared_pg["copy_seconds"] > 0 and shared_pg["user_episodes"] == 250
    assert shared_pg["recalls"] == 5 and _schema_bytes(server, schema) > 0
    # the dilution check uses the largest one-user store, never the shared one
    assert data["dilution"] is None
    again = run_scale([400], cache=cache, recalls=3, others=3, each=50).as_dict()
    assert again["sizes"][0]["cached"] is True and again["dilution_skipped"]
    with pytest.raises(Exception, match="no episodes"):
        run_scale([400], cache=cache, recalls=3, others=8, each=50)
