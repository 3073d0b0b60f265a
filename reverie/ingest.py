"""Reading conversations from files: JSON, JSONL, 'Speaker: text' lines, LoCoMo;
and recognising input that is already stored.

Every format becomes a list of :class:`Conversation` whose messages
:meth:`Memory.add` takes as they are. Adding the same input twice stores it once:
:func:`skip_known` drops what an earlier add already stored, and :class:`Added`
tells the caller how much that was.
"""

from __future__ import annotations

import codecs
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel, Field

from reverie.claims import fact_relation
from reverie.errors import InvalidInput
from reverie.inputs import Secrets, check_messages, clean_id
from reverie.messages import ROLE_NAMES, Messages, RawMessage, as_line, parse_message_and_secrets, parse_messages, without_echoes
from reverie.messages import group as group_messages
from reverie.models import Episode, Message
from reverie.store.base import Store, input_digest, nth_input, source_key
from reverie.text import token_set

LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1)}
log = logging.getLogger("reverie.ingest")

# a message whose id was stored with other text is the same message (a re-export that fixed a
# word) when at least this share of their words is the same; else another that reuses the id
SAME_MESSAGE = 0.5
SPEAKER_LINE = re.compile(r"^\s*([^:：]{1,40})([:：])\s*(.*)$")
# a word of a speaker's name: "Ana", "Dr.", "O'Brien", "Jean-Luc", "张三", "user", "SPEAKER_A"
NAME_WORD = re.compile(r"[^\W\d_][\w.'’-]*")
# the numbered speakers of a diarized transcript: "Speaker 1", "SPEAKER_00", "user2"
NUMBERED_SPEAKER = re.compile(
    r"(speaker|person|participant|guest|user|interviewer|interviewee|customer|caller|host|agent|assistant|bot)"
    r"[ _-]?\d+", re.IGNORECASE)
# lowercase words that may stand inside a name: "Ludwig van Beethoven", "Ana de Armas"
NAME_PARTICLES = frozenset({"van", "von", "de", "da", "di", "du", "del", "della", "der", "den", "la", "le",
                            "al", "el", "bin", "ibn", "ben", "y", "dos", "das", "do", "ter", "ten"})


def add_messages(
    store: Store, messages: list[Any], *, user: str, thread: str, agent: str | None, at: datetime | None,
    source: str | None, grouping: str,
) -> "Added":
    """Store past conversation as completed episodes in one transaction, leaving out what
    was stored before (see :func:`skip_known`); the caller queues the result for learning."""
    msgs = parse_messages(messages, at)
    return store_messages(store, msgs, user=user, thread=thread, agent=agent, source=source, grouping=grouping)


def store_messages(
    store: Store, msgs: list[Message], *, user: str, thread: str, agent: str | None, source: str | None,
    grouping: str, counts: dict[str, int] | None = None,
) -> "Added":
    """:func:`add_messages` of messages already parsed. ``counts`` carries the identical-input
    counts of :func:`skip_known` from one part of a streamed conversation to the next."""
    if not msgs:
        raise InvalidInput("messages is empty: nothing to add", field="messages")
    for m in msgs:  # a message id that holds personal data is kept as its pseudonym
        if m.source_id:
            m.source_id = clean_id(m.source_id, "source_id", store.salt)
    source = clean_id(source, "source", store.salt)
    stamps = [m.at for m in msgs]
    if all(stamps) and any(b < a for a, b in zip(stamps, stamps[1:])):  # type: ignore[operator]
        # an export newest first, or out of order: grouped as they were said (a reply after its message)
        msgs = sorted(msgs, key=lambda m: m.at)  # type: ignore[arg-type, return-value]
    groups = group_messages(msgs, grouping)
    now = datetime.now(timezone.utc)
    with store.transaction(batch=True):
        fresh = skip_known(store, user, thread, groups, counts)
        episodes = Added(skipped=fresh.skipped, skipped_messages=fresh.skipped_messages)
        for group_msgs, keys in zip(fresh.groups, fresh.keys):
            first = group_msgs[0]
            ids = [m.source_id for m in group_msgs if m.source_id]
            ep = Episode(
                user=user,
                agent=agent,
                thread=thread,
                created_at=now,
                completed_at=now,
                occurred_at=first.at or now,
                status="completed",
                user_text=first.content,
                reply_text="\n".join(as_line(m) for m in group_msgs[1:]),
                messages=group_msgs,
                source_ids=ids + ([source] if source else []),
            )
            store.put_episode(ep)
            store.put_inputs(user, thread, ep.id, keys)
            episodes.append(ep)
    if fresh.skipped_messages:
        log.info("add: %d episodes (%d messages) of %s/%s were stored already", fresh.skipped,
                 fresh.skipped_messages, user, thread)
    return episodes


class Added(list[Episode]):
    """What :meth:`Memory.add` returns: the episodes it stored (a plain ``list`` of
    :class:`Episode`, as before), and what it recognised as stored already.

    ``skipped`` counts the episodes left out because the same input was stored before
    (or earlier in the same call); ``skipped_messages`` counts every message left out,
    including those dropped from an episode that was stored with its new messages.
    """

    def __init__(self, episodes: Iterable[Episode] = (), *, skipped: int = 0, skipped_messages: int = 0) -> None:
        super().__init__(episodes)
        self.skipped = skipped
        self.skipped_messages = skipped_messages

    def __repr__(self) -> str:
        return f"Added({list.__repr__(self)}, skipped={self.skipped}, skipped_messages={self.skipped_messages})"


@dataclass
class Fresh:
    """The part of one add call that is new: episode groups with the keys to record them under."""

    groups: list[list[Message]] = field(default_factory=list)
    keys: list[list[str]] = field(default_factory=list)
    skipped: int = 0
    skipped_messages: int = 0


def skip_known(
    store: Store, user: str, thread: str, groups: list[list[Message]], counts: dict[str, int] | None = None,
) -> Fresh:
    """Leave out what is stored already for ``user`` in ``thread``.

    A message whose source id (a LoCoMo dia_id...) was stored before with the same text, or
    text that says nearly the same, or came earlier in this call, is dropped; a group with nothing left is a skipped episode. A group that is
    left whole (or in part) is skipped when an episode with the same occurred time and
    content (:func:`input_digest`) was stored: the n-th identical group of a call matches
    the n-th stored one, so repeated exchanges inside one file are all kept. Two indexed
    lookups per call; call it inside the transaction that stores the result. ``counts``
    (updated in place) makes several calls count as one: the parts of a streamed file.
    """
    sources = [k for g in groups for m in g if m.source_id
               for k in (source_key(m.source_id, m.content), source_key(m.source_id))]
    known = store.known_inputs(user, thread, sources) if sources else {}
    # the first text of each id known with other text than this call gives it
    before = _first_texts(store, {
        m.source_id: known[source_key(m.source_id)] for g in groups for m in g
        if m.source_id and source_key(m.source_id) in known and source_key(m.source_id, m.content) not in known})
    out = Fresh()
    kept: list[list[Message]] = []
    for group in groups:
        left = []
        for m in group:
            if m.source_id and _stored_before(m, known, before):
                out.skipped_messages += 1
                continue
            if m.source_id:  # the same message twice in one call: the first one stands
                known[source_key(m.source_id, m.content)] = ""
                before.setdefault(m.source_id, m.content)
            left.append(m)
        if left:
            kept.append(left)
        else:
            out.skipped += 1
    counts = {} if counts is None else counts
    digests = []
    for group in kept:
        digest = input_digest(group)
        digests.append(nth_input(digest, counts.get(digest, 0)))
        counts[digest] = counts.get(digest, 0) + 1
    seen = store.known_inputs(user, thread, digests) if digests else {}
    for group, digest in zip(kept, digests):
        if digest in seen:
            out.skipped += 1
            out.skipped_messages += len(group)
            continue
        out.groups.append(group)
        out.keys.append([digest, *(k for m in group if m.source_id
                                    for k in (source_key(m.source_id, m.content), source_key(m.source_id)))])
    return out


def _first_texts(store: Store, by_id: dict[str, str]) -> dict[str, str]:
    """The text of each message id in the episode (``by_id``: id -> episode id) it came in first."""
    texts: dict[str, str] = {}
    for episode in store.get_episodes(set(by_id.values())).values():
        for m in episode.messages:
            if m.source_id in by_id and by_id[m.source_id] == episode.id:
                texts.setdefault(m.source_id, m.content)
    return texts


def _stored_before(m: Message, known: dict[str, str], before: dict[str, str]) -> bool:
    """Whether ``m`` (which has an id) was stored before: its id with the same text, or with
    text that says nearly the same (a re-export that fixed a word). An id stored with other
    text is another message reusing it (ids that restart in each day's export), and so is one
    whose text says the opposite of the stored one, however many words they share ("I live
    in Berlin" / "I live in Munich", "I like it" / "I do not like it": the duplicate and
    contradiction judge's conflict): skipped, what it says would be lost."""
    assert m.source_id is not None
    if source_key(m.source_id, m.content) in known:
        return True
    text = before.get(m.source_id)
    if text is None:
        return source_key(m.source_id) in known  # its episode is gone: known by its id, as before
    old, new = token_set(text), token_set(m.content)
    if not (old | new) or len(old & new) < SAME_MESSAGE * len(old | new):
        return False
    return fact_relation(text, m.content, SAME_MESSAGE) != "conflict"


@dataclass
class Conversation:
    thread: str
    messages: list[dict[str, Any]] = field(default_factory=list)


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    m = LOCOMO_DATE.search(text)
    if not m:
        raise InvalidInput(f"cannot read the session date {text!r}", field="session_date_time")
    hour, minute, ampm, day, month, year = m.groups()
    hour = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    month_no = MONTHS.get(month.lower())
    if month_no is None:
        raise InvalidInput(f"unknown month in {text!r}", field="session_date_time")
    return datetime(int(year), month_no, int(day), hour, int(minute), tzinfo=timezone.utc)


def is_locomo(data: Any) -> bool:
    return isinstance(data, dict) and "speaker_a" in data and "session_1" in data


def _unwrapped_locomo(data: Any) -> Any:
    """LoCoMo's own release (``locomo10.json``) wraps each conversation in a sample:
    ``{"sample_id", "conversation": {speaker_a, session_1, ...}, "qa"}``, one or a list."""
    def inner(sample: Any) -> Any:
        if isinstance(sample, dict) and is_locomo(sample.get("conversation")):
            return sample["conversation"]
        return sample
    return [inner(d) for d in data] if isinstance(data, list) else inner(data)


def locomo_sessions(data: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    """(number, date, turns) for each session that has turns, in order."""
    out: list[tuple[int, datetime, list[dict[str, Any]]]] = []
    numbers = sorted(int(k.split("_")[1]) for k in data if re.fullmatch(r"session_\d+", k))
    for n in numbers:
        turns = data.get(f"session_{n}") or []
        date_text = data.get(f"session_{n}_date_time")
        if turns and date_text:
            out.append((n, parse_locomo_date(date_text), turns))
    return out


def locomo_conversation(data: dict[str, Any], thread: str = "locomo") -> Conversation:
    """All sessions' turns, each stamped with its session's date (a minute apart, in order)."""
    from datetime import timedelta

    messages: list[dict[str, Any]] = []
    for _, when, turns in locomo_sessions(data):
        for i, turn in enumerate(turns):
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            messages.append(
                {"speaker": turn["speaker"], "content": text, "at": when + timedelta(minutes=i), "source_id": turn["dia_id"]}
            )
    return Conversation(thread=thread, messages=messages)


class IngestReport(BaseModel):
    """What one ingest did: episodes stored, input recognised as stored before, learning."""

    conversations: int = 0
    episodes: int = 0
    skipped: int = 0  # episodes stored before
    skipped_messages: int = 0
    learned: int = 0
    # with learning: the user's completed episodes still not learned after it, and the newest
    # learning error among them (an engine that failed: they are kept, and a flush tries again)
    waiting: int = 0
    learning_error: str = ""
    facts: int = 0  # facts the user has after it
    tags: dict[str, int] = Field(default_factory=dict)


def ingest(
    source: str | Path | Messages, *, add: Callable[[list[Message], str, dict[str, int]], Added],
    on_progress: Callable[[str], None] | None = None, after_part: Callable[[], None] | None = None,
) -> IngestReport:
    """Read ``source`` (a file path, or a list of messages) and hand each conversation to
    ``add(messages, thread, counts)`` in parts of about STREAM_MESSAGES messages, each cut
    where an exchange begins (so the parts group as the whole would); ``after_part()`` runs
    after each part (learning, so that what waits stays bounded). JSONL and 'Speaker: text'
    files are read a line at a time: memory stays flat whatever the file's size. Count what
    was stored and what was skipped.

    A message that cannot be read stops the ingest there: the parts before it are stored
    (each in its own transaction) and the error says how many messages that was; ingesting
    the file again after fixing it skips them."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise InvalidInput(f"no file {path.name!r} to ingest", field="path")
        conversations: Iterable[tuple[str, Iterable[RawMessage]]] = read_conversations(path)
    else:
        conversations = [("default", check_messages(source))]
    report = IngestReport()
    stored = new = known = 0  # messages handed to add: of them new, and stored before (skipped)
    empty = False
    try:
        for thread, raw in conversations:
            report.conversations += 1
            counts: dict[str, int] = {}
            parts = 0
            for part in exchange_parts(raw, STREAM_MESSAGES):
                added = add(part, thread, counts)
                parts += 1
                stored += len(part)
                known += added.skipped_messages
                new += len(part) - added.skipped_messages
                report.episodes += len(added)
                report.skipped += added.skipped
                report.skipped_messages += added.skipped_messages
                if after_part is not None:
                    after_part()
                if on_progress is not None:
                    on_progress(f"{thread}: {stored} messages")
            if not parts:
                empty = True
                add([], thread, counts)  # the empty conversation's own error
            if on_progress is not None:
                on_progress(thread)
    except UnicodeDecodeError as exc:  # the file changed after read_conversations checked it
        name = Path(source).name if isinstance(source, (str, Path)) else "the input"
        raise InvalidInput(f"{name} is not UTF-8 text ({exc.reason}); it changed while it was read",
                           field="path") from exc
    except InvalidInput as exc:
        if not stored:
            if empty or not isinstance(source, (str, Path)):
                raise
            raise InvalidInput(f"{exc} (nothing was stored)", field=exc.field) from exc
        raise InvalidInput(f"{exc} ({_kept(new, known)})", field=exc.field) from exc
    return report


def _kept(new: int, known: int) -> str:
    """What the parts before a refused message did: stored it, or found it stored before."""
    def messages(n: int) -> str:
        return f"{n} message{'' if n == 1 else 's'}"

    if not known:
        return f"{messages(new)} before it were stored; ingesting again after the fix skips them"
    if not new:
        return f"the {messages(known)} before it were stored already and were skipped; nothing new was stored"
    return (f"{messages(new)} before it were stored and {known} more skipped as stored already; "
            "ingesting again after the fix skips them")


# messages handed to one add (one transaction) when a conversation streams in
STREAM_MESSAGES = 2000


def exchange_parts(raw: Iterable[RawMessage], size: int) -> Iterator[list[Message]]:
    """The conversation's messages, parsed, in parts of at least ``size`` messages (the last
    may be shorter), each cut just before a message that opens an exchange: grouping each
    part gives the groups of the whole (see :func:`reverie.messages.group`)."""
    part: list[Message] = []
    secrets: Secrets = {}  # taken out of the part's messages: out of its echoes too (an exchange is in one part)
    opener: str | None = None
    answered = False  # the current exchange has a message from the other side
    for index, item in enumerate(raw):
        try:
            message, found = parse_message_and_secrets(item, index, None)
        except InvalidInput as exc:
            if not isinstance(raw, FileLines) or not raw.line:
                raise
            raise InvalidInput(f"{raw.name} line {raw.line}: {exc}", field=exc.field) from exc
        side = message.speaker or message.role
        if opener is None:
            opener = side
        opens = side == opener and answered
        if opens:
            answered = False
            if len(part) >= size:
                yield without_echoes(part, secrets)
                part, secrets = [], {}
        elif side != opener:
            answered = True
        part.append(message)
        secrets.update(found)
    if part:
        yield without_echoes(part, secrets)


def read_conversations(path: Path) -> Iterator[tuple[str, Iterable[RawMessage]]]:
    """(thread, messages) of each conversation in the file. JSONL and 'Speaker: text' lines
    are read lazily, one line at a time; a JSON file is parsed whole, so JSONL is the
    format for large exports."""
    thread = path.stem
    check_utf8(path)
    if path.suffix == ".jsonl":
        yield thread, FileLines(path, _jsonl_messages)
    elif path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path.name} is not valid JSON: {exc}", field="$") from exc
        except RecursionError as exc:  # "[[[[..." deeper than the parser goes, as import says it
            raise InvalidInput(f"{path.name} is nested too deeply", field="$") from exc
        for conv in _from_json(data, thread, path.name):
            yield conv.thread, conv.messages
    else:
        yield thread, FileLines(path, _line_messages)


class FileLines:
    """The raw messages of a file read a line at a time, knowing where each one is:
    ``line`` is the line (from 1) where the message read last begins, for errors about it."""

    def __init__(self, path: Path, read: Callable[[Path, "FileLines"], Iterator[RawMessage]]) -> None:
        self.path = path
        self.name = path.name
        self.line = 0
        self._read = read

    def __iter__(self) -> Iterator[RawMessage]:
        return self._read(self.path, self)


def check_utf8(path: Path) -> None:
    """Refuse a file that is not UTF-8 text before any of it is read (and stored), saying
    where: a file read a line at a time would otherwise fail part way through."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = lines = 0  # bytes and newlines read
    head = b""
    with path.open("rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not head:
                head = chunk[:4]
            held = len(decoder.getstate()[0])  # the start of a character cut by the last chunk
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                at = done - held + exc.start
                line = lines + chunk[:max(0, at - done)].count(b"\n") + 1
                raise not_utf8(path, head, at, line, exc.object[exc.start:exc.start + 1]) from None
            if not chunk:
                return
            done += len(chunk)
            lines += chunk.count(b"\n")


def not_utf8(path: Path, head: bytes, at: int, line: int, byte: bytes) -> InvalidInput:
    """The error for a file that is not UTF-8 text (``head``: its first bytes): which byte, on
    which line."""
    utf16 = " (it looks like UTF-16)" if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else ""
    what = f"0x{byte.hex()} " if byte else ""
    return InvalidInput(
        f"{path.name} is not UTF-8 text{utf16}: byte {what}at offset {at} (line {line}) is not UTF-8; "
        "save the file as UTF-8 and ingest it again",
        field="path",
    )


def _jsonl_messages(path: Path, where: FileLines) -> Iterator[RawMessage]:
    with path.open(encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    item = json.loads(line.rstrip("\r\n"))  # a column past the line's end names its end
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"{path.name} line {number} is not JSON: {exc.msg} (column {exc.colno})",
                                       field=f"line {number}") from exc
                where.line = number
                yield item


def _line_messages(path: Path, where: FileLines) -> Iterator[RawMessage]:
    """'Speaker: text' lines (the text may start on the next line); a line without a speaker
    continues the message before it, or (first) is the user's."""
    speakers = _speakers(path)
    pending: dict[str, Any] | None = None
    start = 0
    with path.open(encoding="utf-8-sig") as lines:
        for number, raw_line in enumerate(lines, 1):
            line = raw_line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            said = speaker_line(line)
            if said and said[0] in speakers:
                if pending is not None:
                    where.line = start
                    yield pending
                pending, start = {"speaker": said[0], "content": said[1]}, number
            elif pending is not None:
                pending["content"] = (pending["content"] + "\n" + line.strip()).strip()
            else:
                pending, start = {"role": "user", "content": line.strip()}, number
    if pending is not None:
        where.line = start
        yield pending


def _speakers(path: Path) -> set[str]:
    """Who speaks in a 'Speaker: text' file: the labels on two lines or more (a talk's speakers
    recur) and the roles, or every label when fewer than two recur (a short talk). A label
    once in a longer talk is a line of a message ("Flight: Monday to Tokyo" in Ana's plan)."""
    labels: Counter[str] = Counter()
    with path.open(encoding="utf-8-sig") as lines:
        for raw_line in lines:
            said = speaker_line(raw_line.rstrip("\n"))
            if said:
                labels[said[0]] += 1
    recurring = {name for name, n in labels.items() if n >= 2}
    if len(recurring) < 2:
        return set(labels)
    return recurring | {name for name in labels if name.strip().lower() in ROLE_NAMES}


def speaker_line(line: str) -> tuple[str, str] | None:
    """(speaker, text) of a 'Speaker: text' line, or None for a line that goes on with the
    message before it. The part before the first colon must look like a name: "Ana",
    "Dr. Smith", "Melanie Smith", "张三", "user", "Speaker 1"; not a time ("at 10:30"), a
    link ("see https://..."), a number ("Step 2: ...") or a phrase ("Note that x: ...")."""
    m = SPEAKER_LINE.match(line)
    if not m:
        return None
    name, colon, text = m.group(1).strip(), m.group(2), m.group(3).strip()
    after = line[m.end(2):m.end(2) + 1]
    if colon == ":" and (after.isdigit() or after in ("/", "\\")):
        return None  # 10:30, https://, C:\Users
    if NUMBERED_SPEAKER.fullmatch(name):
        return name, text
    words = name.split()
    if not words or len(words) > 5 or name[-1].isdigit():
        return None
    if not all(NAME_WORD.fullmatch(w) for w in words):
        return None
    if len(words) > 1 and (words[0][0].islower() or words[-1][0].islower() or any(
            w[0].islower() and w not in NAME_PARTICLES for w in words[1:-1])):
        return None  # "at noon", "see the notes": words, not a name
    return name, text


def _from_json(data: Any, thread: str, name: str) -> list[Conversation]:
    data = _unwrapped_locomo(data)
    if is_locomo(data):
        return [locomo_conversation(data, thread)]
    if isinstance(data, list) and data and all(is_locomo(d) for d in data):
        return [locomo_conversation(d, f"{thread}-{i}") for i, d in enumerate(data)]
    if isinstance(data, list):
        return [Conversation(thread, data)]
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return [Conversation(str(data.get("thread") or thread), data["messages"])]
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        out: list[Conversation] = []
        for i, conv in enumerate(data["conversations"]):
            if not isinstance(conv, dict) or not isinstance(conv.get("messages"), list):
                raise InvalidInput(f"conversations[{i}] needs a messages array", field=f"conversations[{i}].messages")
            out.append(Conversation(str(conv.get("thread") or f"{thread}-{i}"), conv["messages"]))
        return out
    raise InvalidInput(
        f"{name}: expected a list of messages, {{\"messages\": [...]}}, {{\"conversations\": [...]}} or a LoCoMo file",
        field="$",
    )


