"""Daily notes: one line per event of a user's day, written from one place.

The learning line adds a line for each learned exchange, ``Memory.trim`` adds
the exchanges a host agent dropped from its context window, and each day's
markdown view (``<home>/users/<user>/memory/YYYY-MM-DD.md``) is rendered from
the store, which is the truth.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from datetime import datetime
from typing import Any, Iterable

from reverie.context import Context
from reverie.engines.base import SummarizeRequest
from reverie.errors import InvalidInput, ReverieError
from reverie.files import UserFiles
from reverie.inputs import clean_id
from reverie.messages import clip, group, is_trivial, parse_message
from reverie.models import AGENT_ROLES, Episode, Message, Note, as_utc, digest, utcnow
from reverie.redact import redact
from reverie.store.base import Store, meta_record
from reverie.text import exact_key, has_cjk, normalize_space, preferred_language, token_set

log = logging.getLogger("reverie")


def render_day(date: str, lines: Iterable[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"# {date}\n\n{body}\n"


# the days whose markdown file could not be written: {"dates": [...], "error", "last_at"}
UNWRITTEN_META = "notes-unwritten:{user}"


def mirror_notes(store: Store, files: UserFiles, user: str, dates: Iterable[str]) -> None:
    """Rewrite the markdown file of each given day from the store (with a shared store, only
    when there is a mirror folder to write it to), and of each day an earlier call could not
    write; a day left with no line loses its file. The store holds the notes: a file that
    cannot be written (a folder another owner made, a full disk) is logged and counted in
    ``health``, and never undoes what the caller committed; a later call writes it."""
    if not files.keeps_views:
        return
    record = unwritten_notes(store, user)
    unwritten: set[str] = set()
    error = ""
    for date in sorted(set(dates) | set(record.get("dates", []))):
        lines = store.note_lines(user, date)
        try:
            if lines:
                files.write(user, files.notes_file(user, date), render_day(date, lines), durable=False)
            else:  # a day whose last line was deleted (an episode, a note moved by an import)
                files.remove_view(user, files.notes_file(user, date))
        except (OSError, ReverieError) as exc:
            unwritten.add(date)
            error = str(exc)
    if unwritten:
        log.warning("the notes of %d day(s) of %s could not be written (they are in the store): %s",
                    len(unwritten), user, error)
        record = {"dates": sorted(unwritten), "error": redact(error)[:300], "last_at": utcnow().isoformat()}
    elif not record:
        return
    else:
        record = {}
    with store.transaction():
        store.set_meta(UNWRITTEN_META.format(user=user), json.dumps(record, sort_keys=True) if record else "")


def unwritten_notes(store: Store, user: str) -> dict[str, Any]:
    """The days of ``user`` whose markdown file the last try could not write ({} when none)."""
    return meta_record(store, UNWRITTEN_META.format(user=user))


# a note line drawn from a message is at most this long (head and tail kept)
NOTE_CHARS = 240
# "User: ", "Caroline: ", "用户：": who a note line says spoke
_LABEL = re.compile(r"^[^:：\n]{1,40}[:：]\s*")
# a sentence: up to . ! ? before a space or the end ("3.12" stays whole), 。！？ or a line break
_SENTENCE = re.compile(r"[^.!?。！？\n]+(?:[.!?]+(?=[^\s.!?])[^.!?。！？\n]*)*[.!?。！？]*")


def put_episode_notes(store: Store, user: str, episodes: Iterable[Episode]) -> None:
    """A line for each learned exchange: what the user said and did (inside the caller's
    transaction; mirror the days afterwards). Small talk gets no line."""
    for ep in episodes:
        # every person in it, not only who opened it: "How are you?" may get "I just moved to Porto"
        if not ep.summary or _tell_nothing(_people(ep.messages)):
            continue
        content, drawn = ep.summary, ep.summary_from
        first = next((i for i, m in enumerate(ep.messages) if m.role not in AGENT_ROLES), None)
        if first is not None and drawn and all(ep.messages[i].role in AGENT_ROLES for i in drawn):
            # the day's notes tell what the user said and did, not the agent's answer
            message = ep.messages[first]
            content = f"{message.speaker or 'User'}: {clip(normalize_space(message.content), NOTE_CHARS)}"
            drawn = [first]
        else:
            content = _whole_sentence(content, [ep.messages[i].content for i in drawn if i < len(ep.messages)])
        store.put_note(
            Note(
                user=user,
                date=ep.occurred_at.date().isoformat(),
                content=content,
                episodes=[ep.id],
                source_ids=ep.sources_of(drawn),
            )
        )


def _whole_sentence(line: str, sources: list[str]) -> str:
    """A line drawn from one clause of a sentence that a semicolon splits ("User: ...it was a
    misdiagnosis;" of "...; it's cashews I'm allergic to."): that sentence as it was said (in
    ``sources``) under the line's speaker label, for the other clause often carries the point.
    Any other line as it is."""
    label = _LABEL.match(line)
    said = line[label.end():].strip() if label else ""
    if label is None or not said:
        return line
    # the line's last word, as its message says it (a summary rewords at most its head)
    tail = said[-4:] if has_cjk(said[-4:]) else said.split()[-1]
    for source in sources:
        sentence = next((s for s in _SENTENCE.findall(source) if tail in normalize_space(s)), None)
        if sentence is None:
            continue
        whole = normalize_space(sentence).rstrip(" .!。！")
        if whole != said and any(mark in whole for mark in ";；"):
            return clip(label.group(0) + whole, NOTE_CHARS)
        return line
    return line


# ---------------------------------------------------------------- small talk

# words that carry nothing to remember on their own: reactions, greetings, passing moods
_CHIT_CHAT_WORDS = (
    "lol lmao rofl haha hahaha hehe heh hmm hm wow whoa yay oops ugh aww funny hilarious interesting fun "
    "lovely sweet neat fair enough true right fine perfect excellent fantastic wonderful brilliant crazy weird "
    "sense sounds agree agreed worries welcome morning afternoon night day bye goodbye cheers later tomorrow "
    "bored sleepy hungry tired 哈哈 哈哈哈 呵呵 嘿嘿 早上好 晚上好 早安 晚安 有意思 有趣 好笑 好玩 无聊 厉害 不错 再见 拜拜"
)


@functools.cache
def _chit_chat() -> frozenset[str]:
    """The small-talk words as terms, made on first use: their Chinese words load jieba's
    dictionary (half a second), which a command that never reads a message should not pay."""
    return frozenset(token_set(_CHIT_CHAT_WORDS))


def is_small_talk(text: str) -> bool:
    """A message that tells nothing: each of its sentences is a reaction, a greeting or a
    passing mood ("lol that's funny", "good night", "I'm bored"). A question or a request
    is no small talk: what a person asks about ("can I take ibuprofen with warfarin?",
    "should I take the offer from globex?") is theirs to remember."""
    said = [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
    return bool(said) and all(token_set(s) <= _chit_chat() for s in said)


def _people(messages: Iterable[Message]) -> list[Message]:
    return [m for m in messages if m.role not in AGENT_ROLES]


def _tell_nothing(messages: list[Message]) -> bool:
    """Each of the messages is trivial or small talk (so are none)."""
    return all(is_trivial(m.content) or is_small_talk(m.content) for m in messages)


def trim(ctx: Context, messages: list[Any], *, user: str, thread: str = "default",
         at: datetime | None = None) -> list[Note]:
    """The host agent dropped ``messages`` from its context window: keep them as daily notes.

    Each exchange becomes one line for the day it happened, written by the
    summarize engine and redacted. Reporting the same messages again for the
    same thread adds nothing. Returns the new note lines.
    """
    msgs = [parse_message(m, i, at) for i, m in enumerate(messages)]
    if not msgs:
        raise InvalidInput("messages is empty: nothing to trim", field="messages")
    language = preferred_language(" ".join(m.content for m in msgs))
    limit = ctx.settings.max_message_chars
    now = utcnow()
    existing: dict[str, list[Note]] = {}
    todo: dict[str, tuple[str, datetime, list[Message]]] = {}  # marker -> (day, when, exchange)
    for exchange in group(msgs, "exchange"):
        people = _people(exchange)
        if all(is_trivial(m.content) for m in exchange) or (people and _tell_nothing(people)):
            continue
        when = max((as_utc(m.at) for m in exchange if m.at), default=now)
        day = when.date().isoformat()
        marker = f"trim:{thread}:{digest([m.content for m in exchange])[:16]}"
        if day not in existing:
            existing[day] = ctx.store.list_notes(user, since=day, until=day)
        if marker in todo or any(marker in n.source_ids for n in existing[day]):
            continue
        todo[marker] = (day, when, exchange)
    requests = {
        marker: SummarizeRequest(messages=[m.model_copy(update={"content": clip(m.content, limit)}) for m in exchange],
                                 language=language)
        for marker, (_, _, exchange) in todo.items()
    }
    with ctx.engines.summarizing(requests) as summarized:
        answers = summarized()
    notes: list[Note] = []
    for marker, (day, when, exchange) in todo.items():
        line = _whole_sentence(normalize_space(redact(answers[marker].summary)), [m.content for m in exchange])
        if not line or any(exact_key(n.content) == exact_key(line) for n in existing[day]):
            continue
        ids = [clean_id(m.source_id, "source_id", ctx.store.salt) or "" for m in exchange if m.source_id]
        note = Note(user=user, date=day, content=line, created_at=when, source_ids=[*ids, marker])
        notes.append(note)
        existing[day].append(note)
    if notes:
        with ctx.store.transaction():
            for note in notes:
                ctx.store.put_note(note)
        mirror_notes(ctx.store, ctx.files, user, {n.date for n in notes})
    return notes
