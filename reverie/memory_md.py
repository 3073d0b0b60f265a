"""MEMORY.md: the curated long-term memory as a file a person can read and edit.

``publish_memory_md`` renders the profile and the curated facts and records what
it wrote (a snapshot in the store); ``sync`` reads a person's edits against
that snapshot and takes them into the store (journaled: ``reverie undo``).

    # Memory of ana
    ## Profile
    - **Thinking Style:** conclusion first, then the reasoning
    ## Preferences
    ### Tools
    - [3x] Prefers trash over rm <!-- fact_0123456789abcdef -->
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import Field

from reverie.claims import stored_relation
from reverie.context import Context
from reverie.errors import Conflict, InvalidInput
from reverie.facts import FactLine, clean_line, clip_learned, fact_line, fact_rank, keyed
from reverie.inputs import check_unicode, normalize_category, shows_something
from reverie.journal import SNAPSHOT, Journal
from reverie.models import (
    AREAS,
    CATEGORIES,
    PROFILE_LABELS,
    Fact,
    Model,
    Profile,
    Provenance,
    as_utc,
    utcnow,
)
from reverie.profiles import fit_section, note_trimmed
from reverie.redact import redact
from reverie.store.base import Store
from reverie.tags import TagWriter
from reverie.text import exact_key, normalize_space, plural


def follow(fact: Fact, pool: dict[str, Fact]) -> Fact:
    """The live fact an archived one was folded or superseded into (itself when live)."""
    seen = {fact.id}
    while fact.status == "archived" and fact.superseded_by in pool and fact.superseded_by not in seen:
        fact = pool[fact.superseded_by]
        seen.add(fact.id)
    return fact


# ---------------------------------------------------------------- MEMORY.md

CATEGORY_TITLES: dict[str, str] = {
    "correction": "Corrections",
    "constraint": "Rules",
    "preference": "Preferences",
    "identity": "Identity",
    "goal": "Goals",
    "decision": "Decisions",
    "cognitive": "How they think",
    "behavior": "Habits",
    "context": "Context",
    "knowledge": "Knowledge",
    "other": "Other",
}
# the labels MEMORY.md used before they were unified with the <memory> block's: still read
LEGACY_LABELS: dict[str, str] = {
    "user.workContext": "Work",
    "user.personalContext": "Personal",
    "user.topOfMind": "Top of mind",
    "history.recentMonths": "Recent months",
    "history.earlierContext": "Earlier",
    "history.longTermBackground": "Background",
}
_TITLE_CATEGORY = {t.casefold(): c for c, t in CATEGORY_TITLES.items()}
_LABEL_SECTION = {label.casefold(): s for s, label in [*LEGACY_LABELS.items(), *PROFILE_LABELS.items()]}
_H1, _H2, _H3 = (re.compile(rf"^{'#' * n}\s+(.+?)\s*#*$") for n in (1, 2, 3))
# "##Habits": a heading without its space (no heading to markdown), read as the heading meant
_TIGHT = re.compile(r"^(?P<marks>#{2,3})(?P<title>[^#\s].*?)\s*#*$")
_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(?:\[(?P<uses>\d+)x\]\s*)?(?P<body>.*?)\s*(?:<!--\s*(?P<id>fact_\w+)\s*-->)?\s*$")
_PROFILE_LINE = re.compile(r"^\*\*(?P<label>[^*]+?):?\*\*:?\s*(?P<text>.*)$")


def memory_md_path(ctx: Context, user: str) -> Path:
    return ctx.files.memory_md(user)


class MemoryLine(Model):
    """An entry line of MEMORY.md as a person left it."""

    fact_id: str | None = None
    content: str
    category: str
    area: str | None = None
    # why the line is not under the heading it was written under (a heading MEMORY.md does not
    # know: its lines go under Other), "" when it is; said by sync, never stored
    placed: str = Field(default="", exclude=True)


class RefusedLine(Model):
    content: str
    reason: str

    def kept(self) -> RefusedLine:
        """As a line written nowhere else is kept (a report, a snapshot): redacted, held to a
        fact's length."""
        return RefusedLine(content=clip_learned(redact(self.content)), reason=self.reason)


class Snapshot(Model):
    """What reverie last wrote to MEMORY.md: the base that a person's edits are read against."""

    sha: str
    dreamed_at: str = ""
    facts: dict[str, MemoryLine] = Field(default_factory=dict)
    profile: dict[str, str] = Field(default_factory=dict)
    # the [Nx] each entry showed (none in a snapshot written before they were kept)
    uses: dict[str, int] = Field(default_factory=dict)
    # the entries the last dream listed (or a write after it) that a later write (a sync, an
    # undo, a refresh after maintenance) no longer lists: the next dream tells each with why
    # it left ("forgotten", "contradicted by ...") and starts this again
    dropped: dict[str, MemoryLine] = Field(default_factory=dict)
    # the lines written by hand that a sync since the last dream could not take in (gone from
    # MEMORY.md, which is written again from the store): health says them, and the next dream
    # tells them in its report and diary and starts this again (redacted, held to a fact's length)
    refused: list[RefusedLine] = Field(default_factory=list)

    def listed_since_dream(self) -> dict[str, MemoryLine]:
        """Every entry MEMORY.md listed since the last dream wrote it, listed still or not."""
        return {**self.dropped, **self.facts}


def load_snapshot(ctx: Context, user: str) -> Snapshot | None:
    raw = ctx.store.get_meta(SNAPSHOT.format(user=user))
    return Snapshot.model_validate_json(raw) if raw else None


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# entries a snapshot keeps of those dropped since the last dream (a few dreams' worth)
DROPPED_KEPT = 200
# lines written by hand a snapshot keeps of those syncs refused since the last dream (the newest)
REFUSED_KEPT = 50


def publish_memory_md(
    ctx: Context, user: str, facts: list[Fact], *, dreamed_at: str | None = None, read: str | None = None,
    dream: bool = False, refused: list[RefusedLine] | None = None,
) -> Path:
    """Write MEMORY.md atomically and remember what was written (for sync); ``dreamed_at``
    None keeps the date of the last dream, "" says there was none. ``dream``: a dream writes
    it (it told what left the list; else the entries this write drops are kept for the next
    dream to tell: :attr:`Snapshot.dropped`). ``read``: the
    :func:`text_sha` of the file the caller took in (a sync), else what reverie last wrote;
    ``refused``: the lines of that file it could not take in (:attr:`Snapshot.refused`).
    A file that holds neither was edited meanwhile: it is not overwritten (Conflict), so the
    next sync takes the edit in."""
    path = memory_md_path(ctx, user)
    previous = load_snapshot(ctx, user)
    if dreamed_at is None:
        dreamed_at = previous.dreamed_at if previous else ""
    profile = ctx.store.get_profile(user)
    text = render_memory_md(user, profile, facts, dreamed_at)
    current = ctx.files.read_edit(user, path)
    base = read if read is not None else previous.sha if previous else None
    if current is not None and text_sha(current) not in (base, text_sha(text)):
        raise Conflict(
            "MEMORY.md was edited by hand while reverie was about to write it: the file is left as it is, and "
            "`reverie sync` (or the next dream) takes the edit in"
        )
    ctx.files.write(user, path, text)
    listed = {f.id: _line(f) for f in facts}
    dropped = {} if dream or previous is None else {
        i: line for i, line in previous.listed_since_dream().items() if i not in listed}
    if dropped:  # a fact deleted for good leaves no line behind it
        dropped = {i: line for i, line in dropped.items() if i in ctx.store.get_facts(dropped)}
    snapshot = Snapshot(
        sha=text_sha(text),
        dreamed_at=dreamed_at,
        facts=listed,
        uses={f.id: f.uses for f in facts},
        profile={k: s.summary for k, s in profile.sections().items() if s.summary},
        dropped=dict(list(dropped.items())[-DROPPED_KEPT:]),
        refused=[*([] if dream or previous is None else previous.refused),
                 *(r.kept() for r in refused or [] if r.content)][-REFUSED_KEPT:],
    )
    ctx.store.set_meta(SNAPSHOT.format(user=user), snapshot.model_dump_json())
    return path


def memory_md_view(ctx: Context, user: str) -> str:
    """MEMORY.md as a reader should see it: the file, or before the first dream, the profile
    and the consolidated facts rendered the same way (nothing is written)."""
    text = ctx.files.read(user, memory_md_path(ctx, user))
    if text is not None:
        return text
    facts = ctx.store.list_facts(user, status="consolidated")
    return render_memory_md(user, ctx.store.get_profile(user), facts, "")


def refresh_memory_md(ctx: Context, user: str) -> None:
    """After maintenance: the same curated entries, following merges, if MEMORY.md exists."""
    snapshot = load_snapshot(ctx, user)
    if snapshot is None or not ctx.files.exists(user, memory_md_path(ctx, user)):
        return
    pool = {f.id: f for f in ctx.store.list_facts(user, status=("pending", "consolidated", "archived"))}
    facts = [follow(pool[i], pool) for i in snapshot.facts if i in pool]
    publish_memory_md(ctx, user, list({f.id: f for f in facts if f.status != "archived"}.values()))


def _line(fact: Fact) -> MemoryLine:
    return MemoryLine(fact_id=fact.id, content=fact.content, category=fact.category, area=_area(fact))


def heading_title(fact: Fact) -> str:
    """The heading MEMORY.md lists ``fact`` under: "Identity", "Preferences / Tools"."""
    title = CATEGORY_TITLES.get(fact.category, "Other")
    return f"{title} / {_area(fact)}" if fact.category == "preference" else title


def _area(fact: Fact) -> str | None:
    return (fact.area or "General") if fact.category == "preference" else None


def render_memory_md(user: str, profile: Profile, facts: list[Fact], dreamed_at: str) -> str:
    now = utcnow()
    when = f", last distilled on {dreamed_at}" if dreamed_at else ""
    out = [
        f"# Memory of {user}",
        "",
        f"What reverie keeps about {user} for the long term{when}: {plural(len(facts), 'entry', 'entries')}. "
        "[Nx] counts how often an entry was used.",
        "Edit freely: change, add or delete lines under a heading. `reverie sync` (and the next dream) "
        "takes your edits in; keep the `<!-- fact_… -->` marker at the end of each line.",
        "",
    ]
    sections = [(PROFILE_LABELS[k], s.summary) for k, s in profile.sections().items() if s.summary]
    if sections:
        out += ["## Profile", "", *(f"- **{label}:** {_inline(text)}" for label, text in sections), ""]
    for category, title in CATEGORY_TITLES.items():
        group = sorted((f for f in facts if f.category == category), key=lambda f: -fact_rank(f, now))
        if not group:
            continue
        out += [f"## {title}", ""]
        if category != "preference":
            out += [*(_entry(f) for f in group), ""]
            continue
        for area in AREAS:
            lines = [_entry(f) for f in group if _area(f) == area]
            if lines:
                out += [f"### {area}", "", *lines, ""]
    return "\n".join(out).rstrip() + "\n"


def _inline(text: str) -> str:
    return normalize_space(text).replace("<!--", "<!- -")


def _entry(fact: Fact) -> str:
    return f"- [{fact.uses}x] {_inline(fact.content)} <!-- {fact.id} -->"


def parse_memory_md(text: str) -> tuple[list[MemoryLine], dict[str, str], list[str]]:
    """The entry lines (with the category of their heading), the profile lines of MEMORY.md,
    and the lines of text under a heading that are no list item (not taken in: said)."""
    parsed = read_memory_md(text)
    return parsed.lines, parsed.profile, parsed.loose


def read_memory_md(text: str) -> "ParsedMemoryMd":
    """MEMORY.md as :func:`parse_memory_md` reads it, with what it says of each heading not
    read as written (``notes``)."""
    parsed = ParsedMemoryMd()
    for raw in text.splitlines():
        parsed.read(raw.strip())
    return parsed


_KNOWN = ", ".join(["Profile", *CATEGORY_TITLES.values()])


class ParsedMemoryMd:
    """MEMORY.md read a line at a time: its entries under their headings, its profile lines, the
    text that is no list item, and what was said of a heading not read as written."""

    def __init__(self) -> None:
        self.lines: list[MemoryLine] = []
        self.profile: dict[str, str] = {}
        self.loose: list[str] = []
        self.notes: list[str] = []
        self.category: str | None = None
        self.area: str | None = None
        self.placed = ""  # why the lines under the current heading go elsewhere

    def read(self, line: str) -> None:
        if _H1.match(line):
            self.category = None
            return
        tight = _TIGHT.match(line)
        if tight:  # "##Habits": read as "## Habits", and said
            written = line
            line = f"{tight['marks']} {tight['title']}"
            self.notes.append(f"read “{written}” as the heading “{line}” (a heading needs a space after its #s)")
        if heading := _H2.match(line):
            title = heading.group(1)
            self.category, self.area, self.placed = _category_of(title), None, ""
            if self.category == "other" and title.strip().casefold() != "other":
                self.placed = f"written under “## {title}”, no heading of MEMORY.md"
                self.notes.append(f"“## {title}” is no heading of MEMORY.md, so its lines went under Other; to file "
                                  f"them elsewhere, put them under one of its headings: {_KNOWN}")
            return
        if heading := _H3.match(line):
            title = heading.group(1)
            self.area = next((a for a in AREAS if a.casefold() == title.casefold()), None)
            if self.area is None and self.category == "preference":
                self.notes.append(f"“### {title}” is no area of Preferences, so its lines went under General; its "
                                  f"areas: {', '.join(AREAS)}")
                self.placed = f"written under “### {title}”, no area of Preferences"
            elif self.category == "preference":
                self.placed = ""
            return
        bullet = _BULLET.match(line)
        if bullet is None or self.category is None:
            if bullet is None and self.category is not None and line and not line.startswith("<!--"):
                self.loose.append(line)
            return
        body = normalize_space(bullet["body"])
        if self.category == "profile":
            found = _PROFILE_LINE.match(body)
            section = _LABEL_SECTION.get(found["label"].strip().casefold()) if found else None
            if found and section:
                self.profile[section] = found["text"].strip()
            elif body:  # a line a person added that is no section ("- I am vegetarian"): a fact
                plain = f"{found['label'].strip()}: {found['text'].strip()}" if found else body
                self.lines.append(MemoryLine(
                    fact_id=bullet["id"], content=plain, category="other",
                    placed="written under Profile, naming no profile section"))
        elif body:
            self.lines.append(MemoryLine(fact_id=bullet["id"], content=body, category=self.category,
                                         area=(self.area or "General") if self.category == "preference" else None,
                                         placed=self.placed))


def _category_of(title: str) -> str:
    key = title.strip().casefold()
    if key == "profile":
        return "profile"
    if key in _TITLE_CATEGORY:
        return _TITLE_CATEGORY[key]
    singular = key.removesuffix("s")
    return singular if singular in CATEGORIES else "other"


# ---------------------------------------------------------------- sync: a person's edits of MEMORY.md

class DuplicateLine(Model):
    """A line added to MEMORY.md that says what a fact already says: no new fact, but merged into
    that one, which keeps its [Nx] (an edit is no use of it)."""

    content: str  # the line as written
    fact: FactLine  # the fact it repeats, the one line MEMORY.md now shows for both


class ProfileLine(Model):
    """A profile line of MEMORY.md a person added, changed or deleted (which empties its section)."""

    section: str  # user.personalContext
    label: str  # Personal Context, as MEMORY.md shows it
    change: Literal["added", "changed", "deleted"]
    before: str = ""
    after: str = ""


class MovedLine(Model):
    """An entry under another heading than before (or than the one it was written under)."""

    fact_id: str
    content: str
    to: str  # the heading it is under now: "Other", "Preferences / Tools"
    why: str = ""  # why it is not under the heading it was written under ("" when it is)
    reworded: bool = False  # its words were edited too

    def told(self, what: str) -> str:
        """What a sync did to the line (``what``: "added", "changed", "edited"), with where it
        went and why: "added under Other (...)", "changed and moved to Habits"."""
        why = f" ({self.why})" if self.why else ""
        if what == "added":
            return f"added under {self.to}{why}"
        return f"{f'{what} and moved' if self.reworded else 'moved'} to {self.to}{why}"


class SyncReport(Model):
    edited: list[FactLine] = Field(default_factory=list)
    added: list[FactLine] = Field(default_factory=list)
    deleted: list[FactLine] = Field(default_factory=list)
    # facts a new line took the place of (another value of the same slot: "Lives in Porto"
    # for "Lives in Berlin"), archived with a link to it, as learning does
    superseded: list[FactLine] = Field(default_factory=list)
    # lines added that repeat a fact (a line copied, a known fact written again): merged into it, not added
    duplicates: list[DuplicateLine] = Field(default_factory=list)
    profile: list[str] = Field(default_factory=list)
    # the same profile lines, each with what was done to it (a line deleted empties its section)
    profile_lines: list[ProfileLine] = Field(default_factory=list)
    # entries now under another heading: an edited line moved by hand, or a line (edited or
    # added) written under a heading MEMORY.md does not know, with why it went elsewhere
    moved: list[MovedLine] = Field(default_factory=list)
    # the headings not read as written ("## My goals": its lines go under Other; "##Habits": read
    # as "## Habits"), each said with why
    headings: list[str] = Field(default_factory=list)
    # sections longer than max_profile_chars: their newest parts were kept, this many gave way
    profile_trimmed: dict[str, int] = Field(default_factory=dict)
    # lines not taken in, each with why (a line longer than max_fact_chars): the line as
    # written is here, since MEMORY.md is written again from the store
    refused: list[RefusedLine] = Field(default_factory=list)
    journal: str | None = None
    # of a saved edit (save_memory_md): the sha256 of MEMORY.md as this edit left it, read in the
    # same step (the base of the next edit: read after, it could be another edit's)
    sha: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.edited or self.added or self.deleted or self.superseded or self.duplicates or self.profile)


def sync(ctx: Context, *, user: str) -> SyncReport:
    """Take a person's edits of MEMORY.md into the store: an edited line changes its fact,
    a new line becomes a fact (category from its heading), or is merged into the fact it
    repeats (said in ``duplicates``; an edit is no use of the fact), a deleted line archives its
    fact. Lines are matched by their ``<!-- fact_… -->`` marker (or, without one, by text)
    against what reverie last wrote; a missing file changes nothing."""
    path = memory_md_path(ctx, user)
    snapshot = load_snapshot(ctx, user)
    report = SyncReport()
    text = ctx.files.read_edit(user, path)
    if text is None:
        return report
    if snapshot is None:
        # a MEMORY.md reverie never wrote (by hand before the first dream, or the only copy
        # left of a lost store): every line in it is new
        snapshot = Snapshot(sha="")
    if text_sha(text) == snapshot.sha:
        return report
    if not text.strip() and snapshot.facts:
        # an emptied file is far likelier damage (a failed save, a full disk) than a person
        # deleting every entry at once: taken as nothing, and written again from the store
        report.refused.append(RefusedLine(
            content="", reason="MEMORY.md was empty: read as damage, not as deleting every entry, and written again "
                               "from the store (forget entries to delete them)"))
        kept = [f for f in ctx.store.get_facts(snapshot.facts).values() if f.status != "archived"]
        publish_memory_md(ctx, user, kept, read=text_sha(text))
        return report
    parsed = read_memory_md(text)
    lines, profile, loose = parsed.lines, parsed.profile, parsed.loose
    report.headings = parsed.notes
    report.refused += [RefusedLine(content=line, reason="not a list item: an entry is a line that starts with '- '")
                       for line in loose]
    journal = Journal(user=user, action="sync")
    with ctx.store.transaction():
        journal.watch_profile(ctx.store)
        curated = _SyncEdits(ctx, user, snapshot.facts, journal, report).apply(lines)
        now = utcnow()
        for section in sorted(set(snapshot.profile) | set(profile)):
            new = normalize_space(redact(profile.get(section, "")))
            if new != snapshot.profile.get(section, ""):
                new = fit_section(section, new, ctx.settings.max_profile_chars, report.profile_trimmed)
                ctx.store.put_profile_section(user, section, new, now)
                report.profile.append(section)
                old = snapshot.profile.get(section, "")
                report.profile_lines.append(ProfileLine(
                    section=section, label=PROFILE_LABELS.get(section, section), before=old, after=new,
                    change="deleted" if not new else "added" if not old else "changed"))
                _retire_contradicted(ctx, user, _parts(new) - _parts(snapshot.profile.get(section, "")), report, now)
        note_trimmed(ctx.store, user, report.profile_trimmed, now)
        report.journal = journal.id if journal.commit(ctx.store).changes else None
    publish_memory_md(ctx, user, curated, read=text_sha(text), refused=report.refused)
    return report


def _parts(section: str) -> set[str]:
    """A profile section's parts ("Lives in Lisbon; Works as a nurse")."""
    return {p.strip() for p in section.split(";") if p.strip()}


def _retire_contradicted(ctx: Context, user: str, written: set[str], report: SyncReport, now: datetime) -> None:
    """Archive the facts every agent sees that a person's new profile line says otherwise
    ("Lives in Lisbon" written over "Lives in Porto": the fact "Lives in Porto" went on being
    recalled beside it), listed as ``superseded``."""
    for part in sorted(written):
        for old in ctx.facts.comparable(Fact(user=user, content=part)):
            if old.agent is not None or stored_relation(part, old.content, ctx.settings.duplicate_jaccard) != "conflict":
                continue
            fact = ctx.store.get_fact(old.id)
            if fact is not None and fact.status != "archived" and not keyed(fact):
                ctx.facts.archive_fact(fact, f"contradicted by the profile as edited in MEMORY.md: {part}", None, now)
                report.superseded.append(fact_line(fact))


def save_memory_md(ctx: Context, *, user: str, text: str, base: str | None = None) -> SyncReport:
    """Write a person's edited MEMORY.md and take it in with :func:`sync` (journaled). ``base``
    is the ``text_sha`` of the text the edit started from: if MEMORY.md changed since (a dream
    ran), nothing is written and Conflict says so, so that an old page never undoes a dream."""
    if not isinstance(text, str):
        raise InvalidInput("text must be the whole of MEMORY.md", field="text")
    check_unicode(text, "text")
    path = memory_md_path(ctx, user)
    # the check of base, the write and its sync are one step: of two edits from one base, one
    # is taken and the other is a Conflict that changed nothing (in every process of the store)
    with ctx.store.transaction():
        ctx.store.lock_user(user)
        current = ctx.files.read(user, path)
        if current is None or load_snapshot(ctx, user) is None:
            raise Conflict("there is no MEMORY.md to edit yet: the first dream writes it")
        if base is not None and base != text_sha(current):
            raise Conflict("MEMORY.md changed since this edit began (a dream or another edit); reload it and edit again")
        ctx.files.write(user, path, text.replace("\r\n", "\n"))
        report = sync(ctx, user=user)
        left = ctx.files.read(user, path)
        report.sha = text_sha(left) if left else None
        return report


class _SyncEdits:
    def __init__(self, ctx: Context, user: str, base: dict[str, MemoryLine], journal: Journal, report: SyncReport):
        self.ctx, self.user, self.base, self.journal, self.report = ctx, user, base, journal, report
        store = ctx.store
        self.known = store.get_facts(base)
        journal.watch([*self.known.values(), *store.list_facts(user)])
        self.by_text = {exact_key(_inline(line.content)): fid for fid, line in base.items()}
        self.now = utcnow()

    def apply(self, lines: list[MemoryLine]) -> list[Fact]:
        fids = [line.fact_id if line.fact_id in self.base else self.by_text.get(exact_key(line.content))
                for line in lines]
        # a fact's line is the first with its marker, else the first with its text: of a line copied
        # (marker and all, or without it) the copy is the new line, wherever it stands
        own: dict[str, int] = {}
        for i in sorted(range(len(lines)), key=lambda i: lines[i].fact_id not in self.base):
            fid = fids[i]
            if fid is not None and fid in self.known:
                own.setdefault(fid, i)
        # the kept lines are taken in first: a new line is judged against what they say now
        taken = {i: self._edit(self.known[fid], self.base[fid], lines[i]) for fid, i in own.items()}
        for i, (line, fid) in enumerate(zip(lines, fids)):
            if i in taken or (fid in self.base and fid not in self.known):
                continue  # (deleted for good since MEMORY.md was written: its stale line must not bring it back)
            fact = self._add(line)
            if fact is not None:
                taken[i] = fact
        seen: dict[str, Fact] = {}
        for i in sorted(taken):
            seen.setdefault(taken[i].id, taken[i])
        for fid, fact in self.known.items():
            if fid not in seen and fact.status != "archived":
                self.ctx.facts.archive_fact(fact, "deleted from MEMORY.md by hand", None, self.now)
                self.report.deleted.append(fact_line(fact))
        self._withdraw()
        return [f for f in seen.values() if f.status != "archived"]

    def _withdraw(self) -> None:
        """Put the deleted lines on the record of lines a person deleted, and journal what the
        record said of each before (undo puts it back)."""
        if not self.report.deleted:
            return
        record = {e["key"]: e for e in withdrawn_record(self.ctx.store, self.user)}
        for line in self.report.deleted:
            key = _key_digest(line.content)
            self.journal.withdrawn.append({"fact": line.fact_id, "key": key, "at": self.now.isoformat(),
                                           "before": record.get(key)})
        note_withdrawn(self.ctx.store, self.user, [f.content for f in self.report.deleted], self.now)

    def _too_long(self, content: str) -> bool:
        limit = self.ctx.settings.max_fact_chars
        if len(content) <= limit:
            return False
        self.report.refused.append(RefusedLine(
            content=content,
            reason=f"{len(content):,} characters; a fact is one line of at most {limit:,} (max_fact_chars): "
                   "store long text as knowledge or as a conversation"))
        return True

    def _edit(self, fact: Fact, before: MemoryLine, line: MemoryLine) -> Fact:
        content = clean_line(line.content)
        content = content if shows_something(content) else ""
        # unchanged: the line as MEMORY.md wrote it (a "<!--" inside a fact is written defanged)
        unchanged = content in (before.content, clean_line(_inline(before.content)))
        if not content or self._too_long(content) or (unchanged and line.category == before.category and line.area == before.area):
            return fact
        fact.content = content
        if line.category != before.category:
            fact.category, fact.original_category = normalize_category(line.category)
        fact.area = line.area if fact.category == "preference" else None
        if (fact.category, _area(fact)) != (before.category, before.area):
            self.report.moved.append(MovedLine(fact_id=fact.id, content=content, to=heading_title(fact),
                                               why=line.placed, reworded=not unchanged))
        fact.status = "consolidated"  # a person's edit is the newest word on it
        fact.updated_at = self.now
        self.ctx.facts.index_fact(fact, fact.tags)
        self.report.edited.append(fact_line(fact))
        return fact

    def _add(self, line: MemoryLine) -> Fact | None:
        content = clean_line(line.content)
        content = content if shows_something(content) else ""
        if not content or self._too_long(content):
            return None
        fact = Fact(user=self.user, content=content, category=line.category, area=line.area, confidence=1.0,
                    status="consolidated", provenance=Provenance(origin="sync"),
                    created_at=self.now, updated_at=self.now)
        near = [f.id for f in self.ctx.facts.comparable(fact)]  # what the judge reads it against
        stored = self.ctx.facts.add_fact(TagWriter(self.ctx.store, self.user), fact, [], use=False)
        if stored is not fact:
            if stored.status == "pending":
                stored.status = "consolidated"  # a person wrote it down: promote the fact it repeats
                self.ctx.store.put_fact(stored)
            self.report.duplicates.append(DuplicateLine(content=content, fact=fact_line(stored)))
            return stored
        self.journal.created(fact)
        if line.placed:
            self.report.moved.append(MovedLine(fact_id=fact.id, content=content, to=heading_title(fact),
                                               why=line.placed))
        self.report.superseded += [fact_line(old) for old in self.ctx.store.get_facts(near).values()
                                   if old.status == "archived" and old.superseded_by == fact.id]
        self.report.added.append(fact_line(fact))
        return fact


# ---------------------------------------------------------------- lines a person took out

# the lines a person deleted (from MEMORY.md, or forgot), newest last: [{"content", "key",
# "at"}], "key" the digest of the line's exact_key; a dream does not write one of them back
# from notes older than the deletion
WITHDRAWN_META = "withdrawn:{user}"
WITHDRAWN_KEPT = 200


def note_withdrawn(store: Store, user: str, contents: list[str], at: datetime, *, keep_text: bool = True) -> None:
    """Remember lines a person deleted (inside the caller's transaction). ``keep_text=False``
    (deleted for good): only their digests are kept, and an earlier deletion of the same
    line keeps no text either."""
    merge_withdrawn(store, user, [{"content": c if keep_text else "", "key": _key_digest(c), "at": at.isoformat()}
                                  for c in contents])


def withdrawn(store: Store, user: str) -> list[tuple[str, str, datetime]]:
    """The lines a person deleted (the last :data:`WITHDRAWN_KEPT`): (content, or "" for one
    deleted for good; the digest of its :func:`exact_key`; when)."""
    return [(str(w.get("content", "")), str(w.get("key", "")), _at(w)) for w in withdrawn_record(store, user)]


def withdrawn_like(deleted: list[tuple[str, str, datetime]], content: str, duplicate_at: float) -> datetime | None:
    """When a person last deleted (of ``deleted``, :func:`withdrawn`'s list) a line that says
    what ``content`` says, else None."""
    key = _key_digest(content)
    found = [at for text, digest_, at in deleted
             if digest_ == key or (text and stored_relation(content, text, duplicate_at) == "duplicate")]
    return max(found, default=None)


def withdrawn_record(store: Store, user: str) -> list[dict[str, str]]:
    """The record of the lines a person deleted, as stored: [{"content", "key", "at"}], newest
    last (what an export carries)."""
    raw = store.get_meta(WITHDRAWN_META.format(user=user))
    return list(json.loads(raw)) if raw else []


def merge_withdrawn(store: Store, user: str, entries: list[dict[str, str]]) -> None:
    """Add deleted lines (``entries``: {"content", "key", "at"}; another home's, from an
    import) to ``user``'s record (inside the caller's transaction): one entry per line, its
    latest deletion, the newest WITHDRAWN_KEPT. A line once deleted for good (no text) keeps
    no text."""
    if not entries:
        return
    merged: dict[str, dict[str, str]] = {}
    for entry in [*withdrawn_record(store, user), *entries]:
        known = merged.get(entry["key"])
        if known is None or _at(entry) >= _at(known):
            forgotten = known is not None and not known.get("content")
            merged[entry["key"]] = {**entry, "content": "" if forgotten else entry.get("content", "")}
    _save_withdrawn(store, user, merged.values())


def unwithdraw(store: Store, user: str, fact: Fact, journal: Journal) -> None:
    """Take ``fact``'s line off the record of lines a person deleted, as a person restoring it
    says the line holds again (inside the caller's transaction; journaled: undo puts the
    entry back). A line deleted for good stays on it."""
    record = {e["key"]: e for e in withdrawn_record(store, user)}
    key = _key_digest(fact.content)
    entry = record.get(key)
    if entry is None or not entry.get("content"):
        return
    journal.withdrawn.append({"fact": fact.id, "key": key, "at": entry["at"], "before": entry, "removed": True})
    del record[key]
    _save_withdrawn(store, user, record.values())


def restore_withdrawn(store: Store, user: str, undone: list[dict[str, Any]]) -> None:
    """Take back what an operation put on the record of deleted lines (``undone``: its
    :attr:`Journal.withdrawn`, inside the caller's transaction): each entry it wrote goes back to
    the one before it, or off the record, and each it took off (a restore) goes back on. An entry
    deleted again since, or for good, stays."""
    if not undone:
        return
    record = {e["key"]: e for e in withdrawn_record(store, user)}
    for entry in undone:
        if entry.get("removed"):  # taken off by a restore: back on, unless deleted again since
            if entry["key"] not in record and entry.get("before"):
                record[entry["key"]] = entry["before"]
            continue
        now = record.get(entry["key"])
        if now is None or not now.get("content") or _at(now) != _at(entry):
            continue
        earlier = entry.get("before")
        if earlier:
            record[entry["key"]] = earlier
        else:
            del record[entry["key"]]
    _save_withdrawn(store, user, record.values())


def _save_withdrawn(store: Store, user: str, entries: Iterable[dict[str, str]]) -> None:
    """Write the record of deleted lines: oldest first, the newest WITHDRAWN_KEPT."""
    kept = sorted(entries, key=_at)[-WITHDRAWN_KEPT:]
    store.set_meta(WITHDRAWN_META.format(user=user), json.dumps(kept, ensure_ascii=False))


def _at(entry: dict[str, str]) -> datetime:
    return as_utc(datetime.fromisoformat(entry["at"]))


def _key_digest(content: str) -> str:
    return hashlib.sha256(exact_key(content).encode("utf-8")).hexdigest()[:32]
