"""Export and import: reverie's envelope, and deer-flow's ``memory.json``.

Strict about the envelope (a wrong one is rejected with a message naming the
field, and nothing changes). Inside it, missing sections and values are filled
and unknown categories kept as ``other`` with the original; a value that is
there but wrong (a confidence outside 0..1, an unknown status, a date that is
no date) is refused naming its path (``facts[0].confidence``), as ``remember``
refuses it. Only a lenient import (``strict=False``) corrects such a value, and
its report counts the corrections. A user's import is all or nothing: one
transaction.

An item keeps its id unless another user's item holds it; then it takes an id
made from (target user, original id), so importing one file into another user
twice finds the rows of the first time and replaces them (the report's
``replaced``) instead of adding copies. Ids that items name (a fact's
provenance, a note's episodes, supersedes) are mapped the same way.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from pydantic import ValidationError

from reverie.context import Context
from reverie.errors import InvalidInput
from reverie.inputs import (
    LABEL_MAX,
    MAX_KNOWLEDGE_CHARS,
    MAX_TAGS,
    check_confidence,
    check_json,
    check_time,
    normalize_category,
)
from reverie.models import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    Episode,
    Fact,
    KnowledgeDoc,
    Note,
    Profile,
    Provenance,
    as_utc,
    digest,
    utcnow,
)
from reverie.memory_md import WITHDRAWN_KEPT, merge_withdrawn, withdrawn_record
from reverie.notes import mirror_notes
from reverie.profiles import check_profile_length, fit_section, note_trimmed
from reverie.redact import redact, redact_obj
from reverie.store.base import input_digest, nth_input, source_key
from reverie.tags import TagWriter

log = logging.getLogger("reverie.portability")

EXPORT_VERSION = 1
SECTIONS = ("profile", "facts", "episodes", "notes", "knowledge")

_Item = TypeVar("_Item", Fact, Episode, Note, KnowledgeDoc)
_T = TypeVar("_T")


@dataclass
class _Mode:
    """Strict (refuse a bad value, naming its path) or lenient (correct it, or skip the item,
    with a warning; counted for the report)."""

    strict: bool
    corrected: int = 0
    skipped: int = 0

    def bad(self, where: str, message: str, corrected: _T) -> _T:
        """A value that is there but wrong: refused when strict, else ``corrected`` is used."""
        if self.strict:
            raise InvalidInput(f"{where} {message}; nothing was imported", field=where)
        log.warning("%s %s; imported as %r", where, message, corrected)
        self.corrected += 1
        return corrected


@dataclass
class _Parsed:
    """An import read and checked, ready to be written in one transaction."""

    profile: Profile
    facts: list[Fact]
    episodes: list[Episode]
    notes: list[Note]
    knowledge: list[KnowledgeDoc]
    mode: _Mode
    # the lines the person deleted from MEMORY.md or forgot (memory_md.withdrawn's record), so
    # that no dream of the new home writes them back
    withdrawn: list[dict[str, str]] = field(default_factory=list)


EXPORT_PAGE = 1000  # items an export reads at a time
# knowledge documents an export reads at a time: each may hold 100,000 characters, so a page
# is at most about 5 MB
EXPORT_KNOWLEDGE_PAGE = 50


def _envelope(ctx: Context, user: str) -> tuple[dict[str, Any], dict[str, Iterator[dict[str, Any]]]]:
    """An export's head (version, time, user, profile) and its sections as streams of items:
    facts, episodes, notes and knowledge documents in the order they were stored, each kind
    read a page at a time (archived ones too)."""
    head = {
        "version": EXPORT_VERSION,
        "exportedAt": utcnow().isoformat(),
        "user": user,
        "profile": ctx.store.get_profile(user).to_json(),
        "withdrawn": withdrawn_record(ctx.store, user),
    }
    return head, {
        "facts": (f.model_dump(mode="json") for f in _stored(ctx, "fact", user)),
        "episodes": (e.model_dump(mode="json", exclude={"owner"}) for e in _stored(ctx, "episode", user)),
        "notes": (n.model_dump(mode="json") for n in _stored(ctx, "note", user)),
        "knowledge": (k.model_dump(mode="json") for k in _stored(ctx, "knowledge", user, EXPORT_KNOWLEDGE_PAGE)),
    }


def _stored(ctx: Context, kind: str, user: str, page: int = EXPORT_PAGE) -> Iterator[Any]:
    after = 0
    while True:
        rows = ctx.store.stored_after(kind, user, after, page)
        for _, item in rows:
            yield item
        if len(rows) < page:
            return
        after = rows[-1][0]


def export_user(ctx: Context, user: str) -> dict[str, Any]:
    """The user's whole memory as one envelope, in memory (see :func:`export_chunks` for one
    that does not hold it all)."""
    head, sections = _envelope(ctx, user)
    return {**head, **{name: list(items) for name, items in sections.items()}}


def differing_parts(ctx: Context, other: Context, user: str) -> list[str]:
    """The parts of ``user``'s export (the head's fields but its time, then each section)
    that differ between two memories, compared an item at a time: bounded memory, whatever
    the size (``reverie migrate`` checks its copy with it)."""
    head, sections = _envelope(ctx, user)
    other_head, other_sections = _envelope(other, user)
    differing = [k for k, v in head.items() if k != "exportedAt" and other_head.get(k) != v]
    missing = object()
    for name, items in sections.items():
        if any(a != b for a, b in itertools.zip_longest(items, other_sections[name], fillvalue=missing)):
            differing.append(name)
    return differing


EXPORT_CHUNK_CHARS = 1 << 16  # what export_chunks gathers before it hands a piece on


def export_chunks(ctx: Context, user: str) -> Iterator[str]:
    """The envelope of :func:`export_user` as JSON text, piece by piece (about 64K characters
    each): one item a line, read a page at a time, so that a memory of any size is exported in
    bounded memory (a file, an HTTP response). Joined, the pieces are one JSON object."""
    gathered: list[str] = []
    size = 0
    for piece in _export_pieces(ctx, user):
        gathered.append(piece)
        size += len(piece)
        if size >= EXPORT_CHUNK_CHARS:
            yield "".join(gathered)
            gathered, size = [], 0
    if gathered:
        yield "".join(gathered)


def _export_pieces(ctx: Context, user: str) -> Iterator[str]:
    head, sections = _envelope(ctx, user)
    yield "{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in head.items())
    for n, (name, items) in enumerate(sections.items()):
        yield f"  {json.dumps(name)}: ["
        first = True
        for item in items:
            yield ("\n    " if first else ",\n    ") + json.dumps(item, ensure_ascii=False)
            first = False
        yield ("]" if first else "\n  ]") + (",\n" if n < len(sections) - 1 else "\n}\n")


def import_user(ctx: Context, data: dict[str, Any] | str, user: str, *, strict: bool = True) -> dict[str, int]:
    """Import ``data`` for ``user``; returns counts per section (items written) and
    ``replaced`` (how many of them were already there: rewritten, not added).
    ``strict=False`` (background reads) skips unusable entries and corrects bad values with a
    warning instead of failing; its report adds ``corrected`` and ``skipped``."""
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
    mode = _Mode(strict)
    if _is_deerflow(envelope):
        parsed = _parse_deerflow(envelope, user, mode)
    else:
        parsed = _parse_envelope(envelope, user, mode)
    _check_limits(parsed, ctx.settings.max_fact_chars)
    return _import(ctx, user, parsed)


def _import(
    ctx: Context, user: str, parsed: _Parsed, pages: Iterable[_Parsed] = (), on_page: OnPage | None = None,
) -> dict[str, int]:
    """Write a checked import (and the ``pages`` of a streamed file's items) and report it."""
    mode = parsed.mode
    trimmed = _check_profile_length(parsed, ctx.settings.max_profile_chars, mode.strict)
    mode.corrected += len(trimmed)
    counts = _apply(ctx, user, parsed, pages, on_page)
    if not mode.strict:  # (a page's corrections are counted as it is written)
        counts["corrected"] = mode.corrected
        counts["skipped"] = mode.skipped
    if trimmed:
        with ctx.store.transaction():
            note_trimmed(ctx.store, user, trimmed, utcnow())
    return counts


# ------------------------------------------------------------ streaming an import file

IMPORT_PAGE = 1000  # items an import reads, checks and writes at a time
OnPage = Callable[[dict[str, int]], None]  # told the counts so far after each page of a file
MAX_IMPORT_ITEM_CHARS = 64 << 20  # one item (or head value) of an import file, at most
_STREAMED = SECTIONS[1:]  # the sections whose items an import file streams


class _JsonStream:
    """A JSON text read from a file a megabyte at a time, one value at a time."""

    def __init__(self, fp: IO[str]):
        self.fp, self.buf, self.pos, self.eof = fp, "", 0, False
        self.decoder = json.JSONDecoder()

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            more = self.fp.read(1 << 20)
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"import is not UTF-8 text: {exc.reason} at byte {exc.start}", field="$") from exc
        if not more:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + more, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\n\r":
                self.pos += 1
            if self.pos < len(self.buf) or not self._fill():
                return self.buf[self.pos:self.pos + 1]

    def take(self, char: str, where: str) -> None:
        if self.peek() != char:
            raise InvalidInput(f"import is not valid JSON: expected {char!r} {where}", field="$")
        self.pos += 1

    def elements(self, close: str, where: str) -> Iterator[None]:
        """After an opening bracket or brace: once for each element (the caller reads it), up
        to the ``close`` that ends them."""
        if self.peek() == close:
            self.pos += 1
            return
        while True:
            yield
            if self.peek() == ",":
                self.pos += 1
                continue
            self.take(close, where)
            return

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos <= MAX_IMPORT_ITEM_CHARS and self._fill():
                    continue  # the value goes on past what was read
                if not self.eof:
                    raise InvalidInput(f"import has a value of more than {MAX_IMPORT_ITEM_CHARS >> 20} MB (or one that "
                                       f"is not valid JSON): {exc}", field="$") from exc
                raise InvalidInput(f"import is not valid JSON: {exc}", field="$") from exc
            except RecursionError as exc:
                raise InvalidInput("import is nested too deeply", field="$") from exc
            if end == len(self.buf) and self._fill():
                continue  # a number may go on ("12" of "125")
            self.pos = end
            return value


def _events(fp: IO[str]) -> Iterator[tuple[str, str, Any]]:
    """A top-level JSON object as ("field", key, value), and for a key of a streamed section
    whose value is an array, ("item", key, item) for each of its items."""
    s = _JsonStream(fp)
    s.take("{", "at the start")
    for _ in s.elements("}", "after a field of the envelope"):
        key = s.value()
        if not isinstance(key, str):
            raise InvalidInput("import is not valid JSON: an object's key is not a string", field="$")
        s.take(":", f"after {key!r}")
        if key in _STREAMED and s.peek() == "[":
            s.take("[", f"after {key!r}")
            yield "field", key, []
            for _ in s.elements("]", f"after an item of {key!r}"):
                yield "item", key, s.value()
        else:
            yield "field", key, s.value()
    if s.peek():
        raise InvalidInput("import is not valid JSON: extra data after the object", field="$")


def import_file(
    ctx: Context, path: Path, user: str, *, strict: bool = True, on_page: OnPage | None = None,
) -> dict[str, int]:
    """Import the file at ``path``, as :func:`import_user` imports its text. A reverie export
    envelope is read twice, an item at a time: once for its head (version, user, profile)
    and which sections it has, then a page of items at a time, each page checked and written
    as it is read, all in one transaction (a refused item takes back everything): memory is
    bounded whatever the file's size. Anything else (a deer-flow memory.json) is read whole.
    ``on_page(counts)``: after each page is written (in the transaction: not yet committed)."""
    head = _scan(path)
    if head is None:
        return import_user(ctx, _read_text(path), user, strict=strict)
    check_json(head, ctx.settings.max_import_depth)
    mode = _Mode(strict)
    parsed = _parse_envelope(redact_obj(head), user, mode)  # its sections are read below
    return _import(ctx, user, parsed, _pages(ctx, path, user, mode), on_page)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte order mark is no part of the JSON
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"import is not UTF-8 text: {exc.reason} at byte {exc.start}", field="$") from exc


def _scan(path: Path) -> dict[str, Any] | None:
    """An envelope's fields but the items of its sections (each an empty list here), read
    without holding the items; None for a file that is not an object or is deer-flow's."""
    with path.open(encoding="utf-8-sig") as fp:
        if _JsonStream(fp).peek() != "{":
            return None
        fp.seek(0)
        head = {key: value for event, key, value in _events(fp) if event == "field"}
    return None if _is_deerflow(head) else head


def _pages(ctx: Context, path: Path, user: str, mode: _Mode) -> Iterator[_Parsed]:
    """The items of the envelope's sections, IMPORT_PAGE at a time, each checked (nesting,
    Unicode, redaction, values, a fact's length) as :func:`import_user` checks them."""
    depth = ctx.settings.max_import_depth
    with path.open(encoding="utf-8-sig") as fp:
        section, start, batch = "", 0, list[Any]()
        for event, key, value in _events(fp):
            if event != "item":
                continue
            if key != section or len(batch) >= IMPORT_PAGE:
                if batch:
                    yield _page(ctx, section, start, batch, user, mode, depth)
                start = start + len(batch) if key == section else 0
                section, batch = key, []
            batch.append(value)
        if batch:
            yield _page(ctx, section, start, batch, user, mode, depth)


def _page(ctx: Context, section: str, start: int, batch: list[Any], user: str, mode: _Mode, depth: int) -> _Parsed:
    # an item is checked where the envelope would hold it: two levels down (the envelope, the list)
    for n, raw in enumerate(batch, start):
        check_json({f"{section}[{n}]": raw}, depth - 1, setting=depth)
    parse: dict[str, Callable[[dict[str, Any], str, str, _Mode], Any]] = {
        "facts": _fact, "episodes": _model(Episode), "notes": _model(Note), "knowledge": _model(KnowledgeDoc),
    }
    items = _items(redact_obj(batch), section, user, mode, parse[section], start)
    page = _Parsed(profile=Profile(), facts=[], episodes=[], notes=[], knowledge=[], mode=mode)
    setattr(page, section, items)
    _check_limits(page, ctx.settings.max_fact_chars, start)
    return page


def _check_profile_length(parsed: _Parsed, limit: int, strict: bool) -> dict[str, int]:
    """A section past max_profile_chars: refused when strict, else its newest parts kept
    (counted for health, as the learning line does)."""
    trimmed: dict[str, int] = {}
    for name, section in parsed.profile.sections().items():
        if strict:
            check_profile_length(section.summary, limit, f"profile.{name}", "; nothing was imported (a lenient "
                                 "import keeps its newest part: reverie import --lenient, strict=False)")
        section.summary = fit_section(name, section.summary, limit, trimmed)
        if name in trimmed:
            log.warning("profile.%s is past max_profile_chars (%d): kept its newest parts", name, limit)
    return trimmed


def _check_limits(parsed: _Parsed, fact_chars: int, start: int = 0) -> None:
    """The limits every other way in holds an item to: a fact's length (max_fact_chars) and a
    knowledge document's (MAX_KNOWLEDGE_CHARS), refused when strict, else the item skipped;
    at most MAX_TAGS tags of at most LABEL_MAX characters, refused when strict, else the
    first that fit kept."""
    mode = parsed.mode
    sections: tuple[tuple[str, Sequence[Fact | Episode | KnowledgeDoc], str, int, str], ...] = (
        ("facts", parsed.facts, "content", fact_chars, "a fact is at most {limit:,} (max_fact_chars)"),
        ("episodes", parsed.episodes, "", 0, ""),
        ("knowledge", parsed.knowledge, "body", MAX_KNOWLEDGE_CHARS, "a knowledge document is at most {limit:,}"),
    )
    for section, items, text, limit, what in sections:
        kept: list[Fact | Episode | KnowledgeDoc] = []
        for index, item in enumerate(items, start):
            where = f"{section}[{index}]"
            length = len(getattr(item, text)) if text else 0
            if length > limit:
                message = f"{where}.{text} is {length:,} characters; " + what.format(limit=limit)
                if mode.strict:
                    raise InvalidInput(f"{message}; nothing was imported", field=f"{where}.{text}")
                log.warning("skipping %s", message)
                mode.skipped += 1
                continue
            fitting = [t for t in item.tags if len(t) <= LABEL_MAX][:MAX_TAGS]
            if fitting != item.tags:
                item.tags = mode.bad(f"{where}.tags", f"must be at most {MAX_TAGS} tags of at most {LABEL_MAX} "
                                     f"characters (it holds {len(item.tags)})", fitting)
            kept.append(item)
        setattr(parsed, section, kept)


def _is_deerflow(data: dict[str, Any]) -> bool:
    return isinstance(data.get("user"), dict) or ("history" in data and "exportedAt" not in data)


def _require(data: dict[str, Any], name: str, kind: type, label: str) -> Any:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise InvalidInput(f"{name} must be {label}, not {type(value).__name__}", field=name)
    return value


def _model(kind: type[_Item]) -> Callable[[dict[str, Any], str, str, _Mode], _Item]:
    return lambda raw, user, where, mode: kind.model_validate({**raw, "user": user})


def _parse_envelope(data: dict[str, Any], user: str, mode: _Mode) -> _Parsed:
    if "version" not in data:
        raise InvalidInput("not a reverie export: the envelope has no version", field="version")
    if data["version"] != EXPORT_VERSION:
        raise InvalidInput(f"unsupported export version {data['version']!r}; expected {EXPORT_VERSION}", field="version")
    if "user" in data and not isinstance(data["user"], str):
        raise InvalidInput("user must be a string", field="user")
    if "exportedAt" in data and not isinstance(data["exportedAt"], str):
        raise InvalidInput("exportedAt must be an ISO date-time string", field="exportedAt")
    unknown = set(data) - {"version", "exportedAt", "user", "withdrawn", *SECTIONS}
    if unknown:
        raise InvalidInput(f"unknown envelope field {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    profile = _require(data, "profile", dict, "an object") or {}
    lists = {name: _require(data, name, list, "an array") or [] for name in SECTIONS[1:]}
    return _Parsed(
        profile=_profile(profile, mode),
        facts=_items(lists["facts"], "facts", user, mode, _fact),
        episodes=_items(lists["episodes"], "episodes", user, mode, _model(Episode)),
        notes=_items(lists["notes"], "notes", user, mode, _model(Note)),
        knowledge=_items(lists["knowledge"], "knowledge", user, mode, _model(KnowledgeDoc)),
        mode=mode,
        withdrawn=_withdrawn(_require(data, "withdrawn", list, "an array") or [], mode),
    )


def _withdrawn(raw: list[Any], mode: _Mode) -> list[dict[str, str]]:
    """The envelope's deleted lines: each {"content", "key", "at"} (a digest of 32 hex
    digits, an ISO time), at most WITHDRAWN_KEPT, the newest."""
    out: list[dict[str, str]] = []
    for n, entry in enumerate(raw):
        where = f"withdrawn[{n}]"
        ok = (isinstance(entry, dict) and set(entry) <= {"content", "key", "at"}
              and isinstance(entry.get("content", ""), str) and isinstance(entry.get("key"), str)
              and re.fullmatch(r"[0-9a-f]{32}", entry["key"]) is not None and isinstance(entry.get("at"), str))
        if ok:
            try:
                as_utc(datetime.fromisoformat(entry["at"]))
            except ValueError:
                ok = False
        if not ok:
            said = 'must be {"content": text, "key": 32 hex digits, "at": an ISO date-time}'
            if mode.strict:
                raise InvalidInput(f"{where} {said}; nothing was imported", field=where)
            log.warning("%s %s; skipped", where, said)
            mode.skipped += 1
            continue
        out.append({"content": entry.get("content", ""), "key": entry["key"], "at": entry["at"]})
    return out[-WITHDRAWN_KEPT:]


def _parse_deerflow(data: dict[str, Any], user: str, mode: _Mode) -> _Parsed:
    for name in ("user", "history"):
        if name in data and not isinstance(data[name], dict):
            raise InvalidInput(f"{name} must be an object in a deer-flow memory.json", field=name)
    if "facts" in data and not isinstance(data["facts"], list):
        raise InvalidInput("facts must be an array in a deer-flow memory.json", field="facts")
    profile = _profile({"user": data.get("user") or {}, "history": data.get("history") or {}}, mode)

    def fact(raw: dict[str, Any], u: str, where: str, mode: _Mode) -> Fact:
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
        # a bad value is named by deer-flow's field, as the file spells it
        names = {"created_at": "createdAt", "updated_at": "createdAt"}
        return _fact({k: v for k, v in converted.items() if v is not None}, u, where, mode, names)

    facts = _items(data.get("facts") or [], "facts", user, mode, fact)
    return _Parsed(profile=profile, facts=facts, episodes=[], notes=[], knowledge=[], mode=mode)


def _profile(raw: dict[str, Any], mode: _Mode) -> Profile:
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
                where = f"profile.{group}.{key}.updatedAt"  # deer-flow's too, as its length check says
                clean[group][key] = {"summary": section["summary"], "updatedAt": _stamp(section.get("updatedAt"), where, mode)}
    return Profile.model_validate(clean)


def _stamp(value: Any, where: str, mode: _Mode) -> datetime | None:
    """An ISO date-time (None when missing or empty); a wrong one is refused when strict, and
    dropped (the time of the import is used) when lenient."""
    if value is None or value == "":
        return None
    try:
        return check_time(value, where)
    except InvalidInput as exc:
        return mode.bad(where, str(exc).removeprefix(where).strip(), None)


_STATUSES = ("pending", "consolidated", "archived")


def _fact(raw: dict[str, Any], user: str, where: str, mode: _Mode, names: dict[str, str] | None = None) -> Fact:
    """A fact of an import: missing values filled; a value that is there but wrong refused when
    strict (``remember`` refuses it too), corrected when lenient."""
    names = names or {}

    def path(name: str) -> str:
        return f"{where}.{names.get(name, name)}"

    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("content is missing or empty")
    data = dict(raw)
    data["user"] = user
    data["content"] = content.strip()
    category, original = normalize_category(str(raw.get("category") or "other"))
    data["category"] = category
    if not raw.get("id"):
        # an id drawn from what it says: the same fact imported again (the file a second time,
        # a line given twice) is found, not added again
        said = ["import-fact", user, str(raw.get("agent") or ""), category, data["content"].casefold()]
        data["id"] = f"fact_{digest(said)[:24]}"
    data["original_category"] = raw.get("original_category") or original
    if raw.get("confidence") is None:
        data["confidence"] = 0.8
    else:
        try:
            data["confidence"] = check_confidence(raw["confidence"])
        except InvalidInput:
            data["confidence"] = mode.bad(path("confidence"), f"must be a number between 0 and 1 (it is {raw['confidence']!r})",
                                          _coerce_confidence(raw["confidence"]))
    if raw.get("status") is None:
        data["status"] = "consolidated"
    elif raw["status"] not in _STATUSES:
        data["status"] = mode.bad(path("status"), f"must be one of {', '.join(_STATUSES)} (it is {raw['status']!r})",
                                  "consolidated")
    if raw.get("provenance") is None:
        data["provenance"] = Provenance(origin="import").model_dump()
    elif not isinstance(raw["provenance"], dict):
        data["provenance"] = mode.bad(path("provenance"), f"must be an object, not {type(raw['provenance']).__name__}",
                                      Provenance(origin="import").model_dump())
    if raw.get("uses") is None:
        data["uses"] = 0
    elif isinstance(raw["uses"], bool) or not isinstance(raw["uses"], int) or raw["uses"] < 0:
        data["uses"] = mode.bad(path("uses"), f"must be a whole number from 0 (it is {raw['uses']!r})", 0)
    for stamp in ("created_at", "updated_at"):
        value = _stamp(raw.get(stamp), path(stamp), mode)
        if value is None:
            data.pop(stamp, None)
        else:
            data[stamp] = value
    return Fact.model_validate(data)


def _coerce_confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if number != number:  # NaN
        return 0.5
    return min(1.0, max(0.0, number))


def _items(
    raw_items: list[Any], section: str, user: str, mode: _Mode,
    parse: Callable[[dict[str, Any], str, str, _Mode], _Item], start: int = 0,
) -> list[_Item]:
    """The items of a section, each checked; ``start``: the place of the first in the file."""
    out: list[_Item] = []
    for index, raw in enumerate(raw_items, start):
        where = f"{section}[{index}]"
        try:
            if not isinstance(raw, dict):
                raise ValueError(f"must be an object, not {type(raw).__name__}")
            out.append(parse(raw, user, where, mode))
        except InvalidInput as exc:
            if exc.field is not None and exc.field.startswith(where):  # named by mode.bad: strict
                raise
            _refuse_or_skip(exc, where, mode)
        except (ValueError, ValidationError) as exc:
            _refuse_or_skip(exc, where, mode)
    return out


def _refuse_or_skip(exc: Exception, where: str, mode: _Mode) -> None:
    message = _first_error(exc)
    if mode.strict:
        field = where + _first_loc(exc)
        raise InvalidInput(f"{field}: {message}; nothing was imported", field=field) from exc
    log.warning("skipping %s: %s", where, message)
    mode.skipped += 1


def _first_loc(exc: Exception) -> str:
    """``.date`` for an error at the item's ``date`` field ("" otherwise)."""
    if isinstance(exc, ValidationError) and exc.errors():
        return "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in exc.errors()[0]["loc"])
    if isinstance(exc, InvalidInput) and exc.field:
        return f".{exc.field}"
    return ""


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return str(err["msg"]).removeprefix("Value error, ")
    return str(exc)


# ------------------------------------------------------------ ids

# what an id names, by the prefix its kind's new ids take
_KINDS = ("fact", "ep", "note", "kn")


def _mapped_id(user: str, original: str, prefix: str, attempt: int) -> str:
    """The id an item whose ``original`` id another user holds takes in ``user``'s memory: the
    same every time (so a second import of the file finds the first one's rows)."""
    return f"{prefix}_{digest(['import', user, original, attempt])[:24]}"


class _Ids:
    """Maps the ids of an import into ``user``'s memory, one rule for items and references.

    An id free or already ``user``'s stays; one held by another user becomes
    :func:`_mapped_id` (the next attempt if another user holds that too). A mapped id
    already ``user``'s (written by an earlier import of the file) is taken even when the
    original has become free since, so the rows are found again, not copied."""

    def __init__(self, ctx: Context, user: str):
        self.store = ctx.store
        self.user = user
        self.owner: dict[str, dict[str, str]] = {kind: {} for kind in _KINDS}
        self.ids: dict[tuple[str, str], str] = {}
        self.facts: set[str] = set()  # the facts this import has written so far (a user's facts are few)
        self.repeated = 0  # facts it gave again, not written again

    def forget(self) -> None:
        """Drop what was looked up and resolved: once a page's items are written, looking an
        id up again gives the same answer (the rules depend on who holds which id), so a
        streamed import keeps one page's ids, not every id of the file."""
        self.owner = {kind: {} for kind in _KINDS}
        self.ids.clear()

    def want(self, wanted: dict[str, set[str]]) -> None:
        """Look up who holds these ids (and their first mapped ids) in one read a kind."""
        self._look({kind: {i for o in ids for i in (o, _mapped_id(self.user, o, kind, 0))} for kind, ids in wanted.items()})

    def _look(self, ids: dict[str, set[str]]) -> None:
        getters: dict[str, Callable[[list[str]], dict[str, Any]]] = {
            "fact": self.store.get_facts, "ep": self.store.get_episodes,
            "note": self.store.get_notes, "kn": self.store.get_knowledge,
        }
        for kind, wanted in ids.items():
            missing = sorted(wanted - set(self.owner[kind]))
            if not missing:
                continue
            found = getters[kind](missing)
            for item_id in missing:
                row = found.get(item_id)
                self.owner[kind][item_id] = row.user if row is not None else ""

    def _owner(self, kind: str, item_id: str) -> str:
        if item_id not in self.owner[kind]:
            self._look({kind: {item_id}})
        return self.owner[kind][item_id]

    def __call__(self, kind: str, original: str) -> str:
        key = (kind, original)
        if key not in self.ids:
            self.ids[key] = self._resolve(kind, original)
        return self.ids[key]

    def _resolve(self, kind: str, original: str) -> str:
        holder = self._owner(kind, original)
        if holder == self.user:
            return original
        attempt = 0
        while True:
            mapped = _mapped_id(self.user, original, kind, attempt)
            mapped_holder = self._owner(kind, mapped)
            if mapped_holder == self.user:
                return mapped
            if not mapped_holder:
                return original if not holder else mapped
            attempt += 1

    def exists(self, kind: str, item_id: str) -> bool:
        """Whether ``item_id`` is already ``user``'s (before this import wrote)."""
        return self._owner(kind, item_id) == self.user


def _map_ids(ids: _Ids, parsed: _Parsed, there: set[tuple[str, str]]) -> None:
    """Give every item its id in the user's memory and map the ids items name; adds to
    ``there`` the (kind, id) of the items that were already there."""
    wanted: dict[str, set[str]] = {kind: set() for kind in _KINDS}
    for fact in parsed.facts:
        wanted["fact"].update([fact.id, *fact.provenance.facts, *(i for i in (fact.supersedes, fact.superseded_by) if i)])
        wanted["ep"].update(fact.provenance.episodes)
        wanted["note"].update(fact.provenance.notes)
    wanted["ep"].update(ep.id for ep in parsed.episodes)
    for note in parsed.notes:
        wanted["note"].add(note.id)
        wanted["ep"].update(note.episodes)
    wanted["kn"].update(doc.id for doc in parsed.knowledge)
    ids.want(wanted)

    def own(kind: str, item: _Item) -> None:
        item.id = ids(kind, item.id)
        if ids.exists(kind, item.id):
            there.add((kind, item.id))

    once = []
    for fact in parsed.facts:
        own("fact", fact)
        if fact.id in ids.facts:  # a fact this import gave already (a line given twice): written once
            ids.repeated += 1
            continue
        ids.facts.add(fact.id)
        once.append(fact)
        prov = fact.provenance
        prov.facts = [ids("fact", i) for i in prov.facts]
        prov.episodes = [ids("ep", i) for i in prov.episodes]
        prov.notes = [ids("note", i) for i in prov.notes]
        fact.supersedes = ids("fact", fact.supersedes) if fact.supersedes else fact.supersedes
        fact.superseded_by = ids("fact", fact.superseded_by) if fact.superseded_by else fact.superseded_by
    parsed.facts = once
    for ep in parsed.episodes:
        own("ep", ep)
    for note in parsed.notes:
        own("note", note)
        note.episodes = [ids("ep", i) for i in note.episodes]
    for doc in parsed.knowledge:
        own("kn", doc)


def _apply(
    ctx: Context, user: str, parsed: _Parsed, pages: Iterable[_Parsed] = (), on_page: OnPage | None = None,
) -> dict[str, int]:
    """Write ``parsed`` and then each of ``pages`` (a streamed file's items, a page at a time),
    in one transaction: a page that is refused takes back everything."""
    store = ctx.store
    writer = TagWriter(store, user)
    counts = {name: 0 for name in SECTIONS}
    ids, there = _Ids(ctx, user), set[tuple[str, str]]()
    days: set[str] = set()
    with store.transaction(batch=True):  # an import is many writes, all or nothing
        _map_ids(ids, parsed, there)  # read before anything of them is written
        for name, section in parsed.profile.sections().items():
            if section.summary:
                store.put_profile_section(user, name, redact(section.summary), section.updated_at or utcnow())
                counts["profile"] += 1
        inputs: dict[tuple[str, str], int] = {}  # (thread, digest) -> episodes of this import with it
        _write_items(ctx, writer, parsed, counts, days, inputs)
        for page in pages:
            ids.forget()
            _map_ids(ids, page, there)
            _write_items(ctx, writer, page, counts, days, inputs)
            if on_page is not None:
                on_page(dict(counts))
        merge_withdrawn(store, user, parsed.withdrawn)
    mirror_notes(ctx.store, ctx.files, user, days)
    counts["replaced"] = len(there)
    if ids.repeated:
        counts["repeated"] = ids.repeated
    return counts


def _write_items(
    ctx: Context, writer: TagWriter, parsed: _Parsed, counts: dict[str, int], days: set[str],
    inputs: dict[tuple[str, str], int],
) -> None:
    store, user = ctx.store, writer.user
    for fact in parsed.facts:
        ctx.facts.index_fact(fact, fact.tags, writer=writer)
        counts["facts"] += 1
    # the page's tags are looked up (and made) at once, and its episodes' postings written at once
    tagged: dict[str, dict[str, float]] = {}
    for ep, tags in zip(parsed.episodes, writer.ensure_each([ep.tags for ep in parsed.episodes]), strict=True):
        ep.tags = tags
        store.put_episode(ep)
        tagged[ep.id] = {t: 1.0 for t in ep.tags}
        counts["episodes"] += 1
        # the keys ingest knows its input by, so that the same file ingested again into the
        # new home is skipped as it was in the old (its n-th identical exchange the n-th)
        digest = input_digest(ep.messages)
        n = inputs.get((ep.thread, digest), 0)
        inputs[(ep.thread, digest)] = n + 1
        store.put_inputs(user, ep.thread, ep.id, [nth_input(digest, n), *(
            k for m in ep.messages if m.source_id for k in (source_key(m.source_id, m.content), source_key(m.source_id)))])
    store.set_items_tags(user, "episode", tagged)
    # a note imported again under its id on another day leaves its old day (and that day's file)
    before = store.get_notes([n.id for n in parsed.notes]) if parsed.notes else {}
    for note in parsed.notes:
        store.put_note(note)
        days.add(note.date)
        if note.id in before and before[note.id].user == user:
            days.add(before[note.id].date)
        counts["notes"] += 1
    for doc in parsed.knowledge:
        ctx.facts.index_knowledge(doc)
        counts["knowledge"] += 1
