"""The prompt: multi-line input with history and slash-command completion as you type.

Enter sends; Shift+Enter, Alt+Enter or Ctrl+J start a new line. Up and Down walk the history
when the cursor is on the first or last line. Typing ``/`` opens a menu under the prompt
(:class:`CompletionMenu`) of the matching commands, then of their arguments: ↑/↓ move in it,
Tab or Enter take the highlighted row (Enter runs a command that takes no arguments at
once), Esc closes it.

A paste of :data:`PASTE_LINES` lines or more is held aside and shown as one token,
``[pasted 200 lines]``: Backspace right after it removes it, ctrl+o puts the pasted text in
the prompt to edit, and Enter sends the whole text (:meth:`PromptArea.sent_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from tui.completion import Choice
from tui.history import PromptHistory

NEWLINE_KEYS = frozenset({"shift+enter", "alt+enter", "ctrl+j"})
PASTE_LINES = 12
"""A paste of this many lines or more is shown collapsed in the prompt."""
EXPAND_KEY = "ctrl+o"


class PromptTabbed(Message):
    """Tab from the prompt (no completion menu took it): the screen chooses where focus goes
    (the transcript's newest entry, not its first)."""


@dataclass
class PromptSubmitted(Message):
    """The user pressed Enter on a non-empty prompt."""

    text: str


class PromptArea(TextArea):
    """See the module docstring."""

    def __init__(self, commands: Mapping[str, str], history: PromptHistory, **kwargs: object):
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            **kwargs,  # type: ignore[arg-type]
        )
        self.commands = dict(commands)
        self.prompt_history = history
        self._index: int | None = None
        self._draft = ""

        self.menu: CompletionMenu | None = None
        """The completion menu under the prompt, when the app has one."""
        self.pastes: dict[str, str] = {}
        """Each collapsed paste's token in the prompt and the text it stands for."""

    async def _on_paste(self, event: events.Paste) -> None:
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.count("\n") + (not text.endswith("\n"))
        if lines < PASTE_LINES or self.read_only:
            return  # TextArea's own handler, next in the MRO, inserts it as it is
        event.stop()
        event.prevent_default()
        # Tokens deleted from the prompt hold nothing any more.
        self.pastes = {t: pasted for t, pasted in self.pastes.items() if t in self.text}
        token = f"[pasted {lines} lines]"
        n = 1
        while token in self.pastes or token in self.text:
            n += 1
            token = f"[pasted {lines} lines #{n}]"
        self.pastes[token] = text
        if result := self._replace_via_keyboard(token, *self.selection):
            self.move_cursor(result.end_location)

    def sent_text(self, text: str) -> str:
        """``text`` with each collapsed paste's token replaced by the text pasted."""
        for token, pasted in self.pastes.items():
            text = text.replace(token, pasted, 1)
        return text

    def expand_pastes(self) -> bool:
        """Put every collapsed paste's text in the prompt in place of its token (ctrl+o);
        False when there was none."""
        if not any(token in self.text for token in self.pastes):
            return False
        self.load_text(self.sent_text(self.text))
        self.pastes.clear()
        self.move_cursor(self.document.end)
        return True

    def _delete_token_before_cursor(self) -> bool:
        """Backspace right after a collapsed paste's token removes the token whole."""
        row, col = self.cursor_location
        before = self.document.get_line(row)[:col]
        for token in self.pastes:
            if before.endswith(token):
                self.delete((row, col - len(token)), (row, col))
                del self.pastes[token]
                return True
        return False

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self.menu is not None and event.text_area is self:
            self.menu.offer(self.text)

    def _menu_key(self, key: str) -> bool:
        """Handle ``key`` in the open completion menu; False when it is not the menu's."""
        menu = self.menu
        if menu is not None and key in ("tab", "enter"):
            # Keys typed in a burst (a paste, a fast typist, tmux) come before the Changed
            # messages of the text they typed: the menu may still offer what completed an
            # earlier text, and taking its row would replace what was typed since.
            menu.offer(self.text)
        if menu is None or not menu.display or not menu.option_count:
            return False
        if key == "down":
            menu.action_cursor_down()
        elif key == "up":
            menu.action_cursor_up()
        elif key == "escape":
            menu.close()
        elif key in ("tab", "enter"):
            choice = menu.highlighted_choice()
            if choice is None or (key == "enter" and choice.value.rstrip() == self.text.rstrip()):
                return False  # Enter on what is typed already sends it
            if key == "enter" and choice.whole:
                self.load_text(choice.value.rstrip())
                self.submit()  # nothing more to type: run it
                return True
            self.load_text(choice.value)
            self.move_cursor(self.document.end)
        else:
            return False
        return True

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self._menu_key(key):
            event.stop()
            event.prevent_default()
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if key == "tab":
            event.stop()
            event.prevent_default()
            self.post_message(PromptTabbed())
            return
        if (key == EXPAND_KEY and self.expand_pastes()) or (
            key == "backspace" and self.pastes and self._delete_token_before_cursor()
        ):
            event.stop()
            event.prevent_default()
            return
        if key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0 and self._recall(-1):
            event.stop()
            event.prevent_default()
            return
        last_row = self.document.line_count - 1
        if key == "down" and self.cursor_location[0] == last_row and self._recall(+1):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def submit(self) -> None:
        """Send the text (Enter): history, then :class:`PromptSubmitted`; empty text is not
        sent, nor any while the prompt is read-only (a session is being switched)."""
        if self.read_only or not self.text.strip():
            return
        text = self.sent_text(self.text)
        self.pastes.clear()
        self.prompt_history.add(text)
        self._index = None
        self._draft = ""
        self.clear()
        if self.menu is not None:
            self.menu.close()
        self.post_message(PromptSubmitted(text))

    def _recall(self, step: int) -> bool:
        entries = self.prompt_history.entries
        if not entries:
            return False
        if self._index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(entries) - 1
        else:
            index = self._index + step
        if index < 0:
            return True  # at the oldest entry: stay
        if index >= len(entries):
            self._index = None
            self.load_text(self._draft)
        else:
            self._index = index
            self.load_text(entries[index])
        self.move_cursor(self.document.end)
        return True

    def put(self, text: str, *, read_only: bool = False) -> None:
        """Put ``text`` here to edit (``read_only``: to see, until ``read_only`` is unset)."""
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.focus()
        self.read_only = read_only

    def give_back(self, text: str) -> None:
        """Put text that was not sent back here, before what is typed here now."""
        self.load_text("\n\n".join(filter(None, [text, self.text])))
        self.move_cursor(self.document.end)


class CompletionMenu(OptionList):
    """The choices completing what is typed, under the prompt (hidden when there are none).
    It never takes focus: the prompt's keys drive it (see :meth:`PromptArea._menu_key`)."""

    can_focus = False

    def __init__(self, complete: Callable[[str], list[Choice]], **kwargs: str) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.complete = complete
        """What completes a text (:func:`tui.completion.choices` for the open session)."""
        self.choices: list[Choice] = []
        self.display = False

    def offer(self, text: str) -> None:
        """Show what completes ``text``."""
        self.show(self.complete(text), text)

    def show(self, choices: list[Choice], text: str) -> None:
        """Offer ``choices`` for ``text``; none, or only ``text`` itself, closes the menu."""
        if not choices or (len(choices) == 1 and choices[0].value.rstrip() == text.rstrip()):
            self.close()
            return
        if [c.value for c in choices] != [c.value for c in self.choices]:
            self.choices = choices
            self.set_options(
                Option(Content.assemble((c.label, "bold"), ("  ", ""), (c.help, "$text-muted")))
                for c in choices
            )
            self.highlighted = 0
        self.display = True

    def close(self) -> None:
        self.choices = []
        self.clear_options()
        self.display = False

    def highlighted_choice(self) -> Choice | None:
        if self.highlighted is None or not self.choices:
            return None
        return self.choices[self.highlighted]
