"""Settings: a misspelled name and a value out of its range are refused at load, naming the
setting (keywords of Memory / Settings.load, config.toml and the environment alike)."""

from __future__ import annotations

import pytest

from reverie import InvalidInput, Memory
from reverie.settings import Settings


def test_a_misspelled_keyword_is_refused_with_the_setting_it_may_mean(home):
    with pytest.raises(InvalidInput, match="debounce_second.*did you mean 'debounce_seconds'") as err:
        Memory(home, background=False, debounce_second=5)
    assert err.value.field == "debounce_second"
    assert not home.exists()  # refused before anything was made
    with pytest.raises(InvalidInput, match="unknown setting 'dream_dayz'.*'dream_days'"):
        Settings.load(home, dream_dayz=None)  # even with no value
    with pytest.raises(InvalidInput, match="'llm.modle'.*did you mean 'llm.model'"):
        Settings.load(home, llm={"modle": "x"})
    with pytest.raises(InvalidInput, match="unknown setting 'colour'") as err:
        Settings.load(home, colour="blue")
    assert "did you mean" not in str(err.value) and err.value.field == "colour"


def test_a_misspelled_name_in_config_toml_is_refused_naming_the_file(home):
    home.mkdir()
    config = home / "config.toml"
    config.write_text("debounce_secnds = 1\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="unknown setting 'debounce_secnds' in .*config.toml: "
                                           "did you mean 'debounce_seconds'") as err:
        Memory(home, background=False)
    assert err.value.field == "debounce_secnds"
    config.write_text('[llm]\nmodle = "qwen2.5:7b"\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="'llm.modle' in .*config.toml: did you mean 'llm.model'") as err:
        Settings.load(home)
    assert err.value.field == "llm.modle"
    config.write_text('[engines]\nextarct = "openai"\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="unknown engine step 'extarct' \\(did you mean 'extract'\\?\\)"):
        Settings.load(home)
    config.write_text('debounce_seconds = 1\n[llm]\nmodel = "qwen2.5:7b"\n[engines]\nextract = "openai"\n',
                      encoding="utf-8")
    settings = Settings.load(home)
    assert (settings.debounce_seconds, settings.llm.model, settings.engine_for("extract")) == (1, "qwen2.5:7b", "openai")


BAD = [
    ("dream_days", 0, "1-30"), ("dream_days", 31, "1-30"),
    ("fact_capacity", 0, ">= 1"), ("dream_max_entries", 0, ">= 1"),
    ("fact_confidence_threshold", 1.2, "0-1"), ("fact_confidence_threshold", -0.1, "0-1"),
    ("duplicate_jaccard", 1.5, "0-1"), ("consolidate_jaccard", -1, "0-1"),
    ("correction_budget_share", 2, "0-1"), ("clean_weight_threshold", 1.01, "0-1"),
    ("debounce_seconds", -1, ">= 0"), ("max_message_chars", 0, ">= 1"), ("learn_batch_chars", 0, ">= 1"),
    ("clean_min_age_days", -1, ">= 0"), ("promote_score", -0.5, ">= 0"),
    ("budget", 0, "1-100000"), ("learn_threads", 33, "1-32"), ("profile_budget_share", 1.5, "0-1"),
    ("max_body_bytes", 10, ">= 1024"),
]


@pytest.mark.parametrize(("name", "value", "allowed"), BAD)
def test_a_value_out_of_range_is_refused_naming_the_setting_and_its_range(home, name, value, allowed):
    with pytest.raises(InvalidInput, match=f"bad setting {name}: must be {allowed}, not") as err:
        Memory(home, background=False, **{name: value})
    assert err.value.field == name
    assert not home.exists()


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("timeout", 0, "> 0"), ("max_retries", -1, ">= 0"), ("breaker_seconds", -5, ">= 0"), ("concurrency", 0, "1-64"),
])
def test_an_llm_value_out_of_range_is_refused(home, name, value, allowed):
    with pytest.raises(InvalidInput, match=f"bad setting llm.{name}: must be {allowed}") as err:
        Settings.load(home, llm={name: value})
    assert err.value.field == f"llm.{name}"


def test_ranges_are_checked_in_config_toml_and_the_environment(home, monkeypatch):
    home.mkdir()
    (home / "config.toml").write_text("dream_days = 45\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="bad setting dream_days: must be 1-30, not 45"):
        Settings.load(home)
    (home / "config.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("REVERIE_DUPLICATE_JACCARD", "7")
    with pytest.raises(InvalidInput, match="bad setting duplicate_jaccard: must be 0-1, not '7'"):
        Settings.load(home)
    monkeypatch.setenv("REVERIE_DUPLICATE_JACCARD", "0.8")
    assert Settings.load(home).duplicate_jaccard == 0.8


def test_infinite_and_nan_numbers_are_refused(home):
    for value in (float("inf"), float("nan")):
        with pytest.raises(InvalidInput, match="bad setting debounce_seconds: .*finite.*>= 0"):
            Settings.load(home, debounce_seconds=value)


def test_the_bounds_themselves_are_allowed(home):
    settings = Settings.load(
        home, dream_days=30, fact_capacity=1, dream_max_entries=1, fact_confidence_threshold=0,
        duplicate_jaccard=1, consolidate_jaccard=1.0, correction_budget_share=0, debounce_seconds=0,
        max_message_chars=1, learn_batch_chars=1, clean_min_age_days=0, clean_weight_threshold=1,
    )
    assert (settings.dream_days, settings.fact_capacity, settings.debounce_seconds) == (30, 1, 0)
    assert Settings.load(home, dream_days=1).dream_days == 1


@pytest.mark.parametrize("value", ["23:55", "00:00", "7:05", "23:59:59", "12:00:30"])
def test_dream_time_takes_a_time_of_day(home, value):
    assert Settings.load(home, dream_time=value).dream_time == value


@pytest.mark.parametrize("value", ["24:00", "12:60", "12:00:60", "noon", "1200", "12:5", "", "12:00:00:00"])
def test_dream_time_that_is_no_time_of_day_is_refused(home, value):
    with pytest.raises(InvalidInput, match="bad setting dream_time: must be a time of day written HH:MM or HH:MM:SS") as err:
        Settings.load(home, dream_time=value)
    assert err.value.field == "dream_time"


def test_an_unknown_engine_suggests_the_near_one(home):
    with pytest.raises(InvalidInput, match="unknown engine 'opnai' \\(did you mean 'openai'\\?\\)"):
        Settings.load(home, engine="opnai")


def test_a_home_or_setting_given_beside_a_settings_object_is_refused_not_dropped(tmp_path):
    from reverie import Memory
    from reverie.settings import Settings

    settings = Settings.load(tmp_path / "y")
    with pytest.raises(InvalidInput, match="home given beside settings="):
        Memory(tmp_path / "x", settings=settings, background=False)
    with pytest.raises(InvalidInput, match="budget given beside settings="):
        Memory(settings=settings, background=False, budget=300)
    with Memory(tmp_path / "y", settings=settings, background=False) as mem:  # the same home is fine
        assert mem.home == tmp_path / "y"


def test_a_misspelled_environment_variable_is_named_in_a_warning_not_silently_ignored(tmp_path, monkeypatch, caplog):
    import logging

    from reverie.settings import Settings

    monkeypatch.setenv("REVERIE_DEBOUNCE_SECNDS", "1")
    monkeypatch.setenv("REVERIE_SOMETHING_ELSE_ENTIRELY", "x")  # another program's: no near setting
    monkeypatch.setattr(logging.getLogger("reverie"), "propagate", True)  # a served app's logging may be on
    with caplog.at_level(logging.WARNING, logger="reverie.settings"):
        settings = Settings.load(tmp_path)
    assert settings.debounce_seconds == 30.0
    said = [r.getMessage() for r in caplog.records]
    assert said == ["REVERIE_DEBOUNCE_SECNDS is no setting and is ignored: did you mean REVERIE_DEBOUNCE_SECONDS?"]
