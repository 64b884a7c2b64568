"""Paging a long transcript: the "show earlier" / "show later" lines, and the paging that
scrolling does by itself (:class:`ScrollPaging`, mixed into :class:`~tui.widgets.transcript.
Transcript`): a view that comes within a screen of the top mounts the page before, one that
comes within two screens of "show later" the page after, on the side the view moves to only,
the entry in view staying where it was."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import events
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static


class PageButton(Static, can_focus=True):
    """A line that mounts a page of the entries it stands for."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.run_worker(self.action())

    async def key_enter(self) -> None:
        await self.action()

    async def action(self) -> None:
        raise NotImplementedError

    @property
    def transcript(self) -> ScrollPaging:
        return next(a for a in self.ancestors if isinstance(a, ScrollPaging))


class ShowEarlier(PageButton):
    """``▲ show N earlier entries`` at the top of a long transcript."""

    async def action(self) -> None:
        await self.transcript.show_earlier()


class ShowLater(PageButton):
    """``▼ show N later entries`` below the history pages, once one was scrolled past."""

    async def action(self) -> None:
        await self.transcript.show_later()


class ScrollPaging(VerticalScroll):
    """What a transcript needs to page as it scrolls (see the module docstring); the
    transcript provides ``_hidden``, ``_later``, :meth:`show_earlier` and :meth:`show_later`."""

    _hidden: list[int]
    _later: list[int]

    async def show_earlier(self) -> None:
        raise NotImplementedError

    async def show_later(self, *, keep_view: bool = False) -> None:
        raise NotImplementedError

    def init_paging(self) -> None:
        self._paging = False
        """A page mounted by scrolling is on its way: the scroll it makes pages nothing."""
        self._last_y = 0.0
        self._direction = 1
        """Which way the person last scrolled: -1 up, 1 down."""

    def scrolled(self, y: float) -> None:
        """The view moved: note which way (a page is mounted only on the side it goes to,
        so a page mounted never brings on one on the other side), then page if near."""
        if y != self._last_y and not self._paging:
            self._direction = -1 if y < self._last_y else 1
        self._last_y = y
        self._next_page()

    def _next_page(self) -> None:
        """Mount the page the view is nearing, on the side it moves to (see the module
        docstring)."""
        if self._paging or not self.is_attached:
            return
        y, screen = self.scroll_y, max(1, self.size.height)
        if self._direction < 0 and self._hidden and y <= screen and self.query(ShowEarlier):
            self._page(self.show_earlier)
        elif (
            self._direction > 0
            and self._later
            and (later := self.query(ShowLater))
            and y + 2 * screen >= later.first().virtual_region.y
        ):
            self._page(lambda: self.show_later(keep_view=True))

    def _page(self, mount: Callable[[], Awaitable[None]]) -> None:
        self._paging = True
        self.run_worker(self._page_keeping_view(mount), group="paging", exclusive=True)

    async def _page_keeping_view(self, mount: Callable[[], Awaitable[None]]) -> None:
        """``mount`` a page; then move the view by as much as the entry at its top moved (a
        page mounted, or unmounted, above it), so what is read stays in place (a scroll
        made meanwhile included)."""
        top = self._entry_at(self.scroll_y)
        was = None if top is None else top.virtual_region.y
        try:
            await mount()
        finally:
            if top is None or was is None or not top.is_attached:
                self._paging = False
            else:
                self.call_after_refresh(self._restore, top, was)

    def _restore(self, top: Widget, was: int) -> None:
        try:
            if top.is_attached:
                moved = top.virtual_region.y - was
                self.scroll_to(y=self.scroll_y + moved, animate=False, immediate=True)
        finally:
            self._paging = False
            self._last_y = self.scroll_y
        self._next_page()  # still near the edge (a long PageUp): the next page

    def page(self, direction: int) -> None:
        """PageUp (``direction`` < 0) or PageDown, at once; at the top (or the bottom of the
        history pages) the scroll moves nothing, so the next page is asked for here too."""
        self._direction = -1 if direction < 0 else 1
        if direction < 0:
            self.scroll_page_up(animate=False)
        else:
            self.scroll_page_down(animate=False)
        self._next_page()

    def _entry_at(self, y: float) -> Widget | None:
        """The first entry below "show earlier" whose bottom is below ``y`` (what sits above
        that line, the session's opening notices, never moves when a page mounts)."""
        children = list(self.children)
        start = next((i + 1 for i, c in enumerate(children) if isinstance(c, ShowEarlier)), 0)
        for child in children[start:]:
            if not isinstance(child, PageButton) and child.virtual_region.bottom > y:
                return child
        return None


def page_label(*, earlier: bool, count: int) -> Content:
    arrow, side = ("▲", "earlier") if earlier else ("▼", "later")
    return Content.styled(f"{arrow} show {count} {side} entries", "$text-accent")
