"""Gaps a Chinese-language tester found in redaction: passwords in corner and title brackets, lock codes and PINs
with no verb, phone numbers dialled with 00 or 86 or written with dots, resident IDs after their name in any
grouping or with a mistyped check character, passport-style ids right after their name, and mobile numbers that
end an id. Each test holds what must now be redacted and what must still be left alone."""

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.redact import redact

from tests.test_redact_gaps import _mismatches

# A resident ID with a right check character (GB 11643), and the same ID with a wrong one.
CN_ID = "110101199003071233"
CN_ID_TYPO = "110101199003071234"


def test_a_password_in_chinese_brackets_is_redacted_and_the_brackets_stay():
    cases = [
        ("密码是「Secret99」", "密码是「[password]」"),
        ("密码是『Secret99』", "密码是『[password]』"),
        ("密码是【Secret99】", "密码是【[password]】"),
        ("密码是《Secret99》", "密码是《[password]》"),
        ("密码是“Secret99”", "密码是“[password]”"),
        ("我的密码是「Secret99」，我住在上海", "我的密码是「[password]」，我住在上海"),
        ("口令：『芝麻开门』", "口令：『[password]』"),
        ("密码：「芝麻开门」，别外传", "密码：「[password]」，别外传"),
        ("the password is 「hunter2」", "the password is 「[password]」"),
        # no verb: the value must look made up
        ("密码「Secret99」", "密码「[password]」"),
        ("WiFi密码“tplink8888”", "WiFi密码“[password]”"),
    ] + [
        (text, text)
        for text in [
            "密码【重要】请勿外传",
            "修改密码【设置】→【安全】",
            "书名《Secret99》很有意思",
            "我在读《三体》",
            "「密码」这个词",
        ]
    ]
    assert _mismatches(cases) == []


def test_a_chinese_lock_code_or_pin_is_redacted_without_a_verb():
    cases = [
        ("开机密码1234", "开机密码[password]"),
        ("门禁码是2580", "门禁码是[password]"),
        ("保险箱密码 2580", "保险箱密码 [password]"),
        ("门禁码：2580", "门禁码：[password]"),
        ("门禁码 2580，进门右转", "门禁码 [password]，进门右转"),
        ("锁屏密码0420，别告诉别人", "锁屏密码[password]，别告诉别人"),
        ("开锁码 #2580", "开锁码 [password]"),
        ("門禁碼是2580", "門禁碼是[password]"),
        ("PIN码1234", "PIN码[password]"),
        ("银行卡密码是888888", "银行卡密码是[password]"),
    ] + [
        (text, text)
        for text in [
            "密码123",  # too short for a PIN
            "密码2024年改的",
            "门禁码2024年换过",
            "密码1000元",
            "密码 2026-03-05 过期",
            "门禁码4位数",
            "密码长度8位",
            "改了3次密码",
            "股票代码600519",
            "验证码 12",  # two digits: no one-time code
            "验证码已发送",
        ]
    ]
    assert _mismatches(cases) == []


def test_a_phone_number_dialled_with_00_or_86_or_written_with_dots_is_redacted_whole():
    cases = [
        ("86-13812345678", "[phone]"),
        ("86 138 1234 5678", "[phone]"),
        ("0086 138 1234 5678", "[phone]"),
        ("0086-13812345678", "[phone]"),
        ("008613812345678", "[phone]"),
        ("0086-138-1234-5678", "[phone]"),
        ("我的电话号码：0086-13812345678", "我的电话号码：[phone]"),
        ("打给0086 138 1234 5678，谢谢", "打给[phone]，谢谢"),
        ("138.1234.5678", "[phone]"),
        ("手机138.1234.5678", "手机[phone]"),
        ("0044 20 7946 0958", "[phone]"),
        ("0049-30-1234567", "[phone]"),
        ("0086 138 1234 5678 98765", "[phone] 98765"),
        ("tel 00766 19139382195", "tel 00766 [phone]"),  # a run that makes no number hides none inside it
    ] + [
        (text, text)
        for text in [
            "2026-03-05",
            "2026.03.05",
            "0099-01-01 00:00+00:00",
            "0012-05-08",
            "order 0097.553107",
            "0086.138.1234.5678x",
            "+86的号码",
            "第86-13号",
            "版本13.5.1和v2.3.0",
            "138.12元",
            "1.138.1234.5678",
            "v138.1234.5678",
        ]
    ]
    assert _mismatches(cases) == []


def test_a_resident_id_after_its_name_is_redacted_in_any_grouping_and_whatever_its_check_character():
    cases = [
        (f"身份证 {CN_ID[:6]} {CN_ID[6:14]} {CN_ID[14:]}", "身份证 [id-number]"),
        (f"身份证{CN_ID[:6]}-{CN_ID[6:14]}-{CN_ID[14:]}", "身份证[id-number]"),
        (f"身份证号{CN_ID_TYPO}", "身份证号[id-number]"),
        (f"身份證號碼 {CN_ID_TYPO[:6]}-{CN_ID_TYPO[6:14]}-{CN_ID_TYPO[14:]}", "身份證號碼 [id-number]"),
        ("我的身份证号码是 11010119900307123x 请保密", "我的身份证号码是 [id-number] 请保密"),
        (f"身份证件号码：{CN_ID}", "身份证件号码：[id-number]"),
        (f"证件号 {CN_ID}", "证件号 [id-number]"),
        (f"公民身份号码{CN_ID}", "公民身份号码[id-number]"),
        ("身份证 110101900307123", "身份证 [id-number]"),  # the 15 digits of an old ID
        (f"我的身份证号码是{CN_ID[:17]}（最后一位忘了）", "我的身份证号码是[id-number]（最后一位忘了）"),
        (f"身份证 {CN_ID} 13812345678", "身份证 [id-number] [phone]"),
        (f"身份证 {CN_ID[:6]} {CN_ID[6:14]} {CN_ID[14:]} 5678", "身份证 [id-number] 5678"),
        (CN_ID, "[id-number]"),  # unnamed, its check character tells it
    ] + [
        (text, text)
        for text in [
            "身份证号码是18位",
            "身份证号码2024年到期",
            "身份证后六位是071233",
            CN_ID_TYPO,  # unnamed and failing the check: a number
            # grouped and unnamed, an ID reads like a reference with a date in it
            f"order {CN_ID[:6]}-{CN_ID[6:14]}-{CN_ID[14:]}",
        ]
    ]
    assert _mismatches(cases) == []


def test_a_passport_style_id_right_after_its_name_is_redacted():
    cases = [
        ("护照E12345678", "护照[id-number]"),
        ("港澳通行证C12345678", "港澳通行证[id-number]"),
        ("通行证 C12345678", "通行证 [id-number]"),
        ("通行证号码 C12345678", "通行证号码 [id-number]"),
        ("往来港澳通行证C12345678", "往来港澳通行证[id-number]"),
        ("台湾通行证号码：T12345678", "台湾通行证号码：[id-number]"),
        ("台胞证12345678", "台胞证[id-number]"),
        ("回乡证H12345678", "回乡证[id-number]"),
        ("护照号码E12345678", "护照号码[id-number]"),
        ("護照E12345678", "護照[id-number]"),
        ("我的护照号是 G12345678", "我的护照号是 [id-number]"),
    ] + [
        (text, text)
        for text in [
            "护照过期了",
            "护照2024年到期",
            "护照20270305到期",
            "passport 20270305",
            "买了战令通行证128元",
            "通行证 2024赛季",
        ]
    ]
    assert _mismatches(cases) == []


def test_a_mobile_number_that_ends_an_id_is_redacted():
    cases = [
        ("msg-13987654321", "msg-[phone]"),
        ("wx-13987654321", "wx-[phone]"),
        ("qq_13987654321", "qq_[phone]"),
        ("wxid_13987654321", "wxid_[phone]"),
        ("no fact 'fact_13987654321'", "no fact 'fact_[phone]'"),
        ("thread-13987654321 was archived", "thread-[phone] was archived"),
    ] + [
        (text, text)
        for text in [
            "fact_13800138000abcd",
            "v13987654321",
            "编号 A-13987654321B",
            "ORD-415-555-0100",
            "msg-1398765432",  # ten digits
            "ep_01a24561c7388b224131319d",
        ]
    ]
    assert _mismatches(cases) == []


ORDINARY_CHINESE = [
    "2026年3月5日下午3点在302房间开会",
    "3月5日见，10:30-11:45",
    "每天吃5毫克，连续14天",
    "价格¥1299.00，打八折",
    "这个要¥3000，有点贵",
    "我2024年搬家了",
    "会议室1203，分机8021",
    "订单号20260305123456已付款",
    "订单 2026-03-05-1234",
    "快递单号SF1234567890123",
    "学号2021013812",
    "13.5%的人",
    "1.5升水",
    "电话10086",
    "手机尾号5678",
    "QQ群 123456789",
    "航班CA1234，座位12A",
    "我最近在学习机器学习，每天晚上花两个小时看课程。",
    "👨\u200d👩\u200d👧\u200d👦家庭聚餐在周日，地点：北京朝阳区。",
]


def test_ordinary_chinese_text_with_numbers_is_left_alone():
    assert _mismatches([(text, text) for text in ORDINARY_CHINESE]) == []


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    day=st.dates(min_value=date(1000, 1, 1)),
    word=st.sampled_from(["", "会议", "订单", "护照", "通行证", "门禁码", "密码", "身份证", "手机", "电话", "msg-"]),
    form=st.sampled_from(["{y}年{m}月{d}日", "{y}-{m:02d}-{d:02d}", "{y}.{m:02d}.{d:02d}", "{y}/{m}/{d}"]),
)
def test_a_date_after_the_new_names_is_never_taken_for_a_secret(day, word, form):
    text = word + form.format(y=day.year, m=day.month, d=day.day) + "到期"
    assert redact(text) == text


def test_long_runs_of_the_chinese_forms_are_redacted_in_linear_time():
    n = 200_000
    cases = [
        ("密码是「" * (n // 4), "密码是「" * (n // 4)),
        ("密码「" * (n // 3), "密码「" * (n // 3)),
        ("「" * n + "」", "「" * n + "」"),
        ("门禁码是" * (n // 4), "门禁码是" * (n // 4)),
        ("门禁码是2580，" * (n // 9), "门禁码是[password]，" * (n // 9)),
        ("001 " + "1 " * (n // 2), "001 " + "1 " * (n // 2)),
        ("0086 138 1234 5678 " * (n // 19), "[phone] " * (n // 19)),
        ("身份证 " + "1." * (n // 2), "身份证 " + "1." * (n // 2)),
        ("身份证：" * (n // 4), "身份证：" * (n // 4)),
        ("身份证" * (n // 3), "身份证" * (n // 3)),
        ("护照" * (n // 2), "护照" * (n // 2)),
        ("a-1" * (n // 3), "a-1" * (n // 3)),
        ("msg-13987654321 " * (n // 16), "msg-[phone] " * (n // 16)),
    ]
    # a quadratic search took minutes on these (the suite's timeout stops it), a linear one milliseconds
    assert [text[:40] for text, expected in cases if redact(text) != expected] == []
