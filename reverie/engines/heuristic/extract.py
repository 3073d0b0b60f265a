"""Extract: the durable facts and profile lines a turn's user messages carry.

Each user message is read clause by clause into signals (signals.py); a signal that a
stored fact already says reinforces it, one that takes a stored fact back removes it
(the judge in :mod:`reverie.claims`), and the rest become new facts. Signals of a profile
section are merged into that section's summary, where a contradicted part gives way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone

from reverie.claims import JOINED_NAME, JOINED_WHEN, Claim, contradicts, corrects_value, fact_relation, judge_keys, parse_claim
from reverie.engines.base import (
    Extraction,
    ExtractRequest,
    FactRef,
    FactRemoval,
    NewFact,
    SectionUpdate,
)
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.phrases import analyze, keyphrases, rank
from reverie.engines.heuristic.signals import Signal, sentence_signals
from reverie.engines.heuristic.words import overlap, sentences
from reverie.models import AGENT_ROLES, AREAS, Message, Profile, speaks_for_profile
from reverie.profiles import PROFILE_PARTS
from reverie.text import has_cjk, jaccard, stem, term_set
from reverie.timerefs import resolve_time_refs

_AREA_INDEX: dict[str, str] = {stem(w): area for area, ws in lx.AREA_WORDS.items() for w in ws}


def _area(content: str, category: str) -> str | None:
    if category == "cognitive":
        return "Communication"
    if category not in ("preference", "constraint", "behavior"):
        return None
    counts: dict[str, int] = {}
    for s in term_set(content):
        area = _AREA_INDEX.get(s)
        if area:
            counts[area] = counts.get(area, 0) + 1
    if not counts:
        return "General"
    return min(counts, key=lambda a: (-counts[a], AREAS.index(a)))


# a profile line that says one of these holds one value at a time: a new one takes the place
# of the old ("Works as a nurse" gives way to "Works as a pilot"; the facts keep both)
_ONE_VALUE = ("works as ", "works at ", "works for ", "lives in ", "is based in ", "name is ")
# the same in Chinese: "在腾讯工作" gives way to "在字节跳动工作", "住在上海" to "住在北京"
_ONE_VALUE_ZH = (("employer", re.compile(r"在[^，,；;]+?(?:工作|上班|任职)$")), ("home", re.compile(r"住在")),
                 ("name", re.compile(r"(?:叫|名字是)")))
# the profile says what is ("only when there is durable new evidence"): "Worked in the garden
# with Ana" or "Worked at Google" tells of the past, and a past-tense line with a date of an
# event ("Founded a club last week"); both are an episode's and a fact's, not the profile's
_WAS = re.compile(r"^worked\b", re.IGNORECASE)
_PAST = re.compile(r"^(?:was|were|had|went|did|made|took|got|\w+ed)\b", re.IGNORECASE)
_ANY_DAY = datetime(2000, 1, 1, tzinfo=timezone.utc)
# a move to a place by its name: the profile says the user lives there
_MOVED = re.compile(r"^(?i:moved|relocated)\s+(?i:back\s+)?to\s+(?P<place>(?:the\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
# a new employer by its name ("Joined Acme last month"): the profile says the user works there
_JOINED = re.compile(r"^(?i:joined)\s+(?P<org>" + JOINED_NAME + r")(?:\s+(?i:" + JOINED_WHEN + r"))?\s*$")


def _one_value_slot(line: str) -> str | None:
    low = line.casefold()
    return next((slot for slot in _ONE_VALUE if low.startswith(slot)), None) or next(
        (slot for slot, pattern in _ONE_VALUE_ZH if pattern.match(line)), None)


def _not_now(line: str) -> bool:
    return bool(_WAS.match(line)) or (bool(_PAST.match(line)) and bool(resolve_time_refs(line, _ANY_DAY)))


def _same_line(a: str, b: str) -> bool:
    la, lb = a.casefold().strip(" .。"), b.casefold().strip(" .。")
    return la in lb or lb in la or jaccard(a, b) >= 0.6


def _merge_summary(existing: str, additions: list[str]) -> str:
    """The existing summary with each new line added once; nothing already said is
    repeated, and a part the new line contradicts ("Lives in Berlin" after "Lives in
    Lisbon", or another value of a one-value line such as "Works as ...") gives way to it."""
    parts = [p.strip() for p in PROFILE_PARTS.split(existing) if p.strip()]
    changed = False
    for line in additions:
        slot, claim = _one_value_slot(line), parse_claim(line)
        kept = [p for p in parts if fact_relation(line, p, 0.7) != "conflict" and (slot is None or _one_value_slot(p) != slot
                                                                                 or _same_line(line, p))
                and not (claim.group and contradicts(claim, parse_claim(p)))]  # "Left Globex" / "Works at Globex"
        if len(kept) == len(parts) and any(_same_line(line, p) for p in parts):
            continue
        parts, changed = kept + [line], True
    if not changed:
        return existing.strip()
    merged, before = "", ""
    for part in parts:
        if merged:
            # a Chinese semicolon only between two Chinese parts
            merged = merged.rstrip(" ;；") + ("；" if has_cjk(before) and has_cjk(part) else "; ")
        merged, before = merged + part, part
    return merged


def _section_updates(signals: list[Signal], own: set[int], profile: Profile) -> dict[str, SectionUpdate]:
    """The profile sections the signals at positions ``own`` (said by the user, see
    :func:`reverie.models.speaks_for_profile`) change."""
    additions: dict[str, list[str]] = {}
    for i, sig in enumerate(signals):
        if i not in own or not sig.section or sig.confidence < 0.85:
            continue
        moved = _MOVED.match(sig.content)
        joined = None if moved else _JOINED.match(sig.content)
        if moved:  # "Moved to Lisbon last month": where they live now, however long ago they moved
            additions.setdefault(sig.section, []).append(f"Lives in {moved['place']}")
        elif joined:  # "Joined Acme last month": where they work now
            additions.setdefault(sig.section, []).append(f"Works at {joined['org']}")
        elif not _not_now(sig.content):
            additions.setdefault(sig.section, []).extend(sig.canon or (sig.content,))
    updates: dict[str, SectionUpdate] = {}
    for section, lines in additions.items():
        existing = profile.section(f"user.{section}").summary
        merged = _merge_summary(existing, lines)
        if merged != existing.strip():
            updates[section] = SectionUpdate(summary=merged, shouldUpdate=True)
    return updates


def _is_user(message: Message, speakers: set[str]) -> bool:
    """Whether the user said ``message``: never the agent's lines, named or not; an unnamed
    message by its role (a turn's); a named one, when the request names the user's
    ``speakers`` (ingested multi-speaker talk), by being among them, else by its role."""
    if message.role in AGENT_ROLES:
        return False
    if message.speaker and speakers:
        return message.speaker.casefold() in speakers
    return message.role == "user"


def _fact_tags(content: str, category: str) -> list[str]:
    return keyphrases(content, 3) or [category]


# The indexes below map a key to the items that hold it as the bits of an int (bit i: the
# i-th item): a union is one "|", the positions come out in order, and an int is nothing
# for the garbage collector to track, unlike a list for each key.

def _union(index: dict[str, int], keys: Iterable[str]) -> int:
    mask = 0
    for k in keys:
        mask |= index.get(k, 0)
    return mask


def _positions(mask: int) -> Iterator[int]:
    """The positions of the bits set in ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


_TWIN = 0.6  # a line this close says the same: a twin (of a stored fact: reinforce it)


def _takes_back(new: Signal, old: Signal) -> bool:
    """Whether ``new``, said after ``old``, holds another value of what ``old`` says."""
    return (fact_relation(new.content, old.content, _TWIN) == "conflict"
            or contradicts(parse_claim(new.content, new.negated, new.replaces), parse_claim(old.content, old.negated))
            or (new.category == "correction" and corrects_value(new.content, old.content)))


def _unindex(by_term: dict[str, int], sig: Signal, at: int) -> None:
    """Takes the signal at ``at`` out of the twin index: what is said after it is no twin of it."""
    bit = 1 << at
    for t in term_set(sig.content):
        if t in by_term:
            by_term[t] &= ~bit


def _collect_signals(request: ExtractRequest) -> tuple[list[Signal], set[int], list[str], set[int]]:
    """The signals of the user's messages, twins merged (another value of the same thing is
    no twin: both stay, in the order said); the positions of those that may change the
    profile; the sentences of those messages; and the positions of the signals a later one
    took back by naming what no longer holds ("I use neovim" ... "I switched to helix, not
    neovim"): no judge of stored lines would see that the later one archives the earlier."""
    speakers = {s.casefold() for s in request.user_speakers}
    signals: list[Signal] = []
    dropped: set[int] = set()
    own: set[int] = set()
    by_term: dict[str, int] = {}  # term -> the signals that hold it (bits of their positions): a twin shares one
    said: list[str] = []
    for i, message in enumerate(request.messages):
        if not _is_user(message, speakers):
            continue
        message_said = sentences(message.content)
        said += message_said
        profiled = speaks_for_profile(message, len(speakers))
        source = request.episode_ids[i] if i < len(request.episode_ids) else message.source_id
        for sig in sentence_signals(message_said):
            terms = term_set(sig.content)
            near = [j for j in _positions(_union(by_term, terms))
                    if overlap(term_set(signals[j].content), terms) >= _TWIN]
            # a close line that says another value ("light mode" after "dark mode", "4 spaces" after
            # "2 spaces") is no twin: both are kept in the order they were said, so that the later
            # one replaces the older as it would in a later batch (the learning line archives it)
            changed = [j for j in near if _takes_back(sig, signals[j])]
            if sig.replaces:  # "I'm a teacher. Sorry, I'm a nurse": the job said before is no longer
                earlier = [j for j in range(len(signals)) if j not in changed and j not in dropped and _takes_back(sig, signals[j])]
                changed += earlier
                dropped.update(earlier)
            taken_back = term_set(sig.negated) if sig.negated else frozenset()
            if taken_back:  # ... and a line that names what it takes back takes back any that said it
                changed += [j for j in _positions(_union(by_term, taken_back))
                            if j not in changed and j not in dropped and _takes_back(sig, signals[j])]
                dropped.update(j for j in changed if taken_back <= term_set(signals[j].content))
            for j in changed:
                _unindex(by_term, signals[j], j)
            at = next((j for j in near if j not in changed), None)
            if at is None:
                at, target = len(signals), sig
                bit = 1 << at
                for t in terms:
                    by_term[t] = by_term.get(t, 0) | bit
                signals.append(sig)
            else:
                target = signals[at]  # a twin
                target.confidence = max(target.confidence, sig.confidence)
            if profiled:
                own.add(at)
            if source and source not in target.sources:
                target.sources.append(source)
    return signals, own, said, dropped


# what one eats and the diet one keeps: claims of two groups that may take each other back
_EATING = {"consume": "diet", "diet": "consume"}


class _StoredFacts:
    """The request's stored facts, read as claims and indexed, so that a signal is judged
    only against the facts it could relate to, in their order.

    A fact can be a twin (overlap >= 0.6) only if it shares a term; :func:`fact_relation`
    judges only lines that share a :func:`judge_keys` key; :func:`contradicts` holds only
    for a fact that holds all the terms a correction takes back, or one of the same claim
    group with an object.
    """

    def __init__(self, facts: list[FactRef]):
        self.facts = [(f, parse_claim(f.content)) for f in facts]
        self._by_term: dict[str, int] = {}
        self._by_key: dict[str, int] = {}
        self._by_group: dict[str, int] = {}
        for i, (fact, claim) in enumerate(self.facts):
            bit = 1 << i
            for t in claim.tokens:
                self._by_term[t] = self._by_term.get(t, 0) | bit
            for k in judge_keys(fact.content):
                self._by_key[k] = self._by_key.get(k, 0) | bit
            if claim.group and claim.obj:
                self._by_group[claim.group] = self._by_group.get(claim.group, 0) | bit

    def _at(self, mask: int) -> list[tuple[FactRef, Claim]]:
        return [self.facts[i] for i in _positions(mask)]

    def sharing_terms(self, terms: frozenset[str]) -> list[tuple[FactRef, Claim]]:
        return self._at(_union(self._by_term, terms))

    def may_conflict(self, content: str, claim: Claim) -> list[tuple[FactRef, Claim]]:
        mask = _union(self._by_key, judge_keys(content)) | _union(self._by_term, claim.negated)
        if claim.group and claim.obj:
            mask |= self._by_group.get(claim.group, 0)
            if claim.group in _EATING:  # "Eats meat again" / "Is vegetarian"
                mask |= self._by_group.get(_EATING[claim.group], 0)
        return self._at(mask)


def _reconcile(sig: Signal, stored: _StoredFacts, removed: set[str], result: Extraction) -> bool:
    """Marks the stored facts ``sig`` takes back; True when a stored fact already says it (reinforce it)."""
    if not stored.facts:
        return False
    claim = parse_claim(sig.content, sig.negated, sig.replaces)
    judged = stored.may_conflict(sig.content, claim)
    if sig.category == "correction":  # ... and any fact that shares its words: another number or date of it
        judging = {fact.id for fact, _ in judged}
        judged += [pair for pair in stored.sharing_terms(claim.tokens) if pair[0].id not in judging]
    for fact, old in judged:
        if fact.id not in removed and (
            contradicts(claim, old) or fact_relation(sig.content, fact.content, _TWIN) == "conflict"
            or (sig.category == "correction" and corrects_value(sig.content, fact.content))
        ):
            removed.add(fact.id)
            result.facts_to_remove.append(FactRemoval(id=fact.id, reason=f"contradicted by: {sig.content}"))
    twin = next((f for f, old in stored.sharing_terms(claim.tokens)
                 if f.id not in removed and overlap(claim.tokens, old.tokens) >= _TWIN), None)
    if twin is None:
        return False
    if twin.id not in result.facts_to_reinforce:
        result.facts_to_reinforce.append(twin.id)
    return True


def extract(request: ExtractRequest) -> Extraction:
    signals, own, said, dropped = _collect_signals(request)
    # the keyphrases of the user's messages as one text, whose sentences are theirs (none spans a line)
    result = Extraction(tags=rank([analyze(sentence) for sentence in said], 4))
    if not signals:
        return result
    stored = _StoredFacts(request.facts)
    removed: set[str] = set()
    for at, sig in enumerate(signals):
        if at in dropped or _reconcile(sig, stored, removed, result):
            continue
        result.new_facts.append(NewFact(
            content=sig.content, category=sig.category, confidence=sig.confidence,
            area=_area(sig.content, sig.category), tags=_fact_tags(sig.content, sig.category), sources=sig.sources,
        ))
    result.user = _section_updates(signals, own - dropped, request.profile)
    return result
