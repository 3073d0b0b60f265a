"""When two one-line statements say the same thing, or contradict each other.

One judge for every place that must decide: remembering a fact, the learning
line, the engines, the dream line and the health check.
"""

from __future__ import annotations

import re

from reverie.text import jaccard, stem, token_set

NEGATION = re.compile(r"\b(not|never|no|don't|doesn't|dont|won't|isn't|hate|dislike)\b|n't|不|别|没|禁止", re.IGNORECASE)
EXCLUSIVE = re.compile(
    r"\b(prefers?|preferred|uses?|using|lives? in|works? (?:at|as|for|on)|based in|moved to|switched to|"
    r"decided|chose|favou?rite|name is|(?:i|user) (?:am|is) an?)\b|偏好|更喜欢|改用|用|住在|工作|决定|最喜欢",
    re.IGNORECASE,
)
# "emacs over vim", "tea instead of coffee": what follows is the value given up
GIVEN_UP = re.compile(r"\b(?:over|instead of|rather than)\s+\S+|,\s*not\s+\S+|而不是\S+|，?不是\S+")


def _verb(match: re.Match[str]) -> str:
    return " ".join(stem(w) for w in match.group(0).lower().split())


def fact_relation(new: str, old: str, duplicate_at: float) -> str | None:
    """"duplicate", "conflict" (same subject, a different claim) or None.

    A conflict is either the same statement with its polarity flipped ("likes
    coffee" / "doesn't like coffee") or an exclusive slot holding another value
    ("prefers vim" / "I prefer emacs over vim"); additive statements ("likes
    hiking" / "likes painting") never conflict.
    """
    a, b = token_set(new), token_set(old)
    score = jaccard(a, b)
    negated_differs = bool(NEGATION.search(new)) != bool(NEGATION.search(old))
    slot_a, slot_b = EXCLUSIVE.search(new), EXCLUSIVE.search(old)
    if slot_a and slot_b and _verb(slot_a) == _verb(slot_b):
        # same subject (what precedes the verb), another value after it
        if token_set(new[: slot_a.start()]) == token_set(old[: slot_b.start()]):
            obj_a = token_set(GIVEN_UP.sub(" ", new[slot_a.end() :]))
            obj_b = token_set(GIVEN_UP.sub(" ", old[slot_b.end() :]))
            only_a, only_b = obj_a - obj_b, obj_b - obj_a
            # one value for another ("vim" / "emacs"), or the same qualifier with another
            # value ("dark mode in editors" / "light mode in editors")
            single = len(obj_a) == 1 and len(obj_b) == 1
            if (single or obj_a & obj_b) and 0 < len(only_a) <= 2 and 0 < len(only_b) <= 2:
                return "conflict"
    if score >= duplicate_at and not negated_differs:
        return "duplicate"
    if negated_differs and score >= 0.5:
        return "conflict"
    return None
