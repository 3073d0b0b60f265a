"""A profile section stays a short paragraph, however much is learned.

deer-flow's profile is a handful of 2-4 sentence summaries delivered first in every
recall. The heuristic engine adds a part to a section for each new signal ("Works as a
nurse"; "Moved to Lyon"), so without a bound a section grows with everything a user ever
said (52k characters after 100k episodes) and no recall budget can hold it. Here a section
keeps its newest whole parts within ``max_profile_chars`` on every write by the learning
line (the parts that give way are counted for ``health``; the episodes they were learned
from stay in memory), and a hand edit past the limit is refused.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable

from reverie.claims import stored_relation
from reverie.errors import InvalidInput
from reverie.store.base import Store, add_tally, meta_record
from reverie.text import exact_key, token_set

# what separates the parts of a section: the heuristic merge joins them with "; "
PROFILE_PARTS = re.compile(r"[;；。\n]|\.\s")
TRIMMED_META = "profile-trimmed:{user}"
# a part and what separates it from the next
_PART = re.compile(r"(.*?)([;；。\n]\s*|\.\s+|$)", re.S)


def fit_profile(summary: str, limit: int) -> tuple[str, int]:
    """``summary`` within ``limit`` characters: its newest (last) whole parts, as many as fit,
    and how many parts gave way (0 only when it fits as it is). A last part longer than
    ``limit`` on its own keeps its beginning, cut at a word and marked with "…" (it counts
    as one that gave way)."""
    summary = summary.strip()
    if len(summary) <= limit:
        return summary, 0
    cuts = [m.end() for m in PROFILE_PARTS.finditer(summary) if summary[m.end():].strip()]
    # the earliest cut whose tail fits keeps the most
    for cut in cuts:
        tail = summary[cut:].strip()
        if len(tail) <= limit:
            return tail, _parts(summary[:cut])
    last = cuts[-1] if cuts else 0
    part = summary[last:].strip()
    clipped = part[: limit - 1]
    if " " in clipped[limit // 2:]:
        clipped = clipped[: clipped.rindex(" ")]
    return clipped.rstrip(" ,;") + "…", _parts(summary[:last]) + 1


def fit_section(name: str, summary: str, limit: int, trimmed: dict[str, int]) -> str:
    """``summary`` fitted by :func:`fit_profile`; what gave way is added to ``trimmed[name]``
    (for :func:`note_trimmed`)."""
    fitted, gave_way = fit_profile(summary, limit)
    if gave_way:
        trimmed[name] = trimmed.get(name, 0) + gave_way
    return fitted


def check_profile_length(summary: str, limit: int, field: str, advice: str) -> None:
    """InvalidInput naming ``field`` when ``summary`` is past ``limit`` (max_profile_chars)."""
    size = len(summary.strip())
    if size > limit:
        raise InvalidInput(f"{field} is {size} characters; a profile section is at most {limit} (max_profile_chars)"
                           f"{advice}", field=field)


def _parts(text: str) -> int:
    return sum(1 for p in PROFILE_PARTS.split(text) if p.strip())


def trimmed_record(store: Store, user: str) -> dict[str, Any]:
    """What gave way in ``user``'s profile so far: {"parts": total, "last_at", "sections": {name: parts}}."""
    return meta_record(store, TRIMMED_META.format(user=user))


def note_trimmed(store: Store, user: str, trimmed: dict[str, int], now: datetime) -> None:
    """Count the parts that gave way (inside the caller's transaction)."""
    add_tally(store, TRIMMED_META.format(user=user), trimmed, now, total="parts", by="sections")


def drop_outdated_parts(
    store: Store, user: str, *, gone: list[str], newer: list[str], duplicate_at: float, now: datetime,
) -> list[str]:
    """The profile describes the user as they are now: a part that says what a fact taken
    back said (``gone``: forgotten, deleted by hand, contradicted) or that a newer fact
    contradicts (``newer``) leaves its section (inside the caller's transaction). Returns the
    sections changed. Cheap when nothing relates: a part is judged only against facts it
    shares a word with."""
    if not gone and not newer:
        return []
    gone_keys = [(exact_key(g), token_set(g), g) for g in gone]
    newer_words = [(token_set(n), n) for n in newer]
    changed = []
    for name, section in store.get_profile(user).sections().items():
        if not section.summary:
            continue
        kept, dropped = [], False
        for found in _PART.finditer(section.summary):
            part, gap = found.group(1), found.group(2)
            if not part.strip() and not gap:
                continue
            if part.strip() and _outdated(part, gone_keys, newer_words, duplicate_at):
                dropped = True
                continue
            kept.append(part + gap)
        if dropped:
            store.put_profile_section(user, name, "".join(kept).strip().rstrip(";；").strip(), now)
            changed.append(name)
    return changed


def rewrite_new_parts(summary: str, was: str, rewrite: Callable[[str], str]) -> str:
    """``summary`` with ``rewrite`` applied to each part ``was`` (the section before) does not
    hold: a section's older parts keep their words."""
    old = {found.group(1).strip() for found in _PART.finditer(was)}
    return "".join((part if part.strip() in old else rewrite(part)) + gap
                   for found in _PART.finditer(summary) for part, gap in [found.groups()])


def _outdated(part: str, gone: list[tuple[str, frozenset[str], str]], newer: list[tuple[frozenset[str], str]],
              duplicate_at: float) -> bool:
    words, key = token_set(part), exact_key(part)
    for gone_key, gone_words, text in gone:
        if gone_words & words and (gone_key in key or stored_relation(part, text, duplicate_at) == "duplicate"):
            return True
    return any(new_words & words and stored_relation(part, text, duplicate_at) == "conflict"
               for new_words, text in newer)
