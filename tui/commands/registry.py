"""The slash-command table: each command's name, usage, help and handler, registered by the
command set (:mod:`tui.commands.handlers`) with :func:`command`; and how typed text is read as one.

A handler takes the runtime and the argument text and yields what the front end should do
(:mod:`tui.commands.effects`); it never draws. The table is the one list every front end offers:
help, completion, the app's palette and menu read it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tui.commands.effects import Effect
from tui.runtime.runtime import Runtime

Handler = Callable[[Runtime, str], AsyncIterator[Effect]]


@dataclass(frozen=True)
class Command:
    """One slash command. ``busy``: said instead of running it while a turn or ``/compact``
    is in flight (empty: it runs then too). ``background``: it runs a while and Esc stops it,
    so a front end with a prompt keeps taking input meanwhile. ``fill``: the palette puts
    ``/name `` in the prompt for the argument rather than running it bare."""

    name: str
    usage: str
    help: str
    handler: Handler
    busy: str = ""
    background: bool = False
    fill: bool = False


COMMANDS: dict[str, Command] = {}
"""Every slash command, in the order help lists them."""
SLASH_COMMANDS: dict[str, str] = {}
"""Every slash command every front end offers: name -> one-line help."""
SLASH_USAGE: dict[str, str] = {}
"""How each command is typed (for help and completion)."""


def command(
    usage: str, help: str, *, busy: str = "", background: bool = False, fill: bool = False
) -> Callable[[Handler], Handler]:
    """Register the decorated handler as the command ``usage`` names (``/name [args]``)."""
    name = usage.split()[0].removeprefix("/")

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, usage, help, handler, busy, background, fill)
        SLASH_COMMANDS[name] = help
        SLASH_USAGE[name] = usage
        return handler

    return register


def unregister(name: str) -> None:
    """Remove a command (one a test added)."""
    COMMANDS.pop(name, None)
    SLASH_COMMANDS.pop(name, None)
    SLASH_USAGE.pop(name, None)


_SLASH = re.compile(r"/([A-Za-z][A-Za-z0-9_-]*)(?:\s+(.*))?", re.DOTALL)


def parse_slash(text: str) -> tuple[str, str] | None:
    """Split a slash command into ``(name, args)``; None when ``text`` is not one.

    ``"/compact the parser"`` -> ``("compact", "the parser")``. The name is lowercased and
    the args stripped. Text that merely starts with a slash — a path such as ``/etc/hosts``,
    ``//`` or a lone ``/`` — is not a command, so it can be sent as a message. Unknown names
    are still parsed (see :func:`closest_command` for the "did you mean" hint).
    """
    match = _SLASH.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def closest_command(name: str) -> str | None:
    """The known command ``name`` most likely meant: itself, a unique prefix match, or the
    closest spelling (``compcat`` -> ``compact``); None when nothing is close."""
    name = name.lower().lstrip("/")
    if name in SLASH_COMMANDS:
        return name
    if name:
        prefixed = [c for c in SLASH_COMMANDS if c.startswith(name)]
        if len(prefixed) == 1:
            return prefixed[0]
    close = difflib.get_close_matches(name, list(SLASH_COMMANDS), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_command_text(name: str) -> str:
    """``Unknown command /compcat — did you mean /compact?`` (or a pointer to /help)."""
    guess = closest_command(name)
    if guess is not None and guess != name:
        return f"Unknown command /{name} — did you mean /{guess}?"
    return f"Unknown command /{name} — type /help for the list."


def slash_help() -> str:
    """One line per command: usage, then help."""
    width = max(len(u) for u in SLASH_USAGE.values())
    return "\n".join(f"{SLASH_USAGE[n]:<{width}}  {h}" for n, h in SLASH_COMMANDS.items())
