"""The store interface: everything reverie keeps, with no database types leaking out.

The SQLite store is the embedded default; a PostgreSQL store implements the
same methods. Callers group several calls into one logical write with
``with store.transaction():`` - nested blocks join the outer one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
import unicodedata
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import AbstractSet, Any, Callable, Collection, Generic, Hashable, Iterable, Iterator, Literal, Mapping, NamedTuple, Sequence, TypeVar

from reverie.errors import InvalidInput, StoreError
from reverie.models import (
    Episode,
    Fact,
    KnowledgeDoc,
    Message,
    Note,
    Profile,
    Tag,
    TagRelation,
    as_utc,
)
from reverie.timerefs import mentioned_days

ItemKind = Literal["episode", "fact", "note", "knowledge"]
ITEM_KINDS: tuple[str, ...] = ("episode", "fact", "note", "knowledge")
Item = Episode | Fact | Note | KnowledgeDoc
# the kinds whose rows a rare query word finds past the search window are ranked by every
# query word they hold, as the window's are: an old memory keeps what its other words add.
# Not daily notes: a day's note holds most words, the read cost 5 ms a recall at 1M
# episodes, and the old-memory check (`bench scale --old-memories`) gained nothing from it
EVERY_WORD_PAST_WINDOW = frozenset({"episode", "fact", "knowledge"})
# how a page of facts may be ordered (each descending, newest first on ties)
FACT_ORDERS: tuple[str, ...] = ("uses", "recent", "last_used", "confidence")
RECENT_THREAD_EPISODES = 5000  # how far back Store.recent_threads reads


def first_distinct(values: Iterable[str], limit: int) -> list[str]:
    """The first ``limit`` distinct values, in the order given."""
    out: dict[str, None] = {}
    for value in values:
        out[value] = None
        if len(out) >= limit:
            break
    return list(out)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Page(Generic[_T]):
    """One page of a list read by keyset: ``next`` is the cursor that reads the page after
    this one (pass it back as ``after=``), None on the last page. A cursor is opaque and
    belongs to the store (and the order) that made it."""

    items: list[_T]
    next: str | None = None


def encode_cursor(values: Sequence[Any]) -> str:
    """The values a page ended on (the sort key of its last row) as an opaque cursor."""
    return base64.urlsafe_b64encode(json.dumps(list(values), ensure_ascii=False).encode("utf-8")).decode().rstrip("=")


def decode_cursor(cursor: str | None, types: Sequence[type]) -> list[Any] | None:
    """The values of a cursor made by :func:`encode_cursor` (None for no cursor); a cursor
    that is not one of these (a value of another type, an int no store column holds) is
    InvalidInput (field ``after``)."""
    if cursor is None or cursor == "":
        return None
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: "[[[[..." nested past the parser's depth
        raise InvalidInput("after is not a cursor this list gave out", field="after") from exc

    def fits(value: Any, kind: type) -> bool:
        # a bool is an int to Python; an int past 64 bits is one no store can bind (SQLite
        # raises OverflowError), and no list ever gave it out
        if isinstance(value, bool) or not isinstance(value, kind):
            return False
        return not isinstance(value, int) or -(2**63) <= value < 2**63

    if not isinstance(values, list) or len(values) != len(types) or not all(map(fits, values, types)):
        raise InvalidInput("after is not a cursor this list gave out", field="after")
    return values


def knowledge_digest(doc: KnowledgeDoc) -> str:
    """What makes a knowledge document the same document again (its title, body, scope, agent
    and project) as one hash, stored beside it: adding it again finds the stored one by an
    index, not by reading every document of the user."""
    key = json.dumps([doc.title, doc.body, doc.scope, doc.agent, doc.project], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _tally(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def page_of(rows: Sequence[_T], limit: int, key: Callable[[_T], Sequence[Any]]) -> Page[_T]:
    """The first ``limit`` of ``rows`` (read with one row more than a page), and the cursor
    after them when there are more."""
    items = list(rows[:limit])
    more = len(rows) > limit and bool(items)
    return Page(items, encode_cursor(key(items[-1])) if more else None)


class Hit(NamedTuple):
    """A full-text match: which item, and its BM25 relevance (higher is better). (A named
    tuple: a recall builds hundreds, and a tuple is built at a fraction of a frozen
    dataclass's cost.)"""

    kind: str
    id: str
    score: float
    # the query's full-text tokens (fts_tokens of its terms) the item's text holds, when the
    # search read them all: recall's coverage (recall._cover) then needs no second read of
    # the item's text. None: not known (index_tokens tells)
    held: frozenset[str] | None = None


class Posting(NamedTuple):
    """One entry of a tag's posting list: the item, and the tag it carries (a named tuple,
    as :class:`Hit`: a recall reads thousands)."""

    kind: str
    id: str
    tag: str
    weight: float


class KeyedReads(NamedTuple):
    """What :meth:`Store.read_keyed` read: kind -> id -> item for each kind asked, the tags'
    states by name (those that exist), and the profile (None when not asked for)."""

    items: dict[str, dict[str, "Item"]]
    tags: dict[str, "TagState"]
    profile: Profile | None


class TagState(NamedTuple):
    """What the recall line reads of a tag: whether it is live, and where a merge sent it."""

    status: str
    merged_to: str | None


@dataclass(frozen=True, slots=True)
class FactText:
    """What the fact judge reads of a stored fact: no provenance, no parsing of the whole fact."""

    id: str
    content: str
    category: str
    agent: str | None = None  # the agent it belongs to (None: the user's, every agent's)


@dataclass(frozen=True, slots=True)
class EpisodeRef:
    """Where an episode belongs, without its content (enough to queue it for learning)."""

    id: str
    user: str
    agent: str | None
    thread: str


@dataclass(slots=True)
class ApiKey:
    id: str
    user: str
    name: str
    admin: bool
    created_at: datetime
    revoked_at: datetime | None = None


@dataclass(slots=True)
class DreamRun:
    id: str
    user: str
    status: str  # queued / running / done / skipped / failed
    days: int
    started_at: datetime
    finished_at: datetime | None = None
    input_hash: str = ""
    report: dict[str, Any] | None = None
    error: str = ""
    owner: str = ""  # the process that runs it (reverie.owners), so that a crashed one is seen


# ---------------------------------------------------------------- who has a memory
# the tables whose rows make a user known, each with an index that leads with the user
USER_TABLES = ("episodes", "facts", "profile", "notes", "knowledge")


def users_sql(column: str) -> str:
    """Every user with a row in :data:`USER_TABLES`, sorted, read as a skip over each table's
    user index (the next user after the last, one index seek each): as fast with a million
    episodes as with ten, where reading the distinct users of every row took 13 ms at 100k.
    ``column``: the stores' name of the user column."""
    walks = ", ".join(
        f"{t}_u(u) AS (SELECT min({column}) FROM {t} UNION ALL "
        f"SELECT (SELECT min({column}) FROM {t} WHERE {column} > {t}_u.u) FROM {t}_u WHERE {t}_u.u IS NOT NULL)"
        for t in USER_TABLES
    )
    return f"WITH RECURSIVE {walks} " + " UNION ".join(f"SELECT u FROM {t}_u WHERE u IS NOT NULL" for t in USER_TABLES) \
        + " ORDER BY 1"


# ---------------------------------------------------------------- what full text indexes
# One definition for every store, so that SQLite and PostgreSQL rank the same words.


def episode_text(episode: Episode) -> str:
    """An episode's searchable text: each message with its speaker (or, without messages,
    the user's and the reply's words)."""
    return " ".join(
        [*(f"{m.speaker or ''} {m.content}" for m in episode.messages)] or [episode.user_text, episode.reply_text]
    )


# the most days one episode is indexed as speaking of: a long message that lists a calendar
# is found by its first ones
MAX_MENTIONS = 50
# how much of each message is read for them: a plan is said in a sentence or two, and the
# whole of a 1 MB message took 1.3 s to read
MENTION_CHARS = 10_000


def episode_days(episode: Episode) -> list[tuple[str, str]]:
    """The days an episode's messages speak of, past or to come (:func:`reverie.timerefs.
    mentioned_days`), each time as its first and last day (ISO dates), at most
    :data:`MAX_MENTIONS`, from the first :data:`MENTION_CHARS` characters of each message:
    what a question about a day finds the plans made for it by. Each message is read at its
    own time, else the episode's, in this machine's zone, as the learning line anchors
    "tomorrow" and the dream reads a day."""
    days: dict[tuple[str, str], None] = {}
    if episode.status != "completed":  # never found before it is (and then written again)
        return []
    said = [(m.content, m.at) for m in episode.messages] or [(episode.user_text, None), (episode.reply_text, None)]
    for text, at in said:
        for first, last in mentioned_days(text[:MENTION_CHARS], (at or episode.occurred_at).astimezone()):
            days[(first.isoformat(), last.isoformat())] = None
            if len(days) == MAX_MENTIONS:
                return list(days)
    return list(days)


def stored_days(rows: Iterable[tuple[Any, str]]) -> list[tuple[Any, Episode, str, str]]:
    """The days stored episodes speak of (:func:`episode_days`), each episode given as (its
    key, its stored body): (key, episode, first, last) for each day. A body that cannot be
    read speaks of none (and is never lost): both stores' migration 13 fills its index so."""
    found: list[tuple[Any, Episode, str, str]] = []
    for key, body in rows:
        try:
            episode = Episode.model_validate_json(body)
        except ValueError:  # (pydantic's ValidationError among them)
            continue
        found += [(key, episode, first, last) for first, last in episode_days(episode)]
    return found


def strength(confidence: float, uses: int) -> float:
    """How strongly a fact stands on its own: its confidence, and a little for each use.
    (``log(1 + uses)``, not ``log1p``: the stores compute the same value in SQL, with ``ln``,
    when a use is counted, and both call the C library's ``log``.)"""
    return confidence + 0.1 * math.log(1 + uses)


def strongest(rows: Iterable[tuple[_T, float, int]], limit: int) -> list[_T]:
    """The keys of the ``limit`` strongest (key, confidence, uses) rows, ties in row order."""
    ranked = sorted((-strength(confidence, uses), n, key) for n, (key, confidence, uses) in enumerate(rows))
    return [key for _, _, key in ranked[:limit]]


def fact_text(fact: Fact) -> str:
    return " ".join([fact.content, " ".join(fact.tags)])


def knowledge_text(doc: KnowledgeDoc) -> str:
    return " ".join([doc.title, doc.body, " ".join(doc.tags)])


def searched_fact_text(fact: Fact) -> str:
    """What a fact's full-text row holds: its text, and none once it is archived (no search
    returns an archived fact; it counts in BM25's N alone)."""
    return fact_text(fact) if fact.status != "archived" else ""


# a row's searchable text, from the body it keeps (as each store's put_* methods index it):
# what a migration that indexes rows again writes
SEARCH_TEXT: dict[str, Callable[[str], str]] = {
    "episode": lambda body: episode_text(Episode.model_validate_json(body)),
    "fact": lambda body: searched_fact_text(Fact.model_validate_json(body)),
    "note": lambda body: note_text(Note.model_validate_json(body)),
    "knowledge": lambda body: knowledge_text(KnowledgeDoc.model_validate_json(body)),
}


# the longest token PostgreSQL keeps as a lexeme (longer ones are not indexed there)
MAX_LEXEME_BYTES = 2046
_SPLIT = re.compile(r"[\W_]+")


def fts_tokens(text: str) -> list[str]:
    """The tokens FTS5's ``unicode61`` tokenizer (``remove_diacritics 2``) reads from the
    text :func:`~reverie.text.index_text` made: letters and digits, diacritics removed.
    PostgreSQL's lexemes are these tokens, so both stores match the same words."""
    if text.isascii():
        lowered = text.lower()
        if lowered.replace(" ", "").isalnum():  # index text: words of letters and digits between spaces
            tokens = lowered.split()
            # no token of a text within the limit can pass it: only a longer text is filtered
            return tokens if len(lowered) <= MAX_LEXEME_BYTES else [t for t in tokens if len(t) <= MAX_LEXEME_BYTES]
    else:
        decomposed = unicodedata.normalize("NFD", text)
        text = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
    # a token of up to a quarter of the limit in characters fits it whatever they are
    short = MAX_LEXEME_BYTES // 4
    return [t for t in _SPLIT.split(text.lower()) if t and (len(t) <= short or len(t.encode("utf-8")) <= MAX_LEXEME_BYTES)]


def query_tokens(query_terms: Iterable[str]) -> list[str]:
    """The distinct full-text tokens of a query's terms, in order (PostgreSQL's lexemes)."""
    return list(dict.fromkeys(t for term in query_terms if term for t in fts_tokens(term)))


# the most problems an integrity check lists (a damaged file can have thousands)
MAX_INTEGRITY_PROBLEMS = 20


@dataclass(frozen=True)
class IntegrityProblem:
    """One thing :meth:`Store.integrity_problems` found: what it is, and whether the file's own
    pages are damaged (mended with the store's own recovery tools) rather than data derived
    from the items being out of step with them (built again by an export and import)."""

    said: str
    damaged: bool = False

# meta keys that belong to one user, "<prefix><user>": deleted and migrated with them
USER_META_PREFIXES = (
    "memory_md:", "capacity:", "profile-trimmed:", "facts-skipped:", "notes-unwritten:", "withdrawn:",
    "turns-unanswered:",
)


def meta_user(key: str) -> str | None:
    """The user a per-user meta key (:data:`USER_META_PREFIXES`) belongs to, else None."""
    prefix = next((p for p in USER_META_PREFIXES if key.startswith(p)), None)
    return key[len(prefix):] if prefix else None


def meta_record(store: "Store", key: str) -> dict[str, Any]:
    """A JSON record kept under a meta key ({} when there is none)."""
    raw = store.get_meta(key)
    return dict(json.loads(raw)) if raw else {}


def add_tally(store: "Store", key: str, counts: Mapping[str, int], now: datetime, *, total: str, by: str) -> None:
    """Add ``counts`` to the tally kept under a meta key: {total: n, "last_at", by: {name: n}}
    (inside the caller's transaction; nothing to add writes nothing)."""
    if not counts:
        return
    record = meta_record(store, key)
    tally = dict(record.get(by, {}))
    for name, count in counts.items():
        tally[name] = int(tally.get(name, 0)) + count
    record.update({total: int(record.get(total, 0)) + sum(counts.values()), "last_at": now.isoformat(), by: tally})
    store.set_meta(key, json.dumps(record, sort_keys=True))


# FTS5's bm25() (ext/fts5/fts5_aux.c): its constants, and its formula in its order of
# operations, so that a store ranking rows itself gets the very doubles FTS5 would
BM25_K1 = 1.2
BM25_B = 0.75
# a SQLite full-text row holds its owner's token beside the text (sqlite migration 6), and
# FTS5's bm25 counts it in the row's length: so does every ranking, so both stores rank alike
OWNER_TOKENS = 1


def best_first(ranked: Mapping[int, float], limit: int) -> Iterator[list[int]]:
    """The rows of a search (pk -> score) best first, of equal scores the older (lower pk)
    first, a batch at a time for the caller to look up until ``limit`` are rows it may
    deliver: first the limit and a quarter (nearly every row found is live and the user's),
    then twice the limit at a time."""
    order = [pk for _, pk in sorted([(-score, pk) for pk, score in ranked.items()])]
    start, size = 0, limit + limit // 4 + 1
    while start < len(order):
        yield order[start : start + size]
        start, size = start + size, 2 * limit


def best_hits(
    kind: str, ranked: Mapping[int, float], limit: int,
    lookup: Callable[[list[int]], Mapping[int, tuple[str, frozenset[str] | None]]],
) -> list[Hit]:
    """The best ``limit`` rows of a search (pk -> score) that a store may deliver, as hits,
    looked up a batch at a time (:func:`best_first`): ``lookup(pks)`` gives each of those
    rows that is live and the user's as pk -> (its id, the query tokens it holds or None)."""
    hits: list[Hit] = []
    for batch in best_first(ranked, limit):
        found = lookup(batch)
        hits += [Hit(kind, found[pk][0], ranked[pk], found[pk][1]) for pk in batch if pk in found]
        if len(hits) >= limit:
            break
    return hits[:limit]


# a search whose query names someone looks at its best this many times ``limit`` matches for
# names that no longer tell them apart (see common_names)
NAME_DEPTH = 2


def best_rows(ranked: Mapping[int, float], count: int) -> list[int]:
    """The best ``count`` rows of a search (pk -> score), in :func:`best_first`'s order."""
    if len(ranked) > count:  # (the rows at or above the count's score, then only those sorted)
        cut = sorted(ranked.values(), reverse=True)[count - 1]
        return [pk for _, pk in sorted([(-score, pk) for pk, score in ranked.items() if score >= cut])[:count]]
    return [pk for _, pk in sorted([(-score, pk) for pk, score in ranked.items()])]


def searched_names(names: Iterable[str], query_terms: Sequence[str]) -> dict[str, list[str]]:
    """Of a search's ``names``, those among its ``query_terms``, each with its full-text tokens."""
    return {name: fts_tokens(name) for name in dict.fromkeys(names) if name in query_terms}


def common_names(
    names: Mapping[str, Sequence[str]], holding: Mapping[str, AbstractSet[int]], limit: int,
) -> tuple[list[str], set[int]]:
    """The query's ``names`` (term -> its full-text tokens) that more than ``limit`` of the
    best matches hold (``holding``: token -> which of the best matches hold it), and the
    rows that hold one of them.

    Such a name cannot decide which ``limit`` matches are kept: more of them hold it than
    are kept. Its store-wide idf says only how rare it is among everything else the user
    holds, and beside a large store of other talk the name of the person a conversation is
    about is rare there while nearly every one of that conversation's matches holds it: the
    matches would be ordered by how often that person speaks in each, and how short it is,
    instead of by the query's other words. A store keeps the matches that hold the name and
    orders them by their other words (a name few of them hold, "Max" the dog, still counts:
    it tells them apart)."""
    common: list[str] = []
    rows: set[int] = set()
    for name, tokens in names.items():
        if tokens:
            held = set.intersection(*(set(holding.get(t, ())) for t in tokens))
            if len(held) > limit:
                common.append(name)
                rows |= held
    return common, rows


def fts5_idf(rows: int, hits: int) -> float:
    """A phrase's idf among ``rows`` rows, ``hits`` of which hold it (never below 1e-6)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def fts5_norm(length: int, avgdl: float) -> float:
    """The length part of a row's score: ``length`` is the row's tokens in every column."""
    return BM25_K1 * (1 - BM25_B + BM25_B * length / avgdl)


def fts5_term(idf: float, tf: float, norm: float) -> float:
    """One phrase's share of a row's score: ``tf`` its instances in the row."""
    return idf * ((tf * (BM25_K1 + 1.0)) / (tf + norm))


def note_text(note: Note) -> str:
    return note.content



def episode_columns(episode: Episode, ts: Callable[[datetime | None], Any]) -> dict[str, Any]:
    """An episode's row, as both stores keep it: the whole episode as JSON in ``body``, and
    beside it the columns that are filtered, ordered or counted (times through the store's
    ``ts``); the counters live in columns so that ``touch()`` needs no JSON rewrite."""
    return {
        "id": episode.id,
        "user": episode.user,
        "agent": episode.agent,
        "thread": episode.thread,
        "status": episode.status,
        "created_at": ts(episode.created_at),
        "completed_at": ts(episode.completed_at),
        "occurred_at": ts(episode.occurred_at),
        "archived": episode.archived,
        "learned": episode.learned,
        "uses": episode.uses,
        "last_used_at": ts(episode.last_used_at),
        "body": episode.model_dump_json(),
    }


_M = TypeVar("_M", Episode, Fact)


def with_counters(item: _M, **columns: Any) -> _M:
    """``item`` parsed from its ``body``, with the values both stores keep in columns (uses,
    last use, status, and an episode's learned and archived flags: touch() moves them without
    rewriting the JSON) set over the body's. Set in the model's ``__dict__``, as pydantic's own
    assignment sets them (the models do not validate assignment), without its Python a field:
    1.5% of a LoCoMo-scale recall's instructions, by callgrind."""
    item.__dict__.update(columns)
    return item


def fact_columns(fact: Fact, ts: Callable[[datetime | None], Any]) -> dict[str, Any]:
    """A fact's row, as both stores keep it (see :func:`episode_columns`)."""
    return {
        "id": fact.id,
        "user": fact.user,
        "agent": fact.agent,
        "status": fact.status,
        "category": fact.category,
        "updated_at": ts(fact.updated_at),
        "uses": fact.uses,
        "last_used_at": ts(fact.last_used_at),
        "body": fact.model_dump_json(),
        # kept beside the record so that the strongest facts are read from an index
        "confidence": fact.confidence,
        "strength": strength(fact.confidence, fact.uses),
    }


def migrate_schema(conn: Any, migrations: Sequence[str | Callable[[Any], None]], where: str, param: str) -> None:
    """Bring a store's schema up to date inside the caller's transaction, the same way on
    every store: read its version from ``schema_version`` (none yet: a new store, version 0),
    refuse a version newer than ``migrations`` knows, run each later migration (statements
    separated by ";" at a line's end, or a function of the connection) and record the new
    version. ``where`` names the store in the error; ``param`` is the driver's placeholder."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    version = int(row[0]) if row else 0
    if version > len(migrations):
        raise StoreError(
            f"the store at {where} has schema version {version}, newer than this "
            f"reverie understands ({len(migrations)}); upgrade reverie"
        )
    for step in migrations[version:]:
        if callable(step):
            step(conn)
            continue
        for statement in step.split(";\n"):
            if statement.strip():
                conn.execute(statement)
    if row is None:
        conn.execute(f"INSERT INTO schema_version VALUES ({param})", (len(migrations),))
    elif version != len(migrations):
        conn.execute(f"UPDATE schema_version SET version = {param}", (len(migrations),))


def _nothing() -> None:
    return None


def input_digest(messages: Sequence[Message]) -> str:
    """What makes an ingested episode the same input again: its first message's time (the
    episode's occurred time as the input gave it, or none) and every message's role,
    speaker and content. The user and thread are kept beside it, not hashed."""
    first = messages[0].at if messages else None
    h = hashlib.sha256((as_utc(first).isoformat() if first else "").encode())
    for m in messages:
        h.update("\x1e".join(("", m.role, m.speaker or "", m.content)).encode("utf-8", "surrogatepass"))
    return "d:" + h.hexdigest()[:40]


def nth_input(digest: str, n: int) -> str:
    """The key of the ``n``-th episode with this digest in one input (from 0): identical
    exchanges inside one file stay apart, and the file read again matches each of them."""
    return digest if n == 0 else f"{digest}#{n}"


# the install's secret salt (named for its first use, the API keys' digests)
SALT_META = "api_keys.salt"


def source_key(source_id: str, content: str | None = None) -> str:
    """The input key of an external message id (a LoCoMo dia_id...) and the text it names:
    an id given again with other text (ids that restart in each day's export, two LoCoMo
    conversations in one thread) is another message. Without ``content``, the key older
    homes kept, by the id alone."""
    if content is None:
        return "s:" + source_id
    return f"s:{source_id}#{hashlib.sha256(content.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


class Store(ABC):
    """Persistence for one reverie home. Every method is safe to call from any thread."""

    #: True when several processes, possibly on several machines, serve this one store (the
    #: PostgreSQL store): documents live in the store instead of files, the learning queue is
    #: claimed through :meth:`claim_learning`, and :meth:`try_lock` holds across processes.
    shared: bool = False
    #: where the store is, as messages say it: a file's path, or a URL without its password
    where: str = ""

    # ------------------------------------------------------------ lifecycle
    @abstractmethod
    def transaction(self, *, batch: bool = False, wait: float | None = None) -> AbstractContextManager[None]:
        """One logical write: all or nothing. Nested blocks join the outer one.

        ``wait``: how long to wait for another writer of a store that takes its write lock as
        the transaction begins (SQLite), before StoreBusy; None waits the store's busy
        timeout. A store that locks rows as they are written ignores it.

        ``batch=True``: many writes, few of whose results the caller reads (a learning batch,
        an ingest): a store with a server may send them without waiting for each answer
        (PostgreSQL's pipeline mode); a read still waits for everything sent before it.
        Errors then surface by the end of the block at the latest, and roll it all back."""

    @abstractmethod
    def close(self) -> None: ...

    def write_mark(self) -> Hashable | None:
        """A value that moves whenever something is written to the store, by any process, this
        thread included (it may also move when nothing was: SQLite's moves when a checkpoint
        truncates the log); None where a store cannot tell. A reader that took a mark before
        it read can skip reading again when the mark has not moved."""
        return None

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def integrity_problems(self) -> list[IntegrityProblem]:
        """What is wrong with the store, read whole (its size in time: run on demand, never on
        a request's path): damaged pages where the store keeps its own (SQLite), and the
        derived data that triggers keep beside the items (full-text rows and counts, tag
        counts) where it disagrees with them. Empty when nothing is found; at most
        :data:`MAX_INTEGRITY_PROBLEMS` of them."""

    @abstractmethod
    def users(self) -> list[str]:
        """Every user with anything stored."""

    # ------------------------------------------------------------ episodes
    @abstractmethod
    def put_episode(self, episode: Episode, *, reindex: bool = True) -> None:
        """Insert or replace an episode and its full-text row (the row indexes the
        messages only, so ``reindex=False`` may skip it when they did not change)."""

    @abstractmethod
    def get_episode(self, episode_id: str) -> Episode | None: ...

    @abstractmethod
    def get_episodes(self, ids: Iterable[str]) -> dict[str, Episode]: ...

    @abstractmethod
    def list_episodes(
        self,
        user: str,
        *,
        thread: str | None = None,
        status: str | None = None,
        archived: bool | None = False,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> list[Episode]: ...

    @abstractmethod
    def mentioning(self, user: str, first: date, last: date, limit: int) -> list[Episode]:
        """The user's completed, unarchived episodes that speak of a day from ``first`` to
        ``last`` (:func:`episode_days`, written with each episode), whenever they were said,
        the most recently said first, at most ``limit``. A read of the index of the days
        spoken of near that time, however many episodes the user has."""

    @abstractmethod
    def stored_after(self, kind: str, user: str, after: int, limit: int) -> list[tuple[int, Any]]:
        """The user's items of ``kind`` (episode, fact, note or knowledge, archived ones too) in
        the order they were first stored: the ``limit`` after position ``after`` (0 before the
        first), each with its position. A whole kind read a page at a time, as an export streams it."""

    @abstractmethod
    def recent_threads(self, user: str, limit: int = 200) -> list[str]:
        """The threads of the user's newest episodes, the most recently active first, at most
        ``limit`` of them (read from the newest RECENT_THREAD_EPISODES episodes: a bounded
        read, whatever the store holds)."""

    @abstractmethod
    def pending_turns(self) -> list[Episode]:
        """Every user's pending turns (start-up recovery decides which were orphaned)."""

    @abstractmethod
    def waiting_turns(self, before: datetime, limit: int = 1000) -> list[Episode]:
        """Every user's turns still waiting for their reply (pending or interrupted) that were
        opened before ``before``, oldest first, at most ``limit``."""

    @abstractmethod
    def unlearned_episodes(self, limit: int = 1000, *, user: str | None = None) -> list["EpisodeRef"]:
        """Completed episodes the learning line has not processed yet (oldest first)."""

    @abstractmethod
    def mark_learned(self, episode_ids: Iterable[str], learned: bool = True, error: str = "") -> None: ...

    @abstractmethod
    def known_inputs(self, user: str, thread: str, keys: Iterable[str]) -> dict[str, str]:
        """Which of these input keys (:func:`input_digest`, :func:`source_key`) an episode of
        ``user`` in ``thread`` was already stored under, and that episode's id: an indexed
        lookup per key."""

    @abstractmethod
    def put_inputs(self, user: str, thread: str, episode_id: str, keys: Iterable[str]) -> None:
        """Record the input keys of an ingested episode (a key already recorded stays with its
        first episode)."""

    # ------------------------------------------------------------ facts
    @abstractmethod
    def put_fact(self, fact: Fact) -> None: ...

    @abstractmethod
    def get_fact(self, fact_id: str) -> Fact | None: ...

    @abstractmethod
    def get_facts(self, ids: Iterable[str]) -> dict[str, Fact]: ...

    @abstractmethod
    def count_facts(self, user: str, *, up_to: int | None = None) -> int:
        """How many live (pending or consolidated) facts the user has; with ``up_to``, counted
        up to that many at most (a bounded read, however many facts there are)."""

    @abstractmethod
    def related_facts(self, user: str, query_terms: list[str], limit: int) -> list[Fact]:
        """Live facts sharing a search term with ``query_terms``: the newest ``limit`` of them,
        returned oldest first (an index read, however many facts the user has)."""

    def fact_texts(self, user: str, query_terms: list[str] | None = None, limit: int = 0) -> list[FactText]:
        """The live facts' texts, oldest first: all of them, or (with ``query_terms``) the
        newest ``limit`` that share a search term, as :meth:`related_facts`. Stores override
        it with a read that does not build whole facts."""
        facts = self.list_facts(user) if query_terms is None else self.related_facts(user, query_terms, limit)
        return [FactText(f.id, f.content, f.category, f.agent) for f in facts]

    @abstractmethod
    def recent_facts(self, user: str, limit: int) -> list[Fact]:
        """The newest ``limit`` live facts, oldest first."""

    @abstractmethod
    def list_facts(
        self,
        user: str,
        *,
        status: str | Iterable[str] | None = None,
        category: str | None = None,
        agent: str | None = None,
    ) -> list[Fact]:
        """Facts of a user; ``status=None`` means pending and consolidated (not archived)."""

    def strongest_facts(
        self, user: str, categories: Sequence[str], agent: str | None, limit: int,
        statuses: Sequence[str] = ("consolidated",), exclude: Collection[str] = (),
    ) -> list[Fact]:
        """The user's ``limit`` strongest facts of these categories and ``statuses``
        (consolidated by default; of ``agent`` or of every agent), but those of ``exclude``
        (ids), strongest first: by confidence + 0.1 ln(1 + uses), ties in the order written.
        What recall always delivers beside its matches. A store overrides this to rank without
        reading every fact's record (and reads whole none it excludes)."""
        facts = [f for f in self.list_facts(user, status=list(dict.fromkeys(statuses)), agent=agent)  # in the order written
                 if f.category in categories and f.id not in exclude]
        return strongest(((f, f.confidence, f.uses) for f in facts), limit)

    @abstractmethod
    def delete_fact(self, fact_id: str) -> None: ...

    @abstractmethod
    def delete_episode(self, episode_id: str) -> None:
        """An episode's row, its full-text row and its postings, for good."""

    @abstractmethod
    def delete_note(self, note_id: str) -> None:
        """A note line's row, its full-text row and its postings, for good."""

    @abstractmethod
    def delete_knowledge(self, doc_id: str) -> None:
        """Delete a knowledge document, its full-text row and its postings (nothing if absent)."""

    # ------------------------------------------------------------ profile
    @abstractmethod
    def get_profile(self, user: str) -> Profile: ...

    @abstractmethod
    def put_profile_section(self, user: str, section: str, summary: str, updated_at: datetime | None) -> None:
        """Set one section; ``updated_at`` None puts it back to never set (its row goes, so
        it reads as it did before anything was written: what undo of a first edit needs)."""

    # ------------------------------------------------------------ notes and knowledge
    @abstractmethod
    def put_note(self, note: Note) -> None: ...

    @abstractmethod
    def list_notes(
        self, user: str, *, since: str | None = None, until: str | None = None
    ) -> list[Note]:
        """Daily-note lines with since <= date <= until (YYYY-MM-DD), oldest first."""

    def note_lines(self, user: str, date: str) -> list[str]:
        """The text of each of ``user``'s note lines of one day (YYYY-MM-DD), oldest first, as
        :meth:`list_notes` orders them: what the day's markdown file shows, without building
        every note (a store may read the one field)."""
        return [n.content for n in self.list_notes(user, since=date, until=date)]

    @abstractmethod
    def get_notes(self, ids: Iterable[str]) -> dict[str, Note]: ...

    @abstractmethod
    def put_knowledge(self, doc: KnowledgeDoc) -> None: ...

    @abstractmethod
    def list_knowledge(self, user: str) -> list[KnowledgeDoc]:
        """Every knowledge document of the user, oldest first (a whole list: a door that faces
        users reads :meth:`page_knowledge`)."""

    def same_knowledge(self, doc: KnowledgeDoc) -> KnowledgeDoc | None:
        """The user's stored document that is ``doc`` again (the same title, body, scope,
        agent and project: :func:`knowledge_digest`), or None. The default reads every
        document; a store overrides it with an indexed read of the digest."""
        digest = knowledge_digest(doc)
        return next((d for d in self.list_knowledge(doc.user) if knowledge_digest(d) == digest), None)

    @abstractmethod
    def get_knowledge(self, ids: Iterable[str]) -> dict[str, KnowledgeDoc]: ...

    def read_keyed(
        self, user: str, *, items: Mapping[str, Iterable[str]] | None = None, tags: Iterable[str] = (),
        profile: bool = False,
    ) -> KeyedReads:
        """Several reads by key at once: items of any kinds by id (kind -> ids, each kind of
        :data:`ITEM_KINDS`; whoever's they are), ``user``'s tags' states by name, and with
        ``profile`` the user's profile. One read each here; a store where each read is a round
        trip (PostgreSQL's pipeline) overrides this to wait once."""
        getters: dict[str, Callable[[Iterable[str]], Mapping[str, Item]]] = {
            "episode": self.get_episodes, "fact": self.get_facts, "note": self.get_notes,
            "knowledge": self.get_knowledge,
        }
        names = list(tags)
        return KeyedReads(
            {kind: dict(getters[kind](ids)) for kind, ids in (items or {}).items()},
            self.tag_states(user, names) if names else {},
            self.get_profile(user) if profile else None,
        )

    # ------------------------------------------------------------ search and usage
    @abstractmethod
    def search(
        self, user: str, query_terms: list[str], kinds: Iterable[str], limit: int, *, names: Iterable[str] = (),
    ) -> list[Hit]:
        """BM25 over the items' indexed text: the best ``limit`` of each kind, best first
        within a kind (scores of different kinds do not compare). Only completed,
        unarchived episodes and unarchived facts are returned. A hit's ``held``, when
        given, is the :func:`query_tokens` its text holds: what :meth:`index_tokens` would
        say of it, intersected with them.

        ``names``: the query terms that name whom the query asks about. When more than
        ``limit`` of a kind's best ``NAME_DEPTH * limit`` matches hold one of them
        (:func:`common_names`), the kind's hits are those of its best matches that hold
        such a name, ranked by the query's other terms."""

    @abstractmethod
    def index_tokens(self, kind: str, user: str, ids: Iterable[str]) -> dict[str, frozenset[str]]:
        """The tokens full text holds for each of ``user``'s items of ``kind`` among ``ids``
        (:func:`fts_tokens` of its indexed text), as a set: which query words an item
        holds, read from the index instead of splitting its text again."""

    @abstractmethod
    def touch(self, kind: str, ids: Iterable[str], at: datetime, *, by: int = 1) -> None:
        """Usage: uses + ``by`` and last used = at, for items the recall line delivered."""

    # ------------------------------------------------------------ tags
    @abstractmethod
    def get_tags(self, user: str, names: Iterable[str]) -> dict[str, Tag]:
        """Tags by normalized name (see reverie.tags.normalize_tag)."""

    def tag_states(self, user: str, names: Iterable[str]) -> dict[str, TagState]:
        """The status and merge target of tags by normalized name: what recall reads of a tag,
        without reading its whole record. A store overrides this to read the columns alone."""
        return {name: TagState(tag.status, tag.merged_to) for name, tag in self.get_tags(user, names).items()}

    @abstractmethod
    def list_tags(self, user: str, status: str | None = None) -> list[Tag]: ...

    @abstractmethod
    def list_journals(self, user: str, limit: int = 50) -> list[str]:
        """The user's undo journals (as stored JSON), newest first."""

    def counts(self, user: str) -> dict[str, Any]:
        """How much the user has: episodes by status (archived ones too) and how many threads,
        facts by status, note lines, knowledge documents, tags by status. The default reads
        every list; a store overrides it with counting queries (SQLiteStore does)."""
        episodes = self.list_episodes(user, archived=None)
        return {
            "episodes_by_status": _tally(e.status for e in episodes),
            "threads": len({e.thread for e in episodes}),
            "facts_by_status": _tally(f.status for f in self.list_facts(user, status=("pending", "consolidated", "archived"))),
            "notes": len(self.list_notes(user)),
            "knowledge": len(self.list_knowledge(user)),
            "tags": _tally(t.status for t in self.list_tags(user)),
        }

    # ------------------------------------------------------------ pages (keyset, for the console)
    # Each reads one page of a list in a fixed order and returns the cursor of the next page.
    # The defaults below read the whole list through the methods above and cut a page from
    # it (correct, but as slow as the list is long); a store overrides them with indexed
    # keyset reads (SQLiteStore does), so that a page costs the same at any depth.
    def page_episodes(
        self,
        user: str,
        *,
        thread: str | None = None,
        status: str | None = None,
        archived: bool | None = False,
        until: datetime | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> Page[Episode]:
        """Episodes newest first (by occurred time), ``limit`` at a time."""
        last = decode_cursor(after, (str, str))
        rows = sorted(self.list_episodes(user, thread=thread, status=status, archived=archived, until=until),
                      key=lambda e: (as_utc(e.occurred_at), e.id), reverse=True)
        if last is not None:
            mark = (as_utc(datetime.fromisoformat(last[0])), last[1])
            rows = [e for e in rows if (as_utc(e.occurred_at), e.id) < mark]
        return page_of(rows[: limit + 1], limit, lambda e: (as_utc(e.occurred_at).isoformat(), e.id))

    def page_facts(
        self,
        user: str,
        *,
        status: str | Iterable[str] | None = None,
        category: str | None = None,
        contains: str | None = None,
        order: str = "uses",
        after: str | None = None,
        limit: int = 50,
    ) -> Page[Fact]:
        """Facts (``status`` as in :meth:`list_facts`) whose content contains ``contains``
        (case-insensitive), ordered by ``order`` (one of FACT_ORDERS, each highest first,
        then newest first), ``limit`` at a time."""
        def key(f: Fact) -> tuple[Any, str, str]:
            value: Any = {"uses": f.uses, "recent": 0, "confidence": f.confidence,
                          "last_used": as_utc(f.last_used_at).isoformat() if f.last_used_at else ""}[order]
            return (value, as_utc(f.created_at).isoformat(), f.id)

        last = decode_cursor(after, ((int if order in ("uses", "recent") else float if order == "confidence" else str), str, str))
        facts = self.list_facts(user, status=status, category=category)
        if contains:
            needle = contains.casefold()
            facts = [f for f in facts if needle in f.content.casefold()]
        rows = sorted(facts, key=key, reverse=True)
        if last is not None:
            mark = tuple(last)
            rows = [f for f in rows if key(f) < mark]
        return page_of(rows[: limit + 1], limit, key)

    def page_notes(self, user: str, *, date: str | None = None, after: str | None = None, limit: int = 100) -> Page[Note]:
        """Daily-note lines, the newest day first and each day's lines in the order written."""
        last = decode_cursor(after, (str, int))
        notes = self.list_notes(user, since=date, until=date)
        days: dict[str, list[Note]] = {}
        for note in notes:
            days.setdefault(note.date, []).append(note)
        rows = [(day, n, note) for day in sorted(days, reverse=True) for n, note in enumerate(days[day])]
        if last is not None:
            rows = [r for r in rows if r[0] < last[0] or (r[0] == last[0] and r[1] > last[1])]
        page = page_of(rows[: limit + 1], limit, lambda r: (r[0], r[1]))
        return Page([r[2] for r in page.items], page.next)

    def page_knowledge(self, user: str, *, after: str | None = None, limit: int = 100) -> Page[KnowledgeDoc]:
        """Knowledge documents, the newest first, ``limit`` at a time."""
        last = decode_cursor(after, (int,))
        rows = list(enumerate(self.list_knowledge(user)))[::-1]
        if last is not None:
            rows = [r for r in rows if r[0] < last[0]]
        page = page_of(rows[: limit + 1], limit, lambda r: (r[0],))
        return Page([r[1] for r in page.items], page.next)

    def page_tags(self, user: str, *, status: str | None = None, after: str | None = None, limit: int = 100) -> Page[Tag]:
        """Tags by name, ``limit`` at a time."""
        last = decode_cursor(after, (str,))
        rows = sorted(self.list_tags(user, status=status), key=lambda t: t.name)
        if last is not None:
            rows = [t for t in rows if t.name > last[0]]
        return page_of(rows[: limit + 1], limit, lambda t: (t.name,))

    def page_journals(self, user: str, *, after: str | None = None, limit: int = 50) -> Page[str]:
        """The user's undo journals (as stored JSON), newest first, ``limit`` at a time."""
        last = decode_cursor(after, (int,))
        start = last[0] if last is not None else 0
        rows = self.list_journals(user, start + limit + 1)[start:]
        page = page_of(rows, limit, lambda _: (start + limit,))
        return page

    @abstractmethod
    def delete_user(self, user: str) -> dict[str, int]:
        """Delete everything the store holds of ``user`` (rows, search index, tags, journals,
        keys, dream runs); returns rows deleted per kind. One transaction; irreversible."""

    @abstractmethod
    def purge(self) -> None:
        """Rewrite the store so that what was deleted leaves no bytes in its files (a deleted
        row's text stays in free pages, and a search index keeps a deleted row's words, until
        they are reused or merged): slow on a large store, and it holds other writers back."""

    @abstractmethod
    def learning_backlog(self, user: str | None = None) -> tuple[int, str]:
        """(completed episodes not learned yet, the newest learning error among them or "")."""

    def server_advice(self) -> list[str]:
        """What the store's server does that will cost this memory as it grows (for
        ``health``): nothing for an embedded store."""
        return []

    @abstractmethod
    def count_tags(self, user: str, status: str | None = None) -> int:
        """How many tags the user has (of one status): an index read, not a scan of their rows."""

    @abstractmethod
    def put_tag(self, tag: Tag) -> Tag: ...

    def set_item_tags(self, user: str, kind: str, item_id: str, tags: dict[str, float]) -> None:
        """Replace the tags an item carries (name -> weight); the names must exist."""
        self.set_items_tags(user, kind, {item_id: tags})

    @abstractmethod
    def set_items_tags(self, user: str, kind: str, items: Mapping[str, Mapping[str, float]]) -> None:
        """:meth:`set_item_tags` for many items of one kind (item id -> name -> weight), in
        one go: their postings are written in this order, as one call each would."""

    @abstractmethod
    def postings(
        self, user: str, tag_names: Iterable[str], kinds: Iterable[str], *, per_tag: Mapping[str, int] | None = None
    ) -> list[Posting]:
        """Items carrying the tags, in the order they were tagged; ``per_tag`` (tag -> how many)
        reads only each tag's newest that many: a bounded read for a frequent tag."""

    @abstractmethod
    def tag_counts(self, user: str, names: Iterable[str] | None = None) -> dict[str, int]:
        """How many items carry each tag (of ``names``, or every tag)."""

    def sized_postings(
        self, user: str, caps: Mapping[str, tuple[int, int]], kinds: Iterable[str], *, frequent_over: int,
    ) -> tuple[dict[str, int], list[Posting]]:
        """Each tag's count (as :meth:`tag_counts`) and its newest postings (as :meth:`postings`
        with ``per_tag``): ``caps[tag]`` is (how many while the tag is on at most
        ``frequent_over`` items, how many past that). A read of the counts, then one of the
        postings here; a store where each read is a round trip (PostgreSQL) makes it one."""
        counts = self.tag_counts(user, caps)
        per_tag = {tag: rare if counts.get(tag, 0) <= frequent_over else frequent for tag, (rare, frequent) in caps.items()}
        return counts, self.postings(user, caps, kinds, per_tag=per_tag)

    @abstractmethod
    def put_relation(self, relation: TagRelation) -> None:
        """Write a relation both ways (the caller enforces upgrade-only)."""

    @abstractmethod
    def relations(self, user: str, names: Iterable[str]) -> list[TagRelation]:
        """Relations whose source is one of ``names``."""

    @abstractmethod
    def relation_levels(self, user: str, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The level of each (source, target) relation that exists among ``pairs``: a read of
        those pairs only, however many relations their tags have."""

    @abstractmethod
    def drop_unused_tags(self, user: str, names: Iterable[str]) -> list[str]:
        """Delete those of ``user``'s tags ``names`` that no item carries any more, with their
        relations (what an item deleted for good leaves of its words); returns their names."""

    @abstractmethod
    def retag(self, user: str, old: str, new: str) -> int:
        """Move every posting of ``old`` to ``new`` (tag merge); returns how many moved."""

    @abstractmethod
    def unretag(self, user: str, old: str, new: str, moved: Sequence[tuple[str, str, float]],
                kept: Iterable[tuple[str, str]]) -> None:
        """Take back a :meth:`retag`: ``old`` carries the ``moved`` postings (kind, item id,
        weight) again, and ``new`` no longer does, but on the items it carried before (``kept``)."""

    # ------------------------------------------------------------ runs, keys, settings
    @abstractmethod
    def put_dream_run(self, run: DreamRun) -> None: ...

    @abstractmethod
    def get_dream_run(self, run_id: str) -> DreamRun | None: ...

    @abstractmethod
    def last_dream_run(self, user: str, status: str | None = None) -> DreamRun | None: ...

    @abstractmethod
    def dream_runs(self, user: str) -> list[DreamRun]:
        """Every dream run of ``user``, the newest first (what forgetting a line for good
        reads: their reports tell the lines they wrote)."""

    @abstractmethod
    def put_api_key(self, key: ApiKey, key_hash: str) -> None: ...

    @abstractmethod
    def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    @abstractmethod
    def list_api_keys(self) -> list[ApiKey]: ...

    @abstractmethod
    def revoke_api_key(self, key_id: str, at: datetime) -> bool: ...

    @abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    def salt(self) -> bytes:
        """This install's secret salt, made on first use and copied by ``reverie migrate``: API
        keys are kept as digests keyed by it, and so are ids that held personal data
        (:func:`reverie.inputs.clean_id`)."""
        salt: bytes | None = getattr(self, "_salt", None)
        if salt is None:
            value = self.get_meta(SALT_META)
            if value is None:
                # re-read inside the write transaction: two processes must not pick different salts
                with self.transaction():
                    value = self.get_meta(SALT_META)
                    if value is None:
                        value = secrets.token_hex(32)
                        self.set_meta(SALT_META, value)
            salt = self._salt = bytes.fromhex(value)
        return salt

    # ------------------------------------------------------------ documents
    @abstractmethod
    def put_document(self, user: str, name: str, text: str) -> None:
        """Store a markdown document of ``user`` under a relative name ("MEMORY.md",
        "memory/dreams/2024-05-01.md"), replacing what was there."""

    @abstractmethod
    def get_document(self, user: str, name: str) -> str | None: ...

    @abstractmethod
    def list_documents(self, user: str, prefix: str = "") -> list[str]:
        """The names of ``user``'s documents that start with ``prefix``, sorted."""

    # ------------------------------------------------------------ several processes (shared stores)
    def claim_learning(
        self, owner: str, *, lease_seconds: float, debounce_seconds: float, limit: int, user: str | None = None,
        retry_now: bool = False,
    ) -> list[EpisodeRef]:
        """Claim the due episodes of one (user, agent) for learning: completed, not learned,
        quiet for ``debounce_seconds`` in their thread, not leased by a live claim and not
        waiting to retry (``retry_now``: a failed one need not wait). The claim is a lease held
        by ``owner`` until ``lease_seconds`` pass (a process that dies mid-job loses it);
        :meth:`mark_learned` ends it. Shared stores only."""
        raise NotImplementedError(f"{type(self).__name__} has no shared learning queue")

    def renew_learning(self, owner: str, episode_ids: Iterable[str], lease_seconds: float) -> None:
        """Extend ``owner``'s lease on these episodes (between the batches of a long job)."""
        raise NotImplementedError(f"{type(self).__name__} has no shared learning queue")

    def release_learning(
        self, owner: str, episode_ids: Iterable[str], *, error: str = "", retry_base: float = 60.0,
        retry_max: float = 3600.0,
    ) -> None:
        """Give claimed episodes back unlearned: with ``error``, they wait before they may be
        claimed again (``retry_base`` doubled per failed attempt, at most ``retry_max``)."""
        raise NotImplementedError(f"{type(self).__name__} has no shared learning queue")

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (a store may be asked by what outlived it)."""
        return bool(getattr(self, "_closed", False))

    def ping(self, timeout: float = 2.0) -> None:
        """Whether the store answers a statement now, within about ``timeout`` seconds: a
        StoreError that says why when it does not (a server down, a file gone)."""
        self.schema_version()

    def lock_user(self, user: str) -> None:
        """Inside a transaction: wait until no other transaction of this store works on
        ``user``, and hold that until this one ends (a read, a check and the writes it decides
        on as one step across every process). A store whose transaction takes the whole
        store's write lock at its start (SQLite) holds it already."""

    def try_lock(self, name: str) -> Callable[[], None] | None:
        """A named lock across every process of this store, if free: returns the function
        that releases it, or None while another holder has it. A store that one process
        serves at a time needs no such lock: it always grants it."""
        return _nothing
