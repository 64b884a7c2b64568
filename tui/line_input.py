"""Where the plain REPL reads its lines: prompt-toolkit with slash completion and the private
history file on a terminal, or the stream itself when stdin is a pipe."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.patch_stdout import patch_stdout

from agent.store import ensure_private_dir, open_private
from tui.commands import SLASH_COMMANDS
from tui.history import history_path

ReadLine = Callable[[str], Awaitable[str | None]]
"""Returns the next line typed after showing a prompt, or None at end of input."""


class SlashCompleter(Completer):
    """Completes ``/co`` to ``/compact`` and ``/context`` (only as the first word)."""

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        for name, help_text in SLASH_COMMANDS.items():
            if name.startswith(text[1:].lower()):
                yield Completion(f"/{name}", start_position=-len(text), display_meta=help_text)


def make_session(home: Path | None, **kwargs: object) -> PromptSession[str]:
    """A prompt session with slash completion and the per-user history file."""
    history = None
    if home is not None:
        ensure_private_dir(home)
        path = history_path(home)
        # What was typed is private: the file is 0600 before prompt-toolkit appends to it.
        os.close(open_private(path, os.O_WRONLY | os.O_APPEND))
        history = FileHistory(str(path))
    return PromptSession(
        completer=SlashCompleter(),
        complete_while_typing=True,
        history=history,
        **kwargs,  # type: ignore[arg-type]
    )


def prompt_reader(session: PromptSession[str]) -> ReadLine:
    async def read(prompt: str) -> str | None:
        try:
            with patch_stdout():
                return await session.prompt_async(prompt)
        except EOFError:
            return None
        except KeyboardInterrupt:
            return ""

    return read


def stream_reader(stream: TextIO) -> ReadLine:
    async def read(prompt: str) -> str | None:
        line = await asyncio.to_thread(stream.readline)
        return None if line == "" else line.rstrip("\n")

    return read
