"""The openai SDK's exceptions (and its stream decoding's) translated into :mod:`agent.llm.errors`.

Only the OpenAI-compatible client calls this, so the taxonomy itself, and everything that
raises or catches it (the loop, compaction), loads no SDK.
"""

from __future__ import annotations

import json
import socket
import urllib.parse

import httpx2
import openai

from agent.llm.errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    ContextOverflow,
    ErrorContext,
    LLMError,
    MalformedResponse,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamIncomplete,
    context_limit,
    is_context_overflow,
    retry_after_seconds,
)
from agent.redaction import clip


def _provider_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        message = str(body["message"])
    elif isinstance(body, str) and body.strip():
        message = body
    else:
        message = exc.message
    # HTML error pages and JSON dumps span many lines; a key echoed in it is masked before
    # the cut, which could leave most of it otherwise.
    return clip(" ".join(message.split()), 400)


def from_sdk_error(exc: Exception, ctx: ErrorContext, *, mid_stream: bool) -> LLMError:
    """Translate an exception raised by the openai SDK (or its SSE decoding) into an LLMError.

    ``mid_stream`` says whether the response had started: a dropped connection then means a
    cut-off reply (``StreamIncomplete``) rather than an unreachable server.
    """
    if isinstance(exc, openai.APITimeoutError) and isinstance(exc.__cause__, httpx2.ConnectTimeout):
        return ConnectionFailed(ctx.base_url, "no answer to the connection attempt")
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeout(f"no data from {ctx.provider} for {ctx.timeout_s:g} s")
    if isinstance(exc, openai.APIConnectionError):
        reason = clip(str(exc.__cause__ or exc), 400) or type(exc.__cause__).__name__
        if mid_stream:
            return StreamIncomplete(f"connection to {ctx.provider} lost ({reason})")
        if _name_not_resolved(exc):
            host = urllib.parse.urlsplit(ctx.base_url).hostname or ctx.base_url
            return ConnectionFailed(ctx.base_url, reason, unresolved_host=host)
        return ConnectionFailed(ctx.base_url, reason)
    if isinstance(exc, openai.APIStatusError):
        return _from_status(exc, ctx)
    if isinstance(exc, openai.APIError):
        # An error event inside an otherwise healthy stream ({"error": {...}} as a chunk).
        message = _provider_message(exc)
        if is_context_overflow(message, exc.code, exc.type):
            return ContextOverflow(message, limit=context_limit(message))
        return ServerError(f"{ctx.provider} reported an error mid-reply: {message}")
    if isinstance(exc, json.JSONDecodeError):
        snippet = clip(exc.doc, 120)
        return MalformedResponse(f"a stream event is not valid JSON ({exc.msg}): {snippet!r}")
    return LLMError(clip(f"{type(exc).__name__}: {exc}", 400))


def _from_status(exc: openai.APIStatusError, ctx: ErrorContext) -> LLMError:
    status = exc.status_code
    message = _provider_message(exc)
    said = f"{ctx.provider} says (HTTP {status}): {message}"
    retry_after = None
    if status in (429, 503):
        retry_after = retry_after_seconds(exc.response.headers)
    if status in (401, 403):
        return AuthError(said, status=status, hint=ctx.key_hint())
    limit = context_limit(message)
    # llama-cpp-python, where its error mapping does not apply, sends its exception's text
    # ("Requested tokens (6004) exceed context window of 6000") with HTTP 500: an overflow
    # all the same, which a retry cannot fix and compaction can. A server error is taken
    # for one only when it also states the window ("too many tokens" alone may be a load
    # limit).
    overflow_status = status in (400, 413, 422) or (status >= 500 and limit is not None)
    if overflow_status and is_context_overflow(message, exc.code, exc.type):
        return ContextOverflow(said, status=status, limit=limit)
    if status == 429 and exc.code == "insufficient_quota":
        # OpenAI sends 429 for an empty balance too; waiting does not refill it.
        return BadRequest(said, status=status, hint="Check the billing and quota of the account.")
    if status == 429:
        return RateLimited(said, status=status, retry_after_s=retry_after)
    if status == 408:
        return ProviderTimeout(said, status=status)
    if status >= 500:
        return ServerError(said, status=status, retry_after_s=retry_after)
    return BadRequest(said, status=status)


def _name_not_resolved(exc: BaseException) -> bool:
    """Whether the connection failed because the host name did not resolve (a
    ``socket.gaierror`` somewhere in the chain of causes)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, socket.gaierror):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
