"""Input checks and normalisation: every value a caller hands reverie is checked here.

The doors (Python API, CLI, REST, MCP) and the lines all use these functions, so
one value is judged the same way wherever it enters. A bad value raises
:class:`~reverie.errors.InvalidInput` naming the field; nothing is written.

Values that become part of a file path are the strictest:

- a **user id** is 1-64 characters: letters and digits of any script, ``_``,
  ``-`` and ``.``, starting with a letter or a digit (so ``.``, ``..``, slashes,
  NUL and control characters never reach a path);
- a **date** is a real calendar day written ``YYYY-MM-DD``.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import re
import unicodedata
from datetime import datetime
from typing import Any, Callable, Iterable, overload

from reverie import redact as _redact
from reverie.errors import InvalidInput
from reverie.models import CATEGORIES, MAX_BUDGET, as_utc, check_day
from reverie.text import normalize_space

USER_MAX = 64
# threads, agents, projects, speakers, roles, message ids, tags: short labels
LABEL_MAX = 200
# the tags a caller puts on one item, and a feedback's reason
MAX_TAGS = 32
MAX_KNOWLEDGE_CHARS = 100_000  # a knowledge document's body, at most
MAX_REASON_CHARS = 2000
_USER_RE = re.compile(r"[^\W_][\w.-]*")
# control characters other than tab and line breaks carry no meaning in memory text
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# half of a UTF-16 pair: valid in a JSON string ("\ud800"), but no text can hold it
_SURROGATE = re.compile("[\ud800-\udfff]")
# Invisible characters that only split a word: "喜欢\u200b喝茶" is stored as "喜欢喝茶", so that it is the
# same fact and a search for 喝茶 finds it. The joiners (ZWNJ, ZWJ) shape emoji sequences (👩\u200d💻)
# and scripts (Persian, Devanagari): they stay between two other characters, and go next to ASCII, Han,
# kana, Hangul, a space or the text's edge, where they join nothing.
_ZERO_WIDTH = re.compile(r"[\u200b\u2060\ufeff]+")
_JOINS_NOTHING = r"\s\x00-\x7f\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
_IDLE_JOINER = re.compile(rf"(?:^|(?<=[{_JOINS_NOTHING}]))[\u200c\u200d]+|[\u200c\u200d]+(?=[{_JOINS_NOTHING}]|$)")

__all__ = [
    "LABEL_MAX",
    "MAX_KNOWLEDGE_CHARS",
    "USER_MAX",
    "check_budget",
    "check_category",
    "check_confidence",
    "check_date",
    "check_id",
    "check_json",
    "check_messages",
    "check_moment",
    "check_query",
    "check_reason",
    "check_tags",
    "check_text",
    "check_time",
    "check_unicode",
    "check_user",
    "clean_fact",
    "clean_id",
    "clean_label",
    "clean_text",
    "fit_label",
    "normalize_category",
]


def check_unicode(value: str, field: str) -> str:
    """Text that can be stored and sent back: no lone UTF-16 surrogate."""
    found = _SURROGATE.search(value)
    if found is not None:
        raise InvalidInput(
            f"{field} holds an unpaired surrogate (\\u{ord(found.group()):04x}) at character {found.start()}: "
            "not valid Unicode text",
            field=field,
        )
    return value


def check_user(user: Any) -> str:
    """A user id from the safe alphabet (see the module docstring), surrounding blanks removed."""
    if not isinstance(user, str) or not user.strip():
        raise InvalidInput("user is required: pass user='name'", field="user")
    name = user.strip()
    if len(name) > USER_MAX or not _USER_RE.fullmatch(name) or not name.isprintable():
        raise InvalidInput(
            f"user {name[:40]!r} is not a valid user id: 1-{USER_MAX} letters, digits, '_', '-' or '.', "
            "starting with a letter or digit",
            field="user",
        )
    return name


def check_date(value: Any, field: str = "date") -> str:
    """A real calendar day as ``YYYY-MM-DD``."""
    try:
        return check_day(value)
    except ValueError as exc:
        raise InvalidInput(f"{field}: {exc}", field=field) from exc


def shows_something(text: str) -> bool:
    """Whether ``text`` has a character that shows: not only spaces and invisible marks
    (zero-width joiners, a byte order mark)."""
    return any(unicodedata.category(c)[0] not in "CZ" for c in text)


# a message, a reply or any other text at most (every door: the HTTP one's body limit comes
# first there, the Python API and MCP over stdio have only this); README "Limits"
MAX_TEXT_CHARS = 1_000_000


def clean_text(text: Any, field: str) -> str:
    r"""Required text, stripped, without zero-width characters that split no script, and redacted;
    at most :data:`MAX_TEXT_CHARS` characters.

    >>> clean_text("喜欢\u200b喝茶，电话13812345678", "content")
    '喜欢喝茶，电话[phone]'
    """
    return clean_text_and_secrets(text, field)[0]


# a secret taken out of one message is taken out of the others written with it where it is
# repeated with nothing around it to mark it (an agent's "Got it, I saved Geheim!42"): one of
# at least this many characters, so that a short PIN's digits do not take every such number
ECHO_MIN_CHARS = 6
Secrets = dict[str, str]  # a secret as it was said -> its placeholder


def clean_text_and_secrets(text: Any, field: str) -> tuple[str, Secrets]:
    """:func:`clean_text`, and the secrets it took out (of :data:`ECHO_MIN_CHARS` at least),
    to be taken out where another message repeats them (:func:`without_secrets`). They are
    held in memory only, never stored."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be text, not {type(text).__name__}", field=field)
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInput(f"{field} is {len(text):,} characters; at most {MAX_TEXT_CHARS:,} are taken (store a long "
                           "document as knowledge, in parts, or as a file's conversation)", field=field)
    stripped = _CONTROL.sub("", check_unicode(text, field)).strip()
    if not shows_something(stripped):
        # only spaces and invisible marks (zero-width joiners, a byte order mark): it shows nothing
        raise InvalidInput(f"{field} is empty" if not stripped else f"{field} shows nothing (invisible characters "
                           "only)", field=field)
    plain = _IDLE_JOINER.sub("", _ZERO_WIDTH.sub("", stripped))
    found = _redact.find_sensitive(plain)
    if not found:  # (most text: found once, not twice)
        return plain.strip(), {}
    said = (plain[f.start:f.end].strip() for f in found)
    secrets = {value: f.placeholder for f, value in zip(found, said) if len(value) >= ECHO_MIN_CHARS}
    return _redact.redact(plain).strip(), secrets


def without_secrets(text: str, secrets: Secrets) -> str:
    """``text`` with each of ``secrets`` (from :func:`clean_text_and_secrets` of another
    message) replaced by its placeholder where it stands whole (not inside a longer word). A
    number (a phone's, a card's) is known by its digits, however they are grouped: "0171
    2345678" said, "01712345678" repeated."""
    for value, placeholder in secrets.items():
        digits = re.sub(r"\D", "", value)
        if len(digits) >= ECHO_MIN_CHARS and len(digits) * 2 >= len(value):
            if digits[:3] in re.sub(r"\D", "", text):  # (the pattern is built only for a text that may hold it)
                grouped = r"[\s./()-]?".join(re.escape(d) for d in digits)
                text = re.sub(rf"(?<![\w+]){grouped}(?!\w)", placeholder, text)
        elif value in text:
            text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", placeholder, text)
    return text


def clean_fact(text: Any, field: str, limit: int) -> str:
    """A fact's one line: required, redacted, blanks folded, at most ``limit`` characters."""
    content = normalize_space(clean_text(text, field))
    if _redact.only_placeholders(content):
        # "[api-key]" alone remembers nothing, and looks stored
        raise InvalidInput(f"{field} holds nothing but sensitive data ({content[:60]}), which memory never keeps",
                           field=field)
    if len(content) > limit:
        raise InvalidInput(
            f"{field} is {len(content)} characters; a fact is one line of at most {limit} "
            "(max_fact_chars): store long text as knowledge or as a conversation",
            field=field,
        )
    return content


def check_text_lengths(value: Any, field: str) -> None:
    """Refuse a text anywhere in a JSON document (a framework's value, a tool's output) longer
    than any text reverie takes: kept as given, it would pass the limit every other door holds.
    ``field`` names the document; the error names the text's path in it (``value.blob``)."""
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and len(item) > MAX_TEXT_CHARS:
            raise InvalidInput(f"{path} is {len(item):,} characters; at most {MAX_TEXT_CHARS:,} are taken",
                               field=field)
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{n}]") for n, v in enumerate(item))


def check_json(value: Any, limit: int, *, setting: int | None = None) -> None:
    """Refuse a JSON document nested deeper than ``limit``, or holding text that is not valid
    Unicode; the field is named as a path (``facts[2].content``). Walked without recursion, and
    a path is spelled only for the field it names. ``setting``: the max_import_depth to name
    when ``limit`` is what is left of it below an outer level."""
    # a node's place is (its parent's place, key or index), spelled out by _json_path
    stack: list[tuple[Any, int, _Place]] = [(value, 1, None)]
    while stack:
        item, depth, place = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                check_unicode(item, _json_path(place))
            continue
        if isinstance(item, dict):
            children: list[tuple[Any, int, _Place]] = []
            for k, v in item.items():
                key = str(k)
                if not key.isascii():
                    check_unicode(key, _json_path(place))
                children.append((v, depth + 1, (place, key)))
        elif isinstance(item, list):
            children = [(v, depth + 1, (place, i)) for i, v in enumerate(item)]
        else:
            continue
        if depth > limit:
            where = _json_path(place)
            raise InvalidInput(f"{where} is nested deeper than max_import_depth ({setting or limit} levels)",
                               field=where)
        stack.extend(children)


_Place = tuple[Any, "str | int"] | None


def _json_path(place: _Place) -> str:
    """``facts[2].content`` for a place of :func:`check_json` (``$`` is the document)."""
    steps: list[str | int] = []
    while place is not None:
        place, step = place
        steps.append(step)
    path = "$"
    for step in reversed(steps):
        path = f"{path}[{step}]" if isinstance(step, int) else f"{path}.{step}".removeprefix("$.")
    return path


def check_confidence(value: Any) -> float:
    """A confidence in 0..1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidInput("confidence must be a number between 0 and 1", field="confidence")
    return float(value)


def check_flag(value: Any, field: str) -> bool:
    """A true/false argument: a bool, nothing else (the string "false" is no False)."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false", field=field)
    return value


def check_budget(value: Any) -> int | None:
    """A token budget: a whole number of tokens from 1 to :data:`MAX_BUDGET`, or None for the
    configured one."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUDGET):
        raise InvalidInput(f"budget must be a whole number of tokens from 1 to {MAX_BUDGET:,}", field="budget")
    return value


def check_query(value: Any) -> str:
    """The message recall is asked about: non-empty, valid text (not redacted: it is not stored)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("query is empty: recall needs the new message", field="query")
    if len(value) > MAX_TEXT_CHARS:  # as every other text (recall reads max_query_chars of it)
        raise InvalidInput(f"query is {len(value):,} characters; at most {MAX_TEXT_CHARS:,} are taken", field="query")
    return check_unicode(value, "query")


@overload
def clean_label(value: None, field: str) -> None: ...
@overload
def clean_label(value: str, field: str) -> str: ...
@overload
def clean_label(value: object, field: str) -> str | None: ...
def clean_label(value: object, field: str) -> str | None:
    """Threads, agents, speakers, roles, projects: short labels, stored without secrets."""
    text = _short_text(value, field, "a label", numbers=False)
    return None if text is None else _redact.redact_label(text)


def fit_label(text: str) -> str:
    """A label an engine answered (a scene, an intent, a keyphrase), as one is stored:
    redacted and at most :data:`LABEL_MAX` characters, whatever the engine said."""
    return _redact.redact_label(text)[:LABEL_MAX]


def check_id(value: object, field: str) -> str | None:
    """An id as text: text or a whole number, control characters dropped, at most
    :data:`LABEL_MAX` characters (:func:`clean_id` then keeps personal data out of it)."""
    return _short_text(value, field, "an id", numbers=True)


def _short_text(value: object, field: str, what: str, *, numbers: bool) -> str | None:
    """A label's or an id's text: text (or, with ``numbers``, a whole number), valid Unicode,
    control characters dropped, blanks trimmed, at most :data:`LABEL_MAX` characters."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int) if numbers else str):
        raise InvalidInput(f"{field} must be text, not {type(value).__name__}", field=field)
    text = _CONTROL.sub("", check_unicode(str(value), field)).strip()
    if len(text) > LABEL_MAX:
        raise InvalidInput(f"{field} is {len(text):,} characters; {what} is at most {LABEL_MAX}", field=field)
    return text


def clean_id(value: object, field: str, salt: Callable[[], bytes]) -> str | None:
    """A thread, agent, project or source id: text (or a whole number) of at most
    :data:`LABEL_MAX` characters, kept as given so that it finds its items again. An id that
    holds what redaction strips (a phone number as a thread id, a token as a message id)
    becomes a pseudonym instead: what redaction leaves, ``#`` and a digest keyed by the
    install's secret ``salt()`` (``[phone]#3f9a0c1d2b4e``). The same id gives the same
    pseudonym, so a lookup by it still finds its items and two such ids stay two; the value
    itself is not stored."""
    text = check_id(value, field)
    if text is None:
        return None
    kept = _redact.redact_label(text)
    if kept == text:
        return text
    return f"{kept}#{hmac.new(salt(), text.encode('utf-8'), hashlib.sha256).hexdigest()[:12]}"


def check_text(value: Any, field: str) -> str | None:
    """An optional text argument (a filter, a category, an id)."""
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{field} must be text, not {type(value).__name__}", field=field)
    return check_unicode(value, field) if value is not None else None


def check_time(value: Any, field: str) -> datetime | None:
    """A datetime, or an ISO 8601 string; naive times are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            shown = value if len(value) <= 80 else value[:80] + "…"  # a message, not an echo of any length
            raise InvalidInput(f"{field} is not an ISO date-time: {shown!r}", field=field) from exc
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a date-time, not {type(value).__name__}", field=field)
    try:
        return as_utc(value)
    except OverflowError as exc:  # the first or last hours of the calendar, in another zone than UTC
        raise InvalidInput(f"{field} is out of the range of dates: {value!r}", field=field) from exc


def check_moment(value: Any, field: str) -> datetime | None:
    """:func:`check_time`, in the time zone it was given in (UTC for a naive time): the
    instant is the same, and "yesterday" or "today" in a message are that zone's days."""
    when = check_time(value, field)
    given = value if isinstance(value, datetime) else None
    if when is None or given is None or given.tzinfo is None:
        return when
    return when.astimezone(given.tzinfo)


def check_messages(messages: Any) -> list[Any]:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Iterable):
        raise InvalidInput("messages must be a list of messages", field="messages")
    return list(messages)


def check_tags(tags: Any) -> list[str]:
    """Feature tags a caller gives: at most :data:`MAX_TAGS` of at most :data:`LABEL_MAX`
    characters each."""
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags must be a list of words", field="tags")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"tags holds {len(tags)} tags; an item takes at most {MAX_TAGS}", field="tags")
    for tag in tags:
        check_unicode(tag, "tags")
        if len(tag) > LABEL_MAX:
            raise InvalidInput(f"a tag is at most {LABEL_MAX} characters, not {len(tag):,}", field="tags")
    return tags


def check_reason(value: Any) -> str:
    """Why a person gave feedback: optional text of at most :data:`MAX_REASON_CHARS`."""
    text = check_text(value, "reason") or ""
    if len(text) > MAX_REASON_CHARS:
        raise InvalidInput(f"reason is {len(text):,} characters; at most {MAX_REASON_CHARS:,}", field="reason")
    return text


def check_category(category: str | None) -> tuple[str, str | None]:
    """A category a person typed: :func:`normalize_category`, except that a near miss of a
    known category ("prefrence") is an error suggesting it; a category of one's own
    ("beverages") is kept as ``other`` with the original."""
    value = (check_text(category, "category") or "other").strip()
    if value.lower() not in CATEGORIES:
        near = difflib.get_close_matches(value.lower(), CATEGORIES, n=1, cutoff=0.8)
        if near:
            raise InvalidInput(f"unknown category {value!r}: did you mean {near[0]!r}? "
                               f"(one of {', '.join(CATEGORIES)})", field="category")
    return normalize_category(value)


def normalize_category(category: str | None) -> tuple[str, str | None]:
    """(category, original): an unknown category is stored as other, the original kept (at
    most :data:`LABEL_MAX` characters: a label, whatever an engine answered)."""
    value = _redact.redact((check_text(category, "category") or "other").strip())
    low = value.lower()
    if low in CATEGORIES:
        return low, None
    return "other", value[:LABEL_MAX]
