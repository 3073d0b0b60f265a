"""English person and verbs: a first-person line told about the user in the third person.

``third_clause("I use vim")`` -> ``"Uses vim"``; ``third_verb("don't like")`` -> ``"doesn't like"``;
``swap_pronouns("my dog")`` -> ``"their dog"``. Signals, summaries and tidy write lines this way.
"""

from __future__ import annotations

import re

from reverie.engines.heuristic.words import cap

_UNCHANGED_VERBS = frozenset(
    """can could will would shall should may might must always never usually often sometimes rarely also
    just still really went was were had did got made saw took came gave found felt thought told said bought ran
    met left knew began wrote heard kept lost won became brought taught sent spent built sat stood paid drove
    ate fell forgot understood chose picked agreed decided settled meant
    drank swam sang rang sank shrank sprang flew drew grew threw blew wore tore swore rode strove rose arose
    woke broke spoke stole froze wove hid bit slid lit led fed fled bled sped held slept swept wept crept leapt
    dealt dreamt knelt lent bent sold caught fought sought hung swung stung clung flung dug stuck struck shook
    forgave overcame withdrew mistook undertook laid spun shone cannot""".split()
)
# words that may stand between the subject and its verb: kept as they are, and the verb after
# them is the one conjugated ("I no longer eat meat" -> "No longer eats meat", not "Noes longer ...")
ADVERBS = (
    r"no longer|only|just|recently|really|still|also|always|never|often|usually|sometimes|rarely|seldom|"
    r"actually|now|currently|finally|already|even|mostly|mainly|generally|normally|typically|"
    r"occasionally|regularly|constantly|definitely|totally|absolutely|honestly|literally|basically|"
    r"truly|genuinely|personally|hardly|barely|newly|kinda|kind of|sort of|probably|certainly|"
    r"obviously|simply|especially|particularly|strongly|much"
)
_ADVERB_LEAD = re.compile(rf"^(?P<adv>(?:(?:{ADVERBS})\s+)+)(?P<rest>\S.*)$", re.IGNORECASE | re.DOTALL)
_ADVERB_WORDS = frozenset(ADVERBS.split("|"))
_IRREGULAR = {"be": "is", "am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't"}
_PRONOUNS = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs", "i": "they", "i'm": "they're",
             "i've": "they've", "i'll": "they'll", "i'd": "they'd", "our": "their", "ours": "theirs", "we": "they",
             "we're": "they're", "we've": "they've"}
_PRONOUN_RE = re.compile(r"\b(?:i'm|i've|i'll|i'd|we're|we've|myself|mine|my|me|i|our|ours|we)\b", re.IGNORECASE)
CLAUSE_SUBJECT = re.compile(
    r"^(?:(?P<be>i'm|i am|we're|we are)|(?P<has>i've|we've)|(?P<will>i'll|we'll)|(?P<would>i'd|we'd)"
    r"|(?:i|we)\s+(?P<adv>(?:(?:" + ADVERBS + r")\s+)*)"
    r"(?P<v>[\w']+))\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def third_verb(verb: str) -> str:
    """"prefer" -> "prefers", "don't like" -> "doesn't like"; past tenses and modals stay, and
    so do adverbs before the verb ("only drink" -> "only drinks", "no longer eat" -> "no longer eats")."""
    lead = _ADVERB_LEAD.match(verb)
    if lead:
        return lead["adv"] + third_verb(lead["rest"])
    if verb.lower() in _ADVERB_WORDS:
        return verb  # an adverb alone: there is no verb to conjugate
    head, _, tail = verb.partition(" ")
    low = head.lower()
    if low == "do" and tail.startswith("not"):
        out = "does"
    elif low in _IRREGULAR:
        out = _IRREGULAR[low]
    elif low in _UNCHANGED_VERBS or (low.endswith("ed") and not low.endswith("eed")) or low.endswith("n't") \
            or not low.isalpha():
        out = head
    elif low.endswith(("ss", "us", "sh", "ch", "x", "z", "o")):
        out = head + "es"
    elif low.endswith("s"):
        out = head
    elif len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        out = head[:-1] + "ies"
    else:
        out = head + "s"
    return f"{out} {tail}" if tail else out


def swap_pronouns(text: str) -> str:
    return _PRONOUN_RE.sub(lambda m: _PRONOUNS[m.group(0).lower()], text)


def third_clause(clause: str) -> str:
    """"I use vim" -> "Uses vim"; a clause without a first-person subject stays as written."""
    m = CLAUSE_SUBJECT.match(clause)
    if not m:
        return cap(clause)
    rest = swap_pronouns(m["rest"])
    for group, word in (("be", "is"), ("has", "has"), ("will", "will"), ("would", "would")):
        if m[group]:
            return cap(word + rest)
    return cap((m["adv"] or "") + third_verb(m["v"]) + rest)


def conjugate_first(text: str) -> str:
    """The first verb of ``text`` in the third person, past the adverbs before it."""
    lead = _ADVERB_LEAD.match(text)
    if lead:
        return lead["adv"] + conjugate_first(lead["rest"])
    head, _, tail = text.partition(" ")
    return f"{third_verb(head)} {tail}" if tail else third_verb(head)

