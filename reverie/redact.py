"""Keep sensitive data out of memory: find it, and replace it with a typed placeholder.

Every write path (perceived messages, engine answers, imports) runs its text
through :func:`redact` before anything is stored, so reverie never holds an
email address, a phone or card number, an identity number, an IBAN, a
password, an API key or a token. Detection is precise on purpose: dates,
times, prices, versions, ports, issue numbers and sentences that merely talk
about passwords stay as they are, because memory that loses them is worse.

Credentials inside something larger are cut out of it, so the useful rest survives:

- connection strings and other URLs with a password keep scheme, user and host
  and lose only the password: ``postgres://admin:[password]@localhost:5432/app``
  (also ``redis://:[password]@host``). A URL or ssh target with a user but no
  password (``ssh://git@host``, ``git@github.com:org/repo.git``) is a login,
  not an email address, and stays as it is;
- webhook URLs (Slack, Discord, Microsoft Teams) keep the host and the path up
  to the secret part: ``https://hooks.slack.com/services/[token]``;
- URL query parameters (and ``;key=value`` connection strings) keep their name
  and lose the value up to the next ``&``, ``;`` or ``#``:
  ``?user=bob&password=[password]&next=/``, ``?access_token=[token]``, ``?api_key=[api-key]``;
- ``Authorization: Basic <base64>``, ``curl -u user:pass`` and ``mysql -pPASS``
  lose the credential as ``[password]`` (Basic encodes user and password),
  other authorization schemes (``Bearer``, ``token``...) as ``[token]``;
- ``.netrc`` entries (``machine host login bob password [password]``) lose the
  value after ``password``;
- a password given after a Chinese keyword may itself be Chinese (``口令：[password]``)
  when a colon, or a verb and a space, sets it apart (``密码是 [password]``).

Some secrets are told by the word that names them, with a colon, ``is`` or a
mere space: card security codes (``cvv 123``, ``CVC: 987``, ``security code 321``, ``安全码：123``) become
``[card]``; passport numbers and social security numbers in any grouping
(``passport X12345678``, ``SSN: 123 45 6789``) ``[id-number]``, and after a Chinese name
nothing need come between (``护照[id-number]``, ``港澳通行证[id-number]``); a Chinese resident
ID after 身份证 in any grouping, whatever its check character (``身份证 [id-number]``:
elsewhere only one its check character proves is taken); a card number after ``card number``,
``card no``, ``card:``, ``credit card`` or ``卡号``/``银行卡号``, 13 to 19 digits in any grouping, whatever
its checksum (``卡号 [card]``: elsewhere only one its checksum proves is taken, grouped by spaces,
dashes or dots: ``4111.1111.1111.1111``); a long machine-made
value right after ``api key`` or ``AWS secret`` ``[api-key]`` (after ``secret`` alone, or
later in the sentence of an ``AKIA...`` key id, only the shape of AWS's 40-character secret
access key); a phone number in any national format after ``tel``, ``phone``, ``mobile``,
``cell``, ``móvil``, ``celular``, ``cellulare``, ``Telefonnummer``, ``Handynummer``, ``电话`` or ``手机`` (after
``portable`` or ``Handy``, with a colon or dialled with 0 or +), a few words like "number" or "to reach me" between
(``tel: [phone]``, ``my phone number to reach me is [phone]``), a verb of those languages too (``mi móvil es [phone]``,
``mon portable est [phone]``, ``il mio cellulare è [phone]``, ``meine Handynummer ist [phone]``), after
"my number" in them (``mon numéro est le [phone]``, ``meu número é [phone]``), or after "call me at"
(``call me at [phone]``); a PIN (three to eight digits: not ``pin 3 of the header``), a passcode's digits
and the digits of a door, gate, alarm, safe or unlock code ``[password]`` (``PIN [password]``,
``my pin number is [password]``, ``passcode [password]``, ``the door code is [password]``,
``unlock code [password]``, ``门禁码是[password]``, ``开机密码[password]``, not ``密码2024年改过``), and the
four to eight digits of a one-time code (``my OTP is [password]``, ``verification code [password]``,
``2FA code: [password]``, ``2FA backup code [password]`` of ``4821-9932``; and in other languages: ``Ihr
Bestätigungscode lautet [password]``, ``Einmalcode``, ``TAN`` in capitals, ``código de verificación``, ``code de
vérification``, ``code de confirmation``; not ``código postal 28001``). A wifi key is a password (``my wifi key is
[password]``, ``WPA key [password]``, ``WLAN-Schlüssel: [password]``, after a network's name ``SSID HomeNet key
[password]``, ``WiFi: HomeNet / key: [password]``, a made-up value only),
and so is what follows a user and a slash after ``login`` (``login: bob / [password]``; with no colon,
only a value that looks made up). Without a
verb or colon a password must mix letters and digits (``wifi password [password]``); after
``pass``, a word with many other senses, it must also hold a symbol (``pass [password]``),
or with a colon or ``is`` at least mix both cases and digits (``my pass is [password]``,
not ``--- PASS: TestLogin2``, a test runner's capitals);
and several words that end the clause after a colon or ``is`` are one passphrase
(``my password is [password]``, ``密码是：[password]``) unless they read as a remark about it.
A value a verb or a colon hands over runs to the next space: a final ``!`` or ``?`` is part of it
(``password: [password]`` of ``password: Sup3rS3cret!``), and only a final full stop, comma,
semicolon, colon or closing bracket stays outside as the sentence's (``my password is [password].``);
a value of digits alone ends before a final ``!`` too (``my PIN is [password]!``).

Identity numbers are known in those languages too, after their name and a colon, a verb or a space
(``[id-number]``): passports and identity cards (``Reisepassnummer ist``, ``Personalausweis:``, ``número de
pasaporte:``, ``mon numéro de passeport est``, ``numero di passaporto``, ``número do passaporte``, ``carte
d'identité``), a German tax id or tax number (``Steuer-ID 12 345 678 901``, ``Steueridentifikationsnummer``,
``Steuernummer 12/345/67890``), a French social security number (``numéro de sécurité sociale``, ``sécu``,
``NIR``), a Spanish ``DNI``/``NIE``/``NIF``, an Italian ``codice fiscale`` and a Brazilian ``CPF``, whatever their check
characters. Without a name, only those the check characters prove: a DNI or NIE by its letter (``12345678Z``,
``X1234567L``), a codice fiscale (``RSSMRA85T10A562S``), a CPF written with its dots and dash (``123.456.789-09``) and a
French social security number by its key (``185057800608491``), or written in the groups of the carte Vitale,
which no other number has, whatever its key (``1 85 05 78 006 084 36``: one id, not ``1 85 05 78 [phone]``).

Passwords and PINs are also known in German, Spanish, French, Italian and Portuguese, after a colon
or a verb as in English: ``Passwort``/``Kennwort`` ``ist``/``lautet``, ``contraseña es``, ``mot de passe est``,
``la password è``, ``a senha é``, ``meine PIN ist``, ``Geheimzahl``, ``code PIN``, ``code secret``
(``Mein Passwort ist [password]``, ``Kennwort: [password]``, ``Meine PIN ist [password]``); not
``das Passwort ist zu kurz`` or ``la contraseña es incorrecta``, which describe the password. ``clave``
(also a key, a clef, a clue) takes only a value that looks made up (``mi clave es [password]``, not
``la clave es la paciencia``).
A password may also come before its name (``[password] is my password``, ``use [password]
as the wifi password``, ``[password] is the gate code``), in quotes right after it
(``the password '[password]'``; Chinese corner and title brackets are quotes too:
``密码「[password]」``) or after a pause (``my wifi password, it is [password]``):
then only its look sets it apart from the words around it, and it must look made up
(letters and digits, or six digits or more; a code or PIN its digits), or be a single
plain word where only a password can stand: beginning its clause before "is my/the ...
password" (``[password] is the wifi password``, not "This is my password"), or ending
the clause after a pause (``my password? it's [password]``, not "my password, it's tricky").

A phone number that runs on into more digits (``+1 415 555 0199 98765``) is the longest
run of its groups that makes a number: ``[phone] 98765``. It ends at a space if one makes
a number, else at a dash (``+1-415-555-0199-98765``: ``[phone]-98765``), and never inside
another number joined to it (``415-555-0100-415-555-0199``: ``[phone]-[phone]``).
A number dialled with 00 for + is read as with + (``0086 138 1234 5678``, ``0044 20 7946 0958``);
a Chinese mobile number also with its country code and no + (``86-13812345678``), with dots
(``138.1234.5678``), and where it ends an id (``msg-[phone]``, ``wx_[phone]``).

Text is read as it looks: any Unicode space counts as a space, fullwidth letters,
digits and symbols as ASCII (``４１１１ １１１１ …``, ``ｐａｓｓｗｏｒｄ``), and invisible
characters (zero-width spaces, soft hyphens) hide nothing; outside what is replaced
the text keeps its own characters. Email addresses may be written in any script
(``张三@qq.com``, ``ana@mail.例子.中国``), and written out to fool a parser: ``carl.meyer (at) gmx.de``,
``ana [at] gmail [dot] com``, ``ana at gmail dot com`` are ``[email]``. Such an address must end in a known
top-level domain, and an "at" in no brackets takes only dots spelled out and a local part that is no word prose
puts before "at" (not ``look at gmail dot com``, ``I worked at google dot com``, ``look at google.com``).

Every pattern runs in linear time: values are matched greedily up to a
delimiter, and each search starts only at a fixed keyword or delimiter.

>>> redact("Call me at +1 415-555-0132 tomorrow")
'Call me at [phone] tomorrow'
>>> redact("我的密码是abc123，别告诉别人")
'我的密码是[password]，别告诉别人'
>>> redact("I forgot my password again on 8 May, 2023")
'I forgot my password again on 8 May, 2023'
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

__all__ = ["Finding", "KINDS", "find_sensitive", "only_placeholders", "redact", "redact_label", "redact_obj"]

Kind = Literal["email", "phone", "card", "id-number", "iban", "password", "api-key", "token", "private-key"]
KINDS: tuple[str, ...] = get_args(Kind)


@dataclass(frozen=True, slots=True)
class Finding:
    """One piece of sensitive data: its kind and where it sits in the text (``text[start:end]``)."""

    kind: Kind
    start: int
    end: int

    @property
    def placeholder(self) -> str:
        return f"[{self.kind}]"


def only_placeholders(text: str) -> bool:
    """Whether ``text`` (redacted) says nothing but the placeholders of what was taken out."""
    return bool(text.strip()) and not re.sub(_PLACEHOLDER, " ", text).strip(" \t\n.,;:!?-'\"")


# A value that is already a placeholder is never found again: redact is idempotent.
_PLACEHOLDER = r"\[(?:" + "|".join(re.escape(k) for k in KINDS) + r")\]"
_PLACEHOLDER_RE = re.compile(_PLACEHOLDER)
# (public: what stands for a secret taken out is no word of the text, for tags and phrases)
PLACEHOLDER_RE = _PLACEHOLDER_RE

# Numbers are only taken whole: not glued to letters, digits, ids (``fact_123``,
# uuids) or decimals (``3.14159265358``). CJK letters around a number are fine.
_NUM_START = r"(?<![0-9A-Za-z_-])(?<![0-9][.,])"
_NUM_END = r"(?![0-9A-Za-z_])(?![.,][0-9])"
_ASCII_START = r"(?<![0-9A-Za-z])"
_ASCII_END = r"(?![0-9A-Za-z])"

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: Kind
    pattern: re.Pattern[str]
    check: Check | None = None
    # Keyword forms ("password: x") redact only the value, held in one of these groups.
    value_groups: tuple[str, ...] = ()
    # The pattern runs only if the lower-cased text holds one of these (when given).
    cue: tuple[str, ...] = ()
    # For a match that may run on into the next value ("+1 415 555 0199 98765"): the span of
    # what is sensitive in it, or None. Used instead of ``check`` and ``value_groups``.
    fit: Callable[[re.Match[str]], tuple[int, int] | None] | None = None
    # For a value another may be joined to ("415-555-0100-415-555-0199"): given the text, the end of
    # one value and the end of the match it was taken from, the span of the value that begins right
    # after it and the end of the match that one was taken from, or None.
    follow: Callable[[str, int, int], tuple[int, int, int] | None] | None = None

    def find(self, text: str) -> list[Finding]:
        found = []
        followed = 0  # how far values joined to others were followed: each stretch once, so linear
        for m in self.pattern.finditer(text):
            if self.fit is not None:
                span = self.fit(m)
                if span is None:
                    continue
                start, end = span
            elif self.check is not None and not self.check(m):
                continue
            else:
                start, end = _value_span(m, self.value_groups)
            found.append(Finding(self.kind, start, end))
            if self.follow is None or end <= followed:
                continue
            limit = m.end()
            while (joined := self.follow(text, end, limit)) is not None:
                start, end, limit = joined
                found.append(Finding(self.kind, start, end))
            followed = end
        return found


def _value_span(m: re.Match[str], groups: tuple[str, ...]) -> tuple[int, int]:
    for name in groups:
        if m.group(name) is not None:
            return m.span(name)
    return m.span()


def _digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


# --- checksums -----------------------------------------------------------------


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_ok(m: re.Match[str]) -> bool:
    digits = _digits(m.group())
    # Issuers start with 2-6 (Mastercard, Amex/Diners, Visa, Mastercard, Discover/UnionPay).
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and _luhn_ok(digits)


# A day written YYYYMMDD, as a resident ID holds the birth date.
_COMPACT_DATE = r"(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
_COMPACT_DATE_RE = re.compile(_COMPACT_DATE)
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _cn_id_ok(m: re.Match[str]) -> bool:
    """GB 11643 check character (ISO 7064 MOD 11-2) of an 18-character resident ID."""
    value = m.group().upper()
    total = sum(int(d) * w for d, w in zip(value[:17], _CN_ID_WEIGHTS))
    return "10X98765432"[total % 11] == value[17]


def _iban_ok(m: re.Match[str]) -> bool:
    value = m.group().replace(" ", "")
    if not 15 <= len(value) <= 34:
        return False
    rearranged = value[4:] + value[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _subscriber_number(value: str, shortest: int = 8) -> bool:
    digits = _digits(value)
    # Round figures ("14000000000") are amounts, not subscribers.
    return shortest <= len(digits) <= 15 and "0000000" not in digits


def _phone_length_ok(value: str, shortest: int = 8) -> bool:
    """As many digits as a subscriber's number. Only the North American plan's country code starts
    with 1 (+1 and 10 digits), and a Chinese mobile is 1 and 10 digits too: more is a number and more."""
    digits = _digits(value)
    return _subscriber_number(digits, shortest) and (digits[0] != "1" or len(digits) <= 11)


def _phone_ok(value: str) -> bool:
    return _PHONE_RE.fullmatch(value) is not None and _phone_length_ok(value)


def _longest_phone(
    m: re.Match[str], group: int | str, ok: Callable[[str], bool], head: re.Pattern[str]
) -> tuple[int, int] | None:
    """The phone number the value of ``m`` begins with: all of it, or its longest prefix of whole
    groups that is one (``+1 415 555 0199`` of ``+1 415 555 0199 98765``: a number, then a code).

    The regex takes groups greedily, and a longer number that no check accepts would otherwise
    hide the number before it. Where the prefix ends, in this order:

    - where another number of the strict forms begins (``+44 20 7946 0958`` of
      ``+44 20 7946 0958 415 555 0100``, ``415-555-0100`` of ``415-555-0100-415-555-0199``):
      a group of the next number is no part of this one; after a dash, also where another
      number that ``head`` finds and ``ok`` takes begins (after a phone's name, any format);
    - at a space: a group joined by ``-`` or ``.`` belongs to the value that goes on
      (``... 0199 123-45-6789``);
    - at a dash, when no space makes a number (``+1-415-555-0199`` of ``+1-415-555-0199-98765``),
      first where a number of the strict forms ends.
    """
    value, start = m.group(group), m.start(group)
    if ok(value):
        return start, start + len(value)
    text, strict = m.string, ok is _phone_ok
    best: tuple[int, int] | None = None  # (rank, cut): the lowest rank, then the longest
    for cut in range(len(value) - 1, 0, -1):
        sep = value[cut]
        if sep not in " -" or not value[cut - 1].isdigit() or not value[cut + 1 : cut + 2].isdigit():
            continue
        prefix = value[:cut]
        if not ok(prefix):
            continue
        if _phone_at(text, start + cut + 1, _PHONE_HEAD, _phone_ok) is not None:
            return start, start + cut
        if sep == "-" and not strict and _phone_at(text, start + cut + 1, head, ok) is not None:
            rank = 1
        elif sep == " ":
            rank = 2
        else:
            rank = 3 if strict or _phone_ok(prefix) else 4
        if best is None or rank < best[0]:
            best = (rank, cut)
    return None if best is None else (start, start + best[1])


def _phone_at(text: str, pos: int, head: re.Pattern[str], ok: Callable[[str], bool]) -> tuple[int, int] | None:
    """The span of the phone number that ``head`` finds right at ``pos``: all of its match or its longest
    prefix before a space or a dash (without looking further: this asks what follows another number)."""
    m = head.match(text, pos)
    if m is None:
        return None
    value = m.group()
    if ok(value):
        return m.span()
    for seps in (" ", "-"):
        for cut in range(len(value) - 1, 0, -1):
            if value[cut] in seps and value[cut - 1].isdigit() and ok(value[:cut]):
                return pos, pos + cut
    return None


def _joined(
    head: re.Pattern[str], ok: Callable[[str], bool]
) -> Callable[[str, int, int], tuple[int, int, int] | None]:
    """The phone number joined to the one that ends at ``end``: after a dash, one that ``head`` finds and
    ``ok`` takes (``415-555-0100-415-555-0199``: a number never starts after a dash on its own, as in
    ``ISBN 978-...`` or ``ORD-415-...``); after a space, one of the strict forms, where the regex ran
    on into it (``limit``, the end of the match, lies beyond ``end``): else the search finds it itself."""

    def follow(text: str, end: int, limit: int) -> tuple[int, int, int] | None:
        sep = text[end : end + 1]
        if sep == "-":
            m = head.match(text, end + 1)
            span = None if m is None else _longest_phone(m, 0, ok, head)
        elif sep == " " and end < limit:
            m = _PHONE_HEAD.match(text, end + 1)
            span = None if m is None else _longest_phone(m, 0, _phone_ok, _PHONE_HEAD)
        else:
            return None
        return None if m is None or span is None else (span[0], span[1], m.end())

    return follow


_GROUP_RE = re.compile(r"\d+")


def _card_number_span(m: re.Match[str]) -> tuple[int, int] | None:
    """The card number that follows a card's name: the longest run of its groups that holds 13 to 19 digits
    (``6217 0000 1234 5678 901`` of ``6217 0000 1234 5678 901 2026``), or None."""
    start = m.start("bare")
    best, digits = None, 0
    for g in _GROUP_RE.finditer(m.group("bare")):
        digits += len(g.group())
        if digits > 19:
            break
        if digits >= 13:
            best = start + g.end()
    return None if best is None else (start, best)


def _phone_span(m: re.Match[str]) -> tuple[int, int] | None:
    return _longest_phone(m, 0, _phone_ok, _PHONE_HEAD)


_DATE_RE = re.compile(r"\d{4}([./-])\d{1,2}\1\d{1,2}|\d{1,2}([./-])\d{1,2}\2\d{2,4}")


def _named_phone_ok(value: str) -> bool:
    """After its name a phone number may be local (7 digits: ``tel 555 0132``), but not a date (``phone: 2023-05-08``)."""
    return _phone_length_ok(value, shortest=7) and not _DATE_RE.fullmatch(value)


def _named_phone_span(m: re.Match[str]) -> tuple[int, int] | None:
    return _longest_phone(m, "bare", _named_phone_ok, _NAMED_PHONE_HEAD)


# An ISO date that a serial follows ("0099-01-01-10"): day and month of two digits, as no number dialled with 00 has them.
_ISO_DATE_START_RE = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?!\d)")


def _intl_phone_ok(value: str) -> bool:
    """A number dialled with 00 (``0086 138 1234 5678``), and no date: ``0012-05-08`` reads as 00 and a country code
    (and ``0099-01-01-10`` as a date and a serial)."""
    return (
        _INTL_PHONE_RE.fullmatch(value) is not None
        and _phone_length_ok(value)
        and not _DATE_RE.fullmatch(value)
        and not _ISO_DATE_START_RE.match(value)
    )


def _intl_phone_span(m: re.Match[str]) -> tuple[int, int] | None:
    return _longest_phone(m, 0, _intl_phone_ok, _INTL_PHONE_HEAD)


# --- what a secret value looks like -------------------------------------------------

# Words that follow "password is" in sentences that give no password.
_NOT_A_PASSWORD = frozenset(
    """
    a an the not no too so very really quite still also now just only all any my your his her our
    their its this that it in on at for of to by with from under into inside here there what which
    how why where when who same different wrong right correct incorrect invalid valid weak strong
    long short simple easy hard difficult secure insecure safe unsafe secret private public empty
    blank missing required optional expired locked changed reset saved stored written hidden known
    unknown new old good bad fine ok okay none null something anything nothing somewhere being
    case usually always never please stolen leaked compromised forgotten lost mine yours hers ours
    theirs one two three four five six seven eight nine ten twelve see ask check use call try contact
    """.split()
)
_ENGLISH_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "ive", "ful", "ous", "less", "tion")
# Values a form or a note gives for "no password here" ("Password: N/A", "password: ****").
_NO_VALUE = re.compile(r"(?i:n/?a|tb[ad]|nil|unset|-+|—|\?+|\*+|x{3,})")


def _plain_word(value: str) -> bool:
    """An ordinary lower-case English word or phrase-word, not something a person made up."""
    bare = value.rstrip(".,;:!?")
    if bare in _NOT_A_PASSWORD or bare == "I":
        return True
    if not re.fullmatch(r"[a-z]+(?:-[a-z]+)*", bare):
        return False
    return "-" in bare or (len(bare) >= 5 and bare.endswith(_ENGLISH_SUFFIXES))


def _random_looking(value: str) -> bool:
    """A machine-made secret: letters and digits mixed, or mixed case, or simply long."""
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    mixed_case = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    return (has_digit and has_alpha) or mixed_case or len(value) >= 24


# Characters that people put in passwords and ordinary words, names and identifiers lack.
_PASSWORD_SYMBOLS = frozenset("!@#$%^&*+=?~")


def _symbolic_secret(value: str) -> bool:
    """Letters, digits and a password symbol together (``Zebra#4421``): a password whatever word came before."""
    return (
        len(value) >= 6
        and any(ch.isalpha() for ch in value)
        and any(ch.isdigit() for ch in value)
        and any(ch in _PASSWORD_SYMBOLS for ch in value)
    )


_LETTERS_AND_DIGITS = re.compile(r"[A-Za-z]+|\d+")


def _scrambled(value: str) -> bool:
    """Letters of both cases and digits shuffled together (``Zq8kL2pW9``), as no name or reference is written.

    A name takes its number as a suffix (``TestLogin2``, ``level3``, ``Gate12``): it changes
    between letters and digits once, where a made-up value changes three times or more; and
    a booking or ticket reference (``A12B34C5``) is written in one case.
    """
    return (
        len(value) >= 8
        and value.isalnum()
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and len(_LETTERS_AND_DIGITS.findall(value)) >= 4
    )


def _pin_ok(value: str) -> bool:
    """A PIN is its digits, three to eight of them: ``pin 3 of the header`` is a pin of another kind."""
    return value.isdigit() and 3 <= len(value) <= 8


def _pin_key(key: str) -> bool:
    """A PIN's name, in any of the languages known: ``PIN``, ``pin number``, ``Geheimzahl``, ``code PIN``."""
    return key.startswith("pin") or key.endswith("pin") or key in ("geheimzahl", "code secret")


def _cased_secret(value: str) -> bool:
    """Letters of both cases and digits in one word of eight characters or more (``HunterZeta42``)."""
    return (
        len(value) >= 8
        and value.isalnum()
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and any(ch.isdigit() for ch in value)
    )


# Words that follow a password's name and its verb in the other languages known when the sentence gives no
# password ("das Passwort ist zu kurz", "la contraseña es incorrecta", "le mot de passe est trop court").
_FOREIGN_NOT_A_PASSWORD = frozenset(
    """
    zu nicht kein keine keinen falsch richtig korrekt sicher unsicher schwach stark lang kurz neu alt leer geheim
    gleich anders das der die dem den des dein deine mein meine sein seine ihr ihre unser unsere ein eine einen
    noch schon immer jetzt auch nur sehr ganz hier da dort was wie wo wer welches etwas nichts gut schlecht
    einfach schwer leicht bekannt unbekannt privat pflicht erforderlich vergessen mindestens bitte siehe unten
    oben identisch dasselbe
    muy demasiado la el lo los las mi mis tu tus su sus nuestra una un uno correcta correcto incorrecta incorrecto
    segura seguro insegura débil fuerte larga largo corta corto nueva nuevo vieja viejo vacía vacío secreta
    secreto igual diferente otra otro esta este esa ese aquí ahí qué que cuál cual fácil difícil buena bueno mala
    malo válida inválida misma mismo siempre nunca también ya todavía aún de del para por con sin en ver
    obligatoria obligatorio obligatoire obbligatoria obrigatória obrigatoria di du des
    trop très pas ne le les mon ma mes ton ta son sa notre votre leur une correcte incorrect incorrecte faux
    fausse juste sûr sûre faible fort forte longue court courte nouveau nouvelle ancien vide secrète même
    différent ici là quoi quel quelle facile difficile bon bonne mauvais mauvaise valide invalide toujours jamais
    aussi déjà encore dans sur voir
    troppo molto non il mia mio tua tuo sua suo sbagliata sbagliato giusta giusto corretta corretto sicura debole
    forte lunga lungo nuova vecchia vuota segreta stessa stesso diversa qui sempre mai anche già ancora
    muito não minha meu teu seu errada errado certa certo correta fraca fraco longa curta nova velha vazia
    mesma aqui fácil ainda
    """.split()
)
# In those languages, a word the list above lacks that says what the password is like: a participle or an
# adjective in lower case ("das Passwort ist abgelaufen", "ist ungültig", "la contraseña es requerida", "le mot
# de passe est changé"). A lower-case plain word of these endings given as the password is kept with them.
_FOREIGN_REMARK_RE = re.compile(
    r"(?:ab|an|auf|aus|ein|zurück|um|vor)?ge[a-zäöüß]{2,}(?:t|en)|[a-zäöüß]{3,}(?:ig|lich)"
    r"|[a-zà-ÿ]{3,}(?:ad[ao]s?|id[ao]s?|at[ao]|ut[ao]|ée?s?)"
)
_FOREIGN_KEYS = frozenset("passwort kennwort contraseña contrasena senha clave geheimzahl".split())


def _foreign(m: re.Match[str], key: str) -> bool:
    """Whether ``m`` gives a password in one of the other languages known: by its name or its verb."""
    verb = m.groupdict().get("verb")
    return key in _FOREIGN_KEYS or key.startswith("mot de") or (verb is not None and verb.lower() not in ("is", "was"))


def _password_ok(m: re.Match[str]) -> bool:
    key = m.group("key").lower()
    quoted = m.group("quoted")
    value = quoted if quoted is not None else m.group("bare")
    if _pin_key(key):
        return _pin_ok(value)
    if key == "pass":
        # Also a ticket, an exam, a move, a test result ("--- PASS: TestLogin2"), a Python
        # statement ('pass': 'The "pass" statement'): only a value that can be nothing but a password,
        # or (given with a colon or "is", and not in a test runner's capitals) one that mixes both
        # cases and digits ("my pass is HunterZeta42").
        return _symbolic_secret(value) or _scrambled(value) or (m.group("key") != "PASS" and _cased_secret(value))
    if key == "clave":
        # "la clave es la paciencia", "clave de sol": only a made-up value or a PIN
        return _made_up(value) or _symbolic_secret(value) or (value.isdigit() and len(value) >= 4)
    if quoted is not None:
        return True
    if _NO_VALUE.fullmatch(value.rstrip(".,;:!")) or not value.strip("!?.,;:"):
        return False
    word = value.rstrip("!?")
    if word.lower() in _FOREIGN_NOT_A_PASSWORD or word.lower() in _PASSWORD_QUALITIES:
        return False
    if _foreign(m, key) and word.islower() and word.isalpha() and _FOREIGN_REMARK_RE.fullmatch(word):
        return False
    # "password is 8 characters", "密码是6位数": a length, not a password.
    return not (value.isdigit() and len(value) < 4) and not _plain_word(value)


def _secret_value_ok(m: re.Match[str]) -> bool:
    quoted = m.group("quoted")
    value = quoted if quoted is not None else m.group("bare")
    return len(value) >= 6 and _random_looking(value)


# What follows a number that counts something ("密码2024年改过", "密码1000元"): no PIN.
_ZH_UNIT = "[年月日号號时時点點分秒位个個元块塊次天周岁歲]"
_ZH_UNIT_RE = re.compile(rf"\s*{_ZH_UNIT}")


def _bare_password_ok(m: re.Match[str]) -> bool:
    """A password given without a verb: a PIN of four digits or more ("开机密码1234", "保险箱密码 2580") that
    counts nothing, or six characters or more holding a digit ("密码 abc123") that are no date or version."""
    value = m.group("bare")
    if value.isdigit():
        return len(value) >= 4 and _ZH_UNIT_RE.match(m.string, m.end()) is None
    return any(ch.isdigit() for ch in value) and len(value) >= 6 and not _MEASURE_RE.fullmatch(value)


# Values with digits and letters that are no password: versions, times, sizes, ordinals ("v2.3.0", "10:30am", "5GHz").
_MEASURE_RE = re.compile(
    r"(?i)v?\d+(?:[.:/-]\d+)+[a-z]{0,2}|\d+(?:am|pm|st|nd|rd|th|[kmgt]b|[kmg]hz|px|ms|mph|km|kg|k|m)"
)


def _bare_english_password_ok(m: re.Match[str]) -> bool:
    """``wifi password Summer2024!``, ``pwd Zebra#4421``: no verb or colon, so only a value mixing letters and digits.

    Paths (``pwd /home/u1``), command flags and measures (``password 8am``) are left alone; after
    ``pass`` (a ticket, a move: "a day pass 2x") the value must also hold a symbol (``pass Xy9$abc``).
    """
    value = m.group("bare")
    return (
        (m.group("key").lower() != "pass" or _symbolic_secret(value))
        and len(value) >= 6
        and any(ch.isalpha() for ch in value)
        and any(ch.isdigit() for ch in value)
        and not value.startswith(("/", "~", ".", "-"))
        and "/" not in value
        and "\\" not in value
        and not _MEASURE_RE.fullmatch(value)
        and _literal(value)
    )


# Words that never make part of a passphrase: a clause holding one talks about the password instead.
# Adjectives that say "password is correct" yet may start a passphrase ("correct horse battery staple").
_PHRASE_ADJECTIVES = frozenset("correct right wrong new old good bad long short simple easy hard strong weak".split())
_PHRASE_STOPWORDS = (_NOT_A_PASSWORD - _PHRASE_ADJECTIVES) | frozenset(
    """
    i me you he she we they him us them these those is am are was were be been do does did have has had will would
    can could should shall may might must and or but if then than as about after before again today tonight
    tomorrow yesterday later soon already yet ever set sent needed updated
    password passwords passphrase pass login user username account email
    """.split()
)


def _passphrase_ok(m: re.Match[str]) -> bool:
    """Several words that end the clause (``password is correct horse battery staple``, ``密码是：correct horse``).

    A clause that holds a function word (``password: see the email I sent``), a time
    word or a participle (``password: changed last week``) says something about the password.
    After an English keyword two words are too often a remark (``password is pretty weak``): three at least.
    """
    key = m.group("key") or m.group("zh")
    words = m.group("bare").lower().split()
    if key.lower().startswith("pin") or (m.group("key") is not None and len(words) < 3):
        return False
    return not any(w in _PHRASE_STOPWORDS or (len(w) >= 5 and w.endswith(_ENGLISH_SUFFIXES)) for w in words)


def _in_query(m: re.Match[str]) -> bool:
    """The key of ``m`` is a URL query parameter (``?password=``, ``&access_token=``): left to the query detectors."""
    i, stop = m.start(), max(0, m.start() - 64)
    while i > stop and (m.string[i - 1].isalnum() or m.string[i - 1] in "_.-"):
        i -= 1
    return i > 0 and m.string[i - 1] in "?&;"


# Stand-ins for a value, not a value: ${DB_PASSWORD}, $PGPASS, {token}, {{ secret }}, <password>, ****, %s.
_TEMPLATE_RE = re.compile(r"\$\{?\w+\}?|\{\{?\s*[\w.]*\s*\}?\}|<[\w .-]*>|\*+|%(?:\(\w+\))?s")
_FLAGS = frozenset("true false yes no on off null none 0 1".split())


def _literal(value: str) -> bool:
    return not _TEMPLATE_RE.fullmatch(value)


def _userinfo_ok(m: re.Match[str]) -> bool:
    return _literal(m.group("bare"))


def _query_ok(m: re.Match[str]) -> bool:
    value = m.group("bare")
    return _literal(value) and value.lower() not in _FLAGS


def _login_password_ok(m: re.Match[str]) -> bool:
    """``login: bob / hunter2``: only the value's look tells it from a pair of words ("login: email / password",
    "Login: Google / Facebook"): letters and digits (four or more after a colon, else six), six digits or more,
    a password symbol among letters and digits, or both cases and digits."""
    value = m.group("bare")
    if not _literal(value) or value.startswith(("/", "~", ".", "-")) or "/" in value or "\\" in value:
        return False
    if _made_up(value) or _symbolic_secret(value) or _cased_secret(value.rstrip("!?")):
        return True
    return (
        m.group("colon") is not None
        and len(value) >= 4
        and any(ch.isalpha() for ch in value)
        and any(ch.isdigit() for ch in value)
        and not _MEASURE_RE.fullmatch(value)
    )


def _keyword_password_ok(m: re.Match[str]) -> bool:
    return not _in_query(m) and _password_ok(m)


def _made_up(value: str) -> bool:
    """A value no sentence uses as a word: letters and digits together (``hunter2``) or six digits or
    more (``123456``), and not a measure (``2am``), a path or a stand-in (``${PASSWORD}``).

    Asked where nothing but the value's look tells it from the words around it: a value
    given before the password's name, or after a pause ("my password, it is ...").
    """
    if len(value) < 6 or not _literal(value) or value.startswith(("/", "~", ".", "-")) or "/" in value or "\\" in value:
        return False
    if value.isdigit():
        return True
    return any(ch.isalpha() for ch in value) and any(ch.isdigit() for ch in value) and not _MEASURE_RE.fullmatch(value)


def _quoted_password_ok(m: re.Match[str]) -> bool:
    """``the password 'letmein123'``: quotes set the value apart, but after the bare word they as often mark a
    label or a word (``the password "field"``, ``type password "slowly"``): only a value that looks made up."""
    value = m.group("quoted")
    return _made_up(value) or (len(value) >= 6 and _literal(value) and _random_looking(value))


# A word, as a plain-word password is one ("tulip", "Sunshine"): letters only.
_WORD_RE = re.compile(r"[A-Za-z]{3,32}")
# Words that say what a password is like, not what it is ("my password? it's tricky").
_PASSWORD_QUALITIES = frozenset(
    """
    gone broken weird silly stupid dumb funny tricky random personal obvious complex unique temporary
    lowercase uppercase numeric alphanumeric sensitive similar identical important great perfect cool nice
    crazy insane ancient terrible awful horrible ridiculous impossible fake real easier harder shorter longer
    """.split()
)
_CLAUSE_END_RE = re.compile(r"[ \t]*(?:[.,;:!?…)\]\n]|$)")


def _told_password_ok(m: re.Match[str]) -> bool:
    """``my wifi password, it is BlueFalcon77``: after a pause the clause may say anything
    ("my password, it is Tuesday's fault"): a bare value must look made up, or be a single
    word that ends the clause and says nothing about the password (``my password? it's tulip``,
    not ``my password, it's tricky``)."""
    quoted = m.group("quoted")
    if quoted is not None:
        return _literal(quoted) and not _plain_word(quoted) and not _NO_VALUE.fullmatch(quoted)
    value = m.group("bare")
    if _made_up(value):
        return True
    value = value.rstrip("!?")  # "my password? it's tulip!": a final "!" ends the clause too
    word = value.lower()
    return (
        _WORD_RE.fullmatch(value) is not None
        and (value != m.group("bare") or _CLAUSE_END_RE.match(m.string, m.end()) is not None)
        and not _plain_word(word)
        and word not in _PASSWORD_QUALITIES
    )


# Words before a password's name that make the sentence a remark about the value ("123456 is the most
# common password", "hunter2 is not my password").
_REMARK_WORDS = frozenset(
    "not never no most least worst best common commonest popular typical default example sample weakest"
    " strongest famous classic standard".split()
)
# The same for a plain word, which only its place tells from the words around it ("tulip is a bad password",
# "tulip is the wrong password").
_WORD_REMARK_WORDS = _REMARK_WORDS | frozenset(
    "good bad weak strong easy easiest simple simplest hard obvious usual same wrong terrible awful great"
    " perfect favourite favorite first only".split()
)
# Words that stand before "is my password" in sentences that give none ("This is my password",
# "What is the password?", "My birthday is my password").
_NOT_A_NAMED_WORD = (
    _NOT_A_PASSWORD
    | _PASSWORD_QUALITIES
    | frozenset(
        """
        whose whatever whichever everything everyone everybody someone somebody anyone anybody nobody
        password passwords passphrase passcode pin code login username name birthday email phone number
        """.split()
    )
)
# Words after which a clause begins ("so sunshine is my password", "I think tulip was the wifi password").
_CLAUSE_OPENERS = frozenset(
    "and but so or because ok okay oh well yeah yes yep btw anyway also then now think guess say said says"
    " believe remember know sure hint lol haha".split()
)
_LAST_WORD_RE = re.compile(r"([A-Za-z]+)[ \t]*$")
# "Patience is the password to success": a password "to" something after a plain word is a figure of speech.
_TO_RE = re.compile(r"[ \t]+(?i:to)(?![A-Za-z])")


def _named_word_ok(m: re.Match[str], value: str) -> bool:
    """``sunshine is my password``, ``goldfish is the wifi password``: a plain word before its name.

    Only a single word that begins its clause (after nothing, punctuation, or "so", "I think"...)
    and is told as the password with "is" or "was" and "my", "the"...; not a pronoun or a question
    word ("This is my password", "What is the password?"), a word of a noun phrase ("her name is
    my password"), one a remark describes ("tulip is a bad password", "tulip is the wrong password")
    or a figure of speech ("Patience is the password to success").
    """
    if m.group("verb").lower() == "as" or m.group("det") is None or _WORD_RE.fullmatch(value) is None:
        return False
    word = value.lower()
    if word in _NOT_A_NAMED_WORD or _plain_word(word):
        return False
    if any(w.lower() in _WORD_REMARK_WORDS for w in m.group("between").split()) or _TO_RE.match(m.string, m.end()):
        return False
    start = m.start("bare")
    before = m.string[max(0, start - 32) : start].rstrip()
    if not before or before[-1] in ".!?;:,()[]\"'“‘”’—–-…*":
        return True
    last = _LAST_WORD_RE.search(before)
    return last is not None and last.group(1).lower() in _CLAUSE_OPENERS


def _named_after_ok(m: re.Match[str]) -> bool:
    """``hunter2 is my password``, ``0420 is my PIN``, ``4512 is the gate code``: a value given before its name.

    Nothing before the value says a secret comes, so it must look like one: a PIN or a
    code its digits, a password a made-up value (not "This is my password") or a single
    plain word where only a password can be (``sunshine is my password``: see :func:`_named_word_ok`).
    """
    if any(word.lower() in _REMARK_WORDS for word in m.group("between").split()):
        return False
    key = m.group("key").lower()
    quoted = m.group("quoted")
    value = quoted if quoted is not None else m.group("bare")
    if key.startswith("pin"):
        return _pin_ok(value)
    if key.endswith("code"):
        if _LOCK_CODE_RE.fullmatch(value):
            return True
        if not key.startswith("pass"):  # a door code is its digits; a passcode may be a password
            return False
    if quoted is not None:
        return _literal(value) and not _plain_word(value) and not _NO_VALUE.fullmatch(value)
    return _made_up(value) or _named_word_ok(m, value)


def _digit_code_ok(m: re.Match[str]) -> bool:
    """A door code is any run of its digits (``#2580``, ``1234#``); a PIN three to eight digits, a ``#``
    before them a number's sign (``pin #12``, a pin of a header), a ``#`` after them its end (``PIN 1234#``);
    a one-time code four to eight digits (``verification code 482913``)."""
    key = m.group("key")
    value = m.group("bare")
    if "-" in value:  # digits in two groups: a one-time code's only ("backup code 4821-9932"), and no span of years
        otp = m.group("zhotp") if key is None else _OTP_KEY_RE.fullmatch(key)
        return bool(otp) and not all(len(g) == 4 and g.startswith(("19", "20")) for g in value.split("-"))
    if key is None:  # a Chinese name: a one-time code's digits (验证码是 482913), or a lock's any
        return _otp_ok(value) if m.group("zhotp") else True
    if _OTP_KEY_RE.fullmatch(key):
        # "the OTP 2024 update": with only a space between, four digits of a year are a year
        year = len(value) == 4 and value.startswith(("19", "20"))
        return _otp_ok(value) and not (year and not m.string[m.end("key") : m.start("bare")].strip())
    key = key.lower()
    if not _pin_key(key):
        return True
    return _pin_ok(value.rstrip("#*"))


def _otp_ok(value: str) -> bool:
    return value.isdigit() and 4 <= len(value) <= 8


def _keyword_secret_ok(m: re.Match[str]) -> bool:
    return not _in_query(m) and _secret_value_ok(m)


def _keyword_api_key_ok(m: re.Match[str]) -> bool:
    """``api key: x`` as any keyword secret; ``api key x`` (a space only) if ``x`` is long and machine-made."""
    if not _keyword_secret_ok(m):
        return False
    if m.group("space") is None:
        return True
    value = m.group("quoted") if m.group("quoted") is not None else m.group("bare")
    if m.group("key").lower() == "secret":
        # "top secret Project2024Falcon": no key word, no key; but AWS's 40-character secret access key is one
        return _aws_secret_shaped(value)
    return len(value) >= 16 and any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


_AWS_SECRET_RE = re.compile(r"[A-Za-z0-9/+]{40}")


def _aws_secret_shaped(value: str) -> bool:
    """40 base64 characters, both cases and a digit or ``/``/``+`` among them, as AWS makes a secret access key
    (not a lower-case hex digest of the same length, nor a run of letters)."""
    return (
        _AWS_SECRET_RE.fullmatch(value) is not None
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and any(ch.isdigit() or ch in "/+" for ch in value)
    )


def _passport_ok(m: re.Match[str]) -> bool:
    """6-9 letters and digits, mostly digits (X12345678, 123456789, C01X00T47); all digits only if 7 or more,
    and not a date ("护照20270305到期")."""
    value: str = m.group("bare")
    digits = sum(ch.isdigit() for ch in value)
    return digits >= 5 and (digits < len(value) or (digits >= 7 and not _COMPACT_DATE_RE.fullmatch(value)))


def _foreign_id_ok(m: re.Match[str]) -> bool:
    """A passport or identity card number after its name in another language: as a passport's (``C01X00T47``,
    ``PAA123456``), or the ten to twelve digits of an older identity card (``880692310285``), no date."""
    value: str = m.group("bare")
    if len(value) <= 9:
        return _passport_ok(m)
    return value.isdigit() and not _COMPACT_DATE_RE.match(value)


def _tax_id_ok(m: re.Match[str]) -> bool:
    """A German tax id (``Steuer-ID``: eleven digits, the first no 0), or a tax number (``Steuernummer``: ten to
    thirteen digits, or the slashed form of the states, ``12/345/67890``)."""
    value, key = m.group("bare"), m.group("key").lower()
    digits = _digits(value)
    if "id" in key:
        return len(digits) == 11 and digits[0] != "0" and "/" not in value
    return "/" in value or 10 <= len(digits) <= 13


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(value: str) -> bool:
    """A Spanish DNI (eight digits) or NIE (X, Y or Z and seven digits) whose letter is its number's check letter."""
    value = value.replace("-", "")
    number = str("XYZ".index(value[0])) + value[1:-1] if value[0] in "XYZ" else value[:-1]
    return _DNI_LETTERS[int(number) % 23] == value[-1]


def _cpf_ok(value: str) -> bool:
    """A Brazilian CPF whose two check digits are right, and not one digit repeated (``111.111.111-11``)."""
    digits = _digits(value)
    if len(set(digits)) == 1:
        return False
    for n in (9, 10):
        check = sum(int(d) * w for d, w in zip(digits[:n], range(n + 1, 1, -1))) * 10 % 11 % 10
        if check != int(digits[n]):
            return False
    return True


def _nir_ok(m: re.Match[str]) -> bool:
    """A French social security number (NIR): in the grouping of the carte Vitale (``1 85 05 78 006 084 36``),
    which no other number has, whatever its key; ungrouped, only if its key (97 less the first 13 digits modulo
    97) proves it. Corsica's departments 2A and 2B count as 19 and 18."""
    if m.group("ns") is not None:
        return True
    value = m.group("nir")
    body = value[:5] + {"2A": "19", "2B": "18"}.get(value[5:7], value[5:7]) + value[7:13]
    return 97 - int(body) % 97 == int(value[13:])


def _national_id_ok(m: re.Match[str]) -> bool:
    """A DNI or NIE, a CPF or a NIR (whichever of them ``m`` found) that its check characters prove."""
    if m.group("dni") is not None:
        return _dni_ok(m.group("dni"))
    if m.group("cpf") is not None:
        return _cpf_ok(m.group("cpf"))
    return _nir_ok(m)


# The values the characters of a codice fiscale count for in odd places (first, third...): in even ones a digit
# counts for itself and a letter for its place in the alphabet.
_CF_ODD = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21,
         2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23),
    )
)


def _codice_fiscale_ok(m: re.Match[str]) -> bool:
    """An Italian codice fiscale whose last letter is the check character of the fifteen before it."""
    value = m.group()
    total = sum(
        _CF_ODD[ch] if i % 2 == 0 else ord(ch) - ord("A") if ch.isalpha() else int(ch) for i, ch in enumerate(value[:15])
    )
    return chr(ord("A") + total % 26) == value[15]


def _basic_auth_ok(m: re.Match[str]) -> bool:
    """``Basic <credentials>``: in an Authorization header always, in prose if it decodes to ``user:password``."""
    if m.group("auth") is not None:
        return True
    try:
        decoded = base64.b64decode(m.group("bare"), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


# Authorization schemes whose first word is no credential (Basic has its own detector).
_OTHER_AUTH_SCHEMES = r"(?i:basic|digest|negotiate|ntlm|aws4-hmac-sha256)"
# Words that follow "Authorization: Bearer" when a text describes the header instead of giving it.
_AUTH_WORDS = frozenset(
    "token tokens header headers scheme auth authentication authorization credential credentials value string key"
    " jwt here your my the a an".split()
)


def _auth_header_ok(m: re.Match[str]) -> bool:
    value = m.group("bare")
    if m.group("scheme") is None:  # "Authorization: <value>": only a machine-made value
        return len(value) >= 8 and _random_looking(value)
    return value.lower() not in _AUTH_WORDS and not _plain_word(value) and _literal(value)


_COMMAND_CURL_RE = re.compile(r"(?<![\w-])curl(?![\w-])")
_COMMAND_MYSQL_RE = re.compile(r"(?<![\w-])(?:mysql|mariadb)[\w-]*(?![\w-])")


def _line_before(m: re.Match[str], limit: int = 512) -> str:
    """The text of ``m``'s line before it, at most ``limit`` characters (a bound keeps many matches linear)."""
    start = max(m.start() - limit, m.string.rfind("\n", 0, m.start()) + 1)
    return m.string[start : m.start()]


def _curl_user_ok(m: re.Match[str]) -> bool:
    """``-u user:password`` is curl's; ``-u`` means other things to other commands (``docker run -u 1000:1000``)."""
    return _COMMAND_CURL_RE.search(_line_before(m)) is not None and _literal(m.group("bare"))


def _mysql_password_ok(m: re.Match[str]) -> bool:
    """``-p<password>`` is a password to the MySQL clients only (``mkdir -p``, ``ssh -p 22`` are no secrets)."""
    value = m.group("quoted") if m.group("quoted") is not None else m.group("bare")
    return _COMMAND_MYSQL_RE.search(_line_before(m)) is not None and _literal(value)


def _netrc_ok(m: re.Match[str]) -> bool:
    value = m.group("quoted") if m.group("quoted") is not None else m.group("bare")
    if not _literal(value):
        return False
    if m.group("login") is None and not re.match(r"\s+(?:login|account)\s", m.string[m.end() : m.end() + 16]):
        return False
    # "machine learning login page password reset" is prose: a host name has a dot, or the value is no word.
    host = m.group("host")
    return host is None or "." in host or host == "localhost" or not _plain_word(value)


# Values after a Chinese password word that say something about the password instead of giving it.
_ZH_NOT_A_PASSWORD = frozenset(
    """
    什么 啥 多少 哪个 哪些 几位 几个 空 无 没有 未设置 不知道 忘了 忘记了 对的 错的 正确的 错误的 一样的 相同的
    默认 默认的 保密 略 同上 见上 见下 如下 以下 下面 上面 这个 那个 它 生日 我的生日 手机号 身份证后六位
    """.split()
)
_ZH_NOT_A_PASSWORD_START = tuple(
    "请 见 忘 没 不 未 已 在 要 需 必须 应 可以 由 和 与 跟 也 都 还 就 太 很 非常 比较 至少 最少 长度 通常 一般 同".split()
)
_ZH_LENGTH_RE = re.compile(r"[零一二两三四五六七八九十百几\d]+(?:位|个字|个字符)")


def _zh_password_ok(m: re.Match[str]) -> bool:
    """A Chinese value after a Chinese password word ("口令：芝麻开门"), not a remark about it ("密码：请联系管理员")."""
    value = m.group("bare")
    return (
        value not in _ZH_NOT_A_PASSWORD
        and not value.startswith(_ZH_NOT_A_PASSWORD_START)
        and not value.endswith(("吗", "呢", "吧", "么"))
        and not _ZH_LENGTH_RE.match(value)
    )


# Quotes that set a value apart, Chinese corner and title brackets among them ("密码是「Secret99」").
_OPEN_QUOTE = "\"'“‘`「『【《〈"
_CLOSE_QUOTE = "\"'”’`」』】》〉"


def _value(bare: str) -> str:
    """A secret value: quoted (anything up to the closing quote) or bare; never a placeholder."""
    return (
        rf"(?:[{_OPEN_QUOTE}](?P<quoted>(?!{_PLACEHOLDER}[{_CLOSE_QUOTE}])[^{_CLOSE_QUOTE}\n]{{1,128}})[{_CLOSE_QUOTE}]"
        rf"|(?P<bare>(?!{_PLACEHOLDER}){bare}))"
    )


# A bare value ends before trailing punctuation and the next space or quote (or,
# for values that follow Chinese words, the next non-ASCII character). It is
# taken greedily and given back up to its last non-punctuation character: a
# lazy value with a look-ahead over the punctuation would be quadratic on long
# runs of it.
_TRAIL = r"[.,;:!?)\]]"
# A password handed over by a verb or a colon ("password: Sup3rS3cret!", "my password is abc!!!") runs to
# the next space: "!" and "?" are characters people put in passwords, and one left outside would give
# the password's end away. Only what reads as the sentence's punctuation stays outside: a final full
# stop, comma, semicolon or colon, and a closing bracket ("my password is hunter2." keeps its ".").
_GIVEN_TRAIL = r"[.,;:)\]]"


def _bare(chars: str, stop: str, trail: str = _TRAIL) -> str:
    """A run of ``chars`` that ends where ``stop`` (or the end) follows, minus its trailing punctuation."""
    return rf"{chars}*(?!{trail}){chars}(?={trail}*(?:{stop}|$))"


_SPACED_CHAR = rf"[^\s{_OPEN_QUOTE}{_CLOSE_QUOTE}，。；、！？]"
_SPACED_STOP = rf"[\s{_OPEN_QUOTE}{_CLOSE_QUOTE}，。；、！？]"


def _given(chars: str, stop: str) -> str:
    """A value a verb or a colon hands over: all of it to the next space but the sentence's punctuation;
    a value of digits alone (a PIN, a code: "my PIN is 4821!") ends before a final "!" or "?" too."""
    return rf"(?:\d+(?={_TRAIL}*(?:{stop}|$))|{_bare(chars, stop, _GIVEN_TRAIL)})"


# A value with no verb or colon before it ("wifi password Summer2024!"): a final "!" or "?" ends the sentence.
_BARE_SPACED = _bare(_SPACED_CHAR, _SPACED_STOP)
_GIVEN_SPACED = _given(_SPACED_CHAR, _SPACED_STOP)
_GIVEN_ASCII = _given(r"[!-~]", r"[^!-~]")
_BARE_TOKEN = _bare(r"[A-Za-z0-9._~+/=-]", r"[^A-Za-z0-9._~+/=-]")

# A wifi network's password under its other names: "my wifi key is x", "WPA key x", "wpa_psk=x".
# German "WLAN-Schlüssel: x" too.
_WIFI_KEY_WORD = (
    r"(?:wi-?fi|wlan|wpa[23]?|wep|wireless|network[ ]security)[ _-]?key|wpa[23]?[ _-]?psk"
    r"|(?:wlan|wi-?fi|netzwerk)[ -]?schl(?:ü|ue)ssel"
)
# The names of a password in other languages: German, Spanish, French, Portuguese (Italian says "password").
# "clave" (also a key, a clef, a clue: "la clave es la paciencia") takes only a value that looks made up,
# as "pass" does.
_FOREIGN_PASSWORD_WORD = r"passwort|kennwort|contrase(?:ña|na)|mot[ ]de[ ]passe|senha|clave"
# The names of a PIN in other languages: "Geheimzahl", "PIN-Nummer", "code PIN", "código PIN", "code secret".
_FOREIGN_PIN_WORD = r"geheimzahl|(?:code|c[oó]digo|codice)[ ]pin|code[ ]secret"
_PIN_WORD = rf"pin(?:[\s-]?(?:code|number|nummer))?|{_FOREIGN_PIN_WORD}"
# "pass" alone is also a ticket or a move: _password_ok takes only a symbol-laden value after it.
_PASSWORD_WORD = rf"pass(?:word|wd|phrase|code)|pwd|pw|{_PIN_WORD}|{_FOREIGN_PASSWORD_WORD}|{_WIFI_KEY_WORD}|pass"
# Words that give a password without a verb or a colon ("wifi password Summer2024!").
_BARE_PASSWORD_WORD = r"pass(?:word|wd|phrase|code)|pwd|pw"
# How a password's name hands over its value in a sentence: "is", "was", and in the other languages
# German "ist", "lautet", Spanish "es", French "est", "était", Italian "è" (or "e'"), Portuguese "é".
_IS = r"is|was|ist|lautet|es|est|était|etait|è|é|e['’]"
# Words between the verb and the value: "my password is now x", "das Passwort ist jetzt x".
_NOW = r"now|still|currently|actually|jetzt|ahora|maintenant|adesso|agora"
# Words that tie a password's name to what it opens: "the password for the wifi is x",
# "das Passwort für das WLAN ist x", "die PIN der Kreditkarte ist x", "das Passwort zum Router ist x",
# "la contraseña del wifi es x", "le mot de passe du wifi est x" (not "do" or "per", English words too:
# "which password do you think is best", "the password per user is unique").
_FOR = r"for|of|to|on|at|für|fürs|vom|von|der|zum|zur|de|del|du|des|pour|della|dello|da"
# ... and before a value of digits alone, which no English "do" or "per" gives: Portuguese "o PIN do cartão
# é 9911", "a senha do banco é 4521", Italian "il PIN per la carta è 4521"
# (a "do" English asks with is not one: "which verification code do you mean is 4821")
_FOR_DIGITS = rf"{_FOR}|do(?!\s+(?:you|we|they|i|he|she|it|not|so|this|that|these|those)\b)|dos|das|no|na|per"
# ... and after "senha", which no English sentence says, before any value: "a senha do wifi é casa123"
_FOR_SENHA = r"(?<=senha\s)(?:do|da|dos|das|no|na|para|pra)"
# "... is 123", "...: 123", "... #123", "...是123", or just a space: how a keyword hands over its value.
_KEY_SEP = r"""(?:\s*(?:[:=：\#]|=>|是|为|為)\s*|\s+(?i:is|was)(?:\s*[:：])?\s*|\s+)"""
# How a name of an identity document hands over its number in German, Spanish, French, Italian and Portuguese:
# a colon, a verb ("ist", "lautet", "es", "est", "è", "é") or a space.
_FOREIGN_KEY_SEP = (
    r"""(?:\s*(?:[:=：\#]|=>)\s*|\s+(?i:is|was|ist|lautet|war|es|era|est|était|è|é|e['’])(?:\s*[:：])?\s*|\s+)"""
)
_ZH_PASSWORD_WORD = r"密码|密碼|口令|(?i:pin)码"
_ZH_VERB = r"是|为|為|就是|改成了?|改为|设置为|设为|设成"
# Codes that open something: "the door code is 4512", "4512 is the gate code". Only digits ("the door
# code is on the fridge"); "building code" and "area code" are no secrets, and are not here.
_LOCK_CODE_WORD = r"(?:door|gate|alarm|safe|lock|unlock|lockbox|garage|keypad|entry|entrance|access)[ -]?code"
# "门禁码是2580", "开锁码 1234" (a 门禁密码 or 保险箱密码 is a 密码, found as one).
_ZH_LOCK_CODE_WORD = r"(?:门禁|門禁|开门|開門|开锁|開鎖|解锁|解鎖|锁屏|鎖屏)[码碼]"
# One-time codes: "my OTP is 482913", "verification code 482913", "2FA code: 123456". Four to eight digits.
_OTP_WORD = (
    r"t?otp|one[ -]time[ -](?:pass(?:word|code)|code|pin)"
    r"|(?:verification|verify|2fa|mfa|two[ -]factor|auth(?:entication|enticator)?|sms|login|sign[ -]?in)"
    r"[ -]?code|(?:backup|recovery)[ -]code"
    # German "Bestätigungscode", "Einmalcode", "Verifizierungscode", a bank's "TAN" (in capitals: "the tan
    # color"), Spanish and Portuguese "código de verificación", Italian "codice di verifica", French "code de
    # vérification", "code de confirmation" (not "código postal", "le code de la route")
    r"|(?:best(?:ä|ae|a)tigungs|verifizierungs|verifikations|einmal|anmelde)[ -]?code|einmal[ -]?passwort"
    r"|(?-i:(?:SMS-?|m|push|chip|photo)?TAN)"
    r"|(?:c[oó]digo|codice|code)[ ]d[eiu][ ]"
    r"(?:verificaci[oó]n|confirmaci[oó]n|verifica(?:[cç][aã]o)?|confirma[cç][aã]o|conferma|v[ée]rification|confirmation)"
)
_OTP_KEY_RE = re.compile(rf"(?i:{_OTP_WORD})")
_LOCK_CODE = r"[#*]?\d{3,10}[#*]?"
# A one-time code may come in two groups of digits joined by a dash ("2FA backup code 4821-9932").
_GROUPED_CODE = r"\d{3,5}-\d{3,5}"
# English words that say what a number after a code's name counts: no code.
_UNIT_WORD = (
    r"(?i:lines?|digits?|char(?:acter)?s?|times|minutes?|mins?|seconds?|secs?|hours?|days?|weeks?|months?|years?"
    r"|users?|people|dollars?|euros?|bytes?|words?|ms)(?![A-Za-z])"
)
_LOCK_CODE_RE = re.compile(_LOCK_CODE)
# Names of a code that is its digits, given as a door code is ("PIN 4521", "passcode 778899", "card PIN 0000").
_DIGIT_CODE_WORD = rf"{_LOCK_CODE_WORD}|{_PIN_WORD}|pass[ -]?code|{_OTP_WORD}|senha"
# Names of a value given before them: "hunter2 is my password", "0420 is my PIN", "4512 is the gate code".
_NAMED_AFTER_WORD = rf"pass(?:word|wd|phrase|code)|pwd|pw|pin(?:[ -]?(?:code|number))?|{_LOCK_CODE_WORD}"
# What follows that name when it names the value before it: the clause's end, or a word that starts no noun
# ("hunter2 is my password for everything"); in "X is my password manager" the name is another thing's.
_AFTER_NAME = (
    r"for|on|at|in|to|and|but|so|or|now|too|again|everywhere|because|since|though|although|if|when|while|which"
    r"|ever|anyway|lol|haha|btw"
)
# A passphrase is a few words that end the clause; a conjunction ends it too
# ("my password is correct horse battery staple and I never change it").
_CLAUSE_WORD = r"(?i:and|but|so|or|because|since|though|although|if|unless|until|when|while|which)(?![A-Za-z])"
_PHRASE_WORD = rf"(?!{_CLAUSE_WORD})[A-Za-z]{{1,24}}"


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.VERBOSE)


_SECRET_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private-key",
        _compile(
            r"""-----BEGIN[ ](?:[A-Z0-9]+[ ])*PRIVATE[ ]KEY-----
            (?:(?:[^-]|-(?!----BEGIN[ ]))*?-----END[ ](?:[A-Z0-9]+[ ])*PRIVATE[ ]KEY-----|[A-Za-z0-9+/=\s]*)""",
            re.DOTALL,
        ),
    ),
    _Detector(
        "token",  # a JSON Web Token: base64url header "{"..., payload, signature
        _compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+"),
    ),
    _Detector(
        "token",  # a Google OAuth access token (a pattern of its own: a literal first lets the regex engine skip fast)
        _compile(r"ya29\.(?<![A-Za-z0-9_.-]ya29\.)(?:c\.)?[A-Za-z0-9_-]{20,}"),  # "ya29.a0...", "ya29.c.b0..."
    ),
    _Detector(
        "api-key",
        _compile(
            r"""(?<![A-Za-z0-9])(?:
                sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_-]{20,}   # OpenAI, Anthropic
              | [spr]k_(?:live|test)_[A-Za-z0-9]{16,}                              # Stripe
              | gh[pousr]_[A-Za-z0-9]{30,} | github_pat_[A-Za-z0-9_]{22,}          # GitHub
              | (?:AKIA|ASIA)[A-Z0-9]{16}                                          # AWS access key id
              | AIza[0-9A-Za-z_-]{35}                                              # Google
              | xox[abposr]-[A-Za-z0-9-]{10,} | xapp-[A-Za-z0-9-]{20,}             # Slack
              | hf_[A-Za-z0-9]{30,}                                                # Hugging Face
              | gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_-]{20,}                     # GitLab
              | npm_[A-Za-z0-9]{36}                                                # npm
              | pypi-AgE[A-Za-z0-9_-]{50,}                                         # PyPI
              | SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}                     # SendGrid
              | shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}                                 # Shopify
              | do[por]_v1_[a-f0-9]{64}                                            # DigitalOcean
              | glc_[A-Za-z0-9+/]{32,}={0,2} | glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}  # Grafana
              | whsec_[A-Za-z0-9+/=]{24,}                                          # Stripe webhook secret
              | sbp_[a-f0-9]{40} | r8_[A-Za-z0-9]{37} | gsk_[A-Za-z0-9]{48,}      # Supabase, Replicate, Groq
              | lin_api_[A-Za-z0-9]{40} | PMAK-[a-f0-9]{24}-[a-f0-9]{34}           # Linear, Postman
              | dapi[a-f0-9]{32}(?:-\d)? | tskey-[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}  # Databricks, Tailscale
              | AGE-SECRET-KEY-1[0-9A-Z]{58}                                       # age
              | rv_[A-Za-z0-9_-]{43}(?![_-])                                       # reverie's own (reverie.keys)
            )(?![A-Za-z0-9])"""
        ),
        check=lambda m: _random_looking(m.group()),
    ),
    _Detector(
        "api-key",  # AWS's secret access key given with its key id: "key AKIA... and secret wJalrXUtnFEMI/..."
        _compile(
            r"""(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])
            [^.!?\n]{0,80}?   # the same sentence
            (?<![A-Za-z0-9/+=])(?P<bare>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"""
        ),
        check=lambda m: _aws_secret_shaped(m.group("bare")),
        value_groups=("bare",),
        cue=("akia", "asia"),
    ),
    _Detector(
        "token",
        _compile(r"(?<![A-Za-z0-9])[Bb]earer\s+" + _value(r"[A-Za-z0-9._~+/=-]{12,}")),
        check=_secret_value_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "token",
        _compile(
            r"""(?=(?i:[arisbgt])|令)   # the keywords' first letters: a first test the regex engine makes fast
            (?:(?<![A-Za-z0-9])(?i:(?:(?:access|auth|refresh|id|session|api|bot|github|slack|bearer)[\s_-]?)?token)
                | 令牌)
            ["']?(?:\s*(?:[:=：]|=>|是|为)\s*|\s+is\s+)""" + _value(_BARE_TOKEN)
        ),
        check=_keyword_secret_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "api-key",
        _compile(
            r"""(?=(?i:[aspc])|[密秘])   # the keywords' first letters: a first test the regex engine makes fast
            (?P<key>(?<![A-Za-z0-9])(?i:(?:aws[\s_-]?)?   # "AWS secret <key>": AWS's name for its secret access key
                (?:(?:api|access|secret|private|client|app)[\s_-]?key(?:[\s_-]?id)?
                | apikey | client[\s_-]?secret | secret(?:[\s_-]?access[\s_-]?key)?))
                | (?i:api)?密钥 | 秘钥)
            ["']?(?:\s*(?:[:=：]|=>|是|为)\s*|\s+is\s+|(?P<space>[ \t]+))""" + _value(_BARE_TOKEN)
        ),
        check=_keyword_api_key_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "password",  # "password: x", "pwd=x", "PIN = 1234"
        _compile(
            rf"""(?=(?i:[cgkmnpsw]))   # the keywords' first letters: a first test the regex engine makes fast
            (?<![A-Za-z0-9])(?i:(?P<key>{_PASSWORD_WORD}))["']?\s*(?:[:=：]|=>)\s*""" + _value(_GIVEN_SPACED)
        ),
        check=_keyword_password_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "password",  # "my password is hunter2", "the password for the wifi was now 'x'", "Mein Passwort ist x"
        _compile(
            rf"""(?=(?i:[cgkmnpsw]))   # the keywords' first letters
            (?<![A-Za-z0-9])(?i:(?P<key>{_PASSWORD_WORD}))
            (?:\s+(?i:{_FOR}|{_FOR_SENHA})(?:\s+[\w.@'/-]+){{1,3}}?(?::\s+|：\s*)   # "the password for my laptop: x"
            | (?:\s+(?i:{_FOR}|{_FOR_SENHA})(?:\s+[\w.@'/:-]+){{1,3}}?)?
              (?:\s+(?i:(?P<verb>{_IS}))|'s)(?:\s+(?i:{_NOW}))?(?:\s*[:：])?\s+)"""
            + _value(_GIVEN_SPACED)
        ),
        check=_password_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "password",  # "my password is correct horse battery staple", "密码是：correct horse": several words, to the clause's end
        _compile(
            rf"""(?=(?i:p)|[密口])   # the keywords' first letters: a first test the regex engine makes fast
            (?:(?<![A-Za-z0-9])(?i:(?P<key>{_BARE_PASSWORD_WORD}))
                (?:\s+(?i:for|of|to|on|at)(?:\s+[\w.@'/-]+){{1,3}}?)?
                (?:\s+(?i:is|was)(?:\s+(?i:now|still|currently|actually))?(?:\s*[:：][ \t]*|[ \t]+) | \s*[:：][ \t]*)
              | (?P<zh>{_ZH_PASSWORD_WORD})\s*(?:(?:{_ZH_VERB})\s*[:：]?|[:：=])[ \t]*)
            (?P<bare>(?!{_PLACEHOLDER}){_PHRASE_WORD}(?:[ ]{_PHRASE_WORD}){{1,7}})
            (?=[ \t]*(?:[.!?;,，。！？；\n]|$)|[ ]{_CLAUSE_WORD}|[^\x00-\u02ff])   # or another script ("是：x y别说")"""
        ),
        check=_passphrase_ok,
        value_groups=("bare",),
    ),
    _Detector(
        "password",  # "wifi password Summer2024!", "pwd Zebra#4421", "pass Xy9$abc", "WPA key Zorblax77",
        # "WLAN-Passwort Sonnenblume42": no verb, no colon
        _compile(
            rf"""(?=(?i:[ckmnpsw]))   # the keywords' first letters
            (?<![A-Za-z0-9])(?i:(?P<key>{_BARE_PASSWORD_WORD}|{_WIFI_KEY_WORD}|{_FOREIGN_PASSWORD_WORD}|pass))
            [ \t]+(?P<bare>(?!{_PLACEHOLDER}){_BARE_SPACED})"""
        ),
        check=_bare_english_password_ok,
        value_groups=("bare",),
    ),
    _Detector(
        "password",  # "SSID HomeNet key OrangeSky2024", "WiFi: HomeNet / key: OrangeSky2024": a network, then its key
        _compile(
            rf"""(?=(?i:[swn]))   # the keywords' first letters
            (?<![A-Za-z0-9])(?i:ssid|wi-?fi|wlan|network)(?:[ \t]*[:=：][ \t]*|[ \t]+)
            [^\s/"'<>]{{1,64}}   # the network's name
            (?:[ \t]*[/,;|][ \t]*|[ \t]+)
            (?i:key|psk|schl(?:ü|ue)ssel)(?:(?P<colon>[ \t]*[:=：][ \t]*)|[ \t]+)
            (?P<bare>(?!{_PLACEHOLDER}){_GIVEN_SPACED})"""
        ),
        check=_login_password_ok,  # only a value that looks made up, as after "login: bob /"
        value_groups=("bare",),
        cue=("ssid", "wifi", "wi-fi", "wlan", "network"),
    ),
    _Detector(
        "password",  # 'the password "letmein123"', '密码「Secret99」': a quoted value right after the word, no verb
        _compile(
            rf"""(?:(?<![A-Za-z0-9])(?i:{_BARE_PASSWORD_WORD})[ \t]+|(?:{_ZH_PASSWORD_WORD})[ \t]*)
            [{_OPEN_QUOTE}](?P<quoted>(?!{_PLACEHOLDER}[{_CLOSE_QUOTE}])[^\s{_OPEN_QUOTE}{_CLOSE_QUOTE}]{{1,64}})
            [{_CLOSE_QUOTE}]"""
        ),
        check=_quoted_password_ok,
        value_groups=("quoted",),
        cue=("passw", "passphrase", "passcode", "pw", "码", "碼", "口令"),
    ),
    _Detector(
        "password",  # "my wifi password, it is BlueFalcon77", "the password for the router? it's BlueFalcon77"
        _compile(
            rf"""(?<![A-Za-z0-9])(?i:{_BARE_PASSWORD_WORD})
            (?:\s+(?i:for|of|to|on|at)(?:\s+[\w.@'/-]+){{1,3}}?)?
            [ \t]*(?:[,;?!]|\.\.\.|…|[-–—])[ \t]*   # a pause, then a clause that gives the value
            (?:(?i:oh|so|and|well|btw|ok|okay|yeah|i[ \t]+think|i[ \t]+guess)[ \t]*,?[ \t]+)?
            (?:(?:(?i:it|that|this|which|mine)(?:[ \t]+(?i:is|was)|['’]s)|(?i:is|was))
                (?:[ \t]+(?i:now|still|currently|actually))?(?:[ \t]*[:：])?[ \t]+
              | [:：][ \t]*)"""
            + _value(_GIVEN_SPACED)
        ),
        check=_told_password_ok,
        value_groups=("quoted", "bare"),
        cue=("passw", "passphrase", "passcode", "pw"),
    ),
    _Detector(
        "password",  # the value first: "hunter2 is my password", "use hunter2 as my password", "4512 is the gate code"
        _compile(
            r"(?<![^\s(\[])"
            + _value(r"[^\s\"'“”‘’`(\[]{1,64}")
            + rf"""[ \t]+(?i:(?P<verb>is|was|as))[ \t]+(?:(?i:(?P<det>my|the|our|your|his|her|their))[ \t]+)?
            (?P<between>(?:[A-Za-z][\w-]*[ \t]+){{0,2}}?)   # "my new wifi password"
            (?i:(?P<key>{_NAMED_AFTER_WORD}))
            (?=[ \t]*(?:[^\w\s]|$)|[ \t]+(?i:{_AFTER_NAME})(?![A-Za-z]))"""
        ),
        check=_named_after_ok,
        value_groups=("quoted", "bare"),
        # The name follows a space; "pin" alone is in too many words ("keeping", "shopping").
        cue=("passw", "passphrase", "passcode", "pw", " pin", "code"),
    ),
    _Detector(
        "password",  # "the door code is 4512", "gate code: 7781", "the alarm code for the shop is #2580",
        # "door code 4821", and PINs and passcodes alike: "PIN 4521", "my pin number is 4521", "passcode 778899"
        _compile(
            rf"""(?=(?i:[abcdegklmoprstuv2])|[门門开開解锁鎖验驗动動])   # the keywords' first letters: a first test the regex engine makes fast
            (?:(?<![A-Za-z0-9])(?i:(?P<key>{_DIGIT_CODE_WORD}))
                (?:(?:\s+(?i:{_FOR_DIGITS})(?:\s+[\w.@'/-]+){{1,3}}?)?
                    (?:\s*(?:[:=：]|=>)\s*|\s+(?i:{_IS})(?:\s+(?i:{_NOW}))?(?:\s*[:：])?\s+)
                  | [ \t]+)   # a space alone only right after the name ("the door code for flat 221 is ..." gives none)
              | (?:(?P<zhotp>验证|驗證|动态|動態)[码碼]|{_ZH_LOCK_CODE_WORD})\s*(?:(?:{_ZH_VERB})\s*)?(?:[:=：]\s*)?)
            (?P<bare>{_GROUPED_CODE}|{_LOCK_CODE})(?![0-9A-Za-z_])(?![.,:/-][0-9])   # a whole number, not a time or a date
            (?!\s*{_ZH_UNIT}|[ \t]+{_UNIT_WORD})   # nor what it counts ("门禁码2024年换过", "the login code is 2000 lines")"""
        ),
        check=_digit_code_ok,
        value_groups=("bare",),
        cue=("code", "pin", "otp", "geheimzahl", "digo", "codice", "tan ", "tan:", "senha", "码", "碼"),
    ),
    _Detector(
        "card",  # the card's security code: "cvv 123", "CVC: 987", "security code 321", "安全码是123"
        _compile(
            r"""(?=(?i:[cs])|安)   # the keywords' first letters: a first test the regex engine makes fast
            (?:(?<![A-Za-z0-9])(?i:cvv2?|cvc2?|card[ ](?:verification|security)[ ](?:value|code)|security[ ]code)
                (?:[ _-]*(?i:code|number|no\.?))? | (?:CVV|CVC|安全)码)"""
            + _KEY_SEP
            + r"(?P<bare>\d{3,4})"
            + _NUM_END
            + r"(?![:/-][0-9])"  # a whole number, not a time or a date ("security code 2023-05-08")
        ),
        value_groups=("bare",),
    ),
    _Detector(
        "id-number",  # US social security number after its name, any separator: "SSN: 123 45 6789"
        _compile(
            r"""(?<![A-Za-z0-9])(?i:ssn|social[ ]security(?:[ ](?:number|no\.?))?)"""
            + _KEY_SEP
            + r"(?P<bare>(?!000|666)\d{3}(?P<sep>[ .-]?)(?!00)\d{2}(?P=sep)(?!0000)\d{4})"
            + _NUM_END
        ),
        value_groups=("bare",),
    ),
    _Detector(
        "id-number",  # "passport X12345678", "passport number: 123456789", "护照号码是E12345678"
        _compile(
            r"""(?=(?i:p)|[护護港台往回通])   # the keywords' first letters: a first test the regex engine makes fast
            (?:(?<![A-Za-z0-9])(?i:passport)(?:[ _-]*(?i:number|no\.?|num))?"""
            + _KEY_SEP
            # a Chinese name needs nothing between it and the number: "护照E12345678", "港澳通行证C12345678"
            + r"""| (?:护照|護照|(?:往来|往來)?(?:港澳|台湾|台灣)?通行[证證]|台胞[证證]|回[乡鄉][证證])(?:号码|號碼|号|號)?"""
            + f"(?:{_KEY_SEP})?)"
            + r"(?P<bare>[A-Za-z0-9]{6,9})"
            + _ASCII_END
        ),
        check=_passport_ok,
        value_groups=("bare",),
    ),
    _Detector(
        "id-number",  # a passport or identity card after its name in German, Spanish, French, Italian, Portuguese:
        # "Reisepassnummer ist C01X00T47", "Personalausweis: T22000129", "número de pasaporte: PAA123456",
        # "mon numéro de passeport est 12AB34567", "passaporto n. YA1234567", "carte d'identité 880692310285"
        _compile(
            r"""(?=(?i:[acpr]))(?<![A-Za-z0-9])(?i:   # the keywords' first letters: a first test
                pasaporte|passeport|passaport[eo]|reisepass(?:nummer)?|pass(?:nummer|-nr\.?)
                | (?:personal)?ausweis(?:nummer|-nr\.?)? | cart[ae][ ]d['’]identit[éeàa])
            (?:(?:[ \t]+|-)(?i:n[º°o]\.?|n\.|nr\.?|nummer|num[ée]ro|número)
               # "Mein Personalausweis hat die Nummer T22000129", "mi pasaporte tiene el número ..."
               | [ \t]+(?i:hat|mit|tiene|con|a|avec|ha|com|tem)(?:[ \t]+(?i:die|der|el|le|la|il|o|a))?[ \t]+
                 (?i:nummer|n[úu]mero|num[ée]ro))?"""
            + _FOREIGN_KEY_SEP
            + r"(?P<bare>[A-Za-z0-9]{6,12})"
            + _ASCII_END
        ),
        check=_foreign_id_ok,
        value_groups=("bare",),
        cue=("pasaporte", "passeport", "passaport", "reisepass", "passnummer", "pass-nr", "ausweis", "carte d",
             "carta d"),
    ),
    _Detector(
        "id-number",  # a German tax id or tax number after its name: "Steuer-ID 12 345 678 901", "Steuernummer 12/345/67890"
        _compile(
            r"""(?=(?i:s))(?<![A-Za-z0-9])(?P<key>(?i:
                steuer[ -]?(?:id(?:[ -]?nr\.?)?|identifikationsnummer|nummer|nr\.?)
                | steuerliche[ \t]+identifikationsnummer))"""
            + _FOREIGN_KEY_SEP
            + r"(?P<bare>\d{2,3}/\d{3,4}/\d{4,5}|\d{2,13}(?:[ .-]\d{2,5}){0,4})"
            + _NUM_END
        ),
        check=_tax_id_ok,
        value_groups=("bare",),
        cue=("steuer",),
    ),
    _Detector(
        "id-number",  # an Italian codice fiscale after its name, whatever its check character: "codice fiscale: RSSMRA85T10A562S"
        _compile(
            r"(?=(?i:c))(?<![A-Za-z0-9])(?i:codice[ ]fiscale|cod\.?[ ]fisc\.?)"
            + _FOREIGN_KEY_SEP
            + r"(?P<bare>(?i:[A-Z]{6}[0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]))"
            + _ASCII_END
        ),
        value_groups=("bare",),
        cue=("fisc",),
    ),
    _Detector(
        "password",  # "密码是abc123", "密码：x", "支付密码改成了 654321"
        _compile(
            rf"""(?P<key>{_ZH_PASSWORD_WORD})
            \s*(?:是|为|為|：|:|=|就是|改成了?|改为|设置为|设为|设成)\s*(?:[：:]\s*)?"""
            + _value(_GIVEN_ASCII)
        ),
        check=_password_ok,
        value_groups=("quoted", "bare"),
    ),
    _Detector(
        "password",  # "wifi密码 12345678"
        _compile(rf"(?:{_ZH_PASSWORD_WORD})\s*(?P<bare>(?!{_PLACEHOLDER})[!-~]+?)(?=[^!-~]|$)"),
        check=_bare_password_ok,
        value_groups=("bare",),
    ),
)

# A Chinese password value: a run up to a space or punctuation, 64 characters at most.
_ZH_VALUE_CHAR = rf"[^\s{_OPEN_QUOTE}{_CLOSE_QUOTE}，。；、！？：（）()<>\[\],;!?]"
_ZH_VALUE_LAST = rf"[^\s{_OPEN_QUOTE}{_CLOSE_QUOTE}，。；、！？：（）()<>\[\],;!?.:]"


def _query_detector(kind: Kind, keys: str) -> _Detector:
    """``?key=value``, ``&key=value`` (``;key=value`` in connection strings): the value up to ``&``, ``;``, ``#``."""
    return _Detector(
        kind,
        _compile(
            rf"""[?&;](?i:(?:[A-Za-z0-9_.-]*[_.-])?(?:{keys}))=
            (?P<bare>(?!{_PLACEHOLDER}(?:[&;\#\s"'<>]|$))[^&;\#\s"'<>]*(?!{_TRAIL})[^&;\#\s"'<>])"""
        ),
        check=_query_ok,
        value_groups=("bare",),
        cue=("=",),
    )


# Secrets inside URLs, headers, command lines and config lines. Each keeps the
# text around the secret (scheme, user, host, parameter name) and cuts the secret.
_EMBEDDED_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "password",  # scheme://user:password@host (postgres, mysql, redis, amqp, mongodb+srv, https...)
        _compile(
            rf"""(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{{0,30}}://
            [^\s:/?\#@\[\]"'<>]*:
            (?P<bare>(?!{_PLACEHOLDER}@)[^\s/?\#"'<>]+)   # greedy: a password holding "@" ends at the last one
            @(?=[A-Za-z0-9\[])"""
        ),
        check=_userinfo_ok,
        value_groups=("bare",),
        cue=("://",),
    ),
    _Detector(
        "token",  # Slack incoming webhook / workflow trigger
        _compile(
            r"""(?<![A-Za-z0-9.-])hooks\.slack\.com/(?:services|workflows|triggers)/
            (?P<bare>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)+)"""
        ),
        value_groups=("bare",),
        cue=("hooks.slack",),
    ),
    _Detector(
        "token",  # Discord webhook: id and token
        _compile(
            r"""(?<![A-Za-z0-9.-])(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/(?:v\d+/)?webhooks/
            (?P<bare>\d+/[A-Za-z0-9_-]+)"""
        ),
        value_groups=("bare",),
        cue=("/webhooks/",),
    ),
    _Detector(
        "token",  # Microsoft Teams incoming webhook
        _compile(
            r"""(?<![A-Za-z0-9.-])
            (?:[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook(?:b2)?)/
            (?P<bare>[A-Za-z0-9@%/_.-]*[A-Za-z0-9])"""
        ),
        value_groups=("bare",),
        cue=("webhook",),
    ),
    _query_detector("password", r"(?:db|user|admin|root)?(?:password|passwd|passwort|passphrase|passcode|pass|pwd)"),
    _query_detector(
        "token",
        r"(?:access|auth|refresh|id|session|api|bearer|csrf|xsrf|oauth)?token|sig|signature",
    ),
    _query_detector(
        "api-key",
        r"(?:client|app|api)?secret|secret[_-]?key|api[_-]?key|access[_-]?key|private[_-]?key",
    ),
    _Detector(
        "password",  # "Authorization: Basic dXNlcjpwYXNz": base64 of user:password
        _compile(
            rf"""(?<![A-Za-z0-9-])(?P<auth>(?i:(?:proxy-)?authorization)["']?\s*[:=]\s*["']?)?(?i:basic)\s+
            (?P<bare>(?!{_PLACEHOLDER})[A-Za-z0-9+/]+={{0,2}})(?![A-Za-z0-9+/=])"""
        ),
        check=_basic_auth_ok,
        value_groups=("bare",),
        cue=("basic",),
    ),
    _Detector(
        "token",  # "Authorization: Bearer x", "Authorization: token x"
        _compile(
            rf"""(?<![A-Za-z0-9-])(?i:(?:proxy-)?authorization)["']?\s*[:=]\s*["']?
            (?:(?P<scheme>(?i:bearer|token|bot|jwt|apikey|api-key|key|sso-key|oauth|otoken|session))\s+)?
            (?P<bare>(?!{_PLACEHOLDER})(?!{_OTHER_AUTH_SCHEMES}(?![A-Za-z0-9-])){_BARE_TOKEN})"""
        ),
        check=_auth_header_ok,
        value_groups=("bare",),
        cue=("authoriz",),
    ),
    _Detector(
        "password",  # curl -u user:password
        _compile(
            rf"""(?<![\w-])(?:-u|-U|--user|--proxy-user)(?:\s+|=)["']?[^\s:"']*:
            (?P<bare>(?!{_PLACEHOLDER})(?!//)[^\s"']+)"""
        ),
        check=_curl_user_ok,
        value_groups=("bare",),
        cue=("curl",),
    ),
    _Detector(
        "password",  # mysql -u root -pS3cret
        _compile(r"(?<![\w-])-p" + _value(r"[^\s\"'“‘`]+")),
        check=_mysql_password_ok,
        value_groups=("quoted", "bare"),
        cue=("mysql", "mariadb"),
    ),
    _Detector(
        "password",  # .netrc: machine api.example.com login bob password s3cret
        _compile(
            r"""(?<![A-Za-z0-9_-])(?:machine\s+(?P<host>[^\s"']+)|default)
            (?P<login>(?:\s+(?:login|account)\s+[^\s"']+){1,3})?
            \s+password\s+"""
            + _value(_GIVEN_SPACED)
        ),
        check=_netrc_ok,
        value_groups=("quoted", "bare"),
        cue=("machine", "default"),
    ),
    _Detector(
        "password",  # "login: bob / HunterZeta42", "sign in bob / Zorblax-77": a user, a slash, then the password
        _compile(
            rf"""(?<![A-Za-z0-9])(?i:log[ -]?in|log[ -]?on|sign[ -]?in|credentials|creds)
            (?:(?P<colon>[ \t]*[:=：][ \t]*)|[ \t]+)
            [^\s/"'<>]{{1,64}}
            (?(colon)[ \t]*/[ \t]*|[ \t]+/[ \t]+)   # with no colon, a slash set apart by spaces ("login page/home" is a path)
            (?P<bare>(?!{_PLACEHOLDER}){_GIVEN_SPACED})"""
        ),
        check=_login_password_ok,
        value_groups=("bare",),
        cue=("/",),  # the slash: rarer in prose than the words
    ),
    _Detector(
        "password",  # "口令：芝麻开门2024", "密码是 芝麻开门": a Chinese value, set apart by a colon or a space
        _compile(
            rf"""(?P<key>{_ZH_PASSWORD_WORD})\s*(?:(?:{_ZH_VERB})?\s*[：:=]\s*|(?:{_ZH_VERB})[ \t\u3000]+)
            (?P<bare>(?=[^\x00-\x7f]){_ZH_VALUE_CHAR}{{0,63}}{_ZH_VALUE_LAST})[.:]{{0,3}}(?!{_ZH_VALUE_CHAR})"""
        ),
        check=_zh_password_ok,
        value_groups=("bare",),
        cue=("码", "碼", "口令"),
    ),
)

# A login is no email address: scp-style targets (git@github.com:org/repo.git),
# the user of a URL (ssh://git@host/...) and the target of ssh (ssh -p 2222 deploy@host.example.com).
_SSH_COMMAND_RE = re.compile(
    r"(?:^|[\s\"'`(;|&])(?:ssh|sftp|mosh|autossh|ssh-copy-id)(?:\s+-[A-Za-z]+(?:\s+[^\s@-]\S*)?)*\s+$"
)
_USERINFO_END_RE = re.compile(r"[\s/?#@]")


def _email_ok(m: re.Match[str]) -> bool:
    text, start, end = m.string, m.start(), m.end()
    if text.startswith(":", end) and end + 1 < len(text) and (text[end + 1].isalnum() or text[end + 1] in "~/._-"):
        return False
    head = text[max(0, start - 256) : start]
    scheme = head.rfind("://")
    if scheme >= 0 and not _USERINFO_END_RE.search(head, scheme + 3):
        return False
    return not _SSH_COMMAND_RE.search(head)


# Scripts written without spaces: Han, kana, Hangul syllables.
_UNSPACED = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"

_EMAIL_DETECTORS = (
    _Detector(
        "email",  # local part and domain in any script: josé@correo.es, ana@mail.例子.中国, 张三@qq.com
        _compile(
            rf"""(?:(?<![.%+-])(?<![^\W{_UNSPACED}])[^\W_{_UNSPACED}](?:[^\W{_UNSPACED}]|[.%+-])*
              # a local part in an unspaced script cannot be told from the words before it ("邮箱：张三@"):
              # it runs from the last space or punctuation; any other stops where such a script does ("是zhangsan@")
              | (?<![\w.%+-])[\w.%+-]*[{_UNSPACED}])
            @(?:[^\W_](?:[\w-]*[^\W_])?\.)+
            (?:[A-Za-z]{{2,24}}(?![A-Za-z0-9-]) | (?i:xn--[a-z0-9-]{{1,59}})(?![\w-]) | [^\W\d_]{{2,24}}(?![\w-]))"""
        ),
        check=_email_ok,
    ),
)

# An address written out so that no parser takes it: "carl.meyer (at) gmx.de", "ana at gmail dot com",
# "ana [at] gmail [dot] com". Its domain must end in a top-level domain people write out (a known one), and an
# "at" in no brackets takes only a domain whose dots are spelled ("look at google.com" is no address) and a
# local part that is no word prose puts before "at" ("look at gmail dot com", "I worked at google dot com").
_WRITTEN_TLDS = """
    com net org edu gov mil int info biz name pro mobi asia io co ai app dev me tv cc eu email online site tech xyz
    us ca mx br ar cl pe uy ve ec bo py uk ie de at ch li fr be nl lu es pt it mt gr cy tr pl cz sk hu ro bg si hr rs
    ba se no dk fi is ee lv lt ua by ru il ae sa eg ma za ng ke in pk cn hk tw jp kr sg my id ph th vn au nz
""".split()
_BRACKET_AT = r"(?:\((?i:at)\)|\[(?i:at)\]|\{(?i:at)\}|<(?i:at)>)"
_BRACKET_DOT = r"(?:\((?i:dot)\)|\[(?i:dot)\]|\{(?i:dot)\}|<(?i:dot)>)"
_DOMAIN_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"
# Found from its "at" (what it holds fewest of), the local part then looked for before it.
_WRITTEN_EMAIL = _compile(
    rf"""(?=[ \t(\[{{<])   # the first characters: a first test the regex engine makes fast
    (?:[ \t]*(?P<bracket>{_BRACKET_AT})[ \t]* | [ \t]+(?i:at)[ \t]+)
    (?P<domain>(?:{_DOMAIN_LABEL}(?:\.|[ \t]*{_BRACKET_DOT}[ \t]*|[ \t]+(?i:dot)[ \t]+))+
        (?i:{"|".join(_WRITTEN_TLDS)}))(?![\w-])(?!\.\w)"""
)
# Words that stand before "at" in prose, and before a domain: no local part or mailbox's host.
_NOT_A_MAILBOX = frozenset(
    """
    a an the my your his her our their its this that these those some any all no one me you him us them it i we
    they he she who what which where there here is are was were be been being am do does did have has had will
    would can could shall should may might must not only just even also still again back out up down off in on
    at by to for of from with and or but so then than once least most best better worse good bad great well
    look looks meet meets met stay stays stayed arrive arrives live lives work works job jobs start starts end
    ends sit sat stand stood eat ate stare point aim laugh shop smile hint hinted email mail write call text find
    found see seen saw come came go went get got home office school college university party dinner lunch
    breakfast night noon midnight time times first last available engineer developer designer manager intern
    student teacher professor employee staff team people someone anyone everyone nobody
    """.split()
)


# Words that begin no domain: "we met at the dot com party".
_NOT_A_HOST = frozenset("a an the my your his her our their its this that these those some any one home work".split())


_MAILBOX_END_RE = re.compile(r"(?<![\w.%+@'’-])[^\W_](?:[\w.%+-]{0,63}[^\W_])?\Z")
_HOST_WORD_RE = re.compile(r"[\w-]+")


def _written_email_span(m: re.Match[str]) -> tuple[int, int] | None:
    """The address an "at" and a domain written out end (``ana at gmail dot com``): from the local part before
    the "at", or None if none is there or the words read as prose."""
    text, at = m.string, m.start()
    local = _MAILBOX_END_RE.search(text, max(0, at - 65), at)
    if local is None:
        return None
    domain = m.group("domain")
    host = _HOST_WORD_RE.match(domain)
    if host is None or host.group().lower() in _NOT_A_HOST:
        return None
    if m.group("bracket") is None:
        word = local.group().lower()
        if "." in domain or word in _NOT_A_MAILBOX or (word.isalpha() and word.endswith(("ed", "ing", "ly"))):
            return None
    return local.start(), m.end()


_WRITTEN_EMAIL_DETECTORS = (_Detector("email", _WRITTEN_EMAIL, fit=_written_email_span),)


def _written_email_cue(text: str, lower: str) -> bool:
    """Whether ``lower`` (the text in lower case) holds what an address written out holds: a "dot" or a bracketed
    "at" (the bracket, rare in prose, looked for first)."""
    return (
        "dot" in lower
        or (")" in lower and "at)" in lower)
        or ("]" in lower and "at]" in lower)
        or ("}" in lower and "at}" in lower)
        or (">" in lower and "at>" in lower)
    )

# North American area codes and exchanges never start with 0 or 1.
_PHONE = r"""(?:
    \+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){2,6}                 # +1 415-555-0132
  | (?:1[ .-])?(?:\([2-9]\d\d\)[ .-]?|[2-9]\d\d[ .-])[2-9]\d\d[ .-]\d{4}   # (415) 555 0132
  | (?:(?:00)?86[ -]?)?1[3-9]\d(?:(?:[ -]?\d{4}){2}|\.\d{4}\.\d{4})        # 138 0013 8000, 86-13800138000
  | (?:\(0\d{1,4}\)[ -]?|0\d{1,4}[ -])\d{3,8}(?:[ -]\d{3,4})?             # 010-12345678
)"""
_PHONE_RE = _compile(_PHONE)
_PHONE_HEAD = _compile(_PHONE + _NUM_END)
# An international number dialled with 00 for "+" ("0086 138 1234 5678", "0044-20-7946-0958"), where the
# form of 010-12345678 reads only "0086 138 1234". One separator throughout, a space or a dash, so that no
# date ("0099-01-01 00:00") or decimal reads as one; a digit alone only first ("0033 1 23 45 67 89").
# Found by a detector of its own: in the forms above, a match that fails its check would hide the
# numbers that begin inside it ("tel 00766 19139382195").
_AFTER_00 = r"[1-9]\d{0,2}(?P<isep>[ -])\d{1,5}(?:(?P=isep)?\d{2,5}){1,5}"
_INTL_PHONE = "00" + _AFTER_00
_INTL_PHONE_RE = _compile(_INTL_PHONE)
_INTL_PHONE_HEAD = _compile(_INTL_PHONE + _NUM_END)
# A phone number in any national format, as it follows the number's name.
_NAMED_PHONE = r"\+?(?:\(\d{1,5}\)[ .-]?)?\d+(?:[ .-]\d+){0,7}"
_NAMED_PHONE_HEAD = _compile(_NAMED_PHONE + _NUM_END)
# Words a sentence may put between a number's name and the number: "my phone number to reach me is ...",
# "mobile for work: ...". Only these: other words make a sentence about the phone ("phone plan for 1 500 000 users").
_PHONE_FILLER = r"""(?:[ \t]+(?i:
    to[ \t]+(?:reach|call|text|contact)(?:[ \t]+(?:me|us|him|her|them))?(?:[ \t]+(?:on|at))?
    | (?:for|at)[ \t]+(?:work|home|emergencies|calls|the[ \t]+office) | here|now|still|currently|also|too)){0,2}"""
# A phone's name in German, Spanish, French, Italian and Portuguese: "Telefonnummer", "Handynummer", "teléfono",
# "celular", "cellulare", "telemóvel", "tél". ("téléphone" ends in "phone"; "Handy" and "portable" are English
# words too, and have a form of their own below.)
_FOREIGN_PHONE_WORD = (
    r"m[oó]vil|celular|cellulare|telem[oó]vel|tel[eé]fon[eo]?|tél|(?:handy|mobil|ruf)(?=[ -]?nummer)"
)
# "my number" in those languages, said when giving a phone ("mon numéro est 06 12 34 56 78"); "numéro" alone
# is any number ("le numéro 7", "mon numéro de client est ...").
_MY_NUMBER = r"(?:mon|mi|meu|mio|meine)[ \t]+(?:num[eé]ro|número|nummer)"
# How a phone's name hands over its number: "is" or the verb of another language ("mi móvil es 612 345 678",
# "meine Handynummer lautet ..."), and the article the Romance languages may put before the number
# ("mon numéro est le 06 12 34 56 78", "mi número es el 612 345 678").
_PHONE_IS = r"(?i:is|was|es|est|ist|lautet|è|é|e['’])(?:\s*[:：])?(?:\s+(?i:le|el|o|il)(?=\s))?"
_PHONE_SEP = rf"""(?:\s*(?:[:=：\#]|=>|是|为|為)\s*|\s+{_PHONE_IS}\s*|\s+)"""

_NUMBER_DETECTORS = (
    _Detector(
        "id-number",  # Chinese resident ID: region, birth date, sequence, check character
        _compile(
            _NUM_START
            + rf"[1-9]\d{{5}}{_COMPACT_DATE}\d{{3}}[\dXx]"
            + _NUM_END
        ),
        check=_cn_id_ok,
    ),
    _Detector(
        "id-number",  # after its name, a resident ID in any grouping, whatever its check character (a typo leaves
        # the rest as readable): "身份证 110101 19900307 1233"; 15 characters (the old IDs) to 18
        _compile(
            r"""(?:身份[证證]件?|[证證]件|公民身份)(?:号码|號碼|号|號)?\s*(?:[:：]|是|为|為)?\s*
            (?P<bare>\d(?:[ -]?\d){13,16}[ -]?[\dXx])"""
            + _NUM_END
        ),
        value_groups=("bare",),
        cue=("身份", "证件", "證件"),
    ),
    _Detector(
        "card",
        _compile(
            _NUM_START
            + r"""(?:\d{13,19}
                | \d{4}(?P<s1>[ .-])\d{4}(?P=s1)\d{4}(?P=s1)\d{1,4}(?:(?P=s1)\d{1,3})?   # 4-4-4-4(-3)
                | \d{4}(?P<s2>[ .-])\d{6}(?P=s2)\d{4,5})                                 # Amex, Diners
            """
            + _NUM_END
        ),
        check=_card_ok,
    ),
    _Detector(
        "card",  # after its name, a card number in any grouping whatever its checksum (a bank's own card, a typo):
        # "卡号 6217 0000 1234 5678 901", "card number 6217-0000-1234-5678-901", "银行卡号：6217000012345678901"
        _compile(
            r"""(?:(?<![A-Za-z0-9])(?i:
                  (?:credit|debit|bank|visa|master[ ]?card|amex)[ ]card(?:[ _-]?(?:number|no\.?|num|\#))?
                | card[ _-]?(?:number|no\.?|num|\#)
                | card(?=[ \t]*[:：]))"""
            + _KEY_SEP
            + r"""| (?:(?:银行|銀行|信用|借记|借記|储蓄|儲蓄)卡(?:号码|號碼|号|號)?|卡(?:号码|號碼|号|號))\s*(?:[:：]|是|为|為)?\s*)
            (?P<bare>\d{1,19}(?:[ .-]\d{1,19}){0,7})"""
            + _NUM_END
        ),
        fit=_card_number_span,
        cue=("card", "卡"),
    ),
    _Detector(
        "id-number",  # US social security number
        _compile(_NUM_START + r"(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}" + _NUM_END),
    ),
    _Detector(
        "id-number",  # national ids their check characters prove, in one search (each pattern more costs one):
        # a Spanish DNI or NIE ("12345678Z", "X1234567L", "Y-1234567-X"), a Brazilian CPF ("123.456.789-09"), a
        # French social security number (NIR: sex, year and month of birth, department, commune, order and key), in
        # the grouping of the carte Vitale ("1 85 05 78 006 084 36") or proved by its key ("185057800608491")
        _compile(
            r"""(?=[0-9XYZ])"""  # the first characters: a first test the regex engine makes fast
            + _NUM_START
            + r"""(?: (?P<dni>\d{8}-?[A-Z] | [XYZ]-?\d{7}-?[A-Z])"""
            + _ASCII_END
            + r"""| (?P<cpf>\d{3}\.\d{3}\.\d{3}-\d{2})"""
            + _NUM_END
            + r"""| (?P<nir>[1-478]
                (?: \d{2}(?:0[1-9]|1[0-2]|[2-9]\d)(?:\d{2}|2[AB])\d{8}
                  | (?P<ns>[ .])\d{2}(?P=ns)(?:0[1-9]|1[0-2]|[2-9]\d)(?P=ns)(?:\d{2}|2[AB])(?P=ns)\d{3}(?P=ns)\d{3}(?P=ns)\d{2}))"""
            + _NUM_END
            + ")"
        ),
        check=_national_id_ok,
    ),
    _Detector(
        "id-number",  # after its name, a DNI, NIE or NIF whatever its letter: "Mi DNI es 12345678Z", "DNI: 12.345.678-Z"
        _compile(
            r"""(?=(?i:[dn]))(?<![A-Za-z0-9])(?i:dni|nie|nif|documento[ \t]+(?:nacional[ \t]+)?de[ \t]+identidad)
            (?:[ \t]+(?i:n[º°o]\.?|n\.|n[uú]mero))?"""
            + _FOREIGN_KEY_SEP
            + r"(?P<bare>(?:\d{8}|\d{2}\.\d{3}\.\d{3}|[XYZxyz]-?\d{7})[ -]?[A-Za-z])"
            + _ASCII_END
        ),
        value_groups=("bare",),
        cue=("dni", "nie", "nif", "identidad"),
    ),
    _Detector(
        "id-number",  # after its name, a CPF whatever its check digits: "meu CPF é 123.456.789-09", "CPF 12345678909"
        _compile(
            r"(?=(?i:c))(?<![A-Za-z0-9])(?i:cpf)(?:[ \t]+(?i:n[º°o]\.?|n\.|n[uú]mero))?"
            + _FOREIGN_KEY_SEP
            + r"(?P<bare>\d{3}\.?\d{3}\.?\d{3}[-./ ]?\d{2})"
            + _NUM_END
        ),
        value_groups=("bare",),
        cue=("cpf",),
    ),
    _Detector(
        "id-number",  # after its name, a NIR in any grouping, with or without its key: "numéro de sécurité sociale :
        # 185057800608436", "N° de sécu 2 69 05 2A 123 456"
        _compile(
            r"""(?=(?i:[cns]))(?<![A-Za-z0-9])(?i:s[ée]curit[ée][ \t]+sociale|s[ée]cu|nir|num[ée]ro[ \t]+insee|carte[ \t]+vitale)"""
            + _FOREIGN_KEY_SEP
            + r"""(?P<bare>[1-478][ .-]?\d{2}[ .-]?\d{2}[ .-]?(?:\d{2}|2[ABab])[ .-]?\d{3}[ .-]?\d{3}(?:[ .-]?\d{2})?)"""
            + _NUM_END
        ),
        value_groups=("bare",),
        cue=("sécu", "secu", "nir", "insee", "vitale"),
    ),
    _Detector(
        "phone",
        _compile(_NUM_START + _PHONE + _NUM_END),
        fit=_phone_span,
        follow=_joined(_PHONE_HEAD, _phone_ok),
    ),
    _Detector(
        "phone",  # 0086 138 1234 5678, where the detector above finds "0086 138 1234": the longer is taken
        # (_NUM_START, looked at behind the 00: a pattern that begins with digits is searched for fast)
        _compile(r"00(?<![0-9A-Za-z_-]00)(?<![0-9][.,]00)" + _AFTER_00 + _NUM_END),
        fit=_intl_phone_span,
    ),
    _Detector(
        "phone",  # a Chinese mobile number that ends an id ("msg-13987654321", "wx_13987654321"); other numbers
        # after a word and a dash are too often references ("ORD-415-555-0100"), this shape seldom. The 1
        # comes first, what is behind it is looked at after: a pattern that begins with a digit is searched for fast.
        _compile(r"1(?<=[A-Za-z][_-]1)[3-9]\d{9}" + _NUM_END),
    ),
    _Detector(
        "phone",  # any national format after the number's name: "tel: 0612345678", "mobile 06.12.34.56.78",
        # "电话 030 1234567", or after "call me at" ("call me at 555-123-4567-8901")
        _compile(
            r"""(?:(?<![A-Za-z0-9])(?i:tel(?:ephone)?|(?:(?:cell|mobile|home|work|office)[ -]?)?phone|mobile|mob|cell|fax|whatsapp
                  |"""
            + _FOREIGN_PHONE_WORD
            + r""")(?:[ _-]?(?i:number|nummer|no\.?|num))?\.?"""
            + _PHONE_FILLER
            + _PHONE_SEP
            + r"| (?<![A-Za-z0-9])(?i:"
            + _MY_NUMBER
            + ")"
            + _PHONE_SEP
            # French "portable: 06 12 34 56 78", "mon portable est 06 12 34 56 78", German "mein Handy ist 0171 ...":
            # both words are English too ("portable 1 000 000 mAh", "handy 2 000 000 tips"), so a colon, or a
            # number dialled with 0 or + (as every French or German one is)
            + r"""| (?<![A-Za-z0-9])(?i:portable|handy)(?:[ \t]*[:：][ \t]*|[ \t]+(?:"""
            + _PHONE_IS
            + r"""[ \t]+)?(?=[+0]))
            | (?<![A-Za-z0-9])(?i:call|text|ring|reach|phone|contact|whatsapp)
                [ \t]+(?i:me|us|him|her|them)[ \t]+(?i:at|on)[ \t]+
            | (?:手机|手機|电话|電話|座机|传真)(?:号码|號碼|号|號)?\s*(?:[:：]|是|为|為)?\s*)
            (?P<bare>"""
            + _NAMED_PHONE
            + ")"
            + _NUM_END
        ),
        fit=_named_phone_span,
        follow=_joined(_NAMED_PHONE_HEAD, _named_phone_ok),
        cue=("tel", "tél", "phone", "mob", "cell", "celular", "fax", "whatsapp", "call", "text", "ring", "reach",
             "contact", "móvil", "movil", "portable", "handy", "num", "número", "手机", "手機", "电话", "電話", "座机", "传真"),
    ),
)

_CODE_DETECTORS = (
    _Detector(
        "iban",
        _compile(_ASCII_START + r"[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?" + _ASCII_END),
        check=_iban_ok,
    ),
    _Detector(
        "id-number",  # UK National Insurance number
        _compile(
            _ASCII_START
            + r"(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z][ ]?\d{2}[ ]?\d{2}[ ]?\d{2}[ ]?[A-D]"
            + _ASCII_END
        ),
    ),
    _Detector(
        "id-number",  # an Italian codice fiscale its check character proves: "RSSMRA85T10A562S"
        _compile(_ASCII_START + r"[A-Z]{6}\d{2}[A-EHLMPRST]\d{2}[A-Z]\d{3}[A-Z]" + _ASCII_END),
        check=_codice_fiscale_ok,
    ),
)

# Each family runs only when a cheap look at the text says it could match:
# most sentences have no digits, no "@" and no secret words, and cost four searches
# (and a few substring tests for the cues of the embedded secrets; text that is not all ASCII, a fifth).
# The secret cue is searched in lower case, which is several times faster than IGNORECASE.
_SECRET_CUE = re.compile(
    # Every alternative begins with one of a few letters (or is found by a part that does: "a29." of "ya29.",
    # "_v1_" of "dop_v1_"), which lets the regex engine skip every other character: a new name of a
    # secret begins with one of them if it can.
    r"-----begin|eyj|[spr]k[-_]|g(?:h[pousr]_|ithub_pat_|l(?:pat|dt|rt|ptt|ft|soat)-|l(?:c|sa)_|eheimzahl)"
    r"|a(?:kia|iza|29\.|pi[0-9a-f]{8}|usweis)|asia|x(?:ox[abposr]|app)-|h(?:f|sec)_|npm_|rv_|r8_|_v1_|_api_"
    r"|s(?:g\.|hp(?:at|ss|ca|pa)_|bp_|enha|chl(?:ü|ue)ssel|teuer)|p(?:ass|asap|wd?|in|ypi-|mak-|sk)|t(?:oken|p\b|an\b)"
    r"|k(?:ey|ennwort)|bearer|secret|c(?:od(?:e|ice)|[oó]digo|v[vc]|ontrase|lave|art[ae] d['’]identit)|ssn"
    r"|social security"
)
# The Chinese names of secrets, asked of text that is not all ASCII: each alternative a whole word, which
# lets the regex engine skip every character that begins none (many times faster than nested groups).
_ZH_SECRET_CUE = re.compile(
    "|".join(
        """
        密码 密碼 密钥 口令 令牌 秘钥 安全码 门禁码 門禁碼 开门码 開門碼 开锁码 開鎖碼 解锁码 解鎖碼 锁屏码 鎖屏碼
        验证码 驗證碼 动态码 動態碼
        护照 護照 通行证 通行證 台胞证 台胞證 回乡证 回鄉證
        """.split()
    )
)
_EMBEDDED_CUE = re.compile("|".join(sorted({re.escape(cue) for d in _EMBEDDED_DETECTORS for cue in d.cue})))
_NUMBER_CUE = re.compile(r"\d(?:[\s().-]{0,3}\d){6}")
_CODE_CUE = re.compile(r"[A-Z]{2} ?\d{2}")

# Each family is asked with the text and the text in lower case.
_FAMILIES: tuple[tuple[Callable[[str, str], object], tuple[_Detector, ...]], ...] = (
    (
        lambda text, lower: _SECRET_CUE.search(lower) or (not lower.isascii() and _ZH_SECRET_CUE.search(lower)),
        _SECRET_DETECTORS,
    ),
    (lambda text, lower: _EMBEDDED_CUE.search(lower), _EMBEDDED_DETECTORS),  # then each asks its own cue
    (lambda text, lower: "@" in text, _EMAIL_DETECTORS),
    (_written_email_cue, _WRITTEN_EMAIL_DETECTORS),
    (lambda text, lower: _NUMBER_CUE.search(text), _NUMBER_DETECTORS),
    (lambda text, lower: _CODE_CUE.search(text), _CODE_DETECTORS),
)


# Look-alikes are found as what they look like: every Unicode space separator as a space
# ("4111\u00a01111...", "138\u30001234..."), fullwidth ASCII as ASCII ("ｐａｓｓｗｏｒｄ", "４１１１", "＠").
# Chinese writes its own punctuation fullwidth, and the patterns read it as such (a fullwidth
# colon needs no space after it; a fullwidth comma after digits ends a number, where "," may be
# a thousands separator): ，：；！？（） stay. One character folds to one, so offsets hold.
_ZS_SPACES = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_CJK_PUNCTUATION = "，：；！？（）"
# Invisible characters that split a value without showing ("bob\u200b@example.com") are left out
# of the view. The joiners (U+200C, U+200D) stay: they shape scripts and emoji, and split no value.
_INVISIBLE = "\u00ad\u061c\u180e\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
_FOLD: dict[int, str | None] = {
    **{ord(ch): " " for ch in _ZS_SPACES},
    **{c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F) if chr(c) not in _CJK_PUNCTUATION},
    **{ord(ch): None for ch in _INVISIBLE},
}
_FOLDABLE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_FOLD)) + "]")


def _detection_view(text: str) -> tuple[str, list[int] | None]:
    """The text the detectors read, and where each of its characters sits in ``text``
    (``None`` when it sits at the same place: nothing invisible was left out)."""
    if text.isascii() or _FOLDABLE.search(text) is None:  # most text: nothing to fold, nothing to copy
        return text, None
    view = text.translate(_FOLD)
    if len(view) == len(text):
        return view, None
    return view, [i for i, ch in enumerate(text) if ch not in _INVISIBLE]


def find_sensitive(text: str) -> list[Finding]:
    """The sensitive spans in ``text``, in order and never overlapping.

    Where two detectors claim overlapping text, the one that starts first wins,
    then the longer one, then the more specific (secrets before numbers).
    Look-alike characters count as what they look like (a no-break space as a
    space, ``４`` as ``4``), and invisible ones inside a value (a zero-width
    space) are part of its span.

    >>> find_sensitive("mail bob@example.com")
    [Finding(kind='email', start=5, end=20)]
    """
    view, where = _detection_view(text)
    findings = _find(view)
    if where is None:
        return findings
    return [Finding(f.kind, where[f.start], where[f.end - 1] + 1) for f in findings]


def _find(text: str) -> list[Finding]:
    candidates: list[tuple[int, int, int, Finding]] = []
    rank = 0
    lower = text.lower()
    for could_match, detectors in _FAMILIES:
        if not could_match(text, lower):
            rank += len(detectors)
            continue
        for detector in detectors:
            if detector.cue and not any(map(lower.__contains__, detector.cue)):  # no generator: this runs often
                rank += 1
                continue
            candidates.extend((f.start, f.start - f.end, rank, f) for f in detector.find(text) if f.end > f.start)
            rank += 1
    candidates.sort(key=lambda c: c[:3])
    chosen: list[Finding] = []
    for _, _, _, finding in candidates:
        if not chosen or finding.start >= chosen[-1].end:
            chosen.append(finding)
    return chosen


def redact(text: str) -> str:
    """``text`` with every sensitive span replaced by its placeholder (``[email]``, ``[phone]``...).

    Idempotent: ``redact(redact(x)) == redact(x)``.
    """
    findings = find_sensitive(text)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(f.placeholder)
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


# Fields whose whole value is a secret whatever it looks like ({"password": "tulip"}).
_SECRET_FIELDS: dict[str, Kind] = {
    "password": "password",
    "passwd": "password",
    "pwd": "password",
    "passphrase": "password",
    "pin": "password",
    "secret": "api-key",
    "clientsecret": "api-key",
    "apikey": "api-key",
    "secretkey": "api-key",
    "privatekey": "private-key",
    "token": "token",
    "accesstoken": "token",
    "authtoken": "token",
    "refreshtoken": "token",
    "idtoken": "token",
    "bearertoken": "token",
    "authorization": "token",
    "proxyauthorization": "token",
    "xapikey": "api-key",
}


_FIELD_SEPARATORS = re.compile(r"[\s_-]")
# A string that is a whole ISO date or time stamp ("2026-12-04", "2026-12-04T23:52:45.1+00:00"):
# no detector claims one, and an export holds several on every item, so it is not searched.
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
# Strings up to this long are looked up in :func:`redact_label`'s cache: a record's keys and
# its labels (roles, speakers, statuses, scenes, categories) repeat on every item.
_LABEL_CHARS = 48


@lru_cache(maxsize=1024)
def _secret_field_kind(key: Any) -> Kind | None:
    if not isinstance(key, str):
        return None
    return _SECRET_FIELDS.get(_FIELD_SEPARATORS.sub("", key).lower())


def redact_obj(value: Any) -> Any:
    """A copy of ``value`` (str, list, tuple, dict, nested) with every string redacted.

    Dict keys are redacted too, and the string value of a field named like a
    secret (``password``, ``api_key``, ``token``...) is replaced whole.

    A number is written as its digits, and an import or a stored value may hold a card or a phone
    number as one (``{"cardnum": 4111111111111111}``): an integer (or a whole float) of seven
    digits or more is replaced by the placeholder (a string) when its digits alone would be
    redacted as text (a card number its checksum proves, a Chinese mobile or resident ID), or
    when its field is named for a phone (``phone``, ``mobile_no``, ``tel``: 7 to 15 digits) or a
    card (``card``, ``card_number``, ``ccnum``: 12 to 19 digits); and a number given for a
    password or a PIN (``{"pin": 1234}``) is replaced whatever it is. Other numbers (counts,
    years, ids, scores, time stamps) and other types pass through unchanged.

    >>> redact_obj({"note": "mail me at bob@example.com", "password": "tulip", "n": 3})
    {'note': 'mail me at [email]', 'password': '[password]', 'n': 3}
    >>> redact_obj({"cardnum": 4111111111111111, "phone": 4155550132, "year": 2023, "uses": 12345678})
    {'cardnum': '[card]', 'phone': '[phone]', 'year': 2023, 'uses': 12345678}
    """
    if isinstance(value, str):
        return _redact_string(value)
    if isinstance(value, dict):
        return {redact_obj(k): _redact_field(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_obj(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_obj(v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _redact_number(value)
    return value


# Field names (lower case, without separators) that say their number is a phone's or a card's.
_PHONE_FIELD = re.compile(
    r"[a-z]*(?:phone|mobile|cell|fax|msisdn|whatsapp)(?:num(?:ber)?|no|int)?|tel(?:ephone)?(?:num(?:ber)?|no)?"
)
_CARD_FIELD = re.compile(r"(?:credit|debit|bank|payment)?card(?:num(?:ber)?|no|int)?|cc(?:num(?:ber)?|no)|pan")


@lru_cache(maxsize=1024)
def _number_field_kind(key: Any) -> Kind | None:
    if not isinstance(key, str):
        return None
    name = _FIELD_SEPARATORS.sub("", key).lower()
    if _PHONE_FIELD.fullmatch(name):
        return "phone"
    if _CARD_FIELD.fullmatch(name):
        return "card"
    return None


def _redact_number(value: int | float, field: Kind | None = None) -> int | float | str:
    """``value``, or the placeholder of what its digits are (see :func:`redact_obj`)."""
    if isinstance(value, float) and not value.is_integer():  # a fraction (a score, an amount), or inf or nan
        return value
    if not -(10**19) < value < 10**19:  # longer than any card, phone or ID number
        return value
    digits = str(abs(int(value)))
    if len(digits) < 7:  # counts, years, small ids: no number that is sensitive is this short
        return value
    found = find_sensitive(digits)
    if found and found[0].start == 0 and found[0].end == len(digits):
        return found[0].placeholder
    if (field == "phone" and len(digits) <= 15) or (field == "card" and 12 <= len(digits) <= 19):
        return f"[{field}]"
    return value


def _redact_string(text: str) -> str:
    """:func:`redact`, faster on what a record repeats: short strings come from a cache, a
    whole time stamp is returned as it is (no detector claims one)."""
    if len(text) <= _LABEL_CHARS:
        return redact_label(text) if not _STAMP.fullmatch(text) else text
    return redact(text)


def _redact_field(key: Any, value: Any) -> Any:
    kind = _secret_field_kind(key)
    if kind is not None and isinstance(value, str) and value.strip() and not _PLACEHOLDER_RE.fullmatch(value):
        return f"[{kind}]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if kind == "password":  # {"pin": 1234}, {"password": 20240501}
            return "[password]"
        return _redact_number(value, _number_field_kind(key))
    return redact_obj(value)


@lru_cache(maxsize=8192)
def redact_label(text: str) -> str:
    """:func:`redact` for short labels that repeat (speakers, roles, threads, tag names)."""
    return redact(text)
