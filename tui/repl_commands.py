"""The plain REPL's slash commands (a mixin of :class:`tui.repl.PlainRepl`): each renders, as
lines, what the one command layer (:mod:`tui.commands`) or the runtime answers."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from agent.file_rewind import plan_rewind
from agent.store import first_prompt, list_sessions
from compact.timeline import timeline
from compact.wording import describe
from tui.commands import (
    Said,
    compact_dry_run,
    rewind,
    rewind_points,
    set_approval,
    slash_help,
    switch_model,
    switch_session,
    undo_compaction,
)
from tui.file_commands import last_diff, undo_restore, undoable
from tui.gauge_reading import breakdown_rows
from tui.runtime import Runtime
from tui.text import clean, first_line


class ReplHost(Protocol):
    """What the commands need of the REPL that mixes them in."""

    runtime: Runtime

    def say(self, text: str = "") -> None: ...
    def gauge_line(self) -> str: ...
    def attach(self, runtime: Runtime) -> None: ...
    def detach(self) -> None: ...
    def cmd_sessions(self, args: str) -> Awaitable[None]: ...
    def _switch(self, resume: str | None) -> Awaitable[None]: ...
    def _show(self, said: Said) -> None: ...
    def _adopt(self, old: Runtime, new: Runtime) -> Awaitable[None]: ...
    def read(self, prompt: str) -> Awaitable[str | None]: ...


class ReplCommands:
    """``cmd_<name>(args)`` for each slash command the REPL handles (``/quit`` is its own)."""

    async def cmd_help(self: ReplHost, args: str) -> None:
        self.say(slash_help())

    async def cmd_compact(self: ReplHost, args: str) -> None:
        if (said := compact_dry_run(self.runtime, args)) is not None:
            self._show(said)
            return
        await self.runtime.compact_command.run(self.runtime.agent.envelope(), args)
        self.say(self.gauge_line())

    async def cmd_uncompact(self: ReplHost, args: str) -> None:
        if (said := undo_compaction(self.runtime, args)) is not None:
            self._show(said)
        self.say(self.gauge_line())

    async def cmd_context(self: ReplHost, args: str) -> None:
        measurement = self.runtime.measure()
        self.say(self.gauge_line())
        for label, tokens, share in breakdown_rows(measurement):
            self.say(f"  {label:<15} {tokens:>8,}  {100 * share:3.0f}%")
        window = self.runtime.windows.current
        how = f" ({window.detail})" if window.detail else ""
        self.say(f"  {window.label()}{how}")
        self.say(f"  sandbox: {self.runtime.sandbox_summary}")
        self.say("  session totals (provider-reported):")
        for label, value in self.runtime.usage().rows():
            self.say(f"    {label:<8} {value}")

    async def cmd_timeline(self: ReplHost, args: str) -> None:
        records = timeline(self.runtime.session.events)
        if not records:
            self.say("No compactions yet.")
        for record in records:
            self.say(describe(record))

    async def cmd_sessions(self: ReplHost, args: str) -> None:
        for stored in list_sessions(self.runtime.home):
            mark = "  (this session)" if stored.id == self.runtime.session.id else ""
            first = first_line(first_prompt(stored.path).listed, 60)
            self.say(f"{stored.id}{mark}  {first}")
        self.say("/resume <id> continues one.")

    async def cmd_new(self: ReplHost, args: str) -> None:
        await self._switch(None)

    async def cmd_resume(self: ReplHost, args: str) -> None:
        if not args:
            await self.cmd_sessions(args)
        else:
            await self._switch(args.split()[0])

    async def cmd_model(self: ReplHost, args: str) -> None:
        self._show(await switch_model(self.runtime, args))

    async def cmd_approve(self: ReplHost, args: str) -> None:
        if (said := set_approval(self.runtime, args)) is not None:
            self._show(said)

    async def cmd_rewind(self: ReplHost, args: str) -> None:
        points = rewind_points(self.runtime)
        undo = undoable(self.runtime)
        if not points and not undo:
            self.say("There is no earlier prompt to go back to.")
            return
        words = args.split()
        if not words:
            for n, point in enumerate(points, 1):
                self.say(f"  {n:>3}. turn {point.turn}: {first_line(point.prompt, 70)}")
            for n, done in enumerate(undo, 1):
                count = len(done.data.restored)
                self.say(f"  u{n:>2}. undo the file restore at seq {done.seq} ({count} files)")
            self.say("/rewind N goes back to just before prompt N (a new session; this one stays).")
            return
        choice = words[0]
        if choice.startswith("u") and choice[1:].isdigit() and 1 <= int(choice[1:]) <= len(undo):
            self._show(Said(*await undo_restore(self.runtime, undo[int(choice[1:]) - 1])))
            return
        if not choice.isdigit() or not 1 <= int(choice) <= len(points):
            self.say(f"! Usage: /rewind N, with N from 1 to {len(points)} (/rewind lists them).")
            return
        point = points[int(choice) - 1]
        files = words[1:2] == ["files"]
        if len(words) == 1 and plan_rewind(self.runtime.session.events, point.seq):
            answer = await self.read("[c] conversation only  [f] conversation and files › ")
            files = (answer or "").strip().lower() in ("f", "files")
        old = self.runtime
        done = await rewind(old, point, files=files)
        if isinstance(done, Said):
            self._show(done)
            return
        await self._adopt(old, done.runtime)
        self.say(done.said.text.replace("in the input to edit and send", "below"))
        self.say(clean(done.prompt))

    async def cmd_diff(self: ReplHost, args: str) -> None:
        text = last_diff(self.runtime)
        self.say("No command of this session changed a file." if text is None else clean(text))

    async def _switch(self: ReplHost, resume: str | None) -> None:
        old = self.runtime
        new = await switch_session(old, resume)
        if isinstance(new, Said):
            self._show(new)
            return
        await self._adopt(old, new)
        self.say(f"Session {new.session.id}.")

    async def _adopt(self: ReplHost, old: Runtime, new: Runtime) -> None:
        """Go on with ``new`` in place of ``old``, which is closed (a switch, a rewind)."""
        self.detach()
        await old.aclose()
        self.attach(new)

    def _show(self: ReplHost, said: Said) -> None:
        self.say(said.text if said.level == "info" else f"! {said.text}")
