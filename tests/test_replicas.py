"""Two ``reverie serve`` replicas over one PostgreSQL database, as a load balancer would use them.

Clients send turns, remembers and recalls to both; one replica is killed with SIGKILL
while it holds learning jobs (its extract engine is a scripted LLM that never answers
in time); the other takes the jobs over when their lease runs out. Then: no acknowledged
write is lost, every episode is learned exactly once, and when both schedulers fire in
the same second each user dreams once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import psycopg

from tests.fake_openai import Reply
from tests.live_server import free_port, wait_for, wait_until
from tests.live_server import stop_process as stop
from tests.pg import scratch_schema, server_url
from tests.test_learning import _extraction

ROOT = Path(__file__).resolve().parents[1]
LEASE = 3.0


def launch(home: Path, store: str, **env: str) -> tuple[subprocess.Popen[str], str]:
    """``reverie serve --no-auth`` on a free port (a client names its user with ?user=)."""
    port = free_port()
    full = {
        **os.environ, "PYTHONPATH": str(ROOT), "REVERIE_STORE": store, "REVERIE_DEBOUNCE_SECONDS": "0.3",
        "REVERIE_LEARN_LEASE_SECONDS": str(LEASE), **env,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie.cli", "serve", "--no-auth", "--port", str(port), "--home", str(home)],
        env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    return proc, f"http://127.0.0.1:{port}"


def start(home: Path, store: str, **env: str) -> tuple[subprocess.Popen[str], str]:
    proc, url = launch(home, store, **env)
    wait_for(f"{url}/healthz", proc)
    return proc, url


def rows(schema_name: str, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema_name}"')
        return conn.execute(sql, params).fetchall()


class Clients:
    """Several clients at once; every write a replica acknowledged (a 2xx) is recorded."""

    def __init__(self) -> None:
        self.turns: dict[str, str] = {}  # turn id -> user
        self.facts: dict[str, str] = {}  # fact id -> user
        self.recalls = 0
        self.lock = threading.Lock()

    def work(self, urls: list[str], client_no: int, rounds: int) -> None:
        with httpx.Client(timeout=30) as http:
            for n in range(rounds):
                url, user = urls[(client_no + n) % len(urls)], f"u{(client_no + n) % 3}"
                opened = http.post(f"{url}/api/turns", params={"user": user},
                                   json={"message": f"Client {client_no} booked a pottery class number {n} in Porto"})
                opened.raise_for_status()
                turn = opened.json()["turn_id"]
                done = http.post(f"{url}/api/turns/{turn}/complete", params={"user": user},
                                 json={"reply": "Have fun at the class."})
                done.raise_for_status()
                with self.lock:
                    self.turns[turn] = user
                fact = http.post(f"{url}/api/memory/facts", params={"user": user},
                                 json={"content": f"Client {client_no} keeps plant {n} named Fern{client_no}x{n}"})
                fact.raise_for_status()
                with self.lock:
                    self.facts[fact.json()["id"]] = user
                found = http.post(f"{url}/api/memory/recall", params={"user": user}, json={"query": "pottery class"})
                found.raise_for_status()
                with self.lock:
                    self.recalls += 1

    def run(self, urls: list[str], clients: int, rounds: int, first: int = 0) -> None:
        threads = [threading.Thread(target=self.work, args=(urls, first + c, rounds)) for c in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def test_a_killed_replica_loses_no_acknowledged_write_and_its_jobs_are_learned_once(tmp_path, fake_openai):
    # replica A learns through an extract engine that takes a minute: it will hold its claims
    fake_openai.respond_by_step({"extract": lambda body: Reply.delayed(60, _extraction())})
    slow = {"REVERIE_ENGINE_EXTRACT": "openai", "REVERIE_LLM_BASE_URL": fake_openai.base_url,
            "REVERIE_LLM_MODEL": "fake-model", "REVERIE_LLM_MAX_RETRIES": "0"}
    with scratch_schema("reverie_replicas") as (name, store):
        a, url_a = start(tmp_path / "a", store, **slow)
        b = None
        try:
            clients = Clients()
            clients.run([url_a], clients=2, rounds=3)  # only A is up: A claims these
            wait_until(lambda: rows(name, "SELECT count(*) FROM episodes WHERE lease_owner LIKE %s",
                                    (f"%:{a.pid}:%",))[0][0] > 0, 15, "replica A to claim learning jobs")
            b, url_b = start(tmp_path / "b", store)
            clients.run([url_a, url_b], clients=4, rounds=4, first=2)  # traffic to both
            held = rows(name, "SELECT id FROM episodes WHERE lease_owner LIKE %s AND NOT learned AND lease_until > now()",
                        (f"%:{a.pid}:%",))
            assert held, "replica A should hold learning jobs when it is killed"
            a.send_signal(signal.SIGKILL)
            a.wait(timeout=10)
            clients.run([url_b], clients=2, rounds=2, first=6)  # the balancer sends everything to B now

            # B takes A's jobs over once their lease ran out, and learns everything
            wait_until(lambda: rows(name, "SELECT count(*) FROM episodes WHERE status = 'completed' AND NOT learned")[0][0] == 0,
                       60, "every episode to be learned")
            with httpx.Client(base_url=url_b, timeout=30) as http:
                for fact_id, user in clients.facts.items():  # no acknowledged write lost
                    assert http.get(f"/api/memory/facts/{fact_id}", params={"user": user}).status_code == 200
                for turn_id, user in clients.turns.items():
                    episode = http.get("/api/memory/episodes", params={"user": user, "limit": 200}).json()
                    assert turn_id in {e["id"]: e for e in episode}
            completed = rows(name, "SELECT id, learned FROM episodes WHERE status = 'completed'")
            assert {i for i, _ in completed} == set(clients.turns) and all(learned for _, learned in completed)
            assert {i for i, in held} <= set(clients.turns)
            # exactly once: each learned exchange wrote one daily-note line, whichever replica learned it
            notes = rows(name, "SELECT body FROM notes")
            per_episode: dict[str, int] = {}
            for (body,) in notes:
                for episode_id in __import__("json").loads(body)["episodes"]:
                    per_episode[episode_id] = per_episode.get(episode_id, 0) + 1
            assert set(per_episode) == set(clients.turns) and set(per_episode.values()) == {1}
            assert clients.recalls == len(clients.turns)
        finally:
            stop(a)
            if b is not None:
                stop(b)


def _replicas_due_together(home: Path, store: str, lead: float) -> tuple[list[tuple[subprocess.Popen[str], str]], bool]:
    """Two replicas started together, each scheduled to dream ``lead`` seconds from now: (the
    replicas, whether both were ready before that time, with a few seconds to spare for the
    test's writes)."""
    due = datetime.now().astimezone() + timedelta(seconds=lead)
    replicas = [launch(home / r, store, REVERIE_DREAM_TIME=due.strftime("%H:%M:%S")) for r in ("a", "b")]
    try:
        for proc, url in replicas:
            wait_for(f"{url}/healthz", proc)
    except BaseException:
        for proc, _ in replicas:
            stop(proc)
        raise
    return replicas, datetime.now().astimezone() + timedelta(seconds=3) < due


def test_both_schedulers_firing_in_the_same_second_dream_once_per_user(tmp_path):
    with scratch_schema("reverie_replicas") as (name, store):
        # started together, ready before the time they will both fire at: a short lead first, and
        # on a machine too busy to start them within it, the replicas again with a long one
        replicas, ready = _replicas_due_together(tmp_path / "first", store, 12)
        if not ready:
            for proc, _ in replicas:
                stop(proc)
            replicas, ready = _replicas_due_together(tmp_path / "again", store, 30)
        try:
            assert ready, "the replicas started too slowly"
            with httpx.Client(timeout=30) as http:
                for n, user in enumerate(("ana", "bo", "cy")):
                    url = replicas[n % 2][1]
                    http.post(f"{url}/api/memory/facts", params={"user": user},
                              json={"content": f"{user} prefers tea over coffee", "category": "preference"}
                              ).raise_for_status()
            wait_until(lambda: rows(name, "SELECT count(DISTINCT user_id) FROM dream_runs WHERE status = 'done'")[0][0] == 3,
                       60, "the nightly dreams")
            time.sleep(2)  # the slower schedule had its chance
            runs = rows(name, "SELECT user_id, status FROM dream_runs ORDER BY user_id")
            assert runs == [("ana", "done"), ("bo", "done"), ("cy", "done")]
        finally:
            for proc, _ in replicas:
                stop(proc)
