"""The terminal as a front end found it, and putting it back when a signal ends the front
end where the usual way out (Textual's exit, prompt-toolkit's) cannot be waited for: after
SIGHUP the terminal may be gone, and writing to it the usual way can wedge the exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import termios
import time
from collections.abc import Callable, Iterator
from typing import Any

LEAVE_APPLICATION_MODE = (
    "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1016l"  # mouse reporting off
    "\x1b[?2004l"  # bracketed paste off
    "\x1b[?7h"  # line wrap on
    "\x1b[?2048l"  # in-band resize reports off
    "\x1b[<u"  # the kitty keyboard protocol popped (before leaving the alternate screen)
    "\x1b[?1049l"  # the normal screen back
    "\x1b[?25h"  # cursor shown
    "\x1b[?1004l"  # focus reports off
)
"""What Textual's Linux driver writes when it leaves application mode, for every mode its
start turns on."""

LEAVE_PROMPT = "\x1b[?2004l\x1b[?25h"
"""What prompt-toolkit's prompt turns on that outlives it: bracketed paste off, the cursor
shown."""

TtyState = list[Any]

WRITE_WAIT_S = 1.0
"""How long putting the terminal back may wait for it to take the bytes."""


def terminal_state() -> TtyState | None:
    """The line settings of the terminal on stdin, as they are before the front end takes
    it (None: stdin is no terminal)."""
    try:
        return termios.tcgetattr(sys.__stdin__.fileno()) if sys.__stdin__ else None
    except (termios.error, OSError, ValueError):
        return None


def restore_terminal(before: TtyState | None, leave: str) -> None:
    """Put the terminal on stdin back without waiting on it for long: ``leave`` (the
    sequences that turn off what the front end turned on) written without blocking, waiting
    at most :data:`WRITE_WAIT_S` for room (a busy terminal may still be reading the last
    screen the front end drew), then the line settings ``before``. A terminal that is gone
    refuses both; that is not an error."""
    stream = sys.__stdin__
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        # A descriptor of its own: non-blocking there leaves the shell's alone.
        fd = os.open(os.ttyname(stream.fileno()), os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            _write_within(fd, leave.encode(), time.monotonic() + WRITE_WAIT_S)
        finally:
            os.close(fd)
    if before is not None:
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(stream.fileno(), termios.TCSANOW, before)


def _write_within(fd: int, data: bytes, deadline: float) -> None:
    """Write ``data`` to non-blocking ``fd``, waiting for room until ``deadline``; a full
    terminal past it, or one that is gone (an error other than a full buffer), gets no more."""
    while data:
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([], [fd], [], left)


@contextlib.contextmanager
def owning_sigint(loop: asyncio.AbstractEventLoop, handler: Callable[[], None]) -> Iterator[None]:
    """``handler`` hears SIGINT on ``loop`` for as long as the block runs. The front end owns
    it throughout: a prompt-toolkit prompt read with its own SIGINT handling removes the
    loop's entry when it ends, after which Ctrl+C reached no one (prompts are read with
    ``handle_sigint=False``)."""
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, handler)
    try:
        yield
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
