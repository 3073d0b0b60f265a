"""Words, in English and Chinese: the one tokenizer every part of reverie shares.

Full-text search, duplicate detection, tags and keyphrases all split text the
same way, so that a word found at write time is found again at read time.
Chinese is segmented with jieba, loaded lazily (only text with CJK pays).
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RE = re.compile(f"[{_CJK}]")
# a date written with digits, month and day ("3月5日", "3月5号", "2024年3月5日"; a month alone:
# "3月", "3月份"): one word, where the digits fell away and 月 and 日 stood as words of their
# own, which every date holds (see _date_words)
_DATE = r"(?:(\d{2,4})年)?(\d{1,2})月(?:(\d{1,2})[日号]|份)?"
_TOKEN_RE = re.compile(f"{_DATE}|[{_CJK}]+|[^\\W_{_CJK}]+(?:['’][^\\W_{_CJK}]+)*", re.UNICODE)
_PLAIN_TOKEN_RE = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+(?:['’][^\\W_{_CJK}]+)*", re.UNICODE)

ENGLISH_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each few for from further had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
    is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
    or other ought our ours ourselves out over own same shan't she she'd she'll she's should
    shouldn't so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just really yeah yes oh ok okay hey hi hello thanks thank well like
    got get gets getting go going gone went much many lot lots thing things stuff something anything
    everything way ways one ones make made makes making know knew think thought feel felt want
    wanted say said says tell told see saw seen look looking come came take took give gave us will
    shall may might must still even ever every since though although however yet back now today
    always never sure good great nice really pretty quite bit kind sort maybe perhaps actually
    definitely totally super awesome amazing cool glad happy
    """.split()
)

CHINESE_STOPWORDS = frozenset(
    """
    的 了 是 在 我 你 他 她 它 们 我们 你们 他们 这 那 这个 那个 就 都 也 还 和 与 及 或 而 但 但是
    因为 所以 如果 虽然 然后 一个 一些 什么 怎么 怎样 为什么 哪 哪里 吗 呢 吧 啊 哦 嗯 呀 么 很 太 非常
    有 没有 没 不 要 会 能 可以 应该 已经 正在 一下 一直 自己 这样 那样 这里 那里 现在 今天 时候
    上 下 中 里 对 把 被 给 让 从 到 向 跟 说 看 想 做 去 来 好 好的 谢谢 知道 觉得 东西 事情 问题 一点
    """.split()
)

STOPWORDS = ENGLISH_STOPWORDS | CHINESE_STOPWORDS


def has_cjk(text: str) -> bool:
    return not text.isascii() and CJK_RE.search(text) is not None  # isascii: a flag, no scan


@lru_cache(maxsize=1)
def _jieba() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def load_dictionaries() -> None:
    """Load jieba's dictionary now (half a second and some 70 MB, once a process), as a
    long-running process does at start-up: a server before it freezes its heap
    (:func:`reverie.server.workers.settle_heap`), a benchmark before its timer. A one-shot
    command loads it only when a text needs it."""
    _jieba()


def _segment_cjk(run: str) -> list[str]:
    if len(run) <= 1:
        return [run]
    return [w for w in _jieba().lcut(run) if w.strip()]


_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: enough to fold plurals and -ing/-ed forms together."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            base = word[: -len(suffix)] + repl
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, planned -> plan
            return base
    return word


_ASCII_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-cased words in reading order; Chinese runs segmented into words, and a date of
    digits with 月 and 日 one word (:func:`_date_words`)."""
    if text.isascii():  # most text: no CJK, no curly quotes, a much simpler pattern
        return _ASCII_TOKEN_RE.findall(text.lower())
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        token = match.group(0)
        if match.group(2) is not None:
            out.extend(_date_words(token, match.group(1), match.group(2), match.group(3)))
        else:
            _add_word(out, token)
    return out


def _add_word(out: list[str], token: str) -> None:
    if CJK_RE.match(token):
        out.extend(_segment_cjk(token))
    else:
        out.append(token.replace("’", "'"))


def _date_words(token: str, year: str | None, month: str, day: str | None) -> list[str]:
    """The words of a date of digits: the year's digits (as the year's token was before), then
    the month and day as one word, written one way ("3月5日" for "3月5号" and "03月05日";
    "3月" for "3月份"), so that a date finds that date and not every date. Not a date (a
    month past 12, a day past 31): the words the token held before."""
    m, d = int(month), int(day) if day is not None else None
    if not 1 <= m <= 12 or (d is not None and not 1 <= d <= 31):
        out: list[str] = []
        for match in _PLAIN_TOKEN_RE.finditer(token):
            _add_word(out, match.group(0))
        return out
    said = f"{m}月" if d is None else f"{m}月{d}日"
    return [str(int(year)), said] if year is not None else [said]


# Articles, conjunctions, prepositions, possessives and "is" of German, French, Spanish, Italian and
# Portuguese. They are no English stopwords, so a keyphrase of a message in one of those languages would
# begin or end with them ("und die pin", "la tarjeta es"): a phrase is trimmed of them at its ends (in the
# middle they join its words: "bank der stadt"). Left out: one letter ("e", "o", "y", "a": never content
# anyway) and words English uses on their own ("son", "war", "pour", "ma", "os", "den", "au", "em" of "show 'em").
FOREIGN_FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    und oder der die das des dem ein eine einen einem einer mein meine ich wir ist sind mit von zu zum zur für im
    et ou le la les un une du de mon mes je est sont avec dans sur
    el los las una del al con en es mi mis yo por para
    il lo gli di della dei per mio mia io è sono
    um uma dos das da na com meu minha eu é são
    """.split()
)
# ... and the other small words of those languages a question in one of them drops as well (some
# are English words too: "son", "war", "ma", "au", "pour"; they go only from a foreign question)
_MORE_FUNCTION_WORDS = frozenset(
    """
    den auf an aus bei nach sich nicht auch es er sie du mir mich dir uns euch wie was wo wer wann kann kannst
    habe hast hat bin bist war waren wird werden noch schon nur so sehr
    au aux ce ces cet cette se sa son ses ma ta ton tes te tu vous nous il ils elle elles on ne pas que qui
    quoi des pour par plus très mais aussi comme y
    le lo les su sus tu te me se que como muy pero más ti yo tengo tiene hay este esta esto ese esa
    ci si non che ho ha hai sei mi ti una uno questo questa quello molto ma anche come
    se não mas muito como isto isso este esta você tem tenho ao aos às pelo pela
    dónde donde où qual quale cuál cual qué quién quando cuándo onde
    """.split()
)
_FOREIGN_FUNCTION_TERMS = frozenset(stem(w) for w in FOREIGN_FUNCTION_WORDS | _MORE_FUNCTION_WORDS)
# what tells a text in one of those languages: two of these ("Wo wohne ich?"), not English words
_FOREIGN_TELLS = (FOREIGN_FUNCTION_WORDS | _MORE_FUNCTION_WORDS) - frozenset(
    "me so an on was war son come has hat ha ho hay non more pour ma au te se si tu ti ce sa il ne per "
    "es en la el de le lo mi da na".split())


def function_terms(text: str) -> frozenset[str]:
    """The search terms to leave out of a query ``text`` as stopwords: the function words of
    German, French, Spanish, Italian and Portuguese when it is in one of them (it holds two of
    them at least), none otherwise. "ich", "el", "je" are their "I", "the", "I", which English
    drops as stopwords, and a question that shares no more than one with a message found it
    ("Kannst du mir ein Rezept geben, das ich mag?" found "Nächsten Monat fliege ich nach New
    York"). An English text keeps them ("a trip to LA")."""
    if sum(w.lower() in _FOREIGN_TELLS for w in words(text)) < 2:
        return frozenset()
    return _FOREIGN_FUNCTION_TERMS


# the words with which a message asks the assistant to recall or do something, at its start
# ("remind me what my daughter is allergic to", "can you please tell me", "帮我订周五的机票",
# "你还记得..."): they address the assistant and name nothing the memory holds, yet "remind"
# found "I'll remind you" and 帮 found "帮我写一个Go的例子"
_REQUEST_LEAD = re.compile(
    r"^\s*(?:(?:hey|hi|ok|okay|so|and),?\s+)?(?:(?:can|could|would|will) you\s+)?(?:please\s+)?"
    r"(?:remind me(?:\s+(?:of|about))?|(?:do you\s+|can you\s+)?(?:still\s+)?(?:remember|recall)|"
    r"help me(?:\s+to)?)\b[\s,:]*"
    r"|^\s*(?:请你?|麻烦你?)?(?:帮我|帮忙|提醒我|告诉我|你还记得|你记得|还记得|记得)(?:一下)?",
    re.IGNORECASE,
)


def request_lead(text: str) -> str:
    """The words at the start of ``text`` that ask the assistant to recall or help ("Remind
    me", "Can you remember", "帮我"), "" when it starts otherwise: a query's search leaves them
    out, its other words name what it asks about."""
    found = _REQUEST_LEAD.match(text)
    return found.group(0) if found and found.group(0).strip() and found.end() < len(text.rstrip()) else ""


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Search terms: stemmed words, stopwords dropped (unless asked to keep them)."""
    return list(_terms(text, keep_stopwords))


@lru_cache(maxsize=32768)
def _terms(text: str, keep_stopwords: bool) -> tuple[str, ...]:
    # the same message is split by the index, the summarizer and the extractor: once is enough
    if keep_stopwords:
        return tuple(stem(w.replace("'", "")) for w in words(text))
    return tuple(t for t in map(_content_term, words(text)) if t is not None)


# full-width ASCII (as Chinese input methods type it: "ＣＡ１２３４") and the ideographic space
_FULL_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def fold_width(text: str) -> str:
    """``text`` with full-width letters, digits and signs as their ASCII selves."""
    return text if text.isascii() else text.translate(_FULL_WIDTH)


def compound_parts(found: list[str]) -> list[str]:
    """The search terms of the shorter words inside the Chinese compounds among ``found``
    (a text's :func:`terms`, which keeps a compound whole: "航班号" -> 航班): for a search,
    so that a query's compound finds a text that wrote its part alone ("我的航班是CA1234").
    The index holds the parts of a text's compounds too (:func:`index_text`)."""
    return list(dict.fromkeys(p for w in found for p in _compound_parts(w)))


@lru_cache(maxsize=65536)
def _compound_parts(term: str) -> tuple[str, ...]:
    """The content terms of the dictionary words inside a Chinese compound term of three
    characters or more (jieba's search mode: "北京首都机场" -> 北京, 首都, 机场); none for any
    other term."""
    if len(term) < 3 or not CJK_RE.match(term):
        return ()
    parts = (p for p in _jieba().lcut_for_search(term) if p != term)
    return tuple(t for t in dict.fromkeys(map(_content_term, parts)) if t is not None)


@lru_cache(maxsize=65536)
def _index_parts(term: str) -> tuple[str, ...]:
    """What the index holds besides ``term``: a compound's parts (:func:`_compound_parts`),
    a date's month ("3月5日" -> 3月: "3月" finds the days of March)."""
    if CJK_RE.match(term):
        return _compound_parts(term)
    if term.endswith("日") and "月" in term and term[0].isdigit():  # a date word (_date_words)
        return (term[: term.index("月") + 1],)
    return ()


def e_variants(text: str) -> list[str]:
    """The other form of each content word's stem where :func:`stem` keeps a final "e" in
    one form and not in another: "live" -> "liv" (what "lives", "lived", "living" index as)
    and "lives" -> "live" (what "live" indexes as). For a search: the index holds the stems
    as they were written."""
    out = []
    for word in words(text):
        term = _content_term(word)
        if term is None or not term.isascii() or not term.isalpha() or len(term) < 3:
            continue
        if term == word and term.endswith("e") and len(term) > 3 and not term.endswith("ee"):
            out.append(term[:-1])
        elif term != word and not term.endswith("e") and word.endswith(("es", "ed", "ing")):
            out.append(term + "e")
    return [t for t in dict.fromkeys(out) if t not in STOPWORDS]


@lru_cache(maxsize=131072)
def _content_term(word: str) -> str | None:
    """A word's search term, or None for a stopword (a word is looked at once, not per text)."""
    if word in STOPWORDS or (len(word) == 1 and not has_cjk(word)):
        return None
    term = stem(word.replace("'", ""))
    return None if term in STOPWORDS else term  # "wants" is as empty as "want"


def index_text(text: str) -> str:
    """The text handed to the full-text index: terms separated by spaces, then the parts of
    its Chinese compounds and dates, one for each time the whole stands (:func:`_index_parts`),
    so that a word found inside a stored compound finds it: "宠物" finds "宠物医院", "北京机场"
    (searched with its parts, :func:`compound_parts`) "北京首都机场". The parts come after
    every term, so that the terms as written stand side by side as before. Text without CJK
    is indexed as its terms alone."""
    found = terms(text, keep_stopwords=False)
    if text.isascii():
        return " ".join(found)
    return " ".join([*found, *(p for t in found for p in _index_parts(t))])


def token_set(text: str) -> frozenset[str]:
    """Content terms as a set, CJK-aware: the basis of Jaccard duplicate detection."""
    return frozenset(_terms(text, False))


@lru_cache(maxsize=16384)
def term_set(text: str) -> frozenset[str]:
    """:func:`token_set`, cached: for code that compares the same lines again and again."""
    return token_set(text)


def jaccard(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    sa = a if isinstance(a, frozenset) else token_set(a)
    sb = b if isinstance(b, frozenset) else token_set(b)
    if not sa and not sb:
        return 1.0 if (a == b) else 0.0
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def normalize_space(text: str) -> str:
    """Runs of whitespace as one space, none at either end. str.split() splits on the very
    characters regex ``\\s`` matches (str.isspace), five times as fast as re.sub."""
    return " ".join(text.split())


def exact_key(text: str) -> str:
    """What two lines share when they differ only in spacing, case and a final full stop."""
    return normalize_space(text).casefold().rstrip(" .。!！")


def clip_line(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut at a word (Latin) before ``limit`` characters and marked "…"."""
    text = normalize_space(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not has_cjk(cut) and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;，；") + "…"


_SCRIPTS = {
    "zh-Hans": r"[\u4e00-\u9fff]",
    "ja-JP": r"[\u3040-\u30ff]",
    "ko-KR": r"[\uac00-\ud7af]",
    "ru-RU": r"[\u0400-\u04FF]",
    "ar": r"[\u0600-\u06FF]",
    "hi-IN": r"[\u0900-\u097F]",
    "th-TH": r"[\u0E00-\u0E7F]",
    "he-IL": r"[\u0590-\u05FF]",
    "el-GR": r"[\u0370-\u03FF]",
}
_SCRIPT_RES = {lang: re.compile(p) for lang, p in _SCRIPTS.items()}
_LOCALE_RE = re.compile(r"\b([a-z]{2}-[A-Z]{2})\b")
LATIN_FALLBACK = "same as the user's latest message"


def preferred_language(text: str) -> str:
    """Seed 001's preferred memory language: an explicit locale, else the dominant script."""
    if not text.strip():
        return LATIN_FALLBACK
    locale = _LOCALE_RE.search(text)
    if locale is None and text.isascii():
        return LATIN_FALLBACK
    if locale:
        return locale.group(1)
    counts = {lang: len(rx.findall(text)) for lang, rx in _SCRIPT_RES.items()}
    lang, count = max(counts.items(), key=lambda kv: kv[1])
    if lang == "zh-Hans" and counts["ja-JP"]:
        lang = "ja-JP"  # kana marks Japanese even when kanji outnumber it
    return lang if count else LATIN_FALLBACK


def plural(n: int, one: str, many: str | None = None) -> str:
    """``plural(2, "entry", "entries")`` -> "2 entries"."""
    return f"{n} {one if n == 1 else many or one + 's'}"
