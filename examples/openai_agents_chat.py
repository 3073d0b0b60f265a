"""An OpenAI Agents SDK agent whose conversation lives in reverie (a Session) and which
remembers, searches and forgets through reverie's memory tools.

    python examples/openai_agents_chat.py [HOME] [--base-url URL] [--model NAME]

Any OpenAI-compatible chat-completions endpoint works: OpenAI itself (OPENAI_API_KEY), or a
local server such as Ollama (``--base-url http://127.0.0.1:11434/v1 --model qwen2.5``).
Tracing is off: nothing leaves the machine but the model calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.items import ToolCallItem
from openai import AsyncOpenAI

from reverie import Memory
from reverie.integrations.openai_agents import ReverieSession, memory_tools

INSTRUCTIONS = (
    "You are a helpful travel assistant. When the user tells you something lasting about "
    "themselves, remember it. Before answering a question about the user, search memory."
)


async def main(home: str, base_url: str | None, model: str) -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "none") if base_url \
        else AsyncOpenAI()
    with Memory(home, background=False) as memory:
        agent = Agent(
            name="assistant", instructions=INSTRUCTIONS, tools=memory_tools(memory, user="ana"),
            model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        )
        session = ReverieSession(memory, user="ana", session_id="travel")
        for text in ("I am allergic to peanuts, please remember that.", "Which snacks should I avoid on the flight?"):
            print(f"user: {text}")
            result = await Runner.run(agent, text, session=session)
            for item in result.new_items:
                if isinstance(item, ToolCallItem):
                    call = item.raw_item
                    print(f"tool: {getattr(call, 'name', '?')}({getattr(call, 'arguments', '')})")
            print(f"assistant: {result.final_output}")
        memory.flush()  # learn from the conversation now instead of after the debounce
        print(f"session items: {len(await session.get_items())}")
        for fact in memory.facts(user="ana"):
            print(f"fact: {fact.content}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", nargs="?", default=None, help="the memory home (default: a new temporary folder)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default: OpenAI)")
    parser.add_argument("--model", default="gpt-4.1-mini")
    args = parser.parse_args()
    if args.base_url is None and not os.environ.get("OPENAI_API_KEY"):
        parser.error("set OPENAI_API_KEY, or pass --base-url for another OpenAI-compatible endpoint")
    asyncio.run(main(args.home or tempfile.mkdtemp(prefix="reverie-agents-"), args.base_url, args.model))
