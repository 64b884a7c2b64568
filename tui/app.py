"""The Textual app: transcript, token gauge, compaction timeline, slash commands, approval.

The app observes the core and never drives compaction itself: session events, stream deltas
and compaction notices arrive as Textual messages through :class:`RuntimeBridge`; a turn runs
in one exclusive worker that Esc cancels; ``/compact`` goes through the runtime's compact
command (:class:`~compact.command.CompactCommand`)."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar, TypeVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Footer
from textual.worker import Worker

from agent.events import Event, ToolStart
from agent.replies import Notice
from agent.turns import TurnResult
from compact.events import CompactProgress
from compact.records import TimelineRecord
from tools.snapshots.changes import patch
from tui import heap
from tui.approvals import Approvals
from tui.commands import SLASH_COMMANDS
from tui.completion import choices
from tui.demo import BANNER as DEMO_BANNER
from tui.file_commands import shadow_of
from tui.gauge_reading import GaugeReading
from tui.history import PromptHistory, history_path
from tui.key_actions import KeyActions
from tui.runtime import Runtime
from tui.screens.approval import ARM_S
from tui.screens.diff import DiffScreen
from tui.screens.summary import SummaryScreen
from tui.sending import Sending
from tui.shutdown import Shutdown
from tui.terminal_state import terminal_state
from tui.text import clean, resume_hint, sandbox_label
from tui.theme_memory import ThemeMemory
from tui.view.changes import summary
from tui.view.fold import LogView
from tui.widgets.bridge import (
    CompactionNoticed,
    RuntimeBridge,
    SessionEventAppended,
    StreamItemReceived,
)
from tui.widgets.card_files import DiffRequested
from tui.widgets.gauge import ZONE_TEXT, TokenGauge
from tui.widgets.header import AppHeader
from tui.widgets.marker import CompactionMarkerSelected
from tui.widgets.prompt import CompletionMenu, PromptArea
from tui.widgets.slash import SlashCommands
from tui.widgets.status import StatusLine
from tui.widgets.timeline import TimelinePanel, TimelineRecordSelected, TimelineUndoRequested
from tui.widgets.transcript import Transcript

W = TypeVar("W", bound=Widget)

WIDE = 120
"""Terminals at least this wide open with the timeline panel showing."""


class ReeflineApp(Sending, SlashCommands, Approvals, KeyActions, Shutdown, App[None]):
    """See the module docstring. ``runtime`` is built by the caller (see ``tui.cli``)."""

    HORIZONTAL_BREAKPOINTS: ClassVar = [(0, "-narrow"), (100, "-roomy")]  # see app.tcss
    VERTICAL_BREAKPOINTS: ClassVar = [(0, "-short"), (12, "-tall")]

    CSS_PATH = "app.tcss"
    TITLE = "reefline"
    AUTO_FOCUS = "#prompt"
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
        self.runtime = runtime
        self.scripted_delay_s = scripted_delay_s
        self.view = LogView()  # the open session's log as people see it (transcript, timeline)
        self.bridge: RuntimeBridge | None = None
        self.approval_arm_s = ARM_S
        """How long the approval dialog ignores keys (typed-ahead text goes to the prompt)."""
        self.history = PromptHistory(history_path(runtime.home))
        self.turn_worker: Worker[TurnResult | None] | None = None
        self.compact_worker: Worker[None] | None = None
        self._terminating = False
        self._tty_before = terminal_state()
        """The terminal's settings before the app took it (restored on SIGHUP)."""
        self._last_ctrl_c = self._last_esc = 0.0
        self._timeline_chosen = False
        self._approving = False
        self._parts: dict[type[Widget], Widget] = {}

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield AppHeader(id="header")
        with Horizontal(id="main"):
            yield Transcript(id="transcript")
            yield TimelinePanel(id="timeline")
        yield StatusLine(id="status")
        yield TokenGauge(id="gauge")
        yield PromptArea(
            SLASH_COMMANDS,
            self.history,
            id="prompt",
            placeholder="Message reefline · / for commands · esc interrupts",
        )
        yield CompletionMenu(lambda text: choices(text, self.runtime), id="hints")
        yield Footer()

    def _main_mounted(self) -> bool:
        """False while the app is shutting down (the main screen's widgets are gone)."""
        if not self.screen_stack:
            return False
        status = self._parts.get(StatusLine)
        if status is None:
            return bool(self.screen_stack[0].query(StatusLine))
        return status.is_attached

    def part(self, kind: type[W]) -> W:
        """The one ``kind`` widget of the main screen (a modal may be on top); cached, as
        the parts are looked up on every event."""
        widget = self._parts.get(kind)
        if widget is None:
            widget = self._parts[kind] = self.screen_stack[0].query_one(kind)
        return widget  # type: ignore[return-value]

    @property
    def transcript(self) -> Transcript:
        return self.part(Transcript)

    @property
    def timeline(self) -> TimelinePanel:
        return self.part(TimelinePanel)

    @property
    def status(self) -> StatusLine:
        return self.part(StatusLine)

    def prompt_text(self) -> str:
        return self.part(PromptArea).text

    @property
    def busy(self) -> bool:
        """A turn or a ``/compact`` is in flight."""
        return any(
            w is not None and not w.is_finished for w in (self.turn_worker, self.compact_worker)
        )

    async def on_mount(self) -> None:
        self.part(PromptArea).menu = self.part(CompletionMenu)
        self.timeline.display = self.size.width >= WIDE
        self.set_interval(0.25, self._tick)
        self._watch_signals()
        ThemeMemory(self, self.runtime.settings.theme).start()
        await self._open(self.runtime)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.keys_to_prompt(event)  # before the focused widget gets it
        await super().on_event(event)

    def on_resize(self) -> None:
        if not self._timeline_chosen:
            self.timeline.display = self.size.width >= WIDE

    async def _open(self, runtime: Runtime) -> None:
        """Show ``runtime``'s session: banner, notices, existing events, timeline, gauge."""
        first = self.bridge is None
        self.runtime = runtime
        runtime.bash.approver = self._approve
        self.view = LogView(price=lambda event: runtime.meter.price(event.seq))
        self.bridge = RuntimeBridge(runtime, self)
        self.bridge.attach()
        self.part(AppHeader).show(
            model=runtime.model_name,
            session=runtime.session.id,
            cwd=runtime.session.cwd,
            demo=runtime.is_demo,
        )
        transcript = self.transcript
        await transcript.clear_all()
        heap.release_loaded()  # what the session shown before kept may go now
        if runtime.is_demo:
            await transcript.add_notice(DEMO_BANNER, "info")
        for notice in runtime.notices:
            if not (runtime.is_demo and notice == runtime.provider.notice):
                await transcript.add_notice(notice, "warning")
        self.view.feed_all(runtime.session.events)
        if first:  # its log and their view live as long as the session (see tui.heap)
            heap.keep_loaded()
        await transcript.replay(self.view)
        if first:  # and so does its first screen, once it is up
            heap.settle_soon()
            self.set_timer(heap.SETTLE_S, self._settle)
        self._timeline_changed()
        self._update_gauge()
        self.status.policy = runtime.bash.policy
        self.status.sandbox = sandbox_label(runtime.bash)
        self.status.set_activity("idle")
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
            self._update_gauge()

    # --- core -> UI ---------------------------------------------------------------------------

    def _current(self, event: Event) -> bool:
        """False for a message still queued from a runtime that was replaced (/new)."""
        events = self.runtime.session.events
        return event.seq < len(events) and events[event.seq] is event

    async def on_session_event_appended(self, message: SessionEventAppended) -> None:
        event = message.event
        if not self._current(event):
            return
        fed = self.view.feed(event)
        await self.transcript.apply(fed.changes)
        if fed.timeline:
            self._timeline_changed()
        self._follow(event)
        self._update_gauge()

    async def on_stream_item_received(self, message: StreamItemReceived) -> None:
        if isinstance(message.item, Notice):
            # Said once and never stale: shown even when the turn ended before it arrived.
            await self.transcript.stream(message.item)
            self._update_gauge()  # a lowered window moves the gauge
        elif self.runtime.agent.busy:
            await self.transcript.stream(message.item)

    async def on_diff_requested(self, message: DiffRequested) -> None:
        """A tool card's ``· diff``: the patch of its command, in the diff screen."""
        repo = shadow_of(self.runtime)
        if repo is None:
            await self.transcript.add_notice("No snapshots here: the diff cannot be shown.")
            return
        files = message.files
        text = await asyncio.to_thread(patch, repo.git, files.before, files.after)
        await self.push_screen(DiffScreen(summary(files) or "no change", text))

    async def on_compaction_noticed(self, message: CompactionNoticed) -> None:
        await self.transcript.add_notice(message.notice.text, message.notice.level)
        if self.status.activity == "compacting":  # e.g. a summarizer retry: said where one looks
            self.status.set_activity("compacting", detail=message.notice.text)

    def _follow(self, event: Event) -> None:
        """Keep the status line (and a card waiting for approval) on what happens now."""
        record = None
        if isinstance(event, CompactProgress):
            record = self.view.timeline.record(event.data.compaction_id)
        self.status.follow(
            event,
            approving=self._approving,
            turn_open=self.runtime.agent.busy,
            busy=self.busy,
            record=record,
        )
        self._show_queued()
        self.status.policy = self.runtime.bash.policy  # read, never kept: the tool owns it
        self.status.sandbox = sandbox_label(self.runtime.bash)  # it may follow the policy
        if isinstance(event, ToolStart) and self._approving:
            card = self.transcript.card(event.data.call_id)
            if card is not None:
                card.awaiting_approval = True
                card.tick(time.time())

    def _update_gauge(self) -> None:
        runtime = self.runtime
        spend = runtime.usage().short
        reading = GaugeReading.of(
            measurement := runtime.measure(),
            runtime.threshold_tokens,
            spend,
            runtime.compacting_soon(measurement.total),
        )
        self.part(TokenGauge).show(reading)
        self.part(AppHeader).show_percent(reading.percent, ZONE_TEXT[reading.zone])

    def _timeline_changed(self) -> None:
        window = self.runtime.meter.context_window
        self.timeline.show_timeline(
            self.view.timeline.records, self.runtime.threshold_tokens, window
        )

    def _tick(self) -> None:
        if not self._main_mounted():
            return
        now = time.time()
        self.status.tick(self.runtime.compaction.background)
        for card in self.transcript.running_cards():
            card.tick(now)
        if any(r.status == "running" for r in self.timeline.records):
            self.timeline.tick()

    # --- prompt -------------------------------------------------------------------------------

    # --- summaries ----------------------------------------------------------------------------

    @on(TimelineRecordSelected)
    def _record_selected(self, message: TimelineRecordSelected) -> None:
        self._show_summary(message.record)

    @on(TimelineUndoRequested)
    async def _undo_requested(self, message: TimelineUndoRequested) -> None:
        await self.run_slash("uncompact", str(message.number))

    @on(CompactionMarkerSelected)
    def _marker_selected(self, message: CompactionMarkerSelected) -> None:
        record = self.view.timeline.record(message.compaction_id)
        if record is not None:
            self._show_summary(record)

    def _show_summary(self, record: TimelineRecord) -> None:
        """The summary modal; closing it gives the keys back to the prompt (what is typed
        next is a message, not keys for the timeline)."""

        async def closed(undo: int | None) -> None:
            if self._main_mounted():
                self.part(PromptArea).focus()
            if undo is not None:
                await self.run_slash("uncompact", str(undo))

        screen = SummaryScreen(record, self.runtime.session.events, self.runtime.price_of)
        self.push_screen(screen, callback=closed)

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
    if app.runtime.session.path.exists():  # an untouched session is discarded on close
        print(clean(resume_hint(app.runtime.session.id)))
    return app.return_code or 0
