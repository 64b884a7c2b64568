"""The approval modal for bash in ``ask`` mode: the command byte for byte, every line; allow
once, always for this session, or deny. The turn waits for the answer. It says whether the
command will run sandboxed.

What the person reads is what runs: escapes and invisible characters are shown as escape
notation and highlighted, a command of several lines is numbered with its line count above
it (:mod:`tui.widgets.command`).

Prose never answers it. Keys typed at the dialog are typing for the prompt behind it (steering
typed ahead, or a sentence for the agent) unless they are a deliberate answer, and typing goes
on into the prompt, where it shows and Enter sends it. A deliberate answer comes after a quiet
moment (:data:`QUIET_S`: the dialog has been up that long, and no key was typed that long
before it):

- ``y`` or ``n`` on its own: nothing typed just before it, and nothing just after it (it acts
  once the quiet moment after it has passed, or at once with Enter); the ``y`` of "why", the
  ``n`` of "instead" or of "no, use rg" go to the prompt;
- Enter on a button the person focused (Tab moves between them; none is focused when the
  dialog opens), with no typing just before; Enter after typing sends the typing instead;
- ``ctrl+a`` ("always"), with no typing just before;
- a click on a button, once the dialog has been up for the quiet moment;
- Esc denies at once: denying is always safe.

Time comes from the screen's ``clock`` (monotonic seconds), so tests set the time rather than
wait for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Static

from tools.base import ApprovalDecision
from tui.quiet import QUIET_S, TICK_S
from tui.text import clean, command_shape, short_path
from tui.widgets.command import command_content

Clock = Callable[[], float]
"""Monotonic seconds (:func:`time.monotonic`)."""

Forward = Callable[[str], None]
"""Takes what was typed at the dialog for the prompt: text, ``"\\n"`` (Enter) or ``"\\b"``
(Backspace)."""

LETTERS: dict[str, ApprovalDecision] = {"y": "once", "n": "deny"}
"""The letters that answer on their own (either case)."""

TYPING_HINT = "Typing goes to the prompt; press y or n after a pause, or click"
"""Said once typing was seen (one line at 80 columns: the buttons stay in view)."""
PENDING_HINT = {
    "once": "y: allow once, unless more typing follows (Enter: now)",
    "deny": "n: deny, unless more typing follows (Enter: now)",
}
MOVE_KEYS = {"tab": 1, "right": 1, "shift+tab": -1, "left": -1}
"""Keys that move the focus between the buttons."""
SCROLL_KEYS = {"up": -1, "down": 1}
"""Keys that scroll a command too long for its box."""
OWN_KEYS = {*MOVE_KEYS, *SCROLL_KEYS, "escape", "enter", "ctrl+a", "backspace"}
"""The keys besides typing that the dialog keeps (others, ctrl+q say, go on to the app)."""


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Dismisses with ``once``, ``always`` or ``deny``."""

    AUTO_FOCUS = ""  # no button focused: Enter presses one only after Tab chose it

    def __init__(
        self,
        command: str,
        cwd: str = "",
        forward: Forward | None = None,
        quiet_s: float = QUIET_S,
        sandbox: str = "",
        clock: Clock = time.monotonic,
        asks: str | None = None,
    ) -> None:
        super().__init__(classes="modal")
        self.asks = asks or self.TITLE_TEXT
        self.quiet_s = quiet_s
        """The quiet moment in seconds (:data:`QUIET_S` by default)."""
        self.clock = clock
        self.command = command
        """Exactly what will run (shown through :func:`command_content`)."""
        self.cwd = short_path(clean(cwd))
        self.sandbox = sandbox
        """How it will run: ``sandboxed (workspace-write, no network)`` or ``unsandboxed``
        (:meth:`tools.sandbox.SandboxChoice.describe`)."""
        self.forward = forward
        self.opened = clock()
        self.typed_at = -math.inf
        """When a key last went to the prompt."""
        self.pending: tuple[ApprovalDecision, str, float] | None = None
        """A ``y`` or ``n`` typed after a quiet moment: its answer, the character, when; it
        answers once the quiet moment after it has passed with nothing typed."""
        self._ticker: Timer | None = None
        self._decided = False
        self._enabled = False
        """The buttons are enabled (the dialog has been up for the quiet moment)."""

    TITLE_TEXT = "Run this command?"

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -approval") as dialog:
            dialog.border_title = self.asks
            yield from self.body()
            hint = Static("", classes="hint")
            hint.display = False
            yield hint
            with Horizontal(classes="buttons"):
                yield Button("Allow once  y", id="once", variant="primary", disabled=True)
                yield Button("Always this session  ctrl+a", id="always", variant="warning",
                             disabled=True)  # fmt: skip
                yield Button("Deny  n", id="deny", variant="error", disabled=True)

    def body(self) -> ComposeResult:
        """What is asked about: where and how the command runs, and the command."""
        if self.cwd:
            yield Static(Content.styled(f"in {self.cwd}", "$text-muted"), classes="where")
        if self.sandbox.startswith("sandboxed"):
            yield Static(Content.styled(f"runs {self.sandbox}", "$text-muted"), classes="jail")
        elif self.sandbox:
            said = f"runs {self.sandbox}: as you, with your files and your network"
            yield Static(Content.styled(said, "$text-warning"), classes="jail")
        shape = command_shape(self.command)
        if shape:
            yield Static(Content.styled(f"⚠ {shape}", "$text-warning"), classes="shape")
        with VerticalScroll(classes="command-box"):
            yield Static(command_content(self.command), classes="command")

    def on_mount(self) -> None:
        self.opened = self.clock()
        self._ticker = self.set_interval(TICK_S, self._tick)

    # --- time ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Up for the quiet moment: the buttons take clicks."""
        return self.clock() - self.opened >= self.quiet_s

    def _quiet(self, now: float) -> bool:
        return now - self.opened >= self.quiet_s and now - self.typed_at >= self.quiet_s

    @property
    def armed(self) -> bool:
        """A key typed now would be taken as an answer, and a click too (no letter is
        waiting to act, the buttons are enabled)."""
        return self._enabled and self.pending is None and self._quiet(self.clock())

    def _tick(self) -> None:
        if self.app.screen is not self:
            return  # another modal over it (the palette): it answers when it is on top again
        now = self.clock()
        if self.pending is not None and now - self.pending[2] >= self.quiet_s:
            self._decide(self.pending[0])
            return
        if not self._enabled and now - self.opened >= self.quiet_s:
            self._enabled = True
            for button in self.query(Button):
                button.disabled = False

    # --- keys ----------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """A key the dialog does not take as an answer goes to the prompt (see the module
        docstring); keys that type nothing and answer nothing (ctrl+q, ctrl+t) go on to
        the app."""
        key = event.key
        typing = event.is_printable and bool(event.character)
        if not typing and key not in OWN_KEYS:
            return
        event.stop()
        event.prevent_default()
        now = self.clock()
        if key == "escape":
            self._decide("deny")
        elif key in MOVE_KEYS:
            self._move(MOVE_KEYS[key])
        elif key in SCROLL_KEYS:
            self.scroll_box(SCROLL_KEYS[key])
        elif key == "enter":
            self._enter(now)
        elif key == "ctrl+a":
            if self._quiet(now):
                self._decide("always")
        elif key == "backspace":
            if self.pending is not None:
                self.pending = None  # the letter taken back before it acted
                self.typed_at = now
                self._hint(TYPING_HINT)
            else:
                self._type("\b", now)
        elif event.character:
            self._printable(event.character, now)

    def scroll_box(self, step: int) -> None:
        """Scroll what is asked about by ``step`` rows (up and down)."""
        self.query_one(".command-box", VerticalScroll).scroll_relative(y=step, animate=False)

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self._type(event.text, self.clock())

    def _printable(self, char: str, now: float) -> None:
        decision = LETTERS.get(char.lower())
        if decision is not None and self.pending is None and self._quiet(now):
            self.pending = (decision, char, now)
            self._hint(PENDING_HINT[decision])
        else:
            self._type(char, now)

    def _enter(self, now: float) -> None:
        if self.pending is not None:
            self._decide(self.pending[0])  # "y" then Enter: the line "y"
            return
        focused = self.focused
        if isinstance(focused, Button) and self._quiet(now):
            self._decide(focused.id or "deny")
        else:
            self._type("\n", now)  # the end of a sentence: it is sent from the prompt

    def _move(self, step: int) -> None:
        """Tab, shift+Tab and the arrows move between the buttons (a deliberate focus)."""
        buttons = [b for b in self.query(Button) if not b.disabled]
        if not buttons:
            return
        focused = self.focused
        at = buttons.index(focused) if focused in buttons else (-1 if step > 0 else 0)
        buttons[(at + step) % len(buttons)].focus()

    def _type(self, text: str, now: float) -> None:
        """Typing: it goes on into the prompt (a letter held back first, as it came)."""
        if self.pending is not None:
            held = self.pending[1]
            self.pending = None
            self._forward(held)
        self._forward(text)
        self.typed_at = now
        self._hint(TYPING_HINT)

    def _forward(self, text: str) -> None:
        if self.forward is not None:
            self.forward(text)

    def _hint(self, text: str) -> None:
        hint = self.query_one(".hint", Static)
        hint.update(Content.styled(text, "$text-warning"))
        hint.display = True

    # --- answers -------------------------------------------------------------------------------

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        """A click (keys never press a button here: Enter is :meth:`_enter`)."""
        if self.ready:
            self._decide(event.button.id or "deny")

    def _decide(self, decision: str) -> None:
        if self._decided:
            return
        self._decided = True
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self.pending = None
        choice: ApprovalDecision = decision if decision in ("once", "always") else "deny"  # type: ignore[assignment]
        self.dismiss(choice)
