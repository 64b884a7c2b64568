"""``/summary [edit]`` and ``/compact --edit``: show or correct the newest checkpoint's
summary (:mod:`compact.commands.summary_edit` does the work; a front end opens the editor
the :class:`~tui.commands.effects.EditSummary` effect asks for and hands the text to
:func:`save_summary`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from compact.commands.summary_edit import EditOutcome, edit_summary, newest_checkpoint
from tui.commands.effects import EditSummary, Effect, Said
from tui.runtime.runtime import Runtime

USAGE = "Usage: /summary [edit] — show the newest checkpoint's summary, or edit it."
EDIT_BUSY = "A summary is edited between turns: wait for this one to finish or press esc."


async def summary_command(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """``/summary``: the newest checkpoint's summary; ``/summary edit``: an editor on it."""
    arg = args.strip()
    if arg not in ("", "edit"):
        yield Said(USAGE, "warning")
        return
    point = newest_checkpoint(runtime.session)
    if isinstance(point, str):
        yield Said(point, "warning")
    elif arg == "edit":
        async for effect in edit_effects(runtime):
            yield effect
    else:
        yield Said(f"Summary of compaction #{point.record.number}:\n\n{point.summary}")


async def edit_effects(runtime: Runtime) -> AsyncIterator[Effect]:
    """The editor on the newest checkpoint, or why there is none to edit now."""
    if runtime.busy:
        yield Said(EDIT_BUSY, "warning")
        return
    point = newest_checkpoint(runtime.session)
    if isinstance(point, str):
        yield Said(point, "warning")
        return
    yield EditSummary(point.summary, point.record.number)


def save_summary(runtime: Runtime, text: str) -> EditOutcome:
    """Save ``text`` as the newest checkpoint's summary (logged; the outcome is said by the
    log's ``command/done`` in every front end)."""
    return edit_summary(runtime.session, runtime.meter, runtime.agent.envelope(), text)
