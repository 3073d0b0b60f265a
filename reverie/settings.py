"""One settings object: defaults < ``<home>/config.toml`` < ``REVERIE_*`` environment < explicit arguments.

Example ``config.toml``::

    engine = "heuristic"
    debounce_seconds = 10

    [engines]           # per-step override
    extract = "openai"

    [llm]
    base_url = "http://127.0.0.1:11434/v1"
    model = "qwen2.5:7b"
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from reverie.errors import InvalidInput
from reverie.models import ENGINE_STEPS as STEPS
from reverie.models import MAX_BUDGET

ENGINE_NAMES = ("heuristic", "openai")
# a server's usage counts are written together this often: with a write per recall, each
# process's write turned the other workers' page cache cold (SQLite), and two replicas
# queued on the user's lock for it (PostgreSQL: 52-58 recalls/s from two replicas, 62-69
# with this)
SERVER_USAGE_FLUSH_SECONDS = 2.0


class LLMSettings(BaseModel):
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    timeout: float = 30.0
    max_retries: int = 2
    breaker_seconds: float = 30.0  # after an unreachable endpoint, fail at once for this long
    # calls in flight at once to the endpoint from this process, whoever makes them: a
    # batch's summaries (one an episode) beside its extraction, other users' batches
    # (learn_threads), dreams; perception at recall time is never held back by it
    concurrency: int = Field(default=4, ge=1, le=64)


class Settings(BaseModel):
    home: Path = Field(default_factory=lambda: Path(os.environ.get("REVERIE_HOME") or Path.home() / ".reverie"))
    engine: str = "heuristic"
    engines: dict[str, str] = Field(default_factory=dict)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    # learning line
    debounce_seconds: float = 30.0
    fact_confidence_threshold: float = 0.7
    fact_capacity: int = 100
    duplicate_jaccard: float = 0.7
    max_message_chars: int = 4000
    learn_batch_chars: int = 16000  # text per LLM extract call when learning from a long talk
    # users whose batches are learned at once when a learning step waits on an endpoint (one
    # batch of a user at a time, one applied at a time); the in-process engine: one at a time
    learn_threads: int = Field(default=4, ge=1, le=32)
    # recall line
    budget: int = Field(default=2000, ge=1, le=MAX_BUDGET)
    correction_budget_share: float = 0.15
    # the profile's lines take at most this share of a recall's budget (each section its
    # newest parts that fit), so that a long profile never crowds out what the query asks about
    profile_budget_share: float = Field(0.25, ge=0.0, le=1.0)
    promote_score: float = 0.5
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
    dream_days: int = 3
    dream_max_entries: int = 30
    dream_time: str = "23:55"
    consolidate_jaccard: float = 0.9
    clean_weight_threshold: float = 0.05
    clean_min_age_days: int = 30

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        if value not in ENGINE_NAMES:
            raise ValueError(f"unknown engine {value!r}; choose one of {', '.join(ENGINE_NAMES)}")
        return value

    @field_validator("engines")
    @classmethod
    def _known_steps(cls, value: dict[str, str]) -> dict[str, str]:
        for step, engine in value.items():
            if step not in STEPS:
                raise ValueError(f"unknown engine step {step!r}; steps are {', '.join(STEPS)}")
            if engine not in ENGINE_NAMES:
                raise ValueError(f"unknown engine {engine!r} for step {step!r}")
        return value

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        if value is not None and "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("store must be a postgresql:// URL (or unset, for SQLite in the home)")
        return value

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
        """Settings for ``home`` (default ``$REVERIE_HOME``, else ``~/.reverie``)."""
        home_path = Path(home or os.environ.get("REVERIE_HOME") or Path.home() / ".reverie").expanduser()
        data: dict[str, Any] = {}
        config = home_path / "config.toml"
        if config.is_file():
            try:
                data = tomllib.loads(config.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise InvalidInput(f"{config} is not valid TOML: {exc}", field="config.toml") from exc
        _merge(data, _from_environment())
        _merge(data, {k: v for k, v in overrides.items() if v is not None})
        data["home"] = home_path
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(f"bad setting {field}: {first['msg']}", field=field) from exc


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
    return env


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
