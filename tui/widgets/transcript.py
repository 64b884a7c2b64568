"""The transcript: built from the session log, never from the surface.

Each append-origin event becomes an entry (user and steering messages, assistant replies,
tool cards, notices) and each checkpoint replacement a compaction marker at the place it
landed, so nothing a user has read disappears after a compaction, and a resumed session
renders exactly as it did live (the same :meth:`Transcript.apply` builds both).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from agent.events import (
    AssistantMessage,
    CommandDone,
    ContextMessage,
    Event,
    LlmRetry,
    SessionResume,
    SteeringMessage,
    SurfaceReplace,
    ToolResult,
    ToolStart,
    TurnEnd,
    UserMessage,
)
from agent.llm import Notice as StreamNotice
from agent.llm import ReasoningDelta, Retrying, StreamEvent, TextDelta
from agent.turns import cut_text
from tui.text import clean, first_line
from tui.widgets.entries import AssistantEntry, Notice, UserEntry
from tui.widgets.marker import CompactionMarker
from tui.widgets.tool_card import ToolCard

REPLAY_WINDOW = 60
"""Entries mounted when a long session is opened; earlier ones mount on demand."""

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
        self._live: AssistantEntry | None = None
        self._cards: dict[str, ToolCard] = {}
        self._active_cards: dict[str, ToolCard] = {}
        self.markers: dict[str, CompactionMarker] = {}
        self._queued: list[UserEntry] = []
        self._hidden: list[Widget] = []
        self._last_answer = ""

    def on_mount(self) -> None:
        self.anchor()

    @property
    def last_answer(self) -> str:
        """The latest non-empty assistant text as it is shown (for copying: what a person
        read is what lands in the clipboard, hidden characters written out)."""
        return clean(self._last_answer)

    # --- bulk ---------------------------------------------------------------------------------

    async def replay(self, history: Sequence[Event]) -> None:
        """Render existing events (a resumed session); only the newest entries mount."""
        widgets: list[Widget] = []
        for event in history:
            widgets += self._entries(event)
        self._hidden = widgets[:-REPLAY_WINDOW] if len(widgets) > REPLAY_WINDOW else []
        shown = widgets[len(self._hidden) :]
        if self._hidden:
            shown.insert(0, ShowEarlier(self._earlier_label()))
        if shown:
            await self.mount_all(shown)
        self.scroll_end(animate=False)

    async def show_earlier(self) -> None:
        batch, self._hidden = self._hidden[-REPLAY_WINDOW:], self._hidden[:-REPLAY_WINDOW]
        button = self.query_one(ShowEarlier)
        if batch:
            await self.mount_all(batch, after=button)
        if self._hidden:
            button.update(self._earlier_label())
        else:
            await button.remove()

    def _earlier_label(self) -> Content:
        return Content.styled(f"▲ show {len(self._hidden)} earlier entries", "$text-accent")

    def clear_all(self) -> None:
        self._live = None
        self._cards.clear()
        self._active_cards.clear()
        self.markers.clear()
        self._queued.clear()
        self._hidden.clear()
        self._last_answer = ""
        self.remove_children()

    def dump(self) -> list[str]:
        """One plain line (or paragraph) per entry, hidden ones included: what a reader sees,
        without styling (used by tests and for comparing a live and a resumed session)."""
        return [line for w in [*self._hidden, *self.children] if (line := _plain(w)) is not None]

    # --- live ---------------------------------------------------------------------------------

    async def apply(self, event: Event) -> None:
        """Show one newly appended event."""
        if isinstance(event, TurnEnd) and self._live is not None:
            # Interrupted before anything was logged: keep what was shown, stop streaming.
            live, self._live = self._live, None
            await live.settle()
        if isinstance(event, AssistantMessage) and self._live is not None:
            live, self._live = self._live, None
            await live.finish(event.data.text, event.data.reasoning)
            if event.data.text.strip():
                self._last_answer = event.data.text
            await self._add(self._reply_notice(event))
            return
        for widget in self._entries(event):
            await self._add(widget)

    async def stream(self, item: StreamEvent) -> None:
        """Show a transient streaming item."""
        if isinstance(item, StreamNotice):
            await self.add_notice(item.text, "info")  # the Notice filters it
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
        await self._add(notice)
        return notice

    def queue_steering(self, text: str) -> UserEntry:
        entry = UserEntry(text, steering=True, queued=True)
        self._queued.append(entry)
        self.mount(entry)
        return entry

    def unqueue(self, entry: UserEntry) -> None:
        """Take back a queued message (it is being sent as a message of its own)."""
        if entry in self._queued:
            self._queued.remove(entry)
        entry.remove()

    def card(self, call_id: str) -> ToolCard | None:
        return self._cards.get(call_id)

    def running_cards(self) -> list[ToolCard]:
        return list(self._active_cards.values())

    async def _add(self, widget: Widget | None) -> None:
        if widget is not None:
            await self.mount(widget)

    # --- one event -> its new widgets --------------------------------------------------------

    def _entries(self, event: Event) -> list[Widget]:
        """The widgets ``event`` adds: :meth:`_build`'s, and a reply's notice (cut off at
        the output cap) after its text."""
        widget = self._build(event)
        widgets = [widget] if widget is not None else []
        if isinstance(event, AssistantMessage) and isinstance(widget, AssistantEntry):
            notice = self._reply_notice(event)
            if notice is not None:
                widgets.append(notice)
        return widgets

    def _build(self, event: Event) -> Widget | None:
        if isinstance(event, UserMessage):
            if event.data.source == "compact":
                marker = CompactionMarker(event.data.compaction_id or f"seq-{event.seq}")
                self.markers[marker.compaction_id] = marker
                return marker
            return UserEntry(event.data.content)
        if isinstance(event, SteeringMessage):
            return self._steering(event.data.content)
        if isinstance(event, AssistantMessage):
            data = event.data
            if data.text.strip():
                self._last_answer = data.text
            if not data.text.strip() and not (data.reasoning or "").strip():
                return self._reply_notice(event)
            return AssistantEntry(data.text, data.reasoning)
        if isinstance(event, ToolStart):
            card = ToolCard(
                event.data.call_id, event.data.name, event.data.arguments, started=event.time
            )
            self._cards[card.call_id] = self._active_cards[card.call_id] = card
            return card
        if isinstance(event, ToolResult):
            return self._tool_result(event)
        if isinstance(event, ContextMessage):
            return Notice(f"context sent to the model: {first_line(event.data.content)}", "context")
        if isinstance(event, LlmRetry):
            data = event.data
            return Notice(
                f"Model request failed ({clean(data.error)}); retry {data.attempt} "
                f"in {data.delay_s:.1f}s.",
                "warning",
            )
        if isinstance(event, TurnEnd):
            return self._turn_end(event)
        if isinstance(event, CommandDone):
            return Notice(event.data.text, "info" if event.data.ok else "warning")
        if isinstance(event, SessionResume):
            return Notice("Session resumed.", "context")
        return None

    def _steering(self, content: str) -> Widget | None:
        for entry in self._queued:
            if entry.text == clean(content):
                self._queued.remove(entry)
                entry.deliver()
                return None
        return UserEntry(content, steering=True)

    def _tool_result(self, event: ToolResult) -> Widget | None:
        data = event.data
        card = self._cards.get(data.call_id)
        if isinstance(event.surface_op, SurfaceReplace):
            if card is not None:
                card.mark_pruned()
            return None
        new = card is None
        if card is None:  # a result without tool/start (a repaired or refused call)
            card = ToolCard(data.call_id, data.name, "", started=event.time)
            self._cards[data.call_id] = card
        self._active_cards.pop(data.call_id, None)
        card.finish(
            data.content,
            is_error=data.is_error,
            exit_code=data.exit_code,
            duration_s=data.duration_s,
            spill_path=data.spill_path,
        )
        return card if new else None

    def _turn_end(self, event: TurnEnd) -> Widget | None:
        for entry in self._queued:
            entry.wait_for_next_message()
        if event.data.reason == "error":
            return Notice(event.data.error or "The turn failed.", "error")
        if event.data.reason in _TURN_END:
            level, text = _TURN_END[event.data.reason]
            if event.data.error and event.data.reason != "cancelled":
                text = event.data.error
            return Notice(text, level)  # type: ignore[arg-type]
        return None

    @staticmethod
    def _reply_notice(event: AssistantMessage) -> Widget | None:
        reason = event.data.finish_reason
        if reason == "length":
            return Notice(cut_text(None), "warning")
        return None


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
