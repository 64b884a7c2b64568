"""The loop guard: a tool call the model keeps repeating, said once to it and to the person.

A model stuck in a loop calls the same tool with the same arguments again and again (the
same ``cat``, the same failing test). The guard is a fold of the log: it counts, among the
turn's last :data:`WINDOW` ``tool/start`` events, those with the call's name and arguments
(arguments compared as JSON, so key order and spacing do not matter). When that count
reaches the setting's number of repeats, the call's result carries :func:`note` and the
person is told; the turn goes on (the guard never stops a turn: ``max_steps`` does).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.log.events import Event, ToolCall, ToolStart, TurnStart

WINDOW = 10
"""How many of the turn's latest tool calls the guard looks at."""
DEFAULT_REPEATS = 4
"""The ``loop_guard`` setting's default: this many identical calls among the last
:data:`WINDOW` are a loop (0 turns the guard off)."""


def call_key(name: str, arguments: str) -> str:
    """What makes two calls "the same": the tool's name and its arguments, as JSON with
    sorted keys when they parse (else the raw text)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return f"{name}\0{arguments}"
    return f"{name}\0{json.dumps(parsed, sort_keys=True, separators=(',', ':'))}"


def repeats_of(events: Sequence[Event], call: ToolCall) -> int:
    """How many of the open turn's last :data:`WINDOW` tool calls (``call`` itself included,
    once its ``tool/start`` is logged) are ``call`` again."""
    key = call_key(call.name, call.arguments)
    seen = same = 0
    for event in reversed(events):
        if isinstance(event, TurnStart):
            break
        if isinstance(event, ToolStart):
            seen += 1
            if call_key(event.data.name, event.data.arguments) == key:
                same += 1
            if seen == WINDOW:
                break
    return same


def looping(events: Sequence[Event], call: ToolCall, repeats: int) -> bool:
    """True for the call that makes ``repeats`` identical calls among the last
    :data:`WINDOW`: the one moment the guard speaks (later repeats stay above the mark and
    are not told again until the count has fallen below it). ``repeats`` 0: never."""
    return repeats > 0 and repeats_of(events, call) == repeats


def note(call: ToolCall, repeats: int) -> str:
    """What the model reads after the result of the repeated call."""
    return (
        f"[reefline: you have made this same {call.name} call (same arguments) {repeats} "
        f"times among your last {WINDOW} tool calls; repeating it will not give a different "
        "result. Change the approach, or stop and tell the user what blocks you.]"
    )


def notice(call: ToolCall, repeats: int) -> str:
    """What the person is told (app notice, ``--plain`` line, ``-p`` stderr)."""
    return (
        f"The model called {call.name} with the same arguments {repeats} times in its last "
        f"{WINDOW} tool calls; it was told it may be looping (the turn goes on: Esc or "
        "Ctrl+C stops it; loop_guard in the settings)."
    )
