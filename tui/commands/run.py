"""The one command layer of the front ends: :func:`run` runs a slash command for the app, the
plain REPL and headless alike, and yields what the front end should do
(:mod:`tui.commands.effects`); each front end has one ``apply(effect)``.

The table and its parsing are :mod:`tui.commands.registry`; the commands themselves are
:mod:`tui.commands.handlers` (adding one touches only that module).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import tui.commands.handlers
import tui.commands.mcp
import tui.commands.memory
import tui.commands.naming  # noqa: F401  (registers /rename)
from tui.commands.effects import Effect, Said
from tui.commands.registry import (
    COMMANDS,
    SLASH_COMMANDS,
    SLASH_USAGE,
    Command,
    closest_command,
    parse_slash,
    slash_help,
    unknown_command_text,
)
from tui.runtime.runtime import Runtime

__all__ = [
    "COMMANDS",
    "SLASH_COMMANDS",
    "SLASH_USAGE",
    "Command",
    "closest_command",
    "parse_slash",
    "run",
    "slash_help",
    "unknown_command_text",
]


async def run(runtime: Runtime, name: str, args: str = "") -> AsyncIterator[Effect]:
    """Run ``/name args`` on ``runtime``: what to do, in order, as the command does it (a
    rewind says it is going back before the fork is written). An unknown name gets the closest
    match; a command that must wait for the turn or ``/compact`` says so instead of running."""
    command = COMMANDS.get(name)
    if command is None:
        yield Said(unknown_command_text(name), "warning")
        return
    if command.busy and runtime.busy:
        yield Said(command.busy, "warning")
        return
    async for effect in command.handler(runtime, args):
        yield effect
