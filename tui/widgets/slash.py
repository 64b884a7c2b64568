"""The app's slash commands (a mixin of :class:`tui.app.ReeflineApp`) and their command
palette entries. ``/compact`` goes through the runtime's consumer tier
(:class:`compact.command.CompactCommand`); nothing here calls a compaction backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import SystemCommand
from textual.content import Content
from textual.screen import Screen

from agent.session import Session
from agent.settings import SettingsError
from compact.command import SLASH_COMMANDS, slash_help, unknown_command_text
from tui.screens.context import ContextScreen
from tui.screens.sessions import SessionsScreen
from tui.widgets.header import AppHeader
from tui.widgets.prompt import PromptArea
from tui.wiring import StartupError, build_runtime

if TYPE_CHECKING:
    from tui.app import ReeflineApp

KEYS_HELP = (
    "enter send · shift+enter / ctrl+j new line · ↑↓ history · tab completes a command · "
    "esc interrupt · ctrl+c interrupt, twice quits · ctrl+t timeline · ctrl+y copy the last "
    "answer · ctrl+p command palette · ctrl+q quit"
)


class SlashCommands:
    """``/name args`` → ``_cmd_name(args)``; unknown names get the closest match."""

    async def run_slash(self: ReeflineApp, name: str, args: str = "") -> None:
        handler = getattr(self, f"_cmd_{name}", None)
        if name not in SLASH_COMMANDS or handler is None:
            await self.transcript.add_notice(unknown_command_text(name), "warning")
            return
        await handler(args)

    async def _cmd_help(self: ReeflineApp, args: str) -> None:
        text = Content.assemble(
            ("Commands\n", "bold"), slash_help(), ("\n\nKeys\n", "bold"), KEYS_HELP
        )
        await self.transcript.add_notice(text, "info")

    async def _cmd_compact(self: ReeflineApp, args: str) -> None:
        if self.busy:
            await self.transcript.add_notice(
                "Compaction runs between turns: wait for this one to finish or press esc.",
                "warning",
            )
            return
        self.status.set_activity("compacting", detail="manual")
        self.compact_worker = self._compact(args)

    @work(exclusive=True, group="compact")
    async def _compact(self: ReeflineApp, args: str) -> None:
        runtime = self.runtime
        try:
            await runtime.compact_command.run(runtime.agent.envelope(), args)
        finally:
            if runtime is self.runtime and self._main_mounted():
                self.status.set_activity("idle")
                self._update_gauge()

    async def _cmd_context(self: ReeflineApp, args: str) -> None:
        runtime = self.runtime
        await self.push_screen(
            ContextScreen(
                runtime.meter.measure(), runtime.threshold_tokens, runtime.meter.session_usage
            )
        )

    async def _cmd_timeline(self: ReeflineApp, args: str) -> None:
        self.action_toggle_timeline()

    async def _cmd_new(self: ReeflineApp, args: str) -> None:
        await self._switch(None)

    async def _cmd_sessions(self: ReeflineApp, args: str) -> None:
        stored = Session.list_stored(self.runtime.home)

        async def chosen(session_id: str | None) -> None:
            if session_id:
                await self._switch(session_id)

        await self.push_screen(SessionsScreen(stored, self.runtime.session.id), callback=chosen)

    async def _cmd_resume(self: ReeflineApp, args: str) -> None:
        if not args:
            await self._cmd_sessions(args)
        else:
            await self._switch(args.split()[0])

    async def _cmd_model(self: ReeflineApp, args: str) -> None:
        runtime = self.runtime
        if not args:
            await self.transcript.add_notice(
                f"Model: {runtime.model_label}. /model <name> switches."
            )
            return
        name = args.split()[0]
        runtime.agent.model_name = runtime.model_name = name  # the window follows the model
        await runtime.window_asker.ensure()
        window = runtime.windows.current
        self.part(AppHeader).show(
            model=runtime.model_name,
            session=runtime.session.id,
            cwd=runtime.session.cwd,
            demo=runtime.is_demo,
        )
        known = window.label() if window.tokens else "window unknown — set --context-window"
        await self.transcript.add_notice(f"Model set to {name} for the next request ({known}).")
        self._update_gauge()

    async def _cmd_approve(self: ReeflineApp, args: str) -> None:
        bash = self.runtime.bash
        policy = args.strip().lower()
        if policy in ("ask", "auto", "deny"):
            self.runtime.set_approval(policy)  # type: ignore[arg-type]  # logged: shown from the log
        elif not policy:
            await self.transcript.add_notice(
                f"Bash approval policy: {bash.policy}. /approve ask|auto|deny changes it."
            )
        else:
            await self.transcript.add_notice("Usage: /approve ask|auto|deny", "warning")

    async def _cmd_quit(self: ReeflineApp, args: str) -> None:
        self.exit()

    async def _switch(self: ReeflineApp, resume: str | None) -> None:
        """Open a new session (``resume`` None) or a stored one, keeping the policy."""
        old = self.runtime
        if self.busy:
            await self.transcript.add_notice(
                "Wait for the turn to finish (or press esc) before switching sessions.", "warning"
            )
            return
        if resume == old.session.id:
            await self.transcript.add_notice(f"Already in session {resume}.")
            return
        try:
            # Off the event loop: loading a long session (and pricing every message of it)
            # must not freeze the screen.
            new = await asyncio.to_thread(
                build_runtime,
                old.settings,
                resume=resume,
                default_approve=old.bash.policy,
                cwd=Path(old.session.cwd) if Path(old.session.cwd).is_dir() else None,
                scripted_delay_s=self.scripted_delay_s,
            )
        except (StartupError, SettingsError, OSError) as exc:
            await self.transcript.add_notice(str(exc), "error")
            return
        new.bash.policy = old.bash.policy
        if self.bridge is not None:
            self.bridge.detach()
        old.close()
        await self._open(new)

    # --- command palette --------------------------------------------------------------------

    def get_system_commands(self: ReeflineApp, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, help_text in SLASH_COMMANDS.items():
            yield SystemCommand(f"/{name}", help_text, self._palette_callback(name))

    def _palette_callback(self: ReeflineApp, name: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            if name in ("model", "approve"):
                prompt = self.part(PromptArea)
                prompt.load_text(f"/{name} ")
                prompt.move_cursor(prompt.document.end)
                prompt.focus()
            else:
                await self.run_slash(name)

        return run
