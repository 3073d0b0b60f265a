"""The embedded default store: one SQLite file, WAL, one transaction per logical write.

Full-text search uses FTS5 over pre-segmented text (reverie.text.index_text),
so Chinese words segmented by jieba are found the same way English words are.
Several processes may open the same file: writers take the lock up front
(BEGIN IMMEDIATE) and wait for each other through the busy timeout.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence, TypeVar

from reverie.errors import StoreBusy, StoreError
from reverie.models import (
    PROFILE_SECTIONS,
    Episode,
    Fact,
    KnowledgeDoc,
    Message,
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
    MAX_LEXEME_BYTES,
    MAX_INTEGRITY_PROBLEMS,
    IntegrityProblem,
    best_hits,
    best_rows,
    common_names,
    searched_names,
    NAME_DEPTH,
    migrate_schema,
    with_counters,
    OWNER_TOKENS,
    FACT_ORDERS,
    ITEM_KINDS,
    ApiKey,
    DreamRun,
    EpisodeRef,
    FactText,
    Hit,
    Page,
    Posting,
    TagState,
    Store,
    USER_META_PREFIXES,
    decode_cursor,
    episode_columns,
    episode_days,
    stored_days,
    episode_text,
    fact_columns,
    knowledge_digest,
    knowledge_text,
    note_text,
    fts5_idf,
    fts5_norm,
    fts5_term,
    fts_tokens,
    query_tokens,
    input_digest,
    nth_input,
    page_of,
    source_key,
)
from reverie.store.checkpoint import BACKSTOP_PAGES, Checkpointer
from reverie.text import index_text
from reverie.timerefs import MENTION_MAX_DAYS


def _input_keys(conn: sqlite3.Connection) -> None:
    """2: the keys ingested input is recognised by (one row per key, looked up by primary key),
    filled in for the episodes stored before, so that input ingested before the upgrade is
    recognised too. This reads every episode once, at the upgrade only."""
    conn.execute(
        "CREATE TABLE input_keys (user TEXT NOT NULL, thread TEXT NOT NULL, key TEXT NOT NULL, "
        "episode_id TEXT NOT NULL, PRIMARY KEY (user, thread, key)) WITHOUT ROWID"
    )
    seen: dict[tuple[str, str, str], int] = {}
    rows: list[tuple[str, str, str, str]] = []
    for episode_id, user, thread, body in conn.execute("SELECT id, user, thread, body FROM episodes ORDER BY pk"):
        try:
            messages = [Message.model_validate(m) for m in json.loads(body).get("messages") or []]
        except (ValueError, TypeError, AttributeError):
            continue  # an unreadable body keeps no key: it is never matched, never lost
        if not messages:
            continue
        digest = input_digest(messages)
        n = seen.get((user, thread, digest), 0)
        seen[(user, thread, digest)] = n + 1
        keys = [nth_input(digest, n), *(source_key(m.source_id) for m in messages if m.source_id)]
        rows += [(user, thread, key, episode_id) for key in keys]
    conn.executemany("INSERT OR IGNORE INTO input_keys (user, thread, key, episode_id) VALUES (?, ?, ?, ?)", rows)


# each step is SQL (statements separated by ";\n") or a function given the connection;
# all of them run inside the one upgrade transaction
MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    # 1: the whole model
    """
    CREATE TABLE episodes (
        pk INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user TEXT NOT NULL,
        agent TEXT,
        thread TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        completed_at TEXT,
        occurred_at TEXT NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        learned INTEGER NOT NULL DEFAULT 0,
        learn_error TEXT NOT NULL DEFAULT '',
        uses INTEGER NOT NULL DEFAULT 0,
        last_used_at TEXT,
        body TEXT NOT NULL
    );
    CREATE INDEX episodes_user_time ON episodes(user, occurred_at);
    CREATE INDEX episodes_user_thread ON episodes(user, thread, occurred_at);
    CREATE INDEX episodes_status ON episodes(status, learned);
    CREATE VIRTUAL TABLE episodes_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2');

    CREATE TABLE facts (
        pk INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user TEXT NOT NULL,
        agent TEXT,
        status TEXT NOT NULL,
        category TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        uses INTEGER NOT NULL DEFAULT 0,
        last_used_at TEXT,
        body TEXT NOT NULL
    );
    CREATE INDEX facts_user ON facts(user, status);
    CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2');

    CREATE TABLE profile (
        user TEXT NOT NULL,
        section TEXT NOT NULL,
        summary TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user, section)
    );

    CREATE TABLE notes (
        pk INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user TEXT NOT NULL,
        date TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX notes_user_date ON notes(user, date);
    CREATE VIRTUAL TABLE notes_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2');

    CREATE TABLE knowledge (
        pk INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX knowledge_user ON knowledge(user);
    CREATE VIRTUAL TABLE knowledge_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2');

    CREATE TABLE tags (
        id INTEGER PRIMARY KEY,
        user TEXT NOT NULL,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        merged_to TEXT,
        body TEXT NOT NULL,
        UNIQUE (user, name)
    );
    CREATE TABLE item_tags (
        user TEXT NOT NULL,
        tag TEXT NOT NULL,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        weight REAL NOT NULL DEFAULT 1.0,
        PRIMARY KEY (user, tag, kind, item_id)
    );
    CREATE INDEX item_tags_item ON item_tags(kind, item_id);
    CREATE TABLE tag_relations (
        user TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        level TEXT NOT NULL,
        PRIMARY KEY (user, source, target)
    );

    CREATE TABLE dream_runs (
        id TEXT PRIMARY KEY,
        user TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX dream_runs_user ON dream_runs(user, started_at);

    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        user TEXT NOT NULL,
        name TEXT NOT NULL,
        admin INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );

    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: ingest recognises input it has already stored (Memory.add)
    _input_keys,
    # 3: reads that must stay cheap as a user's memory grows (tags by status; tag postings
    # newest first)
    """
    CREATE INDEX IF NOT EXISTS tags_user_status ON tags(user, status);
    """,
    # 4: a tag's newest postings without reading all of them (recall's bounded read)
    """
    CREATE INDEX IF NOT EXISTS item_tags_recent ON item_tags(user, tag);
    """,
    # 5: how many items carry each tag, kept by triggers (see _tag_sizes)
    lambda conn: _tag_sizes(conn),
    # 6: full text searched within one user's rows (see _fts_owner)
    lambda conn: _fts_owner(conn),
    # 7: a tag's newest postings read from one index, the table untouched (see _posting_order)
    lambda conn: _posting_order(conn),
    # 8: an archived fact's full-text row holds no text (see _archived_facts_unsearched)
    lambda conn: _archived_facts_unsearched(conn),
    # 9: a fact's confidence and strength in columns, the strongest read from an index (see _fact_strength)
    lambda conn: _fact_strength(conn),
    # 10: postings keyed by the item they tag, so a batch's new ones land together (see _postings_by_item)
    lambda conn: _postings_by_item(conn),
    # 11: the same knowledge document found by its digest, from an index (see _knowledge_digests)
    lambda conn: _knowledge_digests(conn),
    # 12: a Chinese text's index holds the parts of its compounds and its dates as one word
    # (see _cjk_indexed_again)
    lambda conn: _cjk_indexed_again(conn),
    # 13: the days each episode speaks of, past or to come, under an index by day (see _mentions)
    lambda conn: _mentions(conn),
]

# what else a use moves (the SET clause reads the row as it was: uses + ? is the new count)
_STRONGER = {"episode": "", "fact": ", strength = confidence + 0.1 * reverie_ln(1 + uses + ?)"}


# what keeps tag_sizes (migration 5) and seq (migration 7) right, and the index recall reads
# postings from (7), made again when migration 10 rebuilds the table
_COUNTING_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS item_tags_counted AFTER INSERT ON item_tags BEGIN "
    "INSERT INTO tag_sizes (user, tag, n) VALUES (new.user, new.tag, 1) "
    "ON CONFLICT (user, tag) DO UPDATE SET n = n + 1; END",
    "CREATE TRIGGER IF NOT EXISTS item_tags_uncounted AFTER DELETE ON item_tags BEGIN "
    "UPDATE tag_sizes SET n = n - 1 WHERE user = old.user AND tag = old.tag; END",
)
_SEQUENCING_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS item_tags_sequenced AFTER INSERT ON item_tags WHEN new.seq IS NULL BEGIN "
    "UPDATE item_tags SET seq = new.rowid WHERE rowid = new.rowid; END"
)
_NEWEST_INDEX = "CREATE INDEX IF NOT EXISTS item_tags_newest ON item_tags(user, tag, seq, kind, item_id, weight)"


def _tag_sizes(conn: sqlite3.Connection) -> None:
    """5: ``tag_sizes``, the number of postings of each (user, tag), kept by triggers on
    ``item_tags`` whatever statement writes it, so recall reads a tag's size (its idf) in
    one probe instead of counting postings that grow with the store."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS tag_sizes (user TEXT NOT NULL, tag TEXT NOT NULL, n INTEGER NOT NULL, "
        "PRIMARY KEY (user, tag)) WITHOUT ROWID"
    )
    conn.execute("DELETE FROM tag_sizes")
    conn.execute("INSERT INTO tag_sizes (user, tag, n) SELECT user, tag, count(*) FROM item_tags GROUP BY user, tag")
    for trigger in _COUNTING_TRIGGERS:
        conn.execute(trigger)


def _fts_owner(conn: sqlite3.Connection) -> None:
    """6: every full-text table gains an ``owner`` column holding its row's user as one token
    (:func:`owner_token`), so a search names the user inside the full-text query and reads
    that user's matches only: before, every user's matches of a word were read, ranked and
    joined to their rows to be thrown away, a cost that grew with the whole store. The
    tables are rebuilt from the text they hold (no stemming runs again)."""
    conn.create_function("reverie_owner", 1, owner_token, deterministic=True)
    for kind, fts in _FTS_TABLE.items():
        main = _MAIN_TABLE[kind]
        conn.execute(f"CREATE VIRTUAL TABLE {fts}_owned USING fts5({FTS_COLUMNS})")
        conn.execute(
            f"INSERT INTO {fts}_owned (rowid, text, owner) SELECT f.rowid, f.text, reverie_owner(m.user) "
            f"FROM {fts} f JOIN {main} m ON m.pk = f.rowid"
        )
        conn.execute(f"DROP TABLE {fts}")
        conn.execute(f"ALTER TABLE {fts}_owned RENAME TO {fts}")


def _posting_order(conn: sqlite3.Connection) -> None:
    """7: postings carry their order of writing (``seq``, the row's rowid) inside an index
    that holds every column recall reads, newest first per (user, tag). Before, the
    (user, tag) index gave the order and each posting was then read from the table by
    rowid: a tag's newest postings lie scattered over the table, one page each (at 100k
    episodes a recall's 22 tags, ~1,600 postings, took 13 ms). ``set_item_tags`` writes
    ``seq``; a trigger fills it for any other insert (a tag merge)."""
    if "seq" not in {row[1] for row in conn.execute("PRAGMA table_info(item_tags)")}:
        conn.execute("ALTER TABLE item_tags ADD COLUMN seq INTEGER")
    conn.execute("UPDATE item_tags SET seq = rowid WHERE seq IS NOT rowid")
    conn.execute("DROP INDEX IF EXISTS item_tags_recent")
    conn.execute(_NEWEST_INDEX)
    conn.execute(_SEQUENCING_TRIGGER)


def _archived_facts_unsearched(conn: sqlite3.Connection) -> None:
    """8: an archived fact keeps its full-text row with the owner token and no text, as
    ``put_fact`` now writes it: no search returns an archived fact, and a search's window
    (the newest matches, read from the index alone) then holds live facts only. At 100k
    episodes 44% of the facts were archived (superseded by newer ones) and took that share
    of the window. Restoring a fact writes its text again."""
    conn.execute("UPDATE facts_fts SET text = '' WHERE rowid IN (SELECT pk FROM facts WHERE status = 'archived')")


def _fact_strength(conn: sqlite3.Connection) -> None:
    """9: ``confidence`` and ``strength`` (:func:`reverie.store.base.strength`: confidence +
    0.1 ln(1 + uses)) as columns of ``facts``, written with the fact and moved by ``touch``,
    under an index in (user, status, category, strength) order: recall's background facts,
    the strongest few of a category, are then the first entries of that index, where every
    consolidated fact's record was read and ranked (5,000 of them took 27-61 ms a recall)."""
    names = {row[1] for row in conn.execute("PRAGMA table_info(facts)")}
    for column in ("confidence", "strength"):
        if column not in names:
            conn.execute(f"ALTER TABLE facts ADD COLUMN {column} REAL NOT NULL DEFAULT 0")
    conn.execute("UPDATE facts SET confidence = coalesce(json_extract(body, '$.confidence'), 0)")
    conn.execute("UPDATE facts SET strength = confidence + 0.1 * reverie_ln(1 + uses)")
    conn.execute("CREATE INDEX IF NOT EXISTS facts_strength ON facts(user, status, category, strength DESC, pk)")


def _postings_by_item(conn: sqlite3.Connection) -> None:
    """10: ``item_tags`` keyed by (user, kind, item_id, tag), where it was (user, tag, kind,
    item_id). The old key put each new posting beside the other postings of its tag: a
    learning batch, whose new items carry a few thousand distinct tags, wrote one page of
    that index per tag (at 100k episodes 1,466 of the batch's 3,727 pages). Item ids sort by
    the time they were made (:func:`reverie.models.new_id`), so under the new key a batch's
    postings are appended together at the end of the user's items, and the key also serves
    what the (kind, item_id) index did (an item's postings are replaced by user, kind and
    item), so that index goes. Rows keep their rowid and seq; the triggers and recall's
    newest-first index are made again on the new table."""
    conn.execute(
        "CREATE TABLE item_tags_by_item (user TEXT NOT NULL, tag TEXT NOT NULL, kind TEXT NOT NULL, "
        "item_id TEXT NOT NULL, weight REAL NOT NULL DEFAULT 1.0, seq INTEGER, "
        "PRIMARY KEY (user, kind, item_id, tag))"
    )
    conn.execute(
        "INSERT INTO item_tags_by_item (rowid, user, tag, kind, item_id, weight, seq) "
        "SELECT rowid, user, tag, kind, item_id, weight, seq FROM item_tags ORDER BY user, kind, item_id, tag"
    )
    conn.execute("DROP TABLE item_tags")  # its indexes and triggers go with it
    conn.execute("ALTER TABLE item_tags_by_item RENAME TO item_tags")
    conn.execute(_NEWEST_INDEX)
    for trigger in (*_COUNTING_TRIGGERS, _SEQUENCING_TRIGGER):
        conn.execute(trigger)


def _knowledge_digests(conn: sqlite3.Connection) -> None:
    """11: each knowledge document's :func:`~reverie.store.base.knowledge_digest` in a column
    under a (user, digest) index: adding a document finds the same one stored before in one
    probe, where it read and parsed every document of the user (each up to 100,000
    characters). One statement fills it, a row at a time."""
    if "digest" not in {row[1] for row in conn.execute("PRAGMA table_info(knowledge)")}:
        conn.execute("ALTER TABLE knowledge ADD COLUMN digest TEXT NOT NULL DEFAULT ''")
    conn.create_function("reverie_knowledge_digest", 1,
                         lambda body: knowledge_digest(KnowledgeDoc.model_validate_json(body)), deterministic=True)
    conn.execute("UPDATE knowledge SET digest = reverie_knowledge_digest(body)")
    conn.execute("CREATE INDEX IF NOT EXISTS knowledge_user_digest ON knowledge(user, digest)")


# a text that holds a CJK character (reverie.text.CJK_RE), as SQLite's GLOB reads a class of characters
CJK_GLOB = "*[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]*"


def _cjk_indexed_again(conn: sqlite3.Connection) -> None:
    """12: each full-text row that holds Chinese written again from its item, as
    :func:`~reverie.text.index_text` now writes it: the parts of its compounds after its
    terms ("北京首都机场" also 北京 首都 机场, so "宠物" finds "宠物医院"), and a date of digits
    as one word ("3月5日" and its month "3月", where 月 and 日 stood as words that every date
    holds). Only rows whose indexed text holds a CJK character change, and only they are read
    with their items: the others (an English store's every row) are looked at once, in C (a
    text of more bytes than characters, then a GLOB of it), and left as they are: 0.02 s for
    100k English episodes, where the GLOB alone took 0.55 s. A page of rows at a time (their
    bodies can be long); an item whose body cannot be read keeps its row. 20,000 Chinese
    episodes took 2.7 s (their bodies read, jieba)."""
    for kind, fts in _FTS_TABLE.items():
        main, text_of = _MAIN_TABLE[kind], SEARCH_TEXT[kind]
        last = 0
        while rows := conn.execute(
            f"SELECT c.id, m.body FROM {fts}_content c JOIN {main} m ON m.pk = c.id "
            "WHERE c.id > ? AND length(CAST(c.c0 AS BLOB)) > length(c.c0) AND c.c0 GLOB ? ORDER BY c.id LIMIT 500",
            (last, CJK_GLOB)).fetchall():
            written = []
            for pk, body in rows:
                try:
                    written.append((index_text(text_of(body)), pk))
                except ValueError:  # (pydantic's ValidationError among them)
                    continue
            conn.executemany(f"UPDATE {fts} SET text = ? WHERE rowid = ?", written)
            last = rows[-1][0]


_USERS = users_sql("user")

_MENTIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS mentions (episode_pk INTEGER NOT NULL, first TEXT NOT NULL, last TEXT NOT NULL, "
    "user TEXT NOT NULL, PRIMARY KEY (episode_pk, first, last)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mentions_user_day ON mentions(user, first, last, episode_pk)",
)


def _mentions(conn: sqlite3.Connection) -> None:
    """13: ``mentions``, the days each episode speaks of (:func:`~reverie.store.base.
    episode_days`: "the dentist on Friday", said on a Monday, speaks of that Friday), one row
    a time, keyed by the episode and indexed by (user, first day): a question about a day
    reads the episodes that spoke of it, whenever they were said, from that index. Filled
    for the episodes stored before, a page at a time."""
    for statement in _MENTIONS_TABLE:
        conn.execute(statement)
    conn.execute("DELETE FROM mentions")  # (a store taken back to an older version number holds some)
    last = 0
    while rows := conn.execute("SELECT pk, body FROM episodes WHERE pk > ? ORDER BY pk LIMIT 500", (last,)).fetchall():
        conn.executemany("INSERT OR IGNORE INTO mentions (episode_pk, first, last, user) VALUES (?, ?, ?, ?)",
                         [(pk, first, end, ep.user) for pk, ep, first, end in stored_days(rows)])
        last = rows[-1][0]


def owner_token(user: str) -> str:
    """The one full-text token that stands for ``user`` (its UTF-8 bytes in hex, behind a
    letter), in every row written and in migration 6: ``ana`` -> ``u616e61``."""
    return "u" + user.encode("utf-8").hex()


def owned(match: str, user: str | None) -> str:
    """A full-text query of ``match`` over the text column, within ``user``'s rows (every
    user's with None: the rows are then told apart by the join to their table)."""
    text = f"text : ({match})"
    return text if user is None else f'{text} AND owner : "{owner_token(user)}"'


FTS_COLUMNS = "text, owner, tokenize='unicode61 remove_diacritics 2'"
# bm25 over the text only: the owner column weighs nothing
BM25_WEIGHTS = "1.0, 0.0"

_FTS_TABLE = {"episode": "episodes_fts", "fact": "facts_fts", "note": "notes_fts", "knowledge": "knowledge_fts"}
_MAIN_TABLE = {"episode": "episodes", "fact": "facts", "note": "notes", "knowledge": "knowledge"}
# which rows a search keeps, checked on the rows looked up by pk: the unary + keeps the
# planner on the primary key (with a hundred pks bound it reached for the status index and
# read every completed episode: 23 ms at 100k)
_ROW_FILTER = {
    "episode": "AND +m.status = 'completed' AND +m.archived = 0",
    "fact": "AND +m.status != 'archived'",
    "note": "",
    "knowledge": "",
}


def _ts(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _dt_set(value: str) -> datetime:
    """A time from a NOT NULL column (always written by :func:`_ts` from a datetime)."""
    return datetime.fromisoformat(value)


def _in(values: list[Any]) -> str:
    return ",".join("?" * len(values))


# values bound in one statement, at most (SQLite caps a statement's parameters)
PARAMS_PER_STATEMENT = 500
T = TypeVar("T", bound=Hashable)


def _chunked(values: Iterable[T], size: int = PARAMS_PER_STATEMENT) -> Iterator[list[T]]:
    """``values`` without repeats, ``size`` at a time: one statement's worth of parameters."""
    unique = list(dict.fromkeys(values))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian, seven bits a byte, the ninth byte whole), as FTS5 writes
    its records."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def _occurrences(tokens: list[str], phrase: list[str]) -> int:
    """How often ``phrase`` (two tokens or more) stands in ``tokens``, as FTS5 counts a
    phrase's instances."""
    n = len(phrase)
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i : i + n] == phrase)


def _token_scores(
    found: list[tuple[Any, ...]], scoring: list[tuple[float, str | list[str]]], avgdl: float,
) -> dict[int, float]:
    """rowid -> FTS5's BM25 of each row of ``found`` (rowid, text): each phrase (a token, or
    a list of tokens) with its idf, the row's frequencies read from its tokens."""
    out: dict[int, float] = {}
    norms: dict[int, float] = {}  # by row length: rows of one length share it
    for rowid, text in found:
        held = fts_tokens(text or "")
        size = len(held) + OWNER_TOKENS
        norm = norms.get(size)
        if norm is None:
            norm = norms[size] = fts5_norm(size, avgdl)
        score = 0.0
        for idf, term in scoring:
            freq = held.count(term) if isinstance(term, str) else _occurrences(held, term)
            if freq:
                score += fts5_term(idf, freq, norm)
        out[rowid] = score
    return out


_PLAIN_CHARS = b"abcdefghijklmnopqrstuvwxyz0123456789 "


def _plain_rows(found: list[tuple[Any, ...]]) -> bool:
    """Whether every text of ``found`` (rowid, text) is plain index text: lower-case ASCII
    letters and digits in words between single spaces, as :func:`~reverie.text.index_text`
    writes English. Checked on all of them joined, a few passes of C over the window."""
    texts = [row[1] for row in found]
    if not texts or not all(texts):  # (no rows, or an empty or NULL text)
        return False
    blob = " ".join(texts)
    return (blob.isascii() and not blob.encode("ascii").translate(None, _PLAIN_CHARS)
            and "  " not in blob and blob[0] != " " and blob[-1] != " ")


def _plain_scores(found: list[tuple[Any, ...]], words: list[tuple[float, str]], avgdl: float) -> dict[int, float]:
    """:meth:`SQLiteStore._scored`'s ranking of rows of plain text (:func:`_plain_rows`) by
    one-token terms, without splitting each row into tokens: a row's tokens are its spaces
    plus one, and with the row padded by a space, " term " stands once for each instance
    of the term, unless two instances stand side by side (" term term "), which share a
    space: only such a row is split and counted. The same counts, lengths and operations in
    the same order as the general loop, so the very same doubles; a row past
    MAX_LEXEME_BYTES (whose longest tokens the general reading drops) goes to that loop."""
    patterns = [(idf, term, f" {term} ", f" {term} {term} ") for idf, term in words]
    out: dict[int, float] = {}
    norms: dict[int, float] = {}
    for rowid, text in found:
        if len(text) > MAX_LEXEME_BYTES:
            out.update(_token_scores([(rowid, text)], list(words), avgdl))
            continue
        size = text.count(" ") + 1 + OWNER_TOKENS
        norm = norms.get(size)
        if norm is None:
            norm = norms[size] = fts5_norm(size, avgdl)
        padded = f" {text} "
        score = 0.0
        for idf, term, alone, twice in patterns:
            freq = padded.count(alone)
            if freq and twice in padded:
                freq = text.split(" ").count(term)
            if freq:
                score += fts5_term(idf, freq, norm)
        out[rowid] = score
    return out


def fts_query(query_terms: Iterable[str]) -> str:
    """An OR query of quoted terms: FTS5 syntax characters in user text stay inert."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in dict.fromkeys(query_terms) if t]
    return " OR ".join(quoted)


# how long a user's share of a table (see SQLiteStore._owner), or that a word is past the
# search window (SQLiteStore._known_few), is taken as known
OWNER_SHARE_SECONDS = 300.0
# word counts kept (SQLiteStore._holds_few) before they are forgotten all at once
MAX_KEPT_COUNTS = 50_000
# a full-text table of at least this many rows is ranked by reverie's own BM25 (see
# SQLiteStore._scored): FTS5's bm25() counts each query word's rows by walking the word's
# whole doclist, in every statement, so its cost grew with the store (a window of 1,000
# rows: 3.4 ms at 100k rows, 23 ms at 1M). Below it FTS5's own is the faster (a search at
# 100k: 7.3 ms with FTS5's, 18.6 ms with this; at 1M: 32.5 and 23.3 ms); the scores are
# the same doubles either way
OWN_BM25_ROWS = 500_000
# ... and a table of one-line texts (facts) from fewer rows: each window row is short to read
# and score, while FTS5 still walks every query word's whole doclist. On the 1M store
# (135,631 fact rows), 2 x 300 recalls interleaved: 29.96 -> 26.73 ms mean, p95 44.63 ->
# 37.50; at 100k (12,916 fact rows) the two were even (15.37 and 15.54 ms). Notes (9 tokens
# a row) were not: at 100k their own ranking cost 1 ms a recall more.
OWN_BM25_FACT_ROWS = 50_000

# full-text search ranks every match while a query matches at most this many of a user's
# items of one kind; past it, the newest this many plus all matches of the rare terms
SEARCH_WINDOW = 1000

# setting ``durability`` -> PRAGMA synchronous (with WAL)
SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}


class SQLiteStore(Store):
    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30000, durability: str = "normal"):
        """``durability`` (setting ``durability``): "normal" syncs the WAL at checkpoints, so a
        power loss may drop the last commits but never corrupts; "full" syncs every commit."""
        if durability not in SYNCHRONOUS:
            raise StoreError(f"durability must be one of {', '.join(SYNCHRONOUS)}, not {durability!r}")
        self.path = Path(path)
        self.where = str(self.path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if str(self.path) != ":memory:":
            # a new store file is its owner's alone, as the markdown files are (SQLite gives
            # its -wal and -shm files the database file's permissions)
            try:
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot create the store at {self.path}: {exc}") from exc
        self._busy_ms = busy_timeout_ms
        self._synchronous = SYNCHRONOUS[durability]
        self._closed = False
        self._local = threading.local()
        self._lock = threading.Lock()
        self._shares: dict[tuple[str, str], tuple[bool, float]] = {}  # (kind, user) -> (owned search, when)
        # counts of full-text rows, kept between searches -> (count, the table's last rowid
        # then, when): ("few", fts table, owner, term), a word's rows up to SEARCH_WINDOW + 1
        # (_holds_few); ("docs", fts table, phrase), every user's rows holding it (_doc_count)
        self._counts: dict[tuple[str | None, ...], tuple[int, int, float]] = {}
        self._checkpointer = Checkpointer(self.path, busy_timeout_ms)
        self._migrate()

    # ------------------------------------------------------------ connections
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:  # a closed store opens no connection again behind its owner's back
                raise StoreError(f"the store at {self.path} is closed: open it (a Memory) again to use it")
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_ms / 1000
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
            conn.row_factory = sqlite3.Row
            # a fact's strength moves with its uses (touch) in SQL, with the log strength() takes
            conn.create_function("reverie_ln", 1, math.log, deterministic=True)
            try:  # the first statements read the file: one that is no database fails here
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                # checkpoints come from a thread (reverie.store.checkpoint); SQLite's own, inside
                # a COMMIT, only past a larger log
                conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.Error as exc:
                conn.close()
                raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
            if self._closed:  # closed while this one opened
                conn.close()
                raise StoreError(f"the store at {self.path} is closed: open it (a Memory) again to use it")
            self._local.conn = conn
            self._local.depth = 0
        return conn

    @contextmanager
    def transaction(self, *, batch: bool = False, wait: float | None = None) -> Iterator[None]:
        # batch: an embedded database has no round trips to save
        conn = self._conn()
        local = self._local  # (close() replaces it: this transaction keeps its own)
        if getattr(local, "depth", 0):
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        if wait is not None:  # this transaction's own wait for the write lock
            conn.execute(f"PRAGMA busy_timeout = {max(0, int(wait * 1000))}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # another writer held the store past busy_timeout
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(f"the store at {self.path} was busy, nothing was written; try again: {exc}") from exc
            raise
        finally:
            if wait is not None:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        local.depth = 1
        changes = conn.total_changes
        try:
            yield
        except BaseException:
            local.depth = 0
            conn.execute("ROLLBACK")
            raise
        local.depth = 0
        conn.execute("COMMIT")
        if conn.total_changes != changes:  # something to checkpoint
            self._checkpointer.soon()

    def write_mark(self) -> tuple[int, int]:
        # data_version moves when another connection commits; total_changes when this one writes
        conn = self._conn()
        return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes

    def _x(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self._conn().execute(sql, tuple(params))

    def _migrate(self) -> None:
        conn = self._conn()
        with self.transaction():
            migrate_schema(conn, MIGRATIONS, str(self.path), "?")

    def schema_version(self) -> int:
        return int(self._x("SELECT version FROM schema_version").fetchone()[0])

    def integrity_problems(self) -> list[IntegrityProblem]:
        """SQLite's ``quick_check`` (every page and index entry, without matching indexes to
        rows: a fraction of ``integrity_check``'s time), each full-text index against its
        text, every item's full-text row, and the tag counts against the postings."""
        problems: list[IntegrityProblem] = []

        def read(what: str, sql: str) -> list[tuple[Any, ...]]:
            try:
                return self._tuples(sql, ())
            except sqlite3.DatabaseError as exc:  # a damaged page met on the way
                problems.append(IntegrityProblem(f"{what} could not be read (SQLite: {exc})", damaged=True))
                return []

        said = [str(r[0]) for r in read("the file", f"PRAGMA quick_check({MAX_INTEGRITY_PROBLEMS})")]
        problems += [IntegrityProblem(f"SQLite: {line}", damaged=True) for line in said if line != "ok"]
        for kind, fts in _FTS_TABLE.items():
            try:  # a command, not a write: FTS5 compares its index with the text it holds
                self._x(f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(IntegrityProblem(f"the full-text index of {kind}s does not match their text "
                                                 f"(SQLite: {exc})"))
            main = _MAIN_TABLE[kind]
            for (missing,) in read(f"the {kind}s' full-text rows", f"SELECT count(*) FROM {main} m "
                                   f"WHERE NOT EXISTS (SELECT 1 FROM {fts}_content c WHERE c.id = m.pk)"):
                if missing:
                    problems.append(IntegrityProblem(f"{missing} {kind}(s) have no full-text row: search cannot "
                                                     "find them"))
        for (off,) in read("the tag counts", "SELECT count(*) FROM (SELECT user, tag, count(*) AS n FROM item_tags "
                           "GROUP BY user, tag) p LEFT JOIN tag_sizes s ON s.user = p.user AND s.tag = p.tag "
                           "WHERE s.n IS NOT p.n UNION ALL SELECT count(*) FROM tag_sizes s WHERE s.n <> 0 AND NOT "
                           "EXISTS (SELECT 1 FROM item_tags p WHERE p.user = s.user AND p.tag = s.tag)"):
            if off:
                problems.append(IntegrityProblem(f"{off} tag count(s) differ from the tag's postings: recall weighs "
                                                 "those tags wrongly"))
        return problems[:MAX_INTEGRITY_PROBLEMS]

    def close(self) -> None:
        """Close the store: a call made after it is a StoreError. This thread's connection
        closes now; another thread's is never closed from here, for that thread may be in the
        middle of a statement or of reading its rows (closing a connection under it crashed
        the process): it closes when the last reference to it goes, at once if it is idle,
        else when its statement or transaction ends (whose next call is the StoreError)."""
        self._closed = True
        self._checkpointer.stop()
        mine = getattr(self._local, "conn", None)
        self._local = threading.local()  # the other threads' idle connections go with it
        if mine is not None:
            try:
                mine.close()
            except sqlite3.Error:
                pass

    def users(self) -> list[str]:
        return [r[0] for r in self._x(_USERS)]

    # ------------------------------------------------------------ shared row writing
    def _write(self, kind: str, columns: dict[str, Any], search_text: str | None) -> int | None:
        """Insert or update a row by id, and its full-text row unless ``search_text`` is None
        (then an existing row keeps its search row; a new one gets an empty one). The row's
        pk when it was written with its search row."""
        table, names = _MAIN_TABLE[kind], list(columns)
        with self.transaction():
            if search_text is None:
                sets = ", ".join(f"{n} = ?" for n in names if n != "id")
                values = [v for n, v in columns.items() if n != "id"]
                if self._x(f"UPDATE {table} SET {sets} WHERE id = ?", [*values, columns["id"]]).rowcount:
                    return None
            row = self._x(f"SELECT pk FROM {table} WHERE id = ?", (columns["id"],)).fetchone()
            if row is None:
                pk = self._x(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({_in(names)})", columns.values()).lastrowid
            else:
                pk = row[0]
                sets = ", ".join(f"{n} = ?" for n in names)
                self._x(f"UPDATE {table} SET {sets} WHERE pk = ?", [*columns.values(), pk])
                self._x(f"DELETE FROM {_FTS_TABLE[kind]} WHERE rowid = ?", (pk,))
                self._counts.clear()  # a row's words changed under an old rowid (see _kept)
            self._x(f"INSERT INTO {_FTS_TABLE[kind]} (rowid, text, owner) VALUES (?, ?, ?)",
                    (pk, index_text(search_text or ""), owner_token(columns["user"])))
        return pk

    def _rows(self, kind: str, ids: Iterable[str]) -> list[sqlite3.Row]:
        """Rows by id, a few hundred ids per statement (SQLite caps the parameters)."""
        out: list[sqlite3.Row] = []
        for chunk in _chunked(ids):
            out += self._x(f"SELECT * FROM {_MAIN_TABLE[kind]} WHERE id IN ({_in(chunk)})", chunk).fetchall()
        return out

    # ------------------------------------------------------------ episodes
    def put_episode(self, episode: Episode, *, reindex: bool = True) -> None:
        columns = episode_columns(episode, _ts)
        columns["archived"], columns["learned"] = int(episode.archived), int(episode.learned)
        if not reindex:
            self._write("episode", columns, None)
            return
        days = episode_days(episode)
        with self.transaction():
            pk = self._write("episode", columns, episode_text(episode))
            self._x("DELETE FROM mentions WHERE episode_pk = ?", (pk,))
            self._conn().executemany("INSERT OR IGNORE INTO mentions (episode_pk, first, last, user) VALUES (?, ?, ?, ?)",
                                     [(pk, first, last, episode.user) for first, last in days])

    def mentioning(self, user: str, first: date, last: date, limit: int) -> list[Episode]:
        # a time spoken of began at most MENTION_MAX_DAYS before the first day asked about:
        # the index is read from there to the last day asked about
        # driven by the index of days: the episodes' own indexes (status, archived: the '+'
        # keeps SQLite from choosing them) would scan every completed episode of the store; and
        # only the newest `limit` are read whole
        rows = self._x(
            "SELECT * FROM episodes WHERE pk IN (SELECT pk FROM episodes WHERE pk IN (SELECT episode_pk FROM mentions "
            "WHERE user = ? AND first >= ? AND first <= ? AND last >= ?) AND +status = 'completed' AND +archived = 0 "
            "ORDER BY occurred_at DESC, pk DESC LIMIT ?) ORDER BY occurred_at DESC, pk DESC",
            (user, (first - timedelta(days=MENTION_MAX_DAYS)).isoformat(), last.isoformat(), first.isoformat(), limit),
        )
        return [self._episode(r) for r in rows]

    def _episode(self, row: sqlite3.Row) -> Episode:
        return with_counters(Episode.model_validate_json(row["body"]), uses=row["uses"],
                             last_used_at=_dt(row["last_used_at"]), learned=bool(row["learned"]),
                             archived=bool(row["archived"]), status=row["status"])

    def get_episode(self, episode_id: str) -> Episode | None:
        row = self._x("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        return self._episode(row) if row else None

    def get_episodes(self, ids: Iterable[str]) -> dict[str, Episode]:
        return {row["id"]: self._episode(row) for row in self._rows("episode", ids)}

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
        sql = "SELECT * FROM episodes WHERE user = ?"
        params: list[str | int] = [user]
        for clause, value in (
            ("thread = ?", thread),
            ("status = ?", status),
            ("archived = ?", None if archived is None else int(archived)),
            ("occurred_at >= ?", _ts(since)),
            ("occurred_at <= ?", _ts(until)),
        ):
            if value is not None:
                sql += f" AND {clause}"
                params.append(value)
        sql += f" ORDER BY occurred_at {'DESC' if newest_first else 'ASC'}, pk {'DESC' if newest_first else 'ASC'}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [self._episode(r) for r in self._x(sql, params)]

    def stored_after(self, kind: str, user: str, after: int, limit: int) -> list[tuple[int, Any]]:
        parse: dict[str, Callable[[sqlite3.Row], Any]] = {
            "episode": self._episode, "fact": self._fact, "note": lambda r: Note.model_validate_json(r["body"]),
            "knowledge": lambda r: KnowledgeDoc.model_validate_json(r["body"])}
        # along the rowid from ``after`` (the unary + keeps the planner off the user's indexes,
        # none of which is in pk order: with them every page read and sorted all the user's rows)
        rows = self._x(f"SELECT * FROM {_MAIN_TABLE[kind]} WHERE +user = ? AND pk > ? ORDER BY pk LIMIT ?",
                       (user, after, limit))
        return [(row["pk"], parse[kind](row)) for row in rows]

    def recent_threads(self, user: str, limit: int = 200) -> list[str]:
        rows = self._x("SELECT thread FROM episodes WHERE user = ? ORDER BY occurred_at DESC LIMIT ?",
                       (user, RECENT_THREAD_EPISODES))
        return first_distinct((r[0] for r in rows), limit)

    def counts(self, user: str) -> dict[str, Any]:
        def tally(sql: str) -> dict[str, int]:
            return {str(r[0]): int(r[1]) for r in self._x(sql, (user,))}

        def one(sql: str) -> int:
            return int(self._x(sql, (user,)).fetchone()[0])

        return {
            "episodes_by_status": tally("SELECT status, count(*) FROM episodes WHERE user = ? GROUP BY status ORDER BY 1"),
            "threads": one("SELECT count(DISTINCT thread) FROM episodes WHERE user = ?"),
            "facts_by_status": tally("SELECT status, count(*) FROM facts WHERE user = ? GROUP BY status ORDER BY 1"),
            "notes": one("SELECT count(*) FROM notes WHERE user = ?"),
            "knowledge": one("SELECT count(*) FROM knowledge WHERE user = ?"),
            "tags": tally("SELECT status, count(*) FROM tags WHERE user = ? GROUP BY status ORDER BY 1"),
        }

    # ------------------------------------------------------------ pages (keyset reads)
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
        # (user, occurred_at) and (user, thread, occurred_at) carry the rowid: the page is an
        # index range read from the cursor on, however deep it is
        last = decode_cursor(after, (str, int))
        sql = "SELECT * FROM episodes WHERE user = ?"
        params: list[Any] = [user]
        for clause, value in (
            ("thread = ?", thread),
            ("status = ?", status),
            ("archived = ?", None if archived is None else int(archived)),
            ("occurred_at <= ?", _ts(until)),
        ):
            if value is not None:
                sql += f" AND {clause}"
                params.append(value)
        if last is not None:
            sql += " AND (occurred_at, pk) < (?, ?)"
            params += last
        rows = self._x(sql + " ORDER BY occurred_at DESC, pk DESC LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["occurred_at"], r["pk"]))
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
            "recent": ("0", int),
            "last_used": ("coalesce(last_used_at, '')", str),
            "confidence": ("coalesce(json_extract(body, '$.confidence'), 0.0) + 0.0", float),
        }[order]
        last = decode_cursor(after, (kind, int))
        statuses = ["pending", "consolidated"] if status is None else [status] if isinstance(status, str) else list(status)
        sql = f"SELECT *, {key} AS sort_key FROM facts WHERE user = ? AND status IN ({_in(statuses)})"
        params: list[Any] = [user, *statuses]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        if contains:
            sql += " AND instr(lower(json_extract(body, '$.content')), lower(?)) > 0"
            params.append(contains)
        if last is not None:
            sql += f" AND ({key}, pk) < (?, ?)"
            params += last
        rows = self._x(sql + " ORDER BY sort_key DESC, pk DESC LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["sort_key"], r["pk"]))
        return Page([self._fact(r) for r in page.items], page.next)

    def page_notes(self, user: str, *, date: str | None = None, after: str | None = None, limit: int = 100) -> Page[Note]:
        last = decode_cursor(after, (str, int))
        sql, params = "SELECT pk, date, body FROM notes WHERE user = ?", [user]
        if date is not None:
            sql += " AND date = ?"
            params.append(date)
        if last is not None:
            sql += " AND (date < ? OR (date = ? AND pk > ?))"
            params += [last[0], last[0], last[1]]
        rows = self._x(sql + " ORDER BY date DESC, pk ASC LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["date"], r["pk"]))
        return Page([Note.model_validate_json(r["body"]) for r in page.items], page.next)

    def page_tags(self, user: str, *, status: str | None = None, after: str | None = None, limit: int = 100) -> Page[Tag]:
        last = decode_cursor(after, (str,))
        sql, params = "SELECT * FROM tags WHERE user = ?", [user]
        if status:
            sql += " AND status = ?"
            params.append(status)
        if last is not None:
            sql += " AND name > ?"
            params.append(last[0])
        rows = self._x(sql + " ORDER BY name LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["name"],))
        return Page([self._tag(r) for r in page.items], page.next)

    def page_journals(self, user: str, *, after: str | None = None, limit: int = 50) -> Page[str]:
        last = decode_cursor(after, (str, str))
        sql = ("SELECT key, value, json_extract(value, '$.at') AS at FROM meta WHERE key LIKE 'journal:%' "
               "AND json_extract(value, '$.user') = ?")
        params: list[Any] = [user]
        if last is not None:
            sql += " AND (json_extract(value, '$.at'), key) < (?, ?)"
            params += last
        rows = self._x(sql + " ORDER BY at DESC, key DESC LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["at"], r["key"]))
        return Page([str(r["value"]) for r in page.items], page.next)

    def pending_turns(self) -> list[Episode]:
        return [self._episode(r) for r in self._x("SELECT * FROM episodes WHERE status = 'pending' ORDER BY pk")]

    def waiting_turns(self, before: datetime, limit: int = 1000) -> list[Episode]:
        rows = self._x("SELECT * FROM episodes WHERE status IN ('pending', 'interrupted') AND created_at < ? "
                       "ORDER BY pk LIMIT ?", (_ts(before), limit))
        return [self._episode(r) for r in rows]

    def unlearned_episodes(self, limit: int = 1000, *, user: str | None = None) -> list[EpisodeRef]:
        sql, params = "SELECT id, user, agent, thread FROM episodes WHERE status = 'completed' AND learned = 0", []
        if user is not None:
            sql += " AND user = ?"
            params.append(user)
        rows = self._x(sql + " ORDER BY pk LIMIT ?", [*params, limit])
        return [EpisodeRef(*r) for r in rows]

    def list_journals(self, user: str, limit: int = 50) -> list[str]:
        rows = self._x(
            "SELECT value FROM meta WHERE key LIKE 'journal:%' AND json_extract(value, '$.user') = ? "
            "ORDER BY json_extract(value, '$.at') DESC LIMIT ?",
            (user, limit),
        )
        return [str(r[0]) for r in rows]

    def delete_user(self, user: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self.transaction():
            for kind, main in _MAIN_TABLE.items():
                fts = _FTS_TABLE[kind]
                self._x(f"DELETE FROM {fts} WHERE rowid IN (SELECT pk FROM {main} WHERE user = ?)", (user,))
                counts[main] = self._x(f"DELETE FROM {main} WHERE user = ?", (user,)).rowcount
            self._counts.clear()
            for table in ("profile", "tags", "item_tags", "tag_relations", "dream_runs", "api_keys", "input_keys",
                          "mentions"):
                counts[table] = self._x(f"DELETE FROM {table} WHERE user = ?", (user,)).rowcount
            self._x("DELETE FROM tag_sizes WHERE user = ?", (user,))
            counts["meta"] = self._x(
                f"DELETE FROM meta WHERE key IN ({_in(list(USER_META_PREFIXES))}) "
                "OR (key LIKE 'journal:%' AND json_extract(value, '$.user') = ?) OR substr(key, 1, ?) = ?",
                (*(prefix + user for prefix in USER_META_PREFIXES), user, len(_doc_key(user, "")), _doc_key(user, "")),
            ).rowcount
        return {k: v for k, v in counts.items() if v}

    def purge(self) -> None:
        conn = self._conn()
        conn.execute("PRAGMA secure_delete = ON")  # the pages the rewrite frees are zeroed
        try:
            with self.transaction():
                for fts in _FTS_TABLE.values():  # one segment each, without the deleted rows' words
                    self._x(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
            conn.execute("VACUUM")
            self._truncate_log(conn)  # and the log that held the old pages
        finally:
            conn.execute("PRAGMA secure_delete = OFF")

    def _truncate_log(self, conn: sqlite3.Connection) -> None:
        # A checkpoint that meets another one running (this store's checkpoint thread, which
        # the commits above woke, or another process's) gives up at once, busy handler or
        # not; one that meets a reader of an older snapshot waits for it. Tried again until
        # the store's busy timeout: a log left as it is would keep the deleted rows' pages.
        deadline = time.monotonic() + self._busy_ms / 1000
        while True:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the deleted rows are gone, but the log of {self.path} still holds their old pages: another "
                    "connection kept reading or checkpointing the store. Purge again when no other process has "
                    "it open (reverie delete-user --user <id> --confirm <id> --purge)"
                )
            time.sleep(0.05)

    def learning_backlog(self, user: str | None = None) -> tuple[int, str]:
        where, params = "status = 'completed' AND learned = 0", []
        if user is not None:
            where += " AND user = ?"
            params.append(user)
        waiting = int(self._x(f"SELECT count(*) FROM episodes WHERE {where}", params).fetchone()[0])
        row = self._x(
            f"SELECT learn_error FROM episodes WHERE {where} AND learn_error != '' ORDER BY pk DESC LIMIT 1", params
        ).fetchone()
        return waiting, str(row[0]) if row else ""

    def mark_learned(self, episode_ids: Iterable[str], learned: bool = True, error: str = "") -> None:
        ids = list(episode_ids)
        if ids:
            self._x(
                f"UPDATE episodes SET learned = ?, learn_error = ? WHERE id IN ({_in(ids)})",
                [int(learned), error, *ids],
            )

    def known_inputs(self, user: str, thread: str, keys: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for chunk in _chunked(keys):
            found.update(
                (r[0], r[1]) for r in self._x(
                    f"SELECT key, episode_id FROM input_keys WHERE user = ? AND thread = ? AND key IN ({_in(chunk)})",
                    [user, thread, *chunk],
                )
            )
        return found

    def put_inputs(self, user: str, thread: str, episode_id: str, keys: Iterable[str]) -> None:
        self._conn().executemany(
            "INSERT OR IGNORE INTO input_keys (user, thread, key, episode_id) VALUES (?, ?, ?, ?)",
            [(user, thread, key, episode_id) for key in dict.fromkeys(keys)],
        )

    # ------------------------------------------------------------ facts
    def put_fact(self, fact: Fact) -> None:
        # no search returns an archived fact: its row holds no text (see migration 8)
        self._write("fact", fact_columns(fact, _ts), searched_fact_text(fact))

    def _fact(self, row: sqlite3.Row) -> Fact:
        return with_counters(Fact.model_validate_json(row["body"]), uses=row["uses"],
                             last_used_at=_dt(row["last_used_at"]), status=row["status"])

    def get_fact(self, fact_id: str) -> Fact | None:
        row = self._x("SELECT * FROM facts WHERE id = ?", (fact_id,)).fetchone()
        return self._fact(row) if row else None

    def get_facts(self, ids: Iterable[str]) -> dict[str, Fact]:
        return {row["id"]: self._fact(row) for row in self._rows("fact", ids)}

    def count_facts(self, user: str, *, up_to: int | None = None) -> int:
        row = self._x("SELECT count(*) FROM (SELECT 1 FROM facts WHERE user = ? AND status IN ('pending', 'consolidated') "
                      "LIMIT ?)", (user, -1 if up_to is None else max(0, up_to)))
        return int(row.fetchone()[0])

    def related_facts(self, user: str, query_terms: list[str], limit: int) -> list[Fact]:
        match = fts_query(query_terms)
        if not match:
            return []
        rows = self._x(
            "SELECT m.* FROM facts_fts JOIN facts m ON m.pk = facts_fts.rowid WHERE facts_fts MATCH ? "
            "AND m.user = ? AND m.status IN ('pending', 'consolidated') ORDER BY facts_fts.rowid DESC LIMIT ?",
            (owned(match, self._owner("fact", user)), user, limit),
        ).fetchall()
        return [self._fact(r) for r in reversed(rows)]

    def fact_texts(self, user: str, query_terms: list[str] | None = None, limit: int = 0) -> list[FactText]:
        if query_terms is None:
            rows = self._x(
                "SELECT id, json_extract(body, '$.content'), category, agent FROM facts "
                "WHERE user = ? AND status IN ('pending', 'consolidated') ORDER BY pk",
                (user,),
            ).fetchall()
            return [FactText(*r) for r in rows]
        match = fts_query(query_terms)
        if not match:
            return []
        rows = self._x(
            "SELECT m.id, json_extract(m.body, '$.content'), m.category, m.agent FROM facts_fts "
            "JOIN facts m ON m.pk = facts_fts.rowid WHERE facts_fts MATCH ? "
            "AND m.user = ? AND m.status IN ('pending', 'consolidated') ORDER BY facts_fts.rowid DESC LIMIT ?",
            (owned(match, self._owner("fact", user)), user, limit),
        ).fetchall()
        return [FactText(*r) for r in reversed(rows)]

    def recent_facts(self, user: str, limit: int) -> list[Fact]:
        rows = self._x(
            "SELECT * FROM facts WHERE user = ? AND status IN ('pending', 'consolidated') ORDER BY pk DESC LIMIT ?",
            (user, limit),
        ).fetchall()
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
        where, params = self._facts_where(user, statuses, None if category is None else [category], agent)
        return [self._fact(r) for r in self._x(f"SELECT * FROM facts WHERE {where} ORDER BY pk", params)]

    def strongest_facts(
        self, user: str, categories: Sequence[str], agent: str | None, limit: int,
        statuses: Sequence[str] = ("consolidated",), exclude: Collection[str] = (),
    ) -> list[Fact]:
        # each status's and category's strongest first from the facts_strength index (a bounded
        # read, however many facts the user has), merged; only the strongest not excluded read
        # whole (an excluded one costs its row, not the parse of its record)
        heads: list[tuple[Any, ...]] = []
        most = limit + len(exclude)
        for status, category in ((s, c) for s in dict.fromkeys(statuses) for c in dict.fromkeys(categories)):
            where, params = self._facts_where(user, [status], [category], agent)
            heads += self._tuples(f"SELECT strength, pk FROM facts WHERE {where} ORDER BY strength DESC, pk LIMIT ?",
                                  [*params, most])
        pks: list[int] = [pk for _, pk in sorted(heads, key=lambda r: (-r[0], r[1]))[:most]]
        if not pks:
            return []
        rows = {r["pk"]: r for r in self._x(f"SELECT * FROM facts WHERE pk IN ({_in(pks)})", pks)}
        kept = [rows[pk] for pk in pks if pk in rows and rows[pk]["id"] not in exclude]
        return [self._fact(row) for row in kept[:limit]]

    @staticmethod
    def _facts_where(
        user: str, statuses: list[str], categories: list[str] | None, agent: str | None,
    ) -> tuple[str, list[Any]]:
        """The condition (and its parameters) on a user's facts of these statuses, of these
        categories (any with None), of ``agent`` or of every agent."""
        where, params = f"user = ? AND status IN ({_in(statuses)})", [user, *statuses]
        if categories is not None:
            where += f" AND category IN ({_in(categories)})"
            params += categories
        if agent is not None:
            where += " AND (agent = ? OR agent IS NULL)"
            params.append(agent)
        return where, params

    def delete_fact(self, fact_id: str) -> None:
        self._delete("fact", fact_id)

    def delete_episode(self, episode_id: str) -> None:
        self._delete("episode", episode_id)

    def delete_note(self, note_id: str) -> None:
        self._delete("note", note_id)

    def delete_knowledge(self, doc_id: str) -> None:
        self._delete("knowledge", doc_id)

    def _delete(self, kind: str, item_id: str) -> None:
        """An item's row, its full-text row and its postings."""
        main = _MAIN_TABLE[kind]
        with self.transaction():
            row = self._x(f"SELECT pk, user FROM {main} WHERE id = ?", (item_id,)).fetchone()
            if row:
                self._x(f"DELETE FROM {_FTS_TABLE[kind]} WHERE rowid = ?", (row[0],))
                self._x(f"DELETE FROM {main} WHERE pk = ?", (row[0],))
                if kind == "episode":
                    self._x("DELETE FROM mentions WHERE episode_pk = ?", (row[0],))
                self._counts.clear()
                self._x("DELETE FROM item_tags WHERE user = ? AND kind = ? AND item_id = ?", (row[1], kind, item_id))

    # ------------------------------------------------------------ profile
    def get_profile(self, user: str) -> Profile:
        profile = Profile()
        for row in self._x("SELECT section, summary, updated_at FROM profile WHERE user = ?", (user,)):
            if row["section"] in PROFILE_SECTIONS:
                section = profile.section(row["section"])
                section.summary = row["summary"]
                section.updated_at = _dt(row["updated_at"])
        return profile

    def put_profile_section(self, user: str, section: str, summary: str, updated_at: datetime | None) -> None:
        check_section(section)
        ProfileSection(summary=summary)  # validates the type before it lands
        if updated_at is None:
            self._x("DELETE FROM profile WHERE user = ? AND section = ?", (user, section))
            return
        self._x(
            "INSERT INTO profile (user, section, summary, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (user, section) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
            (user, section, summary, _ts(updated_at)),
        )

    # ------------------------------------------------------------ notes and knowledge
    def put_note(self, note: Note) -> None:
        self._write(
            "note",
            {"id": note.id, "user": note.user, "date": note.date, "body": note.model_dump_json()},
            note_text(note),
        )

    def list_notes(self, user: str, *, since: str | None = None, until: str | None = None) -> list[Note]:
        rows = self._x(
            "SELECT body FROM notes WHERE user = ? AND date >= ? AND date <= ? ORDER BY date, pk",
            (user, since or "0000-00-00", until or "9999-99-99"),
        )
        return [Note.model_validate_json(r[0]) for r in rows]

    def note_lines(self, user: str, date: str) -> list[str]:
        rows = self._tuples("SELECT json_extract(body, '$.content') FROM notes WHERE user = ? AND date = ? "
                            "ORDER BY date, pk", (user, date))
        return [r[0] for r in rows]

    def get_notes(self, ids: Iterable[str]) -> dict[str, Note]:
        return {row["id"]: Note.model_validate_json(row["body"]) for row in self._rows("note", ids)}

    def put_knowledge(self, doc: KnowledgeDoc) -> None:
        self._write(
            "knowledge",
            {"id": doc.id, "user": doc.user, "body": doc.model_dump_json(), "digest": knowledge_digest(doc)},
            knowledge_text(doc),
        )

    def same_knowledge(self, doc: KnowledgeDoc) -> KnowledgeDoc | None:
        row = self._x("SELECT body FROM knowledge WHERE user = ? AND digest = ? ORDER BY pk LIMIT 1",
                      (doc.user, knowledge_digest(doc))).fetchone()
        return KnowledgeDoc.model_validate_json(row[0]) if row else None

    def page_knowledge(self, user: str, *, after: str | None = None, limit: int = 100) -> Page[KnowledgeDoc]:
        last = decode_cursor(after, (int,))
        sql, params = "SELECT pk, body FROM knowledge WHERE user = ?", [user]
        if last is not None:
            sql += " AND pk < ?"
            params.append(last[0])
        rows = self._x(sql + " ORDER BY pk DESC LIMIT ?", [*params, limit + 1]).fetchall()
        page = page_of(rows, limit, lambda r: (r["pk"],))
        return Page([KnowledgeDoc.model_validate_json(r["body"]) for r in page.items], page.next)

    def list_knowledge(self, user: str) -> list[KnowledgeDoc]:
        rows = self._x("SELECT body FROM knowledge WHERE user = ? ORDER BY pk", (user,))
        return [KnowledgeDoc.model_validate_json(r[0]) for r in rows]

    def get_knowledge(self, ids: Iterable[str]) -> dict[str, KnowledgeDoc]:
        return {row["id"]: KnowledgeDoc.model_validate_json(row["body"]) for row in self._rows("knowledge", ids)}

    # ------------------------------------------------------------ search and usage
    def search(
        self, user: str, query_terms: list[str], kinds: Iterable[str], limit: int, *, names: Iterable[str] = (),
    ) -> list[Hit]:
        match = fts_query(query_terms)
        if not match:
            return []
        tokens = frozenset(query_tokens(query_terms))  # what a hit says it holds is of these
        named = searched_names(names, query_terms)
        hits: list[Hit] = []
        for kind in kinds:
            hits += self._search_kind(kind, user, query_terms, match, limit, tokens, named)
        return hits

    def _owner(self, kind: str, user: str) -> str | None:
        """``user`` when a search of ``kind`` should name the owner inside the full-text query:
        when the user holds under half of the table's rows. Otherwise the owner's doclist is
        about as long as the table and merging it costs more than it spares (a one-user store
        searched 30% slower with it): None, and the join keeps the user's rows. Read again
        after OWNER_SHARE_SECONDS; either way the same rows rank the same."""
        now = time.monotonic()
        known = self._shares.get((kind, user))
        if known is None or now - known[1] > OWNER_SHARE_SECONDS:
            main = _MAIN_TABLE[kind]
            # rows ever written (the last pk), and the user's counted up to half of them
            total = self._x(f"SELECT coalesce(max(pk), 0) FROM {main}").fetchone()[0]
            half = total // 2 + 1
            mine = self._x(f"SELECT count(*) FROM (SELECT 1 FROM {main} WHERE user = ? LIMIT ?)", (user, half))
            known = self._shares[(kind, user)] = (2 * mine.fetchone()[0] < total, now)
        return user if known[0] else None

    def _search_kind(
        self, kind: str, user: str, query_terms: list[str], match: str, limit: int, tokens: frozenset[str],
        names: Mapping[str, list[str]],
    ) -> list[Hit]:
        """BM25 over one kind (``match`` names the user: only their rows are read). While the
        query matches fewer than SEARCH_WINDOW of the rows searched, every match is ranked.
        Past that, ranking every match of a frequent word would grow with the store, so two
        bounded reads stand in for it: all terms ranked over the newest SEARCH_WINDOW matches,
        and the query's rare terms (in at most SEARCH_WINDOW items each) ranked over all of
        theirs, so an old memory named by a specific word is still found.

        The window is read from the full-text index alone (FTS5 walks its doclists newest
        first and ranks as it goes); only the best of it are then looked up in the kind's
        table, for their ids and to keep the user's live rows: a thousand row lookups cost as
        much as the ranking itself."""
        fts, main, live = _FTS_TABLE[kind], _MAIN_TABLE[kind], _ROW_FILTER[kind]
        owner = self._owner(kind, user)
        words = [t for t in dict.fromkeys(query_terms) if t]
        last = self._x(f"SELECT max(rowid) FROM {fts}").fetchone()[0] or 0
        whole = bool(words) and all(self._known_few(fts, owner, t, last) for t in words)
        if whole:
            # every word is known to be rare: all their matches ranked at once (the window of
            # the newest would be a part of them, ranked the same)
            ranked = self._scored(fts, owned(match, owner), words, last)
        else:
            ranked = self._scored(fts, owned(match, owner), words, last, newest=SEARCH_WINDOW)
        if len(ranked) >= SEARCH_WINDOW and not whole:
            rare = [t for t in words if self._holds_few(fts, owner, t, last)]
            if rare and len(rare) < len(words):
                # a rare term's matches are few: every one ranked; those that hold other query
                # words too by every word, as the window is (an old memory named by a rare
                # word keeps what its other words add)
                also = self._scored(fts, owned(fts_query(rare), owner), rare, last)
                rest = [t for t in words if t not in rare]
                if kind in EVERY_WORD_PAST_WINDOW:
                    also.update(self._scored(fts, owned(f"({fts_query(rare)}) AND ({fts_query(rest)})", owner),
                                             rare + rest, last))
                for pk, score in also.items():
                    ranked[pk] = max(score, ranked.get(pk, score))
            elif rare:  # every word rare: their matches are all the matches (the window's among them)
                ranked = self._scored(fts, owned(match, owner), words, last)
        known: dict[int, frozenset[str]] = {}  # what the rows _past_names read hold of ``tokens``
        if names and len(ranked) > limit:
            ranked = self._past_names(fts, ranked, words, names, limit, last, tokens, known)
        # the best, looked up a batch at a time until `limit` are the user's live rows; of
        # equal scores the older first, as SQLite's sort of the rows in their order
        # with each row's indexed text: which query ``tokens`` it holds (Hit.held), so that
        # recall need not read the text again
        def lookup(batch: list[int]) -> dict[int, tuple[str, frozenset[str] | None]]:
            if known and all(pk in known for pk in batch):
                return {pk: (item_id, known[pk]) for pk, item_id in self._tuples(
                    f"SELECT m.pk, m.id FROM {main} m WHERE m.pk IN ({_in(batch)}) AND +m.user = ? {live}",
                    [*batch, user])}
            rows = self._tuples(f"SELECT m.pk, m.id, c.c0 FROM {main} m JOIN {fts}_content c ON c.id = m.pk "
                                f"WHERE m.pk IN ({_in(batch)}) AND +m.user = ? {live}", [*batch, user])
            return {pk: (item_id, tokens.intersection(fts_tokens(text or ""))) for pk, item_id, text in rows}

        return best_hits(kind, ranked, limit, lookup)

    def _scored(self, fts: str, match: str, phrases: list[str], last: int, *, newest: int | None = None) -> dict[int, float]:
        """rowid -> BM25 relevance (higher is better) of the rows ``match`` finds (its
        ``newest`` only, if given), in rowid order, newest first with ``newest``.
        ``phrases`` are the query's terms in the order ``match`` names them.

        A large table is ranked here, not by FTS5's bm25(): FTS5 counts the rows holding each
        phrase by walking the phrase's whole doclist, in every statement. Here the counts
        are kept (_doc_count) and each row's frequencies are read from its text, with FTS5's
        formula, constants and order of operations: the very same doubles."""
        limit = "" if newest is None else f" ORDER BY rowid DESC LIMIT {int(newest)}"
        own = OWN_BM25_FACT_ROWS if fts == _FTS_TABLE["fact"] else OWN_BM25_ROWS
        stats = self._averages(fts) if last >= own else None
        if stats is None:
            return self._ranks(f"SELECT rowid, bm25({fts}, {BM25_WEIGHTS}) FROM {fts} WHERE {fts} MATCH ?{limit}",
                               (match,))
        found = self._tuples(
            f"SELECT f.rowid, c.c0 FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ?{limit}) f "
            f"JOIN {fts}_content c ON c.id = f.rowid", (match,))
        return self._own_bm25(fts, found, phrases, last, stats)

    def _own_bm25(
        self, fts: str, found: list[tuple[Any, ...]], phrases: Iterable[str], last: int, stats: tuple[int, int],
        plain: bool | None = None,
    ) -> dict[int, float]:
        """rowid -> FTS5's BM25 of the rows ``found`` (rowid, text) by ``phrases``, with the
        table's ``stats`` (:meth:`_averages`) and the kept counts; ``plain``: whether the rows
        are plain index text, when already known (:func:`_plain_rows`)."""
        rows, tokens = stats
        avgdl = tokens / rows
        # each phrase with its idf, a one-token phrase as its token (a phrase of none adds
        # nothing to any row, as in bm25())
        scoring: list[tuple[float, str | list[str]]] = [
            (fts5_idf(rows, self._doc_count(fts, phrase, last)), phrase[0] if len(phrase) == 1 else phrase)
            for phrase in map(fts_tokens, phrases) if phrase
        ]
        words = [(idf, term) for idf, term in scoring if isinstance(term, str)]
        if len(words) == len(scoring) and (_plain_rows(found) if plain is None else plain):
            return _plain_scores(found, words, avgdl)
        return _token_scores(found, scoring, avgdl)

    def _past_names(
        self, fts: str, ranked: dict[int, float], words: list[str], names: Mapping[str, list[str]], limit: int,
        last: int, tokens: frozenset[str], known: dict[int, frozenset[str]],
    ) -> dict[int, float]:
        """Of the best NAME_DEPTH * ``limit`` rows of ``ranked``, those that hold one of the
        ``names`` more than ``limit`` of them hold (:func:`~reverie.store.base.common_names`),
        ranked by the query's other ``words``; ``ranked`` itself when there is no such name.
        ``known`` is given the query ``tokens`` each row kept holds (its hit's ``held``)."""
        best = best_rows(ranked, NAME_DEPTH * limit)
        if len(best) <= limit or (stats := self._averages(fts)) is None:
            return ranked
        found = self._tuples(f"SELECT id, c0 FROM {fts}_content WHERE id IN ({_in(best)})", best)
        # which rows hold each query token: plain index text read by its spaces (see
        # _plain_scores), other text split into its tokens
        plain = _plain_rows(found)
        if plain:
            padded = [(pk, f" {text} ") for pk, text in found]
            holding = {t: {pk for pk, text in padded if f" {t} " in text} for t in tokens}
        else:
            split = [(pk, frozenset(fts_tokens(text or ""))) for pk, text in found]
            holding = {t: {pk for pk, held in split if t in held} for t in tokens}
        common, kept = common_names(names, holding, limit)
        rest = [w for w in words if w not in common]
        if not common or not any(map(fts_tokens, rest)):
            return ranked
        known.update((pk, frozenset(t for t, holders in holding.items() if pk in holders)) for pk in kept)
        return self._own_bm25(fts, [row for row in found if row[0] in kept], rest, last, stats, plain)

    def _averages(self, fts: str) -> tuple[int, int] | None:
        """FTS5's own totals of ``fts``: (rows, tokens in all columns), read from its averages
        record (the first varint, then one a column), as bm25() reads them; None if absent."""
        row = self._x(f"SELECT block FROM {fts}_data WHERE id = 1").fetchone()
        values = _varints(row[0]) if row and row[0] else []
        return (values[0], sum(values[1:])) if values and values[0] > 0 else None

    def _doc_count(self, fts: str, phrase: list[str], last: int) -> int:
        """Rows of every user whose text holds ``phrase``: counted once, then only the rows
        added since (rowids grow) are counted into it (see _kept)."""
        key = ("docs", fts, " ".join(phrase))
        query = 'text : "' + " ".join(phrase).replace('"', '""') + '"'
        kept = self._kept(key)
        if kept is None:
            count = self._x(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", (query,)).fetchone()[0]
            self._keep(key, count, last)
        else:
            count, then, when = kept
            if last > then:
                count += self._x(f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ? AND rowid > ?",
                                 (query, then)).fetchone()[0]
                self._keep(key, count, last, since=when)
        return int(count)

    def _kept(self, key: tuple[str | None, ...]) -> tuple[int, int, float] | None:
        """A kept count, the table's last rowid when it was right, and when it was counted
        whole; or None. Rows are added
        with ever larger rowids, so what rows added since could change is bounded; this
        process forgets every count when it rewrites or deletes a searched row, and a count
        is trusted for OWNER_SHARE_SECONDS at most, for what other processes rewrite."""
        known = self._counts.get(key)
        if known is None or time.monotonic() - known[2] > OWNER_SHARE_SECONDS:
            return None
        return known

    def _keep(self, key: tuple[str | None, ...], count: int, last: int, *, since: float | None = None) -> None:
        """Keep ``count`` as right when the table's last rowid was ``last`` (counted fully at
        ``since``, by default now)."""
        if len(self._counts) >= MAX_KEPT_COUNTS:
            self._counts.clear()
        self._counts[key] = (int(count), last, time.monotonic() if since is None else since)

    def _ranks(self, sql: str, params: tuple[Any, ...]) -> dict[int, float]:
        """rowid -> BM25 relevance (higher is better) of a full-text read, in its order."""
        return {r[0]: -r[1] for r in self._tuples(sql, params)}

    def _tuples(self, sql: str, params: Iterable[Any]) -> list[tuple[Any, ...]]:
        """The rows as plain tuples, not sqlite3.Row: for reads of hundreds or thousands."""
        cursor = self._x(sql, params)
        cursor.row_factory = None
        return cursor.fetchall()

    def _holds_few(self, fts: str, owner: str | None, term: str, last: int) -> bool:
        """Whether at most SEARCH_WINDOW of the rows searched hold ``term``: of ``owner``'s rows
        (a user who holds a minority of the table), else of every user's (an upper bound for
        the user), counted up to one past the window: a bounded read however common the
        word. (fts5vocab's count walked the word's whole doclist: 9 ms for a word in all of
        100k episodes.) ``last`` is the table's last rowid: a count is kept, and read again
        only when it could be wrong (see _known_few)."""
        known = self._known_few(fts, owner, term, last)
        if known is not None:
            return known
        row = self._x(
            f"SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT ?)",
            (owned(fts_query([term]), owner), SEARCH_WINDOW + 1),
        ).fetchone()
        self._keep(("few", fts, owner, term), row[0], last)
        return int(row[0]) <= SEARCH_WINDOW

    def _known_few(self, fts: str, owner: str | None, term: str, last: int) -> bool | None:
        """What a kept count says of ``term`` now, or None when it could be wrong: a word that
        n rows held when the last rowid was r is held by at most n + (last - r) now, rare
        while that stays within the window. A word past the window stays so (only deleted
        or archived rows could bring it back)."""
        kept = self._kept(("few", fts, owner, term))
        if kept is None:
            return None
        count, then, _ = kept
        if count > SEARCH_WINDOW:
            return False
        return True if count + max(0, last - then) <= SEARCH_WINDOW else None

    def index_tokens(self, kind: str, user: str, ids: Iterable[str]) -> dict[str, frozenset[str]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        fts, main = _FTS_TABLE[kind], _MAIN_TABLE[kind]
        rows = self._tuples(
            f"SELECT m.id, f.text FROM {main} m JOIN {fts} f ON f.rowid = m.pk WHERE m.id IN ({_in(ids)}) AND +m.user = ?",
            [*ids, user],
        )
        return {r[0]: frozenset(fts_tokens(r[1] or "")) for r in rows}

    def touch(self, kind: str, ids: Iterable[str], at: datetime, *, by: int = 1) -> None:
        ids = list(ids)
        if ids and kind in ("episode", "fact"):
            self._x(
                f"UPDATE {_MAIN_TABLE[kind]} SET uses = uses + ?, last_used_at = ?{_STRONGER[kind]} WHERE id IN ({_in(ids)})",
                [by, _ts(at), *([by] if _STRONGER[kind] else []), *ids],
            )

    # ------------------------------------------------------------ tags
    def _tag(self, row: sqlite3.Row) -> Tag:
        tag = Tag.model_validate_json(row["body"])
        tag.id, tag.status, tag.merged_to = row["id"], row["status"], row["merged_to"]
        return tag

    def get_tags(self, user: str, names: Iterable[str]) -> dict[str, Tag]:
        found: dict[str, Tag] = {}
        for chunk in _chunked(names):
            rows = self._x(f"SELECT * FROM tags WHERE user = ? AND name IN ({_in(chunk)})", [user, *chunk])
            found.update((r["name"], self._tag(r)) for r in rows)
        return found

    def tag_states(self, user: str, names: Iterable[str]) -> dict[str, TagState]:
        found: dict[str, TagState] = {}
        for chunk in _chunked(names):
            rows = self._x(f"SELECT name, status, merged_to FROM tags WHERE user = ? AND name IN ({_in(chunk)})",
                           [user, *chunk])
            found.update((r[0], TagState(r[1], r[2])) for r in rows)
        return found

    def list_tags(self, user: str, status: str | None = None) -> list[Tag]:
        sql, params = "SELECT * FROM tags WHERE user = ?", [user]
        if status:
            sql += " AND status = ?"
            params.append(status)
        return [self._tag(r) for r in self._x(sql + " ORDER BY name", params)]

    def count_tags(self, user: str, status: str | None = None) -> int:
        sql, params = "SELECT count(*) FROM tags WHERE user = ?", [user]
        if status:
            sql += " AND status = ?"
            params.append(status)
        return int(self._x(sql, params).fetchone()[0])

    def put_tag(self, tag: Tag) -> Tag:
        body = tag.model_dump_json(exclude={"id"})  # the id is the row's own
        self._x(
            "INSERT INTO tags (user, name, status, merged_to, body) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (user, name) DO UPDATE SET status = excluded.status, "
            "merged_to = excluded.merged_to, body = excluded.body",
            (tag.user, tag.name, tag.status, tag.merged_to, body),
        )
        return tag

    def set_items_tags(self, user: str, kind: str, items: Mapping[str, Mapping[str, float]]) -> None:
        with self.transaction():
            for chunk in _chunked(items):
                self._x(f"DELETE FROM item_tags WHERE user = ? AND kind = ? AND item_id IN ({_in(chunk)})",
                        [user, kind, *chunk])
            # seq is the row's rowid, given here: the largest before the rows, plus one each
            # (inside the write transaction no other writer can take one)
            last = self._x("SELECT coalesce(max(rowid), 0) FROM item_tags").fetchone()[0]
            rows = [(user, name, kind, item_id, weight) for item_id, tags in items.items() for name, weight in tags.items()]
            self._conn().executemany(
                "INSERT INTO item_tags (rowid, seq, user, tag, kind, item_id, weight) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(last + n, last + n, *row) for n, row in enumerate(rows, start=1)],
            )

    def postings(
        self, user: str, tag_names: Iterable[str], kinds: Iterable[str], *, per_tag: Mapping[str, int] | None = None
    ) -> list[Posting]:
        names, kinds = list(dict.fromkeys(tag_names)), list(kinds)
        if not names or not kinds:
            return []
        if per_tag is None:
            rows = self._x(
                f"SELECT kind, item_id, tag, weight FROM item_tags WHERE user = ? AND tag IN ({_in(names)}) "
                f"AND kind IN ({_in(kinds)}) ORDER BY rowid",
                [user, *names, *kinds],
            ).fetchall()
            return [Posting(r[0], r[1], r[2], r[3]) for r in rows]
        # each tag's newest postings from the (user, tag, seq, ...) index alone: a frequent tag
        # costs per_tag index entries; every tag in one statement, oldest first as written
        capped = [(name, per_tag.get(name, 0)) for name in names if per_tag.get(name, 0) > 0]
        if not capped:
            return []
        of_kinds = "" if set(ITEM_KINDS) <= set(kinds) else f" AND kind IN ({_in(kinds)})"
        one = f"SELECT * FROM (SELECT seq, kind, item_id, tag, weight FROM item_tags WHERE user = ? AND tag = ?{of_kinds} " \
              "ORDER BY seq DESC LIMIT ?)"
        params: list[Any] = []
        for name, cap in capped:
            params += [user, name, *(kinds if of_kinds else ()), cap]
        # oldest first: sorted here, not by SQLite (whose sorter took longer than the reads)
        found = self._tuples(f"SELECT seq, kind, item_id, tag, weight FROM ({' UNION ALL '.join([one] * len(capped))})",
                             params)
        found.sort(key=itemgetter(0))
        return [Posting(r[1], r[2], r[3], r[4]) for r in found]

    def tag_counts(self, user: str, names: Iterable[str] | None = None) -> dict[str, int]:
        # the sizes the triggers keep: one probe a tag, however many items carry it
        if names is None:
            rows = self._x("SELECT tag, n FROM tag_sizes WHERE user = ? AND n > 0", (user,))
            return {r[0]: r[1] for r in rows}
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        rows = self._x(
            f"SELECT tag, n FROM tag_sizes WHERE user = ? AND tag IN ({_in(names)}) AND n > 0", [user, *names],
        )
        return {r[0]: r[1] for r in rows}

    def put_relation(self, relation: TagRelation) -> None:
        with self.transaction():
            for a, b in ((relation.source, relation.target), (relation.target, relation.source)):
                self._x(
                    "INSERT INTO tag_relations (user, source, target, level) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (user, source, target) DO UPDATE SET level = excluded.level",
                    (relation.user, a, b, relation.level),
                )

    def relations(self, user: str, names: Iterable[str]) -> list[TagRelation]:
        names = list(dict.fromkeys(names))
        if not names:
            return []
        rows = self._x(
            f"SELECT source, target, level FROM tag_relations WHERE user = ? AND source IN ({_in(names)})",
            [user, *names],
        )
        return [TagRelation(user=user, source=r[0], target=r[1], level=r[2]) for r in rows]

    def relation_levels(self, user: str, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], str] = {}
        for chunk in _chunked(pairs, PARAMS_PER_STATEMENT // 2):  # two parameters a pair
            rows = self._x(  # a join on the key: a row-value IN would scan every relation of the user
                f"SELECT r.source, r.target, r.level FROM (VALUES {', '.join(['(?, ?)'] * len(chunk))}) AS w "
                "JOIN tag_relations r ON r.user = ? AND r.source = w.column1 AND r.target = w.column2",
                [*(name for pair in chunk for name in pair), user],
            )
            found.update(((r[0], r[1]), r[2]) for r in rows)
        return found

    def drop_unused_tags(self, user: str, names: Iterable[str]) -> list[str]:
        wanted = sorted(set(names))
        if not wanted:
            return []
        with self.transaction():
            unused = [r[0] for r in self._x(
                f"SELECT name FROM tags t WHERE user = ? AND name IN ({_in(wanted)}) "
                "AND NOT EXISTS (SELECT 1 FROM item_tags i WHERE i.user = t.user AND i.tag = t.name)", (user, *wanted))]
            if unused:
                marks = _in(unused)
                self._x(f"DELETE FROM tags WHERE user = ? AND name IN ({marks})", (user, *unused))
                self._x(f"DELETE FROM tag_sizes WHERE user = ? AND tag IN ({marks})", (user, *unused))
                self._x(f"DELETE FROM tag_relations WHERE user = ? AND (source IN ({marks}) OR target IN ({marks}))",
                        (user, *unused, *unused))
        return unused

    def retag(self, user: str, old: str, new: str) -> int:
        with self.transaction():
            moved = self._x(
                "INSERT OR IGNORE INTO item_tags (user, tag, kind, item_id, weight) "
                "SELECT user, ?, kind, item_id, weight FROM item_tags WHERE user = ? AND tag = ?",
                (new, user, old),
            ).rowcount
            self._x("DELETE FROM item_tags WHERE user = ? AND tag = ?", (user, old))
        return moved

    def unretag(self, user: str, old: str, new: str, moved: Sequence[tuple[str, str, float]],
                kept: Iterable[tuple[str, str]]) -> None:
        keep = set(kept)
        with self.transaction():
            conn = self._conn()
            conn.executemany("INSERT OR IGNORE INTO item_tags (user, tag, kind, item_id, weight) VALUES (?, ?, ?, ?, ?)",
                             [(user, old, kind, item, weight) for kind, item, weight in moved])
            conn.executemany("DELETE FROM item_tags WHERE user = ? AND tag = ? AND kind = ? AND item_id = ?",
                             [(user, new, kind, item) for kind, item, _ in moved if (kind, item) not in keep])

    # ------------------------------------------------------------ runs, keys, meta
    def put_dream_run(self, run: DreamRun) -> None:
        body = json.dumps(
            {
                "days": run.days,
                "finished_at": _ts(run.finished_at),
                "input_hash": run.input_hash,
                "report": run.report,
                "error": run.error,
                "owner": run.owner,
            },
            ensure_ascii=False,
        )
        self._x(
            "INSERT INTO dream_runs (id, user, status, started_at, body) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body",
            (run.id, run.user, run.status, _ts(run.started_at), body),
        )

    def _run(self, row: sqlite3.Row) -> DreamRun:
        body = json.loads(row["body"])
        return DreamRun(
            id=row["id"],
            user=row["user"],
            status=row["status"],
            days=body["days"],
            started_at=_dt_set(row["started_at"]),
            finished_at=_dt(body["finished_at"]),
            input_hash=body["input_hash"],
            report=body["report"],
            error=body["error"],
            owner=body.get("owner", ""),
        )

    def get_dream_run(self, run_id: str) -> DreamRun | None:
        row = self._x("SELECT * FROM dream_runs WHERE id = ?", (run_id,)).fetchone()
        return self._run(row) if row else None

    def dream_runs(self, user: str) -> list[DreamRun]:
        rows = self._x("SELECT * FROM dream_runs WHERE user = ? ORDER BY started_at DESC", (user,)).fetchall()
        return [self._run(row) for row in rows]

    def last_dream_run(self, user: str, status: str | None = None) -> DreamRun | None:
        sql, params = "SELECT * FROM dream_runs WHERE user = ?", [user]
        if status:
            sql += " AND status = ?"
            params.append(status)
        row = self._x(sql + " ORDER BY started_at DESC LIMIT 1", params).fetchone()
        return self._run(row) if row else None

    def put_api_key(self, key: ApiKey, key_hash: str) -> None:
        self._x(
            "INSERT INTO api_keys (id, key_hash, user, name, admin, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key.id, key_hash, key.user, key.name, int(key.admin), _ts(key.created_at), _ts(key.revoked_at)),
        )

    def _key(self, row: sqlite3.Row) -> ApiKey:
        return ApiKey(
            id=row["id"],
            user=row["user"],
            name=row["name"],
            admin=bool(row["admin"]),
            created_at=_dt_set(row["created_at"]),
            revoked_at=_dt(row["revoked_at"]),
        )

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        row = self._x("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        return self._key(row) if row else None

    def list_api_keys(self) -> list[ApiKey]:
        return [self._key(r) for r in self._x("SELECT * FROM api_keys ORDER BY created_at")]

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        cur = self._x("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (_ts(at), key_id))
        return cur.rowcount > 0

    def get_meta(self, key: str) -> str | None:
        row = self._x("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._x(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # ------------------------------------------------------------ documents (rows of meta)
    def put_document(self, user: str, name: str, text: str) -> None:
        self.set_meta(_doc_key(user, name), text)

    def get_document(self, user: str, name: str) -> str | None:
        return self.get_meta(_doc_key(user, name))

    def list_documents(self, user: str, prefix: str = "") -> list[str]:
        head = _doc_key(user, "")
        rows = self._x(
            "SELECT key FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key", (len(head + prefix), head + prefix)
        )
        return [str(r[0])[len(head):] for r in rows]


def _doc_key(user: str, name: str) -> str:
    return f"doc:{user}:{name}"
