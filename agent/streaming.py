"""One model reply, streamed: deltas go to the listeners, retries and the reply to the log.

What the person is watching is kept in ``state.partial`` so a turn cancelled mid-reply can
log what was shown (:func:`agent.closing.keep_partial_reply`); a retry starts it over.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing

from agent.cache_misses import cache_miss
from agent.llm.chat import ChatModel, ChatRequest
from agent.llm.replies import (
    Began,
    Completed,
    Notice,
    ReasoningDelta,
    Reply,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from agent.log.events import AssistantMessage, CacheExpected
from agent.log.session import Session
from agent.turns import TurnState


async def stream_reply(
    session: Session,
    model: ChatModel,
    state: TurnState,
    request: ChatRequest,
    emit: Callable[[StreamEvent], None],
    began: Callable[[], None] = lambda: None,
    expected: CacheExpected | None = None,
) -> Reply:
    """Stream ``request``; log each ``llm/retry`` and the reply as ``assistant/message``
    (with ``expected``, what the provider should serve from its cache) before handing its
    :class:`Completed` to ``emit``, and then a :class:`Notice` when the reply's usage says
    the cache missed (:func:`agent.cache_misses.cache_miss`). ``began`` is called once, when
    the reply begins: its :class:`Began` (not emitted), or its first item where the model
    sends none (a reply without streaming). Raises what the model raises."""
    state.partial = []
    beginning = True
    async with aclosing(model.stream(request)) as stream:  # type: ignore[type-var]
        async for item in stream:
            if beginning and not isinstance(item, Retrying | Notice):
                beginning = False
                began()
            if isinstance(item, Began):
                continue
            if isinstance(item, TextDelta):
                state.partial.append(item.text)
            elif isinstance(item, Retrying):
                state.partial = []
                session.append(
                    "llm/retry",
                    {"attempt": item.attempt, "error": item.error, "delay_s": item.delay_s},
                )
            elif isinstance(item, Completed):
                state.partial = []
                logged = _log_reply(session, state, item.reply, expected)
                emit(item)
                _warn_of_miss(logged, emit)
                return item.reply
            elif not isinstance(item, ReasoningDelta | ToolCallDelta | Notice):
                raise TypeError(f"unexpected stream item {item!r}")
            emit(item)
    raise RuntimeError("the model stream ended without a Completed item")


def _warn_of_miss(logged: AssistantMessage, emit: Callable[[StreamEvent], None]) -> None:
    """One line for the person when the logged reply records a cache miss."""
    usage = logged.data.usage
    miss = cache_miss(None if usage is None else usage.cached_tokens, logged.data.cache_expected)
    if miss is not None:
        emit(Notice(miss.line))


def _log_reply(
    session: Session, state: TurnState, reply: Reply, expected: CacheExpected | None
) -> AssistantMessage:
    event = session.append(
        "assistant/message",
        {
            "turn": state.turn,
            "step": state.step,
            "text": reply.text,
            "reasoning": reply.reasoning or None,
            "tool_calls": [c.model_dump() for c in reply.tool_calls],
            "finish_reason": reply.finish_reason,
            "usage": reply.usage.model_dump() if reply.usage else None,
            "model": reply.model,
            "cache_expected": expected,
        },
    )
    assert isinstance(event, AssistantMessage)
    return event
