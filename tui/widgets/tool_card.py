"""A tool card: one bash call with its command, output, exit code, duration and state."""

from __future__ import annotations

import time

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from agent.formatting import fmt_duration, plural
from agent.log.files_data import FilesData
from tools.terminal import has_unsafe, visible
from tui.text import clean, first_line, strip_footer
from tui.widgets.card_files import CardFiles
from tui.widgets.command import command_content

PREVIEW_LINES = 8
"""Output lines shown before "show all"."""
LIVE_CHARS = 16_000
"""What a running card keeps of the output so far: its newest characters (the result,
once it comes, is the output as the model sees it)."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class CardOutput(Static):
    """A card's output. A long one ends in the "N lines · show all" line, which a click or
    Enter toggles (the output is focusable then). One widget, not two: a resumed session
    mounts its cards a page at a time, and every widget is laid out again with each page."""

    long = False

    def on_click(self, event: events.Click) -> None:
        if self.long and event.y >= self.content_size.height - 1:
            event.stop()
            self._toggle()

    def key_enter(self) -> None:
        if self.long:
            self._toggle()

    def _toggle(self) -> None:
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
        self.stopped: str | None = None
        self.awaiting_approval = False
        self.spill_path: str | None = None
        self.files: FilesData | None = None
        self._frame = 0

    def compose(self) -> ComposeResult:
        # Only what shows is built (the full command when the title cannot carry it, the
        # "show all" toggle once the output is long): a resumed session mounts its cards a
        # page at a time, and every widget is laid out again with each page.
        raw = self.raw_command
        if "\n" in raw or len(self.command) > 72 or has_unsafe(raw):
            yield Static(command_content(raw), classes="command")
        yield CardOutput(classes="output")
        if self.files is not None and self.files.changes:
            yield CardFiles(self.files)

    def on_mount(self) -> None:
        prefix = "$ " if self.tool_name == "bash" else f"{clean(self.tool_name)} "
        lines = self.raw_command.count("\n") + 1
        more = f"  (+{plural(lines - 1, 'more line')})" if lines > 1 else ""
        self.border_title = Content(prefix + first_line(self.command, 72) + more)
        if self.running:
            self._render_body()
            self.tick(time.time())
        else:
            self._apply_state()

    def _apply_state(self) -> None:
        """Subtitle and body for a finished call (only once mounted: a long resume builds
        many cards and mounts few)."""
        self._set_state_classes()
        self.border_subtitle = self._outcome()
        self._render_body()

    def _set_state_classes(self) -> None:
        """``-running`` off, ``-failed`` on a failure. An unmounted card is not restyled
        here: mounting styles it once, with these classes (a restyle after mounting cost
        a stylesheet pass per card of every page scrolled back through)."""
        update = self.is_mounted
        self.remove_class("-running", update=update)
        failed = self.is_error or (self.exit_code not in (0, None))
        self.set_class(failed, "-failed", update=update)

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
        stopped: str | None = None,
        files: FilesData | None = None,
    ) -> None:
        """The call's result came. ``stopped``: ``interrupted`` or ``not run``, what the
        footer says instead of ``error`` (:attr:`tui.view.items.ToolRun.outcome`)."""
        self.running = False
        self.stopped = stopped
        self.output = strip_footer(clean(content))
        self.is_error = is_error
        self.exit_code = exit_code
        self.duration = duration_s
        self.spill_path = spill_path
        self.files = files
        if self.is_mounted:
            if files is not None and files.changes and not self.query(CardFiles):
                self.mount(CardFiles(files))
            self._apply_state()
        else:
            self._set_state_classes()

    def mark_pruned(self) -> None:
        """The model now sees a shortened form of this output (the pruner replaced it)."""
        self.pruned = True
        if self.is_mounted and not self.running:
            self.border_subtitle = self._outcome()

    def _outcome(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        if self.stopped is not None:
            parts.append((self.stopped, "$text-warning"))
        elif self.is_error and self.exit_code is None:
            parts.append(("error", "$text-error"))
        elif self.exit_code is None and self.tool_name != "bash":
            parts.append(("done", "$text-success"))  # a tool that runs no command (edit, MCP)
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
        output = self.query_one(CardOutput)
        lines = self._lines()
        output.display = bool(lines) or not self.running
        long = len(lines) > PREVIEW_LINES
        output.long = output.can_focus = long
        if not lines:
            output.update(Content.styled("(no output)" if not self.running else "", "$text-muted"))
            return
        # While it runs the newest lines matter (as in a terminal); after, the first ones.
        preview = lines[-PREVIEW_LINES:] if self.running else lines[:PREVIEW_LINES]
        shown = Content("\n".join(lines if self.expanded or not long else preview))
        if long:
            label = "▾ show less" if self.expanded else f"▸ {len(lines)} lines · show all"
            shown = Content.assemble(shown, "\n", Content.styled(label, "$text-accent"))
        output.update(shown)

    def _lines(self) -> list[str]:
        return self.output.rstrip("\n").split("\n") if self.output.strip() else []
