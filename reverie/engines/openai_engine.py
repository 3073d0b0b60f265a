"""The ``openai`` engine: every step answered by an OpenAI-compatible chat model.

Works with any server that speaks chat completions (Ollama, vLLM, llama.cpp,
DeepSeek, OpenAI)::

    engine = OpenAIEngine("http://127.0.0.1:11434/v1", "qwen2.5:7b")
    summary = engine.summarize(SummarizeRequest(messages=[Message(content="...")]))

Each step sends its instructions (``prompts/<step>.md``) and the JSON schema of
the answer it expects, then reads the answer tolerantly: ``<think>`` blocks,
code fences and trailing chatter are ignored. Transient failures (timeouts,
dropped connections, HTTP 408, 409, 429 and 5xx, a reply that is no chat completion: an
HTML page from a proxy, an error object) are retried with exponential backoff; an
answer that does not parse or validate is asked for again, with the problem
named. ``timeout`` bounds a whole call, however slowly the server sends its
reply. Whatever goes wrong surfaces as one :class:`~reverie.errors.EngineError`,
so a caller can keep its episode and try later.

An extraction keeps at most :data:`MAX_NEW_FACTS` new facts, and only the sources
that name a line of its conversation; a fact that cites none of them is dropped
(``Extraction.facts_dropped`` counts what was left out, by reason).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import re
import string
import threading
import time
import typing
import weakref
from collections.abc import Callable, Coroutine, Iterable
from contextlib import nullcontext
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from reverie.engines.base import (
    DistillRequest,
    DreamPlan,
    EpisodeSummary,
    Extraction,
    ExtractRequest,
    FactRef,
    GovernRequest,
    NewFact,
    PerceiveRequest,
    SummarizeRequest,
    TagDecisions,
    TidyPlan,
)
from reverie.engines.heuristic.summarize import summarize as offline_summary
from reverie.errors import EngineError, InvalidInput
from reverie.models import AREAS, CATEGORIES, Perception
from reverie.redact import redact

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

STEP_MARKER = "reverie-step"
API_KEY_VARIABLES = ("REVERIE_LLM_API_KEY", "OPENAI_API_KEY")
# local servers ignore the key, but the SDK insists on having one
PLACEHOLDER_API_KEY = "not-needed"
_RAW_LOG_CHARS = 2000
_RETRY_ECHO_CHARS = 4000

Answer = TypeVar("Answer", bound=BaseModel)
T = TypeVar("T")


class _BadAnswer(Exception):
    """The model answered, but not with something usable; the message says why."""


class _Transient(Exception):
    """A failure worth retrying after a pause: timeout, lost connection, 429, 5xx, a reply
    that is no chat completion; ``after``: the pause the server asked for (a 429's or 503's
    Retry-After), if it said one."""

    def __init__(self, message: str, after: float | None = None):
        super().__init__(message)
        self.after = after


class _Breaker(NamedTuple):
    """Until when (monotonic) calls fail at once, why, and when it opened."""

    open_until: float = 0.0
    reason: str = ""
    opened_at: datetime = datetime.min.replace(tzinfo=timezone.utc)


class _Completion(NamedTuple):
    """The text of a chat completion's first choice, and why the server ended it."""

    text: str
    finish_reason: str | None = None


# HTTP statuses under 500 worth asking again after a pause: the server timed the request out
# (408), a conflict such as a lock held (409), too many requests (429); the SDK retries the same
TRANSIENT_STATUSES = (408, 409, 429)
# a recall waits at most this long on perception from an endpoint, and asks once: past it,
# the heuristic engine perceives (learning, in the background, waits and retries instead)
PERCEIVE_TIMEOUT_SECONDS = 5.0
# the longest Retry-After a learning call waits out before asking again
MAX_RETRY_AFTER_SECONDS = 60.0
# the new facts one extraction may propose: a batch (learn_batch_chars of talk) rarely holds
# more durable ones; past it the answer is a runaway or invented, and the rest is dropped
MAX_NEW_FACTS = 40
# why an extraction's new facts were dropped (Extraction.facts_dropped)
UNGROUNDED = "cited no line of the conversation"
OVER_CAP = f"over the limit of {MAX_NEW_FACTS} new facts an extraction"
# the most of one reply that is read: an answer is a few kilobytes of JSON, and an endpoint
# that sends on and on (a model stuck in a loop, a misrouted download) is cut off here, not
# held in memory whole
MAX_REPLY_BYTES = 4 * 2**20
# how long a caller waits past a call's deadline for the event loop to say it is over, should
# the loop itself be stuck: the call is then given up all the same
_LOOP_GRACE_SECONDS = 5.0


def _retry_after(exc: Any) -> float | None:
    """A Retry-After in seconds, or as an HTTP date (``Wed, 21 Oct 2026 07:28:00 GMT``), within the cap."""
    value = getattr(getattr(exc, "response", None), "headers", {}).get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is in GMT
            when = when.replace(tzinfo=timezone.utc)
        seconds = max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
    return None if math.isnan(seconds) or seconds < 0 else min(seconds, MAX_RETRY_AFTER_SECONDS)


class _CallLoop:
    """The event loop (one daemon thread a process, started on first use) that runs every
    endpoint call under a deadline.

    A blocking HTTP client bounds each wait (to connect, for the next bytes), never a whole
    call: a server that trickles its reply a few bytes at a time, or its headers, holds the
    caller as long as it likes, and a thread left to finish such a call lives as long.
    ``asyncio.wait_for`` cancels a coroutine wherever it waits, and the connection closes
    with it: a call is over at its deadline, leaving no thread and no connection behind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def run(self, call: Callable[[], Coroutine[Any, Any, T]], seconds: float) -> T:
        """``call()``'s result, or TimeoutError once ``seconds`` have passed (the call is cancelled)."""
        loop = self._running()
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(call(), seconds), loop)
        try:
            return future.result(seconds + _LOOP_GRACE_SECONDS)
        except BaseException:
            future.cancel()  # given up, or the caller interrupted: the call stops with it
            raise

    def close_later(self, client: openai.AsyncOpenAI) -> None:
        """Close ``client``'s connections on the loop (a dropped engine's, say), without waiting."""
        with self._lock:
            loop = self._loop if self._pid == os.getpid() else None
        if loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(client.close(), loop)

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            # a forked child has none of its parent's threads: it starts its own loop
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                try:
                    threading.Thread(target=loop.run_forever, name="reverie-llm-calls", daemon=True).start()
                except RuntimeError as exc:  # no thread starts once the interpreter is shutting down
                    loop.close()
                    raise EngineError(f"no call to an endpoint can start now ({exc})") from exc
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_CALLS = _CallLoop()


class OpenAIEngine:
    """An engine backed by any OpenAI-compatible chat-completions endpoint.

    ``timeout`` is the most one call may take, from connecting to the last byte of its
    reply. ``max_retries`` counts the attempts after the first one; ``backoff`` is the
    first pause in seconds, doubled after each transient failure. The SDK's own
    retries are off so that this policy is the only one in force.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        temperature: float = 0.0,
        batch_chars: int | None = 16000,
        breaker_seconds: float = 30.0,
        concurrency: int = 4,
    ):
        """``breaker_seconds``: after a call found the endpoint unreachable or failing (every
        retry spent), calls fail at once for that long instead of waiting on it again (a
        circuit breaker); the first call after it tries the endpoint again. A failed perception
        (one short try, on a recall's path) holds only perception for that long: learning's calls,
        with their longer timeout and their retries, still try the endpoint. ``concurrency``:
        calls this engine has in flight at once, whichever thread makes them (learning's,
        dreams'); a server that answers one request at a time then never holds a queue of
        them long enough to time them out. Perception, which a reply waits for, is not held
        back by it."""
        if max_retries < 0 or backoff < 0 or timeout <= 0 or concurrency < 1:
            raise InvalidInput(
                "timeout must be > 0, concurrency >= 1, and max_retries and backoff >= 0",
                field="max_retries" if max_retries < 0 else "backoff" if backoff < 0
                else "concurrency" if concurrency < 1 else "timeout",
            )
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.temperature = temperature
        self.batch_chars = batch_chars
        self.breaker_seconds = breaker_seconds
        # the breakers: "calls" holds every step, "perceive" perception only (its one short try
        # on a recall's path says nothing of how the endpoint serves learning's longer calls)
        self._breakers = {"calls": _Breaker(), "perceive": _Breaker()}
        self._slots = threading.BoundedSemaphore(concurrency)
        self._api_key = api_key or _api_key_from_environment()
        self._pid = os.getpid()
        self._client = self._new_client()

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai  # the SDK takes ~0.4 s to import: only an openai engine pays for it

        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=0)
        # a dropped engine's kept-alive connections close with it (the loop would hold them
        # open); at exit they close with the process, after a last drain may have used them
        weakref.finalize(self, _CALLS.close_later, client).atexit = False
        return client

    # ------------------------------------------------------------ the steps

    def perceive(self, request: PerceiveRequest) -> Perception:
        perception = self._ask("perceive", _dump(request), Perception)
        known = {tag.casefold(): tag for tag in request.known_tags}
        # the model may only point at tags that exist; it must not coin new ones here
        tags = [known[tag.casefold()] for tag in perception.tags if tag.casefold() in known]
        return perception.model_copy(update={"tags": list(dict.fromkeys(tags))})

    def extract(self, request: ExtractRequest) -> Extraction:
        extraction = self._ask(
            "extract",
            _extract_input(request),
            Extraction,
            language=request.language,
            user_speakers=_user_speakers(request.user_speakers),
            max_new_facts=MAX_NEW_FACTS,
        )
        return self._grounded(extraction, set(_line_ids(request)))

    def summarize(self, request: SummarizeRequest) -> EpisodeSummary:
        """The model's summary; one whose ``summary`` is empty is asked for again, and if it is
        still empty at the last attempt, the offline engine writes that line (else the episode
        would get no line in the daily notes, which the dream reads, or wait for ever)."""
        answer = self._ask("summarize", _dump(request), EpisodeSummary, _has_summary, language=request.language)
        if answer.summary.strip():
            return answer
        line = offline_summary(request).summary or _first_words(request)
        logger.warning("summarize: model %r at %s gave an empty summary; the offline engine's line is used",
                       self.model, self.base_url)
        return answer.model_copy(update={"summary": redact(line)})

    def distill(self, request: DistillRequest) -> DreamPlan:
        # grounding (every entry citing real input ids) is checked by the dream line
        return self._ask(
            "distill", _dump(request), DreamPlan, max_entries=request.max_entries, language=request.language
        )

    def tidy(self, facts: list[FactRef]) -> TidyPlan:
        payload = {"facts": [fact.model_dump(mode="json", exclude_none=True) for fact in facts]}
        return self._ask("tidy", json.dumps(payload, ensure_ascii=False), TidyPlan)

    def govern_tags(self, request: GovernRequest) -> TagDecisions:
        return self._ask("govern_tags", _dump(request), TagDecisions)

    def _grounded(self, extraction: Extraction, lines: set[str]) -> Extraction:
        """The extraction with each new fact citing only ``lines`` (those of its request): a
        fact that cites lines, none of them there, is dropped, as the dream drops an entry
        citing inputs it was not given (one citing nothing is the learning line's to place by
        its words); then the first MAX_NEW_FACTS are kept. What was dropped is logged and
        counted in ``facts_dropped``."""
        kept: list[NewFact] = []
        dropped: dict[str, int] = {}
        for fact in extraction.new_facts:
            cited = [source for source in dict.fromkeys(fact.sources) if source in lines]
            if fact.sources and not cited:
                dropped[UNGROUNDED] = dropped.get(UNGROUNDED, 0) + 1
            else:
                kept.append(fact.model_copy(update={"sources": cited}))
        if len(kept) > MAX_NEW_FACTS:
            dropped[OVER_CAP] = len(kept) - MAX_NEW_FACTS
            kept = kept[:MAX_NEW_FACTS]
        if dropped:
            logger.warning("extract: dropped new facts from model %r at %s (%s)", self.model, self.base_url,
                           ", ".join(f"{count} {reason}" for reason, count in dropped.items()))
        return extraction.model_copy(update={"new_facts": kept, "facts_dropped": dropped})

    # ------------------------------------------------------------ one call, with the failure policy

    def _ask(
        self, step: str, data: str, answer_model: type[Answer], check: Callable[[Answer], None] | None = None,
        **values: Any,
    ) -> Answer:
        """The step's answer, read into ``answer_model``. ``check`` may raise _BadAnswer for an
        answer that parses but says nothing usable, to ask again while attempts remain: the
        last attempt's answer is returned whatever it says, for the caller to make good."""
        # perception waits on either breaker; every other step only on the one of every step
        kinds = ("calls", "perceive") if step == "perceive" else ("calls",)
        now = time.monotonic()
        breaker = max((self._breakers[kind] for kind in kinds), key=lambda b: b.open_until)
        if breaker.open_until > now:
            # times of day, not "5 s ago": the message is kept, and health shows it later
            until = datetime.now(timezone.utc) + timedelta(seconds=breaker.open_until - now)
            raise EngineError(
                f"{step}: {self.base_url} failed at {breaker.opened_at:%H:%M:%S} UTC ({breaker.reason}); "
                f"not calling it again before {until:%H:%M:%S} UTC"
            )
        system = {"role": "system", "content": _system_prompt(step, answer_model, values)}
        user = {"role": "user", "content": data}
        messages = [system, user]
        # perception is on a recall's path: one short try, then the heuristic engine
        attempts = 1 if step == "perceive" else self.max_retries + 1
        problem, failing = "", False
        for attempt in range(attempts):
            answer = _Completion("")
            try:
                with self._slots if step != "perceive" else nullcontext():
                    answer = self._complete(step, messages)
                parsed = parse_answer(answer.text, answer_model)
                if check is not None and attempt + 1 < attempts:
                    check(parsed)
                return parsed
            except _Transient as exc:
                problem, failing = redact(str(exc)), True  # an endpoint's error may echo a key: logged and stored
                if attempt + 1 < attempts:
                    pause = max(self.backoff * 2**attempt, exc.after or 0.0)
                    logger.info("%s: %s; retrying in %.2fs", step, problem, pause)
                    time.sleep(pause)
            except _BadAnswer as exc:
                problem, failing = redact(_stopped_early(answer.finish_reason, step) + str(exc)), False
                logger.info("%s: unusable answer (%s)", step, problem)
                # an answer is shown back with what is wrong with it; no answer is asked for again
                messages = [system, user, *_correction(answer.text, problem)] if answer.text else [system, user]
        if answer.text:
            logger.warning("%s: last raw answer from %s: %s", step, self.model,
                           redact(_truncate(answer.text, _RAW_LOG_CHARS)))
        if failing:  # no answer at all: the endpoint is down or failing, not the model confused
            self._breakers["perceive" if step == "perceive" else "calls"] = _Breaker(
                time.monotonic() + self.breaker_seconds, problem, datetime.now(timezone.utc))
        raise EngineError(
            f"{step}: model {self.model!r} at {self.base_url} gave no usable answer "
            f"after {attempts} attempt(s): {problem}"
        )

    def _complete(self, step: str, messages: list[dict[str, str]]) -> _Completion:
        import openai  # loaded by __init__ already: a dictionary lookup

        if self._pid != os.getpid():  # a forked child does not share its parent's connections
            self._pid, self._client = os.getpid(), self._new_client()
        seconds = min(self.timeout, PERCEIVE_TIMEOUT_SECONDS) if step == "perceive" else self.timeout
        try:
            body = _CALLS.run(lambda: self._post(messages, seconds), seconds)
        except (TimeoutError, openai.APITimeoutError) as exc:
            raise _Transient(f"no answer within {seconds:g}s") from exc
        except openai.APIConnectionError as exc:
            raise _Transient(f"connection failed ({exc.__cause__ or exc})") from exc
        except openai.APIStatusError as exc:
            if exc.status_code in TRANSIENT_STATUSES or exc.status_code >= 500:
                raise _Transient(f"the server is busy or failing ({exc.message})", _retry_after(exc)) from exc
            raise EngineError(  # its message may echo the key it refused: never said or stored as it is
                f"{step}: {self.base_url} refused the request ({redact(exc.message)}); "
                "check the base URL, the model name and the API key"
            ) from exc
        except openai.OpenAIError as exc:
            raise EngineError(f"{step}: the OpenAI client failed: {redact(str(exc))}") from exc
        return _read_completion(body, step)

    async def _post(self, messages: list[dict[str, str]], seconds: float) -> bytes:
        """The body of the endpoint's reply, as it is: :func:`_read_completion` reads it, the
        SDK is not trusted to (it passes a list, a string or a page of HTML through)."""
        async with self._client.chat.completions.with_streaming_response.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            temperature=self.temperature,
            timeout=seconds,
        ) as reply:
            said = reply.http_response.headers.get("content-length", "")
            if said.isdigit() and int(said) > MAX_REPLY_BYTES:
                raise _BadAnswer(_too_long(f"the reply said it would be {int(said):,} bytes"))
            body = bytearray()
            async for chunk in reply.http_response.aiter_bytes():
                body += chunk
                if len(body) > MAX_REPLY_BYTES:  # read no further: the connection is closed
                    raise _BadAnswer(_too_long("the reply went on past that"))
        return bytes(body)


# ---------------------------------------------------------------- reading replies


def _read_completion(body: bytes, step: str) -> _Completion:
    """The answer in a chat-completions reply. A reply that is no chat completion (a proxy's
    HTML page, an error object, no message) is the endpoint failing, worth asking again after a
    pause; a completion with no text (empty, refused) is the model's, asked again at once."""
    try:
        try:
            reply = json.loads(body)
        except UnicodeDecodeError:
            # bytes that are no UTF-8 (a server that cut a character between two tokens): each
            # becomes U+FFFD, as half a surrogate pair does, and the rest is read
            reply = json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise _Transient(f"the reply was not JSON (it begins {_excerpt(body)!r})") from exc
    if not isinstance(reply, dict):
        raise _Transient(f"the reply was a JSON {_json_kind(reply)}, not a chat completion ({_excerpt(body)!r})")
    choices = reply.get("choices")
    if not choices and reply.get("error"):  # some servers and gateways say their error with a 200
        error = reply["error"]
        said = error.get("message") if isinstance(error, dict) else error
        raise _Transient(f"the server answered with an error, not a completion: {_excerpt(str(said or error))}")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Transient(f"the reply had no choices ({_excerpt(body)!r})")
    message, finish_reason = choices[0].get("message"), choices[0].get("finish_reason")
    if not isinstance(message, dict):
        raise _Transient(f"the reply had no message ({_excerpt(body)!r})")
    text = _text_of(message.get("content"))
    if not text.strip():
        refusal = message.get("refusal")
        if refusal:
            raise _BadAnswer(f"the model refused: {_excerpt(str(refusal))}")
        raise _BadAnswer(_stopped_early(finish_reason, step) + "the answer was empty")
    return _Completion(text, finish_reason if isinstance(finish_reason, str) else None)


def _too_long(what: str) -> str:
    return f"{what}, over the limit of {MAX_REPLY_BYTES // 2**20} MiB a reply; the answer was not read"


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or a list of text parts (some gateways send
    ``[{"type": "text", "text": ...}]``) joined."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = [part.get("text") if isinstance(part, dict) else part for part in content]
        texts = [part for part in parts if isinstance(part, str)]
        if len(texts) == len(parts):
            return "".join(texts)
    raise _Transient(f"the reply's message content was a JSON {_json_kind(content)}, not text")


def _has_summary(answer: EpisodeSummary) -> None:
    """A summary that says nothing (``{}``, only an overview) is asked for again."""
    if not answer.summary.strip():
        raise _BadAnswer("the summary was empty: `summary` must say in one line what happened")


def _first_words(request: SummarizeRequest) -> str:
    """The first thing the user said (else anyone), on one line: a summary when no other is."""
    said = [m.content for m in request.messages if m.role == "user"] or [m.content for m in request.messages]
    return " ".join(" ".join(said).split()[:25])


def _json_kind(value: Any) -> str:
    kinds = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"), (list, "list"), (dict, "object"))
    return next((kind for typ, kind in kinds if isinstance(value, typ)), "null")


# what else makes a step's answer shorter, when the server cut it off at its token limit
_SHORTER = {"extract": ", or lower learn_batch_chars", "distill": ", or lower dream_max_entries"}


def _stopped_early(finish_reason: Any, step: str) -> str:
    """What a problem should say first when the server stopped ``step``'s answer early ("" if not)."""
    if finish_reason == "length":
        return ("the server cut the answer off at its token limit (finish_reason 'length': raise the "
                f"model's max_tokens{_SHORTER.get(step, '')}); ")
    if finish_reason in (None, "stop") or not isinstance(finish_reason, str):
        return ""
    return f"the server stopped the answer (finish_reason {_excerpt(finish_reason, 40)!r}); "


def _excerpt(text: str | bytes, limit: int = 80) -> str:
    """The start of ``text`` on one line, for a message: redacted, at most ``limit`` characters."""
    head = text[: 4 * limit]  # a reply may be megabytes long: only its start is read
    said = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    said = redact(" ".join(said.split()))
    return said if len(said) <= limit and len(head) == len(text) else said[: limit - 1] + "…"


# ---------------------------------------------------------------- reading answers

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
# an unclosed reasoning block ends where the answer visibly starts
_ANSWER_START = re.compile(r"^[ \t]*(?:\{|```)", re.M)
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.S)


def parse_answer(raw: str, answer_model: type[Answer]) -> Answer:
    """Read a model's answer into ``answer_model``, or raise ``_BadAnswer`` saying why."""
    data = _first_json_object(_without_reasoning(raw))
    return _validate(_clean(data), answer_model)


def _without_reasoning(raw: str) -> str:
    text = _THINK_BLOCK.sub("", raw)
    closers = list(_THINK_CLOSE.finditer(text))
    if closers:  # the chat template opened the block, so only its end is in the answer
        text = text[closers[-1].end() :]
    opener = _THINK_OPEN.search(text)
    if opener:
        start = _ANSWER_START.search(text, opener.end())
        text = text[: opener.start()] + (text[start.start() :] if start else "")
    return text


def _first_json_object(text: str) -> dict[str, Any]:
    fenced = [m.group(1) for m in _FENCE.finditer(text) if "{" in m.group(1)]
    if fenced:
        text = fenced[0]
    start = text.find("{")
    if start < 0:
        raise _BadAnswer("no JSON object in the answer")
    data: dict[str, Any]  # decoding starts at "{", so what comes back is an object
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        # some of the decoder's messages end in "at" ("Unterminated string starting at")
        raise _BadAnswer(f"malformed JSON ({exc.msg.removesuffix(' at')} at character {exc.pos - start})") from exc
    except RecursionError as exc:
        raise _BadAnswer("JSON nested too deeply") from exc
    return data


# no answer shape nests deeper than a few levels; a deeper one is no answer (and would
# overflow the stack of every recursive step after this one)
MAX_ANSWER_DEPTH = 16
# a "\ud800" escape decodes to half a surrogate pair: text that cannot be written as UTF-8
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any, depth: int = 0) -> Any:
    """Drop nulls (so defaults apply), bring every confidence into 0..1, replace half
    surrogate pairs (U+FFFD) and redact every text: a model may say a secret anywhere (a
    reason, a tag, a cited id), and each of those may be stored, logged or reported.
    An answer nested past MAX_ANSWER_DEPTH is refused."""
    if depth > MAX_ANSWER_DEPTH:
        raise _BadAnswer(f"JSON nested more than {MAX_ANSWER_DEPTH} levels deep")
    if isinstance(value, str):
        return redact(_LONE_SURROGATE.sub("\ufffd", value))
    if isinstance(value, list):
        return [_clean(item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    cleaned = {
        _LONE_SURROGATE.sub("\ufffd", key): _clean(item, depth + 1) for key, item in value.items() if item is not None
    }
    if "confidence" in cleaned:
        cleaned["confidence"] = _confidence(cleaned.pop("confidence"))
    return cleaned


# a confidence said in words; any other value that is no number counts as none at all (0: a
# fact the model would not rate is not kept, where the default 0.8 would have kept it)
_CONFIDENCE_WORDS = {"high": 0.9, "medium": 0.6, "moderate": 0.6, "low": 0.3}


def _confidence(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, str) and value.strip().lower() in _CONFIDENCE_WORDS:
        return _CONFIDENCE_WORDS[value.strip().lower()]
    try:
        if isinstance(value, str) and value.strip().endswith("%"):
            number = float(value.strip()[:-1]) / 100
        else:
            number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, number))


def _fold(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key).casefold()


@functools.lru_cache(maxsize=64)
def _known_keys(model: type[BaseModel]) -> dict[str, str]:
    """Every field name and alias of ``model`` and of the models inside it, by folded spelling."""
    known: dict[str, str] = {}
    stack: list[Any] = [model]
    seen: set[Any] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            for name in _field_keys(current):
                known.setdefault(_fold(name), name)
            stack.extend(f.annotation for f in current.model_fields.values())
        else:
            stack.extend(typing.get_args(current))
    return known


def _match_keys(value: Any, known: dict[str, str]) -> Any:
    """Keys a model spelled otherwise ("Summary", "new_facts", "should-update") under the
    spelling the answer model uses; keys it does not know are left as they are."""
    if isinstance(value, list):
        return [_match_keys(item, known) for item in value]
    if not isinstance(value, dict):
        return value
    return {known.get(_fold(str(k)), k) if k not in known.values() else k: _match_keys(v, known) for k, v in value.items()}


def _validate(data: dict[str, Any], answer_model: type[Answer]) -> Answer:
    data = _match_keys(data, _known_keys(answer_model))
    expected = _field_keys(answer_model)
    if data and not expected & data.keys():
        inner = next(iter(data.values()))
        # some models wrap the answer: {"result": {...}}
        if len(data) == 1 and isinstance(inner, dict) and expected & inner.keys():
            data = inner
        else:  # kept short, what it has first: an error shown in a line is cut there
            schema = [f.alias or name for name, f in answer_model.model_fields.items() if not f.exclude]
            raise _BadAnswer(f"the JSON object has keys {_some(sorted(data))} but none the schema names "
                             f"({_some(schema)})")
    try:
        return answer_model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(root)'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise _BadAnswer(f"the answer does not match the schema ({problems})") from exc


def _field_keys(answer_model: type[BaseModel]) -> set[str]:
    """The names and aliases of the fields a model may answer (not those it is never asked for)."""
    fields = {name: f for name, f in answer_model.model_fields.items() if not f.exclude}
    return set(fields) | {f.alias for f in fields.values() if f.alias}


def _some(names: Iterable[str], most: int = 3) -> str:
    names = [_excerpt(name, 30) for name in names]
    return ", ".join(names[:most]) + (", …" if len(names) > most else "")


def _correction(raw: str, problem: str) -> list[dict[str, str]]:
    return [
        {"role": "assistant", "content": _truncate(raw, _RETRY_ECHO_CHARS)},
        {
            "role": "user",
            "content": f"That answer could not be used: {problem}. "
            "Answer again with exactly one JSON object that matches the schema, and nothing else.",
        },
    ]


# ---------------------------------------------------------------- writing prompts


@lru_cache(maxsize=None)
def _template(step: str) -> string.Template:
    text = resources.files("reverie.engines").joinpath("prompts", f"{step}.md").read_text(encoding="utf-8")
    return string.Template(text)


@lru_cache(maxsize=None)
def _schema(answer_model: type[BaseModel]) -> str:
    return json.dumps(answer_model.model_json_schema(by_alias=True), ensure_ascii=False)


def _system_prompt(step: str, answer_model: type[BaseModel], values: dict[str, Any]) -> str:
    instructions = _template(step).substitute(
        categories=", ".join(CATEGORIES), areas=", ".join(AREAS), **values
    )
    return (
        f"{STEP_MARKER}: {step}\n\n{instructions.strip()}\n\n"
        "Return exactly one JSON object and nothing else. It must match this JSON Schema:\n"
        f"{_schema(answer_model)}"
    )


def _dump(request: BaseModel) -> str:
    return request.model_dump_json(by_alias=True, exclude_none=True)


def _extract_input(request: ExtractRequest) -> str:
    facts = [
        {"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence}
        for f in request.facts
    ]
    lines = []
    for line_id, message in zip(_line_ids(request), request.messages):
        date = f" ({message.at.date().isoformat()})" if message.at else ""
        said = _neutralised(f"{' '.join((message.speaker or message.role).split())}: {message.content}")
        # a message over several lines goes on in lines indented by two spaces: a line that
        # starts at the margin is always one that reverie wrote
        lines.append(f"[{line_id}]{date} " + "\n  ".join(said.splitlines()))
    profile = json.dumps(request.profile.to_json(), ensure_ascii=False, indent=1)
    known = json.dumps(facts, ensure_ascii=False, indent=1)
    return (
        f"Existing profile:\n<profile>\n{_neutralised(profile)}\n</profile>\n\n"
        f"Existing facts:\n<facts>\n{_neutralised(known)}\n</facts>\n\n"
        "Conversation:\n<conversation>\n" + "\n".join(lines) + "\n</conversation>"
    )


def _line_ids(request: ExtractRequest) -> list[str]:
    """The id each message of an extract prompt is shown with, and a fact cites: the message's
    own (an imported message's), else its episode's, else its place."""
    return [
        _one_line(message.source_id or (request.episode_ids[i] if i < len(request.episode_ids) else f"m{i + 1}"))
        for i, message in enumerate(request.messages)
    ]


# what text may hold of the extract prompt's own markup: the tags around its parts (the "<" of
# "</conversation>" becomes "‹") and a line's opening "[id] (date) speaker:" (its "[" becomes
# "\["); the model is told that such text is what was said. Other text is shown as it is.
_PROMPT_TAG = re.compile(r"<(?=\s*/?\s*(?:conversation|profile|facts)\b)", re.I)
_LINE_OPENING = re.compile(r"\[(?=[^\[\]\s]{1,64}\][ \t]+(?:\(\d{4}-\d{2}-\d{2}\)[ \t]+)?[^\n:\[\]]{1,40}:(?!//))")


def _neutralised(text: str) -> str:
    return _LINE_OPENING.sub(r"\\[", _PROMPT_TAG.sub("‹", text))


def _one_line(text: str) -> str:
    return _neutralised(" ".join(text.split()))


def _user_speakers(names: list[str]) -> str:
    if len(names) > 1:
        return (
            f"The user is {', '.join(names)}: several people talk here, and none of them is known "
            "to be the one person the profile describes. Each new fact names whose it is "
            "(\"Ana: works as a nurse\"), and the `user` profile sections stay unchanged "
            "(`shouldUpdate: false`); `history` may tell what happened to them."
        )
    if names:
        return (
            f"The user is {names[0]}. Other speakers are people the user talks with: "
            "remember what matters about the user, and others only as they matter to the user."
        )
    return (
        "The user is the speaker with the role `user`; `assistant` lines are the AI assistant. "
        "Remember what matters about the user, not about the assistant."
    )


def _api_key_from_environment() -> str:
    return next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), PLACEHOLDER_API_KEY)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more characters]"
