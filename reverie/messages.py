"""Messages: what a caller hands reverie as conversation, read one way everywhere.

``parse_message`` turns a dict / :class:`Message` / plain string into a checked,
redacted :class:`Message`; ``group`` cuts a conversation into exchanges (a message
and the replies to it). :meth:`Memory.add`, ingest and the daily notes of
:meth:`Memory.trim` all use them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Iterable

from reverie.errors import InvalidInput
from reverie.inputs import Secrets, check_id, check_time, clean_label, clean_text_and_secrets, without_secrets
from reverie.models import AGENT_ROLES, Message
from reverie.text import token_set

# one message as a caller hands it: a dict, a Message, or a plain string from the user
RawMessage = dict[str, Any] | Message | str
Messages = Iterable[RawMessage]

# where a message may carry its time, first found wins
TIME_FIELDS = ("at", "timestamp", "created_at", "time")
# a speaker field that names a role, not a person
# a transcript's speaker that names a role, not a person ("User:", "用户：")
ROLE_NAMES = {**{r: r for r in AGENT_ROLES}, "user": "user", "human": "user", "ai": "assistant",
              "model": "assistant", "用户": "user", "人类": "user", "助手": "assistant", "助理": "assistant",
              "系统": "system", "机器人": "bot"}
TRIVIAL = re.compile(
    r"^\s*(ok(ay)?|k|thanks?( you)?|thx|ty|cool|nice|great|got it|sure|yes|yep|no|nope|hi|hello|hey|bye|"
    r"好的?|好|嗯+|哦+|谢谢|多谢|收到|行|可以|对|是的|拜拜|你好)\s*[.!?。！？~～]*\s*$",
    re.IGNORECASE,
)


def is_trivial(text: str) -> bool:
    """"ok", "thanks", "好的": a message with nothing to remember."""
    return bool(TRIVIAL.match(text)) or not token_set(text)


def clip(text: str, limit: int) -> str:
    """Very long messages keep their head and tail (where the point usually is)."""
    if len(text) <= limit:
        return text
    half = max(1, (limit - 5) // 2)
    return f"{text[:half]} […] {text[-half:]}"


def parse_message(raw: Any, index: int, at: datetime | None) -> Message:
    """``messages[index]`` as a checked Message: ``{role|speaker, content|text,
    at|timestamp|created_at|time?, source_id|dia_id|id?}``, a Message, or a plain string
    from the user."""
    return parse_message_and_secrets(raw, index, at)[0]


def parse_messages(raws: Iterable[Any], at: datetime | None) -> list[Message]:
    """Messages written together, each parsed (:func:`parse_message`), and a secret taken out
    of one taken out of the others where they repeat it: the agent's "Saved Geheim!42 for you"
    after "my wifi password is Geheim!42"."""
    parsed: list[Message] = []
    secrets: Secrets = {}
    for index, raw in enumerate(raws):
        message, found = parse_message_and_secrets(raw, index, at)
        parsed.append(message)
        secrets.update(found)
    return without_echoes(parsed, secrets)


def without_echoes(messages: list[Message], secrets: Secrets) -> list[Message]:
    """``messages`` with ``secrets`` (what redaction took out of any of them) taken out of
    each where it is repeated (:func:`reverie.inputs.without_secrets`)."""
    if not secrets:
        return messages
    return [m if (content := without_secrets(m.content, secrets)) == m.content else m.model_copy(update={"content": content})
            for m in messages]


def parse_message_and_secrets(raw: Any, index: int, at: datetime | None) -> tuple[Message, Secrets]:
    """:func:`parse_message`, and the secrets redaction took out of its content (see
    :func:`reverie.inputs.clean_text_and_secrets`)."""
    field = f"messages[{index}]"
    if isinstance(raw, Message):
        data = raw.model_dump()
    elif isinstance(raw, str):
        data = {"role": "user", "content": raw}
    elif isinstance(raw, dict):
        data = dict(raw)
        data.setdefault("content", data.pop("text", None))
        if "source_id" not in data:
            data["source_id"] = data.pop("dia_id", None) or data.pop("id", None)
    else:
        raise InvalidInput(f"{field} must be an object with content, not {type(raw).__name__}", field=field)
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise InvalidInput(f"{field}.content must be text, not {type(content).__name__}", field=f"{field}.content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"{field}.content is missing or empty", field=f"{field}.content")
    speaker = data.get("speaker")
    # a speaker named by a role and no role ({"speaker": "assistant"}): that role, no name (the
    # agent's message is no person's, and "user: ..." names nobody)
    named_role = ROLE_NAMES.get(speaker.strip().lower()) if isinstance(speaker, str) and not data.get("role") else None
    if isinstance(speaker, str) and speaker.strip() == "Ai":
        named_role = None  # "AI:" is the agent, but Ai is also a person's name
    if named_role is not None:
        speaker = None
    given = data.get("role")
    # a role as frameworks spell it ("User", LangChain's "human" / "ai", Gemini's "model")
    role = (ROLE_NAMES.get(given.strip().lower(), given) if isinstance(given, str) else given) or named_role or (
        "user" if not speaker else "speaker")
    stamp = next((name for name in TIME_FIELDS if data.get(name) is not None), "at")
    when = check_time(data.get(stamp), f"{field}.{stamp}") or at
    text, secrets = clean_text_and_secrets(content, f"{field}.content")
    return Message(
        role=clean_label(str(role), f"{field}.role"),
        speaker=clean_label(speaker, f"{field}.speaker"),
        content=text,
        at=when,
        source_id=check_id(data.get("source_id"), f"{field}.source_id") or None,
    ), secrets


def as_line(message: Message) -> str:
    """The message as one line of a transcript (``Speaker: text``)."""
    return f"{message.speaker}: {message.content}" if message.speaker else message.content


def group(messages: list[Message], mode: str) -> list[list[Message]]:
    """Exchanges: a new group starts at each message from the side that opened the
    conversation, once the other side has spoken. ``mode="message"``: one group each."""
    if mode == "message":
        return [[m] for m in messages]
    if mode != "exchange":
        raise InvalidInput("group must be 'exchange' or 'message'", field="group")
    opener = _side(messages[0])
    groups: list[list[Message]] = []
    for m in messages:
        if not groups or (_side(m) == opener and any(_side(x) != opener for x in groups[-1])):
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def _side(message: Message) -> str:
    return message.speaker or message.role
