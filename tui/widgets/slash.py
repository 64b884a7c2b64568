"""The app's slash commands (a mixin of :class:`tui.app.ReeflineApp`) and their command
palette entries. ``/compact`` goes through the runtime's consumer tier
(:class:`compact.command.CompactCommand`); nothing here calls a compaction backend.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from textual import work
from textual.app import SystemCommand
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget

from agent.events import FilesRestore
from agent.file_rewind import plan_rewind
from agent.fork import ForkPoint
from agent.store import list_sessions
from tui.commands import (
    SLASH_COMMANDS,
    Said,
    compact_dry_run,
    rewind,
    rewind_points,
    set_approval,
    slash_help,
    switch_model,
    switch_session,
    undo_compaction,
    unknown_command_text,
)
from tui.file_commands import REWIND_CHOICES, last_diff, undo_restore, undoable
from tui.runtime import Runtime
from tui.screens.choice import ChoiceScreen
from tui.screens.context import ContextScreen
from tui.screens.diff import DiffScreen
from tui.screens.rewind import RewindScreen
from tui.screens.sessions import SessionsScreen
from tui.widgets.bridge import RuntimeBridge
from tui.widgets.header import AppHeader
from tui.widgets.prompt import PromptArea
from tui.widgets.status import StatusLine
from tui.widgets.transcript import Transcript

W = TypeVar("W", bound=Widget)


class CommandHost(Protocol):
    """What the slash commands need of the app that mixes them in. The app is one; this
    module never imports the app (no cycle between the two)."""

    runtime: Runtime
    bridge: RuntimeBridge | None
    scripted_delay_s: float
    compact_worker: Any

    @property
    def busy(self) -> bool: ...
    @property
    def transcript(self) -> Transcript: ...
    @property
    def status(self) -> StatusLine: ...
    def part(self, kind: type[W]) -> W: ...
    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
    def exit(self) -> None: ...
    def action_toggle_timeline(self) -> None: ...
    def _update_gauge(self) -> None: ...
    def _main_mounted(self) -> bool: ...
    async def _open(self, runtime: Runtime) -> None: ...
    async def run_slash(self, name: str, args: str = "") -> None: ...
    async def _switch(self, resume: str | None) -> None: ...
    async def _cmd_sessions(self, args: str) -> None: ...
    async def _rewind_to(self, point: ForkPoint, *, files: bool = False) -> None: ...
    async def _adopt(self, old: Runtime, new: Runtime) -> None: ...
    def _compact(self, args: str) -> Any: ...
    def _palette_callback(self, name: str) -> Callable[[], Coroutine[Any, Any, None]]: ...


KEYS_HELP = (
    "enter send · shift+enter / ctrl+j new line · ↑↓ history · / opens the command menu "
    "(↑↓ move, tab or enter take, esc closes) · "
    "pgup/pgdn scroll · esc interrupt · ctrl+c interrupt, twice quits · ctrl+t timeline · "
    "shift+tab from the prompt reaches the timeline rows (↑↓, enter opens a summary) · "
    "ctrl+y copy the last answer · ctrl+p command palette · ctrl+q quit"
)


class SlashCommands:
    """``/name args`` → ``_cmd_name(args)``; unknown names get the closest match."""

    async def run_slash(self: CommandHost, name: str, args: str = "") -> None:
        handler = getattr(self, f"_cmd_{name}", None)
        if name not in SLASH_COMMANDS or handler is None:
            await self.transcript.add_notice(unknown_command_text(name), "warning")
            return
        await handler(args)

    async def _cmd_help(self: CommandHost, args: str) -> None:
        text = Content.assemble(
            ("Commands\n", "bold"), slash_help(), ("\n\nKeys\n", "bold"), KEYS_HELP
        )
        await self.transcript.add_notice(text, "info")

    async def _cmd_compact(self: CommandHost, args: str) -> None:
        if (said := compact_dry_run(self.runtime, args)) is not None:
            await self.transcript.add_notice(said.text, said.level)
            return
        if self.busy:
            await self.transcript.add_notice(
                "Compaction runs between turns: wait for this one to finish or press esc.",
                "warning",
            )
            return
        self.status.set_activity("compacting", detail="manual")
        self.compact_worker = self._compact(args)

    @work(exclusive=True, group="compact")
    async def _compact(self: CommandHost, args: str) -> None:
        runtime = self.runtime
        try:
            await runtime.compact_command.run(runtime.agent.envelope(), args)
        finally:
            if runtime is self.runtime and self._main_mounted():
                self.status.set_activity("idle")
                self._update_gauge()

    async def _cmd_uncompact(self: CommandHost, args: str) -> None:
        if (said := undo_compaction(self.runtime, args)) is not None:
            await self.transcript.add_notice(said.text, said.level)
        self._update_gauge()

    async def _cmd_context(self: CommandHost, args: str) -> None:
        runtime = self.runtime
        await self.push_screen(
            ContextScreen(
                runtime.measure(),
                runtime.threshold_tokens,
                runtime.usage(),
                runtime.sandbox_summary,
            )
        )

    async def _cmd_timeline(self: CommandHost, args: str) -> None:
        self.action_toggle_timeline()

    async def _cmd_new(self: CommandHost, args: str) -> None:
        await self._switch(None)

    async def _cmd_sessions(self: CommandHost, args: str) -> None:
        stored = list_sessions(self.runtime.home)

        async def chosen(session_id: str | None) -> None:
            if session_id:
                await self._switch(session_id)

        await self.push_screen(SessionsScreen(stored, self.runtime.session.id), callback=chosen)

    async def _cmd_resume(self: CommandHost, args: str) -> None:
        if not args:
            await self._cmd_sessions(args)
        else:
            await self._switch(args.split()[0])

    async def _cmd_rewind(self: CommandHost, args: str) -> None:
        if self.busy:
            await self.transcript.add_notice(
                "Wait for the turn to finish (or press esc) before going back.", "warning"
            )
            return
        points = rewind_points(self.runtime)
        undo = undoable(self.runtime)
        if not points and not undo:
            await self.transcript.add_notice("There is no earlier prompt to go back to.", "info")
            return

        async def chosen(point: ForkPoint | FilesRestore | None) -> None:
            if isinstance(point, FilesRestore):
                await self.transcript.add_notice(*await undo_restore(self.runtime, point))
            elif point is not None and plan_rewind(self.runtime.session.events, point.seq):
                at = point

                async def answered(n: int | None) -> None:
                    if n is not None:
                        await self._rewind_to(at, files=n == 1)

                await self.push_screen(ChoiceScreen("Go back with…", REWIND_CHOICES), answered)
            elif point is not None:
                await self._rewind_to(point)

        await self.push_screen(RewindScreen(points, undo), callback=chosen)

    async def _cmd_diff(self: CommandHost, args: str) -> None:
        text = last_diff(self.runtime)
        if text is None:
            await self.transcript.add_notice("No command of this session changed a file.", "info")
        else:
            await self.push_screen(DiffScreen("the last command that changed files", text))

    async def _rewind_to(self: CommandHost, point: ForkPoint, *, files: bool = False) -> None:
        old = self.runtime
        # Said at once: the fork is written and loaded off the event loop, which takes a
        # moment on a long session; the prompt to edit is there meanwhile, read-only so that
        # nothing is sent to the session being left.
        prompt = self.part(PromptArea)
        prompt.load_text(point.prompt)
        prompt.move_cursor(prompt.document.end)
        prompt.focus()
        prompt.read_only = True
        self.status.set_activity("rewinding", detail=f"to before turn {point.turn}")
        try:
            done = await rewind(old, point, files=files, scripted_delay_s=self.scripted_delay_s)
            if isinstance(done, Said):
                await self.transcript.add_notice(done.text, done.level)
                return
            await self._adopt(old, done.runtime)
            await self.transcript.add_notice(done.said.text, done.said.level)
        finally:
            prompt.read_only = False
            if self.status.activity == "rewinding":
                self.status.set_activity("idle")

    async def _cmd_model(self: CommandHost, args: str) -> None:
        said = await switch_model(self.runtime, args)
        runtime = self.runtime
        self.part(AppHeader).show(
            model=runtime.model_name,
            session=runtime.session.id,
            cwd=runtime.session.cwd,
            demo=runtime.is_demo,
        )
        await self.transcript.add_notice(said.text, said.level)
        self._update_gauge()

    async def _cmd_approve(self: CommandHost, args: str) -> None:
        if (said := set_approval(self.runtime, args)) is not None:
            await self.transcript.add_notice(said.text, said.level)

    async def _cmd_quit(self: CommandHost, args: str) -> None:
        self.exit()

    async def _switch(self: CommandHost, resume: str | None) -> None:
        """Open a new session (``resume`` None) or a stored one (see
        :func:`tui.commands.switch_session` for the approval policy each gets)."""
        if self.busy:
            await self.transcript.add_notice(
                "Wait for the turn to finish (or press esc) before switching sessions.", "warning"
            )
            return
        old = self.runtime
        new = await switch_session(old, resume, scripted_delay_s=self.scripted_delay_s)
        if isinstance(new, Said):
            await self.transcript.add_notice(new.text, new.level)
            return
        await self._adopt(old, new)

    async def _adopt(self: CommandHost, old: Runtime, new: Runtime) -> None:
        """Show ``new`` in place of ``old``, which is closed (a switch, a rewind)."""
        if self.bridge is not None:
            self.bridge.detach()
        await old.aclose()
        await self._open(new)

    # --- command palette --------------------------------------------------------------------

    def get_system_commands(self: CommandHost, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, help_text in SLASH_COMMANDS.items():
            yield SystemCommand(f"/{name}", help_text, self._palette_callback(name))

    def _palette_callback(self: CommandHost, name: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            if name in ("model", "approve"):
                prompt = self.part(PromptArea)
                prompt.load_text(f"/{name} ")
                prompt.move_cursor(prompt.document.end)
                prompt.focus()
            else:
                await self.run_slash(name)

        return run
