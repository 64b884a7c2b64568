"""The loop's extension points, as types: what each hook is given and may do.

Compaction installs its listeners here (``compact`` imports this module, never the loop):
every hook is handed values — the step's :class:`~agent.envelope.Envelope` — not the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent.envelope import Envelope
from agent.llm.chat import ChatRequest
from agent.llm.errors import ContextOverflow

Prepare = Callable[[], Awaitable[None]]
"""Awaited before a step's envelope is built (asking the server its window, say)."""
PreStep = Callable[[Envelope, int, int, asyncio.Event], Awaitable[None]]
"""``(envelope, turn, step, signal)``: awaited before ``step/start``; may change the surface.
``signal`` is the turn's cancellation signal: a long listener checks it between units of
work (the pruner, between results) and stops when it is set."""
Replying = Callable[[int, int], None]
"""``(turn, step)``: the model began its reply to the step's request — its first streamed
item arrived, so the server has read the whole prompt (a provider caches it from now on).
Called once per step, not awaited."""
RequestTransform = Callable[[Envelope, ChatRequest], ChatRequest]
"""A pure transform of the request about to be sent (it must not change the messages)."""
RequestErrorHandler = Callable[
    [Envelope, ContextOverflow, int, int, asyncio.Event], Awaitable[bool]
]
"""``(envelope, error, turn, step, signal)`` -> True to ask for one more attempt inside the
same step (``signal`` as for :data:`PreStep`)."""


@dataclass
class Hooks:
    """Extension points of the loop. Listeners run in registration order."""

    prepare: list[Prepare] = field(default_factory=list)
    pre_step: list[PreStep] = field(default_factory=list)
    request: list[RequestTransform] = field(default_factory=list)
    replying: list[Replying] = field(default_factory=list)
    request_error: list[RequestErrorHandler] = field(default_factory=list)
