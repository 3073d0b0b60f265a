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


def test_every_public_memory_method_is_an_async_memory_coroutine(home):
    import inspect

    from reverie import Memory

    public = {name for name, value in vars(Memory).items() if not name.startswith("_") and callable(value)}
    # turn is an async context manager (tested above), close is aclose; export_chunks' pieces read
    # the store as they are iterated (export_to writes them from a thread)
    expected = public - {"turn", "close", "export_chunks"}
    assert {"set_tag_status", "save_memory_md", "episode_page", "migrate_to"} <= expected
    mem = AsyncMemory(home, background=False)
    try:
        missing = sorted(name for name in expected if not inspect.iscoroutinefunction(getattr(mem, name, None)))
        assert missing == []
        assert inspect.iscoroutinefunction(mem.aclose)
    finally:
        mem.memory.close()


def test_the_page_tag_and_memory_md_coroutines_reach_memory(home):
    async def main() -> None:
        async with AsyncMemory(home, background=False) as mem:
            fact = await mem.remember("Ana drinks green tea every morning", user="ana", tags=["tea"])
            page = await mem.fact_page(user="ana")
            assert [f.id for f in page.items] == [fact.id]
            assert (await mem.set_tag_status("tea", "deprecated", user="ana")).status == "deprecated"
            tags = await mem.tag_page(user="ana", status="deprecated")
            assert [t["name"] for t in tags.items] == ["tea"]
            await mem.add([{"role": "user", "content": "I moved to Porto"}], user="ana")
            assert len((await mem.episode_page(user="ana")).items) == 1
            await mem.dream(user="ana")
            text = await mem.memory_md(user="ana")
            assert "green tea" in text
            report = await mem.save_memory_md(text.replace("green tea", "black tea"), user="ana")
            assert report.edited and "black tea" in await mem.memory_md(user="ana")
            assert (await mem.change_page(user="ana")).items

    anyio.run(main)
