"""The values of a turn: its state while it runs, how it ended, a message steered into it,
and the one check that every tool call in a history has its result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.llm.replies import StreamEvent
from agent.log.events import ToolCall, TurnEndReason


@dataclass(frozen=True)
class TurnResult:
    turn: int
    reason: TurnEndReason
    text: str
    """The final assistant text of the turn (may be empty)."""
    error: str | None = None
    cut_at: int | None = None
    """The final reply stopped at the output cap (``finish_reason: length``) of this many
    tokens; None when it ended naturally or the turn went on past a cut reply."""


class TurnError(Exception):
    """A failure that ends the turn with reason ``error`` and this message."""


class TurnCancelled(Exception):
    """Raised by :meth:`Agent.run_turn` when the turn was cancelled (the log is closed)."""

    def __init__(self, result: TurnResult) -> None:
        super().__init__("turn cancelled")
        self.result = result


StreamListener = Callable[[StreamEvent], None]


@dataclass(frozen=True)
class Steering:
    """A message typed while a turn runs (see :meth:`agent.loop.Agent.steer`)."""

    text: str
    extend_turn: bool


@dataclass
class TurnState:
    """What the loop keeps about the turn it runs (in process only: the log has the rest)."""

    turn: int
    step: int = 0
    step_open: bool = False
    text: str = ""
    error: str | None = None
    partial: list[str] = field(default_factory=list)
    pending_calls: list[ToolCall] = field(default_factory=list)
    running_call: str | None = None
    cut_at: int | None = None
    started_at: float = field(default_factory=time.time)
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    """Set to ask the turn to stop (see :meth:`agent.loop.Agent.run_turn`)."""


def unanswered_tool_calls(messages: list[dict[str, Any]]) -> list[str]:
    """Ids of assistant tool calls in ``messages`` that no tool message answers."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    missing = []
    for m in messages:
        for call in m.get("tool_calls") or ():
            if call["id"] not in answered:
                missing.append(call["id"])
    return missing
