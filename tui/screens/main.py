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
from agent.log.events import Event, SessionName, ToolStart
from agent.log.names import name_of
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
from tui.screens.summary import SummaryScreen, current_summary
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
        events = self.runtime.session.events if self.runtime is not None else []
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
        if event.type == "steering/message" and self.status.queued:
            self.status.queued -= 1  # delivered: no longer waiting
        self.show_status()
        if isinstance(event, SessionName):
            self.show_header()
        card = self.transcript.card(event.data.call_id) if isinstance(event, ToolStart) else None
        if card is not None and self.approving:  # the call the dialog asks about
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
                session=name_of(runtime.session.events) or runtime.session.id,
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
        self.timeline.follow_gauge(reading)

    def timeline_changed(self) -> None:
        if (runtime := self.runtime) is not None:
            self.timeline.show_timeline(self.view.timeline.records, current_reading(runtime))

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
            self.prompt.put(effect.prompt, read_only=True)
            self.fold.going_back(f"to before turn {effect.turn}")
            self.show_status()
        elif isinstance(effect, Prompt):
            self.prompt.put(effect.text, read_only=self.prompt.read_only)
        else:
            assert_never(effect)

    def command_ended(self) -> None:
        """What a command showed for its time (a rewind) ends with it."""
        self.prompt.read_only = False
        self.fold.going_back(None)
        self.show_status()

    # --- the prompt ---------------------------------------------------------------------------

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

    def keys_to_prompt(self, event: events.Key) -> bool:
        """Before a key reaches the focused widget: a printable one typed here (not in a
        modal) moves the focus to the prompt, so it and the keys after it (an Enter) land
        there; a message typed while a card or a timeline row had the focus is never lost.
        A key the focused widget (or one around it) binds stays with it; for one right after
        ``u`` on a timeline row see :meth:`TimelinePanel.after_u`. True: it was taken here."""
        after = self.timeline.after_u(event.key, event.is_printable) if self.is_mounted else ""
        if after == "typed":
            self.prompt_has_focus()
            self.prompt.insert("u")  # the first letter of what is typed now
        if event.is_printable and event.character is not None and self.app.screen is self:
            bound = self.active_bindings.get(event.key)
            # A key the focused part answers itself (u on a timeline row) stays with it.
            if bound is None or not isinstance(bound.node, Widget) or bound.node is self:
                self.prompt_has_focus()
        return after == "taken"

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

        session = self.runtime.session
        current = current_summary(session, record)
        screen = SummaryScreen(record, session.events, self.runtime.price_of, current)
        self.app.push_screen(screen, callback=closed)
