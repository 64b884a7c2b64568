"""What the agent is doing right now, as the status line says it: a fold of the log like every
other view, plus the transient state only the front end knows (an approval dialog is up, a
rewind is being written, a compaction notice came on the stream).

Nothing sets the activity by hand: it follows from what was fed. The log says when a turn,
a step, a command or a compaction starts and ends; the transient inputs say what the log
cannot (the question waiting for an answer, the fork being written).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.log.events import (
    CommandDone,
    CommandRun,
    Event,
    StepStart,
    ToolResult,
    ToolStart,
    TurnEnd,
    TurnStart,
)
from compact.contract.events import CompactEnd, CompactProgress, CompactStart
from compact.reports.records import TimelineRecord
from compact.reports.wording import running_detail
from tools.terminal import visible
from tui.text import bash_command, first_line
from tui.view.items import tool_label

Activity = Literal["idle", "thinking", "bash", "tool", "approval", "compacting", "rewinding"]

DETAIL_CHARS = 60


@dataclass(frozen=True)
class StatusReading:
    """The status line's state: what happens, since when (monotonic seconds), a detail and the
    step of the turn."""

    activity: Activity = "idle"
    detail: str = ""
    step: int | None = None
    since: float = 0.0


class StatusFold:
    """See the module docstring; :attr:`reading` is the state to show."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._logged = StatusReading()
        """What the log says happens (the fold proper)."""
        self._turn_open = False
        self._command: str | None = None
        """The ``/compact`` command in flight (its id), from ``command/run`` to its done."""
        self._asking: str | None = None
        self._going_back: str | None = None
        self.reading = StatusReading()

    # --- the log ------------------------------------------------------------------------------

    def feed(self, event: Event, record: TimelineRecord | None = None) -> None:
        """Fold one logged event; ``record``: the compaction a ``compact/progress`` is of."""
        if isinstance(event, TurnStart):
            self._turn_open = True
            self._logged = StatusReading(since=self._logged.since)  # a new turn has no step yet
            self._log("thinking")
        elif isinstance(event, StepStart):
            self._log("thinking", step=event.data.step)
        elif isinstance(event, ToolStart) and event.data.name == "bash":
            self._log("bash", bash_command(event.data.arguments))
        elif isinstance(event, ToolStart):  # a tool that runs no command: an edit, MCP
            self._log("tool", visible(tool_label(event.data.name, event.data.arguments)))
        elif isinstance(event, CommandRun) and event.data.name == "compact":
            self._command = event.data.command_id
            self._log("compacting", "manual")
        elif isinstance(event, CompactStart):
            self._log("compacting", event.data.trigger)
        elif isinstance(event, CompactProgress) and record is not None:
            self._log("compacting", running_detail(record))
        elif isinstance(event, ToolResult | CompactEnd) and self._turn_open:
            self._log("thinking")
        elif isinstance(event, CommandDone) and event.data.command_id == self._command:
            self._command = None
            self._log("thinking" if self._turn_open else "idle")
        elif isinstance(event, TurnEnd):
            self._turn_open = False
            self._log("compacting" if self._command else "idle")
        elif isinstance(event, CompactEnd) and self._command is None:
            self._log("idle")
        self._show()

    def restart(self, events: Sequence[Event]) -> None:
        """Fold another session's log from its start (the transient state stays: a rewind
        that opens the new session is still going on)."""
        self._logged = StatusReading()
        self._turn_open = False
        self._command = None
        for event in events:
            self.feed(event)
        self._show()

    def ended(self) -> None:
        """The turn or command in flight ended even where its log could not say so (a log
        that cannot be written): nothing runs any more."""
        self._turn_open = False
        self._command = None
        self._log("idle")
        self._show()

    # --- transient state ----------------------------------------------------------------------

    def notice(self, text: str) -> None:
        """A compaction notice (a summarizer retry): said where one looks while it runs."""
        if self._logged.activity == "compacting":
            self._log("compacting", text)
            self._show()

    def asking(self, command: str | None) -> None:
        """The approval dialog for ``command`` is up (None: it was answered)."""
        self._asking = command
        self._show()

    def going_back(self, detail: str | None) -> None:
        """A rewind is being written (None: it is done)."""
        self._going_back = detail
        self._show()

    # --- the reading --------------------------------------------------------------------------

    def _log(self, activity: Activity, detail: str = "", step: int | None = None) -> None:
        """The step stays said until the next one or the end (a command runs in a step)."""
        before = self._logged
        if step is None and activity != "idle":
            step = before.step
        self._logged = StatusReading(
            activity,
            first_line(detail, DETAIL_CHARS) if detail else "",
            step,
            before.since if activity == before.activity else self._clock(),
        )

    def _show(self) -> None:
        logged = self._logged
        if self._going_back is not None:
            self._transient("rewinding", self._going_back, None)
        elif self._asking is not None:
            self._transient("approval", self._asking, logged.step)
        else:
            self.reading = logged

    def _transient(self, activity: Activity, detail: str, step: int | None) -> None:
        shown = self.reading
        since = shown.since if shown.activity == activity else self._clock()
        self.reading = StatusReading(activity, first_line(detail, DETAIL_CHARS), step, since)
