"""The Textual app: it holds the runtime, runs turns and slash commands, and routes what they
ask for to the main screen (:class:`~tui.screens.main.MainScreen`), which owns the widgets.

The app observes the core and never drives compaction itself: session events, stream deltas
and compaction notices arrive as Textual messages through :class:`RuntimeBridge`, in order
with the app's own (a turn's worker ending), and go on to the main screen. A turn runs in
one exclusive worker that Esc cancels (:class:`~tui.app.sending.Sender`); a slash command runs
through the one command layer (:func:`tui.commands.run.run`) and :meth:`ReeflineApp.apply` does
what it asks.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, ClassVar, assert_never

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.worker import Worker

from compact.commands.summary_edit import keep_draft
from tui import heap
from tui.app.approver import ModalApprover
from tui.app.bridge import (
    CompactionNoticed,
    RuntimeBridge,
    SessionEventAppended,
    StreamItemReceived,
)
from tui.app.sending import Sender
from tui.app.shutdown import shut_down, watch_signals
from tui.app.theme_memory import ThemeMemory
from tui.commands.effects import (
    Adopt,
    Choose,
    Confirm,
    EditSummary,
    Effect,
    PickRewind,
    PickSession,
    Quit,
    Shown,
)
from tui.commands.run import COMMANDS, SLASH_COMMANDS, parse_slash, run
from tui.commands.summary import save_summary
from tui.completion import choices
from tui.history import PromptHistory, history_path
from tui.line.terminal_state import terminal_state
from tui.runtime.relaunch import leaving_words
from tui.runtime.runtime import Runtime
from tui.screens.choice import ChoiceScreen
from tui.screens.main import MainScreen
from tui.screens.rewind import RewindScreen
from tui.screens.sessions import SessionsScreen
from tui.screens.summary_editor import SummaryEditorScreen
from tui.text import clean
from tui.widgets.prompt import PromptSubmitted, PromptTabbed
from tui.widgets.timeline import SummaryEditRequested, TimelineUndoRequested

QUIT_WINDOW_S = 3.0
"""A second Ctrl+C within this many seconds quits."""
REWIND_WINDOW_S = 1.0
"""A second Esc within this many seconds, idle with an empty prompt, opens /rewind."""


class ReeflineApp(App[None]):
    """See the module docstring. ``runtime`` is built by the caller (see ``tui.shell.cli``);
    ``scripted_delay_s``: the demo model's delay in the runtimes the app opens."""

    # See app.tcss. Textual types these as instance variables (a ClassVar here would not
    # type-check against App); never mutated.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (100, "-roomy")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-short"), (12, "-tall")]  # noqa: RUF012

    CSS_PATH = "app.tcss"
    TITLE = "reefline"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "interrupt"),
        Binding("ctrl+t", "toggle_timeline", "timeline"),
        Binding("ctrl+q", "quit", "quit"),
        # Priority: the prompt (a TextArea) binds these to copy and redo.
        Binding("ctrl+c", "ctrl_c", "interrupt", show=False, priority=True),
        Binding("ctrl+y", "copy_answer", "copy answer", priority=True),
        Binding("pageup", "page(-1)", "scroll up", show=False, priority=True),
        Binding("pagedown", "page(1)", "scroll down", show=False, priority=True),
    ]

    def __init__(self, runtime: Runtime, *, scripted_delay_s: float = 0.02) -> None:
        super().__init__()
        runtime.scripted_delay_s = scripted_delay_s
        self.runtime = runtime
        self.bridge: RuntimeBridge | None = None
        self.history = PromptHistory(history_path(runtime.home))
        self.main = MainScreen(self.history, lambda text: choices(text, self.runtime))
        self.approver = ModalApprover(self.main)
        self.compact_worker: Worker[None] | None = None
        """The slash command running in the background (``/compact``)."""
        self.sender = Sender(self, self.main, lambda: self.runtime, self._compacting)
        self._terminating = False
        self._tty_before = terminal_state()
        """The terminal's settings before the app took it (restored on SIGHUP)."""
        self._last_ctrl_c = self._last_esc = 0.0

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def _compacting(self) -> bool:
        return self.compact_worker is not None and not self.compact_worker.is_finished

    @property
    def busy(self) -> bool:
        """A turn or a ``/compact`` is in flight."""
        return self.sender.running or self._compacting()

    # --- the session --------------------------------------------------------------------------

    async def on_mount(self) -> None:
        await AwaitMount(self.main, [self.main])  # it composes on its own loop
        self.main.fit_timeline(self.size.width)
        self.set_interval(0.25, self.main.tick)
        watch_signals(self._terminate)
        ThemeMemory(self, self.runtime.settings.theme).start()
        await self._open(self.runtime)

    async def on_event(self, event: events.Event) -> None:
        if (
            isinstance(event, events.Key)
            and self.screen_stack
            and not event.is_forwarded
            and self.main.keys_to_prompt(event)  # before the focused widget gets it
        ):
            return
        await super().on_event(event)

    def on_resize(self, event: events.Resize) -> None:
        # The event's size, not ``self.size``: that may still be the size before the change,
        # which left the panel of a wide terminal on a shrunk one.
        self.main.fit_timeline(event.size.width)

    async def _open(self, runtime: Runtime) -> None:
        """Observe ``runtime`` and show its session."""
        first = self.bridge is None
        self.runtime = runtime
        runtime.bash.approver = self.approver
        self.bridge = RuntimeBridge(runtime, self)
        self.bridge.attach()
        await self.main.show(runtime, first=first)
        if first:  # and so does its first screen, once it is up
            heap.settle_soon()
            self.set_timer(heap.SETTLE_S, self._settle)
        self.run_worker(self._ask_window(runtime), group="window")

    def _settle(self) -> None:
        """Freeze the first screen once the app is idle: not what a turn has in flight."""
        if self.busy:
            self.set_timer(heap.SETTLE_S, self._settle)
        else:
            heap.settle()

    async def _ask_window(self, runtime: Runtime) -> None:
        """Ask the server its window while the first screen is up (the first step would
        ask anyway), so the gauge is right before anything is sent."""
        if await runtime.window_asker.ensure() and runtime is self.runtime:
            self.main.refresh_gauge()

    async def on_session_event_appended(self, message: SessionEventAppended) -> None:
        await self.main.show_event(message.event)

    async def on_stream_item_received(self, message: StreamItemReceived) -> None:
        await self.main.show_stream(message.item)

    async def on_compaction_noticed(self, message: CompactionNoticed) -> None:
        await self.main.show_notice(message.notice)

    async def on_summary_edit_requested(self, message: SummaryEditRequested) -> None:
        """``e`` in the summary modal: ``/summary edit``."""
        await self.run_slash("summary", "edit")

    async def on_timeline_undo_requested(self, message: TimelineUndoRequested) -> None:
        """``u`` on a timeline row or in the summary modal: ``/uncompact N``."""
        await self.run_slash("uncompact", str(message.number))

    # --- sending ------------------------------------------------------------------------------

    def on_prompt_tabbed(self, message: PromptTabbed) -> None:
        """Tab from the prompt goes to the newest entry that takes focus (a card's output, a
        marker), where the person just was; with none, on as Tab goes."""
        if not self.main.transcript.focus_newest():
            self.action_focus_next()

    async def on_prompt_submitted(self, message: PromptSubmitted) -> None:
        self.main.transcript.follow()  # what is sent, and what answers it, is in view
        slash = parse_slash(message.text)
        if slash is not None:
            await self.run_slash(*slash)
        else:
            self.sender.send(message.text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.sender.finished(event.worker)

    # --- slash commands -----------------------------------------------------------------------

    async def run_slash(self, name: str, args: str = "") -> None:
        """Run ``/name args`` (:func:`tui.commands.run.run`); one that runs a while (``/compact``)
        runs in the background, where Esc stops it."""
        command = COMMANDS.get(name)
        if command is not None and command.background and not self._compacting():
            self.compact_worker = self.run_worker(
                self._command(name, args), group="compact", exclusive=True
            )
        else:
            await self._command(name, args)

    async def _command(self, name: str, args: str) -> None:
        try:
            async for effect in run(self.runtime, name, args):
                await self.apply(effect)
        finally:
            if self.main.live:
                self.main.command_ended()

    async def apply(self, effect: Effect) -> None:
        """Do what a command asks (:mod:`tui.commands.effects`), the app's way: what leads to
        another command or another session is decided here, what is only shown the screen shows."""
        main = self.main
        if not main.live:
            return
        if isinstance(effect, PickSession):
            screen: Screen[Any] = SessionsScreen(list(effect.sessions), effect.current)
            await self.push_screen(screen, self._runs(lambda id: f"/resume {id}"))
        elif isinstance(effect, PickRewind):
            screen = RewindScreen(effect.points, effect.undo)
            await self.push_screen(screen, self._runs(effect.command_for))
        elif isinstance(effect, Choose):
            screen = ChoiceScreen(effect.question, effect.answers)
            await self.push_screen(screen, self._runs(lambda n: effect.commands[n]))
        elif isinstance(effect, Confirm):
            command = effect.command
            screen = ChoiceScreen(
                effect.question, ("Yes (y)", "No (n)"), detail=effect.detail, keys=("y", "n")
            )
            await self.push_screen(screen, self._runs(lambda n: command if n == 0 else ""))
        elif isinstance(effect, Adopt):
            if self.bridge is not None:
                self.bridge.detach()
            await self.runtime.aclose()
            await self._open(effect.runtime)
        elif isinstance(effect, EditSummary):
            runtime = self.runtime
            editor = SummaryEditorScreen(
                effect.summary,
                effect.number,
                lambda text: save_summary(runtime, text),
                lambda text: keep_draft(runtime.session, text),
            )
            await self.push_screen(editor, self._refocus)
        elif isinstance(effect, Quit):
            self.exit()
        elif isinstance(effect, Shown):
            await main.show_effect(effect)
        else:
            assert_never(effect)

    def _refocus(self, _: object) -> None:
        """A modal closed: the keys go back to the prompt."""
        if self.main.live:
            self.main.prompt.focus()

    def _runs(self, line: Callable[[Any], str]) -> Callable[[Any], Awaitable[None]]:
        """A modal's callback: run the command line its answer stands for (None or an empty
        answer: the modal was closed, nothing runs)."""

        async def run_line(answer: Any) -> None:
            if answer not in (None, "") and (slash := parse_slash(line(answer))) is not None:
                await self.run_slash(*slash)

        return run_line

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, help_text in SLASH_COMMANDS.items():
            yield SystemCommand(f"/{name}", help_text, self._palette_callback(name))

    def _palette_callback(self, name: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run_it() -> None:
            if COMMANDS[name].fill:  # it takes an argument: typed in the prompt
                self.main.prompt.put(f"/{name} ")
            else:
                await self.run_slash(name)

        return run_it

    # --- keys ---------------------------------------------------------------------------------

    def action_interrupt(self) -> None:
        """Esc: cancel the running turn or /compact (the loop closes the turn), and give the
        focus back to the prompt. Idle, with nothing typed, Esc twice opens /rewind."""
        refocused = not self.main.prompt_has_focus()
        running = False
        for worker in (self.sender.worker, self.compact_worker):
            if worker is not None and not worker.is_finished:
                worker.cancel()
                running = True
        now = time.monotonic()
        if running or refocused or (self.main.live and self.main.prompt.text.strip()):
            self._last_esc = 0.0
        elif now - self._last_esc < REWIND_WINDOW_S:
            self._last_esc = 0.0
            self.run_worker(self.run_slash("rewind"), group="rewind")
        else:
            self._last_esc = now

    def action_ctrl_c(self) -> None:
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.notify("Copied the selection.")
            return
        now = time.monotonic()
        if self.busy:
            self.action_interrupt()
            self._last_ctrl_c = now
        elif now - self._last_ctrl_c < QUIT_WINDOW_S:
            self.exit()
        else:
            self._last_ctrl_c = now
            self.notify("Press ctrl+c again to quit.", timeout=QUIT_WINDOW_S)

    def action_toggle_timeline(self) -> None:
        self.main.toggle_timeline()

    def action_copy_answer(self) -> None:
        answer = self.main.transcript.last_answer
        if answer:
            self.copy_to_clipboard(answer)
            self.notify("Copied the last answer to the clipboard.")
        else:
            self.notify("There is no answer to copy yet.", severity="warning")

    def action_page(self, direction: int) -> None:
        """PageUp / PageDown scroll the transcript, wherever the focus is."""
        self.main.page(direction)

    # --- ending -------------------------------------------------------------------------------

    def _terminate(self, sig: int) -> None:
        if not self._terminating:
            self._terminating = True
            self.run_worker(self._shut_down(sig), group="shutdown")

    async def _shut_down(self, sig: int) -> None:
        workers = (self.sender.worker, self.compact_worker)
        self.exit(return_code=await shut_down(sig, workers, self.runtime, self._tty_before))

    def _fatal_error(self) -> None:
        """Exit after an unhandled exception with a traceback that shows no local variables:
        Textual's report prints every frame's locals, which hold what must not reach a screen
        (a client with the API key, the user's text, a model's output). A private hook of
        Textual's, the one place that report is built."""
        from rich.segment import Segments
        from rich.traceback import Traceback

        self.bell()
        traceback = Traceback(show_locals=False, width=None)
        self._exit_renderables.append(
            Segments(self.console.render(traceback, self.console.options))
        )
        self._close_messages_no_wait()

    async def on_unmount(self) -> None:
        if self.bridge is not None:
            self.bridge.detach()
        await self.runtime.release_model()  # on its loop; run_app closes the rest
        heap.release_loaded()


def run_app(runtime: Runtime) -> int:
    """Run the app on ``runtime`` until the user quits; closes whichever runtime is open."""
    app = ReeflineApp(runtime)
    try:
        app.run()
    finally:
        app.runtime.close()
        heap.resume_collection()  # if the app ended before it showed the session
    if (words := leaving_words(app.runtime.session)) is not None:
        print(clean(words))
    return app.return_code or 0
