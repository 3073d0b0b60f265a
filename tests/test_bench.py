"""The LoCoMo benchmark: evidence ids, the BM25 baseline, budget packing, and the CLI end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from reverie.bench import BM25, bm25_documents, evidence_ids, load_locomo, pack
from reverie.bench.stats import percentile
from reverie.cli import app
from reverie.errors import InvalidInput
from reverie.text import terms
from reverie.tokens import count_tokens

SESSIONS = {
    "1:56 pm on 8 May, 2023": [
        ("Caroline", "Hey Mel! How have you been?"),
        ("Melanie", "Busy with the kids. I started pottery classes last week."),
        ("Caroline", "I went to an LGBTQ support group yesterday, it was powerful."),
        ("Melanie", "That sounds wonderful, I am proud of you."),
    ],
    "10:37 am on 27 June, 2023": [
        ("Caroline", "I am researching adoption agencies so I can become a mom."),
        ("Melanie", "Amazing! We camped at the beach with the family last weekend."),
        ("Caroline", "Camping sounds lovely. Did the kids enjoy the marshmallows?"),
        ("Melanie", "They loved roasting marshmallows by the campfire."),
    ],
    "8:18 pm on 6 July, 2023": [
        ("Caroline", "I painted a sunrise over the lake, my first watercolor."),
        ("Melanie", "Beautiful! My violin recital is next Friday."),
        ("Caroline", "Good luck with the violin, you will be great."),
        ("Melanie", "Thanks, I practise Bach every evening."),
    ],
}
QA = [
    {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023", "evidence": ["D1:3"], "category": 2},
    {"question": "What is Caroline researching?", "answer": "adoption agencies", "evidence": ["D2:1"], "category": 4},
    {"question": "What did Melanie's family roast while camping?", "answer": "marshmallows", "evidence": ["D2:2; D2:4"], "category": 1},
    {"question": "What instrument does Melanie play, and what did Caroline paint?", "answer": "violin; a sunrise",
     "evidence": ["D3:2", "D3:1"], "category": 3},
    {"question": "What did Caroline say about her violin?", "adversarial_answer": "not mentioned", "evidence": [], "category": 5},
]


def locomo_data() -> dict:
    data: dict = {"speaker_a": "Caroline", "speaker_b": "Melanie", "qa": QA}
    for n, (date, turns) in enumerate(SESSIONS.items(), 1):
        data[f"session_{n}_date_time"] = date
        data[f"session_{n}"] = [
            {"speaker": speaker, "dia_id": f"D{n}:{i}", "text": text} for i, (speaker, text) in enumerate(turns, 1)
        ]
    return data


@pytest.fixture
def locomo_dir(tmp_path):
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "tiny.json").write_text(json.dumps(locomo_data()), encoding="utf-8")
    return folder


# ---------------------------------------------------------------- evidence and questions


def test_evidence_ids_take_every_id_of_every_entry_once_in_canonical_form():
    assert evidence_ids(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert evidence_ids(["D1:3", "D01:03", "D2:10,D1:3"]) == ["D1:3", "D2:10"]
    assert evidence_ids(["see above", ""]) == []


def test_only_category_1_to_4_questions_with_evidence_are_asked(locomo_dir):
    data = locomo_data()
    data["qa"] = QA + [{"question": "Where?", "answer": "?", "evidence": [], "category": 4}]
    (locomo_dir / "tiny.json").write_text(json.dumps(data), encoding="utf-8")
    (case,) = load_locomo(locomo_dir)
    assert [q.category for q in case.questions] == [2, 4, 1, 3]
    assert case.questions[2].evidence == {"D2:2", "D2:4"}
    assert case.without_evidence == 1
    assert len(load_locomo(locomo_dir, limit_questions=2)[0].questions) == 2


def test_a_folder_without_locomo_files_is_refused_with_a_clear_error(tmp_path):
    with pytest.raises(InvalidInput, match="no \\*.json"):
        load_locomo(tmp_path)
    (tmp_path / "x.json").write_text('{"messages": []}', encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a LoCoMo conversation"):
        load_locomo(tmp_path)


def test_bm25_documents_are_date_prefixed_turns_with_their_speaker(locomo_dir):
    (case,) = load_locomo(locomo_dir)
    docs = bm25_documents(case)
    assert len(docs) == 12
    assert docs[0] == ("D1:1", "[8 May 2023] Caroline: Hey Mel! How have you been?")
    assert docs[-1] == ("D3:4", "[6 July 2023] Melanie: Thanks, I practise Bach every evening.")


# ---------------------------------------------------------------- BM25 and packing


def test_bm25_ranks_the_obviously_right_document_first():
    corpus = [
        "We camped at the beach with the family",
        "My violin recital is next Friday",
        "I am researching adoption agencies",
        "The kids loved the beach and the violin music",
    ]
    index = BM25([terms(doc) for doc in corpus])
    assert index.rank(terms("When is the violin recital?"))[0] == 1
    assert index.rank(terms("adoption agencies")) == [2]
    assert index.rank(terms("quantum chromodynamics")) == []


def test_bm25_prefers_the_rarer_term_and_the_shorter_document():
    index = BM25([["beach", "trip"], ["beach", "trip", "sand", "sun", "sea", "wave"], ["beach", "violin"]])
    rare, common = index.scores(["violin"]), index.scores(["beach"])
    assert rare[2] > common[2]
    assert common[0] > common[1]


@pytest.mark.parametrize("budget", [0, 5, 12, 30, 100, 10_000])
def test_packing_never_exceeds_the_budget_and_stops_at_the_first_line_that_does_not_fit(budget):
    lines = [f"[8 May 2023] Caroline: line number {i} " + "word " * (i % 7) for i in range(40)]
    taken = pack(lines, budget)
    cost = [count_tokens(line) + 1 for line in lines]
    assert sum(cost[:taken]) <= budget
    assert taken == len(lines) or sum(cost[: taken + 1]) > budget


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) == 0.0


# ---------------------------------------------------------------- end to end


def run_cli(*args: str):
    result = CliRunner().invoke(app, ["bench", "locomo", *args])
    assert result.exit_code == 0, result.output
    return result


def test_cli_json_has_exactly_the_documented_shape_with_rates_in_0_to_1(locomo_dir):
    report = json.loads(run_cli(str(locomo_dir), "--json").stdout)
    # the keys, plus held_at_budget (the stricter reading, extra for readers who want it)
    figure_keys = {"recall_at_budget", "recall_at_k", "held_at_budget", "latency_ms", "latency_ms_at_budget",
                   "ingest_turns_per_s", "questions"}
    assert set(report) == {"reverie", "bm25"}
    for figures in report.values():
        assert set(figures) == figure_keys
        assert set(figures["recall_at_budget"]) == {"200", "500", "1000", "2000"}
        assert set(figures["recall_at_k"]) == {"1", "5", "10", "20"}
        assert set(figures["latency_ms"]) == {"p50", "p95"}
        rates = [*figures["recall_at_budget"].values(), *figures["recall_at_k"].values()]
        assert all(0.0 <= r <= 1.0 for r in rates)
        held = figures["held_at_budget"]
        assert all(0.0 <= held[b] <= figures["recall_at_budget"][b] for b in held)
        assert 0 < figures["latency_ms"]["p50"] <= figures["latency_ms"]["p95"]
        # the latency target is at budget 500: every budget's recalls are timed
        assert set(figures["latency_ms_at_budget"]) == {"200", "500", "1000", "2000"}
        assert all(0 < t["p50"] <= t["p95"] for t in figures["latency_ms_at_budget"].values())
        assert figures["ingest_turns_per_s"] > 0
        assert figures["questions"] == 4
    # every turn fits in 2000 tokens and each question shares a word with its evidence
    assert report["bm25"]["recall_at_budget"]["2000"] == 1.0
    assert report["reverie"]["recall_at_budget"]["2000"] > 0


def test_cli_budget_option_restricts_the_budgets_reported(locomo_dir):
    report = json.loads(run_cli(str(locomo_dir), "--json", "--budget", "500,1000", "--budget", "200", "--limit-questions", "1").stdout)
    assert list(report["bm25"]["recall_at_budget"]) == ["200", "500", "1000"]
    assert report["reverie"]["questions"] == 1


def test_cli_table_sets_reverie_beside_bm25_and_says_recalls_are_read_only(locomo_dir):
    out = run_cli(str(locomo_dir), "--limit-questions", "1", "--group", "message").stdout
    assert "reverie" in out and "BM25" in out and "ratio" in out
    assert "recall@10" in out and "ingest turns/s" in out
    assert "latency p95 @ 500 tokens (ms)" in out
    assert "track=False" in out


def test_cli_refuses_a_budget_that_is_not_a_positive_number(locomo_dir):
    result = CliRunner().invoke(app, ["bench", "locomo", str(locomo_dir), "--budget", "0"])
    assert result.exit_code == 2
    assert "positive token count" in result.output


def test_serve_bench_drives_a_real_multi_worker_server(tmp_path):
    from reverie import Memory
    from reverie.bench.serve import run_serve_bench

    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        memory.remember("Ana went hiking in the Alps", user="ana")
    report = run_serve_bench(home, user="ana", workers=2, clients=(1, 2), requests=10)
    assert report["workers"] == 2 and [r["clients"] for r in report["rows"]] == [1, 2]
    for row in report["rows"]:
        assert row["recalls"] == 10 and row["errors"] == 0
        assert row["recalls_per_s"] > 0 and row["p95_ms"] >= row["p50_ms"] > 0
        assert row["client_cpu_ms"] > 0  # the clients' own share of the machine, per recall
    assert report["rows"][0]["speedup"] == 1.0
    # the last answer of each client names its worker: 1 client on one, 2 on both or one
    assert report["rows"][0]["split"] == [1] and sum(report["rows"][1]["split"]) == 2


def test_serve_bench_cli_sets_every_row_against_the_first(tmp_path):
    from reverie import Memory

    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        memory.remember("Ana went hiking in the Alps", user="ana")
    result = CliRunner().invoke(app, ["bench", "serve", "--home", str(home), "--user", "ana", "--workers", "1",
                                      "--clients", "1,2", "--requests", "6", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)[0]["rows"]
    assert rows[0]["x_first"] == 1.0
    assert rows[1]["x_first"] == pytest.approx(rows[1]["recalls_per_s"] / rows[0]["recalls_per_s"], abs=0.01)


def test_serve_bench_counts_requests_that_find_no_server_as_errors():
    from reverie.bench.serve import _free_port, _load

    row = _load([f"http://127.0.0.1:{_free_port()}"], "ana", clients=2, requests=6, budget=500)
    assert row["recalls"] == 6 and row["errors"] == 6


def test_serve_bench_clients_share_the_requests_until_none_is_left():
    # 7 requests from 3 clients: a fixed share of 2 each would send 6; taking the next until
    # none is left sends all 7 (and keeps every client busy until the end)
    from reverie.bench.serve import _free_port, _load

    row = _load([f"http://127.0.0.1:{_free_port()}"], "ana", clients=3, requests=7, budget=500)
    assert row["recalls"] == 7 and row["errors"] == 7


def test_serve_bench_spreads_clients_over_replicas_of_one_postgresql_store(tmp_path, pg_url):
    from reverie import Memory
    from reverie.bench.serve import run_serve_bench

    home = tmp_path / "home"
    with Memory(home, background=False, store=pg_url) as memory:
        memory.remember("Ana went hiking in the Alps", user="ana")
    report = run_serve_bench(home, user="ana", workers=1, clients=(1, 4), requests=12, replicas=2, store=pg_url)
    assert report["replicas"] == 2 and report["store"] == "postgresql"
    for row in report["rows"]:
        assert row["recalls"] == 12 and row["errors"] == 0 and row["recalls_per_s"] > 0
        assert row["split"] == []  # one process each: no worker named


# ---------------------------------------------------------------- learning through a slow endpoint

def test_the_stand_in_endpoint_reads_back_the_conversation_the_engine_sent():
    from datetime import datetime, timezone

    from reverie.bench.endpoint import _extract_request
    from reverie.engines.base import ExtractRequest
    from reverie.engines.openai_engine import _extract_input
    from reverie.models import Message

    at = datetime(2024, 5, 1, tzinfo=timezone.utc)
    sent = ExtractRequest(messages=[Message(speaker="Ana", content="I moved to Porto: it is lovely", at=at),
                                    Message(speaker="Ben", content="Nice! When?")], episode_ids=["e1", "e1"])
    back = _extract_request(_extract_input(sent))
    assert [(m.speaker, m.content, m.at) for m in back.messages] == [
        ("Ana", "I moved to Porto: it is lovely", at), ("Ben", "Nice! When?", None)]
    assert back.episode_ids == ["e1", "e1"] and back.user_speakers == ["Ana", "Ben"]


def test_endpoint_bench_learns_the_same_conversation_at_every_concurrency():
    from reverie.bench.endpoint import run_endpoint_bench

    report = run_endpoint_bench(episodes=24, latency=0.02, concurrency=(1, 3), learn_threads=(1,))
    one, three = report["rows"]
    assert one["learned"] == three["learned"] == one["episodes"] == 24
    assert one["facts"] == three["facts"] and one["calls"] == three["calls"] > 24  # a summary each, and more
    assert one["most_in_flight"] == 1
    assert 1 < three["most_in_flight"] <= 3  # the endpoint never gets more than llm.concurrency


def test_endpoint_bench_learns_the_same_for_several_users_at_once_within_the_endpoint_cap():
    from reverie.bench.endpoint import run_endpoint_bench

    report = run_endpoint_bench(episodes=24, latency=0.02, concurrency=(4,), users=3, learn_threads=(1, 3))
    alone, together = report["rows"]
    assert alone["learned"] == together["learned"] == 24 and alone["facts"] == together["facts"]
    assert alone["most_in_flight"] <= 4 and together["most_in_flight"] <= 4


def test_cli_endpoint_bench_prints_json_with_a_row_per_concurrency():
    result = CliRunner().invoke(app, ["bench", "endpoint", "--episodes", "6", "--latency", "0",
                                      "--concurrency", "1,2", "--users", "2", "--learn-threads", "1,2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(r["concurrency"], r["learn_threads"]) for r in data["rows"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert data["latency_s"] == 0.0 and data["users"] == 2
    assert all(r["learned"] == 6 for r in data["rows"])


def test_endpoint_bench_learns_into_postgresql_when_given_a_store_and_drops_its_schemas(pg_url):
    import psycopg

    from reverie.bench.endpoint import run_endpoint_bench
    from reverie.store.postgres import split_schema

    report = run_endpoint_bench(episodes=8, latency=0.0, concurrency=(2,), users=2, learn_threads=(2,), store=pg_url)
    assert report["store"] == "postgresql" and report["rows"][0]["learned"] == 8
    with psycopg.connect(split_schema(pg_url)[0], autocommit=True) as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'reverie_endpoint_%'").fetchone()
    assert left[0] == 0
