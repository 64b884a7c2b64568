"""The LLM client: the ``ChatModel`` protocol and its OpenAI-compatible implementation.

A model turns a ``ChatRequest`` into a stream of ``StreamEvent`` values: text, reasoning and
tool-call deltas for display, ``Retrying`` when an attempt failed and is about to be repeated,
``Notice`` when the way requests are made changes (whole replies from a server that will not
stream), and ``Completed`` with the assembled ``Reply`` as the last item of every successful
stream. A reply asked for whole (not streamed) goes through the same parsing as a stream.
Failures are raised as ``LLMError`` subclasses (see ``agent.llm.errors``) once retries are
exhausted or when retrying cannot help.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

if TYPE_CHECKING:
    from openai._types import RequestOptions

from agent.llm.cache_marks import KEY_REFUSED, marked, refuses_cache_key
from agent.llm.chat import ChatRequest, collect
from agent.llm.errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    ContextOverflow,
    DeadlineExceeded,
    EmptyReply,
    ErrorContext,
    LLMError,
    MalformedResponse,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamIncomplete,
    error_in_body,
    is_context_overflow,
)
from agent.llm.replies import (
    Began,
    Completed,
    Notice,
    ReasoningDelta,
    Reply,
    ReplyBuilder,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    whole_as_chunk,
)
from agent.llm.retry import RetryPolicy
from agent.llm.sdk_errors import from_sdk_error
from agent.llm.window_table import KNOWN_CONTEXT_WINDOWS, known_context_window
from agent.log.events import ToolCall, Usage
from agent.redaction import clip
from agent.secret import Secret

__all__ = [
    "KNOWN_CONTEXT_WINDOWS",
    "AuthError",
    "BadRequest",
    "Completed",
    "ConnectionFailed",
    "ContextOverflow",
    "EmptyReply",
    "LLMError",
    "MalformedResponse",
    "Notice",
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


CONNECT_TIMEOUT_S = 15.0
"""Upper bound for opening a connection, whatever ``request_timeout`` is."""


class OpenAICompatible:
    """A ChatModel for any server speaking the OpenAI chat completions API.

    The SDK's own retries are off: ``stream()`` retries by ``retry`` and announces each retry
    with a ``Retrying`` event, so the user sees it. ``request_timeout`` bounds the wait for
    the response and for every read, so a stall mid-stream becomes ``ProviderTimeout``
    instead of a hang; connecting is bounded by ``CONNECT_TIMEOUT_S`` as well.
    ``api_key_env`` names the variable the key came from, for the ``AuthError`` advice.

    For the provider's prompt cache: ``breakpoints`` marks each request's cache breakpoints
    (:mod:`agent.llm.cache_marks`); ``cache_key`` (the session's id) is sent as
    ``prompt_cache_key`` until the server refuses it, once, after which it is never sent
    again by this client (the refused request is asked again at once without it).
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: Secret | None,
        provider: str,
        retry: RetryPolicy | None = None,
        context_windows: dict[str, int] | None = None,
        request_timeout: float = 300.0,
        http_client: httpx2.AsyncClient | None = None,
        api_key_env: str | None = None,
        request_deadline: float = 900.0,
        breakpoints: bool = False,
        cache_key: str | None = None,
    ) -> None:
        self.provider = provider
        self.breakpoints = breakpoints
        self.cache_key = cache_key
        self._key_refused = False
        self.request_deadline = request_deadline
        self.retry = retry or RetryPolicy()
        self._windows = dict(context_windows or {})
        self._whole_only: set[bool] = set()
        """Request kinds (with tools: True) this server does not stream: asked whole."""
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            # The SDK refuses to start without a key: without one, a placeholder it never
            # sends (:attr:`_options` leaves the header out).
            api_key=api_key.reveal() if api_key else "not-sent",
            max_retries=0,
            # A host that swallows packets should fail fast, a slow prompt may not.
            timeout=openai.Timeout(
                request_timeout, connect=min(request_timeout, CONNECT_TIMEOUT_S)
            ),
            http_client=http_client,
        )
        self._options: RequestOptions = (
            _CHAT_OPTIONS if api_key else {**_CHAT_OPTIONS, "headers": _NO_AUTHORIZATION}
        )
        """A server that is given no key gets no ``Authorization`` header at all."""
        self._errors = ErrorContext(
            provider=provider,
            base_url=str(self._client.base_url).rstrip("/"),
            api_key_env=api_key_env,
            timeout_s=request_timeout,
            key_sent=api_key is not None,
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
            keyed = self._keyed
            try:
                async with aclosing(self._attempt(request)) as events:
                    async for event in events:
                        yield event
                return
            except LLMError as error:
                if keyed and refuses_cache_key(error):
                    if not self._key_refused:  # said once, whatever ran beside this request
                        self._key_refused = True
                        yield Notice(KEY_REFUSED.format(detail=error.detail))
                    continue  # asked again at once without the key: not a retry
                if attempt >= self.retry.attempts_for(error):
                    raise
                delay = self.retry.delay(attempt, error.retry_after_s)
                yield Retrying(attempt=attempt, error=str(error), delay_s=delay)
                await asyncio.sleep(delay)
                attempt += 1

    @property
    def _keyed(self) -> bool:
        """Requests carry ``prompt_cache_key``: there is one, and it was not refused."""
        return self.cache_key is not None and not self._key_refused

    def _arguments(self, request: ChatRequest, *, streamed: bool) -> dict[str, Any]:
        messages = marked(request) if self.breakpoints else request.messages
        args: dict[str, Any] = {"model": request.model, "messages": messages}
        if streamed:
            args["stream"] = True
            args["stream_options"] = {"include_usage": True}
        if request.tools:  # some servers reject an empty tools list
            args["tools"] = request.tools
            # Said, not left to the server: llama-cpp-python reads a missing tool_choice as
            # "none" and drops the tools.
            args["tool_choice"] = request.tool_choice or "auto"
        if request.max_tokens is not None:
            # OpenAI's reasoning models refuse max_tokens; most other servers only know it.
            key = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
            args[key] = request.max_tokens
        if request.temperature is not None:
            args["temperature"] = request.temperature
        if self._keyed:
            args["prompt_cache_key"] = self.cache_key
        return args

    async def _attempt(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request, no retries. A server known not to stream this kind of request gets
        it whole; a stream refused for its tools, or one that carried nothing at all (an
        empty HTTP 200 is how llama-cpp-python reports a failure), is asked once more
        without streaming, which gets either the reply or the server's own error."""
        tools = bool(request.tools)
        if tools in self._whole_only:
            async for event in self._whole(request):
                yield event
            return
        try:
            async with aclosing(self._streamed(request)) as events:
                async for event in events:
                    yield event
            return
        except _NothingStreamed as nothing:
            reason = nothing.reason
        except (BadRequest, ServerError) as exc:
            if not (tools and _REFUSES_STREAMING.search(exc.detail)):
                raise
            reason = f"it refused to stream a reply with tools ({exc.detail})"
        try:
            reply = await self._whole_again(request)
        except (ContextOverflow, MalformedResponse, AuthError):
            raise
        except LLMError as exc:
            raise EmptyReply(f"{reason}; asked again without streaming: {exc.detail}") from exc
        self._whole_only.add(tools)
        kind = "with tools" if tools else "at all"
        yield Notice(
            f"The server does not stream replies {kind} ({reason}): reefline asks it for "
            "whole replies from now on, so each reply appears when it is complete."
        )
        for event in reply:
            yield event

    async def _whole_again(self, request: ChatRequest) -> list[StreamEvent]:
        """The request whole, after a stream that failed. A server that broke off that
        stream may leave its dropped connection in the pool: a connection error gets one
        more try, which opens a fresh one."""
        try:
            return await self._collect_whole(request)
        except (ConnectionFailed, StreamIncomplete):
            return await self._collect_whole(request)

    async def _collect_whole(self, request: ChatRequest) -> list[StreamEvent]:
        async with aclosing(self._whole(request)) as whole:
            return [event async for event in whole]

    async def _streamed(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """One streamed HTTP request within ``request_deadline`` in all: the per-read
        timeout alone lets a server that sends a byte now and then hold a turn forever.
        Raises :class:`_NothingStreamed` when the body held no chunk at all."""
        deadline = asyncio.get_running_loop().time() + self.request_deadline
        args = self._arguments(request, streamed=True)
        try:
            async with asyncio.timeout_at(deadline):
                sdk_stream = await self._client.post(
                    "/chat/completions",
                    body=args,
                    cast_to=ChatCompletionChunk,
                    options=self._options,
                    stream=True,
                    stream_cls=openai.AsyncStream[ChatCompletionChunk],
                )
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, self._errors, mid_stream=False) from exc
        except TimeoutError:
            raise self._past_deadline() from None
        builder = ReplyBuilder(request.model)
        async with sdk_stream:
            chunks = aiter(sdk_stream)
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        chunk = await anext(chunks)
                    events = builder.feed(chunk)
                    if builder.chunks == 1:
                        events = [Began(), *events]
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
                except RecursionError:
                    raise MalformedResponse(_TOO_DEEP.format(what="a stream event")) from None
                for event in events:
                    yield event
            content_type = sdk_stream.response.headers.get("content-type", "")
        if builder.chunks == 0:
            shape = (
                "an empty event stream"
                if "event-stream" in content_type
                else (f"a body that is not an event stream ({content_type or 'no content type'})")
            )
            raise _NothingStreamed(f"it answered HTTP 200 with {shape}")
        yield Completed(builder.reply())

    async def _whole(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """The same request without streaming; its reply is shown as one delta per part."""
        args = self._arguments(request, streamed=False)
        try:
            async with asyncio.timeout(self.request_deadline):
                response = await self._client.post(
                    "/chat/completions", body=args, cast_to=httpx2.Response, options=self._options
                )
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, self._errors, mid_stream=False) from exc
        except TimeoutError:
            raise self._past_deadline() from None
        body = response.content
        try:
            payload = json.loads(body)
        except RecursionError:
            raise MalformedResponse(_TOO_DEEP.format(what="the reply")) from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            snippet = clip(body[:4096].decode("utf-8", "replace"), 120)
            raise MalformedResponse(
                f"HTTP {response.status_code} with a body that is not JSON: {snippet or 'empty'!r}"
            ) from None
        error = error_in_body(payload, self._errors)
        if error is not None:
            raise error
        builder = ReplyBuilder(request.model)
        try:
            events = builder.feed(ChatCompletionChunk.construct(**whole_as_chunk(payload)))
        except (AttributeError, TypeError, KeyError) as exc:
            raise MalformedResponse(f"unexpected reply shape ({exc})") from exc
        except RecursionError:
            raise MalformedResponse(_TOO_DEEP.format(what="the reply")) from None
        for event in events:
            yield event
        yield Completed(builder.reply())


_CHAT_OPTIONS: RequestOptions = {"security": {"bearer_auth": True}}
"""What the SDK's typed ``chat.completions.create`` adds to its request (the key as a bearer
token). The request goes through the SDK's generic ``post`` instead: the arguments are
already the JSON the server reads, and the typed layer's transform of them resolves the type
hints of every parameter on first use (about 0.15 s of start-up). Errors, timeouts and the
event-stream decoding are the SDK's either way."""

_NO_AUTHORIZATION = {"Authorization": openai.omit}
"""Request headers that leave the SDK's bearer out (its placeholder key is never sent)."""

_TOO_DEEP = "{what} is JSON nested too deeply to parse (deeper than any reply has reason to be)"
"""A chunk or body that nests past the parser's depth (RecursionError): a malformed reply,
not a crash."""

_REFUSES_STREAMING = re.compile(r"\bstream(ing|ed)?\b.*\btools?\b|\btools?\b.*\bstream", re.I)
"""An error that says streaming is not supported with tools ("Automatic streaming tool
choice is not supported", llama-cpp-python)."""


class _NothingStreamed(Exception):
    """A streamed request whose body held no chunk at all (internal to the client)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
