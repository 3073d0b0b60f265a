"""The OpenAI Agents SDK adapter against the real SDK: the Session kept as reverie episodes,
the memory tools, a Runner against a scripted OpenAI-compatible server on 127.0.0.1, and
the example under examples/, run as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import Session, SessionSettings
from agents.tool_context import ToolContext
from openai import AsyncOpenAI

from reverie import AsyncMemory, InvalidInput, Memory
from reverie.integrations.openai_agents import KEY, ReverieSession, memory_tools
from reverie.models import utcnow
from reverie.unanswered import close_unanswered
from tests.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[1]
EMAIL = "ana.lopez@example.com"
API_KEY = "sk-proj-Zx81mQv27LpT0aBcDeFgHiJkLmNoPqRsTuVw"


class ToolCallingOpenAI(FakeOpenAI):
    """The suite's scripted server, also answering with tool calls: push ``tool_call(...)``."""

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        out = super()._completion(body, content)
        try:
            scripted = json.loads(content)
        except ValueError:
            return out
        if isinstance(scripted, dict) and "__tool_calls__" in scripted:
            out["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for name, arguments in scripted["__tool_calls__"]
            ]}
            out["choices"][0]["finish_reason"] = "tool_calls"
        return out


def tool_call(name: str, **arguments: Any) -> Reply:
    return Reply.json({"__tool_calls__": [[name, arguments]]})


@pytest.fixture
def tool_server():
    with ToolCallingOpenAI() as server:
        yield server


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def user_msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer(text: str, msg_id: str = "msg_1") -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def exchange(n: int) -> list[dict[str, Any]]:
    return [user_msg(f"question {n}"), answer(f"answer {n}", f"msg_{n}")]


# a run with everything the SDK may hand a session: reasoning, a tool call and its output,
# an answer with content parts and provider data
RUN = [
    {"role": "user", "content": [{"type": "input_text", "text": "Book me a table for Friday"},
                                 {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=",
                                  "detail": "auto"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the calendar"}],
     "encrypted_content": "gAAAAABo-Zx81mQv27LpT0aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_abc", "name": "calendar",
     "arguments": "{\"day\": \"friday\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_abc", "output": "Friday is free"},
    answer("Booked for Friday at 8.", "msg_9") | {"provider_data": {"model": "m", "response_id": "resp_1"}},
]


def test_the_session_is_an_sdk_session_and_gives_back_every_item_as_added(mem):
    session = ReverieSession(mem, user="ana", session_id="dinner")
    assert isinstance(session, Session) and session.session_id == "dinner"

    async def main() -> None:
        await session.add_items(RUN[:1])
        await session.add_items(RUN[1:4])
        await session.add_items(RUN[4:])
        assert await session.get_items() == RUN  # non-message items, parts and ids included
        await session.add_items(exchange(2))
        assert await session.get_items() == RUN + exchange(2)
        fresh = ReverieSession(Memory(mem.home, background=False), user="ana", session_id="dinner")
        assert await fresh.get_items() == RUN + exchange(2)  # kept in the store, not in the object
        fresh.memory.close()

    run(main)
    episodes = mem.episodes(user="ana", thread="dinner")
    assert len(episodes) == 2 and episodes[1].meta[KEY]["items"] == RUN


def test_an_exchange_is_one_episode_of_its_words_completed_when_answered(mem):
    session = ReverieSession(mem, user="ana", session_id="dinner")

    async def main() -> None:
        await session.add_items(RUN[:1])
        (episode,) = mem.episodes(user="ana", thread="dinner")
        assert episode.status == "pending"  # the agent is still working: nothing to learn yet
        assert mem.flush() == 0
        await session.add_items(RUN[1:4])
        assert mem.episodes(user="ana", thread="dinner")[0].status == "pending"
        await session.add_items(RUN[4:])

    run(main)
    (episode,) = mem.episodes(user="ana", thread="dinner")
    assert episode.status == "completed"
    # what reverie reads: the conversation's words, not tool calls, outputs or reasoning
    assert [(m.role, m.content) for m in episode.messages] == [
        ("user", "Book me a table for Friday"), ("assistant", "Booked for Friday at 8."),
    ]
    assert (episode.user_text, episode.reply_text) == ("Book me a table for Friday", "Booked for Friday at 8.")
    assert mem.flush(user="ana") == 1


def test_a_new_user_message_completes_the_exchange_left_open(mem):
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        await session.add_items([user_msg("first"), RUN[2], RUN[3]])  # ends without an answer
        await session.add_items([user_msg("second"), user_msg("more of it")])

    run(main)
    newest, older = mem.episodes(user="ana", thread="s")
    assert older.status == "completed" and [m.content for m in older.messages] == ["first"]
    assert newest.status == "pending" and [m.content for m in newest.messages] == ["second", "more of it"]


def test_get_items_with_a_limit_gives_the_newest_in_order(mem):
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        for n in range(5):
            await session.add_items(exchange(n))
        everything = await session.get_items()
        assert len(everything) == 10
        assert await session.get_items(limit=3) == everything[-3:]
        assert await session.get_items(limit=1) == [answer("answer 4", "msg_4")]
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=50) == everything
        limited = ReverieSession(mem, user="ana", session_id="s", session_settings=SessionSettings(limit=4))
        assert await limited.get_items() == everything[-4:]
        assert await limited.get_items(limit=2) == everything[-2:]  # an explicit limit wins
        with pytest.raises(InvalidInput, match="limit"):
            await session.get_items(limit=-1)

    run(main)


def test_pop_item_removes_the_newest_and_an_emptied_exchange_is_archived(mem):
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        await session.add_items(exchange(1) + exchange(2))
        assert await session.pop_item() == answer("answer 2", "msg_2")
        assert await session.get_items() == exchange(1) + [user_msg("question 2")]
        newest = mem.episodes(user="ana", thread="s")[0]
        assert [m.content for m in newest.messages] == ["question 2"]  # its words left with it
        assert await session.pop_item() == user_msg("question 2")
        assert await session.get_items() == exchange(1)
        archived = mem.episodes(user="ana", thread="s", archived=True)
        assert len(archived) == 1 and archived[0].messages == [] and archived[0].user_text == ""
        assert await session.pop_item() == answer("answer 1", "msg_1")
        assert await session.pop_item() == user_msg("question 1")
        assert await session.pop_item() is None
        assert await session.get_items() == []

    run(main)


def test_clear_session_archives_the_thread_and_leaves_other_threads(mem):
    session = ReverieSession(mem, user="ana", session_id="s")
    other = ReverieSession(mem, user="ana", session_id="other")

    async def main() -> None:
        await session.add_items(exchange(1) + exchange(2))
        await other.add_items(exchange(3))
        await session.clear_session()
        assert await session.get_items() == []
        assert await other.get_items() == exchange(3)
        await session.add_items(exchange(4))  # a cleared session starts again
        assert await session.get_items() == exchange(4)

    run(main)
    archived = mem.episodes(user="ana", thread="s", archived=True)
    assert len(archived) == 2  # archived, not deleted: restore brings an exchange back
    mem.restore(archived[-1].id)
    assert run(session.get_items) == exchange(1) + exchange(4)


def test_sessions_of_different_users_never_see_each_other(mem):
    ana = ReverieSession(mem, user="ana", session_id="shared-name")
    bob = ReverieSession(mem, user="bob", session_id="shared-name")

    async def main() -> None:
        await ana.add_items(exchange(1))
        assert await bob.get_items() == []
        assert await bob.pop_item() is None
        await bob.clear_session()
        assert await ana.get_items() == exchange(1)
        await bob.add_items(exchange(2))
        assert await ana.get_items() == exchange(1) and await bob.get_items() == exchange(2)

    run(main)
    assert mem.episodes(user="bob", thread="shared-name")[0].user == "bob"


def test_episodes_written_by_other_doors_read_as_plain_messages(mem):
    mem.add([{"role": "user", "content": "We moved billing to Postgres"},
             {"role": "assistant", "content": "Noted."}], user="ana", thread="t")
    session = ReverieSession(mem, user="ana", session_id="t")

    async def main() -> None:
        assert await session.get_items() == [
            {"role": "user", "content": "We moved billing to Postgres"}, {"role": "assistant", "content": "Noted."},
        ]
        await session.add_items(exchange(1))
        assert (await session.get_items())[2:] == exchange(1)
        await session.pop_item()
        await session.pop_item()
        assert await session.pop_item() == {"role": "assistant", "content": "Noted."}

    run(main)


def test_sensitive_data_is_stripped_from_every_item_and_structural_fields_are_kept(mem, home):
    session = ReverieSession(mem, user="ana", session_id="s")
    items = [
        user_msg(f"Mail me at {EMAIL}, my key is {API_KEY}"),
        {"type": "function_call", "id": "fc_2", "call_id": "call_k", "name": "send",
         "arguments": json.dumps({"to": EMAIL, "password": "tulip-Secret-42"})},
        {"type": "function_call_output", "call_id": "call_k", "output": f"sent to {EMAIL}"},
        answer(f"Done, {EMAIL} has it.") | {"content": [{
            "type": "output_text", "text": f"Done, {EMAIL} has it.", "annotations": [],
            "logprobs": [{"token": t, "logprob": -0.1, "top_logprobs": []} for t in ("Done", ", ana", ".lopez", "@example", ".com")],
        }]},
    ]

    async def main() -> list[Any]:
        await session.add_items(items)
        return await session.get_items()

    stored = run(main)
    text = json.dumps(stored)
    assert EMAIL not in text and API_KEY not in text and "tulip-Secret-42" not in text
    assert stored[0]["content"] == "Mail me at [email], my key is [api-key]"
    assert json.loads(stored[1]["arguments"])["to"] == "[email]"
    assert (stored[1]["call_id"], stored[1]["id"], stored[2]["call_id"]) == ("call_k", "fc_2", "call_k")
    assert stored[3]["content"][0]["logprobs"] == []  # tokens would spell the address out
    assert [m.content for m in mem.episodes(user="ana", thread="s")[0].messages] == [
        "Mail me at [email], my key is [api-key]", "Done, [email] has it."]
    mem.close()
    for path in home.rglob("*"):
        if path.is_file():
            assert EMAIL.encode() not in path.read_bytes() and API_KEY.encode() not in path.read_bytes(), path


def test_bad_input_is_a_clear_error(mem):
    session = ReverieSession(mem, user="ana", session_id="s")
    with pytest.raises(InvalidInput, match="user"):
        ReverieSession(mem, user="../etc", session_id="s")
    for bad in ("", "  s", 3):
        with pytest.raises(InvalidInput, match="session_id"):
            ReverieSession(mem, user="ana", session_id=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="session_id"):
        ReverieSession(mem, user="ana", session_id=EMAIL)  # would be stored as [email]

    async def main() -> None:
        with pytest.raises(InvalidInput, match="items must be a list"):
            await session.add_items({"role": "user"})  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=r"items\[1\] must be an input item"):
            await session.add_items([user_msg("hi"), "hello"])  # type: ignore[list-item]
        with pytest.raises(InvalidInput, match=r"items\[0\] is not JSON"):
            await session.add_items([{"role": "user", "content": {1, 2}}])  # type: ignore[list-item]
        with pytest.raises(InvalidInput, match="surrogate"):
            await session.add_items([user_msg("half \ud800 a pair")])
        assert await session.get_items() == []  # nothing of a refused batch was written

    run(main)


def invoke(tool: FunctionTool, **arguments: Any) -> str:
    args = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call_1", tool_arguments=args)
    return str(anyio.run(tool.on_invoke_tool, context, args))


def test_memory_tools_remember_search_and_forget_for_their_user_only(mem):
    tools = {t.name: t for t in memory_tools(mem, user="ana")}
    assert set(tools) == {"remember", "search_memory", "forget_memory"}
    assert set(tools["remember"].params_json_schema["properties"]) == {"content", "category"}

    said = invoke(tools["remember"], content=f"Is allergic to peanuts, mail {EMAIL}", category="constraint")
    (fact,) = mem.facts(user="ana")
    assert said == f"Remembered ({fact.id}): Is allergic to peanuts, mail [email]"
    assert (fact.content, fact.category) == ("Is allergic to peanuts, mail [email]", "constraint")
    invoke(tools["remember"], content=f"Uses the key {API_KEY}", category="other")
    assert API_KEY not in json.dumps([f.content for f in mem.facts(user="ana")])

    found = invoke(tools["search_memory"], query="what is ana allergic to?")
    assert f"- {fact.id}: " in found and "peanuts" in found and "not instructions" in found

    bob = {t.name: t for t in memory_tools(mem, user="bob")}
    assert invoke(bob["search_memory"], query="what is ana allergic to?") == "Nothing remembered about that."
    assert invoke(bob["forget_memory"], memory_id=fact.id).startswith("Not forgotten: no fact")
    assert mem.fact(fact.id).status == "consolidated"  # bob cannot reach ana's facts

    assert invoke(tools["forget_memory"], memory_id=fact.id) == f"Forgot ({fact.id}): {fact.content}"
    assert mem.fact(fact.id).status == "archived"
    assert "peanuts" not in invoke(tools["search_memory"], query="what is ana allergic to?")
    assert invoke(tools["remember"], content="  ", category="other").startswith("Not remembered: content")
    assert invoke(tools["remember"], content="Likes tea", category="prefrence").startswith(
        "Not remembered: unknown category 'prefrence': did you mean 'preference'?")


def test_an_agent_tool_remembers_for_its_agent(mem):
    tools = {t.name: t for t in memory_tools(AsyncMemory(memory=mem), user="ana", agent="planner")}
    invoke(tools["remember"], content="Plans trips in May", category="context")
    assert [(f.content, f.agent) for f in mem.facts(user="ana")] == [("Plans trips in May", "planner")]
    with pytest.raises(InvalidInput, match="agent"):
        memory_tools(mem, user="ana", agent=" spaced ")


def test_a_runner_keeps_its_conversation_in_the_session_and_calls_the_tools(mem, tool_server):
    set_tracing_disabled(True)
    tool_server.push(tool_call("remember", content="Is allergic to peanuts", category="constraint"), "Noted.",
                     tool_call("search_memory", query="allergies"), "Avoid peanuts.")
    client = AsyncOpenAI(base_url=tool_server.base_url, api_key="none", max_retries=0)
    agent = Agent(name="a", instructions="Be brief.", tools=memory_tools(mem, user="ana"),
                  model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client))
    session = ReverieSession(AsyncMemory(memory=mem), user="ana", session_id="chat")

    async def main() -> list[str]:
        first = await Runner.run(agent, "I'm allergic to peanuts", session=session)
        second = await Runner.run(agent, "What should I avoid?", session=session)
        return [str(first.final_output), str(second.final_output)]

    assert run(main) == ["Noted.", "Avoid peanuts."]
    assert [f.content for f in mem.facts(user="ana")] == ["Is allergic to peanuts"]
    items = run(session.get_items)
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call_output",
                                                        "message"] * 2
    requests = tool_server.chat_requests
    assert len(requests) == 4
    # the second run's first request carries the first run's history, read back from reverie
    history = requests[2].body["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert history[3]["content"].startswith("Remembered (fact_")
    assert "Is allergic to peanuts" in requests[3].body["messages"][-1]["content"]  # search found it
    assert [e.status for e in mem.episodes(user="ana", thread="chat")] == ["completed", "completed"]


def test_the_openai_agents_example_runs_against_a_scripted_server(tmp_path, tool_server):
    tool_server.push(tool_call("remember", content="Is allergic to peanuts", category="constraint"),
                     "Noted: no peanuts for you.",
                     tool_call("search_memory", query="allergies"),
                     "Skip anything with peanuts: you are allergic to them.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"PYTHONPATH": str(ROOT)}
    run_ = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_agents_chat.py"), str(tmp_path / "home"),
         "--base-url", tool_server.base_url, "--model", "fake-model"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert run_.returncode == 0, run_.stderr
    lines = run_.stdout.splitlines()
    assert lines[:6] == [
        "user: I am allergic to peanuts, please remember that.",
        'tool: remember({"content": "Is allergic to peanuts", "category": "constraint"})',
        "assistant: Noted: no peanuts for you.",
        "user: Which snacks should I avoid on the flight?",
        'tool: search_memory({"query": "allergies"})',
        "assistant: Skip anything with peanuts: you are allergic to them.",
    ]
    assert "session items: 8" in lines and "fact: Is allergic to peanuts" in lines
    # the memory tool really ran: its answer reached the model
    assert "Is allergic to peanuts" in tool_server.chat_requests[3].body["messages"][-1]["content"]
    with Memory(tmp_path / "home", background=False) as memory:
        assert len(memory.episodes(user="ana", thread="travel")) == 2


def test_the_readme_snippet_wires_an_agent_in_under_ten_lines(mem, tool_server):
    from agents import set_default_openai_api, set_default_openai_client
    from agents.models import _openai_shared

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Use with the OpenAI Agents SDK\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert len(code.splitlines()) < 10
    tool_server.push(tool_call("remember", content="Is allergic to peanuts", category="constraint"), "Noted.")
    saved = (_openai_shared.get_default_openai_client(), _openai_shared.get_use_responses_by_default())
    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=tool_server.base_url, api_key="none"), use_for_tracing=False)
    set_default_openai_api("chat_completions")  # the scripted server speaks chat completions
    try:
        scope: dict[str, Any] = {"mem": mem}  # what the quick start above defines
        exec(compile(code, "README.md", "exec"), scope)
    finally:
        _openai_shared.set_default_openai_client(saved[0])  # type: ignore[arg-type]
        _openai_shared.set_use_responses_by_default(saved[1])
    assert scope["result"].final_output == "Noted."
    assert [f.content for f in mem.facts(user="ana")] == ["Is allergic to peanuts"]
    assert len(run(scope["session"].get_items)) == 4


def test_a_session_moves_with_an_export_and_an_import(mem, tmp_path):
    session = ReverieSession(mem, user="ana", session_id="dinner")
    run(lambda: session.add_items(RUN))
    with Memory(tmp_path / "elsewhere", background=False) as other:
        other.import_(mem.export(user="ana"), user="ana")
        moved = ReverieSession(other, user="ana", session_id="dinner")
        assert run(moved.get_items) == RUN


def test_an_agents_forget_reaches_only_what_its_search_can_show(mem):
    travel = mem.remember("Passport expires in May", user="ana", agent="travel")
    shared = mem.remember("Is allergic to peanuts", user="ana", category="constraint")
    cook = {t.name: t for t in memory_tools(mem, user="ana", agent="cook")}
    assert "Passport" not in invoke(cook["search_memory"], query="passport")
    assert invoke(cook["forget_memory"], memory_id=travel.id).startswith("Not forgotten: no fact")
    assert mem.fact(travel.id).status == "consolidated"
    assert invoke(cook["forget_memory"], memory_id=shared.id) == f"Forgot ({shared.id}): {shared.content}"


def test_a_refused_session_id_is_not_repeated_in_the_error(tmp_path):
    mem = Memory(tmp_path / "home", background=False)
    try:
        with pytest.raises(InvalidInput) as refused:
            ReverieSession(mem, user="ana", session_id=EMAIL)
        assert EMAIL not in str(refused.value)
    finally:
        mem.close()


# ------------------------------------------------------------ pop_item, then a corrected answer
ASKED = user_msg("Book me a table for the weekend")
FIRST = answer("Booked a table at Tasca do Chico for Friday.", "msg_a")
CORRECTED = answer("Booked a table at Cervejaria Ramiro for Saturday.", "msg_b")


def said(mem: Memory, thread: str = "s") -> list[tuple[str, list[str]]]:
    """The thread's live episodes, oldest first: (status, their words)."""
    return [(e.status, [m.content for m in e.messages]) for e in reversed(mem.episodes(user="ana", thread=thread))]


def nowhere(mem: Memory, words: str) -> bool:
    """``words`` are in no episode of ana's, live or archived, and recall does not bring them."""
    episodes = mem.episodes(user="ana") + mem.episodes(user="ana", archived=True)
    stored = json.dumps([e.model_dump(mode="json") for e in episodes])
    return words not in stored and not any(words in item.text for item in mem.recall(words, user="ana").items)


@pytest.mark.parametrize("batches", [[[ASKED, FIRST]], [[ASKED], [FIRST]]], ids=["one batch", "two batches"])
def test_a_corrected_answer_after_pop_item_completes_the_same_exchange(mem, batches):
    """The SDK's correction: pop the answer, add another. One exchange of the user's message
    and the corrected answer, the popped one gone from it, and learned once, as corrected."""
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        for batch in batches:
            await session.add_items(batch)
        assert said(mem) == [("completed", [ASKED["content"], "Booked a table at Tasca do Chico for Friday."])]
        assert await session.pop_item() == FIRST
        assert await session.get_items() == [ASKED]
        # open again, for the answer to come: nothing of it is learned meanwhile
        assert said(mem) == [("pending", [ASKED["content"]])]
        assert mem.flush(user="ana") == 0
        assert nowhere(mem, "Tasca do Chico")
        await session.add_items([CORRECTED])
        assert await session.get_items() == [ASKED, CORRECTED]

    run(main)
    assert said(mem) == [("completed", [ASKED["content"], "Booked a table at Cervejaria Ramiro for Saturday."])]
    (episode,) = mem.episodes(user="ana", thread="s")
    assert (episode.user_text, episode.reply_text) == (ASKED["content"], CORRECTED["content"][0]["text"])
    assert mem.episodes(user="ana", thread="s", archived=True) == []
    assert mem.flush(user="ana") == 1
    assert nowhere(mem, "Tasca do Chico")
    assert "Cervejaria Ramiro" in mem.recall("Cervejaria Ramiro", user="ana").context


def test_a_runner_retrying_an_answer_after_pop_item_keeps_one_exchange(mem, tool_server):
    """With the real Runner: the reply is popped and the run retried on the history alone
    (input []); the model is asked without the popped answer, and its new one completes the
    exchange it answers."""
    set_tracing_disabled(True)
    tool_server.push("Booked for Friday.", "Booked for Saturday.")
    client = AsyncOpenAI(base_url=tool_server.base_url, api_key="none", max_retries=0)
    agent = Agent(name="a", instructions="Be brief.",
                  model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client))
    session = ReverieSession(AsyncMemory(memory=mem), user="ana", session_id="s")

    async def main() -> None:
        first = await Runner.run(agent, "Book me a table for the weekend", session=session)
        assert first.final_output == "Booked for Friday."
        popped = await session.pop_item()
        assert popped is not None and popped["role"] == "assistant"
        retried = await Runner.run(agent, [], session=session)
        assert retried.final_output == "Booked for Saturday."

    run(main)
    assert [m["role"] for m in tool_server.chat_requests[1].body["messages"]] == ["system", "user"]
    assert said(mem) == [("completed", ["Book me a table for the weekend", "Booked for Saturday."])]
    assert mem.flush(user="ana") == 1 and nowhere(mem, "Booked for Friday")


def test_pop_item_of_the_users_message_too_leaves_nothing_waiting(mem):
    """Popping the answer and then the question (to ask again): each item comes back to the
    caller, the emptied exchange is archived closed (no turn waits for a reply that will not
    come), and the question asked again begins an exchange of its own."""
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        await session.add_items(exchange(1) + [ASKED, FIRST])
        assert [await session.pop_item(), await session.pop_item()] == [FIRST, ASKED]
        assert await session.get_items() == exchange(1)
        await session.add_items([user_msg("Book me a table for Saturday"), CORRECTED])
        assert await session.get_items() == exchange(1) + [user_msg("Book me a table for Saturday"), CORRECTED]

    run(main)
    assert said(mem) == [("completed", ["question 1", "answer 1"]),
                         ("completed", ["Book me a table for Saturday", CORRECTED["content"][0]["text"]])]
    (emptied,) = mem.episodes(user="ana", thread="s", archived=True)
    assert (emptied.status, emptied.messages, emptied.meta[KEY]["items"]) == ("completed", [], [])
    assert mem.store.pending_turns() == []
    assert mem.flush(user="ana") == 2  # the two exchanges, not the emptied one
    assert nowhere(mem, "Tasca do Chico") and nowhere(mem, "weekend")


def test_an_answer_popped_after_it_was_learned_takes_its_summary_with_it(mem):
    """What the learning line drew from the popped answer (the episode's summary) leaves with
    it; the corrected answer completes the exchange and is recalled with it, not learned again."""
    session = ReverieSession(mem, user="ana", session_id="s")
    run(lambda: session.add_items([ASKED, FIRST]))
    assert mem.flush(user="ana") == 1
    assert "Tasca do Chico" in mem.episodes(user="ana", thread="s")[0].summary
    assert run(session.pop_item) == FIRST
    (episode,) = mem.episodes(user="ana", thread="s")
    assert (episode.status, episode.summary, episode.overview) == ("pending", "", "")
    run(lambda: session.add_items([CORRECTED]))
    assert said(mem) == [("completed", [ASKED["content"], "Booked a table at Cervejaria Ramiro for Saturday."])]
    assert mem.flush(user="ana") == 0
    assert nowhere(mem, "Tasca do Chico")
    assert "Cervejaria Ramiro" in mem.recall("Cervejaria Ramiro", user="ana").context


def test_a_reply_popped_from_another_doors_episode_is_corrected_in_it(mem):
    """An exchange written by another door (Memory.add) becomes the session's when its reply
    is popped: the corrected reply completes it too."""
    mem.add([{"role": "user", "content": "We moved billing to Postgres"},
             {"role": "assistant", "content": "Noted, MySQL it is."}], user="ana", thread="s")
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        assert await session.pop_item() == {"role": "assistant", "content": "Noted, MySQL it is."}
        await session.add_items([answer("Noted: billing runs on Postgres.")])
        assert await session.get_items() == [user_msg("We moved billing to Postgres"),
                                             answer("Noted: billing runs on Postgres.")]

    run(main)
    assert said(mem) == [("completed", ["We moved billing to Postgres", "Noted: billing runs on Postgres."])]
    assert nowhere(mem, "MySQL")


def test_an_exchange_closed_for_want_of_an_answer_still_takes_it(mem):
    """A run longer than reply_timeout_seconds: reverie closes the exchange with the user's
    words alone (reverie.unanswered); the answer, when it comes, completes that exchange (a
    late one) instead of beginning an episode of its own. So does a corrected answer to an
    exchange begun long before the pop."""
    session = ReverieSession(mem, user="ana", session_id="s")
    later = utcnow() + timedelta(hours=1)

    async def main() -> None:
        await session.add_items([ASKED])
        assert len(close_unanswered(mem.store, 1800, now=later)) == 1
        await session.add_items([RUN[2], RUN[3], FIRST])
        assert await session.get_items() == [ASKED, RUN[2], RUN[3], FIRST]
        assert await session.pop_item() == FIRST
        assert len(close_unanswered(mem.store, 1800, now=later + timedelta(hours=1))) == 1
        await session.add_items([CORRECTED])
        assert await session.get_items() == [ASKED, RUN[2], RUN[3], CORRECTED]

    run(main)
    assert said(mem) == [("completed", [ASKED["content"], CORRECTED["content"][0]["text"]])]
    assert mem.episodes(user="ana", thread="s")[0].meta["unanswered"] == "late"


def test_a_text_in_an_item_past_the_limit_is_refused_by_its_path(mem):
    session = ReverieSession(mem, user="ana", session_id="s")

    async def main() -> None:
        with pytest.raises(InvalidInput, match=r"items\[1\]\.output is 3,000,000 characters"):
            await session.add_items([user_msg("Read this page"),
                                     {"type": "function_call_output", "call_id": "c1", "output": "y" * 3_000_000}])
        assert await session.get_items() == []  # nothing of a refused batch was written

    run(main)
