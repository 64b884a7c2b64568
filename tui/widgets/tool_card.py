"""A tool card: one bash call with its command, output, exit code, duration and state."""

from __future__ import annotations

import time

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from compact.wording import fmt_duration
from tools.terminal import has_unsafe, visible
from tui.text import clean, first_line, strip_footer
from tui.widgets.command import command_content

PREVIEW_LINES = 8
"""Output lines shown before "show all"."""
LIVE_CHARS = 16_000
"""What a running card keeps of the output so far: its newest characters (the result,
once it comes, is the output as the model sees it)."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class ShowAll(Static, can_focus=True):
    """The "N lines · show all" toggle under a long output."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        card = next(a for a in self.ancestors if isinstance(a, ToolCard))
        card.expanded = not card.expanded

    def key_enter(self) -> None:
        card = next(a for a in self.ancestors if isinstance(a, ToolCard))
        card.expanded = not card.expanded


class ToolCard(Vertical):
    """Shows a tool call from ``tool/start`` (running) to its ``tool/result``."""

    expanded: reactive[bool] = reactive(False)

    def __init__(self, call_id: str, name: str, command: str, *, started: float) -> None:
        super().__init__(classes="-running")
        self.call_id = call_id
        self.tool_name = name
        self.raw_command = command
        """Exactly what runs (:attr:`tui.view.items.ToolRun.command`; shown only through
        :func:`command_content`)."""
        self.command = visible(self.raw_command)
        self.started = started
        self.running = True
        self.output = ""
        self.exit_code: int | None = None
        self.is_error = False
        self.duration: float | None = None
        self.pruned = False
        self.awaiting_approval = False
        self.spill_path: str | None = None
        self._frame = 0

    def compose(self) -> ComposeResult:
        raw = self.raw_command
        full = "\n" in raw or len(self.command) > 72 or has_unsafe(raw)
        command = Static(command_content(raw), classes="command")
        command.display = full
        yield command
        yield Static(classes="output")
        yield ShowAll(classes="show-all")

    def on_mount(self) -> None:
        prefix = "$ " if self.tool_name == "bash" else f"{clean(self.tool_name)} "
        lines = self.raw_command.count("\n") + 1
        more = f"  (+{lines - 1} more lines)" if lines > 1 else ""
        self.border_title = Content(prefix + first_line(self.command, 72) + more)
        if self.running:
            self._render_body()
            self.tick(time.time())
        else:
            self._apply_state()

    def _apply_state(self) -> None:
        """Classes, subtitle and body for a finished call (only once mounted: styling an
        unmounted widget costs a stylesheet pass, and a long resume builds many)."""
        self.remove_class("-running")
        failed = self.is_error or (self.exit_code not in (0, None))
        self.set_class(failed, "-failed")
        self.border_subtitle = self._outcome()
        self._render_body()

    # --- state --------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Advance the spinner and the elapsed time while running."""
        if not self.running:
            return
        if self.awaiting_approval:
            self.border_subtitle = Content.styled("? waiting for your approval", "$text-warning")
            return
        self._frame = (self._frame + 1) % len(SPINNER)
        elapsed = fmt_duration(max(0.0, now - self.started))
        self.border_subtitle = Content.styled(
            f"{SPINNER[self._frame]} running {elapsed}", "$text-accent"
        )

    def live(self, text: str) -> None:
        """More output of the running command: the card shows its newest lines."""
        if not self.running:
            return
        shown = self.output + clean(text)
        if len(shown) > LIVE_CHARS:
            shown = shown[-LIVE_CHARS:]
            shown = shown[shown.find("\n") + 1 :] if "\n" in shown else shown
        self.output = shown
        if self.is_mounted:
            self._render_body()

    def finish(
        self,
        content: str,
        *,
        is_error: bool,
        exit_code: int | None,
        duration_s: float | None,
        spill_path: str | None = None,
    ) -> None:
        self.running = False
        self.output = strip_footer(clean(content))
        self.is_error = is_error
        self.exit_code = exit_code
        self.duration = duration_s
        self.spill_path = spill_path
        if self.is_mounted:
            self._apply_state()

    def mark_pruned(self) -> None:
        """The model now sees a shortened form of this output (the pruner replaced it)."""
        self.pruned = True
        if self.is_mounted and not self.running:
            self.border_subtitle = self._outcome()

    def _outcome(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        if self.is_error and self.exit_code is None:
            parts.append(("error", "$text-error"))
        elif self.exit_code is None:
            parts.append(("no exit code", "$text-warning"))
        else:
            parts.append(
                (
                    f"exit {self.exit_code}",
                    "$text-success" if self.exit_code == 0 else "$text-error",
                )
            )
        if self.duration is not None:
            parts.append(f" · {fmt_duration(self.duration)}")
        if self.pruned:
            parts.append((" · shortened in context", "$text-muted"))
        return Content.assemble(*parts)

    # --- body ---------------------------------------------------------------------------------

    def watch_expanded(self) -> None:
        if self.is_mounted:
            self._render_body()

    def _render_body(self) -> None:
        output = self.query_one(".output", Static)
        show_all = self.query_one(ShowAll)
        lines = self.output.rstrip("\n").split("\n") if self.output.strip() else []
        output.display = bool(lines) or not self.running
        if not lines:
            output.update(Content.styled("(no output)" if not self.running else "", "$text-muted"))
            show_all.display = False
            return
        long = len(lines) > PREVIEW_LINES
        # While it runs the newest lines matter (as in a terminal); after, the first ones.
        preview = lines[-PREVIEW_LINES:] if self.running else lines[:PREVIEW_LINES]
        shown = lines if self.expanded or not long else preview
        output.update(Content("\n".join(shown)))
        show_all.display = long
        label = "show less" if self.expanded else f"{len(lines)} lines · show all"
        show_all.update(
            Content.styled(f"▸ {label}" if not self.expanded else f"▾ {label}", "$text-accent")
        )
