"""Where the plain REPL reads its lines: prompt-toolkit with slash completion and the private
history file on a terminal, or the stream itself when stdin is a pipe."""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.patch_stdout import patch_stdout

from agent.log.store import ensure_private_dir, open_private
from tui.commands.run import SLASH_COMMANDS
from tui.history import history_path

ReadLine = Callable[[str], Awaitable[str | None]]
"""Returns the next line typed after showing a prompt, or None at end of input; raises
:class:`ReadInterrupted` when Ctrl+C is pressed at the prompt."""


class ReadInterrupted(Exception):
    """Ctrl+C was pressed at a prompt (a key there: prompt-toolkit has the terminal raw)."""


@dataclass
class Ahead:
    """What was typed before a prompt was shown (see :func:`typed_ahead`)."""

    lines: list[str] = field(default_factory=list)
    """The lines finished with Enter."""
    unfinished: str = ""
    """The line still being typed (no Enter yet): it is put back, so the next prompt shows it
    and the person goes on typing it there."""


TypedAhead = Callable[[], Ahead]
"""Takes what was typed that no prompt has read yet (see :func:`typed_ahead`)."""


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
    """Reads with ``session``. It leaves SIGINT alone (``handle_sigint=False``): the REPL
    owns it for as long as it runs (a prompt-toolkit prompt that takes it puts back only the
    handler, not the event loop's entry, so a turn asking a question lost its Ctrl+C); at the
    prompt Ctrl+C is a key, read as :class:`ReadInterrupted`."""

    async def read(prompt: str) -> str | None:
        try:
            with patch_stdout():
                return await session.prompt_async(prompt, handle_sigint=False)
        except EOFError:
            return None
        except KeyboardInterrupt:
            raise ReadInterrupted from None

    return read


def stream_reader(stream: TextIO) -> ReadLine:
    async def read(prompt: str) -> str | None:
        line = await _in_daemon_thread(stream.readline)
        return None if line == "" else line.rstrip("\n")

    return read


async def _in_daemon_thread(call: Callable[[], str]) -> str:
    """``call()`` in a thread of its own that nothing waits for at exit: a REPL ended by a
    signal while it waits for a line from a pipe leaves at once (``asyncio.to_thread``'s
    thread would be joined first, until the pipe gave a line or closed)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def settle(result: str | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or "")

    def run() -> None:
        try:
            result, error = call(), None
        except Exception as exc:
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="stdin-line", daemon=True).start()
    return await future


def typed_ahead(session: PromptSession[str]) -> Ahead:
    """Take what was typed that no prompt has read yet: the keys prompt-toolkit read past the
    last line it accepted, then whatever waits in the terminal's input queue, read without
    waiting (with canonical mode off for the moment, so that a line still being typed is
    taken too). The finished lines are taken; the line still being typed is put back for
    the next prompt, which shows it (a sentence is never cut in two where the prompt came)."""
    text = "".join(key.data for key in get_typeahead(session.input))
    with contextlib.suppress(OSError, ValueError, termios.error):
        fd = session.input.fileno()
        if os.isatty(fd):
            text += _drain(fd)
    *lines, unfinished = text.replace("\r", "\n").split("\n")
    if unfinished.strip():
        store_typeahead(session.input, _keys(unfinished))
    else:
        unfinished = ""
    return Ahead([line for line in lines if line.strip()], unfinished)


def _keys(text: str) -> list[KeyPress]:
    """``text`` as the key presses the terminal would have given prompt-toolkit."""
    keys: list[KeyPress] = []
    parser = Vt100Parser(keys.append)
    parser.feed(text)
    parser.flush()
    return keys


def _drain(fd: int) -> str:
    """What ``fd``, a terminal, holds now; its settings are put back after."""
    before = termios.tcgetattr(fd)
    now = termios.tcgetattr(fd)
    now[3] &= ~(termios.ICANON | termios.ECHO)
    now[6][termios.VMIN] = 0  # a read returns at once, with what there is
    now[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, now)
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)
    return b"".join(chunks).decode("utf-8", "replace")
