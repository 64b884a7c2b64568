"""How the app ends when the system asks, or on an error nothing caught (a mixin of
:class:`tui.app.ReeflineApp`).

Every signal that ends the app leaves the terminal as it found it: out of the alternate
screen, mouse reporting and bracketed paste off, the cursor shown, the line settings back.
SIGTERM, SIGQUIT and SIGINT (sent from outside: on the app's raw terminal ctrl+c is a key)
end the app as Esc then quit would: the running turn or ``/compact`` is cancelled (the loop
kills the bash group and closes the turn in the log) and the app exits, which restores the
terminal. SIGHUP, when the terminal closes or someone sends it: the turn is closed the same
way, then the terminal is restored by one write that cannot block (a terminal that is gone
refuses it, and Textual's own restore can wedge the exit there), the log is closed and the
process leaves at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import termios
from typing import Any, Protocol

from tui.runtime import Runtime

TERMINATE_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT)
SHUTDOWN_WAIT_S = 5.0
"""How long a cancelled turn may take to close itself before the app leaves anyway."""
EXIT_TERMINATED = 143

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

TtyState = list[Any]


def terminal_state() -> TtyState | None:
    """The terminal's line settings as they are before the app starts (None: no terminal)."""
    try:
        return termios.tcgetattr(sys.__stdin__.fileno()) if sys.__stdin__ else None
    except (termios.error, OSError, ValueError):
        return None


def restore_terminal(before: TtyState | None) -> None:
    """Leave application mode without waiting on the terminal: one non-blocking write to the
    terminal Textual draws on (stderr's), then the line settings back. A terminal that is gone
    refuses both; that is not an error."""
    stream = sys.__stderr__
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            # A descriptor of its own: non-blocking there leaves the shell's alone.
            fd = os.open(os.ttyname(stream.fileno()), os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
            try:
                os.write(fd, LEAVE_APPLICATION_MODE.encode())
            finally:
                os.close(fd)
    if before is not None and sys.__stdin__ is not None:
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(sys.__stdin__.fileno(), termios.TCSANOW, before)


class ShutdownHost(Protocol):
    """What the shutdown needs of the app that mixes it in."""

    runtime: Runtime
    turn_worker: Any
    compact_worker: Any
    _terminating: bool
    _tty_before: TtyState | None

    def run_worker(self, work: Any, *, group: str = "default") -> Any: ...
    def exit(self, result: Any = None, return_code: int = 0) -> None: ...
    def _terminate(self, sig: int) -> None: ...
    async def _shut_down(self, sig: int) -> None: ...


class Shutdown:
    def _watch_signals(self: ShutdownHost) -> None:
        """Handle the termination signals on the app's loop (from its mount)."""
        loop = asyncio.get_running_loop()
        for sig in TERMINATE_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._terminate, sig)

    def _terminate(self: ShutdownHost, sig: int) -> None:
        if not self._terminating:
            self._terminating = True
            self.run_worker(self._shut_down(sig), group="shutdown")

    async def _shut_down(self: ShutdownHost, sig: int) -> None:
        for worker in (self.turn_worker, self.compact_worker):
            if worker is not None and not worker.is_finished:
                worker.cancel()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(worker.wait(), SHUTDOWN_WAIT_S)
        if sig == signal.SIGHUP:
            restore_terminal(self._tty_before)
            with contextlib.suppress(Exception):
                self.runtime.close()
            os._exit(128 + sig)
        self.exit(return_code=EXIT_TERMINATED if sig == signal.SIGTERM else 128 + sig)

    def _fatal_error(self: Any) -> None:
        """Exit after an unhandled exception with a traceback that shows no local variables:
        Textual's report prints every frame's locals, which hold what must not reach a screen
        (a client with the API key, the user's text, a model's output). A private hook of
        Textual's, the one place that report is built."""
        from rich.segment import Segments
        from rich.traceback import Traceback

        self.bell()
        traceback = Traceback(show_locals=False, width=None)
        self._exit_renderables.append(
            Segments(self.console.render(traceback, self.console.options))
        )
        self._close_messages_no_wait()
