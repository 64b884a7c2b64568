"""Every slash command: its table entry (:func:`~tui.commands.registry.command`) and what it
does, once for every front end. Adding a command is adding a handler here.

A handler acts on the runtime and yields effects (:mod:`tui.commands.effects`): what to say, what to
show, which runtime to go on with. ``/compact`` goes through the runtime's consumer tier
(:class:`compact.commands.compact.CompactCommand`); nothing here calls a compaction backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent.file_rewind import plan_rewind
from agent.log.catalogue import catalogue, here_first
from compact.commands.uncompact import uncompact
from compact.reports.timeline import timeline
from tools.base import POLICIES
from tui.commands.effects import (
    Adopt,
    Choose,
    Effect,
    Help,
    PickRewind,
    PickSession,
    Prompt,
    Quit,
    Rewinding,
    Said,
    ShowContext,
    ShowGauge,
    ToggleTimeline,
)
from tui.commands.export import export_command
from tui.commands.files import REWIND_CHOICES, diff_of, last_changed, undo_restore, undoable
from tui.commands.registry import command, slash_help
from tui.commands.summary import edit_effects, summary_command
from tui.commands.switching import rewind, rewind_points, switch_session
from tui.runtime.compaction_outlook import dry_run_text
from tui.runtime.context_report import ContextReport
from tui.runtime.runtime import Runtime

SWITCH_BUSY = "Wait for the turn to finish (or press esc) before switching sessions."


@command("/help", "List the commands.")
async def _help(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield Help(slash_help())


DRY_RUN = "--dry-run"


@command(
    "/compact [--dry-run] [focus]",
    "Condense older history now; optional focus text steers the summary (--edit: correct it).",
    background=True,
)
async def _compact(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """``--dry-run`` says what ``/compact`` would summarize and keep, and the token figures
    (:mod:`compact.reports.dry_run`), even while a turn runs; a compaction waits for the turn.
    ``--edit`` opens an editor on the newest checkpoint's summary (:mod:`tui.commands.summary`)."""
    if args.split() == ["--edit"]:
        async for effect in edit_effects(runtime):
            yield effect
        return
    if DRY_RUN in args.split():
        yield Said(dry_run_text(runtime))
        return
    if runtime.busy:
        yield Said(
            "Compaction runs between turns: wait for this one to finish or press esc.", "warning"
        )
        return
    await runtime.compact_command.run(runtime.agent.envelope(), args)
    yield ShowGauge()


@command(
    "/uncompact [N]",
    "Undo the newest compaction (or #N): its shadowed history comes back.",
    busy="A compaction is undone between turns: wait, or press esc.",
)
async def _uncompact(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """Undo compaction #N, or the newest one standing
    (:func:`compact.commands.uncompact.uncompact`). What it did or why not is logged
    (``command/done`` says it)."""
    uncompact(runtime.session, runtime.meter, runtime.agent.envelope(), args)
    yield ShowGauge()


command("/summary [edit]", "Show the newest checkpoint's summary; edit corrects it.")(
    summary_command
)


@command("/context", "Show what fills the context window, by category.")
async def _context(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield ShowContext(ContextReport.of(runtime))


@command("/timeline", "Show every compaction and prune of this session.")
async def _timeline(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield ToggleTimeline(tuple(timeline(runtime.session.events)))


@command("/new", "Start a new session.", busy=SWITCH_BUSY)
async def _new(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    async for effect in _switch(runtime, None):
        yield effect


@command("/sessions", "List stored sessions, this folder's first.")
async def _sessions(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield _picker(runtime)


def _picker(runtime: Runtime) -> PickSession:
    """The stored sessions in which a prompt was sent, the session's folder's first."""
    listed = here_first(catalogue(runtime.home), runtime.session.cwd)
    return PickSession(tuple(listed), runtime.session.id, runtime.session.cwd)


@command("/resume <name>", "Continue a stored session by name or id.", busy=SWITCH_BUSY)
async def _resume(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    if not args:
        yield _picker(runtime)
        return
    async for effect in _switch(runtime, " ".join(args.split())):
        yield effect


async def _switch(runtime: Runtime, resume: str | None) -> AsyncIterator[Effect]:
    new = await switch_session(runtime, resume)
    yield new if isinstance(new, Said) else Adopt(new)


@command(
    "/rewind [n]",
    "Go back to before an earlier prompt, files too if asked (esc twice).",
    busy="Wait for the turn to finish (or press esc) before going back.",
)
async def _rewind(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """``/rewind`` offers the prompts (and the file restores to undo); ``/rewind N`` goes back
    to just before prompt N, asking whether to put files back when later commands changed
    some (``/rewind N files`` or ``/rewind N conversation`` says it at once); ``/rewind uN``
    undoes the N-th file restore."""
    points = rewind_points(runtime)
    undo = undoable(runtime)
    if not points and not undo:
        yield Said("There is no earlier prompt to go back to.")
        return
    words = args.split()
    if not words:
        yield PickRewind(tuple(points), tuple(undo))
        return
    choice = words[0]
    if choice.startswith("u") and choice[1:].isdigit() and 1 <= int(choice[1:]) <= len(undo):
        yield Said(*await undo_restore(runtime, undo[int(choice[1:]) - 1]))
        return
    if not choice.isdigit() or not 1 <= int(choice) <= len(points):
        yield Said(
            f"Usage: /rewind N, with N from 1 to {len(points)} (/rewind lists them).", "warning"
        )
        return
    point = points[int(choice) - 1]
    if len(words) == 1 and plan_rewind(runtime.session.events, point.seq):
        modes = ("conversation", "files")
        commands = tuple(f"/rewind {choice} {mode}" for mode in modes)
        yield Choose("Go back with…", REWIND_CHOICES, commands, keys=("c", "f"))
        return
    yield Rewinding(point.turn, point.prompt)
    done = await rewind(runtime, point, files=words[1:2] == ["files"])
    if isinstance(done, Said):
        yield done
        return
    yield Adopt(done.runtime)
    yield done.said
    yield Prompt(done.prompt)


@command("/diff", "Show what the last command that changed files changed.")
async def _diff(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    files = last_changed(runtime)
    if files is None:
        yield Said("No command of this session changed a file.")
    else:
        yield await diff_of(runtime, files, "the last command that changed files")


command("/export [path]", "Write this session's transcript as Markdown, to a new file.")(
    export_command
)


@command("/model <name>", "Switch the model for the next request.", fill=True)
async def _model(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """Show the model, or switch to ``name`` for the next request (its window follows:
    asked of the server once, else the table)."""
    if not args.strip():
        yield Said(f"Model: {runtime.model_label}. /model <name> switches.")
        return
    name = args.split()[0]
    if runtime.is_demo:
        # The scripted model answers whatever is asked for: a new name would be a false label.
        yield Said(
            f"The offline demo model answers here, whatever the name; /model {name} would "
            "change only the label. Connect a real model to switch models (--base-url, or "
            "OPENAI_API_KEY / DEEPSEEK_API_KEY).",
            "warning",
        )
        return
    runtime.switch_model(name)
    await runtime.window_asker.ensure()
    window = runtime.windows.current
    known = window.label() if window.tokens else "window unknown — set --context-window"
    yield Said(f"Model set to {name} for the next request ({known}).")
    yield ShowGauge()


@command("/approve ask|auto|deny", "Set the bash approval policy: ask, auto or deny.", fill=True)
async def _approve(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """Show the policy, or set it (logged, so the log's ``command/done`` says it)."""
    policy = args.strip().lower()
    if not policy:
        yield Said(
            f"Bash approval policy: {runtime.bash.policy}. /approve ask|auto|deny changes it."
        )
    elif policy not in POLICIES:
        yield Said("Usage: /approve ask|auto|deny", "warning")
    else:
        runtime.set_approval(policy)


@command("/quit", "Leave reefline.")
async def _quit(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield Quit()
