"""``/memory`` (what instruction files the model is given, and from where) and ``/remember``
(a line added to one, shown before it is written; the model is told from the next request),
for every front end through the command layer."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from agent.log.events import ContextMessage
from agent.memory import Scope, find_memory, remember, remembered_line, unwritable
from tui.commands.effects import Confirm, Effect, Said, ShowGauge
from tui.commands.registry import command
from tui.runtime.memory_report import memory_report
from tui.runtime.runtime import Runtime
from tui.text import short_path

USAGE = (
    "Usage: /remember [--user] TEXT: adds TEXT as a line of the project's AGENTS.md "
    "(--user: your own, for every project)."
)
FLAGS = ("--user", "--yes")


@command("/memory", "Show the instruction files (AGENTS.md…) the model is given.")
async def _memory(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield Said(memory_report(find_memory(runtime.session.cwd), runtime.estimator.count))


@command(
    "/remember [--user] <text>",
    "Add a line to the project's AGENTS.md (--user: your own).",
    busy="A line is remembered between turns: wait for this one to finish, or press esc.",
    fill=True,
)
async def _remember(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """Show the line and the file and ask (:class:`~tui.commands.effects.Confirm`); with
    ``--yes`` (what the answer runs) write it and tell the model in a new context message,
    so the request's prefix stays as it was sent."""
    flags, text = _split(args)
    if not text:
        yield Said(USAGE, "warning")
        return
    scope: Scope = "user" if "--user" in flags else "project"
    memory = find_memory(runtime.session.cwd)
    path = memory.target(scope)
    line = remembered_line(text)
    if (why := unwritable(path)) is not None:
        yield Said(f"Nothing was written: {why}.", "error")
        return
    if "--yes" not in flags:
        new = "" if os.path.lexists(path) else " (a new file)"
        user = " --user" if scope == "user" else ""
        yield Confirm(
            f"Add this line to {short_path(str(path))}?",
            f"{line}\n\nto the end of {path}{new}",
            f"/remember --yes{user} {text}",
        )
        return
    try:
        remember(path, text)
    except OSError as exc:
        yield Said(f"Nothing was written: {exc.strerror or exc}.", "error")
        return
    told = _tell_model(runtime, str(path), line)
    when = "from the next request" if told else "from the first request"
    yield Said(f"Added to {short_path(str(path))}: {line} (the model follows it {when}).")
    if told:
        yield ShowGauge()


def _split(args: str) -> tuple[set[str], str]:
    """The flags at the start of ``args`` and the text after them (one line)."""
    words = args.split()
    flags: set[str] = set()
    while words and words[0] in FLAGS:
        flags.add(words.pop(0))
    return flags, " ".join(words)


def _tell_model(runtime: Runtime, path: str, line: str) -> bool:
    """Append the line as a context message when the model was already given the files
    (else the first request reads them, line and all); True when it was appended. The
    messages before it stay byte for byte as sent: nothing earlier is rewritten."""
    session = runtime.session
    if not any(
        isinstance(event := session.events[seq], ContextMessage)
        and event.data.source == "workspace"
        for seq in session.surface
    ):
        return False
    content = f"From now on: {line} (a line the user added to the instructions in {path})"
    session.append("context/message", {"content": content, "source": "memory"})
    return True
