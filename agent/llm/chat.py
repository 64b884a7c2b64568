"""The model seam: the request a step sends and the protocol of anything that answers it.

The loop, compaction's summarizer and the demo model see a model only through these types
(and :func:`collect`, for a caller that shows no deltas); the OpenAI-compatible client
(:mod:`agent.llm.client`) is one implementation, and importing this module loads no HTTP
client or SDK.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.llm.errors import (
    StreamIncomplete,
)
from agent.llm.replies import (
    Completed,
    Notice,
    Reply,
    Retrying,
    StreamEvent,
)


@dataclass
class ChatRequest:
    """``messages`` in OpenAI chat format, system message first; ``tools`` as function specs."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    """``"none"``/``"auto"``/``"required"``, sent only with tools (None: ``"auto"``, said
    rather than left to a server that may read its absence as ``"none"``)."""
    checkpoint: int | None = None
    """The index in ``messages`` of the checkpoint a compaction left (None: there is none):
    a cache breakpoint where the provider's cache needs them (:mod:`agent.llm.cache_marks`)."""
    prefix_end: int | None = None
    """``messages[:prefix_end]`` is what a later request may repeat (None: all of them); the
    rest (a summary request's instruction) is never marked as a cache breakpoint."""


class ChatModel(Protocol):
    """Anything that can answer a chat request as a stream.

    ``stream`` raises ``LLMError`` subclasses only. To cancel, cancel the consuming task;
    consumers should iterate inside ``contextlib.aclosing`` so the HTTP response closes at
    once even when the task is cancelled between two items.
    """

    provider: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...

    def context_window(self, model: str) -> int | None: ...

    async def aclose(self) -> None:
        """Release connections (a model without any does nothing)."""


async def collect(
    stream: AsyncIterator[StreamEvent],
    on_retry: Callable[[Retrying], None] | None = None,
    on_notice: Callable[[Notice], None] | None = None,
) -> Reply:
    """Drain ``stream`` and return its reply, for callers that show no deltas (``on_retry``
    hears each failed attempt that is about to be repeated, ``on_notice`` each change in the
    way requests are made). Errors raised by the stream propagate; a stream that ends
    without ``Completed`` is StreamIncomplete."""
    iterator = stream if isinstance(stream, AsyncGenerator) else None
    reply: Reply | None = None

    def take(event: StreamEvent) -> None:
        nonlocal reply
        if isinstance(event, Completed):
            reply = event.reply
        elif isinstance(event, Retrying) and on_retry is not None:
            on_retry(event)
        elif isinstance(event, Notice) and on_notice is not None:
            on_notice(event)

    if iterator is not None:
        async with aclosing(iterator) as events:
            async for event in events:
                take(event)
    else:
        async for event in stream:
            take(event)
    if reply is None:
        raise StreamIncomplete("the stream ended without a reply")
    return reply
