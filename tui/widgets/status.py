"""The status line: what the agent is doing right now, with elapsed time."""

from __future__ import annotations

import time
from typing import Literal

from textual.content import Content
from textual.widget import Widget

from compact.wording import fmt_duration
from tui.text import first_line

Activity = Literal["idle", "thinking", "bash", "approval", "compacting"]

_LOOK: dict[Activity, tuple[str, str, str]] = {
    "idle": ("○", "ready", "$text-muted"),
    "thinking": ("●", "thinking", "$text-accent"),
    "bash": ("●", "running bash", "$text-warning"),
    "approval": ("?", "waiting for your approval", "$text-warning"),
    "compacting": ("◆", "compacting", "$text-primary"),
}


class StatusLine(Widget):
    """``● thinking 2.1s · step 4 · 1 queued``; ``○ ready`` when idle."""

    DEFAULT_CSS = "StatusLine { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.activity: Activity = "idle"
        self.since = 0.0
        self.turn_started = 0.0
        self.step: int | None = None
        self.detail = ""
        self.queued = 0
        self.hint = "/help for commands"

    def set_activity(
        self, activity: Activity, *, detail: str = "", step: int | None = None
    ) -> None:
        now = time.monotonic()
        if activity != self.activity:
            self.since = now
        if activity == "thinking" and self.activity == "idle":
            self.turn_started = now
        self.activity = activity
        self.detail = first_line(detail, 60) if detail else ""
        if step is not None:
            self.step = step
        if activity == "idle":
            self.step = None
        self.refresh()

    def tick(self) -> None:
        if self.activity != "idle":
            self.refresh()

    def render(self) -> Content:
        icon, label, style = _LOOK[self.activity]
        parts: list[str | tuple[str, str]] = [(f"{icon} {label}", style)]
        if self.activity != "idle":
            parts.append((f" {fmt_duration(time.monotonic() - self.since)}", style))
            if self.detail:
                parts.append((f" · {self.detail}", "$text-muted"))
            if self.step is not None:
                parts.append((f" · step {self.step}", "$text-muted"))
            if self.queued:
                parts.append((f" · {self.queued} queued", "$text-accent"))
            parts.append(("  esc interrupts", "$text-muted"))
        elif self.hint:
            parts.append((f" · {self.hint}", "$text-muted"))
        return Content.assemble(*parts)
