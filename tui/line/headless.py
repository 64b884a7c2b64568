"""Headless front end: ``reefline -p "task"`` runs one turn and prints the answer.

stdout carries the answer (or, with ``--json``, every event of this run as a JSON line);
everything meant for a person — notices, retries, compactions as they run, denied commands,
errors — goes to stderr.
Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted (SIGINT, Ctrl+C), 143 terminated
(SIGTERM), 129 hung up (SIGHUP): 128 + the signal, as a shell reports a process it killed;
141 stdout closed (``| head``: the run stops, its turn closed, and nothing is printed).
Each signal closes the turn the same way (the session is saved).

A prompt that is a slash command (``-p /context``) runs it through the one command layer
(:func:`tui.commands.run.run`) instead of a turn, and prints what it shows; a command that opens
another session (``/rewind 2``) leaves it saved and says its id.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TextIO, assert_never

from agent.loop_settings import cut_text
from agent.turns import TurnCancelled, TurnResult
from compact.contract.policy import CompactionSettings
from tui.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from tui.line.event_printer import EventPrinter
from tui.runtime.relaunch import resume_command
from tui.runtime.runtime import Runtime
from tui.text import clean
from tui.view.workspace import RecordLines


async def run_prompt(
    runtime: Runtime,
    prompt: str,
    *,
    json_mode: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one turn for ``prompt``; return the process exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    if prompt.lstrip().startswith("/"):  # maybe a command: only then load the command set
        from tui.commands.registry import parse_slash

        if (slash := parse_slash(prompt)) is not None:
            return await run_command(runtime, *slash, out=out, err=err)
    printer = EventPrinter(runtime, json_mode=json_mode, out=out, err=err)
    for notice in runtime.notices:
        printer.say(f"reefline: {notice}")
    printer.start()
    if printer.stdout_closed:
        raise BrokenPipeError("stdout was closed")  # nobody reads the run: do not start it
    detach = runtime.observe(
        printer, printer.stream, lambda notice: printer.say(f"reefline: {notice.text}")
    )
    say = RecordLines(lambda line: printer.say(f"reefline: {line}"))
    stop_workspace = runtime.observe_workspace(say)  # the first snapshot, while it runs
    task = asyncio.ensure_future(runtime.agent.run_turn(prompt))
    printer.on_stdout_closed = task.cancel  # nobody reads the run any more: stop it
    # A quarter of a summary call's time budget: a stalled call is reported a few times.
    budget = CompactionSettings.model_validate(runtime.settings.compaction).summary_timeout_s
    beat = asyncio.ensure_future(printer.heartbeat(budget / 4))
    loop = asyncio.get_running_loop()
    with _cancel_on(loop, task, signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as stop:
        try:
            result: TurnResult = await task
        except TurnCancelled:
            if printer.stdout_closed:
                raise BrokenPipeError("stdout was closed") from None
            printer.say("reefline: interrupted; the turn was closed and the session saved")
            return EXIT_INTERRUPTED if stop.received is None else 128 + stop.received
        finally:
            beat.cancel()
            detach()
            stop_workspace()
    if not json_mode and result.text:
        out.write(clean(result.text.rstrip("\n")) + "\n")
        out.flush()
    if result.reason == "completed" and result.cut_at is None:
        return EXIT_OK
    if result.cut_at is not None:
        printer.say(f"reefline: {cut_text(result.cut_at)}")
        printer.say(f"reefline: session {runtime.session.id} saved; continue it with --continue")
        return EXIT_ERROR
    printer.say(f"reefline: {result.error or result.reason}")
    printer.say(f"reefline: session {runtime.session.id} saved; continue it with --continue")
    return EXIT_ERROR


async def run_command(runtime: Runtime, name: str, args: str, *, out: TextIO, err: TextIO) -> int:
    """``-p /name args``: run the command and print its effects (warnings and errors on
    stderr); 2 for an unknown command, 1 when it says something went wrong."""
    # The command set loads every command's module: only a run that names one pays for it
    # (a prompt's run goes to its first request without them).
    from tui.commands.effect_lines import effect_lines
    from tui.commands.effects import (
        Adopt,
        Choose,
        Confirm,
        EditSummary,
        Printed,
        Quit,
        Rewinding,
        Said,
    )
    from tui.commands.registry import parse_slash
    from tui.commands.run import COMMANDS, run, unknown_command_text

    if name not in COMMANDS:
        err.write(f"reefline: {clean(unknown_command_text(name))}\n")
        return EXIT_USAGE
    code = EXIT_OK
    async for effect in run(runtime, name, args):
        if isinstance(effect, Adopt):  # nothing goes on here: it is saved, for later
            new = effect.runtime
            await new.aclose()  # an untouched session (/new) is discarded: nothing to go on with
            if new.session.path.exists():
                kept = (
                    f"Session {new.session.id}: continue it with {resume_command(new.session.id)}"
                )
                out.write(clean(kept) + "\n")
        elif isinstance(effect, Choose):  # nobody to ask: the first answer, and how to say another
            others = ", ".join(effect.commands[1:])
            out.write(clean(f"{effect.question} {effect.answers[0]} (or: {others})") + "\n")
            if (slash := parse_slash(effect.commands[0])) is not None:
                code = max(code, await run_command(runtime, *slash, out=out, err=err))
        elif isinstance(effect, Confirm):  # nobody to ask: the command line is the consent
            for line in effect.detail.splitlines():
                err.write(f"reefline: {clean(line)}\n" if line else "")
            if (slash := parse_slash(effect.command)) is not None:
                code = max(code, await run_command(runtime, *slash, out=err, err=err))
        elif isinstance(effect, Said) and effect.level != "info":
            err.write(f"reefline: {clean(effect.text)}\n")
            code = EXIT_ERROR
        elif isinstance(effect, Printed):
            for line in effect_lines(effect, runtime):
                out.write(clean(line) + "\n")
        elif isinstance(effect, EditSummary):  # no terminal to edit on
            err.write(
                "reefline: editing the summary needs an editor: run /summary edit in the app "
                "or in --plain (it opens $EDITOR).\n"
            )
            code = EXIT_ERROR
        elif isinstance(effect, Quit | Rewinding):
            pass  # the run ends with its command anyway; the rewind's outcome is said
        else:
            assert_never(effect)
    out.flush()
    return code


class _cancel_on:
    """Cancel ``task`` when one of ``signals`` arrives (restoring the handlers afterwards);
    :attr:`received` is the first that did.

    The handlers run on the event loop, so the turn must yield to it for a signal to be
    seen: long work in it (a prune of thousands of results) awaits between its units."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, task: asyncio.Future[TurnResult], *signals: int
    ) -> None:
        self.loop = loop
        self.task = task
        self.signals = signals
        self.received: int | None = None

    def __enter__(self) -> _cancel_on:
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self.loop.add_signal_handler(sig, self._cancel, sig)
        return self

    def _cancel(self, sig: int) -> None:
        if self.received is None:
            self.received = sig
        self.task.cancel()

    def __exit__(self, *exc: object) -> None:
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self.loop.remove_signal_handler(sig)
