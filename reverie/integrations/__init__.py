"""Adapters for agent frameworks, each behind an optional extra; each module imports its
framework at the top, and reverie's core never imports them.

- :mod:`reverie.integrations.langchain` (``pip install 'reverie[langchain]'``): a chat-message
  history per user thread and a retriever over recall.
- :mod:`reverie.integrations.langgraph` (``pip install 'reverie[langgraph]'``): ``ReverieStore``,
  a LangGraph ``BaseStore`` whose items are a user's facts (namespaces ``("memories", user)``
  and ``("memories", user, agent)``) and whose search is recall; ``memory_block`` for a node.
- :mod:`reverie.integrations.openai_agents` (``pip install 'reverie[openai-agents]'``):
  ``ReverieSession``, an Agents SDK session kept as reverie episodes, and ``memory_tools``
  (remember, search, forget) for an agent.
"""
