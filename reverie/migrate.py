"""``reverie migrate --to postgresql://...``: a SQLite home copied into PostgreSQL, then checked.

Everything the home holds is copied: every user's episodes (learned or not, archived,
pending turns), facts, profile, notes, knowledge, tags with their postings (in the order
they were tagged) and relations, dream runs, input keys, undo journals, MEMORY.md
snapshots and capacity records; the install's API keys (their hashes, with the salt
they were made under, so every key keeps working) and settings; and the markdown
documents, MEMORY.md and the dream diaries, which were files and become rows. Ids and
the order of everything stay as they were, so recall ranks the same afterwards.

Each user is copied in one transaction. Then the copy is checked: the rows of every
kind counted on both sides, and each user's export (:func:`~reverie.portability.differing_parts`),
API keys, journals and documents compared. The target must be empty (a new database,
or a new ``?schema=``): a migration never merges into another memory. ``dry_run``
counts what would be copied and touches nothing.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from reverie.context import Context
from reverie.errors import InvalidInput, NotFound, StoreError
from reverie.files import UserFiles
from reverie.models import Tag
from reverie.portability import differing_parts
from reverie.store.base import USER_META_PREFIXES, ApiKey, Store, meta_user
from reverie.store.postgres import PostgresStore, is_postgres_url, migration_target_problem, redact_url
from reverie.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from reverie.store.sqlite import SQLiteStore

# what is counted per user, in the order reports show it
KINDS = (
    "episodes", "facts", "profile", "notes", "knowledge", "tags", "postings", "relations", "dream_runs",
    "input_keys", "journals", "user_meta", "documents",
)
COPY_CHUNK = 1000  # rows read from SQLite and written to PostgreSQL at a time
_DOC = "doc:"


@dataclass
class MigrateReport:
    source: str
    target: str
    dry_run: bool
    users: dict[str, dict[str, int]] = field(default_factory=dict)  # user -> kind -> rows
    api_keys: int = 0
    settings: int = 0  # install-wide meta rows (the API keys' salt...)
    verified: bool = False
    problems: list[str] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        out = {kind: sum(c.get(kind, 0) for c in self.users.values()) for kind in KINDS}
        return {**out, "api_keys": self.api_keys, "settings": self.settings}

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "target": self.target, "dry_run": self.dry_run, "verified": self.verified,
            "users": self.users, "totals": self.totals(), "problems": self.problems,
        }


def count_home(home: Path, to: str, *, db: Path | None = None) -> MigrateReport:
    """A dry run of :func:`migrate_home`: what the SQLite home at ``home`` would copy into
    ``to`` and what would stop the copy, with nothing written anywhere. The home is read as
    it is: no Memory is opened on it, so an older schema is not upgraded (a reverie that
    wrote it can still open it, as a rollback needs); it is counted from an upgraded copy."""
    if not is_postgres_url(to):
        raise InvalidInput("--to must be a postgresql:// URL", field="to")
    db = Path(db or Path(home) / "reverie.db")
    if not db.is_file():
        raise NotFound(f"no SQLite store at {db} to migrate")
    report = MigrateReport(source=str(db), target=redact_url(to), dry_run=True)
    with tempfile.TemporaryDirectory(prefix="reverie-migrate-") as scratch:
        read = db
        if _schema_version(db) < len(SQLITE_MIGRATIONS):
            read = Path(scratch) / "reverie.db"
            with closing(_read_only(db)) as src, closing(sqlite3.connect(read)) as dst:
                src.backup(dst)
            SQLiteStore(read).close()  # the copy upgraded, to be read as this reverie reads
        source = _Source(None, read, home=Path(home))  # type: ignore[arg-type]
        try:
            users = source.users()
            report.users = {user: source.counts(user) for user in users}
            report.api_keys = int(source.q("SELECT count(*) FROM api_keys")[0][0])
            report.settings = len(source.install_meta())
        finally:
            source.close()
    problem = migration_target_problem(to)
    if problem:
        report.problems.append(problem)
    return report


def _read_only(db: Path) -> sqlite3.Connection:
    """A connection that reads the SQLite file ``db`` and writes nothing beside it: a store
    no process has open (no write-ahead log beside it) is read as an immutable file, where a
    read-only connection made the log and shared-memory files next to it, and left them."""
    closed = not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    return sqlite3.connect(Path(db).resolve().as_uri() + ("?immutable=1" if closed else "?mode=ro"), uri=True)


def _schema_version(db: Path) -> int:
    """The schema version of the SQLite file ``db``, read without writing (0: none yet)."""
    with closing(_read_only(db)) as conn:
        try:
            return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
        except (sqlite3.Error, TypeError) as exc:
            if "no such table" in str(exc) or isinstance(exc, TypeError):
                return 0
            raise StoreError(f"cannot read the store at {db}: {exc}") from exc


class _Source:
    """The SQLite home, read as it is stored (rows in the order they were written)."""

    def __init__(self, ctx: Context, db: Path, home: Path | None = None):
        """``ctx``: the open memory of the home (a copy needs it); None for counting alone,
        ``home`` then the folder whose files are read."""
        self.ctx, self.store = ctx, ctx.store if ctx is not None else None
        self.home = Path(ctx.files.home) if ctx is not None else Path(home or db.parent)
        self.db = _read_only(db)

    def close(self) -> None:
        self.db.close()

    def q(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def each(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` one at a time, as they are read (a user's postings may be millions)."""
        yield from self.db.execute(sql, params)

    def users(self) -> list[str]:
        found = {u for (u,) in self.q(
            "SELECT user FROM episodes UNION SELECT user FROM facts UNION SELECT user FROM profile "
            "UNION SELECT user FROM notes UNION SELECT user FROM knowledge UNION SELECT user FROM tags "
            "UNION SELECT user FROM dream_runs UNION SELECT user FROM api_keys UNION SELECT user FROM input_keys"
        )}
        for key, value in self.q("SELECT key, value FROM meta"):
            user = _meta_user(key, value)
            if user:
                found.add(user)
        users_dir = self.home / "users"
        if users_dir.is_dir():
            found |= {p.name for p in users_dir.iterdir() if p.is_dir() and self.documents(p.name)}
        return sorted(found)

    def documents(self, user: str) -> dict[str, str]:
        """MEMORY.md and the dream diaries (files, in SQLite mode), by their names in a store."""
        files = UserFiles(self.home)
        try:
            folder = files.user_dir(user)
        except InvalidInput:
            return {}
        out: dict[str, str] = {}
        for path in [folder / "MEMORY.md", *sorted((folder / "memory" / "dreams").glob("*.md"))]:
            if path.is_file() and not path.is_symlink():
                out[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
        prefix = f"{_DOC}{user}:"
        for key, value in self.q("SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)):
            out.setdefault(key[len(prefix):], value)
        return out

    def counts(self, user: str) -> dict[str, int]:
        def one(sql: str) -> int:
            return int(self.q(sql, (user,))[0][0])

        meta = self.q("SELECT key, value FROM meta")
        return {
            "episodes": one("SELECT count(*) FROM episodes WHERE user = ?"),
            "facts": one("SELECT count(*) FROM facts WHERE user = ?"),
            "profile": one("SELECT count(*) FROM profile WHERE user = ?"),
            "notes": one("SELECT count(*) FROM notes WHERE user = ?"),
            "knowledge": one("SELECT count(*) FROM knowledge WHERE user = ?"),
            "tags": one("SELECT count(*) FROM tags WHERE user = ?"),
            "postings": one("SELECT count(*) FROM item_tags WHERE user = ?"),
            "relations": one("SELECT count(*) FROM tag_relations WHERE user = ?"),
            "dream_runs": one("SELECT count(*) FROM dream_runs WHERE user = ?"),
            "input_keys": one("SELECT count(*) FROM input_keys WHERE user = ?"),
            "journals": sum(1 for k, v in meta if k.startswith("journal:") and _meta_user(k, v) == user),
            "user_meta": sum(1 for k, v in meta if k.startswith(USER_META_PREFIXES) and _meta_user(k, v) == user),
            "documents": len(self.documents(user)),
        }

    def install_meta(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.q("SELECT key, value FROM meta ORDER BY key")
                if not k.startswith(("journal:", _DOC, *USER_META_PREFIXES))]


def _meta_user(key: str, value: str) -> str | None:
    if key.startswith("journal:"):
        try:
            return str(json.loads(value)["user"])
        except (ValueError, KeyError, TypeError):
            return None
    owner = meta_user(key)
    if owner is not None:
        return owner
    if key.startswith(_DOC):
        return key[len(_DOC):].split(":", 1)[0]
    return None


def migrate_home(
    ctx: Context, to: str, *, dry_run: bool = False, compare_exports: bool = True,
    on_progress: Callable[[str], None] | None = None,
) -> MigrateReport:
    """Copy the SQLite home of ``ctx`` into the PostgreSQL database ``to`` and check the copy:
    the rows of every kind counted on both sides and, unless ``compare_exports`` is False (a
    benchmark's copy of a million synthetic episodes), every user's export compared.
    ``on_progress(step)`` is told each step as it begins ("copying ana (1 of 3)")."""
    said = on_progress or (lambda step: None)
    if not is_postgres_url(to):
        raise InvalidInput("--to must be a postgresql:// URL", field="to")
    if ctx.store.shared:
        raise InvalidInput("migrate copies a SQLite home; this memory is already in PostgreSQL", field="store")
    db = Path(getattr(ctx.store, "path", Path(ctx.files.home) / "reverie.db"))
    if not db.is_file():
        raise NotFound(f"no SQLite store at {db} to migrate")
    if dry_run:  # what the copy would refuse, said now (nothing is written to check it)
        return count_home(Path(ctx.files.home), to, db=db)
    source = _Source(ctx, db)
    report = MigrateReport(source=str(db), target=redact_url(to), dry_run=dry_run)
    try:
        users = source.users()
        report.users = {user: source.counts(user) for user in users}
        report.api_keys = int(source.q("SELECT count(*) FROM api_keys")[0][0])
        report.settings = len(source.install_meta())
        target = PostgresStore(to)
        try:
            filled = target.filled_tables()  # any row of any table: a migration never merges two memories
            if filled:
                raise StoreError(
                    f"{report.target} already holds a memory (rows in {', '.join(filled)}); nothing was copied: "
                    "migrate into an empty database, or name a new schema with ?schema=NAME"
                )
            for key, value in source.install_meta():
                target.set_meta(key, value)
            _copy_keys(source, target)
            for n, user in enumerate(users, 1):
                said(f"copying {user} ({n} of {len(users)})")
                with target.transaction():
                    _copy_user(source, target, user)
            _verify(source, target, users, report, compare_exports=compare_exports, said=said)
        finally:
            target.close()
    finally:
        source.close()
    return report


def _copy_keys(source: _Source, target: Store) -> None:
    for key_id, key_hash, user, name, admin, created, revoked in source.q(
        "SELECT id, key_hash, user, name, admin, created_at, revoked_at FROM api_keys ORDER BY rowid"
    ):
        target.put_api_key(
            ApiKey(id=key_id, user=user, name=name, admin=bool(admin), created_at=_time(created),
                   revoked_at=_time(revoked) if revoked else None),
            key_hash,
        )


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _ids(source: _Source, table: str, user: str) -> list[str]:
    return [r[0] for r in source.q(f"SELECT id FROM {table} WHERE user = ? ORDER BY pk", (user,))]


def _copy_rows(
    source: _Source, target: PostgresStore, kind: str, table: str, user: str,
    read: Callable[[list[str]], Mapping[str, Any]],
) -> None:
    """Every row of ``user`` in ``table``, in the source's order, 1,000 at a time."""
    ids = _ids(source, table, user)
    for start in range(0, len(ids), COPY_CHUNK):
        chunk = ids[start:start + COPY_CHUNK]
        found = read(chunk)
        target.load_items(kind, [found[item_id] for item_id in chunk])


def _copy_user(source: _Source, target: PostgresStore, user: str) -> None:
    store = source.store
    _copy_rows(source, target, "episode", "episodes", user, store.get_episodes)
    _copy_rows(source, target, "fact", "facts", user, store.get_facts)
    for section, summary, updated in source.q(
        "SELECT section, summary, updated_at FROM profile WHERE user = ? ORDER BY rowid", (user,)
    ):
        target.put_profile_section(user, section, summary, _time(updated))
    _copy_rows(source, target, "note", "notes", user, store.get_notes)
    _copy_rows(source, target, "knowledge", "knowledge", user, store.get_knowledge)
    tags = []
    for (body, status, merged_to, name) in source.q(
        "SELECT body, status, merged_to, name FROM tags WHERE user = ? ORDER BY id", (user,)
    ):
        tag = Tag.model_validate_json(body)
        tag.status, tag.merged_to, tag.name = status, merged_to, name
        tags.append(tag)
    target.load_tags(tags)
    target.load_postings(user, source.each(
        "SELECT tag, kind, item_id, weight FROM item_tags WHERE user = ? ORDER BY rowid", (user,)
    ))
    target.load_relations(user, source.each(
        "SELECT source, target, level FROM tag_relations WHERE user = ? ORDER BY rowid", (user,)
    ))
    for (run_id,) in source.q("SELECT id FROM dream_runs WHERE user = ? ORDER BY rowid", (user,)):
        run = store.get_dream_run(run_id)
        if run is not None:
            target.put_dream_run(run)
    target.load_inputs(user, source.each(
        "SELECT thread, key, episode_id FROM input_keys WHERE user = ? ORDER BY thread, key", (user,)
    ))
    for key, value in source.q("SELECT key, value FROM meta ORDER BY key"):
        if _meta_user(key, value) == user and not key.startswith(_DOC):
            target.set_meta(key, value)
    for name, text in source.documents(user).items():
        target.put_document(user, name, text)


def _verify(
    source: _Source, target: PostgresStore, users: list[str], report: MigrateReport, *, compare_exports: bool = True,
    said: Callable[[str], None] = lambda step: None,
) -> None:
    """Counts of every kind, and each user's export, keys, journals and documents, compared."""
    said("counting the rows of the copy")
    problems = report.problems
    copied = target.row_counts()
    for user in users:
        for kind, count in report.users[user].items():
            if copied.get(user, {}).get(kind, 0) != count:
                problems.append(f"{user}: {count} {kind} in the home, {copied.get(user, {}).get(kind, 0)} copied")
    before = source.store.list_api_keys()
    after = target.list_api_keys()
    if [(k.id, k.user, k.admin, k.revoked_at) for k in before] != [(k.id, k.user, k.admin, k.revoked_at) for k in after]:
        problems.append("the API keys differ")
    for key in before:
        found = source.q("SELECT key_hash FROM api_keys WHERE id = ?", (key.id,))[0][0]
        copy = target.find_api_key(found)
        if copy is None or copy.id != key.id:
            problems.append(f"API key {key.id} does not verify in the copy")
    target_ctx = Context.build(target, source.ctx.settings, UserFiles(source.ctx.files.home, store=target))
    for n, user in enumerate(users if compare_exports else [], 1):
        said(f"checking {user}'s export ({n} of {len(users)})")
        differing = differing_parts(source.ctx, target_ctx, user)
        if differing:
            problems.append(f"{user}: the export differs in {', '.join(differing)}")
        if source.store.list_journals(user, 1_000_000) != target.list_journals(user, 1_000_000):
            problems.append(f"{user}: the undo journals differ")
        for name, text in source.documents(user).items():
            if target.get_document(user, name) != text:
                problems.append(f"{user}: the document {name} differs")
    report.verified = not problems
    if problems:
        raise StoreError("the copy does not match the home: " + "; ".join(problems[:5]))
