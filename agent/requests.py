"""A step's request: built from the logged history and the step's :class:`Envelope`.

Everything the model sees is logged first ("model-visible means logged"): the messages are
``session.derive_messages()`` at dispatch, request transforms may change the model or the
parameters but never the messages, and the header (provider, model, system, tools,
parameters, window) is logged as ``request/header`` whenever it differs from the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.envelope import Envelope
from agent.hooks import RequestTransform
from agent.llm.chat import ChatRequest
from agent.log.events import RequestHeader, RequestHeaderData
from agent.log.messages import checkpoint_index
from agent.log.session import Session
from agent.loop_settings import default_output_cap
from agent.turns import TurnError, unanswered_tool_calls

Estimate = Callable[[list[dict[str, Any]]], int]


def build_request(
    session: Session,
    envelope: Envelope,
    transforms: Sequence[RequestTransform],
    *,
    output_cap: int | None,
    estimate: Estimate | None,
    bound: Estimate | None = None,
) -> ChatRequest:
    """The request for the next step, its header logged if it changed. Raises
    :class:`TurnError` (nothing sent) when the surface holds a call without its result or a
    transform touched the messages."""
    history = session.derive_messages()
    unanswered = unanswered_tool_calls(history)
    if unanswered:
        # Defence in depth: providers reject such a request with a 400 that no retry fixes.
        raise TurnError(
            f"internal error: tool calls without results on the surface ({unanswered}); "
            "the request was not sent"
        )
    messages = [{"role": "system", "content": envelope.system}, *history]
    checkpoint = checkpoint_index(session.surface, session.events)
    request = ChatRequest(
        model=envelope.model,
        messages=messages,
        tools=envelope.tools,
        checkpoint=None if checkpoint is None else 1 + checkpoint,  # after the system prompt
    )
    for transform in transforms:
        request = transform(envelope, request)
    if request.messages != messages:
        raise TurnError("a request hook changed the messages; only logged history is sent")
    request.max_tokens = clamp_output(request, envelope.window, output_cap, estimate, bound)
    header = RequestHeaderData(
        provider=envelope.provider,
        model=request.model,
        system=envelope.system,
        tools=request.tools,
        params={
            k: v
            for k, v in (("max_tokens", request.max_tokens), ("temperature", request.temperature))
            if v is not None
        },
        context_window=envelope.window,
    )
    if latest_header(session) != header:
        session.append("request/header", header)
    return request


def clamp_output(
    request: ChatRequest,
    window: int | None,
    output_cap: int | None,
    estimate: Estimate | None,
    bound: Estimate | None = None,
) -> int:
    """The reply cap: ``output_cap``, else :func:`default_output_cap`, never more than the
    window leaves after the prompt (vLLM refuses such a request as an overflow). ``bound``,
    an upper bound of ``estimate`` that may be cheaper, settles it when it leaves room."""
    wanted = output_cap or default_output_cap(window)
    if window is None or estimate is None:
        return wanted
    if bound is not None and window - bound(request.messages) >= wanted:
        return wanted
    room = window - estimate(request.messages)
    return max(1, min(wanted, room))


def latest_header(session: Session) -> RequestHeaderData | None:
    """The last ``request/header`` logged, or None."""
    for event in reversed(session.events):
        if isinstance(event, RequestHeader):
            return event.data
    return None
