"""Misses a security tester found in redaction: passwords and PINs in German, Spanish, French, Italian and
Portuguese; "pass" with a colon or "is"; the trailing symbols of a password; dotted card numbers; wifi keys;
login / password pairs; one-time codes; API keys and tokens with well-known prefixes; a card number after its
name whatever its checksum; and card and phone numbers stored as JSON numbers. Each test holds what must now
be redacted (the secret gone entirely) and what must still be left alone."""

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.redact import find_sensitive, redact, redact_obj

from tests.test_redact_gaps import _mismatches


def _kept(texts: list[str]) -> list[tuple[str, str]]:
    return [(text, text) for text in texts]


# --- passwords and PINs in other languages ------------------------------------------------------------------


def test_a_password_or_pin_in_another_language_is_redacted_after_its_verb_or_colon():
    cases = [
        # German: Passwort, Kennwort, PIN, Geheimzahl; ist, lautet, a colon
        ("Mein Passwort ist Sonnenblume42 und meine PIN ist 5823",
         "Mein Passwort ist [password] und meine PIN ist [password]"),
        ("Kennwort: Geheim123!", "Kennwort: [password]"),
        ("Meine PIN ist 4821", "Meine PIN ist [password]"),
        ("Meine PIN lautet 4821.", "Meine PIN lautet [password]."),
        ("Die Geheimzahl ist 4821", "Die Geheimzahl ist [password]"),
        ("Geheimzahl: 4821", "Geheimzahl: [password]"),
        ("meine PIN-Nummer ist 4821", "meine PIN-Nummer ist [password]"),
        ("Das Passwort lautet: Sonnenblume", "Das Passwort lautet: [password]"),
        ("das Passwort für das WLAN ist Sonnenblume42", "das Passwort für das WLAN ist [password]"),
        ("WLAN-Passwort Sonnenblume42", "WLAN-Passwort [password]"),
        # Spanish: contraseña, clave, PIN; es, a colon
        ("Mi contraseña es girasol2024", "Mi contraseña es [password]"),
        ("Mi contraseña es girasol", "Mi contraseña es [password]"),
        ("contraseña: girasol2024", "contraseña: [password]"),
        ("la contraseña del wifi es Girasol2024!", "la contraseña del wifi es [password]"),
        ("mi clave es girasol2024", "mi clave es [password]"),
        ("la clave del cajero es 4821", "la clave del cajero es [password]"),
        ("mi PIN es 4821", "mi PIN es [password]"),
        # French: mot de passe, code PIN, code secret; est, a colon
        ("mon mot de passe est Tournesol99", "mon mot de passe est [password]"),
        ("mot de passe : Tournesol99", "mot de passe : [password]"),
        ("le mot de passe du wifi est tournesol", "le mot de passe du wifi est [password]"),
        ("mon code PIN est 4821", "mon code PIN est [password]"),
        ("mon code secret est 4821", "mon code secret est [password]"),
        # Italian (password, è) and Portuguese (senha, é)
        ("la mia password è pippo123", "la mia password è [password]"),
        ("la password e' pippo123", "la password e' [password]"),
        ("a senha é girassol2024", "a senha é [password]"),
        ("minha senha é girassol", "minha senha é [password]"),
    ]
    assert _mismatches(cases) == []
    for text, _ in cases:
        for secret in ("Sonnenblume", "Geheim123", "4821", "5823", "girasol", "Tournesol", "tournesol", "pippo", "girassol"):
            assert secret not in redact(text)


def test_a_sentence_about_a_password_in_another_language_is_left_alone():
    texts = [
        "clave de sol",
        "la clave es la paciencia",
        "la clave es el equilibrio",
        "der PIN-Code wurde geändert",
        "Die PIN ist falsch",
        "Das Passwort ist zu kurz",
        "Das Passwort ist falsch",
        "Das Passwort ist abgelaufen",
        "Das Passwort ist ungültig",
        "Das Passwort lautet wie immer",
        "Das Passwort ist mindestens 8 Zeichen lang",
        "Mein Passwort ist sicher",
        "das Passwort für das WLAN ist noch nicht gesetzt",
        "Kennwort: bitte beim Admin erfragen",
        "La contraseña es incorrecta",
        "La contraseña es muy débil",
        "La contraseña es obligatoria",
        "la contraseña es la misma",
        "la contraseña es de 8 caracteres",
        "Le mot de passe est incorrect",
        "Le mot de passe est trop court",
        "le mot de passe est oublié",
        "la password è sbagliata",
        "la password è troppo corta",
        "a senha é fraca",
        "a senha é muito curta",
        "the password era is over",
        # the words that tie a name to what it opens in those languages make no English sentence a password
        "Which password do you think is best?",
        "the password per account is unique",
        "which verification code do you mean is 4821",
    ]
    assert _mismatches(_kept(texts)) == []


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    name=st.sampled_from(["Passwort", "Kennwort", "contraseña", "mot de passe", "password", "senha"]),
    verb=st.sampled_from([" ist ", " lautet ", " es ", " est ", " è ", " é ", ": ", " is "]),
    value=st.from_regex(r"[A-Z][a-z]{3,8}[0-9]{2,4}[!#]?", fullmatch=True),
    tail=st.sampled_from(["", ".", " und so", ", merci"]),
)
def test_any_made_up_password_after_a_foreign_name_and_verb_leaves_nothing_of_it(name, verb, value, tail):
    text = f"Mein {name}{verb}{value}{tail}"
    assert redact(text) == f"Mein {name}{verb}[password]{tail}"


# --- English gaps ---------------------------------------------------------------------------------------------


def test_pass_with_a_colon_or_is_takes_a_value_that_mixes_both_cases_and_digits():
    cases = [
        ("my pass is HunterZeta42", "my pass is [password]"),
        ("pass: HunterZeta42!", "pass: [password]"),
        ("user: bob\npass: HunterZeta42!", "user: bob\npass: [password]"),
        ("pass: HunterZeta42", "pass: [password]"),
    ] + _kept(
        [
            "I passed the exam",
            "the pass is closed",
            "the mountain pass is closed until May",
            "--- PASS: TestLogin2 (0.00s)",
            "the pass is level3",
            "boarding pass: A12B34C5",
            "pass: 2023edition",
            "my pass is expired",
            "my pass is Gate12B",
        ]
    )
    assert _mismatches(cases) == []


def test_a_password_given_after_a_colon_or_verb_keeps_none_of_its_symbols():
    cases = [
        ("password: Sup3rS3cret!", "password: [password]"),
        ("password: abc!!!", "password: [password]"),
        ("my password is hunter2!", "my password is [password]"),
        ("my password is hunter2?!", "my password is [password]"),
        ("密码是abc123!", "密码是[password]"),
        # the sentence's own punctuation stays: a final full stop, comma, a closing bracket
        ("my password is hunter2.", "my password is [password]."),
        ("my password is hunter2, don't tell", "my password is [password], don't tell"),
        ("(password: hunter2)", "(password: [password])"),
        # a PIN or code is digits: a "!" after them is the sentence's
        ("my PIN is 4821!", "my PIN is [password]!"),
    ] + _kept(["password: !!!", "password: ???", "Is the password correct?"])
    assert _mismatches(cases) == []
    assert "!" not in redact("password: Sup3rS3cret!") and "!" not in redact("password: abc!!!")


def test_a_card_number_grouped_by_dots_is_a_card_number():
    cases = [
        ("card: 4111.1111.1111.1111", "card: [card]"),
        ("pay with 5555.5555.5555.4444 please", "pay with [card] please"),
    ] + _kept(["Version 1.2.3.4 released", "IP 192.168.100.200", "ratio 1234.5678.9012.3450"])
    assert _mismatches(cases) == []


def test_a_wifi_key_is_a_password():
    cases = [
        ("my wifi key is Zorblax-77", "my wifi key is [password]"),
        ("WPA key Zorblax77", "WPA key [password]"),
        ("WPA2 key: Zorblax77", "WPA2 key: [password]"),
        ("wpa_psk=Zorblax77", "wpa_psk=[password]"),
        ("wifi password Zorblax-77", "wifi password [password]"),
    ] + _kept(
        [
            "my key point is that we should leave early",
            "the key is to stay calm",
            "wifi key is on the router",
            "my wifi key is the same as before",
        ]
    )
    assert _mismatches(cases) == []


def test_the_password_of_a_login_user_slash_password_pair_is_redacted():
    cases = [
        ("login bob / HunterZeta42", "login bob / [password]"),
        ("login: bob / hunter2", "login: bob / [password]"),
        ("login: bob/hunter22", "login: bob/[password]"),
        ("Login: bob@example.com / Hunter2024", "Login: [email] / [password]"),
        ("credentials: admin / admin123", "credentials: admin / [password]"),
        ("sign in bob / Zorblax-77", "sign in bob / [password]"),
    ] + _kept(
        [
            "login page",
            "the login page is broken",
            "log in / sign up",
            "login: email / password",
            "Login: Google / Facebook",
            "login with Google / Apple",
            "Sign in / Register",
            "login attempts / 24h",
            "login page/home2024",
        ]
    )
    assert _mismatches(cases) == []


def test_a_one_time_code_loses_its_digits():
    cases = [
        ("my OTP is 482913", "my OTP is [password]"),
        ("OTP 482913", "OTP [password]"),
        ("verification code 482913", "verification code [password]"),
        ("2FA code: 123456", "2FA code: [password]"),
        ("one-time code: 4829", "one-time code: [password]"),
        ("your login code is 48291305", "your login code is [password]"),
        ("verification code 4821 expires in 5 minutes", "verification code [password] expires in 5 minutes"),
    ] + _kept(
        [
            "the code is on GitHub",
            "the code is 2000 lines long",
            "verification code is 6 digits",
            "the verification code was sent to my phone",
            "my OTP expired",
            "2FA code: enabled",
            "the verification code 2023-05-08",
            "the login code is 2000 lines long",
            "hotpot 482913",
            "OTP 123",  # too short for a one-time code
            "the OTP 2024 update",  # a year
        ]
    )
    assert _mismatches(cases) == []


def _fake(prefix: str, n: int, alphabet: str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") -> str:
    """A made-up value of ``n`` characters after ``prefix`` that looks machine-made (no real key)."""
    digest = hashlib.sha512(prefix.encode()).digest() * 4
    return prefix + "".join(alphabet[b % len(alphabet)] for b in digest[:n])


HEX = "0123456789abcdef"
TOKENS = [
    # the shapes the tester found kept
    (_fake("AIzaSy", 33), "api-key"),  # Google API key
    (_fake("ya29.", 80), "token"),  # Google OAuth access token
    (_fake("SG.", 22) + _fake(".", 43), "api-key"),  # SendGrid
    (_fake("shpat_", 32, HEX), "api-key"),  # Shopify
    (_fake("shpss_", 32, HEX), "api-key"),
    (_fake("dop_v1_", 64, HEX), "api-key"),  # DigitalOcean
    ("glc_" + "eyJvIjoiMTIzNDU2IiwibiI6InRlc3QiLCJrIjoiYWJjZGVmZ2hpams0NTY3ODkiLCJtIjp7InIiOiJ1cyJ9fQ==", "api-key"),  # Grafana
    (_fake("glsa_", 32) + _fake("_", 8, HEX), "api-key"),
    (_fake("pypi-AgEIcHlwaS5vcmc", 60), "api-key"),  # PyPI
    (_fake("gldt-", 20), "api-key"),  # GitLab deploy token
    (_fake("xapp-1-", 40), "api-key"),  # Slack app-level token
    (_fake("whsec_", 32), "api-key"),  # Stripe webhook secret
    (_fake("sbp_", 40, HEX), "api-key"),  # Supabase
    (_fake("lin_api_", 40), "api-key"),  # Linear
    (_fake("dapi", 32, HEX), "api-key"),  # Databricks
    (_fake("r8_", 37), "api-key"),  # Replicate
    (_fake("gsk_", 52), "api-key"),  # Groq
    (_fake("PMAK-", 24, HEX) + _fake("-", 34, HEX), "api-key"),  # Postman
    (_fake("tskey-auth-", 12) + _fake("-", 30), "api-key"),  # Tailscale
    (_fake("AGE-SECRET-KEY-1", 58, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"), "api-key"),  # age
    # the ones known before: still known
    (_fake("ghp_", 36), "api-key"),
    (_fake("gho_", 36), "api-key"),
    (_fake("github_pat_", 60), "api-key"),
    (_fake("xoxb-", 40), "api-key"),
    (_fake("sk_live_", 24), "api-key"),
    (_fake("rk_live_", 24), "api-key"),
    (_fake("sk-", 40), "api-key"),
    (_fake("sk-proj-", 40), "api-key"),
    (_fake("sk-ant-api03-", 60), "api-key"),
    ("AKIA" + "IOSFODNN7EXAMPLE", "api-key"),
    (_fake("npm_", 36), "api-key"),
    (_fake("hf_", 34), "api-key"),
    (_fake("glpat-", 20), "api-key"),
]


@pytest.mark.parametrize("token, kind", TOKENS, ids=[t[:8] for t, _ in TOKENS])
def test_a_token_with_a_well_known_prefix_is_redacted_whole(token, kind):
    text = f"use {token} for the deploy"
    assert redact(text) == f"use [{kind}] for the deploy"
    assert redact(token) == f"[{kind}]"


def test_a_card_number_after_its_name_is_a_card_whatever_its_checksum():
    cases = [
        ("卡号 6217 0000 1234 5678 901", "卡号 [card]"),  # a 19-digit bank card the Luhn check refuses
        ("银行卡号：6217000012345678901", "银行卡号：[card]"),
        ("card number 6217-0000-1234-5678-901", "card number [card]"),
        ("card no. 6217 0000 1234 5678 901 exp 2026", "card no. [card] exp 2026"),
        ("credit card 6217 0000 1234 5678 901", "credit card [card]"),
        ("card: 6217 0000 1234 5678 901", "card: [card]"),
    ] + _kept(
        [
            "card number is on the back",
            "card: 2 of 5",
            "my card has 1234 on it",
            "I bought 3 cards for 120 dollars",
        ]
    )
    assert _mismatches(cases) == []
    assert "901" not in redact("卡号 6217 0000 1234 5678 901")


# --- numbers in JSON --------------------------------------------------------------------------------------------


def test_a_card_or_phone_number_stored_as_a_json_number_is_redacted():
    data = json.loads('{"meta": {"cardnum": 4111111111111111, "phone_int": 14155550132, "mobile": 4155550132,'
                      ' "card_number": 6217000012345678901, "pin": 4821, "list": [5555555555554444, 13800138000]}}')
    out = redact_obj(data)
    assert out == {
        "meta": {
            "cardnum": "[card]",
            "phone_int": "[phone]",
            "mobile": "[phone]",
            "card_number": "[card]",
            "pin": "[password]",
            "list": ["[card]", "[phone]"],
        }
    }
    assert not any(ch.isdigit() for ch in json.dumps(out))
    # a whole float is a number like any other
    assert redact_obj({"cardnum": 4111111111111111.0}) == {"cardnum": "[card]"}


def test_ordinary_json_numbers_are_left_alone():
    data = {
        "n": 3,
        "year": 2023,
        "confidence": 0.93,
        "uses": 12345678,
        "id": 123456789,
        "ts": 1714567890,
        "ts_ms": 1714567890123,
        "size": 4294967296,
        "token_budget": 500,
        "ok": True,
        "none": None,
        "price": 4111111111111111.5,
        "phone_count": 12,
        "nan": float("inf"),
    }
    assert redact_obj(data) == data
    assert redact_obj([1, 2.5, False, 10**20]) == [1, 2.5, False, 10**20]
    assert find_sensitive("12345678") == []


def test_a_chinese_one_time_code_after_its_name_is_redacted():
    from reverie.redact import redact

    assert redact("验证码是 482913") == "验证码是 [password]"
    assert redact("你的验证码：4829，五分钟内有效") == "你的验证码：[password]，五分钟内有效"
    assert redact("動態碼 883311") == "動態碼 [password]"
    assert redact("验证码已发送") == "验证码已发送"


# --- one-time codes in other languages, wifi keys after a network's name, ya29.c. tokens, portable/móvil ---------


def test_a_one_time_code_in_another_language_loses_its_digits():
    cases = [
        ("Ihr Bestätigungscode lautet 918273", "Ihr Bestätigungscode lautet [password]"),
        ("Dein Einmalcode: 482913", "Dein Einmalcode: [password]"),
        ("Ihre TAN lautet 123456", "Ihre TAN lautet [password]"),
        ("pushTAN: 482913", "pushTAN: [password]"),
        ("Verifizierungscode: 551234", "Verifizierungscode: [password]"),
        ("Tu código de verificación es 442190", "Tu código de verificación es [password]"),
        ("Le code de vérification est 583920", "Le code de vérification est [password]"),
        ("Votre code de confirmation : 662211", "Votre code de confirmation : [password]"),
        ("il codice di verifica è 551234", "il codice di verifica è [password]"),
        ("2FA backup code 4821-9932", "2FA backup code [password]"),
        ("recovery code: 1234-5678", "recovery code: [password]"),
        ("2FA code 482-913", "2FA code [password]"),
        ("验证码 482-913", "验证码 [password]"),
    ] + _kept(
        [
            "the TAN color",
            "my tan 123456",
            "TAN 2024",
            "Bestätigungscode wurde gesendet",
            "código postal 28001",
            "le code de la route",
            "le code de la route 2024",
            "Code de vérification : abc",
            "backup code 2023-2024",  # a span of years
            "the backup code is 2000 lines",
            "door code 123-456",  # grouped digits are a one-time code's only
            "PIN 1234-5678",
            "门禁码 123-456",
            "backup code 4821-9932-1111",
            "verification code 2023-05-08",
        ]
    )
    assert _mismatches(cases) == []


def test_a_wifi_key_after_the_network_name_or_in_german_is_a_password():
    cases = [
        ("WiFi: HomeNet / key: OrangeSky2024", "WiFi: HomeNet / key: [password]"),
        ("SSID HomeNet key OrangeSky2024", "SSID HomeNet key [password]"),
        ("SSID HomeNet psk Zorblax77", "SSID HomeNet psk [password]"),
        ("wifi: cafe / key: Bergsee2023.", "wifi: cafe / key: [password]."),
        ("WLAN-Schlüssel: Bergsee2023", "WLAN-Schlüssel: [password]"),
        ("WLAN-Schlüssel ist Bergsee2023", "WLAN-Schlüssel ist [password]"),
    ] + _kept(
        [
            "wifi is the key to success",
            "network effects key point",
            "SSID: HomeNet / key: value",
            "the wifi at home, key is abc",
            "WLAN-Schlüssel ist falsch",
            "der Schlüssel liegt unter der Matte",
        ]
    )
    assert _mismatches(cases) == []


def test_a_google_token_with_a_c_segment_is_redacted():
    token = _fake("ya29.c.b0", 60)
    assert redact(f"token {token}") == "token [token]"
    assert redact(f"the bearer is {token}.") == "the bearer is [token]."
    assert find_sensitive(token)[0].kind == "token"
    assert redact("ya29.c.short") == "ya29.c.short"


def test_a_phone_after_portable_or_movil_is_redacted():
    cases = [
        ("portable: 06 12 34 56 78", "portable: [phone]"),
        ("portable 06 12 34 56 78", "portable [phone]"),
        ("móvil 612 345 678", "móvil [phone]"),
        ("móvil: +34 612 345 678", "móvil: [phone]"),
        ("teléfono móvil 612345678", "teléfono móvil [phone]"),
    ] + _kept(
        [
            "my portable speaker",
            "portable 1 000 000 mAh",
            "my portable: speaker",
            "móvil",
            "el móvil 2023",
        ]
    )
    assert _mismatches(cases) == []


def test_an_iso_date_and_serial_after_a_phone_stay():
    assert redact("+1-200-200-0000-1 on 0099-01-01-10") == "[phone]-1 on 0099-01-01-10"
    assert redact("0044-20-7946-0958") == "[phone]"
    assert redact("0033-1-23-45-67-89") == "[phone]"


def test_mdp_is_still_no_password_word():
    assert redact("mdp: foo123") == "mdp: foo123"
    assert redact("the MDP 482913 states") == "the MDP 482913 states"


def test_a_phone_after_its_name_and_another_languages_verb_is_redacted():
    from reverie.redact import redact

    assert redact("mi móvil es 612 345 678") == "mi móvil es [phone]"
    assert redact("el móvil es nuevo") == "el móvil es nuevo"
    assert redact("the phone es 2024") == "the phone es 2024"


def test_a_phone_after_its_name_or_my_number_in_french_italian_german_or_portuguese_is_redacted():
    cases = [
        ("mon portable est 06 12 34 56 78", "mon portable est [phone]"),
        ("mon portable est le 06 12 34 56 78", "mon portable est le [phone]"),
        ("mon numéro est 06 12 34 56 78", "mon numéro est [phone]"),
        ("mon numéro de portable est 06.12.34.56.78", "mon numéro de portable est [phone]"),
        ("tél : 01 23 45 67 89", "tél : [phone]"),
        ("il mio cellulare è 347 123 4567", "il mio cellulare è [phone]"),
        ("il mio numero è 347 123 4567", "il mio numero è [phone]"),
        ("il mio numero di telefono è il 347 123 4567", "il mio numero di telefono è il [phone]"),
        ("meine Handynummer ist 0171 1234567", "meine Handynummer ist [phone]"),
        ("meine Telefonnummer lautet 030 1234567", "meine Telefonnummer lautet [phone]"),
        ("mein Handy ist +49 171 1234567", "mein Handy ist [phone]"),
        ("meine Nummer ist 0171 1234567", "meine Nummer ist [phone]"),
        ("meu celular é (11) 91234-5678", "meu celular é [phone]"),
        ("o meu número é o 912 345 678", "o meu número é o [phone]"),
        ("meu telemóvel é 912 345 678", "meu telemóvel é [phone]"),
        ("mi número es el 612 345 678", "mi número es el [phone]"),
        ("mi celular es 55 1234 5678", "mi celular es [phone]"),
        ("mi teléfono es 612 345 678", "mi teléfono es [phone]"),
    ] + _kept(
        [
            # the phone's name with no number, a year, a price or a count after it
            "mon portable est cassé",
            "mon portable est 2023",
            "mon portable est un iPhone 15",
            "mon numéro est 42",
            "mon numéro préféré est 7",
            "mon numéro de client est AB-12345",
            "mon numéro est le 12 rue de la Paix",
            "il cellulare è nuovo",
            "il mio cellulare è costato 1 299 euro",
            "il numero è 2024",
            "Das Handy ist 2019 kaputt gegangen",
            "a handy 2 000 000 tips",
            "meine Handynummer ist neu",
            "o celular custa R$ 1.500",
            "el número 1 500 000 es grande",
            "Le prix est 1 250 000 euros",
            "In 2023 I paid 1 500 000 euros for 3 houses",
        ]
    )
    assert _mismatches(cases) == []


def test_a_german_pin_or_password_after_der_zum_or_zur_and_what_it_opens_is_redacted():
    cases = [
        ("Meine Bank-PIN ist 4521 und die PIN der Kreditkarte ist 9911",
         "Meine Bank-PIN ist [password] und die PIN der Kreditkarte ist [password]"),
        ("das Passwort der Fritzbox lautet Bergsee2023", "das Passwort der Fritzbox lautet [password]"),
        ("das Passwort zum Router ist Sonne123", "das Passwort zum Router ist [password]"),
        ("die PIN zur Haustür ist 2580", "die PIN zur Haustür ist [password]"),
    ] + _kept(["die PIN der Karte ist falsch", "das Passwort der Woche ist zu kurz"])
    assert _mismatches(cases) == []


def test_a_pin_of_digits_after_portuguese_do_or_italian_per_and_what_it_opens_is_redacted():
    cases = [
        ("o PIN do cartão é 9911", "o PIN do cartão é [password]"),
        ("a senha do banco é 4521", "a senha do banco é [password]"),
        ("il PIN per la carta è 4521", "il PIN per la carta è [password]"),
    ] + _kept(["which password do you think is best?", "the pin do you have 1234 of them",
               "I ran 10 km per day in 2023", "a senha do banco é nova"])
    assert _mismatches(cases) == []


def test_a_portuguese_senha_after_do_da_no_or_para_and_what_it_opens_is_redacted_whatever_its_characters():
    cases = [
        ("a senha do wifi é casa123", "a senha do wifi é [password]"),
        ("A Senha da conta é Verde#2024", "A Senha da conta é [password]"),
        ("a senha no portal é Azul2024", "a senha no portal é [password]"),
        ("a senha para o wifi é casa123", "a senha para o wifi é [password]"),
        ("a senha do wifi: casa123", "a senha do wifi: [password]"),
    ] + _kept(["a senha do banco é segura", "a senha do wifi é a mesma de sempre",
               "which password do you think is best"])
    assert _mismatches(cases) == []
