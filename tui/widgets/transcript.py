"""The transcript: the app's rendering of the log's view items (:mod:`tui.view`).

Each item a person should see becomes an entry (user and steering messages, assistant
replies, tool cards, notices) and each checkpoint a compaction marker at the place it
landed, so nothing a user has read disappears after a compaction, and a resumed session
renders exactly as it did live (the same builder makes both). A long session keeps its
items as data and builds widgets only for the entries it mounts: the newest
:data:`REPLAY_WINDOW`, then a page per "show earlier".
"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from agent.loop_settings import cut_text
from agent.replies import Notice as StreamNotice
from agent.replies import ReasoningDelta, Retrying, StreamEvent, TextDelta, ToolOutputDelta
from tui.text import clean, first_line, home_relative
from tui.view.fold import Change, LogView
from tui.view.items import (
    Answer,
    Checkpoint,
    CommandOutcome,
    ContextSent,
    Prompt,
    RetryPlanned,
    SessionForked,
    SessionResumed,
    ToolRun,
    TurnClosed,
    ViewItem,
)
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.marker import CompactionMarker
from tui.widgets.reply import AssistantEntry, shown_answer
from tui.widgets.tool_card import ToolCard

REPLAY_WINDOW = 60
"""Entries mounted when a long session is opened; earlier ones mount a page at a time."""

_TURN_END = {
    "cancelled": ("warning", "Interrupted: the turn was closed and any running command stopped."),
    "max-steps": ("warning", "The turn stopped at the step limit."),
    "interrupted": ("warning", "The previous process stopped mid-turn; that turn was closed."),
}


class ShowEarlier(Static, can_focus=True):
    """``▲ show N earlier entries`` at the top of a long transcript."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.run_worker(self.transcript.show_earlier())

    async def key_enter(self) -> None:
        await self.transcript.show_earlier()

    @property
    def transcript(self) -> Transcript:
        return next(a for a in self.ancestors if isinstance(a, Transcript))


class Transcript(VerticalScroll):
    """The conversation; see the module docstring."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = LogView()
        self._live: AssistantEntry | None = None
        self._built: dict[int, ToolCard | CompactionMarker] = {}
        """Item index -> the widget a later change to that item updates."""
        self._cards: dict[str, ToolCard] = {}
        self._queued: list[UserEntry] = []
        self._hidden: list[int] = []
        """Indices of the items shown but not yet built, oldest first."""
        self._last_answer = ""

    def on_mount(self) -> None:
        self.anchor()

    @property
    def last_answer(self) -> str:
        """The latest non-empty assistant text as it is shown (for copying: what a person
        read is what lands in the clipboard, hidden characters written out, a long text as
        its head and tail)."""
        return shown_answer(self._last_answer)

    # --- bulk ---------------------------------------------------------------------------------

    async def replay(self, view: LogView) -> None:
        """Show ``view``'s items (a resumed session); only the newest entries are built."""
        self._view = view
        shown = [i for i, item in enumerate(view.items) if _shows(item)]
        for item in view.items:
            if isinstance(item, Answer) and item.text.strip():
                self._last_answer = item.text
        self._hidden, window = shown[:-REPLAY_WINDOW], shown[-REPLAY_WINDOW:]
        widgets = [w for i in window for w in self._build(i, view.items[i])]
        if self._hidden:
            widgets.insert(0, ShowEarlier(self._earlier_label()))
        if widgets:
            await self.mount_all(widgets)
        self.scroll_end(animate=False)

    async def show_earlier(self) -> None:
        page, self._hidden = self._hidden[-REPLAY_WINDOW:], self._hidden[:-REPLAY_WINDOW]
        button = self.query_one(ShowEarlier)
        widgets = [w for i in page for w in self._build(i, self._view.items[i])]
        if widgets:
            await self.mount_all(widgets, after=button)
        if self._hidden:
            button.update(self._earlier_label())
        else:
            await button.remove()

    def _earlier_label(self) -> Content:
        return Content.styled(f"▲ show {len(self._hidden)} earlier entries", "$text-accent")

    def clear_all(self) -> None:
        self._view = LogView()
        self._live = None
        self._built.clear()
        self._cards.clear()
        self._queued.clear()
        self._hidden.clear()
        self._last_answer = ""
        self.remove_children()

    def dump(self) -> list[str]:
        """One plain line (or paragraph) per entry, hidden ones included: what a reader sees,
        without styling (used by tests and for comparing a live and a resumed session)."""
        hidden = [w for i in self._hidden for w in _unbuilt(self._view.items[i])]
        return [line for w in [*hidden, *self.children] if (line := _plain(w)) is not None]

    # --- live ---------------------------------------------------------------------------------

    async def apply(self, changes: list[Change]) -> None:
        """Show what one newly appended event changed in the view."""
        for change in changes:
            if change.new:
                await self._added(change.index, change.item)
            else:
                self._changed(change.index, change.item)

    async def _added(self, index: int, item: ViewItem) -> None:
        if isinstance(item, TurnClosed):
            for entry in self._queued:
                entry.wait_for_next_message()
            if self._live is not None:
                # Interrupted before anything was logged: keep what was shown, stop streaming.
                live, self._live = self._live, None
                await live.settle()
        if isinstance(item, Answer) and item.text.strip():
            self._last_answer = item.text
        if isinstance(item, Answer) and self._live is not None:
            live, self._live = self._live, None
            await live.finish(item.text, item.reasoning)
            widgets = _cut_notice(item)
        elif isinstance(item, Prompt) and item.steering and self._deliver(item.text):
            widgets = []
        else:
            widgets = self._build(index, item) if _shows(item) else []
        for widget in widgets:
            await self.mount(widget)

    def _changed(self, index: int, item: ViewItem) -> None:
        """An item already shown changed: a run got its result or was pruned, a
        checkpoint's record moved. Unbuilt items need nothing: they are built as they are."""
        widget = self._built.get(index)
        if isinstance(widget, ToolCard) and isinstance(item, ToolRun):
            if item.result is not None and widget.running:
                _finish(widget, item)
            if item.pruned and not widget.pruned:
                widget.mark_pruned()
        elif (
            isinstance(widget, CompactionMarker)
            and isinstance(item, Checkpoint)
            and item.record is not None
        ):
            widget.set_record(item.record)

    def _deliver(self, text: str) -> bool:
        """A steering message was logged: the entry queued for it is delivered."""
        for entry in self._queued:
            if entry.raw == text:
                self._queued.remove(entry)
                entry.deliver()
                return True
        return False

    async def stream(self, item: StreamEvent) -> None:
        """Show a transient streaming item."""
        if isinstance(item, StreamNotice):
            await self.add_notice(item.text, "info")  # the Notice filters it
            return
        if isinstance(item, ToolOutputDelta):
            card = self._cards.get(item.call_id)
            if card is not None:
                card.live(item.text)
            return
        if isinstance(item, Retrying):
            if self._live is not None:
                live, self._live = self._live, None
                await live.discard()
            return
        if isinstance(item, TextDelta | ReasoningDelta):
            if self._live is None:
                self._live = AssistantEntry()
                await self.mount(self._live)
            if isinstance(item, TextDelta):
                await self._live.write(item.text)
            else:
                self._live.add_reasoning(item.text)

    async def add_notice(self, text: str | Content, level: str = "info") -> Notice:
        notice = Notice(text, level)  # type: ignore[arg-type]
        await self.mount(notice)
        return notice

    def queue_steering(self, text: str) -> UserEntry:
        entry = UserEntry(text, steering=True, queued=True)
        self._queued.append(entry)
        self.mount(entry)
        return entry

    def unqueue_all(self) -> None:
        """Take back the messages still queued (they are sent as a message of their own,
        or go back to the prompt)."""
        queued, self._queued = self._queued, []
        for entry in queued:
            entry.remove()

    def card(self, call_id: str) -> ToolCard | None:
        return self._cards.get(call_id)

    def running_cards(self) -> list[ToolCard]:
        return [card for card in self._cards.values() if card.running]

    # --- one item -> its widgets ---------------------------------------------------------------

    def _build(self, index: int, item: ViewItem) -> list[Widget]:
        """The widgets that show ``item``; cards and markers are remembered for the changes
        that follow."""
        widgets = _unbuilt(item)
        for widget in widgets:
            if isinstance(widget, ToolCard | CompactionMarker):
                self._built[index] = widget
            if isinstance(widget, ToolCard):
                self._cards[widget.call_id] = widget
        return widgets


def _shows(item: ViewItem) -> bool:
    """Whether ``item`` gets an entry of its own (without building it)."""
    if isinstance(item, Answer):
        return not item.empty or item.cut
    if isinstance(item, TurnClosed):
        return item.reason == "error" or item.reason in _TURN_END
    return isinstance(
        item,
        Prompt
        | ToolRun
        | Checkpoint
        | ContextSent
        | RetryPlanned
        | CommandOutcome
        | SessionResumed
        | SessionForked,
    )


def _unbuilt(item: ViewItem) -> list[Widget]:
    """New, unmounted widgets for ``item`` (none for what the transcript does not show)."""
    if isinstance(item, Prompt):
        return [UserEntry(item.text, steering=item.steering)]
    if isinstance(item, Answer):
        entry: list[Widget] = [] if item.empty else [AssistantEntry(item.text, item.reasoning)]
        return entry + _cut_notice(item)
    if isinstance(item, ToolRun):
        card = ToolCard(item.call_id, item.name, item.command, started=item.started)
        if item.result is not None:
            _finish(card, item)
        if item.pruned:
            card.mark_pruned()
        return [card]
    if isinstance(item, Checkpoint):
        marker = CompactionMarker(item.compaction_id)
        marker.record = item.record
        return [marker]
    if isinstance(item, ContextSent):
        line = home_relative(first_line(item.text))
        return [Notice(f"context sent to the model: {line}", "context")]
    if isinstance(item, RetryPlanned):
        text = (
            f"Model request failed ({clean(item.error)}); retry {item.attempt} "
            f"in {item.delay_s:.1f}s."
        )
        return [Notice(text, "warning")]
    if isinstance(item, CommandOutcome):
        return [Notice(item.text, "info" if item.ok else "warning")]
    if isinstance(item, SessionResumed):
        return [Notice("Session resumed.", "context")]
    if isinstance(item, SessionForked):
        text = f"Forked from session {item.parent}: what came before its seq {item.at_seq}."
        return [Notice(text, "context")]
    if isinstance(item, TurnClosed):
        return _turn_notice(item)
    return []


def _finish(card: ToolCard, run: ToolRun) -> None:
    result = run.result
    assert result is not None
    card.finish(
        result.content,
        is_error=result.is_error,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        spill_path=result.spill_path,
    )


def _cut_notice(answer: Answer) -> list[Widget]:
    return [Notice(cut_text(None), "warning")] if answer.cut else []


def _turn_notice(item: TurnClosed) -> list[Widget]:
    if item.reason == "error":
        return [Notice(item.error or "The turn failed.", "error")]
    if item.reason in _TURN_END:
        level, text = _TURN_END[item.reason]
        if item.error and item.reason != "cancelled":
            text = item.error
        return [Notice(text, level)]  # type: ignore[arg-type]
    return []


def _plain(widget: Widget) -> str | None:
    if isinstance(widget, UserEntry):
        return f"{'steer' if widget.steering else 'you'}: {widget.text}"
    if isinstance(widget, AssistantEntry):
        text, reasoning = widget.parts()
        lines = [
            f"reasoning: {reasoning}" if reasoning else "",
            f"assistant: {text}" if text else "",
        ]
        return "\n".join(line for line in lines if line) or None
    if isinstance(widget, ToolCard):
        state = "running" if widget.running else f"exit {widget.exit_code}"
        return f"$ {widget.command} [{state}]\n{widget.output}".rstrip()
    if isinstance(widget, CompactionMarker):
        return f"── {widget.label()}"
    if isinstance(widget, Notice):
        return f"{widget.level}: {widget.plain}"
    return None
