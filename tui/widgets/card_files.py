"""The line under a tool card saying what its command changed: ``2 files changed +14 −3 ·
diff``. A click or Enter asks for the diff (:class:`DiffRequested`, which the app answers
with the diff screen)."""

from __future__ import annotations

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agent.log.files_data import FilesData
from tui.view.changes import summary


class DiffRequested(Message):
    """The person asked to see what a command changed."""

    def __init__(self, files: FilesData) -> None:
        super().__init__()
        self.files = files


class CardFiles(Static):
    """Focusable: Enter opens the diff, as a click does."""

    can_focus = True

    def __init__(self, files: FilesData) -> None:
        super().__init__(
            Content.assemble(summary(files) or "", (" · diff", "$text-accent")), classes="files"
        )
        self.files = files

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(DiffRequested(self.files))

    def key_enter(self) -> None:
        self.post_message(DiffRequested(self.files))
