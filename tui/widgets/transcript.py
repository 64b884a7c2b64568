"""The transcript: the app's rendering of the log's view items (:mod:`tui.view`).

Each item a person should see becomes an entry (user and steering messages, assistant
replies, tool cards, notices) and each checkpoint a compaction marker at the place it
landed, so nothing a user has read disappears after a compaction, and a resumed session
renders exactly as it did live (the same builder makes both). A long session keeps its
items as data and builds widgets only for the entries it mounts: the newest
:data:`REPLAY_WINDOW`, then a :data:`PAGE` per "show earlier". Scrolling back is windowed: at most
:data:`MOUNTED_PAGES` pages of history stay mounted above the newest entries; a page scrolled
past is unmounted again ("show later" brings it back), so reading a huge session from the
start costs what a few pages do. Scrolling (PageUp, the wheel) pages by itself: a view that
comes within a screen of the top mounts the page before, and one that comes within a screen
of "show later" mounts the page after, the entries in view staying where they are.
"""

from __future__ import annotations

from textual.await_remove import AwaitRemove
from textual.containers import VerticalScroll
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from agent.llm.replies import Notice as StreamNotice
from agent.llm.replies import ReasoningDelta, Retrying, StreamEvent, TextDelta, ToolOutputDelta
from tui import heap
from tui.view.fold import Change, LogView
from tui.view.items import (
    Answer,
    Checkpoint,
    Prompt,
    ToolRun,
    TurnClosed,
    ViewItem,
)
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.item_widgets import cut_notice, finish_card, plain, shows, widgets_for
from tui.widgets.marker import CompactionMarker
from tui.widgets.paging import PageButton, ScrollPaging, ShowEarlier, ShowLater, page_label
from tui.widgets.reply import AssistantEntry, shown_answer
from tui.widgets.tool_card import ToolCard

REPLAY_WINDOW = 40
"""Entries mounted when a long session is opened; earlier ones mount a page at a time."""
PAGE = 10
"""Entries one "show earlier" (or "show later") mounts."""
MOUNTED_PAGES = 2
"""Pages of history mounted at once, besides the newest entries: what is mounted is laid out
again with every page, and its objects are what the collector's full passes scan."""


class Transcript(ScrollPaging, VerticalScroll, can_focus=False):
    """The conversation; see the module docstring. Not focusable itself (PageUp/PageDown
    scroll it from anywhere): Tab from the prompt reaches what takes keys in it, a long
    card's output (Enter shows it all), a marker, a "show earlier" line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = LogView()
        self._live: AssistantEntry | None = None
        self._built: dict[int, ToolCard | CompactionMarker] = {}
        """Item index -> the widget a later change to that item updates."""
        self._cards: dict[str, ToolCard] = {}
        self._queued: list[UserEntry] = []
        self._hidden: list[int] = []
        """Indices of the items before the mounted ones, oldest first (not built)."""
        self._pages: list[tuple[list[int], list[Widget]]] = []
        """History pages mounted above the newest entries, top first: indices, widgets."""
        self._later: list[int] = []
        """Indices of the items between the mounted pages and the newest entries that are
        not mounted (pages scrolled past), oldest first."""
        self._last_answer = ""
        self._tidy: Timer | None = None
        self.init_paging()

    def on_mount(self) -> None:
        self.anchor()
        self.watch(self, "scroll_y", self.scrolled, init=False)

    # --- following the output ------------------------------------------------------------------

    def follow(self) -> None:
        """Pin the view to the newest entry again, whatever was scrolled (sending a prompt
        does: what answers it must be in view)."""
        self.anchor()

    def release_anchor(self) -> None:
        """A scroll by the user stops following the output; once the scroll is done, one
        that ended at the bottom follows again. (Textual re-anchors only when the position
        moves onto the bottom: a PageDown or a wheel turn made there released the anchor
        without moving, and every later entry ran off-screen.)"""
        super().release_anchor()
        self.call_after_refresh(self._follow_at_bottom)

    def _follow_at_bottom(self) -> None:
        if self.scroll_target_y >= self.max_scroll_y and self.scroll_y >= self.max_scroll_y:
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
        shown = [i for i, item in enumerate(view.items) if shows(item)]
        for item in view.items:
            if isinstance(item, Answer) and item.text.strip():
                self._last_answer = item.text
        self._hidden, window = shown[:-REPLAY_WINDOW], shown[-REPLAY_WINDOW:]
        widgets = [w for i in window for w in self._build(i, view.items[i])]
        if self._hidden:
            widgets.insert(0, ShowEarlier(page_label(earlier=True, count=len(self._hidden))))
        if widgets:
            await self.mount_all(widgets)
        self.scroll_end(animate=False)

    async def show_earlier(self) -> None:
        """Mount the :data:`PAGE` entries before the first mounted one; unmount the lowest
        history page when more than :data:`MOUNTED_PAGES` are mounted."""
        heap.settle()  # before the first page: what is on screen now stays (see tui.heap)
        self._tidy_up()
        page, self._hidden = self._hidden[-PAGE:], self._hidden[:-PAGE]
        with self.app.batch_update():
            button = self.query_one(ShowEarlier)
            widgets = [w for i in page for w in self._build(i, self._view.items[i])]
            if widgets:
                await self.mount_all(widgets, after=button)
            self._pages.insert(0, (page, widgets))
            if len(self._pages) > MOUNTED_PAGES:
                indices, dropped = self._pages.pop()
                self._later[:0] = indices
                await self._unmount(indices, dropped)
                if not self.query(ShowLater):
                    lowest = next((ws[-1] for _, ws in reversed(self._pages) if ws), button)
                    await self.mount(ShowLater(), after=lowest)
                await self._label(self.query_one(ShowLater), self._later)
            await self._label(button, self._hidden)

    async def show_later(self, *, keep_view: bool = False) -> None:
        """Mount the :data:`PAGE` entries after the lowest history page; unmount the top
        one when more than :data:`MOUNTED_PAGES` are mounted. The view goes to the first
        entry mounted, unless ``keep_view`` (the caller keeps it where it was)."""
        self._tidy_up()
        page, self._later = self._later[:PAGE], self._later[PAGE:]
        with self.app.batch_update():
            button = self.query_one(ShowLater)
            widgets = [w for i in page for w in self._build(i, self._view.items[i])]
            if widgets:
                await self.mount_all(widgets, before=button)
            self._pages.append((page, widgets))
            if len(self._pages) > MOUNTED_PAGES:
                indices, dropped = self._pages.pop(0)
                self._hidden += indices
                await self._unmount(indices, dropped)
                if not self.query(ShowEarlier):
                    await self.mount(ShowEarlier(), before=0)
                await self._label(self.query_one(ShowEarlier), self._hidden)
            await self._label(button, self._later)
        if widgets and not keep_view:
            self.scroll_to_widget(widgets[0], animate=False, top=True)

    async def _unmount(self, indices: list[int], widgets: list[Widget]) -> None:
        for index in indices:
            widget = self._built.pop(index, None)
            if isinstance(widget, ToolCard):
                self._cards.pop(widget.call_id, None)
        await self.remove_children(widgets)
        # The page is garbage now, in reference cycles: collect it once paging pauses (see
        # tui.heap.tidy), or at the start of the next page if that comes first.
        if self._tidy is not None:
            self._tidy.stop()
        self._tidy = self.set_timer(heap.TIDY_S, self._tidy_up)

    def _tidy_up(self) -> None:
        """Collect what the last unmounted page left, if that is still to be done: one
        page's garbage now is a few milliseconds; left to pile up, it makes a full pass of
        the collector that lands in some later page whole."""
        if self._tidy is not None:
            self._tidy.stop()
            self._tidy = None
            heap.tidy()

    async def _label(self, button: PageButton, pending: list[int]) -> None:
        if not pending:
            await button.remove()
            return
        button.update(page_label(earlier=isinstance(button, ShowEarlier), count=len(pending)))

    def clear_all(self) -> AwaitRemove:
        if self._tidy is not None:
            self._tidy.stop()
            self._tidy = None
        self._view = LogView()
        self._live = None
        self._built.clear()
        self._cards.clear()
        self._queued.clear()
        self._hidden.clear()
        self._pages.clear()
        self._later.clear()
        self._last_answer = ""
        return self.remove_children()

    def dump(self) -> list[str]:
        """One plain line (or paragraph) per entry, unmounted ones included: what a reader
        sees, without styling (used by tests and for comparing a live and a resumed session)."""
        widgets: list[Widget] = []
        for child in self.children:
            if isinstance(child, ShowEarlier | ShowLater):
                pending = self._hidden if isinstance(child, ShowEarlier) else self._later
                widgets += [w for i in pending for w in widgets_for(self._view.items[i])]
            else:
                widgets.append(child)
        return [line for w in widgets if (line := plain(w)) is not None]

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
            widgets = cut_notice(item)
        elif isinstance(item, Prompt) and self._deliver(item.text, steering=item.steering):
            widgets = []
        else:
            widgets = self._build(index, item) if shows(item) else []
        for widget in widgets:
            await self.mount(widget)

    def _changed(self, index: int, item: ViewItem) -> None:
        """An item already shown changed: a run got its result or was pruned, a
        checkpoint's record moved. Unbuilt items need nothing: they are built as they are."""
        widget = self._built.get(index)
        if isinstance(widget, ToolCard) and isinstance(item, ToolRun):
            if item.result is not None and widget.running:
                finish_card(widget, item)
            if item.pruned and not widget.pruned:
                widget.mark_pruned()
        elif (
            isinstance(widget, CompactionMarker)
            and isinstance(item, Checkpoint)
            and item.record is not None
        ):
            widget.set_record(item.record)

    def _deliver(self, text: str, *, steering: bool) -> bool:
        """A message was logged: the entry queued for it (steering, or a message that
        waited for ``/compact``) is delivered."""
        for entry in self._queued:
            if entry.raw == text and entry.steering == steering:
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
        return self._queue(UserEntry(text, steering=True, queued=True))

    def queue_message(self, text: str, note: str) -> UserEntry:
        """A message that is not sent yet (it waits for ``/compact``), shown with ``note``
        until it is logged."""
        entry = UserEntry(text, queued=True)
        entry.note = note
        return self._queue(entry)

    def _queue(self, entry: UserEntry) -> UserEntry:
        self._queued.append(entry)
        self.mount(entry)
        return entry

    def unqueue_all(self) -> None:
        """Take back the messages still queued (they are sent as a message of their own,
        or go back to the prompt)."""
        queued, self._queued = self._queued, []
        for entry in queued:
            entry.remove()

    def focus_newest(self) -> bool:
        """Focus the newest entry that takes focus (a card's output, a marker); False when
        none does."""
        newest = [w for w in self.query("*") if w.focusable]
        if newest:
            newest[-1].focus()
        return bool(newest)

    def card(self, call_id: str) -> ToolCard | None:
        return self._cards.get(call_id)

    def running_cards(self) -> list[ToolCard]:
        return [card for card in self._cards.values() if card.running]

    # --- one item -> its widgets ---------------------------------------------------------------

    def _build(self, index: int, item: ViewItem) -> list[Widget]:
        """The widgets that show ``item``; cards and markers are remembered for the changes
        that follow."""
        widgets = widgets_for(item)
        for widget in widgets:
            if isinstance(widget, ToolCard | CompactionMarker):
                self._built[index] = widget
            if isinstance(widget, ToolCard):
                self._cards[widget.call_id] = widget
        return widgets
