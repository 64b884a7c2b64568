"""Typed LLM errors, the context-overflow matcher, and the translation from SDK exceptions.

Every failure of a chat request reaches the rest of the program as an ``LLMError`` subclass,
never as an ``openai`` or ``httpx2`` exception: the loop decides what to do from the type
(retry, compact, end the turn) and shows ``user_message`` to the user. No message ever
contains the API key, even when a provider echoes it back: every provider text is redacted
before it is cut (:func:`agent.redaction.clip`).
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from agent.log.usage_figures import token_figure
from agent.redaction import clip


class LLMError(Exception):
    """A chat request failed. ``str(err)`` is a one-line summary (what ``Retrying.error``
    carries); ``user_message`` adds what the user can do about it."""

    retryable: ClassVar[bool] = False
    title: ClassVar[str] = "The model request failed"
    hint: str = ""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        hint: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(f"{self.title}: {detail}" if detail else self.title)
        self.detail = detail
        self.status = status
        if hint is not None:
            self.hint = hint
        self.retry_after_s = retry_after_s
        """Seconds the provider asked us to wait (Retry-After), if it said."""

    @property
    def user_message(self) -> str:
        """Terminal-ready text: what happened, then what to do."""
        return f"{self}\n{self.hint}" if self.hint else str(self)


class ContextOverflow(LLMError):
    """The request does not fit the model's context window (compaction can fix this)."""

    title = "The conversation is too long for the model's context window"
    hint = (
        "Compact the conversation (/compact) or start a new one (/new). If the window size "
        "reefline assumes is wrong, set it with --context-window."
    )

    def __init__(self, detail: str, *, status: int | None = None, limit: int | None = None):
        super().__init__(detail, status=status)
        self.limit = limit
        """The window the provider named ("maximum context length is N tokens"), if any."""


class RateLimited(LLMError):
    retryable = True
    title = "The provider is rate limiting requests"
    hint = "Wait a minute and try again, or check the rate limits of your plan."


class ServerError(LLMError):
    retryable = True
    title = "The provider had a server error"
    hint = "This is usually temporary: try again in a moment."


class ProviderTimeout(LLMError):
    retryable = True
    title = "The provider stopped responding"
    hint = (
        "The server may be overloaded or still reading a long prompt. Try again, or raise the "
        "request timeout in the settings."
    )


class DeadlineExceeded(ProviderTimeout):
    """The whole request took longer than its deadline (a server trickling bytes, or a
    model generating without end). Not retried: the next attempt would take as long."""

    retryable = False
    title = "The model request took too long"
    hint = "Raise request_deadline in the settings if the model really needs that long."


class StreamIncomplete(LLMError):
    retryable = True
    title = "The reply was cut off"
    hint = "The reply stopped before the model had finished it. Try again."


class ConnectionFailed(LLMError):
    retryable = True
    title = "Could not reach the model server"

    def __init__(self, url: str, reason: str, *, unresolved_host: str | None = None) -> None:
        if unresolved_host is not None:
            reason = f"the host name {unresolved_host!r} could not be resolved"
            hint = (
                "Check the host name in --base-url (or OPENAI_BASE_URL) for a typo, and that "
                "this machine can resolve it (DNS, /etc/hosts, a VPN that is down)."
            )
        else:
            hint = (
                "Check that the server is running and that --base-url (or OPENAI_BASE_URL) "
                "points at it."
            )
        super().__init__(f"{url} ({reason})", hint=hint)
        self.url = url


class AuthError(LLMError):
    title = "The provider rejected the API key"


class BadRequest(LLMError):
    title = "The provider rejected the request"
    hint = "Check the model name (--model) and the base URL; the provider's own words are above."


class MalformedResponse(LLMError):
    title = "The server sent something that is not an OpenAI-compatible reply"
    hint = "Check that --base-url points at an OpenAI-compatible API (usually ending in /v1)."


class EmptyReply(LLMError):
    """A server answered a streamed request with nothing at all, and asked again without
    streaming it gave an error that is not an overflow. Not retried: the same request
    fails the same way."""

    title = "The server sent an empty reply"
    hint = (
        "Its own words are above; its log has the details (often an option it does not "
        "support, or a prompt longer than its context)."
    )


# Codes and types that providers use for a prompt that does not fit.
_OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "context_window_exceeded", "exceed_context_size_error"}
)

# Lower-case phrases, each with the provider that words it so.
OVERFLOW_PHRASES: tuple[str, ...] = (
    "maximum context length",  # OpenAI, vLLM, DeepSeek, OpenRouter: "...is N tokens"
    "context length exceeded",
    "context_length_exceeded",  # the code echoed inside the message
    "context window exceeded",
    "exceeds the context window",  # OpenAI, newer wording
    "exceeds the available context size",  # llama.cpp server
    "exceed_context_size",  # llama.cpp error type echoed
    "prompt is too long",  # Anthropic-style compatibility layers
    "prompt too long",
    "too many tokens",
    "input is too long",  # AWS Bedrock gateways
    "reduce the length of the messages",  # OpenAI, Groq, vLLM advice line
    "too large for model with",  # Mistral: "...with 32768 maximum context length"
    "exceeds the maximum number of tokens allowed",  # Gemini compatibility endpoint
    "`inputs` tokens + `max_new_tokens` must be",  # Hugging Face TGI
    "exceed context window of",  # llama-cpp-python's own exception, sent as HTTP 500
)

_LIMIT_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"maximum context length is ([\d,]+)",
        r"context window of ([\d,]+)",
        r"available context size \(([\d,]+) tokens\)",
        r"([\d,]+) maximum context length",
        r"tokens > ([\d,]+) maximum",
        r"maximum number of tokens allowed \(([\d,]+)\)",
        r"must be <= ([\d,]+)",
    )
)


def is_context_overflow(message: str, code: str | None = None, kind: str | None = None) -> bool:
    """Whether a provider error (message, ``code``, ``type``) says the prompt does not fit."""
    if code in _OVERFLOW_CODES or kind in _OVERFLOW_CODES:
        return True
    lowered = message.lower()
    return any(phrase in lowered for phrase in OVERFLOW_PHRASES)


def context_limit(message: str) -> int | None:
    """The window size named in an overflow message, when the provider names one that is a
    token count (:func:`~agent.log.usage_figures.token_figure`: a 400-digit "limit" is none)."""
    for pattern in _LIMIT_PATTERNS:
        if found := pattern.search(message.lower()):
            digits = found.group(1).replace(",", "")
            return token_figure(int(digits)) if 0 < len(digits) <= 12 else None
    return None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None  # a date no calendar holds ("01 Jan 99999999999999"): no advice


@dataclass(frozen=True)
class ErrorContext:
    """What the translator needs to word an error for this client. (Its texts are redacted
    by :mod:`agent.redaction`, which knows every key without being handed it here.)"""

    provider: str
    base_url: str
    api_key_env: str | None
    """The variable the key sent came from (None: the provider's conventional one)."""
    timeout_s: float
    key_sent: bool = True
    """Whether the requests carry a key: a server that got none and wants one is told apart."""

    def key_hint(self) -> str:
        """What to do about a refused key, or about a server that wants one and got none."""
        if not self.key_sent:
            conventional = {"openai": "OPENAI_API_KEY", "deepseek": "DEEPSEEK_API_KEY"}
            if (env := conventional.get(self.provider)) is not None:
                return (
                    f"No API key was sent: set {env}, or name the variable that holds the "
                    "key with --api-key-env NAME."
                )
            return (
                "No API key was sent to this server: OPENAI_API_KEY goes only to OpenAI or to "
                "the server OPENAI_BASE_URL names, DEEPSEEK_API_KEY only to DeepSeek. If this "
                "server needs a key, name the variable that holds it: --api-key-env NAME."
            )
        env = self.api_key_env or (
            "DEEPSEEK_API_KEY" if self.provider == "deepseek" else "OPENAI_API_KEY"
        )
        return (
            f"Set the key in the {env} environment variable (or name another "
            "variable with --api-key-env), and check that it is valid for this provider and "
            "model."
        )


def error_in_body(payload: object, ctx: ErrorContext) -> LLMError | None:
    """The error a JSON body reports in place of a reply (``{"error": ...}`` sent with HTTP
    200, as some local servers do), or None when the body is not an error."""
    if not isinstance(payload, dict):
        return MalformedResponse(f"the reply is JSON but not an object ({type(payload).__name__})")
    error = payload.get("error")
    if error is None or "choices" in payload:
        return None
    if isinstance(error, dict):
        message = str(error.get("message") or error)
        code, kind = error.get("code"), error.get("type")
    else:
        message, code, kind = str(error), None, None
    message = clip(" ".join(message.split()), 400)
    code = code if isinstance(code, str) else None
    kind = kind if isinstance(kind, str) else None
    if is_context_overflow(message, code, kind):
        return ContextOverflow(message, limit=context_limit(message))
    return BadRequest(f"{ctx.provider} answered HTTP 200 with an error: {message}")
