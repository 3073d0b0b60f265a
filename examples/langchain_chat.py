"""A LangChain chat whose history lives in reverie, and a retriever over what it learned.

    python examples/langchain_chat.py [HOME]

Runs offline: the chat model is LangChain's own scripted fake model; reverie uses its
offline engine. Swap in any real chat model (ChatOpenAI, ChatOllama, ...) unchanged.
"""

from __future__ import annotations

import sys
import tempfile

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from reverie import Memory
from reverie.integrations.langchain import ReverieChatMessageHistory, ReverieRetriever


def main(home: str) -> None:
    with Memory(home, background=False) as memory:
        model = FakeListChatModel(responses=["Noted: Lisbon in May.", "You said Lisbon, in May."])
        prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
        chain = prompt | model
        history = ReverieChatMessageHistory(memory, user="ana", thread="travel")
        for text in ("I am moving to Lisbon in May", "Where am I moving?"):
            answer = chain.invoke({"history": history.messages, "input": text})
            history.add_messages([HumanMessage(content=text), answer])
            print(answer.content)
        memory.flush()  # learn now instead of after the debounce
        for doc in ReverieRetriever(memory=memory, user="ana", k=3).invoke("where is ana moving to?"):
            print(f"{doc.metadata['kind']:8} {doc.metadata['score']:.2f}  {doc.page_content}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="reverie-langchain-"))
