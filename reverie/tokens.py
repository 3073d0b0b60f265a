"""Token counting that works offline: exact with tiktoken when it is already local, else an estimate.

Recall packs its ``<memory>`` block to a token budget, so every candidate line
is counted, many times per recall. Two counters serve:

* ``tiktoken:cl100k_base`` when the ``tiktoken`` package is importable *and*
  the cl100k file already sits, intact, in tiktoken's cache. tiktoken fetches a
  missing or corrupt file from the network on first use; reverie never lets it.
* ``estimate`` otherwise: a handful of precompiled regex counts, calibrated
  against cl100k_base (see ``_estimate``).

>>> count_tokens("The quick brown fox jumps over the lazy dog.")
10
>>> truncate_to_tokens("one two three four five six", 3)
'one two…'
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Protocol

__all__ = ["count_tokens", "counter_name", "truncate_to_tokens", "ELLIPSIS"]

log = logging.getLogger(__name__)

ELLIPSIS = "…"

# tiktoken (since 0.1.2) caches each encoding file under sha1(url) and checks it
# against this sha256; a mismatch makes it delete the file and download again.
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

# --- the estimate -------------------------------------------------------------
# cl100k splits text into pieces before BPE: a letter run (with its leading
# space), a group of at most three digits, a punctuation run. Common English
# words are one token each, so counting pieces is close; only long words split
# further. Han characters mostly cost one to two tokens each (3 UTF-8 bytes,
# only the commonest are whole tokens or merge in pairs).
#
# Constants fitted (least squares, then rounded) against real cl100k_base
# counts, taken with the js-tiktoken port, of ~2,300 English chat turns, ~260
# Chinese sentences and ~1,000 lines of mixed markdown. Resulting error:
# English chat +3% on average (5% mean absolute, per line), Chinese prose
# within 7% on average. Weights err slightly high on prose, since a budget is a
# ceiling.
#
# What is no prose is costed apart (checked against cl100k_base on 3,000 lines of
# markdown and Python and on strings of 16 to 1,000 characters): where only pieces
# were counted, a line of code or a table came to 15% of lines under 0.8x their
# real count, and a hash, a key-like id or a URL's path to a tenth of it (a run of
# 1,000 random letters is ~540 tokens, it was counted 51). Now code and markdown
# are +4% on average (1.6% of lines under 0.8x), random letters and mixed-case ids
# 0.85-0.95x, a URL of random path segments about 0.7x.
# - a letter run that is no word (a long run of consonants or of one letter, all
#   capitals) costs ~0.55 a letter; one that changes case every few
#   letters (base64, random ids) ~0.75 a letter; a camelCase name the cost of its
#   parts; a letter or two repeated ("aaaa", "hahaha") 1/8 and 1/2 a letter
# - a punctuation run of three or more: ~0.45 a character past its first ("|---|---|"),
#   a run of one character (a line of dashes) 1/64 a character
# - a run of two or more spaces or tabs (an indent): one token (a line break is in the
#   fit of prose: counting it too made chat of several lines 2% higher still)
# (a run of three or more punctuation marks is the group: found where the pieces are)
_PIECE_RE = re.compile(r"[A-Za-z]+|\d{1,3}|([!-/:-@\[-`{-~]{3,})|[!-/:-@\[-`{-~]+")
_LONG_WORD_RE = re.compile(r"[A-Za-z]{7,}")
_LONG_WORD_FREE_LETTERS = 6  # words up to this length are a single token
_LONG_WORD_EXTRA_PER_LETTER = 0.05  # rare long words split into several tokens
_NOT_A_WORD_PER_LETTER = 0.55  # measured 0.54 on random lower-case letters
_RANDOM_CASE_PER_LETTER = 0.75  # measured 0.72 on random letters and digits of both cases
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_NOT_A_WORD = re.compile(r"[^aeiouy]{5,}|(.)\1\1", re.IGNORECASE)
_REPEATED = re.compile(r"(.{1,3}?)\1+.{0,2}")
_PUNCTUATION_PER_MARK = 0.45  # a run of three or more, past its first mark ("|---|---|")
_ONE_MARK_RUN = 64  # characters a token of one mark repeated ("-------") holds
_INDENT_RE = re.compile(r"[ \t]{2,}")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CJK_TOKENS_PER_CHAR = 1.35  # measured 1.3-1.4 for Chinese prose
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_OTHER_NON_ASCII_TOKENS_PER_CHAR = 0.5  # accents, curly quotes, full-width punctuation
# Other scripts' letters are no pieces of the above: cl100k spends on each what its UTF-8
# bytes merge into. Fitted against cl100k_base on one sentence per script, rounded up
# (measured: Russian 0.66, Arabic 0.89, Greek 1.03, Thai 0.91, Hindi 1.23; emoji, with their
# joiners and variation selectors at about 1 each, 3.5), so that Greek or emoji no longer
# deliver two to five times the budget.
_SCRIPT_COSTS = (
    (re.compile(r"[\u0400-\u052f]"), 0.7),  # Cyrillic
    (re.compile(r"[\u0370-\u03ff\u0530-\u07ff]"), 1.05),  # Greek, Armenian, Hebrew, Arabic, Syriac, Thaana
    (re.compile(r"[\u0800-\u1fff\ua000-\uabff]"), 1.25),  # Indic, Thai, Georgian, Ethiopic, Khmer, ...
    (re.compile(r"[\u2190-\u2bff]"), 2.0),  # arrows, symbols, dingbats: the emoji of the first plane
    (re.compile(r"[\u200d\ufe00-\ufe0f]"), 1.0),  # emoji joiners and variation selectors
    (re.compile(r"[\U00010000-\U0010ffff]"), 3.6),  # emoji and other astral characters
    # full-width letters and digits, as Chinese input methods type them ("ＣＡ１２３４"):
    # measured 1.82 each (three UTF-8 bytes that seldom merge)
    (re.compile(r"[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]"), 1.85),
)
# any of them: most non-ASCII text (Chinese, accented Latin) holds none, and is read once, not six times
_ANY_SCRIPT = re.compile("|".join(pattern.pattern for pattern, _ in _SCRIPT_COSTS))


def _letters(part: str) -> float:
    """The tokens of a run of letters of one case (or capitalised)."""
    n = len(part)
    if n <= _LONG_WORD_FREE_LETTERS:
        return 1.0
    repeated = _REPEATED.fullmatch(part)
    if repeated:  # "aaaaaaa", "hahahaha", "abcabcabc"
        return max(1.0, n / (8 if len(repeated.group(1)) == 1 else 2))
    if part.isupper() or _NOT_A_WORD.search(part):
        return _NOT_A_WORD_PER_LETTER * n
    return 1 + _LONG_WORD_EXTRA_PER_LETTER * (n - _LONG_WORD_FREE_LETTERS)


@lru_cache(maxsize=16384)
def _letter_run(run: str) -> float:
    """The tokens of a run of 7 or more letters: a word, a camelCase name, or no word (kept:
    the long words of a language are few, and each is looked at once)."""
    if run.islower() or run.isupper() or (run[0].isupper() and run[1:].islower()):
        return _letters(run)
    parts = _CAMEL_PART.findall(run)
    if len(run) < 3.5 * len(parts):  # the case changes every few letters: random, no name
        return _RANDOM_CASE_PER_LETTER * len(run)
    return sum(map(_letters, parts))


def _estimate(text: str) -> int:
    pieces = _PIECE_RE.findall(text)  # "" for each piece but a run of punctuation marks
    tokens: float = len(pieces)
    long_words = _LONG_WORD_RE.findall(text)
    if long_words:
        tokens += sum(map(_letter_run, long_words)) - len(long_words)
    for run in filter(None, pieces):
        tokens += len(run) / _ONE_MARK_RUN if run.count(run[0]) == len(run) else _PUNCTUATION_PER_MARK * (len(run) - 1)
    if "  " in text or "\t" in text:
        tokens += len(_INDENT_RE.findall(text))
    if not text.isascii():
        cjk = len(_CJK_RE.findall(text))
        other = len(_NON_ASCII_RE.findall(text)) - cjk
        if other and _ANY_SCRIPT.search(text):
            for script, cost in _SCRIPT_COSTS:
                found = len(script.findall(text))
                tokens += cost * found
                other -= found
        tokens += _CJK_TOKENS_PER_CHAR * cjk + _OTHER_NON_ASCII_TOKENS_PER_CHAR * other
    # Whitespace alone is still at least one token.
    return max(1, int(tokens + 0.5))


# --- tiktoken, only from a local file ------------------------------------------


def _tiktoken_cache_dir(tiktoken_load: object) -> str:
    """The directory the installed tiktoken reads its cache from ("" = caching off)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    default: Callable[[], str] | None = getattr(tiktoken_load, "_default_cache_dir", None)
    if default is not None:
        return default()
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")  # older tiktoken


def _cached_cl100k(cache_dir: str) -> Path | None:
    """The cached cl100k file if tiktoken would use it as is, else None."""
    if not cache_dir:
        return None
    path = Path(cache_dir) / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == _CL100K_SHA256 else None


class _Encoding(Protocol):
    """What reverie uses of a ``tiktoken.Encoding``."""

    def encode_ordinary(self, text: str) -> list[int]: ...


@lru_cache(maxsize=1)
def _encoding() -> _Encoding | None:
    try:
        import tiktoken
        import tiktoken.load
    except ImportError:
        return None
    if _cached_cl100k(_tiktoken_cache_dir(tiktoken.load)) is None:
        log.debug("tiktoken present but cl100k_base is not cached; estimating tokens")
        return None
    try:
        encoding: _Encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # a broken install must not break counting
        log.warning("tiktoken could not load cl100k_base; estimating tokens", exc_info=True)
        return None
    return encoding


def counter_name() -> str:
    """Which counter is in use: ``"tiktoken:cl100k_base"`` or ``"estimate"``."""
    return "tiktoken:cl100k_base" if _encoding() is not None else "estimate"


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (cl100k_base, exact or estimated); 0 for the empty string."""
    if not text:
        return 0
    return _count(text)


@lru_cache(maxsize=16384)
def _count(text: str) -> int:
    # recall counts the same lines (a popular episode's summary, a fact) again and again
    encoding = _encoding()
    if encoding is not None:
        return len(encoding.encode_ordinary(text))
    return _estimate(text)


def _is_word_char(ch: str) -> bool:
    # CJK has no spaces between words, so any character boundary will do there.
    return ch.isalnum() and _CJK_RE.match(ch) is None


def _boundary_before(text: str, end: int) -> int:
    """The nearest cut at or before ``end`` that does not split a Latin word or number."""
    if end <= 0 or end >= len(text) or not (_is_word_char(text[end - 1]) and _is_word_char(text[end])):
        return end
    start = end
    while start > 0 and _is_word_char(text[start - 1]):
        start -= 1
    # One endless "word" (a hash, a URL) is cut where it must be.
    return start if start > 0 else end


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """``text`` if it fits in ``max_tokens``, else its longest fitting prefix ending in "…".

    The cut falls between words (anywhere in CJK runs); trailing spaces and
    punctuation before the ellipsis are dropped. Returns "" when not even the
    ellipsis fits.

    >>> truncate_to_tokens("我喜欢在周末去公园散步", 6)
    '我喜欢在…'
    """
    if count_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 0 or count_tokens(ELLIPSIS) > max_tokens:
        return ""

    def fits(end: int) -> bool:
        return count_tokens(_cut(text, end)) <= max_tokens

    # Counts grow with the prefix, so the longest fitting prefix is found by bisection.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    end = _boundary_before(text, lo)
    while end > 0 and not fits(end):  # tiktoken is not strictly monotone across merges
        end -= 1
    return _cut(text, end)


def _cut(text: str, end: int) -> str:
    return text[:end].rstrip(" \t\r\n,;:.-–—、，；：") + ELLIPSIS
