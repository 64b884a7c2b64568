"""Bounds on what a model can ask for in one reply.

A model (or whatever answers as one) decides how many tool calls a reply holds and how big
and how deep their arguments are. Unbounded, that is a way to stall the app (ten thousand
calls to draw), to fill the memory (fifty megabytes of arguments, copied at every layer) or
to crash every later look at the session (arguments nested too deep to parse). Past these
bounds a call is not run: it gets an error result the model can read and act on. Its text
(and reasoning) is bounded too: past the bound it is cut, with a note.
"""

from __future__ import annotations

import json
from typing import Any

from tools.base import ToolOutput

MAX_CALLS = 64
"""Tool calls kept from one reply; the rest are dropped, and the model is told."""
MAX_ARGUMENT_CHARS = 1_000_000
"""Characters of arguments one call may have; more are not even kept in memory."""
MAX_DEPTH = 64
"""Nesting depth of a call's JSON arguments."""
MAX_TEXT_CHARS = 4_000_000
"""Characters of a reply's text kept (and, apart, of its reasoning); the rest is dropped as
it streams, and a note at the cut says so."""


def json_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON ``text`` (brackets inside strings do
    not count); linear, and safe on input no parser would survive."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def too_deep(arguments: str) -> str | None:
    """The error for arguments nested deeper than :data:`MAX_DEPTH`, or None."""
    depth = json_depth(arguments)
    if depth <= MAX_DEPTH:
        return None
    return (
        f"error: the arguments are nested {depth} levels deep; at most {MAX_DEPTH} are "
        'accepted. Send a flat JSON object such as {"command": "ls -la"}.'
    )


def too_big(size: int) -> str:
    return (
        f"error: the arguments were {size:,} characters; at most {MAX_ARGUMENT_CHARS:,} are "
        "accepted, so the call was not run. Split the work: write a large file in parts."
    )


def text_cut_note(kind: str) -> str:
    """What ends a reply's text (or reasoning, ``kind``) cut at :data:`MAX_TEXT_CHARS`: the
    person reading it and the model, which gets its reply back, learn why it stops."""
    return (
        f"\n\n[reefline: this {kind} was longer than {MAX_TEXT_CHARS:,} characters; the rest "
        "was dropped. Keep replies shorter: write long content to a file in parts.]"
    )


def dropped_note(asked: int) -> str:
    return (
        f"Your last reply asked for {asked:,} tool calls; only the first {MAX_CALLS} were kept "
        f"and run, the other {asked - MAX_CALLS:,} were dropped. Ask for fewer at once."
    )


def parse_arguments(arguments: str) -> dict[str, Any] | ToolOutput:
    """A call's JSON arguments as an object, or the error result the model gets instead
    (too deep, not JSON, not an object), worded so that it can fix the call."""
    if (deep := too_deep(arguments)) is not None:
        return ToolOutput(deep, is_error=True)
    try:
        parsed = json.loads(arguments or "{}")
    except RecursionError:  # deeper than the parser goes, though within MAX_DEPTH
        return ToolOutput(
            f"error: the arguments are nested too deeply (> {MAX_DEPTH}).", is_error=True
        )
    except json.JSONDecodeError as exc:
        return ToolOutput(
            f"error: the arguments were not valid JSON ({exc.msg} at position {exc.pos}). "
            'Send a JSON object such as {"command": "ls -la"}.',
            is_error=True,
        )
    if not isinstance(parsed, dict):
        return ToolOutput(
            f"error: the arguments must be a JSON object, not {type(parsed).__name__}.",
            is_error=True,
        )
    return parsed
