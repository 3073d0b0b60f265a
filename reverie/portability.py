"""Export and import: reverie's envelope, and deer-flow's ``memory.json``.

Strict about the envelope (a wrong one is rejected with a message naming the
field, and nothing changes), lenient inside it (missing sections filled,
confidence coerced into 0..1, unknown categories kept as ``other`` with the
original). A user's import is all or nothing: one transaction.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, TypeVar

from pydantic import ValidationError

from reverie.context import Context
from reverie.errors import InvalidInput
from reverie.inputs import check_json, normalize_category
from reverie.models import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    Episode,
    Fact,
    KnowledgeDoc,
    Note,
    Profile,
    Provenance,
    new_id,
    utcnow,
)
from reverie.notes import mirror_notes
from reverie.profiles import check_profile_length, fit_section, note_trimmed
from reverie.redact import redact, redact_obj
from reverie.tags import TagWriter

log = logging.getLogger("reverie.portability")

EXPORT_VERSION = 1
SECTIONS = ("profile", "facts", "episodes", "notes", "knowledge")

_Item = TypeVar("_Item", Fact, Episode, Note, KnowledgeDoc)


@dataclass
class _Parsed:
    """An import read and checked, ready to be written in one transaction."""

    profile: Profile
    facts: list[Fact]
    episodes: list[Episode]
    notes: list[Note]
    knowledge: list[KnowledgeDoc]


def export_user(ctx: Context, user: str) -> dict[str, Any]:
    store = ctx.store
    facts = store.list_facts(user, status=("pending", "consolidated", "archived"))
    episodes = store.list_episodes(user, archived=None, newest_first=False)
    return {
        "version": EXPORT_VERSION,
        "exportedAt": utcnow().isoformat(),
        "user": user,
        "profile": store.get_profile(user).to_json(),
        "facts": [f.model_dump(mode="json") for f in facts],
        "episodes": [e.model_dump(mode="json", exclude={"owner"}) for e in episodes],
        "notes": [n.model_dump(mode="json") for n in store.list_notes(user)],
        "knowledge": [k.model_dump(mode="json") for k in store.list_knowledge(user)],
    }


def import_user(ctx: Context, data: dict[str, Any] | str, user: str, *, strict: bool = True) -> dict[str, int]:
    """Import ``data`` for ``user``; returns counts per section. ``strict=False`` (background
    reads) skips unusable entries with a warning instead of failing."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"import is not valid JSON: {exc}", field="$") from exc
        except RecursionError as exc:
            raise InvalidInput("import is nested too deeply", field="$") from exc
    if not isinstance(data, dict):
        raise InvalidInput("import must be a JSON object (an export envelope)", field="$")
    check_json(data, ctx.settings.max_import_depth)
    envelope: dict[str, Any] = redact_obj(data)  # a dict comes back as a dict
    if _is_deerflow(envelope):
        parsed = _parse_deerflow(envelope, user, strict)
    else:
        parsed = _parse_envelope(envelope, user, strict)
    _check_fact_length(parsed, ctx.settings.max_fact_chars, strict)
    trimmed = _check_profile_length(parsed, ctx.settings.max_profile_chars, strict)
    counts = _apply(ctx, user, parsed)
    if trimmed:
        with ctx.store.transaction():
            note_trimmed(ctx.store, user, trimmed, utcnow())
    return counts


def _check_profile_length(parsed: _Parsed, limit: int, strict: bool) -> dict[str, int]:
    """A section past max_profile_chars: refused when strict, else its newest parts kept
    (counted for health, as the learning line does)."""
    trimmed: dict[str, int] = {}
    for name, section in parsed.profile.sections().items():
        if strict:
            check_profile_length(section.summary, limit, f"profile.{name}", "; nothing was imported")
        section.summary = fit_section(name, section.summary, limit, trimmed)
        if name in trimmed:
            log.warning("profile.%s is past max_profile_chars (%d): kept its newest parts", name, limit)
    return trimmed


def _check_fact_length(parsed: _Parsed, limit: int, strict: bool) -> None:
    kept: list[Fact] = []
    for index, fact in enumerate(parsed.facts):
        if len(fact.content) <= limit:
            kept.append(fact)
            continue
        message = f"facts[{index}].content is {len(fact.content)} characters; a fact is at most {limit} (max_fact_chars)"
        if strict:
            raise InvalidInput(f"{message}; nothing was imported", field=f"facts[{index}].content")
        log.warning("skipping %s", message)
    parsed.facts = kept


def _is_deerflow(data: dict[str, Any]) -> bool:
    return isinstance(data.get("user"), dict) or ("history" in data and "exportedAt" not in data)


def _require(data: dict[str, Any], name: str, kind: type, label: str) -> Any:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise InvalidInput(f"{name} must be {label}, not {type(value).__name__}", field=name)
    return value


def _parse_envelope(data: dict[str, Any], user: str, strict: bool) -> _Parsed:
    if "version" not in data:
        raise InvalidInput("not a reverie export: the envelope has no version", field="version")
    if data["version"] != EXPORT_VERSION:
        raise InvalidInput(f"unsupported export version {data['version']!r}; expected {EXPORT_VERSION}", field="version")
    if "user" in data and not isinstance(data["user"], str):
        raise InvalidInput("user must be a string", field="user")
    if "exportedAt" in data and not isinstance(data["exportedAt"], str):
        raise InvalidInput("exportedAt must be an ISO date-time string", field="exportedAt")
    unknown = set(data) - {"version", "exportedAt", "user", *SECTIONS}
    if unknown:
        raise InvalidInput(f"unknown envelope field {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    profile = _require(data, "profile", dict, "an object") or {}
    lists = {name: _require(data, name, list, "an array") or [] for name in SECTIONS[1:]}
    return _Parsed(
        profile=_profile(profile),
        facts=_items(lists["facts"], "facts", user, strict, _fact),
        episodes=_items(lists["episodes"], "episodes", user, strict, lambda d, u: Episode.model_validate({**d, "user": u})),
        notes=_items(lists["notes"], "notes", user, strict, lambda d, u: Note.model_validate({**d, "user": u})),
        knowledge=_items(lists["knowledge"], "knowledge", user, strict, lambda d, u: KnowledgeDoc.model_validate({**d, "user": u})),
    )


def _parse_deerflow(data: dict[str, Any], user: str, strict: bool) -> _Parsed:
    for name in ("user", "history"):
        if name in data and not isinstance(data[name], dict):
            raise InvalidInput(f"{name} must be an object in a deer-flow memory.json", field=name)
    if "facts" in data and not isinstance(data["facts"], list):
        raise InvalidInput("facts must be an array in a deer-flow memory.json", field="facts")
    profile = _profile({"user": data.get("user") or {}, "history": data.get("history") or {}})

    def fact(raw: dict[str, Any], u: str) -> Fact:
        source = raw.get("source")
        converted = {
            "id": raw.get("id"),
            "content": raw.get("content"),
            "category": raw.get("category"),
            "confidence": raw.get("confidence"),
            "created_at": raw.get("createdAt"),
            "updated_at": raw.get("createdAt"),
            "status": "consolidated",
            "provenance": {"origin": "import", "source_ids": [str(source)] if source else []},
        }
        return _fact({k: v for k, v in converted.items() if v is not None}, u)

    facts = _items(data.get("facts") or [], "facts", user, strict, fact)
    return _Parsed(profile=profile, facts=facts, episodes=[], notes=[], knowledge=[])


def _profile(raw: dict[str, Any]) -> Profile:
    user = raw.get("user")
    history = raw.get("history")
    groups: tuple[tuple[str, tuple[str, ...], dict[str, Any]], ...] = (
        ("user", USER_SECTIONS, user if isinstance(user, dict) else {}),
        ("history", HISTORY_SECTIONS, history if isinstance(history, dict) else {}),
    )
    clean: dict[str, dict[str, Any]] = {"user": {}, "history": {}}
    for group, keys, source in groups:
        for key in keys:
            section = source.get(key)
            if isinstance(section, dict) and isinstance(section.get("summary"), str):
                clean[group][key] = {"summary": section["summary"], "updatedAt": _date_or_none(section.get("updatedAt"))}
    return Profile.model_validate(clean)


def _date_or_none(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return None
    return value


def _coerce_confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if number != number:  # NaN
        return 0.5
    return min(1.0, max(0.0, number))


def _fact(raw: dict[str, Any], user: str) -> Fact:
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content is missing or empty")
    data = dict(raw)
    data["user"] = user
    data["content"] = content.strip()
    category, original = normalize_category(str(raw.get("category") or "other"))
    data["category"] = category
    data["original_category"] = raw.get("original_category") or original
    data["confidence"] = _coerce_confidence(raw.get("confidence", 0.8))
    if data.get("status") not in ("pending", "consolidated", "archived"):
        data["status"] = "consolidated"
    if not isinstance(data.get("provenance"), dict):
        data["provenance"] = Provenance(origin="import").model_dump()
    if not isinstance(data.get("uses"), int) or data["uses"] < 0:
        data["uses"] = 0
    for stamp in ("created_at", "updated_at"):
        if _date_or_none(data.get(stamp)) is None:
            data.pop(stamp, None)
    return Fact.model_validate(data)


def _items(
    raw_items: list[Any], section: str, user: str, strict: bool, parse: Callable[[dict[str, Any], str], _Item]
) -> list[_Item]:
    out: list[_Item] = []
    for index, raw in enumerate(raw_items):
        where = f"{section}[{index}]"
        try:
            if not isinstance(raw, dict):
                raise ValueError(f"must be an object, not {type(raw).__name__}")
            out.append(parse(raw, user))
        except (ValueError, ValidationError) as exc:
            message = _first_error(exc)
            if strict:
                field = where + _first_loc(exc)
                raise InvalidInput(f"{field}: {message}; nothing was imported", field=field) from exc
            log.warning("skipping %s: %s", where, message)
    return out


def _first_loc(exc: Exception) -> str:
    """``.date`` for a pydantic error at the item's ``date`` field ("" otherwise)."""
    if isinstance(exc, ValidationError) and exc.errors():
        return "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in exc.errors()[0]["loc"])
    return ""


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return str(err["msg"]).removeprefix("Value error, ")
    return str(exc)


def _apply(ctx: Context, user: str, parsed: _Parsed) -> dict[str, int]:
    store = ctx.store
    writer = TagWriter(store, user)
    counts = {name: 0 for name in SECTIONS}
    with store.transaction(batch=True):  # an import is many writes, all or nothing
        for name, section in parsed.profile.sections().items():
            if section.summary:
                store.put_profile_section(user, name, redact(section.summary), section.updated_at or utcnow())
                counts["profile"] += 1
        for fact in parsed.facts:
            _own_id(store.get_fact(fact.id), fact, user, "fact")
            ctx.facts.index_fact(fact, fact.tags, writer=writer)
            counts["facts"] += 1
        for ep in parsed.episodes:
            _own_id(store.get_episode(ep.id), ep, user, "ep")
            ep.tags = writer.ensure(ep.tags)
            store.put_episode(ep)
            store.set_item_tags(user, "episode", ep.id, {t: 1.0 for t in ep.tags})
            counts["episodes"] += 1
        for note in parsed.notes:
            _own_id(next(iter(store.get_notes([note.id]).values()), None), note, user, "note")
            store.put_note(note)
            counts["notes"] += 1
        for doc in parsed.knowledge:
            _own_id(next(iter(store.get_knowledge([doc.id]).values()), None), doc, user, "kn")
            ctx.facts.index_knowledge(doc)
            counts["knowledge"] += 1
    mirror_notes(ctx.store, ctx.files, user, {n.date for n in parsed.notes})
    return counts


def _own_id(existing: _Item | None, item: _Item, user: str, prefix: str) -> None:
    """An id already taken by another user's item gets a fresh one (no cross-user overwrite)."""
    if existing is not None and existing.user != user:
        item.id = new_id(prefix)
