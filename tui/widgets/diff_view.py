"""The diff screen's text: the lines of a patch's files (:mod:`tui.diff_style`), one row
each, and under a file not shown whole a row saying how much more there is (a click on it
shows the rest). Only the rows in view are drawn (the Line API), so a patch of any length
costs the event loop what a screen of it does. A row not styled yet is drawn in its line's
colour and styled in a worker thread, with the rows around it, as soon as it is in view.
Long lines scroll sideways, never wrap.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterator

from textual import events, work
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

from tui.diff_style import FilePart

STYLING = Content.styled("styling the diff…", "$text-muted")
MARGIN_SCREENS = 1
"""Rows styled ahead of the view, above and below it, in screens."""


def more_row(part: FilePart) -> Content:
    """``⋯ 148,000 more lines of big.py · a shows all, or click here``."""
    n = part.hidden
    what = f"⋯ {n:,} more line{'s' if n != 1 else ''} of {part.name or 'this file'}"
    return Content.styled(f"{what} · a shows all, or click here", "$text-accent")


class DiffView(ScrollView, can_focus=True):
    """The rows of :attr:`parts`; :meth:`show` sets them, and again when one shows more."""

    class MoreRequested(Message):
        """A click on the row under part ``part``: the rest of it is wanted."""

        def __init__(self, part: int) -> None:
            super().__init__()
            self.part = part

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.parts: list[FilePart] = []
        self._starts: list[int] = []
        """The first row of each part."""
        self._rows = 1  # the STYLING row
        self._strips: LRUCache[tuple[int, int | None], Strip] = LRUCache(1024)
        self._asked = False
        self.virtual_size = Size(STYLING.cell_length, 1)

    @property
    def hidden(self) -> int:
        """Lines of the patch not shown yet (behind a "more" row)."""
        return sum(part.hidden for part in self.parts)

    @property
    def styled(self) -> int:
        """Lines of the patch styled so far."""
        return sum(len(part.styled) for part in self.parts)

    def show(self, parts: list[FilePart]) -> None:
        """Draw ``parts`` (call again when one shows more lines)."""
        self.parts = parts
        self._starts = []
        rows = width = 0
        for part in parts:
            self._starts.append(rows)
            rows += part.shown + (1 if part.hidden else 0)
            width = max(width, part.width, more_row(part).cell_length if part.hidden else 0)
        self._rows = rows
        self._strips.clear()
        self.virtual_size = Size(width, rows)
        self.refresh()

    def row(self, index: int) -> Content:
        """Row ``index`` as drawn now."""
        if not self.parts:
            return STYLING
        part, n = self._locate(index)
        return self.parts[part].line(n) if n is not None else more_row(self.parts[part])

    def rows(self) -> Iterator[Content]:
        """Every row, as drawn now."""
        return (self.row(index) for index in range(self._rows))

    def _locate(self, index: int) -> tuple[int, int | None]:
        """(part, line) of row ``index``; line None: the part's "more" row."""
        part = bisect.bisect_right(self._starts, index) - 1
        n = index - self._starts[part]
        return part, n if n < self.parts[part].shown else None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        rich_style = self.rich_style
        if index >= self._rows:
            return Strip.blank(width, rich_style)
        key = self._locate(index) if self.parts else (-1, 0)
        strip = self._strips.get(key)
        if strip is None:
            content = self.row(index)
            # As a Static draws its text: the theme's variables ($text-success…) resolved.
            drawn = Visual.to_strips(
                self, content, max(1, content.cell_length), 1, self.visual_style
            )
            strip = drawn[0] if drawn else Strip.blank(0, rich_style)
            part, n = key
            if n is None or part < 0 or n in self.parts[part].styled:
                self._strips[key] = strip  # final; one in its line's colour only is not
            else:
                self._ask_styling()
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style).apply_offsets(
            scroll_x, index
        )

    def _ask_styling(self) -> None:
        """Have the rows in view styled, after this frame (once, however many asked)."""
        if not self._asked:
            self._asked = True
            self.call_after_refresh(self._style_in_view)

    @work(group="diff-rows")
    async def _style_in_view(self) -> None:
        """Style the rows in view and a screen around them, in a thread, then draw them;
        again while the view moved on to rows not styled yet."""
        try:
            while wanted := self._in_view_unstyled():
                await asyncio.to_thread(self._style, wanted)
                self._strips.clear()
                self.refresh()
        finally:
            self._asked = False

    def _in_view_unstyled(self) -> dict[int, list[int]]:
        """The lines of the rows in view, and a screen above and below, not styled yet."""
        height = self.size.height
        top = max(0, self.scroll_offset.y - MARGIN_SCREENS * height)
        bottom = min(self._rows, self.scroll_offset.y + (1 + MARGIN_SCREENS) * height)
        wanted: dict[int, list[int]] = {}
        for index in range(top, bottom):
            part, n = self._locate(index)
            if n is not None and n not in self.parts[part].styled:
                wanted.setdefault(part, []).append(n)
        return wanted

    def _style(self, wanted: dict[int, list[int]]) -> None:
        for part, numbers in wanted.items():
            self.parts[part].style(numbers)

    def notify_style_update(self) -> None:
        self._strips.clear()  # drawn with the old theme
        super().notify_style_update()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self.parts:
            return
        index = self.scroll_offset.y + offset.y
        if index < self._rows and (found := self._locate(index))[1] is None:
            event.stop()
            self.post_message(self.MoreRequested(found[0]))
