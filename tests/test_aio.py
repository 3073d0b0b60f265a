"""AsyncMemory: Memory's surface as coroutines, safe from many tasks, never blocking the loop."""

from __future__ import annotations

import anyio
import pytest

from reverie import AsyncMemory, InvalidInput


def test_many_tasks_write_and_recall_at_once_and_the_loop_keeps_running(home):
    async def main() -> None:
        async with AsyncMemory(home, background=False) as mem:
            ticks = 0
            done = anyio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while not done.is_set():
                    ticks += 1
                    await anyio.sleep(0.001)

            async def worker(i: int) -> None:
                await mem.remember(f"Project {chr(65 + i)} ships in week {i + 10}", user="ana")
                result = await mem.recall(f"when does project {chr(65 + i)} ship?", user="ana")
                assert f"Project {chr(65 + i)}" in result.context

            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                async with anyio.create_task_group() as workers:
                    for i in range(12):
                        workers.start_soon(worker, i)
                done.set()
            assert ticks > 5  # the event loop ran while the library worked in threads
            assert len(await mem.facts(user="ana")) == 12

    anyio.run(main)


def test_an_async_turn_completes_or_is_interrupted(home):
    async def main() -> None:
        async with AsyncMemory(home, background=False) as mem:
            async with mem.turn("I moved to Lisbon last month", user="ana") as turn:
                assert turn.id.startswith("ep_")
                episode = await turn.complete("Welcome to Lisbon!")
            assert episode.status == "completed"
            async with mem.turn("Half a thought", user="ana") as left:
                pass
            assert (await mem.episode(left.id)).status == "interrupted"
            opened = await mem.turn("Another message", user="ana")
            await mem.complete_turn(opened.id, "Sure.")
            assert (await mem.flush()) == 2
            with pytest.raises(InvalidInput):
                await mem.recall("", user="ana")

    anyio.run(main)
