"""Adapters for agent frameworks, each behind an optional extra (``pip install 'reverie[langchain]'``)."""
