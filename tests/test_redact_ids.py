"""Identity numbers in German, Spanish, French, Italian and Portuguese, and email addresses written out to fool a
parser, that a tester found kept: passports and identity cards after their name, tax and social security numbers,
national ids whose check character proves them (DNI, NIE, codice fiscale, CPF, NIR), and ``ana at gmail dot com``.
Each test holds what must now be redacted (the words around it kept) and what must still be left alone."""

import time

from reverie.redact import find_sensitive, redact

from tests.test_redact_gaps import _mismatches


def _kept(texts: list[str]) -> list[tuple[str, str]]:
    return [(text, text) for text in texts]


N = 200_000


# --- passports and identity cards after their name ------------------------------------------------------------


def test_a_passport_or_identity_card_number_after_its_name_in_another_language_is_redacted():
    cases = [
        # German: Reisepass, Reisepassnummer, Personalausweis, Ausweis-Nr.
        ("Meine Reisepassnummer ist C01X00T47", "Meine Reisepassnummer ist [id-number]"),
        ("Reisepass: C01X00T47, gültig bis 2030", "Reisepass: [id-number], gültig bis 2030"),
        ("Personalausweis: T22000129", "Personalausweis: [id-number]"),
        ("Personalausweisnummer T22000129", "Personalausweisnummer [id-number]"),
        ("meine Ausweisnummer lautet T22000129.", "meine Ausweisnummer lautet [id-number]."),
        ("Ausweis-Nr. T22000129", "Ausweis-Nr. [id-number]"),
        ("Personalausweis 1220001297", "Personalausweis [id-number]"),  # the old card: ten digits
        # Spanish
        ("Número de pasaporte: PAA123456", "Número de pasaporte: [id-number]"),
        ("Mi pasaporte es PAA123456", "Mi pasaporte es [id-number]"),
        # French
        ("mon numéro de passeport est 12AB34567", "mon numéro de passeport est [id-number]"),
        ("N° de passeport : 12AB34567", "N° de passeport : [id-number]"),
        ("carte d'identité 880692310285", "carte d'identité [id-number]"),
        # Italian
        ("numero di passaporto YA1234567", "numero di passaporto [id-number]"),
        ("il mio passaporto è YA1234567", "il mio passaporto è [id-number]"),
        ("passaporto n. YA1234567", "passaporto n. [id-number]"),
        ("carta d'identità CA00000AA", "carta d'identità [id-number]"),
        # Portuguese
        ("número do passaporte FT123456", "número do passaporte [id-number]"),
        ("o meu passaporte é FT123456", "o meu passaporte é [id-number]"),
    ]
    assert _mismatches(cases) == []
    for text, _ in cases:
        assert [f.kind for f in find_sensitive(text)] == ["id-number"]


def test_a_sentence_about_a_passport_or_identity_card_is_left_alone():
    cases = _kept(
        [
            "Mein Reisepass ist abgelaufen",
            "Reisepass 2024 verlängert",
            "Der Personalausweis kostet 37 Euro",
            "Personalausweis beantragt am 12.05.2023",
            "Personalausweis 20270305 abholen",  # a date
            "Mi pasaporte caduca en 2025",
            "Número de pasaporte: pendiente",
            "mon passeport expire en 2026",
            "la carte d'identité est valable 15 ans",
            "il passaporto è scaduto",
            "numero di passaporto 123456",  # all digits: seven at least
            "o passaporte custa 257 reais",
            "Passwort vergessen, Pass 123456 verloren",
        ]
    )
    assert _mismatches(cases) == []


# --- tax and social security numbers --------------------------------------------------------------------------


def test_a_german_tax_id_after_its_name_is_redacted_in_any_grouping():
    cases = [
        ("Steuer-ID 12 345 678 901", "Steuer-ID [id-number]"),
        ("Meine Steuer-ID ist 12345678901.", "Meine Steuer-ID ist [id-number]."),
        ("Steueridentifikationsnummer: 12 345 678 901", "Steueridentifikationsnummer: [id-number]"),
        ("meine Steueridentifikationsnummer lautet 12345678901", "meine Steueridentifikationsnummer lautet [id-number]"),
        ("steuerliche Identifikationsnummer 12 345 678 901", "steuerliche Identifikationsnummer [id-number]"),
        ("Steuer-IdNr.: 12 345 678 901", "Steuer-IdNr.: [id-number]"),
        ("Steuernummer 12/345/67890", "Steuernummer [id-number]"),
    ] + _kept(
        [
            "Steuer-ID beantragen",
            "Steuer-ID ist 11-stellig",
            "Steuer-ID bis 2025 nachreichen",
            "Steuererklärung 2023: 12 345 Euro erstattet",
            "Steuer-ID 12 345",  # too short
        ]
    )
    assert _mismatches(cases) == []


def test_a_french_social_security_number_is_one_id_not_half_a_phone():
    cases = [
        ("1 85 05 78 006 084 36", "[id-number]"),  # the grouping of the carte Vitale: the number whole
        ("mon numéro de sécurité sociale est 1 85 05 78 006 084 36", "mon numéro de sécurité sociale est [id-number]"),
        ("numéro de sécurité sociale : 185057800608436", "numéro de sécurité sociale : [id-number]"),
        ("N° de sécu 1 85 05 78 006 084", "N° de sécu [id-number]"),  # without its key, after its name
        ("carte Vitale : 2 69 05 2A 123 456 42", "carte Vitale : [id-number]"),  # Corsica: 2A
        ("numéro INSEE 185057800608491", "numéro INSEE [id-number]"),
        ("envoyé : 185057800608491.", "envoyé : [id-number]."),  # unnamed and ungrouped: its key proves it
    ] + _kept(
        [
            "commande 185057800608436",  # unnamed, ungrouped, and its key fails
            "numéro de sécurité sociale requis",
            "la sécurité sociale a remboursé 25 €",
            "1 850 578 006 084 habitants",
        ]
    )
    assert _mismatches(cases) == []
    assert redact("appelle le +33 1 85 05 78 00") == "appelle le [phone]", "a French phone is still a phone"


def test_an_italian_codice_fiscale_is_redacted_after_its_name_or_by_its_check_character():
    cases = [
        ("codice fiscale RSSMRA85T10A562S", "codice fiscale [id-number]"),
        ("Il mio codice fiscale è RSSMRA85T10A562S", "Il mio codice fiscale è [id-number]"),
        ("codice fiscale: rssmra85t10a562x", "codice fiscale: [id-number]"),  # after its name, whatever its check
        ("CF RSSMRA85T10A562S, nato a Roma", "CF [id-number], nato a Roma"),
    ] + _kept(
        [
            "codice fiscale obbligatorio",
            "codice fiscale: da inserire",
            "ref RSSMRA85T10A562X",  # unnamed and its check character fails
        ]
    )
    assert _mismatches(cases) == []


# --- national ids that a check character proves --------------------------------------------------------------------


def test_a_spanish_dni_or_nie_is_redacted_after_its_name_or_by_its_check_letter():
    cases = [
        ("Mi DNI es 12345678Z", "Mi DNI es [id-number]"),
        ("DNI: 12.345.678-Z", "DNI: [id-number]"),
        ("mi NIE es X1234567L", "mi NIE es [id-number]"),
        ("NIF 12345678A", "NIF [id-number]"),  # after its name, whatever its letter
        ("Mi número de extranjero es X1234567L", "Mi número de extranjero es [id-number]"),
        ("envía 12345678Z al banco", "envía [id-number] al banco"),
        ("Y-1234567-X", "[id-number]"),
    ] + _kept(
        [
            "pedido 12345678A",  # unnamed and its letter fails
            "el DNI electrónico",
            "DNI 2.0",
            "Compré 12345678 unidades",
            "X1234567 es el modelo",
        ]
    )
    assert _mismatches(cases) == []


def test_a_brazilian_cpf_is_redacted_after_its_name_or_by_its_check_digits():
    cases = [
        ("meu CPF é 123.456.789-09", "meu CPF é [id-number]"),
        ("CPF 12345678909", "CPF [id-number]"),
        ("CPF: 123.456.789-00", "CPF: [id-number]"),  # after its name, whatever its check digits
        ("o número 123.456.789-09 é meu", "o número [id-number] é meu"),
    ] + _kept(
        [
            "CPF obrigatório",
            "nota 123.456.789-00",  # unnamed and its check digits fail
            "111.111.111-11",  # one digit repeated: no CPF, though its check digits pass
        ]
    )
    assert _mismatches(cases) == []


# --- email addresses written out --------------------------------------------------------------------------------


def test_an_email_address_written_out_with_at_and_dot_is_redacted():
    cases = [
        ("carl.meyer (at) gmx.de", "[email]"),
        ("schreib an carl.meyer (at) gmx.de bitte", "schreib an [email] bitte"),
        ("ana at gmail dot com", "[email]"),
        ("ana [at] gmail [dot] com", "[email]"),
        ("mail ana AT gmail DOT com today", "mail [email] today"),
        ("ana[at]gmail[dot]com", "[email]"),
        ("carl.meyer at gmx dot de", "[email]"),
        ("contact: ana.li {at} mail (dot) example (dot) co (dot) uk.", "contact: [email]."),
        ("ana_92 at web dot de", "[email]"),
    ]
    assert _mismatches(cases) == []
    for text, _ in cases:
        assert [f.kind for f in find_sensitive(text)] == ["email"]


def test_prose_with_at_and_dot_is_left_alone():
    cases = _kept(
        [
            "I'm at home",
            "meet at 5",
            "then met Carl at 5pm.",
            "look at gmail dot com",
            "we met at the dot com party",
            "she was at amazon dot com for years",
            "I worked at google dot com",
            "he's at work dot com",
            "I am at gmail dot com every day",
            "Visit us at example dot com",
            "write to ana at gmail",
            "ana at gmail.com",  # "at" and a real dot: as "look at google.com" reads
            "look at google.com",
            "(at least 5 of them)",
            "price (at) 5.00",
            "the event [at] home",
            "ana [at] gmail",
            "ana at gmail dot something",
            "the dot com bubble",
        ]
    )
    assert _mismatches(cases) == []


def test_long_runs_of_the_new_keywords_and_look_alikes_stay_linear():
    texts = [
        "x at " * (N // 5),
        "a (at) " * (N // 7),
        "a at b dot " * (N // 11),
        "b dot " * (N // 6),
        "Reisepass " * (N // 10),
        "pasaporte " * (N // 10),
        "1 " * (N // 2),
        "Steuer-ID " + "1 " * (N // 2),
        "DNI " + "1." * (N // 2),
        "numéro de sécurité sociale " + "1 " * (N // 2),
        "A" * N,
        "a." * (N // 2) + " at",
    ]
    start = time.perf_counter()
    for text in texts:
        assert redact(text) == text
    assert time.perf_counter() - start < 10.0


def test_an_id_given_with_the_words_has_the_number_is_redacted():
    cases = [
        ("Mein Personalausweis hat die Nummer T22000129.", "Mein Personalausweis hat die Nummer [id-number]."),
        ("Mi pasaporte tiene el número PAA123456", "Mi pasaporte tiene el número [id-number]"),
        ("Mon passeport a le numéro 12AB34567", "Mon passeport a le numéro [id-number]"),
    ] + _kept(["Mein Personalausweis hat die Nummer vergessen"])
    assert _mismatches(cases) == []
