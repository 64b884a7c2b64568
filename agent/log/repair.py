"""Crash repair: close a turn that a dead process left open, and answer every tool call on
the surface that has no result.

Generic on purpose: it knows turns, steps and tool calls, and nothing about any
``xxx/start … xxx/end`` pair a plugin may add (compaction brackets stay as they are; an
unmatched one is recognised as a crash orphan by its position before ``session/resume``).

An unanswered call is a property of the surface, not of the last turn: a failed write (a
full disk) can leave one behind while the process goes on, and a provider refuses every later
request that carries it. :func:`dangling_call_closers` finds them all: a call whose message
is followed on the surface only by tool results gets an error result appended; a call with
other messages after it (a log damaged that way by an older version) is dropped from its
message by a replacement that says so. The log stays append-only either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.log.events import (
    AssistantMessage,
    AssistantMessageData,
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


LOST_RESULT = (
    "error: this tool call has no recorded result: writing it to the session log failed. "
    "Its effects are unknown; check them before running it again."
)


def dangling_call_closers(events: Sequence[Event], surface: Sequence[int]) -> list[Closer]:
    """What answers every tool call on ``surface`` that has no result (see the module
    docstring); empty when every call is answered."""
    answered = {ev.data.call_id for seq in surface if isinstance(ev := events[seq], ToolResult)}
    started = {ev.data.call_id: ev.seq for ev in events if isinstance(ev, ToolStart)}
    closers: list[Closer] = []
    for position, seq in enumerate(surface):
        event = events[seq]
        if not isinstance(event, AssistantMessage):
            continue
        missing = [c for c in event.data.tool_calls if c.id not in answered]
        if not missing:
            continue
        rest = surface[position + 1 :]
        if all(isinstance(events[s], ToolResult) for s in rest):
            for call in missing:
                start = started.get(call.id)
                closers.append(
                    Closer(
                        "tool/result",
                        ToolResultData(
                            turn=event.data.turn,
                            step=event.data.step,
                            call_id=call.id,
                            name=call.name,
                            content=LOST_RESULT if start is not None else NOT_STARTED,
                            is_error=True,
                        ),
                        {"op": "append"},
                        [seq] if start is None else [seq, start],
                    )
                )
            continue
        names = ", ".join(call.name for call in missing)
        note = f"[tool calls removed, their results were never recorded: {names}]"
        data = event.data.model_dump()
        data["tool_calls"] = [c.model_dump() for c in event.data.tool_calls if c not in missing]
        data["text"] = f"{data['text']}\n\n{note}".strip()
        closers.append(
            Closer(
                "assistant/message",
                AssistantMessageData.model_validate(data),
                {"op": "replace", "start": seq, "end": seq},
                [seq],
            )
        )
    return closers
