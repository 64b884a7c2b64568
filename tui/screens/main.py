"""The main screen: header, transcript beside the compaction timeline, status line, token
gauge, prompt and its completion menu. It owns these widgets and shows one runtime's session:
the log as people see it (:class:`~tui.view.fold.LogView`), the status line as a fold of the
same log (:class:`~tui.view.status.StatusFold`), and what the core reports as it happens
(the app hands it over from its :class:`~tui.app.bridge.RuntimeBridge`, in the one order
its own messages keep: a turn's last events are shown before the app sees the turn end).

The app holds the runtime and decides what happens; this screen only shows it and hands back
what the person types (the prompt's messages bubble up to the app)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar, assert_never

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from agent.llm.replies import Notice, StreamEvent
from agent.log.events import Event, ToolStart
from compact.contract.events import CompactProgress
from compact.contract.service import CompactNotice
from compact.reports.records import TimelineRecord
from tui import heap
from tui.commands.effects import (
    Help,
    Prompt,
    Rewinding,
    Said,
    ShowContext,
    ShowDiff,
    ShowGauge,
    Shown,
    ToggleTimeline,
)
from tui.commands.files import diff_of
from tui.commands.run import SLASH_COMMANDS
from tui.completion import Choice
from tui.demo import BANNER as DEMO_BANNER
from tui.history import PromptHistory
from tui.runtime.gauge_reading import current_reading
from tui.runtime.runtime import Runtime
from tui.screens.context import ContextScreen
from tui.screens.diff import DiffScreen
from tui.screens.summary import SummaryScreen
from tui.text import sandbox_label
from tui.view.changes import summary
from tui.view.fold import LogView
from tui.view.status import StatusFold
from tui.widgets.card_files import DiffRequested
from tui.widgets.gauge import ZONE_TEXT, TokenGauge
from tui.widgets.header import AppHeader
from tui.widgets.marker import CompactionMarkerSelected
from tui.widgets.prompt import CompletionMenu, PromptArea
from tui.widgets.status import StatusLine
from tui.widgets.timeline import TimelinePanel, TimelineRecordSelected, TimelineUndoRequested
from tui.widgets.transcript import Transcript

W = TypeVar("W", bound=Widget)

WIDE = 120
"""Terminals at least this wide open with the timeline panel showing."""
KEYS_HELP = (
    "enter send · shift+enter / ctrl+j new line · ↑↓ history · / opens the command menu "
    "(↑↓ move, tab or enter take, esc closes) · "
    "pgup/pgdn scroll · esc interrupt · ctrl+c interrupt, twice quits · ctrl+t timeline · "
    "shift+tab from the prompt reaches the timeline rows (↑↓, enter opens a summary) · "
    "ctrl+y copy the last answer · ctrl+p command palette · ctrl+q quit"
)


class MainScreen(Screen[None]):
    """See the module docstring. :meth:`show` puts a runtime's session on it."""

    AUTO_FOCUS = "#prompt"

    def __init__(self, history: PromptHistory, completions: Callable[[str], list[Choice]]) -> None:
        super().__init__()
        self.history = history
        self.completions = completions
        self.runtime: Runtime | None = None
        self.view = LogView()
        """The open session's log as people see it (transcript, timeline)."""
        self.fold = StatusFold()
        self.approving = False
        self.timeline_choice: dict[bool, bool] = {}
        """Whether the person showed the timeline (True) or hid it, on a wide terminal (key
        True) and on a narrow one (False): there the width no longer decides."""
        self._parts: dict[type[Widget], Widget] = {}

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
        yield CompletionMenu(self.completions, id="hints")
        yield Footer()

    def on_mount(self) -> None:
        self.part(PromptArea).menu = self.part(CompletionMenu)

    # --- parts --------------------------------------------------------------------------------

    def part(self, kind: type[W]) -> W:
        """The one ``kind`` widget of this screen; cached, as the parts are looked up on
        every event."""
        widget = self._parts.get(kind)
        if widget is None:
            widget = self._parts[kind] = self.query_one(kind)
        return widget  # type: ignore[return-value]

    @property
    def live(self) -> bool:
        """False while the app is shutting down (the widgets are gone)."""
        status = self._parts.get(StatusLine)
        if status is None:
            return self.is_attached and bool(self.query(StatusLine))
        return status.is_attached

    @property
    def transcript(self) -> Transcript:
        return self.part(Transcript)

    @property
    def timeline(self) -> TimelinePanel:
        return self.part(TimelinePanel)

    @property
    def status(self) -> StatusLine:
        return self.part(StatusLine)

    @property
    def prompt(self) -> PromptArea:
        return self.part(PromptArea)

    # --- the session --------------------------------------------------------------------------

    async def show(self, runtime: Runtime, *, first: bool) -> None:
        """Show ``runtime``'s session: banner, notices, existing events, timeline, gauge,
        status. ``first``: the app's first session (its log stays loaded, see ``tui.heap``)."""
        self.runtime = runtime
        self.view = LogView(price=lambda event: runtime.meter.price(event.seq))
        self.show_header()
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
        self.timeline_changed()
        self.refresh_gauge()
        self.fold.restart(runtime.session.events)
        self.show_status()

    def _current(self, event: Event) -> bool:
        """False for a message still queued from a runtime that was replaced (/new)."""
        if self.runtime is None:
            return False
        events = self.runtime.session.events
        return event.seq < len(events) and events[event.seq] is event

    async def show_event(self, event: Event) -> None:
        """An event appended to the log (one still queued from a replaced runtime is not)."""
        if not self._current(event):
            return
        fed = self.view.feed(event)
        await self.transcript.apply(fed.changes)
        if fed.timeline:
            self.timeline_changed()
        record = None
        if isinstance(event, CompactProgress):
            record = self.view.timeline.record(event.data.compaction_id)
        self.fold.feed(event, record)
        self.show_status()
        if isinstance(event, ToolStart) and self.approving:
            card = self.transcript.card(event.data.call_id)
            if card is not None:
                card.awaiting_approval = True
                card.tick(time.time())
        self.refresh_gauge()

    async def show_stream(self, item: StreamEvent) -> None:
        """A transient stream item: shown while a turn runs (a notice always)."""
        if self.runtime is None:
            return
        if isinstance(item, Notice):
            # Said once and never stale: shown even when the turn ended before it arrived.
            await self.transcript.stream(item)
            self.refresh_gauge()  # a lowered window moves the gauge
        elif self.runtime.agent.busy:
            await self.transcript.stream(item)

    async def show_notice(self, notice: CompactNotice) -> None:
        await self.transcript.add_notice(notice.text, notice.level)
        self.fold.notice(notice.text)  # e.g. a summarizer retry: said where one looks
        self.show_status()

    # --- what is shown of it ------------------------------------------------------------------

    def show_status(self, queued: int | None = None) -> None:
        """The status line from the fold, the approval policy and the sandbox (read, never
        kept: the tool owns them); ``queued``: messages waiting, when that changed."""
        if self.runtime is None:
            return
        status = self.status
        if queued is not None:
            status.queued = queued
        bash = self.runtime.bash
        status.show(self.fold.reading, policy=bash.policy, sandbox=sandbox_label(bash))

    def show_header(self) -> None:
        runtime = self.runtime
        if runtime is not None:
            self.part(AppHeader).show(
                model=runtime.model_name,
                session=runtime.session.id,
                cwd=runtime.session.cwd,
                demo=runtime.is_demo,
            )

    def refresh_gauge(self) -> None:
        runtime = self.runtime
        if runtime is None:
            return
        reading = current_reading(runtime)
        self.part(TokenGauge).show(reading)
        self.part(AppHeader).show_percent(reading.percent, ZONE_TEXT[reading.zone])

    def timeline_changed(self) -> None:
        runtime = self.runtime
        if runtime is not None:
            window = runtime.meter.context_window
            records = self.view.timeline.records
            self.timeline.show_timeline(records, runtime.threshold_tokens, window)

    def tick(self) -> None:
        if not self.live:
            return
        now = time.time()
        if (rt := self.runtime) is not None:
            self.status.tick(rt.compaction.background, rt.first_record)
        else:
            self.status.tick()
        for card in self.transcript.running_cards():
            card.tick(now)
        if any(r.status == "running" for r in self.timeline.records):
            self.timeline.tick()

    def fit_timeline(self, width: int) -> None:
        """Show the timeline on a wide terminal and hide it on a narrow one, unless the person
        chose otherwise at that width. A choice made wide never carries to a narrow terminal
        (the panel would leave the transcript a strip), and one made narrow is forgotten once
        the terminal is wide again."""
        panels = self.query(TimelinePanel)  # none before the screen is composed
        if not panels:
            return
        wide = width >= WIDE
        if wide:
            self.timeline_choice.pop(False, None)
        panels.first().display = self.timeline_choice.get(wide, wide)

    def page(self, direction: int) -> None:
        """Scroll the transcript a page up (``direction`` < 0) or down."""
        self.transcript.page(direction)

    def toggle_timeline(self) -> None:
        shown = not self.timeline.display
        self.timeline.display = shown
        self.timeline_choice[self.app.size.width >= WIDE] = shown

    async def show_effect(self, effect: Shown) -> None:
        """Show what a command asks to show (:mod:`tui.commands.effects`); the app decides the
        rest."""
        if isinstance(effect, Said):
            await self.transcript.add_notice(effect.text, effect.level)
        elif isinstance(effect, Help):
            text = Content.assemble(
                ("Commands\n", "bold"), effect.commands, ("\n\nKeys\n", "bold"), KEYS_HELP
            )
            await self.transcript.add_notice(text, "info")
        elif isinstance(effect, ShowContext):
            await self.app.push_screen(ContextScreen(effect.report))
        elif isinstance(effect, ShowDiff):
            await self.app.push_screen(DiffScreen(effect.title, effect.text))
        elif isinstance(effect, ShowGauge):
            self.show_header()
            self.refresh_gauge()
        elif isinstance(effect, ToggleTimeline):
            self.toggle_timeline()
        elif isinstance(effect, Rewinding):
            # Said at once: the fork is written and loaded off the event loop, which takes a
            # moment on a long session; the prompt is there meanwhile, read-only so that
            # nothing is sent to the session being left.
            self.put_prompt(effect.prompt, read_only=True)
            self.fold.going_back(f"to before turn {effect.turn}")
            self.show_status()
        elif isinstance(effect, Prompt):
            self.put_prompt(effect.text, read_only=self.prompt.read_only)
        else:
            assert_never(effect)

    def command_ended(self) -> None:
        """What a command showed for its time (a rewind) ends with it."""
        self.free_prompt()
        self.fold.going_back(None)
        self.show_status()

    # --- the prompt ---------------------------------------------------------------------------

    def put_prompt(self, text: str, *, read_only: bool = False) -> None:
        """Put ``text`` in the prompt to edit (``read_only``: to see, until :meth:`free_prompt`)."""
        prompt = self.prompt
        prompt.load_text(text)
        prompt.move_cursor(prompt.document.end)
        prompt.focus()
        prompt.read_only = read_only

    def free_prompt(self) -> None:
        self.prompt.read_only = False

    def give_back(self, text: str) -> None:
        """Put text that was not sent back in the prompt, before what is typed there now."""
        prompt = self.prompt
        prompt.load_text("\n\n".join(filter(None, [text, prompt.text])))
        prompt.move_cursor(prompt.document.end)

    def prompt_has_focus(self) -> bool:
        """True when the prompt has the focus (False while the screen is gone); otherwise it
        takes it, at once: the keys queued behind this one go there too."""
        if not self.live:
            return False
        prompt = self.prompt
        if self.focused is prompt:
            return True
        self.set_focus(prompt)
        return False

    def keys_to_prompt(self, event: events.Key) -> None:
        """Before a key reaches the focused widget: a printable one typed here (not in a
        modal) moves the focus to the prompt, so it and the keys after it (an Enter) land
        there; a message typed while a card or a timeline row had the focus is never lost.
        A key the focused widget (or one around it) binds stays with it."""
        if event.is_printable and event.character is not None and self.app.screen is self:
            bound = self.active_bindings.get(event.key)
            if bound is not None and isinstance(bound.node, Widget) and bound.node is not self:
                return  # a key the focused part answers itself (u on a timeline row)
            self.prompt_has_focus()

    async def on_diff_requested(self, message: DiffRequested) -> None:
        """A tool card's ``· diff``: the patch of its command, in the diff screen."""
        title = summary(message.files) or "no change"
        await self.show_effect(await diff_of(self.runtime, message.files, title))

    # --- summaries ----------------------------------------------------------------------------

    @on(TimelineRecordSelected)
    def _record_selected(self, message: TimelineRecordSelected) -> None:
        self.show_summary(message.record)

    @on(CompactionMarkerSelected)
    def _marker_selected(self, message: CompactionMarkerSelected) -> None:
        record = self.view.timeline.record(message.compaction_id)
        if record is not None:
            self.show_summary(record)

    def show_summary(self, record: TimelineRecord) -> None:
        """The summary modal; closing it gives the keys back to the prompt (what is typed
        next is a message, not keys for the timeline)."""
        if self.runtime is None:
            return

        def closed(undo: int | None) -> None:
            if self.live:
                self.prompt.focus()
            if undo is not None:  # the app undoes it, as for a timeline row
                self.post_message(TimelineUndoRequested(undo))

        events_ = self.runtime.session.events
        screen = SummaryScreen(record, events_, self.runtime.price_of)
        self.app.push_screen(screen, callback=closed)
