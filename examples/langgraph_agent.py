"""A LangGraph agent whose long-term memory is reverie: a node remembers what the user asks
it to, another puts reverie's <memory> block into the prompt before the model answers.

    python examples/langgraph_agent.py [HOME]

Runs offline: the chat model is LangChain's own scripted fake model; reverie uses its
offline engine. Swap in any real chat model (ChatOpenAI, ChatOllama, ...) unchanged.
"""

from __future__ import annotations

import re
import sys
import tempfile
import uuid

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from reverie import Memory
from reverie.integrations.langgraph import ReverieStore, memory_block

REMEMBER = re.compile(r"^\s*remember(?: that)?\s+(.+)$", re.IGNORECASE)


def build(model: BaseChatModel) -> StateGraph:
    def remember(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, object]:
        """"Remember that ..." is stored as a memory of the user (a reverie fact)."""
        found = REMEMBER.match(str(state["messages"][-1].content))
        if found:
            user = config["configurable"]["user_id"]
            store.put(("memories", user), str(uuid.uuid4()), {"content": found.group(1), "category": "constraint"})
        return {}

    def respond(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, object]:
        block = memory_block(store, config["configurable"]["user_id"], str(state["messages"][-1].content))
        print(block)
        prompt = [SystemMessage(f"You are a helpful cook.\n{block}"), *state["messages"]]
        return {"messages": [model.invoke(prompt)]}

    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "respond")
    graph.add_edge("respond", END)
    return graph


def main(home: str) -> None:
    with Memory(home, background=False) as memory:
        store = ReverieStore(memory)
        model = GenericFakeChatModel(messages=iter([
            AIMessage("Noted: no meat for you."),
            AIMessage("A spicy chickpea curry, with no meat."),
        ]))
        app = build(model).compile(store=store)
        config: RunnableConfig = {"configurable": {"user_id": "ana"}}
        for text in ("Remember that I am vegetarian", "What should I cook tonight?"):
            print(f"user: {text}")
            state = app.invoke({"messages": [HumanMessage(text)]}, config)
            print(f"assistant: {state['messages'][-1].content}")
        for item in store.search(("memories", "ana"), query="is ana vegetarian?", limit=3):
            print(f"found {item.score:.2f}  {item.value['content']}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="reverie-langgraph-"))
