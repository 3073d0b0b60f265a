"""What an app's shutdown meets: a memory closed while other threads still call it, a turn
whose task is cancelled, a dream still running at close."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import threading
import time

from reverie import AsyncMemory, Memory, dream
from reverie.models import utcnow
from reverie.store.base import DreamRun
from tests.fake_openai import Reply
from tests.test_dream import keep_all_and_add, llm_memory


def test_closing_while_threads_still_call_the_store_crashes_nothing(tmp_path):
    """Closing a connection under a thread mid-statement crashed the process (a segfault):
    the calls that race the close now end with reverie's StoreError, or finish."""
    script = textwrap.dedent(f"""
        import threading, time
        from reverie import Memory
        from reverie.errors import StoreError
        mem = Memory(home={str(tmp_path / "home")!r})
        odd = []
        def loop(i):
            n = 0
            while True:
                n += 1
                try:
                    mem.remember(f"thread{{i}} item{{n}} likes kiwi{{n}}", user="ana")
                    mem.recall("what does ana like?", user="ana")
                    mem.facts(user="ana")
                except StoreError:
                    return
                except BaseException as exc:
                    odd.append(repr(exc))
                    return
        threads = [threading.Thread(target=loop, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        mem.close()
        for t in threads:
            t.join(30)
        print("odd", odd, "alive", sum(t.is_alive() for t in threads))
    """)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert "odd [] alive 0" in done.stdout, done.stdout + done.stderr[-2000:]
    with Memory(tmp_path / "home", background=False) as memory:
        assert memory.check_store().intact


def test_a_cancelled_turn_is_interrupted_not_failed_and_its_message_is_kept(home):
    async def scenario() -> str:
        async with AsyncMemory(home, background=False) as memory:
            opened = asyncio.Event()
            box: list[str] = []

            async def agent() -> None:
                async with memory.turn("I am allergic to peanuts", user="ana") as turn:
                    box.append(turn.id)
                    opened.set()
                    await asyncio.sleep(30)  # the model's answer that never comes: the client left
                    await turn.complete("Noted.")

            task = asyncio.create_task(agent())
            await opened.wait()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return box[0]

    turn_id = asyncio.run(scenario())
    with Memory(home, background=False) as memory:
        assert memory.store.get_episode(turn_id).status == "interrupted"
        assert memory.complete_turn(turn_id, "Noted, no peanuts.", user="ana").status == "completed"


def test_a_dream_still_running_at_close_is_recorded_failed(home, fake_openai, monkeypatch):
    monkeypatch.setattr(dream, "CLOSE_WAIT", 0.3)
    memory = llm_memory(home, fake_openai)
    memory.remember("Prefers tea over coffee", user="ana", category="preference")
    fake_openai.respond_by_step({"distill": lambda body: Reply.delayed(3.0, keep_all_and_add({})(body))})
    ended = threading.Event()
    run = memory.dream(user="ana", background=True, on_done=lambda r: ended.set())
    memory.close()
    assert ended.wait(20)  # the run's own end, unable to write, says so in the log and does not raise
    with Memory(home, background=False) as again:
        left = again.dream_status(run.id, user="ana")
        assert left.status == "failed" and "closed while it ran" in left.error


def test_a_dream_left_running_by_a_killed_process_reads_as_failed(mem):
    run = DreamRun(id="dream_left", user="ana", status="running", days=3, started_at=utcnow(),
                   owner=f"{socket.gethostname()}:999999999")  # this machine, no such process
    with mem.store.transaction():
        mem.store.put_dream_run(run)
    seen = mem.dream_status("dream_left", user="ana")
    assert seen.status == "failed" and "stopped" in seen.error
    assert mem.store.get_dream_run("dream_left").status == "failed"


def test_a_dream_this_process_left_running_does_not_block_the_next(mem):
    """A memory closed while a thread dreamed left the run 'running' under this process: a new
    memory in the same process was refused every dream for an hour."""
    from reverie.owners import process_owner

    run = DreamRun(id="dream_orphan", user="ana", status="running", days=3, started_at=utcnow(),
                   owner=process_owner())
    with mem.store.transaction():
        mem.store.put_dream_run(run)
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    assert mem.dream(user="ana").status == "done"
    assert mem.store.get_dream_run("dream_orphan").status == "failed"


def test_a_usage_count_that_raced_close_is_said_lost_not_kept(home, caplog):
    import logging

    memory = Memory(home, background=False)
    fact = memory.remember("Ana's marathon is in Lisbon", user="ana")
    memory.recaller._usage[("fact", fact.id)] = 1  # counted by a recall as the memory closed
    memory.recaller._usage_at = fact.created_at
    memory.store.close()
    with caplog.at_level(logging.ERROR, logger="reverie.recall"):
        assert memory.recaller.flush_usage() == 1
    assert any("lost" in r.getMessage() for r in caplog.records)
    assert memory.recaller._usage == {}  # not kept for a flush that never comes
    memory.close()


def test_a_poll_that_read_a_dream_just_before_it_ended_does_not_fail_it(mem):
    """A poll reads the run (still running), the dream then records its end and lets go of its
    place, and only then does the poll ask whether anyone still runs it: nobody does, and the
    finished dream had been recorded failed (a console test saw it on a slow machine)."""
    mem.remember("Writes Rust at work", user="ana", category="context")
    started = mem.dream(user="ana", background=True)
    read_while_running = mem.store.get_dream_run(started.id)
    assert read_while_running.status in ("queued", "running")
    assert dream.wait(mem.ctx.files.home, timeout=30)
    settled = dream._settled(mem.ctx, read_while_running)
    assert settled.status in ("done", "skipped")
    assert mem.store.get_dream_run(started.id).status == settled.status


def test_a_close_waits_for_learning_no_longer_than_its_limit_and_loses_nothing(home, fake_openai, monkeypatch):
    """An endpoint (or a store) that accepts and never answers held close for ever, and a
    server's SIGTERM with it: past the limit close returns, and what was not learned is learned
    at the next start."""
    from reverie import memory as memory_module

    monkeypatch.setattr(memory_module, "CLOSE_LEARN_SECONDS", 0.5)
    fake_openai.respond_by_step({"summarize": Reply.delayed(15.0, {"summary": "late"}),
                                 "extract": Reply.delayed(15.0, {"newFacts": []})})
    memory = Memory(home, background=False, engines={"summarize": "openai", "extract": "openai"},
                    llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0, "timeout": 60})
    episode = memory.add([{"role": "user", "content": "I prefer green tea in the morning"}], user="ana")[0]
    started = time.monotonic()
    memory.close()
    assert time.monotonic() - started < 10  # not the 15 s the endpoint takes to answer
    with Memory(home, background=False) as again:
        assert not again.episode(episode.id).learned
        assert again.flush() == 1
        assert again.episode(episode.id).learned
