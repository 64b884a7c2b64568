"""The app's key actions (a mixin of :class:`tui.app.ReeflineApp`): Esc and Ctrl+C interrupt,
Esc twice (idle, nothing typed) goes back to an earlier prompt, Ctrl+C twice quits (or copies
a selection), Ctrl+T shows the timeline, Ctrl+Y copies the last answer as it is shown,
PageUp/PageDown scroll the transcript from anywhere.

Keys always land: outside a modal, a printable key typed while something else has the focus
(a card's output, a timeline row) goes to the prompt, which takes the focus back, and Esc
brings the focus back to the prompt as well; a slash command or a message typed there is
never lost, and its Enter never toggles a card.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from textual import events

from tui.widgets.prompt import PromptArea
from tui.widgets.timeline import TimelinePanel
from tui.widgets.transcript import Transcript

QUIT_WINDOW_S = 3.0
"""A second Ctrl+C within this many seconds quits."""
REWIND_WINDOW_S = 1.0
"""A second Esc within this many seconds, idle with an empty prompt, opens /rewind."""


class KeyHost(Protocol):
    """What the key actions need of the app that mixes them in."""

    turn_worker: Any
    compact_worker: Any
    _last_ctrl_c: float
    _last_esc: float
    _timeline_chosen: bool

    @property
    def busy(self) -> bool: ...
    @property
    def screen(self) -> Any: ...
    @property
    def screen_stack(self) -> list[Any]: ...
    @property
    def focused(self) -> Any: ...
    def _main_mounted(self) -> bool: ...
    def _prompt_has_focus(self) -> bool: ...
    @property
    def transcript(self) -> Transcript: ...
    @property
    def timeline(self) -> TimelinePanel: ...
    def copy_to_clipboard(self, text: str) -> None: ...
    def notify(
        self, message: str, *, severity: Any = "information", timeout: Any = None
    ) -> None: ...
    def exit(self) -> None: ...
    def action_interrupt(self) -> None: ...
    def prompt_text(self) -> str: ...
    def run_worker(self, work: Any, **options: Any) -> Any: ...
    async def run_slash(self, name: str, args: str = "") -> None: ...


class KeyActions:
    def _prompt_has_focus(self: KeyHost) -> bool:
        """True when the prompt has the focus (and False while the main screen is gone);
        otherwise it takes it, at once: the keys queued behind this one go there too."""
        if not self._main_mounted():
            return False
        main = self.screen_stack[0]
        prompt = main.query_one(PromptArea)
        if main.focused is prompt:
            return True
        main.set_focus(prompt)
        return False

    def keys_to_prompt(self: KeyHost, event: events.Key) -> None:
        """Before a key is forwarded to the focused widget: a printable one typed on the main
        screen moves the focus to the prompt, so it and the keys after it (an Enter) land
        there (see the module docstring)."""
        if not event.is_printable or event.character is None:
            return
        if not self.screen_stack or self.screen is not self.screen_stack[0]:
            return  # a modal's keys are its own
        self._prompt_has_focus()

    def action_interrupt(self: KeyHost) -> None:
        """Esc: cancel the running turn or /compact (the loop closes the turn), and give the
        focus back to the prompt. Idle, with nothing typed, Esc twice opens /rewind."""
        refocused = not self._prompt_has_focus()
        running = False
        for worker in (self.turn_worker, self.compact_worker):
            if worker is not None and not worker.is_finished:
                worker.cancel()
                running = True
        now = time.monotonic()
        if running or refocused or self.prompt_text().strip():
            self._last_esc = 0.0
        elif now - self._last_esc < REWIND_WINDOW_S:
            self._last_esc = 0.0
            self.run_worker(self.run_slash("rewind"), group="rewind")
        else:
            self._last_esc = now

    def action_ctrl_c(self: KeyHost) -> None:
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.notify("Copied the selection.")
            return
        now = time.monotonic()
        if self.busy:
            self.action_interrupt()
            self._last_ctrl_c = now
        elif now - self._last_ctrl_c < QUIT_WINDOW_S:
            self.exit()
        else:
            self._last_ctrl_c = now
            self.notify("Press ctrl+c again to quit.", timeout=QUIT_WINDOW_S)

    def action_toggle_timeline(self: KeyHost) -> None:
        self._timeline_chosen = True
        self.timeline.display = not self.timeline.display

    def action_copy_answer(self: KeyHost) -> None:
        answer = self.transcript.last_answer
        if answer:
            self.copy_to_clipboard(answer)
            self.notify("Copied the last answer to the clipboard.")
        else:
            self.notify("There is no answer to copy yet.", severity="warning")

    def action_page(self: KeyHost, direction: int) -> None:
        """PageUp / PageDown scroll the transcript, wherever the focus is."""
        transcript = self.transcript
        if direction < 0:
            transcript.scroll_page_up()
        else:
            transcript.scroll_page_down()
