"""Signals: the one durable thing a user's clause says about them, by the lexicon's rules.

``line_signals("I prefer tabs, and I live in Lisbon")`` -> two signals, "Prefers tabs"
(preference) and "Lives in Lisbon" (identity). Questions, hedges ("if ..."), temporary
state ("right now") and pasted noise carry none. Extract reads messages this way and
distill reads daily-note lines the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from reverie.claims import REPLACEABLE_PREFIX, clip_object, parse_claim
from reverie.claims import is_temporary as temporary_text
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.person import (
    conjugate_first,
    swap_pronouns,
    third_clause,
    third_verb,
)
from reverie.engines.heuristic.words import cap, has_content, sentences
from reverie.text import clip_line, has_cjk, words
from reverie.timerefs import names_a_time, times_to_come


@dataclass(slots=True)
class Signal:
    content: str
    category: str
    confidence: float
    section: str | None = None
    negated: str = ""  # what a correction takes back
    canon: tuple[str, ...] = ()  # cognitive habits in the summary's wording
    sources: list[str] = field(default_factory=list)
    replaces: bool = False  # said as a correction or a new one: takes back the same kind of fact (claims.Claim)


_COGNITIVE_EN = [(re.compile(p, re.IGNORECASE), c) for p, c in lx.COGNITIVE_EN]
_COGNITIVE_ZH = [(re.compile(p), c) for p, c in lx.COGNITIVE_ZH]
_POLITE_EN = re.compile(r"^(?:please|pls|i'd like you to|i want you to|can you|could you|would you)\b[,\s]*",
                        re.IGNORECASE)
_POLITE_ZH = re.compile(r"^(?:请|麻烦|我希望你?|希望你?|以后|你|回答时|回答的时候)+[，,]?")
_ZH_SELF = re.compile(r"^我(?!们)")
# "I love that you chose pottery", "I love it, it brings us closer": a reaction, not a preference
_VAGUE_OBJECT = re.compile(r"(?:it|that|this|them|you|your|him|her|how|what|when|the way|those|these|everyone|"
                           r"everything)\b", re.IGNORECASE)
_WORD_EN = re.compile(r"[a-z']+")


@dataclass(slots=True)
class Clause:
    """A clause, lower-cased once, with its English words: what the cue gates look at."""

    text: str
    low: str
    cjk: bool
    present: frozenset[str]

    @classmethod
    def of(cls, text: str) -> "Clause":
        low = text.lower()
        return cls(text, low, has_cjk(text), frozenset(_WORD_EN.findall(low)))

    def has_cue(self, cues: tuple[frozenset[str], tuple[str, ...]]) -> bool:
        """A cue word among the clause's English words, or a Chinese cue inside a CJK clause."""
        words_en, substrings = cues
        return not words_en.isdisjoint(self.present) or (self.cjk and any(c in self.low for c in substrings))


def _cues(cues: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    return frozenset(c for c in cues if not has_cjk(c)), tuple(c for c in cues if has_cjk(c))


def _by_cue(rules: tuple[lx.Rule, ...]) -> dict[str, tuple[int, ...]]:
    cues = sorted({c for rule in rules for c in rule.cues})
    return {cue: tuple(i for i, rule in enumerate(rules) if cue in rule.cues) for cue in cues}


_RULES_BY_CUE_EN = _by_cue(lx.RULES_EN)
_RULE_CUES_EN = frozenset(_RULES_BY_CUE_EN)
_RULES_BY_CUE_ZH = _by_cue(lx.RULES_ZH)


def _candidate_rules(clause: "Clause") -> list[lx.Rule]:
    """The rules whose cues the clause holds, in rule order."""
    hits: Iterable[str]
    if clause.cjk:
        rules, index = lx.RULES_ZH, _RULES_BY_CUE_ZH
        hits = [cue for cue in index if cue in clause.text]
    else:
        rules, index = lx.RULES_EN, _RULES_BY_CUE_EN
        hits = clause.present & _RULE_CUES_EN
    return [rules[i] for i in sorted({i for cue in hits for i in index[cue]})]


_TEMPORARY_CUES = _cues(lx.TEMPORARY_CUES)
_COGNITIVE_CUES = _cues(lx.COGNITIVE_CUES)


def _cognitive(clause: Clause) -> Signal | None:
    if not clause.has_cue(_COGNITIVE_CUES):
        return None
    cjk, text = clause.cjk, clause.text
    canon = tuple(dict.fromkeys(c for rx, c in (_COGNITIVE_ZH if cjk else _COGNITIVE_EN) if rx.search(text)))
    if not canon:
        return None
    cleaned = (_POLITE_ZH if cjk else _POLITE_EN).sub("", text).strip(" 。.!！")
    content = cleaned if cjk else third_clause(cleaned)
    if len(content) > 80:
        content = ("；" if cjk else "; ").join(canon)
    return Signal(clip_line(content), "cognitive", 0.9, "cognitiveStyle", canon=canon)


# "I'm a nurse too", "I like jazz as well": what the line says without the word that ties it to
# what someone said before it
_ALSO_END = re.compile(r",?\s+(?:too|as well)\s*$", re.IGNORECASE)


def _render(rule: lx.Rule, m: re.Match[str], cjk: bool) -> str | None:
    raw = clip_object(m["x"], cjk)
    if not cjk:
        raw = _ALSO_END.sub("", raw)
    if not raw or not (rule.value or rule.timed or has_content(raw) or lx.TIMES_LIKED.fullmatch(raw)):
        return None
    if not cjk and rule.category in ("preference", "behavior") and _VAGUE_OBJECT.match(raw):
        return None
    groups = m.groupdict()
    verb = (groups.get("v") or "").strip()
    if cjk:
        raw = _ZH_SELF.sub("", raw)
    values = {"v": verb, "Vraw": cap(verb), "raw": raw, "Raw": cap(raw)}
    if not cjk:
        x = swap_pronouns(raw)
        w = groups.get("w") or ""
        values.update(V=cap(third_verb(verb.lower())) if verb else "", x=x, xv=conjugate_first(x), Xv=cap(conjugate_first(x)),
                      X=third_clause(raw), w=w, w3=third_verb(w) if w else "")
    return clip_line(rule.template.format(**values))


def _negated(sentence: str, rule: lx.Rule, m: re.Match[str], cjk: bool) -> str:
    if rule.negates:
        return clip_object(m["x"], cjk)
    if rule.category != "correction":
        return ""
    found = (lx.NEGATED_ZH if cjk else lx.NEGATED_EN).search(sentence)
    return found["y"].strip() if found else ""


def is_temporary(clause: Clause) -> bool:
    if not clause.has_cue(_TEMPORARY_CUES):
        return False
    return temporary_text((lx.DURABLE_NOW_ZH if clause.cjk else lx.DURABLE_NOW_EN).sub(" ", clause.low))


_BREAK = re.compile(r"[，,；;。！!？?]")


def _voided(rule: lx.Rule, text: str, m: re.Match[str]) -> bool:
    """Whether the statement ``m`` reads holds what voids its rule ("去年我在华为实习过"): the
    clause up to the first break after the object, from the match's own subject when the
    clause has another before it ("我之前说过我喜欢喝茶" says the liking now)."""
    if rule.void is None:
        return False
    head = text[: m.start()]
    statement = ("" if "我" in head else head) + text[m.start(): m.start("x")]
    statement += _BREAK.split(text[m.start("x"):], maxsplit=1)[0]
    return bool(rule.void.search(statement))


_PAST_TIME = re.compile(r"\b(?:ago|yesterday|last|earlier)\b", re.IGNORECASE)


def _timed(text: str) -> bool:
    """A plan's clause names the time it is for, none past ("I'm flying to Tokyo next Friday")."""
    return names_a_time(text) and not _PAST_TIME.search(text)


def is_noise(clause: Clause) -> bool:
    return any(c in clause.low for c in lx.NOISE_CUES) and bool(lx.NOISE.search(clause.low))


def _signal(text: str) -> Signal | None:
    """The one durable signal a clause carries, or None (questions, temporary state, noise)."""
    s = text.strip()
    if not s or s.endswith(("?", "？")):
        return None
    clause = Clause.of(s)
    rules = _candidate_rules(clause)
    if not rules and not clause.has_cue(_COGNITIVE_CUES):
        return None  # no cue of any rule: nothing to say, whatever the gates below would find
    if lx.HEDGE.search(clause.low) or lx.HYPOTHETICAL.search(clause.low) or is_noise(clause) or is_temporary(clause):
        return None
    cognitive = _cognitive(clause)
    if cognitive:
        return cognitive
    for rule in rules:
        m = rule.pattern.search(s)
        if not m or _voided(rule, s, m) or (rule.timed and not _timed(s)):
            continue
        content = _render(rule, m, clause.cjk)
        if content is None:
            continue
        # "my sister is called Mia, not Mila": the value the rule read stops before the one the
        # clause takes back; the line keeps it, so that the judge archives the fact that said it
        given_up = None if clause.cjk or not s.startswith(",", m.end()) else lx.NEGATED_EN.match(s, m.end())
        if given_up:
            content = f"{content}, not {given_up['y'].strip()}"
        section = rule.section
        if section == "workContext" and any(w in lx.PERSONAL_ROLES for w in words(m["x"])):
            section = "personalContext"
        # a decision or a goal keeps the time to come it was said for ("Next Friday we decided to
        # launch v2", "下周五我们决定上线v2"): the time before what the rule read is part of it (a
        # time past, "yesterday I decided", is when it was decided: the episode's own time)
        if rule.category in ("decision", "goal") and (
                lead := [w for w in times_to_come(s[: m.start()]) if w not in content]):
            content = clip_line(lead[-1] + content if clause.cjk else f"{content} {lead[-1][:1].lower()}{lead[-1][1:]}")
        # ("Moved to Lisbon, not Porto" takes back what said Porto)
        negated = given_up["y"].strip() if given_up else (m.groupdict().get("g") or "").strip() or _negated(
            s, rule, m, clause.cjk)
        if not negated and not clause.cjk and (said_not := lx.NEGATED_EN.search(m["x"])) and said_not.start():
            negated = said_not["y"].strip()  # "I like coffee, not tea", "Moved to Lisbon, not Porto"
        # "My new boss is Olivia": the boss before is no longer
        return Signal(content, rule.category, rule.confidence, section, negated, replaces=bool(m.groupdict().get("new")))
    return None


_CLAUSE_START = re.compile(r"[,，;；]\s*(?:(?:and|but|also|so)\s+|而且|并且|但是?|所以|也)?(?=我|(?:i|i'm|we|my)\b)"
                           # "I live in Porto and I work as ...": "and I" / "but I" without a comma, when
                           # the clause before has a first-person subject of its own ("My wife and I" has none)
                           r"|\s+(?:and|but)\s+(?=(?:i|i'm|i've|i'd|i'll)\b)"
                           # "I live in Berlin and my email is ...": a clause of its own about another thing
                           r"|\s+(?:and|but)\s+(?=my\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:is|are|lives?|works?|moved)\b)"
                           # "I live in Porto and work as a nurse": the same subject, unsaid, before a verb of a fact
                           # (the verbs of facts that have a rule: another verb keeps its clause whole)
                           r"|\s+and\s+(?:also\s+)?(?=(?P<same_en>work\s+(?:as|at|for|in)|live\s+in|run|own|"
                           r"have\s+(?:a|an|one|two|three|four|five|\d+))\s)"
                           # a note's "The user moved to Lisbon and they work as ...": "they" is the user
                           r"|\s+and\s+(?P<they>they)\s+(?=\w)"
                           # "我不喝茶了，改喝咖啡": a clause that goes on with the same subject, unsaid
                           r"|[，,]\s*(?:现在|目前|就|也)?(?=(?P<same>改)(?:喝|吃|用|抽))", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've)\b|我", re.IGNORECASE)
# "My wife works as a teacher and I work at Google": the clause before has a subject of its own,
# someone of the user's ("My wife and I live in Berlin" has none: one subject, both of them)
_THEIR_OWN_SUBJECT = re.compile(r"^\s*my\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:is|lives?|works?|moved|has)\b", re.IGNORECASE)


def _clauses(sentence: str) -> list[str]:
    """A sentence cut where a new first-person clause starts ("..., and I prefer ...", "...，我喜欢...",
    "... and I work as ..."); a Chinese clause that leaves its subject unsaid after one of "我"
    takes that subject ("我不喝茶了，改喝咖啡" -> "我不喝茶了", "我改喝咖啡")."""
    pieces: list[str] = []
    start, subject = 0, ""
    for m in _CLAUSE_START.finditer(sentence):
        before = sentence[start:m.start()]
        if len(before.strip()) < 4:  # "No, I meant ..." stays whole
            continue
        if (m.group(0)[:1] not in ",，;；" and not _FIRST_PERSON.search(before) and not m["they"]
                and not _THEIR_OWN_SUBJECT.match(before)):
            continue
        if lx.PAST_LEAD_ZH.match(before.strip()):
            continue  # "去年夏天，我在华为实习": the time of the clause after it
        if m["same"] and not (subject or before.lstrip().startswith("我")):
            continue
        if m["same_en"] and len(before.split()) < 3:  # "I live and work in Berlin" stays whole
            continue
        if m["they"] and not sentence.lower().startswith("the user "):
            continue  # (anyone else's "they" is theirs)
        pieces.append(subject + before)
        start, subject = m.end(), "我" if m["same"] else "I " if m["same_en"] else "The user " if m["they"] else ""
    pieces.append(subject + sentence[start:])
    return [clause for p in pieces if (clause := p.strip())]


def _of_a_kind(sig: Signal) -> bool:
    """A job or the name of someone close: one such fact takes another's place (claims.REPLACEABLE_PREFIX)."""
    return parse_claim(sig.content).group.startswith(REPLACEABLE_PREFIX)


def _read_clauses(sentence: str) -> tuple[Signal, ...]:
    found: tuple[Signal, ...] = ()
    for clause in _clauses(sentence):
        sig = _signal(clause)
        if sig is None:
            continue
        found += (sig,)
        # "I live in Berlin with my partner Jonas": the partner is a fact of its own, which stays
        # when the city changes (read as "My partner is Jonas" would be)
        found += tuple(also for m in lx.WITH_MY_EN.finditer(clause) if (also := _signal(f"My {m['v']} is {m['x']}")))
    return found


@lru_cache(maxsize=8192)
def _signals_in(sentence: str) -> tuple[Signal, ...]:
    """The signals of one sentence (cached: talk repeats its short sentences). Never handed
    out as they are: a caller may change a signal's confidence and sources.

    None from a sentence that does not say its first-person lines as facts: a made-up
    situation ("Suppose I'm a lawyer"), someone else's words ("My sister said I'm ...")
    or a joke ("I work at Google lol jk")."""
    # "Actually I'm a nurse", "Sorry, my sister is called Mila": what follows the correction says
    # the same kind of fact anew (a job for a job, the name of the same relative); a sentence the
    # lead leaves nothing to read is read whole ("No, actually, the launch is on Friday")
    lead = (lx.CORRECTING_LEAD_EN.match(sentence) if sentence[:2].lower() in lx.CORRECTING_LEAD_OPENS
            else lx.CORRECTING_LEAD_ZH.match(sentence) if sentence[:1] in lx.CORRECTING_LEAD_ZH_OPENS else None)
    corrected = _read_clauses(sentence[lead.end():]) if lead else ()
    if corrected:
        # ("No, actually I use vim" is a correction, kept as one, as before; a job or a relative's name
        # keeps its kind, whose fact it takes the place of)
        said_as = "correction" if (lx.CORRECTION_RULE_LEAD_EN.match(sentence)
                                   or lx.CORRECTION_RULE_LEAD_ZH.match(sentence)) else ""
        found = tuple(replace(sig, replaces=True, category=said_as if said_as and not _of_a_kind(sig) else sig.category)
                      for sig in corrected)
    else:
        found = _read_clauses(sentence)
    if found:  # the sentence's gates only when it says something (most sentences say nothing)
        low = sentence.lower()
        if (lx.HYPOTHETICAL.search(low) or lx.REPORTED.search(sentence) or lx.JOKE.search(low) or lx.QUOTED.match(sentence)
                or lx.REPORTED_ZH.match(sentence)):
            return ()
    return found


def sentence_signals(said: list[str]) -> list[Signal]:
    """Signals of a text split into sentences (:func:`sentences`), clause by clause; a sentence
    the next one takes back ("I'm a doctor. Just kidding!") has none."""
    return [replace(sig, sources=[]) for i, sentence in enumerate(said)
            if not (i + 1 < len(said) and lx.JOKE_ALONE.match(said[i + 1].lower()))
            for sig in _signals_in(sentence)]


def line_signals(text: str) -> list[Signal]:
    """Signals of a message or a note line, clause by clause."""
    return sentence_signals(sentences(text))
