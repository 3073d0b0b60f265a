"""The undo journal: every automatic change keeps enough history to be taken back.

An operation (a dream, consolidate, tidy, sync, clean, or the learning line's
capacity eviction) watches the items it may touch before it changes them;
``commit`` records the ones that really changed, and ``reverie undo ID`` puts
them back, unless a later operation (not undone) touched the same items: undoing
the earlier one first would silently discard the later one's work.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator, Literal, TypeVar

from pydantic import Field, PrivateAttr

from reverie.models import Episode, Fact, Model, ProfileSection, Tag, new_id, utcnow
from reverie.store.base import Store

_T = TypeVar("_T")

# the store's record of what reverie last wrote to a user's MEMORY.md (its fact ids under "facts")
SNAPSHOT = "memory_md:{user}"
JOURNAL_PAGE = 100  # journals read at a time, newest first


def journal_key(journal_id: str) -> str:
    return f"journal:{journal_id}"


ChangeKind = Literal["fact", "episode", "profile", "tag", "merge"]


class Change(Model):
    # a profile change's id is the section name, a tag's its name; a merge's the merged tag's,
    # its ``before`` the tag it went into ("into"), its status, and the postings it moved
    # ("moved": [kind, item id, weight]) but for those the tag it went into had already ("kept")
    kind: ChangeKind
    id: str
    # None: the operation created it, or (a fact) it was deleted for good since, its state with it
    before: dict[str, Any] | None = None


class Journal(Model):
    """The undo record of one automatic operation: every item it changed, as it was before.

    Watch the items an operation may touch (as read from the store) before it
    changes them; ``commit`` keeps only those that really changed.
    """

    id: str = Field(default_factory=lambda: new_id("chg"))
    user: str
    action: str
    at: datetime = Field(default_factory=utcnow)
    changes: list[Change] = Field(default_factory=list)
    # the facts MEMORY.md listed before the operation (None: there was no MEMORY.md)
    memory_md_before: list[str] | None = None
    # the day of the last dream MEMORY.md said before the operation (None: not recorded, an
    # older journal): an undo of a dream says the dream before it again
    memory_md_dreamed_at: str | None = None
    undone_at: datetime | None = None
    # the lines this operation put on the record of lines a person deleted (memory_md's
    # "withdrawn:"), each {"fact": the fact whose line it was, "key", "at": as written, "before":
    # the record's entry for that key before, or None}, or took off it (a restore: "removed":
    # True, "before" the entry taken off): undo puts the record back as it was
    withdrawn: list[dict[str, Any]] = Field(default_factory=list)
    _before: dict[tuple[ChangeKind, str], dict[str, Any]] = PrivateAttr(default_factory=dict)
    _created: list[str] = PrivateAttr(default_factory=list)
    _merges: list[Change] = PrivateAttr(default_factory=list)

    def watch(self, items: Iterable[Fact | Episode]) -> None:
        for item in items:
            kind: ChangeKind = "episode" if isinstance(item, Episode) else "fact"
            self._before.setdefault((kind, item.id), item.model_dump(mode="json"))

    def watch_profile(self, store: Store) -> None:
        for name, section in store.get_profile(self.user).sections().items():
            self._before.setdefault(("profile", name), _section_state(section))

    def watch_tags(self, tags: Iterable[Tag]) -> None:
        for tag in tags:
            self._before.setdefault(("tag", tag.name), {"status": tag.status})

    def created(self, fact: Fact) -> None:
        self._created.append(fact.id)

    def merged(self, source: Tag, target: str, moved: list[tuple[str, str, float]], kept: list[tuple[str, str]]) -> None:
        """``source`` (as it was) is about to be merged into ``target``: its postings move."""
        self._merges.append(Change(kind="merge", id=source.name, before={
            "into": target, "status": source.status, "moved": [list(m) for m in moved], "kept": [list(k) for k in kept],
        }))

    def commit(self, store: Store) -> "Journal":
        """Record what changed (inside the caller's transaction); nothing changed, nothing saved."""
        ids = {kind: [i for k, i in self._before if k == kind] for kind in ("fact", "episode")}
        now: dict[tuple[ChangeKind, str], dict[str, Any]] = {
            ("fact", i): f.model_dump(mode="json") for i, f in store.get_facts(ids["fact"]).items()
        } | {("episode", i): e.model_dump(mode="json") for i, e in store.get_episodes(ids["episode"]).items()}
        tag_names = [i for k, i in self._before if k == "tag"]
        if tag_names:
            now |= {("tag", n): {"status": t.status} for n, t in store.get_tags(self.user, tag_names).items()}
        if any(kind == "profile" for kind, _ in self._before):
            now |= {("profile", n): _section_state(s) for n, s in store.get_profile(self.user).sections().items()}
        created = set(self._created)
        self.changes = [
            Change(kind=key[0], id=key[1], before=before)
            for key, before in self._before.items()
            if key in now and now[key] != before and key[1] not in created
        ]
        self.changes += [Change(kind="fact", id=i) for i in dict.fromkeys(self._created)]
        self.changes += self._merges
        snapshot = store.get_meta(SNAPSHOT.format(user=self.user))
        self.memory_md_before = list(json.loads(snapshot)["facts"]) if snapshot else None
        self.memory_md_dreamed_at = str(json.loads(snapshot).get("dreamed_at", "")) if snapshot else None
        if self.changes:
            store.set_meta(journal_key(self.id), self.model_dump_json())
        _RECORDED.set(self.id if self.changes else None)
        return self

    def touched(self) -> set[tuple[str, str]]:
        """The items this operation wrote, as (kind, id): a merge wrote both tags and the items
        whose postings it moved (undoing it moves them back)."""
        items: set[tuple[str, str]] = set()
        for change in self.changes:
            if change.kind != "merge":
                items.add((change.kind, change.id))
                continue
            before = change.before or {}
            items |= {("tag", change.id), ("tag", str(before.get("into", "")))}
            items |= {(str(p[0]), str(p[1])) for p in [*before.get("moved", []), *before.get("kept", [])]}
        return items

    def overlapped(self, store: Store) -> list[str]:
        """The ids of the operations journaled after this one, and not undone, that touched an
        item it changed, newest first: undoing this one first would silently discard theirs.
        Reads only the journals newer than this one."""
        mine = self.touched()
        later = []
        for raw in stored_journals(store, self.user):
            other = Journal.model_validate_json(raw)
            if other.id == self.id or other.at < self.at:
                break
            if other.undone_at is None and mine & other.touched():
                later.append(other.id)
        return later

    def forget_fact(self, fact_id: str) -> bool:
        """Take a fact deleted for good out of this record: its earlier state (its text) and the
        postings a merge moved; True if anything was taken out. Undo then finds it gone and skips it."""
        changed = False
        for entry in self.withdrawn:
            earlier = entry.get("before")
            if entry.get("fact") == fact_id and earlier and earlier.get("content"):
                earlier["content"], changed = "", True
        for change in self.changes:
            if change.kind == "fact" and change.id == fact_id and change.before is not None:
                change.before, changed = None, True
            elif change.kind == "merge" and change.before:
                for key in ("moved", "kept"):
                    postings = change.before.get(key, [])
                    left = [p for p in postings if (p[0], p[1]) != ("fact", fact_id)]
                    if len(left) != len(postings):
                        change.before[key], changed = left, True
        return changed

    @classmethod
    def erase_fact(cls, store: Store, user: str, fact_id: str) -> None:
        """A fact deleted for good leaves every journal of its user too (inside the caller's
        transaction): its text must not linger in an undo record, and no undo brings it back."""
        for raw in stored_journals(store, user):
            if fact_id not in raw:  # most journals never held it: not worth parsing
                continue
            journal = cls.model_validate_json(raw)
            if journal.forget_fact(fact_id):
                store.set_meta(journal_key(journal.id), journal.model_dump_json())


def stored_journals(store: Store, user: str) -> Iterator[str]:
    """The user's journals (as stored JSON), newest first, a page at a time: stop early to
    read fewer."""
    after: str | None = None
    while True:
        page = store.page_journals(user, after=after, limit=JOURNAL_PAGE)
        yield from page.items
        if page.next is None:
            return
        after = page.next


# the change the last journaled write of this context recorded, if it recorded one: what an
# Undo button offered right after that write takes back (not the user's newest change, which
# another client may have made meanwhile, nor an older one when this write changed nothing)
_RECORDED: ContextVar[str | None] = ContextVar("reverie_journal_recorded", default=None)


def recorded(write: Callable[[], _T]) -> tuple[_T, str | None]:
    """``write()``'s result and the id of the change it journaled (None: it changed nothing)."""
    _RECORDED.set(None)
    result = write()
    return result, _RECORDED.get()


def _section_state(section: ProfileSection) -> dict[str, Any]:
    return {"summary": section.summary, "updated_at": section.updated_at.isoformat() if section.updated_at else None}
