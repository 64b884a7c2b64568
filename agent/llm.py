"""The LLM client: the ``ChatModel`` protocol and its OpenAI-compatible implementation.

A model turns a ``ChatRequest`` into a stream of ``StreamEvent`` values: text, reasoning and
tool-call deltas for display, ``Retrying`` when an attempt failed and is about to be repeated,
and ``Completed`` with the assembled ``Reply`` as the last item of every successful stream.
Failures are raised as ``LLMError`` subclasses (see ``agent.llm_errors``) once retries are
exhausted or when retrying cannot help.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from agent.call_bounds import MAX_ARGUMENT_CHARS, MAX_CALLS, too_big
from agent.events import ToolCall, Usage
from agent.llm_errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    ContextOverflow,
    DeadlineExceeded,
    ErrorContext,
    LLMError,
    MalformedResponse,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamIncomplete,
    from_sdk_error,
    is_context_overflow,
)
from agent.windows import KNOWN_CONTEXT_WINDOWS, known_context_window

__all__ = [
    "KNOWN_CONTEXT_WINDOWS",
    "AuthError",
    "BadRequest",
    "ChatModel",
    "ChatRequest",
    "Completed",
    "ConnectionFailed",
    "ContextOverflow",
    "LLMError",
    "MalformedResponse",
    "OpenAICompatible",
    "ProviderTimeout",
    "RateLimited",
    "ReasoningDelta",
    "Reply",
    "RetryPolicy",
    "Retrying",
    "ServerError",
    "StreamEvent",
    "StreamIncomplete",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "collect",
    "is_context_overflow",
    "known_context_window",
]


@dataclass
class Reply:
    """One complete assistant reply. ``reasoning`` is for display only: it is never sent back.
    ``model`` is the model the server says answered, else the one requested."""

    text: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    finish_reason: str
    usage: Usage | None
    model: str
    refused: dict[str, str] = field(default_factory=dict)
    """Calls that are not to run, by id, with the error the model gets instead (arguments
    past :data:`~agent.call_bounds.MAX_ARGUMENT_CHARS`; their text is not kept)."""
    dropped_calls: int = 0
    """Calls past :data:`~agent.call_bounds.MAX_CALLS` that the reply asked for and that
    were not kept."""


@dataclass
class ChatRequest:
    """``messages`` in OpenAI chat format, system message first; ``tools`` as function specs."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    """``"none"``/``"auto"``/``"required"``, sent only with tools (None: the server's default)."""


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of tool call ``index`` (its position in ``Reply.tool_calls``). ``id`` and
    ``name`` arrive on the first piece, argument text on the later ones."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class Retrying:
    """Attempt number ``attempt`` (1-based) failed with ``error``; everything streamed for
    this request so far is void. The next attempt starts after ``delay_s`` seconds."""

    attempt: int
    error: str
    delay_s: float


@dataclass(frozen=True)
class Completed:
    """The last item of every successful stream."""

    reply: Reply


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | Retrying | Completed


class ChatModel(Protocol):
    """Anything that can answer a chat request as a stream.

    ``stream`` raises ``LLMError`` subclasses only. To cancel, cancel the consuming task;
    consumers should iterate inside ``contextlib.aclosing`` so the HTTP response closes at
    once even when the task is cancelled between two items.
    """

    provider: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...

    def context_window(self, model: str) -> int | None: ...


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for retryable errors, within one ``stream()`` call.

    ``connect_attempts`` caps attempts when the server cannot be reached at all: that is
    usually a wrong URL or a server that is not running, which waiting rarely fixes.
    """

    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    jitter: float = 0.25
    connect_attempts: int = 2

    def attempts_for(self, error: LLMError) -> int:
        """How many attempts in total ``error`` deserves (1 = no retry)."""
        if not error.retryable:
            return 1
        if isinstance(error, ConnectionFailed):
            return min(self.max_attempts, self.connect_attempts)
        return self.max_attempts

    def delay(self, failed_attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after attempt ``failed_attempt`` (1-based) failed. A provider's
        Retry-After is honoured as given, capped at ``max_delay_s``."""
        if retry_after_s is not None:
            return min(retry_after_s, self.max_delay_s)
        backoff = min(self.base_delay_s * 2.0 ** (failed_attempt - 1), self.max_delay_s)
        spread = random.uniform(1 - self.jitter, 1 + self.jitter)
        return max(0.0, min(backoff * spread, self.max_delay_s))


class _ReplyBuilder:
    """Folds chunks into a Reply and turns each into the deltas to show."""

    def __init__(self, requested_model: str) -> None:
        self.model = requested_model
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "args": list[str]}
        self.slot_of_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.chunks = 0
        self.dropped = 0
        self.dropped_indexes: set[int] = set()

    def feed(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        self.chunks += 1
        events: list[StreamEvent] = []
        if chunk.model:
            self.model = chunk.model
        if chunk.usage is not None:
            # Some servers repeat running usage on every chunk: the last one wins.
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or []:
            if choice.index not in (0, None):
                continue  # we never ask for n > 1
            delta = choice.delta
            extra = delta.model_extra or {}
            # DeepSeek and vLLM say reasoning_content; OpenRouter and others say reasoning.
            thought = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(thought, str) and thought:
                self.reasoning.append(thought)
                events.append(ReasoningDelta(thought))
            for text in (delta.content, delta.refusal):
                if text:
                    self.text.append(text)
                    events.append(TextDelta(text))
            for call in delta.tool_calls or []:
                if (piece := self._tool_delta(call)) is not None:
                    events.append(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return events

    def _tool_delta(self, call: Any) -> ToolCallDelta | None:
        function = call.function
        name = function.name if function is not None else None
        args = (function.arguments if function is not None else None) or ""
        slot = self.slot_of_index.get(call.index)
        if slot is not None and call.id and self.calls[slot]["id"] not in (None, call.id):
            # A new id on a known index: a server that numbers every call 0. Treat it as the
            # next call instead of gluing two argument strings together.
            slot = None
        if slot is None:
            if len(self.calls) >= MAX_CALLS:
                # Past the bound: counted, not kept (and not shown).
                if call.index not in self.dropped_indexes or call.id:
                    self.dropped += 1
                    self.dropped_indexes.add(call.index)
                return None
            slot = len(self.calls)
            self.slot_of_index[call.index] = slot
            self.calls.append({"id": call.id, "name": name or "", "args": [], "size": 0})
        entry = self.calls[slot]
        if call.id and entry["id"] is None:
            entry["id"] = call.id
        if name and not entry["name"]:
            entry["name"] = name
        entry["size"] += len(args)
        if entry["size"] > MAX_ARGUMENT_CHARS:
            entry["args"] = []  # counted from here on, never held
            return None
        entry["args"].append(args)
        return ToolCallDelta(slot, call.id, name, args)

    def reply(self) -> Reply:
        if self.finish_reason is None:
            raise StreamIncomplete(
                f"the stream ended after {self.chunks} chunks without a finish reason"
            )
        calls = []
        refused = {}
        for c in self.calls:
            # Some local servers omit call ids; tool results must still pair with their call.
            call_id = c["id"] or f"call_{uuid.uuid4().hex[:24]}"
            calls.append(ToolCall(id=call_id, name=c["name"], arguments="".join(c["args"])))
            if c["size"] > MAX_ARGUMENT_CHARS:
                refused[call_id] = too_big(c["size"])
        return Reply(
            text="".join(self.text),
            reasoning="".join(self.reasoning) if self.reasoning else None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
            refused=refused,
            dropped_calls=self.dropped,
        )


def _usage(raw: Any) -> Usage:
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None)
    if cached is None:
        # DeepSeek reports its prompt cache in a top-level field of its own.
        cached = (getattr(raw, "model_extra", None) or {}).get("prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=raw.prompt_tokens or 0,
        completion_tokens=raw.completion_tokens or 0,
        cached_tokens=int(cached or 0),
        reasoning_tokens=int(getattr(completion_details, "reasoning_tokens", None) or 0),
    )


CONNECT_TIMEOUT_S = 15.0
"""Upper bound for opening a connection, whatever ``request_timeout`` is."""


class OpenAICompatible:
    """A ChatModel for any server speaking the OpenAI chat completions API.

    The SDK's own retries are off: ``stream()`` retries by ``retry`` and announces each retry
    with a ``Retrying`` event, so the user sees it. ``request_timeout`` bounds the wait for
    the response and for every read, so a stall mid-stream becomes ``ProviderTimeout``
    instead of a hang; connecting is bounded by ``CONNECT_TIMEOUT_S`` as well.
    ``api_key_env`` names the variable the key came from, for the ``AuthError`` advice.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        provider: str,
        retry: RetryPolicy | None = None,
        context_windows: dict[str, int] | None = None,
        request_timeout: float = 300.0,
        http_client: httpx2.AsyncClient | None = None,
        api_key_env: str | None = None,
        request_deadline: float = 900.0,
    ) -> None:
        self.provider = provider
        self.request_deadline = request_deadline
        self.retry = retry or RetryPolicy()
        self._windows = dict(context_windows or {})
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            # The SDK refuses to start without a key; a local server does not check it.
            api_key=api_key or "not-needed",
            max_retries=0,
            # A host that swallows packets should fail fast, a slow prompt may not.
            timeout=openai.Timeout(
                request_timeout, connect=min(request_timeout, CONNECT_TIMEOUT_S)
            ),
            http_client=http_client,
        )
        self._errors = ErrorContext(
            provider=provider,
            base_url=str(self._client.base_url).rstrip("/"),
            api_key=api_key,
            api_key_env=api_key_env,
            timeout_s=request_timeout,
        )

    def _past_deadline(self) -> DeadlineExceeded:
        return DeadlineExceeded(f"no complete reply within {self.request_deadline:g} s")

    def context_window(self, model: str) -> int | None:
        """Override first, then the table of well-known models, else None."""
        return known_context_window(model, self._windows)

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        await self._client.close()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream one reply, retrying retryable failures (each announced by ``Retrying``).

        Ends with ``Completed``; otherwise raises an ``LLMError``: at once for errors retrying
        cannot fix (context overflow, auth, bad request, malformed response), or the last
        error once the retry policy is exhausted.
        """
        attempt = 1
        while True:
            try:
                async with aclosing(self._attempt(request)) as events:
                    async for event in events:
                        yield event
                return
            except LLMError as error:
                if attempt >= self.retry.attempts_for(error):
                    raise
                delay = self.retry.delay(attempt, error.retry_after_s)
                yield Retrying(attempt=attempt, error=str(error), delay_s=delay)
                await asyncio.sleep(delay)
                attempt += 1

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        args: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:  # some servers reject an empty tools list
            args["tools"] = request.tools
            if request.tool_choice is not None:
                args["tool_choice"] = request.tool_choice
        if request.max_tokens is not None:
            # OpenAI's reasoning models refuse max_tokens; most other servers only know it.
            key = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
            args[key] = request.max_tokens
        if request.temperature is not None:
            args["temperature"] = request.temperature
        return args

    async def _attempt(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """One HTTP request, no retries, within ``request_deadline`` in all: the per-read
        timeout alone lets a server that sends a byte now and then hold a turn forever."""
        deadline = asyncio.get_running_loop().time() + self.request_deadline
        try:
            async with asyncio.timeout_at(deadline):
                sdk_stream = await self._client.chat.completions.create(**self._arguments(request))
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, self._errors, mid_stream=False) from exc
        except TimeoutError:
            raise self._past_deadline() from None
        builder = _ReplyBuilder(request.model)
        async with sdk_stream:
            chunks = aiter(sdk_stream)
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        chunk = await anext(chunks)
                    events = builder.feed(chunk)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise self._past_deadline() from None
                except (openai.OpenAIError, ValueError) as exc:
                    # ValueError: the SSE decoder met a data line that is not JSON.
                    raise from_sdk_error(exc, self._errors, mid_stream=True) from exc
                except (AttributeError, TypeError) as exc:
                    # A JSON chunk that is not shaped like a chat completion chunk.
                    raise MalformedResponse(f"unexpected chunk shape ({exc})") from exc
                for event in events:
                    yield event
            content_type = sdk_stream.response.headers.get("content-type", "")
        if builder.chunks == 0 and "event-stream" not in content_type:
            raise MalformedResponse(f"expected an event stream, got {content_type or 'no type'}")
        yield Completed(builder.reply())


async def collect(stream: AsyncIterator[StreamEvent]) -> Reply:
    """Drain ``stream`` and return its reply, for callers that show no deltas. Errors raised
    by the stream propagate; a stream that ends without ``Completed`` is StreamIncomplete."""
    iterator = stream if isinstance(stream, AsyncGenerator) else None
    reply: Reply | None = None
    if iterator is not None:
        async with aclosing(iterator) as events:
            async for event in events:
                if isinstance(event, Completed):
                    reply = event.reply
    else:
        async for event in stream:
            if isinstance(event, Completed):
                reply = event.reply
    if reply is None:
        raise StreamIncomplete("the stream ended without a reply")
    return reply
