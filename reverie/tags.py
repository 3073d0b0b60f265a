"""The feature-tag engine (seed 003): dictionary, relations, lifecycle, expansion.

Two sides with different rights:

* ``expand`` is the recall line's view: read-only. A query word that is not a
  tag never becomes one; merged tags redirect; deprecated tags never match;
  synonyms expand up to 3 hops, related tags 1 hop, loose relations never.
* ``TagWriter`` is the learning line's: the only code that creates tags,
  activates or deprecates them, and writes relations (both ways, upgrade-only,
  no self-loops, never creating a tag). Merging is a person's explicit command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping

from reverie.errors import InvalidInput, NotFound
from reverie.inputs import LABEL_MAX
from reverie.models import RelationLevel, Tag, TagDimension, TagRelation, utcnow
from reverie.redact import redact_label
from reverie.store.base import Store, TagState
from reverie.text import STOPWORDS, has_cjk

SYNONYM_HOPS = 3
MERGE_HOPS = 3
LEVEL_ORDER: dict[str, int] = {"loose": 0, "related": 1, "synonym": 2}
# how strongly an expanded tag still points at the query's meaning
SYNONYM_DECAY = 0.85
RELATED_WEIGHT = 0.5

# generic words that can never point at a class of memory (extendable)
GENERIC_TAGS: set[str] = {
    "thing", "things", "stuff", "time", "day", "days", "people", "person", "something", "anything",
    "everything", "way", "lot", "question", "problem", "issue", "today", "yesterday", "tomorrow",
    "week", "month", "year", "good", "great", "nice", "new", "old", "other", "idea", "work", "life",
    "事情", "东西", "时候", "问题", "今天", "昨天", "明天", "人", "我们", "大家", "一下", "工作", "生活",
}


@lru_cache(maxsize=16384)
def normalize_tag(name: str) -> str:
    """One spelling per tag: lower case, single spaces, a plain plural folded.

    "Code-Review", "code review" and "code reviews" all become "code review";
    "postgres" and "class" stay as they are.
    """
    # control characters (a NUL from an engine) separate words, as blanks do
    text = re.sub(r"[\s_\-\x00-\x1f\x7f]+", " ", name.strip().lower()).strip(" .,;:!?\"'#")
    if not text or has_cjk(text):
        return text
    parts = text.split(" ")
    last = parts[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is", "es")):
        parts[-1] = last[:-1]
    return " ".join(parts)


def is_generic(name: str) -> bool:
    norm = normalize_tag(name)
    return not norm or norm in GENERIC_TAGS or norm in STOPWORDS or (len(norm) < 2) or norm.isdigit()


def usable_tags(tags: list[str]) -> list[str]:
    """A person's tags, each one that could match: a tag too generic to tell memories apart,
    or one holding a secret, would be dropped without a word, so it is refused, named."""
    for tag in tags:
        if is_generic(tag):
            raise InvalidInput(f"tag {tag!r} is too generic to tell memories apart (a common word, a number or "
                               "one letter); name the thing itself, e.g. 'billing', 'kyoto trip'", field="tags")
        if redact_label(tag) != tag:
            raise InvalidInput("a tag holds what looks like personal data (an email, a number, a key): "
                               "tags are kept as they are, so it is refused", field="tags")
    return tags


@dataclass(slots=True)
class Expansion:
    """The tags a query reaches, each with a strength and the query tag that led to it."""

    weights: dict[str, float] = field(default_factory=dict)
    via: dict[str, str] = field(default_factory=dict)

    def add(self, tag: str, weight: float, origin: str) -> None:
        if weight > self.weights.get(tag, 0.0):
            self.weights[tag] = weight
            self.via[tag] = origin


def tag_keys(names: Iterable[str]) -> list[str]:
    """The tag names ``names`` may be (normalized, each once): what :func:`resolve` reads."""
    return list(dict.fromkeys(key for key in map(normalize_tag, names) if key))


def resolve(
    store: Store, user: str, names: list[str], *, found: Mapping[str, TagState] | None = None,
) -> dict[str, str]:
    """Map query names to live tag names: merged tags redirect (cycle-safe, <= 3 hops),
    deprecated and unknown names drop out. ``found``: the states of :func:`tag_keys` of
    ``names``, where the caller read them already."""
    wanted = tag_keys(names)
    if found is None:
        found = store.tag_states(user, wanted)
    out: dict[str, str] = {}
    for norm in wanted:
        name, tag, seen = norm, found.get(norm), set()
        for _ in range(MERGE_HOPS):
            if tag is None or tag.status != "merged" or not tag.merged_to or name in seen:
                break
            seen.add(name)
            name = tag.merged_to
            tag = store.tag_states(user, [name]).get(name)
        if tag is not None and tag.status in ("active", "unexamined"):
            out[norm] = name
    return out


def expand(
    store: Store, user: str, names: list[str], *, roots: Mapping[str, str] | None = None,
    weak: Mapping[str, str] | None = None, weak_weight: float = 0.0,
) -> Expansion:
    """The recall line's tag expansion (read-only). ``roots``: what :func:`resolve` gave for
    ``names``, where the caller has it. ``weak``: tags that lead to memories less strongly
    than the query's own (tag -> the item it came from), added at ``weak_weight`` after the
    relations are followed, and read live in the same read as the tags they reached."""
    expansion = Expansion()
    if roots is None:
        roots = resolve(store, user, names)
    for origin, root in roots.items():
        expansion.add(root, 1.0, origin)
    frontier = dict(expansion.weights)
    for hop in range(1, SYNONYM_HOPS + 1):
        if not frontier:
            break
        nxt: dict[str, float] = {}
        for rel in store.relations(user, frontier):
            origin = expansion.via[rel.source]
            if rel.level == "synonym":
                weight = frontier[rel.source] * SYNONYM_DECAY
                if weight > expansion.weights.get(rel.target, 0.0):
                    nxt[rel.target] = weight
                    expansion.add(rel.target, weight, origin)
            elif rel.level == "related" and hop == 1 and rel.source in roots.values():
                expansion.add(rel.target, RELATED_WEIGHT, origin)
        frontier = nxt
    for name, origin in (weak or {}).items():
        expansion.add(name, weak_weight, f"via {origin}")
    # the roots were read live by resolve(): only the tags relations or ``weak`` led to are read here
    known = set(roots.values())
    reached = [name for name in expansion.weights if name not in known]
    live = store.tag_states(user, reached) if reached else {}
    for name in reached:
        tag = live.get(name)
        if tag is None or tag.status not in ("active", "unexamined"):
            del expansion.weights[name]
            expansion.via.pop(name, None)
    return expansion


class TagWriter:
    """The learning line's tag governance. Every method runs inside the caller's transaction."""

    def __init__(self, store: Store, user: str):
        self.store = store
        self.user = user
        self.restated: dict[str, str] = {}  # name -> the status this writer gave it

    def ensure(self, names: list[str], *, dimension: TagDimension = "content") -> list[str]:
        """Tags for ``names``, creating new ones as ``unexamined``; generic words are refused
        (and an existing generic tag is deprecated). Returns the live tag names, in order."""
        return list(dict.fromkeys(self.ensure_map(names, dimension=dimension).values()))

    def ensure_each(self, groups: list[list[str]]) -> list[list[str]]:
        """:meth:`ensure` for each of several items' tag names, read and made at once."""
        live = self.ensure_map([name for names in groups for name in names])
        return [list(dict.fromkeys(live[n] for n in map(normalize_tag, names) if n in live)) for names in groups]

    def ensure_map(self, names: list[str], *, dimension: TagDimension = "content") -> dict[str, str]:
        """Like :meth:`ensure`, as a map from each normalized name to the live tag it lands on
        (itself, or the tag it was merged into)."""
        # a name that holds a secret, or runs past a label's length (an engine's answer), is no
        # feature worth keeping
        wanted = [normalize_tag(n) for n in names if len(n) <= LABEL_MAX and redact_label(n) == n]
        states = self.store.tag_states(self.user, wanted)  # a tag's whole record only where it changes
        out: dict[str, str] = {}
        for norm in dict.fromkeys(wanted):
            if not norm:
                continue
            state = states.get(norm)
            if is_generic(norm):
                if state is not None and state.status != "deprecated":
                    self.set_status(norm, "deprecated")
                continue
            if state is None:
                tag = self.store.put_tag(Tag(user=self.user, name=norm, dimension=dimension))
                state = TagState(tag.status, tag.merged_to)
            name = norm
            for _ in range(MERGE_HOPS):
                if state.status != "merged" or not state.merged_to:
                    break
                target = self.store.tag_states(self.user, [state.merged_to]).get(state.merged_to)
                if target is None:
                    break
                name, state = state.merged_to, target
            if state.status in ("active", "unexamined"):
                out[norm] = name
        return out

    def set_status(self, name: str | Tag, status: str) -> Tag:
        tag = name if isinstance(name, Tag) else self._get(name)
        tag.status = status  # type: ignore[assignment]
        tag.updated_at = utcnow()
        self.restated[tag.name] = status
        return self.store.put_tag(tag)

    def relate(self, source: str, target: str, level: RelationLevel) -> bool:
        """Write a relation both ways; only upgrades; never creates a tag; no self-loops.
        Returns whether anything changed."""
        return self.relate_all([(source, target, level)]) > 0

    def relate_all(self, relations: Iterable[tuple[str, str, RelationLevel]]) -> int:
        """:meth:`relate` for many relations in order, reading the tags and their relations
        once; returns how many changed something."""
        wanted = [(normalize_tag(a), normalize_tag(b), level) for a, b, level in relations]
        wanted = [(a, b, level) for a, b, level in wanted if a != b and level in LEVEL_ORDER]
        known = self.store.tag_states(self.user, [n for a, b, _ in wanted for n in (a, b)])
        current = self.store.relation_levels(self.user, [(a, b) for a, b, _ in wanted])
        changed = 0
        for a, b, level in wanted:
            if a not in known or b not in known:
                continue
            now = current.get((a, b))
            if now is not None and LEVEL_ORDER[now] >= LEVEL_ORDER[level]:
                continue
            self.store.put_relation(TagRelation(user=self.user, source=a, target=b, level=level))
            current[(a, b)] = current[(b, a)] = level  # written both ways
            changed += 1
        return changed

    def merge(self, old: str, new: str) -> int:
        """A person's explicit merge: postings move to ``new``; ``old`` stays as a redirect."""
        source, target = self._get(old), self._get(new)
        if source.name == target.name:
            raise InvalidInput("cannot merge a tag into itself", field="tag")
        if target.status in ("merged", "deprecated"):
            raise InvalidInput(f"cannot merge into {target.name!r}: it is {target.status}", field="tag")
        with self.store.transaction():
            moved = self.store.retag(self.user, source.name, target.name)
            source.status, source.merged_to, source.updated_at = "merged", target.name, utcnow()
            self.store.put_tag(source)
            if target.status == "unexamined":
                self.set_status(target.name, "active")
        return moved

    def _get(self, name: str) -> Tag:
        norm = normalize_tag(name)
        tag = self.store.get_tags(self.user, [norm]).get(norm)
        if tag is None:
            raise NotFound(f"no tag {name!r} for user {self.user!r}")
        return tag
