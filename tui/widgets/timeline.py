"""The compaction timeline panel: one row per compaction, prune and undo, from
:mod:`compact.reports.timeline`. Enter or a click opens the record's summary; ``u`` on a
compaction's row undoes it (``/uncompact N``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.formatting import fmt_duration, fmt_tokens, plural
from compact.reports.wording import label, reread, spent
from tui.quiet import QUIET_S, TICK_S
from tui.runtime.gauge_reading import GaugeReading
from tui.text import first_line

if TYPE_CHECKING:
    from compact.reports.records import TimelineRecord

_STATUS: dict[str, tuple[str, str]] = {
    "running": ("⟳", "$text-accent"),
    "done": ("✓", "$text-success"),
    "failed": ("✗", "$text-error"),
    "interrupted": ("⚠", "$text-warning"),
    "discarded": ("⊘", "$text-muted"),
}


@dataclass
class TimelineRecordSelected(Message):
    """The user opened a timeline row."""

    record: TimelineRecord


@dataclass
class TimelineUndoRequested(Message):
    """The user asked to undo the compaction of a timeline row (or of the summary modal)."""

    number: int


@dataclass
class SummaryEditRequested(Message):
    """The user asked to edit the newest checkpoint's summary (``e`` in its summary modal)."""


def _clock(epoch: float | None) -> str:
    return time.strftime("%H:%M", time.localtime(epoch)) if epoch else ""


LABEL_WIDTH = 9
"""The label column (``auto``, ``manual``, ``overflow``); a longer label is followed by a
space all the same."""


@dataclass(frozen=True)
class Columns:
    """The panel's column widths, from every row: a two-digit ``#10`` moves no column."""

    number: int = 1
    label: int = LABEL_WIDTH

    @classmethod
    def of(cls, records: Sequence[TimelineRecord]) -> Columns:
        """As wide as the widest number and label shown (a label at most
        :data:`LABEL_WIDTH`): the narrow panel has no column to spare."""
        return cls(
            max((len(str(r.number)) for r in records), default=1),
            min(LABEL_WIDTH, max((len(label(r)) for r in records), default=LABEL_WIDTH)),
        )

    @property
    def indent(self) -> str:
        """What a detail line starts with: under the label (no-break spaces, kept by wrapping)."""
        return "\u00a0" * (self.number + 2)


def record_row(
    record: TimelineRecord, now: float | None = None, columns: Columns | None = None
) -> Content:
    """Two or more lines describing one record::

    #1 auto   ✓ 14:02
       42 items · 38.1k→2.3k · 4.2s
       40k in · 83% cached

    ``columns``: the widths of the number and label columns (:meth:`Columns.of` the rows
    shown), so every row's columns line up.
    """
    columns = columns or Columns()
    icon, style = _STATUS.get(record.status, ("?", "$text-muted"))
    # A no-break space: a narrow panel wraps the state whole, never between icon and time.
    if record.status == "running":
        state = f"{icon}\u00a0{fmt_duration(record.elapsed(now or time.time()))}"
    elif record.status in ("failed", "interrupted", "discarded"):
        state = f"{icon}\u00a0{record.status}"
    elif record.undone_by is not None:
        icon, style = "↶", "$text-muted"
        state = f"{icon}\u00a0undone #{record.undone_by}"
    else:
        state = f"{icon}\u00a0{_clock(record.started_at)}"
    number = f"#{record.number}".ljust(columns.number + 1)
    head = Content.assemble(
        (f"{number} ", "bold"), (f"{label(record):<{columns.label}} ", ""), (state, style)
    )
    indent = columns.indent
    lines: list[Content] = [head]
    detail = _detail(record)
    if detail:
        lines.append(Content.styled(indent + detail, "$text-muted"))
    if record.status in ("failed", "discarded") and record.error:
        look = "$text-error" if record.status == "failed" else "$text-muted"
        lines.append(Content.styled(indent + first_line(record.error, 60), look))
    elif record.model == "fallback":
        lines.append(Content.styled(indent + "model-free fallback", "$text-warning"))
    elif record.status == "running" and record.note:
        lines.append(Content.styled(indent + first_line(record.note, 60), "$text-warning"))
    if cost := spent(record):
        # What the summary calls read and wrote (the saving is the line above).
        lines.append(Content.styled(indent + cost.rsplit(" · ", 1)[0], "$text-muted"))
    if cache := reread(record):  # short: the panel is 24 columns on a small terminal
        lines.append(Content.styled(indent + cache.removesuffix(" uncached"), "$text-muted"))
    if record.focus:
        lines.append(
            Content.styled(indent + f'focus: "{first_line(record.focus, 20)}"', "$text-muted")
        )
    return Content("\n").join(lines)


def _detail(record: TimelineRecord) -> str:
    parts = []
    if record.kind == "prune":
        noun = "result" if record.items_before == 1 else "results"
        parts.append(f"{record.items_before} {noun}")
        if record.saved_tokens:
            parts.append(f"−{fmt_tokens(record.saved_tokens)}")
    else:
        if record.items_before:
            parts.append(plural(record.items_before, "item"))
        if record.status == "running" and record.chunks > 1:
            parts.append(f"chunk {min(record.chunks_done + 1, record.chunks)}/{record.chunks}")
        if record.status == "done" and record.tokens_after is not None:
            parts.append(f"{fmt_tokens(record.tokens_before)}→{fmt_tokens(record.tokens_after)}")
        elif record.tokens_before:
            parts.append(fmt_tokens(record.tokens_before))
        if record.duration_s is not None and record.kind == "compaction":
            parts.append(fmt_duration(record.duration_s))
    return " · ".join(parts)


def auto_hint(reading: GaugeReading) -> str:
    """What the empty panel says about automatic compaction, from the gauge's reading."""
    if reading.threshold_fraction is not None:
        return (
            "No compactions yet.\n\nAutomatic compaction runs when the context reaches "
            f"{100 * reading.threshold_fraction:.0f}% of the window, or earlier when that costs "
            "less (the gauge's 'auto at' says where); /compact runs one now."
        )
    why = "the context window is unknown" if not reading.window else "auto = false"
    return f"No compactions yet.\n\nAutomatic compaction is off ({why}); /compact runs one now."


class TimelinePanel(Vertical):
    """The right-hand panel (see the module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("u", "undo", "undo compaction")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: list[TimelineRecord] = []
        self.clock: Callable[[], float] = time.monotonic
        """The time the quiet moment after ``u`` is measured with (tests set it)."""
        self.pending_u: tuple[int, float] | None = None
        """A ``u`` pressed on a row: the row's number and when, until the quiet moment."""
        self._waiting: Timer | None = None
        self.columns = Columns()

    def compose(self) -> ComposeResult:
        yield Static(classes="empty")
        yield OptionList(classes="rows")

    def on_mount(self) -> None:
        self.border_title = "compactions"
        self.show([])

    def show_timeline(self, records: Sequence[TimelineRecord], reading: GaugeReading) -> None:
        """:meth:`show` the records; with none yet, say when automatic compaction runs, in
        the gauge's own words (``reading`` is what the gauge shows: one source for both)."""
        self.show(records, hint="" if records else auto_hint(reading))

    def follow_gauge(self, reading: GaugeReading) -> None:
        """The gauge changed: with no rows yet, say what it says about automatic compaction."""
        if not self.records:
            self.show([], hint=auto_hint(reading))

    def show(self, records: Sequence[TimelineRecord], *, hint: str = "") -> None:
        self.records = list(records)
        rows = self.query_one(OptionList)
        empty = self.query_one(".empty", Static)
        empty.display = not self.records
        rows.display = bool(self.records)
        if hint or not self.records:
            empty.update(Content.styled(hint or "No compactions yet.", "$text-muted"))
        highlighted = rows.highlighted
        self.columns = Columns.of(self.records)
        rows.set_options(
            Option(record_row(r, columns=self.columns), id=str(r.number)) for r in self.records
        )
        if self.records:
            last = len(self.records) - 1
            keep = rows.has_focus and highlighted is not None
            rows.highlighted = min(highlighted, last) if keep and highlighted is not None else last
        self.border_subtitle = f"{len(self.records)}" if self.records else ""

    def tick(self) -> None:
        """Refresh the elapsed time of running records."""
        rows = self.query_one(OptionList)
        now = time.time()
        for index, record in enumerate(self.records):
            if record.status == "running":
                rows.replace_option_prompt_at_index(index, record_row(record, now, self.columns))

    def action_undo(self) -> None:
        """``u`` on a row: undone once the quiet moment after it passes with nothing typed
        (:meth:`take_pending_u` gives a ``u`` followed by more keys back as typing)."""
        index = self.query_one(OptionList).highlighted
        if index is None or index >= len(self.records):
            return
        self.pending_u = (self.records[index].number, self.clock())
        if self._waiting is None:
            self._waiting = self.set_interval(TICK_S, self._quiet_check)

    def after_u(self, key: str, printable: bool) -> Literal["", "typed", "taken"]:
        """A key came before the quiet moment after ``u`` passed: a printable one makes the
        ``u`` typing (``typed``: the first letter of "use grep", for the prompt); Enter
        undoes at once and Esc drops the ``u`` (``taken``: the key is spent); another key
        (↑↓, Tab) drops it and goes on. ``""``: no ``u`` was waiting."""
        number = self.take_pending_u()
        if number is None:
            return ""
        if printable:
            return "typed"
        if key == "enter":
            self.post_message(TimelineUndoRequested(number))
        return "taken" if key in ("enter", "escape") else ""

    def take_pending_u(self) -> int | None:
        """The number of the row a waiting ``u`` was pressed on (it waits no more)."""
        pending, self.pending_u = self.pending_u, None
        self._stop_waiting()
        return None if pending is None else pending[0]

    def _quiet_check(self) -> None:
        if self.pending_u is not None and self.clock() - self.pending_u[1] >= QUIET_S:
            number = self.take_pending_u()
            if number is not None:
                self.post_message(TimelineUndoRequested(number))

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(TimelineRecordSelected(self.records[event.option_index]))
