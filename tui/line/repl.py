"""The plain REPL (``reefline --plain``): the same core and slash commands in line mode.

On a terminal it reads with a prompt-toolkit ``PromptSession`` (slash-command completion,
history shared with the app); when stdin is not a terminal it reads lines from stdin. Tool
calls print as ``$ command`` lines, each reply as text, and every turn ends with a one-line
token gauge. Ctrl+C interrupts a running turn or ``/compact`` (the REPL owns SIGINT for as long
as it runs; no prompt takes it over); Ctrl+D or ``/quit`` leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TextIO, assert_never

from agent.llm.replies import Notice, StreamEvent, ToolOutputDelta
from agent.log.events import Event
from agent.loop_settings import cut_text
from agent.turns import TurnCancelled, TurnResult
from compact.contract.service import CompactNotice
from compact.reports.wording import compaction_news, describe, progress_text, start_line
from tui.commands.effect_lines import effect_lines, gauge_line
from tui.commands.effects import (
    Adopt,
    Choose,
    Confirm,
    EditSummary,
    Effect,
    Printed,
    Quit,
    Rewinding,
)
from tui.commands.registry import COMMANDS
from tui.commands.run import parse_slash, run
from tui.line import plain_question
from tui.line.input import (
    ReadInterrupted,
    ReadLine,
    TypedAhead,
    make_session,
    prompt_reader,
    stream_reader,
    typed_ahead,
)
from tui.line.item_lines import call_lines, live_lines, recap_lines, result_lines
from tui.line.plain_edit import write_diff
from tui.line.summary_editor import edit_summary_in_editor
from tui.line.terminal_state import LEAVE_PROMPT, owning_sigint, restore_terminal, terminal_state
from tui.runtime.relaunch import leaving_words
from tui.runtime.runtime import Runtime
from tui.text import clean, command_lines
from tui.view import items as view_items
from tui.view.fold import Change, LogView
from tui.view.items import Answer, CommandOutcome, RetryPlanned, ToolRun, TurnClosed
from tui.view.workspace import RecordLines

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""The signals that end the REPL (SIGINT interrupts a turn; at a prompt ctrl+c is a key)."""


class PlainRepl:
    """See the module docstring. ``read`` supplies lines; output goes to ``out``."""

    def __init__(
        self,
        runtime: Runtime,
        read: ReadLine,
        out: TextIO,
        *,
        interactive: bool = False,
        ahead: TypedAhead | None = None,
    ) -> None:
        self.runtime = runtime
        self.read = read
        self.ahead = ahead
        """Takes the lines typed before a question was shown (none when not given)."""
        self.out = out
        self.interactive = interactive
        self.view = LogView()
        self._detach: list[Callable[[], object]] = []
        self.terminating = False
        """A termination signal came: leave after the current turn is closed."""
        self.leaving = False
        """``/quit`` ran: leave once the line is handled."""
        self.current_turn: asyncio.Future[TurnResult] | None = None
        self.interruptible: asyncio.Future[Any] | None = None
        """What Ctrl+C stops now: the running turn or ``/compact``."""
        self.idle_interrupt: Callable[[], object] | None = None
        """What SIGINT does with nothing running (None: nothing)."""
        self._live_lines: dict[str, int] = {}
        """Live output lines printed per call."""
        # Prune batches (by first seq) not said yet: each is said once complete (numbered
        # as the timeline numbers it).
        self._prunes: set[int] = set()
        self.hanging_up: asyncio.Future[None] | None = None
        self.tty_before = terminal_state() if interactive else None
        """The terminal's settings before any prompt took it (put back on SIGHUP)."""

    # --- output -------------------------------------------------------------------------------

    def say(self, text: str = "") -> None:
        """Print a line through the one terminal filter (:func:`tui.text.clean`), whatever it
        holds: a model name or a session id from the settings, a server's words. A terminal
        that is gone (SIGHUP, a closed pipe) is not an error the session should hear about:
        this runs inside session observers."""
        try:
            self.out.write(clean(text) + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass

    def _on_event(self, event: Event) -> None:
        fed = self.view.feed(event)
        news = compaction_news(self.view.timeline, event) if fed.timeline else None
        if news is not None:
            kind, record = news
            if kind == "start":
                self.say(f"… compacting ({clean(start_line(record))})")
            elif kind == "progress":
                self.say(f"… compaction {clean(progress_text(record, event.time))}")
            else:
                self.say(f"── {clean(describe(record))} ──")
        for change in fed.changes:
            self._show_item(change)
        self._say_complete_prunes()

    def _say_complete_prunes(self) -> None:
        timeline = self.view.timeline
        for seq in sorted(self._prunes):
            if not timeline.batch_open(seq) and (record := timeline.batch(seq)) is not None:
                self._prunes.discard(seq)
                self.say(f"── {clean(describe(record))} ──")

    def _show_item(self, change: Change) -> None:
        item = change.item
        if isinstance(item, view_items.PruneBatch) and change.new:
            self._prunes.add(item.seq)
        elif isinstance(item, ToolRun):
            lines = call_lines(item) if change.new else []
            if item.result is not None and not item.pruned:
                lines += result_lines(item.result)
            for line in lines:
                self.say(line)
        elif isinstance(item, Answer):
            if item.text.strip():
                self.say(clean(item.text).rstrip())
            if item.cut:
                self.say(f"! {cut_text(None)}")
        elif isinstance(item, RetryPlanned):
            self.say(f"! model request failed ({clean(item.error)}); retrying")
        elif isinstance(item, TurnClosed) and item.stopped:
            error = f" — {clean(item.error)}" if item.error else ""
            self.say(f"! turn ended: {item.reason}{error}")
        elif isinstance(item, CommandOutcome):
            self.say(clean(item.text))

    def _on_notice(self, notice: CompactNotice) -> None:
        self.say(f"! {notice.text}")

    def _on_stream(self, item: StreamEvent) -> None:
        if isinstance(item, Notice):
            self.say(f"! {clean(item.text)}")
        elif isinstance(item, ToolOutputDelta):
            self._live_output(item)

    def _live_output(self, item: ToolOutputDelta) -> None:
        """A running command's output as it comes (:func:`tui.line.item_lines.live_lines`)."""
        shown = self._live_lines.get(item.call_id, 0)
        lines, self._live_lines[item.call_id] = live_lines(item.text, shown)
        for line in lines:
            self.say(line)

    # --- lifecycle ----------------------------------------------------------------------------

    def attach(self, runtime: Runtime) -> None:
        self.detach()
        self.runtime = runtime
        self.view = LogView()
        self.view.feed_all(runtime.session.events)
        if self.interactive:
            runtime.bash.approver = functools.partial(plain_question.ask, self)
        self._detach = [
            runtime.observe(self._on_event, self._on_stream, self._on_notice),
            runtime.observe_workspace(RecordLines(lambda line: self.say(f"… {line}"))),
        ]

    def detach(self) -> None:
        while self._detach:
            self._detach.pop()()

    def show_command(self, command: str, indent: str = "  ") -> None:
        """Every line of ``command``, written out (:func:`tui.text.command_lines`)."""
        for line in command_lines(command, indent):
            self.say(line)

    def say_diff(self, diff: str) -> None:
        """An edit's diff, every line, coloured on a terminal (:mod:`tui.line.plain_edit`)."""
        write_diff(self.out, diff)

    async def run(self) -> int:
        """Read and handle lines until ``/quit`` or the end of input; returns the exit code."""
        with owning_sigint(asyncio.get_running_loop(), self._on_sigint):
            try:
                self.attach(self.runtime)
                runtime = self.runtime
                label = " (offline demo model)" if runtime.is_demo else ""
                self.say(f"reefline · {runtime.model_name}{label} · session {runtime.session.id}")
                for notice in runtime.notices:
                    self.say(f"! {notice}")
                for entry in recap_lines(self.view.items):  # where the session stood
                    self.say(entry)
                self.say(f"Commands run {runtime.sandbox_words}; /context says more.")
                self.say("/help lists the commands; ctrl+d or /quit leaves.")
                while True:
                    try:
                        line = await self.read("› ")
                    except ReadInterrupted:
                        continue
                    if line is None:
                        return 0
                    if not line.strip():
                        continue
                    if not await self.handle(line):
                        return 0
            finally:
                self.detach()

    def _on_sigint(self) -> None:
        """Ctrl+C (SIGINT: the terminal is in line mode while work runs) stops the turn or
        ``/compact``; with nothing running, :attr:`idle_interrupt` (on a pipe: leave)."""
        work = self.interruptible
        if work is not None and not work.done():
            work.cancel()
        elif self.idle_interrupt is not None:
            self.idle_interrupt()

    async def handle(self, line: str) -> bool:
        """Handle one line; False to quit."""
        slash = parse_slash(line)
        if slash is None:
            await self.turn(line)
            return True
        command = COMMANDS.get(slash[0])
        if command is not None and command.background:
            await self._background(*slash)
        else:
            await self._command(*slash)
        return not self.leaving

    async def _command(self, name: str, args: str) -> None:
        async for effect in run(self.runtime, name, args):
            await self.apply(effect)

    async def _background(self, name: str, args: str) -> None:
        """A command that runs a while (``/compact``): Ctrl+C stops it (Esc in the app)."""
        task = asyncio.ensure_future(self._command(name, args))
        self.interruptible = task
        try:
            await task
        except asyncio.CancelledError:
            if self.terminating or not task.cancelled():
                raise
            self.say(f"! interrupted; /{name} stopped")
        finally:
            self.interruptible = None

    async def apply(self, effect: Effect) -> None:
        """Do what a command asks (:mod:`tui.commands.effects`): most are lines to print."""
        if isinstance(effect, Quit):
            self.leaving = True
        elif isinstance(effect, Choose):
            keys = effect.keys or [str(n) for n in range(1, len(effect.answers) + 1)]
            asked = "  ".join(f"[{k}] {a}" for k, a in zip(keys, effect.answers, strict=True))
            try:
                answer = await self.read(f"{effect.question} {asked} › ")
            except ReadInterrupted:
                answer = ""
            await self.handle(effect.commands[effect.pick(answer or "")])
        elif isinstance(effect, Confirm):
            await self.confirm(effect)
        elif isinstance(effect, Adopt):
            old = self.runtime
            self.detach()
            await old.aclose()
            self.attach(effect.runtime)
            self.say(f"Session {effect.runtime.session.id}.")
        elif isinstance(effect, EditSummary):
            await edit_summary_in_editor(self.runtime, effect.summary, effect.number, self.say)
        elif isinstance(effect, Rewinding):
            pass  # the app shows the prompt read-only meanwhile; a line front end just waits
        elif isinstance(effect, Printed):
            for line in effect_lines(effect, self.runtime):
                self.say(line)
        else:
            assert_never(effect)

    async def confirm(self, effect: Confirm) -> None:
        """Show what would be written and ask y/N: only a yes runs it."""
        for line in effect.detail.splitlines():
            self.say(f"  {line}")
        try:
            answer = await self.read(f"{effect.question} [y/N] › ")
        except ReadInterrupted:
            answer = ""
        if (answer or "").strip().lower() in ("y", "yes"):
            await self.handle(effect.command)
        else:
            self.say("Not written.")

    async def hang_up(self) -> None:
        """The terminal is gone: close the running turn, then the log, and leave at once."""
        task = self.current_turn
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 5.0)
        restore_terminal(self.tty_before, LEAVE_PROMPT)  # when a prompt had it raw
        with contextlib.suppress(Exception):
            self.runtime.close()
        os._exit(128 + signal.SIGHUP)

    async def turn(self, prompt: str) -> None:
        runtime = self.runtime
        task = asyncio.ensure_future(runtime.agent.run_turn(prompt))
        self.current_turn = self.interruptible = task
        try:
            await task
        except TurnCancelled:
            self.say("! interrupted; the turn was closed")
            if self.terminating:
                raise asyncio.CancelledError from None
        except OSError as exc:
            # A full disk, say: the session stays usable once the log can be written again.
            self.say(
                f"! cannot write the session log: {clean(str(exc))}. Free some space and send "
                "your message again; nothing already saved is lost."
            )
        finally:
            self.interruptible = None
        # The person reads the answer and types the next line: compaction may use that.
        await runtime.pause_began()
        self.say(gauge_line(self.runtime))


async def run_repl(
    runtime: Runtime, *, stdin: TextIO | None = None, out: TextIO | None = None
) -> int:
    """Run the REPL on ``runtime`` (closed on return); see the module docstring."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    interactive = stdin.isatty()
    if interactive:
        session = make_session(runtime.home)
        read, ahead = prompt_reader(session), lambda: typed_ahead(session)
    else:
        read, ahead = stream_reader(stdin), None
    repl = PlainRepl(runtime, read, out, interactive=interactive, ahead=ahead)
    main = asyncio.ensure_future(repl.run())

    ended_by: list[int] = []

    def terminate(sig: int) -> None:
        # SIGTERM, SIGQUIT, or SIGHUP when the terminal closes (or SIGINT with nothing
        # running, lines from a pipe): close the turn as Ctrl+C does (the bash group is
        # killed, the log closes the turn), then leave; a prompt that is cancelled puts the
        # terminal back itself.
        repl.terminating = True
        ended_by.append(sig)
        if sig == signal.SIGHUP:
            # The terminal may be gone (writing to it the usual way can wedge the exit).
            repl.hanging_up = asyncio.ensure_future(repl.hang_up())
        else:
            main.cancel()

    if not interactive:
        repl.idle_interrupt = lambda: terminate(signal.SIGINT)
    loop = asyncio.get_running_loop()
    for sig in ENDING_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, terminate, sig)
    try:
        return await main
    except asyncio.CancelledError:
        return 128 + (ended_by[0] if ended_by else signal.SIGTERM)
    finally:
        for sig in ENDING_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        await repl.runtime.aclose()
        if (words := leaving_words(repl.runtime.session)) is not None:
            repl.say(words)
