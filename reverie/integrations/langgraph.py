"""LangGraph: reverie as a graph's long-term memory store (``pip install 'reverie[langgraph]'``).

    from reverie import Memory
    from reverie.integrations.langgraph import ReverieStore, memory_block

    store = ReverieStore(Memory("./mem"))
    app = graph.compile(store=store)                   # nodes get it as `store` (or runtime.store)
    store.put(("memories", "ana"), "diet", {"content": "Ana is vegetarian", "category": "constraint"})
    store.search(("memories", "ana"), query="what can I cook for ana?")   # reverie's recall, scored
    block = memory_block(store, "ana", "what can I cook tonight?")        # the <memory> block

**Namespaces.** ``("memories", user)`` is a user's memory; ``("memories", user, agent)`` the
part of it that belongs to one agent (reverie's ``Fact.agent``). Nothing else is a
namespace: any other shape, an invalid user id, or an agent label holding sensitive data
is an ``InvalidNamespaceError`` that names the accepted shapes. A search names a user
(``("memories", user)`` or deeper), so one user's namespace never sees another's. The
first label is ``"memories"`` unless ``ReverieStore(memory, root=...)`` says otherwise.
Threads belong to conversations (see ``memory_block(thread=...)`` and the chat-history
adapters), not to stored items.

**Items are facts.** ``put(namespace, key, value)`` stores the value as one fact of the user
(consolidated at once, as with :meth:`Memory.remember`, never evicted by capacity); its
text is ``value["content"]`` (or ``"text"``, ``"memory"``, ``"data"``), else the value's
fields written out (``food: pizza; drink: tea``); a ``category`` and ``tags`` (a list of words)
in the value become the fact's (one they cannot be, a tag too generic to match, is refused,
named). A text in the value is at most 1,000,000 characters, as everywhere in reverie. The
value dict itself is kept with the fact (``Fact.meta``) and ``get`` returns it as put, every
string redacted like everything reverie stores; if the fact's text
is edited elsewhere (MEMORY.md, ``update_fact``) the text field follows (a value with no text
field gets its fields back from the edited line, or the line as ``content`` when it no longer
reads as the fields). A put under a key
that is stored already replaces it. ``delete`` forgets the fact (archived, reversible
with ``Memory.update_fact(id, status="consolidated")``). Facts reverie learned from
conversation are items too, under their fact id as key: ``get``, ``put`` and ``delete``
address them like any other. Reverie curates what it learned (a duplicate folded by
``consolidate`` or a dream, an older value superseded: such a fact leaves the store), but an
item put under a key stays until it is put again or deleted: no dream, ``consolidate``,
``tidy``, learning or other fact's new value archives it (a learned duplicate folds into it).

**Search.** With a ``query``, ``search`` runs reverie's recall and returns what it delivers,
best first, with recall's score: facts as their items, and what reverie recalls besides
facts (episodes, notes, knowledge) as read-only items of the user's namespace, key the
reverie id and value ``{"content": line, "kind": kind}``. The profile's lines are left out:
recall delivers them first whatever the query, and they would take the places of what it
found (``memory_block`` has them, and ``Memory.profile``). Without a query it lists
the namespace's facts, oldest first. ``filter`` (exact values, ``$eq $ne $gt $gte $lt $lte``,
a nested value's fields as a dict of them, as LangGraph's own stores read it),
``limit`` and ``offset`` apply to the values either way; with a query, what recall found comes
first, and a page past it (or a filter it leaves short) goes on with the namespace's other
facts, oldest first, scored 0. Items live in their own namespace
and those under it: ``("memories", "ana")`` finds ana's agents' facts too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import anyio.to_thread
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from reverie.aio import AsyncMemory
from reverie.errors import InvalidInput
from reverie.inputs import (
    LABEL_MAX,
    check_category,
    check_json,
    check_tags,
    check_text_lengths,
    check_unicode,
    check_user,
    clean_fact,
)
from reverie.memory import Memory
from reverie.models import Fact, Provenance, digest, utcnow
from reverie.recall import RecallItem
from reverie.redact import find_sensitive, redact, redact_obj
from reverie.tags import TagWriter, usable_tags

# the value fields that hold a memory's text, first found wins
TEXT_FIELDS = ("content", "text", "memory", "data")
_COMPARE = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


class ReverieStore(BaseStore):
    """A LangGraph ``BaseStore`` over one reverie home: facts by key, search by recall."""

    def __init__(self, memory: Memory | AsyncMemory, *, root: str = "memories", budget: int | None = None):
        """``budget``: the tokens a query's recall may deliver (default: the home's budget)."""
        if not isinstance(root, str) or not root or "." in root or root == "langgraph":
            raise InvalidInput("root must be a namespace label: text without '.', not 'langgraph'", field="root")
        self.memory = memory.memory if isinstance(memory, AsyncMemory) else memory
        self.root = root
        self.budget = budget

    # ------------------------------------------------------------ the BaseStore contract
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)  # read in the caller's thread: a generator may belong to the event loop
        return await anyio.to_thread.run_sync(self.batch, ops)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"ReverieStore cannot run {type(op).__name__}")

    # ------------------------------------------------------------ namespaces
    def _scope(self, namespace: tuple[str, ...], *, search: bool = False) -> tuple[str, str | None]:
        """(user, agent) of ``("memories", user)`` or ``("memories", user, agent)``."""
        shapes = f"({self.root!r}, user) or ({self.root!r}, user, agent)"
        namespace = tuple(namespace)
        if not 2 <= len(namespace) <= 3 or namespace[0] != self.root:
            need = "a search names a user: " if search and namespace[:1] in ((), (self.root,)) else ""
            raise InvalidNamespaceError(f"{need}ReverieStore namespaces are {shapes}; got {namespace!r}")
        try:
            user = check_user(namespace[1])
        except InvalidInput as exc:
            raise InvalidNamespaceError(f"{namespace!r}: {exc}") from exc
        if user != namespace[1]:
            raise InvalidNamespaceError(f"{namespace!r}: the user label has blanks around it")
        agent = namespace[2] if len(namespace) == 3 else None
        if agent is not None:
            if not isinstance(agent, str) or not agent.strip() or agent != agent.strip() or "." in agent:
                raise InvalidNamespaceError(f"{namespace!r}: the agent label must be a name without blanks around it or '.'")
            _no_secrets(agent, "the agent label", namespace_error=True)
        return user, agent

    def _namespace(self, user: str, agent: str | None) -> tuple[str, ...]:
        return (self.root, user, agent) if agent else (self.root, user)

    # ------------------------------------------------------------ get / put / delete
    def _get(self, op: GetOp) -> Item | None:
        user, agent = self._scope(op.namespace)
        fact = self._fact(user, agent, _check_key(op.key))
        if fact is None:
            return None
        item = self._item(fact)
        return Item(value=item.value, key=op.key, namespace=item.namespace, created_at=item.created_at,
                    updated_at=item.updated_at)

    def _fact(self, user: str, agent: str | None, key: str) -> Fact | None:
        """The live fact a key names: one put under it, or a fact whose id it is."""
        ids = list(dict.fromkeys([_fact_id(user, agent, key), key]))
        found = self.memory.store.get_facts(ids)
        for fact_id in ids:
            fact = found.get(fact_id)
            if fact is not None and fact.user == user and fact.agent == agent and fact.status != "archived":
                return fact
        return None

    def _put(self, op: PutOp) -> None:
        user, agent = self._scope(op.namespace)
        key = _check_key(op.key)
        if op.ttl is not None:
            raise NotImplementedError("ReverieStore keeps memories until they are deleted: pass no ttl")
        if op.value is None:
            fact = self._fact(user, agent, key)
            if fact is not None:
                self.memory.forget(fact.id, user=user)
            return
        value = _check_value(op.value, self.memory.settings.max_import_depth)
        text, field = _memory_text(value)
        ctx = self.memory.ctx
        content = clean_fact(text, f"value.{field}" if field else "value", ctx.settings.max_fact_chars)
        # a category or tags the fact cannot take are refused, named, not dropped without a word
        category, original = check_category(value.get("category"))
        tags = usable_tags(check_tags(value.get("tags")))
        store = ctx.store
        now = utcnow()
        with store.transaction():
            fact = self._fact(user, agent, key)
            if fact is None:
                # a new key, or one whose fact was deleted (archived): that fact comes back, as
                # a new item (made now, as LangGraph's own stores make it)
                fact = store.get_fact(_fact_id(user, agent, key)) or Fact(
                    id=_fact_id(user, agent, key), user=user, agent=agent, content=content,
                    provenance=Provenance(origin="manual"), created_at=now,
                )
                fact.created_at = now
            fact.content, fact.category, fact.original_category = content, category, original
            fact.confidence, fact.status, fact.archived_reason, fact.updated_at = 1.0, "consolidated", "", now
            fact.superseded_by, fact.tags = None, []  # a put replaces: the old tags go with the old value
            fact.meta = {**fact.meta, "langgraph": {"key": key, "value": value, "text": content, "field": field}}
            ctx.facts.index_fact(fact, tags, writer=TagWriter(store, user))

    # ------------------------------------------------------------ search and listing
    def _search(self, op: SearchOp) -> list[SearchItem]:
        user, agent = self._scope(op.namespace_prefix, search=True)
        if not isinstance(op.limit, int) or isinstance(op.limit, bool) or op.limit < 0:
            raise InvalidInput("limit must be a whole number >= 0", field="limit")
        if not isinstance(op.offset, int) or isinstance(op.offset, bool) or op.offset < 0:
            raise InvalidInput("offset must be a whole number >= 0", field="offset")
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise InvalidInput("filter must be a dict of value fields", field="filter")
        if op.query is not None and (not isinstance(op.query, str) or not op.query.strip()):
            raise InvalidInput("query must be text (or None to list the namespace)", field="query")
        found = self._recalled(user, agent, op.query) if op.query else self._listed(user, agent)
        kept = [item for item in found if _matches(item.value, op.filter or {})]
        if op.query and len(kept) < op.offset + op.limit:
            # recall delivers what its budget holds: a page past it, or a filter, sees the rest of
            # the namespace's facts too, after what recall found, scored 0 (matched nothing)
            seen = {item.key for item in found}
            kept += [item for item in self._listed(user, agent, score=0.0)
                     if item.key not in seen and _matches(item.value, op.filter or {})]
        return kept[op.offset: op.offset + op.limit]

    def _listed(self, user: str, agent: str | None, score: float | None = None) -> list[SearchItem]:
        facts = self.memory.store.list_facts(user, agent=agent)
        return [self._item(f, score) for f in facts if agent is None or f.agent == agent]

    def _recalled(self, user: str, agent: str | None, query: str) -> list[SearchItem]:
        result = self.memory.recall(query, user=user, agent=agent, budget=self.budget, track=False)
        # an item scored 0 matched nothing; the profile's lines lead every recall at 1.0
        # whatever the query (as the MCP search tool, they are left out)
        lines = [line for line in result.items if line.score > 0 and line.kind != "profile"]
        facts = self.memory.store.get_facts(line.id for line in lines if line.kind == "fact")
        times = self._times(user, [line for line in lines if line.kind != "fact"]) if agent is None else {}
        out: list[SearchItem] = []
        for line in lines:
            if line.kind == "fact":
                fact = facts.get(line.id)
                if fact is not None and fact.user == user and (agent is None or fact.agent == agent):
                    out.append(self._item(fact, score=line.score))
            elif (line.kind, line.id) in times:  # episodes, notes, knowledge: the user's namespace
                created, updated = times[(line.kind, line.id)]
                out.append(SearchItem(self._namespace(user, None), line.id, {"content": line.text, "kind": line.kind},
                                      created, updated, score=line.score))
        return out

    def _times(self, user: str, lines: list[RecallItem]) -> dict[tuple[str, str], tuple[datetime, datetime]]:
        """When each recalled item that is not a fact was made and last changed."""
        store = self.memory.store
        ids = {kind: [line.id for line in lines if line.kind == kind] for kind in ("episode", "note", "knowledge")}
        times: dict[tuple[str, str], tuple[datetime, datetime]] = {}
        for ep in store.get_episodes(ids["episode"]).values():
            times[("episode", ep.id)] = (ep.created_at, ep.completed_at or ep.created_at)
        for note in store.get_notes(ids["note"]).values():
            times[("note", note.id)] = (note.created_at, note.created_at)
        for doc in store.get_knowledge(ids["knowledge"]).values():
            times[("knowledge", doc.id)] = (doc.created_at, doc.updated_at)
        return times

    def _item(self, fact: Fact, score: float | None = None) -> SearchItem:
        kept = fact.meta.get("langgraph")
        if isinstance(kept, dict) and isinstance(kept.get("value"), dict):
            key, value = str(kept.get("key") or fact.id), dict(kept["value"])
            field = kept.get("field")
            if fact.content != kept.get("text"):  # edited elsewhere (MEMORY.md, update_fact, tidy)
                if isinstance(field, str):
                    value[field] = fact.content
                else:
                    value = _fields_edited(fact.content, value)
        else:
            key, value = fact.id, {"content": fact.content, "category": fact.category, "tags": list(fact.tags)}
        return SearchItem(self._namespace(fact.user, fact.agent), key, value, fact.created_at, fact.updated_at,
                          score=score)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        if len(prefix) >= 1 and prefix[0] not in ("*", self.root):
            return []
        if len(prefix) >= 2 and prefix[1] != "*":
            users = [prefix[1]] if prefix[1] in self.memory.users() else []
        else:
            users = self.memory.users()
        found: set[tuple[str, ...]] = set()
        for user in users:
            found.add((self.root, user))
            if op.max_depth is None or op.max_depth > 2:
                found.update((self.root, user, f.agent) for f in self.memory.store.list_facts(user) if f.agent)
        matching = {ns for ns in found if all(_condition(ns, c) for c in conditions)}
        if op.max_depth is not None:
            matching = {ns[: op.max_depth] for ns in matching}
        return sorted(matching)[op.offset: op.offset + op.limit]


# ---------------------------------------------------------------- a graph node's <memory>
def memory_block(
    store: BaseStore, user: str, message: str, *, agent: str | None = None, thread: str | None = None,
    budget: int | None = None,
) -> str:
    """The ``<memory>`` block for ``message``: what reverie recalls for ``user`` (``agent``'s
    facts and shared ones; ``thread``: only that conversation's episodes), for a node to put
    in the prompt. ``store`` is the graph's store (a node's ``store`` argument)."""
    memory = _memory_of(store)
    return memory.recall(message, user=user, agent=agent, thread=thread, budget=budget).context


async def amemory_block(
    store: BaseStore, user: str, message: str, *, agent: str | None = None, thread: str | None = None,
    budget: int | None = None,
) -> str:
    """:func:`memory_block` for async nodes (runs in a worker thread)."""
    _memory_of(store)
    return await anyio.to_thread.run_sync(
        lambda: memory_block(store, user, message, agent=agent, thread=thread, budget=budget)
    )


def _memory_of(store: BaseStore) -> Memory:
    if not isinstance(store, ReverieStore):
        raise TypeError(f"memory_block needs the graph compiled with store=ReverieStore(...), not {type(store).__name__}")
    return store.memory


# ---------------------------------------------------------------- helpers
def _fact_id(user: str, agent: str | None, key: str) -> str:
    """The fact a key stores: the same key in the same namespace is always the same fact."""
    return "fact_" + digest(["langgraph", user, agent, key])[:16]


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput("key must be non-empty text", field="key")
    check_unicode(key, "key")
    if len(key) > LABEL_MAX:  # an id, held to the limit of every id (it is kept with the fact)
        raise InvalidInput(f"key is {len(key):,} characters; a key is at most {LABEL_MAX}", field="key")
    _no_secrets(key, "key")
    return key


def _no_secrets(label: str, what: str, *, namespace_error: bool = False) -> None:
    """Keys and labels are stored as given, so they may not hold sensitive data."""
    found = find_sensitive(label)
    if found:
        # (named by its redacted form: the error may reach a model, a log or a trace)
        message = f"{what} {redact(label)[:40]!r} holds sensitive data ({found[0].kind}): use an id"
        raise InvalidNamespaceError(message) if namespace_error else InvalidInput(message, field="key")


def _check_value(value: Any, depth: int) -> dict[str, Any]:
    """A JSON object with text keys, every string redacted."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"value must be a dict (or None to delete), not {type(value).__name__}", field="value")
    if not all(isinstance(k, str) for k in value):
        raise InvalidInput("value keys must be text", field="value")
    try:
        plain = json.loads(json.dumps(dict(value), ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"value must be JSON: {exc}", field="value") from exc
    check_json(plain, depth)
    check_text_lengths(plain, "value")
    redacted: dict[str, Any] = redact_obj(plain)
    return redacted


def _memory_text(value: dict[str, Any]) -> tuple[str, str | None]:
    """(the memory's text, the field it came from, None when written out from all fields)."""
    for field in TEXT_FIELDS:
        if isinstance(value.get(field), str) and value[field].strip():
            return value[field], field
    parts = [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
             for k, v in value.items() if k not in ("category", "tags") and v not in (None, "", [], {})]
    if not parts:
        raise InvalidInput(f"value holds no text to remember: give it a {' / '.join(TEXT_FIELDS)} field", field="value")
    return "; ".join(parts), None


def _fields_edited(text: str, value: dict[str, Any]) -> dict[str, Any]:
    """A value with no text field, whose written-out line (``food: pizza; drink: tea``) was
    edited to ``text``: its fields as the line now gives them (a field the edit took out is
    gone, a value that was not a string read back as JSON when it is); a line that no longer
    reads as the value's fields is the value's ``content``, with its category and tags."""
    edited = dict(value)
    written = {k for k, v in value.items() if k not in ("category", "tags") and v not in (None, "", [], {})}
    seen: set[str] = set()
    for part in text.split("; "):
        name, colon, said = part.partition(": ")
        if not colon or name not in written or name in seen:
            return {"content": text, **{k: value[k] for k in ("category", "tags") if k in value}}
        seen.add(name)
        if isinstance(value[name], str):
            edited[name] = said
        else:
            try:
                edited[name] = json.loads(said)
            except ValueError:
                edited[name] = said
    for name in written - seen:
        del edited[name]
    return edited


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether ``value`` meets a filter, read as LangGraph's own stores read one: a dict of
    fields, each an exact value, a dict of operators, or a dict of the nested value's fields
    (``{"meta": {"kind": "pref"}}``, ``{"meta": {"level": {"$gt": 2}}}``)."""
    return all(_compare(value.get(field), wanted) for field, wanted in conditions.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in wanted):
        for name, operand in wanted.items():
            compare = _COMPARE.get(name)
            if compare is None:
                raise InvalidInput(f"unknown filter operator {name!r}: one of {', '.join(_COMPARE)}", field="filter")
            try:
                if not compare(actual, operand):
                    return False
            except TypeError:  # None or another type than the operand: not a match
                return False
        return True
    if isinstance(wanted, Mapping):  # the nested value's fields
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return isinstance(actual, list) and len(actual) == len(wanted) and all(
            _compare(a, w) for a, w in zip(actual, wanted))
    return bool(actual == wanted)


def _condition(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part))


__all__ = ["ReverieStore", "amemory_block", "memory_block"]
