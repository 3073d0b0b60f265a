"""One settings object: defaults < ``<home>/config.toml`` < ``REVERIE_*`` environment < explicit arguments.

Example ``config.toml``::

    engine = "heuristic"
    debounce_seconds = 10

    [engines]           # per-step override
    extract = "openai"

    [llm]
    base_url = "http://127.0.0.1:11434/v1"
    model = "qwen2.5:7b"

A name that is no setting (``debounce_secnds``, ``[llm] modle``, ``Memory(debounce_second=5)``)
and a value out of its range are an InvalidInput naming the setting.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reverie.errors import InvalidInput
from reverie.models import ENGINE_STEPS as STEPS
from reverie.models import MAX_BUDGET

log = logging.getLogger("reverie.settings")

ENGINE_NAMES = ("heuristic", "openai")
# a server's usage counts are written together this often: with a write per recall, each
# process's write turned the other workers' page cache cold (SQLite), and two replicas
# queued on the user's lock for it (PostgreSQL: 52-58 recalls/s from two replicas, 62-69
# with this)
SERVER_USAGE_FLUSH_SECONDS = 2.0
# dream_time: HH:MM or HH:MM:SS on a 24-hour clock (as reverie.scheduler.clock reads it)
_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?")
# a misspelled name is an error, not a default silently kept; so is an infinite or NaN number
_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class LLMSettings(BaseModel):
    model_config = _STRICT

    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    breaker_seconds: float = Field(default=30.0, ge=0)  # after an unreachable endpoint, fail at once for this long
    # calls in flight at once to the endpoint from this process, whoever makes them: a
    # batch's summaries (one an episode) beside its extraction, other users' batches
    # (learn_threads), dreams; perception at recall time is never held back by it
    concurrency: int = Field(default=4, ge=1, le=64)


# the longest wait a setting may name (a year): longer is no wait a date can hold
MAX_WAIT_SECONDS = 365 * 86400


class Settings(BaseModel):
    """Every setting of a home (README "Settings"); :meth:`load` reads them. A name that is
    no setting, or a value out of its range, is an InvalidInput naming it.

    ``Memory(settings=...)`` uses these settings whole, their ``home`` included: another
    ``home`` or keyword settings given beside them are refused (pass ``Settings.load(home,
    ...)`` with what you want instead)."""

    model_config = _STRICT

    home: Path = Field(default_factory=lambda: Path(os.environ.get("REVERIE_HOME") or Path.home() / ".reverie"))
    engine: str = "heuristic"
    engines: dict[str, str] = Field(default_factory=dict)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    # learning line
    debounce_seconds: float = Field(30.0, ge=0)
    fact_confidence_threshold: float = Field(0.7, ge=0.0, le=1.0)
    fact_capacity: int = Field(100, ge=1)
    duplicate_jaccard: float = Field(0.7, ge=0.0, le=1.0)
    max_message_chars: int = Field(4000, ge=1)
    learn_batch_chars: int = Field(16000, ge=1)  # text per LLM extract call when learning from a long talk
    # users whose batches are learned at once when a learning step waits on an endpoint (one
    # batch of a user at a time, one applied at a time); the in-process engine: one at a time
    learn_threads: int = Field(default=4, ge=1, le=32)
    # a turn still without its reply this long after it opened is closed with the user's
    # message alone, then learned and recalled (reverie.unanswered); 0: turns wait for ever
    reply_timeout_seconds: float = Field(1800.0, ge=0, le=MAX_WAIT_SECONDS)
    # recall line
    budget: int = Field(default=2000, ge=1, le=MAX_BUDGET)
    correction_budget_share: float = Field(0.15, ge=0.0, le=1.0)
    # the profile's lines take at most this share of a recall's budget (each section its
    # newest parts that fit), so that a long profile never crowds out what the query asks about
    profile_budget_share: float = Field(0.25, ge=0.0, le=1.0)
    promote_score: float = Field(0.5, ge=0.0)  # recall scores are 0-1.5: above that, nothing is promoted
    # recall's usage counts ([Nx], last used) may wait this long in memory before they are
    # written together (0: each recall writes its own at once); `reverie serve` uses
    # SERVER_USAGE_FLUSH_SECONDS unless it is set (see for_server)
    usage_flush_seconds: float = Field(0.0, ge=0.0)
    # recalls one process runs at once; more callers wait their turn. A recall is mostly
    # Python, which one process runs on one core at a time: eight at once in threads took
    # 60% longer in all than one after another. None: 1 on SQLite, 4 on PostgreSQL (whose
    # recalls also wait on the server)
    recall_threads: int | None = Field(None, ge=1, le=64)
    # limits (README "Limits and guarantees"): every input has one
    max_body_bytes: int = Field(4 * 1024 * 1024, ge=1024)  # a REST request body; larger is a 413
    max_query_chars: int = Field(2000, ge=50)  # recall matches on this much of a message; the episode keeps it all
    max_fact_chars: int = Field(1000, ge=20)  # a longer fact is refused (facts are one line, <= 120 advised)
    # a profile section is a short paragraph: learning keeps its newest parts within this,
    # a longer hand edit is refused (reverie.profiles)
    max_profile_chars: int = Field(500, ge=100)
    max_import_depth: int = Field(32, ge=4)  # nesting of an import envelope
    # storage: "normal" may lose the last commits on power loss (never corrupts); "full" fsyncs every commit
    durability: str = "normal"
    # the store: None is SQLite at <home>/reverie.db; "postgresql://..." a PostgreSQL database
    # that several `reverie serve` replicas may share (pip install 'reverie[postgres]')
    store: str | None = None
    # with a PostgreSQL store, MEMORY.md and the dream diaries live in the store; this folder
    # (if set) also gets them as files, with the daily notes (<mirror_dir>/users/<user>/...)
    mirror_dir: Path | None = None
    # a replica that claimed episodes to learn holds them this long (renewed while it works);
    # when it dies, another replica takes them over after this time
    learn_lease_seconds: float = Field(120.0, gt=0)
    # connections each process keeps to a PostgreSQL store at most
    store_pool_size: int = Field(10, ge=1)
    # dream line
    dream_days: int = Field(3, ge=1, le=30)
    dream_max_entries: int = Field(30, ge=1)
    dream_time: str = "23:55"
    consolidate_jaccard: float = Field(0.9, ge=0.0, le=1.0)
    clean_weight_threshold: float = Field(0.05, ge=0.0, le=1.0)
    clean_min_age_days: int = Field(30, ge=0)

    @field_validator("dream_time")
    @classmethod
    def _clock_time(cls, value: str) -> str:
        if _CLOCK.fullmatch(value.strip()) is None:
            raise ValueError(f"must be a time of day written HH:MM or HH:MM:SS (00:00-23:59:59), not {value!r}")
        return value

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        if value not in ENGINE_NAMES:
            raise ValueError(f"unknown engine {value!r}{_did_you_mean(value, ENGINE_NAMES, aside=True)}; "
                             f"choose one of {', '.join(ENGINE_NAMES)}")
        return value

    @field_validator("engines")
    @classmethod
    def _known_steps(cls, value: dict[str, str]) -> dict[str, str]:
        for step, engine in value.items():
            if step not in STEPS:
                raise ValueError(f"unknown engine step {step!r}{_did_you_mean(step, STEPS, aside=True)}; steps are {', '.join(STEPS)}")
            if engine not in ENGINE_NAMES:
                raise ValueError(f"unknown engine {engine!r} for step {step!r}")
        return value

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        if value is not None and not value.strip().startswith(("postgresql://", "postgres://")):
            # anything else would open as the path of a SQLite file: a mistyped URL
            # ("postgresql:/host/db", "localhost:5432/db") made a stray file in the working folder
            raise ValueError("store must be a postgresql:// URL, e.g. postgresql://user@host:5432/db "
                             "(or unset, for SQLite in the home)")
        return value.strip() if value is not None else None

    @field_validator("durability")
    @classmethod
    def _known_durability(cls, value: str) -> str:
        if value not in ("normal", "full"):
            raise ValueError("durability must be 'normal' or 'full'")
        return value

    def engine_for(self, step: str) -> str:
        """The engine of one step. Perception runs before every reply, so it stays on the
        offline engine unless ``[engines] perceive`` names another: a slow or dead endpoint
        must not slow every recall."""
        if step == "perceive":
            return self.engines.get(step, "heuristic")
        return self.engines.get(step, self.engine)

    def offline(self, *steps: str) -> bool:
        """Whether every one of ``steps`` runs on the heuristic engine (in this process, no
        waiting on an endpoint)."""
        return all(self.engine_for(step) == "heuristic" for step in steps)

    def for_server(self) -> "Settings":
        """These settings for a server process (``reverie serve``, each of its workers and
        replicas): usage counts written every SERVER_USAGE_FLUSH_SECONDS unless
        ``usage_flush_seconds`` was set (config.toml, the environment or an override)."""
        if "usage_flush_seconds" in self.model_fields_set:
            return self
        return self.model_copy(update={"usage_flush_seconds": SERVER_USAGE_FLUSH_SECONDS})

    @classmethod
    def load(cls, home: str | Path | None = None, **overrides: Any) -> "Settings":
        """Settings for ``home`` (default ``$REVERIE_HOME``, else ``~/.reverie``). A name in
        ``config.toml`` or ``overrides`` that is no setting, and a value out of its range, is an
        InvalidInput naming it (a near miss says which setting it may mean)."""
        home_path = Path(home or os.environ.get("REVERIE_HOME") or Path.home() / ".reverie").expanduser()
        data: dict[str, Any] = {}
        config = home_path / "config.toml"
        if config.is_file():
            try:
                data = tomllib.loads(config.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise InvalidInput(f"{config} is not valid TOML: {exc}", field="config.toml") from exc
            _check_names(data, f" in {config}")
        _check_names(overrides, "")  # a misspelled keyword is refused even when its value is None
        _merge(data, _from_environment())
        _merge(data, {k: v for k, v in overrides.items() if v is not None})
        data["home"] = home_path
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(f"bad setting {field}: {_explain(first)}", field=field) from exc


def _check_names(data: dict[str, Any], where: str) -> None:
    """Every key of ``data`` (and of its ``llm`` table) names a setting."""
    for name in data:
        if name not in Settings.model_fields:
            raise InvalidInput(f"unknown setting {name!r}{where}{_did_you_mean(name, Settings.model_fields)}",
                               field=name)
    llm = data.get("llm")
    if isinstance(llm, dict):
        for name in llm:
            if name not in LLMSettings.model_fields:
                raise InvalidInput(f"unknown setting 'llm.{name}'{where}"
                                   f"{_did_you_mean(name, LLMSettings.model_fields, 'llm.')}", field=f"llm.{name}")


def _did_you_mean(name: object, known: Iterable[str], prefix: str = "", *, aside: bool = False) -> str:
    """": did you mean 'x'?" (`` (did you mean 'x'?)`` as an ``aside``) for a near miss, else ""."""
    near = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    if not near:
        return ""
    return f" (did you mean {prefix + near[0]!r}?)" if aside else f": did you mean {prefix + near[0]!r}?"


def _explain(error: Any) -> str:
    """Pydantic's complaint about one setting, a value out of range as the range it must be in."""
    if error["type"] == "extra_forbidden":  # a Settings built without load()
        loc = error["loc"]
        known = LLMSettings.model_fields if loc[:1] == ("llm",) else Settings.model_fields
        return f"no such setting{_did_you_mean(loc[-1], known, 'llm.' if known is LLMSettings.model_fields else '')}"
    allowed = _allowed(error["loc"])
    if error["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal") and allowed:
        return f"must be {allowed}, not {error['input']!r}"
    msg = str(error["msg"]).removeprefix("Value error, ")
    return f"{msg} (allowed: {allowed})" if allowed else msg


def _allowed(loc: tuple[Any, ...]) -> str:
    """The range of the setting at ``loc``, as a person writes it: "1-30", ">= 0", "> 0"; "" for none."""
    model: type[BaseModel] = LLMSettings if loc[:1] == ("llm",) and len(loc) == 2 else Settings
    field = model.model_fields.get(str(loc[-1]))
    if field is None:
        return ""
    low: Any = None
    high: Any = None
    low_open = high_open = False
    for rule in field.metadata:  # pydantic's bounds (Ge, Gt, Le, Lt) carry one of these names
        if getattr(rule, "ge", None) is not None:
            low = rule.ge
        elif getattr(rule, "gt", None) is not None:
            low, low_open = rule.gt, True
        elif getattr(rule, "le", None) is not None:
            high = rule.le
        elif getattr(rule, "lt", None) is not None:
            high, high_open = rule.lt, True
    if low is not None and high is not None and not (low_open or high_open):
        return f"{_number(low)}-{_number(high)}"
    parts = [f"{'>' if low_open else '>='} {_number(low)}" if low is not None else "",
             f"{'<' if high_open else '<='} {_number(high)}" if high is not None else ""]
    return " and ".join(p for p in parts if p)


def _number(value: Any) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _from_environment() -> dict[str, Any]:
    env: dict[str, Any] = {}
    simple = {name: name.upper() for name in Settings.model_fields if name not in ("home", "engines", "llm")}
    for name, suffix in simple.items():
        value = os.environ.get(f"REVERIE_{suffix}")
        if value is not None:
            env[name] = value
    llm = {
        name: os.environ[f"REVERIE_LLM_{name.upper()}"]
        for name in LLMSettings.model_fields
        if f"REVERIE_LLM_{name.upper()}" in os.environ
    }
    if llm:
        env["llm"] = llm
    for step in STEPS:
        value = os.environ.get(f"REVERIE_ENGINE_{step.upper()}")
        if value:
            env.setdefault("engines", {})[step] = value
    known = ({f"REVERIE_{s}" for s in simple.values()} | {f"REVERIE_LLM_{n.upper()}" for n in LLMSettings.model_fields}
             | {f"REVERIE_ENGINE_{s.upper()}" for s in STEPS} | _OTHER_VARIABLES)
    for name in sorted(n for n in os.environ if n.startswith("REVERIE_") and n not in known):
        # not refused (another program may own a REVERIE_ name), but never silently ignored
        near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
        if near:
            log.warning("%s is no setting and is ignored: did you mean %s?", name, near[0])
    return env


# REVERIE_ variables read elsewhere: the CLI's, the server workers', the tests'
_OTHER_VARIABLES = frozenset({"REVERIE_HOME", "REVERIE_USER", "REVERIE_LOG", "REVERIE_SERVE_WORKER",
                              "REVERIE_TEST_POSTGRES", "REVERIE_SCREENSHOTS"})


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
