"""Crash repair: close a turn that a dead process left open.

Generic on purpose: it knows turns, steps and tool calls, and nothing about any
``xxx/start … xxx/end`` pair a plugin may add (compaction brackets stay as they are; an
unmatched one is recognised as a crash orphan by its position before ``session/resume``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.events import (
    AssistantMessage,
    Data,
    Event,
    StepData,
    StepStart,
    ToolResult,
    ToolResultData,
    ToolStart,
    TurnEnd,
    TurnEndData,
    TurnStart,
)

NOT_STARTED = (
    "error: this tool call was never started: the session was interrupted before it ran. "
    "Run it again if it is still needed."
)
OUTCOME_UNKNOWN = (
    "error: the outcome of this tool call is unknown: the session was interrupted while it "
    "ran. Check its effects before running it again."
)


@dataclass(frozen=True)
class Closer:
    """One event to append to close the open tail turn."""

    type: str
    data: Data
    surface_op: dict[str, Any] | None = None
    source_event_seqs: list[int] | None = None


def interrupted_turn_closers(events: list[Event]) -> list[Closer]:
    """The closers for an open tail turn, in append order; empty when the tail is closed.

    For each tool call of the turn without a result: an error ``tool/result`` ("not
    started" when no ``tool/start`` was logged, else "outcome unknown", citing the start);
    then ``step/end`` if a step is open; then ``turn/end {reason: interrupted}``.
    """
    start_idx = None
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if isinstance(ev, TurnEnd):
            return []
        if isinstance(ev, TurnStart):
            start_idx = i
            break
    if start_idx is None:
        return []
    turn = events[start_idx].data.turn  # type: ignore[attr-defined]
    open_step: int | None = None
    calls: dict[str, tuple[int, int, str]] = {}  # call_id -> (step, seq, name), in order
    answered: set[str] = set()
    started: dict[str, int] = {}
    for ev in events[start_idx + 1 :]:
        if isinstance(ev, StepStart):
            open_step = ev.data.step
        elif ev.type == "step/end":
            open_step = None
        elif isinstance(ev, AssistantMessage):
            for call in ev.data.tool_calls:
                calls.setdefault(call.id, (ev.data.step, ev.seq, call.name))
        elif isinstance(ev, ToolStart):
            started[ev.data.call_id] = ev.seq
        elif isinstance(ev, ToolResult):
            answered.add(ev.data.call_id)

    closers: list[Closer] = []
    for call_id, (step, seq, name) in calls.items():
        if call_id in answered:
            continue
        start_seq = started.get(call_id)
        closers.append(
            Closer(
                "tool/result",
                ToolResultData(
                    turn=turn,
                    step=step,
                    call_id=call_id,
                    name=name,
                    content=NOT_STARTED if start_seq is None else OUTCOME_UNKNOWN,
                    is_error=True,
                ),
                {"op": "append"},
                [seq] if start_seq is None else [seq, start_seq],
            )
        )
    if open_step is not None:
        closers.append(Closer("step/end", StepData(turn=turn, step=open_step)))
    closers.append(Closer("turn/end", TurnEndData(turn=turn, reason="interrupted")))
    return closers
