"""Text helpers every write path runs."""

from __future__ import annotations

import re
import sys

from reverie.text import normalize_space


def test_normalize_space_collapses_every_kind_of_whitespace_and_trims_the_ends():
    spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if re.fullmatch(r"\s", c)]
    assert "\u00a0" in spaces and "\u3000" in spaces and "\x1f" in spaces  # not only ASCII
    for space in spaces:
        text = f"{space}{space}a{space}b {space}\tc{space}"
        assert normalize_space(text) == "a b c", repr(space)
    assert normalize_space("") == "" and normalize_space(" \n ") == ""
    assert normalize_space("Priya:  ｈｉ\u200bthere") == "Priya: ｈｉ\u200bthere"  # a zero-width space is no space


def test_e_variants_give_the_other_stem_of_a_word_with_a_final_e():
    from reverie.text import e_variants, stem

    assert e_variants("Where do I live?") == ["liv"] == [stem("lives")]
    assert e_variants("lives in Berlin") == ["live"] == [stem("live")]
    assert e_variants("When did we move?") == [stem("moved")]
    assert e_variants("the cat sat on the mat") == []  # no final e anywhere
