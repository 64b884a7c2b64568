"""The status line: what the agent is doing right now, with elapsed time, as the status fold
(:mod:`tui.view.status`) reads it."""

from __future__ import annotations

import time

from textual.content import Content
from textual.reactive import var
from textual.widget import Widget

from agent.formatting import fmt_duration
from compact.contract.service import Background
from tools.snapshots.recording import FirstRecord
from tui.view.status import Activity, StatusReading
from tui.view.workspace import running_words

_LOOK: dict[Activity, tuple[str, str, str]] = {
    "idle": ("○", "ready", "$text-muted"),
    "thinking": ("●", "thinking", "$text-accent"),
    "bash": ("●", "running bash", "$text-warning"),
    "tool": ("●", "running", "$text-warning"),
    "approval": ("?", "waiting for your approval", "$text-warning"),
    "compacting": ("◆", "compacting", "$text-primary"),
    "rewinding": ("↶", "going back", "$text-primary"),
}
UNINTERRUPTIBLE: frozenset[Activity] = frozenset({"rewinding"})
"""What Esc does not stop: the line does not offer it."""


class StatusLine(Widget):
    """``● thinking 2.1s · step 4 · 1 queued``; ``○ ready`` when idle."""

    DEFAULT_CSS = "StatusLine { height: 1; }"

    activity: var[Activity] = var[Activity]("idle")
    """What happens now (a reactive so that a front end, or a test, can watch it)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.activity = "idle"
        self.since = 0.0
        self.step: int | None = None
        self.detail = ""
        self.queued = 0
        self.hint = "/help for commands"
        self.policy = "ask"
        """The bash approval policy: said on the line unless it is ``ask``."""
        self.sandbox = "sandbox off"
        """What the next command runs under (:func:`tui.text.sandbox_label`): always said."""
        self.background: Background | None = None
        """Compaction work nobody waits for (a summary written ahead): said quietly."""
        self.workspace: str | None = None
        """The workspace's first snapshot running (:func:`tui.view.workspace.running_words`)."""

    def show(self, reading: StatusReading, *, policy: str, sandbox: str) -> None:
        """Show ``reading`` (:class:`tui.view.status.StatusFold`'s) with the approval policy
        and what the next command runs under."""
        self.since = reading.since
        self.detail = reading.detail
        self.step = reading.step
        self.policy = policy
        self.sandbox = sandbox
        self.activity = reading.activity  # last: a watcher of it sees the whole new state
        self.refresh()

    def tick(self, background: Background | None = None, first: FirstRecord | None = None) -> None:
        """Refresh the elapsed times; ``background``: the compaction work running now (read
        from the runtime on each tick: nothing waits for it, and the log says it only once
        it lands); ``first``: where the workspace's first snapshot is (read likewise)."""
        workspace = None if first is None else running_words(first)
        changed = background != self.background or workspace != self.workspace
        self.background = background
        self.workspace = workspace
        if self.activity != "idle" or changed or background is not None:
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
            if self.activity not in UNINTERRUPTIBLE:
                parts.append(("  esc interrupts", "$text-muted"))
        work = self.background
        if work is not None and self.activity != "compacting":
            # Quiet: nothing waits for it (the foreground wait, if any, says "compacting").
            said = (
                "summary ready ahead"
                if work.ready
                else f"{work.label} {fmt_duration(time.monotonic() - work.since)}"
            )
            parts.append((f" · {said}", "$text-muted"))
        if self.workspace is not None:
            parts.append((f" · {self.workspace}", "$text-muted"))
        if self.policy == "auto":
            parts.append(("  · commands run without asking", "$text-warning"))
        elif self.policy == "deny":
            parts.append(("  · commands are denied", "$text-muted"))
        unconfined = self.sandbox in ("sandbox off", "no sandbox")
        look = "$text-warning" if unconfined and self.policy == "auto" else "$text-muted"
        parts.append((f" · {self.sandbox}", look))
        if self.activity == "idle" and self.hint:
            # Last, so a narrow terminal cuts the hint rather than the policy or the sandbox.
            parts.append((f" · {self.hint}", "$text-muted"))
        return Content.assemble(*parts)
