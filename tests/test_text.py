"""Text helpers every write path runs."""

from __future__ import annotations

import re
import sys

from reverie.text import normalize_space


def test_normalize_space_collapses_every_kind_of_whitespace_and_trims_the_ends():
    spaces = re.findall(r"\s", "".join(map(chr, range(sys.maxunicode + 1))))  # every character \s matches
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


def test_the_index_holds_the_parts_of_a_chinese_compound_after_the_terms():
    from reverie.text import compound_parts, index_text, terms

    said = "下周要去北京首都机场接朋友"
    assert terms(said) == ["下周", "北京首都机场", "接", "朋友"]  # jieba keeps the compound whole
    # the terms as written, side by side, then each compound's parts (once for each time it stands)
    assert index_text(said) == "下周 北京首都机场 接 朋友 北京 首都 机场"
    assert index_text("宠物医院，又是宠物医院") == "宠物医院 又 宠物医院 宠物 医院 宠物 医院"
    assert index_text("我的航班号是CA1234") == "航班号 ca1234 航班"
    # a query's compound is searched with the same parts: "北京机场" meets "北京首都机场" in 北京, 机场
    assert compound_parts(terms("北京机场")) == ["北京", "机场"]
    assert compound_parts(terms("宠物")) == [] and index_text("宠物") == "宠物"
    assert compound_parts(terms("北京首都机场和宠物医院")) == ["北京", "首都", "机场", "宠物", "医院"]


def test_text_without_chinese_is_indexed_as_its_terms_alone():
    from reverie.text import index_text, terms

    for said in ("Caroline went to the LGBTQ support group on 7 May 2023!", "Orders a café crème at Zoë’s",
                 "I'm running late; 3/5 at 10:30", "Ｋａｆｋａ cluster", "Москва и Санкт-Петербург", ""):
        assert index_text(said) == " ".join(terms(said)), said


def test_a_date_of_digits_with_month_and_day_is_one_word():
    from reverie.text import index_text, terms, words

    assert words("我3月5日去看牙医") == ["我", "3月5日", "去", "看", "牙医"]  # "日去" was a word
    # one way of writing each date: 号 for 日, leading zeros, full-width digits
    for said in ("3月5日", "3月5号", "03月05日", "３月５日"):
        assert terms(said) == ["3月5日"], said
    assert terms("2024年3月5日") == ["2024", "3月5日"]
    assert terms("12月25日是圣诞节") == ["12月25日", "圣诞节"]
    assert terms("我3月份去日本") == ["3月", "日本"] == terms("我3月去日本")
    # the index also holds a date's month: "3月" finds the days of March
    assert index_text("我3月5日去看牙医") == "3月5日 牙医 3月"
    # no single 月 or 日 that every date holds
    assert not {"月", "日"} & set(terms("3月5日、4月18日和12月25日"))
    # not a date: the words as before
    assert words("13月5日") == ["13", "月", "5", "日"]
    assert words("3月45日") == ["3", "月", "45", "日"]
    assert terms("5个月") == ["个", "月"] and terms("下个月") == ["下个月"]
