"""``/rename NAME``: name the session, so that ``--resume NAME`` and every listing find it
(:mod:`agent.log.names`: the name is an event of the log, the newest one counts)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent.log.keeping import prompted
from agent.log.names import BadName, name_of, rename
from tui.commands.effects import Effect, Said
from tui.commands.registry import command
from tui.runtime.relaunch import resume_command
from tui.runtime.runtime import Runtime


@command("/rename <name>", "Name this session: --resume NAME and /resume find it by name.")
async def _rename(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    session = runtime.session
    if not args.strip():
        name = name_of(session.events)
        yield Said(
            f"This session is named {name!r}. /rename NAME renames it."
            if name
            else "This session has no name: /rename NAME gives it one."
        )
        return
    try:
        name = rename(session, args)
    except BadName as exc:
        yield Said(f"Not renamed: {exc}.", "warning")
        return
    except OSError as exc:
        yield Said(f"Not renamed: the session log cannot be written: {exc}", "error")
        return
    kept = "" if prompted(session.events) else " (kept once a prompt is sent)"
    yield Said(f"Session named {name!r}{kept}: {resume_command(name)} goes on with it.")
