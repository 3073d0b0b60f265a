"""The PostgreSQL store: one database that several ``reverie serve`` replicas share.

    store = PostgresStore("postgresql://reverie@db.internal/reverie")
    store = open_store("postgresql://...")          # what Memory and the CLI do

The same model as the SQLite store, in the same shape: a version table and forward
migrations (a newer schema is refused), one transaction per logical write (nested
blocks join the outer one), the same bodies as JSON text. What differs:

* **Every table leads with the user id**, in its primary key and in every index a
  user's reads go through, so the data can be distributed by user (Citus, or per-tenant
  partitioning; see docs/postgres.md). Reads by an item id alone go through a plain
  index on the id.
* **Full text** indexes the very terms SQLite's FTS5 indexes (:func:`reverie.text.index_text`:
  jieba-segmented, stemmed, stopwords dropped), as a ``tsvector`` written directly (no
  parser, so the ``simple`` configuration's view of them is exactly these terms), and as
  rows of ``terms`` kept from it by triggers, whose index gives each term's newest matches
  in a bounded read. Matches are ranked by the BM25 that FTS5's ``bm25()`` computes (k1
  1.2, b 0.75, the same idf), over the user's own rows: recall ranks the same on both
  stores.
* **Writers of one user queue behind each other** (a transaction-scoped advisory lock on
  the user, taken before a transaction first reads or writes that user's rows), the way
  SQLite's one writer at a time orders them, while different users write in parallel.
* **The learning queue is rows**: completed, unlearned episodes are claimed with
  ``SELECT ... FOR UPDATE SKIP LOCKED`` under a lease that runs out when the replica holding
  it dies, so each episode is learned once by whichever replica claims it.
* **Named locks** (one dream per user at a time) are session advisory locks: a replica
  that dies lets go of them with its connection.
* **Markdown documents** (MEMORY.md, the dream diaries) live in the ``documents`` table.

psycopg 3 and its pool come with the extra ``pip install 'reverie[postgres]'``; they are
imported when a store is opened, so ``import reverie`` works without them.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager, nullcontext
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Collection, Container, Iterable, Iterator, Mapping, Sequence
from urllib.parse import quote, unquote

from reverie.errors import StoreBusy, StoreError
from reverie.models import (
    PROFILE_SECTIONS,
    Episode,
    Fact,
    KnowledgeDoc,
    Note,
    Profile,
    ProfileSection,
    Tag,
    TagRelation,
    as_utc,
    check_section,
)
from reverie.store.base import (
    SEARCH_TEXT,
    users_sql,
    searched_fact_text,
    EVERY_WORD_PAST_WINDOW,
    RECENT_THREAD_EPISODES,
    first_distinct,
    FACT_ORDERS,
    MAX_INTEGRITY_PROBLEMS,
    IntegrityProblem,
    best_first,
    best_hits,
    best_rows,
    common_names,
    searched_names,
    NAME_DEPTH,
    migrate_schema,
    with_counters,
    OWNER_TOKENS,
    ApiKey,
    DreamRun,
    EpisodeRef,
    FactText,
    Hit,
    Item,
    KeyedReads,
    Page,
    Posting,
    TagState,
    Store,
    decode_cursor,
    episode_columns,
    episode_days,
    stored_days,
    episode_text,
    fact_columns,
    fts5_idf,
    fts5_norm,
    fts5_term,
    fts_tokens,
    knowledge_digest,
    knowledge_text,
    meta_user,
    note_text,
    query_tokens,
    page_of,
)
from reverie.store.pg_upkeep import Upkeep
from reverie.text import index_text
from reverie.timerefs import MENTION_MAX_DAYS

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

EXTRA = "pip install 'reverie[postgres]'"
SCHEMES = ("postgresql://", "postgres://")

# full-text search ranks every match while a query matches at most this many of a user's
# items of one kind; past it, the newest this many plus all matches of the rare terms
# (the same window as the SQLite store's)
SEARCH_WINDOW = 1000
# a tsvector's limits (a lexeme's length in bytes: store.base.MAX_LEXEME_BYTES): positions per lexeme, the whole value
MAX_POSITIONS = 256
TSVECTOR_BUDGET = 900_000

_KINDS = ("episode", "fact", "note", "knowledge")
_USERS = users_sql("user_id")

_TABLE = {"episode": "episodes", "fact": "facts", "note": "notes", "knowledge": "knowledge"}
# what an item is read by id as (user_id and id first), for get_* and read_keyed alike
_ITEM_COLS = {
    "episode": "user_id, id, uses, last_used_at, learned, archived, status, body",
    "fact": "user_id, id, uses, last_used_at, status, body",
    "note": "user_id, id, body",
    "knowledge": "user_id, id, body",
}
# every table of the store's schema (the migrations create them; a test checks the list)
TABLES = (
    "api_keys", "documents", "dream_runs", "episodes", "facts", "fts_stats", "input_keys", "item_tags", "journals",
    "knowledge", "mentions", "meta", "notes", "profile", "schema_version", "tag_relations", "tag_sizes", "tags",
    "term_sizes", "terms", "user_meta",
)
# which matches recall may deliver (the others still count in BM25's document frequencies)
_SEARCH_OK = {
    "episode": "m.status = 'completed' AND NOT m.archived",
    "fact": "m.status <> 'archived'",
    "note": "TRUE",
    "knowledge": "TRUE",
}
# a search's best rows of a kind that recall may deliver, by pk -> (pk, id): one probe of
# (user_id, pk) a row; with ``pk = ANY(%s)`` the generic plan of the prepared statement
# filtered every row of the user by the array (facts at 1M: 6.4 ms)
_LIVE_BEST = {
    kind: f"SELECT m.pk, m.id FROM unnest(%s::bigint[]) AS k(pk) CROSS JOIN LATERAL (SELECT m.pk, m.id "
          f"FROM {table} m WHERE m.user_id = %s AND m.pk = k.pk AND {_SEARCH_OK[kind]} OFFSET 0) AS m"
    for kind, table in _TABLE.items()
}
# meta keys that belong to one user ("<prefix><user>"): kept in user_meta, led by the user id
_JOURNAL = "journal:"


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(SCHEMES)


def redact_url(url: str) -> str:
    """The URL without its password (for messages and logs): the password of its user part
    and the value of any ``password`` (or ``sslpassword``) query parameter, each shown as
    ``***``. A string operation, read the way libpq reads a URL (the user part ends at the
    first ``@`` before a ``/``), that keeps the URL's shape as written (several hosts, an
    IPv6 address in brackets, a port that is no number) and never raises."""
    if not isinstance(url, str):
        return url
    if "://" not in url:  # a "key=value ..." connection string
        return _KV_PASSWORD.sub(r"\1***", url)
    host = _userinfo_end(url)
    out, rest = url[:host], url[host:]
    if out.endswith("@"):
        scheme = out.index("://") + 3
        colon = out.find(":", scheme)
        if colon >= 0:
            out = out[:colon] + ":***@"
    query = rest.find("?")
    if query < 0:
        return out + rest
    params = []
    for param in rest[query + 1:].split("&"):
        key, eq, _ = param.partition("=")
        if eq and unquote(key).strip().lower().endswith("password"):
            param = key + "=***"
        params.append(param)
    return out + rest[: query + 1] + "&".join(params)


_KV_PASSWORD = re.compile(r"(\b\w*password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def split_schema(url: str) -> tuple[str, str | None]:
    """``postgresql://...?schema=NAME`` -> (the URL without it, NAME): reverie's own
    parameter (libpq has none) for keeping reverie's tables in a schema of their own. The
    rest of the URL stays exactly as written (``postgresql:///db?host=...`` keeps its
    empty host, every other parameter its own encoding)."""
    base, schema = _without_schema(url)
    if schema == "":
        # `?schema=$TENANT` with the variable unset: the default schema (public) would be
        # opened, and migrated, in its place, mixing this memory into whatever lives there
        raise StoreError("?schema= names no schema: give it a name (letters, digits and '_'), or leave "
                         "?schema= out for the database's default schema")
    return base, schema


def _without_schema(url: str) -> tuple[str, str | None]:
    """:func:`split_schema`, an empty ``?schema=`` given back as it is ("")."""
    mark = _query_mark(url)
    if mark < 0:
        return url, None
    schema: str | None = None
    rest: list[str] = []
    for param in url[mark + 1:].split("&"):
        key, _, value = param.partition("=")
        if unquote(key) == "schema":
            if schema is not None:  # the first name or the last: neither is what was meant for sure
                raise StoreError("?schema= names one schema, once (a plain name: letters, digits and '_')")
            schema = unquote(value)
        elif param:
            rest.append(param)
    base = url[:mark]
    return (base + "?" + "&".join(rest) if rest else base), schema


def _userinfo_end(url: str) -> int:
    """Where a URL's host part starts: after ``user[:password]@`` (libpq takes the first ``@``
    before a ``/`` to end it), else after ``scheme://``; 0 when there is no scheme."""
    scheme = url.find("://")
    if scheme < 0:
        return 0
    start = scheme + 3
    slash = url.find("/", start)
    at = url.find("@", start, slash if slash >= 0 else len(url))
    return at + 1 if at >= 0 else start


def _query_mark(url: str) -> int:
    """The index of the ``?`` that starts a URL's parameters (one in its password does not), or -1."""
    return url.find("?", _userinfo_end(url))


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` (see :func:`split_schema`) in place of any it named."""
    base, _ = _without_schema(url)
    return base + ("&" if "?" in base else "?") + "schema=" + quote(schema, safe="")


@contextmanager
def scratch_schema(url: str, prefix: str = "reverie_scratch") -> Iterator[str]:
    """``url`` naming a new schema of its own (created by the store that opens it), dropped
    with everything in it afterwards: a fresh store on a shared server (benchmarks, checks)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        yield with_schema(url, name)
    finally:
        with _driver().connect(split_schema(url)[0], autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {_ident(name)} CASCADE")


def _driver() -> Any:
    """psycopg, or a StoreError that names the extra that brings it."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(f"the PostgreSQL store needs psycopg 3 and psycopg-pool: {EXTRA}") from exc
    return psycopg


@contextmanager
def _schema_of(url: str) -> Iterator[tuple["Connection[Any]", str, set[str]]]:
    """A connection to the server of ``url``, the schema it names (the connection's own
    without ?schema=) and the tables that schema holds: read, nothing written. A server that
    does not answer raises psycopg's error."""
    conninfo, schema = split_schema(url)
    if schema is not None:
        _ident(schema)  # a name no store could have is said as such, before any connection
    with _driver().connect(conninfo, connect_timeout=5, autocommit=True) as conn:
        named = schema or str(conn.execute("SELECT current_schema()").fetchone()[0])
        tables = {str(r[0]) for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (named,))}
        yield conn, named, tables


def holds_store(url: str) -> bool:
    """Whether the schema ``url`` names holds a reverie store, read without writing anything;
    a server that does not answer is a StoreError that says so."""
    psycopg = _driver()
    try:
        with _schema_of(url) as (_, _, tables):
            return "schema_version" in tables
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL at {redact_url(url)}: {' '.join(str(exc).split())}") from None


def migration_target_problem(url: str) -> str:
    """What would stop a migration into ``url``, read without writing anything ("" when
    nothing): a server that does not answer, a schema that already holds a memory, or one
    holding another application's tables under reverie's names."""
    psycopg = _driver()
    where = redact_url(url)
    try:
        with _schema_of(url) as (conn, named, tables):
            ours = sorted(tables & set(TABLES))
            if ours and "schema_version" not in tables:
                return (f"schema {named!r} at {where} holds tables of another application with names reverie uses "
                        f"({', '.join(ours)}): name a new schema with ?schema=NAME")
            filled = [t for t in ours if t != "schema_version" and conn.execute(
                f'SELECT EXISTS (SELECT 1 FROM "{named}"."{t}")').fetchone()[0]]  # type: ignore[index]
    except psycopg.Error as exc:
        return f"cannot connect to PostgreSQL at {where}: {' '.join(str(exc).split())}"
    except StoreError as exc:  # a schema name no store could have
        return str(exc)
    if filled:
        return (f"{where} already holds a memory (rows in {', '.join(filled)}): migrate into an empty database, "
                "or name a new schema with ?schema=NAME")
    return ""


# how long a statement waits on a connection whose server stopped answering (libpq's
# tcp_user_timeout): then it fails, and the request with it (a 503)
TCP_USER_TIMEOUT_MS = 30_000

# how often a replica's learning loop reads the schema version, to notice a newer reverie
# that upgraded the schema while this one runs
SCHEMA_CHECK_SECONDS = 5.0

log = logging.getLogger("reverie.store")

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def _lock_schema(schema: str) -> str:
    """The schema's part of the store's advisory lock names: the same for every URL that
    reaches the same tables (``?schema=public`` and a URL without ?schema= whose default is
    public; ``?schema=X`` and a URL whose ``options`` set the search path to X), so that
    replicas configured either way still exclude each other. public is "" (as a URL without
    ?schema= has always named it)."""
    return "" if schema == "public" else schema


def _ident(name: str) -> str:
    if not _SCHEMA_NAME.fullmatch(name):
        raise StoreError(f"schema {name!r} is not a plain name (letters, digits and '_', at most 63)")
    return f'"{name}"'


# ---------------------------------------------------------------- full text


def _quote_lexeme(lexeme: str) -> str:
    if "'" not in lexeme and "\\" not in lexeme:
        return "'" + lexeme + "'"
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(search_text: str) -> tuple[str, int]:
    """(a tsvector literal of the text's index terms, how many tokens it has). Positions
    only carry how often a lexeme occurs (its term frequency, at most 256), which is all
    BM25 needs; no text-search parser runs, so the lexemes are exactly the index terms."""
    tokens = fts_tokens(index_text(search_text)) if search_text else []
    counts = Counter(tokens)  # first-seen order, as the lexemes come
    cap = MAX_POSITIONS
    size = sum(len(t.encode("utf-8")) + 8 + 2 * min(c, cap) for t, c in counts.items())
    while size > TSVECTOR_BUDGET and cap > 1:  # a huge text keeps every lexeme, with fewer counts
        cap //= 4
        size = sum(len(t.encode("utf-8")) + 8 + 2 * min(c, cap) for t, c in counts.items())
    parts = [_quote_lexeme(t) + ":" + _POSITIONS[min(c, cap)] for t, c in counts.items()]
    return " ".join(parts), len(tokens)


_POSITIONS = [",".join(str(i) for i in range(1, n + 1)) for n in range(MAX_POSITIONS + 1)]


def bm25(
    rows: Iterable[tuple[int, int, list[tuple[int, int]]]], idf: Sequence[float], avgdl: float,
) -> dict[int, float]:
    """pk -> FTS5's bm25() of each row (pk, length, parts): ``parts`` are (the query lexeme's
    index, its count in the row), added in the query's order as FTS5 adds its phrases;
    ``length`` the row's tokens. Rows of one length share their norm."""
    avgdl = avgdl if avgdl > 0 else 1.0
    norms: dict[int, float] = {}
    out: dict[int, float] = {}
    for pk, length, parts in rows:
        norm = norms.get(length)
        if norm is None:
            norm = norms[length] = fts5_norm(length + OWNER_TOKENS, avgdl)
        score = 0.0
        for i, tf in (parts if len(parts) == 1 else sorted(parts)):
            score += fts5_term(idf[i], tf, norm)
        out[pk] = score
    return out


def fts5_avgdl(rows: int, tokens: int) -> float:
    """FTS5's average row length: every row's tokens, its owner token included, over the rows."""
    return (tokens + OWNER_TOKENS * rows) / rows if rows else 0.0


# ---------------------------------------------------------------- schema

MIGRATIONS: list[str | Callable[["Connection[Any]"], None]] = [
    # 1: the whole model, led by the user id
    """
    CREATE TABLE episodes (
        user_id text NOT NULL,
        id text NOT NULL,
        pk bigint GENERATED BY DEFAULT AS IDENTITY,
        agent text,
        thread text NOT NULL,
        status text NOT NULL,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        occurred_at timestamptz NOT NULL,
        archived boolean NOT NULL DEFAULT false,
        learned boolean NOT NULL DEFAULT false,
        learn_error text NOT NULL DEFAULT '',
        uses integer NOT NULL DEFAULT 0,
        last_used_at timestamptz,
        body text NOT NULL,
        tsv tsvector NOT NULL DEFAULT ''::tsvector,
        doc_len integer NOT NULL DEFAULT 0,
        queued_at timestamptz NOT NULL DEFAULT now(),
        learn_attempts integer NOT NULL DEFAULT 0,
        retry_at timestamptz,
        lease_owner text,
        lease_until timestamptz,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX episodes_by_id ON episodes (id);
    CREATE INDEX episodes_user_time ON episodes (user_id, occurred_at, pk);
    CREATE INDEX episodes_user_thread ON episodes (user_id, thread, occurred_at, pk);
    CREATE INDEX episodes_user_pk ON episodes (user_id, pk);
    CREATE INDEX episodes_pending ON episodes (user_id, pk) WHERE status = 'pending';
    CREATE INDEX episodes_queue ON episodes (user_id, agent, thread, queued_at)
        WHERE status = 'completed' AND NOT learned;

    CREATE TABLE facts (
        user_id text NOT NULL,
        id text NOT NULL,
        pk bigint GENERATED BY DEFAULT AS IDENTITY,
        agent text,
        status text NOT NULL,
        category text NOT NULL,
        updated_at timestamptz NOT NULL,
        uses integer NOT NULL DEFAULT 0,
        last_used_at timestamptz,
        body text NOT NULL,
        tsv tsvector NOT NULL DEFAULT ''::tsvector,
        doc_len integer NOT NULL DEFAULT 0,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX facts_by_id ON facts (id);
    CREATE INDEX facts_user_status ON facts (user_id, status, pk);
    CREATE INDEX facts_user_pk ON facts (user_id, pk);

    CREATE TABLE profile (
        user_id text NOT NULL,
        section text NOT NULL,
        summary text NOT NULL,
        updated_at timestamptz,
        PRIMARY KEY (user_id, section)
    );

    CREATE TABLE notes (
        user_id text NOT NULL,
        id text NOT NULL,
        pk bigint GENERATED BY DEFAULT AS IDENTITY,
        date text NOT NULL,
        body text NOT NULL,
        tsv tsvector NOT NULL DEFAULT ''::tsvector,
        doc_len integer NOT NULL DEFAULT 0,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX notes_by_id ON notes (id);
    CREATE INDEX notes_user_date ON notes (user_id, date, pk);

    CREATE TABLE knowledge (
        user_id text NOT NULL,
        id text NOT NULL,
        pk bigint GENERATED BY DEFAULT AS IDENTITY,
        body text NOT NULL,
        tsv tsvector NOT NULL DEFAULT ''::tsvector,
        doc_len integer NOT NULL DEFAULT 0,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX knowledge_by_id ON knowledge (id);
    CREATE INDEX knowledge_user_pk ON knowledge (user_id, pk);

    CREATE TABLE fts_stats (
        user_id text NOT NULL,
        kind text NOT NULL,
        rows bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (user_id, kind)
    );

    CREATE TABLE tags (
        user_id text NOT NULL,
        name text NOT NULL,
        id bigint GENERATED BY DEFAULT AS IDENTITY,
        status text NOT NULL,
        merged_to text,
        body text NOT NULL,
        PRIMARY KEY (user_id, name)
    );
    CREATE INDEX tags_user_status ON tags (user_id, status, name);

    CREATE TABLE item_tags (
        user_id text NOT NULL,
        tag text NOT NULL,
        kind text NOT NULL,
        item_id text NOT NULL,
        weight double precision NOT NULL DEFAULT 1.0,
        seq bigint GENERATED BY DEFAULT AS IDENTITY,
        PRIMARY KEY (user_id, tag, kind, item_id)
    );
    CREATE INDEX item_tags_item ON item_tags (user_id, kind, item_id);
    CREATE INDEX item_tags_recent ON item_tags (user_id, tag, seq);

    CREATE TABLE tag_relations (
        user_id text NOT NULL,
        source text NOT NULL,
        target text NOT NULL,
        level text NOT NULL,
        PRIMARY KEY (user_id, source, target)
    );

    CREATE TABLE dream_runs (
        user_id text NOT NULL,
        id text NOT NULL,
        status text NOT NULL,
        started_at timestamptz NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX dream_runs_by_id ON dream_runs (id);
    CREATE INDEX dream_runs_user ON dream_runs (user_id, started_at);

    CREATE TABLE api_keys (
        user_id text NOT NULL,
        id text NOT NULL,
        key_hash text NOT NULL,
        name text NOT NULL,
        admin boolean NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX api_keys_by_hash ON api_keys (key_hash);
    CREATE INDEX api_keys_by_id ON api_keys (id);

    CREATE TABLE input_keys (
        user_id text NOT NULL,
        thread text NOT NULL,
        key text NOT NULL,
        episode_id text NOT NULL,
        PRIMARY KEY (user_id, thread, key)
    );

    CREATE TABLE journals (
        user_id text NOT NULL,
        id text NOT NULL,
        at timestamptz NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX journals_by_id ON journals (id);
    CREATE INDEX journals_user_at ON journals (user_id, at);

    CREATE TABLE user_meta (
        user_id text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (user_id, key)
    );

    CREATE TABLE documents (
        user_id text NOT NULL,
        name text NOT NULL,
        body text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, name)
    );

    CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)
    """,
    # 2: the full-text indexes (see _gin_indexes)
    lambda conn: _gin_indexes(conn),
    # 3: the full-text indexes written through (see _gin_write_through)
    lambda conn: _gin_write_through(conn),
    # 4: how many items carry each tag, kept by triggers (see _tag_sizes)
    lambda conn: _tag_sizes(conn),
    # 5: a tag's newest postings read from the index alone (an index-only scan): the index
    # holds every column recall reads, so the table's scattered rows are not visited
    """
    CREATE INDEX IF NOT EXISTS item_tags_newest ON item_tags (user_id, tag, seq) INCLUDE (kind, item_id, weight);
    DROP INDEX IF EXISTS item_tags_recent
    """,
    # 6: full-text search reads each query term's newest matches from an index of its own
    # (see _term_index), instead of every match through GIN
    lambda conn: _term_index(conn),
    # 7: a fact's confidence and strength in columns, the strongest read from an index
    # (strength = confidence + 0.1 ln(1 + uses), reverie.store.base.strength, moved by touch).
    # The index comes before the values: built after updates of its columns, it could not
    # serve a transaction older than the upgrade's until that one ended (broken HOT chains)
    """
    ALTER TABLE facts ADD COLUMN IF NOT EXISTS confidence double precision NOT NULL DEFAULT 0;
    ALTER TABLE facts ADD COLUMN IF NOT EXISTS strength double precision NOT NULL DEFAULT 0;
    CREATE INDEX IF NOT EXISTS facts_strength ON facts (user_id, status, category, strength DESC, pk);
    UPDATE facts SET confidence = coalesce((body::json ->> 'confidence')::float8, 0),
        strength = coalesce((body::json ->> 'confidence')::float8, 0) + 0.1 * ln((1 + uses)::float8)
    """,
    # 8: a search's best matches are looked up by (user_id, pk) for their ids and whether
    # recall may deliver them: from the index alone, not from rows scattered over the table
    # (at 100k a batch of 120 episodes read as many pages: 4.6 ms a recall)
    lambda conn: _live_lookups(conn),
    # 9: postings keyed by the item they tag, (user_id, kind, item_id, tag), where the key led
    # with the tag: a learning batch's new items (ids ordered by time, reverie.models.new_id)
    # then add their postings at the end of the user's items instead of one page of the key
    # per distinct tag, and the key serves what item_tags_item did (an item's postings are
    # replaced by user, kind and item), so that index goes. Recall reads postings from
    # item_tags_newest, which stays.
    """
    ALTER TABLE item_tags DROP CONSTRAINT item_tags_pkey;
    ALTER TABLE item_tags ADD CONSTRAINT item_tags_pkey PRIMARY KEY (user_id, kind, item_id, tag);
    DROP INDEX IF EXISTS item_tags_item
    """,
    # 10: the same knowledge document found by its digest, from an index (see _knowledge_digests)
    lambda conn: _knowledge_digests(conn),
    # 11: a Chinese text's index holds the parts of its compounds and its dates as one word
    # (see _cjk_indexed_again)
    lambda conn: _cjk_indexed_again(conn),
    # 12: the turns still waiting for their reply (pending, or interrupted by a replica that
    # stopped) are found from a small index, for the sweep that closes those past
    # reply_timeout_seconds (reverie.unanswered); it serves pending_turns as the one before did
    """
    CREATE INDEX IF NOT EXISTS episodes_waiting ON episodes (user_id, pk) WHERE status IN ('pending', 'interrupted');
    DROP INDEX IF EXISTS episodes_pending;
    """,
    # 13: the days each episode speaks of, past or to come, under an index by day (see _mentions)
    lambda conn: _mentions(conn),
]


def _mentions(conn: "Connection[Any]") -> None:
    """13: ``mentions``, the days each episode speaks of (:func:`~reverie.store.base.
    episode_days`: "the dentist on Friday", said on a Monday, speaks of that Friday), one row
    a time, keyed by (user, episode) and indexed by (user, first day): a question about a day
    reads the episodes that spoke of it, whenever they were said, from that index. Filled for
    the episodes stored before, a page at a time, with one COPY a page."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mentions (user_id text NOT NULL, episode_id text NOT NULL, first date NOT NULL, "
        "last date NOT NULL, PRIMARY KEY (user_id, episode_id, first, last))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS mentions_user_day ON mentions (user_id, first, last) INCLUDE (episode_id)")
    conn.execute("DELETE FROM mentions")  # (a store taken back to an older version number holds some)
    last = 0
    while rows := conn.execute("SELECT pk, body FROM episodes WHERE pk > %s ORDER BY pk LIMIT 500", (last,)).fetchall():
        with conn.cursor() as cur, cur.copy("COPY mentions (user_id, episode_id, first, last) FROM STDIN") as copy:
            for _, ep, first, end in stored_days(rows):
                copy.write_row((ep.user, ep.id, first, end))
        last = rows[-1][0]


# a lexeme of CJK characters (reverie.text.CJK_RE), as a regular expression of the server
CJK_CLASS = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"


def _cjk_indexed_again(conn: "Connection[Any]") -> None:
    """11: each item whose ``tsv`` holds Chinese written again from its body, as
    :func:`~reverie.text.index_text` now indexes it: the parts of its compounds after its
    terms ("北京首都机场" also 北京 首都 机场, so "宠物" finds "宠物医院"), and a date of digits
    as one word ("3月5日" and its month "3月", where 月 and 日 stood as words that every date
    holds). Only items whose lexemes hold a CJK character change, and only they are read with
    their bodies: the others (an English store's every item) are looked at once, by a match
    of their ``tsv`` on the server, and left as they are. An item whose body cannot be read
    keeps its ``tsv``; an archived fact holds no lexeme and is not read.

    The new ``tsv`` and ``doc_len`` are copied into a temporary table, a page of items at a
    time, then written in bulk, with what migration 6's triggers would do for each row done
    once for them all: their rows of ``terms`` deleted and inserted again (the statement
    triggers on ``terms`` move ``term_sizes``), and BM25's token totals in ``fts_stats``
    moved by the change of each user's lengths. The row trigger is off for the update: row
    by row it took 27 ms an item, 9 minutes for 20,000 Chinese episodes, which now take 6-10 s
    (half of it jieba and the bodies read); 100k English episodes are looked at in 0.1 s."""
    conn.execute("DROP TABLE IF EXISTS pg_temp.reverie_reindexed")
    conn.execute("CREATE TEMPORARY TABLE reverie_reindexed (user_id text NOT NULL, pk bigint NOT NULL, "
                 "tsv tsvector NOT NULL, doc_len integer NOT NULL, PRIMARY KEY (user_id, pk)) ON COMMIT DROP")
    for kind, table in _TABLE.items():
        code, text_of = _KIND_CODE[kind], SEARCH_TEXT[kind]
        keys = conn.execute(f"SELECT user_id, pk FROM {table} WHERE tsv::text ~ %s ORDER BY user_id, pk",
                            (CJK_CLASS,)).fetchall()
        if not keys:
            continue
        conn.execute("TRUNCATE pg_temp.reverie_reindexed")
        for start in range(0, len(keys), 500):
            page = keys[start : start + 500]
            written = []
            for user, pk, body in conn.execute(
                f"SELECT m.user_id, m.pk, m.body FROM {table} m JOIN unnest(%s::text[], %s::bigint[]) "
                "AS k (user_id, pk) ON m.user_id = k.user_id AND m.pk = k.pk",
                ([u for u, _ in page], [pk for _, pk in page])).fetchall():
                try:
                    tsv, length = tsvector_text(text_of(body))
                except ValueError:  # (pydantic's ValidationError among them)
                    continue
                written.append((user, pk, tsv, length))
            with conn.cursor() as cur, cur.copy(
                    "COPY pg_temp.reverie_reindexed (user_id, pk, tsv, doc_len) FROM STDIN") as copy:
                for row in written:
                    copy.write_row(row)
        conn.execute("ANALYZE pg_temp.reverie_reindexed")
        conn.execute(f"UPDATE fts_stats s SET tokens = s.tokens + d.moved FROM (SELECT r.user_id, "
                     f"sum(r.doc_len - m.doc_len) AS moved FROM pg_temp.reverie_reindexed r JOIN {table} m "
                     "ON m.user_id = r.user_id AND m.pk = r.pk GROUP BY r.user_id) d "
                     "WHERE s.user_id = d.user_id AND s.kind = %s AND d.moved <> 0", (kind,))
        conn.execute(f"DELETE FROM terms t USING pg_temp.reverie_reindexed r "
                     f"WHERE t.user_id = r.user_id AND t.kind = {code} AND t.pk = r.pk")
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_terms_changed")
        conn.execute(f"UPDATE {table} m SET tsv = r.tsv, doc_len = r.doc_len FROM pg_temp.reverie_reindexed r "
                     "WHERE m.user_id = r.user_id AND m.pk = r.pk")
        conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER {table}_terms_changed")
        conn.execute(f"INSERT INTO terms (user_id, kind, lexeme, pk, tf, doc_len) SELECT r.user_id, {code}, "
                     "u.lexeme, r.pk, coalesce(array_length(u.positions, 1), 1), r.doc_len "
                     "FROM pg_temp.reverie_reindexed r, unnest(r.tsv) u")
    conn.execute("DROP TABLE pg_temp.reverie_reindexed")


def _knowledge_digests(conn: "Connection[Any]") -> None:
    """10: each knowledge document's :func:`~reverie.store.base.knowledge_digest` in a column
    under a (user_id, digest) index: adding a document finds the same one stored before in
    one probe, where it read and parsed every document of the user. The documents are read a
    page at a time to fill it."""
    conn.execute("ALTER TABLE knowledge ADD COLUMN IF NOT EXISTS digest text NOT NULL DEFAULT ''")
    last = 0
    while rows := conn.execute("SELECT pk, body FROM knowledge WHERE pk > %s ORDER BY pk LIMIT 200", (last,)).fetchall():
        with conn.cursor() as cur:
            cur.executemany("UPDATE knowledge SET digest = %s WHERE pk = %s",
                            [(knowledge_digest(KnowledgeDoc.model_validate_json(body)), pk) for pk, body in rows])
        last = rows[-1][0]
    conn.execute("CREATE INDEX IF NOT EXISTS knowledge_user_digest ON knowledge (user_id, digest)")


def _live_lookups(conn: "Connection[Any]") -> None:
    """8: each kind's (user_id, pk) index also holds the id and the columns of
    ``_SEARCH_OK`` (built anew under its old name)."""
    for kind, table in _TABLE.items():
        held = {"episode": "id, status, archived", "fact": "id, status"}.get(kind, "id")
        conn.execute(f"DROP INDEX IF EXISTS {table}_user_pk_live")
        conn.execute(f"CREATE INDEX {table}_user_pk_live ON {table} (user_id, pk) INCLUDE ({held})")
        conn.execute(f"DROP INDEX IF EXISTS {table}_user_pk")
        conn.execute(f"ALTER INDEX {table}_user_pk_live RENAME TO {table}_user_pk")

# what else a use moves (the SET clause reads the row as it was: uses + %s is the new count)
_STRONGER = {"episode": "", "fact": ", strength = confidence + 0.1 * ln((1 + uses + %s)::float8)"}

# a kind's number in ``terms`` and ``term_sizes``
_KIND_CODE = {"episode": 1, "fact": 2, "note": 3, "knowledge": 4}


def _term_index(conn: "Connection[Any]") -> None:
    """6: ``terms``, one row per (user, kind, lexeme, item): the item's count of the lexeme
    and its length, under an index whose order is (user, kind, lexeme, pk) and which holds
    those columns, so a term's newest matches are one bounded, index-only range read
    (:meth:`PostgresStore.search`); and ``term_sizes``, each (user, kind, lexeme)'s number
    of items (BM25's document frequency) in one probe. Both are kept by triggers from the
    items' ``tsv``, so every write path (one row, a COPY, a delete of a whole user) keeps
    them. The GIN indexes are dropped: nothing reads them now (related facts, the learning
    line's candidates for a new fact, read the newest facts sharing a term from ``terms``
    too)."""
    # an archived fact is searched by nothing (its tsv empty, its tokens out of BM25's total), as put_fact writes it
    conn.execute("UPDATE fts_stats s SET tokens = s.tokens - d.tokens FROM (SELECT user_id, sum(doc_len) AS tokens "
                 "FROM facts WHERE status = 'archived' GROUP BY user_id) d WHERE s.user_id = d.user_id AND s.kind = 'fact'")
    conn.execute("UPDATE facts SET tsv = ''::tsvector, doc_len = 0 WHERE status = 'archived' AND doc_len <> 0")
    for kind in _KIND_CODE:  # built anew (a migration run again, as a test of an older schema does)
        for event in ("added", "removed", "changed"):
            conn.execute(f"DROP TRIGGER IF EXISTS {_TABLE[kind]}_terms_{event} ON {_TABLE[kind]}")
    conn.execute("DROP TABLE IF EXISTS terms, term_sizes")
    conn.execute(
        "CREATE TABLE terms (user_id text NOT NULL, kind smallint NOT NULL, lexeme text NOT NULL, "
        "pk bigint NOT NULL, tf integer NOT NULL, doc_len integer NOT NULL)"
    )
    for kind, code in _KIND_CODE.items():
        conn.execute(
            f"INSERT INTO terms (user_id, kind, lexeme, pk, tf, doc_len) SELECT m.user_id, {code}, u.lexeme, m.pk, "
            f"coalesce(array_length(u.positions, 1), 1), m.doc_len FROM {_TABLE[kind]} m, unnest(m.tsv) u"
        )
    conn.execute("CREATE INDEX terms_newest ON terms (user_id, kind, lexeme, pk) INCLUDE (tf, doc_len)")
    conn.execute(
        "CREATE TABLE term_sizes (user_id text NOT NULL, kind smallint NOT NULL, lexeme text NOT NULL, "
        "n bigint NOT NULL, PRIMARY KEY (user_id, kind, lexeme))"
    )
    conn.execute("INSERT INTO term_sizes (user_id, kind, lexeme, n) SELECT user_id, kind, lexeme, count(*) FROM terms "
                 "GROUP BY user_id, kind, lexeme")
    # an item's lexemes in, out, and replaced when its text changes (TG_ARGV[0]: its kind's code)
    added = ("INSERT INTO terms (user_id, kind, lexeme, pk, tf, doc_len) SELECT a.user_id, TG_ARGV[0]::smallint, "
             "u.lexeme, a.pk, coalesce(array_length(u.positions, 1), 1), a.doc_len FROM {rows} a, unnest(a.tsv) u")
    removed = ("DELETE FROM terms t USING (SELECT r.user_id, r.pk, u.lexeme FROM {rows} r, unnest(r.tsv) u) d "
               "WHERE t.user_id = d.user_id AND t.kind = TG_ARGV[0]::smallint AND t.lexeme = d.lexeme AND t.pk = d.pk")
    functions = {
        "reverie_terms_added": added.format(rows="added"),
        "reverie_terms_removed": removed.format(rows="removed"),
        "reverie_terms_changed": removed.format(rows="(SELECT OLD.user_id, OLD.pk, OLD.tsv)")
        + "; " + added.format(rows="(SELECT NEW.user_id, NEW.pk, NEW.tsv, NEW.doc_len)"),
        # the document frequencies: one update per lexeme a statement touched, in a fixed order
        "reverie_terms_counted": "INSERT INTO term_sizes (user_id, kind, lexeme, n) SELECT user_id, kind, lexeme, "
        "count(*) FROM added GROUP BY user_id, kind, lexeme ORDER BY user_id, kind, lexeme "
        "ON CONFLICT (user_id, kind, lexeme) DO UPDATE SET n = term_sizes.n + excluded.n",
        "reverie_terms_uncounted": "UPDATE term_sizes s SET n = s.n - d.n FROM (SELECT user_id, kind, lexeme, "
        "count(*) AS n FROM removed GROUP BY user_id, kind, lexeme) d "
        "WHERE s.user_id = d.user_id AND s.kind = d.kind AND s.lexeme = d.lexeme",
    }
    for name, body in functions.items():
        conn.execute(f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql "
                     f"SET search_path FROM CURRENT AS $$ BEGIN {body}; RETURN NULL; END $$")
    conn.execute("CREATE TRIGGER terms_counted AFTER INSERT ON terms REFERENCING NEW TABLE AS added "
                 "FOR EACH STATEMENT EXECUTE FUNCTION reverie_terms_counted()")
    conn.execute("CREATE TRIGGER terms_uncounted AFTER DELETE ON terms REFERENCING OLD TABLE AS removed "
                 "FOR EACH STATEMENT EXECUTE FUNCTION reverie_terms_uncounted()")
    for kind, code in _KIND_CODE.items():
        table = _TABLE[kind]
        conn.execute(f"CREATE TRIGGER {table}_terms_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS added "
                     f"FOR EACH STATEMENT EXECUTE FUNCTION reverie_terms_added('{code}')")
        conn.execute(f"CREATE TRIGGER {table}_terms_removed AFTER DELETE ON {table} REFERENCING OLD TABLE AS removed "
                     f"FOR EACH STATEMENT EXECUTE FUNCTION reverie_terms_removed('{code}')")
        conn.execute(f"CREATE TRIGGER {table}_terms_changed AFTER UPDATE OF tsv, doc_len ON {table} FOR EACH ROW "
                     "WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv OR OLD.doc_len IS DISTINCT FROM NEW.doc_len) "
                     f"EXECUTE FUNCTION reverie_terms_changed('{code}')")
        conn.execute(f"DROP INDEX IF EXISTS {table}_fts")
    conn.execute("CREATE INDEX IF NOT EXISTS notes_user_pk ON notes (user_id, pk)")


def _tag_sizes(conn: "Connection[Any]") -> None:
    """4: ``tag_sizes``, the number of postings of each (user, tag), kept by statement
    triggers on ``item_tags`` (one update per tag a statement touched), so recall reads a
    tag's size (its idf) in one probe instead of counting postings that grow with the store.
    The functions keep the store's search path, so a write from any session counts in its schema."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS tag_sizes (user_id text NOT NULL, tag text NOT NULL, n bigint NOT NULL, "
        "PRIMARY KEY (user_id, tag))"
    )
    conn.execute("DELETE FROM tag_sizes")
    conn.execute("INSERT INTO tag_sizes (user_id, tag, n) SELECT user_id, tag, count(*) FROM item_tags "
                 "GROUP BY user_id, tag")
    conn.execute(
        "CREATE OR REPLACE FUNCTION reverie_tags_counted() RETURNS trigger LANGUAGE plpgsql "
        "SET search_path FROM CURRENT AS $$ BEGIN "
        "INSERT INTO tag_sizes (user_id, tag, n) SELECT user_id, tag, count(*) FROM added GROUP BY user_id, tag "
        "ORDER BY user_id, tag ON CONFLICT (user_id, tag) DO UPDATE SET n = tag_sizes.n + excluded.n; "
        "RETURN NULL; END $$"
    )
    conn.execute(
        "CREATE OR REPLACE FUNCTION reverie_tags_uncounted() RETURNS trigger LANGUAGE plpgsql "
        "SET search_path FROM CURRENT AS $$ BEGIN "
        "UPDATE tag_sizes s SET n = s.n - d.n FROM (SELECT user_id, tag, count(*) AS n FROM removed "
        "GROUP BY user_id, tag) d WHERE s.user_id = d.user_id AND s.tag = d.tag; RETURN NULL; END $$"
    )
    conn.execute("DROP TRIGGER IF EXISTS item_tags_counted ON item_tags")
    conn.execute("DROP TRIGGER IF EXISTS item_tags_uncounted ON item_tags")
    conn.execute("CREATE TRIGGER item_tags_counted AFTER INSERT ON item_tags REFERENCING NEW TABLE AS added "
                 "FOR EACH STATEMENT EXECUTE FUNCTION reverie_tags_counted()")
    conn.execute("CREATE TRIGGER item_tags_uncounted AFTER DELETE ON item_tags REFERENCING OLD TABLE AS removed "
                 "FOR EACH STATEMENT EXECUTE FUNCTION reverie_tags_uncounted()")


def _gin_indexes(conn: "Connection[Any]") -> None:
    """GIN indexes on (user_id, tsv) through btree_gin when the database has it, else on tsv alone."""
    # the extension is not created: a store changes nothing outside its own schema, and these
    # indexes live only until migration 6 drops them
    installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'").fetchone()
    lead = "user_id, " if installed is not None else ""
    for kind in _KINDS:
        table = _TABLE[kind]
        conn.execute(f"CREATE INDEX {table}_fts ON {table} USING gin ({lead}tsv)")


def _gin_write_through(conn: "Connection[Any]") -> None:
    """The full-text indexes without a pending list (``fastupdate`` off), and the entries
    waiting in theirs moved into the index. With a pending list, GIN puts new entries in an
    unsorted list that every search reads whole until a vacuum (or a list past
    ``gin_pending_list_limit``, 4 MB by default) merges it; recall searches on every query, so
    a list of a few thousand items slows each of them (10,000 notes in the list doubled the
    time of a search on the 10,000-episode scale store)."""
    for kind in _KINDS:
        index = f"{_TABLE[kind]}_fts"
        conn.execute(f"ALTER INDEX {index} SET (fastupdate = off)")
        try:
            with conn.transaction():  # a savepoint: only the index's owner may clean its list
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))
        except Exception:
            pass  # the next vacuum merges it


def _past_names(
    ranked: dict[int, float], rows: Mapping[int, tuple[int, list[tuple[int, int]]]], lexemes: list[str],
    query_terms: list[str], names: Mapping[str, list[str]], idf: Sequence[float], avgdl: float, limit: int,
) -> dict[int, float]:
    """Of the best NAME_DEPTH * ``limit`` rows of ``ranked``, those that hold one of the
    ``names`` more than ``limit`` of them hold (:func:`~reverie.store.base.common_names`),
    ranked by the query's other lexemes; ``ranked`` itself when there is no such name (as
    the SQLite store ranks them)."""
    best = best_rows(ranked, NAME_DEPTH * limit)
    if len(best) <= limit:
        return ranked
    holding: dict[str, set[int]] = {}
    for pk in best:
        for i, _ in rows[pk][1]:
            holding.setdefault(lexemes[i], set()).add(pk)
    common, kept = common_names(names, holding, limit)
    rest = set(query_tokens(t for t in query_terms if t not in common))
    if not common or not rest:
        return ranked
    return bm25(((pk, rows[pk][0], [p for p in rows[pk][1] if lexemes[p[0]] in rest]) for pk in best if pk in kept),
                idf, avgdl)


def _held_tokens(
    lexemes: list[str], rows: Mapping[int, tuple[int, list[tuple[int, int]]]], whole: Container[int],
) -> Callable[[int], frozenset[str] | None]:
    """A searched row's query tokens (pk -> tokens), where its parts hold all of them: None
    for a row outside ``whole``."""
    def held(pk: int) -> frozenset[str] | None:
        return frozenset(lexemes[i] for i, _ in rows[pk][1]) if pk in whole else None
    return held


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(timezone.utc) if value is not None else None


def _utc_set(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)


def _ts(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


class PostgresStore(Store):
    """A reverie store in one PostgreSQL database (optionally in one schema of it: add
    ``?schema=NAME`` to the URL). Every method is safe to call from any thread; each
    statement borrows a pooled connection, a transaction keeps one until it ends."""

    shared = True

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 10.0):
        try:
            import psycopg
            from psycopg.types.string import StrDumperUnknown
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StoreError(f"the PostgreSQL store needs psycopg 3 and psycopg-pool: {EXTRA}") from exc

        class WithoutNul(StrDumperUnknown):
            """Text as psycopg sends it, less NUL: the one character a PostgreSQL text cannot
            hold (SQLite keeps it; nothing in reverie means anything by it)."""

            def dump(self, obj: str) -> Any:
                return super().dump(obj.replace("\x00", "") if "\x00" in obj else obj)
        self._psycopg = psycopg
        self.url = url
        self.where = redact_url(url)
        conninfo, self.schema = split_schema(url)
        if self.schema is not None:
            _ident(self.schema)  # a name that is no plain identifier fails here, before any connection
        self._probe(conninfo, timeout)
        self._closed = False
        self._local = threading.local()
        # how many times the statement helpers (_q, _q_all, _do, _count, _many: every read of
        # recall's) waited for the server's answer to a statement or a pipeline of them, not
        # counting a transaction's BEGIN and COMMIT nor the queue's and locks' own statements:
        # a recall's round trips, which `reverie bench scale` reports (approximate when threads
        # share the store)
        self.waits = 0
        self._held: set["Connection[Any]"] = set()  # connections holding a named lock
        self._held_lock = threading.Lock()
        # what a newer reverie's upgrade of the schema under this running process left it
        # ("": nothing), and when the version was last read for it (newer_schema)
        self._outdated = ""
        self._schema_read_at = 0.0
        # the schema in the advisory locks' names (dreams, the nightly run, users' writers,
        # migrations): the one the tables live in, however the URL reached it
        self._lock_schema = _lock_schema(self.schema or "")
        schema = self.schema

        def configure(conn: "Connection[Any]") -> None:
            conn.adapters.register_dumper(str, WithoutNul)
            conn.execute("SET TIME ZONE 'UTC'")
            # every statement of reverie's is a short read or write of one user's rows: compiling
            # one (JIT, when a plan's estimated cost passes jit_above_cost, as it does on tables
            # never analyzed) costs milliseconds and never pays off
            conn.execute("SET jit = off")
            if schema:
                # the store's schema alone: a name it does not hold (a migration's DROP ... IF
                # EXISTS of a table not made yet) must never reach another schema's, such as
                # public's store. Nothing of reverie's lives in public: extensions' operator
                # classes and catalog functions are found without the search path
                conn.execute(f"SET search_path TO {_ident(schema)}")

        pool: "ConnectionPool[Any]" = ConnectionPool(
            conninfo, min_size=min_size, max_size=max_size, kwargs={"autocommit": True, **self._alive(conninfo)},
            configure=configure,
            open=False, timeout=timeout, name="reverie",
        )
        try:
            pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {self.where}: {self._reason(exc)}") from exc
        self._pool = pool
        # vacuum and statistics where the server's autovacuum does not keep them (pg_upkeep)
        self._upkeep = Upkeep(pool.connection, TABLES)
        try:
            self._migrate()
        except BaseException:
            pool.close()
            raise

    def _alive(self, conninfo: str) -> dict[str, int]:
        """libpq's TCP settings that end a statement waiting on a server gone silent (a host
        frozen, a network cut) within about 30 s, where the kernel's defaults wait hours;
        what the URL sets itself stays (libpq leaves them aside over a Unix socket)."""
        given = self._psycopg.conninfo.conninfo_to_dict(conninfo)
        wanted = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
                  "tcp_user_timeout": TCP_USER_TIMEOUT_MS}
        return {k: v for k, v in wanted.items() if k not in given}

    def _probe(self, conninfo: str, timeout: float) -> None:
        """One connection made directly before the pool opens, so that a URL that cannot
        connect (a wrong host, a closed port, a missing database or role) fails at once with
        libpq's own reason on one line, instead of the pool's retries for ``timeout`` seconds
        and their log lines."""
        psycopg = self._psycopg
        try:
            given = psycopg.conninfo.conninfo_to_dict(conninfo)
            wait = {} if given.get("connect_timeout") else {"connect_timeout": max(1, min(int(timeout), 5))}
            psycopg.connect(conninfo, **wait).close()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.where}: {self._reason(exc)}") from None

    def _reason(self, exc: BaseException) -> str:
        """An error's message on one line, with no password of the URL's in it."""
        text = " ".join(str(exc).split())
        try:
            given = self._psycopg.conninfo.conninfo_to_dict(split_schema(self.url)[0])
        except Exception:
            given = {}
        # libpq does not quote a password back, but a message never shows one (one of a
        # character or two would only garble it)
        secrets = {str(v) for k, v in given.items() if k.endswith("password") and len(str(v or "")) > 2}
        for secret in sorted(secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    # ------------------------------------------------------------ connections
    def _in_tx(self) -> bool:
        return bool(getattr(self._local, "depth", 0))

    @contextmanager
    def _connection(self) -> Iterator["Connection[Any]"]:
        if self._in_tx():
            yield self._local.conn
            return
        try:
            with self._pooled() as conn:
                yield conn
        except self._psycopg.OperationalError as exc:
            raise self._failed(exc) from exc

    def _wrote(self) -> None:
        """A statement of its own (outside a transaction, whose end says it) changed rows: the
        upkeep looks at the counters soon. A read changes none, so a recall never wakes it."""
        if not self._in_tx():
            self._upkeep_soon()

    def _upkeep_soon(self) -> None:
        """Wake the upkeep, unless the store is closed (a write racing close would start its
        thread again, only to meet the closed pool)."""
        if not self._closed:
            self._upkeep.soon()

    def _failed(self, exc: Exception) -> StoreError:
        """What a failed statement or transaction raises: StoreBusy when the server rolled it
        back for another writer (SQLSTATE class 40: a deadlock, a serialization failure) or a
        lock outlasted ``lock_timeout`` (55P03), else StoreError."""
        state = getattr(exc, "sqlstate", None) or ""
        if state.startswith("40") or state == "55P03":
            return StoreBusy(f"the PostgreSQL store at {self.where} was busy, nothing was written; "
                             f"try again: {exc}")
        return StoreError(f"the PostgreSQL store at {self.where} failed: {exc}")

    @contextmanager
    def transaction(self, *, batch: bool = False, wait: float | None = None) -> Iterator[None]:
        local = self._local
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        try:
            with self._pooled() as conn:
                local.conn, local.depth, local.locked, local.pipe = conn, 1, set(), None
                try:
                    # batch: pipeline mode, statements sent without waiting for each answer, so
                    # that this process and the server work at once (an ingest or learning batch:
                    # hundreds of small writes); a read syncs, and so does the commit
                    with conn.pipeline() if batch else nullcontext() as pipe, conn.transaction():
                        local.pipe = pipe
                        yield
                finally:
                    local.conn, local.depth, local.locked, local.pipe = None, 0, set(), None
        except self._psycopg.OperationalError as exc:
            raise self._failed(exc) from exc
        self._upkeep_soon()  # a transaction ended: the upkeep looks at the counters soon

    def _q(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one statement."""
        with self._connection() as conn:
            cursor = conn.execute(sql, params)
            rows = cursor.fetchall()
        self.waits += 1
        if not (cursor.statusmessage or "").startswith("SELECT"):  # rows returned by a write: RETURNING
            self._wrote()
        return rows

    def _q_all(self, statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]]) -> list[list[tuple[Any, ...]]]:
        """Rows of several reads that do not depend on each other, sent in one round trip: a
        pipeline, whose end syncs once, before any result is fetched (fetching inside it would
        ask the server for a flush, a round trip of its own). Inside a transaction, one at a
        time, as the transaction's locks and batch pipeline expect."""
        if len(statements) < 2 or self._in_tx():
            return [self._q(sql, params) for sql, params in statements]
        with self._connection() as conn:
            with conn.pipeline():
                cursors = [conn.execute(sql, params) for sql, params in statements]
            self.waits += 1
            return [cursor.fetchall() for cursor in cursors]

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self._q(sql, params)
        return rows[0] if rows else None

    def _do(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement (in a batch transaction, without waiting for its answer)."""
        with self._connection() as conn:
            conn.execute(sql, params)
        if getattr(self._local, "pipe", None) is None:  # in a batch transaction: sent, not waited for
            self.waits += 1
        self._wrote()

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed (a batch transaction waits for it)."""
        with self._connection() as conn:
            cursor = conn.execute(sql, params)
            pipe = getattr(self._local, "pipe", None)  # set only inside a batch transaction
            if pipe is not None:
                pipe.sync()
        self.waits += 1
        self._wrote()
        return cursor.rowcount

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._connection() as conn:
            with conn.cursor() as cur:
                cur.executemany(sql, rows)
        if getattr(self._local, "pipe", None) is None:
            self.waits += 1
        self._wrote()

    def ping(self, timeout: float = 2.0) -> None:
        """In a thread of its own, waited for ``timeout`` seconds: a server that stopped
        answering (a frozen host, a partition) leaves a statement waiting on its socket until
        TCP gives up (``tcp_user_timeout``), and the ping must say so before that."""
        self._check_open()
        done, failed = threading.Event(), []

        def ask() -> None:
            try:
                with self._pool.connection(timeout=timeout) as conn:
                    self._read_schema_version(conn)
            except Exception as exc:  # the pool's timeout, or the server's error
                failed.append(exc)
            finally:
                done.set()

        threading.Thread(target=ask, name="reverie-ping", daemon=True).start()
        if not done.wait(timeout):
            raise StoreError(f"PostgreSQL at {self.where} does not answer: no answer within {timeout:g} s")
        if failed:
            raise StoreError(f"PostgreSQL at {self.where} does not answer: {self._reason(failed[0])}") from failed[0]
        if self._outdated:  # it answers, but a newer reverie changed the schema under this one
            raise StoreError(self._outdated)

    def _read_schema_version(self, conn: "Connection[Any]") -> None:
        """Read the schema version on ``conn``: one newer than this reverie's (a newer reverie
        upgraded the store while this process runs) is kept in ``_outdated`` and logged once."""
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        self._schema_read_at = time.monotonic()
        version = int(row[0]) if row else 0
        if version <= len(MIGRATIONS):
            self._outdated = ""  # (a schema restored from before the upgrade serves again)
        elif not self._outdated:
            self._outdated = (
                f"the store at {self.where} has schema version {version}, newer than this reverie understands "
                f"({len(MIGRATIONS)}): a newer reverie upgraded it while this process ran; upgrade this one "
                "(it answers 503 at /readyz and learns nothing meanwhile, so as not to write what the newer "
                "schema would miss)")
            log.warning("%s", self._outdated)

    def lock_user(self, user: str) -> None:
        self._lock([user])

    def _lock_key(self, name: str) -> str:
        return f"reverie:{self._lock_schema}:{name}"

    def _lock(self, names: Iterable[str]) -> None:
        """Inside a transaction: wait for the transaction-scoped lock of each name (a user
        id, or "meta:KEY") this transaction does not hold yet, in a fixed order."""
        if not self._in_tx():
            return
        held: set[str] = self._local.locked
        for name in sorted(set(names) - held):
            self._local.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._lock_key(name),))
            held.add(name)

    @staticmethod
    def _by_id_sql(table: str, columns: str) -> str:
        return (f"SELECT r.* FROM unnest(%s::text[]) AS k(id) CROSS JOIN LATERAL "
                f"(SELECT {columns} FROM {table} t WHERE t.id = k.id OFFSET 0) AS r")

    def _by_id(self, table: str, columns: str, ids: list[str]) -> list[tuple[Any, ...]]:
        """The ``columns`` (user_id first) of the rows of ``table`` with these ids; inside a
        transaction their users are locked first, so the rows are read again if a lock had
        to be waited for. Each id is one probe of the table's id index (a lateral read the
        planner cannot turn into a scan of the whole table, whatever its statistics say)."""
        sql = self._by_id_sql(table, columns)
        rows = self._q(sql, (ids,))
        if self._in_tx():
            fresh = {r[0] for r in rows} - self._local.locked
            if fresh:
                self._lock(fresh)
                rows = self._q(sql, (ids,))
        return rows

    def _migrate(self) -> None:
        try:
            with self.transaction():
                conn = self._local.conn
                if not self.schema:  # the schema the tables live in, whichever way the URL named it
                    row = conn.execute("SELECT current_schema()").fetchone()
                    self._lock_schema = _lock_schema(str(row[0]) if row and row[0] else "")
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._lock_key("migrate"),))
                if self.schema:
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(self.schema)}")
                else:  # the schema the tables are made in, alone: no DROP ... IF EXISTS reaches past it
                    conn.execute("SELECT set_config('search_path', quote_ident(current_schema()), true) "
                                 "WHERE current_schema() IS NOT NULL")
                migrate_schema(conn, MIGRATIONS, self.where, "%s")
        except self._psycopg.errors.DuplicateTable as exc:
            # another application's table (or index) with one of reverie's names, in the schema the
            # store would make its own: nothing was made (the upgrade is one transaction)
            where = f"schema {self.schema!r}" if self.schema else "the database's default schema (public)"
            raise StoreError(
                f"the PostgreSQL store at {self.where} cannot create its tables: {where} already holds a "
                f"table of another application with a name reverie uses ({' '.join(str(exc).split())}); keep "
                "reverie's tables in a schema of their own: "
                + ("name a new one in ?schema=NAME" if self.schema else "add ?schema=NAME to the URL")
            ) from None

    def schema_version(self) -> int:
        row = self._one("SELECT version FROM schema_version")
        return int(row[0]) if row else 0

    def integrity_problems(self) -> list[IntegrityProblem]:
        """The derived data the triggers keep against what it is derived from: each item's
        term rows against its lexemes (counted), the term and tag counts against their rows,
        and each user's full-text totals against their items. The server keeps its own pages
        (data checksums, and the amcheck extension where it is installed: see
        docs/postgres.md)."""
        problems: list[IntegrityProblem] = []
        present = {str(r[0]) for r in self._q("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        if missing := sorted(set(TABLES) - present):
            # (a reverie before a4366b0 dropped the term index of a schema beside its own): the
            # checks below would fail on them; what holds the items can be exported and imported
            derived = {"terms", "term_sizes", "tag_sizes", "fts_stats"}
            return [IntegrityProblem(f"the store's table(s) {', '.join(missing)} are missing: searches and writes "
                                     "that need them fail", damaged=not set(missing) <= derived)]
        for kind, code in _KIND_CODE.items():
            table = _TABLE[kind]
            row = self._one(
                f"SELECT (SELECT coalesce(sum(cardinality(tsvector_to_array(tsv))), 0) FROM {table}), "
                f"(SELECT count(*) FROM terms WHERE kind = {code})")
            if row is not None and int(row[0]) != int(row[1]):
                problems.append(IntegrityProblem(f"the term index holds {row[1]} row(s) of {kind}s where their "
                                                 f"text has {row[0]} lexeme(s): search misses or mis-ranks them"))
            row = self._one(
                f"SELECT count(*) FROM (SELECT user_id, count(*) AS n, sum(doc_len) AS tokens FROM {table} "
                "GROUP BY user_id) m "
                f"FULL JOIN (SELECT user_id, rows, tokens FROM fts_stats WHERE kind = %s AND (rows <> 0 OR tokens <> 0)) "
                "s USING (user_id) WHERE m.n IS DISTINCT FROM s.rows OR m.tokens IS DISTINCT FROM s.tokens", (kind,))
            if row is not None and int(row[0]):
                problems.append(IntegrityProblem(f"the full-text totals of {row[0]} user(s) differ from their "
                                                 f"{kind}s: search ranks them wrongly"))
        # each derived count against the rows it counts: (source, its groups, the counts, what a difference means)
        for counted, keys, counts, means in (
            ("terms", "user_id, kind, lexeme", "term_sizes", "term count(s) differ from the term index: "
             "search ranks those words wrongly"),
            ("item_tags", "user_id, tag", "tag_sizes", "tag count(s) differ from the tag's postings: "
             "recall weighs those tags wrongly"),
        ):
            row = self._one(f"SELECT count(*) FROM (SELECT {keys}, count(*) AS n FROM {counted} GROUP BY {keys}) c "
                            f"FULL JOIN (SELECT {keys}, n FROM {counts} WHERE n <> 0) s USING ({keys}) "
                            "WHERE c.n IS DISTINCT FROM s.n")
            if row is not None and int(row[0]):
                problems.append(IntegrityProblem(f"{row[0]} {means}"))
        return problems[:MAX_INTEGRITY_PROBLEMS]

    def _check_open(self) -> None:
        if self._closed:  # the pool's own error would name no store
            raise StoreError(f"the store at {self.where} is closed: open it (a Memory) again to use it")

    def _pooled(self) -> Any:
        """A connection of the pool (the store must be open)."""
        self._check_open()
        return self._pool.connection()

    def close(self) -> None:
        self._closed = True
        self._upkeep.stop()
        with self._held_lock:
            held, self._held = list(self._held), set()
        for conn in held:  # named locks end with their sessions
            try:  # let go now: the server ends a closed session's locks only when its backend has exited
                conn.execute("SELECT pg_advisory_unlock_all()")
            except Exception:
                pass  # a broken session: closing it is all there is to do
            conn.close()
        self._pool.close()

    def filled_tables(self) -> list[str]:
        """The store's tables that hold a row (its schema version aside), in one read of at most
        one row each: none in a store nothing was written to."""
        tables = [t for t in TABLES if t != "schema_version"]
        sql = " UNION ALL ".join(f"SELECT '{t}' WHERE EXISTS (SELECT 1 FROM {t})" for t in tables)
        return sorted(str(r[0]) for r in self._q(sql))

    def users(self) -> list[str]:
        return [r[0] for r in self._q(_USERS)]

    # ------------------------------------------------------------ shared row writing
    def _write(self, kind: str, columns: dict[str, Any], search_text: str | None) -> None:
        """Insert or update a row by (user, id) and its full-text columns unless
        ``search_text`` is None (then an existing row keeps them; a new one has none)."""
        table, user, item = _TABLE[kind], columns["user_id"], columns["id"]
        names = [n for n in columns if n not in ("user_id", "id")]
        keep_text = search_text is None  # an existing row keeps its full-text columns
        tsv, length = tsvector_text(search_text or "")
        cols = ["user_id", "id", *names, "tsv", "doc_len"]
        marks = ", ".join(["%s"] * (len(cols) - 2) + ["%s::tsvector", "%s"])
        sets = ", ".join(f"{n} = excluded.{n}" for n in (names if keep_text else [*names, "tsv", "doc_len"]))
        if kind == "episode" and not keep_text:  # a turn completed now enters the learning queue now
            sets += (", queued_at = CASE WHEN excluded.status = 'completed' AND episodes.status <> 'completed' "
                     "THEN now() ELSE episodes.queued_at END")
        # one statement, whose answer nobody waits for: the row, and BM25's row and token counts
        # moved by what it replaced (the CTE "old" reads the row as it was before the insert);
        # a row that keeps its text moves no count
        moved = "WHERE NOT EXISTS (SELECT 1 FROM old)" if keep_text else ""
        with self.transaction():
            self._lock([user])
            self._local.conn.execute(
                f"WITH old AS (SELECT doc_len FROM {table} WHERE user_id = %s AND id = %s), "
                f"up AS (INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks}) "
                f"ON CONFLICT (user_id, id) DO UPDATE SET {sets} RETURNING 1) "
                "INSERT INTO fts_stats (user_id, kind, rows, tokens) "
                "SELECT %s, %s, CASE WHEN EXISTS (SELECT 1 FROM old) THEN 0 ELSE 1 END, "
                f"%s - coalesce((SELECT doc_len FROM old), 0) FROM (SELECT count(*) FROM up) AS written {moved} "
                "ON CONFLICT (user_id, kind) DO UPDATE SET rows = fts_stats.rows + excluded.rows, "
                "tokens = fts_stats.tokens + excluded.tokens",
                [user, item, user, item, *(columns[n] for n in names), tsv, length, user, kind, length],
            )

    def load_items(self, kind: str, items: Sequence[Episode | Fact | Note | KnowledgeDoc]) -> None:
        """New rows of one kind, many at a time, for a copy into an empty store (``reverie
        migrate``): one COPY of them all with their full-text columns, and one
        update of BM25's row and token counts per user. A row that exists already is an error
        (nothing is replaced, so the counts stay right)."""
        if not items:
            return
        table = _TABLE[kind]
        prepared = [_LOADERS[kind](item) for item in items]
        names = list(prepared[0][0])
        rows: list[list[Any]] = []
        totals: dict[str, list[int]] = {}
        for columns, text in prepared:
            tsv, length = tsvector_text(text)
            rows.append([*(columns[n] for n in names), tsv, length])
            count = totals.setdefault(columns["user_id"], [0, 0])
            count[0] += 1
            count[1] += length
        # an episode's days spoken of, as put_episode writes them
        days = [(e.user, e.id, first, last) for e in items if isinstance(e, Episode) for first, last in episode_days(e)]
        with self.transaction():
            self._copy_rows(table, [*names, "tsv", "doc_len"], set(totals), rows)
            self._copy_rows("mentions", ["user_id", "episode_id", "first", "last"], set(totals), days)
            self._many(
                "INSERT INTO fts_stats (user_id, kind, rows, tokens) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (user_id, kind) DO UPDATE SET rows = fts_stats.rows + excluded.rows, "
                "tokens = fts_stats.tokens + excluded.tokens",
                [(user, kind, n, tokens) for user, (n, tokens) in totals.items()],
            )

    def load_tags(self, tags: Sequence[Tag]) -> None:
        """New tags, many at a time (one COPY), for a copy into an empty store."""
        self._copy_rows("tags", ("user_id", "name", "status", "merged_to", "body"), {t.user for t in tags},
                        [(t.user, t.name, t.status, t.merged_to, _tag_body(t)) for t in tags])

    def load_inputs(self, user: str, rows: Iterable[tuple[str, str, str]]) -> None:
        """New (thread, key, episode id) input keys, many at a time (one COPY), for a copy into an empty store."""
        self._copy_rows("input_keys", ("user_id", "thread", "key", "episode_id"), {user},
                        ((user, *row) for row in rows))

    def _copy_rows(self, table: str, columns: Sequence[str], users: set[str], rows: Iterable[Sequence[Any]]) -> None:
        """One COPY of ``rows`` into ``table`` (its statement triggers run once); the rows may
        come one at a time, as they are read."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        with self.transaction():
            if self._local.pipe is not None:
                raise StoreError("COPY cannot run inside a batch transaction (pipeline mode)")
            self._lock(users)
            with self._local.conn.cursor() as cur:
                with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    copy.write_row(first)
                    for row in rows:
                        copy.write_row(row)

    # ------------------------------------------------------------ episodes

    def put_episode(self, episode: Episode, *, reindex: bool = True) -> None:
        if not reindex:
            self._write("episode", _episode_columns(episode), None)
            return
        days = episode_days(episode)
        with self.transaction():
            self._write("episode", _episode_columns(episode), episode_text(episode))
            # one statement: the days it no longer speaks of go, the new ones come (those it
            # still speaks of are kept, so the two never meet on a key)
            self._local.conn.execute(
                "WITH d (first, last) AS (SELECT * FROM unnest(%s::date[], %s::date[])), "
                "gone AS (DELETE FROM mentions m WHERE m.user_id = %s AND m.episode_id = %s "
                "AND NOT EXISTS (SELECT 1 FROM d WHERE d.first = m.first AND d.last = m.last)) "
                "INSERT INTO mentions (user_id, episode_id, first, last) SELECT %s, %s, first, last FROM d "
                "ON CONFLICT DO NOTHING",
                ([f for f, _ in days], [end for _, end in days], episode.user, episode.id, episode.user, episode.id),
            )

    def mentioning(self, user: str, first: date, last: date, limit: int) -> list[Episode]:
        self._lock([user])
        # a time spoken of began at most MENTION_MAX_DAYS before the first day asked about:
        # the index is read from there to the last day asked about
        # driven by the index of days, fenced (MATERIALIZED): with the LIMIT in sight the planner
        # walked the user's episodes newest first and probed each for a day, all 100,000 of them
        # for a time only old episodes spoke of (205 ms against 9); only the newest `limit`
        # are read whole
        rows = self._q(
            "WITH spoke AS MATERIALIZED (SELECT DISTINCT e.pk, e.occurred_at FROM mentions m JOIN episodes e "
            "ON e.user_id = m.user_id AND e.id = m.episode_id WHERE m.user_id = %s AND m.first >= %s "
            "AND m.first <= %s AND m.last >= %s AND e.status = 'completed' AND NOT e.archived) "
            f"SELECT {self._EP_COLS} FROM episodes WHERE user_id = %s AND pk IN (SELECT pk FROM spoke "
            "ORDER BY occurred_at DESC, pk DESC LIMIT %s) ORDER BY occurred_at DESC, pk DESC",
            (user, first - timedelta(days=MENTION_MAX_DAYS), last, first, user, limit),
        )
        return [self._episode(r) for r in rows]

    def _episode(self, row: tuple[Any, ...]) -> Episode:
        return with_counters(Episode.model_validate_json(row[7]), uses=row[2], last_used_at=_utc(row[3]),
                             learned=bool(row[4]), archived=bool(row[5]), status=row[6])

    def get_episode(self, episode_id: str) -> Episode | None:
        return self.get_episodes([episode_id]).get(episode_id)

    _EP_COLS = _ITEM_COLS["episode"]

    def get_episodes(self, ids: Iterable[str]) -> dict[str, Episode]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._by_id("episodes", self._EP_COLS, ids)
        return {r[1]: self._episode(r) for r in rows}

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
    ) -> list[Episode]:
        self._lock([user])
        sql = f"SELECT {self._EP_COLS} FROM episodes WHERE user_id = %s"
        params: list[Any] = [user]
        for clause, value in (
            ("thread = %s", thread),
            ("status = %s", status),
            ("archived = %s", archived),
            ("occurred_at >= %s", _ts(since)),
            ("occurred_at <= %s", _ts(until)),
        ):
            if value is not None:
                sql += f" AND {clause}"
                params.append(value)
        order = "DESC" if newest_first else "ASC"
        sql += f" ORDER BY occurred_at {order}, pk {order}"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit)
        return [self._episode(r) for r in self._q(sql, params)]

    def stored_after(self, kind: str, user: str, after: int, limit: int) -> list[tuple[int, Any]]:
        self._lock([user])
        parse: dict[str, Callable[[tuple[Any, ...]], Any]] = {
            "episode": self._episode, "fact": self._fact, "note": self._note, "knowledge": self._knowledge}
        table = _TABLE[kind]
        rows = self._q(f"SELECT pk, {_ITEM_COLS[kind]} FROM {table} WHERE user_id = %s AND pk > %s ORDER BY pk LIMIT %s",
                       (user, after, limit))
        return [(row[0], parse[kind](row[1:])) for row in rows]

    def recent_threads(self, user: str, limit: int = 200) -> list[str]:
        self._lock([user])
        rows = self._q("SELECT thread FROM episodes WHERE user_id = %s ORDER BY occurred_at DESC LIMIT %s",
                       (user, RECENT_THREAD_EPISODES))
        return first_distinct((r[0] for r in rows), limit)

    def pending_turns(self) -> list[Episode]:
        rows = self._q(f"SELECT {self._EP_COLS} FROM episodes WHERE status = 'pending' ORDER BY pk")
        return [self._episode(r) for r in rows]

    def waiting_turns(self, before: datetime, limit: int = 1000) -> list[Episode]:
        rows = self._q(f"SELECT {self._EP_COLS} FROM episodes WHERE status IN ('pending', 'interrupted') "
                       "AND created_at < %s ORDER BY pk LIMIT %s", [before, limit])
        return [self._episode(r) for r in rows]

    def unlearned_episodes(self, limit: int = 1000, *, user: str | None = None) -> list[EpisodeRef]:
        sql, params = "SELECT id, user_id, agent, thread FROM episodes WHERE status = 'completed' AND NOT learned", []
        if user is not None:
            sql += " AND user_id = %s"
            params.append(user)
        rows = self._q(sql + " ORDER BY pk LIMIT %s", [*params, limit])
        return [EpisodeRef(*r) for r in rows]

    def mark_learned(self, episode_ids: Iterable[str], learned: bool = True, error: str = "") -> None:
        ids = list(dict.fromkeys(episode_ids))
        if ids:
            self._do(
                "UPDATE episodes SET learned = %s, learn_error = %s, lease_owner = NULL, lease_until = NULL "
                "WHERE id = ANY(%s)",
                (learned, error, ids),
            )

    def known_inputs(self, user: str, thread: str, keys: Iterable[str]) -> dict[str, str]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        self._lock([user])
        rows = self._q(
            "SELECT key, episode_id FROM input_keys WHERE user_id = %s AND thread = %s AND key = ANY(%s)",
            (user, thread, keys),
        )
        return {r[0]: r[1] for r in rows}

    def put_inputs(self, user: str, thread: str, episode_id: str, keys: Iterable[str]) -> None:
        self._lock([user])
        self._many(
            "INSERT INTO input_keys (user_id, thread, key, episode_id) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(user, thread, key, episode_id) for key in dict.fromkeys(keys)],
        )

    # ------------------------------------------------------------ the learning queue
    def claim_learning(
        self, owner: str, *, lease_seconds: float, debounce_seconds: float, limit: int, user: str | None = None,
        retry_now: bool = False,
    ) -> list[EpisodeRef]:
        free = "(lease_until IS NULL OR lease_until < now())"
        retry = "TRUE" if retry_now else "FALSE"
        # a thread is due when it has been quiet for the debounce time, holds no live lease
        # and nothing of it waits to retry
        due_threads = (
            "SELECT thread FROM episodes WHERE user_id = %s AND agent IS NOT DISTINCT FROM %s "
            "AND status = 'completed' AND NOT learned GROUP BY thread "
            f"HAVING max(queued_at) <= now() - make_interval(secs => %s) AND bool_and({free}) "
            f"AND bool_and({retry} OR retry_at IS NULL OR retry_at <= now())"
        )
        tried: list[int] = []
        rows: list[tuple[Any, ...]] = []
        with self.transaction():
            conn = self._local.conn
            if time.monotonic() - self._schema_read_at >= SCHEMA_CHECK_SECONDS:
                self._read_schema_version(conn)
            if self._outdated:
                # a newer reverie's schema: learning with this one's code would write rows
                # without what the newer schema derives from them. A poll finds nothing (said
                # once in the log); a flush, which was asked for, says why
                if debounce_seconds <= 0:
                    raise StoreError(self._outdated)
                return []
            for _ in range(8):  # another replica may take a group between the two reads: try the next
                # the oldest episode of a due thread that no other claim is taking right now
                pick = conn.execute(
                    "SELECT e.pk, e.user_id, e.agent FROM episodes e WHERE e.status = 'completed' AND NOT e.learned "
                    + ("AND e.user_id = %s " if user is not None else "")
                    + "AND e.pk <> ALL(%s) AND (e.lease_until IS NULL OR e.lease_until < now()) "
                    f"AND ({retry} OR e.retry_at IS NULL OR e.retry_at <= now()) "
                    "AND NOT EXISTS (SELECT 1 FROM episodes o WHERE o.user_id = e.user_id "
                    "AND o.agent IS NOT DISTINCT FROM e.agent AND o.thread = e.thread AND o.status = 'completed' "
                    "AND NOT o.learned AND (o.queued_at > now() - make_interval(secs => %s) "
                    f"OR o.lease_until >= now() OR (NOT {retry} AND o.retry_at > now()))) "
                    "ORDER BY e.pk LIMIT 1 FOR UPDATE OF e SKIP LOCKED",
                    [*([user] if user is not None else []), tried, debounce_seconds],
                ).fetchone()
                if pick is None:
                    return []
                tried.append(int(pick[0]))
                group_user, agent = pick[1], pick[2]
                rows = conn.execute(
                    "SELECT id, user_id, agent, thread FROM episodes WHERE user_id = %s "
                    f"AND agent IS NOT DISTINCT FROM %s AND status = 'completed' AND NOT learned AND {free} "
                    f"AND thread IN ({due_threads}) ORDER BY pk LIMIT %s FOR UPDATE SKIP LOCKED",
                    (group_user, agent, group_user, agent, debounce_seconds, limit),
                ).fetchall()
                if rows:
                    conn.execute(
                        "UPDATE episodes SET lease_owner = %s, lease_until = now() + make_interval(secs => %s) "
                        "WHERE user_id = %s AND id = ANY(%s)",
                        (owner, lease_seconds, group_user, [r[0] for r in rows]),
                    )
                    break
        return [EpisodeRef(*r) for r in rows]

    def renew_learning(self, owner: str, episode_ids: Iterable[str], lease_seconds: float) -> None:
        ids = list(episode_ids)
        if ids:
            self._do(
                "UPDATE episodes SET lease_until = now() + make_interval(secs => %s) "
                "WHERE id = ANY(%s) AND lease_owner = %s AND NOT learned",
                (lease_seconds, ids, owner),
            )

    def release_learning(
        self, owner: str, episode_ids: Iterable[str], *, error: str = "", retry_base: float = 60.0,
        retry_max: float = 3600.0,
    ) -> None:
        ids = list(episode_ids)
        if not ids:
            return
        if error:
            self._do(
                "UPDATE episodes SET lease_owner = NULL, lease_until = NULL, learn_error = %s, "
                "learn_attempts = learn_attempts + 1, "
                "retry_at = now() + make_interval(secs => least(%s, %s * power(2, learn_attempts))) "
                "WHERE id = ANY(%s) AND lease_owner = %s AND NOT learned",
                (error, retry_max, retry_base, ids, owner),
            )
        else:
            self._do(
                "UPDATE episodes SET lease_owner = NULL, lease_until = NULL WHERE id = ANY(%s) AND lease_owner = %s",
                (ids, owner),
            )

    def try_lock(self, name: str) -> Callable[[], None] | None:
        """A session advisory lock on its own pooled connection: held until released, or
        until this process dies and its connection with it."""
        self._check_open()
        conn = self._pool.getconn()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self._lock_key(name),)).fetchone()
        except BaseException:
            self._pool.putconn(conn)
            raise
        if not row or not row[0]:
            self._pool.putconn(conn)
            return None
        done = threading.Lock()
        with self._held_lock:
            self._held.add(conn)

        def release() -> None:
            if not done.acquire(blocking=False):
                return
            with self._held_lock:
                if conn not in self._held:
                    return  # the store was closed, and the session with it
                self._held.discard(conn)
            try:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self._lock_key(name),))
            except Exception:
                conn.close()  # closing the session lets go of the lock too
            finally:
                self._pool.putconn(conn)

        return release

    # ------------------------------------------------------------ facts

    def put_fact(self, fact: Fact) -> None:
        self._write("fact", _fact_columns(fact), searched_fact_text(fact))

    def _fact(self, row: tuple[Any, ...]) -> Fact:
        return with_counters(Fact.model_validate_json(row[5]), uses=row[2], last_used_at=_utc(row[3]), status=row[4])

    def get_fact(self, fact_id: str) -> Fact | None:
        return self.get_facts([fact_id]).get(fact_id)

    _FACT_COLS = _ITEM_COLS["fact"]

    def get_facts(self, ids: Iterable[str]) -> dict[str, Fact]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._by_id("facts", self._FACT_COLS, ids)
        return {r[1]: self._fact(r) for r in rows}

    def count_facts(self, user: str, *, up_to: int | None = None) -> int:
        self._lock([user])
        row = self._one(
            "SELECT count(*) FROM (SELECT 1 FROM facts WHERE user_id = %s AND status IN ('pending', 'consolidated') "
            "LIMIT %s) AS live", (user, None if up_to is None else max(0, up_to)),
        )
        return int(row[0]) if row else 0

    def related_facts(self, user: str, query_terms: list[str], limit: int) -> list[Fact]:
        lexemes = query_tokens(query_terms)
        if not lexemes:
            return []
        self._lock([user])
        rows = self._q(
            f"SELECT {self._FACT_COLS} FROM facts WHERE user_id = %(user)s AND pk IN ({self._NEWEST_FACTS_SHARING}) "
            "AND status IN ('pending', 'consolidated') ORDER BY pk",
            {"user": user, "lex": lexemes, "limit": limit},
        )
        return [self._fact(r) for r in rows]

    # the newest ``limit`` facts that hold any of the lexemes: within each lexeme's newest
    # ``limit`` (a bounded read of ``terms`` each), as an archived fact holds no terms
    _NEWEST_FACTS_SHARING = (
        f"SELECT DISTINCT t.pk FROM unnest(%(lex)s::text[]) AS x(lexeme) CROSS JOIN LATERAL (SELECT t.pk FROM terms t "
        f"WHERE t.user_id = %(user)s AND t.kind = {_KIND_CODE['fact']} AND t.lexeme = x.lexeme "
        "ORDER BY t.pk DESC LIMIT %(limit)s) AS t ORDER BY t.pk DESC LIMIT %(limit)s"
    )

    def recent_facts(self, user: str, limit: int) -> list[Fact]:
        self._lock([user])
        rows = self._q(
            f"SELECT {self._FACT_COLS} FROM facts WHERE user_id = %s AND status IN ('pending', 'consolidated') "
            "ORDER BY pk DESC LIMIT %s",
            (user, limit),
        )
        return [self._fact(r) for r in reversed(rows)]

    def list_facts(
        self,
        user: str,
        *,
        status: str | Iterable[str] | None = None,
        category: str | None = None,
        agent: str | None = None,
    ) -> list[Fact]:
        statuses = ["pending", "consolidated"] if status is None else [status] if isinstance(status, str) else list(status)
        self._lock([user])
        where, params = _facts_where(user, statuses, None if category is None else [category], agent)
        return [self._fact(r) for r in self._q(f"SELECT {self._FACT_COLS} FROM facts WHERE {where} ORDER BY pk", params)]

    def strongest_facts(
        self, user: str, categories: Sequence[str], agent: str | None, limit: int,
        statuses: Sequence[str] = ("consolidated",), exclude: Collection[str] = (),
    ) -> list[Fact]:
        # each category's strongest first from the facts_strength index (a bounded read, however
        # many facts the user has), merged, and only the strongest read whole: one statement
        # (an excluded one costs its row, not the parse of its record)
        most = limit + len(exclude)
        self._lock([user])
        mine, params = ("", []) if agent is None else (" AND (agent = %s OR agent IS NULL)", [agent])
        rows = self._q(
            f"SELECT {', '.join('f.' + c for c in self._FACT_COLS.split(', '))} FROM (SELECT t.strength, t.pk "
            "FROM unnest(%s::text[]) AS s(status) CROSS JOIN unnest(%s::text[]) AS k(category) CROSS JOIN LATERAL "
            f"(SELECT strength, pk FROM facts WHERE user_id = %s AND status = s.status AND category = k.category{mine} "
            "ORDER BY strength DESC, pk LIMIT %s) AS t ORDER BY t.strength DESC, t.pk LIMIT %s) AS top "
            "JOIN facts f ON f.user_id = %s AND f.pk = top.pk ORDER BY top.strength DESC, top.pk",
            [list(dict.fromkeys(statuses)), list(dict.fromkeys(categories)), user, *params, most, most, user],
        )
        return [self._fact(r) for r in [r for r in rows if r[1] not in exclude][:limit]]

    def delete_fact(self, fact_id: str) -> None:
        self._delete("fact", fact_id)

    def delete_episode(self, episode_id: str) -> None:
        self._delete("episode", episode_id)

    def delete_note(self, note_id: str) -> None:
        self._delete("note", note_id)

    def delete_knowledge(self, doc_id: str) -> None:
        self._delete("knowledge", doc_id)

    def _delete(self, kind: str, item_id: str) -> None:
        """An item's row and its postings, and BM25's counts without it (its terms go by trigger)."""
        table = _TABLE[kind]
        with self.transaction():
            owner = self._by_id(table, "user_id, doc_len", [item_id])
            for user, length in owner:
                conn = self._local.conn
                conn.execute(f"DELETE FROM {table} WHERE user_id = %s AND id = %s", (user, item_id))
                conn.execute("DELETE FROM item_tags WHERE user_id = %s AND kind = %s AND item_id = %s",
                             (user, kind, item_id))
                if kind == "episode":
                    conn.execute("DELETE FROM mentions WHERE user_id = %s AND episode_id = %s", (user, item_id))
                conn.execute("UPDATE fts_stats SET rows = rows - 1, tokens = tokens - %s WHERE user_id = %s AND kind = %s",
                             (length, user, kind))

    # ------------------------------------------------------------ profile
    _PROFILE = "SELECT section, summary, updated_at FROM profile WHERE user_id = %s"

    def get_profile(self, user: str) -> Profile:
        self._lock([user])
        return self._profile(self._q(self._PROFILE, (user,)))

    @staticmethod
    def _profile(rows: Iterable[tuple[Any, ...]]) -> Profile:
        profile = Profile()
        for section_name, summary, updated_at in rows:
            if section_name in PROFILE_SECTIONS:
                section = profile.section(section_name)
                section.summary = summary
                section.updated_at = _utc(updated_at)
        return profile

    def put_profile_section(self, user: str, section: str, summary: str, updated_at: datetime | None) -> None:
        check_section(section)
        ProfileSection(summary=summary)  # validates the type before it lands
        self._lock([user])
        if updated_at is None:
            self._do("DELETE FROM profile WHERE user_id = %s AND section = %s", (user, section))
            return
        self._do(
            "INSERT INTO profile (user_id, section, summary, updated_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (user_id, section) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
            (user, section, summary, _ts(updated_at)),
        )

    # ------------------------------------------------------------ notes and knowledge
    def put_note(self, note: Note) -> None:
        self._write("note", _note_columns(note), note_text(note))

    def list_notes(self, user: str, *, since: str | None = None, until: str | None = None) -> list[Note]:
        self._lock([user])
        rows = self._q(
            "SELECT body FROM notes WHERE user_id = %s AND date >= %s AND date <= %s ORDER BY date, pk",
            (user, since or "0000-00-00", until or "9999-99-99"),
        )
        return [Note.model_validate_json(r[0]) for r in rows]

    def note_lines(self, user: str, date: str) -> list[str]:
        self._lock([user])
        rows = self._q("SELECT body::json ->> 'content' FROM notes WHERE user_id = %s AND date = %s "
                       "ORDER BY date, pk", (user, date))
        return [str(r[0]) for r in rows]

    def get_notes(self, ids: Iterable[str]) -> dict[str, Note]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._by_id("notes", _ITEM_COLS["note"], ids)
        return {r[1]: self._note(r) for r in rows}

    @staticmethod
    def _note(row: tuple[Any, ...]) -> Note:
        return Note.model_validate_json(row[2])

    def put_knowledge(self, doc: KnowledgeDoc) -> None:
        self._write("knowledge", _knowledge_columns(doc), knowledge_text(doc))

    def list_knowledge(self, user: str) -> list[KnowledgeDoc]:
        self._lock([user])
        rows = self._q("SELECT body FROM knowledge WHERE user_id = %s ORDER BY pk", (user,))
        return [KnowledgeDoc.model_validate_json(r[0]) for r in rows]

    def same_knowledge(self, doc: KnowledgeDoc) -> KnowledgeDoc | None:
        self._lock([doc.user])
        row = self._one("SELECT body FROM knowledge WHERE user_id = %s AND digest = %s ORDER BY pk LIMIT 1",
                        (doc.user, knowledge_digest(doc)))
        return KnowledgeDoc.model_validate_json(row[0]) if row else None

    def page_knowledge(self, user: str, *, after: str | None = None, limit: int = 100) -> Page[KnowledgeDoc]:
        self._lock([user])
        last = decode_cursor(after, (int,))
        sql, params = "SELECT pk, body FROM knowledge WHERE user_id = %s", [user]
        if last is not None:
            sql += " AND pk < %s"
            params.append(last[0])
        rows = self._q(sql + " ORDER BY pk DESC LIMIT %s", [*params, limit + 1])
        page = page_of(rows, limit, lambda r: (r[0],))
        return Page([KnowledgeDoc.model_validate_json(r[1]) for r in page.items], page.next)

    def get_knowledge(self, ids: Iterable[str]) -> dict[str, KnowledgeDoc]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._by_id("knowledge", _ITEM_COLS["knowledge"], ids)
        return {r[1]: self._knowledge(r) for r in rows}

    @staticmethod
    def _knowledge(row: tuple[Any, ...]) -> KnowledgeDoc:
        return KnowledgeDoc.model_validate_json(row[2])

    def read_keyed(
        self, user: str, *, items: Mapping[str, Iterable[str]] | None = None, tags: Iterable[str] = (),
        profile: bool = False,
    ) -> KeyedReads:
        """Every read in one round trip (outside a transaction: inside one, each read locks its
        users as it finds them, one read at a time)."""
        asked = {kind: list(dict.fromkeys(ids)) for kind, ids in (items or {}).items()}
        names = list(dict.fromkeys(tags))
        reads = [kind for kind, ids in asked.items() if ids]
        if self._in_tx() or len(reads) + bool(names) + profile < 2:
            return super().read_keyed(user, items=asked, tags=names, profile=profile)
        parse: dict[str, Callable[[tuple[Any, ...]], Item]] = {
            "episode": self._episode, "fact": self._fact, "note": self._note, "knowledge": self._knowledge}
        statements: list[tuple[str, Sequence[Any]]] = [
            (self._by_id_sql(_TABLE[kind], _ITEM_COLS[kind]), (asked[kind],)) for kind in reads]
        if names:
            statements.append((self._TAGS_NAMED.format(columns="name, status, merged_to"), (names, user)))
        if profile:
            statements.append((self._PROFILE, (user,)))
        found = iter(self._q_all(statements))
        out: dict[str, dict[str, Item]] = {kind: {} for kind in asked}
        for kind in reads:
            out[kind] = {r[1]: parse[kind](r) for r in next(found)}
        states = {r[0]: TagState(r[1], r[2]) for r in next(found)} if names else {}
        return KeyedReads(out, states, self._profile(next(found)) if profile else None)

    # ------------------------------------------------------------ search and usage
    # each query lexeme's newest SEARCH_WINDOW matches in each kind: (kind code, the lexeme's
    # index from 1, pk, its count in the row, the row's length), one index-only range read each
    _NEWEST_MATCHES = (
        "SELECT k.code, x.i, p.pk, p.tf, p.doc_len FROM unnest(%(codes)s::smallint[]) AS k(code) "
        "CROSS JOIN unnest(%(lex)s::text[]) WITH ORDINALITY AS x(lexeme, i) CROSS JOIN LATERAL "
        "(SELECT t.pk, t.tf, t.doc_len FROM terms t WHERE t.user_id = %(user)s AND t.kind = k.code "
        "AND t.lexeme = x.lexeme ORDER BY t.pk DESC LIMIT %(window)s) AS p"
    )
    # BM25's statistics: each lexeme's matches (code, lexeme, n, NULL) and each kind's rows
    # and tokens (NULL, kind, rows, tokens)
    _SEARCH_STATS = (
        "SELECT kind, lexeme, n, NULL::bigint FROM term_sizes WHERE user_id = %(user)s AND kind = ANY(%(codes)s) "
        "AND lexeme = ANY(%(lex)s) UNION ALL SELECT NULL::smallint, kind, rows, tokens FROM fts_stats "
        "WHERE user_id = %(user)s AND kind = ANY(%(kinds)s)"
    )

    def search(
        self, user: str, query_terms: list[str], kinds: Iterable[str], limit: int, *, names: Iterable[str] = (),
    ) -> list[Hit]:
        """BM25 over each kind, bounded the way the SQLite store bounds it: while the query
        matches fewer than SEARCH_WINDOW of the user's items of a kind, every match is ranked;
        past that, all terms over the newest SEARCH_WINDOW matches and the rare terms (in at
        most SEARCH_WINDOW items) over all of theirs. Then the best are looked up a batch at a
        time until ``limit`` are live rows recall may deliver.

        Every read is bounded whatever the store's size: each lexeme's newest SEARCH_WINDOW
        matches come from ``terms`` (an index-only range read), which holds every row of the
        window whole, since a row among the query's newest SEARCH_WINDOW matches is among the
        newest SEARCH_WINDOW of each lexeme it holds; a rare lexeme's read is all of its
        matches; the document frequencies come from ``term_sizes``."""
        lexemes = query_tokens(query_terms)
        named = searched_names(names, query_terms)
        kinds = [k for k in dict.fromkeys(kinds) if k in _TABLE]
        if not lexemes or not kinds:
            return []
        self._lock([user])
        codes = [_KIND_CODE[k] for k in kinds]
        params = {"user": user, "lex": lexemes, "codes": codes, "kinds": kinds,
                  "window": SEARCH_WINDOW}
        sizes: dict[tuple[int, str], int] = {}
        stats: dict[str, tuple[int, int]] = {}
        # the statistics and the newest matches do not depend on each other: one round trip
        counted, newest = self._q_all([(self._SEARCH_STATS, params), (self._NEWEST_MATCHES, params)])
        for code, name, n, tokens in counted:
            if code is None:
                stats[name] = (int(n), int(tokens))
            else:
                sizes[(code, name)] = int(n)
        # a lexeme is rare in a kind when at most SEARCH_WINDOW of the user's items hold it:
        # (code, the lexeme's index from 1) of each
        rare_at = {(code, i) for code in codes for i, lex in enumerate(lexemes, start=1)
                   if sizes.get((code, lex), 0) <= SEARCH_WINDOW}
        matches: dict[int, dict[int, tuple[int, list[tuple[int, int]]]]] = {}  # code -> pk -> (length, parts)
        holding: dict[int, set[int]] = {}  # code -> the rows that hold a rare lexeme
        for code, i, pk, tf, length in newest:
            rows = matches.get(code)
            if rows is None:
                rows = matches[code] = {}
            row = rows.get(pk)
            if row is None:
                rows[pk] = (length, [(i - 1, tf)])
            else:
                row[1].append((i - 1, tf))
            if (code, i) in rare_at:
                holding.setdefault(code, set()).add(pk)
        searched: list[tuple[str, dict[int, float], Callable[[int], frozenset[str] | None]]] = []
        for kind in kinds:
            code = _KIND_CODE[kind]
            rows = matches.get(code)
            if not rows:
                continue
            total, tokens = stats.get(kind, (0, 0))
            hits = [sizes.get((code, lex), 0) for lex in lexemes]
            idf = [fts5_idf(total, h) for h in hits]
            avgdl = fts5_avgdl(total, tokens)
            window = sorted(rows, reverse=True)[:SEARCH_WINDOW]
            ranked = bm25(((pk, *rows[pk]) for pk in window), idf, avgdl)
            # a row of the window has every query lexeme it holds among its parts (see above)
            whole: Container[int] = ranked
            if len(window) >= SEARCH_WINDOW:
                rare = {i for i, h in enumerate(hits) if h <= SEARCH_WINDOW}
                held = holding.get(code, set())
                every = kind in EVERY_WORD_PAST_WINDOW
                if every:
                    self._complete(user, code, lexemes, rare, rows, held.difference(window))
                else:  # an older row a rare lexeme found may hold a common one not read for it
                    whole = set(window)
                # ranked by every query word it holds, as the window is (else by the rare ones)
                scores = bm25(((pk, rows[pk][0], rows[pk][1] if every else [p for p in rows[pk][1] if p[0] in rare])
                               for pk in held), idf, avgdl)
                for pk, score in scores.items():
                    ranked[pk] = max(score, ranked.get(pk, score))
            if named and len(ranked) > limit:
                ranked = _past_names(ranked, rows, lexemes, query_terms, named, idf, avgdl, limit)
            searched.append((kind, ranked, _held_tokens(lexemes, rows, whole)))
        return self._live_best(user, searched, limit)

    # the counts of some lexemes in some rows of one kind: (lexeme's index from 1, pk, count),
    # one index probe a (lexeme, row): a join on ``pk = ANY(...)`` was planned as a read of the
    # lexeme's every match filtered by the rows (2.1 ms for a name in 2,100 of 10k episodes, and
    # growing with the store), the probes take 0.7 ms whatever the lexeme's size
    _COUNTS = (
        "SELECT x.i, p.pk, t.tf FROM unnest(%(lex)s::text[]) WITH ORDINALITY AS x(lexeme, i) "
        "CROSS JOIN unnest(%(pks)s::bigint[]) AS p(pk) CROSS JOIN LATERAL (SELECT t.tf FROM terms t "
        "WHERE t.user_id = %(user)s AND t.kind = %(code)s AND t.lexeme = x.lexeme AND t.pk = p.pk LIMIT 1) AS t"
    )

    def _complete(
        self, user: str, code: int, lexemes: list[str], rare: set[int],
        rows: dict[int, tuple[int, list[tuple[int, int]]]], pks: set[int],
    ) -> None:
        """The other query lexemes' counts in rows a rare lexeme found outside the window: a
        common lexeme's newest matches, read for the window, stop short of an old row."""
        others = [i for i in range(len(lexemes)) if i not in rare]
        if not pks or not others:
            return
        params = {"user": user, "code": code, "lex": [lexemes[i] for i in others], "pks": sorted(pks)}
        for i, pk, tf in self._q(self._COUNTS, params):
            parts = rows[pk][1]
            lexeme = others[i - 1]
            if all(part[0] != lexeme for part in parts):
                parts.append((lexeme, tf))

    def _live_best(
        self, user: str, searched: Sequence[tuple[str, dict[int, float], Callable[[int], frozenset[str] | None]]],
        limit: int,
    ) -> list[Hit]:
        """The best ``limit`` of each kind's ranked rows (kind, pk -> score, the hit's held
        tokens by pk; equal scores: the older first) that recall may deliver, looked up a batch
        at a time: every kind's first batch in one round trip, a later one (when too many of
        the best were no longer live) on its own."""
        searched = [s for s in searched if s[1]]
        first = self._q_all([(_LIVE_BEST[kind], (next(best_first(ranked, limit)), user)) for kind, ranked, _ in searched])
        out: list[Hit] = []
        for (kind, ranked, held), rows in zip(searched, first):
            fetched = [rows]  # best_hits asks for the same first batch: it was read above

            def lookup(batch: list[int], kind: str = kind, held: Callable[[int], frozenset[str] | None] = held,
                       fetched: list[list[tuple[Any, ...]]] = fetched) -> dict[int, tuple[str, frozenset[str] | None]]:
                found = fetched.pop() if fetched else self._q(_LIVE_BEST[kind], (batch, user))
                return {pk: (item_id, held(pk)) for pk, item_id in found}

            out += best_hits(kind, ranked, limit, lookup)
        return out

    def index_tokens(self, kind: str, user: str, ids: Iterable[str]) -> dict[str, frozenset[str]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._q(
            f"SELECT id, tsvector_to_array(tsv) FROM {_TABLE[kind]} WHERE user_id = %s AND id = ANY(%s)", (user, ids),
        )
        return {r[0]: frozenset(r[1]) for r in rows}

    def touch(self, kind: str, ids: Iterable[str], at: datetime, *, by: int = 1) -> None:
        ids = list(dict.fromkeys(ids))
        if ids and kind in ("episode", "fact"):
            # inside a transaction (a usage flush) the rows' users are locked first, as every
            # writer of a user's rows does: the flush then waits for another replica's
            # learning batch of that user instead of meeting it row for row in a deadlock
            if self._in_tx():
                self._by_id(_TABLE[kind], "user_id", ids)
            self._do(
                f"UPDATE {_TABLE[kind]} SET uses = uses + %s, last_used_at = %s{_STRONGER[kind]} WHERE id = ANY(%s)",
                (by, _ts(at), *([by] if _STRONGER[kind] else []), ids),
            )

    # ------------------------------------------------------------ tags
    _TAG_COLS = "id, status, merged_to, body, name"

    def _tag(self, row: tuple[Any, ...]) -> Tag:
        tag = Tag.model_validate_json(row[3])
        tag.id, tag.status, tag.merged_to = int(row[0]), row[1], row[2]
        return tag

    def get_tags(self, user: str, names: Iterable[str]) -> dict[str, Tag]:
        return {r[4]: self._tag(r) for r in self._tags_named(user, names, self._TAG_COLS)}

    def tag_states(self, user: str, names: Iterable[str]) -> dict[str, TagState]:
        return {r[0]: TagState(r[1], r[2]) for r in self._tags_named(user, names, "name, status, merged_to")}

    def _tags_named(self, user: str, names: Iterable[str], columns: str) -> list[tuple[Any, ...]]:
        """``columns`` of the user's tags of these names: one probe of (user_id, name) per
        name, whatever the statistics say."""
        names = list(dict.fromkeys(names))
        if not names:
            return []
        self._lock([user])
        return self._q(self._TAGS_NAMED.format(columns=columns), (names, user))

    _TAGS_NAMED = ("SELECT r.* FROM unnest(%s::text[]) AS k(name) CROSS JOIN LATERAL (SELECT {columns} FROM tags t "
                   "WHERE t.user_id = %s AND t.name = k.name OFFSET 0) AS r")

    def list_tags(self, user: str, status: str | None = None) -> list[Tag]:
        self._lock([user])
        sql, params = f"SELECT {self._TAG_COLS} FROM tags WHERE user_id = %s", [user]
        if status:
            sql += " AND status = %s"
            params.append(status)
        return [self._tag(r) for r in self._q(sql + " ORDER BY name", params)]

    def count_tags(self, user: str, status: str | None = None) -> int:
        self._lock([user])
        sql, params = "SELECT count(*) FROM tags WHERE user_id = %s", [user]
        if status:
            sql += " AND status = %s"
            params.append(status)
        row = self._one(sql, params)
        return int(row[0]) if row else 0

    def put_tag(self, tag: Tag) -> Tag:
        body = _tag_body(tag)
        self._lock([tag.user])
        self._do(
            "INSERT INTO tags (user_id, name, status, merged_to, body) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (user_id, name) DO UPDATE SET status = excluded.status, "
            "merged_to = excluded.merged_to, body = excluded.body",
            (tag.user, tag.name, tag.status, tag.merged_to, body),
        )
        return tag

    def set_items_tags(self, user: str, kind: str, items: Mapping[str, Mapping[str, float]]) -> None:
        rows = [(item_id, name, weight) for item_id, tags in items.items() for name, weight in tags.items()]
        with self.transaction():
            self._lock([user])
            self._do("DELETE FROM item_tags WHERE user_id = %s AND kind = %s AND item_id = ANY(%s)", (user, kind, list(items)))
            if rows:  # one statement (the tag sizes' trigger runs once for it, not once a tag)
                self._do(
                    "INSERT INTO item_tags (user_id, tag, kind, item_id, weight) "
                    "SELECT %s, t.tag, %s, t.item_id, t.weight FROM unnest(%s::text[], %s::text[], %s::float8[]) "
                    "WITH ORDINALITY AS t(item_id, tag, weight, n) ORDER BY t.n",
                    (user, kind, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
                )

    def postings(
        self, user: str, tag_names: Iterable[str], kinds: Iterable[str], *, per_tag: Mapping[str, int] | None = None
    ) -> list[Posting]:
        names, kinds = list(dict.fromkeys(tag_names)), list(kinds)
        if not names or not kinds:
            return []
        self._lock([user])
        if per_tag is None:
            rows = self._q(
                "SELECT kind, item_id, tag, weight FROM item_tags WHERE user_id = %s AND tag = ANY(%s) "
                "AND kind = ANY(%s) ORDER BY seq",
                (user, names, kinds),
            )
            return [Posting(r[0], r[1], r[2], float(r[3])) for r in rows]
        # each tag's newest postings from the (user_id, tag, seq) index, which includes the other
        # columns: a frequent tag costs per_tag index entries
        capped = [(name, per_tag.get(name, 0)) for name in names if per_tag.get(name, 0) > 0]
        if not capped:
            return []
        rows = self._q(
            "SELECT p.seq, p.kind, p.item_id, p.tag, p.weight FROM unnest(%s::text[], %s::int[]) AS c(tag, cap) "
            "CROSS JOIN LATERAL (SELECT seq, kind, item_id, tag, weight FROM item_tags "
            "WHERE user_id = %s AND tag = c.tag AND kind = ANY(%s) ORDER BY seq DESC LIMIT c.cap) AS p ORDER BY p.seq",
            ([n for n, _ in capped], [c for _, c in capped], user, kinds),
        )
        return [Posting(r[1], r[2], r[3], float(r[4])) for r in rows]

    def sized_postings(
        self, user: str, caps: Mapping[str, tuple[int, int]], kinds: Iterable[str], *, frequent_over: int,
    ) -> tuple[dict[str, int], list[Posting]]:
        """One statement: each tag's size (one probe of ``tag_sizes``) picks its cap, and a
        lateral read takes its newest postings; a tag no kind asked for carries a row of its
        size alone."""
        kinds, names = list(kinds), list(caps)
        if not names or not kinds:
            return super().sized_postings(user, caps, kinds, frequent_over=frequent_over)
        self._lock([user])
        rows = self._q(
            "SELECT c.tag, s.n, p.seq, p.kind, p.item_id, p.weight "
            "FROM unnest(%(tags)s::text[], %(rare)s::int[], %(frequent)s::int[]) AS c(tag, rare, frequent) "
            "LEFT JOIN LATERAL (SELECT n FROM tag_sizes WHERE user_id = %(user)s AND tag = c.tag OFFSET 0) AS s ON true "
            "LEFT JOIN LATERAL (SELECT seq, kind, item_id, weight FROM item_tags WHERE user_id = %(user)s "
            "AND tag = c.tag AND kind = ANY(%(kinds)s) ORDER BY seq DESC "
            "LIMIT CASE WHEN coalesce(s.n, 0) <= %(over)s THEN c.rare ELSE c.frequent END) AS p ON true",
            {"tags": names, "rare": [caps[n][0] for n in names], "frequent": [caps[n][1] for n in names],
             "user": user, "kinds": kinds, "over": frequent_over},
        )
        counts = {r[0]: int(r[1]) for r in rows if r[1]}
        found = sorted((r for r in rows if r[2] is not None), key=lambda r: r[2])
        return counts, [Posting(r[3], r[4], r[0], float(r[5])) for r in found]

    def tag_counts(self, user: str, names: Iterable[str] | None = None) -> dict[str, int]:
        # the sizes the triggers keep: one probe a tag, however many items carry it
        self._lock([user])
        if names is None:
            rows = self._q("SELECT tag, n FROM tag_sizes WHERE user_id = %s AND n > 0", (user,))
        else:
            rows = self._q("SELECT tag, n FROM tag_sizes WHERE user_id = %s AND tag = ANY(%s) AND n > 0",
                           (user, list(dict.fromkeys(names))))
        return {r[0]: int(r[1]) for r in rows}

    def put_relation(self, relation: TagRelation) -> None:
        self._lock([relation.user])
        pairs = list(dict.fromkeys(((relation.source, relation.target), (relation.target, relation.source))))
        self._do(
            "INSERT INTO tag_relations (user_id, source, target, level) VALUES "
            + ", ".join(["(%s, %s, %s, %s)"] * len(pairs))
            + " ON CONFLICT (user_id, source, target) DO UPDATE SET level = excluded.level",
            [v for a, b in pairs for v in (relation.user, a, b, relation.level)],
        )

    def relations(self, user: str, names: Iterable[str]) -> list[TagRelation]:
        names = list(dict.fromkeys(names))
        if not names:
            return []
        self._lock([user])
        rows = self._q(
            "SELECT source, target, level FROM tag_relations WHERE user_id = %s AND source = ANY(%s)", (user, names)
        )
        return [TagRelation(user=user, source=r[0], target=r[1], level=r[2]) for r in rows]

    def relation_levels(self, user: str, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        wanted = list(dict.fromkeys(pairs))
        if not wanted:
            return {}
        self._lock([user])
        # one index probe a pair (OFFSET 0 keeps the planner from hashing all the user's
        # relations instead: 25,000 read for 877 pairs at 100k episodes)
        rows = self._q(
            "SELECT r.* FROM unnest(%s::text[], %s::text[]) AS w(source, target) CROSS JOIN LATERAL "
            "(SELECT source, target, level FROM tag_relations t WHERE t.user_id = %s AND t.source = w.source "
            "AND t.target = w.target OFFSET 0) AS r",
            ([p[0] for p in wanted], [p[1] for p in wanted], user),
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def drop_unused_tags(self, user: str, names: Iterable[str]) -> list[str]:
        wanted = sorted(set(names))
        if not wanted:
            return []
        with self.transaction():
            self._lock([user])
            unused = [r[0] for r in self._q(
                "SELECT name FROM tags t WHERE user_id = %s AND name = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM item_tags i WHERE i.user_id = t.user_id AND i.tag = t.name)", [user, wanted])]
            if unused:
                conn = self._local.conn
                conn.execute("DELETE FROM tags WHERE user_id = %s AND name = ANY(%s)", (user, unused))
                conn.execute("DELETE FROM tag_sizes WHERE user_id = %s AND tag = ANY(%s)", (user, unused))
                conn.execute("DELETE FROM tag_relations WHERE user_id = %s AND (source = ANY(%s) OR target = ANY(%s))",
                             (user, unused, unused))
        return unused

    def retag(self, user: str, old: str, new: str) -> int:
        with self.transaction():
            self._lock([user])
            moved = self._count(
                "INSERT INTO item_tags (user_id, tag, kind, item_id, weight) "
                "SELECT user_id, %s, kind, item_id, weight FROM item_tags WHERE user_id = %s AND tag = %s ORDER BY seq "
                "ON CONFLICT DO NOTHING",
                (new, user, old),
            )
            self._do("DELETE FROM item_tags WHERE user_id = %s AND tag = %s", (user, old))
        return moved

    def unretag(self, user: str, old: str, new: str, moved: Sequence[tuple[str, str, float]],
                kept: Iterable[tuple[str, str]]) -> None:
        keep = set(kept)
        with self.transaction():
            self._lock([user])
            self._many("INSERT INTO item_tags (user_id, tag, kind, item_id, weight) VALUES (%s, %s, %s, %s, %s) "
                       "ON CONFLICT DO NOTHING", [(user, old, kind, item, weight) for kind, item, weight in moved])
            self._many("DELETE FROM item_tags WHERE user_id = %s AND tag = %s AND kind = %s AND item_id = %s",
                       [(user, new, kind, item) for kind, item, _ in moved if (kind, item) not in keep])

    def load_postings(self, user: str, rows: Iterable[tuple[str, str, str, float]]) -> None:
        """New (tag, kind, item id, weight) postings appended in this order (one COPY: a
        migration keeps the order they were tagged in, which bounded posting reads follow)."""
        self._copy_rows("item_tags", ("user_id", "tag", "kind", "item_id", "weight"), {user},
                        ((user, *row) for row in rows))

    def load_relations(self, user: str, rows: Iterable[tuple[str, str, str]]) -> None:
        """New (source, target, level) relations exactly as given (one direction each; one COPY)."""
        self._copy_rows("tag_relations", ("user_id", "source", "target", "level"), {user},
                        ((user, *row) for row in rows))

    def row_counts(self) -> dict[str, dict[str, int]]:
        """Rows per user of each kind (user -> kind -> rows): what a migration checks."""
        tables = {
            "episodes": "episodes", "facts": "facts", "profile": "profile", "notes": "notes",
            "knowledge": "knowledge", "tags": "tags", "postings": "item_tags", "relations": "tag_relations",
            "dream_runs": "dream_runs", "input_keys": "input_keys", "journals": "journals",
            "user_meta": "user_meta", "documents": "documents",
        }
        out: dict[str, dict[str, int]] = {}
        for kind, table in tables.items():
            for user, count in self._q(f"SELECT user_id, count(*) FROM {table} GROUP BY user_id"):
                out.setdefault(user, {})[kind] = int(count)
        return out

    # ------------------------------------------------------------ counts, texts and pages (keyset reads)
    def fact_texts(self, user: str, query_terms: list[str] | None = None, limit: int = 0) -> list[FactText]:
        self._lock([user])
        content = "(body::json)->>'content'"
        if query_terms is None:
            rows = self._q(
                f"SELECT id, {content}, category, agent FROM facts WHERE user_id = %s "
                "AND status IN ('pending', 'consolidated') ORDER BY pk",
                (user,),
            )
            return [FactText(*r) for r in rows]
        lexemes = query_tokens(query_terms)
        if not lexemes:
            return []
        rows = self._q(
            f"SELECT id, {content}, category, agent FROM facts WHERE user_id = %(user)s AND pk IN "
            f"({self._NEWEST_FACTS_SHARING}) AND status IN ('pending', 'consolidated') ORDER BY pk",
            {"user": user, "lex": lexemes, "limit": limit},
        )
        return [FactText(*r) for r in rows]

    def counts(self, user: str) -> dict[str, Any]:
        self._lock([user])

        def tally(table: str) -> dict[str, int]:
            rows = self._q(f"SELECT status, count(*) FROM {table} WHERE user_id = %s GROUP BY status ORDER BY 1", (user,))
            return {str(r[0]): int(r[1]) for r in rows}

        row = self._one(
            "SELECT (SELECT count(*) FROM notes WHERE user_id = %s), (SELECT count(*) FROM knowledge WHERE user_id = %s), "
            "(SELECT count(DISTINCT thread) FROM episodes WHERE user_id = %s)",
            (user, user, user),
        )
        assert row is not None
        return {
            "episodes_by_status": tally("episodes"),
            "threads": int(row[2]),
            "facts_by_status": tally("facts"),
            "notes": int(row[0]),
            "knowledge": int(row[1]),
            "tags": tally("tags"),
        }

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
        last = decode_cursor(after, (str, int))
        self._lock([user])
        sql = f"SELECT {self._EP_COLS}, occurred_at, pk FROM episodes WHERE user_id = %s"
        params: list[Any] = [user]
        for clause, value in (
            ("thread = %s", thread), ("status = %s", status), ("archived = %s", archived),
            ("occurred_at <= %s", _ts(until)),
        ):
            if value is not None:
                sql += f" AND {clause}"
                params.append(value)
        if last is not None:
            sql += " AND (occurred_at, pk) < (%s, %s)"
            params += [datetime.fromisoformat(last[0]), last[1]]
        rows = self._q(sql + " ORDER BY occurred_at DESC, pk DESC LIMIT %s", [*params, limit + 1])
        page = page_of(rows, limit, lambda r: (_utc_set(r[8]).isoformat(), int(r[9])))
        return Page([self._episode(r) for r in page.items], page.next)

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
        if order not in FACT_ORDERS:
            raise ValueError(f"order must be one of {', '.join(FACT_ORDERS)}")
        key, kind = {
            "uses": ("uses", int),
            "recent": ("0::int", int),  # not a bare 0: ORDER BY 0 would name a column
            "last_used": ("coalesce(last_used_at, '-infinity'::timestamptz)", str),
            "confidence": ("coalesce(((body::json)->>'confidence')::float8, 0.0)", float),
        }[order]
        last = decode_cursor(after, (kind, int))
        statuses = ["pending", "consolidated"] if status is None else [status] if isinstance(status, str) else list(status)
        self._lock([user])
        shown = "last_used_at" if order == "last_used" else key  # -infinity has no Python datetime
        sql = f"SELECT {self._FACT_COLS}, {shown}, pk FROM facts WHERE user_id = %s AND status = ANY(%s)"
        params: list[Any] = [user, statuses]
        if category is not None:
            sql += " AND category = %s"
            params.append(category)
        if contains:
            sql += " AND strpos(lower((body::json)->>'content'), lower(%s)) > 0"
            params.append(contains)
        if last is not None:
            mark: Any = last[0]
            if order == "last_used":
                mark = datetime.fromisoformat(mark) if mark else "-infinity"
            sql += f" AND ({key}, pk) < (%s, %s)"
            params += [mark, last[1]]
        rows = self._q(sql + f" ORDER BY {key} DESC, pk DESC LIMIT %s", [*params, limit + 1])

        def cursor(r: tuple[Any, ...]) -> tuple[Any, int]:
            value = r[6]
            if order == "last_used":
                value = "" if r[3] is None else _utc_set(r[3]).isoformat()
            return (float(value) if order == "confidence" else value, int(r[7]))

        page = page_of(rows, limit, cursor)
        return Page([self._fact(r) for r in page.items], page.next)

    def page_notes(self, user: str, *, date: str | None = None, after: str | None = None, limit: int = 100) -> Page[Note]:
        last = decode_cursor(after, (str, int))
        self._lock([user])
        sql, params = "SELECT pk, date, body FROM notes WHERE user_id = %s", [user]
        if date is not None:
            sql += " AND date = %s"
            params.append(date)
        if last is not None:
            sql += " AND (date < %s OR (date = %s AND pk > %s))"
            params += [last[0], last[0], last[1]]
        rows = self._q(sql + " ORDER BY date DESC, pk ASC LIMIT %s", [*params, limit + 1])
        page = page_of(rows, limit, lambda r: (r[1], int(r[0])))
        return Page([Note.model_validate_json(r[2]) for r in page.items], page.next)

    def page_tags(self, user: str, *, status: str | None = None, after: str | None = None, limit: int = 100) -> Page[Tag]:
        last = decode_cursor(after, (str,))
        self._lock([user])
        sql, params = f"SELECT {self._TAG_COLS} FROM tags WHERE user_id = %s", [user]
        if status:
            sql += " AND status = %s"
            params.append(status)
        if last is not None:
            sql += " AND name > %s"
            params.append(last[0])
        rows = self._q(sql + " ORDER BY name LIMIT %s", [*params, limit + 1])
        page = page_of(rows, limit, lambda r: (r[4],))
        return Page([self._tag(r) for r in page.items], page.next)

    def page_journals(self, user: str, *, after: str | None = None, limit: int = 50) -> Page[str]:
        last = decode_cursor(after, (str, str))
        self._lock([user])
        sql = "SELECT body, at, id FROM journals WHERE user_id = %s"
        params: list[Any] = [user]
        if last is not None:
            sql += " AND (at, id) < (%s, %s)"
            params += [datetime.fromisoformat(last[0]), last[1]]
        rows = self._q(sql + " ORDER BY at DESC, id DESC LIMIT %s", [*params, limit + 1])
        page = page_of(rows, limit, lambda r: (_utc_set(r[1]).isoformat(), str(r[2])))
        return Page([str(r[0]) for r in page.items], page.next)

    # ------------------------------------------------------------ journals, deleting a user, backlog
    def list_journals(self, user: str, limit: int = 50) -> list[str]:
        self._lock([user])
        rows = self._q("SELECT body FROM journals WHERE user_id = %s ORDER BY at DESC, id DESC LIMIT %s", (user, limit))
        return [str(r[0]) for r in rows]

    def delete_user(self, user: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self.transaction():
            self._lock([user])
            for table in (
                "episodes", "facts", "notes", "knowledge", "profile", "tags", "item_tags", "tag_relations",
                "dream_runs", "api_keys", "input_keys", "documents", "mentions",
            ):
                counts[table] = self._count(f"DELETE FROM {table} WHERE user_id = %s", (user,))
            counts["meta"] = self._count("DELETE FROM journals WHERE user_id = %s", (user,)) + self._count(
                "DELETE FROM user_meta WHERE user_id = %s", (user,)
            )
            self._do("DELETE FROM fts_stats WHERE user_id = %s", (user,))
            self._do("DELETE FROM tag_sizes WHERE user_id = %s", (user,))
            self._do("DELETE FROM term_sizes WHERE user_id = %s", (user,))  # their terms went with their items
        return {k: v for k, v in counts.items() if v}

    def purge(self) -> None:
        # a deleted row stays in its table's pages until a vacuum reuses them: VACUUM FULL
        # writes each table anew (an exclusive lock on it meanwhile)
        with self._pool.connection() as conn:
            # a word or tag nothing holds any more keeps its count row at 0 (the triggers count
            # down, and count up again from there): gone, with what it names
            conn.execute("DELETE FROM term_sizes WHERE n = 0")
            conn.execute("DELETE FROM tag_sizes WHERE n = 0")
            for table in TABLES:
                conn.execute(f'VACUUM (FULL) "{table}"')

    def server_advice(self) -> list[str]:
        row = self._one("SELECT setting FROM pg_settings WHERE name = 'autovacuum'")
        if row is not None and row[0] == "off":
            return [
                "PostgreSQL's autovacuum is off on this server: reverie vacuums and analyzes its own tables as it "
                "works (docs/postgres.md), but the server's other databases get no such care. Turn autovacuum on "
                "(PostgreSQL's default)"
            ]
        return []

    def learning_backlog(self, user: str | None = None) -> tuple[int, str]:
        where, params = "status = 'completed' AND NOT learned", []
        if user is not None:
            where += " AND user_id = %s"
            params.append(user)
        row = self._one(f"SELECT count(*) FROM episodes WHERE {where}", params)
        error = self._one(
            f"SELECT learn_error FROM episodes WHERE {where} AND learn_error <> '' ORDER BY pk DESC LIMIT 1", params
        )
        return (int(row[0]) if row else 0), str(error[0]) if error else ""

    # ------------------------------------------------------------ runs, keys, meta
    def put_dream_run(self, run: DreamRun) -> None:
        body = json.dumps(
            {
                "days": run.days,
                "finished_at": as_utc(run.finished_at).isoformat() if run.finished_at else None,
                "input_hash": run.input_hash,
                "report": run.report,
                "error": run.error,
                "owner": run.owner,
            },
            ensure_ascii=False,
        )
        self._lock([run.user])
        self._do(
            "INSERT INTO dream_runs (user_id, id, status, started_at, body) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (user_id, id) DO UPDATE SET status = excluded.status, body = excluded.body",
            (run.user, run.id, run.status, _ts(run.started_at), body),
        )

    def _run(self, row: tuple[Any, ...]) -> DreamRun:
        body = json.loads(row[4])
        return DreamRun(
            id=row[1],
            user=row[0],
            status=row[2],
            days=body["days"],
            started_at=_utc_set(row[3]),
            finished_at=datetime.fromisoformat(body["finished_at"]) if body["finished_at"] else None,
            input_hash=body["input_hash"],
            report=body["report"],
            error=body["error"],
            owner=body.get("owner", ""),
        )

    def get_dream_run(self, run_id: str) -> DreamRun | None:
        row = self._one("SELECT user_id, id, status, started_at, body FROM dream_runs WHERE id = %s", (run_id,))
        return self._run(row) if row else None

    def dream_runs(self, user: str) -> list[DreamRun]:
        rows = self._q("SELECT user_id, id, status, started_at, body FROM dream_runs WHERE user_id = %s "
                       "ORDER BY started_at DESC", [user])
        return [self._run(row) for row in rows]

    def last_dream_run(self, user: str, status: str | None = None) -> DreamRun | None:
        self._lock([user])
        sql, params = "SELECT user_id, id, status, started_at, body FROM dream_runs WHERE user_id = %s", [user]
        if status:
            sql += " AND status = %s"
            params.append(status)
        row = self._one(sql + " ORDER BY started_at DESC LIMIT 1", params)
        return self._run(row) if row else None

    def put_api_key(self, key: ApiKey, key_hash: str) -> None:
        self._do(
            "INSERT INTO api_keys (user_id, id, key_hash, name, admin, created_at, revoked_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (key.user, key.id, key_hash, key.name, key.admin, _ts(key.created_at), _ts(key.revoked_at)),
        )

    _KEY_COLS = "id, user_id, name, admin, created_at, revoked_at"

    def _key(self, row: tuple[Any, ...]) -> ApiKey:
        return ApiKey(
            id=row[0], user=row[1], name=row[2], admin=bool(row[3]), created_at=_utc_set(row[4]),
            revoked_at=_utc(row[5]),
        )

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        row = self._one(f"SELECT {self._KEY_COLS} FROM api_keys WHERE key_hash = %s", (key_hash,))
        return self._key(row) if row else None

    def list_api_keys(self) -> list[ApiKey]:
        return [self._key(r) for r in self._q(f"SELECT {self._KEY_COLS} FROM api_keys ORDER BY created_at, id")]

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        return self._count(
            "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (_ts(at), key_id)
        ) > 0

    def get_meta(self, key: str) -> str | None:
        if key.startswith(_JOURNAL):
            row = self._one("SELECT body FROM journals WHERE id = %s", (key[len(_JOURNAL):],))
            return str(row[0]) if row else None
        user = meta_user(key)
        if user is not None:
            self._lock([user])
            row = self._one("SELECT value FROM user_meta WHERE user_id = %s AND key = %s", (user, key))
        else:
            self._lock([f"meta:{key}"])  # read-then-write of one key (a salt) waits for the other writer
            row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        if key.startswith(_JOURNAL):
            journal = json.loads(value)
            owner, at = str(journal["user"]), datetime.fromisoformat(str(journal["at"]))
            self._lock([owner])
            self._do(
                "INSERT INTO journals (user_id, id, at, body) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (user_id, id) DO UPDATE SET at = excluded.at, body = excluded.body",
                (owner, key[len(_JOURNAL):], as_utc(at), value),
            )
            return
        user = meta_user(key)
        if user is not None:
            self._lock([user])
            self._do(
                "INSERT INTO user_meta (user_id, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value",
                (user, key, value),
            )
            return
        self._lock([f"meta:{key}"])
        self._do(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # ------------------------------------------------------------ documents
    def put_document(self, user: str, name: str, text: str) -> None:
        self._lock([user])
        self._do(
            "INSERT INTO documents (user_id, name, body, updated_at) VALUES (%s, %s, %s, now()) "
            "ON CONFLICT (user_id, name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
            (user, name, text),
        )

    def get_document(self, user: str, name: str) -> str | None:
        self._lock([user])
        row = self._one("SELECT body FROM documents WHERE user_id = %s AND name = %s", (user, name))
        return str(row[0]) if row else None

    def list_documents(self, user: str, prefix: str = "") -> list[str]:
        self._lock([user])
        rows = self._q(
            "SELECT name FROM documents WHERE user_id = %s AND left(name, %s) = %s ORDER BY name",
            (user, len(prefix), prefix),
        )
        return [str(r[0]) for r in rows]


def _episode_columns(episode: Episode) -> dict[str, Any]:
    columns = episode_columns(episode, _ts)
    return {"user_id": columns.pop("user"), **columns}


def _fact_columns(fact: Fact) -> dict[str, Any]:
    columns = fact_columns(fact, _ts)
    return {"user_id": columns.pop("user"), **columns}


def _facts_where(user: str, statuses: list[str], categories: list[str] | None, agent: str | None) -> tuple[str, list[Any]]:
    """The condition (and its parameters) on a user's facts of these statuses, of these
    categories (any with None), of ``agent`` or of every agent."""
    where, params = "user_id = %s AND status = ANY(%s)", [user, statuses]
    if categories is not None:
        where += " AND category = ANY(%s)"
        params.append(categories)
    if agent is not None:
        where += " AND (agent = %s OR agent IS NULL)"
        params.append(agent)
    return where, params


def _tag_body(tag: Tag) -> str:
    return tag.model_dump_json(exclude={"id"})  # the id is the row's own


def _note_columns(note: Note) -> dict[str, Any]:
    return {"user_id": note.user, "id": note.id, "date": note.date, "body": note.model_dump_json()}


def _knowledge_columns(doc: KnowledgeDoc) -> dict[str, Any]:
    return {"user_id": doc.user, "id": doc.id, "body": doc.model_dump_json(), "digest": knowledge_digest(doc)}


# a row's columns and its full text, by kind: what load_items writes
_LOADERS: dict[str, Callable[[Any], tuple[dict[str, Any], str]]] = {
    "episode": lambda e: (_episode_columns(e), episode_text(e)),
    "fact": lambda f: (_fact_columns(f), searched_fact_text(f)),
    "note": lambda n: (_note_columns(n), note_text(n)),
    "knowledge": lambda d: (_knowledge_columns(d), knowledge_text(d)),
}


